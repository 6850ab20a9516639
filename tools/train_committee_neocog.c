/* tools/train_committee_neocog.c — `neocog-train committee` given
 * neocognitron files: bundle them into one committee file (core/neocog/neocog.h,
 * "committees") and measure it.
 *
 * Layer: tools.  The members are checked to agree (input size, classes and
 * labels, preprocessing) and to be distinct; each keeps its own record and
 * classifier mark inside the file.  With --half every member's weights are
 * stored as binary16 (--log8: 8-bit logarithmic codes), so the file is
 * measured as written: the test error recorded is that of the file image
 * itself, opened through the engine table.  With --heights the committee's
 * record asks for views (image.h): each digit is prepared at every height
 * given, once for each shear the members were trained with, and each member
 * answers on the views of its own shear (core/neocog/neocog.h); the engines average
 * all those scores.  Members of different shears may then share a
 * committee.  The members keep their own records, without views.  The test
 * set chooses nothing here: the committee is the mean of all the members
 * given, over all the heights given. */
#include "train_committee.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "neocog.h"
#include "nc_config.h"
#if NC_HAVE_CUDA
#include "backend_gpu.h"
#endif

#define WHO TRAIN_COMMITTEE_WHO

typedef struct members {
    uint32_t n;
    const nc_neocog *net[NC_NEOCOG_MAX_MEMBERS];
    nc_model_info info[NC_NEOCOG_MAX_MEMBERS];
    uint32_t top_t[NC_NEOCOG_MAX_MEMBERS];
    const char *from[NC_NEOCOG_MAX_MEMBERS];
    nc_neocog_committee *file[NC_NEOCOG_MAX_MEMBERS];
    uint32_t n_files;
} members;

/* Same planes, same weights: the same network twice. */
static int same_net(const nc_neocog *a, const nc_neocog *b)
{
    return a->n_params == b->n_params &&
           !memcmp(a->n_planes, b->n_planes, sizeof a->n_planes) &&
           !memcmp(a->params, b->params, a->n_params * sizeof(float));
}

/* Read one network file (or committee) and append its members.  Without
 * views they must agree with the first member on everything; with views
 * (strict 0) the committee's record is checked against them later. */
static int add_file(members *ms, const char *path, int strict)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_neocog_committee *c = NULL;
    int err = nc_file_read_model(path, TRAIN_MODEL_MAX_BYTES, &buf, &len);
    if (!err)
        err = nc_neocog_committee_load(buf, len, &c, NULL);
    free(buf);
    if (err) {
        fprintf(stderr, WHO ": %s: %s\n", path, nc_strerror(err));
        return err;
    }
    ms->file[ms->n_files++] = c;
    for (uint32_t i = 0; i < c->n_members; i++) {
        if (ms->n == NC_NEOCOG_MAX_MEMBERS) {
            fprintf(stderr, WHO ": more than %u members\n", NC_NEOCOG_MAX_MEMBERS);
            return -E2BIG;
        }
        const char *why = ms->n && strict
                              ? nc_neocog_committee_mismatch(ms->net[0], &ms->info[0],
                                                             c->member[i], &c->member_info[i])
                              : NULL;
        if (why) {
            fprintf(stderr, WHO ": %s: %s from %s\n", path, why, ms->from[0]);
            return -EINVAL;
        }
        for (uint32_t j = 0; j < ms->n; j++)
            if (same_net(ms->net[j], c->member[i])) {
                fprintf(stderr, WHO ": %s: the same network as in %s\n", path, ms->from[j]);
                return -EINVAL;
            }
        ms->net[ms->n] = c->member[i];
        ms->info[ms->n] = c->member_info[i];
        /* a one-network file's views were its own record's; the committee's
         * are given again with --heights */
        ms->info[ms->n].prep = nc_prep_no_views(&c->member_info[i].prep);
        ms->top_t[ms->n] = c->iv_top_t[i];
        ms->from[ms->n] = path;
        ms->n++;
    }
    return 0;
}

/* The committee's views: every height for each shear its members were
 * trained with (in the order the members bring them), so each member
 * answers at every height on digits prepared as it learnt them. */
static int set_views(const members *ms, const train_neocog_bundle *how, nc_prep *p)
{
    uint32_t shear[NC_NEOCOG_MAX_MEMBERS], n_shear = 0, j;
    for (uint32_t i = 0; i < ms->n; i++) {
        for (j = 0; j < n_shear && shear[j] != ms->info[i].prep.deskew; j++)
            ;
        if (j == n_shear)
            shear[n_shear++] = ms->info[i].prep.deskew;
    }
    const int err = train_set_views(how->heights, how->n_heights, shear, n_shear, p);
    if (err == -E2BIG)
        fprintf(stderr, WHO ": --heights: %u heights for each of %u shears is more than %u "
                "views\n", how->n_heights, n_shear, NC_PREP_MAX_VIEWS);
    else if (err)
        fprintf(stderr, WHO ": --heights: a height beyond the members' %u px field\n",
                p->size);
    return err;
}

int train_committee_neocog(char *const *paths, uint32_t n_paths, const char *out_path,
                           const char *dir, const train_neocog_bundle *how,
                           const char *command)
{
    const int gpu = how->gpu;
    int status = TRAIN_EXIT_FAIL, err = 0;
    members *ms = calloc(1, sizeof *ms);
    nc_model_info *info = calloc(1, sizeof *info);
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_backend *be = NULL;
    const uint32_t flags = how->flags;
    if (!ms || !info) {
        err = -ENOMEM;
        goto fail;
    }
    for (uint32_t a = 0; a < n_paths; a++)
        if (add_file(ms, paths[a], how->n_heights == 0))
            goto out;
    /* even one network gets the bundling command: --half rewrites it */
    train_committee_record(ms->info, ms->n, "neocognitrons", "member", command, 0, info);
    const uint32_t K = info->n_classes;
    if (how->n_heights && set_views(ms, how, &info->prep))
        goto out;
    for (uint32_t i = 0; i < ms->n; i++) {
        const char *why = nc_neocog_member_mismatch(info, &ms->info[i]);
        if (why) {
            fprintf(stderr, WHO ": %s: %s\n", ms->from[i], why);
            goto out;
        }
    }

    /* The committee as the engines will run it: saved, then opened from the
     * file image (with --half, the rounded weights are what is measured). */
    const nc_backend_ops *ops = &nc_backend_cpu;
#if NC_HAVE_CUDA
    if (gpu >= 0)
        ops = &nc_backend_gpu;
#endif
    if ((err = nc_neocog_committee_save(ms->net, ms->info, ms->top_t, ms->n, info, flags,
                                        &buf, &len)))
        goto fail;
    if ((err = nc_backend_open(ops, buf, len, gpu < 0 ? 0 : gpu, &be))) {
#if NC_HAVE_CUDA
        if (gpu >= 0)
            fprintf(stderr, WHO ": GPU %d: %s\n", gpu, nc_backend_gpu_last_error());
#endif
        goto fail;
    }
    train_committee_test t;
    if (train_committee_measure(be, NC_MF_KIND_NEOCOG, K, dir, how->threads,
                                gpu >= 0 ? TRAIN_GPU_BATCH : 0, &t))
        goto out;

    printf("committee   %u neocognitron%s%s\n", ms->n, ms->n == 1 ? "" : "s",
           flags & NC_NEOCOG_WRITE_HALF   ? ", weights stored as binary16"
           : flags & NC_NEOCOG_WRITE_LOG8 ? ", weights stored as 8-bit logarithmic codes"
                                          : "");
    train_print_views(&info->prep, NC_MF_KIND_NEOCOG);
    for (uint32_t i = 0; i < ms->n; i++) {
        const nc_neocog *net = ms->net[i];
        printf("  %2u  %s  K %u/%u/%u/%u, %s, seed %llu, recorded test error ", i + 1,
               ms->from[i], net->n_planes[0], net->n_planes[1], net->n_planes[2],
               net->n_planes[3], ms->top_t[i] ? "interpolating vectors" : "max response",
               (unsigned long long)ms->info[i].seed);
        train_print_recorded_test(&ms->info[i]);
    }
    /* the measured error goes into the record: save again */
    train_record_test(info, t.errors, t.n, t.seconds);
    free(buf);
    buf = NULL;
    if ((err = nc_neocog_committee_save(ms->net, ms->info, ms->top_t, ms->n, info, flags,
                                        &buf, &len)))
        goto fail;
    if (train_committee_write(out_path, buf, len))
        goto out;
    status = TRAIN_EXIT_OK;
    goto out;
fail:
    fprintf(stderr, WHO ": %s\n", nc_strerror(err));
out:
    nc_backend_close(be);
    for (uint32_t i = 0; ms && i < ms->n_files; i++)
        nc_neocog_committee_free(ms->file[i]);
    free(ms);
    free(info);
    free(buf);
    return status;
}

/* tools/streamgen_patches.c — see streamgen_patches.h. */
#define _POSIX_C_SOURCE 200809L
#include "streamgen_patches.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <turbojpeg.h>

#include "fileio.h"
#include "segment.h"

#define PATCH 28u
#define TIME_RUNS 5

static int centre_in(nc_rect a, nc_rect b)
{
    uint64_t cx2 = 2 * (uint64_t)a.x + a.width, cy2 = 2 * (uint64_t)a.y + a.height;
    return cx2 >= 2 * (uint64_t)b.x && cx2 < 2 * ((uint64_t)b.x + b.width) &&
           cy2 >= 2 * (uint64_t)b.y && cy2 < 2 * ((uint64_t)b.y + b.height);
}

static int grow(nc_patch_set *set)
{
    if (set->count < set->cap)
        return 0;
    uint32_t cap = set->cap ? 2 * set->cap : 1024;
    uint8_t *px = realloc(set->pixels, (size_t)cap * PATCH * PATCH);
    if (!px)
        return -ENOMEM;
    set->pixels = px;
    uint8_t *lb = realloc(set->labels, cap);
    if (!lb)
        return -ENOMEM;
    set->labels = lb;
    set->cap = cap;
    return 0;
}

int nc_patches_add(nc_segmenter *seg, const nc_image *frame, const nc_render_truth *truth,
                   nc_patch_set *set)
{
    nc_segment_params p;
    nc_segment_params_for_view(&p, frame->width, frame->height, 0);
    nc_segment_result *r = NULL;
    int err = nc_segment_frame(seg, frame, &p, &r);
    if (err < 0)
        return err;
    const nc_prep prep = NC_PREP_MNIST_28;
    float out[PATCH * PATCH];
    set->frames++;
    for (uint32_t s = 0; s < truth->string_count; s++)
        set->digits += truth->strings[s].count;
    for (uint32_t i = 0; i < r->count; i++) {
        const nc_segment_digit *d = &r->digits[i];
        /* one to one: exactly one truth digit matches, and no other
         * segmented digit matches that one */
        const nc_render_digit *hit = NULL;
        uint32_t hits = 0;
        for (uint32_t s = 0; s < truth->string_count; s++)
            for (uint32_t k = 0; k < truth->strings[s].count; k++) {
                const nc_render_digit *t = &truth->strings[s].digits[k];
                if (centre_in(d->box, t->box) && centre_in(t->box, d->box)) {
                    hit = t;
                    hits++;
                }
            }
        for (uint32_t j = 0; hits == 1 && j < r->count; j++)
            if (j != i && centre_in(r->digits[j].box, hit->box))
                hits++;
        if (hits != 1 || nc_prep_apply(&d->patch, &prep, out) < 0) {
            set->unmatched++;
            continue;
        }
        if ((err = grow(set)) < 0)
            break;
        uint8_t *px = set->pixels + (size_t)set->count * PATCH * PATCH;
        for (uint32_t k = 0; k < PATCH * PATCH; k++)
            px[k] = (uint8_t)lrintf(out[k] * 255.0f);
        set->labels[set->count++] = hit->label;
    }
    nc_segment_result_free(r);
    return err;
}

int nc_patches_write(const nc_patch_set *set, const char *prefix)
{
    nc_dataset d = { set->count, PATCH, PATCH, set->pixels, set->labels };
    return nc_file_write_idx(prefix, &d);
}

void nc_patches_free(nc_patch_set *set)
{
    free(set->pixels);
    free(set->labels);
    memset(set, 0, sizeof *set);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

int nc_stage_time(nc_segmenter *seg, const uint8_t *jpeg, unsigned long len, nc_image *frame,
                  nc_stage_times *t)
{
    tjhandle tj = tjInitDecompress();
    nc_image *mask = NULL;
    float *in = NULL;
    /* labels into a kept array, as the segmenter does */
    uint32_t *labels = malloc((size_t)frame->width * frame->height * sizeof *labels);
    int err = -ENOMEM;
    if (!tj || !labels || nc_image_new(frame->width, frame->height, &mask) < 0)
        goto out;
    const nc_prep prep = NC_PREP_CNN_29;
    double best[5] = { INFINITY, INFINITY, INFINITY, INFINITY, INFINITY };
    nc_segment_params p;
    nc_segment_params_for_view(&p, frame->width, frame->height, 0);
    if (t->n_runs + TIME_RUNS > t->cap_runs) {
        const uint32_t cap = t->cap_runs ? 2 * t->cap_runs + TIME_RUNS : 1024;
        double *r = realloc(t->runs, cap * sizeof *r);
        if (!r)
            goto out;
        t->runs = r;
        t->cap_runs = cap;
    }
    for (int run = 0; run < TIME_RUNS; run++) {
        if (t->pause_ms && t->pause_spin) {
            const double until = now_ms() + t->pause_ms;
            while (now_ms() < until)
                ;
        } else if (t->pause_ms) {
            const struct timespec pause = { t->pause_ms / 1000,
                                            (long)(t->pause_ms % 1000) * 1000000L };
            nanosleep(&pause, NULL);
        }
        double t0 = now_ms();
        /* the daemon's flags (io/decode.c) */
        if (tjDecompress2(tj, jpeg, len, frame->pixels, (int)frame->width, (int)frame->stride,
                          (int)frame->height, TJPF_GRAY,
                          TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS)) {
            err = -EBADMSG;
            goto out;
        }
        double t1 = now_ms();
        uint32_t pol;
        if ((err = nc_segment_binarise_frame(seg, frame, &p, mask, &pol)) < 0)
            goto out;
        double t2 = now_ms();
        nc_component *c = NULL;
        uint32_t n = 0;
        err = nc_image_components(mask, p.max_components, labels, &c, &n);
        free(c);
        if (err < 0)
            goto out;
        double t3 = now_ms();
        nc_segment_result *r = NULL;
        if ((err = nc_segment_frame(seg, frame, &p, &r)) < 0)
            goto out;
        double t4 = now_ms();
        if (r->count && !in && !(in = malloc(nc_prep_out_len(&prep) * sizeof *in))) {
            nc_segment_result_free(r);
            err = -ENOMEM;
            goto out;
        }
        for (uint32_t i = 0; i < r->count; i++)
            nc_prep_apply(&r->digits[i].patch, &prep, in);
        double t5 = now_ms();
        nc_segment_result_free(r);
        double d[5] = { t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4 };
        t->runs[t->n_runs++] = d[0] + d[3] + d[4];
        for (int k = 0; k < 5; k++)
            best[k] = fmin(best[k], d[k]);
    }
    t->frames++;
    t->decode_ms += best[0];
    t->binarise_ms += best[1];
    t->components_ms += best[2];
    t->segment_ms += best[3];
    t->prep_ms += best[4];
    t->segment_max_ms = fmax(t->segment_max_ms, best[3]);
    err = 0;
out:
    free(in);
    free(labels);
    nc_image_free(mask);
    if (tj)
        tjDestroy(tj);
    return err;
}

void nc_stage_times_free(nc_stage_times *t)
{
    free(t->runs);
    t->runs = NULL;
    t->n_runs = t->cap_runs = 0;
}

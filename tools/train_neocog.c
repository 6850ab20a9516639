/* tools/train_neocog.c — `neocog-train neocognitron`: train Fukushima's
 * digit neocognitron stage by stage (shared/docs/neocognitron-spec.md,
 * "Training") on MNIST and write it as a model file.
 *
 * Layer: tools.  core/neocog/neocog_learn.c does the learning maths one pattern at
 * a time; this file owns the data split, the pattern lists, passes,
 * progress, the choices made on validation data and the provenance;
 * train_neocog_opts.c the options, train_neocog_checkpoint.c the
 * checkpoints.
 *
 * Procedure:
 *  - Data: training digits 0 .. 60000-V-1 train, the last V (--validation,
 *    default 10000) validate.  The 10000 test digits are read once, after
 *    every choice is made, to measure the result.  With --train PREFIX (and
 *    --val PREFIX) an IDX set of any classes, e.g. neocog-unipen's 94
 *    characters, trains instead: its classes file sets the last stage's
 *    classes and the labels the model file records; the validation images
 *    are appended, so they are the pool's last V as MNIST's; no test set.
 *  - Input: nc_prep_apply with NC_PREP_NEOCOG_65 and digit height --height,
 *    sheared upright first with --deskew (--deskew-gentle: at most half a
 *    pixel a row; the prep is stored in the model file, so every reader of
 *    the model does the same).
 *  - US1: the 16 edge orientations (nc_neocog_train_us1, q = 100).
 *  - US2, US3: unsupervised with plane creation (or --add-if-silent) on a
 *    class-balanced list of --train-digits digits, --passes times.
 *  - US4: supervised on its own (longer) class-balanced list, in batches of
 *    US4_BATCH_PER_THREAD x --threads digits through
 *    nc_neocog_learn_sup_batch: the frozen lower stages of a batch run side
 *    by side on the pool (train_pool.c), then the batch learns in order
 *    with each digit's US4 responses split over the threads by plane ranges.
 *    Bit-for-bit the same network for every --threads.  With --deform-us4
 *    F, US4's passes after the first see every digit freshly deformed by
 *    core/data/deform (NC_DEFORM_MNIST times F), each digit's draw from a stream
 *    hashed from --seed, the pass and its place in the list.
 *  - The class-balanced lists come from one permutation of the training
 *    part drawn from --seed (splitmix64): classes are interleaved 0,1,..,
 *    C-1,0,1,.. in that order, so every prefix is balanced and each stage takes
 *    a prefix.  Nothing else is random but the deformations above.
 *  - Validation chooses the recognition theta of US4 among --theta4-try and,
 *    with --interp, between the max-response answer and the interpolating-
 *    vector classifier.  Lower stages' theta, theta_L and H are chosen by
 *    comparing runs on validation (models/README.md records them).
 *  - --checkpoint FILE is rewritten after every stage; --resume skips the
 *    stages it holds. */
#include "train_neocog.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deform.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "neocog.h"
#include "train_pool.h"

/* ---- the pattern list ------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Training digits [0, n_train) permuted from seed, then interleaved by class
 * (0,1,...,C-1,0,1,...) so that every prefix is class-balanced; classes that
 * run out drop out of the rotation.  Labels are below C (checked when the
 * set was read).  Returns the list's length. */
static uint32_t balanced_order(const nc_dataset *d, uint32_t n_train, uint32_t C,
                               uint64_t seed, uint32_t *out)
{
    uint32_t *perm = malloc((size_t)n_train * sizeof(uint32_t));
    uint32_t *by = malloc((size_t)n_train * sizeof(uint32_t));
    uint32_t cnt[NC_NEOCOG_MAX_CLASSES] = { 0 }, off[NC_NEOCOG_MAX_CLASSES + 1] = { 0 };
    uint32_t pos[NC_NEOCOG_MAX_CLASSES] = { 0 }, n = 0;
    if (!perm || !by) {
        free(perm);
        free(by);
        return 0;
    }
    uint64_t s = seed ^ 0x243f6a8885a308d3ull;
    for (uint32_t i = 0; i < n_train; i++)
        perm[i] = i;
    for (uint32_t i = n_train - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(splitmix64(&s) % (i + 1));
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (uint32_t i = 0; i < n_train; i++)
        cnt[d->labels[perm[i]]]++;
    for (uint32_t c = 0; c < C; c++)
        off[c + 1] = off[c] + cnt[c];
    for (uint32_t i = 0; i < n_train; i++) {
        uint32_t c = d->labels[perm[i]];
        by[off[c] + pos[c]++] = perm[i];
    }
    memset(pos, 0, sizeof(pos));
    while (n < n_train)
        for (uint32_t c = 0; c < C; c++)
            if (pos[c] < cnt[c])
                out[n++] = by[off[c] + pos[c]++];
    free(perm);
    free(by);
    return n;
}

/* Digit i of d through the prep; with def, first deformed by a draw from
 * rng (the grey values go through floats and back to 8 bits, as a camera's
 * digits would arrive). */
static int prep_digit(const nc_dataset *d, uint32_t i, const nc_prep *p, nc_deform *def,
                      nc_deform_rng *rng, float *dst)
{
    enum { SIDE_MAX = 64 };
    const size_t n = (size_t)d->rows * d->cols;
    nc_image img = { d->cols, d->rows, d->cols, d->pixels + (size_t)i * n };
    uint8_t warped[SIDE_MAX * SIDE_MAX];
    if (def) {
        float in[SIDE_MAX * SIDE_MAX] = { 0 }, out[SIDE_MAX * SIDE_MAX];
        if (d->rows > SIDE_MAX || d->cols > SIDE_MAX)
            return -ERANGE;
        for (size_t k = 0; k < n; k++)
            in[k] = img.pixels[k] / 255.0f;
        int e = nc_deform_apply(def, rng, in, out);
        if (e < 0)
            return e;
        for (size_t k = 0; k < n; k++)
            warped[k] = (uint8_t)lrintf(out[k] * 255.0f);
        img.pixels = warped;
    }
    int r = nc_prep_apply(&img, p, dst);
    if (r == -ENOENT) {         /* no ink: an empty input (MNIST has none) */
        memset(dst, 0, nc_prep_out_len(p) * sizeof(float));
        r = 0;
    }
    return r;
}

/* ---- one stage ---------------------------------------------------------------- */

/* Digits the last stage learns per nc_neocog_learn_sup_batch call, per
 * thread: their lower stages run side by side first (each holds a US4 input
 * of UC3's 13 x 13 x K3 cells, about 170 KB at K3 = 254). */
#define US4_BATCH_PER_THREAD 16

/* The preprocessing of a batch, spread over the pool like the rest. */
typedef struct prep_job {
    const nc_dataset *d;
    const uint32_t *order;
    const nc_prep *prep;
    const nc_deform_params *deform;     /* NULL: the digits as they are */
    uint64_t deform_seed;               /* digit i of the job draws from seed + i */
    float *imgs;
    size_t cells;
    uint32_t n, parts;
    int err[NC_NEOCOG_MAX_PARTS];
} prep_job;

static void prep_task(void *arg, uint32_t p)
{
    prep_job *j = arg;
    nc_deform *def = NULL;
    j->err[p] = j->deform ? nc_deform_new(j->deform, j->d->cols, j->d->rows, &def) : 0;
    for (uint32_t i = p; i < j->n && !j->err[p]; i += j->parts) {
        /* a stream per digit, so the draws do not depend on the threads */
        nc_deform_rng h = { j->deform_seed + i }, rng = { nc_deform_rng_next(&h) };
        j->err[p] = prep_digit(j->d, j->order[i], j->prep, def, &rng,
                               j->imgs + i * j->cells);
    }
    nc_deform_free(def);
}

static int prep_batch(train_pool *pool, const nc_dataset *d, const uint32_t *order,
                      uint32_t n, const nc_prep *prep, const nc_deform_params *deform,
                      uint64_t deform_seed, float *imgs)
{
    prep_job j = { .d = d, .order = order, .prep = prep, .deform = deform,
                   .deform_seed = deform_seed, .imgs = imgs,
                   .cells = nc_prep_out_len(prep), .n = n,
                   .parts = pool ? train_pool_threads(pool) : 1 };
    if (!pool || train_pool_run(pool, prep_task, &j, j.parts) < 0)
        for (uint32_t p = 0; p < j.parts; p++)
            prep_task(&j, p);
    for (uint32_t p = 0; p < j.parts; p++)
        if (j.err[p])
            return j.err[p];
    return 0;
}

static int train_stage(nc_neocog *net, nc_neocog_learner *lr, uint32_t l,
                       const options *o, const nc_neocog_learn_opts *lo,
                       const nc_dataset *train, const uint32_t *order, uint32_t n_order,
                       const nc_prep *prep, train_pool *pool, double *ret_secs)
{
    const int last = l + 1 == net->arch.n_stages, live = isatty(STDERR_FILENO);
    const uint32_t n = o->digits[l] < n_order ? o->digits[l] : n_order;
    const uint64_t total = (uint64_t)n * o->passes[l];
    /* US4 learns in batches: lower stages of a batch side by side, then the
     * batch in order with each digit's US4 responses split by plane ranges
     * (core/neocog/neocog_learn.c); the network does not depend on the thread count */
    const uint32_t threads = pool ? train_pool_threads(pool) : 1;
    const uint32_t batch = last ? US4_BATCH_PER_THREAD * threads : 1;
    const size_t cells = nc_prep_out_len(prep);
    float *imgs = malloc((size_t)batch * cells * sizeof(float));
    uint32_t *labs = malloc((size_t)batch * sizeof(uint32_t));
    nc_neocog_learn_step *steps = malloc((size_t)batch * sizeof(*steps));
    double t0 = train_now(), last_print = t0;
    uint64_t done = 0;
    int err = imgs && labs && steps ? 0 : -ENOMEM;
    if (!err && last)
        err = nc_neocog_learner_set_runner(lr, threads, pool ? train_pool_run : NULL, pool);
    if (err) {
        fprintf(stderr, "neocog-train neocognitron: stage %u: %s\n", l + 1, nc_strerror(err));
        goto out;
    }
    const nc_deform_params deform = nc_deform_params_scaled(&NC_DEFORM_MNIST, o->deform_us4);
    for (uint32_t pass = 0; pass < o->passes[l]; pass++) {
        uint32_t created = 0, reinforced = 0, wrong = 0, full = 0;
        const uint32_t k_start = net->n_planes[l];
        /* US4 passes after the first, with --deform-us4: fresh deformations,
         * drawn from the seed and the pass */
        const int deformed = last && pass > 0 && o->deform_us4 > 0.0f;
        uint64_t mix = o->seed ^ (0x5eedull << 32) ^ pass;
        const uint64_t pass_seed = splitmix64(&mix);
        for (uint32_t i = 0; i < n;) {
            const uint32_t nb = n - i < batch ? n - i : batch;
            uint32_t got = 0;
            err = prep_batch(last ? pool : NULL, train, order + i, nb, prep,
                             deformed ? &deform : NULL, pass_seed + i, imgs);
            if (!err && last) {
                for (uint32_t b = 0; b < nb; b++)
                    labs[b] = train->labels[order[i + b]];
                err = nc_neocog_learn_sup_batch(net, lr, imgs, labs, nb, lo, steps, &got);
            } else if (!err) {
                err = nc_neocog_learn_unsup(net, lr, l, imgs, lo, &steps[0]);
                got = err ? 0 : 1;
            }
            if (err) {
                fprintf(stderr, "neocog-train neocognitron: stage %u, digit %u: %s\n",
                        l + 1, order[i + (got < nb ? got : 0)], nc_strerror(err));
                goto out;
            }
            for (uint32_t b = 0; b < nb; b++, i++, done++) {
                const nc_neocog_learn_step *step = &steps[b];
                created += step->created;
                reinforced += step->reinforced;
                full += step->at_k_max != 0;
                wrong += last && step->answer != (int32_t)train->labels[order[i]];
            }
            double now = train_now();
            if (now - last_print >= (live ? 1.0 : 15.0) || i == n) {
                double rate = (double)done / (now - t0);
                char eta[32];
                train_format_duration((double)(total - done) / rate, eta, sizeof(eta));
                fprintf(stderr, "%sUS%u pass %u/%u: %u/%u digits, K%u = %u (+%u), "
                        "%.1f digits/s, stage ETA %s%s", live ? "\r" : "", l + 1,
                        pass + 1, o->passes[l], i, n, l + 1, net->n_planes[l],
                        net->n_planes[l] - k_start, rate, eta, live ? "   " : "\n");
                last_print = now;
            }
        }
        if (live)
            fputc('\n', stderr);
        if (last)
            fprintf(stderr, "  US%u pass %u: %u planes created, %u reinforced, %u of %u "
                    "answered wrong before learning (%.2f%%)%s\n", l + 1, pass + 1, created,
                    reinforced, wrong, n, 100.0 * wrong / n,
                    full ? ", k-max reached" : "");
        else
            fprintf(stderr, "  US%u pass %u: %u planes created, %u reinforcements%s\n",
                    l + 1, pass + 1, created, reinforced, full ? ", k-max reached" : "");
        if (created == 0 && !last)
            break;              /* a further pass would only reinforce */
    }
    *ret_secs = train_now() - t0;
out:
    free(imgs);
    free(labs);
    free(steps);
    return err;
}

/* ---- the command ----------------------------------------------------------- */

static uint32_t count_wrong(const int32_t *ans, const uint8_t *labels, uint32_t n)
{
    uint32_t e = 0;
    for (uint32_t i = 0; i < n; i++)
        e += ans[i] != (int32_t)labels[i];
    return e;
}

static int write_model(const char *path, const nc_neocog *net, const nc_model_info *info,
                       uint32_t iv_top_t)
{
    nc_mf_writer *w = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    int err = nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w);
    if (!err) err = nc_neocog_write(net, w);
    if (!err) err = nc_mf_put_info(w, info);
    if (!err && iv_top_t) err = nc_mf_put_u32(w, TRAIN_TAG_IV, &iv_top_t, 1);
    if (!err) err = nc_mf_finish(w, &buf, &len);
    if (!err) err = nc_file_write_atomic(path, buf, len);
    nc_mf_writer_free(w);
    free(buf);
    return err;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* --train and --val: the training images with the validation images
 * appended, so that validation is the pool's last *ret_valid images as
 * MNIST's is; the two classes files must agree. */
static int load_idx_sets(const options *o, nc_dataset *train, train_classes *classes,
                         uint32_t *ret_valid)
{
    static const char who[] = "neocog-train neocognitron";
    nc_dataset val = { 0 };
    train_classes c2;
    *ret_valid = 0;
    int err = train_load_idx_set(who, o->train_set, train, classes);
    if (err || !o->val_set)
        return err;
    if ((err = train_load_idx_set(who, o->val_set, &val, &c2)))
        return err;
    if (c2.n != classes->n || memcmp(c2.label, classes->label, sizeof c2.label)) {
        fprintf(stderr, "%s: --val %s: its classes are not --train's\n", who, o->val_set);
        err = -EINVAL;
    } else if ((uint64_t)train->count + val.count > UINT32_MAX / 2) {
        err = -EOVERFLOW;
    } else {
        const size_t plane = (size_t)train->rows * train->cols;
        const uint32_t n = train->count + val.count;
        uint8_t *px = realloc(train->pixels, n * plane);
        if (px)
            train->pixels = px;
        uint8_t *lab = px ? realloc(train->labels, n) : NULL;
        if (lab)
            train->labels = lab;
        if (!px || !lab) {
            err = -ENOMEM;
        } else {
            memcpy(px + (size_t)train->count * plane, val.pixels, (size_t)val.count * plane);
            memcpy(lab + train->count, val.labels, val.count);
            train->count = n;
            *ret_valid = val.count;
        }
    }
    nc_dataset_fini(&val);
    return err;
}

int train_neocog_main(int argc, char **argv, const train_cmdline *cmd)
{
    options o;
    int err = train_neocog_parse_options(argc, argv, &o);
    if (err != TRAIN_PARSED)
        return err;                 /* --help, or a usage error */
    int status = TRAIN_EXIT_FAIL;
    const char *dir = train_data_dir(o.data);
    nc_dataset train = { 0 }, test = { 0 };
    nc_neocog *net = NULL;
    nc_neocog_learner *lr = NULL;
    nc_neocog_iv *iv = NULL;
    uint32_t *order = NULL;
    train_pool *pool = NULL;
    int32_t *ans = NULL, *ans_iv = NULL;
    float *conf = NULL, *conf_iv = NULL;
    double log[2 * NC_NEOCOG_MAX_STAGES] = { 0 };
    nc_model_info info;
    memset(&info, 0, sizeof(info));
    nc_prep prep = NC_PREP_NEOCOG_65;
    prep.box = o.height;
    prep.deskew = (uint32_t)o.deskew;

    train_classes classes;
    train_classes_digits(&classes);
    uint32_t n_pool = MNIST_TRAIN;
    if (o.train_set) {
        if (load_idx_sets(&o, &train, &classes, &o.validation))
            goto out;
        n_pool = train.count;
        o.no_test = 1;
    } else {
        if (train_load_mnist_checked("neocognitron", dir, "train", MNIST_TRAIN, &train))
            goto out;
        /* The test digits are read and checked now, so that a missing or bad
         * file is said before the stages train rather than after them (the
         * model would not be written); they are measured only at the end. */
        if (!o.no_test && train_load_mnist_checked("neocognitron", dir, "t10k", 0, &test))
            goto out;
    }
    const uint32_t n_train = n_pool - o.validation;

    nc_neocog_arch arch;
    nc_neocog_arch_default(&arch);
    arch.n_classes = classes.n;
    for (uint32_t l = 1; l < 4; l++) {
        arch.stage[l].theta = o.theta[l];
        arch.stage[l].k_max = o.k_max[l];
    }
    if ((err = nc_neocog_new(&arch, &net)))
        goto fail;
    const uint32_t n_valid = o.valid_eval && o.valid_eval < o.validation ? o.valid_eval
                                                                         : o.validation;
    order = malloc((size_t)n_train * sizeof(uint32_t));
    if (!order) {
        err = -ENOMEM;
        goto fail;
    }
    const uint32_t n_order = balanced_order(&train, n_train, classes.n, o.seed, order);
    if (n_order != n_train) {
        err = -ENOMEM;
        goto fail;
    }

    uint32_t most = 0;
    for (int l = 1; l < 4; l++)
        most = o.digits[l] > most ? o.digits[l] : most;
    most = most < n_train ? most : n_train;
    info.n_classes = classes.n;
    memcpy(info.labels, classes.label, sizeof classes.label);
    info.prep = prep;
    if (o.train_set)
        snprintf(info.data, sizeof(info.data), "%s 0-%u (%u classes), class-balanced "
                 "%u/%u/%u images for US2/US3/US4 (validation %s, %u)",
                 base_name(o.train_set), n_train - 1, classes.n,
                 o.digits[1] < n_train ? o.digits[1] : n_train,
                 o.digits[2] < n_train ? o.digits[2] : n_train,
                 o.digits[3] < n_train ? o.digits[3] : n_train,
                 o.val_set ? base_name(o.val_set) : "none", o.validation);
    else
        snprintf(info.data, sizeof(info.data), "MNIST train 0-%u, class-balanced %u/%u/%u "
                 "digits for US2/US3/US4 (validation %u-%u)", n_train - 1,
                 o.digits[1] < n_train ? o.digits[1] : n_train,
                 o.digits[2] < n_train ? o.digits[2] : n_train,
                 o.digits[3] < n_train ? o.digits[3] : n_train, n_train, MNIST_TRAIN - 1);
    if (train_join_argv(cmd, info.command, sizeof(info.command)))
        fprintf(stderr, "neocog-train neocognitron: warning: command line truncated in "
                "the model file\n");
    info.seed = o.seed;
    info.test_error = -1.0;
    info.epochs = o.passes[3];

    nc_neocog_learn_opts lo;
    nc_neocog_learn_opts_default(&lo);
    for (int l = 1; l < 4; l++) {
        lo.theta_l[l] = o.theta_l[l];
        lo.q[l] = o.q;
    }
    lo.add_if_silent = o.add_if_silent;

    fprintf(stderr, "neocog-train neocognitron: data %s\n  %s\n", o.train_set ? o.train_set : dir,
            info.data);
    fprintf(stderr, "  theta %.2f/%.2f/%.2f, theta_L %.2f/%.2f/%.2f, q %g, H %u, passes "
            "%u/%u/%u, %s, seed %llu\n", (double)o.theta[1], (double)o.theta[2],
            (double)o.theta[3], (double)o.theta_l[1], (double)o.theta_l[2],
            (double)o.theta_l[3], (double)o.q, o.height, o.passes[1], o.passes[2],
            o.passes[3], o.add_if_silent ? "add-if-silent" : "plane creation",
            (unsigned long long)o.seed);

    uint32_t done = 0;
    if (o.resume) {
        if (train_neocog_read_checkpoint(&o, &net, &done, log))
            goto out;
        fprintf(stderr, "resumed from %s: %u stage(s) done, planes %u/%u/%u/%u\n",
                o.checkpoint, done, net->n_planes[0], net->n_planes[1], net->n_planes[2],
                net->n_planes[3]);
    }
    double run_start = train_now();
    if (done == 0) {
        double t0 = train_now();
        if ((err = nc_neocog_train_us1(net, 16, 100.0f)))
            goto fail;
        log[0] = train_now() - t0;
        done = 1;
        fprintf(stderr, "US1: 16 edge planes\n");
        if (o.checkpoint && train_neocog_write_checkpoint(&o, net, done, log, &info))
            goto out;
    }
    if ((err = nc_neocog_learner_new(net, &lr)))
        goto fail;
    if (done < net->arch.n_stages && o.threads > 1 &&
        (err = train_pool_new(o.threads, &pool)))
        goto fail;
    for (uint32_t l = done; l < net->arch.n_stages; l++) {
        if ((err = train_stage(net, lr, l, &o, &lo, &train, order, n_order, &prep, pool,
                               &log[l])))
            goto out;
        log[NC_NEOCOG_MAX_STAGES + l] = (double)(o.digits[l] < n_train ? o.digits[l] : n_train);
        char dur[32];
        train_format_duration(log[l], dur, sizeof(dur));
        fprintf(stderr, "US%u done: %u planes, %s\n", l + 1, net->n_planes[l], dur);
        done = l + 1;
        if (o.checkpoint && train_neocog_write_checkpoint(&o, net, done, log, &info))
            goto out;
    }

    /* ---- choices on validation ---- */
    ans = malloc((size_t)n_valid * sizeof(int32_t));
    ans_iv = malloc((size_t)n_valid * sizeof(int32_t));
    conf = malloc((size_t)n_valid * sizeof(float));
    conf_iv = malloc((size_t)n_valid * sizeof(float));
    if (!ans || !ans_iv || !conf || !conf_iv) {
        err = -ENOMEM;
        goto fail;
    }
    if (o.interp && (err = nc_neocog_iv_new(net, o.top_t, &iv)))
        goto fail;
    float best_theta = o.theta4_try[0];
    int best_iv = 0;
    uint32_t best_err = UINT32_MAX;
    const uint32_t L = net->arch.n_stages - 1;
    for (uint32_t i = 0; n_valid && i < o.n_theta4_try; i++) {
        net->arch.stage[L].theta = o.theta4_try[i];
        train_neo_run run = { .net = net, .iv = iv, .d = &train, .first = n_train,
                              .count = n_valid, .prep = prep, .threads = o.threads,
                              .answer = ans, .conf = conf, .answer_iv = ans_iv,
                              .conf_iv = conf_iv };
        if ((err = train_neo_evaluate(&run)))
            goto fail;
        uint32_t e = count_wrong(ans, train.labels + n_train, n_valid);
        uint32_t e_iv = iv ? count_wrong(ans_iv, train.labels + n_train, n_valid) : 0;
        fprintf(stderr, "validation (%u digits), theta4 %.3f: max-response %.2f%% (%u)",
                n_valid, (double)o.theta4_try[i], 100.0 * e / n_valid, e);
        if (iv)
            fprintf(stderr, ", interpolating vectors %.2f%% (%u)", 100.0 * e_iv / n_valid,
                    e_iv);
        fprintf(stderr, "  [%.0f digits/s]\n", n_valid / run.seconds);
        if (e < best_err) {
            best_err = e;
            best_theta = o.theta4_try[i];
            best_iv = 0;
        }
        if (iv && e_iv < best_err) {
            best_err = e_iv;
            best_theta = o.theta4_try[i];
            best_iv = 1;
        }
    }
    net->arch.stage[L].theta = best_theta;
    if (n_valid)
        fprintf(stderr, "chosen on validation: theta4 %.3f, %s answer (%.2f%%)\n",
                (double)best_theta, best_iv ? "interpolating-vector" : "max-response",
                100.0 * best_err / n_valid);

    /* ---- the test set, once ---- */
    uint32_t test_errors = 0;
    if (!o.no_test) {
        NC_FREE(ans);
        NC_FREE(ans_iv);
        NC_FREE(conf);
        NC_FREE(conf_iv);
        ans = malloc((size_t)test.count * sizeof(int32_t));
        ans_iv = malloc((size_t)test.count * sizeof(int32_t));
        conf = malloc((size_t)test.count * sizeof(float));
        conf_iv = malloc((size_t)test.count * sizeof(float));
        if (!ans || !ans_iv || !conf || !conf_iv) {
            err = -ENOMEM;
            goto fail;
        }
        train_neo_run run = { .net = net, .iv = best_iv ? iv : NULL, .d = &test, .first = 0,
                              .count = test.count, .prep = prep, .threads = o.threads,
                              .answer = ans, .conf = conf, .answer_iv = ans_iv,
                              .conf_iv = conf_iv };
        if ((err = train_neo_evaluate(&run)))
            goto fail;
        test_errors = count_wrong(best_iv ? ans_iv : ans, test.labels, test.count);
        info.test_error = (double)test_errors / test.count;
        snprintf(info.test_set, sizeof(info.test_set), "MNIST t10k (%u)", test.count);
    }
    train_utc_iso(info.created, sizeof(info.created));
    if ((err = write_model(o.out, net, &info, best_iv ? o.top_t : 0))) {
        fprintf(stderr, "neocog-train neocognitron: writing %s: %s\n", o.out,
                nc_strerror(err));
        goto out;
    }
    double total = train_now() - run_start;
    for (int l = 0; l < NC_NEOCOG_MAX_STAGES && o.resume; l++)
        total += 0.0;       /* stage times of resumed stages are in log[] */
    char dur[32];
    fprintf(stderr, "\n model       %s\n planes      K1..K4 = %u / %u / %u / %u\n",
            o.out, net->n_planes[0], net->n_planes[1], net->n_planes[2], net->n_planes[3]);
    for (uint32_t l = 0; l < net->arch.n_stages; l++) {
        train_format_duration(log[l], dur, sizeof(dur));
        fprintf(stderr, " US%u         %s\n", l + 1, dur);
    }
    if (n_valid)
        fprintf(stderr, " validation  %.2f%% (%u / %u), theta4 %.3f, %s\n",
                100.0 * best_err / n_valid, best_err, n_valid, (double)best_theta,
                best_iv ? "interpolating vectors" : "max response");
    if (!o.no_test)
        fprintf(stderr, " test error  %.2f%% (%u / %u, %s)\n", 100.0 * info.test_error,
                test_errors, test.count, info.test_set);
    train_format_duration(total, dur, sizeof(dur));
    fprintf(stderr, " time        %s (wall, this run)\n", dur);
    status = TRAIN_EXIT_OK;
    goto out;
fail:
    fprintf(stderr, "neocog-train neocognitron: %s\n", nc_strerror(err));
out:
    free(order);
    train_pool_free(pool);
    free(ans);
    free(ans_iv);
    free(conf);
    free(conf_iv);
    nc_neocog_iv_free(iv);
    nc_neocog_learner_free(lr);
    nc_neocog_free(net);
    nc_dataset_fini(&train);
    nc_dataset_fini(&test);
    return status;
}

/* tools/train_cnn.c — `neocog-train cnn`: train one seed 000 CNN column on
 * MNIST (or another IDX character set) and write it as a model file.
 *
 * Layer: tools.  core/cnn does forward, back-propagation and SGD, core/data/deform
 * the distortions; this file owns the schedule, progress and provenance;
 * train_cnn_opts.c the options, train_cnn_data.c the data split and inputs,
 * train_cnn_epoch.c an epoch, train_cnn_checkpoint.c the checkpoints.
 *
 * Procedure (seed 000 §4 unless noted):
 *  - Data: the MNIST training file is split into a training part (the first
 *    60000 - V digits, or only the first --limit of them) and a validation
 *    part, the LAST V digits (--validation, default 10000).  The 10000 test
 *    digits are read and checked before training but measured only after
 *    it, on the chosen model, once; they never influence any choice (with
 *    --no-test they are not read).  Other character sets (--train, e.g.
 *    neocog-unipen's 94 classes): the --train set is the training part,
 *    --val's images are appended as the validation part, --test is the test
 *    set; the classes file's labels go into the model file's record, and
 *    --arch's last layer must have one output per class.  --epoch-blocks K:
 *    the --train set is K renderings of the same characters one after
 *    another (neocog-unipen --variant-blocks), and epoch e trains on
 *    rendering (e - 1) mod K alone.
 *  - Input: every digit goes through nc_prep_apply with the prep the model
 *    file records, NC_PREP_CNN_29 (size 29, box 20, pad 0; NC_PREP_MNIST_28
 *    for a 1x28x28 input), once at load time, so the daemon later feeds the
 *    model exactly what it was trained on.  On MNIST this is nearly the bare
 *    digit: the 28x28 layout (20 px box, centre of mass at (14, 14)) plus a
 *    zero column on the right and a zero row at the bottom, with the grey
 *    levels divided by the digit's brightest pixel rather than by 255.  (On
 *    the 10000 test digits: 89.8 % have a pixel at 255 and come out as
 *    pixels / 255 exactly; all but 3 equal pixels / max exactly; those 3
 *    have a 19 px box that the prep scales to 20.)  --prep line records
 *    NC_PREP_LINE instead (box 28: the cell's height to 28 rows, no crop;
 *    NC_PREP_LINE_29 for a 1x29x29 input), which passes neocog-unipen
 *    --size-mode line's 28x28 renderings through unchanged.
 *  - Deformations (--deform, default on): every training presentation is
 *    freshly distorted by core/data/deform with NC_DEFORM_MNIST (affine +
 *    elastic), its strengths times --deform-scale; validation and test
 *    digits never are.
 *  - Batch-normalised layers ("bn" in --arch; core/cnn/cnn.h): each batch is
 *    normalised with its own statistics while training; after every epoch
 *    train_norm.h measures each layer's fixed statistics over undeformed
 *    training digits, and the net folded with them (nc_cnn_fold_norm)
 *    answers validation and test and is the file written.  Checkpoints
 *    hold the normalised nets themselves.
 *  - Weights uniform in [-0.05, 0.05] from --seed (nc_cnn_init_weights), or
 *    with --init-gain G each layer's uniform with variance G^2 / fan-in and
 *    biases 0 (nc_cnn_init_fan_in; not the seed's: for deep nets of
 *    rectified units, the notation's "relu").
 *  - Mini-batch SGD (plain, --momentum or --adam: core's steps, which the
 *    engine's kernels round alike) on the BLAS path, or with --gpu N on the
 *    CUDA engine (gpu/cnn/cnn_engine.h: the training digits resident on the
 *    device, which deforms them itself with gpu/data/deform, the twin of
 *    core/data/deform, and runs a chunk of steps without waiting; the same steps
 *    as the CPU's to float rounding, as tests/gpu/test_deform and
 *    tests/gpu/test_cnn check).  nc_cnn sums gradients over a batch
 *    (not averages), so --lr keeps the seed's on-line meaning, a step per
 *    image: a batch of B moves the weights about as far as B on-line steps
 *    would, and no rescaling with --batch is needed.  Batch 16 (default)
 *    turns the convolutions into matrix products wide enough for BLAS while
 *    staying close to on-line training.
 *  - Loss: the seed's squared error against +1 / -1 targets (nc_cnn_loss),
 *    or with --softmax S the cross-entropy of softmax(S y) (nc_cnn_loss_softmax;
 *    not the seed's).  The network and its outputs are the same either way,
 *    so the model file does not change kind; its command records the loss.
 *  - Learning rate lr * decay^e in epoch e (0-based).  The seed's MNIST runs
 *    go from 1e-3 to 3e-5 in 500 epochs (decay 0.993); its NORB/CIFAR runs
 *    use 0.95, the default here, which suits runs of tens of epochs.
 *  - The training order is reshuffled every epoch from one splitmix64
 *    stream seeded from --seed; the same stream then gives the epoch's
 *    deformation seed, and the image at position p of the epoch draws its
 *    deformation from a stream of its own hashed from that seed and p
 *    (image_rng), so --threads workers (CPU) or one block per image (GPU)
 *    deform exactly the same images.  A run is reproducible whatever the
 *    thread count, and a resumed run continues the same streams.
 *  - After each epoch the validation error is measured; the weights of the
 *    epoch with the lowest validation error (the earliest on ties) are the
 *    ones saved ("test for best validation", seed 000 §4).  With
 *    --validation 0 the last epoch is kept; so it is with --keep-last,
 *    which still measures every epoch, so that the kept weights' validation
 *    error is an honest one (no epoch was picked on it).  Columns trained
 *    with deformations to the end and answered on several views gain from
 *    that: models/README.md, `cnn-single.ncm`.
 *  - --checkpoint FILE is rewritten atomically after every epoch; --resume
 *    continues from it.  A checkpoint is a model-format container (kind CNN)
 *    whose sections hold the current and the best network as complete model
 *    files (nc_cnn_save) plus the schedule state: see write_checkpoint(). */
#include "train_cnn.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cnn.h"
#include "deform.h"
#include "train_norm.h"
#include "train_teacher.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "nc_config.h"
#if NC_HAVE_CUDA
#include "cnn_engine_train.h"
#include "device.h"
#endif

/* ---- the command ----------------------------------------------------------- */

/* What answers for net, and its errors on the validation digits (none for
 * count 0): net itself, or for a normalised net (tn) its fold with
 * statistics measured now over the first norm_digits inputs.  g: the
 * training engine holding net's params, or NULL on the CPU (with w). */
static int measure_and_validate(train_norm *tn, nc_cnn *net, void *g, nc_cnn_work *w,
                                const float *inputs, uint32_t norm_digits,
                                const uint8_t *labels, uint32_t plane, uint32_t first,
                                uint32_t count, float *out, uint32_t *ret_errors)
{
    const nc_cnn *vnet = net;
    nc_cnn_work *vw = w;
    void *vg = g;
    int err = 0;
    *ret_errors = 0;
    if (tn && ((err = train_norm_measure(tn, net, g, w, inputs, norm_digits)) ||
               (err = train_norm_fold(tn, net, &vnet, &vw, &vg))))
        return err;
    return count ? train_cnn_count_errors(vnet, vw, vg, inputs, labels, plane, first, count, out,
                                          ret_errors)
                 : 0;
}

/* best->params = the mean of k weight sets, of which best holds the mean of
 * the first k - 1 and net the k-th (k = 1: a copy).  A normalised net's
 * statistics are averaged too; the caller measures them again. */
static void average_into(nc_cnn *best, const nc_cnn *net, uint32_t k)
{
    if (k == 1) {
        memcpy(best->params, net->params, net->n_params * sizeof(float));
        return;
    }
    const float f = 1.0f / (float)k;
    for (size_t i = 0; i < net->n_params; i++)
        best->params[i] += (net->params[i] - best->params[i]) * f;
}

/* avg_first: the first epoch (1-based) of --average-last's window, 0 for
 * none: those epochs are marked instead of the kept one. */
static void print_table(const run_state *st, uint32_t n_valid, uint32_t avg_first)
{
    fprintf(stderr, "\n epoch        lr      loss  train err  valid err   time\n");
    for (uint32_t e = 0; e < st->epochs_done; e++) {
        const double *h = st->hist + (size_t)e * HIST_COLS;
        char valid[16];
        if (n_valid)
            snprintf(valid, sizeof(valid), "%8.2f%%", 100.0 * h[HIST_VALID_ERR]);
        else
            snprintf(valid, sizeof(valid), "%9s", "-");
        fprintf(stderr, " %5u  %8.2e  %8.5f  %8.2f%%  %s  %5.0fs%s\n", e + 1, h[HIST_LR],
                h[HIST_LOSS], 100.0 * h[HIST_TRAIN_ERR], valid, h[HIST_SECONDS],
                avg_first ? (e + 1 >= avg_first ? "  <- averaged" : "")
                          : (e + 1 == st->best_epoch ? "  <- kept" : ""));
    }
}

int train_cnn_main(int argc, char **argv, const train_cmdline *cmd)
{
    options o;
    int err = train_cnn_parse_options(argc, argv, &o);
    if (err != TRAIN_PARSED)
        return err;                 /* --help, or a usage error */

    int status = TRAIN_EXIT_FAIL;
    const nc_deform_params dparams = nc_deform_params_scaled(&o.deform_base, o.deform_scale);
    nc_dataset train = { 0 }, test = { 0 }, extra = { 0 };
    float *pool_inputs = NULL, *teacher_targets = NULL;
    uint8_t *pool_labels = NULL;
    nc_cnn *net = NULL, *best = NULL;
    nc_cnn_work *w = NULL, *ew = NULL;
    train_norm *tn = NULL;  /* a batch-normalised --arch: its statistics and fold */
    float *train_inputs = NULL;
    trainer t = { .o = &o };
    run_state st = { 0 };
    uint8_t *model = NULL;
    size_t model_len = 0;
    nc_model_info info;
    memset(&info, 0, sizeof(info));
    const char *dir = train_data_dir(o.data);

    openblas_set_num_threads((int)o.threads);

    if ((err = nc_cnn_new(o.arch, &net)) || (err = nc_cnn_new(o.arch, &best))) {
        fprintf(stderr, "neocog-train cnn: --arch %s: %s\n", o.arch, nc_strerror(err));
        goto out;
    }
    const nc_cnn_layer *in_layer = &net->layers[0];
    if (in_layer->maps != 1 || in_layer->height != in_layer->width ||
        (in_layer->width != 28 && in_layer->width != 29)) {
        fprintf(stderr, "neocog-train cnn: --arch %s: 28x28 images need a 1x28x28 or 1x29x29 "
                "input\n", o.arch);
        goto out;
    }
    if (o.teacher && net->width_norm) {
        /* not tried: the teacher now prepares the digits itself (train_scores_run),
         * so the student's transformed inputs would not stand in its way */
        fprintf(stderr, "neocog-train cnn: --teacher with a width-normalised --arch (W%u) "
                "is not supported\n", net->width_norm);
        goto out;
    }
    if (o.prep_line && net->width_norm) {
        /* W normalises the ink's width, moving it on the line the prep keeps */
        fprintf(stderr, "neocog-train cnn: --prep line with a width-normalised --arch (W%u) "
                "is not supported\n", net->width_norm);
        goto out;
    }
    t.side = in_layer->width;
    const uint32_t plane = t.side * t.side;

    /* The classes: MNIST's digits, or --train's classes file, which --val's
     * and --test's must repeat; --arch's last layer has one output each. */
    train_classes classes;
    train_classes_digits(&classes);
    /* The test digits are read and checked now, so that a missing or bad
     * file is said before training rather than after it (the model would
     * not be written); they are measured only at the end. */
    if (o.train_set) {
        if (train_cnn_load_sets(&o, &train, &test, &classes))
            goto out;
    } else {
        if (train_load_mnist_checked("cnn", dir, "train", MNIST_TRAIN, &train))
            goto out;
        if (!o.no_test && train_load_mnist_checked("cnn", dir, "t10k", 0, &test))
            goto out;
    }
    const uint32_t K = classes.n;
    if (net->n_outputs != K) {
        fprintf(stderr, "neocog-train cnn: --arch %s has %u outputs, the data %u classes\n",
                o.arch, net->n_outputs, K);
        goto out;
    }
    /* the pool's training part first, validation last (load_sets appends
     * --val's images after --train's) */
    const uint32_t valid_first = train.count - o.validation;
    const uint32_t n_mnist = o.limit && o.limit < valid_first ? o.limit : valid_first;
    if (o.extra && train_cnn_load_extra(o.extra, K, &extra))
        goto out;
    t.n_train = t.n_pool = n_mnist + extra.count;
    const uint32_t blocks = o.epoch_blocks ? o.epoch_blocks : 1;
    if (t.n_pool % blocks) {
        fprintf(stderr, "neocog-train cnn: --epoch-blocks %u: the %u training images are not "
                "%u renderings of one size\n", blocks, t.n_pool, blocks);
        goto out;
    }
    t.n_train = t.n_pool / blocks;
    t.n_classes = K;
    t.net = net;
    t.live = isatty(STDERR_FILENO);

    /* Provenance; test_error is filled in at the end. */
    info.n_classes = K;
    memcpy(info.labels, classes.label, sizeof classes.label);
    info.prep = t.side == 29 ? NC_PREP_CNN_29 : NC_PREP_MNIST_28;
    if (o.prep_line)        /* the 28x28 cell as it is, in 28 or 29 */
        info.prep = (nc_prep){ NC_PREP_LINE, t.side, 28, 0, 0, 0.0f, 0, 0, { 0 }, { 0 } };
    char extra_note[160] = "";
    if (o.extra)
        snprintf(extra_note, sizeof(extra_note), " + %u images of %s", extra.count, o.extra);
    if (o.init) {
        size_t used = strlen(extra_note);
        snprintf(extra_note + used, sizeof(extra_note) - used, ", starting from %s", o.init);
    }
    if (blocks > 1) {
        size_t used = strlen(extra_note);
        snprintf(extra_note + used, sizeof(extra_note) - used,
                 " (%u renderings of %u, one an epoch)", blocks, t.n_train);
    }
    if (o.teacher) {
        size_t used = strlen(extra_note);
        snprintf(extra_note + used, sizeof(extra_note) - used, ", towards %s (weight %g)",
                 o.teacher, (double)o.teacher_weight);
    }
    char deformed[192] = "";
    if (o.deform && o.deform_custom)
        snprintf(deformed, sizeof deformed, ", deformed (shift %g, rotate %g, scale %g, "
                 "shear %g, sigma %g, alpha %g)", (double)dparams.max_translate,
                 (double)dparams.max_rotate_deg, (double)dparams.max_scale,
                 (double)dparams.max_shear, (double)dparams.elastic_sigma,
                 (double)dparams.elastic_alpha);
    else if (o.deform && o.deform_scale == 1.0f)
        snprintf(deformed, sizeof deformed, ", deformed");
    else if (o.deform && o.deform_scale > 0.0f)
        snprintf(deformed, sizeof deformed, ", deformed x %g", (double)o.deform_scale);
    if (o.train_set)
        train_cnn_describe_sets(&o, n_mnist, o.validation, extra_note, deformed, info.data,
                                sizeof info.data);
    else if (o.validation)
        snprintf(info.data, sizeof(info.data), "MNIST train 0-%u%s (validation %u-%u)%s",
                 n_mnist - 1, extra_note, valid_first, MNIST_TRAIN - 1, deformed);
    else
        snprintf(info.data, sizeof(info.data), "MNIST train 0-%u%s (no validation)%s",
                 n_mnist - 1, extra_note, deformed);
    if (train_join_argv(cmd, info.command, sizeof(info.command)))
        fprintf(stderr, "neocog-train cnn: warning: command line truncated in the model file\n");
    info.seed = o.seed;
    info.test_error = -1.0;

    /* Buffers. */
    uint32_t max_batch = o.batch > EVAL_BATCH ? o.batch : EVAL_BATCH;
    if ((err = nc_cnn_work_new(net, o.batch, &w)) || (err = nc_cnn_work_new(net, EVAL_BATCH, &ew)))
        goto fail;
    if (nc_cnn_norm_layers(net) && (err = train_norm_new(net, o.gpu, o.unrolled, EVAL_BATCH, &tn)))
        goto fail;
    /* a normalised net's fixed statistics: over the first training digits,
       undeformed (what validation and test digits look like), in whole
       batches of EVAL_BATCH (train_norm_measure) */
    const uint32_t norm_digits = n_mnist >= NORM_DIGITS  ? NORM_DIGITS
                                 : n_mnist >= EVAL_BATCH ? n_mnist / EVAL_BATCH * EVAL_BATCH
                                                         : n_mnist;
    t.w = w;
    t.chunk = (CHUNK_MIN + o.batch - 1) / o.batch * o.batch;
    t.order = malloc((size_t)t.n_train * sizeof(uint32_t));
    t.out = malloc((size_t)max_batch * K * sizeof(float));
    t.d_out = malloc((size_t)o.batch * K * sizeof(float));
    t.grads = malloc(net->n_params * sizeof(float));
    t.st = &st;
    if (o.momentum > 0.0f && !(st.velocity = calloc(net->n_params, sizeof(float)))) {
        err = -ENOMEM;
        goto fail;
    }
    if (o.adam && (!(st.adam_m = calloc(net->n_params, sizeof(float))) ||
                   !(st.adam_v = calloc(net->n_params, sizeof(float))))) {
        err = -ENOMEM;
        goto fail;
    }
    st.hist = calloc((size_t)o.epochs * HIST_COLS, sizeof(double));
    for (int i = 0; i < 2; i++) {
        t.chunk_in[i] = malloc((size_t)t.chunk * plane * sizeof(float));
        t.chunk_labels[i] = malloc(t.chunk);
        if (o.teacher && !(t.chunk_targets[i] = malloc((size_t)t.chunk * K * sizeof(float)))) {
            err = -ENOMEM;
            goto fail;
        }
    }
    t.state = malloc((size_t)t.chunk * sizeof(uint64_t));
    if (!t.order || !t.out || !t.d_out || !t.grads || !st.hist || !t.chunk_in[0] ||
        !t.chunk_in[1] || !t.chunk_labels[0] || !t.chunk_labels[1] || !t.state) {
        err = -ENOMEM;
        goto fail;
    }
    for (uint32_t i = 0; i < t.n_train; i++)
        t.order[i] = i;
    if (o.deform) {
        if (!(t.deform = calloc(o.threads, sizeof(*t.deform)))) {
            err = -ENOMEM;
            goto fail;
        }
        for (uint32_t i = 0; i < o.threads; i++)
            if ((err = nc_deform_new(&dparams, t.side, t.side, &t.deform[i])))
                goto fail;
    }

    if ((err = train_cnn_prepare_inputs(&train, &info.prep, net, &train_inputs)))
        goto fail;
    t.inputs = train_inputs;
    t.labels = train.labels;
    if (o.extra && (err = train_cnn_make_pool(&t, train_inputs, train.labels, n_mnist, &extra,
                                              &info.prep, &pool_inputs, &pool_labels)))
        goto fail;
    if (o.teacher) {
        /* the pool's order: MNIST digits 0.., then any --extra (make_pool) */
        err = train_teacher_targets(o.teacher, &info.prep, plane, K, &train, n_mnist,
                                    o.extra ? &extra : NULL, extra.count, o.teacher_weight,
                                    o.threads, &teacher_targets);
        openblas_set_num_threads((int)o.threads);   /* train_scores_run held it to one */
        if (err)
            goto out;
        t.targets = teacher_targets;
    }
    /* Fresh start, or the state after the checkpoint's last epoch. */
    if ((err = o.init_gain > 0.0f ? nc_cnn_init_fan_in(net, o.seed, o.init_gain)
                                  : nc_cnn_init_weights(net, o.seed)))
        goto fail;
    if (o.init && train_cnn_load_init(o.init, net))
        goto out;
    memcpy(best->params, net->params, net->n_params * sizeof(float));
    st.rng.state = o.seed ^ 0x6a09e667f3bcc908ull;   /* a stream apart from the weights' */
    if (o.resume) {
        if (train_cnn_read_checkpoint(o.checkpoint, &o, net, best, &st))
            goto out;
        fprintf(stderr, "resumed from %s after epoch %u (best so far: epoch %u)\n",
                o.checkpoint, st.epochs_done, st.best_epoch);
        if (st.epochs_done >= o.epochs)
            fprintf(stderr, "nothing left to train: --epochs %u\n", o.epochs);
    }
    void *gpu = NULL;       /* the engine, for count_errors */
#if NC_HAVE_CUDA
    if (o.gpu >= 0) {
        /* Made after a resume, so it starts from the checkpoint's params. */
        nc_gpu_device_info di;
        nc_gpu_cnn *g = NULL;
        err = nc_gpu_cnn_new(net, o.gpu, max_batch, &g);
        t.gpu = g;
        /* The engine's default picks kernels per batch size by timing them,
         * and the timings (other processes on the GPU, MPS) can pick another
         * summation order from one run to the next; the direct kernels make
         * a run with the same --seed give the same network again. */
        if (!err)
            err = nc_gpu_cnn_set_path(g, o.unrolled ? NC_GPU_CNN_PATH_UNROLLED
                                                    : NC_GPU_CNN_PATH_DIRECT);
        if (!err)
            err = nc_gpu_cnn_set_train_data(g, t.inputs, t.labels, t.n_pool,
                                            o.deform ? &dparams : NULL);
        if (!err && t.targets)
            err = nc_gpu_cnn_set_train_targets(g, t.targets);
        if (!err && o.softmax > 0.0f)
            err = nc_gpu_cnn_set_loss_softmax(g, o.softmax);
        /* the optimiser's state as the CPU would go on from it: zeros, or
           the checkpoint's; read back with the net after every epoch */
        if (!err && st.velocity)
            err = nc_gpu_cnn_set_momentum(g, o.momentum, st.velocity);
        if (!err && o.adam)
            err = nc_gpu_cnn_set_adam(g, ADAM_BETA1, ADAM_BETA2, ADAM_EPS, st.adam_m, st.adam_v,
                                      st.adam_step);
        if (err) {
            fprintf(stderr, "neocog-train cnn: --gpu %d: %s (%s)\n", o.gpu, nc_strerror(err),
                    nc_gpu_last_error());
            goto out;
        }
        gpu = t.gpu;
        if (nc_gpu_device_info_get(o.gpu, &di) == 0)
            fprintf(stderr, "  GPU %d: %s\n", o.gpu, di.name);
    }
#endif

    char arch[NC_CNN_ARCH_MAX];
    nc_cnn_arch_format(net, arch, sizeof(arch));
    fprintf(stderr, "neocog-train cnn: %s, %zu parameters\n", arch, net->n_params);
    fprintf(stderr, "  data %s: %s\n", o.train_set ? o.train_set : dir, info.data);
    fprintf(stderr, "  epochs %u, batch %u, lr %g decay %g%s, seed %llu, %u thread%s, on %s\n",
            o.epochs, o.batch, (double)o.lr, (double)o.lr_decay,
            o.adam ? " (Adam)" : o.momentum > 0.0f ? " with momentum" : "",
            (unsigned long long)o.seed,
            o.threads, o.threads == 1 ? "" : "s", gpu ? "the GPU" : "the CPU");
    if (o.deform) {
        const nc_deform_params *p = &dparams;
        fprintf(stderr, "  deformations: shift %g px, rotation %g deg, scale %g, shear %g, "
                "elastic sigma %g alpha %g\n", (double)p->max_translate,
                (double)p->max_rotate_deg, (double)p->max_scale, (double)p->max_shear,
                (double)p->elastic_sigma, (double)p->elastic_alpha);
    }

    double run_start = train_now(), spent_before = 0.0;
    for (uint32_t e = 0; e < st.epochs_done; e++)
        spent_before += st.hist[(size_t)e * HIST_COLS + HIST_SECONDS];
    uint32_t first_epoch = st.epochs_done;
    while (st.epochs_done < o.epochs) {
        uint32_t e = st.epochs_done;
        float lr = o.lr * powf(o.lr_decay, (float)e);
        double t0 = train_now(), loss;
        uint32_t train_errors, valid_errors = 0;
        /* Every epoch shuffles the identity permutation, so that resuming
         * (which starts from the identity) replays the same orders; with
         * --epoch-blocks, that of the epoch's block of the pool. */
        for (uint32_t i = 0; i < t.n_train; i++)
            t.order[i] = e % blocks * t.n_train + i;
        if ((err = train_cnn_epoch(&t, &st, lr, &loss, &train_errors)))
            goto fail;
#if NC_HAVE_CUDA
        /* net and the optimiser's state mirror the device after every
         * epoch: best and checkpoints copy them. */
        if (t.gpu && (err = nc_gpu_cnn_download(t.gpu, net)))
            goto fail;
        if (t.gpu && st.velocity && (err = nc_gpu_cnn_get_velocity(t.gpu, st.velocity)))
            goto fail;
        if (t.gpu && o.adam &&
            (err = nc_gpu_cnn_get_adam(t.gpu, st.adam_m, st.adam_v, &st.adam_step)))
            goto fail;
#endif
        double t_train = train_now() - t0;
        if ((err = measure_and_validate(tn, net, gpu, ew, train_inputs, norm_digits,
                                        train.labels, plane, valid_first, o.validation, t.out,
                                        &valid_errors)))
            goto fail;
        double secs = train_now() - t0;
        double *h = st.hist + (size_t)e * HIST_COLS;
        h[HIST_LR] = lr;
        h[HIST_LOSS] = loss;
        h[HIST_TRAIN_ERR] = (double)train_errors / t.n_train;
        h[HIST_VALID_ERR] = o.validation ? (double)valid_errors / o.validation : 0.0;
        h[HIST_SECONDS] = secs;
        st.epochs_done++;
        /* lowest: below every earlier epoch's validation error (the earliest
         * wins ties); the kept weights are that epoch's unless the last is
         * kept */
        int lowest = o.validation != 0;
        for (uint32_t i = 0; lowest && i + 1 < st.epochs_done; i++)
            lowest = h[HIST_VALID_ERR] < st.hist[(size_t)i * HIST_COLS + HIST_VALID_ERR];
        if (o.average_last) {
            /* best holds the running mean of the window's epochs so far (so a
             * checkpoint carries it); epochs before the window leave it be */
            if (st.epochs_done > o.epochs - o.average_last) {
                st.best_epoch = st.epochs_done;
                average_into(best, net, st.epochs_done - (o.epochs - o.average_last));
            }
        } else if (lowest || !o.validation || o.keep_last) {
            st.best_epoch = st.epochs_done;
            memcpy(best->params, net->params, net->n_params * sizeof(float));
        }

        double elapsed = train_now() - run_start;
        char eta[32], valid[32];
        train_format_duration(elapsed / (st.epochs_done - first_epoch) *
                              (o.epochs - st.epochs_done), eta, sizeof(eta));
        if (o.validation)
            snprintf(valid, sizeof(valid), "valid %.2f%%", 100.0 * h[HIST_VALID_ERR]);
        else
            snprintf(valid, sizeof(valid), "valid -");
        fprintf(stderr, "epoch %u/%u  lr %.2e  loss %.5f  train %.2f%%  %s%s  %.0f img/s  "
                "%.1fs  ETA %s\n", st.epochs_done, o.epochs, lr, loss,
                100.0 * h[HIST_TRAIN_ERR], valid, lowest ? " *" : "",
                t.n_train / t_train, secs, eta);
        if (o.checkpoint) {
            info.epochs = st.epochs_done;
            train_utc_iso(info.created, sizeof(info.created));
            if (train_cnn_write_checkpoint(o.checkpoint, &o, net, best, &info, &st))
                goto out;
        }
    }

    /* An average's statistics and validation error, as every epoch's: the
     * engine takes its weights (training is over). */
    uint32_t avg_valid_errors = 0;
    if (o.average_last) {
#if NC_HAVE_CUDA
        if (t.gpu && (err = nc_gpu_cnn_upload(t.gpu, best)))
            goto fail;
#endif
        if ((err = measure_and_validate(tn, best, gpu, ew, train_inputs, norm_digits,
                                        train.labels, plane, valid_first, o.validation, t.out,
                                        &avg_valid_errors)))
            goto fail;
    }

    /* What answers: the fold of a normalised net (on the CPU). */
    NC_FREE(train_inputs);
    nc_dataset_fini(&train);
    const nc_cnn *kept = best;
    nc_cnn_work *kw = ew;
    if (tn && (err = train_norm_fold(tn, best, &kept, &kw, NULL)))
        goto fail;

    /* The chosen weights, measured once on the test set (not with --no-test:
     * the file then records its test error as unknown). */
    uint32_t test_errors = 0;
    if (!o.no_test) {
        float *test_inputs = NULL;
        if ((err = train_cnn_prepare_inputs(&test, &info.prep, net, &test_inputs)))
            goto fail;
        err = train_cnn_count_errors(kept, kw, NULL, test_inputs, test.labels, plane, 0, test.count,
                                     t.out, &test_errors);
        free(test_inputs);
        if (err)
            goto fail;
        info.test_error = (double)test_errors / test.count;
        if (o.train_set)
            snprintf(info.test_set, sizeof(info.test_set), "%s (%u)", o.test_set, test.count);
        else
            snprintf(info.test_set, sizeof(info.test_set), "MNIST t10k (%u)", test.count);
    }
    info.epochs = st.best_epoch;
    train_utc_iso(info.created, sizeof(info.created));
    if ((err = nc_cnn_save(kept, &info, &model, &model_len)) ||
        (err = nc_file_write_atomic(o.out, model, model_len))) {
        fprintf(stderr, "neocog-train cnn: writing %s: %s\n", o.out, nc_strerror(err));
        goto out;
    }

    print_table(&st, o.validation,
                o.average_last ? o.epochs - o.average_last + 1 : 0);
    double total = spent_before + (train_now() - run_start);
    char dur[32], which[48], why[96] = " (last)";
    train_format_duration(total, dur, sizeof(dur));
    if (o.average_last > 1)
        snprintf(which, sizeof(which), "epochs %u-%u", st.epochs_done - o.average_last + 1,
                 st.epochs_done);
    else
        snprintf(which, sizeof(which), "epoch %u", st.best_epoch);
    if (o.average_last && o.validation)
        snprintf(why, sizeof(why), ", averaged (--average-last: validation error %.2f%%)",
                 100.0 * avg_valid_errors / o.validation);
    else if (o.average_last)
        snprintf(why, sizeof(why), ", averaged (--average-last)");
    else if (o.validation && o.keep_last)
        snprintf(why, sizeof(why), " (last, --keep-last: validation error %.2f%%)",
                 100.0 * st.hist[(size_t)(st.best_epoch - 1) * HIST_COLS + HIST_VALID_ERR]);
    else if (o.validation)
        snprintf(why, sizeof(why), " (lowest validation error)");
    char tested[160] = "not measured (--no-test)";
    if (!o.no_test)
        snprintf(tested, sizeof(tested), "%.2f%% (%u / %u, %s)", 100.0 * info.test_error,
                 test_errors, test.count, info.test_set);
    fprintf(stderr, "\n model       %s\n arch        %s\n data        %s\n"
            " kept        %s of %u%s\n test error  %s\n"
            " time        %s (wall, training to test)\n",
            o.out, arch, info.data, which, st.epochs_done, why, tested, dur);
    if (tn) {
        char folded[NC_CNN_ARCH_MAX];
        nc_cnn_arch_format(kept, folded, sizeof(folded));
        fprintf(stderr, " written as  %s (batch norm folded in, statistics of training "
                "digits 0-%u)\n", folded, norm_digits - 1);
    }
    status = TRAIN_EXIT_OK;
    goto out;

fail:
    fprintf(stderr, "neocog-train cnn: %s\n", nc_strerror(err));
#if NC_HAVE_CUDA
    if (t.gpu)
        fprintf(stderr, "neocog-train cnn: GPU: %s\n", nc_gpu_last_error());
#endif
out:
    free(model);
    free(st.hist);
    free(t.order);
    free(t.out);
    free(t.d_out);
    free(t.grads);
    free(st.velocity);
    free(st.adam_m);
    free(st.adam_v);
    free(train_inputs);
    free(pool_inputs);
    free(pool_labels);
    nc_dataset_fini(&extra);
    for (int i = 0; i < 2; i++) {
        free(t.chunk_in[i]);
        free(t.chunk_labels[i]);
        free(t.chunk_targets[i]);
    }
    free(teacher_targets);
    if (t.deform)
        for (uint32_t i = 0; i < o.threads; i++)
            nc_deform_free(t.deform[i]);
    free(t.deform);
    free(t.state);
#if NC_HAVE_CUDA
    nc_gpu_cnn_free(t.gpu);
#endif
    train_norm_free(tn);
    nc_cnn_work_free(w);
    nc_cnn_work_free(ew);
    nc_cnn_free(net);
    nc_cnn_free(best);
    nc_dataset_fini(&train);
    nc_dataset_fini(&test);
    return status;
}

/* tools/train_cnn_epoch.c — one epoch: images deformed by worker threads
 * (or on the device) a chunk ahead while the current chunk trains.
 *
 * Layer: tools; part of `neocog-train cnn` (train_cnn.c says how it trains). */
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

/* ---- one epoch -------------------------------------------------------------- */

/* The deformation stream of the image at position pos of an epoch: its own
 * splitmix64 state, hashed from the epoch's seed and pos, so that any number
 * of threads draws exactly the same images (core/data/deform's draws of one image
 * are sequential; images are independent). */
static nc_deform_rng image_rng(uint64_t epoch_seed, uint32_t pos)
{
    nc_deform_rng h = { epoch_seed + pos };
    return (nc_deform_rng){ nc_deform_rng_next(&h) };
}

typedef struct fill_job {
    const trainer *t;
    nc_deform *deform;      /* this thread's scratch; NULL: copy */
    uint64_t epoch_seed;
    uint32_t first, count;  /* positions in the epoch's order */
    uint32_t base;          /* position of the chunk's first image */
    float *in;              /* the chunk's buffers */
    uint8_t *labels;
    float *targets;         /* NULL without --teacher */
    int err;
} fill_job;

static void *fill_run(void *arg)
{
    fill_job *j = arg;
    const trainer *t = j->t;
    const uint32_t plane = t->side * t->side;
    for (uint32_t pos = j->first; pos < j->first + j->count && !j->err; pos++) {
        const uint32_t k = t->order[pos];
        const float *src = t->inputs + (size_t)k * plane;
        float *dst = j->in + (size_t)(pos - j->base) * plane;
        j->labels[pos - j->base] = t->labels[k];
        if (j->targets)
            memcpy(j->targets + (size_t)(pos - j->base) * t->n_classes,
                   t->targets + (size_t)k * t->n_classes, t->n_classes * sizeof(float));
        if (j->deform) {
            nc_deform_rng r = image_rng(j->epoch_seed, pos);
            j->err = nc_deform_apply(j->deform, &r, src, dst);
        } else {
            memcpy(dst, src, plane * sizeof(float));
        }
    }
    return NULL;
}

/* Images [first, first + count) of the epoch's order into buffer slot,
 * split over the worker threads, which are started here and joined by
 * fill_join.  A thread that cannot start leaves its share to the caller's
 * thread (in fill_join), so nothing is lost. */
typedef struct filler {
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS];
    fill_job job[MAX_THREADS];
    uint32_t n_jobs;
} filler;

static void fill_start(filler *f, const trainer *t, uint64_t epoch_seed, uint32_t first,
                       uint32_t count, int slot)
{
    uint32_t n = t->o->threads < count ? t->o->threads : count;
    f->n_jobs = n;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a = (uint32_t)((uint64_t)count * i / n), b = (uint32_t)((uint64_t)count * (i + 1) / n);
        f->job[i] = (fill_job){ .t = t, .deform = t->deform ? t->deform[i] : NULL,
                                .epoch_seed = epoch_seed, .first = first + a, .count = b - a,
                                .base = first, .in = t->chunk_in[slot],
                                .labels = t->chunk_labels[slot],
                                .targets = t->targets ? t->chunk_targets[slot] : NULL };
        f->started[i] = pthread_create(&f->tid[i], NULL, fill_run, &f->job[i]) == 0;
    }
}

static int fill_join(filler *f)
{
    int err = 0;
    for (uint32_t i = 0; i < f->n_jobs; i++) {
        if (f->started[i])
            pthread_join(f->tid[i], NULL);
        else
            fill_run(&f->job[i]);
        if (!err)
            err = f->job[i].err;
    }
    f->n_jobs = 0;
    return err;
}

/* One SGD step per mini-batch of the chunk's n images; loss and errors
 * added to *loss, *errors. */
static int train_chunk(trainer *t, int slot, uint32_t n, float lr, double *loss,
                       uint32_t *errors)
{
    const uint32_t plane = t->side * t->side, B = t->o->batch;
    for (uint32_t i = 0; i < n; i += B) {
        const uint32_t nb = n - i < B ? n - i : B;
        const float *in = t->chunk_in[slot] + (size_t)i * plane;
        const uint8_t *labels = t->chunk_labels[slot] + i;
        const float *targets =
            t->targets ? t->chunk_targets[slot] + (size_t)i * t->n_classes : NULL;
        /* nc_cnn_train_step without hiding the outputs, so the training
         * error comes for free. */
        double l = 0.0;
        uint32_t e = 0;
        int err = nc_cnn_forward_blas(t->net, t->w, in, nb, t->out);
        if (!err)
            err = t->o->softmax > 0.0f
                      ? nc_cnn_loss_softmax(t->net, t->out, labels, nb, t->o->softmax, t->d_out,
                                            &l, &e)
                      : nc_cnn_loss_targets(t->net, t->out, labels, targets, nb, t->d_out, &l,
                                            &e);
        if (!err)
            err = nc_cnn_backward_blas(t->net, t->w, in, nb, t->d_out, t->grads);
        if (!err && t->o->adam)
            err = nc_cnn_adam(t->net, t->grads, t->st->adam_m, t->st->adam_v,
                              ++t->st->adam_step, lr, ADAM_BETA1, ADAM_BETA2, ADAM_EPS);
        else if (!err)
            err = t->st->velocity ? nc_cnn_sgd_momentum(t->net, t->grads, t->st->velocity, lr,
                                                        t->o->momentum)
                                  : nc_cnn_sgd(t->net, t->grads, lr);
        if (err)
            return err;
        if (!isfinite(l))
            return -ERANGE;         /* diverged: a smaller --lr is needed */
        *loss += l;
        *errors += e;
    }
    return 0;
}

#if NC_HAVE_CUDA
/* The GPU's epoch: the training images live on the device, which deforms
 * them itself (gpu/data/deform.cuh) from the same per-image streams, so the host
 * only sends positions and stream states, a chunk at a time. */
static int train_chunk_gpu(trainer *t, uint64_t epoch_seed, uint32_t first, uint32_t n,
                           float lr, double *loss, uint32_t *errors)
{
    for (uint32_t i = 0; i < n; i++)
        t->state[i] = image_rng(epoch_seed, first + i).state;
    double l = 0.0;
    uint32_t e = 0;
    int err = nc_gpu_cnn_train_indexed(t->gpu, t->order + first, t->state, n, t->o->batch, lr,
                                       &l, &e);
    if (err)
        return err;
    *loss += l;
    *errors += e;
    return isfinite(l) ? 0 : -ERANGE;
}
#endif

int train_cnn_epoch(trainer *t, run_state *st, float lr, double *ret_loss,
                    uint32_t *ret_errors)
{
    double loss_sum = 0.0, t0 = train_now(), last_live = t0;
    uint32_t errors = 0;

    /* Fisher-Yates shuffle from the run's stream, then the epoch's seed for
     * the deformations from the same stream. */
    for (uint32_t i = t->n_train - 1; i > 0; i--) {
        uint32_t j = nc_deform_rng_below(&st->rng, i + 1);
        uint32_t tmp = t->order[i];
        t->order[i] = t->order[j];
        t->order[j] = tmp;
    }
    const uint64_t epoch_seed = nc_deform_rng_next(&st->rng);

    filler f = { .n_jobs = 0 };
    int slot = 0, err = 0;
    uint32_t first_n = t->n_train < t->chunk ? t->n_train : t->chunk;
    if (!t->gpu)
        fill_start(&f, t, epoch_seed, 0, first_n, slot);
    for (uint32_t c = 0; c < t->n_train; c += t->chunk) {
        const uint32_t n = t->n_train - c < t->chunk ? t->n_train - c : t->chunk;
#if NC_HAVE_CUDA
        if (t->gpu) {
            if ((err = train_chunk_gpu(t, epoch_seed, c, n, lr, &loss_sum, &errors)))
                break;
            goto progress;
        }
#endif
        if ((err = fill_join(&f)))
            break;
        const uint32_t next = c + t->chunk;
        if (next < t->n_train)
            fill_start(&f, t, epoch_seed, next,
                       t->n_train - next < t->chunk ? t->n_train - next : t->chunk, !slot);
        if ((err = train_chunk(t, slot, n, lr, &loss_sum, &errors)))
            break;
        slot = !slot;
#if NC_HAVE_CUDA
progress:
#endif

        if (t->live) {
            double now = train_now();
            if (now - last_live >= 0.5) {
                uint32_t done = c + n;
                double rate = done / (now - t0);
                char eta[32];
                train_format_duration((t->n_train - done) / rate, eta, sizeof(eta));
                fprintf(stderr, "\r  epoch %u: %5.1f%%  loss %.4f  train %.2f%%  %.0f img/s  "
                        "epoch ETA %s   ", st->epochs_done + 1, 100.0 * done / t->n_train,
                        loss_sum / done, 100.0 * errors / done, rate, eta);
                last_live = now;
            }
        }
    }
    int join_err = fill_join(&f);   /* a chunk still being filled after a failure */
    if (!err)
        err = join_err;
    if (t->live)
        fprintf(stderr, "\r%*s\r", 100, "");
    if (err)
        return err;
    *ret_loss = loss_sum / t->n_train;
    *ret_errors = errors;
    return 0;
}

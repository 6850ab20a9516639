/* tools/bench_cpu_cnn.c — the CNN half of neocog-bench-cpu.
 *
 * Times seed 000's MNIST column 1x29x29-20C4-MP2-40C5-MP3-150N-10N (or the
 * net of --cnn-arch, which must take a 1x29x29 input) on one core: per layer
 * and per image for the plain-loop reference (batch 1) and for the
 * unrolled-convolution + BLAS path (seed 001) at batch 1 and at
 * o->batch, a sweep of the BLAS path's unroll chunk, and training (forward +
 * backward + SGD) images/s.
 *
 * OpenBLAS is held to one thread (openblas_set_num_threads(1)) so the figures
 * are per core; run under `taskset -c 0` for steady numbers.  Each figure is
 * the best of o->reps runs after a warm-up pass.  Inputs are real
 * digits: the fixture's images through nc_prep_apply (NC_PREP_MNIST, size 28,
 * box 20, pad 0), each 28x28 field placed at the top left of a zero 29x29
 * one (the extra row and column of the 29x29 MNIST input, as in Simard et al.
 * 2003).  Weights are random (seed 1): inference time does not depend on
 * their values. */
#include "bench_cpu.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnn.h"
#include "image.h"

#define COLUMN "1x29x29-20C4-MP2-40C5-MP3-150N-10N"

/* OpenBLAS's threading control; declared by its cblas.h, repeated here in
 * case another CBLAS header is picked up. */
void openblas_set_num_threads(int num_threads);

typedef struct layer_clock {
    double last;
    double sum[NC_CNN_MAX_LAYERS];
} layer_clock;

static void on_layer(void *ctx, uint32_t layer)
{
    layer_clock *c = ctx;
    double t = bench_now();
    c->sum[layer] += t - c->last;
    c->last = t;
}

/* n inputs of 29x29 from the fixture's digits, cycling through them. */
static int make_inputs(const nc_dataset *d, uint32_t n, float **ret)
{
    const nc_prep p = { NC_PREP_MNIST, 28, 20, 0, 0, -1.0f, 0, 0, { 0 }, { 0 } };
    if (!d || d->count == 0 || nc_prep_out_len(&p) != 28 * 28)
        return -EINVAL;
    float *in = calloc((size_t)n * 841, sizeof(float));
    float field[28 * 28];
    if (!in)
        return -ENOMEM;
    uint32_t got = 0;
    for (uint32_t i = 0; got < n && i < 16 * n + d->count; i++) {
        uint32_t k = i % d->count;
        nc_image img = { d->cols, d->rows, d->cols, d->pixels + (size_t)k * d->rows * d->cols };
        if (nc_prep_apply(&img, &p, field))
            continue;       /* an empty image: skip it */
        for (int y = 0; y < 28; y++)
            memcpy(in + (size_t)got * 841 + y * 29, field + y * 28, 28 * sizeof(float));
        got++;
    }
    if (got < n) {
        free(in);
        return -ENOENT;
    }
    *ret = in;
    return 0;
}

typedef int (*forward_fn)(const nc_cnn *, nc_cnn_work *, const float *, uint32_t, float *);

/* One untimed pass (page faults, clocks ramping up), then `reps` runs of
 * `passes` forward passes of batch n; the fastest run's per-layer seconds go
 * to c and its total seconds are returned (best-of: other processes only
 * ever make a run slower). */
static double time_forward(forward_fn f, const nc_cnn *net, nc_cnn_work *w, const float *in,
                           uint32_t n_in, uint32_t n, int passes, int reps, layer_clock *c,
                           int *err)
{
    layer_clock run;
    double best = -1;
    *err = f(net, w, in, n, NULL);
    nc_cnn_work_set_hook(w, on_layer, &run);
    for (int r = 0; r < reps && !*err; r++) {
        memset(&run, 0, sizeof run);
        double t0 = bench_now();
        for (int p = 0; p < passes && !*err; p++) {
            uint32_t first = (uint32_t)((size_t)p * n % (n_in - n + 1));
            run.last = bench_now();
            *err = f(net, w, in + (size_t)first * 841, n, NULL);
        }
        double t = bench_now() - t0;
        if (best < 0 || t < best) {
            best = t;
            *c = run;
        }
    }
    nc_cnn_work_set_hook(w, NULL, NULL);
    return best;
}

static const char *kind_name(uint32_t k)
{
    switch (k) {
    case NC_CNN_KIND_CONV: return "conv";
    case NC_CNN_KIND_POOL: return "max-pool";
    case NC_CNN_KIND_FULL: return "full";
    default: return "input";
    }
}

/* Multiply-adds per image of layer l (pooling: comparisons). */
static double layer_macs(const nc_cnn *net, uint32_t l)
{
    const nc_cnn_layer *L = &net->layers[l];
    if (L->kind == NC_CNN_KIND_POOL)
        return (double)L->n_in;
    return (double)L->n_out * L->fan_in;
}

int bench_cpu_cnn(const nc_bench_opts *o)
{
    openblas_set_num_threads(1);
    const uint32_t batch = (uint32_t)o->batch;
    const uint32_t n_in = batch > 1024 ? batch : 1024;
    nc_cnn *net = NULL;
    nc_cnn_work *w = NULL, *w1 = NULL;
    float *in = NULL;
    int err;
    const char *arch = o->cnn_arch ? o->cnn_arch : COLUMN;
    if ((err = nc_cnn_new(arch, &net))) {
        if (err == -EINVAL)
            fprintf(stderr, "neocog-bench-cpu: --cnn-arch %s: not a network in the notation\n",
                    arch);
        goto out;
    }
    if (net->n_inputs != 29 * 29) {     /* make_inputs' 29x29 fields */
        fprintf(stderr, "neocog-bench-cpu: --cnn-arch %s: the input must be 1x29x29\n", arch);
        err = -EINVAL;
        goto out;
    }
    if ((err = nc_cnn_init_weights(net, 1)) || (err = make_inputs(o->digits, n_in, &in)) ||
        (err = nc_cnn_work_new(net, batch, &w)) || (err = nc_cnn_work_new(net, 1, &w1)))
        goto out;

    double macs = 0;
    for (uint32_t l = 1; l < net->n_layers; l++)
        if (net->layers[l].kind != NC_CNN_KIND_POOL)
            macs += layer_macs(net, l);
    printf("## CNN column %s\n\n", arch);
    printf("%zu weights, %.2f M multiply-adds per image; OpenBLAS %s, one thread; "
           "inputs: %u real digits (MNIST prep 28x28 in a 29x29 field)\n\n",
           net->n_params, macs / 1e6, OPENBLAS_VERSION, n_in);

    /* per-layer table: reference batch 1, BLAS batch 1, BLAS batch `batch` */
    const int ref_passes = 40, b1_passes = 400;
    const int bb_passes = (int)((4096u + batch - 1) / batch);
    layer_clock c_ref, c_b1, c_bb;
    double t_ref = time_forward(nc_cnn_forward_ref, net, w1, in, n_in, 1, ref_passes, o->reps, &c_ref, &err);
    double t_b1 = err ? 0 : time_forward(nc_cnn_forward_blas, net, w1, in, n_in, 1, b1_passes, o->reps, &c_b1, &err);
    double t_bb = err ? 0 : time_forward(nc_cnn_forward_blas, net, w, in, n_in, batch, bb_passes, o->reps, &c_bb, &err);
    if (err)
        goto out;
    double img_ref = ref_passes, img_b1 = b1_passes, img_bb = (double)bb_passes * batch;
    printf("### forward, time per image (us), best of %d runs\n\n", o->reps);
    printf("| layer | kind | output | M MAC | reference, batch 1 | BLAS, batch 1 | BLAS, batch %u |\n", batch);
    printf("|---|---|---|---:|---:|---:|---:|\n");
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        char shape[64];
        snprintf(shape, sizeof shape, "%ux%ux%u", L->maps, L->height, L->width);
        printf("| %u | %s | %s | %.3f | %.1f | %.1f | %.1f |\n", l, kind_name(L->kind), shape,
               L->kind == NC_CNN_KIND_POOL ? 0.0 : layer_macs(net, l) / 1e6,
               1e6 * c_ref.sum[l] / img_ref, 1e6 * c_b1.sum[l] / img_b1, 1e6 * c_bb.sum[l] / img_bb);
    }
    printf("| all | | | %.3f | %.1f | %.1f | %.1f |\n", macs / 1e6,
           1e6 * t_ref / img_ref, 1e6 * t_b1 / img_b1, 1e6 * t_bb / img_bb);
    printf("| images/s | | | | %.0f | %.0f | **%.0f** |\n", img_ref / t_ref, img_b1 / t_b1, img_bb / t_bb);
    printf("| GFLOP/s | | | | %.2f | %.2f | %.2f |\n\n", 2 * macs * img_ref / t_ref / 1e9,
           2 * macs * img_b1 / t_b1 / 1e9, 2 * macs * img_bb / t_bb / 1e9);

    /* the unroll chunk: images unrolled per product (0: the whole batch) */
    static const uint32_t chunks[] = { 1, 4, 8, 16, 32, 64, 0 };
    printf("### BLAS forward at batch %u by unroll chunk\n\n", batch);
    printf("| chunk | images/s |\n|---:|---:|\n");
    for (size_t i = 0; i < NC_ARRAY_LEN(chunks); i++) {
        if (chunks[i] > batch)
            continue;
        if ((err = nc_cnn_work_set_chunk(w, chunks[i])))
            goto out;
        layer_clock c;
        double t = time_forward(nc_cnn_forward_blas, net, w, in, n_in, batch, bb_passes, o->reps,
                                &c, &err);
        if (err)
            goto out;
        if (chunks[i])
            printf("| %u | %.0f |\n", chunks[i], img_bb / t);
        else
            printf("| whole batch | %.0f |\n", img_bb / t);
    }
    nc_cnn_work_set_chunk(w, batch < 8 ? 0 : 8);
    printf("\n");

    /* training: forward + loss + backward + SGD, BLAS path; and the
       reference forward + backward for scale */
    uint8_t *labels = malloc(n_in);
    float *d_out = malloc((size_t)net->n_outputs * sizeof(float));
    float *grads = malloc(net->n_params * sizeof(float));
    if (!labels || !d_out || !grads) {
        err = -ENOMEM;
    } else {
        for (uint32_t i = 0; i < n_in; i++)
            labels[i] = (uint8_t)(i % 10);
        printf("### training step (forward, loss, backward, SGD)\n\n");
        printf("| path | batch | images/s |\n|---|---:|---:|\n");
        const uint32_t tb[] = { 1, 32, batch };
        for (size_t i = 0; i < NC_ARRAY_LEN(tb) && !err; i++) {
            nc_cnn_work *tw = tb[i] == 1 ? w1 : w;
            if (tb[i] > batch || (i == 2 && batch == 32))
                continue;
            int passes = (int)((1024u * (uint32_t)o->reps + tb[i] - 1) / tb[i]);
            double t0 = bench_now();
            for (int p = 0; p < passes && !err; p++) {
                uint32_t first = (uint32_t)((size_t)p * tb[i] % (n_in - tb[i] + 1));
                err = nc_cnn_train_step(net, tw, in + (size_t)first * 841, labels + first,
                                        tb[i], 1e-4f, NULL);
            }
            double t = bench_now() - t0;
            if (!err)
                printf("| BLAS | %u | %.0f |\n", tb[i], (double)passes * tb[i] / t);
        }
        int passes = 20 * o->reps;
        double t0 = bench_now();
        for (int p = 0; p < passes && !err; p++) {
            const float *x = in + (size_t)p * 841;
            if ((err = nc_cnn_forward_ref(net, w1, x, 1, d_out)) ||
                (err = nc_cnn_loss(net, d_out, labels + p, 1, d_out, NULL, NULL)) ||
                (err = nc_cnn_backward_ref(net, w1, x, 1, d_out, grads)))
                break;
            err = nc_cnn_sgd(net, grads, 1e-4f);
        }
        double t = bench_now() - t0;
        if (!err)
            printf("| reference | 1 | %.0f |\n\n", passes / t);
    }
    free(labels);
    free(d_out);
    free(grads);
out:
    nc_cnn_work_free(w);
    nc_cnn_work_free(w1);
    nc_cnn_free(net);
    free(in);
    return err;
}

/* tests/gpu/test_deform.c — gpu/data/deform against core/data/deform, and the engine's
 * device-side training run (nc_gpu_cnn_train_indexed) against the same run
 * fed with images deformed on the CPU, and with soft targets (distillation)
 * against core's steps.
 *
 * Images are smooth blobs in [0, 1] (like digits: bilinear sampling turns a
 * tiny error in a sampling point into a tiny error in the value), sizes
 * 29x29, 28x28, 17x23 and 40x9, every parameter set of interest: MNIST's,
 * affine only, elastic only, none (an exact copy).  Tolerance: max |gpu -
 * cpu| <= 1e-4 per pixel (the GPU contracts the field sums to FMA and uses
 * its own cosf / sinf; the displacement then differs by ~1e-6 px).  Outputs
 * are poisoned first.  Skips (77) without a CUDA device. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cnn.h"
#include "cnn_engine_dev.h"
#include "deform.cuh"
#include "deform.h"
#include "device.h"
#include "test.h"
#include "gpu_test.h"

#define TOL 1e-4

/* A few Gaussian blobs of ink, clamped to [0, 1]. */
static void blobs(nc_test_rng *r, float *img, uint32_t w, uint32_t h)
{
    memset(img, 0, (size_t)w * h * sizeof(float));
    for (int b = 0; b < 4; b++) {
        double cx = nc_test_uniform(r) * w, cy = nc_test_uniform(r) * h;
        double s = 1.0 + 3.0 * nc_test_uniform(r);
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++) {
                double d2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
                float v = img[(size_t)y * w + x] + (float)exp(-d2 / (2 * s * s));
                img[(size_t)y * w + x] = v > 1.0f ? 1.0f : v;
            }
    }
}

static void test_size(const char *what, const nc_deform_params *p, uint32_t w, uint32_t h,
                      int exact)
{
    enum { N_SRC = 5, N = 37 };
    const size_t plane = (size_t)w * h;
    float *src = malloc(N_SRC * plane * sizeof(float));
    float *ref = malloc(N * plane * sizeof(float)), *got = malloc(N * plane * sizeof(float));
    uint32_t index[N];
    uint64_t state[N];
    nc_deform *cpu = NULL;
    if (!src || !ref || !got || nc_deform_new(p, w, h, &cpu)) {
        CHECK_MSG(0, "setup %s", what);
        goto done;
    }
    nc_test_rng rng = {0x5eedull * w + h};
    for (int i = 0; i < N_SRC; i++)
        blobs(&rng, src + i * plane, w, h);
    for (int i = 0; i < N; i++) {
        index[i] = (uint32_t)(nc_test_next(&rng) % N_SRC);
        state[i] = nc_test_next(&rng);
        nc_deform_rng r = {state[i]};
        CHECK_INT_EQ(nc_deform_apply(cpu, &r, src + index[i] * plane, ref + i * plane), 0);
    }
    for (size_t i = 0; i < N * plane; i++)
        got[i] = NAN;
    int err = nc_gpu_deform_run(p, w, h, 0, src, N_SRC, index, state, N, got);
    CHECK_MSG(err == 0, "%s %ux%u: %d (%s)", what, w, h, err, nc_gpu_last_error());
    double max_d = 0.0, moved = 0.0;
    size_t bad = 0;
    for (int i = 0; i < N; i++)
        for (size_t k = 0; k < plane; k++) {
            double g = got[i * plane + k], c = ref[i * plane + k];
            double d = isfinite(g) ? fabs(g - c) : INFINITY;
            if (d > max_d)
                max_d = d;
            bad += exact ? d != 0.0 : d > TOL;
            moved += fabs(c - src[index[i] * plane + k]);
        }
    CHECK_MSG(bad == 0, "%s %ux%u: %zu pixel(s) off, max |gpu - cpu| %.3g", what, w, h, bad,
              max_d);
    /* The deformation did something (or, for none, nothing). */
    if (exact)
        CHECK_MSG(moved == 0.0, "%s: none moved pixels", what);
    else
        CHECK_MSG(moved > 0.01 * N * plane, "%s: hardly moved (%.3g)", what, moved);
    fprintf(stderr, "%s %ux%u: %d images, max |gpu - cpu| %.3g\n", what, w, h, N, max_d);
done:
    nc_deform_free(cpu);
    free(src);
    free(ref);
    free(got);
}

/* The same run twice from the same params: images deformed on the CPU
 * (nc_gpu_cnn_train_batches) and on the device (nc_gpu_cnn_train_indexed). */
static void test_train_indexed(void)
{
    const char *arch = "1x29x29-20C4-MP2-40C5-MP3-150N-10N";
    enum { N_TRAIN = 50, N = 70, B = 16 };
    const nc_deform_params p = NC_DEFORM_MNIST;
    nc_cnn *a = NULL, *b = NULL;
    REQUIRE(nc_cnn_new(arch, &a) == 0);
    REQUIRE(nc_cnn_new(arch, &b) == 0);
    REQUIRE(nc_cnn_init_weights(a, 3) == 0);
    memcpy(b->params, a->params, a->n_params * sizeof(float));
    const size_t plane = a->n_inputs, P = a->n_params;
    float *train = malloc(N_TRAIN * plane * sizeof(float));
    float *in = malloc(N * plane * sizeof(float));
    uint8_t train_labels[N_TRAIN], labels[N];
    uint32_t index[N];
    uint64_t state[N];
    nc_deform *cpu = NULL;
    nc_gpu_cnn *ga = NULL, *gb = NULL;
    if (!train || !in || nc_deform_new(&p, 29, 29, &cpu) || nc_gpu_cnn_new(a, 0, B, &ga) ||
        nc_gpu_cnn_new(b, 0, B, &gb)) {
        CHECK_MSG(0, "setup: %s", nc_gpu_last_error());
        goto done;
    }
    nc_test_rng rng = {4242};
    for (int i = 0; i < N_TRAIN; i++) {
        blobs(&rng, train + i * plane, 29, 29);
        train_labels[i] = (uint8_t)(nc_test_next(&rng) % 10);
    }
    for (int i = 0; i < N; i++) {
        index[i] = (uint32_t)(nc_test_next(&rng) % N_TRAIN);
        state[i] = nc_test_next(&rng);
        labels[i] = train_labels[index[i]];
        nc_deform_rng r = {state[i]};
        CHECK_INT_EQ(nc_deform_apply(cpu, &r, train + index[i] * plane, in + i * plane), 0);
    }
    CHECK_INT_EQ(nc_gpu_cnn_train_indexed(gb, index, state, N, B, 0.01f, NULL, NULL), -EINVAL);
    CHECK_INT_EQ(nc_gpu_cnn_set_train_data(gb, train, train_labels, N_TRAIN, &p), 0);
    uint32_t bad_index[1] = {N_TRAIN};
    CHECK_INT_EQ(nc_gpu_cnn_train_indexed(gb, bad_index, state, 1, B, 0.01f, NULL, NULL),
                 -EINVAL);
    double la = -1, lb = -2;
    uint32_t ea = 0, eb = 1;
    CHECK_INT_EQ(nc_gpu_cnn_train_batches(ga, in, labels, N, B, 0.01f, &la, &ea), 0);
    CHECK_INT_EQ(nc_gpu_cnn_poison(gb), 0);
    int err = nc_gpu_cnn_train_indexed(gb, index, state, N, B, 0.01f, &lb, &eb);
    CHECK_MSG(err == 0, "train_indexed: %d (%s)", err, nc_gpu_last_error());
    CHECK_NEAR(lb, la, 0, TOL);
    CHECK_INT_EQ(eb, ea);
    CHECK_INT_EQ(nc_gpu_cnn_download(ga, a), 0);
    CHECK_INT_EQ(nc_gpu_cnn_download(gb, b), 0);
    double num = 0, den = 0;
    for (size_t i = 0; i < P; i++) {
        num += ((double)a->params[i] - b->params[i]) * ((double)a->params[i] - b->params[i]);
        den += (double)a->params[i] * a->params[i];
    }
    CHECK_MSG(sqrt(num / den) <= TOL, "params after the run: rel %.3g", sqrt(num / den));
    fprintf(stderr, "train_indexed: loss %.6f vs %.6f, errors %u / %u, params rel %.3g\n", lb,
            la, eb, ea, sqrt(num / den));
done:
    nc_gpu_cnn_free(ga);
    nc_gpu_cnn_free(gb);
    nc_deform_free(cpu);
    nc_cnn_free(a);
    nc_cnn_free(b);
    free(train);
    free(in);
}

/* Soft targets (nc_gpu_cnn_set_train_targets, for distillation): a device
 * run against core's steps on the same images (nc_cnn_loss_targets, BLAS
 * backward, SGD), and +1 / -1 targets against the labels, bit for bit. */
static void test_train_targets(void)
{
    const char *arch = "1x29x29-20C4-MP2-40C5-MP3-150N-10N";
    enum { N_TRAIN = 40, N = 50, B = 16, K = 10 };
    const nc_deform_params none = NC_DEFORM_NONE;
    nc_cnn *a = NULL, *b = NULL, *c = NULL;
    REQUIRE(nc_cnn_new(arch, &a) == 0 && nc_cnn_new(arch, &b) == 0 && nc_cnn_new(arch, &c) == 0);
    REQUIRE(nc_cnn_init_weights(a, 5) == 0);
    memcpy(b->params, a->params, a->n_params * sizeof(float));
    memcpy(c->params, a->params, a->n_params * sizeof(float));
    const size_t plane = a->n_inputs, P = a->n_params;
    float *train = malloc(N_TRAIN * plane * sizeof(float)), *in = malloc(B * plane * sizeof(float));
    float *targets = malloc(N_TRAIN * K * sizeof(float)), *onehot = malloc(N_TRAIN * K * sizeof(float));
    float *out = malloc(B * K * sizeof(float)), *d_out = malloc(B * K * sizeof(float));
    float *t = malloc(B * K * sizeof(float)), *grads = malloc(P * sizeof(float));
    uint8_t train_labels[N_TRAIN], labels[B];
    uint32_t index[N];
    uint64_t state[N];
    nc_cnn_work *w = NULL;
    nc_gpu_cnn *gb = NULL, *gc = NULL, *gd = NULL;
    if (!train || !in || !targets || !onehot || !out || !d_out || !t || !grads ||
        nc_cnn_work_new(a, B, &w) || nc_gpu_cnn_new(b, 0, B, &gb) ||
        nc_gpu_cnn_new(c, 0, B, &gc) || nc_gpu_cnn_new(c, 0, B, &gd)) {
        CHECK_MSG(0, "setup: %s", nc_gpu_last_error());
        goto done;
    }
    nc_test_rng rng = {777};
    for (int i = 0; i < N_TRAIN; i++) {
        blobs(&rng, train + i * plane, 29, 29);
        train_labels[i] = (uint8_t)(nc_test_next(&rng) % K);
        for (int k = 0; k < K; k++) {
            onehot[i * K + k] = k == train_labels[i] ? 1.0f : -1.0f;
            targets[i * K + k] = 0.6f * onehot[i * K + k] +
                                 0.4f * ((float)(nc_test_next(&rng) % 2001) / 1000.0f - 1.0f);
        }
    }
    for (int i = 0; i < N; i++) {
        index[i] = (uint32_t)(nc_test_next(&rng) % N_TRAIN);
        state[i] = nc_test_next(&rng);
    }
    CHECK_INT_EQ(nc_gpu_cnn_set_train_targets(gb, targets), -EINVAL);    /* no data yet */
    CHECK_INT_EQ(nc_gpu_cnn_set_train_data(gb, train, train_labels, N_TRAIN, &none), 0);
    float nan_t[N_TRAIN * K];
    memcpy(nan_t, targets, sizeof nan_t);
    nan_t[3] = NAN;
    CHECK_INT_EQ(nc_gpu_cnn_set_train_targets(gb, nan_t), -EINVAL);
    CHECK_INT_EQ(nc_gpu_cnn_set_train_targets(gb, targets), 0);
    /* soft targets are squared-error targets: no softmax beside them */
    CHECK_INT_EQ(nc_gpu_cnn_set_loss_softmax(gb, 3.0f), -ENOTSUP);
    CHECK_INT_EQ(nc_gpu_cnn_set_loss_softmax(gd, 3.0f), 0);
    CHECK_INT_EQ(nc_gpu_cnn_set_train_data(gd, train, train_labels, N_TRAIN, &none), 0);
    CHECK_INT_EQ(nc_gpu_cnn_set_train_targets(gd, targets), -ENOTSUP);
    CHECK_INT_EQ(nc_gpu_cnn_set_loss_softmax(gd, 0.0f), 0);
    double lb = -1;
    int err = nc_gpu_cnn_train_indexed(gb, index, state, N, B, 0.01f, &lb, NULL);
    CHECK_MSG(err == 0, "train_indexed with targets: %d (%s)", err, nc_gpu_last_error());
    /* core's steps over the same batches */
    double la = 0;
    for (int i = 0; i < N; i += B) {
        const int nb = N - i < B ? N - i : B;
        for (int j = 0; j < nb; j++) {
            memcpy(in + j * plane, train + index[i + j] * plane, plane * sizeof(float));
            memcpy(t + j * K, targets + index[i + j] * K, K * sizeof(float));
            labels[j] = train_labels[index[i + j]];
        }
        double l = 0;
        REQUIRE(nc_cnn_forward_blas(a, w, in, (uint32_t)nb, out) == 0);
        REQUIRE(nc_cnn_loss_targets(a, out, labels, t, (uint32_t)nb, d_out, &l, NULL) == 0);
        REQUIRE(nc_cnn_backward_blas(a, w, in, (uint32_t)nb, d_out, grads) == 0);
        REQUIRE(nc_cnn_sgd(a, grads, 0.01f) == 0);
        la += l;
    }
    CHECK_NEAR(lb, la, 0, TOL);
    CHECK_INT_EQ(nc_gpu_cnn_download(gb, b), 0);
    double num = 0, den = 0;
    for (size_t i = 0; i < P; i++) {
        num += ((double)a->params[i] - b->params[i]) * ((double)a->params[i] - b->params[i]);
        den += (double)a->params[i] * a->params[i];
    }
    CHECK_MSG(sqrt(num / den) <= TOL, "params after the run with targets: rel %.3g",
              sqrt(num / den));
    fprintf(stderr, "train_indexed with targets: loss %.6f vs core %.6f, params rel %.3g\n",
            lb, la, sqrt(num / den));
    /* +1 / -1 targets are the labels: the same run bit for bit (the direct
     * kernels, so that timing picks no other summation order) */
    CHECK_INT_EQ(nc_gpu_cnn_set_path(gc, NC_GPU_CNN_PATH_DIRECT), 0);
    CHECK_INT_EQ(nc_gpu_cnn_set_path(gd, NC_GPU_CNN_PATH_DIRECT), 0);
    CHECK_INT_EQ(nc_gpu_cnn_set_train_data(gc, train, train_labels, N_TRAIN, &none), 0);
    CHECK_INT_EQ(nc_gpu_cnn_set_train_data(gd, train, train_labels, N_TRAIN, &none), 0);
    CHECK_INT_EQ(nc_gpu_cnn_set_train_targets(gc, onehot), 0);
    CHECK_INT_EQ(nc_gpu_cnn_train_indexed(gc, index, state, N, B, 0.01f, NULL, NULL), 0);
    CHECK_INT_EQ(nc_gpu_cnn_train_indexed(gd, index, state, N, B, 0.01f, NULL, NULL), 0);
    CHECK_INT_EQ(nc_gpu_cnn_download(gc, c), 0);
    CHECK_INT_EQ(nc_gpu_cnn_download(gd, b), 0);
    CHECK(memcmp(c->params, b->params, P * sizeof(float)) == 0);
done:
    nc_gpu_cnn_free(gb);
    nc_gpu_cnn_free(gc);
    nc_gpu_cnn_free(gd);
    nc_cnn_work_free(w);
    nc_cnn_free(a);
    nc_cnn_free(b);
    nc_cnn_free(c);
    free(train);
    free(in);
    free(targets);
    free(onehot);
    free(out);
    free(d_out);
    free(t);
    free(grads);
}

int main(void)
{
    if (nc_test_gpu_count() <= 0)
        return NC_TEST_SKIP;
    const nc_deform_params mnist = NC_DEFORM_MNIST, none = NC_DEFORM_NONE;
    const nc_deform_params affine = {2.0f, 30.0f, 0.3f, 0.4f, 0.0f, 0.0f};
    const nc_deform_params elastic = {0.0f, 0.0f, 0.0f, 0.0f, 4.0f, 40.0f};
    test_size("mnist", &mnist, 29, 29, 0);
    test_size("mnist", &mnist, 28, 28, 0);
    test_size("mnist", &mnist, 17, 23, 0);
    test_size("affine", &affine, 40, 9, 0);
    test_size("elastic", &elastic, 17, 23, 0);
    test_size("none", &none, 29, 29, 1);
    /* a working set over a block's shared memory is refused, not run */
    nc_gpu_deform *big = NULL;
    CHECK_INT_EQ(nc_gpu_deform_new(&mnist, 200, 200, &big), -ERANGE);
    CHECK_INT_EQ(nc_gpu_deform_new(&mnist, 0, 29, &big), -EINVAL);
    test_train_indexed();
    test_train_targets();
    return nc_test_finish();
}

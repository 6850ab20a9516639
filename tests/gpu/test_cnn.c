/* tests/gpu/test_cnn.c — the GPU CNN engine against core/'s reference.
 *
 * For each net (the MNIST column, one with a random table, one with skipping
 * factors, rectangular kernels and partial tables, one with kernels smaller
 * than their step, one fully connected on the input) and awkward batch sizes:
 * every forward path's outputs against nc_cnn_forward_ref, then all
 * gradients of nc_gpu_cnn_backward against nc_cnn_backward_ref (on batches
 * without max-pooling near-ties: see TIE_GAP), a GPU training step against
 * nc_cnn_train_step, and a run of mini-batches (nc_gpu_cnn_train_batches)
 * against the same steps on the CPU; nets with rectified units and with
 * batch normalisation too (its batch statistics compared as well); runs
 * with momentum and Adam against core's (train_optim_on).
 * Tolerance: relative error 1e-4,
 * both as ||gpu - ref|| / ||ref|| and as max |gpu - ref| / max |ref|, per
 * output block and per layer's weights and biases.  Every device buffer and
 * the host outputs are poisoned with NaN before each run.  Skips (77)
 * without a CUDA device.
 *
 * Over 800 lines on purpose: the nets and reference comparisons at the top
 * serve every path, and one program opens the GPU once. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cnn.h"
#include "cnn_engine_dev.h"
#include "device.h"
#include "gpu_dev.h"
#include "test.h"
#include "gpu_test.h"

#define TOL 1e-4

static void fill(nc_test_rng *r, float *v, size_t count, double lo, double hi)
{
    for (size_t i = 0; i < count; i++)
        v[i] = (float)(lo + (hi - lo) * nc_test_uniform(r));
}

/* A training run's n random images in [-1, 1] and labels, from seed. */
static void random_run(unsigned long long seed, const nc_cnn *net, float *in, uint8_t *labels,
                       uint32_t n)
{
    nc_test_rng rng = {seed};
    fill(&rng, in, (size_t)n * net->n_inputs, -1.0, 1.0);
    for (uint32_t b = 0; b < n; b++)
        labels[b] = (uint8_t)(nc_test_next(&rng) % net->n_outputs);
}

static void poison(float *v, size_t count)
{
    for (size_t i = 0; i < count; i++)
        v[i] = NAN;
}

/* Compare one block; print the first few mismatches. */
static void compare_tol(const char *what, const float *got, const float *ref, size_t count,
                        double tol)
{
    double num = 0.0, den = 0.0, max_d = 0.0, max_r = 0.0;
    size_t nan = 0;
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(got[i])) {
            nan++;
            continue;
        }
        double d = fabs((double)got[i] - ref[i]);
        num += d * d;
        den += (double)ref[i] * ref[i];
        if (d > max_d)
            max_d = d;
        if (fabs(ref[i]) > max_r)
            max_r = fabs(ref[i]);
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    double rel_max = max_r > 0 ? max_d / max_r : max_d;
    int ok = nan == 0 && rel <= tol && rel_max <= tol;
    CHECK_MSG(ok, "%s: %zu non-finite, rel %.3g, max rel %.3g", what, nan, rel, rel_max);
    if (!ok) {
        int shown = 0;
        for (size_t i = 0; i < count && shown < 5; i++)
            if (!isfinite(got[i]) || fabs((double)got[i] - ref[i]) > tol * (max_r > 0 ? max_r : 1)) {
                fprintf(stderr, "  [%zu] gpu %.9g ref %.9g\n", i, got[i], ref[i]);
                shown++;
            }
    }
}

static void compare(const char *what, const float *got, const float *ref, size_t count)
{
    compare_tol(what, got, ref, count, TOL);
}

/* Max-pooling passes its delta to the largest input of each region.  Where
 * the two largest lie closer than TIE_GAP, the float GPU forward and core's
 * double-accumulated one may rank them differently and route the delta to
 * different pixels: a true answer either way, but not the same one.  Over
 * the ~10^6 regions of a batch of 1000 a few such near-ties occur (they held
 * gradients below a pooling layer to 2e-3 before this).  So a batch whose
 * gradients are compared is made free of them: every image with a near-tie
 * in the reference forward is redrawn, and the count is printed.  Activations
 * differ between the two forwards by ~1e-7 here, far below TIE_GAP. */
#define TIE_GAP 1e-5f

/* relu: the region pools rectified units, whose many exact zeros tie
 * harmlessly (an off unit passes no gradient, whichever gets the delta);
 * a largest unit within TIE_GAP above zero still counts, as it sits at the
 * rectifier's kink. */
static int region_has_tie(const float *x, uint32_t in_w, uint32_t kx, uint32_t ky, int relu)
{
    float a = -INFINITY, b = -INFINITY;     /* largest, second largest */
    for (uint32_t i = 0; i < ky; i++)
        for (uint32_t j = 0; j < kx; j++) {
            float v = x[(size_t)i * in_w + j];
            if (v > a) {
                b = a;
                a = v;
            } else if (v > b) {
                b = v;
            }
        }
    if (relu && a == 0.0f)
        return 0;
    return a - b < TIE_GAP;
}

static int image_has_tie(const nc_cnn *net, const nc_cnn_work *w, const float *in, uint32_t b)
{
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l], *P = &net->layers[l - 1];
        if (L->kind != NC_CNN_KIND_POOL)
            continue;
        const float *x = l == 1 ? in : nc_cnn_work_activations(w, l - 1, NULL);
        if (!x)
            return 1;
        x += (size_t)b * P->n_out;
        for (uint32_t m = 0; m < L->maps; m++)
            for (uint32_t oy = 0; oy < L->height; oy++)
                for (uint32_t ox = 0; ox < L->width; ox++)
                    if (region_has_tie(x + ((size_t)m * P->height + oy * L->kernel_y) * P->width +
                                           ox * L->kernel_x,
                                       P->width, L->kernel_x, L->kernel_y,
                                       P->act == NC_CNN_ACT_RELU))
                        return 1;
    }
    return 0;
}

/* Redraw images of in[n] until the reference forward has no near-tie;
 * leaves the reference outputs of the final batch in ref.  Returns the
 * number of redraws. */
static uint32_t redraw_near_ties(const nc_cnn *net, nc_cnn_work *w, nc_test_rng *rng, float *in,
                                 uint32_t n, float *ref)
{
    uint32_t redrawn = 0;
    for (int round = 0; round < 50; round++) {
        CHECK_INT_EQ(nc_cnn_forward_ref(net, w, in, n, ref), 0);
        uint32_t count = 0;
        for (uint32_t b = 0; b < n; b++)
            if (image_has_tie(net, w, in, b)) {
                fill(rng, in + (size_t)b * net->n_inputs, net->n_inputs, -1.0, 1.0);
                count++;
            }
        if (!count)
            return redrawn;
        redrawn += count;
    }
    CHECK_MSG(0, "near-ties did not go away in 50 rounds");
    return redrawn;
}

static void compare_grads_tol(const char *tag, const nc_cnn *net, const float *got,
                              const float *ref, double tol)
{
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        if (!L->weights)
            continue;
        char what[320];
        size_t w0 = (size_t)(L->weights - net->params), b0 = (size_t)(L->bias - net->params);
        snprintf(what, sizeof what, "%s layer %u weights", tag, l);
        compare_tol(what, got + w0, ref + w0, L->n_weights, tol);
        if (!L->norm) {
            snprintf(what, sizeof what, "%s layer %u biases", tag, l);
            compare_tol(what, got + b0, ref + b0, L->maps, tol);
            continue;
        }
        /* batch norm: the bias is subtracted again with the batch's mean, so
           its gradient is 0 up to rounding on both sides (noise against
           noise: held small, not compared); gamma and beta are compared;
           mean and var get exactly 0 */
        double gmax = 0.0;
        for (size_t i = 0; i < L->n_weights; i++)
            gmax = fmax(gmax, fabs(ref[w0 + i]));
        for (uint32_t m = 0; m < L->maps; m++)
            CHECK_MSG(fabs(got[b0 + m]) <= 1e-3 * gmax + 1e-6, "%s layer %u bias %u: %g",
                      tag, l, m, got[b0 + m]);
        const size_t g0 = (size_t)(L->gamma - net->params);
        snprintf(what, sizeof what, "%s layer %u gamma, beta", tag, l);
        compare_tol(what, got + g0, ref + g0, 2 * (size_t)L->maps, tol);
        for (uint32_t m = 0; m < 2 * L->maps; m++)
            CHECK(got[g0 + 2 * L->maps + m] == 0.0f);
    }
}

/* gamma and beta away from 1 and 0 (map 0's gamma negative), so that each is
 * seen in its own place. */
static void randomise_norm(nc_cnn *net, uint64_t seed)
{
    nc_test_rng r = {seed};
    for (uint32_t l = 1; l < net->n_layers; l++) {
        nc_cnn_layer *L = &net->layers[l];
        for (uint32_t m = 0; L->norm && m < L->maps; m++) {
            L->gamma[m] = (m ? 1.0f : -1.0f) * (float)(0.5 + nc_test_uniform(&r));
            L->beta[m] = (float)(nc_test_uniform(&r) - 0.5);
        }
    }
}

/* After forwards of the same batch: every normalised layer's batch
 * statistics on the device against core's. */
static void compare_norm_stats(const char *tag, const nc_cnn *net, const nc_cnn_work *w,
                               nc_gpu_cnn *g)
{
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        if (!L->norm)
            continue;
        float *m_ref = malloc(4 * (size_t)L->maps * sizeof(float));
        REQUIRE(m_ref);
        float *v_ref = m_ref + L->maps, *m_gpu = v_ref + L->maps, *v_gpu = m_gpu + L->maps;
        CHECK_INT_EQ(nc_cnn_work_norm_stats(w, l, m_ref, v_ref), 0);
        poison(m_gpu, 2 * (size_t)L->maps);
        CHECK_INT_EQ(nc_gpu_cnn_norm_stats(g, l, m_gpu, v_gpu), 0);
        char what[320];
        snprintf(what, sizeof what, "%s layer %u batch mean", tag, l);
        compare_tol(what, m_gpu, m_ref, L->maps, TOL);
        snprintf(what, sizeof what, "%s layer %u batch var", tag, l);
        compare_tol(what, v_gpu, v_ref, L->maps, TOL);
        free(m_ref);
    }
}

static void compare_grads(const char *tag, const nc_cnn *net, const float *got, const float *ref)
{
    compare_grads_tol(tag, net, got, ref, TOL);
}

static const char *path_name(nc_gpu_cnn_path p)
{
    static const char *const names[] = {"auto", "direct", "unrolled", "fused-small", "fused-big",
                                        "fused-deep", "deep-big"};
    return names[p];
}

static void test_net(const char *arch, const uint32_t *batches, size_t n_batches,
                     int with_backward_max)
{
    nc_cnn *net = NULL;
    REQUIRE(nc_cnn_new(arch, &net) == 0);
    REQUIRE(nc_cnn_init_uniform(net, 7, 0.15f) == 0);
    randomise_norm(net, 7);
    uint32_t max_b = 0;
    for (size_t i = 0; i < n_batches; i++)
        if (batches[i] > max_b)
            max_b = batches[i];
    nc_cnn_work *w = NULL;
    nc_gpu_cnn *g = NULL;
    float *in = malloc((size_t)max_b * net->n_inputs * sizeof(float));
    float *ref = malloc((size_t)max_b * net->n_outputs * sizeof(float));
    float *out = malloc((size_t)max_b * net->n_outputs * sizeof(float));
    float *d_out = malloc((size_t)max_b * net->n_outputs * sizeof(float));
    float *gref = malloc(net->n_params * sizeof(float));
    float *ggpu = malloc(net->n_params * sizeof(float));
    int err = nc_cnn_work_new(net, max_b, &w);
    CHECK_INT_EQ(err, 0);
    if (!err) {
        err = nc_gpu_cnn_new(net, 0, max_b, &g);
        CHECK_MSG(err == 0, "nc_gpu_cnn_new(%s): %d (%s)", arch, err, nc_gpu_last_error());
    }
    if (err || !in || !ref || !out || !d_out || !gref || !ggpu)
        goto done;
    fprintf(stderr, "%s: fused %s, fused deep %s, deep-big %s\n", arch,
            nc_gpu_cnn_fused_ok(g) ? "yes" : "no",
            nc_gpu_cnn_path_ok(g, NC_GPU_CNN_PATH_FUSED_DEEP) ? "yes" : "no",
            nc_gpu_cnn_path_ok(g, NC_GPU_CNN_PATH_DEEP_BIG) ? "yes" : "no");
    nc_test_rng rng = {0x9e3779b97f4a7c15ull ^ net->n_params};
    for (size_t bi = 0; bi < n_batches; bi++) {
        const uint32_t n = batches[bi];
        fill(&rng, in, (size_t)n * net->n_inputs, -1.0, 1.0);
        fill(&rng, d_out, (size_t)n * net->n_outputs, -1.0, 1.0);
        const int do_back = (int)n <= with_backward_max;
        CHECK_INT_EQ(nc_cnn_forward_ref(net, w, in, n, ref), 0);
        if (do_back) {
            uint32_t redrawn = redraw_near_ties(net, w, &rng, in, n, ref);
            if (redrawn)
                fprintf(stderr, "%s n=%u: %u image(s) redrawn for pooling near-ties\n", arch,
                        n, redrawn);
        }
        if (do_back)
            CHECK_INT_EQ(nc_cnn_backward_ref(net, w, in, n, d_out, gref), 0);
        for (int p = NC_GPU_CNN_PATH_AUTO; p <= NC_GPU_CNN_PATH_DEEP_BIG; p++) {
            err = nc_gpu_cnn_set_path(g, (nc_gpu_cnn_path)p);
            if (!nc_gpu_cnn_path_ok(g, (nc_gpu_cnn_path)p)) {
                CHECK_INT_EQ(err, -ENOTSUP);
                continue;
            }
            CHECK_INT_EQ(err, 0);
            char tag[200], how[120] = "";
            CHECK_INT_EQ(nc_gpu_cnn_poison(g), 0);
            poison(out, (size_t)n * net->n_outputs);
            err = nc_gpu_cnn_forward(g, in, n, out);
            CHECK_MSG(err == 0, "forward %s n=%u: %d (%s)", path_name(p), n, err,
                      nc_gpu_last_error());
            nc_gpu_cnn_describe(g, n, how, sizeof how);
            snprintf(tag, sizeof tag, "%s n=%u %s [%s]", arch, n, path_name(p), how);
            compare(tag, out, ref, (size_t)n * net->n_outputs);
            compare_norm_stats(tag, net, w, g);
            /* twice: a graph replay (n <= 16) or a second run gives the same */
            poison(out, (size_t)n * net->n_outputs);
            CHECK_INT_EQ(nc_gpu_cnn_forward(g, in, n, out), 0);
            compare(tag, out, ref, (size_t)n * net->n_outputs);
            const int layerwise = strncmp(how, "layers", 6) == 0;
            if (!do_back || (p != NC_GPU_CNN_PATH_DIRECT && p != NC_GPU_CNN_PATH_UNROLLED &&
                             !(p == NC_GPU_CNN_PATH_AUTO && layerwise)))
                continue;
            poison(ggpu, net->n_params);
            err = nc_gpu_cnn_backward(g, d_out, n, ggpu);
            CHECK_MSG(err == 0, "backward %s n=%u: %d (%s)", path_name(p), n, err,
                      nc_gpu_last_error());
            compare_grads(tag, net, ggpu, gref);
        }
        fprintf(stderr, "%s n=%u: checked\n", arch, n);
    }
    /* backward needs a layer-wise forward of the same n */
    if (nc_gpu_cnn_set_path(g, NC_GPU_CNN_PATH_DIRECT) == 0) {
        CHECK_INT_EQ(nc_gpu_cnn_forward(g, in, 1, out), 0);
        CHECK_INT_EQ(nc_gpu_cnn_backward(g, d_out, 2, ggpu), -EINVAL);
        CHECK_INT_EQ(nc_gpu_cnn_forward(g, in, max_b + 1, out), -EINVAL);
    }
done:
    nc_gpu_cnn_free(g);
    nc_cnn_work_free(w);
    nc_cnn_free(net);
    free(in);
    free(ref);
    free(out);
    free(d_out);
    free(gref);
    free(ggpu);
}

/* One training step on each side from the same params: the same loss and the
 * same change of every param (lr * gradient). */
static void test_train_step(const char *arch, uint32_t n)
{
    nc_cnn *cpu = NULL, *gpu = NULL;
    REQUIRE(nc_cnn_new(arch, &cpu) == 0);
    REQUIRE(nc_cnn_new(arch, &gpu) == 0);
    REQUIRE(nc_cnn_init_uniform(cpu, 11, 0.15f) == 0);
    randomise_norm(cpu, 11);
    memcpy(gpu->params, cpu->params, cpu->n_params * sizeof(float));
    float *before = malloc(cpu->n_params * sizeof(float));
    float *d_cpu = malloc(cpu->n_params * sizeof(float));
    float *d_gpu = malloc(cpu->n_params * sizeof(float));
    float *in = malloc((size_t)n * cpu->n_inputs * sizeof(float));
    uint8_t *labels = malloc(n);
    nc_cnn_work *w = NULL;
    nc_gpu_cnn *g = NULL;
    if (!before || !d_cpu || !d_gpu || !in || !labels || nc_cnn_work_new(cpu, n, &w) ||
        nc_gpu_cnn_new(gpu, 0, n, &g)) {
        CHECK_MSG(0, "setup of the training step: %s", nc_gpu_last_error());
        goto done;
    }
    random_run(12345, cpu, in, labels, n);
    memcpy(before, cpu->params, cpu->n_params * sizeof(float));
    const float lr = 0.01f;
    double loss_cpu = 0, loss_gpu = 0;
    CHECK_INT_EQ(nc_cnn_train_step(cpu, w, in, labels, n, lr, &loss_cpu), 0);
    CHECK_INT_EQ(nc_gpu_cnn_poison(g), 0);
    int err = nc_gpu_cnn_train_step(g, in, labels, n, lr, &loss_gpu);
    CHECK_MSG(err == 0, "train_step: %d (%s)", err, nc_gpu_last_error());
    CHECK_INT_EQ(nc_gpu_cnn_download(g, gpu), 0);
    CHECK_NEAR(loss_gpu, loss_cpu, 0, TOL);
    for (size_t i = 0; i < cpu->n_params; i++) {
        d_cpu[i] = cpu->params[i] - before[i];
        d_gpu[i] = gpu->params[i] - before[i];
    }
    char tag[160];
    snprintf(tag, sizeof tag, "%s train step n=%u", arch, n);
    compare_grads(tag, cpu, d_gpu, d_cpu);
    fprintf(stderr, "%s: train step n=%u, loss cpu %.6f gpu %.6f\n", arch, n, loss_cpu, loss_gpu);
done:
    nc_gpu_cnn_free(g);
    nc_cnn_work_free(w);
    nc_cnn_free(cpu);
    nc_cnn_free(gpu);
    free(before);
    free(d_cpu);
    free(d_gpu);
    free(in);
    free(labels);
}

/* A run of mini-batches on the device (nc_gpu_cnn_train_batches) against the
 * same steps one by one on the CPU: loss and errors summed over the steps,
 * and every param's total change after them.  n is not a multiple of the
 * batch, so the short last step is covered.  softmax > 0: both sides
 * minimise the softmax cross-entropy at that scale (nc_cnn_loss_softmax,
 * nc_gpu_cnn_set_loss_softmax) instead of the squared error. */
/* As test_train_batches, with the engine's kernels fixed to `path` (AUTO:
 * its own choice, which trains with the direct backward kernels). */
static void train_batches_on(const char *arch, uint32_t n, uint32_t batch, float softmax,
                             nc_gpu_cnn_path path)
{
    nc_cnn *cpu = NULL, *gpu = NULL;
    REQUIRE(nc_cnn_new(arch, &cpu) == 0);
    REQUIRE(nc_cnn_new(arch, &gpu) == 0);
    REQUIRE(nc_cnn_init_uniform(cpu, 13, 0.15f) == 0);
    randomise_norm(cpu, 13);
    memcpy(gpu->params, cpu->params, cpu->n_params * sizeof(float));
    const size_t P = cpu->n_params;
    float *before = malloc(P * sizeof(float)), *grads = malloc(P * sizeof(float));
    float *d_cpu = malloc(P * sizeof(float)), *d_gpu = malloc(P * sizeof(float));
    float *in = malloc((size_t)n * cpu->n_inputs * sizeof(float));
    float *out = malloc((size_t)batch * cpu->n_outputs * sizeof(float));
    float *d_out = malloc((size_t)batch * cpu->n_outputs * sizeof(float));
    uint8_t *labels = malloc(n);
    nc_cnn_work *w = NULL;
    nc_gpu_cnn *g = NULL;
    if (!before || !grads || !d_cpu || !d_gpu || !in || !out || !d_out || !labels ||
        nc_cnn_work_new(cpu, batch, &w) || nc_gpu_cnn_new(gpu, 0, batch, &g)) {
        CHECK_MSG(0, "setup of the training run: %s", nc_gpu_last_error());
        goto done;
    }
    if (path != NC_GPU_CNN_PATH_AUTO && nc_gpu_cnn_set_path(g, path) != 0) {
        CHECK_MSG(0, "%s: path %s refused", arch, path_name(path));
        goto done;
    }
    random_run(777, cpu, in, labels, n);
    memcpy(before, cpu->params, P * sizeof(float));
    const float lr = 0.005f;
    double loss_cpu = 0.0, loss_gpu = -1.0;
    uint32_t err_cpu = 0, err_gpu = UINT32_MAX;
    for (uint32_t i = 0; i < n; i += batch) {
        const uint32_t nb = n - i < batch ? n - i : batch;
        const float *x = in + (size_t)i * cpu->n_inputs;
        double l = 0.0;
        uint32_t e = 0;
        CHECK_INT_EQ(nc_cnn_forward_ref(cpu, w, x, nb, out), 0);
        if (softmax > 0.0f)
            CHECK_INT_EQ(nc_cnn_loss_softmax(cpu, out, labels + i, nb, softmax, d_out, &l, &e), 0);
        else
            CHECK_INT_EQ(nc_cnn_loss(cpu, out, labels + i, nb, d_out, &l, &e), 0);
        CHECK_INT_EQ(nc_cnn_backward_ref(cpu, w, x, nb, d_out, grads), 0);
        CHECK_INT_EQ(nc_cnn_sgd(cpu, grads, lr), 0);
        loss_cpu += l;
        err_cpu += e;
    }
    CHECK_INT_EQ(nc_gpu_cnn_train_batches(g, in, labels, n, batch + 1, lr, NULL, NULL), -EINVAL);
    CHECK_INT_EQ(nc_gpu_cnn_set_loss_softmax(g, -1.0f), -EINVAL);
    CHECK_INT_EQ(nc_gpu_cnn_set_loss_softmax(g, NAN), -EINVAL);
    CHECK_INT_EQ(nc_gpu_cnn_set_loss_softmax(g, softmax), 0);
    CHECK_INT_EQ(nc_gpu_cnn_poison(g), 0);
    int err = nc_gpu_cnn_train_batches(g, in, labels, n, batch, lr, &loss_gpu, &err_gpu);
    CHECK_MSG(err == 0, "train_batches: %d (%s)", err, nc_gpu_last_error());
    CHECK_INT_EQ(nc_gpu_cnn_download(g, gpu), 0);
    CHECK_NEAR(loss_gpu, loss_cpu, 0, TOL);
    CHECK_INT_EQ(err_gpu, err_cpu);
    for (size_t i = 0; i < P; i++) {
        d_cpu[i] = cpu->params[i] - before[i];
        d_gpu[i] = gpu->params[i] - before[i];
    }
    char tag[160];
    snprintf(tag, sizeof tag, "%s train batches n=%u batch %u softmax %g path %s", arch, n,
             batch, (double)softmax, path_name(path));
    /* Rectified units: a unit within rounding of 0 may be on for one side and
       off for the other, and over several steps that moves the weights below
       it by ~1e-4 relative (1.5e-4 measured on the deep column, in one run of
       two: which kernels the tuner picks changes the float sums).  The tanh
       has no such kink and keeps TOL. */
    int relu = 0;
    for (uint32_t l = 1; l < cpu->n_layers; l++)
        relu |= cpu->layers[l].act == NC_CNN_ACT_RELU;
    compare_grads_tol(tag, cpu, d_gpu, d_cpu, relu ? 1e-3 : TOL);
    fprintf(stderr, "%s: %u steps of <= %u, softmax %g, loss cpu %.6f gpu %.6f, errors %u / %u\n",
            arch, (n + batch - 1) / batch, batch, (double)softmax, loss_cpu, loss_gpu, err_cpu,
            err_gpu);
done:
    nc_gpu_cnn_free(g);
    nc_cnn_work_free(w);
    nc_cnn_free(cpu);
    nc_cnn_free(gpu);
    free(before);
    free(grads);
    free(d_cpu);
    free(d_gpu);
    free(in);
    free(out);
    free(d_out);
    free(labels);
}

static void test_train_batches(const char *arch, uint32_t n, uint32_t batch, float softmax)
{
    train_batches_on(arch, n, batch, softmax, NC_GPU_CNN_PATH_AUTO);
}

/* The optimisers of nc_gpu_cnn_set_momentum / _set_adam against core's
 * nc_cnn_sgd_momentum / nc_cnn_adam: a run of n images in mini-batches on
 * each side (core's reference passes), the device's run cut in two after
 * `split` images with its state read back and set again in between (the
 * trainer's checkpoint round trip).  Compared: every param's total change
 * (TOL, as the other runs), the velocity or both moments per layer (TOL;
 * STATE_TOL_UNROLLED on the unrolled path), and Adam's step count exactly;
 * the state of every kernel a table cuts is exactly 0 on both sides and its
 * params unchanged.  The same run with
 * plain SGD on the CPU must differ from the optimiser's by far more than
 * TOL, so that a device step that fell back to SGD fails the comparison.
 * Adam's eps is 1e-3 here, not the trainer's 1e-8: a param whose gradient
 * is within rounding of 0 moves by about +-lr at eps 1e-8, one way on the
 * CPU and possibly the other way on the GPU. */
enum { OPT_MOMENTUM, OPT_ADAM };

#define OPT_MOM 0.9f
#define OPT_B1 0.9f
#define OPT_B2 0.999f
#define OPT_EPS 1e-3f
#define STATE_TOL_UNROLLED 1e-3   /* train_optim_on's state on the unrolled path */

/* Relative difference of two params' changes, ||a - b|| / ||b||. */
static double rel_diff(const float *a, const float *b, size_t count)
{
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < count; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* Every entry of state at a kernel layer l's table cuts is exactly 0 (and
 * counted into *cut). */
static void check_cut_zero(const char *tag, const nc_cnn *net, const float *state,
                           const char *what, size_t *cut)
{
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        if (L->kind != NC_CNN_KIND_CONV)
            continue;
        const uint32_t in_maps = net->layers[l - 1].maps;
        const size_t kk = (size_t)L->kernel_x * L->kernel_y;
        const size_t w0 = (size_t)(L->weights - net->params);
        size_t bad = 0;
        for (uint32_t m = 0; m < L->maps; m++)
            for (uint32_t c = 0; c < in_maps; c++)
                if (!L->table[(size_t)m * in_maps + c])
                    for (size_t k = 0; k < kk; k++) {
                        bad += state[w0 + ((size_t)m * in_maps + c) * kk + k] != 0.0f;
                        *cut += 1;
                    }
        CHECK_MSG(bad == 0, "%s: %s of layer %u: %zu entries of cut kernels not 0", tag, what,
                  l, bad);
    }
}

static void train_optim_on(const char *arch, uint32_t n, uint32_t batch, uint32_t split,
                           int opt, nc_gpu_cnn_path path)
{
    nc_cnn *cpu = NULL, *gpu = NULL, *sgd = NULL;
    REQUIRE(nc_cnn_new(arch, &cpu) == 0);
    REQUIRE(nc_cnn_new(arch, &gpu) == 0);
    REQUIRE(nc_cnn_new(arch, &sgd) == 0);
    REQUIRE(nc_cnn_init_uniform(cpu, 17, 0.15f) == 0);
    memcpy(gpu->params, cpu->params, cpu->n_params * sizeof(float));
    memcpy(sgd->params, cpu->params, cpu->n_params * sizeof(float));
    const size_t P = cpu->n_params;
    float *before = malloc(P * sizeof(float)), *grads = malloc(P * sizeof(float));
    float *d_cpu = malloc(P * sizeof(float)), *d_gpu = malloc(P * sizeof(float));
    float *d_sgd = malloc(P * sizeof(float));
    float *s_cpu = calloc(2 * P, sizeof(float)), *s_gpu = malloc(2 * P * sizeof(float));
    float *in = malloc((size_t)n * cpu->n_inputs * sizeof(float));
    float *out = malloc((size_t)batch * cpu->n_outputs * sizeof(float));
    float *d_out = malloc((size_t)batch * cpu->n_outputs * sizeof(float));
    uint8_t *labels = malloc(n);
    nc_cnn_work *w = NULL;
    nc_gpu_cnn *g = NULL;
    const char *name = opt == OPT_ADAM ? "adam" : "momentum";
    char tag[200];
    snprintf(tag, sizeof tag, "%s %s n=%u batch %u path %s", arch, name, n, batch,
             path_name(path));
    if (!before || !grads || !d_cpu || !d_gpu || !d_sgd || !s_cpu || !s_gpu || !in || !out ||
        !d_out || !labels || nc_cnn_work_new(cpu, batch, &w) ||
        nc_gpu_cnn_new(gpu, 0, batch, &g) || nc_gpu_cnn_set_path(g, path) != 0) {
        CHECK_MSG(0, "setup of %s: %s", tag, nc_gpu_last_error());
        goto done;
    }
    random_run(4711, cpu, in, labels, n);
    memcpy(before, cpu->params, P * sizeof(float));
    const float lr = opt == OPT_ADAM ? 1e-3f : 0.002f;
    float *m_cpu = s_cpu, *v_cpu = s_cpu + P, *m_gpu = s_gpu, *v_gpu = s_gpu + P;
    uint64_t step_cpu = 0, step_gpu = UINT64_MAX;
    /* core: the optimiser's run and plain SGD's from the same params */
    for (uint32_t i = 0; i < n; i += batch) {
        const uint32_t nb = n - i < batch ? n - i : batch;
        const float *x = in + (size_t)i * cpu->n_inputs;
        for (int k = 0; k < 2; k++) {
            nc_cnn *net = k ? sgd : cpu;
            CHECK_INT_EQ(nc_cnn_forward_ref(net, w, x, nb, out), 0);
            CHECK_INT_EQ(nc_cnn_loss(net, out, labels + i, nb, d_out, NULL, NULL), 0);
            CHECK_INT_EQ(nc_cnn_backward_ref(net, w, x, nb, d_out, grads), 0);
            if (k)
                CHECK_INT_EQ(nc_cnn_sgd(sgd, grads, lr), 0);
            else if (opt == OPT_ADAM)
                CHECK_INT_EQ(nc_cnn_adam(cpu, grads, m_cpu, v_cpu, ++step_cpu, lr, OPT_B1,
                                         OPT_B2, OPT_EPS), 0);
            else
                CHECK_INT_EQ(nc_cnn_sgd_momentum(cpu, grads, m_cpu, lr, OPT_MOM), 0);
        }
    }
    /* the device: refusals first, then the run in two parts */
    CHECK_INT_EQ(nc_gpu_cnn_get_velocity(g, m_gpu), -EINVAL);       /* none set */
    CHECK_INT_EQ(nc_gpu_cnn_get_adam(g, m_gpu, v_gpu, &step_gpu), -EINVAL);
    CHECK_INT_EQ(nc_gpu_cnn_set_momentum(g, 1.0f, NULL), -EINVAL);
    CHECK_INT_EQ(nc_gpu_cnn_set_adam(g, OPT_B1, OPT_B2, 0.0f, NULL, NULL, 0), -EINVAL);
    CHECK_INT_EQ(nc_gpu_cnn_set_adam(g, OPT_B1, OPT_B2, OPT_EPS, m_gpu, NULL, 0), -EINVAL);
    int err = opt == OPT_ADAM ? nc_gpu_cnn_set_adam(g, OPT_B1, OPT_B2, OPT_EPS, NULL, NULL, 0)
                              : nc_gpu_cnn_set_momentum(g, OPT_MOM, NULL);
    CHECK_MSG(err == 0, "%s: set: %d (%s)", tag, err, nc_gpu_last_error());
    CHECK_INT_EQ(nc_gpu_cnn_poison(g), 0);
    err = nc_gpu_cnn_train_batches(g, in, labels, split, batch, lr, NULL, NULL);
    CHECK_MSG(err == 0, "%s: first part: %d (%s)", tag, err, nc_gpu_last_error());
    poison(s_gpu, 2 * P);
    if (opt == OPT_ADAM) {
        CHECK_INT_EQ(nc_gpu_cnn_get_velocity(g, m_gpu), -EINVAL);   /* not the one set */
        CHECK_INT_EQ(nc_gpu_cnn_get_adam(g, m_gpu, v_gpu, &step_gpu), 0);
        CHECK(step_gpu == (split + batch - 1) / batch);
        CHECK_INT_EQ(nc_gpu_cnn_set_adam(g, OPT_B1, OPT_B2, OPT_EPS, m_gpu, v_gpu, step_gpu), 0);
    } else {
        CHECK_INT_EQ(nc_gpu_cnn_get_velocity(g, m_gpu), 0);
        CHECK_INT_EQ(nc_gpu_cnn_set_momentum(g, OPT_MOM, m_gpu), 0);
    }
    err = nc_gpu_cnn_train_batches(g, in + (size_t)split * cpu->n_inputs, labels + split,
                                   n - split, batch, lr, NULL, NULL);
    CHECK_MSG(err == 0, "%s: second part: %d (%s)", tag, err, nc_gpu_last_error());
    poison(s_gpu, 2 * P);
    if (opt == OPT_ADAM)
        CHECK_INT_EQ(nc_gpu_cnn_get_adam(g, m_gpu, v_gpu, &step_gpu), 0);
    else
        CHECK_INT_EQ(nc_gpu_cnn_get_velocity(g, m_gpu), 0);
    CHECK_INT_EQ(nc_gpu_cnn_download(g, gpu), 0);
    for (size_t i = 0; i < P; i++) {
        d_cpu[i] = cpu->params[i] - before[i];
        d_gpu[i] = gpu->params[i] - before[i];
        d_sgd[i] = sgd->params[i] - before[i];
    }
    char what[260];
    snprintf(what, sizeof what, "%s params", tag);
    compare_grads(what, cpu, d_gpu, d_cpu);
    /* The state holds the last steps' raw gradients (not scaled by the rate
       nor summed over the whole run as the param change is), and the
       unrolled path sums the weight gradients in cuBLAS's order: after 5
       steps its velocity was 2.4e-4 (max rel) from core's on an H100, its
       norm 8.6e-5.  The direct path keeps TOL. */
    const double state_tol = path == NC_GPU_CNN_PATH_UNROLLED ? STATE_TOL_UNROLLED : TOL;
    snprintf(what, sizeof what, "%s %s", tag, opt == OPT_ADAM ? "m" : "velocity");
    compare_grads_tol(what, cpu, m_gpu, m_cpu, state_tol);
    if (opt == OPT_ADAM) {
        snprintf(what, sizeof what, "%s v", tag);
        compare_grads_tol(what, cpu, v_gpu, v_cpu, state_tol);
        CHECK_MSG(step_gpu == step_cpu, "%s: %llu steps on the GPU, %llu on the CPU", tag,
                  (unsigned long long)step_gpu, (unsigned long long)step_cpu);
    }
    /* cut kernels: params unchanged (0), state 0, on both sides */
    size_t cut = 0;
    check_cut_zero(tag, cpu, d_gpu, "GPU param change", &cut);
    check_cut_zero(tag, cpu, gpu->params, "GPU params", &cut);
    check_cut_zero(tag, cpu, m_gpu, "GPU state", &cut);
    check_cut_zero(tag, cpu, m_cpu, "CPU state", &cut);
    if (opt == OPT_ADAM) {
        check_cut_zero(tag, cpu, v_gpu, "GPU v", &cut);
        check_cut_zero(tag, cpu, v_cpu, "CPU v", &cut);
    }
    /* the optimiser made a difference the comparison above can see */
    const double apart = rel_diff(d_sgd, d_cpu, P);
    CHECK_MSG(apart > 100 * TOL, "%s: plain SGD's run is only %.3g from the optimiser's", tag,
              apart);
    fprintf(stderr, "%s: %u steps, %zu cut entries, plain SGD %.3g apart\n", tag,
            (n + batch - 1) / batch, cut, apart);
done:
    nc_gpu_cnn_free(g);
    nc_cnn_work_free(w);
    nc_cnn_free(cpu);
    nc_cnn_free(gpu);
    nc_cnn_free(sgd);
    free(before);
    free(grads);
    free(d_cpu);
    free(d_gpu);
    free(d_sgd);
    free(s_cpu);
    free(s_gpu);
    free(in);
    free(out);
    free(d_out);
    free(labels);
}

/* A state given with entries at cut kernels comes back with those 0 and the
 * rest as given. */
static void test_optim_cut_state(void)
{
    const char *arch = "2x23x21-6C3x5S1x2R50-MP2x1-5C2x3R60:7-13N-4N";
    nc_cnn *net = NULL;
    nc_gpu_cnn *g = NULL;
    REQUIRE(nc_cnn_new(arch, &net) == 0);
    const size_t P = net->n_params;
    float *ones = malloc(P * sizeof(float)), *got = malloc(2 * P * sizeof(float));
    uint64_t step = 0;
    if (!ones || !got || nc_gpu_cnn_new(net, 0, 4, &g)) {
        CHECK_MSG(0, "setup: %s", nc_gpu_last_error());
        goto done;
    }
    for (size_t i = 0; i < P; i++)
        ones[i] = 1.0f;
    for (int k = 0; k < 2; k++) {
        poison(got, 2 * P);
        if (k) {
            CHECK_INT_EQ(nc_gpu_cnn_set_adam(g, OPT_B1, OPT_B2, OPT_EPS, ones, ones, 5), 0);
            CHECK_INT_EQ(nc_gpu_cnn_get_adam(g, got, got + P, &step), 0);
            CHECK(step == 5);
        } else {
            CHECK_INT_EQ(nc_gpu_cnn_set_momentum(g, OPT_MOM, ones), 0);
            CHECK_INT_EQ(nc_gpu_cnn_get_velocity(g, got), 0);
        }
        size_t cut = 0, kept = 0;
        for (int j = 0; j <= k; j++)
            check_cut_zero(arch, net, got + j * P, k ? "Adam's state" : "velocity", &cut);
        for (size_t i = 0; i < (k + 1) * P; i++)
            kept += got[i] == 1.0f;
        CHECK_MSG(cut > 0 && kept + cut == (k + 1) * P, "%s: %zu cut, %zu kept of %zu", arch,
                  cut, kept, (k + 1) * P);
    }
done:
    nc_gpu_cnn_free(g);
    nc_cnn_free(net);
    free(ones);
    free(got);
}

/* nc_gpu_cnn_forward_start / _finish: three engines started before any is
 * waited for give nc_gpu_cnn_forward's outputs bit for bit, at a graph size
 * and a staged one; an engine with a forward in flight refuses other work. */
static void test_start_finish(void)
{
    static const char *const archs[3] = {"1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-150N-10N",
                                         "1x29x29-20C4-MP2-40C5-MP3-150N-10N",
                                         "1x29x29-20C4-MP2-40C5R50:3-MP3-150N-10N"};
    enum { N = 40 };
    nc_cnn *net[3] = {NULL, NULL, NULL};
    nc_gpu_cnn *g[3] = {NULL, NULL, NULL};
    float *in = malloc((size_t)N * 841 * sizeof(float));
    float *want = malloc((size_t)3 * N * 10 * sizeof(float));
    float *got = malloc((size_t)3 * N * 10 * sizeof(float));
    int ok = in && want && got;
    for (int i = 0; i < 3 && ok; i++)
        ok = nc_cnn_new(archs[i], &net[i]) == 0 && nc_cnn_init_uniform(net[i], 30 + i, 0.15f) == 0 &&
             nc_gpu_cnn_new(net[i], 0, N, &g[i]) == 0;
    CHECK_MSG(ok, "setup of three engines: %s", nc_gpu_last_error());
    if (ok) {
        nc_test_rng rng = {4242};
        fill(&rng, in, (size_t)N * 841, -1.0, 1.0);
        CHECK_INT_EQ(nc_gpu_cnn_forward_finish(g[0], got), -EINVAL);     /* nothing started */
        for (uint32_t n = 3; n <= N; n += N - 3) {                          /* 3 (graph), 40 */
            for (int i = 0; i < 3; i++)
                CHECK_INT_EQ(nc_gpu_cnn_forward(g[i], in, n, want + (size_t)i * N * 10), 0);
            for (int i = 0; i < 3; i++)
                CHECK_INT_EQ(nc_gpu_cnn_forward_start(g[i], in, n), 0);
            CHECK_INT_EQ(nc_gpu_cnn_forward_start(g[0], in, n), -EBUSY);
            CHECK_INT_EQ(nc_gpu_cnn_forward(g[1], in, n, got), -EBUSY);
            CHECK_INT_EQ(nc_gpu_cnn_upload(g[2], net[2]), -EBUSY);
            CHECK_INT_EQ(nc_gpu_cnn_set_path(g[2], NC_GPU_CNN_PATH_DIRECT), -EBUSY);
            for (int i = 0; i < 3; i++) {
                poison(got + (size_t)i * N * 10, (size_t)n * 10);
                CHECK_INT_EQ(nc_gpu_cnn_forward_finish(g[i], got + (size_t)i * N * 10), 0);
                CHECK_MSG(memcmp(got + (size_t)i * N * 10, want + (size_t)i * N * 10,
                                 (size_t)n * 10 * sizeof(float)) == 0,
                          "%s n=%u: started and finished differs from forward", archs[i], n);
            }
            CHECK_INT_EQ(nc_gpu_cnn_forward_finish(g[0], got), -EINVAL);  /* already finished */
            /* a finish that drops the result leaves the engine free */
            CHECK_INT_EQ(nc_gpu_cnn_forward_start(g[0], in, n), 0);
            CHECK_INT_EQ(nc_gpu_cnn_forward_finish(g[0], NULL), 0);
            CHECK_INT_EQ(nc_gpu_cnn_forward(g[0], in, n, got), 0);
        }
    }
    for (int i = 0; i < 3; i++) {
        nc_gpu_cnn_free(g[i]);
        nc_cnn_free(net[i]);
    }
    free(in);
    free(want);
    free(got);
}

/* That g offers path exactly when want says so, and set_path agrees. */
static void check_path(nc_gpu_cnn *g, const char *arch, nc_gpu_cnn_path path, int want)
{
    CHECK_MSG(nc_gpu_cnn_path_ok(g, path) == want, "%s: %s path %s expected", arch,
              path_name(path), want ? "" : "not");
    CHECK_INT_EQ(nc_gpu_cnn_set_path(g, path), want ? 0 : -ENOTSUP);
}

/* Which nets the deep column's fused path takes: exactly its layer shapes,
 * with any top of 1..1024 units a layer; and which its persistent conv1..pool2
 * kernel (deep-big) takes: any net that starts with those four layers, tanh
 * and unnormalised, whatever follows (where the device has its 213 KB of
 * shared memory a block: every device the tests run on). */
static void test_deep_match(void)
{
    static const struct { const char *arch; int ok, big; } cases[] = {
        {"1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-150N-10N", 1, 1},
        {"1x29x29-20C4-MP2-60C4R50:5-MP2-100C3R30-MP3-1000N-7N", 1, 1},
        {"1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-1025N-10N", 0, 1},
        {"1x29x29-20C4-MP2-60C4-MP2-101C3-MP3-150N-10N", 0, 1},
        {"1x29x29-20C4-MP2-40C5-MP3-150N-10N", 0, 0},
        {"1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-150N-50N-10N", 0, 1},
        {"1x29x29W14-20C4-MP2-60C4-MP2-100C3-MP3-150N-10N", 1, 1},   /* W acts before the net */
        {"1x29x29-20C4-MP2-60C4-MP2-150N-10N", 0, 1},                /* no conv3 */
        {"1x29x29-20C4-MP2-60C5-MP3-150N-10N", 0, 0},
        /* the fused kernels compute the seed's tanh only */
        {"1x29x29-20C4relu-MP2-60C4-MP2-100C3-MP3-150N-10N", 0, 0},
        {"1x29x29-20C4-MP2-60C4relu-MP2-100C3-MP3-150N-10N", 0, 0},
        {"1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-150Nrelu-10N", 0, 1},
        /* nor do they normalise */
        {"1x29x29-20C4-MP2-60C4bn-MP2-100C3-MP3-150N-10N", 0, 0},
        {"1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-150N-10Nbn", 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        nc_cnn *net = NULL;
        nc_gpu_cnn *g = NULL;
        REQUIRE(nc_cnn_new(cases[i].arch, &net) == 0);
        int err = nc_gpu_cnn_new(net, 0, 4, &g);
        CHECK_MSG(err == 0, "nc_gpu_cnn_new(%s): %d", cases[i].arch, err);
        if (!err) {
            check_path(g, cases[i].arch, NC_GPU_CNN_PATH_FUSED_DEEP, cases[i].ok);
            check_path(g, cases[i].arch, NC_GPU_CNN_PATH_DEEP_BIG, cases[i].big);
        }
        nc_gpu_cnn_free(g);
        nc_cnn_free(net);
    }
    /* nor does the shallow column's */
    nc_cnn *net = NULL;
    nc_gpu_cnn *g = NULL;
    REQUIRE(nc_cnn_new("1x29x29-20C4-MP2-40C5relu-MP3-150N-10N", &net) == 0);
    CHECK_INT_EQ(nc_gpu_cnn_new(net, 0, 4, &g), 0);
    if (g) {
        CHECK(!nc_gpu_cnn_fused_ok(g));
        CHECK_INT_EQ(nc_gpu_cnn_set_path(g, NC_GPU_CNN_PATH_FUSED_SMALL), -ENOTSUP);
    }
    nc_gpu_cnn_free(g);
    nc_cnn_free(net);
}

int main(void)
{
    const int count = nc_test_gpu_count();
    if (count <= 0)
        return NC_TEST_SKIP;
    nc_cnn *net = NULL;
    nc_gpu_cnn *g = NULL;
    /* seed 000's column has no fused path until gpu/dev/ hands the engine
     * its kernels (the daemon never does); every test below runs with them */
    CHECK_INT_EQ(nc_cnn_new("1x29x29-20C4-MP2-40C5-MP3-150N-10N", &net), 0);
    if (net) {
        CHECK_INT_EQ(nc_gpu_cnn_new(net, 0, 4, &g), 0);
        CHECK(g && !nc_gpu_cnn_fused_ok(g));
        CHECK(g && nc_gpu_cnn_set_path(g, NC_GPU_CNN_PATH_FUSED_BIG) == -ENOTSUP);
        nc_gpu_cnn_free(g);
        g = NULL;
        nc_cnn_free(net);
        net = NULL;
    }
    nc_gpu_dev_install();
    if (nc_cnn_new("1x8x8-3N-2N", &net) == 0) {
        CHECK_INT_EQ(nc_gpu_cnn_new(net, count, 4, &g), -ENODEV);
        CHECK_INT_EQ(nc_gpu_cnn_new(net, 0, 0, &g), -EINVAL);
        nc_cnn_free(net);
    }

    static const uint32_t column_b[] = {1, 3, 31, 33, 1000};
    static const uint32_t small_b[] = {1, 3, 31, 33, 65};
    test_net("1x29x29-20C4-MP2-40C5-MP3-150N-10N", column_b, 5, 1000);
    test_net("1x29x29-20C4-MP2-40C5R50:3-MP3-150N-10N", small_b, 5, 65);
    /* skipping factors instead of pooling, gradients at batch 1000 */
    static const uint32_t skip_b[] = {1, 33, 1000};
    test_net("1x29x29-20C5S1-40C5S1-150N-10N", skip_b, 3, 1000);
    /* skipping factors 1x2, rectangular kernels, partial tables, pooling 2x1 */
    test_net("2x23x21-6C3x5S1x2R50-MP2x1-5C2x3R60:7-13N-4N", small_b, 5, 65);
    /* kernels smaller than their step: pixels nobody reads get delta 0 */
    test_net("1x17x17-4C2S2-3C3-MP2x1-7N-3N", small_b, 5, 65);
    /* fully connected straight on the input */
    test_net("3x5x4-6N-2N", small_b, 5, 65);
    /* the deep column (its fused paths), also with cut tables and other tops;
       then one that differs from it in a single layer and must not match.
       2,117 images: more groups of 8 than any device has multiprocessors, so
       deep-big's persistent blocks take several each, the last one short */
    static const uint32_t deep_b[] = {1, 3, 31, 33, 1000, 2117};
    test_net("1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-150N-10N", deep_b, 6, 33);
    test_net("1x29x29-20C4-MP2-60C4R50:5-MP2-100C3R30-MP3-1000N-7N", small_b, 5, 0);
    test_net("1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-1N-1024N", small_b, 5, 0);
    /* rectified units (layer-wise paths only), the deep column and an awkward
       net with a rectified output.  Gradients up to batch 33 only: every
       rectified unit is a kink, and among the ~5 million units of a batch
       of 1000 a few lie so near 0 that the float forward and core's double
       one switch them differently (gradients then differ by ~1e-3 rel, as
       measured) */
    test_net("1x29x29-20C4relu-MP2-60C4relu-MP2-100C3relu-MP3-150Nrelu-10N", column_b, 5, 33);
    test_net("2x23x21-6C3x5S1x2R50relu-MP2x1-5C2x3R60:7relu-13Nrelu-4Nrelu", small_b, 5, 65);
    test_net("1x29x29-20C5S1relu-40C5S1relu-150Nrelu-10N", skip_b, 3, 33);
    /* batch norm (layer-wise paths only): the deep column normalised
       everywhere, and an awkward net normalising before pooling, rectified
       and not, with skips, tables and a normalised fully connected layer.
       Gradients to batch 65: the test redraws images with pooling near-ties,
       and in a normalised net every redraw moves every activation (the
       batch's statistics), so at 1000 the ties never all go away. */
    test_net("1x29x29-20C4bn-MP2-60C4bn-MP2-100C3bn-MP3-150Nbn-10N", column_b, 5, 65);
    test_net("2x23x21-6C3x5S1x2R50bn-MP2x1-5C2x3R60:7bnrelu-13Nbn-4N", small_b, 5, 65);
    test_deep_match();
    test_start_finish();
    test_train_step("1x29x29-20C4-MP2-40C5-MP3-150N-10N", 33);
    test_train_step("2x23x21-6C3x5S1x2R50-MP2x1-5C2x3R60:7-13N-4N", 31);
    test_train_batches("1x29x29-20C4-MP2-40C5-MP3-150N-10N", 70, 16, 0.0f);
    test_train_batches("2x23x21-6C3x5S1x2R50-MP2x1-5C2x3R60:7-13N-4N", 45, 8, 0.0f);
    test_train_batches("1x29x29-20C4-MP2-40C5-MP3-150N-10N", 70, 16, 3.0f);
    test_train_batches("2x23x21-6C3x5S1x2R50-MP2x1-5C2x3R60:7-13N-4N", 45, 8, 7.5f);
    test_train_batches("1x29x29-20C4relu-MP2-60C4relu-MP2-100C3relu-MP3-150Nrelu-10N", 70, 16,
                       0.0f);
    test_train_batches("2x23x21-6C3x5S1x2R50relu-MP2x1-5C2x3R60:7relu-13Nrelu-4N", 45, 8, 3.0f);
    test_train_step("1x29x29-20C4bn-MP2-60C4bn-MP2-100C3bn-MP3-150Nbn-10N", 33);
    /* Several steps of the deep column with its fully connected layer
       normalised over 16 random images grow the float differences between
       any two engines tenfold a step (core's reference against its own BLAS
       path: 4e-7 to 1e-3 relative in five steps, the plain column 5e-7):
       a unit whose sums barely vary over the batch is scaled by up to
       1 / sqrt(eps).  The step itself is checked above (train_step); the run
       of steps on the column with its convolutions normalised (1e-7 on the
       CPU), and on the awkward net below, whose 13Nbn stays well scaled. */
    test_train_batches("1x29x29-20C4bn-MP2-60C4bn-MP2-100C3bn-MP3-150N-10N", 70, 16, 0.0f);
    test_train_batches("2x23x21-6C3x5S1x2R50bn-MP2x1-5C2x3R60:7bnrelu-13Nbn-4N", 45, 8, 3.0f);
    /* the unrolled backward (neocog-train --gpu-kernels unrolled): a plain
       column, a net with tables, skips and strides, and a normalised one */
    train_batches_on("1x29x29-20C4-MP2-40C5-MP3-150N-10N", 70, 16, 0.0f,
                     NC_GPU_CNN_PATH_UNROLLED);
    train_batches_on("2x23x21-6C3x5S1x2R50-MP2x1-5C2x3R60:7-13N-4N", 45, 8, 0.0f,
                     NC_GPU_CNN_PATH_UNROLLED);
    train_batches_on("1x29x29-20C4bn-MP2-60C4bn-MP2-100C3bn-MP3-150N-10N", 70, 16, 0.0f,
                     NC_GPU_CNN_PATH_UNROLLED);
    /* the optimisers (neocog-train --momentum / --adam with --gpu) on both
       training paths: the plain column, and a net whose tables cut kernels */
    static const nc_gpu_cnn_path optim_paths[] = {NC_GPU_CNN_PATH_DIRECT,
                                                  NC_GPU_CNN_PATH_UNROLLED};
    for (int p = 0; p < 2; p++)
        for (int opt = OPT_MOMENTUM; opt <= OPT_ADAM; opt++) {
            train_optim_on("1x29x29-20C4-MP2-40C5-MP3-150N-10N", 70, 16, 32, opt,
                           optim_paths[p]);
            train_optim_on("2x23x21-6C3x5S1x2R50-MP2x1-5C2x3R60:7-13N-4N", 45, 8, 24, opt,
                           optim_paths[p]);
        }
    test_optim_cut_state();
    return nc_test_finish();
}

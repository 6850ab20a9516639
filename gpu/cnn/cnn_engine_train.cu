/* gpu/cnn/cnn_engine_train.cu — training on the resident CNN engine: the
 * layer-wise backward pass, the optimisers (SGD, momentum, Adam) stepping
 * the device's params as core's do, training steps on host images, runs
 * over device-resident training images deformed on the device, soft
 * targets and the softmax loss, the batch statistics of normalised layers,
 * and poisoning every buffer for tests.  Layer: gpu. */
#include "cnn_engine_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dy (dE/dy of layer l's outputs y) into dE/da of its sums, in place:
 * through f, and through the standardisation of a normalised layer. */
static int act_backward(nc_gpu_cnn *g, uint32_t l, const float *y, float *dy, uint32_t n)
{
    const nc_gpu_cnn_layer *L = &g->L[l];
    if (L->norm)
        return nc_gpu_cnn_norm_backward(L, y, dy, n, g->d_xhat[l], g->d_nstat[l], g->stream);
    return nc_gpu_cnn_act_backward(y, dy, dy, (size_t)n * L->n_out, L->act, g->stream);
}

/* d_delta[0] holds dE/dy of the outputs; fills d_grads. */
static int backward_device(nc_gpu_cnn *g, uint32_t n)
{
    float *dy = g->d_delta[0], *dx = g->d_delta[1];
    for (uint32_t l = g->n_layers - 1; l >= 1; l--) {
        const nc_gpu_cnn_layer *L = &g->L[l];
        const float *x = l == 1 ? g->state_in : g->d_act[l - 1];
        const float *y = g->d_act[l];
        int err = 0;
        switch (L->kind) {
        case NC_CNN_KIND_CONV:
            err = act_backward(g, l, y, dy, n);
            if (err)
                break;
            if (g->path == NC_GPU_CNN_PATH_UNROLLED && g->blas) {
                /* the products of core's BLAS path: large layers' training */
                err = nc_gpu_cnn_conv_weights_unrolled(L, x, dy, n, g->d_unroll, g->unroll_cap,
                                                       g->blas, g->stream);
                if (!err && l > 1)
                    err = nc_gpu_cnn_conv_backward_unrolled(L, dy, dx, n, g->d_unroll,
                                                            g->unroll_cap, g->blas, g->stream);
                break;
            }
            err = nc_gpu_cnn_conv_weights(L, x, dy, n, g->d_part, g->stream);
            if (!err && l > 1)
                err = nc_gpu_cnn_conv_backward(L, dy, dx, n, g->stream);
            break;
        case NC_CNN_KIND_POOL:
            if (l > 1)
                err = nc_gpu_cnn_pool_backward(L, x, dy, dx, n, g->stream);
            break;
        case NC_CNN_KIND_FULL:
            err = act_backward(g, l, y, dy, n);
            if (!err)
                err = nc_gpu_cnn_full_weights(L, x, dy, n, g->stream);
            if (!err && l > 1)
                err = nc_gpu_cnn_full_backward(L, dy, dx, n, g->stream);
            break;
        default: err = -EINVAL;
        }
        if (err)
            return err;
        float *t = dy;
        dy = dx;
        dx = t;
    }
    return 0;
}

static int backward(nc_gpu_cnn *g, const float *d_out, uint32_t n, float *grads)
{
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    NC_CUDA_CHECK(cudaMemcpyAsync(g->d_delta[0], d_out, (size_t)n * g->n_outputs * sizeof(float),
                                  cudaMemcpyHostToDevice, g->stream));
    int err = backward_device(g, n);
    if (err)
        return err;
    NC_CUDA_CHECK(cudaMemcpyAsync(grads, g->d_grads, g->n_params * sizeof(float),
                                  cudaMemcpyDeviceToHost, g->stream));
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    return 0;
}

extern "C" int nc_gpu_cnn_backward(nc_gpu_cnn *g, const float *d_out, uint32_t n, float *grads)
{
    if (!g || !d_out || !grads || n < 1 || n != g->state_n)
        return -EINVAL;
    int err = idle(g);
    if (err)
        return err;
    return note(g, backward(g, d_out, n, grads));
}

/* ---- the optimiser ------------------------------------------------------- */

/* The step after the gradients: core's nc_cnn_sgd, nc_cnn_sgd_momentum or
 * nc_cnn_adam on the device, as set.  None masks cut kernels as core's do:
 * their gradients are exactly 0 (both backward paths write 0 there), and
 * so is their optimiser state (set_state), so the step leaves them 0. */
static int update(nc_gpu_cnn *g, float lr)
{
    if (g->opt == OPT_MOMENTUM)
        return nc_gpu_cnn_sgd_momentum(g->d_params, g->d_grads, g->d_opt[0], g->n_params, lr,
                                       g->momentum, g->stream);
    if (g->opt != OPT_ADAM)
        return nc_gpu_cnn_sgd(g->d_params, g->d_grads, g->n_params, lr, g->stream);
    /* on the host, as core computes them, for the step about to be taken */
    float c1, c2;
    nc_cnn_adam_corrections(g->adam_step + 1, g->beta1, g->beta2, &c1, &c2);
    int err = nc_gpu_cnn_adam(g->d_params, g->d_grads, g->d_opt[0], g->d_opt[1], g->n_params,
                              lr, g->beta1, g->beta2, g->eps, c1, c2, g->stream);
    if (!err)
        g->adam_step++;
    return err;
}

/* The first `count` state buffers from src[i] (host; NULL: zeros), with
 * the entries of kernels a connection table cuts set to 0. */
static int set_state(nc_gpu_cnn *g, const float *const *src, int count)
{
    const size_t bytes = g->n_params * sizeof(float);
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));   /* a step may still use them */
    for (int i = 0; i < count; i++) {
        if (!g->d_opt[i])
            NC_CUDA_CHECK(cudaMalloc(&g->d_opt[i], bytes));
        if (src[i])
            NC_CUDA_CHECK(cudaMemcpyAsync(g->d_opt[i], src[i], bytes, cudaMemcpyHostToDevice,
                                          g->stream));
        else
            NC_CUDA_CHECK(cudaMemsetAsync(g->d_opt[i], 0, bytes, g->stream));
        for (uint32_t l = 1; l < g->n_layers; l++) {
            const nc_gpu_cnn_layer *L = &g->L[l];
            int err;
            if (L->kind == NC_CNN_KIND_CONV &&
                (err = nc_gpu_cnn_mask_cut(L, g->d_opt[i] + (L->weights - g->d_params),
                                           g->stream)))
                return err;
        }
    }
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    return 0;
}

static int get_state(nc_gpu_cnn *g, float *const *dst, int count)
{
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    for (int i = 0; i < count; i++)
        NC_CUDA_CHECK(cudaMemcpyAsync(dst[i], g->d_opt[i], g->n_params * sizeof(float),
                                      cudaMemcpyDeviceToHost, g->stream));
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    return 0;
}

/* Every value finite (and >= 0 with nonneg). */
static int state_ok(const float *v, size_t count, int nonneg)
{
    for (size_t i = 0; v && i < count; i++)
        if (!isfinite(v[i]) || (nonneg && v[i] < 0.0f))
            return 0;
    return 1;
}

extern "C" int nc_gpu_cnn_set_momentum(nc_gpu_cnn *g, float momentum, const float *velocity)
{
    if (!g || !(momentum >= 0.0f && momentum < 1.0f) || !state_ok(velocity, g->n_params, 0))
        return -EINVAL;
    int err = idle(g);
    if (err)
        return err;
    g->opt = OPT_SGD;           /* until the state is in place */
    const float *src[1] = {velocity};
    err = note(g, set_state(g, src, 1));
    if (err)
        return err;
    g->momentum = momentum;
    g->opt = OPT_MOMENTUM;
    return 0;
}

extern "C" int nc_gpu_cnn_get_velocity(nc_gpu_cnn *g, float *velocity)
{
    if (!g || !velocity || g->opt != OPT_MOMENTUM)
        return -EINVAL;
    int err = idle(g);
    if (err)
        return err;
    float *dst[1] = {velocity};
    return note(g, get_state(g, dst, 1));
}

extern "C" int nc_gpu_cnn_set_adam(nc_gpu_cnn *g, float beta1, float beta2, float eps,
                                   const float *m, const float *v, uint64_t step)
{
    if (!g || !(beta1 >= 0.0f && beta1 < 1.0f) || !(beta2 >= 0.0f && beta2 < 1.0f) ||
        !(eps > 0.0f) || !isfinite(eps) || !m != !v || step == UINT64_MAX ||
        !state_ok(m, g->n_params, 0) || !state_ok(v, g->n_params, 1))
        return -EINVAL;
    int err = idle(g);
    if (err)
        return err;
    g->opt = OPT_SGD;           /* until the state is in place */
    const float *src[2] = {m, v};
    err = note(g, set_state(g, src, 2));
    if (err)
        return err;
    g->beta1 = beta1;
    g->beta2 = beta2;
    g->eps = eps;
    g->adam_step = step;
    g->opt = OPT_ADAM;
    return 0;
}

extern "C" int nc_gpu_cnn_get_adam(nc_gpu_cnn *g, float *m, float *v, uint64_t *step)
{
    if (!g || !m || !v || !step || g->opt != OPT_ADAM)
        return -EINVAL;
    int err = idle(g);
    if (err)
        return err;
    float *dst[2] = {m, v};
    err = note(g, get_state(g, dst, 2));
    if (!err)
        *step = g->adam_step;
    return err;
}

/* ---- training steps ------------------------------------------------------ */

/* One SGD step on n device images x with device labels (and soft targets,
 * or NULL): forward (layer-wise), loss into d_loss (and added to acc when
 * given), backward, update. */
static int sgd_step(nc_gpu_cnn *g, const float *x, const uint8_t *d_labels,
                    const float *d_targets, uint32_t n, float lr, double *acc)
{
    float *out = g->d_act[g->n_layers - 1];
    int err;
    g->state_in = x;
    if ((err = cnn_eng_forward_layers(g, x, n, out, bucket_of(n))))
        return err;
    g->norm_done = 1;
    if (g->softmax_scale > 0.0f)
        err = nc_gpu_cnn_loss_softmax(out, d_labels, n, g->n_outputs, g->softmax_scale,
                                      g->d_delta[0], g->d_loss, acc, g->stream);
    else
        err = nc_gpu_cnn_loss_targets(out, d_labels, d_targets, n, g->n_outputs,
                                      g->d_delta[0], g->d_loss, acc, g->stream);
    if (err || (err = backward_device(g, n)))
        return err;
    return update(g, lr);
}

/* Every label below n_outputs (what the loss kernel indexes with). */
static int labels_ok(const nc_gpu_cnn *g, const uint8_t *labels, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (labels[i] >= g->n_outputs)
            return 0;
    return 1;
}

static int train_step(nc_gpu_cnn *g, const float *in, const uint8_t *labels, uint32_t n,
                      float lr, double *ret_loss)
{
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    int err = cnn_eng_ensure_tuned(g, n);
    if (err)
        return err;
    /* the previous step may still read the staging buffers */
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    memcpy(g->h_in, in, (size_t)n * g->n_inputs * sizeof(float));
    memcpy(g->h_labels, labels, n);
    NC_CUDA_CHECK(cudaMemcpyAsync(g->d_in, g->h_in, (size_t)n * g->n_inputs * sizeof(float),
                                  cudaMemcpyHostToDevice, g->stream));
    NC_CUDA_CHECK(cudaMemcpyAsync(g->d_labels, g->h_labels, n, cudaMemcpyHostToDevice,
                                  g->stream));
    if ((err = sgd_step(g, g->d_in, g->d_labels, NULL, n, lr, NULL)))
        return err;
    if (ret_loss) {
        NC_CUDA_CHECK(cudaMemcpyAsync(g->h_loss, g->d_loss, 2 * sizeof(double),
                                      cudaMemcpyDeviceToHost, g->stream));
        NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
        *ret_loss = g->h_loss[0];
    }
    return 0;
}

extern "C" int nc_gpu_cnn_train_step(nc_gpu_cnn *g, const float *in, const uint8_t *labels,
                                     uint32_t n, float lr, double *ret_loss)
{
    if (!g || !in || !labels || n < 1 || n > g->max_batch || !isfinite(lr) ||
        !labels_ok(g, labels, n))
        return -EINVAL;
    int err = idle(g);
    if (err)
        return err;
    g->state_n = 0;
    return note(g, train_step(g, in, labels, n, lr, ret_loss));
}

/* Room for n images (and labels) of a training run on the device. */
static int ensure_run_cap(nc_gpu_cnn *g, uint32_t n)
{
    if (!g->d_acc)
        NC_CUDA_CHECK(cudaMalloc(&g->d_acc, 2 * sizeof(double)));
    if (n <= g->run_cap)
        return 0;
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    cudaFree(g->d_run);
    cudaFree(g->d_run_labels);
    cudaFree(g->d_run_targets);
    cudaFreeHost(g->h_run_targets);
    g->d_run_targets = NULL;
    g->h_run_targets = NULL;
    cudaFree(g->d_index);
    cudaFree(g->d_state);
    cudaFreeHost(g->h_index);
    cudaFreeHost(g->h_state);
    cudaFreeHost(g->h_run_labels);
    g->d_run = NULL;
    g->d_run_labels = NULL;
    g->d_index = NULL;
    g->d_state = NULL;
    g->h_index = NULL;
    g->h_state = NULL;
    g->h_run_labels = NULL;
    g->run_cap = 0;
    NC_CUDA_CHECK(cudaMalloc(&g->d_run, (size_t)n * g->n_inputs * sizeof(float)));
    NC_CUDA_CHECK(cudaMalloc(&g->d_run_labels, n));
    NC_CUDA_CHECK(cudaMalloc(&g->d_index, (size_t)n * sizeof(uint32_t)));
    NC_CUDA_CHECK(cudaMalloc(&g->d_state, (size_t)n * sizeof(uint64_t)));
    NC_CUDA_CHECK(cudaHostAlloc(&g->h_index, (size_t)n * sizeof(uint32_t), cudaHostAllocDefault));
    NC_CUDA_CHECK(cudaHostAlloc(&g->h_state, (size_t)n * sizeof(uint64_t), cudaHostAllocDefault));
    NC_CUDA_CHECK(cudaHostAlloc(&g->h_run_labels, n, cudaHostAllocDefault));
    const size_t tb = (size_t)n * g->n_outputs * sizeof(float);
    NC_CUDA_CHECK(cudaMalloc(&g->d_run_targets, tb));
    NC_CUDA_CHECK(cudaHostAlloc(&g->h_run_targets, tb, cudaHostAllocDefault));
    g->run_cap = n;
    return 0;
}

/* Room for a run of n and both batch sizes it will use tuned (tuning runs
 * forwards of its own, so it must come before a run's images arrive). */
static int run_prepare(nc_gpu_cnn *g, uint32_t n, uint32_t batch)
{
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    int err = ensure_run_cap(g, n);
    if (!err)
        err = cnn_eng_ensure_tuned(g, batch);
    if (!err && n % batch)
        err = cnn_eng_ensure_tuned(g, n % batch);
    return err;
}

/* The SGD steps over d_run / d_run_labels (and d_run_targets when targets),
 * enqueued after whatever filled them on the same stream; waits for the
 * last. */
static int run_steps(nc_gpu_cnn *g, uint32_t n, uint32_t batch, float lr, int targets,
                     double *ret_loss, uint32_t *ret_errors)
{
    NC_CUDA_CHECK(cudaMemsetAsync(g->d_acc, 0, 2 * sizeof(double), g->stream));
    for (uint32_t i = 0; i < n; i += batch) {
        const uint32_t nb = n - i < batch ? n - i : batch;
        const float *t = targets ? g->d_run_targets + (size_t)i * g->n_outputs : NULL;
        int err = sgd_step(g, g->d_run + (size_t)i * g->n_inputs, g->d_run_labels + i, t, nb,
                           lr, g->d_acc);
        if (err)
            return err;
    }
    NC_CUDA_CHECK(cudaMemcpyAsync(g->h_loss, g->d_acc, 2 * sizeof(double),
                                  cudaMemcpyDeviceToHost, g->stream));
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    if (ret_loss)
        *ret_loss = g->h_loss[0];
    if (ret_errors)
        *ret_errors = (uint32_t)g->h_loss[1];
    return 0;
}

static int train_batches(nc_gpu_cnn *g, const float *in, const uint8_t *labels, uint32_t n,
                         uint32_t batch, float lr, double *ret_loss, uint32_t *ret_errors)
{
    int err = run_prepare(g, n, batch);
    if (err)
        return err;
    /* Same stream as every step: the copies wait for the previous run's
     * steps, and the steps for the copies. */
    NC_CUDA_CHECK(cudaMemcpyAsync(g->d_run, in, (size_t)n * g->n_inputs * sizeof(float),
                                  cudaMemcpyHostToDevice, g->stream));
    NC_CUDA_CHECK(cudaMemcpyAsync(g->d_run_labels, labels, n, cudaMemcpyHostToDevice,
                                  g->stream));
    return run_steps(g, n, batch, lr, 0, ret_loss, ret_errors);
}

static int set_train_data(nc_gpu_cnn *g, const float *in, const uint8_t *labels, uint32_t count,
                          const nc_deform_params *deform)
{
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    cudaFree(g->d_train);
    g->d_train = NULL;
    free(g->h_train_labels);
    g->h_train_labels = NULL;
    free(g->h_train_targets);
    g->h_train_targets = NULL;
    nc_gpu_deform_free(g->deform);
    g->deform = NULL;
    g->n_train = 0;
    const nc_deform_params none = NC_DEFORM_NONE;
    const nc_gpu_cnn_layer *L0 = &g->L[0];
    int err = nc_gpu_deform_new(deform ? deform : &none, L0->width, L0->height * L0->maps,
                                &g->deform);
    if (err)
        return err;
    if (!(g->h_train_labels = (uint8_t *)malloc(count)))
        return -ENOMEM;
    memcpy(g->h_train_labels, labels, count);
    NC_CUDA_CHECK(cudaMalloc(&g->d_train, (size_t)count * g->n_inputs * sizeof(float)));
    NC_CUDA_CHECK(cudaMemcpy(g->d_train, in, (size_t)count * g->n_inputs * sizeof(float),
                             cudaMemcpyHostToDevice));
    g->n_train = count;
    return 0;
}

extern "C" int nc_gpu_cnn_set_train_data(nc_gpu_cnn *g, const float *in, const uint8_t *labels,
                                         uint32_t count, const nc_deform_params *deform)
{
    if (!g || !in || !labels || count < 1 || !labels_ok(g, labels, count))
        return -EINVAL;
    if (g->pending_n)
        return -EBUSY;          /* a forward_start awaits its finish */
    if (deform && g->L[0].maps != 1)
        return -ENOTSUP;        /* core/data/deform warps one plane */
    if (g->failed)
        return g->failed;
    return note(g, set_train_data(g, in, labels, count, deform));
}

extern "C" int nc_gpu_cnn_set_loss_softmax(nc_gpu_cnn *g, float scale)
{
    if (!g || !isfinite(scale) || scale < 0.0f)
        return -EINVAL;
    if (scale > 0.0f && g->h_train_targets)
        return -ENOTSUP;        /* soft targets belong to the squared error */
    g->softmax_scale = scale;
    return 0;
}

extern "C" int nc_gpu_cnn_set_train_targets(nc_gpu_cnn *g, const float *targets)
{
    if (!g)
        return -EINVAL;
    if (targets && g->softmax_scale > 0.0f)
        return -ENOTSUP;
    if (targets && !g->n_train)
        return -EINVAL;         /* no nc_gpu_cnn_set_train_data yet */
    const size_t count = (size_t)g->n_train * g->n_outputs;
    for (size_t i = 0; targets && i < count; i++)
        if (!isfinite(targets[i]))
            return -EINVAL;
    if (g->failed)
        return g->failed;
    float *t = NULL;
    if (targets) {
        if (!(t = (float *)malloc(count * sizeof(float))))
            return -ENOMEM;
        memcpy(t, targets, count * sizeof(float));
    }
    free(g->h_train_targets);
    g->h_train_targets = t;
    return 0;
}

static int train_indexed(nc_gpu_cnn *g, const uint32_t *index, const uint64_t *state,
                         uint32_t n, uint32_t batch, float lr, double *ret_loss,
                         uint32_t *ret_errors)
{
    int err = run_prepare(g, n, batch);
    if (err)
        return err;
    /* A finished run leaves the stream idle, but one that failed part-way
     * may leave copies from the pinned staging buffers pending. */
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    memcpy(g->h_index, index, (size_t)n * sizeof(uint32_t));
    memcpy(g->h_state, state, (size_t)n * sizeof(uint64_t));
    const size_t k_n = g->n_outputs;
    for (uint32_t i = 0; i < n; i++) {
        g->h_run_labels[i] = g->h_train_labels[index[i]];
        if (g->h_train_targets)
            memcpy(g->h_run_targets + i * k_n, g->h_train_targets + (size_t)index[i] * k_n,
                   k_n * sizeof(float));
    }
    NC_CUDA_CHECK(cudaMemcpyAsync(g->d_index, g->h_index, (size_t)n * sizeof(uint32_t),
                                  cudaMemcpyHostToDevice, g->stream));
    NC_CUDA_CHECK(cudaMemcpyAsync(g->d_state, g->h_state, (size_t)n * sizeof(uint64_t),
                                  cudaMemcpyHostToDevice, g->stream));
    NC_CUDA_CHECK(cudaMemcpyAsync(g->d_run_labels, g->h_run_labels, n, cudaMemcpyHostToDevice,
                                  g->stream));
    if (g->h_train_targets)
        NC_CUDA_CHECK(cudaMemcpyAsync(g->d_run_targets, g->h_run_targets,
                                      (size_t)n * k_n * sizeof(float), cudaMemcpyHostToDevice,
                                      g->stream));
    if ((err = nc_gpu_deform_apply(g->deform, g->d_train, g->d_index, g->d_state, n, g->d_run,
                                   g->stream)))
        return err;
    return run_steps(g, n, batch, lr, g->h_train_targets != NULL, ret_loss, ret_errors);
}

extern "C" int nc_gpu_cnn_train_indexed(nc_gpu_cnn *g, const uint32_t *index,
                                        const uint64_t *state, uint32_t n, uint32_t batch,
                                        float lr, double *ret_loss, uint32_t *ret_errors)
{
    if (!g || !index || !state || n < 1 || batch < 1 || batch > g->max_batch || !isfinite(lr))
        return -EINVAL;
    if (g->pending_n)
        return -EBUSY;          /* a forward_start awaits its finish */
    if (!g->n_train)
        return -EINVAL;         /* no nc_gpu_cnn_set_train_data yet */
    for (uint32_t i = 0; i < n; i++)
        if (index[i] >= g->n_train)
            return -EINVAL;
    if (g->failed)
        return g->failed;
    g->state_n = 0;
    return note(g, train_indexed(g, index, state, n, batch, lr, ret_loss, ret_errors));
}

extern "C" int nc_gpu_cnn_train_batches(nc_gpu_cnn *g, const float *in, const uint8_t *labels,
                                        uint32_t n, uint32_t batch, float lr, double *ret_loss,
                                        uint32_t *ret_errors)
{
    if (!g || !in || !labels || n < 1 || batch < 1 || batch > g->max_batch || !isfinite(lr) ||
        !labels_ok(g, labels, n))
        return -EINVAL;
    int err = idle(g);
    if (err)
        return err;
    g->state_n = 0;
    return note(g, train_batches(g, in, labels, n, batch, lr, ret_loss, ret_errors));
}

static int poison(nc_gpu_cnn *g)
{
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    const size_t nb = g->max_batch;
    for (uint32_t l = 1; l < g->n_layers; l++) {
        NC_CUDA_CHECK(cudaMemsetAsync(g->d_act[l], 0xff, nb * g->L[l].n_out * sizeof(float),
                                      g->stream));
        if (g->L[l].norm) {
            NC_CUDA_CHECK(cudaMemsetAsync(g->d_xhat[l], 0xff,
                                          nb * g->L[l].n_out * sizeof(float), g->stream));
            NC_CUDA_CHECK(cudaMemsetAsync(
                g->d_nstat[l], 0xff, NC_GPU_CNN_NORM_STAT_FLOATS(g->L[l].maps) * sizeof(float),
                g->stream));
        }
    }
    for (int i = 0; i < 2; i++)
        NC_CUDA_CHECK(cudaMemsetAsync(g->d_delta[i], 0xff, nb * g->max_units * sizeof(float),
                                      g->stream));
    NC_CUDA_CHECK(cudaMemsetAsync(g->d_grads, 0xff, g->n_params * sizeof(float), g->stream));
    if (g->d_part)
        NC_CUDA_CHECK(cudaMemsetAsync(g->d_part, 0xff, g->part_cap * sizeof(float), g->stream));
    if (g->d_unroll)
        NC_CUDA_CHECK(cudaMemsetAsync(g->d_unroll, 0xff, g->unroll_cap * sizeof(float),
                                      g->stream));
    if (g->d_feat)
        NC_CUDA_CHECK(cudaMemsetAsync(g->d_feat, 0xff, nb * 360 * sizeof(float), g->stream));
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    return 0;
}

extern "C" int nc_gpu_cnn_poison(nc_gpu_cnn *g)
{
    if (!g)
        return -EINVAL;
    int err = idle(g);
    if (err)
        return err;
    return note(g, poison(g));
}

static int norm_stats(nc_gpu_cnn *g, uint32_t layer, float *mean, float *var)
{
    const uint32_t maps = g->L[layer].maps;
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    NC_CUDA_CHECK(cudaMemcpy(mean, g->d_nstat[layer], maps * sizeof(float),
                             cudaMemcpyDeviceToHost));
    NC_CUDA_CHECK(cudaMemcpy(var, g->d_nstat[layer] + maps, maps * sizeof(float),
                             cudaMemcpyDeviceToHost));
    return 0;
}

extern "C" int nc_gpu_cnn_norm_stats(nc_gpu_cnn *g, uint32_t layer, float *mean, float *var)
{
    if (!g || !mean || !var || layer < 1 || layer >= g->n_layers || !g->L[layer].norm ||
        !g->norm_done)
        return -EINVAL;
    int err = idle(g);
    if (err)
        return err;
    return note(g, norm_stats(g, layer, mean, var));
}

/* gpu/cnn/cnn_engine.cu — the resident CNN engine's serving side: device
 * copies of a net (made, uploaded, downloaded, freed), the forward pass
 * layer by layer or as one fused kernel over gpu/cnn/cnn_*.cu's kernels,
 * the staged host-to-host forward (replayed from a CUDA graph for small
 * batches) and its start / finish halves.  Which path each batch size runs
 * is chosen in cnn_engine_tune.cu; training is cnn_engine_train.cu.
 *
 * Layer: gpu.  No kernels of its own: it sizes buffers, orders launches on
 * its one stream and turns failures into -ENOMEM / -ENODEV / -EIO. */
#include "cnn_engine_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- building ------------------------------------------------------------ */

const nc_gpu_cnn_fused_ops *cnn_eng_fused_ops;

extern "C" void nc_gpu_cnn_set_fused_ops(const nc_gpu_cnn_fused_ops *ops)
{
    cnn_eng_fused_ops = ops;
}

static void describe_layers(nc_gpu_cnn *g, const nc_cnn *net)
{
    size_t list_off = 0;
    for (uint32_t l = 0; l < net->n_layers; l++) {
        const nc_cnn_layer *S = &net->layers[l];
        const nc_cnn_layer *P = l ? &net->layers[l - 1] : S;
        nc_gpu_cnn_layer *L = &g->L[l];
        memset(L, 0, sizeof *L);
        L->kind = S->kind;
        /* a normalised layer's kernels leave the sums; cnn_norm activates */
        L->act = S->norm ? (uint32_t)NC_CNN_ACT_NONE : S->act;
        L->norm = S->norm;
        L->norm_act = S->norm ? S->act : 0;
        L->maps = S->maps;
        L->height = S->height;
        L->width = S->width;
        L->in_maps = P->maps;
        L->in_height = P->height;
        L->in_width = P->width;
        L->kernel_x = S->kernel_x;
        L->kernel_y = S->kernel_y;
        L->step_x = S->skip_x + 1;
        L->step_y = S->skip_y + 1;
        L->n_in = S->n_in;
        L->n_out = S->n_out;
        L->fan_in = S->fan_in;
        L->n_weights = (uint32_t)S->n_weights;
        if (S->weights) {
            L->weights = g->d_params + (S->weights - net->params);
            L->bias = g->d_params + (S->bias - net->params);
            L->gweights = g->d_grads + (S->weights - net->params);
            L->gbias = g->d_grads + (S->bias - net->params);
        }
        if (S->norm) {
            L->gamma = g->d_params + (S->gamma - net->params);
            L->beta = g->d_params + (S->beta - net->params);
            L->gnorm = g->d_grads + (S->gamma - net->params);
        }
        if (S->kind == NC_CNN_KIND_CONV) {
            L->fwd = g->d_lists + list_off;
            list_off += (size_t)S->maps * (1 + P->maps);
            L->bwd = g->d_lists + list_off;
            list_off += (size_t)P->maps * (1 + S->maps);
        }
    }
    g->n_lists = list_off;
}

/* Connection lists of every CONV layer (seed 000 §3.1), host side. */
static void build_lists(const nc_cnn *net, int32_t *lists)
{
    size_t off = 0;
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *S = &net->layers[l];
        if (S->kind != NC_CNN_KIND_CONV)
            continue;
        const uint32_t in_maps = net->layers[l - 1].maps;
        for (uint32_t m = 0; m < S->maps; m++) {
            int32_t *row = lists + off + (size_t)m * (1 + in_maps);
            row[0] = 0;
            for (uint32_t c = 0; c < in_maps; c++)
                if (S->table[(size_t)m * in_maps + c])
                    row[1 + row[0]++] = (int32_t)c;
        }
        off += (size_t)S->maps * (1 + in_maps);
        for (uint32_t c = 0; c < in_maps; c++) {
            int32_t *row = lists + off + (size_t)c * (1 + S->maps);
            row[0] = 0;
            for (uint32_t m = 0; m < S->maps; m++)
                if (S->table[(size_t)m * in_maps + c])
                    row[1 + row[0]++] = (int32_t)m;
        }
        off += (size_t)in_maps * (1 + S->maps);
    }
}

static int same_arch(const nc_gpu_cnn *g, const nc_cnn *net)
{
    if (!net || net->n_layers != g->n_layers || net->n_params != g->n_params)
        return 0;
    for (uint32_t l = 0; l < net->n_layers; l++) {
        const nc_cnn_layer *S = &net->layers[l];
        const nc_gpu_cnn_layer *L = &g->L[l];
        if (S->kind != L->kind || S->maps != L->maps || S->height != L->height ||
            S->width != L->width || S->kernel_x != L->kernel_x || S->kernel_y != L->kernel_y ||
            S->skip_x + 1 != L->step_x || S->skip_y + 1 != L->step_y || S->norm != L->norm ||
            (S->norm ? S->act != L->norm_act : S->act != L->act))
            return 0;
    }
    return 1;
}

void cnn_eng_drop_graphs(nc_gpu_cnn *g)
{
    for (unsigned i = 0; i <= NC_GPU_CNN_GRAPH_MAX; i++)
        if (g->graph[i]) {
            cudaGraphExecDestroy(g->graph[i]);
            g->graph[i] = NULL;
        }
}

extern "C" void nc_gpu_cnn_free(nc_gpu_cnn *g)
{
    if (!g)
        return;
    cudaSetDevice(g->device);
    if (g->stream)
        cudaStreamSynchronize(g->stream);
    cnn_eng_drop_graphs(g);
    if (g->blas)
        cublasDestroy(g->blas);
    if (g->ev0)
        cudaEventDestroy(g->ev0);
    if (g->ev1)
        cudaEventDestroy(g->ev1);
    if (g->stream)
        cudaStreamDestroy(g->stream);
    void *dev[] = {g->d_params, g->d_grads, g->d_lists, g->d_in, g->d_delta[0], g->d_delta[1],
                   g->d_part, g->d_unroll, g->d_feat, g->d_labels, g->d_loss, g->d_blas_ws,
                   g->d_run, g->d_run_labels, g->d_acc, g->d_train, g->d_index,
                   g->d_state, g->d_run_targets, g->d_opt[0], g->d_opt[1]};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        cudaFree(dev[i]);
    for (uint32_t l = 0; l < NC_CNN_MAX_LAYERS; l++) {
        cudaFree(g->d_act[l]);
        cudaFree(g->d_xhat[l]);
        cudaFree(g->d_nstat[l]);
    }
    cudaFreeHost(g->h_in);
    cudaFreeHost(g->h_out);
    cudaFreeHost(g->h_labels);
    cudaFreeHost(g->h_loss);
    cudaFreeHost(g->h_index);
    cudaFreeHost(g->h_state);
    cudaFreeHost(g->h_run_labels);
    cudaFreeHost(g->h_run_targets);
    nc_gpu_deform_free(g->deform);
    free(g->h_train_labels);
    free(g->h_train_targets);
    free(g);
}

static int engine_alloc(nc_gpu_cnn *g, const nc_cnn *net)
{
    const size_t nb = g->max_batch;
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    cudaDeviceProp p;
    NC_CUDA_CHECK(cudaGetDeviceProperties(&p, g->device));
    g->sm_count = p.multiProcessorCount;
    NC_CUDA_CHECK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    NC_CUDA_CHECK(cudaEventCreate(&g->ev0));
    NC_CUDA_CHECK(cudaEventCreate(&g->ev1));
    NC_CUDA_CHECK(cudaMalloc(&g->d_params, g->n_params * sizeof(float)));
    NC_CUDA_CHECK(cudaMalloc(&g->d_grads, g->n_params * sizeof(float)));
    describe_layers(g, net);    /* needs d_params, d_grads; sizes the lists */
    NC_CUDA_CHECK(cudaMalloc(&g->d_lists, (g->n_lists + 1) * sizeof(int32_t)));
    describe_layers(g, net);    /* again, now with d_lists */
    NC_CUDA_CHECK(cudaMalloc(&g->d_in, nb * g->n_inputs * sizeof(float)));
    size_t unroll = 0, part = 0;
    for (uint32_t l = 1; l < g->n_layers; l++) {
        const nc_gpu_cnn_layer *L = &g->L[l];
        NC_CUDA_CHECK(cudaMalloc(&g->d_act[l], nb * L->n_out * sizeof(float)));
        if (L->norm) {
            NC_CUDA_CHECK(cudaMalloc(&g->d_xhat[l], nb * L->n_out * sizeof(float)));
            NC_CUDA_CHECK(cudaMalloc(&g->d_nstat[l],
                                     NC_GPU_CNN_NORM_STAT_FLOATS(L->maps) * sizeof(float)));
        }
        if (L->kind == NC_CNN_KIND_CONV) {
            size_t u = ((size_t)L->fan_in + L->maps) * L->height * L->width * nb;
            if (u > unroll)
                unroll = u;
            size_t s = nc_gpu_cnn_conv_weights_scratch(L, g->max_batch);
            if (s > part)
                part = s;
        }
    }
    for (int i = 0; i < 2; i++)
        NC_CUDA_CHECK(cudaMalloc(&g->d_delta[i], nb * g->max_units * sizeof(float)));
    g->unroll_cap = unroll < UNROLL_CAP ? unroll : UNROLL_CAP;
    g->part_cap = part;
    if (g->unroll_cap)
        NC_CUDA_CHECK(cudaMalloc(&g->d_unroll, g->unroll_cap * sizeof(float)));
    if (g->part_cap)
        NC_CUDA_CHECK(cudaMalloc(&g->d_part, g->part_cap * sizeof(float)));
    NC_CUDA_CHECK(cudaMalloc(&g->d_labels, nb));
    NC_CUDA_CHECK(cudaMalloc(&g->d_loss, 2 * sizeof(double)));
    NC_CUDA_CHECK(cudaHostAlloc(&g->h_in, nb * g->n_inputs * sizeof(float), cudaHostAllocDefault));
    NC_CUDA_CHECK(cudaHostAlloc(&g->h_out, nb * g->n_outputs * sizeof(float), cudaHostAllocDefault));
    NC_CUDA_CHECK(cudaHostAlloc(&g->h_labels, nb, cudaHostAllocDefault));
    NC_CUDA_CHECK(cudaHostAlloc(&g->h_loss, 2 * sizeof(double), cudaHostAllocDefault));
    g->fused = cnn_eng_fused_ops;
    g->fused_ok = g->fused && g->fused->match(g->L, g->n_layers);
    if (g->fused_ok) {
        int err = g->fused->init();
        if (err)
            return err;
        NC_CUDA_CHECK(cudaMalloc(&g->d_feat, nb * 360 * sizeof(float)));
    }
    /* it leaves pool2's and pool3's activations in d_act[4] and d_act[6] */
    g->deep_ok = nc_gpu_cnn_fused_deep_match(g->L, g->n_layers);
    /* and the persistent kernel its pool2 activations in d_act[4]: where the
       net starts like the deep column and the device has the shared memory */
    if (nc_gpu_cnn_deep_big_match(g->L, g->n_layers)) {
        int err = nc_gpu_cnn_deep_big_init();
        if (err && err != -ENOTSUP)
            return err;
        g->deep_big_ok = !err;
    }
    cublasStatus_t s = cublasCreate(&g->blas);
    if (s != CUBLAS_STATUS_SUCCESS) {
        g->blas = NULL;
        NC_CUBLAS_CHECK(s);
    }
    NC_CUBLAS_CHECK(cublasSetMathMode(g->blas, CUBLAS_DEFAULT_MATH));   /* fp32, no TF32 */
    NC_CUDA_CHECK(cudaMalloc(&g->d_blas_ws, BLAS_WORKSPACE));
    NC_CUBLAS_CHECK(cublasSetWorkspace(g->blas, g->d_blas_ws, BLAS_WORKSPACE));
    NC_CUBLAS_CHECK(cublasSetStream(g->blas, g->stream));
    return 0;
}

extern "C" int nc_gpu_cnn_new(const nc_cnn *net, int device, uint32_t max_batch,
                              nc_gpu_cnn **ret_g)
{
    if (!net || !ret_g || max_batch < 1 || max_batch > NC_CNN_MAX_BATCH || device < 0 ||
        net->n_layers < 2 || net->n_params > UINT32_MAX)
        return -EINVAL;
    int count = 0;
    int err = nc_gpu_device_count(&count);
    if (err)
        return err;
    if (device >= count)
        return -ENODEV;
    nc_gpu_cnn *g = (nc_gpu_cnn *)calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    g->device = device;
    g->max_batch = max_batch;
    g->n_layers = net->n_layers;
    g->n_inputs = net->n_inputs;
    g->n_outputs = net->n_outputs;
    g->max_units = net->max_units;
    g->n_params = net->n_params;
    err = engine_alloc(g, net);
    if (!err)
        err = nc_gpu_cnn_upload(g, net);
    if (err) {
        nc_gpu_cnn_free(g);
        return err;
    }
    *ret_g = g;
    return 0;
}

static int upload(nc_gpu_cnn *g, const nc_cnn *net)
{
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    int32_t *lists = (int32_t *)malloc((g->n_lists + 1) * sizeof(int32_t));
    if (!lists)
        return -ENOMEM;
    build_lists(net, lists);
    cudaError_t e = cudaMemcpyAsync(g->d_lists, lists, g->n_lists * sizeof(int32_t),
                                    cudaMemcpyHostToDevice, g->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(g->stream);
    free(lists);
    NC_CUDA_CHECK(e);
    NC_CUDA_CHECK(cudaMemcpyAsync(g->d_params, net->params, g->n_params * sizeof(float),
                                  cudaMemcpyHostToDevice, g->stream));
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    return 0;
}

extern "C" int nc_gpu_cnn_upload(nc_gpu_cnn *g, const nc_cnn *net)
{
    if (!g || !same_arch(g, net))
        return -EINVAL;
    int err = idle(g);
    if (err)
        return err;
    return note(g, upload(g, net));
}

static int download(nc_gpu_cnn *g, nc_cnn *net)
{
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    NC_CUDA_CHECK(cudaMemcpyAsync(net->params, g->d_params, g->n_params * sizeof(float),
                                  cudaMemcpyDeviceToHost, g->stream));
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    return 0;
}

extern "C" int nc_gpu_cnn_download(nc_gpu_cnn *g, nc_cnn *net)
{
    if (!g || !same_arch(g, net))
        return -EINVAL;
    int err = idle(g);
    if (err)
        return err;
    return note(g, download(g, net));
}

/* ---- forward ------------------------------------------------------------- */

/* Layer-wise forward of n images from in (device); the last layer writes
 * out (act[last] when a backward pass may follow). */
static int forward_layers_from(nc_gpu_cnn *g, uint32_t first, const float *in, uint32_t n,
                               float *out, unsigned bk)
{
    for (uint32_t l = first; l < g->n_layers; l++) {
        const nc_gpu_cnn_layer *L = &g->L[l];
        const float *x = l == first ? in : g->d_act[l - 1];
        float *y = l + 1 == g->n_layers ? out : g->d_act[l];
        const int blas = g->blas_layer[bk][l];
        int err;
        switch (L->kind) {
        case NC_CNN_KIND_CONV:
            err = blas ? nc_gpu_cnn_conv_forward_unrolled(L, x, y, n, g->d_unroll, g->unroll_cap,
                                                          g->blas, g->stream)
                       : nc_gpu_cnn_conv_forward(L, x, y, n, g->stream);
            break;
        case NC_CNN_KIND_POOL: err = nc_gpu_cnn_pool_forward(L, x, y, n, g->stream); break;
        case NC_CNN_KIND_FULL:
            err = blas ? nc_gpu_cnn_full_forward_blas(L, x, y, n, g->blas, g->stream)
                       : nc_gpu_cnn_full_forward(L, x, y, n, g->stream);
            break;
        default: err = -EINVAL;
        }
        if (!err && L->norm)
            err = nc_gpu_cnn_norm_forward(L, y, n, g->d_xhat[l], g->d_nstat[l], g->stream);
        if (err)
            return err;
    }
    return 0;
}

int cnn_eng_forward_layers(nc_gpu_cnn *g, const float *in, uint32_t n, float *out, unsigned bk)
{
    return forward_layers_from(g, 1, in, n, out, bk);
}

int cnn_eng_forward_whole(nc_gpu_cnn *g, const float *in, uint32_t n, float *out, unsigned bk)
{
    switch (g->whole[bk]) {
    case WHOLE_FUSED_SMALL: {
        /* features straight into pool2's activations, then the fully
           connected layers layer-wise (spread over the chip at small n) */
        int err = g->fused->forward(g->L, in, g->d_act[4], NULL, n, NC_GPU_CNN_FUSED_SMALL,
                                    g->sm_count, g->stream);
        return err ? err : forward_layers_from(g, 5, g->d_act[4], n, out, bk);
    }
    case WHOLE_FUSED_BIG:
        return g->fused->forward(g->L, in, g->d_feat, out, n, NC_GPU_CNN_FUSED_BIG,
                                 g->sm_count, g->stream);
    case WHOLE_FUSED_DEEP:
        return nc_gpu_cnn_fused_deep_forward(g->L, in, g->d_act[4], g->d_act[6], out, n,
                                             g->stream);
    case WHOLE_DEEP_BIG: {
        int err = nc_gpu_cnn_deep_big_features(g->L, in, g->d_act[4], n, g->sm_count,
                                               g->stream);
        return err ? err : forward_layers_from(g, 5, g->d_act[4], n, out, bk);
    }
    default:
        return cnn_eng_forward_layers(g, in, n, out, bk);
    }
}

/* The whole host-to-host forward of n images in h_in, on the stream: copy in,
 * compute, copy out. */
static int forward_staged(nc_gpu_cnn *g, uint32_t n)
{
    const unsigned bk = bucket_of(n);
    float *out = g->d_act[g->n_layers - 1];
    NC_CUDA_CHECK(cudaMemcpyAsync(g->d_in, g->h_in, (size_t)n * g->n_inputs * sizeof(float),
                                  cudaMemcpyHostToDevice, g->stream));
    int err = cnn_eng_forward_whole(g, g->d_in, n, out, bk);
    if (err)
        return err;
    NC_CUDA_CHECK(cudaMemcpyAsync(g->h_out, out, (size_t)n * g->n_outputs * sizeof(float),
                                  cudaMemcpyDeviceToHost, g->stream));
    return 0;
}

static int capture(nc_gpu_cnn *g, uint32_t n)
{
    return capture_graph(g, &g->graph[n], [&] { return forward_staged(g, n); });
}

/* Enqueue the forward of n images from in: staged into the pinned h_in
 * (so the caller may reuse in at once), run, and the outputs copied back
 * into h_out, all on the stream; finish() waits for it. */
static int start(nc_gpu_cnn *g, const float *in, uint32_t n)
{
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    memcpy(g->h_in, in, (size_t)n * g->n_inputs * sizeof(float));
    int err = cnn_eng_ensure_tuned(g, n);
    if (err)
        return err;
    if (n <= NC_GPU_CNN_GRAPH_MAX) {
        if (!g->graph[n] && (err = capture(g, n)))
            return err;
        NC_CUDA_CHECK(cudaGraphLaunch(g->graph[n], g->stream));
    } else if ((err = forward_staged(g, n))) {
        return err;
    }
    return 0;
}

static int finish(nc_gpu_cnn *g, uint32_t n, float *out)
{
    NC_CUDA_CHECK(cudaSetDevice(g->device));
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    if (out)
        memcpy(out, g->h_out, (size_t)n * g->n_outputs * sizeof(float));
    g->state_n = g->whole[bucket_of(n)] == WHOLE_LAYERS ? n : 0;
    g->state_in = g->d_in;
    g->norm_done = 1;
    return 0;
}

extern "C" int nc_gpu_cnn_forward(nc_gpu_cnn *g, const float *in, uint32_t n, float *out)
{
    if (!out)
        return -EINVAL;
    int err = nc_gpu_cnn_forward_start(g, in, n);
    return err ? err : nc_gpu_cnn_forward_finish(g, out);
}

extern "C" int nc_gpu_cnn_forward_start(nc_gpu_cnn *g, const float *in, uint32_t n)
{
    if (!g || !in || n < 1 || n > g->max_batch)
        return -EINVAL;
    if (g->failed)
        return g->failed;
    if (g->pending_n)
        return -EBUSY;
    g->state_n = 0;
    int err = start(g, in, n);
    if (err) {
        /* what was enqueued before the failure may still read h_in; the
           failure itself is what the caller hears of */
        (void)cudaStreamSynchronize(g->stream);
        return note(g, err);
    }
    g->pending_n = n;
    return 0;
}

extern "C" int nc_gpu_cnn_forward_finish(nc_gpu_cnn *g, float *out)
{
    if (!g || !g->pending_n)
        return -EINVAL;
    const uint32_t n = g->pending_n;
    g->pending_n = 0;
    if (g->failed)
        return g->failed;
    return note(g, finish(g, n, out));
}

extern "C" int nc_gpu_cnn_forward_device(nc_gpu_cnn *g, const float *d_in, uint32_t n,
                                         float *d_out)
{
    if (!g || !d_in || !d_out || n < 1 || n > g->max_batch)
        return -EINVAL;
    int err = idle(g);
    if (err)
        return err;
    g->state_n = 0;
    err = cnn_eng_ensure_tuned(g, n);
    if (!err)
        err = cnn_eng_forward_whole(g, d_in, n, d_out, bucket_of(n));
    return note(g, err);
}

extern "C" void *nc_gpu_cnn_stream(nc_gpu_cnn *g) { return g ? (void *)g->stream : NULL; }

static int sync_stream(nc_gpu_cnn *g)
{
    NC_CUDA_CHECK(cudaStreamSynchronize(g->stream));
    return 0;
}

extern "C" int nc_gpu_cnn_sync(nc_gpu_cnn *g)
{
    if (!g)
        return -EINVAL;
    if (g->failed)
        return g->failed;
    return note(g, sync_stream(g));
}

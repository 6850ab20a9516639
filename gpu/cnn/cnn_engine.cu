/* gpu/cnn/cnn_engine.cu — the resident CNN engine: device copies of a net, the
 * layer-wise forward and backward passes over gpu/cnn_*.cu's kernels, the
 * measured choice between variants, CUDA graphs for small batches, training.
 *
 * Layer: gpu.  No kernels of its own: it sizes buffers, orders launches on
 * its one stream and turns failures into -ENOMEM / -ENODEV / -EIO. */
#include "cnn_engine.h"

#include <cublas_v2.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnn_act.cuh"
#include "cnn_conv.cuh"
#include "cnn_full.cuh"
#include "cnn_fused.cuh"
#include "cnn_fused_deep.cuh"
#include "cnn_layer.h"
#include "cnn_norm.cuh"
#include "cnn_pool.cuh"
#include "cnn_unroll.cuh"
#include "cuda_check.cuh"
#include "deform.cuh"

#define BUCKETS 17u                         /* batch sizes 1, 2, 4, ... 65536 */
#define UNROLL_CAP ((size_t)64 << 20)       /* floats of unrolling scratch, at most */
#define BLAS_WORKSPACE ((size_t)32 << 20)   /* bytes: cuBLAS under graph capture */

enum { WHOLE_LAYERS = 0, WHOLE_FUSED_SMALL = 1, WHOLE_FUSED_BIG = 2, WHOLE_FUSED_DEEP = 3 };
enum { OPT_SGD = 0, OPT_MOMENTUM = 1, OPT_ADAM = 2 };      /* the training step's update */

struct nc_gpu_cnn {
    int device, sm_count;
    uint32_t max_batch, n_layers, n_inputs, n_outputs, max_units;
    size_t n_params;
    nc_gpu_cnn_layer L[NC_CNN_MAX_LAYERS];  /* L[0]: the input's shape */

    float *d_params, *d_grads;
    int32_t *d_lists;
    size_t n_lists;
    float *d_in, *d_act[NC_CNN_MAX_LAYERS], *d_delta[2];
    float *d_xhat[NC_CNN_MAX_LAYERS];       /* normalised layers: a^, like d_act */
    float *d_nstat[NC_CNN_MAX_LAYERS];      /* and the batch's mean, var [2][maps], then
                                               cnn_norm's working doubles */
    float *d_part, *d_unroll, *d_feat;
    size_t part_cap, unroll_cap;
    uint8_t *d_labels;
    double *d_loss;
    float *d_run;                           /* nc_gpu_cnn_train_batches' images, */
    uint8_t *d_run_labels;                  /* grown on demand */
    size_t run_cap;                         /* images d_run holds */
    double *d_acc;                          /* loss, errors summed over a run */
    float *d_train;                         /* nc_gpu_cnn_set_train_data's images */
    uint8_t *h_train_labels;                /* and labels (host: gathered there) */
    float *h_train_targets;                 /* soft targets [n_train][n_outputs], or NULL */
    float *d_run_targets, *h_run_targets;   /* a run's, gathered (run_cap each) */
    float softmax_scale;                    /* > 0: softmax cross-entropy; 0: squared error */
    int opt;                                /* OPT_*: nc_gpu_cnn_set_momentum / _set_adam */
    float momentum, beta1, beta2, eps;      /* its constants */
    float *d_opt[2];                        /* its state [n_params]: velocity; Adam's m, v */
    uint64_t adam_step;                     /* Adam steps taken */
    uint32_t n_train;
    nc_gpu_deform *deform;                  /* their deformation (NONE: a copy) */
    uint32_t *d_index;                      /* per run: source image, rng state, */
    uint64_t *d_state;                      /* run_cap each */
    uint32_t *h_index;                      /* pinned staging of the three */
    uint64_t *h_state;
    uint8_t *h_run_labels;
    void *d_blas_ws;
    float *h_in, *h_out;                    /* pinned */
    uint8_t *h_labels;
    double *h_loss;

    cudaStream_t stream;
    cublasHandle_t blas;
    cudaEvent_t ev0, ev1;
    cudaGraphExec_t graph[NC_GPU_CNN_GRAPH_MAX + 1];

    int fused_ok;                           /* the shallow column's fused paths fit */
    int deep_ok;                            /* the deep column's fused path fits */
    nc_gpu_cnn_path path;
    uint8_t tuned[BUCKETS];
    uint8_t whole[BUCKETS];
    uint8_t blas_layer[BUCKETS][NC_CNN_MAX_LAYERS];   /* 1: cuBLAS variant */

    uint32_t pending_n;                     /* nc_gpu_cnn_forward_start of n, unfinished */
    uint32_t state_n;                       /* layer-wise forward of n done */
    int norm_done;                          /* a forward filled d_nstat */
    const float *state_in;
    int failed;                             /* -EIO once the context broke */
};

static unsigned bucket_of(uint32_t n)
{
    unsigned b = 0;
    while ((1u << b) < n && b + 1 < BUCKETS)
        b++;
    return b;
}

/* Remember a broken context: every later call answers -EIO. */
static int note(nc_gpu_cnn *g, int err)
{
    if (err == -EIO)
        g->failed = -EIO;
    return err;
}

/* Whether g can take a call that uses the device: -EBUSY while a
 * forward_start awaits its finish, the remembered failure after a broken
 * context, else 0. */
static int idle(const nc_gpu_cnn *g)
{
    if (g->pending_n)
        return -EBUSY;
    return g->failed;
}

/* ---- building ------------------------------------------------------------ */

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

static void drop_graphs(nc_gpu_cnn *g)
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
    drop_graphs(g);
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
    g->fused_ok = nc_gpu_cnn_fused_match(g->L, g->n_layers);
    if (g->fused_ok) {
        int err = nc_gpu_cnn_fused_init();
        if (err)
            return err;
        NC_CUDA_CHECK(cudaMalloc(&g->d_feat, nb * 360 * sizeof(float)));
    }
    /* it leaves pool2's and pool3's activations in d_act[4] and d_act[6] */
    g->deep_ok = nc_gpu_cnn_fused_deep_match(g->L, g->n_layers);
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

extern "C" int nc_gpu_cnn_fused_ok(const nc_gpu_cnn *g) { return g && g->fused_ok; }

extern "C" int nc_gpu_cnn_path_ok(const nc_gpu_cnn *g, nc_gpu_cnn_path path)
{
    if (!g || path < NC_GPU_CNN_PATH_AUTO || path > NC_GPU_CNN_PATH_FUSED_DEEP)
        return 0;
    if (path == NC_GPU_CNN_PATH_FUSED_SMALL || path == NC_GPU_CNN_PATH_FUSED_BIG)
        return g->fused_ok;
    return path == NC_GPU_CNN_PATH_FUSED_DEEP ? g->deep_ok : 1;
}

extern "C" int nc_gpu_cnn_set_path(nc_gpu_cnn *g, nc_gpu_cnn_path path)
{
    if (!g || path < NC_GPU_CNN_PATH_AUTO || path > NC_GPU_CNN_PATH_FUSED_DEEP)
        return -EINVAL;
    if (g->pending_n)
        return -EBUSY;          /* a forward_start awaits its finish */
    if (!nc_gpu_cnn_path_ok(g, path))
        return -ENOTSUP;
    g->path = path;
    memset(g->tuned, 0, sizeof g->tuned);
    drop_graphs(g);
    return 0;
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

static int forward_layers(nc_gpu_cnn *g, const float *in, uint32_t n, float *out, unsigned bk)
{
    return forward_layers_from(g, 1, in, n, out, bk);
}

static int forward_whole(nc_gpu_cnn *g, const float *in, uint32_t n, float *out, unsigned bk)
{
    switch (g->whole[bk]) {
    case WHOLE_FUSED_SMALL: {
        /* features straight into pool2's activations, then the fully
           connected layers layer-wise (spread over the chip at small n) */
        int err = nc_gpu_cnn_fused_forward(g->L, in, g->d_act[4], NULL, n,
                                           NC_GPU_CNN_FUSED_SMALL, g->sm_count, g->stream);
        return err ? err : forward_layers_from(g, 5, g->d_act[4], n, out, bk);
    }
    case WHOLE_FUSED_BIG:
        return nc_gpu_cnn_fused_forward(g->L, in, g->d_feat, out, n, NC_GPU_CNN_FUSED_BIG,
                                        g->sm_count, g->stream);
    case WHOLE_FUSED_DEEP:
        return nc_gpu_cnn_fused_deep_forward(g->L, in, g->d_act[4], g->d_act[6], out, n,
                                             g->stream);
    default:
        return forward_layers(g, in, n, out, bk);
    }
}

/* Median-free quick timing: the best of 3 runs after one warm-up, in ms. */
template <typename F> static int time_best(nc_gpu_cnn *g, F run, float *ret_ms)
{
    float best = 1e30f;
    for (int r = 0; r < 4; r++) {
        NC_CUDA_CHECK(cudaEventRecord(g->ev0, g->stream));
        int err = run();
        if (err)
            return err;
        NC_CUDA_CHECK(cudaEventRecord(g->ev1, g->stream));
        NC_CUDA_CHECK(cudaEventSynchronize(g->ev1));
        float ms = 0.0f;
        NC_CUDA_CHECK(cudaEventElapsedTime(&ms, g->ev0, g->ev1));
        if (r > 0 && ms < best)
            best = ms;
    }
    *ret_ms = best;
    return 0;
}

/* What enqueue puts on the stream, captured as a graph and instantiated
 * into *ret_exec (which callers start as NULL, and free if set). */
template <typename F> static int capture_graph(nc_gpu_cnn *g, cudaGraphExec_t *ret_exec,
                                              F enqueue)
{
    cudaGraph_t graph = NULL;
    NC_CUDA_CHECK(cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal));
    int err = enqueue();
    cudaError_t e = cudaStreamEndCapture(g->stream, &graph);
    if (!err && e == cudaSuccess)
        e = cudaGraphInstantiate(ret_exec, graph, 0);
    if (graph)
        cudaGraphDestroy(graph);
    if (err)
        return err;
    NC_CUDA_CHECK(e);
    return 0;
}

/* The time of one whole forward of n images as the engine will run it:
 * replayed from a CUDA graph for n <= NC_GPU_CNN_GRAPH_MAX (start() does
 * so), else launched kernel by kernel.  Timing a graph-run size without a
 * graph would charge each candidate its launch overhead, which the graph
 * removes, and so favour the paths with fewer launches. */
static int time_whole(nc_gpu_cnn *g, uint32_t n, unsigned bk, float *ret_ms)
{
    float *out = g->d_act[g->n_layers - 1];
    if (n > NC_GPU_CNN_GRAPH_MAX)
        return time_best(g, [&] { return forward_whole(g, g->d_in, n, out, bk); }, ret_ms);
    cudaGraphExec_t exec = NULL;
    int err = capture_graph(g, &exec, [&] { return forward_whole(g, g->d_in, n, out, bk); });
    if (!err)
        err = time_best(g, [&] {
            NC_CUDA_CHECK(cudaGraphLaunch(exec, g->stream));
            return 0;
        }, ret_ms);
    if (exec)
        cudaGraphExecDestroy(exec);
    return err;
}

/* Choose the variants for bucket bk (forced, or timed at its batch size). */
static int tune(nc_gpu_cnn *g, unsigned bk)
{
    memset(g->blas_layer[bk], 0, sizeof g->blas_layer[bk]);
    g->whole[bk] = WHOLE_LAYERS;
    switch (g->path) {
    case NC_GPU_CNN_PATH_DIRECT: g->tuned[bk] = 1; return 0;
    case NC_GPU_CNN_PATH_UNROLLED:
        for (uint32_t l = 1; l < g->n_layers; l++)
            g->blas_layer[bk][l] = g->L[l].kind != NC_CNN_KIND_POOL;
        g->tuned[bk] = 1;
        return 0;
    case NC_GPU_CNN_PATH_FUSED_SMALL: g->whole[bk] = WHOLE_FUSED_SMALL; g->tuned[bk] = 1; return 0;
    case NC_GPU_CNN_PATH_FUSED_BIG: g->whole[bk] = WHOLE_FUSED_BIG; g->tuned[bk] = 1; return 0;
    case NC_GPU_CNN_PATH_FUSED_DEEP: g->whole[bk] = WHOLE_FUSED_DEEP; g->tuned[bk] = 1; return 0;
    default: break;
    }
    const uint32_t n = (1u << bk) < g->max_batch ? 1u << bk : g->max_batch;
    for (uint32_t l = 1; l < g->n_layers; l++) {
        const nc_gpu_cnn_layer *L = &g->L[l];
        const float *x = l == 1 ? g->d_in : g->d_act[l - 1];
        float *y = g->d_act[l];
        float t_direct = 0.0f, t_blas = 0.0f;
        int err = 0;
        if (L->kind == NC_CNN_KIND_CONV) {
            err = time_best(g, [&] { return nc_gpu_cnn_conv_forward(L, x, y, n, g->stream); },
                            &t_direct);
            if (!err)
                err = time_best(g, [&] {
                    return nc_gpu_cnn_conv_forward_unrolled(L, x, y, n, g->d_unroll,
                                                            g->unroll_cap, g->blas, g->stream);
                }, &t_blas);
        } else if (L->kind == NC_CNN_KIND_FULL) {
            err = time_best(g, [&] { return nc_gpu_cnn_full_forward(L, x, y, n, g->stream); },
                            &t_direct);
            if (!err)
                err = time_best(g, [&] {
                    return nc_gpu_cnn_full_forward_blas(L, x, y, n, g->blas, g->stream);
                }, &t_blas);
        } else {
            continue;
        }
        if (err)
            return err;
        g->blas_layer[bk][l] = t_blas < t_direct;
    }
    /* then the whole forwards the net fits, the layer-wise one first, each
       as it will run (time_whole): the fastest wins, the earliest on ties */
    uint8_t cand[3] = {WHOLE_LAYERS, 0, 0};
    int n_cand = 1;
    if (g->fused_ok) {
        cand[n_cand++] = WHOLE_FUSED_SMALL;
        cand[n_cand++] = WHOLE_FUSED_BIG;
    } else if (g->deep_ok) {
        cand[n_cand++] = WHOLE_FUSED_DEEP;
    }
    float t_best = 0.0f;
    uint8_t best = WHOLE_LAYERS;
    for (int c = 0; n_cand > 1 && c < n_cand; c++) {
        float t = 0.0f;
        g->whole[bk] = cand[c];
        int err = time_whole(g, n, bk, &t);
        if (err)
            return err;
        if (c == 0 || t < t_best) {
            t_best = t;
            best = cand[c];
        }
    }
    g->whole[bk] = best;
    g->tuned[bk] = 1;
    return 0;
}

static int ensure_tuned(nc_gpu_cnn *g, uint32_t n)
{
    const unsigned bk = bucket_of(n);
    if (g->tuned[bk])
        return 0;
    return tune(g, bk);
}

/* The whole host-to-host forward of n images in h_in, on the stream: copy in,
 * compute, copy out. */
static int forward_staged(nc_gpu_cnn *g, uint32_t n)
{
    const unsigned bk = bucket_of(n);
    float *out = g->d_act[g->n_layers - 1];
    NC_CUDA_CHECK(cudaMemcpyAsync(g->d_in, g->h_in, (size_t)n * g->n_inputs * sizeof(float),
                                  cudaMemcpyHostToDevice, g->stream));
    int err = forward_whole(g, g->d_in, n, out, bk);
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
    int err = ensure_tuned(g, n);
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
    err = ensure_tuned(g, n);
    if (!err)
        err = forward_whole(g, d_in, n, d_out, bucket_of(n));
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

extern "C" int nc_gpu_cnn_describe(const nc_gpu_cnn *g, uint32_t n, char *dst, size_t cap)
{
    if (!g || !dst || cap < 1 || n < 1)
        return -EINVAL;
    const unsigned bk = bucket_of(n);
    if (!g->tuned[bk])
        return -EAGAIN;
    static const char *const whole[] = {"layers", "fused-small", "fused-big", "fused-deep"};
    size_t len = (size_t)snprintf(dst, cap, "%s", whole[g->whole[bk]]);
    if (g->whole[bk] == WHOLE_LAYERS)
        for (uint32_t l = 1; l < g->n_layers && len < cap; l++) {
            const nc_gpu_cnn_layer *L = &g->L[l];
            const char *v = L->kind == NC_CNN_KIND_POOL ? "pool"
                            : g->blas_layer[bk][l] ? (L->kind == NC_CNN_KIND_CONV ? "unrolled" : "cublas")
                                                   : "direct";
            len += (size_t)snprintf(dst + len, cap - len, "%s%s", l == 1 ? ":" : ",", v);
        }
    return len < cap ? 0 : -ERANGE;
}

/* ---- backward and training ----------------------------------------------- */

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
    if ((err = forward_layers(g, x, n, out, bucket_of(n))))
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
    int err = ensure_tuned(g, n);
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
        err = ensure_tuned(g, batch);
    if (!err && n % batch)
        err = ensure_tuned(g, n % batch);
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

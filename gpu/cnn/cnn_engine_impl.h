/* gpu/cnn/cnn_engine_impl.h — the resident CNN engine's private state,
 * shared by the files that make it: cnn_engine.cu (make, upload, forward,
 * free), cnn_engine_tune.cu (the path each batch size runs) and
 * cnn_engine_train.cu (backward, optimisers, training).  Nothing outside
 * gpu/cnn/cnn_engine*.cu includes it.  Layer: gpu (C++, CUDA). */
#ifndef NC_GPU_CNN_ENGINE_IMPL_H
#define NC_GPU_CNN_ENGINE_IMPL_H

#include "cnn_engine_dev.h"

#include <cublas_v2.h>
#include <errno.h>

#include "cnn_act.cuh"
#include "cnn_blas.cuh"
#include "cnn_conv.cuh"
#include "cnn_full.cuh"
#include "cnn_fused_ops.h"
#include "cnn_fused_deep.cuh"
#include "cnn_fused_deep_big.cuh"
#include "cnn_layer.h"
#include "cnn_norm.cuh"
#include "cnn_pool.cuh"
#include "cuda_check.cuh"
#include "deform.cuh"

#define BUCKETS 17u                         /* batch sizes 1, 2, 4, ... 65536 */
#define UNROLL_CAP ((size_t)64 << 20)       /* floats of unrolling scratch, at most */
#define BLAS_WORKSPACE ((size_t)32 << 20)   /* bytes: cuBLAS under graph capture */

enum { WHOLE_LAYERS = 0, WHOLE_FUSED_SMALL = 1, WHOLE_FUSED_BIG = 2, WHOLE_FUSED_DEEP = 3,
       WHOLE_DEEP_BIG = 4 };
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
    const nc_gpu_cnn_fused_ops *fused;      /* and their kernels (cnn_fused_ops.h) */
    int deep_ok;                            /* the deep column's fused path fits */
    int deep_big_ok;                        /* its persistent conv1..pool2 fits (and the device) */
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

static inline unsigned bucket_of(uint32_t n)
{
    unsigned b = 0;
    while ((1u << b) < n && b + 1 < BUCKETS)
        b++;
    return b;
}

/* Remember a broken context: every later call answers -EIO. */
static inline int note(nc_gpu_cnn *g, int err)
{
    if (err == -EIO)
        g->failed = -EIO;
    return err;
}

/* Whether g can take a call that uses the device: -EBUSY while a
 * forward_start awaits its finish, the remembered failure after a broken
 * context, else 0. */
static inline int idle(const nc_gpu_cnn *g)
{
    if (g->pending_n)
        return -EBUSY;
    return g->failed;
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


/* ---- cnn_engine.cu ---- */
/* The shallow column's fused forward, where installed (cnn_fused_ops.h). */
extern const nc_gpu_cnn_fused_ops *cnn_eng_fused_ops;
void cnn_eng_drop_graphs(nc_gpu_cnn *g);
/* Layer-wise forward of n images from in (device) with bucket bk's
 * variants; the last layer writes out. */
int cnn_eng_forward_layers(nc_gpu_cnn *g, const float *in, uint32_t n, float *out, unsigned bk);
/* The forward bucket bk runs (layer-wise or a fused one). */
int cnn_eng_forward_whole(nc_gpu_cnn *g, const float *in, uint32_t n, float *out, unsigned bk);

/* ---- cnn_engine_tune.cu ---- */
/* Bucket n's path chosen (forced, or timed on its first use). */
int cnn_eng_ensure_tuned(nc_gpu_cnn *g, uint32_t n);

#endif

/* gpu/cnn/cnn_engine_tune.cu — which forward path the resident CNN engine
 * runs for each batch-size bucket (powers of two): forced by
 * nc_gpu_cnn_set_path, or, under NC_GPU_CNN_PATH_AUTO, timed on the
 * bucket's first forward: per layer the direct kernel against the cuBLAS
 * one, then the whole fused forwards the net fits against that, each as it
 * will run.  Also what a bucket runs, as text (nc_gpu_cnn_describe).
 * Layer: gpu. */
#include "cnn_engine_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" int nc_gpu_cnn_fused_ok(const nc_gpu_cnn *g) { return g && g->fused_ok; }

extern "C" int nc_gpu_cnn_path_ok(const nc_gpu_cnn *g, nc_gpu_cnn_path path)
{
    if (!g || path < NC_GPU_CNN_PATH_AUTO || path > NC_GPU_CNN_PATH_DEEP_BIG)
        return 0;
    if (path == NC_GPU_CNN_PATH_FUSED_SMALL || path == NC_GPU_CNN_PATH_FUSED_BIG)
        return g->fused_ok;
    if (path == NC_GPU_CNN_PATH_DEEP_BIG)
        return g->deep_big_ok;
    return path == NC_GPU_CNN_PATH_FUSED_DEEP ? g->deep_ok : 1;
}

extern "C" int nc_gpu_cnn_set_path(nc_gpu_cnn *g, nc_gpu_cnn_path path)
{
    if (!g || path < NC_GPU_CNN_PATH_AUTO || path > NC_GPU_CNN_PATH_DEEP_BIG)
        return -EINVAL;
    if (g->pending_n)
        return -EBUSY;          /* a forward_start awaits its finish */
    if (!nc_gpu_cnn_path_ok(g, path))
        return -ENOTSUP;
    g->path = path;
    memset(g->tuned, 0, sizeof g->tuned);
    cnn_eng_drop_graphs(g);
    return 0;
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

/* The time of one whole forward of n images as the engine will run it:
 * replayed from a CUDA graph for n <= NC_GPU_CNN_GRAPH_MAX (start() does
 * so), else launched kernel by kernel.  Timing a graph-run size without a
 * graph would charge each candidate its launch overhead, which the graph
 * removes, and so favour the paths with fewer launches. */
static int time_whole(nc_gpu_cnn *g, uint32_t n, unsigned bk, float *ret_ms)
{
    float *out = g->d_act[g->n_layers - 1];
    if (n > NC_GPU_CNN_GRAPH_MAX)
        return time_best(g, [&] { return cnn_eng_forward_whole(g, g->d_in, n, out, bk); }, ret_ms);
    cudaGraphExec_t exec = NULL;
    int err = capture_graph(g, &exec, [&] { return cnn_eng_forward_whole(g, g->d_in, n, out, bk); });
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
    /* per layer, direct against cuBLAS; forced deep-big runs only the
       layers after pool2 layer-wise, so only those are timed */
    const uint32_t n = (1u << bk) < g->max_batch ? 1u << bk : g->max_batch;
    const uint32_t first = g->path == NC_GPU_CNN_PATH_DEEP_BIG ? 5 : 1;
    for (uint32_t l = first; l < g->n_layers; l++) {
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
    if (g->path == NC_GPU_CNN_PATH_DEEP_BIG) {
        g->whole[bk] = WHOLE_DEEP_BIG;
        g->tuned[bk] = 1;
        return 0;
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
    /* deep-big is not a candidate until test_gpu_cnn passes on it from a
       clean build (docs/benchmarks.md); test_gpu_cnn and neocog-bench-gpu
       force it */
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

int cnn_eng_ensure_tuned(nc_gpu_cnn *g, uint32_t n)
{
    const unsigned bk = bucket_of(n);
    if (g->tuned[bk])
        return 0;
    return tune(g, bk);
}

extern "C" int nc_gpu_cnn_describe(const nc_gpu_cnn *g, uint32_t n, char *dst, size_t cap)
{
    if (!g || !dst || cap < 1 || n < 1)
        return -EINVAL;
    const unsigned bk = bucket_of(n);
    if (!g->tuned[bk])
        return -EAGAIN;
    static const char *const whole[] = {"layers", "fused-small", "fused-big", "fused-deep",
                                        "deep-big"};
    size_t len = (size_t)snprintf(dst, cap, "%s", whole[g->whole[bk]]);
    /* the layers that run layer-wise: all, or those after deep-big's pool2 */
    const uint32_t first = g->whole[bk] == WHOLE_LAYERS ? 1 : g->whole[bk] == WHOLE_DEEP_BIG ? 5 : 0;
    if (first)
        for (uint32_t l = first; l < g->n_layers && len < cap; l++) {
            const nc_gpu_cnn_layer *L = &g->L[l];
            const char *v = L->kind == NC_CNN_KIND_POOL ? "pool"
                            : g->blas_layer[bk][l] ? (L->kind == NC_CNN_KIND_CONV ? "unrolled" : "cublas")
                                                   : "direct";
            len += (size_t)snprintf(dst + len, cap - len, "%s%s", l == first ? ":" : ",", v);
        }
    return len < cap ? 0 : -ERANGE;
}

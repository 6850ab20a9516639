/* gpu/neocog/neocog_engine_graph.cu — how a batch is queued on the device:
 * CUDA graphs, lanes and streams.
 *
 * Layer: gpu.  Streams: `up` copies chunk i + 1 to the device while `run`
 * computes chunk i and `down` returns chunk i - 1's answers; one event per
 * hand-over (a wait takes the event's latest record, so one of each is
 * enough when the calls are issued in order).  With two lanes (the default)
 * the odd chunks of a batch run on lane 1's buffers and stream, forked
 * from `run` and joined back to it, so two chunks' kernels overlap.  Batches of up to
 * NC_GPU_NEOCOG_GRAPH_MAX that fit one chunk replay a captured graph (copies
 * and kernels on `run`), one per batch size, made on first use; every
 * setting that changes what a forward runs drops them. */
#include "neocog_engine_impl.h"

#include <errno.h>
#include <string.h>

/* Lane 1, made on first use: 0 when it is there (lanes == 2), a negative
 * errno when it is not wanted or cannot be made (out of memory: the
 * engine then runs every chunk on lane 0, as with one lane). */
static int lane1_ready(nc_gpu_neocog *e)
{
    nc_lane *x = &e->ln[1];
    if (e->lanes < 2)
        return -EINVAL;
    if (x->st)
        return 0;
    cudaError_t ce = cudaStreamCreateWithFlags(&x->st, cudaStreamNonBlocking);
    if (ce == cudaSuccess)
        ce = cudaEventCreateWithFlags(&x->ev, cudaEventDisableTiming);
    int r = ce == cudaSuccess ? neocog_eng_lane_alloc(e, x, &e->ln[0], x->st)
                              : nc_gpu_record_error(ce, "lane 1 stream", __func__, __FILE__,
                                                    __LINE__);
    if (r < 0) {
        neocog_eng_lane_free(x);
        (void)cudaGetLastError();       /* out of memory is not sticky */
        return r == -EIO ? -ENOMEM : r;
    }
    return 0;
}

void neocog_eng_drop_graphs(nc_gpu_neocog *e)
{
    for (int i = 0; i <= NC_GPU_NEOCOG_GRAPH_MAX; i++) {
        if (e->graph_dev[i])
            cudaGraphExecDestroy(e->graph_dev[i]);
        if (e->graph_io[i])
            cudaGraphExecDestroy(e->graph_io[i]);
        e->graph_dev[i] = e->graph_io[i] = NULL;
    }
}

/* Capture the network for n images into *ret (io: with the copies from
 * and to the pinned buffers). */
static int capture(nc_gpu_neocog *e, uint32_t n, int io, cudaGraphExec_t *ret)
{
    cudaGraph_t graph = NULL;
    NC_CUDA_CHECK(cudaStreamBeginCapture(e->run, cudaStreamCaptureModeThreadLocal));
    int r = 0;
    if (io) {
        cudaError_t ce = cudaMemcpyAsync(e->d_in, e->h_in, (size_t)n * e->in_cells * sizeof(float),
                                         cudaMemcpyHostToDevice, e->run);
        if (ce != cudaSuccess)
            r = nc_gpu_record_error(ce, "cudaMemcpyAsync(h2d)", __func__, __FILE__, __LINE__);
    }
    if (r == 0 || !io)
        r = neocog_eng_run_net(e, &e->ln[0], neocog_eng_eff_variant(e, n), n, e->d_in,
                               e->d_scores, e->d_labels, e->run);
    if (r == 0 && io) {
        cudaError_t ce = cudaMemcpyAsync(e->h_scores, e->d_scores,
                                         (size_t)n * e->n_classes * sizeof(float),
                                         cudaMemcpyDeviceToHost, e->run);
        if (ce == cudaSuccess)
            ce = cudaMemcpyAsync(e->h_labels, e->d_labels, n * sizeof(int32_t),
                                 cudaMemcpyDeviceToHost, e->run);
        if (ce != cudaSuccess)
            r = nc_gpu_record_error(ce, "cudaMemcpyAsync(d2h)", __func__, __FILE__, __LINE__);
    }
    cudaError_t ce = cudaStreamEndCapture(e->run, &graph);
    if (r < 0) {
        if (graph)
            cudaGraphDestroy(graph);
        return r;
    }
    NC_CUDA_CHECK(ce);
    ce = cudaGraphInstantiate(ret, graph, 0);
    cudaGraphDestroy(graph);
    NC_CUDA_CHECK(ce);
    return 0;
}

int neocog_eng_graph_fits(const nc_gpu_neocog *e, uint32_t n)
{
    return n <= NC_GPU_NEOCOG_GRAPH_MAX && n <= e->chunk;
}

/* Whether a batch of n runs its chunks on both lanes (odd chunks on lane
 * 1), which then starts after everything queued on `run` so far.  One
 * lane: a batch of one chunk, lanes set to 1, or no room for lane 1. */
static int lanes_fork(nc_gpu_neocog *e, uint32_t n)
{
    if (n <= e->chunk || lane1_ready(e) < 0)
        return 0;
    if (cudaEventRecord(e->ev_fork, e->run) != cudaSuccess ||
        cudaStreamWaitEvent(e->ln[1].st, e->ev_fork, 0) != cudaSuccess) {
        (void)cudaGetLastError();       /* one lane then; a sticky error shows next */
        return 0;
    }
    return 1;
}

/* `run` waits for lane 1's chunks, so that what follows on it (copies,
 * events, a sync) sees the whole batch. */
static int lanes_join(nc_gpu_neocog *e)
{
    NC_CUDA_CHECK(cudaEventRecord(e->ln[1].ev, e->ln[1].st));
    NC_CUDA_CHECK(cudaStreamWaitEvent(e->run, e->ln[1].ev, 0));
    return 0;
}

int neocog_eng_enqueue_dev(nc_gpu_neocog *e, uint32_t n, int graph)
{
    if (graph && neocog_eng_graph_fits(e, n)) {
        if (!e->graph_dev[n]) {
            int r = capture(e, n, 0, &e->graph_dev[n]);
            if (r < 0)
                return r;
        }
        NC_CUDA_CHECK(cudaGraphLaunch(e->graph_dev[n], e->run));
        return 0;
    }
    const int v = neocog_eng_eff_variant(e, n);
    const int two = lanes_fork(e, n);
    int r = 0;
    uint32_t i = 0;
    for (uint32_t c0 = 0; r == 0 && c0 < n; c0 += e->chunk, i++) {
        const uint32_t m = n - c0 < e->chunk ? n - c0 : e->chunk;
        nc_lane *x = &e->ln[two ? i & 1u : 0u];
        r = neocog_eng_run_net(e, x, v, m, e->d_in + (size_t)c0 * e->in_cells,
                               e->d_scores + (size_t)c0 * e->n_classes, e->d_labels + c0,
                               x->st ? x->st : e->run);
    }
    const int rj = two ? lanes_join(e) : 0;
    return r < 0 ? r : rj;
}

/* Chunked forward with the copies overlapped: see the top of the file. */
int neocog_eng_forward_chunks(nc_gpu_neocog *e, uint32_t n)
{
    const int v = neocog_eng_eff_variant(e, n);
    const int two = lanes_fork(e, n);
    uint32_t i = 0;
    for (uint32_t c0 = 0; c0 < n; c0 += e->chunk, i++) {
        const uint32_t m = n - c0 < e->chunk ? n - c0 : e->chunk;
        nc_lane *x = &e->ln[two ? i & 1u : 0u];
        cudaStream_t st = x->st ? x->st : e->run;
        float *din = e->d_in + (size_t)c0 * e->in_cells;
        NC_CUDA_CHECK(cudaMemcpyAsync(din, e->h_in + (size_t)c0 * e->in_cells,
                                      (size_t)m * e->in_cells * sizeof(float),
                                      cudaMemcpyHostToDevice, e->up));
        NC_CUDA_CHECK(cudaEventRecord(e->ev_up, e->up));
        NC_CUDA_CHECK(cudaStreamWaitEvent(st, e->ev_up, 0));
        int r = neocog_eng_run_net(e, x, v, m, din, e->d_scores + (size_t)c0 * e->n_classes,
                                   e->d_labels + c0, st);
        if (r < 0) {
            if (two)
                lanes_join(e);
            return r;
        }
        NC_CUDA_CHECK(cudaEventRecord(e->ev_done, st));
        NC_CUDA_CHECK(cudaStreamWaitEvent(e->down, e->ev_done, 0));
        NC_CUDA_CHECK(cudaMemcpyAsync(e->h_scores + (size_t)c0 * e->n_classes,
                                      e->d_scores + (size_t)c0 * e->n_classes,
                                      (size_t)m * e->n_classes * sizeof(float),
                                      cudaMemcpyDeviceToHost, e->down));
        NC_CUDA_CHECK(cudaMemcpyAsync(e->h_labels + c0, e->d_labels + c0,
                                      m * sizeof(int32_t), cudaMemcpyDeviceToHost, e->down));
    }
    return 0;             /* forward_wait waits for lane 1 too */
}

/* Wait for what forward_chunks or forward_graph queued: lane 1 (if it ran),
 * the copies out, and the engine's stream. */
int neocog_eng_forward_wait(nc_gpu_neocog *e)
{
    if (e->ln[1].st)
        NC_CUDA_CHECK(cudaStreamSynchronize(e->ln[1].st));
    NC_CUDA_CHECK(cudaStreamSynchronize(e->down));
    NC_CUDA_CHECK(cudaStreamSynchronize(e->run));
    return 0;
}

int neocog_eng_forward_graph(nc_gpu_neocog *e, uint32_t n)
{
    if (!e->graph_io[n]) {
        int r = capture(e, n, 1, &e->graph_io[n]);
        if (r < 0)
            return r;
    }
    NC_CUDA_CHECK(cudaGraphLaunch(e->graph_io[n], e->run));
    return 0;
}

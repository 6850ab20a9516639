/* gpu/neocog/neocog_engine.cu — the resident neocognitron's serving calls:
 * make an engine from a net (sizes and geometry checked, then everything
 * allocated by neocog_engine_mem.cu), forward a batch (start / finish, the
 * chunks and graphs of neocog_engine_graph.cu), the answer by UC4 or the
 * interpolating-vector classifier, and free; plus the synchronous pieces
 * (upload, enqueue, download) that benchmarks and tests drive one at a
 * time.  The layer kernels of gpu/neocog/neocog_{g,s,c,class}.cu are
 * strung together in neocog_engine_sched.cu; the autotuner is
 * neocog_engine_tune.cu and the settings it turns are neocog_engine_knobs.cu.
 *
 * Limits: a stage whose S-layer the chosen kernel cannot take runs the GEMM
 * path instead, and a C-layer the chosen kernel refuses runs the staged C
 * kernel (neocog_engine_sched.cu), so every net core can build runs,
 * whatever variant is set. */
#include "neocog_engine_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

extern "C" void nc_gpu_neocog_free(nc_gpu_neocog *e)
{
    if (!e)
        return;
    cudaSetDevice(e->device);
    if (e->run)
        cudaStreamSynchronize(e->run);
    neocog_eng_drop_graphs(e);
    for (uint32_t i = 0; i < NC_GPU_NEOCOG_MAX_LANES; i++)
        neocog_eng_lane_free(&e->ln[i]);
    for (uint32_t l = 0; l < NC_NEOCOG_MAX_STAGES; l++)
        cudaFree(e->l_wpad[l]);
    nc_gpu_neocog_iv_free(e->iv);
    cudaFree(e->d_weights);
    cudaFree(e->d_split_count);
    cudaFree(e->d_split_part);
    cudaFree(e->d_in);
    cudaFree(e->d_scores);
    cudaFree(e->d_labels);
    cudaFreeHost(e->h_in);
    cudaFreeHost(e->h_scores);
    cudaFreeHost(e->h_labels);
    if (e->run) cudaStreamDestroy(e->run);
    if (e->up) cudaStreamDestroy(e->up);
    if (e->down) cudaStreamDestroy(e->down);
    if (e->ev_up) cudaEventDestroy(e->ev_up);
    if (e->ev_done) cudaEventDestroy(e->ev_done);
    if (e->ev_fork) cudaEventDestroy(e->ev_fork);
    (void)cudaGetLastError();   /* a sticky error stays; the rest is cleared */
    free(e);
}

extern "C" int nc_gpu_neocog_new(const nc_neocog *net, int device, uint32_t max_batch,
                                 nc_gpu_neocog **ret_eng)
{
    if (!net || !ret_eng || max_batch < 1 || max_batch > (1u << 20) || !net->labels)
        return -EINVAL;
    const nc_neocog_arch *A = &net->arch;
    const uint32_t L = A->n_stages;
    for (uint32_t l = 0; l < L; l++)
        if (net->n_planes[l] < 1)
            return -EINVAL;
    int n_dev = 0;
    int r = nc_gpu_device_count(&n_dev);
    if (r < 0)
        return r;
    if (device < 0 || device >= n_dev)
        return -ENODEV;
    nc_gpu_neocog *e = (nc_gpu_neocog *)calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    e->device = device;
    e->variant = NC_GPU_NEOCOG_AUTO;
    e->auto_min = NC_GPU_NEOCOG_AUTO_MIN;
    e->c_min = NC_GPU_NEOCOG_C_MIN;
    e->lanes = NC_GPU_NEOCOG_MAX_LANES;
    e->max_batch = max_batch;
    e->chunk_cap = e->chunk = max_batch < NC_GPU_NEOCOG_CHUNK ? max_batch : NC_GPU_NEOCOG_CHUNK;
    e->n_stages = L;
    e->n_classes = A->n_classes;
    e->in_size = A->in_size;
    e->in_cells = A->in_size * A->in_size;
    /* geometry: everything must fit the kernels' parameter tables */
    r = nc_gpu_neocog_geom_init(net->g_ix, net->g_w, &e->g.g);
    e->g.cut = A->g_cut;
    e->layer_size[0] = A->g_size;
    e->layer_stride[0] = 8;
    for (uint32_t l = 0; r == 0 && l < L; l++) {
        e->k[l] = net->n_planes[l];
        nc_gpu_neocog_s_args *s = &e->s[l];
        r = nc_gpu_neocog_geom_init(net->s_ix[l], net->s_c[l], &s->g);
        s->k_in = l == 0 ? 2u : net->n_planes[l - 1];
        s->in_stride = l == 0 ? 8u : nc_neocog_kstride(net->n_planes[l - 1]);
        s->k_out = e->k[l];
        s->theta = A->stage[l].theta;
        e->layer_size[1 + 2 * l] = A->stage[l].s_size;
        e->layer_stride[1 + 2 * l] = nc_neocog_kstride(e->k[l]);
        if (r == 0 && net->c_ix[l]) {
            r = nc_gpu_neocog_geom_init(net->c_ix[l], net->c_d[l], &e->c[l].g);
            e->c[l].k = e->k[l];
            e->layer_size[2 + 2 * l] = A->stage[l].c_size;
            e->layer_stride[2 + 2 * l] = nc_neocog_kstride(e->k[l]);
        }
    }
    for (uint32_t l = 0; r == 0 && l < L; l++) {
        if (net->c_ix[l] ? l + 1 == L : l + 1 != L)
            r = -EINVAL;
        for (int v = 0; v < NC_GPU_NEOCOG_N_VARIANTS; v++)
            e->block[v][l] = nc_gpu_neocog_s_default_block(v, e->k[l]);
    }
    for (uint32_t c = 0; r == 0 && c < e->k[L - 1]; c++)
        if (net->labels[c] >= e->n_classes)
            r = -EINVAL;
    if (r == 0) {
        r = cudaSetDevice(device) == cudaSuccess ? 0
            : nc_gpu_record_error(cudaGetLastError(), "cudaSetDevice(device)", __func__,
                                  __FILE__, __LINE__);
    }
    if (r == 0)
        r = neocog_eng_alloc_all(e, net);
    if (r < 0) {
        nc_gpu_neocog_free(e);
        return r;
    }
    e->gs1_ok = nc_gpu_neocog_gs1_check(&e->g, &e->s[0]) == 0;
    e->gs1 = (uint32_t)e->gs1_ok;
    *ret_eng = e;
    return 0;
}

extern "C" int nc_gpu_neocog_set_iv(nc_gpu_neocog *e, const nc_neocog *net,
                                    const nc_neocog_iv *iv)
{
    int r = enter(e);
    if (r < 0)
        return r;
    nc_gpu_neocog_iv *d = NULL;
    if (iv) {
        /* the engine's own layers must be the ones iv was made for */
        if (!net || net->arch.n_stages != e->n_stages || net->arch.n_classes != e->n_classes)
            return -EINVAL;
        for (uint32_t l = 0; l < e->n_stages; l++)
            if (net->n_planes[l] != e->k[l] ||
                net->arch.stage[l].s_size != e->layer_size[1 + 2 * l])
                return -EINVAL;
        if ((r = nc_gpu_neocog_iv_new(net, iv, &d)) < 0)
            return fail(e, r);
    }
    NC_CUDA_CHECK(cudaStreamSynchronize(e->run));
    neocog_eng_drop_graphs(e);
    nc_gpu_neocog_iv_free(e->iv);
    e->iv = d;
    return 0;
}

extern "C" int nc_gpu_neocog_enqueue(nc_gpu_neocog *e, uint32_t n, int graph)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (n < 1 || n > e->max_batch)
        return -EINVAL;
    return fail(e, neocog_eng_enqueue_dev(e, n, graph));
}

extern "C" int nc_gpu_neocog_enqueue_gs1(nc_gpu_neocog *e, uint32_t n)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (n < 1 || n > e->chunk || !e->gs1_ok)
        return -EINVAL;
    return fail(e, neocog_eng_run_gs1(e, &e->ln[0], n, e->d_in, e->run));
}

extern "C" int nc_gpu_neocog_enqueue_layer(nc_gpu_neocog *e, int layer, uint32_t n)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (n < 1 || n > e->chunk || layer < 0 || layer > 2 * (int)e->n_stages)
        return -EINVAL;
    return fail(e, neocog_eng_run_layer(e, &e->ln[0], neocog_eng_eff_variant(e, n), layer, n,
                                        e->d_in, e->d_scores, e->d_labels, e->run));
}

static int sync_run(nc_gpu_neocog *e)
{
    NC_CUDA_CHECK(cudaStreamSynchronize(e->run));
    return 0;
}

extern "C" int nc_gpu_neocog_sync(nc_gpu_neocog *e)
{
    int r = enter(e);
    return r < 0 ? r : fail(e, sync_run(e));
}

static int upload(nc_gpu_neocog *e, const float *inputs, uint32_t n)
{
    memcpy(e->h_in, inputs, (size_t)n * e->in_cells * sizeof(float));
    NC_CUDA_CHECK(cudaMemcpyAsync(e->d_in, e->h_in, (size_t)n * e->in_cells * sizeof(float),
                                  cudaMemcpyHostToDevice, e->run));
    NC_CUDA_CHECK(cudaStreamSynchronize(e->run));
    return 0;
}

extern "C" int nc_gpu_neocog_upload(nc_gpu_neocog *e, const float *inputs, uint32_t n)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (!inputs || n < 1 || n > e->max_batch)
        return -EINVAL;
    return fail(e, upload(e, inputs, n));
}

static void results_out(const nc_gpu_neocog *e, uint32_t n, nc_neocog_result *ret)
{
    for (uint32_t i = 0; i < n; i++) {
        memset(&ret[i], 0, sizeof ret[i]);
        ret[i].label = e->h_labels[i];
        ret[i].n_classes = e->n_classes;
        memcpy(ret[i].score, e->h_scores + (size_t)i * e->n_classes,
               e->n_classes * sizeof(float));
    }
}

static int download_results(nc_gpu_neocog *e, uint32_t n)
{
    NC_CUDA_CHECK(cudaMemcpyAsync(e->h_scores, e->d_scores,
                                  (size_t)n * e->n_classes * sizeof(float),
                                  cudaMemcpyDeviceToHost, e->run));
    NC_CUDA_CHECK(cudaMemcpyAsync(e->h_labels, e->d_labels, n * sizeof(int32_t),
                                  cudaMemcpyDeviceToHost, e->run));
    NC_CUDA_CHECK(cudaStreamSynchronize(e->run));
    return 0;
}

extern "C" int nc_gpu_neocog_download_results(nc_gpu_neocog *e, uint32_t n,
                                              nc_neocog_result *ret)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (!ret || n < 1 || n > e->max_batch)
        return -EINVAL;
    if ((r = fail(e, download_results(e, n))) < 0)
        return r;
    results_out(e, n, ret);
    return 0;
}

static int download_layer(nc_gpu_neocog *e, int layer, uint32_t n, float *out)
{
    const size_t s = e->layer_size[layer], n_pos = (size_t)n * s * s;
    const size_t ks = e->layer_stride[layer];
    NC_CUDA_CHECK(cudaMemcpyAsync(out, e->ln[0].act[layer], n_pos * ks * sizeof(float),
                                  cudaMemcpyDeviceToHost, e->run));
    /* an S-layer before a C-layer may leave its unoccupied positions
     * unwritten (the C kernels read only occupied ones): they are zeros */
    const int s_layer = layer % 2 == 1, last = layer + 1 == 2 * (int)e->n_stages;
    uint8_t *occ = NULL;
    if (s_layer && !last) {
        occ = (uint8_t *)malloc(n_pos);
        if (!occ)
            return -ENOMEM;
        cudaError_t ce = cudaMemcpyAsync(occ, e->ln[0].occ[layer], n_pos,
                                         cudaMemcpyDeviceToHost, e->run);
        if (ce != cudaSuccess) {
            free(occ);
            NC_CUDA_CHECK(ce);
        }
    }
    cudaError_t ce = cudaStreamSynchronize(e->run);
    for (size_t p = 0; occ && ce == cudaSuccess && p < n_pos; p++)
        if (!occ[p])
            memset(out + p * ks, 0, ks * sizeof(float));
    free(occ);
    NC_CUDA_CHECK(ce);
    return 0;
}

extern "C" int nc_gpu_neocog_download_layer(nc_gpu_neocog *e, int layer, uint32_t n,
                                            float *out)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (!out || n < 1 || n > e->chunk || layer < 0 || layer >= 2 * (int)e->n_stages)
        return -EINVAL;
    return fail(e, download_layer(e, layer, n, out));
}

extern "C" int nc_gpu_neocog_forward_start(nc_gpu_neocog *e, const float *inputs, uint32_t n)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (!inputs || n < 1 || n > e->max_batch || e->pending)
        return -EINVAL;
    memcpy(e->h_in, inputs, (size_t)n * e->in_cells * sizeof(float));
    r = neocog_eng_graph_fits(e, n) ? neocog_eng_forward_graph(e, n)
                                    : neocog_eng_forward_chunks(e, n);
    if (r < 0)
        return fail(e, r);
    e->pending = n;
    return 0;
}

extern "C" int nc_gpu_neocog_forward_finish(nc_gpu_neocog *e, uint32_t n,
                                            nc_neocog_result *ret)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (!ret || n < 1 || n != e->pending)
        return -EINVAL;
    e->pending = 0;
    if ((r = neocog_eng_forward_wait(e)) < 0)
        return fail(e, r);
    results_out(e, n, ret);
    return 0;
}

extern "C" int nc_gpu_neocog_forward(nc_gpu_neocog *e, const float *inputs, uint32_t n,
                                     nc_neocog_result *ret)
{
    if (!ret)
        return -EINVAL;
    int r = nc_gpu_neocog_forward_start(e, inputs, n);
    return r < 0 ? r : nc_gpu_neocog_forward_finish(e, n, ret);
}

extern "C" void *nc_gpu_neocog_stream(nc_gpu_neocog *e)
{
    return e ? (void *)e->run : NULL;
}

extern "C" uint32_t nc_gpu_neocog_get_chunk(const nc_gpu_neocog *e)
{
    return e ? e->chunk : 0;
}

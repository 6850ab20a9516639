/* gpu/neocog/neocog_engine_mem.cu — what the resident neocognitron keeps on
 * the device and the host: the weights, plane labels and warp kernels' taps
 * uploaded once as one block; the input, score and label buffers of a whole
 * batch and their pinned host twins; the streams and events; each lane's
 * chunk buffers (every layer's activations and occupancy maps, the GEMM
 * path's scratch: one chunk's, reused by every chunk, so that they stay in
 * L2); the split kernels' scratch; and, made only while a
 * stage runs the list or row kernel, that stage's input lists and
 * row-kernel weights.  Layer: gpu. */
#include "neocog_engine_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Stage l's input lists in lane x, for chunk_cap characters. */
static int lane_lists_alloc(const nc_gpu_neocog *e, nc_lane *x, uint32_t l)
{
    const size_t ni = e->layer_size[2 * l], n_pos = (size_t)e->chunk_cap * ni * ni;
    x->l_ready_mul[l] = 0;
    NC_CUDA_CHECK(cudaMalloc((void **)&x->l_cnt[l], n_pos * sizeof(uint16_t)));
    NC_CUDA_CHECK(cudaMalloc((void **)&x->l_q[l], n_pos * sizeof(float)));
    NC_CUDA_CHECK(cudaMalloc((void **)&x->l_ent[l], n_pos * e->s[l].k_in * sizeof(int2)));
    return 0;
}

static void lane_lists_free(nc_lane *x, uint32_t l)
{
    cudaFree(x->l_cnt[l]);
    cudaFree(x->l_q[l]);
    cudaFree(x->l_ent[l]);
    x->l_cnt[l] = NULL;
    x->l_q[l] = NULL;
    x->l_ent[l] = NULL;
    x->l_ready_mul[l] = 0;
}

/* Lane x's chunk buffers: every layer's activations and occupancy map,
 * the GEMM path's scratch (its weights permuted on st), and the input
 * lists of every stage where `like` (may be NULL) has them.  The engine's
 * sizes and S-layer arguments are set. */
int neocog_eng_lane_alloc(const nc_gpu_neocog *e, nc_lane *x, const nc_lane *like, cudaStream_t st)
{
    size_t af = 0, ob = 0;
    const uint32_t n_layers = 2 * e->n_stages;  /* UG .. last S */
    for (uint32_t y = 0; y < n_layers; y++) {
        const size_t n = (size_t)e->layer_size[y] * e->layer_size[y];
        af += (n * e->layer_stride[y] * e->chunk_cap + 63) & ~(size_t)63;
        ob += (n * e->chunk_cap + 255) & ~(size_t)255;
    }
    NC_CUDA_CHECK(cudaMalloc(&x->d_act, af * sizeof(float)));
    NC_CUDA_CHECK(cudaMalloc(&x->d_occ, ob));
    float *a = x->d_act;
    uint8_t *o = x->d_occ;
    for (uint32_t y = 0; y < n_layers; y++) {
        const size_t n = (size_t)e->layer_size[y] * e->layer_size[y];
        x->act[y] = a;
        x->occ[y] = o;
        a += (n * e->layer_stride[y] * e->chunk_cap + 63) & ~(size_t)63;
        o += (n * e->chunk_cap + 255) & ~(size_t)255;
    }
    for (uint32_t l = 0; l < e->n_stages; l++) {
        int r = nc_gpu_neocog_gemm_new(&e->s[l], e->chunk_cap, st, &x->gemm[l]);
        if (r == 0 && like && like->l_ent[l])
            r = lane_lists_alloc(e, x, l);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Everything lane x holds (a lane of its own: its stream waited for
 * first); x is left empty. */
void neocog_eng_lane_free(nc_lane *x)
{
    if (x->st)
        cudaStreamSynchronize(x->st);
    for (uint32_t l = 0; l < NC_NEOCOG_MAX_STAGES; l++) {
        nc_gpu_neocog_gemm_free(x->gemm[l]);
        lane_lists_free(x, l);
    }
    cudaFree(x->d_act);
    cudaFree(x->d_occ);
    if (x->st)
        cudaStreamDestroy(x->st);
    if (x->ev)
        cudaEventDestroy(x->ev);
    memset(x, 0, sizeof *x);
}

/* Everything on the device and the host; e's sizes are set. */
int neocog_eng_alloc_all(nc_gpu_neocog *e, const nc_neocog *net)
{
    const uint32_t L = e->n_stages;
    /* weights: a and b of every stage, then the plane labels */
    size_t wf = 0;
    for (uint32_t l = 0; l < L; l++) {
        const size_t ks = nc_neocog_kstride(e->k[l]);
        wf += (size_t)e->s[l].k_in * net->s_ix[l]->n_live * ks + ks;
    }
    /* then the live taps of every S- and C-layer for the warp kernels
     * (nc_gpu_neocog_geom's taps), 8-byte aligned */
    size_t nt = 0;
    for (uint32_t l = 0; l < L; l++)
        nt += (size_t)e->s[l].g.n_live + (net->c_ix[l] ? (size_t)e->c[l].g.n_live : 0);
    const size_t tap_off = (wf * sizeof(float) + e->k[L - 1] * sizeof(uint32_t) + 7) & ~(size_t)7;
    const size_t wbytes = tap_off + nt * 2 * sizeof(int32_t);
    NC_CUDA_CHECK(cudaMalloc(&e->d_weights, wbytes));
    int32_t *h_taps = (int32_t *)malloc(nt * 2 * sizeof(int32_t) + 1);
    if (!h_taps)
        return -ENOMEM;
    int32_t *d_taps = (int32_t *)((char *)e->d_weights + tap_off);
    size_t at = 0;
    for (uint32_t l = 0; l < L; l++)
        for (int c = 0; c < 2; c++) {
            nc_gpu_neocog_geom *g = c ? &e->c[l].g : &e->s[l].g;
            if (c && !net->c_ix[l])
                continue;
            nc_gpu_neocog_geom_pack_taps(g, h_taps + 2 * at);
            g->taps = d_taps + 2 * at;
            at += (size_t)g->n_live;
        }
    cudaError_t ce = cudaMemcpy(d_taps, h_taps, nt * 2 * sizeof(int32_t),
                                cudaMemcpyHostToDevice);
    free(h_taps);
    NC_CUDA_CHECK(ce);
    float *w = (float *)e->d_weights;
    for (uint32_t l = 0; l < L; l++) {
        const size_t ks = nc_neocog_kstride(e->k[l]);
        const size_t na = (size_t)e->s[l].k_in * net->s_ix[l]->n_live * ks;
        NC_CUDA_CHECK(cudaMemcpy(w, net->a[l], na * sizeof(float), cudaMemcpyHostToDevice));
        NC_CUDA_CHECK(cudaMemcpy(w + na, net->b[l], ks * sizeof(float),
                                 cudaMemcpyHostToDevice));
        e->s[l].a = w;
        e->s[l].b = w + na;
        w += na + ks;
    }
    NC_CUDA_CHECK(cudaMemcpy(w, net->labels, e->k[L - 1] * sizeof(uint32_t),
                             cudaMemcpyHostToDevice));
    e->d_plane_label = (const uint32_t *)w;

    const size_t nb = e->max_batch;
    NC_CUDA_CHECK(cudaMalloc(&e->d_in, nb * e->in_cells * sizeof(float)));
    NC_CUDA_CHECK(cudaMalloc(&e->d_scores, nb * e->n_classes * sizeof(float)));
    NC_CUDA_CHECK(cudaMalloc(&e->d_labels, nb * sizeof(int32_t)));
    NC_CUDA_CHECK(cudaMallocHost(&e->h_in, nb * e->in_cells * sizeof(float)));
    NC_CUDA_CHECK(cudaMallocHost(&e->h_scores, nb * e->n_classes * sizeof(float)));
    NC_CUDA_CHECK(cudaMallocHost(&e->h_labels, nb * sizeof(int32_t)));
    NC_CUDA_CHECK(cudaStreamCreateWithFlags(&e->run, cudaStreamNonBlocking));
    NC_CUDA_CHECK(cudaStreamCreateWithFlags(&e->up, cudaStreamNonBlocking));
    NC_CUDA_CHECK(cudaStreamCreateWithFlags(&e->down, cudaStreamNonBlocking));
    NC_CUDA_CHECK(cudaEventCreateWithFlags(&e->ev_up, cudaEventDisableTiming));
    NC_CUDA_CHECK(cudaEventCreateWithFlags(&e->ev_done, cudaEventDisableTiming));
    NC_CUDA_CHECK(cudaEventCreateWithFlags(&e->ev_fork, cudaEventDisableTiming));
    int r = neocog_eng_lane_alloc(e, &e->ln[0], NULL, e->run);
    if (r < 0)
        return r;
    for (uint32_t l = 0; l < L; l++) {
        e->use_gemm[l] = 1;
        e->c_kind[l] = NC_GPU_NEOCOG_C_DIRECT;
        e->c_small_kind[l] = NC_GPU_NEOCOG_C_SMALL;
    }
    /* split scratch for any split a stage may be given: at batch n the
     * engine runs max_split / n runs, so n * runs <= max_split */
    int n_sm = 0;
    NC_CUDA_CHECK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, e->device));
    e->n_sm = (uint32_t)n_sm;
    for (uint32_t l = 0; l < L; l++)
        for (uint32_t n = 1; n <= NC_GPU_NEOCOG_S_MAX_SPLITS / 2 && n <= e->chunk_cap; n++) {
            const size_t c = nc_gpu_neocog_s_split_counters(&e->s[l], n);
            const size_t f = nc_gpu_neocog_s_split_floats(&e->s[l], n,
                                                          NC_GPU_NEOCOG_S_MAX_SPLITS / n);
            e->n_split_count = c > e->n_split_count ? c : e->n_split_count;
            e->n_split_part = f > e->n_split_part ? f : e->n_split_part;
        }
    NC_CUDA_CHECK(cudaMalloc(&e->d_split_count, e->n_split_count * sizeof(unsigned)));
    NC_CUDA_CHECK(cudaMemset(e->d_split_count, 0, e->n_split_count * sizeof(unsigned)));
    NC_CUDA_CHECK(cudaMalloc(&e->d_split_part, e->n_split_part * sizeof(float)));
    for (uint32_t l = 0; l < L; l++) {
        e->split[l] = nc_gpu_neocog_s_default_splits(&e->s[l],
                                                     e->block[NC_GPU_NEOCOG_SPARSE][l], e->n_sm);
        e->s_warp[l] = nc_gpu_neocog_s_warp_default(&e->s[l], 1, e->n_sm);
    }
    return 0;
}

/* Lane 1 mirrors lane 0's lists: it goes whenever they change, and is
 * made again (with them) by the next batch of more than one chunk. */
void neocog_eng_lists_free(nc_gpu_neocog *e, uint32_t l)
{
    neocog_eng_lane_free(&e->ln[1]);
    lane_lists_free(&e->ln[0], l);
    cudaFree(e->l_wpad[l]);
    e->l_wpad[l] = NULL;
    e->l_wpad_planes[l] = 0;
}

static int lists_try_alloc(nc_gpu_neocog *e, uint32_t l)
{
    neocog_eng_lane_free(&e->ln[1]);
    return lane_lists_alloc(e, &e->ln[0], l);
}

void neocog_eng_rows_weights_free(nc_gpu_neocog *e, uint32_t l)
{
    if (e->l_wpad[l] && e->run)
        cudaStreamSynchronize(e->run);          /* no kernel may still read them */
    cudaFree(e->l_wpad[l]);
    e->l_wpad[l] = NULL;
    e->l_wpad_planes[l] = 0;
}

/* Stage l's row-kernel weights laid out for `planes` planes a block (on
 * the run stream, before any kernel that reads them); allocated only while
 * the row kernel may run the stage (the shipped US4's would take 245 MB). */
int neocog_eng_rows_weights_for(nc_gpu_neocog *e, uint32_t l, uint32_t planes)
{
    if (e->l_wpad_planes[l] == planes)
        return 0;
    neocog_eng_rows_weights_free(e, l);
    const size_t wf = nc_gpu_neocog_s_rows_wfloats(&e->s[l], planes);
    if (cudaMalloc((void **)&e->l_wpad[l], wf * sizeof(float)) != cudaSuccess) {
        (void)cudaGetLastError();               /* not sticky */
        e->l_wpad[l] = NULL;
        return -ENOMEM;
    }
    const int r = nc_gpu_neocog_s_rows_weights(&e->s[l], planes, e->l_wpad[l], e->run);
    if (r == 0)
        e->l_wpad_planes[l] = planes;
    return r;
}

/* Stage l's lists for a chunk, where it has none yet.  A failure frees
 * what was allocated and clears the (not sticky) allocation error. */
int neocog_eng_lists_alloc(nc_gpu_neocog *e, uint32_t l)
{
    if (e->ln[0].l_ent[l])
        return 0;
    const int r = lists_try_alloc(e, l);
    if (r < 0) {
        neocog_eng_lists_free(e, l);
        (void)cudaGetLastError();
    }
    return r;
}

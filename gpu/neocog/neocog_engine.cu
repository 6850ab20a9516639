/* gpu/neocog/neocog_engine.cu — the resident neocognitron: one upload of weights and
 * tables, device activations for one chunk of characters (reused by every
 * chunk, so they stay in L2), pinned host staging, and the layer kernels of
 * gpu/neocog_{g,s,c,class}.cu strung together.
 *
 * Layer: gpu.  Streams: `up` copies chunk i + 1 to the device while `run`
 * computes chunk i and `down` returns chunk i - 1's answers; one event per
 * hand-over (a wait takes the event's latest record, so one of each is
 * enough when the calls are issued in order).  With two lanes (the default)
 * the odd chunks of a batch run on lane 1's buffers and stream, forked
 * from `run` and joined back to it, so two chunks' kernels overlap.  Batches of up to
 * NC_GPU_NEOCOG_GRAPH_MAX that fit one chunk replay a captured graph (copies
 * and kernels on `run`), one per batch size, made on first use.
 *
 * Variants: the S-layer kernel of every stage follows e->variant; AUTO (the
 * default) runs the sparse kernels below e->auto_min characters and the
 * GEMM path (gpu/neocog/neocog_gemm.cuh) from there on.  Under GEMM a stage keeps
 * the sparse kernel where the tuner found it faster (use_gemm[l] = 0).
 *
 * Limits: a stage whose S-layer the chosen kernel cannot take (too many
 * planes for its block, too much shared memory: nc_gpu_neocog_s_check says
 * -E2BIG or -EINVAL) runs the GEMM path instead, which takes any plane count
 * up to core's cap; a C-layer the chosen kernel refuses runs the staged C
 * kernel (the direct one where the staged kernel refuses).  So every net core can build runs, whatever variant is set. */
#include "neocog_engine.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.cuh"
#include "neocog_c.cuh"
#include "neocog_class.cuh"
#include "neocog_g.cuh"
#include "neocog_gemm.cuh"
#include "neocog_gs1.cuh"
#include "neocog_iv.cuh"
#include "neocog_list.cuh"
#include "neocog_s.cuh"
#include "neocog_s_warp.cuh"

/* One chunk's working buffers.  Every kernel of a chunk writes and reads
 * only these (and the shared weights), so two lanes let two chunks run at
 * once on two streams: each layer's kernel of one chunk fills the SMs that
 * the other's ramp-up, tail and kernel boundaries leave idle. */
typedef struct nc_lane {
    float *d_act;               /* one chunk's activations, every layer */
    float *act[2 * NC_NEOCOG_MAX_STAGES + 1];              /* by nc_neocog_layer */
    uint8_t *d_occ;
    uint8_t *occ[2 * NC_NEOCOG_MAX_STAGES + 1];
    /* the list S-layers' input lists of stage l (allocated when its list
     * kernel is first set); they hold the first l_ready_n[l] characters'
     * lists built with mul l_ready_mul[l] (0: none) when the C-layer
     * before wrote them with its output */
    uint16_t *l_cnt[NC_NEOCOG_MAX_STAGES];
    float *l_q[NC_NEOCOG_MAX_STAGES];
    int2 *l_ent[NC_NEOCOG_MAX_STAGES];
    uint32_t l_ready_n[NC_NEOCOG_MAX_STAGES];
    uint32_t l_ready_mul[NC_NEOCOG_MAX_STAGES];
    nc_gpu_neocog_gemm *gemm[NC_NEOCOG_MAX_STAGES];     /* the GEMM path's scratch */
    cudaStream_t st;            /* lane 1's stream (lane 0 runs on the engine's) */
    cudaEvent_t ev;             /* lane 1: its last chunk done */
} nc_lane;

struct nc_gpu_neocog {
    int device;
    int failed;                 /* a CUDA failure: refuse further work */
    uint32_t pending;           /* images of a forward started, not finished */
    int variant;                /* nc_gpu_neocog_variant or NC_GPU_NEOCOG_AUTO */
    uint32_t auto_min;          /* AUTO: GEMM from this batch on */
    int use_gemm[NC_NEOCOG_MAX_STAGES];
    uint32_t c_kind[NC_NEOCOG_MAX_STAGES];      /* C-layer kernel (NC_GPU_NEOCOG_C_*) */
    uint32_t c_small_kind[NC_NEOCOG_MAX_STAGES];        /* the same below c_min */
    uint32_t c_min;             /* c_kind from this batch on, c_small_kind below */
    /* sparse S-layers: the reduction split in split[l] runs at batch 1,
     * split[l] / n at batch n (none below 2); one set of counters and
     * partials serves every stage, the layers running one after another
     * on `run` */
    uint32_t split[NC_NEOCOG_MAX_STAGES];
    /* up to NC_GPU_NEOCOG_S_WARP_BATCH, where the sparse kernel would run
     * stage l: the kernel by teams of warps (gpu/neocog/neocog_s_warp.cuh)
     * instead, with teams of s_warp[l] warps at batch 1, halved until team
     * x n <= s_warp[l] at batch n; 0: the sparse kernel */
    uint32_t s_warp[NC_NEOCOG_MAX_STAGES];
    /* and its planes a block there (0: NC_GPU_NEOCOG_S_WARP_PLANES) */
    uint32_t s_planes[NC_NEOCOG_MAX_STAGES];
    /* where the GEMM variant runs stage l: that kernel instead, with teams
     * of s_warp_big[l] warps and s_planes_big[l] planes a block, when
     * s_warp_big[l] is not 0 */
    uint32_t s_warp_big[NC_NEOCOG_MAX_STAGES];
    uint32_t s_planes_big[NC_NEOCOG_MAX_STAGES];
    /* and before that: the list kernel (gpu/neocog/neocog_list.cuh) with
     * s_list_big[l] float4 a lane and s_list_planes_big[l] planes a block,
     * when s_list_big[l] is not 0, its blocks' warps in s_list_order[l]
     * (NC_GPU_NEOCOG_LIST_*; the row kernel for NC_GPU_NEOCOG_LIST_ROWS
     * and _ROWS_L1, s_list_big[l] warps and s_list_planes_big[l] planes a
     * block, its weights in l_wpad[l], laid out for l_wpad_planes[l]
     * planes, 0: none), from the lists of the stage's input in
     * l_cnt/l_q/l_ent[l] (one chunk's, allocated when first set) */
    uint32_t s_list_big[NC_NEOCOG_MAX_STAGES];
    uint32_t s_list_planes_big[NC_NEOCOG_MAX_STAGES];
    uint32_t s_list_order[NC_NEOCOG_MAX_STAGES];
    float *l_wpad[NC_NEOCOG_MAX_STAGES];
    uint32_t l_wpad_planes[NC_NEOCOG_MAX_STAGES];
    /* the sparse variant runs UG and US1 as one kernel (gpu/neocog/neocog_gs1.cuh)
     * when gs1 is 1; gs1_ok: that kernel takes this net */
    uint32_t gs1;
    int gs1_ok;
    uint32_t n_sm;
    unsigned *d_split_count;
    float *d_split_part;
    size_t n_split_count, n_split_part;
    nc_gpu_neocog_iv *iv;       /* set: the answer is the IV classifier's */
    uint32_t max_batch, chunk_cap, chunk;
    uint32_t n_stages, n_classes, in_size, in_cells;
    uint32_t k[NC_NEOCOG_MAX_STAGES];
    uint32_t block[NC_GPU_NEOCOG_N_VARIANTS][NC_NEOCOG_MAX_STAGES];
    /* whether the variant's kernel takes stage l at its block: 0 not known
     * yet, 1 yes, 2 no (the GEMM path runs instead) */
    int8_t s_fit[NC_GPU_NEOCOG_N_VARIANTS][NC_NEOCOG_MAX_STAGES];
    nc_gpu_neocog_g_args g;
    nc_gpu_neocog_s_args s[NC_NEOCOG_MAX_STAGES];
    nc_gpu_neocog_c_args c[NC_NEOCOG_MAX_STAGES];
    uint32_t layer_size[2 * NC_NEOCOG_MAX_STAGES + 1];     /* plane width */
    uint32_t layer_stride[2 * NC_NEOCOG_MAX_STAGES + 1];   /* plane stride */
    /* device */
    void *d_weights;            /* a, b of every stage, plane labels */
    const uint32_t *d_plane_label;
    float *d_in;                /* [max_batch][in_cells] */
    /* ln[0]: the chunk buffers every call uses; ln[1] (lanes == 2, made on
     * the first batch of more than one chunk) */
    nc_lane ln[NC_GPU_NEOCOG_MAX_LANES];
    uint32_t lanes;
    float *d_scores;            /* [max_batch][n_classes] */
    int32_t *d_labels;          /* [max_batch] */
    /* pinned host */
    float *h_in, *h_scores;
    int32_t *h_labels;
    cudaStream_t run, up, down;
    cudaEvent_t ev_up, ev_done, ev_fork;
    cudaGraphExec_t graph_dev[NC_GPU_NEOCOG_GRAPH_MAX + 1];
    cudaGraphExec_t graph_io[NC_GPU_NEOCOG_GRAPH_MAX + 1];
};

static int fail(nc_gpu_neocog *e, int r)
{
    if (r == -EIO)
        e->failed = 1;
    return r;
}

static int enter(nc_gpu_neocog *e)
{
    if (!e)
        return -EINVAL;
    if (e->failed)
        return -EIO;
    NC_CUDA_CHECK(cudaSetDevice(e->device));
    return 0;
}

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
static int lane_alloc(const nc_gpu_neocog *e, nc_lane *x, const nc_lane *like, cudaStream_t st)
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
static void lane_free(nc_lane *x)
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
    int r = ce == cudaSuccess ? lane_alloc(e, x, &e->ln[0], x->st)
                              : nc_gpu_record_error(ce, "lane 1 stream", __func__, __FILE__,
                                                    __LINE__);
    if (r < 0) {
        lane_free(x);
        (void)cudaGetLastError();       /* out of memory is not sticky */
        return r == -EIO ? -ENOMEM : r;
    }
    return 0;
}

static void drop_graphs(nc_gpu_neocog *e)
{
    for (int i = 0; i <= NC_GPU_NEOCOG_GRAPH_MAX; i++) {
        if (e->graph_dev[i])
            cudaGraphExecDestroy(e->graph_dev[i]);
        if (e->graph_io[i])
            cudaGraphExecDestroy(e->graph_io[i]);
        e->graph_dev[i] = e->graph_io[i] = NULL;
    }
}

extern "C" void nc_gpu_neocog_free(nc_gpu_neocog *e)
{
    if (!e)
        return;
    cudaSetDevice(e->device);
    if (e->run)
        cudaStreamSynchronize(e->run);
    drop_graphs(e);
    for (uint32_t i = 0; i < NC_GPU_NEOCOG_MAX_LANES; i++)
        lane_free(&e->ln[i]);
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

/* Everything on the device and the host; e's sizes are set. */
static int alloc_all(nc_gpu_neocog *e, const nc_neocog *net)
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
    int r = lane_alloc(e, &e->ln[0], NULL, e->run);
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
        r = alloc_all(e, net);
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
    drop_graphs(e);
    nc_gpu_neocog_iv_free(e->iv);
    e->iv = d;
    return 0;
}

extern "C" int nc_gpu_neocog_set_variant(nc_gpu_neocog *e, int variant)
{
    if (!e || variant < 0 || variant > NC_GPU_NEOCOG_AUTO)
        return -EINVAL;
    if (e->variant != variant)
        drop_graphs(e);
    e->variant = variant;
    return 0;
}

extern "C" int nc_gpu_neocog_set_block(nc_gpu_neocog *e, int variant, uint32_t l,
                                       uint32_t per_block)
{
    if (!e || variant < 0 || variant >= NC_GPU_NEOCOG_N_VARIANTS || l >= e->n_stages ||
        per_block > 64)
        return -EINVAL;
    e->block[variant][l] = per_block ? per_block
                                     : nc_gpu_neocog_s_default_block(variant, e->k[l]);
    e->s_fit[variant][l] = 0;
    drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_block(const nc_gpu_neocog *e, int variant, uint32_t l)
{
    if (!e || variant < 0 || variant >= NC_GPU_NEOCOG_N_VARIANTS || l >= e->n_stages)
        return 0;
    return e->block[variant][l];
}

extern "C" int nc_gpu_neocog_set_chunk(nc_gpu_neocog *e, uint32_t chunk)
{
    if (!e || chunk < 1 || chunk > e->chunk_cap)
        return -EINVAL;
    e->chunk = chunk;
    drop_graphs(e);
    return 0;
}

extern "C" int nc_gpu_neocog_set_lanes(nc_gpu_neocog *e, uint32_t lanes)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (lanes < 1 || lanes > NC_GPU_NEOCOG_MAX_LANES)
        return -EINVAL;
    e->lanes = lanes;
    if (lanes < 2)
        lane_free(&e->ln[1]);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_lanes(const nc_gpu_neocog *e)
{
    return e ? e->lanes : 0;
}

/* One layer over n characters of the chunk buffers; input images at in,
 * answers to scores/labels (last layer). */
/* The S-layer variant a batch of n characters runs with. */
static int eff_variant(const nc_gpu_neocog *e, uint32_t n)
{
    if (e->variant != NC_GPU_NEOCOG_AUTO)
        return e->variant;
    return n >= e->auto_min ? NC_GPU_NEOCOG_GEMM : NC_GPU_NEOCOG_SPARSE;
}

/* 1 when variant v's kernel takes stage l's S-layer at its block (any batch
 * up to the chunk), 0 when it does not (the caller runs the GEMM path), or a
 * negative errno (a CUDA failure). */
static int s_fits(nc_gpu_neocog *e, int v, uint32_t l)
{
    if (v == NC_GPU_NEOCOG_GEMM)
        return 1;
    if (!e->s_fit[v][l]) {
        const int r = nc_gpu_neocog_s_check(&e->s[l], e->chunk_cap, v, e->block[v][l]);
        if (r < 0 && r != -E2BIG && r != -EINVAL)
            return r;
        e->s_fit[v][l] = r == 0 ? 1 : 2;
    }
    return e->s_fit[v][l] == 1;
}

/* The list kernel's weight offset of one input plane: its rows of a are
 * n_live rows of ks(k_out) / 4 float4 apart; the row kernel takes the
 * plane itself */
static uint32_t list_mul(const nc_gpu_neocog_s_args *s, uint32_t order)
{
    return order >= NC_GPU_NEOCOG_LIST_ROWS
               ? 1u : (uint32_t)s->g.n_live * (nc_neocog_kstride(s->k_out) / 4u);
}

static int run_layer(nc_gpu_neocog *e, nc_lane *x, int v, int layer, uint32_t n,
                     const float *in,
                     float *scores, int32_t *labels, cudaStream_t st)
{
    if (layer == NC_NEOCOG_L_UG)
        return nc_gpu_neocog_g_forward(&e->g, in, x->act[0], x->occ[0], n, st);
    const uint32_t l = (uint32_t)(layer - 1) / 2;
    if ((layer - 1) % 2 == 0) {
        const int last = l + 1 == e->n_stages;
        if (v == NC_GPU_NEOCOG_GEMM && e->s_list_big[l]) {
            const nc_gpu_neocog_s_args *s = &e->s[l];
            const uint32_t ni = e->layer_size[layer - 1];
            const uint32_t order = e->s_list_order[l];
            const uint32_t mul = list_mul(s, order);
            int r = 0;
            if (x->l_ready_mul[l] != mul || x->l_ready_n[l] < n)
                r = nc_gpu_neocog_list_build(x->act[layer - 1], x->occ[layer - 1],
                                             (size_t)ni * ni, s->k_in,
                                             e->layer_stride[layer - 1], mul, x->l_cnt[l],
                                             x->l_q[l], x->l_ent[l], n, st);
            if (r == 0 && order >= NC_GPU_NEOCOG_LIST_ROWS)
                r = nc_gpu_neocog_s_forward_rows(s, e->l_wpad[l], x->l_cnt[l], x->l_q[l],
                                                 x->l_ent[l], x->act[layer],
                                                 last ? NULL : x->occ[layer], n,
                                                 e->s_list_big[l], e->l_wpad_planes[l],
                                                 order == NC_GPU_NEOCOG_LIST_ROWS, last, st);
            else if (r == 0)
                r = nc_gpu_neocog_s_forward_list(s, x->l_cnt[l], x->l_q[l], x->l_ent[l],
                                                 x->act[layer], last ? NULL : x->occ[layer], n,
                                                 e->s_list_big[l],
                                                 e->s_list_planes_big[l] ? e->s_list_planes_big[l]
                                                                         : 128u,
                                                 order, st);
            return r;
        }
        if (v == NC_GPU_NEOCOG_GEMM && e->s_warp_big[l])
            return nc_gpu_neocog_s_forward_warp(&e->s[l], x->act[layer - 1],
                                                x->occ[layer - 1], x->act[layer],
                                                last ? NULL : x->occ[layer], n,
                                                e->s_warp_big[l], e->s_planes_big[l], st);
        if (v == NC_GPU_NEOCOG_GEMM && !e->use_gemm[l])
            v = NC_GPU_NEOCOG_SPARSE;
        const int fit = s_fits(e, v, l);
        if (fit < 0)
            return fit;
        if (v == NC_GPU_NEOCOG_GEMM || !fit)
            return nc_gpu_neocog_gemm_forward_fill(x->gemm[l], x->act[layer - 1],
                                                   x->occ[layer - 1], x->act[layer],
                                                   last ? NULL : x->occ[layer], n, last, st);
        if (v == NC_GPU_NEOCOG_SPARSE && n <= NC_GPU_NEOCOG_S_WARP_BATCH && e->s_warp[l]) {
            uint32_t team = e->s_warp[l];
            while (team > 1 && team * n > e->s_warp[l])
                team /= 2;
            return nc_gpu_neocog_s_forward_warp(&e->s[l], x->act[layer - 1],
                                                x->occ[layer - 1], x->act[layer],
                                                last ? NULL : x->occ[layer], n, team,
                                                e->s_planes[l], st);
        }
        const uint32_t runs = v == NC_GPU_NEOCOG_SPARSE ? e->split[l] / n : 1;
        if (runs >= 2)
            return nc_gpu_neocog_s_forward_split(&e->s[l], x->act[layer - 1],
                                                 x->occ[layer - 1], x->act[layer],
                                                 last ? NULL : x->occ[layer], n,
                                                 e->block[v][l], runs, e->d_split_count,
                                                 e->n_split_count, e->d_split_part,
                                                 e->n_split_part, st);
        return nc_gpu_neocog_s_forward(&e->s[l], x->act[layer - 1], x->occ[layer - 1],
                                       x->act[layer], last ? NULL : x->occ[layer], n,
                                       v, e->block[v][l], st);
    }
    if (l + 1 < e->n_stages) {
        /* a kernel refuses a layer before it queues anything (-EINVAL,
         * -E2BIG: the staged one past 1024 lanes or its shared memory, the
         * tile one when one window's planes overflow shared memory); the
         * staged kernel then runs it, or the direct one in its place */
        const int kind = (int)(n >= e->c_min ? e->c_kind[l] : e->c_small_kind[l]);
        /* the next stage's lists with the output, where its S-layer runs
         * from lists and this kernel writes them (DIRECT, SCATTER) */
        const uint32_t nl = l + 1;
        x->l_ready_mul[nl] = 0;
        if (v == NC_GPU_NEOCOG_GEMM && e->s_list_big[nl] &&
            (kind == NC_GPU_NEOCOG_C_DIRECT || kind == NC_GPU_NEOCOG_C_SCATTER)) {
            const nc_gpu_neocog_lists ls = { x->l_cnt[nl], x->l_q[nl], x->l_ent[nl],
                                             list_mul(&e->s[nl], e->s_list_order[nl]) };
            int r = nc_gpu_neocog_c_forward_lists(&e->c[l], kind, x->act[layer - 1],
                                                  x->occ[layer - 1], x->act[layer],
                                                  x->occ[layer], &ls, n, 0, st);
            if (r == 0) {
                x->l_ready_mul[nl] = ls.mul;
                x->l_ready_n[nl] = n;
            }
            if (r != -EINVAL && r != -E2BIG)
                return r;
        }
        int r = nc_gpu_neocog_c_forward_kind(&e->c[l], kind, x->act[layer - 1],
                                             x->occ[layer - 1], x->act[layer],
                                             x->occ[layer], n, 0, st);
        if (r == -EINVAL || r == -E2BIG)
            r = nc_gpu_neocog_c_forward_kind(&e->c[l],
                                             kind == NC_GPU_NEOCOG_C_STAGED
                                                 ? NC_GPU_NEOCOG_C_DIRECT
                                                 : NC_GPU_NEOCOG_C_STAGED,
                                             x->act[layer - 1], x->occ[layer - 1],
                                             x->act[layer], x->occ[layer], n, 0, st);
        return r;
    }
    if (e->iv)
        return nc_gpu_neocog_iv_classify(e->iv, x->act[layer - 2], x->act[layer - 1], scores,
                                         labels, n, st);
    const uint32_t ns = e->layer_size[layer - 1];
    return nc_gpu_neocog_class_forward(x->act[layer - 1], ns * ns, e->k[l],
                                       e->d_plane_label, e->n_classes, scores, labels, n,
                                       st);
}

/* UG and US1 as one kernel on n images at in, into the layers' buffers as
 * run_layer would leave them */
static int run_gs1(nc_gpu_neocog *e, nc_lane *x, uint32_t n, const float *in,
                   cudaStream_t st)
{
    return nc_gpu_neocog_gs1_forward(&e->g, &e->s[0], in, x->act[0], x->occ[0], x->act[1],
                                     e->n_stages > 1 ? x->occ[1] : NULL, n, st);
}

/* The whole network on n (<= chunk) images at in. */
static int run_net(nc_gpu_neocog *e, nc_lane *x, int v, uint32_t n, const float *in,
                   float *scores,
                   int32_t *labels, cudaStream_t st)
{
    int layer = 0;
    if (e->gs1 && e->gs1_ok && v == NC_GPU_NEOCOG_SPARSE) {
        int r = run_gs1(e, x, n, in, st);
        if (r < 0)
            return r;
        layer = 2;
    }
    for (; layer <= 2 * (int)e->n_stages; layer++) {
        int r = run_layer(e, x, v, layer, n, in, scores, labels, st);
        if (r < 0)
            return r;
    }
    return 0;
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
        r = run_net(e, &e->ln[0], eff_variant(e, n), n, e->d_in, e->d_scores, e->d_labels, e->run);
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

static int graph_fits(const nc_gpu_neocog *e, uint32_t n)
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

static int enqueue_dev(nc_gpu_neocog *e, uint32_t n, int graph)
{
    if (graph && graph_fits(e, n)) {
        if (!e->graph_dev[n]) {
            int r = capture(e, n, 0, &e->graph_dev[n]);
            if (r < 0)
                return r;
        }
        NC_CUDA_CHECK(cudaGraphLaunch(e->graph_dev[n], e->run));
        return 0;
    }
    const int v = eff_variant(e, n);
    const int two = lanes_fork(e, n);
    int r = 0;
    uint32_t i = 0;
    for (uint32_t c0 = 0; r == 0 && c0 < n; c0 += e->chunk, i++) {
        const uint32_t m = n - c0 < e->chunk ? n - c0 : e->chunk;
        nc_lane *x = &e->ln[two ? i & 1u : 0u];
        r = run_net(e, x, v, m, e->d_in + (size_t)c0 * e->in_cells,
                    e->d_scores + (size_t)c0 * e->n_classes, e->d_labels + c0,
                    x->st ? x->st : e->run);
    }
    const int rj = two ? lanes_join(e) : 0;
    return r < 0 ? r : rj;
}

extern "C" int nc_gpu_neocog_enqueue(nc_gpu_neocog *e, uint32_t n, int graph)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (n < 1 || n > e->max_batch)
        return -EINVAL;
    return fail(e, enqueue_dev(e, n, graph));
}

extern "C" int nc_gpu_neocog_enqueue_gs1(nc_gpu_neocog *e, uint32_t n)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (n < 1 || n > e->chunk || !e->gs1_ok)
        return -EINVAL;
    return fail(e, run_gs1(e, &e->ln[0], n, e->d_in, e->run));
}

extern "C" int nc_gpu_neocog_enqueue_layer(nc_gpu_neocog *e, int layer, uint32_t n)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (n < 1 || n > e->chunk || layer < 0 || layer > 2 * (int)e->n_stages)
        return -EINVAL;
    return fail(e, run_layer(e, &e->ln[0], eff_variant(e, n), layer, n, e->d_in, e->d_scores,
                             e->d_labels, e->run));
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

/* Chunked forward with the copies overlapped: see the top of the file. */
static int forward_chunks(nc_gpu_neocog *e, uint32_t n)
{
    const int v = eff_variant(e, n);
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
        int r = run_net(e, x, v, m, din, e->d_scores + (size_t)c0 * e->n_classes,
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
static int forward_wait(nc_gpu_neocog *e)
{
    if (e->ln[1].st)
        NC_CUDA_CHECK(cudaStreamSynchronize(e->ln[1].st));
    NC_CUDA_CHECK(cudaStreamSynchronize(e->down));
    NC_CUDA_CHECK(cudaStreamSynchronize(e->run));
    return 0;
}

static int forward_graph(nc_gpu_neocog *e, uint32_t n)
{
    if (!e->graph_io[n]) {
        int r = capture(e, n, 1, &e->graph_io[n]);
        if (r < 0)
            return r;
    }
    NC_CUDA_CHECK(cudaGraphLaunch(e->graph_io[n], e->run));
    return 0;
}

extern "C" int nc_gpu_neocog_forward_start(nc_gpu_neocog *e, const float *inputs, uint32_t n)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (!inputs || n < 1 || n > e->max_batch || e->pending)
        return -EINVAL;
    memcpy(e->h_in, inputs, (size_t)n * e->in_cells * sizeof(float));
    r = graph_fits(e, n) ? forward_graph(e, n) : forward_chunks(e, n);
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
    if ((r = forward_wait(e)) < 0)
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

/* The best of reps timings of stage l's S-layer on n characters. */
static int time_s(nc_gpu_neocog *e, int v, int layer, uint32_t n, int reps, float *ret_ms)
{
    cudaEvent_t t0, t1;
    NC_CUDA_CHECK(cudaEventCreate(&t0));
    cudaError_t ce = cudaEventCreate(&t1);
    if (ce != cudaSuccess) {
        cudaEventDestroy(t0);
        NC_CUDA_CHECK(ce);
    }
    float best = 1e30f;
    int r = 0;
    for (int i = 0; r == 0 && i < reps; i++) {
        ce = cudaEventRecord(t0, e->run);
        if (ce == cudaSuccess) {
            r = layer < 0 ? run_net(e, &e->ln[0], v, n, e->d_in, e->d_scores, e->d_labels, e->run)
                          : run_layer(e, &e->ln[0], v, layer, n, e->d_in, e->d_scores, e->d_labels,
                                      e->run);
            if (r == 0)
                ce = cudaEventRecord(t1, e->run);
        }
        if (r == 0 && ce == cudaSuccess)
            ce = cudaEventSynchronize(t1);
        float ms = 0.0f;
        if (r == 0 && ce == cudaSuccess)
            ce = cudaEventElapsedTime(&ms, t0, t1);
        if (r == 0 && ce != cudaSuccess)
            r = nc_gpu_record_error(ce, "event timing", __func__, __FILE__, __LINE__);
        if (r == 0 && ms < best)
            best = ms;
    }
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    *ret_ms = best;
    return r;
}

/* Per C-layer, the fastest of the C kernels on n characters (the layer's
 * input as left by a run of the whole net under variant v), kept in the
 * setting that batch n reads: c_kind from c_min on, c_small_kind below. */
static int tune_c(nc_gpu_neocog *e, int v, uint32_t n)
{
    uint32_t *kind = n >= e->c_min ? e->c_kind : e->c_small_kind;
    int r = run_net(e, &e->ln[0], v, n, e->d_in, e->d_scores, e->d_labels, e->run);
    for (uint32_t l = 0; r == 0 && l + 1 < e->n_stages; l++) {
        float best = 1e30f;
        int best_k = kind[l];
        for (int k = 0; r == 0 && k < NC_GPU_NEOCOG_C_N_KINDS; k++) {
            float ms = 0.0f;
            kind[l] = k;
            r = time_s(e, v, 2 + 2 * (int)l, n, 3, &ms);
            if (r == 0 && ms < best) {
                best = ms;
                best_k = k;
            }
        }
        kind[l] = best_k;
    }
    return r;
}

/* The batch-1 settings (knob[l] for l < n_knob: the sparse kernel's
 * splits, the warp teams, the small-batch C kernels) by the whole net: a
 * layer timed alone is not the layer in the net (on an H100 the
 * per-layer C picks made the net 3 us slower than the tile kernel
 * everywhere, and the per-layer S picks up to 4 us slower than
 * each stage's fastest), so from the defaults already in knob, stage by
 * stage, the settings so far and every candidate are timed in the whole
 * net at batch 1 under variant v (best of 10) and the fastest kept.
 * Stages with skip[l] set keep theirs. */
static int descend_batch1(nc_gpu_neocog *e, int v, uint32_t *knob, uint32_t n_knob,
                          const uint32_t *cand, size_t n_cand, const uint8_t *skip)
{
    int r = 0;
    for (uint32_t l = 0; r == 0 && l < n_knob; l++) {
        if (skip && skip[l])
            continue;
        /* the settings so far timed again next to this stage's candidates:
         * a figure from earlier in the descent may be from lower clocks */
        float best = 0.0f;
        if ((r = time_s(e, v, -1, 1, 10, &best)) < 0)
            break;
        uint32_t keep = knob[l];
        for (size_t i = 0; r == 0 && i < n_cand; i++) {
            if (cand[i] == keep)
                continue;
            float ms = 0.0f;
            knob[l] = cand[i];
            r = time_s(e, v, -1, 1, 10, &ms);
            if (r == 0 && ms < best) {
                best = ms;
                keep = cand[i];
            }
        }
        knob[l] = keep;
    }
    return r;
}

/* Stages the sparse variant's kernels do not take (the GEMM path runs
 * them): skip[l] = 1.  Negative errno on a CUDA failure. */
static int sparse_skips(nc_gpu_neocog *e, uint8_t *skip)
{
    for (uint32_t l = 0; l < e->n_stages; l++) {
        const int fit = s_fits(e, NC_GPU_NEOCOG_SPARSE, l);
        if (fit < 0)
            return fit;
        skip[l] = fit == 0;
    }
    return 0;
}

/* The sparse kernel's splits at batch 1 (1 .. 32 runs), from the default
 * for this device. */
static int tune_split(nc_gpu_neocog *e)
{
    static const uint32_t cand[] = { 1, 2, 3, 4, 6, 8, 12, 16, 24, 32 };
    uint8_t skip[NC_NEOCOG_MAX_STAGES];
    int r = sparse_skips(e, skip);
    for (uint32_t l = 0; l < e->n_stages; l++)
        e->split[l] = nc_gpu_neocog_s_default_splits(&e->s[l],
                                                     e->block[NC_GPU_NEOCOG_SPARSE][l], e->n_sm);
    return r < 0 ? r : descend_batch1(e, NC_GPU_NEOCOG_SPARSE, e->split, e->n_stages, cand,
                                      sizeof cand / sizeof cand[0], skip);
}

/* The S kernel by teams of warps at batch 1: the sparse kernel (team 0,
 * with the splits tune_split kept) or teams of 1 .. 16, from the default
 * teams. */
static int tune_warp(nc_gpu_neocog *e)
{
    static const uint32_t cand[] = { 0, 1, 2, 4, 8, 16 };
    uint8_t skip[NC_NEOCOG_MAX_STAGES];
    int r = sparse_skips(e, skip);
    for (uint32_t l = 0; l < e->n_stages; l++)
        e->s_warp[l] = nc_gpu_neocog_s_warp_default(&e->s[l], 1, e->n_sm);
    return r < 0 ? r : descend_batch1(e, NC_GPU_NEOCOG_SPARSE, e->s_warp, e->n_stages, cand,
                                      sizeof cand / sizeof cand[0], skip);
}

/* The warp S kernel's planes a block at batch 1 (128 down to 8), then its
 * teams once more around what that kept: fewer planes a block shorten each
 * lane's chain of weight loads and add blocks, so the best team moves.
 * Stages on the sparse kernel (team 0) keep 128. */
static int tune_planes(nc_gpu_neocog *e)
{
    static const uint32_t cand[] = { 0, 64, 32, 16, 8 };
    static const uint32_t teams[] = { 1, 2, 4, 8, 16 };
    uint8_t skip[NC_NEOCOG_MAX_STAGES];
    for (uint32_t l = 0; l < e->n_stages; l++) {
        skip[l] = e->s_warp[l] == 0;
        e->s_planes[l] = 0;
    }
    int r = descend_batch1(e, NC_GPU_NEOCOG_SPARSE, e->s_planes, e->n_stages, cand,
                           sizeof cand / sizeof cand[0], skip);
    return r < 0 ? r : descend_batch1(e, NC_GPU_NEOCOG_SPARSE, e->s_warp, e->n_stages, teams,
                                      sizeof teams / sizeof teams[0], skip);
}

/* The small-batch C kernels at batch 1 under variant v, from the default
 * NC_GPU_NEOCOG_C_SMALL on every layer. */
static int tune_small_c(nc_gpu_neocog *e, int v)
{
    uint32_t cand[NC_GPU_NEOCOG_C_N_KINDS];
    for (uint32_t k = 0; k < NC_GPU_NEOCOG_C_N_KINDS; k++)
        cand[k] = k;
    for (uint32_t l = 0; l + 1 < e->n_stages; l++)
        e->c_small_kind[l] = NC_GPU_NEOCOG_C_SMALL;
    return descend_batch1(e, v, e->c_small_kind, e->n_stages - 1, cand,
                          NC_GPU_NEOCOG_C_N_KINDS, NULL);
}

/* Stage l at n characters under the GEMM variant as tuned so far (GEMM
 * path or sparse kernel, which took `path` ms; 0: not timed yet), against
 * the kernel by teams of warps with each of a few teams and planes a
 * block; the fastest stays (s_warp_big). */
static int tune_warp_big(nc_gpu_neocog *e, uint32_t l, uint32_t n, float path, float *ret_best)
{
    static const uint32_t teams[] = { 1, 2 }, planes[] = { 64, 128 };
    const int layer = 1 + 2 * (int)l;
    float best = path;
    e->s_warp_big[l] = 0;
    e->s_planes_big[l] = 0;
    int r = path > 0.0f ? 0 : time_s(e, NC_GPU_NEOCOG_GEMM, layer, n, 3, &best);
    uint32_t bt = 0, bp = 0;
    for (size_t ti = 0; r == 0 && ti < sizeof teams / sizeof teams[0]; ti++)
        for (size_t pi = 0; r == 0 && pi < sizeof planes / sizeof planes[0]; pi++) {
            float ms = 0.0f;
            e->s_warp_big[l] = teams[ti];
            e->s_planes_big[l] = planes[pi];
            r = time_s(e, NC_GPU_NEOCOG_GEMM, layer, n, 3, &ms);
            if (r == -EINVAL || r == -E2BIG) {  /* refused before it queued anything */
                r = 0;
                continue;
            }
            if (r == 0 && ms < best) {
                best = ms;
                bt = teams[ti];
                bp = planes[pi];
            }
        }
    e->s_warp_big[l] = bt;
    e->s_planes_big[l] = bp;
    *ret_best = best;
    return r;
}

/* Lane 1 mirrors lane 0's lists: it goes whenever they change, and is
 * made again (with them) by the next batch of more than one chunk. */
static void lists_free(nc_gpu_neocog *e, uint32_t l)
{
    lane_free(&e->ln[1]);
    lane_lists_free(&e->ln[0], l);
    cudaFree(e->l_wpad[l]);
    e->l_wpad[l] = NULL;
    e->l_wpad_planes[l] = 0;
}

static const uint32_t rows_planes[] = { 32, 64, 96, 128 };

static int lists_try_alloc(nc_gpu_neocog *e, uint32_t l)
{
    lane_free(&e->ln[1]);
    return lane_lists_alloc(e, &e->ln[0], l);
}

static void rows_weights_free(nc_gpu_neocog *e, uint32_t l)
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
static int rows_weights_for(nc_gpu_neocog *e, uint32_t l, uint32_t planes)
{
    if (e->l_wpad_planes[l] == planes)
        return 0;
    rows_weights_free(e, l);
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
static int lists_alloc(nc_gpu_neocog *e, uint32_t l)
{
    if (e->ln[0].l_ent[l])
        return 0;
    const int r = lists_try_alloc(e, l);
    if (r < 0) {
        lists_free(e, l);
        (void)cudaGetLastError();
    }
    return r;
}

/* 1 when the list kernel takes f float4 a lane and `planes` planes a
 * block (0: 128) on stage l's planes in that order of its blocks' warps,
 * or (orders NC_GPU_NEOCOG_LIST_ROWS and _ROWS_L1) the row kernel f warps
 * and `planes` planes (0: 32) a block */
static int list_ok(const nc_gpu_neocog *e, uint32_t l, uint32_t f, uint32_t planes,
                   uint32_t order)
{
    if (order == NC_GPU_NEOCOG_LIST_ROWS || order == NC_GPU_NEOCOG_LIST_ROWS_L1)
        return (f == 4 || f == 8 || f == 16) &&
               nc_gpu_neocog_s_rows_check(&e->s[l], planes ? planes : 32u) == 0;
    return order <= NC_GPU_NEOCOG_LIST_CHARS &&
           nc_gpu_neocog_s_list_check(&e->s[l], f, planes ? planes : 128u) == 0;
}

/* Stage l at n characters under the GEMM variant as tuned so far (the
 * fastest of the GEMM path, the sparse kernel and the warp kernel took
 * `best` ms), against the list kernel with 1, 2 or 4 float4 a lane, 32,
 * 64 or 128 planes a block and either order of a block's warps, and the
 * row kernel with 8 or 16 warps and 32, 64, 96 or 128 planes a block, its
 * weights in shared memory or through L1;
 * the fastest stays (s_list_big, and the warp kernel off where it wins).
 * Lists that lose are freed. */
static int tune_list_big(nc_gpu_neocog *e, uint32_t l, uint32_t n, float best)
{
    static const uint32_t fs[] = { 1, 2, 4 }, planes[] = { 32, 64, 128 },
                          warps[] = { 8, 16 };
    const int layer = 1 + 2 * (int)l;
    e->s_list_big[l] = 0;
    int r = lists_alloc(e, l);
    if (r == -ENOMEM || r == -EIO)      /* no room for the lists: keep what we have */
        return 0;
    uint32_t bf = 0, bp = 0, bo = 0;
    /* every candidate pays its list build (the S-layer does not mark the
     * lists it builds as ready), whether or not the C-layer before would
     * write them: the same cost for each, and none of it left out against
     * the GEMM path */
    e->ln[0].l_ready_mul[l] = 0;
    for (uint32_t order = 0; r == 0 && order <= NC_GPU_NEOCOG_LIST_ROWS_L1; order++) {
        const int rows = order >= NC_GPU_NEOCOG_LIST_ROWS;
        const size_t n_p = rows ? 4 : 3;
        for (size_t fi = 0; r == 0 && fi < (rows ? 2u : 3u); fi++)
            for (size_t pi = 0; r == 0 && pi < n_p; pi++) {
                const uint32_t f = rows ? warps[fi] : fs[fi],
                               p = rows ? rows_planes[pi] : planes[pi];
                if (!list_ok(e, l, f, p, order))
                    continue;
                if (rows && (r = rows_weights_for(e, l, p)) < 0) {
                    r = r == -ENOMEM ? 0 : r;   /* no room: not this one */
                    continue;
                }
                float ms = 0.0f;
                e->s_list_big[l] = f;
                e->s_list_planes_big[l] = p;
                e->s_list_order[l] = order;
                r = time_s(e, NC_GPU_NEOCOG_GEMM, layer, n, 3, &ms);
                if (r == 0 && ms < best) {
                    best = ms;
                    bf = f;
                    bp = p;
                    bo = order;
                }
            }
    }
    e->s_list_big[l] = bf;
    e->s_list_planes_big[l] = bp;
    e->s_list_order[l] = bo;
    if (r == 0 && bf && bo >= NC_GPU_NEOCOG_LIST_ROWS)
        r = rows_weights_for(e, l, bp);
    else
        rows_weights_free(e, l);
    if (bf)
        e->s_warp_big[l] = 0;
    else
        lists_free(e, l);
    return r;
}

/* GEMM: per stage, the GEMM path or the sparse kernel, whichever is faster
 * on n characters, then the kernel by teams of warps against that; then
 * AUTO's threshold: the smallest batch of 1, 2, 4 ..
 * n from which on the whole net under GEMM beats the sparse one (never, if
 * it does not at n). */
static int tune_gemm(nc_gpu_neocog *e, uint32_t n)
{
    int r = tune_c(e, NC_GPU_NEOCOG_GEMM, n);
    if (r == 0)
        r = run_net(e, &e->ln[0], NC_GPU_NEOCOG_SPARSE, n, e->d_in, e->d_scores, e->d_labels, e->run);
    /* the time of each stage's pick (0: not timed, the sparse kernel
     * cannot take it); the GEMM variant's own kernels, not the warp
     * kernel an earlier tuning may have left in their place */
    float path[NC_NEOCOG_MAX_STAGES] = { 0.0f };
    for (uint32_t l = 0; l < e->n_stages; l++)
        e->s_warp_big[l] = e->s_list_big[l] = 0;
    for (uint32_t l = 0; r == 0 && l < e->n_stages; l++) {
        float mg = 0.0f, ms = 0.0f;
        e->use_gemm[l] = 1;
        const int fit = s_fits(e, NC_GPU_NEOCOG_SPARSE, l);
        if (fit <= 0) {         /* the sparse kernel cannot take it: GEMM */
            r = fit < 0 ? fit : 0;
            continue;
        }
        r = time_s(e, NC_GPU_NEOCOG_GEMM, 1 + 2 * (int)l, n, 3, &mg);
        if (r == 0)
            r = time_s(e, NC_GPU_NEOCOG_SPARSE, 1 + 2 * (int)l, n, 3, &ms);
        if (r == 0) {
            e->use_gemm[l] = mg <= ms;
            path[l] = mg <= ms ? mg : ms;
        }
    }
    for (uint32_t l = 0; r == 0 && l < e->n_stages; l++) {
        float best = 0.0f;
        r = tune_warp_big(e, l, n, path[l], &best);
        if (r == 0)
            r = tune_list_big(e, l, n, best);
    }
    uint32_t from = 0xffffffffu;
    for (uint32_t m = n; r == 0 && m >= 1; m = m == n && (m & (m - 1)) ? 1u << (31 - __builtin_clz(m)) : m / 2) {
        float mg = 0.0f, ms = 0.0f;
        r = time_s(e, NC_GPU_NEOCOG_GEMM, -1, m, 3, &mg);
        if (r == 0)
            r = time_s(e, NC_GPU_NEOCOG_SPARSE, -1, m, 3, &ms);
        if (r < 0 || mg > ms)
            break;
        from = m;
    }
    e->auto_min = from;
    /* batch 1, what a single request runs: its C kernels apart, since the
     * best kernel for one character is not the best for n */
    if (r == 0 && n >= e->c_min && e->c_min > 1) {
        const int v1 = 1 >= e->auto_min ? NC_GPU_NEOCOG_GEMM : NC_GPU_NEOCOG_SPARSE;
        /* a warm-up of the net at batch 1 first, so that the descent's
         * first timings are not taken at lower clocks than its last (a
         * tuned engine once kept teams of 4 / 4 on US2 / US3 that made the
         * net 49.7 us against 42.9) */
        for (int i = 0; r == 0 && i < 200; i++)
            r = run_net(e, &e->ln[0], v1, 1, e->d_in, e->d_scores, e->d_labels, e->run);
        if (v1 == NC_GPU_NEOCOG_SPARSE) {
            /* the splits with the sparse kernel on every stage, then the
             * warp teams (or that kernel) against them, then their planes
             * a block, all with UG and US1 apart; then UG and US1 as one
             * kernel against that */
            for (uint32_t l = 0; l < e->n_stages; l++) {
                e->s_warp[l] = 0;
                e->s_planes[l] = 0;
            }
            e->gs1 = 0;
            r = tune_split(e);
            if (r == 0)
                r = tune_warp(e);
            if (r == 0)
                r = tune_planes(e);
            if (r == 0 && e->gs1_ok) {
                static const uint32_t fuse[] = { 0, 1 };
                r = descend_batch1(e, v1, &e->gs1, 1, fuse, 2, NULL);
            }
        }
        if (r == 0)
            r = tune_small_c(e, v1);
    }
    drop_graphs(e);
    return r;
}

static int tune(nc_gpu_neocog *e, int variant, uint32_t n)
{
    static const uint32_t cand[] = { 1, 2, 3, 4, 6, 8, 16 };
    if (variant == NC_GPU_NEOCOG_GEMM || variant == NC_GPU_NEOCOG_AUTO)
        return tune_gemm(e, n);
    int r = run_net(e, &e->ln[0], variant, n, e->d_in, e->d_scores, e->d_labels, e->run);
    for (uint32_t l = 0; r == 0 && l < e->n_stages; l++) {
        uint32_t best_p = e->block[variant][l];
        float best = 1e30f;
        for (size_t i = 0; r == 0 && i < sizeof cand / sizeof cand[0]; i++) {
            if (cand[i] > (uint32_t)e->s[l].g.n_out)
                continue;
            /* only blocks the kernel takes (threads, shared memory): a
             * refused one would time the GEMM path run in its place */
            const int c = nc_gpu_neocog_s_check(&e->s[l], e->chunk_cap, variant, cand[i]);
            if (c == -E2BIG || c == -EINVAL)
                continue;
            if ((r = c) < 0)
                break;
            e->block[variant][l] = cand[i];
            e->s_fit[variant][l] = 1;
            float ms = 0.0f;
            r = time_s(e, variant, 1 + 2 * (int)l, n, 3, &ms);
            if (r == 0 && ms < best) {
                best = ms;
                best_p = cand[i];
            }
        }
        e->block[variant][l] = best_p;
        e->s_fit[variant][l] = 0;
    }
    drop_graphs(e);
    return r;
}

extern "C" int nc_gpu_neocog_tune(nc_gpu_neocog *e, int variant, uint32_t n)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (variant < 0 || variant > NC_GPU_NEOCOG_AUTO || n < 1 || n > e->chunk)
        return -EINVAL;
    return fail(e, tune(e, variant, n));
}

extern "C" uint32_t nc_gpu_neocog_get_chunk(const nc_gpu_neocog *e)
{
    return e ? e->chunk : 0;
}

extern "C" int nc_gpu_neocog_stage_s_variant(nc_gpu_neocog *e, int variant, uint32_t l)
{
    if (!e || variant < 0 || variant >= NC_GPU_NEOCOG_N_VARIANTS || l >= e->n_stages)
        return -EINVAL;
    int r = enter(e);
    if (r < 0)
        return r;
    const int fit = s_fits(e, variant, l);
    return fit < 0 ? fail(e, fit) : fit ? variant : NC_GPU_NEOCOG_GEMM;
}

extern "C" int nc_gpu_neocog_set_auto(nc_gpu_neocog *e, uint32_t from)
{
    if (!e)
        return -EINVAL;
    e->auto_min = from;
    drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_auto(const nc_gpu_neocog *e)
{
    return e ? e->auto_min : 0;
}

extern "C" int nc_gpu_neocog_stage_uses_gemm(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? e->use_gemm[l] : 0;
}

extern "C" int nc_gpu_neocog_set_c_kind(nc_gpu_neocog *e, uint32_t l, int kind)
{
    if (!e || l + 1 >= e->n_stages || kind < 0 || kind >= NC_GPU_NEOCOG_C_N_KINDS)
        return -EINVAL;
    e->c_kind[l] = (uint32_t)kind;
    drop_graphs(e);
    return 0;
}

extern "C" int nc_gpu_neocog_set_c_min(nc_gpu_neocog *e, uint32_t from)
{
    if (!e)
        return -EINVAL;
    e->c_min = from;
    drop_graphs(e);
    return 0;
}

extern "C" int nc_gpu_neocog_get_c_kind(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l + 1 < e->n_stages ? (int)e->c_kind[l] : -EINVAL;
}

extern "C" int nc_gpu_neocog_set_c_small_kind(nc_gpu_neocog *e, uint32_t l, int kind)
{
    if (!e || l + 1 >= e->n_stages || kind < 0 || kind >= NC_GPU_NEOCOG_C_N_KINDS)
        return -EINVAL;
    e->c_small_kind[l] = (uint32_t)kind;
    drop_graphs(e);
    return 0;
}

extern "C" int nc_gpu_neocog_get_c_small_kind(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l + 1 < e->n_stages ? (int)e->c_small_kind[l] : -EINVAL;
}

extern "C" int nc_gpu_neocog_set_split(nc_gpu_neocog *e, uint32_t l, uint32_t splits)
{
    if (!e || l >= e->n_stages || splits > NC_GPU_NEOCOG_S_MAX_SPLITS)
        return -EINVAL;
    e->split[l] = splits ? splits
                         : nc_gpu_neocog_s_default_splits(&e->s[l],
                                                          e->block[NC_GPU_NEOCOG_SPARSE][l],
                                                          e->n_sm);
    drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_split(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? e->split[l] : 0;
}

/* a warp kernel's team (0: none) and planes a block (0: its default), as
 * the setters below take them */
static int s_team_ok(uint32_t team)
{
    return team <= NC_GPU_NEOCOG_S_WARP_MAX && (team & (team - 1)) == 0;
}

static int s_planes_ok(uint32_t planes)
{
    return planes <= NC_GPU_NEOCOG_S_WARP_PLANES &&
           (!planes || planes >= NC_GPU_NEOCOG_S_WARP_PLANES_MIN) && (planes & (planes - 1)) == 0;
}

extern "C" int nc_gpu_neocog_set_s_warp(nc_gpu_neocog *e, uint32_t l, uint32_t team)
{
    if (!e || l >= e->n_stages || !s_team_ok(team))
        return -EINVAL;
    e->s_warp[l] = team;
    drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_warp(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? e->s_warp[l] : 0;
}

extern "C" int nc_gpu_neocog_set_s_planes(nc_gpu_neocog *e, uint32_t l, uint32_t planes)
{
    if (!e || l >= e->n_stages || !s_planes_ok(planes))
        return -EINVAL;
    e->s_planes[l] = planes;
    drop_graphs(e);
    return 0;
}

extern "C" int nc_gpu_neocog_set_s_warp_big(nc_gpu_neocog *e, uint32_t l, uint32_t team,
                                            uint32_t planes)
{
    if (!e || l >= e->n_stages || !s_team_ok(team) || !s_planes_ok(planes))
        return -EINVAL;
    e->s_warp_big[l] = team;
    e->s_planes_big[l] = planes;
    drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_warp_big(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? e->s_warp_big[l] : 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_planes_big(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? e->s_planes_big[l] : 0;
}

extern "C" int nc_gpu_neocog_set_s_list_big(nc_gpu_neocog *e, uint32_t l, uint32_t f,
                                            uint32_t planes, uint32_t order)
{
    if (!e || l >= e->n_stages || (f && !list_ok(e, l, f, planes, order)) ||
        order > NC_GPU_NEOCOG_LIST_ROWS_L1)
        return -EINVAL;
    if (f) {
        int r = enter(e);
        if (r == 0)
            r = lists_alloc(e, l);
        if (r == 0 && order >= NC_GPU_NEOCOG_LIST_ROWS)
            r = rows_weights_for(e, l, planes ? planes : 32u);
        if (r < 0)
            return r;
        if (order < NC_GPU_NEOCOG_LIST_ROWS)
            rows_weights_free(e, l);
    } else {
        if (e->run)
            cudaStreamSynchronize(e->run);      /* no kernel may still read them */
        lists_free(e, l);
    }
    e->s_list_big[l] = f;
    e->s_list_planes_big[l] = order >= NC_GPU_NEOCOG_LIST_ROWS && f && !planes ? 32u : planes;
    e->s_list_order[l] = order;
    drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_list_big(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? e->s_list_big[l] : 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_list_order(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages && e->s_list_big[l] ? e->s_list_order[l] : 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_list_planes_big(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages && e->s_list_big[l]
               ? (e->s_list_planes_big[l] ? e->s_list_planes_big[l] : 128u) : 0;
}

extern "C" int nc_gpu_neocog_set_gs1(nc_gpu_neocog *e, uint32_t on)
{
    if (!e || on > 1 || (on && !e->gs1_ok))
        return -EINVAL;
    e->gs1 = on;
    drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_gs1(const nc_gpu_neocog *e)
{
    return e && e->gs1_ok ? e->gs1 : 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_planes(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? (e->s_planes[l] ? e->s_planes[l] : NC_GPU_NEOCOG_S_WARP_PLANES)
                                : 0;
}

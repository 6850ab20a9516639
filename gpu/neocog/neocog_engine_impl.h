/* gpu/neocog/neocog_engine_impl.h — the resident neocognitron's private
 * state, shared by the files that make the engine: neocog_engine.cu (make,
 * forward, free), _mem.cu (what it allocates), _graph.cu (graphs, lanes,
 * streams), _sched.cu (the kernel of each layer), _tune.cu (the autotuner)
 * and _knobs.cu (the settings).  Nothing outside gpu/neocog/neocog_engine*.cu
 * includes it.  Layer: gpu (C++, CUDA). */
#ifndef NC_GPU_NEOCOG_ENGINE_IMPL_H
#define NC_GPU_NEOCOG_ENGINE_IMPL_H

#include "neocog_engine_dev.h"

#include <errno.h>

#include "cuda_check.cuh"
#include "neocog_c.cuh"
#include "neocog_class.cuh"
#include "neocog_g.cuh"
#include "neocog_gs1.cuh"
#include "neocog_iv.cuh"
#include "neocog_list.cuh"
#include "neocog_s.cuh"
#include "neocog_s_gemm.cuh"
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

static inline int fail(nc_gpu_neocog *e, int r)
{
    if (r == -EIO)
        e->failed = 1;
    return r;
}

static inline int enter(nc_gpu_neocog *e)
{
    if (!e)
        return -EINVAL;
    if (e->failed)
        return -EIO;
    NC_CUDA_CHECK(cudaSetDevice(e->device));
    return 0;
}

/* ---- neocog_engine_mem.cu ---- */
/* Lane x's chunk buffers: every layer's activations and occupancy map, the
 * GEMM path's scratch and the input lists of every stage where `like` (may
 * be NULL) has them. */
int neocog_eng_lane_alloc(const nc_gpu_neocog *e, nc_lane *x, const nc_lane *like,
                          cudaStream_t st);
/* Everything lane x holds; x is left empty. */
void neocog_eng_lane_free(nc_lane *x);
/* Everything on the device and the host; e's sizes are set. */
int neocog_eng_alloc_all(nc_gpu_neocog *e, const nc_neocog *net);
/* Stage l's input lists (lane 0; lane 1 goes and is made again with them). */
void neocog_eng_lists_free(nc_gpu_neocog *e, uint32_t l);
int neocog_eng_lists_alloc(nc_gpu_neocog *e, uint32_t l);
/* Stage l's row-kernel weights, laid out for `planes` planes a block. */
void neocog_eng_rows_weights_free(nc_gpu_neocog *e, uint32_t l);
int neocog_eng_rows_weights_for(nc_gpu_neocog *e, uint32_t l, uint32_t planes);

/* ---- neocog_engine_graph.cu ---- */
void neocog_eng_drop_graphs(nc_gpu_neocog *e);
/* 1 when a batch of n replays a captured graph. */
int neocog_eng_graph_fits(const nc_gpu_neocog *e, uint32_t n);
/* The whole network on the first n uploaded images, in chunks (graph: by a
 * captured graph where n fits one); results stay on the device. */
int neocog_eng_enqueue_dev(nc_gpu_neocog *e, uint32_t n, int graph);
/* A forward of n images from the pinned input, by chunks with the copies
 * overlapped or by one graph; forward_wait waits for either. */
int neocog_eng_forward_chunks(nc_gpu_neocog *e, uint32_t n);
int neocog_eng_forward_graph(nc_gpu_neocog *e, uint32_t n);
int neocog_eng_forward_wait(nc_gpu_neocog *e);

/* ---- neocog_engine_sched.cu ---- */
/* The S-layer variant a batch of n characters runs with. */
int neocog_eng_eff_variant(const nc_gpu_neocog *e, uint32_t n);
/* 1 when variant v's kernel takes stage l's S-layer, 0 when the GEMM path
 * runs it instead, or a negative errno. */
int neocog_eng_s_fits(nc_gpu_neocog *e, int v, uint32_t l);
/* 1 when the list or row kernel takes stage l with these settings. */
int neocog_eng_list_ok(const nc_gpu_neocog *e, uint32_t l, uint32_t f, uint32_t planes,
                       uint32_t order);
/* One layer (nc_neocog_layer), UG and US1 as one kernel, or the whole
 * network, on n (<= chunk) characters of lane x, on stream st. */
int neocog_eng_run_layer(nc_gpu_neocog *e, nc_lane *x, int v, int layer, uint32_t n,
                         const float *in, float *scores, int32_t *labels, cudaStream_t st);
int neocog_eng_run_gs1(nc_gpu_neocog *e, nc_lane *x, uint32_t n, const float *in,
                       cudaStream_t st);
int neocog_eng_run_net(nc_gpu_neocog *e, nc_lane *x, int v, uint32_t n, const float *in,
                       float *scores, int32_t *labels, cudaStream_t st);

#endif

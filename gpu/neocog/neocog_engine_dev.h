/* gpu/neocog/neocog_engine_dev.h — the resident neocognitron's settings and
 * pieces for benchmarks, tests and the tuner: S-layer variants and their
 * blocks, chunk and lanes, the C kernels, the sparse kernel's splits, the
 * warp-team and list kernels, UG+US1 fusion, and the steps of a forward
 * (upload, enqueue, download) one at a time.  The daemon needs none of it
 * (neocog_engine.h is its interface); tools/bench_gpu_neocog.cu and
 * tests/gpu/ include this.  Layer: gpu, C linkage; errors as in
 * neocog_engine.h. */
#ifndef NC_GPU_NEOCOG_ENGINE_DEV_H
#define NC_GPU_NEOCOG_ENGINE_DEV_H

#include "neocog_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The C kernel the engine picks per layer (DIRECT unless the tuner found
 * another faster) runs from this batch on; below it the small-batch kernel
 * (NC_GPU_NEOCOG_C_SMALL unless the tuner found another faster at batch 1)
 * does: on an H100, batch 1, TILE UC1..UC3 8.6 / 8.2 / 6.1 us against
 * STAGED 10.9 / 9.7 / 6.7 us (DIRECT, long strips per warp and few warps,
 * slower still), and at 1024 DIRECT 0.73 / 0.29 / 0.08 us per character
 * against TILE 1.42 / 0.95 / 0.63; 32 is where AUTO switches to GEMM. */
#define NC_GPU_NEOCOG_C_MIN 32
/* The small-batch C kernel by default: WARP, whose launches overlap the
 * previous layer's (programmatic dependence, gpu/neocog/neocog_dev.cuh).  On an
 * H100 at batch 1, with the warp-team S kernels, the whole net took 50.8 us
 * with WARP on every C-layer against 55.0 TILE, 59.4 STAGED and 64.5 DIRECT
 * (TILE launched with the overlap took 68-73 us: its few heavy blocks,
 * launched early, land badly, so it runs without). */
#define NC_GPU_NEOCOG_C_SMALL NC_GPU_NEOCOG_C_WARP
/* AUTO's threshold until the tuner measures one: GEMM from this batch on. */
#define NC_GPU_NEOCOG_AUTO_MIN 128
/* The S kernel by teams of warps (nc_gpu_neocog_set_s_warp) runs up to this
 * batch: on an H100, the seed's net, the whole net by graph took 52.5 /
 * 74.6 / 109.1 / 172.2 / 305.2 us at batches 1 / 2 / 4 / 8 / 16 with it
 * and 74.8 / 88.3 / 112.0 / 189.1 / 305.3 us with the sparse kernel. */
#define NC_GPU_NEOCOG_S_WARP_BATCH 8

/* S-layer variant (nc_gpu_neocog_variant, or NC_GPU_NEOCOG_AUTO) for the
 * following forwards. */
int nc_gpu_neocog_set_variant(nc_gpu_neocog *eng, int variant);
/* Positions per block of a variant at stage l (0: the default). */
int nc_gpu_neocog_set_block(nc_gpu_neocog *eng, int variant, uint32_t l,
                            uint32_t per_block);
uint32_t nc_gpu_neocog_get_block(const nc_gpu_neocog *eng, int variant, uint32_t l);
/* Characters per pass (1 .. the chunk the engine was made with). */
int nc_gpu_neocog_set_chunk(nc_gpu_neocog *eng, uint32_t chunk);
/* Lanes for batches of more than one chunk: 1 or NC_GPU_NEOCOG_MAX_LANES
 * (the default); 1 frees lane 1's buffers. */
int nc_gpu_neocog_set_lanes(nc_gpu_neocog *eng, uint32_t lanes);
uint32_t nc_gpu_neocog_get_lanes(const nc_gpu_neocog *eng);

/* ---- pieces for benchmarks and tests ---------------------------------------- */

/* Copy n images to the device input buffer (synchronous). */
int nc_gpu_neocog_upload(nc_gpu_neocog *eng, const float *inputs, uint32_t n);
/* Queue the whole network on the first n uploaded images (in chunks) on the
 * engine's stream; results stay on the device.  graph: replay a captured
 * graph when n fits one.  Does not wait. */
int nc_gpu_neocog_enqueue(nc_gpu_neocog *eng, uint32_t n, int graph);
/* Queue one layer (nc_neocog_layer) on the activations of the first n
 * (<= chunk) characters, as left by the previous layer. */
int nc_gpu_neocog_enqueue_layer(nc_gpu_neocog *eng, int layer, uint32_t n);
/* Queue UG and US1 as one kernel (gpu/neocog/neocog_gs1.cuh) on the first n (<=
 * chunk) uploaded images, as a forward with nc_gpu_neocog_set_gs1 on does;
 * -EINVAL where that kernel does not take the net. */
int nc_gpu_neocog_enqueue_gs1(nc_gpu_neocog *eng, uint32_t n);
/* Wait for the engine's stream. */
int nc_gpu_neocog_sync(nc_gpu_neocog *eng);
/* Copy a layer's activations of the first n (<= chunk) characters to host
 * (n * size^2 * stride floats, as nc_neocog_layer_out describes them). */
int nc_gpu_neocog_download_layer(nc_gpu_neocog *eng, int layer, uint32_t n, float *out);
/* Labels and scores of the first n characters of the last enqueue. */
int nc_gpu_neocog_download_results(nc_gpu_neocog *eng, uint32_t n, nc_neocog_result *ret);
/* The engine's stream (a cudaStream_t) for event timing. */
void *nc_gpu_neocog_stream(nc_gpu_neocog *eng);
/* nc_gpu_neocog_tune (neocog_engine.h) picks positions per block of a
 * variant for every stage by timing the
 * candidates on the first n uploaded images (n <= chunk).  For
 * NC_GPU_NEOCOG_GEMM (or AUTO): per stage, the GEMM path or the sparse
 * kernel, whichever is faster at n, then the kernel by teams of warps
 * against it (nc_gpu_neocog_set_s_warp_big), then the list kernel against
 * the fastest so far (nc_gpu_neocog_set_s_list_big); then AUTO's threshold, the smallest
 * batch of 1, 2, 4 .. n from which on GEMM wins (0xffffffff: never).  With
 * GEMM or AUTO it also keeps the fastest C kernel per layer at n (c_kind,
 * or c_small_kind when n < c_min) and, when n >= c_min, what batch 1 runs
 * by timing the whole net at batch 1 (a layer timed alone is not the layer
 * in the net): with the sparse variant there, the splits and then the warp
 * teams and their planes a block (UG and US1 as two kernels), then UG and
 * US1 as one kernel or two, then the small-batch C kernels, each stage by
 * stage from its default, every candidate in the whole net, the fastest
 * kept. */
/* The S-layer kernel stage l really runs when variant (not AUTO) is asked
 * for: variant itself, or NC_GPU_NEOCOG_GEMM where that variant's kernel
 * cannot take the stage (too many planes for its block or too much shared
 * memory; nc_gpu_neocog_s_check).  Negative errno on bad arguments. */
int nc_gpu_neocog_stage_s_variant(nc_gpu_neocog *eng, int variant, uint32_t l);
/* AUTO's threshold: GEMM for batches >= from. */
int nc_gpu_neocog_set_auto(nc_gpu_neocog *eng, uint32_t from);
uint32_t nc_gpu_neocog_get_auto(const nc_gpu_neocog *eng);
/* 1 when stage l runs the GEMM path under NC_GPU_NEOCOG_GEMM. */
int nc_gpu_neocog_stage_uses_gemm(const nc_gpu_neocog *eng, uint32_t l);
/* The kernel of C-layer l (l + 1 < stages): NC_GPU_NEOCOG_C_STAGED,
 * _DIRECT, _TILE or _WARP (gpu/neocog/neocog_c.cuh; the
 * default is DIRECT, and nc_gpu_neocog_tune with GEMM or AUTO keeps the
 * fastest one per layer at its batch). */
int nc_gpu_neocog_set_c_kind(nc_gpu_neocog *eng, uint32_t l, int kind);
/* Batches below `from` run the small-batch C kernel (set_c_small_kind)
 * whatever c_kind says (default NC_GPU_NEOCOG_C_MIN; 1: c_kind always). */
int nc_gpu_neocog_set_c_min(nc_gpu_neocog *eng, uint32_t from);
int nc_gpu_neocog_get_c_kind(const nc_gpu_neocog *eng, uint32_t l);
/* The kernel of C-layer l below c_min (default NC_GPU_NEOCOG_C_SMALL;
 * nc_gpu_neocog_tune with GEMM or AUTO at n >= c_min picks it by the whole
 * net at batch 1, as it says).  A kernel that refuses the
 * layer is replaced by the STAGED one, or DIRECT where STAGED refuses. */
int nc_gpu_neocog_set_c_small_kind(nc_gpu_neocog *eng, uint32_t l, int kind);
int nc_gpu_neocog_get_c_small_kind(const nc_gpu_neocog *eng, uint32_t l);
/* The sparse kernel of stage l splits each position's reduction in
 * `splits` runs at batch 1 and splits / n at batch n, none below 2
 * (nc_gpu_neocog_s_forward_split; 1..NC_GPU_NEOCOG_S_MAX_SPLITS, 0: the
 * default, nc_gpu_neocog_s_default_splits for this device).
 * nc_gpu_neocog_tune with GEMM or AUTO at n >= c_min, when batch 1 runs
 * the sparse kernels, picks them by the whole net at batch 1 (with the
 * sparse kernel on every stage, before the warp teams). */
int nc_gpu_neocog_set_split(nc_gpu_neocog *eng, uint32_t l, uint32_t splits);
uint32_t nc_gpu_neocog_get_split(const nc_gpu_neocog *eng, uint32_t l);
/* Batches up to NC_GPU_NEOCOG_S_WARP_BATCH, where the sparse kernel would
 * run stage l, run the kernel by teams of warps
 * (nc_gpu_neocog_s_forward_warp) instead, with teams of `team` warps at
 * batch 1 (1, 2, 4, 8 or 16), halved until team x n <= `team` at batch n;
 * 0: the sparse kernel (and its split).  The default is
 * nc_gpu_neocog_s_warp_default at batch 1; nc_gpu_neocog_tune with GEMM or
 * AUTO at n >= c_min, when batch 1 runs the sparse variant, picks each
 * stage's team (or the sparse kernel) by the whole net at batch 1. */
int nc_gpu_neocog_set_s_warp(nc_gpu_neocog *eng, uint32_t l, uint32_t team);
uint32_t nc_gpu_neocog_get_s_warp(const nc_gpu_neocog *eng, uint32_t l);
/* The planes a block of that kernel covers at stage l (8, 16, 32, 64 or
 * 128; 0: 128, the default).  Fewer planes a block shorten each lane's
 * chain of weight loads and put more blocks on the grid.  The same tuning
 * picks them after the teams, then the teams once more. */
int nc_gpu_neocog_set_s_planes(nc_gpu_neocog *eng, uint32_t l, uint32_t planes);
uint32_t nc_gpu_neocog_get_s_planes(const nc_gpu_neocog *eng, uint32_t l);
/* Batches that run the sparse variant (under AUTO, those below its
 * threshold) run UG and US1 as one kernel (gpu/neocog/neocog_gs1.cuh) when on is
 * 1, as two when 0; the GEMM path keeps its own two (on an H200 at 1024
 * characters the one kernel made the sparse variant 88k -> 149k characters
 * a second, and the GEMM path 222k -> 202k).  The default is 1 where that
 * kernel takes the net (-EINVAL for 1 where it does not; get says 0
 * there); nc_gpu_neocog_tune with GEMM or AUTO at n >= c_min, when batch 1
 * runs the sparse variant, keeps whichever makes the whole net at batch 1
 * faster, after the teams and planes (tuned with the two kernels). */
int nc_gpu_neocog_set_gs1(nc_gpu_neocog *eng, uint32_t on);
uint32_t nc_gpu_neocog_get_gs1(const nc_gpu_neocog *eng);
/* Where the GEMM variant (and AUTO from its threshold) runs stage l, run
 * the kernel by teams of warps instead, with teams of `team` warps (1, 2,
 * 4, 8 or 16; 0: the GEMM path or the sparse kernel, as tuned) and
 * `planes` planes a block (as nc_gpu_neocog_set_s_planes). */
int nc_gpu_neocog_set_s_warp_big(nc_gpu_neocog *eng, uint32_t l, uint32_t team,
                                 uint32_t planes);
uint32_t nc_gpu_neocog_get_s_warp_big(const nc_gpu_neocog *eng, uint32_t l);
uint32_t nc_gpu_neocog_get_s_planes_big(const nc_gpu_neocog *eng, uint32_t l);
/* Where the GEMM variant (and AUTO from its threshold) runs stage l, run
 * the list kernel of gpu/neocog/neocog_list.cuh instead (it takes precedence over
 * the warp kernel above): the stage's input listed position by position,
 * then the S-layer from the lists.  order: a block's warps take eight
 * positions of one character (NC_GPU_NEOCOG_LIST_POSITIONS) or one
 * position of eight characters (NC_GPU_NEOCOG_LIST_CHARS), with f float4
 * of planes a lane (1, 2 or 4; 0: off) and `planes` planes a block (a
 * multiple of 4 up to 4096, at most 32 f float4 of the stage's planes; 0:
 * 128); or the row kernel slides a warp along each output row
 * (NC_GPU_NEOCOG_LIST_ROWS), f warps a block (4, 8 or 16; 0: off) and
 * `planes` planes a block (32, 64, 96 or 128; 0: 32), where
 * nc_gpu_neocog_s_rows_check takes the stage, its weights in shared
 * memory (or read through L1: NC_GPU_NEOCOG_LIST_ROWS_L1).
 * The first call that turns it on for a stage allocates that stage's
 * lists for a chunk (cnt, q and K_in entries an input position, and the
 * row kernel's weights); -ENOMEM or a CUDA error there leaves the setting
 * off; turning it off frees them.  -EINVAL for settings the kernels
 * refuse.  nc_gpu_neocog_tune with GEMM or AUTO times every order per
 * stage after the warp kernel and keeps the fastest where it is faster
 * (and frees the lists where not). */
#define NC_GPU_NEOCOG_LIST_POSITIONS 0u
#define NC_GPU_NEOCOG_LIST_CHARS 1u
#define NC_GPU_NEOCOG_LIST_ROWS 2u
#define NC_GPU_NEOCOG_LIST_ROWS_L1 3u      /* the row kernel, weights through L1 */
int nc_gpu_neocog_set_s_list_big(nc_gpu_neocog *eng, uint32_t l, uint32_t f,
                                 uint32_t planes, uint32_t order);
uint32_t nc_gpu_neocog_get_s_list_big(const nc_gpu_neocog *eng, uint32_t l);
uint32_t nc_gpu_neocog_get_s_list_order(const nc_gpu_neocog *eng, uint32_t l);
/* planes a block of the list or row kernel (0 where off) */
uint32_t nc_gpu_neocog_get_s_list_planes_big(const nc_gpu_neocog *eng, uint32_t l);

#ifdef __cplusplus
}
#endif

#endif

/* gpu/neocog/neocog_engine.h — the neocognitron resident on a GPU: weights and tables
 * uploaded once, activations for a chunk of characters kept on the device,
 * pinned host buffers, transfers overlapped with compute on streams, CUDA
 * graphs for small batches.
 *
 * Layer: gpu, C linkage.  Every function returns 0 or a negative errno:
 * -ENODEV (no such device), -ENOMEM (device or pinned memory), -EINVAL,
 * -EIO (a CUDA failure; the engine is then marked failed and refuses further
 * work, so the caller frees it and falls back to the CPU).  The CUDA
 * failure's text is in nc_gpu_last_error().  One engine is used by one
 * thread at a time. */
#ifndef NC_GPU_NEOCOG_ENGINE_H
#define NC_GPU_NEOCOG_ENGINE_H

#include <stdint.h>

#include "neocog.h"
#include "neocog_geom.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nc_gpu_neocog nc_gpu_neocog;

/* Batches up to this size replay a captured CUDA graph. */
#define NC_GPU_NEOCOG_GRAPH_MAX 64
/* Most characters per pass through the layers (activations of one chunk
 * are reused by every chunk; an engine made for fewer passes them all at
 * once).  At least 1024 keeps the GEMM path's smallest layer, US4 at 25
 * rows per character, above the 132 SMs of an H200 in 64-row tiles; on an
 * H100 at 16,384 characters, chunks of 512 / 1024 gave 302,845 / 325,335
 * characters/s, each chunk's nine layers paying their ramp
 * and tail once. */
#define NC_GPU_NEOCOG_CHUNK 4096
/* Chunk buffers ("lanes"): a batch of more than one chunk runs its odd
 * chunks on a second set of buffers and its own stream, so that two chunks'
 * kernels overlap (each one's ramp-up, tail and kernel boundaries leave SMs
 * to the other).  Lane 1 is made on the first such batch (one more set of
 * chunk buffers: about 4 GB for the seed's net at 4096 characters) and runs
 * with one lane where it cannot be.  On an H100 at 16,384 characters, two
 * engines on half the batch each gave 454,077 characters/s against one
 * engine's 439,097. */
#define NC_GPU_NEOCOG_MAX_LANES 2
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

/* Upload net (every stage with >= 1 plane, labels set) to device `device`
 * for batches of up to max_batch characters.  The engine keeps no pointer
 * into net.  Default S-layer variant: NC_GPU_NEOCOG_AUTO (sparse kernels
 * for small batches, the GEMM path from NC_GPU_NEOCOG_AUTO_MIN or the tuned
 * threshold on). */
int nc_gpu_neocog_new(const nc_neocog *net, int device, uint32_t max_batch,
                      nc_gpu_neocog **ret_eng);
void nc_gpu_neocog_free(nc_gpu_neocog *eng);     /* NULL is fine */

/* Answer by the interpolating-vector classifier iv (nc_neocog_iv_new for
 * net, the net the engine was made from) instead of UC4's maximum response:
 * the scores and labels of every later forward are nc_neocog_iv_classify's
 * on the device's activations (gpu/neocog/neocog_iv.cuh).  iv NULL: back to UC4.
 * The engine keeps no pointer into net or iv.  -EINVAL when net's planes or
 * sizes are not the engine's. */
int nc_gpu_neocog_set_iv(nc_gpu_neocog *eng, const nc_neocog *net, const nc_neocog_iv *iv);

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

/* Recognise n in_size x in_size images (host, n * in_size^2 floats) into
 * ret[0..n).  Waits for the result. */
int nc_gpu_neocog_forward(nc_gpu_neocog *eng, const float *inputs, uint32_t n,
                          nc_neocog_result *ret);

/* The same in two halves, so that several engines (a committee's members,
 * each on its own streams) work at once: _start copies the images in and
 * queues the network and the copies out; _finish (same n) waits and writes
 * ret.  Between the two the engine takes no other forward (-EINVAL). */
int nc_gpu_neocog_forward_start(nc_gpu_neocog *eng, const float *inputs, uint32_t n);
int nc_gpu_neocog_forward_finish(nc_gpu_neocog *eng, uint32_t n, nc_neocog_result *ret);

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
/* Pick positions per block of a variant for every stage by timing the
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
int nc_gpu_neocog_tune(nc_gpu_neocog *eng, int variant, uint32_t n);
/* Characters per pass now (the activations download_layer reads are those
 * of the last pass on lane 0: after a forward of n <= chunk, all n). */
uint32_t nc_gpu_neocog_get_chunk(const nc_gpu_neocog *eng);
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

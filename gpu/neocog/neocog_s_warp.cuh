/* gpu/neocog/neocog_s_warp.cuh — the S-layer by teams of warps
 * that read their windows straight from global memory (twin of
 * nc_neocog_s_forward, like every kernel of neocog_s.cuh).
 *
 * Layer: gpu, C linkage.
 *
 * Why another S kernel: at batch 1 the sparse kernel of neocog_s.cuh is
 * bound by the fixed work of each block (occupancy masks, the staged union
 * window, tap lists, a barrier between each) rather than by its
 * multiply-adds (docs/lessons.md).  Here a block stages
 * nothing but the tap table: each position gets W warps (the team), warp w
 * takes the taps w, w + W, .. of its window, and for its occupied ones
 * (ballot over the previous layer's occupancy map, lane = tap), four at a
 * time with their loads in flight together, reads the input cells' planes
 * with lane = plane kappa, adds c(t) u^2 to v(n) and
 * lists the non-zero planes (u, weight offset) in its own shared-memory
 * segment with ballot + popc, in a fixed order.  The lanes then run down the
 * list, lane j owning planes 4j .. 4j + 3 of the block's 128 (16-byte weight
 * loads, four FMAs an entry, eight entries in flight; with fewer planes the
 * warp's lanes split into groups that take every G-th entry and meet by a
 * fixed shuffle tree: at 16 planes, eight entries at once).  The W partial sums
 * meet once, in warp order, so every launch gives the same bits.  Planes
 * past a block's share (128, or fewer when asked) go to gridDim.y blocks
 * that list the same cells: fewer planes a block means more entry groups,
 * so a shorter chain of weight loads for each lane (US4 at batch 1: 25
 * positions, some 130 entries a warp one after another at 128 planes).  No
 * barrier in the scan, no atomics, every output cell written once.
 *
 * At large batches it lists each window's non-zero cells where the GEMM
 * path's tiles keep nearly every chunk, so the engine may run it there too
 * (nc_gpu_neocog_set_s_warp_big; on an H200 at 1024 characters US3 took
 * 1.07 us a character against the GEMM tile's 1.53). */
#ifndef NC_GPU_NEOCOG_S_WARP_CUH
#define NC_GPU_NEOCOG_S_WARP_CUH

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "neocog_geom.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most warps a position's team may have. */
#define NC_GPU_NEOCOG_S_WARP_MAX 16
/* Planes a block may cover: 8 (two lanes of four) up to 128 (32 lanes of
 * four, the default), powers of two. */
#define NC_GPU_NEOCOG_S_WARP_PLANES_MIN 8u
#define NC_GPU_NEOCOG_S_WARP_PLANES 128u
/* Past this batch, lone warps (teams of one) whose window holds no
 * occupied input cell write zeros at once (the same bits as the full
 * path); up to it, the kernel is the small batches' lean one. */
#define NC_GPU_NEOCOG_S_WARP_SKIP_FROM 8u

/* The S-layer of batch characters, as nc_gpu_neocog_s_forward (same
 * layouts, occupancy map in and out; occ_in NULL: every input position is
 * read), with teams of `warps` warps a position (1, 2, 4, 8 or 16; 0: the
 * default below) and `planes` planes a block (8, 16, 32, 64 or 128; 0:
 * 128).  With more than one block of planes the occupancy map out is
 * cleared first (one more node on the stream).  s->a, s->b, in and out
 * must be 16-byte aligned (plane strides are multiples of 8, so every cell
 * row is).  Returns 0 or a negative errno (-EINVAL for bad arguments, -E2BIG
 * for a grid past the device's); the launch is checked, not waited for. */
int nc_gpu_neocog_s_forward_warp(const nc_gpu_neocog_s_args *s, const float *in,
                                 const uint8_t *occ_in, float *out, uint8_t *occ_out,
                                 uint32_t batch, uint32_t warps, uint32_t planes,
                                 cudaStream_t stream);

/* Team size for batch characters on n_sm SMs: enough warps for about 24 an
 * SM, no more than one for every two live taps (on an H100 at batch 1, the
 * seed's net: 1 / 4 / 8 / 16, each stage's fastest). */
uint32_t nc_gpu_neocog_s_warp_default(const nc_gpu_neocog_s_args *s, uint32_t batch,
                                      uint32_t n_sm);

#ifdef __cplusplus
}
#endif

#endif

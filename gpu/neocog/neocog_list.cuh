/* gpu/neocog/neocog_list.cuh — the S-layer for large batches from lists of each
 * input position's non-zero planes (twin of nc_neocog_s_forward, like every
 * kernel of neocog_s.cuh; the lists are the twin of nc_neocog_list_build).
 *
 * Layer: gpu, C linkage.
 *
 * Why: on digits about 5 % of a C-layer's cells are non-zero, so the
 * seed's net needs some 3.5 M multiply-adds a character in its S-layers
 * (counted on core's forward of 500 fixture digits), where the GEMM tile
 * does 37 M and the warp kernel of neocog_s_warp.cuh, which skips as much,
 * spends most of its instructions finding the non-zero cells: each window
 * reads every plane of each occupied tap and compacts them with ballots,
 * and every input cell lies in 32 windows.  Here the compaction is done
 * once per input position (nc_gpu_neocog_list_build: a warp a position,
 * ballot + popc over its planes), and the S kernel's warp, one an output
 * position, only gathers: lane = tap reads its input position's count and
 * sum of squares (c(t) q adds up v^2), a warp scan places each tap's
 * entries in the warp's list in shared memory in (tap, plane) order, and
 * the lanes run down the list in groups of Lk lanes, each lane owning F
 * float4 of the block's planes (16-byte weight loads, 4 F multiply-adds an
 * entry), the groups meeting in a fixed shuffle tree.  F > 1 fills the
 * warp where the planes are no multiple of 32 float4 (US3's 80 planes: 20
 * lanes of 32 at F = 1, 30 at F = 2) and spreads an entry's fixed cost over
 * more multiply-adds.  A window with no entry is written as zeros (core's
 * formula gives exactly 0 there).  No atomics, every output cell written
 * once, a fixed order of additions. */
#ifndef NC_GPU_NEOCOG_LIST_CUH
#define NC_GPU_NEOCOG_LIST_CUH

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "neocog_geom.h"

#ifdef __cplusplus
extern "C" {
#endif

/* float4 of planes a lane may own (F): 1, 2 or 4. */
#define NC_GPU_NEOCOG_LIST_F_MAX 4u

/* nc_neocog_list_build on the device for batch * n_pos positions of in
 * ([batch * n_pos][stride], device): cnt, q and ent ([batch * n_pos][k]
 * int2: value bits, kappa * mul) as core's, except q's rounding.  occ (may
 * be NULL) is in's occupancy map: a position marked 0 gets cnt 0 and q 0
 * without being read.  in 16-byte aligned, stride a multiple of 4.
 * Returns 0 or a negative errno (-EINVAL for bad arguments); the launch is
 * checked, not waited for. */
int nc_gpu_neocog_list_build(const float *in, const uint8_t *occ, size_t n_pos, uint32_t k,
                             uint32_t stride, uint32_t mul, uint16_t *cnt, float *q,
                             int2 *ent, uint32_t batch, cudaStream_t stream);

/* The S-layer of batch characters from the lists of its input (cnt, q,
 * ent as nc_gpu_neocog_list_build left them for k = s->k_in with mul =
 * n_live * ks(k_out) / 4), into out and occ_out (may be NULL) as
 * nc_gpu_neocog_s_forward writes them.  f: float4 of planes a lane
 * (1, 2 or 4); planes: planes a block (a multiple of 4 from 4 to 4096;
 * more than one block of planes: the occupancy map is cleared first);
 * by_char: a block's eight warps take one position of eight characters
 * (1) or eight positions of one character (0).  Step-1 layers only (every
 * S-layer).  s->a, s->b and out 16-byte
 * aligned.  Returns 0 or a negative errno (-EINVAL for bad arguments,
 * -E2BIG for a grid past the device's); the launch is checked, not waited
 * for. */
/* 0 when nc_gpu_neocog_s_forward_list takes f float4 a lane and `planes`
 * planes a block on s's planes (Lk = ceil(min(planes, ks) / 4 / f) lanes at
 * most 32, weight offsets within int32), -EINVAL otherwise. */
int nc_gpu_neocog_s_list_check(const nc_gpu_neocog_s_args *s, uint32_t f, uint32_t planes);
int nc_gpu_neocog_s_forward_list(const nc_gpu_neocog_s_args *s, const uint16_t *cnt,
                                 const float *q, const int2 *ent, float *out,
                                 uint8_t *occ_out, uint32_t batch, uint32_t f,
                                 uint32_t planes, uint32_t by_char, cudaStream_t stream);

/* The same S-layer, one warp an output row (gpu/neocog/neocog_list_rows.cu): the
 * warp slides along the row, lane k holding plane k's numerators (and
 * k + 32, .. up to `planes`) of the WIN outputs the current input column
 * feeds, in registers, and finishes one output a column.  planes: planes
 * a block, 32, 64, 96 or 128 (more planes than that: blocks of planes on
 * the grid's y, each walking the lists again; the occupancy map is then
 * cleared first).  The lists must be built with mul = 1 (entries carry
 * kappa itself); wpad is the layer's weights as
 * nc_gpu_neocog_s_rows_weights lays them out for the same `planes`
 * (nc_gpu_neocog_s_rows_wfloats floats, 16-byte aligned); w_shared 1: a
 * block copies its planes' share to shared memory where it fits, 0: the
 * weights are read through L1, which leaves room for more blocks on an
 * SM; warps: warps a block (4, 8 or 16), each block taking one character
 * at a time.  fill 1 writes every cell; fill 0 (occ_out required) may
 * leave unwritten the cells of positions whose occupancy byte ends 0 (all
 * their planes are 0), for a caller that reads the output only where it is
 * occupied (every C kernel does).  Step-1 layers with 6x6 or 9x9 windows,
 * input and output planes at most 64 wide (nc_gpu_neocog_s_rows_check says
 * which).
 * Returns 0 or a negative errno (-EINVAL for bad arguments or a layer it
 * does not take, -E2BIG for a block the device cannot hold); launches are
 * checked, not waited for. */
int nc_gpu_neocog_s_rows_check(const nc_gpu_neocog_s_args *s, uint32_t planes);
size_t nc_gpu_neocog_s_rows_wfloats(const nc_gpu_neocog_s_args *s, uint32_t planes);
int nc_gpu_neocog_s_rows_weights(const nc_gpu_neocog_s_args *s, uint32_t planes, float *wpad,
                                 cudaStream_t stream);
int nc_gpu_neocog_s_forward_rows(const nc_gpu_neocog_s_args *s, const float *wpad,
                                 const uint16_t *cnt, const float *q, const int2 *ent, float *out,
                                 uint8_t *occ_out, uint32_t batch, uint32_t warps,
                                 uint32_t planes, uint32_t w_shared, uint32_t fill,
                                 cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

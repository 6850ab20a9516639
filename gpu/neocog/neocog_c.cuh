/* gpu/neocog/neocog_c.cuh — the C-layer on the GPU (twin of nc_neocog_c_forward).
 *
 * Layer: gpu, C linkage. */
#ifndef NC_GPU_NEOCOG_C_CUH
#define NC_GPU_NEOCOG_C_CUH

#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdint.h>

#include "neocog_geom.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Lists of each output position's non-zero planes, as
 * nc_gpu_neocog_list_build (neocog_list.cuh) writes them for the next
 * S-layer: cnt [batch * n_pos], q (the sum of their squares) [batch *
 * n_pos], ent [batch * n_pos][k] int2 (value bits, plane * mul), planes in
 * ascending order.  A C kernel that writes them as it writes its output
 * saves the S-layer a pass over that output. */
typedef struct nc_gpu_neocog_lists {
    uint16_t *cnt;
    float *q;
    int2 *ent;
    uint32_t mul;
} nc_gpu_neocog_lists;

/* 0 when lists (NULL: none) can hold c's output: its arrays are set and
 * every plane * mul fits an int32; -EINVAL otherwise. */
static inline int nc_gpu_neocog_lists_check(const nc_gpu_neocog_c_args *c,
                                            const nc_gpu_neocog_lists *lists)
{
    if (!lists)
        return 0;
    return c && lists->cnt && lists->q && lists->ent && c->k >= 1 &&
                   (uint64_t)(c->k - 1) * lists->mul <= 0x7fffffffu
               ? 0
               : -EINVAL;
}

/* out(o, k) = psi(sum_t d[t] * in(step * o + nu_t, k)) for `batch`
 * characters.  in: device [batch][n_in^2][ks(k)]; occ_in: [batch][n_in^2]
 * occupancy of in, or NULL (every position is read); out:
 * [batch][n_out^2][ks(k)], every cell written; occ_out [batch][n_out^2] or
 * NULL.  per_block: positions per block (0: default).  The STAGED kernel. */
int nc_gpu_neocog_c_forward(const nc_gpu_neocog_c_args *c, const float *in,
                            const uint8_t *occ_in, float *out, uint8_t *occ_out,
                            uint32_t batch, uint32_t per_block, cudaStream_t stream);

/* The C-layer kernels (nc_gpu_neocog_c_forward_kind):
 * STAGED  a block per row chunk, the occupied cells of the union window
 *         staged in shared memory, lanes = planes;
 * DIRECT  a warp per strip of output positions: occupancy masks by ballot,
 *         empty strips / positions written as zeros, the occupied live taps
 *         listed per position, lanes = (tap slice, 4 planes) reading the
 *         input straight from global memory in 16-byte loads (neocog_c.cu);
 * TILE    for small batches: a block per T x T tile of output positions (all
 *         planes), the tile's union window staged in shared memory once
 *         (empty cells as zeros), a thread per (position, 4 planes, tap
 *         slice), the slices added by a fixed shuffle tree
 *         (neocog_c_tile.cu);
 * WARP    for small batches: a team of warps per output position, each warp
 *         listing its share of the occupied live taps (lane = tap, the
 *         occupancy loads of four rounds in flight) and summing them straight
 *         from global memory (lanes = groups of 16-byte plane slices, four
 *         entries in flight), the groups and the team's warps added in a
 *         fixed order; no staging but the tap table (neocog_c_warp.cu);
 * SCATTER for large batches: a block per character holds the layer's sums
 *         in shared memory, each warp takes whole planes and adds each
 *         non-zero input cell of its plane, in ascending position order
 *         (each output's taps in core's order), to the outputs whose
 *         windows hold it; then psi (neocog_c_scatter.cu). */
enum {
    NC_GPU_NEOCOG_C_STAGED = 0,
    NC_GPU_NEOCOG_C_DIRECT = 1,
    NC_GPU_NEOCOG_C_TILE = 2,
    NC_GPU_NEOCOG_C_WARP = 3,
    NC_GPU_NEOCOG_C_SCATTER = 4,
    NC_GPU_NEOCOG_C_N_KINDS = 5,
};
const char *nc_gpu_neocog_c_kind_name(int kind);

/* As nc_gpu_neocog_c_forward with the kernel chosen (per_block: positions
 * per block for STAGED, most positions per warp strip for DIRECT, the tile
 * side for TILE, warps a position for WARP, unused by SCATTER; 0: the
 * default).  DIRECT and TILE need in and out 16-byte
 * aligned. */
int nc_gpu_neocog_c_forward_kind(const nc_gpu_neocog_c_args *c, int kind, const float *in,
                                 const uint8_t *occ_in, float *out, uint8_t *occ_out,
                                 uint32_t batch, uint32_t per_block, cudaStream_t stream);

/* As nc_gpu_neocog_c_forward_kind, and lists (NULL: none) of out's
 * non-zero planes for the next S-layer as nc_gpu_neocog_list_build would
 * write them from out and occ_out (q added in plane order); DIRECT and
 * SCATTER write them, the other kinds return -EINVAL (before anything is
 * queued). */
int nc_gpu_neocog_c_forward_lists(const nc_gpu_neocog_c_args *c, int kind, const float *in,
                                  const uint8_t *occ_in, float *out, uint8_t *occ_out,
                                  const nc_gpu_neocog_lists *lists, uint32_t batch,
                                  uint32_t per_block, cudaStream_t stream);

/* The TILE kernel with its shape given: side x side output positions per
 * block (1..8; 0: the narrowest of 2..4 whose blocks all fit on the SMs at
 * once), narrowed while the union window does not fit shared memory; tap
 * slices 1, 2 or 4 per (position, 4 planes) (0: 4).  -E2BIG when even one
 * position's window of ks(k) planes does not fit shared memory or batch >
 * 65535; -EINVAL on bad arguments.  Both before anything is queued. */
int nc_gpu_neocog_c_tile_forward(const nc_gpu_neocog_c_args *c, const float *in,
                                 const uint8_t *occ_in, float *out, uint8_t *occ_out,
                                 uint32_t batch, uint32_t side, uint32_t slices,
                                 cudaStream_t stream);

/* The SCATTER kernel: in and out 16-byte aligned.  -E2BIG when the layer's
 * sums (k n_out^2 floats) and tables do not fit one block's shared memory,
 * -EINVAL on bad arguments; both before anything is queued. */
int nc_gpu_neocog_c_scatter_forward(const nc_gpu_neocog_c_args *c, const float *in,
                                    const uint8_t *occ_in, float *out, uint8_t *occ_out,
                                    uint32_t batch, cudaStream_t stream);
/* The same, and lists of out's non-zero planes (lists may be NULL). */
int nc_gpu_neocog_c_scatter_lists(const nc_gpu_neocog_c_args *c, const float *in,
                                  const uint8_t *occ_in, float *out, uint8_t *occ_out,
                                  const nc_gpu_neocog_lists *lists, uint32_t batch,
                                  cudaStream_t stream);
/* The WARP kernel with teams of `team` warps a position (1, 2, 4, 8 or 16;
 * 0: enough for about 24 warps an SM at this batch, no fewer than two taps
 * a warp).  in and out 16-byte aligned.  -EINVAL on bad arguments, -E2BIG
 * past the grid or 32-bit cell offsets; both before anything is queued. */
int nc_gpu_neocog_c_warp_forward(const nc_gpu_neocog_c_args *c, const float *in,
                                 const uint8_t *occ_in, float *out, uint8_t *occ_out,
                                 uint32_t batch, uint32_t team, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

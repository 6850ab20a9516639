/* gpu/neocog_c.cuh — the C-layer on the GPU (twin of nc_neocog_c_forward).
 *
 * Layer: gpu, C linkage. */
#ifndef NC_GPU_NEOCOG_C_CUH
#define NC_GPU_NEOCOG_C_CUH

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "neocog_geom.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 *         staged in shared memory, lanes = planes (the second pass's);
 * DIRECT  a warp per strip of output positions: occupancy masks by ballot,
 *         empty strips / positions written as zeros, the occupied live taps
 *         listed per position, lanes = (tap slice, 4 planes) reading the
 *         input straight from global memory in 16-byte loads (neocog_c.cu). */
enum {
    NC_GPU_NEOCOG_C_STAGED = 0,
    NC_GPU_NEOCOG_C_DIRECT = 1,
    NC_GPU_NEOCOG_C_N_KINDS = 2,
};
const char *nc_gpu_neocog_c_kind_name(int kind);

/* As nc_gpu_neocog_c_forward with the kernel chosen (per_block: positions
 * per block for STAGED, most positions per warp strip for DIRECT; 0: the
 * default).  DIRECT needs in and out 16-byte aligned. */
int nc_gpu_neocog_c_forward_kind(const nc_gpu_neocog_c_args *c, int kind, const float *in,
                                 const uint8_t *occ_in, float *out, uint8_t *occ_out,
                                 uint32_t batch, uint32_t per_block, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

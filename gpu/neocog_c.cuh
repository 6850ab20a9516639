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
 * NULL.  per_block: positions per block (0: default). */
int nc_gpu_neocog_c_forward(const nc_gpu_neocog_c_args *c, const float *in,
                            const uint8_t *occ_in, float *out, uint8_t *occ_out,
                            uint32_t batch, uint32_t per_block, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

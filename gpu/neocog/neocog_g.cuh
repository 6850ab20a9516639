/* gpu/neocog/neocog_g.cuh — UG, contrast extraction, on the GPU (twin of
 * nc_neocog_g_forward).
 *
 * Layer: gpu, C linkage. */
#ifndef NC_GPU_NEOCOG_G_CUH
#define NC_GPU_NEOCOG_G_CUH

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "neocog_geom.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x = sum_t g[t] * u0 over the clipped window; out [batch][n_out^2][8]: lane 0
 * on = x if x > cut, lane 1 off = -x if x < -cut, lanes 2..7 zero.
 * in: device [batch][n_in^2]; occ_out [batch][n_out^2] or NULL. */
int nc_gpu_neocog_g_forward(const nc_gpu_neocog_g_args *g, const float *in,
                            float *out, uint8_t *occ_out, uint32_t batch,
                            cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

/* gpu/neocog/neocog_occ.cuh — the occupancy map of a layer (which positions hold a
 * non-zero plane), for layers whose producer did not write one.
 *
 * Layer: gpu, C linkage. */
#ifndef NC_GPU_NEOCOG_OCC_CUH
#define NC_GPU_NEOCOG_OCC_CUH

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* occ[b][o] = 1 when in[b][o][kappa] != 0 for some kappa < k, else 0.
 * in: device [batch][n_pos][stride]. */
int nc_gpu_neocog_occupancy(const float *in, uint32_t n_pos, uint32_t k,
                            uint32_t stride, uint8_t *occ, uint32_t batch,
                            cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

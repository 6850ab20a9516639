/* gpu/cnn/cnn_full.cuh — fully connected layers on the GPU (twin of
 * core/cnn/cnn_full.c's nc_cnn_full_forward_ref and nc_cnn_full_backward_ref).
 *
 * Layer: gpu, C linkage.  Device pointers; x is [n][n_in] (the previous
 * layer flattened as [maps][h][w]), y and da are [n][units]; enqueue on
 * `stream`; 0 or a negative errno. */
#ifndef NC_GPU_CNN_FULL_CUH
#define NC_GPU_CNN_FULL_CUH

#include <cuda_runtime_api.h>

#include "cnn_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[b][u] = f(bias[u] + sum_k w[u][k] x[b][k]). */
int nc_gpu_cnn_full_forward(const nc_gpu_cnn_layer *L, const float *x, float *y,
                            uint32_t n, cudaStream_t stream);

/* dx[b][k] = sum_u w[u][k] da[b][u] (pulled: one writer per dx). */
int nc_gpu_cnn_full_backward(const nc_gpu_cnn_layer *L, const float *da, float *dx,
                             uint32_t n, cudaStream_t stream);

/* gw[u][k] = sum_b da[b][u] x[b][k], gb[u] = sum_b da[b][u]. */
int nc_gpu_cnn_full_weights(const nc_gpu_cnn_layer *L, const float *x, const float *da,
                            uint32_t n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

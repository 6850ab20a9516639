/* gpu/cnn/cnn_pool.cuh — max-pooling on the GPU (twin of core/cnn/cnn_pool.c's
 * nc_cnn_pool_forward_ref and nc_cnn_pool_backward_ref).
 *
 * Layer: gpu, C linkage.  Device pointers, image-major; enqueue on `stream`;
 * 0 or a negative errno. */
#ifndef NC_GPU_CNN_POOL_CUH
#define NC_GPU_CNN_POOL_CUH

#include <cuda_runtime_api.h>

#include "cnn_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = the largest input of each non-overlapping kernel_x x kernel_y region. */
int nc_gpu_cnn_pool_forward(const nc_gpu_cnn_layer *L, const float *x, float *y,
                            uint32_t n, cudaStream_t stream);

/* dx = dy at the first maximum of each region (as core breaks ties), else 0;
 * x is the forward input. */
int nc_gpu_cnn_pool_backward(const nc_gpu_cnn_layer *L, const float *x, const float *dy,
                             float *dx, uint32_t n, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

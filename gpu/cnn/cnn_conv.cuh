/* gpu/cnn/cnn_conv.cuh — convolution layers on the GPU (twins of
 * core/cnn/cnn_conv.c's nc_cnn_conv_forward_ref and nc_cnn_conv_backward_ref).
 *
 * Layer: gpu, C linkage.  All pointers are device memory, image-major; every
 * function enqueues on `stream` and returns 0 or a negative errno. */
#ifndef NC_GPU_CNN_CONV_CUH
#define NC_GPU_CNN_CONV_CUH

#include <cuda_runtime_api.h>

#include "cnn_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[n][maps][h][w] = f(bias + kernels * x) over the connected input maps. */
int nc_gpu_cnn_conv_forward(const nc_gpu_cnn_layer *L, const float *x, float *y,
                            uint32_t n, cudaStream_t stream);

/* dx[n][in_maps][in_h][in_w] = sum of w * da pulled from every output that read
 * the pixel (seed 000 §3.3); da = dE/da of this layer's outputs. */
int nc_gpu_cnn_conv_backward(const nc_gpu_cnn_layer *L, const float *da, float *dx,
                             uint32_t n, cudaStream_t stream);

/* Gradients of L's kernels and biases summed over the batch (seed 000 §3.4,
 * one block per map connection), written to L->gweights / L->gbias (cut
 * kernels get 0).  part: scratch of nc_gpu_cnn_conv_weights_scratch floats. */
size_t nc_gpu_cnn_conv_weights_scratch(const nc_gpu_cnn_layer *L, uint32_t n);
int nc_gpu_cnn_conv_weights(const nc_gpu_cnn_layer *L, const float *x, const float *da,
                            uint32_t n, float *part, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

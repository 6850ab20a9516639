/* gpu/cnn/cnn_conv_staged.cuh — the convolution kernels of gpu/cnn/cnn_conv.cu for
 * layers whose working set fits in shared memory (every layer of the shipped
 * columns): the same three operations, staged per image.
 *
 * Layer: gpu, internal to cnn_conv.cu.  Each function returns -E2BIG, having
 * enqueued nothing, when the layer does not fit; cnn_conv.cu then runs its
 * general kernel.  Same semantics as those kernels (core/cnn/cnn_conv.c is
 * the specification); the sums run in another order, so results agree to
 * float rounding, not bit for bit. */
#ifndef NC_GPU_CNN_CONV_STAGED_CUH
#define NC_GPU_CNN_CONV_STAGED_CUH

#include <cuda_runtime_api.h>

#include "cnn_layer.h"

/* Partial sums the weight-gradient kernel writes at most (its scratch, in
 * units of n_weights + maps floats). */
#define NC_GPU_CNN_WEIGHT_PARTS 64u

int nc_gpu_cnn_conv_forward_staged(const nc_gpu_cnn_layer *L, const float *x, float *y,
                                   uint32_t n, cudaStream_t stream);
int nc_gpu_cnn_conv_backward_staged(const nc_gpu_cnn_layer *L, const float *da, float *dx,
                                    uint32_t n, cudaStream_t stream);
/* Writes the partial sums to part and returns their count in *ret_parts
 * (<= NC_GPU_CNN_WEIGHT_PARTS); the caller adds them. */
int nc_gpu_cnn_conv_weights_staged(const nc_gpu_cnn_layer *L, const float *x, const float *da,
                                   uint32_t n, float *part, uint32_t *ret_parts,
                                   cudaStream_t stream);

#endif

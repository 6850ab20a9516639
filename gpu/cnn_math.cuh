/* gpu/cnn_math.cuh — device twins of core/cnn_internal.h's activation.
 *
 * Layer: gpu, internal to the cnn_*.cu files (C++ device code only).
 * y = A tanh(S a) in float (core's reference uses double; the parity tests
 * hold the two to 1e-4 relative), and dy/da written with y. */
#ifndef NC_GPU_CNN_MATH_CUH
#define NC_GPU_CNN_MATH_CUH

#include "cnn.h"
#include "cnn_layer.h"

static __device__ __forceinline__ float nc_gpu_cnn_act(float a)
{
    return NC_CNN_TANH_A * tanhf(NC_CNN_TANH_S * a);
}

static __device__ __forceinline__ float nc_gpu_cnn_act_grad(float y)
{
    return (NC_CNN_TANH_S / NC_CNN_TANH_A) * (NC_CNN_TANH_A * NC_CNN_TANH_A - y * y);
}

/* Blocks for `count` items at `per_block` each, capped for a grid-stride loop. */
static inline unsigned nc_gpu_cnn_blocks(size_t count, unsigned per_block)
{
    size_t b = (count + per_block - 1) / per_block;
    return (unsigned)(b < 1 ? 1 : b > 65535u * 16u ? 65535u * 16u : b);
}

#endif

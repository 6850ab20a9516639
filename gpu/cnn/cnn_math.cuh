/* gpu/cnn/cnn_math.cuh — device twins of core/cnn/cnn_internal.h's activations.
 *
 * Layer: gpu, internal to the cnn_*.cu files (C++ device code only).
 * y = A tanh(S a) in float (core's reference uses double; the parity tests
 * hold the two to 1e-4 relative) or max(0, a), and dy/da written with y;
 * the shape test of the fused paths, which are written for the tanh. */
#ifndef NC_GPU_CNN_MATH_CUH
#define NC_GPU_CNN_MATH_CUH

#include "cnn.h"
#include "cnn_layer.h"

static __device__ __forceinline__ float nc_gpu_cnn_tanh(float a)
{
    return NC_CNN_TANH_A * tanhf(NC_CNN_TANH_S * a);
}

/* act: nc_cnn_act.  Uniform across a launch (one layer), so no divergence. */
static __device__ __forceinline__ float nc_gpu_cnn_act(float a, uint32_t act)
{
    if (act == NC_CNN_ACT_NONE)
        return a;
    return act == NC_CNN_ACT_RELU ? fmaxf(a, 0.0f) : nc_gpu_cnn_tanh(a);
}

static __device__ __forceinline__ float nc_gpu_cnn_act_grad(float y, uint32_t act)
{
    if (act == NC_CNN_ACT_NONE)
        return 1.0f;
    if (act == NC_CNN_ACT_RELU)
        return y > 0.0f ? 1.0f : 0.0f;
    return (NC_CNN_TANH_S / NC_CNN_TANH_A) * (NC_CNN_TANH_A * NC_CNN_TANH_A - y * y);
}

/* Blocks for `count` items at `per_block` each, capped for a grid-stride loop. */
static inline unsigned nc_gpu_cnn_blocks(size_t count, unsigned per_block)
{
    size_t b = (count + per_block - 1) / per_block;
    return (unsigned)(b < 1 ? 1 : b > 65535u * 16u ? 65535u * 16u : b);
}

/* 1 if l[0..n_layers) is a one-map side x side input followed by exactly
 * the n_want layers of want, each {kind, maps (0: any), height, width,
 * kernel_x, kernel_y}, with every convolution dense (no skipping) and every
 * unit the seed's tanh, unnormalised: how the fused paths recognise the
 * nets they were written for. */
static inline int nc_gpu_cnn_shapes_match(const nc_gpu_cnn_layer *l, uint32_t n_layers,
                                          uint32_t side, const uint32_t (*want)[6],
                                          uint32_t n_want)
{
    if (n_layers != n_want + 1 || l[0].maps != 1 || l[0].height != side || l[0].width != side)
        return 0;
    for (uint32_t i = 0; i < n_want; i++) {
        const nc_gpu_cnn_layer *L = &l[i + 1];
        if (L->kind != want[i][0] || (want[i][1] && L->maps != want[i][1]) ||
            L->height != want[i][2] || L->width != want[i][3] ||
            L->kernel_x != want[i][4] || L->kernel_y != want[i][5])
            return 0;
        if (L->kind == NC_CNN_KIND_CONV && (L->step_x != 1 || L->step_y != 1))
            return 0;
        if (L->act != NC_CNN_ACT_TANH || L->norm)
            return 0;
    }
    return 1;
}

#endif

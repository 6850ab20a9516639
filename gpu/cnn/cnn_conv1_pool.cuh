/* gpu/cnn/cnn_conv1_pool.cuh — the first convolution and pooling of the
 * 29x29 columns (20 maps of 4x4 kernels, 26x26 -> max pool 2 -> 13x13),
 * four maps of one pooled unit per call: the step both throughput kernels
 * (gpu/dev/cnn_fused.cu's shallow column, gpu/cnn/cnn_fused_deep_big.cu's
 * deep one) run before their second convolution.
 *
 * Layer: gpu, internal (C++ device code).  The pool takes the max of the raw
 * sums, then bias and the seed's tanh once (the activation is increasing).
 * Each sum runs over (ky, kx) in order. */
#ifndef NC_GPU_CNN_CONV1_POOL_CUH
#define NC_GPU_CNN_CONV1_POOL_CUH

#include "cnn_math.cuh"

namespace nc_conv1 {
constexpr int IN = 29, K = 4, MAPS = 20, Q = 13, Q_HW = Q * Q;
constexpr int WEIGHTS = K * K * MAPS;   /* staged [ky][kx][map]: float4 = 4 maps */
}

/* Stage conv1's weights [maps][1][ky][kx] as w1s [ky][kx][map] (WEIGHTS
 * floats, 16-byte aligned) and its biases, by threads t of `threads`. */
static __device__ __forceinline__ void nc_conv1_stage(const float *w1, const float *b1,
                                                      float *w1s, float *b1s, int t, int threads)
{
    using namespace nc_conv1;
    for (int e = t; e < WEIGHTS; e += threads)     /* e = k * MAPS + m */
        w1s[e] = w1[(e % MAPS) * K * K + e / MAPS];
    if (t < MAPS)
        b1s[t] = b1[t];
}

/* Pooled unit w (of 13x13) of maps 4g..4g+3 from image x (29x29), into
 * p1[map][13x13]; w1s4 the staged weights as float4. */
static __device__ __forceinline__ void nc_conv1_pool(const float *x, const float4 *w1s4,
                                                     const float *b1s, int g, int w, float *p1)
{
    using namespace nc_conv1;
    const int py = w / Q, px = w % Q;
    float in[5][5];
#pragma unroll
    for (int r = 0; r < 5; r++)
#pragma unroll
        for (int s = 0; s < 5; s++)
            in[r][s] = x[(2 * py + r) * IN + 2 * px + s];
    float acc[4][4] = {};
#pragma unroll
    for (int i = 0; i < K; i++)
#pragma unroll
        for (int j = 0; j < K; j++) {
            const float4 wv = w1s4[(i * K + j) * (MAPS / 4) + g];
#pragma unroll
            for (int d = 0; d < 4; d++) {
                const float v = in[(d >> 1) + i][(d & 1) + j];
                acc[0][d] += wv.x * v;
                acc[1][d] += wv.y * v;
                acc[2][d] += wv.z * v;
                acc[3][d] += wv.w * v;
            }
        }
#pragma unroll
    for (int mi = 0; mi < 4; mi++) {
        const float a = fmaxf(fmaxf(acc[mi][0], acc[mi][1]), fmaxf(acc[mi][2], acc[mi][3]));
        const int m = 4 * g + mi;
        p1[m * Q_HW + w] = nc_gpu_cnn_tanh(a + b1s[m]);
    }
}

#endif

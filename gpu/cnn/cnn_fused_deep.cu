/* gpu/cnn/cnn_fused_deep.cu — the deep column's forward in three launches.
 *
 * Layer: gpu.  Why: the layer-wise path runs this column as eight kernels
 * (conv, pool, conv, pool, conv, pool, full, full), each a launch and a trip
 * through global memory, which is most of its time on the few images of a
 * single request (three views of one digit).  Here the layers are grouped
 * into three launches, each keeping its layers' outputs in shared memory;
 * only pool2's 1,500 and pool3's 100 activations per image go through
 * global memory, in the layer-wise layout (so the engine's buffers hold
 * them).  Pooling is fused into the convolutions: the max is taken over raw
 * sums, then bias and scaled tanh once per pooled unit (the activation is
 * increasing, so this is the max of the activations).
 *
 * Thread mapping.  The aim is latency: one image's work spread over many
 * multiprocessors, every weight a block reads staged in shared memory by
 * coalesced loads (a thread that walks a weight row in global memory waits
 * for each load in turn: that made a first version twice as slow as the
 * layer-wise path), and short serial sums.
 *   features: a block of 1000 threads per (image, group of G2 = 5 of the 60
 *     conv2 maps): twelve blocks an image.  Each block computes all of
 *     conv1 + pool1 (20 x 13 x 13 units, 64 multiply-adds each: cheap, and
 *     repeated rather than shared, so no block waits for another), then a
 *     thread per (map of the group, conv2 position, half of the 20 input
 *     maps) sums 10 x 4 x 4 products, the halves are added in order, and a
 *     thread per pooled unit takes the max of four.
 *   conv3: a block of 360 threads per (image, group of G3 = 10 of the 100
 *     maps): a thread per (map, position, quarter of the 60 input maps)
 *     sums 15 x 3 x 3 products; quarters added in order; pool3 (3x3 -> 1) by
 *     a thread per map.
 *   top: a block of 1024 threads (32 warps) per image: a warp per unit of
 *     each fully connected layer, its lanes reading the weight row together
 *     and summing by a fixed shuffle tree.
 * Every sum is taken in a fixed order: the results do not depend on the
 * launch or the batch.
 *
 * Launches.  At the batches this path serves (up to 32 images) each kernel
 * is a few microseconds, about what a launch and its ramp-up cost, so conv3
 * and top are programmatic launches (gpu/device/launch.cuh): their blocks start
 * while the kernel before is still running and stage what no kernel writes
 * (conv3's weights; top's first rows to L2), then wait for its output. */
#include "cnn_fused_deep.cuh"

#include <errno.h>

#include "cnn_math.cuh"
#include "cuda_check.cuh"
#include "launch.cuh"

namespace {

constexpr int IN = 29, K1 = 4, M1 = 20, Q1 = 13;         /* conv1 26x26 -> pool 13x13 */
constexpr int K2 = 4, M2 = 60, C2 = 10, Q2 = 5;          /* conv2 10x10 -> pool 5x5 */
constexpr int K3 = 3, M3 = 100, C3 = 3;                  /* conv3 3x3 -> pool 1x1 */
constexpr int IN_HW = IN * IN, Q1_HW = Q1 * Q1, C2_HW = C2 * C2, Q2_HW = Q2 * Q2;
constexpr int C3_HW = C3 * C3;
constexpr int P1 = M1 * Q1_HW;                           /* pool1 floats per image */
constexpr int FEAT = M2 * Q2_HW;                         /* pool2 floats per image */
constexpr int W2_MAP = M1 * K2 * K2, W3_MAP = M2 * K3 * K3;
constexpr int G2 = 5, GROUPS2 = M2 / G2, SPLIT2 = 2;     /* conv2: maps a block, input halves */
constexpr int T2 = G2 * C2_HW * SPLIT2;                  /* 1000 threads */
constexpr int G3 = 10, GROUPS3 = M3 / G3, SPLIT3 = 4;    /* conv3: maps a block, input quarters */
constexpr int T3 = G3 * C3_HW * SPLIT3;                  /* 360 threads */
constexpr int TT = 1024, WARPS = TT / 32, MAX_UNITS = 1024;

static_assert(FEAT == NC_GPU_CNN_DEEP_FEATURES, "pool2's size");
static_assert(M1 % SPLIT2 == 0 && M2 % SPLIT3 == 0, "even splits");
static_assert(T2 <= 1024 && T3 <= 1024, "one block");

struct column {
    const float *w1, *b1, *w2, *b2, *w3, *b3;  /* conv [maps][in_maps][ky][kx] */
    const float *f1w, *f1b, *f2w, *f2b;        /* full [units][n_in] */
    uint32_t u1, u2;
};

/* One output of a dense K x K convolution, over input maps c0..c1 only:
 * sum of w[c][ki][kj] * in[c][oy + ki][ox + kj], in order (c, ki, kj), with
 * the maps of in SIDE x SIDE and w one output map's kernels. */
template <int K, int SIDE>
static __device__ __forceinline__ float conv_sum(const float *w, const float *in, int c0, int c1,
                                                 int oy, int ox)
{
    float a = 0.0f;
    for (int c = c0; c < c1; c++) {
        const float *pc = in + c * SIDE * SIDE + oy * SIDE + ox;
        const float *wc = w + c * K * K;
#pragma unroll
        for (int ki = 0; ki < K; ki++)
#pragma unroll
            for (int kj = 0; kj < K; kj++)
                a += wc[ki * K + kj] * pc[ki * SIDE + kj];
    }
    return a;
}

__global__ void __launch_bounds__(T2) features_kernel(column C, const float *__restrict__ x,
                                                      float *__restrict__ feat)
{
    __shared__ float xs[IN_HW], w1s[M1 * K1 * K1], b1s[M1], p1[P1];
    __shared__ float w2s[G2 * W2_MAP], c2[SPLIT2][G2 * C2_HW];
    const int t = threadIdx.x;
    const int img = blockIdx.x / GROUPS2, g0 = (blockIdx.x % GROUPS2) * G2;
    const float *xi = x + (size_t)img * IN_HW;
    nc_dev_pdl_trigger();           /* conv3's blocks may start staging now */
    for (int i = t; i < IN_HW; i += T2)
        xs[i] = xi[i];
    for (int i = t; i < M1 * K1 * K1; i += T2)
        w1s[i] = C.w1[i];
    if (t < M1)
        b1s[t] = C.b1[t];
    for (int i = t; i < G2 * W2_MAP; i += T2)
        w2s[i] = C.w2[(size_t)g0 * W2_MAP + i];     /* maps g0.. are contiguous */
    __syncthreads();

    /* conv1 + pool1: a thread per pooled unit (map, py, px) */
    for (int i = t; i < P1; i += T2) {
        const int m = i / Q1_HW, r = i % Q1_HW, py = r / Q1, px = r % Q1;
        const float *w = w1s + m * K1 * K1;
        float best = -3.402823466e+38f;     /* every sum is finite */
#pragma unroll
        for (int dy = 0; dy < 2; dy++)
#pragma unroll
            for (int dx = 0; dx < 2; dx++) {
                const float *xp = xs + (2 * py + dy) * IN + 2 * px + dx;
                float a = 0.0f;
#pragma unroll
                for (int ki = 0; ki < K1; ki++)
#pragma unroll
                    for (int kj = 0; kj < K1; kj++)
                        a += w[ki * K1 + kj] * xp[ki * IN + kj];
                best = fmaxf(best, a);
            }
        p1[i] = nc_gpu_cnn_tanh(best + b1s[m]);
    }
    __syncthreads();

    /* conv2 of the group's maps: a thread per (half, map, position) */
    {
        const int h = t / (G2 * C2_HW), r = t % (G2 * C2_HW);
        const int g = r / C2_HW, pos = r % C2_HW, oy = pos / C2, ox = pos % C2;
        c2[h][r] = conv_sum<K2, Q1>(w2s + g * W2_MAP, p1, h * (M1 / SPLIT2),
                                    (h + 1) * (M1 / SPLIT2), oy, ox);
    }
    __syncthreads();

    /* pool2: a thread per pooled unit of the group; halves added in order */
    if (t < G2 * Q2_HW) {
        const int g = t / Q2_HW, q = t % Q2_HW, qy = q / Q2, qx = q % Q2;
        float best = -3.402823466e+38f;
#pragma unroll
        for (int dy = 0; dy < 2; dy++)
#pragma unroll
            for (int dx = 0; dx < 2; dx++) {
                const int k = g * C2_HW + (2 * qy + dy) * C2 + 2 * qx + dx;
                best = fmaxf(best, c2[0][k] + c2[1][k]);
            }
        feat[(size_t)img * FEAT + (g0 + g) * Q2_HW + q] = nc_gpu_cnn_tanh(best + C.b2[g0 + g]);
    }
}

__global__ void __launch_bounds__(T3) conv3_kernel(column C, const float *__restrict__ feat,
                                                   float *__restrict__ pooled)
{
    __shared__ float p2[FEAT], w3s[G3 * W3_MAP], c3[SPLIT3][G3 * C3_HW];
    const int t = threadIdx.x;
    const int img = blockIdx.x / GROUPS3, g0 = (blockIdx.x % GROUPS3) * G3;
    const float *fi = feat + (size_t)img * FEAT;
    nc_dev_pdl_trigger();
    for (int i = t; i < G3 * W3_MAP; i += T3)
        w3s[i] = C.w3[(size_t)g0 * W3_MAP + i];
    nc_dev_pdl_wait();              /* features_kernel's output from here on */
    for (int i = t; i < FEAT; i += T3)
        p2[i] = fi[i];
    __syncthreads();

    /* a thread per (quarter, map, position) */
    {
        const int h = t / (G3 * C3_HW), r = t % (G3 * C3_HW);
        const int g = r / C3_HW, pos = r % C3_HW, oy = pos / C3, ox = pos % C3;
        c3[h][r] = conv_sum<K3, Q2>(w3s + g * W3_MAP, p2, h * (M2 / SPLIT3),
                                    (h + 1) * (M2 / SPLIT3), oy, ox);
    }
    __syncthreads();

    /* pool3 (3x3 -> 1): a thread per map; quarters added in order */
    if (t < G3) {
        float best = -3.402823466e+38f;
        for (int k = t * C3_HW; k < (t + 1) * C3_HW; k++)
            best = fmaxf(best, ((c3[0][k] + c3[1][k]) + c3[2][k]) + c3[3][k]);
        pooled[(size_t)img * M3 + g0 + t] = nc_gpu_cnn_tanh(best + C.b3[g0 + t]);
    }
}

/* sum over n_in of w[k] * x[k] by one warp: lane l takes k = l, l + 32, ...,
 * then a fixed shuffle tree; every lane returns the total. */
static __device__ __forceinline__ float warp_dot(const float *__restrict__ w,
                                                 const float *x, uint32_t n_in, int lane)
{
    float a = 0.0f;
    for (uint32_t k = (uint32_t)lane; k < n_in; k += 32)
        a += __ldg(w + k) * x[k];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
        a += __shfl_xor_sync(0xffffffffu, a, off);
    return a;
}

__global__ void __launch_bounds__(TT) top_kernel(column C, const float *__restrict__ pooled,
                                                 float *__restrict__ out)
{
    __shared__ float h3[M3], h4[MAX_UNITS];
    const int t = threadIdx.x, lane = t % 32, warp = t / 32, img = blockIdx.x;
    nc_dev_pdl_trigger();
    /* the first fully connected layer's weights, a 128-byte line a thread,
     * towards L2 while conv3 runs (its rows are read a warp at a time below) */
    if ((uint32_t)t * 32u < C.u1 * (uint32_t)M3)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(C.f1w + (size_t)t * 32u));
    nc_dev_pdl_wait();              /* conv3_kernel's output from here on */
    if (t < M3)
        h3[t] = pooled[(size_t)img * M3 + t];
    __syncthreads();
    for (uint32_t u = (uint32_t)warp; u < C.u1; u += WARPS) {
        const float a = warp_dot(C.f1w + (size_t)u * M3, h3, M3, lane);
        if (lane == 0)
            h4[u] = nc_gpu_cnn_tanh(a + C.f1b[u]);
    }
    __syncthreads();
    for (uint32_t u = (uint32_t)warp; u < C.u2; u += WARPS) {
        const float a = warp_dot(C.f2w + (size_t)u * C.u1, h4, C.u1, lane);
        if (lane == 0)
            out[(size_t)img * C.u2 + u] = nc_gpu_cnn_tanh(a + C.f2b[u]);
    }
}

} /* namespace */

extern "C" int nc_gpu_cnn_fused_deep_match(const nc_gpu_cnn_layer *l, uint32_t n_layers)
{
    static const uint32_t want[8][6] = {   /* kind, maps, height, width, kernel_x, kernel_y */
        {NC_CNN_KIND_CONV, M1, 26, 26, K1, K1}, {NC_CNN_KIND_POOL, M1, Q1, Q1, 2, 2},
        {NC_CNN_KIND_CONV, M2, C2, C2, K2, K2}, {NC_CNN_KIND_POOL, M2, Q2, Q2, 2, 2},
        {NC_CNN_KIND_CONV, M3, C3, C3, K3, K3}, {NC_CNN_KIND_POOL, M3, 1, 1, 3, 3},
        {NC_CNN_KIND_FULL, 0, 1, 1, 0, 0},      {NC_CNN_KIND_FULL, 0, 1, 1, 0, 0}};
    return nc_gpu_cnn_shapes_match(l, n_layers, IN, want, 8) && l[7].maps <= MAX_UNITS &&
           l[8].maps <= MAX_UNITS;
}

extern "C" int nc_gpu_cnn_fused_deep_forward(const nc_gpu_cnn_layer *l, const float *x,
                                             float *features, float *pooled, float *out,
                                             uint32_t n, cudaStream_t stream)
{
    if (n < 1 || n > (1u << 24) || !x || !features || !pooled || !out)
        return -EINVAL;
    const column C = {l[1].weights, l[1].bias, l[3].weights, l[3].bias, l[5].weights,
                      l[5].bias,    l[7].weights, l[7].bias, l[8].weights, l[8].bias,
                      l[7].maps,    l[8].maps};
    features_kernel<<<n * GROUPS2, T2, 0, stream>>>(C, x, features);
    NC_CUDA_CHECK(cudaGetLastError());
    NC_CUDA_CHECK(nc_dev_launch(conv3_kernel, dim3(n * GROUPS3), dim3(T3), 0, stream, n, C,
                                features, pooled));
    NC_CUDA_CHECK(nc_dev_launch(top_kernel, dim3(n), dim3(TT), 0, stream, n, C, pooled, out));
    return 0;
}

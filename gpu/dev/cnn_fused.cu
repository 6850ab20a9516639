/* gpu/dev/cnn_fused.cu — the column's forward with activations on chip.
 *
 * Layer: gpu.  Two launches: the feature extractor (conv1, pool1, conv2,
 * pool2: 29x29 -> 40x3x3 = 360 features per image, 99% of the arithmetic)
 * and the fully connected top (U1 units, then U2).  Pooling is fused into
 * the convolutions: the max is taken over raw sums, then bias and scaled
 * tanh once per pooled unit (the activation is increasing, so this is the
 * max of the activations).
 *
 * Thread mapping, feature extractor, BIG variant (throughput): persistent
 * blocks of 720 threads, one per multiprocessor, each taking 8 images at a
 * time.  conv2's kernels (80 KB) are loaded into shared memory once per
 * block; the 8 input images and their pool1 maps (8 x 20 x 13 x 13) live in
 * shared memory too (216 KB in all).
 *   conv1+pool1: a thread per (image, 4 maps, pooled unit), 6760 items in a
 *     block-stride loop: 5x5 input patch x 16 kernel weights (float4 = 4 maps)
 *     -> 4 maps x 2x2 sums -> max -> f.
 *   conv2+pool2: a thread per (4 maps, image, pooled unit): 10 x 8 x 9 = 720
 *     items, each 4 maps x 3x3 positions = 36 sums in registers over 20
 *     input maps x 5x5 weights; weights are float4 loads (4 maps), the same
 *     address across most of a warp (broadcast).
 * SMALL variant (latency): grid (20 blocks, images); a block of 1024 threads
 * per (image, 2 of the 40 conv2 maps): it computes all of pool1 (cheap) in
 * shared memory, then its maps' 2 x 81 conv2 sums split over 5 slices of the
 * input maps (810 threads), adds the slices in order, pools, writes.
 *
 * Top: a block per 32 images, ceil32(U1) x 4 threads.  The 32 feature rows are
 * staged transposed in shared memory; thread (u, g) computes unit u for
 * images 8g..8g+7, its weight row streamed through shared memory 32 inputs
 * at a time (coalesced global reads, each weight serving 8 images); then a
 * thread per (image, output unit) does the second layer from shared memory. */
#include "cnn_fused.cuh"

#include <errno.h>

#include "cnn_conv1_pool.cuh"
#include "cnn_math.cuh"
#include "cuda_check.cuh"

namespace {

constexpr int IN = 29, K1 = 4, M1 = 20, Q1 = 13;     /* conv1 26x26 -> pool 13x13 */
constexpr int K2 = 5, M2 = 40, C2 = 9, Q2 = 3;       /* conv2 9x9 -> pool 3x3 */
constexpr int IN_HW = IN * IN, Q1_HW = Q1 * Q1, FEAT = M2 * Q2 * Q2;
constexpr int P1S = M1 * Q1_HW;                      /* pool1 floats per image */

/* BIG */
constexpr int BIG_B = 8, BIG_T = 720;
constexpr int W2_FLOATS = M1 * K2 * K2 * M2;         /* [c][ky][kx][m] */
constexpr int BIG_SMEM = (W2_FLOATS + K1 * K1 * M1 + M1 + M2 + BIG_B * IN_HW + BIG_B * P1S) *
                         (int)sizeof(float);

/* SMALL */
constexpr int SM_MAPS = 2, SM_SPLIT = 5, SM_T = 1024;

/* TOP */
constexpr int TOP_B = 32, TOP_G = TOP_B / 8, TOP_KT = 32;

struct column {
    const float *w1, *b1, *w2, *b2;     /* conv1 [20][1][4][4], conv2 [40][20][5][5] */
    const float *f1w, *f1b, *f2w, *f2b; /* top [U1][360], [U2][U1] */
    uint32_t u1, u2;
};

static __global__ void __launch_bounds__(BIG_T, 1)
features_big_kernel(column C, const float *__restrict__ x, float *__restrict__ feat, uint32_t n)
{
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    float *w2s = smem;                              /* [20][5][5][40] */
    float *w1s = w2s + W2_FLOATS;                   /* [16][20] */
    float *b1s = w1s + K1 * K1 * M1, *b2s = b1s + M1;
    float *xs = b2s + M2;                           /* [B][841] */
    float *p1s = xs + BIG_B * IN_HW;                /* [B][20][169] */
    const int t = threadIdx.x;

    for (int e = t; e < W2_FLOATS; e += BIG_T) {    /* e = ((c*5+ky)*5+kx)*40 + m */
        const int m = e % M2, r = e / M2;           /* r = (c*5+ky)*5+kx */
        w2s[e] = C.w2[m * (M1 * K2 * K2) + r];
    }
    nc_conv1_stage(C.w1, C.b1, w1s, b1s, t, BIG_T);
    if (t < M2)
        b2s[t] = C.b2[t];

    const uint32_t groups = (n + BIG_B - 1) / BIG_B;
    const float4 *w1s4 = reinterpret_cast<const float4 *>(w1s);
    const float4 *w2s4 = reinterpret_cast<const float4 *>(w2s);
    for (uint32_t grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const uint32_t b0 = grp * BIG_B;
        const int valid = (int)min((uint32_t)BIG_B, n - b0);
        __syncthreads();                            /* previous group done with xs, p1s */
        for (int e = t; e < BIG_B * IN_HW; e += BIG_T)
            xs[e] = e < valid * IN_HW ? x[(size_t)b0 * IN_HW + e] : 0.0f;
        __syncthreads();
        for (int item = t; item < valid * (M1 / 4) * Q1_HW; item += BIG_T) {
            const int b = item / ((M1 / 4) * Q1_HW), r = item % ((M1 / 4) * Q1_HW);
            nc_conv1_pool(xs + b * IN_HW, w1s4, b1s, r / Q1_HW, r % Q1_HW, p1s + b * P1S);
        }
        __syncthreads();
        /* conv2 + pool2: t = g*72 + b*9 + w */
        const int g = t / (BIG_B * 9), r = t % (BIG_B * 9), b = r / 9, w = r % 9;
        if (b >= valid)
            continue;
        const int py = w / Q2, px = w % Q2;
        const float *pb = p1s + b * P1S + (py * 3) * Q1 + px * 3;
        float acc[4][9] = {};
#pragma unroll 1
        for (int c = 0; c < M1; c++) {
            const float *pc = pb + c * Q1_HW;
#pragma unroll
            for (int ky = 0; ky < K2; ky++) {
                float4 wv[K2];
#pragma unroll
                for (int kx = 0; kx < K2; kx++)
                    wv[kx] = w2s4[((c * K2 + ky) * K2 + kx) * (M2 / 4) + g];
#pragma unroll
                for (int dy = 0; dy < 3; dy++) {
                    float in[7];
#pragma unroll
                    for (int q = 0; q < 7; q++)
                        in[q] = pc[(dy + ky) * Q1 + q];
#pragma unroll
                    for (int dx = 0; dx < 3; dx++)
#pragma unroll
                        for (int kx = 0; kx < K2; kx++) {
                            const float v = in[dx + kx];
                            acc[0][dy * 3 + dx] += wv[kx].x * v;
                            acc[1][dy * 3 + dx] += wv[kx].y * v;
                            acc[2][dy * 3 + dx] += wv[kx].z * v;
                            acc[3][dy * 3 + dx] += wv[kx].w * v;
                        }
                }
            }
        }
        float *fo = feat + (size_t)(b0 + b) * FEAT;
#pragma unroll
        for (int mi = 0; mi < 4; mi++) {
            float a = acc[mi][0];
#pragma unroll
            for (int q = 1; q < 9; q++)
                a = fmaxf(a, acc[mi][q]);
            const int m = 4 * g + mi;
            fo[m * Q2 * Q2 + w] = nc_gpu_cnn_tanh(a + b2s[m]);
        }
    }
}

static __global__ void __launch_bounds__(SM_T)
features_small_kernel(column C, const float *__restrict__ x, float *__restrict__ feat, uint32_t n)
{
    __shared__ __align__(16) float w1s[K1 * K1 * M1];
    __shared__ float b1s[M1];
    __shared__ float xs[IN_HW];
    __shared__ float p1s[P1S];
    __shared__ float w2s[SM_MAPS * M1 * K2 * K2];
    __shared__ float part[SM_SPLIT][SM_MAPS * C2 * C2];
    __shared__ float c2s[SM_MAPS * C2 * C2];
    const int t = threadIdx.x, m0 = blockIdx.x * SM_MAPS;
    nc_conv1_stage(C.w1, C.b1, w1s, b1s, t, SM_T);
    for (int e = t; e < SM_MAPS * M1 * K2 * K2; e += SM_T)
        w2s[e] = C.w2[(size_t)m0 * M1 * K2 * K2 + e];
    const float4 *w1s4 = reinterpret_cast<const float4 *>(w1s);
    for (uint32_t b = blockIdx.y; b < n; b += gridDim.y) {
        __syncthreads();
        for (int e = t; e < IN_HW; e += SM_T)
            xs[e] = x[(size_t)b * IN_HW + e];
        __syncthreads();
        for (int item = t; item < (M1 / 4) * Q1_HW; item += SM_T)
            nc_conv1_pool(xs, w1s4, b1s, item / Q1_HW, item % Q1_HW, p1s);
        __syncthreads();
        if (t < SM_SPLIT * SM_MAPS * C2 * C2) {
            const int s = t / (SM_MAPS * C2 * C2), r = t % (SM_MAPS * C2 * C2);
            const int mi = r / (C2 * C2), p = r % (C2 * C2), oy = p / C2, ox = p % C2;
            float a = 0.0f;
            for (int c = s * (M1 / SM_SPLIT); c < (s + 1) * (M1 / SM_SPLIT); c++) {
                const float *k = w2s + (mi * M1 + c) * K2 * K2;
                const float *pc = p1s + c * Q1_HW + oy * Q1 + ox;
#pragma unroll
                for (int i = 0; i < K2; i++)
#pragma unroll
                    for (int j = 0; j < K2; j++)
                        a += k[i * K2 + j] * pc[i * Q1 + j];
            }
            part[s][r] = a;
        }
        __syncthreads();
        if (t < SM_MAPS * C2 * C2) {
            float a = part[0][t];
#pragma unroll
            for (int s = 1; s < SM_SPLIT; s++)
                a += part[s][t];
            c2s[t] = a;
        }
        __syncthreads();
        if (t < SM_MAPS * Q2 * Q2) {
            const int mi = t / (Q2 * Q2), w = t % (Q2 * Q2), py = w / Q2, px = w % Q2;
            const float *c = c2s + mi * C2 * C2 + (py * 3) * C2 + px * 3;
            float a = c[0];
#pragma unroll
            for (int i = 0; i < 3; i++)
#pragma unroll
                for (int j = 0; j < 3; j++)
                    a = fmaxf(a, c[i * C2 + j]);
            feat[(size_t)b * FEAT + (m0 + mi) * Q2 * Q2 + w] =
                nc_gpu_cnn_tanh(a + C.b2[m0 + mi]);
        }
    }
}

/* dynamic smem: xs[360][32] | ws[U1][33] | hs[32][U1 + 1] */
static __global__ void top_kernel(column C, const float *__restrict__ feat, float *__restrict__ out,
                                  uint32_t n)
{
    extern __shared__ float4 smem4[];
    float *xs = reinterpret_cast<float *>(smem4);
    float *ws = xs + FEAT * TOP_B;
    const uint32_t u1 = C.u1, u2 = C.u2, u1p = (u1 + 31) & ~31u;
    float *hs = ws + u1 * (TOP_KT + 1);
    const uint32_t t = threadIdx.x, nt = blockDim.x;
    const uint32_t b0 = blockIdx.x * TOP_B;
    const uint32_t valid = min((uint32_t)TOP_B, n - b0);
    for (uint32_t e = t; e < TOP_B * FEAT; e += nt) {     /* e = i*360 + k, coalesced */
        const uint32_t i = e / FEAT, k = e % FEAT;
        xs[k * TOP_B + i] = i < valid ? feat[(size_t)b0 * FEAT + e] : 0.0f;
    }
    const uint32_t u = t % u1p, g = t / u1p;
    float acc[8] = {};
    for (uint32_t k0 = 0; k0 < FEAT; k0 += TOP_KT) {
        __syncthreads();
        for (uint32_t e = t; e < u1 * TOP_KT; e += nt) {  /* row uu, column kk */
            const uint32_t uu = e / TOP_KT, kk = e % TOP_KT;
            ws[uu * (TOP_KT + 1) + kk] = k0 + kk < FEAT ? C.f1w[(size_t)uu * FEAT + k0 + kk] : 0.0f;
        }
        __syncthreads();
        if (u < u1) {
            const uint32_t kn = min((uint32_t)TOP_KT, FEAT - k0);
            for (uint32_t kk = 0; kk < kn; kk++) {
                const float wv = ws[u * (TOP_KT + 1) + kk];
                const float4 *xv = reinterpret_cast<const float4 *>(xs + (k0 + kk) * TOP_B + 8 * g);
                const float4 xa = xv[0], xb = xv[1];
                acc[0] += wv * xa.x; acc[1] += wv * xa.y; acc[2] += wv * xa.z; acc[3] += wv * xa.w;
                acc[4] += wv * xb.x; acc[5] += wv * xb.y; acc[6] += wv * xb.z; acc[7] += wv * xb.w;
            }
        }
    }
    if (u < u1) {
        const float bias = C.f1b[u];
#pragma unroll
        for (int i = 0; i < 8; i++)
            hs[(8 * g + i) * (u1 + 1) + u] = nc_gpu_cnn_tanh(acc[i] + bias);
    }
    __syncthreads();
    for (uint32_t e = t; e < valid * u2; e += nt) {
        const uint32_t i = e / u2, v = e % u2;
        const float *wr = C.f2w + (size_t)v * u1, *h = hs + i * (u1 + 1);
        float a = C.f2b[v];
        for (uint32_t k = 0; k < u1; k++)
            a += wr[k] * h[k];
        out[(size_t)(b0 + i) * u2 + v] = nc_gpu_cnn_tanh(a);
    }
}

size_t top_smem(uint32_t u1)
{
    return ((size_t)FEAT * TOP_B + (size_t)u1 * (TOP_KT + 1) + (size_t)TOP_B * (u1 + 1)) *
           sizeof(float);
}

}  // namespace

extern "C" int nc_gpu_cnn_fused_match(const nc_gpu_cnn_layer *l, uint32_t n_layers)
{
    static const uint32_t want[6][6] = {   /* kind, maps, height, width, kernel_x, kernel_y */
        {NC_CNN_KIND_CONV, M1, 26, 26, K1, K1}, {NC_CNN_KIND_POOL, M1, Q1, Q1, 2, 2},
        {NC_CNN_KIND_CONV, M2, C2, C2, K2, K2}, {NC_CNN_KIND_POOL, M2, Q2, Q2, 3, 3},
        {NC_CNN_KIND_FULL, 0, 1, 1, 0, 0},      {NC_CNN_KIND_FULL, 0, 1, 1, 0, 0}};
    return nc_gpu_cnn_shapes_match(l, n_layers, IN, want, 6) && l[5].maps <= 256 &&
           l[6].maps <= 1024;
}

extern "C" int nc_gpu_cnn_fused_init(void)
{
    NC_CUDA_CHECK(cudaFuncSetAttribute(features_big_kernel,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, BIG_SMEM));
    NC_CUDA_CHECK(cudaFuncSetAttribute(top_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)top_smem(256)));
    return 0;
}

extern "C" int nc_gpu_cnn_fused_forward(const nc_gpu_cnn_layer *l, const float *x, float *features,
                                        float *out, uint32_t n, nc_gpu_cnn_fused_variant variant,
                                        int sm_count, cudaStream_t stream)
{
    column C = {l[1].weights, l[1].bias, l[3].weights, l[3].bias,
                l[5].weights, l[5].bias, l[6].weights, l[6].bias, l[5].maps, l[6].maps};
    if (n < 1)
        return -EINVAL;
    if (variant == NC_GPU_CNN_FUSED_BIG) {
        const uint32_t groups = (n + BIG_B - 1) / BIG_B;
        const uint32_t grid = groups < (uint32_t)sm_count ? groups : (uint32_t)sm_count;
        features_big_kernel<<<grid, BIG_T, BIG_SMEM, stream>>>(C, x, features, n);
    } else {
        dim3 grid(M2 / SM_MAPS, n < 65535u ? n : 65535u);
        features_small_kernel<<<grid, SM_T, 0, stream>>>(C, x, features, n);
    }
    NC_CUDA_CHECK(cudaGetLastError());
    if (!out)
        return 0;
    const uint32_t threads = ((C.u1 + 31) & ~31u) * TOP_G;
    top_kernel<<<(n + TOP_B - 1) / TOP_B, threads, top_smem(C.u1), stream>>>(C, features, out, n);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

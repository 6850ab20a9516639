/* gpu/cnn/cnn_fused_deep_big.cu — the deep column's conv1 .. pool2 for
 * throughput.
 *
 * Layer: gpu.  Why: at thousands of images a batch the layer-wise path is
 * bound by conv2 (73 % of the column's multiply-adds) and by the trips of
 * conv1's and conv2's full-size outputs through global memory; the fused
 * deep kernel (cnn_fused_deep.cu) is built for one image's latency and
 * re-reads conv2's weights for every image.  Here each multiprocessor runs
 * persistent blocks that stage conv2's 19,200 weights in shared memory once
 * and then take B images at a time (8, 4 or 2: the most that still gives
 * every multiprocessor work, pick() below): their inputs and pool1 maps stay
 * in shared memory (213 KB for 8), and only pool2's 1,500 floats an image go
 * to global memory.
 *
 * Thread mapping:
 *   conv1 + pool1: a thread per (image, 4 maps, pooled unit) in a
 *     block-stride loop (cnn_conv1_pool.cuh).
 *   conv2 + pool2: a thread per (group of 12 maps, image, pooled unit):
 *     5 x B x 25 items (two rounds of 512 threads for 8 images, one of 512
 *     for 4, one of 256 for 2).  A thread keeps 12 maps x the 2x2 positions
 *     of its pooled unit = 48 sums in registers; per input map and kernel
 *     row it reads 10 pool1 values and, per kernel column, 12 weights as
 *     three float4 (the same address across most of a warp, so a
 *     broadcast): 192 multiply-adds for 22 shared loads.
 * Every sum runs over (input map, ky, kx) in order, as core's reference;
 * the max of the four raw sums, then bias and tanh. */
#include "cnn_fused_deep_big.cuh"

#include <errno.h>

#include "cnn_conv1_pool.cuh"
#include "cnn_math.cuh"
#include "cuda_check.cuh"

namespace {

constexpr int IN = nc_conv1::IN, M1 = nc_conv1::MAPS, Q1 = nc_conv1::Q;
constexpr int K2 = 4, M2 = 60, C2 = 10, Q2 = 5;            /* conv2 10x10 -> pool 5x5 */
constexpr int IN_HW = IN * IN, Q1_HW = Q1 * Q1, Q2_HW = Q2 * Q2;
constexpr int P1 = M1 * Q1_HW, FEAT = M2 * Q2_HW;          /* floats per image */
constexpr int MG = 12, GROUPS = M2 / MG;
constexpr int W2 = M2 * M1 * K2 * K2;                      /* staged [c][ky][kx][m] */

/* Shared memory of a block taking B images at a time. */
constexpr int smem_bytes(int B)
{
    return (W2 + nc_conv1::WEIGHTS + M1 + M2 + B * IN_HW + B * P1) * (int)sizeof(float);
}

static_assert(M2 % MG == 0 && MG % 4 == 0, "map groups of float4s");
static_assert(W2 % 4 == 0 && nc_conv1::WEIGHTS % 4 == 0, "float4 alignment of the stages");
static_assert(C2 == 2 * Q2 && (Q1 - K2 + 1) == C2, "conv2's geometry");

struct column {
    const float *w1, *b1, *w2, *b2;
};

/* B images at a time by T threads, BLOCKS blocks a multiprocessor. */
template <int B, int T, int BLOCKS>
__global__ void __launch_bounds__(T, BLOCKS)
deep_big_kernel(column C, const float *__restrict__ x, float *__restrict__ feat, uint32_t n)
{
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    float *w2s = smem;                              /* [20][4][4][60] */
    float *w1s = w2s + W2;                          /* [16][20] */
    float *b1s = w1s + nc_conv1::WEIGHTS, *b2s = b1s + M1;
    float *xs = b2s + M2;                           /* [B][841] */
    float *p1s = xs + B * IN_HW;                    /* [B][20][169] */
    const int t = threadIdx.x;

    for (int e = t; e < W2; e += T) {               /* e = ((c*4+ky)*4+kx)*60 + m */
        const int m = e % M2, r = e / M2;
        w2s[e] = C.w2[m * (M1 * K2 * K2) + r];
    }
    nc_conv1_stage(C.w1, C.b1, w1s, b1s, t, T);
    if (t < M2)
        b2s[t] = C.b2[t];

    const float4 *w1s4 = reinterpret_cast<const float4 *>(w1s);
    const float4 *w2s4 = reinterpret_cast<const float4 *>(w2s);
    const uint32_t groups = (n + B - 1) / B;
    for (uint32_t grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const uint32_t b0 = grp * B;
        const int valid = (int)min((uint32_t)B, n - b0);
        __syncthreads();                            /* the last group is done with xs, p1s */
        for (int e = t; e < valid * IN_HW; e += T)
            xs[e] = x[(size_t)b0 * IN_HW + e];
        __syncthreads();
        for (int item = t; item < valid * (M1 / 4) * Q1_HW; item += T) {
            const int b = item / ((M1 / 4) * Q1_HW), r = item % ((M1 / 4) * Q1_HW);
            nc_conv1_pool(xs + b * IN_HW, w1s4, b1s, r / Q1_HW, r % Q1_HW, p1s + b * P1);
        }
        __syncthreads();
        for (int item = t; item < GROUPS * B * Q2_HW; item += T) {
            const int g = item / (B * Q2_HW), r = item % (B * Q2_HW);
            const int b = r / Q2_HW, q = r % Q2_HW;
            if (b >= valid)
                continue;
            const float *pb = p1s + b * P1 + 2 * (q / Q2) * Q1 + 2 * (q % Q2);
            float acc[MG][4] = {};
#pragma unroll 1
            for (int c = 0; c < M1; c++) {
                const float *pc = pb + c * Q1_HW;
#pragma unroll
                for (int ky = 0; ky < K2; ky++) {
                    float in[2][K2 + 1];
#pragma unroll
                    for (int dy = 0; dy < 2; dy++)
#pragma unroll
                        for (int j = 0; j < K2 + 1; j++)
                            in[dy][j] = pc[(ky + dy) * Q1 + j];
#pragma unroll
                    for (int kx = 0; kx < K2; kx++) {
                        const float4 *wp = w2s4 + ((c * K2 + ky) * K2 + kx) * (M2 / 4) + g * (MG / 4);
                        float wv[MG];
#pragma unroll
                        for (int v = 0; v < MG / 4; v++) {
                            const float4 w4 = wp[v];
                            wv[4 * v] = w4.x;
                            wv[4 * v + 1] = w4.y;
                            wv[4 * v + 2] = w4.z;
                            wv[4 * v + 3] = w4.w;
                        }
#pragma unroll
                        for (int d = 0; d < 4; d++) {
                            const float u = in[d >> 1][(d & 1) + kx];
#pragma unroll
                            for (int mi = 0; mi < MG; mi++)
                                acc[mi][d] += wv[mi] * u;
                        }
                    }
                }
            }
            float *fo = feat + (size_t)(b0 + b) * FEAT + q;
#pragma unroll
            for (int mi = 0; mi < MG; mi++) {
                const float a = fmaxf(fmaxf(acc[mi][0], acc[mi][1]), fmaxf(acc[mi][2], acc[mi][3]));
                const int m = g * MG + mi;
                fo[m * Q2_HW] = nc_gpu_cnn_tanh(a + b2s[m]);
            }
        }
    }
}

/* The variants: 8 images a group in two rounds of 512 threads (every
 * multiprocessor busy from 8 x its count of images), 4 in one round of 512,
 * and 2 in one round of 256 with two blocks a multiprocessor (113 KB each),
 * so that a batch of a few hundred still spreads over the chip. */
struct variant {
    void (*kernel)(column, const float *, float *, uint32_t);
    int b, threads, blocks_per_sm;
};
const variant VARIANTS[] = {{deep_big_kernel<8, 512, 1>, 8, 512, 1},
                            {deep_big_kernel<4, 512, 1>, 4, 512, 1},
                            {deep_big_kernel<2, 256, 2>, 2, 256, 2}};
static_assert(GROUPS * 8 * Q2_HW <= 2 * 512 && GROUPS * 4 * Q2_HW <= 512 &&
                  GROUPS * 2 * Q2_HW <= 256, "conv2's items in at most two rounds");

/* The variant for n images on sm_count multiprocessors: the most images a
 * group that still gives every multiprocessor a group. */
const variant &pick(uint32_t n, int sm_count)
{
    for (const variant &v : VARIANTS)
        if (n >= (uint32_t)(v.b * v.blocks_per_sm) * (uint32_t)sm_count)
            return v;
    return VARIANTS[sizeof VARIANTS / sizeof *VARIANTS - 1];
}

} /* namespace */

extern "C" int nc_gpu_cnn_deep_big_match(const nc_gpu_cnn_layer *l, uint32_t n_layers)
{
    static const uint32_t want[4][6] = {   /* kind, maps, height, width, kernel_x, kernel_y */
        {NC_CNN_KIND_CONV, M1, 26, 26, 4, 4}, {NC_CNN_KIND_POOL, M1, Q1, Q1, 2, 2},
        {NC_CNN_KIND_CONV, M2, C2, C2, K2, K2}, {NC_CNN_KIND_POOL, M2, Q2, Q2, 2, 2}};
    /* the first five entries of l against want; the layers after, layer-wise */
    return n_layers > 5 && nc_gpu_cnn_shapes_match(l, 5, IN, want, 4);
}

extern "C" int nc_gpu_cnn_deep_big_init(void)
{
    int dev = 0, optin = 0;
    NC_CUDA_CHECK(cudaGetDevice(&dev));
    NC_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (optin < smem_bytes(8))
        return -ENOTSUP;
    for (const variant &v : VARIANTS) {
        NC_CUDA_CHECK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           smem_bytes(v.b)));
        /* all of the unified L1 as shared memory: two blocks of 2 images fit */
        NC_CUDA_CHECK(cudaFuncSetAttribute(v.kernel,
                                           cudaFuncAttributePreferredSharedMemoryCarveout,
                                           cudaSharedmemCarveoutMaxShared));
    }
    return 0;
}

extern "C" int nc_gpu_cnn_deep_big_features(const nc_gpu_cnn_layer *l, const float *x,
                                            float *features, uint32_t n, int sm_count,
                                            cudaStream_t stream)
{
    if (n < 1 || n > (1u << 24) || !x || !features || sm_count < 1)
        return -EINVAL;
    const column C = {l[1].weights, l[1].bias, l[3].weights, l[3].bias};
    const variant &v = pick(n, sm_count);
    const uint32_t groups = (n + v.b - 1) / v.b, most = (uint32_t)(sm_count * v.blocks_per_sm);
    v.kernel<<<groups < most ? groups : most, v.threads, smem_bytes(v.b), stream>>>(C, x,
                                                                                    features, n);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

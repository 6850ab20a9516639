/* gpu/cnn/cnn_conv_staged.cu — convolution forward, back-propagation and weight
 * gradients with each image's operands staged in shared memory.
 *
 * Layer: gpu.  Why: the general kernels of cnn_conv.cu read every operand
 * from global memory with per-thread addresses and (weights) one block-wide
 * reduction per kernel weight; at training batches (16 images) they cost
 * 25-130 us each on an H100 and made up 80 % of a training step.  Here every
 * inner loop reads shared memory, and the operand that does not depend on the
 * thread's position (the kernel weight in forward and backward, the delta in
 * the weight gradients) is the same for all threads of a map, so it is a
 * broadcast.  Unwired map pairs (partial connection tables) are staged as
 * zero weights, which adds exact zeros.
 *
 * Thread mapping:
 *   forward:  grid (groups of G output maps, images); a thread per (map of
 *             the group, output position); x of the image (all input maps)
 *             and the group's kernels in shared memory.
 *   backward: grid (groups of G input maps, images); a thread per (input map
 *             of the group, input position) pulls over the kernel's taps
 *             (warp-uniform) the deltas of every output map; da of the image
 *             and the group's kernels in shared memory.
 *   weights:  grid (input maps, batch splits, row splits); a thread per
 *             (output map, kernel tap) pair (and, in blocks of input map 0,
 *             per bias) sums da * x over its images and rows; x of the input
 *             map and da of row chunks in shared memory.  Every block writes
 *             one partial per pair; cnn_conv.cu adds the partials in a fixed
 *             order, so the result is deterministic. */
#include "cnn_conv_staged.cuh"

#include <errno.h>

#include "cnn_math.cuh"
#include "cuda_check.cuh"

/* Shared memory per block, in floats: the static limit (48 KB) without
 * opting in, which every layer of the seed's nets fits well inside. */
#define SMEM_FLOATS 12288u
/* Pairs a thread of the weight kernel may hold (its accumulators). */
#define WG_PAIRS 4u

static uint32_t round32(uint32_t v)
{
    return (v + 31u) & ~31u;
}

static __global__ void conv_forward_staged_kernel(nc_gpu_cnn_layer L, const float *__restrict__ x,
                                                  float *__restrict__ y, uint32_t n, uint32_t G)
{
    extern __shared__ float sm[];
    const uint32_t in_w = L.in_width, in_hw = L.in_height * in_w;
    const uint32_t kx = L.kernel_x, ky = L.kernel_y, kk = kx * ky;
    const uint32_t hw = L.height * L.width, per_map = L.in_maps * kk;
    const uint32_t m0 = blockIdx.x * G, gm = min(G, L.maps - m0);
    const uint32_t tid = threadIdx.x, T = blockDim.x;
    float *s_w = sm, *s_x = sm + G * per_map;
    for (uint32_t i = tid; i < gm * per_map; i += T)
        s_w[i] = 0.0f;
    __syncthreads();
    for (uint32_t ml = 0; ml < gm; ml++) {
        const int32_t *list = L.fwd + (size_t)(m0 + ml) * (1 + L.in_maps);
        const uint32_t cnt = (uint32_t)list[0];
        for (uint32_t i = tid; i < cnt * kk; i += T) {
            const uint32_t c = (uint32_t)list[1 + i / kk], k = i % kk;
            s_w[ml * per_map + c * kk + k] = L.weights[((size_t)(m0 + ml) * L.in_maps + c) * kk + k];
        }
    }
    for (uint32_t b = blockIdx.y; b < n; b += gridDim.y) {
        __syncthreads();        /* kernels staged; the previous image's x read */
        const float *xb = x + (size_t)b * L.n_in;
        for (uint32_t i = tid; i < L.n_in; i += T)
            s_x[i] = xb[i];
        __syncthreads();
        for (uint32_t idx = tid; idx < gm * hw; idx += T) {
            const uint32_t ml = idx / hw, p = idx % hw;
            const uint32_t oy = p / L.width, ox = p % L.width;
            const float *w = s_w + ml * per_map;
            const float *xs = s_x + oy * L.step_y * in_w + ox * L.step_x;
            float a = L.bias[m0 + ml];
            for (uint32_t c = 0; c < L.in_maps; c++, w += kk, xs += in_hw)
                for (uint32_t i = 0; i < ky; i++)
                    for (uint32_t j = 0; j < kx; j++)
                        a += w[i * kx + j] * xs[i * in_w + j];
            y[(size_t)b * L.n_out + (size_t)(m0 + ml) * hw + p] = nc_gpu_cnn_act(a, L.act);
        }
    }
}

static __global__ void conv_backward_staged_kernel(nc_gpu_cnn_layer L, const float *__restrict__ da,
                                                   float *__restrict__ dx, uint32_t n, uint32_t G)
{
    extern __shared__ float sm[];
    const uint32_t in_w = L.in_width, in_hw = L.in_height * in_w;
    const uint32_t kx = L.kernel_x, ky = L.kernel_y, kk = kx * ky;
    const uint32_t sx = L.step_x, sy = L.step_y;
    const int32_t H = (int32_t)L.height, W = (int32_t)L.width;
    const uint32_t hw = L.height * L.width, per_c = L.maps * kk;
    const uint32_t c0 = blockIdx.x * G, gc = min(G, L.in_maps - c0);
    const uint32_t tid = threadIdx.x, T = blockDim.x;
    float *s_w = sm, *s_da = sm + G * per_c;
    for (uint32_t i = tid; i < gc * per_c; i += T)
        s_w[i] = 0.0f;
    __syncthreads();
    for (uint32_t cl = 0; cl < gc; cl++) {
        const uint32_t c = c0 + cl;
        const int32_t *list = L.bwd + (size_t)c * (1 + L.maps);
        const uint32_t cnt = (uint32_t)list[0];
        for (uint32_t i = tid; i < cnt * kk; i += T) {
            const uint32_t m = (uint32_t)list[1 + i / kk], k = i % kk;
            s_w[cl * per_c + m * kk + k] = L.weights[((size_t)m * L.in_maps + c) * kk + k];
        }
    }
    for (uint32_t b = blockIdx.y; b < n; b += gridDim.y) {
        __syncthreads();
        const float *dab = da + (size_t)b * L.n_out;
        for (uint32_t i = tid; i < L.n_out; i += T)
            s_da[i] = dab[i];
        __syncthreads();
        for (uint32_t idx = tid; idx < gc * in_hw; idx += T) {
            const uint32_t cl = idx / in_hw, q = idx % in_hw;
            const int32_t iy = (int32_t)(q / in_w), ix = (int32_t)(q % in_w);
            const float *w = s_w + cl * per_c;
            float s = 0.0f;
            /* the output (oy, ox) reads (iy, ix) through tap (i, j) when
               oy * sy + i = iy and ox * sx + j = ix */
            for (uint32_t i = 0; i < ky; i++) {
                const int32_t ty = iy - (int32_t)i;
                if (ty < 0 || ty % (int32_t)sy || ty / (int32_t)sy >= H)
                    continue;
                const uint32_t oy = (uint32_t)(ty / (int32_t)sy);
                for (uint32_t j = 0; j < kx; j++) {
                    const int32_t tx = ix - (int32_t)j;
                    if (tx < 0 || tx % (int32_t)sx || tx / (int32_t)sx >= W)
                        continue;
                    const uint32_t o = oy * (uint32_t)W + (uint32_t)(tx / (int32_t)sx);
                    const float *wk = w + i * kx + j;
                    for (uint32_t m = 0; m < L.maps; m++)
                        s += wk[m * kk] * s_da[m * hw + o];
                }
            }
            dx[(size_t)b * L.n_in + (size_t)(c0 + cl) * in_hw + q] = s;
        }
    }
}

/* Is input map c in output map m's list? */
static __device__ bool wired(const nc_gpu_cnn_layer &L, uint32_t m, uint32_t c)
{
    const int32_t *list = L.fwd + (size_t)m * (1 + L.in_maps);
    for (int32_t t = 0; t < list[0]; t++)
        if ((uint32_t)list[1 + t] == c)
            return true;
    return false;
}

/* blockIdx: x input map c, y split of `per` images, z split of `rows` output
 * rows; partial (y * gridDim.z + z) of part[][n_weights + maps]. */
static __global__ void conv_weights_staged_kernel(nc_gpu_cnn_layer L, const float *__restrict__ x,
                                                  const float *__restrict__ da, uint32_t n,
                                                  uint32_t per, uint32_t rows, uint32_t chunk,
                                                  float *__restrict__ part)
{
    extern __shared__ float sm[];
    const uint32_t in_w = L.in_width, in_hw = L.in_height * in_w;
    const uint32_t kx = L.kernel_x, kk = kx * L.kernel_y;
    const uint32_t W = L.width, hw = L.height * W;
    const uint32_t c = blockIdx.x, mk = L.maps * kk;
    const uint32_t pairs = mk + (c == 0 ? L.maps : 0);   /* biases in map 0's blocks */
    const uint32_t b0 = blockIdx.y * per, b1 = min(n, b0 + per);
    const uint32_t r0 = blockIdx.z * rows, r1 = min(L.height, r0 + rows);
    const uint32_t tid = threadIdx.x, T = blockDim.x;
    float *s_x = sm, *s_da = sm + in_hw;       /* s_da[m][chunk rows][W] */
    float acc[WG_PAIRS] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (uint32_t b = b0; b < b1; b++) {
        const float *xb = x + (size_t)b * L.n_in + (size_t)c * in_hw;
        const float *dab = da + (size_t)b * L.n_out;
        for (uint32_t y0 = r0; y0 < r1; y0 += chunk) {
            const uint32_t nr = min(chunk, r1 - y0), cw = nr * W;
            __syncthreads();    /* the previous chunk is read */
            if (y0 == r0)
                for (uint32_t i = tid; i < in_hw; i += T)
                    s_x[i] = xb[i];
            for (uint32_t i = tid; i < L.maps * cw; i += T) {
                const uint32_t m = i / cw, r = i % cw;
                s_da[m * cw + r] = dab[(size_t)m * hw + y0 * W + r];
            }
            __syncthreads();
#pragma unroll
            for (uint32_t r = 0; r < WG_PAIRS; r++) {
                const uint32_t idx = tid + r * T;
                if (idx >= pairs)
                    break;
                float s = acc[r];
                if (idx < mk) {
                    const uint32_t m = idx / kk, k = idx % kk;
                    const float *d = s_da + m * cw;
                    const float *xs = s_x + (y0 * L.step_y + k / kx) * in_w + k % kx;
                    for (uint32_t oy = 0; oy < nr; oy++, d += W, xs += L.step_y * in_w)
                        for (uint32_t ox = 0; ox < W; ox++)
                            s += d[ox] * xs[ox * L.step_x];
                } else {
                    const float *d = s_da + (idx - mk) * cw;
                    for (uint32_t i = 0; i < cw; i++)
                        s += d[i];
                }
                acc[r] = s;
            }
        }
    }
    float *out = part + (size_t)(blockIdx.y * gridDim.z + blockIdx.z) * (L.n_weights + L.maps);
#pragma unroll
    for (uint32_t r = 0; r < WG_PAIRS; r++) {
        const uint32_t idx = tid + r * T;
        if (idx >= pairs)
            break;
        if (idx < mk) {
            const uint32_t m = idx / kk, k = idx % kk;
            out[((size_t)m * L.in_maps + c) * kk + k] = wired(L, m, c) ? acc[r] : 0.0f;
        } else {
            out[L.n_weights + idx - mk] = acc[r];
        }
    }
}

/* Forward and back-propagation launch alike: a block stages `fixed` floats
 * (one image's operand) plus `per_map` floats for each map of its group of
 * G, and runs a thread per (map of the group, position), about 256 threads'
 * worth as room allows.  -E2BIG when not even one map fits. */
typedef struct group_plan {
    uint32_t G, threads, blocks;
    size_t smem;
} group_plan;

static int plan_groups(uint32_t maps, uint32_t positions, uint32_t per_map, uint32_t fixed,
                       group_plan *ret)
{
    if (fixed + per_map > SMEM_FLOATS)
        return -E2BIG;
    uint32_t G = (256u + positions - 1) / positions;
    G = min(G, min(maps, (SMEM_FLOATS - fixed) / per_map));
    ret->G = G;
    ret->threads = min(256u, round32(G * positions));
    ret->blocks = (maps + G - 1) / G;
    ret->smem = ((size_t)G * per_map + fixed) * sizeof(float);
    return 0;
}

int nc_gpu_cnn_conv_forward_staged(const nc_gpu_cnn_layer *L, const float *x, float *y,
                                   uint32_t n, cudaStream_t stream)
{
    group_plan gp;
    if (plan_groups(L->maps, L->height * L->width, L->in_maps * L->kernel_x * L->kernel_y,
                    L->n_in, &gp))
        return -E2BIG;
    dim3 grid(gp.blocks, n < 65535u ? n : 65535u);
    conv_forward_staged_kernel<<<grid, gp.threads, gp.smem, stream>>>(*L, x, y, n, gp.G);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

int nc_gpu_cnn_conv_backward_staged(const nc_gpu_cnn_layer *L, const float *da, float *dx,
                                    uint32_t n, cudaStream_t stream)
{
    group_plan gp;
    if (plan_groups(L->in_maps, L->in_height * L->in_width, L->maps * L->kernel_x * L->kernel_y,
                    L->n_out, &gp))
        return -E2BIG;
    dim3 grid(gp.blocks, n < 65535u ? n : 65535u);
    conv_backward_staged_kernel<<<grid, gp.threads, gp.smem, stream>>>(*L, da, dx, n, gp.G);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

int nc_gpu_cnn_conv_weights_staged(const nc_gpu_cnn_layer *L, const float *x,
                                   const float *da, uint32_t n, float *part,
                                   uint32_t *ret_parts, cudaStream_t stream)
{
    const uint32_t kk = L->kernel_x * L->kernel_y, in_hw = L->in_height * L->in_width;
    const uint32_t pairs = L->maps * kk + L->maps;
    const uint32_t per_pass = (pairs + WG_PAIRS - 1) / WG_PAIRS;
    if (per_pass > 1024u || in_hw + L->maps * L->width > SMEM_FLOATS)
        return -E2BIG;
    /* images per split: at most NC_GPU_CNN_WEIGHT_PARTS splits */
    const uint32_t per = (n + NC_GPU_CNN_WEIGHT_PARTS - 1) / NC_GPU_CNN_WEIGHT_PARTS;
    const uint32_t splits = (n + per - 1) / per;
    /* rows split further while the grid is small (one input map, few images) */
    uint32_t zs = 1;
    while (zs * 2 <= L->height && splits * zs * 2 <= NC_GPU_CNN_WEIGHT_PARTS &&
           L->in_maps * splits * zs < 256u)
        zs *= 2;
    const uint32_t rows = (L->height + zs - 1) / zs;
    zs = (L->height + rows - 1) / rows;
    const uint32_t chunk = min(rows, (SMEM_FLOATS - in_hw) / (L->maps * L->width));
    const uint32_t T = pairs <= 1024u ? round32(pairs) : round32(per_pass);
    dim3 grid(L->in_maps, splits, zs);
    const size_t smem = ((size_t)in_hw + (size_t)L->maps * chunk * L->width) * sizeof(float);
    conv_weights_staged_kernel<<<grid, T, smem, stream>>>(*L, x, da, n, per, rows, chunk, part);
    NC_CUDA_CHECK(cudaGetLastError());
    *ret_parts = splits * zs;
    return 0;
}

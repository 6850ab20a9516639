/* gpu/cnn/cnn_conv.cu — convolution with skipping factors and connection tables:
 * forward, back-propagation by pulling deltas, and the weight gradients
 * (seed 000 §3.2-3.4; its CPU twin core/cnn/cnn_conv.c is the specification).
 *
 * Layer: gpu.  Thread mapping:
 *   forward:  grid (pixel tiles, output map, images); one thread per output
 *             neuron, looping over the input maps in the map's connection
 *             list (fwd) and over its kernel.  Images beyond gridDim.z are
 *             taken in a grid-stride loop.
 *   backward: grid (pixel tiles, input map, images); one thread per neuron of
 *             the previous layer, pulling da from the rectangle of outputs
 *             that read it (seed 000 §3.3's inequalities) in every output map
 *             of its backward list (bwd).  No atomics: each dx has one writer.
 *   weights:  grid (map pairs + biases, batch splits); one block per
 *             (output map, input map) kernel and split of the batch; for each
 *             kernel weight the block sums da * x over its images and
 *             positions and reduces in shared memory, writing one partial per
 *             split; a second kernel adds the splits in a fixed order, so the
 *             result is deterministic.  Cut pairs write 0.
 * The launchers run cnn_conv_staged.cu's kernels instead wherever a layer
 * fits them (every layer of the seed's nets); these are the general case. */
#include "cnn_conv.cuh"

#include <errno.h>

#include "cnn_conv_staged.cuh"
#include "cnn_math.cuh"
#include "cuda_check.cuh"

static __global__ void conv_forward_kernel(nc_gpu_cnn_layer L, const float *__restrict__ x,
                                           float *__restrict__ y, uint32_t n)
{
    const uint32_t hw = L.height * L.width;
    const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t m = blockIdx.y;
    if (p >= hw)
        return;
    const uint32_t oy = p / L.width, ox = p % L.width;
    const uint32_t in_hw = L.in_height * L.in_width, kk = L.kernel_x * L.kernel_y;
    const int32_t *list = L.fwd + (size_t)m * (1 + L.in_maps);
    const int32_t cnt = list[0];
    const float bias = L.bias[m];
    for (uint32_t b = blockIdx.z; b < n; b += gridDim.z) {
        const float *xb = x + (size_t)b * L.n_in + (size_t)oy * L.step_y * L.in_width +
                          ox * L.step_x;
        float a = bias;
        for (int32_t t = 0; t < cnt; t++) {
            const uint32_t c = (uint32_t)list[1 + t];
            const float *k = L.weights + ((size_t)m * L.in_maps + c) * kk;
            const float *xc = xb + (size_t)c * in_hw;
            for (uint32_t i = 0; i < L.kernel_y; i++)
                for (uint32_t j = 0; j < L.kernel_x; j++)
                    a += k[i * L.kernel_x + j] * xc[(size_t)i * L.in_width + j];
        }
        y[(size_t)b * L.n_out + (size_t)m * hw + p] = nc_gpu_cnn_act(a, L.act);
    }
}

static __global__ void conv_backward_kernel(nc_gpu_cnn_layer L, const float *__restrict__ da,
                                            float *__restrict__ dx, uint32_t n)
{
    const uint32_t in_hw = L.in_height * L.in_width;
    const uint32_t q = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t c = blockIdx.y;
    if (q >= in_hw)
        return;
    const uint32_t iy = q / L.in_width, ix = q % L.in_width;
    const uint32_t kx = L.kernel_x, ky = L.kernel_y, sx = L.step_x, sy = L.step_y;
    /* outputs (ox, oy) with ox*sx <= ix <= ox*sx + kx - 1, inside the map */
    const uint32_t ox0 = ix + 1 >= kx ? (ix + 1 - kx + sx - 1) / sx : 0;
    const uint32_t oy0 = iy + 1 >= ky ? (iy + 1 - ky + sy - 1) / sy : 0;
    const uint32_t ox1 = min(ix / sx, L.width - 1), oy1 = min(iy / sy, L.height - 1);
    const uint32_t hw = L.height * L.width;
    const int32_t *list = L.bwd + (size_t)c * (1 + L.maps);
    const int32_t cnt = list[0];
    for (uint32_t b = blockIdx.z; b < n; b += gridDim.z) {
        const float *dab = da + (size_t)b * L.n_out;
        float s = 0.0f;
        for (int32_t t = 0; t < cnt; t++) {
            const uint32_t m = (uint32_t)list[1 + t];
            const float *k = L.weights + ((size_t)m * L.in_maps + c) * kx * ky;
            const float *dm = dab + (size_t)m * hw;
            for (uint32_t oy = oy0; oy <= oy1; oy++)
                for (uint32_t ox = ox0; ox <= ox1; ox++)
                    s += k[(iy - oy * sy) * kx + (ix - ox * sx)] * dm[oy * L.width + ox];
        }
        dx[(size_t)b * L.n_in + (size_t)c * in_hw + q] = s;
    }
}

/* Sum over the block; every thread gets the total. */
static __device__ float block_sum(float v, float *red)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    const unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();            /* red is reused by the previous call */
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    float s = 0.0f;
    for (unsigned w = 0; w < (blockDim.x >> 5); w++)
        s += red[w];
    return s;
}

/* blockIdx.x < maps * in_maps: kernel (m, c); else bias m.  blockIdx.y: split
 * of `per` images.  part[split][n_weights + maps]. */
static __global__ void conv_weights_kernel(nc_gpu_cnn_layer L, const float *__restrict__ x,
                                           const float *__restrict__ da, uint32_t n,
                                           uint32_t per, float *__restrict__ part)
{
    __shared__ float red[32];
    const uint32_t hw = L.height * L.width, in_hw = L.in_height * L.in_width;
    const uint32_t kk = L.kernel_x * L.kernel_y;
    const uint32_t b0 = blockIdx.y * per, b1 = min(n, b0 + per);
    const uint32_t terms = (b1 > b0 ? b1 - b0 : 0) * hw;
    float *out = part + (size_t)blockIdx.y * (L.n_weights + L.maps);
    const uint32_t pair = blockIdx.x;
    if (pair >= L.maps * L.in_maps) {           /* bias of map m */
        const uint32_t m = pair - L.maps * L.in_maps;
        float s = 0.0f;
        for (uint32_t t = threadIdx.x; t < terms; t += blockDim.x) {
            const uint32_t b = b0 + t / hw, p = t % hw;
            s += da[(size_t)b * L.n_out + (size_t)m * hw + p];
        }
        s = block_sum(s, red);
        if (threadIdx.x == 0)
            out[L.n_weights + m] = s;
        return;
    }
    const uint32_t m = pair / L.in_maps, c = pair % L.in_maps;
    float *o = out + (size_t)pair * kk;
    /* is c in m's list? (uniform over the block) */
    const int32_t *list = L.fwd + (size_t)m * (1 + L.in_maps);
    bool wired = false;
    for (int32_t t = 0; t < list[0]; t++)
        wired |= (uint32_t)list[1 + t] == c;
    if (!wired) {
        for (uint32_t k = threadIdx.x; k < kk; k += blockDim.x)
            o[k] = 0.0f;
        return;
    }
    for (uint32_t k = 0; k < kk; k++) {
        const uint32_t i = k / L.kernel_x, j = k % L.kernel_x;
        float s = 0.0f;
        for (uint32_t t = threadIdx.x; t < terms; t += blockDim.x) {
            const uint32_t b = b0 + t / hw, p = t % hw;
            const uint32_t oy = p / L.width, ox = p % L.width;
            s += da[(size_t)b * L.n_out + (size_t)m * hw + p] *
                 x[(size_t)b * L.n_in + (size_t)c * in_hw +
                   (size_t)(oy * L.step_y + i) * L.in_width + ox * L.step_x + j];
        }
        s = block_sum(s, red);
        if (threadIdx.x == 0)
            o[k] = s;
    }
}

/* grads[i] = sum over splits of part[split][i], i < n_weights + maps. */
static __global__ void conv_weights_reduce_kernel(nc_gpu_cnn_layer L, const float *__restrict__ part,
                                                  uint32_t splits)
{
    const uint32_t total = L.n_weights + L.maps;
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (uint32_t k = 0; k < splits; k++)
            s += part[(size_t)k * total + i];
        if (i < L.n_weights)
            L.gweights[i] = s;
        else
            L.gbias[i - L.n_weights] = s;
    }
}

/* Images per split: enough terms per block to amortise the reductions. */
static uint32_t weights_per_split(const nc_gpu_cnn_layer *L, uint32_t n)
{
    const uint32_t hw = L->height * L->width;
    uint32_t per = (8192u + hw - 1) / hw;
    if (per < 1)
        per = 1;
    if ((n + per - 1) / per > 64u)
        per = (n + 63u) / 64u;
    return per;
}

extern "C" size_t nc_gpu_cnn_conv_weights_scratch(const nc_gpu_cnn_layer *L, uint32_t n)
{
    const uint32_t per = weights_per_split(L, n);
    uint32_t parts = (n + per - 1) / per;
    if (parts < NC_GPU_CNN_WEIGHT_PARTS)
        parts = NC_GPU_CNN_WEIGHT_PARTS;        /* the staged kernel's */
    return (size_t)parts * (L->n_weights + L->maps);
}

extern "C" int nc_gpu_cnn_conv_forward(const nc_gpu_cnn_layer *L, const float *x, float *y,
                                       uint32_t n, cudaStream_t stream)
{
    const int err = nc_gpu_cnn_conv_forward_staged(L, x, y, n, stream);
    if (err != -E2BIG)
        return err;
    const uint32_t hw = L->height * L->width;
    dim3 grid((hw + NC_GPU_CNN_BLOCK - 1) / NC_GPU_CNN_BLOCK, L->maps, n < 65535u ? n : 65535u);
    conv_forward_kernel<<<grid, NC_GPU_CNN_BLOCK, 0, stream>>>(*L, x, y, n);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_conv_backward(const nc_gpu_cnn_layer *L, const float *da, float *dx,
                                        uint32_t n, cudaStream_t stream)
{
    const int err = nc_gpu_cnn_conv_backward_staged(L, da, dx, n, stream);
    if (err != -E2BIG)
        return err;
    const uint32_t in_hw = L->in_height * L->in_width;
    dim3 grid((in_hw + NC_GPU_CNN_BLOCK - 1) / NC_GPU_CNN_BLOCK, L->in_maps,
              n < 65535u ? n : 65535u);
    conv_backward_kernel<<<grid, NC_GPU_CNN_BLOCK, 0, stream>>>(*L, da, dx, n);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_conv_weights(const nc_gpu_cnn_layer *L, const float *x, const float *da,
                                       uint32_t n, float *part, cudaStream_t stream)
{
    uint32_t splits = 0;
    const int err = nc_gpu_cnn_conv_weights_staged(L, x, da, n, part, &splits, stream);
    if (err && err != -E2BIG)
        return err;
    if (err) {
        const uint32_t per = weights_per_split(L, n);
        splits = (n + per - 1) / per;
        dim3 grid(L->maps * L->in_maps + L->maps, splits);
        conv_weights_kernel<<<grid, NC_GPU_CNN_BLOCK, 0, stream>>>(*L, x, da, n, per, part);
        NC_CUDA_CHECK(cudaGetLastError());
    }
    const uint32_t total = L->n_weights + L->maps;
    conv_weights_reduce_kernel<<<nc_gpu_cnn_blocks(total, NC_GPU_CNN_BLOCK), NC_GPU_CNN_BLOCK, 0,
                                 stream>>>(*L, part, splits);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

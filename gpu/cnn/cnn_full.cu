/* gpu/cnn/cnn_full.cu — fully connected forward, backward and weight gradients.
 *
 * Layer: gpu.  Thread mapping:
 *   forward:  one warp per (image, unit): the lanes stride along the weight
 *             row and the input together (coalesced), then a shuffle sum;
 *   backward: one thread per (image, input k), pulling sum_u w[u][k] da[b][u]
 *             (neighbouring threads read neighbouring weights);
 *   weights:  one thread per weight (u, k) summing over the batch in order,
 *             then one per bias; deterministic, no atomics. */
#include "cnn_full.cuh"

#include "cnn_math.cuh"
#include "cuda_check.cuh"

static __global__ void full_forward_kernel(nc_gpu_cnn_layer L, const float *__restrict__ x,
                                           float *__restrict__ y, uint32_t n)
{
    const unsigned lane = threadIdx.x & 31;
    const size_t warps = (size_t)gridDim.x * (blockDim.x >> 5);
    const size_t total = (size_t)n * L.maps;
    for (size_t o = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) >> 5; o < total; o += warps) {
        const size_t b = o / L.maps;
        const uint32_t u = (uint32_t)(o % L.maps);
        const float *w = L.weights + (size_t)u * L.n_in, *xb = x + b * L.n_in;
        float s = 0.0f;
        for (uint32_t k = lane; k < L.n_in; k += 32)
            s += w[k] * xb[k];
        for (int off = 16; off > 0; off >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, off);
        if (lane == 0)
            y[o] = nc_gpu_cnn_act(s + L.bias[u], L.act);
    }
}

static __global__ void full_backward_kernel(nc_gpu_cnn_layer L, const float *__restrict__ da,
                                            float *__restrict__ dx, uint32_t n)
{
    const size_t total = (size_t)n * L.n_in;
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < total;
         q += (size_t)gridDim.x * blockDim.x) {
        const size_t b = q / L.n_in;
        const uint32_t k = (uint32_t)(q % L.n_in);
        const float *dab = da + b * L.maps;
        float s = 0.0f;
        for (uint32_t u = 0; u < L.maps; u++)
            s += L.weights[(size_t)u * L.n_in + k] * dab[u];
        dx[q] = s;
    }
}

static __global__ void full_weights_kernel(nc_gpu_cnn_layer L, const float *__restrict__ x,
                                           const float *__restrict__ da, uint32_t n)
{
    const size_t total = (size_t)L.n_weights + L.maps;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total;
         i += (size_t)gridDim.x * blockDim.x) {
        float s = 0.0f;
        if (i < L.n_weights) {
            const uint32_t u = (uint32_t)(i / L.n_in), k = (uint32_t)(i % L.n_in);
            for (uint32_t b = 0; b < n; b++)
                s += da[(size_t)b * L.maps + u] * x[(size_t)b * L.n_in + k];
            L.gweights[i] = s;
        } else {
            const uint32_t u = (uint32_t)(i - L.n_weights);
            for (uint32_t b = 0; b < n; b++)
                s += da[(size_t)b * L.maps + u];
            L.gbias[u] = s;
        }
    }
}

extern "C" int nc_gpu_cnn_full_forward(const nc_gpu_cnn_layer *L, const float *x, float *y,
                                       uint32_t n, cudaStream_t stream)
{
    const size_t threads = (size_t)n * L->maps * 32;
    full_forward_kernel<<<nc_gpu_cnn_blocks(threads, NC_GPU_CNN_BLOCK), NC_GPU_CNN_BLOCK, 0,
                          stream>>>(*L, x, y, n);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_full_backward(const nc_gpu_cnn_layer *L, const float *da, float *dx,
                                        uint32_t n, cudaStream_t stream)
{
    const size_t total = (size_t)n * L->n_in;
    full_backward_kernel<<<nc_gpu_cnn_blocks(total, NC_GPU_CNN_BLOCK), NC_GPU_CNN_BLOCK, 0,
                           stream>>>(*L, da, dx, n);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_full_weights(const nc_gpu_cnn_layer *L, const float *x,
                                       const float *da, uint32_t n, cudaStream_t stream)
{
    const size_t total = (size_t)L->n_weights + L->maps;
    full_weights_kernel<<<nc_gpu_cnn_blocks(total, NC_GPU_CNN_BLOCK), NC_GPU_CNN_BLOCK, 0,
                          stream>>>(*L, x, da, n);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

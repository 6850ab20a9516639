/* gpu/cnn/cnn_pool.cu — max-pooling forward and backward (seed 000 §2.3).
 *
 * Layer: gpu.  Thread mapping: forward, one thread per output neuron over the
 * whole batch (grid-stride); backward pulls: one thread per input neuron,
 * which re-finds its region's first maximum and takes the region's delta if
 * it is that maximum, else writes 0.  No atomics, every dx written once. */
#include "cnn_pool.cuh"

#include "cnn_math.cuh"
#include "cuda_check.cuh"

static __global__ void pool_forward_kernel(nc_gpu_cnn_layer L, const float *__restrict__ x,
                                           float *__restrict__ y, size_t total)
{
    const uint32_t hw = L.height * L.width, in_hw = L.in_height * L.in_width;
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < total;
         o += (size_t)gridDim.x * blockDim.x) {
        const size_t bm = o / hw;                   /* image * maps + map */
        const uint32_t p = (uint32_t)(o % hw), oy = p / L.width, ox = p % L.width;
        const float *r = x + bm * in_hw + (size_t)oy * L.kernel_y * L.in_width + ox * L.kernel_x;
        float best = r[0];
        for (uint32_t i = 0; i < L.kernel_y; i++)
            for (uint32_t j = 0; j < L.kernel_x; j++)
                best = fmaxf(best, r[(size_t)i * L.in_width + j]);
        y[o] = best;
    }
}

static __global__ void pool_backward_kernel(nc_gpu_cnn_layer L, const float *__restrict__ x,
                                            const float *__restrict__ dy,
                                            float *__restrict__ dx, size_t total)
{
    const uint32_t hw = L.height * L.width, in_hw = L.in_height * L.in_width;
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < total;
         q += (size_t)gridDim.x * blockDim.x) {
        const size_t bm = q / in_hw;
        const uint32_t p = (uint32_t)(q % in_hw), iy = p / L.in_width, ix = p % L.in_width;
        const uint32_t oy = iy / L.kernel_y, ox = ix / L.kernel_x;
        const float *r = x + bm * in_hw + (size_t)oy * L.kernel_y * L.in_width + ox * L.kernel_x;
        uint32_t arg = 0;       /* first maximum in row order, as core */
        float best = r[0];
        for (uint32_t i = 0; i < L.kernel_y; i++)
            for (uint32_t j = 0; j < L.kernel_x; j++) {
                const float v = r[(size_t)i * L.in_width + j];
                if (v > best) {
                    best = v;
                    arg = i * L.in_width + j;
                }
            }
        const uint32_t self = (iy - oy * L.kernel_y) * L.in_width + (ix - ox * L.kernel_x);
        dx[q] = self == arg ? dy[bm * hw + (size_t)oy * L.width + ox] : 0.0f;
    }
}

extern "C" int nc_gpu_cnn_pool_forward(const nc_gpu_cnn_layer *L, const float *x, float *y,
                                       uint32_t n, cudaStream_t stream)
{
    const size_t total = (size_t)n * L->n_out;
    pool_forward_kernel<<<nc_gpu_cnn_blocks(total, NC_GPU_CNN_BLOCK), NC_GPU_CNN_BLOCK, 0,
                          stream>>>(*L, x, y, total);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_pool_backward(const nc_gpu_cnn_layer *L, const float *x,
                                        const float *dy, float *dx, uint32_t n,
                                        cudaStream_t stream)
{
    const size_t total = (size_t)n * L->n_in;
    pool_backward_kernel<<<nc_gpu_cnn_blocks(total, NC_GPU_CNN_BLOCK), NC_GPU_CNN_BLOCK, 0,
                           stream>>>(*L, x, dy, dx, total);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

/* gpu/neocog/neocog_occ.cu — occupancy map of a position-major layer.
 *
 * Layer: gpu.  Thread mapping: one thread per (character, position); it reads
 * the position's k planes (contiguous) and writes one byte. */
#include "neocog_occ.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

static __global__ void occ_kernel(const float *__restrict__ in, uint32_t k,
                                  uint32_t stride, uint8_t *__restrict__ occ,
                                  size_t n)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float *u = in + i * stride;
    bool any = false;
    for (uint32_t kap = 0; kap < k; kap++)
        any |= u[kap] != 0.0f;
    occ[i] = (uint8_t)any;
}

extern "C" int nc_gpu_neocog_occupancy(const float *in, uint32_t n_pos, uint32_t k,
                                       uint32_t stride, uint8_t *occ, uint32_t batch,
                                       cudaStream_t stream)
{
    if (!in || !occ || n_pos < 1 || k < 1 || k > stride || batch < 1)
        return -EINVAL;
    const size_t n = (size_t)batch * n_pos;
    if ((n + 255) / 256 > 0x7fffffffu)
        return -EINVAL;
    occ_kernel<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(in, k, stride, occ, n);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

/* gpu/device/device.cu — device discovery, the CUDA error record, and a self-test.
 *
 * Layer: gpu.  The self-test kernel: one thread per element, y[i] = 2 x[i] + 1. */
#include "cuda_check.cuh"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static thread_local char last_error[512];

extern "C" const char *nc_gpu_last_error(void) { return last_error; }

int nc_gpu_record_error(cudaError_t e, const char *stmt, const char *func,
                        const char *file, int line)
{
    snprintf(last_error, sizeof last_error, "%s failed in %s (%s:%d): %s",
             stmt, func, file, line, cudaGetErrorString(e));
    switch (e) {
    case cudaErrorMemoryAllocation:   return -ENOMEM;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: return -ENODEV;
    case cudaErrorInvalidValue:       return -EINVAL;
    default:                          return -EIO;   /* sticky or unknown */
    }
}

extern "C" int nc_gpu_device_count(int *ret_count)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
        (void)cudaGetLastError();   /* clear it: no device is not a failure */
        *ret_count = 0;
        return 0;
    }
    NC_CUDA_CHECK(e);
    *ret_count = n;
    return 0;
}

extern "C" int nc_gpu_device_info_get(int index, nc_gpu_device_info *ret_info)
{
    cudaDeviceProp p;
    NC_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
    memset(ret_info, 0, sizeof *ret_info);
    ret_info->index = index;
    snprintf(ret_info->name, sizeof ret_info->name, "%s", p.name);
    ret_info->sm_major = p.major;
    ret_info->sm_minor = p.minor;
    ret_info->multiprocessors = p.multiProcessorCount;
    ret_info->total_memory = p.totalGlobalMem;
    return 0;
}

static __global__ void selftest_kernel(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = 2.0f * x[i] + 1.0f;
}

static int selftest_run(float *dx, float *dy, float *hx, float *hy, int n)
{
    NC_CUDA_CHECK(cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice));
    NC_CUDA_CHECK(cudaMemset(dy, 0xff, n * sizeof(float)));   /* poison: NaN */
    selftest_kernel<<<(n + 127) / 128, 128>>>(dx, dy, n);
    NC_CUDA_CHECK(cudaGetLastError());
    NC_CUDA_CHECK(cudaMemcpy(hy, dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (hy[i] != 2.0f * hx[i] + 1.0f)
            return -EIO;
    return 0;
}

extern "C" int nc_gpu_selftest(int index)
{
    enum { N = 1000 };   /* not a multiple of the block: the tail is checked */
    static float hx[N], hy[N];
    for (int i = 0; i < N; i++)
        hx[i] = (float)i * 0.5f;
    NC_CUDA_CHECK(cudaSetDevice(index));
    float *dx = NULL, *dy = NULL;
    NC_CUDA_CHECK(cudaMalloc(&dx, N * sizeof(float)));
    int err = nc_gpu_record_error(cudaMalloc(&dy, N * sizeof(float)),
                                  "cudaMalloc(&dy)", __func__, __FILE__, __LINE__);
    if (dy)
        err = selftest_run(dx, dy, hx, hy, N);
    cudaFree(dx);
    cudaFree(dy);
    return err;
}

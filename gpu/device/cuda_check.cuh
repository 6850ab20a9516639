/* gpu/device/cuda_check.cuh — the one CUDA check macro of the project.
 *
 * Layer: gpu.  NC_CUDA_CHECK(stmt) evaluates a CUDA runtime call; on failure
 * it records the statement, function, file and line in the thread's last-error
 * slot (nc_gpu_last_error) and makes the enclosing function return the mapped
 * code.  Use it after every launch (on cudaGetLastError()) and at every sync.
 * A sticky error (the context is unusable) is mapped to -EIO so callers fall
 * back to the CPU path; out of memory is -ENOMEM; no device is -ENODEV. */
#ifndef NC_CUDA_CHECK_CUH
#define NC_CUDA_CHECK_CUH

#include <cuda_runtime.h>

#include "device.h"

/* Map a CUDA error to a negative errno and record where it happened. */
int nc_gpu_record_error(cudaError_t e, const char *stmt, const char *func,
                        const char *file, int line);

#define NC_CUDA_CHECK(stmt) do {                                              \
    cudaError_t nc_e_ = (stmt);                                               \
    if (nc_e_ != cudaSuccess)                                                 \
        return nc_gpu_record_error(nc_e_, #stmt, __func__, __FILE__, __LINE__); \
} while (0)

#endif

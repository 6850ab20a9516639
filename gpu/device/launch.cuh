/* gpu/device/launch.cuh — programmatic dependent launch (Hopper), for kernels that
 * follow one another on a stream: the neocognitron's layers and the CNN's
 * fused deep column.
 *
 * Layer: gpu.  CUDA code only.
 *
 * At small batches a layer's kernel is a few microseconds, about what the
 * launch and the ramp-up of the next one cost.  A kernel launched by
 * nc_dev_launch at a batch up to NC_DEV_PDL_MAX_BATCH may start while the
 * previous kernel on its stream is still running: its blocks do what needs
 * no earlier output (tables or weights into shared memory, indices), then
 * nc_dev_pdl_wait() holds them until the previous grid has completed and its
 * writes are visible.  Every kernel launched so calls nc_dev_pdl_wait()
 * before it touches global memory that an earlier kernel on the stream
 * writes (what none writes, like a net's weights, it may read before), and
 * nc_dev_pdl_trigger() early, which lets the next such kernel launch once
 * every block of this one has issued it (the blocks of this grid are then
 * all resident, so the waiting ones cannot starve them).  Both are no-ops
 * below sm_90 and when the launch did not ask for it. */
#ifndef NC_GPU_LAUNCH_CUH
#define NC_GPU_LAUNCH_CUH

#include <cuda_runtime.h>
#include <stdint.h>

static __device__ __forceinline__ void nc_dev_pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

static __device__ __forceinline__ void nc_dev_pdl_trigger(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* Batches up to this launch their kernels with programmatic dependence (at
 * larger ones the next layer's waiting blocks would only take SM room). */
#define NC_DEV_PDL_MAX_BATCH 64u

/* 1 when the current device can overlap launches (compute capability 9+). */
static inline int nc_dev_pdl_ok(void)
{
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess)
        return 0;
    return major >= 9;
}

/* kernel<<<grid, block, smem, stream>>>(args...), with programmatic stream
 * serialisation when batch <= NC_DEV_PDL_MAX_BATCH on a device that has it
 * (the kernel must then follow the rules above).  Returns the launch's
 * error. */
template <typename... KArgs, typename... Args>
static inline cudaError_t nc_dev_launch(void (*kernel)(KArgs...), dim3 grid, dim3 block,
                                        size_t smem, cudaStream_t stream, uint32_t batch,
                                        Args... args)
{
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = batch <= NC_DEV_PDL_MAX_BATCH && nc_dev_pdl_ok() ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...);
}

#endif

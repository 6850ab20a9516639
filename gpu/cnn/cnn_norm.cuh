/* gpu/cnn/cnn_norm.cuh — batch normalisation of a layer's sums on the GPU
 * (twin of core's nc_cnn_norm_forward / nc_cnn_norm_backward, cnn_norm.c).
 *
 * Layer: gpu, C linkage.  Device pointers, image-major ([n][maps][h][w]);
 * enqueue on `stream`; 0 or a negative errno.  L is a normalised layer as
 * the engine describes it: L->act NONE (its convolution or fully connected
 * kernel leaves the sums), L->norm_act the activation applied here. */
#ifndef NC_GPU_CNN_NORM_CUH
#define NC_GPU_CNN_NORM_CUH

#include <cuda_runtime_api.h>

#include "cnn_layer.h"

/* The floats a layer of `maps` maps needs at stat: the batch's mean[maps]
 * and var[maps], then the kernels' doubles (three a map) that pass from a
 * map's sums to the kernel that rewrites its values. */
#define NC_GPU_CNN_NORM_STAT_FLOATS(maps) (8u * (size_t)(maps))

#ifdef __CUDACC__
/* The doubles of stat, their offset written in this one place: they start
 * 2 * maps floats in, after mean[maps] and var[maps].  8-byte aligned, as
 * stat is cudaMalloc'd and 2 * maps floats are 8 * maps bytes.  Overloaded
 * (const for the kernels that only read them), so outside the C linkage
 * below; device code, so only CUDA compilation sees it. */
static __device__ __forceinline__ double *nc_gpu_cnn_norm_stat_doubles(float *stat,
                                                                       uint32_t maps)
{
    return (double *)(stat + 2 * (size_t)maps);
}

static __device__ __forceinline__ const double *nc_gpu_cnn_norm_stat_doubles(const float *stat,
                                                                             uint32_t maps)
{
    return (const double *)(stat + 2 * (size_t)maps);
}
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* a: the sums of n images in, y = f(gamma a^ + beta) out (in place);
 * xhat: a^, same layout; stat: NC_GPU_CNN_NORM_STAT_FLOATS(maps) floats,
 * the batch's mean[maps], then var[maps] out. */
int nc_gpu_cnn_norm_forward(const nc_gpu_cnn_layer *L, float *a, uint32_t n, float *xhat,
                            float *stat, cudaStream_t stream);

/* d: dE/dy of the forward's outputs y in, dE/da of its sums out (through f
 * and the standardisation); L->gnorm: dE/dgamma, dE/dbeta, and 0 for mean
 * and var ([maps] each), written; stat: the forward's, its mean and var
 * left as they are (the doubles after them are overwritten). */
int nc_gpu_cnn_norm_backward(const nc_gpu_cnn_layer *L, const float *y, float *d, uint32_t n,
                             const float *xhat, float *stat, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

/* gpu/cnn/cnn_blas.cuh — the unrolled convolution (seed 001 on the GPU):
 * unroll the input patches, one cuBLAS product per chunk of images, then bias
 * and activation; the two backward products of training the same way; and
 * the same cuBLAS route for fully connected layers.
 *
 * Layer: gpu, C linkage.  Device pointers; enqueue on `stream` (the cuBLAS
 * handle must be bound to it); 0 or a negative errno.  fp32 products only
 * (CUBLAS_DEFAULT_MATH, no TF32). */
#ifndef NC_GPU_CNN_UNROLL_CUH
#define NC_GPU_CNN_UNROLL_CUH

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stddef.h>

#include "cnn_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Images whose unrolled input and product fit in `cap` floats of scratch. */
uint32_t nc_gpu_cnn_unroll_chunk(const nc_gpu_cnn_layer *L, size_t cap);

/* Same result as nc_gpu_cnn_conv_forward.  scratch: cap floats, room for at
 * least one image (nc_gpu_cnn_unroll_chunk >= 1). */
int nc_gpu_cnn_conv_forward_unrolled(const nc_gpu_cnn_layer *L, const float *x, float *y,
                                     uint32_t n, float *scratch, size_t cap,
                                     cublasHandle_t blas, cudaStream_t stream);

/* Training, as core's BLAS path: the same results as nc_gpu_cnn_conv_weights
 * (dW = D U^T and the biases' row sums of D, summed over chunks in order,
 * cut kernels' gradients 0) and nc_gpu_cnn_conv_backward (dU = W^T D, then
 * each input pixel gathers its entries), to float rounding.  da is dE/da of
 * L's outputs; scratch as for the forward. */
int nc_gpu_cnn_conv_weights_unrolled(const nc_gpu_cnn_layer *L, const float *x, const float *da,
                                     uint32_t n, float *scratch, size_t cap,
                                     cublasHandle_t blas, cudaStream_t stream);
int nc_gpu_cnn_conv_backward_unrolled(const nc_gpu_cnn_layer *L, const float *da, float *dx,
                                      uint32_t n, float *scratch, size_t cap,
                                      cublasHandle_t blas, cudaStream_t stream);

/* A convolution's kernels that its connection table cuts set to 0 in w,
 * laid out like L->weights (its gradients, or an optimiser's state of
 * them). */
int nc_gpu_cnn_mask_cut(const nc_gpu_cnn_layer *L, float *w, cudaStream_t stream);

/* Same result as nc_gpu_cnn_full_forward, as one sgemm and a bias pass. */
int nc_gpu_cnn_full_forward_blas(const nc_gpu_cnn_layer *L, const float *x, float *y,
                                 uint32_t n, cublasHandle_t blas, cudaStream_t stream);

/* The status of a cuBLAS call as a negative errno (recorded like a CUDA one). */
int nc_gpu_cnn_blas_error(cublasStatus_t s, const char *stmt, const char *func,
                          const char *file, int line);

#ifdef __cplusplus
}
#endif

#define NC_CUBLAS_CHECK(stmt) do {                                            \
    cublasStatus_t nc_s_ = (stmt);                                            \
    if (nc_s_ != CUBLAS_STATUS_SUCCESS)                                       \
        return nc_gpu_cnn_blas_error(nc_s_, #stmt, __func__, __FILE__, __LINE__); \
} while (0)

#endif

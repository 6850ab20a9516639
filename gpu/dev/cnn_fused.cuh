/* gpu/dev/cnn_fused.cuh — the fused forward of the MNIST column
 * 1x29x29-20C4-MP2-40C5-MP3-<U1>N-<U2>N: activations stay on chip.  No
 * shipped model has this column: it is built only for benchmarks and tests,
 * which hand it to the engine through gpu/cnn/cnn_fused_ops.h.
 *
 * Layer: gpu, C linkage.  Forward only (training uses the layer-wise
 * kernels, which keep every activation for the backward pass).  Any
 * connection tables work (cut kernels are zero in the params block); skipping
 * factors must be 0.  Device pointers; enqueue on `stream`. */
#ifndef NC_GPU_CNN_FUSED_CUH
#define NC_GPU_CNN_FUSED_CUH

#include <cuda_runtime_api.h>

#include "cnn_fused_ops.h"   /* nc_gpu_cnn_fused_variant */
#include "cnn_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if layers[0..n_layers) (layers[0] the input) is the column above with
 * U1 <= 256 and U2 <= 1024, else 0. */
int nc_gpu_cnn_fused_match(const nc_gpu_cnn_layer *layers, uint32_t n_layers);

/* Raise the kernels' shared-memory limits (once per device, before use). */
int nc_gpu_cnn_fused_init(void);

/* out[n][U2] = the column on x[n][29*29]; features: n * 360 floats, laid
 * out as pool2's activations [n][40][3][3].  out NULL: the features only (a
 * caller then runs the fully connected layers its own way: the top kernel
 * computes 32 images per block, which wastes a multiprocessor's time on a
 * batch of one).
 * sm_count: the device's multiprocessors (sizes the persistent grid). */
int nc_gpu_cnn_fused_forward(const nc_gpu_cnn_layer *layers, const float *x, float *features,
                             float *out, uint32_t n, nc_gpu_cnn_fused_variant variant,
                             int sm_count, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

/* gpu/cnn/cnn_fused_deep.cuh — the fused forward of the deep MNIST column
 * 1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-<U1>N-<U2>N (models/cnn-single.ncm and
 * the committees' columns): three launches instead of one a layer, the
 * activations in shared memory between the layers of each launch.
 *
 * Layer: gpu, C linkage.  Forward only (training uses the layer-wise
 * kernels).  Any connection tables work (cut kernels are zero in the params
 * block); skipping factors must be 0.  Device pointers; enqueue on
 * `stream`. */
#ifndef NC_GPU_CNN_FUSED_DEEP_CUH
#define NC_GPU_CNN_FUSED_DEEP_CUH

#include <cuda_runtime_api.h>

#include "cnn_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Floats of pool2's activations per image ([60][5][5]): the features the
 * first launch hands to the second. */
#define NC_GPU_CNN_DEEP_FEATURES 1500u

/* 1 if layers[0..n_layers) (layers[0] the input) is the column above with
 * U1 <= 1024 and U2 <= 1024, else 0. */
int nc_gpu_cnn_fused_deep_match(const nc_gpu_cnn_layer *layers, uint32_t n_layers);

/* out[n][U2] = the column on x[n][29*29].  features (n * 1500 floats) and
 * pooled (n * 100) receive pool2's and pool3's activations in the
 * layer-wise layout ([n][60][5][5], [n][100]): the engine passes its own
 * activation buffers of those layers. */
int nc_gpu_cnn_fused_deep_forward(const nc_gpu_cnn_layer *layers, const float *x,
                                  float *features, float *pooled, float *out, uint32_t n,
                                  cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

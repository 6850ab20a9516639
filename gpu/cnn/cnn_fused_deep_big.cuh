/* gpu/cnn/cnn_fused_deep_big.cuh — the deep column's features at large
 * batches: conv1, pool1, conv2 and pool2 of 1x29x29-20C4-MP2-60C4-MP2-...
 * (the shipped digit columns) in one persistent kernel, conv2's weights
 * resident in shared memory; the layers after pool2 run layer-wise.
 *
 * Layer: gpu, C linkage.  Forward only.  Any connection tables work (cut
 * kernels are zero in the params block).  Device pointers; enqueue on
 * `stream`. */
#ifndef NC_GPU_CNN_FUSED_DEEP_BIG_CUH
#define NC_GPU_CNN_FUSED_DEEP_BIG_CUH

#include <cuda_runtime_api.h>

#include "cnn_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 if layers[0..n_layers) (layers[0] the input) starts with the deep
 * column's first four layers (1x29x29, 20C4, MP2, 60C4, MP2; tanh, not
 * normalised) and has at least one layer after them, else 0. */
int nc_gpu_cnn_deep_big_match(const nc_gpu_cnn_layer *layers, uint32_t n_layers);

/* Raise the kernel's shared-memory limit on the current device: 0, or
 * -ENOTSUP where the device has too little shared memory a block. */
int nc_gpu_cnn_deep_big_init(void);

/* features[n][60][5][5] (pool2's activations, the layer-wise layout) of
 * x[n][29*29], in at most sm_count persistent blocks. */
int nc_gpu_cnn_deep_big_features(const nc_gpu_cnn_layer *layers, const float *x,
                                 float *features, uint32_t n, int sm_count,
                                 cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

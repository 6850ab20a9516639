/* gpu/cnn/cnn_fused_ops.h — how the CNN engine reaches the fused forward of
 * seed 000's shallow column (1x29x29-20C4-MP2-40C5-MP3-<U1>N-<U2>N), which
 * lives in gpu/dev/cnn_fused.cu, outside the serving library: no shipped
 * model has that column, so the engine's measured choice never picks it for
 * them (the deep column's fused kernel, gpu/cnn/cnn_fused_deep.cu, stays).
 * A benchmark or test that links gpu/dev/ installs the kernels here before
 * making engines (nc_gpu_dev_install, gpu/dev/gpu_dev.h); engines made
 * after that time and run them as they did when they were built in, and
 * engines of the daemon, which never installs them, run that column layer
 * by layer.
 *
 * Layer: gpu, C linkage. */
#ifndef NC_GPU_CNN_FUSED_OPS_H
#define NC_GPU_CNN_FUSED_OPS_H

#include <cuda_runtime_api.h>

#include "cnn_layer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nc_gpu_cnn_fused_variant {
    NC_GPU_CNN_FUSED_SMALL = 0,     /* a block per (image, pair of conv2 maps) */
    NC_GPU_CNN_FUSED_BIG = 1,       /* persistent blocks, 8 images at a time */
} nc_gpu_cnn_fused_variant;

/* gpu/dev/cnn_fused.cuh's nc_gpu_cnn_fused_match, _init and _forward. */
typedef struct nc_gpu_cnn_fused_ops {
    int (*match)(const nc_gpu_cnn_layer *layers, uint32_t n_layers);
    int (*init)(void);
    int (*forward)(const nc_gpu_cnn_layer *layers, const float *x, float *features,
                   float *out, uint32_t n, nc_gpu_cnn_fused_variant variant, int sm_count,
                   cudaStream_t stream);
} nc_gpu_cnn_fused_ops;

/* Engines made from now on take the shallow column's fused paths from ops
 * (NULL: none, the default).  Call it before any engine is made, from one
 * thread: engines read it without a lock. */
void nc_gpu_cnn_set_fused_ops(const nc_gpu_cnn_fused_ops *ops);

#ifdef __cplusplus
}
#endif

#endif

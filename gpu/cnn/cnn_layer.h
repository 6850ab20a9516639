/* gpu/cnn/cnn_layer.h — one CNN layer as the gpu/ kernels see it.
 *
 * Layer: gpu, C linkage (plain C struct).  Built by cnn_engine.cu from core's
 * nc_cnn_layer: the same shapes, with pointers into the engine's device
 * blocks (params, grads and connection lists) instead of host memory.  Passed
 * to kernels by value.  Activations are image-major as in core's reference
 * path: layer l of image b is [maps][height][width] at b * n_out. */
#ifndef NC_GPU_CNN_LAYER_H
#define NC_GPU_CNN_LAYER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nc_gpu_cnn_layer {
    uint32_t kind;                      /* nc_cnn_kind */
    uint32_t act;                       /* CONV/FULL: nc_cnn_act of the kernels'
                                           outputs: NONE for a normalised layer */
    uint32_t norm;                      /* 1: batch norm (core's "bn") */
    uint32_t norm_act;                  /* norm: the layer's own activation,
                                           applied after normalising */
    uint32_t maps, height, width;       /* output shape; FULL: n x 1 x 1 */
    uint32_t in_maps, in_height, in_width;  /* the previous layer's shape */
    uint32_t kernel_x, kernel_y;        /* CONV kernel, POOL region */
    uint32_t step_x, step_y;            /* CONV: skipping factor + 1 */
    uint32_t n_in, n_out, fan_in;       /* as in nc_cnn_layer */
    uint32_t n_weights;                 /* CONV/FULL weights (biases follow) */
    const float *weights;               /* device, into the params block */
    const float *bias;                  /* device, [maps] */
    float *gweights;                    /* device, into the grads block */
    float *gbias;                       /* device, [maps] */
    const float *gamma, *beta;          /* norm: device, [maps] each, else NULL */
    float *gnorm;                       /* norm: grads of gamma, beta, mean, var */
    /* CONV connection lists (seed 000 §3.1), device:
     *   fwd [maps][1 + in_maps]: count, then the input maps wired to the map;
     *   bwd [in_maps][1 + maps]: count, then the output maps each feeds. */
    const int32_t *fwd;
    const int32_t *bwd;
} nc_gpu_cnn_layer;

/* Threads per block of the layer-wise kernels. */
#define NC_GPU_CNN_BLOCK 256u

#ifdef __cplusplus
}
#endif

#endif

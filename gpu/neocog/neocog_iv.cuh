/* gpu/neocog/neocog_iv.cuh — the interpolating-vector classifier on the GPU (twin of
 * core's nc_neocog_iv_new / nc_neocog_iv_classify).
 *
 * Layer: gpu, C linkage.  The scores are core's bit for bit on the same
 * activations: every double of core's arithmetic is computed in the same
 * order with explicitly rounded operations (no contraction into FMAs), and
 * the per-class top lists are filled in core's plane order. */
#ifndef NC_GPU_NEOCOG_IV_CUH
#define NC_GPU_NEOCOG_IV_CUH

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "neocog.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nc_gpu_neocog_iv nc_gpu_neocog_iv;

/* Copy iv's tables (made by nc_neocog_iv_new for net) and the last stage's
 * V-cell data of net to the current device.  -E2BIG when a character's
 * scratch in shared memory (input positions + output positions x (classes
 * + 1) doubles) passes 48 KB (the shipped net: 3.5 KB). */
int nc_gpu_neocog_iv_new(const nc_neocog *net, const nc_neocog_iv *iv,
                         nc_gpu_neocog_iv **ret);
void nc_gpu_neocog_iv_free(nc_gpu_neocog_iv *d);        /* NULL is fine */

/* For each of batch characters: in = the last stage's input (the C-layer
 * below it, device [batch][n_in^2][kstride(K_in)]), us = the last S-layer
 * (device [batch][n_out^2][kstride(K)]); per-class scores to scores
 * ([batch][n_classes]) and the answer to labels ([batch]; -1 when nothing
 * fired), as nc_neocog_iv_classify gives them. */
int nc_gpu_neocog_iv_classify(const nc_gpu_neocog_iv *d, const float *in, const float *us,
                              float *scores, int32_t *labels, uint32_t batch,
                              cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

/* gpu/neocog/neocog_class.cuh — UC4, the recognition layer, on the GPU (twin of the
 * last C-layer of nc_neocog_run_layer: max response per class, answer).
 *
 * Layer: gpu, C linkage. */
#ifndef NC_GPU_NEOCOG_CLASS_CUH
#define NC_GPU_NEOCOG_CLASS_CUH

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* For each character: score[c] = the largest response of any plane labelled
 * c (labels: device [k]) at any of n_pos positions (0 when none fired);
 * label = the class with the largest score, the lowest one on ties, -1 when
 * every score is 0.  in: device [batch][n_pos][ks(k)]; scores:
 * [batch][n_classes]; labels: [batch]. */
int nc_gpu_neocog_class_forward(const float *in, uint32_t n_pos, uint32_t k,
                                const uint32_t *labels_of_plane, uint32_t n_classes,
                                float *scores, int32_t *labels, uint32_t batch,
                                cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

/* gpu/data/deform.cuh — core/data/deform's random affine + elastic deformations on the
 * GPU, for training (the twin of nc_deform_apply).
 *
 * Layer: gpu, C linkage.  0 or a negative errno; device pointers; launches
 * on the caller's stream.
 *
 * Image i of a batch is source image index[i] of d_src, deformed with the
 * draws nc_deform_apply makes from an nc_deform_rng whose state is state[i]:
 * splitmix64 is a counter generator (draw j of a stream that starts at s is
 * mix(s + (j + 1) * gamma)), so every thread finds its own draws without
 * walking the stream, and the GPU produces the same deformation as the CPU,
 * to float rounding (affine part by cosf / sinf, sums contracted to FMA).
 * One block per image: the source image, the grown noise grid, the
 * horizontally smoothed rows and both displacement fields live in shared
 * memory (34 KB for a 29x29 image). */
#ifndef NC_GPU_DEFORM_CUH
#define NC_GPU_DEFORM_CUH

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "deform.h"

typedef struct nc_gpu_deform nc_gpu_deform;

/* For width x height images on the current device.  -EINVAL / -ERANGE as
 * nc_deform_new; -ERANGE too when the image's working set does not fit in a
 * block's 48 KB of shared memory (sides up to about 40 with sigma 6). */
int nc_gpu_deform_new(const nc_deform_params *p, uint32_t width, uint32_t height,
                      nc_gpu_deform **ret_d);
void nc_gpu_deform_free(nc_gpu_deform *d);

/* d_out[n][width * height] = d_src[d_index[i]] deformed from rng state
 * d_state[i], for i < n (n >= 1). */
int nc_gpu_deform_apply(const nc_gpu_deform *d, const float *d_src, const uint32_t *d_index,
                        const uint64_t *d_state, uint32_t n, float *d_out, cudaStream_t stream);

/* Host buffers in and out (device memory allocated for the call), on device
 * `device`: for the parity tests. */
int nc_gpu_deform_run(const nc_deform_params *p, uint32_t width, uint32_t height, int device,
                      const float *src, uint32_t n_src, const uint32_t *index,
                      const uint64_t *state, uint32_t n, float *out);

#ifdef __cplusplus
}
#endif

#endif

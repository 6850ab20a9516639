/* gpu/neocog_s.cuh — the S-layer on the GPU (twin of nc_neocog_s_forward).
 *
 * Layer: gpu, C linkage. */
#ifndef NC_GPU_NEOCOG_S_CUH
#define NC_GPU_NEOCOG_S_CUH

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "neocog_geom.h"

#ifdef __cplusplus
extern "C" {
#endif

/* S-layer of seed equations 1-3 for `batch` characters in one launch.
 * in: device [batch][n_in^2][in_stride]; occ_in: its occupancy map
 * [batch][n_in^2] (read by the sparse variant only; NULL: every position is
 * scanned); out: [batch][n_out^2][ks(k_out)], every cell written, pad lanes
 * 0; occ_out: [batch][n_out^2] or NULL.  per_block: positions per block for
 * T1-T4, T1-T5 and sparse (0: a default).  Returns 0 or a negative errno;
 * the launch is checked, not waited for. */
int nc_gpu_neocog_s_forward(const nc_gpu_neocog_s_args *s, const float *in,
                            const uint8_t *occ_in, float *out, uint8_t *occ_out,
                            uint32_t batch, int variant, uint32_t per_block,
                            cudaStream_t stream);

/* 0 when nc_gpu_neocog_s_forward would launch variant on s for batch
 * characters (the device's limits: threads per block, shared memory, grid);
 * -E2BIG when this plane count, window or block is too large for that
 * variant's kernel, -EINVAL for arguments no variant takes, -EIO on a CUDA
 * failure.  Queues nothing.  The GEMM path (neocog_gemm.cuh) takes any plane
 * count up to NC_NEOCOG_MAX_PLANES. */
int nc_gpu_neocog_s_check(const nc_gpu_neocog_s_args *s, uint32_t batch, int variant,
                          uint32_t per_block);

/* Default positions per block of variant for an S-layer with k_out planes. */
uint32_t nc_gpu_neocog_s_default_block(int variant, uint32_t k_out);

#ifdef __cplusplus
}
#endif

#endif

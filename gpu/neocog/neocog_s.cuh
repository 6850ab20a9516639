/* gpu/neocog/neocog_s.cuh — the S-layer on the GPU (twin of nc_neocog_s_forward).
 *
 * Layer: gpu, C linkage. */
#ifndef NC_GPU_NEOCOG_S_CUH
#define NC_GPU_NEOCOG_S_CUH

#include <cuda_runtime_api.h>
#include <stddef.h>
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
 * failure.  Queues nothing.  The GEMM path (neocog_s_gemm.cuh) takes any
 * plane count up to NC_NEOCOG_MAX_PLANES. */
int nc_gpu_neocog_s_check(const nc_gpu_neocog_s_args *s, uint32_t batch, int variant,
                          uint32_t per_block);

/* Default positions per block of variant for an S-layer with k_out planes. */
uint32_t nc_gpu_neocog_s_default_block(int variant, uint32_t k_out);

/* ---- the sparse variant with a split reduction (small batches) ----------
 *
 * At batch 1 the sparse kernel has few blocks, each running a long chain:
 * US4 of the seed's net is 10 blocks, each scanning up to 69 taps x 78
 * planes per position.  Split in `splits` runs, block z of a position's
 * group scans the z-th of `splits` equal runs of the position's occupied
 * (tap, plane) cells and leaves its partial numerators and v^2 in scratch;
 * the last block of the group to finish adds the partials in the order
 * z = 0, 1, .. and writes the cells and the occupancy, so the result does
 * not depend on which block finishes last (the sum differs from the
 * unsplit kernel's only by rounding). */
#define NC_GPU_NEOCOG_S_MAX_SPLITS 32

/* The scratch nc_gpu_neocog_s_forward_split needs for batch characters,
 * whatever per_block: group counters (unsigned), and floats of partial
 * sums for `splits` (2..NC_GPU_NEOCOG_S_MAX_SPLITS) runs; 0 for bad
 * arguments.  Enough for any smaller batch or split too. */
size_t nc_gpu_neocog_s_split_counters(const nc_gpu_neocog_s_args *s, uint32_t batch);
size_t nc_gpu_neocog_s_split_floats(const nc_gpu_neocog_s_args *s, uint32_t batch,
                                    uint32_t splits);

/* As nc_gpu_neocog_s_forward with the sparse variant, the reduction split
 * in `splits` runs (1: the plain kernel, scratch unused).  count: n_count
 * device counters, zeroed before their first use; every launch leaves the
 * ones it used at zero again.  part: n_part device floats, any contents.
 * So launches queued one after another, of any layer, may share both;
 * launches that may run at the same time may not.  -EINVAL when either is
 * missing or too small. */
int nc_gpu_neocog_s_forward_split(const nc_gpu_neocog_s_args *s, const float *in,
                                  const uint8_t *occ_in, float *out, uint8_t *occ_out,
                                  uint32_t batch, uint32_t per_block, uint32_t splits,
                                  unsigned *count, size_t n_count, float *part,
                                  size_t n_part, cudaStream_t stream);

/* Splits for batch 1 that give about two blocks per SM (n_sm SMs) at
 * per_block positions per block (0: the default), with no run shorter than
 * 256 cells; 1 when splitting would not help. */
uint32_t nc_gpu_neocog_s_default_splits(const nc_gpu_neocog_s_args *s, uint32_t per_block,
                                        uint32_t n_sm);

#ifdef __cplusplus
}
#endif

#endif

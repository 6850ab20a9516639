/* gpu/neocog/neocog_s_gemm.cuh — the S-layer as a row-compacted implicit
 * GEMM, the throughput path for large batches (variant NC_GPU_NEOCOG_GEMM).
 *
 * Layer: gpu, C linkage.  Each S-layer numerator is a matrix product: for
 * every (character, output position) row, the live-tap patch of its input
 * (n_live taps x KP planes, tap-major) times a weight matrix
 * [n_live * KP][ks] (core's a[kappa][t][k] permuted once to [t][kappa][k],
 * KP = K_in rounded up to 4, zero rows for the pad planes).  A position whose
 * whole window is empty gives u_S = 0 exactly (e = 0, v = 0), so only the
 * rows with an occupied input in their window are listed (a stable,
 * deterministic compaction) and multiplied; the others are written as 0.
 * The patch is never materialised: the kernel gathers it from the
 * position-major input while staging each K-chunk in shared memory, and a
 * K-chunk that is zero for every row of a tile is skipped (exact: it would
 * add 0).  fp32 FFMA throughout (no TF32). */
#ifndef NC_GPU_NEOCOG_GEMM_CUH
#define NC_GPU_NEOCOG_GEMM_CUH

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "neocog_geom.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One S-layer's GEMM plan: permuted weights and scratch for up to
 * max_batch characters. */
typedef struct nc_gpu_neocog_gemm nc_gpu_neocog_gemm;

/* s->a, s->b are device weights in core's layout (read once here, and b at
 * every forward); s is copied.  The permutation runs on `stream` and is
 * waited for.  0, -EINVAL, -ENOMEM or -EIO. */
int nc_gpu_neocog_gemm_new(const nc_gpu_neocog_s_args *s, uint32_t max_batch,
                           cudaStream_t stream, nc_gpu_neocog_gemm **ret);
void nc_gpu_neocog_gemm_free(nc_gpu_neocog_gemm *g);     /* NULL is fine */

/* As nc_gpu_neocog_s_forward, batch <= max_batch: in [batch][n_in^2]
 * [in_stride], occ_in its occupancy map (NULL: every row is computed), out
 * [batch][n_out^2][ks] every cell written, occ_out (may be NULL).
 * Queued on stream (no host sync; graph-capturable). */
int nc_gpu_neocog_gemm_forward(nc_gpu_neocog_gemm *g, const float *in,
                               const uint8_t *occ_in, float *out, uint8_t *occ_out,
                               uint32_t batch, cudaStream_t stream);
/* The same; fill 0 (occ_out required) leaves unwritten the cells of the
 * positions whose window holds no occupied input (all 0, occupancy byte
 * 0) instead of writing their zeros: for a caller that reads the output
 * only where it is occupied (every C kernel does). */
int nc_gpu_neocog_gemm_forward_fill(nc_gpu_neocog_gemm *g, const float *in,
                                    const uint8_t *occ_in, float *out, uint8_t *occ_out,
                                    uint32_t batch, uint32_t fill, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

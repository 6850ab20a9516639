/* gpu/neocog/neocog_gs1.cuh — UG and US1 in one launch, where the engine runs the
 * sparse variant (small batches; twin of nc_neocog_g_forward followed by
 * nc_neocog_s_forward on stage 0).
 *
 * Layer: gpu, C linkage.
 *
 * Why: at batch 1 UG and US1 are two kernels of a few microseconds each,
 * mostly latency (a launch, a chain of loads, a kernel boundary), for about
 * 5 M multiply-adds in all.  One block here takes a tile of 4 x 8 US1
 * positions of one character: it stages the image under the tile's UG
 * region in shared memory, computes that region's UG cells there (the
 * halo of 5 cells around the tile is computed by the neighbouring blocks
 * too: about 3.7 UG cells a position, against the 32 a cell that a UG
 * computed per tap of US1 cost when it was tried, docs/lessons.md),
 * then US1 from shared memory, two positions and one plane a
 * thread, skipping windows with no input.  Each block also writes the UG
 * cells it owns (rows and columns of its own tile, the last tiles taking
 * the plane's edge), so both layers' outputs and occupancy maps are those
 * the two kernels write.  On an H200 the whole net at batch 1 took 37.4 us
 * with it against 41.1 us without. */
#ifndef NC_GPU_NEOCOG_GS1_CUH
#define NC_GPU_NEOCOG_GS1_CUH

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "neocog_geom.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 0 when the kernel takes this UG and US1: both with step 1, UG's output
 * US1's input (stride 8, two planes), a 7 x 7 UG window, a 6 x 6 US1
 * window with pad < 6, 9 to 16 US1 planes; -EINVAL otherwise (the caller
 * runs the two kernels). */
int nc_gpu_neocog_gs1_check(const nc_gpu_neocog_g_args *g, const nc_gpu_neocog_s_args *s);

/* UG on batch images in [batch][n_in^2] into ug [batch][n_ug^2][8] and
 * ug_occ, then US1 into out [batch][n_out^2][16] and occ_out, as
 * nc_gpu_neocog_g_forward and nc_gpu_neocog_s_forward give them (ug,
 * ug_occ and occ_out may be NULL).  Programmatic launch as
 * gpu/neocog/neocog_dev.cuh describes.  0, or -EINVAL (check above, batch 1 ..
 * 65535); the launch is checked, not waited for. */
int nc_gpu_neocog_gs1_forward(const nc_gpu_neocog_g_args *g, const nc_gpu_neocog_s_args *s,
                              const float *in, float *ug, uint8_t *ug_occ, float *out,
                              uint8_t *occ_out, uint32_t batch, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

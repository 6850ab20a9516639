/* gpu/neocog/neocog_geom.h — one neocognitron correlation (UG, S- or C-layer) as the
 * GPU kernels see it, and the S-layer variants of seed 004.
 *
 * Layer: gpu, plain C (included by C tests and tools and by the .cu files).
 * A geometry is core's nc_neocog_index reduced to what fits in a kernel's
 * parameter space: the kernels take it by value as a __grid_constant__
 * parameter, which the hardware keeps in a constant bank and reads with LDC
 * (seed technique T5: "inverse-index tables in constant memory").  Each
 * launch carries its own tables, so several nets can live in one process
 * with no global __constant__ slot to hand out.  Fixed tap weights (V-cell
 * c, C-cell d, UG g) travel in the same block.
 *
 * Layouts are core's (neocog.h): position-major, plane stride
 * nc_neocog_kstride(K) with zero pad lanes; a batch puts characters one after
 * the other.  Every layer kernel can also write an occupancy map, one byte
 * per (character, position): 1 when any plane of the position is > 0.  The
 * sparse kernels read their input's map to skip empty positions. */
#ifndef NC_GPU_NEOCOG_GEOM_H
#define NC_GPU_NEOCOG_GEOM_H

#include <stdint.h>

#include "neocog.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NC_GPU_NEOCOG_MAX_OUT 128   /* widest output plane of a geometry */
#define NC_GPU_NEOCOG_MAX_WIN 32    /* widest window (UC1: 18) */
#define NC_GPU_NEOCOG_MAX_TAPS 320  /* most live taps (UC1: 276) */

typedef struct nc_gpu_neocog_geom {
    int32_t n_in, n_out, win, pad, step, n_live;
    float w[NC_GPU_NEOCOG_MAX_TAPS];            /* fixed weight of live tap t */
    /* core's edge clipping per axis: output o reads window taps
     * [axis_t0[o], axis_t1[o]) along either axis */
    int16_t axis_t0[NC_GPU_NEOCOG_MAX_OUT], axis_t1[NC_GPU_NEOCOG_MAX_OUT];
    int8_t tap_y[NC_GPU_NEOCOG_MAX_TAPS], tap_x[NC_GPU_NEOCOG_MAX_TAPS];
    /* the circular mask by rows: live taps of window row ty are
     * row_first[ty] + (tx - row_lo[ty]) for tx in [row_lo[ty], row_hi[ty]) */
    int16_t row_first[NC_GPU_NEOCOG_MAX_WIN];
    int8_t row_lo[NC_GPU_NEOCOG_MAX_WIN], row_hi[NC_GPU_NEOCOG_MAX_WIN];
    /* The same live taps in device memory for the warp-team kernels, two
     * int32 a tap (ty << 16 | tx, the bits of w), as
     * nc_gpu_neocog_geom_pack_taps writes them; NULL: those kernels copy
     * them from this block to shared memory first.  Each lane there reads
     * its own tap, and from the constant bank 32 different addresses are
     * 32 reads one after another (UC1's 276 taps: most of the kernel's
     * samples at batch 1 under ncu), where global memory serves a warp
     * in one go and the read can start before the previous layer ends. */
    const int32_t *taps;
} nc_gpu_neocog_geom;

/* Fill ret from core's index and its n_live fixed weights (taps NULL).
 * -EINVAL when the geometry is larger than the limits above (the caller
 * then stays on the CPU). */
int nc_gpu_neocog_geom_init(const nc_neocog_index *ix, const float *w,
                            nc_gpu_neocog_geom *ret);

/* g's live taps as the `taps` table holds them: out[2 t] = ty << 16 | tx,
 * out[2 t + 1] = the bits of w[t], t < n_live. */
void nc_gpu_neocog_geom_pack_taps(const nc_gpu_neocog_geom *g, int32_t *out);

/* S-layer kernels, seed 004 Table 5 plus the zero-skipping one. */
typedef enum nc_gpu_neocog_variant {
    NC_GPU_NEOCOG_T1 = 0,       /* gather, one thread per output cell */
    NC_GPU_NEOCOG_T1_T3 = 1,    /* a block per position skewers all K planes,
                                   v(n) on chip; one launch per stage */
    NC_GPU_NEOCOG_T1_T4 = 2,    /* a block per row of P positions, the union
                                   of their windows staged in shared memory;
                                   P * ks threads, P tuned per stage */
    NC_GPU_NEOCOG_T1_T5 = 3,    /* T4 with the window clipped through the
                                   constant-bank index tables */
    NC_GPU_NEOCOG_SPARSE = 4,   /* T5 that first compacts a window's non-zero
                                   inputs into a shared-memory list (exact) */
    NC_GPU_NEOCOG_GEMM = 5,     /* throughput path: rows with an occupied
                                   window compacted, then an implicit GEMM
                                   (gpu/neocog/neocog_s_gemm.cuh); the
                                   engine's tuner may keep the sparse kernel
                                   for a stage */
    NC_GPU_NEOCOG_N_VARIANTS = 6,
    NC_GPU_NEOCOG_AUTO = 6,     /* engine only (the default): sparse below a
                                   batch threshold the tuner measures, GEMM
                                   from it on */
} nc_gpu_neocog_variant;

const char *nc_gpu_neocog_variant_name(int variant);

/* UG: geometry (g in w) and the on/off cut. */
typedef struct nc_gpu_neocog_g_args {
    nc_gpu_neocog_geom g;
    float cut;
} nc_gpu_neocog_g_args;

/* S-layer: geometry (c(nu) in w), plane counts, theta, device weights in
 * core's layout: a [k_in][n_live][ks(k_out)], b [ks(k_out)]. */
typedef struct nc_gpu_neocog_s_args {
    nc_gpu_neocog_geom g;
    uint32_t k_in, in_stride, k_out;
    float theta;
    const float *a, *b;
} nc_gpu_neocog_s_args;

/* C-layer: geometry (d(nu) in w) and the plane count (in and out share
 * the stride ks(k)). */
typedef struct nc_gpu_neocog_c_args {
    nc_gpu_neocog_geom g;
    uint32_t k;
} nc_gpu_neocog_c_args;

#ifdef __cplusplus
}
#endif

#endif

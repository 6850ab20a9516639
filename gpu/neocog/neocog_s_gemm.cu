/* gpu/neocog/neocog_s_gemm.cu — the S-layer as a row-compacted implicit GEMM
 * (see neocog_s_gemm.cuh); the throughput path for large batches.  A variant
 * of neocog_s.cu, whose CPU twin is core/neocog/neocog_s.c.
 *
 * Layer: gpu.  Per forward, three launches on one stream:
 *   1. qflag_kernel a block per band of 8 output rows of one character
 *                   stages q(p) = sum_kappa in(p, kappa)^2 and the
 *                   occupancy of the band's input in shared memory, then a
 *                   thread per output row (b, o): flag = any occupied
 *                   input in the clipped window, v^2 = sum_t c(t) q(o +
 *                   nu_t) (the V-cell), occ_out = 0; an empty row is
 *                   written as 0 here (unless the caller reads the output
 *                   by its occupancy: fill 0) and never again.  (As a q pass
 *                   and a flag pass over global
 *                   memory: US1 at 4096 on an H100 spent 0.059 + 0.157 us
 *                   a character in them);
 *   2. cub::DeviceSelect::Flagged  the flagged rows, in ascending order
 *                   (stable, deterministic), and their count, on the device;
 *   3. gemm_kernel  a persistent grid over tiles of G_BM = 64 listed rows x
 *                   BN = min(ks, 128) planes (grid.y column tiles), the row
 *                   count read on the device.  The reduction runs over
 *                   j = t * KP + kappa in chunks of G_BK = 16: each chunk's
 *                   patch values are gathered from the position-major input
 *                   (four lanes read one row's 64 contiguous bytes; each
 *                   thread keeps its rows' window origins and cell offsets
 *                   in registers for the tile and finds its (tap, plane)
 *                   once a chunk) into registers one chunk ahead, stored k-major in shared
 *                   memory (double buffered, one barrier per chunk), and a
 *                   chunk that is zero for all 64 rows is skipped
 *                   (__syncthreads_or; exact, it would add +0).  Thread
 *                   (ty, tx) holds a 4 x 4 register tile (rows 4ty.., planes
 *                   4tx..): per k step one 16-byte LDS of patch values, one
 *                   of weights, 16 FFMA.  Epilogue: u_S = s_finish(e, v^2, b)
 *                   written as 16-byte stores, occ_out = 1 where any plane
 *                   fired.  No atomics; every output cell written once.
 *                   Runs the stages with K_in > 2.  (With a general
 *                   gather every float4 of the patch took a division, three
 *                   shared-memory reads and its address arithmetic: at
 *                   1024 characters on an H200, US2 1.05 -> 0.88 and US3
 *                   1.56 -> 1.53 us a character.)
 *   3'. gemm_k2_kernel  K_in <= 2 (US1): two rows x 16 planes per thread,
 *                   patch gathered straight into registers, zero taps
 *                   skipped per warp (0.60 -> 0.41 us per character at batch
 *                   1024 on an H200).  An 8 x 8-tile, cp.async version of
 *                   gemm_kernel was measured too: 3 % faster at
 *                   batch >= 1024 but 1-22 % slower from 32 to 256, where the
 *                   daemon's batches are, so it was left out (git history). */
#include "neocog_s_gemm.cuh"

#include <errno.h>
#include <stdlib.h>

#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "neocog_dev.cuh"

#define G_BM 64         /* rows per tile */
#define G_BK 16         /* reduction chunk */
#define G_MAXBN 128     /* planes per column tile */

enum { G_PATH_TILE = 0, G_PATH_K2ROW = 1 };   /* gemm_kernel, gemm_k2_kernel */

struct nc_gpu_neocog_gemm {
    nc_gpu_neocog_s_args s;
    uint32_t max_batch, ks, kp, n_chunks, bn, n_col;
    int grid_max;               /* resident blocks of the kernel that runs */
    int maxa;                   /* gemm_kernel's template argument: patch float4 per thread */
    int path;                   /* G_PATH_* */
    unsigned nth;               /* threads per block */
    size_t smem;                /* dynamic shared memory per block */
    uint32_t rows_per_tile;
    float *w;                   /* [n_chunks * G_BK][ks], tap-major */
    float *v2;                  /* [max_batch][n_out^2] */
    uint8_t *flag;              /* [max_batch][n_out^2] */
    int *rows;                  /* [max_batch * n_out^2] */
    int *count;                 /* [1] */
    void *temp;
    size_t temp_bytes;
};

struct gemm_ptrs {
    const float *in, *w, *v2;
    const int *rows, *count;
    float *out;
    uint8_t *occ_out;
    int kp, n_chunks, bn;
};

/* ---- weights: core's [kappa][t][k] -> [t][kappa < KP][k], zero padded ------ */

static __global__ void permute_kernel(const float *__restrict__ a, float *__restrict__ w,
                                      uint32_t k_in, uint32_t nl, uint32_t kp, uint32_t ks,
                                      size_t n)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const uint32_t k = (uint32_t)(i % ks);
    const size_t j = i / ks;
    const uint32_t t = (uint32_t)(j / kp), kap = (uint32_t)(j % kp);
    w[i] = (t < nl && kap < k_in) ? a[((size_t)kap * nl + t) * ks + k] : 0.0f;
}

/* ---- 1. row flags, V-cell, empty rows ------------------------------------ */

/* Output rows of a band (one block of one character). */
#define G_QF_ROWS 8

/* The band's input rows, padded so that every tap of every output reads
 * inside: rows (R - 1) step + win, columns (n_out - 1) step + win. */
static __host__ __device__ __forceinline__ uint32_t qf_cols(const nc_gpu_neocog_geom &g)
{
    return (uint32_t)((g.n_out - 1) * g.step + g.win);
}

static size_t qf_smem(const nc_gpu_neocog_geom &g, uint32_t R)
{
    const size_t cells = (size_t)((R - 1) * (uint32_t)g.step + (uint32_t)g.win) * qf_cols(g);
    return cells * (sizeof(float) + 1);
}

/* A block takes R output rows of one character: it stages q(p) = sum_kappa
 * in(p, kappa)^2 (0 where the occupancy map says 0, without reading the
 * cell) and the occupancy byte of every input position under the band,
 * zero-padded around the plane, in shared memory; then a thread an output
 * position: flag = any occupied input in its window, v^2 = sum_t c(t)
 * q(o + nu_t) in tap order (core's), occ_out = 0, and an empty window's
 * cells written as 0 (fill 1).  The same sums as a q pass and a flag pass
 * over global memory, with two shared-memory loads and no bounds test a
 * tap. */
static __global__ void __launch_bounds__(256)
qflag_kernel(const __grid_constant__ nc_gpu_neocog_s_args s, const float *__restrict__ in,
             const uint8_t *__restrict__ occ_in, uint8_t *__restrict__ flag,
             float *__restrict__ v2, float *__restrict__ out, uint8_t *__restrict__ occ_out,
             uint32_t R, uint32_t n_bands, uint32_t fill)
{
    extern __shared__ float qf_q[];
    const nc_gpu_neocog_geom &g = s.g;
    const int n_in = g.n_in, n_out = g.n_out, step = g.step;
    const int cols = (int)qf_cols(g), rows = ((int)R - 1) * step + g.win;
    uint8_t *qf_o = (uint8_t *)(qf_q + rows * cols);
    const size_t b = blockIdx.x / n_bands;
    const int oy0 = (int)(blockIdx.x - b * n_bands) * (int)R;
    const int iy0 = oy0 * step - g.pad, ix0 = -g.pad;
    const size_t n_i = (size_t)n_in * n_in, n_o = (size_t)n_out * n_out;
    const float *inb = in + b * n_i * s.in_stride;
    const uint8_t *ob = occ_in ? occ_in + b * n_i : nullptr;
    for (int c = threadIdx.x; c < rows * cols; c += blockDim.x) {
        const int r = c / cols, iy = iy0 + r, ix = ix0 + (c - r * cols);
        float q = 0.0f;
        uint8_t o = 0;
        if (iy >= 0 && iy < n_in && ix >= 0 && ix < n_in) {
            const size_t p = (size_t)iy * n_in + ix;
            o = ob ? ob[p] : 1;
            if (o) {
                const float *x = inb + p * s.in_stride;
                for (uint32_t k = 0; k < s.k_in; k++)
                    q = fmaf(x[k], x[k], q);
            }
        }
        qf_q[c] = q;
        qf_o[c] = o;
    }
    __syncthreads();
    const int nr = min((int)R, n_out - oy0);
    const uint32_t ks = nc_dev_kstride(s.k_out);
    for (int j = threadIdx.x; j < nr * n_out; j += blockDim.x) {
        const int ry = j / n_out, ox = j - ry * n_out;
        const int base = ry * step * cols + ox * step;
        float acc = 0.0f;
        int any = 0;
        for (int t = 0; t < g.n_live; t++) {
            const int c = base + g.tap_y[t] * cols + g.tap_x[t];
            acc = fmaf(g.w[t], qf_q[c], acc);
            any |= qf_o[c];
        }
        const size_t i = b * n_o + (size_t)(oy0 + ry) * n_out + ox;
        flag[i] = any ? 1 : 0;
        v2[i] = acc;
        if (occ_out)
            occ_out[i] = 0;
        if (!any && fill) {
            float4 *po = (float4 *)(out + i * ks);
            for (uint32_t k4 = 0; k4 < ks / 4; k4++)
                po[k4] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    }
}

/* ---- 4. the GEMM ------------------------------------------------------------ */

/* A gathered float4 of planes kap .. kap + 3 with the lanes from k_in on
 * (the pad planes) set to 0, and nz set when any lane is non-zero (the
 * chunk skip) */
static __device__ __forceinline__ float4 g_patch4(float4 v, int kap, int k_in, int &nz)
{
    if (kap + 4 > k_in) {
        if (kap >= k_in) v.x = 0.0f;
        if (kap + 1 >= k_in) v.y = 0.0f;
        if (kap + 2 >= k_in) v.z = 0.0f;
        v.w = 0.0f;
    }
    nz |= (v.x != 0.0f) | (v.y != 0.0f) | (v.z != 0.0f) | (v.w != 0.0f);
    return v;
}

/* A thread's patch float4 are rows r = (tid + m nth) / 4 at the same place
 * q = tid % 4 of each chunk (nth is a multiple of 4), so at chunk c they
 * are all j = 16 c + 4 q: one (tap, plane) found by one division a chunk,
 * each float4 inside one tap (KP is a multiple of 4); the rows' window
 * origins and cell offsets sit in registers for the tile. */
template <int MAXA>
static __global__ void __launch_bounds__(512)
gemm_kernel(const __grid_constant__ nc_gpu_neocog_s_args s, const gemm_ptrs p)
{
    __shared__ __align__(16) float As[2][G_BK][G_BM + 4];   /* patch, k-major */
    /* weights; bn / 4 float4 per k: nth = 4 bn threads and MAXA =
     * ceil(256 / nth) rounded up to a power of 2 bound bn by MAXA */
    constexpr int BNQ = MAXA == 1 ? G_MAXBN / 4 : MAXA == 2 ? 16 : MAXA == 4 ? 8 : 4;
    __shared__ float4 Bs[2][G_BK][BNQ];
    __shared__ int r_b[G_BM], r_y[G_BM], r_x[G_BM], r_idx[G_BM], r_flag[G_BM];
    __shared__ short2 s_tap[NC_GPU_NEOCOG_MAX_TAPS];
    const nc_gpu_neocog_geom &g = s.g;
    const int tid = threadIdx.x, nth = blockDim.x;
    const int nct = p.bn >> 2;                  /* column threads; nth = 16 nct */
    const int ks = (int)nc_dev_kstride(s.k_out);
    const int n0 = blockIdx.y * p.bn;
    const int ty = tid / nct, tx = tid - (tid / nct) * nct;
    const int n_in = g.n_in, n_i = g.n_in * g.n_in, n_o = g.n_out * g.n_out;
    const int KP = p.kp, nl = g.n_live, k_in = (int)s.k_in;
    const int stride = (int)s.in_stride;
    const int count = *p.count;
    const int n_a = (G_BM * G_BK / 4 + nth - 1) / nth;
    const int jb = tid / nct, cb = tid - jb * nct;     /* this thread's weight float4 */
    for (int t = tid; t < nl; t += nth)
        s_tap[t] = make_short2(g.tap_y[t], g.tap_x[t]);

    for (int tile = blockIdx.x; tile * G_BM < count; tile += gridDim.x) {
        for (int rr = tid; rr < G_BM; rr += nth) {     /* nth may be 32 (ks = 8) */
            const int pos = tile * G_BM + rr;
            r_flag[rr] = 0;
            if (pos < count) {
                const int idx = p.rows[pos];
                const int b = idx / n_o, o = idx - b * n_o;
                const int oy = o / g.n_out, ox = o - oy * g.n_out;
                r_b[rr] = b;
                r_y[rr] = oy * g.step - g.pad;
                r_x[rr] = ox * g.step - g.pad;
                r_idx[rr] = idx;
            } else {
                r_b[rr] = -1;
                r_y[rr] = r_x[rr] = 0;
                r_idx[rr] = -1;
            }
        }
        __syncthreads();

        float4 ra[MAXA];
        float4 rw;
        int nz = 0;
        /* this thread's rows of the patch, once a tile (a row past the
         * count: ry far outside, so no tap reads it) */
        int ry[MAXA], rx[MAXA];
        long long rbase[MAXA];
#pragma unroll
        for (int m = 0; m < MAXA; m++) {
            const int r = ((tid + m * nth) >> 2) & (G_BM - 1);
            const int bb = r_b[r];
            ry[m] = bb >= 0 ? r_y[r] : -(1 << 20);
            rx[m] = r_x[r];
            const long long cell = (long long)(bb >= 0 ? bb : 0) * n_i +
                                   (long long)ry[m] * n_in + rx[m];
            rbase[m] = cell * stride;
        }
        float acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                acc[i][j] = 0.0f;

        /* chunk c of the patch and weights into registers */
#define G_LOAD(c)                                                                      \
        do {                                                                           \
            nz = 0;                                                                    \
            const int j = (c) * G_BK + (tid & 3) * 4;                                  \
            const int t = j / KP, kap = j - t * KP;                                    \
            const bool tok = t < nl;    /* past the last tap: zeros */                \
            const short2 tp = s_tap[tok ? t : nl - 1];                                 \
            const long long toff = (long long)(tp.x * n_in + tp.y) * stride + kap;     \
            _Pragma("unroll")                                                          \
            for (int m = 0; m < MAXA; m++) {                                         \
                ra[m] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);                           \
                const int iy = ry[m] + tp.x, ix = rx[m] + tp.y;                        \
                if (tok && m < n_a && tid + m * nth < G_BM * G_BK / 4 &&               \
                    (unsigned)iy < (unsigned)n_in && (unsigned)ix < (unsigned)n_in)    \
                    ra[m] = g_patch4(__ldg((const float4 *)(p.in + rbase[m] + toff)),  \
                                     kap, k_in, nz);                                   \
            }                                                                          \
            {                                                                          \
                const int col = n0 + cb * 4;                                           \
                rw = col < ks ? __ldg((const float4 *)(p.w +                           \
                                      (size_t)((c) * G_BK + jb) * ks + col))           \
                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);                   \
            }                                                                          \
        } while (0)

        G_LOAD(0);
        for (int c = 0; c < p.n_chunks; c++) {
            const int buf = c & 1;
#pragma unroll
            for (int m = 0; m < MAXA; m++) {
                const int e = tid + m * nth;
                if (m < n_a && e < G_BM * G_BK / 4) {
                    const int r = e >> 2, q4 = (e & 3) * 4;
                    As[buf][q4 + 0][r] = ra[m].x;
                    As[buf][q4 + 1][r] = ra[m].y;
                    As[buf][q4 + 2][r] = ra[m].z;
                    As[buf][q4 + 3][r] = ra[m].w;
                }
            }
            Bs[buf][jb][cb] = rw;
            const int any = __syncthreads_or(nz);
            if (c + 1 < p.n_chunks)
                G_LOAD(c + 1);
            if (any) {
#pragma unroll
                for (int kk = 0; kk < G_BK; kk++) {
                    const float4 a = *(const float4 *)&As[buf][kk][ty * 4];
                    const float4 w = Bs[buf][kk][tx];
                    const float av[4] = { a.x, a.y, a.z, a.w };
                    const float wv[4] = { w.x, w.y, w.z, w.w };
#pragma unroll
                    for (int i = 0; i < 4; i++)
#pragma unroll
                        for (int j = 0; j < 4; j++)
                            acc[i][j] = fmaf(av[i], wv[j], acc[i][j]);
                }
            }
        }
#undef G_LOAD

        /* epilogue: u_S, 16-byte stores, row flags */
        const int k0 = n0 + tx * 4;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int r = ty * 4 + i;
            const int idx = r_idx[r];
            if (idx < 0 || k0 >= ks)
                continue;
            const float v2 = p.v2[idx];
            float val[4];
            int fired = 0;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int k = k0 + j;
                val[j] = k < (int)s.k_out ? nc_dev_s_finish(acc[i][j], v2, __ldg(s.b + k), s.theta)
                                          : 0.0f;
                fired |= val[j] > 0.0f;
            }
            *(float4 *)(p.out + (size_t)idx * ks + k0) = make_float4(val[0], val[1], val[2],
                                                                     val[3]);
            if (fired)
                r_flag[r] = 1;
        }
        __syncthreads();
        for (int rr = tid; p.occ_out && rr < G_BM; rr += nth)
            if (r_idx[rr] >= 0 && r_flag[rr])
                p.occ_out[r_idx[rr]] = 1;
        __syncthreads();
    }
}

/* ---- 4'. K_in <= 2 (US1 on UG's on/off planes): rows, no shared patch --------
 *
 * The reduction is only 2 n_live long and ks is small, so a tile's patch is
 * not worth staging: each thread owns G1_R listed rows (tid and tid + G1_NTH
 * of a tile of G1_NTH * G1_R) and 16 planes (n0 = 16 blockIdx.y), gathers
 * its rows' (tap, 2 planes) with 8-byte loads, G1_TU taps in flight, and
 * multiplies them with the block's weight rows 2t, 2t + 1 (shared memory,
 * read by 16-byte broadcast LDS).  A tap that is zero for all rows of the
 * warp is skipped (__any_sync; exact, it would add +0).  Per output cell the
 * order is j = 2t + kappa ascending, as in the 8-byte-gather path gemm_kernel
 * had for K_in <= 2 before this kernel, so the
 * results are the same.  One thread writes each cell and its row's occ_out
 * byte (1 where a plane fired); no barrier in the tile loop. */

#define G1_NTH 128
#define G1_R 2
#define G1_TU 4
#define G1_BN 16

static __global__ void __launch_bounds__(G1_NTH)
gemm_k2_kernel(const __grid_constant__ nc_gpu_neocog_s_args s, const gemm_ptrs p)
{
    extern __shared__ __align__(16) float g1_w[];      /* [2 n_live][16] */
    __shared__ short2 s_tap[NC_GPU_NEOCOG_MAX_TAPS];
    const nc_gpu_neocog_geom &g = s.g;
    const int tid = threadIdx.x;
    const int ks = (int)nc_dev_kstride(s.k_out);
    const int n0 = blockIdx.y * G1_BN;
    const int n_in = g.n_in, n_i = g.n_in * g.n_in, n_o = g.n_out * g.n_out;
    const int nl = g.n_live, k_in = (int)s.k_in;
    const int stride = (int)s.in_stride;
    const float gain = s.theta / (1.0f - s.theta);
    for (int t = tid; t < nl; t += G1_NTH)
        s_tap[t] = make_short2(g.tap_y[t], g.tap_x[t]);
    /* w is [j = 2 t + kappa][ks] (KP = 2) */
    for (int e = tid; e < 2 * nl * (G1_BN / 4); e += G1_NTH) {
        const int j = e >> 2, c4 = e & 3, col = n0 + c4 * 4;
        const float4 v = col < ks ? __ldg((const float4 *)(p.w + (size_t)j * ks + col))
                                  : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        *(float4 *)(g1_w + j * G1_BN + c4 * 4) = v;
    }
    __syncthreads();
    const int count = *p.count;

    for (int tile = blockIdx.x; tile * (G1_NTH * G1_R) < count; tile += gridDim.x) {
        int base[G1_R], y0[G1_R], x0[G1_R], idx[G1_R];
#pragma unroll
        for (int r = 0; r < G1_R; r++) {
            const int pos = tile * (G1_NTH * G1_R) + r * G1_NTH + tid;
            if (pos < count) {
                idx[r] = p.rows[pos];
                const int b = idx[r] / n_o, o = idx[r] - b * n_o;
                const int oy = o / g.n_out, ox = o - oy * g.n_out;
                base[r] = b * n_i;
                y0[r] = oy * g.step - g.pad;
                x0[r] = ox * g.step - g.pad;
            } else {
                idx[r] = -1;
                base[r] = 0;
                y0[r] = -0x40000000;        /* every tap fails the bounds test */
                x0[r] = 0;
            }
        }
        float acc[G1_R][G1_BN];
#pragma unroll
        for (int r = 0; r < G1_R; r++)
#pragma unroll
            for (int k = 0; k < G1_BN; k++)
                acc[r][k] = 0.0f;

        for (int t0 = 0; t0 < nl; t0 += G1_TU) {
            float2 v[G1_TU][G1_R];
#pragma unroll
            for (int u = 0; u < G1_TU; u++) {
                const int t = t0 + u;
                const short2 tp = t < nl ? s_tap[t] : make_short2(-0x4000, 0);
#pragma unroll
                for (int r = 0; r < G1_R; r++) {
                    const int iy = y0[r] + tp.x, ix = x0[r] + tp.y;
                    v[u][r] = make_float2(0.0f, 0.0f);
                    if ((unsigned)iy < (unsigned)n_in && (unsigned)ix < (unsigned)n_in)
                        v[u][r] = __ldg((const float2 *)(p.in + (size_t)(base[r] + iy * n_in +
                                                                         ix) * stride));
                    if (k_in < 2)
                        v[u][r].y = 0.0f;
                }
            }
#pragma unroll
            for (int u = 0; u < G1_TU; u++) {
                int nz = 0;
#pragma unroll
                for (int r = 0; r < G1_R; r++)
                    nz |= (v[u][r].x != 0.0f) | (v[u][r].y != 0.0f);
                if (!__any_sync(0xffffffffu, nz))
                    continue;
                const float4 *w0 = (const float4 *)(g1_w + (2 * (t0 + u)) * G1_BN);
                const float4 *w1 = w0 + G1_BN / 4;
#pragma unroll
                for (int h = 0; h < G1_BN / 4; h++) {
                    const float4 a = w0[h], b = w1[h];
#pragma unroll
                    for (int r = 0; r < G1_R; r++) {
                        acc[r][4 * h + 0] = fmaf(v[u][r].x, a.x, acc[r][4 * h + 0]);
                        acc[r][4 * h + 1] = fmaf(v[u][r].x, a.y, acc[r][4 * h + 1]);
                        acc[r][4 * h + 2] = fmaf(v[u][r].x, a.z, acc[r][4 * h + 2]);
                        acc[r][4 * h + 3] = fmaf(v[u][r].x, a.w, acc[r][4 * h + 3]);
                        acc[r][4 * h + 0] = fmaf(v[u][r].y, b.x, acc[r][4 * h + 0]);
                        acc[r][4 * h + 1] = fmaf(v[u][r].y, b.y, acc[r][4 * h + 1]);
                        acc[r][4 * h + 2] = fmaf(v[u][r].y, b.z, acc[r][4 * h + 2]);
                        acc[r][4 * h + 3] = fmaf(v[u][r].y, b.w, acc[r][4 * h + 3]);
                    }
                }
            }
        }

#pragma unroll
        for (int r = 0; r < G1_R; r++) {
            if (idx[r] < 0)
                continue;
            const float tv = s.theta * sqrtf(p.v2[idx[r]]);
            int fired = 0;
#pragma unroll
            for (int h = 0; h < G1_BN / 4; h++) {
                const int k0 = n0 + 4 * h;
                if (k0 >= ks)
                    continue;
                float val[4];
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    const int k = k0 + j;
                    val[j] = k < (int)s.k_out
                                 ? nc_dev_s_finish_tv(acc[r][4 * h + j], tv, __ldg(s.b + k), gain)
                                 : 0.0f;
                    fired |= val[j] > 0.0f;
                }
                *(float4 *)(p.out + (size_t)idx[r] * ks + k0) =
                    make_float4(val[0], val[1], val[2], val[3]);
            }
            if (fired && p.occ_out)
                p.occ_out[idx[r]] = 1;
        }
    }
}

/* ---- host ------------------------------------------------------------------- */

/* The gemm_kernel instance a plan runs (its occupancy query and its
 * launch take the same one) */
typedef void (*gemm_kernel_fn)(nc_gpu_neocog_s_args, gemm_ptrs);

static gemm_kernel_fn gemm_kernel_for(int maxa)
{
    return maxa == 1 ? gemm_kernel<1> : maxa == 2 ? gemm_kernel<2>
           : maxa == 4 ? gemm_kernel<4> : gemm_kernel<8>;
}

extern "C" void nc_gpu_neocog_gemm_free(nc_gpu_neocog_gemm *g)
{
    if (!g)
        return;
    cudaFree(g->w);
    cudaFree(g->v2);
    cudaFree(g->flag);
    cudaFree(g->rows);
    cudaFree(g->count);
    cudaFree(g->temp);
    free(g);
}

static int gemm_alloc(nc_gpu_neocog_gemm *g, cudaStream_t stream)
{
    const nc_gpu_neocog_s_args *s = &g->s;
    const size_t n_o = (size_t)s->g.n_out * s->g.n_out;
    const size_t rows = (size_t)g->max_batch * n_o;
    const size_t wn = (size_t)g->n_chunks * G_BK * g->ks;
    NC_CUDA_CHECK(cudaMalloc((void **)&g->w, wn * sizeof(float)));
    NC_CUDA_CHECK(cudaMalloc((void **)&g->v2, rows * sizeof(float)));
    NC_CUDA_CHECK(cudaMalloc((void **)&g->flag, rows));
    NC_CUDA_CHECK(cudaMalloc((void **)&g->rows, rows * sizeof(int)));
    NC_CUDA_CHECK(cudaMalloc((void **)&g->count, sizeof(int)));
    NC_CUDA_CHECK(cub::DeviceSelect::Flagged(nullptr, g->temp_bytes,
                                             thrust::counting_iterator<int>(0), g->flag,
                                             g->rows, g->count, (int)rows, stream));
    NC_CUDA_CHECK(cudaMalloc(&g->temp, g->temp_bytes ? g->temp_bytes : 16));
    permute_kernel<<<(unsigned)((wn + 255) / 256), 256, 0, stream>>>(
        s->a, g->w, s->k_in, (uint32_t)s->g.n_live, g->kp, g->ks, wn);
    NC_CUDA_CHECK(cudaGetLastError());
    NC_CUDA_CHECK(cudaStreamSynchronize(stream));
    int dev = 0, n_sm = 0, per_sm = 0;
    NC_CUDA_CHECK(cudaGetDevice(&dev));
    NC_CUDA_CHECK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev));
    if (g->path == G_PATH_K2ROW) {
        g->nth = G1_NTH;
        g->rows_per_tile = G1_NTH * G1_R;
        g->smem = (size_t)2 * s->g.n_live * G1_BN * sizeof(float);
        NC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemm_k2_kernel,
                                                                    (int)g->nth, g->smem));
    } else {
        const int nth = (int)(16 * g->bn / 4);
        g->nth = (unsigned)nth;
        g->rows_per_tile = G_BM;
        g->smem = 0;
        g->maxa = (G_BM * G_BK / 4 + nth - 1) / nth;
        g->maxa = g->maxa <= 1 ? 1 : g->maxa <= 2 ? 2 : g->maxa <= 4 ? 4 : 8;
        NC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, gemm_kernel_for(g->maxa), nth, 0));
    }
    g->grid_max = n_sm * (per_sm > 0 ? per_sm : 1);
    return 0;
}

extern "C" int nc_gpu_neocog_gemm_new(const nc_gpu_neocog_s_args *s, uint32_t max_batch,
                                      cudaStream_t stream, nc_gpu_neocog_gemm **ret)
{
    if (!s || !ret || !s->a || !s->b || max_batch < 1 || s->k_in < 1 ||
        s->k_in > s->in_stride || s->in_stride % 4 != 0 || s->k_out < 1 ||
        s->k_out > NC_NEOCOG_MAX_PLANES || s->g.n_out < 1 || s->g.n_live < 1 ||
        !(s->theta > 0.0f && s->theta < 1.0f))
        return -EINVAL;
    const size_t rows = (size_t)max_batch * s->g.n_out * s->g.n_out;
    if (rows > 0x7fffffffu - 256u || (size_t)max_batch * s->g.n_in * s->g.n_in > 0x7fffffffu)
        return -EINVAL;
    nc_gpu_neocog_gemm *g = (nc_gpu_neocog_gemm *)calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    g->s = *s;
    g->max_batch = max_batch;
    g->ks = nc_dev_kstride(s->k_out);
    /* planes per tap: 16-byte gathers; 2 (8-byte gathers, two taps per
     * float4 of the patch) when K_in <= 2, as US1 on UG's on/off planes */
    g->kp = s->k_in <= 2 ? 2u : (s->k_in + 3u) & ~3u;
    g->n_chunks = ((uint32_t)s->g.n_live * g->kp + G_BK - 1) / G_BK;
    g->path = g->kp == 2 ? G_PATH_K2ROW : G_PATH_TILE;
    if (g->path == G_PATH_K2ROW) {
        g->bn = G1_BN;
        g->n_col = (g->ks + G1_BN - 1) / G1_BN;
    } else {
        g->bn = g->ks < G_MAXBN ? g->ks : G_MAXBN;
        g->n_col = (g->ks + g->bn - 1) / g->bn;
    }
    int r = gemm_alloc(g, stream);
    if (r < 0) {
        nc_gpu_neocog_gemm_free(g);
        return r;
    }
    *ret = g;
    return 0;
}

extern "C" int nc_gpu_neocog_gemm_forward(nc_gpu_neocog_gemm *g, const float *in,
                                          const uint8_t *occ_in, float *out,
                                          uint8_t *occ_out, uint32_t batch,
                                          cudaStream_t stream)
{
    return nc_gpu_neocog_gemm_forward_fill(g, in, occ_in, out, occ_out, batch, 1, stream);
}

extern "C" int nc_gpu_neocog_gemm_forward_fill(nc_gpu_neocog_gemm *g, const float *in,
                                               const uint8_t *occ_in, float *out,
                                               uint8_t *occ_out, uint32_t batch, uint32_t fill,
                                               cudaStream_t stream)
{
    if (!g || !in || !out || batch < 1 || batch > g->max_batch || ((uintptr_t)in & 15) ||
        ((uintptr_t)out & 15) || fill > 1 || (!fill && !occ_out))
        return -EINVAL;
    const nc_gpu_neocog_s_args *s = &g->s;
    const size_t n_o = (size_t)s->g.n_out * s->g.n_out;
    const size_t rows = batch * n_o;
    /* bands of output rows: G_QF_ROWS, fewer where their input would
     * overflow the default 48 KB of shared memory (wide windows) */
    uint32_t R = G_QF_ROWS;
    while (R > 1 && qf_smem(s->g, R) > 48u * 1024u)
        R--;
    if (qf_smem(s->g, R) > 48u * 1024u)
        return -E2BIG;
    const uint32_t n_bands = ((uint32_t)s->g.n_out + R - 1) / R;
    if ((uint64_t)batch * n_bands > 0x7fffffffu)
        return -E2BIG;
    qflag_kernel<<<(unsigned)(batch * n_bands), 256, qf_smem(s->g, R), stream>>>(
        *s, in, occ_in, g->flag, g->v2, out, occ_out, R, n_bands, fill);
    NC_CUDA_CHECK(cudaGetLastError());
    size_t tb = g->temp_bytes;
    NC_CUDA_CHECK(cub::DeviceSelect::Flagged(g->temp, tb, thrust::counting_iterator<int>(0),
                                             g->flag, g->rows, g->count, (int)rows, stream));
    gemm_ptrs p;
    p.in = in;
    p.w = g->w;
    p.v2 = g->v2;
    p.rows = g->rows;
    p.count = g->count;
    p.out = out;
    p.occ_out = occ_out;
    p.kp = (int)g->kp;
    p.n_chunks = (int)g->n_chunks;
    p.bn = (int)g->bn;
    const size_t tiles = (rows + g->rows_per_tile - 1) / g->rows_per_tile;
    const unsigned gx = (unsigned)(tiles < (size_t)g->grid_max ? tiles : (size_t)g->grid_max);
    const dim3 grid(gx, g->n_col);
    const unsigned nth = g->nth;
    if (g->path == G_PATH_K2ROW)
        gemm_k2_kernel<<<grid, nth, g->smem, stream>>>(*s, p);
    else
        gemm_kernel_for(g->maxa)<<<grid, nth, 0, stream>>>(*s, p);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

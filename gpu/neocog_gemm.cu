/* gpu/neocog_gemm.cu — the S-layer as a row-compacted implicit GEMM (see
 * neocog_gemm.cuh); the throughput path for large batches.
 *
 * Layer: gpu.  Per forward, four launches on one stream:
 *   1. q_kernel     q(b, p) = sum_kappa in(b, p, kappa)^2, one thread per
 *                   input position;
 *   2. flag_kernel  one thread per output row (b, o): flag = any occupied
 *                   input in the clipped window (the input's occupancy
 *                   map), v^2 = sum_t c(t) q(o + nu_t) (the V-cell), occ_out
 *                   = 0; an empty row is written as 0 here and never again;
 *   3. cub::DeviceSelect::Flagged  the flagged rows, in ascending order
 *                   (stable, deterministic), and their count, on the device;
 *   4. gemm_kernel  a persistent grid over tiles of G_BM = 64 listed rows x
 *                   BN = min(ks, 128) planes (grid.y column tiles), the row
 *                   count read on the device.  The reduction runs over
 *                   j = t * KP + kappa in chunks of G_BK = 16: each chunk's
 *                   patch values are gathered from the position-major input
 *                   (four lanes read one row's 64 contiguous bytes) into
 *                   registers one chunk ahead, stored k-major in shared
 *                   memory (double buffered, one barrier per chunk), and a
 *                   chunk that is zero for all 64 rows is skipped
 *                   (__syncthreads_or; exact, it would add +0).  Thread
 *                   (ty, tx) holds a 4 x 4 register tile (rows 4ty.., planes
 *                   4tx..): per k step one 16-byte LDS of patch values, one
 *                   of weights, 16 FFMA.  Epilogue: u_S = s_finish(e, v^2, b)
 *                   written as 16-byte stores, occ_out = 1 where any plane
 *                   fired.  No atomics; every output cell written once. */
#include "neocog_gemm.cuh"

#include <errno.h>
#include <stdlib.h>

#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "neocog_dev.cuh"

#define G_BM 64         /* rows per tile */
#define G_BK 16         /* reduction chunk */
#define G_MAXBN 128     /* planes per column tile */

struct nc_gpu_neocog_gemm {
    nc_gpu_neocog_s_args s;
    uint32_t max_batch, ks, kp, n_chunks, bn, n_col;
    int grid_max;               /* resident blocks of gemm_kernel */
    int maxa;                   /* its template argument: patch float4 per thread */
    float *w;                   /* [n_chunks * G_BK][ks], tap-major */
    float *q;                   /* [max_batch][n_in^2] */
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

/* u_S from e and v^2 (seed eq. 1), as core's s_finish. */
static __device__ __forceinline__ float g_finish(float e, float v2, float b, float theta)
{
    const float gain = theta / (1.0f - theta);
    const float tv = theta * sqrtf(v2);
    const float x = (1.0f + e) / (1.0f + tv * b) - 1.0f;
    return x > 0.0f ? gain * x : 0.0f;
}

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

/* ---- 1. sum of squares per input position --------------------------------- */

static __global__ void q_kernel(const float *__restrict__ in, uint32_t k_in,
                                uint32_t stride, float *__restrict__ q, size_t n)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float *x = in + i * stride;
    float s = 0.0f;
    for (uint32_t k = 0; k < k_in; k++)
        s = fmaf(x[k], x[k], s);
    q[i] = s;
}

/* ---- 2. row flags, V-cell, empty rows ------------------------------------- */

static __global__ void flag_kernel(const __grid_constant__ nc_gpu_neocog_s_args s,
                                   const float *__restrict__ q,
                                   const uint8_t *__restrict__ occ_in,
                                   uint8_t *__restrict__ flag, float *__restrict__ v2,
                                   float *__restrict__ out, uint8_t *__restrict__ occ_out,
                                   size_t n)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const nc_gpu_neocog_geom &g = s.g;
    const uint32_t n_o = g.n_out * g.n_out, n_i = g.n_in * g.n_in;
    const size_t b = i / n_o;
    const uint32_t o = (uint32_t)(i - b * n_o);
    const int by = (int)(o / g.n_out) * g.step - g.pad;
    const int bx = (int)(o % g.n_out) * g.step - g.pad;
    const float *qb = q + b * n_i;
    const uint8_t *ob = occ_in ? occ_in + b * n_i : nullptr;
    float acc = 0.0f;
    int any = ob ? 0 : 1;
    for (int t = 0; t < g.n_live; t++) {
        const int iy = by + g.tap_y[t], ix = bx + g.tap_x[t];
        if (iy < 0 || iy >= g.n_in || ix < 0 || ix >= g.n_in)
            continue;
        const int p = iy * g.n_in + ix;
        acc = fmaf(g.w[t], qb[p], acc);
        if (ob)
            any |= ob[p];
    }
    flag[i] = any ? 1 : 0;
    v2[i] = acc;
    if (occ_out)
        occ_out[i] = 0;
    if (!any) {
        const uint32_t ks = nc_dev_kstride(s.k_out);
        float4 *po = (float4 *)(out + i * ks);
        for (uint32_t k4 = 0; k4 < ks / 4; k4++)
            po[k4] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
}

/* ---- 4. the GEMM ------------------------------------------------------------ */

template <int MAXA, bool K2>
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
            _Pragma("unroll")                                                          \
            for (int m = 0; m < MAXA; m++) {                                         \
                ra[m] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);                           \
                const int e = tid + m * nth;                                           \
                if (m < n_a && e < G_BM * G_BK / 4) {                                  \
                    const int r = e >> 2, j = (c) * G_BK + (e & 3) * 4;                \
                    const int t = j / KP, kap = j - t * KP;                            \
                    const int bb = r_b[r];                                             \
                    if (K2) {                                                          \
                        /* KP = 2: taps t, t + 1, two planes each (8-byte loads) */     \
                        float2 v0 = make_float2(0.0f, 0.0f), v1 = v0;                  \
                        if (bb >= 0 && t < nl) {                                       \
                            const short2 tp = s_tap[t];                                \
                            const int iy = r_y[r] + tp.x, ix = r_x[r] + tp.y;          \
                            if (iy >= 0 && iy < n_in && ix >= 0 && ix < n_in)          \
                                v0 = __ldg((const float2 *)(p.in +                     \
                                    ((size_t)bb * n_i + iy * n_in + ix) * stride));    \
                        }                                                              \
                        if (bb >= 0 && t + 1 < nl) {                                   \
                            const short2 tp = s_tap[t + 1];                            \
                            const int iy = r_y[r] + tp.x, ix = r_x[r] + tp.y;          \
                            if (iy >= 0 && iy < n_in && ix >= 0 && ix < n_in)          \
                                v1 = __ldg((const float2 *)(p.in +                     \
                                    ((size_t)bb * n_i + iy * n_in + ix) * stride));    \
                        }                                                              \
                        if (k_in < 2) {                                                \
                            v0.y = 0.0f;                                               \
                            v1.y = 0.0f;                                               \
                        }                                                              \
                        ra[m] = make_float4(v0.x, v0.y, v1.x, v1.y);                   \
                        nz = nz | (v0.x != 0.0f) | (v0.y != 0.0f) | (v1.x != 0.0f) |   \
                             (v1.y != 0.0f);                                           \
                    } else if (bb >= 0 && t < nl && kap < k_in) {                      \
                        const short2 tp = s_tap[t];                                    \
                        const int iy = r_y[r] + tp.x, ix = r_x[r] + tp.y;              \
                        if (iy >= 0 && iy < n_in && ix >= 0 && ix < n_in) {            \
                            float4 v = __ldg((const float4 *)(p.in +                   \
                                ((size_t)bb * n_i + iy * n_in + ix) * stride + kap));  \
                            if (kap + 1 >= k_in) v.y = 0.0f;                           \
                            if (kap + 2 >= k_in) v.z = 0.0f;                           \
                            if (kap + 3 >= k_in) v.w = 0.0f;                           \
                            ra[m] = v;                                                 \
                            nz |= (v.x != 0.0f) | (v.y != 0.0f) | (v.z != 0.0f) |      \
                                  (v.w != 0.0f);                                       \
                        }                                                              \
                    }                                                                  \
                }                                                                      \
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
                val[j] = k < (int)s.k_out ? g_finish(acc[i][j], v2, __ldg(s.b + k), s.theta)
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

/* ---- host ------------------------------------------------------------------- */

extern "C" void nc_gpu_neocog_gemm_free(nc_gpu_neocog_gemm *g)
{
    if (!g)
        return;
    cudaFree(g->w);
    cudaFree(g->q);
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
    const size_t n_o = (size_t)s->g.n_out * s->g.n_out, n_i = (size_t)s->g.n_in * s->g.n_in;
    const size_t rows = (size_t)g->max_batch * n_o;
    const size_t wn = (size_t)g->n_chunks * G_BK * g->ks;
    NC_CUDA_CHECK(cudaMalloc((void **)&g->w, wn * sizeof(float)));
    NC_CUDA_CHECK(cudaMalloc((void **)&g->q, (size_t)g->max_batch * n_i * sizeof(float)));
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
    const int nth = (int)(16 * g->bn / 4);
    g->maxa = (G_BM * G_BK / 4 + nth - 1) / nth;
    g->maxa = g->maxa <= 1 ? 1 : g->maxa <= 2 ? 2 : g->maxa <= 4 ? 4 : 8;
    const bool k2 = g->kp == 2;
    cudaError_t ce = g->maxa == 1 ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k2 ? gemm_kernel<1, true> : gemm_kernel<1, false>, nth, 0)
                   : g->maxa == 2 ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k2 ? gemm_kernel<2, true> : gemm_kernel<2, false>, nth, 0)
                   : g->maxa == 4 ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k2 ? gemm_kernel<4, true> : gemm_kernel<4, false>, nth, 0)
                   : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k2 ? gemm_kernel<8, true> : gemm_kernel<8, false>, nth, 0);
    NC_CUDA_CHECK(ce);
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
    if (rows > 0x7fffffffu - G_BM || (size_t)max_batch * s->g.n_in * s->g.n_in > 0x7fffffffu)
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
    g->bn = g->ks < G_MAXBN ? g->ks : G_MAXBN;
    g->n_col = (g->ks + g->bn - 1) / g->bn;
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
    if (!g || !in || !out || batch < 1 || batch > g->max_batch || ((uintptr_t)in & 15) ||
        ((uintptr_t)out & 15))
        return -EINVAL;
    const nc_gpu_neocog_s_args *s = &g->s;
    const size_t n_o = (size_t)s->g.n_out * s->g.n_out, n_i = (size_t)s->g.n_in * s->g.n_in;
    const size_t rows = batch * n_o, pos = batch * n_i;
    q_kernel<<<(unsigned)((pos + 255) / 256), 256, 0, stream>>>(in, s->k_in, s->in_stride,
                                                                g->q, pos);
    NC_CUDA_CHECK(cudaGetLastError());
    flag_kernel<<<(unsigned)((rows + 255) / 256), 256, 0, stream>>>(
        *s, g->q, occ_in, g->flag, g->v2, out, occ_out, rows);
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
    const size_t tiles = (rows + G_BM - 1) / G_BM;
    const unsigned gx = (unsigned)(tiles < (size_t)g->grid_max ? tiles : (size_t)g->grid_max);
    const dim3 grid(gx, g->n_col);
    const unsigned nth = 16 * g->bn / 4;
    const int sel = g->maxa * 2 + (g->kp == 2);
    switch (sel) {
    case 2: gemm_kernel<1, false><<<grid, nth, 0, stream>>>(*s, p); break;
    case 3: gemm_kernel<1, true><<<grid, nth, 0, stream>>>(*s, p); break;
    case 4: gemm_kernel<2, false><<<grid, nth, 0, stream>>>(*s, p); break;
    case 5: gemm_kernel<2, true><<<grid, nth, 0, stream>>>(*s, p); break;
    case 8: gemm_kernel<4, false><<<grid, nth, 0, stream>>>(*s, p); break;
    case 9: gemm_kernel<4, true><<<grid, nth, 0, stream>>>(*s, p); break;
    case 17: gemm_kernel<8, true><<<grid, nth, 0, stream>>>(*s, p); break;
    default: gemm_kernel<8, false><<<grid, nth, 0, stream>>>(*s, p); break;
    }
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

/* gpu/neocog_list_rows.cu — the S-layer from the lists, one warp an output
 * row sliding along it (see neocog_list.cuh, nc_gpu_neocog_s_forward_rows).
 *
 * Layer: gpu.
 *
 * Why: the list kernel of neocog_list.cu pays a fixed cost for every output
 * position (its taps' counts, a scan, the copy into a list, a shuffle tree),
 * which outweighs the 20-75 entries a US2 window holds.  Here a warp walks
 * the input columns of one output row's band of WIN input rows once, lane
 * k holding plane k's numerators of the WIN outputs that the current column
 * feeds, in registers: an entry (x, kappa) at window row ty adds
 * x a(kappa, ty, tx, k) to slot tx for every tx, the weights read from a
 * copy of a laid out [kappa][ty][tx][32 KJ] with zeros at the dead taps (so
 * no test, and the tx offsets are constants).  After a column the slot of
 * tx = WIN - 1 has seen its whole window: it is finished, written, and the
 * slots move up by one.  Every input entry is thus read WIN times (once by
 * each row whose band holds it) instead of once per window tap, and an
 * output costs only its finishing.  A block takes one character at a time:
 * its lists (counts, sums of squares, entries compacted by a block scan)
 * go to shared memory first, with a bit map of the occupied rows of each
 * input column, and its warps take the output rows from a counter.  Each
 * output's terms are added in a fixed order (input column, then window
 * row, then plane), with no atomics. */
#include "neocog_list.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

/* Entries of one character a block keeps in shared memory; a character
 * with more is read from the lists in global memory instead (exact
 * either way). */
#define R_ECAP 3072u
/* info[p] = start << R_CSH | count */
#define R_CSH 13u
/* Weights go to shared memory up to this size (else read through L1). */
#define R_WSM_MAX (150u * 1024u)

/* ---- the padded weights ---------------------------------------------------- */

static __global__ void rows_weights_kernel(const __grid_constant__ nc_gpu_neocog_s_args s,
                                           uint32_t lanes, float *__restrict__ w, size_t n)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const nc_gpu_neocog_geom &g = s.g;
    const uint32_t win = (uint32_t)g.win, k = (uint32_t)(i % lanes);
    const size_t j = i / lanes;
    const uint32_t tx = (uint32_t)(j % win), ty = (uint32_t)(j / win % win);
    const size_t kap = j / ((size_t)win * win);
    const uint32_t ks = nc_dev_kstride(s.k_out);
    float v = 0.0f;
    if (k < ks && (int)tx >= g.row_lo[ty] && (int)tx < g.row_hi[ty]) {
        const size_t t = (size_t)g.row_first[ty] + tx - (uint32_t)g.row_lo[ty];
        v = s.a[(kap * (uint32_t)g.n_live + t) * ks + k];
    }
    w[i] = v;
}

/* ---- the S kernel ------------------------------------------------------------ */

/* Shared memory of a block: the weights (WSM), the column bit maps, the
 * entries, then the per-position and per-warp arrays. */
struct rows_smem {
    float *w;
    unsigned long long *colb;   /* [n_in]: bit iy set when (iy, ix) has an entry */
    int2 *ent;                  /* [R_ECAP] */
    float *q;                   /* [n_i] */
    uint32_t *info;             /* [n_i] */
    float *vrow;                /* [warps][n_out]: the row's v^2 */
    uint32_t *scan;             /* [32] warp totals, [32] row counter */
};

static __host__ __device__ size_t rows_smem_bytes(uint32_t wfloats, uint32_t n_in,
                                                  uint32_t n_out, uint32_t warps)
{
    return (size_t)wfloats * 4u + (size_t)n_in * 8u + (size_t)R_ECAP * 8u +
           (size_t)n_in * n_in * 8u + (size_t)warps * n_out * 4u + 40u * 4u;
}

static __device__ rows_smem rows_smem_at(void *base, uint32_t wfloats, uint32_t n_in,
                                         uint32_t n_out, uint32_t warps)
{
    rows_smem m;
    m.w = (float *)base;
    m.colb = (unsigned long long *)(m.w + wfloats);     /* wfloats: a multiple of 32 */
    m.ent = (int2 *)(m.colb + n_in);
    m.q = (float *)(m.ent + R_ECAP);
    m.info = (uint32_t *)(m.q + n_in * n_in);
    m.vrow = (float *)(m.info + n_in * n_in);
    m.scan = (uint32_t *)(m.vrow + warps * n_out);
    return m;
}

/* acc[tx][j] += x w[tx L + 32 j] for every slot: one entry at window row ty */
template <int WIN, int KJ, bool WSM>
static __device__ __forceinline__ void rows_entry(float x, const float *w, float (&acc)[WIN][KJ])
{
    constexpr int L = 32 * KJ;
#pragma unroll
    for (int tx = 0; tx < WIN; tx++)
#pragma unroll
        for (int j = 0; j < KJ; j++)
            acc[tx][j] = fmaf(x, WSM ? w[tx * L + 32 * j] : __ldg(w + tx * L + 32 * j),
                              acc[tx][j]);
}

template <int WIN, int KJ, bool WSM>
static __global__ void __launch_bounds__(512)
s_rows_kernel(const __grid_constant__ nc_gpu_neocog_s_args s, const float *__restrict__ wpad,
              const uint16_t *__restrict__ cnt, const float *__restrict__ q,
              const int2 *__restrict__ ent, float *__restrict__ out,
              uint8_t *__restrict__ occ_out, uint32_t batch)
{
    constexpr uint32_t L = 32u * KJ, WROW = (uint32_t)WIN * WIN * L;
    extern __shared__ float4 r_smem4[];
    const nc_gpu_neocog_geom &g = s.g;
    const uint32_t n_in = (uint32_t)g.n_in, n_out = (uint32_t)g.n_out, n_i = n_in * n_in,
                   n_o = n_out * n_out, kin = s.k_in, ks = nc_dev_kstride(s.k_out);
    const uint32_t nt = blockDim.x, nw = nt >> 5, tid = threadIdx.x, warp = tid >> 5,
                   lane = tid & 31u;
    const int pad = g.pad;
    const uint32_t wfloats = WSM ? kin * WROW : 0u;
    const rows_smem m = rows_smem_at(r_smem4, wfloats, n_in, n_out, nw);
    /* the weights are the model's, not the previous layer's output: they
     * may be copied before that layer ends */
    if constexpr (WSM) {
        const float4 *src = (const float4 *)wpad;
        float4 *dst = r_smem4;              /* m.w */
        for (uint32_t i = tid; i < wfloats / 4u; i += nt)
            dst[i] = __ldg(src + i);
    }
    float bj[KJ];
#pragma unroll
    for (int j = 0; j < KJ; j++)
        bj[j] = lane + 32u * j < ks ? __ldg(s.b + lane + 32u * j) : 0.0f;
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();
    const float *w_base = WSM ? (const float *)r_smem4 : wpad;
    for (uint32_t b = blockIdx.x; b < batch; b += gridDim.x) {
        /* ---- the character's lists into shared memory ---- */
        for (uint32_t i = tid; i < n_in; i += nt)
            m.colb[i] = 0ull;
        if (tid == 0)
            m.scan[32] = 0u;                    /* the row counter */
        __syncthreads();
        const uint16_t *cb = cnt + (size_t)b * n_i;
        const float *qb = q + (size_t)b * n_i;
        uint32_t run = 0;                       /* entries of the rounds before */
        for (uint32_t p0 = 0; p0 < n_i; p0 += nt) {
            const uint32_t p = p0 + tid;
            const uint32_t c = p < n_i ? cb[p] : 0u;
            if (p < n_i) {
                m.q[p] = qb[p];
                if (c)
                    atomicOr(&m.colb[p % n_in], 1ull << (p / n_in));
            }
            uint32_t incl = c;
#pragma unroll
            for (uint32_t d = 1; d < 32u; d <<= 1) {
                const uint32_t y = __shfl_up_sync(0xffffffffu, incl, d);
                if (lane >= d)
                    incl += y;
            }
            if (lane == 31)
                m.scan[warp] = incl;
            __syncthreads();
            if (warp == 0) {
                uint32_t v = lane < nw ? m.scan[lane] : 0u;
#pragma unroll
                for (uint32_t d = 1; d < 32u; d <<= 1) {
                    const uint32_t y = __shfl_up_sync(0xffffffffu, v, d);
                    if (lane >= d)
                        v += y;
                }
                if (lane < nw)
                    m.scan[lane] = v;
            }
            __syncthreads();
            if (p < n_i)
                m.info[p] = (run + (warp ? m.scan[warp - 1] : 0u) + incl - c) << R_CSH | c;
            run += m.scan[nw - 1];
            __syncthreads();                    /* scan[] is written again */
        }
        const bool compact = run <= R_ECAP;
        const int2 *eb = ent + (size_t)b * n_i * kin;
        if (compact)
            for (uint32_t p = tid; p < n_i; p += nt) {
                const uint32_t inf = m.info[p], c = inf & ((1u << R_CSH) - 1u);
                const int2 *src = eb + (size_t)p * kin;
                int2 *dst = m.ent + (inf >> R_CSH);
                for (uint32_t e = 0; e < c; e++) {
                    const int2 v = __ldg(src + e);
                    dst[e] = make_int2(v.x, v.y * (int)WROW);
                }
            }
        __syncthreads();
        /* ---- the output rows, one a warp at a time ---- */
        for (;;) {
            uint32_t oy = 0;
            if (lane == 0)
                oy = atomicAdd(&m.scan[32], 1u);
            oy = __shfl_sync(0xffffffffu, oy, 0);
            if (oy >= n_out)
                break;
            const int iy0 = (int)oy - pad;
            float *vr = m.vrow + warp * n_out;
            /* v^2 of the row's outputs, lane = output column, taps in order */
            for (uint32_t ox = lane; ox < n_out; ox += 32u) {
                float v = 0.0f;
                for (int t = 0; t < g.n_live; t++) {
                    const int iy = iy0 + g.tap_y[t], ix = (int)ox - pad + g.tap_x[t];
                    if (iy >= 0 && iy < (int)n_in && ix >= 0 && ix < (int)n_in)
                        v = fmaf(g.w[t], m.q[iy * n_in + ix], v);
                }
                vr[ox] = v;
            }
            __syncwarp();
            float acc[WIN][KJ];
#pragma unroll
            for (int tx = 0; tx < WIN; tx++)
#pragma unroll
                for (int j = 0; j < KJ; j++)
                    acc[tx][j] = 0.0f;
            float *orow = out + ((size_t)b * n_o + (size_t)oy * n_out) * ks;
            uint8_t *occ_row = occ_out ? occ_out + (size_t)b * n_o + (size_t)oy * n_out : NULL;
            /* column ix feeds slot tx = output ix + pad - tx; the first
             * column is the earlier of input column 0 and the one that
             * finishes output 0 */
            const int ix_s = min(0, WIN - 1 - pad), ix_e = (int)n_out - 2 - pad + WIN;
            const unsigned band = (1u << WIN) - 1u;
            for (int ix = ix_s; ix <= ix_e; ix++) {
                if (ix >= 0 && ix < (int)n_in) {
                    const unsigned long long cbits = m.colb[ix];
                    unsigned mk = (unsigned)((iy0 >= 0 ? cbits >> iy0 : cbits << -iy0) & band);
                    while (mk) {
                        const int ty = __ffs(mk) - 1;
                        mk &= mk - 1u;
                        const uint32_t p = (uint32_t)(iy0 + ty) * n_in + (uint32_t)ix;
                        const uint32_t inf = m.info[p], c = inf & ((1u << R_CSH) - 1u);
                        const float *wr = w_base + ty * (WIN * L) + lane;
                        if (compact) {
                            const int2 *ep = m.ent + (inf >> R_CSH);
#pragma unroll 2
                            for (uint32_t e = 0; e < c; e++) {
                                const int2 en = ep[e];
                                rows_entry<WIN, KJ, WSM>(__int_as_float(en.x), wr + en.y, acc);
                            }
                        } else {
                            const int2 *ep = eb + (size_t)p * kin;
                            for (uint32_t e = 0; e < c; e++) {
                                const int2 en = __ldg(ep + e);
                                rows_entry<WIN, KJ, WSM>(__int_as_float(en.x),
                                                         wr + (size_t)en.y * WROW, acc);
                            }
                        }
                    }
                }
                /* slot WIN - 1 has its whole window: finish it */
                const int ox = ix + pad - (WIN - 1);
                if (ox >= 0 && ox < (int)n_out) {
                    const float v2 = vr[ox];
                    float *po = orow + (size_t)ox * ks;
                    bool fired = false;
#pragma unroll
                    for (int j = 0; j < KJ; j++) {
                        const uint32_t k = lane + 32u * j;
                        /* e = 0 gives u_S = 0 whatever v is */
                        const float e = acc[WIN - 1][j];
                        const float u = k < s.k_out && e > 0.0f
                                            ? nc_dev_s_finish(e, v2, bj[j], s.theta) : 0.0f;
                        if (k < ks)
                            po[k] = u;
                        fired |= u > 0.0f;
                    }
                    const bool any = __any_sync(0xffffffffu, fired);
                    if (occ_row && lane == 0)
                        occ_row[ox] = (uint8_t)any;
                }
#pragma unroll
                for (int tx = WIN - 1; tx > 0; tx--)
#pragma unroll
                    for (int j = 0; j < KJ; j++)
                        acc[tx][j] = acc[tx - 1][j];
#pragma unroll
                for (int j = 0; j < KJ; j++)
                    acc[0][j] = 0.0f;
            }
            __syncwarp();                       /* vr is written again */
        }
        __syncthreads();                        /* the next character's lists */
    }
}

/* ---- host side ------------------------------------------------------------- */

/* planes a lane: ks rounded up to whole warps, over 32 */
static uint32_t rows_kj(const nc_gpu_neocog_s_args *s)
{
    return (nc_dev_kstride(s->k_out) + 31u) / 32u;
}

extern "C" int nc_gpu_neocog_s_rows_check(const nc_gpu_neocog_s_args *s)
{
    if (!s || s->k_in < 1 || s->k_in >= (1u << R_CSH) || s->k_out < 1 || s->g.step != 1 ||
        (s->g.win != 6 && s->g.win != 9) || s->g.n_in < 1 || s->g.n_in > 64 ||
        s->g.n_out < 1 || s->g.n_out > 64 || s->g.n_live < 1 || rows_kj(s) > 4)
        return -EINVAL;
    /* weight offsets travel as 32-bit integers, starts in 19 bits */
    if (nc_gpu_neocog_s_rows_wfloats(s) >= 0x7fffffffu ||
        (uint64_t)s->g.n_in * s->g.n_in * s->k_in >= (1u << (32 - R_CSH)))
        return -EINVAL;
    return 0;
}

extern "C" size_t nc_gpu_neocog_s_rows_wfloats(const nc_gpu_neocog_s_args *s)
{
    return (size_t)s->k_in * (size_t)s->g.win * (size_t)s->g.win * 32u * rows_kj(s);
}

extern "C" int nc_gpu_neocog_s_rows_weights(const nc_gpu_neocog_s_args *s, float *wpad,
                                            cudaStream_t stream)
{
    if (!wpad || !s || !s->a || nc_gpu_neocog_s_rows_check(s) < 0)
        return -EINVAL;
    const size_t n = nc_gpu_neocog_s_rows_wfloats(s);
    rows_weights_kernel<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(*s, 32u * rows_kj(s),
                                                                         wpad, n);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

template <int WIN, int KJ, bool WSM>
static int rows_launch(const nc_gpu_neocog_s_args *s, const float *wpad, const uint16_t *cnt,
                       const float *q, const int2 *ent, float *out, uint8_t *occ_out,
                       uint32_t batch, uint32_t warps, cudaStream_t stream)
{
    auto kern = s_rows_kernel<WIN, KJ, WSM>;
    const uint32_t n_in = (uint32_t)s->g.n_in, n_out = (uint32_t)s->g.n_out;
    const size_t smem = rows_smem_bytes(WSM ? (uint32_t)nc_gpu_neocog_s_rows_wfloats(s) : 0u,
                                        n_in, n_out, warps);
    int r, dev = 0, sms = 0, per_sm = 0;
    if ((r = nc_dev_smem_allow((const void *)kern, smem)) < 0)
        return r;
    NC_CUDA_CHECK(cudaGetDevice(&dev));
    NC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    NC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, (int)warps * 32,
                                                                smem));
    if (per_sm < 1)
        return -E2BIG;
    const uint64_t resident = (uint64_t)per_sm * (uint64_t)sms;
    const unsigned grid = (unsigned)(batch < resident ? batch : resident);
    NC_CUDA_CHECK(nc_dev_launch(kern, dim3(grid), dim3(warps * 32u), smem, stream, batch, *s,
                                wpad, cnt, q, ent, out, occ_out, batch));
    return 0;
}

template <int WIN, bool WSM>
static int rows_launch_kj(uint32_t kj, const nc_gpu_neocog_s_args *s, const float *wpad,
                          const uint16_t *cnt, const float *q, const int2 *ent, float *out,
                          uint8_t *occ_out, uint32_t batch, uint32_t warps, cudaStream_t st)
{
    switch (kj) {
    case 1:
        return rows_launch<WIN, 1, WSM>(s, wpad, cnt, q, ent, out, occ_out, batch, warps, st);
    case 2:
        return rows_launch<WIN, 2, WSM>(s, wpad, cnt, q, ent, out, occ_out, batch, warps, st);
    case 3:
        return rows_launch<WIN, 3, WSM>(s, wpad, cnt, q, ent, out, occ_out, batch, warps, st);
    default:
        return rows_launch<WIN, 4, WSM>(s, wpad, cnt, q, ent, out, occ_out, batch, warps, st);
    }
}

extern "C" int nc_gpu_neocog_s_forward_rows(const nc_gpu_neocog_s_args *s, const float *wpad,
                                            const uint16_t *cnt, const float *q,
                                            const int2 *ent, float *out, uint8_t *occ_out,
                                            uint32_t batch, uint32_t warps, cudaStream_t stream)
{
    if (!s || !wpad || !cnt || !q || !ent || !out || batch < 1 || !s->b ||
        !(s->theta > 0.0f && s->theta < 1.0f) || nc_gpu_neocog_s_rows_check(s) < 0 ||
        (warps != 4 && warps != 8 && warps != 16) || ((uintptr_t)wpad & 15) != 0)
        return -EINVAL;
    const uint32_t kj = rows_kj(s);
    const bool wsm = nc_gpu_neocog_s_rows_wfloats(s) * 4u <= R_WSM_MAX;
    if (s->g.win == 6)
        return wsm ? rows_launch_kj<6, true>(kj, s, wpad, cnt, q, ent, out, occ_out, batch,
                                             warps, stream)
                   : rows_launch_kj<6, false>(kj, s, wpad, cnt, q, ent, out, occ_out, batch,
                                              warps, stream);
    return wsm ? rows_launch_kj<9, true>(kj, s, wpad, cnt, q, ent, out, occ_out, batch, warps,
                                         stream)
               : rows_launch_kj<9, false>(kj, s, wpad, cnt, q, ent, out, occ_out, batch, warps,
                                          stream);
}

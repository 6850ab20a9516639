/* gpu/neocog/neocog_list_rows.cu — the S-layer from the lists, one warp an output
 * row sliding along it (see neocog_list.cuh, nc_gpu_neocog_s_forward_rows).
 *
 * Layer: gpu.
 *
 * Why: the list kernel of neocog_list.cu pays a fixed cost for every output
 * position (its taps' counts, a scan, the copy into a list, a shuffle tree),
 * which outweighs the 20-75 entries a US2 window holds.  Here a warp walks
 * the input columns of one output row's band of WIN input rows once,
 * holding the numerators of the WIN outputs that the current column feeds
 * in registers (a ring of WIN slots), lane k for plane k (and k + 32, ..):
 * an entry (x, kappa) at window row ty adds x a(kappa, ty, tx, k) to the
 * slot of every tx, the weights read from a copy of a laid out
 * [kappa][ty][tx][planes] with zeros at the dead taps (no test; the tx
 * offsets are constants).  After a column the slot of tx = WIN - 1 has
 * seen its whole window: it is finished (v^2 from the row's sums of
 * squares, added up beforehand with lane = output column), written, and
 * the slots move up by one.  Every input entry is thus read WIN times
 * (once by each row whose band holds it) instead of once per window tap,
 * and an output costs only its finishing; an output whose numerators are
 * all zero, or a row whose band holds no entry, is written as zeros
 * straight away.  A block takes one character at a time: its lists
 * (counts, sums of squares, entries compacted by a block scan) go to
 * shared memory first, with a bit map of the occupied rows of each input
 * column, and its warps take the output rows from a counter.  Each output's
 * terms are added in a fixed order, with no atomics. */
#include "neocog_list.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

/* Entries of one character a block keeps in shared memory; a character
 * with more is read from the lists in global memory instead (exact
 * either way). */
#define R_ECAP 3072u     /* < 65536: starts travel in 16 bits */
/* Weights go to shared memory up to this size (else read through L1). */
#define R_WSM_MAX (150u * 1024u)

/* ---- the padded weights ---------------------------------------------------- */

/* [group][kappa][ty][tx][planes]: group g holds planes g planes .. of
 * ks(k_out), zeros at the dead taps and past ks */
static __global__ void rows_weights_kernel(const __grid_constant__ nc_gpu_neocog_s_args s,
                                           uint32_t planes, float *__restrict__ w, size_t n)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const nc_gpu_neocog_geom &g = s.g;
    const uint32_t win = (uint32_t)g.win;
    const size_t j = i / planes;
    const uint32_t tx = (uint32_t)(j % win), ty = (uint32_t)(j / win % win);
    const size_t kap = j / ((size_t)win * win) % s.k_in;
    const size_t k = j / ((size_t)win * win * s.k_in) * planes + i % planes;
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
    unsigned long long *colb;   /* [n_in]: bit iy set when (iy, ix) has an entry */
    int2 *ent;                  /* [R_ECAP]: (x, kappa WROW) */
    float *q;                   /* [n_i] */
    uint32_t *info;             /* [n_i]: start << 16 | count */
    float *vrow;                /* [warps][n_out]: the row's v^2 */
    uint32_t *scan;             /* [32] warp totals, [32] row counter */
};

static size_t rows_smem_bytes(size_t wfloats, uint32_t n_in, uint32_t n_out, uint32_t warps)
{
    return wfloats * 4u + (size_t)n_in * 8u + (size_t)R_ECAP * 8u + (size_t)n_in * n_in * 8u +
           (size_t)warps * n_out * 4u + 48u * 4u;
}

static __device__ rows_smem rows_smem_at(float *base, uint32_t wfloats, uint32_t n_in,
                                         uint32_t n_out, uint32_t warps)
{
    rows_smem m;
    m.colb = (unsigned long long *)(base + wfloats);    /* wfloats: a multiple of 32 */
    m.ent = (int2 *)(m.colb + n_in);
    m.q = (float *)(m.ent + R_ECAP);
    m.info = (uint32_t *)(m.q + n_in * n_in);
    m.vrow = (float *)(m.info + n_in * n_in);
    m.scan = (uint32_t *)(m.vrow + warps * n_out);
    return m;
}

/* acc[tx][j] += x w[tx PL + 32 j] for every slot: one entry at window row
 * ty, w pointing at the lane's plane of that row */
template <int WIN, int J, bool WSM>
static __device__ __forceinline__ void rows_entry(float x, const float *w, float (&acc)[WIN][J])
{
    constexpr int PL = 32 * J;
#pragma unroll
    for (int tx = 0; tx < WIN; tx++)
#pragma unroll
        for (int j = 0; j < J; j++)
            acc[tx][j] = fmaf(x, WSM ? w[tx * PL + 32 * j] : __ldg(w + tx * PL + 32 * j),
                              acc[tx][j]);
}

/* Block (x, y) takes characters x, x + gridDim.x, .. and planes y PL ..
 * of them; lane l owns planes l + 32 j, j < PL / 32.  (Lanes owning a
 * float2 or a float4 of planes, two or four entries at once, their sums
 * meeting at the end: fewer instructions, no faster; docs/lessons.md.) */
template <int WIN, int PL, bool WSM>
static __global__ void __launch_bounds__(512)
s_rows_kernel(const __grid_constant__ nc_gpu_neocog_s_args s, const float *__restrict__ wpad,
              const uint16_t *__restrict__ cnt, const float *__restrict__ q,
              const int2 *__restrict__ ent, float *__restrict__ out,
              uint8_t *__restrict__ occ_out, uint32_t batch, uint32_t fill)
{
    constexpr int J = PL / 32;
    constexpr uint32_t WROW = (uint32_t)WIN * WIN * PL;
    extern __shared__ float4 r_smem4[];
    const nc_gpu_neocog_geom &g = s.g;
    const uint32_t n_in = (uint32_t)g.n_in, n_out = (uint32_t)g.n_out, n_i = n_in * n_in,
                   n_o = n_out * n_out, kin = s.k_in, ks = nc_dev_kstride(s.k_out);
    const uint32_t nt = blockDim.x, nw = nt >> 5, tid = threadIdx.x, warp = tid >> 5,
                   lane = tid & 31u, c0 = blockIdx.y * PL;
    const bool one_group = gridDim.y == 1;
    const int pad = g.pad;
    const uint32_t wfloats = WSM ? kin * WROW : 0u;
    const rows_smem m = rows_smem_at((float *)r_smem4, wfloats, n_in, n_out, nw);
    const float *wg = wpad + (size_t)blockIdx.y * kin * WROW;
    /* the weights are the model's, not the previous layer's output: they
     * may be copied before that layer ends */
    if constexpr (WSM) {
        const float4 *src = (const float4 *)wg;
        for (uint32_t i = tid; i < wfloats / 4u; i += nt)
            r_smem4[i] = __ldg(src + i);
    }
    float bj[J];
#pragma unroll
    for (int j = 0; j < J; j++) {
        const uint32_t k = c0 + lane + 32u * j;
        bj[j] = k < ks ? __ldg(s.b + k) : 0.0f;
    }
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();
    const float *w_base = (WSM ? (const float *)r_smem4 : wg) + lane;
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
            const uint32_t incl = nc_dev_warp_scan(c, lane);
            if (lane == 31)
                m.scan[warp] = incl;
            __syncthreads();
            if (warp == 0) {
                const uint32_t v = nc_dev_warp_scan(lane < nw ? m.scan[lane] : 0u, lane);
                if (lane < nw)
                    m.scan[lane] = v;
            }
            __syncthreads();
            /* the start is only read when it fits (compact below) */
            if (p < n_i)
                m.info[p] = (run + (warp ? m.scan[warp - 1] : 0u) + incl - c) << 16 | c;
            run += m.scan[nw - 1];
            __syncthreads();                    /* scan[] is written again */
        }
        const bool compact = run <= R_ECAP;
        const int2 *eb = ent + (size_t)b * n_i * kin;
        if (compact)
            for (uint32_t p = tid; p < n_i; p += nt) {
                const uint32_t inf = m.info[p], c = inf & 0xffffu;
                const int2 *src = eb + (size_t)p * kin;
                int2 *dst = m.ent + (inf >> 16);
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
            float *orow = out + ((size_t)b * n_o + (size_t)oy * n_out) * ks;
            uint8_t *occ_row = occ_out ? occ_out + (size_t)b * n_o + (size_t)oy * n_out : NULL;
            /* a band of input rows with no entry: the row is zeros */
            const unsigned long long win_bits = (1ull << WIN) - 1ull;
            const unsigned long long bandm = iy0 >= 0 ? win_bits << iy0 : win_bits >> -iy0;
            bool hit = false;
            for (uint32_t ix = lane; ix < n_in; ix += 32u)
                hit |= (m.colb[ix] & bandm) != 0ull;
            if (!__any_sync(0xffffffffu, hit)) {
                /* no block of planes fires here: occupancy 0 for the row */
                for (uint32_t i = lane; fill && i < n_out * (PL / 4u); i += 32u) {
                    const uint32_t kk = c0 + 4u * (i % (PL / 4u));
                    if (kk < ks)
                        *(float4 *)(orow + (size_t)(i / (PL / 4u)) * ks + kk) =
                            make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                }
                if (occ_row && one_group)
                    for (uint32_t ox = lane; ox < n_out; ox += 32u)
                        occ_row[ox] = 0;
                continue;
            }
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
            float acc[WIN][J];
#pragma unroll
            for (int tx = 0; tx < WIN; tx++)
#pragma unroll
                for (int j = 0; j < J; j++)
                    acc[tx][j] = 0.0f;
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
                        const uint32_t inf = m.info[p], c = inf & 0xffffu;
                        const float *wr = w_base + ty * (WIN * PL);
                        if (compact) {
                            const int2 *ep = m.ent + (inf >> 16);
#pragma unroll 2
                            for (uint32_t e = 0; e < c; e++) {
                                const int2 en = ep[e];
                                rows_entry<WIN, J, WSM>(__int_as_float(en.x), wr + en.y, acc);
                            }
                        } else {
                            const int2 *ep = eb + (size_t)p * kin;
                            for (uint32_t e = 0; e < c; e++) {
                                const int2 en = __ldg(ep + e);
                                rows_entry<WIN, J, WSM>(__int_as_float(en.x),
                                                        wr + (size_t)en.y * WROW, acc);
                            }
                        }
                    }
                }
                /* slot WIN - 1 has its whole window: finish it (e = 0
                 * gives u_S = 0 whatever v is) */
                const int ox = ix + pad - (WIN - 1);
                if (ox >= 0 && ox < (int)n_out) {
                    float *po = orow + (size_t)ox * ks + c0 + lane;
                    bool pos = false;
#pragma unroll
                    for (int j = 0; j < J; j++)
                        pos |= acc[WIN - 1][j] > 0.0f;
                    bool any = false;
                    if (__any_sync(0xffffffffu, pos)) {
                        const float v2 = vr[ox];
                        bool fired = false;
#pragma unroll
                        for (int j = 0; j < J; j++) {
                            const uint32_t k = c0 + lane + 32u * j;
                            const float e = acc[WIN - 1][j];
                            const float u = k < s.k_out && e > 0.0f
                                                ? nc_dev_s_finish(e, v2, bj[j], s.theta) : 0.0f;
                            if (k < ks)
                                po[32 * j] = u;
                            fired |= u > 0.0f;
                        }
                        any = __any_sync(0xffffffffu, fired);
                    } else if (fill || !one_group) {
                        /* (with several blocks of planes another may fire
                         * here: then these planes are read) */
#pragma unroll
                        for (int j = 0; j < J; j++)
                            if (c0 + lane + 32u * j < ks)
                                po[32 * j] = 0.0f;
                    }
                    /* with several blocks of planes the launcher cleared
                     * the map and any block that fires sets it */
                    if (occ_row && lane == 0 && (one_group || any))
                        occ_row[ox] = (uint8_t)any;
                }
#pragma unroll
                for (int tx = WIN - 1; tx > 0; tx--)
#pragma unroll
                    for (int j = 0; j < J; j++)
                        acc[tx][j] = acc[tx - 1][j];
#pragma unroll
                for (int j = 0; j < J; j++)
                    acc[0][j] = 0.0f;
            }
            __syncwarp();                       /* vr is written again */
        }
        __syncthreads();                        /* the next character's lists */
    }
}

/* ---- host side ------------------------------------------------------------- */

static uint32_t rows_groups(const nc_gpu_neocog_s_args *s, uint32_t planes)
{
    return (nc_dev_kstride(s->k_out) + planes - 1) / planes;
}

extern "C" int nc_gpu_neocog_s_rows_check(const nc_gpu_neocog_s_args *s, uint32_t planes)
{
    if (!s || s->k_in < 1 || s->k_in > 0xffffu || s->k_out < 1 || s->g.step != 1 ||
        (s->g.win != 6 && s->g.win != 9) || s->g.n_in < 1 || s->g.n_in > 64 ||
        s->g.n_out < 1 || s->g.n_out > 64 || s->g.n_live < 1 || s->g.n_live > 96 ||
        (planes != 32 && planes != 64 && planes != 96 && planes != 128) ||
        rows_groups(s, planes) > 65535u)
        return -EINVAL;
    /* a block's weight offsets (kappa WIN^2 + iy WIN) planes travel as
     * 32-bit integers */
    if (((uint64_t)s->k_in * s->g.win + s->g.n_in) * s->g.win * planes >= 0x7fffffffu)
        return -EINVAL;
    return 0;
}

extern "C" size_t nc_gpu_neocog_s_rows_wfloats(const nc_gpu_neocog_s_args *s, uint32_t planes)
{
    return (size_t)rows_groups(s, planes) * s->k_in * (size_t)s->g.win * (size_t)s->g.win *
           planes;
}

extern "C" int nc_gpu_neocog_s_rows_weights(const nc_gpu_neocog_s_args *s, uint32_t planes,
                                            float *wpad, cudaStream_t stream)
{
    if (!wpad || !s || !s->a || nc_gpu_neocog_s_rows_check(s, planes) < 0)
        return -EINVAL;
    const size_t n = nc_gpu_neocog_s_rows_wfloats(s, planes);
    if ((n + 255) / 256 > 0x7fffffffu)
        return -E2BIG;
    rows_weights_kernel<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(*s, planes, wpad, n);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

template <int WIN, int PL, bool WSM>
static int rows_launch(const nc_gpu_neocog_s_args *s, const float *wpad, const uint16_t *cnt,
                       const float *q, const int2 *ent, float *out, uint8_t *occ_out,
                       uint32_t batch, uint32_t warps, uint32_t fill, cudaStream_t stream)
{
    auto kern = s_rows_kernel<WIN, PL, WSM>;
    const uint32_t n_in = (uint32_t)s->g.n_in, n_out = (uint32_t)s->g.n_out;
    const uint32_t groups = rows_groups(s, PL);
    const size_t smem = rows_smem_bytes(WSM ? (size_t)s->k_in * WIN * WIN * PL : 0u, n_in,
                                        n_out, warps);
    int r, dev = 0, sms = 0, per_sm = 0;
    if ((r = nc_dev_smem_allow((const void *)kern, smem)) < 0)
        return r;
    NC_CUDA_CHECK(cudaGetDevice(&dev));
    NC_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    NC_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, (int)warps * 32,
                                                                smem));
    if (per_sm < 1)
        return -E2BIG;
    /* enough blocks to fill the device once, each looping over characters */
    const uint64_t resident = (uint64_t)per_sm * (uint64_t)sms;
    uint64_t gx = (resident + groups - 1) / groups;
    if (gx > batch)
        gx = batch;
    if (occ_out && groups > 1)
        NC_CUDA_CHECK(cudaMemsetAsync(occ_out, 0, (size_t)batch * n_out * n_out, stream));
    NC_CUDA_CHECK(nc_dev_launch(kern, dim3((unsigned)gx, groups), dim3(warps * 32u), smem,
                                stream, batch, *s, wpad, cnt, q, ent, out, occ_out, batch, fill));
    return 0;
}

template <int WIN, bool WSM>
static int rows_launch_pl(uint32_t planes, const nc_gpu_neocog_s_args *s, const float *wpad,
                          const uint16_t *cnt, const float *q, const int2 *ent, float *out,
                          uint8_t *occ_out, uint32_t batch, uint32_t warps, uint32_t fill,
                          cudaStream_t st)
{
    switch (planes) {
    case 32:
        return rows_launch<WIN, 32, WSM>(s, wpad, cnt, q, ent, out, occ_out, batch, warps,
                                         fill, st);
    case 64:
        return rows_launch<WIN, 64, WSM>(s, wpad, cnt, q, ent, out, occ_out, batch, warps,
                                         fill, st);
    case 96:
        return rows_launch<WIN, 96, WSM>(s, wpad, cnt, q, ent, out, occ_out, batch, warps,
                                         fill, st);
    default:
        return rows_launch<WIN, 128, WSM>(s, wpad, cnt, q, ent, out, occ_out, batch, warps,
                                         fill, st);
    }
}

extern "C" int nc_gpu_neocog_s_forward_rows(const nc_gpu_neocog_s_args *s, const float *wpad,
                                            const uint16_t *cnt, const float *q,
                                            const int2 *ent, float *out, uint8_t *occ_out,
                                            uint32_t batch, uint32_t warps, uint32_t planes,
                                            uint32_t w_shared, uint32_t fill,
                                            cudaStream_t stream)
{
    if (!s || !wpad || !cnt || !q || !ent || !out || batch < 1 || !s->b ||
        !(s->theta > 0.0f && s->theta < 1.0f) || nc_gpu_neocog_s_rows_check(s, planes) < 0 ||
        (warps != 4 && warps != 8 && warps != 16) || ((uintptr_t)wpad & 15) != 0 ||
        ((uintptr_t)s->b & 15) != 0 || ((uintptr_t)out & 15) != 0 || batch > 0x7fffffffu ||
        w_shared > 1 || fill > 1 || (!fill && !occ_out))
        return -EINVAL;
    /* a block's weights in shared memory where asked and they fit */
    const bool wsm = w_shared && (size_t)s->k_in * s->g.win * s->g.win * planes * 4u <= R_WSM_MAX;
    if (s->g.win == 6)
        return wsm ? rows_launch_pl<6, true>(planes, s, wpad, cnt, q, ent, out, occ_out, batch,
                                             warps, fill, stream)
                   : rows_launch_pl<6, false>(planes, s, wpad, cnt, q, ent, out, occ_out, batch,
                                              warps, fill, stream);
    return wsm ? rows_launch_pl<9, true>(planes, s, wpad, cnt, q, ent, out, occ_out, batch,
                                         warps, fill, stream)
               : rows_launch_pl<9, false>(planes, s, wpad, cnt, q, ent, out, occ_out, batch,
                                          warps, fill, stream);
}

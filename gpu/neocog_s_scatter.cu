/* gpu/neocog_s_scatter.cu — the S-layer for large batches by scattering
 * each input position's non-zero planes (see neocog_list.cuh).
 *
 * Layer: gpu.  The list kernel (neocog_list.cu) gathers: every output
 * position assembles its window's entries, so each input entry is handled
 * once for each of the ~32 windows that hold it, and each window pays for
 * its list.  Here each entry is read once per block that needs it, and the
 * 32 windows become the 32 lanes of a warp.  A block takes one character,
 * a band of R output rows and kq float4 of the planes (kq warps, warp f
 * owning float4 f), with the band's numerators [kq][R n_out] float4 and
 * v^2 [R n_out] in shared memory:
 *  1. the occupied input positions whose windows reach the band are listed
 *     in ascending order (ballot + a scan of the warps' counts), each as
 *     (iy, ix, its entry count), and their entries copied to shared memory
 *     (up to SS_CAP_ENT; past that the warps read them from global memory);
 *  2. warp f runs down that list two positions at a time; for each, lane t
 *     (tap t, in rounds of 32) is the output position iy + pad - ty,
 *     ix + pad - tx when that lies in the band, sums x a(t, kappa, planes
 *     4f .. 4f + 3) over the position's entries in registers (16-byte
 *     weight loads, the two positions' in flight together), then adds that
 *     to its output's numerator, first position first; warp 0 also adds
 *     c(t) q to v^2;
 *  3. u_S = s_finish(e, v^2, b) for the band's positions, 16-byte stores,
 *     the occupancy byte (with several plane blocks the launcher cleared the
 *     map and any block that fires sets it).
 * A numerator belongs to one warp and its terms come in a fixed order
 * (ascending input position, each position's planes in ascending order), so
 * no atomics and the same bits every launch; every output cell is written
 * once. */
#include "neocog_list.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

#define SS_MAX_KQ 32u
/* Entries a block stages in shared memory before its warps run (more, and
 * the warps read them from global memory instead). */
#define SS_CAP_ENT 2048u

/* rows of the input a band of rows oy_lo .. oy_hi - 1 reads */
static __host__ __device__ __forceinline__ int ss_rows_in(int R, int win)
{
    return R - 1 + win;
}

/* numerators [kq][R n_out] float4, the staged entries [SS_CAP_ENT] int2,
 * v^2 [R n_out], the listed positions and their first entries [2][rows_in
 * n_in], the warps' counts [SS_MAX_KQ + 1], the tap table: packed (ty, tx)
 * [nl] and c [nl] */
static size_t ss_smem(const nc_gpu_neocog_s_args *s, uint32_t R, uint32_t kq)
{
    const size_t nb = (size_t)R * s->g.n_out;
    const size_t nin = (size_t)ss_rows_in((int)R, s->g.win) * s->g.n_in;
    return kq * nb * sizeof(float4) + SS_CAP_ENT * sizeof(int2) + nb * sizeof(float) +
           (2 * nin + SS_MAX_KQ + 1 + 2 * (size_t)s->g.n_live) * sizeof(int);
}

/* a block-wide exclusive scan step: v of each thread, its exclusive
 * prefix returned, the block's total in wsum[SS_MAX_KQ]; every thread
 * calls it (two barriers, and wsum is free again only after a third) */
static __device__ __forceinline__ int ss_scan(int v, int *wsum, int lane, int warp, int n_warps)
{
    int incl = v;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d)
            incl += y;
    }
    if (lane == 31)
        wsum[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        const int w = lane < n_warps ? wsum[lane] : 0;
        int wi = w;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, wi, d);
            if (lane >= d)
                wi += y;
        }
        if (lane < n_warps)
            wsum[lane] = wi - w;
        if (lane == 31)
            wsum[SS_MAX_KQ] = wi;
    }
    __syncthreads();
    return wsum[warp] + incl - v;
}

/* acc += x a4[off] over the entries e[0 .. c - 1] (x, off) where valid */
static __device__ __forceinline__ void ss_fma(float4 &acc, const int2 *e, int j, int c, bool valid,
                                              const float4 *__restrict__ a4, int toff)
{
    if (j < c) {
        const int2 en = e[j];
        if (valid)
            nc_dev_fma4(__int_as_float(en.x), __ldg(a4 + en.y + toff), acc);
    }
}

/* num[o] += e for the lanes whose output is in the band */
static __device__ __forceinline__ void ss_add(float4 *num, float *v2s, bool valid, int o, float4 e,
                                              bool v2_too, float cw, float qv)
{
    if (valid) {
        float4 acc = num[o];
        acc.x += e.x;
        acc.y += e.y;
        acc.z += e.z;
        acc.w += e.w;
        num[o] = acc;
        if (v2_too)
            v2s[o] = fmaf(cw, qv, v2s[o]);
    }
}

static __global__ void __launch_bounds__(SS_MAX_KQ * 32)
s_scatter_kernel(const __grid_constant__ nc_gpu_neocog_s_args s, const uint16_t *__restrict__ cnt,
                 const float *__restrict__ q, const int2 *__restrict__ ent,
                 float *__restrict__ out, uint8_t *__restrict__ occ_out, uint32_t R,
                 uint32_t n_band)
{
    extern __shared__ __align__(16) float4 ss_num[];
    const nc_gpu_neocog_geom &g = s.g;
    const int n_in = g.n_in, n_out = g.n_out, pad = g.pad, win = g.win, nl = g.n_live;
    const int n_i = n_in * n_in, n_o = n_out * n_out, kin = (int)s.k_in;
    const int ks4 = (int)(nc_dev_kstride(s.k_out) / 4u);
    const int kq = (int)(blockDim.x >> 5);
    const int nb = (int)R * n_out;
    int2 *sment = (int2 *)(ss_num + (size_t)kq * nb);
    float *v2s = (float *)(sment + SS_CAP_ENT);
    int *plist = (int *)(v2s + nb);
    int *pent = plist + ss_rows_in((int)R, win) * n_in;
    int *wsum = pent + ss_rows_in((int)R, win) * n_in;
    int *tyx = wsum + SS_MAX_KQ + 1;
    float *cw = (float *)(tyx + nl);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nth = blockDim.x;
    const size_t b = blockIdx.x / n_band;
    const int band = (int)(blockIdx.x - b * n_band);
    const int oy_lo = band * (int)R, oy_hi = min(oy_lo + (int)R, n_out);
    /* the input rows whose cells some window of the band holds */
    const int iy_lo = max(0, oy_lo - pad), iy_hi = min(n_in, oy_hi - 1 - pad + win);

    for (int i = tid; i < kq * nb; i += nth)
        ss_num[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = tid; i < nb; i += nth)
        v2s[i] = 0.0f;
    nc_dev_stage_taps(g, tyx, cw);
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();          /* the lists are read from here on */
    __syncthreads();

    /* 1. the occupied positions of rows iy_lo .. iy_hi - 1, ascending,
     * then where each one's entries start */
    const uint16_t *cb = cnt + b * n_i;
    const int span = (iy_hi - iy_lo) * n_in;
    int n_occ = 0;
    for (int base = 0; base < span; base += nth) {
        const int i = base + tid;
        const int c = i < span ? (int)cb[iy_lo * n_in + i] : 0;
        const int at = n_occ + ss_scan(c > 0, wsum, lane, warp, kq);
        if (c > 0) {
            const int p = iy_lo * n_in + i, iy = p / n_in;
            plist[at] = iy << 24 | (p - iy * n_in) << 16 | c;
        }
        n_occ += wsum[SS_MAX_KQ];
        __syncthreads();        /* wsum is written again */
    }
    int n_ent = 0;
    for (int base = 0; base < n_occ; base += nth) {
        const int i = base + tid;
        const int c = i < n_occ ? plist[i] & 0xffff : 0;
        const int at = n_ent + ss_scan(c, wsum, lane, warp, kq);
        if (i < n_occ)
            pent[i] = at;
        n_ent += wsum[SS_MAX_KQ];
        __syncthreads();
    }
    /* the entries themselves, when they fit: a warp a position */
    const int2 *eb = ent + b * (size_t)n_i * kin;
    const bool staged = n_ent <= (int)SS_CAP_ENT;
    if (staged) {
        for (int i = warp; i < n_occ; i += kq) {
            const int pk = plist[i];
            const int p = (pk >> 24) * n_in + ((pk >> 16) & 0xff), c = pk & 0xffff;
            for (int j = lane; j < c; j += 32)
                sment[pent[i] + j] = __ldg(eb + (size_t)p * kin + j);
        }
        __syncthreads();
    }

    /* 2. warp f scatters float4 f of the block's planes, two positions at
     * a time (their loads in flight together, their sums added one after
     * the other: they may share outputs) */
    const int k4 = (int)blockIdx.y * kq + warp;
    if (k4 < ks4) {
        const float4 *a4 = (const float4 *)s.a + k4;
        const float *qb = q + b * n_i;
        float4 *num = ss_num + (size_t)warp * nb;
        for (int i = 0; i < n_occ; i += 2) {
            const bool two = i + 1 < n_occ;
            const int pa = plist[i], pb = two ? plist[i + 1] : 0;
            const int iya = pa >> 24, ixa = (pa >> 16) & 0xff, ca = pa & 0xffff;
            const int iyb = pb >> 24, ixb = (pb >> 16) & 0xff, cb2 = two ? pb & 0xffff : 0;
            const int2 *ea = staged ? sment + pent[i] : eb + (size_t)(iya * n_in + ixa) * kin;
            const int2 *eb2 = staged ? sment + (two ? pent[i + 1] : 0)
                                     : eb + (size_t)(iyb * n_in + ixb) * kin;
            const float qa = warp == 0 ? __ldg(qb + iya * n_in + ixa) : 0.0f;
            const float qb2 = warp == 0 && two ? __ldg(qb + iyb * n_in + ixb) : 0.0f;
            for (int t0 = 0; t0 < nl; t0 += 32) {
                const int t = t0 + lane;
                int oya = -1, oxa = -1, oyb = -1, oxb = -1;
                float ct = 0.0f;
                if (t < nl) {
                    const int tp = tyx[t], ty = tp >> 16, tx = tp & 0xffff;
                    oya = iya + pad - ty;
                    oxa = ixa + pad - tx;
                    oyb = iyb + pad - ty;
                    oxb = ixb + pad - tx;
                    ct = cw[t];
                }
                const bool va = oya >= oy_lo && oya < oy_hi && oxa >= 0 && oxa < n_out;
                const bool vb = two && oyb >= oy_lo && oyb < oy_hi && oxb >= 0 && oxb < n_out;
                if (!__any_sync(0xffffffffu, va || vb))
                    continue;
                const int toff = t * ks4;
                float4 sa = make_float4(0.0f, 0.0f, 0.0f, 0.0f), sb = sa;
                const int cm = max(ca, cb2);
                for (int j = 0; j < cm; j += 2) {
                    ss_fma(sa, ea, j, ca, va, a4, toff);
                    ss_fma(sb, eb2, j, cb2, vb, a4, toff);
                    ss_fma(sa, ea, j + 1, ca, va, a4, toff);
                    ss_fma(sb, eb2, j + 1, cb2, vb, a4, toff);
                }
                ss_add(num, v2s, va, (oya - oy_lo) * n_out + oxa, sa, warp == 0, ct, qa);
                __syncwarp();
                ss_add(num, v2s, vb, (oyb - oy_lo) * n_out + oxb, sb, warp == 0, ct, qb2);
                __syncwarp();   /* the next positions may add to the same outputs */
            }
        }
    }
    __syncthreads();

    /* 3. u_S, 16-byte stores, occupancy */
    const int n_pos = (oy_hi - oy_lo) * n_out;
    const int kb = (int)blockIdx.y * kq;
    const int kn = min(kq, ks4 - kb);
    float4 *out4 = (float4 *)out;
    for (int o = tid; o < n_pos; o += nth) {
        const size_t row = b * n_o + (size_t)oy_lo * n_out + o;
        const float v2 = v2s[o];
        bool fired = false;
        for (int f = 0; f < kn; f++) {
            const float4 v = nc_dev_s_finish4b(ss_num[(size_t)f * nb + o], v2,
                                               __ldg((const float4 *)s.b + kb + f), s,
                                               4u * (uint32_t)(kb + f));
            out4[row * ks4 + kb + f] = v;
            fired |= v.x > 0.0f || v.y > 0.0f || v.z > 0.0f || v.w > 0.0f;
        }
        if (occ_out && (gridDim.y == 1 || fired))
            occ_out[row] = fired ? 1 : 0;
    }
}

extern "C" int nc_gpu_neocog_s_scatter_check(const nc_gpu_neocog_s_args *s, uint32_t rows,
                                             uint32_t planes)
{
    if (!s || rows < 1 || planes < 4 || planes % 4 != 0 || planes > 4 * SS_MAX_KQ ||
        s->g.n_out < 1 || s->g.step != 1 || s->g.n_in > 255 || s->k_out < 1)
        return -EINVAL;
    const uint32_t ks4 = nc_dev_kstride(s->k_out) / 4u;
    const uint32_t kq = planes / 4u < ks4 ? planes / 4u : ks4;
    const uint32_t R = rows < (uint32_t)s->g.n_out ? rows : (uint32_t)s->g.n_out;
    int dev = 0, max_smem = 0;
    NC_CUDA_CHECK(cudaGetDevice(&dev));
    NC_CUDA_CHECK(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    return ss_smem(s, R, kq) > (size_t)max_smem ? -E2BIG : 0;
}

extern "C" int nc_gpu_neocog_s_forward_scatter(const nc_gpu_neocog_s_args *s,
                                               const uint16_t *cnt, const float *q,
                                               const int2 *ent, float *out, uint8_t *occ_out,
                                               uint32_t batch, uint32_t rows, uint32_t planes,
                                               cudaStream_t stream)
{
    if (!s || !cnt || !q || !ent || !out || batch < 1 || s->k_in < 1 || s->k_in > 0xffffu ||
        s->k_out < 1 || s->k_out > NC_NEOCOG_MAX_PLANES || !s->a || !s->b ||
        s->g.n_out < 1 || s->g.n_live < 1 || s->g.step != 1 || s->g.n_in > 255 ||
        !(s->theta > 0.0f && s->theta < 1.0f))
        return -EINVAL;
    if (((uintptr_t)s->a & 15) != 0 || ((uintptr_t)s->b & 15) != 0 ||
        ((uintptr_t)out & 15) != 0)
        return -EINVAL;
    if (planes < 4 || planes % 4 != 0 || planes > 4 * SS_MAX_KQ || rows < 1)
        return -EINVAL;
    const uint32_t ks4 = nc_dev_kstride(s->k_out) / 4u, nl = (uint32_t)s->g.n_live;
    if ((uint64_t)s->k_in * nl * ks4 >= 0x7fffffffu)
        return -EINVAL;
    const uint32_t kq = planes / 4u < ks4 ? planes / 4u : ks4;
    const uint32_t R = rows < (uint32_t)s->g.n_out ? rows : (uint32_t)s->g.n_out;
    const uint32_t n_band = ((uint32_t)s->g.n_out + R - 1) / R;
    const uint32_t n_kc = (ks4 + kq - 1) / kq;
    const size_t smem = ss_smem(s, R, kq);
    int dev = 0, max_smem = 0;
    NC_CUDA_CHECK(cudaGetDevice(&dev));
    NC_CUDA_CHECK(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (smem > (size_t)max_smem || (uint64_t)batch * n_band > 0x7fffffffu || n_kc > 65535u)
        return -E2BIG;
    int r;
    if ((r = nc_dev_smem_allow((const void *)s_scatter_kernel, smem)) < 0)
        return r;
    const uint32_t n_o = (uint32_t)(s->g.n_out * s->g.n_out);
    if (occ_out && n_kc > 1)
        NC_CUDA_CHECK(cudaMemsetAsync(occ_out, 0, (size_t)batch * n_o, stream));
    NC_CUDA_CHECK(nc_dev_launch(s_scatter_kernel, dim3(batch * n_band, n_kc), dim3(kq * 32u),
                                smem, stream, batch, *s, cnt, q, ent, out, occ_out, R,
                                n_band));
    return 0;
}

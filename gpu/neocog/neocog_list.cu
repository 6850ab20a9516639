/* gpu/neocog/neocog_list.cu — input positions' non-zero planes as lists, and the
 * S-layer that reads them (see neocog_list.cuh).
 *
 * Layer: gpu. */
#include "neocog_list.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

/* ---- the lists --------------------------------------------------------------
 *
 * L lanes a position (k rounded up to a power of two, at most 32), 32 / L
 * positions a warp: lane kappa of a position's segment reads plane kappa,
 * a ballot masked to the segment places the non-zero ones in plane order,
 * and the segment's lanes add the squares by a butterfly. */
static __global__ void __launch_bounds__(256)
list_build_kernel(const float *__restrict__ in, const uint8_t *__restrict__ occ, size_t n,
                  uint32_t k, uint32_t stride, uint32_t mul, uint32_t l_sh,
                  uint16_t *__restrict__ cnt, float *__restrict__ q, int2 *__restrict__ ent)
{
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();
    const uint32_t lane = threadIdx.x & 31u, L = 1u << l_sh;
    const uint32_t seg_lo = lane & ~(L - 1u), sub = lane - seg_lo;
    const size_t p = ((size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) *
                         (32u >> l_sh) + (lane >> l_sh);
    const bool live = p < n && (!occ || occ[p] != 0);
    /* whole warps from here on: a position past n or unoccupied reads
     * nothing and adds zeros */
    const unsigned seg = (L == 32u ? 0xffffffffu : ((1u << L) - 1u)) << seg_lo;
    const unsigned below = seg & nc_dev_lanemask_lt();
    const float *x = in + (live ? p : 0) * stride;
    int2 *e = ent + (live ? p : 0) * k;
    uint32_t m_all = 0;
    float s = 0.0f;
    for (uint32_t k0 = 0; k0 < k; k0 += L) {
        const uint32_t kap = k0 + sub;
        const float v = live && kap < k ? __ldg(x + kap) : 0.0f;
        const unsigned m = __ballot_sync(0xffffffffu, v != 0.0f);
        if (v != 0.0f)
            e[m_all + __popc(m & below)] = make_int2(__float_as_int(v), (int)(kap * mul));
        m_all += __popc(m & seg);
        s = fmaf(v, v, s);
    }
    for (uint32_t o = L >> 1; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (p < n && sub == 0) {
        cnt[p] = (uint16_t)m_all;
        q[p] = s;
    }
}

extern "C" int nc_gpu_neocog_list_build(const float *in, const uint8_t *occ, size_t n_pos,
                                        uint32_t k, uint32_t stride, uint32_t mul,
                                        uint16_t *cnt, float *q, int2 *ent, uint32_t batch,
                                        cudaStream_t stream)
{
    if (!in || !cnt || !q || !ent || batch < 1 || n_pos < 1 || k < 1 || k > 0xffffu ||
        stride < k || ((uintptr_t)in & 15) || (uint64_t)(k - 1) * mul > 0x7fffffffu)
        return -EINVAL;
    /* lanes a position: k rounded up to a power of two, at most 32 */
    const uint32_t l_sh = k >= 32u ? 5u : k == 1u ? 0u : 32u - (uint32_t)__builtin_clz(k - 1u);
    const size_t n = (size_t)batch * n_pos;
    const size_t per_block = 8u * (32u >> l_sh);
    const size_t n_blocks = (n + per_block - 1) / per_block;
    if (n_blocks > 0x7fffffffu)
        return -E2BIG;
    NC_CUDA_CHECK(nc_dev_launch(list_build_kernel, dim3((unsigned)n_blocks), dim3(256), 0,
                                stream, batch, in, occ, n, k, stride, mul, l_sh, cnt, q,
                                ent));
    return 0;
}

/* ---- the S-layer from the lists ------------------------------------------- */

/* Entries a warp lists before its lanes run down them; a window with more
 * (the shipped net's US4: about 700) is taken in slices of this many, so
 * any density is exact. */
#define L_CAP 256u
/* Warps (output positions) a block. */
#define L_WARPS 8u

/* acc[f] += x * a4[off + f Lk] over the listed entries (x, off) i0, i0 + G,
 * .. below n; U entries' loads in flight; fok[f]: the lane owns float4 f */
template <int F>
static __device__ __forceinline__ void l_run(const float2 *lst, uint32_t n, uint32_t i0,
                                             uint32_t G, const float4 *__restrict__ a4,
                                             uint32_t Lk, const bool *fok, float4 *acc)
{
    constexpr int U = F >= 4 ? 2 : 4;
    uint32_t i = i0;
    for (; i + (U - 1) * G < n; i += U * G) {
        float2 p[U];
        float4 v[U][F];
#pragma unroll
        for (int u = 0; u < U; u++)
            p[u] = lst[i + u * G];
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int f = 0; f < F; f++)
                v[u][f] = fok[f] ? __ldg(a4 + __float_as_int(p[u].y) + f * Lk)
                                 : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int f = 0; f < F; f++)
                nc_dev_fma4(p[u].x, v[u][f], acc[f]);
    }
    for (; i < n; i += G) {
        const float2 p = lst[i];
#pragma unroll
        for (int f = 0; f < F; f++)
            if (fok[f])
                nc_dev_fma4(p.x, __ldg(a4 + __float_as_int(p.y) + f * Lk), acc[f]);
    }
}

template <int F>
static __global__ void __launch_bounds__(L_WARPS * 32)
s_list_kernel(const __grid_constant__ nc_gpu_neocog_s_args s, const uint16_t *__restrict__ cnt,
              const float *__restrict__ q, const int2 *__restrict__ ent,
              float *__restrict__ out, uint8_t *__restrict__ occ_out, uint32_t pb4,
              uint32_t Lk, uint32_t by_char, uint32_t batch)
{
    extern __shared__ float2 l_smem[];      /* [L_WARPS][L_CAP], then the tap table */
    const nc_gpu_neocog_geom &g = s.g;
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint32_t nl = (uint32_t)g.n_live, kin = s.k_in;
    const uint32_t ks = nc_dev_kstride(s.k_out), ks4 = ks / 4u;
    const int n_in = g.n_in;
    const uint32_t n_out = (uint32_t)g.n_out, n_i = (uint32_t)(n_in * n_in),
                   n_o = n_out * n_out;
    /* a block's warps: L_WARPS positions of one character, or (by_char)
     * one position of L_WARPS characters, whose windows list many of the
     * same (tap, plane) pairs, so their weight rows meet in L1 */
    const size_t b = by_char ? (size_t)blockIdx.z * L_WARPS + warp : blockIdx.z;
    const uint32_t o = by_char ? blockIdx.x : blockIdx.x * L_WARPS + warp;
    int *tyx = (int *)(l_smem + L_WARPS * L_CAP);
    float *cw = (float *)(tyx + nl);
    const int2 *gt = (const int2 *)g.taps;
    if (!gt) {
        nc_dev_stage_taps(g, tyx, cw);
        __syncthreads();
    }
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();
    if (o >= n_o || b >= batch)
        return;                                 /* whole warps */
    /* lane roles: group eg of Ge takes every Ge-th entry, its lane ql
     * owns float4 c0 + ql + f Lk of the planes */
    const uint32_t c0 = blockIdx.y * pb4;
    const uint32_t nq = min(ks4 - c0, pb4);
    const uint32_t Ge = 32u / Lk, eg = lane / Lk, ql = lane - eg * Lk;
    const bool in_grp = eg < Ge;
    bool fok[F];
#pragma unroll
    for (int f = 0; f < F; f++)
        fok[f] = in_grp && ql + f * Lk < nq;
    const int oy = (int)(o / n_out) - g.pad, ox = (int)(o % n_out) - g.pad;
    const uint16_t *cb = cnt + b * n_i;
    const float *qb = q + b * n_i;
    const int2 *eb = ent + b * n_i * kin;
    const float4 *a4 = (const float4 *)s.a + c0 + ql;
    float2 *lst = l_smem + warp * L_CAP;
    float4 acc[F];
#pragma unroll
    for (int f = 0; f < F; f++)
        acc[f] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float v2 = 0.0f;
    bool seen = false;
    for (uint32_t t0 = 0; t0 < nl; t0 += 32u) {
        /* lane = tap: its input position's count and sum of squares */
        const uint32_t t = t0 + lane;
        uint32_t c = 0;
        int ip = 0;
        if (t < nl) {
            const int2 tw = nc_dev_tap(gt, tyx, cw, t);
            const int iy = oy + (tw.x >> 16), ix = ox + (tw.x & 0xffff);
            if (iy >= 0 && iy < n_in && ix >= 0 && ix < n_in) {
                ip = iy * n_in + ix;
                c = cb[ip];
                if (c)
                    v2 = fmaf(__int_as_float(tw.y), __ldg(qb + ip), v2);
            }
        }
        const uint32_t incl = nc_dev_warp_scan(c, lane);
        const uint32_t total = __shfl_sync(0xffffffffu, incl, 31);
        if (total == 0)
            continue;
        seen = true;
        /* the taps' entries in (tap, plane) order, L_CAP at a time, each
         * with its weight row's offset: (kappa n_live + t) ks4 */
        const uint32_t start = incl - c;
        const int2 *my = eb + (size_t)ip * kin;
        const int toff = (int)(t * ks4);
        for (uint32_t base = 0; base < total; base += L_CAP) {
            const uint32_t lo = start > base ? start : base;
            const uint32_t hi = min(start + c, base + L_CAP);
            for (uint32_t i = lo; i < hi; i++) {
                const int2 e = __ldg(my + (i - start));
                lst[i - base] = make_float2(__int_as_float(e.x), __int_as_float(e.y + toff));
            }
            __syncwarp();
            if (in_grp)
                l_run<F>(lst, min(total - base, L_CAP), eg, Ge, a4, Lk, fok, acc);
            __syncwarp();       /* the list is written again after this */
        }
    }
    const size_t row = b * n_o + o;
    float4 *po = (float4 *)(out + row * ks) + c0;
    if (!seen) {                /* e = v^2 = 0: u_S = 0 on every plane */
        for (uint32_t i = lane; i < nq; i += 32u)
            po[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (occ_out && lane == 0 && gridDim.y == 1)
            occ_out[row] = 0;
        return;
    }
    v2 = __shfl_sync(0xffffffffu, nc_dev_warp_sum(v2), 0);
    /* the groups, in a fixed tree: group 0 ends with the sums */
    for (uint32_t d = 1; d < Ge; d <<= 1) {
        const bool take = (eg & (2u * d - 1u)) == 0 && eg + d < Ge;
#pragma unroll
        for (int f = 0; f < F; f++) {
            float4 y;
            y.x = __shfl_down_sync(0xffffffffu, acc[f].x, d * Lk);
            y.y = __shfl_down_sync(0xffffffffu, acc[f].y, d * Lk);
            y.z = __shfl_down_sync(0xffffffffu, acc[f].z, d * Lk);
            y.w = __shfl_down_sync(0xffffffffu, acc[f].w, d * Lk);
            if (take) {
                acc[f].x += y.x;
                acc[f].y += y.y;
                acc[f].z += y.z;
                acc[f].w += y.w;
            }
        }
    }
    bool fired = false;
    if (eg == 0) {
#pragma unroll
        for (int f = 0; f < F; f++) {
            if (!fok[f])
                continue;
            const uint32_t q4 = ql + f * Lk, k = 4u * (c0 + q4);
            const float4 v = nc_dev_s_finish4b(acc[f], v2, __ldg((const float4 *)s.b + c0 + q4),
                                               s, k);
            po[q4] = v;
            fired |= v.x > 0.0f || v.y > 0.0f || v.z > 0.0f || v.w > 0.0f;
        }
    }
    const bool any = __any_sync(0xffffffffu, fired);
    /* one block of planes writes the map; with several, the launcher
     * cleared it and any block that fires sets it */
    if (occ_out && lane == 0 && (gridDim.y == 1 || any))
        occ_out[row] = (uint8_t)any;
}

extern "C" int nc_gpu_neocog_s_list_check(const nc_gpu_neocog_s_args *s, uint32_t f,
                                          uint32_t planes)
{
    if (!s || s->k_out < 1 || (f != 1 && f != 2 && f != 4) || planes < 4 || planes > 4096 ||
        planes % 4 != 0)
        return -EINVAL;
    const uint32_t ks4 = nc_dev_kstride(s->k_out) / 4u, nl = (uint32_t)s->g.n_live;
    /* weight offsets travel as 32-bit integers */
    if ((uint64_t)s->k_in * nl * ks4 >= 0x7fffffffu)
        return -EINVAL;
    const uint32_t pb4 = planes / 4u < ks4 ? planes / 4u : ks4;
    /* a block's planes must fit a warp: Lk = ceil(pb4 / f) lanes */
    return (pb4 + f - 1) / f > 32u ? -EINVAL : 0;
}

extern "C" int nc_gpu_neocog_s_forward_list(const nc_gpu_neocog_s_args *s, const uint16_t *cnt,
                                            const float *q, const int2 *ent, float *out,
                                            uint8_t *occ_out, uint32_t batch, uint32_t f,
                                            uint32_t planes, uint32_t by_char,
                                            cudaStream_t stream)
{
    if (!s || !cnt || !q || !ent || !out || batch < 1 || s->k_in < 1 || s->k_in > 0xffffu ||
        s->k_out < 1 || s->k_out > NC_NEOCOG_MAX_PLANES || !s->a || !s->b ||
        s->g.n_out < 1 || s->g.n_live < 1 || s->g.step != 1 ||
        !(s->theta > 0.0f && s->theta < 1.0f))
        return -EINVAL;
    if (((uintptr_t)s->a & 15) != 0 || ((uintptr_t)s->b & 15) != 0 ||
        ((uintptr_t)out & 15) != 0)
        return -EINVAL;
    if (by_char > 1 || nc_gpu_neocog_s_list_check(s, f, planes) < 0)
        return -EINVAL;
    const uint32_t ks4 = nc_dev_kstride(s->k_out) / 4u, nl = (uint32_t)s->g.n_live;
    const uint32_t pb4 = planes / 4u < ks4 ? planes / 4u : ks4;
    const uint32_t Lk = (pb4 + f - 1) / f;
    const uint32_t n_o = (uint32_t)(s->g.n_out * s->g.n_out);
    const size_t n_blocks = by_char ? n_o : (n_o + L_WARPS - 1) / L_WARPS;
    const uint32_t n_z = by_char ? (batch + L_WARPS - 1) / L_WARPS : batch;
    const uint32_t n_kc = (ks4 + pb4 - 1) / pb4;
    if (n_blocks > 0x7fffffffu || n_kc > 65535u || n_z > 65535u)
        return -E2BIG;
    const size_t smem = (size_t)L_WARPS * L_CAP * sizeof(float2) +
                        (s->g.taps ? 0 : (size_t)nl * 2u * sizeof(int));
    auto kern = f == 1 ? s_list_kernel<1> : f == 2 ? s_list_kernel<2> : s_list_kernel<4>;
    int r;
    if ((r = nc_dev_smem_allow((const void *)kern, smem)) < 0)
        return r;
    if (occ_out && n_kc > 1)
        NC_CUDA_CHECK(cudaMemsetAsync(occ_out, 0, (size_t)batch * n_o, stream));
    NC_CUDA_CHECK(nc_dev_launch(kern, dim3((unsigned)n_blocks, n_kc, n_z), dim3(L_WARPS * 32u),
                                smem, stream, batch, *s, cnt, q, ent, out, occ_out, pb4, Lk,
                                by_char, batch));
    return 0;
}

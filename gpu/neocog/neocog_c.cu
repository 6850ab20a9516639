/* gpu/neocog/neocog_c.cu — the C-layer: each plane pooled on its own through the
 * excitatory-centre / inhibitory-surround taper d, then psi; twin of
 * nc_neocog_c_forward.
 *
 * Layer: gpu.  Thread mapping: one block per (character b, row oy, P adjacent
 * output positions), nc_dev_lanes(ks) threads per position.  The block
 * builds one 64-bit mask per window row of the occupied input cells (the
 * input's occupancy map; 0 outside the input, which is the clipping) and
 * stages those cells in shared memory.  Phase 1: warp w lists position p's
 * occupied live taps (lane = window row, popc + warp scan) as (d(nu), tile
 * offset).  Phase 2: lane k sums d * in(cell, k) down that list; for ks = 8
 * or 16 the warp splits the list into slices added with shuffles.  Written
 * once, no atomics, a fixed order. */
#include "neocog_c.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

/* Widest span of input columns a block's windows may cover (one 64-bit
 * occupancy mask per window row). */
#define C_MAX_SPAN 64

static __global__ void __launch_bounds__(1024)
c_kernel(const __grid_constant__ nc_gpu_neocog_c_args c, const float *__restrict__ in,
         const uint8_t *__restrict__ occ_in, float *__restrict__ out,
         uint8_t *__restrict__ occ_out, uint32_t P)
{
    extern __shared__ float4 smem4[];
    const nc_gpu_neocog_geom &g0 = c.g;
    const uint32_t Wc = (P - 1) * g0.step + g0.win;
    float *tile = (float *)smem4;               /* [win][Wc][ks], occupied cells */
    float2 *taps = (float2 *)(tile + (size_t)g0.win * Wc * nc_dev_kstride(c.k));
                                                /* [P][nl]: (d(nu), tile offset) */
    const nc_gpu_neocog_geom &g = c.g;
    const uint32_t ks = nc_dev_kstride(c.k), nl = g.n_live, win = g.win;
    const uint32_t n_chunk = (g.n_out + P - 1) / P;
    const size_t b = blockIdx.x / (g.n_out * n_chunk);
    const uint32_t rem = blockIdx.x % (g.n_out * n_chunk);
    const int oy = rem / n_chunk, ox0 = (rem % n_chunk) * P;
    const uint32_t n_i = g.n_in * g.n_in;
    const float *inb = in + b * n_i * ks;
    const uint8_t *occb = occ_in ? occ_in + b * n_i : nullptr;
    unsigned long long *rmask = (unsigned long long *)(taps + (size_t)P * nl);  /* [win] */
    float *dw = (float *)(rmask + win);         /* [nl] */
    int *rfirst = (int *)(dw + nl);             /* [win] */
    int *rlo = rfirst + win, *rlen = rlo + win; /* [win] */
    int *cnt = rlen + win;                      /* [P] */
    int *flag = cnt + P;                        /* [P] */
    const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const uint32_t n_warps = blockDim.x >> 5;
    const int by = oy * g.step - g.pad, bx0 = ox0 * g.step - g.pad;

    for (uint32_t t = tid; t < nl; t += blockDim.x)
        dw[t] = g.w[t];
    for (uint32_t ty = tid; ty < win; ty += blockDim.x) {
        rfirst[ty] = g.row_first[ty];
        rlo[ty] = g.row_lo[ty];
        rlen[ty] = g.row_hi[ty] - g.row_lo[ty];
    }
    if (tid < P)
        flag[tid] = 0;
    /* occupancy of the block's input rows as bit masks: bit c of row ty is
     * input (by + ty, bx0 + c), 0 outside the input (that is the clipping) */
    for (uint32_t ty = warp; ty < win; ty += n_warps) {
        const int iy = by + (int)ty;
        bool o0 = false, o1 = false;
        if (iy >= 0 && iy < g.n_in) {
            const int ix0 = bx0 + (int)lane, ix1 = ix0 + 32;
            if (ix0 >= 0 && ix0 < g.n_in)
                o0 = !occb || occb[iy * g.n_in + ix0];
            if (ix1 >= 0 && ix1 < g.n_in)
                o1 = !occb || occb[iy * g.n_in + ix1];
        }
        const unsigned m0 = __ballot_sync(0xffffffffu, o0), m1 = __ballot_sync(0xffffffffu, o1);
        if (lane == 0)
            rmask[ty] = (unsigned long long)m0 | ((unsigned long long)m1 << 32);
    }
    __syncthreads();
    /* stage the occupied input cells (the others are never read) */
    {
        const uint32_t q4 = ks >> 2, n4 = win * Wc * q4;
        const float4 *in4 = (const float4 *)inb;
        float4 *tile4 = (float4 *)tile;
        for (uint32_t i = tid; i < n4; i += blockDim.x) {
            const uint32_t cell = i / q4, q = i - cell * q4;
            const uint32_t r = cell / Wc, cc = cell - r * Wc;
            if ((rmask[r] >> cc) & 1ull)
                tile4[i] = __ldg(in4 + (size_t)((by + (int)r) * g.n_in + bx0 + (int)cc) * q4 + q);
        }
    }

    /* phase 1: warp w lists positions w, w + n_warps, ...: lane = window
     * row, its occupied live taps from the mask, placed by a warp scan */
    for (uint32_t p = warp; p < P; p += n_warps) {
        const int ox = ox0 + (int)p;
        if (ox >= g.n_out)
            continue;
        uint32_t total = 0;
        float2 *tp = taps + (size_t)p * nl;
        for (uint32_t ty0 = 0; ty0 < win; ty0 += 32) {
            const uint32_t ty = ty0 + lane;
            unsigned long long bits = 0;
            if (ty < win && rlen[ty] > 0) {
                const uint32_t sh = p * g.step + rlo[ty];
                bits = (rmask[ty] >> sh) & ((1ull << rlen[ty]) - 1ull);
            }
            const uint32_t nb = __popcll(bits);
            const uint32_t pre = nc_dev_warp_scan(nb, lane);
            uint32_t at = total + pre - nb;
            total += __shfl_sync(0xffffffffu, pre, 31);
            if (bits) {
                const int row = (int)(ty * Wc + p * g.step) + rlo[ty];
                const int t0 = rfirst[ty];
                while (bits) {
                    const int bi = __ffsll((long long)bits) - 1;
                    tp[at++] = make_float2(dw[t0 + bi], __int_as_float((row + bi) * (int)ks));
                    bits &= bits - 1ull;
                }
            }
        }
        if (lane == 0)
            cnt[p] = (int)total;
    }
    __syncthreads();

    /* phase 2: lane k sums d(nu) * in(position, k) down the list */
    const uint32_t L = nc_dev_lanes(ks), S = nc_dev_slices(ks);
    const uint32_t p = tid / L, gl = tid % L;
    const uint32_t k = gl % ks, slice = S > 1 ? gl / ks : 0;
    const int ox = ox0 + p;
    if (p < P && ox < g.n_out) {                /* uniform per warp */
        const float2 *tp = taps + (size_t)p * nl;
        const int n = cnt[p];
        const float *ink = tile + (k < ks ? k : 0);
        float x0 = 0.0f, x1 = 0.0f, x2 = 0.0f, x3 = 0.0f;
        int j = slice;
        const int st = S;
        if (k < ks) {
            for (; j + 3 * st < n; j += 4 * st) {
                const float2 q0 = tp[j], q1 = tp[j + st], q2 = tp[j + 2 * st],
                             q3 = tp[j + 3 * st];
                x0 = fmaf(q0.x, ink[__float_as_int(q0.y)], x0);
                x1 = fmaf(q1.x, ink[__float_as_int(q1.y)], x1);
                x2 = fmaf(q2.x, ink[__float_as_int(q2.y)], x2);
                x3 = fmaf(q3.x, ink[__float_as_int(q3.y)], x3);
            }
            for (; j < n; j += st) {
                const float2 q = tp[j];
                x0 = fmaf(q.x, ink[__float_as_int(q.y)], x0);
            }
        }
        float x = (x0 + x1) + (x2 + x3);
        for (uint32_t o = ks; o < 32u && S > 1; o <<= 1)
            x += __shfl_xor_sync(0xffffffffu, x, o);
        if (gl < ks) {
            const float val = (k < c.k && x > 0.0f) ? x / (1.0f + x) : 0.0f;
            out[((b * g.n_out + oy) * g.n_out + ox) * ks + k] = val;
            if (val > 0.0f)
                flag[p] = 1;
        }
    }
    __syncthreads();
    if (occ_out && tid < P && ox0 + (int)tid < g.n_out)
        occ_out[(b * g.n_out + oy) * g.n_out + ox0 + tid] = (uint8_t)flag[tid];
}

static size_t c_smem(uint32_t P, uint32_t nl, uint32_t win, uint32_t step, uint32_t ks)
{
    return (size_t)P * nl * sizeof(float2) + (size_t)win * sizeof(unsigned long long) +
           (size_t)nl * sizeof(float) + 3u * win * sizeof(int) +
           2u * P * sizeof(int) +
           (size_t)win * ((P - 1) * step + win) * ks * sizeof(float);
}

extern "C" int nc_gpu_neocog_c_forward(const nc_gpu_neocog_c_args *c, const float *in,
                                       const uint8_t *occ_in, float *out,
                                       uint8_t *occ_out, uint32_t batch,
                                       uint32_t per_block, cudaStream_t stream)
{
    if (!c || !in || !out || batch < 1 || c->k < 1 || c->k > NC_NEOCOG_MAX_PLANES ||
        c->g.n_out < 1 || c->g.win > 32 || c->g.step < 1)
        return -EINVAL;
    const uint32_t ks = nc_dev_kstride(c->k), L = nc_dev_lanes(ks);
    const uint32_t step = (uint32_t)c->g.step, win = (uint32_t)c->g.win;
    /* default: about 256 threads, no wider than the masks allow */
    uint32_t P = per_block ? per_block : (256u / L > 0 ? 256u / L : 1u);
    const uint32_t p_span = (C_MAX_SPAN - win) / step + 1;
    if (P > p_span)
        P = p_span;
    if (P > (uint32_t)c->g.n_out)
        P = (uint32_t)c->g.n_out;
    if (P < 1 || P > 64 || P * L > 1024 || win > C_MAX_SPAN)
        return -EINVAL;
    const uint32_t nc0 = (c->g.n_out + P - 1) / P;
    P = (c->g.n_out + nc0 - 1) / nc0;           /* even chunks */
    const uint32_t n_chunk = (c->g.n_out + P - 1) / P;
    const size_t n_blocks = (size_t)batch * c->g.n_out * n_chunk;
    const size_t smem = c_smem(P, c->g.n_live, win, step, ks);
    if (n_blocks > 0x7fffffffu)
        return -EINVAL;
    int r = nc_dev_smem_allow((const void *)c_kernel, smem);
    if (r < 0)
        return r;
    c_kernel<<<(unsigned)n_blocks, P * L, smem, stream>>>(*c, in, occ_in, out, occ_out, P);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

/* ---- the direct kernel (NC_GPU_NEOCOG_C_DIRECT) ------------------------------
 *
 * One warp per strip of up to P adjacent output positions of one output row
 * of one character, P such that the strip's union window is at most 32
 * input columns wide (UC1: 8, UC2: 7..10, UC3: 13).  No block-wide staging
 * and no __syncthreads in the loop: every warp runs on its own.
 *  1. lane = window column: one ballot per window row of the input's
 *     occupancy map gives lane ty the 32-bit mask of occupied input cells of
 *     window row ty (0 outside the input: that is core's edge clipping).  A
 *     strip whose masks are all 0 is written as exact zeros (psi(0) = 0).
 *  2. per position: lane ty shifts its mask to the position's live taps of
 *     row ty (the circular mask's run row_lo..row_hi), popc + warp scan
 *     place them in the warp's list in shared memory as (d(nu), offset of
 *     the input cell in float4).  No occupied tap: zeros.
 *  3. lanes = (slice s, float4 q of the planes): lane (s, q) sums
 *     d * in(cell, 4q..4q+3) over entries s, s + S, ... straight from
 *     global memory (16-byte loads; the entries' cells are read by 32 / Q
 *     taps at once, contiguous per tap), then a shuffle tree over the
 *     slices, psi, one 16-byte store per q, occupancy by ballot.
 * Exact skips only (an unoccupied input adds +0); a fixed order, no
 * atomics, every output cell written once. */

#define CD_MAX_WARPS 8

static __global__ void __launch_bounds__(CD_MAX_WARPS * 32, 5)
c_direct_kernel(const __grid_constant__ nc_gpu_neocog_c_args c, const float *__restrict__ in,
                const uint8_t *__restrict__ occ_in, float *__restrict__ out,
                uint8_t *__restrict__ occ_out, uint32_t P, uint32_t n_strip, size_t n_items,
                nc_gpu_neocog_lists ls)
{
    /* each warp's list [n_live], then d [n_live], sized by the launch: a
     * block of UC2 (172 taps) takes 11.7 KB instead of the 21.8 KB that
     * NC_GPU_NEOCOG_MAX_TAPS would, so more blocks fit an SM (H200, 1024
     * characters: UC1 0.732 -> 0.672, UC2 0.288 -> 0.247 us a character) */
    extern __shared__ float2 s_dyn[];
    const nc_gpu_neocog_geom &g = c.g;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int nl = g.n_live, win = g.win, step = g.step, n_in = g.n_in, n_out = g.n_out;
    float *s_d = (float *)(s_dyn + (size_t)(blockDim.x >> 5) * nl);
    for (int t = tid; t < nl; t += blockDim.x)
        s_d[t] = g.w[t];
    /* lane ty's row of the circular mask, kept in registers */
    int rlo = 0, rlen = 0, rfirst = 0;
    if (lane < win) {
        rlo = g.row_lo[lane];
        rlen = g.row_hi[lane] - g.row_lo[lane];
        rfirst = g.row_first[lane];
    }
    const unsigned lenmask = rlen >= 32 ? 0xffffffffu : (1u << rlen) - 1u;
    __syncthreads();
    const size_t item = (size_t)blockIdx.x * (blockDim.x >> 5) + warp;
    if (item >= n_items)
        return;                                 /* whole warps only */
    const int Q = (int)(nc_dev_kstride(c.k) >> 2);     /* float4 per position */
    const int QW = Q < 32 ? Q : 32, S = 32 / QW;
    const int ql = lane % QW, sl = lane / QW;
    const size_t row = item / n_strip;          /* b * n_out + oy */
    const int strip = (int)(item - row * n_strip);
    const size_t b = row / (size_t)n_out;
    const int oy = (int)(row - b * n_out);
    const int ox0 = strip * (int)P;
    const int np = min((int)P, n_out - ox0);
    const int by = oy * step - g.pad, bx0 = ox0 * step - g.pad;
    const size_t n_i = (size_t)n_in * n_in;
    const float4 *in4 = (const float4 *)in + b * n_i * Q;
    const uint8_t *occb = occ_in ? occ_in + b * n_i : nullptr;
    float4 *out4 = (float4 *)out + (row * n_out + ox0) * (size_t)Q;
    uint8_t *occo = occ_out ? occ_out + row * n_out + ox0 : nullptr;

    /* 1. occupancy masks of the window rows: bit c of lane ty's mask is
     * input (by + ty, bx0 + c) */
    const int span = (np - 1) * step + win;
    const int ix = bx0 + lane;
    const bool colok = lane < span && ix >= 0 && ix < n_in;
    const int ty_lo = by < 0 ? -by : 0;
    const int ty_hi = min(win, n_in - by);
    unsigned mymask = 0;
    for (int ty = ty_lo; ty < ty_hi; ty += 4) {
        bool o[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int r = ty + u;
            o[u] = colok && r < ty_hi && (!occb || occb[(by + r) * n_in + ix] != 0);
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const unsigned m = __ballot_sync(0xffffffffu, o[u]);
            if (lane == ty + u)
                mymask = m;
        }
    }
    if (__ballot_sync(0xffffffffu, mymask != 0u) == 0u) {
        const float4 z = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (int i = lane; i < np * Q; i += 32)
            out4[i] = z;
        if (occo && lane < np)
            occo[lane] = 0;
        if (ls.cnt && lane < np) {
            ls.cnt[row * n_out + ox0 + lane] = 0;
            ls.q[row * n_out + ox0 + lane] = 0.0f;
        }
        return;
    }

    float2 *list = s_dyn + (size_t)warp * nl;
    const int rowcell = (by + lane) * n_in + bx0;       /* lane's input row, column bx0 */
    for (int p = 0; p < np; p++) {
        /* 2. the position's occupied live taps */
        const int sh = p * step + rlo;
        const unsigned bits = rlen > 0 ? (mymask >> sh) & lenmask : 0u;
        const int nb = __popc(bits);
        const int pre = (int)nc_dev_warp_scan((uint32_t)nb, (uint32_t)lane);
        const int total = __shfl_sync(0xffffffffu, pre, 31);
        float4 *po = out4 + (size_t)p * Q;
        if (total == 0) {
            const float4 z = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            for (int i = lane; i < Q; i += 32)
                po[i] = z;
            if (occo && lane == 0)
                occo[p] = 0;
            if (ls.cnt && lane == 0) {
                ls.cnt[row * n_out + ox0 + p] = 0;
                ls.q[row * n_out + ox0 + p] = 0.0f;
            }
            continue;
        }
        {
            int at = pre - nb;
            unsigned bb = bits;
            while (bb) {
                const int bi = __ffs(bb) - 1;
                list[at++] = make_float2(s_d[rfirst + bi],
                                         __int_as_float((rowcell + sh + bi) * Q));
                bb &= bb - 1u;
            }
        }
        __syncwarp();
        /* 3. lane (sl, q) sums down entries sl, sl + S, ... */
        bool fired = false;
        /* the position's list: entries so far, this lane's squares */
        const size_t lp = row * n_out + ox0 + p;
        int l_n = 0;
        float l_ss = 0.0f;
        for (int q0 = 0; q0 < Q; q0 += QW) {
            const int q = q0 + ql;
            const bool act = sl < S && q < Q;
            float4 a0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), a1 = a0;
            if (act) {
                int j = sl;
                for (; j + S < total; j += 2 * S) {
                    const float2 e0 = list[j], e1 = list[j + S];
                    const float4 v0 = __ldg(in4 + __float_as_int(e0.y) + q);
                    const float4 v1 = __ldg(in4 + __float_as_int(e1.y) + q);
                    nc_dev_fma4(e0.x, v0, a0);
                    nc_dev_fma4(e1.x, v1, a1);
                }
                if (j < total) {
                    const float2 e0 = list[j];
                    const float4 v0 = __ldg(in4 + __float_as_int(e0.y) + q);
                    nc_dev_fma4(e0.x, v0, a0);
                }
            }
            float4 x = make_float4(a0.x + a1.x, a0.y + a1.y, a0.z + a1.z, a0.w + a1.w);
            /* slices: a shuffle tree, lane (0, q) ends with the sum */
            for (int o = 1; o < S; o <<= 1) {
                const float4 y = make_float4(__shfl_down_sync(0xffffffffu, x.x, o * QW),
                                             __shfl_down_sync(0xffffffffu, x.y, o * QW),
                                             __shfl_down_sync(0xffffffffu, x.z, o * QW),
                                             __shfl_down_sync(0xffffffffu, x.w, o * QW));
                if (sl + o < S) {
                    x.x += y.x;
                    x.y += y.y;
                    x.z += y.z;
                    x.w += y.w;
                }
            }
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (sl == 0 && q < Q) {
                v = nc_dev_psi4(x, 4 * q, (int)c.k);
                po[q] = v;
                fired |= v.x > 0.0f || v.y > 0.0f || v.z > 0.0f || v.w > 0.0f;
            }
            if (ls.cnt) {
                /* lanes 0 .. QW - 1 hold planes 4 q0 .. in order: a scan
                 * of their counts places their entries */
                const int nz = (v.x != 0.0f) + (v.y != 0.0f) + (v.z != 0.0f) + (v.w != 0.0f);
                const int incl = (int)nc_dev_warp_scan((uint32_t)nz, (uint32_t)lane);
                int at = l_n + incl - nz;
                int2 *le = ls.ent + lp * c.k;
                nc_dev_list_put(v.x, 4 * q + 0, ls.mul, le, &at, &l_ss);
                nc_dev_list_put(v.y, 4 * q + 1, ls.mul, le, &at, &l_ss);
                nc_dev_list_put(v.z, 4 * q + 2, ls.mul, le, &at, &l_ss);
                nc_dev_list_put(v.w, 4 * q + 3, ls.mul, le, &at, &l_ss);
                l_n += __shfl_sync(0xffffffffu, incl, 31);
            }
        }
        const unsigned any = __ballot_sync(0xffffffffu, fired);
        if (occo && lane == 0)
            occo[p] = any ? 1 : 0;
        if (ls.cnt) {
            const float ss = nc_dev_warp_sum(l_ss);
            if (lane == 0) {
                ls.cnt[lp] = (uint16_t)l_n;
                ls.q[lp] = ss;
            }
        }
        __syncwarp();                           /* the list is rewritten next */
    }
}

static int c_direct_forward(const nc_gpu_neocog_c_args *c, const float *in,
                            const uint8_t *occ_in, float *out, uint8_t *occ_out,
                            const nc_gpu_neocog_lists &ls, uint32_t batch, uint32_t per_block,
                            cudaStream_t stream)
{
    if (((uintptr_t)in & 15) || ((uintptr_t)out & 15) || c->g.n_live < 1 ||
        c->g.n_live > NC_GPU_NEOCOG_MAX_TAPS)
        return -EINVAL;
    const uint32_t step = (uint32_t)c->g.step, win = (uint32_t)c->g.win;
    /* positions per strip: the union window at most 32 columns */
    uint32_t P = (32u - win) / step + 1u;
    if (per_block && per_block < P)
        P = per_block;
    if (P > (uint32_t)c->g.n_out)
        P = (uint32_t)c->g.n_out;
    const uint32_t ns0 = (c->g.n_out + P - 1) / P;
    P = (c->g.n_out + ns0 - 1) / ns0;           /* even strips */
    uint32_t n_strip = (c->g.n_out + P - 1) / P;
    size_t n_items = (size_t)batch * c->g.n_out * n_strip;
    /* small batches: shorter strips, so that every SM gets warps (a warp
     * runs its strip's positions one after the other; at batch 1 UC3 would
     * otherwise be 13 warps) */
    int dev = 0, n_sm = 132;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        n_sm = 132;
    while (P > 1 && n_items < (size_t)n_sm * 32u) {
        P = (P + 1) / 2;
        const uint32_t ns1 = (c->g.n_out + P - 1) / P;
        P = (c->g.n_out + ns1 - 1) / ns1;
        n_strip = (c->g.n_out + P - 1) / P;
        n_items = (size_t)batch * c->g.n_out * n_strip;
    }
    /* warps per block: 8, fewer while that would leave SMs idle (batch 1);
     * 8 beat 4, 2 and 1 at 1024 characters (H200: UC1 0.672 /
     * 0.710 / 0.684 / 0.773 us a character) */
    uint32_t W = CD_MAX_WARPS;
    while (W > 1 && n_items < (size_t)W * 264u)
        W >>= 1;
    const size_t n_blocks = (n_items + W - 1) / W;
    if (n_blocks > 0x7fffffffu)
        return -EINVAL;
    const size_t smem = ((size_t)W * sizeof(float2) + sizeof(float)) * (size_t)c->g.n_live;
    c_direct_kernel<<<(unsigned)n_blocks, W * 32, smem, stream>>>(*c, in, occ_in, out, occ_out,
                                                                   P, n_strip, n_items, ls);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" const char *nc_gpu_neocog_c_kind_name(int kind)
{
    return kind == NC_GPU_NEOCOG_C_STAGED ? "staged"
         : kind == NC_GPU_NEOCOG_C_DIRECT ? "direct"
         : kind == NC_GPU_NEOCOG_C_TILE ? "tile"
         : kind == NC_GPU_NEOCOG_C_WARP ? "warp"
         : kind == NC_GPU_NEOCOG_C_SCATTER ? "scatter" : "?";
}

extern "C" int nc_gpu_neocog_c_forward_kind(const nc_gpu_neocog_c_args *c, int kind,
                                            const float *in, const uint8_t *occ_in,
                                            float *out, uint8_t *occ_out, uint32_t batch,
                                            uint32_t per_block, cudaStream_t stream)
{
    return nc_gpu_neocog_c_forward_lists(c, kind, in, occ_in, out, occ_out, NULL, batch,
                                         per_block, stream);
}

extern "C" int nc_gpu_neocog_c_forward_lists(const nc_gpu_neocog_c_args *c, int kind,
                                             const float *in, const uint8_t *occ_in,
                                             float *out, uint8_t *occ_out,
                                             const nc_gpu_neocog_lists *lists, uint32_t batch,
                                             uint32_t per_block, cudaStream_t stream)
{
    if ((lists && kind != NC_GPU_NEOCOG_C_DIRECT && kind != NC_GPU_NEOCOG_C_SCATTER) ||
        nc_gpu_neocog_lists_check(c, lists) < 0)
        return -EINVAL;
    const nc_gpu_neocog_lists ls = lists ? *lists : nc_gpu_neocog_lists{ NULL, NULL, NULL, 0 };
    if (kind == NC_GPU_NEOCOG_C_SCATTER)
        return nc_gpu_neocog_c_scatter_lists(c, in, occ_in, out, occ_out, lists, batch, stream);
    if (kind == NC_GPU_NEOCOG_C_STAGED)
        return nc_gpu_neocog_c_forward(c, in, occ_in, out, occ_out, batch, per_block, stream);
    if (kind == NC_GPU_NEOCOG_C_TILE)
        return nc_gpu_neocog_c_tile_forward(c, in, occ_in, out, occ_out, batch, per_block, 0,
                                            stream);
    if (kind == NC_GPU_NEOCOG_C_WARP)
        return nc_gpu_neocog_c_warp_forward(c, in, occ_in, out, occ_out, batch, per_block,
                                            stream);
    if (kind != NC_GPU_NEOCOG_C_DIRECT || !c || !in || !out || batch < 1 || c->k < 1 ||
        c->k > NC_NEOCOG_MAX_PLANES || c->g.n_out < 1 || c->g.win > 32 || c->g.win < 1 ||
        c->g.step < 1)
        return -EINVAL;
    return c_direct_forward(c, in, occ_in, out, occ_out, ls, batch, per_block, stream);
}


/* gpu/neocog_c.cu — the C-layer: each plane pooled on its own through the
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
            uint32_t pre = nb;
            for (uint32_t o = 1; o < 32; o <<= 1) {
                const uint32_t y = __shfl_up_sync(0xffffffffu, pre, o);
                if (lane >= o)
                    pre += y;
            }
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

/* gpu/neocog_c.cu — the C-layer: each plane pooled on its own through the
 * excitatory-centre / inhibitory-surround taper d, then psi; twin of
 * nc_neocog_c_forward.
 *
 * Layer: gpu.  Thread mapping: one block per (character b, row oy, P adjacent
 * output positions), nc_dev_lanes(ks) threads per position.  Phase 1: warp w
 * lists position p's clipped window taps (constant-bank axis and row tables)
 * whose input position is occupied, one ballot per window row, in tap order.  Phase 2:
 * lane k sums d[t] * in(position, k) down that list (a warp reads one input
 * position's planes, contiguous); for ks = 8 or 16 the warp splits the list
 * into slices added with shuffles.  Most S-cells are 0, so most taps drop
 * out before any plane is read.  Written once, no atomics, a fixed order. */
#include "neocog_c.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

static __global__ void c_kernel(const __grid_constant__ nc_gpu_neocog_c_args c,
                                const float *__restrict__ in,
                                const uint8_t *__restrict__ occ_in,
                                float *__restrict__ out,
                                uint8_t *__restrict__ occ_out, uint32_t P)
{
    extern __shared__ int2 taps[];      /* [P][nl]: (t, input position) */
    const nc_gpu_neocog_geom &g = c.g;
    const uint32_t ks = nc_dev_kstride(c.k), nl = g.n_live;
    const uint32_t n_chunk = (g.n_out + P - 1) / P;
    const size_t b = blockIdx.x / (g.n_out * n_chunk);
    const uint32_t rem = blockIdx.x % (g.n_out * n_chunk);
    const int oy = rem / n_chunk, ox0 = (rem % n_chunk) * P;
    const uint32_t n_i = g.n_in * g.n_in;
    const float *inb = in + b * n_i * ks;
    const uint8_t *occb = occ_in ? occ_in + b * n_i : nullptr;
    int *cnt = (int *)(taps + (size_t)P * nl);  /* [P] */
    int *flag = cnt + P;                        /* [P] */
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint32_t n_warps = blockDim.x >> 5;
    const unsigned lt = nc_dev_lanemask_lt();

    for (uint32_t p = warp; p < P; p += n_warps) {
        const int ox = ox0 + p;
        if (ox >= g.n_out)
            continue;
        const int ty0 = g.axis_t0[oy], ty1 = g.axis_t1[oy];
        const int tx0 = g.axis_t0[ox], tx1 = g.axis_t1[ox];
        const int by = oy * g.step - g.pad, bx = ox * g.step - g.pad;
        int2 *tp = taps + (size_t)p * nl;
        uint32_t n = 0;
        /* one window row per step, lanes along the row's live run (the
         * table reads are warp-uniform, so the constant bank broadcasts) */
        for (int ty = ty0; ty < ty1; ty++) {
            const int lo = max((int)g.row_lo[ty], tx0), hi = min((int)g.row_hi[ty], tx1);
            if (lo >= hi)
                continue;
            const int tx = lo + (int)lane;
            bool ok = false;
            int ip = 0;
            if (tx < hi) {
                ip = (by + ty) * g.n_in + (bx + tx);
                ok = !occb || occb[ip];
            }
            const unsigned m = __ballot_sync(0xffffffffu, ok);
            if (ok)
                tp[n + __popc(m & lt)] = make_int2(g.row_first[ty] + (tx - g.row_lo[ty]), ip);
            n += __popc(m);
        }
        if (lane == 0) {
            cnt[p] = (int)n;
            flag[p] = 0;
        }
    }
    __syncthreads();

    const uint32_t L = nc_dev_lanes(ks), S = nc_dev_slices(ks);
    const uint32_t p = threadIdx.x / L, gl = threadIdx.x % L;
    const uint32_t k = gl % ks, slice = S > 1 ? gl / ks : 0;
    const int ox = ox0 + p;
    if (p < P && ox < g.n_out) {                /* uniform per warp */
        const int2 *tp = taps + (size_t)p * nl;
        const int n = cnt[p];
        const float *ink = inb + k;
        float x0 = 0.0f, x1 = 0.0f;
        int j = slice;
        const int st = S;
        for (; j + st < n; j += 2 * st) {
            const int2 q0 = tp[j], q1 = tp[j + st];
            x0 += g.w[q0.x] * ink[(size_t)q0.y * ks];
            x1 += g.w[q1.x] * ink[(size_t)q1.y * ks];
        }
        if (j < n) {
            const int2 q = tp[j];
            x0 += g.w[q.x] * ink[(size_t)q.y * ks];
        }
        float x = x0 + x1;
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
    if (occ_out && threadIdx.x < P && ox0 + (int)threadIdx.x < g.n_out)
        occ_out[(b * g.n_out + oy) * g.n_out + ox0 + threadIdx.x] =
            (uint8_t)flag[threadIdx.x];
}

extern "C" int nc_gpu_neocog_c_forward(const nc_gpu_neocog_c_args *c, const float *in,
                                       const uint8_t *occ_in, float *out,
                                       uint8_t *occ_out, uint32_t batch,
                                       uint32_t per_block, cudaStream_t stream)
{
    if (!c || !in || !out || batch < 1 || c->k < 1 || c->k > NC_NEOCOG_MAX_PLANES ||
        c->g.n_out < 1)
        return -EINVAL;
    const uint32_t ks = nc_dev_kstride(c->k), L = nc_dev_lanes(ks);
    const uint32_t P = per_block ? per_block : (L <= 32 ? 4 : 2);
    const uint32_t n_chunk = (c->g.n_out + P - 1) / P;
    const size_t n_blocks = (size_t)batch * c->g.n_out * n_chunk;
    const size_t smem = (size_t)P * (c->g.n_live * sizeof(int2) + 2 * sizeof(int));
    if (P > 64 || P * L > 1024 || n_blocks > 0x7fffffffu)
        return -EINVAL;
    int r = nc_dev_smem_allow((const void *)c_kernel, smem);
    if (r < 0)
        return r;
    c_kernel<<<(unsigned)n_blocks, P * L, smem, stream>>>(*c, in, occ_in, out, occ_out, P);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

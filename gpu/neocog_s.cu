/* gpu/neocog_s.cu — the S-layer (seed 004 equations 1-3) in the five forms
 * of seed Table 5 plus a zero-skipping one; twin of nc_neocog_s_forward.
 *
 * Layer: gpu.  Thread mapping, per variant (b = character of the batch,
 * o = output position, k = output plane, ks = plane stride):
 *   T1      one thread per output cell (b, o, k), k fastest, so a warp reads
 *           one weight row a[kappa][t][k..] coalesced and the same input cell
 *           (broadcast); each thread sums its own v(n).  Written once, no
 *           atomics.
 *   T1-T3   one block per (b, o), one thread per plane k (T2 "skewered"), one
 *           launch for every position of every character (T3).  All threads
 *           read the same input cell at the same moment, so e_k and v(n) are
 *           summed in one pass and v stays in registers.
 *   T1-T4   one block per (b, row oy, P adjacent positions), P * ks threads
 *           (a multiple of K); the union of the P windows (win rows,
 *           P + win - 1 columns, all input planes) is staged in shared
 *           memory with zero padding, thread (p, k) gathers from it.
 *   T1-T5   as T4, but the window is clipped through the constant-bank index
 *           tables (axis_t0/axis_t1 and the per-row tap runs of the circular
 *           mask) instead of zero-padded and bounds-tested.
 *   sparse  one block per (b, oy, P positions), nc_dev_lanes(ks) threads per
 *           position.  Phase 1: warp w compacts position p's window: first
 *           the clipped taps whose input position is occupied (occupancy map
 *           of the previous layer, one ballot per window row), then their
 *           non-zero cells into a shared list of (u, weight offset), in a
 *           fixed order (ballot + popc, no atomics), summing v(n) on the way.
 *           Phase 2: lane k runs down the list, e_k += u * a[offset + k];
 *           with ks = 8 or 16 the warp splits the list into slices and adds
 *           them with shuffles.  Work scales with the non-zero inputs
 *           (~6% on digits, seed Table 8) and every lane of a warp does the
 *           same thing, so skipping costs no divergence.  Exact. */
#include "neocog_s.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

/* u_S from e and v^2 (seed eq. 1), as core's s_finish. */
static __device__ __forceinline__ float s_finish(float e, float v2, float b,
                                                 float theta)
{
    const float gain = theta / (1.0f - theta);
    const float tv = theta * sqrtf(v2);
    const float x = (1.0f + e) / (1.0f + tv * b) - 1.0f;
    return x > 0.0f ? gain * x : 0.0f;
}

/* ---- T1 ------------------------------------------------------------------- */

static __global__ void s_t1_kernel(const __grid_constant__ nc_gpu_neocog_s_args s,
                                   const float *__restrict__ in,
                                   float *__restrict__ out,
                                   uint8_t *__restrict__ occ_out, size_t n_cells)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n_cells)
        return;
    const nc_gpu_neocog_geom &g = s.g;
    const uint32_t ks = nc_dev_kstride(s.k_out), nl = g.n_live;
    const uint32_t n_o = g.n_out * g.n_out;
    const uint32_t k = i % ks;
    const size_t bo = i / ks;
    const uint32_t o = bo % n_o;
    const size_t b = bo / n_o;
    const int oy = o / g.n_out, ox = o % g.n_out;
    const float *inb = in + b * g.n_in * g.n_in * s.in_stride;
    float val = 0.0f;
    if (k < s.k_out) {
        float e = 0.0f, v2 = 0.0f;
        for (uint32_t t = 0; t < nl; t++) {
            const int iy = oy - g.pad + g.tap_y[t], ix = ox - g.pad + g.tap_x[t];
            if (iy < 0 || iy >= g.n_in || ix < 0 || ix >= g.n_in)
                continue;
            const float *u = inb + (size_t)(iy * g.n_in + ix) * s.in_stride;
            const float *a = s.a + (size_t)t * ks + k;
            float uu = 0.0f;
            for (uint32_t kap = 0; kap < s.k_in; kap++) {
                const float x = u[kap];
                uu += x * x;
                e += a[(size_t)kap * nl * ks] * x;
            }
            v2 += g.w[t] * uu;
        }
        val = s_finish(e, v2, s.b[k], s.theta);
    }
    out[i] = val;
    if (occ_out && val > 0.0f)
        occ_out[bo] = 1;    /* the launcher cleared the map first */
}

/* ---- T1-T3 ---------------------------------------------------------------- */

static __global__ void s_t3_kernel(const __grid_constant__ nc_gpu_neocog_s_args s,
                                   const float *__restrict__ in,
                                   float *__restrict__ out,
                                   uint8_t *__restrict__ occ_out)
{
    const nc_gpu_neocog_geom &g = s.g;
    const uint32_t ks = nc_dev_kstride(s.k_out), nl = g.n_live;
    const uint32_t n_o = g.n_out * g.n_out;
    const size_t bo = blockIdx.x;
    const uint32_t o = bo % n_o, k = threadIdx.x;
    const size_t b = bo / n_o;
    const int oy = o / g.n_out, ox = o % g.n_out;
    const float *inb = in + b * g.n_in * g.n_in * s.in_stride;
    float e = 0.0f, v2 = 0.0f;
    for (uint32_t t = 0; t < nl; t++) {
        const int iy = oy - g.pad + g.tap_y[t], ix = ox - g.pad + g.tap_x[t];
        if (iy < 0 || iy >= g.n_in || ix < 0 || ix >= g.n_in)
            continue;
        const float *u = inb + (size_t)(iy * g.n_in + ix) * s.in_stride;
        const float *a = s.a + (size_t)t * ks + k;
        float uu = 0.0f;
        for (uint32_t kap = 0; kap < s.k_in; kap++) {
            const float x = u[kap];         /* the same cell for every thread */
            uu += x * x;
            e += a[(size_t)kap * nl * ks] * x;
        }
        v2 += g.w[t] * uu;
    }
    const float val = k < s.k_out ? s_finish(e, v2, s.b[k], s.theta) : 0.0f;
    out[bo * ks + k] = val;
    const int any = __syncthreads_or(val > 0.0f);
    if (occ_out && k == 0)
        occ_out[bo] = (uint8_t)(any != 0);
}

/* ---- T1-T4 and T1-T5 -------------------------------------------------------- */

/* Block: character b, row oy, positions ox0 .. ox0 + P - 1.  Shared memory
 * holds the union of their windows: [win][P + win - 1][k_in]. */
template <bool TABLES>
static __global__ void s_t4_kernel(const __grid_constant__ nc_gpu_neocog_s_args s,
                                   const float *__restrict__ in,
                                   float *__restrict__ out,
                                   uint8_t *__restrict__ occ_out, uint32_t P)
{
    extern __shared__ float sm[];
    const nc_gpu_neocog_geom &g = s.g;
    const uint32_t ks = nc_dev_kstride(s.k_out), nl = g.n_live, kin = s.k_in;
    const uint32_t n_chunk = (g.n_out + P - 1) / P;
    const uint32_t W = P + g.win - 1;
    const size_t b = blockIdx.x / (g.n_out * n_chunk);
    const uint32_t rem = blockIdx.x % (g.n_out * n_chunk);
    const int oy = rem / n_chunk, ox0 = (rem % n_chunk) * P;
    const float *inb = in + b * g.n_in * g.n_in * s.in_stride;
    int *flag = (int *)(sm + g.win * W * kin);

    /* stage the union window; T4 pads with zeros, T5 leaves outside cells
     * unwritten (the clipped loops never read them) */
    for (uint32_t idx = threadIdx.x; idx < g.win * W * kin; idx += blockDim.x) {
        const uint32_t kap = idx % kin, rc = idx / kin;
        const int c = rc % W, r = rc / W;
        const int iy = oy - g.pad + r, ix = ox0 - g.pad + c;
        const bool inside = iy >= 0 && iy < g.n_in && ix >= 0 && ix < g.n_in;
        if (inside)
            sm[idx] = inb[(size_t)(iy * g.n_in + ix) * s.in_stride + kap];
        else if (!TABLES)
            sm[idx] = 0.0f;
    }
    if (threadIdx.x < P)
        flag[threadIdx.x] = 0;
    __syncthreads();

    const uint32_t p = threadIdx.x / ks, k = threadIdx.x % ks;
    const int ox = ox0 + p;
    float val = 0.0f;
    if (ox < g.n_out && k < s.k_out) {
        float e = 0.0f, v2 = 0.0f;
        if (!TABLES) {
            for (uint32_t t = 0; t < nl; t++) {
                const float *u = sm + (g.tap_y[t] * W + p + g.tap_x[t]) * kin;
                const float *a = s.a + (size_t)t * ks + k;
                float uu = 0.0f;
                for (uint32_t kap = 0; kap < kin; kap++) {
                    const float x = u[kap];
                    uu += x * x;
                    e += a[(size_t)kap * nl * ks] * x;
                }
                v2 += g.w[t] * uu;
            }
        } else {
            const int tx0 = g.axis_t0[ox], tx1 = g.axis_t1[ox];
            for (int ty = g.axis_t0[oy]; ty < g.axis_t1[oy]; ty++) {
                const int lo = max((int)g.row_lo[ty], tx0), hi = min((int)g.row_hi[ty], tx1);
                for (int tx = lo; tx < hi; tx++) {
                    const uint32_t t = g.row_first[ty] + (tx - g.row_lo[ty]);
                    const float *u = sm + (ty * W + p + tx) * kin;
                    const float *a = s.a + (size_t)t * ks + k;
                    float uu = 0.0f;
                    for (uint32_t kap = 0; kap < kin; kap++) {
                        const float x = u[kap];
                        uu += x * x;
                        e += a[(size_t)kap * nl * ks] * x;
                    }
                    v2 += g.w[t] * uu;
                }
            }
        }
        val = s_finish(e, v2, s.b[k], s.theta);
        if (val > 0.0f)
            flag[p] = 1;
    }
    if (ox < g.n_out && p < P)
        out[((b * g.n_out + oy) * g.n_out + ox) * ks + k] = val;
    __syncthreads();
    if (occ_out && threadIdx.x < P && ox0 + (int)threadIdx.x < g.n_out)
        occ_out[(b * g.n_out + oy) * g.n_out + ox0 + threadIdx.x] =
            (uint8_t)flag[threadIdx.x];
}

/* ---- sparse --------------------------------------------------------------- */

/* Shared memory per position: the occupied taps (t, input position), the
 * entry list (u, weight offset), its length, v^2 and the occupancy flag. */
static __host__ __device__ size_t s_sparse_smem(uint32_t P, uint32_t nl, uint32_t kin)
{
    return (size_t)P * ((size_t)nl * kin * sizeof(float2) + nl * sizeof(int2) +
                        4 * sizeof(int)) + nl * sizeof(float);
}

static __global__ void s_sparse_kernel(const __grid_constant__ nc_gpu_neocog_s_args s,
                                       const float *__restrict__ in,
                                       const uint8_t *__restrict__ occ_in,
                                       float *__restrict__ out,
                                       uint8_t *__restrict__ occ_out, uint32_t P)
{
    extern __shared__ float2 ent[];     /* [P][nl * kin] */
    const nc_gpu_neocog_geom &g = s.g;
    const uint32_t ks = nc_dev_kstride(s.k_out), nl = g.n_live, kin = s.k_in;
    const uint32_t cap = nl * kin;
    const uint32_t n_chunk = (g.n_out + P - 1) / P;
    const size_t b = blockIdx.x / (g.n_out * n_chunk);
    const uint32_t rem = blockIdx.x % (g.n_out * n_chunk);
    const int oy = rem / n_chunk, ox0 = (rem % n_chunk) * P;
    const uint32_t n_i = g.n_in * g.n_in;
    const float *inb = in + b * n_i * s.in_stride;
    const uint8_t *occb = occ_in ? occ_in + b * n_i : nullptr;
    int2 *taps = (int2 *)(ent + (size_t)P * cap);       /* [P][nl] */
    int *cnt = (int *)(taps + (size_t)P * nl);          /* [P] */
    float *v2s = (float *)(cnt + P);                    /* [P] */
    int *flag = (int *)(v2s + P);                       /* [P] */
    float *cw = (float *)(flag + P);                    /* [nl]: c(nu) */
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint32_t n_warps = blockDim.x >> 5;
    const unsigned lt = nc_dev_lanemask_lt();

    /* c(nu) to shared memory: phase 1 reads it per lane */
    for (uint32_t t = threadIdx.x; t < nl; t += blockDim.x)
        cw[t] = g.w[t];
    __syncthreads();

    /* phase 1: warp w compacts positions w, w + n_warps, ... */
    for (uint32_t p = warp; p < P; p += n_warps) {
        const int ox = ox0 + p;
        if (ox >= g.n_out)
            continue;
        const int ty0 = g.axis_t0[oy], ty1 = g.axis_t1[oy];
        const int tx0 = g.axis_t0[ox], tx1 = g.axis_t1[ox];
        int2 *tp = taps + (size_t)p * nl;
        uint32_t n_tap = 0;
        /* one window row per step, lanes along its live run: every table
         * read is warp-uniform (a divergent constant-bank read serialises) */
        for (int ty = ty0; ty < ty1; ty++) {
            const int lo = max((int)g.row_lo[ty], tx0), hi = min((int)g.row_hi[ty], tx1);
            if (lo >= hi)
                continue;
            const int tx = lo + (int)lane;
            bool ok = false;
            int ip = 0;
            if (tx < hi) {
                ip = (oy - g.pad + ty) * g.n_in + (ox - g.pad + tx);
                ok = !occb || occb[ip];
            }
            const unsigned m = __ballot_sync(0xffffffffu, ok);
            if (ok)
                tp[n_tap + __popc(m & lt)] =
                    make_int2(g.row_first[ty] + (tx - g.row_lo[ty]), ip);
            n_tap += __popc(m);
        }
        __syncwarp();
        float2 *ep = ent + (size_t)p * cap;
        uint32_t n = 0;
        float vv = 0.0f;
        const uint32_t n_cell = n_tap * kin;
        for (uint32_t m0 = 0; m0 < n_cell; m0 += 32) {
            const uint32_t m = m0 + lane;
            float x = 0.0f;
            int off = 0;
            if (m < n_cell) {
                const uint32_t j = m / kin, kap = m - j * kin;
                const int2 tj = tp[j];
                x = inb[(size_t)tj.y * s.in_stride + kap];
                vv += cw[tj.x] * (x * x);
                off = (int)((kap * nl + tj.x) * ks);
            }
            const unsigned mk = __ballot_sync(0xffffffffu, x != 0.0f);
            if (x != 0.0f)
                ep[n + __popc(mk & lt)] = make_float2(x, __int_as_float(off));
            n += __popc(mk);
        }
        vv = nc_dev_warp_sum(vv);
        if (lane == 0) {
            cnt[p] = (int)n;
            v2s[p] = vv;
            flag[p] = 0;
        }
    }
    __syncthreads();

    /* phase 2: lanes of position p run down its list */
    const uint32_t L = nc_dev_lanes(ks), S = nc_dev_slices(ks);
    const uint32_t p = threadIdx.x / L, gl = threadIdx.x % L;
    const uint32_t k = gl % ks, slice = S > 1 ? gl / ks : 0;
    const int ox = ox0 + p;
    const bool live = p < P && ox < g.n_out;    /* uniform per warp */
    float val = 0.0f;
    if (live) {
        const float2 *ep = ent + (size_t)p * cap;
        const int n = cnt[p];
        const float *a = s.a + k;
        float e0 = 0.0f, e1 = 0.0f, e2 = 0.0f, e3 = 0.0f;
        if (k < ks || S > 1) {
            int j = slice;
            const int st = S;
            for (; j + 3 * st < n; j += 4 * st) {
                const float2 q0 = ep[j], q1 = ep[j + st], q2 = ep[j + 2 * st], q3 = ep[j + 3 * st];
                e0 += q0.x * a[__float_as_int(q0.y)];
                e1 += q1.x * a[__float_as_int(q1.y)];
                e2 += q2.x * a[__float_as_int(q2.y)];
                e3 += q3.x * a[__float_as_int(q3.y)];
            }
            for (; j < n; j += st) {
                const float2 q = ep[j];
                e0 += q.x * a[__float_as_int(q.y)];
            }
        }
        float e = (e0 + e1) + (e2 + e3);
        for (uint32_t o = ks; o < 32u && S > 1; o <<= 1)
            e += __shfl_xor_sync(0xffffffffu, e, o);
        if (k < s.k_out && slice == 0 && gl < ks)
            val = s_finish(e, v2s[p], s.b[k], s.theta);
        if (slice == 0 && gl < ks)
            out[((b * g.n_out + oy) * g.n_out + ox) * ks + k] = val;
        if (val > 0.0f)
            flag[p] = 1;
    }
    __syncthreads();
    if (occ_out && threadIdx.x < P && ox0 + (int)threadIdx.x < g.n_out)
        occ_out[(b * g.n_out + oy) * g.n_out + ox0 + threadIdx.x] =
            (uint8_t)flag[threadIdx.x];
}

/* ---- launcher --------------------------------------------------------------- */

extern "C" uint32_t nc_gpu_neocog_s_default_block(int variant, uint32_t k_out)
{
    const uint32_t ks = nc_dev_kstride(k_out);
    switch (variant) {
    case NC_GPU_NEOCOG_T1_T4:
    case NC_GPU_NEOCOG_T1_T5:  return ks <= 16 ? 4 : ks <= 32 ? 2 : 1;
    case NC_GPU_NEOCOG_SPARSE: return ks <= 32 ? 4 : 2;
    default:                   return 1;
    }
}

extern "C" int nc_gpu_neocog_s_forward(const nc_gpu_neocog_s_args *s, const float *in,
                                       const uint8_t *occ_in, float *out,
                                       uint8_t *occ_out, uint32_t batch, int variant,
                                       uint32_t per_block, cudaStream_t stream)
{
    if (!s || !in || !out || batch < 1 || s->k_in < 1 || s->k_in > s->in_stride ||
        s->k_out < 1 || s->k_out > NC_NEOCOG_MAX_PLANES || !s->a || !s->b ||
        s->g.n_out < 1 || !(s->theta > 0.0f && s->theta < 1.0f))
        return -EINVAL;
    const uint32_t ks = nc_dev_kstride(s->k_out);
    const uint32_t n_o = (uint32_t)(s->g.n_out * s->g.n_out);
    const uint32_t P = per_block ? per_block : nc_gpu_neocog_s_default_block(variant, s->k_out);
    const uint32_t n_chunk = (s->g.n_out + P - 1) / P;
    const size_t n_blocks = (size_t)batch * s->g.n_out * n_chunk;
    if (P > 64 || n_blocks > 0x7fffffffu || (size_t)batch * n_o > 0x7fffffffu)
        return -EINVAL;
    int r;
    switch (variant) {
    case NC_GPU_NEOCOG_T1: {
        const size_t n_cells = (size_t)batch * n_o * ks;
        if (occ_out)
            NC_CUDA_CHECK(cudaMemsetAsync(occ_out, 0, (size_t)batch * n_o, stream));
        s_t1_kernel<<<(unsigned)((n_cells + 255) / 256), 256, 0, stream>>>(*s, in, out,
                                                                             occ_out, n_cells);
        break;
    }
    case NC_GPU_NEOCOG_T1_T3:
        if (ks > 1024)
            return -EINVAL;
        s_t3_kernel<<<(unsigned)((size_t)batch * n_o), ks, 0, stream>>>(*s, in, out, occ_out);
        break;
    case NC_GPU_NEOCOG_T1_T4:
    case NC_GPU_NEOCOG_T1_T5: {
        const size_t smem = (size_t)s->g.win * (P + s->g.win - 1) * s->k_in * sizeof(float) +
                            P * sizeof(int);
        if (P * ks > 1024)
            return -EINVAL;
        if (variant == NC_GPU_NEOCOG_T1_T4) {
            if ((r = nc_dev_smem_allow((const void *)s_t4_kernel<false>, smem)) < 0)
                return r;
            s_t4_kernel<false><<<(unsigned)n_blocks, P * ks, smem, stream>>>(*s, in, out,
                                                                             occ_out, P);
        } else {
            if ((r = nc_dev_smem_allow((const void *)s_t4_kernel<true>, smem)) < 0)
                return r;
            s_t4_kernel<true><<<(unsigned)n_blocks, P * ks, smem, stream>>>(*s, in, out,
                                                                            occ_out, P);
        }
        break;
    }
    case NC_GPU_NEOCOG_SPARSE: {
        const size_t smem = s_sparse_smem(P, s->g.n_live, s->k_in);
        const uint32_t threads = P * nc_dev_lanes(ks);
        if (threads > 1024)
            return -EINVAL;
        if ((r = nc_dev_smem_allow((const void *)s_sparse_kernel, smem)) < 0)
            return r;
        s_sparse_kernel<<<(unsigned)n_blocks, threads, smem, stream>>>(*s, in, occ_in, out,
                                                                       occ_out, P);
        break;
    }
    default:
        return -EINVAL;
    }
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

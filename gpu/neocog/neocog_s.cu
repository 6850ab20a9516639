/* gpu/neocog/neocog_s.cu — the S-layer (seed 004 equations 1-3) in the five forms
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
 *   sparse  one block per (b, oy, P positions), a team of T = lanes(ks)/32
 *           warps per position.  The block first builds one 64-bit mask per
 *           window row of the occupied input cells (previous layer's
 *           occupancy map; 0 outside the input, which is the clipping),
 *           stages only those cells of the union window in shared memory,
 *           and lists each position's occupied taps (lane = window row,
 *           popc + warp scan).  Warp j of a team then scans the cells
 *           (tap, kappa) of its position's occupied taps from shared memory
 *           and compacts the non-zero ones into its own segment
 *           (u, weight offset) with ballot + popc (fixed order, no atomics),
 *           summing v(n) on the way; the team's lanes, as S slices of ks / 4
 *           lanes of four planes each, run down all T segments, e_k..k+3 +=
 *           u * a[offset + k .. k + 3] (16-byte loads), slice sl taking every
 *           S-th entry; the slices are added in order at the end.  A segment
 *           holds S_SPARSE_CAP entries: rounds repeat until every cell is
 *           scanned, so any density is exact.  When P teams of
 *           lanes(ks) would pass 512 threads (ks > 256 at P = 2: the
 *           shipped models' US4s, thousands of planes), the planes are split over
 *           gridDim.y blocks of kc planes (a multiple of 32), each block
 *           scanning the same cells for its own planes. */
#include "neocog_s.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

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
        val = nc_dev_s_finish(e, v2, s.b[k], s.theta);
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
    const float val = k < s.k_out ? nc_dev_s_finish(e, v2, s.b[k], s.theta) : 0.0f;
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
        val = nc_dev_s_finish(e, v2, s.b[k], s.theta);
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

/* Entries a warp may list before its team's lanes run down them (rounds
 * repeat until every cell is scanned, so any density is exact). */
#define S_SPARSE_CAP 128u

/* Plane stride of a staged tile cell: k_in rounded up to whole float4s. */
static __host__ __device__ __forceinline__ uint32_t s_tile_stride(uint32_t kin)
{
    return (kin + 3u) & ~3u;
}

/* Shared memory: entry segments [P][T][cap] (u, weight offset), the staged
 * union window [win][W = P + win - 1][ts] (occupied cells only), the
 * occupied taps of each position [P][nl] (tile offset, t), c(nu) [nl],
 * occupancy masks and row tables [win], tap counts [P], list lengths and
 * v^2 partials [P][T], occupancy flags [P]. */
static __host__ __device__ size_t s_sparse_smem(uint32_t P, uint32_t T, uint32_t win,
                                                uint32_t kin, uint32_t nl)
{
    return (size_t)P * T * S_SPARSE_CAP * sizeof(float2) +
           (size_t)win * (P + win - 1) * s_tile_stride(kin) * sizeof(float) +
           (size_t)P * nl * sizeof(int2) + (size_t)win * sizeof(unsigned long long) +
           (size_t)nl * sizeof(float) + 3u * win * sizeof(int) +
           (size_t)P * T * (sizeof(int) + sizeof(float)) + 2u * P * sizeof(int);
}

#define S_SPARSE_MAX_THREADS 512

/* The split reduction as the sparse kernel sees it (R = 1: none). */
typedef struct s_split {
    float *part_e;              /* [R][rows][ks] partial numerators */
    float *part_v;              /* [R][gridDim.y][rows] partial v^2 */
    unsigned *count;            /* [gridDim.y][gridDim.x], zero between launches */
    size_t rows;                /* batch * n_out^2 */
    uint32_t R;
} s_split;

static __global__ void __launch_bounds__(S_SPARSE_MAX_THREADS, 3)
s_sparse_kernel(const __grid_constant__ nc_gpu_neocog_s_args s,
                const float *__restrict__ in, const uint8_t *__restrict__ occ_in,
                float *__restrict__ out, uint8_t *__restrict__ occ_out, uint32_t P,
                uint32_t T, uint32_t kc, s_split sp)
{
    extern __shared__ float2 ent[];     /* [P * T][cap] */
    const nc_gpu_neocog_geom &g = s.g;
    const uint32_t ks = nc_dev_kstride(s.k_out), nl = g.n_live, kin = s.k_in;
    const uint32_t ts = s_tile_stride(kin), q4 = ts >> 2, st4 = s.in_stride >> 2;
    const uint32_t win = g.win, W = P + win - 1, cap = S_SPARSE_CAP;
    const uint32_t n_chunk = (g.n_out + P - 1) / P;
    const size_t b = blockIdx.x / (g.n_out * n_chunk);
    const uint32_t rem = blockIdx.x % (g.n_out * n_chunk);
    const int oy = rem / n_chunk, ox0 = (rem % n_chunk) * P;
    const uint32_t n_i = g.n_in * g.n_in;
    const uint8_t *occb = occ_in ? occ_in + b * n_i : nullptr;
    float *tile = (float *)(ent + (size_t)P * T * cap);         /* [win][W][ts] */
    int2 *tlist = (int2 *)(tile + (size_t)win * W * ts);        /* [P][nl] */
    unsigned long long *rmask = (unsigned long long *)(tlist + (size_t)P * nl); /* [win] */
    float *cw = (float *)(rmask + win);                         /* [nl] */
    int *rfirst = (int *)(cw + nl), *rlo = rfirst + win, *rlen = rlo + win;   /* [win] */
    int *ntap = rlen + win;                                     /* [P] */
    int *cnt = ntap + P;                                        /* [P * T] */
    float *v2s = (float *)(cnt + P * T);                        /* [P * T] */
    int *flag = (int *)(v2s + P * T);                           /* [P] */
    const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    const uint32_t n_warps = blockDim.x >> 5;
    const unsigned lt = nc_dev_lanemask_lt();
    const int by = oy - g.pad, bx0 = ox0 - g.pad;

    for (uint32_t t = tid; t < nl; t += blockDim.x)
        cw[t] = g.w[t];
    for (uint32_t ty = tid; ty < win; ty += blockDim.x) {
        rfirst[ty] = g.row_first[ty];
        rlo[ty] = g.row_lo[ty];
        rlen[ty] = g.row_hi[ty] - g.row_lo[ty];
    }
    if (tid < P)
        flag[tid] = 0;
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();          /* programmatic launch: see neocog_dev.cuh */
    /* occupied input cells of the union window as one 64-bit mask per row
     * (0 outside the input: that is the edge clipping) */
    for (uint32_t ty = warp; ty < win; ty += n_warps) {
        const int iy = by + (int)ty;
        bool o0 = false, o1 = false;
        if (iy >= 0 && iy < g.n_in) {
            const int ix0 = bx0 + (int)lane, ix1 = ix0 + 32;
            if (lane < W && ix0 >= 0 && ix0 < g.n_in)
                o0 = !occb || occb[iy * g.n_in + ix0];
            if (lane + 32u < W && ix1 >= 0 && ix1 < g.n_in)
                o1 = !occb || occb[iy * g.n_in + ix1];
        }
        const unsigned m0 = __ballot_sync(0xffffffffu, o0), m1 = __ballot_sync(0xffffffffu, o1);
        if (lane == 0)
            rmask[ty] = (unsigned long long)m0 | ((unsigned long long)m1 << 32);
    }
    __syncthreads();
    /* stage the occupied cells (the others are never read) */
    {
        const float4 *in4 = (const float4 *)(in + b * n_i * s.in_stride);
        float4 *tile4 = (float4 *)tile;
        const uint32_t n4 = win * W * q4;
        for (uint32_t i = tid; i < n4; i += blockDim.x) {
            const uint32_t cell = i / q4, q = i - cell * q4;
            const uint32_t r = cell / W, c = cell - r * W;
            if ((rmask[r] >> c) & 1ull)
                tile4[i] = __ldg(in4 + (size_t)((by + (int)r) * g.n_in + bx0 + (int)c) * st4 + q);
        }
    }
    /* occupied taps of each position: lane = window row, placed by a scan */
    for (uint32_t p = warp; p < P; p += n_warps) {
        uint32_t total = 0;
        int2 *tp = tlist + (size_t)p * nl;
        for (uint32_t ty0 = 0; ty0 < win; ty0 += 32) {
            const uint32_t ty = ty0 + lane;
            unsigned long long bits = 0;
            if (ty < win && rlen[ty] > 0 && ox0 + (int)p < g.n_out)
                bits = (rmask[ty] >> (p + rlo[ty])) & ((1ull << rlen[ty]) - 1ull);
            const uint32_t nb = __popcll(bits);
            const uint32_t pre = nc_dev_warp_scan(nb, lane);
            uint32_t at = total + pre - nb;
            total += __shfl_sync(0xffffffffu, pre, 31);
            if (bits) {
                const int c0 = (int)(ty * W + p) + rlo[ty], t0 = rfirst[ty];
                while (bits) {
                    const int bi = __ffsll((long long)bits) - 1;
                    tp[at++] = make_int2((c0 + bi) * (int)ts, t0 + bi);
                    bits &= bits - 1ull;
                }
            }
        }
        if (lane == 0)
            ntap[p] = (int)total;
    }
    __syncthreads();

    /* team of T warps per position p; warp j of the team scans the cells
     * m = j*32 + lane, stepping 32*T, of its occupied taps:
     * (tap entry, plane kappa) = (m / kin, m % kin) */
    const uint32_t p = warp / T, j = warp - p * T;
    const int ox = ox0 + (int)p;
    const bool live = ox < g.n_out;             /* uniform per team */
    const uint32_t nt = live ? (uint32_t)ntap[p] : 0u;
    /* split: this block's run of the cells is [c_lo, n_cell) */
    const uint32_t n_all = nt * kin, z = blockIdx.z;
    const uint32_t c_lo = (uint32_t)((uint64_t)n_all * z / sp.R);
    const uint32_t n_cell = (uint32_t)((uint64_t)n_all * (z + 1) / sp.R), step = 32u * T;
    const uint32_t dt = step / kin, dk = step - dt * kin;
    uint32_t m = c_lo + j * 32u + lane;
    uint32_t ti = m / kin, kap = m - ti * kin;
    const int2 *tp = tlist + (size_t)p * nl;
    float2 *seg = ent + (size_t)warp * cap;
    bool done = c_lo + j * 32u >= n_cell;
    float vv = 0.0f;

    /* this block's planes: kb .. kb + kc - 1 (kc = ks unless the planes are
     * split over gridDim.y blocks, kc then a multiple of 32).  In phase 2
     * the team's T * 32 threads are S >= 4 slices of nq = kc / 4 lanes:
     * lane kq owns planes kb + 4 kq .. + 3 (one 16-byte weight load, four
     * FMAs an entry), slice sl runs down entries sl, sl + S, .. of every
     * segment, and the slices are added in order at the end. */
    const uint32_t kb = blockIdx.y * kc, nq = kc / 4u;
    const uint32_t S = T * 32u / nq, gl = tid - p * T * 32u;
    const uint32_t sl = gl / nq, kq = gl - sl * nq;
    const uint32_t k = kb + 4u * kq;
    const bool lane_k = live && sl < S && k < ks;
    const float4 *a4 = (const float4 *)(s.a + (lane_k ? k : 0));
    float4 acc0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), acc1 = acc0;

    for (;;) {
        uint32_t n = 0;
        if (!done) {
            for (;;) {
                float x = 0.0f;
                int off = 0;
                if (m < n_cell) {
                    const int2 tt = tp[ti];
                    x = tile[tt.x + kap];
                    vv = fmaf(cw[tt.y], x * x, vv);
                    off = (int)((kap * nl + (uint32_t)tt.y) * ks);
                }
                const unsigned mk = __ballot_sync(0xffffffffu, x != 0.0f);
                if (x != 0.0f)
                    seg[n + __popc(mk & lt)] = make_float2(x, __int_as_float(off));
                n += __popc(mk);
                m += step;
                ti += dt;
                kap += dk;
                if (kap >= kin) {
                    kap -= kin;
                    ti++;
                }
                if (m - lane >= n_cell) {       /* uniform */
                    done = true;
                    break;
                }
                if (n + 32u > cap)
                    break;
            }
        }
        if (lane == 0)
            cnt[warp] = (int)n;
        __syncthreads();
        /* phase 2: lane kq of slice sl runs down its share of the team's
         * segments (offsets are multiples of ks, so of 4: float4 loads) */
        if (lane_k) {
            for (uint32_t jj = 0; jj < T; jj++) {
                const float2 *ep = ent + (size_t)(p * T + jj) * cap;
                const int nn = cnt[p * T + jj];
                const int st = (int)S;
                int i = (int)sl;
                for (; i + 3 * st < nn; i += 4 * st) {
                    const float2 q0 = ep[i], q1 = ep[i + st], q2 = ep[i + 2 * st],
                                 q3 = ep[i + 3 * st];
                    const float4 w0 = __ldg(a4 + (__float_as_int(q0.y) >> 2)),
                                 w1 = __ldg(a4 + (__float_as_int(q1.y) >> 2)),
                                 w2 = __ldg(a4 + (__float_as_int(q2.y) >> 2)),
                                 w3 = __ldg(a4 + (__float_as_int(q3.y) >> 2));
                    nc_dev_fma4(q0.x, w0, acc0);
                    nc_dev_fma4(q1.x, w1, acc1);
                    nc_dev_fma4(q2.x, w2, acc0);
                    nc_dev_fma4(q3.x, w3, acc1);
                }
                for (; i < nn; i += st) {
                    const float2 q0 = ep[i];
                    nc_dev_fma4(q0.x, __ldg(a4 + (__float_as_int(q0.y) >> 2)), acc0);
                }
            }
        }
        if (!__syncthreads_or(!done))
            break;
    }
    vv = nc_dev_warp_sum(vv);
    if (lane == 0)
        v2s[warp] = vv;
    /* every thread has left phase 2, so the segments are free: each lane
     * leaves its slice's sums there for the slice-0 lanes to add in order */
    float4 *red = (float4 *)(ent + (size_t)p * T * cap);     /* [S][nq] of the team */
    if (lane_k)
        red[gl] = make_float4(acc0.x + acc1.x, acc0.y + acc1.y, acc0.z + acc1.z,
                              acc0.w + acc1.w);
    __syncthreads();
    const size_t row = (b * g.n_out + oy) * g.n_out + ox;      /* (b, o) */
    const bool writer = lane_k && sl == 0;
    if (live) {                                 /* uniform per warp */
        float4 e = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        for (uint32_t j2 = 0; writer && j2 < S; j2++) {
            const float4 r = red[j2 * nq + kq];
            e.x += r.x;
            e.y += r.y;
            e.z += r.z;
            e.w += r.w;
        }
        float v2 = 0.0f;
        for (uint32_t jj = 0; jj < T; jj++)
            v2 += v2s[p * T + jj];
        if (sp.R > 1) {                         /* partial sums of run z */
            if (writer)
                *(float4 *)(sp.part_e + ((size_t)z * sp.rows + row) * ks + k) = e;
            if (gl == 0)
                sp.part_v[((size_t)z * gridDim.y + blockIdx.y) * sp.rows + row] = v2;
        } else if (writer) {
            const float4 val = nc_dev_s_finish4(e, v2, s, k);
            *(float4 *)(out + row * ks + k) = val;
            if (val.x > 0.0f || val.y > 0.0f || val.z > 0.0f || val.w > 0.0f)
                flag[p] = 1;
        }
    }
    if (sp.R > 1) {
        /* the last of the group's R blocks to get here adds the partials in
         * the order z = 0, 1, .. (so the result does not depend on which
         * one it is) and puts the counter back to zero for the next launch */
        __threadfence();
        __syncthreads();
        int *last = cnt;                        /* the list lengths are spent */
        if (tid == 0) {
            unsigned *c = sp.count + blockIdx.y * gridDim.x + blockIdx.x;
            *last = atomicAdd(c, 1u) == sp.R - 1;
            if (*last)
                *c = 0;
        }
        __syncthreads();
        if (!*last)
            return;                             /* uniform */
        __threadfence();
        if (live && writer) {
            float4 e = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            float v2 = 0.0f;
            for (uint32_t r = 0; r < sp.R; r++) {
                const float4 pe = __ldcg((const float4 *)(sp.part_e +
                                                          ((size_t)r * sp.rows + row) * ks + k));
                e.x += pe.x;
                e.y += pe.y;
                e.z += pe.z;
                e.w += pe.w;
                v2 += __ldcg(sp.part_v + ((size_t)r * gridDim.y + blockIdx.y) * sp.rows + row);
            }
            const float4 val = nc_dev_s_finish4(e, v2, s, k);
            *(float4 *)(out + row * ks + k) = val;
            if (val.x > 0.0f || val.y > 0.0f || val.z > 0.0f || val.w > 0.0f)
                flag[p] = 1;
        }
    }
    __syncthreads();
    if (occ_out && tid < P && ox0 + (int)tid < g.n_out) {
        uint8_t *po = occ_out + (b * g.n_out + oy) * g.n_out + ox0 + tid;
        if (gridDim.y == 1)
            *po = (uint8_t)flag[tid];
        else if (flag[tid])
            *po = 1;            /* planes split: the launcher cleared the map */
    }
}

/* ---- launcher --------------------------------------------------------------- */

extern "C" uint32_t nc_gpu_neocog_s_default_block(int variant, uint32_t k_out)
{
    const uint32_t ks = nc_dev_kstride(k_out);
    switch (variant) {
    case NC_GPU_NEOCOG_T1_T4:
    case NC_GPU_NEOCOG_T1_T5:  return ks <= 16 ? 4 : ks <= 32 ? 2 : 1;
    case NC_GPU_NEOCOG_SPARSE: return ks <= 32 ? 16 : ks <= 64 ? 8 : ks <= 96 ? 5 : 2;
    default:                   return 1;
    }
}

/* The sparse kernel's launch shape for positions per block P: Pe positions
 * per block (P evened out over the row), nce blocks per row, T warps per
 * position, kc planes per block and n_kc blocks of planes.  -E2BIG when not
 * even 32 planes of Pe positions fit a block. */
typedef struct s_shape {
    uint32_t Pe, nce, T, kc, n_kc;
} s_shape;

static int s_sparse_shape(const nc_gpu_neocog_s_args *s, uint32_t P, s_shape *sh)
{
    const uint32_t ks = nc_dev_kstride(s->k_out);
    const uint32_t n_chunk = (s->g.n_out + P - 1) / P;
    /* even out the row chunks: P no larger than asked, as few chunks */
    sh->Pe = (s->g.n_out + n_chunk - 1) / n_chunk;
    sh->nce = (s->g.n_out + sh->Pe - 1) / sh->Pe;
    /* planes per block: all of them while Pe teams of lanes(ks) fit the
     * block; else split over gridDim.y blocks of kc planes (a multiple of
     * 32, as even as it goes), each block scanning the same cells */
    sh->kc = ks;
    sh->T = nc_dev_lanes(ks) / 32u;
    if (sh->Pe * sh->T * 32u > S_SPARSE_MAX_THREADS) {
        const uint32_t per = (S_SPARSE_MAX_THREADS / sh->Pe) & ~31u;
        if (per < 32u)
            return -E2BIG;     /* the tuner skips it */
        const uint32_t nk = (ks + per - 1) / per;
        sh->kc = ((ks + nk - 1) / nk + 31u) & ~31u;
        sh->T = sh->kc / 32u;
    }
    sh->n_kc = (ks + sh->kc - 1) / sh->kc;
    return 0;
}

/* The split's scratch for batch characters in R runs.  Counters: one per
 * group of blocks, at most batch * n_out^2 * ceil(ks / 32) groups whatever
 * the block (kc >= 32).  Partials: part_e [R][rows][ks], then part_v
 * [R][ceil(ks / 32)][rows] at *off_v. */
static size_t s_split_counters(const nc_gpu_neocog_s_args *s, uint32_t batch)
{
    const size_t ks = nc_dev_kstride(s->k_out);
    return (size_t)batch * s->g.n_out * s->g.n_out * ((ks + 31) / 32);
}

static size_t s_split_floats(const nc_gpu_neocog_s_args *s, uint32_t batch, uint32_t R,
                             size_t *off_v)
{
    const size_t ks = nc_dev_kstride(s->k_out), n_ky = (ks + 31) / 32;
    const size_t rows = (size_t)batch * s->g.n_out * s->g.n_out;
    *off_v = (size_t)R * rows * ks;
    return *off_v + (size_t)R * n_ky * rows;
}

/* Every check of nc_gpu_neocog_s_forward (R = 1) and of
 * nc_gpu_neocog_s_forward_split, and, unless dry, the launch.  dry: in, out
 * may be NULL; nothing is queued. */
static int s_launch(const nc_gpu_neocog_s_args *s, const float *in, const uint8_t *occ_in,
                    float *out, uint8_t *occ_out, uint32_t batch, int variant,
                    uint32_t per_block, uint32_t R, unsigned *count, size_t n_count,
                    float *part, size_t n_part, cudaStream_t stream, bool dry)
{
    if (R < 1 || R > NC_GPU_NEOCOG_S_MAX_SPLITS || (R > 1 && variant != NC_GPU_NEOCOG_SPARSE))
        return -EINVAL;
    if (!s || (!dry && (!in || !out)) || batch < 1 || s->k_in < 1 ||
        s->k_in > s->in_stride || s->k_out < 1 || s->k_out > NC_NEOCOG_MAX_PLANES ||
        !s->a || !s->b || s->g.n_out < 1 || !(s->theta > 0.0f && s->theta < 1.0f))
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
        if ((n_cells + 255) / 256 > 0x7fffffffu)
            return -E2BIG;
        if (dry)
            return 0;
        if (occ_out)
            NC_CUDA_CHECK(cudaMemsetAsync(occ_out, 0, (size_t)batch * n_o, stream));
        s_t1_kernel<<<(unsigned)((n_cells + 255) / 256), 256, 0, stream>>>(*s, in, out,
                                                                             occ_out, n_cells);
        break;
    }
    case NC_GPU_NEOCOG_T1_T3:
        if (ks > 1024)
            return -E2BIG;      /* a block per position holds every plane */
        if (dry)
            return 0;
        s_t3_kernel<<<(unsigned)((size_t)batch * n_o), ks, 0, stream>>>(*s, in, out, occ_out);
        break;
    case NC_GPU_NEOCOG_T1_T4:
    case NC_GPU_NEOCOG_T1_T5: {
        const size_t smem = (size_t)s->g.win * (P + s->g.win - 1) * s->k_in * sizeof(float) +
                            P * sizeof(int);
        if (P * ks > 1024)
            return -E2BIG;      /* P * ks threads */
        if (variant == NC_GPU_NEOCOG_T1_T4) {
            if ((r = nc_dev_smem_allow((const void *)s_t4_kernel<false>, smem)) < 0)
                return r;
            if (dry)
                return 0;
            s_t4_kernel<false><<<(unsigned)n_blocks, P * ks, smem, stream>>>(*s, in, out,
                                                                             occ_out, P);
        } else {
            if ((r = nc_dev_smem_allow((const void *)s_t4_kernel<true>, smem)) < 0)
                return r;
            if (dry)
                return 0;
            s_t4_kernel<true><<<(unsigned)n_blocks, P * ks, smem, stream>>>(*s, in, out,
                                                                            occ_out, P);
        }
        break;
    }
    case NC_GPU_NEOCOG_SPARSE: {
        const uint32_t nl = (uint32_t)s->g.n_live;
        s_shape sh;
        if ((r = s_sparse_shape(s, P, &sh)) < 0)
            return r;
        const uint32_t Pe = sh.Pe, nce = sh.nce, T = sh.T, kc = sh.kc, n_kc = sh.n_kc;
        const size_t smem = s_sparse_smem(Pe, T, s->g.win, s->k_in, nl);
        s_split sp = { NULL, NULL, NULL, (size_t)batch * n_o, R };
        if (R > 1) {
            size_t off_v = 0;
            if (!dry && (!count || !part || n_count < s_split_counters(s, batch) ||
                         n_part < s_split_floats(s, batch, R, &off_v)))
                return -EINVAL;
            sp.count = count;
            sp.part_e = part;
            sp.part_v = part + off_v;
        }
        if (s->g.step != 1 || s->in_stride % 4 != 0 || Pe + s->g.win - 1 > 64 ||
            s->g.win > 32 || ((uintptr_t)s->a & 15) != 0 ||
            (!dry && (((uintptr_t)in & 15) != 0 || ((uintptr_t)out & 15) != 0 ||
                      ((uintptr_t)part & 15) != 0)) ||
            (uint64_t)s->k_in * nl * ks >= 0x7fffffffu)
            return -EINVAL;
        if ((size_t)batch * s->g.n_out * nce > 0x7fffffffu || n_kc > 65535u)
            return -E2BIG;
        if ((r = nc_dev_smem_allow((const void *)s_sparse_kernel, smem)) < 0)
            return r;
        if (dry)
            return 0;
        if (occ_out && n_kc > 1)
            NC_CUDA_CHECK(cudaMemsetAsync(occ_out, 0, (size_t)batch * n_o, stream));
        const dim3 grid((unsigned)((size_t)batch * s->g.n_out * nce), n_kc, R);
        NC_CUDA_CHECK(nc_dev_launch(s_sparse_kernel, grid, dim3(Pe * T * 32u), smem, stream,
                                    batch, *s, in, occ_in, out, occ_out, Pe, T, kc, sp));
        break;
    }
    default:
        return -EINVAL;
    }
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_neocog_s_forward(const nc_gpu_neocog_s_args *s, const float *in,
                                       const uint8_t *occ_in, float *out,
                                       uint8_t *occ_out, uint32_t batch, int variant,
                                       uint32_t per_block, cudaStream_t stream)
{
    return s_launch(s, in, occ_in, out, occ_out, batch, variant, per_block, 1, NULL, 0, NULL,
                    0, stream, false);
}

extern "C" int nc_gpu_neocog_s_check(const nc_gpu_neocog_s_args *s, uint32_t batch,
                                     int variant, uint32_t per_block)
{
    return s_launch(s, NULL, NULL, NULL, NULL, batch, variant, per_block, 1, NULL, 0, NULL, 0,
                    0, true);
}

extern "C" int nc_gpu_neocog_s_forward_split(const nc_gpu_neocog_s_args *s, const float *in,
                                             const uint8_t *occ_in, float *out,
                                             uint8_t *occ_out, uint32_t batch,
                                             uint32_t per_block, uint32_t splits,
                                             unsigned *count, size_t n_count, float *part,
                                             size_t n_part, cudaStream_t stream)
{
    return s_launch(s, in, occ_in, out, occ_out, batch, NC_GPU_NEOCOG_SPARSE, per_block,
                    splits, count, n_count, part, n_part, stream, false);
}

extern "C" size_t nc_gpu_neocog_s_split_counters(const nc_gpu_neocog_s_args *s,
                                                 uint32_t batch)
{
    return s && batch >= 1 ? s_split_counters(s, batch) : 0;
}

extern "C" size_t nc_gpu_neocog_s_split_floats(const nc_gpu_neocog_s_args *s, uint32_t batch,
                                               uint32_t splits)
{
    size_t off_v = 0;
    if (!s || batch < 1 || splits < 2 || splits > NC_GPU_NEOCOG_S_MAX_SPLITS)
        return 0;
    return s_split_floats(s, batch, splits, &off_v);
}

extern "C" uint32_t nc_gpu_neocog_s_default_splits(const nc_gpu_neocog_s_args *s,
                                                   uint32_t per_block, uint32_t n_sm)
{
    s_shape sh;
    if (!s || s->g.n_out < 1 || s->k_out < 1 || n_sm < 1 ||
        s_sparse_shape(s, per_block ? per_block
                                    : nc_gpu_neocog_s_default_block(NC_GPU_NEOCOG_SPARSE,
                                                                    s->k_out), &sh) < 0)
        return 1;
    /* about two blocks an SM at batch 1, and no run shorter than 256 cells
     * (a warp's pass of one or two rounds) */
    const uint32_t base = (uint32_t)s->g.n_out * sh.nce * sh.n_kc;
    uint32_t R = (2u * n_sm + base / 2u) / base;
    const uint32_t by_cells = (uint32_t)s->g.n_live * s->k_in / 256u;
    if (R > by_cells)
        R = by_cells;
    if (R > NC_GPU_NEOCOG_S_MAX_SPLITS)
        R = NC_GPU_NEOCOG_S_MAX_SPLITS;
    return R < 1 ? 1 : R;
}

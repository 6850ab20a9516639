/* gpu/neocog/neocog_c_tile.cu — the tile C kernel (NC_GPU_NEOCOG_C_TILE), for small
 * batches.
 *
 * Layer: gpu.  At batch 1 the staged kernel gets one block per output row
 * chunk and the direct one a warp per strip, each running a long serial
 * chain (list the taps, then walk them); a block per output position
 * (tried) re-reads every window from L2 and was slower still.  Here a
 * block owns a T x T tile of output positions and every plane of them (the
 * occupancy byte of a position needs all its planes, and a block can write
 * it only if it computed them all), so UC1 at batch 1 gives about 100
 * blocks, and:
 *  1. the union of the tile's windows ((T - 1) * step + win square) is
 *     staged once in shared memory by cp.async, one L2 round trip; an
 *     outside cell is zero-filled (core's clipping) and an unoccupied one
 *     zeroed (an exact skip).  A tile whose union holds no occupied cell is
 *     written as zeros;
 *  2. a thread owns (position, 4 planes, tap slice s of S): it walks live
 *     taps s, s + S, ... in index order, each one d(nu) times a 16-byte
 *     shared-memory read, and the S slices are added by a fixed xor-shuffle
 *     tree.  No occupancy test per tap: the zeros make that exact, and a
 *     test would cost more than the FMAs it saves.
 * The staged rows keep each column parity apart ([row][c % step][c / step]
 * [ks]), so the positions of a row, step columns apart, read adjacent
 * float4s and 8 lanes fill the 32 banks.  Every output cell and occupancy
 * byte is written once, no atomics, one summation order. */
#include "neocog_c.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

/* The widest tile side tried; its union window must fit shared memory. */
#define CT_MAX_SIDE 8

/* A launch's shape, worked out on the host: the kernel's own integer
 * divisions (some twenty instructions each, in a chain a single warp per
 * scheduler cannot hide) were a third of its instructions at batch 1. */
typedef struct ct_shape {
    int T, S;                   /* tile side, tap slices */
    int Q, W, Cq, CP, RP;       /* float4 per position; window side; columns
                                   per parity; float4 per parity, per row */
    int n_cells, n_el;          /* the staged cells (padding included), float4 */
    int sq, scq, spar, sr;      /* blockDim.x as (float4, column, parity, row) */
    int tcq, tpar, tr;          /* blockDim.x as (column, parity, row) */
    float inv_q, inv_cq, inv_step, inv_t;       /* 1 / Q, 1 / Cq, 1 / step, 1 / T */
} ct_shape;

/* a / d for 0 <= a < 2^20 from d's reciprocal: the float quotient is within
 * one of the true one, and one step either way makes it exact */
static __device__ __forceinline__ int ct_div(int a, int d, float inv)
{
    int q = __float2int_rz(__int2float_rz(a) * inv);
    q -= q * d > a;
    q += (q + 1) * d <= a;
    return q;
}

/* The carries of a (column / step, parity, row) index stepped by additions
 * of less than one unit each: the staging and the occupancy walks share it. */
static __device__ __forceinline__ void ct_carry(int &cq, int &par, int &r, int Cq, int step)
{
    if (cq >= Cq) {
        cq -= Cq;
        par++;
    }
    if (par >= step) {
        par -= step;
        r++;
    }
}

static __global__ void __launch_bounds__(1024)
c_tile_kernel(const __grid_constant__ nc_gpu_neocog_c_args c, const float *__restrict__ in,
              const uint8_t *__restrict__ occ_in, float *__restrict__ out,
              uint8_t *__restrict__ occ_out, const ct_shape sh)
{
    extern __shared__ float4 ct_shared[];
    const nc_gpu_neocog_geom &g = c.g;
    const int T = sh.T, S = sh.S, Q = sh.Q, W = sh.W, Cq = sh.Cq, CP = sh.CP, RP = sh.RP;
    const int step = g.step, n_in = g.n_in, n_out = g.n_out, nl = g.n_live;
    const int n_cells = sh.n_cells, npos = T * T;
    float4 *tile = ct_shared;                   /* [W][step][Cq][Q] */
    float2 *taps = (float2 *)(tile + sh.n_el);  /* [nl]: d(nu), float4 offset */
    int *flag = (int *)(taps + nl);             /* [T * T] */
    uint8_t *keep = (uint8_t *)(flag + npos);   /* [n_cells]: 0 = an unoccupied cell */
    const int tid = threadIdx.x, nt = blockDim.x;
    const int lane = tid & 31, warp = tid >> 5, n_warps = nt >> 5;
    const size_t b = blockIdx.z;
    const int oy0 = blockIdx.y * T, ox0 = blockIdx.x * T;
    const int by = oy0 * step - g.pad, bx = ox0 * step - g.pad;
    const float4 *in4 = (const float4 *)in + b * n_in * n_in * Q;
    const uint8_t *occb = occ_in ? occ_in + b * n_in * n_in : nullptr;

    /* 1. stage.  Every float4 of the window goes straight to shared memory
     * by cp.async (zero-filled outside the input), all of a thread's copies
     * in flight at once, while the same thread reads its cells' occupancy
     * bytes; unoccupied cells are then zeroed in place.  So one L2 round trip
     * however many float4 a thread copies (loading into registers costs a
     * round trip per few float4).  Thread tid copies float4 tid, tid + nt,
     * ... in the tile's own order, (row, parity, column / step, float4)
     * stepped by additions. */
    {
        const int t1 = ct_div(tid, Q, sh.inv_q), t2 = ct_div(t1, Cq, sh.inv_cq);
        int q = tid - t1 * Q, cq = t1 - t2 * Cq, r = ct_div(t2, step, sh.inv_step);
        int par = t2 - r * step;
        for (int i = tid; i < sh.n_el; i += nt) {
            const int cc = cq * step + par, iy = by + r, ix = bx + cc;
            const bool in_range = cc < W && iy >= 0 && iy < n_in && ix >= 0 && ix < n_in;
            const float4 *src = in_range ? in4 + (iy * n_in + ix) * Q + q : in4;
            const unsigned dst = (unsigned)__cvta_generic_to_shared(tile + i);
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                         :: "r"(dst), "l"(src), "r"(in_range ? 16 : 0) : "memory");
            q += sh.sq;
            cq += sh.scq;
            par += sh.spar;
            r += sh.sr;
            if (q >= Q) {
                q -= Q;
                cq++;
            }
            ct_carry(cq, par, r, Cq, step);
        }
    }
    int found = 0;
    if (occb) {
        const int t2 = ct_div(tid, Cq, sh.inv_cq);
        int cq = tid - t2 * Cq, r = ct_div(t2, step, sh.inv_step), par = t2 - r * step;
        for (int j0 = tid; j0 < n_cells; j0 += 4 * nt) {
            int o[4], jj[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {       /* four bytes in flight */
                jj[u] = j0 + u * nt;
                o[u] = -1;                      /* outside: zero-filled already */
                const int cc = cq * step + par, iy = by + r, ix = bx + cc;
                if (jj[u] < n_cells && cc < W && iy >= 0 && iy < n_in && ix >= 0 && ix < n_in)
                    o[u] = __ldg(occb + iy * n_in + ix);
                cq += sh.tcq;
                par += sh.tpar;
                r += sh.tr;
                ct_carry(cq, par, r, Cq, step);
            }
#pragma unroll
            for (int u = 0; u < 4; u++)
                if (jj[u] < n_cells) {
                    keep[jj[u]] = o[u] != 0;
                    found |= o[u] > 0;
                }
        }
    } else {
        for (int j = tid; j < n_cells; j += nt)
            keep[j] = 1;
        /* every cell inside the input is read: any such cell makes the tile
         * non-empty */
        const int y0 = by > 0 ? by : 0, y1 = by + W < n_in ? by + W : n_in;
        const int x0 = bx > 0 ? bx : 0, x1 = bx + W < n_in ? bx + W : n_in;
        found = y0 < y1 && x0 < x1;
    }
    for (int p = tid; p < npos; p += nt)
        flag[p] = 0;
    /* lane = column of a window row: only d(nu) is read per tap from the
     * parameter bank (lanes reading different words there are served one
     * word at a time) */
    for (int ty = warp; ty < g.win; ty += n_warps) {
        const int lo = g.row_lo[ty], len = g.row_hi[ty] - lo, first = g.row_first[ty];
        for (int i = lane; i < len; i += 32) {
            const int tx = lo + i, cx = ct_div(tx, step, sh.inv_step);
            taps[first + i] = make_float2(g.w[first + i],
                                          __int_as_float(ty * RP + (tx - cx * step) * CP +
                                                         cx * Q));
        }
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory");
    float4 *out4 = (float4 *)out;
    if (!__syncthreads_or(found)) {             /* psi(0) = 0 everywhere */
        for (int i = tid; i < npos * Q; i += nt) {
            const int p = ct_div(i, Q, sh.inv_q), q = i - p * Q;
            const int ly = ct_div(p, T, sh.inv_t), oy = oy0 + ly, ox = ox0 + p - ly * T;
            if (oy < n_out && ox < n_out)
                out4[((b * n_out + oy) * n_out + ox) * Q + q] =
                    make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
        for (int p = tid; occ_out && p < npos; p += nt) {
            const int ly = ct_div(p, T, sh.inv_t), oy = oy0 + ly, ox = ox0 + p - ly * T;
            if (oy < n_out && ox < n_out)
                occ_out[(b * n_out + oy) * n_out + ox] = 0;
        }
        return;
    }
    for (int j = tid; j < n_cells; j += nt)
        if (!keep[j])
            for (int q = 0; q < Q; q++)
                tile[j * Q + q] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    __syncthreads();

    /* 2. lane = (high bits: group of 8 (position, float4) pairs, s, low 3
     * bits: pair in the group): a quarter warp reads 8 adjacent float4 of
     * one tap, and the slices of a pair are lanes 8 apart */
    const int lgS = S == 4 ? 2 : S == 2 ? 1 : 0;
    const int c8 = lane & 7, s = (lane >> 3) & (S - 1), hi = lane >> (3 + lgS);
    const int per_warp = 32 / S, ncombo = npos * Q;
    for (int cb = warp * per_warp; cb < ncombo; cb += n_warps * per_warp) {
        const int combo = cb + hi * 8 + c8;
        const bool valid = combo < ncombo;      /* idle lanes still shuffle */
        const int cm = valid ? combo : 0;
        const int p = ct_div(cm, Q, sh.inv_q), q = cm - p * Q;
        const int ly = ct_div(p, T, sh.inv_t), lx = p - ly * T;
        const float4 *src = tile + ly * step * RP + lx * Q + q;
        float4 a0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), a1 = a0;
        int j = s;
        for (; j + S < nl; j += 2 * S) {
            const float2 e0 = taps[j], e1 = taps[j + S];
            const float4 v0 = src[__float_as_int(e0.y)], v1 = src[__float_as_int(e1.y)];
            nc_dev_fma4(e0.x, v0, a0);
            nc_dev_fma4(e1.x, v1, a1);
        }
        if (j < nl) {
            const float2 e0 = taps[j];
            const float4 v0 = src[__float_as_int(e0.y)];
            nc_dev_fma4(e0.x, v0, a0);
        }
        float4 x = make_float4(a0.x + a1.x, a0.y + a1.y, a0.z + a1.z, a0.w + a1.w);
        for (int o = 8; o < 8 * S; o <<= 1) {
            x.x += __shfl_xor_sync(0xffffffffu, x.x, o);
            x.y += __shfl_xor_sync(0xffffffffu, x.y, o);
            x.z += __shfl_xor_sync(0xffffffffu, x.z, o);
            x.w += __shfl_xor_sync(0xffffffffu, x.w, o);
        }
        const int oy = oy0 + ly, ox = ox0 + lx;
        if (s == 0 && valid && oy < n_out && ox < n_out) {
            const float4 v = nc_dev_psi4(x, 4 * q, (int)c.k);
            out4[((b * n_out + oy) * n_out + ox) * Q + q] = v;
            if (v.x > 0.0f || v.y > 0.0f || v.z > 0.0f || v.w > 0.0f)
                flag[p] = 1;                    /* the same value from any lane */
        }
    }
    __syncthreads();
    for (int p = tid; occ_out && p < npos; p += nt) {
        const int ly = ct_div(p, T, sh.inv_t), oy = oy0 + ly, ox = ox0 + p - ly * T;
        if (oy < n_out && ox < n_out)
            occ_out[(b * n_out + oy) * n_out + ox] = (uint8_t)flag[p];
    }
}

static size_t ct_smem(int T, int step, int win, int Q, int nl)
{
    const int W = (T - 1) * step + win, Cq = (W + step - 1) / step;
    return (size_t)W * step * Cq * Q * sizeof(float4) + (size_t)nl * sizeof(float2) +
           (size_t)T * T * sizeof(int) + (size_t)W * step * Cq;
}

extern "C" int nc_gpu_neocog_c_tile_forward(const nc_gpu_neocog_c_args *c, const float *in,
                                            const uint8_t *occ_in, float *out,
                                            uint8_t *occ_out, uint32_t batch, uint32_t side,
                                            uint32_t slices, cudaStream_t stream)
{
    if (!c || !in || !out || batch < 1 || c->k < 1 || c->k > NC_NEOCOG_MAX_PLANES ||
        c->g.n_out < 1 || c->g.n_in < 1 || c->g.win < 1 || c->g.win > NC_GPU_NEOCOG_MAX_WIN ||
        c->g.step < 1 || c->g.n_live < 1 || c->g.n_live > NC_GPU_NEOCOG_MAX_TAPS ||
        side > CT_MAX_SIDE || (slices != 0 && slices != 1 && slices != 2 && slices != 4) ||
        ((uintptr_t)in & 15) || ((uintptr_t)out & 15))
        return -EINVAL;
    const int Q = (int)(nc_dev_kstride(c->k) >> 2), n_out = c->g.n_out;
    const int step = c->g.step, win = c->g.win, nl = c->g.n_live;
    /* one character in the grid's z; the 32-bit offsets of a character's
     * layer (n_in^2 ks floats) */
    if (batch > 65535u || (size_t)c->g.n_in * c->g.n_in * Q * 4u >= ((size_t)1 << 31))
        return -E2BIG;
    int dev = 0, n_sm = 132, optin = 48 * 1024;
    NC_CUDA_CHECK(cudaGetDevice(&dev));
    NC_CUDA_CHECK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev));
    NC_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    int T = (int)side;
    if (T == 0) {
        /* the narrowest tile (2 .. 4) whose blocks fit on the SMs at once: on
         * an H100 at batch 1 a second, partial round of blocks cost more than
         * a narrower tile's re-read halo saves (UC1 4 x 4, UC2 and UC3
         * 2 x 2 were the fastest), a 1 x 1 tile stages its window for one
         * position and was slower still */
        T = 2;
        while (T < 4 && (size_t)batch * ((n_out + T - 1) / T) * ((n_out + T - 1) / T) >
                            (size_t)n_sm)
            T++;
    }
    if (T > n_out)
        T = n_out;
    /* large plane counts: a narrower tile, down to one position */
    while (T > 1 && ct_smem(T, step, win, Q, nl) > (size_t)optin)
        T--;
    const size_t smem = ct_smem(T, step, win, Q, nl);
    if (smem > (size_t)optin)
        return -E2BIG;
    /* four slices were never slower at batch 1: the shortest chain per lane */
    const int S = slices ? (int)slices : 4;
    const int per_warp = 32 / S, ncombo = T * T * Q;
    int warps = (ncombo + per_warp - 1) / per_warp;
    if (warps > 32)
        warps = 32;                             /* larger tiles loop */
    const int nt = warps * 32;
    ct_shape sh;
    sh.T = T;
    sh.S = S;
    sh.Q = Q;
    sh.W = (T - 1) * step + win;
    sh.Cq = (sh.W + step - 1) / step;
    sh.CP = sh.Cq * Q;
    sh.RP = step * sh.CP;
    sh.n_cells = sh.W * step * sh.Cq;
    sh.n_el = sh.n_cells * Q;
    sh.sq = nt % Q;
    sh.scq = nt / Q % sh.Cq;
    sh.spar = nt / Q / sh.Cq % step;
    sh.sr = nt / Q / sh.Cq / step;
    sh.tcq = nt % sh.Cq;
    sh.tpar = nt / sh.Cq % step;
    sh.tr = nt / sh.Cq / step;
    sh.inv_q = 1.0f / (float)Q;
    sh.inv_cq = 1.0f / (float)sh.Cq;
    sh.inv_step = 1.0f / (float)step;
    sh.inv_t = 1.0f / (float)T;
    const unsigned n_side = (unsigned)((n_out + T - 1) / T);
    int r = nc_dev_smem_allow((const void *)c_tile_kernel, smem);
    if (r < 0)
        return r;
    /* a plain launch: launched early (programmatic dependence), the tile
     * kernel's few heavy blocks land where the previous layer leaves room,
     * and the whole net at batch 1 took 68-73 us instead of 59 (H100) */
    c_tile_kernel<<<dim3(n_side, n_side, batch), nt, smem, stream>>>(*c, in, occ_in, out,
                                                                      occ_out, sh);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

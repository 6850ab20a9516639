/* gpu/neocog/neocog_gs1.cu — UG and US1 in one launch (see neocog_gs1.cuh).
 *
 * Layer: gpu.  Block (tile, character): 256 threads, a tile of GS_TY x
 * GS_TX US1 positions; a group of 16 lanes takes GS_PX = 2 neighbouring
 * positions of a tile row, lane k of it plane k.
 *  0. The US1 weights, as a dense 6 x 6 window of (a(on), a(off)) pairs a
 *     plane (zero at the circular mask's dead taps: 4 multiply-adds of zero
 *     a position and plane, and no table look-up per tap), are read into
 *     registers before the programmatic wait (no layer's output), the
 *     image under the tile's UG region after it (zero outside the image,
 *     where core clips the window: the same sum, +0 added), so that both
 *     reads are in flight at once; then both go to shared memory.
 *  1. UG: two threads a cell (window rows 0-3 and 4-6), one xor-shuffle;
 *     on/off cut, zero outside the UG plane (US1's clipping); the cell's
 *     sum of squares for the V-cell; the cells this block owns written out
 *     with their occupancy.
 *  2. US1: v^2 of the lane's positions first, split over the 16 plane lanes
 *     (three taps each) and added by xor-shuffles.  v^2 = 0 means every
 *     input of the window is 0, so e = 0 and u_S = 0 (core's formula gives
 *     exactly that): a group whose windows are all empty skips the sums (70
 *     % of US1's windows on digits).  Otherwise, per window row, the row's
 *     7 input cells and the plane's 6 weights are read once from shared
 *     memory for 24 multiply-adds (two positions, two chains each).  Core's
 *     s_finish, occupancy by ballot.
 * Measured on an H200 at batch 1 (docs/lessons.md):
 * a thread a (position, plane) with no skip was bound by its shared-memory
 * reads (ncu at batch 8: L1 73 % busy; 8.9 us in a graph of its own); four
 * positions a lane in 128 threads by the chain of its few warps (7.6 us);
 * this shape 6.5 us, against 10.5 us for the two kernels.
 * No atomics; every output cell written by one thread of one block. */
#include "neocog_gs1.cuh"

#include <errno.h>
#include <string.h>

#include "neocog_dev.cuh"

#define GS_TY 4                 /* tile rows */
#define GS_TX 8                 /* tile columns */
#define GS_PX 2                 /* positions a lane, along a row */
#define GS_KS 16                /* US1 plane stride: lanes a group */
#define GS_WG 7                 /* UG window */
#define GS_WS 6                 /* US1 window */
#define GS_NTH (GS_TY * (GS_TX / GS_PX) * GS_KS)
#define GS_RH (GS_TY + GS_WS - 1)       /* UG region */
#define GS_RW (GS_TX + GS_WS - 1)
#define GS_IH (GS_RH + GS_WG - 1)       /* image region */
#define GS_IW (GS_RW + GS_WG - 1)
#define GS_NW (GS_WS * GS_WS * GS_KS)   /* weight pairs */
#define GS_WPT ((GS_NW + GS_NTH - 1) / GS_NTH)          /* a thread's share */
#define GS_IPT ((GS_IH * GS_IW + GS_NTH - 1) / GS_NTH)

/* What the kernel needs of both layers, the windows dense (0 at dead taps). */
struct gs1_args {
    int n_img, n_ug, n_out, g_pad, s_pad, k_out, n_live;
    float cut, theta;
    float g[GS_WG * GS_WG];
    float c[GS_WS * GS_WS];
    int t_of[GS_WS * GS_WS];    /* US1 live tap of a window slot, -1: dead */
    const float *a, *b;
};

static __global__ void __launch_bounds__(GS_NTH)
gs1_kernel(const __grid_constant__ gs1_args p, const float *__restrict__ in,
           float *__restrict__ ug, uint8_t *__restrict__ ug_occ, float *__restrict__ out,
           uint8_t *__restrict__ occ_out, int n_tx, int n_ty)
{
    __shared__ float2 s_w[GS_WS * GS_WS][GS_KS];
    __shared__ float s_b[GS_KS], s_c[GS_WS * GS_WS], s_g[GS_WG * GS_WG];
    __shared__ float s_img[GS_IH][GS_IW];
    __shared__ float2 s_ug[GS_RH][GS_RW];
    __shared__ float s_q[GS_RH][GS_RW];
    const int tid = threadIdx.x, lane = tid & 31;
    const int tile_y = (int)blockIdx.x / n_tx, tile_x = (int)blockIdx.x - tile_y * n_tx;
    const size_t b = blockIdx.y;
    const int oy0 = tile_y * GS_TY, ox0 = tile_x * GS_TX;
    const int gy0 = oy0 - p.s_pad, gx0 = ox0 - p.s_pad;         /* UG region */
    const int iy0 = gy0 - p.g_pad, ix0 = gx0 - p.g_pad;         /* image region */

    /* 0. the weights (a [2][n_live][16]) into registers, then the wait,
     * then the image region: both reads in flight at once, stored to
     * shared memory after the wait */
    float2 wr[GS_WPT];
#pragma unroll
    for (int j = 0; j < GS_WPT; j++) {
        const int i = tid + j * GS_NTH;
        const int slot = i / GS_KS, k = i - slot * GS_KS;
        const int t = i < GS_NW ? p.t_of[slot] : -1;
        wr[j] = t < 0 ? make_float2(0.0f, 0.0f)
                      : make_float2(__ldg(p.a + t * GS_KS + k),
                                    __ldg(p.a + (p.n_live + t) * GS_KS + k));
    }
    const float br = tid < GS_KS ? __ldg(p.b + tid) : 0.0f;
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();
    const float *inb = in + b * p.n_img * p.n_img;
    float im[GS_IPT];
#pragma unroll
    for (int j = 0; j < GS_IPT; j++) {
        const int i = tid + j * GS_NTH, r = i / GS_IW, c = i - r * GS_IW;
        const int y = iy0 + r, x = ix0 + c;
        im[j] = i < GS_IH * GS_IW && y >= 0 && y < p.n_img && x >= 0 && x < p.n_img
                    ? __ldg(inb + y * p.n_img + x) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < GS_WPT; j++) {
        const int i = tid + j * GS_NTH;
        if (i < GS_NW)
            s_w[i / GS_KS][i % GS_KS] = wr[j];
    }
    if (tid < GS_KS)
        s_b[tid] = br;
    if (tid < GS_WS * GS_WS)
        s_c[tid] = p.c[tid];
    if (tid < GS_WG * GS_WG)
        s_g[tid] = p.g[tid];
#pragma unroll
    for (int j = 0; j < GS_IPT; j++) {
        const int i = tid + j * GS_NTH;
        if (i < GS_IH * GS_IW)
            s_img[i / GS_IW][i % GS_IW] = im[j];
    }
    __syncthreads();

    /* 1. UG: two threads a cell, window rows 0-3 and 4-6, one xor-shuffle
     * (the last lanes, past the region, take part with x = 0) */
    {
        const int cell = tid >> 1, part = tid & 1;
        const int cr = cell / GS_RW, cc = cell - cr * GS_RW;
        const bool live = cell < GS_RH * GS_RW;
        float x = 0.0f;
        if (live) {
            float x1 = 0.0f;
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const int ty = part * 4 + i;
                if (ty < GS_WG)
#pragma unroll
                    for (int tx = 0; tx < GS_WG; tx++) {
                        const float v = s_g[ty * GS_WG + tx] * s_img[cr + ty][cc + tx];
                        if (tx & 1)
                            x1 += v;
                        else
                            x += v;
                    }
            }
            x += x1;
        }
        x += __shfl_xor_sync(0xffffffffu, x, 1);
        const int gy = gy0 + cr, gx = gx0 + cc;
        const bool inside = live && gy >= 0 && gy < p.n_ug && gx >= 0 && gx < p.n_ug;
        const float on = inside && x > p.cut ? x : 0.0f;
        const float off = inside && x < -p.cut ? -x : 0.0f;
        if (live && part == 0) {
            s_ug[cr][cc] = make_float2(on, off);
            s_q[cr][cc] = on * on + off * off;
        }
        /* the cells of this block's own rows and columns; the last tile of
         * a row or column also owns the plane's edge past it */
        if (inside && part == 1 && ug && gy >= oy0 &&
            (gy < oy0 + GS_TY || tile_y == n_ty - 1) && gx >= ox0 &&
            (gx < ox0 + GS_TX || tile_x == n_tx - 1)) {
            const size_t o = b * p.n_ug * p.n_ug + (size_t)gy * p.n_ug + gx;
            nc_dev_g_store(ug + o * 8, ug_occ ? ug_occ + o : nullptr, on, off);
        }
    }
    __syncthreads();

    /* 2. US1: lane (group, k), the group's positions px0, px0 + 1 of row py */
    const int k = tid & (GS_KS - 1), grp = tid >> 4;
    const int py = grp / (GS_TX / GS_PX), px0 = (grp % (GS_TX / GS_PX)) * GS_PX;
    float v2[GS_PX];
#pragma unroll
    for (int q = 0; q < GS_PX; q++)
        v2[q] = 0.0f;
#pragma unroll
    for (int j = 0; j < (GS_WS * GS_WS + GS_KS - 1) / GS_KS; j++) {
        const int i = k + j * GS_KS;
        if (i < GS_WS * GS_WS) {
            const int ty = i / GS_WS, tx = i - ty * GS_WS;
            const float c = s_c[i];
#pragma unroll
            for (int q = 0; q < GS_PX; q++)
                v2[q] = fmaf(c, s_q[py + ty][px0 + q + tx], v2[q]);
        }
    }
#pragma unroll
    for (int q = 0; q < GS_PX; q++)
#pragma unroll
        for (int m = GS_KS / 2; m > 0; m >>= 1)     /* within the group's 16 lanes */
            v2[q] += __shfl_xor_sync(0xffffffffu, v2[q], m);
    float e[GS_PX][2];
    bool any = false;
#pragma unroll
    for (int q = 0; q < GS_PX; q++) {
        e[q][0] = e[q][1] = 0.0f;
        any |= v2[q] > 0.0f;
    }
    if (any) {
#pragma unroll
        for (int ty = 0; ty < GS_WS; ty++) {
            float2 u[GS_PX + GS_WS - 1];
#pragma unroll
            for (int j = 0; j < GS_PX + GS_WS - 1; j++)
                u[j] = s_ug[py + ty][px0 + j];
#pragma unroll
            for (int tx = 0; tx < GS_WS; tx++) {
                const float2 w = s_w[ty * GS_WS + tx][k];
#pragma unroll
                for (int q = 0; q < GS_PX; q++) {
                    e[q][tx & 1] = fmaf(w.x, u[q + tx].x, e[q][tx & 1]);
                    e[q][tx & 1] = fmaf(w.y, u[q + tx].y, e[q][tx & 1]);
                }
            }
        }
    }
    const int oy = oy0 + py;
    const float bk = s_b[k];
#pragma unroll
    for (int q = 0; q < GS_PX; q++) {
        const int ox = ox0 + px0 + q;
        const bool valid = oy < p.n_out && ox < p.n_out;
        const float u = valid && k < p.k_out
                            ? nc_dev_s_finish(e[q][0] + e[q][1], v2[q], bk, p.theta) : 0.0f;
        const size_t o = b * p.n_out * p.n_out + (size_t)oy * p.n_out + ox;
        if (valid)
            out[o * GS_KS + k] = u;
        const unsigned fired = __ballot_sync(0xffffffffu, u > 0.0f);
        if (valid && occ_out && k == 0)
            occ_out[o] = (uint8_t)(((fired >> (lane & 16)) & 0xffffu) != 0u);
    }
}

extern "C" int nc_gpu_neocog_gs1_check(const nc_gpu_neocog_g_args *g,
                                       const nc_gpu_neocog_s_args *s)
{
    if (!g || !s)
        return -EINVAL;
    const nc_gpu_neocog_geom &gg = g->g, &sg = s->g;
    if (gg.step != 1 || sg.step != 1 || gg.win != GS_WG || sg.win != GS_WS ||
        sg.pad < 0 || sg.pad >= GS_WS || gg.pad < 0 || gg.n_out != sg.n_in || gg.n_in < 1 ||
        sg.n_out < 1 || s->k_in != 2 || s->in_stride != 8 ||
        nc_dev_kstride(s->k_out) != GS_KS || !s->a || !s->b || !(g->cut >= 0.0f))
        return -EINVAL;
    return 0;
}

/* The dense windows of gs1_args from the geometries' row tables. */
static void dense_args(const nc_gpu_neocog_g_args *g, const nc_gpu_neocog_s_args *s,
                       gs1_args *p)
{
    memset(p, 0, sizeof *p);
    p->n_img = g->g.n_in;
    p->n_ug = g->g.n_out;
    p->n_out = s->g.n_out;
    p->g_pad = g->g.pad;
    p->s_pad = s->g.pad;
    p->k_out = (int)s->k_out;
    p->n_live = s->g.n_live;
    p->cut = g->cut;
    p->theta = s->theta;
    p->a = s->a;
    p->b = s->b;
    for (int ty = 0; ty < GS_WG; ty++)
        for (int tx = g->g.row_lo[ty]; tx < g->g.row_hi[ty]; tx++)
            p->g[ty * GS_WG + tx] = g->g.w[g->g.row_first[ty] + tx - g->g.row_lo[ty]];
    for (int i = 0; i < GS_WS * GS_WS; i++)
        p->t_of[i] = -1;
    for (int ty = 0; ty < GS_WS; ty++)
        for (int tx = s->g.row_lo[ty]; tx < s->g.row_hi[ty]; tx++) {
            const int t = s->g.row_first[ty] + tx - s->g.row_lo[ty];
            p->t_of[ty * GS_WS + tx] = t;
            p->c[ty * GS_WS + tx] = s->g.w[t];
        }
}

extern "C" int nc_gpu_neocog_gs1_forward(const nc_gpu_neocog_g_args *g,
                                         const nc_gpu_neocog_s_args *s, const float *in,
                                         float *ug, uint8_t *ug_occ, float *out,
                                         uint8_t *occ_out, uint32_t batch, cudaStream_t stream)
{
    if (nc_gpu_neocog_gs1_check(g, s) < 0 || !in || !out || batch < 1 || batch > 65535)
        return -EINVAL;
    gs1_args p;
    dense_args(g, s, &p);
    const int n_ty = (p.n_out + GS_TY - 1) / GS_TY, n_tx = (p.n_out + GS_TX - 1) / GS_TX;
    NC_CUDA_CHECK(nc_dev_launch(gs1_kernel, dim3((unsigned)(n_ty * n_tx), batch), dim3(GS_NTH),
                                0, stream, batch, p, in, ug, ug_occ, out, occ_out, n_tx, n_ty));
    return 0;
}

/* gpu/neocog/neocog_c_warp.cu — the C-layer for small batches by teams of warps
 * (NC_GPU_NEOCOG_C_WARP, see neocog_c.cuh), the C twin of neocog_s_warp.cu.
 *
 * Layer: gpu.  Block: P positions x W warps (P * W = 8, or 16 when W is 16)
 * of character blockIdx.y; warp w of a position's team takes the live taps w,
 * w + W, .. of its window.
 *  1. lane = tap: the input's occupancy map says which of the warp's taps
 *     read an occupied cell (0 outside the input: core's edge clipping);
 *     four rounds of 32 taps have their loads in flight together, and the
 *     occupied ones go to the warp's list in shared memory as (d(nu), cell)
 *     by ballot + popc, in tap order.
 *  2. lanes = G groups of Lq lanes, Lq the float4s of a cell's planes
 *     rounded up to a power of two (at most 32): group j sums d * in(cell)
 *     over entries j, j + G, .. straight from global memory (16-byte loads,
 *     four entries in flight), then the groups meet by a fixed shuffle tree
 *     and the team's warps in warp order, psi, one 16-byte store a float4.
 * Planes past 128 run as further passes of step 2 over the same list.  An
 * unoccupied cell adds +0, so the skips are exact; no atomics, every output
 * cell written once, the same bits every launch. */
#include "neocog_c.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

#define CW_MAX_TEAM 16
#define CW_ROUNDS 4         /* rounds of 32 taps whose occupancy loads fly together */

static __host__ __device__ __forceinline__ uint32_t cw_positions(uint32_t W)
{
    return W >= 8u ? 1u : 8u / W;
}

/* the team's partial sums [P * W][32] float4, each warp's list of its share
 * of the taps (ceil(nl / W) entries), and when g has no device copy of its
 * taps (table) the tap table: packed (ty, tx) and d(nu) [nl] */
static size_t cw_smem(uint32_t P, uint32_t W, uint32_t nl, bool table)
{
    const size_t share = (nl + W - 1) / W;
    return (size_t)P * W * (share * sizeof(float2) + 32u * sizeof(float4)) +
           (table ? (size_t)nl * 2u * sizeof(int) : 0u);
}

static __global__ void __launch_bounds__(512, 2)
c_warp_kernel(const __grid_constant__ nc_gpu_neocog_c_args c, const float *__restrict__ in,
              const uint8_t *__restrict__ occ_in, float *__restrict__ out,
              uint8_t *__restrict__ occ_out, uint32_t P, uint32_t W, uint32_t share)
{
    extern __shared__ float4 cw_sm[];
    const nc_gpu_neocog_geom &g = c.g;
    const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    /* W and Lq are powers of two: shifts and masks, where a division by a
     * value known only at run time costs some twenty instructions */
    const uint32_t w_sh = (uint32_t)__ffs((int)W) - 1u;
    const uint32_t p = warp >> w_sh, w = warp & (W - 1u);
    const uint32_t n_i = g.n_in * g.n_in, n_o = g.n_out * g.n_out, nl = g.n_live;
    const size_t b = blockIdx.y;
    const uint32_t o = blockIdx.x * P + p;
    const uint32_t Q = nc_dev_kstride(c.k) >> 2;          /* float4s a cell */
    float4 *red = cw_sm;                                    /* [P * W][32] */
    float2 *lists = (float2 *)(red + (size_t)P * W * 32u);
    float2 *lst = lists + (size_t)warp * share;
    int *tyx = (int *)(lists + (size_t)P * W * share);     /* [nl] */
    float *dw = (float *)(tyx + nl);                        /* [nl] */
    const unsigned lt = nc_dev_lanemask_lt();

    /* the taps, lane j of round r looking at tap t0 + (32 r + j) W: from
     * the device table (the first rounds' before the wait: it is no layer's
     * output), or else the table once per block from the constant bank,
     * which serialises lanes that read different taps */
    const int2 *gt = (const int2 *)g.taps;
    const bool live = o < n_o;
    const int by = (int)(o / g.n_out) * g.step - g.pad;
    const int bx = (int)(o % g.n_out) * g.step - g.pad;
    int2 tw0[CW_ROUNDS];
#pragma unroll
    for (uint32_t r = 0; r < CW_ROUNDS; r++) {
        const uint32_t t = w + (32u * r + lane) * W;
        tw0[r] = gt && live && t < nl ? __ldg(gt + t) : make_int2(0, 0);
    }
    if (!gt) {
        nc_dev_stage_taps(g, tyx, dw);
        __syncthreads();
    }
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();          /* the S-layer's output is read from here on */

    /* 1. the warp's occupied taps, in tap order */
    uint32_t n = 0;
    if (live) {
        const uint8_t *occb = occ_in ? occ_in + b * n_i : nullptr;
        for (uint32_t t0 = w; t0 < nl; t0 += 32u * W * CW_ROUNDS) {
            bool on[CW_ROUNDS];
            int ip[CW_ROUNDS];
            int2 tw[CW_ROUNDS];     /* (ty << 16 | tx, bits of d(nu)) */
#pragma unroll
            for (uint32_t r = 0; r < CW_ROUNDS; r++) {
                const uint32_t t = t0 + (32u * r + lane) * W;
                tw[r] = tw0[r];
                if (t < nl && (!gt || t0 != w))
                    tw[r] = nc_dev_tap(gt, tyx, dw, t);
            }
#pragma unroll
            for (uint32_t r = 0; r < CW_ROUNDS; r++) {
                const uint32_t t = t0 + (32u * r + lane) * W;
                on[r] = false;
                ip[r] = 0;
                if (t < nl) {
                    const int iy = by + (tw[r].x >> 16), ix = bx + (tw[r].x & 0xffff);
                    ip[r] = iy * g.n_in + ix;
                    on[r] = iy >= 0 && iy < g.n_in && ix >= 0 && ix < g.n_in &&
                            (!occb || occb[ip[r]]);
                }
            }
#pragma unroll
            for (uint32_t r = 0; r < CW_ROUNDS; r++) {
                const unsigned m = __ballot_sync(0xffffffffu, on[r]);
                if (on[r])
                    lst[n + __popc(m & lt)] = make_float2(__int_as_float(tw[r].y),
                                                          __int_as_float(ip[r]));
                n += __popc(m);
            }
        }
    }
    __syncwarp();

    /* 2. per pass of up to 32 float4s of planes */
    const float4 *in4 = (const float4 *)in + b * n_i * Q;
    bool fired = false;
    for (uint32_t q0 = 0; q0 < Q; q0 += 32u) {
        const uint32_t Qp = Q - q0 < 32u ? Q - q0 : 32u;
        const uint32_t lq_sh = Qp <= 1u ? 0u : 32u - (uint32_t)__clz((int)Qp - 1);
        const uint32_t Lq = 1u << lq_sh;
        const uint32_t G = 32u >> lq_sh, grp = lane >> lq_sh, sub = lane & (Lq - 1u);
        const bool act = sub < Qp;
        float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (act)
            nc_dev_list_fma4<4>(lst, n, grp, G, in4, Q, q0 + sub, acc);
        /* the groups: lane sub of group 0 ends with the sum, groups added
         * in a fixed tree */
        for (uint32_t d = Lq; d < 32u; d <<= 1) {
            acc.x += __shfl_down_sync(0xffffffffu, acc.x, d);
            acc.y += __shfl_down_sync(0xffffffffu, acc.y, d);
            acc.z += __shfl_down_sync(0xffffffffu, acc.z, d);
            acc.w += __shfl_down_sync(0xffffffffu, acc.w, d);
        }
        float none = 0.0f;
        if (W > 1)      /* the team, in warp order */
            acc = nc_dev_team_sum4(red, nullptr, warp, w, W, lane, acc, none);
        if (w == 0 && live && grp == 0 && act) {
            const float4 v = nc_dev_psi4(acc, (int)(4u * (q0 + sub)), (int)c.k);
            ((float4 *)out)[(b * n_o + o) * Q + q0 + sub] = v;
            fired |= v.x > 0.0f || v.y > 0.0f || v.z > 0.0f || v.w > 0.0f;
        }
    }
    const bool any = __any_sync(0xffffffffu, fired);
    if (occ_out && w == 0 && live && lane == 0)
        occ_out[b * n_o + o] = (uint8_t)any;
}

extern "C" int nc_gpu_neocog_c_warp_forward(const nc_gpu_neocog_c_args *c, const float *in,
                                            const uint8_t *occ_in, float *out,
                                            uint8_t *occ_out, uint32_t batch, uint32_t team,
                                            cudaStream_t stream)
{
    if (!c || !in || !out || batch < 1 || c->k < 1 || c->k > NC_NEOCOG_MAX_PLANES ||
        c->g.n_out < 1 || c->g.n_live < 1 || c->g.step < 1 || ((uintptr_t)in & 15) ||
        ((uintptr_t)out & 15))
        return -EINVAL;
    if (team > CW_MAX_TEAM || (team & (team - 1)) != 0)
        return -EINVAL;
    const uint32_t nl = (uint32_t)c->g.n_live;
    const uint32_t n_o = (uint32_t)(c->g.n_out * c->g.n_out);
    if (team == 0) {
        /* about 24 warps an SM, no fewer than two taps a warp */
        int dev = 0, n_sm = 0;
        NC_CUDA_CHECK(cudaGetDevice(&dev));
        NC_CUDA_CHECK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev));
        const size_t have = (size_t)batch * n_o, want = (size_t)n_sm * 24u;
        team = 1;
        while (team < CW_MAX_TEAM && have * team < want && 2u * 2u * team <= nl)
            team *= 2;
    }
    const uint32_t W = team, P = cw_positions(W);
    const size_t n_blocks = (n_o + P - 1) / P;     /* a character's; characters on y */
    if (batch > 65535u || (size_t)batch * n_o > 0x7fffffffu ||
        (size_t)c->g.n_in * c->g.n_in * batch * (nc_dev_kstride(c->k) / 4) > 0x7fffffffu)
        return -E2BIG;
    const size_t smem = cw_smem(P, W, nl, c->g.taps == NULL);
    int r;
    if ((r = nc_dev_smem_allow((const void *)c_warp_kernel, smem)) < 0)
        return r;
    NC_CUDA_CHECK(nc_dev_launch(c_warp_kernel, dim3((unsigned)n_blocks, batch),
                                dim3(P * W * 32u), smem, stream, batch, *c, in, occ_in, out,
                                occ_out, P, W, (nl + W - 1) / W));
    return 0;
}

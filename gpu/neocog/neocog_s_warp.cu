/* gpu/neocog/neocog_s_warp.cu — the S-layer for small batches, a team of warps a
 * position reading its window from global memory (see neocog_s_warp.cuh).
 *
 * Layer: gpu.  Block: P positions x W warps (P * W = 8, or 16 when W is
 * 16), character blockIdx.z and positions p0 .. p0 + P - 1 of its output
 * plane (row-major, so a block's positions share most of their windows in
 * L1), planes pb * blockIdx.y .. + pb - 1 (pb a power of two, 8 .. 128). */
#include "neocog_s_warp.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

/* Entries (u, weight offset) a warp lists before its lanes run down them;
 * the scan flushes the list whenever the next four cells' planes might not
 * fit, so any density is exact. */
#define S_WARP_CAP 256u
/* Occupied taps whose cells a warp loads at once. */
#define S_WARP_TAPS 4u

static __host__ __device__ __forceinline__ uint32_t s_warp_positions(uint32_t W)
{
    return W >= 8u ? 1u : 8u / W;
}

/* list entries [P * W][cap], each warp's occupied taps of a round [P * W]
 * [32] (input cell, tap, c(nu)), then the tap table (nl 0 when g has a
 * device copy): packed (ty, tx) [nl] and c(nu) [nl] */
static size_t s_warp_smem(uint32_t P, uint32_t W, uint32_t nl)
{
    return (size_t)P * W * (S_WARP_CAP * sizeof(float2) + 32u * sizeof(int4)) +
           (size_t)nl * 2u * sizeof(int);
}

/* e += u * a[4 (off + q4) .. + 3] over the listed entries eg, eg + Ge, ..
 * below n (off in float4s; lanes that own planes only), eight loads in
 * flight */
static __device__ __forceinline__ void s_warp_run(const float2 *lst, uint32_t n,
                                                  const float *__restrict__ a, uint32_t q4,
                                                  uint32_t eg, uint32_t Ge, bool act,
                                                  float4 &e)
{
    __syncwarp();
    if (act)
        nc_dev_list_fma4<8>(lst, n, eg, Ge, (const float4 *)a, 1u, q4, e);
    __syncwarp();       /* the list is written again after this */
}

/* the same, out of line: the scan's rare flush of a full list, so the
 * scan's registers need not hold the eight loads in flight */
static __device__ __noinline__ float4 s_warp_flush(const float2 *lst, uint32_t n,
                                                   const float *__restrict__ a, uint32_t q4,
                                                   uint32_t eg, uint32_t Ge, bool act,
                                                   float4 e)
{
    s_warp_run(lst, n, a, q4, eg, Ge, act, e);
    return e;
}

/* SKIP: a lone warp (W = 1) whose window holds no occupied input cell
 * writes zeros and moves on.  e and v^2 are 0 there, so core's formula
 * gives u_S = 0 exactly on every plane; at large batches that is most
 * positions of US1 and US2 (US3 at 1024 characters: 1.12 -> 1.07 us a
 * character).  The small batches' kernel goes without it: its state then
 * spilled past 64 registers and batch 1 lost 2 us. */
template <bool SKIP>
static __global__ void __launch_bounds__(512, 2)
s_warp_kernel(const __grid_constant__ nc_gpu_neocog_s_args s, const float *__restrict__ in,
              const uint8_t *__restrict__ occ_in, float *__restrict__ out,
              uint8_t *__restrict__ occ_out, uint32_t P, uint32_t W, uint32_t pb)
{
    extern __shared__ float2 ent[];     /* [P * W][cap] */
    const nc_gpu_neocog_geom &g = s.g;
    const uint32_t ks = nc_dev_kstride(s.k_out), nl = g.n_live, kin = s.k_in;
    const uint32_t n_i = g.n_in * g.n_in, n_o = g.n_out * g.n_out;
    const size_t b = blockIdx.z;
    const uint32_t p0 = blockIdx.x * P;
    int4 *taps = (int4 *)(ent + (size_t)P * W * S_WARP_CAP);   /* [P * W][32] */
    int *tyx = (int *)(taps + (size_t)P * W * 32u);             /* [nl] */
    float *cw = (float *)(tyx + nl);                            /* [nl] */
    const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    /* W, Lk and L are powers of two: shifts and masks, where a division
     * by a value known only at run time costs some twenty instructions */
    const uint32_t w_sh = (uint32_t)__ffs((int)W) - 1u;
    const uint32_t p = warp >> w_sh, w = warp & (W - 1u), o = p0 + p;
    /* the list's entries by Ge groups of Lk lanes: Lk the float4s of this
     * block's planes rounded up to a power of two, lane ql of a group owning
     * planes k4 .. k4 + 3 (at US1's 16 planes, 8 entries at once) */
    const uint32_t nq = min(ks - blockIdx.y * pb, pb) / 4u;
    const uint32_t lk_sh = nq <= 1u ? 0u : 32u - (uint32_t)__clz((int)nq - 1);
    const uint32_t Lk = 1u << lk_sh;
    const uint32_t Ge = 32u >> lk_sh, eg = lane >> lk_sh, ql = lane & (Lk - 1u);
    const uint32_t k4 = blockIdx.y * pb + 4u * ql;
    const bool act = ql < nq;
    const unsigned lt = nc_dev_lanemask_lt();
    /* lanes per tap: kin rounded up to a power of two, at most 32; G taps
     * a load */
    const uint32_t l_sh = kin >= 32u ? 5u : 32u - (uint32_t)__clz((int)kin - 1);
    const uint32_t L = 1u << l_sh;
    const uint32_t G = 32u >> l_sh, grp = lane >> l_sh, sub = lane & (L - 1u);

    /* the taps: lane j of a round looks at tap w + W (32 r + j), from the
     * device table (the first round's before the wait: it is no layer's
     * output) or from the constant bank through shared memory */
    const int2 *gt = (const int2 *)g.taps;
    int2 tw0 = make_int2(0, 0);
    const int oy = (int)(o / g.n_out) - g.pad, ox = (int)(o % g.n_out) - g.pad;
    if (gt) {
        if (o < n_o && w + lane * W < nl)
            tw0 = __ldg(gt + w + lane * W);
    } else {
        nc_dev_stage_taps(g, tyx, cw);
        __syncthreads();
    }
    /* the writing lanes' b, also no layer's output (16-byte aligned: s.a's
     * layout puts it after whole rows of ks floats) */
    float4 b4 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (w == 0 && o < n_o && act && eg == 0)
        b4 = __ldg((const float4 *)(s.b + k4));
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();          /* the previous layer's output is read from here on */

    float4 e = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float v2 = 0.0f;
    if (o < n_o) {
        const float *inb = in + b * n_i * s.in_stride;
        const uint8_t *occb = occ_in ? occ_in + b * n_i : nullptr;
        float2 *lst = ent + (size_t)warp * S_WARP_CAP;
        int4 *tl = taps + (size_t)warp * 32u;
        uint32_t n = 0;
        bool seen = false;      /* an occupied tap in the window */
        for (uint32_t t0 = w; t0 < nl; t0 += 32u * W) {
            const uint32_t t = t0 + lane * W;
            bool on = false;
            int ip = 0;
            int2 tw = tw0;      /* (ty << 16 | tx, bits of c(nu)) */
            if (t < nl && (!gt || t0 != w))
                tw = nc_dev_tap(gt, tyx, cw, t);
            if (t < nl) {
                const int iy = oy + (tw.x >> 16), ix = ox + (tw.x & 0xffff);
                ip = iy * g.n_in + ix;
                on = iy >= 0 && iy < g.n_in && ix >= 0 && ix < g.n_in &&
                     (!occb || occb[ip]);
            }
            /* the occupied taps to the warp's table in tap order (input
             * cell, tap, c(nu)): one store, where a search for the r-th set
             * bit and two shuffles a slot cost some 40 instructions */
            const unsigned m = __ballot_sync(0xffffffffu, on);
            const uint32_t n_on = __popc(m);
            if (SKIP)
                seen = seen || m != 0u;
            if (on)
                tl[__popc(m & lt)] = make_int4(ip, (int)t, tw.y, 0);
            __syncwarp();
            /* G x 4 of them at a time: lane group lane / L of slot q takes
             * the (i + q G + lane / L)-th, lane % L its plane; the four
             * slots' loads are in flight together */
            for (uint32_t i = 0; i < n_on; i += G * S_WARP_TAPS) {
                int4 tq[S_WARP_TAPS];
#pragma unroll
                for (uint32_t q = 0; q < S_WARP_TAPS; q++) {
                    const uint32_t r = i + q * G + grp;
                    tq[q] = r < n_on ? tl[r] : make_int4(-1, 0, 0, 0);      /* x: -1, none */
                }
                for (uint32_t k0 = 0; k0 < kin; k0 += 32u) {
                    const uint32_t kap = k0 + sub;
                    if (n + 32u * S_WARP_TAPS > S_WARP_CAP) {   /* room for all four */
                        e = s_warp_flush(lst, n, s.a, k4 / 4u, eg, Ge, act, e);
                        n = 0;
                    }
                    float xq[S_WARP_TAPS];
#pragma unroll
                    for (uint32_t q = 0; q < S_WARP_TAPS; q++)
                        xq[q] = tq[q].x >= 0 && kap < kin
                                    ? __ldg(inb + (size_t)tq[q].x * s.in_stride + kap) : 0.0f;
#pragma unroll
                    for (uint32_t q = 0; q < S_WARP_TAPS; q++) {
                        const float x = xq[q];
                        v2 = fmaf(__int_as_float(tq[q].z) * x, x, v2);
                        const unsigned nz = __ballot_sync(0xffffffffu, x != 0.0f);
                        if (x != 0.0f)
                            lst[n + __popc(nz & lt)] = make_float2(
                                x, __int_as_float((int)((kap * nl + (uint32_t)tq[q].y) *
                                                        (ks / 4u))));
                        n += __popc(nz);
                    }
                }
            }
            __syncwarp();       /* the table is written again after this */
        }
        if (SKIP && W == 1 && !seen) {
            if (act && eg == 0)
                *(float4 *)(out + (b * n_o + o) * ks + k4) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (occ_out && lane == 0 && gridDim.y == 1)
                occ_out[b * n_o + o] = 0;
            return;
        }
        s_warp_run(lst, n, s.a, k4 / 4u, eg, Ge, act, e);
        /* the entry groups, in a fixed tree: group 0 ends with the sums */
        for (uint32_t d = Lk; d < 32u; d <<= 1) {
            e.x += __shfl_down_sync(0xffffffffu, e.x, d);
            e.y += __shfl_down_sync(0xffffffffu, e.y, d);
            e.z += __shfl_down_sync(0xffffffffu, e.z, d);
            e.w += __shfl_down_sync(0xffffffffu, e.w, d);
        }
        /* one v^2 for every lane: lane 0's sum */
        v2 = __shfl_sync(0xffffffffu, nc_dev_warp_sum(v2), 0);
    }
    if (W > 1) {        /* the team's partial sums, in the spent lists' memory */
        float4 *red = (float4 *)ent;                            /* [P * W][32] */
        e = nc_dev_team_sum4(red, (float *)(red + (size_t)P * W * 32u), warp, w, W, lane, e,
                             v2);
    }
    if (w != 0 || o >= n_o)
        return;
    const size_t row = b * n_o + o;
    float4 val = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (act && eg == 0) {
        val = nc_dev_s_finish4b(e, v2, b4, s, k4);
        *(float4 *)(out + row * ks + k4) = val;
    }
    const bool any = __any_sync(0xffffffffu, val.x > 0.0f || val.y > 0.0f || val.z > 0.0f ||
                                                 val.w > 0.0f);
    /* one block of planes writes the map; with several, the launcher
     * cleared it and any block that fires sets it */
    if (occ_out && lane == 0 && (gridDim.y == 1 || any))
        occ_out[row] = (uint8_t)any;
}

extern "C" uint32_t nc_gpu_neocog_s_warp_default(const nc_gpu_neocog_s_args *s,
                                                 uint32_t batch, uint32_t n_sm)
{
    if (!s || batch < 1 || n_sm < 1 || s->g.n_out < 1)
        return 1;
    const size_t ks = nc_dev_kstride(s->k_out);
    const size_t have = (size_t)batch * s->g.n_out * s->g.n_out *
                        ((ks + NC_GPU_NEOCOG_S_WARP_PLANES - 1) / NC_GPU_NEOCOG_S_WARP_PLANES);
    const size_t want = (size_t)n_sm * 24u;
    uint32_t W = 1;
    while (W < NC_GPU_NEOCOG_S_WARP_MAX && have * W < want && 2u * 2u * W <= (uint32_t)s->g.n_live)
        W *= 2;
    return W;
}

extern "C" int nc_gpu_neocog_s_forward_warp(const nc_gpu_neocog_s_args *s, const float *in,
                                            const uint8_t *occ_in, float *out,
                                            uint8_t *occ_out, uint32_t batch, uint32_t warps,
                                            uint32_t planes, cudaStream_t stream)
{
    if (!s || !in || !out || batch < 1 || s->k_in < 1 || s->k_in > s->in_stride ||
        s->k_out < 1 || s->k_out > NC_NEOCOG_MAX_PLANES || !s->a || !s->b ||
        s->g.n_out < 1 || s->g.n_live < 1 || s->g.step != 1 ||
        !(s->theta > 0.0f && s->theta < 1.0f))
        return -EINVAL;
    if (((uintptr_t)s->a & 15) != 0 || ((uintptr_t)s->b & 15) != 0 ||
        ((uintptr_t)in & 15) != 0 || ((uintptr_t)out & 15) != 0)
        return -EINVAL;
    int dev = 0, n_sm = 0;
    if (warps == 0) {
        NC_CUDA_CHECK(cudaGetDevice(&dev));
        NC_CUDA_CHECK(cudaDeviceGetAttribute(&n_sm, cudaDevAttrMultiProcessorCount, dev));
        warps = nc_gpu_neocog_s_warp_default(s, batch, (uint32_t)n_sm);
    }
    if (warps > NC_GPU_NEOCOG_S_WARP_MAX || (warps & (warps - 1)) != 0)
        return -EINVAL;
    const uint32_t pb = planes ? planes : NC_GPU_NEOCOG_S_WARP_PLANES;
    if (pb < NC_GPU_NEOCOG_S_WARP_PLANES_MIN || pb > NC_GPU_NEOCOG_S_WARP_PLANES ||
        (pb & (pb - 1)) != 0)
        return -EINVAL;
    const uint32_t ks = nc_dev_kstride(s->k_out), nl = (uint32_t)s->g.n_live;
    /* weight offsets travel as 32-bit integers */
    if ((uint64_t)s->k_in * nl * ks >= 0x7fffffffu)
        return -EINVAL;
    const uint32_t W = warps, P = s_warp_positions(W);
    const uint32_t n_o = (uint32_t)(s->g.n_out * s->g.n_out);
    const size_t n_blocks = (n_o + P - 1) / P;     /* a character's; characters on z */
    const uint32_t n_kc = (ks + pb - 1) / pb;
    if (n_blocks > 0x7fffffffu || n_kc > 65535u || batch > 65535u)
        return -E2BIG;
    const size_t smem = s_warp_smem(P, W, s->g.taps ? 0 : nl);
    /* past the batches the engine runs this kernel for in the sparse
     * variant's place, lone warps skip empty windows */
    auto kern = W == 1 && batch > NC_GPU_NEOCOG_S_WARP_SKIP_FROM ? s_warp_kernel<true>
                                                                 : s_warp_kernel<false>;
    int r;
    if ((r = nc_dev_smem_allow((const void *)kern, smem)) < 0)
        return r;
    if (occ_out && n_kc > 1)
        NC_CUDA_CHECK(cudaMemsetAsync(occ_out, 0, (size_t)batch * n_o, stream));
    NC_CUDA_CHECK(nc_dev_launch(kern, dim3((unsigned)n_blocks, n_kc, batch),
                                dim3(P * W * 32u), smem, stream, batch, *s, in, occ_in, out,
                                occ_out, P, W, pb));
    return 0;
}

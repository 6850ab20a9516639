/* gpu/neocog/neocog_dev.cuh — device helpers shared by the neocognitron kernels
 * (gpu/neocog_*.cu only; C code includes the per-op .cuh files instead).
 *
 * Layer: gpu. */
#ifndef NC_GPU_NEOCOG_DEV_CUH
#define NC_GPU_NEOCOG_DEV_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.cuh"
#include "launch.cuh"
#include "neocog_geom.h"

/* Plane stride, as core's nc_neocog_kstride. */
static __host__ __device__ __forceinline__ uint32_t nc_dev_kstride(uint32_t k)
{
    return k == 0 ? 8u : (k + 7u) & ~7u;
}

/* Lanes that serve one position in the skewered sparse kernels: ks rounded
 * up to whole warps; when ks is 8 or 16 the warp splits the position's list
 * into 32 / ks slices and adds them up at the end. */
static __host__ __device__ __forceinline__ uint32_t nc_dev_lanes(uint32_t ks)
{
    return (ks + 31u) & ~31u;
}
static __host__ __device__ __forceinline__ uint32_t nc_dev_slices(uint32_t ks)
{
    return ks < 32u && 32u % ks == 0 ? 32u / ks : 1u;
}

/* Let kernel f use `bytes` of dynamic shared memory (past 48 KB it must be
 * asked for); -E2BIG when the device cannot give that much. */
static inline int nc_dev_smem_allow(const void *f, size_t bytes)
{
    if (bytes <= 48u * 1024u)
        return 0;
    int dev = 0, optin = 0;
    NC_CUDA_CHECK(cudaGetDevice(&dev));
    NC_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (bytes > (size_t)optin)
        return -E2BIG;
    NC_CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)bytes));
    return 0;
}

static __device__ __forceinline__ unsigned nc_dev_lanemask_lt(void)
{
    unsigned m;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
    return m;
}

/* acc += w * v, lane by lane, each one fused multiply-add (the C kernels'
 * summation step: the same rounding wherever it is used) */
static __device__ __forceinline__ void nc_dev_fma4(float w, float4 v, float4 &acc)
{
    acc.x = fmaf(w, v.x, acc.x);
    acc.y = fmaf(w, v.y, acc.y);
    acc.z = fmaf(w, v.z, acc.z);
    acc.w = fmaf(w, v.w, acc.w);
}

/* u_S of seed eq. 1 from the numerator e, tv = theta sqrt(v^2), the plane's b
 * and gain = theta / (1 - theta), as core's s_finish */
static __device__ __forceinline__ float nc_dev_s_finish_tv(float e, float tv, float b,
                                                           float gain)
{
    const float x = (1.0f + e) / (1.0f + tv * b) - 1.0f;
    return x > 0.0f ? gain * x : 0.0f;
}

/* the same from v^2 and theta */
static __device__ __forceinline__ float nc_dev_s_finish(float e, float v2, float b, float theta)
{
    return nc_dev_s_finish_tv(e, theta * sqrtf(v2), b, theta / (1.0f - theta));
}

/* The live taps of g for the warp-team kernels, each as (ty << 16 | tx,
 * bits of its weight): from g's device table gt, or from the block's copy
 * in shared memory (tyx, w [n_live]) when gt is NULL.  nc_dev_stage_taps
 * makes that copy (every thread of the block calls it, then the block
 * syncs). */
static __device__ __forceinline__ void nc_dev_stage_taps(const nc_gpu_neocog_geom &g, int *tyx,
                                                         float *w)
{
    for (uint32_t t = threadIdx.x; t < (uint32_t)g.n_live; t += blockDim.x) {
        tyx[t] = (int)g.tap_y[t] << 16 | (int)g.tap_x[t];
        w[t] = g.w[t];
    }
}

static __device__ __forceinline__ int2 nc_dev_tap(const int2 *__restrict__ gt, const int *tyx,
                                                  const float *w, uint32_t t)
{
    return gt ? __ldg(gt + t) : make_int2(tyx[t], __float_as_int(w[t]));
}

/* A UG cell as core's g_ref lays it out: on and off in lanes 0 and 1 of
 * its 8 at out8, zeros in the rest, and its occupancy byte (occ may be
 * NULL) */
static __device__ __forceinline__ void nc_dev_g_store(float *out8, uint8_t *occ, float on,
                                                      float off)
{
    float4 *po = (float4 *)out8;
    po[0] = make_float4(on, off, 0.0f, 0.0f);
    po[1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (occ)
        *occ = (uint8_t)(on > 0.0f || off > 0.0f);
}

/* nc_dev_s_finish for planes k .. k + 3 with their b in b4 (0 past k_out:
 * the pad lanes) */
static __device__ __forceinline__ float4 nc_dev_s_finish4b(float4 e, float v2, float4 b4,
                                                           const nc_gpu_neocog_s_args &s,
                                                           uint32_t k)
{
    float4 r;
    r.x = k < s.k_out ? nc_dev_s_finish(e.x, v2, b4.x, s.theta) : 0.0f;
    r.y = k + 1 < s.k_out ? nc_dev_s_finish(e.y, v2, b4.y, s.theta) : 0.0f;
    r.z = k + 2 < s.k_out ? nc_dev_s_finish(e.z, v2, b4.z, s.theta) : 0.0f;
    r.w = k + 3 < s.k_out ? nc_dev_s_finish(e.w, v2, b4.w, s.theta) : 0.0f;
    return r;
}

/* the same, b read here (s.b holds ks(k_out) values, zero past k_out) */
static __device__ __forceinline__ float4 nc_dev_s_finish4(float4 e, float v2,
                                                          const nc_gpu_neocog_s_args &s,
                                                          uint32_t k)
{
    return nc_dev_s_finish4b(e, v2, make_float4(s.b[k], s.b[k + 1], s.b[k + 2], s.b[k + 3]),
                             s, k);
}

/* psi(x) = max(x, 0) / (1 + max(x, 0)) of the four planes k .. k + 3 whose
 * sums x holds, 0 on the pad lanes past k_out (the C kernels' last step) */
static __device__ __forceinline__ float4 nc_dev_psi4(float4 x, int k, int k_out)
{
    float4 v;
    v.x = (k + 0 < k_out && x.x > 0.0f) ? x.x / (1.0f + x.x) : 0.0f;
    v.y = (k + 1 < k_out && x.y > 0.0f) ? x.y / (1.0f + x.y) : 0.0f;
    v.z = (k + 2 < k_out && x.z > 0.0f) ? x.z / (1.0f + x.z) : 0.0f;
    v.w = (k + 3 < k_out && x.w > 0.0f) ? x.w / (1.0f + x.w) : 0.0f;
    return v;
}

/* acc += w * base[idx * mul + add] over the entries (w, idx as int bits)
 * i0, i0 + G, .. below n of a list in shared memory, N loads in flight:
 * the last step of the warp-team kernels, where a lane's group runs down
 * the warp's list (S: weight rows, C: input cells) */
template <int N>
static __device__ __forceinline__ void nc_dev_list_fma4(const float2 *lst, uint32_t n,
                                                        uint32_t i0, uint32_t G,
                                                        const float4 *__restrict__ base,
                                                        uint32_t mul, uint32_t add,
                                                        float4 &acc)
{
    uint32_t i = i0;
    for (; i + (N - 1) * G < n; i += N * G) {
        float2 p[N];
        float4 v[N];
#pragma unroll
        for (int q = 0; q < N; q++)
            p[q] = lst[i + q * G];
#pragma unroll
        for (int q = 0; q < N; q++)
            v[q] = __ldg(base + (size_t)(uint32_t)__float_as_int(p[q].y) * mul + add);
#pragma unroll
        for (int q = 0; q < N; q++)
            nc_dev_fma4(p[q].x, v[q], acc);
    }
    for (; i < n; i += G) {
        const float2 p = lst[i];
        nc_dev_fma4(p.x, __ldg(base + (size_t)(uint32_t)__float_as_int(p.y) * mul + add), acc);
    }
}

/* The W warps of a team (warps warp - w .. warp - w + W - 1 of the block,
 * this one the w-th) add their lanes' x, and each its scalar s when rs is
 * not NULL, in warp order through shared memory red ([warps][32]) and rs
 * ([warps]): the team's first warp ends with the sums.  Every thread of
 * the block calls it (two barriers; the first also means red may be memory
 * the block used before). */
static __device__ __forceinline__ float4 nc_dev_team_sum4(float4 *red, float *rs, uint32_t warp,
                                                          uint32_t w, uint32_t W, uint32_t lane,
                                                          float4 x, float &s)
{
    __syncthreads();
    red[warp * 32u + lane] = x;
    if (rs && lane == 0)
        rs[warp] = s;
    __syncthreads();
    if (w == 0)
        for (uint32_t j = 1; j < W; j++) {
            const float4 y = red[(warp + j) * 32u + lane];
            x.x += y.x;
            x.y += y.y;
            x.z += y.z;
            x.w += y.w;
            if (rs)
                s += rs[warp + j];
        }
    return x;
}

/* v added up over lanes 0 .. lane of the warp (an inclusive scan; every
 * lane of the warp calls it) */
static __device__ __forceinline__ uint32_t nc_dev_warp_scan(uint32_t v, uint32_t lane)
{
#pragma unroll
    for (uint32_t d = 1; d < 32u; d <<= 1) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d)
            v += y;
    }
    return v;
}

/* One plane's value v into a position's list (nc_gpu_neocog_lists): an
 * entry when v != 0 (at *n, which counts them), and v^2 into *ss */
static __device__ __forceinline__ void nc_dev_list_put(float v, int kap, uint32_t mul,
                                                       int2 *ent, int *n, float *ss)
{
    if (v != 0.0f)
        ent[(*n)++] = make_int2(__float_as_int(v), (int)((uint32_t)kap * mul));
    *ss = fmaf(v, v, *ss);
}

static __device__ __forceinline__ float nc_dev_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

#endif

/* gpu/neocog/neocog_c_scatter.cu — the C-layer for large batches by scattering
 * each non-zero input cell (NC_GPU_NEOCOG_C_SCATTER, see neocog_c.cuh).
 *
 * Layer: gpu.  Why: on digits about 1.7 % of UC1's input cells are
 * non-zero (1.1 % of UC2's, 0.2 % of UC3's; core's forward of 300 fixture
 * digits), so a character's C-layer is some 90 k multiply-adds, but the
 * gather kernels pay per output position for its window: occupancy masks,
 * a tap list, a reduction over slices, whatever the window holds.  Here a
 * block takes one character and keeps the whole layer's sums in shared
 * memory (plane-major, [k][n_out^2]):
 *  1. the occupied input positions are listed in ascending order (ballot +
 *     a scan of the warps' counts), cells packed as iy << 16 | ix;
 *  2. warp w takes planes w, w + W, ..: it reads plane kappa of 32 listed
 *     positions at once, and for each non-zero one in turn (ballot, then
 *     lowest lane first) its lanes add d(nu) x to every output position
 *     whose window holds the cell (a ceil(win / step)^2 square of
 *     candidates, d from a padded win x win table that is 0 on the dead
 *     taps and around them, which is what rules out the candidates whose
 *     window misses the cell; no division on the way for steps 1 and 2);
 *  3. psi of the sums, one 16-byte store a float4 of planes and the
 *     occupancy byte a position, and where asked the next S-layer's lists
 *     of the position's non-zero planes (a thread a position, planes in
 *     order), which saves that S-layer a pass over this output.
 * A plane's sums belong to one warp, and its cells come in ascending
 * position order, which for every output is its window's tap order: each
 * output gets core's terms in core's order (form G's), so the result does
 * not depend on scheduling and needs no atomics; every output cell is
 * written once.  The layer's sums must fit shared memory (UC1: 88 KB; the
 * shipped net's UC3, 295 planes: 199 KB), else -E2BIG before the launch. */
#include "neocog_c.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

#define CS_WARPS 16

/* The d table is padded by pd = (cw - 1) step cells before each axis, so
 * that every candidate of a cell indexes it (a candidate whose window
 * misses the cell reads a 0 of the padding or of a dead tap): side
 * win + pd. */
static __host__ __device__ __forceinline__ int cs_side(int win, int step, int cw)
{
    return win + (cw - 1) * step;
}

/* the sums [k][n_out^2] (rounded up to float4), the candidates [cw^2]
 * (int2: dy << 8 | dx, their d-table offset << 16 | their sum offset),
 * the padded d table [side^2], the occupied positions [n_in^2], the warps'
 * counts [CS_WARPS + 1] */
static size_t cs_smem(const nc_gpu_neocog_c_args *c, uint32_t cw)
{
    const size_t n_o = (size_t)c->g.n_out * c->g.n_out, n_i = (size_t)c->g.n_in * c->g.n_in;
    const size_t side = (size_t)cs_side(c->g.win, c->g.step, (int)cw);
    return ((c->k * n_o + 3) & ~(size_t)3) * sizeof(float) +
           (side * side + 2 * (size_t)cw * cw + n_i + CS_WARPS + 1) * sizeof(int);
}

/* ceil(x / STEP) for x > 0, 0 otherwise (STEP 0: step, known only at run
 * time) */
template <int STEP>
static __device__ __forceinline__ int cs_first(int x, int step)
{
    if (x <= 0)
        return 0;
    return STEP == 1 ? x : STEP == 2 ? (x + 1) >> 1 : (x + step - 1) / step;
}

/* NR: rounds of 32 candidates, known at compile time (1..4: the
 * candidates sit in registers and the rounds' loads are in flight
 * together), 0: any number, from shared memory */
template <int STEP, int NR>
static __global__ void __launch_bounds__(CS_WARPS * 32, 2)
c_scatter_kernel(const __grid_constant__ nc_gpu_neocog_c_args c, const float *__restrict__ in,
                 const uint8_t *__restrict__ occ_in, float *__restrict__ out,
                 uint8_t *__restrict__ occ_out, uint32_t cw, nc_gpu_neocog_lists ls)
{
    extern __shared__ __align__(16) float cs_sum[];
    const nc_gpu_neocog_geom &g = c.g;
    const int n_in = g.n_in, n_out = g.n_out, win = g.win, pad = g.pad;
    const int step = STEP ? STEP : g.step;
    const int n_i = n_in * n_in, n_o = n_out * n_out, K = (int)c.k;
    const int ks = (int)nc_dev_kstride(c.k);
    const int n_sum = (K * n_o + 3) & ~3;
    const int pd = ((int)cw - 1) * step, side = win + pd;
    int2 *cand = (int2 *)(cs_sum + n_sum);      /* 16-byte aligned: n_sum % 4 == 0 */
    float *dtab = (float *)(cand + cw * cw);
    int *plist = (int *)(dtab + side * side);
    int *wsum = plist + n_i;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nth = blockDim.x;
    const size_t b = blockIdx.x;

    for (int i = tid; i < n_sum / 4; i += nth)
        ((float4 *)cs_sum)[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int i = tid; i < side * side; i += nth)
        dtab[i] = 0.0f;
    for (int i = tid; i < (int)(cw * cw); i += nth) {
        const int dy = i / (int)cw, dx = i % (int)cw;
        cand[i] = make_int2(dy << 8 | dx, ((dy * side + dx) * step) << 16 | (dy * n_out + dx));
    }
    __syncthreads();
    for (int t = tid; t < g.n_live; t += nth)
        dtab[(g.tap_y[t] + pd) * side + g.tap_x[t] + pd] = g.w[t];
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();          /* the previous layer's output is read from here on */

    /* 1. the occupied input positions, ascending */
    const uint8_t *ob = occ_in ? occ_in + b * n_i : nullptr;
    const unsigned lt = nc_dev_lanemask_lt();
    int n_occ = 0;
    for (int base = 0; base < n_i; base += nth) {
        const int p = base + tid;
        const bool on = p < n_i && (!ob || ob[p] != 0);
        const unsigned m = __ballot_sync(0xffffffffu, on);
        if (lane == 0)
            wsum[warp] = __popc(m);
        __syncthreads();
        if (warp == 0) {
            const int v = lane < (nth >> 5) ? wsum[lane] : 0;
            const int incl = (int)nc_dev_warp_scan((uint32_t)v, lane);
            if (lane < (nth >> 5))
                wsum[lane] = incl - v;
            if (lane == 31)
                wsum[CS_WARPS] = incl;
        }
        __syncthreads();
        if (on)
            plist[n_occ + wsum[warp] + __popc(m & lt)] = (p / n_in) << 16 | (p % n_in);
        n_occ += wsum[CS_WARPS];
        __syncthreads();        /* wsum is written again */
    }

    /* 2. each plane's non-zero cells, scattered by one warp: per cell the
     * candidates' sums start at base_s and their d at base_d, each
     * candidate an offset from there */
    const float *inb = in + b * (size_t)n_i * ks;
    const int ncand = (int)(cw * cw);
    /* this lane's candidates of each round; past the last: one no output
     * takes (dy = 255) */
    int2 cr[NR > 0 ? NR : 1];
#pragma unroll
    for (int r = 0; r < (NR > 0 ? NR : 1); r++)
        cr[r] = lane + 32 * r < ncand ? cand[lane + 32 * r] : make_int2(255 << 8, 0);
    for (int kap = warp; kap < K; kap += nth >> 5) {
        float *sk = cs_sum + kap * n_o;
        for (int r = 0; r < n_occ; r += 32) {
            const int i = r + lane;
            const int pk = i < n_occ ? plist[i] : 0;
            const float x = i < n_occ ? __ldg(inb + (size_t)((pk >> 16) * n_in + (pk & 0xffff)) *
                                                        ks + kap)
                                      : 0.0f;
            unsigned m = __ballot_sync(0xffffffffu, x != 0.0f);
            while (m) {
                const int j = __ffs((int)m) - 1;
                m &= m - 1u;
                const float xv = __shfl_sync(0xffffffffu, x, j);
                const int pj = __shfl_sync(0xffffffffu, pk, j);
                const int iy = (pj >> 16) + pad, ix = (pj & 0xffff) + pad;
                /* the first output row (column) whose window reaches the
                 * cell: oy step - pad + win - 1 >= iy - pad */
                const int oy0 = cs_first<STEP>(iy - win + 1, step);
                const int ox0 = cs_first<STEP>(ix - win + 1, step);
                const int base_d = (iy - oy0 * step + pd) * side + ix - ox0 * step + pd;
                const int base_s = oy0 * n_out + ox0;
                const int lim_y = n_out - oy0, lim_x = n_out - ox0;
                if (NR > 0) {
                    float d[NR > 0 ? NR : 1];
#pragma unroll
                    for (int r = 0; r < NR; r++)
                        d[r] = (cr[r].x >> 8) < lim_y && (cr[r].x & 0xff) < lim_x
                                   ? dtab[base_d - (cr[r].y >> 16)] : 0.0f;
#pragma unroll
                    for (int r = 0; r < NR; r++)
                        if (d[r] != 0.0f) {
                            float *s = sk + base_s + (cr[r].y & 0xffff);
                            *s = fmaf(d[r], xv, *s);
                        }
                } else {
                    for (int cc = lane; cc < ncand; cc += 32) {
                        const int2 cd = cand[cc];
                        if ((cd.x >> 8) < lim_y && (cd.x & 0xff) < lim_x) {
                            const float d = dtab[base_d - (cd.y >> 16)];
                            if (d != 0.0f) {
                                float *s = sk + base_s + (cd.y & 0xffff);
                                *s = fmaf(d, xv, *s);
                            }
                        }
                    }
                }
                __syncwarp();   /* the next cell may add to the same sums */
            }
        }
    }
    __syncthreads();

    /* 3. psi, 16-byte stores, occupancy, lists */
    const size_t row0 = b * (size_t)n_o;
    for (int o = tid; o < n_o; o += nth) {
        float4 *po = (float4 *)(out + (row0 + o) * ks);
        int2 *le = ls.cnt ? ls.ent + (row0 + o) * (size_t)K : nullptr;
        bool fired = false;
        int nz = 0;
        float ss = 0.0f;
        for (int q = 0; q < ks / 4; q++) {
            float4 x;
            x.x = 4 * q + 0 < K ? cs_sum[(4 * q + 0) * n_o + o] : 0.0f;
            x.y = 4 * q + 1 < K ? cs_sum[(4 * q + 1) * n_o + o] : 0.0f;
            x.z = 4 * q + 2 < K ? cs_sum[(4 * q + 2) * n_o + o] : 0.0f;
            x.w = 4 * q + 3 < K ? cs_sum[(4 * q + 3) * n_o + o] : 0.0f;
            const float4 v = nc_dev_psi4(x, 4 * q, K);
            po[q] = v;
            fired |= v.x > 0.0f || v.y > 0.0f || v.z > 0.0f || v.w > 0.0f;
            if (le) {
                nc_dev_list_put(v.x, 4 * q + 0, ls.mul, le, &nz, &ss);
                nc_dev_list_put(v.y, 4 * q + 1, ls.mul, le, &nz, &ss);
                nc_dev_list_put(v.z, 4 * q + 2, ls.mul, le, &nz, &ss);
                nc_dev_list_put(v.w, 4 * q + 3, ls.mul, le, &nz, &ss);
            }
        }
        if (occ_out)
            occ_out[row0 + o] = fired ? 1 : 0;
        if (le) {
            ls.cnt[row0 + o] = (uint16_t)nz;
            ls.q[row0 + o] = ss;
        }
    }
}

extern "C" int nc_gpu_neocog_c_scatter_forward(const nc_gpu_neocog_c_args *c, const float *in,
                                               const uint8_t *occ_in, float *out,
                                               uint8_t *occ_out, uint32_t batch,
                                               cudaStream_t stream)
{
    return nc_gpu_neocog_c_scatter_lists(c, in, occ_in, out, occ_out, NULL, batch, stream);
}

extern "C" int nc_gpu_neocog_c_scatter_lists(const nc_gpu_neocog_c_args *c, const float *in,
                                             const uint8_t *occ_in, float *out,
                                             uint8_t *occ_out, const nc_gpu_neocog_lists *lists,
                                             uint32_t batch, cudaStream_t stream)
{
    if (nc_gpu_neocog_lists_check(c, lists) < 0)
        return -EINVAL;
    const nc_gpu_neocog_lists ls = lists ? *lists : nc_gpu_neocog_lists{ NULL, NULL, NULL, 0 };
    if (!c || !in || !out || batch < 1 || c->k < 1 || c->k > NC_NEOCOG_MAX_PLANES ||
        c->g.n_out < 1 || c->g.n_in < 1 || c->g.n_in > 0xffff || c->g.win < 1 ||
        c->g.win > 32 || c->g.step < 1 || ((uintptr_t)in & 15) || ((uintptr_t)out & 15))
        return -EINVAL;
    const uint32_t cw = ((uint32_t)c->g.win + (uint32_t)c->g.step - 1) / (uint32_t)c->g.step;
    const size_t smem = cs_smem(c, cw);
    /* the candidates' offsets travel in 16 bits */
    const uint32_t side = (uint32_t)cs_side(c->g.win, c->g.step, (int)cw);
    if ((uint64_t)(cw - 1) * (side + 1) * (uint32_t)c->g.step > 0x7fff ||
        (uint64_t)(cw - 1) * ((uint32_t)c->g.n_out + 1) > 0xffff || cw > 255)
        return -E2BIG;
    int dev = 0, max_smem = 0;
    NC_CUDA_CHECK(cudaGetDevice(&dev));
    NC_CUDA_CHECK(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (smem > (size_t)max_smem || batch > 0x7fffffffu)
        return -E2BIG;
    const uint32_t nr = (cw * cw + 31) / 32;
    auto kern = c->g.step != 2 ? (c->g.step == 1 ? c_scatter_kernel<1, 0> : c_scatter_kernel<0, 0>)
              : nr == 1 ? c_scatter_kernel<2, 1> : nr == 2 ? c_scatter_kernel<2, 2>
              : nr == 3 ? c_scatter_kernel<2, 3> : nr == 4 ? c_scatter_kernel<2, 4>
                        : c_scatter_kernel<2, 0>;
    int r;
    if ((r = nc_dev_smem_allow((const void *)kern, smem)) < 0)
        return r;
    NC_CUDA_CHECK(nc_dev_launch(kern, dim3(batch), dim3(CS_WARPS * 32), smem, stream, batch, *c,
                                in, occ_in, out, occ_out, cw, ls));
    return 0;
}

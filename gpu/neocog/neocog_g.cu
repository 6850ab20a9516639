/* gpu/neocog/neocog_g.cu — UG: the difference-of-Gaussians contrast extraction that
 * turns the 65x65 input into on- and off-centre planes.
 *
 * Layer: gpu.  Thread mapping: G threads per output position (b, o): thread
 * g walks window rows g, g + G, ... clipped at the image's edges (core's
 * axis tables, as arithmetic) and by the constant-bank row tables, reads
 * the input through L1 (neighbouring threads share most of it); two
 * xor-shuffles add the G partial sums (the same value on every one of
 * them: float addition commutes), and the first writes the
 * position's 8 lanes as two 16-byte stores plus its occupancy byte.  G = 1
 * for large batches; for small ones G = 4, so a character's 4225 positions
 * give four times the threads, each with a quarter of the chain (at batch 1
 * the kernel was 40 blocks and 6.3 us, ncu on an H100). */
#include "neocog_g.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

/* Positions below which G = 4 (a batch of about 15 characters). */
#define G_SPLIT_BELOW 65536u

template <int G>
static __global__ void g_kernel(const __grid_constant__ nc_gpu_neocog_g_args a,
                                const float *__restrict__ in,
                                float *__restrict__ out,
                                uint8_t *__restrict__ occ_out, size_t n_pos)
{
    const size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    const size_t i = t / G;
    const int part = (int)(t % G);
    const bool live = i < n_pos;
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();          /* programmatic launch: see neocog_dev.cuh */
    if (G == 1 && !live)
        return;
    const nc_gpu_neocog_geom &g = a.g;
    float x = 0.0f;
    if (live) {
        const uint32_t n_o = g.n_out * g.n_out;
        const size_t b = i / n_o;
        const uint32_t o = i % n_o;
        const int oy = o / g.n_out, ox = o % g.n_out;
        const float *inb = in + b * g.n_in * g.n_in;
        const int by = oy * g.step - g.pad, bx = ox * g.step - g.pad;
        /* core's edge clipping (the axis tables: taps t with 0 <= base + t
         * < n_in) by arithmetic: lanes of a warp hold different ox, and
         * the constant bank would serve their 32 table entries one by one */
        const int tx0 = max(-bx, 0), tx1 = min(g.n_in - bx, g.win);
        const int ty1 = min(g.n_in - by, g.win);
        for (int ty = max(-by, 0) + part; ty < ty1; ty += G) {
            const int lo = max((int)g.row_lo[ty], tx0), hi = min((int)g.row_hi[ty], tx1);
            const float *row = inb + (by + ty) * g.n_in + bx;
            for (int tx = lo; tx < hi; tx++)
                x += g.w[g.row_first[ty] + (tx - g.row_lo[ty])] * row[tx];
        }
    }
    if (G > 1) {
        /* every lane of the warp takes part (blocks are whole warps) */
        for (int m = 1; m < G; m <<= 1)
            x += __shfl_xor_sync(0xffffffffu, x, m);
        if (!live || part != 0)
            return;
    }
    const float on = x > a.cut ? x : 0.0f, off = x < -a.cut ? -x : 0.0f;
    nc_dev_g_store(out + i * 8, occ_out ? occ_out + i : nullptr, on, off);
}

extern "C" int nc_gpu_neocog_g_forward(const nc_gpu_neocog_g_args *g, const float *in,
                                       float *out, uint8_t *occ_out, uint32_t batch,
                                       cudaStream_t stream)
{
    if (!g || !in || !out || batch < 1 || g->g.n_out < 1 || !(g->cut >= 0.0f))
        return -EINVAL;
    const size_t n_pos = (size_t)batch * g->g.n_out * g->g.n_out;
    if ((n_pos + 127) / 128 > 0x7fffffffu / 4)
        return -EINVAL;
    if (n_pos < G_SPLIT_BELOW)
        NC_CUDA_CHECK(nc_dev_launch(g_kernel<4>, dim3((unsigned)((4 * n_pos + 127) / 128)),
                                    dim3(128), 0, stream, batch, *g, in, out, occ_out, n_pos));
    else
        NC_CUDA_CHECK(nc_dev_launch(g_kernel<1>, dim3((unsigned)((n_pos + 127) / 128)),
                                    dim3(128), 0, stream, batch, *g, in, out, occ_out, n_pos));
    return 0;
}

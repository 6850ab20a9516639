/* gpu/neocog_g.cu — UG: the difference-of-Gaussians contrast extraction that
 * turns the 65x65 input into on- and off-centre planes.
 *
 * Layer: gpu.  Thread mapping: one thread per output position (b, o); it
 * walks the window clipped by the constant-bank row and axis tables, reads
 * the input through L1 (neighbouring threads share most of it), and writes
 * the position's 8 lanes as two 16-byte stores plus its occupancy byte. */
#include "neocog_g.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

static __global__ void g_kernel(const __grid_constant__ nc_gpu_neocog_g_args a,
                                const float *__restrict__ in,
                                float *__restrict__ out,
                                uint8_t *__restrict__ occ_out, size_t n_pos)
{
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n_pos)
        return;
    const nc_gpu_neocog_geom &g = a.g;
    const uint32_t n_o = g.n_out * g.n_out;
    const size_t b = i / n_o;
    const uint32_t o = i % n_o;
    const int oy = o / g.n_out, ox = o % g.n_out;
    const float *inb = in + b * g.n_in * g.n_in;
    const int by = oy * g.step - g.pad, bx = ox * g.step - g.pad;
    const int tx0 = g.axis_t0[ox], tx1 = g.axis_t1[ox];
    float x = 0.0f;
    for (int ty = g.axis_t0[oy]; ty < g.axis_t1[oy]; ty++) {
        const int lo = max((int)g.row_lo[ty], tx0), hi = min((int)g.row_hi[ty], tx1);
        const float *row = inb + (by + ty) * g.n_in + bx;
        for (int tx = lo; tx < hi; tx++)
            x += g.w[g.row_first[ty] + (tx - g.row_lo[ty])] * row[tx];
    }
    const float on = x > a.cut ? x : 0.0f, off = x < -a.cut ? -x : 0.0f;
    float4 *po = (float4 *)(out + i * 8);
    po[0] = make_float4(on, off, 0.0f, 0.0f);
    po[1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (occ_out)
        occ_out[i] = (uint8_t)(on > 0.0f || off > 0.0f);
}

extern "C" int nc_gpu_neocog_g_forward(const nc_gpu_neocog_g_args *g, const float *in,
                                       float *out, uint8_t *occ_out, uint32_t batch,
                                       cudaStream_t stream)
{
    if (!g || !in || !out || batch < 1 || g->g.n_out < 1 || !(g->cut >= 0.0f))
        return -EINVAL;
    const size_t n_pos = (size_t)batch * g->g.n_out * g->g.n_out;
    if ((n_pos + 127) / 128 > 0x7fffffffu)
        return -EINVAL;
    g_kernel<<<(unsigned)((n_pos + 127) / 128), 128, 0, stream>>>(*g, in, out, occ_out, n_pos);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

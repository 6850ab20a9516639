/* core/neocog/neocog_g.c — UG's plain reference (contrast extraction), CPU
 * twin of gpu/neocog/neocog_g.cu (and, with US1, of neocog_gs1.cu).
 *
 * Layer: core.  Written like the S-layer's (neocog_s.c): one output position
 * at a time, windows clipped by arithmetic, sums in double; the specification
 * nc_neocog_g_forward's forms (neocog_forms.c) and the GPU kernels are
 * checked against. */
#include "neocog_impl.h"

/* UG: x(o) = sum_live t g[t] * u0(o - pad + t) on a single input plane
 * [n_in^2]; out [n_out^2][8]: lane 0 = x if x > cut, lane 1 = -x if x < -cut. */
void nc_neocog__g_ref(const nc_neocog_index *ix, const float *g, float cut,
                      const float *in, float *out)
{
    const uint32_t no = ix->n_out;
    for (uint32_t oy = 0; oy < no; oy++)
        for (uint32_t ox = 0; ox < no; ox++) {
            double x = 0.0;
            uint32_t t = 0;
            for (uint32_t ty = 0; ty < ix->win; ty++)
                for (uint32_t tx = 0; tx < ix->win; tx++) {
                    if (!nc_neocog__tap_live(ix->win, ix->radius, ty, tx))
                        continue;
                    long iy = nc_neocog__in_coord(ix, oy, ty);
                    long ixx = nc_neocog__in_coord(ix, ox, tx);
                    if (iy >= 0 && ixx >= 0)
                        x += g[t] * (double)in[(size_t)iy * ix->n_in + ixx];
                    t++;
                }
            float *p = out + ((size_t)oy * no + ox) * 8;
            p[0] = x > cut ? (float)x : 0.0f;
            p[1] = x < -cut ? (float)-x : 0.0f;
            for (int k = 2; k < 8; k++)
                p[k] = 0.0f;
        }
}

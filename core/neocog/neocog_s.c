/* core/neocog/neocog_s.c — the S-layer's plain reference, CPU twin of
 * gpu/neocog/neocog_s.cu (the C- and UG-layers' are neocog_c.c, neocog_g.c).
 *
 * Layer: core.  These loops are the specification the faster forms
 * (neocog_forms.c, neocog_batch.c) and the GPU kernels are checked against:
 * one output cell at a time, straight from the equations, windows clipped by
 * arithmetic (not by the index tables, so the tables get checked too), sums
 * in double.  Slow on purpose; nothing calls them on a hot path. */
#include "neocog_impl.h"

#include <math.h>

int nc_neocog__tap_live(uint32_t win, float radius, uint32_t ty, uint32_t tx)
{
    double ctr = (win - 1) / 2.0, dy = ty - ctr, dx = tx - ctr;
    return dy * dy + dx * dx <= (double)radius * radius;
}

/* S-layer, seed eq. 1-3.  in [n_in^2][in_stride], a [k_in][n_live][ks],
 * out [n_out^2][ks].  For every plane k and position (oy, ox):
 *   e  = sum_kappa sum_live t a[kappa][t][k] * u(oy + ty, ox + tx, kappa)
 *   v2 = sum_kappa sum_live t c[t] * u^2
 *   u_S = theta/(1-theta) * max(0, (1 + e)/(1 + theta b_k sqrt(v2)) - 1) */
void nc_neocog__s_ref(const nc_neocog_s_args *s, const float *in, float *out)
{
    const nc_neocog_index *ix = s->ix;
    const uint32_t ks = nc_neocog_kstride(s->k_out), no = ix->n_out;
    const double th = s->theta;
    for (uint32_t oy = 0; oy < no; oy++)
        for (uint32_t ox = 0; ox < no; ox++) {
            float *uo = out + ((size_t)oy * no + ox) * ks;
            for (uint32_t k = 0; k < ks; k++) {
                if (k >= s->k_out) {
                    uo[k] = 0.0f;
                    continue;
                }
                double e = 0.0, v2 = 0.0;
                uint32_t t = 0;     /* live-tap counter, row-major like the tables */
                for (uint32_t ty = 0; ty < ix->win; ty++)
                    for (uint32_t tx = 0; tx < ix->win; tx++) {
                        if (!nc_neocog__tap_live(ix->win, ix->radius, ty, tx))
                            continue;
                        long iy = nc_neocog__in_coord(ix, oy, ty);
                        long ixx = nc_neocog__in_coord(ix, ox, tx);
                        if (iy >= 0 && ixx >= 0)
                            for (uint32_t kap = 0; kap < s->k_in; kap++) {
                                double u = in[((size_t)iy * ix->n_in + ixx) * s->in_stride + kap];
                                e += s->a[((size_t)kap * ix->n_live + t) * ks + k] * u;
                                v2 += s->c[t] * u * u;
                            }
                        t++;
                    }
                double x = (1.0 + e) / (1.0 + th * s->b[k] * sqrt(v2)) - 1.0;
                uo[k] = x > 0.0 ? (float)(th / (1.0 - th) * x) : 0.0f;
            }
        }
}

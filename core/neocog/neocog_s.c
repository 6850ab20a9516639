/* core/neocog/neocog_layers.c — the plain reference of every neocognitron layer.
 *
 * Layer: core.  These loops are the specification the faster forms
 * (neocog_forms.c) and the GPU kernels are checked against: one output cell
 * at a time, straight from the equations, windows clipped by arithmetic (not
 * by the index tables, so the tables get checked too), sums in double.  Slow
 * on purpose; nothing calls them on a hot path. */
#include "neocog_impl.h"

#include <math.h>

int nc_neocog__tap_live(uint32_t win, float radius, uint32_t ty, uint32_t tx)
{
    double ctr = (win - 1) / 2.0, dy = ty - ctr, dx = tx - ctr;
    return dy * dy + dx * dx <= (double)radius * radius;
}

/* Input cell feeding output o through window tap t along one axis, or -1
 * when it falls in the zero padding. */
static long in_coord(const nc_neocog_index *ix, uint32_t o, uint32_t t)
{
    long i = (long)o * ix->step - (long)ix->pad + (long)t;
    return i >= 0 && i < (long)ix->n_in ? i : -1;
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
                        long iy = in_coord(ix, oy, ty), ixx = in_coord(ix, ox, tx);
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

/* C-layer: out(o, k) = psi(sum_live t d[t] * in(step*o - pad + t, k)),
 * in [n_in^2][ks], out [n_out^2][ks]; psi(x) = x/(1+x) for x > 0. */
void nc_neocog__c_ref(const nc_neocog_index *ix, const float *d, uint32_t k_n,
                      const float *in, float *out)
{
    const uint32_t ks = nc_neocog_kstride(k_n), no = ix->n_out;
    for (uint32_t oy = 0; oy < no; oy++)
        for (uint32_t ox = 0; ox < no; ox++)
            for (uint32_t k = 0; k < ks; k++) {
                double x = 0.0;
                uint32_t t = 0;
                for (uint32_t ty = 0; ty < ix->win; ty++)
                    for (uint32_t tx = 0; tx < ix->win; tx++) {
                        if (!nc_neocog__tap_live(ix->win, ix->radius, ty, tx))
                            continue;
                        long iy = in_coord(ix, oy, ty), ixx = in_coord(ix, ox, tx);
                        if (iy >= 0 && ixx >= 0)
                            x += d[t] * (double)in[((size_t)iy * ix->n_in + ixx) * ks + k];
                        t++;
                    }
                out[((size_t)oy * no + ox) * ks + k] =
                    (k < k_n && x > 0.0) ? (float)(x / (1.0 + x)) : 0.0f;
            }
}

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
                    long iy = in_coord(ix, oy, ty), ixx = in_coord(ix, ox, tx);
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

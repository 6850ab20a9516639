/* core/neocog/neocog_c.c — the C-layer's plain reference, CPU twin of
 * gpu/neocog/neocog_c.cu and its variants (neocog_c_tile.cu, neocog_c_warp.cu,
 * neocog_c_scatter.cu).
 *
 * Layer: core.  Written like the S-layer's (neocog_s.c): one output cell at a
 * time, windows clipped by arithmetic, sums in double; the specification
 * nc_neocog_c_forward's forms (neocog_forms.c) and the GPU kernels are
 * checked against. */
#include "neocog_impl.h"

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
                        long iy = nc_neocog__in_coord(ix, oy, ty);
                        long ixx = nc_neocog__in_coord(ix, ox, tx);
                        if (iy >= 0 && ixx >= 0)
                            x += d[t] * (double)in[((size_t)iy * ix->n_in + ixx) * ks + k];
                        t++;
                    }
                out[((size_t)oy * no + ox) * ks + k] =
                    (k < k_n && x > 0.0) ? (float)(x / (1.0 + x)) : 0.0f;
            }
}

/* gpu/neocog/neocog_geom.c — core's index tables reduced to a kernel parameter.
 *
 * Layer: gpu (plain C, no CUDA calls). */
#include "neocog_geom.h"

#include <errno.h>
#include <string.h>

int nc_gpu_neocog_geom_init(const nc_neocog_index *ix, const float *w,
                            nc_gpu_neocog_geom *ret)
{
    if (!ix || !w || !ret || ix->n_out > NC_GPU_NEOCOG_MAX_OUT ||
        ix->win > NC_GPU_NEOCOG_MAX_WIN || ix->n_live > NC_GPU_NEOCOG_MAX_TAPS)
        return -EINVAL;
    nc_gpu_neocog_geom g;
    memset(&g, 0, sizeof g);
    g.n_in = (int32_t)ix->n_in;
    g.n_out = (int32_t)ix->n_out;
    g.win = (int32_t)ix->win;
    g.pad = (int32_t)ix->pad;
    g.step = (int32_t)ix->step;
    g.n_live = (int32_t)ix->n_live;
    for (uint32_t o = 0; o < ix->n_out; o++) {
        g.axis_t0[o] = ix->axis_t0[o];
        g.axis_t1[o] = ix->axis_t1[o];
    }
    for (uint32_t ty = 0; ty < ix->win; ty++)
        g.row_first[ty] = -1;
    /* the tables list live taps row-major; a circular mask makes each row
     * one run of columns, which the row tables rely on: check it */
    for (uint32_t t = 0; t < ix->n_live; t++) {
        int ty = ix->tap_y[t], tx = ix->tap_x[t];
        g.w[t] = w[t];
        g.tap_y[t] = (int8_t)ty;
        g.tap_x[t] = (int8_t)tx;
        if (g.row_first[ty] < 0) {
            g.row_first[ty] = (int16_t)t;
            g.row_lo[ty] = (int8_t)tx;
        } else if (tx != g.row_hi[ty]) {
            return -EINVAL;
        }
        g.row_hi[ty] = (int8_t)(tx + 1);
    }
    for (uint32_t ty = 0; ty < ix->win; ty++)
        if (g.row_first[ty] < 0) {
            g.row_first[ty] = 0;
            g.row_lo[ty] = g.row_hi[ty] = 0;
        }
    *ret = g;
    return 0;
}

void nc_gpu_neocog_geom_pack_taps(const nc_gpu_neocog_geom *g, int32_t *out)
{
    for (int32_t t = 0; t < g->n_live; t++) {
        int32_t bits;
        memcpy(&bits, &g->w[t], sizeof bits);
        out[2 * t] = (int32_t)g->tap_y[t] << 16 | (int32_t)g->tap_x[t];
        out[2 * t + 1] = bits;
    }
}

const char *nc_gpu_neocog_variant_name(int variant)
{
    static const char *const name[NC_GPU_NEOCOG_N_VARIANTS + 1] = {
        "T1", "T1-T3", "T1-T4", "T1-T5", "sparse", "gemm", "auto" };
    return variant >= 0 && variant <= NC_GPU_NEOCOG_AUTO ? name[variant] : "?";
}

/* core/neocog_slice.c — one S-layer for a range of its planes: what lets the
 * learner spread the last stage's responses over parts (neocog_learn.c).
 *
 * Layer: core.  The arithmetic is form F's (neocog_forms.c, s_scatter with
 * the zero-skip) lane for lane: every plane's e accumulates the same products
 * in the same order (input positions ascending, their outputs in table order,
 * input planes in batches of NC_NEOCOG_KAP_BATCH ascending), no FMA, and
 * the same finish.  A plane's value therefore depends neither on the range
 * it was computed in nor on how the planes were split, and equals what
 * nc_neocog_s_forward(.., NC_NEOCOG_FORM_F) gives for it, bit for bit.
 * nc_neocog_s_forward_planes is the checked public entry.
 * tests/core/test_neocog_learn_par.c checks both claims. */
#include "neocog_impl.h"

#include <math.h>
#include <string.h>


NC_NEOCOG_HOT
void nc_neocog_s_slice_(const nc_neocog_s_args *s, const float *restrict in,
                        float *restrict out, float *restrict v2, uint32_t k0,
                        uint32_t k1)
{
    const nc_neocog_index *ix = s->ix;
    const uint32_t ks = nc_neocog_kstride(s->k_out), nl = ix->n_live;
    const uint32_t w = k1 - k0;
    const size_t n_i = (size_t)ix->n_in * ix->n_in;
    const size_t n_o = (size_t)ix->n_out * ix->n_out;
    const int32_t *restrict sptr = ix->sct_ptr, *restrict sout = ix->sct_out;
    const int16_t *restrict stap = ix->sct_tap;
    const float *restrict c = s->c;
    const float *restrict a = s->a + k0;
    float u[NC_NEOCOG_KAP_BATCH];
    size_t off[NC_NEOCOG_KAP_BATCH];

    for (size_t o = 0; o < n_o; o++)
        memset(out + o * ks + k0, 0, w * sizeof(float));
    memset(v2, 0, n_o * sizeof(float));
    for (size_t i = 0; i < n_i; i++) {
        const float *restrict ui = in + i * s->in_stride;
        float uu = 0.0f;
        int any = 0;
        for (uint32_t kap = 0; kap < s->k_in; kap++) {
            uu += ui[kap] * ui[kap];
            any |= ui[kap] != 0.0f;
        }
        if (!any)
            continue;
        const int32_t j0 = sptr[i], j1 = sptr[i + 1];
        for (int32_t j = j0; j < j1; j++)
            v2[sout[j]] += c[stap[j]] * uu;
        for (uint32_t kb = 0; kb < s->k_in; kb += NC_NEOCOG_KAP_BATCH) {
            uint32_t ke = kb + NC_NEOCOG_KAP_BATCH < s->k_in ? kb + NC_NEOCOG_KAP_BATCH
                                                               : s->k_in;
            uint32_t np = 0;
            for (uint32_t kap = kb; kap < ke; kap++) {
                if (ui[kap] == 0.0f)
                    continue;
                u[np] = ui[kap];
                off[np++] = (size_t)kap * nl * ks;
            }
            if (np == 0)
                continue;
            for (int32_t j = j0; j < j1; j++)
                nc_neocog_axpy_multi_(out + (size_t)sout[j] * ks + k0,
                                      a + (size_t)stap[j] * ks, u, off, np, w);
        }
    }
    /* the finish of form F, on this range only */
    const float gain = s->theta / (1.0f - s->theta);
    const float *restrict b = s->b + k0;
    for (size_t o = 0; o < n_o; o++) {
        if (v2[o] == 0.0f)
            continue;
        float *restrict eo = out + o * ks + k0;
        const float tv = s->theta * sqrtf(v2[o]);
        for (size_t k = 0; k < w; k += 8)
            for (size_t q = 0; q < 8; q++) {
                float x = (1.0f + eo[k + q]) / (1.0f + tv * b[k + q]) - 1.0f;
                eo[k + q] = x > 0.0f ? gain * x : 0.0f;
            }
    }
}

int nc_neocog_s_forward_planes(const nc_neocog_s_args *s, const float *in,
                               float *out, float *ws, uint32_t k0, uint32_t k1)
{
    if (!s || !s->ix || !s->a || !s->b || !s->c || !in || !out || !ws ||
        s->k_in < 1 || s->k_in > s->in_stride || s->k_out < 1 ||
        s->k_out > NC_NEOCOG_MAX_PLANES || !(s->theta > 0.0f && s->theta < 1.0f) ||
        k0 % 8 || k1 % 8 || k0 >= k1 || k1 > nc_neocog_kstride(s->k_out))
        return -EINVAL;
    nc_neocog_s_slice_(s, in, out, ws, k0, k1);
    return 0;
}

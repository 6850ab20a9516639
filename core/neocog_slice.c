/* core/neocog_slice.c — one S-layer for a range of its planes: what lets the
 * learner spread the last stage's responses over parts (neocog_learn.c).
 *
 * Layer: core.  The arithmetic is form F's (neocog_forms.c, s_scatter with
 * the zero-skip) lane for lane: every plane's e accumulates the same products
 * in the same order (input positions ascending, their outputs in table order,
 * input planes in batches of NC_NEOCOG_SLICE_BATCH ascending), no FMA, and
 * the same finish.  A plane's value therefore depends neither on the range
 * it was computed in nor on how the planes were split, and equals what
 * nc_neocog_s_forward(.., NC_NEOCOG_FORM_F) gives for it, bit for bit.
 * nc_neocog_s_forward_planes is the checked public entry.
 * tests/core/test_neocog_learn_par.c checks both claims. */
#include "neocog_impl.h"

#include <math.h>
#include <string.h>

/* Input planes per pass over a position's outputs, as NC_NEOCOG_KAP_BATCH of
 * neocog_forms.c.  (The batching does not change the result: an accumulator
 * stored between batches and loaded again keeps its exact value, so each
 * lane adds the same products in the same order either way.) */
#define NC_NEOCOG_SLICE_BATCH 64

#if defined(__GNUC__)
typedef float nc_sv4 __attribute__((vector_size(16), aligned(4), may_alias));
#define SV4(p) (*(const nc_sv4 *)(p))
/* e[0..w) += sum_p u[p] * w_[off[p] + 0..w), w a multiple of 8. */
static inline void slice_axpy(float *restrict eo, const float *restrict w_,
                              const float *restrict u, const size_t *restrict off,
                              uint32_t np, uint32_t w)
{
    size_t k = 0;
    for (; k + 32 <= w; k += 32) {
        nc_sv4 a0 = SV4(eo + k), a1 = SV4(eo + k + 4), a2 = SV4(eo + k + 8);
        nc_sv4 a3 = SV4(eo + k + 12), a4 = SV4(eo + k + 16), a5 = SV4(eo + k + 20);
        nc_sv4 a6 = SV4(eo + k + 24), a7 = SV4(eo + k + 28);
        for (uint32_t p = 0; p < np; p++) {
            const float *wp = w_ + off[p] + k;
            const float up = u[p];
            a0 += up * SV4(wp);      a1 += up * SV4(wp + 4);
            a2 += up * SV4(wp + 8);  a3 += up * SV4(wp + 12);
            a4 += up * SV4(wp + 16); a5 += up * SV4(wp + 20);
            a6 += up * SV4(wp + 24); a7 += up * SV4(wp + 28);
        }
        *(nc_sv4 *)(eo + k) = a0;      *(nc_sv4 *)(eo + k + 4) = a1;
        *(nc_sv4 *)(eo + k + 8) = a2;  *(nc_sv4 *)(eo + k + 12) = a3;
        *(nc_sv4 *)(eo + k + 16) = a4; *(nc_sv4 *)(eo + k + 20) = a5;
        *(nc_sv4 *)(eo + k + 24) = a6; *(nc_sv4 *)(eo + k + 28) = a7;
    }
    for (; k < w; k += 8) {
        nc_sv4 a0 = SV4(eo + k), a1 = SV4(eo + k + 4);
        for (uint32_t p = 0; p < np; p++) {
            const float *wp = w_ + off[p] + k;
            a0 += u[p] * SV4(wp);
            a1 += u[p] * SV4(wp + 4);
        }
        *(nc_sv4 *)(eo + k) = a0;
        *(nc_sv4 *)(eo + k + 4) = a1;
    }
}
#else
static inline void slice_axpy(float *restrict eo, const float *restrict w_,
                              const float *restrict u, const size_t *restrict off,
                              uint32_t np, uint32_t w)
{
    for (uint32_t k = 0; k < w; k++) {
        float acc = eo[k];
        for (uint32_t p = 0; p < np; p++)
            acc += u[p] * w_[off[p] + k];
        eo[k] = acc;
    }
}
#endif

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
    float u[NC_NEOCOG_SLICE_BATCH];
    size_t off[NC_NEOCOG_SLICE_BATCH];

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
        for (uint32_t kb = 0; kb < s->k_in; kb += NC_NEOCOG_SLICE_BATCH) {
            uint32_t ke = kb + NC_NEOCOG_SLICE_BATCH < s->k_in ? kb + NC_NEOCOG_SLICE_BATCH
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
                slice_axpy(out + (size_t)sout[j] * ks + k0, a + (size_t)stap[j] * ks,
                           u, off, np, w);
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

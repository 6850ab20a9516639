/* core/neocog_impl.h — declarations shared by the neocog_*.c files only.
 *
 * Layer: core (private; not installed, not for gpu/). */
#ifndef NC_NEOCOG_IMPL_H
#define NC_NEOCOG_IMPL_H

#include "neocog.h"

/* Hot loops get an AVX2 clone chosen at load time (ifunc); the default clone
 * is plain x86-64 (SSE2).  No FMA in either, so both round identically. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    defined(__ELF__) && !defined(NC_NO_TARGET_CLONES)
#define NC_NEOCOG_HOT __attribute__((target_clones("avx2", "default")))
#else
#define NC_NEOCOG_HOT
#endif

/* The plain references (neocog_layers.c): loops straight from the equations,
 * windows clipped by arithmetic rather than the tables, double sums. */
void nc_neocog__s_ref(const nc_neocog_s_args *s, const float *in, float *out);
void nc_neocog__c_ref(const nc_neocog_index *ix, const float *d, uint32_t k,
                      const float *in, float *out);
void nc_neocog__g_ref(const nc_neocog_index *ix, const float *g, float cut,
                      const float *in, float *out);

/* Replace every plane count at once (weights zeroed where new) and the last
 * stage's labels (copied; may be NULL).  For the loader, which would otherwise
 * grow plane by plane. */
int nc_neocog__set_planes(nc_neocog *net, const uint32_t *planes,
                          const uint32_t *labels);

/* Is live tap (ty, tx) of a win-wide window with radius A (the one rule
 * nc_neocog_index_new uses). */
int nc_neocog__tap_live(uint32_t win, float radius, uint32_t ty, uint32_t tx);

/* Pieces of the spec's plane creation shared by the initialiser
 * (neocog_train.c) and the learner (neocog_learn.c), defined in the latter. */
/* Plane stride of stage l's input layer in a state (UG: 8). */
uint32_t nc_neocog_in_stride_(const nc_neocog *net, uint32_t l);
/* Seed map over stage l's S positions: the window sum of c(nu) * sum_kappa u,
 * normalised to its maximum, minus cut, clipped at 0.  Returns the maximum
 * before normalising (0: no input at all). */
float nc_neocog_seed_map_(const nc_neocog *net, uint32_t l, const float *in, float cut,
                          float *m);
/* m -= gain * (0.7^((r/d)^2) taper over r <= d, normalised to sum 1) * resp,
 * clipped at 0 (radius capped at 8 cells). */
void nc_neocog_inhibit_(float *m, const float *resp, uint32_t n, double d, float gain);

/* Planes [k0, k1) of an S-layer (neocog_slice.c): form F's arithmetic lane
 * for lane, so each plane comes out bit-identical to
 * nc_neocog_s_forward(s, .., NC_NEOCOG_FORM_F).  out is the whole
 * [n_out^2][ks(k_out)] layer, of which only columns [k0, k1) are written;
 * v2: n_out^2 floats of scratch.  k0 and k1 multiples of 8, k0 < k1 <=
 * ks(k_out); arguments as nc_neocog_s_forward checks them. */
void nc_neocog_s_slice_(const nc_neocog_s_args *s, const float *in, float *out,
                        float *v2, uint32_t k0, uint32_t k1);

/* ---- shared by neocog_forms.c and neocog_slice.c ---------------------------- */

/* Input planes handled together per pass over a position's outputs. */
#define NC_NEOCOG_KAP_BATCH 64

/* e[0..ks) += sum_p u[p] * w[off[p] + 0..ks), ks a multiple of 8, each
 * element summing p = 0, 1, .. in turn (form F, neocog_forms.c, and the
 * plane ranges of neocog_slice.c share it, which keeps them bit-identical):
 * the output row is loaded and stored once for all the input planes of a
 * batch, so a position with several non-zero planes costs one
 * read-modify-write per output it reaches.
 * Written with GNU vectors of 4 floats, native to SSE2 (the default clone)
 * and VEX-encoded in the AVX2 one; eight independent accumulators per block
 * of 32 planes hide the add latency.  Other compilers take the plain loop. */
#if defined(__GNUC__)
typedef float nc_v4 __attribute__((vector_size(16), aligned(4), may_alias));
#define V4(p) (*(const nc_v4 *)(p))
static inline void nc_neocog_axpy_multi_(float *restrict eo, const float *restrict w,
                                         const float *restrict u,
                                         const size_t *restrict off, uint32_t np,
                                         uint32_t ks)
{
    size_t k = 0;
    for (; k + 32 <= ks; k += 32) {
        nc_v4 a0 = V4(eo + k), a1 = V4(eo + k + 4), a2 = V4(eo + k + 8);
        nc_v4 a3 = V4(eo + k + 12), a4 = V4(eo + k + 16), a5 = V4(eo + k + 20);
        nc_v4 a6 = V4(eo + k + 24), a7 = V4(eo + k + 28);
        for (uint32_t p = 0; p < np; p++) {
            const float *wp = w + off[p] + k;
            const float up = u[p];
            a0 += up * V4(wp);      a1 += up * V4(wp + 4);
            a2 += up * V4(wp + 8);  a3 += up * V4(wp + 12);
            a4 += up * V4(wp + 16); a5 += up * V4(wp + 20);
            a6 += up * V4(wp + 24); a7 += up * V4(wp + 28);
        }
        *(nc_v4 *)(eo + k) = a0;      *(nc_v4 *)(eo + k + 4) = a1;
        *(nc_v4 *)(eo + k + 8) = a2;  *(nc_v4 *)(eo + k + 12) = a3;
        *(nc_v4 *)(eo + k + 16) = a4; *(nc_v4 *)(eo + k + 20) = a5;
        *(nc_v4 *)(eo + k + 24) = a6; *(nc_v4 *)(eo + k + 28) = a7;
    }
    for (; k < ks; k += 8) {
        nc_v4 a0 = V4(eo + k), a1 = V4(eo + k + 4);
        for (uint32_t p = 0; p < np; p++) {
            const float *wp = w + off[p] + k;
            a0 += u[p] * V4(wp);
            a1 += u[p] * V4(wp + 4);
        }
        *(nc_v4 *)(eo + k) = a0;
        *(nc_v4 *)(eo + k + 4) = a1;
    }
}
#else
static inline void nc_neocog_axpy_multi_(float *restrict eo, const float *restrict w,
                                         const float *restrict u,
                                         const size_t *restrict off, uint32_t np,
                                         uint32_t ks)
{
    for (uint32_t p = 0; p < np; p++)
        for (size_t k = 0; k < ks; k++)
            eo[k] += u[p] * w[off[p] + k];
}
#endif

#endif

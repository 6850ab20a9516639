/* core/neocog/neocog_impl.h — declarations shared by the neocog_*.c files only.
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

/* The plain references (neocog_s.c, neocog_c.c, neocog_g.c): loops straight
 * from the equations, windows clipped by arithmetic rather than the tables,
 * double sums. */
void nc_neocog__s_ref(const nc_neocog_s_args *s, const float *in, float *out);
void nc_neocog__c_ref(const nc_neocog_index *ix, const float *d, uint32_t k,
                      const float *in, float *out);
void nc_neocog__g_ref(const nc_neocog_index *ix, const float *g, float cut,
                      const float *in, float *out);

/* nc_neocog_load on an open reader (the committee loader reads each
 * member's container once). */
int nc_neocog__load_reader(const nc_mf_reader *rd, nc_neocog **ret_net,
                           nc_model_info *ret_info);

/* Replace every plane count at once (weights zeroed where new) and the last
 * stage's labels (copied; may be NULL).  For the loader, which would otherwise
 * grow plane by plane. */
int nc_neocog__set_planes(nc_neocog *net, const uint32_t *planes,
                          const uint32_t *labels);

/* The compact value forms of the file's sparse weights (neocog_values.c).
 * half_of: v (finite, > 0) as binary16, to nearest, ties to even, at least
 * the smallest subnormal; -1 when too large.  float_of_half: exactly.
 * log8_of: the code 0..255 nearest v <= scale in the log domain, where code
 * q means scale x 2^((q - 255) / 16); float_of_log8: that value, the same
 * float on every machine. */
#define NC_NEOCOG_LOG8_STEPS 16.0
int32_t nc_neocog__half_of(float v);
float nc_neocog__float_of_half(uint32_t h);
uint32_t nc_neocog__log8_of(float v, float scale);
float nc_neocog__float_of_log8(uint32_t q, float scale);

/* Is live tap (ty, tx) of a win-wide window with radius A (the one rule
 * nc_neocog_index_new uses; defined in neocog_s.c). */
int nc_neocog__tap_live(uint32_t win, float radius, uint32_t ty, uint32_t tx);

/* The references' clipping: the input cell feeding output o through window
 * tap t along one axis, or -1 when it falls in the zero padding. */
static inline long nc_neocog__in_coord(const nc_neocog_index *ix, uint32_t o, uint32_t t)
{
    long i = (long)o * ix->step - (long)ix->pad + (long)t;
    return i >= 0 && i < (long)ix->n_in ? i : -1;
}

/* A stage's layout as the layers read it (neocog_net.c). */
/* Plane stride of stage l's input layer in a state (UG: 8). */
uint32_t nc_neocog_in_stride_(const nc_neocog *net, uint32_t l);
/* Stage l's S-layer as the forward functions take it, at threshold theta. */
nc_neocog_s_args nc_neocog_stage_s_args_(const nc_neocog *net, uint32_t l, float theta);

/* Pieces of the spec's plane creation shared by the initialiser
 * (neocog_train.c) and the learner (neocog_learn.c), defined in the former. */
/* Seed map over stage l's S positions: the window sum of c(nu) * sum_kappa u,
 * normalised to its maximum, minus cut, clipped at 0.  Returns the maximum
 * before normalising (0: no input at all). */
float nc_neocog_seed_map_(const nc_neocog *net, uint32_t l, const float *in, float cut,
                          float *m);
/* m -= gain * (0.7^((r/d)^2) taper over r <= d, normalised to sum 1) * resp,
 * clipped at 0 (radius capped at 8 cells). */
void nc_neocog_inhibit_(float *m, const float *resp, uint32_t n, double d, float gain);

/* Planes [k0, k1) of an S-layer (neocog_forms.c): form F's own code run on
 * the range, so each plane comes out bit-identical to
 * nc_neocog_s_forward(s, .., NC_NEOCOG_FORM_F).  out is the whole
 * [n_out^2][ks(k_out)] layer, of which only columns [k0, k1) are written;
 * v2: n_out^2 floats of scratch.  k0 and k1 multiples of 8, k0 < k1 <=
 * ks(k_out); arguments as nc_neocog_s_forward checks them. */
/* Form F's last step (neocog_forms.c), shared with form B
 * (neocog_batch.c): out[o][0..w) holds e(o, k) for w planes (a multiple of
 * 8), rows ks apart, b the same planes' b; turns it into u_S given v2[o],
 * the squared V-cell response of each of the n_o positions. */
void nc_neocog_s_finish_(float *out, const float *v2, const float *b, float theta,
                         uint32_t ks, uint32_t w, size_t n_o);

void nc_neocog_s_slice_(const nc_neocog_s_args *s, const float *in, float *out,
                        float *v2, uint32_t k0, uint32_t k1);

#endif

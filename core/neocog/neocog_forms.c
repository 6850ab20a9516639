/* core/neocog/neocog_forms.c — the CPU forms of the neocognitron's layers (seed 004
 * section 3.4 and Table 6): F = scatter with the zero-skip, S = the same
 * scatter without it, G = gather through the inverse index.
 *
 * Layer: core.  All activations are position-major with a plane stride that
 * is a multiple of 8 (see neocog.h), so the innermost loop of every form runs
 * over the output planes k, contiguous in both the weights and the
 * accumulators, and vectorises (SSE2, or AVX2 through the target clones).
 * The scatter forms walk the forward table (input -> outputs it reaches), the
 * gather form the inverse table (output -> inputs it reads); both are the
 * tables of neocog_tables.c that the GPU kernels use too. */
#include "neocog_impl.h"

#include <math.h>
#include <string.h>

/* y[0..n) += a * x[0..n), n a multiple of 8.  The fixed inner 8 lets the
 * compiler emit whole vectors with no remainder loop, and restrict on the
 * (inlined) parameters spares it a run-time overlap check per call: these
 * calls are short (n = 16..80) and there are tens of thousands of them. */
static inline void axpy8(float *restrict y, const float *restrict x, float a,
                         uint32_t n)
{
    for (size_t k = 0; k < n; k += 8)
        for (size_t i = 0; i < 8; i++)
            y[k + i] += a * x[k + i];
}

/* Is any of x[0..n) non-zero (n a multiple of 8)? */
static inline int any8(const float *restrict x, uint32_t n)
{
    int any = 0;
    for (size_t k = 0; k < n; k += 8)
        for (size_t i = 0; i < 8; i++)
            any |= x[k + i] != 0.0f;
    return any;
}

/* Whole AVX2 vectors of 8 planes (two SSE2 halves in the default clone). */
#if defined(__GNUC__)
typedef float nc_v8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef int32_t nc_v8i __attribute__((vector_size(32), aligned(4), may_alias));
#define V8(p) (*(const nc_v8 *)(p))
#endif

/* ---- S-layer ------------------------------------------------------------- */

/* out[o][k] holds e(o, k) on entry; turns it into u_S (seed eq. 1):
 *   u = theta/(1-theta) * max(0, (1 + e)/(1 + theta * b_k * v) - 1)
 * for the w planes (a multiple of 8) that out and b point at, rows ks apart.
 * v2: [n_o] squared V-cell responses.  Pad lanes (a = 0, so e = 0) come out
 * 0 whatever b holds there, as b >= 0.  A position no non-zero input reached
 * (v2 = 0, hence e = 0) would give exactly 0 and is already 0: skipped. */
NC_NEOCOG_HOT
void nc_neocog_s_finish_(float *restrict out, const float *restrict v2,
                         const float *restrict b, float theta, uint32_t ks,
                         uint32_t w, size_t n_o)
{
    const float gain = theta / (1.0f - theta);
    for (size_t o = 0; o < n_o; o++) {
        if (v2[o] == 0.0f)
            continue;
        float *restrict eo = out + o * ks;
        const float tv = theta * sqrtf(v2[o]);
        for (size_t k = 0; k < w; k += 8) {
#if defined(__GNUC__)
            /* the same operations lane by lane, the choice by a mask (the
             * scalar form's branch mispredicts on most planes) */
            const nc_v8 x = (1.0f + V8(eo + k)) / (1.0f + tv * V8(b + k)) - 1.0f;
            *(nc_v8 *)(eo + k) = (nc_v8)((nc_v8i)(gain * x) & (x > 0.0f));
#else
            for (size_t i = 0; i < 8; i++) {
                float x = (1.0f + eo[k + i]) / (1.0f + tv * b[k + i]) - 1.0f;
                eo[k + i] = x > 0.0f ? gain * x : 0.0f;
            }
#endif
        }
    }
}

/* Input planes handled together per pass over a position's outputs. */
#define NC_NEOCOG_KAP_BATCH 64

/* e[0..ks) += sum_p u[p] * w[off[p] + 0..ks), ks a multiple of 8, each
 * element summing p = 0, 1, .. in turn: the output row is loaded and stored
 * once for all the input planes of a batch, so a position with several
 * non-zero planes costs one read-modify-write per output it reaches.
 * Written with GNU vectors of 8 floats, whole AVX2 registers in the AVX2
 * clone (two SSE2 halves in the default one); eight independent
 * accumulators per block of 64 planes hide the add latency, then blocks of
 * 32 and 8.  Other compilers take the plain loop. */
#if defined(__GNUC__)
#define AXPY_BLOCK(NV)                                                          \
    for (; k + 8 * NV <= ks; k += 8 * NV) {                                     \
        nc_v8 acc[NV];                                                          \
        for (int v = 0; v < NV; v++)                                            \
            acc[v] = V8(eo + k + 8 * v);                                        \
        for (uint32_t p = 0; p < np; p++) {                                     \
            const float *wp = w + off[p] + k;                                   \
            const float up = u[p];                                              \
            for (int v = 0; v < NV; v++)                                        \
                acc[v] += up * V8(wp + 8 * v);                                  \
        }                                                                       \
        for (int v = 0; v < NV; v++)                                            \
            *(nc_v8 *)(eo + k + 8 * v) = acc[v];                                \
    }
static inline void axpy_multi(float *restrict eo, const float *restrict w,
                              const float *restrict u, const size_t *restrict off,
                              uint32_t np, uint32_t ks)
{
    size_t k = 0;
    AXPY_BLOCK(8)
    AXPY_BLOCK(4)
    AXPY_BLOCK(1)
}
#else
static inline void axpy_multi(float *restrict eo, const float *restrict w,
                              const float *restrict u, const size_t *restrict off,
                              uint32_t np, uint32_t ks)
{
    for (uint32_t p = 0; p < np; p++)
        axpy8(eo, w + off[p], u[p], ks);
}
#endif


/* Forms F (skip = 1) and S (skip = 0), for planes [k0, k1) (multiples of 8;
 * the forms take [0, ks), the learner's parts ranges of it).  Shapes:
 *   in  [n_in^2][in_stride]          C-layer cells, >= 0
 *   a   [k_in][n_live][ks]           excitatory weights
 *   out [n_out^2][ks]                accumulates e, then u_S, in [k0, k1)
 *   v2  [n_out^2]                    accumulates sum c * u^2
 * For each input position i, take its non-zero cells (all cells for S),
 * and for every output o it reaches through live tap t:
 *   e[o][k0..k1) += sum_kappa u(i, kappa) * a[kappa][t][k0..k1)  (contiguous in k)
 *   v2[o]        += c[t] * sum_kappa u(i, kappa)^2
 * A plane's value does not depend on the range it is computed in: every
 * lane adds the same products in the same order.  F never touches the
 * outputs of an all-zero position, nor the weights of a zero cell: its work
 * is proportional to the non-zero inputs (seed 004 Table 8: ~6% of them). */
NC_NEOCOG_HOT
static void s_scatter(const nc_neocog_s_args *s, const float *restrict in,
                      float *restrict out, float *restrict v2, int skip, uint32_t k0,
                      uint32_t k1)
{
    const nc_neocog_index *ix = s->ix;
    const uint32_t ks = nc_neocog_kstride(s->k_out), nl = ix->n_live, w = k1 - k0;
    const size_t n_i = (size_t)ix->n_in * ix->n_in;
    const size_t n_o = (size_t)ix->n_out * ix->n_out;
    const int32_t *restrict sptr = ix->sct_ptr, *restrict sout = ix->sct_out;
    const int16_t *restrict stap = ix->sct_tap;
    const float *restrict c = s->c;
    const float *restrict a = s->a + k0;
    float u[NC_NEOCOG_KAP_BATCH];
    size_t off[NC_NEOCOG_KAP_BATCH];

    if (w == ks)
        memset(out, 0, n_o * ks * sizeof(float));
    else
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
        if (skip && !any)
            continue;
        const int32_t j0 = sptr[i], j1 = sptr[i + 1];
        for (int32_t j = j0; j < j1; j++)
            v2[sout[j]] += c[stap[j]] * uu;
        for (uint32_t kb = 0; kb < s->k_in; kb += NC_NEOCOG_KAP_BATCH) {
            uint32_t ke = kb + NC_NEOCOG_KAP_BATCH < s->k_in ? kb + NC_NEOCOG_KAP_BATCH : s->k_in;
            uint32_t np = 0;
            for (uint32_t kap = kb; kap < ke; kap++) {
                if (skip && ui[kap] == 0.0f)
                    continue;
                u[np] = ui[kap];
                off[np++] = (size_t)kap * nl * ks;
            }
            if (np == 0)
                continue;
            for (int32_t j = j0; j < j1; j++)
                axpy_multi(out + (size_t)sout[j] * ks + k0, a + (size_t)stap[j] * ks, u, off,
                           np, w);
        }
    }
    nc_neocog_s_finish_(out + k0, v2, s->b + k0, s->theta, ks, w, n_o);
}

void nc_neocog_s_slice_(const nc_neocog_s_args *s, const float *in, float *out,
                        float *v2, uint32_t k0, uint32_t k1)
{
    s_scatter(s, in, out, v2, 1, k0, k1);
}

/* Form G: one output position at a time, all planes together ("skewered",
 * seed T1 + T2 + T5): v is summed once for the position, the zero test sits
 * in the inner loop over the position's inputs.
 *   for o: for (i, t) in gat[o]: for kappa with in[i][kappa] != 0:
 *            e[o][0..ks) += u * a[kappa][t][0..ks);  v2 += c[t] * u^2 */
NC_NEOCOG_HOT
static void s_gather(const nc_neocog_s_args *s, const float *restrict in,
                     float *restrict out)
{
    const nc_neocog_index *ix = s->ix;
    const uint32_t ks = nc_neocog_kstride(s->k_out), nl = ix->n_live;
    const size_t n_o = (size_t)ix->n_out * ix->n_out;
    const int32_t *restrict gptr = ix->gat_ptr, *restrict gin = ix->gat_in;
    const int16_t *restrict gtap = ix->gat_tap;

    for (size_t o = 0; o < n_o; o++) {
        float *restrict eo = out + o * ks;
        float vv = 0.0f;
        memset(eo, 0, ks * sizeof(float));
        for (int32_t j = gptr[o]; j < gptr[o + 1]; j++) {
            const float *restrict ui = in + (size_t)gin[j] * s->in_stride;
            const int t = gtap[j];
            float uu = 0.0f;
            for (uint32_t kap = 0; kap < s->k_in; kap++) {
                const float u = ui[kap];
                if (u == 0.0f)
                    continue;
                uu += u * u;
                axpy8(eo, s->a + ((size_t)kap * nl + t) * ks, u, ks);
            }
            vv += s->c[t] * uu;
        }
        nc_neocog_s_finish_(eo, &vv, s->b, s->theta, ks, ks, 1);
    }
}

size_t nc_neocog_s_ws_floats(const nc_neocog_index *ix, uint32_t k_out)
{
    return (size_t)ix->n_out * ix->n_out + nc_neocog_kstride(k_out);
}

static int s_args_ok(const nc_neocog_s_args *s, const float *in, const float *out,
                     const float *ws)
{
    return s && s->ix && s->a && s->b && s->c && in && out && ws && s->k_in >= 1 &&
           s->k_in <= s->in_stride && s->k_out >= 1 && s->k_out <= NC_NEOCOG_MAX_PLANES &&
           s->theta > 0.0f && s->theta < 1.0f;
}

int nc_neocog_s_forward(const nc_neocog_s_args *s, const float *in,
                        float *out, float *ws, int form)
{
    if (!s_args_ok(s, in, out, ws))
        return -EINVAL;
    const uint32_t ks = nc_neocog_kstride(s->k_out);
    switch (form) {
    case NC_NEOCOG_FORM_F:   s_scatter(s, in, out, ws, 1, 0, ks); return 0;
    case NC_NEOCOG_FORM_S:   s_scatter(s, in, out, ws, 0, 0, ks); return 0;
    case NC_NEOCOG_FORM_G:   s_gather(s, in, out); return 0;
    case NC_NEOCOG_FORM_REF: nc_neocog__s_ref(s, in, out); return 0;
    default:                 return -EINVAL;
    }
}

int nc_neocog_s_forward_planes(const nc_neocog_s_args *s, const float *in,
                               float *out, float *ws, uint32_t k0, uint32_t k1)
{
    if (!s_args_ok(s, in, out, ws) || k0 % 8 || k1 % 8 || k0 >= k1 ||
        k1 > nc_neocog_kstride(s->k_out))
        return -EINVAL;
    s_scatter(s, in, out, ws, 1, k0, k1);
    return 0;
}

/* ---- C-layer ------------------------------------------------------------- */

/* out[o][k] = psi(out[o][k]), psi(x) = x / (1 + x) for x > 0, else 0, over
 * n_o rows of ks; rows with nothing positive (most of them) just become 0. */
NC_NEOCOG_HOT
static void c_finish(float *restrict out, uint32_t ks, size_t n_o)
{
    for (size_t o = 0; o < n_o; o++) {
        float *restrict eo = out + o * ks;
        int pos = 0;
        for (size_t k = 0; k < ks; k += 8)
            for (size_t i = 0; i < 8; i++)
                pos |= eo[k + i] > 0.0f;
        if (!pos) {
            memset(eo, 0, ks * sizeof(float));
            continue;
        }
        for (size_t k = 0; k < ks; k += 8) {
#if defined(__GNUC__)
            const nc_v8 x = V8(eo + k);     /* masked as s_finish does */
            *(nc_v8 *)(eo + k) = (nc_v8)((nc_v8i)(x / (1.0f + x)) & (x > 0.0f));
#else
            for (size_t i = 0; i < 8; i++) {
                float x = eo[k + i];
                eo[k + i] = x > 0.0f ? x / (1.0f + x) : 0.0f;
            }
#endif
        }
    }
}

/* Forms F and S.  Each plane is pooled on its own, so the vector runs over
 * planes of one position:
 *   in  [n_in^2][ks]  S cells;  out [n_out^2][ks]
 *   for i (skipping positions where every plane is 0 when skip):
 *     for (o, t) in sct[i]:  out[o][0..ks) += d[t] * in[i][0..ks) */
NC_NEOCOG_HOT
static void c_scatter(const nc_neocog_index *ix, const float *restrict d,
                      uint32_t ks, const float *restrict in,
                      float *restrict out, int skip)
{
    const size_t n_i = (size_t)ix->n_in * ix->n_in;
    const size_t n_o = (size_t)ix->n_out * ix->n_out;
    const int32_t *restrict sptr = ix->sct_ptr, *restrict sout = ix->sct_out;
    const int16_t *restrict stap = ix->sct_tap;

    memset(out, 0, n_o * ks * sizeof(float));
    for (size_t i = 0; i < n_i; i++) {
        const float *restrict ui = in + i * ks;
        if (skip && !any8(ui, ks))
            continue;
        for (int32_t j = sptr[i]; j < sptr[i + 1]; j++)
            axpy8(out + (size_t)sout[j] * ks, ui, d[stap[j]], ks);
    }
    c_finish(out, ks, n_o);
}

/* Form G: out[o][0..ks) = psi(sum over (i, t) in gat[o] of d[t] * in[i][..]). */
NC_NEOCOG_HOT
static void c_gather(const nc_neocog_index *ix, const float *restrict d,
                     uint32_t ks, const float *restrict in, float *restrict out)
{
    const size_t n_o = (size_t)ix->n_out * ix->n_out;
    for (size_t o = 0; o < n_o; o++) {
        float *restrict eo = out + o * ks;
        memset(eo, 0, ks * sizeof(float));
        for (int32_t j = ix->gat_ptr[o]; j < ix->gat_ptr[o + 1]; j++)
            axpy8(eo, in + (size_t)ix->gat_in[j] * ks, d[ix->gat_tap[j]], ks);
        c_finish(eo, ks, 1);
    }
}

size_t nc_neocog_c_ws_floats(const nc_neocog_index *ix, uint32_t k)
{
    return (size_t)ix->n_out * ix->n_out + nc_neocog_kstride(k);
}

int nc_neocog_c_forward(const nc_neocog_index *ix, const float *d, uint32_t k,
                        const float *in, float *out, float *ws, int form)
{
    (void)ws;   /* the C forms accumulate in out; kept for a uniform interface */
    if (!ix || !d || !in || !out || k < 1 || k > NC_NEOCOG_MAX_PLANES)
        return -EINVAL;
    const uint32_t ks = nc_neocog_kstride(k);
    switch (form) {
    case NC_NEOCOG_FORM_F:   c_scatter(ix, d, ks, in, out, 1); return 0;
    case NC_NEOCOG_FORM_S:   c_scatter(ix, d, ks, in, out, 0); return 0;
    case NC_NEOCOG_FORM_G:   c_gather(ix, d, ks, in, out); return 0;
    case NC_NEOCOG_FORM_REF: nc_neocog__c_ref(ix, d, k, in, out); return 0;
    default:                 return -EINVAL;
    }
}

/* ---- UG ------------------------------------------------------------------ */

/* x (one value per output) -> on/off lanes of a [n][8] layer. */
static void g_finish(const float *restrict x, float cut, float *restrict out,
                     size_t n_o)
{
    for (size_t o = 0; o < n_o; o++) {
        float v = x[o], *p = out + o * 8;
        p[0] = v > cut ? v : 0.0f;
        p[1] = v < -cut ? -v : 0.0f;
        for (int k = 2; k < 8; k++)
            p[k] = 0.0f;
    }
}

/* UG scatter: in [n_in^2] (binary digits are mostly 0, so F skips them),
 * x[o] += g[t] * in[i] for (o, t) in sct[i]; x lives in ws [n_out^2]. */
static void g_scatter(const nc_neocog_index *ix, const float *restrict g,
                      float cut, const float *restrict in, float *restrict out,
                      float *restrict x, int skip)
{
    const size_t n_i = (size_t)ix->n_in * ix->n_in;
    const size_t n_o = (size_t)ix->n_out * ix->n_out;
    memset(x, 0, n_o * sizeof(float));
    for (size_t i = 0; i < n_i; i++) {
        const float u = in[i];
        if (skip && u == 0.0f)
            continue;
        for (int32_t j = ix->sct_ptr[i]; j < ix->sct_ptr[i + 1]; j++)
            x[ix->sct_out[j]] += g[ix->sct_tap[j]] * u;
    }
    g_finish(x, cut, out, n_o);
}

static void g_gather(const nc_neocog_index *ix, const float *restrict g,
                     float cut, const float *restrict in, float *restrict out,
                     float *restrict x)
{
    const size_t n_o = (size_t)ix->n_out * ix->n_out;
    for (size_t o = 0; o < n_o; o++) {
        float acc = 0.0f;
        for (int32_t j = ix->gat_ptr[o]; j < ix->gat_ptr[o + 1]; j++)
            acc += g[ix->gat_tap[j]] * in[ix->gat_in[j]];
        x[o] = acc;
    }
    g_finish(x, cut, out, n_o);
}

int nc_neocog_g_forward(const nc_neocog_index *ix, const float *g, float cut,
                        const float *in, float *out, float *ws, int form)
{
    if (!ix || !g || !in || !out || !ws || !(cut >= 0.0f))
        return -EINVAL;
    switch (form) {
    case NC_NEOCOG_FORM_F:   g_scatter(ix, g, cut, in, out, ws, 1); return 0;
    case NC_NEOCOG_FORM_S:   g_scatter(ix, g, cut, in, out, ws, 0); return 0;
    case NC_NEOCOG_FORM_G:   g_gather(ix, g, cut, in, out, ws); return 0;
    case NC_NEOCOG_FORM_REF: nc_neocog__g_ref(ix, g, cut, in, out); return 0;
    default:                 return -EINVAL;
    }
}

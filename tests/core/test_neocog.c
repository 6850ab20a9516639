/* tests/core/test_neocog.c — the neocognitron CPU engine: geometry, inverse
 * index tables, the F/S/G forms against the plain reference, training maths,
 * plane growth, model files (dense and sparse weights, the NIVT mark), the
 * full network on real digits, and the CPU engine's answer on them.
 *
 * Tolerance of every form comparison: |x - ref| <= 1e-5 * (1 + |ref|), i.e.
 * relative 1e-5 with an absolute floor of 1e-5 for cells near 0 (float
 * accumulation in a different order against the double reference).  The
 * full network on real digits gets 1e-4 * (1 + |ref|) because errors pass
 * through up to eight layers.
 *
 * Over 800 lines on purpose: the cases share the helpers at the top (random
 * inputs, the reference forms, the comparisons at the stated tolerance). */
#include "fixture.h"
#include "test.h"

#include "backend.h"
#include "dataset.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "neocog.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define TOL 1e-5

static nc_test_rng rng = { 0x9e3779b97f4a7c15ULL };

static float urand(void) { return (float)nc_test_uniform(&rng); }

/* Compare n cells; report the first few mismatches.  Returns mismatches. */
static size_t compare(const char *what, const float *x, const float *ref,
                      size_t n, double tol)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - ref[i]);
        if (!(d <= tol * (1.0 + fabs(ref[i])))) {
            if (bad < 5)
                fprintf(stderr, "  %s[%zu] = %.9g, ref %.9g\n", what, i, x[i], ref[i]);
            bad++;
        }
    }
    CHECK_MSG(bad == 0, "%s: %zu of %zu cells differ", what, bad, n);
    return bad;
}

/* ---- geometry ------------------------------------------------------------- */

static double pos_sum(const float *w, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++) s += w[i] > 0 ? w[i] : 0;
    return s;
}
static double neg_sum(const float *w, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++) s += w[i] < 0 ? w[i] : 0;
    return s;
}

static void test_geometry(void)
{
    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    CHECK_INT_EQ(nc_neocog_arch_check(&A), 0);
    nc_neocog *net = NULL;
    REQUIRE(nc_neocog_new(&A, &net) == 0);

    /* sizes and pads of the spec's geometry paragraph */
    CHECK_INT_EQ(net->g_ix->n_out, 71); CHECK_INT_EQ(net->g_ix->pad, 6);
    const uint32_t s_size[4] = { 68, 38, 22, 5 }, s_pad[4] = { 1, 3, 3, 0 };
    const uint32_t c_size[3] = { 37, 21, 13 }, c_pad[3] = { 11, 8, 5 };
    const uint32_t s_live[4] = { 32, 32, 32, 69 }, c_live[3] = { 276, 172, 60 };
    for (int l = 0; l < 4; l++) {
        CHECK_INT_EQ(net->s_ix[l]->n_out, s_size[l]);
        CHECK_INT_EQ(net->s_ix[l]->pad, s_pad[l]);
        CHECK_INT_EQ(net->s_ix[l]->n_live, s_live[l]);
    }
    for (int l = 0; l < 3; l++) {
        CHECK_INT_EQ(net->c_ix[l]->n_out, c_size[l]);
        CHECK_INT_EQ(net->c_ix[l]->pad, c_pad[l]);
        CHECK_INT_EQ(net->c_ix[l]->step, 2);
        CHECK_INT_EQ(net->c_ix[l]->n_live, c_live[l]);
    }
    CHECK(net->c_ix[3] == NULL);
    CHECK_INT_EQ(net->g_ix->n_live, 37);

    /* UG: no response to uniform input (taps sum to +1 and -1) */
    CHECK_NEAR(pos_sum(net->g_w, 37), 1.0, 1e-6, 0);
    CHECK_NEAR(neg_sum(net->g_w, 37), -1.0, 1e-6, 0);
    /* C taps: negatives cancel positives; positive sums ~110 (UC1, UC2) and
     * ~202 (UC3, no surround), as the spec reports */
    for (int l = 0; l < 3; l++) {
        const uint32_t n = net->c_ix[l]->n_live;
        double p = pos_sum(net->c_d[l], n), q = neg_sum(net->c_d[l], n);
        fprintf(stderr, "  UC%d taps: positive sum %.1f, negative %.1f\n", l + 1, p, q);
        CHECK_NEAR(p, l < 2 ? 110.0 : 202.0, 0, 0.05);
        if (l < 2) CHECK_NEAR(p + q, 0.0, 1e-3, 0);
        else CHECK(q == 0.0);
    }
    /* V-cell weights in (0, 1] */
    for (int l = 0; l < 4; l++)
        for (uint32_t t = 0; t < net->s_ix[l]->n_live; t++)
            CHECK(net->s_c[l][t] > 0.0f && net->s_c[l][t] <= 1.0f);

    /* the table check rejects broken chains */
    nc_neocog_arch B = A;
    B.stage[1].s_pad = 2;
    CHECK_INT_EQ(nc_neocog_arch_check(&B), -EINVAL);
    B = A; B.stage[0].s_grid = NC_NEOCOG_GRID_ALIGNED;
    CHECK_INT_EQ(nc_neocog_arch_check(&B), -EINVAL);
    B = A; B.stage[2].theta = 1.0f;
    CHECK_INT_EQ(nc_neocog_arch_check(&B), -EINVAL);
    B = A; B.stage[3].c_kind = NC_NEOCOG_C_POOL;
    CHECK_INT_EQ(nc_neocog_arch_check(&B), -EINVAL);
    B = A; B.stage[3].c_win = 5;
    CHECK_INT_EQ(nc_neocog_arch_check(&B), -EINVAL);
    B = A; B.g_size = 70;
    CHECK_INT_EQ(nc_neocog_arch_check(&B), -EINVAL);
    nc_neocog_free(net);
    nc_neocog_free(NULL);
}

/* ---- tables --------------------------------------------------------------- */

static void test_tables(void)
{
    const uint32_t wins[] = { 1, 2, 3, 6, 9 };
    int cases = 0;
    for (size_t wi = 0; wi < NC_ARRAY_LEN(wins); wi++)
        for (uint32_t step = 1; step <= 2; step++)
            for (uint32_t n_out = 1; n_out <= 13; n_out += 4) {
                uint32_t win = wins[wi], pad = (win - 1) * (uint32_t)(cases % 3) / 2;
                if ((n_out - 1) * step + win <= 2 * pad)
                    pad = ((n_out - 1) * step + win - 1) / 2;   /* n_in >= 1 */
                uint32_t n_in = (n_out - 1) * step + win - 2 * pad;
                float radius = win * 0.5f + 0.3f;
                nc_neocog_index *ix = NULL;
                REQUIRE(nc_neocog_index_new(n_in, n_out, win, pad, step, radius, &ix) == 0);
                cases++;
                /* gather entries against brute force, taps ascending */
                size_t j = 0, bad = 0;
                for (uint32_t oy = 0; oy < n_out; oy++)
                    for (uint32_t ox = 0; ox < n_out; ox++) {
                        uint32_t o = oy * n_out + ox;
                        if (ix->gat_ptr[o] != (int32_t)j) bad++;
                        for (uint32_t t = 0; t < ix->n_live; t++) {
                            long iy = (long)oy * step - pad + ix->tap_y[t];
                            long ixx = (long)ox * step - pad + ix->tap_x[t];
                            if (iy < 0 || iy >= n_in || ixx < 0 || ixx >= n_in)
                                continue;
                            if (ix->gat_in[j] != iy * (long)n_in + ixx || ix->gat_tap[j] != (int)t)
                                bad++;
                            j++;
                        }
                        /* the axis table gives the same clipped window */
                        for (int ax = 0; ax < 2; ax++) {
                            uint32_t oo = ax ? ox : oy;
                            long lo = (long)oo * step - pad + ix->axis_t0[oo];
                            long hi = (long)oo * step - pad + ix->axis_t1[oo] - 1;
                            if (ix->axis_t0[oo] < ix->axis_t1[oo] && (lo < 0 || hi >= n_in))
                                bad++;
                        }
                    }
                CHECK_INT_EQ(j, ix->n_entries);
                CHECK_INT_EQ(bad, 0);
                /* scatter is the transpose: every entry found back */
                size_t found = 0;
                for (uint32_t i = 0; i < n_in * n_in; i++)
                    for (int32_t e = ix->sct_ptr[i]; e < ix->sct_ptr[i + 1]; e++) {
                        int32_t o = ix->sct_out[e];
                        for (int32_t g = ix->gat_ptr[o]; g < ix->gat_ptr[o + 1]; g++)
                            if (ix->gat_in[g] == (int32_t)i && ix->gat_tap[g] == ix->sct_tap[e]) {
                                found++;
                                break;
                            }
                    }
                CHECK_INT_EQ(found, ix->n_entries);
                nc_neocog_index_free(ix);
            }
    /* bad geometry is refused */
    nc_neocog_index *ix = NULL;
    CHECK_INT_EQ(nc_neocog_index_new(10, 6, 6, 1, 1, 3.4f, &ix), -EINVAL);
    CHECK_INT_EQ(nc_neocog_index_new(10, 5, 6, 6, 1, 3.4f, &ix), -EINVAL);
    CHECK_INT_EQ(nc_neocog_index_new(10, 5, 6, 0, 1, 0.0f, &ix), -EINVAL);
    CHECK(ix == NULL);
}

/* ---- forms ---------------------------------------------------------------- */

/* Sparse non-negative cells: about `density` of them non-zero. */
static void fill_sparse(float *x, size_t n_pos, uint32_t k, uint32_t stride,
                        double density)
{
    for (size_t i = 0; i < n_pos; i++)
        for (uint32_t j = 0; j < stride; j++)
            x[i * stride + j] = (j < k && urand() < density) ? urand() : 0.0f;
}

static const char *form_name[] = { "F", "S", "G", "ref" };

static void test_s_forms(void)
{
    const uint32_t sizes[] = { 1, 3, 7, 13 }, ks_[] = { 1, 3, 17 };
    const uint32_t wins[] = { 6, 9, 3, 2 };
    int cases = 0;
    for (size_t si = 0; si < NC_ARRAY_LEN(sizes); si++)
        for (size_t wi = 0; wi < NC_ARRAY_LEN(wins); wi++)
            for (size_t ki = 0; ki < NC_ARRAY_LEN(ks_); ki++) {
                uint32_t n_out = sizes[si], win = wins[wi], step = 1 + (cases % 4 == 3);
                uint32_t pad = (uint32_t)(cases % win);
                if ((n_out - 1) * step + win <= 2 * pad)
                    pad = 0;
                uint32_t n_in = (n_out - 1) * step + win - 2 * pad;
                uint32_t k_in = ks_[ki], k_out = ks_[(ki + si) % 3];
                float radius = win == 9 ? 4.9f : win * 0.5f + 0.4f;
                nc_neocog_index *ix = NULL;
                REQUIRE(nc_neocog_index_new(n_in, n_out, win, pad, step, radius, &ix) == 0);
                uint32_t in_stride = nc_neocog_kstride(k_in), ks = nc_neocog_kstride(k_out);
                size_t n_i = (size_t)n_in * n_in, n_o = (size_t)n_out * n_out;
                float *in = malloc(n_i * in_stride * sizeof(float));
                float *a = calloc((size_t)k_in * ix->n_live * ks, sizeof(float));
                float *b = calloc(ks, sizeof(float)), *c = malloc(ix->n_live * sizeof(float));
                float *out[4], *ws = malloc(nc_neocog_s_ws_floats(ix, k_out) * sizeof(float));
                for (int f = 0; f < 4; f++) out[f] = malloc(n_o * ks * sizeof(float));
                fill_sparse(in, n_i, k_in, in_stride, cases % 2 ? 0.1 : 0.6);
                for (size_t i = 0; i < (size_t)k_in * ix->n_live; i++)
                    for (uint32_t k = 0; k < k_out; k++)
                        a[i * ks + k] = urand() < 0.3 ? 0.0f : urand() * 3.0f;
                for (uint32_t k = 0; k < k_out; k++)
                    b[k] = urand() * 4.0f;
                nc_neocog_taps_vcell(ix, 0.7f, c);
                nc_neocog_s_args s = { .ix = ix, .k_in = k_in, .in_stride = in_stride,
                                       .k_out = k_out, .a = a, .b = b, .c = c,
                                       .theta = 0.3f + 0.1f * (cases % 5) };
                for (int f = 0; f < 4; f++) {
                    for (size_t i = 0; i < n_o * ks; i++) out[f][i] = NAN;  /* all written? */
                    CHECK_INT_EQ(nc_neocog_s_forward(&s, in, out[f], ws, f), 0);
                }
                char what[96];
                for (int f = 0; f < 3; f++) {
                    snprintf(what, sizeof what, "S-layer %s n=%u win=%u pad=%u step=%u k=%u->%u",
                             form_name[f], n_out, win, pad, step, k_in, k_out);
                    compare(what, out[f], out[3], n_o * ks, TOL);
                }
                cases++;
                for (int f = 0; f < 4; f++) free(out[f]);
                free(in); free(a); free(b); free(c); free(ws);
                nc_neocog_index_free(ix);
            }
    fprintf(stderr, "  S-layer forms: %d geometries\n", cases);
}

/* Form B (nc_neocog_s_forward_many): n inputs at once, each output bit for
 * bit form F's on that input (and so within TOL of the reference), with a
 * pack made once and with none; plane counts whose strides take every tile
 * width (64, 32, 16, 8), an all-zero input among the n, awkward n. */
static void test_s_many(void)
{
    const uint32_t sizes[] = { 1, 5, 13 }, kins[] = { 1, 3, 40 };
    const uint32_t kouts[] = { 1, 83, 130, 17 }, wins[] = { 9, 6, 3 }, ns[] = { 1, 3, 4 };
    int cases = 0;
    for (size_t si = 0; si < NC_ARRAY_LEN(sizes); si++)
        for (size_t wi = 0; wi < NC_ARRAY_LEN(wins); wi++)
            for (size_t ki = 0; ki < NC_ARRAY_LEN(kouts); ki++) {
                const uint32_t n_out = sizes[si], win = wins[wi], step = 1 + (cases % 3 == 2);
                uint32_t pad = (uint32_t)(cases % win);
                if ((n_out - 1) * step + win <= 2 * pad)
                    pad = 0;
                const uint32_t n_in = (n_out - 1) * step + win - 2 * pad;
                const uint32_t k_in = kins[(ki + si) % 3], k_out = kouts[ki];
                const uint32_t n = ns[(si + wi) % 3] + (cases % 2);
                const float radius = win == 9 ? 4.9f : win * 0.5f + 0.4f;
                nc_neocog_index *ix = NULL;
                REQUIRE(nc_neocog_index_new(n_in, n_out, win, pad, step, radius, &ix) == 0);
                const uint32_t in_stride = nc_neocog_kstride(k_in) + 8 * (cases % 2);
                const uint32_t ks = nc_neocog_kstride(k_out);
                const size_t n_i = (size_t)n_in * n_in, n_o = (size_t)n_out * n_out;
                float *in = malloc(n * n_i * in_stride * sizeof(float));
                float *a = calloc((size_t)k_in * ix->n_live * ks, sizeof(float));
                float *b = calloc(ks, sizeof(float)), *c = malloc(ix->n_live * sizeof(float));
                float *ws = malloc(nc_neocog_s_ws_floats(ix, k_out) * sizeof(float));
                float *f_out = malloc(n_o * ks * sizeof(float)), *r_out = malloc(n_o * ks * sizeof(float));
                float *outs = malloc(2 * n * n_o * ks * sizeof(float));
                REQUIRE(in && a && b && c && ws && f_out && r_out && outs);
                for (uint32_t p = 0; p < n; p++)     /* pass 1 all zero when n > 1 */
                    fill_sparse(in + p * n_i * in_stride, n_i, k_in, in_stride,
                                p == 1 ? 0.0 : p % 2 ? 0.05 : 0.3);
                for (size_t i = 0; i < (size_t)k_in * ix->n_live; i++)
                    for (uint32_t k = 0; k < k_out; k++)
                        a[i * ks + k] = urand() < 0.7 ? 0.0f : urand() * 3.0f;
                for (uint32_t k = 0; k < k_out; k++)
                    b[k] = urand() * 4.0f;
                nc_neocog_taps_vcell(ix, 0.7f, c);
                nc_neocog_s_args s = { .ix = ix, .k_in = k_in, .in_stride = in_stride,
                                       .k_out = k_out, .a = a, .b = b, .c = c,
                                       .theta = 0.3f + 0.1f * (cases % 5) };
                const float *inp[8];
                float *outp[2][8];
                for (uint32_t p = 0; p < n; p++) {
                    inp[p] = in + p * n_i * in_stride;
                    for (int v = 0; v < 2; v++) {
                        outp[v][p] = outs + ((size_t)v * n + p) * n_o * ks;
                        for (size_t i = 0; i < n_o * ks; i++)
                            outp[v][p][i] = NAN;    /* all written? */
                    }
                }
                nc_neocog_s_pack *pk = NULL;
                REQUIRE(nc_neocog_s_pack_new(&s, &pk) == 0);
                CHECK_INT_EQ(nc_neocog_s_forward_many(&s, pk, n, inp, outp[0]), 0);
                CHECK_INT_EQ(nc_neocog_s_forward_many(&s, NULL, n, inp, outp[1]), 0);
                for (uint32_t p = 0; p < n; p++) {
                    CHECK_INT_EQ(nc_neocog_s_forward(&s, inp[p], f_out, ws, NC_NEOCOG_FORM_F), 0);
                    CHECK_INT_EQ(nc_neocog_s_forward(&s, inp[p], r_out, ws, NC_NEOCOG_FORM_REF), 0);
                    CHECK_MSG(!memcmp(outp[0][p], f_out, n_o * ks * sizeof(float)) &&
                                  !memcmp(outp[1][p], f_out, n_o * ks * sizeof(float)),
                              "form B pass %u of %u n=%u win=%u pad=%u step=%u k=%u->%u: "
                              "not form F's bit for bit", p, n, n_out, win, pad, step, k_in,
                              k_out);
                    char what[96];
                    snprintf(what, sizeof what, "S-layer B pass %u n=%u win=%u k=%u->%u", p,
                             n_out, win, k_in, k_out);
                    compare(what, outp[0][p], r_out, n_o * ks, TOL);
                }
                /* a pack made for other sizes is refused */
                s.k_out = k_out + 8;
                CHECK_INT_EQ(nc_neocog_s_forward_many(&s, pk, n, inp, outp[0]), -EINVAL);
                s.k_out = k_out;
                CHECK_INT_EQ(nc_neocog_s_forward_many(&s, pk, 0, inp, outp[0]), -EINVAL);
                nc_neocog_s_pack_free(pk);
                cases++;
                free(in); free(a); free(b); free(c); free(ws); free(f_out); free(r_out);
                free(outs);
                nc_neocog_index_free(ix);
            }
    fprintf(stderr, "  S-layer form B: %d geometries\n", cases);
}

static void test_c_forms(void)
{
    const uint32_t sizes[] = { 1, 3, 7, 13 }, ks_[] = { 1, 3, 17 };
    const uint32_t wins[] = { 8, 14, 18, 5 };
    int cases = 0;
    for (size_t si = 0; si < NC_ARRAY_LEN(sizes); si++)
        for (size_t wi = 0; wi < NC_ARRAY_LEN(wins); wi++)
            for (size_t ki = 0; ki < NC_ARRAY_LEN(ks_); ki++) {
                uint32_t n_out = sizes[si], win = wins[wi], step = 1 + (cases % 3 != 0);
                uint32_t pad = (uint32_t)((cases * 7) % win);
                if ((n_out - 1) * step + win <= 2 * pad)
                    pad = 0;
                uint32_t n_in = (n_out - 1) * step + win - 2 * pad, k = ks_[ki];
                float radius = win * 0.5f + 0.4f, ro = win == 8 ? radius : 3.4f;
                nc_neocog_index *ix = NULL;
                REQUIRE(nc_neocog_index_new(n_in, n_out, win, pad, step, radius, &ix) == 0);
                uint32_t ks = nc_neocog_kstride(k);
                size_t n_i = (size_t)n_in * n_in, n_o = (size_t)n_out * n_out;
                float *in = malloc(n_i * ks * sizeof(float)), *d = malloc(ix->n_live * sizeof(float));
                float *out[4], *ws = malloc(nc_neocog_c_ws_floats(ix, k) * sizeof(float));
                for (int f = 0; f < 4; f++) out[f] = malloc(n_o * ks * sizeof(float));
                fill_sparse(in, n_i, k, ks, cases % 2 ? 0.05 : 0.5);
                nc_neocog_taps_ccell(ix, ro < radius ? ro : radius, d);
                for (int f = 0; f < 4; f++) {
                    for (size_t i = 0; i < n_o * ks; i++) out[f][i] = NAN;
                    CHECK_INT_EQ(nc_neocog_c_forward(ix, d, k, in, out[f], ws, f), 0);
                }
                char what[96];
                for (int f = 0; f < 3; f++) {
                    snprintf(what, sizeof what, "C-layer %s n=%u win=%u pad=%u step=%u k=%u",
                             form_name[f], n_out, win, pad, step, k);
                    compare(what, out[f], out[3], n_o * ks, TOL);
                }
                cases++;
                for (int f = 0; f < 4; f++) free(out[f]);
                free(in); free(d); free(ws);
                nc_neocog_index_free(ix);
            }
    fprintf(stderr, "  C-layer forms: %d geometries\n", cases);

    /* UG on a random binary field of odd size */
    nc_neocog_index *ix = NULL;
    REQUIRE(nc_neocog_index_new(13, 19, 7, 6, 1, 3.3f, &ix) == 0);
    float in[13 * 13], g[64], out[4][19 * 19 * 8], ws[19 * 19 + 8];
    for (int i = 0; i < 13 * 13; i++) in[i] = urand() < 0.3 ? 1.0f : 0.0f;
    nc_neocog_taps_ug(ix, 1.5f, g);
    for (int f = 0; f < 4; f++)
        CHECK_INT_EQ(nc_neocog_g_forward(ix, g, 1e-4f, in, out[f], ws, f), 0);
    for (int f = 0; f < 3; f++)
        compare(form_name[f], out[f], out[3], 19 * 19 * 8, TOL);
    nc_neocog_index_free(ix);
}

/* The lists of non-zero planes: a hand-made layer with every plane count
 * a position can have (none, one, the first, the last, all), then random
 * positions against a plain count; refused arguments. */
static void test_list(void)
{
    enum { K = 5, STRIDE = 8, NP = 6 };
    static const float in[NP][STRIDE] = {
        { 0, 0, 0, 0, 0, 9, 9, 9 },             /* lanes past k are not planes */
        { 0.5f, 0, 0, 0, 0 },
        { 0, 0, 0, 0, 2.0f },
        { 1, 2, 3, 4, 5 },
        { 0, 0.25f, 0, 0.75f, 0 },
        { 0, 0, 1e-30f, 0, 0 },
    };
    static const uint16_t want_cnt[NP] = { 0, 1, 1, 5, 2, 1 };
    uint16_t cnt[NP];
    float q[NP];
    int32_t ent[NP * K * 2];
    const uint32_t mul = 7;
    CHECK_INT_EQ(nc_neocog_list_build(&in[0][0], NP, K, STRIDE, mul, cnt, q, ent), 0);
    for (int p = 0; p < NP; p++) {
        CHECK_INT_EQ(cnt[p], want_cnt[p]);
        float sq = 0.0f;
        for (int k = 0; k < K; k++)
            sq += in[p][k] * in[p][k];
        CHECK(q[p] == sq);
        int j = 0;
        for (int k = 0; k < K && j < cnt[p]; k++) {
            if (in[p][k] == 0.0f)
                continue;
            float v;
            memcpy(&v, &ent[(p * K + j) * 2], sizeof v);
            CHECK(v == in[p][k]);
            CHECK_INT_EQ(ent[(p * K + j) * 2 + 1], k * (int32_t)mul);
            j++;
        }
    }
    /* random sparse positions, 40 planes (more than a warp's 32) */
    enum { K2 = 40, S2 = 40, NP2 = 300 };
    float *x = malloc(NP2 * S2 * sizeof(float));
    uint16_t *c2 = malloc(NP2 * sizeof(uint16_t));
    float *q2 = malloc(NP2 * sizeof(float));
    int32_t *e2 = malloc(NP2 * K2 * 2 * sizeof(int32_t));
    REQUIRE(x && c2 && q2 && e2);
    for (int i = 0; i < NP2 * S2; i++)
        x[i] = urand() < 0.1 ? urand() : 0.0f;
    CHECK_INT_EQ(nc_neocog_list_build(x, NP2, K2, S2, 3, c2, q2, e2), 0);
    size_t bad = 0;
    for (int p = 0; p < NP2; p++) {
        uint32_t n = 0;
        for (int k = 0; k < K2; k++)
            if (x[p * S2 + k] != 0.0f) {
                bad += n >= c2[p] || e2[(p * K2 + n) * 2 + 1] != 3 * k;
                n++;
            }
        bad += n != c2[p];
    }
    CHECK_MSG(bad == 0, "list of random positions: %zu mismatches", bad);
    CHECK_INT_EQ(nc_neocog_list_build(x, NP2, 0, S2, 3, c2, q2, e2), -EINVAL);
    CHECK_INT_EQ(nc_neocog_list_build(x, NP2, K2, K2 - 1, 3, c2, q2, e2), -EINVAL);
    CHECK_INT_EQ(nc_neocog_list_build(x, NP2, K2, S2, 0x7fffffffu, c2, q2, e2), -EINVAL);
    CHECK_INT_EQ(nc_neocog_list_build(NULL, NP2, K2, S2, 3, c2, q2, e2), -EINVAL);
    fprintf(stderr, "  lists of non-zero planes: ok\n");
    free(x);
    free(c2);
    free(q2);
    free(e2);
}

/* ---- plane growth, Reinforce, US1 ----------------------------------------- */

static void test_growth(void)
{
    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    nc_neocog *net = NULL;
    REQUIRE(nc_neocog_new(&A, &net) == 0);
    uint32_t k;
    /* stage 1 gets planes, then stage 0 grows under it: stage 1's weights
     * (its input axis) must survive the re-layout */
    CHECK_INT_EQ(nc_neocog_add_plane(net, 0, 0, &k), 0);
    CHECK_INT_EQ(k, 0);
    for (int i = 0; i < 9; i++)
        CHECK_INT_EQ(nc_neocog_add_plane(net, 1, 0, &k), 0);
    CHECK_INT_EQ(k, 8);
    uint32_t nl = net->s_ix[1]->n_live;
    for (uint32_t kk = 0; kk < 9; kk++)
        for (uint32_t t = 0; t < nl; t++)
            net->a[1][t * 16 + kk] = (float)(kk * 1000 + t);
    net->b[1][8] = 7.0f;
    CHECK_INT_EQ(nc_neocog_add_plane(net, 0, 0, &k), 0);
    CHECK_INT_EQ(nc_neocog_k_in(net, 1), 2);
    int bad = 0;
    for (uint32_t kk = 0; kk < 9; kk++)
        for (uint32_t t = 0; t < nl; t++) {
            bad += net->a[1][t * 16 + kk] != (float)(kk * 1000 + t);   /* kappa 0 */
            bad += net->a[1][(nl + t) * 16 + kk] != 0.0f;               /* kappa 1, new */
        }
    CHECK_INT_EQ(bad, 0);
    CHECK(net->b[1][8] == 7.0f);
    /* labels only matter (and are checked) on the last stage */
    CHECK_INT_EQ(nc_neocog_add_plane(net, 3, 10, &k), -EINVAL);
    CHECK_INT_EQ(nc_neocog_add_plane(net, 3, 9, &k), 0);
    CHECK_INT_EQ(net->labels[0], 9);
    for (int i = 2; i < 16; i++)
        CHECK_INT_EQ(nc_neocog_add_plane(net, 0, 0, NULL), 0);
    CHECK_INT_EQ(nc_neocog_add_plane(net, 0, 0, NULL), -ERANGE);
    CHECK_INT_EQ(net->n_planes[0], 16);
    nc_neocog_free(net);
}

static void test_us1(void)
{
    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    nc_neocog *net = NULL;
    nc_neocog_state *st = NULL;
    REQUIRE(nc_neocog_new(&A, &net) == 0);
    CHECK_INT_EQ(nc_neocog_train_us1(net, 16, 100.0f), 0);
    REQUIRE(net->n_planes[0] == 16);
    CHECK_INT_EQ(nc_neocog_train_us1(net, 16, 100.0f), -EINVAL);   /* not empty */
    REQUIRE(nc_neocog_state_new(net, &st) == 0);

    /* b = sqrt(sum a^2 / c) after Reinforce */
    const uint32_t nl = net->s_ix[0]->n_live;
    float bmin = 1e30f, bmax = 0;
    for (uint32_t k = 0; k < 16; k++) {
        double s = 0;
        for (uint32_t i = 0; i < 2 * nl; i++) {
            double a = net->a[0][i * 16 + k];
            CHECK(a >= 0);
            s += a * a / net->s_c[0][i % nl];
        }
        CHECK_NEAR(net->b[0][k], sqrt(s), 0, 1e-5);
        bmin = fminf(bmin, net->b[0][k]);
        bmax = fmaxf(bmax, net->b[0][k]);
    }
    fprintf(stderr, "  US1 after edge training: b in [%.1f, %.1f]\n", bmin, bmax);
    CHECK(bmin > 30.0f && bmax < 300.0f);   /* spec: ~110 (cosine regime) */

    /* each plane answers its own edge best at the centre, near the cosine
     * regime's 1 (theta/(1-theta) * (1/theta - 1) = 1) */
    int own_best = 0;
    const uint32_t c = 34 * 68 + 34;
    for (uint32_t k = 0; k < 16; k++) {
        nc_neocog_draw_edge(65, k, 16, st->u0);
        CHECK_INT_EQ(nc_neocog_run_layer(net, st, NC_NEOCOG_L_UG, NC_NEOCOG_FORM_F), 0);
        CHECK_INT_EQ(nc_neocog_run_layer(net, st, NC_NEOCOG_L_S1, NC_NEOCOG_FORM_F), 0);
        const float *u = st->us[0] + (size_t)c * 16;
        uint32_t best = 0;
        for (uint32_t j = 1; j < 16; j++)
            if (u[j] > u[best]) best = j;
        own_best += best == k;
        CHECK(u[k] > 0.8f && u[k] <= 1.0f);
    }
    CHECK_INT_EQ(own_best, 16);

    /* Reinforce once more at one position: a grows by q c u exactly */
    float before = net->a[0][0 * 16 + 3];
    const uint32_t y = 30, x = 30, t0x = net->s_ix[0]->tap_x[0], t0y = net->s_ix[0]->tap_y[0];
    float u0 = st->ug[((size_t)(y - 1 + t0y) * 71 + (x - 1 + t0x)) * 8 + 0];
    CHECK_INT_EQ(nc_neocog_reinforce(net, 0, 3, y, x, 2.0f, st->ug), 0);
    CHECK_NEAR(net->a[0][0 * 16 + 3], before + 2.0f * net->s_c[0][0] * u0, 1e-4, 1e-6);
    CHECK_INT_EQ(nc_neocog_reinforce(net, 0, 16, y, x, 2.0f, st->ug), -EINVAL);
    CHECK_INT_EQ(nc_neocog_reinforce(net, 0, 3, 68, x, 2.0f, st->ug), -EINVAL);

    nc_neocog_state_free(st);
    nc_neocog_state_free(NULL);
    nc_neocog_free(net);
}

/* ---- model files ---------------------------------------------------------- */

/* A small trained-looking net: US1 by edges, random planes above. */
static nc_neocog *small_net(void)
{
    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    nc_neocog *net = NULL;
    if (nc_neocog_new(&A, &net) < 0)
        return NULL;
    if (nc_neocog_train_us1(net, 16, 100.0f) < 0)
        goto fail;
    const uint32_t want[4] = { 16, 3, 5, 4 };
    for (uint32_t l = 1; l < 4; l++)
        for (uint32_t k = 0; k < want[l]; k++)
            if (nc_neocog_add_plane(net, l, (k * 3) % 10, NULL) < 0)
                goto fail;
    for (uint32_t l = 1; l < 4; l++) {
        uint32_t ks = nc_neocog_kstride(net->n_planes[l]);
        size_t rows = (size_t)nc_neocog_k_in(net, l) * net->s_ix[l]->n_live;
        for (size_t i = 0; i < rows; i++)
            for (uint32_t k = 0; k < net->n_planes[l]; k++)
                net->a[l][i * ks + k] = urand() < 0.5 ? 0.0f : urand();
        for (uint32_t k = 0; k < net->n_planes[l]; k++)
            net->b[l][k] = 1.0f + urand();
    }
    return net;
fail:
    nc_neocog_free(net);
    return NULL;
}

static void fill_info(nc_model_info *info, uint32_t n_classes)
{
    memset(info, 0, sizeof(*info));
    info->n_classes = n_classes;
    for (uint32_t c = 0; c < n_classes; c++)
        snprintf(info->labels[c], sizeof info->labels[c], "%u", c);
    info->prep = (nc_prep){ .kind = NC_PREP_NEOCOG, .size = 65, .box = 40, .threshold = 0.5f };
    snprintf(info->data, sizeof info->data, "test_neocog small_net");
    info->test_error = -1.0;
}

static int same_net(const nc_neocog *x, const nc_neocog *y)
{
    if (memcmp(&x->arch, &y->arch, sizeof(x->arch)) ||
        memcmp(x->n_planes, y->n_planes, sizeof(x->n_planes)) ||
        x->n_params != y->n_params ||
        memcmp(x->params, y->params, x->n_params * sizeof(float)) ||
        memcmp(x->labels, y->labels, x->n_planes[x->arch.n_stages - 1] * sizeof(uint32_t)))
        return 0;
    return 1;
}

/* How to spoil a file while keeping its container valid. */
enum spoil {
    SP_NONE, SP_PLANES, SP_NEG_WEIGHT, SP_THETA, SP_LABEL, SP_NO_B3, SP_CHAIN,
    SP_KMAX, SP_INFO_CLASSES, SP_STG_SHORT, SP_W_TYPE, SP_NAN_B, SP_ZERO_PLANES,
    /* sparse weights only (stage 4, "W4M " / "W4V ", whose 4 x 5 x 69 weights
     * leave pad bits in the bitmap's last word): */
    SP_SP_BIT_CLEARED,  /* one bitmap bit cleared: popcount < values */
    SP_SP_EXTRA_VALUE,  /* one value too many: popcount < values */
    SP_SP_BIT_SET,      /* one more bit, no value for it: popcount > values */
    SP_SP_ZERO_VALUE,   /* an explicit 0 among the values */
    SP_SP_NAN_VALUE,    /* NaN among the values */
    SP_SP_PAD_BIT,      /* a bit past the last weight, with a value for it */
    SP_SP_BOTH_FORMS,   /* W4 dense as well */
    SP_SP_NO_VALUES,    /* bitmap without W4V */
    SP_SP_NO_BITMAP,    /* W4V without bitmap */
    SP_SP_SHORT_BITMAP, /* bitmap one word short */
    SP_SP_MASK_TYPE,    /* bitmap stored as f32 */
    SP_N
};
#define SP_FIRST_SPARSE SP_SP_BIT_CLEARED

/* Put stage l's weights wt (file order, n of them) in the sparse form of
 * neocog.h, spoiled as `how` says (the caller passes SP_NONE for the stages
 * it leaves intact). */
static int put_sparse(nc_mf_writer *w, uint32_t l, const float *wt, size_t n, int how)
{
    const uint32_t tm = NC_MF_TAG('W', '1' + l, 'M', ' ');
    const uint32_t tv = NC_MF_TAG('W', '1' + l, 'V', ' ');
    size_t words = (n + 31) / 32, m = 0;
    uint32_t *bm = calloc(words + 1, sizeof(uint32_t));
    float *val = malloc((n + 2) * sizeof(float));
    uint32_t *raw = malloc((n + 2) * sizeof(uint32_t));
    int r = 0;
    if (!bm || !val || !raw) {
        free(bm);
        free(val);
        free(raw);
        return -ENOMEM;
    }
    for (size_t j = 0; j < n; j++)
        if (wt[j] != 0.0f) {
            bm[j / 32] |= 1u << (j % 32);
            val[m++] = wt[j];
        }
    size_t first = 0;               /* index of the first set bit */
    while (!(bm[first / 32] >> (first % 32) & 1u))
        first++;
    if (how == SP_SP_BIT_CLEARED) bm[first / 32] &= ~(1u << (first % 32));
    if (how == SP_SP_EXTRA_VALUE) val[m++] = 0.25f;
    if (how == SP_SP_BIT_SET) {     /* the first zero weight gets a bit */
        size_t j = 0;
        while (wt[j] != 0.0f)
            j++;
        bm[j / 32] |= 1u << (j % 32);
    }
    if (how == SP_SP_ZERO_VALUE) val[m / 2] = 0.0f;
    if (how == SP_SP_PAD_BIT) {
        CHECK_MSG(n % 32 != 0, "no pad bits to spoil (n = %zu)", n);
        bm[n / 32] |= 1u << (n % 32);
        val[m++] = 0.5f;
    }
    if (how == SP_SP_SHORT_BITMAP) words--;
    if (how == SP_SP_MASK_TYPE)
        r |= nc_mf_put(w, tm, NC_MF_TYPE_F32, bm, words * 4);
    else if (how != SP_SP_NO_BITMAP)
        r |= nc_mf_put_u32(w, tm, bm, words);
    if (how == SP_W_TYPE) {         /* values stored as u32 */
        for (size_t i = 0; i < m; i++)
            memcpy(&raw[i], &val[i], 4);
        r |= nc_mf_put(w, tv, NC_MF_TYPE_U32, raw, m * 4);
    } else if (how == SP_SP_NAN_VALUE) {   /* the writer refuses NaN: bytes by hand */
        for (size_t i = 0; i < m; i++)
            memcpy(&raw[i], &val[i], 4);
        raw[m / 2] = 0x7fc00000u;
        r |= nc_mf_put(w, tv, NC_MF_TYPE_F32, raw, m * 4);
    } else if (how != SP_SP_NO_VALUES) {
        r |= nc_mf_put_f32(w, tv, val, m);
    }
    if (how == SP_SP_BOTH_FORMS)
        r |= nc_mf_put_f32(w, NC_MF_TAG('W', '1' + l, ' ', ' '), wt, n);
    free(bm);
    free(val);
    free(raw);
    return r;
}

/* Write net like nc_neocog_write does, section by section, spoiling one;
 * the weights dense, or sparse (every stage). */
static int write_spoiled(const nc_neocog *net, int how, int sparse, uint8_t **buf,
                         size_t *len)
{
    const nc_neocog_arch *A = &net->arch;
    uint32_t stg[6 + 44], n_stg = 0, planes[4];
    float stf[3 + 20];
    uint32_t n_stf = 0;
    stg[n_stg++] = 4; stg[n_stg++] = A->in_size;
    stg[n_stg++] = how == SP_CHAIN ? 70 : A->g_size;
    stg[n_stg++] = A->g_win; stg[n_stg++] = A->g_pad; stg[n_stg++] = A->n_classes;
    stf[n_stf++] = A->g_radius_o; stf[n_stf++] = A->g_radius; stf[n_stf++] = A->g_cut;
    for (int l = 0; l < 4; l++) {
        const nc_neocog_stage *s = &A->stage[l];
        stg[n_stg++] = s->s_size; stg[n_stg++] = s->s_win; stg[n_stg++] = s->s_pad;
        stg[n_stg++] = s->s_grid;
        stg[n_stg++] = how == SP_KMAX && l == 1 ? 2 : s->k_max;
        stg[n_stg++] = s->c_kind; stg[n_stg++] = s->c_size; stg[n_stg++] = s->c_win;
        stg[n_stg++] = s->c_pad; stg[n_stg++] = s->c_step; stg[n_stg++] = s->c_grid;
        stf[n_stf++] = s->s_radius;
        stf[n_stf++] = how == SP_THETA && l == 2 ? 1.5f : s->theta;
        stf[n_stf++] = s->gamma; stf[n_stf++] = s->c_radius_o; stf[n_stf++] = s->c_radius;
    }
    memcpy(planes, net->n_planes, sizeof(planes));
    if (how == SP_PLANES) planes[1]++;
    if (how == SP_ZERO_PLANES) planes[2] = 0;
    nc_mf_writer *w = NULL;
    int r = nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w);
    if (r < 0) return r;
    r |= nc_mf_put_u32(w, NC_MF_TAG('N', 'S', 'T', 'G'), stg, how == SP_STG_SHORT ? n_stg - 1 : n_stg);
    r |= nc_mf_put_f32(w, NC_MF_TAG('N', 'S', 'T', 'F'), stf, n_stf);
    r |= nc_mf_put_u32(w, NC_MF_TAG('N', 'P', 'L', 'N'), planes, 4);
    uint32_t lab[64];
    memcpy(lab, net->labels, net->n_planes[3] * sizeof(uint32_t));
    if (how == SP_LABEL) lab[1] = 10;
    r |= nc_mf_put_u32(w, NC_MF_TAG('N', 'L', 'B', 'L'), lab, net->n_planes[3]);
    for (uint32_t l = 0; l < 4; l++) {
        uint32_t K = net->n_planes[l], kin = nc_neocog_k_in(net, l), nl = net->s_ix[l]->n_live;
        uint32_t ks = nc_neocog_kstride(K);
        size_t n = (size_t)K * kin * nl;
        float *wt = malloc(n * sizeof(float));
        for (uint32_t k = 0; k < K; k++)
            for (uint32_t kap = 0; kap < kin; kap++)
                for (uint32_t t = 0; t < nl; t++)
                    wt[((size_t)k * kin + kap) * nl + t] = net->a[l][((size_t)kap * nl + t) * ks + k];
        if (how == SP_NEG_WEIGHT && l == 2) wt[n / 2] = -0.5f;
        if (sparse)
            r |= put_sparse(w, l, wt, n, (l == 3 && how >= SP_FIRST_SPARSE) ||
                                         (l == 1 && how == SP_W_TYPE) ? how : SP_NONE);
        else if (how == SP_W_TYPE && l == 1)
            r |= nc_mf_put(w, NC_MF_TAG('W', '2', ' ', ' '), NC_MF_TYPE_U32, wt, n * 4);
        else
            r |= nc_mf_put_f32(w, NC_MF_TAG('W', '1' + l, ' ', ' '), wt, n);
        free(wt);
        float bb[64];
        memcpy(bb, net->b[l], K * sizeof(float));
        if (how == SP_NAN_B && l == 3) bb[0] = NAN;
        if (!(how == SP_NO_B3 && l == 2)) {
            if (how == SP_NAN_B && l == 3)  /* the writer may refuse NaN itself */
                r |= nc_mf_put(w, NC_MF_TAG('B', '4', ' ', ' '), NC_MF_TYPE_F32, bb, K * 4);
            else
                r |= nc_mf_put_f32(w, NC_MF_TAG('B', '1' + l, ' ', ' '), bb, K);
        }
    }
    nc_model_info info;
    fill_info(&info, how == SP_INFO_CLASSES ? 9 : 10);
    r |= nc_mf_put_info(w, &info);
    if (r == 0)
        r = nc_mf_finish(w, buf, len);
    nc_mf_writer_free(w);
    return r ? (r < 0 ? r : -EINVAL) : 0;
}

/* Every truncation and 2000 random flips of one to four bits fail cleanly
 * (the container's CRC; a flip that still loads must have changed nothing). */
static void check_damage(const uint8_t *buf, size_t len)
{
    int bad = 0;
    for (size_t cut = 0; cut < len; cut++) {
        nc_neocog *x = NULL;
        int r = nc_neocog_load(buf, cut, &x, NULL);
        bad += r >= 0 || x != NULL;
        nc_neocog_free(x);
    }
    CHECK_INT_EQ(bad, 0);
    uint8_t *cp = malloc(len);
    REQUIRE(cp != NULL);
    for (int it = 0; it < 2000; it++) {
        memcpy(cp, buf, len);
        int nb = 1 + (int)(nc_test_next(&rng) % 4);
        for (int i = 0; i < nb; i++) {
            size_t at = nc_test_next(&rng) % len;
            cp[at] ^= (uint8_t)(1u << (nc_test_next(&rng) % 8));
        }
        nc_neocog *x = NULL;
        int r = nc_neocog_load(cp, len, &x, NULL);
        bad += (r >= 0 && memcmp(cp, buf, len) != 0) || (r < 0 && x != NULL);
        nc_neocog_free(x);
    }
    CHECK_INT_EQ(bad, 0);
    free(cp);
}

/* Which form nc_neocog_save gave stage l: 1 sparse, 0 dense, -1 neither or
 * both (never right). */
static int stage_form(const uint8_t *buf, size_t len, uint32_t l)
{
    nc_mf_reader *rd = NULL;
    if (nc_mf_open(buf, len, &rd) < 0)
        return -1;
    int d = nc_mf_get(rd, NC_MF_TAG('W', '1' + l, ' ', ' '), NULL, NULL, NULL) == 0;
    int m = nc_mf_get(rd, NC_MF_TAG('W', '1' + l, 'M', ' '), NULL, NULL, NULL) == 0;
    int v = nc_mf_get(rd, NC_MF_TAG('W', '1' + l, 'V', ' '), NULL, NULL, NULL) == 0;
    nc_mf_close(rd);
    return d && !m && !v ? 0 : !d && m && v ? 1 : -1;
}

/* Save net, check the forms chosen (want[l]: 1 sparse, 0 dense, -1 either),
 * load it back and compare bit for bit.  Returns the file (caller frees). */
static uint8_t *round_trip(const nc_neocog *net, const int *want, size_t *ret_len)
{
    nc_model_info info, info_back;
    fill_info(&info, 10);
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_neocog *back = NULL;
    *ret_len = 0;
    CHECK_INT_EQ(nc_neocog_save(net, &info, &buf, &len), 0);
    if (!buf)
        return NULL;
    for (uint32_t l = 0; l < 4; l++) {
        int f = stage_form(buf, len, l);
        CHECK_MSG(f >= 0 && (want[l] < 0 || f == want[l]), "stage %u form %d, want %d",
                  l + 1, f, want[l]);
    }
    CHECK_INT_EQ(nc_neocog_load(buf, len, &back, &info_back), 0);
    if (!back)
        return buf;
    CHECK(same_net(net, back));
    CHECK_INT_EQ(info_back.n_classes, 10);
    CHECK(strcmp(info_back.data, info.data) == 0);
    CHECK_INT_EQ(info_back.prep.box, 40);
    nc_neocog_free(back);
    *ret_len = len;
    return buf;
}

static void test_file(void)
{
    nc_neocog *net = small_net();
    REQUIRE(net != NULL);
    nc_model_info info;
    fill_info(&info, 10);
    size_t len = 0, dlen = 0, zlen = 0;

    /* half the weights zero: stages 2-4 go sparse */
    const int want_sparse[4] = { -1, 1, 1, 1 };
    uint8_t *buf = round_trip(net, want_sparse, &len);

    /* every weight > 0: all dense */
    nc_neocog *dense = small_net();
    REQUIRE(dense != NULL);
    for (uint32_t l = 0; l < 4; l++) {
        uint32_t ks = nc_neocog_kstride(dense->n_planes[l]);
        size_t rows = (size_t)nc_neocog_k_in(dense, l) * dense->s_ix[l]->n_live;
        for (size_t i = 0; i < rows; i++)
            for (uint32_t k = 0; k < dense->n_planes[l]; k++)
                dense->a[l][i * ks + k] = 0.01f + urand();
    }
    const int want_dense[4] = { 0, 0, 0, 0 };
    uint8_t *dbuf = round_trip(dense, want_dense, &dlen);
    REQUIRE(buf != NULL && dbuf != NULL);
    CHECK(dlen > len);

    /* a -0.0 cannot be left implicit (it would come back +0.0): that stage
     * goes dense and keeps its sign bit; a stage of zeros alone is sparse
     * with an empty value section */
    nc_neocog *odd = small_net();
    REQUIRE(odd != NULL);
    {
        uint32_t ks = nc_neocog_kstride(odd->n_planes[2]);
        size_t rows = (size_t)nc_neocog_k_in(odd, 2) * odd->s_ix[2]->n_live, i = 0;
        while (odd->a[2][i * ks] != 0.0f)
            i++;
        odd->a[2][i * ks] = -0.0f;
        ks = nc_neocog_kstride(odd->n_planes[3]);
        rows = (size_t)nc_neocog_k_in(odd, 3) * odd->s_ix[3]->n_live;
        memset(odd->a[3], 0, rows * ks * sizeof(float));
    }
    const int want_odd[4] = { -1, 1, 0, 1 };
    uint8_t *zbuf = round_trip(odd, want_odd, &zlen);
    free(zbuf);
    nc_neocog_free(odd);

    check_damage(buf, len);
    check_damage(dbuf, dlen);

    /* valid containers with inconsistent sections, weights in either form */
    for (int sparse = 0; sparse < 2; sparse++)
        for (int how = 0; how < SP_N; how++) {
            if (!sparse && how >= SP_FIRST_SPARSE)
                continue;
            uint8_t *sb = NULL;
            size_t sl = 0;
            int r = write_spoiled(net, how, sparse, &sb, &sl);
            if (r < 0) {    /* the writer itself refused (e.g. NaN): fine */
                CHECK(how != SP_NONE);
                continue;
            }
            nc_neocog *x = NULL;
            r = nc_neocog_load(sb, sl, &x, NULL);
            if (how == SP_NONE) {
                CHECK_INT_EQ(r, 0);
                CHECK(x && same_net(net, x));
            } else {
                CHECK_MSG(r == -EBADMSG, "spoil %d (%s) gave %d", how,
                          sparse ? "sparse" : "dense", r);
                CHECK(x == NULL);
            }
            nc_neocog_free(x);
            free(sb);
        }

    /* the classifier mark: absent 0, one u32 in 1..256, else -EBADMSG */
    {
        const uint32_t iv_tag = NC_NEOCOG_TAG_IV;
        const uint32_t vals[][2] = { { 1, 12 }, { 1, 1 }, { 1, 256 }, { 1, 0 }, { 1, 257 },
                                     { 2, 12 }, { 0, 0 } };
        const int ok[] = { 12, 1, 256, -1, -1, -1, -1 };
        for (size_t c = 0; c < NC_ARRAY_LEN(vals) + 1; c++) {
            nc_mf_writer *w = NULL;
            uint8_t *ib = NULL;
            size_t il = 0;
            REQUIRE(nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w) == 0);
            REQUIRE(nc_neocog_write(net, w) == 0);
            REQUIRE(nc_mf_put_info(w, &info) == 0);
            uint32_t v2[2] = { 0, 0 };
            if (c < NC_ARRAY_LEN(vals)) {
                v2[0] = vals[c][1];
                v2[1] = vals[c][1];
                REQUIRE(nc_mf_put_u32(w, iv_tag, v2, vals[c][0]) == 0);
            }
            REQUIRE(nc_mf_finish(w, &ib, &il) == 0);
            nc_mf_writer_free(w);
            nc_mf_reader *rd = NULL;
            REQUIRE(nc_mf_open(ib, il, &rd) == 0);
            uint32_t t = 99;
            int r = nc_neocog_read_iv(rd, &t);
            if (c == NC_ARRAY_LEN(vals)) {
                CHECK_INT_EQ(r, 0);
                CHECK_INT_EQ(t, 0);
            } else if (ok[c] > 0) {
                CHECK_INT_EQ(r, 0);
                CHECK_INT_EQ(t, ok[c]);
            } else {
                CHECK_MSG(r == -EBADMSG, "NIVT case %zu gave %d", c, r);
            }
            nc_mf_close(rd);
            free(ib);
        }
    }

    /* an empty stage cannot be saved */
    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    nc_neocog *empty = NULL;
    REQUIRE(nc_neocog_new(&A, &empty) == 0);
    uint8_t *eb = NULL;
    size_t el = 0;
    CHECK_INT_EQ(nc_neocog_save(empty, &info, &eb, &el), -EINVAL);
    nc_neocog_free(empty);
    free(buf);
    free(dbuf);
    nc_neocog_free(dense);
    nc_neocog_free(net);
}

/* ---- real digits ---------------------------------------------------------- */

/* Load the first n fixture digits as 65x65 network inputs. */
static int load_digits(uint32_t n, float **ret_x, uint8_t **ret_lab)
{
    nc_dataset ds = { 0 };
    int r = nc_test_fixture(&ds);
    if (r < 0)
        return r;
    if (ds.count < n) n = ds.count;
    nc_prep p = { .kind = NC_PREP_NEOCOG, .size = 65, .box = 40, .threshold = -1.0f };
    float *x = malloc((size_t)n * 65 * 65 * sizeof(float));
    uint8_t *lab = malloc(n);
    uint32_t got = 0;
    for (uint32_t i = 0; x && lab && i < ds.count && got < n; i++) {
        nc_image img = { ds.cols, ds.rows, ds.cols, ds.pixels + (size_t)i * ds.rows * ds.cols };
        if (nc_prep_apply(&img, &p, x + (size_t)got * 65 * 65) < 0)
            continue;
        lab[got++] = ds.labels[i];
    }
    nc_dataset_fini(&ds);
    if (!x || !lab || got < n) {
        free(x);
        free(lab);
        return -ENOMEM;
    }
    *ret_x = x;
    *ret_lab = lab;
    return (int)got;
}

/* The CPU engine (core/backend/backend_cpu.c) on a model file of net, n digits x:
 * without NIVT its raw scores are nc_neocog_forward's UC4 maxima, with NIVT
 * the interpolating-vector scores, bit for bit; a malformed NIVT fails the
 * file. */
static void check_backend(const nc_neocog *net, const float *x, uint32_t n)
{
    nc_model_info info;
    fill_info(&info, 10);
    nc_neocog_state *st = NULL;
    nc_neocog_iv *iv = NULL;
    float *out = malloc((size_t)n * 10 * sizeof(float));
    REQUIRE(out && nc_neocog_state_new(net, &st) == 0);
    REQUIRE(nc_neocog_iv_new(net, 4, &iv) == 0);
    const uint32_t marks[] = { 0, 4, 300 };     /* none, IV top 4, invalid */
    int differs = 0;
    for (size_t c = 0; c < NC_ARRAY_LEN(marks); c++) {
        nc_mf_writer *w = NULL;
        uint8_t *buf = NULL;
        size_t len = 0;
        REQUIRE(nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w) == 0);
        REQUIRE(nc_neocog_write(net, w) == 0 && nc_mf_put_info(w, &info) == 0);
        if (marks[c])
            REQUIRE(nc_mf_put_u32(w, NC_NEOCOG_TAG_IV, &marks[c], 1) == 0);
        REQUIRE(nc_mf_finish(w, &buf, &len) == 0);
        nc_mf_writer_free(w);
        nc_backend *be = NULL;
        int r = nc_backend_open(&nc_backend_cpu, buf, len, 0, &be);
        free(buf);
        if (marks[c] > 256) {
            CHECK_MSG(r == -EBADMSG && be == NULL, "NIVT %u: open gave %d", marks[c], r);
            nc_backend_close(be);
            continue;
        }
        CHECK_INT_EQ(r, 0);
        if (r < 0)
            continue;
        void *wk = NULL;
        CHECK_INT_EQ(be->ops->worker_new(be->impl, 8, &wk), 0);
        CHECK_INT_EQ(be->ops->forward(be->impl, wk, x, n, out), 0);
        for (uint32_t d = 0; d < n; d++) {
            nc_neocog_result res, rv;
            CHECK_INT_EQ(nc_neocog_forward(net, st, x + (size_t)d * 65 * 65,
                                           NC_NEOCOG_FORM_F, &res), 0);
            CHECK_INT_EQ(nc_neocog_iv_classify(iv, net, st, &rv), 0);
            const nc_neocog_result *want = marks[c] ? &rv : &res;
            CHECK_MSG(!memcmp(out + (size_t)d * 10, want->score, 10 * sizeof(float)),
                      "digit %u NIVT %u: engine scores differ", d, marks[c]);
            CHECK_INT_EQ(nc_backend_label(NC_MF_KIND_NEOCOG, out + (size_t)d * 10, 10),
                         want->label);
            differs += memcmp(rv.score, res.score, sizeof(rv.score)) != 0;
        }
        be->ops->worker_free(wk);
        nc_backend_close(be);
    }
    CHECK(differs > 0);     /* the two answers really are different paths */
    nc_neocog_iv_free(iv);
    nc_neocog_state_free(st);
    free(out);
}

/* nc_neocog_forward_many(net, pk, st, n, x) against nc_neocog_forward of
 * ref_net (net itself, or the same net before it handed weights to packs)
 * with form F into ref, image by image: every layer's output and the result
 * bit for bit. */
static void check_many_of(const nc_neocog *net, const nc_neocog_packs *pk,
                          nc_neocog_state *const *st, const float *const *x, uint32_t n,
                          const nc_neocog *ref_net, nc_neocog_state *ref)
{
    nc_neocog_result rm[8], rf;
    REQUIRE(n <= 8);
    CHECK_INT_EQ(nc_neocog_forward_many(net, pk, st, n, x, rm), 0);
    for (uint32_t p = 0; p < n; p++) {
        CHECK_INT_EQ(nc_neocog_forward(ref_net, ref, x[p], NC_NEOCOG_FORM_F, &rf), 0);
        CHECK_MSG(!memcmp(&rf, &rm[p], sizeof rf), "forward_many image %u: result", p);
        for (int layer = 0; layer <= 2 * (int)net->arch.n_stages; layer++) {
            const float *o, *want;
            uint32_t size, planes, stride;
            CHECK_INT_EQ(nc_neocog_layer_out(ref_net, ref, layer, &want, &size, &planes, &stride), 0);
            CHECK_INT_EQ(nc_neocog_layer_out(net, st[p], layer, &o, NULL, NULL, NULL), 0);
            const size_t cells = layer == 2 * (int)net->arch.n_stages
                                     ? planes : (size_t)size * size * stride;
            CHECK_MSG(!memcmp(o, want, cells * sizeof(float)),
                      "forward_many image %u layer %d: not form F's bit for bit", p, layer);
        }
    }
}

static void check_many(const nc_neocog *net, const nc_neocog_packs *pk,
                       nc_neocog_state *const *st, const float *const *x, uint32_t n,
                       nc_neocog_state *ref)
{
    check_many_of(net, pk, st, x, n, net, ref);
}

static void test_digits(void)
{
    float *x = NULL;
    uint8_t *lab = NULL;
    const uint32_t n_seed = 300, n_check = 20, n_ref = 4;
    int n = load_digits(n_seed, &x, &lab);
    if (n < 0) {
        fprintf(stderr, "  real digits: fixture not available (%d), skipped\n", n);
        return;
    }
    REQUIRE(n == (int)n_seed);
    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    nc_neocog *net = NULL;
    nc_neocog_state *st[4] = { 0 };
    REQUIRE(nc_neocog_new(&A, &net) == 0);
    REQUIRE(nc_neocog_train_us1(net, 16, 100.0f) == 0);
    const uint32_t target[4] = { 16, 26, 78, 70 };
    CHECK_INT_EQ(nc_neocog_seed_from_digits(net, x, lab, n_seed, target, 2), 0);
    fprintf(stderr, "  seeded planes: %u %u %u %u\n", net->n_planes[0], net->n_planes[1],
            net->n_planes[2], net->n_planes[3]);
    for (int l = 0; l < 4; l++)
        CHECK(net->n_planes[l] >= 1);
    for (int f = 0; f < 4; f++)
        REQUIRE(nc_neocog_state_new(net, &st[f]) == 0);

    /* F, S, G agree layer by layer with each other on n_check digits (inputs
     * taken from F's previous layer, so each layer is checked on its own),
     * and with the reference on n_ref of them */
    size_t nnz[9] = { 0 }, cells[9] = { 0 };
    int correct = 0, agree = 0;
    for (uint32_t d = 0; d < n_check; d++) {
        nc_neocog_result res[4];
        for (int f = 0; f < 3; f++)
            CHECK_INT_EQ(nc_neocog_forward(net, st[f], x + (size_t)d * 65 * 65, f, &res[f]), 0);
        correct += res[0].label == lab[d];
        agree += res[1].label == res[0].label && res[2].label == res[0].label;
        for (int layer = 0; layer <= 8; layer++) {
            size_t nz, c;
            CHECK_INT_EQ(nc_neocog_layer_nnz(net, st[0], layer, &nz, &c), 0);
            nnz[layer] += nz;
            cells[layer] += c;
        }
        /* layer-wise: feed every form F's input of the layer */
        int forms_here = d < n_ref ? 4 : 3;
        for (int layer = 0; layer <= 7; layer++) {
            const float *ref_out;
            uint32_t size, planes, stride;
            CHECK_INT_EQ(nc_neocog_layer_out(net, st[0], layer, &ref_out, &size, &planes, &stride), 0);
            size_t n_cells = (size_t)size * size * stride;
            for (int f = 1; f < forms_here; f++) {
                /* copy F's activations into st[f], then rerun this layer */
                CHECK_INT_EQ(nc_neocog_state_copy(st[f], st[0]), 0);
                CHECK_INT_EQ(nc_neocog_run_layer(net, st[f], layer, f), 0);
                const float *o;
                CHECK_INT_EQ(nc_neocog_layer_out(net, st[f], layer, &o, NULL, NULL, NULL), 0);
                char what[64];
                snprintf(what, sizeof what, "digit %u layer %d %s vs F", d, layer, form_name[f]);
                /* the reference is the more exact: compare F against it */
                if (f == 3) compare(what, ref_out, o, n_cells, TOL);
                else compare(what, o, ref_out, n_cells, TOL);
            }
        }
        for (uint32_t c = 0; c < 10; c++) {
            CHECK_NEAR(res[1].score[c], res[0].score[c], 1e-4, 1e-4);
            CHECK_NEAR(res[2].score[c], res[0].score[c], 1e-4, 1e-4);
        }
    }
    CHECK_INT_EQ(agree, (int)n_check);
    fprintf(stderr, "  seeded net on %u digits: %d right (initialiser, not training)\n",
            n_check, correct);
    static const char *names[9] = { "UG", "US1", "UC1", "US2", "UC2", "US3", "UC3", "US4", "UC4" };
    fprintf(stderr, "  non-zero cells:");
    for (int layer = 0; layer < 8; layer++)
        fprintf(stderr, " %s %.1f%%", names[layer], 100.0 * nnz[layer] / (double)cells[layer]);
    fprintf(stderr, "\n");
    /* sparsity is what the F form lives on; trained nets give ~3-6% */
    for (int layer = 2; layer <= 6; layer += 2)
        CHECK(nnz[layer] < cells[layer] / 4);

    /* the full forward of the reference matches F end to end on one digit */
    nc_neocog_result rf, rr;
    CHECK_INT_EQ(nc_neocog_forward(net, st[0], x, NC_NEOCOG_FORM_F, &rf), 0);
    CHECK_INT_EQ(nc_neocog_forward(net, st[3], x, NC_NEOCOG_FORM_REF, &rr), 0);
    CHECK_INT_EQ(rf.label, rr.label);
    for (uint32_t c = 0; c < 10; c++)
        CHECK_NEAR(rf.score[c], rr.score[c], 1e-4, 1e-4);

    check_backend(net, x, n_check);

    /* n forwards at once: every layer of every state as nc_neocog_forward's
     * with form F, bit for bit, with every S-layer through form B (packs
     * of any size) and with none */
    enum { N_MANY = 5 };
    nc_neocog_state *sm[N_MANY] = { 0 };
    const float *xm[N_MANY];
    nc_neocog_result rm[N_MANY];
    nc_neocog_packs *pk = NULL;
    for (int p = 0; p < N_MANY; p++) {
        REQUIRE(nc_neocog_state_new(net, &sm[p]) == 0);
        xm[p] = x + (size_t)(N_MANY - 1 - p) * 65 * 65;
    }
    REQUIRE(nc_neocog_packs_new(net, 0, &pk) == 0);
    for (int l = 0; l < 4; l++)
        CHECK(pk->s[l] != NULL);
    check_many(net, pk, sm, xm, N_MANY, st[0]);
    check_many(net, NULL, sm, xm, 3, st[0]);
    CHECK_INT_EQ(nc_neocog_forward_many(net, pk, sm, 0, xm, rm), -EINVAL);
    uint8_t *small = NULL;
    size_t small_len = 0;
    nc_model_info info;
    fill_info(&info, 10);
    REQUIRE(nc_neocog_save(net, &info, &small, &small_len) == 0);

    /* growth after a state was fitted: forward re-fits */
    CHECK_INT_EQ(nc_neocog_add_plane(net, 1, 0, NULL), 0);
    CHECK_INT_EQ(nc_neocog_forward(net, st[0], x, NC_NEOCOG_FORM_F, &rf), 0);
    CHECK_INT_EQ(nc_neocog_forward(net, st[2], x, NC_NEOCOG_FORM_G, &rr), 0);
    CHECK_INT_EQ(rf.label, rr.label);
    /* ... and so does forward_many (a larger allocation); packs made
     * before the growth are refused; then the smaller net again, within
     * the larger states' allocation */
    CHECK_INT_EQ(nc_neocog_forward_many(net, pk, sm, N_MANY, xm, rm), -EINVAL);
    nc_neocog_packs_free(pk);
    for (int i = 0; i < 8; i++)     /* a wider last stage: larger states */
        CHECK_INT_EQ(nc_neocog_add_plane(net, 3, (uint32_t)i, NULL), 0);
    check_many(net, NULL, sm, xm, N_MANY, st[0]);
    nc_neocog *net_small = NULL;
    REQUIRE(nc_neocog_load(small, small_len, &net_small, NULL) == 0);
    REQUIRE(nc_neocog_packs_new(net_small, 0, &pk) == 0);
    const size_t cap = sm[0]->cap_;
    check_many(net_small, pk, sm, xm, N_MANY, st[0]);
    CHECK(sm[0]->cap_ == cap && sm[0]->bytes_ < cap);
    nc_neocog_packs_free(pk);
    /* the packs take the weights over: the same answers, the net's own
     * copy gone (its other forms, growth refused) */
    nc_neocog *net_taken = NULL;
    REQUIRE(nc_neocog_load(small, small_len, &net_taken, NULL) == 0);
    const size_t all_params = net_taken->n_params;
    REQUIRE(nc_neocog_packs_take(net_taken, (size_t)1 << 20, &pk) == 0);
    CHECK(pk->s[3] && !pk->s[0] && !net_taken->a[3] && net_taken->a[0]);
    CHECK(net_taken->n_params < all_params);
    check_many_of(net_taken, pk, sm, xm, N_MANY, net_small, st[0]);
    CHECK_INT_EQ(nc_neocog_forward(net_taken, sm[0], x, NC_NEOCOG_FORM_F, &rf), -EINVAL);
    CHECK_INT_EQ(nc_neocog_forward_many(net_taken, NULL, sm, N_MANY, xm, rm), -EINVAL);
    CHECK_INT_EQ(nc_neocog_add_plane(net_taken, 3, 0, NULL), -EINVAL);
    nc_neocog_packs_free(pk);
    nc_neocog_free(net_taken);
    nc_neocog_free(net_small);
    free(small);
    for (int p = 0; p < N_MANY; p++)
        nc_neocog_state_free(sm[p]);

    for (int f = 0; f < 4; f++)
        nc_neocog_state_free(st[f]);
    nc_neocog_free(net);
    free(x);
    free(lab);
}

int main(void)
{
    test_geometry();
    test_tables();
    test_s_forms();
    test_s_many();
    test_c_forms();
    test_list();
    test_growth();
    test_us1();
    test_file();
    test_digits();
    return nc_test_finish();
}

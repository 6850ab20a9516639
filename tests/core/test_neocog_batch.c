/* tests/core/test_neocog_batch.c — form B (core/neocog/neocog_batch.c), the CPU
 * engine's S-layer over many passes at once, against the dense reference:
 * bit for bit form F's on every pass (and within TOL of the plain loops),
 * on random layers whose plane counts take every tile width (128 where the
 * AVX-512 kernel runs, 64, the rest), and on the shipped neocognitron's
 * first member (its 2,240-plane US4) over a few fixture digits' views,
 * every layer of the pass and its result; and the interpolating-vector
 * answer (core/neocog/neocog_iv.c) against a copy of its plain scalar form,
 * byte for byte, on the shipped members' states and on states altered to
 * hold ties, silent positions and silent planes. */
#include "fixture.h"
#include "test.h"

#include "dataset.h"
#include "fileio.h"
#include "image.h"
#include "neocog.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-5
#define MAX_N 6

static nc_test_rng rng = { 0x2545f4914f6cdd1dULL };

static float urand(void) { return (float)nc_test_uniform(&rng); }

/* Random S-layers of awkward sizes: plane counts whose strides leave every
 * kind of last tile after the wide ones (129 -> 128 + 8, 201 -> 128 + 64 +
 * 8, 263 -> 2 x 128 + 8, 330 -> 2 x 128 + 64 + 8), steps 1 and 2, clipped
 * windows, input strides wider than the planes, an all-zero pass. */
static void test_wide(void)
{
    const uint32_t kouts[] = { 129, 201, 263, 330 }, kins[] = { 1, 7, 33 };
    const uint32_t sizes[] = { 1, 5, 9 }, wins[] = { 9, 6 }, ns[] = { 1, 2, 5 };
    int cases = 0;
    for (size_t ki = 0; ki < NC_ARRAY_LEN(kouts); ki++)
        for (size_t si = 0; si < NC_ARRAY_LEN(sizes); si++)
            for (size_t wi = 0; wi < NC_ARRAY_LEN(wins); wi++, cases++) {
                const uint32_t n_out = sizes[si], win = wins[wi], step = 1 + (cases % 2);
                uint32_t pad = (uint32_t)(cases % win);
                if ((n_out - 1) * step + win <= 2 * pad)
                    pad = 0;
                const uint32_t n_in = (n_out - 1) * step + win - 2 * pad;
                const uint32_t k_in = kins[(ki + si + wi) % 3], k_out = kouts[ki];
                const uint32_t n = ns[(si + wi + ki) % 3];
                nc_neocog_index *ix = NULL;
                REQUIRE(nc_neocog_index_new(n_in, n_out, win, pad, step,
                                            win == 9 ? 4.9f : 3.4f, &ix) == 0);
                const uint32_t in_stride = nc_neocog_kstride(k_in) + 8 * (cases % 2);
                const uint32_t ks = nc_neocog_kstride(k_out);
                const size_t n_i = (size_t)n_in * n_in, n_o = (size_t)n_out * n_out;
                float *in = malloc(n * n_i * in_stride * sizeof(float));
                float *a = calloc((size_t)k_in * ix->n_live * ks, sizeof(float));
                float *b = calloc(ks, sizeof(float)), *c = malloc(ix->n_live * sizeof(float));
                float *ws = malloc(nc_neocog_s_ws_floats(ix, k_out) * sizeof(float));
                float *f_out = malloc(n_o * ks * sizeof(float));
                float *r_out = malloc(n_o * ks * sizeof(float));
                float *outs = malloc(n * n_o * ks * sizeof(float));
                REQUIRE(in && a && b && c && ws && f_out && r_out && outs);
                for (uint32_t p = 0; p < n; p++) {
                    float *x = in + p * n_i * in_stride;
                    const double dens = p == 1 ? 0.0 : p % 2 ? 0.05 : 0.4;
                    for (size_t i = 0; i < n_i; i++)
                        for (uint32_t k = 0; k < in_stride; k++)
                            x[i * in_stride + k] = k < k_in && urand() < dens ? urand() : 0.0f;
                }
                /* weights as trained ones are: non-negative, mostly zero,
                 * over several decades */
                for (size_t i = 0; i < (size_t)k_in * ix->n_live; i++)
                    for (uint32_t k = 0; k < k_out; k++)
                        a[i * ks + k] = urand() < 0.8 ? 0.0f
                                                      : urand() * powf(10.0f, 3.0f * urand() - 1.0f);
                for (uint32_t k = 0; k < k_out; k++)
                    b[k] = urand() * 4.0f;
                nc_neocog_taps_vcell(ix, 0.6f, c);
                const nc_neocog_s_args s = { .ix = ix, .k_in = k_in, .in_stride = in_stride,
                                             .k_out = k_out, .a = a, .b = b, .c = c,
                                             .theta = 0.3f };
                const float *inp[MAX_N];
                float *outp[MAX_N];
                for (uint32_t p = 0; p < n; p++) {
                    inp[p] = in + p * n_i * in_stride;
                    outp[p] = outs + p * n_o * ks;
                    for (size_t i = 0; i < n_o * ks; i++)
                        outp[p][i] = NAN;           /* every cell written? */
                }
                nc_neocog_s_pack *pk = NULL;
                REQUIRE(nc_neocog_s_pack_new(&s, &pk) == 0);
                CHECK_INT_EQ(nc_neocog_s_forward_many(&s, pk, n, inp, outp), 0);
                size_t fired = 0;
                for (uint32_t p = 0; p < n; p++) {
                    CHECK_INT_EQ(nc_neocog_s_forward(&s, inp[p], f_out, ws, NC_NEOCOG_FORM_F), 0);
                    CHECK_MSG(!memcmp(outp[p], f_out, n_o * ks * sizeof(float)),
                              "form B pass %u of %u n_out=%u win=%u pad=%u step=%u k=%u->%u: "
                              "not form F's bit for bit", p, n, n_out, win, pad, step, k_in,
                              k_out);
                    for (size_t i = 0; i < n_o * ks; i++)
                        fired += outp[p][i] > 0.0f;
                    if (p == 0) {
                        CHECK_INT_EQ(nc_neocog_s_forward(&s, inp[p], r_out, ws,
                                                         NC_NEOCOG_FORM_REF), 0);
                        size_t bad = 0;
                        for (size_t i = 0; i < n_o * ks; i++)
                            bad += !(fabs((double)outp[p][i] - r_out[i]) <=
                                     TOL * (1.0 + fabs(r_out[i])));
                        CHECK_MSG(bad == 0, "form B k=%u->%u: %zu cells off the reference",
                                  k_in, k_out, bad);
                    }
                }
                CHECK_MSG(fired > 0 || n_out == 1, "k=%u->%u n_out=%u: nothing fired", k_in,
                          k_out, n_out);
                nc_neocog_s_pack_free(pk);
                free(in); free(a); free(b); free(c); free(ws); free(f_out); free(r_out);
                free(outs);
                nc_neocog_index_free(ix);
            }
    fprintf(stderr, "  form B, wide tiles: %d layers\n", cases);
}

/* The interpolating-vector answer as core computed it plane by plane before
 * its vectorised form: every class's top-T list filled in plane order, each
 * pair's segment in (x, y) order.  The specification the fast form must
 * match byte for byte (scores and label), which the GPU's twin matches too. */
static void iv_ref(const nc_neocog_iv *iv, const nc_neocog *net, const nc_neocog_state *st,
                   nc_neocog_result *ret)
{
    nc_neocog_iv_view w;
    REQUIRE(nc_neocog_iv_get_view(iv, &w) == 0);
    const uint32_t l = net->arch.n_stages - 1, K = net->n_planes[l];
    const nc_neocog_index *ix = net->s_ix[l];
    const uint32_t ks = nc_neocog_kstride(K), kin = nc_neocog_k_in(net, l);
    const uint32_t stride = nc_neocog_kstride(net->n_planes[l - 1]), T = w.top_t;
    const uint32_t C = w.n_classes;
    const double th = net->arch.stage[l].theta;
    const float *in = st->uc[l - 1], *us = st->us[l];
    float *top_s = malloc((size_t)C * T * sizeof *top_s);
    uint32_t *top_i = malloc((size_t)C * T * sizeof *top_i), *top_n = malloc(C * sizeof *top_n);
    uint32_t *rank = malloc(K * sizeof *rank);
    REQUIRE(top_s && top_i && top_n && rank);
    for (uint32_t c = 0; c < C; c++)
        for (uint32_t i = w.cls_off[c]; i < w.cls_off[c + 1]; i++)
            rank[w.members[i]] = i - w.cls_off[c];
    memset(ret, 0, sizeof *ret);
    ret->n_classes = C;
    ret->label = -1;
    for (size_t p = 0; p < (size_t)ix->n_out * ix->n_out; p++) {
        double v2 = 0.0;
        for (int32_t j = ix->gat_ptr[p]; j < ix->gat_ptr[p + 1]; j++) {
            const float *u = in + (size_t)ix->gat_in[j] * stride;
            double su = 0.0;
            for (uint32_t kap = 0; kap < kin; kap++)
                su += (double)u[kap] * u[kap];
            v2 += net->s_c[l][ix->gat_tap[j]] * su;
        }
        if (!(v2 > 0.0))
            continue;
        const double v = sqrt(v2);
        memset(top_n, 0, C * sizeof *top_n);
        for (uint32_t k = 0; k < K; k++) {
            const double u = us[p * ks + k], b = net->b[l][k];
            if (!(u > 0.0) || !(b > 0.0))
                continue;
            const double e = (u * (1.0 - th) / th + 1.0) * (1.0 + th * b * v) - 1.0;
            double sim = e / (b * v);
            sim = sim < 0.0 ? 0.0 : sim > 1.0 ? 1.0 : sim;
            const uint32_t c = net->labels[k];
            float *cs = top_s + (size_t)c * T;
            uint32_t *ci = top_i + (size_t)c * T;
            uint32_t n = top_n[c], i = n < T ? n : T - 1;
            if (n == T && !(sim > cs[T - 1]))
                continue;
            while (i > 0 && cs[i - 1] < sim) {
                cs[i] = cs[i - 1];
                ci[i] = ci[i - 1];
                i--;
            }
            cs[i] = (float)sim;
            ci[i] = rank[k];
            if (n < T)
                top_n[c]++;
        }
        for (uint32_t c = 0; c < C; c++) {
            const uint32_t n = top_n[c], nc = w.cls_off[c + 1] - w.cls_off[c];
            const float *G = w.gram + w.gram_off[c], *cs = top_s + (size_t)c * T;
            const uint32_t *ci = top_i + (size_t)c * T;
            double best = n ? cs[0] : 0.0;
            for (uint32_t x = 0; x < n; x++)
                for (uint32_t y = x + 1; y < n; y++) {
                    const double al = cs[x], be = cs[y];
                    const double g = G[(size_t)ci[x] * nc + ci[y]];
                    if (!(g < 1.0 - 1e-6))
                        continue;
                    const double den = 1.0 - g * g;
                    const double pa = (al - g * be) / den, pb = (be - g * al) / den;
                    if (pa > 0.0 && pb > 0.0) {
                        double sim = sqrt(pa * al + pb * be);
                        sim = sim > 1.0 ? 1.0 : sim;
                        best = sim > best ? sim : best;
                    }
                }
            if (best > ret->score[c])
                ret->score[c] = (float)best;
        }
    }
    float bv = 0.0f;
    for (uint32_t c = 0; c < C; c++)
        if (ret->score[c] > bv) {
            bv = ret->score[c];
            ret->label = (int32_t)c;
        }
    free(top_s);
    free(top_i);
    free(top_n);
    free(rank);
}

/* One member's IV answers on its passes st[0..n) at several list lengths
 * (1, 2, the shipped 12, 31, 256: longer than most classes' plane counts),
 * against iv_ref byte for byte; then on each pass altered: US4's responses
 * rounded to a few levels; one position in three silent; every third plane
 * silent and every fifth b 0; every firing plane at one response and every b at 1 (all of a
 * position's similarities tie, so which planes a list keeps rests on the
 * planes' order); responses 10^4 times
 * larger (similarities clipped at 1).  Adds the comparisons made to *done. */
static void iv_member(const nc_neocog *net, nc_neocog_state *const *st, uint32_t n, int *done)
{
    const uint32_t l = net->arch.n_stages - 1, K = net->n_planes[l];
    const uint32_t ks = nc_neocog_kstride(K);
    const size_t n_o = (size_t)net->s_ix[l]->n_out * net->s_ix[l]->n_out;
    const uint32_t tops[] = { 1, 2, 12, 31, 256 };
    for (size_t ti = 0; ti < NC_ARRAY_LEN(tops); ti++) {
        nc_neocog_iv *iv = NULL;
        REQUIRE(nc_neocog_iv_new(net, tops[ti], &iv) == 0);
        for (uint32_t p = 0; p < n; p++)
            for (int alter = 0; alter < 6; alter++) {
                float *us = st[p]->us[l], *b = net->b[l];
                float *keep = malloc(n_o * ks * sizeof *keep), *keep_b = malloc(K * sizeof *keep_b);
                REQUIRE(keep && keep_b);
                memcpy(keep, us, n_o * ks * sizeof *keep);
                memcpy(keep_b, b, K * sizeof *keep_b);
                for (size_t o = 0; o < n_o; o++)
                    for (uint32_t k = 0; k < K; k++) {
                        float *u = us + o * ks + k;
                        if (alter == 1)
                            *u = floorf(*u * 4.0f) / 4.0f;
                        else if (alter == 2 && o % 3 == 1)
                            *u = 0.0f;
                        else if (alter == 3 && k % 3 == 2)
                            *u = 0.0f;
                        else if (alter == 4)
                            *u = *u > 0.0f ? 0.5f : 0.0f;
                        else if (alter == 5)
                            *u *= 1e4f;
                    }
                for (uint32_t k = 0; k < K; k++)
                    b[k] = alter == 4 ? 1.0f : alter == 3 && k % 5 == 1 ? 0.0f : b[k];
                nc_neocog_result got, want;
                memset(&got, 0xa5, sizeof got);
                CHECK_INT_EQ(nc_neocog_iv_classify(iv, net, st[p], &got), 0);
                iv_ref(iv, net, st[p], &want);
                CHECK_MSG(!memcmp(&got, &want, sizeof got),
                          "IV K=%u T=%u pass %u alteration %d: not the plain form's answer "
                          "(label %d vs %d)", K, tops[ti], p, alter, got.label, want.label);
                CHECK_MSG(alter == 2 || want.label >= 0, "IV K=%u pass %u: no answer", K, p);
                memcpy(us, keep, n_o * ks * sizeof *keep);
                memcpy(b, keep_b, K * sizeof *keep_b);
                free(keep);
                free(keep_b);
                (*done)++;
            }
        nc_neocog_iv_free(iv);
    }
}

/* The shipped file's first member on its views of two fixture digits, at
 * once through its packs, against form F pass by pass: every layer and the
 * result bit for bit (the engine's answers rest on it). */
static void test_shipped(void)
{
    char path[1024];
    nc_test_model_path("neocognitron.ncm", path, sizeof path);
    uint8_t *buf = NULL;
    size_t len = 0;
    if (nc_file_read_model(path, (size_t)1 << 31, &buf, &len) < 0) {
        fprintf(stderr, "%s not readable: shipped-model part skipped\n", path);
        return;
    }
    nc_neocog_committee *com = NULL;
    nc_model_info info;
    CHECK_INT_EQ(nc_neocog_committee_load(buf, len, &com, &info), 0);
    free(buf);
    nc_dataset ds = { 0 };
    REQUIRE(nc_test_fixture(&ds) == 0);
    if (!com)
        return;
    const nc_neocog *net = com->member[0];
    const uint32_t V = nc_prep_views(&info.prep), L = nc_prep_view_len(&info.prep);
    float *x = malloc((size_t)MAX_N * L * sizeof(float));
    const float *xp[MAX_N];
    nc_neocog_state *st[MAX_N] = { 0 }, *ref = NULL;
    nc_neocog_packs *pk = NULL;
    REQUIRE(x);
    uint32_t n = 0;
    for (uint32_t d = 0; d < 2; d++)
        for (uint32_t v = 0; v < V && n < MAX_N; v++) {
            if (!(com->view_mask[0] >> v & 1u))
                continue;
            const nc_prep pv = nc_prep_view(&info.prep, v);
            nc_image img = { ds.cols, ds.rows, ds.cols,
                             ds.pixels + (size_t)(7 + d) * ds.rows * ds.cols };
            CHECK_INT_EQ(nc_prep_apply(&img, &pv, x + (size_t)n * L), 0);
            xp[n] = x + (size_t)n * L;
            REQUIRE(nc_neocog_state_new(net, &st[n]) == 0);
            n++;
        }
    REQUIRE(n >= 2 && nc_neocog_state_new(net, &ref) == 0);
    CHECK_INT_EQ(nc_neocog_packs_new(net, NC_NEOCOG_PACK_MIN_BYTES, &pk), 0);
    CHECK(pk && pk->s[net->arch.n_stages - 1]);     /* US4 really runs form B */
    nc_neocog_result rm[MAX_N], rf;
    CHECK_INT_EQ(nc_neocog_forward_many(net, pk, st, n, xp, rm), 0);
    for (uint32_t p = 0; p < n; p++) {
        CHECK_INT_EQ(nc_neocog_forward(net, ref, xp[p], NC_NEOCOG_FORM_F, &rf), 0);
        CHECK_MSG(!memcmp(&rf, &rm[p], sizeof rf), "shipped pass %u: result", p);
        CHECK_MSG(rf.label >= 0, "shipped pass %u: nothing fired", p);
        for (int layer = 0; layer <= 2 * (int)net->arch.n_stages; layer++) {
            const float *o, *want;
            uint32_t size, planes, stride;
            CHECK_INT_EQ(nc_neocog_layer_out(net, ref, layer, &want, &size, &planes, &stride), 0);
            CHECK_INT_EQ(nc_neocog_layer_out(net, st[p], layer, &o, NULL, NULL, NULL), 0);
            const size_t cells = layer == 2 * (int)net->arch.n_stages
                                     ? planes : (size_t)size * size * stride;
            CHECK_MSG(!memcmp(o, want, cells * sizeof(float)),
                      "shipped pass %u layer %d: not form F's bit for bit", p, layer);
        }
    }
    int iv_done = 0;
    iv_member(net, st, n, &iv_done);
    size_t nnz = 0, cells = 0;
    CHECK_INT_EQ(nc_neocog_layer_nnz(net, st[0], 2 * (int)net->arch.n_stages - 1, &nnz, &cells), 0);
    CHECK(nnz > 0);
    fprintf(stderr, "  shipped member 0: %u passes, US4 %u planes, %zu of %zu cells fired\n", n,
            net->n_planes[net->arch.n_stages - 1], nnz, cells);
    /* the last member too: 2,405 planes, not a multiple of 8 */
    const nc_neocog *last = com->member[com->n_members - 1];
    nc_neocog_state *sl[MAX_N] = { 0 };
    for (uint32_t p = 0; p < n; p++) {
        REQUIRE(nc_neocog_state_new(last, &sl[p]) == 0);
        CHECK_INT_EQ(nc_neocog_forward(last, sl[p], xp[p], NC_NEOCOG_FORM_F, &rf), 0);
    }
    iv_member(last, sl, n, &iv_done);
    fprintf(stderr, "  interpolating-vector answers: %d compared (K %u and %u)\n", iv_done,
            net->n_planes[net->arch.n_stages - 1], last->n_planes[last->arch.n_stages - 1]);
    for (uint32_t p = 0; p < n; p++) {
        nc_neocog_state_free(st[p]);
        nc_neocog_state_free(sl[p]);
    }
    nc_neocog_state_free(ref);
    nc_neocog_packs_free(pk);
    nc_neocog_committee_free(com);
    nc_dataset_fini(&ds);
    free(x);
}

int main(void)
{
    test_wide();
    test_shipped();
    return nc_test_finish();
}

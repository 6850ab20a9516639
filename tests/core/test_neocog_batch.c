/* tests/core/test_neocog_batch.c — form B (core/neocog/neocog_batch.c), the CPU
 * engine's S-layer over many passes at once, against the dense reference:
 * bit for bit form F's on every pass (and within TOL of the plain loops),
 * on random layers whose plane counts take every tile width (128 where the
 * AVX-512 kernel runs, 64, the rest), and on the shipped neocognitron's
 * first member (its 2,240-plane US4) over a few fixture digits' views,
 * every layer of the pass and its result. */
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
    size_t nnz = 0, cells = 0;
    CHECK_INT_EQ(nc_neocog_layer_nnz(net, st[0], 2 * (int)net->arch.n_stages - 1, &nnz, &cells), 0);
    CHECK(nnz > 0);
    fprintf(stderr, "  shipped member 0: %u passes, US4 %u planes, %zu of %zu cells fired\n", n,
            net->n_planes[net->arch.n_stages - 1], nnz, cells);
    for (uint32_t p = 0; p < n; p++)
        nc_neocog_state_free(st[p]);
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

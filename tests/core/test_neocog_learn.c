/* tests/core/test_neocog_learn.c — the learning maths of core/neocog/neocog_learn.c:
 * plane creation stops on a repeated pattern, reinforcement moves a plane
 * toward its input, supervised US4 learns and then recognises its digits,
 * add-if-silent and the interpolating-vector classifier behave, and all of
 * it is deterministic.
 *
 * Synthetic digits (strokes drawn into the 65x65 field) keep it small and
 * independent of data files. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "neocog.h"
#include "test.h"

#define N 65

/* A thick antialiased segment from (x0,y0) to (x1,y1). */
static void stroke(float *img, double x0, double y0, double x1, double y1, double w)
{
    for (int y = 0; y < N; y++)
        for (int x = 0; x < N; x++) {
            double dx = x1 - x0, dy = y1 - y0, L2 = dx * dx + dy * dy;
            double t = L2 > 0 ? ((x - x0) * dx + (y - y0) * dy) / L2 : 0;
            t = t < 0 ? 0 : t > 1 ? 1 : t;
            double ex = x0 + t * dx - x, ey = y0 + t * dy - y;
            double d = sqrt(ex * ex + ey * ey);
            double v = w + 0.5 - d;
            v = v < 0 ? 0 : v > 1 ? 1 : v;
            if (v > img[y * N + x])
                img[y * N + x] = (float)v;
        }
}

/* Four distinct glyphs: a vertical bar, a box, a cross and a "7". */
static void glyph(int g, float *img)
{
    memset(img, 0, N * N * sizeof(float));
    switch (g) {
    case 0: stroke(img, 32, 12, 32, 52, 2.5); break;
    case 1:
        stroke(img, 18, 14, 46, 14, 2.5); stroke(img, 46, 14, 46, 50, 2.5);
        stroke(img, 46, 50, 18, 50, 2.5); stroke(img, 18, 50, 18, 14, 2.5);
        break;
    case 2: stroke(img, 16, 14, 48, 50, 2.5); stroke(img, 48, 14, 16, 50, 2.5); break;
    default: stroke(img, 16, 14, 48, 14, 2.5); stroke(img, 48, 14, 28, 52, 2.5); break;
    }
}

static nc_neocog *new_net(void)
{
    nc_neocog_arch a;
    nc_neocog *net = NULL;
    nc_neocog_arch_default(&a);
    a.n_classes = 4;
    if (nc_neocog_new(&a, &net) < 0)
        return NULL;
    if (nc_neocog_train_us1(net, 16, 100.0f) < 0) {
        nc_neocog_free(net);
        return NULL;
    }
    return net;
}

/* Train US2, US3 on the glyphs and US4 on them with their labels. */
static int train_all(nc_neocog *net, nc_neocog_learner *lr, const nc_neocog_learn_opts *o,
                     uint32_t passes)
{
    float *img = malloc(N * N * sizeof(float));
    nc_neocog_learn_step st;
    int r = img ? 0 : -ENOMEM;
    for (uint32_t l = 1; l < 3 && r == 0; l++)
        for (int g = 0; g < 4 && r == 0; g++) {
            glyph(g, img);
            r = nc_neocog_learn_unsup(net, lr, l, img, o, &st);
        }
    for (uint32_t p = 0; p < passes && r == 0; p++)
        for (int g = 0; g < 4 && r == 0; g++) {
            glyph(g, img);
            r = nc_neocog_learn_sup(net, lr, img, (uint32_t)g, o, &st);
        }
    free(img);
    return r;
}

static void test_creation_stops(void)
{
    nc_neocog *net = new_net();
    nc_neocog_learner *lr = NULL;
    REQUIRE(net);
    REQUIRE(nc_neocog_learner_new(net, &lr) == 0);
    nc_neocog_learn_opts o;
    nc_neocog_learn_opts_default(&o);
    float img[N * N];
    glyph(1, img);
    nc_neocog_learn_step st;
    CHECK(nc_neocog_learn_unsup(net, lr, 1, img, &o, &st) == 0);
    CHECK(st.created > 0);
    CHECK_INT_EQ(st.created, net->n_planes[1]);
    uint32_t k1 = net->n_planes[1];
    /* the same pattern again: the planes it opened explain it now */
    uint32_t later = 0;
    for (int i = 0; i < 3; i++) {
        CHECK(nc_neocog_learn_unsup(net, lr, 1, img, &o, &st) == 0);
        later += st.created;
        CHECK(st.reinforced > 0);
    }
    CHECK_MSG(later == 0, "%u planes opened on a repeated pattern (first time %u)", later, k1);
    /* bad arguments */
    CHECK(nc_neocog_learn_unsup(net, lr, 0, img, &o, &st) == -EINVAL);
    CHECK(nc_neocog_learn_unsup(net, lr, 3, img, &o, &st) == -EINVAL);
    nc_neocog_learn_opts bad = o;
    bad.theta_l[1] = 1.5f;
    CHECK(nc_neocog_learn_unsup(net, lr, 1, img, &bad, &st) == -EINVAL);
    nc_neocog_learner_free(lr);
    nc_neocog_free(net);
}

/* Cosine in the V-cell metric between plane k's weights and the input
 * window at (y, x): the quantity reinforcement must raise. */
static double plane_cos(const nc_neocog *net, uint32_t l, uint32_t k, uint32_t y,
                        uint32_t x, const float *in, uint32_t stride)
{
    const nc_neocog_index *ix = net->s_ix[l];
    const uint32_t ks = nc_neocog_kstride(net->n_planes[l]), kin = nc_neocog_k_in(net, l);
    const uint32_t o = y * ix->n_out + x;
    double e = 0, v2 = 0, b2 = 0;
    for (int32_t j = ix->gat_ptr[o]; j < ix->gat_ptr[o + 1]; j++)
        for (uint32_t kap = 0; kap < kin; kap++) {
            double u = in[(size_t)ix->gat_in[j] * stride + kap];
            e += net->a[l][((size_t)kap * ix->n_live + ix->gat_tap[j]) * ks + k] * u;
            v2 += net->s_c[l][ix->gat_tap[j]] * u * u;
        }
    for (size_t i = 0; i < (size_t)kin * ix->n_live; i++) {
        double a = net->a[l][i * ks + k];
        b2 += a * a / net->s_c[l][i % ix->n_live];
    }
    return e / (sqrt(b2) * sqrt(v2));
}

static void test_reinforce_moves(void)
{
    nc_neocog *net = new_net();
    nc_neocog_state *st = NULL;
    REQUIRE(net);
    float img[N * N];
    glyph(2, img);
    REQUIRE(nc_neocog_state_new(net, &st) == 0);
    /* upper stages are empty: run only the layers below US2 */
    memcpy(st->u0, img, sizeof(img));
    for (int layer = 0; layer <= 2; layer++)
        REQUIRE(nc_neocog_run_layer(net, st, layer, NC_NEOCOG_FORM_F) == 0);
    const uint32_t stride = nc_neocog_kstride(net->n_planes[0]);
    float *in = malloc((size_t)37 * 37 * stride * sizeof(float));
    REQUIRE(in);
    memcpy(in, st->uc[0], (size_t)37 * 37 * stride * sizeof(float));
    uint32_t k;
    REQUIRE(nc_neocog_add_plane(net, 1, 0, &k) == 0);
    /* a plane trained on one spot, then reinforced on another */
    REQUIRE(nc_neocog_reinforce(net, 1, k, 10, 10, 0.5f, in) == 0);
    double before = plane_cos(net, 1, k, 19, 19, in, stride);
    REQUIRE(nc_neocog_reinforce(net, 1, k, 19, 19, 0.5f, in) == 0);
    double after = plane_cos(net, 1, k, 19, 19, in, stride);
    CHECK_MSG(after > before + 0.05, "cosine %.4f -> %.4f", before, after);
    for (int i = 0; i < 20; i++)
        REQUIRE(nc_neocog_reinforce(net, 1, k, 19, 19, 0.5f, in) == 0);
    double much = plane_cos(net, 1, k, 19, 19, in, stride);
    CHECK_MSG(much > after && much > 0.9, "cosine %.4f after 21 reinforcements", much);
    free(in);
    nc_neocog_state_free(st);
    nc_neocog_free(net);
}

static void test_supervised_recognises(void)
{
    nc_neocog *net = new_net();
    nc_neocog_learner *lr = NULL;
    nc_neocog_state *st = NULL;
    REQUIRE(net);
    REQUIRE(nc_neocog_learner_new(net, &lr) == 0);
    nc_neocog_learn_opts o;
    nc_neocog_learn_opts_default(&o);
    REQUIRE(train_all(net, lr, &o, 2) == 0);
    CHECK(net->n_planes[1] > 0 && net->n_planes[2] > 0 && net->n_planes[3] >= 4);
    REQUIRE(nc_neocog_state_new(net, &st) == 0);
    float img[N * N];
    nc_neocog_result res;
    for (int g = 0; g < 4; g++) {
        glyph(g, img);
        CHECK(nc_neocog_forward(net, st, img, NC_NEOCOG_FORM_F, &res) == 0);
        CHECK_MSG(res.label == g, "glyph %d answered %d", g, res.label);
    }
    /* a second pass over the same digits is answered right: no new planes */
    uint32_t k4 = net->n_planes[3];
    nc_neocog_learn_step s;
    for (int g = 0; g < 4; g++) {
        glyph(g, img);
        CHECK(nc_neocog_learn_sup(net, lr, img, (uint32_t)g, &o, &s) == 0);
        CHECK_INT_EQ(s.answer, g);
        CHECK_INT_EQ(s.created, 0);
    }
    CHECK_INT_EQ(net->n_planes[3], k4);
    CHECK(nc_neocog_learn_sup(net, lr, img, 99, &o, &s) == -EINVAL);

    /* interpolating vectors agree on these clean glyphs */
    nc_neocog_iv *iv = NULL;
    REQUIRE(nc_neocog_iv_new(net, 4, &iv) == 0);
    for (int g = 0; g < 4; g++) {
        glyph(g, img);
        CHECK(nc_neocog_forward(net, st, img, NC_NEOCOG_FORM_F, &res) == 0);
        nc_neocog_result rv;
        CHECK(nc_neocog_iv_classify(iv, net, st, &rv) == 0);
        CHECK_MSG(rv.label == g, "IV: glyph %d answered %d", g, rv.label);
        CHECK(rv.score[g] > 0.5f && rv.score[g] <= 1.0f);
    }
    nc_neocog_iv_free(iv);
    nc_neocog_state_free(st);
    nc_neocog_learner_free(lr);
    nc_neocog_free(net);
}

static void test_add_if_silent(void)
{
    nc_neocog *net = new_net();
    nc_neocog_learner *lr = NULL;
    REQUIRE(net);
    REQUIRE(nc_neocog_learner_new(net, &lr) == 0);
    nc_neocog_learn_opts o;
    nc_neocog_learn_opts_default(&o);
    o.add_if_silent = 1;
    float img[N * N];
    glyph(3, img);
    nc_neocog_learn_step st;
    CHECK(nc_neocog_learn_unsup(net, lr, 1, img, &o, &st) == 0);
    CHECK(st.created > 0 && st.reinforced == 0);
    CHECK(nc_neocog_learn_unsup(net, lr, 1, img, &o, &st) == 0);
    CHECK_MSG(st.created == 0, "add-if-silent opened %u on a known pattern", st.created);
    nc_neocog_learner_free(lr);
    nc_neocog_free(net);
}

static void test_deterministic(void)
{
    nc_neocog *n1 = new_net(), *n2 = new_net();
    nc_neocog_learner *l1 = NULL, *l2 = NULL;
    REQUIRE(n1 && n2);
    REQUIRE(nc_neocog_learner_new(n1, &l1) == 0 && nc_neocog_learner_new(n2, &l2) == 0);
    nc_neocog_learn_opts o;
    nc_neocog_learn_opts_default(&o);
    REQUIRE(train_all(n1, l1, &o, 1) == 0);
    REQUIRE(train_all(n2, l2, &o, 1) == 0);
    CHECK(!memcmp(n1->n_planes, n2->n_planes, sizeof(n1->n_planes)));
    CHECK(n1->n_params == n2->n_params &&
          !memcmp(n1->params, n2->params, n1->n_params * sizeof(float)));
    CHECK(!memcmp(n1->labels, n2->labels, n1->n_planes[3] * sizeof(uint32_t)));
    nc_neocog_learner_free(l1);
    nc_neocog_learner_free(l2);
    nc_neocog_free(n1);
    nc_neocog_free(n2);
}

int main(void)
{
    test_creation_stops();
    test_reinforce_moves();
    test_supervised_recognises();
    test_add_if_silent();
    test_deterministic();
    return nc_test_finish();
}

/* tests/core/test_neocog_cascade.c — a neocognitron committee's cascade
 * (core/neocog/neocog.h, "the cascade"): the CPU engine answers a digit its
 * first member is sure of from that member alone and any other from the
 * whole committee, exactly as without a cascade; the sections round-trip;
 * malformed ones are refused with a phrase; a file without them answers as
 * before. */
#include "test.h"

#include "backend.h"
#include "modelfile.h"
#include "neocog.h"
#include "neocog_random.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static nc_test_rng rng = { 0x9e3779b97f4a7c15ULL };

static float urand(void) { return (float)nc_test_uniform(&rng); }

enum { M = 3, K = 10, SIDE = 65, N = 9, V = 4 };

typedef struct fixture {
    nc_neocog *net[M];
    nc_model_info col[M], info;
    uint32_t top_t[M];
} fixture;

static int fixture_make(fixture *f)
{
    memset(f, 0, sizeof *f);
    static const uint32_t k[M][3] = { { 4, 5, 6 }, { 3, 6, 7 }, { 5, 4, 5 } };
    for (int i = 0; i < M; i++) {
        if (!(f->net[i] = nc_test_random_net(&rng, k[i][0], k[i][1], k[i][2])))
            return 0;
        nc_test_neocog_info(&f->col[i], "train member");
        f->col[i].seed = (uint64_t)i + 1;
    }
    f->col[2].prep.deskew = 1;          /* member 2 answers on the sheared views */
    nc_test_neocog_info(&f->info, "bundle");
    /* views as the shipped file has them: two of each shear */
    static const uint32_t box[V] = { 40, 36, 44, 40 }, shear[V] = { 0, 0, 1, 1 };
    f->info.prep.n_views = V;
    memcpy(f->info.prep.view_box, box, sizeof box);
    memcpy(f->info.prep.view_deskew, shear, sizeof shear);
    return 1;
}

static void fixture_free(fixture *f)
{
    for (int i = 0; i < M; i++)
        nc_neocog_free(f->net[i]);
}

/* A stroke image: a few thick random lines in the 65 x 65 field. */
static void strokes(float *img)
{
    memset(img, 0, (size_t)SIDE * SIDE * sizeof *img);
    const int lines = 1 + (int)(3 * urand());
    for (int s = 0; s < lines; s++) {
        const double x0 = 12 + 40 * urand(), y0 = 12 + 40 * urand();
        const double x1 = 12 + 40 * urand(), y1 = 12 + 40 * urand();
        for (int t = 0; t <= 64; t++) {
            const long x = (long)(x0 + (x1 - x0) * t / 64), y = (long)(y0 + (y1 - y0) * t / 64);
            for (long dy = -1; dy <= 1; dy++)
                for (long dx = -1; dx <= 1; dx++)
                    img[(y + dy) * SIDE + x + dx] = 1.0f;
        }
    }
}

/* Raw scores of file image buf on n digits, through a worker of 2 digits
 * (so a batch runs in several pieces). */
static int run_image(const uint8_t *buf, size_t len, const float *in, uint32_t n, float *out)
{
    nc_backend *be = NULL;
    int err = nc_backend_open(&nc_backend_cpu, buf, len, 0, &be);
    void *w = NULL;
    if (!err)
        err = be->ops->worker_new(be->impl, 2, &w);
    if (!err)
        err = be->ops->forward(be->impl, w, in, n, out);
    if (w)
        be->ops->worker_free(w);
    nc_backend_close(be);
    return err;
}

static int with_cascade(const uint8_t *buf, size_t len, uint32_t first, double t, double beta,
                        uint8_t **ret, size_t *ret_len)
{
    const nc_neocog_cascade c = { 1, first, t, beta };
    return nc_neocog_cascade_rewrite(buf, len, &c, ret, ret_len);
}

static int same_row(const float *a, const float *b)
{
    return memcmp(a, b, K * sizeof *a) == 0;
}

/* The first member f's answer alone: its scores (a one-network file of it)
 * on its views of each digit, added in view order and divided. */
static void member_alone(const fixture *fx, uint32_t f, const float *in, float *out)
{
    uint8_t *b1 = NULL;
    size_t l1 = 0;
    REQUIRE(nc_neocog_committee_save((const nc_neocog *const *)&fx->net[f], &fx->col[f],
                                     &fx->top_t[f], 1, &fx->col[f], 0, &b1, &l1) == 0);
    float *each = malloc((size_t)N * V * K * sizeof *each);
    REQUIRE(each);
    REQUIRE(run_image(b1, l1, in, N * V, each) == 0);
    for (uint32_t i = 0; i < N; i++) {
        float *o = out + (size_t)i * K;
        memset(o, 0, K * sizeof *o);
        uint32_t views = 0;
        for (uint32_t v = 0; v < V; v++)
            if (fx->info.prep.view_deskew[v] == fx->col[f].prep.deskew) {
                nc_backend_member_add(o, each + ((size_t)i * V + v) * K, K);
                views++;
            }
        nc_backend_member_mean(o, views, K);
    }
    free(each);
    free(b1);
}

/* Member f first: threshold 0 answers every digit from f alone; a
 * threshold between the digits' confidences answers the sure ones from f
 * alone and the others exactly as the committee without a cascade. */
static void test_answers(uint32_t f)
{
    fixture fx;
    REQUIRE(fixture_make(&fx));
    float *in = malloc((size_t)N * V * SIDE * SIDE * sizeof *in);
    REQUIRE(in);
    for (uint32_t i = 0; i < N * V; i++)
        strokes(in + (size_t)i * SIDE * SIDE);
    uint8_t *base = NULL, *b0 = NULL, *bt = NULL;
    size_t lbase = 0, l0 = 0, lt = 0;
    REQUIRE(nc_neocog_committee_save((const nc_neocog *const *)fx.net, fx.col, fx.top_t, M,
                                     &fx.info, 0, &base, &lbase) == 0);
    float full[N * K], alone[N * K], ref[N * K], out[N * K];
    REQUIRE(run_image(base, lbase, in, N, full) == 0);
    member_alone(&fx, f, in, ref);

    REQUIRE(with_cascade(base, lbase, f, 0.0, 2.0, &b0, &l0) == 0);
    CHECK_INT_EQ(run_image(b0, l0, in, N, alone), 0);
    int differ = 0;
    for (uint32_t i = 0; i < N; i++) {
        CHECK_MSG(same_row(alone + i * K, ref + i * K), "digit %u: not member %u alone", i, f);
        differ |= !same_row(alone + i * K, full + i * K);
    }
    CHECK(differ);              /* else the member alone proves nothing */

    /* a threshold that splits the digits: the median fired confidence */
    double conf[N], sorted[N];
    uint32_t fired = 0;
    for (uint32_t i = 0; i < N; i++) {
        conf[i] = nc_neocog_cascade_confidence(2.0, alone + i * K, K);
        CHECK(conf[i] >= 0.0 && conf[i] <= 1.0);
        if (conf[i] > 0.0)
            sorted[fired++] = conf[i];
    }
    REQUIRE(fired >= 3);
    for (uint32_t a = 0; a < fired; a++)        /* insertion sort, ascending */
        for (uint32_t b = a; b > 0 && sorted[b] < sorted[b - 1]; b--) {
            const double t = sorted[b];
            sorted[b] = sorted[b - 1];
            sorted[b - 1] = t;
        }
    const double t = sorted[fired / 2];
    REQUIRE(t > sorted[0]);
    REQUIRE(with_cascade(base, lbase, f, t, 2.0, &bt, &lt) == 0);
    CHECK_INT_EQ(run_image(bt, lt, in, N, out), 0);
    uint32_t sure = 0, unsure = 0;
    for (uint32_t i = 0; i < N; i++) {
        if (conf[i] >= t) {
            sure++;
            CHECK_MSG(same_row(out + i * K, alone + i * K), "sure digit %u: not member alone", i);
        } else {
            unsure++;
            CHECK_MSG(same_row(out + i * K, full + i * K), "unsure digit %u: not the committee",
                      i);
        }
    }
    CHECK(sure > 0 && unsure > 0);
    free(in);
    free(base);
    free(b0);
    free(bt);
    fixture_free(&fx);
}

/* Section by section copy of buf (less any cascade), then raw sections. */
static int forge(const uint8_t *buf, size_t len, const uint32_t *mem, size_t n_mem,
                 const double *rule, size_t n_rule, uint8_t **ret, size_t *ret_len)
{
    nc_mf_reader *r = NULL;
    nc_mf_writer *w = NULL;
    int err = nc_mf_open(buf, len, &r);
    if (!err)
        err = nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w);
    for (uint32_t i = 0; !err && i < nc_mf_section_count(r); i++) {
        uint32_t tag, type;
        const void *data;
        size_t n;
        if (!(err = nc_mf_section_at(r, i, &tag, &type, &data, &n)) &&
            !nc_neocog_cascade_is_tag(tag))
            err = nc_mf_put(w, tag, type, data, n);
    }
    if (!err && mem)
        err = nc_mf_put_u32(w, NC_NEOCOG_TAG_CASM, mem, n_mem);
    if (!err && rule)
        err = nc_mf_put_f64(w, NC_NEOCOG_TAG_CAST, rule, n_rule);
    if (!err)
        err = nc_mf_finish(w, ret, ret_len);
    nc_mf_writer_free(w);
    nc_mf_close(r);
    return err;
}

/* The phrase nc_neocog_cascade_read gives for file image buf. */
static const char *why_of(const uint8_t *buf, size_t len, uint32_t members)
{
    nc_mf_reader *r = NULL;
    const char *why = NULL;
    nc_neocog_cascade c;
    if (nc_mf_open(buf, len, &r) == 0)
        nc_neocog_cascade_read(r, members, &c, &why);
    nc_mf_close(r);
    return why;
}

static void test_file(void)
{
    fixture fx;
    REQUIRE(fixture_make(&fx));
    uint8_t *base = NULL, *b = NULL, *back = NULL;
    size_t lbase = 0, lb = 0, lback = 0;
    REQUIRE(nc_neocog_committee_save((const nc_neocog *const *)fx.net, fx.col, fx.top_t, M,
                                     &fx.info, 0, &base, &lbase) == 0);
    /* without the sections: no cascade, and taking none away changes no byte */
    nc_neocog_committee *c = NULL;
    REQUIRE(nc_neocog_committee_load(base, lbase, &c, NULL) == 0);
    CHECK(!c->cascade.on);
    nc_neocog_committee_free(c);
    const nc_neocog_cascade off = { 0 };
    REQUIRE(nc_neocog_cascade_rewrite(base, lbase, &off, &back, &lback) == 0);
    CHECK(lback == lbase && memcmp(back, base, lbase) == 0);
    free(back);

    /* round trip; replaced, not added to; taken away again: the original */
    REQUIRE(with_cascade(base, lbase, 2, 0.8125, 3.5, &b, &lb) == 0);
    REQUIRE(nc_neocog_committee_load(b, lb, &c, NULL) == 0);
    CHECK(c->cascade.on && c->cascade.first == 2 && c->cascade.threshold == 0.8125 &&
          c->cascade.beta == 3.5);
    nc_neocog_committee_free(c);
    REQUIRE(with_cascade(b, lb, 1, 0.5, 1.25, &back, &lback) == 0);
    CHECK(lback == lb);
    REQUIRE(nc_neocog_committee_load(back, lback, &c, NULL) == 0);
    CHECK(c->cascade.on && c->cascade.first == 1 && c->cascade.threshold == 0.5 &&
          c->cascade.beta == 1.25);
    nc_neocog_committee_free(c);
    free(back);
    REQUIRE(nc_neocog_cascade_rewrite(b, lb, &off, &back, &lback) == 0);
    CHECK(lback == lbase && memcmp(back, base, lbase) == 0);
    free(back);
    free(b);

    /* the writer refuses what the reader would */
    CHECK_INT_EQ(with_cascade(base, lbase, 0, 1.5, 1.0, &b, &lb), -EINVAL);
    CHECK_INT_EQ(with_cascade(base, lbase, 0, 0.5, 0.0, &b, &lb), -EINVAL);
    CHECK_INT_EQ(with_cascade(base, lbase, 0, NAN, 1.0, &b, &lb), -EINVAL);

    /* malformed sections: refused by the loader and the engine, with a phrase */
    static const uint32_t one[1] = { 1 }, past[1] = { M }, two[2] = { 0, 1 };
    static const double ok_rule[2] = { 0.9, 2.0 }, high[2] = { 1.5, 2.0 }, flat[2] = { 0.9, 0.0 },
                        big[2] = { 0.9, 1e6 }, three[3] = { 0.9, 2.0, 1.0 };
    const struct { const uint32_t *mem; size_t nm; const double *rule; size_t nr; } bad[] = {
        { one, 1, NULL, 0 },  { NULL, 0, ok_rule, 2 }, { past, 1, ok_rule, 2 },
        { two, 2, ok_rule, 2 }, { one, 1, high, 2 },   { one, 1, flat, 2 },
        { one, 1, big, 2 },   { one, 1, three, 3 },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(bad); i++) {
        REQUIRE(forge(base, lbase, bad[i].mem, bad[i].nm, bad[i].rule, bad[i].nr, &b, &lb) == 0);
        c = NULL;
        CHECK_MSG(nc_neocog_committee_load(b, lb, &c, NULL) == -EBADMSG, "case %zu loads", i);
        nc_neocog_committee_free(c);
        nc_backend *be = NULL;
        CHECK_INT_EQ(nc_backend_open(&nc_backend_cpu, b, lb, 0, &be), -EBADMSG);
        nc_backend_close(be);
        const char *why = why_of(b, lb, M);
        CHECK_MSG(why && strstr(why, "cascade"), "case %zu: no phrase", i);
        free(b);
    }
    /* a well-formed pair through forge loads: the cases above fail on their flaw */
    REQUIRE(forge(base, lbase, one, 1, ok_rule, 2, &b, &lb) == 0);
    CHECK_INT_EQ(nc_neocog_committee_load(b, lb, &c, NULL), 0);
    nc_neocog_committee_free(c);
    free(b);

    /* a one-network file cannot carry a cascade */
    uint8_t *b1 = NULL;
    size_t l1 = 0;
    REQUIRE(nc_neocog_committee_save((const nc_neocog *const *)&fx.net[0], &fx.col[0],
                                     &fx.top_t[0], 1, &fx.col[0], 0, &b1, &l1) == 0);
    REQUIRE(forge(b1, l1, (const uint32_t[]){ 0 }, 1, ok_rule, 2, &b, &lb) == 0);
    c = NULL;
    CHECK_INT_EQ(nc_neocog_committee_load(b, lb, &c, NULL), -EBADMSG);
    nc_neocog_committee_free(c);
    CHECK(why_of(b, lb, 1) != NULL);
    free(b);
    free(b1);
    free(base);
    fixture_free(&fx);
}

static void test_confidence(void)
{
    const float none[K] = { 0 };
    CHECK(nc_neocog_cascade_confidence(2.0, none, K) == 0.0);
    float one[K] = { 0 };
    one[3] = 0.4f;
    CHECK(nc_neocog_cascade_confidence(2.0, one, K) == 1.0);
    float two[K] = { 0 };
    two[1] = 0.5f;
    two[7] = 0.25f;
    /* p ∝ s^beta: 1 / (1 + 0.5^2) */
    CHECK_NEAR(nc_neocog_cascade_confidence(2.0, two, K), 0.8, 1e-12, 1e-12);
    const nc_neocog_cascade c = { 1, 0, 0.8, 2.0 }, c2 = { 1, 0, 0.81, 2.0 }, off = { 0 };
    CHECK(nc_neocog_cascade_decides(&c, two, K));
    CHECK(!nc_neocog_cascade_decides(&c2, two, K));
    CHECK(!nc_neocog_cascade_decides(&off, one, K));
    CHECK(!nc_neocog_cascade_decides(&c, none, K));
}

int main(void)
{
    test_confidence();
    test_file();
    test_answers(0);
    test_answers(2);
    return nc_test_finish();
}

/* tests/core/test_neocog_cascade.c — a neocognitron committee's cascade
 * (core/neocog/neocog.h, "the cascade"): the CPU engine answers a digit its
 * first member is sure of from that member alone and any other from the
 * whole committee, exactly as without a cascade; with the one-view stage, a
 * digit that view is sure of from that view alone and the others as the
 * cascade without it; the sections round-trip; malformed ones are refused
 * with a phrase; a file without them answers as before. */
#include "test.h"
#include "view_fill.h"

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
 * (so a batch runs in several pieces).  filled NULL: in as it is; else
 * through nc_backend_forward_fill, every view NaN until asked for
 * (view_fill.h), and filled[n] says which views of each digit were. */
static int run_image_fill(const uint8_t *buf, size_t len, const float *in, uint32_t n,
                          float *out, uint32_t *filled)
{
    nc_backend *be = NULL;
    int err = nc_backend_open(&nc_backend_cpu, buf, len, 0, &be);
    void *w = NULL;
    if (!err)
        err = be->ops->worker_new(be->impl, 2, &w);
    if (!err)
        err = filled ? nc_test_forward_filled(be, w, in, n, out, filled)
                     : be->ops->forward(be->impl, w, in, n, out);
    if (w)
        be->ops->worker_free(w);
    nc_backend_close(be);
    return err;
}

static int run_image(const uint8_t *buf, size_t len, const float *in, uint32_t n, float *out)
{
    return run_image_fill(buf, len, in, n, out, NULL);
}

static int with_cascade(const uint8_t *buf, size_t len, uint32_t first, double t, double beta,
                        uint8_t **ret, size_t *ret_len)
{
    const nc_neocog_cascade c = { .on = 1, .first = first, .threshold = t, .beta = beta };
    return nc_neocog_cascade_rewrite(buf, len, &c, ret, ret_len);
}

static int with_view_stage(const uint8_t *buf, size_t len, uint32_t first, double t,
                           uint32_t view, double tv, uint8_t **ret, size_t *ret_len)
{
    const nc_neocog_cascade c = { .on = 1, .first = first, .threshold = t, .beta = 2.0,
                                  .view_on = 1, .view = view, .view_threshold = tv,
                                  .view_beta = 3.0 };
    return nc_neocog_cascade_rewrite(buf, len, &c, ret, ret_len);
}

static int same_row(const float *a, const float *b)
{
    return memcmp(a, b, K * sizeof *a) == 0;
}

/* The first member f's answer alone: its scores (a one-network file of it)
 * on its views of each digit, added in view order and divided; and, when
 * each_out is not NULL, its raw scores on every view, [N][V][K]. */
static void member_alone(const fixture *fx, uint32_t f, const float *in, float *out,
                         float *each_out)
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
    if (each_out)
        memcpy(each_out, each, (size_t)N * V * K * sizeof *each);
    free(each);
    free(b1);
}

/* The median of the non-zero values of x[n] (at least 3 of them, and the
 * median above the smallest): a threshold that splits the digits. */
static void median_fired(const double *x, uint32_t n, double *ret)
{
    double sorted[N];
    uint32_t fired = 0;
    for (uint32_t i = 0; i < n; i++)
        if (x[i] > 0.0)
            sorted[fired++] = x[i];
    REQUIRE(fired >= 3);
    for (uint32_t a = 0; a < fired; a++)        /* insertion sort, ascending */
        for (uint32_t b = a; b > 0 && sorted[b] < sorted[b - 1]; b--) {
            const double t = sorted[b];
            sorted[b] = sorted[b - 1];
            sorted[b - 1] = t;
        }
    REQUIRE(sorted[fired / 2] > sorted[0]);
    *ret = sorted[fired / 2];
}

/* Random stroke inputs *ret_in[N][V] (caller frees; NULL on failure), the
 * committee saved as *base (caller frees), and its answers without a
 * cascade in full[N][K]. */
static void committee_run(const fixture *fx, float **ret_in, uint8_t **base, size_t *lbase,
                          float *full)
{
    *ret_in = NULL;
    float *in = malloc((size_t)N * V * SIDE * SIDE * sizeof *in);
    REQUIRE(in);
    for (uint32_t i = 0; i < N * V; i++)
        strokes(in + (size_t)i * SIDE * SIDE);
    REQUIRE(nc_neocog_committee_save((const nc_neocog *const *)fx->net, fx->col, fx->top_t, M,
                                     &fx->info, 0, base, lbase) == 0);
    REQUIRE(run_image(*base, *lbase, in, N, full) == 0);
    *ret_in = in;
}

/* Member f first: threshold 0 answers every digit from f alone; a
 * threshold between the digits' confidences answers the sure ones from f
 * alone and the others exactly as the committee without a cascade. */
static void test_answers(uint32_t f)
{
    fixture fx;
    REQUIRE(fixture_make(&fx));
    uint8_t *base = NULL, *b0 = NULL, *bt = NULL;
    size_t lbase = 0, l0 = 0, lt = 0;
    float full[N * K], alone[N * K], ref[N * K], out[N * K];
    float *in = NULL;
    committee_run(&fx, &in, &base, &lbase, full);
    REQUIRE(in);
    member_alone(&fx, f, in, ref, NULL);

    REQUIRE(with_cascade(base, lbase, f, 0.0, 2.0, &b0, &l0) == 0);
    CHECK_INT_EQ(run_image(b0, l0, in, N, alone), 0);
    int differ = 0;
    for (uint32_t i = 0; i < N; i++) {
        CHECK_MSG(same_row(alone + i * K, ref + i * K), "digit %u: not member %u alone", i, f);
        differ |= !same_row(alone + i * K, full + i * K);
    }
    CHECK(differ);              /* else the member alone proves nothing */

    /* a threshold that splits the digits: the median fired confidence */
    double conf[N], t = 0.0;
    for (uint32_t i = 0; i < N; i++) {
        conf[i] = nc_neocog_cascade_confidence(2.0, alone + i * K, K);
        CHECK(conf[i] >= 0.0 && conf[i] <= 1.0);
    }
    median_fired(conf, N, &t);
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

/* Member f first with its view `view` as the one-view stage: view
 * threshold 0 answers every digit from that view's raw scores alone; view
 * and member thresholds that split the digits answer the view's sure ones
 * from the view, the member's sure ones of the rest from the member alone
 * (its mean over all its views, the stage's scores among them), and the
 * others exactly as the committee without a cascade. */
static void test_view_answers(uint32_t f, uint32_t view)
{
    fixture fx;
    REQUIRE(fixture_make(&fx));
    uint8_t *base = NULL, *b0 = NULL, *bt = NULL;
    size_t lbase = 0, l0 = 0, lt = 0;
    float full[N * K], alone[N * K], out[N * K];
    float *each = malloc((size_t)N * V * K * sizeof *each);
    REQUIRE(each);
    float *in = NULL;
    committee_run(&fx, &in, &base, &lbase, full);
    REQUIRE(in);
    member_alone(&fx, f, in, alone, each);

    REQUIRE(with_view_stage(base, lbase, f, 0.0, view, 0.0, &b0, &l0) == 0);
    CHECK_INT_EQ(run_image(b0, l0, in, N, out), 0);
    int differ = 0;
    for (uint32_t i = 0; i < N; i++) {
        const float *sv = each + ((size_t)i * V + view) * K;
        CHECK_MSG(same_row(out + i * K, sv), "digit %u: not view %u alone", i, view);
        differ |= !same_row(sv, alone + i * K);
    }
    CHECK(differ);              /* else the view alone proves nothing */

    double conf_v[N], conf_m[N];
    for (uint32_t i = 0; i < N; i++) {
        conf_v[i] = nc_neocog_cascade_confidence(3.0, each + ((size_t)i * V + view) * K, K);
        conf_m[i] = nc_neocog_cascade_confidence(2.0, alone + i * K, K);
    }
    double tv = 0.0, t = 0.0;
    median_fired(conf_v, N, &tv);
    median_fired(conf_m, N, &t);
    REQUIRE(with_view_stage(base, lbase, f, t, view, tv, &bt, &lt) == 0);
    CHECK_INT_EQ(run_image(bt, lt, in, N, out), 0);
    uint32_t by_view = 0, by_member = 0, by_all = 0;
    for (uint32_t i = 0; i < N; i++) {
        if (conf_v[i] >= tv) {
            by_view++;
            CHECK_MSG(same_row(out + i * K, each + ((size_t)i * V + view) * K),
                      "digit %u: not the view alone", i);
        } else if (conf_m[i] >= t) {
            by_member++;
            CHECK_MSG(same_row(out + i * K, alone + i * K), "digit %u: not the member alone",
                      i);
        } else {
            by_all++;
            CHECK_MSG(same_row(out + i * K, full + i * K), "digit %u: not the committee", i);
        }
    }
    CHECK(by_view > 0 && by_member + by_all > 0);

    /* views prepared on demand: the same answers, bit for bit, from only
     * the views each digit's stages read (fixture_make: members 0 and 1 on
     * views 0-1, member 2 on views 2-3) */
    float lazy[N * K];
    uint32_t filled[N];
    CHECK_INT_EQ(run_image_fill(bt, lt, in, N, lazy, filled), 0);
    CHECK_MSG(memcmp(lazy, out, sizeof lazy) == 0, "views filled on demand answer otherwise");
    const uint32_t mf = f == 2 ? 0xcu : 0x3u;
    for (uint32_t i = 0; i < N; i++) {
        const uint32_t want = conf_v[i] >= tv ? 1u << view : conf_m[i] >= t ? mf : 0xfu;
        CHECK_MSG(filled[i] == want, "digit %u: views 0x%x filled, want 0x%x", i, filled[i],
                  want);
    }
    /* a file without a cascade fills every view first */
    CHECK_INT_EQ(run_image_fill(base, lbase, in, N, lazy, filled), 0);
    CHECK_MSG(memcmp(lazy, full, sizeof lazy) == 0, "the committee, filled, answers otherwise");
    for (uint32_t i = 0; i < N; i++)
        CHECK_MSG(filled[i] == 0xfu, "digit %u: views 0x%x filled", i, filled[i]);
    free(in);
    free(each);
    free(base);
    free(b0);
    free(bt);
    fixture_free(&fx);
}

/* Section by section copy of buf (less any cascade), then raw sections:
 * NCSM, NCST, NCVV, NCVT where given. */
static int forge_view(const uint8_t *buf, size_t len, const uint32_t *mem, size_t n_mem,
                      const double *rule, size_t n_rule, const uint32_t *view, size_t n_view,
                      const double *vrule, size_t n_vrule, uint8_t **ret, size_t *ret_len)
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
    if (!err && view)
        err = nc_mf_put_u32(w, NC_NEOCOG_TAG_CAVV, view, n_view);
    if (!err && vrule)
        err = nc_mf_put_f64(w, NC_NEOCOG_TAG_CAVT, vrule, n_vrule);
    if (!err)
        err = nc_mf_finish(w, ret, ret_len);
    nc_mf_writer_free(w);
    nc_mf_close(r);
    return err;
}

static int forge(const uint8_t *buf, size_t len, const uint32_t *mem, size_t n_mem,
                 const double *rule, size_t n_rule, uint8_t **ret, size_t *ret_len)
{
    return forge_view(buf, len, mem, n_mem, rule, n_rule, NULL, 0, NULL, 0, ret, ret_len);
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
        CHECK_MSG(nc_neocog_committee_why(b, lb) == why, "case %zu: the loader's phrase", i);
        free(b);
    }
    /* a well-formed pair through forge loads: the cases above fail on their flaw */
    REQUIRE(forge(base, lbase, one, 1, ok_rule, 2, &b, &lb) == 0);
    CHECK_INT_EQ(nc_neocog_committee_load(b, lb, &c, NULL), 0);
    nc_neocog_committee_free(c);
    free(b);

    /* the one-view stage: round trip, and taken away with the rest */
    REQUIRE(with_view_stage(base, lbase, 2, 0.75, 3, 0.875, &b, &lb) == 0);
    REQUIRE(nc_neocog_committee_load(b, lb, &c, NULL) == 0);
    CHECK(c->cascade.on && c->cascade.first == 2 && c->cascade.threshold == 0.75 &&
          c->cascade.view_on && c->cascade.view == 3 && c->cascade.view_threshold == 0.875 &&
          c->cascade.view_beta == 3.0);
    nc_neocog_committee_free(c);
    REQUIRE(nc_neocog_cascade_rewrite(b, lb, &off, &back, &lback) == 0);
    CHECK(lback == lbase && memcmp(back, base, lbase) == 0);
    free(back);
    free(b);
    /* the writer refuses what the reader would */
    CHECK_INT_EQ(with_view_stage(base, lbase, 0, 0.5, NC_PREP_MAX_VIEWS, 0.5, &b, &lb), -EINVAL);
    CHECK_INT_EQ(with_view_stage(base, lbase, 0, 0.5, 0, 1.5, &b, &lb), -EINVAL);
    CHECK_INT_EQ(with_view_stage(base, lbase, 0, 0.5, 0, NAN, &b, &lb), -EINVAL);
    /* malformed view sections, refused with a phrase */
    static const uint32_t view0[1] = { 0 }, view_past[1] = { NC_PREP_MAX_VIEWS },
                          views2[2] = { 0, 1 };
    static const double vflat[2] = { 0.9, 0.0 }, vhigh[2] = { 1.5, 2.0 };
    const struct {
        const uint32_t *mem; const double *rule; const uint32_t *view; size_t nv;
        const double *vrule; size_t nvr;
    } vbad[] = {
        { one, ok_rule, view0, 1, NULL, 0 },     { one, ok_rule, NULL, 0, ok_rule, 2 },
        { NULL, NULL, view0, 1, ok_rule, 2 },    { one, ok_rule, view_past, 1, ok_rule, 2 },
        { one, ok_rule, views2, 2, ok_rule, 2 }, { one, ok_rule, view0, 1, vflat, 2 },
        { one, ok_rule, view0, 1, vhigh, 2 },    { one, ok_rule, view0, 1, three, 3 },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(vbad); i++) {
        REQUIRE(forge_view(base, lbase, vbad[i].mem, vbad[i].mem ? 1 : 0, vbad[i].rule,
                           vbad[i].rule ? 2 : 0, vbad[i].view, vbad[i].nv, vbad[i].vrule,
                           vbad[i].nvr, &b, &lb) == 0);
        c = NULL;
        CHECK_MSG(nc_neocog_committee_load(b, lb, &c, NULL) == -EBADMSG, "view case %zu loads",
                  i);
        nc_neocog_committee_free(c);
        const char *why = why_of(b, lb, M);
        CHECK_MSG(why && strstr(why, "cascade"), "view case %zu: no phrase", i);
        free(b);
    }
    /* well formed, but a view member 1 does not answer on (views 2 and 3 are
     * member 2's sheared ones): the loader refuses it, view_why says why */
    REQUIRE(forge_view(base, lbase, one, 1, ok_rule, 2, (const uint32_t[]){ 2 }, 1, ok_rule, 2,
                       &b, &lb) == 0);
    CHECK(why_of(b, lb, M) == NULL);
    c = NULL;
    CHECK_INT_EQ(nc_neocog_committee_load(b, lb, &c, NULL), -EBADMSG);
    nc_neocog_committee_free(c);
    const char *lwhy = nc_neocog_committee_why(b, lb);
    CHECK_MSG(lwhy && strstr(lwhy, "not one of the first member's views"), "loader: %s",
              lwhy ? lwhy : "(none)");
    free(b);
    REQUIRE(forge_view(base, lbase, one, 1, ok_rule, 2, (const uint32_t[]){ 1 }, 1, ok_rule, 2,
                       &b, &lb) == 0);
    CHECK_INT_EQ(nc_neocog_committee_load(b, lb, &c, NULL), 0);
    nc_neocog_committee_free(c);
    CHECK(nc_neocog_committee_why(b, lb) == NULL);
    free(b);
    const nc_neocog_cascade vc = { .on = 1, .first = 1, .threshold = 0.5, .beta = 1.0,
                                   .view_on = 1, .view = 2, .view_threshold = 0.5,
                                   .view_beta = 1.0 };
    const uint32_t masks[M] = { 0x3u, 0x3u, 0xcu }, lone[M] = { 0x1u, 0x4u, 0xcu };
    const char *vwhy = nc_neocog_cascade_view_why(&vc, masks);
    CHECK(vwhy && strstr(vwhy, "not one of"));
    nc_neocog_cascade vc2 = vc;
    vc2.view = 2;
    vwhy = nc_neocog_cascade_view_why(&vc2, lone);         /* member 1's only view */
    CHECK(vwhy && strstr(vwhy, "one view"));
    vc2.view = 0;
    CHECK(nc_neocog_cascade_view_why(&vc2, masks) == NULL);
    vc2.view_on = 0;
    CHECK(nc_neocog_cascade_view_why(&vc2, lone) == NULL);

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
    const nc_neocog_cascade c = { .on = 1, .threshold = 0.8, .beta = 2.0 },
                            c2 = { .on = 1, .threshold = 0.81, .beta = 2.0 }, off = { 0 };
    CHECK(nc_neocog_cascade_decides(&c, two, K));
    CHECK(!nc_neocog_cascade_decides(&c2, two, K));
    CHECK(!nc_neocog_cascade_decides(&off, one, K));
    CHECK(!nc_neocog_cascade_decides(&c, none, K));
    /* the view stage decides by its own rule, and only when on */
    nc_neocog_cascade v = { .on = 1, .threshold = 0.99, .beta = 2.0, .view_on = 1,
                            .view_threshold = 0.8, .view_beta = 2.0 };
    CHECK(nc_neocog_cascade_view_decides(&v, two, K));
    CHECK(!nc_neocog_cascade_decides(&v, two, K));
    v.view_beta = 1.0;                  /* 1 / (1 + 0.5) < 0.8 */
    CHECK(!nc_neocog_cascade_view_decides(&v, two, K));
    v.view_beta = 2.0;
    v.view_on = 0;
    CHECK(!nc_neocog_cascade_view_decides(&v, two, K));
    CHECK(!nc_neocog_cascade_view_decides(&c, two, K));
}

int main(void)
{
    test_confidence();
    test_file();
    test_answers(0);
    test_answers(2);
    test_view_answers(0, 1);
    test_view_answers(2, 2);
    return nc_test_finish();
}

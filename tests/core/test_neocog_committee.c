/* tests/core/test_neocog_committee.c — neocognitron committee files and the
 * half-precision weight form (core/neocog.h): round trips, what the loader
 * refuses, and the CPU engine's answer for a committee, which must be the
 * mean of its members' answers as one-network files. */
#include "test.h"

#include "backend.h"
#include "modelfile.h"
#include "neocog.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static nc_test_rng rng = { 0x2545f4914f6cdd1dULL };

static float urand(void) { return (float)nc_test_uniform(&rng); }

/* A small net with random weights above US1 (edges), and recognition
 * thresholds low enough that random planes answer random strokes. */
static nc_neocog *random_net(uint32_t k2, uint32_t k3, uint32_t k4)
{
    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    for (uint32_t l = 1; l < A.n_stages; l++)
        A.stage[l].theta = 0.05f;
    nc_neocog *net = NULL;
    if (nc_neocog_new(&A, &net) < 0)
        return NULL;
    const uint32_t want[4] = { 16, k2, k3, k4 };
    if (nc_neocog_train_us1(net, 16, 100.0f) < 0)
        goto fail;
    for (uint32_t l = 1; l < 4; l++)
        for (uint32_t k = 0; k < want[l]; k++)
            if (nc_neocog_add_plane(net, l, k % 10, NULL) < 0)
                goto fail;
    for (uint32_t l = 1; l < 4; l++) {
        const uint32_t ks = nc_neocog_kstride(net->n_planes[l]);
        const size_t rows = (size_t)nc_neocog_k_in(net, l) * net->s_ix[l]->n_live;
        for (size_t i = 0; i < rows; i++)
            for (uint32_t k = 0; k < net->n_planes[l]; k++)
                net->a[l][i * ks + k] = urand() < 0.6f ? 0.0f : urand();
        for (uint32_t k = 0; k < net->n_planes[l]; k++)
            net->b[l][k] = 0.5f + urand();
    }
    return net;
fail:
    nc_neocog_free(net);
    return NULL;
}

static void fill_info(nc_model_info *info, const char *command)
{
    memset(info, 0, sizeof *info);
    info->n_classes = 10;
    for (uint32_t c = 0; c < 10; c++)
        snprintf(info->labels[c], sizeof info->labels[c], "%u", c);
    info->prep = (nc_prep){ .kind = NC_PREP_NEOCOG, .size = 65, .box = 40, .threshold = 0.5f };
    snprintf(info->data, sizeof info->data, "test_neocog_committee");
    snprintf(info->command, sizeof info->command, "%s", command);
    info->test_error = -1.0;
}

/* ---- half precision ---------------------------------------------------------- */

static void test_half(void)
{
    nc_neocog *net = random_net(4, 5, 6);
    REQUIRE(net);
    /* awkward values in US4: the largest binary16, one just past it would
     * keep the stage f32 (below), the smallest subnormal, one below it (it
     * must stay non-zero), and a tie (1 + 2^-11 rounds to even: 1) */
    const uint32_t ks4 = nc_neocog_kstride(net->n_planes[3]);
    net->a[3][0 * ks4 + 0] = 65504.0f;
    net->a[3][1 * ks4 + 0] = ldexpf(1.0f, -24);
    net->a[3][2 * ks4 + 0] = ldexpf(1.0f, -30);
    net->a[3][3 * ks4 + 0] = 1.0f + ldexpf(1.0f, -11);
    nc_model_info info;
    fill_info(&info, "half");
    uint8_t *b32 = NULL, *b16 = NULL;
    size_t l32 = 0, l16 = 0;
    REQUIRE(nc_neocog_save(net, &info, &b32, &l32) == 0);
    REQUIRE(nc_neocog_save_flags(net, &info, NC_NEOCOG_WRITE_HALF, &b16, &l16) == 0);
    CHECK_MSG(l16 < l32 * 3 / 4, "half file %zu bytes, f32 %zu", l16, l32);
    CHECK_INT_EQ(nc_neocog_save_flags(net, &info, 2, &b16, &l16), -EINVAL);
    nc_neocog *back = NULL;
    REQUIRE(nc_neocog_load(b16, l16, &back, NULL) == 0);
    /* every weight: zero stays +0.0, others within half a binary16 ulp
     * (relative 2^-11) for normals, or 2^-24 absolute below 2^-14 (half a
     * subnormal ulp, or the clamp up to the smallest subnormal) */
    size_t worse = 0, zeros_moved = 0, changed = 0;
    for (uint32_t l = 0; l < 4; l++) {
        const size_t rows = (size_t)nc_neocog_k_in(net, l) * net->s_ix[l]->n_live;
        const uint32_t ks = nc_neocog_kstride(net->n_planes[l]);
        for (size_t i = 0; i < rows; i++)
            for (uint32_t k = 0; k < net->n_planes[l]; k++) {
                const float a = net->a[l][i * ks + k], b = back->a[l][i * ks + k];
                if (a == 0.0f) {
                    zeros_moved += b != 0.0f;
                    continue;
                }
                const double tol = a < ldexpf(1.0f, -14) ? ldexp(1.0, -24)
                                                         : a * ldexp(1.0, -11);
                worse += !(b > 0.0f) || fabs((double)b - a) > tol * 1.0000001;
                changed += a != b;
            }
        for (uint32_t k = 0; k < net->n_planes[l]; k++)
            CHECK(back->b[l][k] == net->b[l][k]);   /* b stays f32 */
    }
    CHECK_INT_EQ(zeros_moved, 0);
    CHECK_INT_EQ(worse, 0);
    CHECK(changed > 0);         /* else nothing was rounded */
    CHECK(back->a[3][0] == 65504.0f);
    CHECK(back->a[3][1 * ks4] == ldexpf(1.0f, -24));
    CHECK(back->a[3][2 * ks4] == ldexpf(1.0f, -24));
    CHECK(back->a[3][3 * ks4] == 1.0f);
    /* writing the rounded net again changes nothing: the form is exact */
    uint8_t *again = NULL;
    size_t la = 0;
    REQUIRE(nc_neocog_save_flags(back, &info, NC_NEOCOG_WRITE_HALF, &again, &la) == 0);
    CHECK(la == l16 && memcmp(again, b16, la) == 0);
    free(again);
    nc_neocog_free(back);

    /* a value too large for binary16 keeps its stage f32, exactly */
    net->a[3][0] = 70000.0f;
    free(b16);
    REQUIRE(nc_neocog_save_flags(net, &info, NC_NEOCOG_WRITE_HALF, &b16, &l16) == 0);
    REQUIRE(nc_neocog_load(b16, l16, &back, NULL) == 0);
    CHECK(back->a[3][0] == 70000.0f && back->a[3][1 * ks4] == ldexpf(1.0f, -24) &&
          back->a[3][2 * ks4] == ldexpf(1.0f, -30));
    nc_mf_reader *r = NULL;
    REQUIRE(nc_mf_open(b16, l16, &r) == 0);
    CHECK(nc_mf_get(r, NC_MF_TAG('W', '4', 'V', ' '), NULL, NULL, NULL) == 0);
    CHECK(nc_mf_get(r, NC_MF_TAG('W', '4', 'H', ' '), NULL, NULL, NULL) == -ENOENT);
    CHECK(nc_mf_get(r, NC_MF_TAG('W', '3', 'H', ' '), NULL, NULL, NULL) == 0);

    /* spoiled half sections: copy the file, altering W3H */
    const void *h3;
    size_t h3_len;
    uint32_t type;
    REQUIRE(nc_mf_get(r, NC_MF_TAG('W', '3', 'H', ' '), &type, &h3, &h3_len) == 0);
    for (int how = 0; how < 5; how++) {
        nc_mf_writer *w = NULL;
        REQUIRE(nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w) == 0);
        uint8_t *hb = malloc(h3_len + 2);
        REQUIRE(hb);
        memcpy(hb, h3, h3_len);
        size_t hl = h3_len;
        if (how == 0) { hb[0] = 0; hb[1] = 0; }             /* an explicit zero */
        if (how == 1) { hb[1] |= 0x80; }                   /* negative */
        if (how == 2) { hb[0] = 0; hb[1] = 0x7c; }         /* Inf */
        if (how == 3) { hl -= 1; }                         /* odd length */
        for (uint32_t s = 0; s < nc_mf_section_count(r); s++) {
            uint32_t tag, ty;
            const void *d;
            size_t n;
            REQUIRE(nc_mf_section_at(r, s, &tag, &ty, &d, &n) == 0);
            if (tag == NC_MF_TAG('W', '3', 'H', ' ')) {
                REQUIRE(nc_mf_put(w, tag, ty, hb, hl) == 0);
                const float one = 1.0f;
                if (how == 4)   /* both precisions of the values */
                    REQUIRE(nc_mf_put_f32(w, NC_MF_TAG('W', '3', 'V', ' '), &one, 1) == 0);
            } else {
                REQUIRE(nc_mf_put(w, tag, ty, d, n) == 0);
            }
        }
        uint8_t *sb = NULL;
        size_t sl = 0;
        REQUIRE(nc_mf_finish(w, &sb, &sl) == 0);
        nc_neocog *bad = (nc_neocog *)0x1;
        CHECK_MSG(nc_neocog_load(sb, sl, &bad, NULL) == -EBADMSG, "spoil %d accepted", how);
        CHECK(bad == (nc_neocog *)0x1);
        free(sb);
        free(hb);
        nc_mf_writer_free(w);
    }
    nc_mf_close(r);
    nc_neocog_free(back);
    nc_neocog_free(net);
    free(b32);
    free(b16);
}

/* ---- committees ---------------------------------------------------------------- */

typedef struct fixture {
    nc_neocog *net[3];
    nc_model_info col[3], info;
    uint32_t top_t[3];
} fixture;

static int fixture_make(fixture *f)
{
    memset(f, 0, sizeof *f);
    static const uint32_t k[3][3] = { { 4, 5, 6 }, { 3, 6, 7 }, { 5, 4, 5 } };
    for (int i = 0; i < 3; i++) {
        if (!(f->net[i] = random_net(k[i][0], k[i][1], k[i][2])))
            return 0;
        char cmd[32];
        snprintf(cmd, sizeof cmd, "train member %d", i + 1);
        fill_info(&f->col[i], cmd);
        f->col[i].seed = (uint64_t)i + 1;
        f->col[i].test_error = 0.01 * (i + 1);
    }
    f->top_t[0] = 0;            /* max response: random planes make poor */
    f->top_t[1] = 0;            /* interpolating vectors, and the mark's */
    f->top_t[2] = 3;            /* own path is core's, tested elsewhere */
    fill_info(&f->info, "bundle");
    return 1;
}

static void fixture_free(fixture *f)
{
    for (int i = 0; i < 3; i++)
        nc_neocog_free(f->net[i]);
}

static int same_weights(const nc_neocog *a, const nc_neocog *b)
{
    return a->n_params == b->n_params && !memcmp(a->n_planes, b->n_planes, sizeof a->n_planes) &&
           !memcmp(a->params, b->params, a->n_params * sizeof(float));
}

static void test_round_trip(void)
{
    fixture f;
    REQUIRE(fixture_make(&f));
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(nc_neocog_committee_save((const nc_neocog *const *)f.net, f.col, f.top_t, 3,
                                     &f.info, 0, &buf, &len) == 0);
    nc_neocog_committee *c = NULL;
    nc_model_info back;
    REQUIRE(nc_neocog_committee_load(buf, len, &c, &back) == 0);
    CHECK_INT_EQ(c->n_members, 3);
    for (uint32_t i = 0; i < 3 && i < c->n_members; i++) {
        CHECK(same_weights(c->member[i], f.net[i]));
        CHECK_INT_EQ(c->iv_top_t[i], f.top_t[i]);
        CHECK(c->member_info[i].seed == f.col[i].seed);
        CHECK(strcmp(c->member_info[i].command, f.col[i].command) == 0);
    }
    CHECK(strcmp(back.command, "bundle") == 0);
    nc_neocog_committee_free(c);
    /* one member taken out, with its own record and mark */
    nc_neocog *m2 = NULL;
    nc_model_info i2;
    uint32_t t2 = 99;
    CHECK_INT_EQ(nc_neocog_load_member(buf, len, 2, &m2, &i2, &t2), 0);
    CHECK(m2 && same_weights(m2, f.net[2]) && t2 == 3 && i2.seed == 3);
    nc_neocog_free(m2);
    m2 = (nc_neocog *)0x1;
    CHECK_INT_EQ(nc_neocog_load_member(buf, len, 3, &m2, NULL, NULL), -ENOENT);
    CHECK(m2 == (nc_neocog *)0x1);
    /* the one-network loader refuses a committee: no network of its own */
    nc_neocog *one = (nc_neocog *)0x1;
    CHECK_INT_EQ(nc_neocog_load(buf, len, &one, NULL), -EBADMSG);
    CHECK(one == (nc_neocog *)0x1);
    free(buf);

    /* one member is the one-network file, mark included */
    REQUIRE(nc_neocog_committee_save((const nc_neocog *const *)&f.net[2], &f.col[2],
                                     &f.top_t[2], 1, &f.info, 0, &buf, &len) == 0);
    REQUIRE(nc_neocog_load(buf, len, &one, NULL) == 0);
    CHECK(same_weights(one, f.net[2]));
    nc_neocog_free(one);
    nc_mf_reader *r = NULL;
    uint32_t t = 0;
    REQUIRE(nc_mf_open(buf, len, &r) == 0);
    CHECK(nc_neocog_read_iv(r, &t) == 0 && t == 3);
    nc_mf_close(r);
    REQUIRE(nc_neocog_committee_load(buf, len, &c, NULL) == 0);
    CHECK(c->n_members == 1 && c->iv_top_t[0] == 3 && same_weights(c->member[0], f.net[2]));
    nc_neocog_committee_free(c);
    free(buf);

    /* members that disagree are refused on saving */
    nc_model_info other = f.col[1];
    other.prep.deskew = 1;
    nc_model_info cols[2] = { f.col[0], other };
    CHECK(nc_neocog_committee_mismatch(f.net[0], &f.col[0], f.net[1], &other) != NULL);
    CHECK(nc_neocog_committee_mismatch(f.net[0], &f.col[0], f.net[1], &f.col[1]) == NULL);
    CHECK_INT_EQ(nc_neocog_committee_save((const nc_neocog *const *)f.net, cols, f.top_t, 2,
                                          &f.info, 0, &buf, &len), -EINVAL);
    CHECK_INT_EQ(nc_neocog_committee_save((const nc_neocog *const *)f.net, f.col, f.top_t, 0,
                                          &f.info, 0, &buf, &len), -EINVAL);
    fixture_free(&f);
}

/* A committee file with ncol members (NMEM = nmem) spelled by hand, plus an
 * extra section when extra_tag is not 0. */
static int load_forged(uint32_t nmem, uint8_t *const *mem, const size_t *mem_len,
                       uint32_t n_mem, uint32_t extra_tag)
{
    nc_model_info info;
    fill_info(&info, "forged");
    nc_mf_writer *w = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w))
        return -ENOMEM;
    int err = nc_mf_put_u32(w, NC_NEOCOG_TAG_NMEM, &nmem, 1);
    for (uint32_t i = 0; !err && i < n_mem; i++)
        err = nc_mf_put(w, NC_MF_TAG('N', 'M', '0', '1' + i), NC_MF_TYPE_BYTES, mem[i],
                        mem_len[i]);
    if (!err && extra_tag)
        err = nc_mf_put_u32(w, extra_tag, &nmem, 1);
    if (!err)
        err = nc_mf_put_info(w, &info);
    if (!err)
        err = nc_mf_finish(w, &buf, &len);
    nc_mf_writer_free(w);
    if (err)
        return -ENOMEM;
    nc_neocog_committee *c = (nc_neocog_committee *)0x1;
    err = nc_neocog_committee_load(buf, len, &c, NULL);
    if (err == 0)
        nc_neocog_committee_free(c);
    else
        CHECK(c == (nc_neocog_committee *)0x1);
    free(buf);
    return err;
}

static void test_forged(void)
{
    fixture f;
    REQUIRE(fixture_make(&f));
    uint8_t *mem[3];
    size_t ml[3];
    for (int i = 0; i < 3; i++)
        REQUIRE(nc_neocog_committee_save((const nc_neocog *const *)&f.net[i], &f.col[i],
                                         &f.top_t[i], 1, &f.col[i], 0, &mem[i], &ml[i]) == 0);
    CHECK_INT_EQ(load_forged(2, mem, ml, 2, 0), 0);                 /* well formed */
    CHECK_INT_EQ(load_forged(3, mem, ml, 2, 0), -EBADMSG);          /* one missing */
    CHECK_INT_EQ(load_forged(2, mem, ml, 3, 0), -EBADMSG);          /* one extra */
    CHECK_INT_EQ(load_forged(1, mem, ml, 1, 0), -EBADMSG);          /* N below 2 */
    CHECK_INT_EQ(load_forged(2, mem, ml, 2, NC_MF_TAG('N', 'S', 'T', 'G')), -EBADMSG);
    CHECK_INT_EQ(load_forged(2, mem, ml, 2, NC_NEOCOG_TAG_IV), -EBADMSG);
    CHECK_INT_EQ(load_forged(2, mem, ml, 2, NC_MF_TAG('N', 'M', '0', '0')), -EBADMSG);
    /* a member that is not a network file, and a truncated member */
    uint8_t junk[64] = { 0 };
    uint8_t *bad[2] = { mem[0], junk };
    size_t bl[2] = { ml[0], sizeof junk };
    CHECK_INT_EQ(load_forged(2, bad, bl, 2, 0), -EBADMSG);
    bad[1] = mem[1];
    bl[1] = ml[1] - 9;
    CHECK_INT_EQ(load_forged(2, bad, bl, 2, 0), -EBADMSG);
    /* a member whose prep differs from the committee's */
    nc_model_info odd = f.col[1];
    odd.prep.box = 44;
    uint8_t *ob = NULL;
    size_t ol = 0;
    REQUIRE(nc_neocog_committee_save((const nc_neocog *const *)&f.net[1], &odd, &f.top_t[1],
                                     1, &odd, 0, &ob, &ol) == 0);
    bad[1] = ob;
    bl[1] = ol;
    CHECK_INT_EQ(load_forged(2, bad, bl, 2, 0), -EBADMSG);
    free(ob);
    for (int i = 0; i < 3; i++)
        free(mem[i]);
    fixture_free(&f);
}

/* A stroke image: a few thick random lines in the 65 x 65 field. */
static void strokes(float *img, uint32_t side)
{
    memset(img, 0, (size_t)side * side * sizeof *img);
    for (int s = 0; s < 3; s++) {
        const double x0 = 12 + 40 * urand(), y0 = 12 + 40 * urand();
        const double x1 = 12 + 40 * urand(), y1 = 12 + 40 * urand();
        for (int t = 0; t <= 64; t++) {
            const long x = (long)(x0 + (x1 - x0) * t / 64), y = (long)(y0 + (y1 - y0) * t / 64);
            for (long dy = -1; dy <= 1; dy++)
                for (long dx = -1; dx <= 1; dx++)
                    img[(y + dy) * side + x + dx] = 1.0f;
        }
    }
}

static int open_cpu(const nc_neocog *const *nets, const nc_model_info *col,
                    const uint32_t *top_t, uint32_t n, const nc_model_info *info,
                    uint32_t flags, nc_backend **ret_be)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int err = nc_neocog_committee_save(nets, col, top_t, n, info, flags, &buf, &len);
    if (!err)
        err = nc_backend_open(&nc_backend_cpu, buf, len, 0, ret_be);
    free(buf);
    return err;
}

static int run(const nc_backend *be, const float *in, uint32_t n, float *out)
{
    void *w = NULL;
    int err = be->ops->worker_new(be->impl, 2, &w);
    if (!err)
        err = be->ops->forward(be->impl, w, in, n, out);
    be->ops->worker_free(w);
    return err;
}

static void test_forward(void)
{
    fixture f;
    REQUIRE(fixture_make(&f));
    enum { N = 5, K = 10, SIDE = 65 };
    float *in = malloc((size_t)N * SIDE * SIDE * sizeof *in);
    REQUIRE(in);
    for (int i = 0; i < N; i++)
        strokes(in + (size_t)i * SIDE * SIDE, SIDE);
    float member[3][N * K], out[N * K];
    for (int m = 0; m < 3; m++) {
        nc_backend *be = NULL;
        REQUIRE(open_cpu((const nc_neocog *const *)&f.net[m], &f.col[m], &f.top_t[m], 1,
                         &f.col[m], 0, &be) == 0);
        CHECK_INT_EQ(run(be, in, N, member[m]), 0);
        nc_backend_close(be);
    }
    nc_backend *be = NULL;
    REQUIRE(open_cpu((const nc_neocog *const *)f.net, f.col, f.top_t, 3, &f.info, 0, &be) == 0);
    CHECK_INT_EQ(be->kind, NC_MF_KIND_NEOCOG);
    CHECK_INT_EQ(be->input_len, SIDE * SIDE);
    CHECK_INT_EQ(run(be, in, N, out), 0);
    nc_backend_close(be);
    int differ = 0, fired = 0;
    for (int i = 0; i < N * K; i++) {
        /* the engines' arithmetic: added in member order, then divided */
        const float mean = ((0.0f + member[0][i]) + member[1][i] + member[2][i]) / 3.0f;
        CHECK_MSG(out[i] == mean, "score %d: %.9g against %.9g", i, out[i], mean);
        differ |= fabsf(member[0][i] - member[1][i]) > 1e-3f;
        fired |= member[0][i] > 0.0f && member[1][i] > 0.0f;
    }
    CHECK(differ);              /* else the mean would prove nothing */
    CHECK(fired);

    /* the half-precision committee answers within the rounding of its
     * weights (relative 2^-11 each; the responses are ratios of sums) */
    REQUIRE(open_cpu((const nc_neocog *const *)f.net, f.col, f.top_t, 3, &f.info,
                     NC_NEOCOG_WRITE_HALF, &be) == 0);
    float half[N * K];
    CHECK_INT_EQ(run(be, in, N, half), 0);
    nc_backend_close(be);
    for (int i = 0; i < N * K; i++)
        CHECK_NEAR(half[i], out[i], 2e-3, 2e-3);
    free(in);
    fixture_free(&f);
}

int main(void)
{
    test_half();
    test_round_trip();
    test_forged();
    test_forward();
    return nc_test_finish();
}

/* tests/core/test_neocog_committee.c — neocognitron committee files and the
 * half-precision and 8-bit logarithmic weight forms (core/neocog/neocog.h): round
 * trips, what the loader refuses, and the CPU engine's answer for a
 * committee, which must be the mean of its members' answers as one-network
 * files. */
#include "test.h"

#include "backend.h"
#include "modelfile.h"
#include "neocog.h"
#include "neocog_random.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static nc_test_rng rng = { 0x2545f4914f6cdd1dULL };

static float urand(void) { return (float)nc_test_uniform(&rng); }

/* ---- half precision ---------------------------------------------------------- */

/* Does net saved with flags give exactly the file image b? */
static int saves_as(const nc_neocog *net, const nc_model_info *info, uint32_t flags,
                    const uint8_t *b, size_t l)
{
    uint8_t *again = NULL;
    size_t la = 0;
    int same = nc_neocog_save_flags(net, info, flags, &again, &la) == 0 && la == l &&
               memcmp(again, b, la) == 0;
    free(again);
    return same;
}

static void test_half(void)
{
    nc_neocog *net = nc_test_random_net(&rng, 4, 5, 6);
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
    nc_test_neocog_info(&info, "half");
    uint8_t *b32 = NULL, *b16 = NULL;
    size_t l32 = 0, l16 = 0;
    REQUIRE(nc_neocog_save(net, &info, &b32, &l32) == 0);
    REQUIRE(nc_neocog_save_flags(net, &info, NC_NEOCOG_WRITE_HALF, &b16, &l16) == 0);
    CHECK_MSG(l16 < l32 * 3 / 4, "half file %zu bytes, f32 %zu", l16, l32);
    uint8_t *none = NULL;
    size_t ln = 0;
    CHECK_INT_EQ(nc_neocog_save_flags(net, &info, 4, &none, &ln), -EINVAL);
    CHECK_INT_EQ(nc_neocog_save_flags(net, &info, NC_NEOCOG_WRITE_HALF | NC_NEOCOG_WRITE_LOG8,
                                      &none, &ln), -EINVAL);
    CHECK(none == NULL);
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
    CHECK(saves_as(back, &info, NC_NEOCOG_WRITE_HALF, b16, l16));
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

/* ---- 8-bit logarithmic codes ------------------------------------------------ */

/* b (l bytes) copied section by section: section tag replaced by rep
 * (rep_len bytes, same type), or dropped when rep is NULL; then, if
 * extra_tag, one more section of bytes. */
static uint8_t *respell(const uint8_t *b, size_t l, uint32_t tag, const void *rep,
                        size_t rep_len, uint32_t extra_tag, size_t *ret_len)
{
    nc_mf_reader *r = NULL;
    nc_mf_writer *w = NULL;
    uint8_t *out = NULL;
    if (nc_mf_open(b, l, &r) || nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w))
        goto done;
    for (uint32_t s = 0; s < nc_mf_section_count(r); s++) {
        uint32_t t, ty;
        const void *d;
        size_t n;
        if (nc_mf_section_at(r, s, &t, &ty, &d, &n))
            goto done;
        if (t == tag && !rep)
            continue;
        if (nc_mf_put(w, t, ty, t == tag ? rep : d, t == tag ? rep_len : n))
            goto done;
    }
    const uint8_t two[2] = { 0, 0x3c };     /* 1.0 in any byte form */
    if (extra_tag && nc_mf_put(w, extra_tag, NC_MF_TYPE_BYTES, two, 2))
        goto done;
    if (nc_mf_finish(w, &out, ret_len))
        out = NULL;
done:
    nc_mf_writer_free(w);
    nc_mf_close(r);
    return out;
}

static void test_log8(void)
{
    nc_neocog *net = nc_test_random_net(&rng, 4, 5, 6);
    REQUIRE(net);
    /* US4 plane 0: its largest weight 1000 (code 255), one exactly 2^-4 of
     * it (code 191: exact), one 2^-20 of it (below code 0's 2^-15.94: it
     * becomes code 0).  Plane 1: no weights at all (scale 0). */
    const uint32_t ks4 = nc_neocog_kstride(net->n_planes[3]);
    const size_t rows4 = (size_t)nc_neocog_k_in(net, 3) * net->s_ix[3]->n_live;
    for (size_t i = 0; i < rows4; i++)
        net->a[3][i * ks4 + 1] = 0.0f;
    net->a[3][0 * ks4] = 1000.0f;
    net->a[3][1 * ks4] = 62.5f;
    net->a[3][2 * ks4] = 1000.0f * ldexpf(1.0f, -20);
    nc_model_info info;
    nc_test_neocog_info(&info, "log8");
    uint8_t *b16 = NULL, *b8 = NULL;
    size_t l16 = 0, l8 = 0;
    REQUIRE(nc_neocog_save_flags(net, &info, NC_NEOCOG_WRITE_HALF, &b16, &l16) == 0);
    REQUIRE(nc_neocog_save_flags(net, &info, NC_NEOCOG_WRITE_LOG8, &b8, &l8) == 0);
    CHECK_MSG(l8 < l16, "log8 file %zu bytes, binary16 %zu", l8, l16);
    nc_neocog *back = NULL;
    REQUIRE(nc_neocog_load(b8, l8, &back, NULL) == 0);
    /* every weight: zero stays +0.0; others within half a code (2^(1/32)
     * either way), or, below the lowest code, that code's value */
    size_t worse = 0, zeros_moved = 0, changed = 0, clamped = 0;
    for (uint32_t l = 0; l < 4; l++) {
        const size_t rows = (size_t)nc_neocog_k_in(net, l) * net->s_ix[l]->n_live;
        const uint32_t ks = nc_neocog_kstride(net->n_planes[l]);
        for (uint32_t k = 0; k < net->n_planes[l]; k++) {
            float top = 0.0f;
            for (size_t i = 0; i < rows; i++)
                top = net->a[l][i * ks + k] > top ? net->a[l][i * ks + k] : top;
            const double lowest = top * exp2(-255.0 / 16.0);
            for (size_t i = 0; i < rows; i++) {
                const float a = net->a[l][i * ks + k], b = back->a[l][i * ks + k];
                if (a == 0.0f) {
                    zeros_moved += b != 0.0f;
                    continue;
                }
                changed += a != b;
                if (a < lowest) {
                    clamped++;
                    worse += fabs(b / lowest - 1.0) > 1e-6;
                } else {
                    worse += !(fabs(log2((double)b / a)) <= 1.0 / 32.0 + 1e-6);
                }
            }
        }
        for (uint32_t k = 0; k < net->n_planes[l]; k++)
            CHECK(back->b[l][k] == net->b[l][k]);   /* b stays f32 */
    }
    CHECK_INT_EQ(zeros_moved, 0);
    CHECK_INT_EQ(worse, 0);
    CHECK(changed > 0);
    CHECK(clamped >= 1);
    CHECK(back->a[3][0] == 1000.0f && back->a[3][ks4] == 62.5f);
    /* writing the decoded net again changes nothing */
    CHECK(saves_as(back, &info, NC_NEOCOG_WRITE_LOG8, b8, l8));
    nc_neocog_free(back);

    nc_mf_reader *r = NULL;
    REQUIRE(nc_mf_open(b8, l8, &r) == 0);
    const uint32_t WQ = NC_MF_TAG('W', '4', 'Q', ' '), WS = NC_MF_TAG('W', '4', 'S', ' ');
    CHECK(nc_mf_get(r, NC_MF_TAG('W', '4', 'V', ' '), NULL, NULL, NULL) == -ENOENT);
    CHECK(nc_mf_get(r, NC_MF_TAG('W', '4', 'H', ' '), NULL, NULL, NULL) == -ENOENT);
    float scale[8];
    REQUIRE(net->n_planes[3] == 6);
    REQUIRE(nc_mf_get_f32(r, WS, scale, 6) == 0);
    CHECK(scale[0] == 1000.0f && scale[1] == 0.0f);
    const void *q;
    size_t q_len;
    REQUIRE(nc_mf_get(r, WQ, NULL, &q, &q_len) == 0);
    CHECK(((const uint8_t *)q)[0] == 255 && ((const uint8_t *)q)[1] == 191 &&
          ((const uint8_t *)q)[2] == 0);

    /* spoiled sections */
    float neg[6], zero[6];
    memcpy(neg, scale, sizeof neg);
    memcpy(zero, scale, sizeof zero);
    neg[2] = -1.0f;
    zero[0] = 0.0f;             /* plane 0's weights would decode to 0 */
    struct { uint32_t tag; const void *rep; size_t len; uint32_t extra; const char *what; }
    spoil[] = {
        { WS, neg, sizeof neg, 0, "a negative scale" },
        { WS, zero, sizeof zero, 0, "a zero scale under weights" },
        { WS, scale, 5 * sizeof(float), 0, "a scale short" },
        { WS, NULL, 0, 0, "no scales" },
        { WQ, q, q_len - 1, 0, "a code short" },
        { WQ, NULL, 0, NC_MF_TAG('W', '4', 'H', ' '), "scales beside binary16" },
        { 0, NULL, 0, NC_MF_TAG('W', '4', 'H', ' '), "codes and binary16 both" },
    };
    for (size_t i = 0; i < sizeof spoil / sizeof spoil[0]; i++) {
        size_t sl = 0;
        uint8_t *sb = respell(b8, l8, spoil[i].tag, spoil[i].rep, spoil[i].len, spoil[i].extra,
                              &sl);
        REQUIRE(sb);
        nc_neocog *bad = (nc_neocog *)0x1;
        CHECK_MSG(nc_neocog_load(sb, sl, &bad, NULL) == -EBADMSG, "%s accepted", spoil[i].what);
        CHECK(bad == (nc_neocog *)0x1);
        free(sb);
    }
    nc_mf_close(r);
    nc_neocog_free(net);
    free(b16);
    free(b8);
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
        if (!(f->net[i] = nc_test_random_net(&rng, k[i][0], k[i][1], k[i][2])))
            return 0;
        char cmd[32];
        snprintf(cmd, sizeof cmd, "train member %d", i + 1);
        nc_test_neocog_info(&f->col[i], cmd);
        f->col[i].seed = (uint64_t)i + 1;
        f->col[i].test_error = 0.01 * (i + 1);
    }
    f->top_t[0] = 0;            /* max response: random planes make poor */
    f->top_t[1] = 0;            /* interpolating vectors, and the mark's */
    f->top_t[2] = 3;            /* own path is core's, tested elsewhere */
    nc_test_neocog_info(&f->info, "bundle");
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
    nc_test_neocog_info(&info, "forged");
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

/* Views (image.h): the committee's record asks for four preparations of
 * each digit, two unsheared (members 1 and 2 were trained so) and two
 * sheared (member 3); each member must answer on the views of its own
 * shear only, and the engine with the sum of those six scores, member by
 * member, view by view, divided by 6.  The views here are four different
 * stroke images (the engine sees only floats: whether they came from one
 * digit is nc_prep_apply's business, test_image's). */
static void test_views(void)
{
    fixture f;
    REQUIRE(fixture_make(&f));
    enum { N = 3, V = 4, K = 10, SIDE = 65 };
    f.col[2].prep.deskew = 1;
    float *in = malloc((size_t)N * V * SIDE * SIDE * sizeof *in);
    REQUIRE(in);
    for (int i = 0; i < N * V; i++)
        strokes(in + (size_t)i * SIDE * SIDE, SIDE);
    /* each member alone, one view an image */
    float member[3][N * V * K], out[N * K];
    for (int m = 0; m < 3; m++) {
        nc_backend *be = NULL;
        REQUIRE(open_cpu((const nc_neocog *const *)&f.net[m], &f.col[m], &f.top_t[m], 1,
                         &f.col[m], 0, &be) == 0);
        CHECK_INT_EQ(run(be, in, N * V, member[m]), 0);
        nc_backend_close(be);
    }
    static const uint32_t box[V] = { 40, 36, 44, 40 }, shear[V] = { 0, 0, 1, 1 };
    nc_model_info viewed = f.info;
    viewed.prep.n_views = V;
    memcpy(viewed.prep.view_box, box, sizeof box);
    memcpy(viewed.prep.view_deskew, shear, sizeof shear);
    nc_backend *be = NULL;
    REQUIRE(open_cpu((const nc_neocog *const *)f.net, f.col, f.top_t, 3, &viewed, 0, &be) == 0);
    CHECK_INT_EQ(be->input_len, V * SIDE * SIDE);
    CHECK_INT_EQ(be->info.prep.n_views, V);
    CHECK_INT_EQ(be->info.prep.view_deskew[2], 1);
    CHECK_INT_EQ(run(be, in, N, out), 0);
    nc_backend_close(be);
    int spread = 0;
    for (int i = 0; i < N; i++)
        for (int k = 0; k < K; k++) {
            float acc = 0.0f;
            for (int m = 0; m < 3; m++)
                for (int v = 0; v < V; v++)
                    if ((uint32_t)(m == 2) == shear[v])
                        acc += member[m][(i * V + v) * K + k];
            acc /= 6.0f;
            CHECK_MSG(out[i * K + k] == acc, "digit %d class %d: %.9g against %.9g", i, k,
                      out[i * K + k], acc);
            spread |= fabsf(member[0][(i * V) * K + k] - member[0][(i * V + 1) * K + k]) > 1e-3f;
        }
    CHECK(spread);              /* the views differ, so their mean is tested */
    nc_neocog_committee *c = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(nc_neocog_committee_save((const nc_neocog *const *)f.net, f.col, f.top_t, 3,
                                     &viewed, 0, &buf, &len) == 0);
    REQUIRE(nc_neocog_committee_load(buf, len, &c, NULL) == 0);
    CHECK(c->view_mask[0] == 3u && c->view_mask[1] == 3u && c->view_mask[2] == 12u);
    CHECK_INT_EQ(c->n_scores, 6);
    nc_neocog_committee_free(c);
    free(buf);
    buf = NULL;

    /* views belong to the committee's record: a member's may not have them */
    nc_model_info col[3] = { f.col[0], f.col[1], f.col[2] };
    col[1].prep = viewed.prep;
    col[1].prep.deskew = 0;
    CHECK_INT_EQ(nc_neocog_committee_save((const nc_neocog *const *)f.net, col, f.top_t, 3,
                                          &viewed, 0, &buf, &len), -EINVAL);
    /* a member whose shear has no view, or a view no member answers on */
    col[1] = f.col[1];
    col[1].prep.deskew = 2;
    CHECK_INT_EQ(nc_neocog_committee_save((const nc_neocog *const *)f.net, col, f.top_t, 3,
                                          &viewed, 0, &buf, &len), -EINVAL);
    nc_model_info extra = viewed;
    extra.prep.n_views = V + 1;
    extra.prep.view_box[V] = 40;
    extra.prep.view_deskew[V] = 2;
    CHECK_INT_EQ(nc_neocog_committee_save((const nc_neocog *const *)f.net, f.col, f.top_t, 3,
                                          &extra, 0, &buf, &len), -EINVAL);
    /* without views the shears must agree, as before */
    CHECK_INT_EQ(nc_neocog_committee_save((const nc_neocog *const *)f.net, f.col, f.top_t, 3,
                                          &f.info, 0, &buf, &len), -EINVAL);
    CHECK(buf == NULL);
    /* a one-network file with views of its own shear is fine; its record is
     * its own */
    nc_model_info one = viewed;
    one.prep.n_views = 2;
    one.prep.view_box[2] = one.prep.view_box[3] = 0;
    one.prep.view_deskew[2] = one.prep.view_deskew[3] = 0;
    nc_model_info back;
    REQUIRE(nc_neocog_committee_save((const nc_neocog *const *)f.net, f.col, f.top_t, 1, &one,
                                     0, &buf, &len) == 0);
    REQUIRE(nc_neocog_committee_load(buf, len, &c, &back) == 0);
    CHECK_INT_EQ(back.prep.n_views, 2);
    CHECK(c->view_mask[0] == 3u && c->n_scores == 2);
    nc_neocog_committee_free(c);
    free(buf);
    buf = NULL;
    /* a committee whose member 2 was given views by hand is refused */
    uint8_t *mem[2] = { NULL, NULL };
    size_t mem_len[2] = { 0, 0 };
    col[1] = f.col[1];
    col[1].prep = one.prep;
    REQUIRE(nc_neocog_save(f.net[0], &f.col[0], &mem[0], &mem_len[0]) == 0);
    REQUIRE(nc_neocog_save(f.net[1], &f.col[1], &mem[1], &mem_len[1]) == 0);
    CHECK_INT_EQ(load_forged(2, mem, mem_len, 2, 0), 0);       /* as made */
    free(mem[1]);
    REQUIRE(nc_neocog_save(f.net[1], &col[1], &mem[1], &mem_len[1]) == 0);
    CHECK_INT_EQ(load_forged(2, mem, mem_len, 2, 0), -EBADMSG);
    free(mem[0]);
    free(mem[1]);
    free(in);
    fixture_free(&f);
}

int main(void)
{
    test_half();
    test_log8();
    test_round_trip();
    test_forged();
    test_forward();
    test_views();
    return nc_test_finish();
}

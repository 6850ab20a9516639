/* tests/core/test_backend_cascade.c — the cascade's stages
 * (core/backend/cascade.h) against a digit-by-digit reference, with fake
 * members whose scores are a hash of (member, view, digit, class).
 *
 * Random committees (2-4 members, 1-6 views, each member on its own views),
 * cascades with and without the one-view stage, thresholds that split the
 * digits between the stages, batches of 1-45 digits in slices of 1-9: every
 * answer must be bit for bit the reference's (the stage view's scores, the
 * first member's mean over its views, or the committee's mean with every
 * member in member order), and the ops must be asked only what a stage
 * needs: the stage's view, then the first member's other views, then the
 * other members, each call on at most a slice of digits in ascending
 * order, the others on exactly the digits the first member left, with its
 * own scores for them.  With a fill op, a view is read only after it was
 * filled, and a digit gets only the views of the stages it reached (the
 * stage's view alone for a digit that view decides).  An ops error comes
 * back unchanged. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cascade.h"
#include "neocog.h"
#include "test.h"

#define MAX_M 4
#define MAX_V 6
#define MAX_K 12
#define MAX_N 45

typedef struct fake {
    uint32_t M, V, K, slice;
    uint32_t mask[MAX_M];
    const nc_neocog_cascade *cas;
    /* what the ops were asked */
    uint32_t calls_views_one, calls_views_rest, calls_others, bad_calls;
    uint32_t others_digits[MAX_N], n_others;
    int fail_on;            /* 1: views fails, 2: others fails, 3: fill fails */
    int with_fill;
    uint32_t image0;            /* digit i is the fill's image image0 + i */
    uint32_t filled[MAX_N];     /* views filled, per digit */
    uint32_t unfilled_reads;
} fake;

static int fake_fill(void *ctx, uint32_t mask, const uint32_t *image, uint32_t d)
{
    fake *f = ctx;
    if (f->fail_on == 3)
        return -ENOSPC;
    if (d > f->slice)
        f->bad_calls++;
    for (uint32_t k = 0; k < d; k++) {
        if (image[k] < f->image0 || image[k] - f->image0 >= MAX_N) {
            f->bad_calls++;
            continue;
        }
        f->filled[image[k] - f->image0] |= mask;
    }
    return 0;
}

/* Are the views in mask of the d digits filled (when fill is in use)? */
static void check_filled(fake *f, uint32_t mask, const uint32_t *digit, uint32_t d)
{
    for (uint32_t k = 0; f->with_fill && k < d; k++)
        if ((f->filled[digit[k]] & mask) != mask)
            f->unfilled_reads++;
}

static uint32_t hash(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
    uint32_t h = 2166136261u;
    const uint32_t in[4] = { a, b, c, d };
    for (int i = 0; i < 4; i++) {
        h = (h ^ in[i]) * 16777619u;
        h ^= h >> 13;
    }
    return h;
}

/* Member m's raw score of class k on view v of digit i: zero one time in
 * five (a class that did not fire), else in (0, 1). */
static float score_of(uint32_t m, uint32_t v, uint32_t i, uint32_t k)
{
    const uint32_t h = hash(m, v, i, k);
    return h % 5 == 0 ? 0.0f : (float)(h % 997 + 1) / 1000.0f;
}

static uint32_t popcount(uint32_t x)
{
    return (uint32_t)__builtin_popcount(x);
}

static int ascending(const uint32_t *digit, uint32_t d)
{
    for (uint32_t k = 1; k < d; k++)
        if (digit[k] <= digit[k - 1])
            return 0;
    return 1;
}

static int fake_views(void *ctx, uint32_t m, uint32_t mask, const uint32_t *digit, uint32_t d,
                      float *dst)
{
    fake *f = ctx;
    const uint32_t one = f->cas->view_on ? 1u << f->cas->view : 0u;
    if (m != f->cas->first || d == 0 || d > f->slice || !ascending(digit, d) ||
        (mask != one && mask != (f->mask[m] & ~one)))
        f->bad_calls++;
    check_filled(f, mask, digit, d);
    if (one && mask == one)
        f->calls_views_one++;
    else
        f->calls_views_rest++;
    if (f->fail_on == 1)
        return -EIO;
    size_t p = 0;
    for (uint32_t k = 0; k < d; k++)
        for (uint32_t v = 0; v < f->V; v++)
            if (mask >> v & 1u)
                for (uint32_t c = 0; c < f->K; c++)
                    dst[p++] = score_of(m, v, digit[k], c);
    return 0;
}

static int fake_others(void *ctx, uint32_t skip, const uint32_t *digit, uint32_t d,
                       const float *skip_score, float *out)
{
    fake *f = ctx;
    if (skip != f->cas->first || d == 0 || d > f->slice || !ascending(digit, d))
        f->bad_calls++;
    f->calls_others++;
    if (f->fail_on == 2)
        return -ENOMEM;
    const uint32_t K = f->K, vs = popcount(f->mask[skip]);
    uint32_t n_scores = 0, others = 0;
    for (uint32_t m = 0; m < f->M; m++) {
        n_scores += popcount(f->mask[m]);
        others |= m == skip ? 0 : f->mask[m];
    }
    check_filled(f, others, digit, d);
    for (uint32_t k = 0; k < d; k++) {
        if (f->n_others < MAX_N)
            f->others_digits[f->n_others++] = digit[k];
        float *o = out + (size_t)k * K;
        memset(o, 0, K * sizeof *o);
        float s[MAX_K];
        for (uint32_t m = 0; m < f->M; m++)
            for (uint32_t v = 0, j = 0; v < f->V; v++) {
                if (!(f->mask[m] >> v & 1u))
                    continue;
                for (uint32_t c = 0; c < K; c++)
                    s[c] = m == skip ? skip_score[((size_t)k * vs + j) * K + c]
                                     : score_of(m, v, digit[k], c);
                j++;
                nc_backend_member_add(o, s, K);
            }
        nc_backend_member_mean(o, n_scores, K);
    }
    return 0;
}

/* Digit i's answer computed directly; *stage: 1 the view, 2 the first
 * member, 3 the committee. */
static void reference(const fake *f, uint32_t i, float *o, int *stage)
{
    const nc_neocog_cascade *cas = f->cas;
    const uint32_t K = f->K, fm = cas->first;
    float s[MAX_K];
    if (cas->view_on) {
        for (uint32_t c = 0; c < K; c++)
            s[c] = score_of(fm, cas->view, i, c);
        memcpy(o, s, K * sizeof *o);
        nc_backend_member_mean(o, 1, K);
        if (nc_neocog_cascade_view_decides(cas, o, K)) {
            *stage = 1;
            return;
        }
    }
    memset(o, 0, K * sizeof *o);
    for (uint32_t v = 0; v < f->V; v++)
        if (f->mask[fm] >> v & 1u) {
            for (uint32_t c = 0; c < K; c++)
                s[c] = score_of(fm, v, i, c);
            nc_backend_member_add(o, s, K);
        }
    nc_backend_member_mean(o, popcount(f->mask[fm]), K);
    if (nc_neocog_cascade_decides(cas, o, K)) {
        *stage = 2;
        return;
    }
    uint32_t n_scores = 0;
    memset(o, 0, K * sizeof *o);
    for (uint32_t m = 0; m < f->M; m++)
        for (uint32_t v = 0; v < f->V; v++)
            if (f->mask[m] >> v & 1u) {
                for (uint32_t c = 0; c < K; c++)
                    s[c] = score_of(m, v, i, c);
                nc_backend_member_add(o, s, K);
                n_scores++;
            }
    nc_backend_member_mean(o, n_scores, K);
    *stage = 3;
}

static uint32_t rnd(uint32_t *st, uint32_t n)
{
    *st = *st * 1664525u + 1013904223u;
    return (*st >> 8) % n;
}

int main(void)
{
    uint32_t st = 46u;
    uint32_t stages_seen[4] = { 0 };
    for (int t = 0; t < 400; t++) {
        fake f = { .M = 2 + rnd(&st, 3), .V = 1 + rnd(&st, MAX_V), .K = 2 + rnd(&st, 11),
                   .slice = 1 + rnd(&st, 9), .with_fill = t % 2, .image0 = rnd(&st, 100) };
        for (uint32_t m = 0; m < f.M; m++)
            while (!(f.mask[m] = rnd(&st, 1u << f.V)))
                ;
        nc_neocog_cascade cas = { .on = 1, .first = rnd(&st, f.M),
                                  .threshold = 0.2 + 0.1 * rnd(&st, 8),
                                  .beta = 1.0 + rnd(&st, 8) };
        /* the stage needs a first member of two views or more */
        const uint32_t mf = f.mask[cas.first];
        if (popcount(mf) >= 2 && rnd(&st, 3)) {
            cas.view_on = 1;
            do
                cas.view = rnd(&st, f.V);
            while (!(mf >> cas.view & 1u));
            cas.view_threshold = 0.2 + 0.1 * rnd(&st, 8);
            cas.view_beta = 1.0 + rnd(&st, 8);
        }
        f.cas = &cas;
        const uint32_t n = 1 + rnd(&st, MAX_N), K = f.K;
        uint32_t digit[MAX_N];
        float first[MAX_N * MAX_V * MAX_K], score[9 * MAX_V * MAX_K], oth[9 * MAX_K];
        float out[MAX_N * MAX_K];
        uint32_t image[9];
        const nc_backend_cascade_buf buf = { digit, first, score, oth, image };
        const nc_backend_fill fill = { &f, fake_fill };
        const nc_backend_cascade_ops ops = { .ctx = &f, .views = fake_views,
                                             .others = fake_others, .slice = f.slice,
                                             .fill = f.with_fill ? &fill : NULL,
                                             .image0 = f.image0 };
        int err = nc_backend_cascade_run(&cas, f.mask, f.M, K, n, &ops, &buf, out);
        CHECK_MSG(err == 0, "case %d: %d", t, err);
        CHECK_MSG(f.bad_calls == 0, "case %d: %u calls asked what no stage needs", t,
                  f.bad_calls);
        uint32_t at_stage[4] = { 0 }, left_after_view = 0, differ = 0;
        uint32_t want_others[MAX_N], n_want = 0;
        for (uint32_t i = 0; i < n; i++) {
            float o[MAX_K];
            int stage;
            reference(&f, i, o, &stage);
            at_stage[stage]++;
            stages_seen[stage]++;
            if (stage > 1)
                left_after_view++;
            if (stage == 3)
                want_others[n_want++] = i;
            if (memcmp(o, out + (size_t)i * K, K * sizeof *o))
                differ++;
            /* the views this digit's stages read, and no more */
            uint32_t others = 0;
            for (uint32_t m = 0; m < f.M; m++)
                others |= m == cas.first ? 0 : f.mask[m];
            const uint32_t want = stage == 1 ? 1u << cas.view
                                  : stage == 2 ? mf : mf | others;
            if (f.with_fill && f.filled[i] != want)
                f.unfilled_reads += 1000;
        }
        CHECK_MSG(differ == 0, "case %d: %u of %u digits differ from the reference", t, differ,
                  n);
        CHECK_MSG(f.unfilled_reads == 0, "case %d: %u reads of views not filled, %u digits "
                  "filled otherwise than their stages need", t, f.unfilled_reads % 1000,
                  f.unfilled_reads / 1000);
        /* each stage's calls: its digits in slices */
        const uint32_t slices_one = cas.view_on ? (n + f.slice - 1) / f.slice : 0;
        const uint32_t slices_rest = (left_after_view + f.slice - 1) / f.slice;
        CHECK_MSG(f.calls_views_one == slices_one && f.calls_views_rest == slices_rest &&
                      f.calls_others == (n_want + f.slice - 1) / f.slice,
                  "case %d: calls %u / %u / %u, want %u / %u / %u", t, f.calls_views_one,
                  f.calls_views_rest, f.calls_others, slices_one, slices_rest,
                  (n_want + f.slice - 1) / f.slice);
        CHECK_MSG(f.n_others == n_want &&
                      !memcmp(f.others_digits, want_others, n_want * sizeof *want_others),
                  "case %d: the others ran on %u digits, want the %u the first member left", t,
                  f.n_others, n_want);
    }
    CHECK_MSG(stages_seen[1] > 100 && stages_seen[2] > 100 && stages_seen[3] > 100,
              "every stage answers some digits: %u / %u / %u", stages_seen[1], stages_seen[2],
              stages_seen[3]);

    /* an ops error comes back unchanged, whichever stage meets it */
    for (int fail = 1; fail <= 3; fail++) {
        fake f = { .M = 2, .V = 2, .K = 3, .slice = 4, .mask = { 3, 3 }, .fail_on = fail,
                   .with_fill = 1 };
        /* thresholds above any confidence: every digit reaches the others */
        nc_neocog_cascade cas = { .on = 1, .first = 1, .threshold = 1.5, .beta = 1 };
        f.cas = &cas;
        uint32_t digit[5];
        float first[5 * 2 * 3], score[4 * 2 * 3], oth[4 * 3], out[5 * 3];
        uint32_t image[4];
        const nc_backend_cascade_buf buf = { digit, first, score, oth, image };
        const nc_backend_fill fill = { &f, fake_fill };
        const nc_backend_cascade_ops ops = { .ctx = &f, .views = fake_views,
                                             .others = fake_others, .slice = f.slice,
                                             .fill = &fill };
        const int err = nc_backend_cascade_run(&cas, f.mask, 2, 3, 5, &ops, &buf, out);
        CHECK_MSG(err == (fail == 1 ? -EIO : fail == 2 ? -ENOMEM : -ENOSPC), "failing %s: %d",
                  fail == 1 ? "views" : fail == 2 ? "others" : "fill", err);
    }
    return nc_test_finish();
}

/* tests/core/test_answer.c — core/backend/answer.h: the answer rule for one input
 * (single networks and the ensemble), the threshold conventions (the
 * model's stored one, a looser or tighter one, none), every reject reason,
 * the candidates' order, and the refusals of bad arguments.  The backends
 * are built by hand: the rule only reads their kind, class count and
 * calibration. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "answer.h"
#include "segment.h"
#include "test.h"

#define K 10u

static nc_backend make_be(uint32_t kind, double beta, double threshold)
{
    nc_backend be;
    memset(&be, 0, sizeof be);
    be.kind = kind;
    be.info.n_classes = K;
    if (beta > 0) {
        be.calib.fitted = 1;
        be.calib.beta = beta;
        be.calib.reject_threshold = threshold;
    }
    return be;
}

static nc_answer_in single(uint32_t model, const nc_backend *be, const float *raw, int ink,
                           double threshold)
{
    nc_answer_in in;
    memset(&in, 0, sizeof in);
    in.model = model;
    const int s = model == NC_ANSWER_MODEL_CNN ? NC_ANSWER_NET_CNN : NC_ANSWER_NET_NEOCOG;
    in.be[s] = be;
    in.raw[s] = raw;
    in.ink[s] = ink;
    in.threshold = threshold;
    return in;
}

/* A CNN alone: probabilities by the file's temperature, the stored
 * threshold by default, a request's looser, tighter or no threshold. */
static void test_cnn(void)
{
    const nc_backend be = make_be(NC_MF_KIND_CNN, 2.0, 0.6);
    const float raw[K] = { -1.0f, 0.9f, -0.7f, 0.2f, -1.7f, 0.7f, 0.0f, -0.3f, 0.5f, -0.9f };
    float p[K];
    CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_CNN, 2.0, raw, K, p), 0);
    CHECK(p[1] < 0.6f && p[1] > 0.2f);      /* the threshold below bites */

    nc_answer a;
    nc_answer_in in = single(NC_ANSWER_MODEL_CNN, &be, raw, 1, NC_ANSWER_THRESHOLD_MODEL);
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.best, 1);
    CHECK_INT_EQ(a.label, -1);
    CHECK_INT_EQ(a.reason, NC_ANSWER_REASON_BELOW_THRESHOLD);
    CHECK_NEAR(a.threshold, 0.6, 1e-12, 0);
    CHECK_NEAR(a.confidence, p[1], 1e-6, 0);
    CHECK_INT_EQ(a.n_classes, K);
    for (uint32_t k = 0; k < K; k++) {
        CHECK_NEAR(a.prob[k], p[k], 1e-6, 0);
        CHECK(a.scores[k] == raw[k]);       /* a single network's raw outputs */
    }
    /* a looser threshold accepts it */
    in.threshold = 0.2;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.label, 1);
    CHECK_INT_EQ(a.reason, NC_ANSWER_REASON_NONE);
    CHECK_NEAR(a.threshold, 0.2, 1e-12, 0);
    /* a tighter one rejects it */
    in.threshold = 0.99;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.label, -1);
    CHECK_INT_EQ(a.reason, NC_ANSWER_REASON_BELOW_THRESHOLD);
    CHECK_NEAR(a.threshold, 0.99, 1e-12, 0);
    /* none at all */
    in.threshold = NC_ANSWER_THRESHOLD_NONE;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.label, 1);
    CHECK(a.threshold == 0.0);
    /* a file without a fitted rule: the plain rule and no threshold */
    const nc_backend plain = make_be(NC_MF_KIND_CNN, 0, 0);
    in = single(NC_ANSWER_MODEL_CNN, &plain, raw, 1, 0);
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.label, 1);
    CHECK(a.threshold == 0.0);
    CHECK_INT_EQ(nc_calib_plain(NC_MF_KIND_CNN, raw, K, p), 0);
    CHECK_NEAR(a.confidence, p[1], 1e-6, 0);
    /* no ink: no opinion, whatever the empty input's outputs say */
    in = single(NC_ANSWER_MODEL_CNN, &be, raw, 0, NC_ANSWER_THRESHOLD_NONE);
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.label, -1);
    CHECK_INT_EQ(a.best, -1);
    CHECK_INT_EQ(a.reason, NC_ANSWER_REASON_NO_INK);
    CHECK(a.confidence == 0.0f);
}

/* A neocognitron that fired nothing on an input with ink has no opinion;
 * one that fired answers its best class. */
static void test_neocog(void)
{
    const nc_backend be = make_be(NC_MF_KIND_NEOCOG, 0, 0);
    const float silent[K] = { 0 };
    nc_answer a;
    nc_answer_in in = single(NC_ANSWER_MODEL_NEOCOG, &be, silent, 1, 0);
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.label, -1);
    CHECK_INT_EQ(a.reason, NC_ANSWER_REASON_NO_RESPONSE);
    CHECK_NEAR(a.prob[4], 0.1, 1e-6, 0);    /* uniform */
    in.ink[NC_ANSWER_NET_NEOCOG] = 0;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.reason, NC_ANSWER_REASON_NO_INK);
    const float fired[K] = { 0, 0, 0.25f, 0, 0, 0, 0, 0.75f, 0, 0 };
    in = single(NC_ANSWER_MODEL_NEOCOG, &be, fired, 1, 0);
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.label, 7);
    CHECK_NEAR(a.confidence, 0.75, 1e-6, 0);
    CHECK_INT_EQ(a.reason, NC_ANSWER_REASON_NONE);
}

/* The ensemble: the fitted weight and its stored threshold; one network
 * without an opinion leaves the other alone; neither: no ink. */
static void test_ensemble(void)
{
    const nc_backend cnn = make_be(NC_MF_KIND_CNN, 3.0, 0.9);
    const nc_backend neo = make_be(NC_MF_KIND_NEOCOG, 1.0, 0.9);
    const float rc[K] = { -1.7f, -1.7f, 1.0f, -1.7f, -1.7f, -1.7f, -1.7f, 0.9f, -1.7f, -1.7f };
    const float rn[K] = { 0, 0, 0.2f, 0, 0, 0, 0, 0.8f, 0, 0 };
    float pc[K], pn[K];
    CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_CNN, 3.0, rc, K, pc), 0);
    CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_NEOCOG, 1.0, rn, K, pn), 0);
    nc_ens_rule rule;
    memset(&rule, 0, sizeof rule);
    rule.fitted = 1;
    rule.w_cnn = 0.25;
    rule.reject_threshold = 0.3;
    nc_answer_in in;
    memset(&in, 0, sizeof in);
    in.model = NC_ANSWER_MODEL_ENSEMBLE;
    in.be[NC_ANSWER_NET_CNN] = &cnn;
    in.be[NC_ANSWER_NET_NEOCOG] = &neo;
    in.raw[NC_ANSWER_NET_CNN] = rc;
    in.raw[NC_ANSWER_NET_NEOCOG] = rn;
    in.ink[0] = in.ink[1] = 1;
    in.rule = &rule;
    in.top_k = 3;
    nc_answer a;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    for (uint32_t k = 0; k < K; k++) {
        CHECK_NEAR(a.prob[k], 0.25 * pc[k] + 0.75 * pn[k], 1e-6, 0);
        CHECK(a.scores[k] == a.prob[k]);    /* the ensemble's scores are its p */
    }
    CHECK_INT_EQ(a.label, 7);               /* the neocognitron's weight wins */
    CHECK_NEAR(a.threshold, 0.3, 1e-12, 0); /* the rule's, not the files' 0.9 */
    CHECK_INT_EQ(a.n_top, 3);
    CHECK_INT_EQ(a.top[0], 7);
    CHECK_INT_EQ(a.top[1], 2);
    CHECK(a.prob[a.top[2]] <= a.prob[a.top[1]]);
    /* the plain mean without a rule, and then no stored threshold */
    in.rule = NULL;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_NEAR(a.prob[2], 0.5 * (pc[2] + pn[2]), 1e-6, 0);
    CHECK(a.threshold == 0.0);
    /* a silent neocognitron leaves the CNN alone */
    const float silent[K] = { 0 };
    in.raw[NC_ANSWER_NET_NEOCOG] = silent;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.label, 2);
    CHECK_NEAR(a.confidence, pc[2], 1e-6, 0);
    /* no ink for either */
    in.ink[0] = in.ink[1] = 0;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.label, -1);
    CHECK_INT_EQ(a.reason, NC_ANSWER_REASON_NO_INK);
    /* ink for the neocognitron only, which fired nothing */
    in.ink[NC_ANSWER_NET_NEOCOG] = 1;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.reason, NC_ANSWER_REASON_NO_RESPONSE);
}

/* A character set's answer: 94 classes, more than a 64-bit mask holds; the
 * candidates are the classes by probability, each once. */
static void test_many_classes(void)
{
    enum { C = 94 };
    nc_backend be;
    memset(&be, 0, sizeof be);
    be.kind = NC_MF_KIND_CNN;
    be.info.n_classes = C;
    float raw[C];
    for (uint32_t k = 0; k < C; k++)      /* a permutation of levels; best class 77 */
        raw[k] = -1.0f + 2.0f * (float)((k * 37u + 12u) % C) / (float)C;
    nc_answer_in in = single(NC_ANSWER_MODEL_CNN, &be, raw, 1, NC_ANSWER_THRESHOLD_NONE);
    in.top_k = C;
    nc_answer a;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.n_classes, C);
    CHECK_INT_EQ(a.n_top, C);
    uint8_t seen[C] = { 0 };
    for (uint32_t i = 0; i < C; i++) {
        CHECK(a.top[i] < C && !seen[a.top[i]]);
        seen[a.top[i] % C] = 1;
        if (i)
            CHECK(a.prob[a.top[i - 1]] >= a.prob[a.top[i]]);
    }
    CHECK_INT_EQ(a.best, a.top[0]);
    CHECK_INT_EQ((raw[a.best] > 0.97f), 1);
    CHECK_INT_EQ(a.label, a.best);
    /* the cap itself */
    be.info.n_classes = NC_MF_MAX_CLASSES;
    float big[NC_MF_MAX_CLASSES];
    for (uint32_t k = 0; k < NC_MF_MAX_CLASSES; k++)
        big[k] = (float)k / NC_MF_MAX_CLASSES;
    in = single(NC_ANSWER_MODEL_CNN, &be, big, 1, NC_ANSWER_THRESHOLD_NONE);
    in.top_k = 3;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK(a.top[0] == NC_MF_MAX_CLASSES - 1 && a.top[1] == NC_MF_MAX_CLASSES - 2 &&
          a.top[2] == NC_MF_MAX_CLASSES - 3);
    be.info.n_classes = NC_MF_MAX_CLASSES + 1;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), -EINVAL);
}

/* A class mask (a request's charset): masked classes get probability 0 and
 * are never the answer nor a candidate; the rest are renormalised, so the
 * threshold judges the answer among the allowed classes. */
static void test_mask(void)
{
    const nc_backend be = make_be(NC_MF_KIND_CNN, 2.0, 0.0);
    const float raw[K] = { -1.0f, 0.9f, -0.7f, 0.2f, -1.7f, 0.7f, 0.0f, -0.3f, 0.5f, -0.9f };
    uint8_t mask[K] = { 1, 0, 1, 1, 1, 0, 1, 1, 1, 1 };   /* the two best out */
    float p[K];
    CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_CNN, 2.0, raw, K, p), 0);
    double kept = 0.0;
    for (uint32_t k = 0; k < K; k++)
        kept += mask[k] ? p[k] : 0.0;
    nc_answer_in in = single(NC_ANSWER_MODEL_CNN, &be, raw, 1, NC_ANSWER_THRESHOLD_NONE);
    in.mask = mask;
    in.top_k = K;
    nc_answer a;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.label, 8);                   /* the best allowed class */
    CHECK_NEAR(a.confidence, p[8] / kept, 1e-5, 0);
    CHECK(a.prob[1] == 0.0f && a.prob[5] == 0.0f);
    double sum = 0.0;
    for (uint32_t k = 0; k < K; k++)
        sum += a.prob[k];
    CHECK_NEAR(sum, 1.0, 1e-5, 0);
    CHECK_INT_EQ(a.n_top, K - 2);               /* masked classes are no candidates */
    for (uint32_t i = 0; i < a.n_top; i++)
        CHECK(mask[a.top[i]]);
    /* a threshold between the masked and the renormalised confidence */
    in.threshold = (p[8] + p[8] / kept) / 2.0;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.label, 8);
    /* no ink stays no ink */
    in.ink[NC_ANSWER_NET_CNN] = 0;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.reason, NC_ANSWER_REASON_NO_INK);
}

static void test_rank(void)
{
    const float p[5] = { 0.1f, 0.3f, 0.1f, 0.3f, 0.2f };
    uint8_t top[5];
    nc_answer_rank(p, 5, 5, top);
    const uint8_t want[5] = { 1, 3, 4, 0, 2 };     /* ties: lower class first */
    CHECK(!memcmp(top, want, 5));
    uint8_t two[2] = { 99, 99 };
    nc_answer_rank(p, 5, 2, two);
    CHECK(two[0] == 1 && two[1] == 3);
    /* top_k 0 means 1; beyond the classes it is capped */
    const nc_backend be = make_be(NC_MF_KIND_CNN, 0, 0);
    const float raw[K] = { 0.5f };
    nc_answer a;
    nc_answer_in in = single(NC_ANSWER_MODEL_CNN, &be, raw, 1, 0);
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.n_top, 1);
    CHECK_INT_EQ(a.top[0], 0);
    in.top_k = 1000;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    CHECK_INT_EQ(a.n_top, K);
}

static void test_args(void)
{
    const nc_backend cnn = make_be(NC_MF_KIND_CNN, 0, 0);
    nc_backend neo = make_be(NC_MF_KIND_NEOCOG, 0, 0);
    const float raw[K] = { 0 };
    nc_answer a;
    a.label = 12345;
    nc_answer_in in = single(NC_ANSWER_MODEL_CNN, &cnn, NULL, 1, 0);
    CHECK_INT_EQ(nc_answer_compute(&in, &a), -EINVAL);
    CHECK_INT_EQ(a.label, 12345);           /* untouched on failure */
    in = single(NC_ANSWER_MODEL_CNN, NULL, raw, 1, 0);
    CHECK_INT_EQ(nc_answer_compute(&in, &a), -EINVAL);
    in = single(NC_ANSWER_MODEL_CNN, &cnn, raw, 1, 0);
    in.model = 0;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), -EINVAL);
    in.model = 4;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), -EINVAL);
    CHECK_INT_EQ(nc_answer_compute(NULL, &a), -EINVAL);
    /* an ensemble needs both, with the same classes */
    in.model = NC_ANSWER_MODEL_ENSEMBLE;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), -EINVAL);
    in.be[NC_ANSWER_NET_NEOCOG] = &neo;
    in.raw[NC_ANSWER_NET_NEOCOG] = raw;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), 0);
    neo.info.n_classes = K - 1;
    CHECK_INT_EQ(nc_answer_compute(&in, &a), -EINVAL);
}

static void test_conventions(void)
{
    /* the request's threshold wins when it names one */
    CHECK(nc_answer_threshold(0.4, 0.0) == 0.4);
    CHECK(nc_answer_threshold(0.4, 0.1) == 0.1);
    CHECK(nc_answer_threshold(0.4, -1.0) == -1.0);
    CHECK(nc_answer_threshold(0.0, 0.0) == 0.0);
    /* the threshold in force without an input to answer */
    const nc_backend cnn = make_be(NC_MF_KIND_CNN, 2.0, 0.6);
    const nc_backend neo = make_be(NC_MF_KIND_NEOCOG, 1.0, 0.7);
    nc_answer_in in = single(NC_ANSWER_MODEL_CNN, &cnn, NULL, 0, 0);
    CHECK_NEAR(nc_answer_threshold_in_force(&in), 0.6, 1e-12, 0);
    in.threshold = 0.25;
    CHECK_NEAR(nc_answer_threshold_in_force(&in), 0.25, 1e-12, 0);
    in.threshold = NC_ANSWER_THRESHOLD_NONE;
    CHECK(nc_answer_threshold_in_force(&in) == 0.0);
    in = single(NC_ANSWER_MODEL_NEOCOG, &neo, NULL, 0, 0);
    CHECK_NEAR(nc_answer_threshold_in_force(&in), 0.7, 1e-12, 0);
    in.model = NC_ANSWER_MODEL_ENSEMBLE;
    in.be[NC_ANSWER_NET_CNN] = &cnn;
    CHECK(nc_answer_threshold_in_force(&in) == 0.0);     /* plain rule: none */
    nc_ens_rule rule;
    memset(&rule, 0, sizeof rule);
    rule.fitted = 1;
    rule.reject_threshold = 0.45;
    in.rule = &rule;
    CHECK_NEAR(nc_answer_threshold_in_force(&in), 0.45, 1e-12, 0);
    CHECK(nc_answer_threshold_in_force(NULL) == 0.0);
    /* a piece core/segment joined or cut, rejected for its confidence */
    CHECK_INT_EQ(nc_answer_segment_reason(NC_ANSWER_REASON_BELOW_THRESHOLD,
                                          NC_SEGMENT_DIGIT_SPLIT),
                 NC_ANSWER_REASON_AMBIGUOUS_SEGMENTATION);
    CHECK_INT_EQ(nc_answer_segment_reason(NC_ANSWER_REASON_BELOW_THRESHOLD,
                                          NC_SEGMENT_DIGIT_MERGED),
                 NC_ANSWER_REASON_AMBIGUOUS_SEGMENTATION);
    CHECK_INT_EQ(nc_answer_segment_reason(NC_ANSWER_REASON_BELOW_THRESHOLD, 0),
                 NC_ANSWER_REASON_BELOW_THRESHOLD);
    CHECK_INT_EQ(nc_answer_segment_reason(NC_ANSWER_REASON_NO_INK, NC_SEGMENT_DIGIT_SPLIT),
                 NC_ANSWER_REASON_NO_INK);
    CHECK_INT_EQ(nc_answer_segment_reason(NC_ANSWER_REASON_NONE, NC_SEGMENT_DIGIT_SPLIT),
                 NC_ANSWER_REASON_NONE);
    CHECK(!strcmp(nc_answer_reason_text(NC_ANSWER_REASON_BELOW_THRESHOLD), "below threshold"));
    CHECK(!strcmp(nc_answer_reason_text(77), "?"));
}

int main(void)
{
    test_cnn();
    test_neocog();
    test_ensemble();
    test_mask();
    test_rank();
    test_many_classes();
    test_args();
    test_conventions();
    return nc_test_finish();
}

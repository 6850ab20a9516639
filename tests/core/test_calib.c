/* tests/core/test_calib.c — core/calib/calib.h: the calibration family, fitting
 * a known temperature back from synthetic scores, the reject threshold, the
 * ensemble weight, the file sections, and the backend applying what a file
 * holds (including the ensemble rule falling back when the neocognitron file
 * is not the one it was fitted with). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "calib.h"
#include "cnn.h"
#include "test.h"

#define K 10u

/* Sample a class from p[K] (sums to 1). */
static uint8_t draw(nc_test_rng *r, const float *p)
{
    double u = nc_test_uniform(r), acc = 0.0;
    for (uint32_t k = 0; k < K; k++) {
        acc += p[k];
        if (u < acc)
            return (uint8_t)k;
    }
    return K - 1;
}

static void test_family(void)
{
    const float y[K] = { -1.0f, 0.9f, -0.7f, 0.2f, -1.7f, 1.2f, 0.0f, -0.3f, 0.5f, -0.9f };
    float a[K], b[K];
    /* the plain rule is the family at the plain betas */
    CHECK_INT_EQ(nc_calib_plain(NC_MF_KIND_CNN, y, K, a), 0);
    CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_CNN, NC_CALIB_PLAIN_BETA_CNN, y, K, b), 0);
    double sum = 0.0;
    for (uint32_t k = 0; k < K; k++) {
        CHECK_NEAR(a[k], b[k], 1e-6, 1e-5);
        sum += b[k];
    }
    CHECK_NEAR(sum, 1.0, 1e-5, 0);
    CHECK(b[5] > b[1] && b[1] > b[8]);
    /* a sharper beta, a sharper vector */
    CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_CNN, 10.0, y, K, a), 0);
    CHECK(a[5] > b[5]);
    /* neocognitron: s^beta normalised, silent classes 0 */
    const float s[K] = { 0.0f, 0.5f, 0.25f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f };
    CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_NEOCOG, 1.0, s, K, a), 0);
    CHECK_NEAR(a[1], 2.0 / 3.0, 1e-6, 0);
    CHECK_INT_EQ(nc_calib_plain(NC_MF_KIND_NEOCOG, s, K, b), 0);
    CHECK_NEAR(a[1], b[1], 1e-6, 0);
    CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_NEOCOG, 2.0, s, K, a), 0);
    CHECK_NEAR(a[1], 0.8, 1e-6, 0);
    CHECK_NEAR(a[2], 0.2, 1e-6, 0);
    CHECK(a[0] == 0.0f && a[9] == 0.0f);
    const float none[K] = { 0 };
    CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_NEOCOG, 2.0, none, K, a), -ENOENT);
    CHECK_NEAR(a[3], 0.1, 1e-7, 0);
    CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_CNN, 0.0, y, K, a), -EINVAL);
    CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_CNN, NAN, y, K, a), -EINVAL);
    CHECK_INT_EQ(nc_calib_probs(99, 1.0, y, K, a), -EINVAL);
    /* apply: fitted or plain */
    nc_calib c = { .fitted = 1, .beta = 0.5 };
    CHECK_INT_EQ(nc_calib_apply(&c, NC_MF_KIND_CNN, y, K, a), 0);
    CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_CNN, 0.5, y, K, b), 0);
    CHECK(memcmp(a, b, sizeof a) == 0);
    c.fitted = 0;
    CHECK_INT_EQ(nc_calib_apply(&c, NC_MF_KIND_CNN, y, K, a), 0);
    CHECK_INT_EQ(nc_backend_calibrate(NC_MF_KIND_CNN, y, K, b), 0);
    CHECK(memcmp(a, b, sizeof a) == 0);
}

/* Scores drawn at random, labels drawn from the family at beta0: the fit
 * must give beta0 back (to sampling error). */
static void fit_known(uint32_t kind, double beta0, uint32_t n, uint64_t seed)
{
    nc_test_rng r = { seed };
    float *raw = malloc((size_t)n * K * sizeof *raw);
    uint8_t *lab = malloc(n);
    REQUIRE(raw && lab);
    for (uint32_t i = 0; i < n; i++) {
        float *x = raw + (size_t)i * K, p[K];
        for (uint32_t k = 0; k < K; k++) {
            if (kind == NC_MF_KIND_CNN)
                x[k] = (float)(-1.7 + 3.4 * nc_test_uniform(&r));
            else    /* cosines in (0, 1], a quarter of the classes silent */
                x[k] = nc_test_uniform(&r) < 0.25 ? 0.0f
                                                  : (float)(0.05 + 0.95 * nc_test_uniform(&r));
        }
        if (kind == NC_MF_KIND_NEOCOG)
            x[i % K] = 0.9f;    /* something always fires */
        REQUIRE(nc_calib_probs(kind, beta0, x, K, p) == 0);
        lab[i] = draw(&r, p);
    }
    double beta = 0.0, nll = 0.0, nll0 = 0.0, nll_plain = 0.0;
    CHECK_INT_EQ(nc_calib_fit_beta(kind, raw, lab, n, K, &beta, &nll), 0);
    CHECK_MSG(fabs(beta - beta0) <= 0.06 * beta0, "kind %u: fitted beta %.4f, true %.4f", kind,
              beta, beta0);
    CHECK_INT_EQ(nc_calib_nll(kind, beta0, raw, lab, n, K, &nll0), 0);
    CHECK_INT_EQ(nc_calib_nll(kind, beta * 2.0, raw, lab, n, K, &nll_plain), 0);
    CHECK(nll <= nll0 + 1e-12);         /* the fit is the minimum */
    CHECK(nll < nll_plain);
    /* a label outside the classes is refused */
    lab[n / 2] = K;
    CHECK_INT_EQ(nc_calib_fit_beta(kind, raw, lab, n, K, &beta, &nll), -EINVAL);
    free(raw);
    free(lab);
}

static void test_fit(void)
{
    fit_known(NC_MF_KIND_CNN, 0.8, 20000, 11);
    fit_known(NC_MF_KIND_CNN, 4.5, 20000, 12);
    fit_known(NC_MF_KIND_NEOCOG, 1.5, 20000, 13);
    fit_known(NC_MF_KIND_NEOCOG, 12.0, 20000, 14);
}

static void test_threshold(void)
{
    enum { N = 1000 };
    float conf[N];
    nc_test_rng r = { 5 };
    /* 0.0005, 0.0015, ... in a shuffled order */
    for (uint32_t i = 0; i < N; i++)
        conf[i] = (float)((i + 0.5) / N);
    for (uint32_t i = N - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(nc_test_next(&r) % (i + 1));
        float t = conf[i];
        conf[i] = conf[j];
        conf[j] = t;
    }
    const double rates[3] = { 0.005, 0.01, 0.2 };
    for (int k = 0; k < 3; k++) {
        double t = -1.0;
        CHECK_INT_EQ(nc_calib_threshold(conf, N, rates[k], &t), 0);
        uint32_t rejected = 0;
        for (uint32_t i = 0; i < N; i++)
            rejected += nc_calib_rejects(t, conf[i]);
        CHECK_INT_EQ(rejected, (uint32_t)(rates[k] * N + 0.5));
    }
    double t = -1.0;
    CHECK_INT_EQ(nc_calib_threshold(conf, N, 0.0, &t), 0);
    CHECK(t == 0.0 && !nc_calib_rejects(t, 0.0f));
    CHECK_INT_EQ(nc_calib_threshold(conf, N, 0.6, &t), -EINVAL);
    conf[3] = NAN;
    CHECK_INT_EQ(nc_calib_threshold(conf, N, 0.01, &t), -EINVAL);
}

/* One informative model, one guessing: the weight goes to the first. */
static void test_ensemble_fit(void)
{
    enum { N = 4000 };
    float *good = malloc(N * K * sizeof(float)), *noise = malloc(N * K * sizeof(float));
    uint8_t lab[N];
    REQUIRE(good && noise);
    nc_test_rng r = { 99 };
    for (uint32_t i = 0; i < N; i++) {
        lab[i] = (uint8_t)(nc_test_next(&r) % K);
        double sg = 0.0, sn = 0.0;
        for (uint32_t k = 0; k < K; k++) {
            good[i * K + k] = (float)(k == lab[i] ? 5.0 : nc_test_uniform(&r));
            noise[i * K + k] = (float)nc_test_uniform(&r);
            sg += good[i * K + k];
            sn += noise[i * K + k];
        }
        for (uint32_t k = 0; k < K; k++) {
            good[i * K + k] /= (float)sg;
            noise[i * K + k] /= (float)sn;
        }
    }
    double w = -1.0, nll = 0.0, nll_half = 0.0;
    CHECK_INT_EQ(nc_ens_fit_weight(good, NULL, noise, NULL, lab, N, K, &w, &nll), 0);
    CHECK_MSG(w > 0.9, "w %.4f", w);
    CHECK_INT_EQ(nc_ens_nll(0.5, good, NULL, noise, NULL, lab, N, K, &nll_half), 0);
    CHECK(nll < nll_half);
    CHECK_INT_EQ(nc_ens_fit_weight(noise, NULL, good, NULL, lab, N, K, &w, &nll), 0);
    CHECK_MSG(w < 0.1, "w %.4f", w);
    /* applying: fitted weight, plain mean, one side without opinion */
    nc_ens_rule rule = { .fitted = 1, .w_cnn = 0.25 };
    float p[K], q[K];
    CHECK_INT_EQ(nc_ens_apply(&rule, good, 1, noise, 1, K, p), 0);
    CHECK_NEAR(p[lab[0]], 0.25 * good[lab[0]] + 0.75 * noise[lab[0]], 1e-6, 0);
    CHECK_INT_EQ(nc_ens_apply(NULL, good, 1, noise, 1, K, p), 0);
    CHECK_INT_EQ(nc_backend_ensemble(good, 1, noise, 1, K, q), 0);
    CHECK(memcmp(p, q, sizeof p) == 0);
    CHECK_INT_EQ(nc_ens_apply(&rule, good, 0, noise, 1, K, p), 0);
    CHECK(memcmp(p, noise, sizeof p) == 0);
    CHECK_INT_EQ(nc_ens_apply(&rule, good, 0, noise, 0, K, p), -ENOENT);
    free(good);
    free(noise);
}

static void test_select(void)
{
    const nc_ens_rule stored = { .fitted = 1, .partner = { 0xdeadbeef, 1234 }, .w_cnn = 0.8,
                                 .reject_threshold = 0.7 };
    nc_model_fp same = { 0xdeadbeef, 1234 }, other_crc = { 0xdeadbeee, 1234 },
                other_len = { 0xdeadbeef, 1235 };
    nc_ens_rule got;
    CHECK_INT_EQ(nc_ens_select(&stored, &same, &got), 0);
    CHECK(got.fitted && got.w_cnn == 0.8 && got.reject_threshold == 0.7);
    CHECK_INT_EQ(nc_ens_select(&stored, &other_crc, &got), -ESTALE);
    CHECK(!got.fitted && got.w_cnn == 0.5 && got.reject_threshold == 0.0);
    CHECK_INT_EQ(nc_ens_select(&stored, &other_len, &got), -ESTALE);
    CHECK(!got.fitted);
    CHECK_INT_EQ(nc_ens_select(&stored, NULL, &got), -ESTALE);
    nc_ens_rule none = { 0 };
    CHECK_INT_EQ(nc_ens_select(&none, &same, &got), -ENOENT);
    CHECK(!got.fitted && got.w_cnn == 0.5);
}

/* A file with one dummy section and the given rules; raw f64/u32 sections
 * may be forced in instead (rule_len 0: none). */
static uint8_t *forge(const double *cal, size_t cal_len, const double *ens, size_t ens_len,
                      const uint32_t *fp, size_t fp_len, size_t *ret_len)
{
    nc_mf_writer *w = NULL;
    uint8_t *buf = NULL;
    if (nc_mf_writer_new(NC_MF_KIND_CNN, &w))
        return NULL;
    int err = nc_mf_put_str(w, NC_MF_TAG('X', 'X', 'X', 'X'), "x");
    if (cal_len)
        err |= nc_mf_put_f64(w, NC_CALIB_TAG_RULE, cal, cal_len);
    if (ens_len)
        err |= nc_mf_put_f64(w, NC_ENS_TAG_RULE, ens, ens_len);
    if (fp_len)
        err |= nc_mf_put_u32(w, NC_ENS_TAG_PARTNER, fp, fp_len);
    if (!err)
        err = nc_mf_finish(w, &buf, ret_len);
    nc_mf_writer_free(w);
    return err ? NULL : buf;
}

static int read_forged(const double *cal, size_t cal_len, const double *ens, size_t ens_len,
                       const uint32_t *fp, size_t fp_len)
{
    size_t len = 0;
    uint8_t *buf = forge(cal, cal_len, ens, ens_len, fp, fp_len, &len);
    if (!buf)
        return 1;
    nc_mf_reader *r = NULL;
    int err = nc_mf_open(buf, len, &r);
    nc_calib c;
    nc_ens_rule e;
    if (!err)
        err = nc_calib_read(r, &c, &e);
    nc_mf_close(r);
    free(buf);
    return err;
}

static void test_sections(void)
{
    const nc_calib cal = { 1, 4.25, 0.85, 0.01, 10000, 0.05, 0.03, 0.0068 };
    const nc_ens_rule ens = { 1, { 0x01020304, 0x123456789ull }, 0.75, 0.6, 0.01, 10000,
                              0.04, 0.02, 0.005 };
    nc_mf_writer *w = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(nc_mf_writer_new(NC_MF_KIND_CNN, &w) == 0);
    CHECK_INT_EQ(nc_calib_write(w, &cal, "fitted by a test", &ens, "also a test"), 0);
    REQUIRE(nc_mf_finish(w, &buf, &len) == 0);
    nc_mf_writer_free(w);
    nc_mf_reader *r = NULL;
    REQUIRE(nc_mf_open(buf, len, &r) == 0);
    nc_calib c;
    nc_ens_rule e;
    CHECK_INT_EQ(nc_calib_read(r, &c, &e), 0);
    CHECK(c.fitted && c.beta == cal.beta && c.reject_threshold == cal.reject_threshold &&
          c.reject_rate == cal.reject_rate && c.n_valid == cal.n_valid &&
          c.nll_plain == cal.nll_plain && c.nll_fitted == cal.nll_fitted &&
          c.valid_error == cal.valid_error);
    CHECK(e.fitted && e.partner.crc == ens.partner.crc && e.partner.len == ens.partner.len &&
          e.w_cnn == ens.w_cnn && e.reject_threshold == ens.reject_threshold &&
          e.valid_error == ens.valid_error);
    char note[64];
    CHECK(nc_mf_get_str(r, NC_CALIB_TAG_NOTE, note, sizeof note) == 0 &&
          strcmp(note, "fitted by a test") == 0);
    nc_mf_close(r);
    free(buf);

    /* absent: not fitted, no error */
    CHECK_INT_EQ(read_forged(NULL, 0, NULL, 0, NULL, 0), 0);
    /* malformed: each a clean -EBADMSG */
    const double good[8] = { 1, 4.0, 0.8, 0.01, 100, 0.1, 0.05, 0.01 };
    const double good_ens[8] = { 1, 0.6, 0.8, 0.01, 100, 0.1, 0.05, 0.01 };
    const uint32_t fp[3] = { 1, 2, 0 };
    double v[8];
    CHECK_INT_EQ(read_forged(good, 8, good_ens, 8, fp, 3), 0);             /* control */
    CHECK_INT_EQ(read_forged(good, 7, NULL, 0, NULL, 0), -EBADMSG);
    memcpy(v, good, sizeof v);
    v[0] = 2;                                                               /* version */
    CHECK_INT_EQ(read_forged(v, 8, NULL, 0, NULL, 0), -EBADMSG);
    memcpy(v, good, sizeof v);
    v[1] = 0.0;                                                             /* beta */
    CHECK_INT_EQ(read_forged(v, 8, NULL, 0, NULL, 0), -EBADMSG);
    v[1] = 1e5;
    CHECK_INT_EQ(read_forged(v, 8, NULL, 0, NULL, 0), -EBADMSG);
    memcpy(v, good, sizeof v);
    v[2] = 1.5;                                                             /* threshold */
    CHECK_INT_EQ(read_forged(v, 8, NULL, 0, NULL, 0), -EBADMSG);
    memcpy(v, good, sizeof v);
    v[3] = 0.7;                                                             /* rate */
    CHECK_INT_EQ(read_forged(v, 8, NULL, 0, NULL, 0), -EBADMSG);
    CHECK_INT_EQ(read_forged(NULL, 0, good_ens, 8, NULL, 0), -EBADMSG);     /* no partner */
    CHECK_INT_EQ(read_forged(NULL, 0, NULL, 0, fp, 3), -EBADMSG);           /* no rule */
    CHECK_INT_EQ(read_forged(NULL, 0, good_ens, 8, fp, 2), -EBADMSG);
    memcpy(v, good_ens, sizeof v);
    v[1] = 1.5;                                                             /* w > 1 */
    CHECK_INT_EQ(read_forged(NULL, 0, v, 8, fp, 3), -EBADMSG);
    /* the writer refuses what the reader would */
    REQUIRE(nc_mf_writer_new(NC_MF_KIND_CNN, &w) == 0);
    nc_calib bad = cal;
    bad.beta = 0.0;
    CHECK_INT_EQ(nc_calib_write(w, &bad, NULL, NULL, NULL), -EINVAL);
    bad = cal;
    bad.reject_threshold = -0.1;
    CHECK_INT_EQ(nc_calib_write(w, &bad, NULL, NULL, NULL), -EINVAL);
    nc_mf_writer_free(w);
}

/* ---- through the backend -------------------------------------------------------- */

static void info_for(nc_model_info *info)
{
    memset(info, 0, sizeof *info);
    info->n_classes = K;
    for (uint32_t c = 0; c < K; c++)
        snprintf(info->labels[c], sizeof info->labels[c], "%u", c);
    info->prep = (nc_prep){ NC_PREP_MNIST, 12, 8, 0, 0, -1.0f, 0, 0, { 0 }, { 0 } };
    snprintf(info->data, sizeof info->data, "test_calib");
    info->test_error = -1;
}

/* A small CNN file for 12x12 inputs, with the given rule sections. */
static uint8_t *cnn_file(const nc_calib *cal, const nc_ens_rule *ens, size_t *ret_len)
{
    nc_cnn *net = NULL;
    nc_model_info info;
    uint8_t *plain = NULL, *buf = NULL;
    size_t plen = 0;
    info_for(&info);
    if (nc_cnn_new("1x12x12-4C3-MP2-6C3-10N", &net) || nc_cnn_init_uniform(net, 3, 0.4f) ||
        nc_cnn_save(net, &info, &plain, &plen)) {
        nc_cnn_free(net);
        return NULL;
    }
    nc_cnn_free(net);
    nc_mf_reader *r = NULL;
    nc_mf_writer *w = NULL;
    int err = nc_mf_open(plain, plen, &r);
    if (!err)
        err = nc_mf_writer_new(NC_MF_KIND_CNN, &w);
    for (uint32_t i = 0; !err && i < nc_mf_section_count(r); i++) {
        uint32_t tag, type;
        const void *d;
        size_t n;
        if (!(err = nc_mf_section_at(r, i, &tag, &type, &d, &n)))
            err = nc_mf_put(w, tag, type, d, n);
    }
    if (!err)
        err = nc_calib_write(w, cal, "test", ens, "test");
    if (!err)
        err = nc_mf_finish(w, &buf, ret_len);
    nc_mf_writer_free(w);
    nc_mf_close(r);
    free(plain);
    return err ? NULL : buf;
}

static void test_backend(void)
{
    const nc_calib cal = { 1, 1.7, 0.4, 0.01, 100, 0.5, 0.4, 0.1 };
    const nc_ens_rule ens = { 1, { 0xabcdef01, 4096 }, 0.8, 0.55, 0.01, 100, 0.3, 0.2, 0.05 };
    size_t len_fit = 0, len_plain = 0;
    uint8_t *fit = cnn_file(&cal, &ens, &len_fit);
    uint8_t *plain = cnn_file(NULL, NULL, &len_plain);
    REQUIRE(fit && plain);
    nc_backend *bf = NULL, *bp = NULL;
    REQUIRE(nc_backend_open(&nc_backend_cpu, fit, len_fit, 0, &bf) == 0);
    REQUIRE(nc_backend_open(&nc_backend_cpu, plain, len_plain, 0, &bp) == 0);
    CHECK(bf->calib.fitted && bf->calib.beta == 1.7 && bf->ens.fitted);
    CHECK(!bp->calib.fitted && !bp->ens.fitted);
    nc_model_fp fp;
    CHECK(nc_model_fingerprint(fit, len_fit, &fp) == 0 && fp.crc == bf->fp.crc &&
          fp.len == len_fit);
    CHECK(nc_crc32(fit, len_fit - 4) == bf->fp.crc);
    CHECK_NEAR(nc_backend_reject_threshold(bf), 0.4, 0, 0);
    CHECK_NEAR(nc_backend_reject_threshold(bp), 0.0, 0, 0);

    /* the same net, so the same raw scores; the fitted file's probabilities
     * follow its beta, the plain one's the plain rule */
    enum { N = 3 };
    float in[N * 144], out_f[N * K], out_p[N * K];
    nc_test_rng r = { 8 };
    for (size_t i = 0; i < N * 144; i++)
        in[i] = (float)nc_test_uniform(&r);
    void *wf = NULL, *wp = NULL;
    REQUIRE(bf->ops->worker_new(bf->impl, N, &wf) == 0);
    REQUIRE(bp->ops->worker_new(bp->impl, N, &wp) == 0);
    CHECK_INT_EQ(bf->ops->forward(bf->impl, wf, in, N, out_f), 0);
    CHECK_INT_EQ(bp->ops->forward(bp->impl, wp, in, N, out_p), 0);
    CHECK(memcmp(out_f, out_p, sizeof out_f) == 0);
    for (uint32_t i = 0; i < N; i++) {
        float p[K], q[K], plain_p[K];
        CHECK_INT_EQ(nc_backend_probs(bf, out_f + i * K, p), 0);
        CHECK_INT_EQ(nc_calib_probs(NC_MF_KIND_CNN, 1.7, out_f + i * K, K, q), 0);
        CHECK(memcmp(p, q, sizeof p) == 0);
        CHECK_INT_EQ(nc_backend_probs(bp, out_p + i * K, plain_p), 0);
        CHECK_INT_EQ(nc_backend_calibrate(NC_MF_KIND_CNN, out_p + i * K, K, q), 0);
        CHECK(memcmp(plain_p, q, sizeof q) == 0);
        int differs = 0;
        for (uint32_t k = 0; k < K; k++)
            differs |= fabsf(p[k] - plain_p[k]) > 1e-4f;
        CHECK(differs);
    }
    bf->ops->worker_free(wf);
    bp->ops->worker_free(wp);

    /* the ensemble rule: the stored one with its own neocognitron file, the
     * plain mean with any other */
    nc_backend neo = { .kind = NC_MF_KIND_NEOCOG, .fp = { 0xabcdef01, 4096 } };
    nc_ens_rule rule;
    CHECK_INT_EQ(nc_backend_ensemble_rule(bf, &neo, &rule), 0);
    CHECK(rule.fitted && rule.w_cnn == 0.8 && rule.reject_threshold == 0.55);
    neo.fp.crc ^= 1;
    CHECK_INT_EQ(nc_backend_ensemble_rule(bf, &neo, &rule), -ESTALE);
    CHECK(!rule.fitted && rule.w_cnn == 0.5 && rule.reject_threshold == 0.0);
    float pc[K] = { 0.9f, 0.1f }, pn[K] = { 0.1f, 0.9f }, pe[K];
    CHECK_INT_EQ(nc_ens_apply(&rule, pc, 1, pn, 1, K, pe), 0);
    CHECK_NEAR(pe[0], 0.5, 1e-6, 0);            /* the plain mean */
    neo.fp.crc ^= 1;
    neo.fp.len++;
    CHECK_INT_EQ(nc_backend_ensemble_rule(bf, &neo, &rule), -ESTALE);
    CHECK_INT_EQ(nc_backend_ensemble_rule(bp, &neo, &rule), -ENOENT);
    nc_backend_close(bf);
    nc_backend_close(bp);

    /* a malformed rule fails the file, not just the rule */
    uint8_t *bad = cnn_file(NULL, NULL, &len_plain);
    REQUIRE(bad);
    free(bad);
    nc_calib badcal = cal;
    badcal.beta = 50.0;
    bad = cnn_file(&badcal, NULL, &len_plain);
    REQUIRE(bad);
    /* make it CRC-valid but out of range: rewrite beta to 0 in place */
    nc_mf_reader *rd = NULL;
    REQUIRE(nc_mf_open(bad, len_plain, &rd) == 0);
    const void *data;
    size_t n;
    REQUIRE(nc_mf_get(rd, NC_CALIB_TAG_RULE, NULL, &data, &n) == 0);
    nc_mf_close(rd);
    size_t off = (size_t)((const uint8_t *)data - bad) + 8;     /* beta, f64 LE */
    memset(bad + off, 0, 8);
    const uint32_t crc = nc_crc32(bad, len_plain - 4);
    for (int b = 0; b < 4; b++)
        bad[len_plain - 4 + b] = (uint8_t)(crc >> (8 * b));
    nc_backend *bb = NULL;
    CHECK_INT_EQ(nc_backend_open(&nc_backend_cpu, bad, len_plain, 0, &bb), -EBADMSG);
    free(bad);
    free(fit);
    free(plain);
}

int main(void)
{
    test_family();
    test_fit();
    test_threshold();
    test_ensemble_fit();
    test_select();
    test_sections();
    test_backend();
    return nc_test_finish();
}

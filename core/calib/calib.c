/* core/calib/calib.c — the calibration and ensemble rules and their fitting (see
 * calib.h).
 *
 * Layer: core.  Sums in double: a validation split is 10,000 digits, and the
 * searches compare NLLs that differ in the fourth digit. */
#include "calib.h"

#include <math.h>
#include <string.h>

/* -log of the probability a neocognitron gives a true class that did not
 * fire: a constant (so it does not move beta), large enough to count. */
#define NEO_MISS_NLL 13.815510557964274     /* -log(1e-6) */
/* Floor of a mixed probability in the ensemble's NLL. */
#define ENS_FLOOR 1e-12
#define GOLDEN 0.6180339887498949

static int args_ok(const float *raw, uint32_t n_classes, const float *p)
{
    return raw && p && n_classes > 0 && n_classes <= NC_MF_MAX_CLASSES;
}

static void uniform(float *p, uint32_t n_classes)
{
    for (uint32_t k = 0; k < n_classes; k++)
        p[k] = 1.0f / (float)n_classes;
}

int nc_calib_plain(uint32_t kind, const float *raw, uint32_t n_classes, float *p)
{
    if (!args_ok(raw, n_classes, p))
        return -EINVAL;
    /* The arithmetic of the rule as first shipped (float products, double
     * exp), kept bit for bit so uncalibrated files answer as before. */
    const float beta = (float)NC_CALIB_PLAIN_BETA_CNN;
    if (kind == NC_MF_KIND_CNN) {
        /* Subtract the maximum first so exp never overflows. */
        float m = raw[0];
        for (uint32_t k = 1; k < n_classes; k++)
            if (raw[k] > m)
                m = raw[k];
        double sum = 0.0;
        for (uint32_t k = 0; k < n_classes; k++)
            sum += exp((double)(beta * (raw[k] - m)));
        for (uint32_t k = 0; k < n_classes; k++)
            p[k] = (float)(exp((double)(beta * (raw[k] - m))) / sum);
        return 0;
    }
    if (kind == NC_MF_KIND_NEOCOG) {
        double sum = 0.0;
        for (uint32_t k = 0; k < n_classes; k++)
            sum += raw[k] > 0.0f ? raw[k] : 0.0f;
        if (!(sum > 0.0)) {
            uniform(p, n_classes);
            return -ENOENT;
        }
        for (uint32_t k = 0; k < n_classes; k++)
            p[k] = (float)((raw[k] > 0.0f ? raw[k] : 0.0f) / sum);
        return 0;
    }
    return -EINVAL;
}

/* z[k] = the logit of class k relative to the best one (<= 0), or -INFINITY
 * for a neocognitron class that did not fire.  -ENOENT: nothing fired. */
static int logits(uint32_t kind, const float *raw, uint32_t n_classes, double *z)
{
    if (kind == NC_MF_KIND_CNN) {
        float m = raw[0];
        for (uint32_t k = 1; k < n_classes; k++)
            if (raw[k] > m)
                m = raw[k];
        for (uint32_t k = 0; k < n_classes; k++)
            z[k] = (double)raw[k] - (double)m;
        return 0;
    }
    if (kind != NC_MF_KIND_NEOCOG)
        return -EINVAL;
    float m = 0.0f;
    for (uint32_t k = 0; k < n_classes; k++)
        if (raw[k] > m)
            m = raw[k];
    if (!(m > 0.0f) || !isfinite(m))
        return -ENOENT;
    const double lm = log((double)m);
    for (uint32_t k = 0; k < n_classes; k++)
        z[k] = raw[k] > 0.0f ? log((double)raw[k]) - lm : -INFINITY;
    return 0;
}

int nc_calib_probs(uint32_t kind, double beta, const float *raw, uint32_t n_classes,
                   float *p)
{
    if (!args_ok(raw, n_classes, p) || !(beta > 0.0) || !isfinite(beta))
        return -EINVAL;
    double z[NC_MF_MAX_CLASSES];
    int err = logits(kind, raw, n_classes, z);
    if (err == -ENOENT) {
        uniform(p, n_classes);
        return -ENOENT;
    }
    if (err)
        return err;
    double sum = 0.0;
    for (uint32_t k = 0; k < n_classes; k++) {
        z[k] = exp(beta * z[k]);    /* exp(-inf) = 0: a class that did not fire */
        sum += z[k];
    }
    /* sum >= 1: the best class has z = 0 */
    for (uint32_t k = 0; k < n_classes; k++)
        p[k] = (float)(z[k] / sum);
    return 0;
}

int nc_calib_apply(const nc_calib *c, uint32_t kind, const float *raw, uint32_t n_classes,
                   float *p)
{
    if (c && c->fitted)
        return nc_calib_probs(kind, c->beta, raw, n_classes, p);
    return nc_calib_plain(kind, raw, n_classes, p);
}

int nc_ens_apply(const nc_ens_rule *r, const float *p_cnn, int cnn_ok, const float *p_neo,
                 int neo_ok, uint32_t n_classes, float *p)
{
    if (!p || n_classes == 0 || n_classes > NC_MF_MAX_CLASSES || (cnn_ok && !p_cnn) ||
        (neo_ok && !p_neo))
        return -EINVAL;
    const int weighted = r && r->fitted;
    const double w = weighted ? r->w_cnn : 0.5;
    for (uint32_t k = 0; k < n_classes; k++) {
        if (cnn_ok && neo_ok)
            p[k] = weighted ? (float)(w * p_cnn[k] + (1.0 - w) * p_neo[k])
                            : 0.5f * (p_cnn[k] + p_neo[k]);    /* the plain rule, as before */
        else if (cnn_ok)
            p[k] = p_cnn[k];
        else if (neo_ok)
            p[k] = p_neo[k];
        else
            p[k] = 1.0f / (float)n_classes;
    }
    return cnn_ok || neo_ok ? 0 : -ENOENT;
}

int nc_ens_select(const nc_ens_rule *stored, const nc_model_fp *neo, nc_ens_rule *ret)
{
    if (!ret)
        return -EINVAL;
    memset(ret, 0, sizeof *ret);
    ret->w_cnn = 0.5;
    if (!stored || !stored->fitted)
        return -ENOENT;
    if (!neo || neo->crc != stored->partner.crc || neo->len != stored->partner.len)
        return -ESTALE;
    *ret = *stored;
    return 0;
}

/* ---- fitting -------------------------------------------------------------------- */

static int rows_ok(const float *raw, const uint8_t *labels, uint32_t n, uint32_t n_classes)
{
    if (!raw || !labels || n == 0 || n_classes == 0 || n_classes > NC_MF_MAX_CLASSES)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (labels[i] >= n_classes)
            return 0;
    return 1;
}

/* NLL of one digit; z from logits() (err its result). */
static double digit_nll(double beta, const double *z, int err, uint32_t n_classes,
                        uint32_t label)
{
    if (err)                            /* nothing fired: uniform */
        return log((double)n_classes);
    if (z[label] == -INFINITY)          /* the true class did not fire */
        return NEO_MISS_NLL;
    double sum = 0.0;
    for (uint32_t k = 0; k < n_classes; k++)
        sum += exp(beta * z[k]);
    return log(sum) - beta * z[label];
}

int nc_calib_nll(uint32_t kind, double beta, const float *raw, const uint8_t *labels,
                 uint32_t n, uint32_t n_classes, double *ret_nll)
{
    if (!rows_ok(raw, labels, n, n_classes) || !ret_nll || !(beta > 0.0) || !isfinite(beta) ||
        (kind != NC_MF_KIND_CNN && kind != NC_MF_KIND_NEOCOG))
        return -EINVAL;
    double total = 0.0, z[NC_MF_MAX_CLASSES];
    for (uint32_t i = 0; i < n; i++) {
        int err = logits(kind, raw + (size_t)i * n_classes, n_classes, z);
        total += digit_nll(beta, z, err, n_classes, labels[i]);
    }
    *ret_nll = total / n;
    return 0;
}

/* Golden-section minimum of a unimodal f on [a, b]. */
typedef double (*objective)(double x, void *ctx);

static double golden_min(objective f, void *ctx, double a, double b, double *ret_fx)
{
    double c = b - GOLDEN * (b - a), d = a + GOLDEN * (b - a);
    double fc = f(c, ctx), fd = f(d, ctx);
    for (int it = 0; it < 80 && b - a > 1e-9 * (1.0 + fabs(a) + fabs(b)); it++) {
        if (fc <= fd) {
            b = d;
            d = c;
            fd = fc;
            c = b - GOLDEN * (b - a);
            fc = f(c, ctx);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + GOLDEN * (b - a);
            fd = f(d, ctx);
        }
    }
    /* the ends too: a convex f on a closed range may be least at one */
    double x = fc <= fd ? c : d, fx = fc <= fd ? fc : fd;
    *ret_fx = fx;
    return x;
}

typedef struct beta_ctx {
    uint32_t kind, n, n_classes;
    const float *raw;
    const uint8_t *labels;
} beta_ctx;

static double beta_objective(double u, void *p)
{
    const beta_ctx *c = p;
    double nll = INFINITY;
    nc_calib_nll(c->kind, exp(u), c->raw, c->labels, c->n, c->n_classes, &nll);
    return nll;
}

int nc_calib_fit_beta(uint32_t kind, const float *raw, const uint8_t *labels, uint32_t n,
                      uint32_t n_classes, double *ret_beta, double *ret_nll)
{
    if (!rows_ok(raw, labels, n, n_classes) || !ret_beta ||
        (kind != NC_MF_KIND_CNN && kind != NC_MF_KIND_NEOCOG))
        return -EINVAL;
    beta_ctx c = { kind, n, n_classes, raw, labels };
    const double lo = log(NC_CALIB_BETA_MIN), hi = log(NC_CALIB_BETA_MAX);
    double f, u = golden_min(beta_objective, &c, lo, hi, &f);
    double flo = beta_objective(lo, &c), fhi = beta_objective(hi, &c);
    if (flo < f) {
        u = lo;
        f = flo;
    }
    if (fhi < f) {
        u = hi;
        f = fhi;
    }
    double beta = exp(u);
    /* exp(log(x)) may land a rounding outside the range the reader accepts */
    beta = beta < NC_CALIB_BETA_MIN ? NC_CALIB_BETA_MIN
         : beta > NC_CALIB_BETA_MAX ? NC_CALIB_BETA_MAX : beta;
    *ret_beta = beta;
    if (ret_nll)
        *ret_nll = f;
    return 0;
}

static int by_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int nc_calib_threshold(const float *conf, uint32_t n, double rate, double *ret_t)
{
    if (!conf || n == 0 || !ret_t || !(rate >= 0.0 && rate <= 0.5))
        return -EINVAL;
    const uint32_t k = (uint32_t)(rate * n + 0.5);
    if (k == 0) {
        *ret_t = 0.0;
        return 0;
    }
    float *s = malloc((size_t)n * sizeof *s);
    if (!s)
        return -ENOMEM;
    memcpy(s, conf, (size_t)n * sizeof *s);
    for (uint32_t i = 0; i < n; i++)
        if (!isfinite(s[i])) {
            free(s);
            return -EINVAL;
        }
    qsort(s, n, sizeof *s, by_float);
    /* k <= n/2 + 1 <= n - 1 for n >= 2; n == 1 with k == 1 rejects it */
    double t = k < n ? 0.5 * ((double)s[k - 1] + (double)s[k])
                     : (double)s[n - 1] + 1e-6;
    free(s);
    *ret_t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
    return 0;
}

int nc_ens_nll(double w, const float *p_cnn, const uint8_t *cnn_ok, const float *p_neo,
               const uint8_t *neo_ok, const uint8_t *labels, uint32_t n, uint32_t n_classes,
               double *ret_nll)
{
    if (!rows_ok(p_cnn, labels, n, n_classes) || !p_neo || !ret_nll || !(w >= 0.0 && w <= 1.0))
        return -EINVAL;
    const nc_ens_rule r = { .fitted = 1, .w_cnn = w };
    double total = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        float p[NC_MF_MAX_CLASSES];
        const size_t o = (size_t)i * n_classes;
        nc_ens_apply(&r, p_cnn + o, cnn_ok ? cnn_ok[i] : 1, p_neo + o, neo_ok ? neo_ok[i] : 1,
                     n_classes, p);
        double q = p[labels[i]];
        total -= log(q > ENS_FLOOR ? q : ENS_FLOOR);
    }
    *ret_nll = total / n;
    return 0;
}

typedef struct ens_ctx {
    const float *p_cnn, *p_neo;
    const uint8_t *cnn_ok, *neo_ok, *labels;
    uint32_t n, n_classes;
} ens_ctx;

static double ens_objective(double w, void *p)
{
    const ens_ctx *c = p;
    double nll = INFINITY;
    nc_ens_nll(w, c->p_cnn, c->cnn_ok, c->p_neo, c->neo_ok, c->labels, c->n, c->n_classes,
               &nll);
    return nll;
}

int nc_ens_fit_weight(const float *p_cnn, const uint8_t *cnn_ok, const float *p_neo,
                      const uint8_t *neo_ok, const uint8_t *labels, uint32_t n,
                      uint32_t n_classes, double *ret_w, double *ret_nll)
{
    if (!rows_ok(p_cnn, labels, n, n_classes) || !p_neo || !ret_w)
        return -EINVAL;
    ens_ctx c = { p_cnn, p_neo, cnn_ok, neo_ok, labels, n, n_classes };
    double f, w = golden_min(ens_objective, &c, 0.0, 1.0, &f);
    const double ends[2] = { 0.0, 1.0 };
    for (int e = 0; e < 2; e++) {
        double fe = ens_objective(ends[e], &c);
        if (fe < f) {
            f = fe;
            w = ends[e];
        }
    }
    *ret_w = w;
    if (ret_nll)
        *ret_nll = f;
    return 0;
}

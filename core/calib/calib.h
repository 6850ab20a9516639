/* core/calib/calib.h — calibrated probabilities fitted on validation data, the
 * ensemble rule, and the reject threshold; and their model-file sections.
 *
 * Layer: core (pure C11; no I/O).  Error codes as in common.h.
 *
 * ---- The rule ---------------------------------------------------------------
 *
 * One parameter per model, an inverse temperature beta > 0:
 *   CNN:          p = softmax(beta * y), y the raw outputs (scaled tanh, or a
 *                 committee's mean of them);
 *   neocognitron: p_k = s_k^beta / sum_j s_j^beta over the classes with
 *                 s_k > 0 (UC4 responses or interpolating-vector cosines),
 *                 i.e. softmax(beta * log s); classes that did not fire get
 *                 p = 0; when nothing fired p is uniform and -ENOENT says
 *                 "no opinion".
 * The plain (provisional) rule of earlier releases is the same family with
 * beta = NC_CALIB_PLAIN_BETA_CNN (3) and NC_CALIB_PLAIN_BETA_NEOCOG (1),
 * computed with exactly the old arithmetic; a file without a calibration
 * section keeps it.
 *
 * beta is fitted by minimising the mean negative log-likelihood of the true
 * class on the validation split (MNIST training digits 50000-59999; never the
 * test set).  NLL(beta) is convex in beta for both forms (log-sum-exp of
 * lines), so a golden-section search over log beta finds the minimum.  A
 * digit whose true class did not fire (neocognitron) or on which nothing
 * fired adds a constant, so it cannot pull beta either way.
 *
 * ---- Reject threshold ---------------------------------------------------------
 *
 * Confidence = the calibrated probability of the answer (the largest p).  The
 * threshold stored with a rule is the one that rejects (confidence < t) a
 * chosen fraction of the validation digits, 1 % by default: t is half-way
 * between the k-th and (k+1)-th smallest validation confidence, k = round(rate
 * * n).  Applied elsewhere it rejects about that fraction (ties: fewer).
 *
 * ---- Ensemble (CNN + neocognitron) -------------------------------------------
 *
 * p = w * p_cnn + (1 - w) * p_neo on the two calibrated vectors, w in [0, 1]
 * chosen on validation by the same NLL (convex in w: golden section); when
 * one model has no opinion the other's vector alone, as in the plain rule
 * (w = 0.5).  A fitted rule belongs to one pair of files: it is stored in the
 * CNN file with the fingerprint (nc_model_fp) of the neocognitron file it was
 * fitted with, and nc_ens_select gives the plain rule for any other file. */
#ifndef NC_CALIB_H
#define NC_CALIB_H

#include "common.h"
#include "modelfile.h"

#define NC_CALIB_PLAIN_BETA_CNN 3.0
#define NC_CALIB_PLAIN_BETA_NEOCOG 1.0
/* The search range of beta (both ends are refused in a file as well). */
#define NC_CALIB_BETA_MIN 1e-3
#define NC_CALIB_BETA_MAX 1e4
/* Default fraction of validation digits the reject threshold rejects. */
#define NC_CALIB_REJECT_RATE 0.01

/* Sections (modelfile.h tags; other modules must not reuse them):
 *   CALB  f64[8]  the model's rule: version 1, beta, reject threshold, reject
 *                 rate, validation digits, mean NLL before (plain rule) and
 *                 after, validation error of the model
 *   CALT  text    how it was fitted (command, data), for people
 *   ENSF  u32[3]  the partner neocognitron file: CRC-32 trailer, length
 *                 low / high 32 bits
 *   ENSB  f64[8]  the ensemble rule: version 1, w_cnn, reject threshold,
 *                 reject rate, validation digits, mean NLL of the plain
 *                 (w = 0.5) and fitted rule, validation error of the fitted
 *   ENST  text    how it was fitted
 * ENSF and ENSB come together or not at all. */
#define NC_CALIB_TAG_RULE NC_MF_TAG('C', 'A', 'L', 'B')
#define NC_CALIB_TAG_NOTE NC_MF_TAG('C', 'A', 'L', 'T')
#define NC_ENS_TAG_PARTNER NC_MF_TAG('E', 'N', 'S', 'F')
#define NC_ENS_TAG_RULE NC_MF_TAG('E', 'N', 'S', 'B')
#define NC_ENS_TAG_NOTE NC_MF_TAG('E', 'N', 'S', 'T')

typedef struct nc_calib {
    int fitted;                 /* 0: the plain rule (no CALB section) */
    double beta;
    double reject_threshold;    /* 0 when no threshold was chosen */
    double reject_rate;
    double n_valid;
    double nll_plain, nll_fitted;
    double valid_error;
} nc_calib;

/* Which file a model came from: the CRC-32 trailer of its file image (which
 * nc_mf_open has checked) and its length. */
typedef struct nc_model_fp {
    uint32_t crc;
    uint64_t len;
} nc_model_fp;

typedef struct nc_ens_rule {
    int fitted;                 /* 0: the plain rule */
    nc_model_fp partner;        /* the neocognitron file it was fitted with */
    double w_cnn;
    double reject_threshold;
    double reject_rate;
    double n_valid;
    double nll_plain, nll_fitted;
    double valid_error;
} nc_ens_rule;

/* ---- applying ---------------------------------------------------------------- */

/* The rule of the family above with inverse temperature beta (> 0) for a
 * model of kind (nc_mf_kind: CNN or NEOCOG) on raw[n_classes] into p.
 * -ENOENT: a neocognitron with nothing fired (p uniform); -EINVAL for bad
 * arguments.  p is written in every non-EINVAL case. */
int nc_calib_probs(uint32_t kind, double beta, const float *raw, uint32_t n_classes,
                   float *p);

/* The plain rule (the old nc_backend_calibrate, unchanged). */
int nc_calib_plain(uint32_t kind, const float *raw, uint32_t n_classes, float *p);

/* c's rule when c is fitted, else the plain rule (c may be NULL). */
int nc_calib_apply(const nc_calib *c, uint32_t kind, const float *raw, uint32_t n_classes,
                   float *p);

/* Ensemble of two calibrated vectors with r's weight when r is fitted, else
 * the plain mean (r may be NULL).  One model without an opinion: the other's
 * vector; neither: uniform and -ENOENT. */
int nc_ens_apply(const nc_ens_rule *r, const float *p_cnn, int cnn_ok, const float *p_neo,
                 int neo_ok, uint32_t n_classes, float *p);

/* The rule to use for a CNN file's stored rule *stored and the
 * neocognitron actually loaded (fingerprint neo): *stored if it is fitted
 * and fitted with that very file, else the plain rule.  Returns 0 when the
 * stored rule applies, -ENOENT when there is none (plain, nothing to say),
 * -ESTALE when there is one for another neocognitron file (plain; the
 * caller may log that). */
int nc_ens_select(const nc_ens_rule *stored, const nc_model_fp *neo, nc_ens_rule *ret);

/* 1 if confidence conf falls below rule threshold t (t <= 0: never). */
static inline int nc_calib_rejects(double threshold, float conf)
{
    return threshold > 0.0 && (double)conf < threshold;
}

/* ---- fitting (tools) ------------------------------------------------------------ */

/* Mean NLL of labels[n] under nc_calib_probs(kind, beta) of raw[n][n_classes]
 * (see above for the constant terms). */
int nc_calib_nll(uint32_t kind, double beta, const float *raw, const uint8_t *labels,
                 uint32_t n, uint32_t n_classes, double *ret_nll);

/* The beta in [NC_CALIB_BETA_MIN, NC_CALIB_BETA_MAX] that minimises it, and
 * that NLL.  -EINVAL for bad arguments or a label >= n_classes. */
int nc_calib_fit_beta(uint32_t kind, const float *raw, const uint8_t *labels, uint32_t n,
                      uint32_t n_classes, double *ret_beta, double *ret_nll);

/* Threshold that rejects round(rate * n) of conf[n] (see above); rate in
 * [0, 0.5].  0 when that is no digit. */
int nc_calib_threshold(const float *conf, uint32_t n, double rate, double *ret_t);

/* Mean NLL of the weighted mean with weight w (p floored at 1e-12), of
 * calibrated rows p_cnn[n][K], p_neo[n][K] and opinion flags (NULL: all 1). */
int nc_ens_nll(double w, const float *p_cnn, const uint8_t *cnn_ok, const float *p_neo,
               const uint8_t *neo_ok, const uint8_t *labels, uint32_t n, uint32_t n_classes,
               double *ret_nll);

/* The w in [0, 1] that minimises nc_ens_nll, and that NLL. */
int nc_ens_fit_weight(const float *p_cnn, const uint8_t *cnn_ok, const float *p_neo,
                      const uint8_t *neo_ok, const uint8_t *labels, uint32_t n,
                      uint32_t n_classes, double *ret_w, double *ret_nll);

/* ---- model-file sections (calib_file.c) ------------------------------------------ */

/* The fingerprint of a file image that nc_mf_open accepted (-EBADMSG if it
 * is too short to be one). */
int nc_model_fingerprint(const uint8_t *buf, size_t len, nc_model_fp *ret_fp);

/* Read the rule sections of r into *ret_cal and *ret_ens (either may be
 * NULL); absent sections give fitted = 0.  A malformed section (wrong type
 * or count, version, beta outside the range, threshold outside [0, 1], rate
 * outside [0, 0.5], w outside [0, 1], ENSF without ENSB or the reverse) is
 * -EBADMSG: a file must not silently lose its calibration. */
int nc_calib_read(const nc_mf_reader *r, nc_calib *ret_cal, nc_ens_rule *ret_ens);

/* Append the sections of the fitted rules among cal and ens (either may be
 * NULL or not fitted: nothing written for it), with their notes (text, may
 * be NULL or ""). */
int nc_calib_write(nc_mf_writer *w, const nc_calib *cal, const char *cal_note,
                   const nc_ens_rule *ens, const char *ens_note);

/* 1 for a tag nc_calib_write owns (so a tool rewriting a file can replace
 * them). */
int nc_calib_is_tag(uint32_t tag);

#endif

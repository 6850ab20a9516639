/* core/calib/calib_file.c — the calibration and ensemble sections of a model file
 * (see calib.h for the tags and their layout).
 *
 * Layer: core.  Every value is checked on the way in: a file is external
 * input, and a beta of 1e300 or a weight of -3 would silently give nonsense
 * probabilities for every request. */
#include "calib.h"

#include <math.h>
#include <string.h>

#define RULE_LEN 8u
#define RULE_VERSION 1.0

int nc_model_fingerprint(const uint8_t *buf, size_t len, nc_model_fp *ret_fp)
{
    if (!buf || !ret_fp)
        return -EINVAL;
    if (len < 36)           /* a header and a trailer at least */
        return -EBADMSG;
    const uint8_t *t = buf + len - 4;
    ret_fp->crc = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 |
                  (uint32_t)t[3] << 24;
    ret_fp->len = (uint64_t)len;
    return 0;
}

int nc_calib_is_tag(uint32_t tag)
{
    return tag == NC_CALIB_TAG_RULE || tag == NC_CALIB_TAG_NOTE || tag == NC_ENS_TAG_PARTNER ||
           tag == NC_ENS_TAG_RULE || tag == NC_ENS_TAG_NOTE;
}

/* An f64[RULE_LEN] section: 0, -ENOENT when absent, -EBADMSG when malformed. */
static int get_rule(const nc_mf_reader *r, uint32_t tag, double *v)
{
    size_t n;
    int err = nc_mf_count(r, tag, NC_MF_TYPE_F64, &n);
    if (err == -ENOENT)
        return err;
    if (err || n != RULE_LEN || nc_mf_get_f64(r, tag, v, RULE_LEN) || v[0] != RULE_VERSION)
        return -EBADMSG;
    return 0;
}

static int in01(double x)
{
    return x >= 0.0 && x <= 1.0;
}

/* The figures common to both rules: threshold, rate, digits, NLLs, error. */
static int stats_ok(const double *v)
{
    return in01(v[2]) && v[3] >= 0.0 && v[3] <= 0.5 && v[4] >= 0.0 && v[4] <= 1e9 &&
           v[5] >= 0.0 && v[6] >= 0.0 && in01(v[7]);
}

int nc_calib_read(const nc_mf_reader *r, nc_calib *ret_cal, nc_ens_rule *ret_ens)
{
    if (!r)
        return -EINVAL;
    nc_calib cal = { 0 };
    nc_ens_rule ens = { 0 };
    ens.w_cnn = 0.5;
    double v[RULE_LEN];
    int err = get_rule(r, NC_CALIB_TAG_RULE, v);
    if (err == 0) {
        if (!(v[1] >= NC_CALIB_BETA_MIN && v[1] <= NC_CALIB_BETA_MAX) || !stats_ok(v))
            return -EBADMSG;
        cal = (nc_calib){ 1, v[1], v[2], v[3], v[4], v[5], v[6], v[7] };
    } else if (err != -ENOENT) {
        return err;
    }
    err = get_rule(r, NC_ENS_TAG_RULE, v);
    size_t n_fp;
    int have_fp = nc_mf_count(r, NC_ENS_TAG_PARTNER, NC_MF_TYPE_U32, &n_fp);
    if (have_fp != -ENOENT && (have_fp || n_fp != 3))
        return -EBADMSG;
    if ((err == -ENOENT) != (have_fp == -ENOENT))
        return -EBADMSG;        /* a rule without its partner, or the reverse */
    if (err == 0) {
        uint32_t fp[3];
        if (nc_mf_get_u32(r, NC_ENS_TAG_PARTNER, fp, 3) || !in01(v[1]) || !stats_ok(v))
            return -EBADMSG;
        ens = (nc_ens_rule){ 1, { fp[0], (uint64_t)fp[1] | (uint64_t)fp[2] << 32 },
                             v[1], v[2], v[3], v[4], v[5], v[6], v[7] };
    } else if (err != -ENOENT) {
        return err;
    }
    if (ret_cal)
        *ret_cal = cal;
    if (ret_ens)
        *ret_ens = ens;
    return 0;
}

static int put_note(nc_mf_writer *w, uint32_t tag, const char *note)
{
    return note && note[0] ? nc_mf_put_str(w, tag, note) : 0;
}

int nc_calib_write(nc_mf_writer *w, const nc_calib *cal, const char *cal_note,
                   const nc_ens_rule *ens, const char *ens_note)
{
    if (!w)
        return -EINVAL;
    int err;
    if (cal && cal->fitted) {
        const double v[RULE_LEN] = { RULE_VERSION, cal->beta, cal->reject_threshold,
                                     cal->reject_rate, cal->n_valid, cal->nll_plain,
                                     cal->nll_fitted, cal->valid_error };
        if (!(v[1] >= NC_CALIB_BETA_MIN && v[1] <= NC_CALIB_BETA_MAX) || !stats_ok(v))
            return -EINVAL;
        if ((err = nc_mf_put_f64(w, NC_CALIB_TAG_RULE, v, RULE_LEN)) ||
            (err = put_note(w, NC_CALIB_TAG_NOTE, cal_note)))
            return err;
    }
    if (ens && ens->fitted) {
        const double v[RULE_LEN] = { RULE_VERSION, ens->w_cnn, ens->reject_threshold,
                                     ens->reject_rate, ens->n_valid, ens->nll_plain,
                                     ens->nll_fitted, ens->valid_error };
        const uint32_t fp[3] = { ens->partner.crc, (uint32_t)ens->partner.len,
                                 (uint32_t)(ens->partner.len >> 32) };
        if (!in01(v[1]) || !stats_ok(v))
            return -EINVAL;
        if ((err = nc_mf_put_u32(w, NC_ENS_TAG_PARTNER, fp, 3)) ||
            (err = nc_mf_put_f64(w, NC_ENS_TAG_RULE, v, RULE_LEN)) ||
            (err = put_note(w, NC_ENS_TAG_NOTE, ens_note)))
            return err;
    }
    return 0;
}

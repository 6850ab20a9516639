/* core/neocog/neocog_cascade.c — a committee that may answer from its first
 * member alone (see neocog.h, "the cascade").
 *
 * Layer: core, byte buffers only.  The sections are read and checked here;
 * the engines stage them with core/backend/cascade.c: the one-view stage's
 * view (nc_neocog_cascade_view_decides), then the first member's other
 * views (nc_neocog_cascade_decides), and the others only for the digits it
 * leaves. */
#include "neocog_impl.h"

#include <math.h>

int nc_neocog_cascade_is_tag(uint32_t tag)
{
    return tag == NC_NEOCOG_TAG_CASM || tag == NC_NEOCOG_TAG_CAST ||
           tag == NC_NEOCOG_TAG_CAVV || tag == NC_NEOCOG_TAG_CAVT;
}

/* The value checks the reader and the writer share: NULL or the phrase. */
static const char *values_bad(double threshold, double beta)
{
    if (!(threshold >= 0.0 && threshold <= 1.0))
        return "cascade threshold outside [0, 1]";
    if (!(beta > 0.0 && beta <= NC_NEOCOG_CASCADE_MAX_BETA))
        return "cascade beta outside (0, 1e4]";
    return NULL;
}

int nc_neocog_cascade_read(const nc_mf_reader *r, uint32_t n_members, nc_neocog_cascade *ret,
                           const char **ret_why)
{
    const char *why = NULL;
    if (!r || !ret)
        return -EINVAL;
    *ret = (nc_neocog_cascade){ 0 };
    const int has_m = nc_mf_get(r, NC_NEOCOG_TAG_CASM, NULL, NULL, NULL) != -ENOENT;
    const int has_t = nc_mf_get(r, NC_NEOCOG_TAG_CAST, NULL, NULL, NULL) != -ENOENT;
    const int has_vv = nc_mf_get(r, NC_NEOCOG_TAG_CAVV, NULL, NULL, NULL) != -ENOENT;
    const int has_vt = nc_mf_get(r, NC_NEOCOG_TAG_CAVT, NULL, NULL, NULL) != -ENOENT;
    if (!has_m && !has_t && !has_vv && !has_vt)
        return 0;
    uint32_t first = 0, view = 0;
    double v[2] = { 0.0, 0.0 }, vt[2] = { 0.0, 0.0 };
    if (has_m != has_t)
        why = "cascade: one of its two sections (NCSM, NCST) is missing";
    else if (!has_m)
        why = "cascade view stage (NCVV, NCVT) without the cascade (NCSM, NCST)";
    else if (has_vv != has_vt)
        why = "cascade view stage: one of its two sections (NCVV, NCVT) is missing";
    else if (n_members < 2)
        why = "cascade in a file of one network";
    else if (nc_mf_get_u32(r, NC_NEOCOG_TAG_CASM, &first, 1))
        why = "cascade member section (NCSM) is not one u32";
    else if (nc_mf_get_f64(r, NC_NEOCOG_TAG_CAST, v, 2))
        why = "cascade rule section (NCST) is not two finite f64";
    else if (first >= n_members)
        why = "cascade first member past the committee's members";
    else if (has_vv && nc_mf_get_u32(r, NC_NEOCOG_TAG_CAVV, &view, 1))
        why = "cascade view section (NCVV) is not one u32";
    else if (has_vv && nc_mf_get_f64(r, NC_NEOCOG_TAG_CAVT, vt, 2))
        why = "cascade view rule section (NCVT) is not two finite f64";
    else if (has_vv && view >= NC_PREP_MAX_VIEWS)
        why = "cascade view past the most views a file may have";
    else if (!(why = values_bad(v[0], v[1])) && has_vv && values_bad(vt[0], vt[1]))
        why = "cascade view rule: threshold outside [0, 1] or beta outside (0, 1e4]";
    if (ret_why)
        *ret_why = why;
    if (why)
        return -EBADMSG;
    *ret = (nc_neocog_cascade){ .on = 1, .first = first, .threshold = v[0], .beta = v[1] };
    if (has_vv) {
        ret->view_on = 1;
        ret->view = view;
        ret->view_threshold = vt[0];
        ret->view_beta = vt[1];
    }
    return 0;
}

const char *nc_neocog_cascade_view_why(const nc_neocog_cascade *c, const uint32_t *view_mask)
{
    if (!c || !c->on || !c->view_on)
        return NULL;
    const uint32_t mask = view_mask ? view_mask[c->first] : 1u;
    if (c->view >= 32 || !(mask >> c->view & 1u))
        return "cascade view is not one of the first member's views";
    if ((mask & (mask - 1u)) == 0)
        return "cascade view stage on a first member with one view";
    return NULL;
}

int nc_neocog_cascade_write(nc_mf_writer *w, const nc_neocog_cascade *c)
{
    if (!w || !c)
        return -EINVAL;
    if (!c->on)
        return 0;
    if (values_bad(c->threshold, c->beta) ||
        (c->view_on && (c->view >= NC_PREP_MAX_VIEWS ||
                        values_bad(c->view_threshold, c->view_beta))))
        return -EINVAL;
    const double v[2] = { c->threshold, c->beta };
    int err = nc_mf_put_u32(w, NC_NEOCOG_TAG_CASM, &c->first, 1);
    if (!err)
        err = nc_mf_put_f64(w, NC_NEOCOG_TAG_CAST, v, 2);
    if (!err && c->view_on) {
        const double vt[2] = { c->view_threshold, c->view_beta };
        if (!(err = nc_mf_put_u32(w, NC_NEOCOG_TAG_CAVV, &c->view, 1)))
            err = nc_mf_put_f64(w, NC_NEOCOG_TAG_CAVT, vt, 2);
    }
    return err;
}

double nc_neocog_cascade_confidence(double beta, const float *score, uint32_t n_classes)
{
    float m = 0.0f;
    for (uint32_t k = 0; k < n_classes; k++)
        if (score[k] > m)
            m = score[k];
    if (!(m > 0.0f) || !isfinite(m))
        return 0.0;
    /* sum over the fired classes of (s_k / m)^beta: the best one adds 1 */
    const double lm = log((double)m);
    double sum = 0.0;
    for (uint32_t k = 0; k < n_classes; k++)
        if (score[k] > 0.0f)
            sum += exp(beta * (log((double)score[k]) - lm));
    return 1.0 / sum;
}

int nc_neocog_cascade_decides(const nc_neocog_cascade *c, const float *score,
                              uint32_t n_classes)
{
    return c && c->on &&
           nc_neocog_cascade_confidence(c->beta, score, n_classes) >= c->threshold;
}

int nc_neocog_cascade_view_decides(const nc_neocog_cascade *c, const float *score,
                                   uint32_t n_classes)
{
    return c && c->on && c->view_on &&
           nc_neocog_cascade_confidence(c->view_beta, score, n_classes) >= c->view_threshold;
}

int nc_neocog_cascade_rewrite(const uint8_t *buf, size_t len, const nc_neocog_cascade *c,
                              uint8_t **ret_buf, size_t *ret_len)
{
    if (!buf || !c || !ret_buf || !ret_len)
        return -EINVAL;
    nc_mf_reader *r = NULL;
    nc_mf_writer *w = NULL;
    int err = nc_mf_open(buf, len, &r);
    if (!err && nc_mf_kind_of(r) != NC_MF_KIND_NEOCOG)
        err = -EINVAL;
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
    if (!err)
        err = nc_neocog_cascade_write(w, c);
    if (!err)
        err = nc_mf_finish(w, ret_buf, ret_len);
    nc_mf_writer_free(w);
    nc_mf_close(r);
    return err;
}

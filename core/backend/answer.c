/* core/backend/answer.c — see answer.h. */
#include "answer.h"

#include <string.h>

#include "segment.h"

double nc_answer_threshold(double configured, double requested)
{
    return requested != 0.0 ? requested : configured;
}

void nc_answer_rank(const float *prob, uint32_t n_classes, uint32_t k, uint8_t *top)
{
    /* Selection over at most NC_MF_MAX_CLASSES classes: k passes, each
     * taking the best class not yet taken (k is small: top-k candidates). */
    uint8_t taken[NC_MF_MAX_CLASSES] = { 0 };
    if (n_classes > NC_MF_MAX_CLASSES)
        n_classes = NC_MF_MAX_CLASSES;
    if (k > n_classes)
        k = n_classes;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t best = n_classes;
        for (uint32_t j = 0; j < n_classes; j++)
            if (!taken[j] && (best == n_classes || prob[j] > prob[best]))
                best = j;
        taken[best] = 1;
        top[i] = (uint8_t)best;
    }
}

double nc_answer_threshold_in_force(const nc_answer_in *in)
{
    if (!in || in->threshold < 0.0 || in->threshold != in->threshold)
        return 0.0;
    if (in->threshold > 0.0)
        return in->threshold;
    if (in->model == NC_ANSWER_MODEL_ENSEMBLE)
        return in->rule && in->rule->fitted && in->rule->reject_threshold > 0.0
               ? in->rule->reject_threshold : 0.0;
    if (in->model == NC_ANSWER_MODEL_CNN || in->model == NC_ANSWER_MODEL_NEOCOG)
        return nc_backend_reject_threshold(
            in->be[in->model == NC_ANSWER_MODEL_CNN ? NC_ANSWER_NET_CNN : NC_ANSWER_NET_NEOCOG]);
    return 0.0;
}

/* The answer restricted to mask's classes: the others' probability 0, the
 * rest renormalised, the best class the likeliest allowed one (none when
 * no allowed class has any probability, or there was no opinion). */
static void apply_mask(const uint8_t *mask, uint32_t n_classes, nc_answer *a)
{
    double sum = 0.0;
    for (uint32_t k = 0; k < n_classes; k++) {
        if (!mask[k])
            a->prob[k] = 0.0f;
        sum += a->prob[k];
    }
    const int had_opinion = a->best >= 0;
    a->best = -1;
    if (!(sum > 0.0))
        return;
    for (uint32_t k = 0; k < n_classes; k++) {
        a->prob[k] = (float)(a->prob[k] / sum);
        if (had_opinion && mask[k] && (a->best < 0 || a->prob[k] > a->prob[a->best]))
            a->best = (int32_t)k;
    }
}

int nc_answer_compute(const nc_answer_in *in, nc_answer *ret)
{
    if (!in || !ret || in->model < NC_ANSWER_MODEL_CNN || in->model > NC_ANSWER_MODEL_ENSEMBLE)
        return -EINVAL;
    const int need[NC_ANSWER_NETS] = {
        in->model != NC_ANSWER_MODEL_NEOCOG,
        in->model != NC_ANSWER_MODEL_CNN,
    };
    uint32_t n_classes = 0;
    for (int s = 0; s < NC_ANSWER_NETS; s++) {
        if (!need[s])
            continue;
        if (!in->be[s] || !in->raw[s])
            return -EINVAL;
        uint32_t n = in->be[s]->info.n_classes;
        if (n == 0 || n > NC_MF_MAX_CLASSES || (n_classes && n != n_classes))
            return -EINVAL;
        n_classes = n;
    }
    /* Each network's calibrated vector and whether it has an opinion: it
     * saw ink and its rule did not say "nothing fired" (-ENOENT). */
    float p[NC_ANSWER_NETS][NC_MF_MAX_CLASSES];
    int opinion[NC_ANSWER_NETS] = { 0, 0 }, any_ink = 0;
    for (int s = 0; s < NC_ANSWER_NETS; s++) {
        if (!need[s])
            continue;
        int err = nc_backend_probs(in->be[s], in->raw[s], p[s]);
        if (err && err != -ENOENT)
            return err;
        opinion[s] = in->ink[s] && !err;
        any_ink |= in->ink[s] != 0;
    }
    nc_answer a;
    memset(&a, 0, sizeof a);
    a.n_classes = n_classes;
    a.best = -1;
    if (in->model == NC_ANSWER_MODEL_ENSEMBLE) {
        nc_ens_apply(in->rule, p[NC_ANSWER_NET_CNN], opinion[NC_ANSWER_NET_CNN],
                     p[NC_ANSWER_NET_NEOCOG], opinion[NC_ANSWER_NET_NEOCOG], n_classes,
                     a.prob);
        memcpy(a.scores, a.prob, n_classes * sizeof *a.scores);
        if (opinion[NC_ANSWER_NET_CNN] || opinion[NC_ANSWER_NET_NEOCOG]) {
            a.best = 0;
            for (uint32_t k = 1; k < n_classes; k++)
                if (a.prob[k] > a.prob[a.best])
                    a.best = (int32_t)k;
        }
    } else {
        const int s = need[NC_ANSWER_NET_CNN] ? NC_ANSWER_NET_CNN : NC_ANSWER_NET_NEOCOG;
        const nc_backend *be = in->be[s];
        memcpy(a.prob, p[s], n_classes * sizeof *a.prob);
        memcpy(a.scores, in->raw[s], n_classes * sizeof *a.scores);
        if (opinion[s])
            a.best = nc_backend_label(be->kind, in->raw[s], n_classes);
    }
    if (in->mask)
        apply_mask(in->mask, n_classes, &a);
    a.threshold = nc_answer_threshold_in_force(in);
    a.confidence = a.best >= 0 ? a.prob[a.best] : 0.0f;
    a.label = a.best;
    if (a.best < 0)
        a.reason = any_ink ? NC_ANSWER_REASON_NO_RESPONSE : NC_ANSWER_REASON_NO_INK;
    else if (nc_calib_rejects(a.threshold, a.confidence))
        a.reason = NC_ANSWER_REASON_BELOW_THRESHOLD;
    if (a.reason != NC_ANSWER_REASON_NONE)
        a.label = -1;
    uint32_t allowed = n_classes;
    float rank_by[NC_MF_MAX_CLASSES];
    memcpy(rank_by, a.prob, n_classes * sizeof *rank_by);
    for (uint32_t k = 0; in->mask && k < n_classes; k++)
        if (!in->mask[k]) {
            rank_by[k] = -1.0f;     /* after every allowed class, even at 0 */
            allowed--;
        }
    a.n_top = in->top_k ? in->top_k : 1;
    if (a.n_top > allowed)
        a.n_top = allowed;
    nc_answer_rank(rank_by, n_classes, a.n_top, a.top);
    *ret = a;
    return 0;
}

uint32_t nc_answer_segment_reason(uint32_t reason, uint32_t segment_flags)
{
    if (reason == NC_ANSWER_REASON_BELOW_THRESHOLD &&
        (segment_flags & (NC_SEGMENT_DIGIT_MERGED | NC_SEGMENT_DIGIT_SPLIT)))
        return NC_ANSWER_REASON_AMBIGUOUS_SEGMENTATION;
    return reason;
}

const char *nc_answer_reason_text(uint32_t reason)
{
    switch (reason) {
    case NC_ANSWER_REASON_NONE: return "none";
    case NC_ANSWER_REASON_NO_INK: return "no ink";
    case NC_ANSWER_REASON_BELOW_THRESHOLD: return "below threshold";
    case NC_ANSWER_REASON_AMBIGUOUS_SEGMENTATION: return "ambiguous segmentation";
    case NC_ANSWER_REASON_NO_RESPONSE: return "no response";
    }
    return "?";
}

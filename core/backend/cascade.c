/* core/backend/cascade.c — the cascade's stages over a batch (cascade.h),
 * and the committee's sums every engine forms (backend.h). */
#include "cascade.h"

#include <string.h>

#include "backend.h"

/* The committee's sums (backend.h) live here, beside the staging that
 * forms most of them. */
void nc_backend_member_add(float *acc, const float *score, uint32_t n_classes)
{
    for (uint32_t k = 0; k < n_classes; k++)
        acc[k] += score[k];
}

void nc_backend_member_mean(float *acc, uint32_t n_scores, uint32_t n_classes)
{
    for (uint32_t k = 0; k < n_classes; k++)
        acc[k] /= (float)n_scores;
}

/* The forward's fill (when there is one) of the views in mask of the d
 * digits, numbered as the forward's images. */
static int fill(const nc_backend_cascade_ops *ops, const nc_backend_cascade_buf *buf,
                uint32_t mask, const uint32_t *digit, uint32_t d)
{
    if (!ops->fill)
        return 0;
    for (uint32_t k = 0; k < d; k++)
        buf->image[k] = ops->image0 + digit[k];
    return ops->fill->fill(ops->fill->ctx, mask, buf->image, d);
}

/* ops->views after the fill of the same views. */
static int views(const nc_backend_cascade_ops *ops, const nc_backend_cascade_buf *buf,
                 uint32_t m, uint32_t mask, const uint32_t *digit, uint32_t d, float *dst)
{
    int err = fill(ops, buf, mask, digit, d);
    return err ? err : ops->views(ops->ctx, m, mask, digit, d, dst);
}

static uint32_t views_of(uint32_t mask)
{
    return (uint32_t)__builtin_popcount(mask);
}

int nc_backend_cascade_run(const nc_neocog_cascade *cas, const uint32_t *view_mask,
                           uint32_t n_members, uint32_t n_classes, uint32_t n,
                           const nc_backend_cascade_ops *ops,
                           const nc_backend_cascade_buf *buf, float *out)
{
    const uint32_t K = n_classes, f = cas->first, slice = ops->slice;
    const uint32_t mf = view_mask[f], vf = views_of(mf);
    const uint32_t one = cas->view_on ? 1u << cas->view : 0u;   /* the stage's view bit */
    const uint32_t at = views_of(mf & (one - 1u));              /* its place among f's */
    const size_t row = (size_t)vf * K;                          /* floats of first[i] */
    uint32_t *digit = buf->digit;
    /* digit[0..nu): the digits still open, shrunk in place stage by stage
     * (a digit kept is written at or before where it was read) */
    uint32_t nu = n;
    for (uint32_t i = 0; i < n; i++)
        digit[i] = i;
    if (one) {
        uint32_t left = 0;
        for (uint32_t u0 = 0; u0 < nu; u0 += slice) {
            const uint32_t d = nu - u0 < slice ? nu - u0 : slice;
            int err = views(ops, buf, f, one, digit + u0, d, buf->score);
            if (err)
                return err;
            for (uint32_t k = 0; k < d; k++) {
                const uint32_t i = digit[u0 + k];
                const float *s = buf->score + (size_t)k * K;
                memcpy(buf->first + i * row + (size_t)at * K, s, K * sizeof *s);
                float *o = out + (size_t)i * K;
                memcpy(o, s, K * sizeof *o);
                nc_backend_member_mean(o, 1, K);
                if (!nc_neocog_cascade_view_decides(cas, o, K))
                    digit[left++] = i;
            }
        }
        nu = left;
    }
    /* the first member's other views, then its mean over all of them */
    const uint32_t rest = mf & ~one, vr = views_of(rest);
    uint32_t left = 0;
    for (uint32_t u0 = 0; u0 < nu; u0 += slice) {
        const uint32_t d = nu - u0 < slice ? nu - u0 : slice;
        int err = views(ops, buf, f, rest, digit + u0, d, buf->score);
        if (err)
            return err;
        for (uint32_t k = 0; k < d; k++) {
            const uint32_t i = digit[u0 + k];
            float *fs = buf->first + i * row;
            for (uint32_t j = 0, r = 0; j < vf; j++)
                if (!one || j != at)
                    memcpy(fs + (size_t)j * K, buf->score + ((size_t)k * vr + r++) * K,
                           K * sizeof *fs);
            float *o = out + (size_t)i * K;
            memset(o, 0, K * sizeof *o);
            for (uint32_t j = 0; j < vf; j++)
                nc_backend_member_add(o, fs + (size_t)j * K, K);
            nc_backend_member_mean(o, vf, K);
            if (!nc_neocog_cascade_decides(cas, o, K))
                digit[left++] = i;
        }
    }
    nu = left;
    /* the first member's scores of the digits left, packed in their order
     * (digit[j] >= j, ascending: each row moves down or stays) */
    for (uint32_t j = 0; j < nu; j++)
        if (digit[j] != j)
            memmove(buf->first + j * row, buf->first + digit[j] * row, row * sizeof(float));
    uint32_t others = 0;            /* the other members' views */
    for (uint32_t m = 0; m < n_members; m++)
        if (m != f)
            others |= view_mask[m];
    for (uint32_t u0 = 0; u0 < nu; u0 += slice) {
        const uint32_t d = nu - u0 < slice ? nu - u0 : slice;
        int err = fill(ops, buf, others, digit + u0, d);
        if (!err)
            err = ops->others(ops->ctx, f, digit + u0, d, buf->first + u0 * row, buf->out);
        if (err)
            return err;
        for (uint32_t k = 0; k < d; k++)
            memcpy(out + (size_t)digit[u0 + k] * K, buf->out + (size_t)k * K, K * sizeof *out);
    }
    return 0;
}

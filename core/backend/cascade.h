/* core/backend/cascade.h — a neocognitron committee's cascade (core/neocog/
 * neocog.h, "the cascade") staged over a batch of digits, once for every
 * engine: which digits each stage runs, which digits it answers, and the
 * sums that answer them.  An engine only runs members on lists of digits
 * (nc_backend_cascade_ops), so the CPU and GPU engines answer with the same
 * code and CI tests the staging the GPU runs.
 *
 * Layer: core (no I/O, no CUDA).  The stages:
 *  1. the one-view stage (when the file has one): the first member on its
 *     stage view of every digit; a digit that view decides is answered
 *     from it (its scores as a mean of one);
 *  2. the first member's other views on the digits left; its mean over all
 *     its views (the stage's scores at their place) answers those it decides;
 *  3. the other members on the digits still left; the committee's mean,
 *     the first member's scores added at its place in member order, so the
 *     answer is bit for bit the committee's without a cascade. */
#ifndef NC_BACKEND_CASCADE_H
#define NC_BACKEND_CASCADE_H

#include <stdint.h>

#include "backend.h"
#include "neocog.h"

typedef struct nc_backend_cascade_ops {
    void *ctx;
    /* Member m's views in mask (a subset of its own) of the d digits
     * digit[0..d) (d <= slice): its raw scores, each digit's views in view
     * order, into dst[d][views in mask][n_classes]. */
    int (*views)(void *ctx, uint32_t m, uint32_t mask, const uint32_t *digit, uint32_t d,
                 float *dst);
    /* Every member but skip on the d digits digit[0..d) (d <= slice): the
     * committee's mean scores into out[d][n_classes], skip's own scores
     * taken from skip_score[d][skip's views][n_classes] and added at its
     * place in member order (nc_backend_member_add, then _mean). */
    int (*others)(void *ctx, uint32_t skip, const uint32_t *digit, uint32_t d,
                  const float *skip_score, float *out);
    uint32_t slice;         /* the most digits one call takes, >= 1 */
    /* Optional (NULL: every view is there): the forward's fill (backend.h),
     * asked for the views in mask of the digits before views and others
     * read them (others: the other members' views together); digit i is
     * image image0 + i of the forward. */
    const nc_backend_fill *fill;
    uint32_t image0;
} nc_backend_cascade_ops;

/* The caller's scratch for a batch of n digits whose first member answers
 * on vf views. */
typedef struct nc_backend_cascade_buf {
    uint32_t *digit;        /* [n] */
    float *first;           /* [n][vf][n_classes]: the first member's scores */
    float *score;           /* [slice][vf][n_classes]: one views call's */
    float *out;             /* [slice][n_classes]: one others call's */
    uint32_t *image;        /* [slice]: one fill call's images (with a fill) */
} nc_backend_cascade_buf;

/* The committee's answer for n digits (numbered 0..n-1 in the ops' calls)
 * into out[n][n_classes] under cascade cas (on), view_mask[member] the
 * views each of the n_members members answers on.  0, or the first error
 * of an ops call (out is then partly written). */
int nc_backend_cascade_run(const nc_neocog_cascade *cas, const uint32_t *view_mask,
                           uint32_t n_members, uint32_t n_classes, uint32_t n,
                           const nc_backend_cascade_ops *ops,
                           const nc_backend_cascade_buf *buf, float *out);

#endif

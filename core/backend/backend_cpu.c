/* core/backend/backend_cpu.c — the CPU engine behind the backend table, and the
 * score rules shared by every engine.
 *
 * Layer: core.  No threads of its own: each daemon worker thread owns one
 * worker (an nc_cnn_work, or the neocognitron's states of one slice of
 * digits).
 *
 * A neocognitron file that carries the interpolating-vector mark (NIVT,
 * core/neocog/neocog.h) is answered with that classifier: its per-class scores
 * (cosines in [0, 1], all 0 when nothing fired) replace the UC4 maxima as
 * the raw scores, so the daemon gives the error the file was chosen and
 * measured for.  Without the mark, UC4's max response as before.  A
 * neocognitron committee file (neocog.h) runs every member so, and answers
 * with the mean of their raw scores, summed in member order.  A file whose
 * prep has views (image.h) runs each member on each of its views of the
 * digit (neocog.h: those with its deskew) and answers with the mean of all
 * those scores.  A committee with a cascade (neocog.h) runs its first
 * member first and the others only for the digits it leaves.
 *
 * A CNN file is loaded as a committee (one column or several, core/cnn/cnn.h)
 * and answered with the mean of its columns' outputs; with views, the mean
 * of that over the digit's views (nc_cnn_committee_run_views). */
#include "backend.h"

#include <string.h>

#include "cascade.h"
#include "cnn.h"
#include "neocog.h"

typedef struct cpu_impl {
    uint32_t kind;
    nc_cnn_committee *cnn;
    nc_neocog_committee *neo;
    nc_neocog_iv **iv;      /* [members]; NULL: that member answers by max response */
    nc_neocog_packs **packs;        /* [members]: form B's weights (neocog.h) */
    uint32_t max_passes;            /* most views any member answers on */
    uint32_t n_inputs, n_classes;   /* n_inputs: floats of one view */
    uint32_t n_views;               /* nc_prep_views of the file's prep */
} cpu_impl;

/* Neocognitron digits a slice: each member runs its views of this many
 * digits at once (nc_neocog_forward_many), so that its big last stage's
 * weights are read once for all of them.  The shipped file's 24 passes a
 * slice amortise its 150 MB a member (48 were no faster); each pass holds a
 * state (~1.7 MB), so a worker holds ~42 MB. */
#define CPU_NEO_SLICE 8u

typedef struct cpu_worker {
    const cpu_impl *impl;
    uint32_t max_batch;             /* CNN: digits a slice (their views fit the work) */
    nc_cnn_committee_work *work;
    uint32_t n_state;               /* neocognitron: slice x max_passes */
    nc_neocog_state **state;        /* [n_state], re-fitted member by member */
    float *score;                   /* [members][n_state][classes] */
    float *first_score;             /* cascade: [max_batch][its views][classes],
                                       the first member's scores of a batch */
    uint32_t *undecided;            /* cascade: [max_batch], digits it left */
    float *cascade_out;             /* cascade: [slice][classes], the others' answers */
} cpu_worker;

/* Views a member answers on: the set bits of its mask. */
static uint32_t views_of(uint32_t mask)
{
    uint32_t n = 0;
    for (; mask; mask &= mask - 1)
        n++;
    return n;
}

static void cpu_free(void *p)
{
    cpu_impl *impl = p;
    if (!impl)
        return;
    nc_cnn_committee_free(impl->cnn);
    for (uint32_t m = 0; impl->iv && m < impl->neo->n_members; m++)
        nc_neocog_iv_free(impl->iv[m]);
    free(impl->iv);
    for (uint32_t m = 0; impl->packs && m < impl->neo->n_members; m++)
        nc_neocog_packs_free(impl->packs[m]);
    free(impl->packs);
    nc_neocog_committee_free(impl->neo);
    free(impl);
}

static int cpu_supports(uint32_t kind)
{
    return kind == NC_MF_KIND_CNN || kind == NC_MF_KIND_NEOCOG;
}

static int cpu_init(const uint8_t *buf, size_t len, int device, uint32_t max_batch,
                    void **ret_impl, uint32_t *ret_kind, nc_model_info *ret_info)
{
    (void)device;
    (void)max_batch;            /* scratch memory is a worker's (cpu_worker_new) */
    nc_mf_reader *r = NULL;
    int err = nc_mf_open(buf, len, &r);
    if (err)
        return err;
    uint32_t kind = nc_mf_kind_of(r);
    nc_mf_close(r);
    if (!cpu_supports(kind))
        return -ENOTSUP;
    cpu_impl *impl = calloc(1, sizeof *impl);
    if (!impl)
        return -ENOMEM;
    impl->kind = kind;
    nc_model_info info;
    if (kind == NC_MF_KIND_CNN) {
        if ((err = nc_cnn_committee_load(buf, len, &impl->cnn, &info)))
            goto fail;
        impl->n_inputs = impl->cnn->n_inputs;
        impl->n_classes = impl->cnn->n_outputs;
    } else {
        /* a malformed classifier mark fails the file (in the loader) rather
         * than silently meaning max response */
        if ((err = nc_neocog_committee_load(buf, len, &impl->neo, &info)))
            goto fail;
        const nc_neocog *net0 = impl->neo->member[0];
        impl->n_inputs = net0->arch.in_size * net0->arch.in_size;
        impl->n_classes = net0->arch.n_classes;
        if (!(impl->iv = calloc(impl->neo->n_members, sizeof *impl->iv)) ||
            !(impl->packs = calloc(impl->neo->n_members, sizeof *impl->packs))) {
            err = -ENOMEM;
            goto fail;
        }
        /* the Gram matrices are built once here and only read afterwards,
         * so every worker thread shares them */
        for (uint32_t m = 0; m < impl->neo->n_members; m++) {
            const uint32_t t = impl->neo->iv_top_t[m];
            if (t && (err = nc_neocog_iv_new(impl->neo->member[m], t, &impl->iv[m]))) {
                err = err == -ENOMEM ? err : -EBADMSG;
                goto fail;
            }
        }
        /* then the big last stages' weights move into form B's packs (the
         * Gram matrices above were their last other reader): held once */
        for (uint32_t m = 0; m < impl->neo->n_members; m++) {
            const uint32_t views = views_of(impl->neo->view_mask[m]);
            impl->max_passes = views > impl->max_passes ? views : impl->max_passes;
            if ((err = nc_neocog_packs_take(impl->neo->member[m], NC_NEOCOG_PACK_MIN_BYTES,
                                            &impl->packs[m])))
                goto fail;
        }
    }
    /* The stored preprocessing must produce exactly the network's input,
     * or every answer would be garbage. */
    if (nc_prep_check(&info.prep) || nc_prep_view_len(&info.prep) != impl->n_inputs ||
        info.n_classes != impl->n_classes) {
        err = -EBADMSG;
        goto fail;
    }
    impl->n_views = nc_prep_views(&info.prep);
    *ret_impl = impl;
    *ret_kind = kind;
    *ret_info = info;
    return 0;
fail:
    cpu_free(impl);
    return err;
}

static void cpu_worker_free(void *p)
{
    cpu_worker *w = p;
    if (!w)
        return;
    nc_cnn_committee_work_free(w->work);
    for (uint32_t i = 0; w->state && i < w->n_state; i++)
        nc_neocog_state_free(w->state[i]);
    free(w->state);
    free(w->score);
    free(w->first_score);
    free(w->undecided);
    free(w->cascade_out);
    free(w);
}

static int cpu_worker_new(void *p, uint32_t max_batch, void **ret_worker)
{
    const cpu_impl *impl = p;
    if (!impl || max_batch == 0 || max_batch > NC_CNN_MAX_BATCH)
        return -EINVAL;
    cpu_worker *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->impl = impl;
    w->max_batch = max_batch;
    int err = 0;
    if (impl->cnn) {
        /* the work holds images: every view of max_batch digits, within the
         * CNN's limit (then slices of fewer digits) */
        const uint32_t V = impl->n_views;
        uint32_t images = max_batch > NC_CNN_MAX_BATCH / V ? NC_CNN_MAX_BATCH / V * V
                                                            : max_batch * V;
        w->max_batch = images / V;
        err = nc_cnn_committee_work_new(impl->cnn, images, &w->work);
    } else {
        /* states made for the member with the most planes fit every other
         * one within their allocation */
        const nc_neocog_committee *c = impl->neo;
        uint32_t big = 0;
        size_t big_bytes = 0;
        for (uint32_t m = 0; m < c->n_members && !err; m++) {
            nc_neocog_state *st = NULL;
            if (!(err = nc_neocog_state_new(c->member[m], &st)) && st->bytes_ > big_bytes) {
                big = m;
                big_bytes = st->bytes_;
            }
            nc_neocog_state_free(st);
        }
        const uint32_t slice = max_batch < CPU_NEO_SLICE ? max_batch : CPU_NEO_SLICE;
        w->n_state = slice * impl->max_passes;
        if (!err && (!(w->state = calloc(w->n_state, sizeof *w->state)) ||
                     !(w->score = malloc((size_t)c->n_members * w->n_state * impl->n_classes *
                                         sizeof *w->score))))
            err = -ENOMEM;
        for (uint32_t i = 0; !err && i < w->n_state; i++)
            err = nc_neocog_state_new(c->member[big], &w->state[i]);
        if (!err && c->cascade.on &&
            (!(w->first_score = malloc((size_t)max_batch * impl->max_passes * impl->n_classes *
                                       sizeof *w->first_score)) ||
             !(w->undecided = malloc((size_t)max_batch * sizeof *w->undecided)) ||
             !(w->cascade_out = malloc((size_t)slice * impl->n_classes *
                                       sizeof *w->cascade_out))))
            err = -ENOMEM;
    }
    if (err) {
        cpu_worker_free(w);
        return err;
    }
    *ret_worker = w;
    return 0;
}

/* Member m's views in mask (a subset of its own) of the d digits
 * digit[0..d) in one nc_neocog_forward_many: its raw
 * scores, each digit's views in view order, into dst[d][views][classes]. */
static int member_run(const cpu_impl *impl, cpu_worker *w, uint32_t m, uint32_t mask,
                      const float *in, const uint32_t *digit, uint32_t d, float *dst)
{
    const nc_neocog_committee *c = impl->neo;
    const nc_neocog *net = c->member[m];
    const uint32_t K = impl->n_classes, V = impl->n_views;
    const float *input[NC_NEOCOG_MANY_MAX];
    nc_neocog_result res[NC_NEOCOG_MANY_MAX];
    uint32_t np = 0;
    for (uint32_t k = 0; k < d; k++) {
        for (uint32_t v = 0; v < V; v++)
            if (mask >> v & 1u)
                input[np++] = in + ((size_t)digit[k] * V + v) * impl->n_inputs;
    }
    if (np == 0)
        return 0;
    int err = nc_neocog_forward_many(net, impl->packs[m], w->state, np, input, res);
    for (uint32_t p = 0; !err && p < np; p++) {
        if (impl->iv[m])
            err = nc_neocog_iv_classify(impl->iv[m], net, w->state[p], &res[p]);
        memcpy(dst + (size_t)p * K, res[p].score, K * sizeof(float));
    }
    return err;
}

/* The cascade's ops (cascade.h) over one batch: digit i is digit b0 + i of
 * the forward's input in. */
typedef struct cascade_ctx {
    const cpu_impl *impl;
    cpu_worker *w;
    const float *in;        /* the batch's first digit's views */
} cascade_ctx;

static int cascade_views(void *ctx, uint32_t m, uint32_t mask, const uint32_t *digit,
                         uint32_t d, float *dst)
{
    const cascade_ctx *x = ctx;
    return member_run(x->impl, x->w, m, mask, x->in, digit, d, dst);
}

/* Every member but skip, each into its own part of w->score, then the sum
 * in member order with skip's scores at its place. */
static int cascade_others(void *ctx, uint32_t skip, const uint32_t *digit, uint32_t d,
                          const float *skip_score, float *out)
{
    const cascade_ctx *x = ctx;
    const nc_neocog_committee *c = x->impl->neo;
    cpu_worker *w = x->w;
    const uint32_t M = c->n_members, K = x->impl->n_classes;
    for (uint32_t m = 0; m < M; m++) {
        int err = m == skip ? 0
                            : member_run(x->impl, w, m, c->view_mask[m], x->in, digit, d,
                                         w->score + (size_t)m * w->n_state * K);
        if (err)
            return err;
    }
    for (uint32_t k = 0; k < d; k++) {
        float *o = out + (size_t)k * K;
        memset(o, 0, K * sizeof *o);
        for (uint32_t m = 0; m < M; m++) {
            const uint32_t views = views_of(c->view_mask[m]);
            const float *s = m == skip ? skip_score + (size_t)k * views * K
                                       : w->score + ((size_t)m * w->n_state +
                                                     (size_t)k * views) * K;
            for (uint32_t j = 0; j < views; j++)
                nc_backend_member_add(o, s + (size_t)j * K, K);
        }
        nc_backend_member_mean(o, c->n_scores, K);
    }
    return 0;
}

/* A committee with a cascade, one batch of nb digits from b0: the stages
 * are core's (nc_backend_cascade_run); each runs its members in slices of
 * the worker's states. */
static int cascade_batch(const cpu_impl *impl, cpu_worker *w, const float *in, uint32_t b0,
                         uint32_t nb, const nc_backend_fill *fill, float *out)
{
    const nc_neocog_committee *c = impl->neo;
    cascade_ctx x = { impl, w, in + (size_t)b0 * impl->n_views * impl->n_inputs };
    /* a slice is at most CPU_NEO_SLICE digits (cpu_worker_new) */
    const nc_backend_cascade_ops ops = { .ctx = &x, .views = cascade_views,
                                         .others = cascade_others,
                                         .slice = w->n_state / impl->max_passes,
                                         .fill = fill, .image0 = b0 };
    uint32_t image[CPU_NEO_SLICE];
    /* w->score is free while the stages before the others run */
    const nc_backend_cascade_buf buf = { .digit = w->undecided, .first = w->first_score,
                                         .score = w->score, .out = w->cascade_out,
                                         .image = image };
    return nc_backend_cascade_run(&c->cascade, c->view_mask, c->n_members, impl->n_classes, nb,
                                  &ops, &buf,
                                  out + (size_t)b0 * impl->n_classes);
}

static int cascade_forward(const cpu_impl *impl, cpu_worker *w, const float *in, uint32_t n,
                           const nc_backend_fill *fill, float *out)
{
    for (uint32_t b0 = 0; b0 < n; b0 += w->max_batch) {
        const uint32_t nb = n - b0 < w->max_batch ? n - b0 : w->max_batch;
        int err = cascade_batch(impl, w, in, b0, nb, fill, out);
        if (err)
            return err;
    }
    return 0;
}

static int cpu_forward(void *p, void *wp, const float *in, uint32_t n, float *out)
{
    const cpu_impl *impl = p;
    cpu_worker *w = wp;
    if (!impl || !w || w->impl != impl || (!in && n) || (!out && n))
        return -EINVAL;
    if (impl->cnn) {
        /* Batches larger than the work was sized for go in slices. */
        for (uint32_t i = 0; i < n; i += w->max_batch) {
            uint32_t m = n - i < w->max_batch ? n - i : w->max_batch;
            int err = nc_cnn_committee_run_views(impl->cnn, w->work,
                                                in + (size_t)i * impl->n_views *
                                                         impl->n_inputs,
                                                m, out + (size_t)i * impl->n_classes);
            if (err)
                return err;
        }
        return 0;
    }
    /* Slices of digits: every member runs its views of the slice's digits
     * in one nc_neocog_forward_many (the same scores, bit for bit, as one
     * nc_neocog_forward each), then each digit's scores are summed in
     * member order, each member's views in view order. */
    if (impl->neo->cascade.on)
        return cascade_forward(impl, w, in, n, NULL, out);
    const nc_neocog_committee *c = impl->neo;
    const uint32_t M = c->n_members, K = impl->n_classes, V = impl->n_views;
    const uint32_t slice = w->n_state / impl->max_passes;
    const float *input[NC_NEOCOG_MANY_MAX];
    nc_neocog_result res[NC_NEOCOG_MANY_MAX];
    for (uint32_t i0 = 0; i0 < n; i0 += slice) {
        const uint32_t d = n - i0 < slice ? n - i0 : slice;
        for (uint32_t m = 0; m < M; m++) {
            const nc_neocog *net = c->member[m];
            uint32_t np = 0;
            for (uint32_t i = i0; i < i0 + d; i++)
                for (uint32_t v = 0; v < V; v++)
                    if (c->view_mask[m] >> v & 1u)
                        input[np++] = in + ((size_t)i * V + v) * impl->n_inputs;
            int err = nc_neocog_forward_many(net, impl->packs[m], w->state, np, input, res);
            for (uint32_t p = 0; !err && p < np; p++) {
                /* the IV classifier reads the last S-layer the forward left
                 * in the state, so it needs no second pass */
                if (impl->iv[m])
                    err = nc_neocog_iv_classify(impl->iv[m], net, w->state[p], &res[p]);
                memcpy(w->score + ((size_t)m * w->n_state + p) * K, res[p].score,
                       K * sizeof(float));
            }
            if (err)
                return err;
        }
        for (uint32_t i = i0; i < i0 + d; i++) {
            float *o = out + (size_t)i * K;
            memset(o, 0, K * sizeof *o);
            for (uint32_t m = 0; m < M; m++) {
                const uint32_t views = views_of(c->view_mask[m]);
                for (uint32_t j = 0; j < views; j++)
                    nc_backend_member_add(o, w->score + ((size_t)m * w->n_state +
                                                         (i - i0) * views + j) * K, K);
            }
            nc_backend_member_mean(o, c->n_scores, K);
        }
    }
    return 0;
}

/* A cascade fills its stages' views only; anything else every view first. */
static int cpu_forward_fill(void *p, void *wp, const float *in, uint32_t n,
                            const nc_backend_fill *fill, float *out)
{
    const cpu_impl *impl = p;
    cpu_worker *w = wp;
    if (!impl || !w || w->impl != impl || !fill || !fill->fill || (!in && n) || (!out && n))
        return -EINVAL;
    if (impl->neo && impl->neo->cascade.on)
        return cascade_forward(impl, w, in, n, fill, out);
    int err = nc_backend_fill_all(fill, (1u << impl->n_views) - 1u, n);
    return err ? err : cpu_forward(p, wp, in, n, out);
}

const nc_backend_ops nc_backend_cpu = {
    .name = "cpu",
    .init = cpu_init,
    .supports = cpu_supports,
    .worker_new = cpu_worker_new,
    .worker_free = cpu_worker_free,
    .forward = cpu_forward,
    .forward_fill = cpu_forward_fill,
    .free = cpu_free,
    .device_bytes = NULL,
};

/* ---- the table's common front --------------------------------------------- */

int nc_backend_open(const nc_backend_ops *ops, const uint8_t *buf, size_t len,
                    int device, nc_backend **ret_be)
{
    return nc_backend_open_batch(ops, buf, len, device, 0, ret_be);
}

int nc_backend_open_batch(const nc_backend_ops *ops, const uint8_t *buf, size_t len,
                          int device, uint32_t max_batch, nc_backend **ret_be)
{
    if (!ops || !ops->init || !ops->forward || !ops->worker_new || !ret_be ||
        (!buf && len))
        return -EINVAL;
    nc_backend *be = calloc(1, sizeof *be);
    if (!be)
        return -ENOMEM;
    be->ops = ops;
    be->device = device;
    /* The rules first: a malformed one fails the file before any engine
     * spends time (a GPU warm-up) on it. */
    nc_mf_reader *r = NULL;
    int err = nc_mf_open(buf, len, &r);
    if (!err)
        err = nc_calib_read(r, &be->calib, &be->ens);
    if (!err)
        err = nc_model_fingerprint(buf, len, &be->fp);
    nc_mf_close(r);
    if (!err)
        err = ops->init(buf, len, device, max_batch, &be->impl, &be->kind, &be->info);
    if (err) {
        free(be);
        return err;
    }
    if (be->info.n_classes == 0 || be->info.n_classes > NC_MF_MAX_CLASSES ||
        nc_prep_check(&be->info.prep)) {
        nc_backend_close(be);
        return -EBADMSG;
    }
    be->input_len = nc_prep_out_len(&be->info.prep);
    *ret_be = be;
    return 0;
}

uint32_t nc_backend_all_views(const nc_backend *be)
{
    return (1u << nc_prep_views(&be->info.prep)) - 1u;
}

int nc_backend_fill_all(const nc_backend_fill *fill, uint32_t mask, uint32_t n)
{
    uint32_t image[256];
    for (uint32_t i0 = 0; i0 < n; i0 += 256) {
        const uint32_t d = n - i0 < 256 ? n - i0 : 256;
        for (uint32_t k = 0; k < d; k++)
            image[k] = i0 + k;
        int err = fill->fill(fill->ctx, mask, image, d);
        if (err)
            return err;
    }
    return 0;
}

int nc_backend_forward_fill(const nc_backend *be, void *worker, float *in, uint32_t n,
                            const nc_backend_fill *fill, float *out)
{
    if (!be || !fill || !fill->fill)
        return -EINVAL;
    if (be->ops->forward_fill)
        return be->ops->forward_fill(be->impl, worker, in, n, fill, out);
    int err = nc_backend_fill_all(fill, nc_backend_all_views(be), n);
    return err ? err : be->ops->forward(be->impl, worker, in, n, out);
}

void nc_backend_close(nc_backend *be)
{
    if (!be)
        return;
    if (be->ops && be->ops->free)
        be->ops->free(be->impl);
    free(be);
}

int32_t nc_backend_label(uint32_t kind, const float *raw, uint32_t n_classes)
{
    if (!raw || n_classes == 0)
        return -1;
    uint32_t best = 0;
    for (uint32_t k = 1; k < n_classes; k++)
        if (raw[k] > raw[best])
            best = k;
    if (kind == NC_MF_KIND_NEOCOG && !(raw[best] > 0.0f))
        return -1;
    return (int32_t)best;
}

int nc_backend_calibrate(uint32_t kind, const float *raw, uint32_t n_classes,
                         float *p)
{
    return nc_calib_plain(kind, raw, n_classes, p);
}

int nc_backend_probs(const nc_backend *be, const float *raw, float *p)
{
    if (!be)
        return -EINVAL;
    return nc_calib_apply(&be->calib, be->kind, raw, be->info.n_classes, p);
}

double nc_backend_reject_threshold(const nc_backend *be)
{
    return be && be->calib.fitted ? be->calib.reject_threshold : 0.0;
}

int nc_backend_ensemble_rule(const nc_backend *cnn, const nc_backend *neo, nc_ens_rule *ret)
{
    if (!ret)
        return -EINVAL;
    return nc_ens_select(cnn && cnn->kind == NC_MF_KIND_CNN ? &cnn->ens : NULL,
                         neo && neo->kind == NC_MF_KIND_NEOCOG ? &neo->fp : NULL, ret);
}

int nc_backend_ensemble(const float *p_cnn, int cnn_ok, const float *p_neo,
                        int neo_ok, uint32_t n_classes, float *p)
{
    return nc_ens_apply(NULL, p_cnn, cnn_ok, p_neo, neo_ok, n_classes, p);
}

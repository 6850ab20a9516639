/* core/neocog/neocog_learn.c — training of the neocognitron's upper stages, one
 * pattern at a time (spec "Training", steps 2 and 3), and add-if-silent.
 * The interpolating-vector classifier it leads to is inference, in
 * neocog_iv.c.
 *
 * Layer: core (no I/O, no randomness: the trainer chooses the patterns and
 * their order, so a run is as deterministic as its pattern list).
 *
 * Conventions shared with neocog_train.c, whose pieces this file uses (never
 * the other way): stage l's input is the layer a state holds (uc[l-1]);
 * Reinforce is nc_neocog_reinforce; the seed map and the inhibition taper
 * are nc_neocog_seed_map_ and nc_neocog_inhibit_, with the cut, gain and
 * radius as training's parameters.
 *
 * Parts (nc_neocog_learner_set_runner): core starts no threads, but the
 * supervised last stage can hand independent pieces of its work to a runner
 * the caller lends (tools/train_pool.c): the frozen lower stages of a batch
 * (nc_neocog_learn_sup_batch) and each pattern's last-stage responses by
 * plane ranges (form F run on a range, bit-identical to the whole).  The
 * decisions stay sequential, so the network learnt does not depend on the
 * split. */
#include "neocog_impl.h"

#include <math.h>
#include <string.h>

struct nc_neocog_learner {
    nc_neocog_state *st;
    float *in;          /* the stage's input, copied out of st (st re-fits
                           whenever a plane opens, moving its buffers) */
    float *r;           /* S responses at theta_L, [n_o][ks] */
    float *ri;          /* S responses at theta_inhib, [n_o][ks] */
    float *ws;          /* S-layer scratch */
    float *m;           /* seed map, [n_o] */
    float *resp;        /* one response map, [n_o] */
    float *h;           /* hypercolumn maxima / "something fired" map */
    int32_t *hk;        /* hypercolumn winners */
    float *seed_v;      /* per plane: strongest surviving value */
    int32_t *seed_o;    /* per plane: its position, -1 none */
    size_t cap_in, cap_r, cap_ri, cap_ws, cap_o, cap_k;
    /* parts (nc_neocog_learner_set_runner) */
    uint32_t n_parts;
    int split;          /* a runner was lent: learn_sup splits its responses */
    nc_neocog_runner_fn run;
    void *run_ctx;
    nc_neocog_state **pst;  /* [n_parts] states of the frozen stages; pst[0] = st */
    float *pv2;         /* [n_parts][cap_o] V-cell scratch of the slices */
    float *bin;         /* a batch's last-stage inputs, [n][in floats] */
    size_t cap_bin;
};

void nc_neocog_learn_opts_default(nc_neocog_learn_opts *ret)
{
    /* Fukushima's alphabet network's values (spec); theta_L of stage 1 is
     * unused (US1 is trained on edges). */
    static const nc_neocog_learn_opts def = {
        .theta_l = { 0.0f, 0.80f, 0.80f, 0.70f },
        .theta_inhib = { 0.0f, 0.0f, 0.0f, 0.0f },
        .q = { 100.0f, 0.5f, 0.5f, 0.5f },
        .seed_cut = 0.4f, .inhib_gain = 4.0f, .d = 3.1f,
        .add_if_silent = 0, .form = NC_NEOCOG_FORM_F,
    };
    *ret = def;
}

static int grow_f(float **p, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    float *q = realloc(*p, n * sizeof(float));
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

int nc_neocog_learner_new(const nc_neocog *net, nc_neocog_learner **ret_lr)
{
    if (!net || !ret_lr)
        return -EINVAL;
    nc_neocog_learner *lr = calloc(1, sizeof(*lr));
    if (!lr)
        return -ENOMEM;
    size_t n_o = 0, k = 0;
    for (uint32_t l = 0; l < net->arch.n_stages; l++) {
        size_t c = (size_t)net->arch.stage[l].s_size * net->arch.stage[l].s_size;
        n_o = c > n_o ? c : n_o;
        k = net->arch.stage[l].k_max > k ? net->arch.stage[l].k_max : k;
    }
    int r = nc_neocog_state_new(net, &lr->st);
    lr->m = malloc(n_o * sizeof(float));
    lr->resp = malloc(n_o * sizeof(float));
    lr->h = malloc(n_o * sizeof(float));
    lr->hk = malloc(n_o * sizeof(int32_t));
    lr->seed_v = malloc((k + 8) * sizeof(float));
    lr->seed_o = malloc((k + 8) * sizeof(int32_t));
    if (r == 0 && (!lr->m || !lr->resp || !lr->h || !lr->hk || !lr->seed_v || !lr->seed_o))
        r = -ENOMEM;
    if (r < 0) {
        nc_neocog_learner_free(lr);
        return r;
    }
    lr->cap_o = n_o;
    lr->cap_k = k + 8;
    if ((r = nc_neocog_learner_set_runner(lr, 1, NULL, NULL)) < 0) {
        nc_neocog_learner_free(lr);
        return r;
    }
    lr->split = 0;      /* no runner lent yet: learn_sup keeps its plain path */
    *ret_lr = lr;
    return 0;
}

void nc_neocog_learner_free(nc_neocog_learner *lr)
{
    if (!lr)
        return;
    for (uint32_t p = 1; lr->pst && p < lr->n_parts; p++)
        nc_neocog_state_free(lr->pst[p]);
    free(lr->pst);
    free(lr->pv2);
    free(lr->bin);
    nc_neocog_state_free(lr->st);
    free(lr->in);
    free(lr->r);
    free(lr->ri);
    free(lr->ws);
    free(lr->m);
    free(lr->resp);
    free(lr->h);
    free(lr->hk);
    free(lr->seed_v);
    free(lr->seed_o);
    free(lr);
}

/* ---- pieces ------------------------------------------------------------------ */

/* Width of stage l's input layer. */
static uint32_t in_size(const nc_neocog *net, uint32_t l)
{
    return l == 0 ? net->arch.g_size : net->arch.stage[l - 1].c_size;
}

/* Floats of stage l's input layer as a state holds it. */
static size_t in_floats(const nc_neocog *net, uint32_t l)
{
    return (size_t)in_size(net, l) * in_size(net, l) * nc_neocog_in_stride_(net, l);
}

/* Run the frozen stages below l on image in st and copy stage l's input to
 * dst (in_floats).  Reads net only, so parts may run it side by side. */
static int below_into(const nc_neocog *net, nc_neocog_state *st, uint32_t l,
                      const float *image, int form, float *dst)
{
    const size_t cells = (size_t)net->arch.in_size * net->arch.in_size;
    /* a re-fit keeps u0, but fit first so the copy lands in the live block */
    int r = nc_neocog_run_layer(net, st, NC_NEOCOG_L_UG, form);
    if (r < 0)
        return r;
    memcpy(st->u0, image, cells * sizeof(float));
    for (int layer = 0; layer <= (int)(2 * l); layer++)
        if ((r = nc_neocog_run_layer(net, st, layer, form)) < 0)
            return r;
    memcpy(dst, l == 0 ? st->ug : st->uc[l - 1], in_floats(net, l) * sizeof(float));
    return 0;
}

/* Run the frozen stages below l on image and copy stage l's input out. */
static int run_below(const nc_neocog *net, nc_neocog_learner *lr, uint32_t l,
                     const float *image, int form)
{
    int r = grow_f(&lr->in, &lr->cap_in, in_floats(net, l));
    if (r < 0)
        return r;
    return below_into(net, lr->st, l, image, form, lr->in);
}

/* Every plane of stage l at threshold theta into out ([n_o][ks]). */
static int s_resp(const nc_neocog *net, nc_neocog_learner *lr, uint32_t l,
                  float theta, const float *in, float **out, size_t *cap)
{
    const nc_neocog_index *ix = net->s_ix[l];
    const uint32_t K = net->n_planes[l];
    const nc_neocog_s_args a = nc_neocog_stage_s_args_(net, l, theta);
    int r = grow_f(out, cap, (size_t)ix->n_out * ix->n_out * nc_neocog_kstride(K));
    if (r == 0)
        r = grow_f(&lr->ws, &lr->cap_ws, nc_neocog_s_ws_floats(ix, K));
    if (r == 0)
        r = nc_neocog_s_forward(&a, in, *out, lr->ws, NC_NEOCOG_FORM_F);
    return r;
}

/* Response of plane k alone at threshold theta, every position (gather). */
static void plane_resp(const nc_neocog *net, uint32_t l, uint32_t k, float theta,
                       const float *in, float *resp)
{
    const nc_neocog_index *ix = net->s_ix[l];
    const uint32_t stride = nc_neocog_in_stride_(net, l), kin = nc_neocog_k_in(net, l);
    const uint32_t ks = nc_neocog_kstride(net->n_planes[l]);
    const double th = theta;
    for (size_t o = 0; o < (size_t)ix->n_out * ix->n_out; o++) {
        double e = 0.0, v2 = 0.0;
        for (int32_t j = ix->gat_ptr[o]; j < ix->gat_ptr[o + 1]; j++) {
            const float *u = in + (size_t)ix->gat_in[j] * stride;
            const int t = ix->gat_tap[j];
            for (uint32_t kap = 0; kap < kin; kap++)
                if (u[kap] > 0.0f) {
                    e += net->a[l][((size_t)kap * ix->n_live + t) * ks + k] * u[kap];
                    v2 += net->s_c[l][t] * (double)u[kap] * u[kap];
                }
        }
        double x = (1.0 + e) / (1.0 + th * net->b[l][k] * sqrt(v2)) - 1.0;
        resp[o] = x > 0.0 ? (float)(th / (1.0 - th) * x) : 0.0f;
    }
}

static void zero_disc(float *m, uint32_t n, size_t o, float d)
{
    const int by = (int)(o / n), bx = (int)(o % n), R = (int)d;
    for (int y = by - R; y <= by + R; y++)
        for (int x = bx - R; x <= bx + R; x++)
            if (y >= 0 && y < (int)n && x >= 0 && x < (int)n &&
                (double)(y - by) * (y - by) + (double)(x - bx) * (x - bx) <= (double)d * d)
                m[y * n + x] = 0.0f;
}

static size_t argmax(const float *m, size_t n)
{
    size_t best = 0;
    for (size_t o = 1; o < n; o++)
        if (m[o] > m[best])
            best = o;
    return best;
}

/* Open a plane at position o and reinforce it there once (in: the stage's
 * input). */
static int open_plane(nc_neocog *net, const float *in, uint32_t l,
                      uint32_t label, size_t o, float q, uint32_t *ret_k)
{
    const uint32_t n = net->arch.stage[l].s_size;
    uint32_t k = 0;
    int r = nc_neocog_add_plane(net, l, label, &k);
    if (r == 0)
        r = nc_neocog_reinforce(net, l, k, (uint32_t)(o / n), (uint32_t)(o % n), q, in);
    if (r == 0)
        *ret_k = k;
    return r;
}

static int check_opts(const nc_neocog *net, uint32_t l, const nc_neocog_learn_opts *o)
{
    if (!(o->theta_l[l] > 0.0f && o->theta_l[l] < 1.0f) ||
        !(o->theta_inhib[l] >= 0.0f && o->theta_inhib[l] < 1.0f) ||
        !(o->q[l] > 0.0f) || !isfinite(o->q[l]) ||
        !(o->seed_cut >= 0.0f && o->seed_cut < 1.0f) ||
        !(o->inhib_gain >= 0.0f) || !isfinite(o->inhib_gain) ||
        !(o->d >= 0.0f && o->d <= 8.0f) || o->form < 0 || o->form > NC_NEOCOG_FORM_REF)
        return -EINVAL;
    for (uint32_t s = 0; s < l; s++)
        if (net->n_planes[s] == 0)
            return -EINVAL;
    return 0;
}

/* ---- unsupervised middle stages ------------------------------------------------- */

/* Winner-take-all in hypercolumns on lr->r, then reinforce every plane at its
 * strongest surviving position. */
static int reinforce_winners(nc_neocog *net, nc_neocog_learner *lr, uint32_t l,
                             const nc_neocog_learn_opts *o, uint32_t *ret_n)
{
    const uint32_t n = net->arch.stage[l].s_size, K = net->n_planes[l];
    const uint32_t ks = nc_neocog_kstride(K);
    const size_t n_o = (size_t)n * n;
    const int R = (int)o->d;
    const double d2 = (double)o->d * o->d;
    for (size_t p = 0; p < n_o; p++) {
        float best = 0.0f;
        int32_t bk = -1;
        for (uint32_t k = 0; k < K; k++)
            if (lr->r[p * ks + k] > best) {
                best = lr->r[p * ks + k];
                bk = (int32_t)k;
            }
        lr->h[p] = best;
        lr->hk[p] = bk;
    }
    for (uint32_t k = 0; k < K; k++) {
        lr->seed_v[k] = 0.0f;
        lr->seed_o[k] = -1;
    }
    for (size_t p = 0; p < n_o; p++) {
        if (lr->hk[p] < 0)
            continue;
        const int py = (int)(p / n), px = (int)(p % n);
        int survives = 1;
        /* a larger maximum within D suppresses p; equal ones go to the lower
         * index so that the outcome never depends on anything but the data */
        for (int y = py - R; y <= py + R && survives; y++)
            for (int x = px - R; x <= px + R; x++) {
                if (y < 0 || y >= (int)n || x < 0 || x >= (int)n ||
                    (y == py && x == px) ||
                    (double)(y - py) * (y - py) + (double)(x - px) * (x - px) > d2)
                    continue;
                size_t q = (size_t)y * n + x;
                if (lr->h[q] > lr->h[p] || (lr->h[q] == lr->h[p] && q < p)) {
                    survives = 0;
                    break;
                }
            }
        const int32_t k = lr->hk[p];
        if (survives && lr->h[p] > lr->seed_v[k]) {
            lr->seed_v[k] = lr->h[p];
            lr->seed_o[k] = (int32_t)p;
        }
    }
    uint32_t count = 0;
    for (uint32_t k = 0; k < K; k++)
        if (lr->seed_o[k] >= 0) {
            const size_t p = (size_t)lr->seed_o[k];
            int r = nc_neocog_reinforce(net, l, k, (uint32_t)(p / n), (uint32_t)(p % n),
                                        o->q[l], lr->in);
            if (r < 0)
                return r;
            count++;
        }
    *ret_n = count;
    return 0;
}

/* The start of one pattern's step at stage l (unsupervised or supervised):
 * the options checked, ret cleared, the frozen stages below run. */
static int begin_step(const nc_neocog *net, nc_neocog_learner *lr, uint32_t l,
                      const float *image, const nc_neocog_learn_opts *o,
                      nc_neocog_learn_step *ret)
{
    int r = check_opts(net, l, o);
    if (r < 0)
        return r;
    memset(ret, 0, sizeof(*ret));
    ret->answer = -1;
    return run_below(net, lr, l, image, o->form);
}

int nc_neocog_learn_unsup(nc_neocog *net, nc_neocog_learner *lr, uint32_t l,
                          const float *image, const nc_neocog_learn_opts *o,
                          nc_neocog_learn_step *ret)
{
    if (!net || !lr || !image || !o || !ret || l < 1 || l + 1 >= net->arch.n_stages)
        return -EINVAL;
    int r = begin_step(net, lr, l, image, o, ret);
    if (r < 0)
        return r;
    const uint32_t n = net->arch.stage[l].s_size, k_max = net->arch.stage[l].k_max;
    const size_t n_o = (size_t)n * n;
    const float th = net->arch.stage[l].theta;
    const float th_i = o->theta_inhib[l] > 0.0f ? o->theta_inhib[l] : th;
    if (!(nc_neocog_seed_map_(net, l, lr->in, o->seed_cut, lr->m) > 0.0f))
        return 0;                       /* nothing reaches this stage */

    if (o->add_if_silent) {
        /* h = strongest response at each position, at the inhibition
         * threshold: at theta_L the cells are too narrow and every pattern
         * finds them silent (on MNIST US2 / US3 reached k_max within the
         * first 400 digits with no reinforcement: the spec's first open
         * point again) */
        for (size_t p = 0; p < n_o; p++)
            lr->h[p] = 0.0f;
        if (net->n_planes[l] > 0) {
            if ((r = s_resp(net, lr, l, th_i, lr->in, &lr->r, &lr->cap_r)) < 0)
                return r;
            const uint32_t ks = nc_neocog_kstride(net->n_planes[l]);
            for (size_t p = 0; p < n_o; p++)
                for (uint32_t k = 0; k < net->n_planes[l]; k++)
                    lr->h[p] = lr->r[p * ks + k] > lr->h[p] ? lr->r[p * ks + k] : lr->h[p];
        }
        for (;;) {
            size_t best = argmax(lr->m, n_o);
            if (!(lr->m[best] > 0.0f))
                break;
            if (!(lr->h[best] > 0.0f)) {
                if (net->n_planes[l] >= k_max) {
                    ret->at_k_max = 1;
                    break;
                }
                uint32_t k = 0;
                if ((r = open_plane(net, lr->in, l, 0, best, o->q[l], &k)) < 0)
                    return r;
                ret->created++;
                /* the new cell counts as not silent wherever it fires, so one
                 * long stroke does not open a copy of itself at every step */
                plane_resp(net, l, k, th_i, lr->in, lr->resp);
                for (size_t p = 0; p < n_o; p++)
                    lr->h[p] = lr->resp[p] > lr->h[p] ? lr->resp[p] : lr->h[p];
            }
            zero_disc(lr->m, n, best, o->d);
        }
        return 0;
    }

    if (net->n_planes[l] > 0) {
        if ((r = s_resp(net, lr, l, o->theta_l[l], lr->in, &lr->r, &lr->cap_r)) < 0)
            return r;
        if ((r = reinforce_winners(net, lr, l, o, &ret->reinforced)) < 0)
            return r;
        /* what the (just reinforced) planes explain, at the inhibition
         * threshold: at theta_L the responses are too narrow and every
         * pattern would open planes (spec, first open point) */
        if ((r = s_resp(net, lr, l, th_i, lr->in, &lr->ri, &lr->cap_ri)) < 0)
            return r;
        const uint32_t ks = nc_neocog_kstride(net->n_planes[l]);
        for (size_t p = 0; p < n_o; p++) {
            float s = 0.0f;
            for (uint32_t k = 0; k < net->n_planes[l]; k++)
                s += lr->ri[p * ks + k];
            lr->resp[p] = s;
        }
        nc_neocog_inhibit_(lr->m, lr->resp, n, o->d, o->inhib_gain);
    }
    for (;;) {
        size_t best = argmax(lr->m, n_o);
        if (!(lr->m[best] > 0.0f))
            break;
        if (net->n_planes[l] >= k_max) {
            ret->at_k_max = 1;
            break;
        }
        uint32_t k = 0;
        if ((r = open_plane(net, lr->in, l, 0, best, o->q[l], &k)) < 0)
            return r;
        ret->created++;
        plane_resp(net, l, k, th_i, lr->in, lr->resp);
        nc_neocog_inhibit_(lr->m, lr->resp, n, o->d, o->inhib_gain);
        /* without this the same spot can seed planes without end (spec) */
        zero_disc(lr->m, n, best, o->d);
    }
    return 0;
}

/* ---- parts ---------------------------------------------------------------------- */

int nc_neocog_learner_set_runner(nc_neocog_learner *lr, uint32_t n_parts,
                                 nc_neocog_runner_fn run, void *ctx)
{
    if (!lr || n_parts < 1 || n_parts > NC_NEOCOG_MAX_PARTS)
        return -EINVAL;
    if (n_parts != lr->n_parts || !lr->pst) {
        nc_neocog_state **pst = calloc(n_parts, sizeof(*pst));
        float *pv2 = malloc((size_t)n_parts * lr->cap_o * sizeof(float));
        if (!pst || !pv2) {
            free(pst);
            free(pv2);
            return -ENOMEM;
        }
        for (uint32_t p = 1; lr->pst && p < lr->n_parts; p++) {
            if (p < n_parts)
                pst[p] = lr->pst[p];        /* keep what is still used */
            else
                nc_neocog_state_free(lr->pst[p]);
        }
        pst[0] = lr->st;
        free(lr->pst);
        free(lr->pv2);
        lr->pst = pst;
        lr->pv2 = pv2;
        lr->n_parts = n_parts;
    }
    lr->run = run;
    lr->run_ctx = ctx;
    lr->split = 1;
    return 0;
}

/* task(arg, p) for every part: through the lent runner, else (none, or it
 * declined) in turn here. */
static void run_parts(nc_neocog_learner *lr, nc_neocog_task_fn task, void *arg)
{
    if (lr->n_parts > 1 && lr->run && lr->run(lr->run_ctx, task, arg, lr->n_parts) == 0)
        return;
    for (uint32_t p = 0; p < lr->n_parts; p++)
        task(arg, p);
}

/* Stage l's responses by plane ranges: part p computes planes in units of 8
 * [U p / P, U (p + 1) / P) of U = ks / 8 units. */
typedef struct resp_job {
    nc_neocog_s_args s;
    const float *in;
    float *out, *v2;
    size_t v2_stride;
    uint32_t units, parts;
} resp_job;

static void resp_task(void *arg, uint32_t p)
{
    const resp_job *j = arg;
    const uint32_t u0 = (uint32_t)((uint64_t)j->units * p / j->parts);
    const uint32_t u1 = (uint32_t)((uint64_t)j->units * (p + 1) / j->parts);
    if (u1 > u0)
        nc_neocog_s_slice_(&j->s, j->in, j->out, j->v2 + p * j->v2_stride, 8 * u0, 8 * u1);
}

/* s_resp over the parts: the same values, bit for bit, for any split. */
static int par_resp(const nc_neocog *net, nc_neocog_learner *lr, uint32_t l,
                    float theta, const float *in, float **out, size_t *cap)
{
    const nc_neocog_index *ix = net->s_ix[l];
    const uint32_t K = net->n_planes[l], ks = nc_neocog_kstride(K);
    resp_job j = {
        .s = nc_neocog_stage_s_args_(net, l, theta),
        .in = in, .v2 = lr->pv2, .v2_stride = lr->cap_o, .units = ks / 8,
        .parts = lr->n_parts,
    };
    if (K < 1 || j.s.k_in < 1 || !(theta > 0.0f && theta < 1.0f))
        return -EINVAL;
    int r = grow_f(out, cap, (size_t)ix->n_out * ix->n_out * ks);
    if (r < 0)
        return r;
    j.out = *out;
    run_parts(lr, resp_task, &j);
    return 0;
}

/* ---- supervised last stage ---------------------------------------------------- */

/* One supervised step on the stage's input in (held outside st). */
static int sup_step(nc_neocog *net, nc_neocog_learner *lr, const float *in,
                    uint32_t label, const nc_neocog_learn_opts *o, int split,
                    nc_neocog_learn_step *ret)
{
    const uint32_t l = net->arch.n_stages - 1;
    const uint32_t n = net->arch.stage[l].s_size, K = net->n_planes[l];
    const size_t n_o = (size_t)n * n;
    int r;
    memset(ret, 0, sizeof(*ret));
    ret->answer = -1;
    if (K > 0) {
        r = split ? par_resp(net, lr, l, o->theta_l[l], in, &lr->r, &lr->cap_r)
                  : s_resp(net, lr, l, o->theta_l[l], in, &lr->r, &lr->cap_r);
        if (r < 0)
            return r;
        const uint32_t ks = nc_neocog_kstride(K);
        float best = 0.0f;
        size_t bp = 0;
        uint32_t bk = 0;
        for (size_t p = 0; p < n_o; p++)
            for (uint32_t k = 0; k < K; k++)
                if (lr->r[p * ks + k] > best) {
                    best = lr->r[p * ks + k];
                    bp = p;
                    bk = k;
                }
        if (best > 0.0f) {
            ret->answer = (int32_t)net->labels[bk];
            if (net->labels[bk] == label) {
                ret->reinforced = 1;
                return nc_neocog_reinforce(net, l, bk, (uint32_t)(bp / n),
                                           (uint32_t)(bp % n), o->q[l], in);
            }
        }
    }
    if (!(nc_neocog_seed_map_(net, l, in, o->seed_cut, lr->m) > 0.0f))
        return 0;
    if (K >= net->arch.stage[l].k_max) {
        ret->at_k_max = 1;
        return 0;
    }
    uint32_t k = 0;
    if ((r = open_plane(net, in, l, label, argmax(lr->m, n_o), o->q[l], &k)) < 0)
        return r;
    ret->created = 1;
    return 0;
}

int nc_neocog_learn_sup(nc_neocog *net, nc_neocog_learner *lr,
                        const float *image, uint32_t label,
                        const nc_neocog_learn_opts *o, nc_neocog_learn_step *ret)
{
    if (!net || !lr || !image || !o || !ret || net->arch.n_stages < 2)
        return -EINVAL;
    const uint32_t l = net->arch.n_stages - 1;
    if (label >= net->arch.n_classes)
        return -EINVAL;
    int r = begin_step(net, lr, l, image, o, ret);
    if (r < 0)
        return r;
    return sup_step(net, lr, lr->in, label, o, lr->split, ret);
}

/* The frozen stages of a batch, part p taking patterns p, p + P, p + 2P, ..
 * with its own state; fail[p]: the first pattern it could not do (n: none). */
typedef struct below_job {
    const nc_neocog *net;
    nc_neocog_learner *lr;
    const float *images;
    uint32_t l, n;
    int form;
    size_t cells, stride;
    uint32_t fail[NC_NEOCOG_MAX_PARTS];
    int err[NC_NEOCOG_MAX_PARTS];
} below_job;

static void below_task(void *arg, uint32_t p)
{
    below_job *j = arg;
    nc_neocog_learner *lr = j->lr;
    int r = 0;
    j->fail[p] = j->n;
    j->err[p] = 0;
    if (!lr->pst[p] && (r = nc_neocog_state_new(j->net, &lr->pst[p])) < 0) {
        j->fail[p] = p;
        j->err[p] = r;
        return;
    }
    for (uint32_t i = p; i < j->n; i += lr->n_parts)
        if ((r = below_into(j->net, lr->pst[p], j->l, j->images + i * j->cells, j->form,
                            lr->bin + i * j->stride)) < 0) {
            j->fail[p] = i;
            j->err[p] = r;
            return;
        }
}

int nc_neocog_learn_sup_batch(nc_neocog *net, nc_neocog_learner *lr,
                              const float *images, const uint32_t *labels,
                              uint32_t n, const nc_neocog_learn_opts *o,
                              nc_neocog_learn_step *steps, uint32_t *ret_done)
{
    if (ret_done)
        *ret_done = 0;
    if (!net || !lr || (n && (!images || !labels || !steps)) || !o ||
        net->arch.n_stages < 2)
        return -EINVAL;
    const uint32_t l = net->arch.n_stages - 1;
    for (uint32_t i = 0; i < n; i++)
        if (labels[i] >= net->arch.n_classes)
            return -EINVAL;
    int r = check_opts(net, l, o);
    if (r < 0 || n == 0)
        return r;
    below_job *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    *j = (below_job){
        .net = net, .lr = lr, .images = images, .l = l, .n = n, .form = o->form,
        .cells = (size_t)net->arch.in_size * net->arch.in_size,
        .stride = in_floats(net, l),
    };
    size_t need;
    if ((r = nc_size_mul(j->stride, n, &need)) < 0 ||
        (r = grow_f(&lr->bin, &lr->cap_bin, need)) < 0) {
        free(j);
        return r;
    }
    /* the lower stages are frozen: all of the batch at once */
    run_parts(lr, below_task, j);
    uint32_t ok = n;
    int err = 0;
    for (uint32_t p = 0; p < lr->n_parts; p++)
        if (j->err[p] < 0 && j->fail[p] < ok) {
            ok = j->fail[p];
            err = j->err[p];
        }
    const size_t stride = j->stride;
    free(j);
    /* then learning, in order, one pattern at a time */
    uint32_t i = 0;
    for (; i < ok && r == 0; i++)
        r = sup_step(net, lr, lr->bin + i * stride, labels[i], o, 1, &steps[i]);
    if (r < 0)
        i--;
    if (ret_done)
        *ret_done = i;
    return r < 0 ? r : err;
}

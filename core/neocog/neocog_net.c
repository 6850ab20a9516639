/* core/neocog/neocog_net.c — the neocognitron as data: the stage table, the model
 * (fixed taps + learned weights in one block), plane growth, activations and
 * the forward pass that strings the layers together.
 *
 * Layer: core. */
#include "neocog_impl.h"

#include <math.h>
#include <string.h>

/* ---- the stage table ------------------------------------------------------ */

void nc_neocog_arch_default(nc_neocog_arch *ret)
{
    /* spec "Recognition pass" and "Geometry": pads UG 6, US1 1, UC1 11,
     * US2 3, UC2 8, US3 3, UC3 5, US4 0; C-layers step 2. */
    static const nc_neocog_arch def = {
        .in_size = 65, .g_size = 71, .g_win = 7, .g_pad = 6,
        .g_radius_o = 1.5f, .g_radius = 3.3f, .g_cut = 1e-4f,
        .n_classes = 10, .n_stages = 4,
        .stage = {
            { .s_size = 68, .s_win = 6, .s_pad = 1, .s_grid = NC_NEOCOG_GRID_STAGGERED,
              .s_radius = 3.4f, .theta = 0.55f, .gamma = 0.7f, .k_max = 16,
              .c_kind = NC_NEOCOG_C_POOL, .c_size = 37, .c_win = 18, .c_pad = 11,
              .c_step = 2, .c_grid = NC_NEOCOG_GRID_STAGGERED,
              .c_radius_o = 3.4f, .c_radius = 9.4f },
            { .s_size = 38, .s_win = 6, .s_pad = 3, .s_grid = NC_NEOCOG_GRID_STAGGERED,
              .s_radius = 3.4f, .theta = 0.51f, .gamma = 0.7f, .k_max = 200,
              .c_kind = NC_NEOCOG_C_POOL, .c_size = 21, .c_win = 14, .c_pad = 8,
              .c_step = 2, .c_grid = NC_NEOCOG_GRID_STAGGERED,
              .c_radius_o = 3.4f, .c_radius = 7.4f },
            { .s_size = 22, .s_win = 6, .s_pad = 3, .s_grid = NC_NEOCOG_GRID_STAGGERED,
              .s_radius = 3.4f, .theta = 0.58f, .gamma = 0.7f, .k_max = 300,
              .c_kind = NC_NEOCOG_C_POOL, .c_size = 13, .c_win = 8, .c_pad = 5,
              .c_step = 2, .c_grid = NC_NEOCOG_GRID_STAGGERED,
              .c_radius_o = 4.4f, .c_radius = 4.4f },
            { .s_size = 5, .s_win = 9, .s_pad = 0, .s_grid = NC_NEOCOG_GRID_ALIGNED,
              .s_radius = 4.9f, .theta = 0.30f, .gamma = 0.6f, .k_max = 1000,
              .c_kind = NC_NEOCOG_C_CLASS },
        },
    };
    *ret = def;
}

static int sane_radius(float r)
{
    return isfinite(r) && r > 0.0f && r < 2.0f * NC_NEOCOG_MAX_WIN;
}

/* One correlation: sizes chain exactly and the grid flag matches the parity. */
static int geom_ok(uint32_t n_in, uint32_t n_out, uint32_t win, uint32_t pad,
                   uint32_t step, uint32_t grid)
{
    if (n_in < 1 || n_in > NC_NEOCOG_MAX_SIZE || n_out < 1 ||
        n_out > NC_NEOCOG_MAX_SIZE || win < 1 || win > NC_NEOCOG_MAX_WIN ||
        pad >= win || step < 1 || step > 4 || grid > 1)
        return 0;
    if (grid != (win % 2 == 0 ? NC_NEOCOG_GRID_STAGGERED : NC_NEOCOG_GRID_ALIGNED))
        return 0;
    return n_in + 2 * pad >= win && (n_in + 2 * pad - win) % step == 0 &&
           (n_in + 2 * pad - win) / step + 1 == n_out;
}

int nc_neocog_arch_check(const nc_neocog_arch *a)
{
    if (!a || a->n_stages < 1 || a->n_stages > NC_NEOCOG_MAX_STAGES ||
        a->n_classes < 1 || a->n_classes > NC_NEOCOG_MAX_CLASSES)
        return -EINVAL;
    if (!geom_ok(a->in_size, a->g_size, a->g_win, a->g_pad, 1,
                 a->g_win % 2 == 0) ||
        !sane_radius(a->g_radius) || !sane_radius(a->g_radius_o) ||
        a->g_radius_o >= a->g_radius || !isfinite(a->g_cut) || a->g_cut < 0.0f)
        return -EINVAL;
    uint32_t n = a->g_size;
    for (uint32_t l = 0; l < a->n_stages; l++) {
        const nc_neocog_stage *s = &a->stage[l];
        int last = l + 1 == a->n_stages;
        if (!geom_ok(n, s->s_size, s->s_win, s->s_pad, 1, s->s_grid) ||
            !sane_radius(s->s_radius) || !(s->theta > 0.0f && s->theta < 1.0f) ||
            !(s->gamma > 0.0f && s->gamma <= 1.0f) || s->k_max < 1 ||
            s->k_max > NC_NEOCOG_MAX_PLANES)
            return -EINVAL;
        if (s->c_kind != (last ? NC_NEOCOG_C_CLASS : NC_NEOCOG_C_POOL))
            return -EINVAL;
        if (!last) {
            if (!geom_ok(s->s_size, s->c_size, s->c_win, s->c_pad, s->c_step,
                         s->c_grid) ||
                !sane_radius(s->c_radius) || !sane_radius(s->c_radius_o) ||
                s->c_radius_o > s->c_radius)
                return -EINVAL;
            n = s->c_size;
        } else if (s->c_size || s->c_win || s->c_pad || s->c_step || s->c_grid ||
                   s->c_radius_o != 0.0f || s->c_radius != 0.0f) {
            return -EINVAL;     /* UC4 has no window: unused fields stay 0 */
        }
    }
    return 0;
}

/* ---- the model ------------------------------------------------------------ */

uint32_t nc_neocog_k_in(const nc_neocog *net, uint32_t l)
{
    return l == 0 ? 2u : net->n_planes[l - 1];
}

uint32_t nc_neocog_in_stride_(const nc_neocog *net, uint32_t l)
{
    return l == 0 ? 8u : nc_neocog_kstride(net->n_planes[l - 1]);
}

nc_neocog_s_args nc_neocog_stage_s_args_(const nc_neocog *net, uint32_t l, float theta)
{
    return (nc_neocog_s_args){
        .ix = net->s_ix[l], .k_in = nc_neocog_k_in(net, l),
        .in_stride = nc_neocog_in_stride_(net, l), .k_out = net->n_planes[l],
        .a = net->a[l], .b = net->b[l], .c = net->s_c[l], .theta = theta,
    };
}

/* Floats of stage l's weights for plane counts planes[]: a then b. */
static int stage_floats(const nc_neocog *net, const uint32_t *planes,
                        uint32_t l, size_t *ret_a, size_t *ret_b)
{
    size_t k_in = l == 0 ? 2u : planes[l - 1], n;
    size_t ks = nc_neocog_kstride(planes[l]);
    if (nc_size_mul(k_in, net->s_ix[l]->n_live, &n) < 0 ||
        nc_size_mul(n, ks, &n) < 0)
        return -EOVERFLOW;
    *ret_a = n;
    *ret_b = ks;
    return 0;
}

/* Lay the learned weights out for plane counts planes[] in one new block,
 * copying what the old layout held (planes only ever get appended). */
static int relayout(nc_neocog *net, const uint32_t *planes)
{
    size_t na[NC_NEOCOG_MAX_STAGES], nb[NC_NEOCOG_MAX_STAGES], total = 0;
    for (uint32_t l = 0; net->params && l < net->arch.n_stages; l++)
        if (!net->a[l])
            return -EINVAL;     /* weights handed to packs: the net cannot grow */
    for (uint32_t l = 0; l < net->arch.n_stages; l++) {
        int r = stage_floats(net, planes, l, &na[l], &nb[l]);
        if (r < 0)
            return r;
        total += na[l] + nb[l];
        if (total > ((size_t)1 << 31))
            return -EOVERFLOW;
    }
    float *block = calloc(total ? total : 1, sizeof(float));
    if (!block)
        return -ENOMEM;
    float *a[NC_NEOCOG_MAX_STAGES], *b[NC_NEOCOG_MAX_STAGES], *cur = block;
    for (uint32_t l = 0; l < net->arch.n_stages; l++) {
        a[l] = cur; cur += na[l];
        b[l] = cur; cur += nb[l];
    }
    if (net->params)
        for (uint32_t l = 0; l < net->arch.n_stages; l++) {
            uint32_t nl = net->s_ix[l]->n_live;
            uint32_t k_old = net->n_planes[l], kin_old = nc_neocog_k_in(net, l);
            size_t ks_old = nc_neocog_kstride(k_old);
            size_t ks_new = nc_neocog_kstride(planes[l]);
            for (size_t r = 0; r < (size_t)kin_old * nl; r++)
                memcpy(a[l] + r * ks_new, net->a[l] + r * ks_old,
                       k_old * sizeof(float));
            memcpy(b[l], net->b[l], k_old * sizeof(float));
        }
    free(net->params);
    net->params = block;
    net->n_params = total;
    for (uint32_t l = 0; l < net->arch.n_stages; l++) {
        net->a[l] = a[l];
        net->b[l] = b[l];
        net->n_planes[l] = planes[l];
    }
    return 0;
}

int nc_neocog_new(const nc_neocog_arch *arch, nc_neocog **ret_net)
{
    if (!ret_net || nc_neocog_arch_check(arch) < 0)
        return -EINVAL;
    nc_neocog *net = calloc(1, sizeof(*net));
    if (!net)
        return -ENOMEM;
    net->arch = *arch;
    const nc_neocog_arch *A = arch;
    int r = nc_neocog_index_new(A->in_size, A->g_size, A->g_win, A->g_pad, 1,
                                A->g_radius, &net->g_ix);
    uint32_t n = A->g_size;
    for (uint32_t l = 0; r == 0 && l < A->n_stages; l++) {
        const nc_neocog_stage *s = &A->stage[l];
        r = nc_neocog_index_new(n, s->s_size, s->s_win, s->s_pad, 1,
                                s->s_radius, &net->s_ix[l]);
        if (r == 0 && s->c_kind == NC_NEOCOG_C_POOL) {
            r = nc_neocog_index_new(s->s_size, s->c_size, s->c_win, s->c_pad,
                                    s->c_step, s->c_radius, &net->c_ix[l]);
            n = s->c_size;
        }
    }
    if (r < 0)
        goto fail;

    /* fixed taps in one allocation */
    size_t nf = net->g_ix->n_live;
    for (uint32_t l = 0; l < A->n_stages; l++)
        nf += net->s_ix[l]->n_live + (net->c_ix[l] ? net->c_ix[l]->n_live : 0);
    float *f = malloc(nf * sizeof(float));
    if (!f) {
        r = -ENOMEM;
        goto fail;
    }
    net->fixed_ = f;
    net->g_w = f;
    nc_neocog_taps_ug(net->g_ix, A->g_radius_o, f);
    f += net->g_ix->n_live;
    for (uint32_t l = 0; l < A->n_stages; l++) {
        net->s_c[l] = f;
        nc_neocog_taps_vcell(net->s_ix[l], A->stage[l].gamma, f);
        f += net->s_ix[l]->n_live;
        if (net->c_ix[l]) {
            net->c_d[l] = f;
            nc_neocog_taps_ccell(net->c_ix[l], A->stage[l].c_radius_o, f);
            f += net->c_ix[l]->n_live;
        }
    }
    uint32_t zero[NC_NEOCOG_MAX_STAGES] = {0};
    r = relayout(net, zero);
    if (r < 0)
        goto fail;
    *ret_net = net;
    return 0;
fail:
    nc_neocog_free(net);
    return r;
}

void nc_neocog_free(nc_neocog *net)
{
    if (!net)
        return;
    nc_neocog_index_free(net->g_ix);
    for (uint32_t l = 0; l < NC_NEOCOG_MAX_STAGES; l++) {
        nc_neocog_index_free(net->s_ix[l]);
        nc_neocog_index_free(net->c_ix[l]);
    }
    free(net->fixed_);
    free(net->params);
    free(net->labels);
    free(net);
}

int nc_neocog_add_plane(nc_neocog *net, uint32_t l, uint32_t label,
                        uint32_t *ret_k)
{
    if (!net || l >= net->arch.n_stages)
        return -EINVAL;
    int last = l + 1 == net->arch.n_stages;
    if (last && label >= net->arch.n_classes)
        return -EINVAL;
    uint32_t k = net->n_planes[l];
    if (k >= net->arch.stage[l].k_max)
        return -ERANGE;
    for (uint32_t s = 0; net->params && s < net->arch.n_stages; s++)
        if (!net->a[s])
            return -EINVAL;     /* weights handed to packs: the net cannot grow */
    if (last) {
        uint32_t *lab = realloc(net->labels, (k + 1) * sizeof(*lab));
        if (!lab)
            return -ENOMEM;
        net->labels = lab;
        lab[k] = label;
    }
    /* The last stage's new plane takes a pad lane when the stride keeps
     * its size: pad lanes are 0, as a relayout would leave them, and no
     * later stage's shape depends on it.  This spares US4 learning a copy
     * of the whole weight block for 7 planes in 8. */
    if (last && net->params && nc_neocog_kstride(k + 1) == nc_neocog_kstride(k)) {
        net->n_planes[l] = k + 1;
        if (ret_k)
            *ret_k = k;
        return 0;
    }
    uint32_t planes[NC_NEOCOG_MAX_STAGES];
    memcpy(planes, net->n_planes, sizeof(planes));
    planes[l] = k + 1;
    int r = relayout(net, planes);
    if (r < 0)
        return r;
    if (ret_k)
        *ret_k = k;
    return 0;
}

int nc_neocog__set_planes(nc_neocog *net, const uint32_t *planes,
                          const uint32_t *labels)
{
    const uint32_t L = net->arch.n_stages;
    for (uint32_t l = 0; l < L; l++)
        if (planes[l] < net->n_planes[l] || planes[l] > net->arch.stage[l].k_max)
            return -EINVAL;
    uint32_t *lab = calloc(planes[L - 1] ? planes[L - 1] : 1, sizeof(*lab));
    if (!lab)
        return -ENOMEM;
    if (labels)
        memcpy(lab, labels, planes[L - 1] * sizeof(*lab));
    else if (net->labels)
        memcpy(lab, net->labels, net->n_planes[L - 1] * sizeof(*lab));
    int r = relayout(net, planes);
    if (r < 0) {
        free(lab);
        return r;
    }
    free(net->labels);
    net->labels = lab;
    return 0;
}

/* ---- activations ---------------------------------------------------------- */

static size_t al16(size_t n) { return (n + 15u) & ~(size_t)15u; }   /* 64 bytes */

/* (Re)size st's buffers for net's current plane counts. */
static int state_fit(const nc_neocog *net, nc_neocog_state *st)
{
    const nc_neocog_arch *A = &net->arch;
    if (st->block_ && !memcmp(st->fit_planes, net->n_planes, sizeof(st->fit_planes)))
        return 0;
    size_t n_u0 = al16((size_t)A->in_size * A->in_size);
    size_t n_ug = al16((size_t)A->g_size * A->g_size * 8);
    size_t n_ws = (size_t)A->g_size * A->g_size + 8;
    size_t n_us[NC_NEOCOG_MAX_STAGES] = {0}, n_uc[NC_NEOCOG_MAX_STAGES] = {0};
    size_t total = n_u0 + n_ug;
    for (uint32_t l = 0; l < A->n_stages; l++) {
        size_t ks = nc_neocog_kstride(net->n_planes[l]);
        size_t ns = (size_t)A->stage[l].s_size * A->stage[l].s_size;
        n_us[l] = al16(ns * ks);
        if (ns + ks > n_ws)
            n_ws = ns + ks;
        if (net->c_ix[l]) {
            size_t nc = (size_t)A->stage[l].c_size * A->stage[l].c_size;
            n_uc[l] = al16(nc * ks);
            if (nc + ks > n_ws)
                n_ws = nc + ks;
        }
        total += n_us[l] + n_uc[l];
    }
    n_ws = al16(n_ws);
    total += n_ws;
    float *block = st->block_;
    if (!block || total * sizeof(float) > st->cap_) {
        block = aligned_alloc(64, total * sizeof(float));
        if (!block)
            return -ENOMEM;
        memset(block, 0, total * sizeof(float));
        if (st->block_)     /* keep the input across a re-fit */
            memcpy(block, st->u0, (size_t)A->in_size * A->in_size * sizeof(float));
        free(st->block_);
        st->block_ = block;
        st->cap_ = total * sizeof(float);
    }
    /* Within the allocation (a state re-fitted to another committee
     * member, as the CPU engine does) u0 stays where it was, and the rest
     * need not be cleared: every layer writes all of its output, pad lanes
     * included, before anything reads it. */
    float *cur = block;
    st->bytes_ = total * sizeof(float);
    st->u0 = cur; cur += n_u0;
    st->ug = cur; cur += n_ug;
    for (uint32_t l = 0; l < NC_NEOCOG_MAX_STAGES; l++) {
        st->us[l] = n_us[l] ? cur : NULL; cur += n_us[l];
        st->uc[l] = n_uc[l] ? cur : NULL; cur += n_uc[l];
    }
    st->ws = cur;
    memcpy(st->fit_planes, net->n_planes, sizeof(st->fit_planes));
    return 0;
}

int nc_neocog_state_new(const nc_neocog *net, nc_neocog_state **ret_st)
{
    if (!net || !ret_st)
        return -EINVAL;
    nc_neocog_state *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    int r = state_fit(net, st);
    if (r < 0) {
        free(st);
        return r;
    }
    st->label = -1;
    *ret_st = st;
    return 0;
}

void nc_neocog_state_free(nc_neocog_state *st)
{
    if (!st)
        return;
    free(st->block_);
    free(st);
}

int nc_neocog_state_copy(nc_neocog_state *dst, const nc_neocog_state *src)
{
    if (!dst || !src || !dst->block_ || !src->block_ || dst->bytes_ != src->bytes_ ||
        memcmp(dst->fit_planes, src->fit_planes, sizeof(dst->fit_planes)))
        return -EINVAL;
    memcpy(dst->block_, src->block_, src->bytes_);
    dst->label = src->label;
    memcpy(dst->score, src->score, sizeof(dst->score));
    return 0;
}

/* ---- forward -------------------------------------------------------------- */

/* UC4: per class, the largest response of any last-stage plane with that
 * label at any position; the answer is the class holding the overall
 * largest, or -1 (reject) when no S-cell fired. */
static void class_max(const nc_neocog *net, nc_neocog_state *st)
{
    const uint32_t L = net->arch.n_stages - 1, K = net->n_planes[L];
    const uint32_t ks = nc_neocog_kstride(K);
    const size_t n = (size_t)net->arch.stage[L].s_size * net->arch.stage[L].s_size;
    for (uint32_t c = 0; c < NC_NEOCOG_MAX_CLASSES; c++)
        st->score[c] = 0.0f;
    for (size_t o = 0; o < n; o++)
        for (uint32_t k = 0; k < K; k++) {
            float u = st->us[L][o * ks + k];
            uint32_t c = net->labels[k];
            if (u > st->score[c])
                st->score[c] = u;
        }
    int32_t best = -1;
    float bv = 0.0f;
    for (uint32_t c = 0; c < net->arch.n_classes; c++)
        if (st->score[c] > bv) {
            bv = st->score[c];
            best = (int32_t)c;
        }
    st->label = best;
}

int nc_neocog_run_layer(const nc_neocog *net, nc_neocog_state *st,
                        int layer, int form)
{
    if (!net || !st || layer < 0 || layer > 2 * (int)net->arch.n_stages)
        return -EINVAL;
    int r = state_fit(net, st);
    if (r < 0)
        return r;
    if (layer == NC_NEOCOG_L_UG)
        return nc_neocog_g_forward(net->g_ix, net->g_w, net->arch.g_cut,
                                   st->u0, st->ug, st->ws, form);
    uint32_t l = (uint32_t)(layer - 1) / 2;
    uint32_t K = net->n_planes[l];
    if (K < 1 || nc_neocog_k_in(net, l) < 1)
        return -EINVAL;
    if ((layer - 1) % 2 == 0) {
        const nc_neocog_s_args s = nc_neocog_stage_s_args_(net, l, net->arch.stage[l].theta);
        return nc_neocog_s_forward(&s, l == 0 ? st->ug : st->uc[l - 1],
                                   st->us[l], st->ws, form);
    }
    if (net->c_ix[l])
        return nc_neocog_c_forward(net->c_ix[l], net->c_d[l], K, st->us[l],
                                   st->uc[l], st->ws, form);
    class_max(net, st);
    return 0;
}

int nc_neocog_forward(const nc_neocog *net, nc_neocog_state *st,
                      const float *input, int form, nc_neocog_result *ret)
{
    if (!net || !st || !input)
        return -EINVAL;
    for (uint32_t l = 0; l < net->arch.n_stages; l++)
        if (net->n_planes[l] < 1)
            return -EINVAL;
    int r = state_fit(net, st);
    if (r < 0)
        return r;
    memcpy(st->u0, input, (size_t)net->arch.in_size * net->arch.in_size * sizeof(float));
    for (int layer = 0; layer <= 2 * (int)net->arch.n_stages; layer++) {
        r = nc_neocog_run_layer(net, st, layer, form);
        if (r < 0)
            return r;
    }
    if (ret) {
        ret->label = st->label;
        ret->n_classes = net->arch.n_classes;
        memcpy(ret->score, st->score, sizeof(ret->score));
    }
    return 0;
}

int nc_neocog_packs_new(const nc_neocog *net, size_t min_bytes, nc_neocog_packs **ret_pk)
{
    if (!net || !ret_pk)
        return -EINVAL;
    nc_neocog_packs *pk = calloc(1, sizeof *pk);
    if (!pk)
        return -ENOMEM;
    for (uint32_t l = 0; l < net->arch.n_stages; l++) {
        const size_t bytes = (size_t)nc_neocog_k_in(net, l) * net->s_ix[l]->n_live *
                             nc_neocog_kstride(net->n_planes[l]) * sizeof(float);
        if (net->n_planes[l] < 1 || bytes < min_bytes)
            continue;
        const nc_neocog_s_args s = nc_neocog_stage_s_args_(net, l, net->arch.stage[l].theta);
        int r = nc_neocog_s_pack_new(&s, &pk->s[l]);
        if (r < 0) {
            nc_neocog_packs_free(pk);
            return r;
        }
        pk->bytes += bytes;
    }
    *ret_pk = pk;
    return 0;
}

int nc_neocog_packs_take(nc_neocog *net, size_t min_bytes, nc_neocog_packs **ret_pk)
{
    nc_neocog_packs *pk = NULL;
    int r = nc_neocog_packs_new(net, min_bytes, &pk);
    if (r < 0)
        return r;
    /* a new block of the weights the packs do not hold */
    size_t na[NC_NEOCOG_MAX_STAGES], nb[NC_NEOCOG_MAX_STAGES], total = 0;
    for (uint32_t l = 0; l < net->arch.n_stages && !r; l++) {
        r = stage_floats(net, net->n_planes, l, &na[l], &nb[l]);
        total += (pk->s[l] ? 0 : na[l]) + nb[l];
    }
    float *block = r ? NULL : malloc((total ? total : 1) * sizeof(float));
    if (!block) {
        nc_neocog_packs_free(pk);
        return r ? r : -ENOMEM;
    }
    float *cur = block;
    for (uint32_t l = 0; l < net->arch.n_stages; l++) {
        float *a = NULL;
        if (!pk->s[l]) {
            a = memcpy(cur, net->a[l], na[l] * sizeof(float));
            cur += na[l];
        }
        net->b[l] = memcpy(cur, net->b[l], nb[l] * sizeof(float));
        cur += nb[l];
        net->a[l] = a;
    }
    free(net->params);
    net->params = block;
    net->n_params = total;
    *ret_pk = pk;
    return 0;
}

void nc_neocog_packs_free(nc_neocog_packs *pk)
{
    if (!pk)
        return;
    for (uint32_t l = 0; l < NC_NEOCOG_MAX_STAGES; l++)
        nc_neocog_s_pack_free(pk->s[l]);
    free(pk);
}

int nc_neocog_forward_many(const nc_neocog *net, const nc_neocog_packs *pk,
                           nc_neocog_state *const *st, uint32_t n,
                           const float *const *input, nc_neocog_result *ret)
{
    if (!net || !st || !input || n == 0 || n > NC_NEOCOG_MANY_MAX)
        return -EINVAL;
    for (uint32_t l = 0; l < net->arch.n_stages; l++)
        if (net->n_planes[l] < 1)
            return -EINVAL;
    for (uint32_t p = 0; p < n; p++)
        if (!st[p] || !input[p])
            return -EINVAL;
    const float *in_l[NC_NEOCOG_MANY_MAX];
    float *out_l[NC_NEOCOG_MANY_MAX];
    int r = 0;
    for (uint32_t p = 0; p < n && !r; p++) {
        r = state_fit(net, st[p]);
        if (!r)
            memcpy(st[p]->u0, input[p],
                   (size_t)net->arch.in_size * net->arch.in_size * sizeof(float));
    }
    for (int layer = 0; !r && layer <= 2 * (int)net->arch.n_stages; layer++) {
        const uint32_t l = layer > 0 ? (uint32_t)(layer - 1) / 2 : 0;
        if (layer % 2 == 0 || !pk || !pk->s[l]) {     /* UG, C-layers, unpacked S */
            for (uint32_t p = 0; p < n && !r; p++)
                r = nc_neocog_run_layer(net, st[p], layer, NC_NEOCOG_FORM_F);
            continue;
        }
        const nc_neocog_s_args s = nc_neocog_stage_s_args_(net, l, net->arch.stage[l].theta);
        for (uint32_t p = 0; p < n; p++) {
            in_l[p] = l == 0 ? st[p]->ug : st[p]->uc[l - 1];
            out_l[p] = st[p]->us[l];
        }
        r = nc_neocog_s_forward_many(&s, pk->s[l], n, in_l, out_l);
    }
    for (uint32_t p = 0; !r && ret && p < n; p++) {
        ret[p].label = st[p]->label;
        ret[p].n_classes = net->arch.n_classes;
        memcpy(ret[p].score, st[p]->score, sizeof(ret[p].score));
    }
    return r;
}

int nc_neocog_layer_out(const nc_neocog *net, const nc_neocog_state *st,
                        int layer, const float **ret_out, uint32_t *ret_size,
                        uint32_t *ret_planes, uint32_t *ret_stride)
{
    if (!net || !st || layer < 0 || layer > 2 * (int)net->arch.n_stages ||
        memcmp(st->fit_planes, net->n_planes, sizeof(st->fit_planes)))
        return -EINVAL;
    const float *out;
    uint32_t size, planes, stride;
    if (layer == NC_NEOCOG_L_UG) {
        out = st->ug; size = net->arch.g_size; planes = 2; stride = 8;
    } else {
        uint32_t l = (uint32_t)(layer - 1) / 2;
        planes = net->n_planes[l];
        stride = nc_neocog_kstride(planes);
        if ((layer - 1) % 2 == 0) {
            out = st->us[l]; size = net->arch.stage[l].s_size;
        } else if (net->c_ix[l]) {
            out = st->uc[l]; size = net->arch.stage[l].c_size;
        } else {
            out = st->score; size = 1; planes = stride = net->arch.n_classes;
        }
    }
    if (ret_out) *ret_out = out;
    if (ret_size) *ret_size = size;
    if (ret_planes) *ret_planes = planes;
    if (ret_stride) *ret_stride = stride;
    return 0;
}

int nc_neocog_layer_nnz(const nc_neocog *net, const nc_neocog_state *st,
                        int layer, size_t *ret_nnz, size_t *ret_cells)
{
    const float *out;
    uint32_t size, planes, stride;
    int r = nc_neocog_layer_out(net, st, layer, &out, &size, &planes, &stride);
    if (r < 0)
        return r;
    size_t nnz = 0, n = (size_t)size * size;
    for (size_t o = 0; o < n; o++)
        for (uint32_t k = 0; k < planes; k++)
            nnz += out[o * stride + k] > 0.0f;
    if (ret_nnz) *ret_nnz = nnz;
    if (ret_cells) *ret_cells = n * planes;
    return 0;
}

/* core/neocog/neocog_committee.c — committees of neocognitrons in one model file
 * (see neocog.h, "committees").
 *
 * Layer: core, byte buffers only.  The form is the CNN committees' (cnn.h):
 * each member of a file with two or more is a complete one-network file
 * inside a section, so it keeps its own record, CRC and classifier mark, and
 * nc_neocog_load checks it exactly as it checks a file of its own.  Running a
 * committee is the engines' job (backend_cpu.c, gpu/backend/backend_gpu.cu): each
 * member answers as its own file would, and the raw scores are averaged. */
#include "neocog_impl.h"
#include "modelfile_committee.h"

#include <string.h>

/* A one-network file's own sections: a committee file holds neither beside
 * its members (one form per file). */
static const uint32_t net_tags[] = { NC_MF_TAG('N', 'S', 'T', 'G'), NC_NEOCOG_TAG_IV };

static const nc_mf_committee_form form = {
    NC_MF_KIND_NEOCOG, NC_NEOCOG_TAG_NMEM, 'N', 'M', NC_NEOCOG_MAX_MEMBERS, net_tags,
    (uint32_t)NC_ARRAY_LEN(net_tags),
};

const char *nc_neocog_committee_mismatch(const nc_neocog *a, const nc_model_info *ia,
                                         const nc_neocog *b, const nc_model_info *ib)
{
    if (!a || !ia || !b || !ib)
        return "a missing member";
    if (a->arch.in_size != b->arch.in_size)
        return "a different input size";
    if (a->arch.n_classes != b->arch.n_classes)
        return "a different number of classes";
    return nc_mf_info_mismatch(ia, ib);
}

const char *nc_neocog_member_mismatch(const nc_model_info *com, const nc_model_info *mem)
{
    if (!com || !mem)
        return "a missing record";
    if (mem->prep.n_views)
        return "views in a member's own record (they are the committee's)";
    if (!com->prep.n_views)
        return nc_mf_info_mismatch(com, mem);
    int seen = 0;
    for (uint32_t v = 0; v < com->prep.n_views; v++)
        seen |= com->prep.view_deskew[v] == mem->prep.deskew;
    if (!seen)
        return "no view prepared with the member's deskew";
    /* the rest must agree; box and deskew are the views' business */
    nc_model_info *t = malloc(sizeof *t);       /* ~3 KiB: off the stack */
    if (!t)
        return "out of memory";
    *t = *mem;
    t->prep.box = com->prep.box;
    t->prep.deskew = com->prep.deskew;
    const char *why = nc_mf_info_mismatch(com, t);
    free(t);
    return why;
}

/* The network parts members must share: input size and classes. */
static int same_shape(const nc_neocog *a, const nc_neocog *b)
{
    return a->arch.in_size == b->arch.in_size && a->arch.n_classes == b->arch.n_classes;
}

/* One network as a one-network file image, with its classifier mark. */
static int save_one(const nc_neocog *net, const nc_model_info *info, uint32_t top_t,
                    uint32_t flags, uint8_t **ret_buf, size_t *ret_len)
{
    if (top_t > 256)
        return -EINVAL;
    nc_mf_writer *w = NULL;
    int r = nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w);
    if (r == 0) r = nc_neocog_write_flags(net, w, flags);
    if (r == 0 && top_t) r = nc_mf_put_u32(w, NC_NEOCOG_TAG_IV, &top_t, 1);
    if (r == 0) r = nc_mf_put_info(w, info);
    if (r == 0) r = nc_mf_finish(w, ret_buf, ret_len);
    nc_mf_writer_free(w);
    return r;
}

/* Which views of the record's prep member m answers on: those with its own
 * deskew (a bit each); without views, view 0. */
static uint32_t view_mask(const nc_model_info *info, const nc_model_info *member)
{
    if (!info->prep.n_views)
        return 1u;
    uint32_t mask = 0;
    for (uint32_t v = 0; v < info->prep.n_views; v++)
        if (info->prep.view_deskew[v] == member->prep.deskew)
            mask |= 1u << v;
    return mask;
}

/* Each member's views (mask[i], may be NULL) and the number of scores the
 * committee's mean divides by; 0 when every view serves some member and
 * every member sees some view, else -1. */
static int member_views(const nc_model_info *info, const nc_model_info *members, uint32_t n,
                        uint32_t *mask, uint32_t *ret_scores)
{
    uint32_t all = 0, scores = 0;
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t m = view_mask(info, &members[i]);
        if (!m)
            return -1;
        if (mask)
            mask[i] = m;
        all |= m;
        for (uint32_t v = 0; v < NC_PREP_MAX_VIEWS; v++)
            scores += m >> v & 1u;
    }
    *ret_scores = scores;
    /* at most NC_PREP_MAX_VIEWS (8) bits */
    return all == (1u << nc_prep_views(&info->prep)) - 1u ? 0 : -1;
}

typedef struct save_ctx {
    const nc_neocog *const *nets;
    const nc_model_info *info;
    const uint32_t *top_t;
    uint32_t flags;
} save_ctx;

/* Member i as a one-network file image. */
static int member_image(void *ctx, uint32_t i, uint8_t **ret_buf, size_t *ret_len)
{
    const save_ctx *sc = ctx;
    return save_one(sc->nets[i], &sc->info[i], sc->top_t[i], sc->flags, ret_buf, ret_len);
}

int nc_neocog_committee_save(const nc_neocog *const *nets, const nc_model_info *info_i,
                             const uint32_t *top_t, uint32_t n, const nc_model_info *info,
                             uint32_t flags, uint8_t **ret_buf, size_t *ret_len)
{
    if (!nets || !info_i || !top_t || !info || !ret_buf || !ret_len || n < 1 ||
        n > NC_NEOCOG_MAX_MEMBERS)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++)
        if (!nets[i] || !same_shape(nets[0], nets[i]) ||
            info->n_classes != nets[i]->arch.n_classes)
            return -EINVAL;
    uint32_t n_scores;
    if (n == 1)     /* *info becomes the network's own record: as strict as
                       before, and its views must all be of its shear */
        return !nc_mf_info_mismatch(info, &info_i[0]) &&
                       !member_views(info, info, 1, NULL, &n_scores)
                   ? save_one(nets[0], info, top_t[0], flags, ret_buf, ret_len)
                   : -EINVAL;
    for (uint32_t i = 0; i < n; i++)
        if (nc_neocog_member_mismatch(info, &info_i[i]))
            return -EINVAL;
    if (member_views(info, info_i, n, NULL, &n_scores))
        return -EINVAL;
    save_ctx sc = { nets, info_i, top_t, flags };
    return nc_mf_committee_save(&form, n, member_image, &sc, info, ret_buf, ret_len);
}

void nc_neocog_committee_free(nc_neocog_committee *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; c->member && i < c->n_members; i++)
        nc_neocog_free(c->member[i]);
    free(c->member);
    free(c->member_info);
    free(c->iv_top_t);
    free(c->view_mask);
    free(c);
}

static nc_neocog_committee *committee_alloc(uint32_t n)
{
    nc_neocog_committee *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->member = calloc(n, sizeof *c->member);
    c->member_info = calloc(n, sizeof *c->member_info);
    c->iv_top_t = calloc(n, sizeof *c->iv_top_t);
    c->view_mask = calloc(n, sizeof *c->view_mask);
    if (!c->member || !c->member_info || !c->iv_top_t || !c->view_mask) {
        nc_neocog_committee_free(c);
        return NULL;
    }
    c->n_members = n;
    return c;
}

/* One network file, open as r: the network, its record and its mark. */
static int load_one(const nc_mf_reader *r, nc_neocog **ret_net, nc_model_info *ret_info,
                    uint32_t *ret_top_t)
{
    if (nc_mf_kind_of(r) != NC_MF_KIND_NEOCOG)
        return -EBADMSG;
    int err = nc_neocog_read_iv(r, ret_top_t);
    return err ? err : nc_neocog__load_reader(r, ret_net, ret_info);
}

typedef struct load_ctx {
    nc_neocog_committee *c;
    const nc_model_info *info;      /* the committee's own record */
} load_ctx;

/* Member i from its file image, checked against member 0 and the record. */
static int load_member(void *ctx, uint32_t i, const void *data, size_t len)
{
    const load_ctx *lc = ctx;
    nc_neocog_committee *c = lc->c;
    /* a nested committee has no NSTG: the network reader calls it corrupt */
    nc_mf_reader *mr = NULL;
    int err = nc_mf_open(data, len, &mr);
    if (!err)
        err = load_one(mr, &c->member[i], &c->member_info[i], &c->iv_top_t[i]);
    nc_mf_close(mr);
    if (err)
        return nc_mf_committee_corrupt(err);
    if (!same_shape(c->member[0], c->member[i]) ||
        nc_neocog_member_mismatch(lc->info, &c->member_info[i]))
        return -EBADMSG;
    return 0;
}

/* The members of a file with NMEM, checked against its record *info. */
static int load_members(const nc_mf_reader *r, const nc_model_info *info,
                        nc_neocog_committee **ret_c)
{
    uint32_t n;
    int err = nc_mf_committee_count(r, &form, &n);
    if (err)
        return err;
    nc_neocog_committee *c = committee_alloc(n);
    if (!c)
        return -ENOMEM;
    load_ctx lc = { c, info };
    if ((err = nc_mf_committee_each(r, &form, n, load_member, &lc))) {
        nc_neocog_committee_free(c);
        return err;
    }
    *ret_c = c;
    return 0;
}

/* nc_neocog_committee_load, and *why (NULL: none) a sentence for a
 * -EBADMSG of the file as a whole (its classes, views or cascade). */
static int committee_load(const uint8_t *buf, size_t len, nc_neocog_committee **ret_c,
                          nc_model_info *ret_info, const char **why)
{
    *why = NULL;
    if (!buf || !ret_c)
        return -EINVAL;
    nc_mf_reader *r = NULL;
    nc_neocog_committee *c = NULL;
    nc_model_info *info = calloc(1, sizeof *info);      /* ~3 KiB: off the stack */
    if (!info)
        return -ENOMEM;
    int err = nc_mf_open(buf, len, &r);
    if (err)
        goto out;
    if (nc_mf_kind_of(r) != NC_MF_KIND_NEOCOG) {
        err = -EBADMSG;
        goto out;
    }
    if (!nc_mf_committee_is(r, &form)) {
        /* the one-network form */
        if (!(c = committee_alloc(1))) {
            err = -ENOMEM;
            goto out;
        }
        if ((err = load_one(r, &c->member[0], info, &c->iv_top_t[0])))
            goto out;
        c->member_info[0] = *info;
    } else {
        if ((err = nc_mf_get_info(r, info))) {
            err = nc_mf_committee_corrupt(err);
            goto out;
        }
        if ((err = load_members(r, info, &c)))
            goto out;
    }
    if (c->member[0]->arch.n_classes != info->n_classes) {
        *why = "the first member's classes are not the file's";
        err = -EBADMSG;
        goto out;
    }
    /* which views each member answers on; every view must serve one */
    if (member_views(info, c->member_info, c->n_members, c->view_mask, &c->n_scores)) {
        *why = "a member's views are not among the file's, or a view serves no member";
        err = -EBADMSG;
        goto out;
    }
    /* the cascade, when the file has one (neocog_cascade.c) */
    if ((err = nc_neocog_cascade_read(r, c->n_members, &c->cascade, why)))
        goto out;
    if ((*why = nc_neocog_cascade_view_why(&c->cascade, c->view_mask))) {
        err = -EBADMSG;
        goto out;
    }
    if (ret_info)
        *ret_info = *info;
    *ret_c = c;
    c = NULL;
out:
    nc_neocog_committee_free(c);
    nc_mf_close(r);
    free(info);
    return err;
}

int nc_neocog_committee_load(const uint8_t *buf, size_t len, nc_neocog_committee **ret_c,
                             nc_model_info *ret_info)
{
    const char *why;
    return committee_load(buf, len, ret_c, ret_info, &why);
}

const char *nc_neocog_committee_why(const uint8_t *buf, size_t len)
{
    nc_neocog_committee *c = NULL;
    const char *why = NULL;
    if (committee_load(buf, len, &c, NULL, &why) != -EBADMSG)
        why = NULL;
    nc_neocog_committee_free(c);
    return why;
}

int nc_neocog_load_member(const uint8_t *buf, size_t len, uint32_t m, nc_neocog **ret_net,
                          nc_model_info *ret_info, uint32_t *ret_top_t)
{
    if (!ret_net)
        return -EINVAL;
    nc_neocog_committee *c = NULL;
    int err = nc_neocog_committee_load(buf, len, &c, NULL);
    if (err)
        return err;
    if (m >= c->n_members) {
        nc_neocog_committee_free(c);
        return -ENOENT;
    }
    *ret_net = c->member[m];
    c->member[m] = NULL;        /* taken: the committee frees the others */
    if (ret_info)
        *ret_info = c->member_info[m];
    if (ret_top_t)
        *ret_top_t = c->iv_top_t[m];
    nc_neocog_committee_free(c);
    return 0;
}

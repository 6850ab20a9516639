/* core/modelfile/modelfile_committee.c — the committee container of
 * modelfile_committee.h: count, nested member files, record.
 *
 * Layer: core.  Byte buffers only. */
#include "modelfile_committee.h"

#include <stdlib.h>

int nc_mf_committee_save(const nc_mf_committee_form *f, uint32_t n, nc_mf_member_save_fn save_one,
                         void *ctx, const nc_model_info *info, uint8_t **ret_buf,
                         size_t *ret_len)
{
    if (!f || !save_one || !info || !ret_buf || !ret_len || n < 1 || n > f->max_members)
        return -EINVAL;
    nc_mf_writer *mw = NULL;
    int err = nc_mf_writer_new(f->kind, &mw);
    if (err)
        return err;
    err = nc_mf_put_u32(mw, f->count_tag, &n, 1);
    for (uint32_t i = 0; !err && i < n; i++) {
        uint8_t *mb = NULL;
        size_t ml = 0;
        if (!(err = save_one(ctx, i, &mb, &ml)))
            err = nc_mf_put_member(mw, f->p0, f->p1, i, mb, ml);
        free(mb);
    }
    if (!err)
        err = nc_mf_put_info(mw, info);
    if (!err)
        err = nc_mf_finish(mw, ret_buf, ret_len);
    nc_mf_writer_free(mw);
    return err;
}

int nc_mf_committee_is(const nc_mf_reader *r, const nc_mf_committee_form *f)
{
    return nc_mf_get(r, f->count_tag, NULL, NULL, NULL) != -ENOENT;
}

int nc_mf_committee_count(const nc_mf_reader *r, const nc_mf_committee_form *f, uint32_t *ret_n)
{
    uint32_t n;
    if (!r || !f || !ret_n)
        return -EINVAL;
    if (nc_mf_members(r, f->count_tag, f->p0, f->p1, f->max_members, &n))
        return -EBADMSG;
    for (uint32_t t = 0; t < f->n_own_tags; t++)
        if (nc_mf_get(r, f->own_tags[t], NULL, NULL, NULL) != -ENOENT)
            return -EBADMSG;
    *ret_n = n;
    return 0;
}

int nc_mf_committee_each(const nc_mf_reader *r, const nc_mf_committee_form *f, uint32_t n,
                         nc_mf_member_load_fn load_one, void *ctx)
{
    if (!r || !f || !load_one)
        return -EINVAL;
    int err = 0;
    for (uint32_t i = 0; !err && i < n; i++) {
        const void *data;
        size_t len;
        if (!(err = nc_mf_member(r, f->p0, f->p1, i, &data, &len)))
            err = load_one(ctx, i, data, len);
    }
    return err;
}

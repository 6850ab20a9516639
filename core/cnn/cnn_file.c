/* core/cnn/cnn_file.c — CNN model files (modelfile.h, kind NC_MF_KIND_CNN).
 *
 * Layer: core.  Sections:
 *   ARCH  bytes  canonical notation (cnn.h), e.g. 1x29x29-20C4-MP2-40C5-MP3-150N-10N
 *   CTAB  bytes  every CONV layer's [maps][in_maps] table of 0/1, layer order
 *                (absent when the network has no convolution)
 *   WGTS  f32    nc_cnn.params, n_params values
 *   + nc_mf_put_info's sections (classes, preprocessing, provenance).
 * A file with NCOL is a committee (cnn_committee.c), refused here.
 * nc_mf_open has already proven the container intact (CRC, lengths); here the
 * sections are checked against each other, since a file written by a buggy
 * or hostile writer can be CRC-valid and still wrong. */
#include "cnn_internal.h"

#include <string.h>

#define TAG_ARCH NC_MF_TAG('A', 'R', 'C', 'H')
#define TAG_CTAB NC_MF_TAG('C', 'T', 'A', 'B')
#define TAG_WGTS NC_MF_TAG('W', 'G', 'T', 'S')

int nc_cnn_save(const nc_cnn *net, const nc_model_info *info,
                uint8_t **ret_buf, size_t *ret_len)
{
    if (!net || !info || !ret_buf || !ret_len || info->n_classes != net->n_outputs)
        return -EINVAL;
    for (size_t i = 0; i < net->n_params; i++)
        if (!isfinite(net->params[i]))
            return -EINVAL;
    char arch[NC_CNN_ARCH_MAX];
    int err = nc_cnn_arch_format(net, arch, sizeof arch);
    if (err)
        return err;
    nc_mf_writer *mw = NULL;
    if ((err = nc_mf_writer_new(NC_MF_KIND_CNN, &mw)))
        return err;
    if ((err = nc_mf_put_str(mw, TAG_ARCH, arch)) ||
        (net->n_tables &&
         (err = nc_mf_put(mw, TAG_CTAB, NC_MF_TYPE_BYTES, net->tables, net->n_tables))) ||
        (err = nc_mf_put_f32(mw, TAG_WGTS, net->params, net->n_params)) ||
        (err = nc_mf_put_info(mw, info)) ||
        (err = nc_mf_finish(mw, ret_buf, ret_len)))
        goto out;
out:
    nc_mf_writer_free(mw);
    return err;
}

/* Anything the file says that cannot be a network is corrupt data. */
static int bad(int err)
{
    return err == -ENOMEM ? err : -EBADMSG;
}

/* Tables from CTAB, then weights from WGTS, each checked. */
static int load_body(const nc_mf_reader *r, nc_cnn *net)
{
    uint32_t type;
    const void *data;
    size_t len;
    int err = nc_mf_get(r, TAG_CTAB, &type, &data, &len);
    if (net->n_tables) {
        if (err || type != NC_MF_TYPE_BYTES || len != net->n_tables)
            return -EBADMSG;
        const uint8_t *t = data;
        for (uint32_t l = 1; l < net->n_layers; l++) {
            const nc_cnn_layer *L = &net->layers[l];
            if (L->kind != NC_CNN_KIND_CONV)
                continue;
            size_t sz = (size_t)L->maps * net->layers[l - 1].maps;
            int differs = memcmp(L->table, t, sz) != 0;
            if (differs && nc_cnn_set_table(net, l, t))
                return -EBADMSG;   /* not 0/1, or a map with no input */
            t += sz;
        }
    } else if (err != -ENOENT) {
        return -EBADMSG;           /* a table for a network without convolution */
    }
    size_t count;
    if ((err = nc_mf_count(r, TAG_WGTS, NC_MF_TYPE_F32, &count)) || count != net->n_params)
        return -EBADMSG;
    if ((err = nc_mf_get_f32(r, TAG_WGTS, net->params, net->n_params)))
        return bad(err);
    /* a cut map pair must have an all-zero kernel (the BLAS path relies on
       it); a normalised layer's fixed variance cannot be negative */
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        for (uint32_t m = 0; L->norm && m < L->maps; m++)
            if (L->var[m] < 0.0f)
                return -EBADMSG;
        if (L->kind != NC_CNN_KIND_CONV)
            continue;
        uint32_t in_maps = net->layers[l - 1].maps;
        size_t ksize = (size_t)L->kernel_x * L->kernel_y;
        for (size_t mc = 0; mc < (size_t)L->maps * in_maps; mc++) {
            if (L->table[mc])
                continue;
            for (size_t k = 0; k < ksize; k++)
                if (L->weights[mc * ksize + k] != 0.0f)
                    return -EBADMSG;
        }
    }
    return 0;
}

int nc_cnn_load(const uint8_t *buf, size_t len, nc_cnn **ret_net, nc_model_info *ret_info)
{
    if (!buf || !ret_net)
        return -EINVAL;
    nc_mf_reader *r = NULL;
    nc_cnn *net = NULL;
    nc_model_info *info = NULL;
    int err = nc_mf_open(buf, len, &r);
    if (err)
        return err;
    char arch[NC_CNN_ARCH_MAX], canon[NC_CNN_ARCH_MAX];
    /* a committee of several columns: nc_cnn_committee_load's (see cnn.h) */
    if (nc_mf_kind_of(r) == NC_MF_KIND_CNN &&
        nc_mf_get(r, NC_CNN_TAG_NCOL, NULL, NULL, NULL) == 0) {
        err = -ENOTSUP;
        goto out;
    }
    if (nc_mf_kind_of(r) != NC_MF_KIND_CNN ||
        nc_mf_get_str(r, TAG_ARCH, arch, sizeof arch)) {
        err = -EBADMSG;
        goto out;
    }
    if ((err = nc_cnn_new(arch, &net))) {
        err = bad(err);
        goto out;
    }
    /* only the canonical spelling, so one network has one file form */
    if (nc_cnn_arch_format(net, canon, sizeof canon) || strcmp(arch, canon)) {
        err = -EBADMSG;
        goto out;
    }
    if ((err = load_body(r, net)))
        goto out;
    info = calloc(1, sizeof *info);     /* ~3 KiB: off the stack */
    if (!info) {
        err = -ENOMEM;
        goto out;
    }
    if ((err = nc_mf_get_info(r, info))) {
        err = bad(err);
        goto out;
    }
    if (info->n_classes != net->n_outputs) {
        err = -EBADMSG;
        goto out;
    }
    if (ret_info)
        *ret_info = *info;
    *ret_net = net;
    net = NULL;
out:
    free(info);
    nc_cnn_free(net);
    nc_mf_close(r);
    return err;
}

/* core/cnn/cnn_committee.c — committees of CNN columns in one model file, and
 * running them (see cnn.h, "committees").
 *
 * Layer: core.  Each column of a file with two or more is stored as a
 * complete one-column file inside a section: the column keeps its own
 * record (command, seed, epochs, test error) and its own CRC, and the
 * column loader (nc_cnn_load) checks it exactly as it checks a file of its
 * own, so there is one set of checks for a column wherever it lives. */
#include "cnn_internal.h"
#include "modelfile_committee.h"

#include <stdio.h>
#include <string.h>

/* A column's own net sections: a committee file holds none beside its
 * columns (one file form per committee). */
static const uint32_t net_tags[] = {
    NC_MF_TAG('A', 'R', 'C', 'H'), NC_MF_TAG('W', 'G', 'T', 'S'), NC_MF_TAG('C', 'T', 'A', 'B'),
};

static const nc_mf_committee_form form = {
    NC_MF_KIND_CNN, NC_CNN_TAG_NCOL, 'C', 'L', NC_CNN_MAX_COLUMNS, net_tags,
    (uint32_t)NC_ARRAY_LEN(net_tags),
};

const char *nc_cnn_committee_mismatch(const nc_cnn *a, const nc_model_info *ia,
                                      const nc_cnn *b, const nc_model_info *ib)
{
    if (!a || !ia || !b || !ib)
        return "a missing column";
    if (a->n_inputs != b->n_inputs || a->layers[0].maps != b->layers[0].maps ||
        a->layers[0].height != b->layers[0].height || a->layers[0].width != b->layers[0].width)
        return "a different input size";
    if (a->n_outputs != b->n_outputs)
        return "a different number of outputs";
    return nc_mf_info_mismatch(ia, ib);
}

typedef struct save_ctx {
    const nc_cnn *const *nets;
    const nc_model_info *info;
} save_ctx;

/* Column i as a one-column file image. */
static int column_image(void *ctx, uint32_t i, uint8_t **ret_buf, size_t *ret_len)
{
    const save_ctx *sc = ctx;
    return nc_cnn_save(sc->nets[i], &sc->info[i], ret_buf, ret_len);
}

int nc_cnn_committee_save(const nc_cnn *const *nets, const nc_model_info *col_info,
                          uint32_t n, const nc_model_info *info, uint8_t **ret_buf,
                          size_t *ret_len)
{
    if (!nets || !info || !ret_buf || !ret_len || n < 1 || n > NC_CNN_MAX_COLUMNS ||
        (n > 1 && !col_info))
        return -EINVAL;
    /* a normalised column answers with its batch's statistics: fold it */
    for (uint32_t i = 0; i < n; i++)
        if (nets[i] && nc_cnn_norm_layers(nets[i]))
            return -EINVAL;
    if (n == 1)
        return nc_cnn_save(nets[0], info, ret_buf, ret_len);
    /* views are the committee's (cnn.h): none in a column's own record */
    for (uint32_t i = 0; i < n; i++)
        if (!nets[i] || nc_cnn_committee_mismatch(nets[0], &col_info[0], nets[i], &col_info[i]) ||
            nc_mf_info_mismatch(info, &col_info[i]) || col_info[i].prep.n_views)
            return -EINVAL;
    save_ctx sc = { nets, col_info };
    return nc_mf_committee_save(&form, n, column_image, &sc, info, ret_buf, ret_len);
}

void nc_cnn_committee_free(nc_cnn_committee *c)
{
    if (!c)
        return;
    for (uint32_t i = 0; c->column && i < c->n_columns; i++)
        nc_cnn_free(c->column[i]);
    free(c->column);
    free(c->column_info);
    free(c);
}

static nc_cnn_committee *committee_alloc(uint32_t n)
{
    nc_cnn_committee *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->column = calloc(n, sizeof *c->column);
    c->column_info = calloc(n, sizeof *c->column_info);
    if (!c->column || !c->column_info) {
        nc_cnn_committee_free(c);
        return NULL;
    }
    c->n_columns = n;
    return c;
}

typedef struct load_ctx {
    nc_cnn_committee *c;
    const nc_model_info *info;      /* the committee's own record */
} load_ctx;

/* Column i from its file image, checked against column 0 and the record. */
static int load_column(void *ctx, uint32_t i, const void *data, size_t len)
{
    const load_ctx *lc = ctx;
    nc_cnn_committee *c = lc->c;
    /* a nested committee comes back -ENOTSUP: corrupt here */
    int err = nc_cnn_load(data, len, &c->column[i], &c->column_info[i]);
    if (err)
        return nc_mf_committee_corrupt(err);
    if (nc_cnn_norm_layers(c->column[i]))
        return -ENOTSUP;
    if (nc_cnn_committee_mismatch(c->column[0], &c->column_info[0], c->column[i],
                                  &c->column_info[i]) ||
        nc_mf_info_mismatch(lc->info, &c->column_info[i]) || c->column_info[i].prep.n_views)
        return -EBADMSG;
    return 0;
}

/* The columns of a file with NCOL, checked against its info *info. */
static int load_columns(const nc_mf_reader *r, const nc_model_info *info,
                        nc_cnn_committee **ret_c)
{
    uint32_t n;
    int err = nc_mf_committee_count(r, &form, &n);
    if (err)
        return err;
    nc_cnn_committee *c = committee_alloc(n);
    if (!c)
        return -ENOMEM;
    load_ctx lc = { c, info };
    if ((err = nc_mf_committee_each(r, &form, n, load_column, &lc))) {
        nc_cnn_committee_free(c);
        return err;
    }
    *ret_c = c;
    return 0;
}

int nc_cnn_committee_load(const uint8_t *buf, size_t len, nc_cnn_committee **ret_c,
                          nc_model_info *ret_info)
{
    if (!buf || !ret_c)
        return -EINVAL;
    nc_mf_reader *r = NULL;
    nc_cnn_committee *c = NULL;
    nc_model_info *info = calloc(1, sizeof *info);      /* ~3 KiB: off the stack */
    if (!info)
        return -ENOMEM;
    int err = nc_mf_open(buf, len, &r);
    if (err)
        goto out;
    if (nc_mf_kind_of(r) != NC_MF_KIND_CNN) {
        err = -EBADMSG;
        goto out;
    }
    if (!nc_mf_committee_is(r, &form)) {
        /* the one-column form */
        if (!(c = committee_alloc(1))) {
            err = -ENOMEM;
            goto out;
        }
        if ((err = nc_cnn_load(buf, len, &c->column[0], info)))
            goto out;
        if (nc_cnn_norm_layers(c->column[0])) {
            err = -ENOTSUP;
            goto out;
        }
        c->column_info[0] = *info;
    } else {
        if ((err = nc_mf_get_info(r, info))) {
            err = nc_mf_committee_corrupt(err);
            goto out;
        }
        if ((err = load_columns(r, info, &c)))
            goto out;
    }
    if (c->column[0]->n_outputs != info->n_classes) {
        err = -EBADMSG;
        goto out;
    }
    c->n_inputs = c->column[0]->n_inputs;
    c->n_outputs = c->column[0]->n_outputs;
    c->n_views = nc_prep_views(&info->prep);
    if (ret_info)
        *ret_info = *info;
    *ret_c = c;
    c = NULL;
out:
    nc_cnn_committee_free(c);
    nc_mf_close(r);
    free(info);
    return err;
}

/* ---- running --------------------------------------------------------------------- */

struct nc_cnn_committee_work {
    uint32_t n_columns, max_batch;
    const nc_cnn_committee *c;
    float *xin;         /* [max_batch][n_inputs]: a W<w> column's own input,
                           NULL when no column has one */
    float *yv;          /* [max_batch][n_outputs]: the answers on every view
                           before their mean; NULL without views */
    nc_cnn_work *w[];
};

void nc_cnn_committee_work_free(nc_cnn_committee_work *w)
{
    if (!w)
        return;
    for (uint32_t i = 0; i < w->n_columns; i++)
        nc_cnn_work_free(w->w[i]);
    free(w->xin);
    free(w->yv);
    free(w);
}

int nc_cnn_committee_work_new(const nc_cnn_committee *c, uint32_t max_batch,
                              nc_cnn_committee_work **ret_w)
{
    if (!c || !ret_w || c->n_columns < 1 || c->n_columns > NC_CNN_MAX_COLUMNS)
        return -EINVAL;
    nc_cnn_committee_work *w = calloc(1, sizeof *w + c->n_columns * sizeof w->w[0]);
    if (!w)
        return -ENOMEM;
    w->n_columns = c->n_columns;
    w->max_batch = max_batch;
    w->c = c;
    if (c->n_views > 1 && !(w->yv = malloc((size_t)max_batch * c->n_outputs * sizeof(float)))) {
        free(w);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < c->n_columns; i++) {
        int err = nc_cnn_work_new(c->column[i], max_batch, &w->w[i]);
        if (!err && c->column[i]->width_norm && !w->xin &&
            !(w->xin = malloc((size_t)max_batch * c->n_inputs * sizeof(float))))
            err = -ENOMEM;
        if (err) {
            nc_cnn_committee_work_free(w);
            return err;
        }
    }
    *ret_w = w;
    return 0;
}

int nc_cnn_committee_run(const nc_cnn_committee *c, nc_cnn_committee_work *w,
                         const float *in, uint32_t n, float *out)
{
    if (!c || !w || w->c != c || !in || !out || n == 0 || n > w->max_batch)
        return -EINVAL;
    const size_t len = (size_t)n * c->n_outputs;
    if (c->n_columns == 1 && !c->column[0]->width_norm)
        return nc_cnn_forward_blas(c->column[0], w->w[0], in, n, out);
    for (uint32_t i = 0; i < c->n_columns; i++) {
        const nc_cnn *net = c->column[i];
        const float *x = in;
        int err = 0;
        if (net->width_norm) {
            err = nc_cnn_input_transform(net, in, n, w->xin);
            x = w->xin;
        }
        if (err || (err = nc_cnn_forward_blas(net, w->w[i], x, n, NULL)))
            return err;
        /* the output layer is fully connected: its activations are the
         * outputs, image after image */
        const float *y = w->w[i]->act[net->n_layers - 1];
        for (size_t k = 0; k < len; k++)
            out[k] = (i ? out[k] : 0.0f) + y[k];
    }
    for (size_t k = 0; k < len; k++)
        out[k] /= (float)c->n_columns;
    return 0;
}

void nc_cnn_views_mean(const float *y, uint32_t n, uint32_t n_views, uint32_t n_outputs,
                       float *out)
{
    for (uint32_t i = 0; i < n; i++) {
        const float *yi = y + (size_t)i * n_views * n_outputs;
        float *o = out + (size_t)i * n_outputs;
        for (uint32_t k = 0; k < n_outputs; k++) {
            float sum = yi[k];
            for (uint32_t v = 1; v < n_views; v++)
                sum += yi[(size_t)v * n_outputs + k];
            o[k] = n_views > 1 ? sum / (float)n_views : sum;
        }
    }
}

int nc_cnn_committee_run_views(const nc_cnn_committee *c, nc_cnn_committee_work *w,
                               const float *in, uint32_t n, float *out)
{
    if (!c || !w || w->c != c || !in || !out || n == 0 || c->n_views == 0 ||
        (uint64_t)n * c->n_views > w->max_batch)
        return -EINVAL;
    if (c->n_views == 1)
        return nc_cnn_committee_run(c, w, in, n, out);
    int err = nc_cnn_committee_run(c, w, in, n * c->n_views, w->yv);
    if (!err)
        nc_cnn_views_mean(w->yv, n, c->n_views, c->n_outputs, out);
    return err;
}

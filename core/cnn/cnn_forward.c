/* core/cnn/cnn_forward.c — the CNN forward pass as plain loops: the
 * specification every faster path (cnn_blas.c, gpu/) must reproduce.
 *
 * Layer: core.  Walks the layers; each kind's loop nest is in its own file
 * (cnn_conv.c, cnn_pool.c, cnn_full.c, batch normalisation cnn_norm.c), the
 * CPU twin of the GPU file of the same name.  Layout: image-major,
 * act[l][b][map][y][x] for image b of the batch. */
#include "cnn_internal.h"

#include <string.h>

int nc_cnn_forward_ref(const nc_cnn *net, nc_cnn_work *w,
                       const float *in, uint32_t n, float *out)
{
    int err = nc_cnn_work_check(net, w, n);
    if (err)
        return err;
    if (!in)
        return -EINVAL;
    w->state = NC_CNN_STATE_NONE;
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        const nc_cnn_layer *P = &net->layers[l - 1];
        const float *x = l == 1 ? in : w->act[l - 1];
        switch (L->kind) {
        case NC_CNN_KIND_CONV: nc_cnn_conv_forward_ref(L, P, x, w->act[l], n); break;
        case NC_CNN_KIND_POOL: nc_cnn_pool_forward_ref(L, P, x, w->act[l], n); break;
        case NC_CNN_KIND_FULL: nc_cnn_full_forward_ref(L, x, w->act[l], n); break;
        default: return -EINVAL;
        }
        if (L->norm) {      /* the sums, standardised over the batch, then f */
            const uint32_t plane = L->height * L->width;
            float *y = w->act[l];
            nc_cnn_norm_forward(L, y, n, (nc_cnn_runs){ plane, L->n_out, plane }, w->xhat[l],
                                w->nstat[l]);
            for (size_t i = 0; i < (size_t)n * L->n_out; i++)
                y[i] = nc_cnn_act_ref(y[i], L->act);
        }
        if (w->hook)
            w->hook(w->hook_ctx, l);
    }
    if (out)
        memcpy(out, w->act[net->n_layers - 1], (size_t)n * net->n_outputs * sizeof(float));
    w->state = NC_CNN_STATE_REF;
    w->state_n = n;
    w->state_in = in;
    return 0;
}

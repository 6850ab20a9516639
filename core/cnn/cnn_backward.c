/* core/cnn/cnn_backward.c — back-propagation as plain loops: the
 * specification of training (seed 000 §3.3, §3.4).  Walks the layers from
 * the top; each kind's loops are in its own file (cnn_conv.c, cnn_pool.c,
 * cnn_full.c, cnn_norm.c); the weight updates are in cnn_act.c.
 *
 * Layer: core.  Follows nc_cnn_forward_ref on the same work (image-major
 * activations).  Deltas are pushed from each output to the inputs it read,
 * which is the same sum as the seed's "pulling" written the short way round:
 * for every output unit, dE/da = dE/dy * f'(y); each weight's gradient is
 * dE/da times the input it multiplied; each input's dE/dx gathers dE/da times
 * that weight.  Notation: dy = dE/dy of this layer's outputs, dx = dE/dy of
 * the previous layer's outputs, gw/gb = gradients of weights/biases. */
#include "cnn_internal.h"

#include <string.h>

int nc_cnn_backward_ref(const nc_cnn *net, nc_cnn_work *w, const float *in,
                        uint32_t n, const float *d_out, float *grads)
{
    int err = nc_cnn_work_check(net, w, n);
    if (err)
        return err;
    if (!in || !d_out || !grads || w->state != NC_CNN_STATE_REF ||
        w->state_n != n || w->state_in != in)
        return -EINVAL;
    memset(grads, 0, net->n_params * sizeof(float));
    float *dy = w->delta[0], *dx = w->delta[1];
    memcpy(dy, d_out, (size_t)n * net->n_outputs * sizeof(float));
    /* from the top down; layer l turns dy (its outputs) into dx (layer l-1's
       outputs), which is not needed once l-1 is the input */
    for (uint32_t l = net->n_layers - 1; l >= 1; l--) {
        const nc_cnn_layer *L = &net->layers[l];
        const nc_cnn_layer *P = &net->layers[l - 1];
        const float *x = l == 1 ? in : w->act[l - 1];
        float *dxl = l > 1 ? dx : NULL;
        float *gw = L->weights ? grads + (L->weights - net->params) : NULL;
        float *gb = L->bias ? grads + (L->bias - net->params) : NULL;
        if (L->norm) {      /* dy through f, then through the standardisation:
                               the layer's own code below sees dE/da */
            const uint32_t plane = L->height * L->width;
            for (size_t i = 0; i < (size_t)n * L->n_out; i++)
                dy[i] *= nc_cnn_act_grad(w->act[l][i], L->act);
            nc_cnn_norm_backward(L, dy, n, (nc_cnn_runs){ plane, L->n_out, plane }, w->xhat[l],
                                 w->nstat[l], grads + (L->gamma - net->params),
                                 grads + (L->beta - net->params));
        }
        switch (L->kind) {
        case NC_CNN_KIND_CONV:
            nc_cnn_conv_backward_ref(L, P, x, w->act[l], dy, dxl, gw, gb, n);
            break;
        case NC_CNN_KIND_POOL: if (dxl) nc_cnn_pool_backward_ref(L, P, x, dy, dxl, n); break;
        case NC_CNN_KIND_FULL: nc_cnn_full_backward_ref(L, x, w->act[l], dy, dxl, gw, gb, n); break;
        default: return -EINVAL;
        }
        float *t = dy;
        dy = dx;
        dx = t;
    }
    return 0;
}

/* core/cnn/cnn_backward.c — back-propagation and the weight update as plain
 * loops: the specification of training (seed 000 §3.3, §3.4).
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

/* Convolution.  x: [n][in_maps][in_h][in_w], y, dy: [n][maps][h][w],
 * gw: [maps][in_maps][ky][kx], gb: [maps], dx: like x or NULL (not needed
 * below the first layer).  Only connected map pairs take part, so cut
 * kernels get no gradient; with skipping factors an input pixel may be read
 * by no output (its dx stays 0) or by several. */
static void conv_backward_ref(const nc_cnn_layer *L, const nc_cnn_layer *P,
                              const float *x, const float *y, const float *dy,
                              float *dx, float *gw, float *gb, uint32_t n)
{
    const uint32_t in_maps = P->maps, in_h = P->height, in_w = P->width;
    const uint32_t kx = L->kernel_x, ky = L->kernel_y;
    const uint32_t step_x = L->skip_x + 1, step_y = L->skip_y + 1;
    if (dx)
        memset(dx, 0, (size_t)n * L->n_in * sizeof(float));
    for (uint32_t b = 0; b < n; b++) {
        const float *xb = x + (size_t)b * L->n_in;
        float *dxb = dx ? dx + (size_t)b * L->n_in : NULL;
        for (uint32_t m = 0; m < L->maps; m++) {
            for (uint32_t oy = 0; oy < L->height; oy++) {
                for (uint32_t ox = 0; ox < L->width; ox++) {
                    size_t o = (size_t)b * L->n_out + ((size_t)m * L->height + oy) * L->width + ox;
                    float da = dy[o] * nc_cnn_act_grad(y[o], nc_cnn_sum_act(L)); /* dE/da */
                    gb[m] += da;
                    for (uint32_t c = 0; c < in_maps; c++) {
                        if (!L->table[(size_t)m * in_maps + c])
                            continue;
                        size_t k0 = ((size_t)m * in_maps + c) * kx * ky;
                        size_t x0 = (size_t)c * in_h * in_w;
                        for (uint32_t i = 0; i < ky; i++) {
                            for (uint32_t j = 0; j < kx; j++) {
                                size_t xi = x0 + (size_t)(oy * step_y + i) * in_w + ox * step_x + j;
                                gw[k0 + i * kx + j] += da * xb[xi];
                                if (dxb)
                                    dxb[xi] += L->weights[k0 + i * kx + j] * da;
                            }
                        }
                    }
                }
            }
        }
    }
}

/* Max-pooling.  Each region's delta goes to the input that won the forward
 * max (the first one in row order on ties, as in pool_forward_ref); the other
 * inputs of the region get 0.  x, dx: [n][maps][h*ky][w*kx], dy: [n][maps][h][w]. */
static void pool_backward_ref(const nc_cnn_layer *L, const nc_cnn_layer *P,
                              const float *x, const float *dy, float *dx, uint32_t n)
{
    const uint32_t kx = L->kernel_x, ky = L->kernel_y, in_w = P->width;
    memset(dx, 0, (size_t)n * L->n_in * sizeof(float));
    for (uint32_t b = 0; b < n; b++) {
        for (uint32_t m = 0; m < L->maps; m++) {
            size_t x0 = (size_t)b * L->n_in + (size_t)m * P->height * in_w;
            size_t y0 = (size_t)b * L->n_out + (size_t)m * L->height * L->width;
            for (uint32_t oy = 0; oy < L->height; oy++) {
                for (uint32_t ox = 0; ox < L->width; ox++) {
                    size_t arg = x0 + (size_t)oy * ky * in_w + ox * kx;
                    for (uint32_t i = 0; i < ky; i++)
                        for (uint32_t j = 0; j < kx; j++) {
                            size_t xi = x0 + (size_t)(oy * ky + i) * in_w + ox * kx + j;
                            if (x[xi] > x[arg])
                                arg = xi;
                        }
                    dx[arg] += dy[y0 + (size_t)oy * L->width + ox];
                }
            }
        }
    }
}

/* Fully connected.  x, dx: [n][n_in], y, dy: [n][units], gw: [units][n_in]. */
static void full_backward_ref(const nc_cnn_layer *L, const float *x, const float *y,
                              const float *dy, float *dx, float *gw, float *gb, uint32_t n)
{
    if (dx)
        memset(dx, 0, (size_t)n * L->n_in * sizeof(float));
    for (uint32_t b = 0; b < n; b++) {
        const float *xb = x + (size_t)b * L->n_in;
        for (uint32_t u = 0; u < L->maps; u++) {
            size_t o = (size_t)b * L->n_out + u;
            float da = dy[o] * nc_cnn_act_grad(y[o], nc_cnn_sum_act(L));
            const float *wu = L->weights + (size_t)u * L->n_in;
            float *gwu = gw + (size_t)u * L->n_in;
            gb[u] += da;
            for (uint32_t k = 0; k < L->n_in; k++) {
                gwu[k] += da * xb[k];
                if (dx)
                    dx[(size_t)b * L->n_in + k] += wu[k] * da;
            }
        }
    }
}

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
        case NC_CNN_KIND_CONV: conv_backward_ref(L, P, x, w->act[l], dy, dxl, gw, gb, n); break;
        case NC_CNN_KIND_POOL: if (dxl) pool_backward_ref(L, P, x, dy, dxl, n); break;
        case NC_CNN_KIND_FULL: full_backward_ref(L, x, w->act[l], dy, dxl, gw, gb, n); break;
        default: return -EINVAL;
        }
        float *t = dy;
        dy = dx;
        dx = t;
    }
    return 0;
}

/* Every convolution's cut kernels back to 0 after an update. */
static void mask_all_kernels(nc_cnn *net)
{
    for (uint32_t l = 1; l < net->n_layers; l++)
        if (net->layers[l].kind == NC_CNN_KIND_CONV)
            nc_cnn_mask_kernels(net, l);
}

int nc_cnn_sgd_momentum(nc_cnn *net, const float *grads, float *velocity, float lr,
                        float momentum)
{
    if (!net || !grads || !velocity || !isfinite(lr) || !(momentum >= 0.0f && momentum < 1.0f))
        return -EINVAL;
    for (size_t i = 0; i < net->n_params; i++) {
        velocity[i] = momentum * velocity[i] + grads[i];
        net->params[i] -= lr * velocity[i];
    }
    mask_all_kernels(net);
    return 0;
}

void nc_cnn_adam_corrections(uint64_t step, float beta1, float beta2, float *c1, float *c2)
{
    *c1 = (float)(1.0 / (1.0 - pow((double)beta1, (double)step)));
    *c2 = (float)(1.0 / (1.0 - pow((double)beta2, (double)step)));
}

int nc_cnn_adam(nc_cnn *net, const float *grads, float *m, float *v, uint64_t step, float lr,
                float beta1, float beta2, float eps)
{
    if (!net || !grads || !m || !v || step == 0 || !isfinite(lr) ||
        !(beta1 >= 0.0f && beta1 < 1.0f) || !(beta2 >= 0.0f && beta2 < 1.0f) ||
        !(eps > 0.0f) || !isfinite(eps))
        return -EINVAL;
    float c1, c2;
    nc_cnn_adam_corrections(step, beta1, beta2, &c1, &c2);
    const float r1 = 1.0f - beta1, r2 = 1.0f - beta2;
    for (size_t i = 0; i < net->n_params; i++) {
        const float g = grads[i];
        const float mi = beta1 * m[i] + r1 * g;
        const float vi = beta2 * v[i] + r2 * (g * g);
        m[i] = mi;
        v[i] = vi;
        net->params[i] -= lr * (mi * c1) / (sqrtf(vi * c2) + eps);
    }
    mask_all_kernels(net);
    return 0;
}

int nc_cnn_sgd(nc_cnn *net, const float *grads, float lr)
{
    if (!net || !grads || !isfinite(lr))
        return -EINVAL;
    for (size_t i = 0; i < net->n_params; i++)
        net->params[i] -= lr * grads[i];
    /* grads from the backward passes are already 0 there; a caller's may not be */
    mask_all_kernels(net);
    return 0;
}

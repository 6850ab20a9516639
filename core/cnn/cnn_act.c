/* core/cnn/cnn_forward.c — the CNN forward pass as plain loops: the
 * specification every faster path (cnn_blas.c, gpu/) must reproduce.
 *
 * Layer: core.  Written to be read, one loop nest per layer kind, shapes
 * beside every index.  Sums are accumulated in double so that the finite-
 * difference checks of the tests see little rounding noise.  Layout:
 * image-major, act[l][b][map][y][x] for image b of the batch. */
#include "cnn_internal.h"

#include <string.h>

/* Convolution (seed 000 §2.2, §3.2).
 *   x: [n][in_maps][in_h][in_w]    the previous layer
 *   y: [n][maps][h][w]             h = (in_h - ky) / (skip_y + 1) + 1, same for w
 *   weights: [maps][in_maps][ky][kx], bias: [maps], table: [maps][in_maps]
 * y[b][m][oy][ox] = f(bias[m] + sum over connected c, i < ky, j < kx of
 *                     w[m][c][i][j] * x[b][c][oy*step_y + i][ox*step_x + j]) */
static void conv_forward_ref(const nc_cnn_layer *L, const nc_cnn_layer *P,
                             const float *x, float *y, uint32_t n)
{
    const uint32_t in_maps = P->maps, in_h = P->height, in_w = P->width;
    const uint32_t kx = L->kernel_x, ky = L->kernel_y;
    const uint32_t step_x = L->skip_x + 1, step_y = L->skip_y + 1;
    for (uint32_t b = 0; b < n; b++) {
        const float *xb = x + (size_t)b * L->n_in;
        float *yb = y + (size_t)b * L->n_out;
        for (uint32_t m = 0; m < L->maps; m++) {
            for (uint32_t oy = 0; oy < L->height; oy++) {
                for (uint32_t ox = 0; ox < L->width; ox++) {
                    double a = L->bias[m];
                    for (uint32_t c = 0; c < in_maps; c++) {
                        if (!L->table[(size_t)m * in_maps + c])
                            continue;
                        const float *k = L->weights + ((size_t)m * in_maps + c) * kx * ky;
                        const float *xc = xb + (size_t)c * in_h * in_w;
                        for (uint32_t i = 0; i < ky; i++)
                            for (uint32_t j = 0; j < kx; j++)
                                a += (double)k[i * kx + j] *
                                     xc[(size_t)(oy * step_y + i) * in_w + ox * step_x + j];
                    }
                    yb[((size_t)m * L->height + oy) * L->width + ox] =
                        nc_cnn_act_ref(a, nc_cnn_sum_act(L));
                }
            }
        }
    }
}

/* Max-pooling over non-overlapping kx x ky regions (seed 000 §2.3).
 *   x: [n][maps][h*ky][w*kx]  ->  y: [n][maps][h][w] */
static void pool_forward_ref(const nc_cnn_layer *L, const nc_cnn_layer *P,
                             const float *x, float *y, uint32_t n)
{
    const uint32_t kx = L->kernel_x, ky = L->kernel_y, in_w = P->width;
    for (uint32_t b = 0; b < n; b++) {
        for (uint32_t m = 0; m < L->maps; m++) {
            const float *xm = x + (size_t)b * L->n_in + (size_t)m * P->height * in_w;
            float *ym = y + (size_t)b * L->n_out + (size_t)m * L->height * L->width;
            for (uint32_t oy = 0; oy < L->height; oy++) {
                for (uint32_t ox = 0; ox < L->width; ox++) {
                    float best = xm[(size_t)oy * ky * in_w + ox * kx];
                    for (uint32_t i = 0; i < ky; i++)
                        for (uint32_t j = 0; j < kx; j++) {
                            float v = xm[(size_t)(oy * ky + i) * in_w + ox * kx + j];
                            if (v > best)
                                best = v;
                        }
                    ym[(size_t)oy * L->width + ox] = best;
                }
            }
        }
    }
}

/* Fully connected: x: [n][n_in] (the previous layer flattened as
 * [maps][h][w]), weights: [units][n_in], y: [n][units].
 * y[b][u] = f(bias[u] + sum_k w[u][k] x[b][k]) */
static void full_forward_ref(const nc_cnn_layer *L, const float *x, float *y, uint32_t n)
{
    for (uint32_t b = 0; b < n; b++) {
        const float *xb = x + (size_t)b * L->n_in;
        for (uint32_t u = 0; u < L->maps; u++) {
            const float *wu = L->weights + (size_t)u * L->n_in;
            double a = L->bias[u];
            for (uint32_t k = 0; k < L->n_in; k++)
                a += (double)wu[k] * xb[k];
            y[(size_t)b * L->n_out + u] = nc_cnn_act_ref(a, nc_cnn_sum_act(L));
        }
    }
}

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
        const float *x = l == 1 ? in : w->act[l - 1];
        switch (L->kind) {
        case NC_CNN_KIND_CONV: conv_forward_ref(L, &net->layers[l - 1], x, w->act[l], n); break;
        case NC_CNN_KIND_POOL: pool_forward_ref(L, &net->layers[l - 1], x, w->act[l], n); break;
        case NC_CNN_KIND_FULL: full_forward_ref(L, x, w->act[l], n); break;
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

/* E = 1/2 sum_b sum_k (y[b][k] - t[b][k])^2, t = +1 at the label, -1 elsewhere
 * (or targets[b][k]); dE/dy = y - t. */
int nc_cnn_loss(const nc_cnn *net, const float *out, const uint8_t *labels,
                uint32_t n, float *d_out, double *ret_loss, uint32_t *ret_errors)
{
    return nc_cnn_loss_targets(net, out, labels, NULL, n, d_out, ret_loss, ret_errors);
}

/* What both losses need: outputs, and n >= 1 labels below n_outputs. */
static int loss_args_ok(const nc_cnn *net, const float *out, const uint8_t *labels, uint32_t n)
{
    if (!net || !out || !labels || n < 1)
        return 0;
    for (uint32_t b = 0; b < n; b++)
        if (labels[b] >= net->n_outputs)
            return 0;
    return 1;
}

int nc_cnn_loss_targets(const nc_cnn *net, const float *out, const uint8_t *labels,
                        const float *targets, uint32_t n, float *d_out, double *ret_loss,
                        uint32_t *ret_errors)
{
    if (!loss_args_ok(net, out, labels, n))
        return -EINVAL;
    const uint32_t k_n = net->n_outputs;
    double loss = 0.0;
    uint32_t errors = 0;
    for (uint32_t b = 0; b < n; b++) {
        const float *y = out + (size_t)b * k_n;
        uint32_t best = 0;
        for (uint32_t k = 0; k < k_n; k++) {
            float t = targets ? targets[(size_t)b * k_n + k] : k == labels[b] ? 1.0f : -1.0f;
            float d = y[k] - t;
            loss += 0.5 * (double)d * d;
            if (d_out)
                d_out[(size_t)b * k_n + k] = d;
            if (y[k] > y[best])
                best = k;
        }
        errors += best != labels[b];
    }
    if (ret_loss)
        *ret_loss = loss;
    if (ret_errors)
        *ret_errors = errors;
    return 0;
}

/* p = softmax(scale y) in double, shifted by the largest logit so that exp
 * cannot overflow; E = -sum log p[label] = sum (log sum_k exp(z_k - m) -
 * (z_label - m)). */
int nc_cnn_loss_softmax(const nc_cnn *net, const float *out, const uint8_t *labels,
                        uint32_t n, float scale, float *d_out, double *ret_loss,
                        uint32_t *ret_errors)
{
    if (!loss_args_ok(net, out, labels, n) || !isfinite(scale) || !(scale > 0.0f))
        return -EINVAL;
    const uint32_t k_n = net->n_outputs;
    double loss = 0.0;
    uint32_t errors = 0;
    for (uint32_t b = 0; b < n; b++) {
        const float *y = out + (size_t)b * k_n;
        uint32_t best = 0;
        for (uint32_t k = 1; k < k_n; k++)
            if (y[k] > y[best])
                best = k;
        const double m = (double)scale * y[best];
        double sum = 0.0;
        for (uint32_t k = 0; k < k_n; k++)
            sum += exp((double)scale * y[k] - m);
        loss += log(sum) - ((double)scale * y[labels[b]] - m);
        if (d_out)
            for (uint32_t k = 0; k < k_n; k++) {
                double p = exp((double)scale * y[k] - m) / sum;
                d_out[(size_t)b * k_n + k] =
                    (float)((double)scale * (p - (k == labels[b] ? 1.0 : 0.0)));
            }
        errors += best != labels[b];
    }
    if (ret_loss)
        *ret_loss = loss;
    if (ret_errors)
        *ret_errors = errors;
    return 0;
}

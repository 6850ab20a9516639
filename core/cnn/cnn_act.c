/* core/cnn/cnn_act.c — losses and the optimisers' steps (SGD, with
 * momentum, Adam): the CPU twin of gpu/cnn/cnn_act.cu.  The activation and
 * its derivative (nc_cnn_act_ref, nc_cnn_act_grad) are inline in
 * cnn_internal.h, where every engine reads them.
 *
 * Layer: core.  The losses' sums are taken in double. */
#include "cnn_internal.h"

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

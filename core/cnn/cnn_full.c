/* core/cnn/cnn_full.c — fully connected layers as plain loops: forward,
 * deltas and weight gradients, the CPU twin of gpu/cnn/cnn_full.cu.
 *
 * Layer: core.  Part of the reference engine (cnn_forward.c,
 * cnn_backward.c); sums of the forward in double. */
#include "cnn_internal.h"

#include <string.h>

/* Fully connected: x: [n][n_in] (the previous layer flattened as
 * [maps][h][w]), weights: [units][n_in], y: [n][units].
 * y[b][u] = f(bias[u] + sum_k w[u][k] x[b][k]) */
void nc_cnn_full_forward_ref(const nc_cnn_layer *L, const float *x, float *y, uint32_t n)
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

/* Fully connected deltas and gradients.  x, dx: [n][n_in],
 * y, dy: [n][units], gw: [units][n_in]. */
void nc_cnn_full_backward_ref(const nc_cnn_layer *L, const float *x, const float *y,
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

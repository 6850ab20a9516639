/* core/cnn/cnn_conv.c — convolution layers as plain loops: forward, deltas
 * and weight gradients, the CPU twin of gpu/cnn/cnn_conv.cu (and of its
 * variants cnn_conv_staged.cu, cnn_blas.cu).
 *
 * Layer: core.  Part of the reference engine: nc_cnn_forward_ref
 * (cnn_forward.c) and nc_cnn_backward_ref (cnn_backward.c) run these on
 * image-major activations; sums of the forward in double.  The BLAS engine
 * (cnn_blas.c) computes the same by unrolled products. */
#include "cnn_internal.h"

#include <string.h>

/* Convolution (seed 000 §2.2, §3.2).
 *   x: [n][in_maps][in_h][in_w]    the previous layer
 *   y: [n][maps][h][w]             h = (in_h - ky) / (skip_y + 1) + 1, same for w
 *   weights: [maps][in_maps][ky][kx], bias: [maps], table: [maps][in_maps]
 * y[b][m][oy][ox] = f(bias[m] + sum over connected c, i < ky, j < kx of
 *                     w[m][c][i][j] * x[b][c][oy*step_y + i][ox*step_x + j]) */
void nc_cnn_conv_forward_ref(const nc_cnn_layer *L, const nc_cnn_layer *P,
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

/* Convolution's deltas and gradients.  x: [n][in_maps][in_h][in_w],
 * y, dy: [n][maps][h][w], gw: [maps][in_maps][ky][kx], gb: [maps], dx: like
 * x or NULL (not needed below the first layer).  Only connected map pairs
 * take part, so cut kernels get no gradient; with skipping factors an input
 * pixel may be read by no output (its dx stays 0) or by several. */
void nc_cnn_conv_backward_ref(const nc_cnn_layer *L, const nc_cnn_layer *P,
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

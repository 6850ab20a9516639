/* core/cnn/cnn_pool.c — max-pooling as plain loops, forward and deltas: the
 * CPU twin of gpu/cnn/cnn_pool.cu.
 *
 * Layer: core.  Part of the reference engine (cnn_forward.c,
 * cnn_backward.c), image-major activations. */
#include "cnn_internal.h"

#include <string.h>

/* Max-pooling over non-overlapping kx x ky regions (seed 000 §2.3).
 *   x: [n][maps][h*ky][w*kx]  ->  y: [n][maps][h][w] */
void nc_cnn_pool_forward_ref(const nc_cnn_layer *L, const nc_cnn_layer *P,
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

/* Max-pooling's deltas.  Each region's delta goes to the input that won the
 * forward max (the first one in row order on ties, as in
 * nc_cnn_pool_forward_ref); the other inputs of the region get 0.
 * x, dx: [n][maps][h*ky][w*kx], dy: [n][maps][h][w]. */
void nc_cnn_pool_backward_ref(const nc_cnn_layer *L, const nc_cnn_layer *P,
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

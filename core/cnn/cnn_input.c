/* core/cnn/cnn_input.c — a column's own input transform (the notation's W<w>):
 * width normalisation of the digit, as Ciresan et al. 2011 fed the columns
 * of their committees digits normalised to several widths.
 *
 * Layer: core (no I/O, no allocation). */
#include "cnn_internal.h"

#include <math.h>
#include <string.h>

/* One image, maps == 1: see nc_cnn_input_transform in cnn.h. */
static void width_normalise(const float *in, uint32_t H, uint32_t Wd, uint32_t w,
                            float *out)
{
    uint32_t x0 = Wd, x1 = 0;
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < Wd; x++)
            if (in[(size_t)y * Wd + x] > 0.0f) {
                if (x < x0)
                    x0 = x;
                if (x + 1 > x1)
                    x1 = x + 1;
            }
    if (x1 <= x0) {                     /* no ink: nothing to normalise */
        memcpy(out, in, (size_t)H * Wd * sizeof(float));
        return;
    }
    const double span = (double)(x1 - x0) / w;  /* source columns per output column */
    memset(out, 0, (size_t)H * Wd * sizeof(float));
    /* resample into out's first w columns, noting the centre of mass */
    double mass = 0.0, moment = 0.0;
    for (uint32_t y = 0; y < H; y++) {
        const float *src = in + (size_t)y * Wd;
        float *dst = out + (size_t)y * Wd;
        for (uint32_t j = 0; j < w; j++) {
            const double a = x0 + j * span, b = x0 + (j + 1) * span;
            double acc = 0.0;
            for (uint32_t x = (uint32_t)a; x < x1 && x < b; x++) {
                const double lo = x > a ? x : a, hi = x + 1 < b ? x + 1 : b;
                if (hi > lo)
                    acc += (hi - lo) * src[x];
            }
            const float v = (float)(acc / span);
            dst[j] = v;
            mass += v;
            moment += v * (j + 0.5);
        }
    }
    /* shift the block so its centre of mass lands near column Wd / 2 */
    const double cx = mass > 0.0 ? moment / mass : w / 2.0;
    long shift = lround((double)(Wd / 2) + 0.5 - cx);
    if (shift < 0)
        shift = 0;
    if (shift > (long)(Wd - w))
        shift = (long)(Wd - w);
    if (shift == 0)
        return;
    for (uint32_t y = 0; y < H; y++) {
        float *row = out + (size_t)y * Wd;
        memmove(row + shift, row, w * sizeof(float));
        memset(row, 0, (size_t)shift * sizeof(float));
    }
}

int nc_cnn_input_transform(const nc_cnn *net, const float *in, uint32_t n, float *out)
{
    if (!net || !in || !out || n == 0 || n > NC_CNN_MAX_BATCH)
        return -EINVAL;
    const size_t len = net->n_inputs;
    if ((in < out && in + n * len > out) || (out < in && out + n * len > in) || in == out)
        return -EINVAL;
    if (!net->width_norm) {
        memcpy(out, in, n * len * sizeof(float));
        return 0;
    }
    const nc_cnn_layer *L = &net->layers[0];
    for (uint32_t i = 0; i < n; i++)
        width_normalise(in + i * len, L->height, L->width, net->width_norm, out + i * len);
    return 0;
}

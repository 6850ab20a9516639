/* core/image/image_resample.c — resizing images: box filter down, bilinear up.
 *
 * Layer: core.  Separable: a table of weights per axis, a horizontal pass
 * into a scratch buffer (height_in x width_out), then a vertical pass.  An
 * axis that shrinks (or keeps its size) uses area averaging: output pixel i
 * covers input span [i s, (i+1) s) with s = n_in / n_out, and each input
 * pixel counts by its overlap with that span.  This anti-aliases, keeps the
 * mean exactly (up to round-off) and reduces to a copy when s = 1.  An axis
 * that grows uses bilinear interpolation with pixel centres aligned at the
 * edges (output centre i + 0.5 maps to input (i + 0.5) / s' - 0.5,
 * clamped), the usual "half-pixel" convention that keeps the picture from
 * drifting. */
#include "image.h"

#include <math.h>

/* Weights of one axis: output i reads n[i] input pixels starting at
 * first[i], with weights w[off[i] .. off[i] + n[i]). */
typedef struct axis_taps {
    uint32_t *first, *n, *off;
    float *w;
} axis_taps;

static void axis_taps_free(axis_taps *t)
{
    NC_FREE(t->first);
    NC_FREE(t->n);
    NC_FREE(t->off);
    NC_FREE(t->w);
}

/* Area weights for n_in >= n_out.  Every output overlaps at most
 * ceil(s) + 1 inputs, and overlaps summed over outputs are at most
 * n_in + n_out - 1, so n_in + n_out entries suffice. */
static void taps_area(uint32_t n_in, uint32_t n_out, axis_taps *t)
{
    const double s = (double)n_in / n_out;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n_out; i++) {
        double x0 = i * s, x1 = (i + 1) * s;
        uint32_t j0 = (uint32_t)floor(x0);
        uint32_t j1 = (uint32_t)ceil(x1);    /* exclusive */
        if (j1 > n_in) j1 = n_in;
        if (j0 >= j1) j0 = j1 - 1;           /* round-off at the far edge */
        double sum = 0;
        t->first[i] = j0;
        t->off[i] = k;
        t->n[i] = 0;
        uint32_t start = k;
        for (uint32_t j = j0; j < j1; j++) {
            double lo = x0 > j ? x0 : j, hi = x1 < j + 1.0 ? x1 : j + 1.0;
            double ov = hi - lo;
            if (ov <= 0) {
                /* Only the ends can miss; keep the run contiguous. */
                if (t->n[i] == 0) { t->first[i] = j + 1; continue; }
                break;
            }
            t->w[k++] = (float)ov;
            t->n[i]++;
            sum += ov;
        }
        /* Normalise by the actual sum so weights add to 1 despite round-off
         * (this is what makes the identity exact). */
        for (uint32_t q = start; q < k; q++)
            t->w[q] = (float)(t->w[q] / sum);
    }
}

/* Bilinear weights for n_in < n_out: two taps per output. */
static void taps_bilinear(uint32_t n_in, uint32_t n_out, axis_taps *t)
{
    const double s = (double)n_in / n_out;
    for (uint32_t i = 0; i < n_out; i++) {
        double x = (i + 0.5) * s - 0.5;
        if (x < 0) x = 0;
        if (x > n_in - 1) x = n_in - 1;
        uint32_t j = (uint32_t)x;
        if (j >= n_in - 1) j = n_in > 1 ? n_in - 2 : 0;
        double f = x - j;
        t->first[i] = j;
        t->off[i] = 2 * i;
        if (n_in == 1) {
            t->n[i] = 1;
            t->w[2 * i] = 1.0f;
        } else {
            t->n[i] = 2;
            t->w[2 * i] = (float)(1.0 - f);
            t->w[2 * i + 1] = (float)f;
        }
    }
}

static int axis_taps_make(uint32_t n_in, uint32_t n_out, axis_taps *t)
{
    *t = (axis_taps){ 0 };
    /* n_in + 2 n_out covers both kinds; dims are capped so no overflow. */
    size_t nw = (size_t)n_in + 2 * (size_t)n_out;
    t->first = malloc(n_out * sizeof(uint32_t));
    t->n = malloc(n_out * sizeof(uint32_t));
    t->off = malloc(n_out * sizeof(uint32_t));
    t->w = malloc(nw * sizeof(float));
    if (!t->first || !t->n || !t->off || !t->w) {
        axis_taps_free(t);
        return -ENOMEM;
    }
    if (n_out <= n_in)
        taps_area(n_in, n_out, t);
    else
        taps_bilinear(n_in, n_out, t);
    return 0;
}

static float dot_taps(const axis_taps *t, uint32_t i, const float *v, size_t step)
{
    const float *w = t->w + t->off[i];
    const float *p = v + (size_t)t->first[i] * step;
    float acc = 0;
    for (uint32_t q = 0; q < t->n[i]; q++)
        acc += w[q] * p[(size_t)q * step];
    return acc;
}

/* Source rows are fetched one at a time into a float row buffer, so the
 * 8-bit path converts through its lut without a full float copy. */
typedef struct row_source {
    const float *f;             /* dense float image, or NULL */
    const nc_image *u8;         /* else this, mapped through lut */
    const float *lut;
} row_source;

static const float *fetch_row(const row_source *src, uint32_t y, uint32_t width,
                              float *buf)
{
    if (src->f)
        return src->f + (size_t)y * width;
    const uint8_t *row = src->u8->pixels + (size_t)y * src->u8->stride;
    for (uint32_t x = 0; x < width; x++)
        buf[x] = src->lut[row[x]];
    return buf;
}

static int resample(const row_source *src, uint32_t width_in, uint32_t height_in,
                    float *out, uint32_t width_out, uint32_t height_out)
{
    if (width_out == 0 || height_out == 0)
        return -EINVAL;
    if (width_out > NC_IMAGE_MAX_DIM || height_out > NC_IMAGE_MAX_DIM)
        return -ERANGE;
    size_t scratch_len;
    if (nc_size_mul(height_in, width_out, &scratch_len) < 0 ||
        nc_size_mul(scratch_len, sizeof(float), &scratch_len) < 0)
        return -EOVERFLOW;

    int err = -ENOMEM;
    axis_taps tx = { 0 }, ty = { 0 };
    float *scratch = malloc(scratch_len);
    float *rowbuf = malloc((size_t)width_in * sizeof(float));
    if (!scratch || !rowbuf)
        goto out;
    if ((err = axis_taps_make(width_in, width_out, &tx)) < 0 ||
        (err = axis_taps_make(height_in, height_out, &ty)) < 0)
        goto out;

    /* Horizontal: scratch[y][i] = sum_j wx[i][j] in[y][j]. */
    for (uint32_t y = 0; y < height_in; y++) {
        const float *row = fetch_row(src, y, width_in, rowbuf);
        float *s = scratch + (size_t)y * width_out;
        for (uint32_t i = 0; i < width_out; i++)
            s[i] = dot_taps(&tx, i, row, 1);
    }
    /* Vertical: out[k][i] = sum_y wy[k][y] scratch[y][i]. */
    for (uint32_t k = 0; k < height_out; k++)
        for (uint32_t i = 0; i < width_out; i++)
            out[(size_t)k * width_out + i] = dot_taps(&ty, k, scratch + i, width_out);
    err = 0;
out:
    axis_taps_free(&tx);
    axis_taps_free(&ty);
    free(scratch);
    free(rowbuf);
    return err;
}

int nc_image_resample(const float *in, uint32_t width_in, uint32_t height_in,
                      float *out, uint32_t width_out, uint32_t height_out)
{
    if (!in || !out || width_in == 0 || height_in == 0)
        return -EINVAL;
    if (width_in > NC_IMAGE_MAX_DIM || height_in > NC_IMAGE_MAX_DIM)
        return -ERANGE;
    row_source src = { .f = in };
    return resample(&src, width_in, height_in, out, width_out, height_out);
}

int nc_image_resample_u8(const nc_image *in, const float *lut,
                         float *out, uint32_t width_out, uint32_t height_out)
{
    int err = nc_image_check(in);
    if (err < 0)
        return err;
    if (!out)
        return -EINVAL;
    float unit[256];
    if (!lut) {
        for (int v = 0; v < 256; v++)
            unit[v] = (float)v / 255.0f;
        lut = unit;
    }
    row_source src = { .u8 = in, .lut = lut };
    return resample(&src, in->width, in->height, out, width_out, height_out);
}

/* core/data/deform.c — random affine + elastic deformations (see deform.h).
 *
 * Layer: core.  One nc_deform holds the Gaussian kernel and the scratch of
 * the elastic field for one image size, so nc_deform_apply allocates
 * nothing: it runs once per training image. */
#include "deform.h"

#include <math.h>
#include <string.h>

struct nc_deform {
    nc_deform_params p;
    uint32_t width, height;
    int elastic;            /* sigma > 0 and alpha > 0 */
    uint32_t radius;        /* kernel radius r = ceil(3 sigma) */
    float *kernel;          /* [2r + 1], normalised to sum 1 */
    float *noise;           /* [height + 2r][width + 2r], one axis at a time */
    float *tmp;             /* [height + 2r][width], after the horizontal pass */
    float *dx, *dy;         /* [height][width] displacement fields, pixels */
    float *block;           /* the one allocation behind all of these */
};

static int finite_in(float v, float lo, float hi)
{
    return isfinite(v) && v >= lo && v <= hi;
}

int nc_deform_params_check(const nc_deform_params *p)
{
    if (!p)
        return -EINVAL;
    if (!finite_in(p->max_translate, 0.0f, (float)NC_DEFORM_MAX_DIM) ||
        !finite_in(p->max_rotate_deg, 0.0f, 180.0f) ||
        !finite_in(p->max_scale, 0.0f, 0.9f) ||
        !finite_in(p->max_shear, 0.0f, 1.0f) ||
        !isfinite(p->elastic_sigma) || p->elastic_sigma < 0.0f ||
        !isfinite(p->elastic_alpha) || p->elastic_alpha < 0.0f)
        return -EINVAL;
    if (p->elastic_sigma > NC_DEFORM_MAX_SIGMA || p->elastic_alpha > NC_DEFORM_MAX_ALPHA)
        return -ERANGE;
    return 0;
}

nc_deform_params nc_deform_params_scaled(const nc_deform_params *p, float s)
{
    return (nc_deform_params){ p->max_translate * s, p->max_rotate_deg * s, p->max_scale * s,
                               p->max_shear * s, p->elastic_sigma, p->elastic_alpha * s };
}

static int size_check(uint32_t width, uint32_t height)
{
    if (width == 0 || height == 0)
        return -EINVAL;
    if (width > NC_DEFORM_MAX_DIM || height > NC_DEFORM_MAX_DIM)
        return -ERANGE;
    return 0;
}

/* in[x, y], 0 outside the image. */
static inline float pixel_or_zero(const float *in, int w, int h, int x, int y)
{
    return (x >= 0 && x < w && y >= 0 && y < h) ? in[(size_t)y * w + x] : 0.0f;
}

/* Bilinear value of in at (sx, sy).  Written as (1-fy)((1-fx)p00 + fx p10) +
 * fy(...) so that a point on a pixel centre (fx = fy = 0) returns that pixel
 * exactly: the zero-weighted terms add exact zeros. */
static inline float sample(const float *in, int w, int h, float sx, float sy)
{
    /* Far outside (or NaN): every neighbour is outside; also keeps the
     * float -> int conversion below in range. */
    if (!(sx > -1.0f && sx < (float)w && sy > -1.0f && sy < (float)h))
        return 0.0f;
    float x0f = floorf(sx), y0f = floorf(sy);
    float fx = sx - x0f, fy = sy - y0f;
    int x0 = (int)x0f, y0 = (int)y0f;
    float p00 = pixel_or_zero(in, w, h, x0, y0);
    float p10 = pixel_or_zero(in, w, h, x0 + 1, y0);
    float p01 = pixel_or_zero(in, w, h, x0, y0 + 1);
    float p11 = pixel_or_zero(in, w, h, x0 + 1, y0 + 1);
    return (1.0f - fy) * ((1.0f - fx) * p00 + fx * p10) +
           fy * ((1.0f - fx) * p01 + fx * p11);
}

/* The warp itself, arguments already checked. */
static void warp(const float *in, uint32_t width, uint32_t height,
                 const nc_deform_affine *a, const float *dx, const float *dy,
                 float *out)
{
    const int w = (int)width, h = (int)height;
    const float cx = 0.5f * (float)(w - 1), cy = 0.5f * (float)(h - 1);
    for (int y = 0; y < h; y++) {
        const float ry = (float)y - cy;
        for (int x = 0; x < w; x++) {
            const size_t i = (size_t)y * width + x;
            const float rx = (float)x - cx;
            /* A (p - c) + c + t: with A = I and t = 0 every step is exact
             * (small integers and halves), so the identity is exact. */
            float sx = a->a11 * rx + a->a12 * ry + cx + a->tx;
            float sy = a->a21 * rx + a->a22 * ry + cy + a->ty;
            if (dx) {
                sx += dx[i];
                sy += dy[i];
            }
            float v = sample(in, w, h, sx, sy);
            out[i] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
        }
    }
}

int nc_deform_warp(const float *in, uint32_t width, uint32_t height,
                   const nc_deform_affine *a, const float *dx, const float *dy,
                   float *out)
{
    if (!in || !out || !a || (!dx) != (!dy))
        return -EINVAL;
    int err = size_check(width, height);
    if (err)
        return err;
    if (!isfinite(a->a11) || !isfinite(a->a12) || !isfinite(a->a21) ||
        !isfinite(a->a22) || !isfinite(a->tx) || !isfinite(a->ty))
        return -EINVAL;
    warp(in, width, height, a, dx, dy, out);
    return 0;
}

void nc_deform_free(nc_deform *d)
{
    if (!d)
        return;
    free(d->block);
    free(d);
}

int nc_deform_new(const nc_deform_params *p, uint32_t width, uint32_t height,
                  nc_deform **ret_d)
{
    if (!ret_d)
        return -EINVAL;
    int err = nc_deform_params_check(p);
    if (err)
        return err;
    if ((err = size_check(width, height)))
        return err;

    nc_deform *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->p = *p;
    d->width = width;
    d->height = height;
    d->elastic = p->elastic_sigma > 0.0f && p->elastic_alpha > 0.0f;
    if (d->elastic) {
        /* 3 sigma holds all but 0.3 % of the Gaussian's weight. */
        d->radius = (uint32_t)ceilf(3.0f * p->elastic_sigma);
        if (d->radius == 0)
            d->radius = 1;
        const size_t r = d->radius, taps = 2 * r + 1;
        const size_t we = width + 2 * r, he = height + 2 * r;
        const size_t plane = (size_t)width * height;
        /* Sizes stay far below SIZE_MAX (sides <= 4096 + 384), but keep the
         * checks so a change of caps cannot wrap silently. */
        size_t n_noise, n_tmp, total;
        if ((err = nc_size_mul(we, he, &n_noise)) || (err = nc_size_mul(he, width, &n_tmp)) ||
            (err = nc_size_mul(taps + n_noise + n_tmp + 2 * plane, sizeof(float), &total)))
            goto fail;
        d->block = malloc(total);
        if (!d->block) {
            err = -ENOMEM;
            goto fail;
        }
        d->kernel = d->block;
        d->noise = d->kernel + taps;
        d->tmp = d->noise + n_noise;
        d->dx = d->tmp + n_tmp;
        d->dy = d->dx + plane;

        double sum = 0.0, s2 = 2.0 * (double)p->elastic_sigma * p->elastic_sigma;
        for (size_t k = 0; k < taps; k++) {
            double t = (double)k - (double)r;
            sum += exp(-t * t / s2);
        }
        for (size_t k = 0; k < taps; k++) {
            double t = (double)k - (double)r;
            d->kernel[k] = (float)(exp(-t * t / s2) / sum);
        }
    }
    *ret_d = d;
    return 0;
fail:
    nc_deform_free(d);
    return err;
}

const float *nc_deform_kernel(const nc_deform *d, uint32_t *ret_radius)
{
    if (ret_radius)
        *ret_radius = d && d->elastic ? d->radius : 0;
    return d && d->elastic ? d->kernel : NULL;
}

/* field[height][width] = alpha * (G * U) for a fresh uniform field U over
 * the grown grid (see deform.h), smoothed horizontally then vertically. */
static void elastic_field(nc_deform *d, nc_deform_rng *rng, float *field)
{
    const size_t r = d->radius, taps = 2 * r + 1;
    const size_t w = d->width, h = d->height, we = w + 2 * r, he = h + 2 * r;
    const float alpha = d->p.elastic_alpha;
    const float *g = d->kernel;

    for (size_t i = 0; i < we * he; i++)
        d->noise[i] = nc_deform_rng_sym(rng);
    /* Horizontal pass, "valid": tmp[yy][x] = sum_k g[k] noise[yy][x + k]. */
    for (size_t yy = 0; yy < he; yy++) {
        const float *row = d->noise + yy * we;
        float *t = d->tmp + yy * w;
        for (size_t x = 0; x < w; x++) {
            float acc = 0.0f;
            for (size_t k = 0; k < taps; k++)
                acc += g[k] * row[x + k];
            t[x] = acc;
        }
    }
    /* Vertical pass, row by row so the inner loop runs along memory. */
    for (size_t y = 0; y < h; y++) {
        float *f = field + y * w;
        for (size_t x = 0; x < w; x++)
            f[x] = 0.0f;
        for (size_t k = 0; k < taps; k++) {
            const float *t = d->tmp + (y + k) * w;
            const float gk = g[k];
            for (size_t x = 0; x < w; x++)
                f[x] += gk * t[x];
        }
        for (size_t x = 0; x < w; x++)
            f[x] *= alpha;
    }
}

int nc_deform_apply(nc_deform *d, nc_deform_rng *rng, const float *in, float *out)
{
    if (!d || !rng || !in || !out)
        return -EINVAL;
    const nc_deform_params *p = &d->p;

    /* The six affine draws, always, in the documented order. */
    float tx = p->max_translate * nc_deform_rng_sym(rng);
    float ty = p->max_translate * nc_deform_rng_sym(rng);
    float theta = p->max_rotate_deg * nc_deform_rng_sym(rng) * (float)(M_PI / 180.0);
    float sx = 1.0f + p->max_scale * nc_deform_rng_sym(rng);
    float sy = 1.0f + p->max_scale * nc_deform_rng_sym(rng);
    float sh = p->max_shear * nc_deform_rng_sym(rng);

    /* A = R(theta) [[1, sh], [0, 1]] diag(sx, sy)
     *   = [[c, -s], [s, c]] [[sx, sh sy], [0, sy]]. */
    float c = cosf(theta), s = sinf(theta);
    nc_deform_affine a = {
        .a11 = c * sx, .a12 = c * sh * sy - s * sy,
        .a21 = s * sx, .a22 = s * sh * sy + c * sy,
        .tx = tx, .ty = ty,
    };
    if (d->elastic) {
        elastic_field(d, rng, d->dx);
        elastic_field(d, rng, d->dy);
    }
    warp(in, d->width, d->height, &a, d->elastic ? d->dx : NULL,
         d->elastic ? d->dy : NULL, out);
    return 0;
}

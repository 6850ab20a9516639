/* core/image/image_prep.c — raw grey image -> network input (nc_prep_apply).
 *
 * Layer: core.  The steps and conventions are documented at nc_prep_apply in
 * image.h; this file follows them in order.  Everything that can fail runs
 * before the first write to out, so out is untouched on error. */
#include "image.h"

#include <math.h>
#include <string.h>

size_t nc_prep_view_len(const nc_prep *p)
{
    if (!p)
        return 0;
    size_t side = (size_t)p->size + 2 * (size_t)p->pad, len;
    if (side < p->size || nc_size_mul(side, side, &len) < 0)
        return 0;
    return len;
}

uint32_t nc_prep_views(const nc_prep *p)
{
    return p && p->n_views ? p->n_views : 1;
}

size_t nc_prep_out_len(const nc_prep *p)
{
    size_t len;
    if (nc_size_mul(nc_prep_view_len(p), nc_prep_views(p), &len) < 0)
        return 0;
    return len;
}

nc_prep nc_prep_no_views(const nc_prep *p)
{
    nc_prep one = *p;
    one.n_views = 0;
    memset(one.view_box, 0, sizeof one.view_box);
    memset(one.view_deskew, 0, sizeof one.view_deskew);
    return one;
}

const char *nc_prep_deskew_name(uint32_t deskew)
{
    static const char *const name[] = { "unsheared", "sheared", "gently sheared" };
    return deskew <= NC_PREP_DESKEW_GENTLE ? name[deskew] : "?";
}

nc_prep nc_prep_view(const nc_prep *p, uint32_t v)
{
    nc_prep one = nc_prep_no_views(p);
    if (v < p->n_views && v < NC_PREP_MAX_VIEWS) {
        one.box = p->view_box[v];
        one.deskew = p->view_deskew[v];
    }
    return one;
}

/* A box (or view box) p's field can hold. */
static int box_check(const nc_prep *p, uint32_t box)
{
    if (box == 0)
        return -EINVAL;
    return box > p->size ? -ERANGE : 0;
}

int nc_prep_check(const nc_prep *p)
{
    if (!p)
        return -EINVAL;
    if (p->kind != NC_PREP_MNIST && p->kind != NC_PREP_NEOCOG && p->kind != NC_PREP_LINE)
        return -EINVAL;
    if (p->size == 0 || p->invert > 1 || p->deskew > NC_PREP_DESKEW_GENTLE)
        return -EINVAL;
    /* Written so that NaN fails too; anything < 0 means Otsu. */
    if (!(p->threshold <= 1.0f))
        return -EINVAL;
    if (p->size > NC_PREP_MAX_SIZE || p->pad > NC_PREP_MAX_PAD)
        return -ERANGE;
    int err;
    if ((err = box_check(p, p->box)) < 0)
        return err;
    if (p->n_views > NC_PREP_MAX_VIEWS)
        return -ERANGE;
    for (uint32_t v = 0; v < NC_PREP_MAX_VIEWS; v++) {
        if (v >= p->n_views) {
            if (p->view_box[v] || p->view_deskew[v])
                return -EINVAL;
        } else if (p->view_deskew[v] > NC_PREP_DESKEW_GENTLE) {
            return -EINVAL;
        } else if ((err = box_check(p, p->view_box[v])) < 0) {
            return err;
        }
    }
    /* LINE keeps the ink where it sits on the line: a shear would move it. */
    if (p->kind == NC_PREP_LINE) {
        if (p->deskew)
            return -EINVAL;
        for (uint32_t v = 0; v < p->n_views; v++)
            if (p->view_deskew[v])
                return -EINVAL;
    }
    /* NEOCOG caps the width at size - 4, which must leave a pixel. */
    if (p->kind == NC_PREP_NEOCOG && p->size < 5)
        return -ERANGE;
    return 0;
}

/* ---- finding the ink --------------------------------------------------- */

/* Histogram as the preprocessing sees it, i.e. after the optional invert. */
static int prep_histogram(const nc_image *img, int invert, uint64_t hist[256])
{
    uint64_t h[256];
    int err = nc_image_histogram(img, h);
    if (err < 0)
        return err;
    for (int v = 0; v < 256; v++)
        hist[v] = h[invert ? 255 - v : v];
    return 0;
}

/* Ink is (polarity-corrected) level > t.  A fixed threshold in [0, 1] means
 * level / 255 > threshold, which for integer levels is level > floor(255
 * threshold). */
static int ink_threshold(const nc_prep *p, const uint64_t hist[256], uint8_t *ret_t)
{
    if (p->threshold < 0)
        return nc_image_otsu_histogram(hist, ret_t);
    float t = floorf(p->threshold * 255.0f);
    *ret_t = t >= 255.0f ? 255 : (uint8_t)t;
    return 0;
}

/* Bounding box of ink in raw pixel terms: with invert, 255 - p > t. */
static int ink_bbox(const nc_image *img, int invert, uint8_t t, nc_rect *ret_box)
{
    if (!invert)
        return nc_image_bbox(img, t, ret_box);
    /* Scan with the polarity flipped on the fly rather than copying an
     * image that may be camera-sized. */
    uint32_t x0 = UINT32_MAX, y0 = UINT32_MAX, x1 = 0, y1 = 0;
    for (uint32_t y = 0; y < img->height; y++) {
        const uint8_t *row = img->pixels + (size_t)y * img->stride;
        for (uint32_t x = 0; x < img->width; x++) {
            if (255 - row[x] <= t)
                continue;
            if (x < x0) x0 = x;
            if (x > x1) x1 = x;
            if (y0 == UINT32_MAX) y0 = y;
            y1 = y;
        }
    }
    if (y0 == UINT32_MAX)
        return -ENOENT;
    *ret_box = (nc_rect){ x0, y0, x1 - x0 + 1, y1 - y0 + 1 };
    return 0;
}

/* Map raw pixel -> [0, 1]: undo the polarity, then stretch so the median
 * background level goes to 0 and the brightest ink to 1.  Medians ignore
 * the few grey edge pixels that fall below the threshold. */
static void contrast_lut(const uint64_t hist[256], uint8_t t, int invert, float lut[256])
{
    uint64_t n_bg = 0;
    for (int v = 0; v <= t; v++)
        n_bg += hist[v];
    int lo = 0, hi = 255;
    if (n_bg > 0) {
        uint64_t acc = 0;
        for (lo = 0; lo <= t; lo++) {
            acc += hist[lo];
            if (acc * 2 >= n_bg)
                break;
        }
    }
    while (hi > t && hist[hi] == 0)
        hi--;
    /* There is ink, so hi > t >= lo and the span is positive. */
    float span = (float)(hi - lo);
    for (int p = 0; p < 256; p++) {
        int v = invert ? 255 - p : p;
        float f = (float)(v - lo) / span;
        lut[p] = f < 0 ? 0 : f > 1 ? 1 : f;
    }
}

/* ---- deskewing (step 4) ------------------------------------------------ */

/* Mass and first moments of a dense w x h grey image (the deskewing's slant
 * and the MNIST placement's centre of mass both start from them). */
static void grey_mass(const float *v, uint32_t w, uint32_t h, double *ret_sum,
                      double *ret_sx, double *ret_sy)
{
    double sum = 0, sx = 0, sy = 0;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            double a = v[(size_t)y * w + x];
            sum += a;
            sx += a * x;
            sy += a * y;
        }
    *ret_sum = sum;
    *ret_sx = sx;
    *ret_sy = sy;
}


/* round(a * b / c) for positive sizes, at least 1. */
static uint32_t scale_dim(uint32_t a, uint32_t b, uint32_t c)
{
    uint64_t r = ((uint64_t)a * b * 2 + c) / (2 * (uint64_t)c);
    return r ? (uint32_t)r : 1;
}


/* The crop as dense stretched grey, at most 4 x size pixels on its longer
 * side: a larger crop is first shrunk (area-averaged, aspect kept), so that a
 * 16-megapixel request costs a few hundred kilobytes here, not gigabytes,
 * while every digit-sized crop (MNIST, camera patches) is copied as it is. */
static int crop_grey(const nc_prep *p, const nc_image *crop, const float lut[256],
                     float **ret, uint32_t *ret_w, uint32_t *ret_h)
{
    const uint32_t cap = 4 * p->size, w = crop->width, h = crop->height;
    uint32_t gw = w, gh = h;
    if (w > cap || h > cap) {
        const uint32_t longer = w > h ? w : h;
        gw = scale_dim(w, cap, longer);
        gh = scale_dim(h, cap, longer);
    }
    float *g = malloc((size_t)gw * gh * sizeof(float));
    if (!g)
        return -ENOMEM;
    if (gw == w && gh == h) {
        for (uint32_t y = 0; y < h; y++) {
            const uint8_t *row = crop->pixels + (size_t)y * crop->stride;
            for (uint32_t x = 0; x < w; x++)
                g[(size_t)y * w + x] = lut[row[x]];
        }
    } else {
        int err = nc_image_resample_u8(crop, lut, g, gw, gh);
        if (err < 0) {
            free(g);
            return err;
        }
    }
    *ret = g;
    *ret_w = gw;
    *ret_h = gh;
    return 0;
}

/* The slant of a grey image: s = mu11 / mu02, the x a row moves per row
 * down, clamped to [-1, 1] (45 degrees; beyond that the moments describe a
 * blob, not a slanted stroke).  *ret_cy is the centre of mass's row, which
 * the shear keeps in place. */
static double grey_slant(const float *g, uint32_t w, uint32_t h, double *ret_cy)
{
    double sum, sx, sy;
    grey_mass(g, w, h, &sum, &sx, &sy);
    *ret_cy = sum > 0 ? sy / sum : 0;
    if (!(sum > 0))
        return 0;
    double cx = sx / sum, cy = sy / sum, mu11 = 0, mu02 = 0;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            double a = g[(size_t)y * w + x];
            mu11 += a * (x - cx) * (y - cy);
            mu02 += a * (y - cy) * (y - cy);
        }
    double s = mu02 > 0 ? mu11 / mu02 : 0;
    return s < -1 ? -1 : s > 1 ? 1 : s;
}

/* Shear g by s about row cy (row y moves by -s (y - cy), sampled linearly,
 * zero outside), then cut the result to the bounding box of what is above
 * ink.  *ret is a dense float image the caller frees.  -ENOENT when nothing
 * stays above ink (interpolation can dim a one-pixel stroke). */
static int shear_grey(const float *g, uint32_t w, uint32_t h, float ink, double s,
                      double cy, float **ret, uint32_t *ret_w, uint32_t *ret_h)
{
    double d0 = s * cy, d1 = -s * ((double)h - 1 - cy);
    double dmin = d0 < d1 ? d0 : d1, dmax = d0 < d1 ? d1 : d0;
    /* |s| <= 1 and 0 <= cy < h, so the spread is below h, and both sides
     * are at most 4 x NC_PREP_MAX_SIZE (crop_grey): no overflow */
    size_t sw = (size_t)w + (size_t)ceil(dmax - dmin) + 1, n = sw * h;
    float *sheared = calloc(n, sizeof(float));
    if (!sheared)
        return -ENOMEM;
    size_t x0 = SIZE_MAX, y0 = SIZE_MAX, x1 = 0, y1 = 0;
    for (uint32_t y = 0; y < h; y++) {
        const float *row = g + (size_t)y * w;
        /* output column xo reads source column xo + dmin - d(y) */
        double off = dmin + s * ((double)y - cy);
        for (size_t xo = 0; xo < sw; xo++) {
            double xs = (double)xo + off, fl = floor(xs), f = xs - fl;
            long i = (long)fl;
            float a = 0;
            if (i >= 0 && i < (long)w)
                a += (float)(1 - f) * row[i];
            if (i + 1 >= 0 && i + 1 < (long)w)
                a += (float)f * row[i + 1];
            sheared[(size_t)y * sw + xo] = a;
            if (!(a > ink))
                continue;
            if (xo < x0) x0 = xo;
            if (xo > x1) x1 = xo;
            if (y0 == SIZE_MAX) y0 = y;
            y1 = y;
        }
    }
    if (y0 == SIZE_MAX) {
        free(sheared);
        return -ENOENT;
    }
    size_t bw = x1 - x0 + 1, bh = y1 - y0 + 1;
    for (size_t y = 0; y < bh; y++)     /* compact in place: rows only move up */
        memmove(sheared + y * bw, sheared + (y + y0) * sw + x0, bw * sizeof(float));
    *ret = sheared;
    *ret_w = (uint32_t)bw;
    *ret_h = (uint32_t)bh;
    return 0;
}

/* Step 4: the crop sheared upright, or unsheared (s = 0, an exact copy) when
 * the shear leaves nothing above ink. */
static int deskew_crop(const nc_prep *p, const nc_image *crop, const float lut[256],
                       float ink, float **ret, uint32_t *ret_w, uint32_t *ret_h)
{
    float *g = NULL;
    uint32_t w, h;
    int err = crop_grey(p, crop, lut, &g, &w, &h);
    if (err < 0)
        return err;
    double cy, s = grey_slant(g, w, h, &cy);
    if (p->deskew == NC_PREP_DESKEW_GENTLE)
        s = s < -0.5 ? -0.5 : s > 0.5 ? 0.5 : s;
    err = shear_grey(g, w, h, ink, s, cy, ret, ret_w, ret_h);
    if (err == -ENOENT && s != 0)
        err = shear_grey(g, w, h, ink, 0, cy, ret, ret_w, ret_h);
    free(g);
    return err;
}

/* ---- sizing ------------------------------------------------------------ */

static void mnist_dims(const nc_prep *p, nc_rect crop, uint32_t *w, uint32_t *h)
{
    uint32_t longer = crop.width > crop.height ? crop.width : crop.height;
    *w = scale_dim(crop.width, p->box, longer);
    *h = scale_dim(crop.height, p->box, longer);
}

/* LINE: the cell's height to box rows, unless its width would then pass
 * the field's: then its width to size. */
static void line_dims(const nc_prep *p, uint32_t cw, uint32_t ch, uint32_t *w, uint32_t *h)
{
    *h = p->box;
    *w = scale_dim(cw, p->box, ch);
    if (*w > p->size) {
        *w = p->size;
        *h = scale_dim(ch, p->size, cw);
        if (*h > p->size)   /* rounding at the edge: at most one row over */
            *h = p->size;
    }
}

static void neocog_dims(const nc_prep *p, nc_rect crop, uint32_t *w, uint32_t *h)
{
    uint32_t max_w = p->size - 4;
    *h = p->box;
    *w = scale_dim(crop.width, p->box, crop.height);
    if (*w > max_w) {
        *w = max_w;
        *h = scale_dim(crop.height, max_w, crop.width);
    }
}

/* ---- placement --------------------------------------------------------- */

typedef struct placed {
    const float *v;             /* w x h values to copy */
    uint32_t w, h;
    int32_t ox, oy;             /* field position of v's pixel (0, 0) */
} placed;

/* Centre of mass to (size/2, size/2) by whole-pixel shifts; clamped so the
 * crop stays inside the field. */
static int mnist_place(const nc_prep *p, const float *v, uint32_t w, uint32_t h,
                       placed *ret)
{
    double sum, sx, sy;
    grey_mass(v, w, h, &sum, &sx, &sy);
    if (!(sum > 0))
        return -ENOENT;
    double target = (double)(p->size / 2);
    long ox = lround(target - sx / sum), oy = lround(target - sy / sum);
    long max_x = (long)(p->size - w), max_y = (long)(p->size - h);
    ox = ox < 0 ? 0 : ox > max_x ? max_x : ox;
    oy = oy < 0 ? 0 : oy > max_y ? max_y : oy;
    *ret = (placed){ v, w, h, (int32_t)ox, (int32_t)oy };
    return 0;
}

/* LINE: the top row at (size - h) / 2, the centre of mass along x to
 * size / 2 by whole pixels, clamped so no ink leaves the field (a cell as
 * wide as the field may still move its empty margin out).  The values are
 * clamped to [0, 1] first: area averages of full ink can round a hair
 * above 1. */
static int line_place(const nc_prep *p, float *v, uint32_t w, uint32_t h, placed *ret)
{
    uint32_t x0 = UINT32_MAX, x1 = 0;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            float *a = &v[(size_t)y * w + x];
            *a = *a > 1.0f ? 1.0f : *a > 0.0f ? *a : 0.0f;
            if (*a == 0.0f)
                continue;
            if (x < x0) x0 = x;
            if (x > x1) x1 = x;
        }
    double sum, sx, sy;
    grey_mass(v, w, h, &sum, &sx, &sy);
    /* the source has ink, but shrinking a huge cell may average it away */
    if (x0 == UINT32_MAX || !(sum > 0))
        return -ENOENT;
    /* ink columns x0..x1 (at most w <= size wide) stay in 0..size-1 */
    long ox = lround((double)(p->size / 2) - sx / sum);
    long min_x = -(long)x0, max_x = (long)p->size - 1 - (long)x1;
    ox = ox < min_x ? min_x : ox > max_x ? max_x : ox;
    *ret = (placed){ v, w, h, (int32_t)ox, (int32_t)((p->size - h) / 2) };
    return 0;
}

/* Re-binarise v in place, then centre its bounding box in the field. */
static int neocog_place(const nc_prep *p, float *v, uint32_t w, uint32_t h,
                        placed *ret)
{
    size_t n = (size_t)w * h;
    float t = p->threshold;
    if (t < 0) {
        uint64_t hist[256] = { 0 };
        for (size_t i = 0; i < n; i++)
            hist[(uint8_t)lrintf(v[i] * 255.0f)]++;
        uint8_t t8;
        /* A flat crop (a solid block) has nothing for Otsu to split: it is
         * all ink or all not, which half way decides. */
        t = nc_image_otsu_histogram(hist, &t8) < 0 ? 0.5f : (t8 + 0.5f) / 255.0f;
    }
    uint32_t x0 = UINT32_MAX, y0 = UINT32_MAX, x1 = 0, y1 = 0;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            float *a = &v[(size_t)y * w + x];
            *a = *a > t ? 1.0f : 0.0f;
            if (*a == 0.0f)
                continue;
            if (x < x0) x0 = x;
            if (x > x1) x1 = x;
            if (y0 == UINT32_MAX) y0 = y;
            y1 = y;
        }
    if (y0 == UINT32_MAX)
        return -ENOENT;
    /* Shift so the box [x0, x1] starts at (size - box width) / 2. */
    uint32_t bw = x1 - x0 + 1, bh = y1 - y0 + 1;
    *ret = (placed){ v, w, h,
                     (int32_t)((p->size - bw) / 2) - (int32_t)x0,
                     (int32_t)((p->size - bh) / 2) - (int32_t)y0 };
    return 0;
}

/* Zero the whole output, then copy the placed values into the field at
 * (pad, pad), dropping anything that falls outside the field. */
static void write_field(const nc_prep *p, const placed *pl, float *out)
{
    size_t side = (size_t)p->size + 2 * (size_t)p->pad;
    memset(out, 0, side * side * sizeof(float));
    for (uint32_t y = 0; y < pl->h; y++) {
        int64_t fy = (int64_t)y + pl->oy;
        if (fy < 0 || fy >= p->size)
            continue;
        for (uint32_t x = 0; x < pl->w; x++) {
            int64_t fx = (int64_t)x + pl->ox;
            if (fx < 0 || fx >= p->size)
                continue;
            out[(size_t)(fy + p->pad) * side + (size_t)(fx + p->pad)] =
                pl->v[(size_t)y * pl->w + x];
        }
    }
}

/* Steps 1-3, the same for every view of a digit: the ink level, the ink's
 * bounding box as a crop of img, and the contrast table. */
typedef struct prep_source {
    nc_image cell;          /* the whole image (LINE's input) */
    nc_image crop;          /* borrows img's pixels */
    nc_rect box;
    float lut[256];
    float ink;              /* the ink level in stretched units */
} prep_source;

static int make_source(const nc_image *img, const nc_prep *p, prep_source *src)
{
    uint64_t hist[256];
    uint8_t t;
    int err;
    if ((err = prep_histogram(img, p->invert != 0, hist)) < 0 ||
        (err = ink_threshold(p, hist, &t)) < 0 ||
        (err = ink_bbox(img, p->invert != 0, t, &src->box)) < 0)
        return err;
    contrast_lut(hist, t, p->invert != 0, src->lut);
    if ((err = nc_image_crop(img, src->box, &src->crop)) < 0)
        return err;
    src->cell = *img;
    /* Ink in stretched units: the level t itself, polarity undone. */
    src->ink = src->lut[p->invert ? 255 - t : t];
    return 0;
}

/* Step 4's result for one deskew: the crop sheared upright (upright, fit
 * its size), or, unsheared, no copy (upright NULL, fit the box). */
typedef struct prep_upright {
    float *upright;
    nc_rect fit;
} prep_upright;

static int make_upright(const nc_prep *p, const prep_source *src, prep_upright *u)
{
    u->upright = NULL;
    u->fit = src->box;
    if (!p->deskew)
        return 0;
    return deskew_crop(p, &src->crop, src->lut, src->ink, &u->upright, &u->fit.width,
                       &u->fit.height);
}

/* Step 5 and the placement for one view p (checked, n_views ignored). */
static int place_view(const nc_prep *p, const prep_source *src, const prep_upright *u,
                      float *out)
{
    uint32_t w, h;
    if (p->kind == NC_PREP_LINE)
        line_dims(p, src->cell.width, src->cell.height, &w, &h);
    else if (p->kind == NC_PREP_MNIST)
        mnist_dims(p, u->fit, &w, &h);
    else
        neocog_dims(p, u->fit, &w, &h);

    /* w, h <= size <= NC_PREP_MAX_SIZE: no overflow. */
    float *scaled = malloc((size_t)w * h * sizeof(float));
    if (!scaled)
        return -ENOMEM;
    placed pl;
    int err;
    if (p->kind == NC_PREP_LINE)        /* no crop, never deskewed */
        err = nc_image_resample_u8(&src->cell, src->lut, scaled, w, h);
    else if (u->upright)
        err = nc_image_resample(u->upright, u->fit.width, u->fit.height, scaled, w, h);
    else
        err = nc_image_resample_u8(&src->crop, src->lut, scaled, w, h);
    if (err >= 0)
        err = p->kind == NC_PREP_LINE    ? line_place(p, scaled, w, h, &pl)
              : p->kind == NC_PREP_MNIST ? mnist_place(p, scaled, w, h, &pl)
                                         : neocog_place(p, scaled, w, h, &pl);
    if (err >= 0)
        write_field(p, &pl, out);
    free(scaled);
    return err;
}

int nc_prep_apply(const nc_image *img, const nc_prep *p, float *out)
{
    return nc_prep_apply_views(img, p, UINT32_MAX, out);
}

int nc_prep_apply_views(const nc_image *img, const nc_prep *p, uint32_t mask, float *out)
{
    int err = nc_image_check(img);
    if (err < 0)
        return err;
    if ((err = nc_prep_check(p)) < 0)
        return err;
    if (!out)
        return -EINVAL;
    if (!(mask & ((1u << nc_prep_views(p)) - 1u)))      /* n_views <= NC_PREP_MAX_VIEWS */
        return 0;
    prep_source src;
    if ((err = make_source(img, p, &src)) < 0)
        return err;
    if (p->n_views == 0) {
        prep_upright u;
        if ((err = make_upright(p, &src, &u)) >= 0)
            err = place_view(p, &src, &u, out);
        free(u.upright);
        return err;
    }
    /* Views share steps 1-3, and those of one deskew share step 4, made
     * when a view first needs it: each view is then exactly what it alone
     * would be (the same steps on the same values), and the first view
     * that fails fails the call, as if each were made in turn.  Every
     * view goes into a scratch copy first: a view with nothing left
     * leaves out untouched. */
    const size_t len = nc_prep_view_len(p);
    float *all = malloc(nc_prep_out_len(p) * sizeof *all);
    if (!all)
        return -ENOMEM;
    prep_upright u[NC_PREP_DESKEW_GENTLE + 1];
    int made[NC_PREP_DESKEW_GENTLE + 1] = { 0 };
    for (uint32_t v = 0; v < p->n_views && err >= 0; v++) {
        if (!(mask >> v & 1u))
            continue;
        const nc_prep pv = nc_prep_view(p, v);
        const uint32_t d = pv.deskew;       /* <= GENTLE: nc_prep_check */
        if (!made[d]) {
            made[d] = 1;
            err = make_upright(&pv, &src, &u[d]);
        }
        if (err >= 0)
            err = place_view(&pv, &src, &u[d], all + v * len);
    }
    for (uint32_t v = 0; v < p->n_views && err >= 0; v++)
        if (mask >> v & 1u)
            memcpy(out + v * len, all + v * len, len * sizeof *all);
    for (uint32_t d = 0; d <= NC_PREP_DESKEW_GENTLE; d++)
        if (made[d])
            free(u[d].upright);
    free(all);
    return err;
}

/* tools/streamgen_render.c — see streamgen_render.h.
 *
 * Order of work for one frame (all in float grey levels, then quantised):
 *  1. lay out the strings, one per horizontal band, choosing each string's
 *     digit height so that the rotated string fits its band;
 *  2. render each string's digits into a string-local coverage canvas
 *     (bilinear up-scaling of the MNIST images, max-composited), add a box
 *     around it sometimes, and map the canvas into the frame's coverage map
 *     through rotation + perspective (inverse mapping, bilinear);
 *  3. clutter: rules between bands, specks away from the digits;
 *  4. shade: pixel = light(x, y) * (paper(x, y) (1 - c) + ink c), where
 *     paper carries a coarse and a fine texture and light a gradient, a
 *     vignette and sometimes a soft shadow;
 *  5. Gaussian blur, then sensor noise, then rounding to 8 bits. */
#include "streamgen_render.h"

#include <math.h>
#include <string.h>

#include "render_common.h"

#define PI NC_RENDER_PI

void nc_render_params_default(nc_render_params *ret)
{
    *ret = (nc_render_params){
        .strings = 2, .digits = 8, .min_height = 24, .max_height = 60,
        .polarity = NC_RENDER_DARK_INK, .max_rotate_deg = 3.0f,
        .perspective = 0.08f, .touch_prob = 0.0f, .noise_sigma = 4.0f,
        .blur_max = 1.0f, .light_var = 0.35f, .clutter = 1,
    };
}

/* ---- one string ------------------------------------------------------------ */

/* Where each digit sits in the string's local canvas. */
typedef struct placed {
    uint32_t src;
    double x, y, s;             /* local position of source pixel (sx0, sy0), scale */
    uint32_t b[4];              /* source box of pixels > 0 */
    uint32_t t[4];              /* source box of pixels > 64 (the truth box) */
} placed;

static void draw_rect_outline(nc_fimg *f, double x0, double y0, double x1, double y1,
                              double th, float val)
{
    for (uint32_t y = 0; y < f->h; y++)
        for (uint32_t x = 0; x < f->w; x++) {
            double px = x + 0.5, py = y + 0.5;
            int in_outer = px >= x0 && px < x1 && py >= y0 && py < y1;
            int in_inner = px >= x0 + th && px < x1 - th && py >= y0 + th && py < y1 - th;
            if (in_outer && !in_inner) {
                float *v = &f->v[(size_t)y * f->w + x];
                if (val > *v) *v = val;
            }
        }
}

/* Lay out and render the digits of one string into a local canvas (ls). */
static int render_digits(const nc_render_params *p, const nc_render_source *src,
                         uint64_t *rng, uint32_t band_h, uint32_t W, nc_local_string *ls)
{
    const uint32_t n = p->digits;
    placed pl[NC_RENDER_MAX_DIGITS];
    double theta = nc_rng_range(rng, -p->max_rotate_deg, p->max_rotate_deg) * PI / 180.0;
    double h = nc_rng_range(rng, p->min_height, p->max_height);
    /* Pick digits first: their widths decide the string's length. */
    for (uint32_t i = 0; i < n; i++) {
        for (int tries = 0; tries < 16; tries++) {
            pl[i].src = (uint32_t)(nc_rng_next(rng) % src->count);
            const uint8_t *px = src->pixels + (size_t)pl[i].src * src->rows * src->cols;
            if (nc_digit_box(px, src->rows, src->cols, 0, pl[i].b) &&
                nc_digit_box(px, src->rows, src->cols, 64, pl[i].t))
                break;
        }
    }
    double gaps[NC_RENDER_MAX_DIGITS], scale_j[NC_RENDER_MAX_DIGITS], yj[NC_RENDER_MAX_DIGITS];
    for (uint32_t i = 0; i < n; i++) {
        scale_j[i] = nc_rng_range(rng, 0.92, 1.08);
        yj[i] = nc_rng_range(rng, -0.05, 0.05);
        gaps[i] = nc_rng_uniform(rng) < p->touch_prob ? -nc_rng_range(rng, 0.0, 0.06) : nc_rng_range(rng, 0.15, 0.4);
    }
    /* Shrink h until the rotated string fits the band and the frame. */
    double lw = 0, lh = 0, margin = 0;
    for (int it = 0; it < 64; it++) {
        double s = h / 20.0;
        lw = 0;
        for (uint32_t i = 0; i < n; i++)
            lw += (pl[i].b[2] - pl[i].b[0]) * s * scale_j[i] + (i + 1 < n ? gaps[i] * h : 0);
        margin = 0.5 * h;
        lh = 1.3 * h + 2 * margin;
        double ext_h = (lh - margin) + (lw + 2 * margin) * fabs(sin(theta));
        double ext_w = (lw + 2 * margin) * 1.1 + 8;
        if ((ext_h <= band_h && ext_w <= W) || h < 10)
            break;
        h *= 0.93;
    }
    if (h < 10)
        return -EINVAL;         /* frame too small for this many strings */
    double s = h / 20.0;
    uint32_t cw = (uint32_t)ceil(lw + 2 * margin), ch = (uint32_t)ceil(lh);
    nc_fimg loc = { cw, ch, calloc((size_t)cw * ch, sizeof(float)) };
    if (!loc.v)
        return -ENOMEM;
    double x = margin, vc = ch / 2.0;
    for (uint32_t i = 0; i < n; i++) {
        double sj = s * scale_j[i];
        pl[i].s = sj;
        pl[i].x = x;
        pl[i].y = vc - (pl[i].b[3] - pl[i].b[1]) * sj / 2 + yj[i] * h;
        x += (pl[i].b[2] - pl[i].b[0]) * sj + gaps[i] * h;
        /* sample the source digit at local pixel centres */
        const uint8_t *px = src->pixels + (size_t)pl[i].src * src->rows * src->cols;
        long u0 = (long)floor(pl[i].x - 1), u1 = (long)ceil(pl[i].x + (pl[i].b[2] - pl[i].b[0]) * sj + 1);
        long v0 = (long)floor(pl[i].y - 1), v1 = (long)ceil(pl[i].y + (pl[i].b[3] - pl[i].b[1]) * sj + 1);
        for (long v = v0; v <= v1; v++)
            for (long u = u0; u <= u1; u++) {
                if (u < 0 || v < 0 || u >= (long)cw || v >= (long)ch)
                    continue;
                /* local pixel centre (u + 0.5) -> source continuous coord;
                 * source pixel k covers [k, k+1) */
                double sx = pl[i].b[0] + (u + 0.5 - pl[i].x) / sj - 0.5;
                double sy = pl[i].b[1] + (v + 0.5 - pl[i].y) / sj - 0.5;
                double fx = floor(sx), fy = floor(sy), ax = sx - fx, ay = sy - fy;
                long X = (long)fx, Y = (long)fy;
#define SP(xx, yy) (((xx) < 0 || (yy) < 0 || (xx) >= (long)src->cols || (yy) >= (long)src->rows) ? 0.0 : px[(yy) * src->cols + (xx)] / 255.0)
                double val = (1 - ay) * ((1 - ax) * SP(X, Y) + ax * SP(X + 1, Y)) +
                             ay * ((1 - ax) * SP(X, Y + 1) + ax * SP(X + 1, Y + 1));
#undef SP
                float *d = &loc.v[(size_t)v * cw + u];
                if (val > *d) *d = (float)val;
            }
    }
    *ls = (nc_local_string){ .canvas = loc, .theta = theta, .h = h, .margin = margin, .lh = lh,
                             .vc = vc, .x_end = x - gaps[n - 1] * h, .count = n };
    /* Truth: each digit's > 64 box, in the canvas. */
    for (uint32_t i = 0; i < n; i++) {
        ls->box[i][0] = pl[i].x + (pl[i].t[0] - pl[i].b[0]) * pl[i].s;
        ls->box[i][2] = pl[i].x + (pl[i].t[2] - pl[i].b[0]) * pl[i].s;
        ls->box[i][1] = pl[i].y + (pl[i].t[1] - pl[i].b[1]) * pl[i].s;
        ls->box[i][3] = pl[i].y + (pl[i].t[3] - pl[i].b[1]) * pl[i].s;
        ls->label[i] = src->labels ? src->labels[pl[i].src] : 0;
        ls->source[i] = pl[i].src;
        ls->space_before[i] = 0;
    }
    return 0;
}

int nc_render_place_string(const nc_render_params *p, uint64_t *rng, nc_local_string *ls,
                           uint32_t band_y0, uint32_t band_h, nc_fimg *cov,
                           nc_render_string *ts)
{
    const uint32_t W = cov->w, H = cov->h, n = ls->count, cw = ls->canvas.w,
                   ch = ls->canvas.h;
    const double h = ls->h, margin = ls->margin, vc = ls->vc, lh = ls->lh;
    nc_fimg *loc = &ls->canvas;
    /* A box around the string (a meter window, a form field). */
    if (p->clutter && nc_rng_uniform(rng) < 0.4) {
        /* solid enough to stay one component through blur and JPEG, as a
         * printed window or field border is */
        double g = nc_rng_range(rng, 0.3, 0.45) * h, th = nc_rng_range(rng, 1.5, 3.0);
        double bx0 = margin - g, bx1 = ls->x_end + g;
        double by0 = vc - ls->box_up * h - g, by1 = vc + ls->box_down * h + g;
        if (bx0 > 0 && by0 > 0 && bx1 < cw && by1 < ch)
            draw_rect_outline(loc, bx0, by0, bx1, by1, th, (float)nc_rng_range(rng, 0.75, 1.0));
    }
    /* Place it: centre of the band, random x where it fits. */
    nc_warp wp;
    wp.uc = cw / 2.0;
    wp.vc = ch / 2.0;
    wp.c = cos(ls->theta);
    wp.s = sin(ls->theta);
    double persp = nc_rng_range(rng, -p->perspective, p->perspective);
    wp.px = persp / cw;
    wp.py = nc_rng_range(rng, -p->perspective, p->perspective) * 0.5 / ch;
    double half_w = (cw / 2.0) * 1.1 + 2;
    double slack_x = W - 2 * half_w;
    wp.fx = half_w + (slack_x > 0 ? nc_rng_uniform(rng) * slack_x : slack_x / 2);
    double ext_h = (lh - margin) + cw * fabs(wp.s);
    double slack_y = band_h - ext_h;
    wp.fy = band_y0 + band_h / 2.0 + (slack_y > 0 ? nc_rng_range(rng, -0.4, 0.4) * slack_y : 0);

    /* Inverse-map the canvas into the frame coverage over its bounds. */
    nc_rect fb = nc_warp_box(&wp, 0, 0, cw, ch, W, H);
    for (uint32_t y = fb.y; y < fb.y + fb.height; y++)
        for (uint32_t xx = fb.x; xx < fb.x + fb.width; xx++) {
            double u, v;
            nc_warp_inv(&wp, xx, y, &u, &v);
            /* canvas pixel (i, j) has its centre at (i + 0.5, j + 0.5) */
            float val = nc_fimg_bilinear(loc, u - 0.5, v - 0.5);
            float *d = &cov->v[(size_t)y * W + xx];
            if (val > *d) *d = val;
        }
    /* Truth: each character's box, mapped. */
    ts->count = n;
    ts->height = (uint32_t)lround(h);
    uint32_t X0 = UINT32_MAX, Y0 = UINT32_MAX, X1 = 0, Y1 = 0;
    for (uint32_t i = 0; i < n; i++) {
        nc_rect r = nc_warp_box(&wp, ls->box[i][0], ls->box[i][1], ls->box[i][2],
                                ls->box[i][3], W, H);
        ts->digits[i] = (nc_render_digit){ ls->label[i], ls->source[i], r,
                                           ls->space_before[i] };
        if (r.x < X0) X0 = r.x;
        if (r.y < Y0) Y0 = r.y;
        if (r.x + r.width > X1) X1 = r.x + r.width;
        if (r.y + r.height > Y1) Y1 = r.y + r.height;
    }
    ts->box = (nc_rect){ X0, Y0, X1 - X0, Y1 - Y0 };
    return 0;
}

static int render_string(const nc_render_params *p, const nc_render_source *src,
                         uint64_t *rng, uint32_t band_y0, uint32_t band_h, nc_fimg *cov,
                         nc_render_string *ts)
{
    nc_local_string ls;
    int err = render_digits(p, src, rng, band_h, cov->w, &ls);
    if (err < 0)
        return err;
    ls.box_up = ls.box_down = 0.65;
    err = nc_render_place_string(p, rng, &ls, band_y0, band_h, cov, ts);
    free(ls.canvas.v);
    return err;
}

/* ---- clutter, shading, blur, noise ---------------------------------------- */

static int near_truth(const nc_render_truth *t, double x, double y, double pad)
{
    for (uint32_t s = 0; s < t->string_count; s++) {
        nc_rect b = t->strings[s].box;
        double m = pad + 0.4 * t->strings[s].height;
        if (x >= b.x - m && x < b.x + b.width + m && y >= b.y - m && y < b.y + b.height + m)
            return 1;
    }
    return 0;
}

static void clutter(const nc_render_params *p, uint64_t *rng, nc_fimg *cov,
                    const nc_render_truth *t)
{
    const uint32_t W = cov->w, H = cov->h;
    /* Rules: horizontal lines placed only where no string is near. */
    int rules = (int)(nc_rng_next(rng) % 3);
    for (int r = 0; r < rules; r++) {
        double y = nc_rng_range(rng, 4, H - 4), th = nc_rng_range(rng, 1.0, 3.0);
        double x0 = nc_rng_range(rng, 0, W * 0.4), x1 = x0 + nc_rng_range(rng, 0.3, 0.6) * W;
        int clear = 1;
        for (double x = x0; x < x1 && clear; x += 4)
            if (near_truth(t, x, y, th + 4))
                clear = 0;
        if (!clear)
            continue;
        float val = (float)nc_rng_range(rng, 0.4, 0.8);
        for (uint32_t yy = (uint32_t)y; yy < H && yy < y + th; yy++)
            for (uint32_t x = (uint32_t)x0; x < W && x < x1; x++)
                cov->v[(size_t)yy * W + x] = fmaxf(cov->v[(size_t)yy * W + x], val);
    }
    /* Specks: dust and paper fibres, kept off the digits. */
    int specks = 8 + (int)(nc_rng_next(rng) % 24);
    for (int k = 0; k < specks; k++) {
        double cx = nc_rng_range(rng, 0, W), cy = nc_rng_range(rng, 0, H), rad = nc_rng_range(rng, 0.6, 1.8);
        if (near_truth(t, cx, cy, 4))
            continue;
        float val = (float)nc_rng_range(rng, 0.4, 1.0);
        for (long y = (long)(cy - rad - 1); y <= (long)(cy + rad + 1); y++)
            for (long x = (long)(cx - rad - 1); x <= (long)(cx + rad + 1); x++) {
                if (x < 0 || y < 0 || x >= (long)W || y >= (long)H)
                    continue;
                double d = hypot(x + 0.5 - cx, y + 0.5 - cy);
                if (d < rad)
                    cov->v[(size_t)y * W + x] = fmaxf(cov->v[(size_t)y * W + x], val);
            }
    }
    (void)p;
}

/* The digit strings' renderer for nc_render_frame_with. */
static int digit_string(void *ctx, const nc_render_params *p, uint64_t *rng, uint32_t band_y0,
                        uint32_t band_h, nc_fimg *cov, nc_render_string *ts)
{
    return render_string(p, ctx, rng, band_y0, band_h, cov, ts);
}

int nc_render_frame(const nc_render_params *p, const nc_render_source *src,
                    uint64_t *rng, nc_image *frame, nc_render_truth *ret_truth)
{
    if (!p || !src || !src->pixels || !src->count || !src->rows || !src->cols ||
        !p->digits || p->digits > NC_RENDER_MAX_DIGITS)
        return -EINVAL;
    return nc_render_frame_with(p, digit_string, (void *)src, rng, frame, ret_truth);
}

int nc_render_frame_with(const nc_render_params *p, nc_render_string_fn string_fn, void *ctx,
                         uint64_t *rng, nc_image *frame, nc_render_truth *ret_truth)
{
    if (!p || !string_fn || !rng || !frame || !ret_truth)
        return -EINVAL;
    if (nc_image_check(frame) < 0 || frame->width < 64 || frame->height < 64)
        return -EINVAL;
    if (!p->strings || p->strings > NC_RENDER_MAX_STRINGS || p->min_height < 10 ||
        p->max_height < p->min_height || p->polarity > NC_RENDER_MIXED)
        return -EINVAL;
    const uint32_t W = frame->width, H = frame->height;
    size_t npix = (size_t)W * H;
    nc_render_truth t;
    memset(&t, 0, sizeof t);
    nc_fimg cov = { W, H, calloc(npix, sizeof(float)) };
    float *paper = calloc(npix, sizeof(float));
    int err = -ENOMEM;
    if (!cov.v || !paper)
        goto out;

    t.polarity = p->polarity == NC_RENDER_MIXED ? (uint32_t)(nc_rng_next(rng) & 1) : p->polarity;
    uint32_t band = H / p->strings;
    for (uint32_t s = 0; s < p->strings; s++) {
        if ((err = string_fn(ctx, p, rng, s * band, band, &cov, &t.strings[s])) < 0)
            goto out;
        t.string_count++;
    }
    if (p->clutter)
        clutter(p, rng, &cov, &t);

    /* Paper texture (coarse blotches + fine grain) around a base level. */
    double base, ink;
    if (t.polarity == NC_RENDER_DARK_INK) {
        base = nc_rng_range(rng, 175, 235);
        ink = base * nc_rng_range(rng, 0.15, 0.45);
    } else {
        base = nc_rng_range(rng, 25, 70);
        ink = nc_rng_range(rng, 170, 240);
    }
    if ((err = nc_fimg_value_noise(rng, W, H, 40, 7.0, paper)) < 0 ||
        (err = nc_fimg_value_noise(rng, W, H, 5, 3.0, paper)) < 0)
        goto out;

    /* Light: a plane, a vignette, sometimes a soft-edged shadow. */
    double a = nc_rng_range(rng, -p->light_var, p->light_var), b = nc_rng_range(rng, -p->light_var, p->light_var);
    double vig = nc_rng_range(rng, 0, 0.35);
    int shadow = nc_rng_uniform(rng) < 0.3;
    double sx = nc_rng_range(rng, 0, W), sy = nc_rng_range(rng, 0, H), sa = nc_rng_range(rng, 0, 2 * PI);
    double sdepth = nc_rng_range(rng, 0.2, 0.45), ssoft = nc_rng_range(rng, 10, 60);
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++) {
            double nx = (double)x / W - 0.5, ny = (double)y / H - 0.5;
            double L = 1 + a * nx + b * ny - vig * 2 * (nx * nx + ny * ny);
            if (shadow) {
                double d = (x - sx) * cos(sa) + (y - sy) * sin(sa);
                L *= 1 - sdepth / (1 + exp(-d / ssoft * 4));
            }
            if (L < 0.3) L = 0.3;
            size_t i = (size_t)y * W + x;
            double c = cov.v[i];
            paper[i] = (float)(L * ((base + paper[i]) * (1 - c) + ink * c));
        }
    if ((err = nc_fimg_blur(paper, W, H, nc_rng_range(rng, 0.3, p->blur_max > 0.3 ? p->blur_max : 0.3))) < 0)
        goto out;
    double sigma = p->noise_sigma * nc_rng_range(rng, 0.6, 1.2);
    for (uint32_t y = 0; y < H; y++) {
        uint8_t *row = frame->pixels + (size_t)y * frame->stride;
        for (uint32_t x = 0; x < W; x++) {
            double v = paper[(size_t)y * W + x] + sigma * nc_rng_gauss(rng);
            row[x] = v <= 0 ? 0 : v >= 255 ? 255 : (uint8_t)lrint(v);
        }
    }
    *ret_truth = t;
    err = 0;
out:
    free(cov.v);
    free(paper);
    return err;
}

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

#define PI 3.14159265358979323846

void nc_render_params_default(nc_render_params *ret)
{
    *ret = (nc_render_params){
        .strings = 2, .digits = 8, .min_height = 24, .max_height = 60,
        .polarity = NC_RENDER_DARK_INK, .max_rotate_deg = 3.0f,
        .perspective = 0.08f, .touch_prob = 0.0f, .noise_sigma = 4.0f,
        .blur_max = 1.0f, .light_var = 0.35f, .clutter = 1,
    };
}

/* ---- randomness (xorshift64*, like the tests) ---------------------------- */

static uint64_t rnext(uint64_t *s)
{
    *s ^= *s >> 12; *s ^= *s << 25; *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}
static double runi(uint64_t *s) { return (double)(rnext(s) >> 11) * (1.0 / 9007199254740992.0); }
static double rrange(uint64_t *s, double lo, double hi) { return lo + (hi - lo) * runi(s); }
static double rgauss(uint64_t *s)
{
    double u = runi(s), v = runi(s);
    return sqrt(-2.0 * log(u + 1e-300)) * cos(2 * PI * v);
}

/* ---- small float images -------------------------------------------------- */

typedef struct fimg { uint32_t w, h; float *v; } fimg;

static float fget(const fimg *f, long x, long y)
{
    if (x < 0 || y < 0 || x >= (long)f->w || y >= (long)f->h)
        return 0.0f;
    return f->v[(size_t)y * f->w + (size_t)x];
}

static float fbilinear(const fimg *f, double x, double y)
{
    double fx = floor(x), fy = floor(y);
    long x0 = (long)fx, y0 = (long)fy;
    double ax = x - fx, ay = y - fy;
    return (float)((1 - ay) * ((1 - ax) * fget(f, x0, y0) + ax * fget(f, x0 + 1, y0)) +
                   ay * ((1 - ax) * fget(f, x0, y0 + 1) + ax * fget(f, x0 + 1, y0 + 1)));
}

/* Box of the pixels of a source digit above t: [x0, x1) x [y0, y1). */
static int src_box(const uint8_t *px, uint32_t rows, uint32_t cols, uint8_t t,
                   uint32_t b[4])
{
    b[0] = cols; b[1] = rows; b[2] = 0; b[3] = 0;
    for (uint32_t y = 0; y < rows; y++)
        for (uint32_t x = 0; x < cols; x++)
            if (px[y * cols + x] > t) {
                if (x < b[0]) b[0] = x;
                if (y < b[1]) b[1] = y;
                if (x + 1 > b[2]) b[2] = x + 1;
                if (y + 1 > b[3]) b[3] = y + 1;
            }
    return b[2] > b[0];
}

/* ---- one string ------------------------------------------------------------ */

/* Where each digit sits in the string's local canvas. */
typedef struct placed {
    uint32_t src;
    double x, y, s;             /* local position of source pixel (sx0, sy0), scale */
    uint32_t b[4];              /* source box of pixels > 0 */
    uint32_t t[4];              /* source box of pixels > 64 (the truth box) */
} placed;

/* Local -> frame: q = (u, v) - centre; X = f + R q / (1 + px qx + py qy). */
typedef struct warp {
    double uc, vc, fx, fy, c, s, px, py;
} warp;

static void warp_fwd(const warp *w, double u, double v, double *x, double *y)
{
    double qx = u - w->uc, qy = v - w->vc, d = 1 + w->px * qx + w->py * qy;
    qx /= d; qy /= d;
    *x = w->fx + w->c * qx - w->s * qy;
    *y = w->fy + w->s * qx + w->c * qy;
}

/* Inverse: r = R^T (X - f) = q / d, d = 1 + p.q, so q = r / (1 - p.r). */
static void warp_inv(const warp *w, double x, double y, double *u, double *v)
{
    double dx = x - w->fx, dy = y - w->fy;
    double rx = w->c * dx + w->s * dy, ry = -w->s * dx + w->c * dy;
    double a = 1 - (w->px * rx + w->py * ry);
    *u = w->uc + rx / a;
    *v = w->vc + ry / a;
}

static nc_rect warp_box(const warp *w, double u0, double v0, double u1, double v1,
                        uint32_t W, uint32_t H)
{
    double xs[4], ys[4];
    warp_fwd(w, u0, v0, &xs[0], &ys[0]);
    warp_fwd(w, u1, v0, &xs[1], &ys[1]);
    warp_fwd(w, u0, v1, &xs[2], &ys[2]);
    warp_fwd(w, u1, v1, &xs[3], &ys[3]);
    double x0 = xs[0], x1 = xs[0], y0 = ys[0], y1 = ys[0];
    for (int i = 1; i < 4; i++) {
        x0 = fmin(x0, xs[i]); x1 = fmax(x1, xs[i]);
        y0 = fmin(y0, ys[i]); y1 = fmax(y1, ys[i]);
    }
    /* pixel centres at integers: a box [u0, u1) in continuous coordinates
     * covers pixels ceil(u0 - 0.5) .. floor(u1 - 0.5) */
    long a = lround(x0), b = lround(y0), c = lround(x1), d = lround(y1);
    if (a < 0) a = 0;
    if (b < 0) b = 0;
    if (a > (long)W - 1) a = (long)W - 1;
    if (b > (long)H - 1) b = (long)H - 1;
    if (c > (long)W) c = W;
    if (d > (long)H) d = H;
    if (c <= a) c = a + 1;
    if (d <= b) d = b + 1;
    return (nc_rect){ (uint32_t)a, (uint32_t)b, (uint32_t)(c - a), (uint32_t)(d - b) };
}

static void draw_rect_outline(fimg *f, double x0, double y0, double x1, double y1,
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

/* Lay out, render and warp string si into the coverage map cov. */
static int render_string(const nc_render_params *p, const nc_render_source *src,
                         uint64_t *rng, uint32_t band_y0, uint32_t band_h, fimg *cov,
                         nc_render_string *ts)
{
    const uint32_t W = cov->w, H = cov->h, n = p->digits;
    placed pl[NC_RENDER_MAX_DIGITS];
    double theta = rrange(rng, -p->max_rotate_deg, p->max_rotate_deg) * PI / 180.0;
    double h = rrange(rng, p->min_height, p->max_height);
    /* Pick digits first: their widths decide the string's length. */
    for (uint32_t i = 0; i < n; i++) {
        for (int tries = 0; tries < 16; tries++) {
            pl[i].src = (uint32_t)(rnext(rng) % src->count);
            const uint8_t *px = src->pixels + (size_t)pl[i].src * src->rows * src->cols;
            if (src_box(px, src->rows, src->cols, 0, pl[i].b) &&
                src_box(px, src->rows, src->cols, 64, pl[i].t))
                break;
        }
    }
    double gaps[NC_RENDER_MAX_DIGITS], scale_j[NC_RENDER_MAX_DIGITS], yj[NC_RENDER_MAX_DIGITS];
    for (uint32_t i = 0; i < n; i++) {
        scale_j[i] = rrange(rng, 0.92, 1.08);
        yj[i] = rrange(rng, -0.05, 0.05);
        gaps[i] = runi(rng) < p->touch_prob ? -rrange(rng, 0.0, 0.06) : rrange(rng, 0.15, 0.4);
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
    fimg loc = { cw, ch, calloc((size_t)cw * ch, sizeof(float)) };
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
    /* A box around the string (a meter window, a form field). */
    if (p->clutter && runi(rng) < 0.4) {
        /* solid enough to stay one component through blur and JPEG, as a
         * printed window or field border is */
        double g = rrange(rng, 0.3, 0.45) * h, th = rrange(rng, 1.5, 3.0);
        double bx0 = margin - g, bx1 = x - gaps[n - 1] * h + g;
        double by0 = vc - 0.65 * h - g, by1 = vc + 0.65 * h + g;
        if (bx0 > 0 && by0 > 0 && bx1 < cw && by1 < ch)
            draw_rect_outline(&loc, bx0, by0, bx1, by1, th, (float)rrange(rng, 0.75, 1.0));
    }
    /* Place it: centre of the band, random x where it fits. */
    warp wp;
    wp.uc = cw / 2.0;
    wp.vc = ch / 2.0;
    wp.c = cos(theta);
    wp.s = sin(theta);
    double persp = rrange(rng, -p->perspective, p->perspective);
    wp.px = persp / cw;
    wp.py = rrange(rng, -p->perspective, p->perspective) * 0.5 / ch;
    double half_w = (cw / 2.0) * 1.1 + 2;
    double slack_x = W - 2 * half_w;
    wp.fx = half_w + (slack_x > 0 ? runi(rng) * slack_x : slack_x / 2);
    double ext_h = (lh - margin) + cw * fabs(wp.s);
    double slack_y = band_h - ext_h;
    wp.fy = band_y0 + band_h / 2.0 + (slack_y > 0 ? rrange(rng, -0.4, 0.4) * slack_y : 0);

    /* Inverse-map the canvas into the frame coverage over its bounds. */
    nc_rect fb = warp_box(&wp, 0, 0, cw, ch, W, H);
    for (uint32_t y = fb.y; y < fb.y + fb.height; y++)
        for (uint32_t xx = fb.x; xx < fb.x + fb.width; xx++) {
            double u, v;
            warp_inv(&wp, xx, y, &u, &v);
            /* canvas pixel (i, j) has its centre at (i + 0.5, j + 0.5) */
            float val = fbilinear(&loc, u - 0.5, v - 0.5);
            float *d = &cov->v[(size_t)y * W + xx];
            if (val > *d) *d = val;
        }
    /* Truth: each digit's > 64 box, mapped. */
    ts->count = n;
    ts->height = (uint32_t)lround(h);
    uint32_t X0 = UINT32_MAX, Y0 = UINT32_MAX, X1 = 0, Y1 = 0;
    for (uint32_t i = 0; i < n; i++) {
        double u0 = pl[i].x + (pl[i].t[0] - pl[i].b[0]) * pl[i].s;
        double u1 = pl[i].x + (pl[i].t[2] - pl[i].b[0]) * pl[i].s;
        double v0 = pl[i].y + (pl[i].t[1] - pl[i].b[1]) * pl[i].s;
        double v1 = pl[i].y + (pl[i].t[3] - pl[i].b[1]) * pl[i].s;
        nc_rect r = warp_box(&wp, u0, v0, u1, v1, W, H);
        ts->digits[i] = (nc_render_digit){ src->labels ? src->labels[pl[i].src] : 0,
                                           pl[i].src, r };
        if (r.x < X0) X0 = r.x;
        if (r.y < Y0) Y0 = r.y;
        if (r.x + r.width > X1) X1 = r.x + r.width;
        if (r.y + r.height > Y1) Y1 = r.y + r.height;
    }
    ts->box = (nc_rect){ X0, Y0, X1 - X0, Y1 - Y0 };
    free(loc.v);
    return 0;
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

static void clutter(const nc_render_params *p, uint64_t *rng, fimg *cov,
                    const nc_render_truth *t)
{
    const uint32_t W = cov->w, H = cov->h;
    /* Rules: horizontal lines placed only where no string is near. */
    int rules = (int)(rnext(rng) % 3);
    for (int r = 0; r < rules; r++) {
        double y = rrange(rng, 4, H - 4), th = rrange(rng, 1.0, 3.0);
        double x0 = rrange(rng, 0, W * 0.4), x1 = x0 + rrange(rng, 0.3, 0.6) * W;
        int clear = 1;
        for (double x = x0; x < x1 && clear; x += 4)
            if (near_truth(t, x, y, th + 4))
                clear = 0;
        if (!clear)
            continue;
        float val = (float)rrange(rng, 0.4, 0.8);
        for (uint32_t yy = (uint32_t)y; yy < H && yy < y + th; yy++)
            for (uint32_t x = (uint32_t)x0; x < W && x < x1; x++)
                cov->v[(size_t)yy * W + x] = fmaxf(cov->v[(size_t)yy * W + x], val);
    }
    /* Specks: dust and paper fibres, kept off the digits. */
    int specks = 8 + (int)(rnext(rng) % 24);
    for (int k = 0; k < specks; k++) {
        double cx = rrange(rng, 0, W), cy = rrange(rng, 0, H), rad = rrange(rng, 0.6, 1.8);
        if (near_truth(t, cx, cy, 4))
            continue;
        float val = (float)rrange(rng, 0.4, 1.0);
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

/* Smooth random field: values on a grid every cell pixels, bilinear. */
static int value_noise(uint64_t *rng, uint32_t W, uint32_t H, uint32_t cell, double amp,
                       float *acc)
{
    uint32_t gw = W / cell + 2, gh = H / cell + 2;
    float *g = malloc((size_t)gw * gh * sizeof *g);
    if (!g)
        return -ENOMEM;
    for (size_t i = 0; i < (size_t)gw * gh; i++)
        g[i] = (float)(rrange(rng, -1, 1) * amp);
    fimg gi = { gw, gh, g };
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++)
            acc[(size_t)y * W + x] += fbilinear(&gi, (double)x / cell, (double)y / cell);
    free(g);
    return 0;
}

static int blur(float *img, uint32_t W, uint32_t H, double sigma)
{
    int r = (int)ceil(2.5 * sigma);
    if (r < 1)
        return 0;
    float k[64];
    if (r > 31)
        r = 31;
    double sum = 0;
    for (int i = -r; i <= r; i++)
        sum += k[i + r] = (float)exp(-0.5 * i * i / (sigma * sigma));
    for (int i = 0; i <= 2 * r; i++)
        k[i] /= (float)sum;
    float *tmp = malloc((size_t)W * H * sizeof *tmp);
    if (!tmp)
        return -ENOMEM;
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++) {
            float a = 0;
            for (int i = -r; i <= r; i++) {
                long xx = (long)x + i;
                xx = xx < 0 ? 0 : xx >= (long)W ? W - 1 : xx;
                a += k[i + r] * img[(size_t)y * W + xx];
            }
            tmp[(size_t)y * W + x] = a;
        }
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++) {
            float a = 0;
            for (int i = -r; i <= r; i++) {
                long yy = (long)y + i;
                yy = yy < 0 ? 0 : yy >= (long)H ? H - 1 : yy;
                a += k[i + r] * tmp[(size_t)yy * W + x];
            }
            img[(size_t)y * W + x] = a;
        }
    free(tmp);
    return 0;
}

int nc_render_frame(const nc_render_params *p, const nc_render_source *src,
                    uint64_t *rng, nc_image *frame, nc_render_truth *ret_truth)
{
    if (!p || !src || !rng || !frame || !ret_truth || !src->pixels || !src->count ||
        !src->rows || !src->cols)
        return -EINVAL;
    if (nc_image_check(frame) < 0 || frame->width < 64 || frame->height < 64)
        return -EINVAL;
    if (!p->strings || p->strings > NC_RENDER_MAX_STRINGS || !p->digits ||
        p->digits > NC_RENDER_MAX_DIGITS || p->min_height < 10 ||
        p->max_height < p->min_height || p->polarity > NC_RENDER_MIXED)
        return -EINVAL;
    const uint32_t W = frame->width, H = frame->height;
    size_t npix = (size_t)W * H;
    nc_render_truth t;
    memset(&t, 0, sizeof t);
    fimg cov = { W, H, calloc(npix, sizeof(float)) };
    float *paper = calloc(npix, sizeof(float));
    int err = -ENOMEM;
    if (!cov.v || !paper)
        goto out;

    t.polarity = p->polarity == NC_RENDER_MIXED ? (uint32_t)(rnext(rng) & 1) : p->polarity;
    uint32_t band = H / p->strings;
    for (uint32_t s = 0; s < p->strings; s++) {
        if ((err = render_string(p, src, rng, s * band, band, &cov, &t.strings[s])) < 0)
            goto out;
        t.string_count++;
    }
    if (p->clutter)
        clutter(p, rng, &cov, &t);

    /* Paper texture (coarse blotches + fine grain) around a base level. */
    double base, ink;
    if (t.polarity == NC_RENDER_DARK_INK) {
        base = rrange(rng, 175, 235);
        ink = base * rrange(rng, 0.15, 0.45);
    } else {
        base = rrange(rng, 25, 70);
        ink = rrange(rng, 170, 240);
    }
    if ((err = value_noise(rng, W, H, 40, 7.0, paper)) < 0 ||
        (err = value_noise(rng, W, H, 5, 3.0, paper)) < 0)
        goto out;

    /* Light: a plane, a vignette, sometimes a soft-edged shadow. */
    double a = rrange(rng, -p->light_var, p->light_var), b = rrange(rng, -p->light_var, p->light_var);
    double vig = rrange(rng, 0, 0.35);
    int shadow = runi(rng) < 0.3;
    double sx = rrange(rng, 0, W), sy = rrange(rng, 0, H), sa = rrange(rng, 0, 2 * PI);
    double sdepth = rrange(rng, 0.2, 0.45), ssoft = rrange(rng, 10, 60);
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
    if ((err = blur(paper, W, H, rrange(rng, 0.3, p->blur_max > 0.3 ? p->blur_max : 0.3))) < 0)
        goto out;
    double sigma = p->noise_sigma * rrange(rng, 0.6, 1.2);
    for (uint32_t y = 0; y < H; y++) {
        uint8_t *row = frame->pixels + (size_t)y * frame->stride;
        for (uint32_t x = 0; x < W; x++) {
            double v = paper[(size_t)y * W + x] + sigma * rgauss(rng);
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

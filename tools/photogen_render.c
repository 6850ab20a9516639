/* tools/photogen_render.c — see photogen_render.h.
 *
 * Order of work for one photo (float grey levels, quantised at the end):
 *  1. draw the variations, the frame size and the digit height;
 *  2. each digit's strokes at 4x the source resolution: bilinear
 *     up-sampling of the MNIST image, then a grey dilation or erosion by a
 *     disk (thick, thin), or, for marker strokes, thinning to a skeleton
 *     (Zhang-Suen) and a pen of one radius drawn along it;
 *  3. lay the digits out on a canvas (one or two lines), and shrink the
 *     height until the rotated, foreshortened block fits the frame with a
 *     margin and clear of the finger; place it anywhere it fits (so mostly
 *     off-centre) and map the canvas into the frame's coverage map;
 *  4. shade: paper = the light (a gradient and an off-centre vignette,
 *     normalised so the lit paper spans [paper_lo, paper_hi]) plus texture,
 *     darkened by the rules and the shadow; ink multiplies the paper, so it
 *     stays darker than its surroundings under a shadow; the finger replaces
 *     the paper where it covers it;
 *  5. Gaussian blur, sensor noise, rounding to 8 bits. */
#include "photogen_render.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render_common.h"

#define PI NC_RENDER_PI
#define UP  4u                  /* stroke work at 4x the source resolution */
#define PAD 3u                  /* source pixels of room around a digit for dilation */
#define INK_T 0.25f             /* coverage that counts as ink for the truth box */
#define EXT_T 0.02f             /* coverage that must stay inside the frame */

static const char *const variation_names[NC_PHOTO_VARIATION_COUNT] = {
    "shadow", "ruled", "squared", "finger", "texture", "thick", "thin", "grey-ink",
    "low-contrast", "hand",
};

const char *nc_photo_variation_name(uint32_t i)
{
    return i < NC_PHOTO_VARIATION_COUNT ? variation_names[i] : "?";
}

void nc_photo_params_default(nc_photo_params *ret)
{
    *ret = (nc_photo_params){ .lines = 1, .hand_share = 0.0f, .min_side = 200, .max_side = 400 };
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* ---- one digit's strokes ------------------------------------------------- */

/* A digit at UP x the source resolution with PAD source pixels around it.
 * Glyph pixel i covers source [i / UP - PAD, (i + 1) / UP - PAD). */
typedef struct glyph {
    nc_fimg img;
    double ink[4];              /* box of coverage > INK_T, source units, [x0, x1) x [y0, y1) */
    double ext[4];              /* box of coverage > EXT_T */
} glyph;

static void glyph_box(const nc_fimg *g, float t, double b[4])
{
    uint32_t x0 = g->w, y0 = g->h, x1 = 0, y1 = 0;
    for (uint32_t y = 0; y < g->h; y++)
        for (uint32_t x = 0; x < g->w; x++)
            if (g->v[(size_t)y * g->w + x] > t) {
                if (x < x0) x0 = x;
                if (y < y0) y0 = y;
                if (x + 1 > x1) x1 = x + 1;
                if (y + 1 > y1) y1 = y + 1;
            }
    if (x1 <= x0) {             /* an empty digit: a point in the middle */
        x0 = x1 = g->w / 2;
        y0 = y1 = g->h / 2;
        x1++;
        y1++;
    }
    b[0] = (double)x0 / UP - PAD; b[1] = (double)y0 / UP - PAD;
    b[2] = (double)x1 / UP - PAD; b[3] = (double)y1 / UP - PAD;
}

/* Grey dilation (grow > 0) or erosion (grow < 0) by a disk of |grow|
 * glyph pixels. */
static int morph_disk(nc_fimg *g, double grow)
{
    double r = fabs(grow);
    int R = (int)ceil(r);
    if (R < 1)
        return 0;
    float *out = malloc((size_t)g->w * g->h * sizeof *out);
    if (!out)
        return -ENOMEM;
    for (uint32_t y = 0; y < g->h; y++)
        for (uint32_t x = 0; x < g->w; x++) {
            float m = grow > 0 ? 0.0f : 1.0f;
            for (int dy = -R; dy <= R; dy++)
                for (int dx = -R; dx <= R; dx++) {
                    if (dx * dx + dy * dy > r * r)
                        continue;
                    float v = nc_fimg_get(g, (long)x + dx, (long)y + dy);
                    m = grow > 0 ? fmaxf(m, v) : fminf(m, v);
                }
            out[(size_t)y * g->w + x] = m;
        }
    free(g->v);
    g->v = out;
    return 0;
}

/* Zhang-Suen thinning of a binary image (1 = stroke) in place; the border
 * is 0 (the glyph's padding guarantees it). */
static int thin_zhang_suen(uint8_t *b, uint32_t w, uint32_t h)
{
    uint8_t *del = calloc((size_t)w * h, 1);
    if (!del)
        return -ENOMEM;
    int changed = 1;
    while (changed) {
        changed = 0;
        for (int pass = 0; pass < 2; pass++) {
            memset(del, 0, (size_t)w * h);
            for (uint32_t y = 1; y + 1 < h; y++)
                for (uint32_t x = 1; x + 1 < w; x++) {
                    if (!b[(size_t)y * w + x])
                        continue;
                    /* neighbours P2..P9 clockwise from north */
                    uint8_t n[8] = {
                        b[(y - 1) * w + x], b[(y - 1) * w + x + 1], b[y * w + x + 1],
                        b[(y + 1) * w + x + 1], b[(y + 1) * w + x], b[(y + 1) * w + x - 1],
                        b[y * w + x - 1], b[(y - 1) * w + x - 1],
                    };
                    int nb = 0, tr = 0;
                    for (int k = 0; k < 8; k++) {
                        nb += n[k];
                        tr += !n[k] && n[(k + 1) % 8];
                    }
                    if (nb < 2 || nb > 6 || tr != 1)
                        continue;
                    if (pass == 0 ? (n[0] && n[2] && n[4]) || (n[2] && n[4] && n[6])
                                  : (n[0] && n[2] && n[6]) || (n[0] && n[4] && n[6]))
                        continue;
                    del[(size_t)y * w + x] = 1;
                }
            for (size_t i = 0; i < (size_t)w * h; i++)
                if (del[i]) {
                    b[i] = 0;
                    changed = 1;
                }
        }
    }
    free(del);
    return 0;
}

/* Marker strokes: the skeleton of the digit, drawn with a round pen of
 * radius r glyph pixels (one width everywhere, soft by one pixel). */
static int pen_strokes(nc_fimg *g, double r)
{
    const uint32_t w = g->w, h = g->h;
    uint8_t *b = malloc((size_t)w * h);
    if (!b)
        return -ENOMEM;
    for (size_t i = 0; i < (size_t)w * h; i++)
        b[i] = g->v[i] > 0.45f;
    int err = thin_zhang_suen(b, w, h);
    if (err < 0) {
        free(b);
        return err;
    }
    memset(g->v, 0, (size_t)w * h * sizeof *g->v);
    int R = (int)ceil(r + 1);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            if (!b[(size_t)y * w + x])
                continue;
            for (int dy = -R; dy <= R; dy++)
                for (int dx = -R; dx <= R; dx++) {
                    long X = (long)x + dx, Y = (long)y + dy;
                    if (X < 0 || Y < 0 || X >= (long)w || Y >= (long)h)
                        continue;
                    float c = (float)clampd(r + 0.5 - sqrt((double)(dx * dx + dy * dy)), 0, 1);
                    float *d = &g->v[(size_t)Y * w + X];
                    if (c > *d) *d = c;
                }
        }
    free(b);
    return 0;
}

/* The strokes of source digit px: up-sampled, then reshaped.  grow: disk
 * radius in source pixels (> 0 dilate, < 0 erode); pen > 0: marker strokes
 * of that radius in source pixels instead. */
static int glyph_make(const nc_render_source *src, uint32_t index, double grow, double pen,
                      glyph *ret)
{
    const uint32_t rows = src->rows, cols = src->cols;
    const uint8_t *px = src->pixels + (size_t)index * rows * cols;
    float *sv = malloc((size_t)rows * cols * sizeof *sv);
    nc_fimg g = { (cols + 2 * PAD) * UP, (rows + 2 * PAD) * UP, NULL };
    g.v = malloc((size_t)g.w * g.h * sizeof *g.v);
    if (!sv || !g.v) {
        free(sv);
        free(g.v);
        return -ENOMEM;
    }
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        sv[i] = px[i] / 255.0f;
    nc_fimg s = { cols, rows, sv };
    for (uint32_t y = 0; y < g.h; y++)
        for (uint32_t x = 0; x < g.w; x++)
            g.v[(size_t)y * g.w + x] = nc_fimg_bilinear(&s, (x + 0.5) / UP - PAD - 0.5,
                                                        (y + 0.5) / UP - PAD - 0.5);
    free(sv);
    int err = pen > 0 ? pen_strokes(&g, pen * UP) : morph_disk(&g, grow * UP);
    if (err < 0) {
        free(g.v);
        return err;
    }
    ret->img = g;
    glyph_box(&g, INK_T, ret->ink);
    glyph_box(&g, EXT_T, ret->ext);
    return 0;
}

/* ---- layout ------------------------------------------------------------------ */

/* Where digit k sits on the canvas: canvas x = x + (source x - ext[0]) s. */
typedef struct slot { double x, y, s; } slot;

typedef struct layout {
    uint32_t cw, ch;            /* canvas size */
    slot at[NC_PHOTO_MAX_DIGITS];
    double ex0, ey0, ex1, ey1;  /* warped extent of the ink's surroundings, relative to (fx, fy) */
} layout;

/* Per-string randomness drawn once, so that shrinking keeps the look. */
typedef struct shape {
    double scale_j[NC_PHOTO_MAX_DIGITS], yj[NC_PHOTO_MAX_DIGITS], gap[NC_PHOTO_MAX_DIGITS];
    double indent[2], line_step;
} shape;

static void lay_out(const glyph *gl, uint32_t n, const uint32_t line_count[2], uint32_t lines,
                    const shape *sh, double h, const nc_warp *w0, layout *L)
{
    const double m = 0.25 * h + 4;
    double xmax = 0;
    uint32_t k = 0;
    for (uint32_t l = 0; l < lines; l++) {
        double x = m + sh->indent[l] * h;
        double yc = m + 0.5 * h + l * sh->line_step * h + 0.08 * h;
        for (uint32_t j = 0; j < line_count[l]; j++, k++) {
            const glyph *g = &gl[k];
            double s = h / (g->ink[3] - g->ink[1]) * sh->scale_j[k];
            /* the ink's middle on the line's centre, give or take */
            L->at[k].s = s;
            L->at[k].x = x - (g->ink[0] - g->ext[0]) * s;
            L->at[k].y = yc + sh->yj[k] * h - ((g->ink[1] + g->ink[3]) / 2 - g->ext[1]) * s;
            x += (g->ink[2] - g->ink[0]) * s + sh->gap[k] * h;
            double right = L->at[k].x + (g->ext[2] - g->ext[0]) * s;
            if (right > xmax) xmax = right;
        }
    }
    L->cw = (uint32_t)ceil(xmax + m);
    L->ch = (uint32_t)ceil(2 * m + h * (1 + (lines - 1) * sh->line_step) + 0.16 * h);
    nc_warp w = *w0;
    w.uc = L->cw / 2.0;
    w.vc = L->ch / 2.0;
    w.fx = w.fy = 0;
    w.px = w0->px / L->cw;
    w.py = w0->py / L->ch;
    L->ex0 = L->ey0 = INFINITY;
    L->ex1 = L->ey1 = -INFINITY;
    for (k = 0; k < n; k++) {
        const glyph *g = &gl[k];
        double u0 = L->at[k].x, v0 = L->at[k].y;
        double u1 = u0 + (g->ext[2] - g->ext[0]) * L->at[k].s;
        double v1 = v0 + (g->ext[3] - g->ext[1]) * L->at[k].s;
        double us[2] = { u0, u1 }, vs[2] = { v0, v1 };
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
                double X, Y;
                nc_warp_fwd(&w, us[a], vs[b], &X, &Y);
                L->ex0 = fmin(L->ex0, X); L->ex1 = fmax(L->ex1, X);
                L->ey0 = fmin(L->ey0, Y); L->ey1 = fmax(L->ey1, Y);
            }
    }
}

/* ---- light and marks on the page -------------------------------------------- */

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* Coverage of a rule family: lines of thickness th every sp pixels along
 * the distance d. */
static double rule_cov(double d, double sp, double th)
{
    double r = fmod(d, sp);
    if (r < 0) r += sp;
    double dist = fmin(r, sp - r);
    return clampd(th / 2 + 0.5 - dist, 0, 1);
}

int nc_photo_render(const nc_photo_params *p, const nc_render_source *src,
                    const uint32_t *idx, uint32_t n, uint64_t *rng,
                    nc_image **ret_img, nc_photo_truth *ret_truth)
{
    if (!p || !src || !idx || !rng || !ret_img || !ret_truth || !src->pixels ||
        !src->count || !src->rows || !src->cols || src->rows > 64 || src->cols > 64)
        return -EINVAL;
    if (!n || n > NC_PHOTO_MAX_DIGITS || !p->lines || p->lines > 2 || (p->lines == 2 && n < 2) ||
        p->min_side < 64 || p->max_side < p->min_side || p->max_side > 4096 ||
        !(p->hand_share >= 0 && p->hand_share <= 1))
        return -EINVAL;
    for (uint32_t k = 0; k < n; k++)
        if (idx[k] >= src->count)
            return -EINVAL;

    nc_photo_truth t;
    memset(&t, 0, sizeof t);
    t.count = n;
    t.lines = p->lines;
    t.line_count[0] = p->lines == 2 ? (n + 1) / 2 : n;
    t.line_count[1] = n - t.line_count[0];
    for (uint32_t k = 0; k < n; k++) {
        t.sources[k] = idx[k];
        t.labels[k] = src->labels ? src->labels[idx[k]] : 0;
    }

    /* 1. variations, each drawn on its own */
    uint32_t v = 0;
    if (nc_rng_uniform(rng) < p->hand_share) v |= NC_PHOTO_HAND;
    if (nc_rng_uniform(rng) < 0.3) v |= NC_PHOTO_SHADOW;
    double r = nc_rng_uniform(rng);
    if (r < 0.2) v |= NC_PHOTO_RULED;
    else if (r < 0.35) v |= NC_PHOTO_SQUARED;
    if (nc_rng_uniform(rng) < 0.25) v |= NC_PHOTO_FINGER;
    if (nc_rng_uniform(rng) < 0.35) v |= NC_PHOTO_TEXTURE;
    r = nc_rng_uniform(rng);
    if (!(v & NC_PHOTO_HAND)) {
        if (r < 0.2) v |= NC_PHOTO_THICK;
        else if (r < 0.35) v |= NC_PHOTO_THIN;
    }
    r = nc_rng_uniform(rng);
    if (r < 0.3) v |= NC_PHOTO_GREY_INK;
    else if (r < 0.5) v |= NC_PHOTO_LOW_CONTRAST;

    /* the frame: square a third of the time; strings want width */
    uint32_t lo = p->min_side, hi = p->max_side;
    uint32_t W, H;
    if (n > 1 && p->lines == 1) {
        W = (uint32_t)nc_rng_range(rng, lo + 0.5 * (hi - lo), hi + 1);
        H = (uint32_t)nc_rng_range(rng, lo, lo + 0.5 * (hi - lo) + 1);
    } else if (nc_rng_uniform(rng) < 0.35) {
        W = H = (uint32_t)nc_rng_range(rng, lo, hi + 1);
    } else {
        W = (uint32_t)nc_rng_range(rng, lo, hi + 1);
        H = (uint32_t)nc_rng_range(rng, lo, hi + 1);
    }
    if (W > hi) W = hi;
    if (H > hi) H = hi;

    /* 2. strokes */
    double grow = 0, pen = 0;
    if (v & NC_PHOTO_HAND) pen = nc_rng_range(rng, 1.2, 1.9);
    else if (v & NC_PHOTO_THICK) grow = nc_rng_range(rng, 0.5, 1.1);
    else if (v & NC_PHOTO_THIN) grow = -nc_rng_range(rng, 0.3, 0.5);
    glyph gl[NC_PHOTO_MAX_DIGITS];
    memset(gl, 0, sizeof gl);
    nc_fimg cov = { W, H, NULL }, canvas = { 0, 0, NULL };
    float *paper = NULL;
    nc_image *img = NULL;
    int err = 0;
    for (uint32_t k = 0; k < n; k++)
        if ((err = glyph_make(src, idx[k], grow, pen, &gl[k])) < 0)
            goto out;

    /* 3. layout: height, rotation, perspective, then shrink to fit */
    shape sh;
    for (uint32_t k = 0; k < n; k++) {
        sh.scale_j[k] = n > 1 ? nc_rng_range(rng, 0.92, 1.08) : 1.0;
        sh.yj[k] = n > 1 ? nc_rng_range(rng, -0.05, 0.05) : 0.0;
        sh.gap[k] = nc_rng_range(rng, 0.15, 0.4);
    }
    sh.indent[0] = nc_rng_range(rng, 0, 0.3);
    sh.indent[1] = nc_rng_range(rng, 0, 0.6);
    sh.line_step = nc_rng_range(rng, 1.25, 1.5);
    double rot = nc_rng_range(rng, -8, 8);
    nc_warp w0 = { 0 };
    w0.c = cos(rot * PI / 180);
    w0.s = sin(rot * PI / 180);
    w0.px = nc_rng_range(rng, -0.12, 0.12);       /* relative foreshortening across the block */
    w0.py = nc_rng_range(rng, -0.12, 0.12);
    t.rotate_deg = (float)rot;
    t.perspective = (float)fmax(fabs(w0.px), fabs(w0.py));
    /* a finger needs room at a border: a smaller block leaves it some */
    double block = nc_rng_range(rng, 0.35, (v & NC_PHOTO_FINGER) ? 0.6 : 0.85) * H;
    double h = block / (1 + (p->lines - 1) * sh.line_step);
    double hmin = n == 1 ? 0.35 * H : 14;
    double mx = fmax(4, 0.03 * W), my = fmax(4, 0.03 * H);
    double finger_pick = nc_rng_uniform(rng), finger_depth = nc_rng_range(rng, 0.45, 0.85);
    double finger_soft = nc_rng_range(rng, 5, 10);
    double finger_gap = 4.6 * finger_soft + 6;   /* mask below 1 % at the ink */
    layout L;
    double ax0 = 0, ax1 = 0, ay0 = 0, ay1 = 0, fdepth = 0;
    char side = 0;
    for (int it = 0;; it++) {
        lay_out(gl, n, t.line_count, p->lines, &sh, h, &w0, &L);
        ax0 = mx; ax1 = W - mx; ay0 = my; ay1 = H - my;
        double sx = (ax1 - ax0) - (L.ex1 - L.ex0), sy = (ay1 - ay0) - (L.ey1 - L.ey0);
        side = 0;
        if (v & NC_PHOTO_FINGER) {
            /* a finger wants 30 pixels of depth, and the gap */
            double need = 30 + finger_gap;
            int nx = sx >= need, ny = sy >= need;
            if (nx || ny) {
                int pick = (int)(finger_pick * ((nx ? 2 : 0) + (ny ? 2 : 0)));
                const char *sides = nx && ny ? "lrtb" : nx ? "lr" : "tb";
                side = sides[pick];
                double slack = (side == 'l' || side == 'r') ? sx : sy;
                fdepth = 30 + finger_depth * (slack - need);
                if (side == 'l') ax0 = fdepth + finger_gap;
                if (side == 'r') ax1 = W - fdepth - finger_gap;
                if (side == 't') ay0 = fdepth + finger_gap;
                if (side == 'b') ay1 = H - fdepth - finger_gap;
            } else if (h * 0.93 >= hmin) {
                h *= 0.93;
                continue;
            } else {
                v &= ~(uint32_t)NC_PHOTO_FINGER;    /* no room: no finger */
            }
        }
        if ((L.ex1 - L.ex0 <= ax1 - ax0 && L.ey1 - L.ey0 <= ay1 - ay0) || it > 80)
            break;
        h *= 0.93;
    }
    if (L.ex1 - L.ex0 > ax1 - ax0 || L.ey1 - L.ey0 > ay1 - ay0 || h < 8) {
        err = -EINVAL;          /* the frame cannot hold this many digits */
        goto out;
    }
    t.finger_side = side;
    t.height = (float)h;
    nc_warp wp = w0;
    wp.uc = L.cw / 2.0;
    wp.vc = L.ch / 2.0;
    wp.px = w0.px / L.cw;
    wp.py = w0.py / L.ch;
    wp.fx = nc_rng_range(rng, ax0 - L.ex0, ax1 - L.ex1);
    wp.fy = nc_rng_range(rng, ay0 - L.ey0, ay1 - L.ey1);

    /* the canvas, then the frame's coverage */
    canvas.w = L.cw;
    canvas.h = L.ch;
    canvas.v = calloc((size_t)L.cw * L.ch, sizeof *canvas.v);
    cov.v = calloc((size_t)W * H, sizeof *cov.v);
    paper = calloc((size_t)W * H, sizeof *paper);
    if (!canvas.v || !cov.v || !paper) {
        err = -ENOMEM;
        goto out;
    }
    for (uint32_t k = 0; k < n; k++) {
        const glyph *g = &gl[k];
        const slot *a = &L.at[k];
        long u0 = (long)floor(a->x) - 1, v0 = (long)floor(a->y) - 1;
        long u1 = (long)ceil(a->x + (g->ext[2] - g->ext[0]) * a->s) + 1;
        long v1 = (long)ceil(a->y + (g->ext[3] - g->ext[1]) * a->s) + 1;
        for (long y = v0; y <= v1; y++)
            for (long x = u0; x <= u1; x++) {
                if (x < 0 || y < 0 || x >= (long)L.cw || y >= (long)L.ch)
                    continue;
                /* canvas pixel centre -> source units -> glyph sample */
                double sx = g->ext[0] + (x + 0.5 - a->x) / a->s;
                double sy = g->ext[1] + (y + 0.5 - a->y) / a->s;
                float val = nc_fimg_bilinear(&g->img, (sx + PAD) * UP - 0.5, (sy + PAD) * UP - 0.5);
                float *d = &canvas.v[(size_t)y * L.cw + x];
                if (val > *d) *d = val;
            }
        double iu0 = a->x + (g->ink[0] - g->ext[0]) * a->s, iu1 = a->x + (g->ink[2] - g->ext[0]) * a->s;
        double iv0 = a->y + (g->ink[1] - g->ext[1]) * a->s, iv1 = a->y + (g->ink[3] - g->ext[1]) * a->s;
        t.boxes[k] = nc_warp_box(&wp, iu0, iv0, iu1, iv1, W, H);
    }
    nc_rect fb = nc_warp_box(&wp, 0, 0, L.cw, L.ch, W, H);
    for (uint32_t y = fb.y; y < fb.y + fb.height; y++)
        for (uint32_t x = fb.x; x < fb.x + fb.width; x++) {
            double u, vv;
            nc_warp_inv(&wp, x, y, &u, &vv);
            cov.v[(size_t)y * W + x] = nc_fimg_bilinear(&canvas, u - 0.5, vv - 0.5);
        }

    /* 4. shading.  Paper level: the lit range and the ink. */
    double pmean, ink;
    if (v & NC_PHOTO_LOW_CONTRAST) {
        t.paper_hi = (float)nc_rng_range(rng, 160, 200);
        t.paper_lo = (float)fmax(150, t.paper_hi - nc_rng_range(rng, 5, 30));
        pmean = (t.paper_lo + t.paper_hi) / 2;
        ink = pmean - nc_rng_range(rng, 45, 70);
    } else {
        t.paper_hi = (float)nc_rng_range(rng, 180, 235);
        t.paper_lo = (float)fmax(150, t.paper_hi - nc_rng_range(rng, 10, 65));
        pmean = (t.paper_lo + t.paper_hi) / 2;
        ink = (v & NC_PHOTO_GREY_INK) ? nc_rng_range(rng, 35, 110) : nc_rng_range(rng, 12, 35);
    }
    if (v & NC_PHOTO_HAND)
        ink = fmin(ink, nc_rng_range(rng, 15, 40) + ((v & (NC_PHOTO_GREY_INK | NC_PHOTO_LOW_CONTRAST)) ? 60 : 0));
    t.ink = (float)ink;
    double ink_ratio = ink / pmean;

    /* texture: always a little; rough paper a lot more, with fibres */
    int tex = (v & NC_PHOTO_TEXTURE) != 0;
    if ((err = nc_fimg_value_noise(rng, W, H, 40, tex ? nc_rng_range(rng, 5, 9) : 2.5, paper)) < 0 ||
        (err = nc_fimg_value_noise(rng, W, H, tex ? 3 : 5, tex ? nc_rng_range(rng, 3, 6) : 1.5, paper)) < 0)
        goto out;
    if (tex) {
        int fibres = 30 + (int)(nc_rng_next(rng) % 60);
        for (int f = 0; f < fibres; f++) {
            double cx = nc_rng_range(rng, 0, W), cy = nc_rng_range(rng, 0, H);
            double ang = nc_rng_range(rng, 0, PI), len = nc_rng_range(rng, 4, 18);
            double amp = nc_rng_range(rng, -7, 5);
            for (double q = -len / 2; q <= len / 2; q += 0.5) {
                long x = lround(cx + q * cos(ang)), y = lround(cy + q * sin(ang));
                if (x >= 0 && y >= 0 && x < (long)W && y < (long)H)
                    paper[(size_t)y * W + x] = (float)(paper[(size_t)y * W + x] * 0.5 + amp);
            }
        }
    }

    /* light: a plane and an off-centre vignette, normalised to [lo, hi] */
    double la = nc_rng_range(rng, -1, 1), lb = nc_rng_range(rng, -1, 1);
    double vig = nc_rng_range(rng, 0.2, 1.5);
    double vcx = nc_rng_range(rng, -0.3, 0.3), vcy = nc_rng_range(rng, -0.3, 0.3);
    double lmin = INFINITY, lmax = -INFINITY;
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t y = 0; y < H; y++)
            for (uint32_t x = 0; x < W; x++) {
                double nx = (double)x / W - 0.5, ny = (double)y / H - 0.5;
                double l = la * nx + lb * ny - vig * ((nx - vcx) * (nx - vcx) + (ny - vcy) * (ny - vcy));
                if (pass == 0) {
                    lmin = fmin(lmin, l);
                    lmax = fmax(lmax, l);
                    continue;
                }
                size_t i = (size_t)y * W + x;
                double ln = lmax > lmin ? (l - lmin) / (lmax - lmin) : 1;
                paper[i] = (float)clampd(t.paper_lo + (t.paper_hi - t.paper_lo) * ln + paper[i],
                                         150, 235);
            }

    /* rules: along the page, which the photo turned by about the text's angle;
     * never more than 40 % of the ink's darkening, so ink stays darker */
    double page = (rot + nc_rng_range(rng, -3, 3)) * PI / 180;
    double rule_sp = (v & NC_PHOTO_SQUARED) ? h * nc_rng_range(rng, 0.3, 0.6) : h * nc_rng_range(rng, 0.7, 1.3);
    double rule_th = nc_rng_range(rng, 0.8, 1.6), rule_off = nc_rng_range(rng, 0, rule_sp);
    double rule_k = fmin(nc_rng_range(rng, 0.08, 0.2), 0.4 * (1 - ink_ratio));
    /* shadow: a band across the frame, or a corner */
    int band = nc_rng_uniform(rng) < 0.5;
    double sang = nc_rng_range(rng, 0, 2 * PI), sdepth = nc_rng_range(rng, 0.2, 0.4);
    double ssoft = nc_rng_range(rng, 4, 15), swidth = nc_rng_range(rng, 0.2, 0.45) * (W + H) / 2;
    double scx = nc_rng_range(rng, 0.2, 0.8) * W, scy = nc_rng_range(rng, 0.2, 0.8) * H;
    uint32_t corner = (uint32_t)(nc_rng_next(rng) % 4);
    double ccut = nc_rng_range(rng, 0.25, 0.5) * (W + H) / 2;
    /* finger: a half ellipse of skin, out of focus */
    double fpos = nc_rng_range(rng, 0.25, 0.75), fwide = nc_rng_range(rng, 0.14, 0.24);
    double flevel = nc_rng_range(rng, 70, 135), fgrad = nc_rng_range(rng, -0.25, 0.25);
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++) {
            size_t i = (size_t)y * W + x;
            double P = paper[i];
            if (v & (NC_PHOTO_RULED | NC_PHOTO_SQUARED)) {
                double d1 = -x * sin(page) + y * cos(page);
                double rc = rule_cov(d1 - rule_off, rule_sp, rule_th);
                if (v & NC_PHOTO_SQUARED)
                    rc = fmax(rc, rule_cov(x * cos(page) + y * sin(page) - rule_off, rule_sp, rule_th));
                P *= 1 - rule_k * rc;
            }
            if (v & NC_PHOTO_SHADOW) {
                double m;
                if (band) {
                    double d = (x - scx) * cos(sang) + (y - scy) * sin(sang);
                    m = sigmoid((swidth / 2 - fabs(d)) / ssoft);
                } else {
                    double cxp = (corner & 1) ? W : 0, cyp = (corner & 2) ? H : 0;
                    double d = fabs(x - cxp) + fabs(y - cyp);
                    m = sigmoid((ccut - d) / ssoft);
                }
                P *= 1 - sdepth * m;
            }
            P *= 1 - cov.v[i] * (1 - ink_ratio);
            if (side) {
                /* along: position along the border; in: depth from it */
                double along, in, len;
                if (side == 'l' || side == 'r') { along = y; len = H; in = side == 'l' ? x : W - 1.0 - x; }
                else { along = x; len = W; in = side == 't' ? y : H - 1.0 - y; }
                double a = fwide * len, b = fdepth + a;     /* tip at depth fdepth */
                double da = (along - fpos * len) / a, db = (in - (fdepth - b)) / b;
                /* distance to the outline to first order: (f - 1) / |grad f| */
                double f = sqrt(da * da + db * db) + 1e-9;
                double gr = sqrt(da * da / (a * a) + db * db / (b * b)) / f;
                double sd = (f - 1) / gr;
                double m = sigmoid(-sd / finger_soft);
                /* rounder skin is lit more in the middle of the finger */
                double skin = flevel * (0.8 + 0.3 * (1 - fmin(1, fabs(da))) + fgrad * (along / len - 0.5));
                P = P * (1 - m) + skin * m;
            }
            paper[i] = (float)P;
        }

    /* 5. optics and sensor */
    t.blur = (float)nc_rng_range(rng, 0.4, 1.6);
    if ((err = nc_fimg_blur(paper, W, H, t.blur)) < 0)
        goto out;
    t.noise = (float)nc_rng_range(rng, 1.5, 6);
    if ((err = nc_image_new(W, H, &img)) < 0)
        goto out;
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++) {
            double q = paper[(size_t)y * W + x] + t.noise * nc_rng_gauss(rng);
            img->pixels[(size_t)y * img->stride + x] = q <= 0 ? 0 : q >= 255 ? 255 : (uint8_t)lrint(q);
        }
    t.quality = 50 + (uint32_t)(nc_rng_next(rng) % 41);
    t.variations = v;
    *ret_img = img;
    img = NULL;
    *ret_truth = t;
    err = 0;
out:
    for (uint32_t k = 0; k < n; k++)
        free(gl[k].img.v);
    free(canvas.v);
    free(cov.v);
    free(paper);
    nc_image_free(img);
    return err;
}

int nc_photo_describe(const nc_photo_truth *t, uint32_t width, uint32_t height,
                      char *buf, size_t len)
{
    int n = snprintf(buf, len, "w=%u,h=%u,lines=%u,height=%.0f,rot=%.1f,persp=%.2f,blur=%.2f,"
                     "noise=%.1f,q=%u,paper=%.0f-%.0f,ink=%.0f",
                     width, height, t->lines, t->height, t->rotate_deg, t->perspective, t->blur,
                     t->noise, t->quality, t->paper_lo, t->paper_hi, t->ink);
    for (uint32_t k = 0; k < t->count && n >= 0; k++) {
        size_t used = (size_t)n < len ? (size_t)n : len;
        int m = snprintf(buf + used, len - used, "%s%u", k ? "+" : ",src=", t->sources[k]);
        n = m < 0 ? m : n + m;
    }
    for (uint32_t i = 0; i < NC_PHOTO_VARIATION_COUNT && n >= 0; i++) {
        if (!(t->variations & (1u << i)))
            continue;
        size_t used = (size_t)n < len ? (size_t)n : len;
        int m = (1u << i) == NC_PHOTO_FINGER
                    ? snprintf(buf + used, len - used, ",finger=%c", t->finger_side)
                    : snprintf(buf + used, len - used, ",%s", variation_names[i]);
        n = m < 0 ? m : n + m;
    }
    return n;
}

/* core/image/image_clean.c — see image_clean.h for the steps; this file follows
 * them in order.  Grey levels are floats in [0, 1], light ink on a dark
 * ground (after the polarity step), row-major with stride = width. */
#include "image_clean.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define COARSE_SIDE 64u         /* shorter side of the paper estimate */
#define RULE_PERCENTILE 0.10    /* a stroke never covers 90 % of a line */
#define NOISE_SIGMAS 4.0
#define MIN_FLOOR 0.04f
#define MIN_INK_ABOVE_FLOOR 0.12f
#define INK_QUANTILE 0.998      /* the strongest ink, robust to a hot pixel */
#define STRONG 0.4f             /* the ink's core: this far from floor to ink */
#define GROW 0.05               /* how far the rim grows, of the character's size */
#define PEN_LOW 0.12            /* pen width / size outside which it is */
#define PEN_HIGH 0.19           /* brought to PEN_TARGET (see pen_ratio) */
#define PEN_TARGET 0.134
#define JOIN_FRACTION 0.02      /* of the main component's ink */
#define JOIN_DISTANCE 0.25      /* of the main component's larger side */
#define BIG_PIECE 0.5           /* of the main component's ink: a character */
#define TIGHT_DISTANCE 0.05     /* of its larger side: how near such a piece
                                   must be to belong to the same one */

/* ---- polarity ------------------------------------------------------------ */

/* 1 when the ink is darker than the paper.  The paper is most of a
 * character's image, so the median is paper, and the ink is the longer
 * tail of the histogram away from it: below for dark ink, above for light.
 * Unlike the border's mean this does not depend on how light the paper is
 * (grey paper in a dim room is darker than 128) nor on what lies at the
 * border. */
static int ink_is_dark(const nc_image *img)
{
    uint64_t hist[256];
    if (nc_image_histogram(img, hist) < 0)
        return 0;
    uint64_t n = (uint64_t)img->width * img->height, acc = 0;
    uint64_t q_lo = n / 200, q_med = n / 2, q_hi = n - n / 200;  /* 0.5 %, 50 %, 99.5 % */
    int lo = -1, med = -1, hi = -1;
    for (int v = 0; v < 256; v++) {
        acc += hist[v];
        if (lo < 0 && acc > q_lo)
            lo = v;
        if (med < 0 && acc > q_med)
            med = v;
        if (hi < 0 && acc >= q_hi)
            hi = v;
    }
    if (hi < 0)
        hi = 255;
    return med - lo > hi - med;
}

/* ---- already clean? ------------------------------------------------------ */

static int is_clean(const nc_image *img, int invert)
{
    const uint8_t zero = invert ? 255 : 0;
    uint64_t zeros = 0, border = 0, border_zeros = 0;
    for (uint32_t y = 0; y < img->height; y++) {
        const uint8_t *row = img->pixels + (size_t)y * img->stride;
        int edge_row = y == 0 || y + 1 == img->height;
        for (uint32_t x = 0; x < img->width; x++) {
            int z = row[x] == zero;
            zeros += (uint64_t)z;
            if (edge_row || x == 0 || x + 1 == img->width) {
                border++;
                border_zeros += (uint64_t)z;
            }
        }
    }
    uint64_t n = (uint64_t)img->width * img->height;
    return 2 * zeros >= n && 10 * border_zeros >= 9 * border;
}

/* ---- separable filters over a w x h float image -------------------------- */

static inline float pick(float a, float b, int want_max)
{
    return want_max ? (a > b ? a : b) : (a < b ? a : b);
}

/* out[i] = min (or max) of in over the window [i - r, i + r] along one
 * axis, clipped at the ends; n samples s apart; g and hh hold n floats.
 * van Herk / Gil-Werman: within blocks of k = 2r + 1 samples, g holds the
 * running extreme from the block's start and hh the one to its end, so a
 * whole window [lo, lo + k) is pick(hh[lo], g[lo + k - 1]): three
 * comparisons a sample whatever r (a pen's width at full size is tens of
 * pixels).  Windows cut short by an end are running extremes from it. */
static void line_extreme(const float *in, float *out, uint32_t n, size_t s, uint32_t r,
                         int want_max, float *g, float *hh)
{
    const uint32_t k = 2 * r + 1;
    for (uint32_t i = 0; i < n; i++)
        g[i] = i % k ? pick(g[i - 1], in[i * s], want_max) : in[i * s];
    for (uint32_t i = n; i-- > 0;)
        hh[i] = (i + 1) % k && i + 1 < n ? pick(hh[i + 1], in[i * s], want_max) : in[i * s];
    /* whole windows */
    for (uint32_t i = r; i + r < n; i++)
        out[i * s] = pick(hh[i - r], g[i + r], want_max);
    /* cut short at the start: [0, min(i + r, n - 1)], growing */
    float v = in[0];
    for (uint32_t j = 1; j < r && j < n; j++)
        v = pick(v, in[j * s], want_max);
    for (uint32_t i = 0; i < r && i < n; i++) {
        if (i + r < n)
            v = pick(v, in[(i + r) * s], want_max);
        else if (i == 0)                        /* the window is the line */
            for (uint32_t j = r < n ? r : 1; j < n; j++)
                v = pick(v, in[j * s], want_max);
        out[i * s] = v;
    }
    /* cut short at the end (and not at the start): [i - r, n - 1] */
    if (n > r) {
        uint32_t first = n - r > r ? n - r : r;     /* smallest such i */
        float t = in[(n - 1) * s];
        for (uint32_t j = n - 1 - r; j < n - 1; j++)
            t = pick(t, in[j * s], want_max);
        for (uint32_t i = n; i-- > first;) {
            if (i < n - 1)
                t = pick(t, in[(i - r) * s], want_max);
            out[i * s] = t;
        }
    }
}

/* out[i] = mean of in over [i - r, i + r], clipped at the ends; a running
 * sum. */
static void line_mean(const float *in, float *out, uint32_t n, size_t s, uint32_t r)
{
    double sum = 0.0;
    uint32_t lo = 0, hi = 0;                /* the sum holds in[lo .. hi) */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t want_lo = i > r ? i - r : 0, want_hi = i + r < n ? i + r + 1 : n;
        while (hi < want_hi)
            sum += in[(hi++) * s];
        while (lo < want_lo)
            sum -= in[(lo++) * s];
        out[i * s] = (float)(sum / (hi - lo));
    }
}

enum { F_MIN, F_MAX, F_MEAN };

/* img <- filter(img) over a (2r + 1) square, rows then columns; tmp holds
 * w * h floats.  0 or -ENOMEM. */
static int filter2d(float *img, float *tmp, uint32_t w, uint32_t h, uint32_t r, int kind)
{
    size_t longest = w > h ? w : h;
    float *g = NULL, *hh = NULL;
    if (kind != F_MEAN) {
        g = malloc(2 * longest * sizeof *g);
        if (!g)
            return -ENOMEM;
        hh = g + longest;
    }
    for (uint32_t y = 0; y < h; y++) {
        if (kind == F_MEAN)
            line_mean(img + (size_t)y * w, tmp + (size_t)y * w, w, 1, r);
        else
            line_extreme(img + (size_t)y * w, tmp + (size_t)y * w, w, 1, r, kind == F_MAX,
                         g, hh);
    }
    for (uint32_t x = 0; x < w; x++) {
        if (kind == F_MEAN)
            line_mean(tmp + x, img + x, h, w, r);
        else
            line_extreme(tmp + x, img + x, h, w, r, kind == F_MAX, g, hh);
    }
    free(g);
    return 0;
}

/* ---- statistics -------------------------------------------------------- */

/* The q-quantile of n values in [0, 1] read s apart, to 1/255: a
 * 256-bin histogram, linear in n (a row's 10th percentile). */
static float quantile(const float *v, size_t n, size_t s, double q)
{
    uint32_t hist[256] = { 0 };
    for (size_t i = 0; i < n; i++)
        hist[(int)(v[i * s] * 255.0f + 0.5f)]++;
    size_t want = (size_t)(q * (double)(n - 1)), acc = 0;
    int b = 0;
    for (; b < 255; b++)
        if ((acc += hist[b]) > want)
            break;
    return b / 255.0f;
}

/* Median and median absolute deviation of n values in [0, 1], by a
 * 4096-bin histogram (exact enough for a noise floor, linear in n). */
#define HBINS 4096
static void median_mad(const float *v, size_t n, float *ret_med, float *ret_mad)
{
    static const double scale = HBINS - 1;
    uint32_t hist[HBINS] = { 0 };       /* 16 KiB: no allocation to fail */
    for (size_t i = 0; i < n; i++)
        hist[(int)(v[i] * scale + 0.5)]++;
    size_t acc = 0, half = (n + 1) / 2;
    int m = 0;
    for (; m < HBINS - 1; m++)
        if ((acc += hist[m]) >= half)
            break;
    /* deviations |bin - m| in bins, counted from the median outwards */
    acc = hist[m];
    int d = 0;
    while (acc < half && d < HBINS) {
        d++;
        if (m - d >= 0)
            acc += hist[m - d];
        if (m + d < HBINS)
            acc += hist[m + d];
    }
    *ret_med = (float)(m / scale);
    *ret_mad = (float)(d / scale);
}

/* The level below which a fraction q of n values in [0, 1] lie, by a
 * HBINS histogram (linear in n). */
static float upper_quantile(const float *v, size_t n, double q)
{
    uint32_t hist[HBINS] = { 0 };
    for (size_t i = 0; i < n; i++)
        hist[(int)(v[i] * (HBINS - 1) + 0.5)]++;
    size_t want = (size_t)(q * (double)n), acc = 0;
    int b = 0;
    for (; b < HBINS - 1; b++)
        if ((acc += hist[b]) > want)
            break;
    return (float)b / (HBINS - 1);
}

/* ---- the steps --------------------------------------------------------- */

/* Step 3: coverage = 1 - ink / paper from the light-ink grey g (w x h),
 * with the paper's level estimated as a smoothed grey opening at coarse
 * scale.  cov and g may not overlap; tmp holds w * h floats. */
static int coverage(const float *g, uint32_t w, uint32_t h, float *cov, float *tmp)
{
    uint32_t side = w < h ? w : h;
    uint32_t cw = w, ch = h;
    if (side > COARSE_SIDE) {
        cw = (uint32_t)((uint64_t)w * COARSE_SIDE / side);
        ch = (uint32_t)((uint64_t)h * COARSE_SIDE / side);
        cw = cw ? cw : 1;
        ch = ch ? ch : 1;
    }
    size_t cn = (size_t)cw * ch;
    float *c = malloc(cn * sizeof *c), *ct = malloc(cn * sizeof *ct);
    int err = c && ct ? 0 : -ENOMEM;
    if (!err)
        err = nc_image_resample(g, w, h, c, cw, ch);
    if (!err) {
        uint32_t cside = cw < ch ? cw : ch;
        uint32_t r = (uint32_t)lround(cside / 10.0);   /* square 2r + 1: a fifth */
        r = r ? r : 1;
        err = filter2d(c, ct, cw, ch, r, F_MIN);                    /* opening: erode... */
        if (!err)
            err = filter2d(c, ct, cw, ch, r, F_MAX);                /* ...then dilate */
        if (!err)
            err = filter2d(c, ct, cw, ch, r / 2 ? r / 2 : 1, F_MEAN);  /* no blocky steps */
        if (!err)
            err = nc_image_resample(c, cw, ch, tmp, w, h);          /* paper, light-ink */
    }
    if (!err) {
        for (size_t i = 0; i < (size_t)w * h; i++) {
            /* light-ink paper level b means a dark-ink paper of 1 - b; the
             * ink's coverage of it is (g - b) / (1 - b) */
            float b = tmp[i], den = 1.0f - b;
            float v = den > 1e-3f ? (g[i] - b) / den : 0.0f;
            cov[i] = v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f;
        }
    }
    free(c);
    free(ct);
    return err;
}

/* Step 4: the level of a ruled line, subtracted along rows and columns.
 * line holds w + h floats. */
static void remove_rules(float *cov, uint32_t w, uint32_t h, float *line)
{
    float *row = line, *col = line + h;
    for (uint32_t y = 0; y < h; y++)
        row[y] = quantile(cov + (size_t)y * w, w, 1, RULE_PERCENTILE);
    for (uint32_t x = 0; x < w; x++)
        col[x] = quantile(cov + x, h, w, RULE_PERCENTILE);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            float *p = &cov[(size_t)y * w + x];
            float r = row[y] > col[x] ? row[y] : col[x];
            *p = *p > r ? *p - r : 0.0f;
        }
}

static int touches_border(nc_rect b, uint32_t w, uint32_t h)
{
    return b.x == 0 || b.y == 0 || b.x + b.width >= w || b.y + b.height >= h;
}

/* Step 6: which components make the character.  keep[c] = 1 for each.
 * The main one is the component of most ink, preferring one clear of the
 * frame's edge (the edge of a finger or of a shadow left over by the paper
 * estimate runs along it) unless only edge pieces are big; the pieces that
 * join it never touch the edge, which a character's broken stroke, away
 * from the frame's edge, does not. */
static void choose_components(const nc_component *comp, const double *mass, uint32_t n,
                              uint32_t w, uint32_t h, uint8_t *keep)
{
    uint32_t main_all = 0, main_in = UINT32_MAX;
    for (uint32_t c = 0; c < n; c++) {
        if (mass[c] > mass[main_all])
            main_all = c;
        if (!touches_border(comp[c].box, w, h) && (main_in == UINT32_MAX || mass[c] > mass[main_in]))
            main_in = c;
    }
    uint32_t main_c = main_in != UINT32_MAX && mass[main_in] >= 0.25 * mass[main_all]
                    ? main_in : main_all;
    memset(keep, 0, n);
    keep[main_c] = 1;
    const nc_rect mb = comp[main_c].box;
    double reach = JOIN_DISTANCE * (mb.width > mb.height ? mb.width : mb.height);
    double tight = TIGHT_DISTANCE * (mb.width > mb.height ? mb.width : mb.height);
    double x0 = mb.x, y0 = mb.y, x1 = mb.x + mb.width, y1 = mb.y + mb.height;
    for (int grew = 1; grew;) {
        grew = 0;
        for (uint32_t c = 0; c < n; c++) {
            if (keep[c] || mass[c] < JOIN_FRACTION * mass[main_c] ||
                touches_border(comp[c].box, w, h))
                continue;
            const nc_rect b = comp[c].box;
            double dx = b.x > x1 ? b.x - x1 : (x0 > b.x + b.width ? x0 - (b.x + b.width) : 0);
            double dy = b.y > y1 ? b.y - y1 : (y0 > b.y + b.height ? y0 - (b.y + b.height) : 0);
            if (dx > reach || dy > reach)
                continue;
            /* a piece as big as half the main one is another character
             * (a neighbour in a string, the line below) unless it all but
             * touches: the halves of an 8 broken at its waist do */
            if (mass[c] >= BIG_PIECE * mass[main_c] && (dx > tight || dy > tight))
                continue;
            /* nor be a long thin line (a rule's end, the rim of a finger) */
            uint32_t len = b.width > b.height ? b.width : b.height;
            uint32_t thick = b.width > b.height ? b.height : b.width;
            if (len > 8 * thick && len > 2 * reach)
                continue;
            keep[c] = 1;
            grew = 1;
            x0 = fmin(x0, b.x);
            y0 = fmin(y0, b.y);
            x1 = fmax(x1, b.x + b.width);
            y1 = fmax(y1, b.y + b.height);
        }
    }
}

/* ---- pen width ------------------------------------------------------------ */

/* Stroke width over the character's size, as MNIST measures: the image
 * shrunk so its larger side is 20 pixels (MNIST's box), ink at half level,
 * width = 2 area / boundary.  MNIST's digits give 0.106 .. 0.134 .. 0.185
 * (10th, 50th, 90th percentile of the test fixture).  0 when too small. */
static double pen_ratio(const nc_image *img)
{
    uint32_t L = img->width > img->height ? img->width : img->height;
    uint32_t w = (uint32_t)lround(20.0 * img->width / L), h = (uint32_t)lround(20.0 * img->height / L);
    w = w ? w : 1;
    h = h ? h : 1;
    float *f = malloc((size_t)w * h * sizeof *f);
    if (!f || nc_image_resample_u8(img, NULL, f, w, h) < 0) {
        free(f);
        return 0.0;
    }
    uint32_t area = 0, edge = 0;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            if (!(f[y * w + x] >= 0.5f))
                continue;
            area++;
            if (x == 0 || x + 1 == w || y == 0 || y + 1 == h || f[y * w + x - 1] < 0.5f ||
                f[y * w + x + 1] < 0.5f || f[(y - 1) * w + x] < 0.5f || f[(y + 1) * w + x] < 0.5f)
                edge++;
        }
    free(f);
    return edge ? 2.0 * area / edge / 20.0 : 0.0;
}

/* A pen much finer or broader than MNIST's (a ballpoint, a marker) is
 * brought to MNIST's usual width by a grey dilation or erosion of the clean
 * image: the networks learnt one pen, and a stroke a third as wide reads
 * as another shape to them. */
static int pen_normalise(nc_image *img, float *buf)
{
    double r = pen_ratio(img);
    if (r <= 0.0 || (r >= PEN_LOW && r <= PEN_HIGH))
        return 0;
    uint32_t L = img->width > img->height ? img->width : img->height;
    /* the margin is a tenth: the character's own size is about 5/6 of it */
    double size = L * 5.0 / 6.0;
    long k = lround((PEN_TARGET - r) * size / 2.0);
    if (k == 0)
        return 0;
    uint32_t w = img->width, h = img->height;
    float *tmp = buf + (size_t)w * h;
    for (size_t i = 0; i < (size_t)w * h; i++)
        buf[i] = img->pixels[(i / w) * img->stride + i % w];
    uint32_t rad = (uint32_t)(k > 0 ? k : -k);
    int err = filter2d(buf, tmp, w, h, rad, k > 0 ? F_MAX : F_MIN);
    if (err < 0)
        return err;
    for (size_t i = 0; i < (size_t)w * h; i++)
        img->pixels[(i / w) * img->stride + i % w] = (uint8_t)lrintf(buf[i]);
    return 0;
}

/* Steps 3-7 on the light-ink grey g (w x h, the working size); the
 * character's box (without the margin) is in working coordinates in
 * *ret_box. */
static int clean_photo(const float *g, uint32_t w, uint32_t h, nc_image **ret_out,
                       nc_rect *ret_box, nc_rect *ret_crop, float *ret_contrast,
                       float *ret_floor)
{
    size_t n = (size_t)w * h;
    float *cov = malloc(n * sizeof *cov), *sm = malloc(n * sizeof *sm);
    float *tmp = malloc(n * sizeof *tmp);
    float *line = malloc(((size_t)w + h) * sizeof *line);
    uint8_t *mask = malloc(n);
    uint32_t *labels = malloc(n * sizeof *labels);
    nc_component *comp = NULL;
    double *mass = NULL;
    double *peak = NULL;
    uint8_t *keep = NULL, *dist = NULL;
    uint32_t *queue = NULL;
    uint32_t count = 0;
    nc_image *out = NULL;
    int err = cov && sm && tmp && line && mask && labels ? 0 : -ENOMEM;
    if (err)
        goto done;
    if ((err = coverage(g, w, h, cov, tmp)) < 0)
        goto done;
    remove_rules(cov, w, h, line);

    /* Step 5: the noise floor, and the ink's core: what the 3x3 mean lifts
     * well above the floor (STRONG of the way up to the strongest ink, so
     * ruled lines and shading, fainter than any pen, fall below it). */
    memcpy(sm, cov, n * sizeof *sm);
    filter2d(sm, tmp, w, h, 1, F_MEAN);                 /* a mean needs no memory */
    float med, mad;
    median_mad(sm, n, &med, &mad);
    float floor_ = med + (float)(NOISE_SIGMAS * 1.4826) * mad;
    if (floor_ < MIN_FLOOR)
        floor_ = MIN_FLOOR;
    float ink_ref = upper_quantile(sm, n, INK_QUANTILE);
    float strong = floor_ + STRONG * (ink_ref - floor_);
    for (size_t i = 0; i < n; i++)
        mask[i] = sm[i] > strong ? 255 : 0;

    /* Step 6: the components of the ink's core, and the character's. */
    nc_image mimg = { w, h, w, mask };
    err = nc_image_components(&mimg, NC_IMAGE_MAX_COMPONENTS, labels, &comp, &count);
    if (err < 0)
        goto done;
    if (count == 0) {
        err = -ENOENT;
        goto done;
    }
    mass = calloc(count, sizeof *mass);
    peak = calloc(count, sizeof *peak);
    keep = malloc(count);
    queue = malloc(n * sizeof *queue);
    dist = malloc(n);
    if (!mass || !peak || !keep || !queue || !dist) {
        err = -ENOMEM;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t l = labels[i];
        if (!l)
            continue;
        mass[l - 1] += sm[i] - floor_;
        if (sm[i] > peak[l - 1])
            peak[l - 1] = sm[i];
    }
    choose_components(comp, mass, count, w, h, keep);
    float ink = 0.0f;
    uint32_t side = 0;
    size_t head = 0, tail = 0;
    memset(dist, 255, n);
    for (uint32_t c = 0; c < count; c++) {
        if (!keep[c])
            continue;
        ink = (float)peak[c] > ink ? (float)peak[c] : ink;
        uint32_t s_ = comp[c].box.width > comp[c].box.height ? comp[c].box.width
                                                             : comp[c].box.height;
        side = s_ > side ? s_ : side;
    }
    for (size_t i = 0; i < n; i++)
        if (labels[i] && keep[labels[i] - 1]) {
            dist[i] = 0;
            queue[tail++] = (uint32_t)i;
        }
    /* The stroke's fainter rim (blur, anti-aliasing) is grown back from the
     * core through pixels above the floor, at most GROW of the character's
     * size away: far enough for a blurred edge, not along a ruled line. */
    uint32_t grow_max = (uint32_t)lround(GROW * side);
    grow_max = grow_max < 2 ? 2 : grow_max > 250 ? 250 : grow_max;
    uint32_t x0 = w, y0 = h, x1 = 0, y1 = 0;
    uint64_t area = 0;
    while (head < tail) {
        uint32_t i = queue[head++], x = i % w, y = i / w;
        area++;
        x0 = x < x0 ? x : x0;
        y0 = y < y0 ? y : y0;
        x1 = x + 1 > x1 ? x + 1 : x1;
        y1 = y + 1 > y1 ? y + 1 : y1;
        if (dist[i] >= grow_max)
            continue;
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) {
                long xx = (long)x + dx, yy = (long)y + dy;
                if (xx < 0 || yy < 0 || xx >= (long)w || yy >= (long)h)
                    continue;
                size_t j = (size_t)yy * w + (size_t)xx;
                if (dist[j] != 255 || !(sm[j] > floor_))
                    continue;
                dist[j] = (uint8_t)(dist[i] + 1);
                queue[tail++] = (uint32_t)j;
            }
    }
    /* No character: ink hardly above the noise, or a few stray pixels. */
    if (ink - floor_ < MIN_INK_ABOVE_FLOOR || area < 12) {
        err = -ENOENT;
        goto done;
    }

    /* Step 7: crop with a margin, coverage mapped floor..ink -> 0..255. */
    uint32_t bw = x1 - x0, bh = y1 - y0;
    uint32_t margin = (bw > bh ? bw : bh) / 10 + 1;
    uint32_t cx0 = x0 > margin ? x0 - margin : 0, cy0 = y0 > margin ? y0 - margin : 0;
    uint32_t cx1 = x1 + margin < w ? x1 + margin : w, cy1 = y1 + margin < h ? y1 + margin : h;
    if ((err = nc_image_new(cx1 - cx0, cy1 - cy0, &out)) < 0)
        goto done;
    const float span = ink - floor_;
    for (uint32_t y = cy0; y < cy1; y++)
        for (uint32_t x = cx0; x < cx1; x++) {
            size_t i = (size_t)y * w + x;
            if (dist[i] == 255)
                continue;
            float v = (sm[i] - floor_) / span;
            v = v > 0.0f ? (v < 1.0f ? v : 1.0f) : 0.0f;
            out->pixels[(size_t)(y - cy0) * out->stride + (x - cx0)] =
                (uint8_t)lrintf(v * 255.0f);
        }
    {
        float *buf = malloc(2 * (size_t)out->width * out->height * sizeof *buf);
        if (!buf) {
            err = -ENOMEM;
            goto done;
        }
        err = pen_normalise(out, buf);
        free(buf);
        if (err < 0)
            goto done;
    }
    *ret_crop = (nc_rect){ cx0, cy0, out->width, out->height };
    *ret_out = out;
    out = NULL;
    *ret_box = (nc_rect){ x0, y0, bw, bh };
    *ret_contrast = ink;
    *ret_floor = floor_;
done:
    nc_image_free(out);
    free(cov);
    free(sm);
    free(tmp);
    free(line);
    free(mask);
    free(labels);
    free(comp);
    free(mass);
    free(peak);
    free(keep);
    free(queue);
    free(dist);
    return err;
}

/* The character's box in an image that is already clean (light ink on
 * exactly 0), by the rule of step 6 over its ink components, the pixels'
 * levels as their ink.  The image itself is left as it is (the networks
 * get MNIST exactly as before); the box tells a caller what the character
 * is when the image holds more (nc_split_one_character). */
static int clean_character_box(const nc_image *img, nc_rect *ret_box)
{
    const uint32_t w = img->width, h = img->height;
    uint32_t *labels = malloc((size_t)w * h * sizeof *labels);
    nc_component *comp = NULL;
    double *mass = NULL;
    uint8_t *keep = NULL;
    uint32_t count = 0;
    int err = labels ? nc_image_components(img, NC_IMAGE_MAX_COMPONENTS, labels, &comp, &count)
                     : -ENOMEM;
    if (!err && count) {
        mass = calloc(count, sizeof *mass);
        keep = malloc(count);
        err = mass && keep ? 0 : -ENOMEM;
    }
    if (!err && count) {
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++) {
                uint32_t l = labels[(size_t)y * w + x];
                if (l)
                    mass[l - 1] += img->pixels[(size_t)y * img->stride + x] / 255.0;
            }
        choose_components(comp, mass, count, w, h, keep);
        uint32_t x0 = w, y0 = h, x1 = 0, y1 = 0;
        for (uint32_t c = 0; c < count; c++) {
            if (!keep[c])
                continue;
            const nc_rect b = comp[c].box;
            x0 = b.x < x0 ? b.x : x0;
            y0 = b.y < y0 ? b.y : y0;
            x1 = b.x + b.width > x1 ? b.x + b.width : x1;
            y1 = b.y + b.height > y1 ? b.y + b.height : y1;
        }
        *ret_box = (nc_rect){ x0, y0, x1 - x0, y1 - y0 };
    }
    free(labels);
    free(comp);
    free(mass);
    free(keep);
    return err;
}

int nc_image_clean(const nc_image *in, nc_polarity polarity, nc_image **ret_out,
                   nc_clean_info *ret_info)
{
    int err = nc_image_check(in);
    if (err < 0)
        return err;
    if (!ret_out || polarity > NC_POLARITY_DARK_INK)
        return -EINVAL;
    nc_clean_info info = { 0 };
    info.inverted = polarity == NC_POLARITY_DARK_INK ? 1
                  : polarity == NC_POLARITY_LIGHT_INK ? 0
                  : (uint32_t)ink_is_dark(in);
    nc_image *out = NULL;

    if (is_clean(in, (int)info.inverted)) {
        if ((err = nc_image_dup(in, &out)) < 0)
            return err;
        if (info.inverted)
            nc_image_invert(out);
        if (nc_image_bbox(out, 0, &info.box) < 0) {
            nc_image_free(out);
            return -ENOENT;
        }
        if ((err = clean_character_box(out, &info.box)) < 0) {
            nc_image_free(out);
            return err;
        }
        info.contrast = 1.0f;
        info.frame_width = in->width;
        info.frame_height = in->height;
        info.frame_box = (nc_rect){ 0, 0, in->width, in->height };
        goto ok;
    }

    /* A photo: float grey, light ink, shrunk to the working size. */
    info.photo = 1;
    uint32_t side = in->width < in->height ? in->width : in->height;
    uint32_t w = in->width, h = in->height;
    if (side > NC_CLEAN_WORK_SIDE) {
        w = (uint32_t)((uint64_t)in->width * NC_CLEAN_WORK_SIDE / side);
        h = (uint32_t)((uint64_t)in->height * NC_CLEAN_WORK_SIDE / side);
    }
    float lut[256];
    for (int v = 0; v < 256; v++)
        lut[v] = (float)(info.inverted ? 255 - v : v) / 255.0f;
    float *g = malloc((size_t)w * h * sizeof *g);
    if (!g)
        return -ENOMEM;
    if (w == in->width && h == in->height) {        /* no shrinking: just the levels */
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++)
                g[(size_t)y * w + x] = lut[in->pixels[(size_t)y * in->stride + x]];
    } else {
        err = nc_image_resample_u8(in, lut, g, w, h);
    }
    nc_rect box = { 0 };
    float contrast = 0.0f, floor_ = 0.0f;
    if (!err)
        err = clean_photo(g, w, h, &out, &box, &info.frame_box, &contrast, &floor_);
    info.frame_width = w;
    info.frame_height = h;
    free(g);
    if (err < 0)
        return err;
    /* back to input coordinates */
    double sx = (double)in->width / w, sy = (double)in->height / h;
    info.box = (nc_rect){ (uint32_t)(box.x * sx), (uint32_t)(box.y * sy),
                          (uint32_t)lround(box.width * sx), (uint32_t)lround(box.height * sy) };
    info.contrast = contrast;
    info.noise = floor_;
ok:
    *ret_out = out;
    if (ret_info)
        *ret_info = info;
    return 0;
}

/* nc_image_clean, then its crop put back where it was in the frame: the
 * cell NC_PREP_LINE reads (a line-layout model learnt characters placed on
 * their line, so the frame, not the ink's box, is the cell). */
int nc_image_clean_cell(const nc_image *in, nc_polarity polarity, nc_image **ret_out)
{
    if (!ret_out)
        return -EINVAL;
    nc_image *clean = NULL, *cell = NULL;
    nc_clean_info info;
    int err = nc_image_clean(in, polarity, &clean, &info);
    if (err < 0 || !info.photo) {
        if (!err)
            *ret_out = clean;
        return err;
    }
    /* the output is a crop of the (working) frame: put it back */
    const nc_rect b = info.frame_box;
    if (b.width != clean->width || b.height != clean->height ||
        b.x + (uint64_t)b.width > info.frame_width || b.y + (uint64_t)b.height > info.frame_height)
        err = -EINVAL;      /* cannot happen: nc_image_clean's own numbers */
    if (!err)
        err = nc_image_new(info.frame_width, info.frame_height, &cell);
    if (!err) {
        for (uint32_t y = 0; y < b.height; y++)
            memcpy(cell->pixels + (size_t)(b.y + y) * cell->stride + b.x,
                   clean->pixels + (size_t)y * clean->stride, b.width);
        *ret_out = cell;
    }
    nc_image_free(clean);
    return err;
}

int nc_image_clean_prep(const nc_image *in, nc_polarity polarity, const nc_prep *p,
                        float *out)
{
    if (!p)
        return -EINVAL;
    nc_image *clean = NULL;
    int err = p->kind == NC_PREP_LINE ? nc_image_clean_cell(in, polarity, &clean)
                                      : nc_image_clean(in, polarity, &clean, NULL);
    if (!err) {
        nc_prep light = *p;
        light.invert = 0;
        err = nc_prep_apply(clean, &light, out);
    }
    nc_image_free(clean);
    return err;
}

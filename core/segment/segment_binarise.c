/* core/segment/segment_binarise.c — polarity detection and the two binarisations
 * (global Otsu, adaptive Sauvola) of the segmentation pipeline.
 *
 * Layer: core.  Works on the ROI view; writes seg->mask (255 = ink).  All
 * tests are done "ink is dark": for light ink a pixel p is read as 255 - p
 * and a window mean m as 255 - m, so one rule serves both.
 *
 * Local statistics come from an integral image of b x b block sums (of p
 * and p^2), b = window / 12: each block gets the mean and variance of the
 * window of whole blocks centred on it, and every pixel of the block uses
 * that block's threshold.  The window is thus exact to within one block,
 * which Sauvola's rule does not notice at these window sizes, while the
 * per-pixel work drops to one comparison: at 640x480 this is ~10x faster
 * than per-pixel windows on full-resolution integrals.
 *
 * Speed (issue 7): every per-pixel loop is a straight loop over a row with
 * no branch inside, so the compiler vectorises it: block sums go through
 * per-column sums of a band of b rows, the mask through a row of per-pixel
 * thresholds built once per band.  Sums are integers and the per-block
 * arithmetic is unchanged, so the mask is bit for bit what the plain
 * per-block loops gave (tests/core/test_segment_binarise.c checks it
 * against them). */
#include "segment_internal.h"

#include <math.h>
#include <string.h>

#define SAUVOLA_R 128.0     /* dynamic range of the standard deviation */

/* Replace a scratch array by a fresh one of the given size (contents are
 * not kept: callers rewrite them every frame).  The old one goes first, so
 * the two are never held together. */
static void *renew(void *old, size_t bytes)
{
    free(old);
    return malloc(bytes);
}

#define RENEW(ptr, n) (((ptr) = renew((ptr), (size_t)(n) * sizeof *(ptr))) != NULL)

int nc_segment_reserve(nc_segmenter *seg, uint32_t w, uint32_t h, uint32_t b)
{
    size_t npix = (size_t)w * h;
    size_t gw = (w + b - 1) / b, gh = (h + b - 1) / b, nint = (gw + 1) * (gh + 1);
    if (npix > seg->cap_pixels) {
        seg->cap_pixels = 0;
        if (!RENEW(seg->mask, npix) || !RENEW(seg->labels, npix))
            return -ENOMEM;
        seg->cap_pixels = npix;
    }
    if (nint > seg->cap_blocks) {
        seg->cap_blocks = 0;
        if (!RENEW(seg->isum, nint) || !RENEW(seg->isq, nint) || !RENEW(seg->thr, nint) ||
            !RENEW(seg->mean, nint) || !RENEW(seg->bmean, nint) || !RENEW(seg->bsq, nint))
            return -ENOMEM;
        seg->cap_blocks = nint;
    }
    if (w > seg->cap_width) {
        seg->cap_width = 0;
        if (!RENEW(seg->colsum, w) || !RENEW(seg->colsq, w) || !RENEW(seg->thr_px, w + 16) ||
            !RENEW(seg->wsum, w) || !RENEW(seg->wsq, w) || !RENEW(seg->wn, w))
            return -ENOMEM;
        seg->cap_width = w;
    }
    return 0;
}

uint32_t nc_segment_window_side(const nc_segment_params *p, uint32_t w, uint32_t h)
{
    if (p->window)
        return p->window;
    uint32_t side = (w < h ? w : h) / 8;
    side |= 1;
    return side < 15 ? 15 : side > 255 ? 255 : side;
}

uint32_t nc_segment_block_side(uint32_t window)
{
    uint32_t b = window / 12;
    return b < 1 ? 1 : b > 16 ? 16 : b;
}

/* Per-column sums of p and p^2 over rows [y0, y1) (at most 16 rows, so
 * 32 bits hold 16 * 255^2).  Branch-free loops over whole rows: the
 * compiler widens and adds 8 or 16 pixels at a time. */
static void column_sums(const nc_image *roi, uint32_t y0, uint32_t y1,
                        uint32_t *restrict cs, uint32_t *restrict cq)
{
    const uint32_t w = roi->width;
    const uint8_t *restrict row = roi->pixels + (size_t)y0 * roi->stride;
    /* p^2 <= 65025: the compiler squares in 16-bit lanes (baseline x86-64
     * has no 32-bit vector multiply) and widens to add */
    for (uint32_t x = 0; x < w; x++) {
        cs[x] = row[x];
        cq[x] = (uint32_t)row[x] * row[x];
    }
    for (uint32_t y = y0 + 1; y < y1; y++) {
        row = roi->pixels + (size_t)y * roi->stride;
        for (uint32_t x = 0; x < w; x++) {
            cs[x] += row[x];
            cq[x] += (uint32_t)row[x] * row[x];
        }
    }
}

/* Integrals of the block sums of p and p^2, one band of b rows at a time:
 * the band's column sums, then b columns per block.  All in integers, so
 * the order of the additions does not matter. */
static void block_integrals(nc_segmenter *seg, const nc_image *roi, uint32_t b,
                            uint32_t gw, uint32_t gh)
{
    const size_t s = (size_t)gw + 1;
    uint64_t *I = seg->isum, *Q = seg->isq;
    uint32_t *cs = seg->colsum, *cq = seg->colsq;
    memset(I, 0, s * sizeof *I);
    memset(Q, 0, s * sizeof *Q);
    for (uint32_t j = 0; j < gh; j++) {
        uint32_t y0 = j * b, y1 = y0 + b < roi->height ? y0 + b : roi->height;
        column_sums(roi, y0, y1, cs, cq);
        uint64_t *Ir = I + (j + 1) * s, *Qr = Q + (j + 1) * s;
        const uint64_t *Iu = I + j * s, *Qu = Q + j * s;
        /* running sums along the band, recorded at each block's end: a
         * short loop per block would cost more in set-up than in adds */
        uint64_t a = 0, q = 0;
        Ir[0] = Qr[0] = 0;
        for (uint32_t x = 0, i = 0, xe = b < roi->width ? b : roi->width; x < roi->width; x++) {
            a += cs[x];
            q += cq[x];
            if (x + 1 == xe) {
                Ir[i + 1] = Iu[i + 1] + a;
                Qr[i + 1] = Qu[i + 1] + q;
                i++;
                xe = xe + b < roi->width ? xe + b : roi->width;
            }
        }
    }
}

/* Sum, sum of squares and pixel count of the window of blocks
 * [i - rb, i + rb] x [j - rb, j + rb], clipped to the grid and the ROI,
 * for every block i of row j.  One row at a time keeps the row bounds out
 * of the loop and the loop free of calls. */
static void window_row(const nc_segmenter *seg, const nc_image *roi, uint32_t b,
                       uint32_t gw, uint32_t gh, uint32_t rb, uint32_t j)
{
    const size_t s = (size_t)gw + 1;
    uint32_t j0 = j > rb ? j - rb : 0, j1 = j + rb + 1 < gh ? j + rb + 1 : gh;
    uint32_t py1 = j1 * b < roi->height ? j1 * b : roi->height;
    const double hy = (double)(py1 - j0 * b);
    const uint64_t *I0 = seg->isum + j0 * s, *I1 = seg->isum + j1 * s;
    const uint64_t *Q0 = seg->isq + j0 * s, *Q1 = seg->isq + j1 * s;
    double *restrict ws = seg->wsum, *restrict wq = seg->wsq, *restrict wn = seg->wn;
    for (uint32_t i = 0; i < gw; i++) {
        uint32_t i0 = i > rb ? i - rb : 0, i1 = i + rb + 1 < gw ? i + rb + 1 : gw;
        uint32_t px1 = i1 * b < roi->width ? i1 * b : roi->width;
        /* the sums are far below 2^63: converting them as signed is exact
         * and one instruction, where unsigned 64-bit takes a branch */
        ws[i] = (double)(int64_t)(I1[i1] - I0[i1] - I1[i0] + I0[i0]);
        wq[i] = (double)(int64_t)(Q1[i1] - Q0[i1] - Q1[i0] + Q0[i0]);
        wn[i] = (double)(px1 - i0 * b) * hy;
    }
}

/* Every block's window mean sum / n and mean square sq / n, the two
 * divisions of the old per-block formula done once per block for both the
 * polarity test and the thresholds, a row at a time so they vectorise. */
static void block_stats(nc_segmenter *seg, const nc_image *roi, uint32_t b, uint32_t gw,
                        uint32_t gh, uint32_t rb)
{
    const double *restrict ws = seg->wsum, *restrict wq = seg->wsq, *restrict wn = seg->wn;
    for (uint32_t j = 0; j < gh; j++) {
        window_row(seg, roi, b, gw, gh, rb, j);
        double *restrict m = seg->bmean + (size_t)j * gw, *restrict q = seg->bsq + (size_t)j * gw;
        for (uint32_t i = 0; i < gw; i++) {
            m[i] = ws[i] / wn[i];
            q[i] = wq[i] / wn[i];
        }
    }
}

/* Rows sampled together by detect_polarity: each row's sum is its own
 * chain of float additions, in the same order as a row alone, so doing
 * several side by side changes no bit of any sum; it only lets the
 * additions of different rows overlap instead of waiting on each other. */
#define POL_ROWS 4

/* acc[r] += the cubes of (p - block mean) of row y + 2r, every 2nd pixel
 * of each block from its first column, for r < POL_ROWS.  The row loop has
 * a constant count and the block's means are held in a local array, so the
 * compiler keeps the sums in one vector register, a row per lane. */
static void cube_rows(const nc_image *roi, const float *mean, uint32_t b, uint32_t gw,
                      uint32_t y, float acc[POL_ROWS])
{
    const uint8_t *row[POL_ROWS];
    const float *mrow[POL_ROWS];
    float a[POL_ROWS], m[POL_ROWS];
    for (uint32_t r = 0; r < POL_ROWS; r++) {
        row[r] = roi->pixels + (size_t)(y + 2 * r) * roi->stride;
        mrow[r] = mean + (size_t)((y + 2 * r) / b) * gw;
        a[r] = acc[r];
    }
    for (uint32_t i = 0; i < gw; i++) {
        uint32_t xe = (i + 1) * b < roi->width ? (i + 1) * b : roi->width;
        for (uint32_t r = 0; r < POL_ROWS; r++)
            m[r] = mrow[r][i];
        for (uint32_t x = i * b; x < xe; x += 2) {
            float d[POL_ROWS];
            for (uint32_t r = 0; r < POL_ROWS; r++)
                d[r] = row[r][x] - m[r];
            for (uint32_t r = 0; r < POL_ROWS; r++)
                a[r] += d[r] * d[r] * d[r];
        }
    }
    for (uint32_t r = 0; r < POL_ROWS; r++)
        acc[r] = a[r];
}

/* The same for the one row y. */
static float cube_row(const nc_image *roi, const float *mean, uint32_t b, uint32_t gw,
                      uint32_t y)
{
    const uint8_t *row = roi->pixels + (size_t)y * roi->stride;
    const float *mrow = mean + (size_t)(y / b) * gw;
    float acc = 0;
    for (uint32_t i = 0; i < gw; i++) {
        uint32_t xe = (i + 1) * b < roi->width ? (i + 1) * b : roi->width;
        float m = mrow[i];
        for (uint32_t x = i * b; x < xe; x += 2) {
            float d = row[x] - m;
            acc += d * d * d;
        }
    }
    return acc;
}

/* Ink is the thin tail of the grey-level distribution around the local
 * mean: dark ink gives a long negative tail of p - m, light ink a positive
 * one, while paper texture and noise are nearly symmetric.  The sign of the
 * third moment picks the tail; every 2nd pixel of every 2nd row is plenty
 * (odd block sides make the columns sampled vary from block to block). */
static uint32_t detect_polarity(const nc_segmenter *seg, const nc_image *roi, uint32_t b,
                                uint32_t gw, uint32_t gh, float *mean)
{
    for (size_t i = 0; i < (size_t)gw * gh; i++)
        mean[i] = (float)seg->bmean[i];
    double m3 = 0;
    uint32_t y = 0;
    /* per row in float, summed in double in row order */
    for (; y + 2 * (POL_ROWS - 1) < roi->height; y += 2 * POL_ROWS) {
        float acc[POL_ROWS] = { 0 };
        cube_rows(roi, mean, b, gw, y, acc);
        for (uint32_t r = 0; r < POL_ROWS; r++)
            m3 += acc[r];
    }
    for (; y < roi->height; y += 2)
        m3 += cube_row(roi, mean, b, gw, y);
    return m3 > 0 ? NC_SEGMENT_POLARITY_LIGHT_INK : NC_SEGMENT_POLARITY_DARK_INK;
}

/* ceil and floor of x for |x| < 2^31, by truncation: exact, and no libm
 * call per block (x86-64's baseline has no rounding instruction). */
static int ceil_small(double x)
{
    int i = (int)x;
    return i + ((double)i < x);
}

static int floor_small(double x)
{
    int i = (int)x;
    return i - ((double)i > x);
}

/* Sauvola's threshold of one block: ink where q < m (1 + k (s/R - 1)) and
 * m - q >= min_contrast, q and m in ink-is-dark terms.  For integer q that
 * is q < min(ceil(T), floor(m - c) + 1), with m = sum / n and
 * var = sq / n - m^2 over the block's window.  m is in [0, 255] and k in
 * (0, 1), so T and m - c lie well inside the range of ceil_small and
 * floor_small.
 * The result is at most 255: grey levels in [0, 255] have a standard
 * deviation of at most 127.5 < R, so T < m <= 255 (or T = 0). */
static int16_t sauvola_block(double m, double sqmean, double k, double c, int light)
{
    double var = sqmean - m * m;
    if (light)
        m = 255.0 - m;
    double T = m * (1.0 + k * (sqrt(var > 0 ? var : 0) / SAUVOLA_R - 1.0));
    int hi = ceil_small(T), lo = floor_small(m - c) + 1;
    int t = hi < lo ? hi : lo;
    return (int16_t)(t < 0 ? 0 : t > 256 ? 256 : t);
}

/* One band of rows sharing a row of blocks: the blocks' thresholds spread
 * to one byte per pixel, then a plain byte compare per pixel, 16 pixels
 * per vector: p < t for dark ink; for light ink q = 255 - p < t, that is
 * p > 255 - t, so the row holds 255 - t instead. */
static void mask_band(nc_segmenter *seg, const nc_image *roi, const int16_t *trow,
                      uint32_t b, uint32_t gw, uint32_t y0, uint32_t y1, int light)
{
    const uint32_t w = roi->width;
    uint8_t *restrict tp = seg->thr_px;
    /* 16 bytes per block, the next block overwriting all but its first b:
     * no loop of b stores (thr_px has 16 bytes of slack).  A threshold of
     * 256 cannot occur (sauvola_block), so a byte holds it. */
    for (uint32_t i = 0; i < gw; i++) {
        uint8_t t = (uint8_t)(trow[i] > 255 ? 255 : trow[i]);
        uint64_t splat = 0x0101010101010101ull * (uint8_t)(light ? 255 - t : t);
        memcpy(tp + (size_t)i * b, &splat, 8);
        memcpy(tp + (size_t)i * b + 8, &splat, 8);
    }
    for (uint32_t y = y0; y < y1; y++) {
        const uint8_t *restrict row = roi->pixels + (size_t)y * roi->stride;
        uint8_t *restrict out = seg->mask + (size_t)y * w;
        if (light)
            for (uint32_t x = 0; x < w; x++)
                out[x] = row[x] > tp[x] ? 255 : 0;
        else
            for (uint32_t x = 0; x < w; x++)
                out[x] = row[x] < tp[x] ? 255 : 0;
    }
}

static void binarise_sauvola(nc_segmenter *seg, const nc_image *roi,
                             const nc_segment_params *p, uint32_t b, uint32_t gw,
                             uint32_t gh, int light)
{
    const double k = p->sauvola_k, c = p->min_contrast;
    for (uint32_t j = 0; j < gh; j++) {
        int16_t *trow = seg->thr + (size_t)j * gw;
        const double *m = seg->bmean + (size_t)j * gw, *q = seg->bsq + (size_t)j * gw;
        for (uint32_t i = 0; i < gw; i++)
            trow[i] = sauvola_block(m[i], q[i], k, c, light);
        uint32_t y0 = j * b, y1 = y0 + b < roi->height ? y0 + b : roi->height;
        mask_band(seg, roi, trow, b, gw, y0, y1, light);
    }
}

/* Global Otsu.  The two classes' mean levels must differ by min_contrast,
 * or the "split" is just noise on flat paper and nothing is ink. */
static int binarise_otsu(nc_segmenter *seg, const nc_image *roi,
                         const nc_segment_params *p, int light)
{
    const uint32_t w = roi->width, h = roi->height;
    uint64_t hist[256];
    uint8_t t;
    int err = nc_image_histogram(roi, hist);
    if (err < 0)
        return err;
    memset(seg->mask, 0, (size_t)w * h);
    if (nc_image_otsu_histogram(hist, &t) < 0)
        return 0;                       /* one grey level: no ink */
    double n_lo = 0, s_lo = 0, n_hi = 0, s_hi = 0;
    for (int v = 0; v < 256; v++) {
        if (v <= t) { n_lo += hist[v]; s_lo += (double)hist[v] * v; }
        else        { n_hi += hist[v]; s_hi += (double)hist[v] * v; }
    }
    if (s_hi / n_hi - s_lo / n_lo < p->min_contrast)
        return 0;
    for (uint32_t y = 0; y < h; y++) {
        const uint8_t *row = roi->pixels + (size_t)y * roi->stride;
        uint8_t *out = seg->mask + (size_t)y * w;
        for (uint32_t x = 0; x < w; x++)
            out[x] = (light ? row[x] > t : row[x] <= t) ? 255 : 0;
    }
    return 0;
}

int nc_segment_binarise_roi(nc_segmenter *seg, const nc_image *roi,
                            const nc_segment_params *p, uint32_t *ret_polarity)
{
    uint32_t win = nc_segment_window_side(p, roi->width, roi->height);
    uint32_t b = nc_segment_block_side(win);
    uint32_t gw = (roi->width + b - 1) / b, gh = (roi->height + b - 1) / b;
    /* half-window in whole blocks, at least one */
    uint32_t rb = (win / 2 + b / 2) / b;
    if (rb < 1)
        rb = 1;
    uint32_t pol = p->polarity;
    /* Otsu with a given polarity needs no local statistics */
    if (pol == NC_SEGMENT_POLARITY_AUTO || p->binarise != NC_SEGMENT_BINARISE_OTSU) {
        block_integrals(seg, roi, b, gw, gh);
        block_stats(seg, roi, b, gw, gh, rb);
    }
    if (pol == NC_SEGMENT_POLARITY_AUTO)
        pol = detect_polarity(seg, roi, b, gw, gh, seg->mean);
    int light = pol == NC_SEGMENT_POLARITY_LIGHT_INK;
    if (p->binarise == NC_SEGMENT_BINARISE_OTSU) {
        int err = binarise_otsu(seg, roi, p, light);
        if (err < 0)
            return err;
    } else
        binarise_sauvola(seg, roi, p, b, gw, gh, light);
    *ret_polarity = pol;
    return 0;
}

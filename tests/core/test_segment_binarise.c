/* tests/core/test_segment_binarise.c — nc_segment_binarise_frame
 * (core/segment/segment_binarise.c: banded column sums, per-row block statistics,
 * byte-wide masks) against the rule of segment.h written out plainly, with
 * no integral image and libm's ceil / floor / fmin: the mask and the
 * polarity must be identical bit for bit, on rendered camera frames, noise,
 * flat and two-level images, every block side 1..16 and extreme parameters.
 *
 * The reference, per block of b x b pixels (b = window / 12 in 1..16):
 * the window is the blocks [i - rb, i + rb] x [j - rb, j + rb] clipped to
 * the grid (rb = max(1, (window / 2 + b / 2) / b)), its sums taken block by
 * block; m = sum / n, var = sq / n - m^2; AUTO polarity is the sign of the
 * third moment of p - (float)m over every 2nd pixel of each block (from its
 * first column) of every 2nd row, summed in float per row and in double
 * over rows; then with m read as 255 - m for light ink,
 * T = m (1 + k (sqrt(var) / 128 - 1)) and a pixel q (255 - p for light
 * ink) is ink when q < min(ceil(T), floor(m - c) + 1). */
#include "segment.h"
#include "dataset.h"
#include "streamgen_render.h"
#include "fixture.h"
#include "test.h"

#include <string.h>

typedef struct ref_grid {
    uint32_t b, gw, gh, rb;
    double *m, *var;            /* per block: window mean and variance */
} ref_grid;

static uint32_t ref_window(const nc_segment_params *p, uint32_t w, uint32_t h)
{
    if (p->window)
        return p->window;
    uint32_t side = ((w < h ? w : h) / 8) | 1;
    return side < 15 ? 15 : side > 255 ? 255 : side;
}

static int ref_stats(const nc_image *img, const nc_segment_params *p, ref_grid *g)
{
    const uint32_t w = img->width, h = img->height, win = ref_window(p, w, h);
    g->b = win / 12 < 1 ? 1 : win / 12 > 16 ? 16 : win / 12;
    g->gw = (w + g->b - 1) / g->b;
    g->gh = (h + g->b - 1) / g->b;
    g->rb = (win / 2 + g->b / 2) / g->b;
    if (g->rb < 1)
        g->rb = 1;
    size_t nb = (size_t)g->gw * g->gh;
    uint64_t *bs = calloc(nb, sizeof *bs), *bq = calloc(nb, sizeof *bq);
    g->m = malloc(nb * sizeof *g->m);
    g->var = malloc(nb * sizeof *g->var);
    if (!bs || !bq || !g->m || !g->var) {
        free(bs);
        free(bq);
        return -ENOMEM;
    }
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint32_t v = img->pixels[(size_t)y * img->stride + x];
            bs[(size_t)(y / g->b) * g->gw + x / g->b] += v;
            bq[(size_t)(y / g->b) * g->gw + x / g->b] += v * v;
        }
    for (uint32_t j = 0; j < g->gh; j++)
        for (uint32_t i = 0; i < g->gw; i++) {
            uint32_t i0 = i > g->rb ? i - g->rb : 0, j0 = j > g->rb ? j - g->rb : 0;
            uint32_t i1 = i + g->rb + 1 < g->gw ? i + g->rb + 1 : g->gw;
            uint32_t j1 = j + g->rb + 1 < g->gh ? j + g->rb + 1 : g->gh;
            uint64_t s = 0, q = 0;
            for (uint32_t jj = j0; jj < j1; jj++)
                for (uint32_t ii = i0; ii < i1; ii++) {
                    s += bs[(size_t)jj * g->gw + ii];
                    q += bq[(size_t)jj * g->gw + ii];
                }
            uint32_t px1 = i1 * g->b < w ? i1 * g->b : w, py1 = j1 * g->b < h ? j1 * g->b : h;
            double n = (double)(px1 - i0 * g->b) * (py1 - j0 * g->b);
            double m = (double)s / n;
            g->m[(size_t)j * g->gw + i] = m;
            g->var[(size_t)j * g->gw + i] = (double)q / n - m * m;
        }
    free(bs);
    free(bq);
    return 0;
}

static uint32_t ref_polarity(const nc_image *img, const ref_grid *g)
{
    double m3 = 0;
    for (uint32_t y = 0; y < img->height; y += 2) {
        const uint8_t *row = img->pixels + (size_t)y * img->stride;
        float acc = 0;
        for (uint32_t i = 0; i < g->gw; i++) {
            uint32_t xe = (i + 1) * g->b < img->width ? (i + 1) * g->b : img->width;
            float m = (float)g->m[(size_t)(y / g->b) * g->gw + i];
            for (uint32_t x = i * g->b; x < xe; x += 2) {
                float d = row[x] - m;
                acc += d * d * d;
            }
        }
        m3 += acc;
    }
    return m3 > 0 ? NC_SEGMENT_POLARITY_LIGHT_INK : NC_SEGMENT_POLARITY_DARK_INK;
}

/* Sauvola, or Otsu with the same contrast rule as segment_binarise.c. */
static void ref_mask(const nc_image *img, const nc_segment_params *p, const ref_grid *g,
                     int light, uint8_t *mask)
{
    const uint32_t w = img->width, h = img->height;
    if (p->binarise == NC_SEGMENT_BINARISE_OTSU) {
        uint64_t hist[256];
        uint8_t t;
        memset(mask, 0, (size_t)w * h);
        if (nc_image_histogram(img, hist) < 0 || nc_image_otsu_histogram(hist, &t) < 0)
            return;
        double n_lo = 0, s_lo = 0, n_hi = 0, s_hi = 0;
        for (int v = 0; v < 256; v++) {
            if (v <= t) { n_lo += hist[v]; s_lo += (double)hist[v] * v; }
            else        { n_hi += hist[v]; s_hi += (double)hist[v] * v; }
        }
        if (s_hi / n_hi - s_lo / n_lo < p->min_contrast)
            return;
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++) {
                uint8_t v = img->pixels[(size_t)y * img->stride + x];
                mask[(size_t)y * w + x] = (light ? v > t : v <= t) ? 255 : 0;
            }
        return;
    }
    const double k = p->sauvola_k, c = p->min_contrast;
    int *thr = malloc((size_t)g->gw * g->gh * sizeof *thr);
    if (!thr) {
        memset(mask, 0x77, (size_t)w * h);      /* fails the comparison */
        return;
    }
    for (size_t bi = 0; bi < (size_t)g->gw * g->gh; bi++) {
        double m = g->m[bi], var = g->var[bi];
        if (light)
            m = 255.0 - m;
        double T = m * (1.0 + k * (sqrt(var > 0 ? var : 0) / 128.0 - 1.0));
        double t = fmin(ceil(T), floor(m - c) + 1);
        thr[bi] = (int)(t < 0 ? 0 : t > 256 ? 256 : t);
    }
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint8_t v = img->pixels[(size_t)y * img->stride + x];
            int q = light ? 255 - v : v;
            mask[(size_t)y * w + x] = q < thr[(size_t)(y / g->b) * g->gw + x / g->b] ? 255 : 0;
        }
    free(thr);
}

/* One image, one parameter set: the library and the reference agree. */
static int compare(nc_segmenter *seg, const nc_image *img, const nc_segment_params *p,
                   const char *what)
{
    const uint32_t w = img->width, h = img->height;
    ref_grid g = { 0 };
    uint8_t *want = malloc((size_t)w * h);
    nc_image *got = NULL;
    int bad = 1;
    if (!want || nc_image_new(w, h, &got) < 0 || ref_stats(img, p, &g) < 0) {
        CHECK_MSG(0, "%s: out of memory", what);
        goto out;
    }
    uint32_t pol_want = p->polarity == NC_SEGMENT_POLARITY_AUTO ? ref_polarity(img, &g)
                                                               : p->polarity;
    ref_mask(img, p, &g, pol_want == NC_SEGMENT_POLARITY_LIGHT_INK, want);
    uint32_t pol = 99;
    int err = nc_segment_binarise_frame(seg, img, p, got, &pol);
    size_t diff = 0;
    if (!err)
        for (size_t i = 0; i < (size_t)w * h; i++)
            diff += got->pixels[i] != want[i];
    bad = err || pol != pol_want || diff;
    CHECK_MSG(!bad, "%s (%ux%u, window %u, k %g, c %u, %s): error %d, polarity %u want %u, "
              "%zu pixels differ", what, w, h, p->window, (double)p->sauvola_k, p->min_contrast,
              p->binarise == NC_SEGMENT_BINARISE_OTSU ? "Otsu" : "Sauvola", err, pol, pol_want,
              diff);
out:
    free(g.m);
    free(g.var);
    free(want);
    nc_image_free(got);
    return bad;
}

/* The parameter sets every image goes through: the defaults (AUTO), forced
 * polarities, block sides 1 (window 3, 15), 2, 5, 8 and 16 (windows up to
 * the cap, wider than small images), k near both ends, min_contrast 0 and
 * 255, and Otsu with both polarities. */
static uint32_t param_sets(nc_segment_params *ps)
{
    uint32_t n = 0;
    static const uint32_t windows[] = { 0, 3, 15, 25, 61, 101, 201, 1023 };
    for (uint32_t i = 0; i < sizeof windows / sizeof *windows; i++) {
        nc_segment_params_default(&ps[n]);
        ps[n++].window = windows[i];
    }
    nc_segment_params_default(&ps[n]);
    ps[n++].polarity = NC_SEGMENT_POLARITY_DARK_INK;
    nc_segment_params_default(&ps[n]);
    ps[n++].polarity = NC_SEGMENT_POLARITY_LIGHT_INK;
    nc_segment_params_default(&ps[n]);
    ps[n].window = 3;
    ps[n++].min_contrast = 0;
    nc_segment_params_default(&ps[n]);
    ps[n].sauvola_k = 0.999f;
    ps[n].min_contrast = 0;
    ps[n++].polarity = NC_SEGMENT_POLARITY_LIGHT_INK;
    nc_segment_params_default(&ps[n]);
    ps[n].sauvola_k = 0.001f;
    ps[n++].min_contrast = 255;
    nc_segment_params_default(&ps[n]);
    ps[n++].binarise = NC_SEGMENT_BINARISE_OTSU;
    nc_segment_params_default(&ps[n]);
    ps[n].binarise = NC_SEGMENT_BINARISE_OTSU;
    ps[n++].polarity = NC_SEGMENT_POLARITY_LIGHT_INK;
    return n;
}

static void compare_all(nc_segmenter *seg, const nc_image *img, const char *what,
                        uint32_t *failed)
{
    nc_segment_params ps[24];
    uint32_t n = param_sets(ps);
    for (uint32_t i = 0; i < n; i++)
        *failed += compare(seg, img, &ps[i], what) != 0;
}

/* Frames as the camera bench renders them (mixed polarity, 640x480 and
 * 1280x720), through one segmenter that also sees the smaller images
 * below, so its scratch is grown and reused. */
static void test_rendered(nc_segmenter *seg, uint32_t *failed)
{
    nc_dataset fx;
    if (nc_test_fixture(&fx) < 0) {
        fprintf(stderr, "no MNIST fixture: rendered frames skipped\n");
        return;
    }
    nc_render_params rp;
    nc_render_params_default(&rp);
    rp.polarity = NC_RENDER_MIXED;
    nc_render_source src = { fx.pixels, fx.labels, fx.count, fx.rows, fx.cols };
    uint64_t rng = 77;
    static const uint32_t sizes[][2] = { { 640, 480 }, { 640, 480 }, { 1280, 720 }, { 333, 217 } };
    for (uint32_t f = 0; f < sizeof sizes / sizeof *sizes; f++) {
        nc_image *frame = NULL;
        nc_render_truth t;
        if (nc_image_new(sizes[f][0], sizes[f][1], &frame) < 0 ||
            nc_render_frame(&rp, &src, &rng, frame, &t) < 0) {
            CHECK_MSG(0, "render frame %u", f);
            nc_image_free(frame);
            break;
        }
        char what[48];
        snprintf(what, sizeof what, "rendered frame %u", f);
        compare_all(seg, frame, what, failed);
        nc_image_free(frame);
    }
    nc_dataset_fini(&fx);
}

/* Synthetic images: noise, flat grey (and pure black / white), two levels
 * (the largest possible variance), gradients with specks, a view with
 * stride > width; sizes from 1x1 up. */
static void test_synthetic(nc_segmenter *seg, uint32_t *failed)
{
    nc_test_rng r = { 0xb1a5ull };
    for (int t = 0; t < 48; t++) {
        uint32_t w = 1 + (uint32_t)(nc_test_next(&r) % 260), h = 1 + (uint32_t)(nc_test_next(&r) % 190);
        if (t % 8 == 0) {
            w = 1 + (uint32_t)(nc_test_next(&r) % 5);
            h = 1 + (uint32_t)(nc_test_next(&r) % 5);
        }
        uint32_t pad = t % 2 ? 7 : 0;
        uint8_t *px = malloc((size_t)(w + pad) * h);
        REQUIRE(px);
        nc_image img = { w, h, w + pad, px };
        int kind = t % 6;
        uint8_t level = (uint8_t)(nc_test_next(&r) % 3 == 0 ? 0 : nc_test_next(&r) % 2 ? 255 : 128);
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w + pad; x++) {
                uint8_t v;
                switch (kind) {
                case 0: v = (uint8_t)nc_test_next(&r); break;
                case 1: v = level; break;
                case 2: v = (x / 3 + y / 2) % 2 ? 0 : 255; break;
                case 3: v = (uint8_t)(x * 200 / (w + pad) + (nc_test_next(&r) % 50 == 0 ? 50 : 0)); break;
                case 4: v = nc_test_next(&r) % 10 == 0 ? (uint8_t)(nc_test_next(&r) % 60)
                                                      : (uint8_t)(190 + nc_test_next(&r) % 60); break;
                default: v = nc_test_next(&r) % 10 == 0 ? (uint8_t)(200 + nc_test_next(&r) % 56)
                                                       : (uint8_t)(nc_test_next(&r) % 60); break;
                }
                px[(size_t)y * (w + pad) + x] = v;
            }
        char what[48];
        snprintf(what, sizeof what, "synthetic %d (kind %d)", t, kind);
        compare_all(seg, &img, what, failed);
        free(px);
    }
}

int main(void)
{
    nc_segmenter *seg = NULL;
    if (nc_segmenter_new(&seg) < 0)
        return 1;
    uint32_t failed = 0;
    test_rendered(seg, &failed);
    test_synthetic(seg, &failed);
    CHECK_INT_EQ(failed, 0);
    nc_segmenter_free(seg);
    return nc_test_finish();
}

/* tests/core/test_image.c — core/image: basics, resampling, Otsu, connected
 * components and the two network preprocessings.
 *
 * Hand-checked cases first, then edge cases (1x1, empty, absurd sizes, NULL),
 * then, when the committed MNIST fixture is there, a check that NC_PREP_MNIST
 * leaves already-normalised MNIST digits (nearly) as they are.
 *
 * Over 800 lines on purpose: hand-checked cases of the image module's files,
 * which share the drawing and comparison helpers at the top. */
#include "image.h"
#include "fileio.h"
#include "test.h"

#include <math.h>
#include <string.h>
#include <zlib.h>

/* ---- helpers ----------------------------------------------------------- */

static nc_image *image_or_null(uint32_t w, uint32_t h)
{
    nc_image *img = NULL;
    if (nc_image_new(w, h, &img) < 0)
        return NULL;
    return img;
}

static void fill_rect(nc_image *img, uint32_t x, uint32_t y, uint32_t w,
                      uint32_t h, uint8_t v)
{
    for (uint32_t j = y; j < y + h; j++)
        memset(img->pixels + (size_t)j * img->stride + x, v, w);
}

/* Intensity-weighted centre of mass of a side x side float field. */
static void field_com(const float *f, uint32_t side, double *cx, double *cy)
{
    double s = 0, sx = 0, sy = 0;
    for (uint32_t y = 0; y < side; y++)
        for (uint32_t x = 0; x < side; x++) {
            double v = f[(size_t)y * side + x];
            s += v;
            sx += v * x;
            sy += v * y;
        }
    *cx = s > 0 ? sx / s : -1;
    *cy = s > 0 ? sy / s : -1;
}

/* Bounding box of values > t in a side x side field; width 0 if none. */
static nc_rect field_bbox(const float *f, uint32_t side, float t)
{
    uint32_t x0 = side, y0 = side, x1 = 0, y1 = 0;
    for (uint32_t y = 0; y < side; y++)
        for (uint32_t x = 0; x < side; x++)
            if (f[(size_t)y * side + x] > t) {
                if (x < x0) x0 = x;
                if (x > x1) x1 = x;
                if (y < y0) y0 = y;
                if (y > y1) y1 = y;
            }
    if (x0 == side)
        return (nc_rect){ 0, 0, 0, 0 };
    return (nc_rect){ x0, y0, x1 - x0 + 1, y1 - y0 + 1 };
}

/* Largest |a[i] - b[i]| over n values. */
static double max_abs_diff(const float *a, const float *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(a[i] - b[i]));
    return worst;
}

static double mean_f(const float *v, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return s / (double)n;
}

/* ---- image basics ------------------------------------------------------ */

static void test_new_view_crop(void)
{
    nc_image *img = NULL;
    CHECK_INT_EQ(nc_image_new(0, 5, &img), -EINVAL);
    CHECK_INT_EQ(nc_image_new(5, 0, &img), -EINVAL);
    CHECK_INT_EQ(nc_image_new(NC_IMAGE_MAX_DIM + 1, 5, &img), -ERANGE);
    CHECK_INT_EQ(nc_image_new(5, UINT32_MAX, &img), -ERANGE);
    CHECK_INT_EQ(nc_image_new(5, 5, NULL), -EINVAL);
    CHECK(img == NULL);
    nc_image_free(NULL);

    /* REQUIRE evaluates its condition twice: no side effects inside */
    int rc = nc_image_new(7, 4, &img);
    REQUIRE(rc == 0);
    CHECK_INT_EQ(img->stride, 7);
    int all_zero = 1;
    for (int i = 0; i < 28; i++)
        all_zero &= img->pixels[i] == 0;
    CHECK(all_zero);

    /* crop is a view: writes show through */
    nc_image v;
    CHECK_INT_EQ(nc_image_crop(img, (nc_rect){ 2, 1, 3, 2 }, &v), 0);
    CHECK_INT_EQ(v.width, 3);
    CHECK_INT_EQ(v.stride, 7);
    v.pixels[v.stride + 2] = 9;
    CHECK_INT_EQ(img->pixels[2 * 7 + 4], 9);
    CHECK_INT_EQ(nc_image_crop(img, (nc_rect){ 5, 0, 3, 1 }, &v), -ERANGE);
    CHECK_INT_EQ(nc_image_crop(img, (nc_rect){ 0, 0, 0, 1 }, &v), -ERANGE);
    CHECK_INT_EQ(nc_image_crop(img, (nc_rect){ 1, 1, UINT32_MAX, 1 }, &v), -ERANGE);

    /* dup compacts the stride */
    nc_image *copy = NULL;
    CHECK_INT_EQ(nc_image_crop(img, (nc_rect){ 4, 2, 1, 1 }, &v), 0);
    CHECK_INT_EQ(nc_image_dup(&v, &copy), 0);
    if (copy) {
        CHECK_INT_EQ(copy->width, 1);
        CHECK_INT_EQ(copy->pixels[0], 9);
    }
    nc_image_free(copy);

    /* views validate */
    uint8_t buf[12] = { 0 };
    CHECK_INT_EQ(nc_image_view(buf, 4, 3, 0, &v), 0);
    CHECK_INT_EQ(v.stride, 4);
    CHECK_INT_EQ(nc_image_view(buf, 4, 3, 3, &v), -EINVAL);
    CHECK_INT_EQ(nc_image_view(NULL, 4, 3, 0, &v), -EINVAL);
    CHECK_INT_EQ(nc_image_view(buf, 4, 3, 0, NULL), -EINVAL);
    CHECK_INT_EQ(nc_image_view(buf, 20000, 1, 0, &v), -ERANGE);

    /* invert */
    CHECK_INT_EQ(nc_image_invert(img), 0);
    CHECK_INT_EQ(img->pixels[0], 255);
    CHECK_INT_EQ(img->pixels[2 * 7 + 4], 246);
    CHECK_INT_EQ(nc_image_invert(NULL), -EINVAL);
    nc_image_free(img);
}

/* A 3x3 blob at columns 4..6, rows 2..4 of a 10x8 image. */
static void test_bbox_centroid(void)
{
    nc_image *img = image_or_null(10, 8);
    REQUIRE(img);
    nc_rect r;
    double cx, cy;
    CHECK_INT_EQ(nc_image_bbox(img, 0, &r), -ENOENT);
    CHECK_INT_EQ(nc_image_centroid(img, &cx, &cy), -ENOENT);

    fill_rect(img, 4, 2, 3, 3, 200);
    CHECK_INT_EQ(nc_image_bbox(img, 0, &r), 0);
    CHECK_INT_EQ(r.x, 4);
    CHECK_INT_EQ(r.y, 2);
    CHECK_INT_EQ(r.width, 3);
    CHECK_INT_EQ(r.height, 3);
    CHECK_INT_EQ(nc_image_centroid(img, &cx, &cy), 0);
    CHECK_NEAR(cx, 5.0, 1e-12, 0);
    CHECK_NEAR(cy, 3.0, 1e-12, 0);
    /* threshold is strict: 200 is not > 200 */
    CHECK_INT_EQ(nc_image_bbox(img, 200, &r), -ENOENT);

    /* weight one corner: (4*200*8 + 6*600) / 2200 in x */
    img->pixels[2 * 10 + 6] = 255;      /* was 200 */
    CHECK_INT_EQ(nc_image_centroid(img, &cx, &cy), 0);
    CHECK_NEAR(cx, (200.0 * (3 * 4 + 3 * 5 + 2 * 6) + 255 * 6) / (200.0 * 8 + 255), 1e-12, 0);
    CHECK_NEAR(cy, (200.0 * (2 * 2 + 3 * 3 + 3 * 4) + 255 * 2) / (200.0 * 8 + 255), 1e-12, 0);

    CHECK_INT_EQ(nc_image_bbox(NULL, 0, &r), -EINVAL);
    CHECK_INT_EQ(nc_image_bbox(img, 0, NULL), -EINVAL);
    CHECK_INT_EQ(nc_image_centroid(img, NULL, &cy), -EINVAL);
    nc_image_free(img);

    /* 1x1 */
    uint8_t one = 255;
    nc_image v;
    int rc = nc_image_view(&one, 1, 1, 0, &v);
    REQUIRE(rc == 0);
    CHECK_INT_EQ(nc_image_bbox(&v, 0, &r), 0);
    CHECK_INT_EQ(r.width * r.height, 1);
    CHECK_INT_EQ(nc_image_centroid(&v, &cx, &cy), 0);
    CHECK_NEAR(cx + cy, 0.0, 0, 0);

    /* absurd dims are refused before any pixel is read */
    nc_image huge = { 20000, 10, 20000, &one };
    CHECK_INT_EQ(nc_image_bbox(&huge, 0, &r), -ERANGE);
    nc_image narrow = { 10, 10, 5, &one };
    CHECK_INT_EQ(nc_image_bbox(&narrow, 0, &r), -EINVAL);
}

/* ---- resampling -------------------------------------------------------- */

static void test_resample_exact(void)
{
    nc_test_rng rng = { 12345 };
    enum { W = 13, H = 7 };
    float in[W * H], out[W * H];
    for (int i = 0; i < W * H; i++)
        in[i] = (float)nc_test_uniform(&rng);
    CHECK_INT_EQ(nc_image_resample(in, W, H, out, W, H), 0);
    CHECK(memcmp(in, out, sizeof(in)) == 0);

    /* hand-checked 1-D cases */
    float a4[4] = { 1, 2, 3, 4 }, o2[2];
    CHECK_INT_EQ(nc_image_resample(a4, 4, 1, o2, 2, 1), 0);
    CHECK_NEAR(o2[0], 1.5, 1e-6, 0);
    CHECK_NEAR(o2[1], 3.5, 1e-6, 0);
    /* 3 -> 2: s = 1.5, out0 = (0 + 0.5*3)/1.5, out1 = (0.5*3 + 6)/1.5 */
    float a3[3] = { 0, 3, 6 };
    CHECK_INT_EQ(nc_image_resample(a3, 1, 3, o2, 1, 2), 0);
    CHECK_NEAR(o2[0], 1.0, 1e-6, 0);
    CHECK_NEAR(o2[1], 5.0, 1e-6, 0);
    /* 2 -> 4 bilinear, centres aligned: samples at -0.25, 0.25, 0.75, 1.25 */
    float b2[2] = { 0, 1 }, o4[4];
    CHECK_INT_EQ(nc_image_resample(b2, 2, 1, o4, 4, 1), 0);
    CHECK_NEAR(o4[0], 0.0, 1e-6, 0);
    CHECK_NEAR(o4[1], 0.25, 1e-6, 0);
    CHECK_NEAR(o4[2], 0.75, 1e-6, 0);
    CHECK_NEAR(o4[3], 1.0, 1e-6, 0);

    /* 1x1 up to anything is constant; anything down to 1x1 is the mean */
    float one = 0.625f, o35[35];
    CHECK_INT_EQ(nc_image_resample(&one, 1, 1, o35, 7, 5), 0);
    int flat = 1;
    for (int i = 0; i < 35; i++)
        flat &= o35[i] == 0.625f;
    CHECK(flat);
    float m;
    CHECK_INT_EQ(nc_image_resample(in, W, H, &m, 1, 1), 0);
    CHECK_NEAR(m, mean_f(in, W * H), 1e-6, 0);
}

static void test_resample_mean(void)
{
    nc_test_rng rng = { 777 };
    static float in[100 * 60], out[100 * 64];
    for (size_t i = 0; i < NC_ARRAY_LEN(in); i++)
        in[i] = (float)nc_test_uniform(&rng);
    double mean_in = mean_f(in, NC_ARRAY_LEN(in));

    /* shrinking, integer and awkward ratios, both axes and mixed: area
     * averaging keeps the mean up to round-off */
    static const uint32_t shapes[][2] = { { 20, 20 }, { 37, 23 }, { 1, 60 },
                                          { 99, 59 }, { 3, 1 } };
    for (size_t k = 0; k < NC_ARRAY_LEN(shapes); k++) {
        uint32_t w = shapes[k][0], h = shapes[k][1];
        CHECK_INT_EQ(nc_image_resample(in, 100, 60, out, w, h), 0);
        CHECK_NEAR(mean_f(out, (size_t)w * h), mean_in, 1e-5, 0);
    }
    /* growing one axis while shrinking the other, and growing both:
     * bilinear keeps the mean only roughly (edges weigh less) */
    CHECK_INT_EQ(nc_image_resample(in, 100, 60, out, 50, 64), 0);
    CHECK_NEAR(mean_f(out, 50 * 64), mean_in, 0.02, 0);
    CHECK_INT_EQ(nc_image_resample(in, 10, 6, out, 64, 64), 0);
    CHECK_NEAR(mean_f(out, 64 * 64), mean_f(in, 60), 0.05, 0);

    /* extreme aspect: a 1000x1 line into 10x10 */
    static float line[1000];
    for (int i = 0; i < 1000; i++)
        line[i] = i < 500 ? 0.0f : 1.0f;
    CHECK_INT_EQ(nc_image_resample(line, 1000, 1, out, 10, 10), 0);
    CHECK_NEAR(out[0], 0.0, 1e-6, 0);
    CHECK_NEAR(out[9 * 10 + 9], 1.0, 1e-6, 0);
    CHECK_NEAR(mean_f(out, 100), 0.5, 1e-6, 0);

    /* 8-bit input: lut NULL means p / 255 */
    nc_image *img = image_or_null(40, 30);
    REQUIRE(img);
    fill_rect(img, 0, 0, 20, 30, 255);
    CHECK_INT_EQ(nc_image_resample_u8(img, NULL, out, 4, 3), 0);
    CHECK_NEAR(out[0], 1.0, 1e-6, 0);
    CHECK_NEAR(out[3], 0.0, 1e-6, 0);
    CHECK_NEAR(mean_f(out, 12), 0.5, 1e-6, 0);
    float lut[256];
    for (int v = 0; v < 256; v++)
        lut[v] = v ? 2.0f : -1.0f;
    CHECK_INT_EQ(nc_image_resample_u8(img, lut, out, 2, 1), 0);
    CHECK_NEAR(out[0], 2.0, 1e-6, 0);
    CHECK_NEAR(out[1], -1.0, 1e-6, 0);

    /* bad arguments */
    CHECK_INT_EQ(nc_image_resample(NULL, 4, 4, out, 2, 2), -EINVAL);
    CHECK_INT_EQ(nc_image_resample(in, 4, 4, NULL, 2, 2), -EINVAL);
    CHECK_INT_EQ(nc_image_resample(in, 0, 4, out, 2, 2), -EINVAL);
    CHECK_INT_EQ(nc_image_resample(in, 4, 4, out, 2, 0), -EINVAL);
    CHECK_INT_EQ(nc_image_resample(in, 4, 4, out, NC_IMAGE_MAX_DIM + 1, 1), -ERANGE);
    CHECK_INT_EQ(nc_image_resample(in, 4, 100000, out, 2, 2), -ERANGE);
    CHECK_INT_EQ(nc_image_resample_u8(NULL, NULL, out, 2, 2), -EINVAL);
    nc_image_free(img);
}

/* ---- Otsu and binarisation --------------------------------------------- */

static void test_otsu(void)
{
    /* two bumps, around 40 and around 200, the dark one much larger */
    uint64_t hist[256] = { 0 };
    for (int v = 0; v < 256; v++) {
        double a = (v - 40) / 12.0, b = (v - 200) / 15.0;
        hist[v] = (uint64_t)(5000 * exp(-a * a / 2) + 1200 * exp(-b * b / 2));
    }
    uint8_t t = 0;
    CHECK_INT_EQ(nc_image_otsu_histogram(hist, &t), 0);
    CHECK_MSG(t > 80 && t < 160, "t = %d", t);

    /* two clean levels: half way */
    uint64_t two[256] = { 0 };
    two[0] = 900;
    two[255] = 100;
    CHECK_INT_EQ(nc_image_otsu_histogram(two, &t), 0);
    CHECK_INT_EQ(t, 127);
    two[100] = 0;
    two[0] = 0;
    two[10] = 5;
    two[20] = 5;
    two[255] = 0;
    /* tied run t = 10..19; its middle 14 makes 15 and up ink */
    CHECK_INT_EQ(nc_image_otsu_histogram(two, &t), 0);
    CHECK_INT_EQ(t, 14);

    /* one level: nothing to split */
    uint64_t flat[256] = { 0 };
    flat[77] = 10;
    uint8_t untouched = 42;
    CHECK_INT_EQ(nc_image_otsu_histogram(flat, &untouched), -ENOENT);
    CHECK_INT_EQ(untouched, 42);
    CHECK_INT_EQ(nc_image_otsu_histogram(NULL, &t), -EINVAL);

    /* on an image: noisy paper at ~60, noisy ink at ~190 */
    nc_test_rng rng = { 99 };
    nc_image *img = image_or_null(64, 48);
    REQUIRE(img);
    for (uint32_t y = 0; y < 48; y++)
        for (uint32_t x = 0; x < 64; x++) {
            int ink = x > 20 && x < 30 && y > 5 && y < 40;
            int v = (ink ? 190 : 60) + (int)(nc_test_uniform(&rng) * 40) - 20;
            img->pixels[y * 64 + x] = (uint8_t)v;
        }
    CHECK_INT_EQ(nc_image_otsu_threshold(img, &t), 0);
    CHECK_MSG(t >= 80 && t < 170, "t = %d", t);

    /* binarise in place at Otsu's threshold recovers the ink rectangle */
    CHECK_INT_EQ(nc_image_binarise(img, t, img), 0);
    nc_rect r;
    CHECK_INT_EQ(nc_image_bbox(img, 0, &r), 0);
    CHECK_INT_EQ(r.x, 21);
    CHECK_INT_EQ(r.y, 6);
    CHECK_INT_EQ(r.width, 9);
    CHECK_INT_EQ(r.height, 34);
    int binary = 1;
    for (int i = 0; i < 64 * 48; i++)
        binary &= img->pixels[i] == 0 || img->pixels[i] == 255;
    CHECK(binary);
    nc_image *small = image_or_null(3, 3);
    CHECK_INT_EQ(nc_image_binarise(img, t, small), -EINVAL);
    nc_image_free(small);
    nc_image_free(img);
}

/* ---- connected components ---------------------------------------------- */

/* Build an image from ASCII art: '#' is ink. */
static nc_image *from_art(const char *const *rows, uint32_t h)
{
    uint32_t w = (uint32_t)strlen(rows[0]);
    nc_image *img = image_or_null(w, h);
    if (!img)
        return NULL;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++)
            img->pixels[y * w + x] = rows[y][x] == '#' ? 255 : 0;
    return img;
}

static uint32_t count_components(const char *const *rows, uint32_t h,
                                 nc_component **comps)
{
    nc_image *img = from_art(rows, h);
    uint32_t n = UINT32_MAX;
    if (!img || nc_image_components(img, 100, NULL, comps, &n) < 0)
        n = UINT32_MAX;
    nc_image_free(img);
    return n;
}

static void test_components_patterns(void)
{
    nc_component *c = NULL;

    static const char *const two_blobs[] = {
        "........",
        ".##.....",
        ".##...#.",
        "......##",
        "......#.",
    };
    CHECK_INT_EQ(count_components(two_blobs, 5, &c), 2);
    if (c) {
        CHECK_INT_EQ(c[0].area, 4);
        CHECK_INT_EQ(c[0].box.x, 1);
        CHECK_INT_EQ(c[0].box.y, 1);
        CHECK_INT_EQ(c[0].box.width, 2);
        CHECK_NEAR(c[0].cx, 1.5, 1e-12, 0);
        CHECK_NEAR(c[0].cy, 1.5, 1e-12, 0);
        CHECK_INT_EQ(c[1].area, 4);
        CHECK_INT_EQ(c[1].box.x, 6);
        CHECK_INT_EQ(c[1].box.y, 2);
        CHECK_INT_EQ(c[1].box.width, 2);
        CHECK_INT_EQ(c[1].box.height, 3);
        CHECK_NEAR(c[1].cx, 6.25, 1e-12, 0);
        CHECK_NEAR(c[1].cy, 3.0, 1e-12, 0);
    }
    NC_FREE(c);

    /* a diagonal joined only at corners, both directions */
    static const char *const diag[] = {
        "#.....#",
        ".#...#.",
        "..#.#..",
        "...#...",
    };
    CHECK_INT_EQ(count_components(diag, 4, &c), 1);
    if (c)
        CHECK_INT_EQ(c[0].area, 7);
    NC_FREE(c);

    /* a ring with a hole: one component; the hole is background */
    static const char *const ring[] = {
        ".####.",
        "#....#",
        "#.##.#",
        "#....#",
        ".####.",
    };
    CHECK_INT_EQ(count_components(ring, 5, &c), 2);
    if (c) {
        CHECK_INT_EQ(c[0].area, 14);
        CHECK_INT_EQ(c[0].box.width, 6);
        CHECK_INT_EQ(c[0].box.height, 5);
        CHECK_NEAR(c[0].cx, 2.5, 1e-12, 0);
        CHECK_NEAR(c[0].cy, 2.0, 1e-12, 0);
        CHECK_INT_EQ(c[1].area, 2);       /* the island in the hole */
    }
    NC_FREE(c);

    /* two squares touching at one corner; a 'U' whose arms meet late, so
     * two provisional sets must merge */
    static const char *const corner[] = {
        "##...",
        "##...",
        "..##.",
        "..##.",
    };
    CHECK_INT_EQ(count_components(corner, 4, &c), 1);
    NC_FREE(c);
    static const char *const u_shape[] = {
        "#...#..#",
        "#...#..#",
        "#...#..#",
        "#####.##",
    };
    CHECK_INT_EQ(count_components(u_shape, 4, &c), 2);
    if (c) {
        CHECK_INT_EQ(c[0].area, 11);
        CHECK_INT_EQ(c[1].area, 5);
    }
    NC_FREE(c);

    /* labels: numbered in raster order of first pixel */
    nc_image *img = from_art(two_blobs, 5);
    REQUIRE(img);
    uint32_t labels[40], n = 0;
    CHECK_INT_EQ(nc_image_components(img, 10, labels, &c, &n), 0);
    CHECK_INT_EQ(labels[0], 0);
    CHECK_INT_EQ(labels[1 * 8 + 1], 1);
    CHECK_INT_EQ(labels[2 * 8 + 6], 2);
    CHECK_INT_EQ(labels[4 * 8 + 6], 2);
    NC_FREE(c);

    /* caps, errors, empty */
    uint32_t kept = 7;
    CHECK_INT_EQ(nc_image_components(img, 1, NULL, &c, &kept), -ERANGE);
    CHECK_INT_EQ(kept, 7);
    CHECK(c == NULL);
    CHECK_INT_EQ(nc_image_components(img, NC_IMAGE_MAX_COMPONENTS + 1, NULL, &c, &n), -ERANGE);
    CHECK_INT_EQ(nc_image_components(NULL, 10, NULL, &c, &n), -EINVAL);
    CHECK_INT_EQ(nc_image_components(img, 10, NULL, NULL, &n), -EINVAL);
    memset(img->pixels, 0, 40);
    CHECK_INT_EQ(nc_image_components(img, 10, NULL, &c, &n), 0);
    CHECK_INT_EQ(n, 0);
    CHECK(c == NULL);
    nc_image_free(img);
}

/* Whole-image blobs: no recursion, so neither overflows the stack. */
static void test_components_huge(void)
{
    enum { N = 2000 };
    nc_image *img = image_or_null(N, N);
    REQUIRE(img);
    memset(img->pixels, 255, (size_t)N * N);
    nc_component *c = NULL;
    uint32_t n = 0;
    CHECK_INT_EQ(nc_image_components(img, 4, NULL, &c, &n), 0);
    CHECK_INT_EQ(n, 1);
    if (c) {
        CHECK_INT_EQ(c[0].area, N * N);
        CHECK_INT_EQ(c[0].box.width, N);
        CHECK_NEAR(c[0].cx, (N - 1) / 2.0, 1e-9, 0);
    }
    NC_FREE(c);

    /* a serpentine: one-pixel columns joined alternately at top and bottom,
     * one path 2 million pixels long, merged from many provisional sets */
    memset(img->pixels, 0, (size_t)N * N);
    for (uint32_t x = 0; x < N; x += 2) {
        for (uint32_t y = 0; y < N; y++)
            img->pixels[(size_t)y * N + x] = 255;
        if (x + 1 < N)
            img->pixels[(size_t)((x / 2) % 2 ? 0 : N - 1) * N + x + 1] = 255;
    }
    CHECK_INT_EQ(nc_image_components(img, 4, NULL, &c, &n), 0);
    CHECK_INT_EQ(n, 1);
    NC_FREE(c);

    /* a checkerboard is one component under 8-connectivity */
    for (uint32_t y = 0; y < N; y++)
        for (uint32_t x = 0; x < N; x++)
            img->pixels[(size_t)y * N + x] = (x + y) % 2 ? 255 : 0;
    CHECK_INT_EQ(nc_image_components(img, 4, NULL, &c, &n), 0);
    CHECK_INT_EQ(n, 1);
    if (c)
        CHECK_INT_EQ(c[0].area, N * N / 2);
    NC_FREE(c);
    nc_image_free(img);
}

/* ---- network input ----------------------------------------------------- */

static void test_prep_args(void)
{
    nc_prep p = NC_PREP_MNIST_28;
    CHECK_INT_EQ(nc_prep_out_len(&p), 784);
    p.pad = 2;
    CHECK_INT_EQ(nc_prep_out_len(&p), 32 * 32);
    CHECK_INT_EQ(nc_prep_out_len(NULL), 0);
    nc_prep cnn = NC_PREP_CNN_29, neo = NC_PREP_NEOCOG_65;
    CHECK_INT_EQ(nc_prep_out_len(&cnn), 29 * 29);
    CHECK_INT_EQ(nc_prep_out_len(&neo), 65 * 65);
    CHECK_INT_EQ(nc_prep_check(&cnn), 0);
    CHECK_INT_EQ(nc_prep_check(&neo), 0);

    nc_image *img = image_or_null(30, 30);
    REQUIRE(img);
    fill_rect(img, 10, 5, 4, 20, 255);
    static float out[NC_PREP_MAX_SIZE * 4];
    nc_prep bad;
    CHECK_INT_EQ(nc_prep_apply(NULL, &cnn, out), -EINVAL);
    CHECK_INT_EQ(nc_prep_apply(img, NULL, out), -EINVAL);
    CHECK_INT_EQ(nc_prep_apply(img, &cnn, NULL), -EINVAL);
    bad = cnn; bad.kind = NC_PREP_LINE + 1;
    CHECK_INT_EQ(nc_prep_apply(img, &bad, out), -EINVAL);
    bad = cnn; bad.size = 0;
    CHECK_INT_EQ(nc_prep_apply(img, &bad, out), -EINVAL);
    bad = cnn; bad.box = 0;
    CHECK_INT_EQ(nc_prep_apply(img, &bad, out), -EINVAL);
    bad = cnn; bad.size = NC_PREP_MAX_SIZE + 1;
    CHECK_INT_EQ(nc_prep_apply(img, &bad, out), -ERANGE);
    bad = cnn; bad.box = 30;
    CHECK_INT_EQ(nc_prep_apply(img, &bad, out), -ERANGE);
    bad = cnn; bad.pad = NC_PREP_MAX_PAD + 1;
    CHECK_INT_EQ(nc_prep_apply(img, &bad, out), -ERANGE);
    bad = cnn; bad.invert = 2;
    CHECK_INT_EQ(nc_prep_apply(img, &bad, out), -EINVAL);
    bad = cnn; bad.threshold = 1.5f;
    CHECK_INT_EQ(nc_prep_apply(img, &bad, out), -EINVAL);
    bad = cnn; bad.threshold = NAN;
    CHECK_INT_EQ(nc_prep_apply(img, &bad, out), -EINVAL);
    bad = neo; bad.size = 4; bad.box = 4;
    CHECK_INT_EQ(nc_prep_apply(img, &bad, out), -ERANGE);
    nc_image huge = { 17000, 4, 17000, img->pixels };
    CHECK_INT_EQ(nc_prep_apply(&huge, &cnn, out), -ERANGE);

    /* no ink: -ENOENT, out untouched */
    memset(img->pixels, 0, 900);
    out[0] = 123.0f;
    CHECK_INT_EQ(nc_prep_apply(img, &cnn, out), -ENOENT);
    CHECK_INT_EQ(nc_prep_apply(img, &neo, out), -ENOENT);
    bad = cnn; bad.threshold = -1;      /* Otsu on a flat image */
    CHECK_INT_EQ(nc_prep_apply(img, &bad, out), -ENOENT);
    /* full ink at threshold 1 is no ink either: nothing is > 255 */
    memset(img->pixels, 255, 900);
    bad = cnn; bad.threshold = 1.0f;
    CHECK_INT_EQ(nc_prep_apply(img, &bad, out), -ENOENT);
    CHECK(out[0] == 123.0f);
    nc_image_free(img);
}

/* A solid 40x80 rectangle: MNIST fits it to 10x20, NEOCOG to 20x40. */
static void test_prep_rectangle(void)
{
    nc_image *img = image_or_null(200, 120);
    REQUIRE(img);
    fill_rect(img, 30, 20, 40, 80, 255);
    float out[65 * 65];
    double cx, cy;

    nc_prep p = NC_PREP_MNIST_28;
    CHECK_INT_EQ(nc_prep_apply(img, &p, out), 0);
    nc_rect r = field_bbox(out, 28, 0.5f);
    CHECK_INT_EQ(r.width, 10);
    CHECK_INT_EQ(r.height, 20);
    CHECK_NEAR(mean_f(out, 784) * 784, 200.0, 1e-3, 0);
    field_com(out, 28, &cx, &cy);
    CHECK_NEAR(cx, 14.0, 0.5, 0);
    CHECK_NEAR(cy, 14.0, 0.5, 0);
    /* CoM 4.5 -> shift round(9.5) = 10; 9.5 -> round(4.5) = 5 */
    CHECK_INT_EQ(r.x, 10);
    CHECK_INT_EQ(r.y, 5);

    /* pad: the same field inside a zero border */
    float padded[32 * 32];
    p.pad = 2;
    CHECK_INT_EQ(nc_prep_apply(img, &p, padded), 0);
    int same = 1;
    for (uint32_t y = 0; y < 32; y++)
        for (uint32_t x = 0; x < 32; x++) {
            float want = (x >= 2 && x < 30 && y >= 2 && y < 30)
                         ? out[(y - 2) * 28 + (x - 2)] : 0.0f;
            same &= padded[y * 32 + x] == want;
        }
    CHECK(same);

    /* NEOCOG: 80 tall -> 40, 40 wide -> 20, box at ((65-20)/2, (65-40)/2) */
    nc_prep n = NC_PREP_NEOCOG_65;
    CHECK_INT_EQ(nc_prep_apply(img, &n, out), 0);
    r = field_bbox(out, 65, 0.5f);
    CHECK_INT_EQ(r.x, 22);
    CHECK_INT_EQ(r.y, 12);
    CHECK_INT_EQ(r.width, 20);
    CHECK_INT_EQ(r.height, 40);
    int binary = 1;
    for (int i = 0; i < 65 * 65; i++)
        binary &= out[i] == 0.0f || out[i] == 1.0f;
    CHECK(binary);
    CHECK_NEAR(mean_f(out, 65 * 65) * 65 * 65, 800.0, 1e-6, 0);

    /* a wide bar: width capped at 61, height follows (50 * 61 / 300 = 10) */
    memset(img->pixels, 0, 200 * 120);
    fill_rect(img, 0, 30, 200, 33, 255);
    CHECK_INT_EQ(nc_prep_apply(img, &n, out), 0);
    r = field_bbox(out, 65, 0.5f);
    CHECK_INT_EQ(r.width, 61);
    CHECK_INT_EQ(r.height, 10);
    CHECK_INT_EQ(r.x, 2);
    /* and the MNIST fit keeps the aspect: 200x33 -> 20x3 */
    CHECK_INT_EQ(nc_prep_apply(img, &p, padded), 0);
    r = field_bbox(padded, 32, 0.5f);
    CHECK_INT_EQ(r.width, 20);
    CHECK_INT_EQ(r.height, 3);
    nc_image_free(img);
}

/* A lopsided "7": heavy stem, thin bar, so the centre of mass is far from
 * the bounding box centre; it must still land within 0.5 px of (14, 14). */
static void test_prep_com(void)
{
    nc_image *img = image_or_null(60, 90);
    REQUIRE(img);
    fill_rect(img, 10, 10, 40, 4, 180);       /* top bar */
    fill_rect(img, 38, 14, 12, 70, 255);      /* heavy stem on the right */
    fill_rect(img, 11, 14, 2, 2, 90);         /* a faint serif */
    float out[28 * 28], out29[29 * 29];
    nc_prep p = NC_PREP_MNIST_28;
    CHECK_INT_EQ(nc_prep_apply(img, &p, out), 0);
    double cx, cy;
    field_com(out, 28, &cx, &cy);
    CHECK_NEAR(cx, 14.0, 0.5, 0);
    CHECK_NEAR(cy, 14.0, 0.5, 0);
    /* the crop's box is 20 tall, and its centre is well left of 14 */
    nc_rect r = field_bbox(out, 28, 0.0f);
    CHECK_INT_EQ(r.height, 20);
    CHECK(r.x + r.width / 2.0 < 12.5);

    /* the CNN's 29x29 is the 28x28 layout plus a zero column and row */
    nc_prep cnn = NC_PREP_CNN_29;
    CHECK_INT_EQ(nc_prep_apply(img, &cnn, out29), 0);
    int same = 1;
    for (uint32_t y = 0; y < 29; y++)
        for (uint32_t x = 0; x < 29; x++)
            same &= out29[y * 29 + x] == (x < 28 && y < 28 ? out[y * 28 + x] : 0.0f);
    CHECK(same);

    /* a 1x1 digit grows to a 20x20 block, still centred */
    nc_image *dot = image_or_null(5, 5);
    REQUIRE(dot);
    dot->pixels[12] = 255;
    CHECK_INT_EQ(nc_prep_apply(dot, &p, out), 0);
    r = field_bbox(out, 28, 0.5f);
    CHECK_INT_EQ(r.width, 20);
    field_com(out, 28, &cx, &cy);
    CHECK_NEAR(cx, 14.0, 0.5, 0);
    nc_prep n = NC_PREP_NEOCOG_65;
    float out65[65 * 65];
    CHECK_INT_EQ(nc_prep_apply(dot, &n, out65), 0);
    r = field_bbox(out65, 65, 0.5f);
    CHECK_INT_EQ(r.width, 40);
    CHECK_INT_EQ(r.height, 40);
    nc_image_free(dot);
    nc_image_free(img);
}

/* Dark ink on grey paper with invert and Otsu gives the clean result. */
static void test_prep_invert(void)
{
    nc_image *clean = image_or_null(50, 50), *paper = image_or_null(50, 50);
    REQUIRE(clean && paper);
    fill_rect(clean, 12, 8, 9, 30, 255);
    fill_rect(clean, 12, 30, 25, 8, 255);
    memset(paper->pixels, 200, 2500);
    fill_rect(paper, 12, 8, 9, 30, 30);
    fill_rect(paper, 12, 30, 25, 8, 30);

    float a[28 * 28], b[28 * 28], c[65 * 65], d[65 * 65];
    nc_prep p = NC_PREP_MNIST_28, q = p;
    q.invert = 1;
    q.threshold = -1.0f;
    CHECK_INT_EQ(nc_prep_apply(clean, &p, a), 0);
    CHECK_INT_EQ(nc_prep_apply(paper, &q, b), 0);
    CHECK_NEAR(max_abs_diff(a, b, 28 * 28), 0.0, 1e-6, 0);

    nc_prep n = NC_PREP_NEOCOG_65, m = n;
    m.invert = 1;
    m.threshold = -1.0f;
    CHECK_INT_EQ(nc_prep_apply(clean, &n, c), 0);
    CHECK_INT_EQ(nc_prep_apply(paper, &m, d), 0);
    CHECK(memcmp(c, d, sizeof(c)) == 0);

    /* without invert the paper is the "ink": a full-frame box */
    q.invert = 0;
    CHECK_INT_EQ(nc_prep_apply(paper, &q, b), 0);
    nc_image_free(clean);
    nc_image_free(paper);
}

/* Column of ink's centre in row y of a side-wide field; -1 if the row is empty. */
static double row_centre(const float *f, uint32_t side, uint32_t y)
{
    double s = 0, sx = 0;
    for (uint32_t x = 0; x < side; x++) {
        s += f[(size_t)y * side + x];
        sx += f[(size_t)y * side + x] * x;
    }
    return s > 0 ? sx / s : -1;
}

/* How far the row centres of a field's inked rows stray from their mean. */
static double row_spread(const float *f, uint32_t side)
{
    double c[1024], mean = 0, worst = 0;
    uint32_t n = 0;
    for (uint32_t y = 0; y < side; y++)
        if ((c[n] = row_centre(f, side, y)) >= 0)
            mean += c[n++];
    mean /= n ? n : 1;
    for (uint32_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(c[i] - mean));
    return worst;
}

/* Deskewing: a slanted bar stands upright, an upright one is left alone,
 * polarity and degenerate crops behave as without it; the gentle shear
 * corrects at most half a pixel a row. */
static void test_prep_deskew(void)
{
    nc_image *img = image_or_null(120, 120), *dark = image_or_null(120, 120);
    REQUIRE(img && dark);
    /* a bar 10 px wide leaning right by 1 px every 2 rows, 80 rows tall */
    for (uint32_t y = 20; y < 100; y++)
        fill_rect(img, 70 - (y - 20) / 2, y, 10, 1, 255);
    float out[65 * 65], up[65 * 65], ref[28 * 28], got[28 * 28];
    nc_prep n = NC_PREP_NEOCOG_65, d = n;
    d.deskew = 1;
    CHECK_INT_EQ(nc_prep_apply(img, &n, out), 0);
    CHECK_INT_EQ(nc_prep_apply(img, &d, up), 0);
    /* leaning: at 40 px tall the row centres run over about 20 px (half a
     * pixel a row); upright: within a pixel of one column */
    CHECK_MSG(row_spread(out, 65) > 8.0, "slanted spread %.2f", row_spread(out, 65));
    CHECK_MSG(row_spread(up, 65) < 1.0, "deskewed spread %.2f", row_spread(up, 65));
    nc_rect r = field_bbox(up, 65, 0.5f);
    CHECK_INT_EQ(r.height, 40);
    CHECK_MSG(r.width <= 8, "deskewed width %u", r.width);
    /* the same on dark ink, read with invert */
    for (size_t i = 0; i < 120 * 120; i++)
        dark->pixels[i] = (uint8_t)(255 - img->pixels[i]);
    nc_prep di = d;
    di.invert = 1;
    CHECK_INT_EQ(nc_prep_apply(dark, &di, out), 0);
    CHECK(memcmp(out, up, sizeof(out)) == 0);

    /* upright and symmetric: no slant, so the same field as without */
    memset(img->pixels, 0, 120 * 120);
    fill_rect(img, 30, 20, 40, 80, 255);
    CHECK_INT_EQ(nc_prep_apply(img, &n, out), 0);
    CHECK_INT_EQ(nc_prep_apply(img, &d, up), 0);
    CHECK(memcmp(out, up, sizeof(out)) == 0);
    nc_prep m = NC_PREP_MNIST_28, md = m;
    md.deskew = 1;
    CHECK_INT_EQ(nc_prep_apply(img, &m, ref), 0);
    CHECK_INT_EQ(nc_prep_apply(img, &md, got), 0);
    CHECK_NEAR(max_abs_diff(ref, got, 28 * 28), 0.0, 1e-6, 0);

    /* one pixel (no second moment) and a one-pixel diagonal line (the
     * shear's interpolation may dim it) still give a digit */
    nc_image *dot = image_or_null(5, 5);
    REQUIRE(dot);
    dot->pixels[12] = 255;
    CHECK_INT_EQ(nc_prep_apply(dot, &d, out), 0);
    r = field_bbox(out, 65, 0.5f);
    CHECK_INT_EQ(r.height, 40);
    memset(img->pixels, 0, 120 * 120);
    for (uint32_t y = 0; y < 60; y++)
        img->pixels[(size_t)(y + 30) * 120 + 30 + y] = 255;
    CHECK_INT_EQ(nc_prep_apply(img, &d, out), 0);
    r = field_bbox(out, 65, 0.5f);
    CHECK(r.height > 0);
    /* a scan-sized digit (1600 rows) is shrunk before the shear and still
     * stands upright */
    nc_image *big = image_or_null(1400, 1700);
    REQUIRE(big);
    for (uint32_t y = 50; y < 1650; y++)
        fill_rect(big, 1000 - (y - 50) / 2, y, 200, 1, 255);
    CHECK_INT_EQ(nc_prep_apply(big, &n, out), 0);
    CHECK_MSG(row_spread(out, 65) > 8.0, "big slanted spread %.2f", row_spread(out, 65));
    CHECK_INT_EQ(nc_prep_apply(big, &d, out), 0);
    CHECK_MSG(row_spread(out, 65) < 1.0, "big deskewed spread %.2f", row_spread(out, 65));
    r = field_bbox(out, 65, 0.5f);
    CHECK_INT_EQ(r.height, 40);
    nc_image_free(big);
    /* the gentle shear: a bar leaning a pixel a row (s = 1) is sheared
     * by half a pixel a row, so it keeps half its lean; the bar of half
     * that lean stands upright either way */
    memset(img->pixels, 0, 120 * 120);
    for (uint32_t y = 20; y < 100; y++)
        fill_rect(img, 90 - (y - 20), y, 10, 1, 255);
    nc_prep g = d;
    g.deskew = NC_PREP_DESKEW_GENTLE;
    CHECK_INT_EQ(nc_prep_check(&g), 0);
    float half[65 * 65];
    CHECK_INT_EQ(nc_prep_apply(img, &n, out), 0);
    CHECK_INT_EQ(nc_prep_apply(img, &d, up), 0);
    CHECK_INT_EQ(nc_prep_apply(img, &g, half), 0);
    const double s0 = row_spread(out, 65), s1 = row_spread(up, 65), s2 = row_spread(half, 65);
    CHECK_MSG(s1 < 1.0 && s2 > 0.3 * s0 && s2 < 0.7 * s0,
              "spread of a bar leaning 1 px a row: %.2f, deskewed %.2f, gently %.2f", s0, s1, s2);
    memset(img->pixels, 0, 120 * 120);
    for (uint32_t y = 20; y < 100; y++)
        fill_rect(img, 70 - (y - 20) / 2, y, 10, 1, 255);
    CHECK_INT_EQ(nc_prep_apply(img, &g, half), 0);
    CHECK_MSG(row_spread(half, 65) < 1.0, "gently deskewed spread %.2f", row_spread(half, 65));
    /* a wrong flag is refused */
    d.deskew = 3;
    CHECK_INT_EQ(nc_prep_check(&d), -EINVAL);
    CHECK_INT_EQ(nc_prep_apply(img, &d, out), -EINVAL);
    nc_image_free(dot);
    nc_image_free(dark);
    nc_image_free(img);
}

/* ---- MNIST fixture ----------------------------------------------------- */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Inflate the first cap bytes of a gzip buffer (the fixture needs no more). */
static size_t gunzip_head(const uint8_t *in, size_t in_len, uint8_t *out, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 15 + 32) != Z_OK)
        return 0;
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)in_len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = inflate(&z, Z_FINISH);
    size_t got = (rc == Z_STREAM_END || rc == Z_BUF_ERROR || rc == Z_OK) ? cap - z.avail_out : 0;
    inflateEnd(&z);
    return got;
}

/* The fixture is already in MNIST's normal form, so normalising it again
 * should change little: any shift or resize would show as large error. */
/* Polarity by the border: paper around dark ink reads light even when the
 * strokes darken most of the image; a stride wider than the width is
 * honoured (the bytes past the width are never read). */
static void test_border_is_light(void)
{
    nc_image *clean = image_or_null(20, 30), *paper = image_or_null(20, 30);
    REQUIRE(clean && paper);
    fill_rect(clean, 5, 5, 10, 20, 255);
    memset(paper->pixels, 220, (size_t)20 * 30);
    fill_rect(paper, 1, 1, 18, 28, 10);     /* ink over all but the border */
    CHECK_INT_EQ(nc_image_border_is_light(clean), 0);
    CHECK_INT_EQ(nc_image_border_is_light(paper), 1);
    CHECK_INT_EQ(nc_image_border_is_light(NULL), 0);
    uint8_t wide[3 * 8];
    memset(wide, 255, sizeof wide);
    for (int y = 0; y < 3; y++)
        memset(wide + y * 8, 0, 4);         /* 4 dark columns, 4 padding bytes */
    nc_image view = { 4, 3, 8, wide };
    CHECK_INT_EQ(nc_image_border_is_light(&view), 0);
    nc_image_free(clean);
    nc_image_free(paper);
}

/* The PGM header reader: comments and whitespace skipped, position after
 * the digits, malformed and absurd numbers refused, *pos kept on failure. */
static void test_pgm_number(void)
{
    static const char hdr[] = "P5 # a comment\n 28\t#x\n\r29 255 ";
    const uint8_t *b = (const uint8_t *)hdr;
    size_t n = sizeof hdr - 1, p = 2;
    uint32_t v = 0;
    CHECK_INT_EQ(nc_pgm_number(b, n, &p, &v), 0);
    CHECK_INT_EQ(v, 28);
    CHECK_INT_EQ(nc_pgm_number(b, n, &p, &v), 0);
    CHECK_INT_EQ(v, 29);
    CHECK_INT_EQ(nc_pgm_number(b, n, &p, &v), 0);
    CHECK_INT_EQ(v, 255);
    CHECK_INT_EQ(p, n - 1);
    CHECK_INT_EQ(nc_pgm_number(b, n, &p, &v), -EBADMSG);   /* only whitespace left */
    CHECK_INT_EQ(p, n - 1);
    static const char big[] = "1000000000 1000000001";
    p = 0;
    CHECK_INT_EQ(nc_pgm_number((const uint8_t *)big, sizeof big - 1, &p, &v), 0);
    CHECK_INT_EQ(v, 1000000000u);
    CHECK_INT_EQ(nc_pgm_number((const uint8_t *)big, sizeof big - 1, &p, &v), -ERANGE);
    p = 0;
    CHECK_INT_EQ(nc_pgm_number((const uint8_t *)"x1", 2, &p, &v), -EBADMSG);
    CHECK_INT_EQ(nc_pgm_number(NULL, 0, &p, &v), -EINVAL);
}

static void test_prep_mnist_fixture(void)
{
    const char *dir = getenv("NC_TEST_DATA");
    char path[4096];
    if (!dir || snprintf(path, sizeof(path), "%s/mnist-t1k-images-idx3-ubyte.gz", dir)
                >= (int)sizeof(path)) {
        fprintf(stderr, "note: NC_TEST_DATA not set, MNIST fixture check skipped\n");
        return;
    }
    uint8_t *gz = NULL;
    size_t gz_len = 0;
    if (nc_file_read(path, 64u << 20, &gz, &gz_len) < 0) {
        fprintf(stderr, "note: %s absent, MNIST fixture check skipped\n", path);
        return;
    }
    enum { COUNT = 1000, HEAD = 16 };
    static uint8_t idx[HEAD + COUNT * 784];
    size_t len = gunzip_head(gz, gz_len, idx, sizeof(idx));
    free(gz);
    REQUIRE(len >= HEAD);
    REQUIRE(be32(idx) == 0x803 && be32(idx + 8) == 28 && be32(idx + 12) == 28);
    uint32_t count = (uint32_t)((len - HEAD) / 784);
    if (count > be32(idx + 4))
        count = be32(idx + 4);
    REQUIRE(count >= 100);

    double total = 0, worst = 0;
    int failed = 0, neocog_bad = 0;
    float out[28 * 28], out65[65 * 65];
    nc_prep p = NC_PREP_MNIST_28, n = NC_PREP_NEOCOG_65;
    for (uint32_t i = 0; i < count; i++) {
        nc_image img;
        if (nc_image_view(idx + HEAD + (size_t)i * 784, 28, 28, 0, &img) < 0 ||
            nc_prep_apply(&img, &p, out) < 0) {
            failed++;
            continue;
        }
        double mad = 0;
        for (int k = 0; k < 784; k++)
            mad += fabs(out[k] - img.pixels[k] / 255.0);
        mad /= 784;
        total += mad;
        worst = fmax(worst, mad);
        /* NEOCOG: every digit survives, 38..40 px tall after re-binarising,
         * or less when the width cap of 61 set the scale */
        if (nc_prep_apply(&img, &n, out65) < 0) {
            neocog_bad++;
            continue;
        }
        nc_rect r = field_bbox(out65, 65, 0.5f);
        if (r.height > 40 || r.width > 61 || (r.height < 38 && r.width < 60))
            neocog_bad++;
    }
    CHECK_INT_EQ(failed, 0);
    CHECK_INT_EQ(neocog_bad, 0);
    CHECK_MSG(total / count < 0.005, "mean abs diff %.5f", total / count);
    CHECK_MSG(worst < 0.05, "worst mean abs diff %.5f", worst);
    fprintf(stderr, "MNIST fixture: %u digits, mean abs diff %.5f, worst %.5f\n",
            count, total / count, worst);
}

/* Views (image.h): each view (its own box and deskew) is exactly
 * nc_prep_apply of that view alone, one after another; bad view lists are
 * refused; a view with nothing left fails the whole digit and writes
 * nothing. */
static void test_prep_views(void)
{
    nc_image *img = image_or_null(120, 120);
    REQUIRE(img);
    for (uint32_t y = 20; y < 100; y++)             /* a leaning stem */
        fill_rect(img, 70 - (y - 20) / 2, y, 10, 1, 255);
    fill_rect(img, 30, 56, 50, 6, 200);             /* and a crossbar */
    nc_prep p = NC_PREP_NEOCOG_65;
    p.pad = 2;
    p.deskew = NC_PREP_DESKEW_GENTLE;
    p.box = 48;
    CHECK_INT_EQ(nc_prep_views(&p), 1);
    CHECK_INT_EQ(nc_prep_out_len(&p), 69 * 69);
    const nc_prep plain = nc_prep_view(&p, 0);
    CHECK(memcmp(&plain, &p, sizeof p) == 0);
    CHECK(!strcmp(nc_prep_deskew_name(0), "unsheared") &&
          !strcmp(nc_prep_deskew_name(1), "sheared") &&
          !strcmp(nc_prep_deskew_name(NC_PREP_DESKEW_GENTLE), "gently sheared") &&
          !strcmp(nc_prep_deskew_name(3), "?"));

    static const uint32_t boxes[4] = { 48, 40, 56, 44 }, shears[4] = { 2, 2, 0, 1 };
    p.n_views = 4;
    memcpy(p.view_box, boxes, sizeof boxes);
    memcpy(p.view_deskew, shears, sizeof shears);
    CHECK_INT_EQ(nc_prep_check(&p), 0);
    CHECK_INT_EQ(nc_prep_views(&p), 4);
    CHECK_INT_EQ(nc_prep_view_len(&p), 69 * 69);
    CHECK_INT_EQ(nc_prep_out_len(&p), 4 * 69 * 69);
    const nc_prep bare = nc_prep_no_views(&p);
    CHECK(bare.n_views == 0 && bare.box == 48 && bare.deskew == NC_PREP_DESKEW_GENTLE &&
          bare.view_box[3] == 0 && bare.view_deskew[3] == 0);
    float *out = malloc(4 * 69 * 69 * sizeof *out), one[69 * 69];
    REQUIRE(out);
    CHECK_INT_EQ(nc_prep_apply(img, &p, out), 0);
    for (uint32_t v = 0; v < 4; v++) {
        const nc_prep pv = nc_prep_view(&p, v);
        CHECK(pv.n_views == 0 && pv.box == boxes[v] && pv.deskew == shears[v]);
        CHECK_INT_EQ(nc_prep_apply(img, &pv, one), 0);
        CHECK_MSG(memcmp(out + v * 69 * 69, one, sizeof one) == 0, "view %u differs", v);
        nc_rect r = field_bbox(one, 69, 0.5f);
        CHECK_INT_EQ(r.height, boxes[v]);
    }
    /* some views only: each as nc_prep_apply wrote it, the rest untouched */
    float *part = malloc(4 * 69 * 69 * sizeof *part);
    REQUIRE(part);
    for (uint32_t mask = 0; mask < 16; mask++) {
        for (size_t i = 0; i < 4 * 69 * 69; i++)
            part[i] = -3.0f;
        CHECK_INT_EQ(nc_prep_apply_views(img, &p, mask | 0xf0u, part), 0);
        for (uint32_t v = 0; v < 4; v++) {
            int same = 1, kept = 1;
            for (size_t i = v * 69 * 69; i < (v + 1) * 69 * 69; i++) {
                same &= part[i] == out[i];
                kept &= part[i] == -3.0f;
            }
            CHECK_MSG(mask >> v & 1u ? same : kept, "mask 0x%x: view %u %s", mask, v,
                      mask >> v & 1u ? "differs" : "written");
        }
    }
    free(part);

    /* the unsheared view leans (its rows spread), the sheared ones less */
    CHECK_MSG(row_spread(out + 2 * 69 * 69, 69) > row_spread(out + 0 * 69 * 69, 69) + 4.0,
              "spread unsheared %.2f, gently sheared %.2f", row_spread(out + 2 * 69 * 69, 69),
              row_spread(out, 69));

    /* bad lists */
    nc_prep b = p;
    b.n_views = NC_PREP_MAX_VIEWS + 1;
    CHECK_INT_EQ(nc_prep_check(&b), -ERANGE);
    b = p;
    b.view_box[2] = 0;
    CHECK_INT_EQ(nc_prep_check(&b), -EINVAL);
    b = p;
    b.view_box[1] = 66;                             /* taller than the field */
    CHECK_INT_EQ(nc_prep_check(&b), -ERANGE);
    b = p;
    b.view_deskew[3] = 3;
    CHECK_INT_EQ(nc_prep_check(&b), -EINVAL);
    b = p;
    b.view_deskew[6] = 1;                           /* past n_views: must be 0 */
    CHECK_INT_EQ(nc_prep_check(&b), -EINVAL);
    b = p;
    b.view_box[5] = 40;
    CHECK_INT_EQ(nc_prep_apply(img, &b, out), -EINVAL);

    /* a thin diagonal shrunk to 4 px averages below the ink threshold:
     * that view is empty, so the digit is, and out keeps what it held */
    nc_image *thin = image_or_null(100, 100);
    REQUIRE(thin);
    for (uint32_t i = 0; i < 100; i++)
        thin->pixels[i * 100 + i] = 255;
    nc_prep t = NC_PREP_NEOCOG_65;
    t.box = 4;
    CHECK_INT_EQ(nc_prep_apply(thin, &t, one), -ENOENT);
    t.box = 60;
    CHECK_INT_EQ(nc_prep_apply(thin, &t, one), 0);
    t.n_views = 2;
    t.view_box[0] = 60;
    t.view_box[1] = 4;
    for (size_t i = 0; i < 2 * 65 * 65; i++)
        out[i] = -7.0f;
    CHECK_INT_EQ(nc_prep_apply(thin, &t, out), -ENOENT);
    int kept = 1;
    for (size_t i = 0; i < 2 * 65 * 65; i++)
        kept &= out[i] == -7.0f;
    CHECK(kept);
    /* the empty view alone fails; the other alone does not, and mask 0 is
     * nothing to do */
    CHECK_INT_EQ(nc_prep_apply_views(thin, &t, 2u, out), -ENOENT);
    CHECK_INT_EQ(nc_prep_apply_views(thin, &t, 1u, out), 0);
    CHECK_INT_EQ(nc_prep_apply_views(thin, &t, 0u, out), 0);
    free(out);
    nc_image_free(thin);
    nc_image_free(img);
}

int main(void)
{
    test_new_view_crop();
    test_bbox_centroid();
    test_resample_exact();
    test_resample_mean();
    test_otsu();
    test_components_patterns();
    test_components_huge();
    test_prep_args();
    test_prep_rectangle();
    test_prep_com();
    test_prep_invert();
    test_prep_deskew();
    test_prep_views();
    test_border_is_light();
    test_pgm_number();
    test_prep_mnist_fixture();
    return nc_test_finish();
}

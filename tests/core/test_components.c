/* tests/core/test_components.c — nc_image_components and
 * nc_image_components_ink (core/image/image_components.c, run-based) against a
 * plain flood fill, on a few hundred random and structured masks: labels,
 * count and every statistic must be identical, bit for bit.
 *
 * The flood fill is the definition written out: scan in raster order, each
 * unlabelled ink pixel starts the next label and an 8-connected fill (an
 * explicit stack, no recursion) gives it all of its component; box, area
 * and coordinate sums are gathered pixel by pixel. */
#include "image.h"
#include "test.h"

#include <string.h>

/* ---- the reference -------------------------------------------------------- */

typedef struct ref_result {
    uint32_t count;
    uint32_t *labels;           /* w * h, 0 = background */
    nc_component *comps;        /* count entries */
} ref_result;

static int ref_components(const nc_image *img, ref_result *r)
{
    const uint32_t w = img->width, h = img->height;
    size_t n = (size_t)w * h;
    r->count = 0;
    r->labels = calloc(n ? n : 1, sizeof *r->labels);
    r->comps = NULL;
    uint32_t *stack = malloc((n ? n : 1) * sizeof *stack);
    uint64_t *sums = NULL;
    size_t cap = 0;
    if (!r->labels || !stack)
        goto fail;
    for (uint32_t y0 = 0; y0 < h; y0++)
        for (uint32_t x0 = 0; x0 < w; x0++) {
            if (!img->pixels[(size_t)y0 * img->stride + x0] || r->labels[(size_t)y0 * w + x0])
                continue;
            if (r->count == cap) {
                cap = cap ? 2 * cap : 64;
                nc_component *c = realloc(r->comps, cap * sizeof *c);
                uint64_t *s = realloc(sums, 2 * cap * sizeof *s);
                if (c)
                    r->comps = c;
                if (s)
                    sums = s;
                if (!c || !s)
                    goto fail;
            }
            uint32_t l = ++r->count;
            uint32_t x_lo = x0, x_hi = x0, y_lo = y0, y_hi = y0, area = 0;
            uint64_t sx = 0, sy = 0;
            size_t top = 0;
            r->labels[(size_t)y0 * w + x0] = l;
            stack[top++] = y0 * w + x0;
            while (top) {
                uint32_t p = stack[--top], x = p % w, y = p / w;
                area++;
                sx += x;
                sy += y;
                if (x < x_lo) x_lo = x;
                if (x > x_hi) x_hi = x;
                if (y < y_lo) y_lo = y;
                if (y > y_hi) y_hi = y;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        int64_t nx = (int64_t)x + dx, ny = (int64_t)y + dy;
                        if (nx < 0 || ny < 0 || nx >= w || ny >= h)
                            continue;
                        size_t q = (size_t)ny * w + (size_t)nx;
                        if (!img->pixels[(size_t)ny * img->stride + (size_t)nx] || r->labels[q])
                            continue;
                        r->labels[q] = l;
                        stack[top++] = (uint32_t)q;
                    }
            }
            r->comps[l - 1] = (nc_component){ { x_lo, y_lo, x_hi - x_lo + 1, y_hi - y_lo + 1 },
                                              area, (double)sx / area, (double)sy / area };
        }
    free(stack);
    free(sums);
    return 0;
fail:
    free(stack);
    free(sums);
    free(r->labels);
    free(r->comps);
    return -ENOMEM;
}

/* ---- masks ------------------------------------------------------------------ */

/* A random ink byte: not only 255, since any non-zero pixel is ink (the
 * word-at-a-time scan must not take 0x80 or 0x01 for paper). */
static uint8_t ink(nc_test_rng *r)
{
    static const uint8_t v[] = { 255, 1, 0x80, 0x7f, 0x01, 200 };
    return v[nc_test_next(r) % (sizeof v)];
}

/* Fill img (any stride; the bytes past width get ink, which must be
 * ignored) with pattern kind. */
static void fill_mask(nc_image *img, int kind, nc_test_rng *r)
{
    const uint32_t w = img->width, h = img->height;
    double dens = nc_test_uniform(r);
    for (uint32_t y = 0; y < h; y++) {
        uint8_t *row = img->pixels + (size_t)y * img->stride;
        memset(row + w, 255, img->stride - w);
        for (uint32_t x = 0; x < w; x++) {
            int on;
            switch (kind) {
            case 0: on = nc_test_uniform(r) < dens; break;                  /* noise */
            case 1: on = nc_test_uniform(r) < 0.45 + 0.2 * dens; break;     /* near percolation */
            case 2: on = (x + y) % 2 == 0; break;                            /* checkerboard */
            case 3: on = (x % 3 == 0) || (y % 7 == 0 && x % 5 != 1); break;  /* combs */
            case 4: on = ((x / 9 + y / 4) % 3 == 0); break;                  /* stair blocks */
            case 5: on = (x * 7 + y * 3) % 11 < 3; break;                    /* diagonals */
            default: on = 0; break;
            }
            row[x] = on ? ink(r) : 0;
        }
    }
    if (kind == 6) {                        /* random rectangles and rings */
        uint32_t n = 1 + (uint32_t)(nc_test_next(r) % 12);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t x0 = (uint32_t)(nc_test_next(r) % w), y0 = (uint32_t)(nc_test_next(r) % h);
            uint32_t x1 = x0 + 1 + (uint32_t)(nc_test_next(r) % (w - x0));
            uint32_t y1 = y0 + 1 + (uint32_t)(nc_test_next(r) % (h - y0));
            int ring = nc_test_next(r) % 2;
            for (uint32_t y = y0; y < y1; y++)
                for (uint32_t x = x0; x < x1; x++)
                    if (!ring || x == x0 || x == x1 - 1 || y == y0 || y == y1 - 1)
                        img->pixels[(size_t)y * img->stride + x] = ink(r);
        }
    }
}

/* ---- the comparison ------------------------------------------------------------ */

static int same_comp(const nc_component *a, const nc_component *b)
{
    return a->box.x == b->box.x && a->box.y == b->box.y && a->box.width == b->box.width &&
           a->box.height == b->box.height && a->area == b->area &&
           !memcmp(&a->cx, &b->cx, sizeof a->cx) && !memcmp(&a->cy, &b->cy, sizeof a->cy);
}

/* Both entry points against the reference on img; returns 0 if all agree. */
static int compare(const nc_image *img, const char *what)
{
    const uint32_t w = img->width, h = img->height;
    const size_t n = (size_t)w * h;
    ref_result ref;
    if (ref_components(img, &ref) < 0) {
        CHECK_MSG(0, "%s: reference out of memory", what);
        return -1;
    }
    uint32_t *lab = malloc(n * sizeof *lab), *lab_ink = malloc(n * sizeof *lab_ink);
    nc_component *c = NULL, *c_ink = NULL, *c_nolab = NULL;
    uint32_t count = 0, count_ink = 0, count_nolab = 0;
    int bad = 0;
    if (!lab || !lab_ink) {
        CHECK_MSG(0, "%s: out of memory", what);
        bad = 1;
        goto out;
    }
    memset(lab, 0xa5, n * sizeof *lab);             /* every entry must be written */
    for (size_t i = 0; i < n; i++)
        lab_ink[i] = 0xdeadbeefu;                   /* paper must stay untouched */
    int e1 = nc_image_components(img, NC_IMAGE_MAX_COMPONENTS, lab, &c, &count);
    int e2 = nc_image_components_ink(img, NC_IMAGE_MAX_COMPONENTS, lab_ink, &c_ink, &count_ink);
    int e3 = nc_image_components(img, NC_IMAGE_MAX_COMPONENTS, NULL, &c_nolab, &count_nolab);
    bad |= e1 || e2 || e3 || count != ref.count || count_ink != ref.count ||
           count_nolab != ref.count;
    for (size_t i = 0; !bad && i < n; i++) {
        uint32_t want = ref.labels[i];
        int is_ink = img->pixels[(i / w) * img->stride + i % w] != 0;
        bad |= lab[i] != want || lab_ink[i] != (is_ink ? want : 0xdeadbeefu);
    }
    for (uint32_t k = 0; !bad && k < ref.count; k++)
        bad |= !same_comp(&c[k], &ref.comps[k]) || !same_comp(&c_ink[k], &ref.comps[k]) ||
               !same_comp(&c_nolab[k], &ref.comps[k]);
    CHECK_MSG(!bad, "%s (%ux%u, stride %u): errors %d %d %d, count %u/%u/%u, reference %u",
              what, w, h, img->stride, e1, e2, e3, count, count_ink, count_nolab, ref.count);
    /* the component cap: exactly count is fine, one fewer is -ERANGE */
    if (!bad && ref.count > 0 && ref.count <= NC_IMAGE_MAX_COMPONENTS) {
        nc_component *cc = NULL;
        uint32_t k = 12345;
        CHECK_INT_EQ(nc_image_components(img, ref.count, NULL, &cc, &k), 0);
        CHECK_INT_EQ(k, ref.count);
        free(cc);
        cc = NULL;
        k = 12345;
        CHECK_INT_EQ(nc_image_components(img, ref.count - 1, lab, &cc, &k), -ERANGE);
        CHECK_INT_EQ(k, 12345);
        CHECK(cc == NULL);
    }
out:
    free(lab);
    free(lab_ink);
    free(c);
    free(c_ink);
    free(c_nolab);
    free(ref.labels);
    free(ref.comps);
    return bad ? -1 : 0;
}

/* 350 masks: every pattern, sizes from 1x1 to 300x200 (widths around
 * multiples of 8 on purpose: the scan goes a word at a time), padded rows
 * full of ink past the width. */
static void test_random_masks(void)
{
    nc_test_rng r = { 0x5eed0c0a1e5ull };
    uint32_t failed = 0;
    for (int t = 0; t < 350; t++) {
        uint32_t w = 1 + (uint32_t)(nc_test_next(&r) % 300);
        uint32_t h = 1 + (uint32_t)(nc_test_next(&r) % 200);
        if (t % 5 == 0)
            w = 1 + (uint32_t)(nc_test_next(&r) % 17);
        if (t % 9 == 0)
            h = 1 + (uint32_t)(nc_test_next(&r) % 3);
        uint32_t pad = t % 3 ? (uint32_t)(nc_test_next(&r) % 13) : 0;
        uint8_t *px = malloc((size_t)(w + pad) * h);
        REQUIRE(px);
        nc_image img = { w, h, w + pad, px };
        fill_mask(&img, t % 7, &r);
        char what[64];
        snprintf(what, sizeof what, "mask %d (pattern %d)", t, t % 7);
        failed += compare(&img, what) != 0;
        free(px);
    }
    CHECK_INT_EQ(failed, 0);
}

/* Shapes that make the union-find work: a spiral (one component found as
 * many runs that merge late), U shapes nested in each other, a comb whose
 * teeth join only at the bottom row, long diagonals (corner contact only),
 * a full frame and an empty one. */
static void test_structured(void)
{
    enum { W = 97, H = 61 };
    static uint8_t px[W * H];
    nc_image img = { W, H, W, px };
    /* spiral */
    memset(px, 0, sizeof px);
    {
        int x0 = 0, y0 = 0, x1 = W - 1, y1 = H - 1;
        while (x0 <= x1 && y0 <= y1) {
            for (int x = x0; x <= x1; x++) px[y0 * W + x] = 255;
            for (int y = y0; y <= y1; y++) px[y * W + x1] = 255;
            for (int x = x0; x <= x1; x++) px[y1 * W + x] = 255;
            for (int y = y0 + 2; y <= y1; y++) px[y * W + x0] = 255;
            if (y0 + 2 < H && x0 + 1 < W) px[(y0 + 2) * W + x0 + 1] = 255;
            x0 += 2; y0 += 2; x1 -= 2; y1 -= 2;
        }
    }
    compare(&img, "spiral");
    /* nested U shapes */
    memset(px, 0, sizeof px);
    for (int k = 0; k < 14; k++) {
        int x0 = 2 * k, x1 = W - 1 - 2 * k, y1 = H - 1 - 2 * k;
        if (x0 >= x1 || y1 < 0)
            break;
        for (int y = 0; y <= y1; y++) px[y * W + x0] = px[y * W + x1] = 255;
        for (int x = x0; x <= x1; x++) px[y1 * W + x] = 255;
    }
    compare(&img, "nested U");
    /* comb joined at the bottom */
    memset(px, 0, sizeof px);
    for (int x = 0; x < W; x += 2)
        for (int y = 0; y < H; y++) px[y * W + x] = 255;
    for (int x = 0; x < W; x++) px[(H - 1) * W + x] = 255;
    compare(&img, "comb");
    /* diagonals touching only at corners, both directions */
    memset(px, 0, sizeof px);
    for (int k = -H; k < W; k += 4)
        for (int y = 0; y < H; y++) {
            int x = k + y;
            if (x >= 0 && x < W) px[y * W + x] = 255;
            x = W - 1 - (k + y);
            if (x >= 0 && x < W) px[y * W + x] = 255;
        }
    compare(&img, "diagonals");
    memset(px, 255, sizeof px);
    compare(&img, "full");
    memset(px, 0, sizeof px);
    compare(&img, "empty");
    nc_component *c = NULL;
    uint32_t n = 7;
    CHECK_INT_EQ(nc_image_components_ink(&img, 10, NULL, &c, &n), -EINVAL);   /* labels required */
    CHECK_INT_EQ(nc_image_components(&img, 10, NULL, &c, &n), 0);
    CHECK_INT_EQ(n, 0);
    CHECK(c == NULL);
}

int main(void)
{
    test_random_masks();
    test_structured();
    return nc_test_finish();
}

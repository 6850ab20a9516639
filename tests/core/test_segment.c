/* tests/core/test_segment.c — core/segment: hand-checked frames, edge
 * cases, then accuracy on frames rendered in-process by the stream
 * generator's renderer from the committed MNIST fixture.
 *
 * Hand-checked frames are built here from fixture digits drawn at a known
 * place and scale on flat "paper", so every expected box is known exactly:
 * the box of the source pixels above the ink threshold, scaled and moved.
 *
 * Over 800 lines on purpose: every hand-checked case draws and checks
 * with the helpers at the top (paper, placed digits, box matching, the
 * count steps), so the cases stay beside them in one program rather than
 * behind a header of test helpers shared by several. */
#include "segment.h"
#include "dataset.h"
#include "fileio.h"
#include "streamgen_render.h"
#include "fixture.h"
#include "test.h"

#include <string.h>
#include <time.h>

static nc_dataset fx;           /* the fixture: MNIST test digits 0..999 */

static int load_fixture(void)
{
    return nc_test_fixture(&fx);
}

static const uint8_t *digit_px(uint32_t i) { return fx.pixels + (size_t)i * 784; }

/* First fixture index with this label at or after from. */
static uint32_t find_label(uint8_t label, uint32_t from)
{
    for (uint32_t i = from; i < fx.count; i++)
        if (fx.labels[i] == label)
            return i;
    return 0;
}

/* ---- drawing ------------------------------------------------------------ */

#define PAPER 215
#define INK 60

static nc_image *paper(uint32_t w, uint32_t h, uint8_t level)
{
    nc_image *img = NULL;
    if (nc_image_new(w, h, &img) < 0)
        return NULL;
    memset(img->pixels, level, (size_t)w * h);
    return img;
}

/* Draw fixture digit idx with its 28x28 canvas at (x, y), each source
 * pixel an s x s block, as dark ink (darkest where MNIST is 255).  Returns
 * the expected box: source pixels > 127 (which, at these contrasts, are the
 * pixels the segmenter sees as ink), scaled. */
static nc_rect draw_digit(nc_image *img, uint32_t idx, uint32_t x, uint32_t y, uint32_t s)
{
    const uint8_t *px = digit_px(idx);
    uint32_t x0 = 99, y0 = 99, x1 = 0, y1 = 0;
    for (uint32_t j = 0; j < 28; j++)
        for (uint32_t i = 0; i < 28; i++) {
            uint32_t v = px[j * 28 + i];
            if (!v)
                continue;
            if (v > 127) {
                if (i < x0) x0 = i;
                if (j < y0) y0 = j;
                if (i + 1 > x1) x1 = i + 1;
                if (j + 1 > y1) y1 = j + 1;
            }
            for (uint32_t b = 0; b < s; b++)
                for (uint32_t a = 0; a < s; a++) {
                    uint8_t *p = &img->pixels[(size_t)(y + j * s + b) * img->stride + x + i * s + a];
                    uint8_t want = (uint8_t)(PAPER - (PAPER - INK) * v / 255);
                    if (want < *p)
                        *p = want;
                }
        }
    return (nc_rect){ x + x0 * s, y + y0 * s, (x1 - x0) * s, (y1 - y0) * s };
}

/* The same, placed so that the expected box starts at column ink_x. */
static nc_rect place_digit(nc_image *img, uint32_t idx, uint32_t ink_x, uint32_t y, uint32_t s)
{
    const uint8_t *px = digit_px(idx);
    uint32_t x0 = 28;
    for (uint32_t j = 0; j < 28; j++)
        for (uint32_t i = 0; i < x0; i++)
            if (px[j * 28 + i] > 127)
                x0 = i;
    return draw_digit(img, idx, ink_x - x0 * s, y, s);
}

static double iou(nc_rect a, nc_rect b)
{
    double x0 = fmax(a.x, b.x), y0 = fmax(a.y, b.y);
    double x1 = fmin(a.x + a.width, b.x + b.width), y1 = fmin(a.y + a.height, b.y + b.height);
    if (x1 <= x0 || y1 <= y0)
        return 0;
    double in = (x1 - x0) * (y1 - y0);
    return in / ((double)a.width * a.height + (double)b.width * b.height - in);
}

static int centre_in(nc_rect a, nc_rect b)
{
    double cx = a.x + a.width / 2.0, cy = a.y + a.height / 2.0;
    return cx >= b.x && cx < b.x + b.width && cy >= b.y && cy < b.y + b.height;
}

/* "Right box": overlaps well, or (thin digits like 1, where a pixel of
 * blur is a large share of the width) each centre lies inside the other. */
static int box_ok(nc_rect got, nc_rect want)
{
    return iou(got, want) >= 0.5 || (centre_in(got, want) && centre_in(want, got));
}

static nc_segment_result *run(const nc_image *img, const nc_segment_params *p)
{
    nc_segment_result *r = NULL;
    int err = nc_segment_image(img, p, &r);
    CHECK_MSG(err == 0, "nc_segment_image: %d", err);
    return err ? NULL : r;
}

static void check_boxes(const nc_segment_result *r, const nc_rect *want, uint32_t n,
                        const char *what)
{
    CHECK_MSG(r->count == n, "%s: %u digits, want %u", what, r->count, n);
    if (r->count != n && getenv("NC_TEST_VERBOSE"))
        for (uint32_t i = 0; i < r->count; i++)
            fprintf(stderr, "  %s: found %u,%u %ux%u line %u flags %u\n", what,
                    r->digits[i].box.x, r->digits[i].box.y, r->digits[i].box.width,
                    r->digits[i].box.height, r->digits[i].line, r->digits[i].flags);
    for (uint32_t i = 0; i < n && i < r->count; i++) {
        nc_rect g = r->digits[i].box;
        CHECK_MSG(box_ok(g, want[i]), "%s: digit %u at %u,%u %ux%u, want %u,%u %ux%u", what, i,
                  g.x, g.y, g.width, g.height, want[i].x, want[i].y, want[i].width, want[i].height);
    }
}

/* Five digits, well apart, on one line (labels 7 2 1 0 4). */
static nc_image *five_digits_on(uint32_t w, uint32_t h, nc_rect want[5])
{
    nc_image *img = paper(w, h, PAPER);
    if (!img)
        return NULL;
    for (uint32_t i = 0; i < 5; i++)
        want[i] = draw_digit(img, i, 20 + 70 * i, 40, 2);
    return img;
}

/* The same on 400x160 paper. */
static nc_image *five_digits(nc_rect want[5])
{
    return five_digits_on(400, 160, want);
}

/* ---- hand-checked cases -------------------------------------------------- */

static void test_clean(void)
{
    nc_rect want[5];
    nc_image *img = five_digits(want);
    REQUIRE(img);
    nc_segment_params p;
    nc_segment_params_default(&p);
    for (uint32_t mode = 0; mode < 2; mode++) {
        p.binarise = mode;
        nc_segment_result *r = run(img, &p);
        if (r) {
            check_boxes(r, want, 5, mode ? "clean/otsu" : "clean/adaptive");
            CHECK_INT_EQ(r->line_count, 1);
            CHECK_INT_EQ(r->polarity, NC_SEGMENT_POLARITY_DARK_INK);
            for (uint32_t i = 0; i < r->count; i++) {
                CHECK_INT_EQ(r->digits[i].line, 0);
                CHECK_INT_EQ(r->digits[i].flags & (NC_SEGMENT_DIGIT_SPLIT | NC_SEGMENT_DIGIT_MERGED), 0);
            }
        }
        nc_segment_result_free(r);
    }
    nc_image_free(img);
}

static void test_two_lines(void)
{
    nc_image *img = paper(480, 240, PAPER);
    REQUIRE(img);
    nc_rect want[7];
    /* top line starts further right than the bottom one: order must still
     * be top line first */
    for (uint32_t i = 0; i < 3; i++)
        want[i] = draw_digit(img, 10 + i, 160 + 70 * i, 20, 2);
    for (uint32_t i = 0; i < 4; i++)
        want[3 + i] = draw_digit(img, 20 + i, 10 + 70 * i, 130, 2);
    nc_segment_result *r = run(img, NULL);
    if (r) {
        check_boxes(r, want, 7, "two lines");
        CHECK_INT_EQ(r->line_count, 2);
        for (uint32_t i = 0; i < r->count; i++)
            CHECK_INT_EQ(r->digits[i].line, i < 3 ? 0 : 1);
        if (r->line_count == 2) {
            CHECK_INT_EQ(r->lines[0].first, 0);
            CHECK_INT_EQ(r->lines[0].count, 3);
            CHECK_INT_EQ(r->lines[1].count, 4);
        }
    }
    nc_segment_result_free(r);
    nc_image_free(img);
}

/* Number of components in the binarised frame whose box overlaps r. */
static uint32_t components_in(const nc_image *img, nc_rect r)
{
    nc_segmenter *seg = NULL;
    nc_image *mask = paper(img->width, img->height, 0);
    nc_component *c = NULL;
    uint32_t n = 0, pol, hits = 0;
    if (mask && !nc_segmenter_new(&seg) &&
        !nc_segment_binarise_frame(seg, img, NULL, mask, &pol) &&
        !nc_image_components(mask, 100000, NULL, &c, &n))
        for (uint32_t i = 0; i < n; i++)
            if (iou(c[i].box, r) > 0 && c[i].area >= 12)
                hits++;
    free(c);
    nc_image_free(mask);
    nc_segmenter_free(seg);
    return hits;
}

static void test_touching(void)
{
    nc_image *img = paper(520, 160, PAPER);
    REQUIRE(img);
    nc_rect want[6];
    uint32_t z = find_label(0, 0), z2 = find_label(0, z + 1), t = find_label(3, 0);
    want[0] = draw_digit(img, 1, 20, 40, 2);         /* a 2 */
    want[1] = draw_digit(img, 4, 90, 40, 2);         /* a 4 */
    /* a 0 and a 3 pushed together until their strokes overlap */
    want[2] = draw_digit(img, z, 170, 40, 2);
    want[3] = place_digit(img, t, want[2].x + want[2].width - 4, 40, 2);
    want[4] = place_digit(img, z2, want[3].x + want[3].width + 20, 40, 2);
    want[5] = place_digit(img, 7, want[4].x + want[4].width + 24, 40, 2);
    nc_rect pair = { want[2].x, 40, want[3].x + want[3].width - want[2].x, 56 };
    CHECK_INT_EQ(components_in(img, pair), 1);       /* really touching */
    nc_segment_result *r = run(img, NULL);
    if (r) {
        check_boxes(r, want, 6, "touching");
        if (r->count == 6) {
            CHECK(r->digits[2].flags & NC_SEGMENT_DIGIT_SPLIT);
            CHECK(r->digits[3].flags & NC_SEGMENT_DIGIT_SPLIT);
        }
    }
    nc_segment_result_free(r);
    nc_image_free(img);

    /* Three touching digits alone: no line to learn a width from, so the
     * expected count decides. */
    img = paper(300, 140, PAPER);
    REQUIRE(img);
    nc_rect w3[3];
    uint32_t ids[3] = { 1, z, t };
    uint32_t x = 30;
    for (uint32_t i = 0; i < 3; i++) {
        w3[i] = place_digit(img, ids[i], x, 40, 2);
        x = w3[i].x + w3[i].width - 4;
    }
    nc_segment_params p;
    nc_segment_params_default(&p);
    p.expected_count = 3;
    r = run(img, &p);
    if (r)
        check_boxes(r, w3, 3, "three touching, count 3");
    nc_segment_result_free(r);
    nc_image_free(img);
}

static void fill(nc_image *img, uint32_t x0, uint32_t y0, uint32_t x1, uint32_t y1)
{
    for (uint32_t y = y0; y < y1; y++)
        memset(img->pixels + (size_t)y * img->stride + x0, INK, x1 - x0);
}

/* The height of the tallest of want[0..n) and its top: the line's. */
static void line_extent(const nc_rect *want, uint32_t n, uint32_t *ret_h, uint32_t *ret_y)
{
    *ret_h = *ret_y = 0;
    for (uint32_t i = 0; i < n; i++)
        if (want[i].height > *ret_h) {
            *ret_h = want[i].height;
            *ret_y = want[i].y;
        }
}

/* A frame read wrong without a count (so the count step is what is tested)
 * must come out as want[0..n) with expected_count n.  Returns that result
 * for further checks (the caller frees it; NULL if segmenting failed). */
static nc_segment_result *check_count_step(const nc_image *img, const nc_rect *want,
                                           uint32_t n, const char *what)
{
    nc_segment_result *r = run(img, NULL);
    if (r)
        CHECK_MSG(r->count != n, "%s: %u digits without a count already: the count step "
                  "would not be tested", what, r->count);
    nc_segment_result_free(r);
    nc_segment_params p;
    nc_segment_params_default(&p);
    p.expected_count = n;
    r = run(img, &p);
    if (r)
        check_boxes(r, want, n, what);
    return r;
}

/* A digit broader than the splitter's bar (a 0 drawn 1.25 line heights wide,
 * as camera frames show) on a line of mostly 1s (whose narrow median width
 * makes the splitter cut it in three); with the expected count, the extra
 * pieces must be undone by joining the cuts, not by dropping the thin 1s
 * of the line (what the count step did before: smallest piece first). */
static void test_count_unsplit(void)
{
    nc_image *img = paper(460, 160, PAPER);
    REQUIRE(img);
    nc_rect want[5];
    const uint32_t one0 = find_label(1, 0), one1 = find_label(1, one0 + 1);
    const uint32_t one2 = find_label(1, one1 + 1), seven = find_label(7, 0);
    const uint32_t ids[4] = { one0, seven, one1, one2 };
    for (uint32_t i = 0; i < 4; i++)
        want[i] = draw_digit(img, ids[i], 20 + 70 * i, 40, 2);
    uint32_t H, y0;
    line_extent(want, 4, &H, &y0);
    const uint32_t W = H * 5 / 4, x0 = 330;
    fill(img, x0, y0, x0 + W, y0 + 6);
    fill(img, x0, y0 + H - 6, x0 + W, y0 + H);
    fill(img, x0, y0, x0 + 7, y0 + H);
    fill(img, x0 + W - 7, y0, x0 + W, y0 + H);
    want[4] = (nc_rect){ x0, y0, W, H };
    nc_segment_result_free(check_count_step(img, want, 5, "broad 0 among 1s"));
    nc_image_free(img);
}

/* Clutter on a line of its own (a texture's stroke below the string): with
 * the expected count it goes, not the string's thin 1. */
static void test_count_lone_line(void)
{
    nc_rect want[5];
    nc_image *img = five_digits_on(400, 230, want);     /* 7 2 1 0 4 */
    REQUIRE(img);
    fill(img, 180, 150, 200, 190);     /* bigger than the 1, of the line's height */
    nc_segment_result_free(check_count_step(img, want, 5, "clutter on its own line"));
    nc_image_free(img);
}

/* A broad 0 whose ring broke at its right side: the side is a piece of its own, a
 * pixel away from the rest and the smallest of the line.  With the expected
 * count it must join its digit, not be dropped (what the count step did
 * before: the smallest piece went, leaving a "C" that reads as 6). */
static void test_count_fragment(void)
{
    nc_image *img = paper(400, 160, PAPER);
    REQUIRE(img);
    nc_rect want[5];
    const uint8_t labels[4] = { 7, 2, 0, 4 };
    for (uint32_t i = 0; i < 4; i++)
        want[i] = draw_digit(img, find_label(labels[i], 0), 20 + 70 * i, 40, 2);
    uint32_t H, y0;
    line_extent(want, 4, &H, &y0);
    const uint32_t W = H, x0 = 300;                 /* a broad 0, as camera frames show */
    fill(img, x0, y0, x0 + W - 4, y0 + 5);          /* top, bottom, left: one piece */
    fill(img, x0, y0 + H - 5, x0 + W - 4, y0 + H);
    fill(img, x0, y0, x0 + 5, y0 + H);
    fill(img, x0 + W - 3, y0 + 3, x0 + W, y0 + H - 3);  /* the right side, 1 px away */
    want[4] = (nc_rect){ x0, y0, W, H };
    nc_segment_result *r = check_count_step(img, want, 5, "0 broken at its side");
    /* the boxes' test is loose (IoU 0.5): the 0 must hold its side too */
    if (r && r->count == 5)
        CHECK_MSG(r->digits[4].box.x + r->digits[4].box.width == x0 + W &&
                      (r->digits[4].flags & NC_SEGMENT_DIGIT_MERGED),
                  "broken 0: %u,%u %ux%u flags %u, want its side (to x = %u) merged in",
                  r->digits[4].box.x, r->digits[4].box.y, r->digits[4].box.width,
                  r->digits[4].box.height, r->digits[4].flags, x0 + W);
    nc_segment_result_free(r);
    nc_image_free(img);
}

/* Without a count: a piece alone on its line beside a string of five is
 * judged by the string's height and pen, so a hair-thin stroke (a ruled
 * line's stub) and a stroke half again as tall as the digits go, while a
 * digit-sized blob stays. */
static void test_lone_pieces(void)
{
    nc_rect want[6];
    nc_image *img = five_digits_on(400, 420, want);     /* 7 2 1 0 4 */
    REQUIRE(img);
    /* one line each (no two overlap in rows) */
    fill(img, 60, 130, 61, 165);                    /* 1 pixel wide */
    fill(img, 180, 190, 192, 255);                  /* 65 tall against about 40 */
    fill(img, 300, 300, 320, 340);                  /* a blob of digit size */
    want[5] = (nc_rect){ 300, 300, 20, 40 };
    nc_segment_result *r = run(img, NULL);
    if (r)
        check_boxes(r, want, 6, "pieces alone on their lines");
    nc_segment_result_free(r);
    nc_image_free(img);
}

static void test_broken(void)
{
    nc_rect want[5];
    nc_image *img = paper(400, 160, PAPER);
    REQUIRE(img);
    uint32_t five = find_label(5, 0), seven = 0;
    uint32_t ids[5] = { 2, seven, 3, five, 6 };
    for (uint32_t i = 0; i < 5; i++)
        want[i] = draw_digit(img, ids[i], 20 + 70 * i, 40, 2);
    /* Break the 7 below its bar and the 5 below its top stroke by wiping a
     * band of rows across each, as a pen skipping or glare would. */
    uint32_t cut[2] = { 1, 3 };
    for (uint32_t k = 0; k < 2; k++) {
        nc_rect b = want[cut[k]];
        uint32_t y = b.y + b.height * (k ? 22 : 30) / 100;
        for (uint32_t j = y; j < y + 4; j++)
            memset(img->pixels + (size_t)j * img->stride + b.x, PAPER, b.width);
        CHECK_MSG(components_in(img, b) >= 2, "digit %u is not broken", cut[k]);
    }
    nc_segment_result *r = run(img, NULL);
    if (r) {
        check_boxes(r, want, 5, "broken");
        if (r->count == 5) {
            CHECK(r->digits[1].flags & NC_SEGMENT_DIGIT_MERGED);
            CHECK(r->digits[3].flags & NC_SEGMENT_DIGIT_MERGED);
        }
    }
    nc_segment_result_free(r);
    nc_image_free(img);
}

static void test_specks(void)
{
    nc_rect want[5];
    nc_image *img = five_digits(want);
    REQUIRE(img);
    nc_test_rng rng = { 42 };
    /* 300 specks of 1..3 px, plus a rule under the digits and a frame
     * around them */
    for (int k = 0; k < 300; k++) {
        uint32_t x = (uint32_t)(nc_test_uniform(&rng) * 395), y = (uint32_t)(nc_test_uniform(&rng) * 155);
        uint32_t s = 1 + (uint32_t)(nc_test_uniform(&rng) * 3);
        for (uint32_t j = 0; j < s; j++)
            for (uint32_t i = 0; i < s && i < 2; i++)
                img->pixels[(size_t)(y + j) * img->stride + x + i] = INK;
    }
    for (uint32_t x = 10; x < 390; x++) {
        img->pixels[(size_t)130 * img->stride + x] = INK;
        img->pixels[(size_t)131 * img->stride + x] = INK;
        img->pixels[(size_t)8 * img->stride + x] = INK;
        img->pixels[(size_t)150 * img->stride + x] = INK;
    }
    for (uint32_t y = 8; y <= 150; y++) {
        img->pixels[(size_t)y * img->stride + 10] = INK;
        img->pixels[(size_t)y * img->stride + 390] = INK;
    }
    nc_segment_result *r = run(img, NULL);
    if (r)
        check_boxes(r, want, 5, "specks");
    nc_segment_result_free(r);
    nc_image_free(img);
}

/* The clutter that generated frames showed (docs/lessons.md): the
 * 1-pixel side of a box drawn around the string, at digit height, read as
 * a 1; a shadow's edge cut by the frame read as a digit; the detached bar
 * of a 5 overlapping its body in columns too little to merge. */
static void test_clutter(void)
{
    nc_rect want[6];
    /* a box side one pixel wide, as tall as the digits, left of them; the
     * 1 among the digits (index 2) must stay */
    nc_image *img = five_digits(want);
    REQUIRE(img);
    fill(img, 8, want[0].y, 9, want[0].y + want[0].height);
    nc_segment_result *r = run(img, NULL);
    if (r)
        check_boxes(r, want, 5, "box side");
    nc_segment_result_free(r);
    nc_image_free(img);

    /* a dark blob cut by the bottom edge, well below the line: dropped by
     * default, kept (a line of its own) without drop_edge */
    img = five_digits(want);
    REQUIRE(img);
    fill(img, 200, 128, 222, 160);
    r = run(img, NULL);
    if (r)
        check_boxes(r, want, 5, "edge blob");
    nc_segment_result_free(r);
    nc_segment_params p;
    nc_segment_params_default(&p);
    p.drop_edge = 0;
    r = run(img, &p);
    if (r)
        CHECK_MSG(r->count == 6, "edge blob kept without drop_edge: %u digits", r->count);
    nc_segment_result_free(r);
    nc_image_free(img);

    /* a 5 drawn as a body and a bar above it, apart by one row, the bar
     * reaching right of the body: one digit */
    img = five_digits_on(480, 160, want);
    REQUIRE(img);
    uint32_t top = want[0].y + 2, bottom = want[0].y + want[0].height;
    fill(img, 384, top + 8, 404, bottom);       /* body */
    fill(img, 396, top, 420, top + 7);          /* bar */
    want[5] = (nc_rect){ 384, top, 36, bottom - top };
    r = run(img, NULL);
    if (r) {
        check_boxes(r, want, 6, "broken 5");
        if (r->count == 6)
            CHECK(r->digits[5].flags & NC_SEGMENT_DIGIT_MERGED);
    }
    nc_segment_result_free(r);
    nc_image_free(img);

    /* the parameters the daemon derives from the view */
    nc_segment_params_for_view(&p, 640, 480, 0);
    CHECK(p.drop_edge == 1 && p.max_height == 0 && p.use_roi == 0);
    nc_segment_params_for_view(&p, 300, 60, 0);     /* a cropped strip */
    CHECK(p.drop_edge == 0 && p.max_height == 60);
    nc_segment_params_for_view(&p, 300, 200, 1);    /* a caller's ROI */
    CHECK(p.drop_edge == 0 && p.max_height == 0);
    p.drop_edge = 2;
    CHECK_INT_EQ(nc_segment_params_check(&p), -EINVAL);
}

/* Step 9: a broad 0 (a ring 1.25 line heights wide) is cut in two by step
 * 7, as two touching digits would be, and offered uncut as well: only when
 * asked, not with a count, and not for a pair broader than a digit. */
static void test_alternatives(void)
{
    nc_rect want[7];
    nc_image *img = five_digits_on(560, 160, want);
    REQUIRE(img);
    uint32_t h, top;
    line_extent(want, 5, &h, &top);
    const uint32_t x = 380, bottom = top + h, w0 = h * 125 / 100;
    fill(img, x, top, x + w0, top + 5);                 /* the ring */
    fill(img, x, bottom - 5, x + w0, bottom);
    fill(img, x, top, x + 5, bottom);
    fill(img, x + w0 - 5, top, x + w0, bottom);
    nc_segment_params p;
    nc_segment_params_default(&p);
    nc_segment_result *r = run(img, &p);        /* not asked: none */
    if (r) {
        CHECK_INT_EQ(r->count, 7);              /* the ring read as two */
        CHECK_INT_EQ(r->alt_count, 0);
        CHECK(r->alts == NULL && r->alt_inputs == NULL);
    }
    nc_segment_result_free(r);

    const nc_prep prep = NC_PREP_CNN_29;
    p.alternatives = 1;
    p.prep = &prep;
    r = run(img, &p);
    if (r) {
        CHECK_INT_EQ(r->count, 7);              /* the cut stays the reading */
        for (uint32_t i = 0; i < 5 && i < r->count; i++)
            CHECK_MSG(box_ok(r->digits[i].box, want[i]), "alternatives: digit %u", i);
        CHECK_INT_EQ(r->alt_count, 1);
        if (r->alt_count == 1 && r->count == 7) {
            const nc_segment_alt *a = &r->alts[0];
            const nc_segment_digit *l = &r->digits[5], *rt = &r->digits[6];
            CHECK_INT_EQ(a->first, 5);
            CHECK(l->flags & rt->flags & NC_SEGMENT_DIGIT_SPLIT);
            CHECK_INT_EQ(a->whole.line, l->line);
            CHECK(!(a->whole.flags & NC_SEGMENT_DIGIT_SPLIT));
            CHECK_MSG(box_ok(a->whole.box, (nc_rect){ x, top, w0, h }), "whole at %u,%u %ux%u",
                      a->whole.box.x, a->whole.box.y, a->whole.box.width, a->whole.box.height);
            CHECK_INT_EQ(a->whole.box.x, l->box.x);
            CHECK_INT_EQ(a->whole.box.x + a->whole.box.width, rt->box.x + rt->box.width);
            /* its patch holds both parts' ink */
            uint64_t ink_w = 0, ink_p = 0;
            for (uint32_t i = 0; i < a->whole.patch.width * a->whole.patch.height; i++)
                ink_w += a->whole.patch.pixels[i] > 0;
            for (uint32_t d = 5; d <= 6; d++)
                for (uint32_t i = 0; i < r->digits[d].patch.width * r->digits[d].patch.height; i++)
                    ink_p += r->digits[d].patch.pixels[i] > 0;
            CHECK_MSG(ink_w + 16 >= ink_p && ink_w <= ink_p + 16,
                      "whole %llu ink pixels, parts %llu", (unsigned long long)ink_w,
                      (unsigned long long)ink_p);
            /* and an input of its own, prepared as the digits' are */
            REQUIRE(r->alt_inputs);
            float got[29 * 29];
            CHECK_INT_EQ(nc_prep_apply(&a->whole.patch, &prep, got), 0);
            CHECK(memcmp(got, r->alt_inputs, sizeof got) == 0);
        }
    }
    nc_segment_result_free(r);

    p.expected_count = 6;                       /* the count has chosen: none */
    r = run(img, &p);
    if (r) {
        CHECK_INT_EQ(r->count, 6);
        CHECK_INT_EQ(r->alt_count, 0);
    }
    nc_segment_result_free(r);
    p.alternatives = 2;
    nc_segment_result *bad = NULL;
    CHECK_INT_EQ(nc_segment_image(img, &p, &bad), -EINVAL);
    nc_image_free(img);

    /* test_touching's 0 and 3 (a pair 1.55 line heights wide): cut, never
     * offered whole */
    img = paper(520, 160, PAPER);
    REQUIRE(img);
    uint32_t z = find_label(0, 0), t = find_label(3, 0);
    draw_digit(img, 1, 20, 40, 2);
    draw_digit(img, 4, 90, 40, 2);
    nc_rect zr = draw_digit(img, z, 170, 40, 2);
    nc_rect tr = place_digit(img, t, zr.x + zr.width - 4, 40, 2);
    draw_digit(img, 7, tr.x + tr.width + 24, 40, 2);
    p.expected_count = 0;
    p.alternatives = 1;
    r = run(img, &p);
    if (r) {
        CHECK_INT_EQ(r->count, 5);
        CHECK_INT_EQ(r->alt_count, 0);
    }
    nc_segment_result_free(r);
    nc_image_free(img);
}

/* A broad 5 whose top bar runs far to the right (a validation frame): one
 * component 1.25 line heights wide, which step 7 cut in two at the gap
 * under the bar, so the bar alone was read as a digit.  A cut that leaves a
 * part shorter than half the line is not made. */
static void test_broad_five(void)
{
    nc_rect want[6];
    nc_image *img = five_digits_on(480, 160, want);
    REQUIRE(img);
    uint32_t h, top;
    line_extent(want, 5, &h, &top);
    const uint32_t x = 380, bottom = top + h, w5 = h * 125 / 100;
    fill(img, x, top, x + w5, top + 5);                 /* the bar */
    fill(img, x, top, x + 4, top + h / 2);              /* the stem */
    fill(img, x, top + h / 2 - 2, x + h / 2, top + h / 2 + 2);
    fill(img, x + h / 2 - 4, top + h / 2 - 2, x + h / 2, bottom);
    fill(img, x, bottom - 4, x + h / 2, bottom);        /* the bowl */
    want[5] = (nc_rect){ x, top, w5, h };
    nc_segment_result *r = run(img, NULL);
    if (r)
        check_boxes(r, want, 6, "broad 5");
    nc_segment_result_free(r);
    nc_image_free(img);
}

/* A box drawn around the string whose sides touch digits (docs/lessons.md,
 * "Camera pipeline"): the first digit touches the left side and the tallest one
 * the top.  Both used to go with the box (one component, dropped as a box);
 * now the box's sides leave the mask and the digits come free.  Drawn
 * level, then turned by a pixel in 40 (a degree and a half). */
static void test_box_touching(void)
{
    for (uint32_t slant = 0; slant < 2; slant++) {
        nc_rect want[5];
        nc_image *img = five_digits(want);
        REQUIRE(img);
        uint32_t top = want[0].y, bottom = 0;
        for (uint32_t i = 0; i < 5; i++) {
            if (want[i].y < top)
                top = want[i].y;
            if (want[i].y + want[i].height > bottom)
                bottom = want[i].y + want[i].height;
        }
        uint32_t x0 = want[0].x - 2, x1 = 390, y0 = top - 2, y1 = bottom + 16;
        /* turned anticlockwise: the top and bottom rise to the right,
         * the sides lean right going down */
        for (uint32_t x = x0; x < x1 + 2; x++) {
            uint32_t d = slant ? (x - x0) / 40 : 0;
            fill(img, x, y0 - d, x + 1, y0 - d + 2);        /* top */
            fill(img, x, y1 - d, x + 1, y1 - d + 2);        /* bottom */
        }
        for (uint32_t y = y0; y < y1 + 2; y++) {
            uint32_t d = slant ? (y - y0) / 40 : 0;
            fill(img, x0 + d, y, x0 + d + 2, y + 1);        /* left */
            fill(img, x1 + d, y, x1 + d + 2, y + 1);        /* right */
        }
        nc_segment_result *r = run(img, NULL);
        if (r)
            check_boxes(r, want, 5, slant ? "box touching digits, slanted" : "box touching digits");
        nc_segment_result_free(r);
        nc_image_free(img);
    }
}

static void test_polarity(void)
{
    nc_rect want[5];
    nc_image *img = five_digits(want);
    REQUIRE(img);
    nc_image_invert(img);                   /* light ink on dark ground */
    nc_segment_params p;
    nc_segment_params_default(&p);
    for (uint32_t mode = 0; mode < 2; mode++) {
        p.binarise = mode;
        nc_segment_result *r = run(img, &p);
        if (r) {
            check_boxes(r, want, 5, mode ? "light ink/otsu" : "light ink/adaptive");
            CHECK_INT_EQ(r->polarity, NC_SEGMENT_POLARITY_LIGHT_INK);
        }
        nc_segment_result_free(r);
    }
    /* Forcing the wrong polarity finds holes, not these digits. */
    p.binarise = NC_SEGMENT_BINARISE_ADAPTIVE;
    p.polarity = NC_SEGMENT_POLARITY_DARK_INK;
    nc_segment_result *r = run(img, &p);
    if (r) {
        uint32_t right = 0;
        for (uint32_t i = 0; i < r->count && i < 5; i++)
            right += iou(r->digits[i].box, want[i]) > 0.8;
        CHECK(right < 5);
    }
    nc_segment_result_free(r);
    nc_image_free(img);
}

static void test_uneven_light(void)
{
    nc_rect want[5];
    nc_image *img = five_digits(want);
    REQUIRE(img);
    /* Light falls from 1.0 on the left to 0.3 on the right, with a dark
     * corner: the paper on the right is darker than the ink on the left. */
    for (uint32_t y = 0; y < img->height; y++)
        for (uint32_t x = 0; x < img->width; x++) {
            double L = 1.0 - 0.7 * x / img->width;
            if (x > 300 && y > 110)
                L *= 0.7;
            uint8_t *p = &img->pixels[(size_t)y * img->stride + x];
            *p = (uint8_t)lrint(*p * L);
        }
    nc_segment_params p;
    nc_segment_params_default(&p);
    nc_segment_result *r = run(img, &p);
    if (r)
        check_boxes(r, want, 5, "uneven light/adaptive");
    nc_segment_result_free(r);
    /* The global threshold cannot serve both ends (not required, shown). */
    p.binarise = NC_SEGMENT_BINARISE_OTSU;
    r = run(img, &p);
    if (r && getenv("NC_TEST_VERBOSE"))
        fprintf(stderr, "uneven light/otsu: %u digits\n", r->count);
    nc_segment_result_free(r);
    nc_image_free(img);
}

static void test_empty(void)
{
    nc_image *img = paper(320, 240, 200);
    REQUIRE(img);
    for (uint32_t mode = 0; mode < 2; mode++) {
        nc_segment_params p;
        nc_segment_params_default(&p);
        p.binarise = mode;
        nc_segment_result *r = run(img, &p);
        if (r) {
            CHECK_INT_EQ(r->count, 0);
            CHECK_INT_EQ(r->line_count, 0);
            CHECK(r->digits == NULL && r->inputs == NULL);
        }
        nc_segment_result_free(r);
    }
    /* paper grain and sensor noise only */
    nc_test_rng rng = { 7 };
    for (size_t i = 0; i < (size_t)320 * 240; i++)
        img->pixels[i] = (uint8_t)(200 + (int)(nc_test_uniform(&rng) * 13) - 6);
    nc_segment_result *r = run(img, NULL);
    if (r)
        CHECK_INT_EQ(r->count, 0);
    nc_segment_result_free(r);
    nc_image_free(img);
    /* 1x1 */
    uint8_t px = 0;
    nc_image one;
    CHECK_INT_EQ(nc_image_view(&px, 1, 1, 0, &one), 0);
    r = run(&one, NULL);
    if (r)
        CHECK_INT_EQ(r->count, 0);
    nc_segment_result_free(r);
}

static void test_errors(void)
{
    static uint8_t px[64];
    nc_segment_result *r = NULL;
    nc_segment_params p;
    nc_image big = { NC_SEGMENT_MAX_DIM + 1, 1, NC_SEGMENT_MAX_DIM + 1, px };
    CHECK_INT_EQ(nc_segment_image(&big, NULL, &r), -ERANGE);
    nc_image tall = { 1, NC_IMAGE_MAX_DIM + 1, 1, px };
    CHECK_INT_EQ(nc_segment_image(&tall, NULL, &r), -ERANGE);
    nc_image zero = { 0, 8, 8, px };
    CHECK_INT_EQ(nc_segment_image(&zero, NULL, &r), -EINVAL);
    nc_image bad_stride = { 8, 8, 4, px };
    CHECK_INT_EQ(nc_segment_image(&bad_stride, NULL, &r), -EINVAL);
    CHECK_INT_EQ(nc_segment_image(NULL, NULL, &r), -EINVAL);
    nc_image ok = { 8, 8, 8, px };
    CHECK_INT_EQ(nc_segment_image(&ok, NULL, NULL), -EINVAL);
    CHECK_INT_EQ(nc_segment_frame(NULL, &ok, NULL, &r), -EINVAL);
    nc_segment_params_default(&p);
    p.window = 16;
    CHECK_INT_EQ(nc_segment_image(&ok, &p, &r), -EINVAL);
    nc_segment_params_default(&p);
    p.window = 4097;
    CHECK_INT_EQ(nc_segment_image(&ok, &p, &r), -ERANGE);
    nc_segment_params_default(&p);
    p.sauvola_k = NAN;
    CHECK_INT_EQ(nc_segment_image(&ok, &p, &r), -EINVAL);
    nc_segment_params_default(&p);
    p.max_components = NC_SEGMENT_MAX_COMPONENTS + 1;
    CHECK_INT_EQ(nc_segment_image(&ok, &p, &r), -ERANGE);
    nc_segment_params_default(&p);
    p.use_roi = 1;
    p.roi = (nc_rect){ 4, 4, 8, 8 };
    CHECK_INT_EQ(nc_segment_image(&ok, &p, &r), -ERANGE);
    nc_segment_params_default(&p);
    nc_prep bad = NC_PREP_CNN_29;
    bad.size = 0;
    p.prep = &bad;
    CHECK_INT_EQ(nc_segment_image(&ok, &p, &r), -EINVAL);
    CHECK(r == NULL);
    /* A frame of salt noise has more components than the cap allows. */
    nc_image *img = paper(256, 256, PAPER);
    REQUIRE(img);
    for (uint32_t y = 0; y < 256; y += 3)
        for (uint32_t x = 0; x < 256; x += 3)
            img->pixels[(size_t)y * 256 + x] = 0;
    nc_segment_params_default(&p);
    p.max_components = 1000;
    CHECK_INT_EQ(nc_segment_image(img, &p, &r), -ERANGE);
    nc_image_free(img);
}

static void test_roi_and_prep(void)
{
    nc_rect want[5];
    nc_image *img = five_digits(want);
    REQUIRE(img);
    nc_segment_params p;
    nc_segment_params_default(&p);
    p.use_roi = 1;
    p.roi = (nc_rect){ 150, 20, 250, 120 };  /* digits 2..4 */
    nc_prep prep = NC_PREP_CNN_29;
    p.prep = &prep;
    nc_segment_result *r = run(img, &p);
    if (r) {
        check_boxes(r, want + 2, 3, "roi");
        CHECK_INT_EQ(r->input_len, 29 * 29);
        CHECK(r->inputs != NULL);
        /* Each prepared input is close to the original MNIST digit prepared
         * the same way: the patch is clean. */
        for (uint32_t i = 0; r->inputs && i < r->count && i < 3; i++) {
            float ref[29 * 29];
            nc_image src;
            nc_image_view((uint8_t *)digit_px(2 + i), 28, 28, 0, &src);
            REQUIRE(nc_prep_apply(&src, &prep, ref) == 0);
            double diff = 0;
            for (uint32_t k = 0; k < 29 * 29; k++)
                diff += fabs(ref[k] - r->inputs[(size_t)i * 841 + k]);
            CHECK_MSG(diff / 841 < 0.06, "digit %u: mean |diff| %.3f", i, diff / 841);
            CHECK_INT_EQ(r->digits[i].flags & NC_SEGMENT_DIGIT_NOPREP, 0);
            nc_rect pb = r->digits[i].patch_box, b = r->digits[i].box;
            CHECK(pb.x + 1 == b.x && pb.width == b.width + 2);
        }
    }
    nc_segment_result_free(r);
    nc_image_free(img);
}

/* ---- accuracy on rendered frames ------------------------------------------ */

static void test_rendered(void)
{
    nc_render_params rp;
    nc_render_params_default(&rp);
    rp.polarity = NC_RENDER_MIXED;
    nc_render_source src = { fx.pixels, fx.labels, fx.count, fx.rows, fx.cols };
    uint64_t rng = 20240607;
    nc_image *frame = NULL;
    nc_segmenter *seg = NULL;
    REQUIRE(nc_image_new(640, 480, &frame) == 0);
    REQUIRE(nc_segmenter_new(&seg) == 0);
    const uint32_t frames = 8;
    uint32_t digits = 0, right = 0, frames_right = 0;
    double seconds = 0;
    for (uint32_t f = 0; f < frames; f++) {
        nc_render_truth t;
        if (nc_render_frame(&rp, &src, &rng, frame, &t) < 0) {
            CHECK_MSG(0, "render frame %u", f);
            break;
        }
        const char *dump = getenv("NC_TEST_DUMP");     /* a folder, for eyes */
        if (dump) {
            char path[4096];
            snprintf(path, sizeof path, "%s/segment_%u.pgm", dump, f);
            FILE *fp = fopen(path, "wb");
            if (fp) {
                fprintf(fp, "P5\n%u %u\n255\n", frame->width, frame->height);
                fwrite(frame->pixels, 1, (size_t)frame->width * frame->height, fp);
                fclose(fp);
            }
        }
        nc_segment_result *r = NULL;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int err = nc_segment_frame(seg, frame, NULL, &r);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        seconds += (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
        CHECK_MSG(err == 0, "frame %u: %d", f, err);
        if (err)
            continue;
        /* truth in reading order: strings top to bottom, digits left to right */
        uint32_t k = 0, frame_ok = 1;
        for (uint32_t s = 0; s < t.string_count; s++)
            for (uint32_t d = 0; d < t.strings[s].count; d++, k++) {
                digits++;
                nc_rect want = t.strings[s].digits[d].box;
                int ok = k < r->count && box_ok(r->digits[k].box, want);
                right += ok;
                frame_ok &= ok;
                if (!ok && getenv("NC_TEST_VERBOSE")) {
                    nc_rect g = k < r->count ? r->digits[k].box : (nc_rect){ 0, 0, 0, 0 };
                    fprintf(stderr, "frame %u string %u digit %u: got %u,%u %ux%u want %u,%u %ux%u\n",
                            f, s, d, g.x, g.y, g.width, g.height, want.x, want.y,
                            want.width, want.height);
                }
            }
        frame_ok &= r->count == k;
        frames_right += frame_ok;
        if (getenv("NC_TEST_VERBOSE"))
            fprintf(stderr, "frame %u: %u digits found, %u true, polarity %u/%u\n", f, r->count, k,
                    r->polarity, t.polarity);
        CHECK_INT_EQ(r->polarity, t.polarity ? NC_SEGMENT_POLARITY_LIGHT_INK
                                             : NC_SEGMENT_POLARITY_DARK_INK);
        nc_segment_result_free(r);
    }
    fprintf(stderr, "rendered 640x480: %u/%u digits right, %u/%u frames exact, "
                    "%.2f ms per frame\n", right, digits, frames_right, frames,
            1e3 * seconds / frames);
    CHECK_MSG(right * 100 >= digits * 99, "%u of %u digits right", right, digits);
    nc_segmenter_free(seg);
    nc_image_free(frame);
}

int main(void)
{
    int err = load_fixture();
    if (err < 0) {
        fprintf(stderr, "no MNIST fixture (NC_TEST_DATA): %d\n", err);
        return NC_TEST_SKIP;
    }
    test_clean();
    test_two_lines();
    test_touching();
    test_alternatives();
    test_count_unsplit();
    test_count_lone_line();
    test_count_fragment();
    test_lone_pieces();
    test_broken();
    test_specks();
    test_clutter();
    test_box_touching();
    test_broad_five();
    test_polarity();
    test_uneven_light();
    test_empty();
    test_errors();
    test_roi_and_prep();
    test_rendered();
    nc_dataset_fini(&fx);
    return nc_test_finish();
}

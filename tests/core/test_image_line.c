/* tests/core/test_image_line.c — NC_PREP_LINE (core/image/image.h): a
 * character cell as tall as its text line becomes the CNN's input with its
 * size and height on the line kept.
 *
 * Hand-checked cases: a small o and a big O drawn in one cell stay of
 * different sizes; a period at the baseline stays at the bottom and an
 * apostrophe at the top; a 29x29 cell centred by mass passes through
 * unchanged; margins along x do not move the ink; dark ink on paper gives
 * the light-ink result; odd sizes, 1x1, very wide and very tall cells;
 * views; invalid settings; a segmented line's geometry and cells
 * (nc_line_geometry, nc_line_cell); a photo cleaned as a cell
 * (nc_image_clean_cell). */
#include "image.h"
#include "image_clean.h"
#include "test.h"

#include <math.h>
#include <string.h>

#define SIDE 29
#define PLANE (SIDE * SIDE)

/* The cell's height to all 29 rows (NC_PREP_LINE_29 takes it to 28). */
#define FULL_29 ((nc_prep){ NC_PREP_LINE, 29, 29, 0, 0, 0.0f, 0, 0, { 0 }, { 0 } })

static nc_image *blank(uint32_t w, uint32_t h)
{
    nc_image *img = NULL;
    return nc_image_new(w, h, &img) < 0 ? NULL : img;
}

/* A ring of radius r (pen about 2 px) centred at (cx, cy), ink 255. */
static void draw_ring(nc_image *img, double cx, double cy, double r)
{
    for (uint32_t y = 0; y < img->height; y++)
        for (uint32_t x = 0; x < img->width; x++) {
            double d = hypot(x - cx, y - cy);
            if (fabs(d - r) <= 1.0)
                img->pixels[(size_t)y * img->stride + x] = 255;
        }
}

static void fill_rect(nc_image *img, uint32_t x, uint32_t y, uint32_t w, uint32_t h,
                      uint8_t v)
{
    for (uint32_t j = y; j < y + h; j++)
        memset(img->pixels + (size_t)j * img->stride + x, v, w);
}

/* Rows and columns of the field holding values above 0.25, and the
 * intensity-weighted centre of mass. */
typedef struct ink_box {
    int x0, y0, x1, y1;     /* x0 < 0: none */
    double cx, cy;
} ink_box;

static ink_box field_ink(const float *f)
{
    ink_box b = { -1, -1, -1, -1, 0, 0 };
    double s = 0, sx = 0, sy = 0;
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++) {
            double a = f[y * SIDE + x];
            s += a;
            sx += a * x;
            sy += a * y;
            if (a <= 0.25)
                continue;
            if (b.x0 < 0 || x < b.x0) b.x0 = x;
            if (x > b.x1) b.x1 = x;
            if (b.y0 < 0) b.y0 = y;
            b.y1 = y;
        }
    if (s > 0) {
        b.cx = sx / s;
        b.cy = sy / s;
    }
    return b;
}

static int in_unit_range(const float *f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!(f[i] >= 0.0f && f[i] <= 1.0f))
            return 0;
    return 1;
}

/* o (x-height) and O (capital height) on one baseline, in cells of the
 * same line height: after the prep the O is still about twice as tall,
 * and both sit on the same row.  NC_PREP_CNN_29 makes them the same size,
 * which is the confusion the line prep removes. */
static void test_sizes_kept(void)
{
    const nc_prep line = FULL_29, cnn = NC_PREP_CNN_29;
    nc_image *small = blank(40, 58), *big = blank(40, 58);
    REQUIRE(small && big);
    /* line height 58: both bottoms on row 39, capitals 27 tall, o 15 */
    draw_ring(small, 20, 32, 6);
    draw_ring(big, 20, 26, 12);
    float a[PLANE], b[PLANE];
    CHECK_INT_EQ(nc_prep_apply(small, &line, a), 0);
    CHECK_INT_EQ(nc_prep_apply(big, &line, b), 0);
    CHECK(in_unit_range(a, PLANE) && in_unit_range(b, PLANE));
    ink_box ia = field_ink(a), ib = field_ink(b);
    const int ha = ia.y1 - ia.y0 + 1, hb = ib.y1 - ib.y0 + 1;
    /* 58 rows to 29: the o is about 7 rows, the O about 13 */
    CHECK_MSG(ha >= 5 && ha <= 8 && hb >= 12 && hb <= 15, "o %d rows, O %d rows", ha, hb);
    CHECK_MSG(abs(ia.y1 - ib.y1) <= 1, "bottoms %d and %d", ia.y1, ib.y1);
    /* row 39 of 58 lands on row 19 */
    CHECK_MSG(ib.y1 >= 18 && ib.y1 <= 20, "O's bottom on row %d", ib.y1);
    /* centred along x by mass */
    CHECK_NEAR(ia.cx, 14.0, 0.6, 0);
    CHECK_NEAR(ib.cx, 14.0, 0.6, 0);

    CHECK_INT_EQ(nc_prep_apply(small, &cnn, a), 0);
    CHECK_INT_EQ(nc_prep_apply(big, &cnn, b), 0);
    ia = field_ink(a);
    ib = field_ink(b);
    CHECK(abs((ia.y1 - ia.y0) - (ib.y1 - ib.y0)) <= 1);
    nc_image_free(small);
    nc_image_free(big);
}

/* Marks keep their height on the line: a period on the baseline near the
 * bottom, an apostrophe near the top, whatever the cell's width. */
static void test_marks_stay(void)
{
    const nc_prep line = FULL_29;
    nc_image *dot = blank(12, 58), *tick = blank(12, 58);
    REQUIRE(dot && tick);
    fill_rect(dot, 4, 34, 4, 4, 255);       /* rows 34..37, just above row 38 */
    fill_rect(tick, 5, 6, 2, 8, 255);       /* rows 6..13 */
    float a[PLANE], b[PLANE];
    CHECK_INT_EQ(nc_prep_apply(dot, &line, a), 0);
    CHECK_INT_EQ(nc_prep_apply(tick, &line, b), 0);
    ink_box id = field_ink(a), it = field_ink(b);
    CHECK_MSG(id.cy > 16.5 && id.cy < 19.0, "period's centre on row %.2f", id.cy);
    CHECK_MSG(it.cy > 3.0 && it.cy < 5.5, "apostrophe's centre on row %.2f", it.cy);
    CHECK_MSG(id.y1 - id.y0 <= 2, "period %d rows", id.y1 - id.y0 + 1);
    CHECK_NEAR(id.cx, 14.0, 0.6, 0);
    nc_image_free(dot);
    nc_image_free(tick);
}

/* A 29x29 cell whose mass already sits on column 14 is p / 255 exactly
 * (what `neocog-unipen --size-mode line` renders); margins on one side
 * of a cell shift nothing but the centring. */
static void test_identity_and_margins(void)
{
    const nc_prep line = FULL_29;
    nc_image *cell = blank(SIDE, SIDE);
    REQUIRE(cell);
    fill_rect(cell, 12, 8, 5, 12, 200);     /* columns 12..16: mass on 14 */
    fill_rect(cell, 13, 10, 3, 4, 255);
    float out[PLANE];
    CHECK_INT_EQ(nc_prep_apply(cell, &line, out), 0);
    int same = 1;
    for (int i = 0; i < PLANE; i++)
        same &= fabsf(out[i] - cell->pixels[i] / 255.0f) < 1e-6f;
    CHECK(same);

    /* NC_PREP_LINE_29: a 28x28 rendering as it is, plus an empty last row
     * and column (the 28 layout padded to 29, as NC_PREP_CNN_29 does). */
    nc_image *r28 = blank(28, 28);
    REQUIRE(r28);
    fill_rect(r28, 12, 14, 5, 5, 255);      /* a period-sized blob low down */
    fill_rect(r28, 13, 2, 3, 9, 128);       /* and a grey apostrophe high up */
    const nc_prep l29 = NC_PREP_LINE_29;
    CHECK_INT_EQ(nc_prep_apply(r28, &l29, out), 0);
    same = 1;
    for (int y = 0; y < SIDE; y++)
        for (int x = 0; x < SIDE; x++)
            same &= out[y * SIDE + x] ==
                    (x < 28 && y < 28 ? r28->pixels[y * 28 + x] / 255.0f : 0.0f);
    CHECK(same);
    nc_image_free(r28);

    /* The same ink with 9 empty columns on its left: the same input. */
    nc_image *wide = blank(SIDE + 9, SIDE);
    REQUIRE(wide);
    for (uint32_t y = 0; y < SIDE; y++)
        memcpy(wide->pixels + (size_t)y * wide->stride + 9, cell->pixels + (size_t)y * SIDE,
               SIDE);
    /* 38 columns scaled by 29/29 stay 38 > 29: the width sets the scale */
    float w[PLANE];
    CHECK_INT_EQ(nc_prep_apply(wide, &line, w), 0);
    ink_box iw = field_ink(w);
    CHECK_NEAR(iw.cx, 14.0, 0.6, 0);
    nc_image_free(wide);

    /* A cell narrower than the field with its ink off-centre. */
    nc_image *narrow = blank(20, SIDE);
    REQUIRE(narrow);
    fill_rect(narrow, 1, 8, 5, 12, 255);
    CHECK_INT_EQ(nc_prep_apply(narrow, &line, w), 0);
    iw = field_ink(w);
    CHECK_NEAR(iw.cx, 14.0, 0.6, 0);
    CHECK(iw.y0 == 8 && iw.y1 == 19);       /* rows unchanged: height 29 to 29 */
    nc_image_free(narrow);
    nc_image_free(cell);
}

/* Dark ink on paper (invert) or grey paper gives the clean light-ink
 * result: the same contrast stretch as the other preps. */
static void test_polarity(void)
{
    nc_image *light = blank(20, 40), *dark = blank(20, 40);
    REQUIRE(light && dark);
    draw_ring(light, 10, 24, 6);
    for (size_t i = 0; i < 20 * 40; i++)
        dark->pixels[i] = (uint8_t)(230 - light->pixels[i] * 200 / 255);
    nc_prep p = FULL_29, q = p;
    q.invert = 1;
    q.threshold = -1.0f;
    float a[PLANE], b[PLANE];
    CHECK_INT_EQ(nc_prep_apply(light, &p, a), 0);
    CHECK_INT_EQ(nc_prep_apply(dark, &q, b), 0);
    double diff = 0;
    for (int i = 0; i < PLANE; i++)
        diff = fmax(diff, fabs(a[i] - b[i]));
    CHECK_MSG(diff < 0.02, "largest difference %g", diff);
    nc_image_free(light);
    nc_image_free(dark);
}

/* Odd sizes: 1x1, very wide, very tall, sizes that do not divide. */
static void test_awkward_sizes(void)
{
    const nc_prep line = FULL_29;
    float out[PLANE];
    uint8_t px = 255;
    nc_image one;
    REQUIRE(nc_image_view(&px, 1, 1, 0, &one) == 0);
    /* one pixel, a square cell: the whole field */
    CHECK_INT_EQ(nc_prep_apply(&one, &line, out), 0);
    ink_box b = field_ink(out);
    CHECK(b.x0 == 0 && b.x1 == SIDE - 1 && b.y0 == 0 && b.y1 == SIDE - 1);
    px = 0;
    CHECK_INT_EQ(nc_prep_apply(&one, &line, out), -ENOENT);

    /* 2000 x 10, ink all along: the width sets the scale, one row */
    nc_image *wide = blank(2000, 10), *tall = blank(5, 2000);
    REQUIRE(wide && tall);
    fill_rect(wide, 0, 3, 2000, 4, 255);
    CHECK_INT_EQ(nc_prep_apply(wide, &line, out), 0);
    b = field_ink(out);
    CHECK(b.x0 == 0 && b.x1 == SIDE - 1 && b.y0 == b.y1 && b.y0 == SIDE / 2);
    CHECK(in_unit_range(out, PLANE));
    /* 5 x 2000: one column, ink in the lower half stays in the lower half */
    fill_rect(tall, 0, 1200, 5, 600, 255);
    CHECK_INT_EQ(nc_prep_apply(tall, &line, out), 0);
    b = field_ink(out);
    CHECK(b.x0 == b.x1 && b.y0 >= 16 && b.y0 <= 18 && b.y1 >= 25 && b.y1 <= 27);
    nc_image_free(wide);
    nc_image_free(tall);

    /* Every size from 1 to 70 both ways: ink found, values in [0, 1], the
     * cell's height to 29 rows unless its width is limiting. */
    int ok = 1;
    for (uint32_t h = 1; h <= 70 && ok; h += 3)
        for (uint32_t w = 1; w <= 70 && ok; w += 4) {
            nc_image *c = blank(w, h);
            if (!c) {
                ok = 0;
                break;
            }
            fill_rect(c, 0, 0, w, h, 255);  /* all ink: the scaled cell's box */
            int e = nc_prep_apply(c, &line, out);
            b = field_ink(out);
            uint32_t ew = (uint32_t)((w * 29 * 2 + h) / (2 * h)), eh = 29;
            if (ew > 29) {
                ew = 29;
                eh = (uint32_t)((h * 29 * 2 + w) / (2 * w));
                eh = eh ? eh : 1;
                eh = eh > 29 ? 29 : eh;
            }
            ew = ew ? ew : 1;
            ok = e == 0 && in_unit_range(out, PLANE) && (uint32_t)(b.y1 - b.y0 + 1) == eh &&
                 (uint32_t)(b.x1 - b.x0 + 1) == ew && b.y0 == (int)((29 - eh) / 2);
            CHECK_MSG(ok, "%ux%u: err %d, ink %d..%d x %d..%d, expected %ux%u", w, h, e, b.x0,
                      b.x1, b.y0, b.y1, ew, eh);
            nc_image_free(c);
        }
}

/* Views, pad, and a smaller box: the cell's height to box rows, centred. */
static void test_views_and_box(void)
{
    nc_image *cell = blank(30, 60);
    REQUIRE(cell);
    fill_rect(cell, 0, 0, 30, 60, 255);
    nc_prep p = FULL_29;
    p.box = 21;
    float out[PLANE];
    CHECK_INT_EQ(nc_prep_apply(cell, &p, out), 0);
    ink_box b = field_ink(out);
    CHECK(b.y0 == 4 && b.y1 == 24 && b.x1 - b.x0 + 1 == 11);

    nc_prep v = FULL_29;
    v.n_views = 2;
    v.view_box[0] = 29;
    v.view_box[1] = 21;
    CHECK_INT_EQ(nc_prep_check(&v), 0);
    CHECK_INT_EQ(nc_prep_out_len(&v), 2 * PLANE);
    float two[2 * PLANE], one[PLANE];
    CHECK_INT_EQ(nc_prep_apply(cell, &v, two), 0);
    CHECK(!memcmp(two + PLANE, out, sizeof out));
    nc_prep first = nc_prep_view(&v, 0);
    CHECK_INT_EQ(nc_prep_apply(cell, &first, one), 0);
    CHECK(!memcmp(two, one, sizeof one));

    nc_prep padded = FULL_29;
    padded.pad = 2;
    float big[33 * 33];
    CHECK_INT_EQ(nc_prep_apply(cell, &padded, big), 0);
    CHECK(big[0] == 0.0f && big[2 * 33 + 2 + 14] > 0.5f);
    nc_image_free(cell);
}

static void test_invalid(void)
{
    nc_image *cell = blank(10, 20);
    REQUIRE(cell);
    fill_rect(cell, 3, 5, 4, 10, 255);
    float out[33 * 33];
    const nc_prep line = FULL_29;
    CHECK_INT_EQ(nc_prep_check(&line), 0);
    CHECK_INT_EQ(nc_prep_apply(NULL, &line, out), -EINVAL);
    CHECK_INT_EQ(nc_prep_apply(cell, NULL, out), -EINVAL);
    CHECK_INT_EQ(nc_prep_apply(cell, &line, NULL), -EINVAL);
    nc_prep bad = line;
    bad.deskew = 1;
    CHECK_INT_EQ(nc_prep_apply(cell, &bad, out), -EINVAL);
    bad = line;
    bad.n_views = 1;
    bad.view_box[0] = 29;
    bad.view_deskew[0] = NC_PREP_DESKEW_GENTLE;
    CHECK_INT_EQ(nc_prep_check(&bad), -EINVAL);
    bad = line;
    bad.box = 30;
    CHECK_INT_EQ(nc_prep_apply(cell, &bad, out), -ERANGE);
    bad = line;
    bad.box = 0;
    CHECK_INT_EQ(nc_prep_apply(cell, &bad, out), -EINVAL);
    bad = line;
    bad.kind = 4;
    CHECK_INT_EQ(nc_prep_apply(cell, &bad, out), -EINVAL);
    nc_image huge = *cell;
    huge.height = NC_IMAGE_MAX_DIM + 1;
    CHECK_INT_EQ(nc_prep_apply(&huge, &line, out), -ERANGE);
    /* out untouched on error */
    out[0] = 7.0f;
    memset(cell->pixels, 0, 10 * 20);
    CHECK_INT_EQ(nc_prep_apply(cell, &line, out), -ENOENT);
    CHECK(out[0] == 7.0f);
    nc_image_free(cell);
}

/* A line's geometry and its cells: a capital H and a small o cut from one
 * line (patches as core/segment hands them, their boxes in the frame) land
 * in NC_PREP_LINE_29's field with the line's scale on about 15 rows and
 * both bottoms on row 20, the o about half as tall. */
static void test_line_cells(void)
{
    /* frame rows: capitals 30 tall from row 100, baseline (first row below
     * the ink) 130; an o of 16 rows; a period; a descender g */
    const nc_rect boxes[] = {
        { 10, 100, 20, 30 },    /* H */
        { 40, 114, 18, 16 },    /* o */
        { 62, 126, 4, 4 },      /* . */
        { 70, 114, 18, 26 },    /* g, 10 below the line */
        { 95, 100, 16, 30 },    /* k */
    };
    uint32_t scale = 0, base = 0;
    CHECK_INT_EQ(nc_line_geometry(boxes, 5, &scale, &base), 0);
    CHECK_INT_EQ(scale, 30);
    CHECK_INT_EQ(base, 130);
    CHECK_INT_EQ(nc_line_geometry(boxes, 0, &scale, &base), -EINVAL);
    CHECK_INT_EQ(nc_line_geometry(NULL, 1, &scale, &base), -EINVAL);
    CHECK_INT_EQ(nc_line_geometry(boxes + 2, 1, &scale, &base), 0);
    CHECK(scale == 4 && base == 130);
    /* two pieces: the taller is the scale (round(0.75) = 1), as in core/segment */
    CHECK_INT_EQ(nc_line_geometry(boxes, 2, &scale, &base), 0);
    CHECK(scale == 30 && base == 130);
    /* four: round(2.25) = 2, the third of 4, 16, 26, 30; the bottoms of the
     * o, g and k (the period is under half of 26) are 130, 140, 130 */
    CHECK_INT_EQ(nc_line_geometry(boxes + 1, 4, &scale, &base), 0);
    CHECK(scale == 26 && base == 130);

    nc_image *h = blank(20, 30), *o = blank(18, 16);
    REQUIRE(h && o);
    fill_rect(h, 0, 0, 4, 30, 255);
    fill_rect(h, 16, 0, 4, 30, 255);
    fill_rect(h, 0, 13, 20, 4, 255);
    draw_ring(o, 8.5, 7.5, 7);
    nc_image *ch = NULL, *co = NULL;
    CHECK_INT_EQ(nc_line_cell(h, 100, 30, 130, &ch), 0);
    CHECK_INT_EQ(nc_line_cell(o, 114, 30, 130, &co), 0);
    REQUIRE(ch && co);
    /* 28 * 30 / 15 = 56 rows from 130 - 42 = 88 */
    CHECK(ch->width == 20 && ch->height == 56 && co->height == 56);
    CHECK(ch->pixels[(size_t)(99 - 88) * ch->stride] == 0 &&
          ch->pixels[(size_t)(100 - 88) * ch->stride] == 255 &&
          ch->pixels[(size_t)(129 - 88) * ch->stride] == 255 &&
          ch->pixels[(size_t)(130 - 88) * ch->stride] == 0);
    const nc_prep l29 = NC_PREP_LINE_29;
    float a[PLANE], b[PLANE];
    CHECK_INT_EQ(nc_prep_apply(ch, &l29, a), 0);
    CHECK_INT_EQ(nc_prep_apply(co, &l29, b), 0);
    ink_box ih = field_ink(a), io = field_ink(b);
    CHECK_MSG(ih.y1 - ih.y0 + 1 == 15 && ih.y1 == 20, "H rows %d..%d", ih.y0, ih.y1);
    CHECK_MSG(io.y1 >= 19 && io.y1 <= 20 && io.y1 - io.y0 + 1 <= 9, "o rows %d..%d", io.y0,
              io.y1);
    nc_image_free(ch);
    nc_image_free(co);

    /* a patch reaching below the cell grows it: no ink lost */
    CHECK_INT_EQ(nc_line_cell(h, 120, 30, 130, &ch), 0);
    REQUIRE(ch);
    CHECK(ch->height == 120 + 30 - 88);
    CHECK(ch->pixels[(size_t)(ch->height - 1) * ch->stride] == 255);
    nc_image_free(ch);
    /* and above it */
    CHECK_INT_EQ(nc_line_cell(h, 50, 30, 130, &ch), 0);
    REQUIRE(ch);
    CHECK(ch->height == 88 + 56 - 50 && ch->pixels[0] == 255);
    nc_image_free(ch);

    CHECK_INT_EQ(nc_line_cell(h, 100, 0, 130, &ch), -EINVAL);
    CHECK_INT_EQ(nc_line_cell(NULL, 100, 30, 130, &ch), -EINVAL);
    CHECK_INT_EQ(nc_line_cell(h, 100, 30, 130, NULL), -EINVAL);
    CHECK_INT_EQ(nc_line_cell(h, 100, 10000, 130, &ch), -ERANGE);
    CHECK_INT_EQ(nc_line_cell(h, -100000, 30, 130, &ch), -ERANGE);
    nc_image_free(h);
    nc_image_free(o);
}

/* A photo taken as a cell (nc_image_clean_cell): the paper cleaned away,
 * the character kept where it was in the frame, where nc_image_clean crops
 * it; clean input unchanged; a large photo at its working size. */
static void test_clean_cell(void)
{
    /* dark ring low in a tall frame of grey paper */
    nc_image *photo = blank(40, 90);
    REQUIRE(photo);
    for (size_t i = 0; i < 40 * 90; i++)
        photo->pixels[i] = (uint8_t)(190 + i % 7);
    for (uint32_t y = 0; y < 90; y++)
        for (uint32_t x = 0; x < 40; x++) {
            double d = hypot(x - 20.0, y - 70.0);
            if (fabs(d - 7.0) <= 1.5)
                photo->pixels[(size_t)y * 40 + x] = 40;
        }
    nc_image *cell = NULL, *crop = NULL;
    CHECK_INT_EQ(nc_image_clean_cell(photo, NC_POLARITY_AUTO, &cell), 0);
    CHECK_INT_EQ(nc_image_clean(photo, NC_POLARITY_AUTO, &crop, NULL), 0);
    REQUIRE(cell && crop);
    CHECK(cell->width == 40 && cell->height == 90);
    CHECK(crop->height < 30);
    nc_rect b;
    CHECK_INT_EQ(nc_image_bbox(cell, 0, &b), 0);
    CHECK_MSG(b.y >= 60 && b.y <= 63 && b.y + b.height >= 77 && b.y + b.height <= 80 &&
                  b.x >= 10 && b.x + b.width <= 30, "ink %u..%u x %u..%u", b.x,
              b.x + b.width, b.y, b.y + b.height);
    /* the paper is 0 away from the ring */
    CHECK(cell->pixels[5 * 40 + 5] == 0 && cell->pixels[40 * 40 + 20] == 0);
    /* the line prep of the cell keeps the ring low and small */
    float out[PLANE];
    const nc_prep l29 = NC_PREP_LINE_29;
    CHECK_INT_EQ(nc_image_clean_prep(photo, NC_POLARITY_AUTO, &l29, out), 0);
    ink_box ib = field_ink(out);
    CHECK_MSG(ib.y0 >= 18 && ib.y1 <= 26, "ring on rows %d..%d", ib.y0, ib.y1);
    nc_image_free(cell);
    nc_image_free(crop);

    /* clean input: the same pixels */
    nc_image *clean = blank(20, 30);
    REQUIRE(clean);
    fill_rect(clean, 5, 20, 6, 6, 255);
    CHECK_INT_EQ(nc_image_clean_cell(clean, NC_POLARITY_LIGHT_INK, &cell), 0);
    REQUIRE(cell);
    CHECK(cell->width == 20 && cell->height == 30 &&
          !memcmp(cell->pixels, clean->pixels, 20 * 30));
    nc_image_free(cell);

    /* a large photo: the frame at its working size, the ring where it was */
    nc_image *big = blank(400, 800);
    REQUIRE(big);
    memset(big->pixels, 200, 400 * 800);
    for (uint32_t y = 0; y < 800; y++)
        for (uint32_t x = 0; x < 400; x++)
            if (fabs(hypot(x - 200.0, y - 600.0) - 60.0) <= 10.0)
                big->pixels[(size_t)y * 400 + x] = 30;
    CHECK_INT_EQ(nc_image_clean_cell(big, NC_POLARITY_DARK_INK, &cell), 0);
    REQUIRE(cell);
    CHECK(cell->width == NC_CLEAN_WORK_SIDE && cell->height == 2 * NC_CLEAN_WORK_SIDE);
    CHECK_INT_EQ(nc_image_bbox(cell, 0, &b), 0);
    /* rows 530..670 of 800 are 424..536 of 640 */
    CHECK_MSG(b.y >= 418 && b.y <= 428 && b.y + b.height >= 532 && b.y + b.height <= 542,
              "ring on rows %u..%u", b.y, b.y + b.height);
    nc_image_free(cell);

    memset(clean->pixels, 0, 20 * 30);
    CHECK_INT_EQ(nc_image_clean_cell(clean, NC_POLARITY_LIGHT_INK, &cell), -ENOENT);
    CHECK_INT_EQ(nc_image_clean_cell(NULL, NC_POLARITY_AUTO, &cell), -EINVAL);
    CHECK_INT_EQ(nc_image_clean_cell(photo, NC_POLARITY_AUTO, NULL), -EINVAL);
    nc_image_free(clean);
    nc_image_free(big);
    nc_image_free(photo);
}

int main(void)
{
    test_sizes_kept();
    test_marks_stay();
    test_identity_and_margins();
    test_polarity();
    test_awkward_sizes();
    test_views_and_box();
    test_invalid();
    test_line_cells();
    test_clean_cell();
    return nc_test_finish();
}

/* tests/core/test_strokes.c — pen strokes to images (core/data/strokes.c).
 *
 * Resampling puts points at equal arc length and keeps the ends; the pen
 * draws a horizontal stroke as a horizontal bar of the chosen width; the
 * MNIST layout puts the mass centre on (14, 14) and the ink box at 20; the
 * line layout keeps sizes (a small o stays smaller than a big O) and puts
 * the baseline on its row; jitter repeats for a seed and differs for
 * another; bad input is refused without touching outputs. */
#include "strokes.h"

#include <math.h>
#include <string.h>

#include "test.h"

#define S 28

/* One stroke from n (x, y) pairs, in caller storage. */
static nc_strokes one_stroke(uint32_t *start, float *xy, uint32_t n)
{
    start[0] = 0;
    start[1] = n;
    return (nc_strokes){ 1, n, start, xy };
}

static void test_resample_spacing(void)
{
    /* An L: 10 units right then 5 down, sampled unevenly. */
    float xy[] = { 0, 0, 1, 0, 7, 0, 10, 0, 10, 5 };
    uint32_t st[2];
    nc_strokes in = one_stroke(st, xy, 5), out;
    REQUIRE(nc_strokes_resample(&in, 2.0f, &out) == 0);
    /* length 15: samples at 0, 2, ..., 14 (8) and the end point */
    CHECK_INT_EQ(out.n_points, 9);
    CHECK_INT_EQ(out.start[1], 9);
    for (uint32_t i = 0; i + 2 < out.n_points; i++) {
        double step = hypot(out.xy[2 * i + 2] - out.xy[2 * i], out.xy[2 * i + 3] - out.xy[2 * i + 1]);
        CHECK_NEAR(step, 2.0, 1e-5, 0);
    }
    CHECK_NEAR(out.xy[2 * 5], 10.0, 1e-5, 0);    /* arc length 10: the corner */
    CHECK_NEAR(out.xy[2 * 5 + 1], 0.0, 1e-5, 0);
    CHECK_NEAR(out.xy[2 * 8], 10.0, 1e-6, 0);    /* the end point is kept */
    CHECK_NEAR(out.xy[2 * 8 + 1], 5.0, 1e-6, 0);
    nc_strokes_fini(&out);
    nc_strokes_fini(&out);                       /* safe twice */

    /* A stroke that never moves becomes one point; two strokes keep apart. */
    float xy2[] = { 3, 3, 3, 3, 3, 3, 0, 0, 0, 4 };
    uint32_t st2[3] = { 0, 3, 5 };
    nc_strokes two = { 2, 5, st2, xy2 };
    REQUIRE(nc_strokes_resample(&two, 1.0f, &out) == 0);
    CHECK_INT_EQ(out.start[1], 1);
    CHECK_INT_EQ(out.n_points, 1 + 5);
    CHECK_NEAR(out.xy[2 * 1 + 1], 0.0, 1e-6, 0);
    CHECK_NEAR(out.xy[2 * 5 + 1], 4.0, 1e-6, 0);
    nc_strokes_fini(&out);
}

static void test_horizontal_bar(void)
{
    float xy[] = { 5, 14, 22, 14 };
    uint32_t st[2];
    nc_strokes s = one_stroke(st, xy, 2);
    float img[S * S];
    for (int width = 1; width <= 5; width += 2) {
        REQUIRE(nc_strokes_render(&s, (float)width, img, S, S) == 0);
        /* Inside the bar: full ink on exactly `width` rows around 14 (the
         * odd width puts its edges half way between rows, coverage 1 in
         * and 0 out); no ink beyond the caps. */
        for (int y = 0; y < S; y++) {
            float v = img[y * S + 13];
            float want = abs(y - 14) <= width / 2 ? 1.0f : 0.0f;
            CHECK_NEAR(v, want, 1e-6, 0);
        }
        int reach = (int)ceil(width / 2.0);
        CHECK(img[14 * S + 5 - reach] < 0.51f);
        CHECK(img[14 * S + 5 - reach - 1] == 0.0f);
        CHECK(img[14 * S + 22 + reach + 1] == 0.0f);
    }
    /* A half-integer width gives grey edges: anti-aliased, not jagged. */
    REQUIRE(nc_strokes_render(&s, 2.0f, img, S, S) == 0);
    CHECK_NEAR(img[13 * S + 13], 0.5f, 1e-6, 0);
    CHECK_NEAR(img[14 * S + 13], 1.0f, 1e-6, 0);
    CHECK_NEAR(img[15 * S + 13], 0.5f, 1e-6, 0);
}

/* An upright oval of rx x ry around (cx, cy), y down, n points closed. */
static void oval(float *xy, uint32_t n, double cx, double cy, double rx, double ry)
{
    for (uint32_t i = 0; i < n; i++) {
        double a = 2 * 3.14159265358979 * i / (n - 1);
        xy[2 * i] = (float)(cx + rx * cos(a));
        xy[2 * i + 1] = (float)(cy + ry * sin(a));
    }
}

static void ink_box(const float *img, int b[4])
{
    b[0] = b[1] = S;
    b[2] = b[3] = -1;
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++)
            if (img[y * S + x] > 0.0f) {
                if (x < b[0]) b[0] = x;
                if (y < b[1]) b[1] = y;
                if (x > b[2]) b[2] = x;
                if (y > b[3]) b[3] = y;
            }
}

static void test_mnist_layout(void)
{
    /* A lopsided "7"-like shape far off centre in tablet units. */
    float xy[] = { 1000, 2000, 1600, 2000, 1200, 3000, 1200, 3000 };
    float copy[8];
    uint32_t st[2];
    float img[S * S];
    nc_strokes_layout l = NC_STROKES_LAYOUT_MNIST_28;
    memcpy(copy, xy, sizeof xy);
    nc_strokes s = one_stroke(st, copy, 4);
    uint32_t flags = 99;
    REQUIRE(nc_strokes_layout_apply(&s, &l, 0.0f, 0.0f, img, &flags) == 0);
    double cx, cy;
    REQUIRE(nc_strokes_mass_centre(img, S, S, &cx, &cy) == 0);
    CHECK_NEAR(cx, 14.0, 0.15, 0);
    CHECK_NEAR(cy, 14.0, 0.15, 0);
    CHECK_INT_EQ(flags, 0);
    int b[4];
    ink_box(img, b);
    /* The skeleton's 1000 units become 20 - 2.5 px; with the pen 20 px of
     * ink, which is 20 or 21 pixel rows touched. */
    CHECK(b[3] - b[1] + 1 >= 20 && b[3] - b[1] + 1 <= 21);

    /* Box mode loses size: a small and a big circle look the same. */
    float small[2 * 33], big[2 * 33], a[S * S], c[S * S];
    oval(small, 33, 0, 0, 5, 5);
    oval(big, 33, 500, 500, 50, 50);
    nc_strokes so = one_stroke(st, small, 33);
    REQUIRE(nc_strokes_layout_apply(&so, &l, 0, 0, a, NULL) == 0);
    uint32_t st2[2];
    nc_strokes sb = one_stroke(st2, big, 33);
    REQUIRE(nc_strokes_layout_apply(&sb, &l, 0, 0, c, NULL) == 0);
    double diff = 0;
    for (int i = 0; i < S * S; i++)
        diff += fabs(a[i] - c[i]);
    CHECK(diff < 1.0);
}

static void test_line_layout(void)
{
    /* Writer's reference height 100 units, baseline at y = 500 (y down):
     * an "o" 50 tall sitting on it and an "O" 100 tall. */
    nc_strokes_layout l = NC_STROKES_LAYOUT_LINE_28;
    float o[2 * 33], O[2 * 33], a[S * S], c[S * S];
    uint32_t st[2], st2[2];
    oval(o, 33, 300, 475, 22, 25);
    oval(O, 33, 300, 450, 44, 50);
    nc_strokes so = one_stroke(st, o, 33), sO = one_stroke(st2, O, 33);
    REQUIRE(nc_strokes_layout_apply(&so, &l, 100.0f, 500.0f, a, NULL) == 0);
    REQUIRE(nc_strokes_layout_apply(&sO, &l, 100.0f, 500.0f, c, NULL) == 0);
    int ba[4], bc[4];
    ink_box(a, ba);
    ink_box(c, bc);
    int ha = ba[3] - ba[1] + 1, hc = bc[3] - bc[1] + 1;
    /* 0.5 and 1.0 of 12 px, plus the pen */
    CHECK(ha >= 8 && ha <= 10);
    CHECK(hc >= 14 && hc <= 16);
    /* both sit on row 19: their lowest inked row is the one below it,
     * which the pen's half width (1.25 px) reaches */
    CHECK_INT_EQ(ba[3], 20);
    CHECK_INT_EQ(bc[3], 20);
    double cx, cy;
    REQUIRE(nc_strokes_mass_centre(a, S, S, &cx, &cy) == 0);
    CHECK_NEAR(cx, 14.0, 0.15, 0);

    /* A comma below the baseline and an apostrophe high above it stay apart. */
    float comma[] = { 300, 495, 298, 520 }, apos[] = { 300, 400, 298, 425 };
    uint32_t s3[2], s4[2];
    nc_strokes sc = one_stroke(s3, comma, 2), sa = one_stroke(s4, apos, 2);
    REQUIRE(nc_strokes_layout_apply(&sc, &l, 100.0f, 500.0f, a, NULL) == 0);
    REQUIRE(nc_strokes_layout_apply(&sa, &l, 100.0f, 500.0f, c, NULL) == 0);
    double cya, cyc;
    REQUIRE(nc_strokes_mass_centre(a, S, S, &cx, &cyc) == 0);
    REQUIRE(nc_strokes_mass_centre(c, S, S, &cx, &cya) == 0);
    CHECK(cyc > 19.0);
    CHECK(cya < 9.0);

    /* A stray huge sample is shrunk to fit and flagged. */
    float huge[] = { 0, 0, 5000, 5000 };
    uint32_t s5[2], flags = 0;
    nc_strokes sh = one_stroke(s5, huge, 2);
    REQUIRE(nc_strokes_layout_apply(&sh, &l, 100.0f, 500.0f, a, &flags) == 0);
    CHECK(flags & NC_STROKES_SHRUNK);
    ink_box(a, ba);
    CHECK(ba[0] >= 0 && ba[3] < S);
}

static void test_jitter_and_affine(void)
{
    float base[2 * 20], x1[2 * 20], x2[2 * 20];
    uint32_t st[3] = { 0, 10, 20 };
    for (int i = 0; i < 20; i++) {
        base[2 * i] = (float)(i * 3);
        base[2 * i + 1] = (float)(i % 10) * 2;
    }
    memcpy(x1, base, sizeof base);
    memcpy(x2, base, sizeof base);
    nc_strokes s1 = { 2, 20, st, x1 }, s2 = { 2, 20, st, x2 };
    nc_deform_rng r1 = { 42 }, r2 = { 42 };
    REQUIRE(nc_strokes_jitter(&s1, &r1, 0.05f, 5.0f, 0.1f) == 0);
    REQUIRE(nc_strokes_jitter(&s2, &r2, 0.05f, 5.0f, 0.1f) == 0);
    CHECK(memcmp(x1, x2, sizeof x1) == 0);
    CHECK(memcmp(x1, base, sizeof x1) != 0);
    CHECK_INT_EQ(r1.state, r2.state);
    memcpy(x2, base, sizeof base);
    nc_deform_rng r3 = { 43 };
    REQUIRE(nc_strokes_jitter(&s2, &r3, 0.05f, 5.0f, 0.1f) == 0);
    CHECK(memcmp(x1, x2, sizeof x1) != 0);
    /* Zeros: nothing moves, the draws still happen. */
    memcpy(x2, base, sizeof base);
    nc_deform_rng r4 = { 42 };
    REQUIRE(nc_strokes_jitter(&s2, &r4, 0, 0, 0) == 0);
    CHECK(memcmp(x2, base, sizeof x2) == 0);
    CHECK_INT_EQ(r4.state, r1.state);

    /* Slant 45 degrees about (0, 0): the point above the centre moves right. */
    double m[6];
    REQUIRE(nc_strokes_affine(45.0, 0.0, 1.0, 1.0, 0.0, 0.0, m) == 0);
    float p[] = { 0, -10 };
    uint32_t sp[2];
    nc_strokes ps = one_stroke(sp, p, 1);
    REQUIRE(nc_strokes_transform(&ps, m) == 0);
    CHECK_NEAR(p[0], 10.0, 1e-5, 0);
    CHECK_NEAR(p[1], -10.0, 1e-5, 0);
    /* Rotation 90 degrees clockwise on screen: right -> down. */
    REQUIRE(nc_strokes_affine(0.0, 90.0, 2.0, 2.0, 1.0, 1.0, m) == 0);
    p[0] = 2;
    p[1] = 1;
    REQUIRE(nc_strokes_transform(&ps, m) == 0);
    CHECK_NEAR(p[0], 1.0, 1e-5, 0);
    CHECK_NEAR(p[1], 3.0, 1e-5, 0);
}

static void test_bad_input(void)
{
    float xy[] = { 0, 0, 1, 1 }, img[S * S];
    uint32_t st[2] = { 0, 2 };
    nc_strokes s = { 1, 2, st, xy }, out = { 0 };
    CHECK_INT_EQ(nc_strokes_check(&s), 0);
    CHECK_INT_EQ(nc_strokes_check(NULL), -EINVAL);
    st[1] = 1;                                  /* offsets disagree with the count */
    CHECK_INT_EQ(nc_strokes_check(&s), -EINVAL);
    st[1] = 2;
    uint32_t st3[3] = { 0, 0, 2 };              /* an empty stroke */
    nc_strokes e = { 2, 2, st3, xy };
    CHECK_INT_EQ(nc_strokes_resample(&e, 1.0f, &out), -EINVAL);
    CHECK(out.xy == NULL && out.start == NULL);
    xy[1] = NAN;
    CHECK_INT_EQ(nc_strokes_render(&s, 2.0f, img, S, S), -EINVAL);
    xy[1] = 0;
    CHECK_INT_EQ(nc_strokes_resample(&s, 0.0f, &out), -EINVAL);
    CHECK_INT_EQ(nc_strokes_resample(&s, 1e-9f, &out), -ERANGE);
    CHECK_INT_EQ(nc_strokes_render(&s, 0.0f, img, S, S), -EINVAL);
    CHECK_INT_EQ(nc_strokes_render(&s, 2.0f, img, 0, S), -ERANGE);
    double m[6];
    CHECK_INT_EQ(nc_strokes_affine(85.0, 0, 1, 1, 0, 0, m), -EINVAL);
    CHECK_INT_EQ(nc_strokes_affine(0, 0, 0, 1, 0, 0, m), -EINVAL);
    nc_deform_rng r = { 1 };
    CHECK_INT_EQ(nc_strokes_jitter(&s, &r, 0, 0, 0.6f), -EINVAL);
    CHECK_INT_EQ(r.state, 1);
    nc_strokes_layout l = NC_STROKES_LAYOUT_MNIST_28;
    l.box = 40;                                 /* bigger than the field */
    CHECK_INT_EQ(nc_strokes_layout_apply(&s, &l, 0, 0, img, NULL), -EINVAL);
    l = NC_STROKES_LAYOUT_LINE_28;
    CHECK_INT_EQ(nc_strokes_layout_apply(&s, &l, 0.0f, 0, img, NULL), -EINVAL);
    l.mode = 7;
    CHECK_INT_EQ(nc_strokes_layout_apply(&s, &l, 1.0f, 0, img, NULL), -EINVAL);
    CHECK_NEAR(xy[2], 1.0, 0, 0);               /* refused: nothing moved */
    memset(img, 0, sizeof img);
    double cx, cy;
    CHECK_INT_EQ(nc_strokes_mass_centre(img, S, S, &cx, &cy), -ENOENT);
}

int main(void)
{
    test_resample_spacing();
    test_horizontal_bar();
    test_mnist_layout();
    test_line_layout();
    test_jitter_and_affine();
    test_bad_input();
    return nc_test_finish();
}

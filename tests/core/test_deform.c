/* tests/core/test_deform.c — random affine + elastic deformations
 * (core/data/deform.c).
 *
 * Exact cases first (identity, whole-pixel shifts, a quarter turn given as
 * an explicit matrix), then the properties training relies on: a fixed seed
 * repeats, another seed differs, values stay in [0, 1], ink is roughly
 * conserved by mild deformations, and bad arguments fail with the right code
 * without touching outputs or the PRNG. */
#include "deform.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "test.h"

#define W 29
#define H 29

static void random_image(float *img, size_t n, unsigned long long seed)
{
    nc_test_rng r = { seed };
    for (size_t i = 0; i < n; i++)
        img[i] = (float)nc_test_uniform(&r);
}

/* A digit-like stroke pattern (a "7" with a bar) in a W x H field, ink 1. */
static void glyph(float *img)
{
    memset(img, 0, sizeof(float) * W * H);
    for (int y = 6; y < 9; y++)
        for (int x = 8; x < 21; x++)
            img[y * W + x] = 1.0f;
    for (int y = 9; y < 23; y++)
        for (int x = 17 - (y - 9) / 3; x < 20 - (y - 9) / 3; x++)
            img[y * W + x] = 1.0f;
    for (int x = 10; x < 18; x++)
        img[15 * W + x] = 0.5f;
}

static double mass(const float *img, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += img[i];
    return s;
}

static void test_identity(void)
{
    float in[W * H], out[W * H];
    random_image(in, W * H, 1);

    nc_deform *d = NULL;
    REQUIRE(nc_deform_new(&NC_DEFORM_NONE, W, H, &d) == 0);
    nc_deform_rng rng = { 42 };
    for (int k = 0; k < 5; k++) {
        memset(out, 0xff, sizeof(out));
        CHECK(nc_deform_apply(d, &rng, in, out) == 0);
        CHECK(memcmp(in, out, sizeof(in)) == 0);
    }
    /* Six affine draws per call, no elastic ones. */
    nc_deform_rng ref = { 42 };
    for (int k = 0; k < 5 * 6; k++)
        nc_deform_rng_next(&ref);
    CHECK(rng.state == ref.state);
    nc_deform_free(d);

    /* The warp with the identity matrix, even and odd sizes. */
    static const uint32_t sizes[][2] = { { 1, 1 }, { 28, 28 }, { 29, 29 }, { 7, 12 } };
    for (size_t s = 0; s < NC_ARRAY_LEN(sizes); s++) {
        uint32_t w = sizes[s][0], h = sizes[s][1];
        float a[29 * 29], b[29 * 29];
        random_image(a, (size_t)w * h, 2 + s);
        CHECK(nc_deform_warp(a, w, h, &NC_DEFORM_AFFINE_IDENTITY, NULL, NULL, b) == 0);
        CHECK_MSG(memcmp(a, b, (size_t)w * h * sizeof(float)) == 0, "%ux%u", w, h);
    }
}

static void test_translation(void)
{
    float in[W * H], out[W * H];
    random_image(in, W * H, 3);
    static const int shifts[][2] = { { 2, -3 }, { -1, 0 }, { 0, 5 }, { 28, 0 }, { -40, 7 } };
    for (size_t s = 0; s < NC_ARRAY_LEN(shifts); s++) {
        nc_deform_affine a = NC_DEFORM_AFFINE_IDENTITY;
        a.tx = (float)shifts[s][0];
        a.ty = (float)shifts[s][1];
        REQUIRE(nc_deform_warp(in, W, H, &a, NULL, NULL, out) == 0);
        /* The map goes output -> input: out(x, y) = in(x + tx, y + ty). */
        int bad = 0;
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                int sx = x + shifts[s][0], sy = y + shifts[s][1];
                float want = (sx >= 0 && sx < W && sy >= 0 && sy < H) ? in[sy * W + sx] : 0.0f;
                bad += out[y * W + x] != want;
            }
        CHECK_MSG(bad == 0, "shift (%d, %d): %d pixels differ", shifts[s][0], shifts[s][1], bad);
    }

    /* A whole-pixel elastic field shifts exactly too. */
    float dx[W * H], dy[W * H];
    for (int i = 0; i < W * H; i++) {
        dx[i] = 1.0f;
        dy[i] = -2.0f;
    }
    REQUIRE(nc_deform_warp(in, W, H, &NC_DEFORM_AFFINE_IDENTITY, dx, dy, out) == 0);
    int bad = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int sx = x + 1, sy = y - 2;
            float want = (sx < W && sy >= 0) ? in[sy * W + sx] : 0.0f;
            bad += out[y * W + x] != want;
        }
    CHECK_MSG(bad == 0, "elastic shift: %d pixels differ", bad);

    /* Half a pixel: the mean of two neighbours. */
    nc_deform_affine half = NC_DEFORM_AFFINE_IDENTITY;
    half.tx = 0.5f;
    REQUIRE(nc_deform_warp(in, W, H, &half, NULL, NULL, out) == 0);
    CHECK_NEAR(out[10 * W + 10], 0.5f * (in[10 * W + 10] + in[10 * W + 11]), 1e-6, 0);
    CHECK_NEAR(out[10 * W + W - 1], 0.5f * in[10 * W + W - 1], 1e-6, 0);
}

/* A quarter turn about the centre, as an exact matrix: out(x, y) =
 * in(c - (y - c), c + (x - c)) on a square image. */
static void test_quarter_turn(void)
{
    float in[W * H], out[W * H];
    random_image(in, W * H, 4);
    const nc_deform_affine a = { 0.0f, -1.0f, 1.0f, 0.0f, 0.0f, 0.0f };
    REQUIRE(nc_deform_warp(in, W, H, &a, NULL, NULL, out) == 0);
    int bad = 0;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            bad += out[y * W + x] != in[x * W + (W - 1 - y)];
    CHECK_MSG(bad == 0, "%d pixels differ", bad);
}

static void test_determinism(void)
{
    float in[W * H], a[W * H], b[W * H];
    glyph(in);
    nc_deform *d1 = NULL, *d2 = NULL;
    REQUIRE(nc_deform_new(&NC_DEFORM_MNIST, W, H, &d1) == 0);
    if (nc_deform_new(&NC_DEFORM_MNIST, W, H, &d2)) {
        CHECK(0);
        nc_deform_free(d1);
        return;
    }
    nc_deform_rng r1 = { 7 }, r2 = { 7 }, r3 = { 8 };
    int same = 1, changed = 0, other = 0;
    for (int k = 0; k < 20; k++) {
        CHECK(nc_deform_apply(d1, &r1, in, a) == 0);
        CHECK(nc_deform_apply(d2, &r2, in, b) == 0);   /* its own scratch */
        same &= memcmp(a, b, sizeof(a)) == 0;
        changed += memcmp(a, in, sizeof(a)) != 0;
        CHECK(nc_deform_apply(d2, &r3, in, b) == 0);
        other += memcmp(a, b, sizeof(a)) != 0;
    }
    CHECK(same);
    CHECK(r1.state == r2.state);
    CHECK_INT_EQ(changed, 20);
    CHECK_INT_EQ(other, 20);
    nc_deform_free(d1);
    nc_deform_free(d2);

    /* The stream is part of the contract (checkpoints resume it): pin the
     * first splitmix64 output for seed 0 (the published reference value). */
    nc_deform_rng r0 = { 0 };
    CHECK(nc_deform_rng_next(&r0) == 0xe220a8397b1dcdafull);
    nc_deform_rng rs = { 99 };
    float lo = 1.0f, hi = -1.0f;
    for (int k = 0; k < 10000; k++) {
        float u = nc_deform_rng_sym(&rs);
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
        uint32_t j = nc_deform_rng_below(&rs, 7);
        CHECK(j < 7);
    }
    CHECK(lo >= -1.0f && lo < -0.99f);
    CHECK(hi < 1.0f && hi > 0.99f);
}

static void test_range_and_mass(void)
{
    float in[W * H], out[W * H];
    const nc_deform_params strong = { 3.0f, 30.0f, 0.3f, 0.5f, 4.0f, 60.0f };
    const nc_deform_params *sets[] = { &NC_DEFORM_MNIST, &strong };
    for (size_t s = 0; s < NC_ARRAY_LEN(sets); s++) {
        nc_deform *d = NULL;
        REQUIRE(nc_deform_new(sets[s], W, H, &d) == 0);
        nc_deform_rng rng = { 100 + s };
        int outside = 0;
        for (int k = 0; k < 50; k++) {
            random_image(in, W * H, 500 + k);
            in[0] = 1.0f;
            in[1] = 0.0f;
            CHECK(nc_deform_apply(d, &rng, in, out) == 0);
            for (int i = 0; i < W * H; i++)
                outside += !(out[i] >= 0.0f && out[i] <= 1.0f);
        }
        CHECK_MSG(outside == 0, "set %zu: %d values outside [0, 1]", s, outside);
        nc_deform_free(d);
    }

    /* Mild deformations (no scaling, which changes the area on purpose)
     * move ink around but keep it.  Shift, rotation and shear have
     * determinant 1, so with the ink away from the border only bilinear
     * smoothing changes the sum (1 %).  The elastic field compresses and
     * stretches locally: 10 % per image at alpha 10, 3 % on average. */
    static const struct { nc_deform_params p; double worst, mean; } mild[] = {
        { { 1.0f, 8.0f, 0.0f, 0.1f, 0.0f, 0.0f }, 0.01, 0.01 },
        { { 1.0f, 8.0f, 0.0f, 0.1f, 6.0f, 10.0f }, 0.10, 0.03 },
    };
    glyph(in);
    const double m0 = mass(in, W * H);
    for (size_t s = 0; s < NC_ARRAY_LEN(mild); s++) {
        nc_deform *d = NULL;
        REQUIRE(nc_deform_new(&mild[s].p, W, H, &d) == 0);
        double sum = 0.0, worst = 0.0;
        nc_deform_rng rng = { 5 };
        for (int k = 0; k < 100; k++) {
            CHECK(nc_deform_apply(d, &rng, in, out) == 0);
            double r = mass(out, W * H) / m0;
            sum += r;
            worst = fabs(r - 1.0) > worst ? fabs(r - 1.0) : worst;
        }
        CHECK_MSG(worst < mild[s].worst, "set %zu: worst relative mass change %.3f", s, worst);
        CHECK_NEAR(sum / 100.0, 1.0, mild[s].mean, 0);
        nc_deform_free(d);
    }
}

/* The elastic part alone: a smooth field of the documented size (rms
 * displacement alpha * ~0.027 for sigma 6, i.e. about 0.9 px at alpha 34),
 * seen through an image that is a ramp in x (so out - in = dx exactly where
 * bilinear sampling is linear). */
static void test_elastic_size(void)
{
    float in[W * H], out[W * H];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            in[y * W + x] = (float)x / 64.0f + 0.25f;
    const nc_deform_params p = { 0, 0, 0, 0, 6.0f, 34.0f };
    nc_deform *d = NULL;
    REQUIRE(nc_deform_new(&p, W, H, &d) == 0);
    nc_deform_rng rng = { 11 };
    double ss = 0.0;
    long n = 0;
    for (int k = 0; k < 40; k++) {
        CHECK(nc_deform_apply(d, &rng, in, out) == 0);
        for (int y = 4; y < H - 4; y++)
            for (int x = 4; x < W - 4; x++) {
                double disp = (out[y * W + x] - in[y * W + x]) * 64.0;
                ss += disp * disp;
                n++;
            }
    }
    double rms = sqrt(ss / n);
    CHECK_MSG(rms > 0.5 && rms < 1.5, "rms displacement %.3f px", rms);
    nc_deform_free(d);
}

static void test_bad_args(void)
{
    float in[W * H] = { 0 }, out[W * H];
    nc_deform *d = (nc_deform *)(uintptr_t)1, *good = NULL;
    nc_deform_params p = NC_DEFORM_MNIST;

    CHECK_INT_EQ(nc_deform_new(NULL, W, H, &d), -EINVAL);
    CHECK_INT_EQ(nc_deform_new(&p, W, H, NULL), -EINVAL);
    CHECK_INT_EQ(nc_deform_new(&p, 0, H, &d), -EINVAL);
    CHECK_INT_EQ(nc_deform_new(&p, W, 0, &d), -EINVAL);
    CHECK_INT_EQ(nc_deform_new(&p, NC_DEFORM_MAX_DIM + 1, H, &d), -ERANGE);
    p.max_rotate_deg = NAN;
    CHECK_INT_EQ(nc_deform_new(&p, W, H, &d), -EINVAL);
    p = NC_DEFORM_MNIST;
    p.max_translate = -1.0f;
    CHECK_INT_EQ(nc_deform_new(&p, W, H, &d), -EINVAL);
    p = NC_DEFORM_MNIST;
    p.max_scale = 1.0f;
    CHECK_INT_EQ(nc_deform_new(&p, W, H, &d), -EINVAL);
    p = NC_DEFORM_MNIST;
    p.max_shear = INFINITY;
    CHECK_INT_EQ(nc_deform_new(&p, W, H, &d), -EINVAL);
    p = NC_DEFORM_MNIST;
    p.elastic_sigma = NC_DEFORM_MAX_SIGMA * 2;
    CHECK_INT_EQ(nc_deform_new(&p, W, H, &d), -ERANGE);
    p = NC_DEFORM_MNIST;
    p.elastic_alpha = -3.0f;
    CHECK_INT_EQ(nc_deform_new(&p, W, H, &d), -EINVAL);
    CHECK(d == (nc_deform *)(uintptr_t)1);     /* untouched on failure */
    CHECK_INT_EQ(nc_deform_params_check(NULL), -EINVAL);
    CHECK_INT_EQ(nc_deform_params_check(&NC_DEFORM_MNIST), 0);

    REQUIRE(nc_deform_new(&NC_DEFORM_MNIST, W, H, &good) == 0);
    nc_deform_rng rng = { 3 };
    CHECK_INT_EQ(nc_deform_apply(NULL, &rng, in, out), -EINVAL);
    CHECK_INT_EQ(nc_deform_apply(good, NULL, in, out), -EINVAL);
    CHECK_INT_EQ(nc_deform_apply(good, &rng, NULL, out), -EINVAL);
    CHECK_INT_EQ(nc_deform_apply(good, &rng, in, NULL), -EINVAL);
    CHECK(rng.state == 3);                      /* no draw on failure */
    nc_deform_free(good);
    nc_deform_free(NULL);

    float dx[W * H] = { 0 };
    nc_deform_affine a = NC_DEFORM_AFFINE_IDENTITY;
    float sentinel[W * H];
    memset(out, 0x5a, sizeof(out));
    memcpy(sentinel, out, sizeof(out));
    CHECK_INT_EQ(nc_deform_warp(NULL, W, H, &a, NULL, NULL, out), -EINVAL);
    CHECK_INT_EQ(nc_deform_warp(in, W, H, NULL, NULL, NULL, out), -EINVAL);
    CHECK_INT_EQ(nc_deform_warp(in, W, H, &a, NULL, NULL, NULL), -EINVAL);
    CHECK_INT_EQ(nc_deform_warp(in, W, H, &a, dx, NULL, out), -EINVAL);
    CHECK_INT_EQ(nc_deform_warp(in, W, H, &a, NULL, dx, out), -EINVAL);
    CHECK_INT_EQ(nc_deform_warp(in, 0, H, &a, NULL, NULL, out), -EINVAL);
    CHECK_INT_EQ(nc_deform_warp(in, W, NC_DEFORM_MAX_DIM + 1, &a, NULL, NULL, out), -ERANGE);
    a.a12 = NAN;
    CHECK_INT_EQ(nc_deform_warp(in, W, H, &a, NULL, NULL, out), -EINVAL);
    CHECK(memcmp(out, sentinel, sizeof(out)) == 0);

    /* Huge or non-finite displacements read background, never crash. */
    float big[W * H];
    for (int i = 0; i < W * H; i++)
        big[i] = i % 3 == 0 ? 1e30f : i % 3 == 1 ? -1e30f : NAN;
    CHECK_INT_EQ(nc_deform_warp(in, W, H, &NC_DEFORM_AFFINE_IDENTITY, big, big, out), 0);
    int nonzero = 0;
    for (int i = 0; i < W * H; i++)
        nonzero += out[i] != 0.0f;
    CHECK_INT_EQ(nonzero, 0);
}

/* nc_deform_params_scaled: every strength times s, sigma kept; s = 0 is
 * no deformation (the image comes back as it was), and on the same draws a
 * half-strength deformation changes the image less than the full one. */
static void test_scaled(void)
{
    const nc_deform_params m = NC_DEFORM_MNIST;
    const nc_deform_params h = nc_deform_params_scaled(&m, 0.5f);
    CHECK_NEAR(h.max_translate, 0.5f * m.max_translate, 0.0, 0);
    CHECK_NEAR(h.max_rotate_deg, 0.5f * m.max_rotate_deg, 0.0, 0);
    CHECK_NEAR(h.max_scale, 0.5f * m.max_scale, 0.0, 0);
    CHECK_NEAR(h.max_shear, 0.5f * m.max_shear, 0.0, 0);
    CHECK_NEAR(h.elastic_alpha, 0.5f * m.elastic_alpha, 0.0, 0);
    CHECK_NEAR(h.elastic_sigma, m.elastic_sigma, 0.0, 0);
    const nc_deform_params one = nc_deform_params_scaled(&m, 1.0f);
    CHECK(memcmp(&one, &m, sizeof(m)) == 0);

    float in[W * H], out[W * H];
    glyph(in);
    const nc_deform_params zero = nc_deform_params_scaled(&m, 0.0f);
    nc_deform *d = NULL;
    REQUIRE(nc_deform_new(&zero, W, H, &d) == 0);
    nc_deform_rng rng = { 9 };
    for (int k = 0; k < 5; k++) {
        memset(out, 0xff, sizeof(out));
        CHECK(nc_deform_apply(d, &rng, in, out) == 0);
        CHECK(memcmp(in, out, sizeof(in)) == 0);
    }
    nc_deform_free(d);

    double change[2] = { 0.0, 0.0 };
    const nc_deform_params *sets[2] = { &h, &m };
    for (int s = 0; s < 2; s++) {
        REQUIRE(nc_deform_new(sets[s], W, H, &d) == 0);
        nc_deform_rng r = { 77 };
        for (int k = 0; k < 100; k++) {
            CHECK(nc_deform_apply(d, &r, in, out) == 0);
            for (int i = 0; i < W * H; i++)
                change[s] += fabs((double)out[i] - in[i]);
        }
        nc_deform_free(d);
    }
    CHECK_MSG(change[0] > 0.0 && change[0] < 0.8 * change[1],
              "summed change at half strength %.1f, at full %.1f", change[0], change[1]);
}

int main(void)
{
    test_identity();
    test_translation();
    test_quarter_turn();
    test_determinism();
    test_range_and_mass();
    test_elastic_size();
    test_bad_args();
    test_scaled();
    return nc_test_finish();
}

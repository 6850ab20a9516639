/* tests/tools/test_unipen_look.c — neocog-unipen's --look (binarised,
 * stretched to the box, resampled at 16 px, blurred): each does what it
 * says to a known field or stroke set. */
#include "neocog_unipen_look.h"
#include "test.h"

#include <errno.h>
#include <string.h>

#define N 28

static float sum(const float *f, uint32_t n)
{
    float s = 0.0f;
    for (uint32_t i = 0; i < n; i++)
        s += f[i];
    return s;
}

/* A soft bar: rows 8..19, columns 12..15 at full ink, a half-ink rim. */
static void bar(float *f)
{
    memset(f, 0, N * N * sizeof(float));
    for (int y = 7; y <= 20; y++)
        for (int x = 11; x <= 16; x++)
            f[y * N + x] = (y >= 8 && y <= 19 && x >= 12 && x <= 15) ? 1.0f : 0.3f;
}

static void test_parse(void)
{
    nc_look l = NC_LOOK_NONE;
    CHECK_INT_EQ(nc_look_parse("binary", &l), 0);
    CHECK_INT_EQ(l, NC_LOOK_BINARY);
    CHECK_INT_EQ(nc_look_parse("r16", &l), 0);
    CHECK_INT_EQ(l, NC_LOOK_R16);
    CHECK_INT_EQ(nc_look_parse("none", &l), 0);
    CHECK_INT_EQ(l, NC_LOOK_NONE);
    CHECK_INT_EQ(nc_look_parse("paper", &l), -EINVAL);
    CHECK_INT_EQ(nc_look_parse(NULL, &l), -EINVAL);
}

static void test_binary(void)
{
    float f[N * N];
    bar(f);
    CHECK_INT_EQ(nc_look_field(NC_LOOK_BINARY, f, N), 0);
    int ones = 0, others = 0;
    for (int i = 0; i < N * N; i++) {
        ones += f[i] == 1.0f;
        others += f[i] != 0.0f && f[i] != 1.0f;
    }
    CHECK_INT_EQ(ones, 12 * 4);     /* the rim at 0.3 is gone */
    CHECK_INT_EQ(others, 0);
}

static void test_r16(void)
{
    float f[N * N], g[N * N];
    bar(f);
    memcpy(g, f, sizeof f);
    CHECK_INT_EQ(nc_look_field(NC_LOOK_R16, f, N), 0);
    /* ink kept to a few per cent, edges softened, the background stays 0
       far from the bar, and the image changed */
    CHECK_MSG(fabsf(sum(f, N * N) - sum(g, N * N)) < 0.05f * sum(g, N * N), "%g vs %g",
              (double)sum(f, N * N), (double)sum(g, N * N));
    CHECK(f[0] == 0.0f && f[2 * N + 2] == 0.0f && f[N * N - 1] == 0.0f);
    float diff = 0.0f;
    for (int i = 0; i < N * N; i++)
        diff += fabsf(f[i] - g[i]);
    CHECK(diff > 1.0f);
    /* resize: a constant stays constant both ways */
    float c[N * N], d[16 * 16];
    for (int i = 0; i < N * N; i++)
        c[i] = 0.5f;
    CHECK_INT_EQ(nc_look_resize(c, N, d, 16), 0);
    for (int i = 0; i < 16 * 16; i++)
        CHECK_MSG(fabsf(d[i] - 0.5f) < 1e-5f, "down %d: %g", i, (double)d[i]);
    CHECK_INT_EQ(nc_look_resize(d, 16, c, N), 0);
    CHECK_MSG(fabsf(c[10 * N + 10] - 0.5f) < 1e-5f, "up: %g", (double)c[10 * N + 10]);
    CHECK_INT_EQ(nc_look_resize(c, N, d, 0), -EINVAL);
    CHECK_INT_EQ(nc_look_resize(c, NC_LOOK_MAX_FIELD + 1, d, 16), -EINVAL);
}

static void test_blur(void)
{
    float f[N * N], g[N * N];
    bar(f);
    memcpy(g, f, sizeof f);
    CHECK_INT_EQ(nc_look_field(NC_LOOK_BLUR, f, N), 0);
    float peak = 0.0f;
    int wider = 0;
    for (int i = 0; i < N * N; i++) {
        peak = fmaxf(peak, f[i]);
        wider += f[i] > 0.0f && g[i] == 0.0f;
        CHECK(f[i] == 0.0f || f[i] >= NC_LOOK_BLUR_FLOOR);
    }
    CHECK_MSG(fabsf(peak - 1.0f) < 1e-6f, "peak %g", (double)peak);
    CHECK(wider > 0);               /* ink spread beyond the bar */
    CHECK(f[0] == 0.0f);            /* the far background cut to 0 */
    CHECK_INT_EQ(nc_look_field(NC_LOOK_BLUR, f, 0), -EINVAL);
}

static void test_stretch(void)
{
    /* a tall thin "1": x from 10 to 12, y from 0 to 20 */
    uint32_t start[2] = { 0, 3 };
    float xy[6] = { 10, 0, 11, 10, 12, 20 };
    nc_strokes s = { 1, 3, start, xy };
    CHECK_INT_EQ(nc_look_strokes(NC_LOOK_NONE, &s), 0);
    CHECK(xy[0] == 10.0f && xy[4] == 12.0f);
    CHECK_INT_EQ(nc_look_strokes(NC_LOOK_STRETCH, &s), 0);
    /* width 2 -> 8 (the limit, 4 x), about the centre x 11; y untouched */
    CHECK_MSG(fabsf(xy[0] - 7.0f) < 1e-4f && fabsf(xy[4] - 15.0f) < 1e-4f, "%g %g",
              (double)xy[0], (double)xy[4]);
    CHECK(fabsf(xy[1]) < 1e-4f && fabsf(xy[5] - 20.0f) < 1e-4f);
    /* a wide "7" bar 20 x 10 becomes square: y doubled about 5 */
    float xy2[4] = { 0, 0, 20, 10 };
    uint32_t start2[2] = { 0, 2 };
    nc_strokes t = { 1, 2, start2, xy2 };
    CHECK_INT_EQ(nc_look_strokes(NC_LOOK_STRETCH, &t), 0);
    CHECK(fabsf(xy2[1] + 5.0f) < 1e-4f && fabsf(xy2[3] - 15.0f) < 1e-4f);
    CHECK(fabsf(xy2[0]) < 1e-4f && fabsf(xy2[2] - 20.0f) < 1e-4f);
    /* a dot stays a dot */
    float xy3[2] = { 3, 4 };
    uint32_t start3[2] = { 0, 1 };
    nc_strokes u = { 1, 1, start3, xy3 };
    CHECK_INT_EQ(nc_look_strokes(NC_LOOK_STRETCH, &u), 0);
    CHECK(xy3[0] == 3.0f && xy3[1] == 4.0f);
}

int main(void)
{
    test_parse();
    test_binary();
    test_r16();
    test_blur();
    test_stretch();
    return nc_test_finish();
}

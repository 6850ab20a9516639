/* tests/tools/test_photogen.c — the phone-photo renderer (tools/photogen_
 * render.c) on the MNIST fixture, and neocog-photogen run as a user runs it.
 *
 * The renderer: the same RNG state gives the same photo; frames are 200-400
 * pixels a side; each digit's truth box lies inside the frame, holds ink,
 * and the clearly dark pixels lie in the boxes; the lit paper (away from
 * the ink, shadows and fingers) sits between 150 and 235; the digit is
 * 35-85 % of the frame height; every variation turns up; two lines read
 * top to bottom; bad arguments are refused.  The tool: the same seed
 * writes the same files, and a bad option is a usage error (2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "fixture.h"
#include "photogen_render.h"
#include "run_capture.h"
#include "test.h"

static nc_render_source src;

static int cmp_u8(const void *a, const void *b)
{
    return (int)*(const uint8_t *)a - (int)*(const uint8_t *)b;
}

/* Is (x, y) within pad pixels of a truth box? */
static int near_box(const nc_photo_truth *t, uint32_t x, uint32_t y, uint32_t pad)
{
    for (uint32_t k = 0; k < t->count; k++) {
        nc_rect b = t->boxes[k];
        if (x + pad >= b.x && x < b.x + b.width + pad && y + pad >= b.y &&
            y < b.y + b.height + pad)
            return 1;
    }
    return 0;
}

static void test_deterministic(void)
{
    nc_photo_params p;
    nc_photo_params_default(&p);
    p.hand_share = 0.5f;
    uint32_t idx[1] = { 7 };
    uint64_t r1 = 12345, r2 = 12345, r3 = 999;
    nc_image *a = NULL, *b = NULL, *c = NULL;
    nc_photo_truth ta, tb, tc;
    REQUIRE(nc_photo_render(&p, &src, idx, 1, &r1, &a, &ta) == 0);
    REQUIRE(nc_photo_render(&p, &src, idx, 1, &r2, &b, &tb) == 0);
    REQUIRE(nc_photo_render(&p, &src, idx, 1, &r3, &c, &tc) == 0);
    CHECK(r1 == r2);
    CHECK(a->width == b->width && a->height == b->height);
    CHECK(a->width == b->width && !memcmp(a->pixels, b->pixels, (size_t)a->height * a->stride));
    CHECK(!memcmp(&ta, &tb, sizeof ta));
    CHECK(ta.labels[0] == src.labels[7] && ta.sources[0] == 7);
    CHECK(a->width != c->width || a->height != c->height ||
          memcmp(a->pixels, c->pixels, (size_t)a->height * a->stride));
    nc_image_free(a);
    nc_image_free(b);
    nc_image_free(c);
}

static void test_singles(void)
{
    nc_photo_params p;
    nc_photo_params_default(&p);
    p.hand_share = 0.3f;
    uint64_t rng = 42;
    uint32_t seen[NC_PHOTO_VARIATION_COUNT] = { 0 };
    uint32_t checked_paper = 0;
    const uint32_t N = 160;
    for (uint32_t i = 0; i < N; i++) {
        uint32_t idx[1] = { (i * 37) % src.count };
        nc_image *img = NULL;
        nc_photo_truth t;
        REQUIRE(nc_photo_render(&p, &src, idx, 1, &rng, &img, &t) == 0);
        const uint32_t W = img->width, H = img->height;
        CHECK_MSG(W >= 200 && W <= 400 && H >= 200 && H <= 400, "photo %u: %ux%u", i, W, H);
        CHECK(t.count == 1 && t.lines == 1 && t.quality >= 50 && t.quality <= 90);
        for (uint32_t k = 0; k < NC_PHOTO_VARIATION_COUNT; k++)
            seen[k] += (t.variations >> k) & 1;
        nc_rect b = t.boxes[0];
        CHECK_MSG(b.x + b.width <= W && b.y + b.height <= H, "photo %u: box outside", i);
        /* the digit's height: 35-85 % of the frame, as drawn */
        CHECK_MSG(t.height >= 0.35 * H - 1 && t.height <= 0.85 * H + 1,
                  "photo %u: height %.0f of %u", i, t.height, H);
        CHECK_MSG(b.height >= 0.7 * t.height && b.height <= 1.3 * t.height,
                  "photo %u: box height %u for a digit of %.0f", i, b.height, t.height);
        /* ink: the darkest pixel in the box is well below the paper; the
         * clearly dark pixels (below the middle of ink and paper) of a photo
         * without shadow or finger all lie in the box, give or take the blur */
        uint8_t darkest = 255;
        for (uint32_t y = b.y; y < b.y + b.height; y++)
            for (uint32_t x = b.x; x < b.x + b.width; x++)
                if (img->pixels[(size_t)y * img->stride + x] < darkest)
                    darkest = img->pixels[(size_t)y * img->stride + x];
        CHECK_MSG(darkest < (t.ink + t.paper_lo) / 2, "photo %u: box holds no ink (darkest %u)",
                  i, darkest);
        if (!(t.variations & (NC_PHOTO_SHADOW | NC_PHOTO_FINGER))) {
            double mid = (t.ink + t.paper_lo) / 2 - 3 * t.noise;
            uint32_t dark = 0, outside = 0, n_paper = 0;
            uint8_t *paper = malloc((size_t)W * H);
            REQUIRE(paper);
            for (uint32_t y = 0; y < H; y++)
                for (uint32_t x = 0; x < W; x++) {
                    uint8_t v = img->pixels[(size_t)y * img->stride + x];
                    if (v < mid) {
                        dark++;
                        outside += !near_box(&t, x, y, 3 + (uint32_t)(2 * t.blur));
                    }
                    if (!near_box(&t, x, y, 12))
                        paper[n_paper++] = v;
                }
            CHECK_MSG(dark > 0 && outside * 100 <= dark, "photo %u: %u of %u dark pixels "
                      "outside the box", i, outside, dark);
            /* the paper: median in range, few pixels far outside it */
            if (n_paper > 100) {
                qsort(paper, n_paper, 1, cmp_u8);
                uint8_t lo = paper[n_paper / 50], med = paper[n_paper / 2],
                        hi = paper[n_paper - 1 - n_paper / 50];
                CHECK_MSG(med >= 150 && med <= 235, "photo %u: paper median %u", i, med);
                CHECK_MSG(lo >= 125 && hi <= 250, "photo %u: paper 2-98 %% %u..%u", i, lo, hi);
                CHECK(med >= t.paper_lo - 15 && med <= t.paper_hi + 10);
                checked_paper++;
            }
            free(paper);
        }
        nc_image_free(img);
    }
    CHECK(checked_paper >= N / 3);
    for (uint32_t k = 0; k < NC_PHOTO_VARIATION_COUNT; k++)
        CHECK_MSG(seen[k] >= N / 20, "%s in %u of %u photos", nc_photo_variation_name(k),
                  seen[k], N);
}

static void test_strings(void)
{
    nc_photo_params p;
    nc_photo_params_default(&p);
    uint64_t rng = 7;
    for (uint32_t lines = 1; lines <= 2; lines++)
        for (uint32_t i = 0; i < 12; i++) {
            p.lines = lines;
            uint32_t n = 2 + i % 7, idx[NC_PHOTO_MAX_DIGITS];
            for (uint32_t k = 0; k < n; k++)
                idx[k] = (i * 101 + k * 13) % src.count;
            nc_image *img = NULL;
            nc_photo_truth t;
            REQUIRE(nc_photo_render(&p, &src, idx, n, &rng, &img, &t) == 0);
            CHECK(t.count == n && t.lines == lines && t.line_count[0] + t.line_count[1] == n);
            for (uint32_t k = 0; k < n; k++) {
                nc_rect b = t.boxes[k];
                CHECK(b.x + b.width <= img->width && b.y + b.height <= img->height);
                CHECK(t.labels[k] == src.labels[idx[k]]);
            }
            /* reading order: left to right along a line (the box centres,
             * rotation up to 8 degrees cannot swap neighbours), and the
             * second line lower than the first */
            double y1 = 0, y2 = 0;
            for (uint32_t k = 0; k < n; k++) {
                double cy = t.boxes[k].y + t.boxes[k].height / 2.0;
                if (k < t.line_count[0]) y1 += cy / t.line_count[0];
                else y2 += cy / t.line_count[1];
                if (k + 1 < n && k + 1 != t.line_count[0])
                    CHECK(t.boxes[k].x * 2 + t.boxes[k].width <
                          t.boxes[k + 1].x * 2 + t.boxes[k + 1].width);
            }
            if (lines == 2)
                CHECK_MSG(y2 > y1 + 0.8 * t.height, "lines at %.0f and %.0f, height %.0f", y1,
                          y2, t.height);
            nc_image_free(img);
        }
}

static void test_refused(void)
{
    nc_photo_params p;
    nc_photo_params_default(&p);
    uint64_t rng = 1;
    nc_image *img = NULL;
    nc_photo_truth t;
    uint32_t idx[NC_PHOTO_MAX_DIGITS + 1] = { 0 };
    CHECK(nc_photo_render(&p, &src, idx, 0, &rng, &img, &t) == -EINVAL);
    CHECK(nc_photo_render(&p, &src, idx, NC_PHOTO_MAX_DIGITS + 1, &rng, &img, &t) == -EINVAL);
    idx[0] = src.count;
    CHECK(nc_photo_render(&p, &src, idx, 1, &rng, &img, &t) == -EINVAL);
    idx[0] = 0;
    p.lines = 2;
    CHECK(nc_photo_render(&p, &src, idx, 1, &rng, &img, &t) == -EINVAL);
    p.lines = 1;
    p.hand_share = 2;
    CHECK(nc_photo_render(&p, &src, idx, 1, &rng, &img, &t) == -EINVAL);
    CHECK(img == NULL);
}

/* Every file of dir a and dir b (names from a's truth.tsv) byte-identical. */
static int same_files(const char *a, const char *b, const char *const *names)
{
    for (size_t i = 0; names[i]; i++) {
        char pa[1400], pb[1400];
        uint8_t *ba = NULL, *bb = NULL;
        size_t la = 0, lb = 0;
        snprintf(pa, sizeof pa, "%s/%s", a, names[i]);
        snprintf(pb, sizeof pb, "%s/%s", b, names[i]);
        int ok = nc_file_read(pa, 1u << 24, &ba, &la) == 0 &&
                 nc_file_read(pb, 1u << 24, &bb, &lb) == 0 && la == lb && la > 0 &&
                 !memcmp(ba, bb, la);
        free(ba);
        free(bb);
        if (!ok) {
            fprintf(stderr, "%s and %s differ or are missing\n", pa, pb);
            return 0;
        }
    }
    return 1;
}

static void test_tool(const char *exe)
{
    char tmp[] = "/tmp/nc-photogen-XXXXXX";
    REQUIRE(mkdtemp(tmp));
    const char *data = getenv("NC_TEST_DATA");
    if (!data)
        data = "tests/data";
    char d1[1100], d2[1100], d3[1100];
    snprintf(d1, sizeof d1, "%s/a", tmp);
    snprintf(d2, sizeof d2, "%s/b", tmp);
    snprintf(d3, sizeof d3, "%s/c", tmp);
    const char *dirs[2] = { d1, d2 };
    for (int r = 0; r < 2; r++) {
        const char *argv[] = { exe, "--data", data, "--n", "3", "--seed", "5", "--out", dirs[r],
                               "--hand-share", "0.5", NULL };
        const char *argv2[] = { exe, "--data", data, "--n", "2", "--seed", "6", "--out", dirs[r],
                                "--strings", "--digits", "3-5", "--lines", "2", "--prefix", "s",
                                "--append", NULL };
        char *out = NULL;
        CHECK_INT_EQ(nc_run_capture(argv, NULL, &out), 0);
        free(out);
        CHECK_INT_EQ(nc_run_capture(argv2, NULL, &out), 0);
        free(out);
    }
    const char *names[] = { "photo-0000.jpg", "photo-0001.jpg", "photo-0002.jpg", "s-0000.jpg",
                            "s-0001.jpg", "truth.tsv", NULL };
    CHECK(same_files(d1, d2, names));
    /* the truth: a row per photo, the strings 3-5 digits */
    char tp[1200];
    snprintf(tp, sizeof tp, "%s/truth.tsv", d1);
    uint8_t *tb = NULL;
    size_t tl = 0;
    if (nc_file_read(tp, 1u << 20, &tb, &tl) == 0) {
        int rows = 0, strings_ok = 0;
        for (char *line = strtok((char *)tb, "\n"); line; line = strtok(NULL, "\n")) {
            if (line[0] == '#')
                continue;
            rows++;
            char *tab = strchr(line, '\t');
            size_t len = tab ? strcspn(tab + 1, "\t") : 0;
            if (!strncmp(line, "s-", 2))
                strings_ok += len >= 3 && len <= 5;
            else
                CHECK(len == 1);
        }
        CHECK_INT_EQ(rows, 5);
        CHECK_INT_EQ(strings_ok, 2);
    } else {
        CHECK_MSG(0, "%s unreadable", tp);
    }
    free(tb);
    /* PGM output decodes to the frame the truth names */
    const char *argv3[] = { exe, "--data", data, "--n", "1", "--out", d3, "--format", "pgm", NULL };
    char *out = NULL;
    CHECK_INT_EQ(nc_run_capture(argv3, NULL, &out), 0);
    free(out);
    char pp[1200];
    snprintf(pp, sizeof pp, "%s/photo-0000.pgm", d3);
    struct stat st;
    CHECK(stat(pp, &st) == 0 && st.st_size > 200 * 200);
    /* usage errors */
    const char *bad1[] = { exe, "--data", data, "--n", "1", "--out", d3, "--digits", "1-3",
                           "--strings", NULL };
    const char *bad2[] = { exe, "--data", data, "--n", "1", "--out", d3, "--lines", "2", NULL };
    const char *bad3[] = { exe, "--data", data, "--out", d3, NULL };
    /* patches are training data: never of the test digits */
    const char *bad4[] = { exe, "--data", data, "--n", "1", "--out", d3, "--patches", d3, NULL };
    CHECK_INT_EQ(nc_run_capture(bad4, NULL, &out), 2);
    free(out);
    CHECK_INT_EQ(nc_run_capture(bad1, NULL, &out), 2);
    free(out);
    CHECK_INT_EQ(nc_run_capture(bad2, NULL, &out), 2);
    free(out);
    CHECK_INT_EQ(nc_run_capture(bad3, NULL, &out), 2);
    free(out);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0);
}

int main(int argc, char **argv)
{
    nc_dataset d = { 0 };
    if (nc_test_fixture(&d) < 0) {
        fprintf(stderr, "no MNIST fixture\n");
        return 1;
    }
    src = (nc_render_source){ d.pixels, d.labels, d.count, d.rows, d.cols };
    test_deterministic();
    test_singles();
    test_strings();
    test_refused();
    if (argc > 1)
        test_tool(argv[1]);
    nc_dataset_fini(&d);
    return nc_test_finish();
}

/* tests/core/test_dataset.c — IDX parsing and gzip (core/data/dataset.c, gunzip.c).
 *
 * The committed fixture (tests/data, the first 1000 MNIST test digits; see
 * tests/data/README.md for how it was made and the values checked here),
 * then small hand-built IDX files for every failure path: truncation at each
 * byte, plain and gzip, lying headers, absurd sizes, gzip bombs. */
#include "dataset.h"
#include "fileio.h"
#include "test.h"

#include <string.h>
#include <zlib.h>

/* test.h's REQUIRE evaluates its condition twice; calls with side effects
 * go through this one instead. */
#define REQUIRE_OK(expr) do {                                                \
    int rq_ = (expr);                                                        \
    CHECK_MSG(rq_ == 0, "%s = %d", #expr, rq_);                              \
    if (rq_ != 0) return;                                                    \
} while (0)

/* Recorded when the fixture was made (tests/data/README.md), computed there
 * with Python's gzip module, independently of this code. */
static const uint32_t FIXTURE_LABEL_COUNTS[10] = {
    85, 126, 116, 107, 110, 87, 87, 99, 89, 94,
};
#define FIXTURE_IMAGE0_SUM 18454u
#define FIXTURE_IMAGE999_SUM 18905u
#define FIXTURE_PIXEL_SUM 24443134ull

static void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* gzip a buffer in memory (test helper; core only inflates). */
static int gz(const uint8_t *in, size_t len, uint8_t **ret, size_t *ret_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    uLong cap = deflateBound(&z, (uLong)len);
    uint8_t *out = malloc(cap);
    if (!out) {
        deflateEnd(&z);
        return -ENOMEM;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int zr = deflate(&z, Z_FINISH);
    *ret_len = z.total_out;
    deflateEnd(&z);
    if (zr != Z_STREAM_END) {
        free(out);
        return -EIO;
    }
    *ret = out;
    return 0;
}

/* Read a fixture from $NC_TEST_DATA (set by meson). */
static int read_fixture(const char *name, uint8_t **ret, size_t *ret_len)
{
    const char *dir = getenv("NC_TEST_DATA");
    if (!dir) {
        fprintf(stderr, "NC_TEST_DATA is not set (meson test sets it)\n");
        return -ENOENT;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int e = nc_file_read(path, 64u << 20, ret, ret_len);
    if (e < 0)
        fprintf(stderr, "%s: %s\n", path, nc_strerror(e));
    return e;
}

/* ---- the MNIST fixture ------------------------------------------------- */

static void test_fixture(void)
{
    uint8_t *img_gz = NULL, *lab_gz = NULL;
    size_t img_gz_len = 0, lab_gz_len = 0;
    REQUIRE_OK(read_fixture("mnist-t1k-images-idx3-ubyte.gz", &img_gz, &img_gz_len));
    int e = read_fixture("mnist-t1k-labels-idx1-ubyte.gz", &lab_gz, &lab_gz_len);
    CHECK_INT_EQ(e, 0);
    if (e < 0) {
        free(img_gz);
        return;
    }

    /* zeroed: a failed parse leaves d unwritten, and the double-fini check
     * below must then free NULLs, not stack garbage */
    nc_dataset d = { 0 };
    e = nc_dataset_parse(img_gz, img_gz_len, lab_gz, lab_gz_len, &d);
    CHECK_INT_EQ(e, 0);
    if (e == 0) {
        CHECK_INT_EQ(d.count, 1000);
        CHECK_INT_EQ(d.rows, 28);
        CHECK_INT_EQ(d.cols, 28);
        REQUIRE(d.labels != NULL);
        CHECK_INT_EQ(d.labels[0], 7);       /* MNIST test digit 0 is a 7 */
        CHECK_INT_EQ(d.labels[1], 2);
        uint32_t counts[256] = { 0 };
        for (uint32_t i = 0; i < d.count; i++)
            counts[d.labels[i]]++;
        for (int c = 0; c < 10; c++)
            CHECK_MSG(counts[c] == FIXTURE_LABEL_COUNTS[c], "digit %d: %u, want %u",
                      c, counts[c], FIXTURE_LABEL_COUNTS[c]);
        uint32_t s0 = 0, s999 = 0;
        unsigned long long total = 0;
        for (size_t i = 0; i < 784; i++) {
            s0 += d.pixels[i];
            s999 += d.pixels[999 * 784 + i];
        }
        for (size_t i = 0; i < 1000 * 784; i++)
            total += d.pixels[i];
        CHECK_INT_EQ(s0, FIXTURE_IMAGE0_SUM);
        CHECK_INT_EQ(s999, FIXTURE_IMAGE999_SUM);
        CHECK_INT_EQ(total, FIXTURE_PIXEL_SUM);
    }

    /* Plain and gzip inputs give identical datasets. */
    uint8_t *img = NULL, *lab = NULL;
    size_t img_len = 0, lab_len = 0;
    CHECK_INT_EQ(nc_gunzip(img_gz, img_gz_len, NC_GUNZIP_MAX_OUT, &img, &img_len), 0);
    CHECK_INT_EQ(nc_gunzip(lab_gz, lab_gz_len, NC_GUNZIP_MAX_OUT, &lab, &lab_len), 0);
    CHECK_INT_EQ(img_len, 16 + 1000 * 784);
    CHECK_INT_EQ(lab_len, 8 + 1000);
    nc_dataset p;
    if (e == 0 && img && lab && nc_dataset_parse(img, img_len, lab, lab_len, &p) == 0) {
        CHECK(p.count == d.count && p.rows == d.rows && p.cols == d.cols);
        CHECK(memcmp(p.pixels, d.pixels, 1000 * 784) == 0);
        CHECK(memcmp(p.labels, d.labels, 1000) == 0);

        /* Round trip: serialising all of it gives back the plain files. */
        uint8_t *ri = NULL, *rl = NULL;
        size_t ri_len = 0, rl_len = 0;
        CHECK_INT_EQ(nc_dataset_to_idx(&p, 0, 1000, &ri, &ri_len, &rl, &rl_len), 0);
        CHECK(ri_len == img_len && ri && memcmp(ri, img, img_len) == 0);
        CHECK(rl_len == lab_len && rl && memcmp(rl, lab, lab_len) == 0);
        free(ri);
        free(rl);

        /* A slice parses back to the same items. */
        CHECK_INT_EQ(nc_dataset_to_idx(&p, 10, 5, &ri, &ri_len, &rl, &rl_len), 0);
        nc_dataset s;
        if (nc_dataset_parse(ri, ri_len, rl, rl_len, &s) == 0) {
            CHECK_INT_EQ(s.count, 5);
            CHECK(memcmp(s.pixels, p.pixels + 10 * 784, 5 * 784) == 0);
            CHECK(memcmp(s.labels, p.labels + 10, 5) == 0);
            nc_dataset_fini(&s);
        } else {
            CHECK_MSG(0, "slice does not parse");
        }
        free(ri);
        free(rl);
        /* Images alone. */
        nc_dataset u;
        CHECK_INT_EQ(nc_dataset_parse(img, img_len, NULL, 0, &u), 0);
        CHECK(u.labels == NULL);
        nc_dataset_fini(&u);
        nc_dataset_fini(&p);
    } else {
        CHECK_MSG(0, "plain fixture does not parse");
    }
    if (e == 0)
        nc_dataset_fini(&d);
    nc_dataset_fini(&d);            /* twice is harmless */
    nc_dataset_fini(NULL);
    free(img);
    free(lab);
    free(img_gz);
    free(lab_gz);
}

/* ---- small hand-built files --------------------------------------------- */

/* 3 images of 2 x 3 pixels and their labels. */
enum { N = 3, ROWS = 2, COLS = 3 };
static uint8_t small_img[16 + N * ROWS * COLS];
static uint8_t small_lab[8 + N];

static void make_small(void)
{
    be32(small_img, 0x00000803u);
    be32(small_img + 4, N);
    be32(small_img + 8, ROWS);
    be32(small_img + 12, COLS);
    for (int i = 0; i < N * ROWS * COLS; i++)
        small_img[16 + i] = (uint8_t)(i * 13 + 1);
    be32(small_lab, 0x00000801u);
    be32(small_lab + 4, N);
    small_lab[8] = 3;
    small_lab[9] = 1;
    small_lab[10] = 4;
}

/* Parse a copy of exactly len bytes (so ASan catches any overread) and
 * check that a failure leaves *ret untouched. */
static int parse_copy(const uint8_t *img, size_t img_len,
                      const uint8_t *lab, size_t lab_len)
{
    uint8_t *ic = malloc(img_len ? img_len : 1);
    uint8_t *lc = lab ? malloc(lab_len ? lab_len : 1) : NULL;
    if (!ic || (lab && !lc)) {
        free(ic);
        free(lc);
        return -ENOMEM;
    }
    memcpy(ic, img, img_len);
    if (lab)
        memcpy(lc, lab, lab_len);
    nc_dataset d;
    memset(&d, 0x5a, sizeof(d));
    int e = nc_dataset_parse(ic, img_len, lc, lab_len, &d);
    if (e == 0) {
        nc_dataset_fini(&d);
    } else {
        nc_dataset sentinel;
        memset(&sentinel, 0x5a, sizeof(sentinel));
        CHECK_MSG(memcmp(&d, &sentinel, sizeof(d)) == 0, "ret written on error %d", e);
    }
    free(ic);
    free(lc);
    return e;
}

static void test_small_ok(void)
{
    nc_dataset d;
    REQUIRE_OK(nc_dataset_parse(small_img, sizeof(small_img), small_lab,
                                sizeof(small_lab), &d));
    CHECK(d.count == N && d.rows == ROWS && d.cols == COLS);
    CHECK(memcmp(d.pixels, small_img + 16, N * ROWS * COLS) == 0);
    CHECK(d.labels && d.labels[2] == 4);
    nc_dataset_fini(&d);
    CHECK(d.pixels == NULL && d.labels == NULL && d.count == 0);
    nc_dataset_fini(&d);

    /* Label bytes are not limited to 0..9: IDX allows any byte and the
     * class count belongs to the model (documented in dataset.h). */
    uint8_t lab[sizeof(small_lab)];
    memcpy(lab, small_lab, sizeof(lab));
    lab[9] = 200;
    REQUIRE_OK(nc_dataset_parse(small_img, sizeof(small_img), lab, sizeof(lab), &d));
    CHECK_INT_EQ(d.labels[1], 200);

    /* to_idx: ranges, no labels */
    uint8_t *ri = NULL, *rl = (uint8_t *)lab;
    size_t ri_len = 0, rl_len = 99;
    CHECK_INT_EQ(nc_dataset_to_idx(&d, 2, 2, &ri, &ri_len, &rl, &rl_len), -ERANGE);
    CHECK_INT_EQ(nc_dataset_to_idx(&d, UINT32_MAX, 2, &ri, &ri_len, &rl, &rl_len), -ERANGE);
    CHECK(ri == NULL && rl == lab && rl_len == 99);
    CHECK_INT_EQ(nc_dataset_to_idx(&d, 3, 0, &ri, &ri_len, &rl, &rl_len), 0);
    CHECK_INT_EQ(ri_len, 16);
    CHECK_INT_EQ(rl_len, 8);
    nc_dataset e0;      /* an empty dataset is valid IDX */
    CHECK_INT_EQ(nc_dataset_parse(ri, ri_len, rl, rl_len, &e0), 0);
    CHECK_INT_EQ(e0.count, 0);
    nc_dataset_fini(&e0);
    free(ri);
    free(rl);
    uint8_t *saved = d.labels;
    d.labels = NULL;
    CHECK_INT_EQ(nc_dataset_to_idx(&d, 0, 3, &ri, &ri_len, &rl, &rl_len), 0);
    CHECK(rl == NULL && rl_len == 0);
    CHECK(ri_len == sizeof(small_img) && memcmp(ri, small_img, ri_len) == 0);
    free(ri);
    CHECK_INT_EQ(nc_dataset_to_idx(&d, 0, 3, &ri, &ri_len, NULL, NULL), 0);
    free(ri);
    d.labels = saved;
    nc_dataset_fini(&d);
}

static void test_truncation(void)
{
    /* Plain: every proper prefix of either file fails. */
    int bad = 0;
    for (size_t cut = 0; cut < sizeof(small_img); cut++)
        if (parse_copy(small_img, cut, small_lab, sizeof(small_lab)) != -EBADMSG)
            { bad++; CHECK_MSG(0, "images cut at %zu accepted", cut); }
    for (size_t cut = 0; cut < sizeof(small_lab); cut++)
        if (parse_copy(small_img, sizeof(small_img), small_lab, cut) != -EBADMSG)
            { bad++; CHECK_MSG(0, "labels cut at %zu accepted", cut); }
    /* One byte too many is a lying header too. */
    uint8_t img_x[sizeof(small_img) + 1], lab_x[sizeof(small_lab) + 1];
    memcpy(img_x, small_img, sizeof(small_img));
    memcpy(lab_x, small_lab, sizeof(small_lab));
    img_x[sizeof(small_img)] = lab_x[sizeof(small_lab)] = 0;
    CHECK_INT_EQ(parse_copy(img_x, sizeof(img_x), small_lab, sizeof(small_lab)), -EBADMSG);
    CHECK_INT_EQ(parse_copy(small_img, sizeof(small_img), lab_x, sizeof(lab_x)), -EBADMSG);

    /* Gzip: every proper prefix fails too (a prefix of 0 or 1 bytes is no
     * longer gzip and fails as a too-short plain file). */
    uint8_t *gi = NULL, *gl = NULL;
    size_t gi_len = 0, gl_len = 0;
    REQUIRE_OK(gz(small_img, sizeof(small_img), &gi, &gi_len));
    int e = gz(small_lab, sizeof(small_lab), &gl, &gl_len);
    CHECK_INT_EQ(e, 0);
    if (e == 0) {
        CHECK_INT_EQ(parse_copy(gi, gi_len, gl, gl_len), 0);
        for (size_t cut = 0; cut < gi_len; cut++)
            if (parse_copy(gi, cut, gl, gl_len) != -EBADMSG)
                { bad++; CHECK_MSG(0, "gzip images cut at %zu accepted", cut); }
        for (size_t cut = 0; cut < gl_len; cut++)
            if (parse_copy(gi, gi_len, gl, cut) != -EBADMSG)
                { bad++; CHECK_MSG(0, "gzip labels cut at %zu accepted", cut); }
        for (size_t cut = 0; cut < gi_len; cut++) {
            uint8_t *out = (uint8_t *)&bad;
            size_t out_len = 12345;
            int r = nc_gunzip(gi, cut, 1 << 20, &out, &out_len);
            if (cut >= 2 && (r != -EBADMSG || out != (uint8_t *)&bad || out_len != 12345))
                { bad++; CHECK_MSG(0, "nc_gunzip of %zu bytes: %d", cut, r); }
            if (r == 0)
                free(out);
        }
    }
    CHECK_INT_EQ(bad, 0);
    free(gi);
    free(gl);
}

static void test_gzip_streams(void)
{
    uint8_t *g1 = NULL, *g2 = NULL;
    size_t g1_len = 0, g2_len = 0;
    /* Two members: the header+first image, and the rest. */
    REQUIRE_OK(gz(small_img, 22, &g1, &g1_len));
    int e = gz(small_img + 22, sizeof(small_img) - 22, &g2, &g2_len);
    CHECK_INT_EQ(e, 0);
    uint8_t *cat = malloc(g1_len + g2_len + 4);
    if (e == 0 && cat) {
        memcpy(cat, g1, g1_len);
        memcpy(cat + g1_len, g2, g2_len);
        uint8_t *out = NULL;
        size_t out_len = 0;
        CHECK_INT_EQ(nc_gunzip(cat, g1_len + g2_len, 1 << 20, &out, &out_len), 0);
        CHECK(out_len == sizeof(small_img) && memcmp(out, small_img, out_len) == 0);
        free(out);
        CHECK_INT_EQ(parse_copy(cat, g1_len + g2_len, small_lab, sizeof(small_lab)), 0);
        /* Trailing garbage after the last member, even zeros. */
        memset(cat + g1_len + g2_len, 0, 4);
        CHECK_INT_EQ(parse_copy(cat, g1_len + g2_len + 1, small_lab, sizeof(small_lab)), -EBADMSG);
        CHECK_INT_EQ(parse_copy(cat, g1_len + g2_len + 4, small_lab, sizeof(small_lab)), -EBADMSG);
        /* A second magic with nothing after it is a truncated member. */
        cat[g1_len + g2_len] = 0x1f;
        cat[g1_len + g2_len + 1] = 0x8b;
        CHECK_INT_EQ(parse_copy(cat, g1_len + g2_len + 2, small_lab, sizeof(small_lab)), -EBADMSG);
        /* Corrupt member CRC (the 8-byte trailer is CRC32 then ISIZE). */
        memcpy(cat, g1, g1_len);
        cat[g1_len - 8] ^= 1;
        CHECK_INT_EQ(parse_copy(cat, g1_len + g2_len, small_lab, sizeof(small_lab)), -EBADMSG);
        /* Wrong ISIZE. */
        cat[g1_len - 8] ^= 1;
        cat[g1_len - 1] ^= 0x40;
        CHECK_INT_EQ(parse_copy(cat, g1_len + g2_len, small_lab, sizeof(small_lab)), -EBADMSG);
        /* Garbage deflate data behind a gzip header. */
        memcpy(cat, g1, g1_len);
        memset(cat + 10, 0xff, g1_len - 18);
        CHECK_INT_EQ(parse_copy(cat, g1_len, small_lab, sizeof(small_lab)), -EBADMSG);
    }
    free(cat);
    free(g1);
    free(g2);

    /* nc_gunzip copies non-gzip input unchanged, empty input included. */
    uint8_t *out = NULL;
    size_t out_len = 1;
    CHECK_INT_EQ(nc_gunzip((const uint8_t *)"", 0, 10, &out, &out_len), 0);
    CHECK(out != NULL && out_len == 0);
    free(out);
    CHECK_INT_EQ(nc_gunzip(small_img, sizeof(small_img), sizeof(small_img), &out, &out_len), 0);
    CHECK(out_len == sizeof(small_img) && memcmp(out, small_img, out_len) == 0);
    free(out);
    out = NULL;
    CHECK_INT_EQ(nc_gunzip(small_img, sizeof(small_img), sizeof(small_img) - 1, &out, &out_len), -EOVERFLOW);
    CHECK(out == NULL);
    CHECK_INT_EQ(nc_gunzip(NULL, 5, 10, &out, &out_len), -EINVAL);
}

/* nc_gunzip_replace (a model file stored gzip'd): gzip is swapped for its
 * bytes, anything else left where it is; on an error the caller keeps its
 * buffer untouched. */
static void test_gunzip_replace(void)
{
    uint8_t *g = NULL, *buf = NULL, *plain = NULL;
    size_t g_len = 0, len = 0;
    REQUIRE_OK(gz(small_img, sizeof(small_img), &g, &g_len));

    /* gzip: replaced by the inflated bytes */
    REQUIRE((buf = malloc(g_len)) != NULL);
    memcpy(buf, g, g_len);
    len = g_len;
    CHECK_INT_EQ(nc_gunzip_replace(&buf, &len, sizeof(small_img)), 0);
    CHECK(len == sizeof(small_img) && memcmp(buf, small_img, len) == 0);
    free(buf);

    /* plain bytes: the same buffer, not a copy */
    REQUIRE((plain = malloc(sizeof(small_img))) != NULL);
    memcpy(plain, small_img, sizeof(small_img));
    buf = plain;
    len = sizeof(small_img);
    CHECK_INT_EQ(nc_gunzip_replace(&buf, &len, 1), 0);    /* the cap is for inflating only */
    CHECK(buf == plain && len == sizeof(small_img));
    free(plain);

    /* over the cap, truncated (the length field, then data too), corrupt
     * (the CRC no longer matches): an error, the buffer as it was */
    struct { size_t cap, len; int flip, want; } bad[] = {
        { sizeof(small_img) - 1, g_len, 0, -EOVERFLOW },
        { sizeof(small_img), g_len - 4, 0, -EBADMSG },
        { sizeof(small_img), g_len - 9, 0, -EBADMSG },
        { sizeof(small_img), g_len, 1, -EBADMSG },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        REQUIRE((buf = malloc(g_len)) != NULL);
        memcpy(buf, g, g_len);
        if (bad[k].flip)
            buf[g_len - 6] ^= 0x5a;
        uint8_t *was = buf;
        len = bad[k].len;
        CHECK_INT_EQ(nc_gunzip_replace(&buf, &len, bad[k].cap), bad[k].want);
        CHECK_MSG(buf == was && len == bad[k].len, "case %zu: the buffer changed", k);
        free(buf);
    }
    size_t n = 3;
    CHECK_INT_EQ(nc_gunzip_replace(NULL, &n, 10), -EINVAL);
    buf = NULL;
    CHECK_INT_EQ(nc_gunzip_replace(&buf, &n, 10), -EINVAL);    /* no buffer but a length */
    n = 0;
    CHECK_INT_EQ(nc_gunzip_replace(&buf, &n, 10), 0);          /* empty: left alone */
    CHECK(buf == NULL && n == 0);
    free(g);
}

static void test_gzip_bomb(void)
{
    /* 4 MiB of zeros deflate to about 4 KiB; the cap must stop inflation
     * well before the whole thing is allocated. */
    const size_t big = 4u << 20;
    uint8_t *zeros = calloc(1, big);
    REQUIRE(zeros);
    uint8_t *g = NULL;
    size_t g_len = 0;
    int e = gz(zeros, big, &g, &g_len);
    free(zeros);
    REQUIRE_OK(e);
    CHECK(g_len < 16384);
    uint8_t *out = NULL;
    size_t out_len = 0;
    CHECK_INT_EQ(nc_gunzip(g, g_len, 65536, &out, &out_len), -EOVERFLOW);
    CHECK(out == NULL);
    CHECK_INT_EQ(nc_gunzip(g, g_len, big - 1, &out, &out_len), -EOVERFLOW);
    CHECK_INT_EQ(nc_gunzip(g, g_len, 0, &out, &out_len), -EOVERFLOW);
    CHECK(out == NULL);
    CHECK_INT_EQ(nc_gunzip(g, g_len, big, &out, &out_len), 0);    /* exactly fits */
    CHECK_INT_EQ(out_len, big);
    free(out);
    free(g);
}

/* A header-only or short file with chosen fields. */
static int parse_images_hdr(uint32_t magic, uint32_t count, uint32_t rows,
                            uint32_t cols, size_t data_len)
{
    uint8_t *buf = calloc(1, 16 + data_len);
    if (!buf)
        return -ENOMEM;
    be32(buf, magic);
    be32(buf + 4, count);
    be32(buf + 8, rows);
    be32(buf + 12, cols);
    int e = parse_copy(buf, 16 + data_len, NULL, 0);
    free(buf);
    return e;
}

static void test_headers(void)
{
    /* sanity: the helper builds a valid file */
    CHECK_INT_EQ(parse_images_hdr(0x00000803u, 2, 3, 4, 24), 0);

    /* wrong magic */
    CHECK_INT_EQ(parse_images_hdr(0x00000801u, 2, 3, 4, 24), -EBADMSG);    /* labels as images */
    CHECK_INT_EQ(parse_images_hdr(0x12345678u, 2, 3, 4, 24), -EBADMSG);
    CHECK_INT_EQ(parse_images_hdr(0x03080000u, 2, 3, 4, 24), -EBADMSG);    /* byte-swapped */
    CHECK_INT_EQ(parse_images_hdr(0x00000804u, 2, 3, 4, 24), -EBADMSG);    /* 4 dims */
    CHECK_INT_EQ(parse_images_hdr(0x00000d03u, 2, 3, 4, 96), -ENOTSUP);    /* float images */
    CHECK_INT_EQ(parse_copy(small_lab, sizeof(small_lab), small_lab, sizeof(small_lab)), -EBADMSG);
    CHECK_INT_EQ(parse_copy(small_img, sizeof(small_img), small_img, sizeof(small_img)), -EBADMSG);

    /* lying counts: more or fewer items than bytes present */
    CHECK_INT_EQ(parse_images_hdr(0x00000803u, 3, 3, 4, 24), -EBADMSG);
    CHECK_INT_EQ(parse_images_hdr(0x00000803u, 1, 3, 4, 24), -EBADMSG);
    CHECK_INT_EQ(parse_images_hdr(0x00000803u, 2, 4, 3, 25), -EBADMSG);

    /* zero and huge dimensions */
    CHECK_INT_EQ(parse_images_hdr(0x00000803u, 2, 0, 4, 0), -EBADMSG);
    CHECK_INT_EQ(parse_images_hdr(0x00000803u, 2, 3, 0, 0), -EBADMSG);
    CHECK_INT_EQ(parse_images_hdr(0x00000803u, 1, NC_IDX_MAX_DIM + 1, 1, 0), -ERANGE);
    CHECK_INT_EQ(parse_images_hdr(0x00000803u, 1, 1, UINT32_MAX, 0), -ERANGE);
    CHECK_INT_EQ(parse_images_hdr(0x00000803u, NC_IDX_MAX_ITEMS + 1, 1, 1, 0), -ERANGE);
    CHECK_INT_EQ(parse_images_hdr(0x00000803u, UINT32_MAX, UINT32_MAX, UINT32_MAX, 0), -ERANGE);
    /* at the caps: a 160 TB promise, checked against the bytes present
     * before anything is allocated */
    CHECK_INT_EQ(parse_images_hdr(0x00000803u, NC_IDX_MAX_ITEMS, NC_IDX_MAX_DIM,
                                  NC_IDX_MAX_DIM, 8), -EBADMSG);
    /* count 0 with data after it */
    CHECK_INT_EQ(parse_images_hdr(0x00000803u, 0, 3, 4, 1), -EBADMSG);

    /* labels: lying and absurd counts, count mismatch with the images */
    uint8_t lab[8 + N];
    memcpy(lab, small_lab, sizeof(lab));
    be32(lab + 4, N + 1);
    CHECK_INT_EQ(parse_copy(small_img, sizeof(small_img), lab, sizeof(lab)), -EBADMSG);
    be32(lab + 4, UINT32_MAX);
    CHECK_INT_EQ(parse_copy(small_img, sizeof(small_img), lab, sizeof(lab)), -ERANGE);
    be32(lab + 4, N - 1);
    CHECK_INT_EQ(parse_copy(small_img, sizeof(small_img), lab, sizeof(lab) - 1), -EBADMSG);
    be32(lab, 0x00000901u);                         /* signed-byte labels */
    be32(lab + 4, N);
    CHECK_INT_EQ(parse_copy(small_img, sizeof(small_img), lab, sizeof(lab)), -ENOTSUP);

    /* bad arguments */
    nc_dataset d;
    CHECK_INT_EQ(nc_dataset_parse(NULL, 0, NULL, 0, &d), -EINVAL);
    CHECK_INT_EQ(nc_dataset_parse(small_img, sizeof(small_img), NULL, 5, &d), -EINVAL);
    CHECK_INT_EQ(nc_dataset_parse(small_img, sizeof(small_img), NULL, 0, NULL), -EINVAL);
}

int main(void)
{
    make_small();
    test_fixture();
    test_small_ok();
    test_truncation();
    test_gzip_streams();
    test_gunzip_replace();
    test_gzip_bomb();
    test_headers();
    return nc_test_finish();
}

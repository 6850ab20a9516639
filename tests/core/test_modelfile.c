/* tests/core/test_modelfile.c — the model file container (core/modelfile/modelfile.c).
 *
 * Round trips of sections and of nc_model_info, then the failure paths:
 * every truncation, random bit flips, lying lengths behind a valid CRC, a
 * newer version, and typed gets that do not match the section. */
#include "modelfile.h"
#include "test.h"

#include <string.h>

/* test.h's REQUIRE evaluates its condition twice; calls with side effects
 * go through this one instead. */
#define REQUIRE_OK(expr) do {                                                \
    int rq_ = (expr);                                                        \
    CHECK_MSG(rq_ == 0, "%s = %d", #expr, rq_);                              \
    if (rq_ != 0) return;                                                    \
} while (0)

#define TAG_ARCH NC_MF_TAG('A', 'R', 'C', 'H')
#define TAG_WGHT NC_MF_TAG('W', 'G', 'H', 'T')
#define TAG_DIMS NC_MF_TAG('D', 'I', 'M', 'S')
#define TAG_BLOB NC_MF_TAG('B', 'L', 'O', 'B')
#define TAG_EMPT NC_MF_TAG('E', 'M', 'P', 'T')
#define TAG_F64S NC_MF_TAG('F', '6', '4', 'S')

static void le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void le64(uint8_t *p, uint64_t v)
{
    le32(p, (uint32_t)v);
    le32(p + 4, (uint32_t)(v >> 32));
}

static nc_model_info sample_info(void)
{
    nc_model_info in;
    memset(&in, 0, sizeof(in));
    in.n_classes = 10;
    for (int c = 0; c < 10; c++)
        in.labels[c][0] = (char)('0' + c);
    in.prep = (nc_prep){ NC_PREP_MNIST, 28, 20, 1, 0, -1.0f, 0, 0, { 0 }, { 0 } };
    strcpy(in.data, "MNIST train 0-49999");
    strcpy(in.command, "neocog-train cnn --arch 1x29x29-20C4-MP2-40C5-MP3-150N-10N");
    strcpy(in.created, "2024-05-01T12:00:00Z");
    in.epochs = 14;
    in.seed = 0x123456789abcdef0ull;
    in.test_error = 0.0081;
    strcpy(in.test_set, "MNIST t10k (10000)");
    return in;
}

/* A small valid file with one section of every type plus the info block. */
static int build_sample(uint8_t **ret_buf, size_t *ret_len)
{
    nc_mf_writer *w = NULL;
    int e = nc_mf_writer_new(NC_MF_KIND_CNN, &w);
    if (e < 0)
        return e;
    const uint32_t dims[3] = { 1, 29, 0xdeadbeefu };
    const float wts[5] = { 0.5f, -1.25f, 3.0e-8f, 1.0e30f, -0.0f };
    const double f64s[2] = { 1.0 / 3.0, -2.5e-300 };
    const nc_model_info info = sample_info();
    if ((e = nc_mf_put_str(w, TAG_ARCH, "1x29x29-20C4-MP2-40C5-MP3-150N-10N")) < 0 ||
        (e = nc_mf_put_u32(w, TAG_DIMS, dims, 3)) < 0 ||
        (e = nc_mf_put_f32(w, TAG_WGHT, wts, 5)) < 0 ||
        (e = nc_mf_put(w, TAG_BLOB, NC_MF_TYPE_BYTES, "a\0b", 3)) < 0 ||
        (e = nc_mf_put(w, TAG_EMPT, NC_MF_TYPE_BYTES, NULL, 0)) < 0 ||
        (e = nc_mf_put_f64(w, TAG_F64S, f64s, 2)) < 0 ||
        (e = nc_mf_put_info(w, &info)) < 0)
        goto out;
    e = nc_mf_finish(w, ret_buf, ret_len);
out:
    nc_mf_writer_free(w);
    return e;
}

static void test_crc(void)
{
    /* the standard check value of CRC-32/ISO-HDLC */
    CHECK_INT_EQ(nc_crc32((const uint8_t *)"123456789", 9), 0xcbf43926u);
    CHECK_INT_EQ(nc_crc32(NULL, 0), 0);
}

static void test_round_trip(void)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE_OK(build_sample(&buf, &len));
    CHECK(len % 8 == 4);            /* 8-aligned body + 4-byte CRC */
    CHECK(memcmp(buf, "NCMODEL\0", 8) == 0);
    CHECK_INT_EQ(buf[8], 1);        /* version, little-endian */
    CHECK_INT_EQ(buf[12], NC_MF_KIND_CNN);

    nc_mf_reader *r = NULL;
    REQUIRE_OK(nc_mf_open(buf, len, &r));
    CHECK_INT_EQ(nc_mf_kind_of(r), NC_MF_KIND_CNN);

    char s[64];
    CHECK_INT_EQ(nc_mf_get_str(r, TAG_ARCH, s, sizeof(s)), 0);
    CHECK(strcmp(s, "1x29x29-20C4-MP2-40C5-MP3-150N-10N") == 0);
    /* exactly fitting needs room for the NUL */
    CHECK_INT_EQ(nc_mf_get_str(r, TAG_ARCH, s, 34), -EBADMSG);
    CHECK_INT_EQ(nc_mf_get_str(r, TAG_ARCH, s, 35), 0);

    uint32_t dims[3] = { 0 };
    size_t n = 0;
    CHECK_INT_EQ(nc_mf_count(r, TAG_DIMS, NC_MF_TYPE_U32, &n), 0);
    CHECK_INT_EQ(n, 3);
    CHECK_INT_EQ(nc_mf_get_u32(r, TAG_DIMS, dims, 3), 0);
    CHECK_INT_EQ(dims[1], 29);
    CHECK_INT_EQ(dims[2], 0xdeadbeefu);

    float wts[5] = { 0 };
    CHECK_INT_EQ(nc_mf_get_f32(r, TAG_WGHT, wts, 5), 0);
    CHECK(wts[0] == 0.5f && wts[1] == -1.25f && wts[2] == 3.0e-8f &&
          wts[3] == 1.0e30f && wts[4] == 0.0f && signbit(wts[4]));

    double f64s[2] = { 0 };
    CHECK_INT_EQ(nc_mf_get_f64(r, TAG_F64S, f64s, 2), 0);
    CHECK(f64s[0] == 1.0 / 3.0 && f64s[1] == -2.5e-300);

    uint32_t type = 99;
    const void *data = NULL;
    size_t nb = 0;
    CHECK_INT_EQ(nc_mf_get(r, TAG_BLOB, &type, &data, &nb), 0);
    CHECK_INT_EQ(type, NC_MF_TYPE_BYTES);
    CHECK_INT_EQ(nb, 3);
    CHECK(data && memcmp(data, "a\0b", 3) == 0);
    /* payloads are 8-aligned relative to the buffer, so a malloc'd buffer
     * gives aligned sections */
    CHECK(((const uint8_t *)data - buf) % 8 == 0);
    /* text getter refuses bytes with a NUL inside */
    CHECK_INT_EQ(nc_mf_get_str(r, TAG_BLOB, s, sizeof(s)), -EBADMSG);
    CHECK_INT_EQ(nc_mf_get_str(r, TAG_EMPT, s, sizeof(s)), 0);
    CHECK(s[0] == '\0');

    nc_model_info got;
    memset(&got, 0xa5, sizeof(got));
    CHECK_INT_EQ(nc_mf_get_info(r, &got), 0);
    nc_model_info want = sample_info();
    CHECK_INT_EQ(got.n_classes, 10);
    for (int c = 0; c < 10; c++)
        CHECK(strcmp(got.labels[c], want.labels[c]) == 0);
    CHECK(memcmp(&got.prep, &want.prep, sizeof(want.prep)) == 0);
    CHECK(strcmp(got.data, want.data) == 0);
    CHECK(strcmp(got.command, want.command) == 0);
    CHECK(strcmp(got.created, want.created) == 0);
    CHECK(strcmp(got.test_set, want.test_set) == 0);
    CHECK_INT_EQ(got.epochs, 14);
    CHECK(got.seed == want.seed);
    CHECK(got.test_error == want.test_error);

    /* absent sections */
    CHECK_INT_EQ(nc_mf_get(r, NC_MF_TAG('N', 'O', 'N', 'E'), NULL, NULL, NULL), -ENOENT);
    CHECK_INT_EQ(nc_mf_get_u32(r, NC_MF_TAG('N', 'O', 'N', 'E'), dims, 3), -ENOENT);

    /* the writer's output is deterministic */
    uint8_t *buf2 = NULL;
    size_t len2 = 0;
    CHECK(build_sample(&buf2, &len2) == 0);
    CHECK(len2 == len && buf2 && memcmp(buf, buf2, len) == 0);
    free(buf2);

    nc_mf_close(r);
    free(buf);
}

static void test_wrong_gets(void)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE_OK(build_sample(&buf, &len));
    nc_mf_reader *r = NULL;
    REQUIRE_OK(nc_mf_open(buf, len, &r));

    uint32_t u[8];
    float f[8];
    char s[8];
    size_t n = 77;
    /* wrong type */
    CHECK_INT_EQ(nc_mf_get_u32(r, TAG_WGHT, u, 5), -EBADMSG);
    CHECK_INT_EQ(nc_mf_get_f32(r, TAG_DIMS, f, 3), -EBADMSG);
    CHECK_INT_EQ(nc_mf_get_str(r, TAG_DIMS, s, sizeof(s)), -EBADMSG);
    CHECK_INT_EQ(nc_mf_count(r, TAG_DIMS, NC_MF_TYPE_F32, &n), -EBADMSG);
    CHECK_INT_EQ(n, 77);
    /* wrong count, either way; dst untouched */
    u[0] = 4242;
    CHECK_INT_EQ(nc_mf_get_u32(r, TAG_DIMS, u, 2), -EBADMSG);
    CHECK_INT_EQ(nc_mf_get_u32(r, TAG_DIMS, u, 4), -EBADMSG);
    CHECK_INT_EQ(u[0], 4242);
    CHECK_INT_EQ(nc_mf_get_f32(r, TAG_WGHT, f, 6), -EBADMSG);
    /* a string that does not fit */
    CHECK_INT_EQ(nc_mf_get_str(r, TAG_ARCH, s, sizeof(s)), -EBADMSG);
    /* bad arguments */
    CHECK_INT_EQ(nc_mf_get_u32(r, TAG_DIMS, NULL, 3), -EINVAL);
    CHECK_INT_EQ(nc_mf_count(r, TAG_DIMS, 9, &n), -EINVAL);
    nc_mf_close(r);
    free(buf);
}

/* The deskew flag travels in its own section, written only when set, so
 * files from before it read 0 and a set flag survives the round trip. */
static void test_deskew_flag(void)
{
    nc_model_info in = sample_info(), got;
    for (uint32_t flag = 0; flag <= 3; flag++) {
        nc_mf_writer *w = NULL;
        REQUIRE_OK(nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w));
        in.prep.deskew = flag;
        int e = nc_mf_put_info(w, &in);
        if (flag == 3) {            /* a writer refuses what readers refuse */
            CHECK_INT_EQ(e, -EINVAL);
            nc_mf_writer_free(w);
            break;
        }
        CHECK_INT_EQ(e, 0);
        uint8_t *buf = NULL;
        size_t len = 0;
        REQUIRE_OK(nc_mf_finish(w, &buf, &len));
        nc_mf_reader *r = NULL;
        REQUIRE_OK(nc_mf_open(buf, len, &r));
        size_t n = 0;
        CHECK_INT_EQ(nc_mf_count(r, NC_MF_TAG('P', 'D', 'S', 'K'), NC_MF_TYPE_U32, &n),
                     flag ? 0 : -ENOENT);
        memset(&got, 0xa5, sizeof(got));
        CHECK_INT_EQ(nc_mf_get_info(r, &got), 0);
        CHECK_INT_EQ(got.prep.deskew, flag);
        CHECK(memcmp(&got.prep, &in.prep, sizeof(in.prep)) == 0);
        nc_mf_close(r);
        free(buf);
        nc_mf_writer_free(w);
    }
    /* a flag of 3 in a file is a corrupt file */
    nc_mf_writer *w = NULL;
    REQUIRE_OK(nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w));
    in.prep.deskew = 0;
    const uint32_t three = 3;
    CHECK_INT_EQ(nc_mf_put_u32(w, NC_MF_TAG('P', 'D', 'S', 'K'), &three, 1), 0);
    CHECK_INT_EQ(nc_mf_put_info(w, &in), -EINVAL);      /* its tag is taken */
    nc_mf_writer_free(w);
    w = NULL;
    REQUIRE_OK(nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w));
    in.prep.deskew = 1;
    REQUIRE_OK(nc_mf_put_info(w, &in));
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE_OK(nc_mf_finish(w, &buf, &len));
    nc_mf_writer_free(w);
    nc_mf_reader *r = NULL;
    REQUIRE_OK(nc_mf_open(buf, len, &r));
    const void *data = NULL;
    uint32_t type = 0;
    size_t nb = 0;
    REQUIRE_OK(nc_mf_get(r, NC_MF_TAG('P', 'D', 'S', 'K'), &type, &data, &nb));
    nc_mf_close(r);
    /* patch the payload to 3 and the CRC after it */
    size_t off = (size_t)((const uint8_t *)data - buf);
    le32(buf + off, 3);
    le32(buf + len - 4, nc_crc32(buf, len - 4));
    REQUIRE_OK(nc_mf_open(buf, len, &r));
    CHECK_INT_EQ(nc_mf_get_info(r, &got), -EBADMSG);
    nc_mf_close(r);
    free(buf);
}

/* The prep's views (PVEW, box and deskew pairs): absent without views, round
 * trip with them; a writer refuses what readers refuse, and a reader refuses
 * an empty list, half a pair, too many views, a zero box, a box past the
 * limit, a deskew past gentle, or the wrong type. */
static int info_file(const nc_model_info *in, uint32_t extra_type, const void *extra,
                     size_t extra_len, uint8_t **buf, size_t *len)
{
    nc_mf_writer *w = NULL;
    int e = nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w);
    if (!e)
        e = nc_mf_put_info(w, in);
    if (!e && extra)    /* after: nc_mf_put_info refuses a PVEW already there */
        e = nc_mf_put(w, NC_MF_TAG('P', 'V', 'E', 'W'), extra_type, extra, extra_len);
    if (!e)
        e = nc_mf_finish(w, buf, len);
    nc_mf_writer_free(w);
    return e;
}

/* NC_PREP_LINE is stored and read back like the other kinds, and a record
 * that differs from another only by the kind does not join it. */
static void test_line_kind(void)
{
    nc_model_info in = sample_info(), got;
    in.prep = NC_PREP_LINE_29;
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE_OK(info_file(&in, 0, NULL, 0, &buf, &len));
    nc_mf_reader *r = NULL;
    REQUIRE_OK(nc_mf_open(buf, len, &r));
    memset(&got, 0xa5, sizeof(got));
    CHECK_INT_EQ(nc_mf_get_info(r, &got), 0);
    CHECK(memcmp(&got.prep, &in.prep, sizeof(in.prep)) == 0);
    nc_model_info mnist = in;
    mnist.prep.kind = NC_PREP_MNIST;
    CHECK(nc_mf_info_mismatch(&got, &mnist) != NULL);
    nc_mf_close(r);
    free(buf);
}

static void test_views(void)
{
    nc_model_info in = sample_info(), got;
    in.prep.kind = NC_PREP_NEOCOG;
    in.prep.size = 65;
    in.prep.box = 48;
    for (uint32_t nv = 0; nv <= NC_PREP_MAX_VIEWS; nv += 3) {
        in.prep.n_views = nv;
        memset(in.prep.view_box, 0, sizeof in.prep.view_box);
        memset(in.prep.view_deskew, 0, sizeof in.prep.view_deskew);
        for (uint32_t v = 0; v < nv; v++) {
            in.prep.view_box[v] = 40 + 2 * v;
            in.prep.view_deskew[v] = v % 3;
        }
        uint8_t *buf = NULL;
        size_t len = 0;
        REQUIRE_OK(info_file(&in, 0, NULL, 0, &buf, &len));
        nc_mf_reader *r = NULL;
        REQUIRE_OK(nc_mf_open(buf, len, &r));
        size_t n = 0;
        CHECK_INT_EQ(nc_mf_count(r, NC_MF_TAG('P', 'V', 'E', 'W'), NC_MF_TYPE_U32, &n),
                     nv ? 0 : -ENOENT);
        CHECK_INT_EQ(n, 2 * nv);
        memset(&got, 0xa5, sizeof(got));
        CHECK_INT_EQ(nc_mf_get_info(r, &got), 0);
        CHECK(memcmp(&got.prep, &in.prep, sizeof(in.prep)) == 0);
        /* records that differ only in views still make one committee */
        nc_model_info plain = in;
        plain.prep.n_views = 0;
        memset(plain.prep.view_box, 0, sizeof plain.prep.view_box);
        memset(plain.prep.view_deskew, 0, sizeof plain.prep.view_deskew);
        CHECK(nc_mf_info_mismatch(&got, &plain) == NULL);
        plain.prep.box = 44;
        CHECK(nc_mf_info_mismatch(&got, &plain) != NULL);
        nc_mf_close(r);
        free(buf);
    }
    /* the writer */
    uint8_t *buf = NULL;
    size_t len = 0;
    in.prep.n_views = NC_PREP_MAX_VIEWS + 1;
    CHECK_INT_EQ(info_file(&in, 0, NULL, 0, &buf, &len), -EINVAL);
    in.prep.n_views = 2;
    in.prep.view_box[2] = 50;                   /* an entry past n_views */
    CHECK_INT_EQ(info_file(&in, 0, NULL, 0, &buf, &len), -EINVAL);
    in.prep.view_box[2] = 0;
    in.prep.view_deskew[1] = 3;
    CHECK_INT_EQ(info_file(&in, 0, NULL, 0, &buf, &len), -EINVAL);
    in.prep.view_deskew[1] = 0;
    in.prep.view_box[1] = 0;
    CHECK_INT_EQ(info_file(&in, 0, NULL, 0, &buf, &len), -EINVAL);
    /* the reader, given a PVEW the writer would not make */
    in.prep.n_views = 0;
    memset(in.prep.view_box, 0, sizeof in.prep.view_box);
    memset(in.prep.view_deskew, 0, sizeof in.prep.view_deskew);
    uint32_t nine[18];
    for (int i = 0; i < 18; i++)
        nine[i] = i % 2 ? 0 : 40;
    const uint32_t zero[4] = { 44, 0, 0, 0 }, huge[2] = { 5000, 0 }, shear[2] = { 44, 3 };
    const float f[2] = { 44.0f, 0.0f };
    struct { uint32_t type; const void *d; size_t n; const char *what; } bad[] = {
        { NC_MF_TYPE_U32, nine, 0, "no views" },
        { NC_MF_TYPE_U32, nine, 3 * sizeof(uint32_t), "half a pair" },
        { NC_MF_TYPE_U32, nine, sizeof nine, "nine views" },
        { NC_MF_TYPE_U32, zero, sizeof zero, "a zero box" },
        { NC_MF_TYPE_U32, huge, sizeof huge, "a box past the limit" },
        { NC_MF_TYPE_U32, shear, sizeof shear, "a deskew past gentle" },
        { NC_MF_TYPE_F32, f, sizeof f, "floats" },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(bad); i++) {
        REQUIRE_OK(info_file(&in, bad[i].type, bad[i].d, bad[i].n, &buf, &len));
        nc_mf_reader *r = NULL;
        REQUIRE_OK(nc_mf_open(buf, len, &r));
        got.n_classes = 1234;
        CHECK_MSG(nc_mf_get_info(r, &got) == -EBADMSG, "%s accepted", bad[i].what);
        CHECK_INT_EQ(got.n_classes, 1234);
        nc_mf_close(r);
        free(buf);
        buf = NULL;
    }
}

/* The 94 printable ASCII characters as a record's classes, and the cap:
 * every label text comes back, one class over the cap is refused. */
static void test_many_classes(void)
{
    nc_model_info in = sample_info(), got;
    in.n_classes = 94;
    for (int c = 0; c < 94; c++) {
        in.labels[c][0] = (char)('!' + c);
        in.labels[c][1] = '\0';
    }
    nc_mf_writer *w = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_mf_reader *r = NULL;
    CHECK_INT_EQ(nc_mf_writer_new(NC_MF_KIND_CNN, &w), 0);
    CHECK_INT_EQ(nc_mf_put_info(w, &in), 0);
    CHECK_INT_EQ(nc_mf_finish(w, &buf, &len), 0);
    CHECK_INT_EQ(nc_mf_open(buf, len, &r), 0);
    memset(&got, 0, sizeof got);
    CHECK_INT_EQ(nc_mf_get_info(r, &got), 0);
    CHECK_INT_EQ(got.n_classes, 94);
    CHECK(!memcmp(got.labels, in.labels, sizeof in.labels));
    CHECK(!strcmp(got.labels[93], "~"));
    nc_mf_close(r);
    free(buf);
    nc_mf_writer_free(w);

    in.n_classes = NC_MF_MAX_CLASSES;
    for (uint32_t c = 0; c < NC_MF_MAX_CLASSES; c++)
        snprintf(in.labels[c], sizeof in.labels[c], "c%u", c);
    CHECK_INT_EQ(nc_mf_writer_new(NC_MF_KIND_CNN, &w), 0);
    CHECK_INT_EQ(nc_mf_put_info(w, &in), 0);
    in.n_classes = NC_MF_MAX_CLASSES + 1;
    CHECK_INT_EQ(nc_mf_put_info(w, &in), -EINVAL);
    nc_mf_writer_free(w);
}

static void test_writer_rules(void)
{
    nc_mf_writer *w = NULL;
    CHECK_INT_EQ(nc_mf_writer_new(0, &w), -EINVAL);
    CHECK_INT_EQ(nc_mf_writer_new(4, &w), -EINVAL);
    REQUIRE_OK(nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w));
    const uint32_t v[2] = { 1, 2 };
    CHECK_INT_EQ(nc_mf_put_u32(w, TAG_DIMS, v, 2), 0);
    /* duplicate tag, whatever the type */
    CHECK_INT_EQ(nc_mf_put_u32(w, TAG_DIMS, v, 1), -EINVAL);
    CHECK_INT_EQ(nc_mf_put_str(w, TAG_DIMS, "x"), -EINVAL);
    /* bad tag, type, length */
    CHECK_INT_EQ(nc_mf_put_str(w, NC_MF_TAG('A', 0, 'C', 'H'), "x"), -EINVAL);
    CHECK_INT_EQ(nc_mf_put(w, TAG_BLOB, 7, "abcd", 4), -EINVAL);
    CHECK_INT_EQ(nc_mf_put(w, TAG_BLOB, NC_MF_TYPE_U32, "abc", 3), -EINVAL);
    CHECK_INT_EQ(nc_mf_put(w, TAG_BLOB, NC_MF_TYPE_BYTES, NULL, 3), -EINVAL);
    /* a writer refuses values a reader would refuse */
    const float nanv[2] = { 1.0f, NAN };
    const double infv[1] = { INFINITY };
    CHECK_INT_EQ(nc_mf_put_f32(w, TAG_WGHT, nanv, 2), -EINVAL);
    CHECK_INT_EQ(nc_mf_put_f64(w, TAG_F64S, infv, 1), -EINVAL);
    nc_model_info in = sample_info();
    in.n_classes = 0;
    CHECK_INT_EQ(nc_mf_put_info(w, &in), -EINVAL);
    in = sample_info();
    in.prep.kind = NC_PREP_LINE + 1;
    CHECK_INT_EQ(nc_mf_put_info(w, &in), -EINVAL);
    in = sample_info();
    memset(in.created, 'x', sizeof(in.created));     /* unterminated */
    CHECK_INT_EQ(nc_mf_put_info(w, &in), -EINVAL);
    /* a clash with an info tag fails before anything is added */
    in = sample_info();
    CHECK_INT_EQ(nc_mf_put_str(w, NC_MF_TAG('T', 'S', 'E', 'T'), "clash"), 0);
    CHECK_INT_EQ(nc_mf_put_info(w, &in), -EINVAL);
    CHECK_INT_EQ(nc_mf_put_str(w, NC_MF_TAG('D', 'A', 'T', 'A'), "free"), 0);

    /* the section cap */
    for (uint32_t i = 3; i < NC_MF_MAX_SECTIONS; i++)
        CHECK_INT_EQ(nc_mf_put_u32(w, NC_MF_TAG('S', 'a' + i % 26, 'a' + i / 26, 'z'), v, 1), 0);
    CHECK_INT_EQ(nc_mf_put_u32(w, NC_MF_TAG('L', 'A', 'S', 'T'), v, 1), -EOVERFLOW);
    uint8_t *buf = NULL;
    size_t len = 0;
    CHECK_INT_EQ(nc_mf_finish(w, &buf, &len), 0);
    nc_mf_reader *r = NULL;
    CHECK_INT_EQ(nc_mf_open(buf, len, &r), 0);
    nc_mf_close(r);
    free(buf);
    nc_mf_writer_free(w);
    nc_mf_writer_free(NULL);
    nc_mf_close(NULL);
}

static void test_truncation(void)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE_OK(build_sample(&buf, &len));
    int bad = 0;
    for (size_t cut = 0; cut < len; cut++) {
        /* a fresh copy of exactly cut bytes, so ASan sees any overread */
        uint8_t *t = malloc(cut ? cut : 1);
        REQUIRE(t);
        memcpy(t, buf, cut);
        nc_mf_reader *r = (nc_mf_reader *)&bad;     /* must stay untouched */
        int e = nc_mf_open(t, cut, &r);
        if (e != -EBADMSG || r != (nc_mf_reader *)&bad) {
            bad++;
            CHECK_MSG(0, "truncated to %zu bytes: %d", cut, e);
        }
        free(t);
    }
    CHECK_INT_EQ(bad, 0);
    /* and a byte too many */
    uint8_t *t = malloc(len + 1);
    REQUIRE(t);
    memcpy(t, buf, len);
    t[len] = 0;
    nc_mf_reader *r = NULL;
    CHECK_INT_EQ(nc_mf_open(t, len + 1, &r), -EBADMSG);
    free(t);
    free(buf);
}

static void test_bit_flips(void)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE_OK(build_sample(&buf, &len));
    uint8_t *t = malloc(len);
    REQUIRE(t);
    nc_test_rng rng = { 0x5eed0f1175ull };
    int accepted = 0;
    for (int trial = 0; trial < 5000; trial++) {
        memcpy(t, buf, len);
        int nbits = 1 + (int)(nc_test_next(&rng) % 8);
        for (int b = 0; b < nbits; b++) {
            size_t bit = (size_t)(nc_test_next(&rng) % (len * 8));
            t[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
        if (memcmp(t, buf, len) == 0)
            continue;           /* the flips cancelled out */
        nc_mf_reader *r = NULL;
        int e = nc_mf_open(t, len, &r);
        if (e == 0) {
            accepted++;
            nc_mf_close(r);
        } else {
            /* a flip inside the version field may read as "newer" */
            CHECK_MSG(e == -EBADMSG || e == -ENOTSUP, "trial %d: %d", trial, e);
        }
    }
    CHECK_INT_EQ(accepted, 0);
    free(t);
    free(buf);
}

/* Assemble a file by hand: header, raw section bytes, correct CRC. */
static size_t hand_file(uint8_t *out, uint32_t version, uint32_t n_sections,
                        const uint8_t *body, size_t body_len)
{
    memcpy(out, "NCMODEL\0", 8);
    le32(out + 8, version);
    le32(out + 12, NC_MF_KIND_NEOCOG);
    le32(out + 16, n_sections);
    le32(out + 20, 0);
    size_t len = 32 + body_len + 4;
    le64(out + 24, len);
    memcpy(out + 32, body, body_len);
    le32(out + 32 + body_len, nc_crc32(out, 32 + body_len));
    return len;
}

static void test_hand_built(void)
{
    uint8_t body[32], file[128];
    nc_mf_reader *r = NULL;

    /* a valid one-section file first, to show the builder is right */
    memset(body, 0, sizeof(body));
    le32(body, TAG_DIMS);
    le32(body + 4, NC_MF_TYPE_U32);
    le64(body + 8, 8);
    le32(body + 16, 7);
    le32(body + 20, 9);
    size_t len = hand_file(file, 1, 1, body, 24);
    REQUIRE_OK(nc_mf_open(file, len, &r));
    uint32_t v[2];
    CHECK_INT_EQ(nc_mf_get_u32(r, TAG_DIMS, v, 2), 0);
    CHECK(v[0] == 7 && v[1] == 9);
    nc_mf_close(r);
    r = NULL;

    /* section length pointing outside the file, CRC correct */
    le64(body + 8, 4096);
    len = hand_file(file, 1, 1, body, 24);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    /* a length so large that off + len would wrap */
    le64(body + 8, UINT64_MAX - 3);
    len = hand_file(file, 1, 1, body, 24);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    /* a length not a multiple of the element size */
    le64(body + 8, 6);
    len = hand_file(file, 1, 1, body, 24);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    /* non-zero padding after a 4-byte payload */
    le64(body + 8, 4);
    len = hand_file(file, 1, 1, body, 24);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    body[20] = 0;   /* padding now zero: valid again */
    len = hand_file(file, 1, 1, body, 24);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), 0);
    nc_mf_close(r);
    r = NULL;
    /* fewer sections claimed than present: bytes left before the CRC */
    le64(body + 8, 8);
    body[20] = 9;
    len = hand_file(file, 1, 0, body, 24);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    /* more claimed than present */
    len = hand_file(file, 1, 2, body, 24);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    /* too many sections */
    len = hand_file(file, 1, NC_MF_MAX_SECTIONS + 1, body, 24);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    /* unknown type */
    le32(body + 4, 4);
    len = hand_file(file, 1, 1, body, 24);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    le32(body + 4, NC_MF_TYPE_U32);
    /* duplicate tags: two 8-byte sections with the same tag */
    uint8_t two[48];
    memcpy(two, body, 24);
    memcpy(two + 24, body, 24);
    len = hand_file(file, 1, 2, two, 48);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    le32(two + 24, TAG_WGHT);
    len = hand_file(file, 1, 2, two, 48);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), 0);
    nc_mf_close(r);
    r = NULL;

    /* newer version: -ENOTSUP; version 0: corrupt */
    len = hand_file(file, 2, 1, body, 24);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -ENOTSUP);
    len = hand_file(file, 0, 1, body, 24);
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    /* unknown kind, non-zero reserved word, wrong total length */
    len = hand_file(file, 1, 1, body, 24);
    le32(file + 12, 9);
    le32(file + len - 4, nc_crc32(file, len - 4));
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    len = hand_file(file, 1, 1, body, 24);
    le32(file + 20, 1);
    le32(file + len - 4, nc_crc32(file, len - 4));
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    len = hand_file(file, 1, 1, body, 24);
    le64(file + 24, len + 8);
    le32(file + len - 4, nc_crc32(file, len - 4));
    CHECK_INT_EQ(nc_mf_open(file, len, &r), -EBADMSG);
    CHECK(r == NULL);
}

static void test_nan_section(void)
{
    /* nc_mf_put stores raw bytes, so it can write what nc_mf_put_f32 would
     * refuse: a reader must still catch it on get */
    nc_mf_writer *w = NULL;
    REQUIRE_OK(nc_mf_writer_new(NC_MF_KIND_CNN, &w));
    uint8_t raw[12], raw_inf[4], raw64[8];
    le32(raw, 0x3f800000u);         /* 1.0f */
    le32(raw + 4, 0x7fc00000u);     /* quiet NaN */
    le32(raw + 8, 0x00000001u);     /* smallest subnormal: fine */
    le32(raw_inf, 0xff800000u);     /* -Inf */
    le64(raw64, 0x7ff0000000000001ull);   /* signalling NaN */
    CHECK_INT_EQ(nc_mf_put(w, TAG_WGHT, NC_MF_TYPE_F32, raw, 12), 0);
    CHECK_INT_EQ(nc_mf_put(w, TAG_BLOB, NC_MF_TYPE_F32, raw_inf, 4), 0);
    CHECK_INT_EQ(nc_mf_put(w, TAG_F64S, NC_MF_TYPE_F64, raw64, 8), 0);
    CHECK_INT_EQ(nc_mf_put(w, TAG_EMPT, NC_MF_TYPE_F32, raw + 8, 4), 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE_OK(nc_mf_finish(w, &buf, &len));
    nc_mf_writer_free(w);
    nc_mf_reader *r = NULL;
    REQUIRE_OK(nc_mf_open(buf, len, &r));
    float f[3] = { 5.0f, 5.0f, 5.0f };
    double d = 5.0;
    CHECK_INT_EQ(nc_mf_get_f32(r, TAG_WGHT, f, 3), -EBADMSG);
    CHECK(f[0] == 5.0f);            /* untouched on failure */
    CHECK_INT_EQ(nc_mf_get_f32(r, TAG_BLOB, f, 1), -EBADMSG);
    CHECK_INT_EQ(nc_mf_get_f64(r, TAG_F64S, &d, 1), -EBADMSG);
    CHECK_INT_EQ(nc_mf_get_f32(r, TAG_EMPT, f, 1), 0);
    CHECK(f[0] > 0.0f && f[0] < 1e-44f);
    nc_mf_close(r);
    free(buf);
}

/* nc_mf_get_info validates what it reads even behind a good CRC. */
static void test_bad_info(void)
{
    const uint32_t head[4] = { 65, 1, 0, 0 };     /* too many classes */
    nc_mf_writer *w = NULL;
    REQUIRE_OK(nc_mf_writer_new(NC_MF_KIND_CNN, &w));
    CHECK_INT_EQ(nc_mf_put_u32(w, NC_MF_TAG('I', 'N', 'F', 'O'), head, 4), 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE_OK(nc_mf_finish(w, &buf, &len));
    nc_mf_writer_free(w);
    nc_mf_reader *r = NULL;
    REQUIRE_OK(nc_mf_open(buf, len, &r));
    nc_model_info got;
    got.n_classes = 1234;
    CHECK_INT_EQ(nc_mf_get_info(r, &got), -EBADMSG);     /* also sections missing */
    CHECK_INT_EQ(got.n_classes, 1234);
    nc_mf_close(r);
    free(buf);

    /* a complete info block, then one field at a time made bad by patching
     * the payload and fixing the CRC */
    REQUIRE_OK(nc_mf_writer_new(NC_MF_KIND_CNN, &w));
    nc_model_info in = sample_info();
    REQUIRE_OK(nc_mf_put_info(w, &in));
    REQUIRE_OK(nc_mf_finish(w, &buf, &len));
    nc_mf_writer_free(w);
    REQUIRE_OK(nc_mf_open(buf, len, &r));
    const void *p;
    size_t nb;
    REQUIRE_OK(nc_mf_get(r, NC_MF_TAG('P', 'R', 'E', 'P'), NULL, &p, &nb));
    size_t prep_off = (size_t)((const uint8_t *)p - buf);
    REQUIRE_OK(nc_mf_get(r, NC_MF_TAG('L', 'A', 'B', 'L'), NULL, &p, &nb));
    size_t labl_off = (size_t)((const uint8_t *)p - buf);
    REQUIRE_OK(nc_mf_get(r, NC_MF_TAG('P', 'T', 'H', 'R'), NULL, &p, &nb));
    size_t pthr_off = (size_t)((const uint8_t *)p - buf);
    nc_mf_close(r);
    r = NULL;

    struct { size_t off; uint32_t val; const char *what; } patches[] = {
        { prep_off, 7, "prep kind" },
        { prep_off + 4, 0, "prep size 0" },
        { prep_off + 4, 1025, "prep size 1025" },
        { prep_off + 8, 0, "prep box 0" },
        { prep_off + 16, 2, "invert 2" },
        { pthr_off, 0x7f800000u, "threshold Inf" },
        { pthr_off, 0x40000000u, "threshold 2.0" },
        { labl_off + 2, 0x41u, "label padding not zero" },
        { labl_off, 0x41414141u, "label empty" },
    };
    uint8_t *t = malloc(len);
    REQUIRE(t);
    for (size_t i = 0; i < NC_ARRAY_LEN(patches); i++) {
        memcpy(t, buf, len);
        if (strcmp(patches[i].what, "label empty") == 0)
            memset(t + labl_off, 0, 16);
        else
            le32(t + patches[i].off, patches[i].val);
        le32(t + len - 4, nc_crc32(t, len - 4));
        REQUIRE_OK(nc_mf_open(t, len, &r));
        CHECK_MSG(nc_mf_get_info(r, &got) == -EBADMSG, "%s", patches[i].what);
        nc_mf_close(r);
        r = NULL;
    }
    /* a label filling all 16 bytes has no NUL */
    memcpy(t, buf, len);
    memset(t + labl_off, 'x', 16);
    le32(t + len - 4, nc_crc32(t, len - 4));
    REQUIRE_OK(nc_mf_open(t, len, &r));
    CHECK_INT_EQ(nc_mf_get_info(r, &got), -EBADMSG);
    nc_mf_close(r);
    free(t);
    free(buf);
}

int main(void)
{
    test_crc();
    test_round_trip();
    test_wrong_gets();
    test_deskew_flag();
    test_views();
    test_line_kind();
    test_writer_rules();
    test_many_classes();
    test_truncation();
    test_bit_flips();
    test_hand_built();
    test_nan_section();
    test_bad_info();
    return nc_test_finish();
}

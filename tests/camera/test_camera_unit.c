/* tests/camera/test_camera_unit.c — `neocog camera`'s parsers alone: MJPEG
 * splitting (clean streams, garbage between frames, an EXIF thumbnail with
 * its own SOI/EOI, stuffed bytes and restart markers in the scan, broken
 * frames, a frame cut short at the end, a missing EOI), fed whole and a
 * byte at a time; y4m headers; a pipe and a file opened as sources (neither
 * is live, and every frame comes out).
 *
 * The JPEGs here are marker skeletons, not decodable images: splitting
 * only walks markers, and the stream test feeds real frames. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "camera_input.h"
#include "test.h"

typedef struct buf {
    uint8_t b[4096];
    size_t n;
} buf;

static void put(buf *s, const void *p, size_t n)
{
    memcpy(s->b + s->n, p, n);
    s->n += n;
}

static void put_seg(buf *s, uint8_t marker, const uint8_t *payload, size_t n)
{
    uint8_t h[4] = { 0xff, marker, (uint8_t)((n + 2) >> 8), (uint8_t)(n + 2) };
    put(s, h, 4);
    put(s, payload, n);
}

/* A skeleton JPEG: SOI, APP0, optional APP1 holding a thumbnail (a whole
 * JPEG of its own), DQT, SOF0, SOS, scan data with a stuffed FF and an RST,
 * EOI.  tag makes frames distinct. */
static void jpeg(buf *s, uint8_t tag, int thumbnail, int eoi)
{
    static const uint8_t soi[2] = { 0xff, 0xd8 }, eoi_m[2] = { 0xff, 0xd9 };
    put(s, soi, 2);
    put_seg(s, 0xe0, (const uint8_t *)"JFIF\0\1\1\0\0\1\0\1\0\0", 14);
    if (thumbnail) {
        buf t = { .n = 0 };
        put(&t, "Exif\0\0", 6);
        jpeg(&t, (uint8_t)(tag ^ 0x55), 0, 1);
        put_seg(s, 0xe1, t.b, t.n);
    }
    uint8_t dqt[65] = { 0 };
    dqt[1] = tag;
    put_seg(s, 0xdb, dqt, sizeof dqt);
    uint8_t sof[9] = { 8, 0, 16, 0, 16, 1, 1, 0x11, 0 };
    put_seg(s, 0xc0, sof, sizeof sof);
    uint8_t sos[6] = { 1, 1, 0, 0, 63, 0 };
    put_seg(s, 0xda, sos, sizeof sos);
    uint8_t scan[] = { tag, 0x12, 0xff, 0x00, 0x34, 0xff, 0xd3, 0x56, 0xff, 0xff, 0x00, 0x78 };
    put(s, scan, sizeof scan);
    if (eoi)
        put(s, eoi_m, 2);
}

typedef struct got {
    int n_frames, n_no_eoi, n_bad, n_end;
    size_t skipped;
    size_t len[16];
    uint8_t first_tag[16];      /* the DQT byte that carries the tag */
} got;

/* Run the splitter over s, revealing `step` more bytes at a time (0: all
 * at once), as a reader appending to its buffer would. */
static void split(const buf *s, size_t step, got *g)
{
    memset(g, 0, sizeof *g);
    nc_mjpeg_split sp;
    nc_mjpeg_split_init(&sp);
    size_t head = 0, shown = step ? 0 : s->n;
    for (int guard = 0; guard < 100000; guard++) {
        int eof = shown == s->n;
        nc_mjpeg_cut c;
        nc_mjpeg_status st = nc_mjpeg_next(&sp, s->b + head, shown - head, eof, 1u << 20, &c);
        if (st == NC_MJPEG_END) {
            g->n_end++;
            return;
        }
        if (st == NC_MJPEG_MORE) {
            if (eof) {
                CHECK_MSG(0, "MORE at eof");
                return;
            }
            shown = shown + step < s->n ? shown + step : s->n;
            continue;
        }
        CHECK(c.consumed > 0 && c.consumed <= shown - head);
        if (st == NC_MJPEG_SKIP) {
            g->skipped += c.consumed;
        } else if (st == NC_MJPEG_BAD) {
            g->n_bad++;
            CHECK(c.why != NULL);
        } else {
            int k = g->n_frames + g->n_no_eoi;
            if (k < 16) {
                g->len[k] = c.len;
                /* The frame's own DQT (FF DB len len id tag) is the last
                 * one: a thumbnail's comes earlier, inside APP1. */
                const uint8_t *f = s->b + head + c.start;
                for (size_t i = 2; i + 5 < c.len; i++)
                    if (f[i] == 0xff && f[i + 1] == 0xdb)
                        g->first_tag[k] = f[i + 5];
            }
            CHECK(s->b[head + c.start] == 0xff && s->b[head + c.start + 1] == 0xd8);
            if (st == NC_MJPEG_FRAME) {
                g->n_frames++;
                CHECK(s->b[head + c.start + c.len - 2] == 0xff &&
                      s->b[head + c.start + c.len - 1] == 0xd9);
            } else {
                g->n_no_eoi++;
            }
        }
        head += c.consumed;
    }
    CHECK_MSG(0, "the splitter did not finish");
}

static void both(const buf *s, got *whole)
{
    got byte;
    split(s, 0, whole);
    split(s, 1, &byte);
    CHECK_INT_EQ(byte.n_frames, whole->n_frames);
    CHECK_INT_EQ(byte.n_no_eoi, whole->n_no_eoi);
    CHECK_INT_EQ(byte.n_bad, whole->n_bad);
    CHECK_INT_EQ(byte.skipped, whole->skipped);
    for (int i = 0; i < whole->n_frames + whole->n_no_eoi && i < 16; i++)
        CHECK_INT_EQ(byte.len[i], whole->len[i]);
}

static void test_clean(void)
{
    buf s = { .n = 0 };
    size_t one;
    jpeg(&s, 1, 0, 1);
    one = s.n;
    jpeg(&s, 2, 1, 1);          /* with a thumbnail: still one frame */
    jpeg(&s, 3, 0, 1);
    got g;
    both(&s, &g);
    CHECK_INT_EQ(g.n_frames, 3);
    CHECK_INT_EQ(g.n_bad, 0);
    CHECK_INT_EQ(g.skipped, 0);
    CHECK_INT_EQ(g.len[0], one);
    CHECK_INT_EQ(g.first_tag[0], 1);
    CHECK_INT_EQ(g.first_tag[1], 2);
    CHECK_INT_EQ(g.first_tag[2], 3);
    CHECK(g.len[1] > g.len[0] + 40);    /* the thumbnail is inside */
    CHECK_INT_EQ(g.n_end, 1);
}

static void test_garbage(void)
{
    buf s = { .n = 0 };
    put(&s, "junk\xff\xff", 6);         /* before the first frame */
    jpeg(&s, 1, 0, 1);
    put(&s, "\0\0\0\0\xff\xd8", 6);     /* padding, and an SOI with no marker after */
    put(&s, "x", 1);
    jpeg(&s, 2, 0, 1);
    put(&s, "\n", 1);                   /* trailing */
    got g;
    both(&s, &g);
    CHECK_INT_EQ(g.n_frames, 2);
    CHECK_INT_EQ(g.n_bad, 0);
    CHECK_INT_EQ(g.skipped, 6 + 7 + 1);
    CHECK_INT_EQ(g.first_tag[1], 2);
}

static void test_broken(void)
{
    buf s = { .n = 0 };
    jpeg(&s, 1, 0, 1);
    /* A frame whose DQT length is 1: broken, skipped up to the next SOI. */
    size_t at = s.n;
    jpeg(&s, 2, 0, 1);
    s.b[at + 2 + 18 + 2] = 0;
    s.b[at + 2 + 18 + 3] = 1;
    /* A frame with no EOI, ended by the next SOI: passed on. */
    jpeg(&s, 3, 0, 0);
    jpeg(&s, 4, 0, 1);
    /* A frame with a non-marker byte where a marker belongs: SOF's FF,
     * after SOI (2), APP0 (18) and DQT (4 + 65).  (One right after the SOI
     * would make it no SOI at all, just skipped bytes.) */
    at = s.n;
    jpeg(&s, 5, 0, 1);
    s.b[at + 2 + 18 + 4 + 65] = 0x12;
    jpeg(&s, 6, 0, 1);
    /* Cut short at the end. */
    at = s.n;
    jpeg(&s, 7, 0, 1);
    s.n = at + 30;
    got g;
    both(&s, &g);
    CHECK_INT_EQ(g.n_frames, 3);        /* 1, 4, 6 */
    CHECK_INT_EQ(g.n_no_eoi, 1);        /* 3 */
    CHECK_INT_EQ(g.n_bad, 3);           /* 2, 5, 7 */
    CHECK_INT_EQ(g.first_tag[0], 1);
    CHECK_INT_EQ(g.first_tag[1], 3);
    CHECK_INT_EQ(g.first_tag[2], 4);
    CHECK_INT_EQ(g.first_tag[3], 6);
}

static void test_limits(void)
{
    /* A frame beyond max_frame is BAD, and memory stays bounded. */
    buf s = { .n = 0 };
    jpeg(&s, 1, 0, 1);
    nc_mjpeg_split sp;
    nc_mjpeg_split_init(&sp);
    nc_mjpeg_cut c;
    CHECK_INT_EQ(nc_mjpeg_next(&sp, s.b, s.n, 1, 40, &c), NC_MJPEG_BAD);
    /* Empty input at eof is the end; a lone FF needs more. */
    nc_mjpeg_split_init(&sp);
    CHECK_INT_EQ(nc_mjpeg_next(&sp, s.b, 0, 1, 1000, &c), NC_MJPEG_END);
    CHECK_INT_EQ(nc_mjpeg_next(&sp, (const uint8_t *)"\xff", 1, 0, 1000, &c), NC_MJPEG_MORE);
}

static void test_y4m(void)
{
    uint32_t w, h;
    size_t fb;
    char why[200];
    CHECK_INT_EQ(nc_y4m_parse_header("YUV4MPEG2 W640 H480 F30:1 Ip A1:1", &w, &h, &fb, why,
                                     sizeof why), 0);
    CHECK(w == 640 && h == 480 && fb == 640 * 480 * 3 / 2);
    CHECK_INT_EQ(nc_y4m_parse_header("YUV4MPEG2 W641 H481 C420jpeg XYSCSS=420JPEG", &w, &h,
                                     &fb, why, sizeof why), 0);
    CHECK_INT_EQ(fb, 641 * 481 + 2 * 321 * 241);
    CHECK_INT_EQ(nc_y4m_parse_header("YUV4MPEG2 W8 H2 Cmono", &w, &h, &fb, why, sizeof why), 0);
    CHECK_INT_EQ(fb, 16);
    CHECK_INT_EQ(nc_y4m_parse_header("YUV4MPEG2 W8 H2 C422", &w, &h, &fb, why, sizeof why), 0);
    CHECK_INT_EQ(fb, 16 + 2 * 4 * 2);
    CHECK_INT_EQ(nc_y4m_parse_header("YUV4MPEG2 W8 H2 C444", &w, &h, &fb, why, sizeof why), 0);
    CHECK_INT_EQ(fb, 48);
    CHECK_INT_EQ(nc_y4m_parse_header("YUV4MPEG2 W8 H2 C420p10", &w, &h, &fb, why, sizeof why),
                 -EINVAL);
    CHECK(strstr(why, "420p10") != NULL);
    CHECK_INT_EQ(nc_y4m_parse_header("YUV4MPEG2 H2", &w, &h, &fb, why, sizeof why), -EINVAL);
    CHECK_INT_EQ(nc_y4m_parse_header("YUV4MPEG2 W8x H2", &w, &h, &fb, why, sizeof why), -EINVAL);
    CHECK_INT_EQ(nc_y4m_parse_header("YUV4MPEG W8 H2", &w, &h, &fb, why, sizeof why), -EINVAL);
}

/* Read every frame of the source at path; -1 if it would not open. */
static int read_all(const char *path, int *ret_live)
{
    nc_cam_source_opts o = { .path = path };
    nc_cam_source *src;
    char why[256];
    if (nc_cam_source_open(&o, &src, why, sizeof why) < 0) {
        CHECK_MSG(0, "%s: %s", path, why);
        return -1;
    }
    *ret_live = nc_cam_source_live(src);
    CHECK_INT_EQ(nc_cam_source_kind(src), NC_CAM_MJPEG);
    nc_cam_frame f = { 0 };
    atomic_int stop = 0;
    int n = 0, r;
    while ((r = nc_cam_source_next(src, &f, &stop, why, sizeof why)) > 0) {
        CHECK_MSG(!f.bad && f.index == (uint64_t)n, "frame %d: %s", n, f.why);
        n++;
    }
    CHECK_MSG(r == 0, "reading %s: %s", path, why);
    nc_cam_frame_free(&f);
    nc_cam_source_close(src);
    return n;
}

/* A pipe is no live source: what feeds it may be a recording (`cat *.jpg |`),
 * so it is read whole like a file; only a device (or the user, with --live)
 * makes a source live.  Both give every frame. */
static void test_pipe_is_not_live(void)
{
    buf s = { .n = 0 };
    for (int i = 0; i < 8; i++)
        jpeg(&s, (uint8_t)(i + 1), i == 3, 1);
    int p[2];
    REQUIRE(pipe(p) == 0);
    /* 8 skeletons are far below a pipe's 64 KiB: written before reading */
    REQUIRE(write(p[1], s.b, s.n) == (ssize_t)s.n);
    close(p[1]);
    char path[64];
    snprintf(path, sizeof path, "/dev/fd/%d", p[0]);
    int live = -1;
    CHECK_INT_EQ(read_all(path, &live), 8);
    CHECK_MSG(live == 0, "a pipe is live (%d)", live);
    close(p[0]);

    char file[] = "/tmp/nc-camera-unit-XXXXXX";
    int fd = mkstemp(file);
    REQUIRE(fd >= 0);
    CHECK(write(fd, s.b, s.n) == (ssize_t)s.n);
    close(fd);
    live = -1;
    CHECK_INT_EQ(read_all(file, &live), 8);
    CHECK_MSG(live == 0, "a file is live (%d)", live);
    unlink(file);
}

int main(void)
{
    test_clean();
    test_garbage();
    test_broken();
    test_limits();
    test_y4m();
    test_pipe_is_not_live();
    return nc_test_finish();
}

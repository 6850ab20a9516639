/* tests/daemon/test_daemon.c — the real neocogd on loopback.
 *
 * Starts the binary (argv[1]) with a throwaway random-weight CNN, over
 * sockets passed by socket activation, and checks what users rely on:
 * answers equal core's direct answers in every image format; pipelining;
 * 64 concurrent clients; the bad-input suite (each case gets a clear error
 * and the daemon keeps serving); SIGHUP reload with a bad and a good new
 * model; metrics; SIGTERM drain losing nothing; a second instance for the
 * daemon's own Unix socket and a full queue; priority classes on one
 * worker.
 *
 * Over 800 lines on purpose: the cases run against one daemon started once
 * (its start-up dominates), with the client helpers at the top. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dataset.h"
#include "fileio.h"
#include "frame.h"
#include "harness.h"
#include "fixture.h"
#include "test.h"

#define N_DIGITS 40
#define W 28
#define H 28

static const char *bin;
static char dir[256];
static char model_path[300];
static nc_dataset mnist;
static nc_daemon dmn;
static int32_t expect_label[N_DIGITS];
static float expect_scores[N_DIGITS][10];

static const uint8_t *digit(int i)
{
    return mnist.pixels + (size_t)i * W * H;
}

static void expect_from_model(void)
{
    nc_direct d;
    if (nc_direct_open(&d, model_path)) {
        CHECK_MSG(0, "cannot open the model directly");
        return;
    }
    for (int i = 0; i < N_DIGITS; i++)
        CHECK(nc_direct_run(&d, digit(i), W, H, expect_scores[i], &expect_label[i]) == 0);
    nc_direct_close(&d);
}

/* ---- request builders --------------------------------------------------------- */

typedef struct req_buf {
    Neocog__Request rq;
    Neocog__RecognizeRequest rr;
    Neocog__Image im[128];
    Neocog__Image *imp[128];
} req_buf;

static void req_init(req_buf *b, uint64_t id, size_t n)
{
    neocog__request__init(&b->rq);
    neocog__recognize_request__init(&b->rr);
    b->rq.id = id;
    b->rq.kind_case = NEOCOG__REQUEST__KIND_RECOGNIZE;
    b->rq.recognize = &b->rr;
    b->rr.n_images = n;
    b->rr.images = b->imp;
    for (size_t i = 0; i < n; i++) {
        neocog__image__init(&b->im[i]);
        b->imp[i] = &b->im[i];
    }
}

static void set_raw(Neocog__Image *im, const uint8_t *px)
{
    im->format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY;
    im->data.data = (uint8_t *)px;
    im->data.len = W * H;
    im->width = W;
    im->height = H;
}

static int reply_code(const nc_msg *m)
{
    return m ? (int)nc_msg_reply(m)->code : -1;
}

/* Send rq on a fresh connection; expect code and a message containing
 * `text`; then the daemon must still answer a good request elsewhere. */
static void still_serving(const char *after);

static void expect_error(const char *name, const Neocog__Request *rq, int code, const char *text)
{
    int fd = nc_connect_tcp(dmn.port);
    nc_msg *m = fd >= 0 ? nc_roundtrip(fd, rq) : NULL;
    CHECK_MSG(m != NULL, "%s: no reply", name);
    if (m) {
        const Neocog__Reply *r = nc_msg_reply(m);
        CHECK_MSG((int)r->code == code, "%s: code %s, message '%s' (wanted %s)", name,
                  nc_msg_code_name(r->code), r->message, nc_msg_code_name(code));
        CHECK_MSG(r->id == rq->id, "%s: id %llu", name, (unsigned long long)r->id);
        CHECK_MSG(text == NULL || strstr(r->message, text), "%s: message '%s' lacks '%s'",
                  name, r->message, text);
    }
    nc_msg_free(m);
    if (fd >= 0)
        close(fd);
    still_serving(name);
}

static void check_answer(const char *what, const Neocog__Result *res, int i)
{
    CHECK_MSG(res->code == NEOCOG__CODE__OK, "%s %d: %s", what, i, res->message);
    CHECK_MSG(res->label == expect_label[i], "%s %d: label %d, core says %d", what, i,
              res->label, expect_label[i]);
    CHECK_MSG(res->n_scores == 10, "%s %d: %zu scores", what, i, res->n_scores);
    for (size_t k = 0; k < res->n_scores && k < 10; k++)
        CHECK_NEAR(res->scores[k], expect_scores[i][k], 1e-4, 1e-4);
}

static void still_serving(const char *after)
{
    req_buf b;
    req_init(&b, 777, 1);
    set_raw(&b.im[0], digit(3));
    int fd = nc_connect_tcp(dmn.port);
    nc_msg *m = fd >= 0 ? nc_roundtrip(fd, &b.rq) : NULL;
    CHECK_MSG(reply_code(m) == NEOCOG__CODE__OK, "daemon not serving after: %s", after);
    if (reply_code(m) == NEOCOG__CODE__OK)
        check_answer("still serving", nc_msg_reply(m)->recognize->results[0], 3);
    nc_msg_free(m);
    if (fd >= 0)
        close(fd);
}

/* ---- recognitions equal core's, every format --------------------------------- */

static void test_formats(void)
{
    const char *names[] = { "raw", "pgm", "png", "jpeg", "auto-png" };
    for (int f = 0; f < 5; f++) {
        req_buf b;
        req_init(&b, 100 + (uint64_t)f, N_DIGITS);
        b.rr.top_k = 3;
        uint8_t *bufs[N_DIGITS] = { 0 };
        nc_direct d;
        int jpeg = f == 3;
        REQUIRE(!jpeg || nc_direct_open(&d, model_path) == 0);
        float js[N_DIGITS][10];
        int32_t jl[N_DIGITS];
        for (int i = 0; i < N_DIGITS; i++) {
            size_t len = 0;
            Neocog__Image *im = &b.im[i];
            switch (f) {
            case 0: set_raw(im, digit(i)); continue;
            case 1: nc_encode_pgm(digit(i), W, H, &bufs[i], &len);
                    im->format = NEOCOG__IMAGE_FORMAT__FORMAT_PGM; break;
            case 2: nc_encode_png(digit(i), W, H, &bufs[i], &len);
                    im->format = NEOCOG__IMAGE_FORMAT__FORMAT_PNG; break;
            case 3: nc_encode_jpeg(digit(i), W, H, &bufs[i], &len);
                    im->format = NEOCOG__IMAGE_FORMAT__FORMAT_JPEG; break;
            case 4: nc_encode_png(digit(i), W, H, &bufs[i], &len);
                    im->format = NEOCOG__IMAGE_FORMAT__FORMAT_AUTO; break;
            }
            im->data.data = bufs[i];
            im->data.len = len;
            if (jpeg) {
                /* JPEG is lossy: core must see what the daemon decodes. */
                uint8_t px[W * H];
                CHECK(nc_decode_jpeg_gray(bufs[i], len, px, W, H) == 0);
                CHECK(nc_direct_run(&d, px, W, H, js[i], &jl[i]) == 0);
            }
        }
        int fd = nc_connect_tcp(dmn.port);
        nc_msg *m = nc_roundtrip(fd, &b.rq);
        CHECK_MSG(reply_code(m) == NEOCOG__CODE__OK, "format %s: %s", names[f],
                  m ? nc_msg_reply(m)->message : "no reply");
        if (reply_code(m) == NEOCOG__CODE__OK) {
            const Neocog__Reply *r = nc_msg_reply(m);
            CHECK(r->id == 100 + (uint64_t)f);
            CHECK(r->kind_case == NEOCOG__REPLY__KIND_RECOGNIZE);
            CHECK_INT_EQ(r->recognize->n_results, N_DIGITS);
            for (int i = 0; i < N_DIGITS && (size_t)i < r->recognize->n_results; i++) {
                const Neocog__Result *res = r->recognize->results[i];
                if (jpeg) {
                    CHECK_MSG(res->label == jl[i], "jpeg %d: label %d, core %d", i, res->label,
                              jl[i]);
                    for (size_t k = 0; k < res->n_scores && k < 10; k++)
                        CHECK_NEAR(res->scores[k], js[i][k], 1e-4, 1e-4);
                } else {
                    check_answer(names[f], res, i);
                }
                CHECK_INT_EQ(res->n_top, 3);
                if (res->n_top == 3) {
                    CHECK(res->top[0]->label == res->label);
                    CHECK(res->top[0]->score >= res->top[1]->score);
                    CHECK(res->top[1]->score >= res->top[2]->score);
                    CHECK_NEAR(res->confidence, res->top[0]->score, 1e-6, 0);
                }
                char want[4];
                snprintf(want, sizeof want, "%d", res->label);
                CHECK(!strcmp(res->text, want));
            }
            CHECK(r->timing && r->timing->total_us >= r->timing->compute_us);
            CHECK(r->timing && r->timing->forward_us > 0 &&
                  r->timing->prepare_us + r->timing->forward_us == r->timing->compute_us);
        }
        nc_msg_free(m);
        close(fd);
        if (jpeg)
            nc_direct_close(&d);
        for (int i = 0; i < N_DIGITS; i++)
            free(bufs[i]);
    }
    /* Dark ink on paper, said explicitly and left to the border rule. */
    for (int pol = 0; pol < 2; pol++) {
        uint8_t inv[W * H];
        for (int k = 0; k < W * H; k++)
            inv[k] = (uint8_t)(255 - digit(5)[k]);
        req_buf b;
        req_init(&b, 150, 1);
        set_raw(&b.im[0], inv);
        b.im[0].polarity = pol ? NEOCOG__POLARITY__POLARITY_DARK_INK
                               : NEOCOG__POLARITY__POLARITY_AUTO;
        int fd = nc_connect_tcp(dmn.port);
        nc_msg *m = nc_roundtrip(fd, &b.rq);
        CHECK(reply_code(m) == NEOCOG__CODE__OK);
        if (reply_code(m) == NEOCOG__CODE__OK)
            check_answer("inverted", nc_msg_reply(m)->recognize->results[0], 5);
        nc_msg_free(m);
        close(fd);
    }
}

/* Three digits side by side, segmented into a string. */
static void test_segment(void)
{
    enum { SW = 3 * W + 8 };
    static uint8_t line[H * SW];
    memset(line, 0, sizeof line);
    int idx[3] = { 0, 1, 2 };
    for (int k = 0; k < 3; k++)
        for (int y = 0; y < H; y++)
            memcpy(line + (size_t)y * SW + k * (W + 4), digit(idx[k]) + y * W, W);
    req_buf b;
    req_init(&b, 160, 1);
    b.im[0].format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY;
    b.im[0].data.data = line;
    b.im[0].data.len = sizeof line;
    b.im[0].width = SW;
    b.im[0].height = H;
    b.im[0].segment = 1;
    int fd = nc_connect_tcp(dmn.port);
    nc_msg *m = nc_roundtrip(fd, &b.rq);
    CHECK_MSG(reply_code(m) == NEOCOG__CODE__OK, "segment: %s",
              m ? nc_msg_reply(m)->message : "no reply");
    if (reply_code(m) == NEOCOG__CODE__OK) {
        const Neocog__Result *res = nc_msg_reply(m)->recognize->results[0];
        CHECK_INT_EQ(res->n_digits, 3);
        CHECK_INT_EQ(strlen(res->text), res->n_digits);
        for (size_t k = 1; k < res->n_digits; k++)
            CHECK(res->digits[k]->box->x > res->digits[k - 1]->box->x);
    }
    nc_msg_free(m);
    close(fd);
}

/* ---- answers: reasons, thresholds, candidates, lines -------------------------- */

/* One recognition of im with top_k and min_confidence on a fresh
 * connection; NULL when no OK reply with one result came. */
static nc_msg *recognize_one(const Neocog__Image *im, uint32_t top_k, float min_conf)
{
    req_buf b;
    req_init(&b, 180, 1);
    b.im[0] = *im;
    b.rr.top_k = top_k;
    b.rr.min_confidence = min_conf;
    int fd = nc_connect_tcp(dmn.port);
    nc_msg *m = fd >= 0 ? nc_roundtrip(fd, &b.rq) : NULL;
    if (fd >= 0)
        close(fd);
    if (!m || reply_code(m) != NEOCOG__CODE__OK || nc_msg_reply(m)->recognize->n_results != 1) {
        CHECK_MSG(0, "recognize: %s", m ? nc_msg_reply(m)->message : "no reply");
        nc_msg_free(m);
        return NULL;
    }
    return m;
}

/* Whole images: the server's threshold (--reject-threshold 0.05: a random
 * network's best class always has p >= 0.1) is in force by default; a
 * request's tighter one rejects with its reason and threshold and keeps the
 * candidates; no threshold (< 0) accepts; an empty image is no ink; absurd
 * values are refused. */
static void test_answer_whole(void)
{
    Neocog__Image im = NEOCOG__IMAGE__INIT;
    set_raw(&im, digit(5));
    const struct { float min_conf; int reject; float threshold; } cases[] = {
        { 0.0f, 0, 0.05f }, { 1.0f, 1, 1.0f }, { -1.0f, 0, 0.0f }, { 0.01f, 0, 0.01f },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        nc_msg *m = recognize_one(&im, 3, cases[c].min_conf);
        if (!m)
            continue;
        const Neocog__Result *res = nc_msg_reply(m)->recognize->results[0];
        CHECK_MSG(res->reject == cases[c].reject, "min_confidence %g: reject %d",
                  (double)cases[c].min_conf, res->reject);
        CHECK_NEAR(res->threshold, cases[c].threshold, 1e-6, 0);
        CHECK_INT_EQ(res->reject_reason,
                     cases[c].reject ? NEOCOG__REJECT_REASON__REJECT_BELOW_THRESHOLD
                                     : NEOCOG__REJECT_REASON__REJECT_NONE);
        CHECK_INT_EQ(res->label, cases[c].reject ? -1 : expect_label[5]);
        /* the candidates stay, best first, the best being what it nearly said */
        CHECK_INT_EQ(res->n_top, 3);
        if (res->n_top == 3) {
            CHECK(!strcmp(res->text, cases[c].reject ? "?" : res->top[0]->text));
            CHECK_INT_EQ(res->top[0]->label, expect_label[5]);
            CHECK_NEAR(res->top[0]->score, res->confidence, 1e-6, 0);
            CHECK(res->top[0]->score >= res->top[1]->score &&
                  res->top[1]->score >= res->top[2]->score);
        }
        nc_msg_free(m);
    }
    static const uint8_t blank[W * H];
    set_raw(&im, blank);
    nc_msg *m = recognize_one(&im, 0, 0.0f);
    if (m) {
        const Neocog__Result *res = nc_msg_reply(m)->recognize->results[0];
        CHECK(res->reject && res->label == -1);
        CHECK_INT_EQ(res->reject_reason, NEOCOG__REJECT_REASON__REJECT_NO_INK);
        nc_msg_free(m);
    }
    req_buf b;
    req_init(&b, 181, 1);
    set_raw(&b.im[0], digit(0));
    b.rr.min_confidence = 1.5f;
    expect_error("min_confidence above 1", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT,
                 "min_confidence");
    b.rr.min_confidence = nanf("");
    expect_error("min_confidence NaN", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT,
                 "min_confidence");
}

/* Two lines of digits in one frame: the text has a newline between them,
 * each Digit its line; top_k gives each digit its candidates; a tight
 * min_confidence rejects each digit with a reason and the threshold; a
 * frame without ink is rejected as no ink. */
enum { FW = 3 * (W + 4) + 24, FH = 2 * H + 32 };
static void two_lines(uint8_t *frame)
{
    memset(frame, 0, (size_t)FW * FH);
    /* 0 1 2 on the top line, 3 4 below */
    for (int k = 0; k < 5; k++) {
        const int x0 = 12 + (k % 3) * (W + 4), y0 = k < 3 ? 8 : H + 24;
        for (int y = 0; y < H; y++)
            memcpy(frame + (size_t)(y0 + y) * FW + x0, digit(k) + y * W, W);
    }
}

static void test_answer_lines(void)
{
    static uint8_t frame[FW * FH];
    two_lines(frame);
    Neocog__Image im = NEOCOG__IMAGE__INIT;
    im.format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY;
    im.data.data = frame;
    im.data.len = sizeof frame;
    im.width = FW;
    im.height = FH;
    im.segment = 1;
    im.polarity = NEOCOG__POLARITY__POLARITY_LIGHT_INK;
    nc_msg *m = recognize_one(&im, 3, -1.0f);
    if (m) {
        const Neocog__Result *res = nc_msg_reply(m)->recognize->results[0];
        CHECK_INT_EQ(res->n_digits, 5);
        CHECK_MSG(strlen(res->text) == 6 && res->text[3] == '\n', "two lines: text '%s'",
                  res->text);
        for (size_t k = 0; k < res->n_digits; k++) {
            const Neocog__Digit *d = res->digits[k];
            CHECK_INT_EQ(d->line, k < 3 ? 0 : 1);
            CHECK(!d->reject && d->reject_reason == NEOCOG__REJECT_REASON__REJECT_NONE);
            CHECK(d->threshold == 0.0f);
            CHECK_INT_EQ(d->n_top, 3);
            if (d->n_top == 3) {
                CHECK_INT_EQ(d->top[0]->label, d->label);
                CHECK(!strcmp(d->top[0]->text, d->text));
                CHECK_NEAR(d->top[0]->score, d->confidence, 1e-6, 0);
                CHECK(d->top[1]->score <= d->top[0]->score &&
                      d->top[2]->score <= d->top[1]->score);
            }
        }
        CHECK(!res->reject && res->reject_reason == NEOCOG__REJECT_REASON__REJECT_NONE);
        nc_msg_free(m);
    }
    /* without top_k the digits carry no candidates (a camera's replies stay small) */
    m = recognize_one(&im, 0, 0.0f);
    if (m) {
        const Neocog__Result *res = nc_msg_reply(m)->recognize->results[0];
        for (size_t k = 0; k < res->n_digits; k++)
            CHECK_INT_EQ(res->digits[k]->n_top, 0);
        CHECK_NEAR(res->threshold, 0.05, 1e-6, 0);
        nc_msg_free(m);
    }
    m = recognize_one(&im, 0, 1.0f);
    if (m) {
        const Neocog__Result *res = nc_msg_reply(m)->recognize->results[0];
        CHECK_INT_EQ(res->n_digits, 5);
        CHECK_MSG(!strcmp(res->text, "???\n??"), "all rejected: text '%s'", res->text);
        for (size_t k = 0; k < res->n_digits; k++) {
            const Neocog__Digit *d = res->digits[k];
            CHECK(d->reject && d->label == -1 && !strcmp(d->text, "?"));
            CHECK_MSG(d->reject_reason == NEOCOG__REJECT_REASON__REJECT_BELOW_THRESHOLD ||
                      d->reject_reason == NEOCOG__REJECT_REASON__REJECT_AMBIGUOUS_SEGMENTATION,
                      "digit %zu: reason %d", k, d->reject_reason);
            CHECK(d->threshold == 1.0f);
            CHECK(d->confidence > 0.0f);     /* what it nearly said stays */
        }
        CHECK(res->reject && res->n_digits &&
              res->reject_reason == res->digits[0]->reject_reason);
        nc_msg_free(m);
    }
    memset(frame, 0, sizeof frame);
    m = recognize_one(&im, 0, 0.0f);
    if (m) {
        const Neocog__Result *res = nc_msg_reply(m)->recognize->results[0];
        CHECK_INT_EQ(res->n_digits, 0);
        CHECK(res->reject && res->reject_reason == NEOCOG__REJECT_REASON__REJECT_NO_INK);
        CHECK_NEAR(res->threshold, 0.05, 1e-6, 0);
        nc_msg_free(m);
    }
}

/* Image.roi and Image.expected_digits on the three-digit line: the ROI
 * limits the segmentation (boxes stay in image coordinates), the count is
 * fitted, and absurd values are refused with INVALID_ARGUMENT. */
static nc_msg *segment_line(const uint8_t *line, uint32_t sw, const Neocog__Box *roi,
                            uint32_t expected, int pgm)
{
    static uint8_t pgm_buf[64 + H * (3 * W + 8)];
    req_buf b;
    req_init(&b, 170, 1);
    Neocog__Image *im = &b.im[0];
    if (pgm) {
        int n = snprintf((char *)pgm_buf, 64, "P5\n%u %u\n255\n", sw, H);
        memcpy(pgm_buf + n, line, (size_t)sw * H);
        im->format = NEOCOG__IMAGE_FORMAT__FORMAT_PGM;
        im->data.data = pgm_buf;
        im->data.len = (size_t)n + (size_t)sw * H;
    } else {
        im->format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY;
        im->data.data = (uint8_t *)line;
        im->data.len = (size_t)sw * H;
        im->width = sw;
        im->height = H;
    }
    im->segment = 1;
    im->roi = (Neocog__Box *)roi;
    im->expected_digits = expected;
    int fd = nc_connect_tcp(dmn.port);
    nc_msg *m = fd >= 0 ? nc_roundtrip(fd, &b.rq) : NULL;
    if (fd >= 0)
        close(fd);
    return m;
}

static const Neocog__Result *first_result(const nc_msg *m)
{
    if (reply_code(m) != NEOCOG__CODE__OK || !nc_msg_reply(m)->recognize ||
        nc_msg_reply(m)->recognize->n_results != 1)
        return NULL;
    return nc_msg_reply(m)->recognize->results[0];
}

static void test_segment_hints(void)
{
    enum { SW = 3 * W + 8 };
    static uint8_t line[H * SW];
    memset(line, 0, sizeof line);
    for (int k = 0; k < 3; k++)
        for (int y = 0; y < H; y++)
            memcpy(line + (size_t)y * SW + k * (W + 4), digit(k) + y * W, W);

    /* ROI over the last two digits: two digits, right of the ROI's edge */
    Neocog__Box roi = NEOCOG__BOX__INIT;
    roi.x = W + 2;
    roi.y = 0;
    roi.width = SW - (W + 2);
    roi.height = H;
    for (int pgm = 0; pgm < 2; pgm++) {
        nc_msg *m = segment_line(line, SW, &roi, 0, pgm);
        const Neocog__Result *res = first_result(m);
        CHECK_MSG(res && res->code == NEOCOG__CODE__OK, "roi (%s): %s", pgm ? "pgm" : "raw",
                  res ? res->message : m ? nc_msg_reply(m)->message : "no reply");
        if (res && res->code == NEOCOG__CODE__OK) {
            CHECK_INT_EQ(res->n_digits, 2);
            for (size_t k = 0; k < res->n_digits; k++)
                CHECK_MSG(res->digits[k]->box->x >= roi.x, "roi: digit %zu at x %u", k,
                          res->digits[k]->box->x);
        }
        nc_msg_free(m);
    }
    /* expected_digits: 2 joins a pair, 4 cuts the widest digit */
    for (uint32_t want = 2; want <= 4; want += 2) {
        nc_msg *m = segment_line(line, SW, NULL, want, 0);
        const Neocog__Result *res = first_result(m);
        CHECK_MSG(res && res->code == NEOCOG__CODE__OK, "expected_digits %u", want);
        if (res)
            CHECK_MSG(res->n_digits == want, "expected_digits %u: got %zu", want,
                      res->n_digits);
        nc_msg_free(m);
    }
    /* an ROI outside an encoded image is found after decoding; the only
     * image failing, the reply says so */
    Neocog__Box out = roi;
    out.x = SW - 10;
    out.width = 20;
    nc_msg *m = segment_line(line, SW, &out, 0, 1);
    const Neocog__Reply *rp = m ? nc_msg_reply(m) : NULL;
    CHECK_MSG(rp && rp->code == NEOCOG__CODE__INVALID_ARGUMENT && rp->message &&
              strstr(rp->message, "outside"), "roi outside a PGM: %s %s",
              rp ? nc_msg_code_name(rp->code) : "no reply", rp ? rp->message : "");
    nc_msg_free(m);

    /* refused before queuing */
    struct { const char *name; uint32_t x, y, w, h; int has_roi, segment; uint32_t count;
             const char *text; } bad[] = {
        { "expected_digits over the limit", 0, 0, 0, 0, 0, 1, 65, "expected_digits 65" },
        { "expected_digits without segment", 0, 0, 0, 0, 0, 0, 3, "segment" },
        { "roi without segment", 0, 0, W, H, 1, 0, 0, "segment" },
        { "empty roi", 0, 0, 0, H, 1, 1, 0, "too small" },
        { "tiny roi", 0, 0, 7, 7, 1, 1, 0, "too small" },
        { "roi past the raw image", W, 0, SW, H, 1, 1, 0, "outside" },
        { "roi past any image", 4000000000u, 0, 500000000u, 100, 1, 1, 0, "reaches past" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        req_buf b;
        req_init(&b, 180 + i, 1);
        b.im[0].format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY;
        b.im[0].data.data = line;
        b.im[0].data.len = sizeof line;
        b.im[0].width = SW;
        b.im[0].height = H;
        b.im[0].segment = bad[i].segment;
        b.im[0].expected_digits = bad[i].count;
        Neocog__Box r = NEOCOG__BOX__INIT;
        r.x = bad[i].x;
        r.y = bad[i].y;
        r.width = bad[i].w;
        r.height = bad[i].h;
        if (bad[i].has_roi)
            b.im[0].roi = &r;
        expect_error(bad[i].name, &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, bad[i].text);
    }
}

/* ---- pipelining ----------------------------------------------------------------- */

typedef struct pipe_job {
    int fd, n;
    uint64_t id0;
    int failed;
} pipe_job;

static void *pipe_writer(void *arg)
{
    pipe_job *j = arg;
    for (int i = 0; i < j->n && !j->failed; i++) {
        req_buf b;
        req_init(&b, j->id0 + (uint64_t)i, 1);
        set_raw(&b.im[0], digit(i % N_DIGITS));
        if (nc_send_msg(j->fd, &b.rq.base))
            j->failed = 1;
    }
    return NULL;
}

/* Pipeline n requests on one connection (a writer thread, so neither side
 * can deadlock on full buffers); after `signal_after` sent, send sig to
 * the daemon.  Every request must come back exactly once, OK and right. */
static void pipeline(const char *name, int n, int sig, int *ret_ok)
{
    int fd = nc_connect_tcp(dmn.port);
    REQUIRE(fd >= 0);
    pipe_job j = { fd, n, 10000, 0 };
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, pipe_writer, &j) == 0);
    int joined = 0;
    if (sig == SIGTERM) {
        /* Drain answers every request the daemon has received and closes a
         * connection once it is idle; a request the client has not written
         * yet is not in flight.  So signal only after the last request is
         * written (most are still queued then): a slow writer on a loaded
         * machine must not turn into a test failure. */
        pthread_join(th, NULL);
        joined = 1;
        kill(dmn.pid, sig);
    } else if (sig) {
        struct timespec ts = { 0, 2000000 };
        nanosleep(&ts, NULL);
        kill(dmn.pid, sig);
    }
    char *seen = calloc((size_t)n, 1);
    int ok = 0, wrong = 0;
    for (int i = 0; i < n; i++) {
        nc_msg *m = NULL;
        int err = nc_recv_reply(fd, 30000, &m);
        if (err) {
            CHECK_MSG(0, "%s: reply %d of %d: %s", name, i, n, nc_frame_strerror(err));
            break;
        }
        const Neocog__Reply *r = nc_msg_reply(m);
        uint64_t k = r->id - 10000;
        if (k < (uint64_t)n && !seen[k] && r->code == NEOCOG__CODE__OK) {
            seen[k] = 1;
            const Neocog__Result *res = r->recognize->results[0];
            if (res->label == expect_label[k % N_DIGITS])
                ok++;
            else
                wrong++;
        } else {
            CHECK_MSG(0, "%s: id %llu code %s '%s'", name, (unsigned long long)r->id,
                      nc_msg_code_name(r->code), r->message);
        }
        nc_msg_free(m);
    }
    if (!joined)
        pthread_join(th, NULL);
    CHECK_MSG(!j.failed, "%s: writer failed", name);
    CHECK_MSG(ok == n && wrong == 0, "%s: %d of %d right, %d wrong", name, ok, n, wrong);
    free(seen);
    close(fd);
    if (ret_ok)
        *ret_ok = ok;
}

/* ---- 64 concurrent clients --------------------------------------------------------- */

static void *client_main(void *arg)
{
    int *failures = arg, c = failures[1];
    int fd = nc_connect_tcp(dmn.port);
    if (fd < 0) {
        failures[0]++;
        return NULL;
    }
    for (int i = 0; i < 10; i++) {
        int k = (c + i) % N_DIGITS;
        req_buf b;
        req_init(&b, (uint64_t)c * 1000 + (uint64_t)i, 1);
        set_raw(&b.im[0], digit(k));
        nc_msg *m = nc_roundtrip(fd, &b.rq);
        if (reply_code(m) != NEOCOG__CODE__OK || nc_msg_reply(m)->id != b.rq.id ||
            nc_msg_reply(m)->recognize->results[0]->label != expect_label[k])
            failures[0]++;
        nc_msg_free(m);
    }
    close(fd);
    return NULL;
}

static void test_concurrent(void)
{
    pthread_t th[64];
    int state[64][2];
    for (int c = 0; c < 64; c++) {
        state[c][0] = 0;
        state[c][1] = c;
        CHECK(pthread_create(&th[c], NULL, client_main, state[c]) == 0);
    }
    int failures = 0;
    for (int c = 0; c < 64; c++) {
        pthread_join(th[c], NULL);
        failures += state[c][0];
    }
    CHECK_MSG(failures == 0, "64 clients: %d failed requests", failures);
}

/* ---- bad input ------------------------------------------------------------------------ */

/* Raw bytes on a fresh connection: expect one error reply (id 0) with
 * code and text, then the daemon closes. */
static void expect_frame_error(const char *name, const void *bytes, size_t len, int code,
                               const char *text)
{
    int fd = nc_connect_tcp(dmn.port);
    REQUIRE(fd >= 0);
    CHECK(nc_send_all(fd, bytes, len) == 0);
    nc_msg *m = NULL;
    int err = nc_recv_reply(fd, 10000, &m);
    CHECK_MSG(err == 0, "%s: no error reply (%d)", name, err);
    if (!err) {
        const Neocog__Reply *r = nc_msg_reply(m);
        CHECK_MSG((int)r->code == code && strstr(r->message, text),
                  "%s: %s '%s'", name, nc_msg_code_name(r->code), r->message);
    }
    CHECK_MSG(nc_wait_eof(fd, 5000), "%s: connection not closed", name);
    nc_msg_free(m);
    close(fd);
    still_serving(name);
}

static void frame_of(uint8_t *out, uint32_t len)
{
    nc_frame_header_write(out, len);
}

static void test_bad_frames(void)
{
    static const char http[] = "GET / HTTP/1.0\r\n\r\n";
    expect_frame_error("garbage", http, sizeof http - 1, NEOCOG__CODE__INVALID_ARGUMENT,
                       "magic");
    uint8_t h[NC_FRAME_HEADER_LEN + 4];
    frame_of(h, 4);
    h[3] = 'X';
    expect_frame_error("wrong magic", h, sizeof h, NEOCOG__CODE__INVALID_ARGUMENT, "magic");
    frame_of(h, 4);
    h[4] = 9;
    expect_frame_error("wrong version", h, sizeof h, NEOCOG__CODE__INVALID_ARGUMENT, "version");
    frame_of(h, 4);
    h[5] = 1;
    expect_frame_error("flags", h, sizeof h, NEOCOG__CODE__INVALID_ARGUMENT, "flag");
    frame_of(h, 0x7fffffffu);
    expect_frame_error("oversized", h, NC_FRAME_HEADER_LEN, NEOCOG__CODE__RESOURCE_EXHAUSTED,
                       "limit");

    /* Truncated frame, then disconnect. */
    {
        req_buf b;
        req_init(&b, 5, 1);
        set_raw(&b.im[0], digit(0));
        uint8_t *buf;
        size_t len;
        REQUIRE(nc_msg_frame(&b.rq.base, 0, &buf, &len) == 0);
        int fd = nc_connect_tcp(dmn.port);
        CHECK(nc_send_all(fd, buf, len / 2) == 0);
        close(fd);
        free(buf);
        still_serving("truncated frame then disconnect");
    }
    /* A valid frame whose payload is not a Request: error, connection kept. */
    {
        uint8_t bad[NC_FRAME_HEADER_LEN + 6] = { 0 };
        frame_of(bad, 6);
        memcpy(bad + NC_FRAME_HEADER_LEN, "\xff\xff\xff\xff\xff\xff", 6);
        int fd = nc_connect_tcp(dmn.port);
        CHECK(nc_send_all(fd, bad, sizeof bad) == 0);
        nc_msg *m = NULL;
        CHECK(nc_recv_reply(fd, 10000, &m) == 0);
        CHECK_MSG(reply_code(m) == NEOCOG__CODE__INVALID_ARGUMENT, "bad protobuf: %d",
                  reply_code(m));
        nc_msg_free(m);
        req_buf b;
        req_init(&b, 6, 1);
        set_raw(&b.im[0], digit(1));
        m = nc_roundtrip(fd, &b.rq);
        CHECK_MSG(reply_code(m) == NEOCOG__CODE__OK, "connection unusable after bad protobuf");
        nc_msg_free(m);
        close(fd);
    }
    /* Slow client: one byte at a time; answered normally. */
    {
        req_buf b;
        req_init(&b, 7, 1);
        set_raw(&b.im[0], digit(2));
        uint8_t *buf;
        size_t len;
        REQUIRE(nc_msg_frame(&b.rq.base, 0, &buf, &len) == 0);
        int fd = nc_connect_tcp(dmn.port);
        for (size_t i = 0; i < len; i++) {
            CHECK(nc_send_all(fd, buf + i, 1) == 0);
            struct timespec ts = { 0, 100000 };
            nanosleep(&ts, NULL);
        }
        nc_msg *m = NULL;
        CHECK(nc_recv_reply(fd, 10000, &m) == 0);
        CHECK(reply_code(m) == NEOCOG__CODE__OK);
        if (reply_code(m) == NEOCOG__CODE__OK)
            check_answer("slow client", nc_msg_reply(m)->recognize->results[0], 2);
        nc_msg_free(m);
        free(buf);
        close(fd);
    }
    /* A frame that stalls: DEADLINE_EXCEEDED after frame_timeout_ms (1 s here). */
    {
        uint8_t part[5];
        frame_of(h, 100);
        memcpy(part, h, sizeof part);
        expect_frame_error("stalled frame", part, sizeof part, NEOCOG__CODE__DEADLINE_EXCEEDED,
                           "within");
    }
}

static void test_bad_requests(void)
{
    uint8_t *png, *jpeg;
    size_t png_len, jpeg_len;
    REQUIRE(nc_encode_png(digit(0), W, H, &png, &png_len) == 0);
    REQUIRE(nc_encode_jpeg(digit(0), W, H, &jpeg, &jpeg_len) == 0);
    req_buf b;

    /* corrupt JPEG: scramble the entropy-coded data */
    uint8_t *bad = malloc(jpeg_len > png_len ? jpeg_len : png_len);
    REQUIRE(bad != NULL);
    memcpy(bad, jpeg, jpeg_len);
    for (size_t i = jpeg_len / 3; i < jpeg_len - 2; i++)
        bad[i] = (uint8_t)(i * 7);
    req_init(&b, 20, 1);
    b.im[0].format = NEOCOG__IMAGE_FORMAT__FORMAT_JPEG;
    b.im[0].data.data = bad;
    b.im[0].data.len = jpeg_len;
    expect_error("corrupt jpeg", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "JPEG");
    b.im[0].data.data = jpeg;
    b.im[0].data.len = jpeg_len / 2;
    expect_error("truncated jpeg", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "JPEG");
    b.im[0].data.len = 3;
    expect_error("3-byte jpeg", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "JPEG");

    /* corrupt PNG: flip a byte inside IDAT (CRC mismatch) */
    memcpy(bad, png, png_len);
    bad[png_len - 20] ^= 0x55;
    b.im[0].format = NEOCOG__IMAGE_FORMAT__FORMAT_PNG;
    b.im[0].data.data = bad;
    b.im[0].data.len = png_len;
    expect_error("corrupt png", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "PNG");
    b.im[0].data.data = png;
    b.im[0].data.len = png_len / 2;
    expect_error("truncated png", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "PNG");
    /* huge dimensions in the PNG header (IHDR width at offset 16, CRC fixed) */
    memcpy(bad, png, png_len);
    bad[16] = 0x00; bad[17] = 0x01; bad[18] = 0x86; bad[19] = 0xa0;   /* 100000 */
    uint32_t crc = nc_crc32(bad + 12, 17);
    bad[29] = (uint8_t)(crc >> 24); bad[30] = (uint8_t)(crc >> 16);
    bad[31] = (uint8_t)(crc >> 8); bad[32] = (uint8_t)crc;
    b.im[0].data.data = bad;
    b.im[0].data.len = png_len;
    expect_error("huge png", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, NULL);

    /* PGM with absurd dimensions, and a truncated one */
    static const char pgm_huge[] = "P5\n100000 100000\n255\n\0\0\0";
    b.im[0].format = NEOCOG__IMAGE_FORMAT__FORMAT_PGM;
    b.im[0].data.data = (uint8_t *)pgm_huge;
    b.im[0].data.len = sizeof pgm_huge - 1;
    expect_error("huge pgm", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "limit");
    static const char pgm_short[] = "P5 28 28 255\n\1\2\3";
    b.im[0].data.data = (uint8_t *)pgm_short;
    b.im[0].data.len = sizeof pgm_short - 1;
    expect_error("truncated pgm", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "truncated");

    /* raw: zero, huge, mismatched */
    set_raw(&b.im[0], digit(0));
    b.im[0].width = 0;
    expect_error("zero width", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "width and height");
    b.im[0].width = 100000;
    b.im[0].height = 100000;
    expect_error("huge raw", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "limit");
    set_raw(&b.im[0], digit(0));
    b.im[0].data.len = 700;
    expect_error("pixel count", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "width x height");
    b.im[0].data.len = 0;
    expect_error("empty image", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "no data");
    /* unrecognised bytes with AUTO format */
    set_raw(&b.im[0], digit(0));
    b.im[0].format = NEOCOG__IMAGE_FORMAT__FORMAT_AUTO;
    expect_error("unknown bytes", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "format");
    b.im[0].format = 42;
    expect_error("unknown format", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "format");

    /* a bad image among good ones: per-image codes, request fails */
    req_init(&b, 21, 3);
    set_raw(&b.im[0], digit(0));
    set_raw(&b.im[2], digit(2));
    b.im[1].format = NEOCOG__IMAGE_FORMAT__FORMAT_JPEG;
    b.im[1].data.data = jpeg;
    b.im[1].data.len = jpeg_len / 2;
    {
        int fd = nc_connect_tcp(dmn.port);
        nc_msg *m = nc_roundtrip(fd, &b.rq);
        CHECK(reply_code(m) == NEOCOG__CODE__INVALID_ARGUMENT);
        if (m && nc_msg_reply(m)->recognize && nc_msg_reply(m)->recognize->n_results == 3) {
            const Neocog__RecognizeReply *rr = nc_msg_reply(m)->recognize;
            CHECK(strstr(nc_msg_reply(m)->message, "image 1") != NULL);
            check_answer("mixed 0", rr->results[0], 0);
            CHECK(rr->results[1]->code == NEOCOG__CODE__INVALID_ARGUMENT);
            check_answer("mixed 2", rr->results[2], 2);
        } else {
            CHECK_MSG(0, "mixed request: no per-image results");
        }
        nc_msg_free(m);
        close(fd);
    }

    /* too many images, none, unknown model, absent model, expired deadline */
    req_init(&b, 22, 65);
    for (int i = 0; i < 65; i++)
        set_raw(&b.im[i], digit(0));
    expect_error("too many images", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "too many images");
    req_init(&b, 23, 0);
    expect_error("no images", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "no images");
    req_init(&b, 24, 1);
    set_raw(&b.im[0], digit(0));
    b.rr.model = 9;
    expect_error("unknown model", &b.rq, NEOCOG__CODE__INVALID_ARGUMENT, "unknown model");
    b.rr.model = NEOCOG__MODEL__MODEL_NEOCOGNITRON;
    expect_error("absent model", &b.rq, NEOCOG__CODE__UNAVAILABLE, "not loaded");
    b.rr.model = NEOCOG__MODEL__MODEL_ENSEMBLE;
    expect_error("ensemble without neocognitron", &b.rq, NEOCOG__CODE__UNAVAILABLE, "not loaded");
    b.rr.model = NEOCOG__MODEL__MODEL_CNN;
    b.rq.deadline_us = 1;
    expect_error("expired deadline", &b.rq, NEOCOG__CODE__DEADLINE_EXCEEDED, "deadline");
    /* a request with no kind */
    Neocog__Request empty = NEOCOG__REQUEST__INIT;
    empty.id = 25;
    expect_error("empty request", &empty, NEOCOG__CODE__UNIMPLEMENTED, "kind");
    free(bad);
    free(png);
    free(jpeg);
}

/* ---- status, health, model info, metrics --------------------------------------------------- */

/* A status request on a fresh connection fd (closed here); NULL if fd < 0. */
static nc_msg *status_on(int fd)
{
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    Neocog__StatusRequest sr = NEOCOG__STATUS_REQUEST__INIT;
    rq.id = 30;
    rq.kind_case = NEOCOG__REQUEST__KIND_STATUS;
    rq.status = &sr;
    nc_msg *m = fd >= 0 ? nc_roundtrip(fd, &rq) : NULL;
    if (fd >= 0)
        close(fd);
    return m;
}

static nc_msg *status_of(void)
{
    return status_on(nc_connect_tcp(dmn.port));
}

/* Connections as the status asked on fd reports them (the asking one
 * included); 99 when there is no answer. */
static uint32_t conns_on(int fd)
{
    nc_msg *m = status_on(fd);
    uint32_t n = m && nc_msg_reply(m)->status ? nc_msg_reply(m)->status->connections : 99;
    nc_msg_free(m);
    return n;
}

static void test_info(void)
{
    nc_msg *m = status_of();
    CHECK(reply_code(m) == NEOCOG__CODE__OK);
    if (reply_code(m) == NEOCOG__CODE__OK) {
        const Neocog__StatusReply *st = nc_msg_reply(m)->status;
        CHECK(st && st->health && st->health->ready && !st->health->draining);
        CHECK(st && st->n_models == 2 && st->models[0]->loaded && !st->models[1]->loaded);
        CHECK(st && st->requests_total > 0 && st->images_total > 0);
        CHECK(st && strstr(st->models[0]->architecture, "6C4") != NULL);
        CHECK(st && st->workers == 2 && st->priority_workers == 1);   /* --workers 2, default */
        /* --reject-threshold 0.05 over a model without a stored one */
        CHECK(st && st->n_models == 2 && fabsf(st->models[0]->reject_threshold - 0.05f) < 1e-6f);
    }
    nc_msg_free(m);
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    Neocog__HealthRequest hr = NEOCOG__HEALTH_REQUEST__INIT;
    rq.id = 31;
    rq.kind_case = NEOCOG__REQUEST__KIND_HEALTH;
    rq.health = &hr;
    int fd = nc_connect_tcp(dmn.port);
    m = nc_roundtrip(fd, &rq);
    CHECK(reply_code(m) == NEOCOG__CODE__OK && nc_msg_reply(m)->health &&
          nc_msg_reply(m)->health->ready);
    nc_msg_free(m);
    Neocog__ModelInfoRequest mr = NEOCOG__MODEL_INFO_REQUEST__INIT;
    rq.id = 32;
    rq.kind_case = NEOCOG__REQUEST__KIND_MODEL_INFO;
    rq.model_info = &mr;
    m = nc_roundtrip(fd, &rq);
    CHECK(reply_code(m) == NEOCOG__CODE__OK && nc_msg_reply(m)->model_info &&
          nc_msg_reply(m)->model_info->n_models == 2 &&
          nc_msg_reply(m)->model_info->models[0]->n_labels == 10);
    nc_msg_free(m);
    close(fd);

    char *text = nc_http_get(dmn.http_port, "/metrics");
    CHECK(text && strstr(text, "200 OK"));
    CHECK(text && strstr(text, "neocogd_requests_total{code=\"OK\"}"));
    CHECK(text && strstr(text, "neocogd_request_seconds_bucket{le=\"+Inf\"}"));
    CHECK(text && strstr(text, "neocogd_queue_depth"));
    CHECK(text && strstr(text, "\nneocogd_workers 2\n"));
    CHECK(text && strstr(text, "\nneocogd_priority_workers 1\n"));
    free(text);
    text = nc_http_get(dmn.http_port, "/readyz");
    CHECK(text && strstr(text, "200 OK"));
    free(text);
    text = nc_http_get(dmn.http_port, "/healthz");
    CHECK(text && strstr(text, "200 OK"));
    free(text);
}

/* ---- reload ---------------------------------------------------------------------------------- */

static int wait_reload(const char *prefix)
{
    for (int i = 0; i < 600; i++) {
        nc_msg *m = status_of();
        int done = m && nc_msg_reply(m)->status &&
                   !strncmp(nc_msg_reply(m)->status->last_reload, prefix, strlen(prefix));
        nc_msg_free(m);
        if (done)
            return 1;
        struct timespec ts = { 0, 20000000 };
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void test_reload(void)
{
    /* Reloads while requests stream: nothing lost. */
    int fd = nc_connect_tcp(dmn.port);
    pipe_job j = { fd, 300, 10000, 0 };
    pthread_t th;
    REQUIRE(fd >= 0 && pthread_create(&th, NULL, pipe_writer, &j) == 0);
    nc_daemon_drain_notify(&dmn);
    kill(dmn.pid, SIGHUP);
    int ok = 0;
    for (int i = 0; i < 300; i++) {
        nc_msg *m = NULL;
        if (nc_recv_reply(fd, 30000, &m))
            break;
        if (i == 100)
            kill(dmn.pid, SIGHUP);
        ok += reply_code(m) == NEOCOG__CODE__OK;
        nc_msg_free(m);
    }
    pthread_join(th, NULL);
    close(fd);
    CHECK_MSG(ok == 300, "reload under load: %d of 300 OK", ok);
    CHECK(wait_reload("ok"));
    CHECK(nc_daemon_wait_notify(&dmn, "READY=1", 10000) == 0);

    /* A corrupt new model: the old one keeps serving, and status says why. */
    CHECK(nc_write_file(model_path, "NCMODEL\0garbage", 15) == 0);
    kill(dmn.pid, SIGHUP);
    CHECK_MSG(wait_reload("partly failed"), "bad model reload not reported");
    nc_msg *m = status_of();
    if (m && nc_msg_reply(m)->status) {
        const Neocog__StatusReply *st = nc_msg_reply(m)->status;
        CHECK(st->models[0]->loaded);
        CHECK_MSG(strlen(st->models[0]->error) > 0, "no error for the bad model");
    }
    nc_msg_free(m);
    still_serving("bad model reload");

    /* A good new model replaces the old one. */
    CHECK(nc_make_cnn_model(model_path, 99) == 0);
    kill(dmn.pid, SIGHUP);
    CHECK(wait_reload("ok"));
    expect_from_model();
    still_serving("good model reload");

    /* A batch-normalised net (a training checkpoint's, core/cnn/cnn.h): refused,
       saying so, and the old model keeps serving (after an "ok" reload, so
       that "partly failed" is this reload's). */
    CHECK(nc_make_cnn_model_arch(model_path, 98, "1x29x29-6C4bn-MP2-10N") == 0);
    kill(dmn.pid, SIGHUP);
    CHECK_MSG(wait_reload("partly failed"), "batch-normalised model reload not reported");
    m = status_of();
    if (m && nc_msg_reply(m)->status) {
        const Neocog__StatusReply *st = nc_msg_reply(m)->status;
        CHECK(st->models[0]->loaded);
        CHECK_MSG(strstr(st->models[0]->error, "batch-normalised") != NULL,
                  "error for the batch-normalised model: %s", st->models[0]->error);
    }
    nc_msg_free(m);
    still_serving("batch-normalised model reload");

    /* Back to seed 99's model, stored gzip'd as a whole this time (as
       models/neocognitron.ncm is): inflated and served like the plain file.
       The "ok" follows the "partly failed" above, so it is this reload's. */
    CHECK(nc_make_cnn_model(model_path, 99) == 0);
    char cmd[4 * sizeof model_path + 64];
    snprintf(cmd, sizeof cmd, "gzip -n -c '%s' > '%s.gz' && mv '%s.gz' '%s'", model_path,
             model_path, model_path, model_path);
    CHECK_MSG(system(cmd) == 0, "%s failed", cmd);
    kill(dmn.pid, SIGHUP);
    CHECK_MSG(wait_reload("ok"), "gzip'd model reload not ok");
    expect_from_model();
    still_serving("gzip'd model reload");
}

/* ---- a second instance: own Unix socket, tiny queue ---------------------------------------- */

static void test_unix_and_queue(void)
{
    char sock[300];
    snprintf(sock, sizeof sock, "%s/d.sock", dir);
    const char *args[] = { "--cnn-model", model_path, "--listen-tcp", "none",
                           "--listen-unix", sock, "--http", "none", "--workers", "1",
                           "--queue-capacity", "4", "--max-images-per-request", "4",
                           "--models", dir, "--log-level", "4", NULL };
    nc_daemon d2;
    REQUIRE(nc_daemon_start(&d2, bin, dir, 0, args) == 0);
    struct stat st;
    CHECK(stat(sock, &st) == 0 && (st.st_mode & 0777) == 0660);
    int fd = nc_connect_unix(sock);
    CHECK(fd >= 0);
    req_buf b;
    req_init(&b, 40, 1);
    set_raw(&b.im[0], digit(4));
    nc_msg *m = nc_roundtrip(fd, &b.rq);
    CHECK(reply_code(m) == NEOCOG__CODE__OK);
    if (reply_code(m) == NEOCOG__CODE__OK)
        check_answer("unix", nc_msg_reply(m)->recognize->results[0], 4);
    nc_msg_free(m);
    /* Requests of 4 large images, sent back to back to one worker: while
     * it prepares one, the next fills the queue and the ones after are
     * refused as busy, not lost. */
    enum { BIG = 512, N_FULL = 16 };
    uint8_t *big = malloc(BIG * BIG);
    REQUIRE(big);
    for (int y = 0; y < BIG; y++)
        for (int x = 0; x < BIG; x++)
            big[y * BIG + x] = digit(4)[(y * H / BIG) * W + x * W / BIG];
    for (int r = 0; r < N_FULL; r++) {
        req_init(&b, 100 + (uint64_t)r, 4);
        for (int i = 0; i < 4; i++) {
            set_raw(&b.im[i], big);
            b.im[i].data.len = BIG * BIG;
            b.im[i].width = b.im[i].height = BIG;
        }
        CHECK_INT_EQ(nc_send_msg(fd, &b.rq.base), 0);
    }
    int ok = 0, full = 0;
    for (int r = 0; r < N_FULL; r++) {
        m = NULL;
        if (nc_recv_reply(fd, 60000, &m))
            break;
        if (reply_code(m) == NEOCOG__CODE__OK)
            ok++;
        else if (reply_code(m) == NEOCOG__CODE__RESOURCE_EXHAUSTED &&
                 strstr(nc_msg_reply(m)->message, "queue full"))
            full++;
        else
            CHECK_MSG(0, "full queue: code %d (%s)", reply_code(m), nc_msg_reply(m)->message);
        nc_msg_free(m);
    }
    CHECK_MSG(ok + full == N_FULL && ok >= 1 && full >= 1,
              "%d requests to a full queue: %d answered, %d refused as busy", N_FULL, ok, full);
    free(big);
    close(fd);
    /* A second daemon on the same path must refuse to start, not unlink
     * the live socket and take it over. */
    nc_daemon d2b;
    CHECK_MSG(nc_daemon_start(&d2b, bin, dir, 0, args) != 0,
              "a second daemon took over a live Unix socket");
    CHECK_MSG(nc_daemon_stop(&d2b, 5000) != 0, "second daemon exited 0");
    fd = nc_connect_unix(sock);
    req_init(&b, 42, 1);
    set_raw(&b.im[0], digit(4));
    m = fd >= 0 ? nc_roundtrip(fd, &b.rq) : NULL;
    CHECK_MSG(reply_code(m) == NEOCOG__CODE__OK, "first daemon lost its socket");
    nc_msg_free(m);
    if (fd >= 0)
        close(fd);
    CHECK_INT_EQ(nc_daemon_stop(&d2, 20000), 0);
    CHECK_MSG(access(sock, F_OK) != 0, "socket file left behind");
}

/* ---- priority classes ------------------------------------------------------------------ */

enum { BULK = 128 };            /* images of a bulk request (one batch) */

/* Queue a bulk request of BULK images (id) on fd. */
static void send_bulk(int fd, uint64_t id)
{
    static req_buf b;
    req_init(&b, id, BULK);
    for (int i = 0; i < BULK; i++)
        set_raw(&b.im[i], digit((int)(id * 7 + (uint64_t)i) % N_DIGITS));
    CHECK_INT_EQ(nc_send_msg(fd, &b.rq.base), 0);
}

static void send_one(int fd, uint64_t id, int32_t priority)
{
    req_buf b;
    req_init(&b, id, 1);
    set_raw(&b.im[0], digit((int)id % N_DIGITS));
    b.rq.priority = priority;
    CHECK_INT_EQ(nc_send_msg(fd, &b.rq.base), 0);
}

/* Read n replies; *ret_pos[k] = where the reply to ids[k] came. */
static void reply_order(int fd, int n, const uint64_t *ids, int n_ids, int *ret_pos)
{
    for (int k = 0; k < n_ids; k++)
        ret_pos[k] = -1;
    for (int i = 0; i < n; i++) {
        nc_msg *m = NULL;
        int err = nc_recv_reply(fd, 30000, &m);
        if (err) {
            CHECK_MSG(0, "priority: reply %d: %s", i, nc_frame_strerror(err));
            return;
        }
        const Neocog__Reply *r = nc_msg_reply(m);
        CHECK_MSG(r->code == NEOCOG__CODE__OK, "priority: request %llu: %s",
                  (unsigned long long)r->id, r->message);
        for (int k = 0; k < n_ids; k++)
            if (r->id == ids[k])
                ret_pos[k] = i;
        nc_msg_free(m);
    }
}

/* One bulk worker, one priority worker (the default), batches of up to
 * BULK images, and a model heavy enough that a bulk batch lasts several times
 * the 20 ms pause below on a CPU core, even on a fast, quiet host (half of
 * this model let a batch finish first now and then).
 *  1. Pipelined on one connection: six bulk requests at normal priority,
 *     one image at high priority, one at normal.  The high one must come
 *     back before the last bulk batch, the trailing normal one last (first
 *     come, first served within a class).
 *  2. Two bulk requests, then, once the bulk worker has started on the
 *     first, one image at high priority: it must come back first, before
 *     that batch is done (the priority worker took it: a camera frame does
 *     not wait for a bulk batch to finish). */
static void test_priority(void)
{
    char sock[300], heavy[300];
    snprintf(sock, sizeof sock, "%s/p.sock", dir);
    snprintf(heavy, sizeof heavy, "%s/heavy.ncm", dir);
    REQUIRE(nc_make_cnn_model_arch(heavy, 9, "1x29x29-64C4-MP2-256C5-MP3-10N") == 0);
    /* on the CPU (--gpus 0): the test needs a bulk batch that lasts past
       its 20 ms pause, which a GPU finishes well within */
    const char *args[] = { "--cnn-model", heavy, "--listen-tcp", "none", "--listen-unix", sock,
                           "--http", "none", "--gpus", "0", "--workers", "1", "--max-batch", "128",
                           "--max-images-per-request", "128", "--models", dir,
                           "--log-level", "4", NULL };
    nc_daemon d3;
    REQUIRE(nc_daemon_start(&d3, bin, dir, 0, args) == 0);
    int fd = nc_connect_unix(sock);
    REQUIRE(fd >= 0);

    enum { N_BULK = 6 };
    for (int k = 0; k < N_BULK; k++)
        send_bulk(fd, 100 + (uint64_t)k);
    send_one(fd, 200, 1);
    send_one(fd, 300, 0);
    const uint64_t ids[3] = { 200, 100 + N_BULK - 1, 300 };
    int pos[3];
    reply_order(fd, N_BULK + 2, ids, 3, pos);
    CHECK_MSG(pos[0] >= 0 && pos[0] < pos[1],
              "the high-priority request came back at %d, the last bulk batch at %d", pos[0],
              pos[1]);
    CHECK_MSG(pos[2] == N_BULK + 1, "the last normal request came back at %d of %d", pos[2],
              N_BULK + 2);

    send_bulk(fd, 400);
    send_bulk(fd, 401);
    struct timespec ts = { 0, 20000000 };          /* the bulk worker is on 400 by now */
    nanosleep(&ts, NULL);
    send_one(fd, 500, 1);
    const uint64_t ids2[2] = { 500, 400 };
    reply_order(fd, 3, ids2, 2, pos);
    CHECK_MSG(pos[0] == 0, "a high-priority request sent while the bulk worker was busy "
              "came back at %d (the bulk batch at %d)", pos[0], pos[1]);
    close(fd);
    CHECK_INT_EQ(nc_daemon_stop(&d3, 20000), 0);
}

/* ---- clients that vanish while their batches run ---------------------------------------- */

/* Many connections pipeline requests (more than the queue holds, so some
 * are refused at once) and close without reading, half of them with a
 * reset.  Their batches finish after the connection is gone: the daemon
 * must drop those replies, free every connection (status counts only ours
 * again) and keep serving.  Under ASan a use-after-free or double free on
 * the close path aborts the daemon here. */
static void test_disconnect_in_flight(void)
{
    enum { N_CONN = 16, N_REQ = 10, N_IMG = 32 };
    req_buf b;
    req_init(&b, 1, N_IMG);
    for (int i = 0; i < N_IMG; i++)
        set_raw(&b.im[i], digit(i % N_DIGITS));
    uint8_t *frame;
    size_t len;
    REQUIRE(nc_msg_frame(&b.rq.base, 0, &frame, &len) == 0);
    for (int c = 0; c < N_CONN; c++) {
        int fd = nc_connect_tcp(dmn.port);
        REQUIRE(fd >= 0);
        for (int r = 0; r < N_REQ; r++)
            CHECK(nc_send_all(fd, frame, len) == 0);
        if (c % 2) {
            struct linger lg = { 1, 0 };    /* close with RST */
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        }
        close(fd);
    }
    free(frame);
    uint32_t conns = 0;
    for (int i = 0; i < 500; i++) {
        conns = conns_on(nc_connect_tcp(dmn.port));
        if (conns == 1)
            break;
        struct timespec ts = { 0, 20000000 };
        nanosleep(&ts, NULL);
    }
    CHECK_MSG(conns == 1, "closed clients still counted: %u connections", conns);
    still_serving("clients closed with batches in flight");
}

/* ---- half close ---------------------------------------------------------------------------- */

/* A client that sends its requests and then shuts its sending side (as
 * `nc -N` or a script does) still gets every answer, then an orderly close. */
static void test_half_close(void)
{
    enum { N_REQ = 40 };
    int fd = nc_connect_tcp(dmn.port);
    REQUIRE(fd >= 0);
    for (int i = 0; i < N_REQ; i++) {
        req_buf b;
        req_init(&b, 500 + (uint64_t)i, 1);
        set_raw(&b.im[0], digit(i % N_DIGITS));
        CHECK(nc_send_msg(fd, &b.rq.base) == 0);
    }
    CHECK(shutdown(fd, SHUT_WR) == 0);
    int ok = 0;
    for (int i = 0; i < N_REQ; i++) {
        nc_msg *m = NULL;
        if (nc_recv_reply(fd, 30000, &m)) {
            CHECK_MSG(0, "half close: reply %d of %d missing", i, N_REQ);
            break;
        }
        const Neocog__Reply *r = nc_msg_reply(m);
        uint64_t k = r->id - 500;
        if (r->code == NEOCOG__CODE__OK && k < N_REQ &&
            r->recognize->results[0]->label == expect_label[k % N_DIGITS])
            ok++;
        nc_msg_free(m);
    }
    CHECK_INT_EQ(ok, N_REQ);
    char byte;
    struct timeval tv = { 10, 0 };
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    CHECK_MSG(recv(fd, &byte, 1, 0) == 0, "half close: the daemon did not close after the answers");
    close(fd);
    still_serving("a half-closed client");
}

/* ---- a client that never reads ------------------------------------------------------------ */

/* Replies that sit unread past write_timeout_ms cost the daemon memory: the
 * client is disconnected, and everyone else is still served. */
static void test_write_timeout(void)
{
    char sock[300];
    snprintf(sock, sizeof sock, "%s/wt.sock", dir);
    const char *args[] = { "--cnn-model", model_path, "--listen-tcp", "none",
                           "--listen-unix", sock, "--http", "none", "--workers", "1",
                           "--write-timeout-ms", "300", "--models", dir, "--log-level", "3",
                           NULL };
    nc_daemon d4;
    REQUIRE(nc_daemon_start(&d4, bin, dir, 0, args) == 0);
    int fd = nc_connect_unix(sock);
    CHECK(fd >= 0);
    /* 60 requests of 64 digits with their top 10: far more reply bytes than
     * the socket buffers hold, and this client reads none of them. */
    req_buf b;
    req_init(&b, 60, 64);
    b.rr.top_k = 10;
    for (int i = 0; i < 64; i++)
        set_raw(&b.im[i], digit(i % N_DIGITS));
    for (int r = 0; r < 60 && fd >= 0; r++) {
        b.rq.id = 60 + (uint64_t)r;
        CHECK(nc_send_msg(fd, &b.rq.base) == 0);
    }
    uint32_t conns = 99;
    for (int i = 0; i < 250 && conns != 1; i++) {
        struct timespec ts = { 0, 40000000 };
        nanosleep(&ts, NULL);
        conns = conns_on(nc_connect_unix(sock));     /* the status connection itself is 1 */
    }
    CHECK_MSG(conns == 1, "a client reading nothing is still connected (%u connections)", conns);
    if (fd >= 0)
        close(fd);
    CHECK_INT_EQ(nc_daemon_stop(&d4, 20000), 0);
}

/* ---- a reply above max_frame_bytes ------------------------------------------------------- */

/* The daemon must answer with an error for that id, not drop the reply and
 * leave the client waiting forever. */
static void test_reply_too_large(void)
{
    char sock[300];
    snprintf(sock, sizeof sock, "%s/big.sock", dir);
    const char *args[] = { "--cnn-model", model_path, "--listen-tcp", "none",
                           "--listen-unix", sock, "--http", "none", "--workers", "1",
                           "--max-frame-bytes", "1024", "--models", dir, "--log-level", "3",
                           NULL };
    nc_daemon d3;
    REQUIRE(nc_daemon_start(&d3, bin, dir, 0, args) == 0);
    int fd = nc_connect_unix(sock);
    CHECK(fd >= 0);
    /* 64 tiny images: a small request, a reply of several KiB. */
    static const uint8_t px[4] = { 0, 255, 255, 0 };
    req_buf b;
    req_init(&b, 50, 64);
    b.rr.top_k = 10;
    for (int i = 0; i < 64; i++) {
        b.im[i].format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY;
        b.im[i].data.data = (uint8_t *)px;
        b.im[i].data.len = sizeof px;
        b.im[i].width = 2;
        b.im[i].height = 2;
    }
    REQUIRE(protobuf_c_message_get_packed_size(&b.rq.base) < 1024);
    nc_msg *m = NULL;
    CHECK(fd >= 0 && nc_send_msg(fd, &b.rq.base) == 0);
    int err = fd >= 0 ? nc_recv_reply(fd, 10000, &m) : -1;
    CHECK_MSG(err == 0, "oversized reply: no answer (%d)", err);
    if (!err) {
        const Neocog__Reply *r = nc_msg_reply(m);
        CHECK_MSG(r->id == 50 && r->code == NEOCOG__CODE__RESOURCE_EXHAUSTED &&
                  strstr(r->message, "frame limit"), "oversized reply: id %llu %s '%s'",
                  (unsigned long long)r->id, nc_msg_code_name(r->code), r->message);
    }
    nc_msg_free(m);
    if (fd >= 0)
        close(fd);
    CHECK_INT_EQ(nc_daemon_stop(&d3, 20000), 0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_daemon NEOCOGD\n");
        return 2;
    }
    bin = argv[1];
    const char *data = getenv("NC_TEST_DATA");
    if (!data)
        return NC_TEST_SKIP;
    if (nc_test_fixture(&mnist)) {
        fprintf(stderr, "cannot read the MNIST fixture\n");
        return 1;
    }
    snprintf(dir, sizeof dir, "/tmp/neocogd-test-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    snprintf(model_path, sizeof model_path, "%s/cnn-test.ncm", dir);
    if (nc_make_cnn_model(model_path, 7))
        return 1;
    expect_from_model();
    signal(SIGPIPE, SIG_IGN);

    /* three engines a GPU where there is one (no effect on the CPU) */
    const char *args[] = { "--cnn-model", model_path, "--models", dir, "--workers", "2",
                           "--cnn-gpu-lanes", "3",
                           "--max-images-per-request", "64", "--frame-timeout-ms", "1000",
                           "--reject-threshold", "0.05", "--log-level", "4", NULL };
    if (nc_daemon_start(&dmn, bin, dir, 1, args)) {
        fprintf(stderr, "daemon did not become ready\n");
        return 1;
    }
    test_formats();
    test_segment();
    test_segment_hints();
    test_answer_whole();
    test_answer_lines();
    pipeline("pipelining", 1000, 0, NULL);
    test_concurrent();
    test_bad_frames();
    test_bad_requests();
    test_info();
    test_reload();
    test_unix_and_queue();
    test_priority();
    test_disconnect_in_flight();
    test_half_close();
    test_write_timeout();
    test_reply_too_large();

    /* SIGTERM while 300 pipelined requests are in flight: all answered. */
    nc_daemon_drain_notify(&dmn);
    pipeline("drain", 300, SIGTERM, NULL);
    CHECK(nc_daemon_wait_notify(&dmn, "STOPPING=1", 10000) == 0);
    int status = nc_daemon_wait_exit(&dmn, 20000);
    nc_daemon_stop(&dmn, 1000);
    CHECK_MSG(status == 0, "daemon exit status after drain: %d", status);

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) { /* best effort */ }
    nc_dataset_fini(&mnist);
    return nc_test_finish();
}

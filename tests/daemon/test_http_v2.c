/* tests/daemon/test_http_v2.c — the Open Inference Protocol (KServe v2)
 * of the real neocogd (argv[1]) with the shipped CNN column, spoken to by
 * tests/daemon/http_client's small HTTP/1.1 client.
 *
 * Metadata, health, readiness and infer with BYTES and UINT8; the twins of
 * the socket path's bad inputs on POST /v2/models/NAME/infer (garbage, a
 * wrong type, a truncated JPEG, absurd dimensions, an oversized body, a
 * client that stalls half way through its body, one that hangs up half
 * way, one that sends a byte at a time) answered with a clear status while
 * the daemon keeps serving; and the socket path's refusals as the protocol
 * words them: 429 with Retry-After for a full queue, 504 for a passed
 * deadline, 503 once draining, each with the protocol's error object
 * {"error": MESSAGE} (neocogd adds "code", the socket path's name). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "harness.h"
#include "http_client.h"
#include "test.h"
#include "http_slow_checks.h"

enum { MAX_FRAME = NC_HTTP_TEST_MAX_FRAME };

/* The protocol's inference error object: JSON, {"error":"...why..."}. */
static int v2_error(const response *r, const char *why)
{
    return r->body && !strncmp(r->body, "{\"error\":\"", 10) && strstr(r->body, why) &&
           strstr(r->head, "application/json");
}

/* {"parameters":{params},"inputs":[one BYTES input of the n images]};
 * params NULL: none. */
static char *bytes_body(const uint8_t *const *img, const size_t *len, int n, const char *params,
                        size_t *ret_len)
{
    size_t cap = 256 + (params ? strlen(params) : 0);
    for (int i = 0; i < n; i++)
        cap += 4 * (len[i] / 3 + 1) + 4;
    char *body = malloc(cap);
    if (!body)
        return NULL;
    size_t k = (size_t)snprintf(body, cap, "{%s%s%s\"inputs\":[{\"name\":\"image\",\"shape\":[%d],"
                                "\"datatype\":\"BYTES\",\"data\":[", params ? "\"parameters\":{" : "",
                                params ? params : "", params ? "}," : "", n);
    for (int i = 0; i < n; i++) {
        char *b64 = base64(img[i], len[i]);
        if (!b64) {
            free(body);
            return NULL;
        }
        k += (size_t)snprintf(body + k, cap - k, "%s\"%s\"", i ? "," : "", b64);
        free(b64);
    }
    k += (size_t)snprintf(body + k, cap - k, "]}]}");
    *ret_len = k;
    return body;
}

/* POST /v2/models/cnn/infer of one encoded image. */
static int infer_one(int port, const void *img, size_t len, response *r)
{
    const uint8_t *p = img;
    size_t n = 0;
    char *body = bytes_body(&p, &len, 1, NULL, &n);
    int err = !body || post(port, "/v2/models/cnn/infer", "application/json", body, n, r);
    free(body);
    return err ? -1 : 0;
}

/* body (bytes_body of the seven) to /v2/models/cnn/infer, and its answer. */
static http_case seven_case(const char *body, size_t len)
{
    return (http_case){ "/v2/models/cnn/infer", "application/json", body, len, 200,
                        "\"data\":[7]", 0 };
}

static void expect_seven(int port, const char *after)
{
    const uint8_t *img = pgm7;
    size_t len = 0;
    char *body = bytes_body(&img, &pgm7_len, 1, NULL, &len);
    http_case c = seven_case(body, len);
    http_expect_answer(port, &c, after);
    free(body);
}

/* ---- metadata and inference ------------------------------------------------------------ */

static void test_v2_metadata(int port)
{
    response r;
    REQUIRE(http(port, "GET", "/v2", NULL, NULL, 0, &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"name\":\"neocogd\"") && has(&r, "\"extensions\":[]"),
              "%d %s", r.status, r.body);
    response_free(&r);
    REQUIRE(http(port, "GET", "/v2/health/live", NULL, NULL, 0, &r) == 0);
    CHECK_INT_EQ(r.status, 200);
    response_free(&r);
    REQUIRE(http(port, "GET", "/v2/health/ready", NULL, NULL, 0, &r) == 0);
    CHECK_INT_EQ(r.status, 200);
    response_free(&r);
    REQUIRE(http(port, "GET", "/v2/models/cnn", NULL, NULL, 0, &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"name\":\"cnn\"") &&
              has(&r, "{\"name\":\"image\",\"datatype\":\"BYTES\",\"shape\":[-1]}") &&
              has(&r, "{\"name\":\"scores\",\"datatype\":\"FP32\",\"shape\":[-1,10]}"),
              "%d %s", r.status, r.body);
    response_free(&r);
    REQUIRE(http(port, "GET", "/v2/models/cnn/ready", NULL, NULL, 0, &r) == 0);
    CHECK_INT_EQ(r.status, 200);
    response_free(&r);
    REQUIRE(http(port, "GET", "/v2/models/neocognitron/ready", NULL, NULL, 0, &r) == 0);
    CHECK_INT_EQ(r.status, 400);        /* not loaded here */
    response_free(&r);
    REQUIRE(http(port, "GET", "/v2/models/ensemble/ready", NULL, NULL, 0, &r) == 0);
    CHECK_INT_EQ(r.status, 400);
    response_free(&r);
    REQUIRE(http(port, "GET", "/v2/models/resnet", NULL, NULL, 0, &r) == 0);
    CHECK_MSG(r.status == 404 && has(&r, "\"error\":"), "%d %s", r.status, r.body);
    response_free(&r);
}

static void test_v2_infer(int port)
{
    char *b64 = base64(pgm7, pgm7_len);
    REQUIRE(b64);
    size_t cap = strlen(b64) + 84 * 84 * 4 + 512;
    char *body = malloc(cap);
    REQUIRE(body);
    snprintf(body, cap, "{\"id\":\"req-1\",\"inputs\":[{\"name\":\"image\",\"shape\":[1],"
             "\"datatype\":\"BYTES\",\"data\":[\"%s\"]}]}", b64);
    response r;
    REQUIRE(post(port, "/v2/models/cnn/infer", "application/json", body, strlen(body), &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"model_name\":\"cnn\"") && has(&r, "\"id\":\"req-1\"") &&
              has(&r, "{\"name\":\"label\",\"datatype\":\"INT32\",\"shape\":[1],\"data\":[7]}") &&
              has(&r, "{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[1],\"data\":[\"7\"]}") &&
              has(&r, "\"name\":\"confidence\",\"datatype\":\"FP32\",\"shape\":[1]") &&
              has(&r, "\"name\":\"scores\",\"datatype\":\"FP32\",\"shape\":[1,10]"),
              "%d %s", r.status, r.body);
    response_free(&r);
    /* only the outputs asked for */
    snprintf(body, cap, "{\"inputs\":[{\"name\":\"image\",\"shape\":[1],\"datatype\":\"BYTES\","
             "\"data\":[\"%s\"]}],\"outputs\":[{\"name\":\"text\"}]}", b64);
    REQUIRE(post(port, "/v2/models/cnn/infer", "application/json", body, strlen(body), &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"text\"") && !has(&r, "\"label\""), "%s", r.body);
    response_free(&r);
    /* UINT8 [1,84,84]: the same digit as raw pixels */
    size_t len = (size_t)snprintf(body, cap, "{\"inputs\":[{\"name\":\"pixels\","
                                  "\"shape\":[1,84,84],\"datatype\":\"UINT8\",\"data\":[");
    for (int i = 0; i < 84 * 84; i++)
        len += (size_t)snprintf(body + len, cap - len, "%s%u", i ? "," : "", px7[i]);
    len += (size_t)snprintf(body + len, cap - len, "]}]}");
    REQUIRE(post(port, "/v2/models/cnn/infer", "application/json", body, len, &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"data\":[7]"), "uint8: %d %s", r.status, r.body);
    response_free(&r);
    /* a shape that does not match its data, absurd dimensions, a wrong datatype */
    static const char *const bad[] = {
        "{\"inputs\":[{\"name\":\"p\",\"shape\":[1,2,2],\"datatype\":\"UINT8\",\"data\":[1,2,3]}]}",
        "{\"inputs\":[{\"name\":\"p\",\"shape\":[1,100000,100000],\"datatype\":\"UINT8\","
        "\"data\":[1]}]}",
        "{\"inputs\":[{\"name\":\"p\",\"shape\":[1],\"datatype\":\"FP32\",\"data\":[1.5]}]}",
        "{\"inputs\":[]}",
        "not json",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        REQUIRE(post(port, "/v2/models/cnn/infer", "application/json", bad[i], strlen(bad[i]),
                      &r) == 0);
        CHECK_MSG(r.status == 400 && has(&r, "\"error\":"), "bad %zu: %d %s", i, r.status,
                  r.body);
        response_free(&r);
    }
    /* a raw image over the size limit: the handler's own check */
    static const char wide[] = "{\"inputs\":[{\"name\":\"p\",\"shape\":[1,1,5000],"
                               "\"datatype\":\"UINT8\",\"data\":[";
    len = (size_t)snprintf(body, cap, "%s", wide);
    for (int i = 0; i < 5000; i++)
        len += (size_t)snprintf(body + len, cap - len, "%s0", i ? "," : "");
    len += (size_t)snprintf(body + len, cap - len, "]}]}");
    REQUIRE(post(port, "/v2/models/cnn/infer", "application/json", body, len, &r) == 0);
    CHECK_MSG(r.status == 400 && has(&r, "exceeds the size limit"), "wide: %d %s", r.status,
              r.body);
    response_free(&r);
    /* a model that is not loaded */
    snprintf(body, cap, "{\"inputs\":[{\"name\":\"image\",\"shape\":[1],\"datatype\":\"BYTES\","
             "\"data\":[\"%s\"]}]}", b64);
    REQUIRE(post(port, "/v2/models/neocognitron/infer", "application/json", body, strlen(body),
                 &r) == 0);
    CHECK_MSG(r.status == 503 && has(&r, "not loaded"), "%d %s", r.status, r.body);
    response_free(&r);
    REQUIRE(http(port, "GET", "/v2/models/cnn/infer", NULL, NULL, 0, &r) == 0);
    CHECK_INT_EQ(r.status, 405);
    response_free(&r);
    free(body);
    free(b64);
}


/* ---- bad input, and the daemon serving on ---------------------------------------------- */

static void test_v2_bad_input(int port)
{
    response r;
    /* garbage: an element that is no image (and a body that is no JSON,
     * in test_v2_infer) */
    static const char garbage[] = "this is not an image at all";
    REQUIRE(infer_one(port, garbage, sizeof garbage - 1, &r) == 0);
    CHECK_MSG(r.status == 400 && v2_error(&r, "image 0"), "garbage: %d %s", r.status, r.body);
    response_free(&r);
    /* a wrong type: a BYTES element that is a number (a datatype not
     * read here: test_v2_infer) */
    static const char number[] = "{\"inputs\":[{\"name\":\"image\",\"shape\":[1],"
                                 "\"datatype\":\"BYTES\",\"data\":[7]}]}";
    REQUIRE(post(port, "/v2/models/cnn/infer", "application/json", number, strlen(number),
                 &r) == 0);
    CHECK_MSG(r.status == 400 && v2_error(&r, "base64"), "number: %d %s", r.status, r.body);
    response_free(&r);
    /* a truncated JPEG */
    uint8_t *jpg = NULL;
    size_t jpg_len = 0;
    REQUIRE(nc_encode_jpeg(px7, 84, 84, &jpg, &jpg_len) == 0);
    REQUIRE(infer_one(port, jpg, jpg_len, &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"data\":[7]"), "whole jpeg: %d %s", r.status, r.body);
    response_free(&r);
    REQUIRE(infer_one(port, jpg, jpg_len / 2, &r) == 0);
    CHECK_MSG(r.status == 400 && v2_error(&r, "image 0"), "truncated jpeg: %d %s", r.status,
              r.body);
    response_free(&r);
    free(jpg);
    /* absurd dimensions in an encoded image (UINT8's: test_v2_infer) */
    static const char huge[] = "P5\n100000 100000\n255\n\x01\x02\x03";
    REQUIRE(infer_one(port, huge, sizeof huge - 1, &r) == 0);
    CHECK_MSG(r.status == 400 && v2_error(&r, "limit"), "absurd size: %d %s", r.status, r.body);
    response_free(&r);
    /* over the frame cap: the JSON error object up to twice the cap
     * (evhttp reads that far), evhttp's own 413 past it */
    char *big = calloc(1, 3 * MAX_FRAME);
    REQUIRE(big);
    REQUIRE(post(port, "/v2/models/cnn/infer", "application/json", big, MAX_FRAME + 100,
                 &r) == 0);
    CHECK_MSG(r.status == 413 && v2_error(&r, "exceeds the limit of 262144 (max_frame_bytes)") &&
              has(&r, "\"code\":\"RESOURCE_EXHAUSTED\""), "over the cap: %d %s", r.status, r.body);
    response_free(&r);
    REQUIRE(post(port, "/v2/models/cnn/infer", "application/json", big, 2 * MAX_FRAME, &r) == 0);
    CHECK_MSG(r.status == 413 && v2_error(&r, "max_frame_bytes"), "twice the cap: %d %s",
              r.status, r.body);
    response_free(&r);
    REQUIRE(post(port, "/v2/models/cnn/infer", "application/json", big, 3 * MAX_FRAME, &r) == 0);
    CHECK_INT_EQ(r.status, 413);
    response_free(&r);
    free(big);
    expect_seven(port, "bad input");
}

/* The seven's slow clients (http_slow_checks.h), as inference requests. */
static void test_v2_slow_clients(int port)
{
    const uint8_t *img = pgm7;
    size_t len = 0;
    char *body = bytes_body(&img, &pgm7_len, 1, NULL, &len);
    REQUIRE(body);
    http_case c = seven_case(body, len);
    http_check_slow_clients(port, &c, NULL);
    free(body);
}

/* ---- a full queue and a passed deadline, on a daemon of their own ---------------------- */

/* The twins of the socket path's full queue (RESOURCE_EXHAUSTED) and
 * expired deadline (DEADLINE_EXCEEDED), forced as test_http_api forces
 * them for /v1: one worker and a queue of 4 images, requests of 4 of
 * heavy_png's large PNGs sent back to back on their own connections. */
static void test_v2_queue_full_and_deadline(const char *bin, const char *cnn)
{
    char dir[] = "/tmp/nc-http-v2-busy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const char *args[] = { "--models", dir, "--cnn-model", cnn, "--gpus", "0",
                           "--listen-unix", "none", "--workers", "1",
                           "--queue-capacity", "4", "--max-images-per-request", "4",
                           "--log-level", "4", NULL };
    nc_daemon d;
    REQUIRE(nc_daemon_start(&d, bin, dir, 1, args) == 0);
    size_t png_len = 0;
    uint8_t *png = heavy_png(&png_len);
    REQUIRE(png);
    const uint8_t *imgs[4] = { png, png, png, png };
    size_t lens[4] = { png_len, png_len, png_len, png_len }, len = 0, dlen = 0;
    char *body = bytes_body(imgs, lens, 4, NULL, &len),
         *late = bytes_body(imgs, lens, 4, "\"deadline_ms\":1", &dlen);
    free(png);
    REQUIRE(body && late);

    /* the deadline in the request's parameters: 4 large images cannot be
     * read within 1 ms */
    response r;
    REQUIRE(post(d.http_port, "/v2/models/cnn/infer", "application/json", late, dlen, &r) == 0);
    CHECK_MSG(r.status == 504 && v2_error(&r, "deadline exceeded") &&
              has(&r, "\"code\":\"DEADLINE_EXCEEDED\""), "deadline_ms 1: %d %s", r.status, r.body);
    response_free(&r);
    expect_seven(d.http_port, "a passed deadline");

    enum { N_FULL = 16 };
    int fds[N_FULL];
    char head[256];
    int hn = post_head(head, sizeof head, "/v2/models/cnn/infer", "application/json", len);
    REQUIRE(hn > 0);
    for (int i = 0; i < N_FULL; i++) {
        fds[i] = nc_connect_tcp(d.http_port);
        CHECK(fds[i] >= 0 && !nc_send_all(fds[i], head, (size_t)hn) &&
              !nc_send_all(fds[i], body, len));
    }
    int ok = 0, full = 0;
    for (int i = 0; i < N_FULL; i++) {
        if (fds[i] < 0 || read_response(fds[i], &r)) {
            CHECK_MSG(0, "full queue: request %d unanswered", i);
        } else if (r.status == 200 && has(&r, "\"data\":[7,7,7,7]")) {
            ok++;
        } else if (r.status == 429) {
            CHECK_MSG(has_header(&r, "Retry-After: 1") && v2_error(&r, "queue full") &&
                      has(&r, "\"code\":\"RESOURCE_EXHAUSTED\""),
                      "429 without its Retry-After or reason: %s%s", r.head, r.body);
            full++;
        } else {
            CHECK_MSG(0, "full queue: %d %s", r.status, r.body);
        }
        response_free(&r);
        if (fds[i] >= 0)
            close(fds[i]);
    }
    CHECK_MSG(ok + full == N_FULL && ok >= 1 && full >= 1,
              "%d requests to a full queue: %d answered, %d refused as busy", N_FULL, ok, full);
    expect_seven(d.http_port, "a full queue");
    free(body);
    free(late);
    CHECK_INT_EQ(nc_daemon_stop(&d, 30000), 0);
    rmdir(dir);
}

/* ---- drain, on a daemon of its own ----------------------------------------------------- */

/* Draining (an idle protocol connection holds the drain open): the server
 * is not ready, and an inference is refused with 503 and Retry-After. */
static void test_v2_drain(const char *bin, const char *const *args)
{
    char dir[] = "/tmp/nc-http-v2-drain-XXXXXX";
    REQUIRE(mkdtemp(dir));
    nc_daemon d;
    REQUIRE(nc_daemon_start(&d, bin, dir, 1, args) == 0);
    expect_seven(d.http_port, "the start");
    int held;
    http_begin_drain(&d, &held);
    if (held < 0)
        return;
    response r;
    REQUIRE(http(d.http_port, "GET", "/v2/health/ready", NULL, NULL, 0, &r) == 0);
    CHECK_MSG(r.status == 400, "ready while draining: %d", r.status);
    response_free(&r);
    REQUIRE(infer_one(d.http_port, pgm7, pgm7_len, &r) == 0);
    CHECK_MSG(r.status == 503 && has_header(&r, "Retry-After: 1") && v2_error(&r, "draining") &&
              has(&r, "\"code\":\"UNAVAILABLE\""), "draining: %d %s%s", r.status, r.head, r.body);
    response_free(&r);
    close(held);
    /* the last connection gone, the drain ends and the daemon exits 0 */
    CHECK_INT_EQ(nc_daemon_wait_exit(&d, 30000), 0);
    nc_daemon_stop(&d, 1000);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    http_test_daemon t;
    int status = http_test_start(&t, argc, argv, "test_http_v2", "/tmp/nc-http-v2-XXXXXX");
    if (status)
        return status;
    test_v2_metadata(t.d.http_port);
    test_v2_infer(t.d.http_port);
    test_v2_bad_input(t.d.http_port);
    test_v2_slow_clients(t.d.http_port);
    CHECK_INT_EQ(nc_daemon_stop(&t.d, 30000), 0);
    test_v2_drain(argv[1], t.args);
    test_v2_queue_full_and_deadline(argv[1], t.cnn);
    rmdir(t.dir);
    free_samples();
    return nc_test_finish();
}

/* tests/daemon/test_http_api.c — the HTTP recognition API of the real
 * neocogd (argv[1]) with the shipped CNN column, spoken to by
 * tests/daemon/http_client's small HTTP/1.1 client (/v2, the Open
 * Inference Protocol: test_http_v2.c).
 *
 * /v1/recognize with a PGM, PNG and JPEG body, multipart/form-data, JSON
 * with base64 and query options; every bad input of the socket path with
 * its HTTP twin (garbage, a wrong type, a truncated JPEG, absurd
 * dimensions, an oversized body, a client that stalls half way through its
 * body, one that hangs up half way, one that hangs up before its answer,
 * one that sends a byte at a time) answered with a clear status while the
 * daemon keeps serving, and a stalled body closed after frame_timeout_ms;
 * 405 for wrong methods; CORS only when configured; 503 once draining; 429
 * with Retry-After for a full queue and 504 for a passed deadline, as the
 * socket path refuses them. */
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

/* ---- /v1 ----------------------------------------------------------------------- */

static void test_v1_bodies(int port)
{
    response r;
    REQUIRE(post(port, "/v1/recognize", "image/x-portable-graymap", pgm7, pgm7_len, &r) == 0);
    CHECK_INT_EQ(r.status, 200);
    CHECK_MSG(has(&r, "\"label\":7,\"text\":\"7\"") && r.body[0] == '[', "%s", r.body);
    CHECK(strstr(r.head, "application/json") != NULL);
    CHECK(!strcasestr(r.head, "Access-Control-Allow-Origin"));     /* CORS off */
    response_free(&r);

    uint8_t *png = NULL, *jpg = NULL;
    size_t png_len = 0, jpg_len = 0;
    REQUIRE(nc_encode_png(px7, 84, 84, &png, &png_len) == 0);
    REQUIRE(nc_encode_jpeg(px7, 84, 84, &jpg, &jpg_len) == 0);
    REQUIRE(post(port, "/v1/recognize", "image/png", png, png_len, &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"text\":\"7\""), "png: %d %s", r.status, r.body);
    response_free(&r);
    REQUIRE(post(port, "/v1/recognize", "image/jpeg", jpg, jpg_len, &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"text\":\"7\""), "jpeg: %d %s", r.status, r.body);
    response_free(&r);
    REQUIRE(post(port, "/v1/recognize", "application/octet-stream", png, png_len, &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"text\":\"7\""), "sniffed: %d %s", r.status, r.body);
    response_free(&r);

    /* the twin of a truncated JPEG frame */
    REQUIRE(post(port, "/v1/recognize", "image/jpeg", jpg, jpg_len / 2, &r) == 0);
    CHECK_MSG(r.status == 400 && has(&r, "\"code\":\"INVALID_ARGUMENT\""), "truncated: %d %s",
              r.status, r.body);
    response_free(&r);
    free(png);
    free(jpg);
}

static void test_v1_multipart(int port)
{
    static const char bd[] = "nc-boundary-x1";
    size_t cap = pgm7_len + pgm2_len + 1024, len = 0;
    char *body = malloc(cap);
    REQUIRE(body);
    len += (size_t)sprintf(body + len, "--%s\r\nContent-Disposition: form-data; name=\"image\"; "
                           "filename=\"two.pgm\"\r\nContent-Type: application/octet-stream\r\n"
                           "\r\n", bd);
    memcpy(body + len, pgm2, pgm2_len);
    len += pgm2_len;
    len += (size_t)sprintf(body + len, "\r\n--%s\r\nContent-Disposition: form-data; "
                           "name=\"image\"; filename=\"seven.pgm\"\r\n\r\n", bd);
    memcpy(body + len, pgm7, pgm7_len);
    len += pgm7_len;
    len += (size_t)sprintf(body + len, "\r\n--%s\r\nContent-Disposition: form-data; "
                           "name=\"top_k\"\r\n\r\n3\r\n--%s--\r\n", bd, bd);
    char ct[128];
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", bd);
    response r;
    REQUIRE(post(port, "/v1/recognize", ct, body, len, &r) == 0);
    CHECK_INT_EQ(r.status, 200);
    const char *two = strstr(r.body, "\"file\":\"two.pgm\""),
               *seven = strstr(r.body, "\"file\":\"seven.pgm\"");
    CHECK_MSG(two && seven && two < seven, "%s", r.body);
    CHECK_MSG(two && strstr(two, "\"text\":\"2\"") && seven && strstr(seven, "\"text\":\"7\""),
              "%s", r.body);
    /* top_k=3 from the form: three candidates */
    int scores = 0;
    for (const char *p = seven; p && (p = strstr(p, "\"score\":")); p++)
        scores++;
    CHECK_INT_EQ(scores, 3);
    response_free(&r);
    /* no boundary, or a broken body */
    REQUIRE(post(port, "/v1/recognize", "multipart/form-data", body, len, &r) == 0);
    CHECK_INT_EQ(r.status, 400);
    response_free(&r);
    REQUIRE(post(port, "/v1/recognize", ct, body, len / 3, &r) == 0);
    CHECK_INT_EQ(r.status, 400);
    response_free(&r);
    free(body);
}

static void test_v1_json(int port)
{
    char *b64 = base64(pgm7, pgm7_len);
    REQUIRE(b64);
    size_t cap = strlen(b64) + 512;
    char *body = malloc(cap);
    REQUIRE(body);
    snprintf(body, cap, "{\"images\":[{\"data\":\"%s\",\"file\":\"seven\"}],\"model\":\"cnn\","
             "\"top_k\":2}", b64);
    response r;
    REQUIRE(post(port, "/v1/recognize", "application/json", body, strlen(body), &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"file\":\"seven\"") && has(&r, "\"text\":\"7\""),
              "%d %s", r.status, r.body);
    response_free(&r);
    /* segment per image: digits and lines */
    snprintf(body, cap, "{\"images\":[{\"data\":\"%s\",\"segment\":true}]}", b64);
    REQUIRE(post(port, "/v1/recognize", "application/json", body, strlen(body), &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"digits\":[{") && has(&r, "\"lines\":[{"), "%d %s",
              r.status, r.body);
    response_free(&r);
    /* broken JSON, bad base64, a bad option */
    REQUIRE(post(port, "/v1/recognize", "application/json", "{\"images\":[", 11, &r) == 0);
    CHECK_MSG(r.status == 400 && has(&r, "JSON"), "%d %s", r.status, r.body);
    response_free(&r);
    static const char bad64[] = "{\"images\":[{\"data\":\"@@@\"}]}";
    REQUIRE(post(port, "/v1/recognize", "application/json", bad64, strlen(bad64), &r) == 0);
    CHECK_MSG(r.status == 400 && has(&r, "base64"), "%d %s", r.status, r.body);
    response_free(&r);
    static const char badopt[] = "{\"images\":[],\"top_k\":\"many\"}";
    REQUIRE(post(port, "/v1/recognize", "application/json", badopt, strlen(badopt), &r) == 0);
    CHECK_MSG(r.status == 400 && has(&r, "top_k"), "%d %s", r.status, r.body);
    response_free(&r);
    /* no images: the socket path's own sentence */
    static const char none[] = "{\"images\":[]}";
    REQUIRE(post(port, "/v1/recognize", "application/json", none, strlen(none), &r) == 0);
    CHECK_MSG(r.status == 400 && has(&r, "no images in the request"), "%d %s", r.status, r.body);
    response_free(&r);
    free(body);
    free(b64);
}

static void test_v1_query(int port)
{
    response r;
    REQUIRE(post(port, "/v1/recognize?top_k=3&min_confidence=0.5&priority=high&deadline_ms=60000",
                 "image/x-portable-graymap", pgm7, pgm7_len, &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"threshold\":0.5"), "%d %s", r.status, r.body);
    const char *top = strstr(r.body, "\"top\":[");
    int n = 0;
    for (const char *p = top; p && (p = strstr(p, "\"score\":")); p++)
        n++;
    CHECK_INT_EQ(n, 3);
    response_free(&r);
    REQUIRE(post(port, "/v1/recognize?segment=1", "image/x-portable-graymap", pgm7, pgm7_len,
                 &r) == 0);
    CHECK_MSG(r.status == 200 && has(&r, "\"digits\":[{"), "%d %s", r.status, r.body);
    response_free(&r);
    /* the socket path's checks: a model that is not loaded, min_confidence above 1,
     * expected_digits without segment, an unknown option */
    REQUIRE(post(port, "/v1/recognize?model=neocognitron", "image/x-portable-graymap", pgm7,
                 pgm7_len, &r) == 0);
    CHECK_MSG(r.status == 503 && has(&r, "not loaded") && strstr(r.head, "Retry-After"),
              "%d %s", r.status, r.body);
    response_free(&r);
    REQUIRE(post(port, "/v1/recognize?min_confidence=2", "image/x-portable-graymap", pgm7,
                 pgm7_len, &r) == 0);
    CHECK_MSG(r.status == 400 && has(&r, "above 1"), "%d %s", r.status, r.body);
    response_free(&r);
    REQUIRE(post(port, "/v1/recognize?expected_digits=2", "image/x-portable-graymap", pgm7,
                 pgm7_len, &r) == 0);
    CHECK_MSG(r.status == 400 && has(&r, "segment"), "%d %s", r.status, r.body);
    response_free(&r);
    REQUIRE(post(port, "/v1/recognize?colour=blue", "image/x-portable-graymap", pgm7, pgm7_len,
                 &r) == 0);
    CHECK_MSG(r.status == 400 && has(&r, "unknown option"), "%d %s", r.status, r.body);
    response_free(&r);
}

/* ---- bad input, and the daemon serving on ------------------------------------------ */

/* The seven as a PGM, and its answer; the byte-at-a-time client asks for
 * Connection: close. */
static http_case seven_case(void)
{
    return (http_case){ "/v1/recognize", "image/x-portable-graymap", pgm7, pgm7_len, 200,
                        "\"text\":\"7\"", 1 };
}

static void expect_seven(int port, const char *after)
{
    http_case c = seven_case();
    http_expect_answer(port, &c, after);
}

static void test_bad_input(int port)
{
    response r;
    static const char garbage[] = "this is not an image at all";
    REQUIRE(post(port, "/v1/recognize", "image/png", garbage, sizeof garbage, &r) == 0);
    CHECK_MSG(r.status == 400 && has(&r, "image 0"), "garbage: %d %s", r.status, r.body);
    response_free(&r);
    REQUIRE(post(port, "/v1/recognize", "text/plain", garbage, sizeof garbage, &r) == 0);
    CHECK_MSG(r.status == 415 && has(&r, "UNSUPPORTED_MEDIA_TYPE"), "%d %s", r.status, r.body);
    response_free(&r);
    REQUIRE(post(port, "/v1/recognize", NULL, garbage, sizeof garbage, &r) == 0);
    CHECK_INT_EQ(r.status, 415);
    response_free(&r);
    static const char huge[] = "P5\n100000 100000\n255\n\x01\x02\x03";
    REQUIRE(post(port, "/v1/recognize", "image/x-portable-graymap", huge, sizeof huge - 1,
                 &r) == 0);
    CHECK_MSG(r.status == 400 && has(&r, "limit"), "absurd size: %d %s", r.status, r.body);
    response_free(&r);
    /* over the frame cap: refused with the JSON error every other status
     * has (evhttp reads up to twice the cap for that) */
    char *big = calloc(1, 3 * MAX_FRAME);
    REQUIRE(big);
    REQUIRE(post(port, "/v1/recognize", "image/png", big, MAX_FRAME + 100, &r) == 0);
    CHECK_MSG(r.status == 413 && has(&r, "\"code\":\"RESOURCE_EXHAUSTED\"") &&
              has(&r, "exceeds the limit of 262144 (max_frame_bytes)") &&
              strstr(r.head, "application/json"), "over the cap: %d %s", r.status, r.body);
    response_free(&r);
    /* past twice the cap: evhttp refuses by Content-Length, before the body */
    REQUIRE(post(port, "/v1/recognize", "image/png", big, 3 * MAX_FRAME, &r) == 0);
    CHECK_INT_EQ(r.status, 413);
    response_free(&r);
    free(big);
    expect_seven(port, "bad input");
}

/* Clients of bodies of many images, gone while those are parsed or
 * decoded (the call owns its body: nothing read after it is freed); run
 * while http_check_slow_clients' stalled client waits. */
static void gone_with_many_images(int port)
{
    static const char bd[] = "nc-gone-x1";
    enum { PARTS = 32 };
    size_t cap = PARTS * (pgm7_len + 160) + 64, len = 0;
    char *body = malloc(cap);
    REQUIRE(body);
    for (int p = 0; p < PARTS; p++) {
        len += (size_t)sprintf(body + len, "--%s\r\nContent-Disposition: form-data; "
                               "name=\"image\"; filename=\"%d.pgm\"\r\n\r\n", bd, p);
        memcpy(body + len, pgm7, pgm7_len);
        len += pgm7_len;
        memcpy(body + len, "\r\n", 2);
        len += 2;
    }
    len += (size_t)sprintf(body + len, "--%s--\r\n", bd);
    char head[256];
    int hn = snprintf(head, sizeof head, "POST /v1/recognize HTTP/1.1\r\nHost: x\r\n"
                      "Content-Type: multipart/form-data; boundary=%s\r\n"
                      "Content-Length: %zu\r\n\r\n", bd, len);
    for (int i = 0; i < 16; i++) {
        int fd = nc_connect_tcp(port);
        if (fd < 0)
            continue;
        CHECK(!nc_send_all(fd, head, (size_t)hn) && !nc_send_all(fd, body, len));
        close(fd);
    }
    free(body);
    expect_seven(port, "clients of many images gone");
}

/* The seven's slow clients (http_slow_checks.h), and those of many images. */
static void test_slow_clients(int port)
{
    http_case c = seven_case();
    http_check_slow_clients(port, &c, gone_with_many_images);
}

static void test_keep_alive_and_methods(int port)
{
    int fd = nc_connect_tcp(port);
    REQUIRE(fd >= 0);
    char head[256];
    int n = snprintf(head, sizeof head, "POST /v1/recognize HTTP/1.1\r\nHost: x\r\n"
                     "Content-Type: image/x-portable-graymap\r\nContent-Length: %zu\r\n\r\n",
                     pgm7_len);
    for (int i = 0; i < 3; i++) {
        response r;
        CHECK(!nc_send_all(fd, head, (size_t)n) && !nc_send_all(fd, pgm7, pgm7_len));
        REQUIRE(read_response(fd, &r) == 0);
        CHECK_MSG(r.status == 200 && has(&r, "\"text\":\"7\""), "keep-alive %d: %d", i, r.status);
        response_free(&r);
    }
    close(fd);
    response r;
    REQUIRE(http(port, "GET", "/v1/recognize", NULL, NULL, 0, &r) == 0);
    CHECK_MSG(r.status == 405 && strstr(r.head, "Allow: POST") && has(&r, "METHOD_NOT_ALLOWED"),
              "%d %s", r.status, r.head);
    response_free(&r);
    REQUIRE(post(port, "/metrics", "text/plain", "x", 1, &r) == 0);
    CHECK_INT_EQ(r.status, 405);
    response_free(&r);
    REQUIRE(http(port, "DELETE", "/v2/models/cnn", NULL, NULL, 0, &r) == 0);
    CHECK_INT_EQ(r.status, 405);
    response_free(&r);
    REQUIRE(http(port, "OPTIONS", "/v1/recognize", NULL, NULL, 0, &r) == 0);
    CHECK_INT_EQ(r.status, 405);        /* no CORS configured: no preflight */
    response_free(&r);
    REQUIRE(http(port, "GET", "/nowhere", NULL, NULL, 0, &r) == 0);
    CHECK_MSG(r.status == 404 && has(&r, "NOT_FOUND"), "%d", r.status);
    response_free(&r);
}

/* ---- a full queue and a passed deadline, on a daemon of their own --------------------- */

/* A multipart body of 4 of heavy_png's large PNGs of a seven. */
static char *heavy_body(size_t *len, char *ctype, size_t ctype_cap)
{
    enum { PARTS = 4 };
    static const char bd[] = "nc-heavy-x1";
    size_t png_len = 0;
    uint8_t *png = heavy_png(&png_len);
    if (!png)
        return NULL;
    size_t cap = PARTS * (png_len + 160) + 64, n = 0;
    char *body = malloc(cap);
    for (int p = 0; body && p < PARTS; p++) {
        n += (size_t)sprintf(body + n, "--%s\r\nContent-Disposition: form-data; name=\"image\"; "
                             "filename=\"%d.png\"\r\nContent-Type: image/png\r\n\r\n", bd, p);
        memcpy(body + n, png, png_len);
        n += png_len;
        memcpy(body + n, "\r\n", 2);
        n += 2;
    }
    if (body)
        n += (size_t)sprintf(body + n, "--%s--\r\n", bd);
    free(png);
    snprintf(ctype, ctype_cap, "multipart/form-data; boundary=%s", bd);
    *len = n;
    return body;
}

/* The twins of the socket path's full queue (RESOURCE_EXHAUSTED) and
 * expired deadline (DEADLINE_EXCEEDED): one worker and a queue of 4
 * images, heavy requests sent back to back on their own connections. */
static void test_queue_full_and_deadline(const char *bin, const char *cnn)
{
    char dir[] = "/tmp/nc-http-busy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const char *args[] = { "--models", dir, "--cnn-model", cnn, "--gpus", "0",
                           "--listen-unix", "none", "--workers", "1",
                           "--queue-capacity", "4", "--max-images-per-request", "4",
                           "--log-level", "4", NULL };
    nc_daemon d;
    REQUIRE(nc_daemon_start(&d, bin, dir, 1, args) == 0);
    char ctype[128];
    size_t len = 0;
    char *body = heavy_body(&len, ctype, sizeof ctype);
    REQUIRE(body);

    /* the twin of "expired deadline": 4 large images cannot be read within 1 ms */
    response r;
    REQUIRE(post(d.http_port, "/v1/recognize?deadline_ms=1", ctype, body, len, &r) == 0);
    CHECK_MSG(r.status == 504 && has(&r, "\"code\":\"DEADLINE_EXCEEDED\"") &&
              has(&r, "deadline exceeded") && strstr(r.head, "application/json"),
              "deadline_ms=1: %d %s", r.status, r.body);
    response_free(&r);
    expect_seven(d.http_port, "a passed deadline");

    /* the twin of the full queue: while the worker reads one request and
     * the next waits, the ones after are refused as busy, not lost */
    enum { N_FULL = 16 };
    int fds[N_FULL];
    char head[256];
    int hn = snprintf(head, sizeof head, "POST /v1/recognize HTTP/1.1\r\nHost: x\r\n"
                      "Content-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                      ctype, len);
    for (int i = 0; i < N_FULL; i++) {
        fds[i] = nc_connect_tcp(d.http_port);
        CHECK(fds[i] >= 0 && !nc_send_all(fds[i], head, (size_t)hn) &&
              !nc_send_all(fds[i], body, len));
    }
    int ok = 0, full = 0;
    for (int i = 0; i < N_FULL; i++) {
        if (fds[i] < 0 || read_response(fds[i], &r)) {
            CHECK_MSG(0, "full queue: request %d unanswered", i);
        } else if (r.status == 200 && has(&r, "\"text\":\"7\"")) {
            ok++;
        } else if (r.status == 429) {
            CHECK_MSG(strstr(r.head, "\r\nRetry-After: 1") &&
                      strstr(r.head, "application/json") &&
                      has(&r, "\"code\":\"RESOURCE_EXHAUSTED\"") && has(&r, "queue full"),
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
    CHECK_INT_EQ(nc_daemon_stop(&d, 30000), 0);
    rmdir(dir);
}

/* ---- CORS and drain, on a daemon of their own ------------------------------------------ */

static void test_cors_and_drain(const char *bin, const char *const *base_args)
{
    const char *args[32];
    int n = 0;
    for (; base_args[n]; n++)
        args[n] = base_args[n];
    args[n++] = "--http-cors-origin";
    args[n++] = "https://example.org";
    args[n] = NULL;
    char dir[] = "/tmp/nc-http-cors-XXXXXX";
    REQUIRE(mkdtemp(dir));
    nc_daemon d;
    REQUIRE(nc_daemon_start(&d, bin, dir, 1, args) == 0);
    response r;
    REQUIRE(http(d.http_port, "OPTIONS", "/v1/recognize",
                 "Origin: https://example.org\r\nAccess-Control-Request-Method: POST\r\n", NULL, 0,
                 &r) == 0);
    CHECK_MSG(r.status == 204 && strstr(r.head, "Access-Control-Allow-Origin: https://example.org")
              && strstr(r.head, "Access-Control-Allow-Methods:"), "%d %s", r.status, r.head);
    response_free(&r);
    REQUIRE(post(d.http_port, "/v1/recognize", "image/x-portable-graymap", pgm7, pgm7_len,
                 &r) == 0);
    CHECK_MSG(r.status == 200 && strstr(r.head, "Access-Control-Allow-Origin: https://example.org"),
              "%d %s", r.status, r.head);
    response_free(&r);

    /* Draining: an HTTP request is refused. */
    int held;
    http_begin_drain(&d, &held);
    if (held < 0)
        return;
    REQUIRE(post(d.http_port, "/v1/recognize", "image/x-portable-graymap", pgm7, pgm7_len,
                 &r) == 0);
    CHECK_MSG(r.status == 503 && has(&r, "draining"), "%d %s", r.status, r.body);
    response_free(&r);
    close(held);
    /* The last connection gone, the drain ends and the daemon exits 0 by
     * itself; a second SIGTERM (nc_daemon_stop's) before it has seen the
     * close would cut the drain short with exit 1. */
    CHECK_INT_EQ(nc_daemon_wait_exit(&d, 30000), 0);
    nc_daemon_stop(&d, 1000);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    http_test_daemon t;
    int status = http_test_start(&t, argc, argv, "test_http_api", "/tmp/nc-http-XXXXXX");
    if (status)
        return status;
    test_v1_bodies(t.d.http_port);
    test_v1_multipart(t.d.http_port);
    test_v1_json(t.d.http_port);
    test_v1_query(t.d.http_port);
    test_bad_input(t.d.http_port);
    test_slow_clients(t.d.http_port);
    test_keep_alive_and_methods(t.d.http_port);
    CHECK_INT_EQ(nc_daemon_stop(&t.d, 30000), 0);
    test_cors_and_drain(argv[1], t.args);
    test_queue_full_and_deadline(argv[1], t.cnn);
    rmdir(t.dir);
    free_samples();
    return nc_test_finish();
}

/* tests/daemon/http_slow_checks.h — the checks test_http_api (/v1) and
 * test_http_v2 (/v2) share: the daemon they both start, an answer the
 * daemon must go on giving, the slow clients of the socket path as HTTP
 * sends them, and the start of a drain.
 *
 * A header of static functions, not a .c compiled once: tests/test.h
 * keeps its check counts in static variables, one set per translation
 * unit, so a check must be compiled into the test program that counts it
 * (http_client.c, shared as an object, asserts nothing for that reason).
 * Include it after test.h, harness.h and http_client.h. */
#ifndef NC_TEST_HTTP_SLOW_CHECKS_H
#define NC_TEST_HTTP_SLOW_CHECKS_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "http_client.h"
#include "test.h"

/* One request (POST path with Content-Type ctype and body) and the answer
 * it must get: status, with fragment in its body. */
typedef struct http_case {
    const char *path;
    const char *ctype;
    const void *body;
    size_t len;
    int status;
    const char *fragment;
    /* the byte-at-a-time client asks for Connection: close (test_http_api's
     * does; test_http_v2's stays kept alive) */
    int slow_close;
} http_case;

/* The daemon still answers c as it should, after what `after` names. */
static void http_expect_answer(int port, const http_case *c, const char *after)
{
    response r;
    int err = post(port, c->path, c->ctype, c->body, c->len, &r);
    CHECK_MSG(!err && r.status == c->status && has(&r, c->fragment), "after %s: %d", after,
              err ? -1 : r.status);
    response_free(&r);
}

/* A client that sends half of c's body and stalls, one that hangs up half
 * way, ones that hang up before their answers: the others are served.
 * while_stalled (NULL: none) runs with the stalled client still there.
 * Then the socket path's slow client: one byte at a time, answered; its
 * stalled frame, a body that stops half way, dropped after
 * frame_timeout_ms without an answer (evhttp has no way to send one); and
 * its oversized frame header, a Content-Length far past the cap and no
 * body, dropped as a stall is. */
static void http_check_slow_clients(int port, const http_case *c,
                                    void (*while_stalled)(int port))
{
    char head[320];
    int n = post_head(head, sizeof head, c->path, c->ctype, c->len);
    REQUIRE(n > 0);
    int stalled = nc_connect_tcp(port), cut = nc_connect_tcp(port);
    REQUIRE(stalled >= 0 && cut >= 0);
    CHECK(!nc_send_all(stalled, head, (size_t)n) && !nc_send_all(stalled, c->body, c->len / 2));
    CHECK(!nc_send_all(cut, head, (size_t)n) && !nc_send_all(cut, c->body, c->len / 2));
    http_expect_answer(port, c, "a stalled body");
    close(cut);
    http_expect_answer(port, c, "a half-sent body");
    /* whole requests whose clients leave before the answer */
    for (int i = 0; i < 8; i++) {
        int fd = nc_connect_tcp(port);
        if (fd < 0)
            continue;
        CHECK(!nc_send_all(fd, head, (size_t)n) && !nc_send_all(fd, c->body, c->len));
        close(fd);
    }
    http_expect_answer(port, c, "clients gone before their answers");
    if (while_stalled)
        while_stalled(port);
    close(stalled);
    http_expect_answer(port, c, "the stalled client left");

    n = snprintf(head, sizeof head, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n"
                 "Content-Length: %zu\r\n%s\r\n", c->path, c->ctype, c->len,
                 c->slow_close ? "Connection: close\r\n" : "");
    REQUIRE(n > 0 && (size_t)n < sizeof head);
    int slow = nc_connect_tcp(port);
    REQUIRE(slow >= 0);
    response r;
    CHECK(!send_slowly(slow, head, (size_t)n) && !send_slowly(slow, c->body, c->len));
    CHECK_MSG(!read_response(slow, &r) && r.status == c->status && has(&r, c->fragment),
              "one byte at a time: %d %s", r.status, r.body ? r.body : "");
    response_free(&r);
    close(slow);
    stalled = nc_connect_tcp(port);
    REQUIRE(stalled >= 0);
    CHECK(!nc_send_all(stalled, head, (size_t)n) && !nc_send_all(stalled, c->body, c->len / 2));
    CHECK_MSG(closed_without_answer(stalled), "a stalled body was not closed");
    close(stalled);
    http_expect_answer(port, c, "a stalled body timed out");
    int huge = nc_connect_tcp(port);
    REQUIRE(huge >= 0);
    n = post_head(head, sizeof head, c->path, c->ctype, 2147483647);
    CHECK(n > 0 && !nc_send_all(huge, head, (size_t)n));
    CHECK_MSG(closed_without_answer(huge), "an announced body past the cap was not dropped");
    close(huge);
    http_expect_answer(port, c, "an announced body past the cap");
}

/* SIGTERM while an idle protocol connection keeps the daemon in its drain
 * for a grace period; back once /readyz says it drains.  *held: that
 * connection, for the caller to close when done (the drain then ends and
 * the daemon exits 0 by itself), or -1 when it could not be made. */
static void http_begin_drain(const nc_daemon *d, int *held)
{
    *held = nc_connect_tcp(d->port);
    REQUIRE(*held >= 0);
    CHECK(kill(d->pid, SIGTERM) == 0);
    int draining = 0;
    for (int i = 0; i < 200 && !draining; i++) {
        char *ready = nc_http_get(d->http_port, "/readyz");
        draining = ready && strstr(ready, "draining");
        free(ready);
        if (!draining)
            nc_sleep_ms(5);
    }
    CHECK(draining);
}

/* What main starts with in both programs: the daemon argv[1] on an empty
 * models folder (made from dir_template) with the CNN by name, so that the
 * neocognitron stays unloaded (and the start fast), frames capped at
 * NC_HTTP_TEST_MAX_FRAME and stalled after 1 s; args stays valid for
 * daemons of the tests' own. */
typedef struct http_test_daemon {
    char cnn[1024];
    char dir[64];
    char frame[32];
    const char *args[16];
    nc_daemon d;
} http_test_daemon;

/* 0, or the status main returns (with a message). */
static int http_test_start(http_test_daemon *t, int argc, char **argv, const char *prog,
                           const char *dir_template)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s NEOCOGD\n", prog);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (load_samples())
        return 1;
    nc_test_model_path("cnn-column.ncm", t->cnn, sizeof t->cnn);
    snprintf(t->dir, sizeof t->dir, "%s", dir_template);
    if (!mkdtemp(t->dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(t->frame, sizeof t->frame, "%d", NC_HTTP_TEST_MAX_FRAME);
    const char *args[] = { "--models", t->dir, "--cnn-model", t->cnn, "--gpus", "0",
                           "--listen-unix", "none", "--max-frame-bytes", t->frame,
                           "--frame-timeout-ms", "1000", "--log-level", "4", NULL };
    _Static_assert(sizeof args <= sizeof t->args, "http_test_daemon.args too short");
    memcpy(t->args, args, sizeof args);
    if (nc_daemon_start(&t->d, argv[1], t->dir, 1, t->args)) {
        fprintf(stderr, "neocogd did not start\n");
        return 1;
    }
    return 0;
}

#endif

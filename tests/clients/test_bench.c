/* tests/clients/test_bench.c — `neocog bench` counts exactly: sent,
 * answered, refused by code, and lost.
 *
 * A scripted fake daemon on a Unix socket reads the four requests of a
 * closed loop of concurrency 4 on one connection, answers three of them in
 * one write (OK, UNAVAILABLE, RESOURCE_EXHAUSTED) and hangs up.  The bench
 * then holds replies that arrived before the hang-up: they are answers, not
 * losses.  Its JSON must say 3 answered, one refusal of each code, and
 * requests = answered + lost (a request it wrote after the replies landed,
 * before the hang-up, is lost too).
 *
 * argv: NEOCOG. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "frame.h"
#include "message.h"
#include "run_capture.h"
#include "test.h"

#define S(p) ((p) ? (p) : "")

typedef struct fake {
    int listen_fd;
    int n_read;                 /* requests read before hanging up */
} fake;

/* Read one Request frame off fd: its id, or -1. */
static long long read_request(int fd, nc_frame_decoder *dec, uint8_t *buf, size_t *have,
                              size_t *pos)
{
    for (;;) {
        if (*pos == *have) {
            ssize_t n = read(fd, buf, 4096);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return -1;
            *have = (size_t)n;
            *pos = 0;
        }
        size_t used;
        int r = nc_frame_decoder_feed(dec, buf + *pos, *have - *pos, &used);
        *pos += used;
        if (r < 0)
            return -1;
        if (r == 1) {
            const uint8_t *p;
            size_t len;
            nc_frame_decoder_payload(dec, &p, &len);
            nc_msg *m;
            if (nc_msg_unpack(&neocog__request__descriptor, p, len, 0, &m) < 0)
                return -1;
            long long id = (long long)nc_msg_request(m)->id;
            nc_msg_free(m);
            return id;
        }
    }
}

static void *serve(void *arg)
{
    fake *f = arg;
    int fd = accept(f->listen_fd, NULL, NULL);
    if (fd < 0)
        return NULL;
    nc_frame_decoder dec;
    nc_frame_decoder_init(&dec, 0);
    static uint8_t buf[4096];
    size_t have = 0, pos = 0;
    long long ids[4];
    for (; f->n_read < 4; f->n_read++)
        if ((ids[f->n_read] = read_request(fd, &dec, buf, &have, &pos)) < 0)
            break;
    if (f->n_read == 4) {
        static const int codes[3] = { NEOCOG__CODE__OK, NEOCOG__CODE__UNAVAILABLE,
                                      NEOCOG__CODE__RESOURCE_EXHAUSTED };
        uint8_t out[4096];
        size_t n = 0;
        for (int k = 0; k < 3; k++) {
            Neocog__Reply rp = NEOCOG__REPLY__INIT;
            rp.id = (uint64_t)ids[k];
            rp.code = codes[k];
            rp.message = (char *)(k ? "refused" : "");
            /* the OK reply's server time and its parts, which bench reports */
            Neocog__Timing tm = NEOCOG__TIMING__INIT;
            tm.queue_us = 300;
            tm.prepare_us = 120;
            tm.forward_us = 500;
            tm.compute_us = 620;
            tm.total_us = 1000;
            if (k == 0)
                rp.timing = &tm;
            uint8_t *fr;
            size_t len;
            if (nc_msg_frame(&rp.base, 0, &fr, &len) < 0 || n + len > sizeof out)
                abort();
            memcpy(out + n, fr, len);
            n += len;
            free(fr);
        }
        /* One write, then the hang-up. */
        if (write(fd, out, n) != (ssize_t)n)
            f->n_read = -1;
    }
    close(fd);
    nc_frame_decoder_fini(&dec);
    return NULL;
}

/* The unsigned number after "key": in JSON text, or -1. */
static long long json_num(const char *js, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = js ? strstr(js, pat) : NULL;
    return at ? strtoll(at + strlen(pat), NULL, 10) : -1;
}

/* The number after "field": inside the object "obj": {...} of JSON text, or -1. */
static double json_field(const char *js, const char *obj, const char *field)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":{", obj);
    const char *at = js ? strstr(js, pat) : NULL;
    const char *end = at ? strchr(at, '}') : NULL;
    snprintf(pat, sizeof pat, "\"%s\":", field);
    const char *f = at ? strstr(at, pat) : NULL;
    return f && f < end ? strtod(f + strlen(pat), NULL) : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_bench NEOCOG\n");
        return 2;
    }
    const char *td = getenv("NC_TEST_DATA");
    char idx[4200];
    snprintf(idx, sizeof idx, "%s/mnist-t1k-images-idx3-ubyte.gz", td ? td : "tests/data");
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "/tmp/nc-bench-test-%d.sock", (int)getpid());
    unlink(sa.sun_path);
    fake f = { .listen_fd = socket(AF_UNIX, SOCK_STREAM, 0) };
    if (f.listen_fd < 0 || bind(f.listen_fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        listen(f.listen_fd, 4) < 0) {
        fprintf(stderr, "cannot listen on %s: %s\n", sa.sun_path, strerror(errno));
        return 1;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, serve, &f)) {
        fprintf(stderr, "cannot start the fake daemon\n");
        return 1;
    }
    char server[sizeof sa.sun_path + 8];
    snprintf(server, sizeof server, "unix:%s", sa.sun_path);
    const char *args[] = { argv[1], "--server", server, "--timeout", "10000", "bench",
                           "--idx", idx, "--concurrency", "4", "--connections", "1",
                           "--requests", "100", "--format", "json", NULL };
    char *out = NULL;
    int rc = nc_run_capture(args, NULL, &out);
    pthread_join(th, NULL);
    close(f.listen_fd);
    unlink(sa.sun_path);

    CHECK_INT_EQ(f.n_read, 4);
    CHECK_MSG(rc == 1, "bench exit status %d (want 1: errors and a lost connection)", rc);
    long long sent = json_num(out, "requests"), answered = json_num(out, "answered");
    long long lost = json_num(out, "no_reply");
    CHECK_MSG(answered == 3, "answered %lld, want 3: %s", answered, S(out));
    CHECK_MSG(json_num(out, "UNAVAILABLE") == 1 && json_num(out, "RESOURCE_EXHAUSTED") == 1,
              "one refusal of each code: %s", S(out));
    CHECK_MSG(json_num(out, "errors") == 2 + lost, "errors = refusals + lost: %s", S(out));
    CHECK_MSG(lost >= 1 && sent >= 4 && sent == answered + lost,
              "sent %lld = answered %lld + lost %lld: %s", sent, answered, lost, S(out));
    /* one OK reply carried a Timing: each of its parts is its own row
     * (the histograms resolve 0.2 %) */
    static const struct { const char *row; double us; } parts[] = {
        { "server_us", 1000 }, { "queue_us", 300 }, { "prepare_us", 120 },
        { "forward_us", 500 } };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const double p50 = json_field(out, parts[i].row, "p50");
        CHECK_MSG(p50 > parts[i].us * 0.995 && p50 < parts[i].us * 1.005,
                  "%s p50 %.1f, want %.0f: %s", parts[i].row, p50, parts[i].us, S(out));
    }
    CHECK_MSG(json_field(out, "latency_us", "p50") > 0, "the request latency: %s", S(out));
    CHECK_MSG(json_num(out, "images") == 0, "images of an OK reply without results: %s",
              S(out));
    free(out);
    return nc_test_finish();
}

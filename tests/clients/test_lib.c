/* tests/clients/test_lib.c — libneocog against a scripted fake daemon on a
 * socketpair: replies out of order and dribbled one byte at a time, the
 * pipelining window, a request larger than the socket buffer, a timeout
 * that leaves the connection usable, signals interrupting waits, and the
 * ways a daemon can hang up (mid-frame, between replies, after a
 * framing-error reply). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "message.h"
#include "neocog_client.h"
#include "test.h"

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* The fake daemon's side: read whole Request frames off fd. */
typedef struct fake {
    int fd;
    nc_frame_decoder dec;
    uint8_t pending[1 << 16];
    size_t have, pos;
} fake;

static nc_msg *fake_read(fake *f)
{
    for (;;) {
        if (f->pos == f->have) {
            ssize_t n = read(f->fd, f->pending, sizeof f->pending);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return NULL;
            f->have = (size_t)n;
            f->pos = 0;
        }
        size_t used;
        int r = nc_frame_decoder_feed(&f->dec, f->pending + f->pos, f->have - f->pos, &used);
        f->pos += used;
        if (r < 0)
            return NULL;
        if (r == 1) {
            const uint8_t *p;
            size_t len;
            nc_frame_decoder_payload(&f->dec, &p, &len);
            nc_msg *m;
            if (nc_msg_unpack(&neocog__request__descriptor, p, len, 0, &m) < 0)
                return NULL;
            return m;
        }
    }
}

/* A recognise reply for id whose one result's label is `label`, framed. */
static void reply_frame(uint64_t id, int code, int label, const char *message,
                        uint8_t **ret, size_t *ret_len)
{
    Neocog__Reply rp = NEOCOG__REPLY__INIT;
    Neocog__RecognizeReply rr = NEOCOG__RECOGNIZE_REPLY__INIT;
    Neocog__Result res = NEOCOG__RESULT__INIT;
    Neocog__Result *resp = &res;
    char text[16];
    snprintf(text, sizeof text, "%d", label);
    res.label = label;
    res.text = text;
    res.confidence = 0.5f;
    rr.n_results = 1;
    rr.results = &resp;
    rr.model = (char *)"cnn";
    rp.id = id;
    rp.code = code;
    rp.message = (char *)(message ? message : "");
    rp.kind_case = NEOCOG__REPLY__KIND_RECOGNIZE;
    rp.recognize = &rr;
    if (nc_msg_frame(&rp.base, 0, ret, ret_len) < 0)
        abort();
}

static void write_all(int fd, const uint8_t *p, size_t n, int bytewise)
{
    for (size_t i = 0; i < n;) {
        ssize_t w = write(fd, p + i, bytewise ? 1 : n - i);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        i += (size_t)w;
    }
}

/* ---- scenario 1: out of order, byte by byte, window -------------------------- */

static void *serve_reversed(void *arg)
{
    fake *f = arg;
    nc_msg *reqs[8];
    int n = 0;
    while (n < 8 && (reqs[n] = fake_read(f)))
        n++;
    /* Answer the last first, one byte per write: the client sees every
     * possible split of header and payload. */
    for (int i = n - 1; i >= 0; i--) {
        const Neocog__Request *rq = nc_msg_request(reqs[i]);
        int label = (int)rq->recognize->images[0]->data.data[0];
        uint8_t *fr;
        size_t len;
        reply_frame(rq->id, 0, label, NULL, &fr, &len);
        write_all(f->fd, fr, len, 1);
        free(fr);
        nc_msg_free(reqs[i]);
    }
    return NULL;
}

static int make_pair(fake *f, nc_client **cl, const nc_client_options *o)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        return -1;
    memset(f, 0, sizeof *f);
    f->fd = sv[1];
    nc_frame_decoder_init(&f->dec, 0);
    return nc_client_from_fd(sv[0], o, cl);
}

static void fake_close(fake *f)
{
    close(f->fd);
    nc_frame_decoder_fini(&f->dec);
}

static void test_pipelined(void)
{
    fake f;
    nc_client *cl;
    nc_client_options o = { .max_in_flight = 8, .timeout_ms = 10000 };
    REQUIRE(make_pair(&f, &cl, &o) == 0);
    pthread_t th;
    pthread_create(&th, NULL, serve_reversed, &f);
    uint64_t ids[8];
    for (int i = 0; i < 8; i++) {
        uint8_t px = (uint8_t)i;
        nc_client_image im = { .format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY, .data = &px,
                               .len = 1, .width = 1, .height = 1 };
        CHECK_INT_EQ(nc_client_send_recognize(cl, NULL, &im, 1, &ids[i]), 0);
    }
    CHECK_INT_EQ(nc_client_in_flight(cl), 8);
    /* The window is full: a ninth is refused without being sent. */
    nc_client_image im = { .format = NEOCOG__IMAGE_FORMAT__FORMAT_AUTO, .data = (const uint8_t *)"x",
                           .len = 1 };
    uint64_t id9;
    CHECK_INT_EQ(nc_client_send_recognize(cl, NULL, &im, 1, &id9), -EAGAIN);
    /* Ask for the first request's reply: it comes last; the seven before it
     * are kept, not lost. */
    nc_msg *m;
    REQUIRE(nc_client_receive_id(cl, ids[0], 10000, &m) == 0);
    CHECK(nc_msg_reply(m)->id == ids[0]);
    CHECK_INT_EQ(nc_msg_reply(m)->recognize->results[0]->label, 0);
    nc_msg_free(m);
    CHECK_INT_EQ(nc_client_in_flight(cl), 7);
    CHECK_INT_EQ(nc_client_receive_id(cl, ids[0], 0, &m), -ENOENT);
    int seen[8] = { 1 };
    for (int k = 0; k < 7; k++) {
        REQUIRE(nc_client_receive(cl, 0, &m) == 0);    /* all arrived already */
        const Neocog__Reply *rp = nc_msg_reply(m);
        int i = -1;
        for (int j = 0; j < 8; j++)
            if (ids[j] == rp->id)
                i = j;
        CHECK_MSG(i >= 0 && !seen[i], "reply id %llu", (unsigned long long)rp->id);
        if (i >= 0) {
            seen[i] = 1;
            CHECK_INT_EQ(rp->recognize->results[0]->label, i);   /* matched by id */
        }
        nc_msg_free(m);
    }
    CHECK_INT_EQ(nc_client_in_flight(cl), 0);
    CHECK_INT_EQ(nc_client_receive(cl, 0, &m), -ENOENT);
    pthread_join(th, NULL);
    nc_client_free(cl);
    fake_close(&f);
}

/* ---- scenario 2: a request bigger than the socket buffer, read slowly ------- */

static void *serve_slow_big(void *arg)
{
    fake *f = arg;
    /* Let the client fill the socket buffer and wait in poll first. */
    sleep_ms(50);
    nc_msg *m = fake_read(f);
    if (!m)
        return NULL;
    const Neocog__Request *rq = nc_msg_request(m);
    size_t len = rq->recognize->images[0]->data.len;
    uint8_t *fr;
    size_t flen;
    reply_frame(rq->id, 0, (int)(len >> 16), NULL, &fr, &flen);
    write_all(f->fd, fr, flen, 0);
    free(fr);
    nc_msg_free(m);
    return NULL;
}

static void test_big_request(void)
{
    fake f;
    nc_client *cl;
    REQUIRE(make_pair(&f, &cl, NULL) == 0);
    pthread_t th;
    pthread_create(&th, NULL, serve_slow_big, &f);
    size_t big = 3u << 20;
    uint8_t *px = calloc(1, big);
    REQUIRE(px);
    nc_client_image im = { .format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY, .data = px,
                           .len = big, .width = 2048, .height = 1536 };
    nc_msg *m;
    CHECK_INT_EQ(nc_client_recognize(cl, NULL, &im, 1, &m), 0);
    if (m) {
        CHECK_INT_EQ(nc_msg_reply(m)->recognize->results[0]->label, 48);
        nc_msg_free(m);
    }
    /* Above the frame limit: refused before anything is written. */
    nc_client_image huge = im;
    uint8_t *hpx = calloc(1, 5u << 20);
    REQUIRE(hpx);
    huge.data = hpx;
    huge.len = 5u << 20;
    CHECK_INT_EQ(nc_client_recognize(cl, NULL, &huge, 1, &m), -EMSGSIZE);
    CHECK(strstr(nc_client_errmsg(cl), "frame limit") != NULL);
    pthread_join(th, NULL);
    free(px);
    free(hpx);
    nc_client_free(cl);
    fake_close(&f);
}

/* ---- scenario 3: timeouts and signals ---------------------------------------- */

static void on_alarm(int sig)
{
    (void)sig;
}

static void *serve_late(void *arg)
{
    fake *f = arg;
    nc_msg *m = fake_read(f);
    if (!m)
        return NULL;
    sleep_ms(300);
    uint8_t *fr;
    size_t len;
    reply_frame(nc_msg_request(m)->id, 0, 3, NULL, &fr, &len);
    write_all(f->fd, fr, len, 0);
    free(fr);
    nc_msg_free(m);
    return NULL;
}

static void test_timeout_and_eintr(void)
{
    fake f;
    nc_client *cl;
    REQUIRE(make_pair(&f, &cl, NULL) == 0);
    pthread_t th;
    pthread_create(&th, NULL, serve_late, &f);
    /* A signal every 2 ms, without SA_RESTART: poll keeps failing with
     * EINTR, and the library must carry on with the time left. */
    struct sigaction sa = { .sa_handler = on_alarm };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
    setitimer(ITIMER_REAL, &it, NULL);

    uint8_t px = 0;
    nc_client_image im = { .format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY, .data = &px,
                           .len = 1, .width = 1, .height = 1 };
    uint64_t id;
    CHECK_INT_EQ(nc_client_send_recognize(cl, NULL, &im, 1, &id), 0);
    nc_msg *m;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_INT_EQ(nc_client_receive_id(cl, id, 100, &m), -ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    CHECK_MSG(waited >= 95 && waited < 2000, "waited %.1f ms for a 100 ms timeout", waited);
    /* A receive timeout leaves the stream whole: the reply still comes. */
    CHECK_INT_EQ(nc_client_receive_id(cl, id, 5000, &m), 0);
    if (m) {
        CHECK_INT_EQ(nc_msg_reply(m)->recognize->results[0]->label, 3);
        nc_msg_free(m);
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, NULL);
    signal(SIGALRM, SIG_DFL);
    pthread_join(th, NULL);
    nc_client_free(cl);
    fake_close(&f);
}

/* ---- scenario 4: hang-ups ---------------------------------------------------- */

static void *serve_half_then_close(void *arg)
{
    fake *f = arg;
    nc_msg *m = fake_read(f);
    if (!m)
        return NULL;
    uint8_t *fr;
    size_t len;
    reply_frame(nc_msg_request(m)->id, 0, 1, NULL, &fr, &len);
    write_all(f->fd, fr, len / 2, 0);
    shutdown(f->fd, SHUT_RDWR);
    free(fr);
    nc_msg_free(m);
    return NULL;
}

static void *serve_framing_error(void *arg)
{
    fake *f = arg;
    nc_msg *m = fake_read(f);
    /* What neocogd does after a bad header: one reply with id 0, then close. */
    uint8_t *fr;
    size_t len;
    reply_frame(0, NEOCOG__CODE__INVALID_ARGUMENT, 0, "bad frame magic", &fr, &len);
    write_all(f->fd, fr, len, 0);
    shutdown(f->fd, SHUT_RDWR);
    free(fr);
    nc_msg_free(m);
    return NULL;
}

static void *serve_stranger(void *arg)
{
    fake *f = arg;
    nc_msg *m = fake_read(f);
    uint8_t *fr;
    size_t len;
    reply_frame(999, 0, 0, NULL, &fr, &len);     /* an id nobody sent */
    write_all(f->fd, fr, len, 0);
    free(fr);
    nc_msg_free(m);
    return NULL;
}

/* Two requests, the first answered whole, then the daemon hangs up. */
static void *serve_one_then_close(void *arg)
{
    fake *f = arg;
    nc_msg *m1 = fake_read(f), *m2 = m1 ? fake_read(f) : NULL;
    if (m2) {
        uint8_t *fr;
        size_t len;
        reply_frame(nc_msg_request(m1)->id, 0, 4, NULL, &fr, &len);
        write_all(f->fd, fr, len, 0);
        free(fr);
    }
    shutdown(f->fd, SHUT_RDWR);
    nc_msg_free(m1);
    nc_msg_free(m2);
    return NULL;
}

/* A hang-up right after a complete reply is not "in the middle of a reply":
 * the first reply is handed out, the second request fails cleanly. */
static void test_hangup_between_replies(void)
{
    fake f;
    nc_client *cl;
    nc_client_options o = { .max_in_flight = 4, .timeout_ms = 10000 };
    REQUIRE(make_pair(&f, &cl, &o) == 0);
    pthread_t th;
    pthread_create(&th, NULL, serve_one_then_close, &f);
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    Neocog__HealthRequest hr = NEOCOG__HEALTH_REQUEST__INIT;
    rq.kind_case = NEOCOG__REQUEST__KIND_HEALTH;
    rq.health = &hr;
    uint64_t id1 = 0, id2 = 0;
    CHECK_INT_EQ(nc_client_send_request(cl, &rq, &id1), 0);
    CHECK_INT_EQ(nc_client_send_request(cl, &rq, &id2), 0);
    nc_msg *m = NULL;
    CHECK_INT_EQ(nc_client_receive(cl, 10000, &m), 0);
    CHECK(m && nc_msg_reply(m)->id == id1);
    nc_msg_free(m);
    m = NULL;
    CHECK_INT_EQ(nc_client_receive(cl, 10000, &m), -ECONNRESET);
    CHECK_MSG(strstr(nc_client_errmsg(cl), "closed the connection") &&
              !strstr(nc_client_errmsg(cl), "middle"), "message '%s'", nc_client_errmsg(cl));
    CHECK_INT_EQ(nc_client_in_flight(cl), 1);
    pthread_join(th, NULL);
    nc_client_free(cl);
    fake_close(&f);
}

static void hangup_case(void *(*serve)(void *), int want_err, const char *want_msg)
{
    fake f;
    nc_client *cl;
    REQUIRE(make_pair(&f, &cl, NULL) == 0);
    pthread_t th;
    pthread_create(&th, NULL, serve, &f);
    nc_msg *m = NULL;
    CHECK_INT_EQ(nc_client_health(cl, &m), want_err);
    CHECK_MSG(strstr(nc_client_errmsg(cl), want_msg) != NULL, "message '%s', want '%s'",
              nc_client_errmsg(cl), want_msg);
    /* Broken for good: the next call fails the same way at once. */
    CHECK_INT_EQ(nc_client_status(cl, &m), want_err);
    pthread_join(th, NULL);
    nc_client_free(cl);
    fake_close(&f);
}

static void test_hangups(void)
{
    hangup_case(serve_half_then_close, -ECONNRESET, "in the middle of a reply");
    hangup_case(serve_framing_error, -EPROTO, "bad frame magic");
    hangup_case(serve_stranger, -EPROTO, "not outstanding");
    test_hangup_between_replies();

    /* Nobody listening: a clean error and a sentence, no client. */
    char path[64];
    snprintf(path, sizeof path, "unix:/tmp/nc-no-such-%d.sock", (int)getpid());
    nc_client *cl = NULL;
    CHECK_INT_EQ(nc_client_connect(path, NULL, &cl), -ENOENT);
    CHECK(cl == NULL);
    CHECK(strstr(nc_client_errmsg(NULL), "cannot connect") != NULL);
    CHECK_INT_EQ(nc_client_connect("tcp:[::1", NULL, &cl), -EINVAL);
}

int main(void)
{
    /* Writes to a closed peer must be errors, not SIGPIPE: leave the default
     * disposition in place to prove the library does not need it ignored. */
    test_pipelined();
    test_big_request();
    test_timeout_and_eintr();
    test_hangups();
    return nc_test_finish();
}

/* tests/daemon/test_isolation.c — one network's batch never holds up a
 * request for another.
 *
 * Starts the real neocogd (argv[1]) with the shipped CNN and neocognitron on
 * the CPU (--gpus 0), two workers and batches of at most 32 images, so a
 * 64-image neocognitron request fills two batches that run for seconds: the
 * shipped committee without its cascade, twelve passes a digit (the cascade
 * answers most fixture digits from one pass, a few hundred milliseconds for
 * all 64, too short to overlap anything reliably).  A
 * shared pool of workers would give both batches to its two threads and
 * make a one-digit CNN request wait seconds for one of them; each model has
 * its own queue and workers, so the CNN answers within milliseconds, and an
 * ensemble digit (both networks) within its own compute time, while the
 * neocognitron request is still computing.  Then the neocognitron request
 * must come back whole and right, and on the CPU a batch is shared among the
 * idle workers of its model: 32 CNN images with both CNN workers idle ride
 * in batches of 16 or less.  (Under AddressSanitizer: a quarter of each.)  Last,
 * max_queue_delay_us still holds a lone digit back, but not the half of a
 * due batch that a second CPU worker takes. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dataset.h"
#include "fileio.h"
#include "fixture.h"
#include "harness.h"
#include "neocog.h"
#include "test.h"

#define W 28
#define H 28
/* Images of the long neocognitron request, in two batches.  Under
 * AddressSanitizer the neocognitron runs several times slower, so a quarter
 * of them still lasts far longer than the CNN requests. */
#if defined(__SANITIZE_ADDRESS__)
#define N_NEOCOG 16
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define N_NEOCOG 16
#endif
#endif
#ifndef N_NEOCOG
#define N_NEOCOG 64
#endif
#define N_CNN 8             /* one-digit CNN requests sent while it runs */
#define CNN_MAX_US 50000    /* each of them answered within */
#define N_SPLIT (N_NEOCOG / 2)  /* CNN images of the batch-sharing check: one
                                   max_batch, in two halves */

static nc_dataset mnist;

typedef struct req_buf {
    Neocog__Request rq;
    Neocog__RecognizeRequest rr;
    Neocog__Image im[64];
    Neocog__Image *imp[64];
} req_buf;

/* A request for `model` of digits first .. first + n - 1 of the fixture. */
static void req_init(req_buf *b, uint64_t id, Neocog__Model model, uint32_t first, size_t n)
{
    neocog__request__init(&b->rq);
    neocog__recognize_request__init(&b->rr);
    b->rq.id = id;
    b->rq.kind_case = NEOCOG__REQUEST__KIND_RECOGNIZE;
    b->rq.recognize = &b->rr;
    b->rr.model = model;
    b->rr.n_images = n;
    b->rr.images = b->imp;
    for (size_t i = 0; i < n; i++) {
        neocog__image__init(&b->im[i]);
        b->imp[i] = &b->im[i];
        b->im[i].format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY;
        b->im[i].data.data = mnist.pixels + (first + i) * (size_t)W * H;
        b->im[i].data.len = W * H;
        b->im[i].width = W;
        b->im[i].height = H;
    }
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* How many of reply r's n results carry the fixture's label (digits from
 * `first` on); every result must be OK. */
static uint32_t n_right(const char *what, const Neocog__Reply *r, uint32_t first, size_t n)
{
    const Neocog__RecognizeReply *rr = r->recognize;
    CHECK_MSG(r->code == NEOCOG__CODE__OK, "%s: %s '%s'", what, nc_msg_code_name(r->code),
              r->message);
    CHECK_MSG(rr && rr->n_results == n, "%s: %zu results of %zu", what,
              rr ? rr->n_results : 0, n);
    uint32_t right = 0;
    for (size_t i = 0; rr && i < rr->n_results && i < n; i++) {
        CHECK_MSG(rr->results[i]->code == NEOCOG__CODE__OK, "%s image %zu: %s", what, i,
                  rr->results[i]->message);
        right += rr->results[i]->label == mnist.labels[first + i];
    }
    return right;
}

/* 1 when fd has bytes to read (the neocognitron's reply has begun). */
static int readable(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN };
    return poll(&p, 1, 0) > 0;
}

static nc_msg *status_of(const char *sock)
{
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    Neocog__StatusRequest sr = NEOCOG__STATUS_REQUEST__INIT;
    rq.id = 9;
    rq.kind_case = NEOCOG__REQUEST__KIND_STATUS;
    rq.status = &sr;
    int fd = nc_connect_unix(sock);
    nc_msg *m = fd >= 0 ? nc_roundtrip(fd, &rq) : NULL;
    if (fd >= 0)
        close(fd);
    return m;
}

/* The checks on a daemon at sock; nfd carries the neocognitron request,
 * cfd the others. */
static void isolation_on(const char *sock, int nfd, int cfd)
{
    /* The long request, on a connection of its own. */
    static req_buf nb;
    req_init(&nb, 1, NEOCOG__MODEL__MODEL_NEOCOGNITRON, 0, N_NEOCOG);
    const uint64_t t_sent = now_us();
    REQUIRE(nc_send_msg(nfd, &nb.rq.base) == 0);
    nc_sleep_ms(100);      /* its two batches are on the workers by now */

    /* One digit at a time to the CNN, answered at once and right while the
       neocognitron computes: nothing queued (both its batches are on
       workers) and its reply not begun. */
    uint64_t worst = 0;
    for (int k = 0; k < N_CNN; k++) {
        static req_buf cb;
        const uint32_t first = 100 + (uint32_t)k;
        req_init(&cb, 10 + (uint64_t)k, NEOCOG__MODEL__MODEL_CNN, first, 1);
        const uint64_t t0 = now_us();
        nc_msg *m = nc_roundtrip(cfd, &cb.rq);
        const uint64_t us = now_us() - t0;
        CHECK_MSG(m != NULL, "CNN request %d: no reply", k);
        if (m) {
            CHECK_MSG(n_right("CNN request", nc_msg_reply(m), first, 1) == 1,
                      "CNN request %d: digit %u is a %u, answered %d", k, first,
                      mnist.labels[first], nc_msg_reply(m)->recognize &&
                      nc_msg_reply(m)->recognize->n_results
                          ? nc_msg_reply(m)->recognize->results[0]->label : -1);
            CHECK_MSG(us <= CNN_MAX_US, "CNN request %d took %llu us while the "
                      "neocognitron ran (at most %u)", k, (unsigned long long)us, CNN_MAX_US);
        }
        nc_msg_free(m);
        if (us > worst)
            worst = us;
        nc_sleep_ms(20);
    }
    /* The ensemble runs the neocognitron too, but on its own queue: one
       digit is answered (a fraction of a second of the neocognitron on a
       core) before the long request is. */
    static req_buf eb;
    req_init(&eb, 40, NEOCOG__MODEL__MODEL_ENSEMBLE, 300, 1);
    uint64_t t0 = now_us();
    nc_msg *em = nc_roundtrip(cfd, &eb.rq);
    const uint64_t ensemble_us = now_us() - t0;
    CHECK_MSG(em != NULL, "ensemble request: no reply");
    if (em) {
        const Neocog__Reply *r = nc_msg_reply(em);
        CHECK(n_right("ensemble request", r, 300, 1) == 1);
        CHECK_MSG(r->recognize && !strcmp(r->recognize->model, "ensemble"),
                  "ensemble request answered by '%s'", r->recognize ? r->recognize->model : "");
    }
    nc_msg_free(em);

    nc_msg *st = status_of(sock);
    const Neocog__StatusReply *s = st && nc_msg_reply(st)->status ? nc_msg_reply(st)->status
                                                                  : NULL;
    CHECK_MSG(s && s->queue_depth == 0, "neocognitron images still queued: %u",
              s ? s->queue_depth : 0);
    CHECK_MSG(s && s->workers == 2 && s->priority_workers == 1,
              "status: %u workers (+%u)", s ? s->workers : 0, s ? s->priority_workers : 0);
    nc_msg_free(st);
    const int overlapped = !readable(nfd);
    CHECK_MSG(overlapped, "the neocognitron answered %.1f s after it was sent, before the "
              "CNN and ensemble requests were done: they did not overlap it",
              (double)(now_us() - t_sent) / 1e6);
    fprintf(stderr, "%d CNN requests while the neocognitron ran: slowest %llu us; one "
            "ensemble digit: %llu us\n", N_CNN, (unsigned long long)worst,
            (unsigned long long)ensemble_us);

    /* The neocognitron's answer: whole, right (about 97 % of these
       digits), in two batches. */
    nc_msg *m = NULL;
    int err = nc_recv_reply(nfd, 120000, &m);
    CHECK_MSG(err == 0, "neocognitron request: no reply (%d)", err);
    if (!err) {
        const Neocog__Reply *r = nc_msg_reply(m);
        uint32_t right = n_right("neocognitron request", r, 0, N_NEOCOG);
        CHECK_MSG(right >= N_NEOCOG - N_NEOCOG / 16, "neocognitron: %u of %d right", right,
                  N_NEOCOG);
        CHECK_MSG(r->recognize && r->recognize->batch_size == N_NEOCOG / 2,
                  "neocognitron batch of %u", r->recognize ? r->recognize->batch_size : 0);
        fprintf(stderr, "neocognitron: %u of %d right in %.1f s\n", right, N_NEOCOG,
                (double)(now_us() - t_sent) / 1e6);
    }
    nc_msg_free(m);

    /* On the CPU a worker takes only its share of what is queued: with the
       two CNN workers idle, a max_batch of images goes in batches of half
       of it or less, side by side, not in one on one core. */
    nc_sleep_ms(50);       /* both CNN workers back waiting */
    static req_buf sb;
    req_init(&sb, 50, NEOCOG__MODEL__MODEL_CNN, 200, N_SPLIT);
    m = nc_roundtrip(cfd, &sb.rq);
    CHECK_MSG(m != NULL, "CNN batch: no reply");
    if (m) {
        const Neocog__Reply *r = nc_msg_reply(m);
        uint32_t right = n_right("CNN batch", r, 200, N_SPLIT);
        CHECK_MSG(right >= N_SPLIT - 1, "CNN: %u of %d right", right, N_SPLIT);
        /* half or less: a worker done with its half before the other woke
           is idle again and shares what is left */
        CHECK_MSG(r->recognize && r->recognize->batch_size >= 1 &&
                  r->recognize->batch_size <= N_SPLIT / 2,
                  "CNN: %d images with two idle workers rode in a batch of %u, not %d or less",
                  N_SPLIT, r->recognize ? r->recognize->batch_size : 0, N_SPLIT / 2);
    }
    nc_msg_free(m);
}

/* The shipped neocognitron without its cascade, written to path: every
 * member on every view of every digit. */
static int write_without_cascade(const char *path)
{
    char shipped[1024];
    nc_test_model_path("neocognitron.ncm", shipped, sizeof shipped);
    uint8_t *buf = NULL, *full = NULL;
    size_t len = 0, flen = 0;
    const nc_neocog_cascade off = { 0 };
    int err = nc_file_read_model(shipped, 256u << 20, &buf, &len);
    if (!err)
        err = nc_neocog_cascade_rewrite(buf, len, &off, &full, &flen);
    if (!err)
        err = nc_file_write_atomic(path, full, flen);
    free(buf);
    free(full);
    return err;
}

static void test_isolation(const char *bin, const char *dir)
{
    char sock[300], cnn[1024], neocog[1024];
    snprintf(sock, sizeof sock, "%s/iso.sock", dir);
    nc_test_model_path("cnn-column.ncm", cnn, sizeof cnn);
    snprintf(neocog, sizeof neocog, "%s/neocog-no-cascade.ncm", dir);
    REQUIRE(write_without_cascade(neocog) == 0);
    char max_batch[16];
    snprintf(max_batch, sizeof max_batch, "%d", N_NEOCOG / 2);
    const char *args[] = { "--cnn-model", cnn, "--neocog-model", neocog, "--models", dir,
                           "--gpus", "0", "--workers", "2", "--max-batch", max_batch,
                           "--listen-tcp", "none", "--listen-unix", sock, "--http", "none",
                           "--log-level", "4", NULL };
    nc_daemon d;
    REQUIRE(nc_daemon_start(&d, bin, dir, 0, args) == 0);
    int nfd = nc_connect_unix(sock), cfd = nc_connect_unix(sock);
    CHECK_MSG(nfd >= 0 && cfd >= 0, "cannot connect to %s", sock);
    if (nfd >= 0 && cfd >= 0)
        isolation_on(sock, nfd, cfd);
    if (nfd >= 0)
        close(nfd);
    if (cfd >= 0)
        close(cfd);
    CHECK_INT_EQ(nc_daemon_stop(&d, 60000), 0);
    unlink(neocog);         /* the next daemon reads this folder for models too */
}

/* max_queue_delay_us with CPU sharing: a lone digit waits the delay for
 * company; a full batch goes at once, and so does the half of it that a
 * second worker takes (the batch was due, not waiting to fill). */
static void test_delay(const char *bin, const char *dir)
{
    enum { DELAY_US = 1000000, N_FULL = 32 };
    char sock[300], cnn[1024];
    snprintf(sock, sizeof sock, "%s/delay.sock", dir);
    nc_test_model_path("cnn-column.ncm", cnn, sizeof cnn);
    const char *args[] = { "--cnn-model", cnn, "--models", dir, "--gpus", "0",
                           "--workers", "2", "--max-batch", "32",
                           "--max-queue-delay-us", "1000000", "--listen-tcp", "none",
                           "--listen-unix", sock, "--http", "none", "--log-level", "4", NULL };
    nc_daemon d;
    REQUIRE(nc_daemon_start(&d, bin, dir, 0, args) == 0);
    int fd = nc_connect_unix(sock);
    CHECK_MSG(fd >= 0, "cannot connect to %s", sock);
    static req_buf b;
    const size_t sizes[2] = { 1, N_FULL };
    for (int k = 0; fd >= 0 && k < 2; k++) {
        req_init(&b, 60 + (uint64_t)k, NEOCOG__MODEL__MODEL_CNN, 200, sizes[k]);
        const uint64_t t0 = now_us();
        nc_msg *m = nc_roundtrip(fd, &b.rq);
        const uint64_t us = now_us() - t0;
        CHECK_MSG(m != NULL, "delay: no reply to %zu images", sizes[k]);
        if (m) {
            const Neocog__Reply *r = nc_msg_reply(m);
            CHECK(n_right("delay", r, 200, sizes[k]) + 1 >= sizes[k]);
            if (k == 0)
                CHECK_MSG(us >= DELAY_US * 9 / 10, "a lone digit was answered after %llu us, "
                          "before max_queue_delay_us %d", (unsigned long long)us, DELAY_US);
            else
                CHECK_MSG(us < DELAY_US / 2 && r->recognize && r->recognize->batch_size >= 1 &&
                          r->recognize->batch_size <= N_FULL / 2, "a full batch: %llu us, in "
                          "batches of %u (of %d or less at once wanted)", (unsigned long long)us,
                          r->recognize ? r->recognize->batch_size : 0, N_FULL / 2);
        }
        nc_msg_free(m);
        nc_sleep_ms(50);   /* both workers back waiting */
    }
    if (fd >= 0)
        close(fd);
    CHECK_INT_EQ(nc_daemon_stop(&d, 60000), 0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_isolation NEOCOGD\n");
        return 2;
    }
    if (!getenv("NC_TEST_DATA"))
        return NC_TEST_SKIP;
    int err = nc_test_fixture(&mnist);
    if (err || mnist.rows != H || mnist.cols != W || mnist.count < 400 || !mnist.labels) {
        fprintf(stderr, "cannot read the MNIST fixture: %s\n", err ? strerror(-err) : "short");
        return 1;
    }
    char dir[] = "/tmp/neocogd-iso-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "cannot make a temporary folder: %s\n", strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    test_isolation(argv[1], dir);
    test_delay(argv[1], dir);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) { /* best effort */ }
    nc_dataset_fini(&mnist);
    return nc_test_finish();
}

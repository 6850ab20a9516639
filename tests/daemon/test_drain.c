/* tests/daemon/test_drain.c — SIGTERM under closed-loop load loses no
 * request.
 *
 * Starts the real neocogd (argv[1]) on the CPU (--gpus 0) with a small
 * random-weight CNN, opens N_CLIENTS connections, each a thread in a closed
 * loop of one-digit requests (two in flight, raw MNIST digits from the
 * fixture), and sends SIGTERM while they run.  Every request written must
 * get its reply, OK or UNAVAILABLE (the daemon is draining): a reset or an
 * end of stream before a reply is a lost request.  A client stops at its
 * first UNAVAILABLE and closes.  One more connection stays silent all along:
 * it must see an orderly end of stream, and the daemon must still exit 0
 * soon.  A closed connection between a reply and the client's next request
 * is a narrow race, so several rounds with varying timing. */
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

#include "dataset.h"
#include "fixture.h"
#include "harness.h"
#include "test.h"

#define W 28
#define H 28
#define N_CLIENTS 6
#define WINDOW 2            /* requests each client keeps in flight */
#define N_ROUNDS 4
#define EXIT_MS 10000       /* the daemon exits within, after SIGTERM */

static nc_dataset mnist;

typedef struct client {
    pthread_t thread;
    int fd;
    uint32_t index;
    uint64_t sent, ok, unavailable, other;
    int lost;               /* a request written but never answered */
    char why[200];
} client;

/* Request id's digit: the fixture, round robin. */
static int send_digit(int fd, uint64_t id)
{
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    Neocog__RecognizeRequest rr = NEOCOG__RECOGNIZE_REQUEST__INIT;
    Neocog__Image im = NEOCOG__IMAGE__INIT;
    Neocog__Image *imp = &im;
    rq.id = id;
    rq.kind_case = NEOCOG__REQUEST__KIND_RECOGNIZE;
    rq.recognize = &rr;
    rr.model = NEOCOG__MODEL__MODEL_CNN;
    rr.n_images = 1;
    rr.images = &imp;
    im.format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY;
    im.data.data = mnist.pixels + (id % mnist.count) * (size_t)W * H;
    im.data.len = W * H;
    im.width = W;
    im.height = H;
    return nc_send_msg(fd, &rq.base);
}

static void *client_main(void *arg)
{
    client *c = arg;
    uint64_t next = ((uint64_t)c->index + 1) << 32;
    int stop = 0;
    while (!stop) {
        uint64_t ids[WINDOW];
        int n = 0;
        for (; n < WINDOW; n++) {
            ids[n] = next++;
            if (send_digit(c->fd, ids[n]) < 0) {
                /* The daemon closed on us: whatever was written before
                 * still needs its reply, read below. */
                snprintf(c->why, sizeof c->why, "send of request %d of a window failed: %s",
                         n, strerror(errno));
                stop = 1;
                break;
            }
            c->sent++;
        }
        for (int k = 0; k < n; k++) {
            nc_msg *m = NULL;
            int err = nc_recv_reply(c->fd, 10000, &m);
            if (err) {
                c->lost += n - k;
                snprintf(c->why, sizeof c->why, "no reply to %d of %d requests: %s", n - k, n,
                         err == -EPIPE ? "end of stream" : strerror(-err));
                return NULL;
            }
            const Neocog__Reply *r = nc_msg_reply(m);
            int known = 0;
            for (int j = 0; j < n; j++)
                known |= r->id == ids[j];
            if (!known) {
                c->other++;
                snprintf(c->why, sizeof c->why, "reply to id %llu, not sent: %s '%s'",
                         (unsigned long long)r->id, nc_msg_code_name(r->code), r->message);
            } else if (r->code == NEOCOG__CODE__OK) {
                c->ok++;
            } else if (r->code == NEOCOG__CODE__UNAVAILABLE) {
                c->unavailable++;
                stop = 1;
            } else {
                c->other++;
                snprintf(c->why, sizeof c->why, "id %llu: %s '%s'", (unsigned long long)r->id,
                         nc_msg_code_name(r->code), r->message);
            }
            nc_msg_free(m);
        }
    }
    return NULL;
}

static void round_once(const char *bin, const char *dir, const char *model, int round)
{
    nc_daemon d;
    const char *args[] = { "--cnn-model", model, "--models", dir, "--gpus", "0",
                           "--workers", "1", "--log-level", "4", NULL };
    REQUIRE(nc_daemon_start(&d, bin, dir, 1, args) == 0);
    int silent = nc_connect_tcp(d.port);
    CHECK(silent >= 0);
    client cs[N_CLIENTS];
    memset(cs, 0, sizeof cs);
    int started = 0;
    for (; started < N_CLIENTS; started++) {
        client *c = &cs[started];
        c->index = (uint32_t)started;
        c->fd = nc_connect_tcp(d.port);
        if (c->fd < 0 || pthread_create(&c->thread, NULL, client_main, c)) {
            CHECK_MSG(0, "round %d: client %d did not start", round, started);
            if (c->fd >= 0)
                close(c->fd);
            break;
        }
    }
    /* Under way for a while, at a different moment each round. */
    nc_sleep_ms(150 + 70 * round);
    kill(d.pid, SIGTERM);
    uint64_t sent = 0, ok = 0, unavailable = 0;
    for (int i = 0; i < started; i++) {
        client *c = &cs[i];
        pthread_join(c->thread, NULL);
        close(c->fd);
        CHECK_MSG(!c->lost && !c->other, "round %d client %d: %s (%llu sent, %llu OK, "
                  "%llu UNAVAILABLE)", round, i, c->why, (unsigned long long)c->sent,
                  (unsigned long long)c->ok, (unsigned long long)c->unavailable);
        CHECK_MSG((c->unavailable >= 1 && c->unavailable <= WINDOW) || c->lost,
                  "round %d client %d: %llu UNAVAILABLE replies (it stops after its "
                  "window's first)",
                  round, i, (unsigned long long)c->unavailable);
        sent += c->sent;
        ok += c->ok;
        unavailable += c->unavailable;
    }
    CHECK_MSG(ok > 0, "round %d: no request answered before SIGTERM", round);
    fprintf(stderr, "round %d: %llu requests sent, %llu OK, %llu UNAVAILABLE\n", round,
            (unsigned long long)sent, (unsigned long long)ok, (unsigned long long)unavailable);
    if (silent >= 0) {
        /* An end of stream, not a reset: recv returns 0. */
        uint8_t b;
        struct timeval tv = { 5, 0 };
        setsockopt(silent, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        ssize_t n = recv(silent, &b, 1, 0);
        CHECK_MSG(n == 0, "round %d: the silent connection got %zd (%s), not an end of stream",
                  round, n, n < 0 ? strerror(errno) : "a byte");
        close(silent);
    }
    int status = nc_daemon_wait_exit(&d, EXIT_MS);
    nc_daemon_stop(&d, 1000);
    CHECK_MSG(status == 0, "round %d: daemon exit status after drain: %d", round, status);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_drain NEOCOGD\n");
        return 2;
    }
    if (!getenv("NC_TEST_DATA"))
        return NC_TEST_SKIP;
    int err = nc_test_fixture(&mnist);
    if (err || mnist.rows != H || mnist.cols != W || mnist.count == 0) {
        fprintf(stderr, "cannot read the MNIST fixture: %s\n", err ? strerror(-err) : "short");
        return 1;
    }
    char dir[] = "/tmp/neocogd-drain-XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "cannot make a temporary folder: %s\n", strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    char model[300];
    snprintf(model, sizeof model, "%s/cnn-drain.ncm", dir);
    if (nc_make_cnn_model(model, 7) == 0) {
        for (int round = 0; round < N_ROUNDS; round++)
            round_once(argv[1], dir, model, round);
    } else {
        CHECK_MSG(0, "cannot write a model file in %s", dir);
    }
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) { /* best effort */ }
    nc_dataset_fini(&mnist);
    return nc_test_finish();
}

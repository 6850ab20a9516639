/* tests/clients/test_reconnect.c — libneocog's retries against the real
 * neocogd (argv[1]) on a Unix socket of a temporary folder.
 *
 * restart: one client streams requests (a window of 16, each one MNIST
 *   digit from the fixture) while the daemon is stopped with SIGTERM and a
 *   new one is started on the same socket.  The old daemon answers what it
 *   holds and refuses the rest UNAVAILABLE, the socket is gone for a while,
 *   the new daemon loads; the client must hand back every request exactly
 *   once, answered OK with the label core computes for that digit: none
 *   lost, none given up, none answered twice.  The library's counts must
 *   show the fault (a reconnection, resends) and add up.
 * exhausted: a daemon whose queue holds one request's images and waits
 *   20 ms to fill a batch refuses most of a burst RESOURCE_EXHAUSTED.  With
 *   retries every request ends OK; without (max_attempts 1) the refusals
 *   come back as given up, with the daemon's own reply and code; with a
 *   deadline already past, nothing is sent twice.  Counts are exact. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset.h"
#include "fixture.h"
#include "harness.h"
#include "neocog_client.h"
#include "test.h"

#define W 28
#define H 28
#define N_RESTART 600       /* requests streamed at least across the restart */
#define N_MAX 20000         /* and at most, while the restart takes its time */
#define N_AFTER 50          /* requests sent once the new daemon is up */
#define WINDOW 16
#define FAULT_AFTER 150     /* answers before SIGTERM */

static nc_dataset mnist;
static const char *bin;
static char dir[64], sock[128], model[128], addr[160];
static int32_t expect[1000];    /* core's label for each fixture digit */

static const char *const daemon_args[] = {
    "--cnn-model", model, "--models", dir, "--gpus", "0", "--workers", "1",
    "--listen-unix", sock, "--listen-tcp", "none", "--http", "none",
    "--log-level", "4", NULL,
};

static int send_digit(nc_client *c, size_t k, int n_images, uint64_t *id)
{
    nc_client_image im[8];
    for (int i = 0; i < n_images; i++)
        im[i] = (nc_client_image){
            .format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY,
            .data = mnist.pixels + ((k + (size_t)i) % mnist.count) * W * H, .len = W * H,
            .width = W, .height = H,
        };
    nc_client_recognize_opts o = { .model = NEOCOG__MODEL__MODEL_CNN };
    return nc_client_send_recognize(c, &o, im, (size_t)n_images, id);
}

/* ---- restart -------------------------------------------------------------- */

typedef struct fault {
    pthread_t thread;
    nc_daemon *d;
    atomic_int answered, signalled, done;
    int old_exit, restarted;
} fault;

static void *fault_main(void *arg)
{
    fault *f = arg;
    while (atomic_load(&f->answered) < FAULT_AFTER)
        nc_sleep_ms(2);
    kill(f->d->pid, SIGTERM);
    atomic_store(&f->signalled, 1);
    f->old_exit = nc_daemon_wait_exit(f->d, 20000);
    nc_daemon_stop(f->d, 1000);
    /* A moment with no socket at all: the client must back off, not fail. */
    nc_sleep_ms(100);
    f->restarted = nc_daemon_start(f->d, bin, dir, 0, daemon_args) == 0;
    atomic_store(&f->done, 1);
    return NULL;
}

static void test_restart(void)
{
    nc_daemon d;
    REQUIRE(nc_daemon_start(&d, bin, dir, 0, daemon_args) == 0);
    nc_client_options o = { .timeout_ms = 20000, .max_in_flight = WINDOW,
                            .retry = { .max_attempts = 50, .deadline_ms = 20000,
                                       .backoff_initial_ms = 10, .backoff_max_ms = 200 } };
    nc_client *c = NULL;
    REQUIRE(nc_client_connect(addr, &o, &c) == 0);
    fault f = { .d = &d };
    atomic_init(&f.answered, 0);
    atomic_init(&f.done, 0);
    atomic_init(&f.signalled, 0);
    REQUIRE(pthread_create(&f.thread, NULL, fault_main, &f) == 0);
    static uint8_t seen[N_MAX + 1];
    uint64_t sent = 0, ok = 0, gave_up = 0, wrong = 0, dup = 0, other = 0;
    char first_problem[300] = "";
    /* The draining daemon serves a connection until it is idle, then
     * refuses what arrives on it (UNAVAILABLE) and half-closes it.  A client
     * that keeps its window full may never leave it idle, so once SIGTERM is
     * sent this one lets its window empty and waits a moment (as a camera
     * between frames would), then streams on until the new daemon is up and
     * N_AFTER more were sent: what it sends in between is refused or lost and
     * must be resent, through a reconnection. */
    uint64_t target = N_MAX;        /* until the restart is over */
    int after_set = 0, paused = 0;
    while (sent < target || nc_client_in_flight(c)) {
        if (!paused && atomic_load(&f.signalled) && !nc_client_in_flight(c)) {
            paused = 1;
            nc_sleep_ms(50);
        }
        if (!after_set && atomic_load(&f.done)) {
            after_set = 1;
            target = sent + N_AFTER > N_RESTART ? sent + N_AFTER : N_RESTART;
        }
        const int hold = !paused && atomic_load(&f.signalled);
        if (!hold && sent < target && nc_client_in_flight(c) < WINDOW) {
            uint64_t id;
            int r = send_digit(c, sent, 1, &id);
            CHECK_MSG(r == 0 && id == sent + 1, "send %llu: %d %s", (unsigned long long)sent, r,
                      nc_client_errmsg(c));
            if (r)
                break;
            sent++;
            continue;
        }
        nc_msg *m = NULL;
        int r = nc_client_receive(c, 30000, &m);
        if (r < 0) {
            CHECK_MSG(0, "receive: %d %s", r, nc_client_errmsg(c));
            break;
        }
        const Neocog__Reply *rp = nc_msg_reply(m);
        if (rp->id == 0 || rp->id > sent || seen[rp->id]++) {
            dup++;
        } else if (r == NC_CLIENT_GAVE_UP) {
            gave_up++;
            if (!first_problem[0])
                snprintf(first_problem, sizeof first_problem, "gave up on %llu: %s %s",
                         (unsigned long long)rp->id, nc_msg_code_name(rp->code), rp->message);
        } else if (rp->code != NEOCOG__CODE__OK || rp->kind_case != NEOCOG__REPLY__KIND_RECOGNIZE ||
                   rp->recognize->n_results != 1) {
            other++;
            if (!first_problem[0])
                snprintf(first_problem, sizeof first_problem, "%llu: %s %s",
                         (unsigned long long)rp->id, nc_msg_code_name(rp->code), rp->message);
        } else {
            ok++;
            wrong += rp->recognize->results[0]->label != expect[(rp->id - 1) % mnist.count];
        }
        nc_msg_free(m);
        atomic_fetch_add(&f.answered, 1);
    }
    if (atomic_load(&f.answered) < FAULT_AFTER)
        atomic_store(&f.answered, FAULT_AFTER);     /* let the thread finish */
    pthread_join(f.thread, NULL);
    nc_client_stats st;
    nc_client_stats_get(c, &st);
    fprintf(stderr, "restart: %llu sent, %llu OK, %llu given up; library: %llu resends "
            "(%llu after a loss, %llu after UNAVAILABLE), %llu reconnects, %llu failed "
            "connects\n", (unsigned long long)sent, (unsigned long long)ok,
            (unsigned long long)gave_up, (unsigned long long)st.resends,
            (unsigned long long)st.resent_after_loss,
            (unsigned long long)st.resent_by_code[NEOCOG__CODE__UNAVAILABLE],
            (unsigned long long)st.reconnects, (unsigned long long)st.connect_failures);
    CHECK_MSG(f.old_exit == 0, "the old daemon's exit status after SIGTERM: %d", f.old_exit);
    CHECK_MSG(f.restarted, "the new daemon did not start");
    CHECK_MSG(after_set, "the restart took longer than %d requests", N_MAX);
    CHECK_MSG(sent >= N_RESTART && ok == sent && !gave_up && !other && !dup,
              "%llu sent, %llu OK, %llu given up, %llu other, %llu unknown or twice; first: %s",
              (unsigned long long)sent, (unsigned long long)ok, (unsigned long long)gave_up,
              (unsigned long long)other, (unsigned long long)dup, first_problem);
    CHECK_MSG(!wrong, "%llu answers differ from core's label for their digit",
              (unsigned long long)wrong);
    CHECK_MSG(st.reconnects >= 1 && st.resends >= 1,
              "no reconnection or resend: the restart did not happen under load");
    CHECK_MSG(st.sent == sent && st.answered == ok && st.gave_up == 0 && st.lost == 0,
              "library counts: sent %llu answered %llu gave up %llu lost %llu",
              (unsigned long long)st.sent, (unsigned long long)st.answered,
              (unsigned long long)st.gave_up, (unsigned long long)st.lost);
    CHECK(st.resends == st.resent_after_loss + st.resent_by_code[NEOCOG__CODE__UNAVAILABLE] +
                        st.resent_by_code[NEOCOG__CODE__RESOURCE_EXHAUSTED]);
    nc_client_free(c);
    CHECK(nc_daemon_stop(&d, 10000) == 0);
}

/* ---- RESOURCE_EXHAUSTED --------------------------------------------------- */

#define N_BURST 64
#define BURST_IMAGES 8

typedef struct burst {
    uint64_t ok, refused, lost, other;
    nc_client_stats st;
} burst;

/* N_BURST requests of BURST_IMAGES digits, all at once. */
static void run_burst(const nc_client_retry *retry, burst *b)
{
    memset(b, 0, sizeof *b);
    nc_client_options o = { .timeout_ms = 20000, .max_in_flight = N_BURST, .retry = *retry };
    nc_client *c = NULL;
    REQUIRE(nc_client_connect(addr, &o, &c) == 0);
    for (size_t k = 0; k < N_BURST; k++) {
        int r = send_digit(c, k * BURST_IMAGES, BURST_IMAGES, NULL);
        CHECK_MSG(r == 0, "send %zu: %s", k, nc_client_errmsg(c));
    }
    while (nc_client_in_flight(c)) {
        nc_msg *m;
        int r = nc_client_receive(c, 30000, &m);
        if (r < 0) {
            CHECK_MSG(0, "receive: %s", nc_client_errmsg(c));
            break;
        }
        const Neocog__Reply *rp = nc_msg_reply(m);
        nc_client_giveup gu;
        if (r == NC_CLIENT_GAVE_UP) {
            CHECK(nc_client_last_giveup(c, &gu) == 0 && gu.id == rp->id);
            if (gu.from_daemon && rp->code == NEOCOG__CODE__RESOURCE_EXHAUSTED &&
                gu.code == (int32_t)rp->code && strstr(rp->message, "queue full"))
                b->refused++;
            else if (!gu.from_daemon)
                b->lost++;
            else
                b->other++;
        } else if (rp->code == NEOCOG__CODE__OK) {
            b->ok++;
        } else {
            b->other++;
            fprintf(stderr, "burst: %s %s\n", nc_msg_code_name(rp->code), rp->message);
        }
        nc_msg_free(m);
    }
    nc_client_stats_get(c, &b->st);
    nc_client_free(c);
    fprintf(stderr, "burst (attempts %u, deadline %d ms): %llu OK, %llu refused, %llu lost, "
            "%llu resent after RESOURCE_EXHAUSTED\n", retry->max_attempts, retry->deadline_ms,
            (unsigned long long)b->ok, (unsigned long long)b->refused,
            (unsigned long long)b->lost,
            (unsigned long long)b->st.resent_by_code[NEOCOG__CODE__RESOURCE_EXHAUSTED]);
    CHECK(b->ok + b->refused + b->lost + b->other == N_BURST);
    CHECK(b->st.sent == N_BURST && b->st.answered == b->ok + b->other &&
          b->st.gave_up == b->refused + b->lost && !b->lost && !b->other);
    CHECK(b->st.gave_up_by_code[NEOCOG__CODE__RESOURCE_EXHAUSTED] == b->refused);
}

static void test_exhausted(void)
{
    const char *const args[] = {
        "--cnn-model", model, "--models", dir, "--gpus", "0", "--workers", "1",
        "--listen-unix", sock, "--listen-tcp", "none", "--http", "none",
        "--queue-capacity", "8", "--max-images-per-request", "8",
        "--max-queue-delay-us", "20000", "--log-level", "4", NULL,
    };
    nc_daemon d;
    REQUIRE(nc_daemon_start(&d, bin, dir, 0, args) == 0);
    burst b;
    /* Retries: everything ends OK, after resends the daemon asked for. */
    nc_client_retry patient = { .max_attempts = 1000, .deadline_ms = 20000,
                                .backoff_initial_ms = 5, .backoff_max_ms = 50 };
    run_burst(&patient, &b);
    CHECK_MSG(b.ok == N_BURST, "with retries %llu of %d OK", (unsigned long long)b.ok, N_BURST);
    CHECK_MSG(b.st.resent_by_code[NEOCOG__CODE__RESOURCE_EXHAUSTED] > 0,
              "the burst was never refused: the test proves nothing");
    CHECK(b.st.resends == b.st.resent_by_code[NEOCOG__CODE__RESOURCE_EXHAUSTED] &&
          b.st.reconnects == 0);
    /* One attempt: the refusals come back given up, the daemon's reply. */
    nc_client_retry once = { .max_attempts = 1 };
    run_burst(&once, &b);
    CHECK_MSG(b.refused > 0 && b.st.resends == 0, "%llu refused, %llu resends",
              (unsigned long long)b.refused, (unsigned long long)b.st.resends);
    /* A deadline of 1 ms is past by the time a refusal comes back. */
    nc_client_retry hasty = { .max_attempts = 1000, .deadline_ms = 1 };
    run_burst(&hasty, &b);
    CHECK_MSG(b.refused > 0, "the deadline gave nothing up");
    CHECK(nc_daemon_stop(&d, 10000) == 0);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !argv[1][0]) {
        fprintf(stderr, "test_reconnect: no neocogd in this build\n");
        return NC_TEST_SKIP;
    }
    if (!getenv("NC_TEST_DATA"))
        return NC_TEST_SKIP;
    bin = argv[1];
    int err = nc_test_fixture(&mnist);
    if (err || mnist.rows != H || mnist.cols != W || mnist.count == 0 || mnist.count > 1000) {
        fprintf(stderr, "cannot read the MNIST fixture: %s\n", err ? strerror(-err) : "short");
        return 1;
    }
    snprintf(dir, sizeof dir, "/tmp/neocog-reconnect-XXXXXX");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "cannot make a temporary folder: %s\n", strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    snprintf(sock, sizeof sock, "%s/neocogd.sock", dir);
    snprintf(addr, sizeof addr, "unix:%s", sock);
    snprintf(model, sizeof model, "%s/cnn-reconnect.ncm", dir);
    nc_direct ref;
    if (nc_make_cnn_model(model, 11) == 0 && nc_direct_open(&ref, model) == 0) {
        for (size_t k = 0; k < mnist.count; k++) {
            float scores[10];
            nc_direct_run(&ref, mnist.pixels + k * W * H, W, H, scores, &expect[k]);
        }
        nc_direct_close(&ref);
        test_restart();
        test_exhausted();
    } else {
        CHECK_MSG(0, "cannot write or open a model file in %s", dir);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) { /* best effort */ }
    nc_dataset_fini(&mnist);
    return nc_test_finish();
}

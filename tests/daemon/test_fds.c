/* tests/daemon/test_fds.c — neocogd short of file descriptors, and a reload
 * whose model file turned corrupt.
 *
 * Runs the real binary (argv[1]) with the shipped models ($NC_SOURCE_ROOT/
 * models), on the CPU:
 * - out of descriptors (its limit lowered under it with prlimit), with
 *   connections waiting that it cannot accept (protocol and HTTP): it does
 *   not spin (its CPU time over a second stays small), says so in the log
 *   and /metrics, and serves new connections once some close;
 * - started under `ulimit -n 64` with the default max_connections: it
 *   lowers max_connections to fit, so the extra clients hear "too many
 *   connections" instead of waiting unanswered;
 * - serving cnn-column.ncm from a folder that also has cnn-committee.ncm,
 *   the column file truncated and SIGHUP: the column keeps serving, and
 *   last_reload and ModelInfo.error name the file and why it failed (not
 *   "file gone"); the same with the column the only CNN file. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "harness.h"
#include "test.h"

static const char *bin;
static char dir[256];
static char cnn_column[1024], cnn_committee[1024];

/* utime + stime of pid in clock ticks; -1 if unreadable. */
static long cpu_ticks(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    char *text = nc_read_text(path);
    if (!text)
        return -1;
    /* Fields after the command name (which may hold spaces): state is
       field 3, utime 14, stime 15. */
    const char *p = strrchr(text, ')');
    long ut = -1, st = -1;
    if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &ut,
                    &st) != 2)
        ut = -1;
    free(text);
    return ut < 0 ? -1 : ut + st;
}

/* ---- out of descriptors ------------------------------------------------------------- */

#define HELD 80
#define KEEP 10

static void test_emfile(void)
{
    char log[400];
    snprintf(log, sizeof log, "%s/emfile.log", dir);
    const char *args[] = { "--cnn-model", cnn_column, "--models", dir, "--gpus", "0",
                           "--workers", "1", NULL };
    nc_daemon d;
    REQUIRE(nc_daemon_spawn(&d, bin, dir, 1, args, log) == 0);
    REQUIRE(nc_daemon_wait_notify(&d, "READY=1", 30000) == 0);

    /* Its limit lowered now: fewer descriptors than the connections below. */
    struct rlimit rl = { 48, 48 };
    REQUIRE(prlimit(d.pid, RLIMIT_NOFILE, &rl, NULL) == 0);
    int held[HELD];
    for (int i = 0; i < HELD; i++) {
        held[i] = nc_connect_tcp(d.port);
        REQUIRE(held[i] >= 0);      /* the kernel's backlog takes what it cannot accept */
    }
    int http = nc_connect_tcp(d.http_port);     /* its HTTP listener fails too */
    REQUIRE(http >= 0);
    nc_sleep_ms(300);
    long t0 = cpu_ticks(d.pid);
    nc_sleep_ms(1000);
    long t1 = cpu_ticks(d.pid);
    long hz = sysconf(_SC_CLK_TCK);
    close(http);
    CHECK(t0 >= 0 && t1 >= 0);
    /* Retrying accept at once spins a whole core (about hz ticks a second). */
    CHECK_MSG(t1 - t0 < hz / 5, "%ld ticks of CPU in 1 s (%ld a second) with accept failing",
              t1 - t0, hz);
    char *text = nc_read_text(log);
    CHECK_MSG(text && strstr(text, "accept: Too many open files"),
              "no warning for the failing accept: %s", text ? text : "(no log)");
    free(text);

    /* All but the first KEEP go (the rest of those it accepted, and those
       waiting): a new connection is served (30 s at most). */
    for (int i = KEEP; i < HELD; i++)
        close(held[i]);
    Neocog__StatusReply *st;
    nc_msg *m = NULL;
    int ok = nc_status_tcp(d.port, &st, &m) == 0;
    text = ok ? NULL : nc_read_text(log);
    CHECK_MSG(ok, "no status once connections closed: %s", text ? text : "");
    free(text);
    if (ok) {
        CHECK_MSG(st->connections >= KEEP && st->connections <= HELD - KEEP,
                  "%u connections", st->connections);
        nc_msg_free(m);
    }
    char *metrics = nc_http_get(d.http_port, "/metrics");
    const char *p = metrics ? strstr(metrics, "\nneocogd_accept_pauses_total ") : NULL;
    CHECK_MSG(p && strtoull(p + 29, NULL, 10) > 0, "no accept pauses counted: %s",
              metrics ? metrics : "(no /metrics)");
    free(metrics);
    text = nc_read_text(log);
    CHECK_MSG(text && strstr(text, "file descriptors free again"),
              "no notice that accepting resumed: %s", text ? text : "(no log)");
    free(text);
    for (int i = 0; i < KEEP; i++)
        close(held[i]);
    CHECK_INT_EQ(nc_daemon_stop(&d, 20000), 0);
}

/* ---- a limit below max_connections at start ---------------------------------------------- */

static void test_low_limit(void)
{
    char log[400];
    snprintf(log, sizeof log, "%s/ulimit.log", dir);
    /* dash's ulimit sets the soft and the hard limit: none to raise to. */
    const char *args[] = { "-c", "ulimit -n 64 && exec \"$0\" \"$@\"", bin, "--cnn-model",
                           cnn_column, "--models", dir, "--gpus", "0", "--workers", "1", NULL };
    nc_daemon d;
    REQUIRE(nc_daemon_spawn(&d, "/bin/sh", dir, 1, args, log) == 0);
    REQUIRE(nc_daemon_wait_notify(&d, "READY=1", 30000) == 0);
    char *text = nc_read_text(log);
    CHECK_MSG(text && strstr(text, "open files limited to 64") &&
              strstr(text, "max_connections lowered from 1024 to 32"),
              "no warning about the limit: %s", text ? text : "(no log)");
    free(text);

    /* 40 clients: 32 served, 8 told "too many connections", none left
       waiting. */
    enum { N = 40 };
    int fd[N], refused = 0, served = 0;
    for (int i = 0; i < N; i++)
        REQUIRE((fd[i] = nc_connect_tcp(d.port)) >= 0);
    nc_sleep_ms(500);
    for (int i = 0; i < N; i++) {
        nc_msg *m = NULL;
        if (nc_recv_reply(fd[i], 50, &m) == 0) {
            refused += nc_msg_reply(m)->code == NEOCOG__CODE__RESOURCE_EXHAUSTED;
            nc_msg_free(m);
            close(fd[i]);
            fd[i] = -1;
        }
    }
    for (int i = 0; i < N; i++) {
        if (fd[i] < 0)
            continue;
        Neocog__Request rq = NEOCOG__REQUEST__INIT;
        Neocog__StatusRequest sr = NEOCOG__STATUS_REQUEST__INIT;
        rq.id = 7;
        rq.kind_case = NEOCOG__REQUEST__KIND_STATUS;
        rq.status = &sr;
        nc_msg *m = nc_roundtrip(fd[i], &rq);
        served += m && nc_msg_reply(m)->status;
        nc_msg_free(m);
    }
    CHECK_INT_EQ(served, 32);
    CHECK_INT_EQ(refused, N - 32);
    for (int i = 0; i < N; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    CHECK_INT_EQ(nc_daemon_stop(&d, 20000), 0);
}

/* ---- a reload with the serving file corrupt --------------------------------------------- */

/* SIGHUP, wait for READY=1; the status after it (NULL: none). */
static nc_msg *reload(nc_daemon *d, Neocog__StatusReply **st)
{
    nc_daemon_drain_notify(d);
    kill(d->pid, SIGHUP);
    if (nc_daemon_wait_notify(d, "READY=1", 30000))
        return NULL;
    nc_msg *m;
    return nc_status_tcp(d->port, st, &m) ? NULL : m;
}

static void check_kept(nc_daemon *d, const char *column, const char *when)
{
    Neocog__StatusReply *st = NULL;
    nc_msg *m = reload(d, &st);
    CHECK_MSG(m, "%s: no status after the reload", when);
    if (!m)
        return;
    char want[600];
    snprintf(want, sizeof want, "cnn: kept: %s: ", column);
    const char *why = strstr(st->last_reload, want);
    CHECK_MSG(!strncmp(st->last_reload, "partly failed", 13) && why &&
              why[strlen(want)] && why[strlen(want)] != ';' &&
              !strstr(st->last_reload, "file gone"),
              "%s: last_reload: %s", when, st->last_reload);
    const Neocog__ModelInfo *mi = NULL;
    for (size_t i = 0; i < st->n_models; i++)
        if (st->models[i]->model == NEOCOG__MODEL__MODEL_CNN)
            mi = st->models[i];
    CHECK_MSG(mi && mi->loaded && !strcmp(mi->path, column),
              "%s: the CNN served is %s", when, mi ? mi->path : "(none)");
    CHECK_MSG(mi && !strncmp(mi->error, column, strlen(column)) &&
              !strstr(mi->error, "no cnn model file"),
              "%s: ModelInfo.error: %s", when, mi ? mi->error : "(none)");
    nc_msg_free(m);
}

static void test_reload_corrupt(void)
{
    char models[300], column[400], committee[400], log[400];
    snprintf(models, sizeof models, "%s/models", dir);
    snprintf(column, sizeof column, "%s/cnn-column.ncm", models);
    snprintf(committee, sizeof committee, "%s/cnn-committee.ncm", models);
    snprintf(log, sizeof log, "%s/reload.log", dir);
    REQUIRE(mkdir(models, 0755) == 0);
    REQUIRE(nc_truncated_copy(cnn_column, column, SIZE_MAX) == 0);
    REQUIRE(nc_truncated_copy(cnn_committee, committee, SIZE_MAX) == 0);
    const char *args[] = { "--models", models, "--gpus", "0", "--workers", "1", NULL };
    nc_daemon d;
    REQUIRE(nc_daemon_spawn(&d, bin, dir, 1, args, log) == 0);
    REQUIRE(nc_daemon_wait_notify(&d, "READY=1", 60000) == 0);

    /* Truncated inside its header: the folder's scan already refuses it. */
    REQUIRE(nc_truncated_copy(cnn_column, column, 1000) == 0);
    check_kept(&d, column, "committee beside it");
    /* The column the only CNN file. */
    REQUIRE(unlink(committee) == 0);
    check_kept(&d, column, "the only CNN file");
    CHECK_INT_EQ(nc_daemon_stop(&d, 20000), 0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_fds NEOCOGD\n");
        return 2;
    }
    bin = argv[1];
    const char *src = getenv("NC_SOURCE_ROOT");
    if (!src)
        return NC_TEST_SKIP;
    snprintf(cnn_column, sizeof cnn_column, "%s/models/cnn-column.ncm", src);
    snprintf(cnn_committee, sizeof cnn_committee, "%s/models/cnn-committee.ncm", src);
    snprintf(dir, sizeof dir, "/tmp/neocogd-fds-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    signal(SIGPIPE, SIG_IGN);

    test_emfile();
    test_low_limit();
    test_reload_corrupt();

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) { /* best effort */ }
    return nc_test_finish();
}

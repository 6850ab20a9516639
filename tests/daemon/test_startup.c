/* tests/daemon/test_startup.c — what neocogd does between exec and READY=1.
 *
 * Runs the real binary (argv[1]) with the shipped models ($NC_SOURCE_ROOT/
 * models) and checks that start-up tells the truth: a mistyped flag is
 * named; a busy address is refused at once, before any model loads; a
 * model file named explicitly that does not load stops the daemon with the
 * reason; a broken file in a scanned folder is skipped with a warning while
 * the daemon serves (and a reload keeps the model it has); while the models
 * load, /healthz answers, /readyz says "loading", a protocol request waits
 * and is answered once they are in, and SIGTERM exits at once; the status describes the
 * neocognitron's cascade when its file has one, and only then.  The
 * neocognitron (seconds to load on a CPU, --gpus 0) makes loading long
 * enough to look at. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "harness.h"
#include "neocog.h"
#include "test.h"

static const char *bin;
static char dir[256];
static char cnn_good[1024], neo_good[1024];

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Run the daemon until it exits by itself (killed after timeout_ms):
 * its exit status (-1 when it did not exit in time), its stderr in
 * *ret_log (malloc'd) and how long it ran in *ret_ms. */
static int run_to_exit(const char *const *args, int activate, int timeout_ms, char **ret_log,
                       double *ret_ms)
{
    static int runs;
    char log[400];
    snprintf(log, sizeof log, "%s/run-%d.log", dir, runs++);
    nc_daemon d;
    double t0 = now_ms();
    int status = -1;
    if (nc_daemon_spawn(&d, bin, dir, activate, args, log) == 0) {
        status = nc_daemon_wait_exit(&d, timeout_ms);
        *ret_ms = now_ms() - t0;
        nc_daemon_stop(&d, 1000);
    }
    *ret_log = nc_read_text(log);
    if (!*ret_log)
        *ret_log = strdup("");
    return status;
}

static int listen_any(int *ret_port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 8) ||
        getsockname(fd, (struct sockaddr *)&sa, &len))
        return -1;
    *ret_port = ntohs(sa.sin_port);
    return fd;
}

/* ---- flags ------------------------------------------------------------------- */

static void test_flags(void)
{
    char *log;
    double ms;
    const char *bogus[] = { "--bogus", NULL };
    CHECK_INT_EQ(run_to_exit(bogus, 0, 10000, &log, &ms), 2);
    CHECK_MSG(strstr(log, "unknown option --bogus") && strstr(log, "--help") &&
              !strstr(log, "needs a value"), "--bogus said: %s", log);
    free(log);

    const char *bogus_eq[] = { "--bogus=3", NULL };
    CHECK_INT_EQ(run_to_exit(bogus_eq, 0, 10000, &log, &ms), 2);
    CHECK_MSG(strstr(log, "unknown option --bogus"), "--bogus=3 said: %s", log);
    free(log);

    /* a known flag with no value still says so */
    const char *novalue[] = { "--cnn-model", NULL };
    CHECK_INT_EQ(run_to_exit(novalue, 0, 10000, &log, &ms), 2);
    CHECK_MSG(strstr(log, "--cnn-model needs a value"), "--cnn-model said: %s", log);
    free(log);
}

/* ---- a busy address: refused before anything loads ----------------------------- */

static void test_busy_port(void)
{
    int port;
    int busy = listen_any(&port);
    REQUIRE(busy >= 0);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);

    /* the protocol port; loading these two would take seconds */
    const char *tcp[] = { "--listen-tcp", addr, "--listen-unix", "none", "--http", "none",
                          "--gpus", "0", "--cnn-model", cnn_good, "--neocog-model", neo_good,
                          NULL };
    char *log;
    double ms = 0;
    CHECK_INT_EQ(run_to_exit(tcp, 0, 30000, &log, &ms), 1);
    CHECK_MSG(ms < 1000, "a busy port took %.0f ms to report", ms);
    CHECK_MSG(strstr(log, addr) && strstr(log, "Address already in use"),
              "busy port: no message naming %s: %s", addr, log);
    CHECK_MSG(!strstr(log, "model cnn:") && !strstr(log, "model neocognitron:"),
              "models loaded before the busy port was reported: %s", log);
    free(log);

    /* the HTTP port, after a Unix socket was made: that file goes again */
    char sock[300];
    snprintf(sock, sizeof sock, "%s/busy.sock", dir);
    const char *http[] = { "--listen-tcp", "none", "--listen-unix", sock, "--http", addr,
                           "--gpus", "0", "--cnn-model", cnn_good, "--neocog-model", neo_good,
                           NULL };
    CHECK_INT_EQ(run_to_exit(http, 0, 30000, &log, &ms), 1);
    CHECK_MSG(ms < 1000, "a busy HTTP port took %.0f ms to report", ms);
    CHECK_MSG(strstr(log, addr) && strstr(log, "http"), "busy HTTP port: %s", log);
    struct stat st;
    CHECK_MSG(stat(sock, &st) != 0, "%s left behind", sock);
    free(log);
    close(busy);
}

/* ---- a named model that does not load: exit 1 with the reason ------------------ */

static void expect_named_failure(const char *what, const char *const *args, const char *key,
                                 const char *path, const char *reason)
{
    char *log;
    double ms = 0;
    int status = run_to_exit(args, 1, 30000, &log, &ms);
    CHECK_MSG(status == 1, "%s: exit status %d (wanted 1)", what, status);
    char want[300];
    snprintf(want, sizeof want, "named by %s", key);
    CHECK_MSG(strstr(log, want) && strstr(log, path) && strstr(log, reason),
              "%s: the log lacks '%s', %s or '%s': %s", what, want, path, reason, log);
    CHECK_MSG(!strstr(log, "READY") && !strstr(log, "ready:"), "%s: became ready: %s", what,
              log);
    free(log);
}

static void test_named_broken(void)
{
    char models[1100], cnn_bad[300], neo_bad[300], missing[300], conf[300];
    snprintf(models, sizeof models, "%s/models", getenv("NC_SOURCE_ROOT"));
    snprintf(cnn_bad, sizeof cnn_bad, "%s/cnn-truncated.ncm", dir);
    snprintf(neo_bad, sizeof neo_bad, "%s/neocognitron-truncated.ncm", dir);
    snprintf(missing, sizeof missing, "%s/no-such-model.ncm", dir);
    snprintf(conf, sizeof conf, "%s/named.conf", dir);
    REQUIRE(nc_truncated_copy(cnn_good, cnn_bad, 100000) == 0);
    REQUIRE(nc_truncated_copy(neo_good, neo_bad, 65536) == 0);

    /* The folder holds a good neocognitron: before, the daemon served that
       alone and said nothing of the CNN it was asked for. */
    const char *cnn[] = { "--cnn-model", cnn_bad, "--models", models, "--gpus", "0", NULL };
    expect_named_failure("truncated --cnn-model", cnn, "cnn_model", cnn_bad, "truncated");

    const char *neo[] = { "--cnn-model", cnn_good, "--neocog-model", neo_bad, "--gpus", "0",
                          NULL };
    expect_named_failure("truncated --neocog-model", neo, "neocog_model", neo_bad, ": ");

    const char *gone[] = { "--cnn-model", missing, "--models", models, "--gpus", "0", NULL };
    expect_named_failure("missing --cnn-model", gone, "cnn_model", missing,
                         "No such file or directory");

    char text[400];
    snprintf(text, sizeof text, "# a config file names the model\ncnn_model = %s\n", cnn_bad);
    REQUIRE(nc_write_file(conf, text, strlen(text)) == 0);
    const char *file[] = { "--config", conf, "--models", models, "--gpus", "0", NULL };
    expect_named_failure("truncated cnn_model in a config file", file, "cnn_model", cnn_bad,
                         "truncated");
}

/* ---- a folder scan skips broken files --------------------------------------------- */

/* A blank raw image through the default model: the reply's code. */
static int recognize_blank(int port)
{
    static uint8_t px[28 * 28];
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    Neocog__RecognizeRequest rr = NEOCOG__RECOGNIZE_REQUEST__INIT;
    Neocog__Image im = NEOCOG__IMAGE__INIT, *imp = &im;
    im.format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY;
    im.data.data = px;
    im.data.len = sizeof px;
    im.width = 28;
    im.height = 28;
    rr.n_images = 1;
    rr.images = &imp;
    rq.id = 9;
    rq.kind_case = NEOCOG__REQUEST__KIND_RECOGNIZE;
    rq.recognize = &rr;
    int fd = nc_connect_tcp(port);
    nc_msg *m = fd >= 0 ? nc_roundtrip(fd, &rq) : NULL;
    int code = m ? (int)nc_msg_reply(m)->code : -1;
    nc_msg_free(m);
    if (fd >= 0)
        close(fd);
    return code;
}

/* SIGHUP and wait for the reload to finish: its last_reload. */
static char *reload(nc_daemon *d)
{
    nc_daemon_drain_notify(d);
    kill(d->pid, SIGHUP);
    if (nc_daemon_wait_notify(d, "READY=1", 30000))
        return strdup("(no READY=1 after the reload)");
    Neocog__StatusReply *st;
    nc_msg *m;
    if (nc_status_tcp(d->port, &st, &m))
        return strdup("(no status)");
    char *r = strdup(st->last_reload);
    nc_msg_free(m);
    return r;
}

static void test_scan_skips(void)
{
    char scan[300], a[400], b[400], c[400], log[400];
    snprintf(scan, sizeof scan, "%s/scan", dir);
    snprintf(a, sizeof a, "%s/cnn-a.ncm", scan);
    snprintf(b, sizeof b, "%s/cnn-b.ncm", scan);
    snprintf(c, sizeof c, "%s/cnn-c.ncm", scan);
    snprintf(log, sizeof log, "%s/scan.log", dir);
    REQUIRE(mkdir(scan, 0755) == 0);
    /* a: truncated (its header check fails); b: sound but not servable (a
       batch-normalised training net); c: good */
    REQUIRE(nc_truncated_copy(cnn_good, a, 100000) == 0);
    REQUIRE(nc_make_cnn_model_arch(b, 3, "1x29x29-6C4bn-MP2-10N") == 0);
    REQUIRE(nc_truncated_copy(cnn_good, c, SIZE_MAX) == 0);

    const char *args[] = { "--models", scan, "--gpus", "0", "--workers", "1", NULL };
    nc_daemon d;
    REQUIRE(nc_daemon_spawn(&d, bin, dir, 1, args, log) == 0);
    int ready = nc_daemon_wait_notify(&d, "READY=1", 30000) == 0;
    CHECK_MSG(ready, "the daemon did not serve with one good file in the folder");
    char *text = nc_read_text(log);
    if (!text)
        text = strdup("");
    char want_a[500], want_b[500], want_c[500];
    snprintf(want_a, sizeof want_a, "<4>models: skipped %s: ", a);
    snprintf(want_b, sizeof want_b, "<4>models: skipped %s: ", b);
    snprintf(want_c, sizeof want_c, "model cnn: %s", c);
    CHECK_MSG(strstr(text, want_a), "no warning for the truncated file: %s", text);
    CHECK_MSG(strstr(text, want_b) && strstr(text, "batch-normalised"),
              "no warning for the unservable file: %s", text);
    CHECK_MSG(strstr(text, want_c), "not serving %s: %s", c, text);
    free(text);
    if (ready) {
        CHECK_INT_EQ(recognize_blank(d.port), NEOCOG__CODE__OK);

        /* A reload finds the same: b skipped, c loaded afresh. */
        char *r = reload(&d);
        CHECK_MSG(!strncmp(r, "ok", 2), "reload with c still good: %s", r);
        free(r);

        /* c broken too: the reload keeps the model c gave. */
        REQUIRE(nc_truncated_copy(cnn_good, c, 1000) == 0);
        r = reload(&d);
        CHECK_MSG(!strncmp(r, "partly failed", 13), "reload with c broken: %s", r);
        free(r);
        Neocog__StatusReply *st;
        nc_msg *m;
        if (nc_status_tcp(d.port, &st, &m) == 0) {
            CHECK(st->n_models >= 1 && st->models[0]->loaded);
            nc_msg_free(m);
        } else {
            CHECK_MSG(0, "no status after the failed reload");
        }
        CHECK_INT_EQ(recognize_blank(d.port), NEOCOG__CODE__OK);
    }
    CHECK_INT_EQ(nc_daemon_stop(&d, 20000), 0);
}

/* ---- while the models load ----------------------------------------------------------- */

static void test_loading(void)
{
    char log[400];
    snprintf(log, sizeof log, "%s/loading.log", dir);
    const char *args[] = { "--cnn-model", cnn_good, "--neocog-model", neo_good, "--gpus", "0",
                           "--workers", "1", NULL };
    nc_daemon d;
    REQUIRE(nc_daemon_spawn(&d, bin, dir, 1, args, log) == 0);

    /* A request sent now waits for the models (the connection sits in the
       listener's backlog) ... */
    int fd = nc_connect_tcp(d.port);
    CHECK(fd >= 0);
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    Neocog__StatusRequest sr = NEOCOG__STATUS_REQUEST__INIT;
    rq.id = 77;
    rq.kind_case = NEOCOG__REQUEST__KIND_STATUS;
    rq.status = &sr;
    CHECK(fd >= 0 && nc_send_msg(fd, &rq.base) == 0);

    /* ... while the HTTP port already answers. */
    double t0 = now_ms();
    char *health = nc_http_get(d.http_port, "/healthz");
    char *readyz = nc_http_get(d.http_port, "/readyz");
    double took = now_ms() - t0;
    CHECK_MSG(health && strstr(health, " 200 "), "/healthz while loading: %s", health);
    CHECK_MSG(readyz && strstr(readyz, " 503 ") && strstr(readyz, "\r\n\r\nloading"),
              "/readyz while loading: %s", readyz);
    CHECK_MSG(took < 1000, "/healthz and /readyz took %.0f ms while loading", took);
    free(health);
    free(readyz);
    nc_msg *m = NULL;
    CHECK_MSG(fd >= 0 && nc_recv_reply(fd, 100, &m) == -ETIMEDOUT,
              "a protocol request was answered while the models load");
    nc_msg_free(m);
    m = NULL;

    CHECK_MSG(nc_daemon_wait_notify(&d, "READY=1", 60000) == 0, "no READY=1 after loading");
    CHECK_MSG(fd >= 0 && nc_recv_reply(fd, 30000, &m) == 0, "the waiting request got no reply");
    if (m) {
        const Neocog__Reply *r = nc_msg_reply(m);
        CHECK_INT_EQ(r->id, 77);
        CHECK_INT_EQ(r->code, NEOCOG__CODE__OK);
        CHECK(r->status && r->status->health && r->status->health->ready);
        CHECK(r->status && r->status->n_models == 2 && r->status->models[0]->loaded &&
              r->status->models[1]->loaded);
        /* the shipped committee's cascade (models/README.md: member 4 first,
         * its sixth view of the digit alone before it) */
        const char *arch = r->status && r->status->n_models == 2
                         ? r->status->models[1]->architecture : "";
        CHECK_MSG(strstr(arch, "committee of 4 neocognitrons") &&
                  strstr(arch, "; cascade: member 4 first, alone at confidence >= 0.8") &&
                  strstr(arch, ", its view 6 alone before at >= 0.93"),
                  "the shipped neocognitron described as: %s", arch);
    }
    nc_msg_free(m);
    if (fd >= 0)
        close(fd);
    readyz = nc_http_get(d.http_port, "/readyz");
    CHECK_MSG(readyz && strstr(readyz, " 200 ") && strstr(readyz, "ready"),
              "/readyz once loaded: %s", readyz);
    free(readyz);
    CHECK_INT_EQ(nc_daemon_stop(&d, 20000), 0);
}

/* The shipped committee with its cascade sections dropped: described
 * without one. */
static void test_no_cascade(void)
{
    char plain[400], log[400];
    snprintf(plain, sizeof plain, "%s/no-cascade.ncm", dir);
    snprintf(log, sizeof log, "%s/no-cascade.log", dir);
    uint8_t *buf = NULL, *out = NULL;
    size_t len = 0, out_len = 0;
    const nc_neocog_cascade off = { 0 };
    REQUIRE(nc_file_read_model(neo_good, 512u << 20, &buf, &len) == 0);
    REQUIRE(nc_neocog_cascade_rewrite(buf, len, &off, &out, &out_len) == 0);
    REQUIRE(nc_write_file(plain, out, out_len) == 0);
    free(buf);
    free(out);
    const char *args[] = { "--neocog-model", plain, "--gpus", "0", "--workers", "1", NULL };
    nc_daemon d;
    REQUIRE(nc_daemon_spawn(&d, bin, dir, 1, args, log) == 0);
    CHECK_MSG(nc_daemon_wait_notify(&d, "READY=1", 60000) == 0, "no READY=1 after loading");
    Neocog__StatusReply *st = NULL;
    nc_msg *m = NULL;
    CHECK(nc_status_tcp(d.port, &st, &m) == 0);
    const char *arch = "(none)";
    for (size_t i = 0; st && i < st->n_models; i++)       /* the chars model loads too */
        if (strstr(st->models[i]->architecture, "neocognitrons"))
            arch = st->models[i]->architecture;
    CHECK_MSG(strstr(arch, "committee of 4 neocognitrons") && !strstr(arch, "cascade"),
              "the committee without a cascade described as: %s", arch);
    nc_msg_free(m);
    CHECK_INT_EQ(nc_daemon_stop(&d, 20000), 0);
}

/* SIGTERM while the models load: exit 0 at once, not after the load. */
static void test_stop_while_loading(void)
{
    char log[400];
    snprintf(log, sizeof log, "%s/stop.log", dir);
    const char *args[] = { "--neocog-model", neo_good, "--gpus", "0", NULL };
    nc_daemon d;
    REQUIRE(nc_daemon_spawn(&d, bin, dir, 1, args, log) == 0);
    char *readyz = nc_http_get(d.http_port, "/readyz");
    int loading = readyz && strstr(readyz, "loading") != NULL;
    CHECK_MSG(loading, "/readyz before the stop: %s", readyz);
    free(readyz);
    double t0 = now_ms();
    kill(d.pid, SIGTERM);
    int status = nc_daemon_wait_exit(&d, 30000);
    double took = now_ms() - t0;
    CHECK_INT_EQ(status, 0);
    CHECK_MSG(took < 1000, "SIGTERM while loading took %.0f ms", took);
    char *text = nc_read_text(log);
    CHECK_MSG(!loading || (text && strstr(text, "before the models finished loading")),
              "stop while loading: %s", text ? text : "(no log)");
    free(text);
    nc_daemon_stop(&d, 1000);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_startup NEOCOGD\n");
        return 2;
    }
    bin = argv[1];
    const char *src = getenv("NC_SOURCE_ROOT");
    if (!src)
        return NC_TEST_SKIP;
    snprintf(cnn_good, sizeof cnn_good, "%s/models/cnn-column.ncm", src);
    snprintf(neo_good, sizeof neo_good, "%s/models/neocognitron.ncm", src);
    snprintf(dir, sizeof dir, "/tmp/neocogd-startup-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    signal(SIGPIPE, SIG_IGN);

    test_flags();
    test_busy_port();
    test_named_broken();
    test_scan_skips();
    test_loading();
    test_no_cascade();
    test_stop_while_loading();

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) { /* best effort */ }
    return nc_test_finish();
}

/* daemon/main.c — neocogd: wires config, models, the batcher, listeners,
 * the HTTP side port, signals and systemd notifications together, then
 * runs the event loop.  Holds no maths and no protocol logic.
 *
 * Lifecycle: bind every socket first (a busy address is an error at once,
 * not after seconds of loading), start the HTTP port and the loop, then
 * load and warm the models on the background thread reloads use.  The
 * protocol listeners stay disabled meanwhile, so a client's connection
 * waits in the kernel's backlog and is answered once the models are in;
 * /readyz says "loading".  When the load is done: start the workers,
 * enable the listeners, READY=1 (exit 1 instead if no model loads, or if
 * a model file named explicitly does not).  SIGHUP: load the models again
 * on the background thread; a slot whose new file fails keeps its old
 * model, and the new generation is swapped in between batches (no request
 * sees two).
 * SIGTERM/SIGINT: with drain_grace_ms, first serve on for that long with
 * /readyz answering 503 (a load balancer's health check takes the daemon
 * out of rotation meanwhile; a second signal cuts it short).  Then stop
 * accepting, finish everything already received, close each connection
 * once it is idle (refusing UNAVAILABLE what arrives on it then), exit 0
 * (or after drain_timeout_s, closing what is left). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cblas.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "clock.h"
#include "conn.h"
#include "handler.h"
#include "http.h"
#include "listen.h"
#include "log.h"
#include "nc_config.h"
#include "notify.h"
#include "server.h"

/* ---- events --------------------------------------------------------------- */

static void on_done(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    nc_handle_done(arg);
}

/* Out of file descriptors (EMFILE, ENFILE): accept fails at once for as
 * long as the condition lasts while the waiting connection keeps the
 * listener readable, so retrying would spin a core.  Instead every protocol
 * listener is disabled for ACCEPT_PAUSE_MS and tried again; the episode is
 * logged when it starts and when an accept succeeds again. */
#define ACCEPT_PAUSE_MS 100

/* Descriptors kept free of connections: listeners, the event loop, the
 * workers' and reloads' fds, HTTP clients, a model file being read. */
#define NC_FD_RESERVE 32

static struct event *accept_resume_ev;
static uint64_t accept_paused_since;    /* 0: accepting normally */

static int enable_listeners(nc_server *s);

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    nc_server *s = arg;
    if (s->state == NC_SERVER_SERVING || s->state == NC_SERVER_RELOADING ||
        s->state == NC_SERVER_LEAVING)
        enable_listeners(s);    /* draining: the listeners are gone */
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                      int salen, void *arg)
{
    (void)l;
    (void)salen;
    nc_server *s = arg;
    if (accept_paused_since) {
        nc_log(NC_LOG_NOTICE, "accept: file descriptors free again after %" PRIu64 " ms",
               (nc_now_us() - accept_paused_since) / 1000u);
        accept_paused_since = 0;
    }
    char peer[80] = "unix";
    if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) {
        char host[64] = "?";
        const void *a = sa->sa_family == AF_INET
            ? (const void *)&((struct sockaddr_in *)sa)->sin_addr
            : (const void *)&((struct sockaddr_in6 *)sa)->sin6_addr;
        unsigned port = ntohs(sa->sa_family == AF_INET ? ((struct sockaddr_in *)sa)->sin_port
                                                       : ((struct sockaddr_in6 *)sa)->sin6_port);
        inet_ntop(sa->sa_family, a, host, sizeof host);
        snprintf(peer, sizeof peer, "%s:%u", host, port);
    }
    nc_conn_accept(s, fd, peer);
}

static void on_accept_error(struct evconnlistener *l, void *arg)
{
    (void)l;
    nc_server *s = arg;
    int err = EVUTIL_SOCKET_ERROR();
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        if (!accept_paused_since) {
            accept_paused_since = nc_now_us();
            nc_log(NC_LOG_WARNING, "accept: %s with %u connections open; not accepting "
                   "for %d ms at a time until descriptors free up (max_connections, "
                   "ulimit -n / LimitNOFILE=)", strerror(err), s->n_conns, ACCEPT_PAUSE_MS);
        }
        s->metrics.accept_pauses++;
        for (int i = 0; i < s->n_listeners; i++)
            evconnlistener_disable(s->listeners[i]);
        struct timeval tv = { 0, ACCEPT_PAUSE_MS * 1000 };
        evtimer_add(accept_resume_ev, &tv);
        return;
    }
    /* Anything else: the listener stays; say so at most once a second. */
    static uint64_t last;
    uint64_t now = nc_now_us();
    if (now - last > 1000000u) {
        last = now;
        nc_log(NC_LOG_WARNING, "accept: %s", evutil_socket_error_to_string(err));
    }
}

/* Disabled until the models are loaded (enable_listeners): connections
 * made before then wait in the backlog. */
static int add_listener(nc_server *s, int fd)
{
    if (s->n_listeners >= NC_LISTEN_MAX)
        return -E2BIG;
    struct evconnlistener *l = evconnlistener_new(s->base, on_accept, s,
                                                  LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC |
                                                  LEV_OPT_DISABLED, -1, fd);
    if (!l)
        return -ENOMEM;
    evconnlistener_set_error_cb(l, on_accept_error);
    s->listeners[s->n_listeners++] = l;
    return 0;
}

static int enable_listeners(nc_server *s)
{
    for (int i = 0; i < s->n_listeners; i++)
        if (evconnlistener_enable(s->listeners[i]))
            return -EINVAL;
    return 0;
}

static void close_listeners(nc_server *s)
{
    if (accept_resume_ev)
        evtimer_del(accept_resume_ev);
    for (int i = 0; i < s->n_listeners; i++)
        evconnlistener_free(s->listeners[i]);
    s->n_listeners = 0;
    if (s->unix_path[0]) {
        unlink(s->unix_path);
        s->unix_path[0] = '\0';
    }
}

/* ---- loading and reloading ---------------------------------------------------- */

static pthread_t reload_thread;
static int reload_thread_joinable;

/* snprintf for messages that may be cut short on purpose (paths can be
 * longer than the buffers). */
static void say(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, n, fmt, ap);
    va_end(ap);
}

/* The first load (s->models NULL) and every reload. */
static void *reload_main(void *arg)
{
    nc_server *s = arg;
    nc_models *prev = s->models;    /* stays alive: only on_reload_done swaps it */
    nc_models *g = NULL;
    char summary[512] = "";
    int err = nc_models_load(&s->cfg, prev, prev ? 0 : NC_MODELS_NAMED_MUST_LOAD, &g, summary,
                             sizeof summary);
    pthread_mutex_lock(&s->reload_lock);
    s->reload_result = err ? NULL : g;
    if (!prev && err == -EINVAL)
        say(s->reload_summary, sizeof s->reload_summary, "cannot load the %s", summary);
    else if (!prev && err)
        say(s->reload_summary, sizeof s->reload_summary,
            "no model could be loaded (%s); looked in %s%s%s%s%s", summary, s->cfg.models,
            s->cfg.cnn_model[0] ? ", " : "", s->cfg.cnn_model,
            s->cfg.neocog_model[0] ? ", " : "", s->cfg.neocog_model);
    else
        snprintf(s->reload_summary, sizeof s->reload_summary, "%s", summary);
    pthread_mutex_unlock(&s->reload_lock);
    uint64_t one = 1;
    ssize_t w = write(s->reload_fd, &one, sizeof one);
    (void)w;
    return NULL;
}

static void start_reload(nc_server *s)
{
    if (reload_thread_joinable) {
        pthread_join(reload_thread, NULL);
        reload_thread_joinable = 0;
    }
    s->reload_running = 1;
    s->reload_again = 0;
    s->state = NC_SERVER_RELOADING;
    char msg[128];
    snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, nc_now_us());
    nc_notify(msg);
    nc_server_notify_status(s);
    int err = pthread_create(&reload_thread, NULL, reload_main, s);
    if (err) {
        nc_log(NC_LOG_ERR, "reload: cannot start a thread: %s", strerror(err));
        s->reload_running = 0;
        s->state = NC_SERVER_SERVING;
        nc_notify("READY=1");
        return;
    }
    reload_thread_joinable = 1;
}

static void log_models(const nc_models *g)
{
    for (int k = 0; k < NC_SLOTS; k++) {
        const nc_model *m = g->slot[k];
        if (m)
            nc_log(NC_LOG_INFO, "model %s: %s (%u classes, input %ux%u%s%s) on %s",
                   nc_slot_name(k), m->path, m->be->info.n_classes,
                   m->be->info.prep.size + 2 * m->be->info.prep.pad,
                   m->be->info.prep.size + 2 * m->be->info.prep.pad, m->arch[0] ? ", " : "",
                   m->arch, m->engines);
        else
            nc_log(NC_LOG_NOTICE, "model %s: not loaded: %s", nc_slot_name(k), g->error[k]);
    }
}

static void fail_start(nc_server *s)
{
    s->exit_code = 1;
    event_base_loopbreak(s->base);
}

/* The first load finished (g NULL: it failed): start serving, or exit 1. */
static void on_loaded(nc_server *s, nc_models *g)
{
    int err;
    if (!g) {
        nc_log(NC_LOG_ERR, "%s", s->reload_summary);
        fail_start(s);
        return;
    }
    s->models = g;
    if (s->state == NC_SERVER_DRAINING || s->state == NC_SERVER_LEAVING)
        return;                 /* stopped meanwhile: never serve */
    log_models(g);
    snprintf(s->last_reload, sizeof s->last_reload, "none since start");
    if ((err = nc_batcher_new(&s->cfg, s->models, &s->batcher))) {
        nc_log(NC_LOG_ERR, "cannot start workers: %s", strerror(-err));
        fail_start(s);
        return;
    }
    s->done_ev = event_new(s->base, nc_batcher_done_fd(s->batcher), EV_READ | EV_PERSIST,
                           on_done, s);
    if (!s->done_ev || event_add(s->done_ev, NULL) || enable_listeners(s)) {
        nc_log(NC_LOG_ERR, "cannot set up the event loop");
        fail_start(s);
        return;
    }
    s->state = NC_SERVER_SERVING;
    nc_batcher_stats bs;
    nc_batcher_stats_get(s->batcher, &bs);
    char ready[128];
    snprintf(ready, sizeof ready, "READY=1\nMAINPID=%ld", (long)getpid());
    nc_notify(ready);
    nc_server_notify_status(s);
    nc_log(NC_LOG_NOTICE, "ready: %u workers (+%u for high priority) a model, max batch %u, "
           "queue %u images", bs.workers, bs.priority_workers, s->cfg.max_batch,
           s->cfg.queue_capacity);
    if (s->reload_again)
        start_reload(s);
}

static void on_reload_done(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    nc_server *s = arg;
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof v);
    (void)r;
    pthread_mutex_lock(&s->reload_lock);
    nc_models *g = s->reload_result;
    s->reload_result = NULL;
    pthread_mutex_unlock(&s->reload_lock);
    s->reload_running = 0;
    if (!s->models) {
        on_loaded(s, g);
        return;
    }
    int failed = 0;
    if (g) {
        for (int k = 0; k < NC_SLOTS; k++)
            if (g->error[k][0] && g->path[k][0]) {
                failed = 1;
                nc_log(NC_LOG_ERR, "reload: %s model: %s%s", nc_slot_name(k), g->error[k],
                       g->slot[k] ? "; still serving the old model" : "");
            }
        nc_batcher_set_models(s->batcher, g);
        nc_models_unref(s->models);
        s->models = g;
        snprintf(s->last_reload, sizeof s->last_reload, "%s%s", failed ? "partly failed: " : "ok: ",
                 s->reload_summary);
    } else {
        failed = 1;
        snprintf(s->last_reload, sizeof s->last_reload,
                 "failed: no model could be loaded; old models kept (%s)", s->reload_summary);
    }
    if (failed)
        s->metrics.reloads_failed++;
    else
        s->metrics.reloads_ok++;
    nc_log(failed ? NC_LOG_WARNING : NC_LOG_NOTICE, "reload %s", s->last_reload);
    if (s->state == NC_SERVER_RELOADING)
        s->state = NC_SERVER_SERVING;
    if (s->state == NC_SERVER_SERVING) {
        nc_notify("READY=1");
        nc_server_notify_status(s);
        if (s->reload_again)
            start_reload(s);
    }
}

/* ---- signals, drain, watchdog ---------------------------------------------- */

static void on_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    nc_server *s = arg;
    nc_log(NC_LOG_WARNING, "drain: timed out with %u connections and %" PRIu64
           " requests left; closing them", s->n_conns, s->requests_in_flight);
    nc_conn_drain_all(s, 1);
    s->exit_code = 1;
    event_base_loopbreak(s->base);
}

static void start_drain(nc_server *s);

static void on_grace_over(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    start_drain(arg);
}

/* The first stop signal with drain_grace_ms and models serving: stay as we
 * are but not ready, then drain. */
static int start_leaving(nc_server *s)
{
    if (!s->cfg.drain_grace_ms || s->state == NC_SERVER_STARTING ||
        s->state == NC_SERVER_LEAVING || s->state == NC_SERVER_DRAINING)
        return 0;
    struct timeval tv = { s->cfg.drain_grace_ms / 1000, (s->cfg.drain_grace_ms % 1000) * 1000 };
    if (evtimer_add(s->grace_ev, &tv))
        return 0;
    nc_log(NC_LOG_NOTICE, "stopping: /readyz says 503 for %u ms (drain_grace_ms), then "
           "draining", s->cfg.drain_grace_ms);
    s->state = NC_SERVER_LEAVING;
    nc_notify("STOPPING=1");
    nc_server_notify_status(s);
    return 1;
}

static void start_drain(nc_server *s)
{
    evtimer_del(s->grace_ev);
    if (s->state == NC_SERVER_LEAVING) {
        /* The grace is over (or a second signal cut it short). */
    } else if (s->state == NC_SERVER_DRAINING) {
        nc_log(NC_LOG_WARNING, "second stop signal: exiting now");
        s->exit_code = 1;
        event_base_loopbreak(s->base);
        return;
    }
    nc_log(NC_LOG_NOTICE, "draining: %u connections, %" PRIu64 " requests in flight",
           s->n_conns, s->requests_in_flight);
    s->state = NC_SERVER_DRAINING;
    nc_notify("STOPPING=1");
    nc_server_notify_status(s);
    close_listeners(s);
    nc_conn_drain_all(s, 0);
    struct timeval tv = { s->cfg.drain_timeout_s, 0 };
    evtimer_add(s->drain_ev, &tv);
    nc_server_check_drained(s);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    nc_server *s = arg;
    if (sig == SIGHUP) {
        if (s->state == NC_SERVER_DRAINING || s->state == NC_SERVER_LEAVING)
            return;
        nc_log(NC_LOG_NOTICE, s->models ? "SIGHUP: reloading models"
                                        : "SIGHUP while loading: the models load again after");
        if (s->reload_running)
            s->reload_again = 1;
        else
            start_reload(s);
    } else if (!start_leaving(s)) {
        start_drain(s);
    }
}

static void on_watchdog(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    nc_server *s = arg;
    nc_batcher_stats bs = { 0 };
    if (s->batcher)         /* none while the models load */
        nc_batcher_stats_get(s->batcher, &bs);
    /* The loop is alive (we are running); the workers are alive unless
     * work waits and no batch has finished since the last tick. */
    int stuck = bs.depth > 0 && bs.progress == s->watchdog_progress;
    s->watchdog_progress = bs.progress;
    if (stuck)
        nc_log(NC_LOG_WARNING, "watchdog: %u images queued and no batch finished", bs.depth);
    else
        nc_notify("WATCHDOG=1");
    nc_server_notify_status(s);
}

/* ---- startup ---------------------------------------------------------------- */

static const char *in_use_hint(int err)
{
    return err == -EADDRINUSE ? " (is another neocogd running? --listen-tcp, --listen-unix "
                                "and --http choose other addresses)" : "";
}

/* Bind (or take from systemd) every socket; the protocol ones disabled. */
static int open_listeners(nc_server *s)
{
    char why[512];
    nc_listen_fd fds[NC_LISTEN_MAX];
    int n = nc_listen_fds(fds, NC_LISTEN_MAX);
    if (n < 0) {
        nc_log(NC_LOG_ERR, "socket activation: %s", strerror(-n));
        return n;
    }
    if (n > 0) {
        /* systemd passed the sockets: FileDescriptorName=http is the
         * metrics port, anything else speaks the protocol. */
        for (int i = 0; i < n; i++) {
            evutil_make_socket_nonblocking(fds[i].fd);
            nc_listen_no_delay(fds[i].fd);
            int err = !strcmp(fds[i].name, "http") ? nc_http_start(s, fds[i].fd)
                                                   : add_listener(s, fds[i].fd);
            if (err) {
                nc_log(NC_LOG_ERR, "socket activation: fd %d (%s): %s", fds[i].fd,
                       fds[i].name, strerror(-err));
                return err;
            }
        }
        nc_log(NC_LOG_INFO, "listening on %d socket(s) passed by systemd", n);
        return 0;
    }
    int fd, err;
    if (strcmp(s->cfg.listen_tcp, "none")) {
        if ((err = nc_listen_tcp(s->cfg.listen_tcp, &fd, why, sizeof why)) ||
            (err = add_listener(s, fd))) {
            nc_log(NC_LOG_ERR, "cannot listen on tcp %s%s", why, in_use_hint(err));
            return err;
        }
        nc_log(NC_LOG_INFO, "listening on tcp %s", s->cfg.listen_tcp);
    }
    if (strcmp(s->cfg.listen_unix, "none")) {
        if ((err = nc_listen_unix(s->cfg.listen_unix, s->cfg.unix_mode, &fd, why, sizeof why)) ||
            (err = add_listener(s, fd))) {
            nc_log(NC_LOG_ERR, "cannot listen on unix %s%s", why, in_use_hint(err));
            return err;
        }
        snprintf(s->unix_path, sizeof s->unix_path, "%s", s->cfg.listen_unix);
        nc_log(NC_LOG_INFO, "listening on unix %s (mode %04o)", s->cfg.listen_unix,
               s->cfg.unix_mode);
    }
    if (strcmp(s->cfg.http, "none")) {
        if ((err = nc_listen_tcp(s->cfg.http, &fd, why, sizeof why)) ||
            (err = nc_http_start(s, fd))) {
            nc_log(NC_LOG_ERR, "cannot listen on http %s%s", why, in_use_hint(err));
            return err;
        }
        nc_log(NC_LOG_INFO, "metrics on http://%s/metrics", s->cfg.http);
    }
    if (s->n_listeners == 0) {
        nc_log(NC_LOG_ERR, "no protocol listener: set listen_tcp or listen_unix");
        return -EINVAL;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static nc_server srv;
    nc_server *s = &srv;
    char why[NC_CONFIG_PATH_MAX + 256];
    nc_config_defaults(&s->cfg);
    int r = nc_config_parse_args(&s->cfg, argc, argv, why, sizeof why);
    if (r == 1)
        return 0;
    if (r < 0) {
        fprintf(stderr, "neocogd: %s (try --help)\n", why);
        return 2;
    }
    nc_log_set_level((int)s->cfg.log_level);
    signal(SIGPIPE, SIG_IGN);
    /* The workers are the parallelism; BLAS threads inside each would
     * oversubscribe the cores. */
    openblas_set_num_threads(1);
    s->started_us = nc_now_us();
    s->reload_fd = -1;
    pthread_mutex_init(&s->reload_lock, NULL);
    nc_log(NC_LOG_INFO, "neocogd %s starting; models from %s", NC_VERSION, s->cfg.models);
    uint64_t nofile = 0;
    uint32_t fit = nc_listen_fit_nofile(s->cfg.max_connections, NC_FD_RESERVE, &nofile);
    if (fit < s->cfg.max_connections) {
        /* Past the limit accept fails and clients wait unanswered in the
         * backlog; below it, the extra ones hear "too many connections". */
        nc_log(NC_LOG_WARNING, "open files limited to %" PRIu64 " (ulimit -n, LimitNOFILE=): "
               "max_connections lowered from %u to %u to keep %u for the rest", nofile,
               s->cfg.max_connections, fit, NC_FD_RESERVE);
        s->cfg.max_connections = fit;
    }
    s->exit_code = 0;
    s->state = NC_SERVER_STARTING;
    s->base = event_base_new();
    s->reload_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!s->base || s->reload_fd < 0) {
        nc_log(NC_LOG_ERR, "cannot set up the event loop");
        return 1;
    }
    s->reload_ev = event_new(s->base, s->reload_fd, EV_READ | EV_PERSIST, on_reload_done, s);
    s->drain_ev = evtimer_new(s->base, on_drain_timeout, s);
    s->grace_ev = evtimer_new(s->base, on_grace_over, s);
    accept_resume_ev = evtimer_new(s->base, on_accept_resume, s);
    s->sig_hup = evsignal_new(s->base, SIGHUP, on_signal, s);
    s->sig_term = evsignal_new(s->base, SIGTERM, on_signal, s);
    s->sig_int = evsignal_new(s->base, SIGINT, on_signal, s);
    if (!s->reload_ev || !s->drain_ev || !s->grace_ev || !accept_resume_ev || !s->sig_hup || !s->sig_term || !s->sig_int ||
        event_add(s->reload_ev, NULL) || event_add(s->sig_hup, NULL) ||
        event_add(s->sig_term, NULL) || event_add(s->sig_int, NULL)) {
        nc_log(NC_LOG_ERR, "cannot set up the event loop");
        return 1;
    }
    if (open_listeners(s)) {
        close_listeners(s);         /* the Unix socket file, if one was made */
        return 1;
    }
    s->watchdog_usec = nc_notify_watchdog_usec();
    /* Ping at half the interval; without a watchdog, still refresh STATUS=. */
    uint64_t tick = s->watchdog_usec ? s->watchdog_usec / 2 : 10000000u;
    s->watchdog_ev = event_new(s->base, -1, EV_PERSIST, on_watchdog, s);
    struct timeval tv = { (time_t)(tick / 1000000u), (suseconds_t)(tick % 1000000u) };
    if (!s->watchdog_ev || event_add(s->watchdog_ev, &tv)) {
        nc_log(NC_LOG_ERR, "cannot set up the watchdog timer");
        return 1;
    }

    /* The models load on the reload thread while the loop answers /healthz
     * and /readyz; on_loaded takes it from there. */
    nc_server_notify_status(s);
    s->reload_running = 1;
    int err = pthread_create(&reload_thread, NULL, reload_main, s);
    if (err) {
        nc_log(NC_LOG_ERR, "cannot start the thread that loads the models: %s", strerror(err));
        return 1;
    }
    reload_thread_joinable = 1;

    event_base_dispatch(s->base);

    if (!s->models && s->reload_running) {
        /* Stopped (SIGTERM) while the models still load: a load cannot be
         * cut short, and waiting for it would make the stop take as long;
         * the kernel frees everything. */
        nc_log(NC_LOG_NOTICE, "exiting before the models finished loading");
        _exit(s->exit_code);
    }
    nc_log(NC_LOG_NOTICE, "exiting");
    close_listeners(s);
    nc_http_stop(s);
    nc_conn_drain_all(s, 1);
    if (reload_thread_joinable)
        pthread_join(reload_thread, NULL);
    nc_models_unref(s->reload_result);
    nc_batcher_free(s->batcher);
    if (s->done_ev)
        event_free(s->done_ev);
    event_free(s->reload_ev);
    event_free(s->drain_ev);
    event_free(s->grace_ev);
    event_free(accept_resume_ev);
    event_free(s->watchdog_ev);
    event_free(s->sig_hup);
    event_free(s->sig_term);
    event_free(s->sig_int);
    event_base_free(s->base);
    close(s->reload_fd);
    nc_models_unref(s->models);
    return s->exit_code;
}

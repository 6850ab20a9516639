/* daemon/main.c — neocogd: parses the configuration, wires the pieces to
 * one event loop and runs it: accept.c (listeners), reload.c (loading the
 * models), stop.c (signals, drain, watchdog), http.c (the side port).
 * Holds no maths, no protocol logic and no callbacks of its own; nothing
 * calls back into it.
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
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include <cblas.h>
#include <event2/event.h>

#include "accept.h"
#include "clock.h"
#include "conn.h"
#include "http.h"
#include "listen.h"
#include "log.h"
#include "nc_config.h"
#include "reload.h"
#include "server.h"
#include "stop.h"

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
    if (!s->base || nc_reload_init(s) || nc_accept_init(s)) {
        nc_log(NC_LOG_ERR, "cannot set up the event loop");
        return 1;
    }
    if (nc_stop_init(s))
        return 1;
    if (nc_accept_open(s)) {
        nc_accept_close(s);         /* the Unix socket file, if one was made */
        return 1;
    }

    /* The models load on the reload thread while the loop answers /healthz
     * and /readyz; reload.c takes it from there. */
    nc_server_notify_status(s);
    if (nc_reload_first(s))
        return 1;

    event_base_dispatch(s->base);

    if (!s->models && s->reload_running) {
        /* Stopped (SIGTERM) while the models still load: a load cannot be
         * cut short, and waiting for it would make the stop take as long;
         * the kernel frees everything. */
        nc_log(NC_LOG_NOTICE, "exiting before the models finished loading");
        _exit(s->exit_code);
    }
    nc_log(NC_LOG_NOTICE, "exiting");
    nc_accept_close(s);
    nc_http_stop(s);
    nc_conn_drain_all(s, 1);
    nc_reload_free(s);
    nc_batcher_free(s->batcher);
    if (s->done_ev)
        event_free(s->done_ev);
    nc_accept_free();
    nc_stop_free(s);
    event_base_free(s->base);
    nc_models_unref(s->models);
    return s->exit_code;
}

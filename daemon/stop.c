/* daemon/stop.c — signals and stopping.  SIGHUP: load the models again
 * (reload.c).  SIGTERM/SIGINT: with drain_grace_ms, first serve on for that
 * long with /readyz answering 503 (a load balancer's health check takes the
 * daemon out of rotation meanwhile; a second signal cuts it short); then
 * stop accepting, finish everything already received, close each
 * connection once it is idle, and leave the loop (or after drain_timeout_s,
 * closing what is left).  Also the watchdog tick, which refreshes STATUS=. */
#include "stop.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>

#include <event2/event.h>

#include "accept.h"
#include "conn.h"
#include "log.h"
#include "notify.h"
#include "reload.h"

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
    nc_accept_close(s);
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
            nc_reload_start(s);
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

int nc_stop_init(nc_server *s)
{
    s->drain_ev = evtimer_new(s->base, on_drain_timeout, s);
    s->grace_ev = evtimer_new(s->base, on_grace_over, s);
    s->sig_hup = evsignal_new(s->base, SIGHUP, on_signal, s);
    s->sig_term = evsignal_new(s->base, SIGTERM, on_signal, s);
    s->sig_int = evsignal_new(s->base, SIGINT, on_signal, s);
    if (!s->drain_ev || !s->grace_ev || !s->sig_hup || !s->sig_term || !s->sig_int ||
        event_add(s->sig_hup, NULL) || event_add(s->sig_term, NULL) ||
        event_add(s->sig_int, NULL)) {
        nc_log(NC_LOG_ERR, "cannot set up the event loop");
        return -ENOMEM;
    }
    s->watchdog_usec = nc_notify_watchdog_usec();
    /* Ping at half the interval; without a watchdog, still refresh STATUS=. */
    uint64_t tick = s->watchdog_usec ? s->watchdog_usec / 2 : 10000000u;
    s->watchdog_ev = event_new(s->base, -1, EV_PERSIST, on_watchdog, s);
    struct timeval tv = { (time_t)(tick / 1000000u), (suseconds_t)(tick % 1000000u) };
    if (!s->watchdog_ev || event_add(s->watchdog_ev, &tv)) {
        nc_log(NC_LOG_ERR, "cannot set up the watchdog timer");
        return -ENOMEM;
    }
    return 0;
}

void nc_stop_free(nc_server *s)
{
    struct event **ev[] = { &s->drain_ev, &s->grace_ev, &s->watchdog_ev,
                            &s->sig_hup, &s->sig_term, &s->sig_int };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
        if (*ev[i]) {
            event_free(*ev[i]);
            *ev[i] = NULL;
        }
}

/* daemon/server.h — the daemon's one shared state, owned by the event
 * thread.  Other threads touch only the batcher (its own locks) and the
 * reload hand-off (reload_lock). */
#ifndef NC_SERVER_H
#define NC_SERVER_H

#include <pthread.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "batcher.h"
#include "config.h"
#include "metrics.h"
#include "models.h"
#include "notify.h"

typedef enum nc_server_state {
    NC_SERVER_STARTING = 0,
    NC_SERVER_SERVING,
    NC_SERVER_RELOADING,
    NC_SERVER_DRAINING,
    /* SIGTERM with drain_grace_ms: serving as before, but /readyz says 503
     * so that load balancers stop sending; then DRAINING. */
    NC_SERVER_LEAVING,
} nc_server_state;

typedef struct nc_conn nc_conn;

typedef struct nc_server {
    nc_config cfg;
    nc_server_state state;
    struct event_base *base;
    nc_batcher *batcher;
    nc_models *models;          /* current generation (ref) */
    nc_metrics metrics;
    uint64_t started_us;
    /* listeners */
    struct evconnlistener *listeners[NC_LISTEN_MAX];
    int n_listeners;
    char unix_path[NC_CONFIG_PATH_MAX];     /* unlinked at exit if ours */
    struct evhttp *http;
    /* connections */
    nc_conn *conns;             /* doubly linked via prev/next */
    uint32_t n_conns;
    uint64_t requests_in_flight;
    /* events */
    struct event *done_ev, *reload_ev, *watchdog_ev, *drain_ev, *grace_ev;
    struct event *sig_hup, *sig_term, *sig_int;
    /* reload */
    int reload_fd;              /* eventfd: a reload finished */
    pthread_mutex_t reload_lock;
    int reload_running, reload_again;
    nc_models *reload_result;   /* under reload_lock */
    char reload_summary[512];
    char last_reload[1024];
    uint64_t watchdog_usec, watchdog_progress;
    int exit_code;
} nc_server;

/* STATUS= line and readiness: sent on every state change. */
void nc_server_notify_status(nc_server *s);
/* Exit the loop once draining and nothing is left. */
void nc_server_check_drained(nc_server *s);
const char *nc_server_state_text(nc_server_state st);

#endif

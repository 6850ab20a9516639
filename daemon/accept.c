/* daemon/accept.c — the protocol listeners and accepting connections: each
 * accepted socket goes to conn.c with its peer's name.  Out of file
 * descriptors, accepting pauses (below) rather than spinning.  One server a
 * process: the pause's timer and start are this file's own. */
#include "accept.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "clock.h"
#include "conn.h"
#include "http.h"
#include "listen.h"
#include "log.h"
#include "notify.h"

/* Out of file descriptors (EMFILE, ENFILE): accept fails at once for as
 * long as the condition lasts while the waiting connection keeps the
 * listener readable, so retrying would spin a core.  Instead every protocol
 * listener is disabled for ACCEPT_PAUSE_MS and tried again; the episode is
 * logged when it starts and when an accept succeeds again. */
#define ACCEPT_PAUSE_MS 100

static struct event *accept_resume_ev;
static uint64_t accept_paused_since;    /* 0: accepting normally */

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    nc_server *s = arg;
    if (s->state == NC_SERVER_SERVING || s->state == NC_SERVER_RELOADING ||
        s->state == NC_SERVER_LEAVING)
        nc_accept_enable(s);    /* draining: the listeners are gone */
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

/* Disabled until the models are loaded (nc_accept_enable): connections
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

int nc_accept_enable(nc_server *s)
{
    for (int i = 0; i < s->n_listeners; i++)
        if (evconnlistener_enable(s->listeners[i]))
            return -EINVAL;
    return 0;
}

void nc_accept_close(nc_server *s)
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

int nc_accept_init(nc_server *s)
{
    accept_resume_ev = evtimer_new(s->base, on_accept_resume, s);
    return accept_resume_ev ? 0 : -ENOMEM;
}

void nc_accept_free(void)
{
    if (accept_resume_ev)
        event_free(accept_resume_ev);
    accept_resume_ev = NULL;
}

/* ---- binding ------------------------------------------------------------------ */

static const char *in_use_hint(int err)
{
    return err == -EADDRINUSE ? " (is another neocogd running? --listen-tcp, --listen-unix "
                                "and --http choose other addresses)" : "";
}

int nc_accept_open(nc_server *s)
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

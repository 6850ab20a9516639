/* daemon/http.c — see http.h. */
#include "http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "clock.h"

static int ready(const nc_server *s)
{
    return s->state == NC_SERVER_SERVING || s->state == NC_SERVER_RELOADING;
}

static void reply_text(struct evhttp_request *r, int code, const char *reason,
                       const char *ctype, const char *body, size_t len)
{
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        evhttp_send_error(r, 500, "out of memory");
        return;
    }
    evbuffer_add(b, body, len);
    evhttp_add_header(evhttp_request_get_output_headers(r), "Content-Type", ctype);
    evhttp_send_reply(r, code, reason, b);
    evbuffer_free(b);
}

static void on_request(struct evhttp_request *r, void *arg)
{
    nc_server *s = arg;
    const char *uri = evhttp_request_get_uri(r);
    if (evhttp_request_get_command(r) != EVHTTP_REQ_GET &&
        evhttp_request_get_command(r) != EVHTTP_REQ_HEAD) {
        evhttp_send_error(r, 405, "only GET");
        return;
    }
    size_t plen = strcspn(uri, "?");
    if (plen == 8 && !strncmp(uri, "/metrics", 8)) {
        nc_batcher_stats bs = { 0 };
        if (s->batcher)     /* none while the models load */
            nc_batcher_stats_get(s->batcher, &bs);
        nc_metrics_gauges g = {
            .queue_depth = bs.depth, .queue_capacity = s->cfg.queue_capacity,
            .queue_bytes = bs.bytes, .connections = s->n_conns, .workers = bs.workers,
            .priority_workers = bs.priority_workers,
            .batches = bs.batches, .batch_images = bs.batch_images,
            .ready = ready(s), .draining = s->state == NC_SERVER_DRAINING,
            .uptime_s = (nc_now_us() - s->started_us) / 1000000u,
        };
        for (int k = 0; k < NC_SLOTS && s->models; k++) {
            const nc_model *m = s->models->slot[k];
            g.model_loaded[k] = m != NULL;
            for (uint32_t l = 0; m && l < m->n_lanes; l++)
                if (m->lane[l]->ops->device_bytes)
                    g.device_bytes += m->lane[l]->ops->device_bytes(m->lane[l]->impl);
            /* Per engine: the GPU lanes, then the CPU. */
            for (uint32_t l = 0; m && l <= m->n_lanes && g.n_engines < NC_METRICS_ENGINES; l++) {
                nc_metrics_engine *e = &g.engine[g.n_engines++];
                int i = l < m->n_lanes ? (int)l : NC_MAX_LANES;
                const nc_backend *be = l < m->n_lanes ? m->lane[l] : m->cpu;
                e->model = nc_slot_name(k);
                if (l < m->n_lanes)
                    nc_model_lane_name(m, l, e->engine, sizeof e->engine);
                else
                    snprintf(e->engine, sizeof e->engine, "%s", be->ops->name);
                e->up = l < m->n_lanes ? !atomic_load(&m->lane_dead[l]) : 1;
                e->batches = atomic_load(&m->batches[i]);
                e->images = atomic_load(&m->images[i]);
            }
        }
        char *text;
        size_t len;
        if (nc_metrics_render(&s->metrics, &g, &text, &len)) {
            evhttp_send_error(r, 500, "out of memory");
            return;
        }
        reply_text(r, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", text, len);
        free(text);
    } else if (plen == 8 && !strncmp(uri, "/healthz", 8)) {
        reply_text(r, 200, "OK", "text/plain", "ok\n", 3);
    } else if (plen == 7 && !strncmp(uri, "/readyz", 7)) {
        /* The body says why it is not ready, for people and probes alike. */
        const char *body = ready(s) ? "ready\n"
                         : s->state == NC_SERVER_STARTING ? "loading\n" : "draining\n";
        if (ready(s))
            reply_text(r, 200, "OK", "text/plain", body, strlen(body));
        else
            reply_text(r, 503, "Service Unavailable", "text/plain", body, strlen(body));
    } else {
        evhttp_send_error(r, 404, "try /metrics, /healthz or /readyz");
    }
}

/* Out of file descriptors, evhttp's listener would retry accept at once
 * and spin a core: pause it 100 ms at a time, as main.c does the protocol
 * listeners. */
static struct evconnlistener *http_listener;
static struct event *http_resume_ev;
static nc_server *http_server;  /* the error callback's argument is evhttp's own */

static void on_http_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    if (http_listener)
        evconnlistener_enable(http_listener);
}

static void on_http_accept_error(struct evconnlistener *l, void *arg)
{
    (void)arg;
    int err = EVUTIL_SOCKET_ERROR();
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        if (http_server)
            http_server->metrics.accept_pauses++;
        evconnlistener_disable(l);
        struct timeval tv = { 0, 100000 };
        evtimer_add(http_resume_ev, &tv);
    }
}

int nc_http_start(nc_server *s, int fd)
{
    s->http = evhttp_new(s->base);
    if (!s->http)
        return -ENOMEM;
    /* Small limits: this port serves three tiny GETs. */
    evhttp_set_max_headers_size(s->http, 8192);
    evhttp_set_max_body_size(s->http, 0);
    evhttp_set_timeout(s->http, 10);
    evhttp_set_gencb(s->http, on_request, s);
    struct evhttp_bound_socket *b = evhttp_accept_socket_with_handle(s->http, fd);
    http_resume_ev = b ? evtimer_new(s->base, on_http_resume, s) : NULL;
    if (!http_resume_ev) {
        evhttp_free(s->http);
        s->http = NULL;
        return b ? -ENOMEM : -EINVAL;
    }
    http_listener = evhttp_bound_socket_get_listener(b);
    http_server = s;
    evconnlistener_set_error_cb(http_listener, on_http_accept_error);
    return 0;
}

void nc_http_stop(nc_server *s)
{
    if (s->http)
        evhttp_free(s->http);
    s->http = NULL;
    http_listener = NULL;
    http_server = NULL;
    if (http_resume_ev)
        event_free(http_resume_ev);
    http_resume_ev = NULL;
}

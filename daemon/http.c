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
#include "http_call.h"
#include "http_page.h"
#include "nc_config.h"

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

static void send_metrics(nc_server *s, struct evhttp_request *r)
{
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
}

/* ---- the Open Inference Protocol's metadata and health ------------------------ */

static const char *const v2_names[] = { NULL, "cnn", "neocognitron", "ensemble" };

/* The Neocog__Model a /v2 model name means, 0 none. */
static int v2_model(const char *name, size_t len)
{
    for (int m = 1; m < 4; m++)
        if (len == strlen(v2_names[m]) && !strncmp(name, v2_names[m], len))
            return m;
    return 0;
}

static int model_loaded(const nc_server *s, int model)
{
    if (!ready(s) || !s->models)
        return 0;
    int cnn = s->models->slot[NC_SLOT_CNN] != NULL, neo = s->models->slot[NC_SLOT_NEOCOG] != NULL;
    return model == NEOCOG__MODEL__MODEL_CNN ? cnn
         : model == NEOCOG__MODEL__MODEL_NEOCOGNITRON ? neo : cnn && neo;
}

static void send_text_json(nc_server *s, struct evhttp_request *r, int status, const char *text)
{
    char *body = strdup(text);
    nc_http_send_json(s, r, status, body, body ? strlen(body) : 0);
}

/* Health answers are in the status alone (200, else 400 as Triton does). */
static void send_health(nc_server *s, struct evhttp_request *r, int ok)
{
    send_text_json(s, r, ok ? 200 : 400, ok ? "{}\n" : "{\"error\":\"not ready\"}\n");
}

static void send_model_metadata(nc_server *s, struct evhttp_request *r, int model)
{
    /* The classes come from the CNN when it takes part (as the answers'
     * labels do). */
    const nc_model *m = s->models ? s->models->slot[model == NEOCOG__MODEL__MODEL_NEOCOGNITRON
                                                    ? NC_SLOT_NEOCOG : NC_SLOT_CNN] : NULL;
    char classes[16] = "-1";
    if (m)
        snprintf(classes, sizeof classes, "%u", m->be->info.n_classes);
    char body[1024];
    snprintf(body, sizeof body,
             "{\"name\":\"%s\",\"versions\":[\"1\"],\"platform\":\"neocogd\","
             "\"inputs\":[{\"name\":\"image\",\"datatype\":\"BYTES\",\"shape\":[-1]},"
             "{\"name\":\"pixels\",\"datatype\":\"UINT8\",\"shape\":[-1,-1,-1]}],"
             "\"outputs\":[{\"name\":\"label\",\"datatype\":\"INT32\",\"shape\":[-1]},"
             "{\"name\":\"text\",\"datatype\":\"BYTES\",\"shape\":[-1]},"
             "{\"name\":\"confidence\",\"datatype\":\"FP32\",\"shape\":[-1]},"
             "{\"name\":\"scores\",\"datatype\":\"FP32\",\"shape\":[-1,%s]}]}\n",
             v2_names[model], classes);
    send_text_json(s, r, 200, body);
}

/* /v2...: path without the query. */
static void route_v2(nc_server *s, struct evhttp_request *r, const char *path, size_t plen,
                     int method)
{
    const int get = method == EVHTTP_REQ_GET || method == EVHTTP_REQ_HEAD;
    const char *tail = path + 3;            /* after "/v2" */
    size_t tl = plen - 3;
    if (tl == 0 || (tl == 1 && *tail == '/')) {
        if (!get)
            goto not_allowed_get;
        char body[256];
        snprintf(body, sizeof body, "{\"name\":\"neocogd\",\"version\":\"%s\","
                 "\"extensions\":[]}\n", NC_VERSION);
        send_text_json(s, r, 200, body);
        return;
    }
    if (tl == 12 && !strncmp(tail, "/health/live", 12)) {
        if (!get)
            goto not_allowed_get;
        send_health(s, r, 1);
        return;
    }
    if (tl == 13 && !strncmp(tail, "/health/ready", 13)) {
        if (!get)
            goto not_allowed_get;
        send_health(s, r, ready(s));
        return;
    }
    if (tl > 8 && !strncmp(tail, "/models/", 8)) {
        const char *name = tail + 8, *slash = memchr(name, '/', tl - 8);
        size_t nl = slash ? (size_t)(slash - name) : tl - 8;
        size_t rest = tl - 8 - nl;
        int model = v2_model(name, nl);
        if (!model) {
            char why[160];
            snprintf(why, sizeof why, "unknown model '%.*s' (cnn, neocognitron, ensemble)",
                     (int)(nl > 40 ? 40 : nl), name);
            nc_http_send_error(s, r, 404, "NOT_FOUND", why);
            return;
        }
        if (rest == 0) {
            if (!get)
                goto not_allowed_get;
            send_model_metadata(s, r, model);
            return;
        }
        if (rest == 6 && !strncmp(slash, "/ready", 6)) {
            if (!get)
                goto not_allowed_get;
            send_health(s, r, model_loaded(s, model));
            return;
        }
        if (rest == 6 && !strncmp(slash, "/infer", 6)) {
            if (method != EVHTTP_REQ_POST) {
                evhttp_add_header(evhttp_request_get_output_headers(r), "Allow", "POST");
                nc_http_send_error(s, r, 405, "METHOD_NOT_ALLOWED", "infer takes POST");
                return;
            }
            nc_http_recognize(s, r, NC_HTTP_API_V2, model, v2_names[model]);
            return;
        }
    }
    nc_http_send_error(s, r, 404, "NOT_FOUND", "no such path: /v2, /v2/health/live, "
                       "/v2/health/ready, /v2/models/NAME, /v2/models/NAME/ready, "
                       "/v2/models/NAME/infer");
    return;
not_allowed_get:
    evhttp_add_header(evhttp_request_get_output_headers(r), "Allow", "GET, HEAD");
    nc_http_send_error(s, r, 405, "METHOD_NOT_ALLOWED", "this path takes GET");
}

/* A browser's CORS preflight, answered only when http_cors_origin is set. */
static void send_preflight(nc_server *s, struct evhttp_request *r)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(r);
    nc_http_add_cors(s, r);
    evhttp_add_header(h, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
    evhttp_add_header(h, "Access-Control-Allow-Headers", "Content-Type");
    evhttp_add_header(h, "Access-Control-Max-Age", "600");
    evhttp_send_reply(r, 204, "No Content", NULL);
}

static void on_request(struct evhttp_request *r, void *arg)
{
    nc_server *s = arg;
    const char *uri = evhttp_request_get_uri(r);
    const int method = (int)evhttp_request_get_command(r);
    const int get = method == EVHTTP_REQ_GET || method == EVHTTP_REQ_HEAD;
    size_t plen = strcspn(uri, "?");
    if (method == EVHTTP_REQ_OPTIONS && s->cfg.http_cors_origin[0]) {
        send_preflight(s, r);
        return;
    }
    if (plen == 1 && uri[0] == '/') {   /* the page in the browser */
        nc_http_page(s, r);
        return;
    }
    if (plen == 13 && !strncmp(uri, "/v1/recognize", 13)) {
        if (method != EVHTTP_REQ_POST) {
            evhttp_add_header(evhttp_request_get_output_headers(r), "Allow", "POST");
            nc_http_send_error(s, r, 405, "METHOD_NOT_ALLOWED", "/v1/recognize takes POST");
            return;
        }
        nc_http_recognize(s, r, NC_HTTP_API_V1, 0, NULL);
        return;
    }
    if (plen >= 3 && !strncmp(uri, "/v2", 3) && (plen == 3 || uri[3] == '/')) {
        route_v2(s, r, uri, plen, method);
        return;
    }
    const int known = (plen == 8 && !strncmp(uri, "/metrics", 8)) ||
                      (plen == 8 && !strncmp(uri, "/healthz", 8)) ||
                      (plen == 7 && !strncmp(uri, "/readyz", 7));
    if (known && !get) {
        evhttp_add_header(evhttp_request_get_output_headers(r), "Allow", "GET, HEAD");
        nc_http_send_error(s, r, 405, "METHOD_NOT_ALLOWED", "this path takes GET");
        return;
    }
    if (plen == 8 && !strncmp(uri, "/metrics", 8)) {
        send_metrics(s, r);
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
        nc_http_send_error(s, r, 404, "NOT_FOUND", "no such path: POST /v1/recognize, /v2..., "
                           "GET /metrics, /healthz or /readyz");
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
    /* The socket path's limits: a body as large as a frame.  evhttp reads
     * one up to twice that, so that nc_http_recognize refuses it with the
     * JSON error body every other status has (413); a larger one evhttp
     * refuses by its Content-Length before reading it, with its own page
     * (libevent 2.1 has no hook to word that answer), and with lingering
     * close the client reads that answer instead of a reset.  A client
     * that sends nothing for frame_timeout_ms while its request arrives is
     * dropped without an answer, as is an idle keep-alive connection
     * (evhttp's timer restarts with each read: it bounds a stall, not the
     * whole request as the socket path's frame timer does). */
    evhttp_set_max_headers_size(s->http, 8192);
    evhttp_set_max_body_size(s->http, 2 * (ev_ssize_t)s->cfg.max_frame_bytes);
    evhttp_set_flags(s->http, EVHTTP_SERVER_LINGERING_CLOSE);
    struct timeval tmo = { s->cfg.frame_timeout_ms / 1000,
                           (s->cfg.frame_timeout_ms % 1000) * 1000 };
    evhttp_set_timeout_tv(s->http, &tmo);
    /* Every method reaches on_request, which answers 405 in JSON. */
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                               EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS |
                               EVHTTP_REQ_PATCH);
    evhttp_set_gencb(s->http, on_request, s);
    struct evhttp_bound_socket *b = evhttp_accept_socket_with_handle(s->http, fd);
    http_resume_ev = b ? evtimer_new(s->base, on_http_resume, s) : NULL;
    if (!http_resume_ev) {
        evhttp_free(s->http);
        s->http = NULL;
        return b ? -ENOMEM : -EINVAL;
    }
    int err = nc_http_calls_start(s);
    if (err) {
        event_free(http_resume_ev);
        http_resume_ev = NULL;
        evhttp_free(s->http);
        s->http = NULL;
        return err;
    }
    http_listener = evhttp_bound_socket_get_listener(b);
    http_server = s;
    evconnlistener_set_error_cb(http_listener, on_http_accept_error);
    return 0;
}

void nc_http_stop(nc_server *s)
{
    nc_http_calls_stop();   /* before evhttp_free: they hold its connections' callbacks */
    if (s->http)
        evhttp_free(s->http);
    s->http = NULL;
    http_listener = NULL;
    http_server = NULL;
    if (http_resume_ev)
        event_free(http_resume_ev);
    http_resume_ev = NULL;
}

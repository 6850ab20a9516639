/* daemon/http_call.c — see http_call.h. */
#include "http_call.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

#include "frame.h"
#include "handler.h"
#include "http_reply.h"
#include "http_request.h"
#include "log.h"
#include "message.h"
#include "offload.h"
#include "request.h"

typedef struct call {
    nc_server *s;
    struct evhttp_request *req;         /* NULL once evhttp freed it */
    struct evhttp_connection *evcon;    /* valid while !gone */
    atomic_int gone;                    /* the connection closed */
    int held;                           /* a request of ours is queued */
    int answered;
    nc_http_api api;
    char model_name[16];                /* /v2 */
    nc_http_call_in in;                 /* names, /v2 id and outputs */
    /* The Request handed to the handler, pointing into in and the body
     * (no protobuf round trip): lives with the call. */
    Neocog__Request rq;
    Neocog__RecognizeRequest rr;
    Neocog__Image **images;
    /* The answer's body, made by the worker that finished the last image
     * (call_prepare) when prepared is set: NULL there is out of memory. */
    int prepared;
    int answer_status;
    char *answer;
    size_t answer_len;
    /* Parsing, on the offload thread (parse_run): what it needs, copied
     * from the evhttp request (which may go meanwhile), and what it found. */
    nc_offload_job job;
    struct evbuffer *body;              /* the request's body, moved here */
    char *query;                        /* after '?', NULL none */
    char *content_type;                 /* NULL none */
    int v2_model;
    uint64_t id;
    int parse_status;                   /* 0, else the HTTP status to refuse with */
    char why[320];
    size_t packed;                      /* the Request's packed size */
    int queued;                         /* the handler holds the call */
} call;

static const char *reason_phrase(int status)
{
    switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Internal Server Error";
    }
}

void nc_http_add_cors(const nc_server *s, struct evhttp_request *r)
{
    if (!s->cfg.http_cors_origin[0])
        return;
    struct evkeyvalq *h = evhttp_request_get_output_headers(r);
    evhttp_add_header(h, "Access-Control-Allow-Origin", s->cfg.http_cors_origin);
    evhttp_add_header(h, "Vary", "Origin");
}

static void free_body(const void *data, size_t len, void *extra)
{
    (void)len;
    (void)extra;
    free((void *)data);
}

void nc_http_send_json(nc_server *s, struct evhttp_request *r, int status, char *body,
                       size_t len)
{
    struct evbuffer *b = evbuffer_new();
    struct evkeyvalq *h = evhttp_request_get_output_headers(r);
    evhttp_add_header(h, "Content-Type", "application/json");
    if (status == 429 || status == 503)
        evhttp_add_header(h, "Retry-After", "1");
    if (s->state == NC_SERVER_DRAINING)
        evhttp_add_header(h, "Connection", "close");
    nc_http_add_cors(s, r);
    /* The body goes to the socket as it is, not copied (a reply of many
     * images is tens of kilobytes); the buffer frees it once written. */
    if (b && body && len && !evbuffer_add_reference(b, body, len, free_body, NULL))
        body = NULL;
    free(body);
    if (!b)
        status = 500;
    evhttp_send_reply(r, status, reason_phrase(status), b);
    if (b)
        evbuffer_free(b);
}

void nc_http_send_error(nc_server *s, struct evhttp_request *r, int status, const char *code,
                        const char *message)
{
    size_t len = 0;
    char *body = nc_http_error_json(message, code, &len);
    nc_http_send_json(s, r, body ? status : 500, body, len);
}

/* ---- the call as the handler's origin ------------------------------------------ */

static void call_free(call *c)
{
    nc_http_call_in_free(&c->in);
    free(c->images);
    free(c->answer);
    if (c->body)
        evbuffer_free(c->body);
    free(c->query);
    free(c->content_type);
    free(c);
}

/* The JSON answer to reply: *status and a malloc'd body, NULL when out of
 * memory.  Any thread: reads only what the call was made with. */
static char *render(const call *c, const Neocog__Reply *reply, int *status, size_t *len)
{
    return c->api == NC_HTTP_API_V1
           ? nc_http_v1_json(reply, c->in.name, status, len)
           : nc_http_v2_json(reply, c->model_name, c->in.v2_id, c->in.v2_outputs, status, len);
}

static void on_close(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    call *c = arg;
    atomic_store(&c->gone, 1);
    /* Still on the connection: evhttp frees it right after this callback.
     * Detached (evhttp_connection_fail on a request not yet answered): it is
     * ours, and the answer's evhttp_send_reply frees it. */
    if (c->req && evhttp_request_get_connection(c->req))
        c->req = NULL;
}

static void call_send(void *owner, const Neocog__Reply *reply)
{
    call *c = owner;
    if (c->answered)
        return;
    c->answered = 1;
    if (c->held && !atomic_load(&c->gone))
        evhttp_connection_set_closecb(c->evcon, NULL, NULL);
    if (!c->req)
        return;         /* the client is gone */
    int status = 500;
    size_t len = 0;
    char *body;
    if (c->prepared) {
        body = c->answer;
        status = c->answer_status;
        len = c->answer_len;
        c->answer = NULL;
    } else {
        body = render(c, reply, &status, &len);
    }
    if (!body)
        nc_http_send_error(c->s, c->req, 500, "RESOURCE_EXHAUSTED", "out of memory");
    else
        nc_http_send_json(c->s, c->req, status, body, len);
    c->req = NULL;
}

/* Keep the call until its answer, told when the client goes (a client
 * already gone while its body was parsed: its connection is no more). */
static void call_hold(void *owner)
{
    call *c = owner;
    c->queued = 1;
    if (!c->held && !atomic_load(&c->gone))
        evhttp_connection_set_closecb(c->evcon, on_close, c);
    c->held = 1;
}

static void call_done(void *owner)
{
    call_free(owner);
}

/* Worker thread: the answer's body, so the event thread only sends it. */
static void call_prepare(void *owner, const Neocog__Reply *reply)
{
    call *c = owner;
    c->answer_status = 500;
    c->answer = render(c, reply, &c->answer_status, &c->answer_len);
    c->prepared = 1;
}

static const nc_origin_ops call_ops = { call_send, call_hold, call_done, call_prepare };

/* ---- recognition --------------------------------------------------------------- */

/* An error before the handler: counted as the socket path counts its
 * refusals. */
static void refuse(nc_server *s, struct evhttp_request *r, int status, int code,
                   const char *code_name, const char *why)
{
    nc_metrics_count_reply(&s->metrics, code);
    nc_http_send_error(s, r, status, code_name ? code_name : nc_msg_code_name(code), why);
}

/* An error found after the call was held for parsing: sent as refuse()
 * does, when the client is still there to read it. */
static void call_refuse(call *c, int status, int code, const char *code_name, const char *why)
{
    c->answered = 1;
    if (c->held && !atomic_load(&c->gone))
        evhttp_connection_set_closecb(c->evcon, NULL, NULL);
    if (c->req)
        refuse(c->s, c->req, status, code, code_name, why);
    else
        nc_metrics_count_reply(&c->s->metrics, code);
}

/* The offload thread: the body and query into c->in and the Request, or
 * parse_status and why.  Reads only the call's own copies. */
static void parse_run(nc_offload_job *job)
{
    call *c = (call *)((char *)job - offsetof(call, job));
    char empty[1] = { 0 };
    size_t len = evbuffer_get_length(c->body);
    char *body = len ? (char *)evbuffer_pullup(c->body, -1) : empty;
    int status = 0;
    c->why[0] = '\0';
    nc_http_opts_init(&c->in.opts);
    if (!body) {
        status = 500;
        snprintf(c->why, sizeof c->why, "out of memory");
    } else if (c->query && nc_http_opts_query(&c->in.opts, c->query, c->why, sizeof c->why)) {
        status = 400;
    } else if (c->api == NC_HTTP_API_V1) {
        status = nc_http_v1_parse(&c->in, c->content_type, body, len, c->why, sizeof c->why);
    } else {
        status = nc_http_v2_parse(&c->in, body, len, c->why, sizeof c->why);
    }
    if (c->api == NC_HTTP_API_V2)
        c->in.opts.model = c->v2_model;     /* the path names it */
    /* The Request as the socket would carry it, without packing it: its
     * packed size is what the frame limit and the queue's byte budget
     * count. */
    if (!status && !(c->images = malloc((c->in.n ? c->in.n : 1) * sizeof *c->images))) {
        status = 500;
        snprintf(c->why, sizeof c->why, "out of memory");
    }
    if (!status) {
        nc_http_request_fill(&c->in, c->id, c->images, &c->rq, &c->rr);
        c->packed = protobuf_c_message_get_packed_size(&c->rq.base);
    }
    c->parse_status = status;
}

/* The event thread, the body parsed: refused, or into the handler. */
static void parse_finish(nc_offload_job *job)
{
    call *c = (call *)((char *)job - offsetof(call, job));
    nc_server *s = c->s;
    int status = c->parse_status;
    s->requests_in_flight--;
    if (!status && c->packed > s->cfg.max_frame_bytes) {
        status = 413;
        snprintf(c->why, sizeof c->why, "request of %zu bytes exceeds the limit of %u "
                 "(max_frame_bytes)", c->packed, s->cfg.max_frame_bytes);
    }
    if (status) {
        call_refuse(c, status, status == 413 || status == 500 ? NEOCOG__CODE__RESOURCE_EXHAUSTED
                                                              : NEOCOG__CODE__INVALID_ARGUMENT,
                    status == 415 ? "UNSUPPORTED_MEDIA_TYPE" : NULL, c->why);
        call_free(c);
    } else {
        nc_origin o = { .ops = &call_ops, .owner = c, .cancelled = &c->gone };
        nc_handle_recognize(s, &o, &c->rq, NC_FRAME_HEADER_LEN + c->packed);
        if (!c->queued)
            call_free(c);   /* answered at once */
    }
    nc_server_check_drained(s);
}

/* At exit, a call still being parsed: no answer (evhttp_free closes its
 * connection). */
static void parse_drop(nc_offload_job *job)
{
    call *c = (call *)((char *)job - offsetof(call, job));
    if (!atomic_load(&c->gone))
        evhttp_connection_set_closecb(c->evcon, NULL, NULL);
    call_free(c);
}

static nc_offload *parser;

int nc_http_calls_start(nc_server *s)
{
    return parser ? 0 : nc_offload_new(s->base, &parser);
}

void nc_http_calls_stop(void)
{
    nc_offload_free(parser, parse_drop);
    parser = NULL;
}

void nc_http_recognize(nc_server *s, struct evhttp_request *r, nc_http_api api, int v2_model,
                       const char *v2_name)
{
    static uint64_t next_id;
    char why[320];
    if (s->state == NC_SERVER_STARTING || !s->models || !s->batcher) {
        refuse(s, r, 503, NEOCOG__CODE__UNAVAILABLE, NULL, "the models are still loading");
        return;
    }
    if (s->state == NC_SERVER_DRAINING) {
        refuse(s, r, 503, NEOCOG__CODE__UNAVAILABLE, NULL, "server is draining");
        return;
    }
    struct evbuffer *input = evhttp_request_get_input_buffer(r);
    size_t len = evbuffer_get_length(input);
    if (len > s->cfg.max_frame_bytes) {     /* evhttp read it (http.c: up to twice this) */
        snprintf(why, sizeof why, "body of %zu bytes exceeds the limit of %u (max_frame_bytes)",
                 len, s->cfg.max_frame_bytes);
        refuse(s, r, 413, NEOCOG__CODE__RESOURCE_EXHAUSTED, NULL, why);
        return;
    }
    /* The body, the query and the Content-Type go with the call to the
     * parsing thread: the call owns them, as evhttp may free the request
     * if the client goes meanwhile (and workers read the images from the
     * body until the answer). */
    call *c = calloc(1, sizeof *c);
    const char *uri = evhttp_request_get_uri(r), *q = strchr(uri, '?');
    const char *ctype = evhttp_find_header(evhttp_request_get_input_headers(r), "Content-Type");
    if (c && (!(c->body = evbuffer_new()) || evbuffer_add_buffer(c->body, input) ||
              (q && !(c->query = strdup(q + 1))) ||
              (ctype && !(c->content_type = strdup(ctype))))) {
        call_free(c);
        c = NULL;
    }
    if (!c) {
        refuse(s, r, 500, NEOCOG__CODE__RESOURCE_EXHAUSTED, NULL, "out of memory");
        return;
    }
    c->s = s;
    c->req = r;
    c->evcon = evhttp_request_get_connection(r);
    c->api = api;
    c->v2_model = v2_model;
    c->id = ++next_id;
    atomic_init(&c->gone, 0);
    snprintf(c->model_name, sizeof c->model_name, "%s", v2_name ? v2_name : "");
    /* Held from here: a client that goes while its body is parsed is
     * noticed, and the drain waits for the call as for a queued one. */
    c->held = 1;
    evhttp_connection_set_closecb(c->evcon, on_close, c);
    s->requests_in_flight++;
    c->job.run = parse_run;
    c->job.finish = parse_finish;
    nc_offload_submit(parser, &c->job);
}

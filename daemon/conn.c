/* daemon/conn.c — see conn.h. */
#include "conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "handler.h"
#include "log.h"
#include "message.h"

/* Unsent reply bytes above which a connection is not read any more: a
 * client that sends but never reads must not grow our memory. */
#define NC_CONN_MAX_OUTPUT (4u << 20)

/* Draining.  Closing a socket that the client may be writing to loses the
 * request it is writing (the kernel answers it with a reset), and the
 * client cannot tell whether it was run.  So an idle connection is not
 * closed at once: every frame that arrives is answered UNAVAILABLE, and the
 * connection waits for the client to close, or for DRAIN_GRACE of silence.
 * Then it half closes (the client reads an orderly end of stream) and keeps
 * reading for DRAIN_LINGER, so bytes still on the way never meet a closed
 * socket.  drain_timeout_s bounds all of it. */
#define NC_CONN_DRAIN_GRACE_MS 1000
#define NC_CONN_DRAIN_LINGER_MS 500

const char *nc_conn_state_text(nc_conn_state st)
{
    switch (st) {
    case NC_CONN_READ_HEADER: return "read_header";
    case NC_CONN_READ_BODY: return "read_body";
    case NC_CONN_BLOCKED: return "blocked";
    case NC_CONN_CLOSING: return "closing";
    case NC_CONN_CLOSED: return "closed";
    }
    return "?";
}

static void conn_set_state(nc_conn *c, nc_conn_state st)
{
    if (c->state != st && nc_log_get_level() >= NC_LOG_DEBUG)
        nc_log(NC_LOG_DEBUG, "conn %s: %s -> %s", c->peer, nc_conn_state_text(c->state),
               nc_conn_state_text(st));
    c->state = st;
}

nc_conn *nc_conn_ref(nc_conn *c)
{
    c->refs++;
    return c;
}

void nc_conn_unref(nc_conn *c)
{
    if (--c->refs == 0)
        free(c);
}

static void conn_close(nc_conn *c)
{
    if (c->state == NC_CONN_CLOSED)
        return;
    conn_set_state(c, NC_CONN_CLOSED);
    atomic_store(&c->closed, 1);
    if (c->frame_timer)
        event_free(c->frame_timer);
    c->frame_timer = NULL;
    if (c->drain_timer)
        event_free(c->drain_timer);
    c->drain_timer = NULL;
    bufferevent_free(c->bev);
    c->bev = NULL;
    nc_server *s = c->srv;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    s->n_conns--;
    nc_conn_unref(c);
    nc_server_check_drained(s);
}

/* Nothing in flight, nothing half-read, nothing unsent, and the kernel
 * holds no more bytes from the client. */
static int conn_idle(nc_conn *c)
{
    if (c->state != NC_CONN_READ_HEADER || c->in_flight)
        return 0;
    if (evbuffer_get_length(bufferevent_get_input(c->bev)) ||
        evbuffer_get_length(bufferevent_get_output(c->bev)))
        return 0;
    int pending = 0;
    if (ioctl(bufferevent_getfd(c->bev), FIONREAD, &pending) == 0 && pending > 0)
        return 0;
    return 1;
}

static void drain_timer_arm(nc_conn *c, unsigned ms)
{
    struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
    evtimer_add(c->drain_timer, &tv);
}

static void on_drain_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    nc_conn *c = arg;
    if (c->drain_shut || c->state == NC_CONN_CLOSED) {
        conn_close(c);
        return;
    }
    if (!conn_idle(c)) {
        /* A refusal still flushing or a frame half in: wait again (a frame
         * that never completes meets frame_timeout_ms). */
        drain_timer_arm(c, NC_CONN_DRAIN_GRACE_MS);
        return;
    }
    if (shutdown(bufferevent_getfd(c->bev), SHUT_WR) < 0) {
        conn_close(c);
        return;
    }
    c->drain_shut = 1;
    drain_timer_arm(c, NC_CONN_DRAIN_LINGER_MS);
}

/* Draining and the connection just went idle: everything it sent so far is
 * answered.  From now on it is only refused (see NC_CONN_DRAIN_GRACE_MS). */
static void maybe_drain_idle(nc_conn *c)
{
    if (c->srv->state != NC_SERVER_DRAINING || c->state == NC_CONN_CLOSED || c->drain_idle ||
        !conn_idle(c))
        return;
    if (c->peer_eof) {      /* the client has finished too */
        conn_close(c);
        return;
    }
    c->drain_timer = evtimer_new(c->srv->base, on_drain_timer, c);
    if (!c->drain_timer) {
        conn_close(c);
        return;
    }
    c->drain_idle = 1;
    drain_timer_arm(c, NC_CONN_DRAIN_GRACE_MS);
}

/* The connection as a request's origin (request.h): a queued request holds
 * a reference and counts as in flight (backpressure, drain). */
static void origin_send(void *owner, const Neocog__Reply *r)
{
    nc_conn_send(owner, r);
}

static void origin_hold(void *owner)
{
    nc_conn *c = owner;
    c->in_flight++;
    nc_conn_ref(c);
}

static void origin_done(void *owner)
{
    nc_conn_request_done(owner);
}

static const nc_origin_ops conn_origin_ops = { origin_send, origin_hold, origin_done, NULL };

static nc_origin conn_origin(nc_conn *c)
{
    return (nc_origin){ .ops = &conn_origin_ops, .owner = c, .cancelled = &c->closed };
}

static void conn_error(nc_conn *c, uint64_t id, int code, const char *message)
{
    nc_origin o = conn_origin(c);
    nc_handle_error(c->srv, &o, id, code, message);
}

/* A whole frame's payload: a Request for the handler.  It holds the
 * frame's bytes against the queue's budget. */
static void conn_request(nc_conn *c, const uint8_t *payload, size_t len)
{
    nc_origin o = conn_origin(c);
    nc_handle_request(c->srv, &o, payload, len, NC_FRAME_HEADER_LEN + len);
}

/* A whole frame on a draining idle connection: answer it UNAVAILABLE with
 * its id (id 0 when it does not even decode), and give the client another
 * grace period to notice. */
static void drain_refuse(nc_conn *c, const uint8_t *payload, size_t len)
{
    uint64_t id = 0;
    nc_msg *m = NULL;
    if (nc_msg_unpack(&neocog__request__descriptor, payload, len, 0, &m) == 0) {
        id = nc_msg_request(m)->id;
        nc_msg_free(m);
    }
    conn_error(c, id, NEOCOG__CODE__UNAVAILABLE, "server is draining");
    drain_timer_arm(c, NC_CONN_DRAIN_GRACE_MS);
}

/* A client that shut its sending side (shutdown(SHUT_WR), `nc -N`) still
 * wants the answers to what it sent: close once every request is answered
 * and flushed.  A blocked connection still has whole frames to run. */
static void maybe_close_finished(nc_conn *c)
{
    if (c->peer_eof && c->state != NC_CONN_CLOSED && c->state != NC_CONN_CLOSING &&
        c->state != NC_CONN_BLOCKED && c->in_flight == 0 &&
        evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        conn_close(c);
}

static int should_block(const nc_conn *c)
{
    return c->in_flight >= c->srv->cfg.max_inflight_per_conn ||
           evbuffer_get_length(bufferevent_get_output(c->bev)) > NC_CONN_MAX_OUTPUT;
}

/* A framing error: tell the client once, then close after the flush. */
static void frame_error(nc_conn *c, int err)
{
    char msg[256];
    c->srv->metrics.frame_errors++;
    if (err == -EMSGSIZE)
        snprintf(msg, sizeof msg, "%s (%u bytes announced, limit %u)", nc_frame_strerror(err),
                 (unsigned)c->hdr.length, c->srv->cfg.max_frame_bytes);
    else
        snprintf(msg, sizeof msg, "%s", nc_frame_strerror(err));
    /* Too big and out of memory (a failed pullup) are resource problems,
     * not a malformed stream. */
    conn_error(c, 0, err == -EMSGSIZE || err == -ENOMEM ? NEOCOG__CODE__RESOURCE_EXHAUSTED
                                                              : NEOCOG__CODE__INVALID_ARGUMENT,
                    msg);
    bufferevent_disable(c->bev, EV_READ);
    evtimer_del(c->frame_timer);
    conn_set_state(c, NC_CONN_CLOSING);
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        conn_close(c);
}

static void frame_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    nc_conn *c = arg;
    char msg[128];
    snprintf(msg, sizeof msg, "frame not completed within %u ms", c->srv->cfg.frame_timeout_ms);
    c->srv->metrics.frame_errors++;
    conn_error(c, 0, NEOCOG__CODE__DEADLINE_EXCEEDED, msg);
    bufferevent_disable(c->bev, EV_READ);
    conn_set_state(c, NC_CONN_CLOSING);
}

static void arm_frame_timer(nc_conn *c)
{
    struct timeval tv = { c->srv->cfg.frame_timeout_ms / 1000,
                          (c->srv->cfg.frame_timeout_ms % 1000) * 1000 };
    evtimer_add(c->frame_timer, &tv);
}

static void drive_machine(nc_conn *c)
{
    for (;;) {
        if (c->state == NC_CONN_CLOSED || c->state == NC_CONN_CLOSING)
            return;
        struct evbuffer *in = bufferevent_get_input(c->bev);
        size_t avail = evbuffer_get_length(in);
        if (c->drain_shut) {    /* half closed: nothing can be answered now */
            evbuffer_drain(in, avail);
            return;
        }
        switch (c->state) {
        case NC_CONN_READ_HEADER: {
            if (avail == 0) {
                evtimer_del(c->frame_timer);
                maybe_drain_idle(c);
                return;
            }
            if (!evtimer_pending(c->frame_timer, NULL))
                arm_frame_timer(c);
            uint8_t hdr[NC_FRAME_HEADER_LEN];
            size_t k = avail < sizeof hdr ? avail : sizeof hdr;
            evbuffer_copyout(in, hdr, k);
            if (k < sizeof hdr) {
                /* Garbage fails on its first bytes, not after twelve. */
                static const uint8_t magic[4] = { NC_FRAME_MAGIC0, NC_FRAME_MAGIC1,
                                                  NC_FRAME_MAGIC2, NC_FRAME_MAGIC3 };
                if (memcmp(hdr, magic, k < 4 ? k : 4))
                    frame_error(c, -EPROTO);
                return;
            }
            int err = nc_frame_header_parse(hdr, sizeof hdr, c->srv->cfg.max_frame_bytes,
                                            &c->hdr);
            if (err) {
                if (err == -EMSGSIZE)
                    c->hdr.length = (uint32_t)hdr[8] << 24 | (uint32_t)hdr[9] << 16 |
                                    (uint32_t)hdr[10] << 8 | hdr[11];
                frame_error(c, err);
                return;
            }
            conn_set_state(c, NC_CONN_READ_BODY);
            break;
        }
        case NC_CONN_READ_BODY: {
            size_t need = NC_FRAME_HEADER_LEN + (size_t)c->hdr.length;
            if (avail < need)
                return;
            evbuffer_drain(in, NC_FRAME_HEADER_LEN);
            static const uint8_t empty[1];
            const uint8_t *payload = c->hdr.length
                ? evbuffer_pullup(in, (ev_ssize_t)c->hdr.length) : empty;
            evtimer_del(c->frame_timer);
            conn_set_state(c, NC_CONN_READ_HEADER);
            if (!payload) {
                frame_error(c, -ENOMEM);
                return;
            }
            /* The handler may queue work (in_flight++) or answer at once. */
            if (c->drain_idle)
                drain_refuse(c, payload, c->hdr.length);
            else
                conn_request(c, payload, c->hdr.length);
            if (c->state == NC_CONN_CLOSED)
                return;
            evbuffer_drain(in, c->hdr.length);
            if (should_block(c)) {
                conn_set_state(c, NC_CONN_BLOCKED);
                bufferevent_disable(c->bev, EV_READ);
                return;
            }
            break;
        }
        case NC_CONN_BLOCKED:
            if (should_block(c))
                return;
            conn_set_state(c, NC_CONN_READ_HEADER);
            if (!c->peer_eof)
                bufferevent_enable(c->bev, EV_READ);
            break;
        default:
            return;
        }
    }
}

static void on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    drive_machine(arg);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    nc_conn *c = arg;
    /* Output fully flushed. */
    if (c->state == NC_CONN_CLOSING) {
        conn_close(c);
        return;
    }
    nc_conn_ref(c);     /* either call may close (and so free) c: hold it */
    if (c->state == NC_CONN_BLOCKED)
        drive_machine(c);
    else
        maybe_drain_idle(c);
    maybe_close_finished(c);
    nc_conn_unref(c);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    nc_conn *c = arg;
    if (what & BEV_EVENT_TIMEOUT) {
        /* Only the write side has a timeout: replies sat unread. */
        nc_log(NC_LOG_INFO, "conn %s: took no replies for %u ms: disconnected", c->peer,
               c->srv->cfg.write_timeout_ms);
        conn_close(c);
    } else if (what & BEV_EVENT_ERROR) {
        if (nc_log_get_level() >= NC_LOG_DEBUG)
            nc_log(NC_LOG_DEBUG, "conn %s: %s", c->peer,
                   evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        conn_close(c);
    } else if (what & BEV_EVENT_EOF) {
        /* Half close: nothing more will arrive, so a partial frame never
         * completes (no timer for it); whole frames still queued behind
         * backpressure and requests in flight are answered first. */
        c->peer_eof = 1;
        bufferevent_disable(c->bev, EV_READ);
        evtimer_del(c->frame_timer);
        maybe_close_finished(c);
    }
}

void nc_conn_accept(nc_server *s, evutil_socket_t fd, const char *peer)
{
    if (s->n_conns >= s->cfg.max_connections || s->state == NC_SERVER_DRAINING) {
        /* Say why in one frame, best effort, and hang up. */
        static const char text[] = "too many connections";
        Neocog__Reply r = NEOCOG__REPLY__INIT;
        r.code = s->state == NC_SERVER_DRAINING ? NEOCOG__CODE__UNAVAILABLE
                                                : NEOCOG__CODE__RESOURCE_EXHAUSTED;
        r.message = s->state == NC_SERVER_DRAINING ? (char *)"server is shutting down"
                                                   : (char *)text;
        uint8_t *buf;
        size_t len;
        if (!nc_msg_frame(&r.base, 0, &buf, &len)) {
            ssize_t w = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
            (void)w;
            free(buf);
        }
        evutil_closesocket(fd);
        return;
    }
    nc_conn *c = calloc(1, sizeof *c);
    if (!c) {
        evutil_closesocket(fd);
        return;
    }
    c->srv = s;
    c->refs = 1;
    atomic_init(&c->closed, 0);
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    evutil_make_socket_nonblocking(fd);
    c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->frame_timer = evtimer_new(s->base, frame_timeout, c);
    if (!c->bev || !c->frame_timer) {
        if (c->bev)
            bufferevent_free(c->bev);
        else
            evutil_closesocket(fd);
        if (c->frame_timer)
            event_free(c->frame_timer);
        free(c);
        return;
    }
    bufferevent_setcb(c->bev, on_read, on_write, on_event, c);
    if (s->cfg.write_timeout_ms) {
        /* A client that stops reading would otherwise pin its unsent
         * replies (up to NC_CONN_MAX_OUTPUT) for as long as it lives. */
        struct timeval wt = { s->cfg.write_timeout_ms / 1000,
                              (s->cfg.write_timeout_ms % 1000) * 1000 };
        bufferevent_set_timeouts(c->bev, NULL, &wt);
    }
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    c->next = s->conns;
    if (s->conns)
        s->conns->prev = c;
    s->conns = c;
    s->n_conns++;
    s->metrics.connections_total++;
    conn_set_state(c, NC_CONN_READ_HEADER);
}

void nc_conn_send(nc_conn *c, const Neocog__Reply *reply)
{
    if (c->state == NC_CONN_CLOSED)
        return;
    size_t n = protobuf_c_message_get_packed_size(&reply->base);
    struct evbuffer *out = bufferevent_get_output(c->bev);
    Neocog__Reply small = NEOCOG__REPLY__INIT;    /* used past the if: declared here */
    char why[128];
    if (n > c->srv->cfg.max_frame_bytes) {
        /* Dropping the reply would leave the client waiting forever for
         * this id: answer it with a short error instead (the short text
         * fits the 64-byte minimum limit). */
        nc_log(NC_LOG_WARNING, "reply of %zu bytes exceeds the frame limit", n);
        small.id = reply->id;
        small.code = NEOCOG__CODE__RESOURCE_EXHAUSTED;
        snprintf(why, sizeof why, "reply of %zu bytes exceeds the frame limit of %u bytes "
                 "(max_frame_bytes)", n, c->srv->cfg.max_frame_bytes);
        small.message = why;
        if (protobuf_c_message_get_packed_size(&small.base) > c->srv->cfg.max_frame_bytes)
            small.message = (char *)"reply too large";
        if (protobuf_c_message_get_packed_size(&small.base) > c->srv->cfg.max_frame_bytes)
            return;
        reply = &small;
        n = protobuf_c_message_get_packed_size(&reply->base);
    }
    struct evbuffer_iovec v;
    if (evbuffer_reserve_space(out, (ev_ssize_t)(NC_FRAME_HEADER_LEN + n), &v, 1) < 1)
        return;
    uint8_t *p = v.iov_base;
    nc_frame_header_write(p, (uint32_t)n);
    protobuf_c_message_pack(&reply->base, p + NC_FRAME_HEADER_LEN);
    v.iov_len = NC_FRAME_HEADER_LEN + n;
    evbuffer_commit_space(out, &v, 1);
}

void nc_conn_request_done(nc_conn *c)
{
    c->in_flight--;
    if (c->state == NC_CONN_BLOCKED)
        drive_machine(c);
    else if (c->state != NC_CONN_CLOSED && c->state != NC_CONN_CLOSING)
        maybe_drain_idle(c);
    maybe_close_finished(c);        /* usually waits for on_write's flush */
    nc_conn_unref(c);
}

void nc_conn_drain_all(nc_server *s, int force)
{
    nc_conn *c = s->conns;
    while (c) {
        nc_conn *next = c->next;
        if (force)
            conn_close(c);
        else
            maybe_drain_idle(c);
        c = next;
    }
}

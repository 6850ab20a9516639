/* clients/client_window.c — libneocog's requests on the wire: the
 * pipelining window, reading and writing over the non-blocking socket,
 * and (when asked for) reconnecting and resending; the calls that send
 * and receive.  client.c makes and frees the client and says how the
 * window and retries work.
 *
 * Layer: clients.  Nothing printed, nothing exits; errors are negative
 * errno values with a sentence in c->errmsg. */
#include "neocog_client.h"
#include "client_priv.h"
#include "client_state.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

/* ---- errors and time ------------------------------------------------------ */

static int set_err(nc_client *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int set_err(nc_client *c, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
    return err;
}

static int retrying(const nc_client *c)
{
    return c->retry.max_attempts > 0;
}

static void conn_close(nc_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->draining = 0;
    c->answered_here = 0;
    nc_frame_decoder_reset(&c->dec);
}

/* xorshift64*: jitter needs no quality, only no shared state. */
static uint32_t rnd(nc_client *c)
{
    c->rng ^= c->rng >> 12;
    c->rng ^= c->rng << 25;
    c->rng ^= c->rng >> 27;
    return (uint32_t)((c->rng * UINT64_C(2685821657736338717)) >> 32);
}

/* The n-th wait (n >= 1): initial x 2^(n-1), at most max, then "equal
 * jitter": a uniform pick in its upper half, so clients that failed
 * together do not come back together. */
static int64_t backoff_ms(nc_client *c, uint32_t n)
{
    int64_t base = c->retry.backoff_initial_ms;
    for (uint32_t i = 1; i < n && base < c->retry.backoff_max_ms; i++)
        base *= 2;
    if (base > c->retry.backoff_max_ms)
        base = c->retry.backoff_max_ms;
    return base / 2 + rnd(c) % (uint32_t)(base / 2 + 1);
}

/* The connection is gone or unusable.  Without retries: broken for good,
 * every later call gets err.  With them: every request on the wire waits
 * for the next connection, which is tried after a backoff. */
static int lose(nc_client *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int lose(nc_client *c, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
    if (!retrying(c)) {
        c->err = err;
        return err;
    }
    snprintf(c->loss, sizeof c->loss, "%s", c->errmsg);
    /* A connection that ended before any reply counts as a failed connect:
     * a balancer with no daemon behind it accepts and hangs up at once, and
     * only a growing backoff keeps that from burning every attempt at once. */
    if (!c->answered_here)
        c->connect_fails++;
    conn_close(c);
    int64_t now = nc_client_now_ms();
    for (uint32_t i = 0; i < c->n_win; i++) {
        entry *e = &c->win[i];
        if (!e->done && e->state == ON_WIRE) {
            e->state = WAITING;
            e->due_ms = now;
            e->refused_code = -1;
        }
    }
    /* The first try at once (give or take the jitter): a daemon restarted
     * under a balancer, or a proxy's dropped connection, is back at once. */
    c->reconnect_at = now + (c->connect_fails ? backoff_ms(c, c->connect_fails)
                                              : rnd(c) % (uint32_t)(c->retry.backoff_initial_ms + 1));
    return err;
}

/* Deadline for a timeout: -1 for none. */
static int64_t deadline_of(int timeout_ms)
{
    return timeout_ms < 0 ? -1 : nc_client_now_ms() + timeout_ms;
}

/* Poll fd for events until deadline.  Returns revents (> 0), or -ETIMEDOUT;
 * EINTR is retried with whatever time is left. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int wait = -1;
        if (deadline >= 0) {
            int64_t left = deadline - nc_client_now_ms();
            if (left < 0)
                left = 0;
            wait = left > 1000000 ? 1000000 : (int)left;
        }
        struct pollfd p = { .fd = fd, .events = events };
        int n = poll(&p, 1, wait);
        if (n > 0)
            return p.revents;
        if (n < 0 && errno != EINTR)
            return -errno;
        if (n == 0 && wait >= 0 && nc_client_now_ms() >= deadline)
            return -ETIMEDOUT;
    }
}

/* ---- the window ----------------------------------------------------------- */

/* The entry of a request not yet handed back, or NULL. */
static entry *find_entry(nc_client *c, uint64_t id)
{
    for (uint32_t i = 0; i < c->n_win; i++)
        if (c->win[i].id == id)
            return &c->win[i];
    return NULL;
}

static void drop_entry(nc_client *c, uint64_t id)
{
    entry *e = find_entry(c, id);
    if (!e)
        return;
    nc_client_entry_clear(e);
    *e = c->win[--c->n_win];
    memset(&c->win[c->n_win], 0, sizeof c->win[c->n_win]);
}

static int stash_push(nc_client *c, uint64_t id, nc_msg *m, const nc_client_giveup *gu)
{
    stash_node *n = calloc(1, sizeof *n);
    if (!n)
        return -ENOMEM;
    n->id = id;
    n->msg = m;
    if (gu) {
        n->gave_up = 1;
        n->info = *gu;
    }
    if (c->stash_tail)
        c->stash_tail->next = n;
    else
        c->stash_head = n;
    c->stash_tail = n;
    return 0;
}

/* Take the first stashed reply (any id when any is set): 0 an answer,
 * NC_CLIENT_GAVE_UP a request given up, -ENOENT nothing there. */
static int stash_take(nc_client *c, int any, uint64_t id, nc_msg **ret)
{
    stash_node **pp = &c->stash_head, *prev = NULL;
    for (stash_node *n = c->stash_head; n; prev = n, pp = &n->next, n = n->next) {
        if (!any && n->id != id)
            continue;
        *pp = n->next;
        if (c->stash_tail == n)
            c->stash_tail = prev;
        *ret = n->msg;
        int r = 0;
        if (n->gave_up) {
            r = NC_CLIENT_GAVE_UP;
            c->last_giveup = n->info;
            c->have_giveup = 1;
            c->stats.gave_up++;
            if (!n->info.from_daemon)
                c->stats.lost++;
            else if (n->info.code >= 0 && n->info.code < NC_CLIENT_CODES)
                c->stats.gave_up_by_code[n->info.code]++;
        } else {
            c->stats.answered++;
        }
        drop_entry(c, n->id);
        free(n);
        return r;
    }
    return -ENOENT;
}

/* A reply made here for a request no daemon answered. */
static nc_msg *made_reply(uint64_t id, int code, const char *why)
{
    Neocog__Reply rp = NEOCOG__REPLY__INIT;
    rp.id = id;
    rp.code = code;
    rp.message = (char *)why;
    size_t n = protobuf_c_message_get_packed_size(&rp.base);
    uint8_t *buf = malloc(n ? n : 1);
    nc_msg *m = NULL;
    if (buf) {
        protobuf_c_message_pack(&rp.base, buf);
        if (nc_msg_unpack(&neocog__reply__descriptor, buf, n, 0, &m) < 0)
            m = NULL;
    }
    free(buf);
    return m;
}

/* Stop retrying e: stash its last refusal, or a reply saying why it got
 * none.  -ENOMEM leaves e as it was (tried again on the next call). */
static int give_up(nc_client *c, entry *e, int deadline_passed)
{
    nc_client_giveup gu = { .id = e->id, .attempts = e->attempts };
    nc_msg *m = e->last_refusal;
    if (m) {
        const Neocog__Reply *rp = nc_msg_reply(m);
        gu.from_daemon = 1;
        gu.code = rp->code;
        snprintf(gu.why, sizeof gu.why, "%s", rp->message ? rp->message : "");
    } else {
        gu.code = deadline_passed ? NEOCOG__CODE__DEADLINE_EXCEEDED : NEOCOG__CODE__UNAVAILABLE;
        const long long waited = (long long)(nc_client_now_ms() - e->first_ms);
        snprintf(gu.why, sizeof gu.why, "no reply: gave up after %u attempt%s in %lld ms%s%.180s",
                 e->attempts, e->attempts == 1 ? "" : "s", waited, c->loss[0] ? "; last: " : "",
                 c->loss);
        if (!(m = made_reply(e->id, gu.code, gu.why)))
            return -ENOMEM;
    }
    if (stash_push(c, e->id, m, &gu) < 0) {
        if (!e->last_refusal)
            nc_msg_free(m);
        return -ENOMEM;
    }
    e->last_refusal = NULL;
    e->done = 1;
    return 0;
}

static int past_deadline(const nc_client *c, const entry *e, int64_t now)
{
    return c->retry.deadline_ms >= 0 && now - e->first_ms >= c->retry.deadline_ms;
}

/* One frame's payload from the wire: unpack, check, keep (or, with
 * retries, send again later). */
static int accept_reply(nc_client *c, const uint8_t *payload, size_t len)
{
    nc_msg *m;
    int r = nc_msg_unpack(&neocog__reply__descriptor, payload, len, 0, &m);
    if (r < 0)
        return lose(c, -EPROTO, "the daemon sent a malformed reply (%s)", strerror(-r));
    Neocog__Reply *rp = nc_msg_reply(m);
    if (rp->id == 0) {
        /* The daemon's last word before closing: it could not read our
         * stream, or it refuses connections (draining, too many).  Say what
         * it said. */
        /* Nothing answered here yet, so lose() backs off as from a
         * failed connect. */
        r = lose(c, -EPROTO, "the daemon refused the stream: %s: %s",
                 nc_msg_code_name(rp->code), rp->message ? rp->message : "");
        nc_msg_free(m);
        return r;
    }
    entry *e = find_entry(c, rp->id);
    if (!e || e->done || e->state != ON_WIRE) {
        r = lose(c, -EPROTO, "the daemon answered request %llu, which is not outstanding",
                 (unsigned long long)rp->id);
        nc_msg_free(m);
        return r;
    }
    c->connect_fails = 0;
    c->answered_here = 1;
    int refusal = rp->code == NEOCOG__CODE__UNAVAILABLE ||
                  rp->code == NEOCOG__CODE__RESOURCE_EXHAUSTED;
    if (retrying(c) && refusal) {
        /* UNAVAILABLE: draining (or a model missing here): the next
         * connection may reach a daemon that has it. */
        if (rp->code == NEOCOG__CODE__UNAVAILABLE)
            c->draining = 1;
        nc_msg_free(e->last_refusal);
        e->last_refusal = m;
        e->refused_code = rp->code;
        e->state = WAITING;
        int64_t now = nc_client_now_ms();
        if (e->attempts >= c->retry.max_attempts || past_deadline(c, e, now)) {
            if (give_up(c, e, 0) < 0)
                return lose(c, -ENOMEM, "out of memory keeping a reply");
            return 0;
        }
        e->due_ms = now + backoff_ms(c, e->attempts);
        return 0;
    }
    if (stash_push(c, rp->id, m, NULL) < 0) {
        nc_msg_free(m);
        return lose(c, -ENOMEM, "out of memory keeping a reply");
    }
    e->done = 1;
    return 0;
}

/* Read what the socket has (one read) and turn complete frames into stashed
 * replies.  1: progress, 0: nothing to read now (or, retrying, the
 * connection ended), < 0: broken. */
static int read_some(nc_client *c)
{
    if (c->fd < 0)
        return 0;
    ssize_t n;
    do
        n = read(c->fd, c->rbuf, READ_CHUNK);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        int e = errno;
        return retrying(c) ? (lose(c, -e, "reading from the daemon: %s", strerror(e)), 0)
                           : lose(c, -e, "reading from the daemon: %s", strerror(e));
    }
    if (n == 0) {
        /* The decoder keeps a completed frame's counts until the next feed:
         * only a frame that has begun and not completed is cut short. */
        int mid = !c->dec.complete && (c->dec.hdr_have || c->dec.have);
        int r = lose(c, -ECONNRESET, mid
                     ? "the daemon closed the connection in the middle of a reply"
                     : "the daemon closed the connection");
        return retrying(c) ? 0 : r;
    }
    size_t pos = 0;
    while (pos < (size_t)n && c->fd >= 0) {
        size_t used;
        int f = nc_frame_decoder_feed(&c->dec, c->rbuf + pos, (size_t)n - pos, &used);
        if (f < 0) {
            int r = lose(c, -EPROTO, "bad reply frame from the daemon: %s", nc_frame_strerror(f));
            return retrying(c) ? 0 : r;
        }
        pos += used;
        if (f == 1) {
            const uint8_t *p;
            size_t len;
            nc_frame_decoder_payload(&c->dec, &p, &len);
            int r = accept_reply(c, p, len);
            if (r < 0 && !retrying(c))
                return r;
        }
    }
    return 1;
}

/* Write a whole frame, reading replies whenever the socket is full.  0, or
 * a negative error; retrying, the connection may have ended meanwhile
 * (c->fd < 0, and -ECONNRESET). */
static int write_all(nc_client *c, const uint8_t *buf, size_t len, int64_t deadline)
{
    size_t done = 0;
    int fd = c->fd;
    while (done < len) {
        if (c->fd != fd)
            return -ECONNRESET;     /* lost while reading */
        ssize_t n = send(fd, buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            int e = errno;
            /* EPIPE/ECONNRESET: the daemon may have said why before closing. */
            while (c->fd == fd && read_some(c) > 0)
                ;
            if (c->err)
                return c->err;
            if (c->fd != fd)
                return -ECONNRESET;
            return lose(c, -e, "writing to the daemon: %s", strerror(e));
        }
        int ev = wait_fd(fd, POLLIN | POLLOUT, deadline);
        if (ev == -ETIMEDOUT) {
            if (done == 0)      /* nothing sent: the stream is still whole */
                return set_err(c, -ETIMEDOUT, "timed out waiting to send to the daemon");
            return lose(c, -ETIMEDOUT, "timed out in the middle of sending a request");
        }
        if (ev < 0)
            return lose(c, ev, "poll: %s", strerror(-ev));
        if (ev & (POLLIN | POLLHUP | POLLERR)) {
            int r = read_some(c);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

/* ---- retries: the step every wait begins with ------------------------------ */

static int reconnect(nc_client *c)
{
    int r = c->have_addr ? nc_client_connect_addr(c, &c->addr)
                         : set_err(c, -ENOTCONN, "no address to connect to again "
                                   "(the client was made from a socket)");
    if (r < 0) {
        c->stats.connect_failures++;
        c->connect_fails++;
        snprintf(c->loss, sizeof c->loss, "%s", c->errmsg);
        c->reconnect_at = nc_client_now_ms() + backoff_ms(c, c->connect_fails);
        return r;
    }
    c->stats.reconnects++;
    return 0;
}

/* Connect again when due, give up what may not be sent again, write what is
 * due.  Only transport trouble happens here, and retrying absorbs it: the
 * return is 0, or a local error (-ENOMEM). */
static int service(nc_client *c, int64_t deadline)
{
    if (!retrying(c) || c->err)
        return 0;
    int64_t now = nc_client_now_ms();
    int on_wire = 0, waiting = 0;
    for (uint32_t i = 0; i < c->n_win; i++) {
        entry *e = &c->win[i];
        if (e->done)
            continue;
        on_wire += e->state == ON_WIRE;
        if (e->state != WAITING)
            continue;
        int late = past_deadline(c, e, now);
        if (late || e->attempts >= c->retry.max_attempts ||
            (!c->have_addr && c->fd < 0)) {
            if (give_up(c, e, late) < 0)
                return set_err(c, -ENOMEM, "out of memory");
            continue;
        }
        waiting++;
    }
    /* A draining connection that has answered all we sent it: leave it. */
    if (c->fd >= 0 && c->draining && !on_wire) {
        snprintf(c->loss, sizeof c->loss, "the daemon is draining");
        conn_close(c);
        c->reconnect_at = now;
    }
    if (c->fd < 0 && waiting && now >= c->reconnect_at && reconnect(c) < 0)
        return 0;
    if (c->fd < 0 || c->draining)
        return 0;
    for (uint32_t i = 0; i < c->n_win && c->fd >= 0 && !c->draining; i++) {
        entry *e = &c->win[i];
        if (e->done || e->state != WAITING || e->due_ms > now)
            continue;
        int r = write_all(c, e->frame, e->len, deadline);
        if (r < 0)
            break;          /* lost (waits for the next connection) or timed out */
        if (e->attempts++) {
            c->stats.resends++;
            if (e->refused_code >= 0 && e->refused_code < NC_CLIENT_CODES)
                c->stats.resent_by_code[e->refused_code]++;
            else
                c->stats.resent_after_loss++;
        }
        e->state = ON_WIRE;
    }
    return 0;
}

/* When service() next has something to do (ms), or -1. */
static int64_t next_due(const nc_client *c)
{
    if (!retrying(c))
        return -1;
    int64_t t = -1;
    for (uint32_t i = 0; i < c->n_win; i++) {
        const entry *e = &c->win[i];
        if (e->done || e->state != WAITING)
            continue;
        int64_t at = c->fd < 0 ? c->reconnect_at : c->draining ? -1 : e->due_ms;
        if (c->retry.deadline_ms >= 0) {
            int64_t end = e->first_ms + c->retry.deadline_ms;
            if (at < 0 || end < at)
                at = end;
        }
        if (at >= 0 && (t < 0 || at < t))
            t = at;
    }
    return t;
}

/* ---- sending -------------------------------------------------------------- */

int nc_client_send_request(nc_client *c, Neocog__Request *rq, uint64_t *ret_id)
{
    if (!c || !rq)
        return -EINVAL;
    if (c->err)
        return c->err;
    if (c->n_win >= c->max_in_flight)
        return set_err(c, -EAGAIN, "%u requests outstanding: take a reply first", c->n_win);
    rq->id = c->next_id;
    uint8_t *frame;
    size_t len;
    int r = nc_msg_frame(&rq->base, c->max_frame, &frame, &len);
    if (r == -EMSGSIZE)
        return set_err(c, r, "request of %zu bytes exceeds the frame limit of %u bytes",
                       protobuf_c_message_get_packed_size(&rq->base), c->max_frame);
    if (r < 0)
        return set_err(c, r, "cannot pack the request: %s", strerror(-r));
    int64_t deadline = deadline_of(c->timeout_ms);
    if (retrying(c)) {
        /* Into the window first, written by service() now or later. */
        entry *e = &c->win[c->n_win++];
        *e = (entry){ .id = c->next_id, .state = WAITING, .frame = frame, .len = len,
                      .refused_code = -1, .first_ms = nc_client_now_ms() };
        e->due_ms = e->first_ms;
        /* Accepted whatever happens now: an error here (out of memory)
         * leaves it in the window for the next call to send. */
        service(c, deadline);
    } else {
        r = write_all(c, frame, len, deadline);
        free(frame);
        if (r == 0)
            c->win[c->n_win++] = (entry){ .id = c->next_id, .state = ON_WIRE };
    }
    if (r < 0)
        return r;
    c->stats.sent++;
    if (ret_id)
        *ret_id = c->next_id;
    c->next_id++;
    return 0;
}

/* ---- receiving ------------------------------------------------------------ */

static int receive(nc_client *c, int any, uint64_t id, int timeout_ms, nc_msg **ret)
{
    if (!c || !ret)
        return -EINVAL;
    if (!any && !find_entry(c, id))
        return set_err(c, -ENOENT, "request %llu is not outstanding", (unsigned long long)id);
    if (any && c->n_win == 0)
        return set_err(c, -ENOENT, "no request is outstanding");
    int64_t deadline = deadline_of(timeout_ms);
    for (;;) {
        int t = stash_take(c, any, id, ret);
        if (t >= 0)
            return t;
        if (c->err)
            return c->err;
        int r = service(c, deadline);
        if (r < 0)
            return r;
        if ((t = stash_take(c, any, id, ret)) >= 0)
            return t;
        /* Whatever is already readable first, so timeout 0 still sees it. */
        r = read_some(c);
        if (r < 0)
            return r;
        if (r > 0)
            continue;
        if (timeout_ms == 0)
            return set_err(c, -EAGAIN, "no reply yet");
        int64_t wake = deadline, due = next_due(c);
        if (due >= 0 && (wake < 0 || due < wake))
            wake = due;
        if (c->fd < 0 && wake < 0)
            return set_err(c, -ENOTCONN, "not connected and nothing to wait for");
        int ev = wait_fd(c->fd, POLLIN, wake);
        if (ev == -ETIMEDOUT) {
            if (deadline >= 0 && nc_client_now_ms() >= deadline)
                return set_err(c, -ETIMEDOUT, "timed out waiting for the daemon's reply");
            continue;
        }
        if (ev < 0)
            return lose(c, ev, "poll: %s", strerror(-ev));
    }
}

int nc_client_receive(nc_client *c, int timeout_ms, nc_msg **ret_reply)
{
    return receive(c, 1, 0, timeout_ms, ret_reply);
}

int nc_client_receive_id(nc_client *c, uint64_t id, int timeout_ms, nc_msg **ret_reply)
{
    return receive(c, 0, id, timeout_ms, ret_reply);
}

/* clients/client.c — libneocog: connections, framing over a non-blocking
 * socket, request ids and the pipelining window.  See neocog_client.h.
 *
 * Layer: clients.  Nothing printed, nothing exits; errors are negative
 * errno values with a sentence in c->errmsg.
 *
 * The socket is non-blocking and every wait is a poll() with the time left
 * until the call's deadline, so timeouts hold however the bytes trickle in
 * and EINTR only costs a retry.  Replies are read whenever we wait, also
 * while writing: a daemon that stops reading until we take its replies
 * (per-connection backpressure) must not deadlock against us. */
#include "neocog_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

#define DEFAULT_CONNECT_TIMEOUT_MS 5000
#define DEFAULT_TIMEOUT_MS 30000
#define DEFAULT_MAX_IN_FLIGHT 64u
/* A window far beyond what any daemon keeps in flight per connection
 * (default 128) only buys memory; refuse silly values early. */
#define MAX_MAX_IN_FLIGHT 65536u
#define READ_CHUNK 65536

/* A reply read off the wire but not yet handed to the caller. */
typedef struct stash_node {
    struct stash_node *next;
    uint64_t id;
    nc_msg *msg;
} stash_node;

struct nc_client {
    int fd;
    int err;                    /* sticky transport error; 0 while healthy */
    char errmsg[256];
    int connect_timeout_ms, timeout_ms;
    uint32_t max_in_flight, max_frame;
    uint64_t next_id;
    /* Ids sent and not yet handed back, arrived or not: the window.  A
     * plain array searched linearly: it holds at most max_in_flight ids,
     * and a scan of a few dozen words is cheaper than any hash. */
    uint64_t *outstanding;
    uint32_t n_outstanding;
    stash_node *stash_head, *stash_tail;
    nc_frame_decoder dec;
    uint8_t *rbuf;              /* READ_CHUNK bytes */
};

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

/* A transport failure: the stream is in an unknown state, so every later
 * call gets the same answer. */
static int set_broken(nc_client *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int set_broken(nc_client *c, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->errmsg, sizeof c->errmsg, fmt, ap);
    va_end(ap);
    c->err = err;
    return err;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Deadline for a timeout: -1 for none. */
static int64_t deadline_of(int timeout_ms)
{
    return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

/* Poll fd for events until deadline.  Returns revents (> 0), or -ETIMEDOUT;
 * EINTR is retried with whatever time is left. */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int wait = -1;
        if (deadline >= 0) {
            int64_t left = deadline - now_ms();
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
        if (n == 0 && wait >= 0 && now_ms() >= deadline)
            return -ETIMEDOUT;
    }
}

/* ---- addresses ------------------------------------------------------------ */

int nc_client_addr_parse(const char *text, nc_client_addr *ret)
{
    if (!text || !ret || !*text)
        return -EINVAL;
    nc_client_addr a;
    memset(&a, 0, sizeof a);
    const char *rest = text;
    int is_unix = 0;
    if (!strncmp(text, "unix:", 5)) {
        is_unix = 1;
        rest = text + 5;
    } else if (!strncmp(text, "tcp:", 4)) {
        rest = text + 4;
    } else if (strchr(text, '/')) {
        is_unix = 1;
    }
    if (is_unix) {
        size_t n = strlen(rest);
        if (n == 0 || n >= sizeof a.path)
            return -EINVAL;
        a.kind = NC_CLIENT_ADDR_UNIX;
        memcpy(a.path, rest, n + 1);
        *ret = a;
        return 0;
    }
    a.kind = NC_CLIENT_ADDR_TCP;
    const char *host = rest, *port = NULL;
    size_t host_len;
    if (rest[0] == '[') {
        /* [v6] or [v6]:port: colons inside the brackets are the address's. */
        const char *close = strchr(rest, ']');
        if (!close)
            return -EINVAL;
        host = rest + 1;
        host_len = (size_t)(close - host);
        if (close[1] == ':')
            port = close + 2;
        else if (close[1] != '\0')
            return -EINVAL;
    } else {
        const char *colon = strchr(rest, ':');
        if (colon && strchr(colon + 1, ':'))
            return -EINVAL;     /* a bare IPv6 address needs brackets */
        host_len = colon ? (size_t)(colon - rest) : strlen(rest);
        if (colon)
            port = colon + 1;
    }
    if (host_len == 0 || host_len >= sizeof a.host)
        return -EINVAL;
    memcpy(a.host, host, host_len);
    a.host[host_len] = '\0';
    if (port) {
        char *end;
        errno = 0;
        if (*port < '0' || *port > '9')
            return -EINVAL;
        unsigned long p = strtoul(port, &end, 10);
        if (errno || *end || p == 0 || p > 65535)
            return -EINVAL;
        a.port = (uint16_t)p;
    } else {
        a.port = NC_DEFAULT_TCP_PORT;
    }
    *ret = a;
    return 0;
}

static int is_socket(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

void nc_client_default_addr(char *dst, size_t cap)
{
    if (!dst || !cap)
        return;
    const char *env = getenv("NEOCOG_SERVER");
    if (env && *env) {
        snprintf(dst, cap, "%s", env);
        return;
    }
    if (is_socket(NC_DEFAULT_UNIX_PATH)) {
        snprintf(dst, cap, "unix:%s", NC_DEFAULT_UNIX_PATH);
        return;
    }
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg) {
        char path[4096];
        snprintf(path, sizeof path, "%s/neocogd.sock", xdg);
        if (is_socket(path)) {
            snprintf(dst, cap, "unix:%s", path);
            return;
        }
    }
    snprintf(dst, cap, "tcp:%s:%d", NC_DEFAULT_TCP_HOST, NC_DEFAULT_TCP_PORT);
}

/* ---- connecting ----------------------------------------------------------- */

static int client_new(const nc_client_options *opt, nc_client **ret)
{
    nc_client_options o = { 0 };
    if (opt)
        o = *opt;
    if (o.max_in_flight > MAX_MAX_IN_FLIGHT || o.max_frame_bytes > NC_FRAME_MAX_LIMIT)
        return -EINVAL;
    nc_client *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->fd = -1;
    c->connect_timeout_ms = o.connect_timeout_ms ? o.connect_timeout_ms
                                                 : DEFAULT_CONNECT_TIMEOUT_MS;
    c->timeout_ms = o.timeout_ms ? o.timeout_ms : DEFAULT_TIMEOUT_MS;
    c->max_in_flight = o.max_in_flight ? o.max_in_flight : DEFAULT_MAX_IN_FLIGHT;
    c->max_frame = o.max_frame_bytes ? o.max_frame_bytes : NC_FRAME_DEFAULT_MAX;
    c->next_id = 1;     /* id 0 is the daemon's "framing error" reply */
    c->outstanding = calloc(c->max_in_flight, sizeof *c->outstanding);
    c->rbuf = malloc(READ_CHUNK);
    if (!c->outstanding || !c->rbuf || nc_frame_decoder_init(&c->dec, c->max_frame)) {
        nc_client_free(c);
        return -ENOMEM;
    }
    *ret = c;
    return 0;
}

/* Non-blocking connect on a fresh socket with the client's connect timeout.
 * Returns 0 or a negative errno; fd stays open either way. */
static int connect_fd(nc_client *c, int fd, const struct sockaddr *sa, socklen_t len)
{
    if (connect(fd, sa, len) == 0)
        return 0;
    if (errno != EINPROGRESS && errno != EAGAIN && errno != EINTR)
        return -errno;
    /* EINTR leaves the connect running in the background, like EINPROGRESS. */
    int r = wait_fd(fd, POLLOUT, deadline_of(c->connect_timeout_ms));
    if (r < 0)
        return r;
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
        return -errno;
    return -soerr;
}

static int connect_unix(nc_client *c, const nc_client_addr *a)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    memcpy(sa.sun_path, a->path, strlen(a->path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return set_err(c, -errno, "socket: %s", strerror(errno));
    int r = connect_fd(c, fd, (struct sockaddr *)&sa, sizeof sa);
    if (r < 0) {
        close(fd);
        return set_err(c, r, "cannot connect to unix:%s: %s", a->path, strerror(-r));
    }
    c->fd = fd;
    return 0;
}

static int connect_tcp(nc_client *c, const nc_client_addr *a)
{
    char port[8];
    snprintf(port, sizeof port, "%u", a->port);
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
    struct addrinfo *res = NULL;
    int g = getaddrinfo(a->host, port, &hints, &res);
    if (g != 0)
        return set_err(c, -EHOSTUNREACH, "cannot resolve %s: %s", a->host, gai_strerror(g));
    int r = -EHOSTUNREACH;
    /* Every address in turn: "localhost" may be ::1 first while the daemon
     * listens on 127.0.0.1 only. */
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        ai->ai_protocol);
        if (fd < 0) {
            r = -errno;
            continue;
        }
        r = connect_fd(c, fd, ai->ai_addr, ai->ai_addrlen);
        if (r == 0) {
            /* Requests are small and latency is the point: no Nagle delay. */
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            c->fd = fd;
            break;
        }
        close(fd);
    }
    freeaddrinfo(res);
    if (r < 0)
        return set_err(c, r, "cannot connect to tcp:%s:%u: %s", a->host, a->port,
                       strerror(-r));
    return 0;
}

/* Connection errors go to the caller's *ret only through the return code,
 * so the message of a failed connect would be lost with the half-built
 * client; keep the last one here for nc_client_errmsg(NULL). */
static _Thread_local char connect_errmsg[256];

int nc_client_connect(const char *addr, const nc_client_options *opt, nc_client **ret)
{
    if (!ret)
        return -EINVAL;
    char def[4200];
    if (!addr || !*addr) {
        nc_client_default_addr(def, sizeof def);
        addr = def;
    }
    nc_client_addr a;
    if (nc_client_addr_parse(addr, &a) < 0) {
        snprintf(connect_errmsg, sizeof connect_errmsg,
                 "bad server address '%.180s' (want unix:PATH or tcp:HOST:PORT)", addr);
        return -EINVAL;
    }
    nc_client *c;
    int r = client_new(opt, &c);
    if (r < 0) {
        snprintf(connect_errmsg, sizeof connect_errmsg, "%s", strerror(-r));
        return r;
    }
    r = a.kind == NC_CLIENT_ADDR_UNIX ? connect_unix(c, &a) : connect_tcp(c, &a);
    if (r < 0) {
        snprintf(connect_errmsg, sizeof connect_errmsg, "%s", c->errmsg);
        nc_client_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

int nc_client_from_fd(int fd, const nc_client_options *opt, nc_client **ret)
{
    if (fd < 0 || !ret) {
        if (fd >= 0)
            close(fd);
        return -EINVAL;
    }
    nc_client *c;
    int r = client_new(opt, &c);
    if (r < 0) {
        close(fd);
        return r;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        r = -errno;
        close(fd);
        nc_client_free(c);
        return r;
    }
    c->fd = fd;
    *ret = c;
    return 0;
}

void nc_client_free(nc_client *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    for (stash_node *n = c->stash_head, *next; n; n = next) {
        next = n->next;
        nc_msg_free(n->msg);
        free(n);
    }
    nc_frame_decoder_fini(&c->dec);
    free(c->outstanding);
    free(c->rbuf);
    free(c);
}

const char *nc_client_errmsg(const nc_client *c)
{
    return c ? c->errmsg : connect_errmsg;
}

int nc_client_fd(const nc_client *c)
{
    return c ? c->fd : -1;
}

uint32_t nc_client_in_flight(const nc_client *c)
{
    return c ? c->n_outstanding : 0;
}

/* ---- the window ----------------------------------------------------------- */

static int find_outstanding(const nc_client *c, uint64_t id)
{
    for (uint32_t i = 0; i < c->n_outstanding; i++)
        if (c->outstanding[i] == id)
            return (int)i;
    return -1;
}

static void drop_outstanding(nc_client *c, uint64_t id)
{
    int i = find_outstanding(c, id);
    if (i >= 0)
        c->outstanding[i] = c->outstanding[--c->n_outstanding];
}

static int stash_has(const nc_client *c, uint64_t id)
{
    for (const stash_node *n = c->stash_head; n; n = n->next)
        if (n->id == id)
            return 1;
    return 0;
}

/* Take the first stashed reply (any id when any is set), or NULL. */
static nc_msg *stash_take(nc_client *c, int any, uint64_t id)
{
    stash_node **pp = &c->stash_head, *prev = NULL;
    for (stash_node *n = c->stash_head; n; prev = n, pp = &n->next, n = n->next) {
        if (!any && n->id != id)
            continue;
        *pp = n->next;
        if (c->stash_tail == n)
            c->stash_tail = prev;
        nc_msg *m = n->msg;
        drop_outstanding(c, n->id);
        free(n);
        return m;
    }
    return NULL;
}

/* One frame's payload from the wire: unpack, check, keep. */
static int accept_reply(nc_client *c, const uint8_t *payload, size_t len)
{
    nc_msg *m;
    int r = nc_msg_unpack(&neocog__reply__descriptor, payload, len, 0, &m);
    if (r < 0)
        return set_broken(c, -EPROTO, "the daemon sent a malformed reply (%s)", strerror(-r));
    Neocog__Reply *rp = nc_msg_reply(m);
    if (rp->id == 0) {
        /* The daemon's last word before closing: it could not read our
         * stream.  Say what it said. */
        r = set_broken(c, -EPROTO, "the daemon refused the stream: %s: %s",
                       nc_msg_code_name(rp->code), rp->message ? rp->message : "");
        nc_msg_free(m);
        return r;
    }
    if (find_outstanding(c, rp->id) < 0 || stash_has(c, rp->id)) {
        r = set_broken(c, -EPROTO, "the daemon answered request %llu, which is not outstanding",
                       (unsigned long long)rp->id);
        nc_msg_free(m);
        return r;
    }
    stash_node *n = malloc(sizeof *n);
    if (!n) {
        nc_msg_free(m);
        return set_broken(c, -ENOMEM, "out of memory keeping a reply");
    }
    n->next = NULL;
    n->id = rp->id;
    n->msg = m;
    if (c->stash_tail)
        c->stash_tail->next = n;
    else
        c->stash_head = n;
    c->stash_tail = n;
    return 0;
}

/* Read what the socket has (one read) and turn complete frames into stashed
 * replies.  1: progress, 0: nothing to read now, < 0: broken. */
static int read_some(nc_client *c)
{
    ssize_t n;
    do
        n = read(c->fd, c->rbuf, READ_CHUNK);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return set_broken(c, -errno, "reading from the daemon: %s", strerror(errno));
    }
    if (n == 0) {
        /* The decoder keeps a completed frame's counts until the next feed:
         * only a frame that has begun and not completed is cut short. */
        int mid = !c->dec.complete && (c->dec.hdr_have || c->dec.have);
        return set_broken(c, -ECONNRESET, mid
                          ? "the daemon closed the connection in the middle of a reply"
                          : "the daemon closed the connection");
    }
    size_t pos = 0;
    while (pos < (size_t)n) {
        size_t used;
        int f = nc_frame_decoder_feed(&c->dec, c->rbuf + pos, (size_t)n - pos, &used);
        if (f < 0)
            return set_broken(c, -EPROTO, "bad reply frame from the daemon: %s",
                              nc_frame_strerror(f));
        pos += used;
        if (f == 1) {
            const uint8_t *p;
            size_t len;
            nc_frame_decoder_payload(&c->dec, &p, &len);
            int r = accept_reply(c, p, len);
            if (r < 0)
                return r;
        }
    }
    return 1;
}

/* Write a whole frame, reading replies whenever the socket is full. */
static int write_all(nc_client *c, const uint8_t *buf, size_t len, int64_t deadline)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = send(c->fd, buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            int e = errno;
            /* EPIPE/ECONNRESET: the daemon may have said why before closing. */
            while (read_some(c) > 0)
                ;
            if (c->err)
                return c->err;
            return set_broken(c, -e, "writing to the daemon: %s", strerror(e));
        }
        int ev = wait_fd(c->fd, POLLIN | POLLOUT, deadline);
        if (ev == -ETIMEDOUT) {
            if (done == 0)      /* nothing sent: the stream is still whole */
                return set_err(c, -ETIMEDOUT, "timed out waiting to send to the daemon");
            return set_broken(c, -ETIMEDOUT,
                              "timed out in the middle of sending a request");
        }
        if (ev < 0)
            return set_broken(c, ev, "poll: %s", strerror(-ev));
        if (ev & (POLLIN | POLLHUP | POLLERR)) {
            int r = read_some(c);
            if (r < 0)
                return r;
        }
    }
    return 0;
}

/* ---- sending -------------------------------------------------------------- */

int nc_client_send_request(nc_client *c, Neocog__Request *rq, uint64_t *ret_id)
{
    if (!c || !rq)
        return -EINVAL;
    if (c->err)
        return c->err;
    if (c->n_outstanding >= c->max_in_flight)
        return set_err(c, -EAGAIN, "%u requests outstanding: take a reply first",
                       c->n_outstanding);
    rq->id = c->next_id;
    uint8_t *frame;
    size_t len;
    int r = nc_msg_frame(&rq->base, c->max_frame, &frame, &len);
    if (r == -EMSGSIZE)
        return set_err(c, r, "request of %zu bytes exceeds the frame limit of %u bytes",
                       protobuf_c_message_get_packed_size(&rq->base), c->max_frame);
    if (r < 0)
        return set_err(c, r, "cannot pack the request: %s", strerror(-r));
    r = write_all(c, frame, len, deadline_of(c->timeout_ms));
    free(frame);
    if (r < 0)
        return r;
    c->outstanding[c->n_outstanding++] = c->next_id;
    if (ret_id)
        *ret_id = c->next_id;
    c->next_id++;
    return 0;
}

int nc_client_send_recognize(nc_client *c, const nc_client_recognize_opts *opts,
                             const nc_client_image *images, size_t n_images,
                             uint64_t *ret_id)
{
    if (!c || (!images && n_images))
        return -EINVAL;
    /* Build the message around the caller's bytes: nothing is copied until
     * protobuf-c packs it into the frame. */
    Neocog__Image *im = calloc(n_images ? n_images : 1, sizeof *im);
    Neocog__Image **ptrs = calloc(n_images ? n_images : 1, sizeof *ptrs);
    if (!im || !ptrs) {
        free(im);
        free(ptrs);
        return set_err(c, -ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n_images; i++) {
        neocog__image__init(&im[i]);
        im[i].format = images[i].format;
        im[i].data.data = (uint8_t *)images[i].data;
        im[i].data.len = images[i].len;
        im[i].width = images[i].width;
        im[i].height = images[i].height;
        im[i].segment = images[i].segment != 0;
        im[i].polarity = images[i].polarity;
        ptrs[i] = &im[i];
    }
    Neocog__RecognizeRequest rr = NEOCOG__RECOGNIZE_REQUEST__INIT;
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    if (opts) {
        rr.model = opts->model;
        rr.top_k = opts->top_k;
        rq.deadline_us = opts->deadline_us;
        rq.priority = opts->priority;
        rr.min_confidence = opts->min_confidence;
    }
    rr.n_images = n_images;
    rr.images = ptrs;
    rq.kind_case = NEOCOG__REQUEST__KIND_RECOGNIZE;
    rq.recognize = &rr;
    int r = nc_client_send_request(c, &rq, ret_id);
    free(im);
    free(ptrs);
    return r;
}

/* ---- receiving ------------------------------------------------------------ */

static int receive(nc_client *c, int any, uint64_t id, int timeout_ms, nc_msg **ret)
{
    if (!c || !ret)
        return -EINVAL;
    if (!any && find_outstanding(c, id) < 0)
        return set_err(c, -ENOENT, "request %llu is not outstanding", (unsigned long long)id);
    if (any && c->n_outstanding == 0)
        return set_err(c, -ENOENT, "no request is outstanding");
    int64_t deadline = deadline_of(timeout_ms);
    for (;;) {
        nc_msg *m = stash_take(c, any, id);
        if (m) {
            *ret = m;
            return 0;
        }
        if (c->err)
            return c->err;
        /* Whatever is already readable first, so timeout 0 still sees it. */
        int r = read_some(c);
        if (r < 0)
            return r;
        if (r > 0)
            continue;
        if (timeout_ms == 0)
            return set_err(c, -EAGAIN, "no reply yet");
        int ev = wait_fd(c->fd, POLLIN, deadline);
        if (ev == -ETIMEDOUT)
            return set_err(c, -ETIMEDOUT, "timed out waiting for the daemon's reply");
        if (ev < 0)
            return set_broken(c, ev, "poll: %s", strerror(-ev));
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

/* ---- blocking calls ------------------------------------------------------- */

/* Send and wait for that reply; the timeout covers both. */
static int roundtrip(nc_client *c, Neocog__Request *rq, nc_msg **ret)
{
    uint64_t id;
    int r = nc_client_send_request(c, rq, &id);
    if (r < 0)
        return r;
    return receive(c, 0, id, c->timeout_ms, ret);
}

int nc_client_recognize(nc_client *c, const nc_client_recognize_opts *opts,
                        const nc_client_image *images, size_t n_images,
                        nc_msg **ret_reply)
{
    if (!c || !ret_reply)
        return -EINVAL;
    uint64_t id;
    int r = nc_client_send_recognize(c, opts, images, n_images, &id);
    if (r < 0)
        return r;
    return receive(c, 0, id, c->timeout_ms, ret_reply);
}

int nc_client_status(nc_client *c, nc_msg **ret_reply)
{
    Neocog__StatusRequest s = NEOCOG__STATUS_REQUEST__INIT;
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    rq.kind_case = NEOCOG__REQUEST__KIND_STATUS;
    rq.status = &s;
    return c && ret_reply ? roundtrip(c, &rq, ret_reply) : -EINVAL;
}

int nc_client_health(nc_client *c, nc_msg **ret_reply)
{
    Neocog__HealthRequest h = NEOCOG__HEALTH_REQUEST__INIT;
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    rq.kind_case = NEOCOG__REQUEST__KIND_HEALTH;
    rq.health = &h;
    return c && ret_reply ? roundtrip(c, &rq, ret_reply) : -EINVAL;
}

int nc_client_model_info(nc_client *c, nc_msg **ret_reply)
{
    Neocog__ModelInfoRequest mi = NEOCOG__MODEL_INFO_REQUEST__INIT;
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    rq.kind_case = NEOCOG__REQUEST__KIND_MODEL_INFO;
    rq.model_info = &mi;
    return c && ret_reply ? roundtrip(c, &rq, ret_reply) : -EINVAL;
}

/* ---- helpers -------------------------------------------------------------- */

static const struct {
    const char *name;
    Neocog__Model model;
} model_names[] = {
    { "default", NEOCOG__MODEL__MODEL_DEFAULT },
    { "cnn", NEOCOG__MODEL__MODEL_CNN },
    { "neocognitron", NEOCOG__MODEL__MODEL_NEOCOGNITRON },
    { "ensemble", NEOCOG__MODEL__MODEL_ENSEMBLE },
};

int nc_client_model_parse(const char *name, Neocog__Model *ret)
{
    if (!name || !ret)
        return -EINVAL;
    for (size_t i = 0; i < sizeof model_names / sizeof model_names[0]; i++)
        if (!strcmp(name, model_names[i].name)) {
            *ret = model_names[i].model;
            return 0;
        }
    return -EINVAL;
}

const char *nc_client_model_name(Neocog__Model m)
{
    for (size_t i = 0; i < sizeof model_names / sizeof model_names[0]; i++)
        if (model_names[i].model == m)
            return model_names[i].name;
    return "unknown";
}

const char *nc_client_reject_reason_text(Neocog__RejectReason r)
{
    switch (r) {
    case NEOCOG__REJECT_REASON__REJECT_NONE: return "";
    case NEOCOG__REJECT_REASON__REJECT_NO_INK: return "no ink";
    case NEOCOG__REJECT_REASON__REJECT_BELOW_THRESHOLD: return "below threshold";
    case NEOCOG__REJECT_REASON__REJECT_AMBIGUOUS_SEGMENTATION: return "ambiguous segmentation";
    case NEOCOG__REJECT_REASON__REJECT_NO_RESPONSE: return "no response";
    default: break;
    }
    return "unknown";
}

/* clients/client.c — libneocog: connections, framing over a non-blocking
 * socket, request ids, the pipelining window, and (when asked for)
 * reconnecting and resending.  See neocog_client.h.  This file makes,
 * connects and frees the client; client_window.c moves the requests (the
 * window, reading and writing, retries, the send and receive calls), on
 * the state of client_state.h.
 *
 * Layer: clients.  Nothing printed, nothing exits; errors are negative
 * errno values with a sentence in c->errmsg.
 *
 * The socket is non-blocking and every wait is a poll() with the time left
 * until the call's deadline, so timeouts hold however the bytes trickle in
 * and EINTR only costs a retry.  Replies are read whenever we wait, also
 * while writing: a daemon that stops reading until we take its replies
 * (per-connection backpressure) must not deadlock against us.
 *
 * Retries: each request of the window is an entry that is either on the
 * wire (written whole on the current connection, its reply awaited) or
 * waiting (to be written at `due`, on this connection or the next one).
 * Every wait of the library first runs service(): connect again when due,
 * give up what may not be sent again, write what is due.  There is no
 * thread: the library moves only while the caller is inside a call. */
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

#define DEFAULT_CONNECT_TIMEOUT_MS 5000
#define DEFAULT_TIMEOUT_MS 30000
#define DEFAULT_MAX_IN_FLIGHT 64u
/* A window far beyond what any daemon keeps in flight per connection
 * (default 128) only buys memory; refuse silly values early. */
#define MAX_MAX_IN_FLIGHT 65536u
#define DEFAULT_BACKOFF_INITIAL_MS 20
#define DEFAULT_BACKOFF_MAX_MS 1000

/* ---- connecting ----------------------------------------------------------- */

void nc_client_entry_clear(entry *e)
{
    free(e->frame);
    nc_msg_free(e->last_refusal);
    memset(e, 0, sizeof *e);
}

static int client_new(const nc_client_options *opt, nc_client **ret)
{
    nc_client_options o = { 0 };
    if (opt)
        o = *opt;
    if (o.max_in_flight > MAX_MAX_IN_FLIGHT || o.max_frame_bytes > NC_FRAME_MAX_LIMIT ||
        o.retry.backoff_initial_ms < 0 || o.retry.backoff_max_ms < 0)
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
    c->retry = o.retry;
    if (!c->retry.deadline_ms)
        c->retry.deadline_ms = c->timeout_ms;
    if (!c->retry.backoff_initial_ms)
        c->retry.backoff_initial_ms = DEFAULT_BACKOFF_INITIAL_MS;
    if (!c->retry.backoff_max_ms)
        c->retry.backoff_max_ms = DEFAULT_BACKOFF_MAX_MS;
    if (c->retry.backoff_max_ms < c->retry.backoff_initial_ms)
        c->retry.backoff_max_ms = c->retry.backoff_initial_ms;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    c->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)c ^
             ((uint64_t)getpid() << 40) ^ UINT64_C(0x9e3779b97f4a7c15);
    c->win = calloc(c->max_in_flight, sizeof *c->win);
    c->rbuf = malloc(READ_CHUNK);
    if (!c->win || !c->rbuf || nc_frame_decoder_init(&c->dec, c->max_frame)) {
        nc_client_free(c);
        return -ENOMEM;
    }
    *ret = c;
    return 0;
}

int nc_client_connect_addr(nc_client *c, const nc_client_addr *a)
{
    int fd;
    int r = nc_addr_connect(a, c->connect_timeout_ms, &fd, c->errmsg, sizeof c->errmsg);
    if (r == 0)
        c->fd = fd;
    return r;
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
    r = nc_client_connect_addr(c, &a);
    if (r < 0) {
        snprintf(connect_errmsg, sizeof connect_errmsg, "%s", c->errmsg);
        nc_client_free(c);
        return r;
    }
    c->addr = a;
    c->have_addr = 1;
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
    for (uint32_t i = 0; c->win && i < c->n_win; i++)
        nc_client_entry_clear(&c->win[i]);
    nc_frame_decoder_fini(&c->dec);
    free(c->win);
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
    return c ? c->n_win : 0;
}

int nc_client_timeout(const nc_client *c)
{
    return c->timeout_ms;
}

void nc_client_stats_get(const nc_client *c, nc_client_stats *ret)
{
    if (!ret)
        return;
    if (c)
        *ret = c->stats;
    else
        memset(ret, 0, sizeof *ret);
}

int nc_client_last_giveup(const nc_client *c, nc_client_giveup *ret)
{
    if (!c || !ret)
        return -EINVAL;
    if (!c->have_giveup)
        return -ENOENT;
    *ret = c->last_giveup;
    return 0;
}

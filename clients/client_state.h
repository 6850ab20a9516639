/* clients/client_state.h — the client's state, shared by the two files
 * that make it: client.c (connecting, the client's life) and
 * client_window.c (the requests on the wire, retries, the calls).
 *
 * Layer: clients, private to libneocog. */
#ifndef NC_CLIENT_STATE_H
#define NC_CLIENT_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "neocog_client.h"

#define READ_CHUNK 65536

/* A reply read off the wire (or made here for a request given up) and not
 * yet handed to the caller. */
typedef struct stash_node {
    struct stash_node *next;
    uint64_t id;
    nc_msg *msg;
    int gave_up;
    nc_client_giveup info;      /* gave_up only */
} stash_node;

enum { ON_WIRE, WAITING };

/* A request sent and not yet handed back. */
typedef struct entry {
    uint64_t id;
    int state;                  /* ON_WIRE, WAITING (retries only) */
    int done;                   /* its reply (or give-up) is in the stash */
    /* retries only: */
    uint8_t *frame;             /* the whole frame, to write it again */
    size_t len;
    uint32_t attempts;          /* times written whole */
    int32_t refused_code;       /* waiting after this refusal; -1: after a loss */
    nc_msg *last_refusal;       /* the daemon's last refusal of it */
    int64_t first_ms, due_ms;
} entry;

struct nc_client {
    int fd;
    int err;                    /* sticky transport error; 0 while healthy */
    char errmsg[256];
    int connect_timeout_ms, timeout_ms;
    uint32_t max_in_flight, max_frame;
    uint64_t next_id;
    /* The window: a plain array searched linearly; it holds at most
     * max_in_flight entries, and a scan of a few dozen is cheaper than any
     * hash. */
    entry *win;
    uint32_t n_win;
    stash_node *stash_head, *stash_tail;
    nc_frame_decoder dec;
    uint8_t *rbuf;              /* READ_CHUNK bytes */
    /* retries */
    nc_client_retry retry;      /* max_attempts 0: off */
    nc_client_addr addr;
    int have_addr;
    int draining;               /* an UNAVAILABLE came: send nothing more here */
    int answered_here;          /* a reply came on this connection */
    uint32_t connect_fails;     /* in a row, for the reconnection backoff */
    int64_t reconnect_at;       /* ms; valid while fd < 0 */
    char loss[256];             /* why the last connection ended or failed */
    uint64_t rng;
    nc_client_stats stats;
    nc_client_giveup last_giveup;
    int have_giveup;
};

/* client.c's, for client_window.c: free what an entry holds and zero it;
 * connect c to a within its connect timeout (0, or a negative errno with
 * the sentence in c->errmsg). */
void nc_client_entry_clear(entry *e);
int nc_client_connect_addr(nc_client *c, const nc_client_addr *a);

#endif

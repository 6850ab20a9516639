/* clients/neocog_client.h — libneocog, the C client library of neocogd.
 *
 * Layer: clients (needs proto/: framing, capped unpacking, the generated
 * neocog.pb-c.h).  Link with libneocog_dep in Meson.
 *
 * Two ways to talk to the daemon over one connection:
 *
 *   blocking   nc_client_recognize / _status / _health / _model_info send one
 *              request and wait for its reply;
 *   pipelined  nc_client_send_* queues requests without waiting (up to a
 *              window of outstanding requests), and nc_client_receive /
 *              nc_client_receive_id hand back replies as they arrive.  The
 *              daemon may answer out of order (proto/neocog.proto); the
 *              library matches replies to requests by id.
 *
 * Both may be mixed: a blocking call keeps any other reply that arrives
 * meanwhile for a later nc_client_receive.
 *
 * Replies are the protocol's own messages (Neocog__Reply, documented field
 * by field in proto/neocog.proto), owned by an nc_msg that the caller frees
 * with nc_msg_free().  A call that returns 0 got a reply: the reply's own
 * `code` (and each Result's `code`) says whether the daemon did the work.
 * A negative return means no reply: a local or transport failure.
 *
 * Errors are negative errno values, and nc_client_errmsg() holds a sentence
 * about the last one.  Among them:
 *   -EINVAL        bad argument or address
 *   -ETIMEDOUT     the call's timeout passed (the connection is then unusable
 *                  if a request was half written or a reply half read)
 *   -EAGAIN        nc_client_send_*: the window of outstanding requests is full;
 *                  nc_client_receive: nothing arrived within a timeout of 0
 *   -ECONNRESET    the daemon closed the connection (after a framing error it
 *                  first sends a reply with id 0, whose message is kept)
 *   -EPROTO        the daemon sent something this library does not understand
 *   -EMSGSIZE      a request above the frame limit
 *   -ENOENT        nc_client_receive_id: that id is not outstanding
 *   -ENOMEM, and the errno of a failed connect/read/write.
 * Once a transport error has happened the connection is broken for good:
 * every later call returns the same error; free the client and reconnect.
 * Unless retries are on (nc_client_retry below): then the library
 * reconnects by itself, resends what got no answer, and reports what it
 * gave up on.
 *
 * The library never prints, exits or touches signal dispositions (writes
 * use MSG_NOSIGNAL, so a closed peer is -EPIPE, not SIGPIPE).  EINTR is
 * retried inside, with the remaining timeout.  One nc_client must not be
 * used by two threads at once; separate clients are independent. */
#ifndef NC_CLIENT_H
#define NC_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "message.h"
#include "neocog.pb-c.h"

typedef struct nc_client nc_client;

/* ---- addresses ----------------------------------------------------------- */

typedef enum nc_client_addr_kind {
    NC_CLIENT_ADDR_UNIX,
    NC_CLIENT_ADDR_TCP,
} nc_client_addr_kind;

typedef struct nc_client_addr {
    nc_client_addr_kind kind;
    char path[108];             /* UNIX: socket path (sun_path's size) */
    char host[256];             /* TCP: name or address, brackets removed */
    uint16_t port;              /* TCP */
} nc_client_addr;

/* Parse a server address:
 *   unix:PATH            a Unix socket
 *   PATH                 anything containing '/' is a Unix socket too
 *   tcp:HOST:PORT        TCP; HOST may be a name, IPv4, or [IPv6]
 *   HOST:PORT            the same without the prefix
 *   tcp:HOST or HOST     port NC_DEFAULT_TCP_PORT (5517)
 * Pure (no I/O).  -EINVAL with nothing written for anything else. */
int nc_client_addr_parse(const char *text, nc_client_addr *ret);

/* The address used when none is given, as text in dst: $NEOCOG_SERVER if
 * set, else the first Unix socket that exists among the daemon's defaults
 * ($RUNTIME_DIRECTORY is the daemon's, not ours, so: /run/neocogd/neocogd.sock,
 * then $XDG_RUNTIME_DIR/neocogd.sock), else tcp:127.0.0.1:5517. */
void nc_client_default_addr(char *dst, size_t cap);

/* ---- connections --------------------------------------------------------- */

/* Reconnecting and retrying, off when max_attempts is 0 (the default: a
 * transport error breaks the client for good, as described above).
 *
 * With max_attempts > 0 the client keeps a copy of every request until it
 * is answered and:
 *   - when the connection breaks (the daemon stopped, was killed, a balancer
 *     dropped it), connects again to the same address, after a jittered
 *     exponential backoff that grows while connecting fails, and resends
 *     every request that got no reply, with its id.  Recognition, status,
 *     health and model info change nothing on the daemon, so a request
 *     answered by one daemon and resent to another is harmless; ids are
 *     ours, so a late duplicate cannot be mistaken for another request;
 *   - when a reply says UNAVAILABLE (the daemon is draining, or lacks the
 *     model) or RESOURCE_EXHAUSTED (its queue is full), resends that
 *     request after a backoff; after an UNAVAILABLE nothing more is sent on
 *     that connection: once it has answered what it holds, the client
 *     connects again (behind a balancer: to another daemon);
 *   - gives a request up when it has been sent max_attempts times, or when
 *     deadline_ms have passed since it was first sent and it would have to
 *     be sent again.  A request on the wire is waited for as long as the
 *     caller waits (the receive timeout), not cut short by the deadline.
 * A request given up is handed back by nc_client_receive / _receive_id
 * (and the blocking calls) with the return value NC_CLIENT_GAVE_UP and a
 * reply: the daemon's last refusal when there was one, else a reply made
 * here whose code is UNAVAILABLE (DEADLINE_EXCEEDED when the deadline
 * passed) and whose message says why; nc_client_last_giveup() tells which.
 * So every request sent is handed back exactly once: answered or given up.
 * Sending never fails for transport reasons while retrying: a request sent
 * while disconnected waits in the window for the next connection.
 * nc_client_fd() changes on each reconnection and is -1 between two. */
typedef struct nc_client_retry {
    uint32_t max_attempts;      /* sends of one request at most, the first
                                   included; 0: no retries (the default) */
    int deadline_ms;            /* from the first send; 0: the timeout_ms
                                   option; < 0: none */
    int backoff_initial_ms;     /* 0: 20 */
    int backoff_max_ms;         /* 0: 1000 */
} nc_client_retry;

typedef struct nc_client_options {
    int connect_timeout_ms;     /* 0: 5000; < 0: none */
    int timeout_ms;             /* blocking calls; 0: 30000; < 0: none */
    uint32_t max_in_flight;     /* pipelining window; 0: 64 */
    uint32_t max_frame_bytes;   /* both ways; 0: NC_FRAME_DEFAULT_MAX */
    nc_client_retry retry;      /* zeroed: no retries */
} nc_client_options;

/* Connect to addr (NULL or "": nc_client_default_addr).  opt may be NULL
 * (all defaults).  The socket is non-blocking and close-on-exec. */
int nc_client_connect(const char *addr, const nc_client_options *opt, nc_client **ret);

/* Adopt a connected stream socket (e.g. one end of a socketpair, or a
 * socket inherited from a supervisor).  The client owns fd from now on,
 * also when this fails. */
int nc_client_from_fd(int fd, const nc_client_options *opt, nc_client **ret);

/* Close and free; NULL is fine.  Outstanding replies are dropped. */
void nc_client_free(nc_client *c);

/* A sentence about the last error (empty when there was none).  Valid until
 * the next call on c.  With c NULL: why this thread's last nc_client_connect
 * failed (there is no client to hold it). */
const char *nc_client_errmsg(const nc_client *c);

/* The socket, for callers that poll several clients themselves: readable
 * means nc_client_receive(c, 0, ...) will make progress.  With retries on it
 * changes on each reconnection (-1 between two), and resends are due at
 * times of their own: such callers should also call nc_client_receive(c, 0,
 * ...) every few milliseconds. */
int nc_client_fd(const nc_client *c);

/* Requests sent whose replies have not been handed back yet (replies that
 * arrived but were not yet taken count: the window bounds memory too). */
uint32_t nc_client_in_flight(const nc_client *c);

/* ---- requests ------------------------------------------------------------ */

/* One image to recognise.  data is borrowed for the duration of the call
 * (the library packs it into the frame before returning). */
typedef struct nc_client_image {
    Neocog__ImageFormat format; /* NEOCOG__IMAGE_FORMAT__FORMAT_AUTO for PGM/PNG/JPEG */
    const uint8_t *data;
    size_t len;
    uint32_t width, height;     /* FORMAT_RAW_GRAY only */
    int segment;                /* nonzero: split into characters */
    Neocog__Polarity polarity;  /* 0: the daemon decides */
} nc_client_image;

/* Options of a recognise request; a zeroed struct is a fine default (the
 * server's model, top-1, the server's deadline, normal priority, the
 * server's reject threshold). */
typedef struct nc_client_recognize_opts {
    Neocog__Model model;
    uint32_t top_k;             /* also each segmented digit's candidates
                                   (Digit.top) when > 0 */
    uint64_t deadline_us;
    int32_t priority;
    /* RecognizeRequest.min_confidence: 0 the server's threshold, 0 < x <= 1
     * this minimum confidence (looser or tighter than the server's), < 0 no
     * threshold (NC_CLIENT_NO_THRESHOLD).  Each Result and Digit says which
     * threshold decided (threshold) and why an answer is a reject
     * (reject_reason). */
    float min_confidence;
    /* RecognizeRequest.charset: NULL or "digits" the digit models, "alnum"
     * letters and digits, "all" the 94 printable ASCII characters (the
     * daemon's character model; UNAVAILABLE without one). */
    const char *charset;
} nc_client_recognize_opts;

#define NC_CLIENT_NO_THRESHOLD (-1.0f)

/* Blocking calls: send, then wait up to the client's timeout_ms for the
 * reply to this request.  0 with *ret_reply set (free with nc_msg_free;
 * read it with nc_msg_reply()), NC_CLIENT_GAVE_UP (retries on: see
 * nc_client_retry), or a negative error. */
int nc_client_recognize(nc_client *c, const nc_client_recognize_opts *opts,
                        const nc_client_image *images, size_t n_images,
                        nc_msg **ret_reply);
int nc_client_status(nc_client *c, nc_msg **ret_reply);
int nc_client_health(nc_client *c, nc_msg **ret_reply);
int nc_client_model_info(nc_client *c, nc_msg **ret_reply);

/* Pipelined calls.  Send one request and return its id without waiting for
 * the reply.  -EAGAIN when max_in_flight requests are already outstanding
 * (take a reply first).  Writing waits up to the client's timeout_ms for
 * the socket; replies that arrive meanwhile are read and kept, so a daemon
 * blocked on writing to us cannot deadlock with us blocked on writing to it. */
int nc_client_send_recognize(nc_client *c, const nc_client_recognize_opts *opts,
                             const nc_client_image *images, size_t n_images,
                             uint64_t *ret_id);
/* Any request: the library sets rq->id (the caller's value is replaced). */
int nc_client_send_request(nc_client *c, Neocog__Request *rq, uint64_t *ret_id);

/* The next reply, whichever request it answers (its id is reply->id).
 * timeout_ms: < 0 wait for ever, 0 only what has already arrived (-EAGAIN
 * if none), > 0 at most that long (-ETIMEDOUT).  -ENOENT when nothing is
 * outstanding (waiting would never end).  With retries on, it returns
 * NC_CLIENT_GAVE_UP (with a reply) for a request given up. */
int nc_client_receive(nc_client *c, int timeout_ms, nc_msg **ret_reply);

/* The reply to request `id`; other replies arriving first are kept for
 * nc_client_receive.  Timeouts as above; -ENOENT if id is not outstanding. */
int nc_client_receive_id(nc_client *c, uint64_t id, int timeout_ms, nc_msg **ret_reply);

/* ---- retries: what happened ---------------------------------------------- */

/* nc_client_receive, _receive_id and the blocking calls return this (> 0)
 * for a request the library gave up on (see nc_client_retry); *ret_reply is
 * set as for an answer and must be freed the same way. */
#define NC_CLIENT_GAVE_UP 1

/* The request last handed back with NC_CLIENT_GAVE_UP. */
typedef struct nc_client_giveup {
    uint64_t id;
    uint32_t attempts;          /* times it was sent */
    int from_daemon;            /* 1: the reply is the daemon's last refusal;
                                   0: no daemon answered it (lost), the
                                   reply was made here */
    int32_t code;               /* the reply's code */
    char why[256];              /* the reply's message */
} nc_client_giveup;

/* 0 and *ret filled, or -ENOENT when nothing was given up yet. */
int nc_client_last_giveup(const nc_client *c, nc_client_giveup *ret);

/* Counts over the client's life, exact: every request accepted by a send
 * call is eventually counted once in answered or gave_up (or is still in
 * flight: sent - answered - gave_up == nc_client_in_flight). */
#define NC_CLIENT_CODES 17      /* gRPC codes 0..16 */
typedef struct nc_client_stats {
    uint64_t sent;              /* requests accepted by a send call */
    uint64_t answered;          /* handed back with the daemon's reply, any code */
    uint64_t gave_up;           /* handed back with NC_CLIENT_GAVE_UP */
    uint64_t gave_up_by_code[NC_CLIENT_CODES]; /* of those, the daemon's last
                                   refusal, by its code */
    uint64_t lost;              /* of those, never answered by any daemon */
    uint64_t resends;           /* writes of a request already written before */
    uint64_t resent_after_loss; /* of those, after its connection broke */
    uint64_t resent_by_code[NC_CLIENT_CODES]; /* of those, after a refusal */
    uint64_t reconnects;        /* connections made after the first */
    uint64_t connect_failures;  /* reconnection attempts that failed */
} nc_client_stats;

void nc_client_stats_get(const nc_client *c, nc_client_stats *ret);

/* ---- small helpers ------------------------------------------------------- */

/* "cnn", "neocognitron", "ensemble", "default" <-> the enum.  -EINVAL for
 * an unknown name. */
int nc_client_model_parse(const char *name, Neocog__Model *ret);
const char *nc_client_model_name(Neocog__Model m);

/* A reject reason in words: "" (REJECT_NONE), "no ink", "below threshold",
 * "ambiguous segmentation", "no response"; "unknown" for a value this
 * library does not know. */
const char *nc_client_reject_reason_text(Neocog__RejectReason r);

#endif

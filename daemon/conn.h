/* daemon/conn.h — one client connection: an explicit state machine over a
 * libevent bufferevent (memcached's drive_machine / conn_set_state /
 * state_text pattern).
 *
 *   READ_HEADER  waiting for the 12 header bytes
 *   READ_BODY    header checked, waiting for `length` payload bytes
 *   BLOCKED      too many requests in flight or too many reply bytes
 *                unsent: not reading until that drops (backpressure)
 *   CLOSING      a framing error was answered; flush, then close
 *   CLOSED       socket gone; the struct lives until its last request
 *                comes home (requests hold references)
 *
 * A frame that has started must finish within frame_timeout_ms, else the
 * client gets DEADLINE_EXCEEDED and is closed (slow-loris protection; an
 * idle connection between frames may stay open). */
#ifndef NC_CONN_H
#define NC_CONN_H

#include <stdatomic.h>

#include <event2/bufferevent.h>

#include "frame.h"
#include "server.h"

typedef enum nc_conn_state {
    NC_CONN_READ_HEADER = 0,
    NC_CONN_READ_BODY,
    NC_CONN_BLOCKED,
    NC_CONN_CLOSING,
    NC_CONN_CLOSED,
} nc_conn_state;

struct nc_conn {
    nc_server *srv;
    struct bufferevent *bev;
    struct event *frame_timer;
    nc_conn_state state;
    nc_frame_header hdr;
    uint32_t in_flight;         /* requests queued or running */
    uint32_t refs;              /* 1 for the socket + 1 per request */
    atomic_int closed;          /* read by workers: skip work of a gone client */
    int peer_eof;               /* client shut its sending side: answer what it
                                   sent, then close */
    int drain_idle;             /* draining and all answered: refuse new frames */
    int drain_shut;             /* draining: our side half closed, close soon */
    struct event *drain_timer;  /* draining: grace, then linger (conn.c) */
    char peer[80];
    nc_conn *prev, *next;
};

const char *nc_conn_state_text(nc_conn_state st);

/* Take over an accepted socket. */
void nc_conn_accept(nc_server *s, evutil_socket_t fd, const char *peer);

/* Queue a reply frame (dropped silently when the connection is closed). */
void nc_conn_send(nc_conn *c, const Neocog__Reply *reply);

/* A request of c finished (its reply was sent or dropped): resumes a
 * blocked connection, closes an idle one while draining, drops the
 * request's reference. */
void nc_conn_request_done(nc_conn *c);

nc_conn *nc_conn_ref(nc_conn *c);
void nc_conn_unref(nc_conn *c);

/* Draining: every connection, once idle (all it sent answered), refuses
 * whatever else arrives with UNAVAILABLE and closes after the client does
 * or after a short silence, never under a request in flight (conn.c).
 * force: close all now. */
void nc_conn_drain_all(nc_server *s, int force);

#endif

/* daemon/handler.h — what a request frame means, and turning finished
 * work into replies.
 *
 * Layer: daemon, event thread only.  Every limit is checked here, before
 * anything is queued: protobuf memory (nc_msg_unpack's cap), image count,
 * bytes per image, raw dimensions against the byte count, model and
 * format enums. */
#ifndef NC_HANDLER_H
#define NC_HANDLER_H

#include <stddef.h>
#include <stdint.h>

#include "request.h"
#include "server.h"

/* One serialized Request from any origin (a frame's payload from conn.c,
 * or what an HTTP call was translated to): the one way into the batcher,
 * with every check above.  bytes: what the request holds of the queue's byte budget.
 * The reply, or an error, goes to o->ops->send, at once or when the work is
 * done. */
void nc_handle_request(nc_server *s, const nc_origin *o, const uint8_t *payload, size_t len,
                       size_t bytes);

/* A recognize Request already in memory (an HTTP call's, built from its
 * body without a protobuf round trip): the same checks and way into the
 * batcher as nc_handle_request's.  rq stays the caller's and must live
 * until the origin's `done` when the request is queued (o->ops->hold was
 * called), else only until this returns.  bytes as above. */
void nc_handle_recognize(nc_server *s, const nc_origin *o, const Neocog__Request *rq,
                         size_t bytes);

/* Collect finished tasks from the batcher and answer completed requests. */
void nc_handle_done(nc_server *s);

/* A reply with only id, code and message to o, counted in the metrics. */
void nc_handle_error(nc_server *s, const nc_origin *o, uint64_t id, int code,
                     const char *message);

#endif

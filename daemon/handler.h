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

#include "conn.h"
#include "server.h"

/* One complete frame payload from c. */
void nc_handle_frame(nc_conn *c, const uint8_t *payload, size_t len);

/* Collect finished tasks from the batcher and answer completed requests. */
void nc_handle_done(nc_server *s);

/* A reply with only id, code and message. */
void nc_handle_error(nc_conn *c, uint64_t id, int code, const char *message);

#endif

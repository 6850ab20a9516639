/* daemon/http_call.h — an HTTP recognition call (POST /v1/recognize,
 * POST /v2/models/NAME/infer) from its evhttp request to its answer.
 *
 * Layer: daemon; these functions run on the event thread.  The body is
 * translated into the protocol's Request (http_request.h) and handed to
 * the handler's one way into the batcher (nc_handle_recognize, beside
 * nc_handle_request of the socket path), with the call as its origin
 * (request.h): same checks, caps, queue, priorities, deadlines, metrics
 * and drain accounting.  The body is parsed on a thread of its own
 * (offload.h), the call owning it from the start; the event thread then
 * only hands the result to the handler.  The Request is built in memory,
 * pointing into the body, and handed over as it is: no protobuf packing
 * and unpacking, only its packed size for the frame limit and the queue's
 * byte budget.  The JSON answer is written on the worker that finishes the
 * call's last image (the origin's prepare, request.h); the event thread
 * (handler.c's finish_request, woken by the batcher's eventfd) only hands
 * that body to evhttp_send_reply, by reference.
 *
 * A client that goes away meanwhile: evhttp calls the connection's close
 * callback, which marks the call gone (workers skip its images, as for a
 * closed socket) and forgets the evhttp request when evhttp frees it with
 * the connection; a request evhttp detached instead is still ours and is
 * freed by the evhttp_send_reply of the answer.  The call itself lives
 * until the handler's `done`. */
#ifndef NC_HTTP_CALL_H
#define NC_HTTP_CALL_H

#include <event2/http.h>

#include "server.h"

typedef enum nc_http_api {
    NC_HTTP_API_V1 = 0,
    NC_HTTP_API_V2,
} nc_http_api;

/* Answer r: v2_model is the Neocog__Model the /v2 path named (v2_name its
 * name), ignored for /v1. */
void nc_http_recognize(nc_server *s, struct evhttp_request *r, nc_http_api api, int v2_model,
                       const char *v2_name);

/* The thread that parses calls' bodies (before any call; -errno), and its
 * end (calls still being parsed are dropped unanswered: at exit only). */
int nc_http_calls_start(nc_server *s);
void nc_http_calls_stop(void);

/* Send body (taken over, malloc'd) as application/json with status; CORS
 * and Retry-After (429, 503) headers added here. */
void nc_http_send_json(nc_server *s, struct evhttp_request *r, int status, char *body,
                       size_t len);
/* {"error":message,"code":code} with status. */
void nc_http_send_error(nc_server *s, struct evhttp_request *r, int status, const char *code,
                        const char *message);
/* The CORS headers when http_cors_origin is set. */
void nc_http_add_cors(const nc_server *s, struct evhttp_request *r);

#endif

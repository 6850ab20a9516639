/* daemon/http_reply.h — a protocol Reply as an HTTP answer: the status
 * code its Code maps to, and the JSON body of /v1 (proto/reply_json.h's
 * schema, an array with one object per image) or of the Open Inference
 * Protocol (/v2: outputs label, text, confidence, scores).
 *
 * Layer: daemon, pure (no libevent).  Bodies are malloc'd. */
#ifndef NC_HTTP_REPLY_H
#define NC_HTTP_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "neocog.pb-c.h"

/* OK 200, INVALID_ARGUMENT 400, RESOURCE_EXHAUSTED 429, UNAVAILABLE and
 * CANCELLED 503, DEADLINE_EXCEEDED 504, UNIMPLEMENTED 501, others 500. */
int nc_http_status_of(int code);

/* {"error":MESSAGE,"code":CODE}; NULL when out of memory. */
char *nc_http_error_json(const char *message, const char *code, size_t *len);

/* The answer to a recognition: *status and a body.  A reply whose every
 * image failed (or that failed as a whole) is an error body with the first
 * failure's status; otherwise 200, images that failed carrying their own
 * "error" member (/v1) — /v2 has no place for those, so there any failed
 * image fails the call.  names: /v1's "file" per image (NULL entries or
 * NULL: null).  v2_outputs: NC_V2_* bits, 0 all.  NULL: out of memory. */
char *nc_http_v1_json(const Neocog__Reply *r, char *const *names, int *status, size_t *len);
char *nc_http_v2_json(const Neocog__Reply *r, const char *model_name, const char *id,
                      uint32_t v2_outputs, int *status, size_t *len);

#endif

/* daemon/http_request.h — an HTTP recognition call translated into the
 * protocol's Request, which then takes the socket path's one way into the
 * batcher (handler.h's nc_handle_request: same checks, caps, queue).
 *
 * Layer: daemon, pure (no I/O, no libevent): the body and the query string
 * in, a packed Request out.  Image bytes are decoded (base64) in place in
 * the body, so the body must be writable and outlive the packing.
 *
 * What is accepted (docs/api.md has the whole of it):
 *   /v1 body: image/png, image/jpeg, image/x-portable-graymap (that format),
 *   application/octet-stream (sniffed), multipart/form-data (each part an
 *   image, or an option field named like a query key), application/json
 *   ({"images":[{"data":BASE64, ...}], "model":..., "top_k":...}).
 *   /v2 body: the Open Inference Protocol's JSON, one input: BYTES (base64
 *   encoded images) or UINT8 [N,H,W] / [H,W] (raw grey pixels).
 *   Options (query, form fields, JSON members, /v2 "parameters"): model,
 *   charset, segment, top_k, min_confidence, expected_digits, polarity, roi,
 *   priority, deadline_ms. */
#ifndef NC_HTTP_REQUEST_H
#define NC_HTTP_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "neocog.pb-c.h"

/* Why a body could not be translated: HTTP 400 or 415. */
enum { NC_HTTP_BAD = 400, NC_HTTP_UNSUPPORTED = 415 };

typedef struct nc_http_opts {
    int model;                  /* Neocog__Model; -1 unset */
    char charset[16];           /* RecognizeRequest.charset, as given (the
                                   handler judges it) */
    uint32_t top_k;
    float min_confidence;
    int32_t priority;
    uint64_t deadline_us;
    /* defaults of every image */
    int segment;
    int polarity;               /* Neocog__Polarity */
    uint32_t expected_digits;
    int has_roi;
    uint32_t roi[4];            /* x, y, width, height */
} nc_http_opts;

void nc_http_opts_init(nc_http_opts *o);
/* One option by name: 0, -ENOENT unknown key, -EINVAL bad value (why says). */
int nc_http_opt_set(nc_http_opts *o, const char *key, const char *value, size_t value_len,
                    char *why, size_t why_len);
/* Every key=value of a query string (percent-decoded). */
int nc_http_opts_query(nc_http_opts *o, const char *query, char *why, size_t why_len);

/* The images of one call, their names ("file" in /v1 replies: a form
 * part's filename or a JSON image's "file"; NULL none) and the options. */
typedef struct nc_http_call_in {
    nc_http_opts opts;
    uint32_t n;
    Neocog__Image *image;       /* n of them; data points into the body */
    Neocog__Box *roi;           /* n of them */
    char **name;                /* n, malloc'd strings or NULL */
    char *v2_id;                /* /v2 request "id", echoed (malloc'd) */
    uint32_t v2_outputs;        /* /v2 "outputs" asked for, bit per name; 0 all */
    /* raw pixels of a UINT8 tensor (malloc'd) */
    uint8_t *pixels;
} nc_http_call_in;

/* /v2 output names, in the order replies list them. */
enum { NC_V2_LABEL = 1, NC_V2_TEXT = 2, NC_V2_CONFIDENCE = 4, NC_V2_SCORES = 8 };

void nc_http_call_in_free(nc_http_call_in *in);

/* /v1: body of content_type (may be NULL) into in (opts already hold the
 * query's).  0, or NC_HTTP_BAD / NC_HTTP_UNSUPPORTED with why. */
int nc_http_v1_parse(nc_http_call_in *in, const char *content_type, char *body, size_t len,
                     char *why, size_t why_len);
/* /v2 infer: the JSON body.  0 or NC_HTTP_BAD with why. */
int nc_http_v2_parse(nc_http_call_in *in, char *body, size_t len, char *why, size_t why_len);

/* The Request for in (recognize, with id) in *rq and *rr, pointing into in
 * and into v (room for in->n image pointers, the caller's). */
void nc_http_request_fill(const nc_http_call_in *in, uint64_t id, Neocog__Image **v,
                          Neocog__Request *rq, Neocog__RecognizeRequest *rr);
/* The Request for in (recognize, with id) packed into a malloc'd buffer;
 * 0 or -ENOMEM. */
int nc_http_pack(const nc_http_call_in *in, uint64_t id, uint8_t **ret, size_t *ret_len);

/* Decode base64 (standard or URL-safe alphabet, padding optional, white
 * space skipped, a "data:...;base64," prefix dropped) from s[0..len) into
 * out, which may be s itself.  Returns the decoded length, or -1. */
long nc_base64_decode(const char *s, size_t len, uint8_t *out);

#endif

/* daemon/http.h — the HTTP port (evhttp): the recognition API and the
 * operator's endpoints.
 *   POST /v1/recognize            images in, the JSON of `neocog recognize
 *                                 --format json` out (http_call.h)
 *   /v2...                        the Open Inference Protocol (KServe v2):
 *                                 server and model metadata, health, infer
 *   GET /metrics                  Prometheus text
 *   GET /healthz                  200 while the loop runs, from before the
 *                                 models load
 *   GET /readyz                   200 "ready" when the models are loaded and
 *                                 the server is not draining, else 503 with
 *                                 the body "loading" or "draining"
 * Errors are JSON {"error":..., "code":...}; docs/api.md has the rest. */
#ifndef NC_HTTP_H
#define NC_HTTP_H

#include "server.h"

/* Serve on the listening socket fd (taken over). */
int nc_http_start(nc_server *s, int fd);
void nc_http_stop(nc_server *s);

#endif

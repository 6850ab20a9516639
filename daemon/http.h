/* daemon/http.h — the small HTTP side port (evhttp): GET /metrics
 * (Prometheus text), /healthz (200 while the loop runs, from before the
 * models load), /readyz (200 "ready" when the models are loaded and the
 * server is not draining, else 503 with the body "loading" or "draining"). */
#ifndef NC_HTTP_H
#define NC_HTTP_H

#include "server.h"

/* Serve on the listening socket fd (taken over). */
int nc_http_start(nc_server *s, int fd);
void nc_http_stop(nc_server *s);

#endif

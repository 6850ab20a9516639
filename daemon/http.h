/* daemon/http.h — the small HTTP side port (evhttp): GET /metrics
 * (Prometheus text), /healthz (200 while the loop runs), /readyz (200 when
 * models are loaded and the server is not draining, else 503). */
#ifndef NC_HTTP_H
#define NC_HTTP_H

#include "server.h"

/* Serve on the listening socket fd (taken over). */
int nc_http_start(nc_server *s, int fd);
void nc_http_stop(nc_server *s);

#endif

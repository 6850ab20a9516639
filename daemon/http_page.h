/* daemon/http_page.h — the page at / of the HTTP port: draw a character or
 * drop a photo and see each network's answer (daemon/www/index.html, one
 * file of HTML, CSS and JavaScript that talks to POST /v1/recognize and
 * reads GET /metrics).
 *
 * Layer: daemon, event thread only.  The page is compiled in (meson turns
 * www/index.html into C with www/embed.py), so an installed daemon needs
 * no data folder for it and the page always matches the API it calls. */
#ifndef NC_HTTP_PAGE_H
#define NC_HTTP_PAGE_H

#include <stddef.h>

#include <event2/http.h>

#include "server.h"

/* GET or HEAD /: the page, never cached stale (no-cache), with a
 * Content-Security-Policy that admits only its own inline code; any other
 * method: 405. */
void nc_http_page(nc_server *s, struct evhttp_request *r);

/* Written by www/embed.py: the page's bytes and the policy naming its
 * inline <script> and <style> by hash. */
extern const unsigned char nc_page_html[];
extern const size_t nc_page_html_len;
extern const char nc_page_csp[];

#endif

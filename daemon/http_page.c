/* daemon/http_page.c — see http_page.h. */
#include "http_page.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>

#include "http_call.h"

void nc_http_page(nc_server *s, struct evhttp_request *r)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(r);
    enum evhttp_cmd_type method = evhttp_request_get_command(r);
    if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD) {
        evhttp_add_header(h, "Allow", "GET, HEAD");
        nc_http_send_error(s, r, 405, "METHOD_NOT_ALLOWED", "/ takes GET");
        return;
    }
    struct evbuffer *b = evbuffer_new();
    /* The page is static: referenced, not copied, into each reply. */
    if (!b || evbuffer_add_reference(b, nc_page_html, nc_page_html_len, NULL, NULL)) {
        if (b)
            evbuffer_free(b);
        nc_http_send_error(s, r, 500, "INTERNAL", "out of memory");
        return;
    }
    evhttp_add_header(h, "Content-Type", "text/html; charset=utf-8");
    /* A daemon upgraded in place serves a new page at once. */
    evhttp_add_header(h, "Cache-Control", "no-cache");
    evhttp_add_header(h, "Content-Security-Policy", nc_page_csp);
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(h, "Referrer-Policy", "no-referrer");
    evhttp_send_reply(r, 200, "OK", b);
    evbuffer_free(b);
}

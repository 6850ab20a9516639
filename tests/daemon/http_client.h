/* tests/daemon/http_client.h — a small HTTP/1.1 client over a socket for
 * the HTTP API tests (test_http_api: /v1 and the shared cases; test_http_v2:
 * the Open Inference Protocol), and the sample images they send.
 *
 * No assertions here (tests/test.h counts per file): every function
 * returns 0 or -1 and the tests check. */
#ifndef NC_TEST_HTTP_CLIENT_H
#define NC_TEST_HTTP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

/* The daemons' max_frame_bytes in these tests (bodies over it: 413). */
enum { NC_HTTP_TEST_MAX_FRAME = 262144 };

typedef struct response {
    int status;
    char *head;         /* status line and headers, NUL-terminated */
    char *body;         /* NUL-terminated */
    size_t body_len;
} response;

void response_free(response *r);
/* Read one response (Content-Length framed) from fd, 30 s at most. */
int read_response(int fd, response *r);
/* One request on a new connection (closed after); headers: extra lines,
 * each ending in \r\n, or NULL. */
int http(int port, const char *method, const char *path, const char *headers,
         const void *body, size_t len, response *r);
/* A POST with Content-Type ctype (NULL: none). */
int post(int port, const char *path, const char *ctype, const void *body, size_t len,
         response *r);
/* The body holds s. */
int has(const response *r, const char *s);
/* The head holds the header line "Name: value" (s without the \r\n). */
int has_header(const response *r, const char *s);

/* tests/data/sample-7.pgm and sample-2.pgm (NC_TEST_DATA or tests/data),
 * and the seven's 84x84 pixels; load_samples: 0, or -1 with a message. */
extern uint8_t *pgm7, *pgm2;
extern size_t pgm7_len, pgm2_len;
extern uint8_t px7[84 * 84];
int load_samples(void);
void free_samples(void);

/* base64 of p (malloc'd, NUL-terminated; NULL out of memory). */
char *base64(const uint8_t *p, size_t n);

/* A 2048x2048 PNG of the seven: small on the wire, heavy to decode and
 * shrink, so that one worker is busy with a few of them for a while. */
uint8_t *heavy_png(size_t *len);

/* A request head for POST path with ctype and Content-Length len, kept
 * alive; its length, or -1 when it does not fit. */
int post_head(char *buf, size_t cap, const char *path, const char *ctype, size_t len);

/* buf sent one byte at a time, 0.1 ms apart (a slow client). */
int send_slowly(int fd, const void *buf, size_t len);
/* 1 when the daemon closes fd without a byte of answer (30 s at most). */
int closed_without_answer(int fd);

#endif

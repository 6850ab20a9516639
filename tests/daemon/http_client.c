/* tests/daemon/http_client.c — see http_client.h. */
#include "http_client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

void response_free(response *r)
{
    free(r->head);
    free(r->body);
    memset(r, 0, sizeof *r);
}

int read_response(int fd, response *r)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    memset(r, 0, sizeof *r);
    if (!buf)
        return -1;
    size_t need = 0;
    char *hend = NULL;
    for (;;) {
        if (hend && len >= need)
            break;
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 30000) != 1)
            break;
        if (len + 4096 > cap) {
            char *q = realloc(buf, cap * 2);
            if (!q)
                break;
            buf = q;
            cap *= 2;
            if (hend)
                hend = NULL;    /* recomputed below */
        }
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        if (!hend && (hend = strstr(buf, "\r\n\r\n"))) {
            const char *cl = strcasestr(buf, "\r\nContent-Length:");
            need = (size_t)(hend + 4 - buf) + (cl && cl < hend ? strtoul(cl + 17, NULL, 10) : 0);
        }
    }
    buf[len] = '\0';
    hend = strstr(buf, "\r\n\r\n");
    if (!hend || sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1) {
        free(buf);
        return -1;
    }
    size_t hl = (size_t)(hend - buf) + 2;
    r->head = strndup(buf, hl);
    r->body_len = len - hl - 2;
    r->body = strndup(hend + 4, r->body_len);
    free(buf);
    return r->head && r->body ? 0 : -1;
}

int http(int port, const char *method, const char *path, const char *headers,
         const void *body, size_t len, response *r)
{
    int fd = nc_connect_tcp(port);
    if (fd < 0)
        return -1;
    char head[1024];
    int n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: localhost\r\n%s"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n", method, path,
                     headers ? headers : "", len);
    int err = n < 0 || (size_t)n >= sizeof head || nc_send_all(fd, head, (size_t)n) ||
              (len && nc_send_all(fd, body, len)) || read_response(fd, r);
    close(fd);
    return err ? -1 : 0;
}

int post(int port, const char *path, const char *ctype, const void *body, size_t len,
         response *r)
{
    char h[256];
    snprintf(h, sizeof h, "Content-Type: %s\r\n", ctype ? ctype : "");
    return http(port, "POST", path, ctype ? h : NULL, body, len, r);
}

int has(const response *r, const char *s)
{
    return r->body && strstr(r->body, s) != NULL;
}

int has_header(const response *r, const char *s)
{
    size_t n = strlen(s);
    for (const char *p = r->head; p && (p = strstr(p, "\r\n")); p += 2)
        if (!strncasecmp(p + 2, s, n) && !strncmp(p + 2 + n, "\r\n", 2))
            return 1;
    return 0;
}

/* ---- the sample images ------------------------------------------------------------ */

uint8_t *pgm7, *pgm2;
size_t pgm7_len, pgm2_len;
uint8_t px7[84 * 84];

static uint8_t *read_data_file(const char *name, size_t *len)
{
    char path[1024];
    const char *data = getenv("NC_TEST_DATA");
    snprintf(path, sizeof path, "%s/%s", data ? data : "tests/data", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = malloc(1 << 20);
    *len = buf ? fread(buf, 1, 1 << 20, f) : 0;
    fclose(f);
    return buf;
}

int load_samples(void)
{
    pgm7 = read_data_file("sample-7.pgm", &pgm7_len);
    pgm2 = read_data_file("sample-2.pgm", &pgm2_len);
    if (!pgm7 || !pgm2 || pgm7_len != 13 + 84 * 84 || memcmp(pgm7, "P5\n84 84\n255\n", 13)) {
        fprintf(stderr, "tests/data/sample-7.pgm is not the 84x84 PGM expected\n");
        return -1;
    }
    memcpy(px7, pgm7 + pgm7_len - 84 * 84, sizeof px7);
    return 0;
}

void free_samples(void)
{
    free(pgm7);
    free(pgm2);
    pgm7 = pgm2 = NULL;
}

char *base64(const uint8_t *p, size_t n)
{
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = malloc(4 * (n / 3 + 1) + 1), *q = o;
    for (size_t i = 0; o && i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < n ? p[i + 2] : 0);
        *q++ = t[v >> 18];
        *q++ = t[v >> 12 & 63];
        *q++ = i + 1 < n ? t[v >> 6 & 63] : '=';
        *q++ = i + 2 < n ? t[v & 63] : '=';
    }
    if (q)
        *q = '\0';
    return o;
}

uint8_t *heavy_png(size_t *len)
{
    enum { BIG = 2048 };
    uint8_t *px = malloc((size_t)BIG * BIG), *png = NULL;
    if (!px)
        return NULL;
    for (int y = 0; y < BIG; y++)
        for (int x = 0; x < BIG; x++)
            px[(size_t)y * BIG + x] = px7[(y * 84 / BIG) * 84 + x * 84 / BIG];
    int err = nc_encode_png(px, BIG, BIG, &png, len);
    free(px);
    return err ? NULL : png;
}

int post_head(char *buf, size_t cap, const char *path, const char *ctype, size_t len)
{
    int n = snprintf(buf, cap, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\n"
                     "Content-Length: %zu\r\n\r\n", path, ctype, len);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

int send_slowly(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    for (size_t i = 0; i < len; i++) {
        if (nc_send_all(fd, p + i, 1))
            return -1;
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
    return 0;
}

int closed_without_answer(int fd)
{
    char buf[256];
    struct pollfd p = { fd, POLLIN, 0 };
    if (poll(&p, 1, 30000) != 1)
        return 0;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
}

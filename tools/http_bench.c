/* tools/http_bench.c — neocog-http-bench: load on neocogd's HTTP API, to set
 * beside `neocog bench` (the socket protocol) at the same settings.
 *
 *   neocog-http-bench --port 5518 --idx FILE [--concurrency C] [--duration S]
 *                     [--batch-images N] [--model M] [--host 127.0.0.1]
 *
 * C threads each hold one keep-alive connection and send POST /v1/recognize
 * closed-loop: one PGM body for one digit a request, or multipart/form-data
 * with N PGM parts.  Every answer's labels are checked against the IDX
 * labels, so a fast wrong answer does not count.  One table row on stdout:
 * requests/s, digits/s, request latency p50/p90/p99 (client side, from the
 * first byte written to the last byte read), and the answers counted right,
 * rejected (label -1) and wrong against the labels, and failed requests.
 *
 * Why a program of its own: the point is what HTTP costs over the socket
 * protocol, so the load generator must add as little as the C client does —
 * blocking sockets, one thread a connection, no HTTP library.  It parses
 * only what neocogd sends (Content-Length framing, "label": members). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dataset.h"
#include "fileio.h"
#include "image.h"
#include "pgm.h"
#include "opts.h"

#define BOUNDARY "ncbench7d1f0e"
#define MAX_BATCH 1024
#define MAX_REPLY (64u << 20)

typedef struct bench_cfg {
    const char *host, *model;
    int port;
    uint32_t concurrency, batch;
    double duration_s;
    const nc_dataset *data;
    uint8_t **pgm;                  /* each digit encoded once (tools/pgm.h) */
    size_t *pgm_len;
} bench_cfg;

typedef struct worker {
    const bench_cfg *cfg;
    pthread_t thread;
    uint32_t first;                 /* this worker's first digit */
    uint64_t requests, digits, right, rejected, wrong, failed;
    double *lat_us;                 /* one per request */
    size_t n_lat, cap_lat;
    char err[160];
} worker;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int connect_to(const bench_cfg *c)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)c->port) };
    if (inet_pton(AF_INET, c->host, &a.sin_addr) != 1)
        return -EINVAL;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Append digit i's PGM, encoded at start. */
static size_t put_pgm(char *dst, const bench_cfg *c, uint32_t i)
{
    memcpy(dst, c->pgm[i], c->pgm_len[i]);
    return c->pgm_len[i];
}

/* Every digit of d as a binary PGM, once, so requests only copy bytes. */
static int encode_all(const nc_dataset *d, bench_cfg *c)
{
    c->pgm = calloc(d->count, sizeof *c->pgm);
    c->pgm_len = calloc(d->count, sizeof *c->pgm_len);
    if (!c->pgm || !c->pgm_len)
        return -ENOMEM;
    for (uint32_t i = 0; i < d->count; i++) {
        nc_image img;
        int err = nc_image_view(d->pixels + (size_t)i * d->rows * d->cols, d->cols, d->rows,
                                d->cols, &img);
        if (!err)
            err = nc_pgm_encode(&img, &c->pgm[i], &c->pgm_len[i]);
        if (err)
            return err;
    }
    return 0;
}

/* The request for digits first .. first + n - 1 (mod the set) into buf;
 * returns its length. */
static size_t build_request(const bench_cfg *c, uint32_t first, char *buf, char *body)
{
    const nc_dataset *d = c->data;
    size_t blen = 0;
    const char *ctype;
    if (c->batch == 1) {
        blen = put_pgm(body, c, first % d->count);
        ctype = "image/x-portable-graymap";
    } else {
        for (uint32_t k = 0; k < c->batch; k++) {
            blen += (size_t)sprintf(body + blen,
                                    "--" BOUNDARY "\r\nContent-Disposition: form-data; "
                                    "name=\"image\"; filename=\"d%u.pgm\"\r\n"
                                    "Content-Type: image/x-portable-graymap\r\n\r\n", k);
            blen += put_pgm(body + blen, c, (first + k) % d->count);
            memcpy(body + blen, "\r\n", 2);
            blen += 2;
        }
        blen += (size_t)sprintf(body + blen, "--" BOUNDARY "--\r\n");
        ctype = "multipart/form-data; boundary=" BOUNDARY;
    }
    size_t h = (size_t)sprintf(buf,
                               "POST /v1/recognize?model=%s HTTP/1.1\r\nHost: %s:%d\r\n"
                               "Content-Type: %s\r\nContent-Length: %zu\r\n\r\n",
                               c->model, c->host, c->port, ctype, blen);
    memcpy(buf + h, body, blen);
    return h + blen;
}

/* Read one HTTP response: status, and the body (Content-Length framed) into
 * *body (grown as needed).  Returns the status code or -1. */
static int read_response(int fd, char **rbuf, size_t *rcap, size_t *have, char **body,
                         size_t *body_len)
{
    size_t hdr_end = 0;
    for (;;) {
        char *e = *have >= 4 ? memmem(*rbuf, *have, "\r\n\r\n", 4) : NULL;
        if (e) {
            hdr_end = (size_t)(e - *rbuf) + 4;
            break;
        }
        if (*have == *rcap)
            return -1;      /* headers larger than the buffer */
        ssize_t r = recv(fd, *rbuf + *have, *rcap - *have, 0);
        if (r <= 0)
            return -1;
        *have += (size_t)r;
    }
    int status = 0;
    if (sscanf(*rbuf, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    size_t clen = 0;
    for (char *p = *rbuf; p < *rbuf + hdr_end; p++)
        if ((*p == '\n') && !strncasecmp(p + 1, "Content-Length:", 15)) {
            clen = strtoull(p + 16, NULL, 10);
            break;
        }
    if (clen > MAX_REPLY)
        return -1;
    size_t need = hdr_end + clen;
    if (need + 1 > *rcap) {
        char *n = realloc(*rbuf, need + 1);
        if (!n)
            return -1;
        *rbuf = n;
        *rcap = need + 1;
    }
    while (*have < need) {
        ssize_t r = recv(fd, *rbuf + *have, *rcap - *have, 0);
        if (r <= 0)
            return -1;
        *have += (size_t)r;
    }
    *body = *rbuf + hdr_end;
    *body_len = clen;
    return status;
}

/* Count the answers in body against the labels of digits first.. : each
 * image's object carries one top-level "label" before its "top" list, so
 * the k-th "label": that follows a "file"/"model" member is image k's.  The
 * first "label" of each image object is found after each "model" member. */
static void judge(worker *w, const char *body, size_t len, uint32_t first)
{
    const nc_dataset *d = w->cfg->data;
    const char *p = body, *end = body + len;
    for (uint32_t k = 0; k < w->cfg->batch; k++) {
        const char *m = memmem(p, (size_t)(end - p), "\"model\":", 8);
        const char *l = m ? memmem(m, (size_t)(end - m), "\"label\":", 8) : NULL;
        if (!l) {
            w->wrong += w->cfg->batch - k;
            return;
        }
        long label = strtol(l + 8, NULL, 10);
        if (label < 0)
            w->rejected++;
        else if (label == d->labels[(first + k) % d->count])
            w->right++;
        else
            w->wrong++;
        p = l + 8;
    }
}

static void *run_worker(void *arg)
{
    worker *w = arg;
    const bench_cfg *c = w->cfg;
    size_t cap = (size_t)c->batch * ((size_t)c->data->rows * c->data->cols + 256) + 512;
    char *req = malloc(cap), *body = malloc(cap);
    size_t rcap = 1 << 16, have = 0;
    char *rbuf = malloc(rcap);
    int fd = connect_to(c);
    if (!req || !body || !rbuf || fd < 0) {
        snprintf(w->err, sizeof w->err, "connect %s:%d: %s", c->host, c->port,
                 fd < 0 ? strerror(-fd) : "out of memory");
        goto out;
    }
    const double stop = now_s() + c->duration_s;
    uint32_t next = w->first;
    while (now_s() < stop) {
        size_t n = build_request(c, next, req, body);
        double t0 = now_s();
        have = 0;
        char *rb;
        size_t rlen;
        int st = write_all(fd, req, n) ? -1 : read_response(fd, &rbuf, &rcap, &have, &rb, &rlen);
        double t1 = now_s();
        if (st < 0) {
            snprintf(w->err, sizeof w->err, "connection lost after %llu requests",
                     (unsigned long long)w->requests);
            w->failed++;
            break;
        }
        w->requests++;
        if (st != 200) {
            w->failed++;
        } else {
            w->digits += c->batch;
            judge(w, rb, rlen, next);
        }
        if (w->n_lat == w->cap_lat) {
            size_t nc = w->cap_lat ? 2 * w->cap_lat : 4096;
            double *nl = realloc(w->lat_us, nc * sizeof *nl);
            if (!nl)
                break;
            w->lat_us = nl;
            w->cap_lat = nc;
        }
        w->lat_us[w->n_lat++] = (t1 - t0) * 1e6;
        next += c->batch;
    }
out:
    if (fd >= 0)
        close(fd);
    free(req);
    free(body);
    free(rbuf);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { O_IDX, O_LABELS, O_HOST, O_PORT, O_MODEL, O_CONCURRENCY, O_DURATION, O_BATCH, O_END };

static const nc_opt opt_table[] = {
    [O_IDX] = { "idx", "IMAGES", "an IDX file of images, gzip or plain (required)" },
    [O_LABELS] = { "labels", "LABELS", "its labels (default: the name with images-idx3\n"
                                       "replaced by labels-idx1)" },
    [O_HOST] = { "host", "ADDR", "the daemon's HTTP address (default 127.0.0.1)" },
    [O_PORT] = { "port", "P", "its port (default 5518)" },
    [O_MODEL] = { "model", "M", "the model asked for (default cnn)" },
    [O_CONCURRENCY] = { "concurrency", "C", "connections, one request in flight each\n"
                                            "(1..1024, default 1)" },
    [O_DURATION] = { "duration", "S", "seconds of load (default 5)" },
    [O_BATCH] = { "batch-images", "N", "images a request (default 1; N > 1: multipart)" },
    [O_END] = { NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
    bench_cfg c = { .host = "127.0.0.1", .model = "cnn", .port = 5518, .concurrency = 1,
                    .batch = 1, .duration_s = 5.0 };
    const char *idx = NULL, *labels = NULL;
    nc_opts p = {
        .prog = "neocog-http-bench",
        .usage = "usage: neocog-http-bench --idx IMAGES [OPTIONS]\n"
                 "Closed-loop POST /v1/recognize on keep-alive connections; one table row on\n"
                 "stdout.\n",
        .table = opt_table,
    };
    for (int o; (o = nc_opts_next(&p, argc, argv)) != NC_OPTS_END;) {
        switch (o) {
        case NC_OPTS_HELP: nc_opts_usage(&p, stdout); return 0;
        case NC_OPTS_ERROR: return nc_opts_fail(&p);
        case O_IDX: idx = p.value; break;
        case O_LABELS: labels = p.value; break;
        case O_HOST: c.host = p.value; break;
        case O_PORT: c.port = atoi(p.value); break;
        case O_MODEL: c.model = p.value; break;
        case O_CONCURRENCY: c.concurrency = (uint32_t)strtoul(p.value, NULL, 10); break;
        case O_DURATION: c.duration_s = strtod(p.value, NULL); break;
        case O_BATCH: c.batch = (uint32_t)strtoul(p.value, NULL, 10); break;
        }
    }
    if (p.next != argc)
        nc_opts_error(&p, "unexpected argument '%s'", argv[p.next]);
    else if (!idx)
        nc_opts_error(&p, "--idx is required");
    else if (c.port <= 0 || c.port > 65535 || c.concurrency < 1 || c.concurrency > 1024 ||
             c.batch < 1 || c.batch > MAX_BATCH || !(c.duration_s > 0))
        nc_opts_error(&p, "--port, --concurrency, --batch-images or --duration out of range");
    if (p.why[0])
        return nc_opts_fail(&p);
    char lab[4096];
    if (!labels) {
        const char *s = strstr(idx, "images-idx3");
        if (!s || strlen(idx) >= sizeof lab) {
            fprintf(stderr, "neocog-http-bench: name the labels with --labels\n");
            return 2;
        }
        snprintf(lab, sizeof lab, "%.*slabels-idx1%s", (int)(s - idx), idx, s + 11);
        labels = lab;
    }
    nc_dataset d = { 0 };
    int err = nc_file_read_idx(idx, labels, (size_t)1 << 30, &d);
    if (err || !d.count || !d.labels) {
        fprintf(stderr, "neocog-http-bench: %s: %s\n", idx, err ? strerror(-err) : "no images");
        return 1;
    }
    c.data = &d;
    if ((err = encode_all(&d, &c))) {
        fprintf(stderr, "neocog-http-bench: encoding the digits: %s\n", strerror(-err));
        return 1;
    }
    worker *w = calloc(c.concurrency, sizeof *w);
    if (!w)
        return 1;
    double t0 = now_s();
    uint32_t started = 0;
    for (; started < c.concurrency; started++) {
        w[started].cfg = &c;
        w[started].first = (uint32_t)(((uint64_t)started * d.count) / c.concurrency);
        if (pthread_create(&w[started].thread, NULL, run_worker, &w[started]))
            break;
    }
    uint64_t req = 0, dig = 0, right = 0, rejected = 0, wrong = 0, failed = 0;
    size_t n_lat = 0;
    for (uint32_t i = 0; i < started; i++) {
        pthread_join(w[i].thread, NULL);
        req += w[i].requests;
        dig += w[i].digits;
        right += w[i].right;
        rejected += w[i].rejected;
        wrong += w[i].wrong;
        failed += w[i].failed;
        n_lat += w[i].n_lat;
        if (w[i].err[0])
            fprintf(stderr, "neocog-http-bench: connection %u: %s\n", i, w[i].err);
    }
    double wall = now_s() - t0;
    double *lat = malloc((n_lat ? n_lat : 1) * sizeof *lat);
    size_t k = 0;
    for (uint32_t i = 0; i < started && lat; i++) {
        if (w[i].n_lat)
            memcpy(lat + k, w[i].lat_us, w[i].n_lat * sizeof *lat);
        k += w[i].n_lat;
        free(w[i].lat_us);
    }
    if (lat && n_lat)
        qsort(lat, n_lat, sizeof *lat, cmp_double);
#define PCT(q) (lat && n_lat ? lat[(size_t)((q) * (double)(n_lat - 1))] : 0.0)
    printf("| transport | model | concurrency | images/request | requests/s | digits/s | "
           "p50 µs | p90 µs | p99 µs | right | rejected | wrong | failed |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    printf("| HTTP /v1 | %s | %u | %u | %.1f | %.0f | %.1f | %.1f | %.1f | %llu | %llu | %llu | %llu |\n",
           c.model, c.concurrency, c.batch, (double)req / wall, (double)dig / wall, PCT(0.50),
           PCT(0.90), PCT(0.99), (unsigned long long)right, (unsigned long long)rejected,
           (unsigned long long)wrong,
           (unsigned long long)failed);
    free(lat);
    free(w);
    for (uint32_t i = 0; i < d.count; i++)
        free(c.pgm[i]);
    free(c.pgm);
    free(c.pgm_len);
    nc_dataset_fini(&d);
    return failed || started < c.concurrency ? 1 : 0;
}

/* daemon/metrics.c — see metrics.h. */
#include "metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "message.h"

/* 25 us .. 1 s: an idle single digit is ~100 us, a full batch a few ms, a
 * saturated queue tens of ms. */
const uint64_t nc_metrics_bounds_us[NC_METRICS_BUCKETS] = {
    25, 50, 100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200,
    102400, 204800, 409600, 1000000,
};

void nc_histogram_add(nc_histogram *h, uint64_t us)
{
    int i = 0;
    while (i < NC_METRICS_BUCKETS && us > nc_metrics_bounds_us[i])
        i++;
    h->bucket[i]++;
    h->count++;
    h->sum_us += us;
}

void nc_metrics_count_reply(nc_metrics *m, int code)
{
    if (code < 0 || code >= NC_METRICS_CODES)
        code = 2;   /* UNKNOWN */
    m->requests[code]++;
}

typedef struct strbuf {
    char *buf;
    size_t len, cap;
    int err;
} strbuf;

static void put(strbuf *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(strbuf *s, const char *fmt, ...)
{
    if (s->err)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(s->buf + s->len, s->cap - s->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            s->err = -EINVAL;
            return;
        }
        if ((size_t)n < s->cap - s->len) {
            s->len += (size_t)n;
            return;
        }
        size_t cap = s->cap * 2 + (size_t)n;
        char *p = realloc(s->buf, cap);
        if (!p) {
            s->err = -ENOMEM;
            return;
        }
        s->buf = p;
        s->cap = cap;
    }
}

static void histogram(strbuf *s, const char *name, const char *help, const nc_histogram *h)
{
    put(s, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < NC_METRICS_BUCKETS; i++) {
        cum += h->bucket[i];
        put(s, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name,
            (double)nc_metrics_bounds_us[i] / 1e6, cum);
    }
    cum += h->bucket[NC_METRICS_BUCKETS];
    put(s, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, cum);
    put(s, "%s_sum %.6f\n%s_count %" PRIu64 "\n", name, (double)h->sum_us / 1e6, name,
        h->count);
}

int nc_metrics_render(const nc_metrics *m, const nc_metrics_gauges *g, char **ret_text,
                      size_t *ret_len)
{
    strbuf s = { .buf = malloc(8192), .cap = 8192 };
    if (!s.buf)
        return -ENOMEM;
    s.buf[0] = '\0';
    put(&s, "# HELP neocogd_requests_total Replies sent, by status code.\n"
            "# TYPE neocogd_requests_total counter\n");
    for (int c = 0; c < NC_METRICS_CODES; c++)
        put(&s, "neocogd_requests_total{code=\"%s\"} %" PRIu64 "\n", nc_msg_code_name(c),
            m->requests[c]);
    put(&s, "# HELP neocogd_images_total Images answered.\n"
            "# TYPE neocogd_images_total counter\nneocogd_images_total %" PRIu64 "\n",
        m->images);
    put(&s, "# HELP neocogd_batches_total Forward batches run.\n"
            "# TYPE neocogd_batches_total counter\nneocogd_batches_total %" PRIu64 "\n",
        g->batches);
    put(&s, "# HELP neocogd_batch_images_total Images in those batches (mean batch size = "
            "this / batches).\n# TYPE neocogd_batch_images_total counter\n"
            "neocogd_batch_images_total %" PRIu64 "\n", g->batch_images);
    put(&s, "# HELP neocogd_frame_errors_total Connections closed for a framing error.\n"
            "# TYPE neocogd_frame_errors_total counter\nneocogd_frame_errors_total %" PRIu64
            "\n", m->frame_errors);
    put(&s, "# HELP neocogd_connections_total Connections accepted.\n"
            "# TYPE neocogd_connections_total counter\nneocogd_connections_total %" PRIu64
            "\n", m->connections_total);
    put(&s, "# HELP neocogd_accept_pauses_total Times accepting stopped for 100 ms because "
            "the process was out of file descriptors.\n"
            "# TYPE neocogd_accept_pauses_total counter\nneocogd_accept_pauses_total %" PRIu64
            "\n", m->accept_pauses);
    put(&s, "# HELP neocogd_reloads_total Model reloads, by outcome.\n"
            "# TYPE neocogd_reloads_total counter\n"
            "neocogd_reloads_total{outcome=\"ok\"} %" PRIu64 "\n"
            "neocogd_reloads_total{outcome=\"failed\"} %" PRIu64 "\n",
        m->reloads_ok, m->reloads_failed);
    put(&s, "# HELP neocogd_connections Open connections.\n# TYPE neocogd_connections gauge\n"
            "neocogd_connections %" PRIu32 "\n", g->connections);
    put(&s, "# HELP neocogd_queue_depth Images waiting for a worker.\n"
            "# TYPE neocogd_queue_depth gauge\nneocogd_queue_depth %" PRIu32 "\n",
        g->queue_depth);
    put(&s, "# HELP neocogd_queue_capacity Images the queue holds at most.\n"
            "# TYPE neocogd_queue_capacity gauge\nneocogd_queue_capacity %" PRIu32 "\n",
        g->queue_capacity);
    put(&s, "# HELP neocogd_queue_bytes Request bytes held.\n"
            "# TYPE neocogd_queue_bytes gauge\nneocogd_queue_bytes %" PRIu64 "\n",
        g->queue_bytes);
    put(&s, "# HELP neocogd_workers Worker threads of each model's queue (cnn, neocognitron "
            "and ensemble have this many each).\n# TYPE neocogd_workers gauge\n"
            "neocogd_workers %" PRIu32 "\n", g->workers);
    put(&s, "# HELP neocogd_priority_workers Worker threads of each model's queue for its "
            "high-priority requests only.\n"
            "# TYPE neocogd_priority_workers gauge\nneocogd_priority_workers %" PRIu32 "\n",
        g->priority_workers);
    put(&s, "# HELP neocogd_ready 1 when models are loaded and the server is not draining.\n"
            "# TYPE neocogd_ready gauge\nneocogd_ready %d\n", g->ready && !g->draining);
    put(&s, "# HELP neocogd_model_loaded 1 per loaded model.\n"
            "# TYPE neocogd_model_loaded gauge\n"
            "neocogd_model_loaded{model=\"cnn\"} %d\n"
            "neocogd_model_loaded{model=\"neocognitron\"} %d\n"
            "neocogd_model_loaded{model=\"chars\"} %d\n",
        g->model_loaded[0], g->model_loaded[1], g->model_loaded[2]);
    put(&s, "# HELP neocogd_device_memory_bytes Device (GPU) memory held by the models.\n"
            "# TYPE neocogd_device_memory_bytes gauge\nneocogd_device_memory_bytes %" PRIu64
            "\n", g->device_bytes);
    if (g->n_engines) {
        put(&s, "# HELP neocogd_engine_batches_total Forward batches run, by model and engine.\n"
                "# TYPE neocogd_engine_batches_total counter\n");
        for (uint32_t e = 0; e < g->n_engines; e++)
            put(&s, "neocogd_engine_batches_total{model=\"%s\",engine=\"%s\"} %" PRIu64 "\n",
                g->engine[e].model, g->engine[e].engine, g->engine[e].batches);
        put(&s, "# HELP neocogd_engine_images_total Network inputs run, by model and engine.\n"
                "# TYPE neocogd_engine_images_total counter\n");
        for (uint32_t e = 0; e < g->n_engines; e++)
            put(&s, "neocogd_engine_images_total{model=\"%s\",engine=\"%s\"} %" PRIu64 "\n",
                g->engine[e].model, g->engine[e].engine, g->engine[e].images);
        put(&s, "# HELP neocogd_engine_up 1 per engine in use, 0 once it failed.\n"
                "# TYPE neocogd_engine_up gauge\n");
        for (uint32_t e = 0; e < g->n_engines; e++)
            put(&s, "neocogd_engine_up{model=\"%s\",engine=\"%s\"} %d\n",
                g->engine[e].model, g->engine[e].engine, g->engine[e].up);
    }
    put(&s, "# HELP neocogd_uptime_seconds Seconds since start.\n"
            "# TYPE neocogd_uptime_seconds gauge\nneocogd_uptime_seconds %" PRIu64 "\n",
        g->uptime_s);
    histogram(&s, "neocogd_queue_seconds", "Time from receipt to a worker taking the batch.",
              &m->queue);
    histogram(&s, "neocogd_compute_seconds", "Decode, preprocessing and forward time of "
              "the batch.", &m->compute);
    histogram(&s, "neocogd_request_seconds", "Time from receipt to the reply being queued.",
              &m->total);
    if (s.err) {
        free(s.buf);
        return s.err;
    }
    *ret_text = s.buf;
    *ret_len = s.len;
    return 0;
}

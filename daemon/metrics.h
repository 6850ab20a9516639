/* daemon/metrics.h — counters and latency histograms, and their Prometheus
 * text rendering.
 *
 * Layer: daemon.  Updated on the event thread only (every reply is built
 * there), so plain integers suffice; the worker-side counters live in the
 * batcher as atomics and are read when rendering. */
#ifndef NC_METRICS_H
#define NC_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define NC_METRICS_CODES 17     /* gRPC codes 0..16 */
#define NC_METRICS_BUCKETS 16

typedef struct nc_histogram {
    uint64_t bucket[NC_METRICS_BUCKETS + 1];    /* last: +Inf */
    uint64_t count;
    uint64_t sum_us;
} nc_histogram;

typedef struct nc_metrics {
    uint64_t requests[NC_METRICS_CODES];    /* replies sent, by code */
    uint64_t images;                        /* images answered */
    uint64_t frame_errors;                  /* connections closed for bad framing */
    uint64_t connections_total;
    uint64_t accept_pauses;                 /* accept paused: out of descriptors */
    uint64_t reloads_ok, reloads_failed;
    nc_histogram queue, compute, total;     /* microseconds */
} nc_metrics;

/* Bucket upper bounds in microseconds (the same for every histogram). */
extern const uint64_t nc_metrics_bounds_us[NC_METRICS_BUCKETS];

void nc_histogram_add(nc_histogram *h, uint64_t us);
void nc_metrics_count_reply(nc_metrics *m, int code);

/* Work done by one engine of one model (a GPU lane or the CPU). */
typedef struct nc_metrics_engine {
    const char *model;          /* "cnn", "neocognitron" */
    char engine[32];            /* "cuda:0", "cpu" */
    int up;                     /* 0: failed, no longer used */
    uint64_t batches, images;
} nc_metrics_engine;
#define NC_METRICS_ENGINES 40

/* Gauges and worker counters sampled at render time. */
typedef struct nc_metrics_gauges {
    uint32_t queue_depth, queue_capacity;
    uint64_t queue_bytes;
    uint32_t connections;
    uint32_t workers, priority_workers;
    uint64_t batches, batch_images;
    int ready, draining;
    int model_loaded[3];        /* cnn, neocognitron, chars (models.h's slots) */
    uint64_t device_bytes;
    uint64_t uptime_s;
    uint32_t n_engines;
    nc_metrics_engine engine[NC_METRICS_ENGINES];
} nc_metrics_gauges;

/* Render everything as Prometheus text format 0.0.4 into a malloc'd
 * string. */
int nc_metrics_render(const nc_metrics *m, const nc_metrics_gauges *g, char **ret_text,
                      size_t *ret_len);

#endif

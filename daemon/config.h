/* daemon/config.h — neocogd settings: defaults, `key = value` files, flags.
 *
 * Layer: daemon.  One table (config.c) names every key once; the config
 * file and the command line both go through nc_config_set, so a flag
 * --max-batch=32 and a file line `max_batch = 32` mean the same.  Order of
 * precedence: defaults, then the --config file, then the other flags. */
#ifndef NC_CONFIG_H
#define NC_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define NC_CONFIG_PATH_MAX 4096

/* What a request for MODEL_DEFAULT gets.  CNN by default: it is the most
 * accurate shipped model and the cheapest; the ensemble rule is not yet
 * chosen on validation data (issue 6), so it is opt-in.  When the preferred
 * model is not loaded, the request falls back to whichever one is. */
typedef enum nc_default_model {
    NC_DEFAULT_CNN = 0,
    NC_DEFAULT_NEOCOGNITRON = 1,
    NC_DEFAULT_ENSEMBLE = 2,
} nc_default_model;

typedef struct nc_config {
    char listen_tcp[256];       /* host:port, [v6]:port, or "none" */
    char listen_unix[NC_CONFIG_PATH_MAX];   /* path or "none" */
    uint32_t unix_mode;         /* permission bits of the socket file */
    char http[256];             /* HTTP API and metrics host:port, or "none" */
    char http_cors_origin[256]; /* Access-Control-Allow-Origin of the HTTP
                                   API; "" (default): no CORS headers */
    char models[NC_CONFIG_PATH_MAX];        /* folder scanned for *.ncm */
    char cnn_model[NC_CONFIG_PATH_MAX];     /* explicit file, overrides scan */
    char neocog_model[NC_CONFIG_PATH_MAX];
    char chars_model[NC_CONFIG_PATH_MAX];   /* the character model (charset alnum, all) */
    uint32_t workers;           /* 0: one per online CPU */
    uint32_t priority_workers;  /* beside them, only for high-priority work */
    uint32_t max_batch;         /* images per forward pass */
    uint32_t gpus;              /* GPUs used at most (first N visible); 0: CPU only */
    uint32_t cnn_gpu_lanes;     /* engines per GPU of the CNN: batches in flight */
    uint32_t neocog_gpu_lanes;  /* the same for the neocognitron */
    uint64_t max_queue_delay_us;/* longest a batch waits to fill; 0: never */
    uint64_t worker_spin_us;    /* a worker's polling for more after a batch */
    uint32_t queue_capacity;    /* images queued at most */
    uint64_t queue_max_bytes;   /* request bytes queued at most */
    uint32_t max_inflight_per_conn;         /* requests; then stop reading */
    uint32_t max_connections;
    uint32_t max_frame_bytes;
    uint32_t max_images_per_request;
    uint32_t max_image_dim;     /* width or height */
    uint64_t max_image_pixels;  /* width * height */
    uint64_t default_deadline_us;           /* 0: none */
    uint32_t frame_timeout_ms;  /* a started frame must complete within */
    uint32_t write_timeout_ms;  /* replies unread this long: disconnect; 0 never */
    uint32_t drain_timeout_s;   /* SIGTERM: force exit after */
    uint32_t drain_grace_ms;    /* SIGTERM: serve on, not ready, this long first */
    double reject_threshold;    /* confidence below it: reject */
    uint32_t default_model;     /* nc_default_model: what MODEL_DEFAULT asks for */
    uint32_t log_level;         /* syslog priority, 0..7 */
} nc_config;

/* Fill with the defaults (documented in nc_config_usage). */
void nc_config_defaults(nc_config *c);

/* Set one key (underscores or dashes) to a textual value.  -ENOENT unknown
 * key, -EINVAL bad value; why gets a sentence either way. */
int nc_config_set(nc_config *c, const char *key, const char *value,
                  char *why, size_t why_len);

/* Read a file of `key = value` lines; '#' starts a comment, blank lines are
 * fine.  Errors name the line. */
int nc_config_load_file(nc_config *c, const char *path, char *why, size_t why_len);

/* Apply argv: --config FILE first (wherever it is), then every
 * --key=value / --key value in order.  Returns 0, 1 when --help or
 * --version was handled (print and exit 0), or a negative error: -ENOENT
 * for an unknown option (why: "unknown option --bogus", judged before a
 * value is looked for), -EINVAL for a missing or bad value. */
int nc_config_parse_args(nc_config *c, int argc, char **argv,
                         char *why, size_t why_len);

/* Settings that contradict each other (nc_config_parse_args ends with
 * this): -EINVAL, naming both, when a request within max_images_per_request
 * or max_frame_bytes could never fit queue_capacity or queue_max_bytes. */
int nc_config_check(const nc_config *c, char *why, size_t why_len);

void nc_config_usage(FILE *to);

/* Every key = value, for the startup log and `--print-config`. */
void nc_config_print(const nc_config *c, FILE *to);

#endif

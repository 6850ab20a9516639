/* daemon/config.c — see config.h. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "nc_config.h"
#include "nc_daemon_paths.h"

typedef enum { T_STR, T_U32, T_U64, T_MODE, T_DOUBLE, T_CHOICE } key_type;

/* Values of the one T_CHOICE key, default_model, in nc_default_model order. */
static const char *const choice_names[] = { "cnn", "neocognitron", "ensemble" };

typedef struct key_def {
    const char *name;
    key_type type;
    size_t offset, size;        /* size: string capacity */
    uint64_t min, max;          /* integers */
    const char *help;
} key_def;

#define STR(f, h) { #f, T_STR, offsetof(nc_config, f), sizeof(((nc_config *)0)->f), 0, 0, h }
#define U32(f, lo, hi, h) { #f, T_U32, offsetof(nc_config, f), 0, lo, hi, h }
#define U64(f, lo, hi, h) { #f, T_U64, offsetof(nc_config, f), 0, lo, hi, h }

static const key_def keys[] = {
    STR(listen_tcp, "TCP address host:port, or none (default 127.0.0.1:5517)"),
    STR(listen_unix, "Unix socket path, or none (default $RUNTIME_DIRECTORY/neocogd.sock, "
                     "else /run/neocogd/neocogd.sock as root, else $XDG_RUNTIME_DIR/neocogd.sock)"),
    { "unix_mode", T_MODE, offsetof(nc_config, unix_mode), 0, 0, 0777,
      "permissions of the Unix socket, octal (default 0660)" },
    STR(http, "HTTP address host:port of the recognition API (/v1, /v2), metrics and health, "
              "or none (default 127.0.0.1:5518)"),
    STR(http_cors_origin, "origin the HTTP API allows in browsers (Access-Control-Allow-Origin, "
                          "e.g. https://example.org or *), answering OPTIONS preflights; "
                          "empty (default): no CORS"),
    STR(models, "folder of *.ncm model files (default: the installed data folder, or the "
                "source tree's models/ when run from the build tree)"),
    STR(cnn_model, "CNN model file (overrides the folder)"),
    STR(neocog_model, "neocognitron model file (overrides the folder)"),
    STR(chars_model, "character model file, answering a request's charset alnum or all "
                     "(overrides the folder's first model of more than 10 classes, e.g. "
                     "cnn-printable94.ncm)"),
    U32(workers, 0, 1024, "worker threads of each model's queue (CNN, neocognitron, ensemble); "
                          "0 = one per CPU (default 0)"),
    U32(priority_workers, 0, 64, "more worker threads of each model's queue that take only its "
                                 "high-priority requests (camera frames), so those never wait "
                                 "for a bulk batch to finish (default 1)"),
    U32(max_batch, 1, 65536, "images per forward pass; the GPU engines are made for that many "
                             "(times a model's views, at most 1024 images) (default 64)"),
    U32(gpus, 0, 1024, "GPUs to run the models on, the first N visible ones (CUDA_VISIBLE_DEVICES "
                       "applies); 0 = the CPU only (default 1024: every GPU)"),
    U32(cnn_gpu_lanes, 1, 8, "engines of the CNN per GPU, each with its own stream and "
                             "device memory (about 0.5 GB a column made for 1024 images), so "
                             "that one batch's copies and host work overlap another's "
                             "kernels (default 2)"),
    U32(neocog_gpu_lanes, 1, 8, "the same for the neocognitron (about 11.6 GB an engine made "
                                "for 1024 images of the shipped committee, which keeps a GPU busy alone; "
                                "default 1)"),
    U64(max_queue_delay_us, 0, 10000000, "longest a batch waits to fill, us; 0 = take what is "
                                         "queued (default 0)"),
    U64(worker_spin_us, 0, 100000, "how long a worker that has just run a batch polls for the "
                                   "next request before it sleeps, us, yielding its core to "
                                   "any other thread; 0 = sleep at once (default 200)"),
    U32(queue_capacity, 1, 10000000, "images queued at most, no fewer than "
                                     "max_images_per_request; beyond: RESOURCE_EXHAUSTED "
                                     "(default 4096)"),
    U64(queue_max_bytes, 1024, UINT64_C(1) << 40, "request bytes held at most (default 256 MiB)"),
    U32(max_inflight_per_conn, 1, 1000000, "requests in flight per connection before it is no "
                                           "longer read (default 128)"),
    U32(max_connections, 1, 1000000, "connections at most (default 1024)"),
    U32(max_frame_bytes, 64, NC_FRAME_MAX_LIMIT, "largest frame (default 4194304)"),
    U32(max_images_per_request, 1, 65536, "images in one request at most (default 256)"),
    U32(max_image_dim, 1, 16384, "largest image width or height (default 4096)"),
    U64(max_image_pixels, 1, UINT64_C(1) << 28, "largest width x height (default 16777216)"),
    U64(default_deadline_us, 0, UINT64_C(3600000000), "deadline of requests without one, us; "
                                                      "0 = none (default 0)"),
    U32(frame_timeout_ms, 1, 3600000, "a frame once started must arrive within, ms "
                                      "(default 10000)"),
    U32(write_timeout_ms, 0, 3600000, "a client that takes none of its pending replies for "
                                      "this long is disconnected, ms; 0 = never (default 30000)"),
    U32(drain_timeout_s, 0, 86400, "SIGTERM: give in-flight work this long (default 30)"),
    U32(drain_grace_ms, 0, 600000, "SIGTERM: before draining, keep serving this long with "
                                   "/readyz answering 503, so a load balancer's health check "
                                   "stops sending new connections first, ms (default 0)"),
    { "reject_threshold", T_DOUBLE, offsetof(nc_config, reject_threshold), 0, 0, 0,
      "confidence below which an answer is a reject, 0..1; 0 (default): the "
      "threshold the model file stores (fitted on validation digits), none if it has none" },
    { "default_model", T_CHOICE, offsetof(nc_config, default_model), 0, 0, 0,
      "model for requests that name none: cnn, neocognitron or ensemble; falls back to "
      "the loaded one (default cnn)" },
    U32(log_level, 0, 7, "syslog priority of the chattiest line logged (default 6, info)"),
};

static void say(char *why, size_t n, const char *fmt, const char *a, const char *b)
{
    if (why && n)
        snprintf(why, n, fmt, a, b);
}

static void default_unix_path(char *dst, size_t cap)
{
    const char *rt = getenv("RUNTIME_DIRECTORY");   /* systemd's RuntimeDirectory= */
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (rt && *rt && !strchr(rt, ':'))
        snprintf(dst, cap, "%s/neocogd.sock", rt);
    else if (geteuid() == 0)
        snprintf(dst, cap, "%s", NC_DEFAULT_UNIX_PATH);
    else if (xdg && *xdg)
        snprintf(dst, cap, "%s/neocogd.sock", xdg);
    else
        snprintf(dst, cap, "none");
}

/* Models: the installed data folder, unless this binary runs from the build
 * tree, where the source tree's models/ is the one that matches it. */
static void default_models(char *dst, size_t cap)
{
    char exe[NC_CONFIG_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    size_t root_len = strlen(NC_BUILD_ROOT);
    if (n > 0) {
        exe[n] = '\0';
        if (strncmp(exe, NC_BUILD_ROOT, root_len) == 0 && exe[root_len] == '/') {
            snprintf(dst, cap, "%s/models", NC_SOURCE_ROOT);
            return;
        }
    }
    snprintf(dst, cap, "%s", NC_MODELS_DIR);
}

void nc_config_defaults(nc_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->listen_tcp, sizeof c->listen_tcp, "%s:%d", NC_DEFAULT_TCP_HOST,
             NC_DEFAULT_TCP_PORT);
    default_unix_path(c->listen_unix, sizeof c->listen_unix);
    c->unix_mode = 0660;
    snprintf(c->http, sizeof c->http, "%s:%d", NC_DEFAULT_TCP_HOST, NC_DEFAULT_HTTP_PORT);
    default_models(c->models, sizeof c->models);
    c->workers = 0;
    c->priority_workers = 1;
    c->max_batch = 64;
    c->gpus = 1024;
    c->cnn_gpu_lanes = 2;       /* +13-61 % digits/s on an H100: docs/benchmarks.md */
    c->neocog_gpu_lanes = 1;    /* +5 % for twice the memory */
    c->max_queue_delay_us = 0;
    c->worker_spin_us = 200;    /* a client's next request comes within it */
    c->queue_capacity = 4096;
    c->queue_max_bytes = UINT64_C(256) << 20;
    c->max_inflight_per_conn = 128;
    c->max_connections = 1024;
    c->max_frame_bytes = NC_FRAME_DEFAULT_MAX;
    c->max_images_per_request = 256;
    c->max_image_dim = 4096;
    c->max_image_pixels = UINT64_C(16) << 20;
    c->default_deadline_us = 0;
    c->frame_timeout_ms = 10000;
    c->write_timeout_ms = 30000;
    c->drain_timeout_s = 30;
    c->reject_threshold = 0.0;
    c->default_model = NC_DEFAULT_CNN;
    c->log_level = 6;
}

static const key_def *find_key(const char *key)
{
    char norm[64];
    size_t i = 0;
    for (; key[i] && i + 1 < sizeof norm; i++)
        norm[i] = key[i] == '-' ? '_' : key[i];
    norm[i] = '\0';
    if (key[i])
        return NULL;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (!strcmp(keys[k].name, norm))
            return &keys[k];
    return NULL;
}

int nc_config_set(nc_config *c, const char *key, const char *value,
                  char *why, size_t why_len)
{
    const key_def *d = find_key(key);
    if (!d) {
        say(why, why_len, "unknown setting '%s'%s", key, "");
        return -ENOENT;
    }
    char *field = (char *)c + d->offset;
    if (d->type == T_STR) {
        if (strlen(value) >= d->size) {
            say(why, why_len, "%s: value too long%s", d->name, "");
            return -EINVAL;
        }
        memcpy(field, value, strlen(value) + 1);
        return 0;
    }
    if (d->type == T_CHOICE) {
        for (uint32_t i = 0; i < sizeof choice_names / sizeof choice_names[0]; i++)
            if (!strcmp(value, choice_names[i])) {
                *(uint32_t *)field = i;
                return 0;
            }
        say(why, why_len, "%s: '%s' is not cnn, neocognitron or ensemble", d->name, value);
        return -EINVAL;
    }
    if (d->type == T_DOUBLE) {
        char *end;
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end || !(v >= 0.0 && v <= 1.0)) {
            say(why, why_len, "%s: '%s' is not a number in 0..1", d->name, value);
            return -EINVAL;
        }
        *(double *)field = v;
        return 0;
    }
    /* Integers: no sign, no garbage after, within the key's range. */
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)value[0])) {
        say(why, why_len, "%s: '%s' is not a non-negative integer", d->name, value);
        return -EINVAL;
    }
    unsigned long long v = strtoull(value, &end, d->type == T_MODE ? 8 : 10);
    uint64_t lo = d->min, hi = d->type == T_MODE ? 0777 : d->max;
    if (errno || *end || v < lo || v > hi) {
        char range[64];
        snprintf(range, sizeof range, "%" PRIu64 "..%" PRIu64, lo, hi);
        say(why, why_len, "%s: value out of range %s", d->name, range);
        return -EINVAL;
    }
    if (d->type == T_U64)
        *(uint64_t *)field = v;
    else
        *(uint32_t *)field = (uint32_t)v;
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

int nc_config_load_file(nc_config *c, const char *path, char *why, size_t why_len)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        int err = -errno;
        say(why, why_len, "%s: %s", path, strerror(-err));
        return err;
    }
    char line[NC_CONFIG_PATH_MAX + 128];
    unsigned lineno = 0;
    int err = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        char sub[256];
        if (!eq) {
            snprintf(sub, sizeof sub, "%u: expected key = value", lineno);
            say(why, why_len, "%s:%s", path, sub);
            err = -EINVAL;
            break;
        }
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        if ((err = nc_config_set(c, key, value, sub, sizeof sub))) {
            char where[64];
            snprintf(where, sizeof where, "%u", lineno);
            if (why && why_len)
                snprintf(why, why_len, "%s:%s: %s", path, where, sub);
            break;
        }
    }
    fclose(f);
    return err;
}

int nc_config_parse_args(nc_config *c, int argc, char **argv,
                         char *why, size_t why_len)
{
    /* Pass 1: --help, --version, --config (the file sits under the flags). */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            nc_config_usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--version")) {
            printf("neocogd %s\n", NC_VERSION);
            return 1;
        }
        const char *file = NULL;
        if (!strncmp(a, "--config=", 9))
            file = a + 9;
        else if (!strcmp(a, "--config") || !strcmp(a, "-c")) {
            if (i + 1 >= argc) {
                say(why, why_len, "%s needs a file%s", a, "");
                return -EINVAL;
            }
            file = argv[++i];
        }
        if (file) {
            int err = nc_config_load_file(c, file, why, why_len);
            if (err)
                return err;
        }
    }
    /* Pass 2: everything else, in order, so later flags win. */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--config") || !strcmp(a, "-c")) {
            i++;
            continue;
        }
        if (!strncmp(a, "--config=", 9))
            continue;
        if (strncmp(a, "--", 2) != 0 || !a[2]) {
            say(why, why_len, "unexpected argument '%s'%s", a, "");
            return -EINVAL;
        }
        char key[64];
        const char *value;
        const char *eq = strchr(a, '=');
        size_t klen = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (klen >= sizeof key) {
            say(why, why_len, "unknown option %s%s", a, "");
            return -ENOENT;
        }
        memcpy(key, a + 2, klen);
        key[klen] = '\0';
        /* Judge the name before taking the next argument as its value, so
         * a mistyped flag is named as such. */
        if (!find_key(key)) {
            say(why, why_len, "unknown option --%s%s", key, "");
            return -ENOENT;
        }
        if (eq) {
            value = eq + 1;
        } else {
            if (i + 1 >= argc) {
                say(why, why_len, "--%s needs a value%s", key, "");
                return -EINVAL;
            }
            value = argv[++i];
        }
        int err = nc_config_set(c, key, value, why, why_len);
        if (err)
            return err;
    }
    return nc_config_check(c, why, why_len);
}

int nc_config_check(const nc_config *c, char *why, size_t why_len)
{
    /* A request is queued whole or not at all: one larger than the queue
     * could never be taken, and "retry later" would be a lie. */
    if (c->max_images_per_request > c->queue_capacity) {
        if (why && why_len)
            snprintf(why, why_len, "max_images_per_request (%" PRIu32 ") exceeds "
                     "queue_capacity (%" PRIu32 "): such a request could never be queued; "
                     "raise queue_capacity or lower max_images_per_request",
                     c->max_images_per_request, c->queue_capacity);
        return -EINVAL;
    }
    if ((uint64_t)c->max_frame_bytes > c->queue_max_bytes) {
        if (why && why_len)
            snprintf(why, why_len, "max_frame_bytes (%" PRIu32 ") exceeds queue_max_bytes "
                     "(%" PRIu64 "): such a request could never be queued; raise "
                     "queue_max_bytes or lower max_frame_bytes",
                     c->max_frame_bytes, c->queue_max_bytes);
        return -EINVAL;
    }
    return 0;
}

void nc_config_usage(FILE *to)
{
    fprintf(to,
            "usage: neocogd [--config FILE] [--KEY=VALUE]...\n"
            "\n"
            "Handwritten digit recognition daemon (protocol: proto/neocog.proto).\n"
            "Every KEY may also be set in the config file as `key = value`;\n"
            "dashes and underscores are the same.\n\n");
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", keys[k].name);
        for (char *p = flag + 2; *p; p++)
            if (*p == '_')
                *p = '-';
        fprintf(to, "  %-26s %s\n", flag, keys[k].help);
    }
    fprintf(to, "\nSignals: SIGHUP reloads the models, SIGTERM drains and exits.\n");
}

void nc_config_print(const nc_config *c, FILE *to)
{
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const key_def *d = &keys[k];
        const char *field = (const char *)c + d->offset;
        switch (d->type) {
        case T_STR: fprintf(to, "%s = %s\n", d->name, field); break;
        case T_U32: fprintf(to, "%s = %" PRIu32 "\n", d->name, *(const uint32_t *)field); break;
        case T_U64: fprintf(to, "%s = %" PRIu64 "\n", d->name, *(const uint64_t *)field); break;
        case T_MODE: fprintf(to, "%s = %04" PRIo32 "\n", d->name, *(const uint32_t *)field); break;
        case T_DOUBLE: fprintf(to, "%s = %g\n", d->name, *(const double *)field); break;
        case T_CHOICE:
            fprintf(to, "%s = %s\n", d->name, choice_names[*(const uint32_t *)field]);
            break;
        }
    }
}

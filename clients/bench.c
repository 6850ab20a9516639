/* clients/bench.c — `neocog bench`: a load generator for neocogd.
 *
 * Layer: clients.  One thread per connection, each driving libneocog's
 * pipelined API, so a handful of threads keep many requests in flight.
 *
 * Two ways to load the daemon:
 *   closed loop (--concurrency N): N requests outstanding at all times,
 *     spread over the connections; a new one is sent as each reply lands.
 *     Measures capacity: throughput at a given parallelism.
 *   open loop (--rate R): requests leave on a fixed schedule, R per second
 *     in all, whatever the replies do.  Latency is measured from the time a
 *     request was *due*, not from when it was sent, so a server stall that
 *     holds the sender back still shows in the percentiles (no "coordinated
 *     omission").  Each connection keeps at most 128 outstanding (the
 *     daemon's default per-connection limit); past that the schedule slips
 *     and the slip is counted as latency.
 *
 * Images come from an IDX file (sent as raw 8-bit grey, MNIST polarity) or
 * from a folder of PGM/PNG/JPEG files (sent as they are); request k takes
 * the next --batch-images of them, round robin.  With IDX labels the table
 * also gives the accuracy of the answers.
 *
 * Latencies go into log-linear histograms (cli.h), one per thread, merged
 * at the end: fixed memory however long the run.
 *
 * With --retries N each connection reconnects and resends (libneocog's
 * nc_client_retry): a request is then answered (OK or refused with a
 * code, after at most N resends), or lost (no daemon ever answered it), and
 * the counts are exact: requests = answered + lost.  Latency counts from
 * the first send, retries included. */
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dataset.h"
#include "fileio.h"
#include "frame.h"
#include "neocog_client.h"

#define OPEN_LOOP_WINDOW 128u       /* the daemon's default max_inflight_per_conn */
#define OPEN_LOOP_CONNECTIONS 4u
#define N_CODES 18                  /* gRPC codes 0..16, then "other" */
#define MAX_IDX_BYTES ((size_t)1 << 30)
#define RETRY_POLL_NS 5000000       /* open loop with retries: look in every 5 ms */

/* ---- images -------------------------------------------------------------------- */

typedef struct source {
    nc_client_image *images;
    size_t n;
    const uint8_t *labels;      /* n entries or NULL */
    char desc[2300];
    nc_dataset ds;              /* --idx */
    uint8_t **files;            /* --dir: each file's bytes */
} source;

static void source_fini(source *s)
{
    if (s->files)
        for (size_t i = 0; i < s->n; i++)
            free(s->files[i]);
    free(s->files);
    free(s->images);
    nc_dataset_fini(&s->ds);
}

/* "…-images-idx3-ubyte…" names its labels "…-labels-idx1-ubyte…" (MNIST's
 * own naming); use that file when it is there. */
static int guess_labels(const char *images, char *dst, size_t cap)
{
    const char *at = strstr(images, "images-idx3");
    if (!at || strlen(images) + 1 > cap)
        return 0;
    size_t pre = (size_t)(at - images);
    snprintf(dst, cap, "%.*slabels-idx1%s", (int)pre, images, at + strlen("images-idx3"));
    return access(dst, R_OK) == 0;
}

static int load_idx(const nc_cli_args *a, source *s)
{
    uint8_t *img = NULL, *lab = NULL;
    size_t img_len = 0, lab_len = 0;
    char guessed[4096];
    const char *labels = a->labels;
    if (!labels && guess_labels(a->idx, guessed, sizeof guessed))
        labels = guessed;
    int r = nc_file_read(a->idx, MAX_IDX_BYTES, &img, &img_len);
    if (r < 0) {
        fprintf(stderr, "neocog: %s: %s\n", a->idx, strerror(-r));
        return r;
    }
    if (labels && (r = nc_file_read(labels, MAX_IDX_BYTES, &lab, &lab_len)) < 0) {
        fprintf(stderr, "neocog: %s: %s\n", labels, strerror(-r));
        free(img);
        return r;
    }
    r = nc_dataset_parse(img, img_len, lab, lab_len, &s->ds);
    free(img);
    free(lab);
    if (r < 0) {
        fprintf(stderr, "neocog: %s%s%s: not a usable IDX image%s file (%s)\n", a->idx,
                labels ? " + " : "", labels ? labels : "", labels ? "/label" : "",
                strerror(-r));
        return r;
    }
    if (s->ds.count == 0) {
        fprintf(stderr, "neocog: %s: holds no images\n", a->idx);
        return -EINVAL;
    }
    s->n = s->ds.count;
    s->images = calloc(s->n, sizeof *s->images);
    if (!s->images)
        return -ENOMEM;
    size_t px = (size_t)s->ds.rows * s->ds.cols;
    for (size_t i = 0; i < s->n; i++) {
        s->images[i] = (nc_client_image){
            .format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY,
            .data = s->ds.pixels + i * px, .len = px,
            .width = s->ds.cols, .height = s->ds.rows,
            .segment = a->segment,
            /* IDX digit sets are MNIST-like: light ink on black. */
            .polarity = NEOCOG__POLARITY__POLARITY_LIGHT_INK,
        };
    }
    s->labels = s->ds.labels;
    snprintf(s->desc, sizeof s->desc, "%.1000s (%zu images %ux%u%s%.1000s)", a->idx, s->n,
             s->ds.cols, s->ds.rows, labels ? ", labels " : "", labels ? labels : "");
    return 0;
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

static int load_dir(const nc_cli_args *a, source *s)
{
    DIR *d = opendir(a->dir);
    if (!d) {
        fprintf(stderr, "neocog: %s: %s\n", a->dir, strerror(errno));
        return -errno;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    int r = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *names);
            if (!nn) {
                r = -ENOMEM;
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(e->d_name))) {
            r = -ENOMEM;
            break;
        }
        n++;
    }
    closedir(d);
    /* Sorted, so two runs over one folder send the same sequence. */
    if (n)
        qsort(names, n, sizeof *names, cmp_str);
    size_t skipped = 0;
    if (!r && n) {
        s->files = calloc(n, sizeof *s->files);
        s->images = calloc(n, sizeof *s->images);
        if (!s->files || !s->images)
            r = -ENOMEM;
    }
    for (size_t i = 0; !r && i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", a->dir, names[i]);
        uint8_t *buf;
        size_t len;
        nc_cli_image_kind kind;
        uint32_t w, h;
        /* Folders hold READMEs and subfolders too: skip what is no image. */
        if (nc_file_read(path, NC_FRAME_DEFAULT_MAX - 1024, &buf, &len) < 0) {
            skipped++;
            continue;
        }
        if (nc_cli_sniff_image(buf, len, &kind, &w, &h) < 0) {
            free(buf);
            skipped++;
            continue;
        }
        s->files[s->n] = buf;
        s->images[s->n++] = (nc_client_image){
            .format = NEOCOG__IMAGE_FORMAT__FORMAT_AUTO, .data = buf, .len = len,
            .segment = a->segment,
        };
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (r < 0) {
        fprintf(stderr, "neocog: %s: %s\n", a->dir, strerror(-r));
        return r;
    }
    if (s->n == 0) {
        fprintf(stderr, "neocog: %s: no PGM, PNG or JPEG file in it\n", a->dir);
        return -ENOENT;
    }
    snprintf(s->desc, sizeof s->desc, "%.2000s (%zu images; %zu other files skipped)", a->dir,
             s->n, skipped);
    return 0;
}

/* ---- workers ------------------------------------------------------------------- */

typedef struct plan {
    const nc_cli_args *args;
    const source *src;
    int open_loop;
    int64_t t_start, send_end;      /* ns, CLOCK_MONOTONIC */
    int timeout_ms;
} plan;

typedef struct slot {
    uint64_t id;
    int64_t due;                    /* when the request was due (ns) */
    size_t first;                   /* index of its first image */
} slot;

/* The latency histograms: the request as seen here, the daemon's own time
 * (Timing.total_us) and the parts of it (queue, prepare, forward). */
enum { H_REQUEST, H_SERVER, H_QUEUE, H_PREPARE, H_FORWARD, N_HIST };
static const char *const hist_names[N_HIST] = { "request", "server", "queue", "prepare",
                                                "forward" };

typedef struct worker {
    pthread_t thread;
    const plan *p;
    nc_client *cl;
    uint32_t index, window;
    uint64_t quota;                 /* requests to send; 0: until send_end */
    double period_ns;               /* open loop: between this worker's sends */
    double phase_ns;
    size_t cursor;                  /* next image */
    slot *slots;
    nc_hist *hist;                  /* N_HIST, ns */
    uint64_t sent;                  /* requests written whole */
    uint64_t replies, req_failed, images_ok, images_failed, judged, correct, rejected;
    uint64_t req_by_code[N_CODES], img_by_code[N_CODES];
    uint64_t lost;                  /* sent, never answered (connection lost) */
    nc_client_stats cs;             /* the library's counts, at the end */
    int transport_err;
    char transport_msg[256];
    int64_t last_reply;
} worker;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int code_index(int code)
{
    return code >= 0 && code < N_CODES - 1 ? code : N_CODES - 1;
}

static void take_reply(worker *w, nc_msg *m, int64_t t);

static void free_slot(worker *w, uint64_t id)
{
    for (uint32_t i = 0; i < w->window; i++)
        if (w->slots[i].id == id) {
            w->slots[i].id = 0;
            return;
        }
}

/* The library gave up on a request: refused (the daemon's last refusal is
 * its answer) or lost (no daemon answered it). */
static void take_giveup(worker *w, nc_msg *m, int64_t t)
{
    nc_client_giveup gu;
    if (nc_client_last_giveup(w->cl, &gu) == 0 && gu.from_daemon) {
        take_reply(w, m, t);
        return;
    }
    free_slot(w, nc_msg_reply(m)->id);
    w->lost++;
    nc_msg_free(m);
}

static void take_reply(worker *w, nc_msg *m, int64_t t)
{
    const Neocog__Reply *rp = nc_msg_reply(m);
    slot *sl = NULL;
    for (uint32_t i = 0; i < w->window; i++)
        if (w->slots[i].id == rp->id) {
            sl = &w->slots[i];
            break;
        }
    if (!sl) {      /* the library checks ids, so this is a bug of ours */
        nc_msg_free(m);
        return;
    }
    sl->id = 0;
    w->replies++;
    w->last_reply = t;
    nc_hist_record(&w->hist[H_REQUEST], (uint64_t)(t - sl->due));
    if (rp->code != NEOCOG__CODE__OK) {
        w->req_failed++;
        w->req_by_code[code_index(rp->code)]++;
        nc_msg_free(m);
        return;
    }
    if (rp->timing) {
        const Neocog__Timing *tm = rp->timing;
        nc_hist_record(&w->hist[H_SERVER], tm->total_us * 1000);
        nc_hist_record(&w->hist[H_QUEUE], tm->queue_us * 1000);
        nc_hist_record(&w->hist[H_PREPARE], tm->prepare_us * 1000);
        nc_hist_record(&w->hist[H_FORWARD], tm->forward_us * 1000);
    }
    if (rp->kind_case == NEOCOG__REPLY__KIND_RECOGNIZE) {
        const source *src = w->p->src;
        for (size_t i = 0; i < rp->recognize->n_results; i++) {
            const Neocog__Result *res = rp->recognize->results[i];
            if (res->code != NEOCOG__CODE__OK) {
                w->images_failed++;
                w->img_by_code[code_index(res->code)]++;
                continue;
            }
            w->images_ok++;
            w->rejected += res->reject != 0;
            if (src->labels && !w->p->args->segment) {
                w->judged++;
                w->correct += res->label == src->labels[(sl->first + i) % src->n];
            }
        }
    }
    nc_msg_free(m);
}

static int send_one(worker *w, int64_t due, nc_client_image *batch)
{
    const source *src = w->p->src;
    const nc_cli_args *a = w->p->args;
    size_t first = w->cursor;
    for (uint32_t k = 0; k < a->batch_images; k++)
        batch[k] = src->images[(first + k) % src->n];
    w->cursor = (first + a->batch_images) % src->n;
    nc_client_recognize_opts o = { .model = a->model, .top_k = a->top_k,
                                   .deadline_us = a->deadline_us, .priority = a->priority,
                                   .min_confidence = a->min_confidence };
    uint64_t id;
    int r = nc_client_send_recognize(w->cl, &o, batch, a->batch_images, &id);
    if (r < 0)
        return r;
    for (uint32_t i = 0; i < w->window; i++)
        if (w->slots[i].id == 0) {
            w->slots[i] = (slot){ .id = id, .due = due, .first = first };
            break;
        }
    return 0;
}

/* The connection broke.  Replies that arrived before the break (the library
 * keeps them, and hands them out before the error) are answers, not
 * losses: take them, and count as lost only what stays unanswered. */
static void fail_transport(worker *w, int err)
{
    w->transport_err = err;
    snprintf(w->transport_msg, sizeof w->transport_msg, "%s", nc_client_errmsg(w->cl));
    nc_msg *m;
    while (nc_client_in_flight(w->cl) && nc_client_receive(w->cl, 0, &m) == 0)
        take_reply(w, m, now_ns());
    w->lost += nc_client_in_flight(w->cl);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    const plan *p = w->p;
    nc_client_image *batch = calloc(p->args->batch_images, sizeof *batch);
    if (!batch) {
        w->transport_err = -ENOMEM;
        snprintf(w->transport_msg, sizeof w->transport_msg, "out of memory");
        return NULL;
    }
    uint64_t sent = 0;
    for (;;) {
        int64_t now = now_ns();
        int can_send = (!w->quota || sent < w->quota) && now < p->send_end;
        uint32_t in_flight = nc_client_in_flight(w->cl);
        if (!can_send && in_flight == 0)
            break;
        int64_t due = now;
        if (can_send && p->open_loop)
            due = p->t_start + (int64_t)(w->phase_ns + (double)sent * w->period_ns);
        if (can_send && in_flight < w->window && due <= now) {
            int r = send_one(w, due, batch);
            if (r < 0) {
                fail_transport(w, r);
                break;
            }
            sent++;
            w->sent++;
            continue;
        }
        nc_msg *m;
        int r;
        if (can_send && in_flight < w->window) {
            /* Open loop, ahead of schedule: wait for a reply or the next
             * due time, whichever comes first, to the nanosecond. */
            int64_t left = due - now;
            struct timespec ts = { left / 1000000000, left % 1000000000 };
            if (in_flight == 0) {
                nanosleep(&ts, NULL);
                continue;
            }
            /* Retrying, the library has timers of its own (resends,
             * reconnecting) and the socket may change: look in often. */
            int retrying = p->args->retries > 0;
            if (retrying && left > RETRY_POLL_NS)
                ts = (struct timespec){ 0, RETRY_POLL_NS };
            struct pollfd pfd = { .fd = nc_client_fd(w->cl), .events = POLLIN };
            if (ppoll(&pfd, 1, &ts, NULL) <= 0 && !retrying)
                continue;
            r = nc_client_receive(w->cl, 0, &m);
            if (r == -EAGAIN)
                continue;
        } else {
            r = nc_client_receive(w->cl, p->timeout_ms, &m);
        }
        if (r < 0) {
            fail_transport(w, r);
            break;
        }
        if (r == NC_CLIENT_GAVE_UP)
            take_giveup(w, m, now_ns());
        else
            take_reply(w, m, now_ns());
    }
    nc_client_stats_get(w->cl, &w->cs);
    free(batch);
    return NULL;
}

/* ---- report -------------------------------------------------------------------- */

typedef struct totals {
    nc_hist hist[N_HIST];
    uint64_t sent, replies, req_failed, images_ok, images_failed, judged, correct, rejected, lost;
    uint64_t req_by_code[N_CODES], img_by_code[N_CODES];
    uint64_t resends, resent_after_loss, resent_by_code[N_CODES], reconnects;
    int transport_failures;
    const char *first_transport_msg;
    int64_t end;
} totals;

static const char *code_label(int i)
{
    return i == N_CODES - 1 ? "OTHER" : nc_msg_code_name(i);
}

static double us(uint64_t ns)
{
    return (double)ns / 1000.0;
}

static const double pcts[] = { 50, 90, 99, 99.9 };
static const char *const pct_names[] = { "p50", "p90", "p99", "p99.9" };

static void print_txt(const nc_cli_args *a, const char *addr, const source *src,
                      const totals *t, uint32_t conns, double elapsed)
{
    printf("neocog bench: %s, ", addr);
    if (a->rate)
        printf("open loop at %.1f requests/s", a->rate);
    else
        printf("closed loop, concurrency %u", a->concurrency);
    printf(", %u connection%s, %u image%s/request, model %s\n", conns, conns == 1 ? "" : "s",
           a->batch_images, a->batch_images == 1 ? "" : "s", nc_client_model_name(a->model));
    printf("images from %s\n\n", src->desc);
    uint64_t errors = t->req_failed + t->lost;
    printf("%-22s %" PRIu64 "\n", "requests", t->sent);
    printf("%-22s %" PRIu64 "\n", "answered", t->replies);
    if (a->retries) {
        printf("%-22s %" PRIu64 "\n", "retried", t->resends);
        if (t->resent_after_loss)
            printf("  %-20s %" PRIu64 "\n", "after a lost reply", t->resent_after_loss);
        for (int i = 0; i < N_CODES; i++)
            if (t->resent_by_code[i])
                printf("  %-20s %" PRIu64 "\n", code_label(i), t->resent_by_code[i]);
        printf("%-22s %" PRIu64 "\n", "reconnects", t->reconnects);
        printf("%-22s %" PRIu64 "\n", "lost", t->lost);
    }
    printf("%-22s %" PRIu64 "\n", "images", t->images_ok);
    printf("%-22s %" PRIu64 "\n", "errors", errors);
    for (int i = 0; i < N_CODES; i++)
        if (t->req_by_code[i])
            printf("  %-20s %" PRIu64 "\n", code_label(i), t->req_by_code[i]);
    if (t->lost)
        printf("  %-20s %" PRIu64 "\n", "no reply", t->lost);
    if (t->images_failed) {
        printf("%-22s %" PRIu64 "\n", "image errors", t->images_failed);
        for (int i = 0; i < N_CODES; i++)
            if (t->img_by_code[i])
                printf("  %-20s %" PRIu64 "\n", code_label(i), t->img_by_code[i]);
    }
    if (t->rejected)
        printf("%-22s %" PRIu64 "\n", "rejected", t->rejected);
    if (t->judged)
        printf("%-22s %.2f %% (%" PRIu64 " / %" PRIu64 ")\n", "accuracy",
               100.0 * (double)t->correct / (double)t->judged, t->correct, t->judged);
    printf("%-22s %.3f s\n", "elapsed", elapsed);
    printf("%-22s %.1f req/s\n", "throughput", elapsed > 0 ? (double)t->replies / elapsed : 0);
    printf("%-22s %.1f images/s\n", "", elapsed > 0 ? (double)t->images_ok / elapsed : 0);
    printf("\n%-14s", "latency (us)");
    for (size_t i = 0; i < 4; i++)
        printf(" %10s", pct_names[i]);
    printf(" %10s %10s\n", "max", "mean");
    for (int r = 0; r < N_HIST; r++) {
        const nc_hist *h = &t->hist[r];
        printf("%-14s", hist_names[r]);
        for (size_t i = 0; i < 4; i++)
            printf(" %10.1f", us(nc_hist_percentile(h, pcts[i])));
        printf(" %10.1f %10.1f\n", us(h->count ? h->max : 0), nc_hist_mean(h) / 1000.0);
    }
    printf("(request: due to reply as seen here; server: the daemon's own "
           "receipt-to-reply time;\n of it, queue: until a worker took the batch, prepare: "
           "the batch's decoding and\n preprocessing, forward: its networks and answers)\n");
}

static void print_json(const nc_cli_args *a, const char *addr, const source *src,
                       const totals *t, uint32_t conns, double elapsed)
{
    fputs("{\"server\":", stdout);
    nc_json_string(stdout, addr);
    printf(",\"mode\":\"%s\",\"concurrency\":%u,\"rate\":", a->rate ? "open" : "closed",
           a->rate ? 0 : a->concurrency);
    nc_json_number(stdout, a->rate);
    printf(",\"connections\":%u,\"batch_images\":%u,\"model\":\"%s\",\"source\":", conns,
           a->batch_images, nc_client_model_name(a->model));
    nc_json_string(stdout, src->desc);
    printf(",\"requests\":%" PRIu64 ",\"images\":%" PRIu64 ",\"errors\":%" PRIu64
           ",\"errors_by_code\":{", t->sent, t->images_ok, t->req_failed + t->lost);
    int first = 1;
    for (int i = 0; i < N_CODES; i++)
        if (t->req_by_code[i]) {
            printf("%s\"%s\":%" PRIu64, first ? "" : ",", code_label(i), t->req_by_code[i]);
            first = 0;
        }
    if (t->lost)
        printf("%s\"no_reply\":%" PRIu64, first ? "" : ",", t->lost);
    printf("},\"answered\":%" PRIu64 ",\"image_errors\":%" PRIu64
           ",\"image_errors_by_code\":{", t->replies, t->images_failed);
    first = 1;
    for (int i = 0; i < N_CODES; i++)
        if (t->img_by_code[i]) {
            printf("%s\"%s\":%" PRIu64, first ? "" : ",", code_label(i), t->img_by_code[i]);
            first = 0;
        }
    printf("},\"rejected\":%" PRIu64 ",\"accuracy\":", t->rejected);
    nc_json_number(stdout, t->judged ? (double)t->correct / (double)t->judged : NAN);
    fputs(",\"elapsed_s\":", stdout);
    nc_json_number(stdout, elapsed);
    fputs(",\"requests_per_s\":", stdout);
    nc_json_number(stdout, elapsed > 0 ? (double)t->replies / elapsed : 0);
    fputs(",\"images_per_s\":", stdout);
    nc_json_number(stdout, elapsed > 0 ? (double)t->images_ok / elapsed : 0);
    for (int r = 0; r < N_HIST; r++) {
        /* request and server first, as they always were; the server's parts
         * follow */
        const nc_hist *h = &t->hist[r];
        printf(",\"%s_us\":{", r == H_REQUEST ? "latency" : hist_names[r]);
        for (size_t i = 0; i < 4; i++) {
            printf("%s\"%s\":", i ? "," : "", pct_names[i]);
            nc_json_number(stdout, us(nc_hist_percentile(h, pcts[i])));
        }
        fputs(",\"max\":", stdout);
        nc_json_number(stdout, us(h->count ? h->max : 0));
        fputs(",\"mean\":", stdout);
        nc_json_number(stdout, nc_hist_mean(h) / 1000.0);
        putchar('}');
    }
    /* Appended, so the fields above keep their order. */
    printf(",\"lost\":%" PRIu64 ",\"retried\":%" PRIu64 ",\"retried_after_loss\":%" PRIu64
           ",\"retried_by_code\":{", t->lost, t->resends, t->resent_after_loss);
    first = 1;
    for (int i = 0; i < N_CODES; i++)
        if (t->resent_by_code[i]) {
            printf("%s\"%s\":%" PRIu64, first ? "" : ",", code_label(i), t->resent_by_code[i]);
            first = 0;
        }
    printf("},\"reconnects\":%" PRIu64 ",\"judged\":%" PRIu64 ",\"correct\":%" PRIu64 "}\n",
           t->reconnects, t->judged, t->correct);
}

/* ---- run ----------------------------------------------------------------------- */

int nc_bench_run(const nc_cli_args *a, const char *addr)
{
    source src;
    memset(&src, 0, sizeof src);
    if ((a->idx ? load_idx(a, &src) : load_dir(a, &src)) < 0) {
        source_fini(&src);
        return NC_CLI_EXIT_FAIL;
    }
    int open_loop = a->rate > 0;
    uint32_t conns = a->connections;
    if (!conns) {
        /* Closed loop: enough sockets to spread the daemon's event handling
         * and our own packing over the cores, pipelining the rest. */
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        uint32_t cap = (uint32_t)(cpus > 0 ? 2 * cpus : 2);
        conns = open_loop ? OPEN_LOOP_CONNECTIONS : (a->concurrency < cap ? a->concurrency : cap);
    }
    if (!open_loop && conns > a->concurrency)
        conns = a->concurrency;
    if (a->requests && conns > a->requests)
        conns = (uint32_t)a->requests;

    int rc = NC_CLI_EXIT_FAIL;
    worker *ws = calloc(conns, sizeof *ws);
    totals *t = calloc(1, sizeof *t);
    if (!ws || !t) {
        fprintf(stderr, "neocog: out of memory\n");
        goto out;
    }
    plan p = { .args = a, .src = &src, .open_loop = open_loop,
               .timeout_ms = a->timeout_ms ? a->timeout_ms : 30000 };
    for (uint32_t i = 0; i < conns; i++) {
        worker *w = &ws[i];
        w->p = &p;
        w->index = i;
        w->window = open_loop ? OPEN_LOOP_WINDOW
                              : a->concurrency / conns + (i < a->concurrency % conns);
        if (a->requests)
            w->quota = a->requests / conns + (i < a->requests % conns);
        if (open_loop) {
            /* Connection i sends at i/R, i/R + C/R, ...: together R/s, evenly. */
            w->period_ns = 1e9 * conns / a->rate;
            w->phase_ns = 1e9 * i / a->rate;
        }
        /* Start the connections at different images so batches differ. */
        w->cursor = (size_t)((uint64_t)i * src.n / conns);
        w->slots = calloc(w->window, sizeof *w->slots);
        w->hist = malloc(N_HIST * sizeof *w->hist);
        if (!w->slots || !w->hist) {
            fprintf(stderr, "neocog: out of memory\n");
            goto out;
        }
        for (int h = 0; h < N_HIST; h++)
            nc_hist_init(&w->hist[h]);
        nc_client_options o = { .timeout_ms = p.timeout_ms, .max_in_flight = w->window };
        if (a->retries)
            o.retry = (nc_client_retry){ .max_attempts = a->retries + 1,
                                         .deadline_ms = a->retry_deadline_ms };
        if (nc_client_connect(addr, &o, &w->cl) < 0) {
            fprintf(stderr, "neocog: %s\n", nc_client_errmsg(NULL));
            goto out;
        }
    }
    /* Connected first, then the clock starts: connection setup is not load. */
    p.t_start = now_ns();
    p.send_end = a->duration_s > 0 ? p.t_start + (int64_t)(a->duration_s * 1e9) : INT64_MAX;
    uint32_t started = 0;
    for (; started < conns; started++) {
        int e = pthread_create(&ws[started].thread, NULL, worker_main, &ws[started]);
        if (e) {
            fprintf(stderr, "neocog: cannot start a thread: %s\n", strerror(e));
            break;
        }
    }
    for (uint32_t i = 0; i < started; i++)
        pthread_join(ws[i].thread, NULL);
    if (started < conns)
        goto out;

    for (int h = 0; h < N_HIST; h++)
        nc_hist_init(&t->hist[h]);
    t->end = p.t_start;
    for (uint32_t i = 0; i < conns; i++) {
        const worker *w = &ws[i];
        for (int h = 0; h < N_HIST; h++)
            nc_hist_merge(&t->hist[h], &w->hist[h]);
        t->sent += w->sent;
        t->replies += w->replies;
        t->req_failed += w->req_failed;
        t->images_ok += w->images_ok;
        t->images_failed += w->images_failed;
        t->judged += w->judged;
        t->correct += w->correct;
        t->rejected += w->rejected;
        t->lost += w->lost;
        for (int c = 0; c < N_CODES; c++) {
            t->req_by_code[c] += w->req_by_code[c];
            t->img_by_code[c] += w->img_by_code[c];
        }
        t->resends += w->cs.resends;
        t->resent_after_loss += w->cs.resent_after_loss;
        t->reconnects += w->cs.reconnects;
        for (int c = 0; c < NC_CLIENT_CODES; c++)
            t->resent_by_code[code_index(c)] += w->cs.resent_by_code[c];
        if (w->transport_err) {
            if (!t->transport_failures++)
                t->first_transport_msg = w->transport_msg;
        }
        if (w->last_reply > t->end)
            t->end = w->last_reply;
    }
    double elapsed = (double)(t->end - p.t_start) / 1e9;
    if (a->format == NC_CLI_FORMAT_JSON)
        print_json(a, addr, &src, t, conns, elapsed);
    else
        print_txt(a, addr, &src, t, conns, elapsed);
    if (t->transport_failures)
        fprintf(stderr, "neocog: %d connection%s failed; first: %s\n", t->transport_failures,
                t->transport_failures == 1 ? "" : "s", t->first_transport_msg);
    rc = t->req_failed || t->lost || t->images_failed || t->transport_failures
             ? NC_CLI_EXIT_FAIL : NC_CLI_EXIT_OK;
out:
    if (ws)
        for (uint32_t i = 0; i < conns; i++) {
            nc_client_free(ws[i].cl);
            free(ws[i].slots);
            free(ws[i].hist);
        }
    free(ws);
    free(t);
    source_fini(&src);
    return rc;
}

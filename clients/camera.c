/* clients/camera.c — see camera.h.
 *
 * Threads: the reader (camera_input's source -> the mailbox) and the main
 * thread (mailbox -> daemon -> stdout).  They share only the mailbox, under
 * one mutex.  Three frame buffers go round: one being read, one waiting in
 * the slot, one being recognised, so nothing is allocated per frame once
 * the buffers have grown to the frame size.
 *
 * The ROI and the expected digit count travel in the request (Image.roi,
 * Image.expected_digits): the daemon segments only inside the ROI (boxes
 * come back in frame coordinates) and fits the count, so frames are sent as
 * they came.  Two checks stay here for daemons older than those fields,
 * which skip them: digits whose box centre lies outside the ROI are
 * dropped, and extra digits beyond --digits go least confident first; a
 * frame with fewer is flagged (count_ok false). */
#include "camera.h"
#include "camera_opts.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "camera_input.h"
#include "cli.h"
#include "frame.h"
#include "neocog_client.h"
#include "opts.h"

#define N_BUFFERS 3

/* ---- time ------------------------------------------------------------------ */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t, const atomic_int *stop)
{
    /* In slices, so a stop request is seen within 100 ms. */
    for (uint64_t n; !atomic_load(stop) && (n = now_ns()) < t;) {
        uint64_t d = t - n < 100000000u ? t - n : 100000000u;
        struct timespec ts = { (time_t)(d / 1000000000u), (long)(d % 1000000000u) };
        nanosleep(&ts, NULL);
    }
}

/* ---- the mailbox ----------------------------------------------------------- */

typedef struct mailbox {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    nc_cam_frame frames[N_BUFFERS];
    nc_cam_frame *free_list[N_BUFFERS];
    int n_free;
    nc_cam_frame *slot;         /* the newest frame not yet taken */
    int done;                   /* the reader has finished */
    int failed;                 /* ... because the source failed (why) */
    char why[256];
    uint64_t read, dropped;
    int drop;
} mailbox;

typedef struct reader_ctx {
    mailbox *mb;
    nc_cam_source *src;
    const cam_opts *o;
    atomic_int *stop;
} reader_ctx;

static void *reader_main(void *arg)
{
    reader_ctx *rc = arg;
    mailbox *mb = rc->mb;
    uint64_t t0 = 0, n = 0;
    char why[256] = "";
    int r = 0;
    for (;;) {
        if (rc->o->max_frames && n >= rc->o->max_frames)
            break;
        pthread_mutex_lock(&mb->mu);
        while (!mb->n_free && !atomic_load(rc->stop))
            pthread_cond_wait(&mb->cv, &mb->mu);
        nc_cam_frame *f = mb->n_free ? mb->free_list[--mb->n_free] : NULL;
        pthread_mutex_unlock(&mb->mu);
        if (!f)
            break;
        r = nc_cam_source_next(rc->src, f, rc->stop, why, sizeof why);
        if (r > 0 && rc->o->fps > 0) {
            /* A camera delivers frame n at t0 + n / fps; so do we, and the
             * frame's life starts when it is delivered. */
            if (!n)
                t0 = now_ns();
            sleep_until(t0 + (uint64_t)(1e9 * (double)n / rc->o->fps), rc->stop);
            f->t_read_ns = now_ns();
        }
        pthread_mutex_lock(&mb->mu);
        if (r <= 0) {
            mb->free_list[mb->n_free++] = f;
            pthread_mutex_unlock(&mb->mu);
            break;
        }
        n++;
        mb->read++;
        if (mb->slot && mb->drop) {
            mb->free_list[mb->n_free++] = mb->slot;
            mb->dropped++;
        } else {
            while (mb->slot && !atomic_load(rc->stop))
                pthread_cond_wait(&mb->cv, &mb->mu);
            if (mb->slot) {     /* stopping: the waiting one goes */
                mb->free_list[mb->n_free++] = mb->slot;
                mb->dropped++;
            }
        }
        mb->slot = f;
        pthread_cond_broadcast(&mb->cv);
        pthread_mutex_unlock(&mb->mu);
    }
    pthread_mutex_lock(&mb->mu);
    mb->done = 1;
    if (r < 0) {
        mb->failed = 1;
        snprintf(mb->why, sizeof mb->why, "%s", why);
    }
    pthread_cond_broadcast(&mb->cv);
    pthread_mutex_unlock(&mb->mu);
    return NULL;
}

/* ---- statistics ------------------------------------------------------------- */

typedef struct stats {
    nc_hist all, window;        /* latency, ns */
    nc_hist prepare, forward;   /* the daemon's share of it (Timing), ns */
    uint64_t frames;            /* answered by the daemon (ok or not) */
    uint64_t ok, failed, bad, digits;
    uint64_t rejected;          /* digits shown as '?': flagged, not answered */
    uint64_t t_first, t_last;   /* first frame read, last reply */
    uint64_t win_start, win_frames;
    int live_line;              /* a \r line is on the terminal */
} stats;

static double ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

/* Once a second: the last second's latency percentiles and frame rate. */
static void live_stats(stats *st, uint64_t dropped, int tty)
{
    uint64_t t = now_ns();
    if (!st->win_start)
        st->win_start = t;
    if (t - st->win_start < 1000000000u)
        return;
    double secs = (double)(t - st->win_start) / 1e9;
    char line[200];
    snprintf(line, sizeof line,
             "camera: %.1f fps  latency p50 %.2f ms  p99 %.2f ms  frames %" PRIu64
             "  dropped %" PRIu64 "  bad %" PRIu64,
             (double)st->win_frames / secs, ms(nc_hist_percentile(&st->window, 50)),
             ms(nc_hist_percentile(&st->window, 99)), st->frames, dropped, st->bad);
    if (tty) {
        fprintf(stderr, "\r\033[K%s", line);
        st->live_line = 1;
    } else {
        fprintf(stderr, "%s\n", line);
    }
    nc_hist_init(&st->window);
    st->win_frames = 0;
    st->win_start = t;
}

/* ---- one frame ---------------------------------------------------------------- */

typedef struct digit_out {
    uint32_t x, y, w, h;
    uint32_t line;              /* Digit.line: text line, 0 at the top */
    int32_t label;
    char text[16];
    float conf;
    int reject;
    int space_before;           /* Digit.space_before: a word gap before it */
} digit_out;

/* A frame's JSON line up to its own fields: {"frame":N,["file":NAME,] */
static void json_frame_head(const nc_cam_frame *f)
{
    printf("{\"frame\":%" PRIu64 ",", f->index);
    if (f->name[0]) {
        fputs("\"file\":", stdout);
        nc_json_string(stdout, f->name);
        putchar(',');
    }
}

static void print_error(const cam_opts *o, const nc_cam_frame *f, const char *code,
                        const char *msg)
{
    if (o->format == FMT_JSONL) {
        json_frame_head(f);
        fputs("\"error\":{\"code\":", stdout);
        nc_json_string(stdout, code);
        fputs(",\"message\":", stdout);
        nc_json_string(stdout, msg);
        fputs("}}\n", stdout);
    } else {
        printf("frame %" PRIu64 ": error %s: %s\n", f->index, code, msg);
    }
    fprintf(stderr, "neocog: camera: frame %" PRIu64 "%s%s: %s: %s\n", f->index,
            f->name[0] ? " " : "", f->name, code, msg);
}

/* Apply --min-conf and --digits to the daemon's digits. */
static uint32_t shape_digits(const cam_opts *o, const Neocog__Result *res, digit_out *d,
                             int *count_ok)
{
    uint32_t n = 0;
    for (size_t i = 0; i < res->n_digits && n < MAX_DIGITS; i++) {
        const Neocog__Digit *dg = res->digits[i];
        const Neocog__Box *b = dg->box;
        digit_out *x = &d[n++];
        x->x = b ? b->x : 0;
        x->y = b ? b->y : 0;
        x->w = b ? b->width : 0;
        x->h = b ? b->height : 0;
        if (o->have_roi) {
            /* a daemon that skips Image.roi looked at the whole frame */
            uint64_t cx = x->x + x->w / 2, cy = x->y + x->h / 2;
            if (cx < o->roi_x || cx >= (uint64_t)o->roi_x + o->roi_w || cy < o->roi_y ||
                cy >= (uint64_t)o->roi_y + o->roi_h) {
                n--;
                continue;
            }
        }
        x->label = dg->label;
        x->conf = dg->confidence;
        x->line = dg->line;
        x->reject = dg->reject || dg->label < 0;
        x->space_before = dg->space_before;
        snprintf(x->text, sizeof x->text, "%s", x->reject ? "?" : dg->text ? dg->text : "?");
    }
    if (o->digits) {
        /* Too many (only from a daemon that skips expected_digits, or a
         * frame whose pieces could not be fitted): the least confident go,
         * order kept. */
        while (n > o->digits) {
            uint32_t worst = 0;
            for (uint32_t i = 1; i < n; i++)
                if (d[i].conf < d[worst].conf)
                    worst = i;
            memmove(d + worst, d + worst + 1, (n - worst - 1) * sizeof *d);
            n--;
        }
        *count_ok = n == o->digits;
    } else {
        *count_ok = 1;
    }
    return n;
}

static void print_frame(const cam_opts *o, const nc_cam_frame *f, const digit_out *d,
                        uint32_t n, int count_ok, uint64_t lat_ns, uint64_t age_ns,
                        const Neocog__Reply *rp)
{
    /* a text line break: "\n" in JSON, as Result.text has it; a space in
     * the one line per frame of txt */
    char text[MAX_DIGITS * 18 + 1];
    size_t used = 0;
    float conf = n ? 1.0f : 0.0f;
    int reject = n == 0 || !count_ok;
    for (uint32_t i = 0; i < n; i++) {
        if (i && d[i].line != d[i - 1].line)
            text[used++] = o->format == FMT_JSONL ? '\n' : ' ';
        else if (i && d[i].space_before)
            text[used++] = ' ';
        size_t l = strlen(d[i].text);
        memcpy(text + used, d[i].text, l);
        used += l;
        if (d[i].conf < conf)
            conf = d[i].conf;
        reject |= d[i].reject;
    }
    text[used] = '\0';
    if (o->format == FMT_JSONL) {
        json_frame_head(f);
        fputs("\"text\":", stdout);
        nc_json_string(stdout, text);
        printf(",\"count\":%u,\"count_ok\":%s,\"confidence\":%.4f,\"reject\":%s,"
               "\"latency_ms\":%.3f,\"age_ms\":%.3f", n, count_ok ? "true" : "false",
               (double)conf, reject ? "true" : "false", ms(lat_ns), ms(age_ns));
        if (rp->timing)
            printf(",\"server_us\":{\"queue\":%" PRIu64 ",\"compute\":%" PRIu64
                   ",\"prepare\":%" PRIu64 ",\"forward\":%" PRIu64 ",\"total\":%" PRIu64 "}",
                   rp->timing->queue_us, rp->timing->compute_us, rp->timing->prepare_us,
                   rp->timing->forward_us, rp->timing->total_us);
        fputs(",\"digits\":[", stdout);
        for (uint32_t i = 0; i < n; i++) {
            printf("%s{\"x\":%u,\"y\":%u,\"width\":%u,\"height\":%u,\"label\":%d,\"text\":",
                   i ? "," : "", d[i].x, d[i].y, d[i].w, d[i].h, d[i].label);
            nc_json_string(stdout, d[i].text);
            printf(",\"confidence\":%.4f,\"reject\":%s}", (double)d[i].conf,
                   d[i].reject ? "true" : "false");
        }
        fputs("]}\n", stdout);
    } else {
        printf("frame %" PRIu64 ": %s  (%u digit%s%s, min conf %.3f, %.2f ms)",
               f->index, n ? text : "-", n, n == 1 ? "" : "s",
               count_ok ? "" : ", count wrong", (double)conf, ms(lat_ns));
        for (uint32_t i = 0; i < n; i++)
            printf(" %s@%u,%u,%ux%u:%.3f", d[i].text, d[i].x, d[i].y, d[i].w, d[i].h,
                   (double)d[i].conf);
        putchar('\n');
    }
}

/* Recognise one frame.  0 done (answered or reported), < 0 the connection
 * is gone. */
static int do_frame(const cam_opts *o, nc_client *cl, const nc_cam_frame *f,
                    stats *st, digit_out *d)
{
    if (!st->t_first)
        st->t_first = f->t_read_ns;
    if (f->bad) {
        st->bad++;
        print_error(o, f, "DATA_LOSS", f->why);
        return 0;
    }
    Neocog__Image im = NEOCOG__IMAGE__INIT;
    Neocog__Box roi = NEOCOG__BOX__INIT;
    im.segment = 1;
    im.expected_digits = o->digits;
    if (o->have_roi) {
        roi.x = o->roi_x;
        roi.y = o->roi_y;
        roi.width = o->roi_w;
        roi.height = o->roi_h;
        im.roi = &roi;
    }
    if (f->enc == NC_CAM_ENC_GREY) {
        im.format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY;
        im.width = f->width;
        im.height = f->height;
    } else {
        /* JPEG (and a sequence's PNG or PGM) as it came: the daemon decodes
         * it, and the frame crosses the socket at its compressed size. */
        im.format = NEOCOG__IMAGE_FORMAT__FORMAT_AUTO;
    }
    im.data.data = (uint8_t *)f->data;
    im.data.len = f->len;
    Neocog__Image *ims[1] = { &im };
    Neocog__RecognizeRequest rr = NEOCOG__RECOGNIZE_REQUEST__INIT;
    rr.model = o->model;
    rr.top_k = 1;
    rr.min_confidence = o->min_conf;
    if (o->charset)
        rr.charset = (char *)o->charset;
    rr.n_images = 1;
    rr.images = ims;
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    rq.deadline_us = o->deadline_us;
    rq.priority = o->priority;
    rq.kind_case = NEOCOG__REQUEST__KIND_RECOGNIZE;
    rq.recognize = &rr;
    nc_msg *m = NULL;
    uint64_t id = 0, t0 = now_ns();
    int r = nc_client_send_request(cl, &rq, &id);
    if (r >= 0)
        /* the library's own default when --timeout is not given */
        r = nc_client_receive_id(cl, id, o->timeout_ms > 0 ? o->timeout_ms : 30000, &m);
    uint64_t t1 = now_ns();
    if (r == -EMSGSIZE) {
        st->bad++;
        print_error(o, f, "RESOURCE_EXHAUSTED", nc_client_errmsg(cl));
        return 0;
    }
    if (r < 0) {
        fprintf(stderr, "neocog: camera: frame %" PRIu64 ": %s\n", f->index,
                nc_client_errmsg(cl));
        return r;
    }
    st->frames++;
    st->win_frames++;
    st->t_last = t1;
    nc_hist_record(&st->all, t1 - t0);
    nc_hist_record(&st->window, t1 - t0);
    const Neocog__Reply *rp = nc_msg_reply(m);
    if (rp->timing) {
        nc_hist_record(&st->prepare, rp->timing->prepare_us * 1000u);
        nc_hist_record(&st->forward, rp->timing->forward_us * 1000u);
    }
    const Neocog__Result *res = NULL;
    const char *code = NULL, *msg = NULL;
    if (rp->code != NEOCOG__CODE__OK) {
        code = nc_msg_code_name(rp->code);
        msg = rp->message ? rp->message : "";
    } else if (rp->kind_case != NEOCOG__REPLY__KIND_RECOGNIZE || rp->recognize->n_results != 1) {
        code = "INTERNAL";
        msg = "the reply does not hold one result";
    } else if ((res = rp->recognize->results[0])->code != NEOCOG__CODE__OK) {
        code = nc_msg_code_name(res->code);
        msg = res->message ? res->message : "";
    }
    if (code) {
        st->failed++;
        print_error(o, f, code, msg);
    } else {
        int count_ok;
        uint32_t n = shape_digits(o, res, d, &count_ok);
        st->ok++;
        st->digits += n;
        for (uint32_t i = 0; i < n; i++)
            st->rejected += d[i].reject != 0;
        print_frame(o, f, d, n, count_ok, t1 - t0, t1 - f->t_read_ns, rp);
    }
    nc_msg_free(m);
    return 0;
}

/* ---- main --------------------------------------------------------------------- */

static atomic_int stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&stop_flag, 1);
}

int nc_camera_main(int argc, char **argv, int cmd)
{
    cam_opts o;
    int pr = nc_camera_parse_args(argc, argv, cmd, &o);
    if (pr)
        return pr > 0 ? NC_CLI_EXIT_OK : NC_CLI_EXIT_USAGE;
    char addr[4200];
    if (o.server)
        snprintf(addr, sizeof addr, "%s", o.server);
    else
        nc_client_default_addr(addr, sizeof addr);

    char why[256] = "";
    nc_cam_source *src = NULL;
    if (nc_cam_source_open(&o.src, &src, why, sizeof why) < 0) {
        fprintf(stderr, "neocog: camera: %s\n", why);
        return NC_CLI_EXIT_FAIL;
    }
    nc_client_options co = { .timeout_ms = o.timeout_ms, .max_in_flight = 1 };
    nc_client *cl = NULL;
    if (nc_client_connect(addr, &co, &cl) < 0) {
        fprintf(stderr, "neocog: camera: %s\n", nc_client_errmsg(NULL));
        nc_cam_source_close(src);
        return NC_CLI_EXIT_FAIL;
    }

    /* SIGINT/SIGTERM end the stream cleanly (summary and all); no
     * SA_RESTART, so a blocked wait returns and sees the flag. */
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    static mailbox mb;          /* static: zeroed, and off the stack */
    memset(&mb, 0, sizeof mb);
    pthread_mutex_init(&mb.mu, NULL);
    pthread_cond_init(&mb.cv, NULL);
    for (int i = 0; i < N_BUFFERS; i++)
        mb.free_list[mb.n_free++] = &mb.frames[i];
    mb.drop = o.drop >= 0 ? o.drop : (nc_cam_source_live(src) || o.fps > 0);

    stats *st = calloc(1, sizeof *st);
    digit_out *d = calloc(MAX_DIGITS, sizeof *d);
    int rc = NC_CLI_EXIT_OK;
    int out_failed = 0;         /* stdout failed (and was reported) */
    if (!st || !d) {
        fprintf(stderr, "neocog: camera: out of memory\n");
        rc = NC_CLI_EXIT_FAIL;
        goto out;
    }
    nc_hist_init(&st->all);
    nc_hist_init(&st->window);
    nc_hist_init(&st->prepare);
    nc_hist_init(&st->forward);
    int tty = isatty(2);
    int live = o.stats || tty;

    reader_ctx rctx = { &mb, src, &o, &stop_flag };
    pthread_t reader;
    if (pthread_create(&reader, NULL, reader_main, &rctx) != 0) {
        fprintf(stderr, "neocog: camera: cannot start the reader thread\n");
        rc = NC_CLI_EXIT_FAIL;
        goto out;
    }
    int lost = 0;
    for (;;) {
        pthread_mutex_lock(&mb.mu);
        while (!mb.slot && !mb.done && !atomic_load(&stop_flag)) {
            /* Wake every 100 ms for the live line and the stop flag. */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 100000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&mb.cv, &mb.mu, &ts);
            if (live && !mb.slot) {
                uint64_t dropped = mb.dropped;
                pthread_mutex_unlock(&mb.mu);
                live_stats(st, dropped, tty);
                pthread_mutex_lock(&mb.mu);
            }
        }
        nc_cam_frame *f = atomic_load(&stop_flag) ? NULL : mb.slot;
        mb.slot = f ? NULL : mb.slot;
        pthread_cond_broadcast(&mb.cv);
        pthread_mutex_unlock(&mb.mu);
        if (!f)
            break;
        int r = do_frame(&o, cl, f, st, d);
        /* Each frame's line now, not when stdio's block buffer fills: a
         * program reading the pipe acts on the frame it is shown. */
        if (fflush(stdout) != 0) {
            fprintf(stderr, "neocog: camera: writing the output: %s\n", strerror(errno));
            out_failed = 1;
        }
        pthread_mutex_lock(&mb.mu);
        mb.free_list[mb.n_free++] = f;
        uint64_t dropped = mb.dropped;
        pthread_cond_broadcast(&mb.cv);
        pthread_mutex_unlock(&mb.mu);
        if (live)
            live_stats(st, dropped, tty);
        if (r < 0 || out_failed) {
            lost = 1;
            break;
        }
    }
    /* The reader may wait on a free buffer or a full slot: wake it. */
    atomic_store(&stop_flag, 1);
    pthread_mutex_lock(&mb.mu);
    pthread_cond_broadcast(&mb.cv);
    pthread_mutex_unlock(&mb.mu);
    pthread_join(reader, NULL);
    if (st->live_line)
        fputc('\n', stderr);

    double secs = st->t_last > st->t_first ? (double)(st->t_last - st->t_first) / 1e9 : 0;
    double fps = secs > 0 ? (double)st->frames / secs : 0;
    uint64_t dropped = mb.dropped + nc_cam_source_device_drops(src);
    uint64_t p50 = nc_hist_percentile(&st->all, 50), p99 = nc_hist_percentile(&st->all, 99);
    if (o.format == FMT_JSONL)
        printf("{\"summary\":{\"source\":\"%s\",\"frames\":%" PRIu64 ",\"recognised\":%" PRIu64
               ",\"failed\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"dropped\":%" PRIu64
               ",\"skipped_bytes\":%" PRIu64 ",\"digits\":%" PRIu64 ",\"rejected\":%" PRIu64
               ",\"latency_ms\":{\"p50\":%.3f,\"p99\":%.3f,\"mean\":%.3f,\"max\":%.3f}"
               ",\"server_ms\":{\"prepare\":{\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f}"
               ",\"forward\":{\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f}}"
               ",\"fps\":%.2f,\"seconds\":%.3f}}\n",
               nc_cam_kind_name(nc_cam_source_kind(src)), mb.read + nc_cam_source_device_drops(src),
               st->ok, st->failed, st->bad, dropped, nc_cam_source_skipped(src), st->digits,
               st->rejected, ms(p50), ms(p99), nc_hist_mean(&st->all) / 1e6, ms(st->all.max),
               ms(nc_hist_percentile(&st->prepare, 50)), ms(nc_hist_percentile(&st->prepare, 99)),
               ms(st->prepare.max), ms(nc_hist_percentile(&st->forward, 50)),
               ms(nc_hist_percentile(&st->forward, 99)), ms(st->forward.max), fps, secs);
    fprintf(stderr, "neocog: camera: %" PRIu64 " frames: %" PRIu64 " recognised, %" PRIu64
            " failed, %" PRIu64 " bad, %" PRIu64 " dropped; %" PRIu64 " digits (%" PRIu64
            " rejected as '?'); latency p50 %.2f ms, p99 %.2f ms; %.1f fps over %.2f s\n",
            mb.read + nc_cam_source_device_drops(src), st->ok, st->failed, st->bad, dropped,
            st->digits, st->rejected, ms(p50), ms(p99), fps, secs);
    if (st->prepare.count)
        fprintf(stderr, "neocog: camera: in the daemon, prepare (decode, segment, prep) p50 %.2f "
                "ms, p99 %.2f ms; networks p50 %.2f ms, p99 %.2f ms\n",
                ms(nc_hist_percentile(&st->prepare, 50)), ms(nc_hist_percentile(&st->prepare, 99)),
                ms(nc_hist_percentile(&st->forward, 50)), ms(nc_hist_percentile(&st->forward, 99)));
    if (nc_cam_source_skipped(src))
        fprintf(stderr, "neocog: camera: %" PRIu64 " bytes between frames skipped\n",
                nc_cam_source_skipped(src));
    if (mb.failed) {
        fprintf(stderr, "neocog: camera: the source failed: %s\n", mb.why);
        rc = NC_CLI_EXIT_FAIL;
    }
    if (lost)
        rc = NC_CLI_EXIT_FAIL;
out:
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    for (int i = 0; i < N_BUFFERS; i++)
        nc_cam_frame_free(&mb.frames[i]);
    pthread_mutex_destroy(&mb.mu);
    pthread_cond_destroy(&mb.cv);
    free(d);
    free(st);
    nc_client_free(cl);
    nc_cam_source_close(src);
    if (fflush(stdout) != 0 && !out_failed) {
        fprintf(stderr, "neocog: camera: writing the output: %s\n", strerror(errno));
        rc = NC_CLI_EXIT_FAIL;
    }
    return rc;
}

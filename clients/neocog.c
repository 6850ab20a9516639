/* clients/neocog.c — the `neocog` command: main, `recognize` and `status`
 * (`bench` is in bench.c, `camera` in camera.c).
 *
 * Layer: clients.  Talks to neocogd only through libneocog.  stdout carries
 * the results (txt, TSV or JSON), stderr the problems, one line each,
 * prefixed "neocog: ".  Exit status: 0 every file recognised, 1 anything
 * failed (a file, a request, the connection), 2 usage. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "camera.h"
#include "cli.h"
#include "fileio.h"
#include "frame.h"
#include "nc_config.h"
#include "neocog_client.h"
#include "reply_json.h"

/* Requests kept in flight by `recognize`: enough to hide the round trip
 * behind the daemon's work, far below its per-connection limit (128). */
#define RECOGNIZE_WINDOW 32u

/* One input file and, once it came, its reply. */
typedef struct input {
    const char *name;           /* as given; "-" is stdin */
    uint8_t *data;
    size_t len;
    uint32_t width, height;     /* from the header */
    int failed;                 /* not sent: reading or sniffing failed, or
                                   sending did (reported on stderr) */
    const char *fail_code;      /* for the JSON output: the code and why */
    char why[320];
    uint64_t id;
    nc_msg *reply;
} input;

/* ---- output of one image ------------------------------------------------------- */

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* Most lines a segmented image has in the output (the daemon's 64 digits
 * could make 64). */
#define MAX_LINES 64

/* " (rejected: ...)" or " (confidence C)" after an answer's text: the
 * reason and, when a threshold decided, that threshold. */
static void print_verdict(int reject, Neocog__RejectReason reason, float threshold, float conf)
{
    if (!reject) {
        printf(" (confidence %.3f)", conf);
        return;
    }
    switch (reason) {
    case NEOCOG__REJECT_REASON__REJECT_BELOW_THRESHOLD:
        printf(" (rejected: confidence %.3f below threshold %.3f)", conf, threshold);
        break;
    case NEOCOG__REJECT_REASON__REJECT_AMBIGUOUS_SEGMENTATION:
        printf(" (rejected: ambiguous segmentation, confidence %.3f below threshold %.3f)",
               conf, threshold);
        break;
    case NEOCOG__REJECT_REASON__REJECT_NO_INK:
    case NEOCOG__REJECT_REASON__REJECT_NO_RESPONSE:
        printf(" (rejected: %s)", nc_client_reject_reason_text(reason));
        break;
    default:
        printf(" (rejected, confidence %.3f)", conf);
        break;
    }
}

static void print_top(Neocog__Candidate *const *top, size_t n)
{
    printf("  top:");
    for (size_t i = 0; i < n; i++)
        printf("%s %s %.3f", i ? "," : "", or_empty(top[i]->text), top[i]->score);
}

/* One line per file; a segmented image's text lines each on a line of its
 * own ("file: 4021", "file: 3587 (confidence ...)"), then, with --top K > 1,
 * each digit's candidates, and each rejected digit with its reason. */
static void print_txt(const input *in, const Neocog__Result *res, uint32_t top_k)
{
    nc_result_line lines[MAX_LINES];
    size_t n_lines = nc_result_lines(res, lines, MAX_LINES);
    if (n_lines > MAX_LINES)
        n_lines = MAX_LINES;
    if (n_lines > 1) {
        char text[64 * 16 + 1];
        for (size_t l = 0; l + 1 < n_lines; l++) {
            nc_result_line_text(res, &lines[l], text, sizeof text);
            printf("%s: %s\n", in->name, text);
        }
        nc_result_line_text(res, &lines[n_lines - 1], text, sizeof text);
        printf("%s: %s", in->name, text);
    } else {
        printf("%s: %s", in->name, or_empty(res->text));
    }
    print_verdict(res->reject, res->reject_reason, res->threshold, res->confidence);
    if (top_k > 1 && res->n_top)
        print_top(res->top, res->n_top);
    putchar('\n');
    for (size_t i = 0; i < res->n_digits; i++) {
        const Neocog__Digit *d = res->digits[i];
        if (!(top_k > 1 && d->n_top) && !d->reject)
            continue;
        const Neocog__Box *b = d->box;
        printf("  digit %zu (line %u, %u,%u %ux%u): %s", i + 1, d->line + 1, b ? b->x : 0,
               b ? b->y : 0, b ? b->width : 0, b ? b->height : 0, or_empty(d->text));
        print_verdict(d->reject, d->reject_reason, d->threshold, d->confidence);
        if (d->n_top)
            print_top(d->top, d->n_top);
        putchar('\n');
    }
}

/* A reason for the TSV and JSON outputs: NULL when not rejected. */
static const char *reason_text(int reject, Neocog__RejectReason r)
{
    if (!reject)
        return NULL;
    return r == NEOCOG__REJECT_REASON__REJECT_NONE ? "rejected" : nc_client_reject_reason_text(r);
}

/* Tesseract's TSV: page (1), block (2), paragraph (3), line (4), word (5).
 * An image is one page holding one block and paragraph; a whole image is
 * one line holding one word, the digit; a segmented image has a line per
 * text line (core/segment's lines, top to bottom), each one word: its
 * string, boxed by the union of its characters, with its weakest
 * character's confidence so a misread digit shows.  The two columns after
 * text say why a word is rejected and the threshold in force.
 * Per-character boxes are in the JSON output. */
static void print_tsv(const input *in, int page, const Neocog__Result *res)
{
    nc_cli_tsv_row(stdout, 1, page, 0, 0, 0, 0, 0, 0, in->width, in->height, -1, "", NULL, -1);
    const double thr = 100.0 * res->threshold;
    if (!res->n_digits) {
        if (res->text && !*res->text)
            return;     /* a segmented image with no ink: a page and no words */
        const uint32_t w = in->width, h = in->height;
        nc_cli_tsv_row(stdout, 2, page, 1, 0, 0, 0, 0, 0, w, h, -1, "", NULL, -1);
        nc_cli_tsv_row(stdout, 3, page, 1, 1, 0, 0, 0, 0, w, h, -1, "", NULL, -1);
        nc_cli_tsv_row(stdout, 4, page, 1, 1, 1, 0, 0, 0, w, h, -1, "", NULL, -1);
        nc_cli_tsv_row(stdout, 5, page, 1, 1, 1, 1, 0, 0, w, h, 100.0 * res->confidence,
                       or_empty(res->text), reason_text(res->reject, res->reject_reason), thr);
        return;
    }
    nc_result_line lines[MAX_LINES];
    size_t n = nc_result_lines(res, lines, MAX_LINES);
    if (n > MAX_LINES)
        n = MAX_LINES;
    uint32_t x0 = UINT32_MAX, y0 = UINT32_MAX, x1 = 0, y1 = 0;
    for (size_t l = 0; l < n; l++) {
        if (lines[l].x0 < x0) x0 = lines[l].x0;
        if (lines[l].y0 < y0) y0 = lines[l].y0;
        if (lines[l].x1 > x1) x1 = lines[l].x1;
        if (lines[l].y1 > y1) y1 = lines[l].y1;
    }
    if (x0 > x1 || y0 > y1)
        x0 = x1 = y0 = y1 = 0;
    nc_cli_tsv_row(stdout, 2, page, 1, 0, 0, 0, x0, y0, x1 - x0, y1 - y0, -1, "", NULL, -1);
    nc_cli_tsv_row(stdout, 3, page, 1, 1, 0, 0, x0, y0, x1 - x0, y1 - y0, -1, "", NULL, -1);
    for (size_t l = 0; l < n; l++) {
        const nc_result_line *ln = &lines[l];
        char text[64 * 16 + 1];
        nc_result_line_text(res, ln, text, sizeof text);
        const uint32_t w = ln->x1 - ln->x0, h = ln->y1 - ln->y0;
        nc_cli_tsv_row(stdout, 4, page, 1, 1, (int)l + 1, 0, ln->x0, ln->y0, w, h, -1, "",
                       NULL, -1);
        nc_cli_tsv_row(stdout, 5, page, 1, 1, (int)l + 1, 1, ln->x0, ln->y0, w, h,
                       100.0 * ln->confidence, text, reason_text(ln->reject, ln->reject_reason),
                       thr);
    }
}

/* One file's object: its name and size, then the reply's members in the
 * one schema neocogd's HTTP /v1/recognize answers with (proto/reply_json.h). */
static void print_json(const input *in, const Neocog__Reply *rp, const Neocog__Result *res)
{
    fputs("{\"file\":", stdout);
    nc_json_string(stdout, in->name);
    printf(",\"width\":%u,\"height\":%u,", in->width, in->height);
    nc_json_result_members(stdout, rp, res);
    putchar('}');
}

static void print_json_error(const input *in, const char *code, const char *msg)
{
    fputs("{\"file\":", stdout);
    nc_json_string(stdout, in->name);
    putchar(',');
    nc_json_error_members(stdout, code, msg);
    putchar('}');
}

/* Print file i (its reply or its failure) in the chosen format; 0 when it
 * was recognised, 1 when it failed. */
static int emit(const nc_cli_args *a, input *in, int index, int *json_first)
{
    const char *code = NULL, *msg = NULL;
    const Neocog__Reply *rp = in->reply ? nc_msg_reply(in->reply) : NULL;
    const Neocog__Result *res = NULL;
    if (in->failed) {
        code = in->fail_code ? in->fail_code : "UNAVAILABLE";
        msg = in->why[0] ? in->why : "not sent";
    } else if (!rp) {
        code = "UNAVAILABLE";
        msg = "no reply";
    } else if (rp->code != NEOCOG__CODE__OK) {
        code = nc_msg_code_name(rp->code);
        msg = or_empty(rp->message);
    } else if (rp->kind_case != NEOCOG__REPLY__KIND_RECOGNIZE || rp->recognize->n_results != 1) {
        code = "INTERNAL";
        msg = "the reply does not hold one result";
    } else {
        res = rp->recognize->results[0];
        if (res->code != NEOCOG__CODE__OK) {
            code = nc_msg_code_name(res->code);
            msg = or_empty(res->message);
            res = NULL;
        }
    }
    if (a->format == NC_CLI_FORMAT_JSON) {
        fputs(*json_first ? "[\n" : ",\n", stdout);
        *json_first = 0;
        if (res)
            print_json(in, rp, res);
        else
            print_json_error(in, code, msg);
    }
    if (!res) {
        /* Files that failed to load were reported when it happened. */
        if (!in->failed)
            fprintf(stderr, "neocog: %s: %s: %s\n", in->name, code, msg);
        return 1;
    }
    if (a->format == NC_CLI_FORMAT_TXT)
        print_txt(in, res, a->top_k);
    else if (a->format == NC_CLI_FORMAT_TSV)
        print_tsv(in, index + 1, res);
    return 0;
}

/* ---- recognize ----------------------------------------------------------------- */

/* A file that is not sent: why, on stderr now and in the JSON output. */
static void fail_input(input *in, const char *code, const char *fmt, const char *detail)
{
    in->failed = 1;
    in->fail_code = code;
    snprintf(in->why, sizeof in->why, fmt, in->name, detail);
    fprintf(stderr, "neocog: %s\n", in->why);
}

static int load_input(input *in)
{
    /* stdin through /dev/stdin: pipes, files and terminals alike. */
    const char *path = strcmp(in->name, "-") ? in->name : "/dev/stdin";
    int r = nc_file_read(path, NC_FRAME_DEFAULT_MAX - 1024, &in->data, &in->len);
    if (r == -EFBIG) {
        char limit[64];
        snprintf(limit, sizeof limit, "%u MiB", NC_FRAME_DEFAULT_MAX >> 20);
        fail_input(in, "INVALID_ARGUMENT", "%s: larger than the %s frame limit", limit);
        return r;
    }
    if (r < 0) {
        fail_input(in, r == -ENOENT ? "NOT_FOUND" : "INVALID_ARGUMENT", "cannot read %s: %s",
                   strerror(-r));
        return r;
    }
    nc_cli_image_kind kind;
    if (nc_cli_sniff_image(in->data, in->len, &kind, &in->width, &in->height) < 0) {
        fail_input(in, "INVALID_ARGUMENT", "%s: %s", "not a binary PGM, PNG or JPEG image");
        return -EBADMSG;
    }
    return 0;
}

static int cmd_recognize(const nc_cli_args *a, nc_client *cl)
{
    int n = a->n_files, fails = 0;
    input *in = calloc((size_t)n, sizeof *in);
    if (!in) {
        fprintf(stderr, "neocog: out of memory\n");
        return NC_CLI_EXIT_FAIL;
    }
    nc_client_recognize_opts o = { .model = a->model, .top_k = a->top_k,
                                   .deadline_us = a->deadline_us, .priority = a->priority,
                                   .min_confidence = a->min_confidence,
                                   .charset = a->charset };
    int next_send = 0, next_print = 0, json_first = 1, broken = 0;
    if (a->format == NC_CLI_FORMAT_TSV)
        nc_cli_tsv_header(stdout);
    /* Send ahead up to the window, print strictly in input order as replies
     * (which may come out of order) fill the gaps. */
    while (next_print < n) {
        if (!broken && next_send < n && nc_client_in_flight(cl) < RECOGNIZE_WINDOW) {
            input *f = &in[next_send++];
            f->name = a->files[next_send - 1];
            if (load_input(f) == 0) {
                nc_client_image im = { .format = NEOCOG__IMAGE_FORMAT__FORMAT_AUTO,
                                       .data = f->data, .len = f->len,
                                       .segment = a->segment };
                int r = nc_client_send_recognize(cl, &o, &im, 1, &f->id);
                if (r < 0) {
                    fail_input(f, r == -EMSGSIZE ? "RESOURCE_EXHAUSTED" : "UNAVAILABLE",
                               "%s: not sent: %s", nc_client_errmsg(cl));
                    broken = r != -EMSGSIZE;
                }
            }
            free(f->data);
            f->data = NULL;
            continue;
        }
        /* Print whatever is complete at the head. */
        while (next_print < next_send &&
               (in[next_print].failed || in[next_print].reply)) {
            fails += emit(a, &in[next_print], next_print, &json_first);
            nc_msg_free(in[next_print].reply);
            in[next_print].reply = NULL;
            next_print++;
        }
        if (next_print >= n)
            break;
        if (nc_client_in_flight(cl) == 0) {
            if (broken) {
                /* Nothing more will come: the rest were never sent. */
                for (; next_print < n; next_print++) {
                    input *f = &in[next_print];
                    f->name = a->files[next_print];
                    if (!f->failed) {
                        f->failed = 1;
                        snprintf(f->why, sizeof f->why, "%s: not sent: the connection to "
                                 "the daemon broke", f->name);
                    }
                    fails += emit(a, f, next_print, &json_first);
                }
            }
            continue;
        }
        nc_msg *m;
        int r = nc_client_receive(cl, a->timeout_ms ? a->timeout_ms : 30000, &m);
        if (r < 0) {
            /* The connection is gone or the daemon stalled: what is
             * outstanding will not be answered and the rest is not sent. */
            fprintf(stderr, "neocog: %s\n", nc_client_errmsg(cl));
            for (; next_print < n; next_print++) {
                input *f = &in[next_print];
                f->name = a->files[next_print];
                if (!f->reply && !f->failed) {
                    f->failed = 1;
                    snprintf(f->why, sizeof f->why, "%s: no reply: %s", f->name,
                             nc_client_errmsg(cl));
                }
                fails += emit(a, f, next_print, &json_first);
            }
            break;
        }
        uint64_t id = nc_msg_reply(m)->id;
        int placed = 0;
        for (int i = next_print; i < next_send; i++)
            if (in[i].id == id && !in[i].failed) {
                in[i].reply = m;
                placed = 1;
                break;
            }
        if (!placed)
            nc_msg_free(m);     /* cannot happen: the library checks ids */
    }
    if (a->format == NC_CLI_FORMAT_JSON)
        fputs(json_first ? "[]\n" : "\n]\n", stdout);
    for (int i = 0; i < n; i++) {
        free(in[i].data);
        nc_msg_free(in[i].reply);
    }
    free(in);
    return fails ? NC_CLI_EXIT_FAIL : NC_CLI_EXIT_OK;
}

/* ---- status -------------------------------------------------------------------- */

static void print_model_txt(const Neocog__ModelInfo *mi)
{
    const char *kind = mi->model == NEOCOG__MODEL__MODEL_CNN ? "cnn"
                     : mi->model == NEOCOG__MODEL__MODEL_NEOCOGNITRON ? "neocognitron"
                     : mi->model == NEOCOG__MODEL__MODEL_CHARS ? "chars" : "?";
    printf("  %-13s %s  %s\n", kind, mi->loaded ? "loaded" : "NOT LOADED", or_empty(mi->path));
    if (mi->error && *mi->error)
        printf("  %-13s error: %s\n", "", mi->error);
    if (mi->architecture && *mi->architecture)
        printf("  %-13s %s, input %u, %zu classes\n", "", mi->architecture, mi->input_size,
               mi->n_labels);
    if ((mi->data && *mi->data) || mi->epochs) {
        printf("  %-13s trained on %s", "", mi->data && *mi->data ? mi->data : "?");
        /* A committee file is bundled, not trained: it records 0 epochs of its own
         * (its members' records hold theirs). */
        if (mi->epochs)
            printf(", %u epochs", mi->epochs);
        if (mi->test_error >= 0)
            printf(", test error %.2f%%%s%s", 100.0 * mi->test_error,
                   mi->test_set && *mi->test_set ? " on " : "", or_empty(mi->test_set));
        putchar('\n');
    }
    if (mi->loaded) {
        /* the minimum confidence answers get unless a request names one */
        printf("  %-13s reject threshold ", "");
        if (mi->reject_threshold > 0)
            printf("%.3f", mi->reject_threshold);
        else
            printf("none");
        if (mi->ensemble_reject_threshold > 0)
            printf(", ensemble %.3f", mi->ensemble_reject_threshold);
        putchar('\n');
    }
    if (mi->loaded_at_unix) {
        time_t t = (time_t)mi->loaded_at_unix;
        struct tm tm;
        char when[64];
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime_r(&t, &tm));
        printf("  %-13s loaded %s\n", "", when);
    }
}

static void print_model_json(const Neocog__ModelInfo *mi)
{
    printf("{\"model\":");
    nc_json_string(stdout, nc_client_model_name(mi->model));
    printf(",\"loaded\":%s,\"path\":", mi->loaded ? "true" : "false");
    nc_json_string(stdout, or_empty(mi->path));
    fputs(",\"error\":", stdout); nc_json_string(stdout, or_empty(mi->error));
    fputs(",\"architecture\":", stdout); nc_json_string(stdout, or_empty(mi->architecture));
    fputs(",\"labels\":[", stdout);
    for (size_t i = 0; i < mi->n_labels; i++) {
        if (i)
            putchar(',');
        nc_json_string(stdout, mi->labels[i]);
    }
    printf("],\"input_size\":%u,\"data\":", mi->input_size);
    nc_json_string(stdout, or_empty(mi->data));
    fputs(",\"created\":", stdout); nc_json_string(stdout, or_empty(mi->created));
    printf(",\"epochs\":%u,\"test_error\":", mi->epochs);
    nc_json_number(stdout, mi->test_error);
    fputs(",\"test_set\":", stdout); nc_json_string(stdout, or_empty(mi->test_set));
    printf(",\"loaded_at_unix\":%" PRIu64 ",\"reject_threshold\":", mi->loaded_at_unix);
    nc_json_number(stdout, mi->reject_threshold);
    fputs(",\"ensemble_reject_threshold\":", stdout);
    nc_json_number(stdout, mi->ensemble_reject_threshold);
    putchar('}');
}

static int cmd_status(const nc_cli_args *a, nc_client *cl, const char *addr)
{
    nc_msg *m;
    if (nc_client_status(cl, &m) < 0) {
        fprintf(stderr, "neocog: %s\n", nc_client_errmsg(cl));
        return NC_CLI_EXIT_FAIL;
    }
    const Neocog__Reply *rp = nc_msg_reply(m);
    if (rp->code != NEOCOG__CODE__OK || rp->kind_case != NEOCOG__REPLY__KIND_STATUS) {
        fprintf(stderr, "neocog: status: %s: %s\n", nc_msg_code_name(rp->code),
                or_empty(rp->message));
        nc_msg_free(m);
        return NC_CLI_EXIT_FAIL;
    }
    const Neocog__StatusReply *s = rp->status;
    const Neocog__HealthReply *h = s->health;
    int ready = h && h->ready;
    if (a->format == NC_CLI_FORMAT_JSON) {
        fputs("{\"server\":", stdout); nc_json_string(stdout, addr);
        fputs(",\"version\":", stdout); nc_json_string(stdout, or_empty(s->version));
        fputs(",\"backend\":", stdout); nc_json_string(stdout, or_empty(s->backend));
        printf(",\"uptime_s\":%" PRIu64 ",\"live\":%s,\"ready\":%s,\"draining\":%s,\"state\":",
               s->uptime_s, h && h->live ? "true" : "false", ready ? "true" : "false",
               h && h->draining ? "true" : "false");
        nc_json_string(stdout, h ? or_empty(h->state) : "");
        printf(",\"workers\":%u,\"priority_workers\":%u,\"connections\":%u,\"queue_depth\":%u,"
               "\"queue_capacity\":%u,\"max_batch\":%u,\"max_queue_delay_us\":%" PRIu64
               ",\"requests_total\":%" PRIu64 ",\"images_total\":%" PRIu64
               ",\"batches_total\":%" PRIu64
               ",\"max_images_per_request\":%u,\"max_frame_bytes\":%u,\"last_reload\":",
               s->workers, s->priority_workers, s->connections, s->queue_depth, s->queue_capacity,
               s->max_batch, s->max_queue_delay_us, s->requests_total, s->images_total,
               s->batches_total, s->max_images_per_request, s->max_frame_bytes);
        nc_json_string(stdout, or_empty(s->last_reload));
        fputs(",\"models\":[", stdout);
        for (size_t i = 0; i < s->n_models; i++) {
            if (i)
                putchar(',');
            print_model_json(s->models[i]);
        }
        fputs("]}\n", stdout);
    } else {
        uint64_t up = s->uptime_s;
        printf("%-16s %s\n", "server", addr);
        printf("%-16s %s\n", "version", or_empty(s->version));
        printf("%-16s %s (%s%s%s)\n", "state", h ? or_empty(h->state) : "?",
               h && h->live ? "live" : "not live", ready ? ", ready" : ", NOT READY",
               h && h->draining ? ", draining" : "");
        printf("%-16s %s\n", "backend", or_empty(s->backend));
        printf("%-16s %" PRIu64 "d %02" PRIu64 ":%02" PRIu64 ":%02" PRIu64 "\n", "uptime",
               up / 86400, up / 3600 % 24, up / 60 % 60, up % 60);
        printf("%-16s %u (+ %u for high priority only) a model\n", "workers", s->workers,
               s->priority_workers);
        printf("%-16s %u\n", "connections", s->connections);
        printf("%-16s %u / %u images\n", "queue", s->queue_depth, s->queue_capacity);
        printf("%-16s max %u images, max delay %" PRIu64 " us\n", "batching", s->max_batch,
               s->max_queue_delay_us);
        printf("%-16s %u images/request, %u bytes/frame\n", "limits",
               s->max_images_per_request, s->max_frame_bytes);
        printf("%-16s %" PRIu64 "\n", "requests", s->requests_total);
        printf("%-16s %" PRIu64 "\n", "images", s->images_total);
        printf("%-16s %" PRIu64, "batches", s->batches_total);
        if (s->batches_total)
            printf(" (mean %.2f images)", (double)s->images_total / (double)s->batches_total);
        putchar('\n');
        if (s->last_reload && *s->last_reload)
            printf("%-16s %s\n", "last reload", s->last_reload);
        printf("models\n");
        for (size_t i = 0; i < s->n_models; i++)
            print_model_txt(s->models[i]);
    }
    nc_msg_free(m);
    /* A script asking "is it up?" wants the answer in the exit status. */
    if (!ready)
        fprintf(stderr, "neocog: the daemon is not ready\n");
    return ready ? NC_CLI_EXIT_OK : NC_CLI_EXIT_FAIL;
}

/* ---- main ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    /* `camera` has options of its own (camera_opts.c parses them), so it is
     * picked out before the shared parser sees the command line. */
    int cam = nc_camera_command_index(argc, argv);
    if (cam > 0)
        return nc_camera_main(argc, argv, cam);
    nc_cli_args a;
    char why[256];
    if (nc_cli_parse(argc, argv, &a, why, sizeof why) < 0) {
        fprintf(stderr, "neocog: %s (try --help)\n", why);
        return NC_CLI_EXIT_USAGE;
    }
    if (a.cmd == NC_CLI_CMD_HELP) {
        if (a.help_cmd == NC_CLI_CMD_CAMERA) {
            /* `neocog help camera`: camera_opts.c holds its options */
            char *help_argv[] = { argv[0], (char *)"camera", (char *)"--help", NULL };
            return nc_camera_main(3, help_argv, 1);
        }
        nc_cli_usage_command(stdout, a.help_cmd);
        return NC_CLI_EXIT_OK;
    }
    if (a.cmd == NC_CLI_CMD_VERSION) {
        printf("neocog %s\n", NC_VERSION);
        return NC_CLI_EXIT_OK;
    }
    char addr[4200];
    if (a.server)
        snprintf(addr, sizeof addr, "%s", a.server);
    else
        nc_client_default_addr(addr, sizeof addr);
    if (a.cmd == NC_CLI_CMD_BENCH)
        return nc_bench_run(&a, addr);

    nc_client_options o = { .timeout_ms = a.timeout_ms, .max_in_flight = RECOGNIZE_WINDOW };
    nc_client *cl;
    if (nc_client_connect(addr, &o, &cl) < 0) {
        fprintf(stderr, "neocog: %s\n", nc_client_errmsg(NULL));
        return NC_CLI_EXIT_FAIL;
    }
    int rc = a.cmd == NC_CLI_CMD_STATUS ? cmd_status(&a, cl, addr) : cmd_recognize(&a, cl);
    nc_client_free(cl);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "neocog: writing the output: %s\n", strerror(errno));
        rc = NC_CLI_EXIT_FAIL;
    }
    return rc;
}

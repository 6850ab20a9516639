/* clients/cli.h — the pure parts of the `neocog` command line: argument
 * parsing, image sniffing, output escaping, latency statistics.
 *
 * Layer: clients.  No sockets and no files here (the `nc_cli` library), so
 * tests/clients/ links them alone.  Nothing exits; parse errors come back
 * as -EINVAL with a sentence. */
#ifndef NC_CLI_H
#define NC_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "neocog.pb-c.h"
#include "reply_json.h"

/* Exit codes of neocog. */
#define NC_CLI_EXIT_OK 0
#define NC_CLI_EXIT_FAIL 1
#define NC_CLI_EXIT_USAGE 2

typedef enum nc_cli_cmd {
    NC_CLI_CMD_HELP,            /* --help, or `neocog help [COMMAND]` */
    NC_CLI_CMD_VERSION,
    NC_CLI_CMD_RECOGNIZE,
    NC_CLI_CMD_STATUS,
    NC_CLI_CMD_BENCH,
    NC_CLI_CMD_CAMERA,          /* only as help_cmd: camera_opts.c parses its own
                                   command line */
} nc_cli_cmd;

typedef enum nc_cli_format {
    NC_CLI_FORMAT_TXT,
    NC_CLI_FORMAT_TSV,
    NC_CLI_FORMAT_JSON,
} nc_cli_format;

typedef struct nc_cli_args {
    nc_cli_cmd cmd;
    nc_cli_cmd help_cmd;        /* cmd HELP: whose help (HELP: the global
                                   one); `neocog recognize --help`,
                                   `neocog help recognize` */
    const char *server;         /* NULL: nc_client_default_addr */
    int timeout_ms;             /* per request; 0: the library's default */
    nc_cli_format format;       /* recognize, status (txt or json), bench */
    /* recognize (and bench) */
    Neocog__Model model;
    uint32_t top_k;             /* 0: 1 */
    int segment;
    uint64_t deadline_us;
    int32_t priority;           /* the request's scheduling class: > 0 high,
                                   0 normal, < 0 background */
    float min_confidence;       /* RecognizeRequest.min_confidence: 0 the
                                   server's (no --min-conf), else
                                   nc_cli_min_confidence of --min-conf */
    const char *charset;        /* --charset digits|alnum|all; NULL: digits */
    char **files;               /* borrowed from argv; "-" is stdin */
    int n_files;
    /* bench */
    uint32_t concurrency;       /* closed loop: requests kept in flight */
    double rate;                /* open loop: requests per second; 0: closed */
    double duration_s;          /* 0 with requests set: until requests done */
    uint64_t requests;          /* 0: until duration */
    uint32_t batch_images;      /* images per request */
    uint32_t connections;       /* 0: derived (see bench.c) */
    uint32_t retries;           /* resends of a request at most; 0: none,
                                   and no reconnecting */
    int retry_deadline_ms;      /* no resend after; 0: --timeout's */
    const char *idx, *labels, *dir;
} nc_cli_args;

/* Parse argv (argv[0] is the program) into *ret.  io/opts.h's parser
 * (getopt_long) permutes argv in place, so argv must be writable.  0, or
 * -EINVAL with a sentence in why (the caller prints it and exits
 * NC_CLI_EXIT_USAGE). */
int nc_cli_parse(int argc, char **argv, nc_cli_args *ret, char *why, size_t why_len);

/* The usage text: every command (NC_CLI_CMD_HELP) or one command's
 * (RECOGNIZE, STATUS, BENCH; CAMERA points to `neocog camera --help`, which
 * camera_opts.c prints). */
void nc_cli_usage(FILE *to);
void nc_cli_usage_command(FILE *to, nc_cli_cmd cmd);

/* --min-conf C (0..1) as RecognizeRequest.min_confidence: C itself, and 0
 * (no minimum) as "no threshold at all" (< 0), since the protocol's 0 means
 * the server's threshold. */
float nc_cli_min_confidence(double c);

/* Strict number parsing: the whole string, in range.  0 or -EINVAL. */
int nc_cli_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *ret);
int nc_cli_parse_double(const char *s, double lo, double hi, double *ret);
/* "high" (1), "normal" (0), "background" (-1) or an integer in -1000..1000. */
int nc_cli_parse_priority(const char *s, int32_t *ret);
/* "digits", "alnum" or "all" (RecognizeRequest.charset): 0, else -EINVAL. */
int nc_cli_check_charset(const char *s);

/* ---- images ---------------------------------------------------------------- */

/* What the first bytes say: PGM (binary P5), PNG or JPEG, and the pixel
 * size from the header (PGM header, PNG IHDR, JPEG SOFn marker), so output
 * can give the page box without decoding.  -EBADMSG when it is none of the
 * three or the header is cut short. */
typedef enum nc_cli_image_kind {
    NC_CLI_IMAGE_PGM = 1,
    NC_CLI_IMAGE_PNG,
    NC_CLI_IMAGE_JPEG,
} nc_cli_image_kind;
int nc_cli_sniff_image(const uint8_t *buf, size_t len, nc_cli_image_kind *ret_kind,
                       uint32_t *ret_width, uint32_t *ret_height);
const char *nc_cli_image_kind_name(nc_cli_image_kind k);

/* ---- output ---------------------------------------------------------------- */

/* A TSV field: tab, newline, carriage return and backslash become \t \n \r
 * \\ so a field never breaks the row (Tesseract itself does not escape, but
 * its words never hold a tab; a file name or a message might). */
void nc_cli_tsv_field(FILE *to, const char *s);
/* JSON strings and numbers: proto/reply_json.h (nc_json_string, nc_json_number). */

/* Tesseract's TSV header line (its 12 columns), then two of ours, tab-
 * separated: reject (why a word is rejected: nc_reject_reason_text,
 * empty when it is not) and threshold (the minimum confidence in force, 0..100
 * like conf; 0 none; -1 on rows above the word level). */
void nc_cli_tsv_header(FILE *to);
/* One TSV row.  conf < 0 prints as -1 (Tesseract's "not a word"), so does
 * threshold; reject NULL is empty. */
void nc_cli_tsv_row(FILE *to, int level, int page, int block, int par, int line, int word,
                    uint32_t left, uint32_t top, uint32_t width, uint32_t height,
                    double conf, const char *text, const char *reject, double threshold);

/* The lines of a segmented result: proto/reply_json.h (nc_result_lines,
 * nc_result_line_text), the same lines the daemon's JSON gives. */

/* ---- latency statistics ---------------------------------------------------- */

/* A log-linear histogram of durations in nanoseconds (HdrHistogram's idea):
 * values below 2^NC_HIST_SUB_BITS are exact; above, each power of two is
 * split into 2^(NC_HIST_SUB_BITS-1) equal buckets, so a reported value is
 * within 2^-(NC_HIST_SUB_BITS-1) (0.2 %) of the truth.  Fixed size, merge
 * by adding, no allocation per sample: a bench thread records millions of
 * samples without growing memory. */
#define NC_HIST_SUB_BITS 10
#define NC_HIST_BUCKETS ((64 - NC_HIST_SUB_BITS + 2) << (NC_HIST_SUB_BITS - 1))
typedef struct nc_hist {
    uint64_t count;
    uint64_t min, max;          /* exact */
    double sum;
    uint64_t buckets[NC_HIST_BUCKETS];
} nc_hist;

void nc_hist_init(nc_hist *h);
void nc_hist_record(nc_hist *h, uint64_t v);
void nc_hist_merge(nc_hist *dst, const nc_hist *src);
/* The p-th percentile (0 < p <= 100) by nearest rank: the smallest recorded
 * value v such that at least ceil(p/100 * count) samples are <= v, reported
 * as the middle of v's bucket (exact below 2^NC_HIST_SUB_BITS) and clamped
 * to [min, max]; the first and last ranks are the exact min and max.  0 for
 * an empty histogram. */
uint64_t nc_hist_percentile(const nc_hist *h, double p);
double nc_hist_mean(const nc_hist *h);

/* Bucket arithmetic, exposed for the tests. */
size_t nc_hist_bucket_of(uint64_t v);
uint64_t nc_hist_bucket_low(size_t b);      /* smallest value in bucket b */
uint64_t nc_hist_bucket_high(size_t b);     /* largest value in bucket b */

#endif

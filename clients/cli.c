/* clients/cli.c — argument parsing, image sniffing, escaping and latency
 * histograms for `neocog`.  See cli.h.
 *
 * Layer: clients, pure: no sockets, no file access, nothing exits. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"            /* nc_pgm_number */
#include "neocog_client.h"
#include "opts.h"

/* ---- numbers ----------------------------------------------------------------- */

int nc_cli_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *ret)
{
    /* strtoull accepts "-1" (and wraps it) and leading blanks: refuse both. */
    if (!s || *s < '0' || *s > '9')
        return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -EINVAL;
    *ret = v;
    return 0;
}

int nc_cli_parse_double(const char *s, double lo, double hi, double *ret)
{
    if (!s || !*s)
        return -EINVAL;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !(v >= lo && v <= hi))   /* NaN fails the range too */
        return -EINVAL;
    *ret = v;
    return 0;
}

int nc_cli_check_charset(const char *s)
{
    return s && (!strcmp(s, "digits") || !strcmp(s, "alnum") || !strcmp(s, "all")) ? 0 : -EINVAL;
}

int nc_cli_parse_priority(const char *s, int32_t *ret)
{
    if (!s)
        return -EINVAL;
    if (!strcmp(s, "high") || !strcmp(s, "normal") || !strcmp(s, "background")) {
        *ret = s[0] == 'h' ? 1 : s[0] == 'n' ? 0 : -1;
        return 0;
    }
    uint64_t u;
    const int neg = s[0] == '-';
    if (nc_cli_parse_u64(s + neg, 0, 1000, &u))
        return -EINVAL;
    *ret = neg ? -(int32_t)u : (int32_t)u;
    return 0;
}

/* ---- arguments --------------------------------------------------------------- */

/* One block per command, shared by the global help and the command's own. */
static const char usage_head[] =
"usage: neocog [--server ADDR] [--timeout MS] COMMAND [OPTIONS]\n";

static const char usage_recognize[] =
"  recognize [OPTIONS] FILE...|-   recognise digits in PGM/PNG/JPEG images ('-': stdin)\n"
"      --model cnn|neocognitron|ensemble|chars|default   (default: the server's choice)\n"
"      --charset digits|alnum|all  the characters the images hold: digits (default),\n"
"                           letters and digits, or the 94 printable ASCII characters\n"
"                           (the daemon's character model answers alnum and all)\n"
"      --top K              K best candidates per image, and per digit with\n"
"                           --segment (default 1)\n"
"      --format txt|tsv|json  output (default txt; tsv has Tesseract's columns, a\n"
"                           line (level 4) and a word (level 5) per text line)\n"
"      --segment            split each image into characters, read it as a string\n"
"                           (lines top to bottom)\n"
"      --min-conf C         reject answers less confident than C (0..1), looser or\n"
"                           tighter than the server's threshold; 0: no threshold\n"
"      --deadline-us US     give up after US microseconds on the server\n"
"      --priority P         high, normal (default) or background (or a number:\n"
"                           > 0, 0, < 0): the daemon batches higher classes first\n";

static const char usage_status[] =
"  status [--format txt|json]      the daemon's state, counters, limits and models\n"
"                                  (with each model's reject threshold)\n";

static const char usage_bench[] =
"  bench [OPTIONS] (--idx FILE | --dir DIR)   load generator\n"
"      --concurrency N      closed loop: N requests in flight (default 8)\n"
"      --rate R             open loop: R requests/s on schedule (latency counts from\n"
"                           the scheduled time, so a stalled server cannot hide)\n"
"      --duration S         seconds of load (default 10 unless --requests)\n"
"      --requests N         stop after N requests\n"
"      --batch-images K     images per request (default 1)\n"
"      --connections C      sockets (default: min(concurrency, 2 x cores); rate: 4)\n"
"      --retries N          reconnect when a connection breaks and resend what got\n"
"                           no reply, or UNAVAILABLE / RESOURCE_EXHAUSTED, up to N\n"
"                           times a request (default 0: count such as errors)\n"
"      --retry-deadline MS  no resend later than MS after the first send\n"
"                           (default: --timeout, 30000)\n"
"      --idx FILE           IDX images (plain or .gz), sent as raw grey\n"
"      --labels FILE        IDX labels, to report accuracy (default: guessed\n"
"                           from the images file name when it exists)\n"
"      --dir DIR            every PGM/PNG/JPEG file in DIR, sent as is\n"
"      --model, --deadline-us, --priority, --min-conf, --segment  as for recognize\n"
"      --format txt|json    output (default txt)\n";

static const char usage_camera[] =
"  camera [OPTIONS] [SOURCE]       read digit strings from a camera stream (MJPEG,\n"
"                                  y4m, raw grey, an image sequence, /dev/videoN);\n"
"                                  `neocog camera --help` lists its options\n";

static const char usage_tail[] =
"\n"
"ADDR: unix:PATH, tcp:HOST:PORT, HOST:PORT or a path; default: $NEOCOG_SERVER, else\n"
"/run/neocogd/neocogd.sock or $XDG_RUNTIME_DIR/neocogd.sock if present, else\n"
"tcp:127.0.0.1:5517.\n"
"Exit status: 0 all went well, 1 something failed, 2 usage error.\n";

void nc_cli_usage(FILE *to)
{
    fputs(usage_head, to);
    fputs("\nCommands:\n", to);
    fputs(usage_recognize, to);
    fputs(usage_status, to);
    fputs(usage_bench, to);
    fputs(usage_camera, to);
    fputs("\n`neocog COMMAND --help` shows one command's options.\n", to);
    fputs(usage_tail, to);
}

void nc_cli_usage_command(FILE *to, nc_cli_cmd cmd)
{
    const char *block = cmd == NC_CLI_CMD_RECOGNIZE ? usage_recognize
                      : cmd == NC_CLI_CMD_STATUS ? usage_status
                      : cmd == NC_CLI_CMD_BENCH ? usage_bench
                      : cmd == NC_CLI_CMD_CAMERA ? usage_camera : NULL;
    if (!block) {
        nc_cli_usage(to);
        return;
    }
    fputs(usage_head, to);
    fputc('\n', to);
    fputs(block, to);
    fputs(usage_tail, to);
}

float nc_cli_min_confidence(double c)
{
    return c > 0.0 ? (float)c : NC_CLIENT_NO_THRESHOLD;
}

static int usage_err(char *why, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int usage_err(char *why, size_t n, const char *fmt, ...)
{
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

/* Codes of the options: their index in cli_opts; OPT_HELP (io/opts.h's
 * NC_OPTS_HELP, -h and --help) comes after the table's end. */
enum {
    OPT_SERVER, OPT_TIMEOUT, OPT_MODEL, OPT_TOP, OPT_FORMAT, OPT_SEGMENT,
    OPT_DEADLINE, OPT_CONCURRENCY, OPT_RATE, OPT_DURATION, OPT_REQUESTS, OPT_BATCH,
    OPT_CONNECTIONS, OPT_IDX, OPT_LABELS, OPT_DIR, OPT_VERSION, OPT_PRIORITY,
    OPT_MINCONF, OPT_RETRIES, OPT_RETRY_DEADLINE, OPT_CHARSET, OPT_END, OPT_HELP,
};

/* One table for every command: an option that does not belong to the
 * command at hand is refused after parsing, with a sentence naming it.
 * Their help is the usage blocks above, which group them by command. */
static const nc_opt cli_opts[] = {
    [OPT_SERVER] = { "server", "ADDR", NULL },
    [OPT_TIMEOUT] = { "timeout", "MS", NULL },
    [OPT_MODEL] = { "model", "M", NULL },
    [OPT_TOP] = { "top", "K", NULL },
    [OPT_FORMAT] = { "format", "F", NULL },
    [OPT_SEGMENT] = { "segment", NULL, NULL },
    [OPT_DEADLINE] = { "deadline-us", "US", NULL },
    [OPT_PRIORITY] = { "priority", "P", NULL },
    [OPT_MINCONF] = { "min-conf", "C", NULL },
    [OPT_CONCURRENCY] = { "concurrency", "N", NULL },
    [OPT_RATE] = { "rate", "R", NULL },
    [OPT_DURATION] = { "duration", "S", NULL },
    [OPT_REQUESTS] = { "requests", "N", NULL },
    [OPT_BATCH] = { "batch-images", "K", NULL },
    [OPT_CONNECTIONS] = { "connections", "C", NULL },
    [OPT_IDX] = { "idx", "FILE", NULL },
    [OPT_LABELS] = { "labels", "FILE", NULL },
    [OPT_DIR] = { "dir", "DIR", NULL },
    [OPT_RETRIES] = { "retries", "N", NULL },
    [OPT_RETRY_DEADLINE] = { "retry-deadline", "MS", NULL },
    [OPT_VERSION] = { "version", NULL, NULL },
    [OPT_CHARSET] = { "charset", "SET", NULL },
    [OPT_END] = { NULL, NULL, NULL },
};

static const char *opt_name(int code)
{
    return code == OPT_HELP ? "help" : cli_opts[code].name;
}

/* Which options each command takes (bit per OPT_ code). */
#define BIT(o) (1u << (o))
#define COMMON (BIT(OPT_SERVER) | BIT(OPT_TIMEOUT) | BIT(OPT_HELP) | BIT(OPT_VERSION))
static const unsigned recognize_opts = COMMON | BIT(OPT_MODEL) | BIT(OPT_TOP) |
    BIT(OPT_FORMAT) | BIT(OPT_SEGMENT) | BIT(OPT_DEADLINE) | BIT(OPT_PRIORITY) |
    BIT(OPT_MINCONF) | BIT(OPT_CHARSET);
static const unsigned status_opts = COMMON | BIT(OPT_FORMAT);
static const unsigned bench_opts = COMMON | BIT(OPT_MODEL) | BIT(OPT_FORMAT) |
    BIT(OPT_DEADLINE) | BIT(OPT_CONCURRENCY) | BIT(OPT_RATE) | BIT(OPT_DURATION) |
    BIT(OPT_REQUESTS) | BIT(OPT_BATCH) | BIT(OPT_CONNECTIONS) | BIT(OPT_IDX) |
    BIT(OPT_LABELS) | BIT(OPT_DIR) | BIT(OPT_SEGMENT) | BIT(OPT_PRIORITY) | BIT(OPT_MINCONF) |
    BIT(OPT_RETRIES) | BIT(OPT_RETRY_DEADLINE);

static int parse_format(const char *s, nc_cli_format *ret)
{
    if (!strcmp(s, "txt") || !strcmp(s, "text"))
        *ret = NC_CLI_FORMAT_TXT;
    else if (!strcmp(s, "tsv"))
        *ret = NC_CLI_FORMAT_TSV;
    else if (!strcmp(s, "json"))
        *ret = NC_CLI_FORMAT_JSON;
    else
        return -EINVAL;
    return 0;
}

/* The options of argv from argv[1] (argv[0], a program or command name, is
 * skipped); *next: the first operand.  stop_at_command: stop at the first
 * operand (the command word) for the global options. */
static int parse_options(int argc, char **argv, int stop_at_command, unsigned allowed,
                      const char *cmd, nc_cli_args *a, unsigned *seen, int *next, char *why,
                      size_t n)
{
    nc_opts p = { .prog = "neocog", .table = cli_opts, .stop_at_operand = stop_at_command };
    for (;;) {
        int c = nc_opts_next(&p, argc, argv);
        if (c == NC_OPTS_END)
            break;
        if (c == NC_OPTS_ERROR)
            return usage_err(why, n, "%s", p.why);
        if (c == NC_OPTS_HELP)
            c = OPT_HELP;
        const char *v = p.value;
        if (!(allowed & BIT(c)))
            return usage_err(why, n, "option --%s does not apply to %s", opt_name(c),
                             cmd ? cmd : "neocog (put it after the command)");
        *seen |= BIT(c);
        uint64_t u;
        double d;
        switch (c) {
        case OPT_SERVER:
            a->server = v;
            break;
        case OPT_TIMEOUT:
            if (nc_cli_parse_u64(v, 1, 86400000, &u))
                return usage_err(why, n, "--timeout: '%s' is not milliseconds in 1..86400000",
                                 v);
            a->timeout_ms = (int)u;
            break;
        case OPT_MODEL:
            if (nc_client_model_parse(v, &a->model))
                return usage_err(why, n, "--model: '%s' is not cnn, neocognitron, ensemble, "
                                 "chars or default", v);
            break;
        case OPT_TOP:
            if (nc_cli_parse_u64(v, 1, 1000, &u))
                return usage_err(why, n, "--top: '%s' is not a number in 1..1000", v);
            a->top_k = (uint32_t)u;
            break;
        case OPT_FORMAT:
            if (parse_format(v, &a->format))
                return usage_err(why, n, "--format: '%s' is not txt, tsv or json", v);
            break;
        case OPT_SEGMENT:
            a->segment = 1;
            break;
        case OPT_DEADLINE:
            if (nc_cli_parse_u64(v, 1, UINT64_C(3600000000), &u))
                return usage_err(why, n, "--deadline-us: '%s' is not microseconds in "
                                 "1..3600000000", v);
            a->deadline_us = u;
            break;
        case OPT_PRIORITY:
            if (nc_cli_parse_priority(v, &a->priority))
                return usage_err(why, n, "--priority: '%s' is not high, normal, background "
                                 "or a number in -1000..1000", v);
            break;
        case OPT_CHARSET:
            if (nc_cli_check_charset(v))
                return usage_err(why, n, "--charset: '%s' is not digits, alnum or all", v);
            a->charset = v;
            break;
        case OPT_MINCONF:
            if (nc_cli_parse_double(v, 0.0, 1.0, &d))
                return usage_err(why, n, "--min-conf: '%s' is not a confidence in 0..1 "
                                 "(0: no threshold)", v);
            a->min_confidence = nc_cli_min_confidence(d);
            break;
        case OPT_CONCURRENCY:
            if (nc_cli_parse_u64(v, 1, 65536, &u))
                return usage_err(why, n, "--concurrency: '%s' is not a number in 1..65536",
                                 v);
            a->concurrency = (uint32_t)u;
            break;
        case OPT_RATE:
            if (nc_cli_parse_double(v, 1e-3, 1e8, &d))
                return usage_err(why, n, "--rate: '%s' is not requests/s in 0.001..1e8",
                                 v);
            a->rate = d;
            break;
        case OPT_DURATION:
            if (nc_cli_parse_double(v, 1e-3, 1e6, &d))
                return usage_err(why, n, "--duration: '%s' is not seconds in 0.001..1e6",
                                 v);
            a->duration_s = d;
            break;
        case OPT_REQUESTS:
            if (nc_cli_parse_u64(v, 1, UINT64_C(1) << 48, &u))
                return usage_err(why, n, "--requests: '%s' is not a positive count", v);
            a->requests = u;
            break;
        case OPT_BATCH:
            if (nc_cli_parse_u64(v, 1, 65536, &u))
                return usage_err(why, n, "--batch-images: '%s' is not a number in 1..65536",
                                 v);
            a->batch_images = (uint32_t)u;
            break;
        case OPT_CONNECTIONS:
            if (nc_cli_parse_u64(v, 1, 4096, &u))
                return usage_err(why, n, "--connections: '%s' is not a number in 1..4096",
                                 v);
            a->connections = (uint32_t)u;
            break;
        case OPT_RETRIES:
            if (nc_cli_parse_u64(v, 0, 1000, &u))
                return usage_err(why, n, "--retries: '%s' is not a number in 0..1000", v);
            a->retries = (uint32_t)u;
            break;
        case OPT_RETRY_DEADLINE:
            if (nc_cli_parse_u64(v, 1, 86400000, &u))
                return usage_err(why, n, "--retry-deadline: '%s' is not milliseconds in "
                                 "1..86400000", v);
            a->retry_deadline_ms = (int)u;
            break;
        case OPT_IDX:
            a->idx = v;
            break;
        case OPT_LABELS:
            a->labels = v;
            break;
        case OPT_DIR:
            a->dir = v;
            break;
        case OPT_HELP:
            a->cmd = NC_CLI_CMD_HELP;
            break;
        case OPT_VERSION:
            a->cmd = NC_CLI_CMD_VERSION;
            break;
        }
    }
    *next = p.next;
    return 0;
}

int nc_cli_parse(int argc, char **argv, nc_cli_args *ret, char *why, size_t why_len)
{
    if (!argv || !ret || argc < 1)
        return -EINVAL;
    nc_cli_args a;
    memset(&a, 0, sizeof a);
    a.cmd = NC_CLI_CMD_HELP;
    unsigned seen = 0;
    /* Global options first, up to the command word. */
    int at = 0;
    int r = parse_options(argc, argv, 1, COMMON, NULL, &a, &seen, &at, why, why_len);
    if (r < 0)
        return r;
    if (a.cmd == NC_CLI_CMD_HELP && seen & BIT(OPT_HELP)) {
        *ret = a;
        return 0;
    }
    if (a.cmd == NC_CLI_CMD_VERSION) {
        *ret = a;
        return 0;
    }
    if (at >= argc)
        return usage_err(why, why_len, "no command given (recognize, status, bench or camera)");
    const char *cmd = argv[at];
    unsigned allowed;
    if (!strcmp(cmd, "recognize") || !strcmp(cmd, "recognise")) {
        a.cmd = NC_CLI_CMD_RECOGNIZE;
        allowed = recognize_opts;
    } else if (!strcmp(cmd, "status")) {
        a.cmd = NC_CLI_CMD_STATUS;
        allowed = status_opts;
    } else if (!strcmp(cmd, "bench")) {
        a.cmd = NC_CLI_CMD_BENCH;
        allowed = bench_opts;
    } else if (!strcmp(cmd, "help")) {
        /* `neocog help [COMMAND]` */
        a.cmd = NC_CLI_CMD_HELP;
        const char *what = at + 1 < argc ? argv[at + 1] : NULL;
        if (what && (!strcmp(what, "recognize") || !strcmp(what, "recognise")))
            a.help_cmd = NC_CLI_CMD_RECOGNIZE;
        else if (what && !strcmp(what, "status"))
            a.help_cmd = NC_CLI_CMD_STATUS;
        else if (what && !strcmp(what, "bench"))
            a.help_cmd = NC_CLI_CMD_BENCH;
        else if (what && !strcmp(what, "camera"))
            a.help_cmd = NC_CLI_CMD_CAMERA;
        else if (what)
            return usage_err(why, why_len, "help: unknown command '%s'", what);
        *ret = a;
        return 0;
    } else {
        return usage_err(why, why_len, "unknown command '%s'", cmd);
    }
    nc_cli_cmd chosen = a.cmd;
    int sub_argc = argc - at;
    char **sub_argv = argv + at;
    int first_file = 0;
    r = parse_options(sub_argc, sub_argv, 0, allowed, cmd, &a, &seen, &first_file, why, why_len);
    if (r < 0)
        return r;
    if (a.cmd == NC_CLI_CMD_HELP || a.cmd == NC_CLI_CMD_VERSION) {
        a.help_cmd = chosen;     /* `neocog recognize --help`: its own help */
        *ret = a;
        return 0;
    }
    a.cmd = chosen;
    a.files = sub_argv + first_file;
    a.n_files = sub_argc - first_file;

    switch (a.cmd) {
    case NC_CLI_CMD_RECOGNIZE: {
        if (a.n_files == 0)
            return usage_err(why, why_len, "recognize: no FILE given ('-' reads stdin)");
        int stdin_uses = 0;
        for (int i = 0; i < a.n_files; i++)
            stdin_uses += !strcmp(a.files[i], "-");
        if (stdin_uses > 1)
            return usage_err(why, why_len, "recognize: '-' (stdin) may appear only once");
        break;
    }
    case NC_CLI_CMD_STATUS:
        if (a.n_files)
            return usage_err(why, why_len, "status: unexpected argument '%s'", a.files[0]);
        if (a.format == NC_CLI_FORMAT_TSV)
            return usage_err(why, why_len, "status: --format is txt or json");
        break;
    case NC_CLI_CMD_BENCH:
        if (a.n_files)
            return usage_err(why, why_len, "bench: unexpected argument '%s'", a.files[0]);
        if (!a.idx == !a.dir)
            return usage_err(why, why_len, "bench: give exactly one of --idx FILE and --dir DIR");
        if (a.labels && !a.idx)
            return usage_err(why, why_len, "bench: --labels goes with --idx");
        if ((seen & BIT(OPT_CONCURRENCY)) && (seen & BIT(OPT_RATE)))
            return usage_err(why, why_len, "bench: --concurrency and --rate exclude each other");
        if (a.format == NC_CLI_FORMAT_TSV)
            return usage_err(why, why_len, "bench: --format is txt or json");
        if (!a.batch_images)
            a.batch_images = 1;
        if (!a.rate && !a.concurrency)
            a.concurrency = 8;
        if (!a.duration_s && !a.requests)
            a.duration_s = 10.0;
        break;
    default:
        break;
    }
    *ret = a;
    return 0;
}

/* ---- image sniffing ---------------------------------------------------------- */

const char *nc_cli_image_kind_name(nc_cli_image_kind k)
{
    switch (k) {
    case NC_CLI_IMAGE_PGM: return "PGM";
    case NC_CLI_IMAGE_PNG: return "PNG";
    case NC_CLI_IMAGE_JPEG: return "JPEG";
    }
    return "?";
}

static uint32_t be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Walk JPEG markers to the first SOFn (frame header), which holds the size. */
static int jpeg_size(const uint8_t *d, size_t len, uint32_t *w, uint32_t *h)
{
    size_t p = 2;
    while (p + 4 <= len) {
        if (d[p] != 0xff)
            return -EBADMSG;
        uint8_t m = d[p + 1];
        if (m == 0xff) {            /* fill byte */
            p++;
            continue;
        }
        if (m == 0x01 || (m >= 0xd0 && m <= 0xd7)) {  /* markers without length */
            p += 2;
            continue;
        }
        uint32_t seg = be16(d + p + 2);
        if (seg < 2)
            return -EBADMSG;
        /* SOF0..SOF15 except DHT (c4), JPG (c8) and DAC (cc). */
        if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) {
            if (p + 9 > len)
                return -EBADMSG;
            *h = be16(d + p + 5);
            *w = be16(d + p + 7);
            return 0;
        }
        if (m == 0xda || m == 0xd9)    /* scan data or end before any frame */
            return -EBADMSG;
        p += 2 + seg;
    }
    return -EBADMSG;
}

int nc_cli_sniff_image(const uint8_t *buf, size_t len, nc_cli_image_kind *ret_kind,
                       uint32_t *ret_width, uint32_t *ret_height)
{
    if (!buf || !ret_kind || !ret_width || !ret_height)
        return -EINVAL;
    uint32_t w = 0, h = 0;
    nc_cli_image_kind k;
    static const uint8_t png_magic[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
    if (len >= 2 && buf[0] == 'P' && buf[1] == '5') {
        size_t p = 2;
        if (nc_pgm_number(buf, len, &p, &w) || nc_pgm_number(buf, len, &p, &h))
            return -EBADMSG;
        k = NC_CLI_IMAGE_PGM;
    } else if (len >= 8 && !memcmp(buf, png_magic, 8)) {
        /* The first chunk must be IHDR: length 13, "IHDR", width, height. */
        if (len < 24 || memcmp(buf + 12, "IHDR", 4))
            return -EBADMSG;
        w = be32(buf + 16);
        h = be32(buf + 20);
        k = NC_CLI_IMAGE_PNG;
    } else if (len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff) {
        if (jpeg_size(buf, len, &w, &h))
            return -EBADMSG;
        k = NC_CLI_IMAGE_JPEG;
    } else {
        return -EBADMSG;
    }
    *ret_kind = k;
    *ret_width = w;
    *ret_height = h;
    return 0;
}

/* ---- escaping ----------------------------------------------------------------- */

void nc_cli_tsv_field(FILE *to, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '\t': fputs("\\t", to); break;
        case '\n': fputs("\\n", to); break;
        case '\r': fputs("\\r", to); break;
        case '\\': fputs("\\\\", to); break;
        default: fputc(*s, to);
        }
    }
}

void nc_cli_tsv_header(FILE *to)
{
    fputs("level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\t"
          "left\ttop\twidth\theight\tconf\ttext\treject\tthreshold\n", to);
}

/* A 0..100 figure as Tesseract prints conf: a float, -1 for "none here". */
static void tsv_percent(FILE *to, double v)
{
    if (v < 0 || !isfinite(v))
        fputs("-1", to);
    else
        fprintf(to, "%.6f", v > 100 ? 100.0 : v);
}

void nc_cli_tsv_row(FILE *to, int level, int page, int block, int par, int line, int word,
                    uint32_t left, uint32_t top, uint32_t width, uint32_t height,
                    double conf, const char *text, const char *reject, double threshold)
{
    fprintf(to, "%d\t%d\t%d\t%d\t%d\t%d\t%u\t%u\t%u\t%u\t", level, page, block, par, line,
            word, left, top, width, height);
    /* Tesseract 4/5 print word confidences as floats (e.g. 96.063751) and
     * -1 for the rows above the word level. */
    tsv_percent(to, conf);
    fputc('\t', to);
    nc_cli_tsv_field(to, text);
    fputc('\t', to);
    nc_cli_tsv_field(to, reject);
    fputc('\t', to);
    tsv_percent(to, threshold);
    fputc('\n', to);
}

/* ---- histogram ----------------------------------------------------------------- */

#define SUB (1u << NC_HIST_SUB_BITS)         /* exact range: [0, SUB) */
#define HALF (1u << (NC_HIST_SUB_BITS - 1))  /* buckets per power of two above */

size_t nc_hist_bucket_of(uint64_t v)
{
    if (v < SUB)
        return (size_t)v;
    /* v in [2^e, 2^(e+1)) with e >= NC_HIST_SUB_BITS: keep its top
     * NC_HIST_SUB_BITS bits, of which the first is always 1. */
    int e = 63 - __builtin_clzll(v);
    int shift = e - (NC_HIST_SUB_BITS - 1);
    uint64_t top = v >> shift;                  /* in [HALF, SUB) */
    return SUB + (size_t)(e - NC_HIST_SUB_BITS) * HALF + (size_t)(top - HALF);
}

uint64_t nc_hist_bucket_low(size_t b)
{
    if (b < SUB)
        return b;
    size_t k = b - SUB;
    int e = (int)(k / HALF) + NC_HIST_SUB_BITS;
    uint64_t top = HALF + k % HALF;
    return top << (e - (NC_HIST_SUB_BITS - 1));
}

uint64_t nc_hist_bucket_high(size_t b)
{
    if (b < SUB)
        return b;
    size_t k = b - SUB;
    int e = (int)(k / HALF) + NC_HIST_SUB_BITS;
    int shift = e - (NC_HIST_SUB_BITS - 1);
    return nc_hist_bucket_low(b) + ((UINT64_C(1) << shift) - 1);
}

void nc_hist_init(nc_hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

void nc_hist_record(nc_hist *h, uint64_t v)
{
    h->buckets[nc_hist_bucket_of(v)]++;
    h->count++;
    h->sum += (double)v;
    if (v < h->min)
        h->min = v;
    if (v > h->max)
        h->max = v;
}

void nc_hist_merge(nc_hist *dst, const nc_hist *src)
{
    for (size_t i = 0; i < NC_HIST_BUCKETS; i++)
        dst->buckets[i] += src->buckets[i];
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->min < dst->min)
        dst->min = src->min;
    if (src->max > dst->max)
        dst->max = src->max;
}

uint64_t nc_hist_percentile(const nc_hist *h, double p)
{
    if (!h->count)
        return 0;
    if (p > 100)
        p = 100;
    /* Nearest rank: the rank-th smallest sample, rank = ceil(p% of count),
     * at least 1.  The small epsilon keeps 99.9% of 1000 at rank 999 when
     * 0.999 * 1000 comes out as 999.0000000001 in binary. */
    double exact = p / 100.0 * (double)h->count;
    uint64_t rank = (uint64_t)ceil(exact - 1e-9);
    if (rank < 1)
        rank = 1;
    if (rank >= h->count)
        return h->max;      /* the largest sample is known exactly */
    if (rank == 1)
        return h->min;
    uint64_t seen = 0;
    for (size_t b = 0; b < NC_HIST_BUCKETS; b++) {
        seen += h->buckets[b];
        if (seen >= rank) {
            uint64_t lo = nc_hist_bucket_low(b), hi = nc_hist_bucket_high(b);
            uint64_t v = lo + (hi - lo) / 2;
            if (v < h->min)
                v = h->min;
            if (v > h->max)
                v = h->max;
            return v;
        }
    }
    return h->max;
}

double nc_hist_mean(const nc_hist *h)
{
    return h->count ? h->sum / (double)h->count : 0.0;
}

/* clients/camera_opts.c — `neocog camera`'s command line: where the command
 * word sits, the global options before it, the command's own (io/opts'
 * table gives parsing and --help), checked into a cam_opts.
 *
 * Layer: clients. */
#include "camera_opts.h"
#include "camera.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "camera_input.h"
#include "cli.h"
#include "frame.h"
#include "neocog_client.h"
#include "opts.h"

int nc_camera_command_index(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--server") || !strcmp(a, "--timeout")) {
            i++;
            continue;
        }
        if (!strncmp(a, "--server=", 9) || !strncmp(a, "--timeout=", 10))
            continue;
        if (a[0] == '-')
            return -1;          /* --help, --version, or a mistake: cli.c's */
        return strcmp(a, "camera") ? -1 : i;
    }
    return -1;
}

static int parse_wxh(const char *s, uint32_t *w, uint32_t *h)
{
    char *e;
    errno = 0;
    unsigned long a = strtoul(s, &e, 10);
    if (errno || e == s || (*e != 'x' && *e != 'X'))
        return -1;
    const char *t = e + 1;
    unsigned long b = strtoul(t, &e, 10);
    if (errno || e == t || *e || !a || !b || a > 16384 || b > 16384)
        return -1;
    *w = (uint32_t)a;
    *h = (uint32_t)b;
    return 0;
}

static int parse_roi(const char *s, cam_opts *o)
{
    unsigned long v[4];
    const char *p = s;
    for (int i = 0; i < 4; i++) {
        char *e;
        errno = 0;
        v[i] = strtoul(p, &e, 10);
        if (errno || e == p || v[i] > 16384 || *e != (i < 3 ? ',' : '\0'))
            return -1;
        p = e + 1;
    }
    if (!v[2] || !v[3])
        return -1;
    o->have_roi = 1;
    o->roi_x = (uint32_t)v[0];
    o->roi_y = (uint32_t)v[1];
    o->roi_w = (uint32_t)v[2];
    o->roi_h = (uint32_t)v[3];
    return 0;
}

enum {
    O_SERVER, O_TIMEOUT, O_RAW, O_SIZE, O_V4L2FMT, O_FORMAT, O_ROI, O_DIGITS,
    O_MINCONF, O_FPS, O_DROP, O_NODROP, O_FRAMES, O_STATS, O_MODEL, O_DEADLINE, O_PRIORITY,
    O_LIVE, O_CHARSET, O_END,
};

static const nc_opt cam_opts_table[] = {
    [O_SERVER] = { "server", "ADDR", NULL },        /* neocog's, before or after */
    [O_TIMEOUT] = { "timeout", "MS", NULL },
    [O_RAW] = { "raw", "WxH", "raw 8-bit grey frames of W x H" },
    [O_SIZE] = { "size", "WxH", "V4L2 capture size (default 640x480)" },
    [O_V4L2FMT] = { "v4l2-format", "mjpeg|yuyv", "insist on one pixel format" },
    [O_FORMAT] = { "format", "txt|jsonl", "output per frame (default txt); jsonl ends with\n"
                                          "a summary" },
    [O_ROI] = { "roi", "X,Y,W,H", "only look inside this rectangle (sent to the daemon,\n"
                                  "which segments only there); boxes stay in frame\n"
                                  "coordinates" },
    [O_DIGITS] = { "digits", "N", "N digits expected (sent to the daemon, which cuts or\n"
                                  "joins pieces to fit); a frame with fewer is flagged" },
    [O_MINCONF] = { "min-conf", "C", "digits less confident than C (0..1) are rejected\n"
                                     "('?'), looser or tighter than the server's\n"
                                     "threshold; 0: no threshold" },
    [O_FPS] = { "fps", "F", "pace the source at F frames/s, as a camera would" },
    [O_DROP] = { "drop", NULL, NULL },              /* --live's old name */
    [O_NODROP] = { "no-drop", NULL, "read every frame, even from a device or with --fps" },
    [O_FRAMES] = { "frames", "N", "stop after N frames" },
    [O_STATS] = { "stats", NULL, "p50/p99 latency and fps on stderr every second\n"
                                 "(default when stderr is a terminal)" },
    [O_MODEL] = { "model", "M", "as for recognize" },
    [O_DEADLINE] = { "deadline-us", "US", "as for recognize" },
    [O_PRIORITY] = { "priority", "P", "scheduling class of the frames: high (default: a\n"
                                      "camera is real-time, so the daemon batches its\n"
                                      "frames before normal requests), normal,\n"
                                      "background, or a number" },
    [O_LIVE] = { "live", NULL, "the source is live (see above); --drop is the same" },
    [O_CHARSET] = { "charset", "SET", "digits (default), alnum or all: the characters the\n"
                                      "frames hold, as for recognize (words get spaces)" },
    [O_END] = { NULL, NULL, NULL },
};

static const nc_opts cam_opts_help = {
    .prog = "neocog camera",
    .usage =
"usage: neocog [--server ADDR] [--timeout MS] camera [OPTIONS] [SOURCE]\n"
"\n"
"Reads digit strings from a camera stream: each frame is one request to neocogd\n"
"with segmentation on, and its answer is written and flushed as it comes.\n"
"SOURCE (default '-', stdin):\n"
"  -, FILE or FIFO   MJPEG (concatenated JPEGs: ffmpeg -f mjpeg -), YUV4MPEG2 (its\n"
"                    Y plane), or raw grey frames with --raw WxH\n"
"  DIR or 'GLOB'     an image sequence of PGM/PNG/JPEG files, in name order\n"
"  /dev/videoN       a V4L2 camera (MJPEG, else YUYV; --size WxH)\n"
"Every frame is read and answered, in order, except from a live source, which\n"
"keeps only the newest frame when recognition falls behind and counts the\n"
"others as dropped: /dev/videoN, a source paced with --fps, or any with --live.\n"
"So a pipe is read whole unless --live says it comes from a camera:\n"
"  cat frames/*.jpg | neocog camera                          every frame\n"
"  ffmpeg -i /dev/video0 -f mjpeg - | neocog camera --live   keeps up\n",
    .notes =
"Latency is from sending a frame to its reply.  A frame that cannot be read or\n"
"decoded is reported, counted and skipped.  Exit status: 0 the stream ended (or\n"
"SIGINT/SIGTERM), 1 the daemon or the source failed, 2 usage.\n",
    .table = cam_opts_table,
};

int nc_camera_parse_args(int argc, char **argv, int cmd, cam_opts *o)
{
    memset(o, 0, sizeof *o);
    o->drop = -1;
    o->priority = 1;
    o->src.path = "-";
    /* Global options before the command word (nc_camera_command_index has
     * checked their shape). */
    for (int i = 1; i < cmd; i++) {
        const char *a = argv[i], *v;
        int server = !strncmp(a, "--server", 8);
        if (strchr(a, '='))
            v = strchr(a, '=') + 1;
        else
            v = argv[++i];
        if (server) {
            o->server = v;
        } else {
            uint64_t u;
            if (nc_cli_parse_u64(v, 1, 86400000, &u)) {
                fprintf(stderr, "neocog: --timeout: '%s' is not milliseconds in 1..86400000\n",
                        v);
                return -1;
            }
            o->timeout_ms = (int)u;
        }
    }
    int sub_argc = argc - cmd;
    char **sub_argv = argv + cmd;
    nc_opts p = cam_opts_help;
    for (;;) {
        int c = nc_opts_next(&p, sub_argc, sub_argv);
        if (c == NC_OPTS_END)
            break;
        if (c == NC_OPTS_HELP) {
            nc_opts_usage(&p, stdout);
            return 1;
        }
        if (c == NC_OPTS_ERROR) {
            nc_opts_fail(&p);
            return -1;
        }
        const char *v = p.value;
        uint64_t u;
        double d;
        int bad = 0;
        switch (c) {
        case O_SERVER: o->server = v; break;
        case O_TIMEOUT:
            bad = nc_cli_parse_u64(v, 1, 86400000, &u);
            o->timeout_ms = (int)u;
            break;
        case O_RAW:
            bad = parse_wxh(v, &o->src.raw_width, &o->src.raw_height);
            o->src.kind = NC_CAM_RAW;
            break;
        case O_SIZE: bad = parse_wxh(v, &o->src.v4l2_width, &o->src.v4l2_height); break;
        case O_V4L2FMT:
            /* fourcc codes, spelled out so this parses without videodev2.h */
            if (!strcmp(v, "mjpeg"))
                o->src.v4l2_fourcc = 'M' | 'J' << 8 | 'P' << 16 | (uint32_t)'G' << 24;
            else if (!strcmp(v, "yuyv"))
                o->src.v4l2_fourcc = 'Y' | 'U' << 8 | 'Y' << 16 | (uint32_t)'V' << 24;
            else
                bad = 1;
            break;
        case O_FORMAT:
            if (!strcmp(v, "txt") || !strcmp(v, "text"))
                o->format = FMT_TXT;
            else if (!strcmp(v, "jsonl") || !strcmp(v, "json"))
                o->format = FMT_JSONL;
            else
                bad = 1;
            break;
        case O_ROI: bad = parse_roi(v, o); break;
        case O_DIGITS:
            bad = nc_cli_parse_u64(v, 1, MAX_DIGITS, &u);
            o->digits = (uint32_t)u;
            break;
        case O_MINCONF:
            bad = nc_cli_parse_double(v, 0, 1, &d);
            o->min_conf = nc_cli_min_confidence(d);
            break;
        case O_FPS:
            bad = nc_cli_parse_double(v, 0.01, 10000, &d);
            o->fps = d;
            break;
        case O_DROP:
        case O_LIVE: o->drop = 1; break;
        case O_NODROP: o->drop = 0; break;
        case O_FRAMES:
            bad = nc_cli_parse_u64(v, 1, UINT64_C(1) << 48, &u);
            o->max_frames = u;
            break;
        case O_STATS: o->stats = 1; break;
        case O_MODEL: bad = nc_client_model_parse(v, &o->model) < 0; break;
        case O_DEADLINE:
            bad = nc_cli_parse_u64(v, 1, UINT64_C(3600000000), &u);
            o->deadline_us = u;
            break;
        case O_PRIORITY: bad = nc_cli_parse_priority(v, &o->priority) < 0; break;
        case O_CHARSET:
            bad = nc_cli_check_charset(v) < 0;
            o->charset = v;
            break;
        }
        if (bad) {
            nc_opts_bad_value(&p, c, NULL);
            nc_opts_fail(&p);
            return -1;
        }
    }
    if (p.next < sub_argc)
        o->src.path = sub_argv[p.next++];
    if (p.next < sub_argc) {
        nc_opts_error(&p, "one source only ('%s' is extra)", sub_argv[p.next]);
        nc_opts_fail(&p);
        return -1;
    }
    o->src.max_frame = NC_FRAME_DEFAULT_MAX - 4096;     /* leaves room for the message */
    return 0;
}

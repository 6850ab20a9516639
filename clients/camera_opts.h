/* clients/camera_opts.h — `neocog camera`'s options, parsed (camera_opts.c)
 * for the command (camera.c).
 *
 * Layer: clients. */
#ifndef NC_CAMERA_OPTS_H
#define NC_CAMERA_OPTS_H

#include <stdint.h>

#include "camera_input.h"
#include "neocog_client.h"

#define MAX_DIGITS 256          /* per frame, after the daemon's own cap (64) */

enum { FMT_TXT, FMT_JSONL };

typedef struct cam_opts {
    const char *server;
    int timeout_ms;
    nc_cam_source_opts src;
    int format;
    int have_roi;
    uint32_t roi_x, roi_y, roi_w, roi_h;
    uint32_t digits;            /* 0: any */
    float min_conf;             /* RecognizeRequest.min_confidence; 0: the
                                   server's threshold */
    double fps;                 /* 0: no pacing */
    int drop;                   /* -1: live sources (a device, --fps) only */
    int stats;
    Neocog__Model model;
    uint64_t deadline_us;
    int32_t priority;           /* the frames' scheduling class (default 1,
                                   high: a camera is real-time) */
    uint64_t max_frames;        /* 0: all */
    const char *charset;        /* RecognizeRequest.charset; NULL: digits */
} cam_opts;

/* argv[cmd] is "camera": the global options before it and the command's
 * after it into o.  0 parsed, 1 --help (printed), -1 a usage error
 * (printed). */
int nc_camera_parse_args(int argc, char **argv, int cmd, cam_opts *o);

#endif

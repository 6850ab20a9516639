/* clients/camera_input.h — where `neocog camera` gets its frames: MJPEG
 * (concatenated JPEGs, what `ffmpeg -f mjpeg -` writes), raw grey frames,
 * YUV4MPEG2 (the Y plane), an image sequence (a folder or a glob of
 * PGM/PNG/JPEG files) or a V4L2 device (MJPEG or YUYV, mmap streaming).
 *
 * Layer: clients.  The parsers (MJPEG splitting, y4m headers) are pure and
 * exposed for tests/camera; the sources do the reading.  A source is used
 * by one thread (the camera's reader).  Errors are negative errno values
 * with a sentence in `why`. */
#ifndef NC_CAMERA_INPUT_H
#define NC_CAMERA_INPUT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ---- MJPEG splitting -------------------------------------------------------- */

/* Frames are cut by walking the JPEG marker structure, not by searching for
 * FFD8 / FFD9: a segment with a length (APPn, DQT, DHT, SOFn, SOS's header,
 * COM) is skipped whole, so an EXIF thumbnail (a JPEG inside APP1, with its
 * own SOI and EOI) stays inside its frame; entropy-coded data is scanned for
 * the next real marker (FF followed by anything but 00, FF or RSTn).
 * Anything between frames (padding, a torn write) is skipped and counted.
 * A frame that breaks the marker structure is cut where it broke and the
 * scan goes on at the next SOI. */
typedef enum nc_mjpeg_status {
    NC_MJPEG_MORE = 0,      /* need more bytes (nothing to drop yet) */
    NC_MJPEG_FRAME,         /* a frame: [start, start + len) */
    NC_MJPEG_FRAME_NO_EOI,  /* a frame that ended at the next SOI without
                               an EOI: sent anyway, the decoder judges */
    NC_MJPEG_BAD,           /* a broken frame (bad marker, bad length, cut
                               short at the end of the stream, too large):
                               [start, start + len) is dropped; see why */
    NC_MJPEG_SKIP,          /* bytes that are no frame: drop `consumed` */
    NC_MJPEG_END,           /* eof and nothing left */
} nc_mjpeg_status;

typedef struct nc_mjpeg_split {
    size_t start;           /* SOI of the frame being walked; SIZE_MAX: none */
    size_t pos;             /* next byte to look at */
    int in_scan;            /* inside entropy-coded data */
} nc_mjpeg_split;

typedef struct nc_mjpeg_cut {
    size_t start, len;      /* the frame (FRAME, FRAME_NO_EOI, BAD) */
    size_t consumed;        /* bytes of the buffer's head now done with */
    const char *why;        /* BAD: what was wrong */
} nc_mjpeg_cut;

void nc_mjpeg_split_init(nc_mjpeg_split *s);

/* Look at buf[0..len) (the unconsumed head of the stream; the caller only
 * appends to it between MORE results, and drops `consumed` bytes after any
 * other result, which also resets s).  eof: no more bytes will come.
 * max_frame: a frame longer than this is BAD (bounds memory). */
nc_mjpeg_status nc_mjpeg_next(nc_mjpeg_split *s, const uint8_t *buf, size_t len, int eof,
                              size_t max_frame, nc_mjpeg_cut *ret);

/* ---- YUV4MPEG2 ------------------------------------------------------------- */

/* The stream header line (without its newline).  8-bit colour spaces only
 * (C420*, C422, C444, C444alpha, Cmono; no C means 420): *ret_frame_bytes is
 * the size of one frame's planes, the Y plane (width * height bytes) first.
 * -EINVAL with a sentence for anything else. */
int nc_y4m_parse_header(const char *line, uint32_t *ret_width, uint32_t *ret_height,
                        size_t *ret_frame_bytes, char *why, size_t why_len);

/* ---- frames ------------------------------------------------------------------ */

typedef enum nc_cam_enc {
    NC_CAM_ENC_GREY = 1,    /* width * height bytes, row-major */
    NC_CAM_ENC_JPEG,        /* sent as is */
    NC_CAM_ENC_PNG,         /* (sequences) sent as is */
    NC_CAM_ENC_PGM,         /* (sequences) sent as is */
} nc_cam_enc;

typedef struct nc_cam_frame {
    uint8_t *data;
    size_t len, cap;
    nc_cam_enc enc;
    uint32_t width, height; /* GREY: exact; encoded: from the header, 0 if
                               it could not be read */
    uint64_t index;         /* position in the source, from 0; bad frames
                               count (so indexes match the source's) */
    uint64_t t_read_ns;     /* monotonic, when the frame was complete */
    int bad;                /* not sendable: why says why */
    char why[160];
    char name[256];         /* sequences: the file */
} nc_cam_frame;

void nc_cam_frame_free(nc_cam_frame *f);    /* the buffer; f itself is the caller's */

/* ---- sources ----------------------------------------------------------------- */

typedef enum nc_cam_kind {
    NC_CAM_AUTO = 0,        /* from the path and the first bytes */
    NC_CAM_MJPEG,
    NC_CAM_RAW,
    NC_CAM_Y4M,
    NC_CAM_SEQ,
    NC_CAM_V4L2,
} nc_cam_kind;

typedef struct nc_cam_source_opts {
    const char *path;       /* "-" or NULL: stdin */
    nc_cam_kind kind;
    uint32_t raw_width, raw_height;     /* NC_CAM_RAW */
    uint32_t v4l2_width, v4l2_height;   /* 0: 640x480 */
    uint32_t v4l2_fourcc;   /* 0: MJPEG, else YUYV; see camera.c */
    size_t max_frame;       /* bytes */
} nc_cam_source_opts;

typedef struct nc_cam_source nc_cam_source;

int nc_cam_source_open(const nc_cam_source_opts *o, nc_cam_source **ret, char *why,
                       size_t why_len);
/* Which kind was opened (AUTO resolved). */
nc_cam_kind nc_cam_source_kind(const nc_cam_source *s);
const char *nc_cam_kind_name(nc_cam_kind k);
/* A live source produces frames on its own clock whether they are read or
 * not: a V4L2 device.  A byte stream (a file, a pipe, a FIFO, a socket, a
 * terminal) and a sequence wait for their reader, so they are read whole:
 * what feeds a pipe may be a camera (ffmpeg) or a recording (cat), and
 * only the user knows which (`neocog camera --live`). */
int nc_cam_source_live(const nc_cam_source *s);

/* The next frame into f (its buffer is reused).  1: a frame (possibly bad:
 * f->bad, f->why), 0: the end, < 0: a fatal read error (why).  Waits in
 * slices of 100 ms and returns 0 once *stop is set. */
int nc_cam_source_next(nc_cam_source *s, nc_cam_frame *f, const atomic_int *stop, char *why,
                       size_t why_len);

/* Bytes skipped between MJPEG frames so far (not frames, so not counted as
 * bad frames). */
uint64_t nc_cam_source_skipped(const nc_cam_source *s);
/* Frames the device itself dropped (V4L2 sequence gaps). */
uint64_t nc_cam_source_device_drops(const nc_cam_source *s);

void nc_cam_source_close(nc_cam_source *s);     /* NULL is fine */

#endif

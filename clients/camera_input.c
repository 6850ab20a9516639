/* clients/camera_input.c — see camera_input.h: the frame sources (pipes,
 * files, image sequences, V4L2 devices).  The byte formats they read,
 * MJPEG splitting and YUV4MPEG2 headers, are parsed in camera_formats.c. */
#include "camera_input.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "fileio.h"

#ifdef NC_HAVE_V4L2
#include <linux/videodev2.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#endif

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- frames ------------------------------------------------------------------ */

void nc_cam_frame_free(nc_cam_frame *f)
{
    if (!f)
        return;
    free(f->data);
    f->data = NULL;
    f->len = f->cap = 0;
}

static int frame_reserve(nc_cam_frame *f, size_t n)
{
    if (n <= f->cap)
        return 0;
    size_t c = f->cap ? f->cap : 65536;
    while (c < n)
        c *= 2;
    uint8_t *p = realloc(f->data, c);
    if (!p)
        return -ENOMEM;
    f->data = p;
    f->cap = c;
    return 0;
}

static void frame_reset(nc_cam_frame *f, uint64_t index)
{
    f->len = 0;
    f->enc = NC_CAM_ENC_GREY;
    f->width = f->height = 0;
    f->index = index;
    f->bad = 0;
    f->why[0] = '\0';
    f->name[0] = '\0';
}

/* Width and height from an encoded frame's header (0 when unreadable: the
 * daemon will say what is wrong with it). */
static void frame_sniff(nc_cam_frame *f)
{
    nc_cli_image_kind k;
    uint32_t w, h;
    if (nc_cli_sniff_image(f->data, f->len, &k, &w, &h) == 0) {
        f->width = w;
        f->height = h;
        f->enc = k == NC_CLI_IMAGE_PGM ? NC_CAM_ENC_PGM
               : k == NC_CLI_IMAGE_PNG ? NC_CAM_ENC_PNG : NC_CAM_ENC_JPEG;
    }
}

/* ---- byte streams ------------------------------------------------------------ */

typedef struct bytes {
    int fd;
    int own;                /* close fd at the end */
    int regular;            /* a regular file: reads never wait */
    uint8_t *buf;
    size_t head, tail, cap; /* unread bytes are buf[head..tail) */
    int eof;
} bytes;

static size_t avail(const bytes *b)
{
    return b->tail - b->head;
}

/* Read more, waiting at most 100 ms at a time for a pipe or device and
 * giving up when *stop is set.  1 read something, 0 end of input (eof set),
 * < 0 error. */
static int fill(bytes *b, const atomic_int *stop)
{
    if (b->eof)
        return 0;
    if (b->head > 0 && (b->head >= b->cap / 2 || b->tail == b->cap)) {
        memmove(b->buf, b->buf + b->head, avail(b));
        b->tail -= b->head;
        b->head = 0;
    }
    if (b->tail == b->cap) {
        size_t c = b->cap ? 2 * b->cap : 1u << 18;
        uint8_t *p = realloc(b->buf, c);
        if (!p)
            return -ENOMEM;
        b->buf = p;
        b->cap = c;
    }
    for (;;) {
        if (stop && atomic_load(stop)) {
            b->eof = 1;
            return 0;
        }
        if (!b->regular) {
            struct pollfd pfd = { b->fd, POLLIN, 0 };
            int r = poll(&pfd, 1, 100);
            if (r < 0 && errno != EINTR)
                return -errno;
            if (r <= 0)
                continue;
        }
        ssize_t n = read(b->fd, b->buf + b->tail, b->cap - b->tail);
        if (n > 0) {
            b->tail += (size_t)n;
            return 1;
        }
        if (n == 0) {
            b->eof = 1;
            return 0;
        }
        if (errno != EINTR && errno != EAGAIN)
            return -errno;
    }
}

/* Make at least n bytes available (fewer only at the end of input). */
static int need(bytes *b, size_t n, const atomic_int *stop)
{
    while (avail(b) < n) {
        int r = fill(b, stop);
        if (r <= 0)
            return r;
    }
    return 1;
}

/* ---- sources ----------------------------------------------------------------- */

#ifdef NC_HAVE_V4L2
typedef struct v4l2_map {
    void *start;
    size_t length;
} v4l2_map;
#endif

struct nc_cam_source {
    nc_cam_kind kind;
    int live;
    size_t max_frame;
    uint64_t next_index;
    uint64_t skipped;
    uint64_t device_drops;
    bytes in;
    /* MJPEG */
    nc_mjpeg_split split;
    /* RAW, Y4M */
    uint32_t width, height;
    size_t frame_bytes;
    /* SEQ */
    char **files;
    size_t n_files, next_file;
    /* V4L2 */
    int vfd;
    uint32_t fourcc, bytesperline, v_width, v_height;
    int streaming;
    int have_seq;
    uint32_t last_seq;
#ifdef NC_HAVE_V4L2
    v4l2_map *maps;
    uint32_t n_maps;
#endif
};

const char *nc_cam_kind_name(nc_cam_kind k)
{
    switch (k) {
    case NC_CAM_MJPEG: return "mjpeg";
    case NC_CAM_RAW: return "raw";
    case NC_CAM_Y4M: return "y4m";
    case NC_CAM_SEQ: return "sequence";
    case NC_CAM_V4L2: return "v4l2";
    default: return "auto";
    }
}

nc_cam_kind nc_cam_source_kind(const nc_cam_source *s)
{
    return s->kind;
}

int nc_cam_source_live(const nc_cam_source *s)
{
    return s->live;
}

uint64_t nc_cam_source_skipped(const nc_cam_source *s)
{
    return s->skipped;
}

uint64_t nc_cam_source_device_drops(const nc_cam_source *s)
{
    return s->device_drops;
}

static int has_image_ext(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (!strcasecmp(dot, ".pgm") || !strcasecmp(dot, ".png") ||
                   !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

static int cmp_names(const void *a, const void *b)
{
    /* Version order, so frame_9 comes before frame_10 without zero padding. */
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

static int seq_open(nc_cam_source *s, const char *path, int is_dir, char *why, size_t n)
{
    size_t cap = 0;
    if (is_dir) {
        DIR *d = opendir(path);
        if (!d) {
            snprintf(why, n, "%s: %s", path, strerror(errno));
            return -errno;
        }
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.' || !has_image_ext(e->d_name))
                continue;
            if (s->n_files == cap) {
                cap = cap ? 2 * cap : 256;
                char **p = realloc(s->files, cap * sizeof *p);
                if (!p) {
                    closedir(d);
                    return -ENOMEM;
                }
                s->files = p;
            }
            size_t l = strlen(path) + strlen(e->d_name) + 2;
            if (!(s->files[s->n_files] = malloc(l))) {
                closedir(d);
                return -ENOMEM;
            }
            snprintf(s->files[s->n_files++], l, "%s/%s", path, e->d_name);
        }
        closedir(d);
        if (s->n_files)
            qsort(s->files, s->n_files, sizeof *s->files, cmp_names);
    } else {
        glob_t g;
        int r = glob(path, 0, NULL, &g);   /* glob sorts by name */
        if (r == GLOB_NOSPACE)
            return -ENOMEM;
        if (r == 0) {
            if (!(s->files = calloc(g.gl_pathc ? g.gl_pathc : 1, sizeof *s->files))) {
                globfree(&g);
                return -ENOMEM;
            }
            for (size_t i = 0; i < g.gl_pathc; i++) {
                if (!(s->files[s->n_files] = strdup(g.gl_pathv[i]))) {
                    globfree(&g);
                    return -ENOMEM;
                }
                s->n_files++;
            }
        }
        globfree(&g);
    }
    if (!s->n_files) {
        snprintf(why, n, "%s: no PGM, PNG or JPEG files", path);
        return -ENOENT;
    }
    return 0;
}

#ifdef NC_HAVE_V4L2
static int xioctl(int fd, unsigned long req, void *arg)
{
    int r;
    do
        r = ioctl(fd, req, arg);
    while (r == -1 && errno == EINTR);
    return r;
}

/* Open the device, agree a format (the one asked for; MJPEG by default,
 * falling back to YUYV, the two every UVC camera offers), map 4 buffers
 * and start streaming. */
static int v4l2_open(nc_cam_source *s, const nc_cam_source_opts *o, char *why, size_t n)
{
    const char *path = o->path;
    if ((s->vfd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0) {
        snprintf(why, n, "%s: %s", path, strerror(errno));
        return -errno;
    }
    struct v4l2_capability cap;
    memset(&cap, 0, sizeof cap);
    if (xioctl(s->vfd, VIDIOC_QUERYCAP, &cap) < 0) {
        snprintf(why, n, "%s: not a V4L2 device (%s)", path, strerror(errno));
        return -ENODEV;
    }
    uint32_t caps = cap.capabilities & V4L2_CAP_DEVICE_CAPS ? cap.device_caps : cap.capabilities;
    if (!(caps & V4L2_CAP_VIDEO_CAPTURE) || !(caps & V4L2_CAP_STREAMING)) {
        snprintf(why, n, "%s: no video capture with streaming I/O", path);
        return -ENODEV;
    }
    uint32_t want[2] = { V4L2_PIX_FMT_MJPEG, V4L2_PIX_FMT_YUYV };
    int n_want = 2;
    if (o->v4l2_fourcc) {
        want[0] = o->v4l2_fourcc;
        n_want = 1;
    }
    struct v4l2_format fmt;
    int ok = 0;
    for (int i = 0; i < n_want && !ok; i++) {
        memset(&fmt, 0, sizeof fmt);
        fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        fmt.fmt.pix.width = o->v4l2_width ? o->v4l2_width : 640;
        fmt.fmt.pix.height = o->v4l2_height ? o->v4l2_height : 480;
        fmt.fmt.pix.pixelformat = want[i];
        fmt.fmt.pix.field = V4L2_FIELD_ANY;
        /* The driver may change anything; what it kept is what we get. */
        ok = xioctl(s->vfd, VIDIOC_S_FMT, &fmt) == 0 && fmt.fmt.pix.pixelformat == want[i];
    }
    if (!ok) {
        snprintf(why, n, "%s: the device offers neither MJPEG nor YUYV at any size", path);
        return -ENOTSUP;
    }
    s->fourcc = fmt.fmt.pix.pixelformat;
    s->v_width = fmt.fmt.pix.width;
    s->v_height = fmt.fmt.pix.height;
    s->bytesperline = fmt.fmt.pix.bytesperline ? fmt.fmt.pix.bytesperline : 2 * s->v_width;
    struct v4l2_requestbuffers rb;
    memset(&rb, 0, sizeof rb);
    rb.count = 4;
    rb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    rb.memory = V4L2_MEMORY_MMAP;
    if (xioctl(s->vfd, VIDIOC_REQBUFS, &rb) < 0 || rb.count < 2) {
        snprintf(why, n, "%s: cannot get mmap buffers (%s)", path, strerror(errno));
        return -ENODEV;
    }
    if (!(s->maps = calloc(rb.count, sizeof *s->maps)))
        return -ENOMEM;
    for (uint32_t i = 0; i < rb.count; i++) {
        struct v4l2_buffer vb;
        memset(&vb, 0, sizeof vb);
        vb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        vb.memory = V4L2_MEMORY_MMAP;
        vb.index = i;
        if (xioctl(s->vfd, VIDIOC_QUERYBUF, &vb) < 0) {
            snprintf(why, n, "%s: VIDIOC_QUERYBUF: %s", path, strerror(errno));
            return -errno;
        }
        void *p = mmap(NULL, vb.length, PROT_READ | PROT_WRITE, MAP_SHARED, s->vfd,
                       vb.m.offset);
        if (p == MAP_FAILED) {
            snprintf(why, n, "%s: mmap: %s", path, strerror(errno));
            return -errno;
        }
        s->maps[i] = (v4l2_map){ p, vb.length };
        s->n_maps++;
        if (xioctl(s->vfd, VIDIOC_QBUF, &vb) < 0) {
            snprintf(why, n, "%s: VIDIOC_QBUF: %s", path, strerror(errno));
            return -errno;
        }
    }
    enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(s->vfd, VIDIOC_STREAMON, &type) < 0) {
        snprintf(why, n, "%s: VIDIOC_STREAMON: %s", path, strerror(errno));
        return -errno;
    }
    s->streaming = 1;
    return 0;
}

static int v4l2_next(nc_cam_source *s, nc_cam_frame *f, const atomic_int *stop, char *why,
                     size_t n)
{
    struct v4l2_buffer vb;
    for (;;) {
        if (atomic_load(stop))
            return 0;
        struct pollfd pfd = { s->vfd, POLLIN, 0 };
        int r = poll(&pfd, 1, 100);
        if (r < 0 && errno != EINTR) {
            snprintf(why, n, "poll: %s", strerror(errno));
            return -errno;
        }
        if (r <= 0)
            continue;
        memset(&vb, 0, sizeof vb);
        vb.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        vb.memory = V4L2_MEMORY_MMAP;
        if (xioctl(s->vfd, VIDIOC_DQBUF, &vb) == 0)
            break;
        if (errno == EAGAIN)
            continue;
        snprintf(why, n, "VIDIOC_DQBUF: %s", strerror(errno));
        return -errno;
    }
    frame_reset(f, s->next_index++);
    f->t_read_ns = now_ns();
    /* Sequence numbers the driver skipped are frames it dropped itself
     * because every buffer was full. */
    if (s->have_seq && vb.sequence > s->last_seq + 1)
        s->device_drops += vb.sequence - s->last_seq - 1;
    s->have_seq = 1;
    s->last_seq = vb.sequence;
    const uint8_t *src = s->maps[vb.index].start;
    size_t used = vb.bytesused <= s->maps[vb.index].length ? vb.bytesused
                                                          : s->maps[vb.index].length;
    int err = 0;
    if (vb.flags & V4L2_BUF_FLAG_ERROR) {
        f->bad = 1;
        snprintf(f->why, sizeof f->why, "the device flagged the frame as corrupt");
    } else if (s->fourcc == V4L2_PIX_FMT_MJPEG) {
        if (!(err = frame_reserve(f, used))) {
            memcpy(f->data, src, used);
            f->len = used;
            f->enc = NC_CAM_ENC_JPEG;
            frame_sniff(f);
        }
    } else if ((size_t)s->bytesperline * (s->v_height - 1) + 2 * (size_t)s->v_width > used) {
        f->bad = 1;
        snprintf(f->why, sizeof f->why, "short YUYV frame (%zu bytes)", used);
    } else if (!(err = frame_reserve(f, (size_t)s->v_width * s->v_height))) {
        /* YUYV: Y0 U Y1 V; the luma is every other byte. */
        for (uint32_t y = 0; y < s->v_height; y++) {
            const uint8_t *row = src + (size_t)y * s->bytesperline;
            uint8_t *dst = f->data + (size_t)y * s->v_width;
            for (uint32_t x = 0; x < s->v_width; x++)
                dst[x] = row[2 * x];
        }
        f->len = (size_t)s->v_width * s->v_height;
        f->enc = NC_CAM_ENC_GREY;
        f->width = s->v_width;
        f->height = s->v_height;
    }
    if (xioctl(s->vfd, VIDIOC_QBUF, &vb) < 0 && !err) {
        snprintf(why, n, "VIDIOC_QBUF: %s", strerror(errno));
        return -errno;
    }
    if (err) {
        snprintf(why, n, "out of memory");
        return err;
    }
    return 1;
}
#endif

int nc_cam_source_open(const nc_cam_source_opts *o, nc_cam_source **ret, char *why,
                       size_t why_len)
{
    nc_cam_source *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->vfd = -1;
    s->in.fd = -1;
    s->max_frame = o->max_frame ? o->max_frame : 4u << 20;
    nc_mjpeg_split_init(&s->split);
    const char *path = o->path && strcmp(o->path, "-") ? o->path : NULL;
    nc_cam_kind kind = o->kind;
    int err = 0;
    struct stat st;
    int have_st = path && stat(path, &st) == 0;
    if (kind == NC_CAM_AUTO && path) {
        if (have_st && S_ISDIR(st.st_mode))
            kind = NC_CAM_SEQ;
        else if (have_st && S_ISCHR(st.st_mode) && !strncmp(path, "/dev/video", 10))
            kind = NC_CAM_V4L2;
        else if (!have_st && strpbrk(path, "*?["))
            kind = NC_CAM_SEQ;
    }
    if (kind == NC_CAM_V4L2) {
#ifdef NC_HAVE_V4L2
        s->kind = NC_CAM_V4L2;
        s->live = 1;
        if ((err = v4l2_open(s, o, why, why_len)) < 0)
            goto fail;
        *ret = s;
        return 0;
#else
        snprintf(why, why_len, "%s: this neocog was built without V4L2", path ? path : "-");
        err = -ENOTSUP;
        goto fail;
#endif
    }
    if (kind == NC_CAM_SEQ) {
        s->kind = NC_CAM_SEQ;
        if ((err = seq_open(s, path ? path : ".", have_st && S_ISDIR(st.st_mode), why,
                            why_len)) < 0)
            goto fail;
        *ret = s;
        return 0;
    }
    /* A byte stream: stdin, a file or a FIFO. */
    if (path) {
        if ((s->in.fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
            err = -errno;
            snprintf(why, why_len, "%s: %s", path, strerror(errno));
            goto fail;
        }
        s->in.own = 1;
    } else {
        s->in.fd = 0;
    }
    if (fstat(s->in.fd, &st) == 0 && S_ISREG(st.st_mode))
        s->in.regular = 1;
    if (kind == NC_CAM_AUTO) {
        /* What the first bytes say: a y4m header or a JPEG's SOI. */
        if ((err = need(&s->in, 9, NULL)) < 0) {
            snprintf(why, why_len, "%s: %s", path ? path : "stdin", strerror(-err));
            goto fail;
        }
        const uint8_t *b = s->in.buf + s->in.head;
        if (avail(&s->in) >= 9 && !memcmp(b, "YUV4MPEG2", 9))
            kind = NC_CAM_Y4M;
        else if (avail(&s->in) >= 2 && b[0] == 0xff && b[1] == 0xd8)
            kind = NC_CAM_MJPEG;
        else if (avail(&s->in) == 0) {
            kind = NC_CAM_MJPEG;    /* empty: the end comes at once */
        } else {
            snprintf(why, why_len, "%s: neither MJPEG nor y4m (give --raw WxH for raw grey "
                     "frames)", path ? path : "stdin");
            err = -EINVAL;
            goto fail;
        }
    }
    s->kind = kind;
    if (kind == NC_CAM_RAW) {
        s->width = o->raw_width;
        s->height = o->raw_height;
        s->frame_bytes = (size_t)s->width * s->height;
        if (!s->frame_bytes) {
            snprintf(why, why_len, "--raw needs WxH");
            err = -EINVAL;
            goto fail;
        }
    } else if (kind == NC_CAM_Y4M) {
        /* The header line: at most a few hundred bytes in practice. */
        char line[1024];
        size_t l = 0;
        for (;;) {
            if ((err = need(&s->in, l + 1, NULL)) < 0)
                goto fail;
            if (avail(&s->in) <= l || l + 1 >= sizeof line) {
                snprintf(why, why_len, "y4m: no header line");
                err = -EINVAL;
                goto fail;
            }
            char ch = (char)s->in.buf[s->in.head + l];
            if (ch == '\n')
                break;
            line[l++] = ch;
        }
        line[l] = '\0';
        s->in.head += l + 1;
        if ((err = nc_y4m_parse_header(line, &s->width, &s->height, &s->frame_bytes, why,
                                       why_len)) < 0)
            goto fail;
    }
    *ret = s;
    return 0;
fail:
    nc_cam_source_close(s);
    return err;
}

static int mjpeg_next(nc_cam_source *s, nc_cam_frame *f, const atomic_int *stop, char *why,
                      size_t n)
{
    for (;;) {
        nc_mjpeg_cut c;
        nc_mjpeg_status st = nc_mjpeg_next(&s->split, s->in.buf + s->in.head, avail(&s->in),
                                           s->in.eof, s->max_frame, &c);
        if (st == NC_MJPEG_END)
            return 0;
        if (st == NC_MJPEG_MORE) {
            int r = fill(&s->in, stop);
            if (r < 0) {
                snprintf(why, n, "reading: %s", strerror(-r));
                return r;
            }
            if (r == 0 && stop && atomic_load(stop))
                return 0;
            continue;
        }
        if (st == NC_MJPEG_SKIP) {
            s->skipped += c.consumed;
            s->in.head += c.consumed;
            continue;
        }
        frame_reset(f, s->next_index++);
        f->t_read_ns = now_ns();
        if (st == NC_MJPEG_BAD) {
            f->bad = 1;
            snprintf(f->why, sizeof f->why, "corrupt JPEG (%zu bytes): %s", c.len, c.why);
        } else {
            if (frame_reserve(f, c.len) < 0) {
                snprintf(why, n, "out of memory");
                return -ENOMEM;
            }
            memcpy(f->data, s->in.buf + s->in.head + c.start, c.len);
            f->len = c.len;
            f->enc = NC_CAM_ENC_JPEG;
            frame_sniff(f);
        }
        s->in.head += c.consumed;
        return 1;
    }
}

/* Raw and y4m: fixed-size frames (y4m's behind a FRAME line). */
static int fixed_next(nc_cam_source *s, nc_cam_frame *f, const atomic_int *stop, char *why,
                      size_t n)
{
    int r;
    if (s->kind == NC_CAM_Y4M) {
        /* "FRAME" and optional parameters up to a newline. */
        size_t l = 0;
        for (;;) {
            if ((r = need(&s->in, l + 1, stop)) < 0)
                goto rd_err;
            if (avail(&s->in) <= l) {
                if (l == 0)
                    return 0;           /* a clean end between frames */
                frame_reset(f, s->next_index++);
                f->bad = 1;
                snprintf(f->why, sizeof f->why, "y4m: cut short in a FRAME line");
                s->in.head = s->in.tail;
                return 1;
            }
            if (s->in.buf[s->in.head + l] == '\n')
                break;
            if (++l > 4096) {
                snprintf(why, n, "y4m: FRAME line too long: lost sync");
                return -EPROTO;
            }
        }
        if (l < 5 || memcmp(s->in.buf + s->in.head, "FRAME", 5)) {
            snprintf(why, n, "y4m: expected a FRAME line: lost sync");
            return -EPROTO;
        }
        s->in.head += l + 1;
    }
    if ((r = need(&s->in, s->frame_bytes, stop)) < 0)
        goto rd_err;
    size_t have = avail(&s->in);
    if (have == 0 && s->kind == NC_CAM_RAW)
        return 0;
    frame_reset(f, s->next_index++);
    f->t_read_ns = now_ns();
    if (have < s->frame_bytes) {
        f->bad = 1;
        snprintf(f->why, sizeof f->why, "cut short: %zu of %zu bytes at the end", have,
                 s->frame_bytes);
        s->in.head = s->in.tail;
        return 1;
    }
    size_t y = (size_t)s->width * s->height;
    if (frame_reserve(f, y) < 0) {
        snprintf(why, n, "out of memory");
        return -ENOMEM;
    }
    memcpy(f->data, s->in.buf + s->in.head, y);     /* the Y plane comes first */
    f->len = y;
    f->enc = NC_CAM_ENC_GREY;
    f->width = s->width;
    f->height = s->height;
    s->in.head += s->frame_bytes;
    return 1;
rd_err:
    snprintf(why, n, "reading: %s", strerror(-r));
    return r;
}

static int seq_next(nc_cam_source *s, nc_cam_frame *f, const atomic_int *stop)
{
    if (s->next_file >= s->n_files || atomic_load(stop))
        return 0;
    const char *path = s->files[s->next_file++];
    frame_reset(f, s->next_index++);
    snprintf(f->name, sizeof f->name, "%s", path);
    uint8_t *buf = NULL;
    size_t len = 0;
    int r = nc_file_read(path, s->max_frame, &buf, &len);
    f->t_read_ns = now_ns();
    if (r < 0) {
        f->bad = 1;
        snprintf(f->why, sizeof f->why, "%s: %s", path,
                 r == -EFBIG ? "larger than the frame limit" : strerror(-r));
        return 1;
    }
    /* Take the file's buffer as the frame's: no copy. */
    free(f->data);
    f->data = buf;
    f->len = len;
    f->cap = len + 1;           /* nc_file_read adds a NUL */
    f->enc = 0;
    frame_sniff(f);
    if (!f->enc) {
        f->bad = 1;
        snprintf(f->why, sizeof f->why, "%s: not a binary PGM, PNG or JPEG image", path);
    }
    return 1;
}

int nc_cam_source_next(nc_cam_source *s, nc_cam_frame *f, const atomic_int *stop, char *why,
                       size_t why_len)
{
    switch (s->kind) {
    case NC_CAM_MJPEG: return mjpeg_next(s, f, stop, why, why_len);
    case NC_CAM_RAW:
    case NC_CAM_Y4M: return fixed_next(s, f, stop, why, why_len);
    case NC_CAM_SEQ: return seq_next(s, f, stop);
#ifdef NC_HAVE_V4L2
    case NC_CAM_V4L2: return v4l2_next(s, f, stop, why, why_len);
#endif
    default:
        snprintf(why, why_len, "no source");
        return -EINVAL;
    }
}

void nc_cam_source_close(nc_cam_source *s)
{
    if (!s)
        return;
#ifdef NC_HAVE_V4L2
    if (s->streaming) {
        enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
        xioctl(s->vfd, VIDIOC_STREAMOFF, &type);
    }
    for (uint32_t i = 0; i < s->n_maps; i++)
        munmap(s->maps[i].start, s->maps[i].length);
    free(s->maps);
#endif
    if (s->vfd >= 0)
        close(s->vfd);
    if (s->in.own && s->in.fd >= 0)
        close(s->in.fd);
    free(s->in.buf);
    for (size_t i = 0; i < s->n_files; i++)
        free(s->files[i]);
    free(s->files);
    free(s);
}

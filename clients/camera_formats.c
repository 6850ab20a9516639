/* clients/camera_formats.c — see camera_input.h: the byte formats a
 * camera stream comes in, parsed from memory with no I/O: MJPEG split into
 * its JPEG frames, YUV4MPEG2 stream headers.  camera_input.c reads the
 * bytes.
 *
 * Layer: clients. */
#include "camera_input.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE SIZE_MAX

/* ---- MJPEG splitting -------------------------------------------------------- */

void nc_mjpeg_split_init(nc_mjpeg_split *s)
{
    s->start = NONE;
    s->pos = 0;
    s->in_scan = 0;
}

static int is_soi(const uint8_t *b)
{
    return b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff;
}

/* A result that hands bytes back resets the state: the caller drops them,
 * so every offset would be stale. */
static nc_mjpeg_status cut(nc_mjpeg_split *s, nc_mjpeg_cut *c, nc_mjpeg_status st, size_t start,
                           size_t len, size_t consumed, const char *why)
{
    c->start = start;
    c->len = len;
    c->consumed = consumed;
    c->why = why;
    nc_mjpeg_split_init(s);
    return st;
}

/* A frame whose structure broke at s->pos.  Only its SOI is consumed: a
 * bad length may have jumped over the next frames' starts, so the search
 * for the next SOI begins right behind this one (what lies between is
 * counted as skipped bytes). */
static nc_mjpeg_status bad(nc_mjpeg_split *s, nc_mjpeg_cut *c, size_t len, const char *why)
{
    return cut(s, c, NC_MJPEG_BAD, 0, s->pos < len ? s->pos : len, 2, why);
}

nc_mjpeg_status nc_mjpeg_next(nc_mjpeg_split *s, const uint8_t *b, size_t len, int eof,
                              size_t max_frame, nc_mjpeg_cut *c)
{
    if (s->start == NONE) {
        size_t i = s->pos;
        while (i + 3 <= len && !is_soi(b + i)) {
            const uint8_t *ff = memchr(b + i + 1, 0xff, len - i - 1);
            i = ff ? (size_t)(ff - b) : len;
        }
        if (i + 3 > len) {
            /* No SOI yet.  Keep the last two bytes: an SOI may straddle. */
            if (eof)
                return len ? cut(s, c, NC_MJPEG_SKIP, 0, 0, len, NULL)
                           : cut(s, c, NC_MJPEG_END, 0, 0, 0, NULL);
            if (len > 2)
                return cut(s, c, NC_MJPEG_SKIP, 0, 0, len - 2, NULL);
            s->pos = 0;
            return NC_MJPEG_MORE;
        }
        if (i > 0)
            return cut(s, c, NC_MJPEG_SKIP, 0, 0, i, NULL);
        s->start = 0;
        s->pos = 2;
        s->in_scan = 0;
    }
    for (;;) {
        if (s->pos > max_frame)
            return bad(s, c, len, "frame larger than the limit");
        if (s->in_scan) {
            /* Entropy-coded data: FF 00 is a stuffed FF, FF D0..D7 a restart
             * marker, FF FF fill; any other FF xx ends the scan. */
            size_t p = s->pos;
            while (p + 1 < len) {
                const uint8_t *ff = memchr(b + p, 0xff, len - p - 1);
                if (!ff) {
                    p = len - 1;
                    break;
                }
                p = (size_t)(ff - b);
                uint8_t m = b[p + 1];
                if (m == 0x00 || (m >= 0xd0 && m <= 0xd7))
                    p += 2;
                else if (m == 0xff)
                    p += 1;
                else
                    break;
            }
            s->pos = p;
            if (p + 1 >= len)
                goto more;
            s->in_scan = 0;
        }
        if (s->pos + 2 > len)
            goto more;
        if (b[s->pos] != 0xff)
            return bad(s, c, len, "no marker where one belongs");
        uint8_t m = b[s->pos + 1];
        if (m == 0xff) {                    /* fill byte before a marker */
            s->pos++;
            continue;
        }
        if (m == 0xd9)                      /* EOI */
            return cut(s, c, NC_MJPEG_FRAME, 0, s->pos + 2, s->pos + 2, NULL);
        if (m == 0xd8)                      /* the next frame began first */
            return cut(s, c, NC_MJPEG_FRAME_NO_EOI, 0, s->pos, s->pos, NULL);
        if (m == 0x01 || (m >= 0xd0 && m <= 0xd7)) {   /* no length */
            s->pos += 2;
            continue;
        }
        if (m == 0x00)
            return bad(s, c, len, "FF 00 outside a scan");
        if (s->pos + 4 > len)
            goto more;
        size_t seg = (size_t)b[s->pos + 2] << 8 | b[s->pos + 3];
        if (seg < 2)
            return bad(s, c, len, "marker segment length below 2");
        s->pos += 2 + seg;
        if (m == 0xda)                      /* SOS: its data follows */
            s->in_scan = 1;
    }
more:
    if (eof)
        return cut(s, c, NC_MJPEG_BAD, 0, len, len, "cut short at the end of the stream");
    return NC_MJPEG_MORE;
}

/* ---- YUV4MPEG2 ------------------------------------------------------------- */

int nc_y4m_parse_header(const char *line, uint32_t *ret_width, uint32_t *ret_height,
                        size_t *ret_frame_bytes, char *why, size_t why_len)
{
    if (strncmp(line, "YUV4MPEG2", 9) || (line[9] && line[9] != ' ')) {
        snprintf(why, why_len, "not a YUV4MPEG2 stream");
        return -EINVAL;
    }
    unsigned long w = 0, h = 0;
    char cs[32] = "420";
    for (const char *p = line + 9; *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        const char *end = strchr(p, ' ');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char *e;
        if (*p == 'W') {
            w = strtoul(p + 1, &e, 10);
            if (e != p + n)
                w = 0;
        } else if (*p == 'H') {
            h = strtoul(p + 1, &e, 10);
            if (e != p + n)
                h = 0;
        } else if (*p == 'C') {
            if (n - 1 >= sizeof cs) {
                snprintf(why, why_len, "y4m: unknown colour space");
                return -EINVAL;
            }
            memcpy(cs, p + 1, n - 1);
            cs[n - 1] = '\0';
        }
        /* F (rate), I (interlacing), A (aspect), X (comments): not needed */
        p += n;
    }
    if (!w || !h || w > 16384 || h > 16384) {
        snprintf(why, why_len, "y4m: missing or bad frame size (W and H)");
        return -EINVAL;
    }
    size_t y = (size_t)w * h, cw = (w + 1) / 2, ch = (h + 1) / 2, planes;
    /* 420, 420jpeg, 420paldv, 420mpeg2; not 420p10, 420p12 (16-bit) */
    if (!strncmp(cs, "420", 3) && !(cs[3] == 'p' && isdigit((unsigned char)cs[4])))
        planes = y + 2 * cw * ch;
    else if (!strcmp(cs, "422"))
        planes = y + 2 * cw * h;
    else if (!strcmp(cs, "444"))
        planes = 3 * y;
    else if (!strcmp(cs, "444alpha"))
        planes = 4 * y;
    else if (!strcmp(cs, "mono"))
        planes = y;
    else {
        snprintf(why, why_len, "y4m: colour space C%s is not supported (8-bit 420, 422, "
                               "444 and mono are)", cs);
        return -EINVAL;
    }
    *ret_width = (uint32_t)w;
    *ret_height = (uint32_t)h;
    *ret_frame_bytes = planes;
    return 0;
}

/* core/data/gunzip.c — gzip decompression of a whole buffer (see dataset.h).
 *
 * Layer: core.  zlib's inflate on memory, nothing else: no files.  The output
 * is capped before it is allocated, so a small "gzip bomb" cannot make us
 * allocate more than max_out (+1) bytes. */
#include "dataset.h"

#include <limits.h>
#include <string.h>
#include <zlib.h>

static int is_gzip(const uint8_t *in, size_t len)
{
    return len >= 2 && in[0] == 0x1f && in[1] == 0x8b;
}

/* zlib counts in uInt (32 bits); feed larger buffers in slices. */
static uInt clamp_uint(size_t n)
{
    return n > UINT_MAX ? UINT_MAX : (uInt)n;
}

int nc_gunzip(const uint8_t *in, size_t in_len, size_t max_out,
              uint8_t **ret_out, size_t *ret_len)
{
    if ((!in && in_len) || !ret_out || !ret_len)
        return -EINVAL;

    if (!is_gzip(in, in_len)) {
        if (in_len > max_out)
            return -EOVERFLOW;
        uint8_t *copy = malloc(in_len ? in_len : 1);
        if (!copy)
            return -ENOMEM;
        if (in_len)
            memcpy(copy, in, in_len);
        *ret_out = copy;
        *ret_len = in_len;
        return 0;
    }

    /* The buffer may grow to max_out + 1: one byte more than allowed is how
     * we learn that the stream wants to exceed the cap. */
    size_t hard = max_out < SIZE_MAX ? max_out + 1 : SIZE_MAX;
    size_t cap = in_len < SIZE_MAX / 4 ? in_len * 4 : SIZE_MAX;
    if (cap < 65536)
        cap = 65536;
    if (cap > hard)
        cap = hard;
    uint8_t *out = malloc(cap);
    if (!out)
        return -ENOMEM;

    z_stream z;
    memset(&z, 0, sizeof(z));
    /* 16 + MAX_WBITS: gzip wrapper only, so zlib checks each member's CRC
     * and length trailer for us. */
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        free(out);
        return -ENOMEM;
    }

    int err = 0;
    size_t in_off = 0, out_len = 0;
    for (;;) {
        if (out_len == cap) {
            if (cap == hard) {
                err = -EOVERFLOW;
                break;
            }
            size_t ncap = cap <= hard / 2 ? cap * 2 : hard;
            uint8_t *nb = realloc(out, ncap);
            if (!nb) {
                err = -ENOMEM;
                break;
            }
            out = nb;
            cap = ncap;
        }
        z.next_in = (Bytef *)(uintptr_t)(in + in_off);  /* zlib never writes it */
        z.avail_in = clamp_uint(in_len - in_off);
        z.next_out = out + out_len;
        z.avail_out = clamp_uint(cap - out_len);
        uInt avail_in0 = z.avail_in, avail_out0 = z.avail_out;
        int zr = inflate(&z, Z_NO_FLUSH);
        in_off += avail_in0 - z.avail_in;
        out_len += avail_out0 - z.avail_out;
        if (out_len > max_out) {
            err = -EOVERFLOW;
            break;
        }
        if (zr == Z_STREAM_END) {
            /* Concatenated members form one stream (RFC 1952 §2.2).  Anything
             * else after a member is garbage; gzip(1) ignores it with a
             * warning, but a dataset file with a tail is not to be trusted. */
            if (in_off == in_len)
                break;
            if (!is_gzip(in + in_off, in_len - in_off)) {
                err = -EBADMSG;
                break;
            }
            if (inflateReset(&z) != Z_OK) {
                err = -EBADMSG;
                break;
            }
            continue;
        }
        if (zr == Z_OK || zr == Z_BUF_ERROR) {
            /* Z_BUF_ERROR only means "no progress possible".  With the
             * output full we grow it; with input left we feed the next
             * slice; with neither, the member ended early: truncated. */
            if (zr == Z_OK || z.avail_out == 0 || in_off < in_len)
                continue;
            err = -EBADMSG;
            break;
        }
        err = zr == Z_MEM_ERROR ? -ENOMEM : -EBADMSG;   /* corrupt data */
        break;
    }
    inflateEnd(&z);
    if (err) {
        free(out);
        return err;
    }
    if (out_len == 0 || out_len < cap / 2) {
        /* give back what a generous first guess over-allocated */
        uint8_t *nb = realloc(out, out_len ? out_len : 1);
        if (nb)
            out = nb;
    }
    *ret_out = out;
    *ret_len = out_len;
    return 0;
}

int nc_gunzip_replace(uint8_t **buf, size_t *len, size_t max_out)
{
    if (!buf || !len || (!*buf && *len))
        return -EINVAL;
    if (!is_gzip(*buf, *len))
        return 0;    /* plain bytes stay where they are: no copy */
    uint8_t *out = NULL;
    size_t out_len = 0;
    int err = nc_gunzip(*buf, *len, max_out, &out, &out_len);
    if (err)
        return err;
    free(*buf);
    *buf = out;
    *len = out_len;
    return 0;
}

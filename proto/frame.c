/* proto/frame.c — frame header parsing/writing and the incremental decoder.
 *
 * Layer: proto.  See frame.h for the layout and the error codes. */
#include "frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint32_t effective_limit(uint32_t max_len)
{
    return max_len == 0 ? NC_FRAME_DEFAULT_MAX : max_len;
}

int nc_frame_header_parse(const uint8_t *buf, size_t len, uint32_t max_len,
                          nc_frame_header *ret)
{
    if (!buf || !ret || len < NC_FRAME_HEADER_LEN)
        return -EINVAL;
    /* Magic first: a peer speaking HTTP or sending garbage gets "bad magic",
     * the most useful of the messages. */
    if (buf[0] != NC_FRAME_MAGIC0 || buf[1] != NC_FRAME_MAGIC1 ||
        buf[2] != NC_FRAME_MAGIC2 || buf[3] != NC_FRAME_MAGIC3)
        return -EPROTO;
    if (buf[4] != NC_FRAME_VERSION)
        return -EPROTONOSUPPORT;
    if (buf[5] != 0 || buf[6] != 0 || buf[7] != 0)
        return -EBADMSG;
    uint32_t length = (uint32_t)buf[8] << 24 | (uint32_t)buf[9] << 16 |
                      (uint32_t)buf[10] << 8 | (uint32_t)buf[11];
    if (length > effective_limit(max_len))
        return -EMSGSIZE;
    ret->version = buf[4];
    ret->flags = buf[5];
    ret->length = length;
    return 0;
}

void nc_frame_header_write(uint8_t out[NC_FRAME_HEADER_LEN], uint32_t length)
{
    out[0] = NC_FRAME_MAGIC0;
    out[1] = NC_FRAME_MAGIC1;
    out[2] = NC_FRAME_MAGIC2;
    out[3] = NC_FRAME_MAGIC3;
    out[4] = NC_FRAME_VERSION;
    out[5] = 0;
    out[6] = 0;
    out[7] = 0;
    out[8] = (uint8_t)(length >> 24);
    out[9] = (uint8_t)(length >> 16);
    out[10] = (uint8_t)(length >> 8);
    out[11] = (uint8_t)length;
}

const char *nc_frame_strerror(int err)
{
    switch (err) {
    case 0: return "ok";
    case -EPROTO: return "bad frame magic (expected \"NCOG\"): not the neocog protocol";
    case -EPROTONOSUPPORT: return "unsupported frame version (this side speaks version 1)";
    case -EBADMSG: return "frame header has flag or reserved bits set";
    case -EMSGSIZE: return "frame length exceeds the limit";
    case -EINVAL: return "invalid argument";
    case -ENOMEM: return "out of memory";
    case -EAGAIN: return "no complete frame";
    default: return "frame error";
    }
}

int nc_frame_decoder_init(nc_frame_decoder *d, uint32_t max_len)
{
    if (!d || max_len > NC_FRAME_MAX_LIMIT)
        return -EINVAL;
    memset(d, 0, sizeof *d);
    d->max_len = effective_limit(max_len);
    return 0;
}

void nc_frame_decoder_fini(nc_frame_decoder *d)
{
    if (!d)
        return;
    free(d->buf);
    d->buf = NULL;
    d->cap = d->have = 0;
    d->hdr_have = 0;
    d->complete = 0;
}

void nc_frame_decoder_reset(nc_frame_decoder *d)
{
    if (!d)
        return;
    d->hdr_have = 0;
    d->have = 0;
    d->complete = 0;
    d->err = 0;
}

/* Room for at least `need` payload bytes, growing geometrically but never
 * past the frame's announced length. */
static int reserve(nc_frame_decoder *d, size_t need, size_t frame_len)
{
    if (need <= d->cap)
        return 0;
    size_t cap = d->cap ? d->cap : 4096;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > frame_len)
        cap = frame_len;
    uint8_t *p = realloc(d->buf, cap);
    if (!p)
        return -ENOMEM;
    d->buf = p;
    d->cap = cap;
    return 0;
}

int nc_frame_decoder_feed(nc_frame_decoder *d, const uint8_t *data, size_t len,
                          size_t *ret_used)
{
    size_t used = 0;
    int r = 0;
    if (!d || !ret_used || (!data && len)) {
        if (ret_used)
            *ret_used = 0;
        return -EINVAL;
    }
    if (d->err) {
        *ret_used = 0;
        return d->err;
    }
    if (d->complete) {
        /* The previous frame has been handed out: start the next. */
        d->complete = 0;
        d->hdr_have = 0;
        d->have = 0;
    }
    if (d->hdr_have < NC_FRAME_HEADER_LEN) {
        size_t take = NC_FRAME_HEADER_LEN - d->hdr_have;
        if (take > len)
            take = len;
        memcpy(d->hdr + d->hdr_have, data, take);
        d->hdr_have += (uint32_t)take;
        used += take;
        /* Check the magic as soon as its bytes are in, so garbage fails on
         * its first bytes instead of after twelve. */
        static const uint8_t magic[4] = { NC_FRAME_MAGIC0, NC_FRAME_MAGIC1,
                                          NC_FRAME_MAGIC2, NC_FRAME_MAGIC3 };
        size_t check = d->hdr_have < 4 ? d->hdr_have : 4;
        if (memcmp(d->hdr, magic, check) != 0) {
            r = -EPROTO;
            goto fail;
        }
        if (d->hdr_have < NC_FRAME_HEADER_LEN) {
            *ret_used = used;
            return 0;
        }
        if ((r = nc_frame_header_parse(d->hdr, NC_FRAME_HEADER_LEN, d->max_len,
                                       &d->cur)))
            goto fail;
    }
    size_t want = d->cur.length - d->have;
    size_t take = len - used;
    if (take > want)
        take = want;
    if (take) {
        if ((r = reserve(d, d->have + take, d->cur.length)))
            goto fail;
        memcpy(d->buf + d->have, data + used, take);
        d->have += take;
        used += take;
    }
    *ret_used = used;
    if (d->have == d->cur.length) {
        d->complete = 1;
        return 1;
    }
    return 0;
fail:
    d->err = r;
    *ret_used = used;
    return r;
}

int nc_frame_decoder_payload(const nc_frame_decoder *d, const uint8_t **ret_buf,
                             size_t *ret_len)
{
    if (!d || !ret_buf || !ret_len)
        return -EINVAL;
    if (!d->complete)
        return -EAGAIN;
    /* An empty payload has no buffer; hand out a valid pointer anyway. */
    static const uint8_t empty[1];
    *ret_buf = d->have ? d->buf : empty;
    *ret_len = d->have;
    return 0;
}

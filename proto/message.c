/* proto/message.c — capped protobuf-c unpacking, framing of packed messages.
 *
 * Layer: proto.  See message.h. */
#include "message.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

struct nc_msg {
    ProtobufCAllocator alloc;   /* allocator_data points back at this */
    size_t used, limit;
    ProtobufCMessage *msg;
};

/* Counting allocator.  Only the total matters: a message is freed all at
 * once, so frees need no bookkeeping. */
static void *capped_alloc(void *data, size_t size)
{
    nc_msg *m = data;
    if (size > m->limit - m->used)
        return NULL;
    m->used += size;
    return malloc(size ? size : 1);
}

static void capped_free(void *data, void *p)
{
    (void)data;
    free(p);
}

int nc_msg_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *buf,
                  size_t len, size_t mem_limit, nc_msg **ret_msg)
{
    if (!desc || (!buf && len) || !ret_msg)
        return -EINVAL;
    nc_msg *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    if (mem_limit == 0)
        mem_limit = len > (SIZE_MAX - 65536) / 16 ? SIZE_MAX : 16 * len + 65536;
    m->limit = mem_limit;
    m->alloc.alloc = capped_alloc;
    m->alloc.free = capped_free;
    m->alloc.allocator_data = m;
    static const uint8_t empty[1];
    m->msg = protobuf_c_message_unpack(desc, &m->alloc, len, buf ? buf : empty);
    if (!m->msg) {
        /* protobuf-c folds "malformed" and "allocation failed" into NULL;
         * a limit hit shows as the counter at its cap. */
        int err = m->used + 64 >= m->limit ? -ENOMEM : -EBADMSG;
        free(m);
        return err;
    }
    *ret_msg = m;
    return 0;
}

void nc_msg_free(nc_msg *m)
{
    if (!m)
        return;
    if (m->msg)
        protobuf_c_message_free_unpacked(m->msg, &m->alloc);
    free(m);
}

ProtobufCMessage *nc_msg_get(const nc_msg *m)
{
    return m ? m->msg : NULL;
}

size_t nc_msg_mem_used(const nc_msg *m)
{
    return m ? m->used : 0;
}

int nc_msg_frame(const ProtobufCMessage *msg, uint32_t max_len,
                 uint8_t **ret_buf, size_t *ret_len)
{
    if (!msg || !ret_buf || !ret_len)
        return -EINVAL;
    if (max_len == 0)
        max_len = NC_FRAME_DEFAULT_MAX;
    size_t n = protobuf_c_message_get_packed_size(msg);
    if (n > max_len)
        return -EMSGSIZE;
    uint8_t *buf = malloc(NC_FRAME_HEADER_LEN + n);
    if (!buf)
        return -ENOMEM;
    size_t packed = protobuf_c_message_pack(msg, buf + NC_FRAME_HEADER_LEN);
    if (packed != n) {
        free(buf);
        return -EBADMSG;
    }
    nc_frame_header_write(buf, (uint32_t)n);
    *ret_buf = buf;
    *ret_len = NC_FRAME_HEADER_LEN + n;
    return 0;
}

const char *nc_msg_code_name(int code)
{
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&neocog__code__descriptor, code);
    return v ? v->name : "UNKNOWN_CODE";
}

/* proto/message.h — unpacking and packing neocog messages safely.
 *
 * Layer: proto (needs protobuf-c and the generated neocog.pb-c.h).  Error
 * codes as in core/common/common.h; nothing here prints or exits.
 *
 * Unpacking untrusted bytes: protobuf-c allocates while it parses, and a
 * small message can ask for much more memory than its own size (every empty
 * sub-message in a repeated field is one or two bytes on the wire but a
 * whole struct in memory).  nc_msg_unpack therefore runs protobuf-c with an
 * allocator that counts bytes and fails past mem_limit, so a hostile frame
 * costs at most mem_limit, and reports that as -ENOMEM. */
#ifndef NC_MESSAGE_H
#define NC_MESSAGE_H

#include <stddef.h>
#include <stdint.h>

#include "neocog.pb-c.h"

/* An unpacked message and the allocator it was built with. */
typedef struct nc_msg nc_msg;

/* Unpack buf[0..len) as a message of type desc (e.g.
 * &neocog__request__descriptor), allocating at most mem_limit bytes in all
 * (0: 16 x len + 64 KiB, enough for any honest message).  Errors: -EBADMSG
 * malformed protobuf (or a limit hit while parsing: protobuf-c does not say
 * which), -ENOMEM, -EINVAL.  Free with nc_msg_free. */
int nc_msg_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *buf,
                  size_t len, size_t mem_limit, nc_msg **ret_msg);
void nc_msg_free(nc_msg *m);                    /* NULL is fine */
/* The message inside (cast to the type of the descriptor used). */
ProtobufCMessage *nc_msg_get(const nc_msg *m);
/* Bytes the unpack allocated (for tests and metrics). */
size_t nc_msg_mem_used(const nc_msg *m);

/* Convenience wrappers. */
static inline Neocog__Request *nc_msg_request(const nc_msg *m)
{
    return (Neocog__Request *)nc_msg_get(m);
}
static inline Neocog__Reply *nc_msg_reply(const nc_msg *m)
{
    return (Neocog__Reply *)nc_msg_get(m);
}

/* Pack msg into one malloc'd frame (header + payload).  -EMSGSIZE if the
 * packed message is longer than max_len (0: NC_FRAME_DEFAULT_MAX). */
int nc_msg_frame(const ProtobufCMessage *msg, uint32_t max_len,
                 uint8_t **ret_buf, size_t *ret_len);

/* "OK", "INVALID_ARGUMENT"...: the gRPC name of a status code; "UNKNOWN_CODE"
 * for values outside the enum.  Never NULL. */
const char *nc_msg_code_name(int code);

#endif

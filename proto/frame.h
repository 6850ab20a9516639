/* proto/frame.h — stream framing of neocogd messages, shared by the daemon
 * and every client.
 *
 * Layer: proto.  Pure C: no I/O, no allocation beyond the decoder's buffer,
 * nothing printed.  Errors are negative errno values (below), as in core/.
 *
 * A frame is a 12-byte header followed by one packed protobuf message
 * (proto/neocog.proto: Request from client to daemon, Reply back):
 *
 *   offset size  field
 *        0    4  magic    "NCOG" (0x4e 0x43 0x4f 0x47)
 *        4    1  version  NC_FRAME_VERSION (1)
 *        5    1  flags    0; no flag is defined in version 1, and a set
 *                         bit is an error so a future flag cannot be
 *                         silently ignored
 *        6    2  reserved 0
 *        8    4  length   payload bytes, big-endian (network order)
 *       12  ...  payload  exactly `length` bytes; 0 is allowed (an empty
 *                         protobuf message is valid: all fields default)
 *
 * The receiver refuses a length above its limit (NC_FRAME_DEFAULT_MAX,
 * 4 MiB, unless configured) from the header alone, before reading or
 * allocating the payload.  The header is 12 bytes so payloads start
 * 4-byte aligned in a buffer that starts aligned.
 *
 * Errors (what went wrong with the byte stream; none is recoverable, because
 * after a bad header nobody knows where the next frame starts):
 *   -EPROTO           bad magic (not this protocol, or garbage)
 *   -EPROTONOSUPPORT  a version this code does not speak
 *   -EBADMSG          a flag or reserved bit set
 *   -EMSGSIZE         length above the receiver's limit
 *   -EINVAL           bad arguments (a programming error)
 *   -ENOMEM           the decoder could not grow its buffer */
#ifndef NC_FRAME_H
#define NC_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define NC_FRAME_MAGIC0 'N'
#define NC_FRAME_MAGIC1 'C'
#define NC_FRAME_MAGIC2 'O'
#define NC_FRAME_MAGIC3 'G'
#define NC_FRAME_VERSION 1u
#define NC_FRAME_HEADER_LEN 12u
/* Default payload limit both ways. */
#define NC_FRAME_DEFAULT_MAX (4u << 20)
/* Ceiling for a configured limit: lengths are 32-bit, and a daemon that
 * takes 1 GiB messages has been misconfigured. */
#define NC_FRAME_MAX_LIMIT (1u << 30)

/* Where the daemon listens unless told otherwise; clients default to the
 * same.  The TCP listener binds loopback only by default. */
#define NC_DEFAULT_TCP_HOST "127.0.0.1"
#define NC_DEFAULT_TCP_PORT 5517
#define NC_DEFAULT_HTTP_PORT 5518
#define NC_DEFAULT_UNIX_PATH "/run/neocogd/neocogd.sock"

typedef struct nc_frame_header {
    uint8_t version;
    uint8_t flags;
    uint32_t length;        /* payload bytes */
} nc_frame_header;

/* Check the first NC_FRAME_HEADER_LEN bytes of buf (len must be at least
 * that, else -EINVAL) against the layout above and the payload limit
 * max_len (0 means NC_FRAME_DEFAULT_MAX).  *ret written on success only. */
int nc_frame_header_parse(const uint8_t *buf, size_t len, uint32_t max_len,
                          nc_frame_header *ret);

/* Write a version-1 header with no flags for a payload of `length` bytes. */
void nc_frame_header_write(uint8_t out[NC_FRAME_HEADER_LEN], uint32_t length);

/* A short, fixed English sentence for a framing error code above, or for
 * any other negative errno (then strerror-like).  Never NULL. */
const char *nc_frame_strerror(int err);

/* ---- incremental decoder ------------------------------------------------
 *
 * For a byte stream that arrives in arbitrary pieces (one byte at a time
 * included): feed bytes, get whole frames.  The buffer grows with the bytes
 * actually received, never to the announced length up front, so a peer
 * that announces 4 MiB and sends 12 bytes costs 12 bytes.  Errors are
 * sticky: once feed has failed it fails again with the same code until the
 * decoder is reset or finished. */
typedef struct nc_frame_decoder {
    uint32_t max_len;       /* payload limit */
    uint8_t hdr[NC_FRAME_HEADER_LEN];
    uint32_t hdr_have;      /* header bytes received so far */
    nc_frame_header cur;    /* valid once hdr_have == NC_FRAME_HEADER_LEN */
    uint8_t *buf;           /* payload bytes of the current frame */
    size_t cap, have;
    int complete;           /* 1 between a completed feed and the next */
    int err;                /* sticky error, 0 when fine */
} nc_frame_decoder;

/* max_len 0 means NC_FRAME_DEFAULT_MAX; above NC_FRAME_MAX_LIMIT: -EINVAL. */
int nc_frame_decoder_init(nc_frame_decoder *d, uint32_t max_len);
/* Frees the buffer; safe twice and on a zeroed struct. */
void nc_frame_decoder_fini(nc_frame_decoder *d);
/* Forget any partial frame and error; keeps the limit and the buffer. */
void nc_frame_decoder_reset(nc_frame_decoder *d);

/* Consume bytes from data[0..len) up to the end of the next frame.
 * Returns 1 when a frame is complete (then *ret_used bytes were taken and
 * the rest belongs to later frames: feed them after reading this one),
 * 0 when every byte was taken and more are needed, or a negative error
 * (*ret_used then says how many bytes were consumed before it).  After 1,
 * nc_frame_decoder_payload() gives the payload until the next feed. */
int nc_frame_decoder_feed(nc_frame_decoder *d, const uint8_t *data, size_t len,
                          size_t *ret_used);

/* The completed frame's payload (borrowed); -EAGAIN if none is complete. */
int nc_frame_decoder_payload(const nc_frame_decoder *d, const uint8_t **ret_buf,
                             size_t *ret_len);

#endif

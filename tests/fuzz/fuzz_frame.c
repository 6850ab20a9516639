/* tests/fuzz/fuzz_frame.c — libFuzzer target: the byte stream a client
 * sends, through the incremental frame decoder and the capped protobuf
 * unpacking, as the daemon does.
 *
 * The first input byte picks the piece size the stream is fed in (1..64
 * bytes, to exercise every split of header and payload); the rest is the
 * stream.  Each complete frame is unpacked as a Request and walked. */
#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "message.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const Neocog__Request *rq)
{
    volatile size_t sink = 0;
    if (rq->kind_case == NEOCOG__REQUEST__KIND_RECOGNIZE && rq->recognize) {
        for (size_t i = 0; i < rq->recognize->n_images; i++) {
            const Neocog__Image *im = rq->recognize->images[i];
            sink += im->data.len + im->width + im->height;
            if (im->data.len)
                sink += im->data.data[im->data.len - 1];
        }
    }
    (void)sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = (size_t)(data[0] % 64) + 1;
    data++;
    size--;
    /* Header checks on their own too. */
    nc_frame_header h;
    if (size >= NC_FRAME_HEADER_LEN)
        (void)nc_frame_header_parse(data, size, 1u << 16, &h);
    nc_frame_decoder d;
    if (nc_frame_decoder_init(&d, 1u << 16))
        return 0;
    size_t pos = 0;
    while (pos < size) {
        size_t n = size - pos < piece ? size - pos : piece;
        size_t used = 0;
        int r = nc_frame_decoder_feed(&d, data + pos, n, &used);
        pos += used;
        if (r < 0)
            break;
        if (r == 1) {
            const uint8_t *payload;
            size_t len;
            nc_msg *m = NULL;
            if (!nc_frame_decoder_payload(&d, &payload, &len) &&
                !nc_msg_unpack(&neocog__request__descriptor, payload, len, 0, &m))
                walk(nc_msg_request(m));
            nc_msg_free(m);
        }
        if (used == 0 && r == 0)
            break;
    }
    nc_frame_decoder_fini(&d);
    return 0;
}

/* tests/fuzz/fuzz_image.c — libFuzzer target: untrusted image bytes through
 * the daemon's decoders (JPEG, PNG, PGM, raw) with their caps, then the
 * segmentation of whatever decoded.
 *
 * Input: byte 0 the format (mod 5, as neocog.proto's ImageFormat), bytes
 * 1..4 width and height for raw (little-endian u16 each), the rest the
 * image data.  Segmentation runs as the worker asks for it, with step 9's
 * uncut alternatives, and every patch is read.  The decoded image also goes
 * through the networks' preprocessing as a whole-image request would: the
 * shipped neocognitron's (deskewed, Otsu) and the CNN's. */
#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "image.h"
#include "split.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The image as a whole-digit request: every prep, both polarities; any
 * error is fine, a crash or a write past out is not. */
static void prep_both(const nc_image *img, int invert)
{
    static float out[65 * 65];
    nc_prep neo = NC_PREP_NEOCOG_65, cnn = NC_PREP_CNN_29;
    neo.box = 48;
    neo.deskew = 1;
    neo.threshold = -1.0f;
    neo.invert = cnn.invert = (uint32_t)invert;
    (void)nc_prep_apply(img, &neo, out);
    (void)nc_prep_apply(img, &cnn, out);
    cnn.deskew = 1;
    (void)nc_prep_apply(img, &cnn, out);
    nc_prep line = NC_PREP_LINE_29;     /* the whole image as a line's cell */
    line.invert = (uint32_t)invert;
    (void)nc_prep_apply(img, &line, out);
}

static unsigned patch_sum(const nc_image *p)
{
    unsigned s = 0;
    for (uint32_t y = 0; y < p->height; y++)
        for (uint32_t x = 0; x < p->width; x++)
            s += p->pixels[(size_t)y * p->stride + x];
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5)
        return 0;
    int format = data[0] % 5;
    uint32_t w = (uint32_t)data[1] | (uint32_t)data[2] << 8;
    uint32_t h = (uint32_t)data[3] | (uint32_t)data[4] << 8;
    /* Limits like a daemon's, small enough for the fuzzer's memory cap. */
    nc_decode_limits lim = { 2048, 1u << 20 };
    nc_image *img = NULL;
    char why[256];
    if (nc_decode_image(format, data + 5, size - 5, w, h, &lim, &img, why, sizeof why) == 0) {
        prep_both(img, data[0] / 5 % 2);
        nc_segmenter *seg = NULL;
        nc_segment_result *r = NULL;
        /* as the worker asks: with the uncut alternatives of step 9 */
        nc_split_opts so = { .polarity = data[0] / 5 % 3, .alternatives = 1 };
        if (nc_split_frame_opts(&seg, img, &so, 64, &r, why, sizeof why) == 0) {
            /* every patch is read, the uncut ones too, as the worker does;
             * an alternative names two digits that exist */
            volatile unsigned sum = 0;
            for (uint32_t i = 0; i < r->count; i++)
                sum += patch_sum(&r->digits[i].patch);
            for (uint32_t a = 0; a < r->alt_count; a++) {
                if (r->alts[a].first + 1 >= r->count)
                    __builtin_trap();
                sum += patch_sum(&r->alts[a].whole.patch);
            }
            (void)sum;
            nc_segment_result_free(r);
        }
        nc_segmenter_free(seg);
        nc_image_free(img);
    }
    return 0;
}

/* tests/daemon/test_inputs.c — inputs that are valid but unusual, and
 * settings that cannot work together.
 *
 * The decoder alone (io/decode.h): a PNG whose IHDR claims more than
 * the pixel limit per side is refused in the words a JPEG or PGM of that
 * size gets; a CMYK JPEG (as TurboJPEG writes it, YCCK with Adobe's
 * inverted channels) decodes to the grey it shows.  The real binary
 * (argv[1]): max_images_per_request above queue_capacity, or
 * max_frame_bytes above queue_max_bytes, stops start-up with exit 2 and a
 * sentence naming both settings, since such a request could never be
 * queued. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <turbojpeg.h>

#include "decode.h"
#include "harness.h"
#include "test.h"

static const char *bin;
static char dir[256];

static const nc_decode_limits limits = { .max_dim = 4096, .max_pixels = 16777216 };

/* PNG's chunk CRC (ISO 3309, reflected 0xedb88320). */
static uint32_t crc32_png(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xffffffffu;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* A smooth 32x24 test card: a gradient with a darker bar, so JPEG's loss
 * stays small and a mix-up of channels or polarity shows. */
enum { CARD_W = 32, CARD_H = 24 };
static void make_card(uint8_t *px)
{
    for (int y = 0; y < CARD_H; y++)
        for (int x = 0; x < CARD_W; x++)
            px[y * CARD_W + x] = (uint8_t)(x >= 12 && x < 20 ? 40 : 120 + 4 * y);
}

/* ---- PNG larger than the limit: the same sentence as JPEG and PGM --------------- */

static void expect_too_large(const char *what, int format, const uint8_t *data, size_t len,
                             const char *size)
{
    nc_image *img = NULL;
    char why[256] = "";
    int err = nc_decode_image(format, data, len, 0, 0, &limits, &img, why, sizeof why);
    CHECK_MSG(err == -ERANGE, "%s: error %d (%s), wanted -ERANGE", what, err, why);
    CHECK_MSG(strstr(why, "exceeds the 4096 pixel limit per side") && strstr(why, size),
              "%s said: %s", what, why);
    nc_image_free(img);
}

static void test_png_too_large(void)
{
    uint8_t card[CARD_W * CARD_H];
    make_card(card);
    uint8_t *png = NULL;
    size_t len = 0;
    REQUIRE(nc_encode_png(card, CARD_W, CARD_H, &png, &len) == 0 && len > 33);
    REQUIRE(!memcmp(png + 12, "IHDR", 4));

    /* The small PNG itself decodes. */
    nc_image *img = NULL;
    char why[256] = "";
    CHECK_INT_EQ(nc_decode_image(NC_DECODE_AUTO, png, len, 0, 0, &limits, &img, why,
                                 sizeof why), 0);
    CHECK(img && img->width == CARD_W && img->height == CARD_H &&
          !memcmp(img->pixels, card, sizeof card));
    nc_image_free(img);

    /* Width, then height, over the cap with a valid CRC: libpng would
     * accept the header, only the limit refuses it. */
    const uint32_t sizes[][2] = { { 5000, CARD_H }, { CARD_W, 70000 } };
    for (size_t k = 0; k < 2; k++) {
        put_be32(png + 16, sizes[k][0]);
        put_be32(png + 20, sizes[k][1]);
        put_be32(png + 29, crc32_png(png + 12, 17));
        char size[64];
        snprintf(size, sizeof size, "%ux%u", sizes[k][0], sizes[k][1]);
        expect_too_large("PNG", NC_DECODE_AUTO, png, len, size);
        expect_too_large("PNG named", NC_DECODE_PNG, png, len, size);
    }
    free(png);

    /* The JPEG wording it must match. */
    uint8_t *big = calloc(5000, 8);
    uint8_t *jpeg = NULL;
    REQUIRE(big);
    if (nc_encode_jpeg(big, 5000, 8, &jpeg, &len) == 0)
        expect_too_large("JPEG", NC_DECODE_AUTO, jpeg, len, "5000x8");
    else
        CHECK_MSG(0, "cannot encode the wide JPEG");
    free(jpeg);
    free(big);
}

/* ---- CMYK JPEG: decoded to its grey ------------------------------------------------ */

static void test_cmyk_jpeg(void)
{
    uint8_t card[CARD_W * CARD_H];
    make_card(card);
    /* Inverted CMYK (255: no ink) of grey g: no colour ink, K = g, which
     * TurboJPEG itself would turn back into R = G = B = g. */
    uint8_t cmyk[CARD_W * CARD_H * 4];
    for (int i = 0; i < CARD_W * CARD_H; i++) {
        cmyk[4 * i + 0] = cmyk[4 * i + 1] = cmyk[4 * i + 2] = 255;
        cmyk[4 * i + 3] = card[i];
    }
    tjhandle tj = tjInitCompress();
    REQUIRE(tj);
    unsigned char *jpeg = NULL;
    unsigned long len = 0;
    int rc = tjCompress2(tj, cmyk, CARD_W, CARD_W * 4, CARD_H, TJPF_CMYK, &jpeg, &len,
                         TJSAMP_444, 95, 0);
    CHECK_MSG(rc == 0, "cannot write a CMYK JPEG: %s", tjGetErrorStr2(tj));
    tjDestroy(tj);
    if (rc)
        return;

    /* It is one: TurboJPEG reads it back as YCCK. */
    tjhandle td = tjInitDecompress();
    int w = 0, h = 0, ss = 0, cs = -1;
    CHECK(td && tjDecompressHeader3(td, jpeg, len, &w, &h, &ss, &cs) == 0);
    CHECK_MSG(cs == TJCS_YCCK || cs == TJCS_CMYK, "colour space %d", cs);
    if (td)
        tjDestroy(td);

    nc_image *img = NULL;
    char why[256] = "";
    int err = nc_decode_image(NC_DECODE_AUTO, jpeg, len, 0, 0, &limits, &img, why, sizeof why);
    CHECK_MSG(err == 0, "CMYK JPEG: error %d: %s", err, why);
    if (img) {
        CHECK(img->width == CARD_W && img->height == CARD_H);
        int worst = 0;
        for (int i = 0; i < CARD_W * CARD_H; i++) {
            int d = abs((int)img->pixels[i] - (int)card[i]);
            if (d > worst)
                worst = d;
        }
        CHECK_MSG(worst <= 12, "CMYK JPEG decoded up to %d grey levels off", worst);
        /* The bar is darker than the gradient beside it: polarity kept. */
        CHECK(img->pixels[5 * CARD_W + 15] + 50 < img->pixels[5 * CARD_W + 5]);
    }
    nc_image_free(img);

    /* A truncated CMYK stream is still an error, not a partial image. */
    img = NULL;
    err = nc_decode_image(NC_DECODE_JPEG, jpeg, len / 2, 0, 0, &limits, &img, why, sizeof why);
    CHECK_MSG(err == -EBADMSG && !img, "truncated CMYK JPEG: %d (%s)", err, why);
    nc_image_free(img);
    tjFree(jpeg);
}

/* ---- settings under which a request could never be queued ----------------------- */

static int run_to_exit(const char *const *args, char **ret_log)
{
    static int runs;
    char log[400];
    snprintf(log, sizeof log, "%s/run-%d.log", dir, runs++);
    nc_daemon d;
    int status = -1;
    if (nc_daemon_spawn(&d, bin, dir, 0, args, log) == 0) {
        status = nc_daemon_wait_exit(&d, 10000);
        nc_daemon_stop(&d, 1000);
    }
    *ret_log = nc_read_text(log);
    if (!*ret_log)
        *ret_log = strdup("");
    return status;
}

static void test_unqueueable_settings(void)
{
    char *log;
    const char *images[] = { "--queue-capacity", "4", "--max-images-per-request", "64",
                             "--listen-tcp", "none", "--http", "none", NULL };
    CHECK_INT_EQ(run_to_exit(images, &log), 2);
    CHECK_MSG(strstr(log, "max_images_per_request (64) exceeds queue_capacity (4)"),
              "max_images_per_request > queue_capacity said: %s", log);
    free(log);

    /* The same from a config file, the limits set on different lines. */
    char conf[400];
    snprintf(conf, sizeof conf, "%s/tight.conf", dir);
    const char text[] = "queue_capacity = 100\nmax_images_per_request = 101\n";
    REQUIRE(nc_write_file(conf, text, sizeof text - 1) == 0);
    const char *file[] = { "--config", conf, "--listen-tcp", "none", "--http", "none", NULL };
    CHECK_INT_EQ(run_to_exit(file, &log), 2);
    CHECK_MSG(strstr(log, "max_images_per_request (101) exceeds queue_capacity (100)"),
              "from a file said: %s", log);
    free(log);

    const char *bytes[] = { "--queue-max-bytes", "2048", "--max-frame-bytes", "4096",
                            "--listen-tcp", "none", "--http", "none", NULL };
    CHECK_INT_EQ(run_to_exit(bytes, &log), 2);
    CHECK_MSG(strstr(log, "max_frame_bytes (4096) exceeds queue_max_bytes (2048)"),
              "max_frame_bytes > queue_max_bytes said: %s", log);
    free(log);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_inputs NEOCOGD\n");
        return 2;
    }
    bin = argv[1];
    snprintf(dir, sizeof dir, "/tmp/neocogd-inputs-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    signal(SIGPIPE, SIG_IGN);

    test_png_too_large();
    test_cmyk_jpeg();
    test_unqueueable_settings();

    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return nc_test_finish();
}

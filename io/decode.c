/* io/decode.c — JPEG (TurboJPEG), PNG (libpng), binary PGM and raw grey
 * decoding with caps.  See decode.h. */
#include "decode.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>
#include <turbojpeg.h>

static int fail(char *why, size_t n, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *why, size_t n, int err, const char *fmt, ...)
{
    if (why && n) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return err;
}

const char *nc_decode_format_name(int format)
{
    switch (format) {
    case NC_DECODE_AUTO: return "auto";
    case NC_DECODE_PGM: return "PGM";
    case NC_DECODE_PNG: return "PNG";
    case NC_DECODE_JPEG: return "JPEG";
    case NC_DECODE_RAW: return "raw";
    default: return "unknown";
    }
}

int nc_decode_sniff(const uint8_t *d, size_t len)
{
    if (len >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff)
        return NC_DECODE_JPEG;
    if (len >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8))
        return NC_DECODE_PNG;
    if (len >= 2 && d[0] == 'P' && (d[1] == '5' || d[1] == '2'))
        return NC_DECODE_PGM;
    return NC_DECODE_AUTO;
}

/* Zero, too wide, too tall or too many pixels: -ERANGE with the reason. */
static int check_dims(uint32_t w, uint32_t h, const nc_decode_limits *lim,
                      char *why, size_t n)
{
    if (w == 0 || h == 0)
        return fail(why, n, -ERANGE, "image has zero size (%ux%u)", w, h);
    if (w > lim->max_dim || h > lim->max_dim)
        return fail(why, n, -ERANGE, "image %ux%u exceeds the %u pixel limit per side",
                    w, h, lim->max_dim);
    if ((uint64_t)w * h > lim->max_pixels)
        return fail(why, n, -ERANGE, "image %ux%u exceeds the %llu pixel limit", w, h,
                    (unsigned long long)lim->max_pixels);
    if (w > NC_IMAGE_MAX_DIM || h > NC_IMAGE_MAX_DIM)
        return fail(why, n, -ERANGE, "image %ux%u too large", w, h);
    return 0;
}

/* ---- raw ------------------------------------------------------------------ */

static int decode_raw(const uint8_t *data, size_t len, uint32_t w, uint32_t h,
                      const nc_decode_limits *lim, nc_image **ret, char *why, size_t n)
{
    int err = check_dims(w, h, lim, why, n);
    if (err)
        return err;
    if ((uint64_t)w * h != len)
        return fail(why, n, -EBADMSG,
                    "raw image: %zu bytes but width x height = %ux%u = %llu", len, w, h,
                    (unsigned long long)w * h);
    nc_image *img;
    if ((err = nc_image_new(w, h, &img)))
        return fail(why, n, err, "out of memory");
    memcpy(img->pixels, data, len);
    *ret = img;
    return 0;
}

/* ---- PGM (P5) ------------------------------------------------------------- */

static int decode_pgm(const uint8_t *d, size_t len, const nc_decode_limits *lim,
                      nc_image **ret, char *why, size_t n)
{
    if (len < 2 || d[0] != 'P')
        return fail(why, n, -EBADMSG, "not a PGM file (no P5 magic)");
    if (d[1] == '2')
        return fail(why, n, -ENOTSUP, "ASCII PGM (P2) is not supported; send P5");
    if (d[1] != '5')
        return fail(why, n, -EBADMSG, "not a binary PGM file (no P5 magic)");
    size_t p = 2;
    uint32_t w, h, maxval;
    int err;
    if ((err = nc_pgm_number(d, len, &p, &w)) || (err = nc_pgm_number(d, len, &p, &h)) ||
        (err = nc_pgm_number(d, len, &p, &maxval)))
        return err == -ERANGE ? fail(why, n, -ERANGE, "PGM header number too large")
                              : fail(why, n, -EBADMSG, "PGM header is malformed or truncated");
    /* Exactly one whitespace byte separates the header from the pixels. */
    if (p >= len || !(d[p] == ' ' || d[p] == '\t' || d[p] == '\n' || d[p] == '\r'))
        return fail(why, n, -EBADMSG, "PGM header is malformed or truncated");
    p++;
    if (maxval == 0 || maxval > 65535)
        return fail(why, n, -EBADMSG, "PGM maxval %u is invalid", maxval);
    if (maxval > 255)
        return fail(why, n, -ENOTSUP, "16-bit PGM (maxval %u) is not supported", maxval);
    if ((err = check_dims(w, h, lim, why, n)))
        return err;
    uint64_t need = (uint64_t)w * h;
    if (len - p < need)
        return fail(why, n, -EBADMSG, "PGM truncated: %zu pixel bytes, %llu needed",
                    len - p, (unsigned long long)need);
    nc_image *img;
    if ((err = nc_image_new(w, h, &img)))
        return fail(why, n, err, "out of memory");
    const uint8_t *px = d + p;
    if (maxval == 255) {
        memcpy(img->pixels, px, need);
    } else {
        /* Stretch to 0..255; samples above maxval are clamped. */
        for (uint64_t i = 0; i < need; i++) {
            uint32_t v = px[i] > maxval ? maxval : px[i];
            img->pixels[i] = (uint8_t)((v * 255u + maxval / 2) / maxval);
        }
    }
    *ret = img;
    return 0;
}

/* ---- JPEG ------------------------------------------------------------------ */

/* TurboJPEG's CMYK is Adobe's inverted form (255: no ink), and it turns
 * CMYK into RGB as R = C * K / 255 (likewise G from M, B from Y); grey is
 * then the luminance a YCbCr JPEG's Y channel holds (BT.601 weights). */
static void cmyk_to_gray(const uint8_t *cmyk, size_t n_px, uint8_t *grey)
{
    for (size_t i = 0; i < n_px; i++) {
        const uint8_t *p = cmyk + 4 * i;
        uint32_t r = p[0] * p[3], g = p[1] * p[3], b = p[2] * p[3];   /* x 255 */
        uint32_t y = 299 * r + 587 * g + 114 * b;                       /* x 255000 */
        grey[i] = (uint8_t)((y + 127500) / 255000);
    }
}

static int decode_jpeg(const uint8_t *d, size_t len, const nc_decode_limits *lim,
                       nc_image **ret, char *why, size_t n)
{
    if (len > (size_t)0xffffffffu)
        return fail(why, n, -ERANGE, "JPEG too large");
    tjhandle tj = tjInitDecompress();
    if (!tj)
        return fail(why, n, -ENOMEM, "cannot start the JPEG decoder");
    int w = 0, h = 0, subsamp = 0, colorspace = 0, err = 0;
    nc_image *img = NULL;
    uint8_t *cmyk = NULL;
    if (tjDecompressHeader3(tj, d, (unsigned long)len, &w, &h, &subsamp, &colorspace)) {
        err = fail(why, n, -EBADMSG, "corrupt JPEG header: %s", tjGetErrorStr2(tj));
        goto out;
    }
    if (w <= 0 || h <= 0) {
        err = fail(why, n, -ERANGE, "JPEG has zero size");
        goto out;
    }
    if ((err = check_dims((uint32_t)w, (uint32_t)h, lim, why, n)))
        goto out;
    if ((err = nc_image_new((uint32_t)w, (uint32_t)h, &img))) {
        err = fail(why, n, err, "out of memory");
        goto out;
    }
    /* STOPONWARNING: a truncated or damaged stream is an error, not a
     * half-grey image; LIMITSCANS: a progressive file with thousands of
     * scans would otherwise cost unbounded CPU. */
    const int flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
    if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
        /* libjpeg converts CMYK to nothing but CMYK: decode the four
         * channels and mix them to grey here. */
        cmyk = malloc((size_t)w * (size_t)h * 4);
        if (!cmyk) {
            err = fail(why, n, -ENOMEM, "out of memory");
            goto out;
        }
        if (tjDecompress2(tj, d, (unsigned long)len, cmyk, w, w * 4, h, TJPF_CMYK, flags)) {
            err = fail(why, n, -EBADMSG, "corrupt or truncated JPEG: %s", tjGetErrorStr2(tj));
            goto out;
        }
        cmyk_to_gray(cmyk, (size_t)w * (size_t)h, img->pixels);
    } else if (tjDecompress2(tj, d, (unsigned long)len, img->pixels, w, w, h, TJPF_GRAY,
                             flags)) {
        err = fail(why, n, -EBADMSG, "corrupt or truncated JPEG: %s", tjGetErrorStr2(tj));
        goto out;
    }
    *ret = img;
    img = NULL;
out:
    free(cmyk);
    nc_image_free(img);
    tjDestroy(tj);
    return err;
}

/* ---- PNG ------------------------------------------------------------------- */

typedef struct png_src {
    const uint8_t *data;
    size_t len, pos;
    char msg[128];          /* libpng's error text, for the client */
} png_src;

static void png_read_mem(png_structp png, png_bytep out, size_t count)
{
    png_src *s = png_get_io_ptr(png);
    if (count > s->len - s->pos)
        png_error(png, "truncated PNG data");
    memcpy(out, s->data + s->pos, count);
    s->pos += count;
}

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_src *s = png_get_error_ptr(png);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;      /* warnings (bad ancillary chunks) do not stop decoding */
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int decode_png(const uint8_t *d, size_t len, const nc_decode_limits *lim,
                      nc_image **ret, char *why, size_t n)
{
    if (len < 8 || png_sig_cmp(d, 0, 8))
        return fail(why, n, -EBADMSG, "not a PNG file (bad signature)");
    /* The size is judged from IHDR (always the first chunk: length 13,
     * then width and height big-endian) before libpng sees it, so a PNG
     * too large is told so in the words JPEG and PGM get, not as libpng's
     * "Invalid IHDR data" from its user limits (which stay as a backstop). */
    if (len >= 24 && !memcmp(d + 8, "\0\0\0\x0dIHDR", 8)) {
        int e = check_dims(be32(d + 16), be32(d + 20), lim, why, n);
        if (e)
            return e;
    }
    png_src src = { .data = d, .len = len, .pos = 0, .msg = "" };
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src,
                                             png_on_error, png_on_warning);
    if (!png)
        return fail(why, n, -ENOMEM, "cannot start the PNG decoder");
    png_infop info = png_create_info_struct(png);
    /* Touched after setjmp and read after a longjmp: volatile. */
    nc_image *volatile img = NULL;
    png_bytep *volatile rows = NULL;
    volatile int err = 0;
    if (!info) {
        err = fail(why, n, -ENOMEM, "cannot start the PNG decoder");
        goto out;
    }
    if (setjmp(png_jmpbuf(png))) {
        if (!err)
            err = fail(why, n, -EBADMSG, "corrupt or truncated PNG: %s", src.msg);
        goto out;
    }
    /* libpng's own caps: dimensions refused while reading IHDR, and no
     * ancillary chunk (text, ICC...) may make it allocate more than 1 MiB. */
    png_set_user_limits(png, lim->max_dim, lim->max_dim);
    png_set_chunk_malloc_max(png, 1u << 20);
    png_set_chunk_cache_max(png, 128);
    png_set_read_fn(png, &src, png_read_mem);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int e = check_dims(w, h, lim, why, n);
    if (e) {
        err = e;
        goto out;
    }
    int type = png_get_color_type(png, info);
    /* Everything to 8-bit grey: expand palettes and low bit depths, drop
     * 16-bit precision and alpha, mix colour to luminance. */
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    if (type & PNG_COLOR_MASK_COLOR)
        png_set_rgb_to_gray_fixed(png, 1, -1, -1);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != w || png_get_channels(png, info) != 1) {
        err = fail(why, n, -ENOTSUP, "PNG variant could not be converted to 8-bit grey");
        goto out;
    }
    nc_image *im = NULL;
    if ((e = nc_image_new(w, h, &im))) {
        err = fail(why, n, e, "out of memory");
        goto out;
    }
    img = im;
    rows = malloc(h * sizeof *rows);
    if (!rows) {
        err = fail(why, n, -ENOMEM, "out of memory");
        goto out;
    }
    for (png_uint_32 y = 0; y < h; y++)
        rows[y] = img->pixels + (size_t)y * w;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    *ret = img;
    img = NULL;
out:
    free(rows);
    nc_image_free(img);
    png_destroy_read_struct(&png, info ? &info : NULL, NULL);
    return err;
}

int nc_decode_image(int format, const uint8_t *data, size_t len,
                    uint32_t width, uint32_t height,
                    const nc_decode_limits *lim, nc_image **ret_img,
                    char *why, size_t why_len)
{
    if ((!data && len) || !lim || !ret_img)
        return fail(why, why_len, -EINVAL, "invalid arguments");
    static const uint8_t empty[1];
    if (!data)
        data = empty;
    if (format == NC_DECODE_AUTO) {
        format = nc_decode_sniff(data, len);
        if (format == NC_DECODE_AUTO)
            return fail(why, why_len, -EBADMSG,
                        len ? "unrecognised image format (not JPEG, PNG or PGM; raw "
                              "pixels need format RAW_GRAY)"
                            : "empty image data");
    }
    switch (format) {
    case NC_DECODE_RAW: return decode_raw(data, len, width, height, lim, ret_img, why, why_len);
    case NC_DECODE_PGM: return decode_pgm(data, len, lim, ret_img, why, why_len);
    case NC_DECODE_JPEG: return decode_jpeg(data, len, lim, ret_img, why, why_len);
    case NC_DECODE_PNG: return decode_png(data, len, lim, ret_img, why, why_len);
    default: return fail(why, why_len, -ENOTSUP, "unknown image format %d", format);
    }
}

/* tools/pgm.c — see pgm.h. */
#include "pgm.h"

#include <stdio.h>
#include <string.h>

int nc_pgm_parse(const uint8_t *buf, size_t len, nc_image *ret)
{
    if (!buf || !ret)
        return -EINVAL;
    if (len < 2 || buf[0] != 'P' || (buf[1] != '5' && buf[1] != '2'))
        return -EBADMSG;
    int binary = buf[1] == '5';
    size_t p = 2;
    uint32_t w, h, maxval;
    int err;
    if ((err = nc_pgm_number(buf, len, &p, &w)) || (err = nc_pgm_number(buf, len, &p, &h)) ||
        (err = nc_pgm_number(buf, len, &p, &maxval)))
        return err;
    if (w == 0 || h == 0 || w > NC_IMAGE_MAX_DIM || h > NC_IMAGE_MAX_DIM)
        return -ERANGE;
    if (maxval == 0 || maxval > 65535)
        return -EBADMSG;
    size_t n = (size_t)w * h;
    size_t bpp = maxval > 255 ? 2 : 1;
    uint8_t *px = malloc(n);
    if (!px)
        return -ENOMEM;
    if (binary) {
        p++;   /* exactly one whitespace byte ends the header */
        if (p > len || len - p < n * bpp) { free(px); return -EBADMSG; }
        for (size_t i = 0; i < n; i++) {
            uint32_t v = bpp == 1 ? buf[p + i] : (uint32_t)buf[p + 2 * i] << 8 | buf[p + 2 * i + 1];
            if (v > maxval) v = maxval;
            px[i] = (uint8_t)((v * 255 + maxval / 2) / maxval);
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            uint32_t v;
            if ((err = nc_pgm_number(buf, len, &p, &v))) { free(px); return err == -ERANGE ? -EBADMSG : err; }
            if (v > maxval) v = maxval;
            px[i] = (uint8_t)((v * 255 + maxval / 2) / maxval);
        }
    }
    ret->width = w;
    ret->height = h;
    ret->stride = w;
    ret->pixels = px;
    return 0;
}

int nc_pgm_encode(const nc_image *img, uint8_t **ret_buf, size_t *ret_len)
{
    if (!img || !img->pixels || !ret_buf || !ret_len)
        return -EINVAL;
    char head[64];
    int hl = snprintf(head, sizeof head, "P5\n%u %u\n255\n", img->width, img->height);
    size_t n = (size_t)img->width * img->height;
    uint8_t *b = malloc((size_t)hl + n);
    if (!b)
        return -ENOMEM;
    memcpy(b, head, (size_t)hl);
    for (uint32_t y = 0; y < img->height; y++)
        memcpy(b + hl + (size_t)y * img->width, img->pixels + (size_t)y * img->stride, img->width);
    *ret_buf = b;
    *ret_len = (size_t)hl + n;
    return 0;
}

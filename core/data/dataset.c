/* core/data/dataset.c — IDX image and label files, plain or gzip (see dataset.h).
 *
 * Layer: core.  Parses caller-provided bytes.  Header fields are checked
 * against the caps and against the bytes actually present before the
 * dataset's own buffers are allocated.
 *
 * IDX (big-endian): magic 00 00 <type> <ndims>, then ndims u32 sizes, then
 * the data.  We read type 0x08 (unsigned byte) only: images with 3 dims
 * (count, rows, cols), labels with 1 dim (count).  Label bytes may be any
 * value 0..255: IDX does not restrict them and the class count belongs to
 * the model, not the file, so the trainer checks labels < n_classes. */
#include "dataset.h"

#include <string.h>

#define IDX_MAGIC_IMAGES 0x00000803u
#define IDX_MAGIC_LABELS 0x00000801u
#define IDX_IMAGES_HEADER 16u
#define IDX_LABELS_HEADER 8u

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           (uint32_t)p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Bytes of a plain-or-gzip input: borrowed when plain (no copy of a 47 MB
 * file), inflated into *owned when gzip. */
static int idx_bytes(const uint8_t *in, size_t len, uint8_t **owned,
                     const uint8_t **ret_p, size_t *ret_len)
{
    *owned = NULL;
    if (len >= 2 && in[0] == 0x1f && in[1] == 0x8b) {
        int e = nc_gunzip(in, len, NC_GUNZIP_MAX_OUT, owned, ret_len);
        if (e < 0)
            return e;
        *ret_p = *owned;
        return 0;
    }
    *ret_p = in;
    *ret_len = len;
    return 0;
}

/* A wrong magic is -EBADMSG, except an IDX file of the right rank holding
 * another element type (e.g. float images), which is a valid file we do not
 * read: -ENOTSUP.  A label file passed as images (rank 1) stays -EBADMSG. */
static int magic_err(const uint8_t *p, uint8_t ndims)
{
    if (p[0] != 0 || p[1] != 0 || p[3] != ndims)
        return -EBADMSG;
    switch (p[2]) {
    case 0x09: case 0x0b: case 0x0c: case 0x0d: case 0x0e:
        return -ENOTSUP;
    default:
        return -EBADMSG;
    }
}

/* Check an image file's header against the caps and the bytes present. */
static int check_images(const uint8_t *p, size_t len, uint32_t *ret_count,
                        uint32_t *ret_rows, uint32_t *ret_cols)
{
    if (len >= 4 && get_be32(p) != IDX_MAGIC_IMAGES)
        return magic_err(p, 3);
    if (len < IDX_IMAGES_HEADER)
        return -EBADMSG;
    uint32_t count = get_be32(p + 4), rows = get_be32(p + 8), cols = get_be32(p + 12);
    if (rows == 0 || cols == 0)
        return -EBADMSG;
    if (count > NC_IDX_MAX_ITEMS || rows > NC_IDX_MAX_DIM || cols > NC_IDX_MAX_DIM)
        return -ERANGE;
    size_t n;
    if (nc_size_mul((size_t)count, (size_t)rows * cols, &n) < 0)
        return -EOVERFLOW;      /* only on a 32-bit host */
    /* Exactly the promised bytes: fewer is a truncated file, more is a file
     * whose header lies about its count. */
    if (len - IDX_IMAGES_HEADER != n)
        return -EBADMSG;
    *ret_count = count;
    *ret_rows = rows;
    *ret_cols = cols;
    return 0;
}

static int check_labels(const uint8_t *p, size_t len, uint32_t *ret_count)
{
    if (len >= 4 && get_be32(p) != IDX_MAGIC_LABELS)
        return magic_err(p, 1);
    if (len < IDX_LABELS_HEADER)
        return -EBADMSG;
    uint32_t count = get_be32(p + 4);
    if (count > NC_IDX_MAX_ITEMS)
        return -ERANGE;
    if (len - IDX_LABELS_HEADER != count)
        return -EBADMSG;
    *ret_count = count;
    return 0;
}

int nc_dataset_parse(const uint8_t *images, size_t images_len,
                     const uint8_t *labels, size_t labels_len,
                     nc_dataset *ret)
{
    if (!images || !ret || (!labels && labels_len))
        return -EINVAL;
    uint8_t *img_owned = NULL, *lab_owned = NULL, *pixels = NULL, *labs = NULL;
    const uint8_t *ip, *lp = NULL;
    size_t ilen, llen = 0;
    uint32_t count, rows, cols, lcount;
    int e;

    if ((e = idx_bytes(images, images_len, &img_owned, &ip, &ilen)) < 0 ||
        (e = check_images(ip, ilen, &count, &rows, &cols)) < 0)
        goto out;
    if (labels) {
        if ((e = idx_bytes(labels, labels_len, &lab_owned, &lp, &llen)) < 0 ||
            (e = check_labels(lp, llen, &lcount)) < 0)
            goto out;
        if (lcount != count) {
            e = -EBADMSG;
            goto out;
        }
    }

    size_t n_pix = ilen - IDX_IMAGES_HEADER;
    if (img_owned) {
        /* Reuse the inflated buffer: slide the pixels over the header. */
        memmove(img_owned, img_owned + IDX_IMAGES_HEADER, n_pix);
        pixels = img_owned;
        img_owned = NULL;
    } else {
        pixels = malloc(n_pix ? n_pix : 1);
        if (!pixels) {
            e = -ENOMEM;
            goto out;
        }
        memcpy(pixels, ip + IDX_IMAGES_HEADER, n_pix);
    }
    if (labels) {
        labs = malloc(count ? count : 1);
        if (!labs) {
            e = -ENOMEM;
            goto out;
        }
        memcpy(labs, lp + IDX_LABELS_HEADER, count);
    }
    *ret = (nc_dataset){ .count = count, .rows = rows, .cols = cols,
                         .pixels = pixels, .labels = labs };
    pixels = labs = NULL;
    e = 0;
out:
    free(pixels);
    free(labs);
    free(img_owned);
    free(lab_owned);
    return e;
}

void nc_dataset_fini(nc_dataset *d)
{
    if (!d)
        return;
    NC_FREE(d->pixels);
    NC_FREE(d->labels);
    d->count = d->rows = d->cols = 0;
}

int nc_dataset_to_idx(const nc_dataset *d, uint32_t first, uint32_t count,
                      uint8_t **ret_images, size_t *ret_images_len,
                      uint8_t **ret_labels, size_t *ret_labels_len)
{
    if (!d || !ret_images || !ret_images_len ||
        (ret_labels && !ret_labels_len) || !d->pixels)
        return -EINVAL;
    if ((uint64_t)first + count > d->count)
        return -ERANGE;
    if (d->rows == 0 || d->cols == 0 || d->rows > NC_IDX_MAX_DIM ||
        d->cols > NC_IDX_MAX_DIM)
        return -EINVAL;
    size_t img_size = (size_t)d->rows * d->cols;    /* <= 2^24: fits */
    size_t n_pix;
    if (nc_size_mul(count, img_size, &n_pix) < 0 ||
        n_pix > SIZE_MAX - IDX_IMAGES_HEADER)
        return -EOVERFLOW;
    int want_labels = ret_labels && d->labels;

    uint8_t *img = malloc(IDX_IMAGES_HEADER + n_pix);
    uint8_t *lab = want_labels ? malloc(IDX_LABELS_HEADER + (size_t)count) : NULL;
    if (!img || (want_labels && !lab)) {
        free(img);
        free(lab);
        return -ENOMEM;
    }
    put_be32(img, IDX_MAGIC_IMAGES);
    put_be32(img + 4, count);
    put_be32(img + 8, d->rows);
    put_be32(img + 12, d->cols);
    if (n_pix)
        memcpy(img + IDX_IMAGES_HEADER, d->pixels + (size_t)first * img_size, n_pix);
    if (want_labels) {
        put_be32(lab, IDX_MAGIC_LABELS);
        put_be32(lab + 4, count);
        if (count)
            memcpy(lab + IDX_LABELS_HEADER, d->labels + first, count);
    }
    *ret_images = img;
    *ret_images_len = IDX_IMAGES_HEADER + n_pix;
    if (ret_labels) {
        /* a dataset without labels yields no label file */
        *ret_labels = lab;
        *ret_labels_len = want_labels ? IDX_LABELS_HEADER + (size_t)count : 0;
    }
    return 0;
}

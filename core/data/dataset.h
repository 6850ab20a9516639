/* core/data/dataset.h — IDX datasets (MNIST, Fashion-MNIST), plain or gzip.
 *
 * Layer: core.  Parses byte buffers; the caller reads the file.  Every header
 * field is checked against the bytes actually present before anything is
 * allocated, so truncated or lying files fail with -EBADMSG. */
#ifndef NC_DATASET_H
#define NC_DATASET_H

#include "common.h"

/* Caps that keep a hostile header from asking for absurd memory. */
#define NC_IDX_MAX_ITEMS   10000000u
#define NC_IDX_MAX_DIM     4096u
#define NC_GUNZIP_MAX_OUT  (1u << 30)   /* 1 GiB decompressed */

/* A set of same-sized 8-bit images, and optionally their labels. */
typedef struct nc_dataset {
    uint32_t count;
    uint32_t rows, cols;
    uint8_t *pixels;        /* count * rows * cols bytes, row-major images */
    uint8_t *labels;        /* count bytes, or NULL */
} nc_dataset;

/* Inflate a gzip buffer (one or more members) into a malloc'd buffer; a
 * buffer that is not gzip (no 1f 8b magic) is copied unchanged.  Output is
 * capped at max_out bytes (-EOVERFLOW beyond). */
int nc_gunzip(const uint8_t *in, size_t in_len, size_t max_out,
              uint8_t **ret_out, size_t *ret_len);

/* For a file that may be stored gzip'd as a whole (a model file): when
 * (*buf)[0..*len) is gzip, replace *buf (malloc'd; freed here) by its
 * inflated bytes, at most max_out (-EOVERFLOW beyond), and *len by their
 * count.  Anything else is left as it is, uncopied.  On an error *buf and
 * *len are unchanged and still the caller's. */
int nc_gunzip_replace(uint8_t **buf, size_t *len, size_t max_out);

/* Parse an IDX image file (magic 0x00000803, ubyte, 3 dims) and a label file
 * (0x00000801, 1 dim), either gzip'd.  labels may be NULL (no labels).  Counts
 * must agree.  Fills *ret (pixels and labels malloc'd). */
int nc_dataset_parse(const uint8_t *images, size_t images_len,
                     const uint8_t *labels, size_t labels_len,
                     nc_dataset *ret);
void nc_dataset_fini(nc_dataset *d);    /* frees buffers; safe twice */
/* Errors of nc_dataset_parse: -EBADMSG for a wrong magic, a zero dimension,
 * bytes missing or left over after the data (gzip: a truncated, corrupt or
 * trailing-garbage stream too), or counts that disagree; -ENOTSUP for an
 * IDX file of the right rank but another element type (e.g. float); -ERANGE for a count or
 * dimension over the caps; -EOVERFLOW for more than NC_GUNZIP_MAX_OUT
 * inflated bytes.  Label bytes may hold any value 0..255 (IDX does not
 * restrict them); checking them against a model's classes is the caller's
 * job.  count 0 is accepted (pixels is then a non-NULL empty buffer). */

/* Serialise images [first, first + count) of d as IDX files (uncompressed),
 * for fixtures and converters.  Buffers are malloc'd.  ret_labels may be
 * NULL (no label file wanted); when d has no labels, *ret_labels is set to
 * NULL and *ret_labels_len to 0.  A range past d->count is -ERANGE. */
int nc_dataset_to_idx(const nc_dataset *d, uint32_t first, uint32_t count,
                      uint8_t **ret_images, size_t *ret_images_len,
                      uint8_t **ret_labels, size_t *ret_labels_len);

#endif

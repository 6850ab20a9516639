/* tools/idx_slice.c — cut a range of items out of an IDX image/label pair.
 *
 *   idx-slice IMAGES LABELS FIRST COUNT OUT_IMAGES OUT_LABELS
 *
 * Reads the inputs (plain or gzip) with core's parser, so a slice is only
 * ever made from a file that parses cleanly, and writes items
 * [FIRST, FIRST + COUNT) as gzip'd IDX (deflate level 9).  The gzip header
 * carries no name and mtime 0, so the output bytes depend only on the input
 * and the zlib version: fixtures made from it are reproducible.
 *
 * Layer: tools (does file I/O; core only parses). */
#include "dataset.h"
#include "fileio.h"
#include "opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Inputs larger than this are not IDX files we would ever slice. */
#define INPUT_MAX_BYTES ((size_t)NC_GUNZIP_MAX_OUT)

/* Whole-buffer gzip (RFC 1952) at level 9 with zlib's default header. */
static int gzip_buf(const uint8_t *in, size_t len, uint8_t **ret_out, size_t *ret_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    if (len > UINT32_MAX) {    /* deflateBound and avail_* are uLong/uInt */
        deflateEnd(&z);
        return -EFBIG;
    }
    uLong cap = deflateBound(&z, (uLong)len);
    uint8_t *out = malloc(cap);
    if (!out) {
        deflateEnd(&z);
        return -ENOMEM;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int zr = deflate(&z, Z_FINISH);
    size_t out_len = z.total_out;
    deflateEnd(&z);
    if (zr != Z_STREAM_END) {
        free(out);
        return -EIO;
    }
    *ret_out = out;
    *ret_len = out_len;
    return 0;
}

static int write_gz(const char *path, const uint8_t *buf, size_t len)
{
    uint8_t *gz = NULL;
    size_t gz_len = 0;
    int e = gzip_buf(buf, len, &gz, &gz_len);
    if (e < 0) {
        fprintf(stderr, "idx-slice: compressing %s: %s\n", path, nc_strerror(e));
        return e;
    }
    e = nc_file_write_atomic(path, gz, gz_len);
    if (e < 0)
        fprintf(stderr, "idx-slice: writing %s: %s\n", path, strerror(-e));
    free(gz);
    return e;
}

static int read_file(const char *path, uint8_t **ret_buf, size_t *ret_len)
{
    int e = nc_file_read(path, INPUT_MAX_BYTES, ret_buf, ret_len);
    if (e < 0)
        fprintf(stderr, "idx-slice: reading %s: %s\n", path, strerror(-e));
    return e;
}

static const nc_opt opt_table[] = { { NULL, NULL, NULL } };

static nc_opts opts = {
    .prog = "idx-slice",
    .usage = "usage: idx-slice IMAGES LABELS FIRST COUNT OUT_IMAGES OUT_LABELS\n"
             "Writes items [FIRST, FIRST+COUNT) of an IDX image/label pair\n"
             "(plain or gzip) as gzip'd IDX files.\n",
    .table = opt_table,
};

int main(int argc, char **argv)
{
    for (int o; (o = nc_opts_next(&opts, argc, argv)) != NC_OPTS_END;) {
        if (o == NC_OPTS_HELP)
            return nc_opts_usage(&opts, stdout), 0;
        return nc_opts_fail(&opts);     /* it takes no options */
    }
    if (argc - opts.next != 6) {
        nc_opts_error(&opts, "give six operands, not %d", argc - opts.next);
        return nc_opts_fail(&opts);
    }
    argv += opts.next - 1;              /* the operands from argv[1] */
    uint32_t first, count;
    if (nc_opts_u32(argv[3], 0, UINT32_MAX, &first) < 0 ||
        nc_opts_u32(argv[4], 0, UINT32_MAX, &count) < 0) {
        fprintf(stderr, "idx-slice: FIRST and COUNT must be decimal integers "
                        "0..4294967295 (got '%s', '%s')\n", argv[3], argv[4]);
        return 2;
    }

    int status = 1;
    uint8_t *img = NULL, *lab = NULL, *out_img = NULL, *out_lab = NULL;
    size_t img_len = 0, lab_len = 0, out_img_len = 0, out_lab_len = 0;
    nc_dataset d = { 0 };

    if (read_file(argv[1], &img, &img_len) < 0 || read_file(argv[2], &lab, &lab_len) < 0)
        goto out;
    int e = nc_dataset_parse(img, img_len, lab, lab_len, &d);
    if (e < 0) {
        fprintf(stderr, "idx-slice: %s + %s: not a valid IDX image/label pair: %s\n",
                argv[1], argv[2], nc_strerror(e));
        goto out;
    }
    if ((uint64_t)first + count > d.count) {
        fprintf(stderr, "idx-slice: items %u..%llu requested, but the input holds "
                        "%u items\n", first, (unsigned long long)first + count, d.count);
        goto out;
    }
    e = nc_dataset_to_idx(&d, first, count, &out_img, &out_img_len, &out_lab, &out_lab_len);
    if (e < 0) {
        fprintf(stderr, "idx-slice: serialising the slice: %s\n", nc_strerror(e));
        goto out;
    }
    if (write_gz(argv[5], out_img, out_img_len) < 0 ||
        write_gz(argv[6], out_lab, out_lab_len) < 0)
        goto out;
    status = 0;
out:
    nc_dataset_fini(&d);
    free(img);
    free(lab);
    free(out_img);
    free(out_lab);
    return status;
}

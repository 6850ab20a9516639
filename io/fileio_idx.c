/* io/fileio_idx.c — nc_file_read_idx and nc_file_write_idx (see fileio.h). */
#include "fileio.h"

#include <stdio.h>
#include <stdlib.h>

#include "dataset.h"

int nc_file_read_idx(const char *images_path, const char *labels_path, size_t max_bytes,
                     nc_dataset *ret)
{
    uint8_t *ib = NULL, *lb = NULL;
    size_t il = 0, ll = 0;
    int err = nc_file_read(images_path, max_bytes, &ib, &il);
    if (!err && labels_path)
        err = nc_file_read(labels_path, max_bytes, &lb, &ll);
    if (!err)
        err = nc_dataset_parse(ib, il, lb, ll, ret);
    free(ib);
    free(lb);
    return err;
}

int nc_file_write_idx(const char *prefix, const nc_dataset *d)
{
    uint8_t *img = NULL, *lab = NULL;
    size_t il = 0, ll = 0;
    char path[4096];
    int err = nc_dataset_to_idx(d, 0, d->count, &img, &il, &lab, &ll);
    if (!err) {
        snprintf(path, sizeof path, "%s-images-idx3-ubyte", prefix);
        err = nc_file_write_atomic(path, img, il);
    }
    if (!err) {
        snprintf(path, sizeof path, "%s-labels-idx1-ubyte", prefix);
        err = nc_file_write_atomic(path, lab, ll);
    }
    free(img);
    free(lab);
    return err;
}

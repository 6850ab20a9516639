/* io/fileio_idx.c — nc_file_read_idx, nc_file_read_mnist and nc_file_write_idx
 * (see fileio.h). */
#include "fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

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

int nc_file_read_mnist(const char *dir, int train, size_t max_bytes, nc_dataset *ret,
                       char *path, size_t path_len)
{
    static const char *const test_names[][2] = {
        { "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz" },
        { "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte" },
        { "t10k-images.idx3-ubyte", "t10k-labels.idx1-ubyte" },
        { "mnist-t1k-images-idx3-ubyte.gz", "mnist-t1k-labels-idx1-ubyte.gz" },
        { NULL, NULL } };
    static const char *const train_names[][2] = {
        { "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz" },
        { "train-images-idx3-ubyte", "train-labels-idx1-ubyte" },
        { "train-images.idx3-ubyte", "train-labels.idx1-ubyte" },
        { NULL, NULL } };
    const char *const (*names)[2] = train ? train_names : test_names;
    char labels[4096];
    for (size_t i = 0; names[i][0]; i++) {
        struct stat st;
        snprintf(path, path_len, "%s/%s", dir, names[i][0]);
        if (stat(path, &st) != 0)
            continue;
        snprintf(labels, sizeof labels, "%s/%s", dir, names[i][1]);
        return nc_file_read_idx(path, labels, max_bytes, ret);
    }
    if (path_len)
        path[0] = '\0';
    return -ENOENT;
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

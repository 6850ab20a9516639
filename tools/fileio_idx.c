/* tools/fileio_idx.c — nc_file_read_idx (see fileio.h). */
#include "fileio.h"

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

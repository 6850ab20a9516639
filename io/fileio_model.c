/* io/fileio_model.c — nc_file_read_model (see fileio.h). */
#include "fileio.h"

#include <stdlib.h>

#include "dataset.h"

int nc_file_read_model(const char *path, size_t max_bytes, uint8_t **ret_buf, size_t *ret_len)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int err = nc_file_read_regular(path, max_bytes, &buf, &len);
    if (!err)
        err = nc_gunzip_replace(&buf, &len, max_bytes);
    if (err) {
        free(buf);
        return err;
    }
    *ret_buf = buf;
    *ret_len = len;
    return 0;
}

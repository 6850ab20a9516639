/* tools/fileio.h — whole-file reading and atomic writing for tools and tests.
 *
 * Layer: tools (core has no I/O; programs read bytes here and hand them to
 * core's parsers).  Errors are negative errno values like core's. */
#ifndef NC_FILEIO_H
#define NC_FILEIO_H

#include <stddef.h>
#include <stdint.h>

/* Read all of path (at most max_bytes, else -EFBIG) into a malloc'd buffer.
 * A trailing NUL is added (not counted in *ret_len) so text can be parsed. */
int nc_file_read(const char *path, size_t max_bytes, uint8_t **ret_buf, size_t *ret_len);

/* Write buf to path atomically: a temporary file beside it, fsync, rename. */
int nc_file_write_atomic(const char *path, const uint8_t *buf, size_t len);

#endif

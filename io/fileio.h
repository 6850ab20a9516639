/* io/fileio.h — whole-file reading and atomic writing, model files and IDX
 * files, for the daemon, the clients, the tools and the tests.
 *
 * Layer: io, above core (core has no I/O: programs read bytes here and hand
 * them to core's parsers) and below everything that runs.  Nothing here
 * prints or exits; errors are negative errno values like core's. */
#ifndef NC_FILEIO_H
#define NC_FILEIO_H

#include <stddef.h>
#include <stdint.h>

/* Read all of path (at most max_bytes, else -EFBIG) into a malloc'd buffer.
 * A trailing NUL is added (not counted in *ret_len) so text can be parsed.
 * A regular file larger than max_bytes is refused before anything is read;
 * pipes and devices are read until the cap. */
int nc_file_read(const char *path, size_t max_bytes, uint8_t **ret_buf, size_t *ret_len);

/* As nc_file_read, for a regular file only: a directory, device, FIFO or
 * socket is -EINVAL (what a server reads from a folder must not block or
 * stream forever). */
int nc_file_read_regular(const char *path, size_t max_bytes, uint8_t **ret_buf,
                         size_t *ret_len);

/* Read a model file: as nc_file_read, and a file stored gzip'd as a whole
 * (gzip -n9 of the trainer's file, e.g. models/neocognitron.ncm) comes back
 * inflated, at most max_bytes either way.  A corrupt or truncated gzip stream
 * is -EBADMSG; the bytes are the model file image nc_mf_open checks.  A model
 * is a regular file (nc_file_read_regular).  (fileio_model.c: links core's
 * gunzip, as fileio_idx.c does.) */
int nc_file_read_model(const char *path, size_t max_bytes, uint8_t **ret_buf, size_t *ret_len);

/* Write buf to path atomically: a temporary file beside it, fsync, rename. */
int nc_file_write_atomic(const char *path, const uint8_t *buf, size_t len);

/* Read an IDX image file and its label file (gzip or plain) and parse them
 * with core's nc_dataset_parse.  labels_path may be NULL.  Errors as above,
 * or core's codes for a malformed file.  (fileio_idx.c: links core's dataset
 * module only into programs that call it.) */
struct nc_dataset;
int nc_file_read_idx(const char *images_path, const char *labels_path, size_t max_bytes,
                     struct nc_dataset *ret);

/* Read MNIST's test set (train: its training set) from the folder dir,
 * under the first of its usual names there: t10k-images-idx3-ubyte.gz,
 * t10k-images-idx3-ubyte, t10k-images.idx3-ubyte, then the repository's
 * fixture mnist-t1k-images-idx3-ubyte.gz (test only); "train" in place of
 * "t10k" for the training set; each with its labels named alike.  -ENOENT
 * with path "" when no image file is there; otherwise as nc_file_read_idx,
 * with path (path_len bytes) naming the image file read. */
int nc_file_read_mnist(const char *dir, int train, size_t max_bytes, struct nc_dataset *ret,
                       char *path, size_t path_len);

/* Write every image of d and its labels as PREFIX-images-idx3-ubyte and
 * PREFIX-labels-idx1-ubyte (MNIST's layout), each atomically. */
int nc_file_write_idx(const char *prefix, const struct nc_dataset *d);

#endif

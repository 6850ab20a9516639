/* io/fileio.c — see fileio.h. */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int read_path(const char *path, size_t max_bytes, int regular_only, uint8_t **ret_buf,
                     size_t *ret_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int err = 0;
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        err = -errno;
        goto out;
    }
    if (regular_only && !S_ISREG(st.st_mode)) {
        err = -EINVAL;
        goto out;
    }
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_bytes) {
        err = -EFBIG;           /* refused before a byte is read */
        goto out;
    }
    /* A regular file is read into one buffer of its size (and the NUL);
     * anything else, or a file that grows meanwhile, by doubling. */
    const size_t size_hint = S_ISREG(st.st_mode) ? (size_t)st.st_size : 0;
    for (;;) {
        if (len == cap && buf) {
            /* Full: probe into the spare byte kept for the NUL.  Only a
             * further byte means more to read (a file of exactly
             * max_bytes is allowed). */
            ssize_t n = read(fd, buf + len, 1);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) { err = -errno; goto out; }
            if (n == 0) break;
            if (cap >= max_bytes) { err = -EFBIG; goto out; }
            len++;
        }
        if (len >= cap) {
            size_t ncap = cap ? cap * 2 : size_hint ? size_hint : 65536;
            if (ncap > max_bytes) ncap = max_bytes;
            uint8_t *nb = realloc(buf, ncap + 1);
            if (!nb) { err = -ENOMEM; goto out; }
            buf = nb;
            cap = ncap;
            if (len == cap)
                continue;       /* grown to the cap: probe for more */
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0) {
            if (errno == EINTR) continue;
            err = -errno;
            goto out;
        }
        if (n == 0) break;
        len += (size_t)n;
    }
    if (!buf && !(buf = malloc(1))) { err = -ENOMEM; goto out; }
    buf[len] = 0;
    *ret_buf = buf;
    *ret_len = len;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return err;
}

int nc_file_read(const char *path, size_t max_bytes, uint8_t **ret_buf, size_t *ret_len)
{
    return read_path(path, max_bytes, 0, ret_buf, ret_len);
}

int nc_file_read_regular(const char *path, size_t max_bytes, uint8_t **ret_buf, size_t *ret_len)
{
    return read_path(path, max_bytes, 1, ret_buf, ret_len);
}

int nc_file_write_atomic(const char *path, const uint8_t *buf, size_t len)
{
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (!tmp)
        return -ENOMEM;
    snprintf(tmp, plen + 16, "%s.tmp.%ld", path, (long)getpid());
    int err = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) { err = -errno; goto out; }
    for (size_t off = 0; off < len;) {
        ssize_t n = write(fd, buf + off, len - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            err = -errno;
            break;
        }
        off += (size_t)n;
    }
    if (!err && fsync(fd) != 0) err = -errno;
    if (close(fd) != 0 && !err) err = -errno;
    if (!err && rename(tmp, path) != 0) err = -errno;
    if (err) unlink(tmp);
out:
    free(tmp);
    return err;
}

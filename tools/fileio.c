/* tools/fileio.c — see fileio.h. */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int nc_file_read(const char *path, size_t max_bytes, uint8_t **ret_buf, size_t *ret_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int err = 0;
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap && cap >= max_bytes && buf) {
            /* Full at the cap: only a further byte makes the file too big
             * (a file of exactly max_bytes is allowed).  Probe into the
             * spare byte kept for the NUL. */
            ssize_t n = read(fd, buf + len, 1);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) { err = -errno; goto out; }
            if (n == 0) break;
            err = -EFBIG;
            goto out;
        }
        if (len == cap) {
            if (cap >= max_bytes) { err = -EFBIG; goto out; }
            size_t ncap = cap ? cap * 2 : 65536;
            if (ncap > max_bytes) ncap = max_bytes;
            uint8_t *nb = realloc(buf, ncap + 1);
            if (!nb) { err = -ENOMEM; goto out; }
            buf = nb;
            cap = ncap;
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

/* tools/train_util.c — the helpers neocog-train's subcommands share: time,
 * the command line for the record, strict number parsing, the MNIST folder
 * and its files, label checks.
 *
 * Layer: tools.  Declared in train_common.h (train_labels_ok in
 * train_calib.h).  Its own file so that the dependencies run one way:
 * neocog_train.c's main() calls the subcommands, they call these, and
 * nothing here calls either. */
#include "train_common.h"
#include "train_calib.h"    /* train_labels_ok */

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fileio.h"

double train_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void train_utc_iso(char *dst, size_t cap)
{
    time_t t = time(NULL);
    struct tm tm;
    if (cap == 0)
        return;
    if (!gmtime_r(&t, &tm) || strftime(dst, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        dst[0] = '\0';
}

/* Characters that never need quoting in a POSIX shell word. */
static int shell_safe(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789-_./=:,+%@", *s))
            return 0;
    return 1;
}

int train_join_argv(const train_cmdline *cmd, char *dst, size_t cap)
{
    size_t n = 0;
    int err = 0;
    if (cap == 0)
        return -ERANGE;
    dst[0] = '\0';
    for (int i = 0; i < cmd->argc; i++) {
        const char *a = cmd->argv[i];
        char buf[4096];
        size_t len = 0;
        int q = !shell_safe(a);
        if (q)
            buf[len++] = '\'';
        for (const char *p = a; *p && len + 5 < sizeof(buf); p++) {
            if (*p == '\'') {           /* ' -> '\'' */
                memcpy(buf + len, "'\\''", 4);
                len += 4;
            } else {
                buf[len++] = *p;
            }
        }
        if (q)
            buf[len++] = '\'';
        buf[len] = '\0';
        int w = snprintf(dst + n, cap - n, "%s%s", i ? " " : "", buf);
        if (w < 0 || (size_t)w >= cap - n) {
            err = -ERANGE;
            break;
        }
        n += (size_t)w;
    }
    return err;
}

int train_opts_fail(nc_opts *p, const char *fmt, ...)
{
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->why, sizeof p->why, fmt, ap);
        va_end(ap);
    }
    nc_opts_fail(p);
    return TRAIN_EXIT_USAGE;
}

int train_opts_bad(nc_opts *p, int opt, const char *hint)
{
    nc_opts_bad_value(p, opt, hint);
    return train_opts_fail(p, NULL);
}

int train_parse_u64(const char *s, uint64_t *ret)
{
    char *end;
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -EINVAL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -EINVAL;
    *ret = (uint64_t)v;
    return 0;
}

int train_parse_u32(const char *s, uint32_t *ret)
{
    uint64_t v;
    int err = train_parse_u64(s, &v);
    if (err)
        return err;
    if (v > UINT32_MAX)
        return -EINVAL;
    *ret = (uint32_t)v;
    return 0;
}

int train_parse_heights(const char *s, uint32_t *h, uint32_t max, uint32_t *ret_n)
{
    uint32_t n = 0;
    const char *p = s;
    for (;;) {
        char *end = NULL;
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (errno || end == p || *p < '0' || *p > '9' || v < 1 || v > NC_PREP_MAX_SIZE ||
            n == max || (*end != ',' && *end != '\0'))
            return -EINVAL;
        h[n++] = (uint32_t)v;
        if (*end == '\0')
            break;
        p = end + 1;
    }
    *ret_n = n;
    return 0;
}

int train_parse_float(const char *s, float *ret)
{
    char *end;
    if (!s || !*s)
        return -EINVAL;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || *end || !isfinite(v))
        return -EINVAL;
    *ret = v;
    return 0;
}

const char *train_data_dir(const char *dir)
{
    if (dir && *dir)
        return dir;
    const char *env = getenv("NC_MNIST_DIR");
    return env && *env ? env : NULL;
}

const char *train_need_data_dir(const char *who, const char *dir)
{
    const char *d = train_data_dir(dir);
    if (!d)
        fprintf(stderr, "%s: no data: pass --data DIR or set NC_MNIST_DIR\n", who);
    return d;
}

/* Read dir/name.gz, else dir/name. */
static int read_either(const char *dir, const char *name, uint8_t **ret_buf, size_t *ret_len)
{
    char path[4096];
    int err = -ENOENT;
    if (snprintf(path, sizeof(path), "%s/%s.gz", dir, name) < (int)sizeof(path))
        err = nc_file_read(path, NC_GUNZIP_MAX_OUT, ret_buf, ret_len);
    if (err == -ENOENT && snprintf(path, sizeof(path), "%s/%s", dir, name) < (int)sizeof(path))
        err = nc_file_read(path, NC_GUNZIP_MAX_OUT, ret_buf, ret_len);
    if (err)
        fprintf(stderr, "neocog-train: reading %s/%s[.gz]: %s\n", dir, name, nc_strerror(err));
    return err;
}

int train_load_mnist(const char *dir, const char *which, nc_dataset *ret)
{
    char images_name[64], labels_name[64];
    uint8_t *img = NULL, *lab = NULL;
    size_t img_len = 0, lab_len = 0;
    snprintf(images_name, sizeof(images_name), "%s-images-idx3-ubyte", which);
    snprintf(labels_name, sizeof(labels_name), "%s-labels-idx1-ubyte", which);
    int err = read_either(dir, images_name, &img, &img_len);
    if (!err)
        err = read_either(dir, labels_name, &lab, &lab_len);
    if (!err) {
        err = nc_dataset_parse(img, img_len, lab, lab_len, ret);
        if (err)
            fprintf(stderr, "neocog-train: parsing %s/%s: %s\n", dir, images_name,
                    nc_strerror(err));
    }
    free(img);
    free(lab);
    return err;
}

int train_load_mnist_checked(const char *cmd, const char *dir, const char *which,
                             uint32_t count, nc_dataset *ret)
{
    int err = train_load_mnist(dir, which, ret);
    if (err)
        return err;
    if (ret->rows != 28 || ret->cols != 28 || ret->count == 0 ||
        (count && ret->count != count)) {
        char want[32] = "28x28 digits";
        if (count)
            snprintf(want, sizeof want, "%u of 28x28", count);
        fprintf(stderr, "neocog-train %s: %s: %s: %u digits of %ux%u, expected %s\n", cmd, dir,
                which, ret->count, ret->cols, ret->rows, want);
        nc_dataset_fini(ret);
        return -EINVAL;
    }
    char who[64];
    snprintf(who, sizeof who, "neocog-train %s: %s", cmd, which);
    if ((err = train_labels_ok(who, ret, 0, ret->count, 10)))
        nc_dataset_fini(ret);
    return err;
}

void train_format_duration(double s, char *dst, size_t cap)
{
    if (!(s >= 0.0) || s > 1e7)
        s = 0.0;
    unsigned long t = (unsigned long)(s + 0.5);
    unsigned long h = t / 3600, m = t / 60 % 60, sec = t % 60;
    if (h)
        snprintf(dst, cap, "%luh%02lum%02lus", h, m, sec);
    else if (m)
        snprintf(dst, cap, "%lum%02lus", m, sec);
    else
        snprintf(dst, cap, "%lus", sec);
}

int train_labels_ok(const char *who, const nc_dataset *d, uint32_t first, uint32_t count,
                    uint32_t n_classes)
{
    for (uint32_t i = 0; i < count; i++)
        if (d->labels[first + i] >= n_classes) {
            fprintf(stderr, "%s: label of digit %u is %u, the model has %u classes\n", who,
                    first + i, d->labels[first + i], n_classes);
            return -EBADMSG;
        }
    return 0;
}

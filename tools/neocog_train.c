/* tools/neocog_train.c — neocog-train: train and evaluate models.
 *
 *   neocog-train cnn [OPTIONS]           train a seed 000 CNN column (train_cnn.c)
 *   neocog-train neocognitron [OPTIONS]  train the neocognitron (train_neocog.c)
 *   neocog-train eval [OPTIONS]          measure a model file (train_eval.c)
 *   neocog-train convert IN OUT          rewrite a neocognitron file with the
 *                                        compact weights (train_convert.c)
 *   neocog-train committee [OPTIONS]     bundle CNN columns into one file
 *                                        (train_committee.c)
 *   neocog-train calibrate [OPTIONS]     fit calibration / ensemble rules on
 *                                        validation (train_calibrate.c)
 *   neocog-train combine [OPTIONS] F...  the committee of saved score files
 *                                        (train_combine.c)
 *   neocog-train cascade [OPTIONS]       fit a neocognitron committee's cascade
 *                                        on validation (train_cascade.c)
 *
 * Each subcommand is one entry in the table below and one tools/train_<name>.c.
 *
 * Layer: tools.  This file holds main(), the dispatch and the helpers the
 * subcommands share (data loading, argument parsing, time); core/ does all
 * the maths and never touches a file. */
#include "train_common.h"
#include "train_calib.h"    /* committee, calibrate */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "fileio.h"

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv, const train_cmdline *cmd);
    const char *summary;
} subcommand;

static const subcommand subcommands[] = {
    { "cnn", train_cnn_main, "train a CNN column (seed 000) on MNIST or an IDX character set" },
    { "neocognitron", train_neocog_main, "train the neocognitron stage by stage on MNIST" },
    { "eval", train_eval_main, "measure a model file (CNN or neocognitron) on MNIST or an IDX set" },
    { "convert", train_convert_main, "rewrite a neocognitron file with compact (sparse) weights" },
    { "committee", train_committee_main, "bundle CNN column files into one committee file" },
    { "calibrate", train_calibrate_main,
      "fit calibration, reject threshold and ensemble rule on validation" },
    { "combine", train_combine_main, "the committee of score files saved by eval --save-scores" },
    { "cascade", train_cascade_main,
      "fit a neocognitron committee's cascade (first member alone when sure) on validation" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: neocog-train COMMAND [OPTIONS]\n\ncommands:\n");
    for (size_t i = 0; i < NC_ARRAY_LEN(subcommands); i++)
        fprintf(f, "  %-14s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "\n'neocog-train COMMAND --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return TRAIN_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return TRAIN_EXIT_OK;
    }
    train_cmdline cmd = { argc, argv };
    for (size_t i = 0; i < NC_ARRAY_LEN(subcommands); i++)
        if (!strcmp(argv[1], subcommands[i].name))
            return subcommands[i].run(argc - 1, argv + 1, &cmd);
    fprintf(stderr, "neocog-train: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return TRAIN_EXIT_USAGE;
}

/* ---- shared helpers ------------------------------------------------------ */

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

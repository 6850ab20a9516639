/* tools/train_common.h — what neocog-train's subcommands share.
 *
 * Layer: tools (reads and writes files, prints to stderr; core does the
 * maths).  neocog_train.c holds main(), the subcommand table and these
 * helpers; each subcommand lives in its own tools/train_<name>.c and
 * returns the process exit status (0 ok, 1 failure, 2 usage). */
#ifndef NC_TRAIN_COMMON_H
#define NC_TRAIN_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"

/* Exit statuses. */
#define TRAIN_EXIT_OK    0
#define TRAIN_EXIT_FAIL  1
#define TRAIN_EXIT_USAGE 2

/* The whole command line, kept for the model file's provenance. */
typedef struct train_cmdline {
    int argc;
    char **argv;
} train_cmdline;

/* Subcommands: argv[0] is the subcommand's name. */
int train_cnn_main(int argc, char **argv, const train_cmdline *cmd);

/* Monotonic seconds. */
double train_now(void);

/* "2025-01-31T12:34:56Z" into dst. */
void train_utc_iso(char *dst, size_t cap);

/* argv joined by spaces into dst, each argument that a shell would split or
 * expand single-quoted, so the line can be pasted back; -ERANGE if it does
 * not fit (truncated). */
int train_join_argv(const train_cmdline *cmd, char *dst, size_t cap);

/* Strict decimal parsing: the whole string, no sign for unsigned; -EINVAL
 * otherwise. */
int train_parse_u32(const char *s, uint32_t *ret);
int train_parse_u64(const char *s, uint64_t *ret);
int train_parse_float(const char *s, float *ret);

/* The MNIST folder: dir if given, else $NC_MNIST_DIR, else NULL. */
const char *train_data_dir(const char *dir);

/* Read one MNIST pair from dir: which = "train" or "t10k"; the files are
 * <which>-images-idx3-ubyte[.gz] and <which>-labels-idx1-ubyte[.gz].  Prints
 * what went wrong to stderr. */
int train_load_mnist(const char *dir, const char *which, nc_dataset *ret);

/* "s" as "1h02m03s" / "2m03s" / "3s". */
void train_format_duration(double s, char *dst, size_t cap);

#endif

/* tools/train_common.h — what neocog-train's subcommands share.
 *
 * Layer: tools (reads and writes files, prints to stderr; core does the
 * maths).  neocog_train.c holds main() and the subcommand table,
 * train_util.c these helpers; each subcommand lives in its own
 * tools/train_<name>.c and returns the process exit status (0 ok, 1
 * failure, 2 usage). */
#ifndef NC_TRAIN_COMMON_H
#define NC_TRAIN_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "image.h"
#include "modelfile.h"
#include "neocog.h"
#include "opts.h"

/* Exit statuses. */
#define TRAIN_EXIT_OK    0
#define TRAIN_EXIT_FAIL  1
#define TRAIN_EXIT_USAGE 2
/* An options parser's answer when the subcommand goes on (else it returns
 * the exit status: TRAIN_EXIT_OK after --help, TRAIN_EXIT_USAGE). */
#define TRAIN_PARSED (-1)

/* The whole command line, kept for the model file's provenance. */
typedef struct train_cmdline {
    int argc;
    char **argv;
} train_cmdline;

/* Subcommands: argv[0] is the subcommand's name. */
int train_cnn_main(int argc, char **argv, const train_cmdline *cmd);
int train_neocog_main(int argc, char **argv, const train_cmdline *cmd);  /* train_neocog.c */
int train_eval_main(int argc, char **argv, const train_cmdline *cmd);    /* train_eval.c */
int train_convert_main(int argc, char **argv, const train_cmdline *cmd); /* train_convert.c */
int train_combine_main(int argc, char **argv, const train_cmdline *cmd); /* train_combine.c */

/* ---- neocognitron evaluation (train_eval.c), shared by neocognitron and
 * eval: digits [first, first + count) of d through prep and the network,
 * split over threads (each with its own state; the net is only read).
 * Writes per digit the max-response answer (-1: nothing fired) and its
 * confidence (top class share minus the runner-up's, -1 when nothing
 * fired), and the same for the interpolating-vector answer when iv is set. */
typedef struct train_neo_run {
    const nc_neocog *net;
    const nc_neocog_iv *iv;     /* NULL: no IV answers */
    const nc_dataset *d;
    uint32_t first, count;
    nc_prep prep;
    uint32_t threads;
    int32_t *answer;            /* [count] */
    float *conf;                /* [count] */
    int32_t *answer_iv;         /* [count], with iv only */
    float *conf_iv;
    double seconds;             /* wall time of the run */
} train_neo_run;
int train_neo_evaluate(train_neo_run *run);
/* Confidence of a score vector: (s1 - s2) / sum s, -1 when all are 0. */
float train_margin(const float *score, uint32_t n);

/* The model-file section that marks a neocognitron as answering with the
 * interpolating-vector classifier: u32 [top_t] (documented in core/neocog/neocog.h,
 * which the CPU engine reads it through). */
#define TRAIN_TAG_IV NC_NEOCOG_TAG_IV

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
/* "44,48,52": 1..max heights, each 1..NC_PREP_MAX_SIZE (digit heights of
 * the neocognitron's prep); -EINVAL otherwise. */
int train_parse_heights(const char *s, uint32_t *h, uint32_t max, uint32_t *ret_n);

/* A subcommand's usage error, worded the io/opts way (opts.h): fmt (NULL:
 * the sentence nc_opts_next or nc_opts_bad_value left in p->why) printed as
 * "neocog-train CMD: WHY (try --help)" on stderr; returns TRAIN_EXIT_USAGE.
 * Each subcommand parses its options with one nc_opt table, which gives
 * its --help too. */
int train_opts_fail(nc_opts *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for a bad value of the option opt just returned (with hint, when
 * not NULL: "bad value for --NAME: 'VALUE' HINT"). */
int train_opts_bad(nc_opts *p, int opt, const char *hint);

/* The MNIST folder: dir if given, else $NC_MNIST_DIR, else NULL. */
const char *train_data_dir(const char *dir);
/* train_data_dir, and when it is NULL the one message every subcommand gives:
 * "<who>: no data: pass --data DIR or set NC_MNIST_DIR" on stderr. */
const char *train_need_data_dir(const char *who, const char *dir);

/* Read one MNIST pair from dir: which = "train" or "t10k"; the files are
 * <which>-images-idx3-ubyte[.gz] and <which>-labels-idx1-ubyte[.gz].  Prints
 * what went wrong to stderr. */
int train_load_mnist(const char *dir, const char *which, nc_dataset *ret);

/* train_load_mnist, then checked as the trainers need it: 28x28 digits,
 * `count` of them (0: any number but none), every label 0..9.  Prints what
 * is wrong as "neocog-train <cmd>: ..." to stderr and returns -EINVAL
 * (shape or count) or -EBADMSG (a label, train_labels_ok) with the set
 * freed, or train_load_mnist's error. */
int train_load_mnist_checked(const char *cmd, const char *dir, const char *which,
                             uint32_t count, nc_dataset *ret);

/* ---- character sets other than MNIST ----------------------------------- */

/* The classes of an IDX set, from PREFIX-classes.txt: one label a line (the
 * text a model file records for each class, 1..15 bytes, label order), as
 * neocog-unipen writes it.  MNIST has no such file: its labels are "0".."9"
 * (train_classes_digits). */
typedef struct train_classes {
    uint32_t n;
    char label[NC_MF_MAX_CLASSES][16];
} train_classes;
void train_classes_digits(train_classes *ret);
/* Read PREFIX-classes.txt; prints what is wrong, prefixed with who, and
 * returns -EBADMSG (an empty or over-long line, more than
 * NC_MF_MAX_CLASSES lines, a label twice) or the read error. */
int train_load_classes(const char *who, const char *prefix, train_classes *ret);

/* An IDX set as neocog-unipen writes it: PREFIX-images-idx3-ubyte and
 * PREFIX-labels-idx1-ubyte (either may be gzip'd) and PREFIX-classes.txt;
 * checked to hold 28x28 images, at least one, every label below the
 * classes' count.  Prints what is wrong, prefixed with who; on an error
 * nothing is left to free. */
int train_load_idx_set(const char *who, const char *prefix, nc_dataset *ret,
                       train_classes *ret_classes);

/* 0 when the classes are exactly the model record's (count and labels, in
 * order); else prints the first difference and returns -EINVAL. */
int train_classes_match(const char *who, const train_classes *c, const nc_model_info *info);

/* "s" as "1h02m03s" / "2m03s" / "3s". */
void train_format_duration(double s, char *dst, size_t cap);

/* The little-endian uint32 at p: model files' section headers, saved scores. */
static inline uint32_t train_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

#endif

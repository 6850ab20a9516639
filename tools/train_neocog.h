/* tools/train_neocog.h — what the files of `neocog-train neocognitron`
 * share: its options and each file's calls.
 *
 * Layer: tools, private to neocog-train neocognitron (train_neocog.c). */
#ifndef NC_TRAIN_NEOCOG_H
#define NC_TRAIN_NEOCOG_H

#include <stdio.h>

#include "neocog.h"
#include "train_common.h"

#define MNIST_TRAIN 60000u
#define MAX_TRY 16
#define CKPT_MAX_BYTES ((size_t)1 << 31)

typedef struct options {
    const char *data, *out, *checkpoint;
    const char *train_set, *val_set;   /* --train/--val IDX prefixes (NULL: MNIST) */
    uint32_t digits[NC_NEOCOG_MAX_STAGES];     /* per stage (index 1..3) */
    uint32_t passes[NC_NEOCOG_MAX_STAGES];
    uint32_t k_max[NC_NEOCOG_MAX_STAGES];
    float theta[NC_NEOCOG_MAX_STAGES];         /* recognition */
    float theta_l[NC_NEOCOG_MAX_STAGES];
    float q;
    uint32_t height;
    uint32_t validation, valid_eval;
    float theta4_try[MAX_TRY];
    uint32_t n_theta4_try;
    int interp, add_if_silent, resume, no_test, deskew;
    float deform_us4;       /* 0: off; else NC_DEFORM_MNIST's strength times this */
    uint32_t top_t;
    uint64_t seed;
    uint32_t threads;
} options;

/* train_neocog_opts.c: the command line into o: TRAIN_PARSED, or the exit
 * status after --help (printed) or a usage error (said on stderr). */
int train_neocog_parse_options(int argc, char **argv, options *o);

/* train_neocog_checkpoint.c: the stages done so far written to
 * --checkpoint atomically; read back, refused when its options differ. */
int train_neocog_write_checkpoint(const options *o, const nc_neocog *net, uint32_t done,
                                  const double *log, const nc_model_info *info);
int train_neocog_read_checkpoint(const options *o, nc_neocog **pnet, uint32_t *ret_done,
                                 double *log);

#endif

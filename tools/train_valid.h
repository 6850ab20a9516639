/* tools/train_valid.h — what `neocog-train calibrate` and `neocog-train
 * cascade` share: the options that name a model, its copy and the
 * validation run (--model, --out, --data, --count, --threads, --gpu), their
 * checks, and the MNIST validation digits.
 *
 * Layer: tools (train_valid.c).  Each subcommand lists these options in its
 * own io/opts table, under these names, and hands their values here. */
#ifndef NC_TRAIN_VALID_H
#define NC_TRAIN_VALID_H

#include "train_calib.h"

typedef struct train_valid_opts {
    const char *model, *out, *data;
    uint32_t count;             /* validation digits (0: the subcommand's default) */
    uint32_t threads;
    int gpu;                    /* < 0: the CPU */
} train_valid_opts;

/* The defaults: every validation digit, one thread, the CPU. */
#define TRAIN_VALID_OPTS_INIT { NULL, NULL, NULL, TRAIN_VALID_COUNT, 1, -1 }

/* The option called name (its table name) with value into v: 1 when it
 * is one of these and its value is good, -1 a bad value, 0 not one of
 * these options. */
int train_valid_option(train_valid_opts *v, const char *name, const char *value);

/* After the options (operands from argv[p->next]): --model and --out given,
 * no operands; with mnist, --count 1..TRAIN_VALID_COUNT and the MNIST
 * folder found; --threads 1..64.  TRAIN_PARSED, or TRAIN_EXIT_USAGE with the
 * reason said (train_opts_fail). */
int train_valid_check(nc_opts *p, int argc, const train_valid_opts *v, int mnist);

/* MNIST's training set from the folder of data (train_data_dir), checked
 * to hold the validation digits [TRAIN_VALID_FIRST, + n) with labels below
 * n_classes.  Prints what is wrong, prefixed with who; on an error the set
 * is freed. */
int train_valid_load_mnist(const char *who, const char *data, uint32_t n, uint32_t n_classes,
                           nc_dataset *ret);

#endif

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
 * Layer: tools.  This file holds main() and the dispatch; the helpers the
 * subcommands share (data loading, argument parsing, time) are in
 * train_util.c, so that the subcommands never call back into this file.
 * core/ does all the maths and never touches a file. */
#include "train_common.h"
#include "train_calib.h"    /* committee, calibrate */

#include <stdio.h>
#include <string.h>

#include "common.h"

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

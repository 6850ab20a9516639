/* tools/train_committee.c — `neocog-train committee`: bundle CNN column
 * files into one committee file (core/cnn/cnn.h, "committees") and measure it;
 * given neocognitron files, train_committee_neocog.c does the same for them.
 *
 * Layer: tools.  The columns are checked to agree (input and output sizes,
 * classes and labels, preprocessing) and to be distinct; each keeps its own
 * record inside the file.  A committee file given as a column contributes
 * all its columns, so a committee can grow one column at a time.  The
 * committee's error is measured once on the MNIST test set and recorded
 * (not with --no-test: columns of other characters); the test set chooses
 * nothing here (there is nothing to choose: the committee is the mean of all
 * the columns given). */
#include "train_committee.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnn.h"
#include "fileio.h"
#include "nc_config.h"
#include "neocog.h"
#include "opts.h"

#define WHO TRAIN_COMMITTEE_WHO

enum { O_OUT, O_DATA, O_THREADS, O_HALF, O_LOG8, O_GPU, O_HEIGHTS, O_NO_TEST, O_END };

static const nc_opt table[] = {
    [O_OUT] = { "out", "FILE", "the committee file to write (required)" },
    [O_DATA] = { "data", "DIR", "folder with the MNIST files (default $NC_MNIST_DIR)" },
    [O_THREADS] = { "threads", "N", "threads for the measurement, 1..64 (default 1)" },
    [O_HALF] = { "half", NULL, "neocognitrons: store the weights as binary16 (half the\n"
                               "file; the file is measured as written)" },
    [O_LOG8] = { "log8", NULL, "neocognitrons: store the weights as 8-bit logarithmic\n"
                               "codes (a quarter; core/neocog/neocog.h; measured as\n"
                               "written)" },
    [O_GPU] = { "gpu", "N", "neocognitrons: measure on CUDA device N (a CUDA build)" },
    [O_HEIGHTS] = { "heights", "H,H,..",
                    "neocognitrons: the committee prepares each digit at these\n"
                    "heights (up to 8 views) and answers with the mean of\n"
                    "every member's scores over them (eval --heights tries\n"
                    "them first).  CNNs: these fit boxes, every column on\n"
                    "every view; without it a CNN committee has no views\n"
                    "(those of a file given are dropped)" },
    [O_NO_TEST] = { "no-test", NULL,
                    "CNNs: measure nothing (columns of another character\n"
                    "set than MNIST's digits: eval measures them on its\n"
                    "validation set); the record says not measured" },
    [O_END] = { NULL, NULL, NULL },
};

static const char usage_text[] =
    "usage: neocog-train committee --out OUT [OPTIONS] MODEL.ncm...\n"
    "\n"
    "Bundle CNN column files (same input, classes and preprocessing; the\n"
    "architectures may differ) into one committee model file that answers with\n"
    "the mean of the columns' outputs, measure its error on MNIST t10k (not with\n"
    "--no-test) and record it with the command.  Each column keeps its own record\n"
    "(command, seed, epochs, test error).  Calibrate the result afterwards (neocog-train\n"
    "calibrate): the bundling writes no calibration.  Neocognitron files (same\n"
    "input, classes and preprocessing) are bundled the same way: the committee\n"
    "answers with the mean of the members' raw scores.\n";

typedef struct columns {
    uint32_t n;
    const nc_cnn *net[NC_CNN_MAX_COLUMNS];
    nc_model_info *info;                    /* [NC_CNN_MAX_COLUMNS] */
    const char *from[NC_CNN_MAX_COLUMNS];   /* file each came from */
    nc_cnn_committee *file[NC_CNN_MAX_COLUMNS];
    uint32_t n_files;
} columns;

static int same_net(const nc_cnn *a, const nc_cnn *b)
{
    char sa[NC_CNN_ARCH_MAX], sb[NC_CNN_ARCH_MAX];
    return !nc_cnn_arch_format(a, sa, sizeof sa) && !nc_cnn_arch_format(b, sb, sizeof sb) &&
           !strcmp(sa, sb) && a->n_params == b->n_params &&
           !memcmp(a->params, b->params, a->n_params * sizeof(float));
}

/* Read one column file (or committee) and append its columns. */
static int add_file(columns *cs, const char *path)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_cnn_committee *c = NULL;
    int err = nc_file_read_model(path, TRAIN_MODEL_MAX_BYTES, &buf, &len);
    if (!err)
        err = nc_cnn_committee_load(buf, len, &c, NULL);
    free(buf);
    if (err) {
        fprintf(stderr, WHO ": %s: %s%s\n", path, nc_strerror(err),
                err == -EBADMSG ? " (not a CNN model file, or a corrupt one)" : "");
        return err;
    }
    if (cs->n_files == NC_CNN_MAX_COLUMNS) {
        nc_cnn_committee_free(c);
        fprintf(stderr, WHO ": more than %u columns\n", NC_CNN_MAX_COLUMNS);
        return -ERANGE;
    }
    cs->file[cs->n_files++] = c;
    for (uint32_t i = 0; i < c->n_columns; i++) {
        if (cs->n == NC_CNN_MAX_COLUMNS) {
            fprintf(stderr, WHO ": more than %u columns\n", NC_CNN_MAX_COLUMNS);
            return -ERANGE;
        }
        const char *why = cs->n ? nc_cnn_committee_mismatch(cs->net[0], &cs->info[0],
                                                            c->column[i], &c->column_info[i])
                                : NULL;
        if (why) {
            fprintf(stderr, WHO ": %s (column %u) has %s than %s\n", path, i + 1, why,
                    cs->from[0]);
            return -EINVAL;
        }
        for (uint32_t j = 0; j < cs->n; j++)
            if (same_net(cs->net[j], c->column[i])) {
                fprintf(stderr, WHO ": %s (column %u) is the same network as column %u "
                        "(from %s): a copy adds nothing to a committee\n", path, i + 1, j + 1,
                        cs->from[j]);
                return -EINVAL;
            }
        cs->net[cs->n] = c->column[i];
        cs->info[cs->n] = c->column_info[i];
        /* views are the committee's record, set by --heights (cnn.h) */
        if (cs->info[cs->n].prep.n_views) {
            fprintf(stderr, WHO ": note: %s (column %u): its views are dropped\n", path, i + 1);
            cs->info[cs->n].prep = nc_prep_no_views(&cs->info[cs->n].prep);
        }
        cs->from[cs->n] = path;
        cs->n++;
    }
    return 0;
}

/* The committee's views: each of how's fit boxes, with the columns'
 * deskew. */
static int set_views(const train_neocog_bundle *how, nc_prep *p)
{
    const uint32_t shear = p->deskew;
    if (train_set_views(how->heights, how->n_heights, &shear, 1, p)) {
        fprintf(stderr, WHO ": --heights: a fit box beyond the columns' %u px field\n",
                p->size);
        return -ERANGE;
    }
    return 0;
}

/* The kind of model in the file at path (the first one given decides). */
static int first_kind(const char *path, uint32_t *ret_kind)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_mf_reader *r = NULL;
    int err = nc_file_read_model(path, TRAIN_MODEL_MAX_BYTES, &buf, &len);
    if (!err)
        err = nc_mf_open(buf, len, &r);
    if (!err)
        *ret_kind = nc_mf_kind_of(r);
    nc_mf_close(r);
    free(buf);
    if (err)
        fprintf(stderr, WHO ": %s: %s\n", path, nc_strerror(err));
    return err;
}

int train_committee_main(int argc, char **argv, const train_cmdline *cmd)
{
    nc_opts p = { .prog = WHO, .usage = usage_text, .table = table };
    const char *out_path = NULL, *data = NULL;
    uint32_t gpu_u = 0;
    train_neocog_bundle how = { .threads = 1, .gpu = -1 };
    int no_test = 0;
    for (int o; (o = nc_opts_next(&p, argc, argv)) != NC_OPTS_END;) {
        int bad = 0;
        switch (o) {
        case NC_OPTS_HELP: nc_opts_usage(&p, stdout); return TRAIN_EXIT_OK;
        case NC_OPTS_ERROR: return nc_opts_fail(&p);
        case O_OUT: out_path = p.value; break;
        case O_DATA: data = p.value; break;
        case O_THREADS: bad = nc_opts_u32(p.value, 1, 64, &how.threads); break;
        case O_HALF: how.flags |= NC_NEOCOG_WRITE_HALF; break;
        case O_LOG8: how.flags |= NC_NEOCOG_WRITE_LOG8; break;
        case O_NO_TEST: no_test = 1; break;
        case O_HEIGHTS:
            bad = train_parse_heights(p.value, how.heights, NC_PREP_MAX_VIEWS, &how.n_heights);
            break;
        case O_GPU:
            bad = nc_opts_u32(p.value, 0, 64, &gpu_u) || !NC_HAVE_CUDA;
            how.gpu = (int)gpu_u;
            break;
        }
        if (bad) {
            nc_opts_bad_value(&p, o, o == O_HEIGHTS ? "(up to 8 heights, as 46,48,50)"
                                     : o == O_GPU   ? "(a device number, in a CUDA build)"
                                                    : "(1..64)");
            return nc_opts_fail(&p);
        }
    }
    if (how.flags == (NC_NEOCOG_WRITE_HALF | NC_NEOCOG_WRITE_LOG8))
        return nc_opts_error(&p, "--half or --log8, not both"), nc_opts_fail(&p);
    if (!out_path || p.next >= argc)
        return nc_opts_error(&p, "need --out FILE and at least one column file"),
               nc_opts_fail(&p);
    const int first_path = p.next;
    uint32_t kind = 0;
    if (first_kind(argv[first_path], &kind))
        return TRAIN_EXIT_FAIL;
    if (no_test && kind == NC_MF_KIND_NEOCOG)
        return nc_opts_error(&p, "--no-test is for CNN columns"), nc_opts_fail(&p);
    const char *dir = NULL;
    if (!no_test && !(dir = train_need_data_dir(WHO, data)))
        return TRAIN_EXIT_USAGE;

    char command[1024];
    if (train_join_argv(cmd, command, sizeof command))
        fprintf(stderr, WHO ": note: the command is too long to record whole\n");
    if (kind == NC_MF_KIND_NEOCOG)
        return train_committee_neocog(argv + first_path, (uint32_t)(argc - first_path),
                                      out_path, dir, &how, command);
    if (how.flags || how.gpu >= 0) {
        fprintf(stderr, WHO ": --half, --log8 and --gpu are for neocognitron files\n");
        return TRAIN_EXIT_USAGE;
    }

    int status = TRAIN_EXIT_FAIL, err = 0;
    columns cs = { 0 };
    nc_model_info *info = calloc(1, sizeof *info);
    cs.info = calloc(NC_CNN_MAX_COLUMNS, sizeof *cs.info);
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_backend *be = NULL;
    if (!info || !cs.info) {
        err = -ENOMEM;
        goto fail;
    }
    for (int a = first_path; a < argc; a++)
        if (add_file(&cs, argv[a]))
            goto out;
    /* one column is the one-column file again: its own record stays, but
     * for the error, which is measured anew */
    train_committee_record(cs.info, cs.n, "columns", "column", command, 1, info);
    if (how.n_heights && set_views(&how, &info->prep))
        goto out;
    if (cs.n == 1 && how.n_heights) {
        /* one record only: it keeps the column's training command and says
         * how the views came */
        const int w = snprintf(info->command, sizeof info->command, "%s; the column: %s",
                               command, cs.info[0].command);
        if (w < 0 || (size_t)w >= sizeof info->command)
            fprintf(stderr, WHO ": note: the commands are too long to record whole\n");
        train_utc_iso(info->created, sizeof info->created);
    }

    /* The committee as the engines will run it: saved, then opened from
     * the file image through the CPU table. */
    if ((err = nc_cnn_committee_save(cs.net, cs.info, cs.n, info, &buf, &len)) ||
        (err = nc_backend_open(&nc_backend_cpu, buf, len, 0, &be)))
        goto fail;
    train_committee_test t = { 0 };
    if (!no_test &&
        train_committee_measure(be, NC_MF_KIND_CNN, info->n_classes, dir, how.threads, 0, &t))
        goto out;

    printf("committee   %u column%s\n", cs.n, cs.n == 1 ? "" : "s");
    for (uint32_t i = 0; i < cs.n; i++) {
        char arch[NC_CNN_ARCH_MAX];
        if (nc_cnn_arch_format(cs.net[i], arch, sizeof arch))
            arch[0] = '\0';
        printf("  %2u  %s  %s, seed %llu, %u epochs, recorded test error ", i + 1, cs.from[i],
               arch, (unsigned long long)cs.info[i].seed, cs.info[i].epochs);
        train_print_recorded_test(&cs.info[i]);
    }
    train_print_views(&info->prep, NC_MF_KIND_CNN);
    /* the measured error goes into the record: save again */
    if (no_test)
        printf("test        not measured (--no-test)\n");
    else
        train_record_test(info, t.errors, t.n, t.seconds);
    free(buf);
    buf = NULL;
    if ((err = nc_cnn_committee_save(cs.net, cs.info, cs.n, info, &buf, &len)))
        goto fail;
    if (train_committee_write(out_path, buf, len))
        goto out;
    status = TRAIN_EXIT_OK;
    goto out;
fail:
    fprintf(stderr, WHO ": %s\n", nc_strerror(err));
out:
    nc_backend_close(be);
    for (uint32_t i = 0; i < cs.n_files; i++)
        nc_cnn_committee_free(cs.file[i]);
    free(cs.info);
    free(info);
    free(buf);
    return status;
}

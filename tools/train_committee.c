/* tools/train_committee.c — `neocog-train committee`: bundle CNN column
 * files into one committee file (core/cnn/cnn.h, "committees") and measure it;
 * given neocognitron files, train_committee_neocog.c does the same for them.
 *
 * Layer: tools.  The columns are checked to agree (input and output sizes,
 * classes and labels, preprocessing) and to be distinct; each keeps its own
 * record inside the file.  A committee file given as a column contributes
 * all its columns, so a committee can grow one column at a time.  The
 * committee's error is measured once on the MNIST test set and recorded; the
 * test set chooses nothing here (there is nothing to choose: the committee
 * is the mean of all the columns given). */
#include "train_calib.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnn.h"
#include "fileio.h"
#include "nc_config.h"
#include "neocog.h"

#define WHO "neocog-train committee"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: neocog-train committee --out OUT [OPTIONS] MODEL.ncm...\n"
        "\n"
        "Bundle CNN column files (same input, classes and preprocessing; the\n"
        "architectures may differ) into one committee model file that answers with\n"
        "the mean of the columns' outputs, measure its error on MNIST t10k and record\n"
        "it with the command.  Each column keeps its own record (command, seed,\n"
        "epochs, test error).  Calibrate the result afterwards (neocog-train\n"
        "calibrate): the bundling writes no calibration.  Neocognitron files (same\n"
        "input, classes and preprocessing) are bundled the same way: the committee\n"
        "answers with the mean of the members' raw scores.\n"
        "\n"
        "  --out FILE        the committee file to write\n"
        "  --data DIR        folder with the MNIST files (default $NC_MNIST_DIR)\n"
        "  --threads N       threads for the measurement (default 1)\n"
        "  --half            neocognitrons: store the weights as binary16 (half the\n"
        "                    file; the file is measured as written)\n"
        "  --log8            neocognitrons: store the weights as 8-bit logarithmic\n"
        "                    codes (a quarter; core/neocog/neocog.h; measured as written)\n"
        "  --gpu N           neocognitrons: measure on CUDA device N (a CUDA build)\n"
        "  --heights H,H,..  neocognitrons: the committee prepares each digit at these\n"
        "                    heights (up to 8 views) and answers with the mean of\n"
        "                    every member's scores over them (eval --heights tries\n"
        "                    them first).  CNNs: these fit boxes, every column on\n"
        "                    every view; without it a CNN committee has no views\n"
        "                    (those of a file given are dropped)\n"
        "  -h, --help        this text\n");
}

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

void train_committee_record(const nc_model_info *mi, uint32_t n, const char *noun,
                            const char *each, const char *command, int keep_one,
                            nc_model_info *info)
{
    *info = mi[0];
    int same_data = 1;
    for (uint32_t i = 1; i < n; i++)
        same_data &= !strcmp(mi[i].data, mi[0].data);
    if (n > 1) {
        if (same_data)
            snprintf(info->data, sizeof info->data, "committee of %u %s, each: %.200s", n,
                     noun, mi[0].data);
        else
            snprintf(info->data, sizeof info->data,
                     "committee of %u %s trained on different data (see each %s)", n, noun,
                     each);
        info->epochs = 0;       /* each member records its own */
        info->seed = 0;
    }
    if (n > 1 || !keep_one) {
        snprintf(info->command, sizeof info->command, "%s", command);
        train_utc_iso(info->created, sizeof info->created);
    }
    info->test_error = -1.0;
    info->test_set[0] = '\0';
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
    enum { O_OUT = 256, O_DATA, O_THREADS, O_HALF, O_LOG8, O_GPU, O_HEIGHTS };
    static const struct option longopts[] = {
        { "out", required_argument, NULL, O_OUT },
        { "data", required_argument, NULL, O_DATA },
        { "threads", required_argument, NULL, O_THREADS },
        { "half", no_argument, NULL, O_HALF },
        { "log8", no_argument, NULL, O_LOG8 },
        { "gpu", required_argument, NULL, O_GPU },
        { "heights", required_argument, NULL, O_HEIGHTS },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *out_path = NULL, *data = NULL;
    uint32_t gpu_u = 0;
    train_neocog_bundle how = { .threads = 1, .gpu = -1 };
    int c, bad = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_OUT: out_path = optarg; break;
        case O_DATA: data = optarg; break;
        case O_THREADS:
            if (train_parse_u32(optarg, &how.threads) || how.threads == 0 ||
                how.threads > 64) {
                fprintf(stderr, WHO ": --threads must be 1..64\n");
                bad = 1;
            }
            break;
        case O_HALF: how.flags |= NC_NEOCOG_WRITE_HALF; break;
        case O_LOG8: how.flags |= NC_NEOCOG_WRITE_LOG8; break;
        case O_HEIGHTS:
            if (train_parse_heights(optarg, how.heights, NC_PREP_MAX_VIEWS, &how.n_heights)) {
                fprintf(stderr, WHO ": --heights takes 1..%u heights, as 46,48,50\n",
                        NC_PREP_MAX_VIEWS);
                bad = 1;
            }
            break;
        case O_GPU:
            if (train_parse_u32(optarg, &gpu_u) || gpu_u > 64 || !NC_HAVE_CUDA) {
                fprintf(stderr, WHO ": --gpu takes a device number, in a CUDA build\n");
                bad = 1;
            }
            how.gpu = (int)gpu_u;
            break;
        case 'h': usage(stdout); return TRAIN_EXIT_OK;
        default: usage(stderr); return TRAIN_EXIT_USAGE;
        }
    }
    if (how.flags == (NC_NEOCOG_WRITE_HALF | NC_NEOCOG_WRITE_LOG8)) {
        fprintf(stderr, WHO ": --half or --log8, not both\n");
        bad = 1;
    }
    if (!bad && (!out_path || optind >= argc)) {
        fprintf(stderr, WHO ": need --out FILE and at least one column file\n");
        bad = 1;
    }
    const char *dir = NULL;
    if (!bad && !(dir = train_need_data_dir(WHO, data)))
        bad = 1;
    if (bad) {
        usage(stderr);
        return TRAIN_EXIT_USAGE;
    }

    char command[1024];
    if (train_join_argv(cmd, command, sizeof command))
        fprintf(stderr, WHO ": note: the command is too long to record whole\n");
    uint32_t kind = 0;
    if (first_kind(argv[optind], &kind))
        return TRAIN_EXIT_FAIL;
    if (kind == NC_MF_KIND_NEOCOG)
        return train_committee_neocog(argv + optind, (uint32_t)(argc - optind), out_path, dir,
                                      &how, command);
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
    nc_dataset ds = { 0 };
    float *raw = NULL;
    uint8_t *ok = NULL;
    int32_t *ans = NULL;
    float *conf = NULL;
    if (!info || !cs.info) {
        err = -ENOMEM;
        goto fail;
    }
    for (int a = optind; a < argc; a++)
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
    const uint32_t K = info->n_classes;

    /* The committee as the engines will run it: saved, then opened from
     * the file image through the CPU table. */
    if ((err = nc_cnn_committee_save(cs.net, cs.info, cs.n, info, &buf, &len)) ||
        (err = nc_backend_open(&nc_backend_cpu, buf, len, 0, &be)))
        goto fail;
    if (train_load_mnist(dir, "t10k", &ds))
        goto out;
    const uint32_t n = ds.count;
    if (train_labels_ok(WHO, &ds, 0, n, K))
        goto out;
    raw = malloc((size_t)n * K * sizeof *raw);
    ok = malloc(n);
    ans = malloc(n * sizeof *ans);
    conf = malloc(n * sizeof *conf);
    if (!raw || !ok || !ans || !conf) {
        err = -ENOMEM;
        goto fail;
    }
    train_scores sc = { be, &ds, 0, n, how.threads, raw, ok, 0.0, NULL, 0 };
    if ((err = train_scores_run(&sc)))
        goto fail;
    for (uint32_t i = 0; i < n; i++)
        ans[i] = nc_backend_label(NC_MF_KIND_CNN, raw + (size_t)i * K, K);
    const uint32_t errors = train_count_errors(ans, ds.labels, n);

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
    train_record_test(info, errors, n, sc.seconds);
    free(buf);
    buf = NULL;
    if ((err = nc_cnn_committee_save(cs.net, cs.info, cs.n, info, &buf, &len)))
        goto fail;
    if ((err = nc_file_write_atomic(out_path, buf, len))) {
        fprintf(stderr, WHO ": writing %s: %s\n", out_path, nc_strerror(err));
        goto out;
    }
    printf("wrote       %s (%zu bytes)\n", out_path, len);
    status = TRAIN_EXIT_OK;
    goto out;
fail:
    fprintf(stderr, WHO ": %s\n", nc_strerror(err));
out:
    nc_backend_close(be);
    for (uint32_t i = 0; i < cs.n_files; i++)
        nc_cnn_committee_free(cs.file[i]);
    nc_dataset_fini(&ds);
    free(cs.info);
    free(info);
    free(buf);
    free(raw);
    free(ok);
    free(ans);
    free(conf);
    return status;
}

/* tools/train_combine.c — neocog-train combine: committees of saved scores.
 *
 * `neocog-train eval --save-scores` writes a model's raw scores on a run of
 * MNIST digits (float32, little-endian, digits x classes).  This reads such
 * files, saved for the same digits, and measures the committee that answers
 * with the mean of their scores, as `neocog-train committee` bundles CNN
 * columns: the trials by which models/README.md chooses committees on
 * validation without building a file for each.  Besides each file's errors
 * and the committee's, it counts how many files miss each digit the
 * committee misses: where a committee's errors are digits nearly every
 * member misses, more members of the same kind will not mend them.
 *
 * Layer: tools (reads files, prints); the answer rule is core's
 * nc_backend_label, the engines' own. */
#include "train_common.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "common.h"
#include "fileio.h"
#include "modelfile.h"

#define MAX_FILES 256u

enum {
    O_DATA, O_SET, O_FIRST, O_CLASSES, O_NEOCOGNITRON, O_LIST, O_END,
};

static const nc_opt table[] = {
    [O_DATA] = { "data", "DIR", "folder with the MNIST files (default $NC_MNIST_DIR)" },
    [O_SET] = { "set", "NAME", "t10k (default) or train: as given to eval" },
    [O_FIRST] = { "first", "N", "first digit the scores are for, as given to eval (0)" },
    [O_CLASSES] = { "classes", "K", "scores a digit (default 10)" },
    [O_NEOCOGNITRON] = { "neocognitron", NULL,
        "answer as a neocognitron: no answer (an error) for a\n"
        "digit whose largest mean score is not above 0" },
    [O_LIST] = { "list", NULL, "print each digit the committee gets wrong" },
    [O_END] = { NULL, NULL, NULL },
};

static const char usage_text[] =
    "usage: neocog-train combine [OPTIONS] SCORES...\n"
    "\n"
    "The committee of score files that 'neocog-train eval --save-scores' wrote\n"
    "for the same digits: the mean of their scores, answered by the largest, as\n"
    "'neocog-train committee' answers.  Prints each file's errors, the\n"
    "committee's, and how many files miss each digit the committee misses.\n";

/* The scores of one file, checked: up to max_digits x n_classes finite
 * floats (a larger file cannot be scores of the set's digits). */
static int read_scores(const char *path, uint32_t n_classes, uint32_t max_digits, float **ret,
                       uint32_t *ret_n)
{
    const size_t row = (size_t)n_classes * 4;
    uint8_t *buf = NULL;
    size_t len = 0;
    int err = nc_file_read(path, row * max_digits, &buf, &len);
    if (err == -EFBIG)
        fprintf(stderr, "neocog-train combine: %s: more than %u digits' scores, all the set "
                "has from --first\n", path, max_digits);
    else if (err)
        fprintf(stderr, "neocog-train combine: %s: %s\n", path, nc_strerror(err));
    if (err)
        return err;
    if (len == 0 || len % row) {
        fprintf(stderr, "neocog-train combine: %s: %zu bytes, not a whole number of digits "
                "of %u float32 scores (%zu bytes each)\n", path, len, n_classes, row);
        free(buf);
        return -EBADMSG;
    }
    const size_t n = len / 4;
    float *s = malloc(n * sizeof *s);
    if (!s) {
        free(buf);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const uint32_t u = train_le32(buf + 4 * i);
        memcpy(&s[i], &u, 4);
        if (!isfinite(s[i])) {
            fprintf(stderr, "neocog-train combine: %s: digit %zu, class %zu is not a finite "
                    "number\n", path, i / n_classes, i % n_classes);
            free(s);
            free(buf);
            return -EBADMSG;
        }
    }
    free(buf);
    *ret = s;
    *ret_n = (uint32_t)(n / n_classes);
    return 0;
}

int train_combine_main(int argc, char **argv, const train_cmdline *cmd)
{
    (void)cmd;
    nc_opts p = { .prog = "neocog-train combine", .usage = usage_text, .table = table };
    const char *data = NULL, *set = "t10k";
    uint32_t first = 0, n_classes = 10;
    int neocog = 0, list = 0;
    for (int c; (c = nc_opts_next(&p, argc, argv)) != NC_OPTS_END;) {
        const char *v = p.value;
        int err = 0;
        switch (c) {
        case NC_OPTS_HELP: nc_opts_usage(&p, stdout); return TRAIN_EXIT_OK;
        case NC_OPTS_ERROR: return train_opts_fail(&p, NULL);
        case O_DATA: data = v; break;
        case O_SET: set = v; err = strcmp(set, "t10k") && strcmp(set, "train"); break;
        case O_FIRST: err = train_parse_u32(v, &first); break;
        case O_CLASSES: err = nc_opts_u32(v, 2, NC_MF_MAX_CLASSES, &n_classes); break;
        case O_NEOCOGNITRON: neocog = 1; break;
        case O_LIST: list = 1; break;
        }
        if (err)
            return train_opts_bad(&p, c, c == O_SET ? "(t10k or train)" : NULL);
    }
    const uint32_t n_files = (uint32_t)(argc - p.next);
    if (n_files == 0 || n_files > MAX_FILES)
        return train_opts_fail(&p, "need 1..%u score files", MAX_FILES);
    const char *dir = train_need_data_dir("neocog-train combine", data);
    if (!dir)
        return TRAIN_EXIT_USAGE;
    char *const *paths = argv + p.next;

    int status = TRAIN_EXIT_FAIL;
    nc_dataset ds = { 0 };
    float **score = calloc(n_files, sizeof *score);
    uint32_t *file_errors = calloc(n_files, sizeof *file_errors);
    uint32_t *missed_by = NULL, *by_count = NULL;
    int32_t *answer = NULL;
    uint32_t count = 0;
    const uint32_t kind = neocog ? NC_MF_KIND_NEOCOG : NC_MF_KIND_CNN;
    if (!score || !file_errors)
        goto nomem;
    if (train_load_mnist(dir, set, &ds))
        goto out;
    if (first >= ds.count) {
        fprintf(stderr, "neocog-train combine: --first %u: MNIST %s has %u digits\n", first,
                set, ds.count);
        goto out;
    }
    for (uint32_t f = 0; f < n_files; f++) {
        uint32_t n;
        if (read_scores(paths[f], n_classes, ds.count - first, &score[f], &n))
            goto out;
        if (f && n != count) {
            fprintf(stderr, "neocog-train combine: %s holds %u digits, %s %u: not scores of "
                    "the same digits\n", paths[f], n, paths[0], count);
            goto out;
        }
        count = n;
    }
    for (uint32_t i = 0; i < count; i++)
        if (ds.labels[first + i] >= n_classes) {
            fprintf(stderr, "neocog-train combine: label of digit %u is %u, past --classes "
                    "%u\n", first + i, ds.labels[first + i], n_classes);
            goto out;
        }

    missed_by = calloc(count, sizeof *missed_by);
    by_count = calloc(n_files + 1, sizeof *by_count);
    answer = malloc(count * sizeof *answer);
    if (!missed_by || !by_count || !answer)
        goto nomem;
    for (uint32_t i = 0; i < count; i++) {
        const uint32_t label = ds.labels[first + i];
        float m[NC_MF_MAX_CLASSES];
        for (uint32_t k = 0; k < n_classes; k++) {
            double sum = 0.0;
            for (uint32_t f = 0; f < n_files; f++)
                sum += score[f][(size_t)i * n_classes + k];
            m[k] = (float)(sum / n_files);
        }
        for (uint32_t f = 0; f < n_files; f++)
            if (nc_backend_label(kind, score[f] + (size_t)i * n_classes, n_classes) !=
                (int32_t)label) {
                file_errors[f]++;
                missed_by[i]++;
            }
        answer[i] = nc_backend_label(kind, m, n_classes);
    }

    printf("digits      MNIST %s %u-%u (%u digits, %u classes)\n", set, first,
           first + count - 1, count, n_classes);
    for (uint32_t f = 0; f < n_files; f++)
        printf("file %-6u %u errors (%.2f%%)  %s\n", f + 1, file_errors[f],
               100.0 * file_errors[f] / count, paths[f]);
    uint32_t errors = 0, any = 0;
    for (uint32_t i = 0; i < count; i++) {
        any += missed_by[i] > 0;
        if (answer[i] != (int32_t)ds.labels[first + i]) {
            errors++;
            by_count[missed_by[i]]++;
        }
    }
    printf("committee   %u errors (%.2f%%), the mean of %u files' scores\n", errors,
           100.0 * errors / count, n_files);
    printf("its errors  by the files that miss them:");
    for (uint32_t k = n_files + 1; k-- > 0;)
        printf(" %u: %u%s", k, by_count[k], k ? "," : "\n");
    printf("any file    %u digits missed by at least one file\n", any);
    if (list)
        for (uint32_t i = 0; i < count; i++)
            if (answer[i] != (int32_t)ds.labels[first + i]) {
                printf("wrong       digit %u  label %u  answer ", first + i,
                       ds.labels[first + i]);
                if (answer[i] < 0)
                    printf("none");
                else
                    printf("%d", answer[i]);
                printf("  missed by %u of %u files\n", missed_by[i], n_files);
            }
    status = TRAIN_EXIT_OK;
    goto out;
nomem:
    fprintf(stderr, "neocog-train combine: %s\n", nc_strerror(-ENOMEM));
out:
    for (uint32_t f = 0; score && f < n_files; f++)
        free(score[f]);
    free(score);
    free(file_errors);
    free(missed_by);
    free(by_count);
    free(answer);
    nc_dataset_fini(&ds);
    return status;
}

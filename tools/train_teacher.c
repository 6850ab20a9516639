/* tools/train_teacher.c — soft targets from a teacher committee (see
 * train_teacher.h).  The teacher sees the training digits as they are, so
 * the targets suit fine-tuning on undeformed digits (--deform-scale 0);
 * with deformations every presentation keeps its clean digit's target. */
#include "train_teacher.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train_calib.h"

/* The teacher's raw outputs on digits [0, count) of d into raw[count][classes]. */
static int teacher_scores(const nc_backend *be, const nc_dataset *d, uint32_t count,
                          uint32_t threads, float *raw)
{
    uint8_t *ok = malloc(count ? count : 1);
    if (!ok)
        return -ENOMEM;
    train_scores s = { .be = be, .d = d, .first = 0, .count = count, .threads = threads,
                       .raw = raw, .ok = ok };
    int err = count ? train_scores_run(&s) : 0;
    free(ok);
    return err;
}

int train_teacher_targets(const char *path, const nc_prep *prep, uint32_t plane,
                          uint32_t n_classes, const nc_dataset *a, uint32_t n_a, const nc_dataset *b,
                          uint32_t n_b, float weight, uint32_t threads, float **ret_targets)
{
    static const char who[] = "neocog-train cnn: --teacher";
    nc_backend *be = NULL;
    float *out = NULL;
    int err = train_open_model(who, path, &be, NULL, NULL);
    if (err)
        return err;
    if (be->kind != NC_MF_KIND_CNN || be->input_len != plane || be->info.n_classes != n_classes ||
        memcmp(&be->info.prep, prep, sizeof *prep) != 0) {
        fprintf(stderr, "%s %s takes other inputs or outputs than the network trained (a CNN "
                "with its prep, %u inputs and %u outputs is needed)\n", who, path, plane, n_classes);
        err = -EINVAL;
        goto out;
    }
    const uint32_t n = n_a + (b ? n_b : 0);
    const uint8_t *const labels[2] = { a->labels, b ? b->labels : NULL };
    if (!(out = malloc((size_t)n * n_classes * sizeof *out))) {
        err = -ENOMEM;
        goto out;
    }
    if ((err = teacher_scores(be, a, n_a, threads, out)) ||
        (b && (err = teacher_scores(be, b, n_b, threads, out + (size_t)n_a * n_classes)))) {
        fprintf(stderr, "%s %s: %s\n", who, path, nc_strerror(err));
        goto out;
    }
    uint32_t agree = 0;
    for (uint32_t i = 0; i < n; i++) {
        float *o = out + (size_t)i * n_classes;
        const uint8_t label = i < n_a ? labels[0][i] : labels[1][i - n_a];
        uint32_t best = 0;
        for (uint32_t k = 0; k < n_classes; k++) {
            if (o[k] > o[best])
                best = k;
            const float t = k == label ? 1.0f : -1.0f;
            o[k] = (1.0f - weight) * t + weight * o[k];
        }
        agree += best == label;
    }
    fprintf(stderr, "  teacher %s: agrees with %u of %u training labels; targets = %.3g x "
            "teacher + %.3g x label\n", path, agree, n, (double)weight,
            (double)(1.0f - weight));
    *ret_targets = out;
    out = NULL;
out:
    free(out);
    nc_backend_close(be);
    return err;
}

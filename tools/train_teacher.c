/* tools/train_teacher.c — soft targets from a teacher committee (see
 * train_teacher.h).  The teacher sees the training digits as they are, so
 * the targets suit fine-tuning on undeformed digits (--deform-scale 0);
 * with deformations every presentation keeps its clean digit's target. */
#include "train_teacher.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnn.h"
#include "common.h"
#include "fileio.h"
#include "modelfile.h"

#define TEACHER_MAX_BYTES ((size_t)256 << 20)
#define TEACHER_BATCH 64u
#define TEACHER_MAX_THREADS 64u

typedef struct teacher_job {
    const nc_cnn_committee *c;
    const float *inputs;
    uint32_t first, count, plane;
    float *out;             /* [n][10], this job's rows */
    int err;
} teacher_job;

static void *teacher_run(void *arg)
{
    teacher_job *j = arg;
    nc_cnn_committee_work *w = NULL;
    if ((j->err = nc_cnn_committee_work_new(j->c, TEACHER_BATCH, &w)))
        return NULL;
    for (uint32_t i = j->first; i < j->first + j->count && !j->err; i += TEACHER_BATCH) {
        const uint32_t nb = j->first + j->count - i < TEACHER_BATCH ? j->first + j->count - i
                                                                    : TEACHER_BATCH;
        j->err = nc_cnn_committee_run(j->c, w, j->inputs + (size_t)i * j->plane, nb,
                                      j->out + (size_t)i * 10);
    }
    nc_cnn_committee_work_free(w);
    return NULL;
}

int train_teacher_targets(const char *path, const nc_prep *prep, const float *inputs,
                          const uint8_t *labels, uint32_t n, uint32_t plane, float weight,
                          uint32_t threads, float **ret_targets)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_cnn_committee *c = NULL;
    nc_model_info info;
    float *out = NULL;
    int err = nc_file_read(path, TEACHER_MAX_BYTES, &buf, &len);
    if (!err)
        err = nc_cnn_committee_load(buf, len, &c, &info);
    free(buf);
    if (err) {
        fprintf(stderr, "neocog-train cnn: --teacher %s: %s\n", path, nc_strerror(err));
        return err;
    }
    const nc_cnn *c0 = c->column[0];
    if (c0->n_inputs != plane || c0->n_outputs != 10 ||
        memcmp(&info.prep, prep, sizeof *prep) != 0) {
        fprintf(stderr, "neocog-train cnn: --teacher %s takes other inputs or outputs than "
                "the network trained (its prep, %u inputs, %u outputs)\n", path,
                c0->n_inputs, c0->n_outputs);
        err = -EINVAL;
        goto out;
    }
    if (!(out = malloc((size_t)n * 10 * sizeof *out))) {
        err = -ENOMEM;
        goto out;
    }
    if (threads < 1)
        threads = 1;
    if (threads > TEACHER_MAX_THREADS)
        threads = TEACHER_MAX_THREADS;
    pthread_t tid[TEACHER_MAX_THREADS];
    int started[TEACHER_MAX_THREADS];
    teacher_job job[TEACHER_MAX_THREADS];
    for (uint32_t i = 0; i < threads; i++) {
        const uint32_t a = (uint32_t)((uint64_t)n * i / threads);
        const uint32_t b = (uint32_t)((uint64_t)n * (i + 1) / threads);
        job[i] = (teacher_job){ c, inputs, a, b - a, plane, out, 0 };
        started[i] = pthread_create(&tid[i], NULL, teacher_run, &job[i]) == 0;
    }
    for (uint32_t i = 0; i < threads; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            teacher_run(&job[i]);       /* a thread that cannot start: run it here */
        if (!err)
            err = job[i].err;
    }
    if (err) {
        fprintf(stderr, "neocog-train cnn: --teacher %s: %s\n", path, nc_strerror(err));
        goto out;
    }
    uint32_t agree = 0;
    for (uint32_t i = 0; i < n; i++) {
        float *o = out + (size_t)i * 10;
        uint32_t best = 0;
        for (uint32_t k = 0; k < 10; k++) {
            if (o[k] > o[best])
                best = k;
            const float label = k == labels[i] ? 1.0f : -1.0f;
            o[k] = (1.0f - weight) * label + weight * o[k];
        }
        agree += best == labels[i];
    }
    fprintf(stderr, "  teacher %s: %u columns, agrees with %u of %u training labels; "
            "targets = %.3g x teacher + %.3g x label\n", path, c->n_columns, agree, n,
            (double)weight, (double)(1.0f - weight));
    *ret_targets = out;
    out = NULL;
out:
    free(out);
    nc_cnn_committee_free(c);
    return err;
}

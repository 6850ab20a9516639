/* tools/train_scores.c — raw scores of a model file over MNIST digits, and
 * the calibrated answers and rejection figures made from them (see
 * train_calib.h).
 *
 * Layer: tools.  Everything goes through an engine table (core/backend/backend.h:
 * the CPU's, or a GPU's where the caller asks), so a committee, a
 * neocognitron with its interpolating-vector mark and views, and a
 * calibrated file are run exactly as the daemon's engines run them. */
#include "train_calib.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "image_clean.h"
#include "nc_config.h"
#include "neocog.h"
#include "train_pool.h"
#if NC_HAVE_CUDA
#include "backend_gpu.h"
#endif

void openblas_set_num_threads(int num_threads);

#define SCORE_BATCH 64u         /* CPU default; a GPU wants hundreds */
#define SCORE_BATCH_MAX 1024u
#define MAX_THREADS 64u

int train_open_model(const char *who, const char *path, nc_backend **ret_be,
                     uint8_t **ret_buf, size_t *ret_len)
{
    return train_open_model_on(who, path, -1, ret_be, ret_buf, ret_len);
}

int train_open_model_on(const char *who, const char *path, int gpu, nc_backend **ret_be,
                        uint8_t **ret_buf, size_t *ret_len)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int err = nc_file_read_model(path, TRAIN_MODEL_MAX_BYTES, &buf, &len);
    nc_mf_reader *r = NULL;
    if (!err && gpu >= 0 && !nc_mf_open(buf, len, &r)) {
        if (nc_mf_kind_of(r) != NC_MF_KIND_NEOCOG)
            gpu = -1;                   /* a CNN stays on the CPU */
        nc_mf_close(r);
    }
    const nc_backend_ops *ops = &nc_backend_cpu;
#if NC_HAVE_CUDA
    if (gpu >= 0)
        ops = &nc_backend_gpu;
#else
    if (!err && gpu >= 0) {
        fprintf(stderr, "%s: a GPU needs a CUDA build\n", who);
        free(buf);
        return -ENODEV;
    }
#endif
    if (!err)
        err = nc_backend_open(ops, buf, len, gpu < 0 ? 0 : gpu, ret_be);
    if (err) {
        const char *why = err == -EBADMSG ? nc_neocog_committee_why(buf, len) : NULL;
        fprintf(stderr, "%s: %s: %s%s%s%s\n", who, path, nc_strerror(err),
                err == -ENOTSUP ? " (not a model kind this engine runs)" : "",
                why ? ": " : "", why ? why : "");
#if NC_HAVE_CUDA
        if (gpu >= 0)
            fprintf(stderr, "%s: GPU %d: %s\n", who, gpu, nc_backend_gpu_last_error());
#endif
        free(buf);
        return err;
    }
    if (ret_buf) {
        *ret_buf = buf;
        if (ret_len)
            *ret_len = len;
    } else {
        free(buf);
    }
    return 0;
}

typedef struct score_job {
    train_scores *s;
    uint32_t part, parts;
    int err;
} score_job;

/* Digits part, part + parts, ... in batches of SCORE_BATCH. */
static void score_task(void *arg, uint32_t part)
{
    score_job *j = (score_job *)arg + part;
    train_scores *s = j->s;
    const nc_backend *be = s->be;
    const nc_prep *prep = s->prep ? s->prep : &be->info.prep;
    const uint32_t K = be->info.n_classes;
    const size_t L = be->input_len;
    const uint32_t B = s->batch == 0 ? SCORE_BATCH
                       : s->batch > SCORE_BATCH_MAX ? SCORE_BATCH_MAX : s->batch;
    void *worker = NULL;
    float *in = malloc(B * L * sizeof(float));
    float *out = malloc(B * K * sizeof(float));
    uint32_t *idx = malloc(B * sizeof(uint32_t));
    int err = in && out && idx ? be->ops->worker_new(be->impl, B, &worker) : -ENOMEM;
    uint32_t i = j->part;
    while (!err && i < s->count) {
        uint32_t n = 0;
        for (; n < B && i < s->count; i += j->parts) {
            const nc_dataset *d = s->d;
            const uint32_t k = s->first + i;
            nc_image im = { d->cols, d->rows, d->cols,
                            d->pixels + (size_t)k * d->rows * d->cols };
            float *dst = in + (size_t)n * L;
            int e = nc_image_clean_prep(&im, prep->invert ? NC_POLARITY_DARK_INK : NC_POLARITY_AUTO,
                                        prep, dst);
            s->ok[i] = e == 0;
            if (e == -ENOENT) {
                memset(dst, 0, L * sizeof(float));
                e = 0;
            }
            if (e) {
                err = e;
                break;
            }
            idx[n++] = i;
        }
        if (!err && n)
            err = be->ops->forward(be->impl, worker, in, n, out);
        for (uint32_t b = 0; !err && b < n; b++)
            memcpy(s->raw + (size_t)idx[b] * K, out + (size_t)b * K, K * sizeof(float));
    }
    if (worker)
        be->ops->worker_free(worker);
    free(in);
    free(out);
    free(idx);
    j->err = err;
}

int train_scores_run(train_scores *s)
{
    uint32_t n = s->threads ? s->threads : 1;
    n = n > MAX_THREADS ? MAX_THREADS : n;
    n = n > s->count ? (s->count ? s->count : 1) : n;
    if (n > 1)
        openblas_set_num_threads(1);    /* the threads here share the cores */
    score_job jobs[MAX_THREADS];
    double t0 = train_now();
    for (uint32_t p = 0; p < n; p++)
        jobs[p] = (score_job){ s, p, n, 0 };
    int err = train_pool_spread(n, score_task, jobs, n);
    for (uint32_t p = 0; p < n && !err; p++)
        err = jobs[p].err;
    s->seconds = train_now() - t0;
    return err;
}

/* argmax of p, and p there */
static int32_t best_of(const float *p, uint32_t K, float *ret_conf)
{
    uint32_t b = 0;
    for (uint32_t k = 1; k < K; k++)
        if (p[k] > p[b])
            b = k;
    *ret_conf = p[b];
    return (int32_t)b;
}

void train_calibrated(const nc_calib *cal, uint32_t kind, uint32_t n_classes,
                      const float *raw, const uint8_t *ok, uint32_t n, int32_t *ans,
                      float *conf, float *p_out, uint8_t *ok_out)
{
    for (uint32_t i = 0; i < n; i++) {
        float q[NC_MF_MAX_CLASSES];
        float *p = p_out ? p_out + (size_t)i * n_classes : q;
        int op = nc_calib_apply(cal, kind, raw + (size_t)i * n_classes, n_classes, p) == 0 &&
                 (!ok || ok[i]);
        if (ok_out)
            ok_out[i] = (uint8_t)op;
        if (op) {
            ans[i] = best_of(p, n_classes, &conf[i]);
        } else {
            ans[i] = -1;
            conf[i] = 0.0f;
        }
    }
}

void train_ensembled(const nc_ens_rule *rule, const float *p_cnn, const uint8_t *cnn_ok,
                     const float *p_neo, const uint8_t *neo_ok, uint32_t n,
                     uint32_t n_classes, int32_t *ans, float *conf)
{
    for (uint32_t i = 0; i < n; i++) {
        float p[NC_MF_MAX_CLASSES];
        const size_t o = (size_t)i * n_classes;
        if (nc_ens_apply(rule, p_cnn + o, cnn_ok[i], p_neo + o, neo_ok[i], n_classes, p)) {
            ans[i] = -1;
            conf[i] = 0.0f;
        } else {
            ans[i] = best_of(p, n_classes, &conf[i]);
        }
    }
}

uint32_t train_count_errors(const int32_t *ans, const uint8_t *lab, uint32_t n)
{
    uint32_t e = 0;
    for (uint32_t i = 0; i < n; i++)
        e += ans[i] != (int32_t)lab[i];
    return e;
}

typedef struct ci {
    float conf;
    uint32_t i;
} ci;

static int by_conf(const void *a, const void *b)
{
    const ci *x = a, *y = b;
    if (x->conf != y->conf)
        return x->conf < y->conf ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

int train_report_rejection(const char *what, const int32_t *ans, const float *conf,
                           const uint8_t *lab, uint32_t n)
{
    ci *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        v[i] = (ci){ conf[i], i };
    qsort(v, n, sizeof *v, by_conf);
    static const double rej[3] = { 0.005, 0.01, 0.02 };
    for (int r = 0; r < 3; r++) {
        uint32_t n_rej = (uint32_t)(rej[r] * n + 0.5), e = 0;
        for (uint32_t j = n_rej; j < n; j++)
            e += ans[v[j].i] != (int32_t)lab[v[j].i];
        printf("%s reject %.1f%% (%u least confident): error %.2f%% (%u / %u accepted)\n",
               what, 100.0 * rej[r], n_rej, n > n_rej ? 100.0 * e / (n - n_rej) : 0.0, e,
               n - n_rej);
    }
    free(v);
    return 0;
}

void train_report_threshold(const char *what, double t, const int32_t *ans, const float *conf,
                            const uint8_t *lab, uint32_t n)
{
    uint32_t rej = 0, e = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (ans[i] < 0 || nc_calib_rejects(t, conf[i]))
            rej++;
        else
            e += ans[i] != (int32_t)lab[i];
    }
    printf("%s stored threshold %.6f: rejects %.2f%% (%u), error %.2f%% (%u / %u accepted)\n",
           what, t, n ? 100.0 * rej / n : 0.0, rej, n > rej ? 100.0 * e / (n - rej) : 0.0, e,
           n - rej);
}

int train_set_views(const uint32_t *heights, uint32_t n_heights, const uint32_t *shears,
                    uint32_t n_shears, nc_prep *p)
{
    if ((uint64_t)n_heights * n_shears > NC_PREP_MAX_VIEWS)
        return -E2BIG;
    p->n_views = 0;
    for (uint32_t j = 0; j < n_shears; j++)
        for (uint32_t h = 0; h < n_heights; h++) {
            p->view_box[p->n_views] = heights[h];
            p->view_deskew[p->n_views++] = shears[j];
        }
    return nc_prep_check(p) ? -ERANGE : 0;
}

void train_print_recorded_test(const nc_model_info *mi)
{
    if (mi->test_error < 0)
        printf("unknown\n");
    else
        printf("%.2f%% (%s)\n", 100.0 * mi->test_error, mi->test_set);
}

void train_record_test(nc_model_info *info, uint32_t errors, uint32_t n, double seconds)
{
    printf("test        MNIST t10k: error %.2f%% (%u / %u), %.1f digits/s\n",
           100.0 * errors / n, errors, n, n / seconds);
    info->test_error = (double)errors / n;
    snprintf(info->test_set, sizeof info->test_set, "MNIST t10k (%u)", n);
}

void train_print_views(const nc_prep *p, uint32_t kind)
{
    const char *tail = kind == NC_MF_KIND_CNN ? " (every column on each)\n"
                                              : " (each member on those of its shear)\n";
    for (uint32_t v = 0; v < p->n_views; v++)
        printf("%s%u px %s%s", v ? ", " : "views       ", p->view_box[v],
               nc_prep_deskew_name(p->view_deskew[v]), v + 1 == p->n_views ? tail : "");
}

/* tools/train_cascade.c — `neocog-train cascade`: fit a neocognitron
 * committee's cascade (core/neocog/neocog.h, "the cascade") on the validation
 * split and write a copy of the file that carries it.
 *
 * Layer: tools.  Validation is MNIST training digits 50000-59999; the test
 * set is not read.  Everything runs through an engine table, as the daemon
 * runs it: the committee without a cascade gives the committee's answers;
 * the same file with a cascade of threshold 0 on member m gives member m's
 * own mean over its views for every digit.  For each candidate first
 * member: its beta (the calibration's NLL fit on its own scores), its
 * confidence on each digit, and for each threshold t the validation error
 * of "member m where its confidence >= t, else the committee".  The t kept
 * is the one with the fewest network passes a digit whose error is at most
 * the committee's; the member kept, the one with the fewest passes.  The
 * written file is read back and, unless --no-check, run over validation
 * again through the engine, whose error must stay at most the committee's. */
#include "train_valid.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "nc_config.h"
#include "neocog.h"
#if NC_HAVE_CUDA
#include "backend_gpu.h"
#endif

#define WHO "neocog-train cascade"

enum {
    O_MODEL, O_OUT, O_DATA, O_FIRST_MEMBER, O_COUNT, O_THREADS, O_GPU, O_NO_CHECK, O_END,
};

static const nc_opt table[] = {
    [O_MODEL] = { "model", "FILE", "neocognitron committee file (gzip'd allowed)" },
    [O_OUT] = { "out", "FILE", "where to write the file with the cascade (may equal --model)" },
    [O_DATA] = { "data", "DIR", "folder with the MNIST files (default $NC_MNIST_DIR)" },
    [O_FIRST_MEMBER] = { "first-member", "N",
        "try only member N (0-based) first; default every member" },
    [O_COUNT] = { "count", "N", "validation digits to use, from 50000 (default 10000)" },
    [O_THREADS] = { "threads", "N", "threads (default 1)" },
    [O_GPU] = { "gpu", "N", "run the committee on CUDA device N (a CUDA build)" },
    [O_NO_CHECK] = { "no-check", NULL, "do not run the written file over validation again" },
    [O_END] = { NULL, NULL, NULL },
};

static const char usage_text[] =
    "usage: neocog-train cascade --model IN --out OUT [OPTIONS]\n"
    "\n"
    "Fit a cascade for a neocognitron committee on the validation split (MNIST\n"
    "training digits 50000-59999): the first member answers alone when its\n"
    "calibrated confidence is at least a threshold, the whole committee otherwise.\n"
    "The threshold kept gives the fewest network passes a digit with a validation\n"
    "error at most the committee's.  Writes IN with the cascade as OUT.\n";

typedef struct opts {
    train_valid_opts v;         /* --model, --out, --data, --count, --threads, --gpu */
    int first;                  /* < 0: every member */
    int check;
} opts;

/* TRAIN_PARSED, or the exit status after --help or a usage error. */
static int parse(int argc, char **argv, opts *o)
{
    nc_opts p = { .prog = WHO, .usage = usage_text, .table = table };
    *o = (opts){ .v = TRAIN_VALID_OPTS_INIT, .first = -1, .check = 1 };
    for (int c; (c = nc_opts_next(&p, argc, argv)) != NC_OPTS_END;) {
        uint32_t first = 0;
        switch (c) {
        case NC_OPTS_HELP: nc_opts_usage(&p, stdout); return TRAIN_EXIT_OK;
        case NC_OPTS_ERROR: return train_opts_fail(&p, NULL);
        case O_FIRST_MEMBER:
            if (nc_opts_u32(p.value, 0, NC_NEOCOG_MAX_MEMBERS - 1, &first))
                return train_opts_bad(&p, c, NULL);
            o->first = (int)first;
            break;
        case O_NO_CHECK: o->check = 0; break;
        default:
            if (train_valid_option(&o->v, table[c].name, p.value) < 0)
                return train_opts_bad(&p, c, NULL);
        }
    }
    return train_valid_check(&p, argc, &o->v, 1);
}

/* A file image on the CPU table, or a neocognitron on GPU gpu. */
static int open_image(const uint8_t *buf, size_t len, int gpu, nc_backend **ret_be)
{
    const nc_backend_ops *ops = &nc_backend_cpu;
#if NC_HAVE_CUDA
    if (gpu >= 0)
        ops = &nc_backend_gpu;
#endif
    int err = nc_backend_open(ops, buf, len, gpu < 0 ? 0 : gpu, ret_be);
    if (err) {
        const char *why = err == -EBADMSG ? train_cascade_why(buf, len) : NULL;
        fprintf(stderr, WHO ": opening the model: %s%s%s\n", nc_strerror(err),
                why ? ": " : "", why ? why : "");
#if NC_HAVE_CUDA
        if (gpu >= 0)
            fprintf(stderr, WHO ": GPU %d: %s\n", gpu, nc_backend_gpu_last_error());
#endif
    }
    return err;
}

/* Raw scores of the file image buf over the validation digits. */
static int scores_of(const uint8_t *buf, size_t len, const opts *o, const nc_dataset *ds,
                     float *raw, uint8_t *ok, double *ret_rate, nc_calib *ret_cal)
{
    nc_backend *be = NULL;
    int err = open_image(buf, len, o->v.gpu, &be);
    if (err)
        return err;
    train_scores sc = { be, ds, TRAIN_VALID_FIRST, o->v.count, o->v.threads, raw, ok, 0.0, NULL,
                        o->v.gpu >= 0 ? TRAIN_GPU_BATCH : 0 };
    err = train_scores_run(&sc);
    if (!err && ret_rate)
        *ret_rate = o->v.count / sc.seconds;
    if (ret_cal)
        *ret_cal = be->calib;
    nc_backend_close(be);
    if (err)
        fprintf(stderr, WHO ": running the model: %s\n", nc_strerror(err));
    return err;
}

/* One candidate first member, fitted. */
typedef struct fit {
    uint32_t member, views;
    double beta, threshold, passes;
    uint32_t decided, errors;
} fit;

static const double *sort_conf;

static int by_conf_desc(const void *a, const void *b)
{
    const double x = sort_conf[*(const uint32_t *)a], y = sort_conf[*(const uint32_t *)b];
    return x < y ? 1 : x > y ? -1 : 0;
}

/* For member answers ans_m and confidences conf (n digits) against the
 * committee's answers ans_c: the cut with the fewest passes whose errors
 * are at most the committee's.  Prints a few rows of the sweep. */
static void sweep(const int32_t *ans_m, const double *conf, const int32_t *ans_c,
                  const uint8_t *lab, uint32_t n, uint32_t views, uint32_t all_views,
                  uint32_t *order, fit *f)
{
    uint32_t errors_c = 0, errors_m = 0;
    for (uint32_t i = 0; i < n; i++) {
        order[i] = i;
        errors_c += ans_c[i] != (int32_t)lab[i];
        errors_m += ans_m[i] != (int32_t)lab[i];
    }
    sort_conf = conf;
    qsort(order, n, sizeof *order, by_conf_desc);
    static const double show[] = { 0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 1.0 };
    size_t next_show = 0;
    printf("  member %u alone: error %.2f%% (%u); beta %.4g\n", f->member,
           100.0 * errors_m / n, errors_m, f->beta);
    printf("  %10s %9s %9s %7s\n", "threshold", "answered", "error", "passes");
    /* k digits decided: the k most confident */
    uint32_t e = errors_c, best_k = 0, best_e = errors_c;
    for (uint32_t k = 1; k <= n; k++) {
        const uint32_t i = order[k - 1];
        e += (ans_m[i] != (int32_t)lab[i]) - (ans_c[i] != (int32_t)lab[i]);
        /* a cut only between distinct confidences (t = conf of the last
         * decided digit decides all of its equals) */
        if (k < n && conf[order[k]] == conf[i])
            continue;
        if (e <= errors_c) {
            best_k = k;
            best_e = e;
        }
        const double passes = views + (double)(n - k) / n * (all_views - views);
        if (next_show < NC_ARRAY_LEN(show) && (double)k / n >= show[next_show]) {
            printf("  %10.6f %8.2f%% %8.2f%% %7.2f\n", conf[i], 100.0 * k / n, 100.0 * e / n,
                   passes);
            while (next_show < NC_ARRAY_LEN(show) && (double)k / n >= show[next_show])
                next_show++;
        }
    }
    f->decided = best_k;
    f->errors = best_e;
    f->threshold = best_k ? conf[order[best_k - 1]] : 1.0;
    f->passes = views + (double)(n - best_k) / n * (all_views - views);
}

int train_cascade_main(int argc, char **argv, const train_cmdline *cmd)
{
    (void)cmd;
    opts o;
    const int parsed = parse(argc, argv, &o);
    if (parsed != TRAIN_PARSED)
        return parsed;
    int status = TRAIN_EXIT_FAIL, err = 0;
    uint8_t *buf = NULL, *base = NULL, *probe = NULL, *obuf = NULL;
    size_t len = 0, blen = 0, plen = 0, olen = 0;
    nc_dataset ds = { 0 };
    nc_neocog_committee *com = NULL;
    const uint32_t n = o.v.count;
    float *raw_c = NULL, *raw_m = NULL, *cf = NULL;
    double *conf = NULL;
    uint8_t *ok = NULL;
    int32_t *ans_c = NULL, *ans_m = NULL;
    uint32_t *order = NULL;
    const nc_neocog_cascade off = { 0 };

    if ((err = nc_file_read_model(o.v.model, TRAIN_MODEL_MAX_BYTES, &buf, &len))) {
        fprintf(stderr, WHO ": %s: %s\n", o.v.model, nc_strerror(err));
        goto out;
    }
    /* the committee without any cascade it may carry */
    if ((err = nc_neocog_cascade_rewrite(buf, len, &off, &base, &blen))) {
        fprintf(stderr, WHO ": %s: not a neocognitron file (%s)\n", o.v.model, nc_strerror(err));
        goto out;
    }
    nc_model_info info;
    if ((err = nc_neocog_committee_load(base, blen, &com, &info))) {
        fprintf(stderr, WHO ": %s: %s\n", o.v.model, nc_strerror(err));
        goto out;
    }
    const uint32_t M = com->n_members, K = info.n_classes, all_views = com->n_scores;
    uint32_t views[NC_NEOCOG_MAX_MEMBERS];
    for (uint32_t m = 0; m < M; m++)
        views[m] = (uint32_t)__builtin_popcount(com->view_mask[m]);
    nc_neocog_committee_free(com);
    com = NULL;
    if (M < 2 || (o.first >= 0 && (uint32_t)o.first >= M)) {
        fprintf(stderr, WHO ": %s has %u member%s: %s\n", o.v.model, M, M == 1 ? "" : "s",
                M < 2 ? "a cascade needs two or more" : "no such --first-member");
        goto out;
    }
    if (train_valid_load_mnist(WHO, o.v.data, n, K, &ds))
        goto out;
    const uint8_t *lab = ds.labels + TRAIN_VALID_FIRST;
    raw_c = malloc((size_t)n * K * sizeof *raw_c);
    raw_m = malloc((size_t)n * K * sizeof *raw_m);
    conf = malloc(n * sizeof *conf);
    cf = malloc(n * sizeof *cf);
    ok = malloc(n);
    ans_c = malloc(n * sizeof *ans_c);
    ans_m = malloc(n * sizeof *ans_m);
    order = malloc(n * sizeof *order);
    if (!raw_c || !raw_m || !conf || !cf || !ok || !ans_c || !ans_m || !order) {
        err = -ENOMEM;
        goto fail;
    }

    /* the committee: its answers by its own rule, as eval counts them */
    double rate = 0.0;
    nc_calib cal;
    if ((err = scores_of(base, blen, &o, &ds, raw_c, ok, &rate, &cal)))
        goto out;
    train_calibrated(&cal, NC_MF_KIND_NEOCOG, K, raw_c, ok, n, ans_c, cf, NULL, NULL);
    const uint32_t errors_c = train_count_errors(ans_c, lab, n);
    printf("model       %s (%u members, %u passes a digit)\n", o.v.model, M, all_views);
    printf("validation  MNIST train %u-%u (%u digits), %.1f digits/s\n", TRAIN_VALID_FIRST,
           TRAIN_VALID_FIRST + n - 1, n, rate);
    printf("committee   error %.2f%% (%u / %u)\n", 100.0 * errors_c / n, errors_c, n);

    fit best = { .passes = INFINITY };
    for (uint32_t m = 0; m < M; m++) {
        if (o.first >= 0 && (uint32_t)o.first != m)
            continue;
        /* threshold 0: member m answers every digit, alone */
        const nc_neocog_cascade probe_c = { 1, m, 0.0, 1.0 };
        free(probe);
        probe = NULL;
        if ((err = nc_neocog_cascade_rewrite(base, blen, &probe_c, &probe, &plen)) ||
            (err = scores_of(probe, plen, &o, &ds, raw_m, ok, &rate, NULL)))
            goto fail;
        fit f = { .member = m, .views = views[m] };
        double nll;
        if ((err = nc_calib_fit_beta(NC_MF_KIND_NEOCOG, raw_m, lab, n, K, &f.beta, &nll)))
            goto fail;
        train_calibrated(NULL, NC_MF_KIND_NEOCOG, K, raw_m, ok, n, ans_m, cf, NULL, NULL);
        for (uint32_t i = 0; i < n; i++)
            conf[i] = nc_neocog_cascade_confidence(f.beta, raw_m + (size_t)i * K, K);
        printf("\nfirst member %u (%u views, %.1f digits/s alone)\n", m, views[m], rate);
        sweep(ans_m, conf, ans_c, lab, n, views[m], all_views, order, &f);
        printf("  kept: threshold %.6f: %.2f%% answered by member %u, error %.2f%% (%u), "
               "%.2f passes a digit\n", f.threshold, 100.0 * f.decided / n, m,
               100.0 * f.errors / n, f.errors, f.passes);
        if (f.passes < best.passes || (f.passes == best.passes && f.errors < best.errors))
            best = f;
    }
    if (best.decided == 0) {
        fprintf(stderr, WHO ": no threshold keeps the committee's error; nothing written\n");
        goto out;
    }
    const nc_neocog_cascade chosen = { 1, best.member, best.threshold, best.beta };
    printf("\ncascade     member %u first, threshold %.6f, beta %.6g: %.2f%% answered by it, "
           "validation error %.2f%% (%u / %u; committee %u), %.2f passes a digit (was %u)\n",
           best.member, best.threshold, best.beta, 100.0 * best.decided / n,
           100.0 * best.errors / n, best.errors, n, errors_c, best.passes, all_views);
    if ((err = nc_neocog_cascade_rewrite(base, blen, &chosen, &obuf, &olen)))
        goto fail;
    nc_neocog_committee *back = NULL;
    if ((err = nc_neocog_committee_load(obuf, olen, &back, NULL)))
        goto fail;
    const int same = back->cascade.on && back->cascade.first == chosen.first &&
                     back->cascade.threshold == chosen.threshold &&
                     back->cascade.beta == chosen.beta;
    nc_neocog_committee_free(back);
    if (!same) {
        fprintf(stderr, WHO ": the written file does not read back as written\n");
        goto out;
    }
    if (o.check) {
        if ((err = scores_of(obuf, olen, &o, &ds, raw_m, ok, &rate, &cal)))
            goto out;
        train_calibrated(&cal, NC_MF_KIND_NEOCOG, K, raw_m, ok, n, ans_m, cf, NULL, NULL);
        const uint32_t e = train_count_errors(ans_m, lab, n);
        printf("check       the written file through the engine: error %.2f%% (%u), "
               "%.1f digits/s\n", 100.0 * e / n, e, rate);
        /* a GPU engine may pick other kernels for the smaller batches the
         * cascade leaves, so a near tie may fall the other way */
        if (e != best.errors)
            printf("note        the engine's error differs from the fitted one (%u) by "
                   "float rounding\n", best.errors);
        if (e > errors_c) {
            fprintf(stderr, WHO ": the engine's error (%u) is above the committee's (%u); "
                    "nothing written\n", e, errors_c);
            goto out;
        }
    }
    if ((err = nc_file_write_atomic(o.v.out, obuf, olen))) {
        fprintf(stderr, WHO ": writing %s: %s\n", o.v.out, nc_strerror(err));
        goto out;
    }
    printf("wrote       %s (%zu bytes)\n", o.v.out, olen);
    status = TRAIN_EXIT_OK;
    goto out;
fail:
    fprintf(stderr, WHO ": %s\n", nc_strerror(err));
out:
    nc_neocog_committee_free(com);
    nc_dataset_fini(&ds);
    free(buf);
    free(base);
    free(probe);
    free(obuf);
    free(raw_c);
    free(raw_m);
    free(conf);
    free(cf);
    free(ok);
    free(ans_c);
    free(ans_m);
    free(order);
    return status;
}

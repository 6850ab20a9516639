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
 * the committee's.  With the one-view stage (unless --no-view-stage), for
 * each member also each of its views alone (a file whose view stage has
 * threshold 0), its own beta and confidences, and the pair of thresholds
 * (view, member) with the fewest passes a digit whose error is at most the
 * committee's, both cuts searched together (the view's pass is one of the
 * member's, so the stage costs no pass: it only lets plain digits stop
 * sooner).  The cascade kept, over all members, has the fewest passes.
 * The written file is read back and, unless --no-check, run over
 * validation again through the engine, whose error must stay at most the
 * committee's. */
#include "train_valid.h"

#include <errno.h>
#include <limits.h>
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
    O_MODEL, O_OUT, O_DATA, O_FIRST_MEMBER, O_COUNT, O_THREADS, O_GPU, O_NO_VIEW_STAGE,
    O_NO_CHECK, O_END,
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
    [O_NO_VIEW_STAGE] = { "no-view-stage", NULL,
        "no one-view stage before the first member's other views" },
    [O_NO_CHECK] = { "no-check", NULL, "do not run the written file over validation again" },
    [O_END] = { NULL, NULL, NULL },
};

static const char usage_text[] =
    "usage: neocog-train cascade --model IN --out OUT [OPTIONS]\n"
    "\n"
    "Fit a cascade for a neocognitron committee on the validation split (MNIST\n"
    "training digits 50000-59999): the first member answers alone when its\n"
    "calibrated confidence is at least a threshold, the whole committee otherwise;\n"
    "before that, one of its views alone answers when that view is sure enough.\n"
    "The thresholds kept give the fewest network passes a digit with a validation\n"
    "error at most the committee's.  Writes IN with the cascade as OUT.\n";

typedef struct opts {
    train_valid_opts v;         /* --model, --out, --data, --count, --threads, --gpu */
    int first;                  /* < 0: every member */
    int view_stage;
    int check;
} opts;

/* TRAIN_PARSED, or the exit status after --help or a usage error. */
static int parse(int argc, char **argv, opts *o)
{
    nc_opts p = { .prog = WHO, .usage = usage_text, .table = table };
    *o = (opts){ .v = TRAIN_VALID_OPTS_INIT, .first = -1, .view_stage = 1, .check = 1 };
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
        case O_NO_VIEW_STAGE: o->view_stage = 0; break;
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
        const char *why = err == -EBADMSG ? nc_neocog_committee_why(buf, len) : NULL;
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

/* The one-view stage, fitted with the member stage.  The kept member's
 * answers ans_m and confidences conf_m, one of its views' ans_v and
 * conf_v, the committee's ans_c.  A digit the view decides costs 1 pass
 * (its view is one of the member's), one the member decides vf, any other
 * all_views.  For every member cut (between distinct confidences, at least
 * one digit decided) every view cut (none included) is tried; the pair
 * with the fewest passes whose errors are at most errors_c is kept in *f
 * (fewer errors on a tie).  O(n^2): 10^8 steps for 10,000 digits. */
typedef struct view_fit {
    uint32_t view;
    double beta, threshold, member_threshold, passes;
    uint32_t decided, member_decided, errors;   /* decided: by the view alone */
} view_fit;

static void sweep_view(const int32_t *ans_v, const double *conf_v, const int32_t *ans_m,
                       const double *conf_m, const int32_t *ans_c, const uint8_t *lab,
                       uint32_t n, uint32_t vf, uint32_t all_views, uint32_t errors_c,
                       uint32_t *order_v, uint32_t *order_m, uint8_t *by_m, view_fit *f)
{
    for (uint32_t i = 0; i < n; i++) {
        order_v[i] = order_m[i] = i;
        by_m[i] = 0;
    }
    sort_conf = conf_v;
    qsort(order_v, n, sizeof *order_v, by_conf_desc);
    sort_conf = conf_m;
    qsort(order_m, n, sizeof *order_m, by_conf_desc);
    /* e0, p0: errors and passes (x n) with no digit decided by the view */
    long e0 = 0, p0 = 0;
    for (uint32_t i = 0; i < n; i++) {
        e0 += ans_c[i] != (int32_t)lab[i];
        p0 += all_views;
    }
    long best_p = LONG_MAX, best_e = LONG_MAX;
    for (uint32_t k1 = 1; k1 <= n; k1++) {
        const uint32_t j = order_m[k1 - 1];
        by_m[j] = 1;
        e0 += (ans_m[j] != (int32_t)lab[j]) - (ans_c[j] != (int32_t)lab[j]);
        p0 -= all_views - vf;
        if (k1 < n && conf_m[order_m[k1]] == conf_m[j])
            continue;
        long e = e0, p = p0;
        for (uint32_t kv = 0; kv <= n; kv++) {
            if (kv > 0) {
                const uint32_t i = order_v[kv - 1];
                const int32_t a2 = by_m[i] ? ans_m[i] : ans_c[i];
                e += (ans_v[i] != (int32_t)lab[i]) - (a2 != (int32_t)lab[i]);
                p -= (by_m[i] ? vf : all_views) - 1;
                if (kv < n && conf_v[order_v[kv]] == conf_v[i])
                    continue;
            }
            if (e <= (long)errors_c && (p < best_p || (p == best_p && e < best_e))) {
                best_p = p;
                best_e = e;
                f->decided = kv;
                f->member_decided = k1;
                f->threshold = kv ? conf_v[order_v[kv - 1]] : 1.0;
                f->member_threshold = conf_m[j];
            }
        }
    }
    f->errors = best_e == LONG_MAX ? UINT32_MAX : (uint32_t)best_e;
    f->passes = best_p == LONG_MAX ? INFINITY : (double)best_p / n;
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
    int32_t *ans_c = NULL, *ans_m = NULL, *ans_b = NULL;
    double *conf_b = NULL;
    uint32_t *order = NULL, *order_m = NULL;
    uint8_t *by_m = NULL;
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
    uint32_t views[NC_NEOCOG_MAX_MEMBERS], mask[NC_NEOCOG_MAX_MEMBERS];
    for (uint32_t m = 0; m < M; m++) {
        mask[m] = com->view_mask[m];
        views[m] = (uint32_t)__builtin_popcount(mask[m]);
    }
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
    ans_b = malloc(n * sizeof *ans_b);
    conf_b = malloc(n * sizeof *conf_b);
    order_m = malloc(n * sizeof *order_m);
    by_m = malloc(n);
    if (!raw_c || !raw_m || !conf || !cf || !ok || !ans_c || !ans_m || !order || !ans_b ||
        !conf_b || !order_m || !by_m) {
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

    /* each member first: its own cut, then each of its views as the
     * one-view stage with both cuts refitted; the cascade with the fewest
     * passes a digit over all members is kept (fewer errors on a tie) */
    nc_neocog_cascade chosen = { 0 };
    double passes = INFINITY;
    uint32_t errors = UINT32_MAX;
    for (uint32_t m = 0; m < M; m++) {
        if (o.first >= 0 && (uint32_t)o.first != m)
            continue;
        /* threshold 0: member m answers every digit, alone */
        const nc_neocog_cascade probe_c = { .on = 1, .first = m, .threshold = 0.0, .beta = 1.0 };
        free(probe);
        probe = NULL;
        if ((err = nc_neocog_cascade_rewrite(base, blen, &probe_c, &probe, &plen)) ||
            (err = scores_of(probe, plen, &o, &ds, raw_m, ok, &rate, NULL)))
            goto fail;
        fit f = { .member = m, .views = views[m] };
        double nll;
        if ((err = nc_calib_fit_beta(NC_MF_KIND_NEOCOG, raw_m, lab, n, K, &f.beta, &nll)))
            goto fail;
        train_calibrated(NULL, NC_MF_KIND_NEOCOG, K, raw_m, ok, n, ans_b, cf, NULL, NULL);
        for (uint32_t i = 0; i < n; i++)
            conf_b[i] = nc_neocog_cascade_confidence(f.beta, raw_m + (size_t)i * K, K);
        printf("\nfirst member %u (%u views, %.1f digits/s alone)\n", m, views[m], rate);
        sweep(ans_b, conf_b, ans_c, lab, n, views[m], all_views, order, &f);
        if (f.decided == 0) {
            printf("  no threshold keeps the committee's error\n");
            continue;
        }
        printf("  kept: threshold %.6f: %.2f%% answered by member %u, error %.2f%% (%u), "
               "%.2f passes a digit\n", f.threshold, 100.0 * f.decided / n, m,
               100.0 * f.errors / n, f.errors, f.passes);
        if (f.passes < passes || (f.passes == passes && f.errors < errors)) {
            chosen = (nc_neocog_cascade){ .on = 1, .first = m, .threshold = f.threshold,
                                          .beta = f.beta };
            passes = f.passes;
            errors = f.errors;
        }
        /* the one-view stage: each of member m's views alone (view
         * threshold 0), against the member's answers and confidences */
        for (uint32_t v = 0; o.view_stage && views[m] > 1 && v < 32; v++) {
            if (!(mask[m] >> v & 1u))
                continue;
            const nc_neocog_cascade vprobe = { .on = 1, .first = m, .threshold = 0.0,
                                               .beta = 1.0, .view_on = 1, .view = v,
                                               .view_threshold = 0.0, .view_beta = 1.0 };
            free(probe);
            probe = NULL;
            if ((err = nc_neocog_cascade_rewrite(base, blen, &vprobe, &probe, &plen)) ||
                (err = scores_of(probe, plen, &o, &ds, raw_m, ok, &rate, NULL)))
                goto fail;
            view_fit vfit = { .view = v };
            if ((err = nc_calib_fit_beta(NC_MF_KIND_NEOCOG, raw_m, lab, n, K, &vfit.beta, &nll)))
                goto fail;
            train_calibrated(NULL, NC_MF_KIND_NEOCOG, K, raw_m, ok, n, ans_m, cf, NULL, NULL);
            for (uint32_t i = 0; i < n; i++)
                conf[i] = nc_neocog_cascade_confidence(vfit.beta, raw_m + (size_t)i * K, K);
            sweep_view(ans_m, conf, ans_b, conf_b, ans_c, lab, n, views[m], all_views, errors_c,
                       order, order_m, by_m, &vfit);
            const uint32_t e_alone = train_count_errors(ans_m, lab, n);
            printf("  view %u alone: error %.2f%% (%u), beta %.4g, %.1f digits/s\n", v,
                   100.0 * e_alone / n, e_alone, vfit.beta, rate);
            if (vfit.errors == UINT32_MAX || vfit.decided == 0)
                continue;
            printf("    with it first: view threshold %.6f (%.2f%% answered by the view), "
                   "member threshold %.6f, error %.2f%% (%u), %.2f passes a digit\n",
                   vfit.threshold, 100.0 * vfit.decided / n, vfit.member_threshold,
                   100.0 * vfit.errors / n, vfit.errors, vfit.passes);
            if (vfit.passes < passes || (vfit.passes == passes && vfit.errors < errors)) {
                chosen = (nc_neocog_cascade){ .on = 1, .first = m,
                                              .threshold = vfit.member_threshold,
                                              .beta = f.beta, .view_on = 1, .view = v,
                                              .view_threshold = vfit.threshold,
                                              .view_beta = vfit.beta };
                passes = vfit.passes;
                errors = vfit.errors;
            }
        }
    }
    if (!chosen.on) {
        fprintf(stderr, WHO ": no threshold keeps the committee's error; nothing written\n");
        goto out;
    }
    printf("\ncascade     member %u first, threshold %.6f, beta %.6g", chosen.first,
           chosen.threshold, chosen.beta);
    if (chosen.view_on)
        printf("; before it its view %u alone, threshold %.6f, beta %.6g", chosen.view,
               chosen.view_threshold, chosen.view_beta);
    printf(": validation error %.2f%% (%u / %u; committee %u), %.2f passes a digit (was %u)\n",
           100.0 * errors / n, errors, n, errors_c, passes, all_views);
    if ((err = nc_neocog_cascade_rewrite(base, blen, &chosen, &obuf, &olen)))
        goto fail;
    nc_neocog_committee *back = NULL;
    if ((err = nc_neocog_committee_load(obuf, olen, &back, NULL)))
        goto fail;
    const nc_neocog_cascade *bc = &back->cascade;
    const int same = bc->on && bc->first == chosen.first && bc->threshold == chosen.threshold &&
                     bc->beta == chosen.beta && bc->view_on == chosen.view_on &&
                     (!chosen.view_on ||
                      (bc->view == chosen.view && bc->view_threshold == chosen.view_threshold &&
                       bc->view_beta == chosen.view_beta));
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
        if (e != errors)
            printf("note        the engine's error differs from the fitted one (%u) by "
                   "float rounding\n", errors);
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
    free(ans_b);
    free(conf_b);
    free(order_m);
    free(by_m);
    return status;
}

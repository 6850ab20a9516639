/* tools/train_calibrate.c — `neocog-train calibrate`: fit a model file's
 * calibration rule (and, for a CNN, the ensemble rule with a neocognitron
 * file) on the validation split and write a copy of the file that carries
 * them (core/calib/calib.h).
 *
 * Layer: tools.  Validation is MNIST training digits 50000-59999, which no
 * trainer here learns from, or with --idx PREFIX another IDX set with its
 * classes file (e.g. neocog-unipen's validation writers); the test set is
 * not read at all.  The output is
 * the input file, every section copied byte for byte, minus any earlier
 * rule sections, plus the new ones; it is read back through the engine table
 * before it is written, so a file that the daemon would refuse never lands. */
#include "train_valid.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

enum {
    O_MODEL, O_OUT, O_DATA, O_IDX, O_ENSEMBLE, O_REBIND, O_REJECT_RATE, O_COUNT, O_THREADS,
    O_GPU, O_END,
};

static const nc_opt table[] = {
    [O_MODEL] = { "model", "FILE", "model file to calibrate (CNN, committee or neocognitron)" },
    [O_OUT] = { "out", "FILE", "where to write the calibrated copy (may equal --model)" },
    [O_DATA] = { "data", "DIR", "folder with the MNIST files (default $NC_MNIST_DIR)" },
    [O_IDX] = { "idx", "PREFIX",
        "validate on this IDX set instead (PREFIX-images-idx3-ubyte,\n"
        "PREFIX-labels-idx1-ubyte, PREFIX-classes.txt naming the\n"
        "model's classes), from its first image" },
    [O_ENSEMBLE] = { "ensemble", "FILE",
        "the neocognitron file to fit the ensemble rule with" },
    [O_REBIND] = { "rebind", "OLD",
        "with --ensemble NEW: fit nothing, move IN's ensemble rule\n"
        "from OLD (the file it was fitted with) to NEW, which must\n"
        "be OLD with only its record's text changed (test error,\n"
        "data, command, dates); reads no digits" },
    [O_REJECT_RATE] = { "reject-rate", "R",
        "fraction of validation digits the thresholds reject\n"
        "(default 0.01; 0 for no threshold)" },
    [O_COUNT] = { "count", "N",
        "validation digits to use (MNIST: from 50000, default 10000;\n"
        "--idx: default all)" },
    [O_THREADS] = { "threads", "N", "threads (default 1)" },
    [O_GPU] = { "gpu", "N",
        "run neocognitron files (the model or --ensemble) on CUDA\n"
        "device N (a CUDA build; their scores agree with the\n"
        "CPU's to float rounding); CNN files stay on the CPU" },
    [O_END] = { NULL, NULL, NULL },
};

static const char usage_text[] =
    "usage: neocog-train calibrate --model IN --out OUT [OPTIONS]\n"
    "\n"
    "Fit the model's calibration (an inverse temperature beta, by minimising the\n"
    "negative log-likelihood) and a reject threshold on the validation split,\n"
    "MNIST training digits 50000-59999, and write IN with them as OUT.  With\n"
    "--ensemble (IN a CNN) also fit the weight of the CNN + neocognitron ensemble\n"
    "and its reject threshold; the rule is bound to that neocognitron file.\n"
    "Calibrate the neocognitron file first, then the CNN with --ensemble.\n";

#define WHO "neocog-train calibrate"

/* The file image of IN with its rule sections replaced. */
static int rewrite(const uint8_t *buf, size_t len, const nc_calib *cal, const char *cal_note,
                   const nc_ens_rule *ens, const char *ens_note, uint8_t **ret_buf,
                   size_t *ret_len)
{
    nc_mf_reader *r = NULL;
    nc_mf_writer *w = NULL;
    int err = nc_mf_open(buf, len, &r);
    if (!err)
        err = nc_mf_writer_new(nc_mf_kind_of(r), &w);
    for (uint32_t i = 0; !err && i < nc_mf_section_count(r); i++) {
        uint32_t tag, type;
        const void *data;
        size_t n;
        if (!(err = nc_mf_section_at(r, i, &tag, &type, &data, &n)) && !nc_calib_is_tag(tag))
            err = nc_mf_put(w, tag, type, data, n);
    }
    if (!err)
        err = nc_calib_write(w, cal, cal_note, ens, ens_note);
    if (!err)
        err = nc_mf_finish(w, ret_buf, ret_len);
    nc_mf_writer_free(w);
    nc_mf_close(r);
    return err;
}

typedef struct opts {
    train_valid_opts v;         /* --model, --out, --data, --count, --threads, --gpu */
    const char *ensemble, *idx, *rebind;
    float rate;
} opts;

/* TRAIN_PARSED, or the exit status after --help or a usage error. */
static int parse(int argc, char **argv, opts *o)
{
    nc_opts p = { .prog = WHO, .usage = usage_text, .table = table };
    *o = (opts){ .v = TRAIN_VALID_OPTS_INIT, .rate = (float)NC_CALIB_REJECT_RATE };
    o->v.count = 0;             /* MNIST: every validation digit; --idx: every image */
    for (int c; (c = nc_opts_next(&p, argc, argv)) != NC_OPTS_END;) {
        switch (c) {
        case NC_OPTS_HELP: nc_opts_usage(&p, stdout); return TRAIN_EXIT_OK;
        case NC_OPTS_ERROR: return train_opts_fail(&p, NULL);
        case O_ENSEMBLE: o->ensemble = p.value; break;
        case O_IDX: o->idx = p.value; break;
        case O_REBIND: o->rebind = p.value; break;
        case O_REJECT_RATE:
            if (train_parse_float(p.value, &o->rate) || !(o->rate >= 0.0f && o->rate <= 0.5f))
                return train_opts_bad(&p, c, "(0..0.5)");
            break;
        default:
            if (train_valid_option(&o->v, table[c].name, p.value) < 0)
                return train_opts_bad(&p, c, NULL);
        }
    }
    if (o->rebind && !o->ensemble)
        return train_opts_fail(&p, "--rebind OLD needs --ensemble NEW");
    if (o->rebind)              /* reads no digits: the data options do not matter */
        return train_valid_check(&p, argc, &o->v, 0);
    if (!o->idx && o->v.count == 0)
        o->v.count = TRAIN_VALID_COUNT;
    return train_valid_check(&p, argc, &o->v, !o->idx);
}

int train_calibrate_main(int argc, char **argv, const train_cmdline *cmd)
{
    opts o;
    const int parsed = parse(argc, argv, &o);
    if (parsed != TRAIN_PARSED)
        return parsed;
    int status = TRAIN_EXIT_FAIL, err = 0;
    uint8_t *buf = NULL, *obuf = NULL;
    size_t len = 0, olen = 0;
    nc_backend *be = NULL, *neo = NULL, *back = NULL;
    nc_dataset ds = { 0 };
    float *raw = NULL, *raw_neo = NULL, *p_cnn = NULL, *p_neo = NULL, *conf = NULL;
    uint8_t *ok = NULL, *ok_neo = NULL, *op_cnn = NULL, *op_neo = NULL;
    int32_t *ans = NULL;
    char command[1024], cal_note[2048], ens_note[2048] = "";
    const uint32_t first = o.idx ? 0 : TRAIN_VALID_FIRST;
    uint32_t n = o.v.count;
    char vdesc[512];

    if (train_join_argv(cmd, command, sizeof command))
        fprintf(stderr, WHO ": note: the command is too long to record whole\n");
    if (o.rebind)
        return train_rebind(WHO, o.v.model, o.rebind, o.ensemble, o.v.out, command);
    if (train_open_model_on(WHO, o.v.model, o.v.gpu, &be, &buf, &len))
        goto out;
    const uint32_t kind = be->kind, K = be->info.n_classes;
    const uint32_t batch = o.v.gpu >= 0 ? TRAIN_GPU_BATCH : 0;
    if (o.ensemble) {
        if (kind != NC_MF_KIND_CNN) {
            fprintf(stderr, WHO ": --ensemble: the ensemble rule lives in the CNN file; "
                    "%s is not one\n", o.v.model);
            goto out;
        }
        if (train_open_model_on(WHO, o.ensemble, o.v.gpu, &neo, NULL, NULL))
            goto out;
        if (neo->kind != NC_MF_KIND_NEOCOG || neo->info.n_classes != K) {
            fprintf(stderr, WHO ": %s: not a neocognitron with the CNN's %u classes\n",
                    o.ensemble, K);
            goto out;
        }
    }
    train_classes classes;
    if (o.idx) {
        if (train_load_idx_set(WHO, o.idx, &ds, &classes) ||
            train_classes_match(WHO, &classes, &be->info))
            goto out;
        if (n == 0 || n > ds.count)
            n = ds.count;
        if (train_labels_ok(WHO, &ds, 0, n, K))
            goto out;
        snprintf(vdesc, sizeof vdesc, "%s 0-%u (%u images, validation)", o.idx, n - 1, n);
    } else {
        if (train_valid_load_mnist(WHO, o.v.data, n, K, &ds))
            goto out;
        snprintf(vdesc, sizeof vdesc, "MNIST train %u-%u (%u digits, validation)", first,
                 first + n - 1, n);
    }
    const uint8_t *lab = ds.labels + first;
    const size_t rows = (size_t)n * K;
    raw = malloc(rows * sizeof *raw);
    p_cnn = malloc(rows * sizeof *p_cnn);
    conf = malloc(n * sizeof *conf);
    ok = malloc(n);
    op_cnn = malloc(n);
    ans = malloc(n * sizeof *ans);
    if (!raw || !p_cnn || !conf || !ok || !op_cnn || !ans) {
        err = -ENOMEM;
        goto fail;
    }

    /* ---- the model's own rule ---- */
    train_scores sc = { be, &ds, first, n, o.v.threads, raw, ok, 0.0, NULL,
                        kind == NC_MF_KIND_NEOCOG ? batch : 0 };
    if ((err = train_scores_run(&sc)))
        goto fail;
    const double plain_beta =
        kind == NC_MF_KIND_CNN ? NC_CALIB_PLAIN_BETA_CNN : NC_CALIB_PLAIN_BETA_NEOCOG;
    nc_calib cal = { .fitted = 1, .reject_rate = o.rate, .n_valid = n };
    if ((err = nc_calib_nll(kind, plain_beta, raw, lab, n, K, &cal.nll_plain)) ||
        (err = nc_calib_fit_beta(kind, raw, lab, n, K, &cal.beta, &cal.nll_fitted)))
        goto fail;
    train_calibrated(&cal, kind, K, raw, ok, n, ans, conf, p_cnn, op_cnn);
    if ((err = nc_calib_threshold(conf, n, o.rate, &cal.reject_threshold)))
        goto fail;
    const uint32_t errors = train_count_errors(ans, lab, n);
    cal.valid_error = (double)errors / n;
    printf("model       %s (%s)\n", o.v.model, kind == NC_MF_KIND_CNN ? "CNN" : "neocognitron");
    printf("validation  %s, %.1f digits/s\n", vdesc, n / sc.seconds);
    printf("error       %.2f%% (%u / %u)\n", 100.0 * cal.valid_error, errors, n);
    printf("rule        beta %.4g (plain %.4g): mean NLL %.5f -> %.5f\n", cal.beta, plain_beta,
           cal.nll_plain, cal.nll_fitted);
    train_report_threshold("validation ", cal.reject_threshold, ans, conf, lab, n);
    snprintf(cal_note, sizeof cal_note,
             "fitted by: %s; data: %s; beta %.6g "
             "(plain %.6g), mean NLL %.5f -> %.5f; reject threshold %.6f for %.2f%% of "
             "validation; validation error %.4f%%",
             command, vdesc, cal.beta, plain_beta, cal.nll_plain,
             cal.nll_fitted, cal.reject_threshold, 100.0 * o.rate, 100.0 * cal.valid_error);

    /* ---- the ensemble's rule ---- */
    nc_ens_rule ens = { 0 };
    if (neo) {
        raw_neo = malloc(rows * sizeof *raw_neo);
        p_neo = malloc(rows * sizeof *p_neo);
        ok_neo = malloc(n);
        op_neo = malloc(n);
        int32_t *a2 = ans;
        if (!raw_neo || !p_neo || !ok_neo || !op_neo) {
            err = -ENOMEM;
            goto fail;
        }
        train_scores sn = { neo, &ds, first, n, o.v.threads, raw_neo, ok_neo, 0.0, NULL, batch };
        fprintf(stderr, WHO ": running %s over the validation digits...\n", o.ensemble);
        if ((err = train_scores_run(&sn)))
            goto fail;
        /* the neocognitron through its own file's rule, as the daemon does */
        train_calibrated(&neo->calib, NC_MF_KIND_NEOCOG, K, raw_neo, ok_neo, n, a2, conf,
                         p_neo, op_neo);
        const uint32_t neo_errors = train_count_errors(a2, lab, n);
        ens = (nc_ens_rule){ .fitted = 1, .partner = neo->fp, .reject_rate = o.rate,
                             .n_valid = n };
        if ((err = nc_ens_nll(0.5, p_cnn, op_cnn, p_neo, op_neo, lab, n, K, &ens.nll_plain)) ||
            (err = nc_ens_fit_weight(p_cnn, op_cnn, p_neo, op_neo, lab, n, K, &ens.w_cnn,
                                     &ens.nll_fitted)))
            goto fail;
        nc_ens_rule plain = { 0 };
        train_ensembled(&plain, p_cnn, op_cnn, p_neo, op_neo, n, K, a2, conf);
        const uint32_t plain_errors = train_count_errors(a2, lab, n);
        train_ensembled(&ens, p_cnn, op_cnn, p_neo, op_neo, n, K, a2, conf);
        if ((err = nc_calib_threshold(conf, n, o.rate, &ens.reject_threshold)))
            goto fail;
        const uint32_t ens_errors = train_count_errors(a2, lab, n);
        ens.valid_error = (double)ens_errors / n;
        printf("\nensemble    with %s (%s rule, CRC %08x, %llu bytes), %.1f digits/s\n",
               o.ensemble, neo->calib.fitted ? "its fitted" : "the plain", neo->fp.crc,
               (unsigned long long)neo->fp.len, n / sn.seconds);
        printf("neocog      error %.2f%% (%u / %u)\n", 100.0 * neo_errors / n, neo_errors, n);
        printf("plain mean  error %.2f%% (%u / %u), mean NLL %.5f\n", 100.0 * plain_errors / n,
               plain_errors, n, ens.nll_plain);
        printf("fitted      w_cnn %.4f: error %.2f%% (%u / %u), mean NLL %.5f\n", ens.w_cnn,
               100.0 * ens.valid_error, ens_errors, n, ens.nll_fitted);
        train_report_threshold("validation ", ens.reject_threshold, a2, conf, lab, n);
        snprintf(ens_note, sizeof ens_note,
                 "fitted by: %s; partner: %s (CRC-32 %08x, %llu bytes); data: %s; p = w p_cnn + (1 - w) p_neo, w %.6f chosen "
                 "by mean NLL (%.5f; plain w 0.5: %.5f); reject threshold %.6f for %.2f%% "
                 "of validation; validation error %.4f%% (plain %.4f%%)",
                 command, o.ensemble, neo->fp.crc, (unsigned long long)neo->fp.len, vdesc,
                 ens.w_cnn, ens.nll_fitted, ens.nll_plain,
                 ens.reject_threshold, 100.0 * o.rate, 100.0 * ens.valid_error,
                 100.0 * plain_errors / n);
    } else if (be->ens.fitted) {
        fprintf(stderr, WHO ": note: %s held an ensemble rule fitted with the old "
                "calibration; it is dropped (pass --ensemble to fit a new one)\n", o.v.model);
    }

    /* ---- the new file, read back before it is written ---- */
    if ((err = rewrite(buf, len, &cal, cal_note, &ens, ens_note, &obuf, &olen)))
        goto fail;
    if ((err = nc_backend_open(&nc_backend_cpu, obuf, olen, 0, &back)))
        goto fail;
    if (!back->calib.fitted || back->calib.beta != cal.beta ||
        back->ens.fitted != ens.fitted || back->kind != kind) {
        fprintf(stderr, WHO ": the written file does not read back as written\n");
        goto out;
    }
    if ((err = nc_file_write_atomic(o.v.out, obuf, olen))) {
        fprintf(stderr, WHO ": writing %s: %s\n", o.v.out, nc_strerror(err));
        goto out;
    }
    printf("\nwrote       %s (%zu bytes)\n", o.v.out, olen);
    status = TRAIN_EXIT_OK;
    goto out;
fail:
    fprintf(stderr, WHO ": %s\n", nc_strerror(err));
out:
    nc_backend_close(back);
    nc_backend_close(neo);
    nc_backend_close(be);
    nc_dataset_fini(&ds);
    free(buf);
    free(obuf);
    free(raw);
    free(raw_neo);
    free(p_cnn);
    free(p_neo);
    free(conf);
    free(ok);
    free(ok_neo);
    free(op_cnn);
    free(op_neo);
    free(ans);
    return status;
}

/* tools/train_eval.c — `neocog-train eval`: measure a model file (CNN or
 * neocognitron) on MNIST, plus the threaded neocognitron runner that the
 * neocognitron trainer shares.
 *
 * Layer: tools.  Reports error rate, confusion matrix, per-class errors,
 * error at 0.5 / 1 / 2 % rejection (rejecting the least confident answers;
 * confidence = share of the best class minus the runner-up's, so ties and
 * "nothing fired" go first), throughput, and writes the most confident
 * misrecognitions as a PNG sheet, captioned with the classes' labels (glyphs.h).
 *
 * Every file runs through the CPU engine table (core/backend/backend.h, via
 * train_scores.c): a CNN committee answers with its columns' mean, a
 * neocognitron with the interpolating-vector mark (TRAIN_TAG_IV) with that
 * classifier.  With --max-response a neocognitron runs through
 * nc_neocog_forward here instead, ignoring the mark.
 *
 * From the raw scores it also reports the calibrated model (core/calib/calib.h:
 * the rule the file holds, else the plain one): error at 0.5 / 1 / 2 %
 * rejection of the least calibrated-confident answers, and what the stored
 * reject threshold does; with --ensemble NEOCOG (a CNN model) the same for
 * the CNN + neocognitron ensemble under the rule the daemon would pick.
 *
 * --idx PREFIX measures an IDX set with its classes file (neocog-unipen's
 * characters) instead of MNIST; a model of more than ten classes then gets
 * the character report (train_eval_chars.c: per kind of character, top-3,
 * the ambiguity groups of train_groups.h apart) and its most frequent
 * confusions in place of the full confusion matrix. */
#include "train_common.h"
#include "train_calib.h"

#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cnn.h"
#include "fileio.h"
#include "glyphs.h"
#include "image_clean.h"
#include "modelfile.h"
#include "nc_config.h"
#include "neocog.h"
#include "train_groups.h"
#include "train_pool.h"
#if NC_HAVE_CUDA
#include "backend_gpu.h"
#endif

#define MODEL_MAX_BYTES ((size_t)1 << 31)

float train_margin(const float *score, uint32_t n)
{
    double sum = 0.0, s1 = 0.0, s2 = 0.0;
    for (uint32_t c = 0; c < n; c++) {
        double s = score[c] > 0.0f ? score[c] : 0.0;
        sum += s;
        if (s > s1) {
            s2 = s1;
            s1 = s;
        } else if (s > s2) {
            s2 = s;
        }
    }
    return sum > 0.0 ? (float)((s1 - s2) / sum) : -1.0f;
}

/* ---- the threaded neocognitron runner ---------------------------------------- */

typedef struct neo_job {
    train_neo_run *run;
    uint32_t part, parts;
    int err;
} neo_job;

/* Digits part, part + parts, ... (interleaved so every part gets a like mix). */
static void neo_task(void *arg, uint32_t part)
{
    neo_job *j = (neo_job *)arg + part;
    train_neo_run *run = j->run;
    nc_neocog_state *st = NULL;
    float *img = malloc(nc_prep_out_len(&run->prep) * sizeof(float));
    int err = img ? nc_neocog_state_new(run->net, &st) : -ENOMEM;
    /* interleaved so every thread gets a like mix of digits */
    for (uint32_t i = j->part; err == 0 && i < run->count; i += j->parts) {
        const nc_dataset *d = run->d;
        const uint32_t k = run->first + i;
        nc_image im = { d->cols, d->rows, d->cols, d->pixels + (size_t)k * d->rows * d->cols };
        nc_neocog_result res;
        err = nc_image_clean_prep(&im, run->prep.invert ? NC_POLARITY_DARK_INK
                                                       : NC_POLARITY_AUTO, &run->prep, img);
        if (err == -ENOENT) {
            memset(img, 0, nc_prep_out_len(&run->prep) * sizeof(float));
            err = 0;
        }
        if (!err)
            err = nc_neocog_forward(run->net, st, img, NC_NEOCOG_FORM_F, &res);
        if (err)
            break;
        run->answer[i] = res.label;
        run->conf[i] = res.label < 0 ? -1.0f : train_margin(res.score, res.n_classes);
        if (run->iv) {
            nc_neocog_result rv;
            if ((err = nc_neocog_iv_classify(run->iv, run->net, st, &rv)))
                break;
            run->answer_iv[i] = rv.label;
            run->conf_iv[i] = rv.label < 0 ? -1.0f : train_margin(rv.score, rv.n_classes);
        }
    }
    nc_neocog_state_free(st);
    free(img);
    j->err = err;
}

int train_neo_evaluate(train_neo_run *run)
{
    uint32_t n = run->threads ? run->threads : 1;
    n = n > 64 ? 64 : n;
    neo_job jobs[64];
    double t0 = train_now();
    for (uint32_t p = 0; p < n; p++)
        jobs[p] = (neo_job){ run, p, n, 0 };
    int err = train_pool_spread(n, neo_task, jobs, n);
    for (uint32_t p = 0; p < n && !err; p++)
        err = jobs[p].err;
    run->seconds = train_now() - t0;
    return err;
}

/* ---- the PNG sheet -------------------------------------------------------------- */

/* Character c (glyphs.h) at (x0, y0), each pixel a scale x scale square. */
static void put_glyph(uint8_t *rgb, uint32_t w, uint32_t x0, uint32_t y0, int c,
                      uint32_t scale, const uint8_t col[3])
{
    for (uint32_t y = 0; y < NC_GLYPH_H; y++)
        for (uint32_t x = 0; x < NC_GLYPH_W; x++)
            if (nc_glyph_row(c, y) >> (NC_GLYPH_W - 1 - x) & 1)
                for (uint32_t sy = 0; sy < scale; sy++)
                    for (uint32_t sx = 0; sx < scale; sx++) {
                        uint8_t *p = rgb + (((size_t)(y0 + y * scale + sy)) * w +
                                            x0 + x * scale + sx) * 3;
                        memcpy(p, col, 3);
                    }
}

/* rgb (W x H, 8-bit RGB rows) as a PNG file.  Nothing this function
 * changes after setjmp is read after a longjmp except err, hence volatile. */
static int png_write_rgb(const char *path, const uint8_t *rgb, uint32_t W, uint32_t H)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -errno;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    volatile int err = 0;
    if (!png || !info) {
        err = -ENOMEM;
    } else if (setjmp(png_jmpbuf(png))) {
        err = -EIO;
    } else {
        png_init_io(png, f);
        png_set_IHDR(png, info, W, H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                     PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
        png_write_info(png, info);
        for (uint32_t y = 0; y < H; y++)
            png_write_row(png, (png_const_bytep)(rgb + (size_t)y * W * 3));
        png_write_end(png, NULL);
    }
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    if (fclose(f) && !err)
        err = -EIO;
    return err;
}

/* The caption character of a class: its label when that is one printable
 * character, else the dash (no answer, or a longer label: those are in the
 * printed list). */
static int glyph_of(const nc_model_info *info, int32_t cls)
{
    const char *t = cls >= 0 && (uint32_t)cls < info->n_classes ? info->labels[cls] : "";
    return t[0] > 0x20 && t[0] < 0x7f && !t[1] ? t[0] : '-';
}

/* Tiles of the given digits (raw MNIST pixels, scaled 2x, ink dark on white)
 * with "true answer" captions: true in green, answer in red. */
static int write_sheet(const char *path, const nc_dataset *d, const nc_model_info *info,
                       const uint32_t *idx, const int32_t *answer, uint32_t n)
{
    const uint32_t S = 2, cols = 10, tw = d->cols * S + 8, th = d->rows * S + 16;
    const uint32_t rows = n ? (n + cols - 1) / cols : 1;
    const uint32_t W = cols * tw, H = rows * th;
    uint8_t *rgb = malloc((size_t)W * H * 3);
    if (!rgb)
        return -ENOMEM;
    memset(rgb, 255, (size_t)W * H * 3);
    static const uint8_t green[3] = { 0, 140, 0 }, red[3] = { 200, 0, 0 };
    for (uint32_t t = 0; t < n; t++) {
        const uint32_t x0 = (t % cols) * tw + 4, y0 = (t / cols) * th + 2;
        const uint8_t *px = d->pixels + (size_t)idx[t] * d->rows * d->cols;
        for (uint32_t y = 0; y < d->rows * S; y++)
            for (uint32_t x = 0; x < d->cols * S; x++) {
                uint8_t v = (uint8_t)(255 - px[(y / S) * d->cols + x / S]);
                uint8_t *p = rgb + ((size_t)(y0 + y) * W + x0 + x) * 3;
                p[0] = p[1] = p[2] = v;
            }
        const uint32_t cy = y0 + d->rows * S + 2;
        put_glyph(rgb, W, x0, cy, glyph_of(info, d->labels[idx[t]]), 2, green);
        put_glyph(rgb, W, x0 + 10, cy, glyph_of(info, answer[t]), 2, red);
    }
    int err = png_write_rgb(path, rgb, W, H);
    free(rgb);
    return err;
}

/* ---- the command ------------------------------------------------------------------ */

enum {
    O_MODEL, O_DATA, O_SET, O_IDX, O_FIRST, O_COUNT, O_SHEET, O_SHEET_MAX, O_MAX_RESPONSE,
    O_HEIGHTS, O_ENSEMBLE, O_THREADS, O_GPU, O_SAVE_SCORES, O_END,
};

static const nc_opt table[] = {
    [O_MODEL] = { "model", "FILE", "model file (required)" },
    [O_DATA] = { "data", "DIR", "folder with the MNIST files (default $NC_MNIST_DIR)" },
    [O_SET] = { "set", "NAME", "t10k (default) or train" },
    [O_IDX] = { "idx", "PREFIX",
        "measure an IDX set instead of MNIST: PREFIX-images-idx3-\n"
        "ubyte, PREFIX-labels-idx1-ubyte and PREFIX-classes.txt\n"
        "(neocog-unipen's; the classes must be the model's)" },
    [O_FIRST] = { "first", "N", "first digit of the set to use (0)" },
    [O_COUNT] = { "count", "N", "digits to use (all from --first)" },
    [O_SHEET] = { "sheet", "FILE", "write the most confident misrecognitions as PNG" },
    [O_SHEET_MAX] = { "sheet-max", "N", "tiles on the sheet (100)" },
    [O_MAX_RESPONSE] = { "max-response", NULL,
        "neocognitron: ignore an interpolating-vector mark" },
    [O_HEIGHTS] = { "heights", "H,H,..",
        "prepare each digit with these boxes in place of the\n"
        "file's (a neocognitron's digit height, a CNN's fit box)\n"
        "and average the scores, up to 8: a trial of the views\n"
        "that committee --heights stores in a model file\n"
        "(not for a file with views of its own)" },
    [O_ENSEMBLE] = { "ensemble", "FILE",
        "with a CNN model: also measure the ensemble with this\n"
        "neocognitron file (the rule the daemon would use)" },
    [O_THREADS] = { "threads", "N", "threads (default 1)" },
    [O_GPU] = { "gpu", "N",
        "run the model (and --ensemble's) on CUDA device N (a CUDA\n"
        "build); the threads then prepare digits for it" },
    [O_SAVE_SCORES] = { "save-scores", "F",
        "write the raw scores (after --heights) to F: float32,\n"
        "little-endian, digits x classes, for offline trials\n"
        "(neocog-train combine: committees of such files)" },
    [O_END] = { NULL, NULL, NULL },
};

static const char usage_text[] =
    "usage: neocog-train eval --model FILE [OPTIONS]\n"
    "\n"
    "Measure a model file (CNN or neocognitron) on MNIST digits: error rate,\n"
    "confusion matrix, per-class errors, error at 0.5/1/2% rejection and\n"
    "throughput; optionally the worst misrecognitions as a PNG sheet.\n";

typedef struct conf_idx {
    float conf;
    uint32_t i;
} conf_idx;

static int by_conf_asc(const void *a, const void *b)
{
    const conf_idx *x = a, *y = b;
    if (x->conf != y->conf)
        return x->conf < y->conf ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The calibrated figures of be's raw scores raw[n][K] on digits with true
 * labels lab[n] (see the top of the file); with ens_path also the ensemble
 * with that neocognitron, run over the same digits [first, first + n) of
 * ds. */
static int report_calibrated(const nc_backend *be, const nc_mf_reader *rd, const float *raw,
                             const uint8_t *ok, const uint8_t *lab, uint32_t n,
                             uint32_t threads, const char *ens_path, const nc_dataset *ds,
                             uint32_t first, int gpu)
{
    const uint32_t K = be->info.n_classes;
    int32_t *ans = malloc(n * sizeof *ans);
    float *conf = malloc(n * sizeof *conf);
    float *p_cnn = malloc((size_t)n * K * sizeof *p_cnn);
    uint8_t *op_cnn = malloc(n);
    float *raw_neo = NULL, *p_neo = NULL;
    uint8_t *ok_neo = NULL, *op_neo = NULL;
    nc_backend *neo = NULL;
    char note[4096];
    int err = ans && conf && p_cnn && op_cnn ? 0 : -ENOMEM;
    if (err)
        goto out;
    printf("\ncalibrated  ");
    if (be->calib.fitted) {
        printf("beta %.4g, fitted on %.0f validation digits (mean NLL %.5f -> %.5f there)\n",
               be->calib.beta, be->calib.n_valid, be->calib.nll_plain, be->calib.nll_fitted);
        if (nc_mf_get_str(rd, NC_CALIB_TAG_NOTE, note, sizeof note) == 0)
            printf("            %s\n", note);
    } else {
        printf("no calibration section: the plain rule\n");
    }
    train_calibrated(&be->calib, be->kind, K, raw, ok, n, ans, conf, p_cnn, op_cnn);
    double nll;
    if (nc_calib_nll(be->kind, be->calib.fitted ? be->calib.beta
                               : be->kind == NC_MF_KIND_CNN ? NC_CALIB_PLAIN_BETA_CNN
                                                            : NC_CALIB_PLAIN_BETA_NEOCOG,
                     raw, lab, n, K, &nll) == 0)
        printf("            mean NLL here %.5f\n", nll);
    if ((err = train_report_rejection("calibrated ", ans, conf, lab, n)))
        goto out;
    if (be->calib.fitted)
        train_report_threshold("calibrated ", be->calib.reject_threshold, ans, conf, lab, n);
    if (!ens_path)
        goto out;

    if (be->kind != NC_MF_KIND_CNN) {
        fprintf(stderr, "neocog-train eval: --ensemble needs a CNN --model\n");
        err = -EINVAL;
        goto out;
    }
    if ((err = train_open_model_on("neocog-train eval", ens_path, gpu, &neo, NULL, NULL)))
        goto out;
    if (neo->kind != NC_MF_KIND_NEOCOG || neo->info.n_classes != K) {
        fprintf(stderr, "neocog-train eval: %s: not a neocognitron with %u classes\n",
                ens_path, K);
        err = -EINVAL;
        goto out;
    }
    raw_neo = malloc((size_t)n * K * sizeof *raw_neo);
    p_neo = malloc((size_t)n * K * sizeof *p_neo);
    ok_neo = malloc(n);
    op_neo = malloc(n);
    if (!raw_neo || !p_neo || !ok_neo || !op_neo) {
        err = -ENOMEM;
        goto out;
    }
    train_scores sn = { neo, ds, first, n, threads, raw_neo, ok_neo, 0.0, NULL,
                        gpu >= 0 ? TRAIN_GPU_BATCH : 0 };
    if ((err = train_scores_run(&sn)))
        goto out;
    train_calibrated(&neo->calib, NC_MF_KIND_NEOCOG, K, raw_neo, ok_neo, n, ans, conf, p_neo,
                     op_neo);
    const uint32_t neo_errors = train_count_errors(ans, lab, n);
    nc_ens_rule rule;
    int which = nc_backend_ensemble_rule(be, neo, &rule);
    printf("\nensemble    with %s (%s neocognitron rule; error alone %.2f%%, %.1f digits/s)\n",
           ens_path, neo->calib.fitted ? "its fitted" : "the plain", 100.0 * neo_errors / n,
           n / sn.seconds);
    if (which == 0)
        printf("            stored rule: w_cnn %.4f, fitted on %.0f validation digits\n",
               rule.w_cnn, rule.n_valid);
    else if (which == -ESTALE)
        printf("            the CNN file's rule was fitted with another neocognitron file "
               "(CRC %08x, %llu bytes; this one %08x, %llu bytes): the plain mean\n",
               be->ens.partner.crc, (unsigned long long)be->ens.partner.len, neo->fp.crc,
               (unsigned long long)neo->fp.len);
    else
        printf("            no stored rule: the plain mean\n");
    train_ensembled(&rule, p_cnn, op_cnn, p_neo, op_neo, n, K, ans, conf);
    const uint32_t e = train_count_errors(ans, lab, n);
    printf("ensemble    error %.2f%% (%u / %u)\n", 100.0 * e / n, e, n);
    if ((err = train_report_rejection("ensemble   ", ans, conf, lab, n)))
        goto out;
    if (rule.fitted)
        train_report_threshold("ensemble   ", rule.reject_threshold, ans, conf, lab, n);
out:
    nc_backend_close(neo);
    free(ans);
    free(conf);
    free(p_cnn);
    free(op_cnn);
    free(raw_neo);
    free(p_neo);
    free(ok_neo);
    free(op_neo);
    return err;
}

#define MAX_HEIGHTS NC_PREP_MAX_VIEWS

/* The backend's scores over the digits, each prepared at every height in
 * h[0..nh) (the file's box) and averaged; nh 0: as the file says. */
static int scores_at_heights(const nc_backend *be, const nc_dataset *ds, uint32_t first,
                             uint32_t count, uint32_t threads, uint32_t batch,
                             const uint32_t *h, uint32_t nh, float *raw, uint8_t *ok,
                             double *ret_secs)
{
    const uint32_t K = be->info.n_classes;
    train_scores sc = { be, ds, first, count, threads, raw, ok, 0.0, NULL, batch };
    if (nh == 0) {
        int err = train_scores_run(&sc);
        *ret_secs = sc.seconds;
        return err;
    }
    float *r1 = malloc((size_t)count * K * sizeof(float));
    uint8_t *ok1 = malloc(count);
    int err = r1 && ok1 ? 0 : -ENOMEM;
    memset(raw, 0, (size_t)count * K * sizeof(float));
    memset(ok, 1, count);
    *ret_secs = 0.0;
    for (uint32_t j = 0; !err && j < nh; j++) {
        nc_prep p = be->info.prep;
        p.box = h[j];
        if ((err = nc_prep_check(&p)))
            break;
        sc.raw = r1;
        sc.ok = ok1;
        sc.prep = &p;
        if ((err = train_scores_run(&sc)))
            break;
        *ret_secs += sc.seconds;
        for (size_t i = 0; i < (size_t)count * K; i++)
            raw[i] += r1[i] / (float)nh;
        for (uint32_t i = 0; i < count; i++)
            ok[i] &= ok1[i];
    }
    free(r1);
    free(ok1);
    return err;
}

/* raw[n] as little-endian float32, written atomically */
static int save_scores(const char *path, const float *raw, size_t n)
{
    uint8_t *b = malloc(n * 4 + 1);
    if (!b)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, raw + i, 4);
        for (int k = 0; k < 4; k++)
            b[i * 4 + k] = (uint8_t)(u >> (8 * k));
    }
    int err = nc_file_write_atomic(path, b, n * 4);
    free(b);
    if (err)
        fprintf(stderr, "neocog-train eval: %s: %s\n", path, nc_strerror(err));
    return err;
}

int train_eval_main(int argc, char **argv, const train_cmdline *cmd)
{
    (void)cmd;
    nc_opts p = { .prog = "neocog-train eval", .usage = usage_text, .table = table };
    const char *model = NULL, *data = NULL, *set = "t10k", *sheet = NULL, *ensemble = NULL;
    const char *save = NULL, *idx = NULL;
    uint32_t first = 0, count = 0, sheet_max = 100, threads = 1, gpu_u = 0;
    int gpu = -1;
    int max_resp = 0;
    uint32_t heights[MAX_HEIGHTS], n_heights = 0;
    for (int c; (c = nc_opts_next(&p, argc, argv)) != NC_OPTS_END;) {
        const char *v = p.value;
        int err = 0;
        switch (c) {
        case NC_OPTS_HELP: nc_opts_usage(&p, stdout); return TRAIN_EXIT_OK;
        case NC_OPTS_ERROR: return train_opts_fail(&p, NULL);
        case O_MODEL: model = v; break;
        case O_DATA: data = v; break;
        case O_SET: set = v; err = strcmp(set, "t10k") && strcmp(set, "train"); break;
        case O_SHEET: sheet = v; break;
        case O_FIRST: err = train_parse_u32(v, &first); break;
        case O_COUNT: err = train_parse_u32(v, &count); break;
        case O_SHEET_MAX: err = train_parse_u32(v, &sheet_max); break;
        case O_THREADS: err = nc_opts_u32(v, 1, 64, &threads); break;
        case O_MAX_RESPONSE: max_resp = 1; break;
        case O_ENSEMBLE: ensemble = v; break;
        case O_HEIGHTS: err = train_parse_heights(v, heights, MAX_HEIGHTS, &n_heights); break;
        case O_GPU: err = nc_opts_u32(v, 0, 64, &gpu_u); gpu = (int)gpu_u; break;
        case O_SAVE_SCORES: save = v; break;
        case O_IDX: idx = v; break;
        }
        if (err)
            return train_opts_bad(&p, c, c == O_SET ? "(t10k or train)" : NULL);
    }
    if (!model || p.next < argc)
        return train_opts_fail(&p, "need --model FILE (and no operands)");
    const char *dir = NULL;
    if (!idx && !(dir = train_need_data_dir("neocog-train eval", data)))
        return TRAIN_EXIT_USAGE;

    int status = TRAIN_EXIT_FAIL, err;
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_mf_reader *rd = NULL;
    nc_dataset ds = { 0 };
    nc_model_info info;
    nc_neocog *neo = NULL;
    nc_backend *be = NULL;
    int32_t *ans = NULL, *ans2 = NULL;
    float *conf = NULL, *conf2 = NULL, *raw = NULL;
    uint8_t *ok = NULL;
    conf_idx *ci = NULL;
    uint32_t *worst = NULL;
    int32_t *worst_ans = NULL;
    uint32_t iv_t = 0;

    if ((err = nc_file_read_model(model, MODEL_MAX_BYTES, &buf, &len)) ||
        (err = nc_mf_open(buf, len, &rd))) {
        fprintf(stderr, "neocog-train eval: %s: %s\n", model, nc_strerror(err));
        goto out;
    }
    const uint32_t kind = nc_mf_kind_of(rd);
    train_classes classes;
    train_classes_digits(&classes);
    if (idx ? train_load_idx_set("neocog-train eval", idx, &ds, &classes)
            : train_load_mnist(dir, set, &ds))
        goto out;
    if (first >= ds.count) {
        fprintf(stderr, "neocog-train eval: --first %u: the set has %u digits\n", first,
                ds.count);
        goto out;
    }
    if (count == 0 || count > ds.count - first)
        count = ds.count - first;
    ans = malloc(count * sizeof(int32_t));
    ans2 = malloc(count * sizeof(int32_t));
    conf = malloc(count * sizeof(float));
    conf2 = malloc(count * sizeof(float));
    ci = malloc(count * sizeof(conf_idx));
    if (!ans || !ans2 || !conf || !conf2 || !ci) {
        err = -ENOMEM;
        goto fail;
    }
    uint32_t n_classes;
    double secs;
    const char *rule;
    if (gpu >= 0 && (max_resp || !NC_HAVE_CUDA)) {
        fprintf(stderr, "neocog-train eval: --gpu needs a CUDA build, without "
                "--max-response\n");
        goto out;
    }
    if (save && max_resp) {
        fprintf(stderr, "neocog-train eval: --save-scores saves the engine's scores: not "
                "with --max-response\n");
        goto out;
    }
    if (n_heights && max_resp) {
        fprintf(stderr, "neocog-train eval: --heights goes through the engines: not with "
                "--max-response\n");
        goto out;
    }
    if (kind == NC_MF_KIND_NEOCOG && max_resp &&
        nc_mf_get(rd, NC_NEOCOG_TAG_NMEM, NULL, NULL, NULL) == 0) {
        fprintf(stderr, "neocog-train eval: --max-response takes a one-network file, not a "
                "committee\n");
        goto out;
    }
    if (kind == NC_MF_KIND_NEOCOG && max_resp) {
        if ((err = nc_neocog_load(buf, len, &neo, &info)))
            goto fail;
        /* neo_worker sizes each input by the stored preprocessing and the
         * forward pass reads in_size^2 floats from it: a file whose prep
         * disagrees with its network would overrun that buffer (the other
         * path goes through nc_backend_open, which checks this). */
        if (info.prep.n_views) {
            fprintf(stderr, "neocog-train eval: --max-response takes a file without views "
                    "(several heights of each digit)\n");
            goto out;
        }
        if (nc_prep_check(&info.prep) ||
            nc_prep_out_len(&info.prep) != (size_t)neo->arch.in_size * neo->arch.in_size) {
            err = -EBADMSG;
            goto fail;
        }
        train_neo_run run = { .net = neo, .iv = NULL, .d = &ds, .first = first, .count = count,
                              .prep = info.prep, .threads = threads,
                              .answer = ans, .conf = conf };
        if ((err = train_neo_evaluate(&run)))
            goto fail;
        secs = run.seconds;
        n_classes = neo->arch.n_classes;
        rule = "max response";
        fprintf(stderr, "neocognitron: planes %u/%u/%u/%u, theta %.2f/%.2f/%.2f/%.2f\n",
                neo->n_planes[0], neo->n_planes[1], neo->n_planes[2], neo->n_planes[3],
                (double)neo->arch.stage[0].theta, (double)neo->arch.stage[1].theta,
                (double)neo->arch.stage[2].theta, (double)neo->arch.stage[3].theta);
    } else {
        const nc_backend_ops *ops = &nc_backend_cpu;
#if NC_HAVE_CUDA
        if (gpu >= 0)
            ops = &nc_backend_gpu;
#endif
        if ((err = nc_backend_open(ops, buf, len, gpu < 0 ? 0 : gpu, &be))) {
            const char *why = err == -EBADMSG ? nc_neocog_committee_why(buf, len) : NULL;
            if (why)
                fprintf(stderr, "neocog-train eval: %s: %s\n", model, why);
#if NC_HAVE_CUDA
            if (gpu >= 0)
                fprintf(stderr, "neocog-train eval: GPU %d: %s\n", gpu,
                        nc_backend_gpu_last_error());
#endif
            goto fail;
        }
        info = be->info;
        n_classes = info.n_classes;
        if (n_heights && info.prep.n_views) {
            fprintf(stderr, "neocog-train eval: %s prepares each digit at heights of its own "
                    "(views): --heights takes a file without\n", model);
            goto out;
        }
        raw = malloc((size_t)count * n_classes * sizeof(float));
        ok = malloc(count);
        if (!raw || !ok) {
            err = -ENOMEM;
            goto fail;
        }
        if ((err = scores_at_heights(be, &ds, first, count, threads, gpu >= 0 ? TRAIN_GPU_BATCH : 0,
                                     heights, n_heights, raw, ok, &secs)))
            goto fail;
        if (save && (err = save_scores(save, raw, (size_t)count * n_classes)))
            goto fail;
        for (uint32_t i = 0; i < count; i++) {
            const float *r = raw + (size_t)i * n_classes;
            float p[NC_MF_MAX_CLASSES];
            ans[i] = nc_backend_label(be->kind, r, n_classes);
            if (ans[i] < 0) {
                conf[i] = -1.0f;
            } else if (kind == NC_MF_KIND_CNN) {
                nc_backend_calibrate(be->kind, r, n_classes, p);
                conf[i] = train_margin(p, n_classes);
            } else {
                conf[i] = train_margin(r, n_classes);
            }
        }
        uint32_t n_mem = 0;
        if (kind == NC_MF_KIND_NEOCOG && nc_mf_get_u32(rd, NC_NEOCOG_TAG_NMEM, &n_mem, 1) == 0)
            rule = "the mean of its members' scores (each by its own mark)";
        else if (kind == NC_MF_KIND_NEOCOG)
            rule = nc_mf_get_u32(rd, TRAIN_TAG_IV, &iv_t, 1) == 0 ? "interpolating vectors"
                                                                  : "max response";
        else
            rule = "largest output";
    }

    if (train_classes_match("neocog-train eval", &classes, &info))
        goto out;

    /* ---- the numbers ---- */
    /* IDX labels may be any byte (dataset.h: checking them is the caller's
     * job).  One outside the model's classes would make the error count
     * (taken modulo the class cap below) disagree with the --sheet pass,
     * which compares raw labels and could then write past worst[errors]. */
    for (uint32_t i = 0; i < count; i++)
        if (ds.labels[first + i] >= n_classes) {
            fprintf(stderr, "neocog-train eval: label of digit %u is %u, the model has "
                    "%u classes\n", first + i, ds.labels[first + i], n_classes);
            err = -EBADMSG;
            goto fail;
        }
    uint32_t conf_m[NC_MF_MAX_CLASSES][NC_MF_MAX_CLASSES + 1];
    uint32_t per[NC_MF_MAX_CLASSES] = { 0 }, per_err[NC_MF_MAX_CLASSES] = { 0 }, errors = 0;
    memset(conf_m, 0, sizeof(conf_m));
    for (uint32_t i = 0; i < count; i++) {
        uint32_t t = ds.labels[first + i] % NC_MF_MAX_CLASSES;
        int32_t a = ans[i];
        per[t]++;
        conf_m[t][a < 0 ? n_classes : (uint32_t)a]++;
        if (a != (int32_t)t) {
            per_err[t]++;
            errors++;
        }
        ci[i] = (conf_idx){ conf[i], i };
    }
    printf("model       %s (%s, answer by %s)\n", model,
           kind == NC_MF_KIND_NEOCOG ? "neocognitron" : kind == NC_MF_KIND_CNN ? "CNN" : "?",
           rule);
    if (info.test_error < 0)
        printf("recorded    test error unknown\n");
    else
        printf("recorded    test error %.2f%% on %s\n", 100.0 * info.test_error,
               info.test_set[0] ? info.test_set : "-");
    printf("command     %s\n", info.command);
    if (idx)
        printf("data        %s %u-%u (%u images, %u classes)\n", idx, first, first + count - 1,
               count, classes.n);
    else
        printf("data        MNIST %s %u-%u (%u digits)\n", set, first, first + count - 1, count);
    if (info.prep.n_views)                      /* the file's own views */
        train_print_views(&info.prep, kind);
    if (n_heights) {
        printf("heights     ");
        for (uint32_t j = 0; j < n_heights; j++)
            printf("%s%u", j ? "/" : "", heights[j]);
        printf(" px (scores averaged over these preparations of each digit)\n");
    }
    printf("error       %.2f%% (%u / %u)\n", 100.0 * errors / count, errors, count);
    uint32_t n_cols = 1;
    if (kind == NC_MF_KIND_CNN && nc_mf_get_u32(rd, NC_CNN_TAG_NCOL, &n_cols, 1) == 0)
        printf("committee   %u columns, answer by their mean\n", n_cols);
    if (kind == NC_MF_KIND_NEOCOG && nc_mf_get_u32(rd, NC_NEOCOG_TAG_NMEM, &n_cols, 1) == 0)
        printf("committee   %u neocognitrons, answer by the mean of their scores\n", n_cols);
    nc_neocog_cascade cas;
    if (kind == NC_MF_KIND_NEOCOG && n_cols > 1 &&
        nc_neocog_cascade_read(rd, n_cols, &cas, NULL) == 0 && cas.on) {
        if (cas.view_on)
            printf("cascade     view %u of member %u alone where its confidence >= %.6f "
                   "(beta %.6g), then\n", cas.view, cas.first, cas.view_threshold,
                   cas.view_beta);
        printf("cascade     member %u (0-based) first, alone where its confidence >= %.6f "
               "(beta %.6g), else all %u (the answers above are the cascade's)\n", cas.first,
               cas.threshold, cas.beta, n_cols);
    }
    printf("throughput  %.1f digits/s (%u thread%s, preprocessing included)\n",
           count / secs, threads, threads > 1 ? "s" : "");
    qsort(ci, count, sizeof(conf_idx), by_conf_asc);
    static const double rej[3] = { 0.005, 0.01, 0.02 };
    for (int r = 0; r < 3; r++) {
        uint32_t n_rej = (uint32_t)(rej[r] * count + 0.5), e = 0;
        for (uint32_t j = n_rej; j < count; j++) {
            uint32_t i = ci[j].i;
            e += ans[i] != (int32_t)ds.labels[first + i];
        }
        printf("reject %.1f%% (%u least confident): error %.2f%% (%u / %u accepted)\n",
               100.0 * rej[r], n_rej, count > n_rej ? 100.0 * e / (count - n_rej) : 0.0,
               e, count - n_rej);
    }
    if (be && (err = report_calibrated(be, rd, raw, ok, ds.labels + first, count, threads,
                                       ensemble, &ds, first, gpu)))
        goto fail;
    if (n_classes > 10 && raw && (err = train_report_chars(&info, ds.labels + first, ans, raw,
                                                           count)))
        goto fail;
    printf("\nper class  samples  errors   error\n");
    for (uint32_t t = 0; t < n_classes; t++)
        printf("  %-8s %7u %7u  %5.2f%%\n", info.labels[t], per[t], per_err[t],
               per[t] ? 100.0 * per_err[t] / per[t] : 0.0);
    if (n_classes > 16)                 /* the report's confusions instead */
        goto sheet;
    printf("\nconfusion (rows: true, columns: answer, last: rejected)\n      ");
    for (uint32_t a = 0; a < n_classes; a++)
        printf("%6s", info.labels[a]);
    printf("   rej\n");
    for (uint32_t t = 0; t < n_classes; t++) {
        printf("  %-4s", info.labels[t]);
        for (uint32_t a = 0; a <= n_classes; a++)
            printf("%6u", conf_m[t][a]);
        printf("\n");
    }

sheet:
    if (sheet) {
        /* the worst: wrong answers given with the highest confidence */
        worst = malloc((errors ? errors : 1) * sizeof(uint32_t));
        worst_ans = malloc((errors ? errors : 1) * sizeof(int32_t));
        if (!worst || !worst_ans) {
            err = -ENOMEM;
            goto fail;
        }
        uint32_t n = 0;
        for (uint32_t j = count; j-- > 0 && n < sheet_max;) {
            uint32_t i = ci[j].i;
            if (ans[i] != (int32_t)ds.labels[first + i]) {
                worst[n] = first + i;
                worst_ans[n++] = ans[i];
            }
        }
        if ((err = write_sheet(sheet, &ds, &info, worst, worst_ans, n))) {
            fprintf(stderr, "neocog-train eval: writing %s: %s\n", sheet, nc_strerror(err));
            goto out;
        }
        printf("\nsheet       %s: %u most confident errors (green: true, red: answer)\n",
               sheet, n);
        for (uint32_t t = 0; t < n && t < 20; t++)
            printf("  #%u true %s answer %s\n", worst[t], info.labels[ds.labels[worst[t]]],
                   worst_ans[t] < 0 ? "-" : info.labels[worst_ans[t]]);
    }
    status = TRAIN_EXIT_OK;
    goto out;
fail:
    fprintf(stderr, "neocog-train eval: %s\n", nc_strerror(err));
out:
    free(worst);
    free(worst_ans);
    free(ci);
    free(raw);
    free(ok);
    free(ans);
    free(ans2);
    free(conf);
    free(conf2);
    nc_backend_close(be);
    nc_neocog_free(neo);
    nc_mf_close(rd);
    nc_dataset_fini(&ds);
    free(buf);
    return status;
}

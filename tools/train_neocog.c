/* tools/train_neocog.c — `neocog-train neocognitron`: train Fukushima's
 * digit neocognitron stage by stage (shared/docs/neocognitron-spec.md,
 * "Training") on MNIST and write it as a model file.
 *
 * Layer: tools.  core/neocog/neocog_learn.c does the learning maths one pattern at
 * a time; this file owns the data split, the pattern lists, passes,
 * progress, checkpoints, the choices made on validation data and the
 * provenance.
 *
 * Procedure:
 *  - Data: training digits 0 .. 60000-V-1 train, the last V (--validation,
 *    default 10000) validate.  The 10000 test digits are read once, after
 *    every choice is made, to measure the result.
 *  - Input: nc_prep_apply with NC_PREP_NEOCOG_65 and digit height --height,
 *    sheared upright first with --deskew (--deskew-gentle: at most half a
 *    pixel a row; the prep is stored in the model file, so every reader of
 *    the model does the same).
 *  - US1: the 16 edge orientations (nc_neocog_train_us1, q = 100).
 *  - US2, US3: unsupervised with plane creation (or --add-if-silent) on a
 *    class-balanced list of --train-digits digits, --passes times.
 *  - US4: supervised on its own (longer) class-balanced list, in batches of
 *    US4_BATCH_PER_THREAD x --threads digits through
 *    nc_neocog_learn_sup_batch: the frozen lower stages of a batch run side
 *    by side on the pool (train_pool.c), then the batch learns in order
 *    with each digit's US4 responses split over the threads by plane ranges.
 *    Bit-for-bit the same network for every --threads.  With --deform-us4
 *    F, US4's passes after the first see every digit freshly deformed by
 *    core/data/deform (NC_DEFORM_MNIST times F), each digit's draw from a stream
 *    hashed from --seed, the pass and its place in the list.
 *  - The class-balanced lists come from one permutation of the training
 *    part drawn from --seed (splitmix64): classes are interleaved 0,1,..,9,
 *    0,1,.. in that order, so every prefix is balanced and each stage takes
 *    a prefix.  Nothing else is random but the deformations above.
 *  - Validation chooses the recognition theta of US4 among --theta4-try and,
 *    with --interp, between the max-response answer and the interpolating-
 *    vector classifier.  Lower stages' theta, theta_L and H are chosen by
 *    comparing runs on validation (models/README.md records them).
 *  - --checkpoint FILE is rewritten after every stage; --resume skips the
 *    stages it holds. */
#include "train_common.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deform.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "neocog.h"
#include "train_pool.h"

#define MNIST_TRAIN 60000u
#define MAX_TRY 16
#define CKPT_MAX_BYTES ((size_t)1 << 31)

#define TAG_CK_CONF NC_MF_TAG('C', 'K', 'C', 'F')  /* text: options that must match */
#define TAG_CK_DONE NC_MF_TAG('C', 'K', 'D', 'N')  /* u32: stages done */
#define TAG_CK_PLN  NC_MF_TAG('C', 'K', 'P', 'L')  /* u32: planes per stage */
#define TAG_CK_A(l) NC_MF_TAG('C', 'K', 'A', '1' + (l))  /* f32: a, net layout */
#define TAG_CK_B(l) NC_MF_TAG('C', 'K', 'B', '1' + (l))  /* f32: b */
#define TAG_CK_LOG  NC_MF_TAG('C', 'K', 'L', 'G')  /* f64: per stage secs, digits */
#define TAG_CK_NET  NC_MF_TAG('C', 'K', 'N', 'T')  /* bytes: whole model (all done) */

typedef struct options {
    const char *data, *out, *checkpoint;
    uint32_t digits[NC_NEOCOG_MAX_STAGES];     /* per stage (index 1..3) */
    uint32_t passes[NC_NEOCOG_MAX_STAGES];
    uint32_t k_max[NC_NEOCOG_MAX_STAGES];
    float theta[NC_NEOCOG_MAX_STAGES];         /* recognition */
    float theta_l[NC_NEOCOG_MAX_STAGES];
    float q;
    uint32_t height;
    uint32_t validation, valid_eval;
    float theta4_try[MAX_TRY];
    uint32_t n_theta4_try;
    int interp, add_if_silent, resume, no_test, deskew;
    float deform_us4;       /* 0: off; else NC_DEFORM_MNIST's strength times this */
    uint32_t top_t;
    uint64_t seed;
    uint32_t threads;
} options;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: neocog-train neocognitron --out FILE [OPTIONS]\n"
        "\n"
        "Train the neocognitron stage by stage on MNIST: US1 from edges, US2/US3\n"
        "unsupervised with plane creation, US4 supervised; choices made on the\n"
        "validation split; test error measured once and stored in the model.\n"
        "\n"
        "  --data DIR            folder with the 4 MNIST files (default $NC_MNIST_DIR)\n"
        "  --out FILE            model file to write (required)\n"
        "  --train-digits N|A,B,C  class-balanced digits for US2,US3,US4 (400,400,3000)\n"
        "  --passes N|A,B,C      passes over them (1,1,1)\n"
        "  --theta-l A,B,C       learning thresholds of US2,US3,US4 (0.80,0.80,0.70)\n"
        "  --theta A,B,C         recognition thresholds of US2,US3,US4 (0.51,0.58,0.30)\n"
        "  --theta4-try A,B,..   US4 recognition thresholds to choose from on\n"
        "                        validation (default: the --theta one)\n"
        "  --q F                 reinforcement gain for US2..US4 (0.5)\n"
        "  --k-max A,B,C         plane caps of US2,US3,US4 (200,300,4000)\n"
        "  --height H            digit height of the 65x65 input (40)\n"
        "  --add-if-silent       US2/US3 learn by add-if-silent\n"
        "  --deskew              shear each digit upright before scaling (stored in the prep)\n"
        "  --deskew-gentle       the same, at most half a pixel a row\n"
        "  --deform-us4 F        US4 passes after the first see every digit freshly deformed\n"
        "                        (core/data/deform, NC_DEFORM_MNIST times F; 0, the default, off)\n"
        "  --interp              let validation choose the interpolating-vector\n"
        "                        classifier over the max-response answer\n"
        "  --top-t N             planes per class the IV classifier pairs (8)\n"
        "  --validation N        hold out the last N training digits (10000)\n"
        "  --valid-eval N        measure only the first N of them (all)\n"
        "  --seed N              order of the training digits (1)\n"
        "  --threads N           threads for US4 learning, validation and test (1);\n"
        "                        the network learnt is the same for every N\n"
        "  --checkpoint FILE     rewrite FILE after every stage\n"
        "  --resume              skip the stages --checkpoint holds\n"
        "  --no-test             do not measure on the test set (tuning runs)\n"
        "  -h, --help            this text\n");
}

/* "A" or "A,B,C" into v[1..3]. */
static int parse_u32_list3(const char *s, uint32_t *v)
{
    char buf[256];
    uint32_t t[3];
    int n = 0;
    snprintf(buf, sizeof(buf), "%s", s);
    for (char *save = NULL, *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (n == 3 || train_parse_u32(p, &t[n]))
            return -EINVAL;
        n++;
    }
    if (n != 1 && n != 3)
        return -EINVAL;
    for (int i = 0; i < 3; i++)
        v[1 + i] = t[n == 1 ? 0 : i];
    return 0;
}

static int parse_f_list(const char *s, float *v, uint32_t max, uint32_t *ret_n)
{
    char buf[256];
    uint32_t n = 0;
    snprintf(buf, sizeof(buf), "%s", s);
    for (char *save = NULL, *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (n == max || train_parse_float(p, &v[n]))
            return -EINVAL;
        n++;
    }
    *ret_n = n;
    return n ? 0 : -EINVAL;
}

static int parse_f_list3(const char *s, float *v)
{
    float t[3];
    uint32_t n;
    if (parse_f_list(s, t, 3, &n) || n != 3)
        return -EINVAL;
    for (int i = 0; i < 3; i++)
        v[1 + i] = t[i];
    return 0;
}

static int parse_options(int argc, char **argv, options *o)
{
    enum { O_DATA = 256, O_OUT, O_DIGITS, O_PASSES, O_THL, O_TH, O_TH4, O_Q, O_KMAX,
           O_H, O_AIS, O_DSK, O_DSKG, O_DEF4, O_IV, O_TOPT, O_VALID, O_VEVAL, O_SEED, O_THREADS,
           O_CKPT, O_RESUME, O_NOTEST };
    static const struct option longopts[] = {
        { "data", required_argument, NULL, O_DATA },
        { "out", required_argument, NULL, O_OUT },
        { "train-digits", required_argument, NULL, O_DIGITS },
        { "passes", required_argument, NULL, O_PASSES },
        { "theta-l", required_argument, NULL, O_THL },
        { "theta", required_argument, NULL, O_TH },
        { "theta4-try", required_argument, NULL, O_TH4 },
        { "q", required_argument, NULL, O_Q },
        { "k-max", required_argument, NULL, O_KMAX },
        { "height", required_argument, NULL, O_H },
        { "add-if-silent", no_argument, NULL, O_AIS },
        { "deskew", no_argument, NULL, O_DSK },
        { "deskew-gentle", no_argument, NULL, O_DSKG },
        { "deform-us4", required_argument, NULL, O_DEF4 },
        { "interp", no_argument, NULL, O_IV },
        { "top-t", required_argument, NULL, O_TOPT },
        { "validation", required_argument, NULL, O_VALID },
        { "valid-eval", required_argument, NULL, O_VEVAL },
        { "seed", required_argument, NULL, O_SEED },
        { "threads", required_argument, NULL, O_THREADS },
        { "checkpoint", required_argument, NULL, O_CKPT },
        { "resume", no_argument, NULL, O_RESUME },
        { "no-test", no_argument, NULL, O_NOTEST },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *o = (options){
        .digits = { 0, 400, 400, 3000 }, .passes = { 0, 1, 1, 1 },
        .k_max = { 16, 200, 300, 4000 },
        .theta = { 0.55f, 0.51f, 0.58f, 0.30f }, .theta_l = { 0.0f, 0.80f, 0.80f, 0.70f },
        .q = 0.5f, .height = 40, .validation = 10000, .top_t = 8, .seed = 1, .threads = 1,
    };
    int c, bad = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        const char *name = NULL;
        int err = 0;
        switch (c) {
        case O_DATA: o->data = optarg; break;
        case O_OUT: o->out = optarg; break;
        case O_CKPT: o->checkpoint = optarg; break;
        case O_DIGITS: name = "--train-digits"; err = parse_u32_list3(optarg, o->digits); break;
        case O_PASSES: name = "--passes"; err = parse_u32_list3(optarg, o->passes); break;
        case O_KMAX: name = "--k-max"; err = parse_u32_list3(optarg, o->k_max); break;
        case O_THL: name = "--theta-l"; err = parse_f_list3(optarg, o->theta_l); break;
        case O_TH: name = "--theta"; err = parse_f_list3(optarg, o->theta); break;
        case O_TH4: name = "--theta4-try";
            err = parse_f_list(optarg, o->theta4_try, MAX_TRY, &o->n_theta4_try); break;
        case O_Q: name = "--q"; err = train_parse_float(optarg, &o->q); break;
        case O_H: name = "--height"; err = train_parse_u32(optarg, &o->height); break;
        case O_AIS: o->add_if_silent = 1; break;
        case O_DSK: o->deskew = 1; break;
        case O_DSKG: o->deskew = (int)NC_PREP_DESKEW_GENTLE; break;
        case O_DEF4:
            name = "--deform-us4";
            err = train_parse_float(optarg, &o->deform_us4);
            break;
        case O_IV: o->interp = 1; break;
        case O_TOPT: name = "--top-t"; err = train_parse_u32(optarg, &o->top_t); break;
        case O_VALID: name = "--validation"; err = train_parse_u32(optarg, &o->validation); break;
        case O_VEVAL: name = "--valid-eval"; err = train_parse_u32(optarg, &o->valid_eval); break;
        case O_SEED: name = "--seed"; err = train_parse_u64(optarg, &o->seed); break;
        case O_THREADS: name = "--threads"; err = train_parse_u32(optarg, &o->threads); break;
        case O_RESUME: o->resume = 1; break;
        case O_NOTEST: o->no_test = 1; break;
        case 'h': usage(stdout); return 1;
        default: return -EINVAL;
        }
        if (err) {
            fprintf(stderr, "neocog-train neocognitron: %s: not a valid value: '%s'\n",
                    name, optarg);
            bad = 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "neocog-train neocognitron: unexpected argument '%s'\n", argv[optind]);
        bad = 1;
    }
    if (!bad && !o->out) {
        fprintf(stderr, "neocog-train neocognitron: --out FILE is required\n");
        bad = 1;
    }
    if (!bad && o->n_theta4_try == 0) {
        o->theta4_try[0] = o->theta[3];
        o->n_theta4_try = 1;
    }
    for (int l = 1; !bad && l < 4; l++)
        if (!(o->theta[l] > 0.0f && o->theta[l] < 1.0f) ||
            !(o->theta_l[l] > 0.0f && o->theta_l[l] < 1.0f) || o->digits[l] == 0 ||
            o->passes[l] == 0 || o->k_max[l] == 0 || o->k_max[l] > NC_NEOCOG_MAX_PLANES) {
            fprintf(stderr, "neocog-train neocognitron: thresholds must be in (0, 1), "
                    "digits, passes and k-max >= 1 (k-max <= %u)\n", NC_NEOCOG_MAX_PLANES);
            bad = 1;
        }
    for (uint32_t i = 0; !bad && i < o->n_theta4_try; i++)
        if (!(o->theta4_try[i] > 0.0f && o->theta4_try[i] < 1.0f)) {
            fprintf(stderr, "neocog-train neocognitron: --theta4-try values must be in (0, 1)\n");
            bad = 1;
        }
    if (!bad && (o->height < 8 || o->height > 61)) {
        fprintf(stderr, "neocog-train neocognitron: --height must be 8..61\n");
        bad = 1;
    }
    if (!bad) {
        const nc_deform_params dp = nc_deform_params_scaled(&NC_DEFORM_MNIST, o->deform_us4);
        if (!(o->deform_us4 >= 0.0f) || nc_deform_params_check(&dp)) {
            fprintf(stderr, "neocog-train neocognitron: --deform-us4 must be >= 0 and give "
                    "valid deformations\n");
            bad = 1;
        }
    }
    if (!bad && !(o->q > 0.0f)) {
        fprintf(stderr, "neocog-train neocognitron: --q must be > 0\n");
        bad = 1;
    }
    if (!bad && (o->validation >= MNIST_TRAIN || o->threads == 0 || o->threads > 256 ||
                 o->top_t < 1 || o->top_t > 256)) {
        fprintf(stderr, "neocog-train neocognitron: bad --validation, --threads or --top-t\n");
        bad = 1;
    }
    if (!bad && o->resume && !o->checkpoint) {
        fprintf(stderr, "neocog-train neocognitron: --resume needs --checkpoint FILE\n");
        bad = 1;
    }
    if (!bad && !train_need_data_dir("neocog-train neocognitron", o->data))
        bad = 1;
    return bad ? -EINVAL : 0;
}

/* ---- the pattern list ------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Training digits [0, n_train) permuted from seed, then interleaved by class
 * (0,1,...,9,0,1,...) so that every prefix is class-balanced; classes that
 * run out drop out of the rotation.  Returns the list's length. */
static uint32_t balanced_order(const nc_dataset *d, uint32_t n_train, uint64_t seed,
                               uint32_t *out)
{
    uint32_t *perm = malloc((size_t)n_train * sizeof(uint32_t));
    uint32_t *by = malloc((size_t)n_train * sizeof(uint32_t));
    uint32_t cnt[10] = { 0 }, off[11] = { 0 }, pos[10] = { 0 }, n = 0;
    if (!perm || !by) {
        free(perm);
        free(by);
        return 0;
    }
    uint64_t s = seed ^ 0x243f6a8885a308d3ull;
    for (uint32_t i = 0; i < n_train; i++)
        perm[i] = i;
    for (uint32_t i = n_train - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(splitmix64(&s) % (i + 1));
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (uint32_t i = 0; i < n_train; i++)
        cnt[d->labels[perm[i]]]++;
    for (int c = 0; c < 10; c++)
        off[c + 1] = off[c] + cnt[c];
    for (uint32_t i = 0; i < n_train; i++) {
        uint32_t c = d->labels[perm[i]];
        by[off[c] + pos[c]++] = perm[i];
    }
    memset(pos, 0, sizeof(pos));
    while (n < n_train)
        for (int c = 0; c < 10; c++)
            if (pos[c] < cnt[c])
                out[n++] = by[off[c] + pos[c]++];
    free(perm);
    free(by);
    return n;
}

/* Digit i of d through the prep; with def, first deformed by a draw from
 * rng (the grey values go through floats and back to 8 bits, as a camera's
 * digits would arrive). */
static int prep_digit(const nc_dataset *d, uint32_t i, const nc_prep *p, nc_deform *def,
                      nc_deform_rng *rng, float *dst)
{
    enum { SIDE_MAX = 64 };
    const size_t n = (size_t)d->rows * d->cols;
    nc_image img = { d->cols, d->rows, d->cols, d->pixels + (size_t)i * n };
    uint8_t warped[SIDE_MAX * SIDE_MAX];
    if (def) {
        float in[SIDE_MAX * SIDE_MAX] = { 0 }, out[SIDE_MAX * SIDE_MAX];
        if (d->rows > SIDE_MAX || d->cols > SIDE_MAX)
            return -ERANGE;
        for (size_t k = 0; k < n; k++)
            in[k] = img.pixels[k] / 255.0f;
        int e = nc_deform_apply(def, rng, in, out);
        if (e < 0)
            return e;
        for (size_t k = 0; k < n; k++)
            warped[k] = (uint8_t)lrintf(out[k] * 255.0f);
        img.pixels = warped;
    }
    int r = nc_prep_apply(&img, p, dst);
    if (r == -ENOENT) {         /* no ink: an empty input (MNIST has none) */
        memset(dst, 0, nc_prep_out_len(p) * sizeof(float));
        r = 0;
    }
    return r;
}

/* ---- checkpoints ----------------------------------------------------------- */

static void config_string(const options *o, char *dst, size_t cap)
{
    /* options added later appear only when set, so older checkpoints match */
    char deform[32] = "";
    if (o->deform_us4 > 0.0f)
        snprintf(deform, sizeof(deform), " deform4=%.6g", (double)o->deform_us4);
    snprintf(dst, cap, "digits=%u,%u,%u passes=%u,%u,%u kmax=%u,%u,%u theta=%.6g,%.6g,%.6g "
             "theta_l=%.6g,%.6g,%.6g q=%.6g height=%u ais=%d validation=%u seed=%llu%s%s",
             o->digits[1], o->digits[2], o->digits[3], o->passes[1], o->passes[2],
             o->passes[3], o->k_max[1], o->k_max[2], o->k_max[3], (double)o->theta[1],
             (double)o->theta[2], (double)o->theta[3], (double)o->theta_l[1],
             (double)o->theta_l[2], (double)o->theta_l[3], (double)o->q, o->height,
             o->add_if_silent, o->validation, (unsigned long long)o->seed,
             o->deskew == (int)NC_PREP_DESKEW_GENTLE ? " deskew-gentle"
             : o->deskew                             ? " deskew"
                                                     : "",
             deform);
}

static size_t a_floats(const nc_neocog *net, uint32_t l)
{
    return (size_t)nc_neocog_k_in(net, l) * net->s_ix[l]->n_live *
           nc_neocog_kstride(net->n_planes[l]);
}

static int write_checkpoint(const options *o, const nc_neocog *net, uint32_t done,
                            const double *log, const nc_model_info *info)
{
    nc_mf_writer *w = NULL;
    uint8_t *buf = NULL, *nb = NULL;
    size_t len = 0, nlen = 0;
    char conf[1024];
    uint32_t d = done;
    config_string(o, conf, sizeof(conf));
    int err = nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w);
    if (!err) err = nc_mf_put_str(w, TAG_CK_CONF, conf);
    if (!err) err = nc_mf_put_u32(w, TAG_CK_DONE, &d, 1);
    if (!err) err = nc_mf_put_u32(w, TAG_CK_PLN, net->n_planes, NC_NEOCOG_MAX_STAGES);
    if (!err) err = nc_mf_put_f64(w, TAG_CK_LOG, log, 2 * NC_NEOCOG_MAX_STAGES);
    if (done == net->arch.n_stages) {
        /* all stages hold planes: the model format says it all, and loading
         * it avoids growing a large US4 plane by plane */
        if (!err) err = nc_neocog_save(net, info, &nb, &nlen);
        if (!err) err = nc_mf_put(w, TAG_CK_NET, NC_MF_TYPE_BYTES, nb, nlen);
    } else {
        for (uint32_t l = 0; !err && l < done; l++) {
            err = nc_mf_put_f32(w, TAG_CK_A(l), net->a[l], a_floats(net, l));
            if (!err)
                err = nc_mf_put_f32(w, TAG_CK_B(l), net->b[l],
                                    nc_neocog_kstride(net->n_planes[l]));
        }
    }
    if (!err) err = nc_mf_finish(w, &buf, &len);
    if (!err) err = nc_file_write_atomic(o->checkpoint, buf, len);
    if (err)
        fprintf(stderr, "neocog-train neocognitron: writing checkpoint %s: %s\n",
                o->checkpoint, nc_strerror(err));
    nc_mf_writer_free(w);
    free(buf);
    free(nb);
    return err;
}

/* Restore the stages a checkpoint holds into the empty net *pnet. */
static int read_checkpoint(const options *o, nc_neocog **pnet, uint32_t *ret_done,
                           double *log)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_mf_reader *r = NULL;
    char conf[1024], want[1024];
    uint32_t done = 0, planes[NC_NEOCOG_MAX_STAGES];
    nc_neocog *net = *pnet;
    config_string(o, want, sizeof(want));
    int err = nc_file_read(o->checkpoint, CKPT_MAX_BYTES, &buf, &len);
    if (!err) err = nc_mf_open(buf, len, &r);
    if (!err) err = nc_mf_get_str(r, TAG_CK_CONF, conf, sizeof(conf));
    if (!err && strcmp(conf, want)) {
        fprintf(stderr, "neocog-train neocognitron: checkpoint %s was written with other "
                "options:\n  checkpoint: %s\n  now:        %s\n", o->checkpoint, conf, want);
        err = -EINVAL;
        goto out;
    }
    if (!err) err = nc_mf_get_u32(r, TAG_CK_DONE, &done, 1);
    if (!err) err = nc_mf_get_u32(r, TAG_CK_PLN, planes, NC_NEOCOG_MAX_STAGES);
    if (!err) err = nc_mf_get_f64(r, TAG_CK_LOG, log, 2 * NC_NEOCOG_MAX_STAGES);
    if (!err && (done == 0 || done > net->arch.n_stages))
        err = -EBADMSG;
    if (!err && done == net->arch.n_stages) {
        const void *p;
        size_t n;
        uint32_t type;
        nc_neocog *got = NULL;
        err = nc_mf_get(r, TAG_CK_NET, &type, &p, &n);
        if (!err && type != NC_MF_TYPE_BYTES)
            err = -EBADMSG;
        if (!err)
            err = nc_neocog_load(p, n, &got, NULL);
        if (!err) {
            /* keep this run's thresholds; the loaded one carries its own */
            for (uint32_t l = 0; l < got->arch.n_stages; l++)
                got->arch.stage[l].theta = net->arch.stage[l].theta;
            nc_neocog_free(net);
            *pnet = net = got;
        }
    } else {
        for (uint32_t l = 0; !err && l < done; l++) {
            for (uint32_t k = 0; !err && k < planes[l]; k++) {
                uint32_t kk;
                err = nc_neocog_add_plane(net, l, 0, &kk);
            }
            if (!err) err = nc_mf_get_f32(r, TAG_CK_A(l), net->a[l], a_floats(net, l));
            if (!err) err = nc_mf_get_f32(r, TAG_CK_B(l), net->b[l],
                                          nc_neocog_kstride(net->n_planes[l]));
        }
    }
    if (!err)
        *ret_done = done;
    if (err)
        fprintf(stderr, "neocog-train neocognitron: reading checkpoint %s: %s\n",
                o->checkpoint, nc_strerror(err));
out:
    nc_mf_close(r);
    free(buf);
    return err;
}

/* ---- one stage ---------------------------------------------------------------- */

/* Digits the last stage learns per nc_neocog_learn_sup_batch call, per
 * thread: their lower stages run side by side first (each holds a US4 input
 * of UC3's 13 x 13 x K3 cells, about 170 KB at K3 = 254). */
#define US4_BATCH_PER_THREAD 16

/* The preprocessing of a batch, spread over the pool like the rest. */
typedef struct prep_job {
    const nc_dataset *d;
    const uint32_t *order;
    const nc_prep *prep;
    const nc_deform_params *deform;     /* NULL: the digits as they are */
    uint64_t deform_seed;               /* digit i of the job draws from seed + i */
    float *imgs;
    size_t cells;
    uint32_t n, parts;
    int err[NC_NEOCOG_MAX_PARTS];
} prep_job;

static void prep_task(void *arg, uint32_t p)
{
    prep_job *j = arg;
    nc_deform *def = NULL;
    j->err[p] = j->deform ? nc_deform_new(j->deform, j->d->cols, j->d->rows, &def) : 0;
    for (uint32_t i = p; i < j->n && !j->err[p]; i += j->parts) {
        /* a stream per digit, so the draws do not depend on the threads */
        nc_deform_rng h = { j->deform_seed + i }, rng = { nc_deform_rng_next(&h) };
        j->err[p] = prep_digit(j->d, j->order[i], j->prep, def, &rng,
                               j->imgs + i * j->cells);
    }
    nc_deform_free(def);
}

static int prep_batch(train_pool *pool, const nc_dataset *d, const uint32_t *order,
                      uint32_t n, const nc_prep *prep, const nc_deform_params *deform,
                      uint64_t deform_seed, float *imgs)
{
    prep_job j = { .d = d, .order = order, .prep = prep, .deform = deform,
                   .deform_seed = deform_seed, .imgs = imgs,
                   .cells = nc_prep_out_len(prep), .n = n,
                   .parts = pool ? train_pool_threads(pool) : 1 };
    if (!pool || train_pool_run(pool, prep_task, &j, j.parts) < 0)
        for (uint32_t p = 0; p < j.parts; p++)
            prep_task(&j, p);
    for (uint32_t p = 0; p < j.parts; p++)
        if (j.err[p])
            return j.err[p];
    return 0;
}

static int train_stage(nc_neocog *net, nc_neocog_learner *lr, uint32_t l,
                       const options *o, const nc_neocog_learn_opts *lo,
                       const nc_dataset *train, const uint32_t *order, uint32_t n_order,
                       const nc_prep *prep, train_pool *pool, double *ret_secs)
{
    const int last = l + 1 == net->arch.n_stages, live = isatty(STDERR_FILENO);
    const uint32_t n = o->digits[l] < n_order ? o->digits[l] : n_order;
    const uint64_t total = (uint64_t)n * o->passes[l];
    /* US4 learns in batches: lower stages of a batch side by side, then the
     * batch in order with each digit's US4 responses split by plane ranges
     * (core/neocog/neocog_learn.c); the network does not depend on the thread count */
    const uint32_t threads = pool ? train_pool_threads(pool) : 1;
    const uint32_t batch = last ? US4_BATCH_PER_THREAD * threads : 1;
    const size_t cells = nc_prep_out_len(prep);
    float *imgs = malloc((size_t)batch * cells * sizeof(float));
    uint32_t *labs = malloc((size_t)batch * sizeof(uint32_t));
    nc_neocog_learn_step *steps = malloc((size_t)batch * sizeof(*steps));
    double t0 = train_now(), last_print = t0;
    uint64_t done = 0;
    int err = imgs && labs && steps ? 0 : -ENOMEM;
    if (!err && last)
        err = nc_neocog_learner_set_runner(lr, threads, pool ? train_pool_run : NULL, pool);
    if (err) {
        fprintf(stderr, "neocog-train neocognitron: stage %u: %s\n", l + 1, nc_strerror(err));
        goto out;
    }
    const nc_deform_params deform = nc_deform_params_scaled(&NC_DEFORM_MNIST, o->deform_us4);
    for (uint32_t pass = 0; pass < o->passes[l]; pass++) {
        uint32_t created = 0, reinforced = 0, wrong = 0, full = 0;
        const uint32_t k_start = net->n_planes[l];
        /* US4 passes after the first, with --deform-us4: fresh deformations,
         * drawn from the seed and the pass */
        const int deformed = last && pass > 0 && o->deform_us4 > 0.0f;
        uint64_t mix = o->seed ^ (0x5eedull << 32) ^ pass;
        const uint64_t pass_seed = splitmix64(&mix);
        for (uint32_t i = 0; i < n;) {
            const uint32_t nb = n - i < batch ? n - i : batch;
            uint32_t got = 0;
            err = prep_batch(last ? pool : NULL, train, order + i, nb, prep,
                             deformed ? &deform : NULL, pass_seed + i, imgs);
            if (!err && last) {
                for (uint32_t b = 0; b < nb; b++)
                    labs[b] = train->labels[order[i + b]];
                err = nc_neocog_learn_sup_batch(net, lr, imgs, labs, nb, lo, steps, &got);
            } else if (!err) {
                err = nc_neocog_learn_unsup(net, lr, l, imgs, lo, &steps[0]);
                got = err ? 0 : 1;
            }
            if (err) {
                fprintf(stderr, "neocog-train neocognitron: stage %u, digit %u: %s\n",
                        l + 1, order[i + (got < nb ? got : 0)], nc_strerror(err));
                goto out;
            }
            for (uint32_t b = 0; b < nb; b++, i++, done++) {
                const nc_neocog_learn_step *step = &steps[b];
                created += step->created;
                reinforced += step->reinforced;
                full += step->at_k_max != 0;
                wrong += last && step->answer != (int32_t)train->labels[order[i]];
            }
            double now = train_now();
            if (now - last_print >= (live ? 1.0 : 15.0) || i == n) {
                double rate = (double)done / (now - t0);
                char eta[32];
                train_format_duration((double)(total - done) / rate, eta, sizeof(eta));
                fprintf(stderr, "%sUS%u pass %u/%u: %u/%u digits, K%u = %u (+%u), "
                        "%.1f digits/s, stage ETA %s%s", live ? "\r" : "", l + 1,
                        pass + 1, o->passes[l], i, n, l + 1, net->n_planes[l],
                        net->n_planes[l] - k_start, rate, eta, live ? "   " : "\n");
                last_print = now;
            }
        }
        if (live)
            fputc('\n', stderr);
        if (last)
            fprintf(stderr, "  US%u pass %u: %u planes created, %u reinforced, %u of %u "
                    "answered wrong before learning (%.2f%%)%s\n", l + 1, pass + 1, created,
                    reinforced, wrong, n, 100.0 * wrong / n,
                    full ? ", k-max reached" : "");
        else
            fprintf(stderr, "  US%u pass %u: %u planes created, %u reinforcements%s\n",
                    l + 1, pass + 1, created, reinforced, full ? ", k-max reached" : "");
        if (created == 0 && !last)
            break;              /* a further pass would only reinforce */
    }
    *ret_secs = train_now() - t0;
out:
    free(imgs);
    free(labs);
    free(steps);
    return err;
}

/* ---- the command ----------------------------------------------------------- */

static uint32_t count_wrong(const int32_t *ans, const uint8_t *labels, uint32_t n)
{
    uint32_t e = 0;
    for (uint32_t i = 0; i < n; i++)
        e += ans[i] != (int32_t)labels[i];
    return e;
}

static int write_model(const char *path, const nc_neocog *net, const nc_model_info *info,
                       uint32_t iv_top_t)
{
    nc_mf_writer *w = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    int err = nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w);
    if (!err) err = nc_neocog_write(net, w);
    if (!err) err = nc_mf_put_info(w, info);
    if (!err && iv_top_t) err = nc_mf_put_u32(w, TRAIN_TAG_IV, &iv_top_t, 1);
    if (!err) err = nc_mf_finish(w, &buf, &len);
    if (!err) err = nc_file_write_atomic(path, buf, len);
    nc_mf_writer_free(w);
    free(buf);
    return err;
}

int train_neocog_main(int argc, char **argv, const train_cmdline *cmd)
{
    options o;
    int err = parse_options(argc, argv, &o);
    if (err > 0)
        return TRAIN_EXIT_OK;
    if (err) {
        usage(stderr);
        return TRAIN_EXIT_USAGE;
    }
    int status = TRAIN_EXIT_FAIL;
    const char *dir = train_data_dir(o.data);
    nc_dataset train = { 0 }, test = { 0 };
    nc_neocog *net = NULL;
    nc_neocog_learner *lr = NULL;
    nc_neocog_iv *iv = NULL;
    uint32_t *order = NULL;
    train_pool *pool = NULL;
    int32_t *ans = NULL, *ans_iv = NULL;
    float *conf = NULL, *conf_iv = NULL;
    double log[2 * NC_NEOCOG_MAX_STAGES] = { 0 };
    nc_model_info info;
    memset(&info, 0, sizeof(info));
    nc_prep prep = NC_PREP_NEOCOG_65;
    prep.box = o.height;
    prep.deskew = (uint32_t)o.deskew;

    nc_neocog_arch arch;
    nc_neocog_arch_default(&arch);
    for (uint32_t l = 1; l < 4; l++) {
        arch.stage[l].theta = o.theta[l];
        arch.stage[l].k_max = o.k_max[l];
    }
    if ((err = nc_neocog_new(&arch, &net)))
        goto fail;

    if (train_load_mnist_checked("neocognitron", dir, "train", MNIST_TRAIN, &train))
        goto out;
    /* The test digits are read and checked now, so that a missing or bad
     * file is said before the stages train rather than after them (the
     * model would not be written); they are measured only at the end. */
    if (!o.no_test && train_load_mnist_checked("neocognitron", dir, "t10k", 0, &test))
        goto out;
    const uint32_t n_train = MNIST_TRAIN - o.validation;
    const uint32_t n_valid = o.valid_eval && o.valid_eval < o.validation ? o.valid_eval
                                                                         : o.validation;
    order = malloc((size_t)n_train * sizeof(uint32_t));
    if (!order) {
        err = -ENOMEM;
        goto fail;
    }
    const uint32_t n_order = balanced_order(&train, n_train, o.seed, order);
    if (n_order != n_train) {
        err = -ENOMEM;
        goto fail;
    }

    uint32_t most = 0;
    for (int l = 1; l < 4; l++)
        most = o.digits[l] > most ? o.digits[l] : most;
    most = most < n_train ? most : n_train;
    info.n_classes = 10;
    for (uint32_t k = 0; k < 10; k++)
        snprintf(info.labels[k], sizeof(info.labels[k]), "%u", k);
    info.prep = prep;
    snprintf(info.data, sizeof(info.data), "MNIST train 0-%u, class-balanced %u/%u/%u "
             "digits for US2/US3/US4 (validation %u-%u)", n_train - 1,
             o.digits[1] < n_train ? o.digits[1] : n_train,
             o.digits[2] < n_train ? o.digits[2] : n_train,
             o.digits[3] < n_train ? o.digits[3] : n_train, n_train, MNIST_TRAIN - 1);
    if (train_join_argv(cmd, info.command, sizeof(info.command)))
        fprintf(stderr, "neocog-train neocognitron: warning: command line truncated in "
                "the model file\n");
    info.seed = o.seed;
    info.test_error = -1.0;
    info.epochs = o.passes[3];

    nc_neocog_learn_opts lo;
    nc_neocog_learn_opts_default(&lo);
    for (int l = 1; l < 4; l++) {
        lo.theta_l[l] = o.theta_l[l];
        lo.q[l] = o.q;
    }
    lo.add_if_silent = o.add_if_silent;

    fprintf(stderr, "neocog-train neocognitron: data %s\n  %s\n", dir, info.data);
    fprintf(stderr, "  theta %.2f/%.2f/%.2f, theta_L %.2f/%.2f/%.2f, q %g, H %u, passes "
            "%u/%u/%u, %s, seed %llu\n", (double)o.theta[1], (double)o.theta[2],
            (double)o.theta[3], (double)o.theta_l[1], (double)o.theta_l[2],
            (double)o.theta_l[3], (double)o.q, o.height, o.passes[1], o.passes[2],
            o.passes[3], o.add_if_silent ? "add-if-silent" : "plane creation",
            (unsigned long long)o.seed);

    uint32_t done = 0;
    if (o.resume) {
        if (read_checkpoint(&o, &net, &done, log))
            goto out;
        fprintf(stderr, "resumed from %s: %u stage(s) done, planes %u/%u/%u/%u\n",
                o.checkpoint, done, net->n_planes[0], net->n_planes[1], net->n_planes[2],
                net->n_planes[3]);
    }
    double run_start = train_now();
    if (done == 0) {
        double t0 = train_now();
        if ((err = nc_neocog_train_us1(net, 16, 100.0f)))
            goto fail;
        log[0] = train_now() - t0;
        done = 1;
        fprintf(stderr, "US1: 16 edge planes\n");
        if (o.checkpoint && write_checkpoint(&o, net, done, log, &info))
            goto out;
    }
    if ((err = nc_neocog_learner_new(net, &lr)))
        goto fail;
    if (done < net->arch.n_stages && o.threads > 1 &&
        (err = train_pool_new(o.threads, &pool)))
        goto fail;
    for (uint32_t l = done; l < net->arch.n_stages; l++) {
        if ((err = train_stage(net, lr, l, &o, &lo, &train, order, n_order, &prep, pool,
                               &log[l])))
            goto out;
        log[NC_NEOCOG_MAX_STAGES + l] = (double)(o.digits[l] < n_train ? o.digits[l] : n_train);
        char dur[32];
        train_format_duration(log[l], dur, sizeof(dur));
        fprintf(stderr, "US%u done: %u planes, %s\n", l + 1, net->n_planes[l], dur);
        done = l + 1;
        if (o.checkpoint && write_checkpoint(&o, net, done, log, &info))
            goto out;
    }

    /* ---- choices on validation ---- */
    ans = malloc((size_t)n_valid * sizeof(int32_t));
    ans_iv = malloc((size_t)n_valid * sizeof(int32_t));
    conf = malloc((size_t)n_valid * sizeof(float));
    conf_iv = malloc((size_t)n_valid * sizeof(float));
    if (!ans || !ans_iv || !conf || !conf_iv) {
        err = -ENOMEM;
        goto fail;
    }
    if (o.interp && (err = nc_neocog_iv_new(net, o.top_t, &iv)))
        goto fail;
    float best_theta = o.theta4_try[0];
    int best_iv = 0;
    uint32_t best_err = UINT32_MAX;
    const uint32_t L = net->arch.n_stages - 1;
    for (uint32_t i = 0; n_valid && i < o.n_theta4_try; i++) {
        net->arch.stage[L].theta = o.theta4_try[i];
        train_neo_run run = { .net = net, .iv = iv, .d = &train, .first = n_train,
                              .count = n_valid, .prep = prep, .threads = o.threads,
                              .answer = ans, .conf = conf, .answer_iv = ans_iv,
                              .conf_iv = conf_iv };
        if ((err = train_neo_evaluate(&run)))
            goto fail;
        uint32_t e = count_wrong(ans, train.labels + n_train, n_valid);
        uint32_t e_iv = iv ? count_wrong(ans_iv, train.labels + n_train, n_valid) : 0;
        fprintf(stderr, "validation (%u digits), theta4 %.3f: max-response %.2f%% (%u)",
                n_valid, (double)o.theta4_try[i], 100.0 * e / n_valid, e);
        if (iv)
            fprintf(stderr, ", interpolating vectors %.2f%% (%u)", 100.0 * e_iv / n_valid,
                    e_iv);
        fprintf(stderr, "  [%.0f digits/s]\n", n_valid / run.seconds);
        if (e < best_err) {
            best_err = e;
            best_theta = o.theta4_try[i];
            best_iv = 0;
        }
        if (iv && e_iv < best_err) {
            best_err = e_iv;
            best_theta = o.theta4_try[i];
            best_iv = 1;
        }
    }
    net->arch.stage[L].theta = best_theta;
    if (n_valid)
        fprintf(stderr, "chosen on validation: theta4 %.3f, %s answer (%.2f%%)\n",
                (double)best_theta, best_iv ? "interpolating-vector" : "max-response",
                100.0 * best_err / n_valid);

    /* ---- the test set, once ---- */
    uint32_t test_errors = 0;
    if (!o.no_test) {
        NC_FREE(ans);
        NC_FREE(ans_iv);
        NC_FREE(conf);
        NC_FREE(conf_iv);
        ans = malloc((size_t)test.count * sizeof(int32_t));
        ans_iv = malloc((size_t)test.count * sizeof(int32_t));
        conf = malloc((size_t)test.count * sizeof(float));
        conf_iv = malloc((size_t)test.count * sizeof(float));
        if (!ans || !ans_iv || !conf || !conf_iv) {
            err = -ENOMEM;
            goto fail;
        }
        train_neo_run run = { .net = net, .iv = best_iv ? iv : NULL, .d = &test, .first = 0,
                              .count = test.count, .prep = prep, .threads = o.threads,
                              .answer = ans, .conf = conf, .answer_iv = ans_iv,
                              .conf_iv = conf_iv };
        if ((err = train_neo_evaluate(&run)))
            goto fail;
        test_errors = count_wrong(best_iv ? ans_iv : ans, test.labels, test.count);
        info.test_error = (double)test_errors / test.count;
        snprintf(info.test_set, sizeof(info.test_set), "MNIST t10k (%u)", test.count);
    }
    train_utc_iso(info.created, sizeof(info.created));
    if ((err = write_model(o.out, net, &info, best_iv ? o.top_t : 0))) {
        fprintf(stderr, "neocog-train neocognitron: writing %s: %s\n", o.out,
                nc_strerror(err));
        goto out;
    }
    double total = train_now() - run_start;
    for (int l = 0; l < NC_NEOCOG_MAX_STAGES && o.resume; l++)
        total += 0.0;       /* stage times of resumed stages are in log[] */
    char dur[32];
    fprintf(stderr, "\n model       %s\n planes      K1..K4 = %u / %u / %u / %u\n",
            o.out, net->n_planes[0], net->n_planes[1], net->n_planes[2], net->n_planes[3]);
    for (uint32_t l = 0; l < net->arch.n_stages; l++) {
        train_format_duration(log[l], dur, sizeof(dur));
        fprintf(stderr, " US%u         %s\n", l + 1, dur);
    }
    if (n_valid)
        fprintf(stderr, " validation  %.2f%% (%u / %u), theta4 %.3f, %s\n",
                100.0 * best_err / n_valid, best_err, n_valid, (double)best_theta,
                best_iv ? "interpolating vectors" : "max response");
    if (!o.no_test)
        fprintf(stderr, " test error  %.2f%% (%u / %u, %s)\n", 100.0 * info.test_error,
                test_errors, test.count, info.test_set);
    train_format_duration(total, dur, sizeof(dur));
    fprintf(stderr, " time        %s (wall, this run)\n", dur);
    status = TRAIN_EXIT_OK;
    goto out;
fail:
    fprintf(stderr, "neocog-train neocognitron: %s\n", nc_strerror(err));
out:
    free(order);
    train_pool_free(pool);
    free(ans);
    free(ans_iv);
    free(conf);
    free(conf_iv);
    nc_neocog_iv_free(iv);
    nc_neocog_learner_free(lr);
    nc_neocog_free(net);
    nc_dataset_fini(&train);
    nc_dataset_fini(&test);
    return status;
}

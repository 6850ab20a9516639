/* tools/train_neocog_opts.c — `neocog-train neocognitron`'s options: the
 * usage text and the command line parsed into an options struct.
 *
 * Layer: tools; part of neocog-train neocognitron (train_neocog.c). */
#include "train_neocog.h"

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

void train_neocog_usage(FILE *f)
{
    fprintf(f,
        "usage: neocog-train neocognitron --out FILE [OPTIONS]\n"
        "\n"
        "Train the neocognitron stage by stage on MNIST: US1 from edges, US2/US3\n"
        "unsupervised with plane creation, US4 supervised; choices made on the\n"
        "validation split; test error measured once and stored in the model.\n"
        "\n"
        "  --data DIR            folder with the 4 MNIST files (default $NC_MNIST_DIR)\n"
        "  --train PREFIX        train on an IDX set with its PREFIX-classes.txt instead\n"
        "                        (neocog-unipen's; no test set is read)\n"
        "  --val PREFIX          its validation set (the same classes; replaces --validation)\n"
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

int train_neocog_parse_options(int argc, char **argv, options *o)
{
    enum { O_DATA = 256, O_OUT, O_DIGITS, O_PASSES, O_THL, O_TH, O_TH4, O_Q, O_KMAX,
           O_H, O_AIS, O_DSK, O_DSKG, O_DEF4, O_IV, O_TOPT, O_VALID, O_VEVAL, O_SEED, O_THREADS,
           O_CKPT, O_RESUME, O_NOTEST, O_TRAIN, O_VAL };
    static const struct option longopts[] = {
        { "data", required_argument, NULL, O_DATA },
        { "train", required_argument, NULL, O_TRAIN },
        { "val", required_argument, NULL, O_VAL },
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
        case O_TRAIN: o->train_set = optarg; break;
        case O_VAL: o->val_set = optarg; break;
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
        case 'h': train_neocog_usage(stdout); return 1;
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
    if (!bad && !o->train_set && !train_need_data_dir("neocog-train neocognitron", o->data))
        bad = 1;
    return bad ? -EINVAL : 0;
}

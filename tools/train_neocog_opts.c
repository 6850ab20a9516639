/* tools/train_neocog_opts.c — `neocog-train neocognitron`'s options: one
 * io/opts table (opts.h) gives the parsing and the --help text; the command
 * line parsed into an options struct.
 *
 * Layer: tools; part of neocog-train neocognitron (train_neocog.c). */
#include "train_neocog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deform.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "neocog.h"
#include "train_pool.h"

enum {
    O_DATA, O_TRAIN, O_VAL, O_OUT, O_TRAIN_DIGITS, O_PASSES, O_THETA_L, O_THETA, O_THETA4_TRY,
    O_Q, O_K_MAX, O_HEIGHT, O_ADD_IF_SILENT, O_DESKEW, O_DESKEW_GENTLE, O_DEFORM_US4, O_INTERP,
    O_TOP_T, O_VALIDATION, O_VALID_EVAL, O_SEED, O_THREADS, O_CHECKPOINT, O_RESUME, O_NO_TEST,
    O_END,
};

static const nc_opt table[] = {
    [O_DATA] = { "data", "DIR", "folder with the 4 MNIST files (default $NC_MNIST_DIR)" },
    [O_TRAIN] = { "train", "PREFIX",
        "train on an IDX set with its PREFIX-classes.txt instead\n"
        "(neocog-unipen's; no test set is read)" },
    [O_VAL] = { "val", "PREFIX",
        "its validation set (the same classes; replaces --validation)" },
    [O_OUT] = { "out", "FILE", "model file to write (required)" },
    [O_TRAIN_DIGITS] = { "train-digits", "N|A,B,C",
        "class-balanced digits for US2,US3,US4 (400,400,3000)" },
    [O_PASSES] = { "passes", "N|A,B,C", "passes over them (1,1,1)" },
    [O_THETA_L] = { "theta-l", "A,B,C", "learning thresholds of US2,US3,US4 (0.80,0.80,0.70)" },
    [O_THETA] = { "theta", "A,B,C", "recognition thresholds of US2,US3,US4 (0.51,0.58,0.30)" },
    [O_THETA4_TRY] = { "theta4-try", "A,B,..",
        "US4 recognition thresholds to choose from on\n"
        "validation (default: the --theta one)" },
    [O_Q] = { "q", "F", "reinforcement gain for US2..US4 (0.5)" },
    [O_K_MAX] = { "k-max", "A,B,C", "plane caps of US2,US3,US4 (200,300,4000)" },
    [O_HEIGHT] = { "height", "H", "digit height of the 65x65 input (40)" },
    [O_ADD_IF_SILENT] = { "add-if-silent", NULL, "US2/US3 learn by add-if-silent" },
    [O_DESKEW] = { "deskew", NULL,
        "shear each digit upright before scaling (stored in the prep)" },
    [O_DESKEW_GENTLE] = { "deskew-gentle", NULL, "the same, at most half a pixel a row" },
    [O_DEFORM_US4] = { "deform-us4", "F",
        "US4 passes after the first see every digit freshly deformed\n"
        "(core/data/deform, NC_DEFORM_MNIST times F; 0, the default, off)" },
    [O_INTERP] = { "interp", NULL,
        "let validation choose the interpolating-vector\n"
        "classifier over the max-response answer" },
    [O_TOP_T] = { "top-t", "N", "planes per class the IV classifier pairs (8)" },
    [O_VALIDATION] = { "validation", "N", "hold out the last N training digits (10000)" },
    [O_VALID_EVAL] = { "valid-eval", "N", "measure only the first N of them (all)" },
    [O_SEED] = { "seed", "N", "order of the training digits (1)" },
    [O_THREADS] = { "threads", "N",
        "threads for US4 learning, validation and test (1);\n"
        "the network learnt is the same for every N" },
    [O_CHECKPOINT] = { "checkpoint", "FILE", "rewrite FILE after every stage" },
    [O_RESUME] = { "resume", NULL, "skip the stages --checkpoint holds" },
    [O_NO_TEST] = { "no-test", NULL, "do not measure on the test set (tuning runs)" },
    [O_END] = { NULL, NULL, NULL },
};

static const char usage_text[] =
    "usage: neocog-train neocognitron --out FILE [OPTIONS]\n"
    "\n"
    "Train the neocognitron stage by stage on MNIST: US1 from edges, US2/US3\n"
    "unsupervised with plane creation, US4 supervised; choices made on the\n"
    "validation split; test error measured once and stored in the model.\n";


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
    nc_opts p = { .prog = "neocog-train neocognitron", .usage = usage_text, .table = table };
    *o = (options){
        .digits = { 0, 400, 400, 3000 }, .passes = { 0, 1, 1, 1 },
        .k_max = { 16, 200, 300, 4000 },
        .theta = { 0.55f, 0.51f, 0.58f, 0.30f }, .theta_l = { 0.0f, 0.80f, 0.80f, 0.70f },
        .q = 0.5f, .height = 40, .validation = 10000, .top_t = 8, .seed = 1, .threads = 1,
    };
    for (int c; (c = nc_opts_next(&p, argc, argv)) != NC_OPTS_END;) {
        const char *v = p.value;
        int err = 0;
        switch (c) {
        case NC_OPTS_HELP: nc_opts_usage(&p, stdout); return TRAIN_EXIT_OK;
        case NC_OPTS_ERROR: return train_opts_fail(&p, NULL);
        case O_DATA: o->data = v; break;
        case O_TRAIN: o->train_set = v; break;
        case O_VAL: o->val_set = v; break;
        case O_OUT: o->out = v; break;
        case O_CHECKPOINT: o->checkpoint = v; break;
        case O_TRAIN_DIGITS: err = parse_u32_list3(v, o->digits); break;
        case O_PASSES: err = parse_u32_list3(v, o->passes); break;
        case O_K_MAX: err = parse_u32_list3(v, o->k_max); break;
        case O_THETA_L: err = parse_f_list3(v, o->theta_l); break;
        case O_THETA: err = parse_f_list3(v, o->theta); break;
        case O_THETA4_TRY: err = parse_f_list(v, o->theta4_try, MAX_TRY, &o->n_theta4_try); break;
        case O_Q: err = train_parse_float(v, &o->q); break;
        case O_HEIGHT: err = train_parse_u32(v, &o->height); break;
        case O_ADD_IF_SILENT: o->add_if_silent = 1; break;
        case O_DESKEW: o->deskew = 1; break;
        case O_DESKEW_GENTLE: o->deskew = (int)NC_PREP_DESKEW_GENTLE; break;
        case O_DEFORM_US4: err = train_parse_float(v, &o->deform_us4); break;
        case O_INTERP: o->interp = 1; break;
        case O_TOP_T: err = train_parse_u32(v, &o->top_t); break;
        case O_VALIDATION: err = train_parse_u32(v, &o->validation); break;
        case O_VALID_EVAL: err = train_parse_u32(v, &o->valid_eval); break;
        case O_SEED: err = train_parse_u64(v, &o->seed); break;
        case O_THREADS: err = train_parse_u32(v, &o->threads); break;
        case O_RESUME: o->resume = 1; break;
        case O_NO_TEST: o->no_test = 1; break;
        }
        if (err)
            return train_opts_bad(&p, c, NULL);
    }
    if (p.next < argc)
        return train_opts_fail(&p, "unexpected argument '%s'", argv[p.next]);
    if (!o->out)
        return train_opts_fail(&p, "--out FILE is required");
    if (o->n_theta4_try == 0) {
        o->theta4_try[0] = o->theta[3];
        o->n_theta4_try = 1;
    }
    for (int l = 1; l < 4; l++)
        if (!(o->theta[l] > 0.0f && o->theta[l] < 1.0f) ||
            !(o->theta_l[l] > 0.0f && o->theta_l[l] < 1.0f) || o->digits[l] == 0 ||
            o->passes[l] == 0 || o->k_max[l] == 0 || o->k_max[l] > NC_NEOCOG_MAX_PLANES)
            return train_opts_fail(&p, "thresholds must be in (0, 1), digits, passes and "
                                   "k-max >= 1 (k-max <= %u)", NC_NEOCOG_MAX_PLANES);
    for (uint32_t i = 0; i < o->n_theta4_try; i++)
        if (!(o->theta4_try[i] > 0.0f && o->theta4_try[i] < 1.0f))
            return train_opts_fail(&p, "--theta4-try values must be in (0, 1)");
    if (o->height < 8 || o->height > 61)
        return train_opts_fail(&p, "--height must be 8..61");
    const nc_deform_params dp = nc_deform_params_scaled(&NC_DEFORM_MNIST, o->deform_us4);
    if (!(o->deform_us4 >= 0.0f) || nc_deform_params_check(&dp))
        return train_opts_fail(&p, "--deform-us4 must be >= 0 and give valid deformations");
    if (!(o->q > 0.0f))
        return train_opts_fail(&p, "--q must be > 0");
    if (o->validation >= MNIST_TRAIN || o->threads == 0 || o->threads > 256 || o->top_t < 1 ||
        o->top_t > 256)
        return train_opts_fail(&p, "bad --validation, --threads or --top-t");
    if (o->resume && !o->checkpoint)
        return train_opts_fail(&p, "--resume needs --checkpoint FILE");
    if (!o->train_set && !train_need_data_dir("neocog-train neocognitron", o->data))
        return TRAIN_EXIT_USAGE;
    return TRAIN_PARSED;
}

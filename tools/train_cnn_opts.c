/* tools/train_cnn_opts.c — its options: one io/opts table (opts.h) gives the
 * parsing and the --help text; the command line parsed into an options
 * struct.
 *
 * Layer: tools; part of `neocog-train cnn` (train_cnn.c says how it trains). */
#include "train_cnn.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "deform.h"
#include "nc_config.h"

enum {
    O_ARCH, O_DATA, O_TRAIN, O_VAL, O_TEST, O_DATA_NOTE, O_OUT, O_EPOCHS, O_BATCH, O_LR,
    O_LR_DECAY, O_MOMENTUM, O_ADAM, O_VALIDATION, O_KEEP_LAST, O_AVERAGE_LAST, O_NO_TEST,
    O_LIMIT, O_DEFORM, O_NO_DEFORM, O_DEFORM_PARAMS, O_DEFORM_SCALE, O_SEED, O_THREADS, O_GPU,
    O_EXTRA, O_INIT, O_TEACHER, O_TEACHER_WEIGHT, O_SOFTMAX, O_INIT_GAIN, O_GPU_KERNELS,
    O_CHECKPOINT, O_RESUME, O_PREP, O_EPOCH_BLOCKS, O_END,
};

static const nc_opt table[] = {
    [O_ARCH] = { "arch", "A",
        "network notation (default " DEFAULT_ARCH ");\n"
        "1x29x29W14-... normalises the digits' width to 14 px;\n"
        "20C4bn-... batch-normalises a layer (the file written\n"
        "holds the plain net with the statistics folded in)" },
    [O_DATA] = { "data", "DIR", "folder with the 4 MNIST files (default $NC_MNIST_DIR)" },
    [O_TRAIN] = { "train", "PREFIX",
        "train on an IDX set other than MNIST: PREFIX-images-\n"
        "idx3-ubyte, PREFIX-labels-idx1-ubyte (28x28) and\n"
        "PREFIX-classes.txt (the labels the model file records,\n"
        "one a line; --arch's last layer has as many outputs),\n"
        "as neocog-unipen writes them" },
    [O_VAL] = { "val", "PREFIX",
        "with --train: the validation set (same classes file);\n"
        "without it nothing is validated" },
    [O_TEST] = { "test", "PREFIX",
        "with --train: the test set, measured once at the end;\n"
        "--train needs --test or --no-test" },
    [O_DATA_NOTE] = { "data-note", "TEXT",
        "with --train: how the sets were made (e.g. the\n"
        "renderer's options), recorded in the model's data field" },
    [O_OUT] = { "out", "FILE", "model file to write (required)" },
    [O_EPOCHS] = { "epochs", "N", "epochs to train (default 10)" },
    [O_BATCH] = { "batch", "N",
        "mini-batch size (default 16; gradients are summed,\n"
        "so --lr stays a per-image rate)" },
    [O_LR] = { "lr", "F", "learning rate of the first epoch (default 0.001)" },
    [O_LR_DECAY] = { "lr-decay", "F", "factor applied after every epoch (default 0.95)" },
    [O_MOMENTUM] = { "momentum", "M",
        "SGD with momentum M (0 <= M < 1; the velocity sums the\n"
        "gradients, so --lr stays a per-image rate; default 0:\n"
        "plain SGD)" },
    [O_ADAM] = { "adam", NULL,
        "Adam (beta1 0.9, beta2 0.999, eps 1e-8) instead of SGD;\n"
        "--lr is then the step size (e.g. 1e-3)" },
    [O_VALIDATION] = { "validation", "N",
        "hold out the last N training digits (default 10000)" },
    [O_KEEP_LAST] = { "keep-last", NULL,
        "keep the last epoch's weights, not those of the epoch\n"
        "with the lowest validation error (which is still\n"
        "measured and reported every epoch)" },
    [O_AVERAGE_LAST] = { "average-last", "K",
        "keep the mean of the last K epochs' weights (stochastic\n"
        "weight averaging, Izmailov et al. 2018; a normalised\n"
        "net's statistics are measured again for the mean, and\n"
        "its validation error is reported)" },
    [O_NO_TEST] = { "no-test", NULL,
        "do not measure the test digits: the file records its\n"
        "test error as unknown (runs judged on validation\n"
        "alone, so that no test figure is seen)" },
    [O_LIMIT] = { "limit", "N", "train on the first N training digits only" },
    [O_DEFORM] = { "deform", NULL, "deform training digits (default)" },
    [O_NO_DEFORM] = { "no-deform", NULL, "train on the digits as they are" },
    [O_DEFORM_PARAMS] = { "deform-params", "L",
        "deformations other than the default ones, a comma list\n"
        "of KEY=VALUE: shift (pixels, per axis), rotate\n"
        "(degrees), scale (relative, per axis), shear (tan of\n"
        "the angle), sigma and alpha (elastic: Gaussian std and\n"
        "displacement in pixels; 0 turns them off); keys not\n"
        "named keep the defaults (shift=1.5,rotate=10,scale=0.12,\n"
        "shear=0.15,sigma=6,alpha=34); shift=5.6,rotate=20,\n"
        "scale=0,shear=0,alpha=0 is about An et al. 2020's\n"
        "shifts and rotations" },
    [O_DEFORM_SCALE] = { "deform-scale", "F",
        "deformations F times as strong as the default ones\n"
        "(shift, rotation, scaling, shear, elastic alpha;\n"
        "default 1), e.g. 0.5 to fine-tune a column on milder\n"
        "ones" },
    [O_SEED] = { "seed", "N", "weights, order and deformations (default 1)" },
    [O_THREADS] = { "threads", "N",
        "threads that deform the next images while a batch\n"
        "trains; OpenBLAS threads too on the CPU (default 1)" },
    [O_GPU] = { "gpu", "N",
        "train on CUDA device N (the results match the CPU's\n"
        "to float rounding; default: the CPU)" },
    [O_EXTRA] = { "extra", "PREFIX",
        "more 28x28 training images with labels, PREFIX-images-\n"
        "idx3-ubyte and PREFIX-labels-idx1-ubyte (e.g. camera\n"
        "patches from neocog-streamgen --patches), trained with\n"
        "the MNIST digits; validation stays MNIST's" },
    [O_INIT] = { "init", "FILE",
        "start from FILE's weights (a model of the same --arch)\n"
        "instead of random ones: fine-tuning" },
    [O_TEACHER] = { "teacher", "FILE",
        "distillation: train towards FILE's outputs (a column or\n"
        "committee with the same inputs) on each training digit\n"
        "as it is, mixed with the label's +1 / -1" },
    [O_TEACHER_WEIGHT] = { "teacher-weight", "A",
        "the teacher's share of those targets (default 0.5)" },
    [O_SOFTMAX] = { "softmax", "S",
        "minimise the cross-entropy of softmax(S x outputs)\n"
        "instead of the squared error against +1 / -1\n"
        "(S > 0, e.g. 3; the outputs stay the scaled tanh's)" },
    [O_INIT_GAIN] = { "init-gain", "G",
        "each layer's weights uniform with variance G^2 / fan-in,\n"
        "biases 0, instead of uniform in [-0.05, 0.05] (G > 0;\n"
        "1.4142 for rectified units, 1 for tanh)" },
    [O_GPU_KERNELS] = { "gpu-kernels", "K",
        "with --gpu: direct (default: the direct kernels) or\n"
        "unrolled (convolutions as unrolled products by cuBLAS,\n"
        "as core's BLAS path: faster for large layers, e.g.\n"
        "ten 3x3 layers of 32-176 maps); each sums in a fixed\n"
        "order, so the same --seed on the same GPU model gives\n"
        "the same network" },
    [O_CHECKPOINT] = { "checkpoint", "FILE", "rewrite FILE atomically after every epoch" },
    [O_RESUME] = { "resume", NULL, "continue from --checkpoint (same options)" },
    [O_EPOCH_BLOCKS] = { "epoch-blocks", "K",
        "--train holds K renderings of the same characters, one\n"
        "after another (neocog-unipen --variants K\n"
        "--variant-blocks): epoch e trains on rendering\n"
        "(e - 1) mod K alone, so every epoch sees new pen widths\n"
        "and deformations (default 1: every image every epoch)" },
    [O_PREP] = { "prep", "mnist|line",
        "the preparation the model file records: mnist (default:\n"
        "ink cropped, fit in a 20 px box) or line (the image is\n"
        "a cell as tall as its text line, scaled whole, so size\n"
        "and height on the line survive: neocog-unipen\n"
        "--size-mode line's renderings)" },
    [O_END] = { NULL, NULL, NULL },
};

static const char usage_text[] =
    "usage: neocog-train cnn --out FILE [OPTIONS]\n"
    "\n"
    "Train a CNN column on MNIST (seed 000), or on --train's characters: SGD\n"
    "with affine + elastic deformations, best epoch chosen on held-out\n"
    "training digits, error measured once on the 10000 test digits and stored\n"
    "in the model file.\n";


/* "shift=5.6,rotate=20,..." over *p: each KEY=VALUE pair replaces that
 * field; -EINVAL for an unknown key, a missing '=' or a bad number (the
 * ranges are nc_deform_params_check's, after --deform-scale). */
static int parse_deform_params(const char *list, nc_deform_params *p)
{
    static const struct { const char *key; size_t off; } keys[] = {
        { "shift", offsetof(nc_deform_params, max_translate) },
        { "rotate", offsetof(nc_deform_params, max_rotate_deg) },
        { "scale", offsetof(nc_deform_params, max_scale) },
        { "shear", offsetof(nc_deform_params, max_shear) },
        { "sigma", offsetof(nc_deform_params, elastic_sigma) },
        { "alpha", offsetof(nc_deform_params, elastic_alpha) },
    };
    char buf[256];
    if (!*list || strlen(list) >= sizeof buf)
        return -EINVAL;
    memcpy(buf, list, strlen(list) + 1);
    char *save = NULL;
    for (char *pair = strtok_r(buf, ",", &save); pair; pair = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(pair, '=');
        if (!eq)
            return -EINVAL;
        *eq = '\0';
        size_t k = 0;
        while (k < sizeof keys / sizeof *keys && strcmp(pair, keys[k].key))
            k++;
        float v;
        if (k == sizeof keys / sizeof *keys || train_parse_float(eq + 1, &v))
            return -EINVAL;
        *(float *)((char *)p + keys[k].off) = v;
    }
    return 0;
}

int train_cnn_parse_options(int argc, char **argv, options *o)
{
    nc_opts p = { .prog = "neocog-train cnn", .usage = usage_text, .table = table };
    *o = (options){
        .arch = DEFAULT_ARCH, .epochs = 10, .batch = 16, .lr = 1e-3f,
        .lr_decay = 0.95f, .validation = 10000, .deform = 1, .deform_scale = 1.0f,
        .deform_base = NC_DEFORM_MNIST, .seed = 1,
        .threads = 1, .teacher_weight = 0.5f,
        .gpu = -1,
    };
    for (int c; (c = nc_opts_next(&p, argc, argv)) != NC_OPTS_END;) {
        const char *v = p.value;
        int err = 0;
        switch (c) {
        case NC_OPTS_HELP: nc_opts_usage(&p, stdout); return TRAIN_EXIT_OK;
        case NC_OPTS_ERROR: return train_opts_fail(&p, NULL);
        case O_ARCH: o->arch = v; break;
        case O_DATA: o->data = v; break;
        case O_OUT: o->out = v; break;
        case O_CHECKPOINT: o->checkpoint = v; break;
        case O_EPOCHS: err = train_parse_u32(v, &o->epochs); break;
        case O_BATCH: err = train_parse_u32(v, &o->batch); break;
        case O_LR: err = train_parse_float(v, &o->lr); break;
        case O_LR_DECAY: err = train_parse_float(v, &o->lr_decay); break;
        case O_ADAM: o->adam = 1; break;
        case O_MOMENTUM:
            err = train_parse_float(v, &o->momentum) ||
                  !(o->momentum >= 0.0f && o->momentum < 1.0f);
            break;
        case O_VALIDATION: err = train_parse_u32(v, &o->validation); break;
        case O_LIMIT: err = train_parse_u32(v, &o->limit); break;
        case O_DEFORM: o->deform = 1; break;
        case O_NO_DEFORM: o->deform = 0; break;
        case O_DEFORM_SCALE: {
            err = train_parse_float(v, &o->deform_scale);
            const nc_deform_params d = nc_deform_params_scaled(&NC_DEFORM_MNIST,
                                                               o->deform_scale);
            err = err || !(o->deform_scale >= 0.0f) || nc_deform_params_check(&d);
            break;
        }
        case O_DEFORM_PARAMS:
            err = parse_deform_params(v, &o->deform_base);
            o->deform_custom = 1;
            break;
        case O_SEED: err = train_parse_u64(v, &o->seed); break;
        case O_THREADS: err = train_parse_u32(v, &o->threads); break;
        case O_RESUME: o->resume = 1; break;
        case O_PREP:
            o->prep_line = !strcmp(v, "line");
            err = !o->prep_line && strcmp(v, "mnist");
            break;
        case O_KEEP_LAST: o->keep_last = 1; break;
        case O_EPOCH_BLOCKS:
            err = train_parse_u32(v, &o->epoch_blocks) || o->epoch_blocks == 0;
            break;
        case O_NO_TEST: o->no_test = 1; break;
        case O_TRAIN: o->train_set = v; break;
        case O_VAL: o->val_set = v; break;
        case O_TEST: o->test_set = v; break;
        case O_DATA_NOTE: o->data_note = v; break;
        case O_AVERAGE_LAST:
            err = train_parse_u32(v, &o->average_last) || o->average_last == 0;
            break;
        case O_EXTRA: o->extra = v; break;
        case O_INIT: o->init = v; break;
        case O_TEACHER: o->teacher = v; break;
        case O_TEACHER_WEIGHT:
            err = train_parse_float(v, &o->teacher_weight) ||
                  !(o->teacher_weight >= 0.0f && o->teacher_weight <= 1.0f);
            break;
        case O_SOFTMAX:
            err = train_parse_float(v, &o->softmax) ||
                  !(o->softmax > 0.0f && o->softmax <= 100.0f);
            break;
        case O_INIT_GAIN:
            err = train_parse_float(v, &o->init_gain) ||
                  !(o->init_gain > 0.0f && o->init_gain <= 10.0f);
            break;
        case O_GPU: {
            uint32_t d = 0;
            err = nc_opts_u32(v, 0, 1024, &d);
            o->gpu = (int)d;
            break;
        }
        case O_GPU_KERNELS:
            o->unrolled = !strcmp(v, "unrolled");
            err = !o->unrolled && strcmp(v, "direct");
            break;
        }
        if (err)
            return train_opts_bad(&p, c, NULL);
    }
    if (p.next < argc)
        return train_opts_fail(&p, "unexpected argument '%s'", argv[p.next]);
    if (!o->out)
        return train_opts_fail(&p, "--out FILE is required");
    if (o->adam && o->momentum > 0.0f)
        return train_opts_fail(&p, "--adam with --momentum: Adam has its own (beta1)");
    if (o->unrolled && o->gpu < 0)
        return train_opts_fail(&p, "--gpu-kernels unrolled needs --gpu "
                                   "(the CPU always multiplies unrolled products)");
    if (o->epochs == 0 || o->epochs > MAX_EPOCHS)
        return train_opts_fail(&p, "--epochs must be 1..%u", MAX_EPOCHS);
    if (o->deform_custom) {
        const nc_deform_params d = nc_deform_params_scaled(&o->deform_base, o->deform_scale);
        if (nc_deform_params_check(&d))
            return train_opts_fail(&p, "--deform-params: out of range (shift 0..%u, "
                                   "rotate 0..180, scale 0..0.9, shear 0..1, sigma 0..%g, "
                                   "alpha 0..%g, after --deform-scale)",
                                   (unsigned)NC_DEFORM_MAX_DIM, (double)NC_DEFORM_MAX_SIGMA,
                                   (double)NC_DEFORM_MAX_ALPHA);
    }
    if (o->average_last > o->epochs)
        return train_opts_fail(&p, "--average-last must be 1..--epochs (%u)", o->epochs);
    if (o->average_last && o->keep_last)
        return train_opts_fail(&p, "--average-last with --keep-last: the kept weights "
                                   "are the mean of the last epochs'");
    if (o->batch == 0 || o->batch > 4096)
        return train_opts_fail(&p, "--batch must be 1..4096");
    if (!(o->lr > 0.0f && o->lr_decay > 0.0f && o->lr_decay <= 1.0f))
        return train_opts_fail(&p, "need --lr > 0 and 0 < --lr-decay <= 1");
    if (!o->train_set && (o->val_set || o->test_set || o->data_note))
        return train_opts_fail(&p, "--val, --test and --data-note go with --train");
    if (o->train_set && !o->test_set == !o->no_test)
        return train_opts_fail(&p, "--train needs --test PREFIX or --no-test");
    if (o->epoch_blocks > 1 && (!o->train_set || o->extra || o->limit))
        return train_opts_fail(&p, "--epoch-blocks goes with --train, without --extra or "
                                   "--limit (the set is its renderings whole)");
    if (o->train_set && o->teacher)
        return train_opts_fail(&p, "--teacher is for MNIST digits");
    if (!o->train_set && o->validation >= MNIST_TRAIN)
        return train_opts_fail(&p, "--validation must leave training digits");
    if (o->threads == 0 || o->threads > MAX_THREADS)
        return train_opts_fail(&p, "--threads must be 1..%u", MAX_THREADS);
    if (o->gpu >= 0 && !NC_HAVE_CUDA)
        return train_opts_fail(&p, "--gpu: this build has no CUDA engine");
    if (o->softmax > 0.0f && o->teacher)
        return train_opts_fail(&p, "--softmax with --teacher: the teacher's targets "
                                   "are squared-error targets");
    if (o->init_gain > 0.0f && o->init)
        return train_opts_fail(&p, "--init-gain with --init: the weights come from the file");
    if (o->resume && !o->checkpoint)
        return train_opts_fail(&p, "--resume needs --checkpoint FILE");
    if (!o->train_set && !train_need_data_dir("neocog-train cnn", o->data))
        return TRAIN_EXIT_USAGE;
    return TRAIN_PARSED;
}

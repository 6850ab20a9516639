/* tools/train_cnn_opts.c — its options: the usage text and the command line
 * parsed into an options struct.
 *
 * Layer: tools; part of `neocog-train cnn` (train_cnn.c says how it trains). */
#include "train_cnn.h"

#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cnn.h"
#include "deform.h"
#include "train_norm.h"
#include "train_teacher.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "nc_config.h"
#if NC_HAVE_CUDA
#include "cnn_engine.h"
#include "device.h"
#endif

void train_cnn_usage(FILE *f)
{
    fprintf(f,
        "usage: neocog-train cnn --out FILE [OPTIONS]\n"
        "\n"
        "Train a CNN column on MNIST (seed 000), or on --train's characters: SGD\n"
        "with affine + elastic\n"
        "deformations, best epoch chosen on held-out training digits, error\n"
        "measured once on the 10000 test digits and stored in the model file.\n"
        "\n"
        "  --arch A          network notation (default " DEFAULT_ARCH ");\n"
        "                    1x29x29W14-... normalises the digits' width to 14 px;\n"
        "                    20C4bn-... batch-normalises a layer (the file written\n"
        "                    holds the plain net with the statistics folded in)\n"
        "  --data DIR        folder with the 4 MNIST files (default $NC_MNIST_DIR)\n"
        "  --train PREFIX    train on an IDX set other than MNIST: PREFIX-images-\n"
        "                    idx3-ubyte, PREFIX-labels-idx1-ubyte (28x28) and\n"
        "                    PREFIX-classes.txt (the labels the model file records,\n"
        "                    one a line; --arch's last layer has as many outputs),\n"
        "                    as neocog-unipen writes them\n"
        "  --val PREFIX      with --train: the validation set (same classes file);\n"
        "                    without it nothing is validated\n"
        "  --test PREFIX     with --train: the test set, measured once at the end;\n"
        "                    --train needs --test or --no-test\n"
        "  --data-note TEXT  with --train: how the sets were made (e.g. the\n"
        "                    renderer's options), recorded in the model's data field\n"
        "  --out FILE        model file to write (required)\n"
        "  --epochs N        epochs to train (default 10)\n"
        "  --batch N         mini-batch size (default 16; gradients are summed,\n"
        "                    so --lr stays a per-image rate)\n"
        "  --lr F            learning rate of the first epoch (default 0.001)\n"
        "  --lr-decay F      factor applied after every epoch (default 0.95)\n"
        "  --momentum M      SGD with momentum M (0 <= M < 1; the velocity sums the\n"
        "                    gradients, so --lr stays a per-image rate; default 0:\n"
        "                    plain SGD)\n"
        "  --adam            Adam (beta1 0.9, beta2 0.999, eps 1e-8) instead of SGD;\n"
        "                    --lr is then the step size (e.g. 1e-3)\n"
        "  --validation N    hold out the last N training digits (default 10000)\n"
        "  --keep-last       keep the last epoch's weights, not those of the epoch\n"
        "                    with the lowest validation error (which is still\n"
        "                    measured and reported every epoch)\n"
        "  --average-last K  keep the mean of the last K epochs' weights (stochastic\n"
        "                    weight averaging, Izmailov et al. 2018; a normalised\n"
        "                    net's statistics are measured again for the mean, and\n"
        "                    its validation error is reported)\n"
        "  --no-test         do not measure the test digits: the file records its\n"
        "                    test error as unknown (runs judged on validation\n"
        "                    alone, so that no test figure is seen)\n"
        "  --limit N         train on the first N training digits only\n"
        "  --deform          deform training digits (default)\n"
        "  --no-deform       train on the digits as they are\n"
        "  --deform-params L deformations other than the default ones, a comma list\n"
        "                    of KEY=VALUE: shift (pixels, per axis), rotate\n"
        "                    (degrees), scale (relative, per axis), shear (tan of\n"
        "                    the angle), sigma and alpha (elastic: Gaussian std and\n"
        "                    displacement in pixels; 0 turns them off); keys not\n"
        "                    named keep the defaults (shift=1.5,rotate=10,scale=0.12,\n"
        "                    shear=0.15,sigma=6,alpha=34); shift=5.6,rotate=20,\n"
        "                    scale=0,shear=0,alpha=0 is about An et al. 2020's\n"
        "                    shifts and rotations\n"
        "  --deform-scale F  deformations F times as strong as the default ones\n"
        "                    (shift, rotation, scaling, shear, elastic alpha;\n"
        "                    default 1), e.g. 0.5 to fine-tune a column on milder\n"
        "                    ones\n"
        "  --seed N          weights, order and deformations (default 1)\n"
        "  --threads N       threads that deform the next images while a batch\n"
        "                    trains; OpenBLAS threads too on the CPU (default 1)\n"
        "  --gpu N           train on CUDA device N (the results match the CPU's\n"
        "                    to float rounding; default: the CPU)\n"
        "  --extra PREFIX    more 28x28 training images with labels, PREFIX-images-\n"
        "                    idx3-ubyte and PREFIX-labels-idx1-ubyte (e.g. camera\n"
        "                    patches from neocog-streamgen --patches), trained with\n"
        "                    the MNIST digits; validation stays MNIST's\n"
        "  --init FILE       start from FILE's weights (a model of the same --arch)\n"
        "                    instead of random ones: fine-tuning\n"
        "  --teacher FILE    distillation: train towards FILE's outputs (a column or\n"
        "                    committee with the same inputs) on each training digit\n"
        "                    as it is, mixed with the label's +1 / -1\n"
        "  --teacher-weight A  the teacher's share of those targets (default 0.5)\n"
        "  --softmax S       minimise the cross-entropy of softmax(S x outputs)\n"
        "                    instead of the squared error against +1 / -1\n"
        "                    (S > 0, e.g. 3; the outputs stay the scaled tanh's)\n"
        "  --init-gain G     each layer's weights uniform with variance G^2 / fan-in,\n"
        "                    biases 0, instead of uniform in [-0.05, 0.05] (G > 0;\n"
        "                    1.4142 for rectified units, 1 for tanh)\n"
        "  --gpu-kernels K   with --gpu: direct (default: the direct kernels) or\n"
        "                    unrolled (convolutions as unrolled products by cuBLAS,\n"
        "                    as core's BLAS path: faster for large layers, e.g.\n"
        "                    ten 3x3 layers of 32-176 maps); each sums in a fixed\n"
        "                    order, so the same --seed on the same GPU model gives\n"
        "                    the same network\n"
        "  --checkpoint FILE rewrite FILE atomically after every epoch\n"
        "  --resume          continue from --checkpoint (same options)\n"
        "  -h, --help        this text\n");
}

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
    enum { O_ARCH = 256, O_DATA, O_OUT, O_EPOCHS, O_BATCH, O_LR, O_DECAY, O_VALID, O_KEEPLAST,
           O_LIMIT, O_DEFORM, O_NODEFORM, O_SEED, O_THREADS, O_CKPT, O_RESUME, O_GPU,
           O_EXTRA, O_INIT, O_DSCALE, O_TEACHER, O_TWEIGHT, O_SOFTMAX, O_IGAIN, O_KERNELS,
           O_AVERAGE, O_DPARAMS, O_MOMENTUM, O_ADAM, O_NOTEST, O_TRAINSET, O_VALSET,
           O_TESTSET, O_NOTE };
    static const struct option longopts[] = {
        { "arch", required_argument, NULL, O_ARCH },
        { "data", required_argument, NULL, O_DATA },
        { "out", required_argument, NULL, O_OUT },
        { "epochs", required_argument, NULL, O_EPOCHS },
        { "batch", required_argument, NULL, O_BATCH },
        { "lr", required_argument, NULL, O_LR },
        { "lr-decay", required_argument, NULL, O_DECAY },
        { "momentum", required_argument, NULL, O_MOMENTUM },
        { "adam", no_argument, NULL, O_ADAM },
        { "validation", required_argument, NULL, O_VALID },
        { "keep-last", no_argument, NULL, O_KEEPLAST },
        { "average-last", required_argument, NULL, O_AVERAGE },
        { "no-test", no_argument, NULL, O_NOTEST },
        { "train", required_argument, NULL, O_TRAINSET },
        { "val", required_argument, NULL, O_VALSET },
        { "test", required_argument, NULL, O_TESTSET },
        { "data-note", required_argument, NULL, O_NOTE },
        { "limit", required_argument, NULL, O_LIMIT },
        { "deform", no_argument, NULL, O_DEFORM },
        { "no-deform", no_argument, NULL, O_NODEFORM },
        { "deform-scale", required_argument, NULL, O_DSCALE },
        { "deform-params", required_argument, NULL, O_DPARAMS },
        { "seed", required_argument, NULL, O_SEED },
        { "threads", required_argument, NULL, O_THREADS },
        { "checkpoint", required_argument, NULL, O_CKPT },
        { "resume", no_argument, NULL, O_RESUME },
        { "gpu", required_argument, NULL, O_GPU },
        { "extra", required_argument, NULL, O_EXTRA },
        { "init", required_argument, NULL, O_INIT },
        { "teacher", required_argument, NULL, O_TEACHER },
        { "teacher-weight", required_argument, NULL, O_TWEIGHT },
        { "softmax", required_argument, NULL, O_SOFTMAX },
        { "init-gain", required_argument, NULL, O_IGAIN },
        { "gpu-kernels", required_argument, NULL, O_KERNELS },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *o = (options){
        .arch = DEFAULT_ARCH, .epochs = 10, .batch = 16, .lr = 1e-3f,
        .lr_decay = 0.95f, .validation = 10000, .deform = 1, .deform_scale = 1.0f,
        .deform_base = NC_DEFORM_MNIST, .seed = 1,
        .threads = 1, .teacher_weight = 0.5f,
        .gpu = -1,
    };
    int c, bad = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        const char *name = NULL;
        int err = 0;
        switch (c) {
        case O_ARCH: o->arch = optarg; break;
        case O_DATA: o->data = optarg; break;
        case O_OUT: o->out = optarg; break;
        case O_CKPT: o->checkpoint = optarg; break;
        case O_EPOCHS: name = "--epochs"; err = train_parse_u32(optarg, &o->epochs); break;
        case O_BATCH: name = "--batch"; err = train_parse_u32(optarg, &o->batch); break;
        case O_LR: name = "--lr"; err = train_parse_float(optarg, &o->lr); break;
        case O_DECAY: name = "--lr-decay"; err = train_parse_float(optarg, &o->lr_decay); break;
        case O_ADAM: o->adam = 1; break;
        case O_MOMENTUM:
            name = "--momentum";
            err = train_parse_float(optarg, &o->momentum);
            if (!err && !(o->momentum >= 0.0f && o->momentum < 1.0f))
                err = -ERANGE;
            break;
        case O_VALID: name = "--validation"; err = train_parse_u32(optarg, &o->validation); break;
        case O_LIMIT: name = "--limit"; err = train_parse_u32(optarg, &o->limit); break;
        case O_DEFORM: o->deform = 1; break;
        case O_NODEFORM: o->deform = 0; break;
        case O_DSCALE: {
            name = "--deform-scale";
            err = train_parse_float(optarg, &o->deform_scale);
            const nc_deform_params p = nc_deform_params_scaled(&NC_DEFORM_MNIST,
                                                               o->deform_scale);
            if (!err && (!(o->deform_scale >= 0.0f) || nc_deform_params_check(&p)))
                err = -ERANGE;
            break;
        }
        case O_DPARAMS:
            name = "--deform-params";
            err = parse_deform_params(optarg, &o->deform_base);
            o->deform_custom = 1;
            break;
        case O_SEED: name = "--seed"; err = train_parse_u64(optarg, &o->seed); break;
        case O_THREADS: name = "--threads"; err = train_parse_u32(optarg, &o->threads); break;
        case O_RESUME: o->resume = 1; break;
        case O_KEEPLAST: o->keep_last = 1; break;
        case O_NOTEST: o->no_test = 1; break;
        case O_TRAINSET: o->train_set = optarg; break;
        case O_VALSET: o->val_set = optarg; break;
        case O_TESTSET: o->test_set = optarg; break;
        case O_NOTE: o->data_note = optarg; break;
        case O_AVERAGE:
            name = "--average-last";
            err = train_parse_u32(optarg, &o->average_last);
            if (!err && o->average_last == 0)
                err = -ERANGE;
            break;
        case O_EXTRA: o->extra = optarg; break;
        case O_INIT: o->init = optarg; break;
        case O_TEACHER: o->teacher = optarg; break;
        case O_TWEIGHT:
            name = "--teacher-weight";
            err = train_parse_float(optarg, &o->teacher_weight);
            if (!err && !(o->teacher_weight >= 0.0f && o->teacher_weight <= 1.0f))
                err = -ERANGE;
            break;
        case O_SOFTMAX:
            name = "--softmax";
            err = train_parse_float(optarg, &o->softmax);
            if (!err && !(o->softmax > 0.0f && o->softmax <= 100.0f))
                err = -ERANGE;
            break;
        case O_IGAIN:
            name = "--init-gain";
            err = train_parse_float(optarg, &o->init_gain);
            if (!err && !(o->init_gain > 0.0f && o->init_gain <= 10.0f))
                err = -ERANGE;
            break;
        case O_GPU: {
            uint32_t d = 0;
            name = "--gpu";
            err = train_parse_u32(optarg, &d);
            if (!err && d > 1024)
                err = -ERANGE;
            o->gpu = (int)d;
            break;
        }
        case O_KERNELS:
            name = "--gpu-kernels";
            o->unrolled = !strcmp(optarg, "unrolled");
            if (!o->unrolled && strcmp(optarg, "direct"))
                err = -EINVAL;
            break;
        case 'h': train_cnn_usage(stdout); return 1;
        default: return -EINVAL;     /* getopt printed why */
        }
        if (err) {
            fprintf(stderr, "neocog-train cnn: %s: not a valid value: '%s'\n", name, optarg);
            bad = 1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "neocog-train cnn: unexpected argument '%s'\n", argv[optind]);
        bad = 1;
    }
    if (!bad && !o->out) {
        fprintf(stderr, "neocog-train cnn: --out FILE is required\n");
        bad = 1;
    }
    if (!bad && o->adam && o->momentum > 0.0f) {
        fprintf(stderr, "neocog-train cnn: --adam with --momentum: Adam has its own (beta1)\n");
        bad = 1;
    }
    if (!bad && o->unrolled && o->gpu < 0) {
        fprintf(stderr, "neocog-train cnn: --gpu-kernels unrolled needs --gpu "
                        "(the CPU always multiplies unrolled products)\n");
        bad = 1;
    }
    if (!bad && (o->epochs == 0 || o->epochs > MAX_EPOCHS)) {
        fprintf(stderr, "neocog-train cnn: --epochs must be 1..%u\n", MAX_EPOCHS);
        bad = 1;
    }
    if (!bad && o->deform_custom) {
        const nc_deform_params p = nc_deform_params_scaled(&o->deform_base, o->deform_scale);
        if (nc_deform_params_check(&p)) {
            fprintf(stderr, "neocog-train cnn: --deform-params: out of range (shift 0..%u, "
                    "rotate 0..180, scale 0..0.9, shear 0..1, sigma 0..%g, alpha 0..%g, "
                    "after --deform-scale)\n", (unsigned)NC_DEFORM_MAX_DIM,
                    (double)NC_DEFORM_MAX_SIGMA, (double)NC_DEFORM_MAX_ALPHA);
            bad = 1;
        }
    }
    if (!bad && o->average_last > o->epochs) {
        fprintf(stderr, "neocog-train cnn: --average-last must be 1..--epochs (%u)\n", o->epochs);
        bad = 1;
    }
    if (!bad && o->average_last && o->keep_last) {
        fprintf(stderr, "neocog-train cnn: --average-last with --keep-last: the kept weights "
                "are the mean of the last epochs'\n");
        bad = 1;
    }
    if (!bad && (o->batch == 0 || o->batch > 4096)) {
        fprintf(stderr, "neocog-train cnn: --batch must be 1..4096\n");
        bad = 1;
    }
    if (!bad && !(o->lr > 0.0f && o->lr_decay > 0.0f && o->lr_decay <= 1.0f)) {
        fprintf(stderr, "neocog-train cnn: need --lr > 0 and 0 < --lr-decay <= 1\n");
        bad = 1;
    }
    if (!bad && !o->train_set && (o->val_set || o->test_set || o->data_note)) {
        fprintf(stderr, "neocog-train cnn: --val, --test and --data-note go with --train\n");
        bad = 1;
    }
    if (!bad && o->train_set && !o->test_set == !o->no_test) {
        fprintf(stderr, "neocog-train cnn: --train needs --test PREFIX or --no-test\n");
        bad = 1;
    }
    if (!bad && o->train_set && o->teacher) {
        fprintf(stderr, "neocog-train cnn: --teacher is for MNIST digits\n");
        bad = 1;
    }
    if (!bad && !o->train_set && o->validation >= MNIST_TRAIN) {
        fprintf(stderr, "neocog-train cnn: --validation must leave training digits\n");
        bad = 1;
    }
    if (!bad && (o->threads == 0 || o->threads > MAX_THREADS)) {
        fprintf(stderr, "neocog-train cnn: --threads must be 1..%u\n", MAX_THREADS);
        bad = 1;
    }
    if (!bad && o->gpu >= 0 && !NC_HAVE_CUDA) {
        fprintf(stderr, "neocog-train cnn: --gpu: this build has no CUDA engine\n");
        bad = 1;
    }
    if (!bad && o->softmax > 0.0f && o->teacher) {
        fprintf(stderr, "neocog-train cnn: --softmax with --teacher: the teacher's targets "
                "are squared-error targets\n");
        bad = 1;
    }
    if (!bad && o->init_gain > 0.0f && o->init) {
        fprintf(stderr, "neocog-train cnn: --init-gain with --init: the weights come from "
                "the file\n");
        bad = 1;
    }
    if (!bad && o->resume && !o->checkpoint) {
        fprintf(stderr, "neocog-train cnn: --resume needs --checkpoint FILE\n");
        bad = 1;
    }
    if (!bad && !o->train_set && !train_need_data_dir("neocog-train cnn", o->data))
        bad = 1;
    return bad ? -EINVAL : 0;
}

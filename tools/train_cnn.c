/* tools/train_cnn.c — `neocog-train cnn`: train one seed 000 CNN column on
 * MNIST (or another IDX character set) and write it as a model file.
 *
 * Layer: tools.  core/cnn does forward, back-propagation and SGD, core/data/deform
 * the distortions; this file owns the data split, the schedule, progress,
 * checkpoints and provenance.
 *
 * Procedure (seed 000 §4 unless noted):
 *  - Data: the MNIST training file is split into a training part (the first
 *    60000 - V digits, or only the first --limit of them) and a validation
 *    part, the LAST V digits (--validation, default 10000).  The 10000 test
 *    digits are read and checked before training but measured only after
 *    it, on the chosen model, once; they never influence any choice (with
 *    --no-test they are not read).  Other character sets (--train, e.g.
 *    neocog-unipen's 94 classes): the --train set is the training part,
 *    --val's images are appended as the validation part, --test is the test
 *    set; the classes file's labels go into the model file's record, and
 *    --arch's last layer must have one output per class.
 *  - Input: every digit goes through nc_prep_apply with the prep the model
 *    file records, NC_PREP_CNN_29 (size 29, box 20, pad 0; NC_PREP_MNIST_28
 *    for a 1x28x28 input), once at load time, so the daemon later feeds the
 *    model exactly what it was trained on.  On MNIST this is nearly the bare
 *    digit: the 28x28 layout (20 px box, centre of mass at (14, 14)) plus a
 *    zero column on the right and a zero row at the bottom, with the grey
 *    levels divided by the digit's brightest pixel rather than by 255.  (On
 *    the 10000 test digits: 89.8 % have a pixel at 255 and come out as
 *    pixels / 255 exactly; all but 3 equal pixels / max exactly; those 3
 *    have a 19 px box that the prep scales to 20.)
 *  - Deformations (--deform, default on): every training presentation is
 *    freshly distorted by core/data/deform with NC_DEFORM_MNIST (affine +
 *    elastic), its strengths times --deform-scale; validation and test
 *    digits never are.
 *  - Batch-normalised layers ("bn" in --arch; core/cnn/cnn.h): each batch is
 *    normalised with its own statistics while training; after every epoch
 *    train_norm.h measures each layer's fixed statistics over undeformed
 *    training digits, and the net folded with them (nc_cnn_fold_norm)
 *    answers validation and test and is the file written.  Checkpoints
 *    hold the normalised nets themselves.
 *  - Weights uniform in [-0.05, 0.05] from --seed (nc_cnn_init_weights), or
 *    with --init-gain G each layer's uniform with variance G^2 / fan-in and
 *    biases 0 (nc_cnn_init_fan_in; not the seed's: for deep nets of
 *    rectified units, the notation's "relu").
 *  - Mini-batch SGD (plain, --momentum or --adam: core's steps, which the
 *    engine's kernels round alike) on the BLAS path, or with --gpu N on the
 *    CUDA engine (gpu/cnn/cnn_engine.h: the training digits resident on the
 *    device, which deforms them itself with gpu/data/deform, the twin of
 *    core/data/deform, and runs a chunk of steps without waiting; the same steps
 *    as the CPU's to float rounding, as tests/gpu/test_deform and
 *    tests/gpu/test_cnn check).  nc_cnn sums gradients over a batch
 *    (not averages), so --lr keeps the seed's on-line meaning, a step per
 *    image: a batch of B moves the weights about as far as B on-line steps
 *    would, and no rescaling with --batch is needed.  Batch 16 (default)
 *    turns the convolutions into matrix products wide enough for BLAS while
 *    staying close to on-line training.
 *  - Loss: the seed's squared error against +1 / -1 targets (nc_cnn_loss),
 *    or with --softmax S the cross-entropy of softmax(S y) (nc_cnn_loss_softmax;
 *    not the seed's).  The network and its outputs are the same either way,
 *    so the model file does not change kind; its command records the loss.
 *  - Learning rate lr * decay^e in epoch e (0-based).  The seed's MNIST runs
 *    go from 1e-3 to 3e-5 in 500 epochs (decay 0.993); its NORB/CIFAR runs
 *    use 0.95, the default here, which suits runs of tens of epochs.
 *  - The training order is reshuffled every epoch from one splitmix64
 *    stream seeded from --seed; the same stream then gives the epoch's
 *    deformation seed, and the image at position p of the epoch draws its
 *    deformation from a stream of its own hashed from that seed and p
 *    (image_rng), so --threads workers (CPU) or one block per image (GPU)
 *    deform exactly the same images.  A run is reproducible whatever the
 *    thread count, and a resumed run continues the same streams.
 *  - After each epoch the validation error is measured; the weights of the
 *    epoch with the lowest validation error (the earliest on ties) are the
 *    ones saved ("test for best validation", seed 000 §4).  With
 *    --validation 0 the last epoch is kept; so it is with --keep-last,
 *    which still measures every epoch, so that the kept weights' validation
 *    error is an honest one (no epoch was picked on it).  Columns trained
 *    with deformations to the end and answered on several views gain from
 *    that: models/README.md, `cnn-single.ncm`.
 *  - --checkpoint FILE is rewritten atomically after every epoch; --resume
 *    continues from it.  A checkpoint is a model-format container (kind CNN)
 *    whose sections hold the current and the best network as complete model
 *    files (nc_cnn_save) plus the schedule state: see write_checkpoint(). */
#include "train_common.h"

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

/* OpenBLAS's thread control.  Declared here rather than taken from cblas.h
 * so that another CBLAS header cannot hide it. */
void openblas_set_num_threads(int num_threads);

#define DEFAULT_ARCH "1x29x29-20C4-MP2-40C5-MP3-150N-10N"
#define MNIST_SIDE 28u
#define MNIST_TRAIN 60000u
#define EVAL_BATCH 250u
#define NORM_DIGITS 10000u  /* training digits a normalised net's statistics see */
#define MAX_EPOCHS 100000u
#define CKPT_MAX_BYTES ((size_t)1 << 31)
#define MAX_THREADS 64u

/* Checkpoint sections (not info tags: see modelfile.h). */
#define TAG_CK_NET  NC_MF_TAG('C', 'K', 'N', 'T')  /* bytes: current net, a model file */
#define TAG_CK_BEST NC_MF_TAG('C', 'K', 'B', 'S')  /* bytes: best net, a model file */
#define TAG_CK_CONF NC_MF_TAG('C', 'K', 'C', 'F')  /* text: options that must match */
#define TAG_CK_STAT NC_MF_TAG('C', 'K', 'S', 'T')  /* u32: epochs done, best epoch */
#define TAG_CK_RNG  NC_MF_TAG('C', 'K', 'R', 'N')  /* u32: rng state, low then high */
#define TAG_CK_HIST NC_MF_TAG('C', 'K', 'H', 'I')  /* f64: per epoch, HIST_COLS values */
#define TAG_CK_VEL  NC_MF_TAG('C', 'K', 'V', 'L')  /* f32: --momentum's velocity [n_params] */
#define TAG_CK_ADM  NC_MF_TAG('C', 'K', 'A', 'M')  /* f32: --adam's first moments [n_params] */
#define TAG_CK_ADV  NC_MF_TAG('C', 'K', 'A', 'V')  /* f32: --adam's second moments */
#define TAG_CK_ADS  NC_MF_TAG('C', 'K', 'A', 'S')  /* u32: --adam's steps, low then high */

/* Adam's constants (Kingma & Ba 2015's, PyTorch's defaults) */
#define ADAM_BETA1 0.9f
#define ADAM_BETA2 0.999f
#define ADAM_EPS 1e-8f

typedef struct options {
    const char *arch;
    const char *data;
    const char *out;
    const char *checkpoint;
    uint32_t epochs;
    uint32_t batch;
    float lr;
    float lr_decay;
    uint32_t validation;
    int keep_last;          /* keep the last epoch, not validation's best */
    uint32_t average_last;  /* > 0: keep the mean of the last this many epochs' weights */
    uint32_t limit;         /* 0: all */
    int deform;
    float deform_scale;     /* strength of the deformations, 1 = deform_base */
    nc_deform_params deform_base;   /* NC_DEFORM_MNIST unless --deform-params */
    int deform_custom;      /* --deform-params given */
    int resume;
    uint64_t seed;
    uint32_t threads;
    int gpu;                /* CUDA device, or -1: the CPU */
    const char *extra;      /* IDX pair prefix of more training images */
    const char *init;       /* model file to start from instead of random weights */
    const char *teacher;    /* model file whose outputs become soft targets */
    float teacher_weight;   /* their share of the targets, 0..1 */
    float softmax;          /* > 0: softmax cross-entropy at this scale; 0: squared error */
    float init_gain;        /* > 0: nc_cnn_init_fan_in with this gain; 0: the seed's */
    float momentum;         /* > 0: SGD with momentum (nc_cnn_sgd_momentum) */
    int adam;               /* Adam (nc_cnn_adam) instead of SGD */
    int unrolled;           /* --gpu: convolutions by unrolling + cuBLAS, not direct kernels */
    int no_test;            /* --no-test: the test digits are not measured */
    const char *train_set;  /* --train PREFIX: an IDX set in place of MNIST's */
    const char *val_set;    /* --val PREFIX: its validation set */
    const char *test_set;   /* --test PREFIX: its test set */
    const char *data_note;  /* --data-note: where --train's images came from */
} options;

/* One row of the per-epoch table. */
enum { HIST_LR, HIST_LOSS, HIST_TRAIN_ERR, HIST_VALID_ERR, HIST_SECONDS, HIST_COLS };

typedef struct run_state {
    uint32_t epochs_done;
    uint32_t best_epoch;    /* 1-based; 0 = none yet */
    nc_deform_rng rng;
    double *hist;           /* [epochs][HIST_COLS] */
    float *velocity;        /* [n_params] with --momentum, else NULL */
    float *adam_m, *adam_v; /* [n_params] each with --adam, else NULL */
    uint64_t adam_step;     /* Adam steps taken */
} run_state;

static void usage(FILE *f)
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

static int parse_options(int argc, char **argv, options *o)
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
        case 'h': usage(stdout); return 1;
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

/* ---- input pipeline ---------------------------------------------------- */

/* Every digit of d through the model's preprocessing p, then net's own
 * input transform (a W<w> column's width normalisation; deformations come
 * after it, as in the seed's committees), once, into a malloc'd array of
 * count * plane floats: the network inputs, undeformed.  An empty image (no
 * ink; MNIST has none) becomes all zeros. */
static int prepare_inputs(const nc_dataset *d, const nc_prep *p, const nc_cnn *net,
                          float **ret_inputs)
{
    const size_t plane = nc_prep_out_len(p);
    float *inputs = malloc((size_t)d->count * plane * sizeof(float));
    if (!inputs)
        return -ENOMEM;
    for (uint32_t k = 0; k < d->count; k++) {
        nc_image img = { d->cols, d->rows, d->cols, d->pixels + (size_t)k * d->rows * d->cols };
        float *dst = inputs + (size_t)k * plane;
        int err = nc_prep_apply(&img, p, dst);
        if (err == -ENOENT) {
            memset(dst, 0, plane * sizeof(float));
        } else if (err) {
            free(inputs);
            return err;
        }
    }
    if (net->width_norm && d->count) {
        float *t = malloc((size_t)d->count * plane * sizeof(float));
        int err = t ? 0 : -ENOMEM;
        for (uint32_t k = 0; !err && k < d->count; k += NC_CNN_MAX_BATCH) {
            const uint32_t m = d->count - k < NC_CNN_MAX_BATCH ? d->count - k : NC_CNN_MAX_BATCH;
            err = nc_cnn_input_transform(net, inputs + (size_t)k * plane, m,
                                         t + (size_t)k * plane);
        }
        free(inputs);
        if (err) {
            free(t);
            return err;
        }
        inputs = t;
    }
    *ret_inputs = inputs;
    return 0;
}

/* Errors of net on inputs [first, first + count) (no deformation), on the
 * GPU engine g when there is one (it holds net's current params). */
static int count_errors(const nc_cnn *net, nc_cnn_work *w, void *g, const float *inputs,
                        const uint8_t *labels, uint32_t plane, uint32_t first,
                        uint32_t count, float *out, uint32_t *ret_errors)
{
    uint32_t errors = 0;
    for (uint32_t i = 0; i < count; i += EVAL_BATCH) {
        uint32_t n = count - i < EVAL_BATCH ? count - i : EVAL_BATCH;
        uint32_t e = 0;
        const float *in = inputs + (size_t)(first + i) * plane;
        int err;
#if NC_HAVE_CUDA
        if (g)
            err = nc_gpu_cnn_forward(g, in, n, out);
        else
#endif
            err = nc_cnn_forward_blas(net, w, in, n, out);
        (void)g;
        if (!err)
            err = nc_cnn_loss(net, out, labels + first + i, n, NULL, NULL, &e);
        if (err)
            return err;
        errors += e;
    }
    *ret_errors = errors;
    return 0;
}

/* ---- checkpoints ---------------------------------------------------------- */

/* The options a resumed run must share with the one that wrote the
 * checkpoint (everything that changes what the epochs compute). */
static void config_string(const options *o, char *dst, size_t cap)
{
    /* deform_scale, deform_params, keep_last, softmax, init_gain,
     * average_last and momentum only when not the default, so checkpoints
     * written before those options still resume; an average also fixes
     * --epochs, which places its window */
    char scale[48] = "", teacher[48] = "", softmax[48] = "", gain[48] = "", avg[64] = "";
    char dparams[160] = "", mom[48] = "", sets[2048] = "";
    if (o->train_set)
        snprintf(sets, sizeof sets, " train=%s val=%s", o->train_set,
                 o->val_set ? o->val_set : "-");
    if (o->momentum > 0.0f)
        snprintf(mom, sizeof(mom), " momentum=%.9g", (double)o->momentum);
    else if (o->adam)
        snprintf(mom, sizeof(mom), " adam=1");
    if (o->deform_custom) {
        const nc_deform_params *d = &o->deform_base;
        snprintf(dparams, sizeof(dparams), " deform_params=%.9g,%.9g,%.9g,%.9g,%.9g,%.9g",
                 (double)d->max_translate, (double)d->max_rotate_deg, (double)d->max_scale,
                 (double)d->max_shear, (double)d->elastic_sigma, (double)d->elastic_alpha);
    }
    if (o->deform_scale != 1.0f)
        snprintf(scale, sizeof(scale), " deform_scale=%.9g", (double)o->deform_scale);
    if (o->teacher)
        snprintf(teacher, sizeof(teacher), " teacher_weight=%.9g", (double)o->teacher_weight);
    if (o->softmax > 0.0f)
        snprintf(softmax, sizeof(softmax), " softmax=%.9g", (double)o->softmax);
    if (o->init_gain > 0.0f)
        snprintf(gain, sizeof(gain), " init_gain=%.9g", (double)o->init_gain);
    if (o->average_last)
        snprintf(avg, sizeof(avg), " average_last=%u epochs=%u", o->average_last, o->epochs);
    snprintf(dst, cap, "arch=%s batch=%u lr=%.9g lr_decay=%.9g validation=%u limit=%u "
             "deform=%d%s%s seed=%llu%s%s%s%s%s%s%s%s%s%s%s%s%s", o->arch, o->batch, (double)o->lr,
             (double)o->lr_decay, o->validation, o->limit, o->deform, scale, dparams,
             (unsigned long long)o->seed, o->keep_last ? " keep_last=1" : "",
             o->extra ? " extra=" : "", o->extra ? o->extra : "",
             o->init ? " init=" : "", o->init ? o->init : "", o->teacher ? " teacher=" : "",
             o->teacher ? o->teacher : "", teacher, softmax, gain, avg, mom, sets);
}

static int write_checkpoint(const char *path, const options *o, const nc_cnn *net,
                            const nc_cnn *best, const nc_model_info *info,
                            const run_state *st)
{
    nc_mf_writer *mw = NULL;
    uint8_t *net_buf = NULL, *best_buf = NULL, *buf = NULL;
    size_t net_len = 0, best_len = 0, len = 0;
    char conf[4096];
    uint32_t stat[2] = { st->epochs_done, st->best_epoch };
    uint32_t rng[2] = { (uint32_t)st->rng.state, (uint32_t)(st->rng.state >> 32) };
    config_string(o, conf, sizeof(conf));
    int err = nc_cnn_save(net, info, &net_buf, &net_len);
    if (!err)
        err = nc_cnn_save(best, info, &best_buf, &best_len);
    if (!err)
        err = nc_mf_writer_new(NC_MF_KIND_CNN, &mw);
    if (!err)
        err = nc_mf_put(mw, TAG_CK_NET, NC_MF_TYPE_BYTES, net_buf, net_len);
    if (!err)
        err = nc_mf_put(mw, TAG_CK_BEST, NC_MF_TYPE_BYTES, best_buf, best_len);
    if (!err)
        err = nc_mf_put_str(mw, TAG_CK_CONF, conf);
    if (!err)
        err = nc_mf_put_u32(mw, TAG_CK_STAT, stat, 2);
    if (!err)
        err = nc_mf_put_u32(mw, TAG_CK_RNG, rng, 2);
    if (!err)
        err = nc_mf_put_f64(mw, TAG_CK_HIST, st->hist, (size_t)st->epochs_done * HIST_COLS);
    if (!err && st->velocity)
        err = nc_mf_put_f32(mw, TAG_CK_VEL, st->velocity, net->n_params);
    if (!err && st->adam_m) {
        const uint32_t steps[2] = { (uint32_t)st->adam_step, (uint32_t)(st->adam_step >> 32) };
        err = nc_mf_put_f32(mw, TAG_CK_ADM, st->adam_m, net->n_params);
        if (!err)
            err = nc_mf_put_f32(mw, TAG_CK_ADV, st->adam_v, net->n_params);
        if (!err)
            err = nc_mf_put_u32(mw, TAG_CK_ADS, steps, 2);
    }
    if (!err)
        err = nc_mf_finish(mw, &buf, &len);
    if (!err)
        err = nc_file_write_atomic(path, buf, len);
    if (err)
        fprintf(stderr, "neocog-train cnn: writing checkpoint %s: %s\n", path, nc_strerror(err));
    nc_mf_writer_free(mw);
    free(net_buf);
    free(best_buf);
    free(buf);
    return err;
}

/* Copy the weights of a model file stored in section tag into net, which
 * must have the same architecture. */
static int load_ck_net(const nc_mf_reader *r, uint32_t tag, nc_cnn *net)
{
    const void *data;
    size_t n;
    uint32_t type;
    nc_cnn *got = NULL;
    char a[NC_CNN_ARCH_MAX], b[NC_CNN_ARCH_MAX];
    int err = nc_mf_get(r, tag, &type, &data, &n);
    if (!err && type != NC_MF_TYPE_BYTES)
        err = -EBADMSG;
    if (!err)
        err = nc_cnn_load(data, n, &got, NULL);
    if (!err)
        err = nc_cnn_arch_format(got, a, sizeof(a));
    if (!err)
        err = nc_cnn_arch_format(net, b, sizeof(b));
    if (!err && (strcmp(a, b) || got->n_params != net->n_params))
        err = -EBADMSG;
    if (!err)
        memcpy(net->params, got->params, net->n_params * sizeof(float));
    nc_cnn_free(got);
    return err;
}

/* dst[n] = a checkpoint's f32 section of exactly n values. */
static int read_ck_params(const nc_mf_reader *r, uint32_t tag, float *dst, size_t n)
{
    size_t have = 0;
    int err = nc_mf_count(r, tag, NC_MF_TYPE_F32, &have);
    if (!err && have != n)
        err = -EBADMSG;
    return err ? err : nc_mf_get_f32(r, tag, dst, n);
}

static int read_checkpoint(const char *path, const options *o, nc_cnn *net,
                           nc_cnn *best, run_state *st)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_mf_reader *r = NULL;
    char conf[4096], want[4096];
    uint32_t stat[2], rng[2];
    size_t n_hist = 0;
    config_string(o, want, sizeof(want));
    int err = nc_file_read(path, CKPT_MAX_BYTES, &buf, &len);
    if (!err)
        err = nc_mf_open(buf, len, &r);
    if (!err)
        err = nc_mf_get_str(r, TAG_CK_CONF, conf, sizeof(conf));
    if (!err && strcmp(conf, want)) {
        fprintf(stderr, "neocog-train cnn: checkpoint %s was written with other options:\n"
                "  checkpoint: %s\n  now:        %s\n", path, conf, want);
        err = -EINVAL;
        goto out;
    }
    if (!err)
        err = nc_mf_get_u32(r, TAG_CK_STAT, stat, 2);
    if (!err)
        err = nc_mf_get_u32(r, TAG_CK_RNG, rng, 2);
    if (!err && (stat[0] == 0 || stat[0] > MAX_EPOCHS || stat[1] > stat[0]))
        err = -EBADMSG;
    if (!err)
        err = nc_mf_count(r, TAG_CK_HIST, NC_MF_TYPE_F64, &n_hist);
    if (!err && n_hist != (size_t)stat[0] * HIST_COLS)
        err = -EBADMSG;
    if (!err) {
        /* hist was sized for o->epochs; a checkpoint may hold more, and
         * the rows still to come must fit too. */
        size_t rows = stat[0] > o->epochs ? stat[0] : o->epochs;
        double *h = realloc(st->hist, rows * HIST_COLS * sizeof(double));
        if (!h)
            err = -ENOMEM;
        else
            st->hist = h;
    }
    if (!err)
        err = nc_mf_get_f64(r, TAG_CK_HIST, st->hist, n_hist);
    if (!err)
        err = load_ck_net(r, TAG_CK_NET, net);
    if (!err)
        err = load_ck_net(r, TAG_CK_BEST, best);
    /* the options matched, so the optimiser's state is there */
    if (!err && st->velocity)
        err = read_ck_params(r, TAG_CK_VEL, st->velocity, net->n_params);
    if (!err && st->adam_m) {
        uint32_t steps[2];
        err = read_ck_params(r, TAG_CK_ADM, st->adam_m, net->n_params);
        if (!err)
            err = read_ck_params(r, TAG_CK_ADV, st->adam_v, net->n_params);
        if (!err)
            err = nc_mf_get_u32(r, TAG_CK_ADS, steps, 2);
        if (!err)
            st->adam_step = (uint64_t)steps[0] | (uint64_t)steps[1] << 32;
    }
    if (!err) {
        st->epochs_done = stat[0];
        st->best_epoch = stat[1];
        st->rng.state = (uint64_t)rng[0] | (uint64_t)rng[1] << 32;
    }
    if (err)
        fprintf(stderr, "neocog-train cnn: reading checkpoint %s: %s\n", path, nc_strerror(err));
out:
    nc_mf_close(r);
    free(buf);
    return err;
}

/* ---- one epoch -------------------------------------------------------------- */

/* Images go through training CHUNK_MIN (rounded up to whole mini-batches) at
 * a time.  On the CPU, --threads worker threads deform the next chunk while
 * BLAS trains the current one; on the GPU the device deforms each chunk
 * itself, and the host only sends positions and stream states. */
#define CHUNK_MIN 4096u

typedef struct trainer {
    const options *o;
    const float *inputs;    /* [n_train][side * side], preprocessed */
    const uint8_t *labels;  /* [n_train] */
    const float *targets;   /* [n_train][n_classes] soft targets (--teacher), or NULL */
    uint32_t n_classes;     /* the net's outputs */
    uint32_t n_train;       /* the pool: MNIST digits 0.., then any --extra */
    uint32_t side;
    nc_cnn *net;
    nc_cnn_work *w;
    nc_deform **deform;     /* [o->threads]; NULL without --deform */
    uint32_t *order;        /* [n_train] */
    uint32_t chunk;         /* images per chunk, a multiple of the batch */
    float *chunk_in[2];     /* [chunk][plane], one being filled, one trained */
    uint8_t *chunk_labels[2];
    float *chunk_targets[2];    /* [chunk][n_classes], with targets only */
    float *out, *d_out, *grads;
    run_state *st;          /* the optimiser's state: velocity, Adam's moments */
    void *gpu;              /* nc_gpu_cnn; NULL: train on the CPU */
    uint64_t *state;        /* [chunk]: the GPU's per-image rng states */
    int live;               /* stderr is a terminal: show a live line */
} trainer;

/* The deformation stream of the image at position pos of an epoch: its own
 * splitmix64 state, hashed from the epoch's seed and pos, so that any number
 * of threads draws exactly the same images (core/data/deform's draws of one image
 * are sequential; images are independent). */
static nc_deform_rng image_rng(uint64_t epoch_seed, uint32_t pos)
{
    nc_deform_rng h = { epoch_seed + pos };
    return (nc_deform_rng){ nc_deform_rng_next(&h) };
}

typedef struct fill_job {
    const trainer *t;
    nc_deform *deform;      /* this thread's scratch; NULL: copy */
    uint64_t epoch_seed;
    uint32_t first, count;  /* positions in the epoch's order */
    uint32_t base;          /* position of the chunk's first image */
    float *in;              /* the chunk's buffers */
    uint8_t *labels;
    float *targets;         /* NULL without --teacher */
    int err;
} fill_job;

static void *fill_run(void *arg)
{
    fill_job *j = arg;
    const trainer *t = j->t;
    const uint32_t plane = t->side * t->side;
    for (uint32_t pos = j->first; pos < j->first + j->count && !j->err; pos++) {
        const uint32_t k = t->order[pos];
        const float *src = t->inputs + (size_t)k * plane;
        float *dst = j->in + (size_t)(pos - j->base) * plane;
        j->labels[pos - j->base] = t->labels[k];
        if (j->targets)
            memcpy(j->targets + (size_t)(pos - j->base) * t->n_classes,
                   t->targets + (size_t)k * t->n_classes, t->n_classes * sizeof(float));
        if (j->deform) {
            nc_deform_rng r = image_rng(j->epoch_seed, pos);
            j->err = nc_deform_apply(j->deform, &r, src, dst);
        } else {
            memcpy(dst, src, plane * sizeof(float));
        }
    }
    return NULL;
}

/* Images [first, first + count) of the epoch's order into buffer slot,
 * split over the worker threads, which are started here and joined by
 * fill_join.  A thread that cannot start leaves its share to the caller's
 * thread (in fill_join), so nothing is lost. */
typedef struct filler {
    pthread_t tid[MAX_THREADS];
    int started[MAX_THREADS];
    fill_job job[MAX_THREADS];
    uint32_t n_jobs;
} filler;

static void fill_start(filler *f, const trainer *t, uint64_t epoch_seed, uint32_t first,
                       uint32_t count, int slot)
{
    uint32_t n = t->o->threads < count ? t->o->threads : count;
    f->n_jobs = n;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a = (uint32_t)((uint64_t)count * i / n), b = (uint32_t)((uint64_t)count * (i + 1) / n);
        f->job[i] = (fill_job){ .t = t, .deform = t->deform ? t->deform[i] : NULL,
                                .epoch_seed = epoch_seed, .first = first + a, .count = b - a,
                                .base = first, .in = t->chunk_in[slot],
                                .labels = t->chunk_labels[slot],
                                .targets = t->targets ? t->chunk_targets[slot] : NULL };
        f->started[i] = pthread_create(&f->tid[i], NULL, fill_run, &f->job[i]) == 0;
    }
}

static int fill_join(filler *f)
{
    int err = 0;
    for (uint32_t i = 0; i < f->n_jobs; i++) {
        if (f->started[i])
            pthread_join(f->tid[i], NULL);
        else
            fill_run(&f->job[i]);
        if (!err)
            err = f->job[i].err;
    }
    f->n_jobs = 0;
    return err;
}

/* One SGD step per mini-batch of the chunk's n images; loss and errors
 * added to *loss, *errors. */
static int train_chunk(trainer *t, int slot, uint32_t n, float lr, double *loss,
                       uint32_t *errors)
{
    const uint32_t plane = t->side * t->side, B = t->o->batch;
    for (uint32_t i = 0; i < n; i += B) {
        const uint32_t nb = n - i < B ? n - i : B;
        const float *in = t->chunk_in[slot] + (size_t)i * plane;
        const uint8_t *labels = t->chunk_labels[slot] + i;
        const float *targets =
            t->targets ? t->chunk_targets[slot] + (size_t)i * t->n_classes : NULL;
        /* nc_cnn_train_step without hiding the outputs, so the training
         * error comes for free. */
        double l = 0.0;
        uint32_t e = 0;
        int err = nc_cnn_forward_blas(t->net, t->w, in, nb, t->out);
        if (!err)
            err = t->o->softmax > 0.0f
                      ? nc_cnn_loss_softmax(t->net, t->out, labels, nb, t->o->softmax, t->d_out,
                                            &l, &e)
                      : nc_cnn_loss_targets(t->net, t->out, labels, targets, nb, t->d_out, &l,
                                            &e);
        if (!err)
            err = nc_cnn_backward_blas(t->net, t->w, in, nb, t->d_out, t->grads);
        if (!err && t->o->adam)
            err = nc_cnn_adam(t->net, t->grads, t->st->adam_m, t->st->adam_v,
                              ++t->st->adam_step, lr, ADAM_BETA1, ADAM_BETA2, ADAM_EPS);
        else if (!err)
            err = t->st->velocity ? nc_cnn_sgd_momentum(t->net, t->grads, t->st->velocity, lr,
                                                        t->o->momentum)
                                  : nc_cnn_sgd(t->net, t->grads, lr);
        if (err)
            return err;
        if (!isfinite(l))
            return -ERANGE;         /* diverged: a smaller --lr is needed */
        *loss += l;
        *errors += e;
    }
    return 0;
}

#if NC_HAVE_CUDA
/* The GPU's epoch: the training images live on the device, which deforms
 * them itself (gpu/data/deform.cuh) from the same per-image streams, so the host
 * only sends positions and stream states, a chunk at a time. */
static int train_chunk_gpu(trainer *t, uint64_t epoch_seed, uint32_t first, uint32_t n,
                           float lr, double *loss, uint32_t *errors)
{
    for (uint32_t i = 0; i < n; i++)
        t->state[i] = image_rng(epoch_seed, first + i).state;
    double l = 0.0;
    uint32_t e = 0;
    int err = nc_gpu_cnn_train_indexed(t->gpu, t->order + first, t->state, n, t->o->batch, lr,
                                       &l, &e);
    if (err)
        return err;
    *loss += l;
    *errors += e;
    return isfinite(l) ? 0 : -ERANGE;
}
#endif

static int train_epoch(trainer *t, run_state *st, float lr, double *ret_loss,
                       uint32_t *ret_errors)
{
    double loss_sum = 0.0, t0 = train_now(), last_live = t0;
    uint32_t errors = 0;

    /* Fisher-Yates shuffle from the run's stream, then the epoch's seed for
     * the deformations from the same stream. */
    for (uint32_t i = t->n_train - 1; i > 0; i--) {
        uint32_t j = nc_deform_rng_below(&st->rng, i + 1);
        uint32_t tmp = t->order[i];
        t->order[i] = t->order[j];
        t->order[j] = tmp;
    }
    const uint64_t epoch_seed = nc_deform_rng_next(&st->rng);

    filler f = { .n_jobs = 0 };
    int slot = 0, err = 0;
    uint32_t first_n = t->n_train < t->chunk ? t->n_train : t->chunk;
    if (!t->gpu)
        fill_start(&f, t, epoch_seed, 0, first_n, slot);
    for (uint32_t c = 0; c < t->n_train; c += t->chunk) {
        const uint32_t n = t->n_train - c < t->chunk ? t->n_train - c : t->chunk;
#if NC_HAVE_CUDA
        if (t->gpu) {
            if ((err = train_chunk_gpu(t, epoch_seed, c, n, lr, &loss_sum, &errors)))
                break;
            goto progress;
        }
#endif
        if ((err = fill_join(&f)))
            break;
        const uint32_t next = c + t->chunk;
        if (next < t->n_train)
            fill_start(&f, t, epoch_seed, next,
                       t->n_train - next < t->chunk ? t->n_train - next : t->chunk, !slot);
        if ((err = train_chunk(t, slot, n, lr, &loss_sum, &errors)))
            break;
        slot = !slot;
#if NC_HAVE_CUDA
progress:
#endif

        if (t->live) {
            double now = train_now();
            if (now - last_live >= 0.5) {
                uint32_t done = c + n;
                double rate = done / (now - t0);
                char eta[32];
                train_format_duration((t->n_train - done) / rate, eta, sizeof(eta));
                fprintf(stderr, "\r  epoch %u: %5.1f%%  loss %.4f  train %.2f%%  %.0f img/s  "
                        "epoch ETA %s   ", st->epochs_done + 1, 100.0 * done / t->n_train,
                        loss_sum / done, 100.0 * errors / done, rate, eta);
                last_live = now;
            }
        }
    }
    int join_err = fill_join(&f);   /* a chunk still being filled after a failure */
    if (!err)
        err = join_err;
    if (t->live)
        fprintf(stderr, "\r%*s\r", 100, "");
    if (err)
        return err;
    *ret_loss = loss_sum / t->n_train;
    *ret_errors = errors;
    return 0;
}

/* ---- extra training images and a starting point ---------------------------- */

/* --init FILE: its weights into net, which must have the same architecture
 * (a one-column model file). */
static int load_init(const char *path, nc_cnn *net)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_cnn *got = NULL;
    char a[NC_CNN_ARCH_MAX], b[NC_CNN_ARCH_MAX];
    int err = nc_file_read_model(path, CKPT_MAX_BYTES, &buf, &len);
    if (!err)
        err = nc_cnn_load(buf, len, &got, NULL);
    free(buf);
    if (err) {
        fprintf(stderr, "neocog-train cnn: --init %s: %s\n", path, nc_strerror(err));
        return err;
    }
    nc_cnn_arch_format(got, a, sizeof(a));
    nc_cnn_arch_format(net, b, sizeof(b));
    if (strcmp(a, b) || got->n_params != net->n_params) {
        fprintf(stderr, "neocog-train cnn: --init %s is %s, not %s\n", path, a, b);
        nc_cnn_free(got);
        return -EINVAL;
    }
    memcpy(net->params, got->params, net->n_params * sizeof(float));
    nc_cnn_free(got);
    return 0;
}

/* --extra PREFIX: PREFIX-images-idx3-ubyte and PREFIX-labels-idx1-ubyte, 28x28
 * images with labels below n_classes, as neocog-streamgen --patches writes them. */
#define EXTRA_MAX_BYTES ((size_t)1 << 31)
static int load_extra(const char *prefix, uint32_t n_classes, nc_dataset *ret)
{
    char pi[1024], pl[1024];
    snprintf(pi, sizeof(pi), "%s-images-idx3-ubyte", prefix);
    snprintf(pl, sizeof(pl), "%s-labels-idx1-ubyte", prefix);
    int err = nc_file_read_idx(pi, pl, EXTRA_MAX_BYTES, ret);
    if (err) {
        fprintf(stderr, "neocog-train cnn: --extra %s: %s\n", prefix, nc_strerror(err));
        return err;
    }
    if (ret->rows != MNIST_SIDE || ret->cols != MNIST_SIDE || ret->count == 0) {
        fprintf(stderr, "neocog-train cnn: --extra %s: not 28x28 images\n", prefix);
        return -EINVAL;
    }
    for (uint32_t i = 0; i < ret->count; i++)
        if (ret->labels[i] >= n_classes) {
            fprintf(stderr, "neocog-train cnn: --extra %s: label %u is %u\n", prefix, i,
                    ret->labels[i]);
            return -EINVAL;
        }
    return 0;
}

/* The training pool: MNIST's first n_mnist prepared inputs, then the extra
 * images through the same prep; t's inputs and labels point at it. */
static int make_pool(trainer *t, const float *mnist_inputs, const uint8_t *mnist_labels,
                     uint32_t n_mnist, const nc_dataset *extra, const nc_prep *prep,
                     float **ret_inputs, uint8_t **ret_labels)
{
    const size_t plane = nc_prep_out_len(prep);
    float *extra_inputs = NULL;
    int err = prepare_inputs(extra, prep, t->net, &extra_inputs);
    if (err)
        return err;
    float *in = malloc(((size_t)n_mnist + extra->count) * plane * sizeof(float));
    uint8_t *lab = malloc((size_t)n_mnist + extra->count);
    if (!in || !lab) {
        free(in);
        free(lab);
        free(extra_inputs);
        return -ENOMEM;
    }
    memcpy(in, mnist_inputs, (size_t)n_mnist * plane * sizeof(float));
    memcpy(in + (size_t)n_mnist * plane, extra_inputs, (size_t)extra->count * plane * sizeof(float));
    memcpy(lab, mnist_labels, n_mnist);
    memcpy(lab + n_mnist, extra->labels, extra->count);
    free(extra_inputs);
    t->inputs = *ret_inputs = in;
    t->labels = *ret_labels = lab;
    return 0;
}

/* ---- sets other than MNIST -------------------------------------------------- */

static int same_classes(const char *what, const train_classes *a, const train_classes *b)
{
    if (a->n == b->n && !memcmp(a->label, b->label, sizeof a->label))
        return 0;
    fprintf(stderr, "neocog-train cnn: %s's classes file differs from --train's\n", what);
    return -EINVAL;
}

/* --train, --val and --test: the training images with the validation
 * images appended (so that validation is the pool's last o->validation
 * images, as MNIST's is), and the test set; their classes files must
 * agree.  Sets o->validation to --val's count (0 without it). */
static int load_sets(options *o, nc_dataset *train, nc_dataset *test, train_classes *classes)
{
    static const char who[] = "neocog-train cnn";
    nc_dataset val = { 0 };
    train_classes c2;
    int err = train_load_idx_set(who, o->train_set, train, classes);
    if (!err && o->val_set && !(err = train_load_idx_set(who, o->val_set, &val, &c2)) &&
        !(err = same_classes("--val", classes, &c2))) {
        const size_t plane = (size_t)train->rows * train->cols;
        const uint32_t n = train->count + val.count;
        uint8_t *px = realloc(train->pixels, n * plane), *lab = px ? realloc(train->labels, n)
                                                                   : NULL;
        if (px)
            train->pixels = px;
        if (lab)
            train->labels = lab;
        if (!px || !lab) {
            err = -ENOMEM;
        } else {
            memcpy(px + (size_t)train->count * plane, val.pixels, (size_t)val.count * plane);
            memcpy(lab + train->count, val.labels, val.count);
            train->count = n;
        }
    }
    o->validation = o->val_set ? val.count : 0;
    nc_dataset_fini(&val);
    if (!err && o->test_set && !(err = train_load_idx_set(who, o->test_set, test, &c2)))
        err = same_classes("--test", classes, &c2);
    if (err)
        fprintf(stderr, "%s: %s\n", who, nc_strerror(err));
    return err;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The record's data field for --train: the note, the sets and their counts. */
static void describe_sets(const options *o, uint32_t n_train, uint32_t n_valid,
                          const char *extra_note, const char *deformed, char *dst, size_t cap)
{
    char valid[160] = " (no validation)";
    if (o->val_set)
        snprintf(valid, sizeof valid, " (validation %s, %u)", base_name(o->val_set), n_valid);
    snprintf(dst, cap, "%s%s%s 0-%u%s%s%s", o->data_note ? o->data_note : "",
             o->data_note ? ": " : "", base_name(o->train_set), n_train - 1, extra_note, valid,
             deformed);
}

/* ---- the command ----------------------------------------------------------- */

/* What answers for net, and its errors on the validation digits (none for
 * count 0): net itself, or for a normalised net (tn) its fold with
 * statistics measured now over the first norm_digits inputs.  g: the
 * training engine holding net's params, or NULL on the CPU (with w). */
static int measure_and_validate(train_norm *tn, nc_cnn *net, void *g, nc_cnn_work *w,
                                const float *inputs, uint32_t norm_digits,
                                const uint8_t *labels, uint32_t plane, uint32_t first,
                                uint32_t count, float *out, uint32_t *ret_errors)
{
    const nc_cnn *vnet = net;
    nc_cnn_work *vw = w;
    void *vg = g;
    int err = 0;
    *ret_errors = 0;
    if (tn && ((err = train_norm_measure(tn, net, g, w, inputs, norm_digits)) ||
               (err = train_norm_fold(tn, net, &vnet, &vw, &vg))))
        return err;
    return count ? count_errors(vnet, vw, vg, inputs, labels, plane, first, count, out,
                                ret_errors)
                 : 0;
}

/* best->params = the mean of k weight sets, of which best holds the mean of
 * the first k - 1 and net the k-th (k = 1: a copy).  A normalised net's
 * statistics are averaged too; the caller measures them again. */
static void average_into(nc_cnn *best, const nc_cnn *net, uint32_t k)
{
    if (k == 1) {
        memcpy(best->params, net->params, net->n_params * sizeof(float));
        return;
    }
    const float f = 1.0f / (float)k;
    for (size_t i = 0; i < net->n_params; i++)
        best->params[i] += (net->params[i] - best->params[i]) * f;
}

/* avg_first: the first epoch (1-based) of --average-last's window, 0 for
 * none: those epochs are marked instead of the kept one. */
static void print_table(const run_state *st, uint32_t n_valid, uint32_t avg_first)
{
    fprintf(stderr, "\n epoch        lr      loss  train err  valid err   time\n");
    for (uint32_t e = 0; e < st->epochs_done; e++) {
        const double *h = st->hist + (size_t)e * HIST_COLS;
        char valid[16];
        if (n_valid)
            snprintf(valid, sizeof(valid), "%8.2f%%", 100.0 * h[HIST_VALID_ERR]);
        else
            snprintf(valid, sizeof(valid), "%9s", "-");
        fprintf(stderr, " %5u  %8.2e  %8.5f  %8.2f%%  %s  %5.0fs%s\n", e + 1, h[HIST_LR],
                h[HIST_LOSS], 100.0 * h[HIST_TRAIN_ERR], valid, h[HIST_SECONDS],
                avg_first ? (e + 1 >= avg_first ? "  <- averaged" : "")
                          : (e + 1 == st->best_epoch ? "  <- kept" : ""));
    }
}

int train_cnn_main(int argc, char **argv, const train_cmdline *cmd)
{
    options o;
    int err = parse_options(argc, argv, &o);

    if (err > 0)
        return TRAIN_EXIT_OK;       /* --help */
    if (err) {
        usage(stderr);
        return TRAIN_EXIT_USAGE;
    }

    int status = TRAIN_EXIT_FAIL;
    const nc_deform_params dparams = nc_deform_params_scaled(&o.deform_base, o.deform_scale);
    nc_dataset train = { 0 }, test = { 0 }, extra = { 0 };
    float *pool_inputs = NULL, *teacher_targets = NULL;
    uint8_t *pool_labels = NULL;
    nc_cnn *net = NULL, *best = NULL;
    nc_cnn_work *w = NULL, *ew = NULL;
    train_norm *tn = NULL;  /* a batch-normalised --arch: its statistics and fold */
    float *train_inputs = NULL;
    trainer t = { .o = &o };
    run_state st = { 0 };
    uint8_t *model = NULL;
    size_t model_len = 0;
    nc_model_info info;
    memset(&info, 0, sizeof(info));
    const char *dir = train_data_dir(o.data);

    openblas_set_num_threads((int)o.threads);

    if ((err = nc_cnn_new(o.arch, &net)) || (err = nc_cnn_new(o.arch, &best))) {
        fprintf(stderr, "neocog-train cnn: --arch %s: %s\n", o.arch, nc_strerror(err));
        goto out;
    }
    const nc_cnn_layer *in_layer = &net->layers[0];
    if (in_layer->maps != 1 || in_layer->height != in_layer->width ||
        (in_layer->width != 28 && in_layer->width != 29)) {
        fprintf(stderr, "neocog-train cnn: --arch %s: 28x28 images need a 1x28x28 or 1x29x29 "
                "input\n", o.arch);
        goto out;
    }
    if (o.teacher && net->width_norm) {
        /* not tried: the teacher now prepares the digits itself (train_scores_run),
         * so the student's transformed inputs would not stand in its way */
        fprintf(stderr, "neocog-train cnn: --teacher with a width-normalised --arch (W%u) "
                "is not supported\n", net->width_norm);
        goto out;
    }
    t.side = in_layer->width;
    const uint32_t plane = t.side * t.side;

    /* The classes: MNIST's digits, or --train's classes file, which --val's
     * and --test's must repeat; --arch's last layer has one output each. */
    train_classes classes;
    train_classes_digits(&classes);
    /* The test digits are read and checked now, so that a missing or bad
     * file is said before training rather than after it (the model would
     * not be written); they are measured only at the end. */
    if (o.train_set) {
        if (load_sets(&o, &train, &test, &classes))
            goto out;
    } else {
        if (train_load_mnist_checked("cnn", dir, "train", MNIST_TRAIN, &train))
            goto out;
        if (!o.no_test && train_load_mnist_checked("cnn", dir, "t10k", 0, &test))
            goto out;
    }
    const uint32_t K = classes.n;
    if (net->n_outputs != K) {
        fprintf(stderr, "neocog-train cnn: --arch %s has %u outputs, the data %u classes\n",
                o.arch, net->n_outputs, K);
        goto out;
    }
    /* the pool's training part first, validation last (load_sets appends
     * --val's images after --train's) */
    const uint32_t valid_first = train.count - o.validation;
    const uint32_t n_mnist = o.limit && o.limit < valid_first ? o.limit : valid_first;
    if (o.extra && load_extra(o.extra, K, &extra))
        goto out;
    t.n_train = n_mnist + extra.count;
    t.n_classes = K;
    t.net = net;
    t.live = isatty(STDERR_FILENO);

    /* Provenance; test_error is filled in at the end. */
    info.n_classes = K;
    memcpy(info.labels, classes.label, sizeof classes.label);
    info.prep = t.side == 29 ? NC_PREP_CNN_29 : NC_PREP_MNIST_28;
    char extra_note[160] = "";
    if (o.extra)
        snprintf(extra_note, sizeof(extra_note), " + %u images of %s", extra.count, o.extra);
    if (o.init) {
        size_t used = strlen(extra_note);
        snprintf(extra_note + used, sizeof(extra_note) - used, ", starting from %s", o.init);
    }
    if (o.teacher) {
        size_t used = strlen(extra_note);
        snprintf(extra_note + used, sizeof(extra_note) - used, ", towards %s (weight %g)",
                 o.teacher, (double)o.teacher_weight);
    }
    char deformed[192] = "";
    if (o.deform && o.deform_custom)
        snprintf(deformed, sizeof deformed, ", deformed (shift %g, rotate %g, scale %g, "
                 "shear %g, sigma %g, alpha %g)", (double)dparams.max_translate,
                 (double)dparams.max_rotate_deg, (double)dparams.max_scale,
                 (double)dparams.max_shear, (double)dparams.elastic_sigma,
                 (double)dparams.elastic_alpha);
    else if (o.deform && o.deform_scale == 1.0f)
        snprintf(deformed, sizeof deformed, ", deformed");
    else if (o.deform && o.deform_scale > 0.0f)
        snprintf(deformed, sizeof deformed, ", deformed x %g", (double)o.deform_scale);
    if (o.train_set)
        describe_sets(&o, n_mnist, o.validation, extra_note, deformed, info.data,
                      sizeof info.data);
    else if (o.validation)
        snprintf(info.data, sizeof(info.data), "MNIST train 0-%u%s (validation %u-%u)%s",
                 n_mnist - 1, extra_note, valid_first, MNIST_TRAIN - 1, deformed);
    else
        snprintf(info.data, sizeof(info.data), "MNIST train 0-%u%s (no validation)%s",
                 n_mnist - 1, extra_note, deformed);
    if (train_join_argv(cmd, info.command, sizeof(info.command)))
        fprintf(stderr, "neocog-train cnn: warning: command line truncated in the model file\n");
    info.seed = o.seed;
    info.test_error = -1.0;

    /* Buffers. */
    uint32_t max_batch = o.batch > EVAL_BATCH ? o.batch : EVAL_BATCH;
    if ((err = nc_cnn_work_new(net, o.batch, &w)) || (err = nc_cnn_work_new(net, EVAL_BATCH, &ew)))
        goto fail;
    if (nc_cnn_norm_layers(net) && (err = train_norm_new(net, o.gpu, o.unrolled, EVAL_BATCH, &tn)))
        goto fail;
    /* a normalised net's fixed statistics: over the first training digits,
       undeformed (what validation and test digits look like), in whole
       batches of EVAL_BATCH (train_norm_measure) */
    const uint32_t norm_digits = n_mnist >= NORM_DIGITS  ? NORM_DIGITS
                                 : n_mnist >= EVAL_BATCH ? n_mnist / EVAL_BATCH * EVAL_BATCH
                                                         : n_mnist;
    t.w = w;
    t.chunk = (CHUNK_MIN + o.batch - 1) / o.batch * o.batch;
    t.order = malloc((size_t)t.n_train * sizeof(uint32_t));
    t.out = malloc((size_t)max_batch * K * sizeof(float));
    t.d_out = malloc((size_t)o.batch * K * sizeof(float));
    t.grads = malloc(net->n_params * sizeof(float));
    t.st = &st;
    if (o.momentum > 0.0f && !(st.velocity = calloc(net->n_params, sizeof(float)))) {
        err = -ENOMEM;
        goto fail;
    }
    if (o.adam && (!(st.adam_m = calloc(net->n_params, sizeof(float))) ||
                   !(st.adam_v = calloc(net->n_params, sizeof(float))))) {
        err = -ENOMEM;
        goto fail;
    }
    st.hist = calloc((size_t)o.epochs * HIST_COLS, sizeof(double));
    for (int i = 0; i < 2; i++) {
        t.chunk_in[i] = malloc((size_t)t.chunk * plane * sizeof(float));
        t.chunk_labels[i] = malloc(t.chunk);
        if (o.teacher && !(t.chunk_targets[i] = malloc((size_t)t.chunk * K * sizeof(float)))) {
            err = -ENOMEM;
            goto fail;
        }
    }
    t.state = malloc((size_t)t.chunk * sizeof(uint64_t));
    if (!t.order || !t.out || !t.d_out || !t.grads || !st.hist || !t.chunk_in[0] ||
        !t.chunk_in[1] || !t.chunk_labels[0] || !t.chunk_labels[1] || !t.state) {
        err = -ENOMEM;
        goto fail;
    }
    for (uint32_t i = 0; i < t.n_train; i++)
        t.order[i] = i;
    if (o.deform) {
        if (!(t.deform = calloc(o.threads, sizeof(*t.deform)))) {
            err = -ENOMEM;
            goto fail;
        }
        for (uint32_t i = 0; i < o.threads; i++)
            if ((err = nc_deform_new(&dparams, t.side, t.side, &t.deform[i])))
                goto fail;
    }

    if ((err = prepare_inputs(&train, &info.prep, net, &train_inputs)))
        goto fail;
    t.inputs = train_inputs;
    t.labels = train.labels;
    if (o.extra && (err = make_pool(&t, train_inputs, train.labels, n_mnist, &extra, &info.prep,
                                    &pool_inputs, &pool_labels)))
        goto fail;
    if (o.teacher) {
        /* the pool's order: MNIST digits 0.., then any --extra (make_pool) */
        err = train_teacher_targets(o.teacher, &info.prep, plane, K, &train, n_mnist,
                                    o.extra ? &extra : NULL, extra.count, o.teacher_weight,
                                    o.threads, &teacher_targets);
        openblas_set_num_threads((int)o.threads);   /* train_scores_run held it to one */
        if (err)
            goto out;
        t.targets = teacher_targets;
    }
    /* Fresh start, or the state after the checkpoint's last epoch. */
    if ((err = o.init_gain > 0.0f ? nc_cnn_init_fan_in(net, o.seed, o.init_gain)
                                  : nc_cnn_init_weights(net, o.seed)))
        goto fail;
    if (o.init && load_init(o.init, net))
        goto out;
    memcpy(best->params, net->params, net->n_params * sizeof(float));
    st.rng.state = o.seed ^ 0x6a09e667f3bcc908ull;   /* a stream apart from the weights' */
    if (o.resume) {
        if (read_checkpoint(o.checkpoint, &o, net, best, &st))
            goto out;
        fprintf(stderr, "resumed from %s after epoch %u (best so far: epoch %u)\n",
                o.checkpoint, st.epochs_done, st.best_epoch);
        if (st.epochs_done >= o.epochs)
            fprintf(stderr, "nothing left to train: --epochs %u\n", o.epochs);
    }
    void *gpu = NULL;       /* the engine, for count_errors */
#if NC_HAVE_CUDA
    if (o.gpu >= 0) {
        /* Made after a resume, so it starts from the checkpoint's params. */
        nc_gpu_device_info di;
        nc_gpu_cnn *g = NULL;
        err = nc_gpu_cnn_new(net, o.gpu, max_batch, &g);
        t.gpu = g;
        /* The engine's default picks kernels per batch size by timing them,
         * and the timings (other processes on the GPU, MPS) can pick another
         * summation order from one run to the next; the direct kernels make
         * a run with the same --seed give the same network again. */
        if (!err)
            err = nc_gpu_cnn_set_path(g, o.unrolled ? NC_GPU_CNN_PATH_UNROLLED
                                                    : NC_GPU_CNN_PATH_DIRECT);
        if (!err)
            err = nc_gpu_cnn_set_train_data(g, t.inputs, t.labels, t.n_train,
                                            o.deform ? &dparams : NULL);
        if (!err && t.targets)
            err = nc_gpu_cnn_set_train_targets(g, t.targets);
        if (!err && o.softmax > 0.0f)
            err = nc_gpu_cnn_set_loss_softmax(g, o.softmax);
        /* the optimiser's state as the CPU would go on from it: zeros, or
           the checkpoint's; read back with the net after every epoch */
        if (!err && st.velocity)
            err = nc_gpu_cnn_set_momentum(g, o.momentum, st.velocity);
        if (!err && o.adam)
            err = nc_gpu_cnn_set_adam(g, ADAM_BETA1, ADAM_BETA2, ADAM_EPS, st.adam_m, st.adam_v,
                                      st.adam_step);
        if (err) {
            fprintf(stderr, "neocog-train cnn: --gpu %d: %s (%s)\n", o.gpu, nc_strerror(err),
                    nc_gpu_last_error());
            goto out;
        }
        gpu = t.gpu;
        if (nc_gpu_device_info_get(o.gpu, &di) == 0)
            fprintf(stderr, "  GPU %d: %s\n", o.gpu, di.name);
    }
#endif

    char arch[NC_CNN_ARCH_MAX];
    nc_cnn_arch_format(net, arch, sizeof(arch));
    fprintf(stderr, "neocog-train cnn: %s, %zu parameters\n", arch, net->n_params);
    fprintf(stderr, "  data %s: %s\n", o.train_set ? o.train_set : dir, info.data);
    fprintf(stderr, "  epochs %u, batch %u, lr %g decay %g%s, seed %llu, %u thread%s, on %s\n",
            o.epochs, o.batch, (double)o.lr, (double)o.lr_decay,
            o.adam ? " (Adam)" : o.momentum > 0.0f ? " with momentum" : "",
            (unsigned long long)o.seed,
            o.threads, o.threads == 1 ? "" : "s", gpu ? "the GPU" : "the CPU");
    if (o.deform) {
        const nc_deform_params *p = &dparams;
        fprintf(stderr, "  deformations: shift %g px, rotation %g deg, scale %g, shear %g, "
                "elastic sigma %g alpha %g\n", (double)p->max_translate,
                (double)p->max_rotate_deg, (double)p->max_scale, (double)p->max_shear,
                (double)p->elastic_sigma, (double)p->elastic_alpha);
    }

    double run_start = train_now(), spent_before = 0.0;
    for (uint32_t e = 0; e < st.epochs_done; e++)
        spent_before += st.hist[(size_t)e * HIST_COLS + HIST_SECONDS];
    uint32_t first_epoch = st.epochs_done;
    while (st.epochs_done < o.epochs) {
        uint32_t e = st.epochs_done;
        float lr = o.lr * powf(o.lr_decay, (float)e);
        double t0 = train_now(), loss;
        uint32_t train_errors, valid_errors = 0;
        /* Every epoch shuffles the identity permutation, so that resuming
         * (which starts from the identity) replays the same orders. */
        for (uint32_t i = 0; i < t.n_train; i++)
            t.order[i] = i;
        if ((err = train_epoch(&t, &st, lr, &loss, &train_errors)))
            goto fail;
#if NC_HAVE_CUDA
        /* net and the optimiser's state mirror the device after every
         * epoch: best and checkpoints copy them. */
        if (t.gpu && (err = nc_gpu_cnn_download(t.gpu, net)))
            goto fail;
        if (t.gpu && st.velocity && (err = nc_gpu_cnn_get_velocity(t.gpu, st.velocity)))
            goto fail;
        if (t.gpu && o.adam &&
            (err = nc_gpu_cnn_get_adam(t.gpu, st.adam_m, st.adam_v, &st.adam_step)))
            goto fail;
#endif
        double t_train = train_now() - t0;
        if ((err = measure_and_validate(tn, net, gpu, ew, train_inputs, norm_digits,
                                        train.labels, plane, valid_first, o.validation, t.out,
                                        &valid_errors)))
            goto fail;
        double secs = train_now() - t0;
        double *h = st.hist + (size_t)e * HIST_COLS;
        h[HIST_LR] = lr;
        h[HIST_LOSS] = loss;
        h[HIST_TRAIN_ERR] = (double)train_errors / t.n_train;
        h[HIST_VALID_ERR] = o.validation ? (double)valid_errors / o.validation : 0.0;
        h[HIST_SECONDS] = secs;
        st.epochs_done++;
        /* lowest: below every earlier epoch's validation error (the earliest
         * wins ties); the kept weights are that epoch's unless the last is
         * kept */
        int lowest = o.validation != 0;
        for (uint32_t i = 0; lowest && i + 1 < st.epochs_done; i++)
            lowest = h[HIST_VALID_ERR] < st.hist[(size_t)i * HIST_COLS + HIST_VALID_ERR];
        if (o.average_last) {
            /* best holds the running mean of the window's epochs so far (so a
             * checkpoint carries it); epochs before the window leave it be */
            if (st.epochs_done > o.epochs - o.average_last) {
                st.best_epoch = st.epochs_done;
                average_into(best, net, st.epochs_done - (o.epochs - o.average_last));
            }
        } else if (lowest || !o.validation || o.keep_last) {
            st.best_epoch = st.epochs_done;
            memcpy(best->params, net->params, net->n_params * sizeof(float));
        }

        double elapsed = train_now() - run_start;
        char eta[32], valid[32];
        train_format_duration(elapsed / (st.epochs_done - first_epoch) *
                              (o.epochs - st.epochs_done), eta, sizeof(eta));
        if (o.validation)
            snprintf(valid, sizeof(valid), "valid %.2f%%", 100.0 * h[HIST_VALID_ERR]);
        else
            snprintf(valid, sizeof(valid), "valid -");
        fprintf(stderr, "epoch %u/%u  lr %.2e  loss %.5f  train %.2f%%  %s%s  %.0f img/s  "
                "%.1fs  ETA %s\n", st.epochs_done, o.epochs, lr, loss,
                100.0 * h[HIST_TRAIN_ERR], valid, lowest ? " *" : "",
                t.n_train / t_train, secs, eta);
        if (o.checkpoint) {
            info.epochs = st.epochs_done;
            train_utc_iso(info.created, sizeof(info.created));
            if (write_checkpoint(o.checkpoint, &o, net, best, &info, &st))
                goto out;
        }
    }

    /* An average's statistics and validation error, as every epoch's: the
     * engine takes its weights (training is over). */
    uint32_t avg_valid_errors = 0;
    if (o.average_last) {
#if NC_HAVE_CUDA
        if (t.gpu && (err = nc_gpu_cnn_upload(t.gpu, best)))
            goto fail;
#endif
        if ((err = measure_and_validate(tn, best, gpu, ew, train_inputs, norm_digits,
                                        train.labels, plane, valid_first, o.validation, t.out,
                                        &avg_valid_errors)))
            goto fail;
    }

    /* What answers: the fold of a normalised net (on the CPU). */
    NC_FREE(train_inputs);
    nc_dataset_fini(&train);
    const nc_cnn *kept = best;
    nc_cnn_work *kw = ew;
    if (tn && (err = train_norm_fold(tn, best, &kept, &kw, NULL)))
        goto fail;

    /* The chosen weights, measured once on the test set (not with --no-test:
     * the file then records its test error as unknown). */
    uint32_t test_errors = 0;
    if (!o.no_test) {
        float *test_inputs = NULL;
        if ((err = prepare_inputs(&test, &info.prep, net, &test_inputs)))
            goto fail;
        err = count_errors(kept, kw, NULL, test_inputs, test.labels, plane, 0, test.count,
                           t.out, &test_errors);
        free(test_inputs);
        if (err)
            goto fail;
        info.test_error = (double)test_errors / test.count;
        if (o.train_set)
            snprintf(info.test_set, sizeof(info.test_set), "%s (%u)", o.test_set, test.count);
        else
            snprintf(info.test_set, sizeof(info.test_set), "MNIST t10k (%u)", test.count);
    }
    info.epochs = st.best_epoch;
    train_utc_iso(info.created, sizeof(info.created));
    if ((err = nc_cnn_save(kept, &info, &model, &model_len)) ||
        (err = nc_file_write_atomic(o.out, model, model_len))) {
        fprintf(stderr, "neocog-train cnn: writing %s: %s\n", o.out, nc_strerror(err));
        goto out;
    }

    print_table(&st, o.validation,
                o.average_last ? o.epochs - o.average_last + 1 : 0);
    double total = spent_before + (train_now() - run_start);
    char dur[32], which[48], why[96] = " (last)";
    train_format_duration(total, dur, sizeof(dur));
    if (o.average_last > 1)
        snprintf(which, sizeof(which), "epochs %u-%u", st.epochs_done - o.average_last + 1,
                 st.epochs_done);
    else
        snprintf(which, sizeof(which), "epoch %u", st.best_epoch);
    if (o.average_last && o.validation)
        snprintf(why, sizeof(why), ", averaged (--average-last: validation error %.2f%%)",
                 100.0 * avg_valid_errors / o.validation);
    else if (o.average_last)
        snprintf(why, sizeof(why), ", averaged (--average-last)");
    else if (o.validation && o.keep_last)
        snprintf(why, sizeof(why), " (last, --keep-last: validation error %.2f%%)",
                 100.0 * st.hist[(size_t)(st.best_epoch - 1) * HIST_COLS + HIST_VALID_ERR]);
    else if (o.validation)
        snprintf(why, sizeof(why), " (lowest validation error)");
    char tested[160] = "not measured (--no-test)";
    if (!o.no_test)
        snprintf(tested, sizeof(tested), "%.2f%% (%u / %u, %s)", 100.0 * info.test_error,
                 test_errors, test.count, info.test_set);
    fprintf(stderr, "\n model       %s\n arch        %s\n data        %s\n"
            " kept        %s of %u%s\n test error  %s\n"
            " time        %s (wall, training to test)\n",
            o.out, arch, info.data, which, st.epochs_done, why, tested, dur);
    if (tn) {
        char folded[NC_CNN_ARCH_MAX];
        nc_cnn_arch_format(kept, folded, sizeof(folded));
        fprintf(stderr, " written as  %s (batch norm folded in, statistics of training "
                "digits 0-%u)\n", folded, norm_digits - 1);
    }
    status = TRAIN_EXIT_OK;
    goto out;

fail:
    fprintf(stderr, "neocog-train cnn: %s\n", nc_strerror(err));
#if NC_HAVE_CUDA
    if (t.gpu)
        fprintf(stderr, "neocog-train cnn: GPU: %s\n", nc_gpu_last_error());
#endif
out:
    free(model);
    free(st.hist);
    free(t.order);
    free(t.out);
    free(t.d_out);
    free(t.grads);
    free(st.velocity);
    free(st.adam_m);
    free(st.adam_v);
    free(train_inputs);
    free(pool_inputs);
    free(pool_labels);
    nc_dataset_fini(&extra);
    for (int i = 0; i < 2; i++) {
        free(t.chunk_in[i]);
        free(t.chunk_labels[i]);
        free(t.chunk_targets[i]);
    }
    free(teacher_targets);
    if (t.deform)
        for (uint32_t i = 0; i < o.threads; i++)
            nc_deform_free(t.deform[i]);
    free(t.deform);
    free(t.state);
#if NC_HAVE_CUDA
    nc_gpu_cnn_free(t.gpu);
#endif
    train_norm_free(tn);
    nc_cnn_work_free(w);
    nc_cnn_work_free(ew);
    nc_cnn_free(net);
    nc_cnn_free(best);
    nc_dataset_fini(&train);
    nc_dataset_fini(&test);
    return status;
}

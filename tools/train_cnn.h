/* tools/train_cnn.h — what the files of `neocog-train cnn` share: its
 * options, the run's state, the trainer and each file's calls.
 *
 * Layer: tools, private to neocog-train cnn (train_cnn.c). */
#ifndef NC_TRAIN_CNN_H
#define NC_TRAIN_CNN_H

#include <stdio.h>

#include "cnn.h"
#include "deform.h"
#include "train_common.h"

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
    int prep_line;          /* --prep line: NC_PREP_LINE (image.h), not MNIST's */
    uint32_t epoch_blocks;  /* --train is this many renderings, one an epoch */
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
    uint32_t n_train;       /* images an epoch: the pool (MNIST digits 0.., then any
                               --extra), or one of its --epoch-blocks */
    uint32_t n_pool;        /* images in inputs[] */
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


/* train_cnn_opts.c: the command line into o: TRAIN_PARSED, or the exit
 * status after --help (printed) or a usage error (said on stderr). */
int train_cnn_parse_options(int argc, char **argv, options *o);

/* train_cnn_data.c: the network inputs of d, undeformed (malloc'd);
 * errors of net on inputs [first, first + count); --init FILE's weights into
 * net; the --extra PREFIX pair; the training pool (MNIST then --extra); the
 * --train/--val/--test sets; the record's data field for --train. */
int train_cnn_prepare_inputs(const nc_dataset *d, const nc_prep *p, const nc_cnn *net,
                             float **ret_inputs);
int train_cnn_count_errors(const nc_cnn *net, nc_cnn_work *w, void *g, const float *inputs,
                           const uint8_t *labels, uint32_t plane, uint32_t first,
                           uint32_t count, float *out, uint32_t *ret_errors);
int train_cnn_load_init(const char *path, nc_cnn *net);
int train_cnn_load_extra(const char *prefix, uint32_t n_classes, nc_dataset *ret);
int train_cnn_make_pool(trainer *t, const float *mnist_inputs, const uint8_t *mnist_labels,
                        uint32_t n_mnist, const nc_dataset *extra, const nc_prep *prep,
                        float **ret_inputs, uint8_t **ret_labels);
int train_cnn_load_sets(options *o, nc_dataset *train, nc_dataset *test, train_classes *classes);
void train_cnn_describe_sets(const options *o, uint32_t n_train, uint32_t n_valid,
                             const char *extra_note, const char *deformed, char *dst, size_t cap);

/* train_cnn_checkpoint.c: the run so far written to path atomically;
 * read back into net, best and st, refused when its options differ from o. */
int train_cnn_write_checkpoint(const char *path, const options *o, const nc_cnn *net,
                               const nc_cnn *best, const nc_model_info *info,
                               const run_state *st);
int train_cnn_read_checkpoint(const char *path, const options *o, nc_cnn *net,
                              nc_cnn *best, run_state *st);

/* train_cnn_epoch.c: one epoch at learning rate lr; the mean loss and
 * the training errors of its presentations. */
int train_cnn_epoch(trainer *t, run_state *st, float lr, double *ret_loss,
                    uint32_t *ret_errors);

#endif

/* core/cnn/cnn.h — the CPU convolutional network engine (seed 000 CNNs).
 *
 * Layer: core (pure C11 + CBLAS; no I/O, no threads of its own, no CUDA).
 * Error codes as in common.h: 0 or a negative errno; ret_* outputs are
 * written only on success; destructors accept NULL.
 *
 * ---- Architecture notation (seed 000, extended) -------------------------
 *
 *   1x29x29-20C4-MP2-40C5-MP3-150N-10N
 *
 * Tokens are separated by '-'.  The first gives the input: maps x height x
 * width, optionally followed by W<w> (one map only, 1 <= w <= width): the
 * column normalises the width of its input's ink to w pixels before its
 * first layer (nc_cnn_input_transform; Ciresan et al. 2011's committees of
 * columns fed with digits of several widths).  Each further token is one
 * layer:
 *
 *   <M>C<K>            convolution, M output maps, K x K kernel
 *   <M>C<Kx>x<Ky>      ... rectangular kernel, Kx wide, Ky tall
 *      ...S<s>         skipping factor s in both directions (seed §2.2/§3.3:
 *      ...S<sx>x<sy>   the kernel skips s pixels between neighbouring
 *                      positions, so it steps by s + 1 and an output map is
 *                      (M_in - K) / (s + 1) + 1 wide; seed's "skipping
 *                      factors 0x0" is the dense convolution).  The division
 *                      must be exact.
 *      ...R<p>         random connection table: each output map is wired to
 *      ...R<p>:<seed>  round(p% of the input maps) of them (at least one),
 *                      chosen by a fixed PRNG from <seed> (default 0) and the
 *                      layer index.  p in 1..100; without R every output map
 *                      sees every input map (seed 000's "full" table).
 *      ...bn           batch normalisation of the layer's sums (below),
 *                      before the activation.
 *      ...relu         rectified linear units (below) in place of the
 *                      scaled tanh; last of the suffixes.
 *   MP<K>, MP<Kx>x<Ky> max-pooling over non-overlapping K x K regions; the
 *                      input map size must divide exactly.
 *   <N>N               fully connected layer of N units.
 *   <N>Nbn, <N>Nrelu,  ... batch-normalised, of rectified linear units,
 *   <N>Nbnrelu         or both.
 *
 * Suffixes come in the order C, x, S, x, R, ':', bn, relu.  Numbers are decimal with
 * no sign and no leading zero.  A convolution or pooling layer may not follow
 * a fully connected one, and the last layer must be fully connected (seed
 * §2.4: "the top layer is always fully connected, with one output unit per
 * class label").  nc_cnn_arch_format() writes the canonical form (square
 * kernel as "C5", equal skips as "S1", no "S0", no "R100", no ":0"), and
 * parsing the canonical form gives the same network.
 *
 * Explicit connection tables can be set with nc_cnn_set_table(); they are
 * not part of the notation but are saved in the model file (section CTAB).
 *
 * ---- Units and training ----------------------------------------------
 *
 * Every convolutional and fully connected unit, the output layer included,
 * computes y = 1.7159 tanh(0.6666 a), a = bias + sum w x (seed 000 §4),
 * unless its token ends in "relu": then y = max(0, a) (Nair & Hinton 2010),
 * whose gradient does not fade as units saturate.  Not the seed's: it is
 * for hidden layers; an output layer of rectified units cannot reach the
 * squared error's -1 targets (the softmax loss below does not need them).
 * Max-pooling passes the largest input through (no weights, no activation).
 * Training minimises E = 1/2 sum_images sum_k (y_k - t_k)^2 with targets
 * t = +1 for the labelled class and -1 elsewhere (LeCun's scaled tanh is
 * built so that f(+-1) = +-1).  Gradients are summed over a batch, not
 * averaged, so the learning rate means the same thing per image as in the
 * seed's on-line training (w -= lr dE/dw).
 *
 * ---- Batch normalisation (the "bn" suffix; Ioffe & Szegedy 2015) ------
 *
 * Not the seed's: for training deep columns at higher rates.  A normalised
 * layer's sums a = bias + sum w x are standardised per map (per unit in a
 * fully connected layer) over the whole batch, every image and position:
 * a^ = (a - mean) / sqrt(var + NC_CNN_NORM_EPS), mean and var (biased) of
 * the batch; then y = f(gamma a^ + beta), gamma and beta learnt per map.
 * Every forward pass here (core and gpu/) computes that, with the batch's
 * own statistics: what training needs.  A net with such layers is for
 * training only; its answers on one image depend on the batch.  The net
 * also carries fixed statistics per map (mean, var: not learnt; the
 * trainer measures them over training digits) and nc_cnn_fold_norm turns
 * it into the plain net that answers with them, which is what model files
 * for serving hold (committee files refuse a normalised column).
 *
 * ---- Storage ------------------------------------------------------------
 *
 * All weights and biases live in one float block (nc_cnn.params), layer by
 * layer: weights, then biases.  A convolution stores a dense kernel for
 * every (output map, input map) pair, [maps][in_maps][ky][kx]; the kernels
 * of pairs that the connection table leaves out are kept at exactly zero by
 * every function here (the BLAS path multiplies them; the reference path
 * skips them).  A fully connected layer stores [n][n_in], with its input
 * flattened as [maps][height][width].
 *
 * ---- Data layout ----------------------------------------------------------
 *
 * Inputs are n images of in_maps x height x width floats, image after image;
 * outputs are n rows of n_classes floats.  Two engines compute the same
 * function: the reference (plain loops, the specification) and the BLAS one
 * (seed 001 unrolled convolution, one matrix product per layer over the
 * batch).  Both need an nc_cnn_work, which holds every activation of a batch
 * so that a backward pass can follow the matching forward pass. */
#ifndef NC_CNN_H
#define NC_CNN_H

#include "common.h"
#include "modelfile.h"

/* Caps: anything larger is refused with -ERANGE before allocating. */
#define NC_CNN_MAX_LAYERS   32u          /* input layer included */
#define NC_CNN_MAX_MAPS     4096u
#define NC_CNN_MAX_DIM      4096u        /* input height or width */
#define NC_CNN_MAX_UNITS    (1u << 24)   /* outputs of one layer, one image */
#define NC_CNN_MAX_UNROLL   (1u << 26)   /* unrolled conv input, one image */
#define NC_CNN_MAX_PARAMS   (1u << 26)   /* weights + biases (256 MiB) */
#define NC_CNN_MAX_BATCH    65536u
#define NC_CNN_ARCH_MAX     1024u        /* notation string, NUL included */

/* The scaled tanh of seed 000 (LeCun 1998). */
#define NC_CNN_TANH_A 1.7159f
#define NC_CNN_TANH_S 0.6666f

typedef enum nc_cnn_kind {
    NC_CNN_KIND_INPUT = 0,
    NC_CNN_KIND_CONV = 1,
    NC_CNN_KIND_POOL = 2,
    NC_CNN_KIND_FULL = 3,
} nc_cnn_kind;

/* A unit's activation function (the notation's "relu" suffix). */
typedef enum nc_cnn_act {
    NC_CNN_ACT_TANH = 0,        /* 1.7159 tanh(0.6666 a), the seed's */
    NC_CNN_ACT_RELU = 1,        /* max(0, a) */
    NC_CNN_ACT_NONE = 2,        /* y = a: never a layer's (the notation has
                                   no token for it); the engines pass it to
                                   their kernels for a normalised layer's
                                   sums, activated after normalising */
} nc_cnn_act;

/* Added to the batch variance before the square root (batch norm). */
#define NC_CNN_NORM_EPS 1e-5f

typedef struct nc_cnn_layer {
    uint32_t kind;              /* nc_cnn_kind */
    uint32_t act;               /* CONV/FULL: nc_cnn_act; else 0 */
    uint32_t norm;              /* CONV/FULL: 1 for "bn" (batch norm) */
    uint32_t maps, height, width; /* output shape; FULL: n x 1 x 1 */
    uint32_t kernel_x, kernel_y;  /* CONV kernel, POOL region; else 0 */
    uint32_t skip_x, skip_y;      /* CONV skipping factors (step = skip + 1) */
    uint32_t table_percent;     /* CONV: 1..99 random table, 100 full */
    uint32_t table_seed;        /* CONV: seed of the random table */
    uint32_t n_in;              /* inputs per image: previous maps*h*w */
    uint32_t n_out;             /* outputs per image: maps*height*width */
    uint32_t fan_in;            /* weights per output map or unit:
                                   CONV in_maps*ky*kx, FULL n_in */
    size_t n_weights;           /* CONV maps*fan_in, FULL n*n_in, else 0 */
    float *weights;             /* into nc_cnn.params, or NULL */
    float *bias;                /* [maps], into nc_cnn.params, or NULL */
    float *gamma, *beta;        /* norm: [maps] each, into params; else NULL */
    float *mean, *var;          /* norm: fixed statistics [maps], into params */
    uint8_t *table;             /* CONV: [maps][in_maps], 1 = connected;
                                   into nc_cnn.tables; else NULL */
} nc_cnn_layer;

typedef struct nc_cnn {
    uint32_t n_layers;          /* input layer included, >= 2 */
    nc_cnn_layer layers[NC_CNN_MAX_LAYERS];
    size_t n_params;            /* floats in params */
    float *params;              /* one block: every weight and bias */
    size_t n_tables;            /* bytes in tables */
    uint8_t *tables;            /* every CONV layer's table, in layer order */
    uint32_t n_inputs;          /* floats per input image */
    uint32_t n_outputs;         /* output units (classes) */
    uint32_t max_units;         /* largest n_out over the layers */
    int custom_tables;          /* 1 after nc_cnn_set_table() */
    uint32_t width_norm;        /* the notation's W<w>, 0 without: see
                                   nc_cnn_input_transform */
} nc_cnn;

/* ---- building ------------------------------------------------------------ */

/* Parse arch (notation above) and allocate the network: weights zero, tables
 * as the notation says.  -EINVAL for a malformed or inconsistent string
 * (bad token, sizes that do not divide, a kernel larger than its input, a
 * conv after a fully connected layer, no fully connected top...), -ERANGE for
 * a well-formed one beyond the caps above, -ENOMEM. */
int nc_cnn_new(const char *arch, nc_cnn **ret_net);
void nc_cnn_free(nc_cnn *net);

/* Canonical notation of net into dst (cap bytes, NUL included); -ERANGE if
 * it does not fit. */
int nc_cnn_arch_format(const nc_cnn *net, char *dst, size_t cap);

/* Seed 000 initialisation: every weight and bias uniform in [-0.05, 0.05]
 * from a fixed PRNG (splitmix64) seeded with seed; kernels of unconnected
 * map pairs stay zero.  nc_cnn_init_uniform takes another half-range. */
int nc_cnn_init_weights(nc_cnn *net, uint64_t seed);
int nc_cnn_init_uniform(nc_cnn *net, uint64_t seed, float range);

/* Initialisation scaled to each layer's fan-in, for deep nets of rectified
 * units, which a fixed range starves or swamps layer by layer: every
 * weight of a layer uniform in [-r, r] with r = gain * sqrt(3 / fan_in),
 * so its variance is gain^2 / fan_in (gain sqrt(2): He et al. 2015's, which
 * keeps the variance of a ReLU layer's outputs from layer to layer; 1:
 * LeCun's for tanh), and every bias 0.  Same PRNG stream as above; kernels
 * of unconnected pairs stay zero.  -EINVAL for gain <= 0 or not finite. */
int nc_cnn_init_fan_in(nc_cnn *net, uint64_t seed, float gain);
/* (Every initialisation, and nc_cnn_new, sets a normalised layer's gamma
 * and var to 1, beta and mean to 0.) */

/* Number of batch-normalised layers of net (0: a plain net). */
uint32_t nc_cnn_norm_layers(const nc_cnn *net);

/* The plain net that answers as net does with each normalised layer's fixed
 * statistics in place of the batch's: the same notation without "bn", and
 * per map s = gamma / sqrt(var + NC_CNN_NORM_EPS), weights w s, bias
 * (bias - mean) s + beta (the tables, custom ones too, copied).  A plain
 * net gives a copy.  -EINVAL for a var below 0 or not finite, -ENOMEM. */
int nc_cnn_fold_norm(const nc_cnn *net, nc_cnn **ret_plain);

/* Replace the connection table of CONV layer `layer` (1-based, as in
 * net->layers) by table ([maps][in_maps], each byte 0 or 1, every output map
 * wired to at least one input map).  Kernels of pairs that are cut are
 * zeroed.  -EINVAL for a bad layer or table. */
int nc_cnn_set_table(nc_cnn *net, uint32_t layer, const uint8_t *table);

/* ---- working memory ------------------------------------------------------ */

typedef struct nc_cnn_work nc_cnn_work;

/* Activations, deltas and scratch for batches of up to max_batch images of
 * net's architecture (any net with the same layer sizes may use it, e.g. the
 * columns of a committee).  One work per thread. */
int nc_cnn_work_new(const nc_cnn *net, uint32_t max_batch, nc_cnn_work **ret_w);
void nc_cnn_work_free(nc_cnn_work *w);

/* The BLAS path unrolls `chunk` images at a time (default chosen for cache:
 * see cnn_blas.c) and multiplies each chunk into the batch-wide output.
 * chunk 0 means the whole batch in one product per layer.  -EINVAL if > max. */
int nc_cnn_work_set_chunk(nc_cnn_work *w, uint32_t chunk);

/* Optional: called after each layer l (1..n_layers-1) of every forward pass,
 * e.g. for a benchmark's per-layer clock.  NULL removes it. */
typedef void (*nc_cnn_layer_hook)(void *ctx, uint32_t layer);
void nc_cnn_work_set_hook(nc_cnn_work *w, nc_cnn_layer_hook hook, void *ctx);

/* After nc_cnn_forward_ref: layer's activations (1 <= layer < n_layers),
 * image-major [n][maps][height][width], n (the batch) in *ret_n (may be
 * NULL); valid until the next pass on w.  NULL after any other pass or for a
 * bad layer.  For tests and tools that look inside the reference. */
const float *nc_cnn_work_activations(const nc_cnn_work *w, uint32_t layer, uint32_t *ret_n);

/* After a forward pass of n images on w (either engine): normalised layer
 * `layer`'s batch statistics per map, mean[maps] and var[maps] (biased:
 * divided by n x height x width), as that pass normalised with.  -EINVAL
 * for no pass, a layer that is not normalised, or NULL outputs.  A trainer
 * averages them over batches into the layer's fixed statistics. */
int nc_cnn_work_norm_stats(const nc_cnn_work *w, uint32_t layer, float *mean, float *var);

/* ---- the column's own input transform ------------------------------------ */

/* out[n][n_inputs] = in[n][n_inputs] as net's first layer must see it: a
 * copy, or with W<w> in the notation each image's ink (pixels > 0) width-
 * normalised: its bounding box's columns resampled to w (area averaging:
 * each output column is the mean of the source span it covers, so a row's
 * ink mass scales by w / width), its rows where they were, and the w-wide
 * block placed so its horizontal centre of mass falls as near as whole
 * pixels allow to column width / 2 (the prep's own centring), inside the
 * field.  An image without ink is copied.  in and out must not overlap.
 *
 * The network functions below (forward, backward, the GPU engine) run the
 * layers only: whoever feeds a column applies this first.  core's committee
 * run (nc_cnn_committee_run) and the engines behind core/backend/backend.h do; a
 * trainer applies it once to its prepared digits, before deforming them,
 * as the seed's committees did. */
int nc_cnn_input_transform(const nc_cnn *net, const float *in, uint32_t n, float *out);

/* ---- forward ------------------------------------------------------------- */

/* out[n][n_outputs] = the network on in[n][n_inputs].  1 <= n <= max_batch.
 * _ref is the plain-loop specification (double accumulators); _blas is
 * seed 001's unrolled convolution + cblas_sgemm, agreeing with _ref to float
 * rounding (the tests hold it to 1e-5 relative + 1e-5 absolute on outputs).
 * out may be NULL (activations are still kept in w for a backward pass). */
int nc_cnn_forward_ref(const nc_cnn *net, nc_cnn_work *w,
                       const float *in, uint32_t n, float *out);
int nc_cnn_forward_blas(const nc_cnn *net, nc_cnn_work *w,
                        const float *in, uint32_t n, float *out);

/* Committee (seed 000's multi-column idea): out = mean of the n_nets
 * columns' outputs (BLAS path).  All columns share input and output sizes;
 * w must fit each of them.  A column with an input transform (W<w>) is
 * refused with -EINVAL: it needs nc_cnn_committee_run, whose work holds the
 * transformed inputs.  So is a batch-normalised column: its forward
 * normalises by the batch's own statistics (training); fold it first
 * (nc_cnn_fold_norm). */
int nc_cnn_committee_forward(const nc_cnn *const *nets, uint32_t n_nets,
                             nc_cnn_work *w, const float *in, uint32_t n,
                             float *out);

/* ---- training ------------------------------------------------------------ */

/* The loss above for out[n][n_outputs] and labels[n] (< n_outputs):
 * *ret_loss = E, *ret_errors = images whose largest output is not the label
 * (either may be NULL); d_out (may be NULL) receives dE/dy. */
int nc_cnn_loss(const nc_cnn *net, const float *out, const uint8_t *labels,
                uint32_t n, float *d_out, double *ret_loss, uint32_t *ret_errors);

/* The same loss against soft targets: targets[n][n_outputs] replace the
 * +1 / -1 of the label (NULL: nc_cnn_loss exactly), e.g. a mix of the label
 * and a teacher committee's outputs for distillation.  ret_errors still
 * counts images whose largest output is not the label. */
int nc_cnn_loss_targets(const nc_cnn *net, const float *out, const uint8_t *labels,
                        const float *targets, uint32_t n, float *d_out, double *ret_loss,
                        uint32_t *ret_errors);

/* Softmax cross-entropy on the scaled outputs, the alternative to the
 * squared error above: the outputs stay the scaled tanh's, and p =
 * softmax(scale * y) is read as the class probabilities, so
 * E = -sum_images log p[label] and dE/dy_k = scale (p_k - [k == label]).
 * scale (finite, > 0) sets how confident the bounded outputs can make p:
 * the largest gap between two logits is 2 * 1.7159 * scale.  The squared
 * error stops pushing an output once it reaches its target; this loss
 * weighs every image by how wrong its probabilities still are, so hard
 * digits keep drawing the gradient late in training.  Same arguments and
 * errors count as nc_cnn_loss; -EINVAL for a bad scale. */
int nc_cnn_loss_softmax(const nc_cnn *net, const float *out, const uint8_t *labels,
                        uint32_t n, float scale, float *d_out, double *ret_loss,
                        uint32_t *ret_errors);

/* Back-propagation after the matching forward pass on the same w, in and n
 * (_ref after _ref, _blas after _blas; -EINVAL otherwise): d_out[n][n_outputs]
 * is dE/dy of the output layer; grads[n_params] receives dE/dparams summed
 * over the batch, laid out like net->params (unconnected kernels get 0).
 * Deltas flow through max-pooling to the position of each maximum (the first
 * one on ties), through skipping factors and connection tables. */
int nc_cnn_backward_ref(const nc_cnn *net, nc_cnn_work *w, const float *in,
                        uint32_t n, const float *d_out, float *grads);
int nc_cnn_backward_blas(const nc_cnn *net, nc_cnn_work *w, const float *in,
                         uint32_t n, const float *d_out, float *grads);

/* params -= lr * grads (unconnected kernels stay zero). */
int nc_cnn_sgd(nc_cnn *net, const float *grads, float lr);

/* SGD with momentum (heavy ball, as PyTorch's SGD without dampening):
 * velocity = momentum * velocity + grads, then params -= lr * velocity
 * (unconnected kernels stay zero).  velocity[n_params] is the caller's,
 * zeros before the first step.  momentum 0 is nc_cnn_sgd exactly.
 * -EINVAL for NULLs, a rate that is not finite or momentum outside [0, 1). */
int nc_cnn_sgd_momentum(nc_cnn *net, const float *grads, float *velocity, float lr,
                        float momentum);

/* Adam (Kingma & Ba 2015), step `step` (1 for the first): with g = grads,
 *   m = beta1 m + (1 - beta1) g,  v = beta2 v + (1 - beta2) g g,
 *   params -= lr (m c1) / (sqrt(v c2) + eps),
 * c1 = 1 / (1 - beta1^step), c2 = 1 / (1 - beta2^step) (from
 * nc_cnn_adam_corrections), each product and sum rounded to float in that
 * order (the GPU's step does the same).  m, v [n_params]: the caller's,
 * zeros before the first step.  Unconnected kernels stay zero.  -EINVAL for
 * NULLs, step 0, a rate that is not finite, betas outside [0, 1) or eps
 * not > 0. */
int nc_cnn_adam(nc_cnn *net, const float *grads, float *m, float *v, uint64_t step, float lr,
                float beta1, float beta2, float eps);

/* Adam's bias corrections for `step`: c1 = 1 / (1 - beta1^step),
 * c2 = 1 / (1 - beta2^step), computed in double and rounded to float. */
void nc_cnn_adam_corrections(uint64_t step, float beta1, float beta2, float *c1, float *c2);

/* One mini-batch step on the BLAS path: forward, loss, backward, SGD.
 * *ret_loss (may be NULL) is the loss before the step. */
int nc_cnn_train_step(nc_cnn *net, nc_cnn_work *w, const float *in,
                      const uint8_t *labels, uint32_t n, float lr,
                      double *ret_loss);

/* ---- model files (modelfile.h; kind NC_MF_KIND_CNN) ---------------------- */

/* Sections: "ARCH" the canonical notation, "CTAB" all connection tables
 * (bytes, layer order), "WGTS" all params as one f32 array, plus the info
 * sections of nc_mf_put_info.  info->n_classes must equal net->n_outputs. */
int nc_cnn_save(const nc_cnn *net, const nc_model_info *info,
                uint8_t **ret_buf, size_t *ret_len);

/* Re-parse ARCH and check every section against it (counts, 0/1 tables with
 * a connection per map, zero kernels for cut pairs, finite weights, class
 * count): -EBADMSG for anything inconsistent, never a crash.  ret_info may be
 * NULL.  A committee file of two or more columns (below) is refused with
 * -ENOTSUP rather than answered by one of its columns: a caller that runs
 * one net would silently serve a weaker model than the file records. */
int nc_cnn_load(const uint8_t *buf, size_t len, nc_cnn **ret_net,
                nc_model_info *ret_info);

/* ---- committees in one model file (cnn_committee.c) ---------------------- */

/* A committee (seed 000's multi-column net) is N >= 1 columns with the same
 * input size, output size, classes and preprocessing; their architectures
 * may differ.  Its answer is the mean of the columns' outputs.
 *
 * File form (kind NC_MF_KIND_CNN):
 *   N = 1   exactly the one-column file above (nc_cnn_save): old and new
 *           readers load it alike;
 *   N >= 2  NCOL  u32[1]  N (2..NC_CNN_MAX_COLUMNS)
 *           CL01 .. CLnn  bytes: each column as a complete one-column file
 *                         (nc_cnn_save's image, with its own CRC and its own
 *                         info: command, seed, epochs, test error)
 *           + nc_mf_put_info's sections for the committee itself (classes,
 *             prep, and the provenance of the bundling: command, data, the
 *             committee's measured test error)
 *           and no ARCH / CTAB / WGTS of its own.
 * Other sections (calibration, core/calib/calib.h) may follow in either form. */
#define NC_CNN_MAX_COLUMNS 64u
#define NC_CNN_TAG_NCOL NC_MF_TAG('N', 'C', 'O', 'L')

typedef struct nc_cnn_committee {
    uint32_t n_columns;
    nc_cnn **column;                /* [n_columns] */
    nc_model_info *column_info;     /* [n_columns]: each column's own record
                                       (one-column file: the file's info) */
    uint32_t n_inputs, n_outputs;   /* shared by every column */
    uint32_t n_views;               /* nc_prep_views of the file's prep
                                       (image.h): every column answers on
                                       every view of a digit */
} nc_cnn_committee;

/* NULL when column b (net, info) may join a committee whose column a is
 * (same input and output sizes, classes, labels and preprocessing), else
 * a short English phrase naming what differs. */
const char *nc_cnn_committee_mismatch(const nc_cnn *a, const nc_model_info *ia,
                                      const nc_cnn *b, const nc_model_info *ib);

/* Save n columns (nets[i] with its own record col_info[i]) as one file whose
 * own info is *info (classes and prep must agree with every column).  n == 1
 * writes nc_cnn_save(nets[0], info): the one-column form, whose only record
 * is *info (col_info[0] is not stored).  -EINVAL for n outside
 * 1..NC_CNN_MAX_COLUMNS, columns that disagree, a batch-normalised column
 * (nc_cnn_fold_norm it first), or what nc_cnn_save refuses. */
int nc_cnn_committee_save(const nc_cnn *const *nets, const nc_model_info *col_info,
                          uint32_t n, const nc_model_info *info, uint8_t **ret_buf,
                          size_t *ret_len);

/* Load either form.  Every column is loaded and checked by nc_cnn_load, and
 * every column must agree with the file's info: -EBADMSG for a missing,
 * extra, duplicated or disagreeing column, a count outside the range, or
 * ARCH / WGTS beside NCOL; -ENOTSUP for a batch-normalised column (a
 * training checkpoint's net, not one to serve).  ret_info (may be NULL)
 * gets the file's info.
 *
 * Views (image.h, the PVEW section) belong to the file's own record: the
 * one-column file's, or the committee's.  A column inside a committee with
 * views of its own is corrupt (-EBADMSG), as nc_cnn_committee_save refuses
 * to write one (-EINVAL).  The answer on a digit is then the mean over its
 * views of the committee's answers (nc_cnn_committee_run_views): a view is
 * the digit prepared at another fit box, so the mean smooths over how large
 * the digit was drawn. */
int nc_cnn_committee_load(const uint8_t *buf, size_t len, nc_cnn_committee **ret_c,
                          nc_model_info *ret_info);
void nc_cnn_committee_free(nc_cnn_committee *c);

/* Working memory for running c on batches of up to max_batch images: one
 * nc_cnn_work per column (the columns may differ in shape).  One per thread. */
typedef struct nc_cnn_committee_work nc_cnn_committee_work;
int nc_cnn_committee_work_new(const nc_cnn_committee *c, uint32_t max_batch,
                              nc_cnn_committee_work **ret_w);
void nc_cnn_committee_work_free(nc_cnn_committee_work *w);

/* out[n][n_outputs] = the mean of the columns' outputs on in[n][n_inputs]
 * (BLAS path; summed in column order, then divided by n_columns, as
 * nc_cnn_committee_forward does, so a one-column committee gives exactly
 * nc_cnn_forward_blas's output).  Each column with an input transform (W<w>)
 * is fed nc_cnn_input_transform's images.  1 <= n <= max_batch. */
int nc_cnn_committee_run(const nc_cnn_committee *c, nc_cnn_committee_work *w,
                         const float *in, uint32_t n, float *out);

/* The file's answer on n digits of c->n_views views each: in[n][n_views]
 * [n_inputs] as nc_prep_apply writes them; out[n][n_outputs] = for each
 * digit, the committee's outputs (nc_cnn_committee_run) on each of its
 * views, summed in view order and divided by n_views (nc_cnn_views_mean).
 * Without views exactly nc_cnn_committee_run.  1 <= n x n_views <=
 * max_batch (images, as the work was made for). */
int nc_cnn_committee_run_views(const nc_cnn_committee *c, nc_cnn_committee_work *w,
                               const float *in, uint32_t n, float *out);

/* out[n][n_outputs] = the mean of y[n][n_views][n_outputs] over each
 * digit's views, summed in view order, then divided by n_views (n_views 1:
 * a copy).  The one arithmetic every engine uses, so their answers agree. */
void nc_cnn_views_mean(const float *y, uint32_t n, uint32_t n_views, uint32_t n_outputs,
                       float *out);

#endif

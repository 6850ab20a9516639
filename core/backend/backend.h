/* core/backend/backend.h — the engine table: how the daemon runs a model without
 * knowing whether the CPU or a GPU computes it.
 *
 * Layer: core (the table and the CPU implementation, backend_cpu.c, are pure
 * C11; gpu/ fills the same table with its CUDA engine).  Error codes as in
 * common.h; nothing here logs.
 *
 * One backend instance holds ONE model (a CNN or a neocognitron) resident on
 * one engine.  The daemon opens one instance per model file and combines
 * them (ensemble) itself, so a bad file fails alone and is named alone.
 *
 * Threads: an instance is read-only after open and may be shared by many
 * threads; each thread runs it through its own worker (scratch memory,
 * streams), made with worker_new.  The daemon never calls forward for one
 * worker from two threads at once.
 *
 * Inputs are preprocessed already: n images of nc_prep_out_len(&info.prep)
 * floats each (core/image/image.h, nc_prep_apply with the prep stored in the
 * model; with views, all of one digit's views form its image), image after
 * image.  Outputs are n rows of info.n_classes raw
 * scores — the model's own units; nc_backend_probs turns them into
 * comparable probabilities with the rule fitted for the file (core/calib/calib.h).
 *
 * A CNN file may be a committee of columns (core/cnn/cnn.h): every engine runs
 * all its columns and answers with the mean of their outputs, so callers see
 * one model either way. */
#ifndef NC_BACKEND_H
#define NC_BACKEND_H

#include "calib.h"
#include "common.h"
#include "modelfile.h"

/* A caller that prepares an image's views on demand (forward_fill): fill
 * writes the views in mask (bit v: view v; a file without views has one
 * image, bit 0) of images image[0..d) of the forward into their places in
 * its input; 0, or an error that fails the forward.  A view may be asked
 * for again: fill writes it once. */
typedef struct nc_backend_fill {
    void *ctx;
    int (*fill)(void *ctx, uint32_t mask, const uint32_t *image, uint32_t d);
} nc_backend_fill;

typedef struct nc_backend_ops {
    const char *name;       /* "cpu", "cuda" */

    /* Required.  Load a model file image (buf/len; borrowed, may be freed
     * after return) and make it resident.  device selects an engine
     * instance (GPU ordinal; ignored by the CPU).  max_batch: the most
     * images (digits, each with all its views) a caller passes to one
     * forward, for an engine that sizes its buffers once here (the GPU);
     * 0 for the engine's own largest batch.  forward still takes any n and
     * splits it.  The CPU sizes per worker (worker_new).  Writes the model's kind
     * (nc_mf_kind), its info and the opaque instance.  A corrupt or
     * truncated file gives the loader's error (-EBADMSG...), a kind this
     * engine cannot run -ENOTSUP. */
    int (*init)(const uint8_t *buf, size_t len, int device, uint32_t max_batch,
                void **ret_impl, uint32_t *ret_kind, nc_model_info *ret_info);

    /* Required.  1 if this engine can run models of kind (nc_mf_kind) at
     * all, else 0.  The daemon asks before init and falls back to the CPU
     * table when the answer is no. */
    int (*supports)(uint32_t kind);

    /* Required.  Per-thread working memory for batches of up to max_batch
     * images; forward splits larger batches itself. */
    int (*worker_new)(void *impl, uint32_t max_batch, void **ret_worker);
    void (*worker_free)(void *worker);          /* required; NULL is fine */

    /* Required.  out[n][n_classes] = raw scores of in[n][input_len]. */
    int (*forward)(void *impl, void *worker, const float *in, uint32_t n,
                   float *out);

    /* Optional (NULL: nc_backend_forward_fill fills every view first).
     * forward over an input whose views are not written yet: the engine
     * calls fill for the views it reads before it reads them, so a
     * neocognitron's cascade prepares only the views its stages run (most
     * digits: its one-view stage's).  fill may be called again for views
     * it wrote already (the GPU table fills the first stage's views before
     * it takes its engine's lock) and must leave them as they are. */
    int (*forward_fill)(void *impl, void *worker, const float *in, uint32_t n,
                        const nc_backend_fill *fill, float *out);

    /* Required.  Release the instance; NULL is fine.  Every worker made
     * from it must be freed first. */
    void (*free)(void *impl);

    /* Optional (NULL): bytes of device memory the instance holds, for the
     * metrics page. */
    size_t (*device_bytes)(void *impl);
} nc_backend_ops;

/* The CPU engine over core/ (backend_cpu.c): CNN through
 * nc_cnn_committee_run (nc_cnn_forward_blas per column: one product per
 * layer over the whole batch),
 * neocognitron through nc_neocog_forward_many, each member's views of up to
 * 8 digits at once (form B for its big last stage, form F for the rest:
 * the scores of form F image by image, bit for bit). */
extern const nc_backend_ops nc_backend_cpu;

/* An open model on an engine. */
typedef struct nc_backend {
    const nc_backend_ops *ops;
    void *impl;
    int device;
    uint32_t kind;          /* nc_mf_kind: CNN or NEOCOG */
    nc_model_info info;
    size_t input_len;       /* floats per preprocessed image */
    /* Read from the file by nc_backend_open, the same for every engine: */
    nc_calib calib;         /* the model's fitted rule (fitted 0: plain) */
    nc_ens_rule ens;        /* CNN files: the ensemble rule stored with it */
    nc_model_fp fp;         /* which file this is (nc_backend_ensemble_rule) */
} nc_backend;

/* ops->init plus the checks every caller needs: info.n_classes in
 * 1..NC_MF_MAX_CLASSES and a valid prep (-EBADMSG otherwise).  -ENOTSUP when
 * ops->supports says no to the file's kind.  Also reads the calibration
 * sections (core/calib/calib.h); a malformed one fails the file with -EBADMSG
 * rather than silently serving uncalibrated probabilities. */
int nc_backend_open(const nc_backend_ops *ops, const uint8_t *buf, size_t len,
                    int device, nc_backend **ret_be);
/* The same, for callers that never pass more than max_batch images to one
 * forward (neocogd's max_batch): a GPU engine is made for that many
 * (ops->init); nc_backend_open passes 0, the engine's largest. */
int nc_backend_open_batch(const nc_backend_ops *ops, const uint8_t *buf, size_t len,
                          int device, uint32_t max_batch, nc_backend **ret_be);
void nc_backend_close(nc_backend *be);          /* NULL is fine */

/* be's forward of n images whose views fill writes on demand into in
 * (ops->forward_fill, else every view of every image, then ops->forward). */
int nc_backend_forward_fill(const nc_backend *be, void *worker, float *in, uint32_t n,
                            const nc_backend_fill *fill, float *out);
/* The mask of every view of be's images (bit 0 alone without views). */
uint32_t nc_backend_all_views(const nc_backend *be);
/* fill's views in mask of images 0..n-1 (in runs of a few hundred): what a
 * forward_fill without anything to skip does first. */
int nc_backend_fill_all(const nc_backend_fill *fill, uint32_t mask, uint32_t n);

/* ---- turning raw scores into answers (shared by every engine) ----------- */

/* A neocognitron committee's raw scores, as every engine forms them: the
 * members' scores added in member order into a zeroed acc (with views,
 * each member's views in view order), then divided by the count of scores
 * added (nc_neocog_committee.n_scores; one member, one view: its scores
 * unchanged, bit for bit).  In cascade.c. */
void nc_backend_member_add(float *acc, const float *score, uint32_t n_classes);
void nc_backend_member_mean(float *acc, uint32_t n_scores, uint32_t n_classes);

/* Best class from raw scores, or -1 (reject) when the model said nothing:
 * CNN: the largest output (first on ties), never -1.  Neocognitron: the
 * largest per-class score if it is > 0, else -1 (nothing fired); the scores
 * are UC4's max responses, or the interpolating-vector classifier's cosines
 * when the model file asks for that classifier (NIVT section). */
int32_t nc_backend_label(uint32_t kind, const float *raw, uint32_t n_classes);

/* The plain calibration rule (core/calib/calib.h, nc_calib_plain): the
 * provisional rule used before rules were fitted, and still the rule of a
 * file without a calibration section:
 *   CNN:          softmax(NC_BACKEND_CNN_BETA * y), y the scaled-tanh
 *                 outputs (a clean +1 / -1 answer gives p ~ 0.98);
 *   neocognitron: p = s / sum(s), its per-class scores normalised (UC4
 *                 responses or interpolating-vector cosines); when nothing
 *                 fired (sum 0) p is uniform and -ENOENT is returned
 *                 so the caller can treat it as "no opinion".
 * p is written in every case; -EINVAL for bad arguments. */
#define NC_BACKEND_CNN_BETA 3.0f
int nc_backend_calibrate(uint32_t kind, const float *raw, uint32_t n_classes,
                         float *p);

/* Calibrated scores with the rule of be's file: p[k] >= 0, summing to 1,
 * comparable across models.  The fitted rule (an inverse temperature fitted
 * on validation data, core/calib/calib.h) when the file has one, else the plain
 * rule above.  Same returns as nc_backend_calibrate. */
int nc_backend_probs(const nc_backend *be, const float *raw, float *p);

/* The confidence below which be's answers should be rejected, chosen on
 * validation with its fitted rule (e.g. the least confident 1 %); 0 (never)
 * without one. */
double nc_backend_reject_threshold(const nc_backend *be);

/* The ensemble rule for this pair of open models: the rule stored in the
 * CNN file when it was fitted with this very neocognitron file (its
 * fingerprint), else the plain rule.  Returns 0 (stored rule), -ENOENT (no
 * rule stored: plain) or -ESTALE (stored for another neocognitron file:
 * plain; worth a log line).  *ret is usable in every case but -EINVAL. */
int nc_backend_ensemble_rule(const nc_backend *cnn, const nc_backend *neo,
                             nc_ens_rule *ret);

/* Plain ensemble rule: the mean of the two calibrated vectors; if one model
 * had no opinion (see above) the other's vector alone.  n_classes must
 * agree.  Returns -ENOENT when neither had an opinion (p then uniform).
 * nc_ens_apply (core/calib/calib.h) applies a fitted rule. */
int nc_backend_ensemble(const float *p_cnn, int cnn_ok, const float *p_neo,
                        int neo_ok, uint32_t n_classes, float *p);

#endif

/* tools/train_calib.h — what the committee, calibrate and eval subcommands
 * share: running a model file over MNIST digits for its raw scores, and the
 * rejection report.
 *
 * Layer: tools.  The subcommands of issue 6 are declared here rather than in
 * train_common.h, beside the helpers only they use. */
#ifndef NC_TRAIN_CALIB_H
#define NC_TRAIN_CALIB_H

#include "train_common.h"

#include "backend.h"

int train_committee_main(int argc, char **argv, const train_cmdline *cmd); /* train_committee.c */
int train_calibrate_main(int argc, char **argv, const train_cmdline *cmd); /* train_calibrate.c */
int train_cascade_main(int argc, char **argv, const train_cmdline *cmd);   /* train_cascade.c */
/* calibrate --rebind (train_rebind.c): model's ensemble rule moved from the
 * neocognitron file old_neo to new_neo, which may differ from it only in its
 * record's text; written to out.  A TRAIN_EXIT_ status; prints as who. */
int train_rebind(const char *who, const char *model, const char *old_neo, const char *new_neo,
                 const char *out, const char *command);
/* A committee's own record from its n members' records mi[]: classes and
 * prep from the first; for n > 1 the data line "committee of n <noun>,
 * each: ..." (or "... trained on different data (see each <each>)") and no
 * epochs or seed of its own; the bundling command and time unless n is 1
 * and keep_one; the test error unknown until measured. */
void train_committee_record(const nc_model_info *mi, uint32_t n, const char *noun,
                            const char *each, const char *command, int keep_one,
                            nc_model_info *info);
/* How the committee subcommand bundles neocognitron files. */
typedef struct train_neocog_bundle {
    uint32_t threads;
    int gpu;                    /* < 0: measure on the CPU */
    uint32_t flags;             /* NC_NEOCOG_WRITE_HALF or _LOG8, or 0 */
    uint32_t n_heights;         /* 0: one view, at the members' height */
    uint32_t heights[NC_PREP_MAX_VIEWS];    /* the committee's views */
} train_neocog_bundle;
/* The committee subcommand given neocognitron files (paths[n_paths]). */
int train_committee_neocog(char *const *paths, uint32_t n_paths, const char *out_path,
                           const char *dir, const train_neocog_bundle *how,
                           const char *command);

/* "views       46 px gently sheared, ..." for a prep with views (image.h). */
void train_print_views(const nc_prep *p, uint32_t kind);

/* A member's recorded test error for the committee's listing: "unknown" or
 * "0.38% (MNIST t10k (10000))", then a newline. */
void train_print_recorded_test(const nc_model_info *mi);
/* The committee's measured test line ("test        MNIST t10k: error ..."),
 * and the error written into its record before it is saved again. */
void train_record_test(nc_model_info *info, uint32_t errors, uint32_t n, double seconds);

/* p's views for committee --heights: every box of heights[n_heights] for
 * each deskew of shears[n_shears], shear after shear.  -E2BIG past
 * NC_PREP_MAX_VIEWS views, -ERANGE when a box does not fit p's field (p
 * then keeps the views, invalid); prints nothing. */
int train_set_views(const uint32_t *heights, uint32_t n_heights, const uint32_t *shears,
                    uint32_t n_shears, nc_prep *p);

/* The validation split: MNIST training digits [50000, 60000).  Every rule
 * is fitted on it; the test set is only ever measured. */
#define TRAIN_VALID_FIRST 50000u
#define TRAIN_VALID_COUNT 10000u

/* Model files are read whole; the shipped neocognitron is 14 MB. */
#define TRAIN_MODEL_MAX_BYTES ((size_t)1 << 31)

/* Read a model file and open it on the CPU engine table.  *ret_buf (may be
 * NULL) keeps the file image for the caller; else it is freed.  Prints what
 * went wrong, prefixed with who. */
int train_open_model(const char *who, const char *path, nc_backend **ret_be,
                     uint8_t **ret_buf, size_t *ret_len);
/* The same, a neocognitron file on CUDA device gpu (a CUDA build); CNN
 * files, and everything when gpu < 0, on the CPU. */
int train_open_model_on(const char *who, const char *path, int gpu, nc_backend **ret_be,
                        uint8_t **ret_buf, size_t *ret_len);

/* Raw scores of be on digits [first, first + count) of d, each prepared
 * as the daemon prepares it (nc_image_clean_prep, core/image/image_clean.h: an
 * MNIST digit passes through unchanged) with the prep stored in the model
 * (its invert naming dark ink), split over threads (each
 * its own worker; OpenBLAS is held to one thread when there are several).
 * A digit with no ink runs as zeros and gets ok 0 (the daemon gives it no
 * opinion). */
typedef struct train_scores {
    const nc_backend *be;
    const nc_dataset *d;
    uint32_t first, count, threads;
    float *raw;                 /* [count][n_classes], the caller's */
    uint8_t *ok;                /* [count], the caller's */
    double seconds;             /* wall time */
    const nc_prep *prep;        /* NULL: the model's; else this one, same size */
    uint32_t batch;             /* digits a forward call; 0: a CPU-sized default */
} train_scores;

/* train_scores.batch for a model on a GPU: a device engine wants hundreds
 * of digits a call to be busy (the CPU default is 64). */
#define TRAIN_GPU_BATCH 512u
int train_scores_run(train_scores *s);

/* Labels of d [first, first + count) all below n_classes?  Prints the first
 * one that is not. */
int train_labels_ok(const char *who, const nc_dataset *d, uint32_t first, uint32_t count,
                    uint32_t n_classes);

/* Print "  <what>: reject 0.5% ...: error ..." lines: the error among the
 * accepted digits when the least confident 0.5 / 1 / 2 % of the answers are
 * rejected (answers ans[n], confidences conf[n], true labels lab[n]). */
int train_report_rejection(const char *what, const int32_t *ans, const float *conf,
                           const uint8_t *lab, uint32_t n);

/* Print what a stored threshold t does on these digits: the fraction it
 * rejects and the error among the rest. */
void train_report_threshold(const char *what, double t, const int32_t *ans, const float *conf,
                            const uint8_t *lab, uint32_t n);

/* Calibrated answers from raw scores of a model of kind with n_classes:
 * p = nc_calib_apply(cal, ...) (cal NULL or not fitted: the plain rule),
 * answer = argmax p (-1 with no opinion: ok[i] 0 or nothing fired),
 * confidence = max p (0 with no opinion).  p_out[n][n_classes] and
 * ok_out[n] (the opinion flags) may be NULL. */
void train_calibrated(const nc_calib *cal, uint32_t kind, uint32_t n_classes,
                      const float *raw, const uint8_t *ok, uint32_t n, int32_t *ans,
                      float *conf, float *p_out, uint8_t *ok_out);

/* The same for the ensemble of two calibrated sets of rows under rule (NULL
 * or not fitted: the plain mean). */
void train_ensembled(const nc_ens_rule *rule, const float *p_cnn, const uint8_t *cnn_ok,
                     const float *p_neo, const uint8_t *neo_ok, uint32_t n,
                     uint32_t n_classes, int32_t *ans, float *conf);

/* Errors of ans[n] against lab[n]. */
uint32_t train_count_errors(const int32_t *ans, const uint8_t *lab, uint32_t n);

#endif

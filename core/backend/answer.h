/* core/backend/answer.h — the answer rule: from each network's raw outputs for one
 * input to what is answered (a label or a reject, its confidence, the
 * calibrated probabilities, the best candidates, why it was rejected and the
 * threshold that decided it).
 *
 * Layer: core (pure C11 over backend.h and calib.h; no I/O, nothing logs).
 * The daemon answers every image and every segmented digit through
 * nc_answer_compute, and offline tools that call it answer the same way, so
 * a threshold or rule means one thing everywhere.
 *
 * The rule, per model:
 *   CNN or neocognitron alone: the network's raw scores through the rule
 *     fitted for its file (nc_backend_probs); the label is the best raw score
 *     (nc_backend_label).  The threshold a caller leaves to the model (0) is
 *     the one stored with the file's fitted rule (nc_backend_reject_threshold).
 *   Ensemble: both calibrated vectors combined by the ensemble rule
 *     (nc_ens_apply: the fitted weight, or the plain mean); a network without
 *     an opinion (no ink, or a neocognitron that fired nothing) leaves the
 *     other alone; the label is the best combined probability (first on
 *     ties).  The threshold left to the model is the ensemble rule's stored
 *     one when the rule is fitted, else none.
 * The confidence is the label's calibrated probability; an answer below the
 * threshold in force is rejected (label -1), keeping its confidence and its
 * best class (nc_answer.best), so a caller can still show what it nearly
 * said. */
#ifndef NC_ANSWER_H
#define NC_ANSWER_H

#include "backend.h"

/* Which network answers.  Same numbers as the protocol's Model enum
 * (proto/neocog.proto), so the daemon passes a request's model through. */
typedef enum nc_answer_model {
    NC_ANSWER_MODEL_CNN = 1,
    NC_ANSWER_MODEL_NEOCOG = 2,
    NC_ANSWER_MODEL_ENSEMBLE = 3,
} nc_answer_model;

/* Index of each network in nc_answer_in's arrays. */
enum { NC_ANSWER_NET_CNN = 0, NC_ANSWER_NET_NEOCOG = 1, NC_ANSWER_NETS = 2 };

/* Why an answer is a reject.  Same numbers as the protocol's RejectReason. */
typedef enum nc_answer_reason {
    NC_ANSWER_REASON_NONE = 0,              /* not rejected */
    NC_ANSWER_REASON_NO_INK = 1,            /* preprocessing found no ink for
                                               any network that answers */
    NC_ANSWER_REASON_BELOW_THRESHOLD = 2,   /* confidence < the threshold */
    NC_ANSWER_REASON_AMBIGUOUS_SEGMENTATION = 3, /* never set here: a caller
                                               that segmented the input uses it
                                               (see nc_answer_segment_reason) */
    NC_ANSWER_REASON_NO_RESPONSE = 4,       /* there was ink but no network
                                               had an opinion (a neocognitron
                                               that fired no cell) */
} nc_answer_reason;

/* The threshold argument (nc_answer_in.threshold):
 *   > 0  apply this minimum confidence (0..1; above 1 rejects everything);
 *   0    the threshold stored with the rule in use (see above; none when
 *        that rule is not fitted);
 *   < 0  no threshold at all: every answer with an opinion is accepted. */
#define NC_ANSWER_THRESHOLD_MODEL 0.0
#define NC_ANSWER_THRESHOLD_NONE (-1.0)

typedef struct nc_answer_in {
    uint32_t model;                         /* nc_answer_model */
    /* The open model of each network the model needs ([NC_ANSWER_NET_*];
     * the other may be NULL).  An ensemble needs both, with equal
     * n_classes. */
    const nc_backend *be[NC_ANSWER_NETS];
    /* Each needed network's raw outputs for this input (be->info.n_classes
     * floats, nc_backend_ops.forward's row). */
    const float *raw[NC_ANSWER_NETS];
    /* 1 when that network's preprocessing found ink (nc_prep_apply gave an
     * input); 0: its raw outputs are of an empty input and carry no
     * opinion. */
    int ink[NC_ANSWER_NETS];
    /* Ensemble only: the rule for this pair of files
     * (nc_backend_ensemble_rule); NULL: the plain mean. */
    const nc_ens_rule *rule;
    double threshold;                       /* see above */
    uint32_t top_k;                         /* candidates wanted; 0 means 1,
                                               capped at n_classes */
    /* The classes that may be answered (a request's character set: letters
     * and digits out of a 94-class model): mask[k] != 0 for each, n_classes
     * entries; NULL: every class.  The others get probability 0 and are
     * never the best class nor a candidate, and the allowed classes'
     * calibrated probabilities are renormalised to sum to 1 before the
     * threshold applies. */
    const uint8_t *mask;
} nc_answer_in;

typedef struct nc_answer {
    int32_t label;              /* the answer, -1 when rejected */
    int32_t best;               /* the best class even when rejected for the
                                   threshold; -1 when no network had an
                                   opinion */
    float confidence;           /* calibrated probability of best; 0 without
                                   an opinion */
    uint32_t reason;            /* nc_answer_reason; NONE iff label >= 0 */
    double threshold;           /* the threshold in force (0: none) */
    uint32_t n_classes;
    /* Single network: its raw outputs; ensemble: the combined probabilities
     * (what the protocol's Result.scores carries). */
    float scores[NC_MF_MAX_CLASSES];
    float prob[NC_MF_MAX_CLASSES];          /* calibrated, summing to 1 */
    uint32_t n_top;                         /* min(top_k, n_classes) */
    uint8_t top[NC_MF_MAX_CLASSES];         /* classes by prob, best first
                                               (lower class first on ties) */
} nc_answer;

/* The answer for one input.  0, or -EINVAL (a needed backend or raw row
 * missing, an unknown model, n_classes out of range, an ensemble whose
 * networks disagree on n_classes) with *ret untouched. */
int nc_answer_compute(const nc_answer_in *in, nc_answer *ret);

/* The threshold in force for in's model, backends, rule and threshold
 * argument (raw rows, ink and top_k are not read): what nc_answer_compute
 * reports in nc_answer.threshold, known without an input to answer (a
 * frame with no character; a server's status).  0: none, or bad arguments. */
double nc_answer_threshold_in_force(const nc_answer_in *in);

/* The threshold to pass for a request's minimum confidence given the
 * configured one, both in the convention above (0: leave it to the next
 * level): the request's when it names one (non-zero), else the configured
 * one. */
double nc_answer_threshold(double configured, double requested);

/* The classes of prob[n_classes] by probability, best first, lower class
 * first on ties: the first k into top[k] (k <= n_classes). */
void nc_answer_rank(const float *prob, uint32_t n_classes, uint32_t k, uint8_t *top);

/* The reject reason of a segmented piece: a piece core/segment built from
 * several components or cut out of a wider one (NC_SEGMENT_DIGIT_MERGED /
 * _SPLIT in segment_flags) that the answer rejected for the threshold is
 * AMBIGUOUS_SEGMENTATION (a misjudged cut or join is the likelier cause);
 * any other reason stands. */
uint32_t nc_answer_segment_reason(uint32_t reason, uint32_t segment_flags);

/* "none", "no ink", "below threshold", "ambiguous segmentation",
 * "no response"; "?" for anything else. */
const char *nc_answer_reason_text(uint32_t reason);

#endif

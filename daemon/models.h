/* daemon/models.h — the set of models being served, and reloading it.
 *
 * Layer: daemon.  A "generation" (nc_models) holds at most one model per
 * slot (CNN, neocognitron, chars), each an open backend (core/backend/backend.h).  Workers
 * take a reference to the current generation for each batch, so a reload
 * swaps the pointer and the old generation dies when its last batch ends:
 * no request is dropped or sees half a reload.  Models are refcounted on
 * their own too, because a reload that fails for one slot keeps serving
 * that slot's old model inside the new generation. */
#ifndef NC_MODELS_H
#define NC_MODELS_H

#include <stdatomic.h>
#include <stdint.h>

#include "backend.h"
#include "config.h"

/* The chars slot holds a model of more classes than the ten digits (the 94
 * printable ASCII characters), CNN or neocognitron: the one a request's
 * charset "alnum" or "all" is answered from.  The cnn and neocognitron
 * slots stay the digit models. */
enum { NC_SLOT_CNN = 0, NC_SLOT_NEOCOG = 1, NC_SLOT_CHARS = 2, NC_SLOTS = 3 };

/* A folder's model file of more classes than this goes to the chars slot. */
#define NC_DIGIT_CLASSES 10

/* GPUs one model spreads over at most. */
#define NC_MAX_LANES 16

typedef struct nc_model {
    atomic_uint refs;
    /* The model as the engines see it (kind, info, input_len): lane[0]
     * when a GPU runs it, else cpu.  Every engine below holds the same file. */
    nc_backend *be;
    /* Engines that run it: one per GPU used ("lane", cuda:0..), batches
     * going to the least busy live one; and the CPU table, always open: the
     * only engine without a GPU, and the fallback when a GPU fails. */
    nc_backend *lane[NC_MAX_LANES];
    uint32_t n_lanes;
    atomic_uint lane_busy[NC_MAX_LANES];    /* batches in flight */
    atomic_int lane_dead[NC_MAX_LANES];     /* failed: never used again */
    atomic_uint lane_next;                  /* where a tie starts looking */
    nc_backend *cpu;
    /* Work done per engine (lanes, then the CPU at [NC_MAX_LANES]), for
     * /metrics. */
    atomic_uint_fast64_t batches[NC_MAX_LANES + 1], images[NC_MAX_LANES + 1];
    char engines[160];          /* "cuda:0,cuda:1" or "cpu", for logs */
    char path[NC_CONFIG_PATH_MAX];
    char arch[320];             /* CNN notation; the neocognitron: its committee, views, cascade */
    uint64_t loaded_at;         /* Unix time */
} nc_model;

typedef struct nc_models {
    atomic_uint refs;
    nc_model *slot[NC_SLOTS];   /* NULL: not loaded */
    /* Per slot: the file tried last and, if that failed, why (the slot may
     * still hold an older model). */
    char path[NC_SLOTS][NC_CONFIG_PATH_MAX];
    char error[NC_SLOTS][512];
} nc_models;

/* nc_models_load flags. */
enum {
    /* A file named explicitly (cnn_model, neocog_model, chars_model) that fails is an
     * error of the whole load, returned at once (named files load before
     * the folder is read): at start-up, serving without a model the
     * operator asked for would hide the mistake.  Without the flag (a
     * reload) the slot keeps prev's model. */
    NC_MODELS_NAMED_MUST_LOAD = 1u << 0,
};

/* Load the models cfg names: the explicit files, else the *.ncm files of
 * each kind in cfg->models in name order.  A folder's file that cannot be
 * read, is not a sound model file or fails to load is skipped with a
 * warning and the next one of its kind is tried, except that a reload
 * never goes past the file prev's model came from: that file failing keeps
 * prev's model.  Each model is opened on
 * every GPU used (cfg->gpus; cnn_gpu_lanes or neocog_gpu_lanes engines a
 * GPU, adjacent in lane[]) and on the CPU, checked and warmed by one
 * forward pass per engine.  A GPU that cannot take a model is logged with
 * the reason and left out for it (no GPU at all: the CPU serves it).  A
 * slot whose file fails keeps prev's model (prev may be NULL).  Fails with
 * -ENOENT when the result has no model at all, or (NC_MODELS_NAMED_MUST_LOAD)
 * with -EINVAL when a named file fails; otherwise per-slot problems are in
 * ->error.  summary gets one line: what each slot did, or why it failed. */
int nc_models_load(const nc_config *cfg, const nc_models *prev, unsigned flags,
                   nc_models **ret, char *summary, size_t summary_len);

nc_models *nc_models_ref(nc_models *m);
void nc_models_unref(nc_models *m);             /* NULL is fine */
nc_model *nc_model_ref(nc_model *m);
void nc_model_unref(nc_model *m);               /* NULL is fine */

const char *nc_slot_name(int slot);             /* "cnn", "neocognitron", "chars" */

/* Which slots a request's model (Neocog__Model, resolved: CNN, neocognitron,
 * ensemble or chars) runs: need[s] 1 for each. */
void nc_model_needs(uint32_t model, int need[NC_SLOTS]);

/* A request's charset (RecognizeRequest.charset): "" or "digits" the digit
 * models, "alnum" the chars model restricted to letters and digits, "all"
 * the chars model.  nc_charset_parse gives -1 for anything else. */
enum { NC_CHARSET_DIGITS = 0, NC_CHARSET_ALNUM = 1, NC_CHARSET_ALL = 2 };
int nc_charset_parse(const char *name);
/* The classes of m that charset allows (core/backend/answer.h's mask: mask[k] 1
 * for each of m's n_classes), by their labels: ALNUM allows the labels
 * that are one ASCII letter or digit; any other charset every class. */
void nc_charset_mask(const nc_model *m, int charset, uint8_t *mask);

/* The engine for the next batch of m: the live lane with the fewest
 * batches in flight (ties rotate, so idle GPUs take turns), counted busy
 * until nc_model_lane_done; -1 when no lane is live: use m->cpu. */
int nc_model_lane_pick(nc_model *m);
void nc_model_lane_done(nc_model *m, int lane);
/* Lane `lane` failed a forward with err (on this thread): stop using it and
 * log why, once. */
void nc_model_lane_fail(nc_model *m, int lane, int err);
/* Lane `lane`'s name: "cuda:0" for a device's first engine, "cuda:0/1" for
 * its second (cnn_gpu_lanes, neocog_gpu_lanes), so that metrics never
 * repeat a label. */
void nc_model_lane_name(const nc_model *m, uint32_t lane, char *dst, size_t cap);

#endif

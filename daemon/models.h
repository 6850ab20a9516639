/* daemon/models.h — the set of models being served, and reloading it.
 *
 * Layer: daemon.  A "generation" (nc_models) holds at most one model per
 * slot (CNN, neocognitron), each an open backend (core/backend.h).  Workers
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

enum { NC_SLOT_CNN = 0, NC_SLOT_NEOCOG = 1, NC_SLOTS = 2 };

typedef struct nc_model {
    atomic_uint refs;
    nc_backend *be;
    char path[NC_CONFIG_PATH_MAX];
    char arch[256];             /* CNN notation, "" for the neocognitron */
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

/* Load the models cfg names (explicit files, else the first *.ncm of each
 * kind in cfg->models, in name order), each opened, checked and warmed by
 * one forward pass.  A slot whose file fails keeps prev's model (prev may
 * be NULL).  Fails (-ENOENT) only when the result has no model at all;
 * otherwise per-slot problems are in ->error.  summary gets one line. */
int nc_models_load(const nc_config *cfg, const nc_models *prev, uint32_t max_batch,
                   nc_models **ret, char *summary, size_t summary_len);

nc_models *nc_models_ref(nc_models *m);
void nc_models_unref(nc_models *m);             /* NULL is fine */
nc_model *nc_model_ref(nc_model *m);
void nc_model_unref(nc_model *m);               /* NULL is fine */

const char *nc_slot_name(int slot);             /* "cnn", "neocognitron" */

#endif

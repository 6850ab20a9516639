/* daemon/work.h — what a worker thread does with one batch: decode each
 * image, normalise its polarity, preprocess it for every network the
 * request wants, run each network once over the whole batch through the
 * backend table, and turn raw scores into answers.
 *
 * Layer: daemon.  Runs on worker threads only; touches nothing but the
 * tasks it was given and its own nc_work. */
#ifndef NC_WORK_H
#define NC_WORK_H

#include "config.h"
#include "models.h"
#include "request.h"

typedef struct nc_work nc_work;

int nc_work_new(const nc_config *cfg, nc_work **ret);
void nc_work_free(nc_work *w);                  /* NULL is fine */

/* Answer tasks[0..n) (same model) using gen; fills every task's answer
 * fields and takes a reference on gen for each task. */
void nc_work_run(nc_work *w, nc_models *gen, nc_task **tasks, uint32_t n);

#endif

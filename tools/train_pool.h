/* tools/train_pool.h — a small pool of worker threads that runs the parts of
 * a core computation: a runner for nc_neocog_learner_set_runner (core starts
 * no threads of its own).
 *
 * Layer: tools.  The caller's thread takes part in every run, so a pool of N
 * threads starts N - 1 workers; N = 1 starts none and runs everything on the
 * caller. */
#ifndef NC_TRAIN_POOL_H
#define NC_TRAIN_POOL_H

#include <stdint.h>

#include "neocog.h"

typedef struct train_pool train_pool;

/* threads: 1..NC_NEOCOG_MAX_PARTS.  0 or a negative errno (-EAGAIN when the
 * system refused a thread; nothing is left running then). */
int train_pool_new(uint32_t threads, train_pool **ret_pool);
void train_pool_free(train_pool *pool);            /* NULL is fine */
uint32_t train_pool_threads(const train_pool *pool);

/* An nc_neocog_runner_fn with ctx = the pool: task(arg, p) for every p in
 * [0, n_parts), spread over the workers and the caller, back when all are
 * done.  One run at a time per pool (-EBUSY otherwise, having run nothing). */
int train_pool_run(void *pool, nc_neocog_task_fn task, void *arg, uint32_t n_parts);

/* One run of n_parts parts on up to `threads` threads (a pool made and freed
 * for it; when the system refuses threads, all parts run on the caller).
 * For the one-off spreads of evaluation and scoring. */
int train_pool_spread(uint32_t threads, nc_neocog_task_fn task, void *arg, uint32_t n_parts);

#endif

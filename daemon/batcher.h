/* daemon/batcher.h — the dynamic batcher: one bounded queue for every
 * connection, worker threads that take batches from it, and the way
 * results get back to the event thread.
 *
 * Layer: daemon.  The event thread submits whole requests (all images or
 * none: RESOURCE_EXHAUSTED at once when the queue is full).  Each worker
 * takes up to max_batch images of one model from the highest non-empty
 * priority class, oldest first (cfg->priority_workers more threads take
 * only the high class, so a camera frame never waits for a worker to finish
 * a bulk batch); if fewer than max_batch are queued it
 * waits at most max_queue_delay_us (from the oldest image's arrival) for
 * more, then runs what it has (delay 0: never waits, like Triton's default).
 * Finished tasks go onto a completion list and an eventfd wakes the event
 * loop (memcached's thread.c pattern), so the loop never blocks on a
 * worker and workers never touch a connection. */
#ifndef NC_BATCHER_H
#define NC_BATCHER_H

#include <stdatomic.h>
#include <stdint.h>

#include "config.h"
#include "models.h"
#include "request.h"

typedef struct nc_batcher nc_batcher;

/* Starts cfg->workers threads (0: one per online CPU) serving gen. */
int nc_batcher_new(const nc_config *cfg, nc_models *gen, nc_batcher **ret);
/* Stops and joins the workers (queued tasks are dropped unanswered: call
 * only when nothing is in flight or at exit). */
void nc_batcher_free(nc_batcher *b);

/* Queue every task of req.  -EAGAIN when the images or bytes would exceed
 * the queue's capacity (nothing queued). */
int nc_batcher_submit(nc_batcher *b, nc_request *req);
/* Tell the batcher req's bytes are no longer held (after its reply). */
void nc_batcher_release(nc_batcher *b, const nc_request *req);

/* Serve gen from the next batch on (takes its own reference). */
void nc_batcher_set_models(nc_batcher *b, nc_models *gen);

/* The eventfd that becomes readable when tasks completed. */
int nc_batcher_done_fd(const nc_batcher *b);
/* Clear the eventfd and take every completed task (a list via ->next, in
 * completion order). */
nc_task *nc_batcher_take_done(nc_batcher *b);

typedef struct nc_batcher_stats {
    uint32_t workers;
    uint32_t priority_workers;  /* beside them: high-priority work only */
    uint32_t depth;             /* images queued now */
    uint64_t bytes;             /* request bytes held now */
    uint64_t batches;           /* forward batches run */
    uint64_t batch_images;      /* images in them */
    uint64_t progress;          /* ticks on every finished batch */
} nc_batcher_stats;
void nc_batcher_stats_get(nc_batcher *b, nc_batcher_stats *ret);

#endif

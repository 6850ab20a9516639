/* daemon/batcher.h — the dynamic batcher: a queue per model, shared by every
 * connection, worker threads of each queue that take batches from it, and
 * the way results get back to the event thread.
 *
 * Layer: daemon.  The event thread submits whole requests (all images or
 * none: RESOURCE_EXHAUSTED at once when the images queued for all models,
 * or the bytes held, would pass the capacity).  A request goes to the queue
 * of the model it resolved to: CNN, neocognitron, ensemble or chars (the ensemble
 * runs both networks in one batch, on its own queue).  Each queue has its
 * own cfg->workers threads and cfg->priority_workers more that take only
 * its high class, so a batch of one model never holds up a request for
 * another: a one-digit CNN request is answered while a neocognitron batch
 * runs for seconds on the CPU.
 *
 * A worker takes up to max_batch images from the highest non-empty priority
 * class of its queue, oldest first (a priority worker: from the high class
 * only, so a camera frame never waits for a bulk batch to finish); if
 * fewer than max_batch are queued it waits at most max_queue_delay_us (from
 * the oldest image's arrival) for more, then runs what it has (delay 0:
 * never waits, like Triton's default).  When the model runs on the CPU only,
 * a worker takes only its share of the class's images, split evenly with the
 * queue's idle workers, who take the rest at once, so one big request runs
 * on several cores instead of one.  Finished tasks go onto a completion list
 * and an eventfd wakes the event loop (memcached's thread.c pattern), so the
 * loop never blocks on a worker and workers never touch a connection. */
#ifndef NC_BATCHER_H
#define NC_BATCHER_H

#include <stdatomic.h>
#include <stdint.h>

#include "config.h"
#include "models.h"
#include "request.h"

typedef struct nc_batcher nc_batcher;

/* Starts, for each model's queue, cfg->workers threads (0: one per online
 * CPU) and cfg->priority_workers more, serving gen. */
int nc_batcher_new(const nc_config *cfg, nc_models *gen, nc_batcher **ret);
/* Stops and joins the workers (queued tasks are dropped unanswered: call
 * only when nothing is in flight or at exit). */
void nc_batcher_free(nc_batcher *b);

/* Queue every task of req on its model's queue.  -EAGAIN when the images or
 * bytes would exceed the capacity (nothing queued); -EINVAL when req->model
 * is not CNN, neocognitron, ensemble or chars. */
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
    uint32_t workers;           /* threads of each model's queue */
    uint32_t priority_workers;  /* beside them, each queue's: its high class only */
    uint32_t depth;             /* images queued now, every queue */
    uint64_t bytes;             /* request bytes held now */
    uint64_t batches;           /* forward batches run */
    uint64_t batch_images;      /* images in them */
    uint64_t progress;          /* ticks on every finished batch */
} nc_batcher_stats;
void nc_batcher_stats_get(nc_batcher *b, nc_batcher_stats *ret);

#endif

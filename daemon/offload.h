/* daemon/offload.h — work taken off the event thread: jobs run in order on
 * a thread of their own and come back to the event thread to finish.
 *
 * Layer: daemon.  The same pattern as the batcher's completions (an
 * eventfd wakes the loop, which takes the finished jobs under a lock), for
 * work that must happen before a request can reach the batcher: an HTTP
 * call's body parsed into its Request (http_call.c).  A job belongs to the
 * thread between submit and its run's end, to the event thread otherwise. */
#ifndef NC_OFFLOAD_H
#define NC_OFFLOAD_H

#include <event2/event.h>

typedef struct nc_offload_job {
    struct nc_offload_job *next;
    void (*run)(struct nc_offload_job *job);        /* the offload thread */
    void (*finish)(struct nc_offload_job *job);     /* the event thread, after run */
} nc_offload_job;

typedef struct nc_offload nc_offload;

/* A thread and the event on base that brings its jobs back. */
int nc_offload_new(struct event_base *base, nc_offload **ret);
/* Event thread: run job, then finish it. */
void nc_offload_submit(nc_offload *o, nc_offload_job *job);
/* Event thread: stops and joins the thread; every job submitted and not
 * finished yet (run or not) goes to drop instead.  NULL is fine. */
void nc_offload_free(nc_offload *o, void (*drop)(nc_offload_job *job));

#endif

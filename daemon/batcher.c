/* daemon/batcher.c — see batcher.h. */
#include "batcher.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "work.h"

#define N_PRIO 3
/* One queue per model a request resolves to: Neocog__Model 1..4 (CNN,
 * neocognitron, ensemble, chars) at index model - 1. */
#define N_QUEUES 4

typedef struct fifo {
    nc_task *head, *tail;
    uint32_t n;
} fifo;

/* One model's queue and the state its workers wait on.  Everything here is
 * under the batcher's lock. */
typedef struct queue {
    uint32_t model;             /* Neocog__Model */
    fifo cls[N_PRIO];           /* by priority class, 0 high */
    uint32_t depth;             /* images in cls[] */
    uint32_t released[N_PRIO];  /* of cls[p], left behind by a shared (CPU)
                                   batch: taken without max_queue_delay_us */
    uint32_t idle, idle_high;   /* workers / priority workers waiting for work */
    uint32_t spinning;          /* workers polling `posted` before they sleep */
    atomic_uint_fast32_t posted;/* requests submitted, ever: what a polling
                                   worker watches without the lock */
    pthread_cond_t more;        /* tasks queued or stopping */
    pthread_cond_t more_high;   /* high-priority tasks queued or stopping: what
                                   the priority workers wait for */
} queue;

struct nc_batcher {
    pthread_mutex_t lock;
    queue q[N_QUEUES];
    uint32_t depth, capacity;   /* images queued on every queue, at most */
    uint64_t max_bytes;
    uint32_t max_batch;
    uint64_t max_delay_us;
    uint64_t spin_us;
    nc_models *gen;             /* current generation (ref) */
    int stopping;
    /* completions */
    pthread_mutex_t done_lock;
    nc_task *done_head, *done_tail;
    int done_fd;
    /* counters */
    atomic_uint_fast64_t bytes, batches, batch_images, progress;
    /* threads: per queue n_threads workers, then n_high priority workers */
    const nc_config *cfg;
    uint32_t n_threads, n_high, n_started;
    pthread_t *threads;
};

typedef struct worker_arg {
    nc_batcher *b;
    queue *q;
    int high_only;              /* a priority worker: q->cls[0] only */
} worker_arg;

static void fifo_push(fifo *f, nc_task *t)
{
    t->next = NULL;
    if (f->tail)
        f->tail->next = t;
    else
        f->head = t;
    f->tail = t;
    f->n++;
}

/* Take up to max tasks from f, oldest first. */
static uint32_t fifo_take(fifo *f, nc_task **out, uint32_t max)
{
    uint32_t n = 0;
    while (f->head && n < max) {
        nc_task *t = f->head;
        f->head = t->next;
        t->next = NULL;
        out[n++] = t;
    }
    if (!f->head)
        f->tail = NULL;
    f->n -= n;
    return n;
}

/* Whether every network `model` needs runs on the CPU alone in gen (no live
 * GPU lane).  There a batch is one thread's work from start to end, so a
 * big one is better split among idle workers; a GPU wants it whole. */
static int cpu_only(const nc_models *gen, uint32_t model)
{
    int need[NC_SLOTS];
    nc_model_needs(model, need);
    for (int s = 0; s < NC_SLOTS; s++) {
        nc_model *m = gen->slot[s];
        for (uint32_t i = 0; need[s] && m && i < m->n_lanes; i++)
            if (!atomic_load(&m->lane_dead[i]))
                return 0;
    }
    return 1;
}

static void post_done(nc_batcher *b, nc_task **tasks, uint32_t n)
{
    pthread_mutex_lock(&b->done_lock);
    for (uint32_t i = 0; i < n; i++) {
        tasks[i]->next = NULL;
        if (b->done_tail)
            b->done_tail->next = tasks[i];
        else
            b->done_head = tasks[i];
        b->done_tail = tasks[i];
    }
    pthread_mutex_unlock(&b->done_lock);
    uint64_t one = 1;
    /* eventfd adds; a full counter (never in practice) still wakes. */
    while (write(b->done_fd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

/* Poll for the next request for up to b->spin_us before sleeping, the lock
 * released meanwhile; called with it held, returns with it held.  A worker
 * woken from pthread_cond_wait starts some tens of microseconds after the
 * signal (docs/benchmarks.md: the queue row of one request at a time), and
 * a client that sends its next request as soon as it has an answer does so
 * within that window; polling catches it at once.  Only a worker that has
 * just run a batch polls, so an idle daemon spends nothing, and
 * sched_yield() gives the core to any other runnable thread. */
static void spin(nc_batcher *b, queue *q)
{
    const uint_fast32_t seen = atomic_load_explicit(&q->posted, memory_order_relaxed);
    q->spinning++;
    pthread_mutex_unlock(&b->lock);
    const uint64_t until = nc_now_us() + b->spin_us;
    while (atomic_load_explicit(&q->posted, memory_order_relaxed) == seen &&
           nc_now_us() < until)
        sched_yield();
    pthread_mutex_lock(&b->lock);
    q->spinning--;
}

/* A worker of queue q takes the oldest tasks of its highest non-empty class
 * (a priority worker: of class 0 only), up to max_batch of them, or on the
 * CPU its share of them. */
static void *worker_main(void *arg)
{
    nc_batcher *b = ((worker_arg *)arg)->b;
    queue *q = ((worker_arg *)arg)->q;
    const int high_only = ((worker_arg *)arg)->high_only;
    pthread_cond_t *more = high_only ? &q->more_high : &q->more;
    uint32_t *idle = high_only ? &q->idle_high : &q->idle;
    free(arg);
    nc_work *w = NULL;
    nc_task **batch = calloc(b->max_batch, sizeof *batch);
    if (nc_work_new(b->cfg, &w) || !batch) {
        nc_log(NC_LOG_ERR, "worker: out of memory at start");
        free(batch);
        nc_work_free(w);
        return NULL;
    }
    pthread_mutex_lock(&b->lock);
    int worked = 0;             /* a batch ran since this worker last slept */
    for (;;) {
        if (b->stopping)
            break;
        if (!high_only && q->depth == 0 && worked && b->spin_us) {
            worked = 0;
            spin(b, q);
            continue;
        }
        if (high_only ? !q->cls[0].head : q->depth == 0) {
            worked = 0;
            (*idle)++;
            pthread_cond_wait(more, &b->lock);
            (*idle)--;
            continue;
        }
        int p = 0;
        while (!q->cls[p].head)
            p++;
        nc_task *oldest = q->cls[p].head;
        if (q->depth < b->max_batch && b->max_delay_us && !q->released[p]) {
            uint64_t due = oldest->req->t_recv + b->max_delay_us, now = nc_now_us();
            if (now < due) {
                /* Sleep until the oldest image's delay is used up or more
                 * work arrives, then look again. */
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                uint64_t ns = (uint64_t)ts.tv_nsec + (due - now) * 1000u;
                ts.tv_sec += (time_t)(ns / 1000000000u);
                ts.tv_nsec = (long)(ns % 1000000000u);
                pthread_cond_timedwait(more, &b->lock, &ts);
                continue;
            }
        }
        uint32_t max = b->max_batch, shared = 0;
        if (cpu_only(b->gen, q->model)) {
            /* This worker and every idle one that may take class p share
             * its images; the woken ones do the same with what is left,
             * at once: this batch was due. */
            uint32_t sharers = 1 + q->idle + (p == 0 ? q->idle_high : 0);
            uint32_t share = (q->cls[p].n + sharers - 1) / sharers;
            if (share < max) {
                max = share;
                shared = 1;
            }
        }
        uint32_t n = fifo_take(&q->cls[p], batch, max);
        q->released[p] = shared ? q->cls[p].n : q->released[p] > n ? q->released[p] - n : 0;
        q->depth -= n;
        b->depth -= n;
        nc_models *gen = nc_models_ref(b->gen);
        if (q->depth)
            pthread_cond_signal(&q->more);      /* another worker can start */
        if (q->cls[0].head)
            pthread_cond_signal(&q->more_high);
        pthread_mutex_unlock(&b->lock);

        nc_work_run(w, gen, batch, n);
        nc_models_unref(gen);
        /* The worker that finishes a request's last image builds its reply
         * here, before the tasks go back (request.h). */
        for (uint32_t i = 0; i < n; i++) {
            nc_request *req = batch[i]->req;
            if (req->on_worked && atomic_fetch_add(&req->n_worked, 1) + 1 == req->n_tasks)
                req->on_worked(req);
        }
        atomic_fetch_add(&b->batches, 1);
        atomic_fetch_add(&b->batch_images, n);
        atomic_fetch_add(&b->progress, 1);
        post_done(b, batch, n);

        pthread_mutex_lock(&b->lock);
        worked = 1;
    }
    pthread_mutex_unlock(&b->lock);
    nc_work_free(w);
    free(batch);
    return NULL;
}

int nc_batcher_new(const nc_config *cfg, nc_models *gen, nc_batcher **ret)
{
    nc_batcher *b = calloc(1, sizeof *b);
    if (!b)
        return -ENOMEM;
    pthread_mutex_init(&b->lock, NULL);
    pthread_mutex_init(&b->done_lock, NULL);
    /* The condition variables time out on CLOCK_MONOTONIC, like every
     * other clock here. */
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (uint32_t i = 0; i < N_QUEUES; i++) {
        b->q[i].model = NEOCOG__MODEL__MODEL_CNN + i;
        atomic_init(&b->q[i].posted, 0);
        pthread_cond_init(&b->q[i].more, &ca);
        pthread_cond_init(&b->q[i].more_high, &ca);
    }
    pthread_condattr_destroy(&ca);
    b->cfg = cfg;
    b->capacity = cfg->queue_capacity;
    b->max_bytes = cfg->queue_max_bytes;
    b->max_batch = cfg->max_batch;
    b->max_delay_us = cfg->max_queue_delay_us;
    b->spin_us = cfg->worker_spin_us;
    b->gen = nc_models_ref(gen);
    b->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (b->done_fd < 0) {
        int err = -errno;
        nc_batcher_free(b);
        return err;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    b->n_threads = cfg->workers ? cfg->workers : ncpu > 0 ? (uint32_t)ncpu : 1;
    b->n_high = cfg->priority_workers;
    const uint32_t per_queue = b->n_threads + b->n_high;
    b->threads = calloc((size_t)N_QUEUES * per_queue, sizeof *b->threads);
    if (!b->threads) {
        nc_batcher_free(b);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < N_QUEUES * per_queue; i++) {
        worker_arg *a = malloc(sizeof *a);
        int err = a ? 0 : ENOMEM;
        if (a) {
            *a = (worker_arg){ b, &b->q[i / per_queue], i % per_queue >= b->n_threads };
            if ((err = pthread_create(&b->threads[i], NULL, worker_main, a)))
                free(a);
        }
        if (err) {
            nc_batcher_free(b);
            return -err;
        }
        b->n_started++;
    }
    *ret = b;
    return 0;
}

void nc_batcher_free(nc_batcher *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    b->stopping = 1;
    for (uint32_t i = 0; i < N_QUEUES; i++) {
        pthread_cond_broadcast(&b->q[i].more);
        pthread_cond_broadcast(&b->q[i].more_high);
    }
    pthread_mutex_unlock(&b->lock);
    for (uint32_t i = 0; i < b->n_started; i++)
        pthread_join(b->threads[i], NULL);
    free(b->threads);
    nc_models_unref(b->gen);
    if (b->done_fd >= 0)
        close(b->done_fd);
    for (uint32_t i = 0; i < N_QUEUES; i++) {
        pthread_cond_destroy(&b->q[i].more);
        pthread_cond_destroy(&b->q[i].more_high);
    }
    pthread_mutex_destroy(&b->lock);
    pthread_mutex_destroy(&b->done_lock);
    free(b);
}

int nc_batcher_submit(nc_batcher *b, nc_request *req)
{
    if (req->model < NEOCOG__MODEL__MODEL_CNN || req->model >= NEOCOG__MODEL__MODEL_CNN + N_QUEUES)
        return -EINVAL;
    queue *q = &b->q[req->model - NEOCOG__MODEL__MODEL_CNN];
    pthread_mutex_lock(&b->lock);
    uint64_t bytes = atomic_load(&b->bytes);
    if (b->depth + (uint64_t)req->n_tasks > b->capacity || bytes + req->bytes > b->max_bytes ||
        b->stopping) {
        pthread_mutex_unlock(&b->lock);
        return -EAGAIN;
    }
    const uint32_t p = req->prio < N_PRIO ? req->prio : N_PRIO - 1;
    for (uint32_t i = 0; i < req->n_tasks; i++)
        fifo_push(&q->cls[p], &req->tasks[i]);
    q->depth += req->n_tasks;
    b->depth += req->n_tasks;
    atomic_fetch_add(&b->bytes, req->bytes);
    atomic_fetch_add_explicit(&q->posted, 1, memory_order_relaxed);
    /* a polling worker takes it (it looks again under the lock before it
     * sleeps); wake a sleeping one only when none polls */
    if (!q->spinning)
        pthread_cond_signal(&q->more);
    if (p == 0)
        pthread_cond_signal(&q->more_high);
    pthread_mutex_unlock(&b->lock);
    return 0;
}

void nc_batcher_release(nc_batcher *b, const nc_request *req)
{
    atomic_fetch_sub(&b->bytes, req->bytes);
}

void nc_batcher_set_models(nc_batcher *b, nc_models *gen)
{
    nc_models *old;
    pthread_mutex_lock(&b->lock);
    old = b->gen;
    b->gen = nc_models_ref(gen);
    pthread_mutex_unlock(&b->lock);
    nc_models_unref(old);
}

int nc_batcher_done_fd(const nc_batcher *b)
{
    return b->done_fd;
}

nc_task *nc_batcher_take_done(nc_batcher *b)
{
    uint64_t v;
    while (read(b->done_fd, &v, sizeof v) < 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&b->done_lock);
    nc_task *list = b->done_head;
    b->done_head = b->done_tail = NULL;
    pthread_mutex_unlock(&b->done_lock);
    return list;
}

void nc_batcher_stats_get(nc_batcher *b, nc_batcher_stats *ret)
{
    pthread_mutex_lock(&b->lock);
    ret->depth = b->depth;
    pthread_mutex_unlock(&b->lock);
    ret->workers = b->n_threads;
    ret->priority_workers = b->n_high;
    ret->bytes = atomic_load(&b->bytes);
    ret->batches = atomic_load(&b->batches);
    ret->batch_images = atomic_load(&b->batch_images);
    ret->progress = atomic_load(&b->progress);
}

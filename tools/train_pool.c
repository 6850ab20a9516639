/* tools/train_pool.c — see train_pool.h.
 *
 * One mutex and two condition variables: a run bumps a generation number and
 * wakes the workers; everyone (the caller included) takes the next part
 * until none is left; the last to finish a part wakes the caller.  Which
 * thread runs which part is left to chance: the parts write disjoint outputs,
 * so the result does not depend on it. */
#include "train_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct train_pool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint32_t threads, started;
    pthread_t *tid;
    /* the current run */
    uint64_t gen;
    nc_neocog_task_fn task;
    void *arg;
    uint32_t n_parts, next, finished;
    int busy, quit;
};

/* Take and run parts of the current run until none is left; mu held on
 * entry and on return. */
static void drain(train_pool *p)
{
    while (p->next < p->n_parts) {
        uint32_t part = p->next++;
        nc_neocog_task_fn task = p->task;
        void *arg = p->arg;
        pthread_mutex_unlock(&p->mu);
        task(arg, part);
        pthread_mutex_lock(&p->mu);
        if (++p->finished == p->n_parts)
            pthread_cond_signal(&p->done);
    }
}

static void *worker(void *arg)
{
    train_pool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit)
            break;
        seen = p->gen;
        drain(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int train_pool_new(uint32_t threads, train_pool **ret_pool)
{
    if (!ret_pool || threads < 1 || threads > NC_NEOCOG_MAX_PARTS)
        return -EINVAL;
    train_pool *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->tid = calloc(threads, sizeof(*p->tid));
    if (!p->tid) {
        free(p);
        return -ENOMEM;
    }
    p->threads = threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    for (uint32_t i = 1; i < threads; i++) {
        if (pthread_create(&p->tid[i], NULL, worker, p) != 0) {
            train_pool_free(p);
            return -EAGAIN;
        }
        p->started = i;
    }
    *ret_pool = p;
    return 0;
}

void train_pool_free(train_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (uint32_t i = 1; i <= p->started; i++)
        pthread_join(p->tid[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->tid);
    free(p);
}

uint32_t train_pool_threads(const train_pool *p)
{
    return p ? p->threads : 0;
}

int train_pool_run(void *pool, nc_neocog_task_fn task, void *arg, uint32_t n_parts)
{
    train_pool *p = pool;
    if (!p || !task)
        return -EINVAL;
    if (n_parts == 0)
        return 0;
    pthread_mutex_lock(&p->mu);
    if (p->busy) {
        pthread_mutex_unlock(&p->mu);
        return -EBUSY;
    }
    p->busy = 1;
    p->task = task;
    p->arg = arg;
    p->n_parts = n_parts;
    p->next = 0;
    p->finished = 0;
    p->gen++;
    if (p->started)
        pthread_cond_broadcast(&p->wake);
    drain(p);
    while (p->finished < p->n_parts)
        pthread_cond_wait(&p->done, &p->mu);
    p->busy = 0;
    pthread_mutex_unlock(&p->mu);
    return 0;
}

int train_pool_spread(uint32_t threads, nc_neocog_task_fn task, void *arg, uint32_t n_parts)
{
    if (!task)
        return -EINVAL;
    threads = threads < 1 ? 1 : threads > NC_NEOCOG_MAX_PARTS ? NC_NEOCOG_MAX_PARTS : threads;
    threads = threads > n_parts && n_parts ? n_parts : threads;
    train_pool *p = NULL;
    int err = train_pool_new(threads, &p);
    if (err == -EAGAIN)
        err = train_pool_new(1, &p);
    if (err < 0)
        return err;
    err = train_pool_run(p, task, arg, n_parts);
    train_pool_free(p);
    return err;
}

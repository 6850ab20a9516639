/* daemon/offload.c — see offload.h. */
#include "offload.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

typedef struct job_list {
    nc_offload_job *head, *tail;
} job_list;

struct nc_offload {
    pthread_mutex_t lock;
    pthread_cond_t more;
    job_list todo, done;
    int stopping;
    int fd;                     /* eventfd: jobs are done */
    struct event *ev;
    pthread_t thread;
};

static void list_push(job_list *l, nc_offload_job *j)
{
    j->next = NULL;
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
}

static void *offload_main(void *arg)
{
    nc_offload *o = arg;
    pthread_mutex_lock(&o->lock);
    for (;;) {
        while (!o->todo.head && !o->stopping)
            pthread_cond_wait(&o->more, &o->lock);
        if (o->stopping)
            break;
        nc_offload_job *j = o->todo.head;
        o->todo.head = j->next;
        if (!o->todo.head)
            o->todo.tail = NULL;
        pthread_mutex_unlock(&o->lock);
        j->run(j);
        pthread_mutex_lock(&o->lock);
        list_push(&o->done, j);
        uint64_t one = 1;
        /* eventfd adds; a full counter (never in practice) still wakes */
        while (write(o->fd, &one, sizeof one) < 0 && errno == EINTR)
            ;
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}

static void on_done(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    nc_offload *o = arg;
    uint64_t v;
    while (read(fd, &v, sizeof v) < 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&o->lock);
    nc_offload_job *j = o->done.head;
    o->done.head = o->done.tail = NULL;
    pthread_mutex_unlock(&o->lock);
    while (j) {
        nc_offload_job *next = j->next;
        j->finish(j);
        j = next;
    }
}

int nc_offload_new(struct event_base *base, nc_offload **ret)
{
    nc_offload *o = calloc(1, sizeof *o);
    if (!o)
        return -ENOMEM;
    o->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (o->fd < 0) {
        int err = -errno;
        free(o);
        return err;
    }
    o->ev = event_new(base, o->fd, EV_READ | EV_PERSIST, on_done, o);
    if (!o->ev || event_add(o->ev, NULL)) {
        if (o->ev)
            event_free(o->ev);
        close(o->fd);
        free(o);
        return -ENOMEM;
    }
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->more, NULL);
    int err = pthread_create(&o->thread, NULL, offload_main, o);
    if (err) {
        pthread_cond_destroy(&o->more);
        pthread_mutex_destroy(&o->lock);
        event_free(o->ev);
        close(o->fd);
        free(o);
        return -err;
    }
    *ret = o;
    return 0;
}

void nc_offload_submit(nc_offload *o, nc_offload_job *job)
{
    pthread_mutex_lock(&o->lock);
    list_push(&o->todo, job);
    pthread_cond_signal(&o->more);
    pthread_mutex_unlock(&o->lock);
}

static void drop_list(nc_offload_job *j, void (*drop)(nc_offload_job *))
{
    while (j) {
        nc_offload_job *next = j->next;
        drop(j);
        j = next;
    }
}

void nc_offload_free(nc_offload *o, void (*drop)(nc_offload_job *job))
{
    if (!o)
        return;
    pthread_mutex_lock(&o->lock);
    o->stopping = 1;
    pthread_cond_signal(&o->more);
    pthread_mutex_unlock(&o->lock);
    pthread_join(o->thread, NULL);
    drop_list(o->done.head, drop);
    drop_list(o->todo.head, drop);
    event_free(o->ev);
    close(o->fd);
    pthread_cond_destroy(&o->more);
    pthread_mutex_destroy(&o->lock);
    free(o);
}

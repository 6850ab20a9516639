/* daemon/reload.c — loading the models: the load itself runs on a
 * background thread (nc_models_load: read, check, warm up), which hands its
 * generation to the loop through reload_fd; on the loop, the first load
 * starts the workers and opens the listeners, and a reload swaps the new
 * generation in between batches (no request sees two), keeping the old model
 * of a slot whose new file fails.  One server a process: the thread's handle
 * is this file's own. */
#include "reload.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "accept.h"
#include "clock.h"
#include "handler.h"
#include "log.h"
#include "notify.h"

/* A batch finished (the batcher's eventfd, watched once the first load has
 * started the workers): its replies go out on the loop. */
static void on_done(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    nc_handle_done(arg);
}

static pthread_t reload_thread;
static int reload_thread_joinable;

/* snprintf for messages that may be cut short on purpose (paths can be
 * longer than the buffers). */
static void say(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, n, fmt, ap);
    va_end(ap);
}

/* The first load (s->models NULL) and every reload. */
static void *reload_main(void *arg)
{
    nc_server *s = arg;
    nc_models *prev = s->models;    /* stays alive: only on_reload_done swaps it */
    nc_models *g = NULL;
    char summary[512] = "";
    int err = nc_models_load(&s->cfg, prev, prev ? 0 : NC_MODELS_NAMED_MUST_LOAD, &g, summary,
                             sizeof summary);
    pthread_mutex_lock(&s->reload_lock);
    s->reload_result = err ? NULL : g;
    if (!prev && err == -EINVAL)
        say(s->reload_summary, sizeof s->reload_summary, "cannot load the %s", summary);
    else if (!prev && err)
        say(s->reload_summary, sizeof s->reload_summary,
            "no model could be loaded (%s); looked in %s%s%s%s%s", summary, s->cfg.models,
            s->cfg.cnn_model[0] ? ", " : "", s->cfg.cnn_model,
            s->cfg.neocog_model[0] ? ", " : "", s->cfg.neocog_model);
    else
        snprintf(s->reload_summary, sizeof s->reload_summary, "%s", summary);
    pthread_mutex_unlock(&s->reload_lock);
    uint64_t one = 1;
    ssize_t w = write(s->reload_fd, &one, sizeof one);
    (void)w;
    return NULL;
}

void nc_reload_start(nc_server *s)
{
    if (reload_thread_joinable) {
        pthread_join(reload_thread, NULL);
        reload_thread_joinable = 0;
    }
    s->reload_running = 1;
    s->reload_again = 0;
    s->state = NC_SERVER_RELOADING;
    char msg[128];
    snprintf(msg, sizeof msg, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, nc_now_us());
    nc_notify(msg);
    nc_server_notify_status(s);
    int err = pthread_create(&reload_thread, NULL, reload_main, s);
    if (err) {
        nc_log(NC_LOG_ERR, "reload: cannot start a thread: %s", strerror(err));
        s->reload_running = 0;
        s->state = NC_SERVER_SERVING;
        nc_notify("READY=1");
        return;
    }
    reload_thread_joinable = 1;
}

static void log_models(const nc_models *g)
{
    for (int k = 0; k < NC_SLOTS; k++) {
        const nc_model *m = g->slot[k];
        if (m)
            nc_log(NC_LOG_INFO, "model %s: %s (%u classes, input %ux%u%s%s) on %s",
                   nc_slot_name(k), m->path, m->be->info.n_classes,
                   m->be->info.prep.size + 2 * m->be->info.prep.pad,
                   m->be->info.prep.size + 2 * m->be->info.prep.pad, m->arch[0] ? ", " : "",
                   m->arch, m->engines);
        else
            nc_log(NC_LOG_NOTICE, "model %s: not loaded: %s", nc_slot_name(k), g->error[k]);
    }
}

static void fail_start(nc_server *s)
{
    s->exit_code = 1;
    event_base_loopbreak(s->base);
}

/* The first load finished (g NULL: it failed): start serving, or exit 1. */
static void on_loaded(nc_server *s, nc_models *g)
{
    int err;
    if (!g) {
        nc_log(NC_LOG_ERR, "%s", s->reload_summary);
        fail_start(s);
        return;
    }
    s->models = g;
    if (s->state == NC_SERVER_DRAINING || s->state == NC_SERVER_LEAVING)
        return;                 /* stopped meanwhile: never serve */
    log_models(g);
    snprintf(s->last_reload, sizeof s->last_reload, "none since start");
    if ((err = nc_batcher_new(&s->cfg, s->models, &s->batcher))) {
        nc_log(NC_LOG_ERR, "cannot start workers: %s", strerror(-err));
        fail_start(s);
        return;
    }
    s->done_ev = event_new(s->base, nc_batcher_done_fd(s->batcher), EV_READ | EV_PERSIST,
                           on_done, s);
    if (!s->done_ev || event_add(s->done_ev, NULL) || nc_accept_enable(s)) {
        nc_log(NC_LOG_ERR, "cannot set up the event loop");
        fail_start(s);
        return;
    }
    s->state = NC_SERVER_SERVING;
    nc_batcher_stats bs;
    nc_batcher_stats_get(s->batcher, &bs);
    char ready[128];
    snprintf(ready, sizeof ready, "READY=1\nMAINPID=%ld", (long)getpid());
    nc_notify(ready);
    nc_server_notify_status(s);
    nc_log(NC_LOG_NOTICE, "ready: %u workers (+%u for high priority) a model, max batch %u, "
           "queue %u images", bs.workers, bs.priority_workers, s->cfg.max_batch,
           s->cfg.queue_capacity);
    if (s->reload_again)
        nc_reload_start(s);
}

static void on_reload_done(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    nc_server *s = arg;
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof v);
    (void)r;
    pthread_mutex_lock(&s->reload_lock);
    nc_models *g = s->reload_result;
    s->reload_result = NULL;
    pthread_mutex_unlock(&s->reload_lock);
    s->reload_running = 0;
    if (!s->models) {
        on_loaded(s, g);
        return;
    }
    int failed = 0;
    if (g) {
        for (int k = 0; k < NC_SLOTS; k++)
            if (g->error[k][0] && g->path[k][0]) {
                failed = 1;
                nc_log(NC_LOG_ERR, "reload: %s model: %s%s", nc_slot_name(k), g->error[k],
                       g->slot[k] ? "; still serving the old model" : "");
            }
        nc_batcher_set_models(s->batcher, g);
        nc_models_unref(s->models);
        s->models = g;
        snprintf(s->last_reload, sizeof s->last_reload, "%s%s", failed ? "partly failed: " : "ok: ",
                 s->reload_summary);
    } else {
        failed = 1;
        snprintf(s->last_reload, sizeof s->last_reload,
                 "failed: no model could be loaded; old models kept (%s)", s->reload_summary);
    }
    if (failed)
        s->metrics.reloads_failed++;
    else
        s->metrics.reloads_ok++;
    nc_log(failed ? NC_LOG_WARNING : NC_LOG_NOTICE, "reload %s", s->last_reload);
    if (s->state == NC_SERVER_RELOADING)
        s->state = NC_SERVER_SERVING;
    if (s->state == NC_SERVER_SERVING) {
        nc_notify("READY=1");
        nc_server_notify_status(s);
        if (s->reload_again)
            nc_reload_start(s);
    }
}

int nc_reload_init(nc_server *s)
{
    s->reload_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->reload_fd < 0)
        return -errno;
    s->reload_ev = event_new(s->base, s->reload_fd, EV_READ | EV_PERSIST, on_reload_done, s);
    if (!s->reload_ev || event_add(s->reload_ev, NULL))
        return -ENOMEM;
    return 0;
}

int nc_reload_first(nc_server *s)
{
    s->reload_running = 1;
    int err = pthread_create(&reload_thread, NULL, reload_main, s);
    if (err) {
        nc_log(NC_LOG_ERR, "cannot start the thread that loads the models: %s", strerror(err));
        return -err;
    }
    reload_thread_joinable = 1;
    return 0;
}

void nc_reload_free(nc_server *s)
{
    if (reload_thread_joinable)
        pthread_join(reload_thread, NULL);
    reload_thread_joinable = 0;
    nc_models_unref(s->reload_result);
    s->reload_result = NULL;
    if (s->reload_ev)
        event_free(s->reload_ev);
    s->reload_ev = NULL;
    if (s->reload_fd >= 0)
        close(s->reload_fd);
    s->reload_fd = -1;
}

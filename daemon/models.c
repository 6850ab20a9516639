/* daemon/models.c — see models.h. */
#include "models.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cnn.h"
#include "log.h"
#include "modelfile.h"

#define MAX_MODEL_BYTES (512u << 20)

/* Engines in order of preference; the first whose supports() accepts the
 * model's kind gets it.  gpu/ will put its table in front of the CPU's. */
static const nc_backend_ops *const engines[] = { &nc_backend_cpu };

const char *nc_slot_name(int slot)
{
    return slot == NC_SLOT_CNN ? "cnn" : slot == NC_SLOT_NEOCOG ? "neocognitron" : "?";
}

static int read_file(const char *path, uint8_t **ret_buf, size_t *ret_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int err = 0;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) < 0) {
        err = -errno;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        err = -EINVAL;
        goto out;
    }
    if (st.st_size > MAX_MODEL_BYTES) {
        err = -EFBIG;
        goto out;
    }
    size_t len = (size_t)st.st_size, have = 0;
    buf = malloc(len ? len : 1);
    if (!buf) {
        err = -ENOMEM;
        goto out;
    }
    while (have < len) {
        ssize_t n = read(fd, buf + have, len - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            err = n < 0 ? -errno : -EBADMSG;   /* shrank while reading */
            goto out;
        }
        have += (size_t)n;
    }
    *ret_buf = buf;
    *ret_len = len;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return err;
}

/* snprintf for messages that may be cut short on purpose: paths can be
 * longer than the message buffers, and a truncated message is fine. */
static void say(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *dst, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, n, fmt, ap);
    va_end(ap);
}

static int kind_to_slot(uint32_t kind)
{
    return kind == NC_MF_KIND_CNN ? NC_SLOT_CNN : kind == NC_MF_KIND_NEOCOG ? NC_SLOT_NEOCOG : -1;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* First *.ncm file of each kind in dir, by name.  Unreadable files are
 * skipped here; loading reports them if they are chosen explicitly. */
static void scan_dir(const char *dir, char found[NC_SLOTS][NC_CONFIG_PATH_MAX])
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char *names[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < sizeof names / sizeof names[0]) {
        size_t len = strlen(e->d_name);
        if (len > 4 && !strcmp(e->d_name + len - 4, ".ncm") && e->d_name[0] != '.')
            if ((names[n] = strdup(e->d_name)))
                n++;
    }
    closedir(d);
    qsort(names, n, sizeof names[0], name_cmp);
    for (size_t i = 0; i < n; i++) {
        char path[NC_CONFIG_PATH_MAX];
        int w = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        uint8_t *buf = NULL;
        size_t len = 0;
        nc_mf_reader *r = NULL;
        if (w > 0 && (size_t)w < sizeof path && !read_file(path, &buf, &len) &&
            !nc_mf_open(buf, len, &r)) {
            int slot = kind_to_slot(nc_mf_kind_of(r));
            if (slot >= 0 && !found[slot][0])
                memcpy(found[slot], path, strlen(path) + 1);
            else if (slot >= 0)
                nc_log(NC_LOG_NOTICE, "models: %s ignored: %s already chosen", path, found[slot]);
        }
        nc_mf_close(r);
        free(buf);
        free(names[i]);
    }
}

/* One forward pass of a blank input, so the first request does not pay
 * for page faults and BLAS start-up, and so a model that cannot run fails
 * here rather than on a client's request. */
static int warm_up(nc_backend *be)
{
    void *w = NULL;
    int err = be->ops->worker_new(be->impl, 1, &w);
    if (err)
        return err;
    float *in = calloc(be->input_len, sizeof *in);
    float out[NC_MF_MAX_CLASSES];
    err = in ? be->ops->forward(be->impl, w, in, 1, out) : -ENOMEM;
    free(in);
    be->ops->worker_free(w);
    return err;
}

static int load_one(const char *path, int want_slot, nc_model **ret, char *why, size_t n)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int err = read_file(path, &buf, &len);
    if (err) {
        say(why, n, "%s: %s", path, strerror(-err));
        return err;
    }
    nc_model *m = calloc(1, sizeof *m);
    if (!m) {
        free(buf);
        say(why, n, "%s: out of memory", path);
        return -ENOMEM;
    }
    atomic_init(&m->refs, 1);
    say(m->path, sizeof m->path, "%s", path);
    err = -ENOTSUP;
    nc_mf_reader *r = NULL;
    uint32_t kind = 0;
    if (!(err = nc_mf_open(buf, len, &r))) {
        kind = nc_mf_kind_of(r);
        /* The notation, for ModelInfo; a neocognitron has none. */
        if (kind == NC_MF_KIND_CNN &&
            nc_mf_get_str(r, NC_MF_TAG('A', 'R', 'C', 'H'), m->arch, sizeof m->arch))
            m->arch[0] = '\0';
        nc_mf_close(r);
        err = kind_to_slot(kind) == want_slot ? -ENOTSUP : -EMEDIUMTYPE;
        for (size_t i = 0; err == -ENOTSUP && i < sizeof engines / sizeof engines[0]; i++)
            if (engines[i]->supports(kind))
                err = nc_backend_open(engines[i], buf, len, 0, &m->be);
    }
    free(buf);
    if (err == -EMEDIUMTYPE) {
        say(why, n, "%s: not a %s model", path, nc_slot_name(want_slot));
        goto fail;
    }
    if (err) {
        say(why, n, "%s: %s", path, nc_strerror(err));
        goto fail;
    }
    if ((err = warm_up(m->be))) {
        say(why, n, "%s: warm-up forward failed: %s", path, nc_strerror(err));
        goto fail;
    }
    m->loaded_at = (uint64_t)time(NULL);
    *ret = m;
    return 0;
fail:
    nc_model_unref(m);
    return err;
}

nc_model *nc_model_ref(nc_model *m)
{
    if (m)
        atomic_fetch_add(&m->refs, 1);
    return m;
}

void nc_model_unref(nc_model *m)
{
    if (m && atomic_fetch_sub(&m->refs, 1) == 1) {
        nc_backend_close(m->be);
        free(m);
    }
}

nc_models *nc_models_ref(nc_models *g)
{
    if (g)
        atomic_fetch_add(&g->refs, 1);
    return g;
}

void nc_models_unref(nc_models *g)
{
    if (g && atomic_fetch_sub(&g->refs, 1) == 1) {
        for (int s = 0; s < NC_SLOTS; s++)
            nc_model_unref(g->slot[s]);
        free(g);
    }
}

int nc_models_load(const nc_config *cfg, const nc_models *prev, uint32_t max_batch,
                   nc_models **ret, char *summary, size_t summary_len)
{
    (void)max_batch;
    nc_models *g = calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    atomic_init(&g->refs, 1);
    char found[NC_SLOTS][NC_CONFIG_PATH_MAX] = { "", "" };
    if (!cfg->cnn_model[0] || !cfg->neocog_model[0])
        scan_dir(cfg->models, found);
    if (cfg->cnn_model[0])
        snprintf(found[NC_SLOT_CNN], sizeof found[0], "%s", cfg->cnn_model);
    if (cfg->neocog_model[0])
        snprintf(found[NC_SLOT_NEOCOG], sizeof found[0], "%s", cfg->neocog_model);
    size_t used = 0;
    if (summary_len)
        summary[0] = '\0';
    for (int s = 0; s < NC_SLOTS; s++) {
        memcpy(g->path[s], found[s], sizeof g->path[s]);
        const char *what;
        if (!found[s][0]) {
            say(g->error[s], sizeof g->error[s], "no %s model file in %s",
                     nc_slot_name(s), cfg->models);
            what = "none";
            if (prev && prev->slot[s]) {
                g->slot[s] = nc_model_ref(prev->slot[s]);
                what = "kept (file gone)";
            }
        } else if (load_one(found[s], s, &g->slot[s], g->error[s], sizeof g->error[s]) == 0) {
            what = "loaded";
        } else if (prev && prev->slot[s]) {
            g->slot[s] = nc_model_ref(prev->slot[s]);
            what = "kept the old model";
        } else {
            what = "failed";
        }
        if (summary_len > used) {
            int w = snprintf(summary + used, summary_len - used, "%s%s: %s", s ? "; " : "",
                             nc_slot_name(s), what);
            if (w > 0)
                used += (size_t)w < summary_len - used ? (size_t)w : summary_len - used - 1;
        }
    }
    if (!g->slot[NC_SLOT_CNN] && !g->slot[NC_SLOT_NEOCOG]) {
        nc_models_unref(g);
        return -ENOENT;
    }
    *ret = g;
    return 0;
}

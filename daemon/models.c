/* daemon/models.c — see models.h. */
#include "models.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cnn.h"
#include "fileio.h"
#include "log.h"
#include "message.h"
#include "modelfile.h"
#include "neocog.h"
#include "nc_config.h"
#if NC_HAVE_CUDA
#include "backend_gpu.h"
#endif

/* Model files are read whole (io/fileio.h: regular files only, gzip'd ones
 * inflated), at most this much either way. */
#define MAX_MODEL_BYTES (512u << 20)

/* Engines.  Accelerator tables come first, each opened once per device it
 * has (a "lane" of the model); the CPU table is opened for every model as
 * well, as the engine of last resort.  An accelerator that cannot take a
 * model (no device, no memory, a kind it does not run, a failed warm-up)
 * is logged with its reason and left out for that model. */
typedef struct accel {
    const nc_backend_ops *ops;
    int (*devices)(void);               /* instances: device 0..n-1 */
    const char *(*why)(void);           /* the last failure, this thread */
} accel;

static const accel accels[] = {
#if NC_HAVE_CUDA
    { &nc_backend_gpu, nc_backend_gpu_device_count, nc_backend_gpu_last_error },
#endif
    { NULL, NULL, NULL },               /* keeps the array non-empty */
};

const char *nc_slot_name(int slot)
{
    return slot == NC_SLOT_CNN ? "cnn" : slot == NC_SLOT_NEOCOG ? "neocognitron"
         : slot == NC_SLOT_CHARS ? "chars" : "?";
}

void nc_model_needs(uint32_t model, int need[NC_SLOTS])
{
    need[NC_SLOT_CNN] = model == NEOCOG__MODEL__MODEL_CNN || model == NEOCOG__MODEL__MODEL_ENSEMBLE;
    need[NC_SLOT_NEOCOG] = model == NEOCOG__MODEL__MODEL_NEOCOGNITRON ||
                           model == NEOCOG__MODEL__MODEL_ENSEMBLE;
    need[NC_SLOT_CHARS] = model == NEOCOG__MODEL__MODEL_CHARS;
}

int nc_charset_parse(const char *name)
{
    if (!name || !name[0] || !strcmp(name, "digits"))
        return NC_CHARSET_DIGITS;
    return !strcmp(name, "alnum") ? NC_CHARSET_ALNUM : !strcmp(name, "all") ? NC_CHARSET_ALL : -1;
}

void nc_charset_mask(const nc_model *m, int charset, uint8_t *mask)
{
    const nc_model_info *info = &m->be->info;
    for (uint32_t k = 0; k < info->n_classes; k++) {
        const char *l = info->labels[k];
        mask[k] = charset != NC_CHARSET_ALNUM ||
                  (l[0] && !l[1] && ((l[0] >= '0' && l[0] <= '9') || (l[0] >= 'A' && l[0] <= 'Z') ||
                                     (l[0] >= 'a' && l[0] <= 'z')));
    }
}

/* The config key that names each slot's file. */
static const char *slot_key(int slot)
{
    return slot == NC_SLOT_CNN ? "cnn_model" : slot == NC_SLOT_NEOCOG ? "neocog_model"
                                                                      : "chars_model";
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

/* The slot a folder's file fills: chars for more classes than the digits,
 * else its kind's; -1 none (a kind not served, or a record without
 * classes). */
static int file_slot(const nc_mf_reader *r)
{
    nc_model_info *info = malloc(sizeof *info);
    int slot = kind_to_slot(nc_mf_kind_of(r));
    if (slot >= 0 && (!info || nc_mf_get_info(r, info)))
        slot = -1;
    else if (slot >= 0 && info->n_classes > NC_DIGIT_CLASSES)
        slot = NC_SLOT_CHARS;
    free(info);
    return slot;
}

/* Whether slot may serve r's model: a file named for the cnn slot may be
 * any CNN (as before there was a chars slot); the chars slot takes a model
 * of either kind with more classes than the digits. */
static int slot_takes(int slot, const nc_mf_reader *r)
{
    if (slot == NC_SLOT_CHARS)
        return file_slot(r) == NC_SLOT_CHARS;
    return kind_to_slot(nc_mf_kind_of(r)) == slot;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Model files a folder offers, per slot, in name order. */
#define SCAN_MAX 256

typedef struct scan_list {
    char *path[NC_SLOTS][SCAN_MAX];     /* malloc'd */
    size_t n[NC_SLOTS];
    /* Files skipped as unreadable or unsound, and why: a reload whose
     * serving file is among them says so rather than "file gone". */
    char *bad[SCAN_MAX], *bad_why[SCAN_MAX];
    size_t n_bad;
} scan_list;

static void scan_list_fini(scan_list *l)
{
    for (int s = 0; s < NC_SLOTS; s++)
        for (size_t i = 0; i < l->n[s]; i++)
            free(l->path[s][i]);
    for (size_t i = 0; i < l->n_bad; i++) {
        free(l->bad[i]);
        free(l->bad_why[i]);
    }
}

static void scan_list_bad(scan_list *l, const char *path, int err)
{
    nc_log(NC_LOG_WARNING, "models: skipped %s: %s", path, nc_strerror(err));
    if (l->n_bad == SCAN_MAX)
        return;
    l->bad[l->n_bad] = strdup(path);
    l->bad_why[l->n_bad] = strdup(nc_strerror(err));
    if (l->bad[l->n_bad] && l->bad_why[l->n_bad]) {
        l->n_bad++;
    } else {
        free(l->bad[l->n_bad]);
        free(l->bad_why[l->n_bad]);
    }
}

/* Why the folder's scan skipped path; NULL if it did not. */
static const char *scan_list_why(const scan_list *l, const char *path)
{
    for (size_t i = 0; path[0] && i < l->n_bad; i++)
        if (!strcmp(l->bad[i], path))
            return l->bad_why[i];
    return NULL;
}

/* Every *.ncm file in dir whose header says which slot it fills, by name.
 * A file that cannot be read or is not a sound model file is skipped with
 * a warning naming it and why: one bad file in a folder must not stop the
 * daemon, and must not go unnoticed either.  The files named[] (explicit
 * models, loaded and reported on their own) are left out.  0 or the error
 * opening dir. */
static int scan_dir(const char *dir, const char *const named[NC_SLOTS], scan_list *ret)
{
    struct stat named_st[NC_SLOTS];
    int have_named[NC_SLOTS];
    for (int s = 0; s < NC_SLOTS; s++)
        have_named[s] = named[s][0] && stat(named[s], &named_st[s]) == 0;
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    char *names[SCAN_MAX];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len <= 4 || strcmp(e->d_name + len - 4, ".ncm") || e->d_name[0] == '.')
            continue;
        if (n == SCAN_MAX) {
            nc_log(NC_LOG_WARNING, "models: %s: more than %d model files; the rest, by "
                   "directory order, are not looked at", dir, SCAN_MAX);
            break;
        }
        if ((names[n] = strdup(e->d_name)))
            n++;
    }
    closedir(d);
    qsort(names, n, sizeof names[0], name_cmp);
    for (size_t i = 0; i < n; i++) {
        char path[NC_CONFIG_PATH_MAX];
        int w = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        free(names[i]);
        if (w < 0 || (size_t)w >= sizeof path)
            continue;
        struct stat st;
        int is_named = 0;
        for (int s = 0; s < NC_SLOTS && stat(path, &st) == 0; s++)
            is_named |= have_named[s] && st.st_dev == named_st[s].st_dev &&
                        st.st_ino == named_st[s].st_ino;
        if (is_named)
            continue;
        uint8_t *buf = NULL;
        size_t len = 0;
        nc_mf_reader *r = NULL;
        int err = nc_file_read_model(path, MAX_MODEL_BYTES, &buf, &len);
        if (err) {
            scan_list_bad(ret, path, err);
            continue;
        }
        if ((err = nc_mf_open(buf, len, &r))) {
            scan_list_bad(ret, path, err);
            free(buf);
            continue;
        }
        int slot = file_slot(r);
        nc_mf_close(r);
        free(buf);
        if (slot < 0)
            nc_log(NC_LOG_NOTICE, "models: skipped %s: a model of a kind not served", path);
        else if (ret->n[slot] < SCAN_MAX && (ret->path[slot][ret->n[slot]] = strdup(path)))
            ret->n[slot]++;
    }
    return 0;
}

/* ", each digit at 46/48/50 px gently sheared, 46/48/50 px unsheared"
 * after arch, for a file with views (core/image/image.h): ModelInfo then says the
 * model looks at each digit several ways. */
static void describe_views(const nc_prep *p, char *arch, size_t cap)
{
    size_t at = strlen(arch);
    for (uint32_t v = 0; v < p->n_views && at < cap; v++) {
        const int last = v + 1 == p->n_views || p->view_deskew[v + 1] != p->view_deskew[v];
        const int k = snprintf(arch + at, cap - at, "%s%u%s%s",
                               v == 0 ? (at ? ", each digit at " : "each digit at ")
                               : p->view_deskew[v] != p->view_deskew[v - 1] ? ", " : "/",
                               p->view_box[v], last ? " px " : "",
                               last ? nc_prep_deskew_name(p->view_deskew[v]) : "");
        at += k > 0 ? (size_t)k : 0;
    }
}

/* "; cascade: member 4 first, alone at confidence >= 0.849" after the
 * committee's views, members and views counted from 1 as models/README.md
 * does; with the one-view stage ", its view 6 alone before at >= 0.913". */
static void describe_cascade(const nc_neocog_cascade *c, char *arch, size_t cap)
{
    size_t at = strlen(arch);
    if (c->on && at < cap)
        say(arch + at, cap - at, "%scascade: member %u first, alone at confidence >= %.3f",
            at ? "; " : "", c->first + 1, c->threshold);
    at = strlen(arch);
    if (c->on && c->view_on && at < cap)
        say(arch + at, cap - at, ", its view %u alone before at >= %.3f", c->view + 1,
            c->view_threshold);
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

/* The GPU lanes of m (opened from the file image buf/len, which the CPU
 * table accepted already).  Failures are logged and leave the lane out. */
static void open_lanes(const nc_config *cfg, nc_model *m, const char *path, const uint8_t *buf,
                       size_t len)
{
    size_t used = 0;
    m->engines[0] = '\0';
    for (size_t a = 0; a < NC_ARRAY_LEN(accels) && cfg->gpus; a++) {
        const accel *ac = &accels[a];
        if (!ac->ops || !ac->ops->supports(m->cpu->kind))
            continue;
        int n_dev = ac->devices();
        /* that many engines a device (a device that fails one gets no more) */
        const uint32_t lanes = m->cpu->kind == NC_MF_KIND_CNN ? cfg->cnn_gpu_lanes
                                                             : cfg->neocog_gpu_lanes;
        for (int d = 0; d < n_dev && (uint32_t)d < cfg->gpus; d++)
            for (uint32_t k = 0; k < lanes && m->n_lanes < NC_MAX_LANES; k++) {
                nc_backend *be = NULL;
                /* made for the batcher's largest pass, not the engine's */
                int err = nc_backend_open_batch(ac->ops, buf, len, d, cfg->max_batch, &be);
                if (!err && (err = warm_up(be))) {
                    nc_backend_close(be);
                    be = NULL;
                }
                if (err && k) {
                    nc_log(NC_LOG_WARNING, "models: %s: %s:%d: engine %u of %u not made, "
                           "%u serve (%s): %s", path, ac->ops->name, d, k + 1, lanes,
                           k, nc_strerror(err), ac->why());
                    break;
                }
                if (err) {
                    nc_log(NC_LOG_WARNING, "models: %s: %s:%d not used, the CPU serves "
                           "instead (%s): %s", path, ac->ops->name, d, nc_strerror(err),
                           ac->why());
                    break;
                }
                m->lane[m->n_lanes++] = be;
                if (used < sizeof m->engines) {
                    char name[64];
                    nc_model_lane_name(m, m->n_lanes - 1, name, sizeof name);
                    int w = snprintf(m->engines + used, sizeof m->engines - used, "%s%s",
                                     used ? "," : "", name);
                    if (w > 0)
                        used += (size_t)w;
                }
            }
    }
    if (!m->n_lanes)
        snprintf(m->engines, sizeof m->engines, "%s", m->cpu->ops->name);
    m->be = m->n_lanes ? m->lane[0] : m->cpu;
}

static int load_one(const nc_config *cfg, const char *path, int want_slot, nc_model **ret,
                    char *why, size_t n)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int err = nc_file_read_model(path, MAX_MODEL_BYTES, &buf, &len);
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
    nc_neocog_cascade cascade = { 0 };  /* a neocognitron committee's, if it has one */
    if (!(err = nc_mf_open(buf, len, &r))) {
        kind = nc_mf_kind_of(r);
        /* The notation, for ModelInfo; a neocognitron has none, a committee
         * (core/cnn/cnn.h, core/neocog/neocog.h) keeps one per member and is named by
         * its size. */
        uint32_t cols = 0;
        if (kind == NC_MF_KIND_CNN &&
            nc_mf_get_str(r, NC_MF_TAG('A', 'R', 'C', 'H'), m->arch, sizeof m->arch)) {
            m->arch[0] = '\0';
            if (nc_mf_get_u32(r, NC_CNN_TAG_NCOL, &cols, 1) == 0)
                say(m->arch, sizeof m->arch, "committee of %u columns", cols);
        }
        if (kind == NC_MF_KIND_NEOCOG && nc_mf_get_u32(r, NC_NEOCOG_TAG_NMEM, &cols, 1) == 0) {
            say(m->arch, sizeof m->arch, "committee of %u neocognitrons", cols);
            /* A broken cascade is the engine's to refuse below, with its reason. */
            if (nc_neocog_cascade_read(r, cols, &cascade, NULL))
                cascade.on = 0;
        }
        err = slot_takes(want_slot, r) ? -ENOTSUP : -EMEDIUMTYPE;
        nc_mf_close(r);
        /* The CPU table first: it judges the file, and stays as the fallback. */
        if (err == -ENOTSUP && nc_backend_cpu.supports(kind))
            err = nc_backend_open(&nc_backend_cpu, buf, len, 0, &m->cpu);
    }
    if (err == -EMEDIUMTYPE) {
        say(why, n, want_slot == NC_SLOT_CHARS ? "%s: not a %s model (one of more classes "
            "than the ten digits)" : "%s: not a %s model", path, nc_slot_name(want_slot));
        goto fail;
    }
    if (err == -ENOTSUP && kind == NC_MF_KIND_CNN && strstr(m->arch, "bn")) {
        /* core/cnn/cnn.h: such a net normalises with each batch's statistics */
        say(why, n, "%s: a batch-normalised net in training (%s), not one to serve: "
            "serve the file neocog-train cnn wrote (its fold)", path, m->arch);
        goto fail;
    }
    if (err) {
        say(why, n, "%s: %s", path, nc_strerror(err));
        goto fail;
    }
    describe_views(&m->cpu->info.prep, m->arch, sizeof m->arch);
    describe_cascade(&cascade, m->arch, sizeof m->arch);
    if ((err = warm_up(m->cpu))) {
        say(why, n, "%s: warm-up forward failed: %s", path, nc_strerror(err));
        goto fail;
    }
    open_lanes(cfg, m, path, buf, len);
    free(buf);
    buf = NULL;
    m->loaded_at = (uint64_t)time(NULL);
    *ret = m;
    return 0;
fail:
    free(buf);
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
        for (uint32_t l = 0; l < m->n_lanes; l++)
            nc_backend_close(m->lane[l]);
        nc_backend_close(m->cpu);       /* m->be is one of these */
        free(m);
    }
}

int nc_model_lane_pick(nc_model *m)
{
    uint32_t n = m->n_lanes;
    if (!n)
        return -1;
    uint32_t start = atomic_fetch_add(&m->lane_next, 1) % n;
    int best = -1;
    unsigned best_busy = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t l = (start + i) % n;
        if (atomic_load(&m->lane_dead[l]))
            continue;
        unsigned busy = atomic_load(&m->lane_busy[l]);
        if (best < 0 || busy < best_busy) {
            best = (int)l;
            best_busy = busy;
        }
    }
    if (best >= 0)
        atomic_fetch_add(&m->lane_busy[best], 1);
    return best;
}

void nc_model_lane_name(const nc_model *m, uint32_t lane, char *dst, size_t cap)
{
    const nc_backend *be = m->lane[lane];
    unsigned nth = 0;       /* engines of the same device before this one */
    for (uint32_t j = 0; j < lane; j++)
        nth += m->lane[j]->ops == be->ops && m->lane[j]->device == be->device;
    if (nth)
        snprintf(dst, cap, "%s:%d/%u", be->ops->name, be->device, nth);
    else
        snprintf(dst, cap, "%s:%d", be->ops->name, be->device);
}

void nc_model_lane_done(nc_model *m, int lane)
{
    if (lane >= 0 && (uint32_t)lane < m->n_lanes)
        atomic_fetch_sub(&m->lane_busy[lane], 1);
}

void nc_model_lane_fail(nc_model *m, int lane, int err)
{
    if (lane < 0 || (uint32_t)lane >= m->n_lanes || atomic_exchange(&m->lane_dead[lane], 1))
        return;
    const char *why = "";
    for (size_t a = 0; a < NC_ARRAY_LEN(accels); a++)
        if (accels[a].ops == m->lane[lane]->ops)
            why = accels[a].why();
    uint32_t live = 0;
    for (uint32_t l = 0; l < m->n_lanes; l++)
        live += !atomic_load(&m->lane_dead[l]);
    char name[64];
    nc_model_lane_name(m, (uint32_t)lane, name, sizeof name);
    nc_log(NC_LOG_ERR, "models: %s: %s failed (%s), no longer used; %u GPU lane%s left%s: %s",
           m->path, name, nc_strerror(err), live, live == 1 ? "" : "s",
           live ? "" : ", the CPU serves it", why);
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

int nc_models_load(const nc_config *cfg, const nc_models *prev, unsigned flags,
                   nc_models **ret, char *summary, size_t summary_len)
{
    nc_models *g = calloc(1, sizeof *g);
    if (!g)
        return -ENOMEM;
    atomic_init(&g->refs, 1);
    const char *named[NC_SLOTS] = { cfg->cnn_model, cfg->neocog_model, cfg->chars_model };
    const char *what[NC_SLOTS] = { "failed", "failed", "failed" };
    char kept[NC_SLOTS][sizeof g->error[0] + 16];
    scan_list found = { 0 };
    int err = 0;
    if (summary_len)
        summary[0] = '\0';
    /* Named files first: one that fails stops a start-up before the folder
     * is read or anything else loads. */
    for (int s = 0; s < NC_SLOTS; s++) {
        if (!named[s][0])
            continue;
        say(g->path[s], sizeof g->path[s], "%s", named[s]);
        if (load_one(cfg, named[s], s, &g->slot[s], g->error[s], sizeof g->error[s]) == 0) {
            what[s] = "loaded";
        } else if (flags & NC_MODELS_NAMED_MUST_LOAD) {
            say(summary, summary_len, "%s model named by %s: %s", nc_slot_name(s),
                slot_key(s), g->error[s]);
            err = -EINVAL;
            goto out;
        }
    }
    /* Both digit models named: the configuration says what to serve, and
     * the folder is not read (a chars model then comes only from
     * chars_model), as before there was a chars slot. */
    const int read_folder = !named[NC_SLOT_CNN][0] || !named[NC_SLOT_NEOCOG][0];
    int scan_err = 0;
    if (read_folder)
        scan_err = scan_dir(cfg->models, named, &found);
    for (int s = 0; s < NC_SLOTS; s++) {
        if (named[s][0])
            continue;
        if (s == NC_SLOT_CHARS && !read_folder) {
            say(g->error[s], sizeof g->error[s], "no chars model: cnn_model and neocog_model "
                "are named, chars_model is not");
            what[s] = "none";
            continue;
        }
        /* The file the slot serves from, when this scan found it broken:
         * the slot keeps its model, and says why. */
        const char *serving = prev && prev->slot[s] ? prev->slot[s]->path : "";
        const char *serving_why = scan_list_why(&found, serving);
        if (!found.n[s] && !serving_why) {
            if (scan_err)
                say(g->error[s], sizeof g->error[s], "no %s model file: %s: %s",
                    nc_slot_name(s), cfg->models, strerror(-scan_err));
            else
                say(g->error[s], sizeof g->error[s], "no %s model file in %s",
                    nc_slot_name(s), cfg->models);
            what[s] = "none";
            continue;
        }
        /* The folder's files of this kind in name order, until one loads.
         * A reload goes no further than the file the slot serves from: when
         * that file is broken now, the slot keeps its model rather than
         * bringing in the next file (cnn-column.ncm must not turn into
         * cnn-committee.ncm by accident), be it broken so badly that the
         * scan skipped it (it sorts among them by name all the same). */
        for (size_t i = 0; i < found.n[s] && !g->slot[s]; i++) {
            const char *p = found.path[s][i];
            if (serving_why && strcmp(p, serving) > 0)
                break;
            say(g->path[s], sizeof g->path[s], "%s", p);
            g->error[s][0] = '\0';
            if (load_one(cfg, p, s, &g->slot[s], g->error[s], sizeof g->error[s]) == 0) {
                what[s] = "loaded";
                for (size_t j = i + 1; j < found.n[s]; j++)
                    nc_log(NC_LOG_NOTICE, "models: %s ignored: %s already chosen",
                           found.path[s][j], p);
            } else if (!strcmp(p, serving)) {
                break;
            } else {
                nc_log(NC_LOG_WARNING, "models: skipped %s", g->error[s]);
            }
        }
        if (!g->slot[s] && serving_why) {     /* none before it loaded */
            say(g->path[s], sizeof g->path[s], "%s", serving);
            say(g->error[s], sizeof g->error[s], "%s: %s", serving, serving_why);
        }
    }
    size_t used = 0;
    for (int s = 0; s < NC_SLOTS; s++) {
        if (!g->slot[s] && prev && prev->slot[s]) {
            g->slot[s] = nc_model_ref(prev->slot[s]);
            if (!strcmp(what[s], "none")) {
                what[s] = "kept (file gone)";
            } else {
                say(kept[s], sizeof kept[s], "kept: %s", g->error[s]);
                what[s] = kept[s];
            }
        }
        if (summary_len > used) {
            int w = snprintf(summary + used, summary_len - used, "%s%s: %s", s ? "; " : "",
                             nc_slot_name(s), what[s]);
            if (w > 0)
                used += (size_t)w < summary_len - used ? (size_t)w : summary_len - used - 1;
        }
    }
    if (!g->slot[NC_SLOT_CNN] && !g->slot[NC_SLOT_NEOCOG])
        err = -ENOENT;
out:
    scan_list_fini(&found);
    if (err) {
        nc_models_unref(g);
        return err;
    }
    *ret = g;
    return 0;
}

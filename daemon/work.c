/* daemon/work.c — see work.h. */
#include "work.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "clock.h"
#include "decode.h"
#include "image_clean.h"
#include "log.h"
#include "split.h"

/* Per network: the worker contexts of the model they were made for (one
 * per engine, made when the engine is first used: each GPU lane, then the
 * CPU at CPU_CTX), and the batch's input and output rows. */
#define CPU_CTX NC_MAX_LANES

typedef struct slot_ctx {
    nc_model *model;            /* reference held while ctx[] exist */
    void *ctx[NC_MAX_LANES + 1];
    float *in, *out;
    size_t in_cap, out_cap;     /* floats */
} slot_ctx;

/* One network input: a whole image, or one segmented character. */
typedef struct row {
    nc_task *task;
    int digit;                  /* -1: the whole image */
    int ok[NC_SLOTS];           /* preprocessing gave an input */
    nc_image *src;              /* a lazy slot's character (NULL: none), kept
                                   until the forward prepares its views */
    uint32_t filled[NC_SLOTS];  /* a lazy slot's views prepared so far */
} row;

struct nc_work {
    nc_decode_limits lim;
    uint32_t max_batch;
    slot_ctx slot[NC_SLOTS];
    row *rows;
    size_t rows_cap;
    nc_segmenter *seg;          /* Image.segment scratch, made on first use */
};

int nc_work_new(const nc_config *cfg, nc_work **ret)
{
    nc_work *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->lim.max_dim = cfg->max_image_dim;
    w->lim.max_pixels = cfg->max_image_pixels;
    w->max_batch = cfg->max_batch;
    *ret = w;
    return 0;
}

static nc_backend *engine_of(nc_model *m, int i)
{
    return i == CPU_CTX ? m->cpu : m->lane[i];
}

static void slot_release(slot_ctx *s)
{
    for (int i = 0; s->model && i <= CPU_CTX; i++)
        if (s->ctx[i])
            engine_of(s->model, i)->ops->worker_free(s->ctx[i]);
    nc_model_unref(s->model);
    s->model = NULL;
    memset(s->ctx, 0, sizeof s->ctx);
}

void nc_work_free(nc_work *w)
{
    if (!w)
        return;
    for (int s = 0; s < NC_SLOTS; s++) {
        slot_release(&w->slot[s]);
        free(w->slot[s].in);
        free(w->slot[s].out);
    }
    free(w->rows);
    nc_segmenter_free(w->seg);
    free(w);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    if (c > SIZE_MAX / elem)
        return -ENOMEM;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = c;
    return 0;
}

/* Make sure slot s runs gen's model (a reload may have replaced it). */
static void slot_bind(nc_work *w, int s, nc_model *m)
{
    slot_ctx *sc = &w->slot[s];
    if (sc->model == m)
        return;
    slot_release(sc);
    sc->model = nc_model_ref(m);
}

/* A slot whose views are prepared during its forward, as the engine asks
 * for them (nc_backend_forward_fill): a neocognitron with views, whose
 * cascade reads most digits on one view only. */
static int lazy_views(const nc_backend *be)
{
    return be->kind == NC_MF_KIND_NEOCOG && nc_prep_views(&be->info.prep) > 1;
}

/* The views in mask of rows image[0..d) of slot s prepared into its input,
 * each once (nc_backend_fill: the engine asks before it reads).  A view
 * without ink is zeros and marks its row as no ink, as prep_row does. */
typedef struct fill_ctx {
    nc_work *w;
    const nc_backend *be;
    int s;
} fill_ctx;

static int fill_views(void *ctx, uint32_t mask, const uint32_t *image, uint32_t d);

/* Engine i's forward over the slot's n rows (a lazy slot's views prepared
 * as the engine asks for them). */
static int engine_forward(nc_work *w, slot_ctx *sc, int i, uint32_t n)
{
    nc_model *m = sc->model;
    nc_backend *be = engine_of(m, i);
    int err = 0;
    if (!sc->ctx[i])
        err = be->ops->worker_new(be->impl, w->max_batch, &sc->ctx[i]);
    if (!err && lazy_views(be)) {
        fill_ctx fc = { w, be, (int)(sc - w->slot) };
        const nc_backend_fill fill = { &fc, fill_views };
        err = nc_backend_forward_fill(be, sc->ctx[i], sc->in, n, &fill, sc->out);
    } else if (!err) {
        err = be->ops->forward(be->impl, sc->ctx[i], sc->in, n, sc->out);
    }
    if (!err) {
        atomic_fetch_add_explicit(&m->batches[i], 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&m->images[i], n, memory_order_relaxed);
    }
    return err;
}

/* One forward pass of slot s's model over n rows: on the least busy live
 * GPU lane, another lane if that one breaks (-EIO: its context is gone;
 * -ENODEV), the CPU when no lane is left; any other GPU error sends this
 * batch to the CPU and keeps the lane. */
static int slot_forward(nc_work *w, int s, nc_model *m, uint32_t n)
{
    slot_ctx *sc = &w->slot[s];
    slot_bind(w, s, m);
    for (;;) {
        int lane = nc_model_lane_pick(m);
        if (lane < 0)
            return engine_forward(w, sc, CPU_CTX, n);
        int err = engine_forward(w, sc, lane, n);
        nc_model_lane_done(m, lane);
        if (!err)
            return 0;
        if (err == -EIO || err == -ENODEV) {
            nc_model_lane_fail(m, lane, err);
            continue;
        }
        char name[64];
        nc_model_lane_name(m, (uint32_t)lane, name, sizeof name);
        nc_log(NC_LOG_WARNING, "work: %s on %s: %s; this batch goes to the CPU", m->path, name,
               nc_strerror(err));
        return engine_forward(w, sc, CPU_CTX, n);
    }
}

static void task_fail(nc_task *t, int code, const char *fmt, const char *detail)
{
    if (t->code != NEOCOG__CODE__OK)
        return;     /* the first reason wins */
    t->code = code;
    snprintf(t->message, sizeof t->message, fmt, t->index, detail);
}

/* Preprocess one view into row r of every needed slot; a slot whose model
 * reads line cells (NC_PREP_LINE, core/image/image.h) gets cell instead when
 * there is one (a segmented character placed on its line).  A lazy slot
 * keeps a copy of view instead (fill_views prepares it). */
static void prep_row(nc_work *w, nc_models *gen, const int need[NC_SLOTS],
                     const nc_image *view, const nc_image *cell, size_t r)
{
    row *rw = &w->rows[r];
    rw->src = NULL;
    for (int s = 0; s < NC_SLOTS; s++) {
        rw->ok[s] = 0;
        rw->filled[s] = 0;
        if (!need[s])
            continue;
        if (lazy_views(gen->slot[s]->be)) {
            int err = rw->src ? 0 : nc_image_dup(view, &rw->src);
            if (err)
                task_fail(rw->task, NEOCOG__CODE__RESOURCE_EXHAUSTED, "image %u: %s",
                          "out of memory");
            rw->ok[s] = 1;      /* until a view finds no ink (fill_views) */
            continue;
        }
        const nc_backend *be = gen->slot[s]->be;
        float *dst = w->slot[s].in + r * be->input_len;
        nc_prep p = be->info.prep;
        p.invert = 0;           /* the view is light ink already */
        int err = nc_prep_apply(cell && p.kind == NC_PREP_LINE ? cell : view, &p, dst);
        if (err) {
            memset(dst, 0, be->input_len * sizeof *dst);
            if (err != -ENOENT)
                task_fail(rw->task, NEOCOG__CODE__INVALID_ARGUMENT,
                          "image %u: cannot preprocess: %s", nc_strerror(err));
        } else {
            rw->ok[s] = 1;
        }
    }
}

static int fill_views(void *ctx, uint32_t mask, const uint32_t *image, uint32_t d)
{
    const fill_ctx *fc = ctx;
    const nc_backend *be = fc->be;
    const size_t len = nc_prep_view_len(&be->info.prep);
    const uint32_t views = nc_prep_views(&be->info.prep);
    for (uint32_t k = 0; k < d; k++) {
        row *rw = &fc->w->rows[image[k]];
        const uint32_t todo = mask & ~rw->filled[fc->s] & ((1u << views) - 1u);
        if (!todo)
            continue;
        rw->filled[fc->s] |= todo;
        float *dst = fc->w->slot[fc->s].in + image[k] * be->input_len;
        nc_prep p = be->info.prep;
        p.invert = 0;           /* the view is light ink already */
        int err = rw->src ? nc_prep_apply_views(rw->src, &p, todo, dst) : -ENOENT;
        if (!err)
            continue;
        for (uint32_t v = 0; v < views; v++)
            if (todo >> v & 1u)
                memset(dst + v * len, 0, len * sizeof *dst);
        rw->ok[fc->s] = 0;
        if (err != -ENOENT)
            task_fail(rw->task, NEOCOG__CODE__INVALID_ARGUMENT, "image %u: cannot preprocess: %s",
                      nc_strerror(err));
    }
    return 0;
}

/* 1 when a needed slot's model reads line cells (NC_PREP_LINE). */
static int wants_line_cells(const nc_models *gen, const int need[NC_SLOTS])
{
    for (int s = 0; s < NC_SLOTS; s++)
        if (need[s] && gen->slot[s] && gen->slot[s]->be->info.prep.kind == NC_PREP_LINE)
            return 1;
    return 0;
}

/* Segmented piece sd in its line's cell (core/image/image.h, nc_line_cell):
 * the line's scale and baseline measured over the boxes of the line's
 * pieces, so a small o stays small beside the line's capitals and a period
 * stays at the baseline.  *ret is the caller's to free. */
static int line_cell(const nc_segment_result *sr, const nc_segment_digit *sd, nc_image **ret)
{
    const nc_segment_line *ln = &sr->lines[sd->line];
    if (!ln->count || ln->first + ln->count > sr->count)
        return -EINVAL;
    nc_rect *boxes = malloc((size_t)ln->count * sizeof *boxes);
    if (!boxes)
        return -ENOMEM;
    for (uint32_t k = 0; k < ln->count; k++)
        boxes[k] = sr->digits[ln->first + k].box;
    uint32_t scale, base;
    int err = nc_line_geometry(boxes, ln->count, &scale, &base);
    free(boxes);
    if (!err)
        err = nc_line_cell(&sd->patch, sd->patch_box.y, scale, base, ret);
    return err;
}

/* A frame read as one character has no line to measure it by: its cell
 * takes the character as a line of its own (nc_line_cell with the ink's
 * height as the scale and its bottom as the baseline), so it is read at
 * capital size on the baseline rather than filling the cell. */
static int own_cell(const nc_image *clean, nc_image **ret)
{
    nc_rect b;
    int err = nc_image_bbox(clean, 0, &b);
    if (!err)
        err = nc_line_cell(clean, 0, b.height, (int64_t)b.y + b.height, ret);
    return err;
}

/* The ensemble rule for gen's pair of models (core/backend/backend.h): the one
 * fitted on validation and stored in the CNN file when it was fitted with
 * the neocognitron file now loaded, else the plain mean.  A rule fitted
 * for another neocognitron file is noted in the log once per pair of
 * loaded models (the pair's addresses stand for it: a reload makes new
 * ones). */
static void ensemble_rule(nc_models *gen, nc_ens_rule *rule)
{
    static _Atomic uintptr_t noted;
    nc_model *cnn = gen->slot[NC_SLOT_CNN], *neo = gen->slot[NC_SLOT_NEOCOG];
    int err = nc_backend_ensemble_rule(cnn->be, neo->be, rule);
    uintptr_t pair = (uintptr_t)cnn * 31u + (uintptr_t)neo;
    if (err == -ESTALE && atomic_exchange(&noted, pair) != pair)
        nc_log(NC_LOG_NOTICE, "work: %s holds an ensemble rule fitted with another "
               "neocognitron file than %s; the ensemble uses the plain mean", cnn->path,
               neo->path);
}

/* The core/backend/answer.h network a slot's model answers as. */
static int net_of(int slot)
{
    return slot == NC_SLOT_NEOCOG ? NC_ANSWER_NET_NEOCOG : NC_ANSWER_NET_CNN;
}

/* core/backend/answer.h's input for req's answers with gen's models: the rule and
 * the request's threshold; rows and candidates are the caller's. */
static nc_answer_in answer_in(const nc_models *gen, uint32_t model, const int need[NC_SLOTS],
                              const nc_ens_rule *rule, const nc_request *req)
{
    /* the chars model answers alone, as a single network does */
    nc_answer_in in = { .model = model == NEOCOG__MODEL__MODEL_CHARS ? NC_ANSWER_MODEL_CNN : model,
                        .rule = rule, .threshold = req->threshold };
    for (int s = 0; s < NC_SLOTS; s++)
        if (need[s])
            in.be[net_of(s)] = gen->slot[s]->be;
    return in;
}

/* Answer of row r through core/backend/answer.h with the request's threshold and
 * candidates (a segmented digit: the digit's count, possibly none). */
static int answer(const nc_work *w, const nc_models *gen, uint32_t model,
                  const int need[NC_SLOTS], const nc_ens_rule *rule, const uint8_t *alnum,
                  size_t r, nc_answer *ret)
{
    const row *rw = &w->rows[r];
    const nc_request *req = rw->task->req;
    nc_answer_in in = answer_in(gen, model, need, rule, req);
    in.top_k = rw->digit >= 0 ? req->digit_top_k : req->top_k;
    if (model == NEOCOG__MODEL__MODEL_CHARS &&
        nc_charset_parse(req->rq->recognize->charset) == NC_CHARSET_ALNUM)
        in.mask = alnum;
    for (int s = 0; s < NC_SLOTS; s++) {
        if (!need[s])
            continue;
        const int net = net_of(s);
        in.raw[net] = w->slot[s].out + r * gen->slot[s]->be->info.n_classes;
        in.ink[net] = rw->ok[s];
    }
    return nc_answer_compute(&in, ret);
}

/* Lines and flags of a task's segmented pieces (the digits, then the uncut
 * wholes), for the answers' reasons and the text's line breaks. */
static int note_pieces(nc_task *t, const nc_segment_result *sr, int one_whole)
{
    const uint32_t n = sr->count + sr->alt_count;
    if (!(t->more = calloc(n + (one_whole != 0), sizeof *t->more)))
        return -ENOMEM;
    for (uint32_t v = 0; v < n; v++) {
        const nc_segment_digit *sd =
            v < sr->count ? &sr->digits[v] : &sr->alts[v - sr->count].whole;
        t->more[v].line = sd->line;
        t->more[v].flags = sd->flags;
    }
    return 0;
}

/* Each piece core/segment cut in two and offered uncut as well: the whole
 * replaces its two parts when its reading is the likelier one
 * (nc_split_keep_whole).  Last first, so the parts of earlier ones stay
 * where they are; the wholes lie past the digits and do not move. */
static void undo_cuts(nc_task *t)
{
    const uint32_t base = t->n_digits;
    for (uint32_t a = t->n_alts; a-- > 0;) {
        const uint32_t f = t->alt_first[a];
        const nc_digit *whole = &t->digits[base + a], *l = &t->digits[f], *r = &t->digits[f + 1];
        if (!nc_split_keep_whole(whole->confidence, l->confidence, r->confidence))
            continue;
        t->digits[f] = *whole;
        t->more[f] = t->more[base + a];
        memmove(&t->digits[f + 1], &t->digits[f + 2],
                (t->n_digits - f - 2) * sizeof *t->digits);
        memmove(&t->more[f + 1], &t->more[f + 2], (t->n_digits - f - 2) * sizeof *t->more);
        t->n_digits--;
    }
    t->n_alts = 0;
}

/* The frame read as one character (nc_split_one_character's maybe)
 * replaces all the pieces when its reading is the likelier one: its
 * confidence against the chance that every piece is right, the product of
 * theirs, as undo_cuts weighs a whole against its two parts. */
static void keep_one_whole(nc_task *t)
{
    if (!t->one_whole)
        return;
    const nc_digit whole = t->digits[t->one_whole - 1];
    const nc_digit_more whole_more = t->more[t->one_whole - 1];
    t->one_whole = 0;
    float all = 1.0f;
    for (uint32_t d = 0; d < t->n_digits; d++)
        all *= t->digits[d].confidence;
    if (!t->n_digits || !nc_split_keep_whole(whole.confidence, all, 1.0f))
        return;
    t->digits[0] = whole;
    t->more[0] = whole_more;
    t->n_digits = 1;
}

void nc_work_run(nc_work *w, nc_models *gen, nc_task **tasks, uint32_t n)
{
    uint64_t t_start = nc_now_us();
    uint32_t model = n ? tasks[0]->req->model : 0;
    int need[NC_SLOTS];
    nc_model_needs(model, need);
    int missing = 0;
    for (int s = 0; s < NC_SLOTS; s++)
        if (need[s] && !gen->slot[s])
            missing = 1;
    if (need[NC_SLOT_CNN] && need[NC_SLOT_NEOCOG] && !missing &&
        gen->slot[0]->be->info.n_classes != gen->slot[1]->be->info.n_classes)
        missing = 2;
    size_t n_rows = 0;
    for (uint32_t i = 0; i < n; i++) {
        nc_task *t = tasks[i];
        t->gen = nc_models_ref(gen);
        t->t_start = t_start;
        t->batch_size = n;
        if (atomic_load(t->req->cancelled)) {
            task_fail(t, NEOCOG__CODE__CANCELLED, "image %u: %s", "connection closed");
            continue;
        }
        if (t->req->deadline && t_start > t->req->deadline) {
            task_fail(t, NEOCOG__CODE__DEADLINE_EXCEEDED, "image %u: %s",
                      "deadline exceeded while queued");
            continue;
        }
        if (missing == 1) {
            task_fail(t, NEOCOG__CODE__UNAVAILABLE, "image %u: %s",
                      "the requested model is not loaded");
            continue;
        }
        if (missing == 2) {
            task_fail(t, NEOCOG__CODE__FAILED_PRECONDITION, "image %u: %s",
                      "the two models have different classes: no ensemble");
            continue;
        }
        const Neocog__Image *im = t->image;
        nc_image *img = NULL;
        char why[200] = "";
        int err = nc_decode_image((int)im->format, im->data.data, im->data.len, im->width,
                                  im->height, &w->lim, &img, why, sizeof why);
        if (err) {
            task_fail(t, err == -ENOMEM ? NEOCOG__CODE__RESOURCE_EXHAUSTED
                                        : NEOCOG__CODE__INVALID_ARGUMENT,
                      "image %u: %s", why);
            continue;
        }
        /* One character: prepared once for every network (core/image/image_clean.h:
         * polarity, paper and light flattened, cropped), as the offline tools
         * do.  No character (-ENOENT) leaves an empty view, which every
         * network answers as "no ink".  Segmentation decides polarity itself
         * and hands back clean light-ink patches.  A line-layout model takes
         * the whole image as the character's cell: a photo's character is
         * put back where it was in the frame (nc_image_clean_cell). */
        nc_image *clean = NULL;
        const nc_polarity pol = (nc_polarity)im->polarity;
        if (!im->segment &&
            (err = wants_line_cells(gen, need) ? nc_image_clean_cell(img, pol, &clean)
                                               : nc_image_clean(img, pol, &clean, NULL)) < 0 &&
            err != -ENOENT) {
            task_fail(t, err == -ENOMEM ? NEOCOG__CODE__RESOURCE_EXHAUSTED
                                        : NEOCOG__CODE__INVALID_ARGUMENT,
                      "image %u: cannot prepare: %s", nc_strerror(err));
            nc_image_free(img);
            continue;
        }
        nc_segment_result *sr = NULL;
        uint32_t n_views = 1;
        int one = 0;                /* segment: the frame is one character */
        nc_rect one_box = { 0 };
        if (im->segment) {
            nc_split_opts so = nc_request_split_opts(im);
            so.alternatives = 1;
            /* charset alnum or all: core/segment's character mode */
            so.text = model == NEOCOG__MODEL__MODEL_CHARS;
            err = nc_split_frame_opts(&w->seg, img, &so, NC_MAX_DIGITS, &sr, why, sizeof why);
            /* a frame of one character is read as a plain request reads it */
            if (!err && (one = nc_split_one_character(img, &so, sr, &clean, &one_box)) < 0)
                err = one;
            /* one character: one piece, the clean frame; else the segmenter's
             * digits, then the uncut pieces, then (maybe one) the clean frame */
            const uint32_t pieces = err ? 0 : one == 1 ? 1 : sr->count;
            const uint32_t alts = err || one == 1 ? 0 : sr->alt_count;
            n_views = pieces + alts + (one == 2);
            if (!err && pieces && !(t->digits = calloc(n_views, sizeof *t->digits)))
                err = -ENOMEM;
            if (err) {
                task_fail(t, err == -ENOMEM ? NEOCOG__CODE__RESOURCE_EXHAUSTED
                                            : NEOCOG__CODE__INVALID_ARGUMENT,
                          "image %u: %s", err == -ENOMEM ? "out of memory" : why);
                nc_segment_result_free(sr);
                nc_image_free(clean);
                nc_image_free(img);
                continue;
            }
            if (one == 2)
                t->one_whole = (uint8_t)n_views;
            t->n_digits = pieces;
            t->n_alts = alts;
            for (uint32_t a = 0; a < alts; a++)
                t->alt_first[a] = (uint8_t)sr->alts[a].first;
        }
        /* Room for the new rows in every buffer. */
        size_t need_rows = n_rows + n_views;
        err = grow((void **)&w->rows, &w->rows_cap, need_rows, sizeof *w->rows);
        for (int s = 0; s < NC_SLOTS && !err; s++) {
            if (!need[s])
                continue;
            const nc_backend *be = gen->slot[s]->be;
            if (!(err = grow((void **)&w->slot[s].in, &w->slot[s].in_cap,
                             need_rows * be->input_len, sizeof(float))))
                err = grow((void **)&w->slot[s].out, &w->slot[s].out_cap,
                           need_rows * be->info.n_classes, sizeof(float));
        }
        if (err) {
            task_fail(t, NEOCOG__CODE__RESOURCE_EXHAUSTED, "image %u: %s", "out of memory");
            nc_segment_result_free(sr);
            nc_image_free(clean);
            nc_image_free(img);
            continue;
        }
        const int cells = im->segment && wants_line_cells(gen, need);
        for (uint32_t v = 0; v < n_views; v++) {
            uint8_t blank = 0;
            nc_image view = clean ? *clean : (nc_image){ 1, 1, 1, &blank };
            nc_image *cell = NULL;
            if (one == 1 || (one == 2 && v + 1 == n_views)) {
                t->digits[v] = (nc_digit){ one_box.x, one_box.y, one_box.width,
                                           one_box.height, -1, 0.0f };
                if (cells && clean && (err = own_cell(clean, &cell)) < 0 && err != -ENOENT)
                    task_fail(t, err == -ENOMEM ? NEOCOG__CODE__RESOURCE_EXHAUSTED
                                                : NEOCOG__CODE__INTERNAL,
                              "image %u: cannot place a character on its line: %s",
                              nc_strerror(err));
            } else if (im->segment) {
                const nc_segment_digit *sd =
                    v < sr->count ? &sr->digits[v] : &sr->alts[v - sr->count].whole;
                view = sd->patch;
                t->digits[v] = (nc_digit){ sd->box.x, sd->box.y, sd->box.width,
                                           sd->box.height, -1, 0.0f };
                if (cells && (err = line_cell(sr, sd, &cell)) < 0)
                    task_fail(t, err == -ENOMEM ? NEOCOG__CODE__RESOURCE_EXHAUSTED
                                                : NEOCOG__CODE__INTERNAL,
                              "image %u: cannot place a character on its line: %s",
                              nc_strerror(err));
            }
            w->rows[n_rows] = (row){ .task = t, .digit = im->segment ? (int)v : -1 };
            prep_row(w, gen, need, &view, cell, n_rows);
            nc_image_free(cell);
            n_rows++;
        }
        if (one == 1 && !(t->more = calloc(1, sizeof *t->more)))
            task_fail(t, NEOCOG__CODE__RESOURCE_EXHAUSTED, "image %u: %s", "out of memory");
        else if (one != 1 && sr && t->digits && note_pieces(t, sr, one == 2))
            task_fail(t, NEOCOG__CODE__RESOURCE_EXHAUSTED, "image %u: %s", "out of memory");
        nc_segment_result_free(sr);
        nc_image_free(clean);
        nc_image_free(img);
    }
    nc_ens_rule rule = { 0 };
    if (need[NC_SLOT_CNN] && need[NC_SLOT_NEOCOG] && !missing)
        ensemble_rule(gen, &rule);  /* its threshold counts without rows too */
    /* One forward pass per network over every row of the batch. */
    const uint64_t t_forward = nc_now_us();
    int fwd_err[NC_SLOTS] = { 0 };
    /* charset alnum's classes of the chars model (the labels decide) */
    uint8_t alnum[NC_MF_MAX_CLASSES];
    if (need[NC_SLOT_CHARS] && !missing)
        nc_charset_mask(gen->slot[NC_SLOT_CHARS], NC_CHARSET_ALNUM, alnum);
    for (int s = 0; s < NC_SLOTS && n_rows; s++) {
        if (!need[s] || missing)
            continue;
        fwd_err[s] = slot_forward(w, s, gen->slot[s], (uint32_t)n_rows);
    }
    for (size_t r = 0; r < n_rows; r++) {
        nc_task *t = w->rows[r].task;
        int failed = 0;
        for (int s = 0; s < NC_SLOTS; s++)
            if (fwd_err[s]) {
                task_fail(t, NEOCOG__CODE__INTERNAL, "image %u: engine failed: %s",
                          nc_strerror(fwd_err[s]));
                failed = 1;
            }
        if (failed || t->code != NEOCOG__CODE__OK)
            continue;
        nc_answer a;
        int err = answer(w, gen, model, need, &rule, alnum, r, &a);
        if (err) {
            task_fail(t, NEOCOG__CODE__INTERNAL, "image %u: no answer: %s", nc_strerror(err));
            continue;
        }
        t->threshold = (float)a.threshold;
        if (w->rows[r].digit >= 0) {
            nc_digit *d = &t->digits[w->rows[r].digit];
            nc_digit_more *dm = &t->more[w->rows[r].digit];
            d->label = a.label;
            d->confidence = a.confidence;
            dm->reason = nc_answer_segment_reason(a.reason, dm->flags);
            dm->n_top = t->req->digit_top_k ? a.n_top : 0;
            for (uint32_t k = 0; k < dm->n_top; k++) {
                dm->top[k] = a.top[k];
                dm->top_score[k] = a.prob[a.top[k]];
            }
        } else {
            t->label = a.label;
            t->confidence = a.confidence;
            t->reject = a.label < 0;
            t->reason = a.reason;
            t->n_classes = a.n_classes;
            memcpy(t->scores, a.scores, a.n_classes * sizeof *t->scores);
            memcpy(t->prob, a.prob, a.n_classes * sizeof *t->prob);
        }
    }
    for (size_t r = 0; r < n_rows; r++) {
        nc_image_free(w->rows[r].src);
        w->rows[r].src = NULL;
    }
    uint64_t t_end = nc_now_us();
    for (uint32_t i = 0; i < n; i++) {
        nc_task *t = tasks[i];
        t->t_end = t_end;
        t->t_forward = t_forward;
        if (t->image->segment && t->code == NEOCOG__CODE__OK) {
            undo_cuts(t);
            keep_one_whole(t);
            /* A string is as sure as its least sure character, and
             * rejected for its first rejected one's reason; no character
             * at all is no ink.  Lines are numbered 0, 1... as they come
             * (core/segment's indices may skip a line left empty). */
            float conf = t->n_digits ? 1.0f : 0.0f;
            uint32_t reason = t->n_digits ? NC_ANSWER_REASON_NONE : NC_ANSWER_REASON_NO_INK;
            uint32_t line = 0, seg_line = t->n_digits ? t->more[0].line : 0;
            for (uint32_t d = 0; d < t->n_digits; d++) {
                const nc_digit *dg = &t->digits[d];
                nc_digit_more *dm = &t->more[d];
                if (dm->line != seg_line) {
                    seg_line = dm->line;
                    line++;
                }
                dm->line = line;
                if (dg->confidence < conf)
                    conf = dg->confidence;
                if (dg->label < 0 && reason == NC_ANSWER_REASON_NONE)
                    reason = dm->reason;
            }
            if (!t->n_digits) {
                const nc_answer_in in = answer_in(gen, model, need, &rule, t->req);
                t->threshold = (float)nc_answer_threshold_in_force(&in);
            }
            t->label = -1;
            t->confidence = conf;
            t->reject = reason != NC_ANSWER_REASON_NONE;
            t->reason = reason;
        }
    }
}

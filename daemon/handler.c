/* daemon/handler.c — see handler.h. */
#include "handler.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "clock.h"
#include "log.h"
#include "message.h"
#include "nc_config.h"
#include "request.h"
#include "split.h"

/* ---- scratch memory for one reply ------------------------------------------
 * A reply is a tree of small structs; they are allocated from one list of
 * blocks and freed together after packing. */
typedef struct scratch_block {
    struct scratch_block *next;
    max_align_t data[];
} scratch_block;

typedef struct scratch {
    scratch_block *blocks;
    int failed;
} scratch;

static void *sc_alloc(scratch *sc, size_t size)
{
    if (size > SIZE_MAX - sizeof(scratch_block))
        return sc->failed = 1, NULL;
    scratch_block *b = calloc(1, sizeof *b + size);
    if (!b)
        return sc->failed = 1, NULL;
    b->next = sc->blocks;
    sc->blocks = b;
    return b->data;
}

static void sc_free(scratch *sc)
{
    while (sc->blocks) {
        scratch_block *b = sc->blocks;
        sc->blocks = b->next;
        free(b);
    }
}

/* ---- simple replies --------------------------------------------------------- */

static void send_counted(nc_server *s, const nc_origin *o, const Neocog__Reply *r)
{
    nc_metrics_count_reply(&s->metrics, r->code);
    o->ops->send(o->owner, r);
}

void nc_handle_error(nc_server *s, const nc_origin *o, uint64_t id, int code,
                     const char *message)
{
    Neocog__Reply r = NEOCOG__REPLY__INIT;
    r.id = id;
    r.code = code;
    r.message = (char *)message;
    send_counted(s, o, &r);
}

static void fill_health(const nc_server *s, Neocog__HealthReply *h)
{
    neocog__health_reply__init(h);
    h->live = 1;
    h->ready = s->state == NC_SERVER_SERVING || s->state == NC_SERVER_RELOADING;
    h->draining = s->state == NC_SERVER_DRAINING;
    h->state = (char *)nc_server_state_text(s->state);
}

static const char *model_label(const nc_backend *be, int32_t k)
{
    return k >= 0 && (uint32_t)k < be->info.n_classes ? be->info.labels[k] : "?";
}

/* The threshold the server's setting puts in force for model (core/backend/answer.h). */
static float server_threshold(const nc_server *s, uint32_t model)
{
    const nc_models *g = s->models;
    const nc_model *cnn = g->slot[NC_SLOT_CNN], *neo = g->slot[NC_SLOT_NEOCOG];
    if (model == NEOCOG__MODEL__MODEL_CHARS) {    /* answers alone, as a CNN does */
        cnn = g->slot[NC_SLOT_CHARS];
        model = NEOCOG__MODEL__MODEL_CNN;
    }
    nc_ens_rule rule;
    nc_answer_in in = { .model = model, .rule = &rule, .threshold = s->cfg.reject_threshold };
    in.be[NC_ANSWER_NET_CNN] = cnn ? cnn->be : NULL;
    in.be[NC_ANSWER_NET_NEOCOG] = neo ? neo->be : NULL;
    if (model == NEOCOG__MODEL__MODEL_ENSEMBLE &&
        nc_backend_ensemble_rule(in.be[NC_ANSWER_NET_CNN], in.be[NC_ANSWER_NET_NEOCOG],
                                 &rule) == -EINVAL)
        return 0.0f;
    return (float)nc_answer_threshold_in_force(&in);
}

/* ModelInfo of the slots of the current generation: the CNN and the
 * neocognitron always, the chars model when one was found or named (a
 * folder of digit models alone reports the two it always did). */
static int fill_models(scratch *sc, const nc_server *s, Neocog__ModelInfo ***ret, size_t *ret_n)
{
    Neocog__ModelInfo **v = sc_alloc(sc, NC_SLOTS * sizeof *v);
    if (!v)
        return -ENOMEM;
    const nc_models *g = s->models;
    size_t n = 0;
    for (int slot = 0; slot < NC_SLOTS; slot++) {
        if (slot == NC_SLOT_CHARS && !g->slot[slot] && !g->path[slot][0])
            continue;
        Neocog__ModelInfo *mi = sc_alloc(sc, sizeof *mi);
        if (!mi)
            return -ENOMEM;
        neocog__model_info__init(mi);
        mi->model = slot == NC_SLOT_CNN ? NEOCOG__MODEL__MODEL_CNN
                  : slot == NC_SLOT_NEOCOG ? NEOCOG__MODEL__MODEL_NEOCOGNITRON
                                           : NEOCOG__MODEL__MODEL_CHARS;
        const nc_model *m = g->slot[slot];
        mi->loaded = m != NULL;
        mi->error = (char *)g->error[slot];
        mi->path = (char *)(m ? m->path : g->path[slot]);
        if (m) {
            const nc_model_info *info = &m->be->info;
            mi->architecture = (char *)m->arch;
            mi->n_labels = info->n_classes;
            mi->labels = sc_alloc(sc, info->n_classes * sizeof *mi->labels);
            if (!mi->labels)
                return -ENOMEM;
            for (uint32_t k = 0; k < info->n_classes; k++)
                mi->labels[k] = (char *)info->labels[k];
            mi->input_size = info->prep.size + 2 * info->prep.pad;
            mi->data = (char *)info->data;
            mi->created = (char *)info->created;
            mi->epochs = info->epochs;
            mi->test_error = info->test_error;
            mi->test_set = (char *)info->test_set;
            mi->loaded_at_unix = m->loaded_at;
            mi->reject_threshold = server_threshold(s, mi->model);
            if (slot == NC_SLOT_CNN && g->slot[NC_SLOT_NEOCOG])
                mi->ensemble_reject_threshold =
                    server_threshold(s, NEOCOG__MODEL__MODEL_ENSEMBLE);
        }
        v[n++] = mi;
    }
    *ret = v;
    *ret_n = n;
    return 0;
}

static void handle_info(nc_server *s, const nc_origin *o, const Neocog__Request *req)
{
    scratch sc = { 0 };
    Neocog__Reply r = NEOCOG__REPLY__INIT;
    r.id = req->id;
    Neocog__HealthReply health;
    Neocog__StatusReply st = NEOCOG__STATUS_REPLY__INIT;
    Neocog__ModelInfoReply mir = NEOCOG__MODEL_INFO_REPLY__INIT;
    fill_health(s, &health);
    if (req->kind_case == NEOCOG__REQUEST__KIND_HEALTH) {
        r.kind_case = NEOCOG__REPLY__KIND_HEALTH;
        r.health = &health;
    } else if (req->kind_case == NEOCOG__REQUEST__KIND_MODEL_INFO) {
        if (fill_models(&sc, s, &mir.models, &mir.n_models))
            goto oom;
        r.kind_case = NEOCOG__REPLY__KIND_MODEL_INFO;
        r.model_info = &mir;
    } else {
        nc_batcher_stats bs;
        nc_batcher_stats_get(s->batcher, &bs);
        st.version = (char *)NC_VERSION;
        /* The engines: "cuda:0,cuda:1" when every model runs on the same
         * ones, else per model. */
        const size_t backend_cap = 2 * sizeof s->models->slot[0]->engines + 64;
        char *backend = sc_alloc(&sc, backend_cap);   /* lives until the reply is sent */
        if (!backend)
            goto oom;
        const nc_model *m0 = s->models->slot[NC_SLOT_CNN], *m1 = s->models->slot[NC_SLOT_NEOCOG];
        if (m0 && m1 && strcmp(m0->engines, m1->engines))
            snprintf(backend, backend_cap, "%s: %s; %s: %s", nc_slot_name(NC_SLOT_CNN),
                     m0->engines, nc_slot_name(NC_SLOT_NEOCOG), m1->engines);
        else
            snprintf(backend, backend_cap, "%s", m0 ? m0->engines : m1 ? m1->engines : "cpu");
        st.backend = backend;
        st.uptime_s = (nc_now_us() - s->started_us) / 1000000u;
        st.health = &health;
        st.workers = bs.workers;
        st.priority_workers = bs.priority_workers;
        st.connections = s->n_conns;
        st.queue_depth = bs.depth;
        st.queue_capacity = s->cfg.queue_capacity;
        st.max_batch = s->cfg.max_batch;
        st.max_queue_delay_us = s->cfg.max_queue_delay_us;
        uint64_t total = 0;
        for (int k = 0; k < NC_METRICS_CODES; k++)
            total += s->metrics.requests[k];
        st.requests_total = total;
        st.images_total = s->metrics.images;
        st.batches_total = bs.batches;
        st.last_reload = s->last_reload;
        st.max_images_per_request = s->cfg.max_images_per_request;
        st.max_frame_bytes = s->cfg.max_frame_bytes;
        if (fill_models(&sc, s, &st.models, &st.n_models))
            goto oom;
        r.kind_case = NEOCOG__REPLY__KIND_STATUS;
        r.status = &st;
    }
    send_counted(s, o, &r);
    sc_free(&sc);
    return;
oom:
    sc_free(&sc);
    nc_handle_error(s, o, req->id, NEOCOG__CODE__RESOURCE_EXHAUSTED, "out of memory");
}

/* ---- recognition ------------------------------------------------------------- */

/* Check one image's description before anything is queued. */
static int check_image(const nc_server *s, const Neocog__Image *im, uint32_t i, char *why,
                       size_t n)
{
    if ((uint32_t)im->format > NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY) {
        snprintf(why, n, "image %u: unknown format %d", i, (int)im->format);
        return -1;
    }
    if ((uint32_t)im->polarity > NEOCOG__POLARITY__POLARITY_DARK_INK) {
        snprintf(why, n, "image %u: unknown polarity %d", i, (int)im->polarity);
        return -1;
    }
    if (im->data.len == 0) {
        snprintf(why, n, "image %u: no data", i);
        return -1;
    }
    /* Segmentation hints: absurd values are refused here, before queuing;
     * an ROI outside an encoded image is only known after decoding (the
     * worker's nc_split_frame_opts refuses it then). */
    if ((im->expected_digits || im->roi) && !im->segment) {
        snprintf(why, n, "image %u: roi and expected_digits apply to segmented images only "
                 "(set segment)", i);
        return -1;
    }
    const nc_split_opts so = nc_request_split_opts(im);
    char hint[200];
    if (nc_split_check_opts(&so, NC_MAX_DIGITS, s->cfg.max_image_dim, hint, sizeof hint)) {
        snprintf(why, n, "image %u: %s", i, hint);
        return -1;
    }
    if (im->format == NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY && im->roi &&
        ((uint64_t)so.roi.x + so.roi.width > im->width ||
         (uint64_t)so.roi.y + so.roi.height > im->height)) {
        snprintf(why, n, "image %u: roi %u,%u %ux%u lies outside the %ux%u image", i, so.roi.x,
                 so.roi.y, so.roi.width, so.roi.height, im->width, im->height);
        return -1;
    }
    if (im->format == NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY) {
        if (im->width == 0 || im->height == 0) {
            snprintf(why, n, "image %u: raw image needs width and height (got %ux%u)", i,
                     im->width, im->height);
            return -1;
        }
        if (im->width > s->cfg.max_image_dim || im->height > s->cfg.max_image_dim ||
            (uint64_t)im->width * im->height > s->cfg.max_image_pixels) {
            snprintf(why, n, "image %u: %ux%u exceeds the size limit (%u per side, %llu "
                     "pixels)", i, im->width, im->height, s->cfg.max_image_dim,
                     (unsigned long long)s->cfg.max_image_pixels);
            return -1;
        }
        if ((uint64_t)im->width * im->height != im->data.len) {
            snprintf(why, n, "image %u: raw data has %zu bytes but width x height = %ux%u = "
                     "%llu", i, im->data.len, im->width, im->height,
                     (unsigned long long)im->width * im->height);
            return -1;
        }
    }
    return 0;
}

/* MODEL_DEFAULT: the configured model when it is loaded, else whichever
 * network is (the CNN first).  Nothing loaded falls through to the
 * UNAVAILABLE check below. */
static uint32_t default_model(uint32_t want, int have_cnn, int have_neo)
{
    if (want == NC_DEFAULT_ENSEMBLE && have_cnn && have_neo)
        return NEOCOG__MODEL__MODEL_ENSEMBLE;
    if (want == NC_DEFAULT_NEOCOGNITRON && have_neo)
        return NEOCOG__MODEL__MODEL_NEOCOGNITRON;
    return have_cnn ? NEOCOG__MODEL__MODEL_CNN : NEOCOG__MODEL__MODEL_NEOCOGNITRON;
}

static void prepare_reply(nc_request *req);

/* Every field of a new task zero but the answer arrays (t->message empty). */
_Static_assert(offsetof(nc_task, message) < offsetof(nc_task, label) &&
               offsetof(nc_task, label) < offsetof(nc_task, scores) &&
               offsetof(nc_task, scores) < offsetof(nc_task, prob) &&
               offsetof(nc_task, prob) < offsetof(nc_task, digits),
               "task_clear skips message and scores..prob: keep them in this order");

static void task_clear(nc_task *t)
{
    memset(t, 0, offsetof(nc_task, message) + 1);
    memset(&t->label, 0, offsetof(nc_task, scores) - offsetof(nc_task, label));
    memset(&t->digits, 0, sizeof *t - offsetof(nc_task, digits));
}

/* rq: m's message, or (m NULL) the origin's, which it keeps until `done`
 * when the request is queued. */
static void handle_recognize(nc_server *s, const nc_origin *o, nc_msg *m,
                             const Neocog__Request *rq, size_t frame_len)
{
    const Neocog__RecognizeRequest *rr = rq->recognize;
    char why[320];
    int code = NEOCOG__CODE__INVALID_ARGUMENT;
    if (rr->n_images == 0) {
        snprintf(why, sizeof why, "no images in the request");
        goto fail;
    }
    if (rr->n_images > s->cfg.max_images_per_request) {
        snprintf(why, sizeof why, "too many images: %zu (limit %u per request)", rr->n_images,
                 s->cfg.max_images_per_request);
        goto fail;
    }
    uint32_t model = (uint32_t)rr->model;
    if (model > NEOCOG__MODEL__MODEL_CHARS) {
        snprintf(why, sizeof why, "unknown model %d (0 default, 1 CNN, 2 neocognitron, "
                 "3 ensemble, 4 chars)", (int)rr->model);
        goto fail;
    }
    const int charset = nc_charset_parse(rr->charset);
    if (charset < 0) {
        snprintf(why, sizeof why, "unknown charset '%.64s' (digits, alnum or all)", rr->charset);
        goto fail;
    }
    if (charset != NC_CHARSET_DIGITS && model != NEOCOG__MODEL__MODEL_DEFAULT &&
        model != NEOCOG__MODEL__MODEL_CHARS) {
        snprintf(why, sizeof why, "charset '%s' is answered by the chars model, not the "
                 "model asked for (leave model default, or ask for chars)", rr->charset);
        goto fail;
    }
    const nc_models *g = s->models;
    int have_cnn = g->slot[NC_SLOT_CNN] != NULL, have_neo = g->slot[NC_SLOT_NEOCOG] != NULL;
    if (charset != NC_CHARSET_DIGITS)
        model = NEOCOG__MODEL__MODEL_CHARS;
    if (model == NEOCOG__MODEL__MODEL_DEFAULT)
        model = default_model(s->cfg.default_model, have_cnn, have_neo);
    if (model == NEOCOG__MODEL__MODEL_CHARS && !g->slot[NC_SLOT_CHARS]) {
        code = NEOCOG__CODE__UNAVAILABLE;
        snprintf(why, sizeof why, "no character model loaded for charset %s (%.240s)",
                 charset == NC_CHARSET_ALL ? "all" : charset == NC_CHARSET_ALNUM ? "alnum"
                                                                                 : "digits",
                 g->error[NC_SLOT_CHARS][0] ? g->error[NC_SLOT_CHARS] : "no file");
        goto fail;
    }
    if (model != NEOCOG__MODEL__MODEL_CHARS &&
        ((model != NEOCOG__MODEL__MODEL_NEOCOGNITRON && !have_cnn) ||
         (model != NEOCOG__MODEL__MODEL_CNN && !have_neo))) {
        int slot = !have_cnn && model != NEOCOG__MODEL__MODEL_NEOCOGNITRON ? NC_SLOT_CNN
                                                                           : NC_SLOT_NEOCOG;
        code = NEOCOG__CODE__UNAVAILABLE;
        snprintf(why, sizeof why, "the %s model is not loaded (%s)", nc_slot_name(slot),
                 g->error[slot][0] ? g->error[slot] : "no file");
        goto fail;
    }
    /* NaN fails both comparisons: refuse what is not a number in range */
    if (!(rr->min_confidence <= 1.0f) && !(rr->min_confidence > 1.0f)) {
        snprintf(why, sizeof why, "min_confidence is not a number (0 = the server's "
                 "threshold, 0..1 a minimum, < 0 none)");
        goto fail;
    }
    if (rr->min_confidence > 1.0f) {
        snprintf(why, sizeof why, "min_confidence %g is above 1 (0 = the server's threshold, "
                 "0..1 a minimum, < 0 none)", (double)rr->min_confidence);
        goto fail;
    }
    for (size_t i = 0; i < rr->n_images; i++)
        if (check_image(s, rr->images[i], (uint32_t)i, why, sizeof why))
            goto fail;
    /* Not calloc: a task's answer arrays (scores, prob: a kilobyte) are
     * read only as far as a worker wrote them, and zeroing them for 64
     * images was a tenth of the event thread's work on such a request. */
    nc_request *req = malloc(sizeof *req + rr->n_images * sizeof(nc_task));
    if (!req) {
        code = NEOCOG__CODE__RESOURCE_EXHAUSTED;
        snprintf(why, sizeof why, "out of memory");
        goto fail;
    }
    memset(req, 0, sizeof *req);
    req->origin = *o;
    req->id = rq->id;
    req->model = model;
    req->top_k = rr->top_k ? rr->top_k : 1;
    req->digit_top_k = rr->top_k;
    req->threshold = nc_answer_threshold(s->cfg.reject_threshold, rr->min_confidence);
    req->prio = rq->priority > 0 ? 0 : rq->priority == 0 ? 1 : 2;
    req->t_recv = nc_now_us();
    uint64_t budget = rq->deadline_us ? rq->deadline_us : s->cfg.default_deadline_us;
    if (budget > UINT64_C(3600000000))
        budget = UINT64_C(3600000000);      /* an hour is "no deadline" in practice */
    req->deadline = budget ? req->t_recv + budget : 0;
    req->bytes = frame_len;
    req->cancelled = o->cancelled;
    req->rq = rq;
    req->msg = m;
    req->on_worked = prepare_reply;
    atomic_init(&req->n_worked, 0);
    req->n_tasks = (uint32_t)rr->n_images;
    for (uint32_t i = 0; i < req->n_tasks; i++) {
        nc_task *t = &req->tasks[i];
        task_clear(t);
        t->req = req;
        t->index = i;
        t->image = rr->images[i];
        t->code = NEOCOG__CODE__OK;
        t->label = -1;
    }
    if (nc_batcher_submit(s->batcher, req)) {
        nc_batcher_stats bs;
        nc_batcher_stats_get(s->batcher, &bs);
        snprintf(why, sizeof why, "server busy: queue full (%u images queued, capacity %u, "
                 "%llu bytes held); retry later", bs.depth, s->cfg.queue_capacity,
                 (unsigned long long)bs.bytes);
        free(req);
        code = NEOCOG__CODE__RESOURCE_EXHAUSTED;
        goto fail;
    }
    o->ops->hold(o->owner);
    s->requests_in_flight++;
    return;
fail:
    nc_handle_error(s, o, rq->id, code, why);
    nc_msg_free(m);
}

void nc_handle_request(nc_server *s, const nc_origin *o, const uint8_t *payload, size_t len,
                       size_t bytes)
{
    nc_msg *m = NULL;
    /* 16 x the frame plus 64 KiB covers any honest request; a hostile one
     * stops at the cap (see message.h). */
    int err = nc_msg_unpack(&neocog__request__descriptor, payload, len, 0, &m);
    if (err) {
        nc_handle_error(s, o, 0, err == -ENOMEM ? NEOCOG__CODE__RESOURCE_EXHAUSTED
                                                : NEOCOG__CODE__INVALID_ARGUMENT,
                        err == -ENOMEM ? "request needs too much memory to decode"
                                       : "malformed Request message (protobuf decoding failed)");
        return;
    }
    const Neocog__Request *rq = nc_msg_request(m);
    switch (rq->kind_case) {
    case NEOCOG__REQUEST__KIND_RECOGNIZE:
        handle_recognize(s, o, m, rq, bytes);
        return;     /* m now belongs to the request (or was freed) */
    case NEOCOG__REQUEST__KIND_STATUS:
    case NEOCOG__REQUEST__KIND_HEALTH:
    case NEOCOG__REQUEST__KIND_MODEL_INFO:
        handle_info(s, o, rq);
        break;
    default:
        nc_handle_error(s, o, rq->id, NEOCOG__CODE__UNIMPLEMENTED,
                        "request kind not set or not known to this server (set recognize, "
                        "status, health or model_info)");
        break;
    }
    nc_msg_free(m);
}

void nc_handle_recognize(nc_server *s, const nc_origin *o, const Neocog__Request *rq,
                         size_t bytes)
{
    handle_recognize(s, o, NULL, rq, bytes);
}

/* ---- replies to recognition -------------------------------------------------- */

/* Candidates top[k] with their scores, best first; NULL when out of memory. */
static Neocog__Candidate **candidates(scratch *sc, const nc_backend *be, const uint8_t *top,
                                      const float *score, uint32_t k)
{
    Neocog__Candidate **cv = sc_alloc(sc, (k + 1) * sizeof *cv);
    if (!cv)
        return NULL;
    for (uint32_t i = 0; i < k; i++) {
        Neocog__Candidate *cd = sc_alloc(sc, sizeof *cd);
        if (!cd)
            return NULL;
        neocog__candidate__init(cd);
        cd->label = top[i];
        cd->text = (char *)model_label(be, top[i]);
        cd->score = score[i];
        cv[i] = cd;
    }
    return cv;
}

static int fill_result(scratch *sc, const nc_request *req, const nc_task *t,
                       Neocog__Result *res)
{
    neocog__result__init(res);
    res->code = t->code;
    res->message = (char *)t->message;
    res->label = -1;
    res->text = (char *)"?";
    if (t->code != NEOCOG__CODE__OK || !t->gen)
        return 0;
    /* Labels come from the CNN when it took part (ensemble too). */
    const nc_model *m = req->model == NEOCOG__MODEL__MODEL_NEOCOGNITRON
                        ? t->gen->slot[NC_SLOT_NEOCOG]
                        : req->model == NEOCOG__MODEL__MODEL_CHARS ? t->gen->slot[NC_SLOT_CHARS]
                                                                   : t->gen->slot[NC_SLOT_CNN];
    if (!m)
        return 0;
    const nc_backend *be = m->be;
    res->label = t->label;
    res->confidence = t->confidence;
    res->reject = t->reject;
    res->reject_reason = (Neocog__RejectReason)t->reason;
    res->threshold = t->threshold;
    if (t->image->segment) {
        /* a label (< 16 bytes) and a line break per digit at most */
        char *text = sc_alloc(sc, (size_t)t->n_digits * 17 + 1);
        Neocog__Digit **dv = sc_alloc(sc, (t->n_digits + 1) * sizeof *dv);
        if (!text || !dv)
            return -ENOMEM;
        size_t used = 0;
        for (uint32_t d = 0; d < t->n_digits; d++) {
            const nc_digit *nd = &t->digits[d];
            Neocog__Digit *dg = sc_alloc(sc, sizeof *dg);
            Neocog__Box *bx = sc_alloc(sc, sizeof *bx);
            if (!dg || !bx)
                return -ENOMEM;
            neocog__digit__init(dg);
            neocog__box__init(bx);
            bx->x = nd->x;
            bx->y = nd->y;
            bx->width = nd->width;
            bx->height = nd->height;
            dg->box = bx;
            dg->label = nd->label;
            dg->text = (char *)model_label(be, nd->label);
            dg->confidence = nd->confidence;
            dg->reject = nd->label < 0;
            const nc_digit_more *dm = &t->more[d];
            dg->reject_reason = (Neocog__RejectReason)dm->reason;
            dg->threshold = t->threshold;
            dg->line = dm->line;
            if (dm->n_top) {
                dg->top = candidates(sc, be, dm->top, dm->top_score, dm->n_top);
                if (!dg->top)
                    return -ENOMEM;
                dg->n_top = dm->n_top;
            }
            /* a line break, or a word gap (character mode only) */
            const char *sep = nc_split_separator(d, dm->line, d ? t->more[d - 1].line : 0,
                                                 dm->flags);
            dg->space_before = sep[0] == ' ';
            if (sep[0])
                text[used++] = sep[0];
            size_t l = strlen(dg->text);
            memcpy(text + used, dg->text, l);
            used += l;
            dv[d] = dg;
        }
        text[used] = '\0';
        res->text = text;
        res->digits = dv;
        res->n_digits = t->n_digits;
        return 0;
    }
    res->text = (char *)model_label(be, t->label);
    res->scores = (float *)t->scores;
    res->n_scores = t->n_classes;
    uint32_t k = req->top_k < t->n_classes ? req->top_k : t->n_classes;
    uint8_t top[NC_MF_MAX_CLASSES];
    float score[NC_MF_MAX_CLASSES];
    nc_answer_rank(t->prob, t->n_classes, k, top);
    for (uint32_t i = 0; i < k; i++)
        score[i] = t->prob[top[i]];
    if (!(res->top = candidates(sc, be, top, score, k)))
        return -ENOMEM;
    res->n_top = k;
    return 0;
}

/* A finished request's Reply: built on the worker that completed it
 * (prepare_reply), else on the event thread (finish_request). */
struct nc_built_reply {
    Neocog__Reply r;
    Neocog__Timing tm;
    Neocog__RecognizeReply rec;
    scratch sc;                     /* r's tree */
    uint64_t queue_us, compute_us;
    char why[160];
};

/* req's Reply at time now into b (which must not move while r is used:
 * r.message may point into it). */
static void build_reply(const nc_request *req, uint64_t now, nc_built_reply *b)
{
    Neocog__Reply *r = &b->r;
    *r = (Neocog__Reply)NEOCOG__REPLY__INIT;
    b->tm = (Neocog__Timing)NEOCOG__TIMING__INIT;
    b->rec = (Neocog__RecognizeReply)NEOCOG__RECOGNIZE_REPLY__INIT;
    b->sc = (scratch){ 0 };
    scratch *sc = &b->sc;
    r->id = req->id;
    uint64_t queue_us = 0, compute_us = 0, prepare_us = 0, forward_us = 0;
    uint32_t batch = 0;
    for (uint32_t i = 0; i < req->n_tasks; i++) {
        const nc_task *t = &req->tasks[i];
        if (t->t_start > req->t_recv && t->t_start - req->t_recv > queue_us)
            queue_us = t->t_start - req->t_recv;
        if (t->t_end - t->t_start > compute_us) {
            /* the split of the slowest batch this request rode in */
            compute_us = t->t_end - t->t_start;
            prepare_us = t->t_forward - t->t_start;
            forward_us = t->t_end - t->t_forward;
        }
        batch = t->batch_size;
        if (r->code == NEOCOG__CODE__OK && t->code != NEOCOG__CODE__OK) {
            r->code = t->code;
            r->message = (char *)t->message;
        }
    }
    b->queue_us = queue_us;
    b->compute_us = compute_us;
    b->tm.queue_us = queue_us;
    b->tm.compute_us = compute_us;
    b->tm.prepare_us = prepare_us;
    b->tm.forward_us = forward_us;
    b->tm.total_us = now - req->t_recv;
    r->timing = &b->tm;
    if (req->deadline && now > req->deadline && r->code == NEOCOG__CODE__OK) {
        r->code = NEOCOG__CODE__DEADLINE_EXCEEDED;
        snprintf(b->why, sizeof b->why, "deadline exceeded: answered after %llu us, "
                 "budget %llu us", (unsigned long long)(now - req->t_recv),
                 (unsigned long long)(req->deadline - req->t_recv));
        r->message = b->why;
    }
    if (r->code != NEOCOG__CODE__DEADLINE_EXCEEDED && r->code != NEOCOG__CODE__CANCELLED &&
        r->code != NEOCOG__CODE__UNAVAILABLE) {
        Neocog__Result **rv = sc_alloc(sc, req->n_tasks * sizeof *rv);
        Neocog__Result *res = sc_alloc(sc, req->n_tasks * sizeof *res);
        for (uint32_t i = 0; rv && res && i < req->n_tasks; i++) {
            if (fill_result(sc, req, &req->tasks[i], &res[i]))
                break;
            rv[i] = &res[i];
        }
        if (sc->failed) {
            r->code = NEOCOG__CODE__RESOURCE_EXHAUSTED;
            r->message = (char *)"out of memory building the reply";
        } else {
            Neocog__RecognizeReply *rec = &b->rec;
            rec->results = rv;
            rec->n_results = req->n_tasks;
            rec->model = (char *)(req->model == NEOCOG__MODEL__MODEL_CNN ? "cnn"
                                : req->model == NEOCOG__MODEL__MODEL_NEOCOGNITRON ? "neocognitron"
                                : req->model == NEOCOG__MODEL__MODEL_CHARS ? "chars" : "ensemble");
            rec->batch_size = batch;
            r->kind_case = NEOCOG__REPLY__KIND_RECOGNIZE;
            r->recognize = rec;
        }
    }
}

/* Worker thread, req's last image done (req->on_worked): the Reply, and
 * the origin's bytes of it when it makes them (ops->prepare), so the event
 * thread only sends.  Out of memory: nothing, the event thread builds it. */
static void prepare_reply(nc_request *req)
{
    nc_built_reply *b = malloc(sizeof *b);
    if (!b)
        return;
    build_reply(req, nc_now_us(), b);
    const nc_origin *o = &req->origin;
    if (o->ops->prepare) {
        o->ops->prepare(o->owner, &b->r);
        /* the origin's send needs only the code and message from here on */
        sc_free(&b->sc);
        b->r.kind_case = NEOCOG__REPLY__KIND__NOT_SET;
        b->r.recognize = NULL;
    }
    req->built = b;
}

static void finish_request(nc_server *s, nc_request *req)
{
    const nc_origin o = req->origin;
    nc_built_reply here, *b = req->built;
    if (!b) {
        b = &here;
        build_reply(req, nc_now_us(), b);
    }
    send_counted(s, &o, &b->r);
    s->metrics.images += req->n_tasks;
    nc_histogram_add(&s->metrics.queue, b->queue_us);
    nc_histogram_add(&s->metrics.compute, b->compute_us);
    nc_histogram_add(&s->metrics.total, b->tm.total_us);
    sc_free(&b->sc);
    if (b != &here)
        free(b);
    for (uint32_t i = 0; i < req->n_tasks; i++) {
        free(req->tasks[i].digits);
        free(req->tasks[i].more);
        nc_models_unref(req->tasks[i].gen);
    }
    nc_batcher_release(s->batcher, req);
    nc_msg_free(req->msg);
    free(req);
    s->requests_in_flight--;
    o.ops->done(o.owner);
    nc_server_check_drained(s);
}

void nc_handle_done(nc_server *s)
{
    nc_task *t = nc_batcher_take_done(s->batcher);
    while (t) {
        nc_task *next = t->next;
        nc_request *req = t->req;
        if (++req->n_done == req->n_tasks)
            finish_request(s, req);
        t = next;
    }
}

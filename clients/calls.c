/* clients/calls.c — libneocog: the requests themselves (a recognise
 * request built around the caller's bytes, the blocking calls) and the
 * enum names.  The connection is client.c's, the window and
 * retries client_window.c's.
 *
 * Layer: clients.  Nothing printed, nothing exits. */
#include "neocog_client.h"
#include "reply_json.h"
#include "client_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- recognise ------------------------------------------------------------ */

int nc_client_send_recognize(nc_client *c, const nc_client_recognize_opts *opts,
                             const nc_client_image *images, size_t n_images,
                             uint64_t *ret_id)
{
    if (!c || (!images && n_images))
        return -EINVAL;
    /* Build the message around the caller's bytes: nothing is copied until
     * protobuf-c packs it into the frame. */
    Neocog__Image *im = calloc(n_images ? n_images : 1, sizeof *im);
    Neocog__Image **ptrs = calloc(n_images ? n_images : 1, sizeof *ptrs);
    if (!im || !ptrs) {
        free(im);
        free(ptrs);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n_images; i++) {
        neocog__image__init(&im[i]);
        im[i].format = images[i].format;
        im[i].data.data = (uint8_t *)images[i].data;
        im[i].data.len = images[i].len;
        im[i].width = images[i].width;
        im[i].height = images[i].height;
        im[i].segment = images[i].segment != 0;
        im[i].polarity = images[i].polarity;
        ptrs[i] = &im[i];
    }
    Neocog__RecognizeRequest rr = NEOCOG__RECOGNIZE_REQUEST__INIT;
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    if (opts) {
        rr.model = opts->model;
        rr.top_k = opts->top_k;
        rq.deadline_us = opts->deadline_us;
        rq.priority = opts->priority;
        rr.min_confidence = opts->min_confidence;
        if (opts->charset)
            rr.charset = (char *)opts->charset;
    }
    rr.n_images = n_images;
    rr.images = ptrs;
    rq.kind_case = NEOCOG__REQUEST__KIND_RECOGNIZE;
    rq.recognize = &rr;
    int r = nc_client_send_request(c, &rq, ret_id);
    free(im);
    free(ptrs);
    return r;
}

/* ---- blocking calls ------------------------------------------------------- */

/* Send and wait for that reply; the timeout covers both. */
static int roundtrip(nc_client *c, Neocog__Request *rq, nc_msg **ret)
{
    uint64_t id;
    int r = nc_client_send_request(c, rq, &id);
    if (r < 0)
        return r;
    return nc_client_receive_id(c, id, nc_client_timeout(c), ret);
}

int nc_client_recognize(nc_client *c, const nc_client_recognize_opts *opts,
                        const nc_client_image *images, size_t n_images,
                        nc_msg **ret_reply)
{
    if (!c || !ret_reply)
        return -EINVAL;
    uint64_t id;
    int r = nc_client_send_recognize(c, opts, images, n_images, &id);
    if (r < 0)
        return r;
    return nc_client_receive_id(c, id, nc_client_timeout(c), ret_reply);
}

int nc_client_status(nc_client *c, nc_msg **ret_reply)
{
    Neocog__StatusRequest s = NEOCOG__STATUS_REQUEST__INIT;
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    rq.kind_case = NEOCOG__REQUEST__KIND_STATUS;
    rq.status = &s;
    return c && ret_reply ? roundtrip(c, &rq, ret_reply) : -EINVAL;
}

int nc_client_health(nc_client *c, nc_msg **ret_reply)
{
    Neocog__HealthRequest h = NEOCOG__HEALTH_REQUEST__INIT;
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    rq.kind_case = NEOCOG__REQUEST__KIND_HEALTH;
    rq.health = &h;
    return c && ret_reply ? roundtrip(c, &rq, ret_reply) : -EINVAL;
}

int nc_client_model_info(nc_client *c, nc_msg **ret_reply)
{
    Neocog__ModelInfoRequest mi = NEOCOG__MODEL_INFO_REQUEST__INIT;
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    rq.kind_case = NEOCOG__REQUEST__KIND_MODEL_INFO;
    rq.model_info = &mi;
    return c && ret_reply ? roundtrip(c, &rq, ret_reply) : -EINVAL;
}

/* ---- helpers -------------------------------------------------------------- */

static const struct {
    const char *name;
    Neocog__Model model;
} model_names[] = {
    { "default", NEOCOG__MODEL__MODEL_DEFAULT },
    { "cnn", NEOCOG__MODEL__MODEL_CNN },
    { "neocognitron", NEOCOG__MODEL__MODEL_NEOCOGNITRON },
    { "ensemble", NEOCOG__MODEL__MODEL_ENSEMBLE },
    { "chars", NEOCOG__MODEL__MODEL_CHARS },
};

int nc_client_model_parse(const char *name, Neocog__Model *ret)
{
    if (!name || !ret)
        return -EINVAL;
    for (size_t i = 0; i < sizeof model_names / sizeof model_names[0]; i++)
        if (!strcmp(name, model_names[i].name)) {
            *ret = model_names[i].model;
            return 0;
        }
    return -EINVAL;
}

const char *nc_client_model_name(Neocog__Model m)
{
    for (size_t i = 0; i < sizeof model_names / sizeof model_names[0]; i++)
        if (model_names[i].model == m)
            return model_names[i].name;
    return "unknown";
}

const char *nc_client_reject_reason_text(Neocog__RejectReason r)
{
    return nc_reject_reason_text(r);     /* proto/reply_json: one wording */
}

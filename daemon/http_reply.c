/* daemon/http_reply.c — see http_reply.h. */
#include "http_reply.h"

#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>

#include "http_request.h"
#include "message.h"
#include "reply_json.h"

int nc_http_status_of(int code)
{
    switch (code) {
    case NEOCOG__CODE__OK: return 200;
    case NEOCOG__CODE__INVALID_ARGUMENT: return 400;
    case NEOCOG__CODE__RESOURCE_EXHAUSTED: return 429;
    case NEOCOG__CODE__CANCELLED:
    case NEOCOG__CODE__UNAVAILABLE: return 503;
    case NEOCOG__CODE__DEADLINE_EXCEEDED: return 504;
    case NEOCOG__CODE__UNIMPLEMENTED: return 501;
    default: return 500;
    }
}

/* A stream into *buf that one thread writes: without stdio's lock taken
 * and given back around each of the thousands of small writes a reply of
 * many images is made of. */
static FILE *open_reply(char **buf, size_t *len)
{
    FILE *f = open_memstream(buf, len);
    if (f)
        __fsetlocking(f, FSETLOCKING_BYCALLER);
    return f;
}

/* Closes f; the text or NULL. */
static char *finish(FILE *f, char **buf)
{
    int bad = ferror(f);
    if (fclose(f) || bad) {
        free(*buf);
        return NULL;
    }
    return *buf;
}

char *nc_http_error_json(const char *message, const char *code, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_reply(&buf, len);
    if (!f)
        return NULL;
    fputs("{\"error\":", f);
    nc_json_string(f, message);
    fputs(",\"code\":", f);
    nc_json_string(f, code);
    fputs("}\n", f);
    return finish(f, &buf);
}

/* The whole call failed: the reply's code, else the first image's. */
static int failure(const Neocog__Reply *r, int v2, int *code, const char **message)
{
    const Neocog__RecognizeReply *rec =
        r->kind_case == NEOCOG__REPLY__KIND_RECOGNIZE ? r->recognize : NULL;
    size_t ok = 0;
    for (size_t i = 0; rec && i < rec->n_results; i++)
        ok += rec->results[i]->code == NEOCOG__CODE__OK;
    if (r->code == NEOCOG__CODE__OK && rec && ok == rec->n_results)
        return 0;
    if (rec && ok && !v2)
        return 0;               /* /v1: the images that failed say so themselves */
    *code = r->code;
    *message = r->message;
    for (size_t i = 0; *code == NEOCOG__CODE__OK && rec && i < rec->n_results; i++)
        if (rec->results[i]->code != NEOCOG__CODE__OK) {
            *code = rec->results[i]->code;
            *message = rec->results[i]->message;
        }
    if (*code == NEOCOG__CODE__OK)
        *code = NEOCOG__CODE__INTERNAL, *message = "the reply holds no result";
    return 1;
}

static char *error_reply(int code, const char *message, int *status, size_t *len)
{
    *status = nc_http_status_of(code);
    return nc_http_error_json(message && *message ? message : nc_msg_code_name(code),
                              nc_msg_code_name(code), len);
}

char *nc_http_v1_json(const Neocog__Reply *r, char *const *names, int *status, size_t *len)
{
    int code;
    const char *message;
    if (failure(r, 0, &code, &message))
        return error_reply(code, message, status, len);
    char *buf = NULL;
    FILE *f = open_reply(&buf, len);
    if (!f)
        return NULL;
    const Neocog__RecognizeReply *rec = r->recognize;
    fputs("[\n", f);
    for (size_t i = 0; i < rec->n_results; i++) {
        const Neocog__Result *res = rec->results[i];
        fputs(i ? ",\n{\"file\":" : "{\"file\":", f);
        nc_json_string(f, names ? names[i] : NULL);
        fputc(',', f);
        if (res->code == NEOCOG__CODE__OK)
            nc_json_result_members(f, r, res);
        else
            nc_json_error_members(f, nc_msg_code_name(res->code), res->message);
        fputc('}', f);
    }
    fputs("\n]\n", f);
    *status = 200;
    return finish(f, &buf);
}

static void output_head(FILE *f, int *first, const char *name, const char *type, size_t n)
{
    fprintf(f, "%s{\"name\":\"%s\",\"datatype\":\"%s\",\"shape\":[%zu", *first ? "" : ",",
            name, type, n);
    *first = 0;
}

char *nc_http_v2_json(const Neocog__Reply *r, const char *model_name, const char *id,
                      uint32_t want, int *status, size_t *len)
{
    int code;
    const char *message;
    if (failure(r, 1, &code, &message))
        return error_reply(code, message, status, len);
    if (!want)
        want = NC_V2_LABEL | NC_V2_TEXT | NC_V2_CONFIDENCE | NC_V2_SCORES;
    const Neocog__RecognizeReply *rec = r->recognize;
    const size_t n = rec->n_results;
    /* scores only when every image has the same number (a segmented image
     * has none of its own) */
    size_t classes = n ? rec->results[0]->n_scores : 0;
    for (size_t i = 0; i < n; i++)
        if (rec->results[i]->n_scores != classes)
            classes = 0;
    char *buf = NULL;
    FILE *f = open_reply(&buf, len);
    if (!f)
        return NULL;
    fputs("{\"model_name\":", f);
    nc_json_string(f, model_name);
    if (id) {
        fputs(",\"id\":", f);
        nc_json_string(f, id);
    }
    fputs(",\"outputs\":[", f);
    int first = 1;
    if (want & NC_V2_LABEL) {
        output_head(f, &first, "label", "INT32", n);
        fputs("],\"data\":[", f);
        for (size_t i = 0; i < n; i++)
            fprintf(f, "%s%d", i ? "," : "", rec->results[i]->label);
        fputs("]}", f);
    }
    if (want & NC_V2_TEXT) {
        output_head(f, &first, "text", "BYTES", n);
        fputs("],\"data\":[", f);
        for (size_t i = 0; i < n; i++) {
            if (i)
                fputc(',', f);
            nc_json_string(f, rec->results[i]->text ? rec->results[i]->text : "");
        }
        fputs("]}", f);
    }
    if (want & NC_V2_CONFIDENCE) {
        output_head(f, &first, "confidence", "FP32", n);
        fputs("],\"data\":[", f);
        for (size_t i = 0; i < n; i++) {
            if (i)
                fputc(',', f);
            nc_json_number(f, rec->results[i]->confidence);
        }
        fputs("]}", f);
    }
    if ((want & NC_V2_SCORES) && classes) {
        output_head(f, &first, "scores", "FP32", n);
        fprintf(f, ",%zu],\"data\":[", classes);
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < classes; k++) {
                if (i || k)
                    fputc(',', f);
                nc_json_number(f, rec->results[i]->scores[k]);
            }
        fputs("]}", f);
    }
    fputs("]}\n", f);
    *status = 200;
    return finish(f, &buf);
}

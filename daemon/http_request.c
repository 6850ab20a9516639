/* daemon/http_request.c — see http_request.h.  Past 800 lines because the
 * /v1 bodies (image, multipart, JSON) and /v2 share its image and option
 * helpers, which no other file needs. */
#include "http_request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_json.h"

/* ---- options ------------------------------------------------------------------ */

void nc_http_opts_init(nc_http_opts *o)
{
    memset(o, 0, sizeof *o);
    o->model = -1;
}

static int parse_u64(const char *v, uint64_t max, uint64_t *ret)
{
    if (!*v || *v == '-' || *v == '+')
        return -1;
    char *e;
    errno = 0;
    unsigned long long x = strtoull(v, &e, 10);
    if (*e || errno || x > max)
        return -1;
    *ret = x;
    return 0;
}

static int parse_bool(const char *v, int *ret)
{
    if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !*v)
        *ret = 1;
    else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no"))
        *ret = 0;
    else
        return -1;
    return 0;
}

int nc_http_opt_set(nc_http_opts *o, const char *key, const char *value, size_t value_len,
                    char *why, size_t why_len)
{
    char v[64];
    uint64_t u;
    if (value_len >= sizeof v) {
        snprintf(why, why_len, "option %s: value too long", key);
        return -EINVAL;
    }
    memcpy(v, value, value_len);
    v[value_len] = '\0';
    if (!strcmp(key, "model")) {
        static const char *const names[] = { "default", "cnn", "neocognitron", "ensemble",
                                             "chars" };
        o->model = -1;
        for (int k = 0; k < 5; k++)
            if (!strcasecmp(v, names[k]) || (v[0] == '0' + k && !v[1]))
                o->model = k;
        if (o->model < 0)
            goto bad;
    } else if (!strcmp(key, "charset")) {
        if (value_len >= sizeof o->charset)
            goto bad;
        memcpy(o->charset, v, value_len + 1);
    } else if (!strcmp(key, "segment")) {
        if (parse_bool(v, &o->segment))
            goto bad;
    } else if (!strcmp(key, "top_k")) {
        if (parse_u64(v, 64, &u))
            goto bad;
        o->top_k = (uint32_t)u;
    } else if (!strcmp(key, "min_confidence")) {
        char *e;
        double x = strtod(v, &e);
        if (!*v || *e)
            goto bad;
        o->min_confidence = (float)x;     /* range: the handler's check */
    } else if (!strcmp(key, "expected_digits")) {
        if (parse_u64(v, UINT32_MAX, &u))
            goto bad;
        o->expected_digits = (uint32_t)u;
    } else if (!strcmp(key, "polarity")) {
        if (!strcasecmp(v, "auto") || !strcmp(v, "0"))
            o->polarity = NEOCOG__POLARITY__POLARITY_AUTO;
        else if (!strcasecmp(v, "light") || !strcasecmp(v, "light_ink") || !strcmp(v, "1"))
            o->polarity = NEOCOG__POLARITY__POLARITY_LIGHT_INK;
        else if (!strcasecmp(v, "dark") || !strcasecmp(v, "dark_ink") || !strcmp(v, "2"))
            o->polarity = NEOCOG__POLARITY__POLARITY_DARK_INK;
        else
            goto bad;
    } else if (!strcmp(key, "roi")) {
        unsigned x, y, w, h;
        char end;
        if (sscanf(v, "%u,%u,%u,%u%c", &x, &y, &w, &h, &end) != 4 || v[0] == '-')
            goto bad;
        o->has_roi = 1;
        o->roi[0] = x, o->roi[1] = y, o->roi[2] = w, o->roi[3] = h;
    } else if (!strcmp(key, "priority")) {
        if (!strcasecmp(v, "high"))
            o->priority = 1;
        else if (!strcasecmp(v, "normal"))
            o->priority = 0;
        else if (!strcasecmp(v, "background") || !strcasecmp(v, "low"))
            o->priority = -1;
        else {
            char *e;
            long p = strtol(v, &e, 10);
            if (!*v || *e || p < INT32_MIN || p > INT32_MAX)
                goto bad;
            o->priority = (int32_t)p;
        }
    } else if (!strcmp(key, "deadline_ms")) {
        if (parse_u64(v, 3600000, &u))
            goto bad;
        o->deadline_us = u * 1000;
    } else {
        snprintf(why, why_len, "unknown option '%s' (model, charset, segment, top_k, "
                 "min_confidence, expected_digits, polarity, roi, priority, deadline_ms)", key);
        return -ENOENT;
    }
    return 0;
bad:
    snprintf(why, why_len, "option %s: bad value '%s'", key, v);
    return -EINVAL;
}

static int unhex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decoding of s[0..len) into dst[cap]; -1 when it does not fit. */
static int url_decode(const char *s, size_t len, char *dst, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '+')
            c = ' ';
        else if (c == '%' && i + 2 < len && unhex(s[i + 1]) >= 0 && unhex(s[i + 2]) >= 0) {
            c = (char)(unhex(s[i + 1]) << 4 | unhex(s[i + 2]));
            i += 2;
        }
        if (o + 1 >= cap)
            return -1;
        dst[o++] = c;
    }
    dst[o] = '\0';
    return (int)o;
}

int nc_http_opts_query(nc_http_opts *o, const char *q, char *why, size_t why_len)
{
    while (q && *q) {
        size_t n = strcspn(q, "&");
        const char *eq = memchr(q, '=', n);
        char key[32], val[80];
        size_t kl = eq ? (size_t)(eq - q) : n;
        int vl = 0;
        if (n) {
            if (url_decode(q, kl, key, sizeof key) < 0 ||
                (vl = eq ? url_decode(eq + 1, n - kl - 1, val, sizeof val) : 0) < 0) {
                snprintf(why, why_len, "query parameter too long");
                return -EINVAL;
            }
            if (!eq)
                val[0] = '\0';
            int err = nc_http_opt_set(o, key, val, (size_t)vl, why, why_len);
            if (err)
                return err;
        }
        q += n + (q[n] == '&');
    }
    return 0;
}

/* ---- base64 -------------------------------------------------------------------- */

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

long nc_base64_decode(const char *s, size_t len, uint8_t *out)
{
    /* a data: URL, as a browser's canvas.toDataURL() gives */
    if (len > 5 && !memcmp(s, "data:", 5)) {
        const char *comma = memchr(s, ',', len);
        if (!comma)
            return -1;
        size_t skip = (size_t)(comma + 1 - s);
        s += skip;
        len -= skip;
    }
    uint32_t acc = 0;
    int bits = 0, pad = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = b64_value(c);
        if (v < 0 || pad)
            return -1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);  /* o < i: in place is safe */
        }
    }
    if (bits >= 6 || pad > 2)
        return -1;
    return (long)o;
}

/* ---- the images ------------------------------------------------------------------ */

void nc_http_call_in_free(nc_http_call_in *in)
{
    for (uint32_t i = 0; in->name && i < in->n; i++)
        free(in->name[i]);
    free(in->name);
    free(in->image);
    free(in->roi);
    free(in->v2_id);
    free(in->pixels);
    memset(in, 0, sizeof *in);
}

/* Room for n images (zeroed, initialised as protobuf messages). */
static int alloc_images(nc_http_call_in *in, uint32_t n)
{
    in->n = n;
    in->image = calloc(n ? n : 1, sizeof *in->image);
    in->roi = calloc(n ? n : 1, sizeof *in->roi);
    in->name = calloc(n ? n : 1, sizeof *in->name);
    if (!in->image || !in->roi || !in->name)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        neocog__image__init(&in->image[i]);
        neocog__box__init(&in->roi[i]);
    }
    return 0;
}

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Case-insensitive: does the media type of ct (before any ';') equal t? */
static int media_is(const char *ct, size_t ct_len, const char *t)
{
    size_t n = 0;
    while (n < ct_len && ct[n] != ';' && ct[n] != ' ' && ct[n] != '\t')
        n++;
    return n == strlen(t) && !strncasecmp(ct, t, n);
}

/* The ImageFormat a media type names; -1 not an image type we read. */
static int image_format(const char *ct, size_t len)
{
    if (media_is(ct, len, "image/png"))
        return NEOCOG__IMAGE_FORMAT__FORMAT_PNG;
    if (media_is(ct, len, "image/jpeg") || media_is(ct, len, "image/jpg"))
        return NEOCOG__IMAGE_FORMAT__FORMAT_JPEG;
    if (media_is(ct, len, "image/x-portable-graymap") ||
        media_is(ct, len, "image/x-portable-anymap"))
        return NEOCOG__IMAGE_FORMAT__FORMAT_PGM;
    if (media_is(ct, len, "application/octet-stream"))
        return NEOCOG__IMAGE_FORMAT__FORMAT_AUTO;
    return -1;
}

/* A parameter of a header value (boundary=..., name="..."): its bytes. */
static const char *header_param(const char *h, size_t hlen, const char *key, size_t *ret_len)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i + kl < hlen; i++) {
        if ((i == 0 || h[i - 1] == ';' || h[i - 1] == ' ' || h[i - 1] == '\t') &&
            !strncasecmp(h + i, key, kl) && h[i + kl] == '=') {
            const char *v = h + i + kl + 1, *end = h + hlen;
            if (v < end && *v == '"') {
                const char *q = memchr(v + 1, '"', (size_t)(end - v - 1));
                if (!q)
                    return NULL;
                *ret_len = (size_t)(q - v - 1);
                return v + 1;
            }
            size_t n = 0;
            while (v + n < end && v[n] != ';' && v[n] != ' ' && v[n] != '\r')
                n++;
            *ret_len = n;
            return v;
        }
    }
    return NULL;
}

/* Image i takes the call's image options. */
static void image_defaults(nc_http_call_in *in, uint32_t i)
{
    Neocog__Image *im = &in->image[i];
    const nc_http_opts *o = &in->opts;
    im->segment = o->segment;
    im->polarity = (Neocog__Polarity)o->polarity;
    im->expected_digits = o->expected_digits;
    if (o->has_roi) {
        in->roi[i].x = o->roi[0], in->roi[i].y = o->roi[1];
        in->roi[i].width = o->roi[2], in->roi[i].height = o->roi[3];
        im->roi = &in->roi[i];
    }
}

typedef struct part {
    const char *name, *filename, *ctype, *data;
    size_t name_len, filename_len, ctype_len, data_len;
    int has_filename;
} part;

/* The first s (n bytes, s[0] a CR) in [from, end); NULL none.  A call's
 * image bytes are searched once for every part, so this runs memchr over
 * them for the rare CR and compares the rest only there: glibc's memmem
 * crawls through the long runs of equal bytes a scanned digit is made of,
 * and sets up a table on each call, several times slower either way. */
static const char *find_cr(const char *from, const char *end, const char *s, size_t n)
{
    for (const char *p = from; end - p >= (ptrdiff_t)n; p++) {
        p = memchr(p, '\r', (size_t)(end - p) - n + 1);
        if (!p)
            return NULL;
        if (!memcmp(p + 1, s + 1, n - 1))
            return p;
    }
    return NULL;
}

/* Split a multipart body; calls back for each part.  Counting pass when
 * in == NULL.  Returns parts seen, or -1 when malformed. */
static long multipart_walk(const char *body, size_t len, const char *bd, size_t bd_len,
                           int (*fn)(void *, const part *), void *arg)
{
    char crlf_delim[80];      /* CRLF "--" boundary; the delimiter from [2] */
    if (bd_len == 0 || bd_len > 70)
        return -1;
    memcpy(crlf_delim, "\r\n--", 4);
    memcpy(crlf_delim + 4, bd, bd_len);
    const char *delim = crlf_delim + 2;
    const size_t dl = bd_len + 2;
    const char *end = body + len;
    const char *p = memmem(body, len, delim, dl);
    long n = 0;
    while (p) {
        p += dl;
        if (end - p >= 2 && p[0] == '-' && p[1] == '-')
            return n;                                   /* closing delimiter */
        if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
            return -1;
        p += 2;
        const char *hend = find_cr(p, end, "\r\n\r\n", 4);
        if (!hend)
            return -1;
        part pt = { 0 };
        for (const char *h = p; h < hend;) {
            const char *eol = find_cr(h, hend + 2, "\r\n", 2);
            size_t hl = (size_t)(eol - h);
            if (hl > 20 && !strncasecmp(h, "content-disposition:", 20)) {
                pt.name = header_param(h + 20, hl - 20, "name", &pt.name_len);
                pt.filename = header_param(h + 20, hl - 20, "filename", &pt.filename_len);
                pt.has_filename = pt.filename != NULL;
            } else if (hl > 13 && !strncasecmp(h, "content-type:", 13)) {
                pt.ctype = h + 13;
                pt.ctype_len = hl - 13;
                while (pt.ctype_len && (*pt.ctype == ' ' || *pt.ctype == '\t'))
                    pt.ctype++, pt.ctype_len--;
            }
            h = eol + 2;
        }
        pt.data = hend + 4;
        /* the part ends at CRLF + delimiter */
        const char *next = find_cr(pt.data, end, crlf_delim, dl + 2);
        if (!next)
            return -1;
        next += 2;
        pt.data_len = (size_t)(next - 2 - pt.data);
        if (fn && fn(arg, &pt))
            return -1;
        n++;
        p = next;
    }
    return -1;      /* no closing delimiter */
}

typedef struct form_ctx {
    nc_http_call_in *in;
    uint32_t cap;       /* images the arrays hold room for */
    char *why;
    size_t why_len;
    int code;
} form_ctx;

static int is_image_part(const part *pt)
{
    return pt->has_filename || (pt->ctype && image_format(pt->ctype, pt->ctype_len) >= 0);
}

/* Room for one more image: the arrays double as the one walk finds parts
 * (a walk to count them first read every part's headers twice). */
static int room_for_image(form_ctx *f)
{
    nc_http_call_in *in = f->in;
    if (in->n < f->cap)
        return 0;
    if (f->cap > UINT32_MAX / 2)
        return -ENOMEM;
    uint32_t cap = f->cap ? 2 * f->cap : 16;
    Neocog__Image *image = realloc(in->image, cap * sizeof *image);
    if (image)
        in->image = image;
    Neocog__Box *roi = realloc(in->roi, cap * sizeof *roi);
    if (roi)
        in->roi = roi;
    char **name = realloc(in->name, cap * sizeof *name);
    if (name)
        in->name = name;
    if (!image || !roi || !name)
        return -ENOMEM;
    for (uint32_t i = f->cap; i < cap; i++) {
        neocog__image__init(&in->image[i]);
        neocog__box__init(&in->roi[i]);
        in->name[i] = NULL;
    }
    f->cap = cap;
    return 0;
}

static int form_part(void *arg, const part *pt)
{
    form_ctx *f = arg;
    if (!is_image_part(pt)) {
        char key[32];
        if (!pt->name || pt->name_len >= sizeof key) {
            snprintf(f->why, f->why_len, "multipart: a field without a name or file");
            return f->code = NC_HTTP_BAD, -1;
        }
        memcpy(key, pt->name, pt->name_len);
        key[pt->name_len] = '\0';
        if (nc_http_opt_set(&f->in->opts, key, pt->data, pt->data_len, f->why, f->why_len))
            return f->code = NC_HTTP_BAD, -1;
        return 0;
    }
    int fmt = pt->ctype ? image_format(pt->ctype, pt->ctype_len) : 0;
    if (fmt < 0) {
        snprintf(f->why, f->why_len, "multipart: part %u: content type %.*s is not an image "
                 "type read here (image/png, image/jpeg, image/x-portable-graymap, "
                 "application/octet-stream)", f->in->n, (int)(pt->ctype_len > 60 ? 60
                                                              : pt->ctype_len), pt->ctype);
        return f->code = NC_HTTP_UNSUPPORTED, -1;
    }
    if (room_for_image(f))
        return f->code = NC_HTTP_BAD, snprintf(f->why, f->why_len, "out of memory"), -1;
    uint32_t i = f->in->n++;
    Neocog__Image *im = &f->in->image[i];
    im->format = (Neocog__ImageFormat)fmt;
    im->data.data = (uint8_t *)pt->data;
    im->data.len = pt->data_len;
    if (pt->filename && !(f->in->name[i] = dup_n(pt->filename, pt->filename_len)))
        return f->code = NC_HTTP_BAD, snprintf(f->why, f->why_len, "out of memory"), -1;
    return 0;
}

static int parse_multipart(nc_http_call_in *in, const char *ct, char *body, size_t len,
                           char *why, size_t why_len)
{
    size_t bl;
    const char *bd = header_param(ct, strlen(ct), "boundary", &bl);
    if (!bd) {
        snprintf(why, why_len, "multipart/form-data without a boundary");
        return NC_HTTP_BAD;
    }
    form_ctx f = { .in = in, .why = why, .why_len = why_len, .code = NC_HTTP_BAD };
    why[0] = '\0';
    in->n = 0;
    if (room_for_image(&f))
        return snprintf(why, why_len, "out of memory"), NC_HTTP_BAD;
    if (multipart_walk(body, len, bd, bl, form_part, &f) < 0) {
        if (!why[0])
            snprintf(why, why_len, "malformed multipart/form-data body");
        return f.code;
    }
    /* the options apply to every image, whichever order the fields came in */
    for (uint32_t i = 0; i < in->n; i++)
        image_defaults(in, i);
    return 0;
}

/* ---- JSON -------------------------------------------------------------------------- */

/* A JSON scalar as option text: a string's bytes, a number's text, true 1,
 * false 0; an array of four numbers (an roi) as "a,b,c,d". */
static int json_opt(nc_http_opts *o, const nc_json_doc *d, const char *key, uint32_t v,
                    char *why, size_t why_len)
{
    const nc_json_node *n = &d->node[v];
    char buf[64];
    const char *s = buf;
    size_t len;
    switch (n->type) {
    case NC_JSON_STRING:
    case NC_JSON_NUMBER:
        s = d->text + n->off;
        len = n->len;
        break;
    case NC_JSON_TRUE:
    case NC_JSON_FALSE:
        len = (size_t)snprintf(buf, sizeof buf, "%d", n->type == NC_JSON_TRUE);
        break;
    case NC_JSON_ARRAY: {
        len = 0;
        for (uint32_t k = n->child; k && len < 48; k = d->node[k].next) {
            if (d->node[k].type != NC_JSON_NUMBER || d->node[k].len > 10)
                goto bad;
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%.*s", len ? "," : "",
                                    (int)d->node[k].len, d->text + d->node[k].off);
        }
        break;
    }
    default:
        goto bad;
    }
    return nc_http_opt_set(o, key, s, len, why, why_len);
bad:
    snprintf(why, why_len, "option %s: bad value", key);
    return -EINVAL;
}

/* The option members of JSON object obj (skipping the keys in skip). */
static int json_opts(nc_http_opts *o, const nc_json_doc *d, uint32_t obj,
                     const char *const *skip, char *why, size_t why_len)
{
    if (d->node[obj].type != NC_JSON_OBJECT)
        return snprintf(why, why_len, "expected a JSON object"), -EINVAL;
    for (uint32_t k = d->node[obj].child; k; k = d->node[k].next) {
        char key[32];
        const nc_json_node *kn = &d->node[k];
        if (kn->len >= sizeof key)
            return snprintf(why, why_len, "unknown member in the JSON body"), -EINVAL;
        memcpy(key, d->text + kn->off, kn->len);
        key[kn->len] = '\0';
        int skipped = 0;
        for (int i = 0; skip && skip[i]; i++)
            skipped |= !strcmp(key, skip[i]);
        if (!skipped && json_opt(o, d, key, kn->child, why, why_len))
            return -EINVAL;
    }
    return 0;
}

/* An image's base64 data (node v) decoded in place; 0 or -1. */
static int json_image_data(Neocog__Image *im, const nc_json_doc *d, uint32_t v)
{
    size_t len;
    const char *s = nc_json_doc_string(d, v, &len);
    if (!s)
        return -1;
    long n = nc_base64_decode(s, len, (uint8_t *)s);
    if (n < 0)
        return -1;
    im->data.data = (uint8_t *)s;
    im->data.len = (size_t)n;
    return 0;
}

static int parse_json_v1(nc_http_call_in *in, char *body, size_t len, char *why,
                         size_t why_len)
{
    nc_json_doc d;
    int err = nc_json_doc_parse(&d, body, len, why, why_len);
    if (err)
        goto out;
    err = -EINVAL;
    uint32_t images = nc_json_doc_member(&d, 0, "images");
    if (!images || d.node[images].type != NC_JSON_ARRAY) {
        snprintf(why, why_len, "JSON body: expected {\"images\":[{\"data\":BASE64}, ...]}");
        goto out;
    }
    static const char *const top_skip[] = { "images", NULL };
    if (json_opts(&in->opts, &d, 0, top_skip, why, why_len))
        goto out;
    if (alloc_images(in, d.node[images].count)) {
        snprintf(why, why_len, "out of memory");
        goto out;
    }
    uint32_t i = 0;
    for (uint32_t k = d.node[images].child; k; k = d.node[k].next, i++) {
        nc_http_opts o = in->opts;
        static const char *const img_skip[] = { "data", "file", "format", "width", "height",
                                                NULL };
        if (json_opts(&o, &d, k, img_skip, why, why_len)) {
            char tmp[200];
            snprintf(tmp, sizeof tmp, "%s", why);
            snprintf(why, why_len, "image %u: %s", i, tmp);
            goto out;
        }
        nc_http_opts saved = in->opts;
        in->opts = o;
        image_defaults(in, i);
        in->opts = saved;
        Neocog__Image *im = &in->image[i];
        if (json_image_data(im, &d, nc_json_doc_member(&d, k, "data"))) {
            snprintf(why, why_len, "image %u: \"data\" must be a base64 string", i);
            goto out;
        }
        size_t fl;
        const char *file = nc_json_doc_string(&d, nc_json_doc_member(&d, k, "file"), &fl);
        if (file && !(in->name[i] = dup_n(file, fl))) {
            snprintf(why, why_len, "out of memory");
            goto out;
        }
        size_t tl;
        const char *fmt = nc_json_doc_string(&d, nc_json_doc_member(&d, k, "format"), &tl);
        double w = 0, h = 0;
        if (fmt) {
            static const char *const names[] = { "auto", "pgm", "png", "jpeg", "raw" };
            int f = -1;
            for (int x = 0; x < 5; x++)
                if (tl == strlen(names[x]) && !strncmp(fmt, names[x], tl))
                    f = x;
            if (f < 0) {
                snprintf(why, why_len, "image %u: format is auto, pgm, png, jpeg or raw", i);
                goto out;
            }
            im->format = (Neocog__ImageFormat)f;
        }
        uint32_t wn = nc_json_doc_member(&d, k, "width"), hn = nc_json_doc_member(&d, k, "height");
        if ((wn && (nc_json_doc_number(&d, wn, &w) || w < 0 || w > UINT32_MAX)) ||
            (hn && (nc_json_doc_number(&d, hn, &h) || h < 0 || h > UINT32_MAX))) {
            snprintf(why, why_len, "image %u: width and height are numbers", i);
            goto out;
        }
        im->width = (uint32_t)w;
        im->height = (uint32_t)h;
    }
    err = 0;
out:
    nc_json_doc_free(&d);
    return err ? NC_HTTP_BAD : 0;
}

int nc_http_v1_parse(nc_http_call_in *in, const char *ct, char *body, size_t len, char *why,
                     size_t why_len)
{
    if (!ct) {
        snprintf(why, why_len, "no Content-Type: send image/png, image/jpeg, "
                 "image/x-portable-graymap, application/octet-stream, multipart/form-data or "
                 "application/json");
        return NC_HTTP_UNSUPPORTED;
    }
    size_t ctl = strlen(ct);
    if (media_is(ct, ctl, "multipart/form-data"))
        return parse_multipart(in, ct, body, len, why, why_len);
    if (media_is(ct, ctl, "application/json"))
        return parse_json_v1(in, body, len, why, why_len);
    int fmt = image_format(ct, ctl);
    if (fmt < 0) {
        snprintf(why, why_len, "Content-Type %.80s is not read here: send image/png, "
                 "image/jpeg, image/x-portable-graymap, application/octet-stream, "
                 "multipart/form-data or application/json", ct);
        return NC_HTTP_UNSUPPORTED;
    }
    if (alloc_images(in, 1))
        return snprintf(why, why_len, "out of memory"), NC_HTTP_BAD;
    image_defaults(in, 0);
    in->image[0].format = (Neocog__ImageFormat)fmt;
    in->image[0].data.data = (uint8_t *)body;
    in->image[0].data.len = len;
    return 0;
}

/* ---- /v2 ----------------------------------------------------------------------------- */

/* The numbers of a (nested) array into px, each 0..255; count or -1. */
static long flatten_u8(const nc_json_doc *d, uint32_t v, uint8_t *px, size_t cap, size_t at,
                       int depth)
{
    const nc_json_node *n = &d->node[v];
    if (n->type == NC_JSON_NUMBER) {
        double x;
        if (at >= cap || nc_json_doc_number(d, v, &x) || x < 0 || x > 255 || x != (int)x)
            return -1;
        px[at] = (uint8_t)x;
        return 1;
    }
    if (n->type != NC_JSON_ARRAY || depth > 4)
        return -1;
    long total = 0;
    for (uint32_t k = n->child; k; k = d->node[k].next) {
        long c = flatten_u8(d, k, px, cap, at + (size_t)total, depth + 1);
        if (c < 0)
            return -1;
        total += c;
    }
    return total;
}

static int v2_outputs(nc_http_call_in *in, const nc_json_doc *d, uint32_t outs, char *why,
                      size_t why_len)
{
    static const char *const names[] = { "label", "text", "confidence", "scores" };
    if (d->node[outs].type != NC_JSON_ARRAY)
        return snprintf(why, why_len, "\"outputs\" must be an array"), -1;
    for (uint32_t k = d->node[outs].child; k; k = d->node[k].next) {
        size_t l;
        const char *s = nc_json_doc_string(d, nc_json_doc_member(d, k, "name"), &l);
        int found = 0;
        for (int i = 0; s && i < 4; i++)
            if (l == strlen(names[i]) && !strncmp(s, names[i], l))
                in->v2_outputs |= 1u << i, found = 1;
        if (!found)
            return snprintf(why, why_len, "unknown output (label, text, confidence, scores)"),
                   -1;
    }
    return 0;
}

static int v2_input(nc_http_call_in *in, const nc_json_doc *d, uint32_t inp, size_t body_len,
                    char *why, size_t why_len)
{
    size_t tl;
    const char *dt = nc_json_doc_string(d, nc_json_doc_member(d, inp, "datatype"), &tl);
    uint32_t shape = nc_json_doc_member(d, inp, "shape"),
             data = nc_json_doc_member(d, inp, "data");
    if (!dt || !shape || d->node[shape].type != NC_JSON_ARRAY || !data ||
        d->node[data].type != NC_JSON_ARRAY)
        return snprintf(why, why_len, "an input needs \"datatype\", \"shape\" and \"data\""), -1;
    double dim[4] = { 0 };
    uint32_t nd = 0;
    for (uint32_t k = d->node[shape].child; k; k = d->node[k].next, nd++)
        if (nd >= 4 || nc_json_doc_number(d, k, &dim[nd]) || dim[nd] < 0 ||
            dim[nd] > 1e9 || dim[nd] != (double)(uint64_t)dim[nd])
            return snprintf(why, why_len, "bad \"shape\""), -1;
    if (tl == 5 && !memcmp(dt, "BYTES", 5)) {
        if (nd != 1 || dim[0] != d->node[data].count)
            return snprintf(why, why_len, "a BYTES input has shape [N] and N base64 strings "
                            "in \"data\""), -1;
        if (alloc_images(in, d->node[data].count))
            return snprintf(why, why_len, "out of memory"), -1;
        uint32_t i = 0;
        for (uint32_t k = d->node[data].child; k; k = d->node[k].next, i++) {
            image_defaults(in, i);
            if (json_image_data(&in->image[i], d, k))
                return snprintf(why, why_len, "element %u of the BYTES input is not a base64 "
                                "string", i), -1;
        }
        return 0;
    }
    if (tl == 5 && !memcmp(dt, "UINT8", 5)) {
        if (nd == 2)
            dim[2] = dim[1], dim[1] = dim[0], dim[0] = 1, nd = 3;
        if (nd != 3)
            return snprintf(why, why_len, "a UINT8 input has shape [N,H,W] or [H,W]"), -1;
        const double total = dim[0] * dim[1] * dim[2];
        if (total > (double)body_len / 2 + 1)
            return snprintf(why, why_len, "shape [%.0f,%.0f,%.0f] holds more values than the "
                            "body", dim[0], dim[1], dim[2]), -1;
        in->pixels = malloc(total > 0 ? (size_t)total : 1);
        if (!in->pixels || alloc_images(in, (uint32_t)dim[0]))
            return snprintf(why, why_len, "out of memory"), -1;
        long got = flatten_u8(d, data, in->pixels, (size_t)total, 0, 0);
        if (got != (long)total)
            return snprintf(why, why_len, "UINT8 data: %s (shape [%.0f,%.0f,%.0f])",
                            got < 0 ? "values must be integers 0..255, as many as the shape"
                                    : "as many values as the shape says",
                            dim[0], dim[1], dim[2]), -1;
        const size_t plane = (size_t)dim[1] * (size_t)dim[2];
        for (uint32_t i = 0; i < in->n; i++) {
            image_defaults(in, i);
            Neocog__Image *im = &in->image[i];
            im->format = NEOCOG__IMAGE_FORMAT__FORMAT_RAW_GRAY;
            im->width = (uint32_t)dim[2];
            im->height = (uint32_t)dim[1];
            im->data.data = in->pixels + plane * i;
            im->data.len = plane;
        }
        return 0;
    }
    return snprintf(why, why_len, "datatype %.*s is not read here (BYTES: encoded images, "
                    "UINT8: raw grey pixels)", (int)(tl > 16 ? 16 : tl), dt), -1;
}

int nc_http_v2_parse(nc_http_call_in *in, char *body, size_t len, char *why, size_t why_len)
{
    nc_json_doc d;
    int err = nc_json_doc_parse(&d, body, len, why, why_len);
    if (err)
        goto out;
    err = -EINVAL;
    if (d.node[0].type != NC_JSON_OBJECT) {
        snprintf(why, why_len, "the body must be a JSON object");
        goto out;
    }
    size_t il;
    const char *id = nc_json_doc_string(&d, nc_json_doc_member(&d, 0, "id"), &il);
    if (id && !(in->v2_id = dup_n(id, il)))
        goto out;
    uint32_t params = nc_json_doc_member(&d, 0, "parameters");
    if (params && json_opts(&in->opts, &d, params, NULL, why, why_len))
        goto out;
    uint32_t outs = nc_json_doc_member(&d, 0, "outputs");
    if (outs && v2_outputs(in, &d, outs, why, why_len))
        goto out;
    uint32_t inputs = nc_json_doc_member(&d, 0, "inputs");
    if (!inputs || d.node[inputs].type != NC_JSON_ARRAY || d.node[inputs].count != 1) {
        snprintf(why, why_len, "\"inputs\" must hold one input: BYTES [N] of encoded images or "
                 "UINT8 [N,H,W] of raw grey pixels");
        goto out;
    }
    uint32_t inp = d.node[inputs].child;
    uint32_t ip = nc_json_doc_member(&d, inp, "parameters");
    if (ip && json_opts(&in->opts, &d, ip, (const char *const[]){ "binary_data_size",
                                                                  "content_type", NULL },
                        why, why_len))
        goto out;
    if (v2_input(in, &d, inp, len, why, why_len))
        goto out;
    err = 0;
out:
    nc_json_doc_free(&d);
    return err ? NC_HTTP_BAD : 0;
}

/* ---- packing ------------------------------------------------------------------------- */

void nc_http_request_fill(const nc_http_call_in *in, uint64_t id, Neocog__Image **v,
                          Neocog__Request *rq, Neocog__RecognizeRequest *rr)
{
    *rq = (Neocog__Request)NEOCOG__REQUEST__INIT;
    *rr = (Neocog__RecognizeRequest)NEOCOG__RECOGNIZE_REQUEST__INIT;
    for (uint32_t i = 0; i < in->n; i++)
        v[i] = &in->image[i];
    rq->id = id;
    rq->deadline_us = in->opts.deadline_us;
    rq->priority = in->opts.priority;
    rq->kind_case = NEOCOG__REQUEST__KIND_RECOGNIZE;
    rq->recognize = rr;
    rr->model = in->opts.model < 0 ? NEOCOG__MODEL__MODEL_DEFAULT : (Neocog__Model)in->opts.model;
    rr->top_k = in->opts.top_k;
    rr->min_confidence = in->opts.min_confidence;
    rr->charset = (char *)in->opts.charset;
    rr->images = v;
    rr->n_images = in->n;
}

int nc_http_pack(const nc_http_call_in *in, uint64_t id, uint8_t **ret, size_t *ret_len)
{
    Neocog__Request rq;
    Neocog__RecognizeRequest rr;
    Neocog__Image **v = malloc((in->n ? in->n : 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    nc_http_request_fill(in, id, v, &rq, &rr);
    size_t n = protobuf_c_message_get_packed_size(&rq.base);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        free(v);
        return -ENOMEM;
    }
    protobuf_c_message_pack(&rq.base, buf);
    free(v);
    *ret = buf;
    *ret_len = n;
    return 0;
}

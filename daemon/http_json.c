/* daemon/http_json.c — see http_json.h.  A recursive-descent reader over
 * RFC 8259, strict: no comments, no trailing commas, one value. */
#include "http_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct reader {
    nc_json_doc *d;
    char *p, *end;
    char *why;
    size_t why_len;
    int err;
} reader;

static int fail(reader *r, const char *what)
{
    if (!r->err) {
        snprintf(r->why, r->why_len, "JSON: %s at byte %zu", what, (size_t)(r->p - r->d->text));
        r->err = -EBADMSG;
    }
    return -1;
}

static void skip_space(reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static int new_node(reader *r, uint32_t type)
{
    nc_json_doc *d = r->d;
    if (d->n == d->cap) {
        r->err = -ENOMEM;
        snprintf(r->why, r->why_len, "JSON: too many values");
        return -1;
    }
    d->node[d->n] = (nc_json_node){ .type = type };
    return (int)d->n++;
}

static int hex4(const char *p, unsigned *ret)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return -1;
    }
    *ret = v;
    return 0;
}

static char *put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        *o++ = (char)cp;
    } else if (cp < 0x800) {
        *o++ = (char)(0xc0 | cp >> 6);
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        *o++ = (char)(0xe0 | cp >> 12);
        *o++ = (char)(0x80 | (cp >> 6 & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    } else {
        *o++ = (char)(0xf0 | cp >> 18);
        *o++ = (char)(0x80 | (cp >> 12 & 0x3f));
        *o++ = (char)(0x80 | (cp >> 6 & 0x3f));
        *o++ = (char)(0x80 | (cp & 0x3f));
    }
    return o;
}

/* At the opening quote; unescapes into the same bytes (never longer). */
static int read_string(reader *r)
{
    int k = new_node(r, NC_JSON_STRING);
    if (k < 0)
        return -1;
    char *start = ++r->p, *o = start;
    while (r->p < r->end && *r->p != '"') {
        unsigned char c = (unsigned char)*r->p;
        if (c < 0x20)
            return fail(r, "control character in a string");
        if (c != '\\') {
            *o++ = *r->p++;
            continue;
        }
        if (r->end - r->p < 2)
            return fail(r, "unfinished escape");
        char e = r->p[1];
        r->p += 2;
        switch (e) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '/': *o++ = '/'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'n': *o++ = '\n'; break;
        case 'r': *o++ = '\r'; break;
        case 't': *o++ = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (r->end - r->p < 4 || hex4(r->p, &cp))
                return fail(r, "bad \\u escape");
            r->p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && r->end - r->p >= 6 && r->p[0] == '\\' &&
                r->p[1] == 'u' && !hex4(r->p + 2, &lo) && lo >= 0xdc00 && lo < 0xe000) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                r->p += 6;
            }
            o = put_utf8(o, cp);    /* 6 or 12 escaped bytes give at most 4 */
            break;
        }
        default:
            return fail(r, "unknown escape");
        }
    }
    if (r->p >= r->end)
        return fail(r, "unterminated string");
    r->p++;
    r->d->node[k].off = (uint32_t)(start - r->d->text);
    r->d->node[k].len = (uint32_t)(o - start);
    return k;
}

static int read_number(reader *r)
{
    char *s = r->p;
    if (r->p < r->end && *r->p == '-')
        r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9')
        return fail(r, "expected a value");
    while (r->p < r->end && ((*r->p >= '0' && *r->p <= '9') || *r->p == '.' || *r->p == 'e' ||
                             *r->p == 'E' || *r->p == '+' || *r->p == '-'))
        r->p++;
    int k = new_node(r, NC_JSON_NUMBER);
    if (k < 0)
        return -1;
    r->d->node[k].off = (uint32_t)(s - r->d->text);
    r->d->node[k].len = (uint32_t)(r->p - s);
    return k;
}

static int read_value(reader *r, int depth);

/* Arrays and objects: children chained in order. */
static int read_container(reader *r, int depth, int object)
{
    if (depth >= NC_JSON_MAX_DEPTH)
        return fail(r, "nested too deeply");
    int k = new_node(r, object ? NC_JSON_OBJECT : NC_JSON_ARRAY);
    if (k < 0)
        return -1;
    const char close = object ? '}' : ']';
    r->p++;
    skip_space(r);
    uint32_t last = 0;
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return k;
    }
    for (;;) {
        skip_space(r);
        int item;
        if (object) {
            if (r->p >= r->end || *r->p != '"')
                return fail(r, "expected a key");
            if ((item = read_string(r)) < 0)
                return -1;
            skip_space(r);
            if (r->p >= r->end || *r->p != ':')
                return fail(r, "expected ':'");
            r->p++;
            int v = read_value(r, depth + 1);
            if (v < 0)
                return -1;
            r->d->node[item].child = (uint32_t)v;
        } else if ((item = read_value(r, depth + 1)) < 0) {
            return -1;
        }
        if (last)
            r->d->node[last].next = (uint32_t)item;
        else
            r->d->node[k].child = (uint32_t)item;
        last = (uint32_t)item;
        r->d->node[k].count++;
        skip_space(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == close) {
            r->p++;
            return k;
        }
        return fail(r, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int literal(reader *r, const char *word, uint32_t type)
{
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n))
        return fail(r, "expected a value");
    r->p += n;
    return new_node(r, type);
}

static int read_value(reader *r, int depth)
{
    skip_space(r);
    if (r->p >= r->end)
        return fail(r, "expected a value");
    switch (*r->p) {
    case '{': return read_container(r, depth, 1);
    case '[': return read_container(r, depth, 0);
    case '"': return read_string(r);
    case 't': return literal(r, "true", NC_JSON_TRUE);
    case 'f': return literal(r, "false", NC_JSON_FALSE);
    case 'n': return literal(r, "null", NC_JSON_NULL);
    default: return read_number(r);
    }
}

int nc_json_doc_parse(nc_json_doc *d, char *text, size_t len, char *why, size_t why_len)
{
    memset(d, 0, sizeof *d);
    d->text = text;
    if (len > UINT32_MAX / 2)
        return snprintf(why, why_len, "JSON: too long"), -EBADMSG;
    d->cap = (uint32_t)(len / 2 + 8);
    d->node = malloc((size_t)d->cap * sizeof *d->node);
    if (!d->node)
        return snprintf(why, why_len, "out of memory"), -ENOMEM;
    reader r = { .d = d, .p = text, .end = text + len, .why = why, .why_len = why_len };
    if (read_value(&r, 0) < 0)
        return r.err;
    skip_space(&r);
    if (r.p != r.end) {
        fail(&r, "text after the value");
        return r.err;
    }
    return 0;
}

void nc_json_doc_free(nc_json_doc *d)
{
    free(d->node);
    d->node = NULL;
    d->n = d->cap = 0;
}

uint32_t nc_json_doc_member(const nc_json_doc *d, uint32_t obj, const char *key)
{
    if (obj >= d->n || d->node[obj].type != NC_JSON_OBJECT)
        return 0;
    size_t kl = strlen(key);
    for (uint32_t k = d->node[obj].child; k; k = d->node[k].next)
        if (d->node[k].len == kl && !memcmp(d->text + d->node[k].off, key, kl))
            return d->node[k].child;
    return 0;
}

const char *nc_json_doc_string(const nc_json_doc *d, uint32_t v, size_t *len)
{
    if (v >= d->n || d->node[v].type != NC_JSON_STRING)
        return NULL;
    *len = d->node[v].len;
    return d->text + d->node[v].off;
}

int nc_json_doc_number(const nc_json_doc *d, uint32_t v, double *ret)
{
    if (v >= d->n || d->node[v].type != NC_JSON_NUMBER || d->node[v].len > 63)
        return -EINVAL;
    char buf[64];
    memcpy(buf, d->text + d->node[v].off, d->node[v].len);
    buf[d->node[v].len] = '\0';
    char *e;
    *ret = strtod(buf, &e);
    return *e ? -EINVAL : 0;
}

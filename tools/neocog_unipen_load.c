/* tools/neocog_unipen_load.c — reads the UNIPEN JSON lines (one character a
 * line, the format of shared/data/unipen/README.md) into nc_unipen.
 *
 * Layer: tools.  A reader for exactly that format, not a general JSON
 * parser: one object a line whose values are strings, or nested arrays of
 * numbers for "strokes"; other values are skipped.  Tablet y points up; it
 * is negated here so everything after works with y down. */
#include "neocog_unipen.h"

#include "dataset.h"    /* nc_gunzip */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 1024

/* ---- growable arrays ---------------------------------------------------- */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 1024;
    while (n < need)
        n *= 2;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

/* ---- names to indices (open addressing; FNV-1a) ------------------------- */

typedef struct intern {
    char ***names;          /* the nc_unipen array the names go to */
    uint32_t *count;
    size_t names_cap;
    uint32_t *slots;        /* index + 1, 0 empty */
    size_t n_slots;         /* power of two */
} intern;

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static int intern_get(intern *t, const char *name, uint32_t *ret)
{
    if ((size_t)*t->count * 2 >= t->n_slots) {
        size_t n = t->n_slots ? t->n_slots * 2 : 1024;
        uint32_t *slots = calloc(n, sizeof *slots);
        if (!slots)
            return -ENOMEM;
        for (uint32_t i = 0; i < *t->count; i++) {
            size_t j = fnv1a((*t->names)[i]) & (n - 1);
            while (slots[j])
                j = (j + 1) & (n - 1);
            slots[j] = i + 1;
        }
        free(t->slots);
        t->slots = slots;
        t->n_slots = n;
    }
    size_t j = fnv1a(name) & (t->n_slots - 1);
    while (t->slots[j]) {
        if (strcmp((*t->names)[t->slots[j] - 1], name) == 0) {
            *ret = t->slots[j] - 1;
            return 0;
        }
        j = (j + 1) & (t->n_slots - 1);
    }
    if (grow((void **)t->names, &t->names_cap, (size_t)*t->count + 1, sizeof(char *)))
        return -ENOMEM;
    size_t len = strlen(name) + 1;
    char *copy = malloc(len);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, name, len);
    (*t->names)[*t->count] = copy;
    t->slots[j] = ++*t->count;
    *ret = *t->count - 1;
    return 0;
}

/* ---- one line ------------------------------------------------------------- */

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
        c->p++;
}

static int expect(cursor *c, char ch)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p != ch)
        return -EBADMSG;
    c->p++;
    return 0;
}

/* A JSON string into out (NUL-terminated, at most NAME_MAX_LEN - 1 bytes);
 * escapes \" \\ \/ \b \f \n \r \t and \u00XX (the data is ASCII). */
static int parse_string(cursor *c, char *out)
{
    if (expect(c, '"'))
        return -EBADMSG;
    size_t n = 0;
    while (c->p < c->end && *c->p != '"') {
        char ch = *c->p++;
        if (ch == '\\') {
            if (c->p >= c->end)
                return -EBADMSG;
            char e = *c->p++;
            switch (e) {
            case '"': case '\\': case '/': ch = e; break;
            case 'b': ch = '\b'; break;
            case 'f': ch = '\f'; break;
            case 'n': ch = '\n'; break;
            case 'r': ch = '\r'; break;
            case 't': ch = '\t'; break;
            case 'u': {
                if (c->end - c->p < 4)
                    return -EBADMSG;
                char hex[5] = { c->p[0], c->p[1], c->p[2], c->p[3], 0 };
                char *stop;
                long v = strtol(hex, &stop, 16);
                if (*stop || v <= 0 || v > 127)
                    return -EBADMSG;
                ch = (char)v;
                c->p += 4;
                break;
            }
            default:
                return -EBADMSG;
            }
        }
        if (n + 1 >= NAME_MAX_LEN)
            return -EBADMSG;
        out[n++] = ch;
    }
    if (c->p >= c->end)
        return -EBADMSG;
    c->p++;
    out[n] = 0;
    return 0;
}

/* Skip any value other than strokes (strings, numbers, literals, arrays,
 * objects: by bracket depth, strings respected). */
static int skip_value(cursor *c)
{
    skip_ws(c);
    int depth = 0;
    while (c->p < c->end) {
        char ch = *c->p;
        if (ch == '"') {
            char tmp[NAME_MAX_LEN];
            if (parse_string(c, tmp))
                return -EBADMSG;
            if (depth == 0)
                return 0;
            continue;
        }
        if (ch == '[' || ch == '{')
            depth++;
        else if (ch == ']' || ch == '}') {
            if (depth == 0)
                return 0;
            if (--depth == 0) {
                c->p++;
                return 0;
            }
        } else if (ch == ',' && depth == 0)
            return 0;
        c->p++;
    }
    return -EBADMSG;
}

typedef struct loader {
    nc_unipen *u;
    size_t samples_cap, strokes_cap, points_cap;
    intern writers, files;
} loader;

static int parse_number(cursor *c, double *ret)
{
    skip_ws(c);
    char *stop;
    double v = strtod(c->p, &stop);
    if (stop == c->p || stop > c->end || !isfinite(v))
        return -EBADMSG;
    c->p = stop;
    *ret = v;
    return 0;
}

/* [[[x,y],...],...]: appends strokes and points to the set; *ret_n the
 * strokes that had points (empty strokes are dropped). */
static int parse_strokes(loader *L, cursor *c, uint32_t *ret_n)
{
    nc_unipen *u = L->u;
    uint32_t n = 0;
    if (expect(c, '['))
        return -EBADMSG;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        *ret_n = 0;
        return 0;
    }
    for (;;) {
        if (expect(c, '['))
            return -EBADMSG;
        uint32_t first = u->n_points;
        skip_ws(c);
        if (c->p < c->end && *c->p == ']')
            c->p++;
        else
            for (;;) {
                double x, y;
                if (expect(c, '[') || parse_number(c, &x) || expect(c, ',') ||
                    parse_number(c, &y) || expect(c, ']'))
                    return -EBADMSG;
                if (grow((void **)&u->xy, &L->points_cap, 2 * ((size_t)u->n_points + 1),
                         sizeof(float)))
                    return -ENOMEM;
                u->xy[2 * u->n_points] = (float)x;
                u->xy[2 * u->n_points + 1] = (float)-y;     /* y down */
                u->n_points++;
                skip_ws(c);
                if (c->p < c->end && *c->p == ',') {
                    c->p++;
                    continue;
                }
                if (expect(c, ']'))
                    return -EBADMSG;
                break;
            }
        if (u->n_points > first) {
            if (grow((void **)&u->stroke_start, &L->strokes_cap, (size_t)u->n_strokes + 2,
                     sizeof(uint32_t)))
                return -ENOMEM;
            u->stroke_start[u->n_strokes++] = first;
            u->stroke_start[u->n_strokes] = u->n_points;
            n++;
        }
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (expect(c, ']'))
            return -EBADMSG;
        break;
    }
    *ret_n = n;
    return 0;
}

static int parse_line(loader *L, const char *line, const char *end)
{
    nc_unipen *u = L->u;
    cursor c = { line, end };
    char key[NAME_MAX_LEN], contrib[NAME_MAX_LEN] = "", writer[NAME_MAX_LEN] = "",
         file[NAME_MAX_LEN] = "", label[NAME_MAX_LEN] = "";
    uint32_t stroke0 = u->n_strokes, point0 = u->n_points, n_strokes = 0;
    int have_strokes = 0;
    if (expect(&c, '{'))
        return -EBADMSG;
    for (;;) {
        if (parse_string(&c, key) || expect(&c, ':'))
            return -EBADMSG;
        int err;
        skip_ws(&c);
        if (strcmp(key, "strokes") == 0) {
            err = parse_strokes(L, &c, &n_strokes);
            have_strokes = 1;
        } else if (c.p < c.end && *c.p == '"') {
            char *dst = !strcmp(key, "contrib") ? contrib : !strcmp(key, "writer") ? writer
                      : !strcmp(key, "file") ? file : !strcmp(key, "label") ? label : key;
            err = parse_string(&c, dst);
        } else
            err = skip_value(&c);
        if (err)
            return err;
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',') {
            c.p++;
            continue;
        }
        if (expect(&c, '}'))
            return -EBADMSG;
        break;
    }
    int usable = have_strokes && n_strokes > 0 && strlen(label) == 1 && label[0] >= '!' &&
                 label[0] <= '~';
    if (!usable) {
        u->n_strokes = stroke0;     /* forget its points */
        u->n_points = point0;
        u->skipped++;
        return 0;
    }
    if (grow((void **)&u->samples, &L->samples_cap, (size_t)u->n_samples + 1,
             sizeof(nc_unipen_sample)))
        return -ENOMEM;
    char name[2 * NAME_MAX_LEN + 2];
    nc_unipen_sample *s = &u->samples[u->n_samples];
    memset(s, 0, sizeof *s);
    s->cls = (uint8_t)(label[0] - '!');
    snprintf(name, sizeof name, "%s/%s", contrib, writer);
    uint32_t files_before = u->n_files;
    if (intern_get(&L->writers, name, &s->writer) || intern_get(&L->files, file, &s->file))
        return -ENOMEM;
    if (u->n_files > files_before) {
        uint32_t *fw = realloc(u->file_writer, sizeof(uint32_t) * u->n_files);
        if (!fw)
            return -ENOMEM;
        u->file_writer = fw;
        fw[s->file] = s->writer;
    }
    s->first_stroke = stroke0;
    s->n_strokes = n_strokes;
    const float *p = u->xy + 2 * (size_t)point0;
    float b[4] = { p[0], p[1], p[0], p[1] };
    for (uint32_t i = 1; i < u->n_points - point0; i++) {
        b[0] = fminf(b[0], p[2 * i]);
        b[1] = fminf(b[1], p[2 * i + 1]);
        b[2] = fmaxf(b[2], p[2 * i]);
        b[3] = fmaxf(b[3], p[2 * i + 1]);
    }
    memcpy(s->box, b, sizeof b);
    u->n_samples++;
    return 0;
}

int nc_unipen_parse(const char *text, size_t len, nc_unipen *ret, size_t *ret_line)
{
    if (!text || !ret)
        return -EINVAL;
    nc_unipen u;
    memset(&u, 0, sizeof u);
    loader L = { .u = &u };
    L.writers = (intern){ &u.writer_names, &u.n_writers, 0, NULL, 0 };
    L.files = (intern){ &u.file_names, &u.n_files, 0, NULL, 0 };
    int err = 0;
    size_t line_no = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line_no++;
        cursor c = { p, le };
        skip_ws(&c);
        if (c.p < le)
            err = parse_line(&L, p, le);
        if (err)
            break;
        p = nl ? nl + 1 : end;
    }
    free(L.writers.slots);
    free(L.files.slots);
    if (!err && (u.n_samples == 0 || !u.stroke_start))
        err = -EBADMSG;
    if (err) {
        if (ret_line)
            *ret_line = line_no;
        nc_unipen_fini(&u);
        return err;
    }
    *ret = u;
    return 0;
}

void nc_unipen_fini(nc_unipen *u)
{
    if (!u)
        return;
    for (uint32_t i = 0; i < u->n_writers; i++)
        free(u->writer_names[i]);
    for (uint32_t i = 0; i < u->n_files; i++)
        free(u->file_names[i]);
    free(u->writer_names);
    free(u->file_names);
    free(u->file_writer);
    free(u->samples);
    free(u->stroke_start);
    free(u->xy);
    memset(u, 0, sizeof *u);
}

int nc_unipen_parse_gz(const uint8_t *gz, size_t len, nc_unipen *ret, size_t *ret_line)
{
    uint8_t *text = NULL;
    size_t text_len = 0;
    *ret_line = 0;
    int err = nc_gunzip(gz, len, NC_GUNZIP_MAX_OUT, &text, &text_len);
    if (err)
        return err;
    err = nc_unipen_parse((const char *)text, text_len, ret, ret_line);
    free(text);
    if (err)
        return err;
    if ((err = nc_unipen_reference(ret)))
        nc_unipen_fini(ret);
    return err;
}

int nc_unipen_is_val_writer(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = name; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    return h % 1000u < NC_UNIPEN_VAL_PER_MILLE;
}

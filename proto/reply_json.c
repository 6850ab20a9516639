/* proto/reply_json.c — see reply_json.h. */
#include "reply_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

/* A segmented image holds at most 64 characters (the daemon's limit). */
#define MAX_LINES 64

/* Output goes through a buffer of the caller's stack and reaches the FILE
 * in few large writes: a reply of many images is thousands of small
 * pieces, and a stdio call for each (its lock, its byte-by-byte copy of
 * short strings) cost more than the formatting itself. */
typedef struct jbuf {
    FILE *to;
    size_t n;
    char b[4096];
} jbuf;

/* Not "= { .to = to }", which would clear the 4 KiB on every call. */
static void jb_init(jbuf *j, FILE *to)
{
    j->to = to;
    j->n = 0;
}

static void jb_flush(jbuf *j)
{
    if (j->n)
        fwrite(j->b, 1, j->n, j->to);
    j->n = 0;
}

/* Where the next need (<= sizeof b) bytes go. */
static char *jb_room(jbuf *j, size_t need)
{
    if (sizeof j->b - j->n < need)
        jb_flush(j);
    return j->b + j->n;
}

static void jb_write(jbuf *j, const void *s, size_t n)
{
    if (n > sizeof j->b / 2) {
        jb_flush(j);
        fwrite(s, 1, n, j->to);
        return;
    }
    memcpy(jb_room(j, n), s, n);
    j->n += n;
}

static void jb_puts(jbuf *j, const char *s)
{
    jb_write(j, s, strlen(s));
}

static void jb_putc(jbuf *j, char c)
{
    *jb_room(j, 1) = c;
    j->n++;
}

/* Decimal digits of u, a '-' first when neg. */
static void jb_uint(jbuf *j, uint64_t u, int neg)
{
    char d[24];
    size_t n = sizeof d;
    do
        d[--n] = (char)('0' + u % 10);
    while (u /= 10);
    if (neg)
        d[--n] = '-';
    jb_write(j, d + n, sizeof d - n);
}

static void jb_int(jbuf *j, int64_t v)
{
    jb_uint(j, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

static void jb_printf(jbuf *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jb_printf(jbuf *j, const char *fmt, ...)
{
    va_list ap;
    char *p = jb_room(j, 512);
    size_t room = sizeof j->b - j->n;
    va_start(ap, fmt);
    int k = vsnprintf(p, room, fmt, ap);
    va_end(ap);
    if (k >= 0 && (size_t)k < room) {
        j->n += (size_t)k;
        return;
    }
    jb_flush(j);        /* longer than the room left: straight to the FILE */
    va_start(ap, fmt);
    vfprintf(j->to, fmt, ap);
    va_end(ap);
}

static void jb_string(jbuf *to, const char *s)
{
    if (!s) {
        jb_puts(to, "null");
        return;
    }
    jb_putc(to, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        size_t plain = 0;     /* a run that needs no escape, in one write */
        while (p[plain] >= 0x20 && p[plain] != '"' && p[plain] != '\\' && p[plain] != 0x7f)
            plain++;
        if (plain) {
            jb_write(to, p, plain);
            p += plain - 1;
            continue;
        }
        switch (*p) {
        case '"': jb_puts(to, "\\\""); break;
        case '\\': jb_puts(to, "\\\\"); break;
        case '\b': jb_puts(to, "\\b"); break;
        case '\f': jb_puts(to, "\\f"); break;
        case '\n': jb_puts(to, "\\n"); break;
        case '\r': jb_puts(to, "\\r"); break;
        case '\t': jb_puts(to, "\\t"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                jb_printf(to, "\\u%04x", *p);
            else
                jb_putc(to, (char)*p);
        }
    }
    jb_putc(to, '"');
}

/* The nine significant digits printf's %.9g gives v (finite, not 0) and
 * its decimal exponent, from double arithmetic: *m in [1e8, 1e9).  glibc
 * finds them with multi-precision arithmetic, some hundreds of ns a number,
 * and an HTTP reply of 64 digits holds some 800 of them.  v scaled by a
 * power of ten is off the true value by at most three roundings, under
 * 4e-7 at 1e9, so the rounding to an integer is the exact one unless the
 * fraction lies within 1e-6 of one half: then -1 (and past 1e+-44), and
 * the caller asks printf. */
static int nine_digits(double v, uint32_t *m, int *exp10)
{
    static const double p10[23] = {
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    };
    const double a = fabs(v);
    int e2;
    frexp(a, &e2);      /* a in [2^(e2-1), 2^e2): log10 to within one, cheaper */
    int e = (int)floor((e2 - 1) * 0.30102999566398120);
    for (int tries = 0; tries < 3; tries++) {
        const int k = 8 - e;        /* a * 10^k has 9 digits before the point */
        if (k > 44 || k < -44)
            return -1;
        double s = a;
        if (k > 22)
            s = s * 1e22 * p10[k - 22];
        else if (k >= 0)
            s *= p10[k];
        else if (k >= -22)
            s /= p10[-k];
        else
            s = s / 1e22 / p10[-k - 22];
        if (s < 1e8) {
            e--;
            continue;
        }
        if (s >= 1e9) {
            e++;
            continue;
        }
        double whole = floor(s), frac = s - whole;
        if (fabs(frac - 0.5) < 1e-6)
            return -1;
        uint32_t r = (uint32_t)whole + (frac > 0.5);
        if (r == 1000000000u) {
            r = 100000000u;
            e++;
        }
        *m = r;
        *exp10 = e;
        return 0;
    }
    return -1;
}

/* %.9g of v into out (32 bytes): printf's rules for the style (exponent
 * under -4 or from 9 on: 1.5e-05), the trailing zeros dropped; 0 when only
 * printf can tell. */
static size_t format_g9(double v, char *out)
{
    uint32_t m;
    int e;
    if (nine_digits(v, &m, &e))
        return 0;
    char d[9];
    for (int i = 8; i >= 0; i--, m /= 10)
        d[i] = (char)('0' + m % 10);
    int nd = 9;
    while (nd > 1 && d[nd - 1] == '0')
        nd--;
    size_t n = 0;
    if (v < 0)
        out[n++] = '-';
    if (e < -4 || e >= 9) {
        out[n++] = d[0];
        if (nd > 1) {
            out[n++] = '.';
            memcpy(out + n, d + 1, (size_t)nd - 1);
            n += (size_t)nd - 1;
        }
        out[n++] = 'e';
        out[n++] = e < 0 ? '-' : '+';
        int x = e < 0 ? -e : e;
        if (x >= 100)
            out[n++] = (char)('0' + x / 100);
        out[n++] = (char)('0' + x / 10 % 10);
        out[n++] = (char)('0' + x % 10);
    } else if (e >= 0) {
        memcpy(out + n, d, (size_t)e + 1);
        n += (size_t)e + 1;
        if (nd > e + 1) {
            out[n++] = '.';
            memcpy(out + n, d + e + 1, (size_t)(nd - e - 1));
            n += (size_t)(nd - e - 1);
        }
    } else {
        out[n++] = '0';
        out[n++] = '.';
        for (int z = 0; z < -e - 1; z++)
            out[n++] = '0';
        memcpy(out + n, d, (size_t)nd);
        n += (size_t)nd;
    }
    return n;
}

static void jb_number(jbuf *to, double v)
{
    size_t n;
    if (!isfinite(v)) {
        jb_write(to, "null", 4);
    } else if (v == floor(v) && fabs(v) < 1e15) {
        jb_uint(to, (uint64_t)fabs(v), signbit(v) != 0);    /* as %.0f: a softmax's
                                                               scores are often 0 or 1 */
    } else if ((n = format_g9(v, jb_room(to, 32)))) {
        to->n += n;     /* as %.9g, which round-trips a float exactly */
    } else {
        jb_printf(to, "%.9g", v);
    }
}

void nc_json_string(FILE *to, const char *s)
{
    jbuf j;
    jb_init(&j, to);
    jb_string(&j, s);
    jb_flush(&j);
}

void nc_json_number(FILE *to, double v)
{
    jbuf j;
    jb_init(&j, to);
    jb_number(&j, v);
    jb_flush(&j);
}

const char *nc_reject_reason_text(Neocog__RejectReason r)
{
    switch (r) {
    case NEOCOG__REJECT_REASON__REJECT_NONE: return "";
    case NEOCOG__REJECT_REASON__REJECT_NO_INK: return "no ink";
    case NEOCOG__REJECT_REASON__REJECT_BELOW_THRESHOLD: return "below threshold";
    case NEOCOG__REJECT_REASON__REJECT_AMBIGUOUS_SEGMENTATION: return "ambiguous segmentation";
    case NEOCOG__REJECT_REASON__REJECT_NO_RESPONSE: return "no response";
    default: break;
    }
    return "unknown";
}

size_t nc_result_lines(const Neocog__Result *res, nc_result_line *lines, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; res && i < res->n_digits; i++) {
        const Neocog__Digit *d = res->digits[i];
        if (i == 0 || d->line != res->digits[i - 1]->line) {
            if (n < cap)
                lines[n] = (nc_result_line){ .first = i, .x0 = UINT32_MAX, .y0 = UINT32_MAX,
                                             .confidence = 1.0f };
            n++;
        }
        if (n > cap)
            continue;
        nc_result_line *l = &lines[n - 1];
        l->count++;
        const Neocog__Box *b = d->box;
        if (b) {
            if (b->x < l->x0) l->x0 = b->x;
            if (b->y < l->y0) l->y0 = b->y;
            if (b->x + b->width > l->x1) l->x1 = b->x + b->width;
            if (b->y + b->height > l->y1) l->y1 = b->y + b->height;
        }
        if (d->confidence < l->confidence)
            l->confidence = d->confidence;
        if (d->reject && !l->reject) {
            l->reject = 1;
            l->reject_reason = d->reject_reason;
        }
    }
    for (size_t i = 0; i < n && i < cap; i++)
        if (lines[i].x0 > lines[i].x1 || lines[i].y0 > lines[i].y1)
            lines[i].x0 = lines[i].x1 = lines[i].y0 = lines[i].y1 = 0;   /* no boxes */
    return n;
}

void nc_result_line_text(const Neocog__Result *res, const nc_result_line *line, char *dst,
                         size_t cap)
{
    size_t used = 0;
    if (!cap)
        return;
    for (size_t i = line->first; i < line->first + line->count && i < res->n_digits; i++) {
        const char *t = res->digits[i]->text && *res->digits[i]->text ? res->digits[i]->text
                                                                       : "?";
        size_t l = strlen(t);
        const int space = i > line->first && res->digits[i]->space_before;
        if (used + space + l >= cap)
            break;
        if (space)
            dst[used++] = ' ';
        memcpy(dst + used, t, l);
        used += l;
    }
    dst[used] = '\0';
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* A rejected answer's reason in words (null when not rejected). */
static const char *verdict_text(int reject, Neocog__RejectReason r)
{
    if (!reject)
        return NULL;
    return r == NEOCOG__REJECT_REASON__REJECT_NONE ? "rejected" : nc_reject_reason_text(r);
}

static void json_top(jbuf *to, Neocog__Candidate *const *top, size_t n)
{
    jb_puts(to, "\"top\":[");
    for (size_t i = 0; i < n; i++) {
        jb_puts(to, i ? ",{\"label\":" : "{\"label\":");
        jb_int(to, top[i]->label);
        jb_puts(to, ",\"text\":");
        jb_string(to, or_empty(top[i]->text));
        jb_puts(to, ",\"score\":");
        jb_number(to, top[i]->score);
        jb_putc(to, '}');
    }
    jb_putc(to, ']');
}

/* ,"reject":B,"reject_reason":R,"threshold":T (R null when not rejected) */
static void json_verdict(jbuf *to, int reject, Neocog__RejectReason reason, float threshold)
{
    jb_puts(to, reject ? ",\"reject\":true,\"reject_reason\":"
                       : ",\"reject\":false,\"reject_reason\":");
    jb_string(to, verdict_text(reject, reason));
    jb_puts(to, ",\"threshold\":");
    jb_number(to, threshold);
}

static void json_digits(jbuf *to, const Neocog__Result *res)
{
    jb_puts(to, ",\"digits\":[");
    for (size_t i = 0; i < res->n_digits; i++) {
        const Neocog__Digit *d = res->digits[i];
        const Neocog__Box *b = d->box;
        jb_printf(to, "%s{\"x\":%u,\"y\":%u,\"width\":%u,\"height\":%u,\"label\":%d,\"text\":",
                  i ? "," : "", b ? b->x : 0, b ? b->y : 0, b ? b->width : 0,
                  b ? b->height : 0, d->label);
        jb_string(to, or_empty(d->text));
        jb_puts(to, ",\"confidence\":");
        jb_number(to, d->confidence);
        json_verdict(to, d->reject, d->reject_reason, d->threshold);
        jb_printf(to, ",\"line\":%u", d->line);
        if (d->space_before)
            jb_puts(to, ",\"space_before\":true");
        if (d->n_top) {
            jb_putc(to, ',');
            json_top(to, d->top, d->n_top);
        }
        jb_putc(to, '}');
    }
    jb_putc(to, ']');
    /* the text lines, top to bottom, with their boxes */
    nc_result_line lines[MAX_LINES];
    size_t n = nc_result_lines(res, lines, MAX_LINES);
    jb_puts(to, ",\"lines\":[");
    for (size_t l = 0; l < n && l < MAX_LINES; l++) {
        const nc_result_line *ln = &lines[l];
        char text[MAX_LINES * 16 + 1];
        nc_result_line_text(res, ln, text, sizeof text);
        jb_printf(to, "%s{\"line\":%zu,\"x\":%u,\"y\":%u,\"width\":%u,\"height\":%u,\"text\":",
                  l ? "," : "", l, ln->x0, ln->y0, ln->x1 - ln->x0, ln->y1 - ln->y0);
        jb_string(to, text);
        jb_puts(to, ",\"confidence\":");
        jb_number(to, ln->confidence);
        jb_printf(to, ",\"reject\":%s,\"first_digit\":%zu,\"digits\":%zu}",
                  ln->reject ? "true" : "false", ln->first, ln->count);
    }
    jb_putc(to, ']');
}

static void json_result_members(jbuf *to, const Neocog__Reply *rp, const Neocog__Result *res)
{
    jb_puts(to, "\"model\":");
    jb_string(to, or_empty(rp->kind_case == NEOCOG__REPLY__KIND_RECOGNIZE
                           ? rp->recognize->model : NULL));
    jb_puts(to, ",\"label\":");
    jb_int(to, res->label);
    jb_puts(to, ",\"text\":");
    jb_string(to, or_empty(res->text));
    jb_puts(to, ",\"confidence\":");
    jb_number(to, res->confidence);
    json_verdict(to, res->reject, res->reject_reason, res->threshold);
    jb_putc(to, ',');
    json_top(to, res->top, res->n_top);
    if (res->n_scores) {
        jb_puts(to, ",\"scores\":[");
        for (size_t i = 0; i < res->n_scores; i++) {
            if (i)
                jb_putc(to, ',');
            jb_number(to, res->scores[i]);
        }
        jb_putc(to, ']');
    }
    if (res->n_digits)
        json_digits(to, res);
    else if (res->text && !*res->text)
        jb_puts(to, ",\"digits\":[],\"lines\":[]");   /* segmented, nothing found */
    if (rp->timing) {
        const Neocog__Timing *t = rp->timing;
        jb_puts(to, ",\"timing_us\":{\"queue\":");
        jb_uint(to, t->queue_us, 0);
        jb_puts(to, ",\"compute\":");
        jb_uint(to, t->compute_us, 0);
        jb_puts(to, ",\"prepare\":");
        jb_uint(to, t->prepare_us, 0);
        jb_puts(to, ",\"forward\":");
        jb_uint(to, t->forward_us, 0);
        jb_puts(to, ",\"total\":");
        jb_uint(to, t->total_us, 0);
        jb_putc(to, '}');
    }
}

void nc_json_result_members(FILE *to, const Neocog__Reply *rp, const Neocog__Result *res)
{
    jbuf j;
    jb_init(&j, to);
    json_result_members(&j, rp, res);
    jb_flush(&j);
}

void nc_json_error_members(FILE *f, const char *code, const char *message)
{
    jbuf j, *to = &j;
    jb_init(to, f);
    jb_puts(to, "\"error\":{\"code\":");
    jb_string(to, code);
    jb_puts(to, ",\"message\":");
    jb_string(to, message);
    jb_putc(to, '}');
    jb_flush(to);
}

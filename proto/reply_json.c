/* proto/reply_json.c — see reply_json.h. */
#include "reply_json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* A segmented image holds at most 64 characters (the daemon's limit). */
#define MAX_LINES 64

void nc_json_string(FILE *to, const char *s)
{
    if (!s) {
        fputs("null", to);
        return;
    }
    fputc('"', to);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        size_t plain = 0;     /* a run that needs no escape, in one write */
        while (p[plain] >= 0x20 && p[plain] != '"' && p[plain] != '\\' && p[plain] != 0x7f)
            plain++;
        if (plain) {
            fwrite(p, 1, plain, to);
            p += plain - 1;
            continue;
        }
        switch (*p) {
        case '"': fputs("\\\"", to); break;
        case '\\': fputs("\\\\", to); break;
        case '\b': fputs("\\b", to); break;
        case '\f': fputs("\\f", to); break;
        case '\n': fputs("\\n", to); break;
        case '\r': fputs("\\r", to); break;
        case '\t': fputs("\\t", to); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(to, "\\u%04x", *p);
            else
                fputc(*p, to);
        }
    }
    fputc('"', to);
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
    int e = (int)floor(log10(a));
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

void nc_json_number(FILE *to, double v)
{
    char buf[32];
    size_t n;
    if (!isfinite(v))
        fputs("null", to);
    else if (v == floor(v) && fabs(v) < 1e15) {
        /* as %.0f: a softmax's scores are often exactly 0 or 1 */
        uint64_t u = (uint64_t)fabs(v);
        n = sizeof buf;
        do
            buf[--n] = (char)('0' + u % 10);
        while (u /= 10);
        if (signbit(v))
            buf[--n] = '-';
        fwrite(buf + n, 1, sizeof buf - n, to);
    } else if ((n = format_g9(v, buf)))
        fwrite(buf, 1, n, to);      /* as %.9g, which round-trips a float exactly */
    else
        fprintf(to, "%.9g", v);
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

static void json_top(FILE *to, Neocog__Candidate *const *top, size_t n)
{
    fputs("\"top\":[", to);
    for (size_t i = 0; i < n; i++) {
        fprintf(to, "%s{\"label\":%d,\"text\":", i ? "," : "", top[i]->label);
        nc_json_string(to, or_empty(top[i]->text));
        fputs(",\"score\":", to);
        nc_json_number(to, top[i]->score);
        fputc('}', to);
    }
    fputc(']', to);
}

/* ,"reject":B,"reject_reason":R,"threshold":T (R null when not rejected) */
static void json_verdict(FILE *to, int reject, Neocog__RejectReason reason, float threshold)
{
    fprintf(to, ",\"reject\":%s,\"reject_reason\":", reject ? "true" : "false");
    nc_json_string(to, verdict_text(reject, reason));
    fputs(",\"threshold\":", to);
    nc_json_number(to, threshold);
}

static void json_digits(FILE *to, const Neocog__Result *res)
{
    fputs(",\"digits\":[", to);
    for (size_t i = 0; i < res->n_digits; i++) {
        const Neocog__Digit *d = res->digits[i];
        const Neocog__Box *b = d->box;
        fprintf(to, "%s{\"x\":%u,\"y\":%u,\"width\":%u,\"height\":%u,\"label\":%d,\"text\":",
                i ? "," : "", b ? b->x : 0, b ? b->y : 0, b ? b->width : 0,
                b ? b->height : 0, d->label);
        nc_json_string(to, or_empty(d->text));
        fputs(",\"confidence\":", to);
        nc_json_number(to, d->confidence);
        json_verdict(to, d->reject, d->reject_reason, d->threshold);
        fprintf(to, ",\"line\":%u", d->line);
        if (d->space_before)
            fputs(",\"space_before\":true", to);
        if (d->n_top) {
            fputc(',', to);
            json_top(to, d->top, d->n_top);
        }
        fputc('}', to);
    }
    fputc(']', to);
    /* the text lines, top to bottom, with their boxes */
    nc_result_line lines[MAX_LINES];
    size_t n = nc_result_lines(res, lines, MAX_LINES);
    fputs(",\"lines\":[", to);
    for (size_t l = 0; l < n && l < MAX_LINES; l++) {
        const nc_result_line *ln = &lines[l];
        char text[MAX_LINES * 16 + 1];
        nc_result_line_text(res, ln, text, sizeof text);
        fprintf(to, "%s{\"line\":%zu,\"x\":%u,\"y\":%u,\"width\":%u,\"height\":%u,\"text\":",
                l ? "," : "", l, ln->x0, ln->y0, ln->x1 - ln->x0, ln->y1 - ln->y0);
        nc_json_string(to, text);
        fputs(",\"confidence\":", to);
        nc_json_number(to, ln->confidence);
        fprintf(to, ",\"reject\":%s,\"first_digit\":%zu,\"digits\":%zu}",
                ln->reject ? "true" : "false", ln->first, ln->count);
    }
    fputc(']', to);
}

void nc_json_result_members(FILE *to, const Neocog__Reply *rp, const Neocog__Result *res)
{
    fputs("\"model\":", to);
    nc_json_string(to, or_empty(rp->kind_case == NEOCOG__REPLY__KIND_RECOGNIZE
                                ? rp->recognize->model : NULL));
    fprintf(to, ",\"label\":%d,\"text\":", res->label);
    nc_json_string(to, or_empty(res->text));
    fputs(",\"confidence\":", to);
    nc_json_number(to, res->confidence);
    json_verdict(to, res->reject, res->reject_reason, res->threshold);
    fputc(',', to);
    json_top(to, res->top, res->n_top);
    if (res->n_scores) {
        fputs(",\"scores\":[", to);
        for (size_t i = 0; i < res->n_scores; i++) {
            if (i)
                fputc(',', to);
            nc_json_number(to, res->scores[i]);
        }
        fputc(']', to);
    }
    if (res->n_digits)
        json_digits(to, res);
    else if (res->text && !*res->text)
        fputs(",\"digits\":[],\"lines\":[]", to);   /* segmented, nothing found */
    if (rp->timing)
        fprintf(to, ",\"timing_us\":{\"queue\":%" PRIu64 ",\"compute\":%" PRIu64
                ",\"prepare\":%" PRIu64 ",\"forward\":%" PRIu64 ",\"total\":%" PRIu64 "}",
                rp->timing->queue_us, rp->timing->compute_us, rp->timing->prepare_us,
                rp->timing->forward_us, rp->timing->total_us);
}

void nc_json_error_members(FILE *to, const char *code, const char *message)
{
    fputs("\"error\":{\"code\":", to);
    nc_json_string(to, code);
    fputs(",\"message\":", to);
    nc_json_string(to, message);
    fputc('}', to);
}

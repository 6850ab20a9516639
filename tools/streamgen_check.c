/* tools/streamgen_check.c — see streamgen_check.h. */
#include "streamgen_check.h"

#include <stdlib.h>
#include <string.h>

#include "segment.h"

#define MAX_TRUTH (NC_RENDER_MAX_STRINGS * NC_RENDER_MAX_CHARS)

static double iou(nc_rect a, nc_rect b)
{
    double x0 = a.x > b.x ? a.x : b.x, y0 = a.y > b.y ? a.y : b.y;
    double x1 = a.x + a.width < b.x + b.width ? a.x + a.width : b.x + b.width;
    double y1 = a.y + a.height < b.y + b.height ? a.y + a.height : b.y + b.height;
    if (x1 <= x0 || y1 <= y0)
        return 0;
    double in = (x1 - x0) * (y1 - y0);
    return in / ((double)a.width * a.height + (double)b.width * b.height - in);
}

static uint32_t kind_of(uint8_t ch)
{
    if (ch && strchr("ij!?:;=%\"", ch))
        return NC_CHECK_PIECES;
    if (ch && strchr(".,'-", ch))
        return NC_CHECK_MARKS;
    if (ch && strchr("gpqy", ch))
        return NC_CHECK_DESCENDERS;
    return NC_CHECK_OTHER;
}

typedef struct pair {
    double iou;
    uint32_t t, d;
} pair;

static int by_iou_desc(const void *a, const void *b)
{
    double x = ((const pair *)a)->iou, y = ((const pair *)b)->iou;
    return (x < y) - (x > y);
}

int nc_seg_check_frame(struct nc_segmenter *seg, const nc_image *frame,
                       const nc_render_truth *truth, uint32_t charset, nc_seg_check *c)
{
    nc_segment_params p;
    nc_segment_params_for_view(&p, frame->width, frame->height, 0);
    p.charset = charset;
    nc_segment_result *r = NULL;
    int err = nc_segment_frame(seg, frame, &p, &r);
    if (err < 0)
        return err;
    const nc_render_digit *tv[MAX_TRUTH];
    uint32_t n_t = 0, first[NC_RENDER_MAX_STRINGS + 1];
    for (uint32_t s = 0; s < truth->string_count; s++) {
        first[s] = n_t;
        for (uint32_t k = 0; k < truth->strings[s].count; k++)
            tv[n_t++] = &truth->strings[s].digits[k];
    }
    first[truth->string_count] = n_t;
    /* every overlapping (truth, piece) pair, best first, taken greedily */
    size_t cap = (size_t)n_t * (r->count ? r->count : 1), n_p = 0;
    pair *pairs = malloc(cap * sizeof *pairs);
    uint32_t *match = malloc(((size_t)n_t + 1) * sizeof *match);
    uint8_t *used = calloc((size_t)r->count + 1, 1);
    if (!pairs || !match || !used) {
        err = -ENOMEM;
        goto out;
    }
    for (uint32_t t = 0; t < n_t; t++)
        for (uint32_t d = 0; d < r->count; d++) {
            double v = iou(tv[t]->box, r->digits[d].box);
            if (v >= 0.5)
                pairs[n_p++] = (pair){ v, t, d };
        }
    qsort(pairs, n_p, sizeof *pairs, by_iou_desc);
    for (uint32_t t = 0; t < n_t; t++)
        match[t] = UINT32_MAX;
    for (size_t i = 0; i < n_p; i++)
        if (match[pairs[i].t] == UINT32_MAX && !used[pairs[i].d]) {
            match[pairs[i].t] = pairs[i].d;
            used[pairs[i].d] = 1;
        }
    c->frames++;
    c->pieces += r->count;
    for (uint32_t s = 0; s < truth->string_count; s++) {
        int right = 1;
        for (uint32_t t = first[s]; t < first[s + 1]; t++) {
            uint32_t k = kind_of(tv[t]->label);
            c->chars[k]++;
            if (match[t] == UINT32_MAX) {
                right = 0;
                continue;
            }
            c->found[k]++;
            c->pieces_matched++;
            if (t == first[s])
                continue;
            const uint32_t a = match[t - 1], b = match[t];
            if (a == UINT32_MAX || b != a + 1 || r->digits[a].line != r->digits[b].line) {
                right = 0;      /* something between them, or another line */
                continue;
            }
            const int want = tv[t]->space_before != 0;
            const int got = (r->digits[b].flags & NC_SEGMENT_DIGIT_SPACE_BEFORE) != 0;
            c->gaps++;
            c->gaps_right += want == got;
            c->spaces += want;
            c->spaces_found += want && got;
            c->false_spaces += !want && got;
            right &= want == got;
        }
        /* nothing else on the line right before or after the string */
        if (right && first[s + 1] > first[s]) {
            const uint32_t a = match[first[s]], b = match[first[s + 1] - 1];
            const nc_segment_line *L = &r->lines[r->digits[a].line];
            right = a == L->first && b + 1 == L->first + L->count;
        }
        c->strings++;
        c->strings_right += right;
        if (!right && getenv("NC_CHECK_VERBOSE")) {
            fprintf(stderr, "frame %u string %u:", c->frames - 1, s);
            for (uint32_t t = first[s]; t < first[s + 1]; t++) {
                fprintf(stderr, " %s%c", tv[t]->space_before ? "_" : "", tv[t]->label);
                if (match[t] == UINT32_MAX) {
                    fprintf(stderr, "[MISS %u,%u %ux%u]", tv[t]->box.x, tv[t]->box.y,
                            tv[t]->box.width, tv[t]->box.height);
                } else if (t > first[s] && match[t - 1] != UINT32_MAX && match[t] != match[t - 1] + 1)
                    fprintf(stderr, "[NOTNEXT]");
                else if (match[t] != UINT32_MAX && ((r->digits[match[t]].flags & NC_SEGMENT_DIGIT_SPACE_BEFORE) != 0) != (tv[t]->space_before != 0) && t > first[s])
                    fprintf(stderr, "[GAP]");
            }
            fprintf(stderr, "\n   pieces near:");
            for (uint32_t d = 0; d < r->count; d++) {
                nc_rect b = r->digits[d].box, sb = truth->strings[s].box;
                if (b.y + b.height >= sb.y && b.y <= sb.y + sb.height && !used[d])
                    fprintf(stderr, " [%u,%u %ux%u f%u l%u]", b.x, b.y, b.width, b.height, r->digits[d].flags, r->digits[d].line);
            }
            fprintf(stderr, "\n");
        }
    }
out:
    free(pairs);
    free(match);
    free(used);
    nc_segment_result_free(r);
    return err;
}

static double pct(uint32_t a, uint32_t b)
{
    return b ? 100.0 * a / b : 0.0;
}

void nc_seg_check_print(FILE *to, const nc_seg_check *c)
{
    static const char *const names[NC_CHECK_KINDS] = {
        "in pieces (i j ! ? : ; = % \")", "marks (. , ' -)", "descenders (g p q y)", "others",
    };
    uint32_t all = 0, found = 0;
    fprintf(to, "| characters | found (IoU >= 0.5) |\n|---|---:|\n");
    for (uint32_t k = 0; k < NC_CHECK_KINDS; k++) {
        fprintf(to, "| %s | %.1f %% of %u |\n", names[k], pct(c->found[k], c->chars[k]),
                c->chars[k]);
        all += c->chars[k];
        found += c->found[k];
    }
    fprintf(to, "| all | %.1f %% of %u |\n", pct(found, all), all);
    fprintf(to, "| segmented pieces that match a character | %.1f %% of %u |\n",
            pct(c->pieces_matched, c->pieces), c->pieces);
    fprintf(to, "| gaps judged right (space or not) | %.1f %% of %u |\n",
            pct(c->gaps_right, c->gaps), c->gaps);
    fprintf(to, "| spaces found | %.1f %% of %u |\n", pct(c->spaces_found, c->spaces),
            c->spaces);
    fprintf(to, "| spaces where there is none | %.1f %% of %u |\n",
            pct(c->false_spaces, c->gaps - c->spaces), c->gaps - c->spaces);
    fprintf(to, "| strings entirely right | %.1f %% of %u (%u frames) |\n",
            pct(c->strings_right, c->strings), c->strings, c->frames);
}

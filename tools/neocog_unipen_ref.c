/* tools/neocog_unipen_ref.c — each UNIPEN sample's size reference and
 * baseline, estimated from the writer's other characters.
 *
 * Layer: tools (statistics over the loaded set; no I/O).
 *
 * The data has no reference lines: each character's points are tablet
 * coordinates, and the characters of one source file were written on the
 * same tablet, mostly in rows (a line of text or a grid of boxes).  So:
 *
 *  1. Capital height of a writer: the median height of their digits and
 *     capitals (the categories come in separate files, so only the writer
 *     links a lower-case or punctuation file to a capital one).
 *  2. Each class's typical height relative to that (an `o` about 0.55, a
 *     `.` about 0.1, a `(` about 1.2), over all such writers.
 *  3. The reference of a file: the median over its characters of
 *     height / typical height of the class, where it has at least 3; else
 *     the same over the writer's files; else the sample's own height over
 *     its class's typical (label-derived; counted).  Per file, because a
 *     writer wrote some sessions larger than others.
 *  4. Baseline of a sample: the median bottom of up to 5 characters of the
 *     same file (itself excluded) whose vertical middle lies within 0.8
 *     reference of its own and that sit on the line (digits, capitals, lower
 *     case without descenders), nearest along x first.  From that, each
 *     class's typical drop below the baseline; then again, a few rounds,
 *     with every neighbour whose class drop is known (bottom - drop x
 *     reference), so punctuation-only files find their line too (there the
 *     marks ! # % & ? @ are taken to sit on it at first).  A sample with no
 *     neighbour gets its own bottom less its class's typical drop (counted).
 */
#include "neocog_unipen.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN_FOR_MEDIAN 3
#define NEIGHBOURS 5
#define WINDOW 0.8f
#define ROUNDS 4

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (reordered); NAN when n < min_n. */
static float median(float *v, size_t n, size_t min_n)
{
    if (n < min_n || n == 0)
        return NAN;
    qsort(v, n, sizeof *v, cmp_float);
    return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

static int is_digit_or_upper(uint8_t cls)
{
    char ch = (char)(cls + '!');
    return (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z');
}

static int is_alnum(uint8_t cls)
{
    char ch = (char)(cls + '!');
    return is_digit_or_upper(cls) || (ch >= 'a' && ch <= 'z');
}

/* Sits on the line with nothing below it (descenders and f excluded). */
static int sits_on_line(uint8_t cls)
{
    char ch = (char)(cls + '!');
    return is_alnum(cls) && !strchr("fgjpqy", ch);
}

static float height(const nc_unipen_sample *s)
{
    return s->box[3] - s->box[1];
}

/* Samples of each file, as index lists: file_first[f] .. file_first[f+1]-1
 * of order. */
typedef struct by_file {
    uint32_t *first, *order;
} by_file;

static int group_by_file(const nc_unipen *u, by_file *g)
{
    g->first = calloc((size_t)u->n_files + 1, sizeof(uint32_t));
    g->order = malloc(sizeof(uint32_t) * u->n_samples);
    if (!g->first || !g->order)
        return -ENOMEM;
    for (uint32_t i = 0; i < u->n_samples; i++)
        g->first[u->samples[i].file + 1]++;
    for (uint32_t f = 0; f < u->n_files; f++)
        g->first[f + 1] += g->first[f];
    uint32_t *fill = malloc(sizeof(uint32_t) * u->n_files);
    if (!fill)
        return -ENOMEM;
    memcpy(fill, g->first, sizeof(uint32_t) * u->n_files);
    for (uint32_t i = 0; i < u->n_samples; i++)
        g->order[fill[u->samples[i].file]++] = i;
    free(fill);
    return 0;
}

typedef struct cand {
    float dx, base;
} cand;

static int cmp_cand(const void *a, const void *b)
{
    float x = ((const cand *)a)->dx, y = ((const cand *)b)->dx;
    return (x > y) - (x < y);
}

/* Step 4 for every sample, with drop[c] the known drop of class c (NAN:
 * class not used as a neighbour).  Sets baseline and base_source. */
static int baselines(nc_unipen *u, const by_file *g, const float *drop, cand *scratch,
                     float *vals)
{
    for (uint32_t f = 0; f < u->n_files; f++) {
        uint32_t a = g->first[f], b = g->first[f + 1];
        for (uint32_t i = a; i < b; i++) {
            nc_unipen_sample *s = &u->samples[g->order[i]];
            float mid = 0.5f * (s->box[1] + s->box[3]), xc = 0.5f * (s->box[0] + s->box[2]);
            size_t n = 0;
            for (uint32_t j = a; j < b; j++) {
                const nc_unipen_sample *t = &u->samples[g->order[j]];
                if (j == i || isnan(drop[t->cls]) || height(t) > 2.0f * s->ref)
                    continue;
                float tmid = 0.5f * (t->box[1] + t->box[3]);
                if (fabsf(tmid - mid) > WINDOW * s->ref)
                    continue;
                scratch[n].dx = fabsf(0.5f * (t->box[0] + t->box[2]) - xc);
                scratch[n].base = t->box[3] - drop[t->cls] * t->ref;
                n++;
            }
            if (n == 0) {
                s->base_source = NC_UNIPEN_BASE_CLASS;
                continue;
            }
            qsort(scratch, n, sizeof *scratch, cmp_cand);
            if (n > NEIGHBOURS)
                n = NEIGHBOURS;
            for (size_t k = 0; k < n; k++)
                vals[k] = scratch[k].base;
            s->baseline = median(vals, n, 1);
            s->base_source = NC_UNIPEN_BASE_NEIGHBOURS;
        }
    }
    return 0;
}

/* Each class's median (bottom - baseline) / ref over samples whose
 * baseline came from neighbours. */
static void measure_drops(nc_unipen *u, float *vals, float *drop_out)
{
    for (uint32_t c = 0; c < NC_UNIPEN_CLASSES; c++) {
        size_t n = 0;
        for (uint32_t i = 0; i < u->n_samples; i++) {
            const nc_unipen_sample *s = &u->samples[i];
            if (s->cls == c && s->base_source == NC_UNIPEN_BASE_NEIGHBOURS)
                vals[n++] = (s->box[3] - s->baseline) / s->ref;
        }
        drop_out[c] = median(vals, n, 5);
    }
}

int nc_unipen_reference(nc_unipen *u)
{
    int err = -ENOMEM;
    by_file g = { NULL, NULL };
    float *vals = malloc(sizeof(float) * (u->n_samples + 1));
    float *writer_cap = malloc(sizeof(float) * u->n_writers);
    float *file_ref = malloc(sizeof(float) * u->n_files);
    float *writer_ref = malloc(sizeof(float) * u->n_writers);
    cand *scratch = malloc(sizeof(cand) * (u->n_samples + 1));
    if (!vals || !writer_cap || !file_ref || !writer_ref || !scratch || group_by_file(u, &g))
        goto out;

    /* 1. capital height per writer (the categories are in separate files,
     * so only the writer links a lower-case file to a capital one) */
    for (uint32_t w = 0; w < u->n_writers; w++) {
        size_t n = 0;
        for (uint32_t i = 0; i < u->n_samples; i++) {
            const nc_unipen_sample *s = &u->samples[i];
            if (s->writer == w && is_digit_or_upper(s->cls) && height(s) > 0.0f)
                vals[n++] = height(s);
        }
        writer_cap[w] = median(vals, n, MIN_FOR_MEDIAN);
    }
    /* 2. typical height of each class */
    for (uint32_t c = 0; c < NC_UNIPEN_CLASSES; c++) {
        size_t n = 0;
        for (uint32_t i = 0; i < u->n_samples; i++) {
            const nc_unipen_sample *s = &u->samples[i];
            if (s->cls == c && !isnan(writer_cap[s->writer]))
                vals[n++] = height(s) / writer_cap[s->writer];
        }
        u->class_height[c] = median(vals, n, 5);
    }
    /* 3. reference per file, per writer, per sample */
    for (uint32_t f = 0; f < u->n_files; f++) {
        size_t n = 0;
        for (uint32_t i = g.first[f]; i < g.first[f + 1]; i++) {
            const nc_unipen_sample *s = &u->samples[g.order[i]];
            float r = u->class_height[s->cls];
            if (r > 0.0f && height(s) > 0.0f)
                vals[n++] = height(s) / r;
        }
        file_ref[f] = median(vals, n, MIN_FOR_MEDIAN);
    }
    for (uint32_t w = 0; w < u->n_writers; w++) {
        size_t n = 0;
        for (uint32_t i = 0; i < u->n_samples; i++) {
            const nc_unipen_sample *s = &u->samples[i];
            float r = u->class_height[s->cls];
            if (s->writer == w && r > 0.0f && height(s) > 0.0f)
                vals[n++] = height(s) / r;
        }
        writer_ref[w] = median(vals, n, MIN_FOR_MEDIAN);
    }
    for (uint32_t i = 0; i < u->n_samples; i++) {
        nc_unipen_sample *s = &u->samples[i];
        float r = u->class_height[s->cls];
        if (!isnan(file_ref[s->file])) {
            s->ref = file_ref[s->file];
            s->ref_source = NC_UNIPEN_REF_FILE;
        } else if (!isnan(writer_ref[s->writer])) {
            s->ref = writer_ref[s->writer];
            s->ref_source = NC_UNIPEN_REF_WRITER;
        } else {
            float side = fmaxf(height(s), s->box[2] - s->box[0]);
            s->ref = r > 0.0f && height(s) > 0.0f ? height(s) / r : side;
            s->ref_source = NC_UNIPEN_REF_SELF;
        }
        if (!(s->ref > 0.0f))
            s->ref = 1.0f;      /* a lone dot with nothing to compare: any scale */
    }

    /* 4. baselines: first from characters that sit on the line (and, for
     * the punctuation files, marks that do: ! # % & ? @), then again with
     * every neighbour whose class drop is then known; the drops of the
     * punctuation settle relative to one another over a few rounds. */
    float drop[NC_UNIPEN_CLASSES];
    for (uint32_t c = 0; c < NC_UNIPEN_CLASSES; c++)
        drop[c] = sits_on_line((uint8_t)c) || strchr("!#%&?@", c + '!') ? 0.0f : NAN;
    for (int round = 0; round < ROUNDS; round++) {
        baselines(u, &g, drop, scratch, vals);
        measure_drops(u, vals, drop);
    }
    memcpy(u->class_drop, drop, sizeof drop);
    for (uint32_t i = 0; i < u->n_samples; i++) {
        nc_unipen_sample *s = &u->samples[i];
        if (s->base_source == NC_UNIPEN_BASE_CLASS) {
            float d = u->class_drop[s->cls];
            s->baseline = s->box[3] - (isnan(d) ? 0.0f : d) * s->ref;
        }
    }
    err = 0;
out:
    free(g.first);
    free(g.order);
    free(vals);
    free(writer_cap);
    free(file_ref);
    free(writer_ref);
    free(scratch);
    return err;
}

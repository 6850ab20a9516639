/* tools/neocog-unipen — UNIPEN pen strokes to training and validation images
 * (IDX, MNIST's layout), for 94-class and digit models (issue 46).
 *
 *   neocog-unipen --data FILE.jsonl.gz (--out PREFIX | --counts)
 *       [--classes digits|alnum|all94] [--split train|val|all]
 *       [--size-mode box|line] [--size 28|29] [--count N] [--seed S]
 *       [--variants K [--variant-blocks]] [--pen-width MIN:MAX] [--slant DEG] [--rotate DEG]
 *       [--aspect F] [--scale F] [--jitter F] [--plain]
 *       [--look none|binary|stretch|r16|blur]
 *       [--sheet FILE.pgm] [--sheet-cols N]
 *
 * FILE is shared/data/unipen's JSON lines (its README has the format).
 * Writes PREFIX-images-idx3-ubyte, PREFIX-labels-idx1-ubyte and
 * PREFIX-classes.txt (the characters in label order, one a line).  Every
 * selected sample of the split is drawn K times (--variants), each time with
 * its own pen width and deformations, and the images come in a seeded
 * random order; --count N keeps the first N of that order.  --variant-blocks
 * writes them as K blocks instead, block v every sample's drawing v in an
 * order of its own: neocog-train cnn --epoch-blocks K trains each epoch on
 * one block, so every epoch sees new pen widths and deformations.  --plain draws
 * without deformations and with the middle pen width (validation sets).
 * --counts prints the samples per class per split and writes nothing.
 *
 * Split: writer-disjoint, fixed.  A writer (contrib + "/" + writer) is a
 * validation writer when the FNV-1a 64-bit hash of that string, modulo
 * 1000, is below 150 (about 15 % of the writers).
 *
 * Each image (core/data/strokes.h does the maths): strokes resampled at equal arc
 * length (1/32 of the smaller of the character's larger side and its
 * reference height); slant (uniform in +-DEG, about the character's centre
 * on its baseline), rotation (+-DEG), x stretch (1 +- F), in line mode a
 * size change (1 +- F); per-stroke jitter (shift +-F of the character's
 * larger side, rotation +-150 F degrees, scale 1 +- 2 F); a round pen of a
 * width drawn from MIN:MAX pixels, anti-aliased; then the layout:
 *   box  MNIST's: ink box to 20 px, centre of mass to (14, 14);
 *   line the writer's reference height to 12 px and the baseline to row 19
 *        (tools/neocog_unipen_ref.c says how both are estimated), centred
 *        along x by mass: size and height on the line are kept.
 * --size 29 is the 28 layout with an empty last row and column, as the
 * CNN's input.  --look gives every image the look of another source:
 * binarised, stretched to its box, resampled at 16 px, blurred
 * (neocog_unipen_look.h).  Options are io/opts.h's (--help lists them).
 * Exit status: 0 done, 1 failure, 2 usage. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "fileio.h"
#include "neocog_unipen.h"
#include "neocog_unipen_look.h"
#include "opts.h"
#include "pgm.h"
#include "strokes.h"

#define MAX_GZ_BYTES (256u << 20)

typedef struct options {
    const char *data, *out, *sheet;
    const char *classes, *split, *mode;
    nc_look look;
    uint32_t size, count, variants, sheet_cols, counts_only, plain, blocks;
    uint64_t seed;
    float pen_min, pen_max, slant, rotate, aspect, scale, jitter;
} options;

enum {
    O_DATA, O_OUT, O_COUNTS, O_CLASSES, O_SPLIT, O_SIZE_MODE, O_SIZE, O_COUNT, O_SEED,
    O_VARIANTS, O_VARIANT_BLOCKS, O_PEN_WIDTH, O_SLANT, O_ROTATE, O_ASPECT, O_SCALE,
    O_JITTER, O_PLAIN,
    O_LOOK, O_SHEET, O_SHEET_COLS, O_END,
};

static const nc_opt opt_table[] = {
    [O_DATA] = { "data", "FILE.jsonl.gz", "the pen strokes (shared/data/unipen's JSON lines)" },
    [O_OUT] = { "out", "PREFIX", "write PREFIX-images-idx3-ubyte, -labels-idx1-ubyte and\n"
                                 "-classes.txt" },
    [O_COUNTS] = { "counts", NULL, "print the samples per class per split; write nothing" },
    [O_CLASSES] = { "classes", "digits|alnum|all94", "which characters (default all94)" },
    [O_SPLIT] = { "split", "train|val|all", "whose strokes, by writer (default train)" },
    [O_SIZE_MODE] = { "size-mode", "box|line", "MNIST's box or the writer's line (default box)" },
    [O_SIZE] = { "size", "28|29", "image side (default 28; 29 adds an empty row and column)" },
    [O_COUNT] = { "count", "N", "keep the first N of the seeded order (default all)" },
    [O_SEED] = { "seed", "S", "the random seed (default 1)" },
    [O_VARIANTS] = { "variants", "K", "draw each sample K times, 1..1000 (default 1)" },
    [O_VARIANT_BLOCKS] = { "variant-blocks", NULL,
                           "write the K drawings as K blocks, each every sample once in its\n"
                           "own seeded order (for neocog-train cnn --epoch-blocks K); not\n"
                           "with --count" },
    [O_PEN_WIDTH] = { "pen-width", "MIN:MAX", "pen width in pixels, under 20 (default 1.8:3.2)" },
    [O_SLANT] = { "slant", "DEG", "slant within +-DEG, 0..60 (default 10)" },
    [O_ROTATE] = { "rotate", "DEG", "rotation within +-DEG, 0..45 (default 5)" },
    [O_ASPECT] = { "aspect", "F", "x stretch 1 +- F, 0..0.5 (default 0.1)" },
    [O_SCALE] = { "scale", "F", "size 1 +- F in line mode, 0..0.5 (default 0.1)" },
    [O_JITTER] = { "jitter", "F", "per-stroke shift, turn and scale, 0..0.2 (default 0.03)" },
    [O_PLAIN] = { "plain", NULL, "no deformations, the middle pen width (validation sets)" },
    [O_LOOK] = { "look", "none|binary|stretch|r16|blur",
                 "the look of another source (default none)" },
    [O_SHEET] = { "sheet", "FILE.pgm", "a contact sheet of the first 400 images too" },
    [O_SHEET_COLS] = { "sheet-cols", "N", "images a row of the sheet (default 20)" },
    [O_END] = { NULL, NULL, NULL },
};

static nc_opts opts = {
    .prog = "neocog-unipen",
    .usage =
        "usage: neocog-unipen --data FILE.jsonl.gz (--out PREFIX | --counts)\n"
        "  [--classes digits|alnum|all94] [--split train|val|all] [--size-mode box|line]\n"
        "  [--size 28|29] [--count N] [--seed S] [--variants K [--variant-blocks]]\n"
        "  [--pen-width MIN:MAX] [--slant DEG] [--rotate DEG] [--aspect F] [--scale F]\n"
        "  [--jitter F] [--plain]\n"
        "  [--look none|binary|stretch|r16|blur]\n"
        "  [--sheet FILE.pgm] [--sheet-cols N]\n"
        "UNIPEN pen strokes to training and validation images (IDX, MNIST's layout);\n"
        "tools/README.md says how an image is made.\n",
    .table = opt_table,
};

/* Label of class cls (character - 33) in the chosen class set, or -1. */
static int label_of(const char *classes, uint8_t cls)
{
    char ch = (char)(cls + '!');
    if (!strcmp(classes, "all94"))
        return cls;     /* ASCII order '!' .. '~' */
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (!strcmp(classes, "alnum")) {
        if (ch >= 'A' && ch <= 'Z')
            return 10 + ch - 'A';
        if (ch >= 'a' && ch <= 'z')
            return 36 + ch - 'a';
        return -1;
    }
    return -1;
}

static int n_labels(const char *classes)
{
    return !strcmp(classes, "digits") ? 10 : !strcmp(classes, "alnum") ? 62 : 94;
}

/* The characters in label order, one a line (PREFIX-classes.txt); returns
 * its length. */
static size_t classes_text(const char *classes, char text[2 * NC_UNIPEN_CLASSES + 1])
{
    size_t n = 0;
    for (int want = 0; want < n_labels(classes); want++)
        for (uint8_t c = 0; c < NC_UNIPEN_CLASSES; c++)
            if (label_of(classes, c) == want) {
                text[n++] = (char)(c + '!');
                text[n++] = '\n';
            }
    text[n] = 0;
    return n;
}

static int parse_range(const char *v, float *lo, float *hi)
{
    char *end;
    *lo = strtof(v, &end);
    if (end == v)
        return 0;
    if (*end == ':')
        *hi = strtof(end + 1, &end);
    else
        *hi = *lo;
    return *end == 0 && *lo > 0.0f && *hi >= *lo;
}

/* A float value in [lo, hi) (hi_closed: [lo, hi]); NaN is out of range. */
static int parse_float(const char *v, float lo, float hi, int hi_closed, float *ret)
{
    char *end;
    float x = strtof(v, &end);
    if (end == v || *end || !(x >= lo && (hi_closed ? x <= hi : x < hi)))
        return 0;
    *ret = x;
    return 1;
}

static int one_of(const char *v, const char *a, const char *b, const char *c)
{
    return !strcmp(v, a) || !strcmp(v, b) || (c && !strcmp(v, c));
}

/* -1: go on; otherwise the exit status (0 after --help, 2 on a usage
 * error, said on stderr). */
static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){ .classes = "all94", .split = "train", .mode = "box", .size = 28,
                    .variants = 1, .sheet_cols = 20, .seed = 1, .pen_min = 1.8f,
                    .pen_max = 3.2f, .slant = 10.0f, .rotate = 5.0f, .aspect = 0.1f,
                    .scale = 0.1f, .jitter = 0.03f };
    for (int opt; (opt = nc_opts_next(&opts, argc, argv)) != NC_OPTS_END;) {
        const char *v = opts.value;
        char *end = NULL;
        int ok = 1;
        switch (opt) {
        case NC_OPTS_HELP: nc_opts_usage(&opts, stdout); return 0;
        case NC_OPTS_ERROR: return nc_opts_fail(&opts);
        case O_COUNTS: o->counts_only = 1; break;
        case O_PLAIN: o->plain = 1; break;
        case O_VARIANT_BLOCKS: o->blocks = 1; break;
        case O_DATA: o->data = v; break;
        case O_OUT: o->out = v; break;
        case O_SHEET: o->sheet = v; break;
        case O_CLASSES: ok = one_of(v, "digits", "alnum", "all94"); o->classes = v; break;
        case O_SPLIT: ok = one_of(v, "train", "val", "all"); o->split = v; break;
        case O_SIZE_MODE: ok = one_of(v, "box", "line", NULL); o->mode = v; break;
        case O_LOOK: ok = !nc_look_parse(v, &o->look); break;
        case O_SIZE: ok = !nc_opts_u32(v, 28, 29, &o->size); break;
        case O_COUNT: ok = !nc_opts_u32(v, 0, UINT32_MAX, &o->count); break;
        case O_VARIANTS: ok = !nc_opts_u32(v, 1, 1000, &o->variants); break;
        case O_SHEET_COLS: ok = !nc_opts_u32(v, 1, UINT32_MAX, &o->sheet_cols); break;
        case O_SEED:
            errno = 0;
            o->seed = strtoull(v, &end, 10);
            ok = !errno && end != v && !*end && *v != '-';
            break;
        case O_PEN_WIDTH:
            ok = parse_range(v, &o->pen_min, &o->pen_max) && o->pen_max < 20.0f;
            break;
        case O_SLANT: ok = parse_float(v, 0.0f, 60.0f, 0, &o->slant); break;
        case O_ROTATE: ok = parse_float(v, 0.0f, 45.0f, 1, &o->rotate); break;
        case O_ASPECT: ok = parse_float(v, 0.0f, 0.5f, 0, &o->aspect); break;
        case O_SCALE: ok = parse_float(v, 0.0f, 0.5f, 0, &o->scale); break;
        case O_JITTER: ok = parse_float(v, 0.0f, 0.2f, 0, &o->jitter); break;
        }
        if (!ok) {
            nc_opts_bad_value(&opts, opt, NULL);
            return nc_opts_fail(&opts);
        }
    }
    if (opts.next < argc) {
        nc_opts_error(&opts, "unexpected argument '%s'", argv[opts.next]);
        return nc_opts_fail(&opts);
    }
    if (!o->data || (!o->out && !o->counts_only)) {
        nc_opts_error(&opts, "give --data FILE and one of --out PREFIX or --counts");
        return nc_opts_fail(&opts);
    }
    if (o->blocks && o->count) {
        nc_opts_error(&opts, "--variant-blocks writes every drawing: not with --count");
        return nc_opts_fail(&opts);
    }
    if (o->plain) {
        o->pen_min = o->pen_max = 0.5f * (o->pen_min + o->pen_max);
        o->slant = o->rotate = o->aspect = o->scale = o->jitter = 0.0f;
    }
    return -1;
}

static int load(const char *path, nc_unipen *u)
{
    uint8_t *gz = NULL;
    size_t gz_len = 0, line = 0;
    int err = nc_file_read(path, MAX_GZ_BYTES, &gz, &gz_len);
    if (err) {
        fprintf(stderr, "neocog-unipen: %s: %s\n", path, strerror(-err));
        return err;
    }
    err = nc_unipen_parse_gz(gz, gz_len, u, &line);
    free(gz);
    if (err && line)
        fprintf(stderr, "neocog-unipen: %s: line %zu: %s\n", path, line, nc_strerror(err));
    else if (err)
        fprintf(stderr, "neocog-unipen: %s: %s\n", path, nc_strerror(err));
    return err;
}

static void print_counts(const nc_unipen *u, const char *classes)
{
    uint32_t n[NC_UNIPEN_CLASSES][2] = { { 0 } }, writers[2] = { 0 }, tot[2] = { 0 };
    for (uint32_t w = 0; w < u->n_writers; w++)
        writers[nc_unipen_is_val_writer(u->writer_names[w])]++;
    for (uint32_t i = 0; i < u->n_samples; i++) {
        const nc_unipen_sample *s = &u->samples[i];
        n[s->cls][nc_unipen_is_val_writer(u->writer_names[s->writer])]++;
    }
    printf("writers: train %u, val %u\n", writers[0], writers[1]);
    printf("label\tchar\ttrain\tval\theight\tdrop\n");
    for (int want = 0; want < n_labels(classes); want++)
        for (uint8_t c = 0; c < NC_UNIPEN_CLASSES; c++)
            if (label_of(classes, c) == want) {
                printf("%d\t%c\t%u\t%u\t%.2f\t%.2f\n", want, c + '!', n[c][0], n[c][1],
                       u->class_height[c], u->class_drop[c]);
                tot[0] += n[c][0];
                tot[1] += n[c][1];
            }
    printf("total\t\t%u\t%u\n", tot[0], tot[1]);
}

/* One image: sample s drawn with draws from rng into px (size^2 bytes). */
typedef struct work {
    uint32_t *start;
    float *field;
} work;

static int render_one(const nc_unipen *u, const nc_unipen_sample *s, const options *o,
                      nc_deform_rng *rng, work *w, uint8_t *px, uint32_t *flags)
{
    /* The sample's strokes as a standalone nc_strokes (offsets from 0). */
    uint32_t p0 = u->stroke_start[s->first_stroke];
    uint32_t n_pts = u->stroke_start[s->first_stroke + s->n_strokes] - p0;
    for (uint32_t k = 0; k <= s->n_strokes; k++)
        w->start[k] = u->stroke_start[s->first_stroke + k] - p0;
    nc_strokes raw = { s->n_strokes, n_pts, w->start, u->xy + 2 * (size_t)p0 };

    float side = fmaxf(s->box[2] - s->box[0], s->box[3] - s->box[1]);
    float spacing = (side > 0.0f ? fminf(side, s->ref) : s->ref) / 32.0f;
    nc_strokes st;
    int err = nc_strokes_resample(&raw, spacing, &st);
    if (err)
        return err;

    /* Draws, always all of them and in this order. */
    double slant = nc_deform_rng_sym(rng) * o->slant;
    double rot = nc_deform_rng_sym(rng) * o->rotate;
    double sx = 1.0 + nc_deform_rng_sym(rng) * o->aspect;
    double size = 1.0 + nc_deform_rng_sym(rng) * o->scale;
    double pen = o->pen_min + (nc_deform_rng_sym(rng) * 0.5 + 0.5) * (o->pen_max - o->pen_min);
    double m[6];
    float cx = 0.5f * (s->box[0] + s->box[2]);
    err = nc_strokes_affine(slant, rot, sx * size, size, cx, s->baseline, m);
    if (!err)
        err = nc_strokes_transform(&st, m);
    if (!err)
        err = nc_strokes_jitter(&st, rng, o->jitter, 150.0f * o->jitter, 2.0f * o->jitter);
    if (!err)
        err = nc_look_strokes(o->look, &st);
    nc_strokes_layout l = !strcmp(o->mode, "box") ? NC_STROKES_LAYOUT_MNIST_28
                                                  : NC_STROKES_LAYOUT_LINE_28;
    l.size = o->size;
    l.pen_width = (float)pen;
    if (!err)
        err = nc_strokes_layout_apply(&st, &l, s->ref, s->baseline, w->field, flags);
    nc_strokes_fini(&st);
    if (!err)
        err = nc_look_field(o->look, w->field, o->size);
    if (err)
        return err;
    for (uint32_t i = 0; i < o->size * o->size; i++)
        px[i] = (uint8_t)lrintf(w->field[i] * 255.0f);
    return 0;
}

/* Contact sheet: the first cells of d, dark ink on white, grey grid; the
 * characters in the same grid go to FILE.txt. */
static int write_sheet(const options *o, const nc_dataset *d, const char *classes_text)
{
    uint32_t n = d->count < 400 ? d->count : 400, cols = o->sheet_cols;
    uint32_t rows = (n + cols - 1) / cols, cell = o->size + 1;
    nc_image *img = NULL;
    int err = nc_image_new(cols * cell + 1, rows * cell + 1, &img);
    if (err)
        return err;
    memset(img->pixels, 160, (size_t)img->width * img->height);
    char *txt = malloc((size_t)rows * (cols + 1) + 1);
    if (!txt) {
        nc_image_free(img);
        return -ENOMEM;
    }
    size_t t = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t gx = (i % cols) * cell + 1, gy = (i / cols) * cell + 1;
        const uint8_t *src = d->pixels + (size_t)i * d->rows * d->cols;
        for (uint32_t y = 0; y < d->rows; y++)
            for (uint32_t x = 0; x < d->cols; x++)
                img->pixels[(size_t)(gy + y) * img->width + gx + x] = 255 - src[y * d->cols + x];
        txt[t++] = classes_text[2 * d->labels[i]];
        if (i % cols == cols - 1 || i == n - 1)
            txt[t++] = '\n';
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    err = nc_pgm_encode(img, &buf, &len);
    if (!err)
        err = nc_file_write_atomic(o->sheet, buf, len);
    if (!err) {
        char path[4096];
        snprintf(path, sizeof path, "%s.txt", o->sheet);
        err = nc_file_write_atomic(path, (const uint8_t *)txt, t);
    }
    free(buf);
    free(txt);
    nc_image_free(img);
    return err;
}

int main(int argc, char **argv)
{
    options o;
    int st = parse_options(argc, argv, &o);
    if (st >= 0)
        return st;
    nc_unipen u;
    if (load(o.data, &u))
        return 1;
    int rc = 1;
    uint32_t *jobs = NULL;
    nc_dataset d = { 0 };
    work w = { NULL, NULL };
    if (o.counts_only) {
        print_counts(&u, o.classes);
        rc = 0;
        goto out;
    }

    /* The jobs: (sample, variant) pairs of the split and classes, shuffled. */
    uint32_t n_sel = 0, max_strokes = 0;
    for (uint32_t i = 0; i < u.n_samples; i++) {
        const nc_unipen_sample *s = &u.samples[i];
        int val = nc_unipen_is_val_writer(u.writer_names[s->writer]);
        if (label_of(o.classes, s->cls) < 0 || (!strcmp(o.split, "train") && val) ||
            (!strcmp(o.split, "val") && !val))
            continue;
        n_sel++;
        if (s->n_strokes > max_strokes)
            max_strokes = s->n_strokes;
    }
    uint64_t n_jobs = (uint64_t)n_sel * o.variants;
    if (n_jobs == 0 || n_jobs > NC_IDX_MAX_ITEMS) {
        fprintf(stderr, "neocog-unipen: %llu images: none, or over %u\n",
                (unsigned long long)n_jobs, NC_IDX_MAX_ITEMS);
        goto out;
    }
    jobs = malloc(sizeof(uint32_t) * 2 * n_jobs);
    w.start = malloc(sizeof(uint32_t) * (max_strokes + 1));
    w.field = malloc(sizeof(float) * o.size * o.size);
    if (!jobs || !w.start || !w.field)
        goto oom;
    uint64_t sel = 0;
    for (uint32_t i = 0; i < u.n_samples; i++) {
        const nc_unipen_sample *s = &u.samples[i];
        int val = nc_unipen_is_val_writer(u.writer_names[s->writer]);
        if (label_of(o.classes, s->cls) < 0 || (!strcmp(o.split, "train") && val) ||
            (!strcmp(o.split, "val") && !val))
            continue;
        for (uint32_t v = 0; v < o.variants; v++) {
            const uint64_t j = o.blocks ? (uint64_t)v * n_sel + sel : sel * o.variants + v;
            jobs[2 * j] = i;
            jobs[2 * j + 1] = v;
        }
        sel++;
    }
    /* One seeded order of all the drawings; with --variant-blocks, drawing
     * v of every sample makes block v, each block in an order of its own. */
    nc_deform_rng order_rng = { o.seed };
    const uint64_t block = o.blocks ? n_sel : n_jobs;
    for (uint64_t b0 = 0; b0 < n_jobs; b0 += block)
        for (uint64_t k = block - 1; k > 0; k--) {
            uint64_t r = b0 + nc_deform_rng_below(&order_rng, (uint32_t)(k + 1));
            uint32_t a = jobs[2 * (b0 + k)], b = jobs[2 * (b0 + k) + 1];
            jobs[2 * (b0 + k)] = jobs[2 * r];
            jobs[2 * (b0 + k) + 1] = jobs[2 * r + 1];
            jobs[2 * r] = a;
            jobs[2 * r + 1] = b;
        }
    uint32_t n_img = o.count && o.count < n_jobs ? o.count : (uint32_t)n_jobs;

    d.count = n_img;
    d.rows = d.cols = o.size;
    d.pixels = malloc((size_t)n_img * o.size * o.size);
    d.labels = malloc(n_img);
    if (!d.pixels || !d.labels)
        goto oom;
    uint32_t shrunk = 0, clamped = 0;
    uint32_t ref_src[3] = { 0 }, base_src[2] = { 0 };
    for (uint32_t k = 0; k < n_img; k++) {
        const nc_unipen_sample *s = &u.samples[jobs[2 * k]];
        /* Each image's draws depend on the seed, its sample and its variant
         * only: --count and the order do not change an image. */
        nc_deform_rng rng = { o.seed * 0x9e3779b97f4a7c15ull ^
                              ((uint64_t)jobs[2 * k] << 20 | jobs[2 * k + 1]) };
        uint32_t flags = 0;
        int err = render_one(&u, s, &o, &rng, &w, d.pixels + (size_t)k * o.size * o.size,
                             &flags);
        if (err) {
            fprintf(stderr, "neocog-unipen: sample %u (%s): %s\n", jobs[2 * k],
                    u.file_names[s->file], nc_strerror(err));
            goto out;
        }
        d.labels[k] = (uint8_t)label_of(o.classes, s->cls);
        shrunk += !!(flags & NC_STROKES_SHRUNK);
        clamped += !!(flags & NC_STROKES_CLAMPED);
        ref_src[s->ref_source]++;
        base_src[s->base_source]++;
    }

    char text[2 * NC_UNIPEN_CLASSES + 1], path[4096];
    size_t text_len = classes_text(o.classes, text);
    snprintf(path, sizeof path, "%s-classes.txt", o.out);
    int err = nc_file_write_idx(o.out, &d);
    if (!err)
        err = nc_file_write_atomic(path, (const uint8_t *)text, text_len);
    if (!err && o.sheet)
        err = write_sheet(&o, &d, text);
    if (err) {
        fprintf(stderr, "neocog-unipen: writing %s: %s\n", o.out, nc_strerror(err));
        goto out;
    }
    fprintf(stderr,
            "neocog-unipen: %u images (%u samples x %u variants, split %s, classes %s, "
            "%s %ux%u) to %s-*; reference from file %u, writer %u, own %u; baseline from "
            "neighbours %u, class %u; shrunk %u, shift clamped %u\n",
            n_img, n_sel, o.variants, o.split, o.classes, o.mode, o.size, o.size, o.out,
            ref_src[0], ref_src[1], ref_src[2], base_src[0], base_src[1], shrunk, clamped);
    rc = 0;
    goto out;
oom:
    fprintf(stderr, "neocog-unipen: out of memory\n");
out:
    free(jobs);
    free(w.start);
    free(w.field);
    nc_dataset_fini(&d);
    nc_unipen_fini(&u);
    return rc;
}

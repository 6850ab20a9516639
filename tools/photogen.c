/* tools/neocog-photogen — phone-photo-like pictures of handwritten digits,
 * rendered from MNIST digits, with a truth file: test material for reading
 * single photos (`neocog recognize`, with or without --segment) rather than
 * camera streams (neocog-streamgen).
 *
 *   neocog-photogen --data DIR --n N --out DIR [--truth FILE] [--append]
 *       [--set test|train] [--first K] [--count N] [--seed S]
 *       [--strings [--digits A-B] [--lines 1|2]] [--hand | --hand-share F]
 *       [--format jpeg|png|pgm] [--quality Q] [--prefix NAME] [--patches PREFIX]
 *
 * DIR holds MNIST (t10k-images-idx3-ubyte[.gz] and its labels, or the
 * training files with --set train) or the repository's fixture (tests/data,
 * mnist-t1k-*).  --first K --count N draw from the set's digits K .. K+N-1
 * only: `--set train --first 50000` gives photos of a trainer's validation
 * digits, for choosing parameters without the test digits.  The digits are
 * taken in a seeded random order without repeats until the set runs out.
 *
 * Each photo (photogen_render.c says what one holds) is one digit, or with
 * --strings 2-8 digits (--digits A-B, drawn per photo) on one line or two
 * (--lines).  --hand draws every photo's digits as marker/pen strokes of one
 * width, --hand-share F a share F of them.  Photos are written to
 * OUT/NAME-NNNN.jpg (NAME from --prefix, default "photo"; .png or .pgm with
 * --format) as TurboJPEG greyscale at the quality drawn per photo (50-90),
 * or at --quality Q.
 *
 * --patches PREFIX: each photo (single digits only) also goes through a
 * JPEG round trip at its quality and the daemon's preparation
 * (core/image/image_clean.h), then MNIST's layout (28x28, light ink, 20-pixel box,
 * centre of mass in the middle), kept with its label in
 * PREFIX-images-idx3-ubyte and PREFIX-labels-idx1-ubyte: training digits as
 * a network sees them from photos (`neocog-train cnn --extra PREFIX`).
 * Refused with --set test: the test digits must stay unseen.  A photo the
 * preparation finds no character in is left out (counted on stderr).
 *
 * Truth file (default OUT/truth.tsv; --append adds rows to an existing
 * one), tab-separated, one row per photo:
 *   file  text  boxes  variations
 * file is relative to the truth file's folder; text the digits in reading
 * order (lines top to bottom, no separator, as the daemon's Result.text);
 * boxes one x,y,w,h per digit, ';'-separated (each digit's ink, coverage
 * above 1/4, as mapped into the frame); variations the drawn parameters and
 * the names of the variations applied (nc_photo_describe).  Lines starting
 * with '#' are comments.  Deterministic for a seed and the same options.
 * Exit status: 0 done, 1 failure, 2 usage. */
#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>

#include "dataset.h"
#include "fileio.h"
#include "image_clean.h"
#include "opts.h"
#include "pgm.h"
#include "photogen_render.h"
#include "render_common.h"

#define MAX_DATA_BYTES (64u << 20)
#define MAX_PHOTOS 1000000u

enum { FMT_JPEG, FMT_PNG, FMT_PGM };

enum {
    O_DATA, O_N, O_OUT, O_TRUTH, O_APPEND, O_SET, O_FIRST, O_COUNT, O_SEED, O_STRINGS,
    O_DIGITS, O_LINES, O_HAND, O_HAND_SHARE, O_FORMAT, O_QUALITY, O_PREFIX, O_PATCHES,
    O_END,
};

static const nc_opt opt_table[] = {
    [O_DATA] = { "data", "DIR", "MNIST (t10k-* or train-* IDX files) or tests/data" },
    [O_N] = { "n", "N", "photos to write (required)" },
    [O_OUT] = { "out", "DIR", "the folder they go to (required)" },
    [O_TRUTH] = { "truth", "FILE", "the truth file (default OUT/truth.tsv)" },
    [O_APPEND] = { "append", NULL, "add rows to an existing truth file" },
    [O_SET] = { "set", "test|train", "which MNIST set the digits come from (default test)" },
    [O_FIRST] = { "first", "K", "draw from the set's digits K.. only" },
    [O_COUNT] = { "count", "N", "and from N of them" },
    [O_SEED] = { "seed", "S", "the random seed (default 1)" },
    [O_STRINGS] = { "strings", NULL, "2-8 digits a photo instead of one" },
    [O_DIGITS] = { "digits", "A-B", "digits a string, drawn per photo (default 2-8)" },
    [O_LINES] = { "lines", "1|2", "lines a string photo holds (default 1)" },
    [O_HAND] = { "hand", NULL, "every photo's digits as marker or pen strokes" },
    [O_HAND_SHARE] = { "hand-share", "F", "a share F (0..1) of them" },
    [O_FORMAT] = { "format", "jpeg|png|pgm", "the photos' format (default jpeg)" },
    [O_QUALITY] = { "quality", "Q", "JPEG quality 1..100 (default: drawn per photo, 50-90)" },
    [O_PREFIX] = { "prefix", "NAME", "file names NAME-NNNN (default photo)" },
    [O_PATCHES] = { "patches", "PREFIX", "also each digit as the daemon prepares it, as IDX\n"
                                         "training data (--set train, single digits)" },
    [O_END] = { NULL, NULL, NULL },
};

static nc_opts opts = {
    .prog = "neocog-photogen",
    .usage =
        "usage: neocog-photogen --data DIR --n N --out DIR [OPTIONS]\n"
        "Phone-photo-like pictures of MNIST digits (one a photo, or 2-8 with --strings)\n"
        "on lit paper, rotated, blurred, noisy, with shadows, rules, fingers and more,\n"
        "written to OUT/NAME-NNNN.jpg with a truth file (file, text, boxes, variations).\n",
    .table = opt_table,
};

/* The set's images and labels (nc_file_read_mnist's names). */
static int load_digits(const char *dir, int train, nc_dataset *d)
{
    char path[4096];
    int err = nc_file_read_mnist(dir, train, MAX_DATA_BYTES, d, path, sizeof path);
    if (err < 0 && !path[0])
        fprintf(stderr, "neocog-photogen: %s: no MNIST %s images (%s-images-idx3-ubyte.gz and the "
                        "like)\n", dir, train ? "training" : "test", train ? "train" : "t10k");
    else if (err < 0)
        fprintf(stderr, "neocog-photogen: %s (with its labels): %s\n", path, nc_strerror(err));
    return err;
}

static int write_png(const char *path, const nc_image *img)
{
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    pi.width = img->width;
    pi.height = img->height;
    pi.format = PNG_FORMAT_GRAY;
    if (!png_image_write_to_file(&pi, path, 0, img->pixels, (png_int_32)img->stride, NULL)) {
        fprintf(stderr, "neocog-photogen: %s: %s\n", path, pi.message);
        return -EIO;
    }
    return 0;
}

static int write_photo(const char *path, int format, tjhandle tj, const nc_image *img, int q)
{
    int err;
    if (format == FMT_PNG)
        return write_png(path, img);
    uint8_t *buf = NULL;
    size_t len = 0;
    if (format == FMT_PGM) {
        if ((err = nc_pgm_encode(img, &buf, &len)) < 0) {
            fprintf(stderr, "neocog-photogen: %s: %s\n", path, nc_strerror(err));
            return err;
        }
    } else {
        unsigned char *jb = NULL;
        unsigned long jl = 0;
        if (tjCompress2(tj, img->pixels, (int)img->width, (int)img->stride, (int)img->height,
                        TJPF_GRAY, &jb, &jl, TJSAMP_GRAY, q, TJFLAG_FASTDCT) < 0) {
            fprintf(stderr, "neocog-photogen: %s: %s\n", path, tjGetErrorStr());
            tjFree(jb);
            return -EIO;
        }
        buf = malloc(jl ? jl : 1);
        if (buf)
            memcpy(buf, jb, jl);
        len = jl;
        tjFree(jb);
        if (!buf)
            return -ENOMEM;
    }
    if ((err = nc_file_write_atomic(path, buf, len)) < 0)
        fprintf(stderr, "neocog-photogen: %s: %s\n", path, strerror(-err));
    free(buf);
    return err;
}

/* --patches: MNIST-layout patches of the photos as the daemon prepares
 * them, with their labels. */
typedef struct patches {
    uint8_t *pixels, *labels;
    uint32_t count, cap, empty;
} patches;

/* The photo after a JPEG round trip at quality q (what the daemon gets),
 * cleaned and laid out as MNIST; appended to ps with label. */
static int patch_add(patches *ps, tjhandle tj, const nc_image *img, int q, uint8_t label)
{
    unsigned char *jpeg = NULL;
    unsigned long len = 0;
    nc_image *dec = NULL, *clean = NULL;
    int err = 0;
    if (tjCompress2(tj, img->pixels, (int)img->width, (int)img->stride, (int)img->height,
                    TJPF_GRAY, &jpeg, &len, TJSAMP_GRAY, q, 0) != 0)
        err = -EIO;
    if (!err)
        err = nc_image_new(img->width, img->height, &dec);
    tjhandle dj = err ? NULL : tjInitDecompress();
    if (!err && (!dj || tjDecompress2(dj, jpeg, len, dec->pixels, (int)dec->width, 0,
                                      (int)dec->height, TJPF_GRAY, 0) != 0))
        err = -EIO;
    if (dj)
        tjDestroy(dj);
    tjFree(jpeg);
    float f[28 * 28];
    const nc_prep p = NC_PREP_MNIST_28;
    if (!err)
        err = nc_image_clean(dec, NC_POLARITY_AUTO, &clean, NULL);
    if (!err)
        err = nc_prep_apply(clean, &p, f);
    nc_image_free(dec);
    nc_image_free(clean);
    if (err == -ENOENT) {
        ps->empty++;
        return 0;
    }
    if (err)
        return err;
    if (ps->count == ps->cap) {
        uint32_t cap = ps->cap ? 2 * ps->cap : 1024;
        uint8_t *px = realloc(ps->pixels, (size_t)cap * 28 * 28);
        if (!px)
            return -ENOMEM;
        ps->pixels = px;
        uint8_t *lb = realloc(ps->labels, cap);
        if (!lb)
            return -ENOMEM;
        ps->labels = lb;
        ps->cap = cap;
    }
    for (int i = 0; i < 28 * 28; i++)
        ps->pixels[(size_t)ps->count * 784 + i] = (uint8_t)(f[i] * 255.0f + 0.5f);
    ps->labels[ps->count++] = label;
    return 0;
}

int main(int argc, char **argv)
{
    const char *data = NULL, *out_dir = NULL, *truth_path = NULL, *prefix = "photo";
    const char *patch_prefix = NULL;
    patches ps = { 0 };
    int train = 0, strings = 0, append = 0, format = FMT_JPEG;
    uint32_t n_photos = 0, first = 0, count = 0, quality = 0, dmin = 2, dmax = 8;
    uint64_t seed = 1;
    nc_photo_params pp;
    nc_photo_params_default(&pp);
    for (int o; (o = nc_opts_next(&opts, argc, argv)) != NC_OPTS_END;) {
        const char *v = opts.value;
        int bad = 0;
        switch (o) {
        case NC_OPTS_HELP: nc_opts_usage(&opts, stdout); return 0;
        case NC_OPTS_ERROR: return nc_opts_fail(&opts);
        case O_DATA: data = v; break;
        case O_OUT: out_dir = v; break;
        case O_TRUTH: truth_path = v; break;
        case O_APPEND: append = 1; break;
        case O_PATCHES: patch_prefix = v; break;
        case O_STRINGS: strings = 1; break;
        case O_HAND: pp.hand_share = 1.0f; break;
        case O_PREFIX:
            bad = !*v || strchr(v, '/') || strchr(v, '\t');
            prefix = v;
            break;
        case O_SET:
            if (!strcmp(v, "train")) train = 1;
            else if (!strcmp(v, "test")) train = 0;
            else bad = 1;
            break;
        case O_N: bad = nc_opts_u32(v, 1, MAX_PHOTOS, &n_photos); break;
        case O_FIRST: bad = nc_opts_u32(v, 0, UINT32_MAX, &first); break;
        case O_COUNT: bad = nc_opts_u32(v, 1, UINT32_MAX, &count); break;
        case O_QUALITY: bad = nc_opts_u32(v, 1, 100, &quality); break;
        case O_LINES: bad = nc_opts_u32(v, 1, 2, &pp.lines); break;
        case O_SEED: {
            char *end;
            errno = 0;
            seed = strtoull(v, &end, 0);
            bad = errno || end == v || *end || *v == '-';
            break;
        }
        case O_HAND_SHARE: {
            char *end;
            pp.hand_share = strtof(v, &end);
            bad = end == v || *end || !(pp.hand_share >= 0 && pp.hand_share <= 1);
            break;
        }
        case O_DIGITS: {
            char tail;
            int k = sscanf(v, "%u-%u%c", &dmin, &dmax, &tail);
            if (k == 1) dmax = dmin;
            bad = (k != 1 && k != 2) || dmin < 2 || dmax < dmin || dmax > NC_PHOTO_MAX_DIGITS;
            break;
        }
        case O_FORMAT:
            if (!strcmp(v, "jpeg") || !strcmp(v, "jpg")) format = FMT_JPEG;
            else if (!strcmp(v, "png")) format = FMT_PNG;
            else if (!strcmp(v, "pgm")) format = FMT_PGM;
            else bad = 1;
            break;
        }
        if (bad) {
            nc_opts_bad_value(&opts, o, o == O_DIGITS ? "(A-B with 2 <= A <= B <= 8)" : NULL);
            return nc_opts_fail(&opts);
        }
    }
    if (opts.next < argc) {
        nc_opts_error(&opts, "unexpected argument '%s'", argv[opts.next]);
        return nc_opts_fail(&opts);
    }
    if (!data || !n_photos || !out_dir) {
        nc_opts_error(&opts, "--data, --n and --out are required");
        return nc_opts_fail(&opts);
    }
    if (patch_prefix && (strings || !train)) {
        fprintf(stderr, "neocog-photogen: --patches takes single digits of the training set "
                        "(--set train, no --strings): the test digits stay unseen\n");
        return 2;
    }
    if (pp.lines == 2 && !strings) {
        fprintf(stderr, "neocog-photogen: --lines 2 needs --strings\n");
        return 2;
    }
    if (pp.lines == 2 && dmin < 2) {
        fprintf(stderr, "neocog-photogen: two lines need at least 2 digits\n");
        return 2;
    }
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "neocog-photogen: %s: %s\n", out_dir, strerror(errno));
        return 1;
    }

    nc_dataset d = { 0 };
    if (load_digits(data, train, &d) < 0)
        return 1;
    if (first >= d.count) {
        fprintf(stderr, "neocog-photogen: --first %u: the set has %u digits\n", first, d.count);
        nc_dataset_fini(&d);
        return 2;
    }
    uint32_t avail = d.count - first;
    if (count && count < avail)
        avail = count;
    if (!d.labels) {
        fprintf(stderr, "neocog-photogen: %s: no labels\n", data);
        nc_dataset_fini(&d);
        return 1;
    }

    int rc = 1;
    FILE *truth = NULL;
    tjhandle tj = NULL;
    uint32_t *order = malloc((size_t)avail * sizeof *order);
    char tpath[4096];
    if (!order) {
        fprintf(stderr, "neocog-photogen: out of memory\n");
        goto done;
    }
    if (!truth_path) {
        snprintf(tpath, sizeof tpath, "%s/truth.tsv", out_dir);
        truth_path = tpath;
    }
    if (!(truth = fopen(truth_path, append ? "a" : "w"))) {
        fprintf(stderr, "neocog-photogen: %s: %s\n", truth_path, strerror(errno));
        goto done;
    }
    if (ftell(truth) == 0)
        fprintf(truth, "# neocog-photogen: file, text (reading order), digit ink boxes x,y,w,h, "
                       "variations\n# file\ttext\tboxes\tvariations\n");
    if ((format == FMT_JPEG || patch_prefix) && !(tj = tjInitCompress())) {
        fprintf(stderr, "neocog-photogen: %s\n", tjGetErrorStr());
        goto done;
    }
    fprintf(truth, "# --set %s --first %u --count %u --seed %llu --n %u --hand-share %.2f",
            train ? "train" : "test", first, avail, (unsigned long long)seed, n_photos,
            pp.hand_share);
    if (strings)
        fprintf(truth, " --strings --digits %u-%u --lines %u", dmin, dmax, pp.lines);
    fputc('\n', truth);

    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    if (!rng)
        rng = 1;
    /* a seeded order of the digits, walked without repeats */
    for (uint32_t i = 0; i < avail; i++)
        order[i] = first + i;
    for (uint32_t i = avail - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(nc_rng_next(&rng) % (i + 1)), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    uint32_t next = 0;
    nc_render_source src = { d.pixels, d.labels, d.count, d.rows, d.cols };
    const char *ext = format == FMT_PNG ? "png" : format == FMT_PGM ? "pgm" : "jpg";
    for (uint32_t f = 0; f < n_photos; f++) {
        uint32_t n = strings ? dmin + (uint32_t)(nc_rng_next(&rng) % (dmax - dmin + 1)) : 1;
        uint32_t idx[NC_PHOTO_MAX_DIGITS];
        for (uint32_t k = 0; k < n; k++) {
            idx[k] = order[next];
            next = (next + 1) % avail;
        }
        nc_image *img = NULL;
        nc_photo_truth t;
        int err = nc_photo_render(&pp, &src, idx, n, &rng, &img, &t);
        if (err < 0) {
            fprintf(stderr, "neocog-photogen: photo %u: %s\n", f, nc_strerror(err));
            goto done;
        }
        char name[512], path[4096 + 512], desc[512];
        snprintf(name, sizeof name, "%s-%04u.%s", prefix, f, ext);
        snprintf(path, sizeof path, "%s/%s", out_dir, name);
        err = write_photo(path, format, tj, img, quality ? (int)quality : (int)t.quality);
        if (quality)
            t.quality = quality;
        nc_photo_describe(&t, img->width, img->height, desc, sizeof desc);
        if (!err && patch_prefix)
            err = patch_add(&ps, tj, img, (int)t.quality, t.labels[0]);
        nc_image_free(img);
        if (err < 0) {
            fprintf(stderr, "neocog-photogen: photo %u: %s\n", f, nc_strerror(err));
            goto done;
        }
        fprintf(truth, "%s\t", name);
        for (uint32_t k = 0; k < t.count; k++)
            fputc('0' + t.labels[k] % 10, truth);
        fputc('\t', truth);
        for (uint32_t k = 0; k < t.count; k++)
            fprintf(truth, "%s%u,%u,%u,%u", k ? ";" : "", t.boxes[k].x, t.boxes[k].y,
                    t.boxes[k].width, t.boxes[k].height);
        fprintf(truth, "\t%s%s\n", desc, format == FMT_JPEG ? "" : ",lossless");
    }
    if (patch_prefix) {
        nc_dataset pd = { ps.count, 28, 28, ps.pixels, ps.labels };
        int err = nc_file_write_idx(patch_prefix, &pd);
        if (err < 0) {
            fprintf(stderr, "neocog-photogen: %s: %s\n", patch_prefix, nc_strerror(err));
            goto done;
        }
        fprintf(stderr, "neocog-photogen: %u patches in %s-*-idx?-ubyte (%u photos with no "
                        "character found)\n", ps.count, patch_prefix, ps.empty);
    }
    rc = 0;
done:
    free(ps.pixels);
    free(ps.labels);
    if (truth && fclose(truth) != 0 && rc == 0) {
        fprintf(stderr, "neocog-photogen: %s: %s\n", truth_path, strerror(errno));
        rc = 1;
    }
    if (tj)
        tjDestroy(tj);
    free(order);
    nc_dataset_fini(&d);
    return rc;
}

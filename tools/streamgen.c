/* tools/neocog-streamgen — synthetic camera streams of handwritten digit
 * strings, for the segmentation and `neocog camera` test benches.
 *
 *   neocog-streamgen --data DIR --frames N [--size 640x480|1280x720|WxH]
 *       [--digits 8] [--strings 2] [--out stream.mjpeg] [--truth truth.tsv]
 *       [--pgm-dir DIR] [--seed S] [--quality Q] [--polarity dark|light|mixed]
 *       [--heights 24-60] [--touch P] [--no-clutter]
 *       [--set test|train] [--first K] [--count N] [--patches PREFIX] [--time]
 *       [--time-pause MS [--time-spin]]
 *   neocog-streamgen --unipen FILE.jsonl.gz --frames N [--text codes|words|phrases|mixed]
 *       [--writers train|val|all] [--chars C] [the frame options above]
 *
 * DIR holds the MNIST test set (t10k-images-idx3-ubyte[.gz] and its labels)
 * or the repository's fixture (tests/data, mnist-t1k-*).  By default only
 * test digits are used, so models trained on the MNIST training set never
 * saw them; --set train draws from the training set (train-images-idx3-
 * ubyte[.gz]) instead, which is what --patches wants.  --count N draws from
 * the set's digits K .. K+N-1 only (K from --first, default 0): `--set train
 * --count 50000` keeps a trainer's validation digits (50000-59999) out of its
 * patches, and `--set train --first 50000` renders streams of exactly those
 * validation digits, to choose between models without the test digits.
 *
 * --patches PREFIX: every frame also goes through a JPEG round trip at its
 * quality and core/segment with the daemon's parameters; each digit whose
 * box matches its truth box one to one is prepared MNIST-style (28x28,
 * light ink, 20-pixel box, centre of mass in the middle) and kept with its
 * true label; PREFIX-images-idx3-ubyte and PREFIX-labels-idx1-ubyte get
 * them (the MNIST format).  Refused with --set test: patches are training
 * data, and the test digits must stay unseen.
 * --time: the daemon's per-frame CPU stages (JPEG decode, binarisation,
 * component labelling, whole segmentation, preparation of the digits),
 * fastest of 5 runs per frame, averaged over frames, on stderr; then every
 * run's decode + segmentation + prep (the daemon's prepare step) as p50,
 * p99 and max.  --time-pause MS (implies --time) sleeps MS before each run,
 * as frames arrive from a camera, so the runs start from idle; with
 * --time-spin it spins on the clock instead, so the core never idles.
 * Frames are rendered by streamgen_render.c (see there for what a frame
 * holds); --out writes them as MJPEG (concatenated greyscale JFIFs, what
 * `ffmpeg -f mjpeg` reads) at --quality, or at a per-frame quality drawn
 * from 60..90 like a camera's; --pgm-dir writes frame_NNNNNN.pgm too.
 *
 * --unipen FILE renders strings of characters instead of digits
 * (streamgen_chars.h): codes like AB-1294-XK, words, or short phrases with
 * punctuation (--text, default mixed, drawn per string), at most C
 * characters besides spaces (--chars, default 16), from the pen strokes of
 * FILE (shared/data/unipen's), each string by one writer of the fixed split
 * (--writers, default val: writers no model or setting was chosen on;
 * tune on train).  --heights is then the capital height.  --digits,
 * --data, --set, --first, --count and --patches are for digits only.
 *
 * --check: every frame also goes through a JPEG round trip and core/segment
 * with the daemon's parameters for a whole frame, in character mode with
 * --unipen (digit mode without), and is compared with its truth
 * (streamgen_check.h): the share of characters found by kind, of gaps
 * judged right, of strings entirely right, as a table on stderr.
 * --check-digits: the same in digit mode whatever the strings (to compare).
 *
 * Truth file, tab-separated, one row per string, strings top to bottom:
 *   frame  string  text  polarity  box  digit_boxes
 * box is x,y,w,h; digit_boxes is one x,y,w,h per digit separated by ';'
 * (each the box of the digit's source pixels above 64, as mapped into the
 * frame).  With --unipen, text is the string's characters with a space
 * at each word gap and the boxes are one per character, spaces not
 * counted: each the box of the character's ink where the pen covers more
 * than a quarter of a pixel, as mapped into the frame.
 * Lines starting with '#' are comments.
 * Exit status: 0 done, 1 failure, 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#include "dataset.h"
#include "fileio.h"
#include "opts.h"
#include "pgm.h"
#include "segment.h"
#include "streamgen_chars.h"
#include "streamgen_check.h"
#include "streamgen_patches.h"
#include "streamgen_render.h"

#define MAX_DATA_BYTES (64u << 20)

enum {
    O_DATA, O_UNIPEN, O_FRAMES, O_SIZE, O_DIGITS, O_STRINGS, O_OUT, O_TRUTH, O_PGM_DIR,
    O_SEED, O_QUALITY, O_POLARITY, O_HEIGHTS, O_TOUCH, O_NO_CLUTTER, O_SET, O_FIRST,
    O_COUNT, O_PATCHES, O_TIME, O_TIME_PAUSE, O_TIME_SPIN, O_CHECK, O_CHECK_DIGITS,
    O_TEXT, O_WRITERS, O_CHARS, O_END,
};

static const nc_opt opt_table[] = {
    [O_DATA] = { "data", "DIR", "MNIST (t10k-* or train-* IDX files) or tests/data" },
    [O_UNIPEN] = { "unipen", "FILE", "character strings from these pen strokes (.jsonl.gz)" },
    [O_FRAMES] = { "frames", "N", "frames to render (required)" },
    [O_SIZE] = { "size", "WxH", "frame size, 64..8192 a side (default 640x480)" },
    [O_DIGITS] = { "digits", "D", "digits a string (default 8)" },
    [O_STRINGS] = { "strings", "S", "strings a frame (default 2)" },
    [O_OUT] = { "out", "FILE.mjpeg|-", "write the frames as MJPEG" },
    [O_TRUTH] = { "truth", "FILE.tsv", "write the truth file" },
    [O_PGM_DIR] = { "pgm-dir", "DIR", "write frame_NNNNNN.pgm too" },
    [O_SEED] = { "seed", "S", "the random seed (default 1)" },
    [O_QUALITY] = { "quality", "Q", "JPEG quality 1..100 (default: drawn per frame, 60-90)" },
    [O_POLARITY] = { "polarity", "dark|light|mixed", "the ink (default mixed)" },
    [O_HEIGHTS] = { "heights", "MIN-MAX", "digit (or capital) heights in pixels" },
    [O_TOUCH] = { "touch", "P", "the chance that neighbouring digits touch" },
    [O_NO_CLUTTER] = { "no-clutter", NULL, "plain paper: no lines, specks or shadows" },
    [O_SET] = { "set", "test|train", "which MNIST set the digits come from (default test)" },
    [O_FIRST] = { "first", "K", "draw from the set's digits K.. only" },
    [O_COUNT] = { "count", "N", "and from N of them" },
    [O_PATCHES] = { "patches", "PREFIX", "each digit the segmenter finds, prepared, as IDX\n"
                                         "training data (--set train)" },
    [O_TIME] = { "time", NULL, "time the daemon's per-frame CPU stages (stderr)" },
    [O_TIME_PAUSE] = { "time-pause", "MS", "--time, sleeping MS (0..10000) before each run" },
    [O_TIME_SPIN] = { "time-spin", NULL, "with --time-pause: spin on the clock instead" },
    [O_CHECK] = { "check", NULL, "compare core/segment's findings with the truth" },
    [O_CHECK_DIGITS] = { "check-digits", NULL, "the same in digit mode whatever the strings" },
    [O_TEXT] = { "text", "codes|words|phrases|mixed", "--unipen: what the strings say\n"
                                                       "(default mixed)" },
    [O_WRITERS] = { "writers", "train|val|all", "--unipen: whose strokes (default val)" },
    [O_CHARS] = { "chars", "C", "--unipen: characters a string at most (default 16)" },
    [O_END] = { NULL, NULL, NULL },
};

static nc_opts opts = {
    .prog = "neocog-streamgen",
    .usage =
        "usage: neocog-streamgen --data DIR --frames N [--size WxH] [--digits D]\n"
        "         [--strings S] [--out FILE.mjpeg|-] [--truth FILE.tsv] [--pgm-dir DIR]\n"
        "         [--seed S] [--quality Q] [--polarity dark|light|mixed]\n"
        "         [--heights MIN-MAX] [--touch P] [--no-clutter]\n"
        "         [--set test|train] [--first K] [--count N] [--patches PREFIX] [--time]\n"
        "         [--time-pause MS [--time-spin]] [--check | --check-digits]\n"
        "       neocog-streamgen --unipen FILE.jsonl.gz --frames N\n"
        "         [--text codes|words|phrases|mixed] [--writers train|val|all] [--chars C]\n"
        "         [the frame options]\n"
        "Synthetic camera streams of handwritten strings, with their truth; one of\n"
        "--out, --pgm-dir, --patches, --time or --check says what to do with them.\n",
    .table = opt_table,
};

/* The set's images and labels (nc_file_read_mnist's names). */
static int load_digits(const char *dir, int train, nc_dataset *d)
{
    char path[4096];
    int err = nc_file_read_mnist(dir, train, MAX_DATA_BYTES, d, path, sizeof path);
    if (err < 0 && !path[0])
        fprintf(stderr, "neocog-streamgen: %s: no MNIST %s images (%s-images-idx3-ubyte.gz and the "
                        "like)\n", dir, train ? "training" : "test", train ? "train" : "t10k");
    else if (err < 0)
        fprintf(stderr, "neocog-streamgen: %s (with its labels): %s\n", path, nc_strerror(err));
    return err;
}

/* The stroke set of FILE and its index of the chosen writers. */
static int load_strokes(const char *path, uint32_t writers, nc_unipen *u, nc_text_source *src)
{
    uint8_t *gz = NULL;
    size_t len = 0, line = 0;
    int err = nc_file_read(path, 256u << 20, &gz, &len);
    if (err < 0) {
        fprintf(stderr, "neocog-streamgen: %s: %s\n", path, strerror(-err));
        return err;
    }
    err = nc_unipen_parse_gz(gz, len, u, &line);
    free(gz);
    if (err < 0) {
        fprintf(stderr, "neocog-streamgen: %s: line %zu: %s\n", path, line, nc_strerror(err));
        return err;
    }
    if ((err = nc_text_source_init(src, u, writers)) < 0) {
        fprintf(stderr, "neocog-streamgen: %s: %s\n", path,
                err == -ENOENT ? "these writers lack a character the texts use"
                               : nc_strerror(err));
        nc_unipen_fini(u);
    }
    return err;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --time's second line: every run's decode + segmentation + prep (what the
 * daemon's prepare_us covers), as a distribution, since a camera's p99
 * latency lives in its slowest runs, not in the fastest. */
static void print_tail(nc_stage_times *t)
{
    if (!t->n_runs)
        return;
    const uint32_t n = t->n_runs;
    qsort(t->runs, n, sizeof *t->runs, cmp_double);
    const double p50 = t->runs[n / 2];
    uint32_t slow = 0;
    for (uint32_t i = 0; i < n; i++)
        slow += t->runs[i] > 3.0 * p50;
    fprintf(stderr, "neocog-streamgen: every run's decode + segmentation + prep (%u runs, %u ms "
                    "apart%s): p50 %.3f ms, p99 %.3f ms, max %.3f ms, %u over 3x the median\n",
            n, t->pause_ms, t->pause_ms && t->pause_spin ? ", spinning" : "", p50,
            t->runs[(size_t)(0.99 * (n - 1))], t->runs[n - 1], slow);
}

int main(int argc, char **argv)
{
    const char *data = NULL, *out_path = NULL, *truth_path = NULL, *pgm_dir = NULL;
    const char *patches = NULL, *unipen = NULL;
    uint32_t text_kind = NC_TEXT_MIXED, writers = NC_TEXT_WRITERS_VAL, max_chars = 16;
    int train = 0, timing = 0, check = 0, check_digits = 0;
    uint32_t time_pause = 0;
    int time_spin = 0;
    uint32_t frames = 0, W = 640, H = 480, quality = 0, count = 0, first = 0;
    uint64_t seed = 1;
    nc_render_params rp;
    nc_render_params_default(&rp);
    for (int o; (o = nc_opts_next(&opts, argc, argv)) != NC_OPTS_END;) {
        const char *v = opts.value;
        char *end = NULL, tail;
        int bad = 0;
        switch (o) {
        case NC_OPTS_HELP: nc_opts_usage(&opts, stdout); return 0;
        case NC_OPTS_ERROR: return nc_opts_fail(&opts);
        case O_NO_CLUTTER: rp.clutter = 0; break;
        case O_TIME: timing = 1; break;
        case O_CHECK: check = 1; break;
        case O_CHECK_DIGITS: check = check_digits = 1; break;
        case O_TIME_SPIN: time_spin = 1; break;
        case O_TIME_PAUSE:
            timing = 1;
            bad = nc_opts_u32(v, 0, 10000, &time_pause);
            break;
        case O_DATA: data = v; break;
        case O_OUT: out_path = v; break;
        case O_TRUTH: truth_path = v; break;
        case O_PGM_DIR: pgm_dir = v; break;
        case O_PATCHES: patches = v; break;
        case O_UNIPEN: unipen = v; break;
        case O_TEXT:
            if (!strcmp(v, "codes")) text_kind = NC_TEXT_CODES;
            else if (!strcmp(v, "words")) text_kind = NC_TEXT_WORDS;
            else if (!strcmp(v, "phrases")) text_kind = NC_TEXT_PHRASES;
            else if (!strcmp(v, "mixed")) text_kind = NC_TEXT_MIXED;
            else bad = 1;
            break;
        case O_WRITERS:
            if (!strcmp(v, "train")) writers = NC_TEXT_WRITERS_TRAIN;
            else if (!strcmp(v, "val")) writers = NC_TEXT_WRITERS_VAL;
            else if (!strcmp(v, "all")) writers = NC_TEXT_WRITERS_ALL;
            else bad = 1;
            break;
        case O_CHARS:
            bad = nc_opts_u32(v, 4, NC_RENDER_MAX_CHARS, &max_chars);
            break;
        case O_SET:
            if (!strcmp(v, "train")) train = 1;
            else if (!strcmp(v, "test")) train = 0;
            else bad = 1;
            break;
        case O_FRAMES: bad = nc_opts_u32(v, 0, UINT32_MAX, &frames); break;
        case O_COUNT: bad = nc_opts_u32(v, 1, UINT32_MAX, &count); break;
        case O_FIRST: bad = nc_opts_u32(v, 0, UINT32_MAX, &first); break;
        case O_DIGITS: bad = nc_opts_u32(v, 0, UINT32_MAX, &rp.digits); break;
        case O_STRINGS: bad = nc_opts_u32(v, 0, UINT32_MAX, &rp.strings); break;
        case O_QUALITY: bad = nc_opts_u32(v, 1, 100, &quality); break;
        case O_SEED:
            errno = 0;
            seed = strtoull(v, &end, 0);
            bad = errno || end == v || *end || *v == '-';
            break;
        case O_TOUCH:
            rp.touch_prob = strtof(v, &end);
            bad = end == v || *end;
            break;
        case O_SIZE: bad = sscanf(v, "%ux%u%c", &W, &H, &tail) != 2; break;
        case O_HEIGHTS:
            bad = sscanf(v, "%u-%u%c", &rp.min_height, &rp.max_height, &tail) != 2;
            break;
        case O_POLARITY:
            if (!strcmp(v, "dark")) rp.polarity = NC_RENDER_DARK_INK;
            else if (!strcmp(v, "light")) rp.polarity = NC_RENDER_LIGHT_INK;
            else if (!strcmp(v, "mixed")) rp.polarity = NC_RENDER_MIXED;
            else bad = 1;
            break;
        }
        if (bad) {
            nc_opts_bad_value(&opts, o, NULL);
            return nc_opts_fail(&opts);
        }
    }
    if (opts.next < argc) {
        nc_opts_error(&opts, "unexpected argument '%s'", argv[opts.next]);
        return nc_opts_fail(&opts);
    }
    if (!(data || unipen) || (data && unipen) || !frames) {
        nc_opts_error(&opts, "give --frames N and one of --data DIR or --unipen FILE");
        return nc_opts_fail(&opts);
    }
    if (!out_path && !pgm_dir && !patches && !timing && !check) {
        nc_opts_error(&opts, "nothing to do: give --out, --pgm-dir, --patches, --time or --check");
        return nc_opts_fail(&opts);
    }
    if (W < 64 || H < 64 || W > 8192 || H > 8192) {
        nc_opts_error(&opts, "--size %ux%u: each side 64..8192", W, H);
        return nc_opts_fail(&opts);
    }
    if (unipen && patches) {
        fprintf(stderr, "neocog-streamgen: --patches is for digit strings (--data)\n");
        return 2;
    }
    if (patches && !train) {
        fprintf(stderr, "neocog-streamgen: --patches makes training data: give --set train "
                        "(the test digits must stay unseen)\n");
        return 2;
    }

    nc_dataset d = { 0 };
    nc_unipen u = { 0 };
    nc_text_source ts = { 0 };
    if (unipen) {
        if (load_strokes(unipen, writers, &u, &ts) < 0)
            return 1;
        ts.kind = text_kind;
        ts.max_chars = max_chars;
    } else if (load_digits(data, train, &d) < 0)
        return 1;
    if (!unipen && first >= d.count) {
        fprintf(stderr, "neocog-streamgen: --first %u: the set has %u digits\n", first, d.count);
        nc_dataset_fini(&d);
        return 2;
    }
    if (first) {                /* digits first.. to the front; fini frees it all */
        const size_t px = (size_t)d.rows * d.cols;
        d.count -= first;
        memmove(d.pixels, d.pixels + (size_t)first * px, (size_t)d.count * px);
        memmove(d.labels, d.labels + first, d.count);
    }
    if (count && count < d.count)
        d.count = count;
    nc_patch_set ps = { 0 };
    nc_stage_times times = { .pause_ms = time_pause, .pause_spin = time_spin };
    nc_segmenter *seg = NULL;
    nc_image *decoded = NULL;
    tjhandle tjd = NULL;
    int rc = 1;
    FILE *out = NULL, *truth = NULL;
    tjhandle tj = NULL;
    nc_image *frame = NULL;
    unsigned char *jbuf = NULL;
    if (nc_image_new(W, H, &frame) < 0) {
        fprintf(stderr, "neocog-streamgen: out of memory\n");
        goto done;
    }
    if (out_path) {
        out = strcmp(out_path, "-") ? fopen(out_path, "wb") : stdout;
        if (!out) {
            fprintf(stderr, "neocog-streamgen: %s: %s\n", out_path, strerror(errno));
            goto done;
        }
    }
    nc_seg_check chk = { 0 };
    if ((out || patches || timing || check) && !(tj = tjInitCompress())) {
        fprintf(stderr, "neocog-streamgen: %s\n", tjGetErrorStr());
        goto done;
    }
    if ((patches || timing || check) &&
        (nc_segmenter_new(&seg) < 0 || nc_image_new(W, H, &decoded) < 0 ||
         !(tjd = tjInitDecompress()))) {
        fprintf(stderr, "neocog-streamgen: out of memory\n");
        goto done;
    }
    if (truth_path) {
        if (!(truth = fopen(truth_path, "w"))) {
            fprintf(stderr, "neocog-streamgen: %s: %s\n", truth_path, strerror(errno));
            goto done;
        }
        if (unipen)
            fprintf(truth, "# neocog-streamgen %ux%u frames=%u strings=%u text=%s writers=%s "
                           "chars=%u seed=%llu\n"
                           "# frame\tstring\ttext\tpolarity\tbox\tchar_boxes\n",
                    W, H, frames, rp.strings,
                    (const char *[]){ "codes", "words", "phrases", "mixed" }[text_kind],
                    (const char *[]){ "train", "val", "all" }[writers], max_chars,
                    (unsigned long long)seed);
        else
            fprintf(truth, "# neocog-streamgen %ux%u frames=%u strings=%u digits=%u seed=%llu\n"
                           "# frame\tstring\ttext\tpolarity\tbox\tdigit_boxes\n",
                    W, H, frames, rp.strings, rp.digits, (unsigned long long)seed);
    }
    nc_render_source src = { d.pixels, d.labels, d.count, d.rows, d.cols };
    /* xorshift needs a non-zero state */
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    if (!rng)
        rng = 1;
    for (uint32_t f = 0; f < frames; f++) {
        nc_render_truth t;
        int err = unipen ? nc_render_text_frame(&rp, &ts, &rng, frame, &t)
                         : nc_render_frame(&rp, &src, &rng, frame, &t);
        if (err < 0) {
            fprintf(stderr, "neocog-streamgen: frame %u: %s (frame too small for "
                            "--strings/--digits/--heights?)\n", f, nc_strerror(err));
            goto done;
        }
        if (tj) {
            /* a buffer handed back in must come with its size; letting
             * TurboJPEG allocate afresh each frame keeps that simple */
            tjFree(jbuf);
            jbuf = NULL;
            unsigned long jlen = 0;
            int q = quality ? (int)quality : 60 + (int)(rng % 31);
            if (tjCompress2(tj, frame->pixels, (int)W, 0, (int)H, TJPF_GRAY, &jbuf, &jlen,
                            TJSAMP_GRAY, q, TJFLAG_FASTDCT) < 0 ||
                (out && fwrite(jbuf, 1, jlen, out) != jlen)) {
                fprintf(stderr, "neocog-streamgen: frame %u: %s\n", f, tjGetErrorStr());
                goto done;
            }
            /* what the daemon would see of this frame */
            if (patches &&
                (tjDecompress2(tjd, jbuf, jlen, decoded->pixels, (int)W, 0, (int)H, TJPF_GRAY,
                               0) < 0 ||
                 (err = nc_patches_add(seg, decoded, &t, &ps)) < 0)) {
                fprintf(stderr, "neocog-streamgen: frame %u: patches: %s\n", f,
                        err < 0 ? nc_strerror(err) : tjGetErrorStr());
                goto done;
            }
            if (check &&
                (tjDecompress2(tjd, jbuf, jlen, decoded->pixels, (int)W, 0, (int)H, TJPF_GRAY,
                               0) < 0 ||
                 (err = nc_seg_check_frame(seg, decoded, &t,
                                           unipen && !check_digits
                                               ? NC_SEGMENT_CHARSET_TEXT
                                               : NC_SEGMENT_CHARSET_DIGITS, &chk)) < 0)) {
                fprintf(stderr, "neocog-streamgen: frame %u: check: %s\n", f,
                        err < 0 ? nc_strerror(err) : tjGetErrorStr());
                goto done;
            }
            if (timing && (err = nc_stage_time(seg, jbuf, jlen, decoded, &times)) < 0) {
                fprintf(stderr, "neocog-streamgen: frame %u: timing: %s\n", f, nc_strerror(err));
                goto done;
            }
        }
        if (pgm_dir) {
            char path[4096];
            uint8_t *pb = NULL;
            size_t pl = 0;
            snprintf(path, sizeof path, "%s/frame_%06u.pgm", pgm_dir, f);
            if ((err = nc_pgm_encode(frame, &pb, &pl)) < 0 ||
                (err = nc_file_write_atomic(path, pb, pl)) < 0) {
                fprintf(stderr, "neocog-streamgen: %s: %s\n", path, strerror(-err));
                free(pb);
                goto done;
            }
            free(pb);
        }
        for (uint32_t s = 0; truth && s < t.string_count; s++) {
            const nc_render_string *st = &t.strings[s];
            fprintf(truth, "%u\t%u\t", f, s);
            for (uint32_t k = 0; k < st->count; k++) {
                if (unipen && st->digits[k].space_before)
                    fputc(' ', truth);
                fputc(unipen ? st->digits[k].label : '0' + st->digits[k].label % 10, truth);
            }
            fprintf(truth, "\t%s\t%u,%u,%u,%u\t", t.polarity ? "light" : "dark",
                    st->box.x, st->box.y, st->box.width, st->box.height);
            for (uint32_t k = 0; k < st->count; k++) {
                nc_rect b = st->digits[k].box;
                fprintf(truth, "%s%u,%u,%u,%u", k ? ";" : "", b.x, b.y, b.width, b.height);
            }
            fputc('\n', truth);
        }
    }
    if (patches) {
        int err = nc_patches_write(&ps, patches);
        if (err < 0) {
            fprintf(stderr, "neocog-streamgen: %s-*-ubyte: %s\n", patches, nc_strerror(err));
            goto done;
        }
        fprintf(stderr, "neocog-streamgen: %u patches from %u frames (%u digits drawn, %u "
                        "segmented pieces matched no digit one to one) -> %s-images-idx3-ubyte, "
                        "%s-labels-idx1-ubyte\n", ps.count, ps.frames, ps.digits, ps.unmatched,
                patches, patches);
    }
    if (check)
        nc_seg_check_print(stderr, &chk);
    if (timing && times.frames) {
        double n = times.frames;
        fprintf(stderr, "neocog-streamgen: per frame (%ux%u, %u frames, fastest of 5 runs): "
                        "JPEG decode %.3f ms, binarise %.3f ms, components %.3f ms, whole "
                        "segmentation %.3f ms (max %.3f), prep of its digits %.3f ms\n",
                W, H, times.frames, times.decode_ms / n, times.binarise_ms / n,
                times.components_ms / n, times.segment_ms / n, times.segment_max_ms,
                times.prep_ms / n);
        print_tail(&times);
    }
    rc = 0;
done:
    nc_patches_free(&ps);
    nc_stage_times_free(&times);
    nc_segmenter_free(seg);
    nc_image_free(decoded);
    if (tjd)
        tjDestroy(tjd);
    if (out && out != stdout && fclose(out) != 0 && rc == 0) {
        fprintf(stderr, "neocog-streamgen: %s: %s\n", out_path, strerror(errno));
        rc = 1;
    } else if (out == stdout && fflush(stdout) != 0)
        rc = 1;
    if (truth && fclose(truth) != 0 && rc == 0) {
        fprintf(stderr, "neocog-streamgen: %s: %s\n", truth_path, strerror(errno));
        rc = 1;
    }
    if (tj)
        tjDestroy(tj);
    tjFree(jbuf);
    nc_image_free(frame);
    nc_dataset_fini(&d);
    nc_text_source_fini(&ts);
    nc_unipen_fini(&u);
    return rc;
}

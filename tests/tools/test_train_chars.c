/* tests/tools/test_train_chars.c — a character set other than MNIST's
 * digits through neocog-train, as a user runs it: twelve classes ("0".."9",
 * "x", "X"; x and X are one of eval's ambiguity groups) in IDX files with
 * a classes file, as neocog-unipen writes them.
 *
 * `cnn --train --val --no-test` trains a small column of 12 outputs a few
 * epochs: the file records the 12 labels, the data note and no test error;
 * its loss falls.  An --arch of 10 outputs, --train without --no-test or
 * --test, and a --val whose classes differ are refused.  `calibrate --idx`
 * fits the file's rule on the set and writes a file the engine opens with
 * the labels kept; `eval --idx` prints the character report (kinds, top-3,
 * the groups, the confusions) and refuses a set whose classes are not the
 * model's, and its --sheet captions each error with the true label and the
 * answer, letters included.  --epoch-blocks trains each epoch on one
 * rendering of the set.  Last the calibrated file answers an image through the engine
 * table and core/backend/answer with all 12 candidates, each once, best first.
 * Usage: test_train_chars NEOCOG-TRAIN. */
#include "cnn_file.h"
#include "fixture.h"
#include "run_capture.h"
#include "test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "answer.h"
#include "backend.h"
#include "cnn.h"
#include "dataset.h"
#include "decode.h"
#include "fileio.h"
#include "glyphs.h"
#include "image.h"
#include "modelfile.h"

#define C 12u
#define ARCH12 "1x29x29-4C4-MP2-6C5-MP3-12N"

/* prefix-*: the fixture's digits, every fourth one transposed and labelled
 * "x" (from an even digit) or "X" (odd), and the classes file `classes`:
 * count digits from each of first[0..n_ranges), one range after another. */
static int make_ranges(const char *prefix, const uint32_t *first, uint32_t n_ranges,
                       uint32_t count, const char *classes)
{
    nc_dataset fx = { 0 }, d = { 0 };
    int err = nc_test_fixture(&fx);
    if (err)
        return err;
    const size_t px = (size_t)fx.rows * fx.cols;
    const uint32_t total = n_ranges * count;
    d = (nc_dataset){ total, fx.rows, fx.cols, malloc(total * px), malloc(total) };
    if (!d.pixels || !d.labels)
        err = -ENOMEM;
    for (uint32_t j = 0; !err && j < total; j++) {
        const uint32_t i = j % count, r = j / count;
        const uint32_t k = (first[r] + i) % fx.count;
        const uint8_t *src = fx.pixels + k * px;
        uint8_t *dst = d.pixels + j * px;
        const int odd = (first[r] + i) % 4 == 0;
        for (uint32_t y = 0; y < fx.rows; y++)
            for (uint32_t x = 0; x < fx.cols; x++)
                dst[y * fx.cols + x] = odd ? src[x * fx.cols + y] : src[y * fx.cols + x];
        d.labels[j] = odd ? (uint8_t)(10 + fx.labels[k] % 2) : fx.labels[k];
    }
    if (!err)
        err = nc_file_write_idx(prefix, &d);
    char p[512];
    snprintf(p, sizeof p, "%s-classes.txt", prefix);
    if (!err)
        err = nc_file_write_atomic(p, (const uint8_t *)classes, strlen(classes));
    nc_dataset_fini(&d);
    nc_dataset_fini(&fx);
    return err;
}

static int make_set(const char *prefix, uint32_t first, uint32_t count, const char *classes)
{
    return make_ranges(prefix, &first, 1, count, classes);
}

/* Run the tool with stderr captured with stdout. */
static int run(const char *tool, const char *const *args, char **ret_out)
{
    const char *argv[48] = { "/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", tool };
    int n = 4;
    for (int i = 0; args[i] && n < 47; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char *out = NULL;
    int status = nc_run_capture(argv, NULL, &out);
    fprintf(stderr, "%s", out ? out : "");
    if (ret_out)
        *ret_out = out;
    else
        free(out);
    return status;
}

static nc_backend *open_file(const char *path)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_backend *be = NULL;
    if (nc_file_read(path, 64u << 20, &buf, &len) == 0)
        nc_backend_open(&nc_backend_cpu, buf, len, 0, &be);
    free(buf);
    return be;
}

/* --epoch-blocks 2 over S then T (two renderings of one size): epoch 1
 * trains on S alone, epoch 2 on T alone.  So over S then S it is S's own
 * run for any epochs, bit for bit; over S then T, S's own run for one
 * epoch and another for two; the record says so; sizes that do not divide
 * and a set without --train are refused. */
static void test_epoch_blocks(const char *tool, const char *dir, const char *va,
                              const char *classes)
{
    char s[256], ss[256], st[256], m[4][256];
    snprintf(s, sizeof s, "%s/blk-s", dir);
    snprintf(ss, sizeof ss, "%s/blk-ss", dir);
    snprintf(st, sizeof st, "%s/blk-st", dir);
    static const uint32_t r_ss[2] = { 0, 0 }, r_st[2] = { 0, 200 };
    REQUIRE(make_set(s, 0, 200, classes) == 0);
    REQUIRE(make_ranges(ss, r_ss, 2, 200, classes) == 0);
    REQUIRE(make_ranges(st, r_st, 2, 200, classes) == 0);
    /* m[0]: S, m[1]: S then S in blocks, m[2]: S then T in blocks, m[3]: S then T whole */
    const char *set[4] = { s, ss, st, st };
    const char *blocks[4] = { "1", "2", "2", "1" };
    nc_cnn *p[2][4] = { { NULL } };
    for (int e = 0; e < 2; e++)
        for (int k = 0; k < 4; k++) {
            snprintf(m[k], sizeof m[k], "%s/blk-%d.ncm", dir, k);
            const char *args[] = { "cnn", "--train", set[k], "--val", va, "--no-test",
                                   "--arch", ARCH12, "--epochs", e ? "2" : "1", "--batch",
                                   "4", "--softmax", "3", "--seed", "3", "--keep-last",
                                   "--epoch-blocks", blocks[k], "--out", m[k], NULL };
            CHECK_INT_EQ(run(tool, args, NULL), 0);
            p[e][k] = nc_test_read_cnn(m[k], NULL);
            CHECK(p[e][k] != NULL);
        }
    for (int e = 0; e < 2; e++) {
        if (!p[e][0] || !p[e][1] || !p[e][2] || !p[e][3])
            continue;
        CHECK_MSG(nc_test_same_params(p[e][1], p[e][0]),
                  "%d epochs: S then S in two blocks is not S's run", e + 1);
        CHECK_MSG(nc_test_same_params(p[e][2], p[e][0]) == !e,
                  "%d epochs: S then T in two blocks %s S's run", e + 1,
                  e ? "is" : "is not");
        CHECK_MSG(!nc_test_same_params(p[e][3], p[e][0]),
                  "%d epochs: S then T whole is S's run", e + 1);
    }
    for (int e = 0; e < 2; e++)
        for (int k = 0; k < 4; k++)
            nc_cnn_free(p[e][k]);
    nc_backend *be = open_file(m[2]);
    CHECK(be && strstr(be->info.data, "(2 renderings of 200, one an epoch)"));
    nc_backend_close(be);
    const char *odd[] = { "cnn", "--train", st, "--val", va, "--no-test", "--arch", ARCH12,
                          "--epochs", "1", "--epoch-blocks", "3", "--out", m[0], NULL };
    CHECK_INT_EQ(run(tool, odd, NULL), 1);
    const char *mnist[] = { "cnn", "--epoch-blocks", "2", "--out", m[0], NULL };
    CHECK_INT_EQ(run(tool, mnist, NULL), 2);
    const char *limit[] = { "cnn", "--train", st, "--val", va, "--no-test", "--arch", ARCH12,
                            "--epoch-blocks", "2", "--limit", "100", "--out", m[0], NULL };
    CHECK_INT_EQ(run(tool, limit, NULL), 2);
}

/* The first and last "loss X" of the progress lines. */
static int losses(const char *out, double *first, double *last)
{
    int n = 0;
    for (const char *s = out; (s = strstr(s, "epoch ")) != NULL; s++) {
        unsigned e, of;
        const char *k = strstr(s, "loss ");
        double x;
        if (sscanf(s, "epoch %u/%u", &e, &of) != 2 || !k || sscanf(k + 5, "%lf", &x) != 1)
            continue;
        if (!n++)
            *first = x;
        *last = x;
    }
    return n;
}

/* The caption character drawn at (x0, y0) of a gray sheet (eval's scale 2):
 * 1 when its pixels are glyph c's, 0 when not. */
static int caption_is(const nc_image *im, uint32_t x0, uint32_t y0, int c)
{
    for (uint32_t y = 0; y < NC_GLYPH_H; y++)
        for (uint32_t x = 0; x < NC_GLYPH_W; x++) {
            const uint32_t px = x0 + 2 * x, py = y0 + 2 * y;
            if (px >= im->width || py >= im->height)
                return 0;
            const int ink = im->pixels[(size_t)py * im->stride + px] < 200;
            if (ink != (int)(nc_glyph_row(c, y) >> (NC_GLYPH_W - 1 - x) & 1))
                return 0;
        }
    return 1;
}

/* `eval --sheet`: the tiles' captions are the labels, letters too (not the
 * dash a digit-only font drew for them).  The tile of every listed error
 * ("#N true T answer A", in tile order) is found at eval's geometry: ten
 * tiles a row, each image twice its size plus 8 px across and 16 down, the
 * true label at its caption's left, the answer 10 px right of it. */
static void check_sheet(const char *tool, const char *model, const char *set, const char *dir)
{
    char sheet[300];
    snprintf(sheet, sizeof sheet, "%s/sheet.png", dir);
    char *out = NULL;
    const char *args[] = { "eval", "--model", model, "--idx", set, "--sheet", sheet, NULL };
    CHECK_INT_EQ(run(tool, args, &out), 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_image *im = NULL;
    const nc_decode_limits lim = { 1u << 14, 1u << 26 };
    char why[128] = "";
    CHECK_INT_EQ(nc_file_read(sheet, 64u << 20, &buf, &len), 0);
    CHECK_INT_EQ(nc_decode_image(NC_DECODE_AUTO, buf, len, 0, 0, &lim, &im, why, sizeof why), 0);
    CHECK(im && im->width % 10 == 0);
    uint32_t letters = 0, tiles = 0;
    const char *o = out ? out : "";
    for (const char *l = strstr(o, "\n  #"); im && l; l = strstr(l + 1, "\n  #")) {
        unsigned idx;
        char t[8], a[8];
        if (sscanf(l, " #%u true %7s answer %7s", &idx, t, a) != 3)
            continue;
        const uint32_t tw = im->width / 10, side = (tw - 8) / 2, th = 2 * side + 16;
        const uint32_t x0 = (tiles % 10) * tw + 4, cy = (tiles / 10) * th + 2 + 2 * side + 2;
        CHECK_MSG(caption_is(im, x0, cy, t[0]) && caption_is(im, x0 + 10, cy, a[0]),
                  "tile %u (true %s, answer %s): its caption is not the labels", tiles, t, a);
        letters += t[0] == 'x' || t[0] == 'X' || a[0] == 'x' || a[0] == 'X';
        if (t[0] == 'x' || t[0] == 'X')
            CHECK(!caption_is(im, x0, cy, '-'));
        tiles++;
    }
    CHECK_MSG(tiles > 0 && letters > 0, "%u tiles listed, %u with a letter: %s", tiles, letters,
              o);
    nc_image_free(im);
    free(buf);
    free(out);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s NEOCOG-TRAIN\n", argv[0]);
        return 2;
    }
    const char *tool = argv[1];
    char dir[] = "/tmp/nc-train-chars-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char tr[256], va[256], other[256], model[256], cal[256];
    snprintf(tr, sizeof tr, "%s/chars-train", dir);
    snprintf(va, sizeof va, "%s/chars-val", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    snprintf(model, sizeof model, "%s/m12.ncm", dir);
    snprintf(cal, sizeof cal, "%s/m12-cal.ncm", dir);
    static const char classes[] = "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\nx\nX\n";
    CHECK_INT_EQ(make_set(tr, 0, 600, classes), 0);
    CHECK_INT_EQ(make_set(va, 600, 400, classes), 0);
    CHECK_INT_EQ(make_set(other, 600, 400, "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\ny\nY\n"), 0);

    /* training */
    char *out = NULL;
    const char *train[] = { "cnn", "--train", tr, "--val", va, "--no-test", "--arch", ARCH12,
                            "--epochs", "4", "--batch", "4", "--lr", "0.005", "--softmax", "3",
                            "--lr-decay", "0.9", "--seed", "5", "--data-note", "twelve test classes",
                            "--out", model, NULL };
    CHECK_INT_EQ(run(tool, train, &out), 0);
    double l0 = 0, l1 = 0;
    CHECK_INT_EQ(losses(out ? out : "", &l0, &l1), 4);
    CHECK_MSG(l1 < 0.8 * l0, "loss %g in the first epoch, %g in the last", l0, l1);
    free(out);
    nc_backend *be = open_file(model);
    CHECK(be != NULL);
    if (be) {
        CHECK_INT_EQ(be->info.n_classes, C);
        CHECK(!strcmp(be->info.labels[0], "0"));
        CHECK(!strcmp(be->info.labels[10], "x"));
        CHECK(!strcmp(be->info.labels[11], "X"));
        CHECK(strstr(be->info.data, "twelve test classes: chars-train 0-599") != NULL);
        CHECK(strstr(be->info.data, "validation chars-val, 400") != NULL);
        CHECK(be->info.test_error < 0.0);
        CHECK(strstr(be->info.command, "--train") != NULL);
    }
    nc_backend_close(be);

    test_epoch_blocks(tool, dir, va, classes);

    /* refusals */
    const char *ten[] = { "cnn", "--train", tr, "--val", va, "--no-test", "--arch",
                          "1x29x29-4C4-MP2-6C5-MP3-10N", "--epochs", "1", "--out", model, NULL };
    CHECK_INT_EQ(run(tool, ten, NULL), 1);
    const char *no_test[] = { "cnn", "--train", tr, "--arch", ARCH12, "--out", model, NULL };
    CHECK_INT_EQ(run(tool, no_test, NULL), 2);
    const char *mixed[] = { "cnn", "--train", tr, "--val", other, "--no-test", "--arch", ARCH12,
                            "--epochs", "1", "--out", model, NULL };
    CHECK_INT_EQ(run(tool, mixed, NULL), 1);

    /* --prep line records the line prep (the 28x28 cell whole, to 28 rows
     * of the 29x29 input); an unknown prep is a usage error */
    char line_model[256];
    snprintf(line_model, sizeof line_model, "%s/m12-line.ncm", dir);
    const char *line[] = { "cnn", "--train", tr, "--val", va, "--no-test", "--arch", ARCH12,
                           "--epochs", "1", "--softmax", "3", "--prep", "line", "--out",
                           line_model, NULL };
    CHECK_INT_EQ(run(tool, line, NULL), 0);
    be = open_file(line_model);
    CHECK(be != NULL);
    if (be) {
        const nc_prep want = NC_PREP_LINE_29;
        CHECK(!memcmp(&be->info.prep, &want, sizeof want));
        CHECK_INT_EQ(be->info.n_classes, C);
    }
    nc_backend_close(be);
    const char *bad_prep[] = { "cnn", "--train", tr, "--no-test", "--arch", ARCH12, "--prep",
                               "box", "--out", line_model, NULL };
    CHECK_INT_EQ(run(tool, bad_prep, NULL), 2);

    /* calibration on the validation set */
    const char *calib[] = { "calibrate", "--model", model, "--idx", va, "--out", cal, NULL };
    CHECK_INT_EQ(run(tool, calib, NULL), 0);
    be = open_file(cal);
    CHECK(be != NULL);
    if (be) {
        CHECK(be->calib.fitted);
        CHECK(be->calib.n_valid == 400.0);
        CHECK_INT_EQ(be->info.n_classes, C);
        CHECK(!strcmp(be->info.labels[11], "X"));
    }
    const char *calib_other[] = { "calibrate", "--model", model, "--idx", other, "--out", cal,
                                  NULL };
    CHECK_INT_EQ(run(tool, calib_other, NULL), 1);

    /* the character report */
    const char *eval[] = { "eval", "--model", cal, "--idx", va, NULL };
    CHECK_INT_EQ(run(tool, eval, &out), 0);
    const char *o = out ? out : "";
    CHECK(strstr(o, "characters  by kind") != NULL);
    CHECK(strstr(o, "digits") && strstr(o, "upper case") && strstr(o, "lower case"));
    CHECK(strstr(o, "top-3") != NULL);
    CHECK(strstr(o, "\n  x X ") != NULL);       /* the group's row */
    CHECK(strstr(o, "reject 1.0%") != NULL);
    CHECK(strstr(o, "most frequent confusions") != NULL);
    CHECK(strstr(o, "confusion (rows: true") != NULL);    /* 12 classes: the matrix too */
    free(out);
    check_sheet(tool, cal, va, dir);
    const char *eval_other[] = { "eval", "--model", cal, "--idx", other, NULL };
    CHECK_INT_EQ(run(tool, eval_other, NULL), 1);

    /* an answer through the engine table: all 12 candidates, best first */
    if (be) {
        nc_dataset fx = { 0 };
        CHECK_INT_EQ(nc_test_fixture(&fx), 0);
        float *in = malloc(be->input_len * sizeof *in), raw[C];
        void *w = NULL;
        nc_image img = { fx.cols, fx.rows, fx.cols, fx.pixels };
        CHECK(in != NULL);
        CHECK_INT_EQ(nc_prep_apply(&img, &be->info.prep, in), 0);
        CHECK_INT_EQ(be->ops->worker_new(be->impl, 1, &w), 0);
        CHECK_INT_EQ(be->ops->forward(be->impl, w, in, 1, raw), 0);
        nc_answer_in ai;
        memset(&ai, 0, sizeof ai);
        ai.model = NC_ANSWER_MODEL_CNN;
        ai.be[NC_ANSWER_NET_CNN] = be;
        ai.raw[NC_ANSWER_NET_CNN] = raw;
        ai.ink[NC_ANSWER_NET_CNN] = 1;
        ai.threshold = NC_ANSWER_THRESHOLD_NONE;
        ai.top_k = C;
        nc_answer a;
        CHECK_INT_EQ(nc_answer_compute(&ai, &a), 0);
        CHECK_INT_EQ(a.n_classes, C);
        CHECK_INT_EQ(a.n_top, C);
        CHECK_INT_EQ(a.top[0], a.best);
        uint32_t seen = 0;
        for (uint32_t k = 0; k < C; k++)
            seen |= 1u << a.top[k];
        CHECK_INT_EQ(seen, (1u << C) - 1);
        be->ops->worker_free(w);
        free(in);
        nc_dataset_fini(&fx);
    }
    nc_backend_close(be);

    const char *rm[] = { "/bin/rm", "-rf", dir, NULL };
    char *ignored = NULL;
    nc_run_capture(rm, NULL, &ignored);
    free(ignored);
    return nc_test_finish();
}

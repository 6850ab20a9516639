/* tests/tools/test_train_cnn.c — `neocog-train cnn --keep-last`, run as a
 * user runs it.  Over 800 lines on purpose: every check trains on the one
 * stand-in MNIST folder written at the start, and later checks resume the
 * checkpoints of earlier runs; split, each program would write the folder
 * and train those runs again.
 *
 * The trainer wants MNIST's 60,000 training digits, so the fixture's 1,000
 * digits, repeated 60 times, stand in for them (and the fixture itself for
 * t10k).  A small column trains for five epochs on the first 300 digits,
 * validated on the last 500, twice from the same seed: once keeping the
 * epoch with the lowest validation error, once with --keep-last.  Both runs
 * must print the same epochs (the option changes what is kept, nothing that
 * is computed); the first file must hold the earliest epoch of lowest
 * printed validation error and the weights its checkpoint calls best, the
 * second the last epoch and the weights its checkpoint calls current, which
 * are the first run's last weights too.  A checkpoint written without the
 * option may not be resumed with it.
 *
 * --softmax (the cross-entropy loss) on the same digits: the training loss
 * it prints falls from the first epoch to the last, the weights differ from
 * the squared error's run, the file's command records it, and it is refused
 * beside --teacher, with a bad scale, and on a squared-error checkpoint.
 *
 * Rectified units ("relu" in --arch) from --init-gain: the loss falls, the
 * file holds the rectified net and records the gain, and the gain is
 * refused out of range, beside --init FILE, and on a checkpoint written
 * without it.
 *
 * Batch norm ("bn" in --arch): the loss falls; the file holds the plain net
 * (no "bn"), which a committee file takes, and it is exactly the fold of
 * the net the checkpoint calls best; that net's fixed statistics are each
 * normalised layer's mean and variance over the first 250 training digits,
 * undeformed, as computed here.
 * Usage: test_train_cnn NEOCOG-TRAIN. */
#include "cnn_file.h"
#include "fixture.h"
#include "run_capture.h"
#include "test.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cnn.h"
#include "dataset.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "nc_config.h"

#define EPOCHS 5

/* The training both tests run: a small column, EPOCHS quick epochs on the
 * first 300 digits, validated on the last 500. */
#define SMALL_RUN(dir)                                                                    \
    "cnn", "--arch", "1x29x29-4C4-MP2-6C5-MP3-10N", "--data", (dir), "--epochs", "5",      \
        "--limit", "300", "--validation", "500", "--batch", "4", "--lr", "0.02",          \
        "--lr-decay", "0.9", "--seed", "5"
#define TRAIN_DIGITS 60000u

/* One IDX file: big-endian magic and sizes, then the bytes. */
static int write_idx(const char *path, uint32_t magic, const uint32_t *dims, int n_dims,
                     const uint8_t *data, size_t n)
{
    size_t head = 4u + 4u * (size_t)n_dims;
    uint8_t *buf = malloc(head + n);
    if (!buf)
        return -ENOMEM;
    uint32_t words[4] = { magic, dims[0], n_dims > 1 ? dims[1] : 0, n_dims > 2 ? dims[2] : 0 };
    for (int w = 0; w <= n_dims; w++)
        for (int b = 0; b < 4; b++)
            buf[4 * w + b] = (uint8_t)(words[w] >> (24 - 8 * b));
    memcpy(buf + head, data, n);
    int err = nc_file_write_atomic(path, buf, head + n);
    free(buf);
    return err;
}

/* dir/train-*: the fixture 60 times over; dir/t10k-*: links to the fixture. */
static int make_mnist(const char *dir)
{
    nc_dataset fx = { 0 };
    int err = nc_test_fixture(&fx);
    if (err)
        return err;
    const size_t px = (size_t)fx.rows * fx.cols;
    uint8_t *img = malloc(TRAIN_DIGITS * px), *lab = malloc(TRAIN_DIGITS);
    if (!img || !lab)
        err = -ENOMEM;
    for (uint32_t i = 0; !err && i < TRAIN_DIGITS; i++) {
        memcpy(img + i * px, fx.pixels + (size_t)(i % fx.count) * px, px);
        lab[i] = fx.labels[i % fx.count];
    }
    char p[512];
    const uint32_t idims[3] = { TRAIN_DIGITS, fx.rows, fx.cols }, ldims[1] = { TRAIN_DIGITS };
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte", dir);
    if (!err)
        err = write_idx(p, 0x803u, idims, 3, img, TRAIN_DIGITS * px);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte", dir);
    if (!err)
        err = write_idx(p, 0x801u, ldims, 1, lab, TRAIN_DIGITS);
    if (!err)
        err = nc_test_fixture_as_t10k(dir);
    free(img);
    free(lab);
    nc_dataset_fini(&fx);
    return err;
}

/* Run the tool with stderr (its progress) captured with stdout. */
static int run(const char *tool, const char *const *args, char **ret_out)
{
    const char *argv[40] = { "/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", tool };
    int n = 4;
    for (int i = 0; args[i] && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    int status = nc_run_capture(argv, NULL, ret_out);
    fprintf(stderr, "%s", *ret_out ? *ret_out : "");
    return status;
}

/* run without keeping its output */
static int run_only(const char *tool, const char *const *args)
{
    char *out = NULL;
    const int status = run(tool, args, &out);
    free(out);
    return status;
}

/* The number after key on each progress line ("epoch E/N ... key X"), into
 * v[0..EPOCHS]; the count of such lines. */
static int parse_field(const char *out, const char *key, double *v)
{
    int n = 0;
    for (const char *s = out; (s = strstr(s, "epoch ")) != NULL; s++) {
        unsigned e, of;
        const char *k = strstr(s, key);
        double x;
        if (sscanf(s, "epoch %u/%u", &e, &of) != 2 || !k ||
            sscanf(k + strlen(key), "%lf", &x) != 1)
            continue;
        if (n < EPOCHS + 1)
            v[n] = x;
        n++;
    }
    return n;
}

/* The validation errors the progress lines print, in tenths of a basis
 * point (exact: 500 digits make steps of 0.2 %); the count of lines. */
static int parse_valid(const char *out, long *valid)
{
    double pct[EPOCHS + 1] = { 0 };
    const int n = parse_field(out, "valid ", pct);
    for (int i = 0; i < n && i < EPOCHS + 1; i++)
        valid[i] = lround(pct[i] * 1000.0);
    return n;
}

/* The net a checkpoint holds in section tag ('CKNT' current, 'CKBS' best). */
static nc_cnn *load_ckpt(const char *path, uint32_t tag)
{
    uint8_t *buf = NULL;
    size_t len = 0, n = 0;
    nc_mf_reader *r = NULL;
    nc_cnn *net = NULL;
    uint32_t type;
    const void *data;
    if (nc_file_read(path, 64u << 20, &buf, &len) == 0 && nc_mf_open(buf, len, &r) == 0 &&
        nc_mf_get(r, tag, &type, &data, &n) == 0)
        nc_cnn_load(data, n, &net, NULL);
    nc_mf_close(r);
    free(buf);
    return net;
}

/* The run succeeds and its training loss falls by a fifth from the first
 * epoch to the last (what: the run's name in a failure). */
static void check_loss_falls(const char *tool, const char *const *args, const char *what)
{
    char *out = NULL;
    CHECK_INT_EQ(run(tool, args, &out), 0);
    double loss[EPOCHS + 1] = { 0 };
    const int n = parse_field(out ? out : "", "loss ", loss);
    CHECK_INT_EQ(n, EPOCHS);
    CHECK_MSG(n == EPOCHS && loss[EPOCHS - 1] < 0.8 * loss[0],
              "%s: training loss %g in epoch 1, %g in epoch %d", what, loss[0],
              loss[EPOCHS - 1], EPOCHS);
    free(out);
}

/* The run fails and says why (its output holds `why`). */
static void check_refused(const char *tool, const char *const *args, const char *why)
{
    char *out = NULL;
    CHECK(run(tool, args, &out) != 0);
    CHECK_MSG(out && strstr(out, why), "expected \"%s\" in: %s", why, out ? out : "(nothing)");
    free(out);
}

static void test_keep_last(const char *tool, const char *dir)
{
    char out_best[512], out_last[512], ck_best[512], ck_last[512];
    snprintf(out_best, sizeof out_best, "%s/best.ncm", dir);
    snprintf(out_last, sizeof out_last, "%s/last.ncm", dir);
    snprintf(ck_best, sizeof ck_best, "%s/best.ckpt", dir);
    snprintf(ck_last, sizeof ck_last, "%s/last.ckpt", dir);
#define COMMON SMALL_RUN(dir)
    const char *a_args[] = { COMMON, "--out", out_best, "--checkpoint", ck_best, NULL };
    const char *b_args[] = { COMMON, "--keep-last", "--out", out_last, "--checkpoint", ck_last,
                             NULL };
    const char *c_args[] = { COMMON, "--keep-last", "--out", out_last, "--checkpoint", ck_best,
                             "--resume", NULL };
#undef COMMON
    char *a_out = NULL, *b_out = NULL;
    CHECK_INT_EQ(run(tool, a_args, &a_out), 0);
    CHECK_INT_EQ(run(tool, b_args, &b_out), 0);
    long va[EPOCHS + 1] = { 0 }, vb[EPOCHS + 1] = { 0 };
    const int na = parse_valid(a_out ? a_out : "", va), nb = parse_valid(b_out ? b_out : "", vb);
    CHECK_INT_EQ(na, EPOCHS);
    CHECK_INT_EQ(nb, EPOCHS);
    CHECK_MSG(na == EPOCHS && nb == EPOCHS && memcmp(va, vb, sizeof va) == 0,
              "--keep-last changed the epochs' validation errors");
    uint32_t lowest = 1;
    for (uint32_t e = 2; e <= EPOCHS; e++)
        if (va[e - 1] < va[lowest - 1])
            lowest = e;
    fprintf(stderr, "lowest validation error: epoch %u of %d\n", lowest, EPOCHS);
    CHECK(b_out && strstr(b_out, "(last, --keep-last: validation error"));
    CHECK(a_out && strstr(a_out, "(lowest validation error)"));

    nc_model_info ia, ib;
    nc_cnn *best = nc_test_read_cnn(out_best, &ia), *last = nc_test_read_cnn(out_last, &ib);
    nc_cnn *a_cur = load_ckpt(ck_best, NC_MF_TAG('C', 'K', 'N', 'T'));
    nc_cnn *a_bst = load_ckpt(ck_best, NC_MF_TAG('C', 'K', 'B', 'S'));
    nc_cnn *b_cur = load_ckpt(ck_last, NC_MF_TAG('C', 'K', 'N', 'T'));
    nc_cnn *b_bst = load_ckpt(ck_last, NC_MF_TAG('C', 'K', 'B', 'S'));
    REQUIRE(best && last && a_cur && a_bst && b_cur && b_bst);
    CHECK_INT_EQ(ia.epochs, lowest);
    CHECK_INT_EQ(ib.epochs, EPOCHS);
    CHECK(strstr(ib.command, "--keep-last") != NULL);
    CHECK_MSG(nc_test_same_params(best, a_bst), "the kept file is not the checkpoint's best");
    CHECK_MSG(nc_test_same_params(last, b_cur) && nc_test_same_params(b_bst, b_cur),
              "--keep-last: the file is not the last epoch's weights");
    CHECK_MSG(nc_test_same_params(last, a_cur), "--keep-last trained other weights than without it");
    CHECK_MSG(nc_test_same_params(best, last) == (lowest == EPOCHS),
              "the two files should differ exactly when the lowest epoch is not the last");

    /* a checkpoint of the other kind is refused, not mixed */
    check_refused(tool, c_args, "written with other options");

    nc_cnn_free(best);
    nc_cnn_free(last);
    nc_cnn_free(a_cur);
    nc_cnn_free(a_bst);
    nc_cnn_free(b_cur);
    nc_cnn_free(b_bst);
    free(a_out);
    free(b_out);
}

/* --no-test, after test_keep_last (whose last.ncm is the same run with the
 * test measured): in a folder with the training files alone, the run
 * writes last.ncm's weights with the test error unknown and says so, and
 * without the option the same run fails for want of the test files, so
 * the test set is never read.  That failure comes before the first epoch:
 * a missing test file does not cost a run. */
static void test_no_test(const char *tool, const char *dir)
{
    char sub[512], src[600], dst[600], out[512], out_x[512], last[512];
    snprintf(sub, sizeof sub, "%s/train-only", dir);
    snprintf(out, sizeof out, "%s/notest.ncm", dir);
    snprintf(out_x, sizeof out_x, "%s/notest-refused.ncm", dir);
    snprintf(last, sizeof last, "%s/last.ncm", dir);
    REQUIRE(mkdir(sub, 0700) == 0);
    static const char *const files[] = { "train-images-idx3-ubyte", "train-labels-idx1-ubyte" };
    for (int i = 0; i < 2; i++) {
        snprintf(src, sizeof src, "%s/%s", dir, files[i]);
        snprintf(dst, sizeof dst, "%s/%s", sub, files[i]);
        REQUIRE(symlink(src, dst) == 0);
    }
    const char *a_args[] = { SMALL_RUN(sub), "--keep-last", "--no-test", "--out", out, NULL };
    const char *b_args[] = { SMALL_RUN(sub), "--keep-last", "--out", out_x, NULL };
    char *a_out = NULL;
    CHECK_INT_EQ(run(tool, a_args, &a_out), 0);
    CHECK_MSG(a_out && strstr(a_out, "test error  not measured (--no-test)"),
              "--no-test: %s", a_out ? a_out : "(nothing)");
    char *b_out = NULL;
    CHECK(run(tool, b_args, &b_out) != 0);
    CHECK_MSG(b_out && strstr(b_out, "t10k") && !strstr(b_out, "epoch 1/"),
              "without --no-test or the test files: %s", b_out ? b_out : "(nothing)");
    free(b_out);
    CHECK_MSG(access(out_x, F_OK) != 0, "%s written without its test files", out_x);
    nc_model_info info, info_last;
    nc_cnn *net = nc_test_read_cnn(out, &info), *ref = nc_test_read_cnn(last, &info_last);
    REQUIRE(net && ref);
    CHECK_MSG(info.test_error < 0.0, "--no-test recorded a test error of %g", info.test_error);
    CHECK(info_last.test_error >= 0.0);
    CHECK(strstr(info.command, "--no-test") != NULL);
    CHECK_MSG(nc_test_same_params(net, ref), "--no-test trained other weights than without it");
    nc_cnn_free(net);
    nc_cnn_free(ref);
    free(a_out);
    for (int i = 0; i < 2; i++) {
        snprintf(dst, sizeof dst, "%s/%s", sub, files[i]);
        unlink(dst);
    }
    rmdir(sub);
}

/* After test_keep_last, whose best.ncm and best.ckpt (squared error, same
 * options otherwise) it compares with. */
static void test_softmax(const char *tool, const char *dir)
{
    char out_sm[512], ck_sm[512], ck_mse[512], out_mse[512];
    snprintf(out_sm, sizeof out_sm, "%s/softmax.ncm", dir);
    snprintf(ck_sm, sizeof ck_sm, "%s/softmax.ckpt", dir);
    snprintf(ck_mse, sizeof ck_mse, "%s/best.ckpt", dir);
    snprintf(out_mse, sizeof out_mse, "%s/best.ncm", dir);
#define COMMON SMALL_RUN(dir), "--out", out_sm
    const char *a_args[] = { COMMON, "--softmax", "3", "--checkpoint", ck_sm, NULL };
    const char *b_args[] = { COMMON, "--softmax", "3", "--checkpoint", ck_mse, "--resume", NULL };
    const char *c_args[] = { COMMON, "--softmax", "3", "--teacher", out_mse, NULL };
    const char *d_args[] = { COMMON, "--softmax", "0", NULL };
    const char *e_args[] = { COMMON, "--softmax", "-2", NULL };
#undef COMMON
    check_loss_falls(tool, a_args, "--softmax");
    nc_model_info is, im;
    nc_cnn *sm = nc_test_read_cnn(out_sm, &is), *mse = nc_test_read_cnn(out_mse, &im);
    REQUIRE(sm && mse);
    CHECK(strstr(is.command, "--softmax 3") != NULL);
    CHECK(strstr(im.command, "--softmax") == NULL);
    CHECK_MSG(!nc_test_same_params(sm, mse), "--softmax trained the same weights as the squared error");
    /* refused: a squared-error checkpoint, the teacher's targets, bad scales */
    check_refused(tool, b_args, "written with other options");
    check_refused(tool, c_args, "--softmax with --teacher");
    check_refused(tool, d_args, "bad value for --softmax");
    check_refused(tool, e_args, "bad value for --softmax");
    nc_cnn_free(sm);
    nc_cnn_free(mse);
}

/* After test_keep_last, whose best.ckpt (the seed's init) it resumes. */
static void test_relu(const char *tool, const char *dir)
{
    char out_r[512], ck_r[512], ck_mse[512], out_mse[512];
    snprintf(out_r, sizeof out_r, "%s/relu.ncm", dir);
    snprintf(ck_r, sizeof ck_r, "%s/relu.ckpt", dir);
    snprintf(ck_mse, sizeof ck_mse, "%s/best.ckpt", dir);
    snprintf(out_mse, sizeof out_mse, "%s/best.ncm", dir);
    static const char arch[] = "1x29x29-4C4relu-MP2-6C5relu-MP3-10N";
    /* the later --arch and --lr override SMALL_RUN's */
#define COMMON SMALL_RUN(dir), "--arch", arch, "--lr", "0.005", "--out", out_r
    const char *a_args[] = { COMMON, "--init-gain", "1.4142", "--checkpoint", ck_r, NULL };
    const char *b_args[] = { COMMON, "--init-gain", "1.4142", "--checkpoint", ck_mse, "--resume",
                             NULL };
    const char *c_args[] = { COMMON, "--init-gain", "1.4142", "--init", out_mse, NULL };
    const char *d_args[] = { COMMON, "--init-gain", "0", NULL };
    const char *e_args[] = { COMMON, "--init-gain", "11", NULL };
#undef COMMON
    check_loss_falls(tool, a_args, "relu");
    nc_model_info info;
    nc_cnn *net = nc_test_read_cnn(out_r, &info);
    REQUIRE(net);
    char got[NC_CNN_ARCH_MAX];
    CHECK_INT_EQ(nc_cnn_arch_format(net, got, sizeof got), 0);
    CHECK_MSG(strcmp(got, arch) == 0, "the file holds %s", got);
    CHECK(net->layers[1].act == NC_CNN_ACT_RELU && net->layers[5].act == NC_CNN_ACT_TANH);
    CHECK(strstr(info.command, "--init-gain 1.4142") != NULL);
    check_refused(tool, b_args, "written with other options");
    check_refused(tool, c_args, "--init-gain with --init");
    check_refused(tool, d_args, "bad value for --init-gain");
    check_refused(tool, e_args, "bad value for --init-gain");
    nc_cnn_free(net);
}

/* The statistics of the two normalised layers (1 and 3) of test_norm's nets
 * over training digits 0-249 (the trainer's whole batches of 250 from the
 * 300 it trains on), prepared as the file's prep says: one batch here. */
static void first_stats(const nc_cnn *net, const nc_prep *prep, float mean[2][8],
                        float var[2][8])
{
    enum { N = 250 };
    nc_dataset fx = { 0 };
    REQUIRE(nc_test_fixture(&fx) == 0);
    const size_t plane = nc_prep_out_len(prep);
    float *in = malloc(N * plane * sizeof(float));
    nc_cnn_work *w = NULL;
    REQUIRE(in && plane == net->n_inputs && nc_cnn_work_new(net, N, &w) == 0);
    for (uint32_t k = 0; k < N; k++) {
        nc_image img = { fx.cols, fx.rows, fx.cols, fx.pixels + (size_t)k * fx.rows * fx.cols };
        REQUIRE(nc_prep_apply(&img, prep, in + k * plane) == 0);
    }
    REQUIRE(nc_cnn_forward_blas(net, w, in, N, NULL) == 0);
    for (uint32_t i = 0; i < 2; i++)
        REQUIRE(net->layers[1 + 2 * i].maps <= 8 &&
                nc_cnn_work_norm_stats(w, 1 + 2 * i, mean[i], var[i]) == 0);
    nc_cnn_work_free(w);
    free(in);
    nc_dataset_fini(&fx);
}

/* The normalised layers' statistics in the checkpoint's best net against
 * first_stats'. */
static void check_first_stats(const nc_cnn *net, const nc_prep *prep)
{
    float mean[2][8], var[2][8];
    first_stats(net, prep, mean, var);
    for (uint32_t i = 0; i < 2; i++) {
        const uint32_t l = 1 + 2 * i;
        const nc_cnn_layer *L = &net->layers[l];
        for (uint32_t m = 0; m < L->maps; m++) {
            CHECK_MSG(fabsf(L->mean[m] - mean[i][m]) <= 1e-5f + 1e-4f * fabsf(mean[i][m]),
                      "layer %u map %u: mean %g in the checkpoint, %g here", l, m, L->mean[m],
                      mean[i][m]);
            CHECK_MSG(fabsf(L->var[m] - var[i][m]) <= 1e-4f * var[i][m] && var[i][m] > 0.0f,
                      "layer %u map %u: var %g in the checkpoint, %g here", l, m, L->var[m],
                      var[i][m]);
        }
    }
}

static void test_norm(const char *tool, const char *dir)
{
    char out_n[512], ck_n[512];
    snprintf(out_n, sizeof out_n, "%s/norm.ncm", dir);
    snprintf(ck_n, sizeof ck_n, "%s/norm.ckpt", dir);
    const char *args[] = { SMALL_RUN(dir), "--arch", "1x29x29-4C4bn-MP2-6C5bnrelu-MP3-10N",
                           "--out", out_n, "--checkpoint", ck_n, NULL };
    check_loss_falls(tool, args, "batch norm");
    nc_model_info info;
    nc_cnn *file = nc_test_read_cnn(out_n, &info), *best = load_ckpt(ck_n, NC_MF_TAG('C', 'K', 'B', 'S'));
    REQUIRE(file && best);
    char got[NC_CNN_ARCH_MAX];
    CHECK_INT_EQ(nc_cnn_arch_format(file, got, sizeof got), 0);
    CHECK_MSG(strcmp(got, "1x29x29-4C4-MP2-6C5relu-MP3-10N") == 0, "the file holds %s", got);
    CHECK(strstr(info.command, "6C5bnrelu") != NULL);
    CHECK_INT_EQ(nc_cnn_norm_layers(best), 2);
    nc_cnn *fold = NULL;
    CHECK_INT_EQ(nc_cnn_fold_norm(best, &fold), 0);
    CHECK_MSG(nc_test_same_params(fold, file), "the file is not the fold of the checkpoint's best net");
    check_first_stats(best, &info.prep);
    /* a file to serve: a committee file takes it */
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_cnn_committee *c = NULL;
    REQUIRE(nc_file_read(out_n, 64u << 20, &buf, &len) == 0);
    CHECK_INT_EQ(nc_cnn_committee_load(buf, len, &c, NULL), 0);
    nc_cnn_committee_free(c);
    free(buf);
    nc_cnn_free(fold);
    nc_cnn_free(best);
    nc_cnn_free(file);
}

/* a's params within float rounding of the mean of the n nets in b (each
 * |a - mean| <= 1e-6 + 1e-5 |mean|); the largest miss in *worst. */
static int near_mean(const nc_cnn *a, nc_cnn *const *b, int n, double *worst)
{
    *worst = 0.0;
    for (int k = 0; k < n; k++)
        if (!a || !b[k] || b[k]->n_params != a->n_params)
            return 0;
    int ok = 1;
    for (size_t i = 0; i < a->n_params; i++) {
        double mean = 0.0;
        for (int k = 0; k < n; k++)
            mean += b[k]->params[i];
        mean /= n;
        const double miss = fabs(a->params[i] - mean);
        if (miss > *worst)
            *worst = miss;
        ok &= miss <= 1e-6 + 1e-5 * fabs(mean);
    }
    return ok;
}

/* --average-last K keeps the mean of the last K epochs' weights: those of
 * runs of 3 and 4 epochs with --keep-last (the same epochs as the first of
 * a 5-epoch run: the rate and the draws depend on the epoch only) and of
 * the run's own last epoch (its checkpoint's current net); resuming the
 * finished run keeps it; bad values are refused.  A normalised net's file
 * is the fold of the averaged net with statistics measured for it. */
static void test_average(const char *tool, const char *dir)
{
    char out3[512], out4[512], out_a[512], ck_a[512], out_n[512], ck_n[512], out_k[512];
    snprintf(out3, sizeof out3, "%s/avg-e3.ncm", dir);
    snprintf(out4, sizeof out4, "%s/avg-e4.ncm", dir);
    snprintf(out_a, sizeof out_a, "%s/avg.ncm", dir);
    snprintf(ck_a, sizeof ck_a, "%s/avg.ckpt", dir);
    snprintf(out_n, sizeof out_n, "%s/avg-norm.ncm", dir);
    snprintf(ck_n, sizeof ck_n, "%s/avg-norm.ckpt", dir);
    snprintf(out_k, sizeof out_k, "%s/avg-norm-last.ncm", dir);
    const char *norm = "1x29x29-4C4bn-MP2-6C5bnrelu-MP3-10N";
    const char *e3_args[] = { SMALL_RUN(dir), "--epochs", "3", "--keep-last", "--out", out3, NULL };
    const char *e4_args[] = { SMALL_RUN(dir), "--epochs", "4", "--keep-last", "--out", out4, NULL };
    const char *a_args[] = { SMALL_RUN(dir), "--average-last", "3", "--out", out_a,
                             "--checkpoint", ck_a, NULL };
    const char *r_args[] = { SMALL_RUN(dir), "--average-last", "3", "--out", out_a,
                             "--checkpoint", ck_a, "--resume", NULL };
    const char *x_args[] = { SMALL_RUN(dir), "--average-last", "3", "--epochs", "6",
                             "--out", out_a, "--checkpoint", ck_a, "--resume", NULL };
    const char *z_args[] = { SMALL_RUN(dir), "--average-last", "0", "--out", out_k, NULL };
    const char *o_args[] = { SMALL_RUN(dir), "--average-last", "6", "--out", out_k, NULL };
    const char *k_args[] = { SMALL_RUN(dir), "--average-last", "2", "--keep-last",
                             "--out", out_k, NULL };
    const char *n_args[] = { SMALL_RUN(dir), "--arch", norm, "--average-last", "2",
                             "--out", out_n, "--checkpoint", ck_n, NULL };
    const char *n1_args[] = { SMALL_RUN(dir), "--arch", norm, "--average-last", "1",
                              "--out", out_n, NULL };
    const char *nk_args[] = { SMALL_RUN(dir), "--arch", norm, "--keep-last", "--out", out_k,
                              NULL };

    char *out = NULL;
    CHECK_INT_EQ(run_only(tool, e3_args), 0);
    CHECK_INT_EQ(run_only(tool, e4_args), 0);
    CHECK_INT_EQ(run(tool, a_args, &out), 0);
    CHECK_MSG(out && strstr(out, "kept        epochs 3-5 of 5, averaged (--average-last: "
                                 "validation error "),
              "no average in: %s", out ? out : "(nothing)");
    free(out);
    out = NULL;
    nc_model_info info;
    nc_cnn *avg = nc_test_read_cnn(out_a, &info);
    nc_cnn *b[3] = { nc_test_read_cnn(out3, NULL), nc_test_read_cnn(out4, NULL),
                     load_ckpt(ck_a, NC_MF_TAG('C', 'K', 'N', 'T')) };
    REQUIRE(avg && b[0] && b[1] && b[2]);
    double worst = 0.0;
    CHECK_MSG(near_mean(avg, b, 3, &worst), "the file is not the mean of epochs 3-5 "
              "(largest miss %g)", worst);
    CHECK_MSG(!nc_test_same_params(avg, b[2]), "the file is the last epoch's weights");
    CHECK_INT_EQ(info.epochs, EPOCHS);
    CHECK(strstr(info.command, "--average-last 3") != NULL);
    /* resuming the finished run writes the same average; a resume that
       would move the window is refused */
    CHECK_INT_EQ(run(tool, r_args, &out), 0);
    CHECK(out && strstr(out, "nothing left to train"));
    free(out);
    out = NULL;
    nc_cnn *again = nc_test_read_cnn(out_a, NULL);
    CHECK_MSG(nc_test_same_params(again, avg), "the resumed run wrote another average");
    check_refused(tool, x_args, "written with other options");
    check_refused(tool, z_args, "bad value for --average-last");
    check_refused(tool, o_args, "--average-last must be 1..--epochs (5)");
    check_refused(tool, k_args, "--average-last with --keep-last");
    CHECK_MSG(access(out_k, F_OK) != 0, "%s written by a refused run", out_k);

    /* normalised: one epoch's "average" is --keep-last's file; two epochs'
       is the fold of the checkpoint's averaged net with its own statistics */
    CHECK_INT_EQ(run_only(tool, n1_args), 0);
    CHECK_INT_EQ(run_only(tool, nk_args), 0);
    nc_cnn *n1 = nc_test_read_cnn(out_n, NULL), *nk = nc_test_read_cnn(out_k, NULL);
    CHECK_MSG(nc_test_same_params(n1, nk), "--average-last 1 is not --keep-last");
    CHECK_INT_EQ(run_only(tool, n_args), 0);
    nc_model_info ninfo;
    nc_cnn *nfile = nc_test_read_cnn(out_n, &ninfo), *nbest = load_ckpt(ck_n, NC_MF_TAG('C', 'K', 'B', 'S'));
    REQUIRE(nfile && nbest);
    float mean[2][8], var[2][8];
    first_stats(nbest, &ninfo.prep, mean, var);
    for (uint32_t i = 0; i < 2; i++) {
        nc_cnn_layer *L = &nbest->layers[1 + 2 * i];
        memcpy(L->mean, mean[i], L->maps * sizeof(float));
        memcpy(L->var, var[i], L->maps * sizeof(float));
    }
    nc_cnn *fold = NULL;
    CHECK_INT_EQ(nc_cnn_fold_norm(nbest, &fold), 0);
    nc_cnn *one[1] = { fold };
    CHECK_MSG(near_mean(nfile, one, 1, &worst), "the normalised file is not the fold of the "
              "averaged net with its own statistics (largest miss %g)", worst);

    nc_cnn_free(fold);
    nc_cnn_free(nfile);
    nc_cnn_free(nbest);
    nc_cnn_free(n1);
    nc_cnn_free(nk);
    nc_cnn_free(again);
    for (int k = 0; k < 3; k++)
        nc_cnn_free(b[k]);
    nc_cnn_free(avg);
}

/* --deform-params reaches the deformations: all six at 0 trains what
 * --no-deform trains, the documented defaults what no option trains, and
 * one change (no elastic part) something else; the file's data names them;
 * bad lists are refused. */
static void test_deform_params(const char *tool, const char *dir)
{
    char out_z[512], out_n[512], out_d[512], out_e[512], out_x[512];
    snprintf(out_z, sizeof out_z, "%s/dp-zero.ncm", dir);
    snprintf(out_n, sizeof out_n, "%s/dp-none.ncm", dir);
    snprintf(out_d, sizeof out_d, "%s/dp-default.ncm", dir);
    snprintf(out_e, sizeof out_e, "%s/dp-rigid.ncm", dir);
    snprintf(out_x, sizeof out_x, "%s/dp-refused.ncm", dir);
#define COMMON SMALL_RUN(dir), "--keep-last"
    const char *z_args[] = { COMMON, "--out", out_z, "--deform-params",
                             "shift=0,rotate=0,scale=0,shear=0,sigma=0,alpha=0", NULL };
    const char *n_args[] = { COMMON, "--out", out_n, "--no-deform", NULL };
    const char *d_args[] = { COMMON, "--out", out_d, "--deform-params",
                             "alpha=34,sigma=6,shear=0.15,scale=0.12,rotate=10,shift=1.5", NULL };
    const char *e_args[] = { COMMON, "--out", out_e, "--deform-params", "alpha=0", NULL };
    const char *bad1[] = { COMMON, "--out", out_x, "--deform-params", "twist=1", NULL };
    const char *bad2[] = { COMMON, "--out", out_x, "--deform-params", "shift", NULL };
    const char *bad3[] = { COMMON, "--out", out_x, "--deform-params", "rotate=-1", NULL };
    const char *bad4[] = { COMMON, "--out", out_x, "--deform-params", "rotate=100",
                           "--deform-scale", "2", NULL };
#undef COMMON
    CHECK_INT_EQ(run_only(tool, z_args), 0);
    CHECK_INT_EQ(run_only(tool, n_args), 0);
    CHECK_INT_EQ(run_only(tool, d_args), 0);
    CHECK_INT_EQ(run_only(tool, e_args), 0);
    char last[512];
    snprintf(last, sizeof last, "%s/last.ncm", dir);    /* test_keep_last's: no option */
    nc_model_info iz;
    nc_cnn *z = nc_test_read_cnn(out_z, &iz), *n = nc_test_read_cnn(out_n, NULL), *d = nc_test_read_cnn(out_d, NULL);
    nc_cnn *e = nc_test_read_cnn(out_e, NULL), *plain = nc_test_read_cnn(last, NULL);
    REQUIRE(z && n && d && e && plain);
    CHECK_MSG(nc_test_same_params(z, n), "all-zero deformations did not train as --no-deform");
    CHECK_MSG(nc_test_same_params(d, plain), "the documented defaults did not train as no option");
    CHECK_MSG(!nc_test_same_params(e, plain), "alpha=0 trained as the default deformations");
    CHECK_MSG(strstr(iz.data, "deformed (shift 0, rotate 0, scale 0, shear 0, sigma 0, "
                              "alpha 0)") != NULL, "data: %s", iz.data);
    check_refused(tool, bad1, "bad value for --deform-params");
    check_refused(tool, bad2, "bad value for --deform-params");
    check_refused(tool, bad3, "--deform-params: out of range");
    check_refused(tool, bad4, "--deform-params: out of range");
    CHECK_MSG(access(out_x, F_OK) != 0, "%s written by a refused run", out_x);
    nc_cnn_free(z);
    nc_cnn_free(n);
    nc_cnn_free(d);
    nc_cnn_free(e);
    nc_cnn_free(plain);
}

/* dst: the NULL-ended lists a, then b, then c, NULL-ended (cap entries at
 * most). */
static void join_args(const char **dst, size_t cap, const char *const *a,
                      const char *const *b, const char *const *c)
{
    const char *const *lists[] = { a, b, c };
    size_t n = 0;
    for (int l = 0; l < 3; l++)
        for (const char *const *s = lists[l]; *s && n + 1 < cap; s++)
            dst[n++] = *s;
    dst[n] = NULL;
}

/* The arguments that choose the device, for join_args. */
static const char *const ON_GPU[] = { "--gpu", "0", NULL };
static const char *const ON_CPU[] = { NULL };

/* An optimiser's runs from its arguments common (SMALL_RUN and the
 * optimiser's, NULL-ended), with --gpu 0 if gpu: 5 epochs straight into
 * <name>5.ncm, and 3 epochs with a checkpoint <name>.ckpt then a resume to
 * 5 into <name>35.ncm, all in dir. */
typedef struct resumed_run {
    char out5[512], out35[512], ck[512];
    const char *args5[40], *args3[40], *resume[40];
} resumed_run;

static void resumed_run_init(resumed_run *r, const char *dir, const char *name,
                             const char *const *common, int gpu)
{
    const char *const *dev = gpu ? ON_GPU : ON_CPU;
    snprintf(r->out5, sizeof r->out5, "%s/%s5.ncm", dir, name);
    snprintf(r->out35, sizeof r->out35, "%s/%s35.ncm", dir, name);
    snprintf(r->ck, sizeof r->ck, "%s/%s.ckpt", dir, name);
    const char *e5[] = { "--out", r->out5, NULL };
    const char *e3[] = { "--epochs", "3", "--out", r->out35, "--checkpoint", r->ck, NULL };
    const char *er[] = { "--out", r->out35, "--checkpoint", r->ck, "--resume", NULL };
    join_args(r->args5, 40, common, dev, e5);
    join_args(r->args3, 40, common, dev, e3);
    join_args(r->resume, 40, common, dev, er);
}

/* The straight run lowers the loss; 3 epochs then a resume to 5 train the
 * same weights, so the optimiser's state rides in the checkpoint; the
 * file's command names the option (what). */
static void check_resumed_run(const char *tool, const resumed_run *r, const char *what)
{
    check_loss_falls(tool, r->args5, what);
    CHECK_INT_EQ(run_only(tool, r->args3), 0);
    CHECK_INT_EQ(run_only(tool, r->resume), 0);
    nc_model_info info;
    nc_cnn *straight = nc_test_read_cnn(r->out5, &info), *resumed = nc_test_read_cnn(r->out35, NULL);
    REQUIRE(straight && resumed);
    CHECK_MSG(nc_test_same_params(straight, resumed), "%s: 3 epochs + resume to 5 are not 5 epochs",
              what);
    CHECK_MSG(strstr(info.command, what) != NULL, "%s not in: %s", what, info.command);
    nc_cnn_free(straight);
    nc_cnn_free(resumed);
}

/* An optimiser with --gpu 0: common as for resumed_run_init, the files
 * g<name>*.ncm in dir; one epoch on the device (g<name>1.ncm) and on the
 * CPU (c<name>1.ncm).  Where a device trains: check_resumed_run on it, and
 * after one epoch the weights are the CPU's to GPU_TOL.  One epoch, not
 * five: the engine's steps are core's to float rounding, but at this small
 * run's rates training is chaotic enough that five epochs can grow those
 * roundings into anything (on an H100, plain SGD at --lr 0.02 on MNIST
 * digits ended 1.13 apart (relative) after five epochs, 2.9e-7 after one;
 * this test's momentum run ended 0.074 apart after five).  Without a device
 * the one-epoch run fails for that, or for a build without CUDA, never for
 * the optimiser. */
#define GPU_TOL 1e-2

static void check_gpu_optimiser(const char *tool, const char *dir, const char *name,
                                const char *const *common, const char *what)
{
    char gname[64], out_g1[512], out_c1[512];
    snprintf(gname, sizeof gname, "g%s", name);
    snprintf(out_g1, sizeof out_g1, "%s/g%s1.ncm", dir, name);
    snprintf(out_c1, sizeof out_c1, "%s/c%s1.ncm", dir, name);
    const char *eg1[] = { "--epochs", "1", "--out", out_g1, NULL };
    const char *ec1[] = { "--epochs", "1", "--out", out_c1, NULL };
    const char *gpu1[40], *cpu1[40];
    join_args(gpu1, 40, common, ON_GPU, eg1);
    join_args(cpu1, 40, common, ON_CPU, ec1);

    char *out = NULL;
    const int status = run(tool, gpu1, &out);
    if (status != 0) {
        const char *why = NC_HAVE_CUDA ? "--gpu 0: " : "--gpu: this build has no CUDA engine";
        /* not the old refusal ("... with --gpu: the GPU engine's step is plain
           SGD for now"); the usage printed after the error names --gpu too */
        CHECK_MSG(out && strstr(out, why) && !strstr(out, "plain SGD for now"),
                  "%s --gpu 0: expected \"%s\" in: %s", what, why, out ? out : "(nothing)");
        fprintf(stderr, "%s --gpu 0: no device here, so its training was not checked\n", what);
        free(out);
        return;
    }
    free(out);
    resumed_run r;
    resumed_run_init(&r, dir, gname, common, 1);
    check_resumed_run(tool, &r, what);
    CHECK_INT_EQ(run_only(tool, cpu1), 0);
    nc_cnn *gpu = nc_test_read_cnn(out_g1, NULL), *cpu = nc_test_read_cnn(out_c1, NULL);
    REQUIRE(gpu && cpu && gpu->n_params == cpu->n_params);
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < cpu->n_params; i++) {
        const double d = (double)gpu->params[i] - cpu->params[i];
        num += d * d;
        den += (double)cpu->params[i] * cpu->params[i];
    }
    const double rel = sqrt(num / den);
    CHECK_MSG(rel <= GPU_TOL, "%s --gpu 0: one epoch's weights %.3g from the CPU's (relative)",
              what, rel);
    fprintf(stderr, "%s --gpu 0: one epoch's weights %.3g from the CPU's (relative)\n", what,
            rel);
    nc_cnn_free(gpu);
    nc_cnn_free(cpu);
}

/* --momentum: the loss falls (at a tenth of the plain rate: the velocity
 * sums about 1 / (1 - M) steps' gradients); 3 epochs and a resume to 5
 * train what 5 epochs straight do, so the checkpoint carries the velocity;
 * bad values are refused; with --gpu, check_gpu_optimiser. */
static void test_momentum(const char *tool, const char *dir)
{
    char out_x[512];
    snprintf(out_x, sizeof out_x, "%s/mom-refused.ncm", dir);
    const char *common[] = { SMALL_RUN(dir), "--keep-last", "--lr", "0.002", "--momentum", "0.9",
                             NULL };
    resumed_run r;
    resumed_run_init(&r, dir, "mom", common, 0);
    const char *p_args[] = { SMALL_RUN(dir), "--keep-last", "--lr", "0.002", "--out", out_x,
                             "--checkpoint", r.ck, "--resume", NULL };
    const char *bad1[] = { SMALL_RUN(dir), "--momentum", "1", "--out", out_x, NULL };
    const char *bad2[] = { SMALL_RUN(dir), "--momentum", "-0.5", "--out", out_x, NULL };
    check_resumed_run(tool, &r, "--momentum 0.9");
    check_refused(tool, p_args, "written with other options");
    check_refused(tool, bad1, "bad value for --momentum");
    check_refused(tool, bad2, "bad value for --momentum");
    CHECK_MSG(access(out_x, F_OK) != 0, "%s written by a refused run", out_x);
    check_gpu_optimiser(tool, dir, "mom", common, "--momentum 0.9");
}

/* --adam: the loss falls; 3 epochs and a resume to 5 train what 5 straight
 * do (the moments and the step count are in the checkpoint: the bias
 * corrections depend on the count); refused with --momentum; with --gpu,
 * check_gpu_optimiser. */
static void test_adam(const char *tool, const char *dir)
{
    char out_x[512];
    snprintf(out_x, sizeof out_x, "%s/adam-refused.ncm", dir);
#define COMMON SMALL_RUN(dir), "--keep-last", "--lr", "0.003", "--adam"
    const char *common[] = { COMMON, NULL };
    const char *bad1[] = { COMMON, "--momentum", "0.9", "--out", out_x, NULL };
#undef COMMON
    resumed_run r;
    resumed_run_init(&r, dir, "adam", common, 0);
    check_resumed_run(tool, &r, "--adam");
    check_refused(tool, bad1, "--adam with --momentum");
    CHECK_MSG(access(out_x, F_OK) != 0, "%s written by a refused run", out_x);
    check_gpu_optimiser(tool, dir, "adam", common, "--adam");
}

/* --gpu-kernels: a value it does not know, and unrolled without --gpu (the
 * CPU path multiplies unrolled products anyway), are refused before any
 * training. */
static void test_gpu_kernels(const char *tool, const char *dir)
{
    char out[512];
    snprintf(out, sizeof out, "%s/kernels.ncm", dir);
    const char *a_args[] = { SMALL_RUN(dir), "--out", out, "--gpu-kernels", "fast", NULL };
    const char *b_args[] = { SMALL_RUN(dir), "--out", out, "--gpu-kernels", "unrolled", NULL };
    check_refused(tool, a_args, "bad value for --gpu-kernels");
    check_refused(tool, b_args, "--gpu-kernels unrolled needs --gpu");
    CHECK_MSG(access(out, F_OK) != 0, "%s written by a refused run", out);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_train_cnn NEOCOG-TRAIN\n");
        return 2;
    }
    char dir[] = "/tmp/nc-test-train-cnn-XXXXXX";
    if (!mkdtemp(dir) || make_mnist(dir) != 0) {
        CHECK_MSG(0, "cannot make the stand-in MNIST in %s", dir);
        return nc_test_finish();
    }
    test_keep_last(argv[1], dir);
    test_no_test(argv[1], dir);
    test_softmax(argv[1], dir);
    test_relu(argv[1], dir);
    test_norm(argv[1], dir);
    test_gpu_kernels(argv[1], dir);
    test_average(argv[1], dir);
    test_deform_params(argv[1], dir);
    test_momentum(argv[1], dir);
    test_adam(argv[1], dir);
    const char *names[] = { "best.ncm", "last.ncm", "best.ckpt", "last.ckpt", "softmax.ncm",
                            "softmax.ckpt", "relu.ncm", "relu.ckpt", "norm.ncm", "norm.ckpt",
                            "avg-e3.ncm", "avg-e4.ncm", "avg.ncm", "avg.ckpt", "avg-norm.ncm",
                            "avg-norm.ckpt", "avg-norm-last.ncm", "dp-zero.ncm", "dp-none.ncm",
                            "dp-default.ncm", "dp-rigid.ncm", "mom5.ncm", "mom35.ncm", "mom.ckpt",
                            "adam5.ncm", "adam35.ncm", "adam.ckpt", "gmom5.ncm",
                            "gmom35.ncm", "gmom.ckpt", "gadam5.ncm", "gadam35.ncm",
                            "gadam.ckpt", "gmom1.ncm", "cmom1.ncm", "gadam1.ncm", "cadam1.ncm",
                            "notest.ncm",
                            "train-images-idx3-ubyte",
                            "train-labels-idx1-ubyte",
                            "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
    return nc_test_finish();
}

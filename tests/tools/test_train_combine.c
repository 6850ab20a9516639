/* tests/tools/test_train_combine.c — `neocog-train combine`, the committee
 * of saved score files, run as a user runs it.
 *
 * The fixture's 1,000 digits stand in for MNIST t10k.  Three score files
 * are written the way `eval --save-scores` writes them (float32,
 * little-endian, digits x 10), each right on every digit but a known set,
 * where it scores a wrong class:
 *   A wrong on digits i % 10 == 0 (1.0 on label + 1);
 *   B wrong on i % 10 == 0 and 1 (1.0 on label + 1);
 *   C wrong on i % 10 == 2, with 4.0 on label + 2, outweighing A and B's
 *     1.0 on the label: the mean is wrong there where a vote would not be.
 * So the files make 100, 200 and 100 errors, and the committee 200: the
 * i % 10 == 0 digits (missed by two files) and the i % 10 == 2 ones (by one);
 * 300 digits are missed by some file.  --list prints those 200 and no other.
 * A file of zeros where no class fired answers class 0 as a CNN and nothing
 * as a neocognitron (--neocognitron); scores saved from --first 500 match
 * the labels only from there.  Broken inputs (a size that is no whole
 * number of digits, a NaN, files of different lengths, digits past the set,
 * a missing file, no file, one class) are refused.
 * Usage: test_train_combine NEOCOG-TRAIN. */
#include "fixture.h"
#include "run_capture.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset.h"
#include "fileio.h"

#define K 10u

/* n digits' scores from first on, each row by row(i, label, scores). */
typedef void (*row_fn)(uint32_t i, uint32_t label, float *s);

static int write_scores(const char *path, const nc_dataset *d, uint32_t first, uint32_t n,
                        row_fn row)
{
    uint8_t *b = malloc((size_t)n * K * 4);
    if (!b)
        return -1;
    for (uint32_t i = 0; i < n; i++) {
        float s[K] = { 0 };
        row(first + i, d->labels[first + i], s);
        for (uint32_t k = 0; k < K; k++) {
            uint32_t u;
            memcpy(&u, &s[k], 4);
            for (int j = 0; j < 4; j++)
                b[((size_t)i * K + k) * 4 + j] = (uint8_t)(u >> (8 * j));
        }
    }
    int err = nc_file_write_atomic(path, b, (size_t)n * K * 4);
    free(b);
    return err;
}

static void row_a(uint32_t i, uint32_t l, float *s) { s[i % 10 == 0 ? (l + 1) % K : l] = 1.0f; }
static void row_b(uint32_t i, uint32_t l, float *s) { s[i % 10 <= 1 ? (l + 1) % K : l] = 1.0f; }
static void row_c(uint32_t i, uint32_t l, float *s)
{
    if (i % 10 == 2)
        s[(l + 2) % K] = 4.0f;
    else
        s[l] = 1.0f;
}
static void row_silent(uint32_t i, uint32_t l, float *s)
{
    if (i % 10 != 3)
        s[l] = 1.0f;
}
static void row_right(uint32_t i, uint32_t l, float *s) { (void)i; s[l] = 1.0f; }
static void row_nan(uint32_t i, uint32_t l, float *s)
{
    s[l] = 1.0f;
    if (i == 7)
        s[(l + 3) % K] = NAN;
}

/* The number after `key` on stdout (key at a line's start), or -1. */
static long after(const char *out, const char *key)
{
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, key, strlen(key)))
            return strtol(p + strlen(key), NULL, 10);
    return -1;
}

static long count_lines(const char *out, const char *prefix)
{
    long n = 0;
    for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        n += !strncmp(p, prefix, strlen(prefix));
    return n;
}

static int run(const char *const *argv, char **ret_out)
{
    char *out = NULL;
    int status = nc_run_capture(argv, NULL, &out);
    fprintf(stderr, "%s", out ? out : "");
    if (ret_out)
        *ret_out = out;
    else
        free(out);
    return status;
}

static void test_combine(const char *tool)
{
    const char *data = getenv("NC_TEST_DATA");
    char dir[] = "/tmp/nc-test-combine-XXXXXX";
    REQUIRE(data && mkdtemp(dir));
    char mnist[256];
    snprintf(mnist, sizeof mnist, "%s/mnist", dir);
    REQUIRE(mkdir(mnist, 0700) == 0);
    /* the fixture as the tool's MNIST folder: t10k only, which it reads */
    REQUIRE(nc_test_fixture_as_t10k(mnist) == 0);
    nc_dataset d = { 0 };
    REQUIRE(nc_test_fixture(&d) == 0 && d.count == 1000);

    enum { A, B, C, SILENT, RIGHT, RAGGED, NAN_, SHORT, N_PATHS };
    char path[N_PATHS][300];
    static const char *name[N_PATHS] = { "a", "b", "c", "silent", "right", "ragged", "nan",
                                         "short" };
    for (int f = 0; f < N_PATHS; f++)
        snprintf(path[f], sizeof path[f], "%s/%s.f32", dir, name[f]);
    REQUIRE(write_scores(path[A], &d, 0, 1000, row_a) == 0);
    REQUIRE(write_scores(path[B], &d, 0, 1000, row_b) == 0);
    REQUIRE(write_scores(path[C], &d, 0, 1000, row_c) == 0);
    REQUIRE(write_scores(path[SILENT], &d, 0, 1000, row_silent) == 0);
    REQUIRE(write_scores(path[RIGHT], &d, 500, 500, row_right) == 0);
    REQUIRE(write_scores(path[SHORT], &d, 0, 999, row_a) == 0);

    /* the committee of A, B, C */
    char *out = NULL;
    const char *abc[] = { tool, "combine", "--data", mnist, "--list", path[A], path[B],
                          path[C], NULL };
    CHECK_INT_EQ(run(abc, &out), 0);
    REQUIRE(out);
    CHECK_INT_EQ(after(out, "file 1"), 100);
    CHECK_INT_EQ(after(out, "file 2"), 200);
    CHECK_INT_EQ(after(out, "file 3"), 100);
    CHECK_INT_EQ(after(out, "committee"), 200);
    CHECK_MSG(strstr(out, "by the files that miss them: 3: 0, 2: 100, 1: 100, 0: 0\n"),
              "the committee's errors by the files that miss them");
    CHECK_INT_EQ(after(out, "any file"), 300);
    CHECK_INT_EQ(count_lines(out, "wrong "), 200);
    char want[128];
    snprintf(want, sizeof want, "wrong       digit 0  label %u  answer %u  missed by 2 of 3 files\n",
             d.labels[0], (d.labels[0] + 1) % K);
    CHECK_MSG(strstr(out, want), "no line '%s'", want);
    snprintf(want, sizeof want, "wrong       digit 12  label %u  answer %u  missed by 1 of 3 files\n",
             d.labels[12], (d.labels[12] + 2) % K);
    CHECK_MSG(strstr(out, want), "no line '%s'", want);
    snprintf(want, sizeof want, "wrong       digit 11 ");
    CHECK_MSG(!strstr(out, want), "digit 11 is right by the mean of the three");
    free(out);

    /* nothing fired: class 0 by the largest score; no answer for a neocognitron */
    uint32_t zero_labels = 0;
    for (uint32_t i = 3; i < 1000; i += 10)
        zero_labels += d.labels[i] == 0;
    const char *cnn[] = { tool, "combine", "--data", mnist, path[SILENT], NULL };
    CHECK_INT_EQ(run(cnn, &out), 0);
    CHECK_INT_EQ(after(out, "committee"), 100 - (long)zero_labels);
    free(out);
    const char *neo[] = { tool, "combine", "--data", mnist, "--neocognitron", "--list",
                          path[SILENT], NULL };
    CHECK_INT_EQ(run(neo, &out), 0);
    CHECK_INT_EQ(after(out, "committee"), 100);
    snprintf(want, sizeof want, "wrong       digit 3  label %u  answer none  missed by 1 of 1 files\n",
             d.labels[3]);
    CHECK_MSG(strstr(out, want), "no line '%s'", want);
    free(out);

    /* --first: scores of digits 500-999 */
    const char *from500[] = { tool, "combine", "--data", mnist, "--first", "500", path[RIGHT],
                              NULL };
    CHECK_INT_EQ(run(from500, &out), 0);
    CHECK_INT_EQ(after(out, "committee"), 0);
    CHECK_MSG(strstr(out, "MNIST t10k 500-999 (500 digits, 10 classes)"), "the digits line");
    free(out);
    const char *from0[] = { tool, "combine", "--data", mnist, path[RIGHT], NULL };
    CHECK_INT_EQ(run(from0, &out), 0);
    CHECK_MSG(after(out, "committee") > 300, "scores of digits 500-999 read as 0-499");
    free(out);

    /* broken inputs */
    FILE *f = fopen(path[RAGGED], "wb");
    REQUIRE(f);
    for (int i = 0; i < 41; i++)
        fputc(0, f);
    fclose(f);
    REQUIRE(write_scores(path[NAN_], &d, 0, 1000, row_nan) == 0);
    const char *ragged[] = { tool, "combine", "--data", mnist, path[A], path[RAGGED], NULL };
    CHECK_INT_EQ(run(ragged, &out), 1);
    CHECK_MSG(after(out, "committee") < 0, "a committee printed for a ragged file");
    free(out);
    const char *nan[] = { tool, "combine", "--data", mnist, path[NAN_], NULL };
    CHECK_INT_EQ(run(nan, NULL), 1);
    const char *lengths[] = { tool, "combine", "--data", mnist, path[A], path[SHORT], NULL };
    CHECK_INT_EQ(run(lengths, NULL), 1);
    const char *past[] = { tool, "combine", "--data", mnist, "--first", "2", path[A], NULL };
    CHECK_INT_EQ(run(past, NULL), 1);
    char missing[320];
    snprintf(missing, sizeof missing, "%s/none.f32", dir);
    const char *gone[] = { tool, "combine", "--data", mnist, path[A], missing, NULL };
    CHECK_INT_EQ(run(gone, NULL), 1);
    const char *none[] = { tool, "combine", "--data", mnist, NULL };
    CHECK_INT_EQ(run(none, NULL), 2);
    const char *one_class[] = { tool, "combine", "--data", mnist, "--classes", "1", path[A],
                                NULL };
    CHECK_INT_EQ(run(one_class, NULL), 2);

    nc_dataset_fini(&d);
    for (int p = 0; p < N_PATHS; p++)
        unlink(path[p]);
    nc_test_fixture_unlink_t10k(mnist);
    rmdir(mnist);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !argv[1][0]) {
        fprintf(stderr, "usage: test_train_combine NEOCOG-TRAIN\n");
        return NC_TEST_SKIP;
    }
    test_combine(argv[1]);
    return nc_test_finish();
}

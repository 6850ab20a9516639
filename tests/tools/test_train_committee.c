/* tests/tools/test_train_committee.c — `neocog-train committee` bundling
 * neocognitron files with views (--heights) and compact weights (--log8),
 * and CNN columns with views, run as a user runs it.
 *
 * Two small random networks, one trained (so its record says) on gently
 * sheared digits and one on unsheared ones, are saved to a scratch folder;
 * the fixture's 1,000 digits stand in for MNIST t10k.  With --heights 40,44
 * the tool must write a committee whose record has four views, both heights
 * for each shear in member order, each member answering on its own two; the
 * members' records keep no views; the weights are log8; the test error is
 * recorded.  Without --heights the two shears may not share a committee, and
 * more views than fit (five heights, two shears) are refused.
 *
 * CNNs: two random columns, the second saved with views of its own.  With
 * --heights 18,20,22 the committee's record has three unsheared views at
 * those fit boxes and the columns' records none (the second's are dropped);
 * one column with --heights 19,21 is the one-column form with two views; a
 * fit box past the 29 px field is refused.
 * Usage: test_train_committee NEOCOG-TRAIN. */
#include "core/neocog_random.h"
#include "fixture.h"
#include "run_capture.h"
#include "test.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cnn.h"
#include "cnn_file.h"
#include "fileio.h"

static nc_test_rng rng = { 0x9e3779b97f4a7c15ULL };

static int save_net(const char *path, uint32_t deskew, uint64_t seed)
{
    nc_neocog *net = nc_test_random_net(&rng, 4, 5, 6);
    if (!net)
        return -ENOMEM;
    nc_model_info info;
    nc_test_neocog_info(&info, "test_train_committee");
    info.prep.deskew = deskew;
    info.seed = seed;
    uint8_t *buf = NULL;
    size_t len = 0;
    int err = nc_neocog_save(net, &info, &buf, &len);
    if (!err)
        err = nc_file_write_atomic(path, buf, len);
    free(buf);
    nc_neocog_free(net);
    return err;
}

static int save_column(const char *path, uint64_t seed, int views)
{
    nc_cnn *net = NULL;
    int err = nc_cnn_new("1x29x29-4C4-MP2-6C5-MP3-10N", &net);
    if (!err)
        err = nc_cnn_init_weights(net, seed);
    nc_model_info info;
    nc_test_cnn_info(&info);
    if (views) {
        info.prep.n_views = 2;
        info.prep.view_box[0] = 17;
        info.prep.view_box[1] = 23;
    }
    snprintf(info.command, sizeof info.command, "test_train_committee");
    info.seed = seed;
    if (!err)
        err = nc_test_write_cnn(path, net, &info);
    nc_cnn_free(net);
    return err;
}

static int run(const char *const *argv)
{
    char *out = NULL;
    int status = nc_run_capture(argv, NULL, &out);
    fprintf(stderr, "%s", out ? out : "");
    free(out);
    return status;
}

static void test_committee(const char *tool)
{
    const char *data = getenv("NC_TEST_DATA");
    char dir[] = "/tmp/nc-test-committee-XXXXXX";
    REQUIRE(data && mkdtemp(dir));
    char mnist[256], a[256], b[256], out[256];
    snprintf(mnist, sizeof mnist, "%s/mnist", dir);
    REQUIRE(mkdir(mnist, 0700) == 0);
    /* the fixture as the tool's MNIST folder: t10k only, which it reads */
    REQUIRE(nc_test_fixture_as_t10k(mnist) == 0);
    snprintf(a, sizeof a, "%s/gentle.ncm", dir);
    snprintf(b, sizeof b, "%s/plain.ncm", dir);
    snprintf(out, sizeof out, "%s/committee.ncm", dir);
    REQUIRE(save_net(a, NC_PREP_DESKEW_GENTLE, 1) == 0);
    REQUIRE(save_net(b, 0, 2) == 0);

    const char *with[] = { tool, "committee", "--out", out, "--data", mnist, "--log8",
                           "--heights", "40,44", a, b, NULL };
    CHECK_INT_EQ(run(with), 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_neocog_committee *c = NULL;
    nc_model_info info;
    REQUIRE(nc_file_read(out, 64u << 20, &buf, &len) == 0);
    REQUIRE(nc_neocog_committee_load(buf, len, &c, &info) == 0);
    CHECK_INT_EQ(c->n_members, 2);
    CHECK_INT_EQ(info.prep.n_views, 4);
    static const uint32_t box[4] = { 40, 44, 40, 44 }, shear[4] = { 2, 2, 0, 0 };
    for (uint32_t v = 0; v < 4; v++) {
        CHECK_INT_EQ(info.prep.view_box[v], box[v]);
        CHECK_INT_EQ(info.prep.view_deskew[v], shear[v]);
    }
    CHECK(c->view_mask[0] == 3u && c->view_mask[1] == 12u && c->n_scores == 4);
    CHECK(c->member_info[0].prep.n_views == 0 && c->member_info[1].prep.n_views == 0);
    CHECK(c->member_info[0].seed == 1 && c->member_info[1].seed == 2);
    CHECK_MSG(info.test_error >= 0.0 && strstr(info.test_set, "(1000)"),
              "recorded test error %.4f on '%s'", info.test_error, info.test_set);
    /* log8: the members' containers hold the codes */
    nc_mf_reader *r = NULL, *mr = NULL;
    const void *m1;
    size_t m1_len;
    REQUIRE(nc_mf_open(buf, len, &r) == 0);
    REQUIRE(nc_mf_member(r, 'N', 'M', 0, &m1, &m1_len) == 0);
    REQUIRE(nc_mf_open(m1, m1_len, &mr) == 0);
    CHECK(nc_mf_get(mr, NC_MF_TAG('W', '4', 'Q', ' '), NULL, NULL, NULL) == 0);
    nc_mf_close(mr);
    nc_mf_close(r);
    nc_neocog_committee_free(c);
    free(buf);

    /* different shears without views; more views than fit */
    const char *plain[] = { tool, "committee", "--out", out, "--data", mnist, a, b, NULL };
    CHECK(run(plain) != 0);
    const char *many[] = { tool, "committee", "--out", out, "--data", mnist,
                           "--heights", "36,38,40,42,44", a, b, NULL };
    CHECK(run(many) != 0);

    /* CNN columns */
    REQUIRE(save_column(a, 1, 0) == 0);
    REQUIRE(save_column(b, 2, 1) == 0);
    const char *cnn[] = { tool, "committee", "--out", out, "--data", mnist,
                          "--heights", "18,20,22", a, b, NULL };
    CHECK_INT_EQ(run(cnn), 0);
    nc_cnn_committee *cc = NULL;
    REQUIRE(nc_file_read(out, 64u << 20, &buf, &len) == 0);
    REQUIRE(nc_cnn_committee_load(buf, len, &cc, &info) == 0);
    CHECK_INT_EQ(cc->n_columns, 2);
    CHECK_INT_EQ(cc->n_views, 3);
    CHECK_INT_EQ(info.prep.n_views, 3);
    for (uint32_t v = 0; v < 3; v++) {
        CHECK_INT_EQ(info.prep.view_box[v], 18 + 2 * v);
        CHECK_INT_EQ(info.prep.view_deskew[v], 0);
    }
    CHECK(cc->column_info[0].prep.n_views == 0 && cc->column_info[1].prep.n_views == 0);
    CHECK(cc->column_info[0].seed == 1 && cc->column_info[1].seed == 2);
    CHECK_MSG(info.test_error >= 0.0 && strstr(info.test_set, "(1000)"),
              "recorded test error %.4f on '%s'", info.test_error, info.test_set);
    nc_cnn_committee_free(cc);
    free(buf);
    const char *one[] = { tool, "committee", "--out", out, "--data", mnist,
                          "--heights", "19,21", a, NULL };
    CHECK_INT_EQ(run(one), 0);
    REQUIRE(nc_file_read(out, 64u << 20, &buf, &len) == 0);
    REQUIRE(nc_cnn_committee_load(buf, len, &cc, &info) == 0);
    CHECK(cc->n_columns == 1 && cc->n_views == 2);
    CHECK(info.prep.view_box[0] == 19 && info.prep.view_box[1] == 21 && info.seed == 1);
    nc_cnn_committee_free(cc);
    free(buf);
    const char *wide[] = { tool, "committee", "--out", out, "--data", mnist,
                           "--heights", "20,40", a, NULL };
    CHECK(run(wide) != 0);

    /* --no-test (columns of other characters): no MNIST folder is read and
     * the record says not measured; not for neocognitrons */
    unlink(out);
    const char *no_test[] = { tool, "committee", "--out", out, "--no-test", "--data",
                              "/nonexistent", a, b, NULL };
    CHECK_INT_EQ(run(no_test), 0);
    REQUIRE(nc_file_read(out, 64u << 20, &buf, &len) == 0);
    REQUIRE(nc_cnn_committee_load(buf, len, &cc, &info) == 0);
    CHECK_INT_EQ(cc->n_columns, 2);
    CHECK_MSG(info.test_error < 0.0 && !info.test_set[0], "recorded test error %.4f on '%s'",
              info.test_error, info.test_set);
    nc_cnn_committee_free(cc);
    free(buf);
    REQUIRE(save_net(a, NC_PREP_DESKEW_GENTLE, 1) == 0);
    CHECK_INT_EQ(run(no_test), 2);

    nc_test_fixture_unlink_t10k(mnist);
    rmdir(mnist);
    unlink(a);
    unlink(b);
    unlink(out);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !argv[1][0]) {
        fprintf(stderr, "usage: test_train_committee NEOCOG-TRAIN\n");
        return NC_TEST_SKIP;
    }
    test_committee(argv[1]);
    return nc_test_finish();
}

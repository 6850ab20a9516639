/* tests/core/test_committee.c — CNN committees in one model file
 * (core/cnn/cnn.h, "committees"): the round trip with each column's own record,
 * the one-column form that old and new loaders share, clean errors for
 * truncated, flipped and forged files, the committee's output as the mean of
 * its columns' outputs, and the CPU engine running a committee file; views
 * (image.h): the answer as the mean over a digit's views, the CPU engine
 * with them, and views refused in a column's own record. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cnn.h"
#include "test.h"

#define ARCH_A "1x12x12-4C3-MP2-6C3-4N"
#define ARCH_B "1x12x12-3C5-MP2-5N-4N"

static nc_cnn *make_net(const char *arch, uint64_t seed)
{
    nc_cnn *net = NULL;
    if (nc_cnn_new(arch, &net))
        return NULL;
    if (nc_cnn_init_uniform(net, seed, 0.4f)) {
        nc_cnn_free(net);
        return NULL;
    }
    return net;
}

static void info_for(nc_model_info *info, uint64_t seed, const char *command, double err)
{
    memset(info, 0, sizeof *info);
    info->n_classes = 4;
    for (uint32_t c = 0; c < 4; c++)
        snprintf(info->labels[c], sizeof info->labels[c], "%u", c);
    info->prep = (nc_prep){ NC_PREP_MNIST, 12, 8, 0, 0, -1.0f, 0, 0, { 0 }, { 0 } };
    snprintf(info->data, sizeof info->data, "test data");
    snprintf(info->command, sizeof info->command, "%s", command);
    info->seed = seed;
    info->epochs = (uint32_t)seed + 10;
    info->test_error = err;
    snprintf(info->test_set, sizeof info->test_set, "a test set");
}

typedef struct fixture {
    nc_cnn *net[3];
    nc_model_info col[3], info;
} fixture;

static int fixture_make(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->net[0] = make_net(ARCH_A, 1);
    f->net[1] = make_net(ARCH_A, 2);
    f->net[2] = make_net(ARCH_B, 3);
    info_for(&f->col[0], 1, "train column one", 0.011);
    info_for(&f->col[1], 2, "train column two", 0.012);
    info_for(&f->col[2], 3, "train column three", 0.013);
    info_for(&f->info, 0, "bundle", 0.009);
    return f->net[0] && f->net[1] && f->net[2];
}

static void fixture_free(fixture *f)
{
    for (int i = 0; i < 3; i++)
        nc_cnn_free(f->net[i]);
}

static int same_net(const nc_cnn *a, const nc_cnn *b)
{
    char sa[NC_CNN_ARCH_MAX], sb[NC_CNN_ARCH_MAX];
    return !nc_cnn_arch_format(a, sa, sizeof sa) && !nc_cnn_arch_format(b, sb, sizeof sb) &&
           !strcmp(sa, sb) && a->n_params == b->n_params &&
           !memcmp(a->params, b->params, a->n_params * sizeof(float));
}

static void test_round_trip(void)
{
    fixture f;
    REQUIRE(fixture_make(&f));
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(nc_cnn_committee_save((const nc_cnn *const *)f.net, f.col, 3, &f.info, &buf,
                                  &len) == 0);
    nc_cnn_committee *c = NULL;
    nc_model_info back;
    REQUIRE(nc_cnn_committee_load(buf, len, &c, &back) == 0);
    CHECK_INT_EQ(c->n_columns, 3);
    CHECK_INT_EQ(c->n_inputs, 144);
    CHECK_INT_EQ(c->n_outputs, 4);
    for (int i = 0; i < 3; i++) {
        CHECK(same_net(c->column[i], f.net[i]));
        CHECK(c->column_info[i].seed == f.col[i].seed);
        CHECK(c->column_info[i].epochs == f.col[i].epochs);
        CHECK(c->column_info[i].test_error == f.col[i].test_error);
        CHECK(strcmp(c->column_info[i].command, f.col[i].command) == 0);
    }
    CHECK(strcmp(back.command, "bundle") == 0 && back.test_error == 0.009);
    nc_cnn_committee_free(c);

    /* the single-column loader refuses a committee rather than answer with
     * one column of it */
    nc_cnn *one = (nc_cnn *)0x1;
    CHECK_INT_EQ(nc_cnn_load(buf, len, &one, NULL), -ENOTSUP);
    CHECK(one == (nc_cnn *)0x1);
    free(buf);

    /* one column: exactly the old one-column file, read by both loaders */
    uint8_t *b1 = NULL, *b2 = NULL;
    size_t l1 = 0, l2 = 0;
    REQUIRE(nc_cnn_committee_save((const nc_cnn *const *)f.net, f.col, 1, &f.col[0], &b1,
                                  &l1) == 0);
    REQUIRE(nc_cnn_save(f.net[0], &f.col[0], &b2, &l2) == 0);
    CHECK(l1 == l2 && memcmp(b1, b2, l1) == 0);
    REQUIRE(nc_cnn_committee_load(b2, l2, &c, &back) == 0);
    CHECK_INT_EQ(c->n_columns, 1);
    CHECK(same_net(c->column[0], f.net[0]));
    CHECK(strcmp(c->column_info[0].command, "train column one") == 0);
    nc_cnn_committee_free(c);
    REQUIRE(nc_cnn_load(b1, l1, &one, NULL) == 0);
    CHECK(same_net(one, f.net[0]));
    nc_cnn_free(one);
    free(b1);
    free(b2);

    /* saving checks that the columns agree */
    nc_model_info col[3];
    memcpy(col, f.col, sizeof col);
    col[2].prep.box = 9;
    CHECK_INT_EQ(nc_cnn_committee_save((const nc_cnn *const *)f.net, col, 3, &f.info, &buf,
                                       &len), -EINVAL);
    memcpy(col, f.col, sizeof col);
    snprintf(col[1].labels[2], sizeof col[1].labels[2], "x");
    CHECK_INT_EQ(nc_cnn_committee_save((const nc_cnn *const *)f.net, col, 3, &f.info, &buf,
                                       &len), -EINVAL);
    nc_cnn *wide = make_net("1x13x13-4C4-MP2-6C3-4N", 4), *five = make_net("1x12x12-5N", 5);
    REQUIRE(wide && five);
    const nc_cnn *mixed[2] = { f.net[0], wide };
    CHECK_INT_EQ(nc_cnn_committee_save(mixed, f.col, 2, &f.info, &buf, &len), -EINVAL);
    CHECK(nc_cnn_committee_mismatch(f.net[0], &f.col[0], wide, &f.col[1]) != NULL);
    CHECK(nc_cnn_committee_mismatch(f.net[0], &f.col[0], five, &f.col[1]) != NULL);
    CHECK(nc_cnn_committee_mismatch(f.net[0], &f.col[0], f.net[2], &f.col[2]) == NULL);
    CHECK_INT_EQ(nc_cnn_committee_save((const nc_cnn *const *)f.net, f.col, 0, &f.info, &buf,
                                       &len), -EINVAL);
    CHECK_INT_EQ(nc_cnn_committee_save((const nc_cnn *const *)f.net, f.col,
                                       NC_CNN_MAX_COLUMNS + 1, &f.info, &buf, &len), -EINVAL);
    nc_cnn_free(wide);
    nc_cnn_free(five);
    fixture_free(&f);
}

static void test_corrupt(void)
{
    fixture f;
    REQUIRE(fixture_make(&f));
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(nc_cnn_committee_save((const nc_cnn *const *)f.net, f.col, 3, &f.info, &buf,
                                  &len) == 0);
    nc_cnn_committee *c = (nc_cnn_committee *)0x1;
    for (size_t cut = 0; cut < len; cut++) {
        int err = nc_cnn_committee_load(buf, cut, &c, NULL);
        if (err == 0 || c != (nc_cnn_committee *)0x1) {
            CHECK_MSG(0, "truncated to %zu of %zu bytes: %d", cut, len, err);
            break;
        }
    }
    nc_test_rng r = { 77 };
    uint8_t *copy = malloc(len);
    REQUIRE(copy);
    int clean = 0;
    for (int i = 0; i < 1000; i++) {
        memcpy(copy, buf, len);
        size_t bit = nc_test_next(&r) % (len * 8);
        copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        int err = nc_cnn_committee_load(copy, len, &c, NULL);
        clean += err < 0 && c == (nc_cnn_committee *)0x1;
    }
    CHECK_INT_EQ(clean, 1000);
    free(copy);
    free(buf);
    fixture_free(&f);
}

/* A committee file from the writer: NCOL = ncol (0: none), the given
 * column images under tags CL01.. (or `extra_tag` for the last one when
 * set), an ARCH section if asked, and the info if asked. */
static int load_forged(uint32_t ncol, uint8_t *const *cols, const size_t *col_len,
                       uint32_t n_cols, uint32_t extra_tag, int arch, const nc_model_info *info)
{
    nc_mf_writer *w = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    if (nc_mf_writer_new(NC_MF_KIND_CNN, &w))
        return 1;
    int err = ncol ? nc_mf_put_u32(w, NC_CNN_TAG_NCOL, &ncol, 1) : 0;
    for (uint32_t i = 0; !err && i < n_cols; i++) {
        uint32_t tag = NC_MF_TAG('C', 'L', '0' + (i + 1) / 10, '0' + (i + 1) % 10);
        if (extra_tag && i == n_cols - 1)
            tag = extra_tag;
        err = nc_mf_put(w, tag, NC_MF_TYPE_BYTES, cols[i], col_len[i]);
    }
    if (!err && arch)
        err = nc_mf_put_str(w, NC_MF_TAG('A', 'R', 'C', 'H'), ARCH_A);
    if (!err && info)
        err = nc_mf_put_info(w, info);
    if (!err)
        err = nc_mf_finish(w, &buf, &len);
    nc_mf_writer_free(w);
    if (err)
        return 1;
    nc_cnn_committee *c = (nc_cnn_committee *)0x1;
    err = nc_cnn_committee_load(buf, len, &c, NULL);
    if (!err)
        nc_cnn_committee_free(c);
    else
        CHECK(c == (nc_cnn_committee *)0x1);
    free(buf);
    return err;
}

static void test_forged(void)
{
    fixture f;
    REQUIRE(fixture_make(&f));
    uint8_t *col[4] = { NULL };
    size_t cl[4] = { 0 };
    for (int i = 0; i < 3; i++)
        REQUIRE(nc_cnn_save(f.net[i], &f.col[i], &col[i], &cl[i]) == 0);
    const uint32_t CL04 = NC_MF_TAG('C', 'L', '0', '4'), CL00 = NC_MF_TAG('C', 'L', '0', '0');
    CHECK_INT_EQ(load_forged(3, col, cl, 3, 0, 0, &f.info), 0);             /* control */
    CHECK_INT_EQ(load_forged(3, col, cl, 2, 0, 0, &f.info), -EBADMSG);      /* a column short */
    CHECK_INT_EQ(load_forged(2, col, cl, 3, 0, 0, &f.info), -EBADMSG);      /* one too many */
    CHECK_INT_EQ(load_forged(3, col, cl, 3, CL04, 0, &f.info), -EBADMSG);   /* CL03 missing */
    CHECK_INT_EQ(load_forged(3, col, cl, 3, CL00, 0, &f.info), -EBADMSG);
    CHECK_INT_EQ(load_forged(1, col, cl, 1, 0, 0, &f.info), -EBADMSG);      /* NCOL 1 */
    CHECK_INT_EQ(load_forged(NC_CNN_MAX_COLUMNS + 1, col, cl, 3, 0, 0, &f.info), -EBADMSG);
    CHECK_INT_EQ(load_forged(3, col, cl, 3, 0, 1, &f.info), -EBADMSG);      /* ARCH beside */
    CHECK_INT_EQ(load_forged(3, col, cl, 3, 0, 0, NULL), -EBADMSG);         /* no info */
    nc_model_info other = f.info;
    other.prep.pad = 1;                                                      /* disagrees */
    CHECK_INT_EQ(load_forged(3, col, cl, 3, 0, 0, &other), -EBADMSG);
    other = f.info;
    other.n_classes = 3;
    CHECK_INT_EQ(load_forged(3, col, cl, 3, 0, 0, &other), -EBADMSG);
    /* a column that is not a CNN file, a truncated one, a committee */
    uint8_t junk[40] = "NCMODEL";
    uint8_t *bad[3] = { col[0], junk, col[2] };
    size_t bl[3] = { cl[0], sizeof junk, cl[2] };
    CHECK_INT_EQ(load_forged(3, bad, bl, 3, 0, 0, &f.info), -EBADMSG);
    bad[1] = col[1];
    bl[1] = cl[1] - 1;
    CHECK_INT_EQ(load_forged(3, bad, bl, 3, 0, 0, &f.info), -EBADMSG);
    uint8_t *nested = NULL;
    size_t nl = 0;
    REQUIRE(nc_cnn_committee_save((const nc_cnn *const *)f.net, f.col, 2, &f.info, &nested,
                                  &nl) == 0);
    bad[1] = nested;
    bl[1] = nl;
    CHECK_INT_EQ(load_forged(3, bad, bl, 3, 0, 0, &f.info), -EBADMSG);
    free(nested);
    /* a column with other outputs (a 5-class net under 4-class info) */
    nc_cnn *five = make_net("1x12x12-4C3-MP2-6C3-5N", 9);
    nc_model_info i5 = f.col[1];
    i5.n_classes = 5;
    snprintf(i5.labels[4], sizeof i5.labels[4], "4");
    REQUIRE(five && nc_cnn_save(five, &i5, &col[3], &cl[3]) == 0);
    bad[1] = col[3];
    bl[1] = cl[3];
    CHECK_INT_EQ(load_forged(3, bad, bl, 3, 0, 0, &f.info), -EBADMSG);
    nc_cnn_free(five);
    for (int i = 0; i < 4; i++)
        free(col[i]);
    fixture_free(&f);
}

static void test_forward(void)
{
    fixture f;
    REQUIRE(fixture_make(&f));
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(nc_cnn_committee_save((const nc_cnn *const *)f.net, f.col, 3, &f.info, &buf,
                                  &len) == 0);
    nc_cnn_committee *c = NULL;
    REQUIRE(nc_cnn_committee_load(buf, len, &c, NULL) == 0);
    enum { N = 7 };
    float in[N * 144], out[N * 4], col_out[3][N * 4];
    nc_test_rng r = { 31 };
    for (size_t i = 0; i < N * 144; i++)
        in[i] = (float)nc_test_uniform(&r);
    nc_cnn_committee_work *w = NULL;
    REQUIRE(nc_cnn_committee_work_new(c, N, &w) == 0);
    CHECK_INT_EQ(nc_cnn_committee_run(c, w, in, N, out), 0);
    for (int k = 0; k < 3; k++) {
        nc_cnn_work *cw = NULL;
        REQUIRE(nc_cnn_work_new(f.net[k], N, &cw) == 0);
        CHECK_INT_EQ(nc_cnn_forward_blas(f.net[k], cw, in, N, col_out[k]), 0);
        nc_cnn_work_free(cw);
    }
    int columns_differ = 0;
    for (int i = 0; i < N * 4; i++) {
        double mean = ((double)col_out[0][i] + col_out[1][i] + col_out[2][i]) / 3.0;
        CHECK_NEAR(out[i], mean, 1e-6, 1e-6);
        columns_differ |= fabsf(col_out[0][i] - col_out[2][i]) > 1e-3f;
    }
    CHECK(columns_differ);      /* else the mean would prove nothing */
    /* two columns of one shape: exactly the existing same-shape committee */
    const nc_cnn *two[2] = { f.net[0], f.net[1] };
    nc_cnn_work *cw = NULL;
    REQUIRE(nc_cnn_work_new(f.net[0], N, &cw) == 0);
    float ref[N * 4];
    CHECK_INT_EQ(nc_cnn_committee_forward(two, 2, cw, in, N, ref), 0);
    nc_cnn_work_free(cw);
    nc_cnn_committee_free(c);
    nc_cnn_committee_work_free(w);
    free(buf);
    REQUIRE(nc_cnn_committee_save(two, f.col, 2, &f.info, &buf, &len) == 0);
    REQUIRE(nc_cnn_committee_load(buf, len, &c, NULL) == 0);
    REQUIRE(nc_cnn_committee_work_new(c, N, &w) == 0);
    CHECK_INT_EQ(nc_cnn_committee_run(c, w, in, N, out), 0);
    CHECK(memcmp(out, ref, sizeof out) == 0);
    CHECK_INT_EQ(nc_cnn_committee_run(c, w, in, N + 1, out), -EINVAL);
    nc_cnn_committee_work_free(w);
    nc_cnn_committee_free(c);

    /* the CPU engine runs the committee file, batches larger than its
     * worker included */
    nc_backend *be = NULL;
    REQUIRE(nc_backend_open(&nc_backend_cpu, buf, len, 0, &be) == 0);
    CHECK_INT_EQ(be->kind, NC_MF_KIND_CNN);
    CHECK_INT_EQ(be->input_len, 144);
    void *worker = NULL;
    REQUIRE(be->ops->worker_new(be->impl, 3, &worker) == 0);
    float got[N * 4];
    CHECK_INT_EQ(be->ops->forward(be->impl, worker, in, N, got), 0);
    for (int i = 0; i < N * 4; i++)
        CHECK_NEAR(got[i], ref[i], 1e-6, 1e-6);
    be->ops->worker_free(worker);
    nc_backend_close(be);
    free(buf);
    fixture_free(&f);
}

/* p with three views: the box, two pixels smaller unsheared, two larger
 * sheared. */
static void add_views(nc_prep *p)
{
    p->n_views = 3;
    p->view_box[0] = p->box;
    p->view_box[1] = p->box - 2;
    p->view_box[2] = p->box + 2;
    p->view_deskew[2] = 1;
}

static void test_views(void)
{
    fixture f;
    REQUIRE(fixture_make(&f));
    nc_model_info viewed = f.info;
    add_views(&viewed.prep);
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(nc_cnn_committee_save((const nc_cnn *const *)f.net, f.col, 3, &viewed, &buf,
                                  &len) == 0);
    nc_cnn_committee *c = NULL;
    nc_model_info got_info;
    REQUIRE(nc_cnn_committee_load(buf, len, &c, &got_info) == 0);
    CHECK_INT_EQ(c->n_views, 3);
    CHECK(memcmp(&got_info.prep, &viewed.prep, sizeof viewed.prep) == 0);
    CHECK_INT_EQ(c->column_info[1].prep.n_views, 0);

    /* N digits of three views: the mean over each digit's views of the
     * committee's answers on that view alone */
    enum { N = 5, V = 3, L = 144, K = 4 };
    float in[N * V * L], out[N * K], per_view[V][N * K];
    nc_test_rng r = { 47 };
    for (size_t i = 0; i < N * V * L; i++)
        in[i] = (float)nc_test_uniform(&r);
    nc_cnn_committee_work *w = NULL;
    REQUIRE(nc_cnn_committee_work_new(c, N * V, &w) == 0);
    CHECK_INT_EQ(nc_cnn_committee_run_views(c, w, in, N, out), 0);
    for (int v = 0; v < V; v++) {
        float x[N * L];
        for (int i = 0; i < N; i++)
            memcpy(x + i * L, in + ((size_t)i * V + v) * L, L * sizeof *x);
        CHECK_INT_EQ(nc_cnn_committee_run(c, w, x, N, per_view[v]), 0);
    }
    int views_differ = 0;
    for (int i = 0; i < N * K; i++) {
        const float mean = (per_view[0][i] + per_view[1][i] + per_view[2][i]) / 3.0f;
        CHECK_NEAR(out[i], mean, 1e-6, 1e-6);
        views_differ |= fabsf(per_view[0][i] - per_view[2][i]) > 1e-3f;
    }
    CHECK(views_differ);        /* else the mean would prove nothing */
    /* the work holds images: N digits of three views need 3N */
    CHECK_INT_EQ(nc_cnn_committee_run_views(c, w, in, N + 1, out), -EINVAL);
    nc_cnn_committee_work_free(w);
    nc_cnn_committee_free(c);

    /* the CPU engine: inputs of three views a digit, slices of 2 digits */
    nc_backend *be = NULL;
    REQUIRE(nc_backend_open(&nc_backend_cpu, buf, len, 0, &be) == 0);
    CHECK_INT_EQ(be->input_len, V * L);
    void *worker = NULL;
    REQUIRE(be->ops->worker_new(be->impl, 2, &worker) == 0);
    float got[N * K];
    CHECK_INT_EQ(be->ops->forward(be->impl, worker, in, N, got), 0);
    for (int i = 0; i < N * K; i++)     /* other batch sizes: BLAS may round apart */
        CHECK_NEAR(got[i], out[i], 1e-6, 1e-6);
    be->ops->worker_free(worker);
    nc_backend_close(be);
    free(buf);

    /* one column with views of its own record: its answer is the views'
     * mean of that column */
    REQUIRE(nc_cnn_committee_save((const nc_cnn *const *)f.net, f.col, 1, &viewed, &buf,
                                  &len) == 0);
    REQUIRE(nc_cnn_committee_load(buf, len, &c, NULL) == 0);
    CHECK_INT_EQ(c->n_columns, 1);
    CHECK_INT_EQ(c->n_views, 3);
    REQUIRE(nc_cnn_committee_work_new(c, N * V, &w) == 0);
    CHECK_INT_EQ(nc_cnn_committee_run_views(c, w, in, N, out), 0);
    nc_cnn_work *cw = NULL;
    float all[N * V * K];
    REQUIRE(nc_cnn_work_new(f.net[0], N * V, &cw) == 0);
    CHECK_INT_EQ(nc_cnn_forward_blas(f.net[0], cw, in, N * V, all), 0);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < K; k++) {
            const float *a = all + (size_t)i * V * K + k;
            CHECK_NEAR(out[i * K + k], (a[0] + a[K] + a[2 * K]) / 3.0f, 1e-6, 1e-6);
        }
    nc_cnn_work_free(cw);
    nc_cnn_committee_work_free(w);
    nc_cnn_committee_free(c);

    /* views in a column's own record: the writer refuses it, and a reader
     * takes a file that has one as corrupt */
    nc_model_info cols[3] = { f.col[0], f.col[1], f.col[2] };
    add_views(&cols[1].prep);
    uint8_t *b2 = NULL;
    size_t l2 = 0;
    CHECK_INT_EQ(nc_cnn_committee_save((const nc_cnn *const *)f.net, cols, 3, &viewed, &b2,
                                       &l2), -EINVAL);
    uint8_t *col[3] = { NULL };
    size_t cl[3] = { 0 };
    for (int i = 0; i < 3; i++)
        REQUIRE(nc_cnn_save(f.net[i], &cols[i], &col[i], &cl[i]) == 0);
    CHECK_INT_EQ(load_forged(3, col, cl, 3, 0, 0, &viewed), -EBADMSG);
    CHECK_INT_EQ(load_forged(3, col, cl, 3, 0, 0, &f.info), -EBADMSG);
    free(col[1]);
    REQUIRE(nc_cnn_save(f.net[1], &f.col[1], &col[1], &cl[1]) == 0);
    CHECK_INT_EQ(load_forged(3, col, cl, 3, 0, 0, &viewed), 0);          /* control */
    for (int i = 0; i < 3; i++)
        free(col[i]);
    free(buf);
    fixture_free(&f);
}

int main(void)
{
    test_round_trip();
    test_corrupt();
    test_forged();
    test_forward();
    test_views();
    return nc_test_finish();
}

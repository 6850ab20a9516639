/* tests/core/test_neocog_learn_par.c — US4 learning spread over threads
 * learns the same network, bit for bit, whatever the thread count.
 *
 * A small run on the committed MNIST fixture (prep NC_PREP_NEOCOG_65 at
 * H = 44, as neocog-train): US1 on edges, US2 / US3 on a few dozen digits
 * with small plane caps, then US4 supervised on a few hundred digits, once
 * each way:
 *   - the reference: nc_neocog_learn_sup one digit at a time, no runner (the
 *     plain path, form F's S-layer over all planes);
 *   - nc_neocog_learn_sup_batch with 1 part and no runner (neocog-train
 *     --threads 1);
 *   - the same through tools' thread pool with 3 threads and 3 parts, in
 *     batches of 16 per thread (neocog-train --threads 3);
 *   - the pool with 5 parts on 3 threads, in uneven batches of 7;
 *   - nc_neocog_learn_sup one digit at a time with the 3-thread runner lent.
 * Each must give the reference's K4, labels and every weight (a and b of all
 * stages), byte for byte, and the same answer per digit before learning.
 * Decisions hide small differences in the responses, so the responses are
 * checked directly too: nc_neocog_s_forward_planes over several splits of
 * every S-layer (of the net trained here and of the shipped neocognitron,
 * K4 = 2433) equals form F bit for bit.  Also checks the pool itself runs
 * every part exactly once.  Takes a few seconds. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "fileio.h"
#include "fixture.h"
#include "image.h"
#include "neocog.h"
#include "test.h"
#include "train_pool.h"

#define N_LOWER 50u         /* digits for US2 and for US3 */
#define N_US4 240u          /* digits for US4, after those */

/* ---- the pool itself ---- */

typedef struct {
    atomic_uint hits[64];
} count_job;

static void count_task(void *arg, uint32_t p)
{
    count_job *j = arg;
    atomic_fetch_add(&j->hits[p], 1u);
}

static void test_pool(void)
{
    train_pool *pool = NULL;
    REQUIRE(train_pool_new(3, &pool) == 0);
    CHECK_INT_EQ(train_pool_threads(pool), 3);
    for (uint32_t n = 0; n <= 40; n += 5) {
        for (int rep = 0; rep < 20; rep++) {
            count_job j;
            for (int p = 0; p < 64; p++)
                atomic_init(&j.hits[p], 0u);
            CHECK(train_pool_run(pool, count_task, &j, n) == 0);
            uint32_t bad = 0;
            for (uint32_t p = 0; p < 64; p++)
                bad += atomic_load(&j.hits[p]) != (p < n ? 1u : 0u);
            CHECK_MSG(bad == 0, "%u parts of %u not run exactly once", bad, n);
        }
    }
    train_pool_free(pool);
    CHECK(train_pool_new(0, &pool) == -EINVAL);
    CHECK(train_pool_new(1, &pool) == 0);
    count_job j;
    for (int p = 0; p < 64; p++)
        atomic_init(&j.hits[p], 0u);
    CHECK(train_pool_run(pool, count_task, &j, 4) == 0);
    CHECK(atomic_load(&j.hits[3]) == 1u);
    train_pool_free(pool);
}

/* ---- the training runs ---- */

static float *g_imgs;       /* prepped digits, [N_LOWER + N_US4][65 * 65] */
static uint32_t g_labels[N_LOWER + N_US4];
static size_t g_cells;

static int prep_fixture(void)
{
    nc_dataset d;
    int r = nc_test_fixture(&d);
    if (r < 0)
        return r;
    nc_prep prep = NC_PREP_NEOCOG_65;
    prep.box = 44;
    g_cells = nc_prep_out_len(&prep);
    g_imgs = malloc((N_LOWER + N_US4) * g_cells * sizeof(float));
    if (!g_imgs || d.count < N_LOWER + N_US4) {
        nc_dataset_fini(&d);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < N_LOWER + N_US4 && r == 0; i++) {
        nc_image im = { d.cols, d.rows, d.cols, d.pixels + (size_t)i * d.rows * d.cols };
        r = nc_prep_apply(&im, &prep, g_imgs + i * g_cells);
        if (r == -ENOENT) {
            memset(g_imgs + i * g_cells, 0, g_cells * sizeof(float));
            r = 0;
        }
        g_labels[i] = d.labels[i];
    }
    nc_dataset_fini(&d);
    return r;
}

/* US1..US3 trained, saved as a model file so every run starts from the same
 * bits. */
static int lower_stages(uint8_t **ret_buf, size_t *ret_len)
{
    nc_neocog_arch arch;
    nc_neocog_arch_default(&arch);
    arch.stage[1].k_max = 20;
    arch.stage[2].k_max = 48;
    arch.stage[3].k_max = 1000;
    nc_neocog *net = NULL;
    nc_neocog_learner *lr = NULL;
    nc_neocog_learn_opts o;
    nc_neocog_learn_opts_default(&o);
    nc_neocog_learn_step st;
    int r = nc_neocog_new(&arch, &net);
    if (r == 0)
        r = nc_neocog_train_us1(net, 16, 100.0f);
    if (r == 0)
        r = nc_neocog_learner_new(net, &lr);
    for (uint32_t l = 1; l < 3 && r == 0; l++)
        for (uint32_t i = 0; i < N_LOWER && r == 0; i++)
            r = nc_neocog_learn_unsup(net, lr, l, g_imgs + i * g_cells, &o, &st);
    /* a few US4 planes, so the file holds every stage */
    for (uint32_t i = 0; i < 10 && r == 0; i++)
        r = nc_neocog_learn_sup(net, lr, g_imgs + i * g_cells, g_labels[i], &o, &st);
    if (r == 0) {
        nc_model_info info;
        memset(&info, 0, sizeof(info));
        info.n_classes = 10;
        for (uint32_t k = 0; k < 10; k++)
            snprintf(info.labels[k], sizeof(info.labels[k]), "%u", k);
        info.prep = NC_PREP_NEOCOG_65;
        info.test_error = -1.0;
        r = nc_neocog_save(net, &info, ret_buf, ret_len);
    }
    nc_neocog_learner_free(lr);
    nc_neocog_free(net);
    return r;
}

enum { RUN_REF, RUN_BATCH1, RUN_POOL3, RUN_POOL3_P5, RUN_SUP_SPLIT, N_RUNS };
static const char *run_name[N_RUNS] = {
    "learn_sup, plain", "batch, 1 part", "batch, 3 threads", "batch, 5 parts on 3 threads",
    "learn_sup, 3 threads",
};

/* US4 on digits N_LOWER .. N_LOWER + N_US4 - 1 from the saved net, one way. */
static int us4_run(int how, const uint8_t *buf, size_t len, train_pool *pool,
                   nc_neocog **ret_net, int32_t *answers)
{
    nc_neocog *net = NULL;
    nc_neocog_learner *lr = NULL;
    nc_neocog_learn_opts o;
    nc_neocog_learn_opts_default(&o);
    nc_neocog_learn_step steps[64];
    const float *imgs = g_imgs + N_LOWER * g_cells;
    const uint32_t *labels = g_labels + N_LOWER;
    int r = nc_neocog_load(buf, len, &net, NULL);
    if (r == 0)
        r = nc_neocog_learner_new(net, &lr);
    if (r == 0 && how == RUN_POOL3)
        r = nc_neocog_learner_set_runner(lr, 3, train_pool_run, pool);
    if (r == 0 && how == RUN_POOL3_P5)
        r = nc_neocog_learner_set_runner(lr, 5, train_pool_run, pool);
    if (r == 0 && how == RUN_SUP_SPLIT)
        r = nc_neocog_learner_set_runner(lr, 3, train_pool_run, pool);
    if (how == RUN_REF || how == RUN_SUP_SPLIT) {
        for (uint32_t i = 0; i < N_US4 && r == 0; i++) {
            r = nc_neocog_learn_sup(net, lr, imgs + i * g_cells, labels[i], &o, &steps[0]);
            answers[i] = steps[0].answer;
        }
    } else {
        const uint32_t batch = how == RUN_BATCH1 ? 16 : how == RUN_POOL3 ? 48 : 7;
        for (uint32_t i = 0; i < N_US4 && r == 0; i += batch) {
            const uint32_t nb = N_US4 - i < batch ? N_US4 - i : batch;
            uint32_t done = 0;
            r = nc_neocog_learn_sup_batch(net, lr, imgs + i * g_cells, labels + i, nb, &o,
                                          steps, &done);
            if (r == 0 && done != nb)
                r = -EIO;
            for (uint32_t b = 0; b < nb; b++)
                answers[i + b] = steps[b].answer;
        }
    }
    nc_neocog_learner_free(lr);
    if (r < 0) {
        nc_neocog_free(net);
        return r;
    }
    *ret_net = net;
    return 0;
}

/* nc_neocog_s_forward_planes over several splits of every S-layer of net,
 * for n digits, against nc_neocog_s_forward form F: equal bit for bit. */
static void check_planes(const nc_neocog *net, const char *what, uint32_t first, uint32_t n)
{
    nc_neocog_state *st = NULL;
    nc_neocog_result res;
    REQUIRE(nc_neocog_state_new(net, &st) == 0);
    for (uint32_t i = first; i < first + n; i++) {
        REQUIRE(nc_neocog_forward(net, st, g_imgs + i * g_cells, NC_NEOCOG_FORM_F, &res) == 0);
        for (uint32_t l = 0; l < net->arch.n_stages; l++) {
            const nc_neocog_index *ix = net->s_ix[l];
            const uint32_t K = net->n_planes[l], ks = nc_neocog_kstride(K);
            const size_t cells = (size_t)ix->n_out * ix->n_out * ks;
            /* theta_L of US4 (what learning uses) and the stage's own */
            const float theta[2] = { 0.70f, net->arch.stage[l].theta };
            float *full = malloc(cells * sizeof(float)), *part = malloc(cells * sizeof(float));
            float *ws = malloc(nc_neocog_s_ws_floats(ix, K) * sizeof(float));
            REQUIRE(full && part && ws);
            for (int t = 0; t < 2; t++) {
                nc_neocog_s_args a = {
                    .ix = ix, .k_in = nc_neocog_k_in(net, l),
                    .in_stride = l == 0 ? 8u : nc_neocog_kstride(net->n_planes[l - 1]),
                    .k_out = K, .a = net->a[l], .b = net->b[l], .c = net->s_c[l],
                    .theta = theta[t],
                };
                const float *in = l == 0 ? st->ug : st->uc[l - 1];
                CHECK(nc_neocog_s_forward(&a, in, full, ws, NC_NEOCOG_FORM_F) == 0);
                /* splits into 1, 2, 3, 7 ranges and one range per 8 planes
                 * (61 ranges of wide layers, to keep the test quick) */
                const uint32_t splits[] = { 1, 2, 3, 7, ks / 8 <= 64 ? ks / 8 : 61 };
                for (size_t si = 0; si < sizeof(splits) / sizeof(splits[0]); si++) {
                    const uint32_t P = splits[si], U = ks / 8;
                    for (size_t c = 0; c < cells; c++)
                        part[c] = -1.0f;
                    for (uint32_t p = 0; p < P; p++) {
                        uint32_t u0 = (uint32_t)((uint64_t)U * p / P);
                        uint32_t u1 = (uint32_t)((uint64_t)U * (p + 1) / P);
                        if (u1 > u0)
                            CHECK(nc_neocog_s_forward_planes(&a, in, part, ws, 8 * u0,
                                                             8 * u1) == 0);
                    }
                    CHECK_MSG(!memcmp(full, part, cells * sizeof(float)),
                              "%s, digit %u, US%u (K %u), theta %.2f: %u ranges differ "
                              "from form F", what, i, l + 1, K, (double)theta[t], P);
                }
            }
            nc_neocog_s_args a = { .ix = ix, .k_in = nc_neocog_k_in(net, l),
                .in_stride = l == 0 ? 8u : nc_neocog_kstride(net->n_planes[l - 1]),
                .k_out = K, .a = net->a[l], .b = net->b[l], .c = net->s_c[l], .theta = 0.5f };
            const float *in = l == 0 ? st->ug : st->uc[l - 1];
            CHECK(nc_neocog_s_forward_planes(&a, in, part, ws, 0, ks + 8) == -EINVAL);
            CHECK(nc_neocog_s_forward_planes(&a, in, part, ws, 4, 8) == -EINVAL);
            CHECK(nc_neocog_s_forward_planes(&a, in, part, ws, 8, 8) == -EINVAL);
            free(full);
            free(part);
            free(ws);
        }
    }
    nc_neocog_state_free(st);
}

/* The same on the shipped neocognitron's first member (K4 = 2240: wide
 * ranges, every vector path), when the file is there. */
static void test_planes_shipped(void)
{
    char path[1024];
    nc_test_model_path("neocognitron.ncm", path, sizeof path);
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_neocog *net = NULL;
    if (nc_file_read_model(path, (size_t)1 << 31, &buf, &len) < 0) {
        fprintf(stderr, "%s not readable: shipped-model part skipped\n", path);
        return;
    }
    CHECK(nc_neocog_load_member(buf, len, 0, &net, NULL, NULL) == 0);
    free(buf);
    if (net)
        check_planes(net, "shipped", N_LOWER, 1);
    nc_neocog_free(net);
}

static void test_same_network(void)
{
    REQUIRE(prep_fixture() == 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(lower_stages(&buf, &len) == 0);
    train_pool *pool = NULL;
    REQUIRE(train_pool_new(3, &pool) == 0);

    nc_neocog *net[N_RUNS] = { 0 };
    static int32_t answers[N_RUNS][N_US4];
    for (int how = 0; how < N_RUNS; how++)
        CHECK_MSG(us4_run(how, buf, len, pool, &net[how], answers[how]) == 0,
                  "run '%s' failed", run_name[how]);
    const nc_neocog *ref = net[RUN_REF];
    if (ref) {
        const uint32_t L = ref->arch.n_stages - 1;
        fprintf(stderr, "reference: K1..K4 = %u / %u / %u / %u\n", ref->n_planes[0],
                ref->n_planes[1], ref->n_planes[2], ref->n_planes[3]);
        /* the run must have done something worth comparing */
        CHECK(ref->n_planes[L] > 40);
        CHECK(ref->n_planes[L] < N_US4 + 10);
        for (int how = 1; how < N_RUNS; how++) {
            const nc_neocog *n = net[how];
            if (!n)
                continue;
            CHECK_MSG(!memcmp(n->n_planes, ref->n_planes, sizeof(n->n_planes)),
                      "'%s': K4 = %u, reference %u", run_name[how], n->n_planes[L],
                      ref->n_planes[L]);
            if (memcmp(n->n_planes, ref->n_planes, sizeof(n->n_planes)))
                continue;
            CHECK_MSG(n->n_params == ref->n_params, "'%s'", run_name[how]);
            CHECK_MSG(!memcmp(n->labels, ref->labels, ref->n_planes[L] * sizeof(uint32_t)),
                      "'%s': labels differ", run_name[how]);
            size_t diff = 0;
            for (size_t i = 0; i < ref->n_params; i++)
                diff += memcmp(&n->params[i], &ref->params[i], sizeof(float)) != 0;
            CHECK_MSG(diff == 0, "'%s': %zu of %zu weights differ", run_name[how], diff,
                      ref->n_params);
            uint32_t ad = 0;
            for (uint32_t i = 0; i < N_US4; i++)
                ad += answers[how][i] != answers[RUN_REF][i];
            CHECK_MSG(ad == 0, "'%s': %u answers differ", run_name[how], ad);
        }
    }
    if (ref)
        check_planes(ref, "trained here", N_LOWER, 4);
    /* bad arguments */
    if (ref) {
        nc_neocog_learner *lr = NULL;
        nc_neocog_learn_opts o;
        nc_neocog_learn_opts_default(&o);
        nc_neocog_learn_step st;
        uint32_t bad_label = 10, done = 7;
        CHECK(nc_neocog_learner_new(ref, &lr) == 0);
        CHECK(nc_neocog_learner_set_runner(lr, 0, NULL, NULL) == -EINVAL);
        CHECK(nc_neocog_learner_set_runner(lr, NC_NEOCOG_MAX_PARTS + 1, NULL, NULL) == -EINVAL);
        CHECK(nc_neocog_learn_sup_batch(net[RUN_REF], lr, g_imgs, &bad_label, 1, &o, &st,
                                        &done) == -EINVAL);
        CHECK_INT_EQ(done, 0);
        CHECK(nc_neocog_learn_sup_batch(net[RUN_REF], lr, g_imgs, g_labels, 0, &o, &st,
                                        &done) == 0);
        nc_neocog_learner_free(lr);
    }
    for (int how = 0; how < N_RUNS; how++)
        nc_neocog_free(net[how]);
    train_pool_free(pool);
    free(buf);
}

int main(void)
{
    test_pool();
    test_same_network();
    if (g_imgs || prep_fixture() == 0)
        test_planes_shipped();
    free(g_imgs);
    return nc_test_finish();
}

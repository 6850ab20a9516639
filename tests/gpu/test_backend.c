/* tests/gpu/test_backend.c — parity of the GPU engine table
 * (gpu/backend/backend_gpu.h) with the CPU one (core/backend/backend.h's nc_backend_cpu).
 *
 * Both tables open the same model file image: the shipped CNN
 * (models/cnn-column.ncm), a CNN committee, the same committee looking at
 * each digit three ways (views: three fit boxes, one sheared), a
 * neocognitron seeded from fixture digits and saved to a file image here,
 * and a committee of three such neocognitrons stored in binary16 (one
 * answering by interpolating vectors) that looks at each digit four ways
 * (two heights, with and without a shear, each member on those of its own
 * shear).  Inputs are fixture digits preprocessed with the prep stored in
 * the model; batches 1, 3, 33, 1000 and 2100 (past the
 * engine's NC_BACKEND_GPU_MAX_BATCH, so forward splits) cycle through them
 * from different offsets.  The GPU's raw scores must match the CPU's:
 * ||gpu - cpu|| / ||cpu|| <= 1e-4 and max |gpu - cpu| <= 1e-4 max |cpu|, no
 * NaN (outputs are NaN-poisoned first), and the same label from
 * nc_backend_label except where the CPU's two best classes are within
 * 1e-5 of its largest score (a float-order tie).  Every visible device is
 * checked.  Then four threads with a worker each share one instance (the
 * engine's lock), each on its own batch, 25 rounds: every round must give
 * what that batch gave alone (to 1e-6); and the table's
 * argument checks (unknown device -ENODEV, a worker of another instance
 * -EINVAL).  Exit 77 without a device or without the fixtures.
 *
 * The shipped neocognitron (models/neocognitron.ncm: a committee of four
 * nets, each answered by the interpolating-vector classifier its NIVT mark
 * asks for, behind its cascade) is checked the same way at batches 1, 3, 33
 * and 1000, the last all 1,000 fixture digits: every label must be the
 * CPU's (its CPU forward is ~8 ms a digit, so no batch past 1000); and the
 * same through nc_backend_forward_fill, views prepared on demand, bit for
 * bit.
 *
 * NC_TEST_BACKEND_CPU_ONLY=1 runs every check with the CPU table on both
 * sides: it tests this test on a machine without a GPU. */
#include "fixture.h"
#include "test.h"
#include "view_fill.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"
#include "backend_gpu.h"
#include "cnn.h"
#include "dataset.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "neocog.h"

#define TOL 1e-4
static const uint32_t batches[] = { 1, 3, 33, 1000, 2100 };

static const nc_backend_ops *under_test = &nc_backend_gpu;

/* Fixture digits, raw 8-bit. */
static nc_dataset ds;


/* n inputs for be: fixture digits off, off+1, ... (cycling), each through
 * the model's own prep; a digit the prep refuses (no ink) stays zero. */
static float *make_inputs(const nc_backend *be, uint32_t off, uint32_t n)
{
    float *in = calloc((size_t)n * be->input_len, sizeof *in);
    for (uint32_t i = 0; in && i < n; i++) {
        uint32_t k = (off + i) % ds.count;
        nc_image img = { ds.cols, ds.rows, ds.cols, ds.pixels + (size_t)k * ds.rows * ds.cols };
        nc_prep_apply(&img, &be->info.prep, in + (size_t)i * be->input_len);
    }
    return in;
}

static int forward(const nc_backend *be, void *w, const float *in, uint32_t n, float *out)
{
    return be->ops->forward(be->impl, w, in, n, out);
}

/* gpu against cpu over n rows of nc classes; returns the number of
 * failures found (each also printed). */
static int compare(const char *what, uint32_t kind, const float *gpu, const float *cpu,
                   uint32_t n, uint32_t nc)
{
    double d2 = 0.0, r2 = 0.0, dmax = 0.0, rmax = 0.0;
    uint32_t nan = 0, hard = 0, soft = 0;
    for (size_t i = 0; i < (size_t)n * nc; i++) {
        if (isnan(gpu[i])) {
            nan++;
            continue;
        }
        double d = (double)gpu[i] - cpu[i];
        d2 += d * d;
        r2 += (double)cpu[i] * cpu[i];
        dmax = fabs(d) > dmax ? fabs(d) : dmax;
        rmax = fabs(cpu[i]) > rmax ? fabs(cpu[i]) : rmax;
    }
    for (uint32_t i = 0; i < n; i++) {
        const float *g = gpu + (size_t)i * nc, *c = cpu + (size_t)i * nc;
        int32_t lg = nc_backend_label(kind, g, nc), lc = nc_backend_label(kind, c, nc);
        if (lg == lc)
            continue;
        double cg = lg >= 0 ? c[lg] : 0.0, cc = lc >= 0 ? c[lc] : 0.0;
        if (fabs(cc - cg) <= 1e-5 * (rmax > 0 ? rmax : 1.0))
            soft++;
        else
            hard++;
    }
    double rel = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
    double mrel = rmax > 0 ? dmax / rmax : dmax;
    int bad = nan || hard || !(rel <= TOL) || !(mrel <= TOL);
    CHECK_MSG(!bad, "%s: %u NaN, %u labels differ (%u more within a tie), rel err %.3g, "
              "max err %.3g", what, nan, hard, soft, rel, mrel);
    return bad;
}

/* ---- one model on one device ------------------------------------------------ */

typedef struct share {
    const nc_backend *gpu;
    const float *in, *ref;      /* BATCH_T rows per thread offset */
    uint32_t rows, nc, kind;
    int rounds, filled;         /* filled: through nc_backend_forward_fill */
    int failures;
} share;

#define THREADS 4
#define ROUNDS 25

static void *thread_main(void *arg)
{
    share *sh = arg;
    void *w = NULL;
    float *out = malloc((size_t)sh->rows * sh->nc * sizeof *out);
    if (!out || sh->gpu->ops->worker_new(sh->gpu->impl, 64, &w)) {
        free(out);
        __atomic_add_fetch(&sh->failures, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    for (int r = 0; r < sh->rounds; r++) {
        for (size_t i = 0; i < (size_t)sh->rows * sh->nc; i++)
            out[i] = NAN;
        int bad = (sh->filled ? nc_test_forward_filled(sh->gpu, w, sh->in, sh->rows, out, NULL)
                              : forward(sh->gpu, w, sh->in, sh->rows, out)) != 0;
        for (size_t i = 0; !bad && i < (size_t)sh->rows * sh->nc; i++)
            bad = !(fabsf(out[i] - sh->ref[i]) <= 1e-6f * (1.0f + fabsf(sh->ref[i])));
        if (bad)
            __atomic_add_fetch(&sh->failures, 1, __ATOMIC_RELAXED);
    }
    sh->gpu->ops->worker_free(w);
    free(out);
    return NULL;
}

/* Four threads, each its own worker and its own inputs, on one instance:
 * each must get, every round, exactly what it got alone.  filled: the
 * threads prepare their views on demand (nc_backend_forward_fill), so a
 * thread that finds the engine busy prepares them while it waits. */
static void test_threads(const char *name, const nc_backend *gpu, int rounds, int filled)
{
    share sh[THREADS];
    pthread_t th[THREADS];
    void *w = NULL;
    REQUIRE(gpu->ops->worker_new(gpu->impl, 64, &w) == 0);
    for (int t = 0; t < THREADS; t++) {
        sh[t] = (share){ .gpu = gpu, .rows = 17 + 16 * (uint32_t)t,
                         .nc = gpu->info.n_classes, .kind = gpu->kind, .rounds = rounds,
                         .filled = filled };
        float *in = make_inputs(gpu, 100 + 97 * (uint32_t)t, sh[t].rows);
        float *ref = malloc((size_t)sh[t].rows * sh[t].nc * sizeof *ref);
        REQUIRE(in && ref);
        CHECK_INT_EQ(forward(gpu, w, in, sh[t].rows, ref), 0);
        sh[t].in = in;
        sh[t].ref = ref;
    }
    gpu->ops->worker_free(w);
    int started = 0;
    for (; started < THREADS; started++)
        if (pthread_create(&th[started], NULL, thread_main, &sh[started]))
            break;
    CHECK_INT_EQ(started, THREADS);
    int fails = 0;
    for (int t = 0; t < started; t++) {
        pthread_join(th[t], NULL);
        fails += sh[t].failures;
    }
    CHECK_MSG(fails == 0, "%s: %d of %d shared-instance forwards differ or fail", name, fails,
              THREADS * rounds);
    fprintf(stderr, "  %s: %d threads x %d rounds on one instance%s: %s\n", name, THREADS,
            rounds, filled ? ", views on demand" : "", fails ? "FAILED" : "same answers");
    for (int t = 0; t < THREADS; t++) {
        free((void *)sh[t].in);
        free((void *)sh[t].ref);
    }
}

/* max_batch: the open's (0: the engine's largest); any batch is then split
 * into passes of at most that many digits, with the same answers. */
static void test_model(const char *name, const uint8_t *buf, size_t len, int device,
                       uint32_t max_batch)
{
    nc_backend *cpu = NULL, *gpu = NULL;
    REQUIRE(nc_backend_open(&nc_backend_cpu, buf, len, 0, &cpu) == 0);
    int r = nc_backend_open_batch(under_test, buf, len, device, max_batch, &gpu);
    CHECK_MSG(r == 0, "%s: open on device %d: %d (%s)", name, device, r,
              under_test == &nc_backend_gpu ? nc_backend_gpu_last_error() : "");
    if (r) {
        nc_backend_close(cpu);
        return;
    }
    CHECK_INT_EQ(gpu->kind, cpu->kind);
    CHECK_INT_EQ(gpu->input_len, cpu->input_len);
    CHECK_INT_EQ(gpu->info.n_classes, cpu->info.n_classes);
    if (under_test->device_bytes)
        CHECK_MSG(under_test->device_bytes(gpu->impl) > 0, "%s: no device memory counted", name);

    void *wc = NULL, *wg = NULL, *wg2 = NULL;
    REQUIRE(cpu->ops->worker_new(cpu->impl, 64, &wc) == 0);
    REQUIRE(gpu->ops->worker_new(gpu->impl, 64, &wg) == 0);
    const uint32_t nc = cpu->info.n_classes, maxn = batches[NC_ARRAY_LEN(batches) - 1];
    float *oc = malloc((size_t)maxn * nc * sizeof *oc), *og = malloc((size_t)maxn * nc * sizeof *og);
    REQUIRE(oc && og);
    int fails = 0;
    for (size_t bi = 0; bi < NC_ARRAY_LEN(batches); bi++) {
        const uint32_t n = batches[bi], off = (uint32_t)(bi * 131);
        float *in = make_inputs(cpu, off, n);
        REQUIRE(in);
        for (size_t i = 0; i < (size_t)n * nc; i++)
            og[i] = NAN;
        CHECK_INT_EQ(forward(cpu, wc, in, n, oc), 0);
        r = forward(gpu, wg, in, n, og);
        CHECK_MSG(r == 0, "%s batch %u: forward %d (%s)", name, n, r,
                  under_test == &nc_backend_gpu ? nc_backend_gpu_last_error() : "");
        char what[128];
        snprintf(what, sizeof what, "%s device %d batch %u", name, device, n);
        int bad = compare(what, cpu->kind, og, oc, n, nc);
        fails += bad;
        if (n == 1000) {
            uint32_t right = 0;
            for (uint32_t i = 0; i < n; i++)
                right += nc_backend_label(cpu->kind, og + (size_t)i * nc, nc) ==
                         (int32_t)ds.labels[(off + i) % ds.count];
            fprintf(stderr, "  %s on device %d: batch 1000: %u right\n", name, device, right);
        }
        free(in);
    }
    fprintf(stderr, "  %s on device %d, made for %u digits: batches 1/3/33/1000/2100: %s\n",
            name, device, max_batch, fails ? "DIFFER" : "same as the CPU");
    /* A worker of another instance is refused. */
    REQUIRE(cpu->ops->worker_new(cpu->impl, 64, &wg2) == 0);
    float *in1 = make_inputs(cpu, 0, 1);
    if (under_test != &nc_backend_cpu)
        CHECK_INT_EQ(forward(gpu, wg2, in1, 1, og), -EINVAL);
    CHECK_INT_EQ(forward(gpu, wg, in1, 0, og), 0);
    free(in1);
    cpu->ops->worker_free(wg2);
    cpu->ops->worker_free(wc);
    gpu->ops->worker_free(wg);
    test_threads(name, gpu, ROUNDS, 0);
    free(oc);
    free(og);
    nc_backend_close(gpu);
    nc_backend_close(cpu);
}

/* The shipped neocognitron against the CPU table: batches 1, 3, 33 and
 * 1000 (every fixture digit), on an instance made for max_batch digits (0:
 * the engine's largest; 64: neocogd's default, 1000 then runs in slices of
 * 64, its cascade in each). */
static void test_shipped(const uint8_t *buf, size_t len, int device, uint32_t max_batch)
{
    static const uint32_t sb[] = { 1, 3, 33, 1000 };
    nc_backend *cpu = NULL, *gpu = NULL;
    REQUIRE(nc_backend_open(&nc_backend_cpu, buf, len, 0, &cpu) == 0);
    int r = nc_backend_open_batch(under_test, buf, len, device, max_batch, &gpu);
    CHECK_MSG(r == 0, "shipped neocognitron: open on device %d: %d (%s)", device, r,
              under_test == &nc_backend_gpu ? nc_backend_gpu_last_error() : "");
    if (r) {
        nc_backend_close(cpu);
        return;
    }
    void *wc = NULL, *wg = NULL;
    REQUIRE(cpu->ops->worker_new(cpu->impl, 64, &wc) == 0);
    REQUIRE(gpu->ops->worker_new(gpu->impl, 64, &wg) == 0);
    const uint32_t nc = cpu->info.n_classes, maxn = 1000;
    float *oc = malloc((size_t)maxn * nc * sizeof *oc), *og = malloc((size_t)maxn * nc * sizeof *og);
    REQUIRE(oc && og);
    int fails = 0;
    uint32_t right = 0, total = 0;
    for (size_t bi = 0; bi < NC_ARRAY_LEN(sb); bi++) {
        const uint32_t n = sb[bi], off = n == 1000 ? 0 : 500 + 40 * (uint32_t)bi;
        float *in = make_inputs(cpu, off, n);
        REQUIRE(in);
        for (size_t i = 0; i < (size_t)n * nc; i++)
            og[i] = NAN;
        CHECK_INT_EQ(forward(cpu, wc, in, n, oc), 0);
        r = forward(gpu, wg, in, n, og);
        CHECK_MSG(r == 0, "shipped batch %u: forward %d (%s)", n, r,
                  under_test == &nc_backend_gpu ? nc_backend_gpu_last_error() : "");
        char what[128];
        snprintf(what, sizeof what, "shipped neocognitron device %d batch %u", device, n);
        fails += compare(what, cpu->kind, og, oc, n, nc);
        /* views prepared on demand: the same scores, bit for bit */
        float *of = malloc((size_t)n * nc * sizeof *of);
        REQUIRE(of);
        r = nc_test_forward_filled(gpu, wg, in, n, of, NULL);
        CHECK_MSG(r == 0 && memcmp(of, og, (size_t)n * nc * sizeof *of) == 0,
                  "shipped batch %u: views filled on demand answer otherwise (%d)", n, r);
        free(of);
        uint32_t same = 0;
        for (uint32_t i = 0; i < n; i++) {
            const int32_t lg = nc_backend_label(cpu->kind, og + (size_t)i * nc, nc);
            same += lg == nc_backend_label(cpu->kind, oc + (size_t)i * nc, nc);
            right += lg == (int32_t)ds.labels[(off + i) % ds.count];
        }
        total += n;
        CHECK_MSG(same == n, "shipped neocognitron device %d batch %u: %u of %u labels as "
                  "the CPU's", device, n, same, n);
        free(in);
    }
    fprintf(stderr, "  shipped neocognitron on device %d, made for %u digits: batches "
            "1/3/33/1000: %s (%u of %u right)\n", device, max_batch,
            fails ? "DIFFER" : "same as the CPU", right, total);
    cpu->ops->worker_free(wc);
    gpu->ops->worker_free(wg);
    if (max_batch == 64)
        test_threads("shipped neocognitron", gpu, under_test == &nc_backend_gpu ? 10 : 1, 1);
    free(oc);
    free(og);
    nc_backend_close(gpu);
    nc_backend_close(cpu);
}

/* ---- the models ---------------------------------------------------------------- */

static int read_shipped(uint8_t **buf, size_t *len)
{
    char path[1024];
    nc_test_model_path("neocognitron.ncm", path, sizeof path);
    return nc_file_read_model(path, 256u << 20, buf, len);
}

/* The shipped file with a one-view stage (neocog.h, "the cascade") on the
 * second of its first member's views, at a threshold that decides about
 * half of the digits and leaves the rest to the member and the committee:
 * every path of the engine's cascade in one batch.  -ENOENT when the file
 * has no cascade. */
static int with_view_stage(const uint8_t *buf, size_t len, uint8_t **ret, size_t *ret_len)
{
    nc_neocog_committee *c = NULL;
    int err = nc_neocog_committee_load(buf, len, &c, NULL);
    if (err)
        return err;
    nc_neocog_cascade cas = c->cascade;
    const uint32_t mask = c->view_mask[cas.first];
    nc_neocog_committee_free(c);
    if (!cas.on || __builtin_popcount(mask) < 2)
        return -ENOENT;
    const uint32_t low = mask & (mask - 1u);        /* mask less its lowest view */
    cas.view_on = 1;
    cas.view = (uint32_t)__builtin_ctz(low);
    cas.view_threshold = 0.9;
    cas.view_beta = cas.beta;
    return nc_neocog_cascade_rewrite(buf, len, &cas, ret, ret_len);
}

static int read_cnn(uint8_t **buf, size_t *len)
{
    char path[1024];
    nc_test_model_path("cnn-column.ncm", path, sizeof path);
    return nc_file_read_model(path, 64u << 20, buf, len);
}

/* The neocognitron of tests/gpu/test_neocog.c (edge-trained US1, US2..US4
 * seeded from 300 fixture digits from digit `first` on, to `target` planes),
 * and its record. */
static int make_neocog_net(uint32_t first, const uint32_t target[4], nc_neocog **ret_net,
                           nc_model_info *info)
{
    nc_prep prep = NC_PREP_NEOCOG_65;
    const uint32_t cells = prep.size * prep.size, n = 300;
    float *digits = malloc((size_t)n * cells * sizeof *digits);
    uint8_t *labels = malloc(n);
    uint32_t got = 0;
    for (uint32_t i = first; digits && labels && i < ds.count && got < n; i++) {
        nc_image img = { ds.cols, ds.rows, ds.cols, ds.pixels + (size_t)i * ds.rows * ds.cols };
        if (nc_prep_apply(&img, &prep, digits + (size_t)got * cells) < 0)
            continue;
        labels[got++] = ds.labels[i];
    }
    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    nc_neocog *net = NULL;
    int r = digits && labels ? 0 : -ENOMEM;
    if (!r) r = nc_neocog_new(&A, &net);
    if (!r) r = nc_neocog_train_us1(net, 16, 100.0f);
    if (!r) r = nc_neocog_seed_from_digits(net, digits, labels, got, target, 2);
    if (!r) {
        memset(info, 0, sizeof *info);
        info->n_classes = A.n_classes;
        for (uint32_t k = 0; k < info->n_classes; k++)
            snprintf(info->labels[k], sizeof info->labels[k], "%u", k);
        info->prep = prep;
        info->test_error = -1.0;
        snprintf(info->data, sizeof info->data, "fixture digits %u..%u (seeded, test only)",
                 first, first + got);
        *ret_net = net;
    } else {
        nc_neocog_free(net);
    }
    free(digits);
    free(labels);
    return r;
}

static int make_neocog(uint8_t **buf, size_t *len)
{
    static const uint32_t target[4] = { 16, 26, 78, 70 };
    nc_neocog *net = NULL;
    nc_model_info info;
    int r = make_neocog_net(0, target, &net, &info);
    if (!r)
        r = nc_neocog_save(net, &info, buf, len);
    nc_neocog_free(net);
    return r;
}

/* A neocognitron committee of three such nets, seeded from other digits to
 * other plane counts, the second answering by interpolating vectors, all
 * stored in binary16 (core/neocog/neocog.h, "committees"), whose record asks for
 * four views of each digit (image.h): two unsheared, for the first two
 * members, and two sheared, for the third, whose record says it was
 * trained so (it was not: the test compares engines).  Batch 2100 is then
 * 8400 images, which the GPU table splits at whole digits, and each member
 * takes its own views gathered from every digit's four. */
static int make_neocog_committee(uint8_t **buf, size_t *len)
{
    static const uint32_t target[3][4] = {
        { 16, 26, 78, 70 }, { 16, 20, 60, 90 }, { 16, 30, 50, 40 } };
    nc_neocog *nets[3] = { NULL, NULL, NULL };
    nc_model_info info[3];
    const uint32_t top_t[3] = { 0, 4, 0 };
    int r = 0;
    for (uint32_t i = 0; !r && i < 3; i++)
        r = make_neocog_net(300 * i, target[i], &nets[i], &info[i]);
    nc_model_info viewed = info[0];
    const uint32_t h = viewed.prep.box;
    const uint32_t box[4] = { h, h - 4, h + 4, h }, shear[4] = { 0, 0, 1, 1 };
    viewed.prep.n_views = 4;
    memcpy(viewed.prep.view_box, box, sizeof box);
    memcpy(viewed.prep.view_deskew, shear, sizeof shear);
    info[2].prep.deskew = 1;
    if (!r)
        r = nc_neocog_committee_save((const nc_neocog *const *)nets, info, top_t, 3, &viewed,
                                     NC_NEOCOG_WRITE_HALF, buf, len);
    for (uint32_t i = 0; i < 3; i++)
        nc_neocog_free(nets[i]);
    return r;
}

/* A committee of three columns, two architectures: the shipped CNN, a copy
 * with other weights, and a deeper net with its own width normalisation
 * (W14: the GPU table transforms its input on the host, core's run on the
 * CPU side; random weights: the test compares the engines, not accuracy),
 * saved as one model file image.  views: the committee's record asks for
 * three views of each digit (fit boxes 20, 17 and 22, the last sheared
 * upright), so batch 2100 is 6300 images, which the GPU table splits at
 * whole digits. */
static int make_committee(const uint8_t *cnn, size_t cnn_len, int views, uint8_t **buf,
                          size_t *len)
{
    nc_cnn *nets[3] = { NULL, NULL, NULL };
    nc_model_info info, col[3];
    int r = nc_cnn_load(cnn, cnn_len, &nets[0], &info);
    info.prep = nc_prep_no_views(&info.prep);  /* the shipped file's own, if any */
    if (!r)
        r = nc_cnn_new("1x29x29-20C4-MP2-40C5-MP3-150N-10N", &nets[1]);
    if (!r)
        r = nc_cnn_init_weights(nets[1], 21);
    if (!r)
        r = nc_cnn_new("1x29x29W14-20C4-MP2-60C4-MP2-100C3-MP3-150N-10N", &nets[2]);
    if (!r)
        r = nc_cnn_init_weights(nets[2], 22);
    if (!r) {
        for (int i = 0; i < 3; i++)
            col[i] = info;
        if (views) {
            const uint32_t box[3] = { 20, 17, 22 }, shear[3] = { 0, 0, 1 };
            info.prep.n_views = 3;
            memcpy(info.prep.view_box, box, sizeof box);
            memcpy(info.prep.view_deskew, shear, sizeof shear);
        }
        r = nc_cnn_committee_save((const nc_cnn *const *)nets, col, 3, &info, buf, len);
    }
    for (int i = 0; i < 3; i++)
        nc_cnn_free(nets[i]);
    return r;
}

int main(void)
{
    const char *self = getenv("NC_TEST_BACKEND_CPU_ONLY");
    int n_dev = 1;
    if (self && *self == '1') {
        under_test = &nc_backend_cpu;
        fprintf(stderr, "NC_TEST_BACKEND_CPU_ONLY: the CPU table on both sides\n");
    } else {
        n_dev = nc_backend_gpu_device_count();
        if (n_dev <= 0) {
            fprintf(stderr, "no CUDA device: skipped\n");
            return NC_TEST_SKIP;
        }
        for (int d = 0; d < n_dev; d++) {
            char desc[512];
            nc_backend_gpu_describe(d, desc, sizeof desc);
            fprintf(stderr, "device %d: %s\n", d, desc);
        }
    }
    if (nc_test_fixture(&ds) < 0) {
        fprintf(stderr, "fixture digits not available: skipped\n");
        return NC_TEST_SKIP;
    }
    uint8_t *cnn = NULL, *neo = NULL, *shipped = NULL, *com = NULL, *ncom = NULL, *vcom = NULL;
    uint8_t *staged = NULL;
    size_t cnn_len = 0, neo_len = 0, shipped_len = 0, com_len = 0, ncom_len = 0, vcom_len = 0;
    size_t staged_len = 0;
    int r = read_cnn(&cnn, &cnn_len);
    CHECK_MSG(r == 0, "models/cnn-column.ncm: %d", r);
    if (cnn) {
        r = make_committee(cnn, cnn_len, 0, &com, &com_len);
        CHECK_MSG(r == 0, "cannot build the committee: %d", r);
        r = make_committee(cnn, cnn_len, 1, &vcom, &vcom_len);
        CHECK_MSG(r == 0, "cannot build the committee with views: %d", r);
    }
    r = make_neocog(&neo, &neo_len);
    CHECK_MSG(r == 0, "cannot build the neocognitron: %d", r);
    r = make_neocog_committee(&ncom, &ncom_len);
    CHECK_MSG(r == 0, "cannot build the neocognitron committee: %d", r);
    r = read_shipped(&shipped, &shipped_len);
    CHECK_MSG(r == 0, "models/neocognitron.ncm: %d", r);
    if (shipped) {
        r = with_view_stage(shipped, shipped_len, &staged, &staged_len);
        CHECK_MSG(r == 0, "models/neocognitron.ncm with a one-view stage: %d", r);
    }

    if (under_test == &nc_backend_gpu) {
        nc_backend *be = NULL;
        CHECK(nc_backend_gpu.supports(NC_MF_KIND_CNN) && nc_backend_gpu.supports(NC_MF_KIND_NEOCOG));
        if (cnn) {
            CHECK_INT_EQ(nc_backend_open(&nc_backend_gpu, cnn, cnn_len, n_dev, &be), -ENODEV);
            CHECK_INT_EQ(nc_backend_open(&nc_backend_gpu, cnn, cnn_len, -1, &be), -ENODEV);
            CHECK_INT_EQ(nc_backend_open(&nc_backend_gpu, cnn, cnn_len / 2, 0, &be) < 0, 1);
        }
    }
    for (int d = 0; d < n_dev; d++) {
        if (cnn) {
            test_model("cnn", cnn, cnn_len, d, 0);
            test_model("cnn", cnn, cnn_len, d, 64);     /* neocogd's default max_batch */
        }
        if (com)
            test_model("cnn committee", com, com_len, d, 0);
        if (vcom) {
            test_model("cnn committee with views", vcom, vcom_len, d, 0);
            test_model("cnn committee with views", vcom, vcom_len, d, 5);
        }
        if (neo)
            test_model("neocognitron", neo, neo_len, d, 0);
        if (ncom) {
            test_model("neocognitron committee", ncom, ncom_len, d, 0);
            test_model("neocognitron committee", ncom, ncom_len, d, 7);
        }
        if (shipped) {
            test_shipped(shipped, shipped_len, d, 0);
            test_shipped(shipped, shipped_len, d, 64);
        }
        if (staged) {
            fprintf(stderr, "  the shipped file with a one-view stage:\n");
            test_shipped(staged, staged_len, d, 0);
            test_shipped(staged, staged_len, d, 64);
        }
    }
    free(cnn);
    free(vcom);
    free(com);
    free(neo);
    free(ncom);
    free(shipped);
    free(staged);
    nc_dataset_fini(&ds);
    return nc_test_finish();
}

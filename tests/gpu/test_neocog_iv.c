/* tests/gpu/test_neocog_iv.c — the GPU interpolating-vector classifier
 * (gpu/neocog/neocog_iv, through the engine's nc_gpu_neocog_set_iv) against core's
 * nc_neocog_iv_classify.
 *
 * Exact check: after each engine forward, the last stage's input and
 * S-layer come back from the device into a core state and core classifies
 * them; the device's scores must be those bit for bit and the labels the
 * same, for every character.  Batches 1 and 33 (graphs; the kernels by
 * (character, class, position)) and 200 (chunked; a block per character)
 * at changing offsets, so a stale answer shows; one character in seven is
 * random sparse noise (often nothing fires: label -1).  top_t 1, 3, 8, 17
 * and 70 (more than a class has planes) on a net seeded from fixture
 * digits, and the shipped models/neocognitron.ncm with its own top_t.
 * Whole-network check: the labels agree with core's own forward + IV on
 * the same images (the device layers differ from core's by float rounding,
 * so a tie could flip: at most 1 in 200 is allowed and the count printed).
 * Exit 77 without a device. */
#include "fixture.h"
#include "test.h"
#include "gpu_test.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dataset.h"
#include "device.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "neocog.h"
#include "neocog_engine_dev.h"

#define IN 65
#define N_IMG 240

static nc_test_rng rng = { 0x9e3779b97f4a7c15ULL };

static float *images;           /* [N_IMG][IN*IN]: digits, every 7th noise */

static int load_images(void)
{
    nc_dataset ds = { 0 };
    int r = nc_test_fixture(&ds);
    if (r < 0)
        return r;
    nc_prep p = { .kind = NC_PREP_NEOCOG, .size = IN, .box = 40, .threshold = -1.0f };
    images = calloc((size_t)N_IMG * IN * IN, sizeof(float));
    uint32_t got = 0;
    for (uint32_t i = 0; images && i < ds.count && got < N_IMG; i++) {
        float *x = images + (size_t)got * IN * IN;
        if (got % 7 == 3) {
            for (int c = 0; c < IN * IN; c++)
                x[c] = nc_test_uniform(&rng) < 0.04 ? (float)nc_test_uniform(&rng) : 0.0f;
            got++;
            continue;
        }
        nc_image img = { ds.cols, ds.rows, ds.cols, ds.pixels + (size_t)(500 + i) * ds.rows * ds.cols };
        if (500 + i < ds.count && nc_prep_apply(&img, &p, x) == 0)
            got++;
    }
    nc_dataset_fini(&ds);
    return !images ? -ENOMEM : got == N_IMG ? 0 : -ENODATA;
}

/* core's IV on the device's layers, character by character: exact. */
static void check_exact(const char *tag, nc_gpu_neocog *eng, const nc_neocog *net,
                        const nc_neocog_iv *iv, uint32_t off, uint32_t n,
                        const nc_neocog_result *gpu)
{
    const uint32_t L = net->arch.n_stages;
    const size_t n_in = (size_t)net->arch.stage[L - 2].c_size * net->arch.stage[L - 2].c_size *
                        nc_neocog_kstride(net->n_planes[L - 2]);
    const size_t n_us = (size_t)net->arch.stage[L - 1].s_size * net->arch.stage[L - 1].s_size *
                        nc_neocog_kstride(net->n_planes[L - 1]);
    float *uin = malloc(n * n_in * sizeof(float)), *uus = malloc(n * n_us * sizeof(float));
    nc_neocog_state *st = NULL;
    REQUIRE(uin && uus && nc_neocog_state_new(net, &st) == 0);
    CHECK_INT_EQ(nc_gpu_neocog_download_layer(eng, 2 * (int)L - 2, n, uin), 0);
    CHECK_INT_EQ(nc_gpu_neocog_download_layer(eng, 2 * (int)L - 1, n, uus), 0);
    uint32_t bad = 0, fired = 0;
    for (uint32_t i = 0; i < n; i++) {
        nc_neocog_result ref;
        memcpy(st->uc[L - 2], uin + i * n_in, n_in * sizeof(float));
        memcpy(st->us[L - 1], uus + i * n_us, n_us * sizeof(float));
        CHECK_INT_EQ(nc_neocog_iv_classify(iv, net, st, &ref), 0);
        fired += ref.label >= 0;
        int same = ref.label == gpu[i].label &&
                   !memcmp(ref.score, gpu[i].score, net->arch.n_classes * sizeof(float));
        if (!same && bad++ < 3)
            fprintf(stderr, "  %s: character %u (image %u): device label %d score[0] %.9g, "
                    "core %d %.9g\n", tag, i, off + i, gpu[i].label, gpu[i].score[0],
                    ref.label, ref.score[0]);
    }
    CHECK_MSG(bad == 0, "%s batch %u: %u characters differ from core's IV", tag, n, bad);
    CHECK_MSG(fired > 0, "%s batch %u: nothing fired (the check would be empty)", tag, n);
    nc_neocog_state_free(st);
    free(uin);
    free(uus);
}

/* The engine with iv on batches 1, 33, 200; then the labels of all N_IMG
 * against core's whole forward + IV. */
static void check_net(const char *tag, const nc_neocog *net, uint32_t top_t)
{
    nc_neocog_iv *iv = NULL;
    nc_gpu_neocog *eng = NULL;
    REQUIRE(nc_neocog_iv_new(net, top_t, &iv) == 0);
    int r = nc_gpu_neocog_new(net, 0, 256, &eng);
    CHECK_MSG(r == 0, "%s: engine: %d (%s)", tag, r, nc_gpu_last_error());
    if (r < 0) {
        nc_neocog_iv_free(iv);
        return;
    }
    r = nc_gpu_neocog_set_iv(eng, net, iv);
    CHECK_MSG(r == 0, "%s: set_iv: %d (%s)", tag, r, nc_gpu_last_error());
    nc_neocog_result *gpu = calloc(N_IMG, sizeof *gpu);
    REQUIRE(gpu);
    const uint32_t sizes[] = { 1, 33, 200 }, offs[] = { 5, 7, 40 };   /* image 3 is noise */
    for (size_t s = 0; r == 0 && s < NC_ARRAY_LEN(sizes); s++) {
        r = nc_gpu_neocog_forward(eng, images + (size_t)offs[s] * IN * IN, sizes[s], gpu);
        CHECK_MSG(r == 0, "%s: forward %u: %d (%s)", tag, sizes[s], r, nc_gpu_last_error());
        if (r == 0)
            check_exact(tag, eng, net, iv, offs[s], sizes[s], gpu);
    }
    /* whole network: core's forward (form F, as the daemon's CPU path) + IV */
    nc_neocog_state *st = NULL;
    uint32_t differ = 0, right = 0;
    if (r == 0 && (r = nc_gpu_neocog_forward(eng, images, N_IMG, gpu)) == 0 &&
        nc_neocog_state_new(net, &st) == 0) {
        for (uint32_t i = 0; i < N_IMG; i++) {
            nc_neocog_result fr, ref;
            CHECK_INT_EQ(nc_neocog_forward(net, st, images + (size_t)i * IN * IN,
                                           NC_NEOCOG_FORM_F, &fr), 0);
            CHECK_INT_EQ(nc_neocog_iv_classify(iv, net, st, &ref), 0);
            differ += ref.label != gpu[i].label;
            right += ref.label == gpu[i].label && ref.label >= 0;
        }
    }
    CHECK_MSG(r == 0 && st, "%s: whole-network run: %d", tag, r);
    CHECK_MSG(differ * 200 <= N_IMG, "%s: %u of %u labels differ from core's forward + IV", tag,
              differ, N_IMG);
    fprintf(stderr, "  %s top_t %u: exact at batches 1/33/200; whole net: %u of %u labels "
            "differ from core (%u agree on a class)\n", tag, top_t, differ, N_IMG, right);
    /* back to UC4's answer: the same as an engine never given iv */
    nc_gpu_neocog *plain = NULL;
    nc_neocog_result *pr = calloc(33, sizeof *pr);
    REQUIRE(pr);
    CHECK_INT_EQ(nc_gpu_neocog_set_iv(eng, net, NULL), 0);
    if (nc_gpu_neocog_new(net, 0, 256, &plain) == 0 &&
        nc_gpu_neocog_forward(eng, images, 33, gpu) == 0 &&
        nc_gpu_neocog_forward(plain, images, 33, pr) == 0) {
        for (uint32_t i = 0; i < 33; i++)
            CHECK(gpu[i].label == pr[i].label &&
                  !memcmp(gpu[i].score, pr[i].score, net->arch.n_classes * sizeof(float)));
    } else {
        CHECK_MSG(0, "%s: max-response run: %s", tag, nc_gpu_last_error());
    }
    nc_gpu_neocog_free(plain);
    free(pr);
    nc_neocog_state_free(st);
    free(gpu);
    nc_gpu_neocog_free(eng);
    nc_neocog_iv_free(iv);
}

static void check_refusals(const nc_neocog *net, const nc_neocog *other)
{
    nc_neocog_iv *iv = NULL;
    nc_gpu_neocog *eng = NULL;
    REQUIRE(nc_neocog_iv_new(other, 3, &iv) == 0);
    REQUIRE(nc_gpu_neocog_new(net, 0, 8, &eng) == 0);
    /* an iv made for another net (other plane counts) is refused */
    CHECK_INT_EQ(nc_gpu_neocog_set_iv(eng, other, iv), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_iv(eng, NULL, iv), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_iv(NULL, net, iv), -EINVAL);
    nc_gpu_neocog_free(eng);
    nc_neocog_iv_free(iv);
}

static nc_neocog *load_shipped(uint32_t *top_t)
{
    char path[1024];
    nc_test_model_path("neocognitron.ncm", path, sizeof path);
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_model_info info;
    nc_neocog *net = NULL;
    int r = nc_file_read_model(path, 256u << 20, &buf, &len);
    if (r == 0)     /* a committee's first member, with its own mark */
        r = nc_neocog_load_member(buf, len, 0, &net, &info, top_t);
    free(buf);
    CHECK_MSG(r == 0 && *top_t > 0, "%s: %d, top_t %u", path, r, *top_t);
    if (r < 0 || *top_t == 0) {
        nc_neocog_free(net);
        return NULL;
    }
    return net;
}

int main(void)
{
    if (nc_test_gpu_count() <= 0)
        return NC_TEST_SKIP;
    if (load_images() < 0) {
        fprintf(stderr, "fixture digits not available: skipped\n");
        return NC_TEST_SKIP;
    }
    /* a net seeded from fixture digits 0..299 (the images above start at 500) */
    nc_dataset ds = { 0 };
    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    const uint32_t target[4] = { 16, 26, 78, 70 };
    float *seed = malloc((size_t)300 * IN * IN * sizeof(float));
    uint8_t *seed_label = malloc(300);
    nc_neocog *net = NULL;
    int ok = seed && seed_label && nc_test_fixture(&ds) == 0;
    nc_prep p = { .kind = NC_PREP_NEOCOG, .size = IN, .box = 40, .threshold = -1.0f };
    uint32_t got = 0;
    for (uint32_t i = 0; ok && i < ds.count && got < 300; i++) {
        nc_image img = { ds.cols, ds.rows, ds.cols, ds.pixels + (size_t)i * ds.rows * ds.cols };
        if (nc_prep_apply(&img, &p, seed + (size_t)got * IN * IN) == 0)
            seed_label[got++] = ds.labels[i];
    }
    nc_dataset_fini(&ds);
    if (!ok || got < 300 || nc_neocog_new(&A, &net) < 0 ||
        nc_neocog_train_us1(net, 16, 100.0f) < 0 ||
        nc_neocog_seed_from_digits(net, seed, seed_label, 300, target, 2) < 0) {
        fprintf(stderr, "cannot build the net\n");
        return 1;
    }
    free(seed);
    free(seed_label);
    fprintf(stderr, "  seeded net: planes %u/%u/%u/%u\n", net->n_planes[0], net->n_planes[1],
            net->n_planes[2], net->n_planes[3]);
    const uint32_t tops[] = { 1, 3, 8, 17, 70 };
    for (size_t t = 0; t < NC_ARRAY_LEN(tops); t++)
        check_net("seeded", net, tops[t]);
    uint32_t top_t = 0;
    nc_neocog *big = load_shipped(&top_t);
    if (big) {
        fprintf(stderr, "  shipped net: planes %u/%u/%u/%u\n", big->n_planes[0],
                big->n_planes[1], big->n_planes[2], big->n_planes[3]);
        check_net("shipped", big, top_t);
        check_refusals(net, big);
    }
    nc_neocog_free(big);
    nc_neocog_free(net);
    free(images);
    return nc_test_finish();
}

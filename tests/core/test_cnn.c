/* tests/core/test_cnn.c — the CPU CNN engine (core/cnn*.c).
 *
 * Notation parser (good strings round-trip, bad ones fail with the right
 * code), initialisation and connection tables, the reference backward pass
 * against central finite differences (seed 000 §4's own correctness check)
 * on small awkward nets, the BLAS path against the reference (outputs and
 * gradients, several batch and chunk sizes), SGD lowering the loss, the
 * committee, and model files: round trip, every truncation, random bit
 * flips and CRC-valid but inconsistent files.
 *
 * Over 800 lines on purpose: the cases share the small awkward nets and the
 * finite-difference and comparison helpers at the top. */
#include "cnn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "fixture.h"
#include "test.h"

#define COLUMN "1x29x29-20C4-MP2-40C5-MP3-150N-10N"

/* Small nets chosen to be awkward: rectangular kernels and skips, skipping
 * factors larger than the kernel (unread pixels), partial tables, pooling
 * right after the input, conv after conv, several input maps into a FULL. */
static const char *const awkward[] = {
    "2x11x13-3C3x2S1x2R50:5-MP1x2-4C2-5N-3N",
    "1x12x12-4C3-MP2-6C3R50:3-3N",
    "3x4x4-7N-4N",
    "1x8x8-MP2-3C2S1-4N",
    "1x11x11-2C2S2-3C2-2N",
    "3x9x7-5C2x3R70:11-MP3x1-6C1R34-2N",
    "1x12x12-3C3-MP2-MP5-2C1-3N",
    /* rectified units: after pooling (the BLAS path activates after the
       max), between convolutions, in a FULL layer and at the output */
    "2x11x13-3C3x2S1x2R50:5relu-MP1x2-4C2relu-5Nrelu-3N",
    "1x12x12-4C3relu-4C3relu-MP2-3Nrelu",
    /* batch norm: before pooling (the BLAS path does not activate after the
       max there), with partial tables, rectified or not, in FULL layers */
    "2x11x13-3C3x2S1x2R50:5bn-MP1x2-4C2bnrelu-5Nbn-3N",
    "1x12x12-4C3bnrelu-MP2-6C3R50:3bn-5Nbnrelu-3N",
};

/* gamma, beta and the fixed statistics of every normalised layer drawn
 * away from where initialisation puts them (gamma 1, beta 0...), so that a
 * test sees each of them used in its own place; map 0's gamma negative. */
static void randomise_norm(nc_cnn *net, uint64_t seed)
{
    nc_test_rng r = { seed * 31 + 7 };
    for (uint32_t l = 1; l < net->n_layers; l++) {
        nc_cnn_layer *L = &net->layers[l];
        for (uint32_t m = 0; L->norm && m < L->maps; m++) {
            L->gamma[m] = (m ? 1.0f : -1.0f) * (0.5f + (float)nc_test_uniform(&r));
            L->beta[m] = (float)nc_test_uniform(&r) - 0.5f;
            L->mean[m] = 0.4f * (float)nc_test_uniform(&r) - 0.2f;
            L->var[m] = 0.5f + 1.5f * (float)nc_test_uniform(&r);
        }
    }
}

static nc_cnn *make_net(const char *arch, uint64_t seed, float range)
{
    nc_cnn *net = NULL;
    int err = nc_cnn_new(arch, &net);
    CHECK_MSG(err == 0, "%s: %d", arch, err);
    if (err)
        return NULL;
    CHECK_INT_EQ(nc_cnn_init_uniform(net, seed, range), 0);
    randomise_norm(net, seed);
    return net;
}

static void fill_uniform(nc_test_rng *r, float *v, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i++)
        v[i] = lo + (hi - lo) * (float)nc_test_uniform(r);
}

/* ---- parser ---------------------------------------------------------------- */

static void test_parse_good(void)
{
    static const struct { const char *in, *canon; uint32_t n_layers; size_t n_params; } cases[] = {
        { COLUMN, COLUMN, 7, 20 * 16 + 20 + 40 * 500 + 40 + 150 * 360 + 150 + 10 * 150 + 10 },
        { "1x29x29-20C4x4S0x0-MP2x2-40C5R100-MP3-150N-10N", COLUMN, 7, 76040 },
        { "1x29x29-20C4S0-MP2-40C5R100:9-MP3-150N-10N", COLUMN, 7, 76040 },
        { "2x11x13-3C3x2S1x2R50:5-MP1x2-4C2-5N-3N", NULL, 6,
          3 * 12 + 3 + 4 * 12 + 4 + 5 * 20 + 5 + 3 * 5 + 3 },
        { "3x4x4-7N-4N", NULL, 3, 7 * 48 + 7 + 4 * 7 + 4 },
        { "1x8x8-MP2-3C2S1-4N", NULL, 4, 3 * 4 + 3 + 4 * 12 + 4 },
        { "1x11x11-2C2S2x2-3C2-2N", "1x11x11-2C2S2-3C2-2N", 4, 2 * 4 + 2 + 3 * 8 + 3 + 2 * 27 + 2 },
        { "1x1x1-1N", NULL, 2, 2 },
        { "1x5x9-2C3x5S2x0R100:0-1N", "1x5x9-2C3x5S2x0-1N", 3, 2 * 15 + 2 + 1 * 6 + 1 },
        { "1x29x29-20C4R50-MP2-1N", NULL, 4, 20 * 16 + 20 + 20 * 169 + 1 },
        { "1x29x29-20C4x4S0R100relu-MP2-40C5R40:2relu-MP3-150Nrelu-10N",
          "1x29x29-20C4relu-MP2-40C5R40:2relu-MP3-150Nrelu-10N", 7, 76040 },
        { "1x5x9-2C3x5S2x0R50:3relu-1N", NULL, 3, 2 * 15 + 2 + 1 * 6 + 1 },
        /* batch norm: gamma, beta, mean, var after each normalised bias */
        { "1x12x12-4C3S0R100bn-MP2-6C3R50:3bnrelu-5Nbn-3Nbnrelu",
          "1x12x12-4C3bn-MP2-6C3R50:3bnrelu-5Nbn-3Nbnrelu", 6,
          4 * 9 + 4 * 5 + 6 * 36 + 6 * 5 + 5 * 54 + 5 * 5 + 3 * 5 + 3 * 5 },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) {
        nc_cnn *net = NULL;
        int err = nc_cnn_new(cases[i].in, &net);
        CHECK_MSG(err == 0, "%s: %d", cases[i].in, err);
        if (err)
            continue;
        const char *canon = cases[i].canon ? cases[i].canon : cases[i].in;
        char buf[NC_CNN_ARCH_MAX];
        CHECK_INT_EQ(nc_cnn_arch_format(net, buf, sizeof buf), 0);
        CHECK_MSG(strcmp(buf, canon) == 0, "%s -> %s, want %s", cases[i].in, buf, canon);
        CHECK_INT_EQ(net->n_layers, cases[i].n_layers);
        CHECK_INT_EQ(net->n_params, cases[i].n_params);
        for (uint32_t l = 1; l < net->n_layers; l++) {
            /* "relu" ends exactly the tokens that carry it */
            const char *tok = canon;
            for (uint32_t k = 0; k < l; k++)
                tok = strchr(tok, '-') + 1;
            size_t len = strcspn(tok, "-");
            int relu = len > 4 && !strncmp(tok + len - 4, "relu", 4);
            CHECK_MSG(net->layers[l].act == (relu ? NC_CNN_ACT_RELU : NC_CNN_ACT_TANH),
                      "%s: layer %u act %u", canon, l, net->layers[l].act);
            /* so does "bn", before any "relu" */
            size_t at = len - (relu ? 4 : 0);
            int bn = at > 2 && !strncmp(tok + at - 2, "bn", 2);
            CHECK_MSG(net->layers[l].norm == (uint32_t)bn, "%s: layer %u norm %u", canon, l,
                      net->layers[l].norm);
        }
        /* the canonical string parses to the same network */
        nc_cnn *again = NULL;
        CHECK_INT_EQ(nc_cnn_new(buf, &again), 0);
        if (again) {
            char buf2[NC_CNN_ARCH_MAX];
            CHECK_INT_EQ(nc_cnn_arch_format(again, buf2, sizeof buf2), 0);
            CHECK(strcmp(buf, buf2) == 0);
            CHECK(again->n_tables == net->n_tables &&
                  memcmp(again->tables, net->tables, net->n_tables) == 0);
        }
        /* too small a buffer */
        CHECK_INT_EQ(nc_cnn_arch_format(net, buf, strlen(canon)), -ERANGE);
        nc_cnn_free(again);
        nc_cnn_free(net);
    }
    /* shapes of the seed's MNIST column */
    nc_cnn *net = NULL;
    REQUIRE(nc_cnn_new(COLUMN, &net) == 0);
    static const uint32_t shape[7][3] = {
        {1, 29, 29}, {20, 26, 26}, {20, 13, 13}, {40, 9, 9}, {40, 3, 3}, {150, 1, 1}, {10, 1, 1} };
    for (uint32_t l = 0; l < 7; l++) {
        CHECK_INT_EQ(net->layers[l].maps, shape[l][0]);
        CHECK_INT_EQ(net->layers[l].height, shape[l][1]);
        CHECK_INT_EQ(net->layers[l].width, shape[l][2]);
    }
    CHECK_INT_EQ(net->layers[3].fan_in, 500);
    CHECK_INT_EQ(net->n_inputs, 841);
    CHECK_INT_EQ(net->n_outputs, 10);
    CHECK_INT_EQ(net->max_units, 13520);
    nc_cnn_free(net);
    /* skipping factors: 2x13x11, 3C3 skip 1 (step 2): (13-3)/2+1 = 6 tall,
       (11-3)/2+1 = 5 wide */
    REQUIRE(nc_cnn_new("2x13x11-3C3S1-2N", &net) == 0);
    CHECK_INT_EQ(net->layers[1].height, 6);
    CHECK_INT_EQ(net->layers[1].width, 5);
    nc_cnn_free(net);
}

static void test_parse_bad(void)
{
    static const struct { const char *s; int err; } cases[] = {
        { "", -EINVAL }, { "-", -EINVAL }, { "1x29x29", -EINVAL },
        { "1x29x29-", -EINVAL }, { "1x29x29--10N", -EINVAL }, { "-1x29x29-10N", -EINVAL },
        { "1x29-10N", -EINVAL }, { "1x29x29x1-10N", -EINVAL }, { "x29x29-10N", -EINVAL },
        { "0x29x29-10N", -EINVAL }, { "1x0x29-10N", -EINVAL }, { "1x29x0-10N", -EINVAL },
        { "1x29x29-0N", -EINVAL }, { "1x29x29-10n", -EINVAL }, { "1X29x29-10N", -EINVAL },
        { "1x29x29-10N ", -EINVAL }, { " 1x29x29-10N", -EINVAL }, { "1x29x29 -10N", -EINVAL },
        { "1x29x29-+10N", -EINVAL }, { "1x29x29-010N", -EINVAL }, { "01x29x29-10N", -EINVAL },
        { "1x29x29-10", -EINVAL }, { "1x29x29-N", -EINVAL }, { "1x29x29-10NN", -EINVAL },
        { "1x29x29-20C4", -EINVAL },                 /* top not fully connected */
        { "1x29x29-20C4-MP2", -EINVAL },
        { "1x29x29-0C4-10N", -EINVAL }, { "1x29x29-20C0-10N", -EINVAL },
        { "1x29x29-20C-10N", -EINVAL }, { "1x29x29-C4-10N", -EINVAL },
        { "1x29x29-20C30-10N", -EINVAL },            /* kernel larger than input */
        { "1x29x29-20C4x30-10N", -EINVAL },
        { "1x29x29-20C4S1-10N", -EINVAL },           /* (29-4) % 2 != 0 */
        { "1x29x29-20C4S-10N", -EINVAL }, { "1x29x29-20C4Sx1-10N", -EINVAL },
        { "1x29x29-20C4S0x-10N", -EINVAL }, { "1x29x29-20C4x-10N", -EINVAL },
        { "1x29x29-20C4R0-10N", -EINVAL }, { "1x29x29-20C4R101-10N", -EINVAL },
        { "1x29x29-20C4R-10N", -EINVAL }, { "1x29x29-20C4R50:-10N", -EINVAL },
        { "1x29x29-20C4R50:1:2-10N", -EINVAL }, { "1x29x29-20C4R50S0-10N", -EINVAL },
        { "1x29x29-20C4S0x0x0-10N", -EINVAL }, { "1x29x29-20C4P2-10N", -EINVAL },
        { "1x29x29-MP-10N", -EINVAL }, { "1x29x29-MP0-10N", -EINVAL },
        { "1x29x29-MP2-10N", -EINVAL },              /* 29 % 2 */
        { "1x29x29-20C4-MP3-10N", -EINVAL },         /* 26 % 3 */
        { "1x29x29-20C4-MP2x3-10N", -EINVAL },
        { "1x29x29-M2-10N", -EINVAL }, { "1x29x29-P2-10N", -EINVAL },
        { "1x29x29-MP30-10N", -EINVAL },
        { "1x29x29-10N-20C1-10N", -EINVAL },         /* conv after FULL */
        { "1x29x29-10N-MP1-10N", -EINVAL },          /* pool after FULL */
        { "1x29x29-20C4\n-10N", -EINVAL }, { "1x29x29-20c4-10N", -EINVAL },
        /* well-formed but beyond the caps */
        { "1x29x29-99999999999C4-10N", -ERANGE }, { "1x29x29-4294967296N", -ERANGE },
        { "1x99999x29-10N", -ERANGE }, { "5000x1x1-10N", -ERANGE },
        { "1x29x29-5000C1-10N", -ERANGE }, { "1x29x29-20000000N", -ERANGE },
        { "1x4096x4096-10N-10N", -ERANGE },          /* 167M params */
        { "1x2000x2000-1000C1-1N", -ERANGE },        /* 4G outputs */
        { "1x29x29-20C4S4294967295-10N", -EINVAL },
        { "1x29x29-20C4R50:4294967296-10N", -ERANGE },
        { "1x29x29-20C4RELU-10N", -EINVAL }, { "1x29x29-20C4rel-10N", -EINVAL },
        { "1x29x29-20C4relu2-10N", -EINVAL }, { "1x29x29-20C4relurelu-10N", -EINVAL },
        { "1x29x29-20C4reluR50-10N", -EINVAL }, { "1x29x29-20C4reluS0-10N", -EINVAL },
        { "1x28x28-MP2relu-10N", -EINVAL }, { "1x29x29relu-10N", -EINVAL },
        { "1x29x29-relu-10N", -EINVAL }, { "1x29x29-10relu", -EINVAL },
        { "1x29x29-20C4relubn-10N", -EINVAL }, { "1x29x29-20C4bnbn-10N", -EINVAL },
        { "1x29x29-20C4bnR50-10N", -EINVAL }, { "1x28x28-MP2bn-10N", -EINVAL },
        { "1x29x29bn-10N", -EINVAL }, { "1x29x29-10bn", -EINVAL },
        { "1x29x29-20C4b-10N", -EINVAL }, { "1x29x29-10NBN", -EINVAL },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) {
        nc_cnn *net = (nc_cnn *)0x1;
        int err = nc_cnn_new(cases[i].s, &net);
        CHECK_MSG(err == cases[i].err, "\"%s\": got %d want %d", cases[i].s, err, cases[i].err);
        CHECK(net == (nc_cnn *)0x1);     /* ret_ untouched on failure */
    }
    /* too many layers, too long a string */
    char s[4096] = "1x2x2";
    for (int i = 0; i < 40; i++)
        strcat(s, "-2N");
    nc_cnn *net = NULL;
    CHECK_INT_EQ(nc_cnn_new(s, &net), -ERANGE);
    memset(s, '1', sizeof s - 1);
    s[sizeof s - 1] = 0;
    CHECK_INT_EQ(nc_cnn_new(s, &net), -ERANGE);
    CHECK_INT_EQ(nc_cnn_new(NULL, &net), -EINVAL);
    CHECK_INT_EQ(nc_cnn_new(COLUMN, NULL), -EINVAL);
    nc_cnn_free(NULL);
    nc_cnn_work_free(NULL);
}

/* ---- initialisation, tables ------------------------------------------------ */

static void test_init_tables(void)
{
    nc_cnn *a = make_net("1x12x12-4C3-MP2-10C3R50:3-3N", 42, 0.05f);
    nc_cnn *b = make_net("1x12x12-4C3-MP2-10C3R50:3-3N", 42, 0.05f);
    nc_cnn *c = make_net("1x12x12-4C3-MP2-10C3R50:4-3N", 43, 0.05f);
    REQUIRE(a && b && c);
    CHECK(memcmp(a->params, b->params, a->n_params * sizeof(float)) == 0);
    CHECK(memcmp(a->params, c->params, a->n_params * sizeof(float)) != 0);
    CHECK(memcmp(a->tables, b->tables, a->n_tables) == 0);
    CHECK(memcmp(a->tables, c->tables, a->n_tables) != 0);
    float lo = 1, hi = -1;
    for (size_t i = 0; i < a->n_params; i++) {
        lo = fminf(lo, a->params[i]);
        hi = fmaxf(hi, a->params[i]);
    }
    CHECK(lo >= -0.05f && hi <= 0.05f && lo < -0.04f && hi > 0.04f);
    /* R50 of 4 input maps: exactly 2 per output map; cut kernels are zero */
    const nc_cnn_layer *L = &a->layers[3];
    uint32_t used[4] = {0};
    for (uint32_t m = 0; m < L->maps; m++) {
        uint32_t k = 0;
        for (uint32_t i = 0; i < 4; i++) {
            k += L->table[m * 4 + i];
            used[i] += L->table[m * 4 + i];
            if (!L->table[m * 4 + i])
                for (int j = 0; j < 9; j++)
                    CHECK(L->weights[(m * 4 + i) * 9 + j] == 0.0f);
        }
        CHECK_INT_EQ(k, 2);
    }
    CHECK(used[0] && used[1] && used[2] && used[3]);
    for (uint32_t i = 0; i < a->layers[1].maps; i++)
        CHECK(a->layers[1].table[i] == 1);          /* no R: full */
    /* explicit tables */
    uint8_t t[40];
    memset(t, 1, sizeof t);
    t[5] = 0;
    CHECK_INT_EQ(nc_cnn_set_table(a, 3, t), 0);
    CHECK(a->custom_tables == 1);
    for (int j = 0; j < 9; j++)
        CHECK(a->layers[3].weights[5 * 9 + j] == 0.0f);
    t[5] = 2;
    CHECK_INT_EQ(nc_cnn_set_table(a, 3, t), -EINVAL);
    memset(t, 0, 4);
    t[5] = 1;
    CHECK_INT_EQ(nc_cnn_set_table(a, 3, t), -EINVAL);     /* map 0 unwired */
    CHECK_INT_EQ(nc_cnn_set_table(a, 2, t), -EINVAL);     /* pooling */
    CHECK_INT_EQ(nc_cnn_set_table(a, 0, t), -EINVAL);
    CHECK_INT_EQ(nc_cnn_set_table(a, 9, t), -EINVAL);
    nc_cnn_free(a);
    nc_cnn_free(b);
    nc_cnn_free(c);
}

/* nc_cnn_init_fan_in: each layer's weights fill [-r, r], r = gain
 * sqrt(3 / fan_in), biases 0, cut kernels 0, one seed one net. */
static void test_init_fan_in(void)
{
    const char *arch = "1x12x12-4C3relu-MP2-10C3R50:3relu-20Nrelu-3N";
    nc_cnn *a = make_net(arch, 1, 0.05f), *b = make_net(arch, 1, 0.05f);
    nc_cnn *c = make_net(arch, 1, 0.05f);
    REQUIRE(a && b && c);
    const float gain = 1.41421356f;
    CHECK_INT_EQ(nc_cnn_init_fan_in(a, 9, gain), 0);
    CHECK_INT_EQ(nc_cnn_init_fan_in(b, 9, gain), 0);
    CHECK_INT_EQ(nc_cnn_init_fan_in(c, 10, gain), 0);
    CHECK(memcmp(a->params, b->params, a->n_params * sizeof(float)) == 0);
    CHECK(memcmp(a->params, c->params, a->n_params * sizeof(float)) != 0);
    for (uint32_t l = 1; l < a->n_layers; l++) {
        const nc_cnn_layer *L = &a->layers[l];
        if (L->kind == NC_CNN_KIND_POOL)
            continue;
        const float r = gain * sqrtf(3.0f / (float)L->fan_in);
        float lo = 0, hi = 0;
        for (size_t i = 0; i < L->n_weights; i++) {
            lo = fminf(lo, L->weights[i]);
            hi = fmaxf(hi, L->weights[i]);
        }
        CHECK_MSG(lo >= -r && hi <= r && lo < -0.8f * r && hi > 0.8f * r,
                  "layer %u: weights in [%g, %g], r %g", l, lo, hi, r);
        for (uint32_t m = 0; m < L->maps; m++)
            CHECK(L->bias[m] == 0.0f);
    }
    const nc_cnn_layer *L = &a->layers[3];
    for (uint32_t m = 0; m < L->maps; m++)
        for (uint32_t i = 0; i < 4; i++)
            if (!L->table[m * 4 + i])
                for (int j = 0; j < 9; j++)
                    CHECK(L->weights[(m * 4 + i) * 9 + j] == 0.0f);
    CHECK_INT_EQ(nc_cnn_init_fan_in(a, 9, 0.0f), -EINVAL);
    CHECK_INT_EQ(nc_cnn_init_fan_in(a, 9, -1.0f), -EINVAL);
    CHECK_INT_EQ(nc_cnn_init_fan_in(a, 9, NAN), -EINVAL);
    CHECK_INT_EQ(nc_cnn_init_fan_in(NULL, 9, 1.0f), -EINVAL);
    nc_cnn_free(a);
    nc_cnn_free(b);
    nc_cnn_free(c);
}

/* ---- activation accuracy of the BLAS path ------------------------------------ */

/* 1x1x1-1N with w = 1, b = 0 is y = f(x): sweep x through the fast tanh. */
static void test_activation(void)
{
    nc_cnn *net = make_net("1x1x1-1N", 1, 0.0f);
    REQUIRE(net);
    net->layers[1].weights[0] = 1.0f;
    enum { N = 4001 };
    float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float));
    nc_cnn_work *w = NULL;
    REQUIRE(x && y && nc_cnn_work_new(net, N, &w) == 0);
    for (int i = 0; i < N; i++)
        x[i] = -20.0f + 40.0f * (float)i / (N - 1);
    REQUIRE(nc_cnn_forward_blas(net, w, x, N, y) == 0);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double want = 1.7159 * tanh(0.6666 * (double)x[i]);
        double e = fabs(y[i] - want);
        worst = e > worst ? e : worst;
    }
    CHECK_MSG(worst < 1e-6, "fast tanh off by %g", worst);
    CHECK_INT_EQ(nc_cnn_forward_ref(net, w, x, N, y), 0);
    for (int i = 0; i < N; i += 97)
        CHECK_NEAR(y[i], 1.7159 * tanh(0.6666 * (double)x[i]), 1e-6, 0);
    nc_cnn_work_free(w);
    nc_cnn_free(net);
    /* the rectifier, with a bias, on both paths: exactly max(0, x - 0.25) */
    net = make_net("1x1x1-1Nrelu", 1, 0.0f);
    REQUIRE(net && nc_cnn_work_new(net, N, &w) == 0);
    net->layers[1].weights[0] = 1.0f;
    net->layers[1].bias[0] = -0.25f;
    for (int path = 0; path < 2; path++) {
        REQUIRE((path ? nc_cnn_forward_blas : nc_cnn_forward_ref)(net, w, x, N, y) == 0);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            float want = x[i] - 0.25f > 0.0f ? x[i] - 0.25f : 0.0f;
            if (y[i] != want && bad++ < 3)
                CHECK_MSG(0, "relu path %d: f(%g) = %g, want %g", path, x[i], y[i], want);
        }
    }
    nc_cnn_work_free(w);
    nc_cnn_free(net);
    free(x);
    free(y);
}

/* ---- gradients -------------------------------------------------------------- */

static double loss_of(const nc_cnn *net, nc_cnn_work *w, const float *in, uint32_t n,
                      const uint8_t *labels, float *out)
{
    double loss = 0;
    CHECK_INT_EQ(nc_cnn_forward_ref(net, w, in, n, out), 0);
    CHECK_INT_EQ(nc_cnn_loss(net, out, labels, n, NULL, &loss, NULL), 0);
    return loss;
}

/* Reference backward vs central differences, then the BLAS backward vs the
 * reference one. */
static void check_gradients(const char *arch, uint64_t seed)
{
    enum { N = 3 };
    nc_cnn *net = make_net(arch, seed, 0.4f);
    REQUIRE(net);
    nc_test_rng r = { seed * 7919 + 1 };
    float *in = malloc(N * net->n_inputs * sizeof(float));
    float *out = malloc(N * net->n_outputs * sizeof(float));
    float *d_out = malloc(N * net->n_outputs * sizeof(float));
    float *g = malloc(net->n_params * sizeof(float));
    float *gb = malloc(net->n_params * sizeof(float));
    nc_cnn_work *w = NULL;
    REQUIRE(in && out && d_out && g && gb && nc_cnn_work_new(net, N, &w) == 0);
    fill_uniform(&r, in, N * net->n_inputs, -1.0f, 1.0f);
    uint8_t labels[N];
    for (int b = 0; b < N; b++)
        labels[b] = (uint8_t)(nc_test_next(&r) % net->n_outputs);

    REQUIRE(nc_cnn_forward_ref(net, w, in, N, out) == 0);
    REQUIRE(nc_cnn_loss(net, out, labels, N, d_out, NULL, NULL) == 0);
    REQUIRE(nc_cnn_backward_ref(net, w, in, N, d_out, g) == 0);

    /* float activations put ~1e-6 of noise in the loss; eps = 1e-3 keeps that
       below 1e-3 in the quotient while staying clear of most max-pooling kinks
       (an argmax that flips inside the step); a step that still disagrees is
       retried at eps / 4 before it counts as a mismatch */
    double num = 0, den = 0;
    int bad = 0;
    for (size_t i = 0; i < net->n_params; i++) {
        double fd = 0, e = INFINITY;
        for (float eps = 1e-3f; eps > 2e-4f && e > 1e-3 + 1e-2 * fabs(fd); eps /= 4) {
            float keep = net->params[i];
            net->params[i] = keep + eps;
            double lp = loss_of(net, w, in, N, labels, out);
            net->params[i] = keep - eps;
            double lm = loss_of(net, w, in, N, labels, out);
            net->params[i] = keep;
            /* divided by the step actually taken, in float */
            fd = (lp - lm) / ((double)(keep + eps) - (double)(keep - eps));
            e = fabs(fd - g[i]);
        }
        num += e * e;
        den += fd * fd;
        if (e > 1e-3 + 1e-2 * fabs(fd) && bad++ < 5)
            CHECK_MSG(0, "%s: param %zu: backward %.6g, finite difference %.6g", arch, i, g[i], fd);
    }
    double rel = sqrt(num / (den > 0 ? den : 1));
    CHECK_MSG(rel < 2e-3, "%s: relative gradient error %g", arch, rel);
    if (getenv("NC_TEST_VERBOSE"))
        fprintf(stderr, "%s: relative gradient error %g\n", arch, rel);
    CHECK_MSG(bad == 0, "%s: %d params off", arch, bad);
    CHECK(den > 0);

    /* BLAS backward after a BLAS forward gives the same gradients */
    REQUIRE(nc_cnn_forward_blas(net, w, in, N, out) == 0);
    REQUIRE(nc_cnn_loss(net, out, labels, N, d_out, NULL, NULL) == 0);
    REQUIRE(nc_cnn_backward_blas(net, w, in, N, d_out, gb) == 0);
    double gmax = 0;
    for (size_t i = 0; i < net->n_params; i++)
        gmax = fmax(gmax, fabs(g[i]));
    bad = 0;
    for (size_t i = 0; i < net->n_params; i++)
        if (fabs(gb[i] - g[i]) > 1e-4 * gmax + 1e-4 * fabs(g[i]) && bad++ < 5)
            CHECK_MSG(0, "%s: param %zu: blas %.8g ref %.8g", arch, i, gb[i], g[i]);
    /* cut kernels get no gradient on either path */
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        if (L->kind != NC_CNN_KIND_CONV)
            continue;
        size_t k = (size_t)L->kernel_x * L->kernel_y, off = (size_t)(L->weights - net->params);
        for (size_t mc = 0; mc < (size_t)L->maps * net->layers[l - 1].maps; mc++)
            if (!L->table[mc])
                for (size_t j = 0; j < k; j++)
                    CHECK(g[off + mc * k + j] == 0.0f && gb[off + mc * k + j] == 0.0f);
    }
    /* a normalised layer's fixed statistics are not learnt: gradient 0 */
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        size_t off = (size_t)(L->mean - net->params);
        for (size_t j = 0; L->norm && j < 2 * (size_t)L->maps; j++)
            CHECK(g[off + j] == 0.0f && gb[off + j] == 0.0f);
    }
    /* a backward pass must follow its own forward pass */
    CHECK_INT_EQ(nc_cnn_backward_ref(net, w, in, N, d_out, g), -EINVAL);
    CHECK_INT_EQ(nc_cnn_backward_blas(net, w, in, N - 1, d_out, g), -EINVAL);
    CHECK_INT_EQ(nc_cnn_backward_blas(net, w, out, N, d_out, g), -EINVAL);

    nc_cnn_work_free(w);
    nc_cnn_free(net);
    free(in);
    free(out);
    free(d_out);
    free(g);
    free(gb);
}

static void test_gradients(void)
{
    for (size_t i = 0; i < NC_ARRAY_LEN(awkward); i++)
        check_gradients(awkward[i], 100 + i);
}

/* ---- BLAS forward vs reference ----------------------------------------------- */

/* Outputs agree to |blas - ref| <= 1e-5 + 1e-5 |ref|: float products summed
 * in another order vs double sums, and the rational tanh (< 1e-6 off). */
static void check_parity(const char *arch, const uint32_t *batches, size_t n_batches,
                         const uint32_t *chunks, size_t n_chunks, float range)
{
    nc_cnn *net = make_net(arch, 7, range);
    REQUIRE(net);
    uint32_t max_n = 0;
    for (size_t i = 0; i < n_batches; i++)
        max_n = batches[i] > max_n ? batches[i] : max_n;
    nc_test_rng r = { 12345 };
    float *in = malloc((size_t)max_n * net->n_inputs * sizeof(float));
    float *ref = malloc((size_t)max_n * net->n_outputs * sizeof(float));
    float *got = malloc((size_t)max_n * net->n_outputs * sizeof(float));
    nc_cnn_work *w = NULL;
    REQUIRE(in && ref && got && nc_cnn_work_new(net, max_n, &w) == 0);
    fill_uniform(&r, in, (size_t)max_n * net->n_inputs, 0.0f, 1.0f);
    for (size_t bi = 0; bi < n_batches; bi++) {
        uint32_t n = batches[bi];
        REQUIRE(nc_cnn_forward_ref(net, w, in, n, ref) == 0);
        for (size_t ci = 0; ci < n_chunks; ci++) {
            if (chunks[ci] > max_n)
                continue;
            CHECK_INT_EQ(nc_cnn_work_set_chunk(w, chunks[ci]), 0);
            memset(got, 0xff, (size_t)n * net->n_outputs * sizeof(float));
            REQUIRE(nc_cnn_forward_blas(net, w, in, n, got) == 0);
            int bad = 0;
            for (size_t k = 0; k < (size_t)n * net->n_outputs; k++)
                if (!(fabsf(got[k] - ref[k]) <= 1e-5f + 1e-5f * fabsf(ref[k])) && bad++ < 5)
                    CHECK_MSG(0, "%s n=%u chunk=%u: out[%zu] blas %.9g ref %.9g",
                              arch, n, chunks[ci], k, got[k], ref[k]);
        }
    }
    /* the first image alone gives the same answer as inside a batch (not
       so with batch norm, whose statistics are the batch's) */
    REQUIRE(nc_cnn_forward_blas(net, w, in, 1, got) == 0);
    for (uint32_t k = 0; k < net->n_outputs && !nc_cnn_norm_layers(net); k++)
        CHECK_NEAR(got[k], ref[k], 1e-5, 1e-5);
    nc_cnn_work_free(w);
    nc_cnn_free(net);
    free(in);
    free(ref);
    free(got);
}

static void test_parity(void)
{
    static const uint32_t batches[] = { 1, 3, 33 };
    static const uint32_t chunks[] = { 0, 1, 7, 16 };
    for (size_t i = 0; i < NC_ARRAY_LEN(awkward); i++)
        check_parity(awkward[i], batches, NC_ARRAY_LEN(batches), chunks, NC_ARRAY_LEN(chunks), 0.4f);
    static const uint32_t col_batches[] = { 1, 3, 33 };
    static const uint32_t col_chunks[] = { 0, 5 };
    check_parity(COLUMN, col_batches, 3, col_chunks, 2, 0.05f);
    check_parity("1x29x29-20C4-MP2-40C5R40:2-MP3-150N-10N", col_batches, 2, col_chunks, 2, 0.1f);
    check_parity("2x29x29-8C5S1-MP13-20N-10N", col_batches, 2, col_chunks, 2, 0.1f);
    check_parity("1x29x29-20C4relu-MP2-60C4relu-MP2-100C3relu-MP3-150Nrelu-10N", col_batches, 3,
                 col_chunks, 2, 0.1f);
    check_parity("1x29x29-20C4bn-MP2-60C4bn-MP2-100C3bn-MP3-150Nbn-10N", col_batches, 3,
                 col_chunks, 2, 0.1f);
}

/* ---- training ---------------------------------------------------------------- */

static void test_sgd(void)
{
    enum { N = 8, STEPS = 40 };
    nc_cnn *net = make_net("1x12x12-4C3-MP2-6C3R50:3-4N", 5, 0.05f);
    REQUIRE(net);
    nc_test_rng r = { 99 };
    float in[N * 144];
    uint8_t labels[N];
    /* four classes, each a bar (two rows top or bottom, two columns left or
       right) over weak noise: learnable in a few dozen steps, unlike pure
       noise where the net first sits at the bias-only optimum (E = 12) */
    for (int b = 0; b < N; b++) {
        labels[b] = (uint8_t)(b % 4);
        for (int i = 0; i < 144; i++) {
            int y = i / 12, x = i % 12, c = labels[b];
            int bar = (c == 0 && y >= 2 && y < 4) || (c == 1 && y >= 8 && y < 10) ||
                      (c == 2 && x >= 2 && x < 4) || (c == 3 && x >= 8 && x < 10);
            in[b * 144 + i] = 0.2f * (float)nc_test_uniform(&r) + (bar ? 0.8f : 0.0f);
        }
    }
    nc_cnn_work *w = NULL;
    REQUIRE(nc_cnn_work_new(net, N, &w) == 0);
    double first = 0, loss = 0;
    for (int s = 0; s < STEPS; s++) {
        REQUIRE(nc_cnn_train_step(net, w, in, labels, N, 0.03f, &loss) == 0);
        if (s == 0)
            first = loss;
    }
    float out[N * 4];
    double last = 0;
    uint32_t errors = N;
    REQUIRE(nc_cnn_forward_ref(net, w, in, N, out) == 0);
    REQUIRE(nc_cnn_loss(net, out, labels, N, NULL, &last, &errors) == 0);
    CHECK_MSG(last < 0.1 * first, "loss %g -> %g", first, last);
    CHECK_INT_EQ(errors, 0);
    /* cut kernels stayed zero through the updates */
    const nc_cnn_layer *L = &net->layers[3];
    for (uint32_t mc = 0; mc < 6 * 4; mc++)
        if (!L->table[mc])
            for (int j = 0; j < 9; j++)
                CHECK(L->weights[mc * 9 + j] == 0.0f);
    /* the reference step (forward, loss, backward, SGD) lowers it as well */
    float d_out[N * 4], *g = malloc(net->n_params * sizeof(float));
    REQUIRE(g);
    REQUIRE(nc_cnn_forward_ref(net, w, in, N, out) == 0);
    REQUIRE(nc_cnn_loss(net, out, labels, N, d_out, &first, NULL) == 0);
    REQUIRE(nc_cnn_backward_ref(net, w, in, N, d_out, g) == 0);
    REQUIRE(nc_cnn_sgd(net, g, 0.01f) == 0);
    REQUIRE(nc_cnn_forward_ref(net, w, in, N, out) == 0);
    REQUIRE(nc_cnn_loss(net, out, labels, N, NULL, &last, NULL) == 0);
    CHECK_MSG(last < first, "ref step: loss %g -> %g", first, last);
    /* bad labels and rates */
    labels[0] = 4;
    CHECK_INT_EQ(nc_cnn_train_step(net, w, in, labels, N, 0.01f, &loss), -EINVAL);
    labels[0] = 0;
    CHECK_INT_EQ(nc_cnn_train_step(net, w, in, labels, N, NAN, &loss), -EINVAL);
    free(g);
    nc_cnn_work_free(w);
    nc_cnn_free(net);
}

/* Whether param i of test_sgd's net (1x12x12-4C3-MP2-6C3R50:3-4N) lies in a
 * kernel its layer-3 table cuts (6 maps x 4 inputs x 3x3). */
static int in_cut_kernel(const nc_cnn *net, size_t i)
{
    const nc_cnn_layer *L = &net->layers[3];
    const size_t lo = (size_t)(L->weights - net->params), hi = lo + (size_t)6 * 4 * 9;
    return i >= lo && i < hi && !L->table[(i - lo) / 9];
}

/* nc_cnn_sgd_momentum: momentum 0 is nc_cnn_sgd bit for bit; two steps at
 * 0.9 move each param by lr (g1 + (0.9 g1 + g2)) with the velocity kept;
 * cut kernels stay zero even when the grads given there are not; bad
 * arguments are refused. */
static void test_sgd_momentum(void)
{
    nc_cnn *a = make_net("1x12x12-4C3-MP2-6C3R50:3-4N", 5, 0.05f);
    nc_cnn *b = make_net("1x12x12-4C3-MP2-6C3R50:3-4N", 5, 0.05f);
    REQUIRE(a && b);
    const size_t n = a->n_params;
    float *g1 = malloc(n * sizeof(float)), *g2 = malloc(n * sizeof(float));
    float *v = calloc(n, sizeof(float)), *p0 = malloc(n * sizeof(float));
    REQUIRE(g1 && g2 && v && p0);
    nc_test_rng r = { 4242 };
    for (size_t i = 0; i < n; i++) {
        g1[i] = (float)nc_test_uniform(&r) - 0.5f;      /* cut kernels too */
        g2[i] = (float)nc_test_uniform(&r) - 0.5f;
    }
    CHECK_INT_EQ(nc_cnn_sgd_momentum(a, g1, v, 0.05f, 0.0f), 0);
    CHECK_INT_EQ(nc_cnn_sgd(b, g1, 0.05f), 0);
    CHECK_MSG(memcmp(a->params, b->params, n * sizeof(float)) == 0,
              "momentum 0 is not nc_cnn_sgd");
    memcpy(p0, a->params, n * sizeof(float));
    memset(v, 0, n * sizeof(float));
    CHECK_INT_EQ(nc_cnn_sgd_momentum(a, g1, v, 0.05f, 0.9f), 0);
    CHECK_INT_EQ(nc_cnn_sgd_momentum(a, g2, v, 0.05f, 0.9f), 0);
    size_t bad = 0, cut_bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (in_cut_kernel(a, i)) {
            cut_bad += a->params[i] != 0.0f;
            continue;
        }
        const double want = p0[i] - 0.05 * (double)g1[i] - 0.05 * (0.9 * g1[i] + g2[i]);
        const double vel = 0.9 * g1[i] + g2[i];
        bad += fabs(a->params[i] - want) > 1e-6 + 1e-6 * fabs(want) ||
               fabs(v[i] - vel) > 1e-6 + 1e-6 * fabs(vel);
    }
    CHECK_MSG(bad == 0, "%zu params or velocities off the two-step formula", bad);
    CHECK_MSG(cut_bad == 0, "%zu cut kernel weights moved", cut_bad);
    CHECK_INT_EQ(nc_cnn_sgd_momentum(a, g1, v, 0.05f, 1.0f), -EINVAL);
    CHECK_INT_EQ(nc_cnn_sgd_momentum(a, g1, v, 0.05f, -0.1f), -EINVAL);
    CHECK_INT_EQ(nc_cnn_sgd_momentum(a, g1, v, NAN, 0.9f), -EINVAL);
    CHECK_INT_EQ(nc_cnn_sgd_momentum(a, g1, NULL, 0.05f, 0.9f), -EINVAL);
    free(g1);
    free(g2);
    free(v);
    free(p0);
    nc_cnn_free(a);
    nc_cnn_free(b);
}

/* nc_cnn_adam: the first step moves each connected param by lr times the
 * sign of its gradient (m and v corrected: g / |g|), two steps follow the
 * formula in double, cut kernels stay zero, bad arguments are refused. */
static void test_adam(void)
{
    nc_cnn *a = make_net("1x12x12-4C3-MP2-6C3R50:3-4N", 5, 0.05f);
    REQUIRE(a);
    const size_t n = a->n_params;
    float *g1 = malloc(n * sizeof(float)), *g2 = malloc(n * sizeof(float));
    float *m = calloc(n, sizeof(float)), *v = calloc(n, sizeof(float));
    float *p0 = malloc(n * sizeof(float)), *p1 = malloc(n * sizeof(float));
    REQUIRE(g1 && g2 && m && v && p0 && p1);
    nc_test_rng r = { 777 };
    for (size_t i = 0; i < n; i++) {
        g1[i] = (float)nc_test_uniform(&r) - 0.5f;      /* cut kernels too */
        g2[i] = 10.0f * ((float)nc_test_uniform(&r) - 0.5f);
    }
    const float lr = 0.01f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    memcpy(p0, a->params, n * sizeof(float));
    CHECK_INT_EQ(nc_cnn_adam(a, g1, m, v, 1, lr, b1, b2, eps), 0);
    memcpy(p1, a->params, n * sizeof(float));
    CHECK_INT_EQ(nc_cnn_adam(a, g2, m, v, 2, lr, b1, b2, eps), 0);
    size_t bad1 = 0, bad2 = 0, cut_bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (in_cut_kernel(a, i)) {
            cut_bad += a->params[i] != 0.0f || p1[i] != 0.0f;
            continue;
        }
        const double s1 = g1[i] > 0.0f ? 1.0 : -1.0;
        bad1 += fabs((p0[i] - p1[i]) - lr * s1) > 1e-5 * lr + 1e-6 * fabs(p0[i]);
        /* the betas as the floats they are: 1 - 0.999f is 1.3e-5 off 0.001 */
        const double B1 = b1, B2 = b2;
        const double mm = B1 * ((1 - B1) * g1[i]) + (1 - B1) * g2[i];
        const double vv = B2 * ((1 - B2) * g1[i] * g1[i]) + (1 - B2) * (double)g2[i] * g2[i];
        const double want =
            p1[i] - lr * (mm / (1 - B1 * B1)) / (sqrt(vv / (1 - B2 * B2)) + (double)eps);
        bad2 += fabs(a->params[i] - want) > 1e-5 * lr + 1e-6 * fabs(want) ||
                fabs(m[i] - mm) > 1e-6 * fabs(mm) + 1e-9 || fabs(v[i] - vv) > 1e-5 * vv + 1e-12;
    }
    CHECK_MSG(bad1 == 0, "%zu params not moved by lr against their gradient's sign", bad1);
    CHECK_MSG(bad2 == 0, "%zu params or moments off the two-step formula", bad2);
    CHECK_MSG(cut_bad == 0, "%zu cut kernel weights moved", cut_bad);
    CHECK_INT_EQ(nc_cnn_adam(a, g1, m, v, 0, lr, b1, b2, eps), -EINVAL);
    CHECK_INT_EQ(nc_cnn_adam(a, g1, m, v, 3, NAN, b1, b2, eps), -EINVAL);
    CHECK_INT_EQ(nc_cnn_adam(a, g1, m, v, 3, lr, 1.0f, b2, eps), -EINVAL);
    CHECK_INT_EQ(nc_cnn_adam(a, g1, m, v, 3, lr, b1, -0.1f, eps), -EINVAL);
    CHECK_INT_EQ(nc_cnn_adam(a, g1, m, v, 3, lr, b1, b2, 0.0f), -EINVAL);
    CHECK_INT_EQ(nc_cnn_adam(a, g1, NULL, v, 3, lr, b1, b2, eps), -EINVAL);
    free(g1);
    free(g2);
    free(m);
    free(v);
    free(p0);
    free(p1);
    nc_cnn_free(a);
}

/* ---- work, committee, argument checks --------------------------------------- */

static void test_work_committee(void)
{
    nc_cnn *a = make_net("1x12x12-4C3-MP2-6C3-4N", 1, 0.3f);
    nc_cnn *b = make_net("1x12x12-4C3-MP2-6C3R50-4N", 2, 0.3f);
    nc_cnn *other = make_net("1x12x12-4C3-MP2-5C3-4N", 3, 0.3f);
    REQUIRE(a && b && other);
    nc_cnn_work *w = NULL;
    REQUIRE(nc_cnn_work_new(a, 5, &w) == 0);
    nc_test_rng r = { 3 };
    float in[5 * 144], oa[20], ob[20], oc[20];
    fill_uniform(&r, in, 5 * 144, 0.0f, 1.0f);
    CHECK_INT_EQ(nc_cnn_forward_blas(a, w, in, 5, oa), 0);
    CHECK_INT_EQ(nc_cnn_forward_blas(b, w, in, 5, ob), 0);       /* same sizes */
    CHECK_INT_EQ(nc_cnn_forward_blas(other, w, in, 5, oc), -EINVAL);
    CHECK_INT_EQ(nc_cnn_forward_ref(other, w, in, 5, oc), -EINVAL);
    CHECK_INT_EQ(nc_cnn_forward_blas(a, w, in, 6, oc), -EINVAL);
    CHECK_INT_EQ(nc_cnn_forward_blas(a, w, in, 0, oc), -EINVAL);
    CHECK_INT_EQ(nc_cnn_forward_blas(a, w, NULL, 1, oc), -EINVAL);
    CHECK_INT_EQ(nc_cnn_work_set_chunk(w, 6), -EINVAL);
    CHECK_INT_EQ(nc_cnn_work_new(a, 0, &w), -EINVAL);
    const nc_cnn *col[2] = { a, b };
    CHECK_INT_EQ(nc_cnn_committee_forward(col, 2, w, in, 5, oc), 0);
    for (int k = 0; k < 20; k++)
        CHECK_NEAR(oc[k], 0.5 * (oa[k] + ob[k]), 1e-6, 0);
    const nc_cnn *bad[2] = { a, other };
    CHECK_INT_EQ(nc_cnn_committee_forward(bad, 2, w, in, 5, oc), -EINVAL);
    CHECK_INT_EQ(nc_cnn_committee_forward(col, 0, w, in, 5, oc), -EINVAL);
    /* a normalised column answers by its batch's statistics (a training
     * forward), so the committee refuses it; its own forward still runs */
    nc_cnn *normed = make_net("1x12x12-4C3bn-MP2-6C3-4N", 4, 0.3f);
    nc_cnn_work *wn = NULL;
    REQUIRE(normed && nc_cnn_work_new(normed, 5, &wn) == 0);
    const nc_cnn *one[1] = { normed };
    CHECK_INT_EQ(nc_cnn_committee_forward(one, 1, wn, in, 5, oc), -EINVAL);
    CHECK_INT_EQ(nc_cnn_forward_blas(normed, wn, in, 5, oc), 0);
    nc_cnn_work_free(wn);
    nc_cnn_free(normed);
    nc_cnn_work_free(w);
    nc_cnn_free(a);
    nc_cnn_free(b);
    nc_cnn_free(other);
}

/* ---- batch norm: statistics, the fold, what files accept -------------------- */

/* The first layer's batch statistics against sums computed here, both
 * engines; then the fold: with each layer's fixed statistics set to the
 * batch's (layer by layer, as a trainer measures them), the folded plain
 * net answers on that batch as the normalised one does. */
static void info_for(nc_model_info *info, uint32_t classes);
static int load_forged(const char *arch, const uint8_t *ctab, size_t ctab_len,
                       uint32_t wtype, const void *wgts, size_t wgts_bytes,
                       uint32_t classes, uint32_t kind);

static void test_norm(void)
{
    enum { N = 9 };
    const char *arch = "1x10x10-3C3R70:2bn-MP2-4C2bnrelu-5Nbn-3N";
    nc_cnn *net = make_net(arch, 21, 0.5f);
    REQUIRE(net);
    REQUIRE(nc_cnn_set_table(net, 1, (const uint8_t[]){ 1, 1, 1 }) == 0);
    CHECK_INT_EQ(nc_cnn_norm_layers(net), 3);
    nc_test_rng r = { 77 };
    float in[N * 100], ref[N * 3], got[N * 3], mean[5], var[5];
    fill_uniform(&r, in, N * 100, 0.0f, 1.0f);
    nc_cnn_work *w = NULL;
    REQUIRE(nc_cnn_work_new(net, N, &w) == 0);
    CHECK_INT_EQ(nc_cnn_work_norm_stats(w, 1, mean, var), -EINVAL);     /* no pass yet */

    const nc_cnn_layer *L1 = &net->layers[1];
    for (int path = 0; path < 2; path++) {
        REQUIRE((path ? nc_cnn_forward_blas : nc_cnn_forward_ref)(net, w, in, N, ref) == 0);
        CHECK_INT_EQ(nc_cnn_work_norm_stats(w, 1, mean, var), 0);
        for (uint32_t m = 0; m < 3; m++) {
            double s = 0, ss = 0;
            for (int pass = 0; pass < 2; pass++)
                for (uint32_t b = 0; b < N; b++)
                    for (uint32_t p = 0; p < 64; p++) {
                        double a = L1->bias[m];
                        for (uint32_t i = 0; i < 9; i++)
                            a += (double)L1->weights[m * 9 + i] *
                                 in[b * 100 + (p / 8 + i / 3) * 10 + p % 8 + i % 3];
                        if (pass == 0)
                            s += a;
                        else
                            ss += (a - s / (N * 64)) * (a - s / (N * 64));
                    }
            CHECK_NEAR(mean[m], s / (N * 64), 1e-6, 1e-5);
            CHECK_NEAR(var[m], ss / (N * 64), 1e-6, 1e-5);
        }
        CHECK_INT_EQ(nc_cnn_work_norm_stats(w, 2, mean, var), -EINVAL);  /* pooling */
        CHECK_INT_EQ(nc_cnn_work_norm_stats(w, 6, mean, var), -EINVAL);
        CHECK_INT_EQ(nc_cnn_work_norm_stats(w, 1, NULL, var), -EINVAL);
    }

    /* the fixed statistics from the batch, then the fold */
    static const uint32_t normed[] = { 1, 3, 4 };
    for (size_t i = 0; i < NC_ARRAY_LEN(normed); i++) {
        nc_cnn_layer *L = &net->layers[normed[i]];
        REQUIRE(nc_cnn_forward_ref(net, w, in, N, ref) == 0);
        REQUIRE(nc_cnn_work_norm_stats(w, normed[i], L->mean, L->var) == 0);
    }
    REQUIRE(nc_cnn_forward_ref(net, w, in, N, ref) == 0);
    nc_cnn *plain = NULL;
    REQUIRE(nc_cnn_fold_norm(net, &plain) == 0);
    char buf[NC_CNN_ARCH_MAX];
    CHECK_INT_EQ(nc_cnn_arch_format(plain, buf, sizeof buf), 0);
    CHECK_MSG(strcmp(buf, "1x10x10-3C3R70:2-MP2-4C2relu-5N-3N") == 0, "folded: %s", buf);
    CHECK_INT_EQ(nc_cnn_norm_layers(plain), 0);
    CHECK(plain->custom_tables && memcmp(plain->tables, net->tables, net->n_tables) == 0);
    nc_cnn_work *pw = NULL;
    REQUIRE(nc_cnn_work_new(plain, N, &pw) == 0);
    for (int path = 0; path < 2; path++) {
        REQUIRE((path ? nc_cnn_forward_blas : nc_cnn_forward_ref)(plain, pw, in, N, got) == 0);
        for (int k = 0; k < N * 3; k++)
            CHECK_NEAR(got[k], ref[k], 1e-5, 1e-4);
    }
    /* the unnormalised last layer is copied as it is; a plain net folds to
       a copy */
    CHECK(memcmp(plain->layers[5].weights, net->layers[5].weights, 3 * 5 * sizeof(float)) == 0);
    nc_cnn *copy = NULL;
    REQUIRE(nc_cnn_fold_norm(plain, &copy) == 0);
    CHECK(copy->n_params == plain->n_params &&
          memcmp(copy->params, plain->params, plain->n_params * sizeof(float)) == 0);
    nc_cnn_free(copy);
    /* a bad variance is refused */
    float keep = net->layers[3].var[1];
    net->layers[3].var[1] = -1e-3f;
    CHECK_INT_EQ(nc_cnn_fold_norm(net, &copy), -EINVAL);
    net->layers[3].var[1] = NAN;
    CHECK_INT_EQ(nc_cnn_fold_norm(net, &copy), -EINVAL);
    net->layers[3].var[1] = keep;
    CHECK_INT_EQ(nc_cnn_fold_norm(NULL, &copy), -EINVAL);

    /* a work for the plain net has no room for the statistics */
    CHECK_INT_EQ(nc_cnn_forward_ref(net, pw, in, N, got), -EINVAL);

    /* files: a normalised net saves and loads as itself (checkpoints), but
       no committee file takes one, and none loads as a committee */
    nc_model_info info;
    info_for(&info, 3);
    uint8_t *fb = NULL;
    size_t fl = 0;
    REQUIRE(nc_cnn_save(net, &info, &fb, &fl) == 0);
    nc_cnn *back = NULL;
    CHECK_INT_EQ(nc_cnn_load(fb, fl, &back, NULL), 0);
    if (back) {
        CHECK_INT_EQ(nc_cnn_norm_layers(back), 3);
        CHECK(back->n_params == net->n_params &&
              memcmp(back->params, net->params, net->n_params * sizeof(float)) == 0);
    }
    nc_cnn_free(back);
    /* ... but not with a negative fixed variance: corrupt */
    keep = net->layers[4].var[2];
    net->layers[4].var[2] = -0.5f;
    CHECK_INT_EQ(load_forged(arch, net->tables, net->n_tables, NC_MF_TYPE_F32, net->params,
                             net->n_params * sizeof(float), 3, NC_MF_KIND_CNN),
                 -EBADMSG);
    net->layers[4].var[2] = keep;
    nc_cnn_committee *c = NULL;
    CHECK_INT_EQ(nc_cnn_committee_load(fb, fl, &c, NULL), -ENOTSUP);
    free(fb);
    fb = NULL;
    const nc_cnn *one[2] = { net, plain };
    nc_model_info infos[2] = { info, info };
    CHECK_INT_EQ(nc_cnn_committee_save(one, infos, 1, &info, &fb, &fl), -EINVAL);
    CHECK_INT_EQ(nc_cnn_committee_save(one, infos, 2, &info, &fb, &fl), -EINVAL);
    one[0] = plain;
    CHECK_INT_EQ(nc_cnn_committee_save(one, infos, 2, &info, &fb, &fl), 0);
    free(fb);

    /* initialisation puts every normalised layer at the identity */
    REQUIRE(nc_cnn_init_fan_in(net, 5, 1.0f) == 0);
    for (size_t i = 0; i < NC_ARRAY_LEN(normed); i++) {
        const nc_cnn_layer *L = &net->layers[normed[i]];
        for (uint32_t m = 0; m < L->maps; m++)
            CHECK(L->gamma[m] == 1.0f && L->beta[m] == 0.0f && L->mean[m] == 0.0f &&
                  L->var[m] == 1.0f);
    }
    nc_cnn_work_free(pw);
    nc_cnn_work_free(w);
    nc_cnn_free(plain);
    nc_cnn_free(net);
}

/* ---- model files ------------------------------------------------------------- */

static void info_for(nc_model_info *info, uint32_t classes)
{
    memset(info, 0, sizeof *info);
    info->n_classes = classes;
    for (uint32_t c = 0; c < classes; c++)
        snprintf(info->labels[c], sizeof info->labels[c], "%u", c);
    info->prep = (nc_prep){ NC_PREP_MNIST, 28, 20, 0, 0, -1.0f, 0, 0, { 0 }, { 0 } };
    snprintf(info->data, sizeof info->data, "test_cnn");
    info->test_error = -1;
}

/* A file from the writer, ARCH/CTAB/WGTS as given (NULL: left out). */
static uint8_t *forge(const char *arch, const uint8_t *ctab, size_t ctab_len,
                      uint32_t wtype, const void *wgts, size_t wgts_bytes,
                      uint32_t classes, uint32_t kind, size_t *ret_len)
{
    nc_mf_writer *mw = NULL;
    uint8_t *buf = NULL;
    nc_model_info info;
    info_for(&info, classes);
    if (nc_mf_writer_new(kind, &mw))
        return NULL;
    int err = 0;
    if (arch)
        err |= nc_mf_put_str(mw, NC_MF_TAG('A', 'R', 'C', 'H'), arch);
    if (ctab)
        err |= nc_mf_put(mw, NC_MF_TAG('C', 'T', 'A', 'B'), NC_MF_TYPE_BYTES, ctab, ctab_len);
    if (wgts)
        err |= nc_mf_put(mw, NC_MF_TAG('W', 'G', 'T', 'S'), wtype, wgts, wgts_bytes);
    if (classes)
        err |= nc_mf_put_info(mw, &info);
    if (!err)
        err = nc_mf_finish(mw, &buf, ret_len);
    nc_mf_writer_free(mw);
    CHECK_INT_EQ(err, 0);
    return err ? NULL : buf;
}

static int load_forged(const char *arch, const uint8_t *ctab, size_t ctab_len,
                       uint32_t wtype, const void *wgts, size_t wgts_bytes,
                       uint32_t classes, uint32_t kind)
{
    size_t len = 0;
    uint8_t *buf = forge(arch, ctab, ctab_len, wtype, wgts, wgts_bytes, classes, kind, &len);
    if (!buf)
        return 1;
    nc_cnn *net = (nc_cnn *)0x1;
    int err = nc_cnn_load(buf, len, &net, NULL);
    if (!err)
        nc_cnn_free(net);
    else
        CHECK(net == (nc_cnn *)0x1);
    free(buf);
    return err;
}

static void test_file(void)
{
    const char *arch = "1x12x12-4C3-MP2-6C3R50:3-4N";
    nc_cnn *net = make_net(arch, 11, 0.05f);
    REQUIRE(net);
    /* an explicit table on layer 1 as well */
    uint8_t t1[4] = { 1, 1, 1, 1 };
    REQUIRE(nc_cnn_set_table(net, 1, t1) == 0);
    nc_model_info info, back;
    info_for(&info, 4);
    info.epochs = 3;
    info.seed = 0x123456789ull;
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(nc_cnn_save(net, &info, &buf, &len) == 0);
    nc_cnn *got = NULL;
    REQUIRE(nc_cnn_load(buf, len, &got, &back) == 0);
    char a1[NC_CNN_ARCH_MAX], a2[NC_CNN_ARCH_MAX];
    CHECK(nc_cnn_arch_format(got, a2, sizeof a2) == 0 && strcmp(a2, arch) == 0);
    CHECK(got->n_params == net->n_params &&
          memcmp(got->params, net->params, net->n_params * sizeof(float)) == 0);
    CHECK(got->n_tables == net->n_tables && memcmp(got->tables, net->tables, net->n_tables) == 0);
    CHECK_INT_EQ(back.n_classes, 4);
    CHECK(back.seed == info.seed && back.epochs == 3 && strcmp(back.labels[3], "3") == 0);
    nc_cnn_free(got);

    /* a custom table that differs from the notation survives the trip */
    uint8_t t3[24];
    memset(t3, 0, sizeof t3);
    for (int m = 0; m < 6; m++)
        t3[m * 4 + (m % 4)] = 1;
    REQUIRE(nc_cnn_set_table(net, 3, t3) == 0);
    free(buf);
    REQUIRE(nc_cnn_save(net, &info, &buf, &len) == 0);
    REQUIRE(nc_cnn_load(buf, len, &got, NULL) == 0);
    CHECK(memcmp(got->layers[3].table, t3, sizeof t3) == 0);
    CHECK(memcmp(got->params, net->params, net->n_params * sizeof(float)) == 0);
    nc_cnn_free(got);

    /* every truncation, and bit flips: a clean error, never a crash */
    for (size_t cut = 0; cut < len; cut++) {
        got = (nc_cnn *)0x1;
        int err = nc_cnn_load(buf, cut, &got, NULL);
        if (err == 0 || got != (nc_cnn *)0x1) {
            CHECK_MSG(0, "truncated to %zu bytes: %d", cut, err);
            break;
        }
    }
    nc_test_rng r = { 2024 };
    uint8_t *copy = malloc(len);
    REQUIRE(copy);
    int flips_ok = 0;
    for (int i = 0; i < 2000; i++) {
        memcpy(copy, buf, len);
        size_t bit = nc_test_next(&r) % (len * 8);
        copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        got = (nc_cnn *)0x1;
        int err = nc_cnn_load(copy, len, &got, NULL);
        flips_ok += err < 0 && got == (nc_cnn *)0x1;
    }
    CHECK_INT_EQ(flips_ok, 2000);
    free(copy);

    /* CRC-valid but inconsistent files, made with the writer */
    const float *wg = net->params;
    size_t wb = net->n_params * sizeof(float);
    const uint8_t *ct = net->tables;
    size_t cl = net->n_tables;
    const uint32_t F = NC_MF_TYPE_F32, CNN = NC_MF_KIND_CNN;
    CHECK_INT_EQ(load_forged(arch, ct, cl, F, wg, wb, 4, CNN), 0);        /* control */
    CHECK_INT_EQ(load_forged("1x12x12-4C3-MP2-6C3R50:3", ct, cl, F, wg, wb, 4, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged("1x12x12-4C3-MP2-6C3R50:3-3N", ct, cl, F, wg, wb, 4, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged("1x12x12-4C3S0-MP2-6C3R50:3-4N", ct, cl, F, wg, wb, 4, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged("1x12x12-4C3-MP2-6C3R50:3-4N\n", ct, cl, F, wg, wb, 4, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged("1x99999x99999-4N", ct, cl, F, wg, wb, 4, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged(NULL, ct, cl, F, wg, wb, 4, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged(arch, NULL, 0, F, wg, wb, 4, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged(arch, ct, cl - 1, F, wg, wb, 4, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged(arch, ct, cl, F, wg, wb - 4, 4, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged(arch, ct, cl, NC_MF_TYPE_U32, wg, wb, 4, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged(arch, ct, cl, F, NULL, 0, 4, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged(arch, ct, cl, F, wg, wb, 3, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged(arch, ct, cl, F, wg, wb, 0, CNN), -EBADMSG);
    CHECK_INT_EQ(load_forged(arch, ct, cl, F, wg, wb, 4, NC_MF_KIND_NEOCOG), -EBADMSG);
    uint8_t *tab = malloc(cl);
    float *wbad = malloc(wb);
    REQUIRE(tab && wbad);
    memcpy(tab, ct, cl);
    tab[6] = 2;                                                           /* not 0/1 */
    CHECK_INT_EQ(load_forged(arch, tab, cl, F, wg, wb, 4, CNN), -EBADMSG);
    memcpy(tab, ct, cl);
    memset(tab + 4, 0, 4);                                                /* map unwired */
    CHECK_INT_EQ(load_forged(arch, tab, cl, F, wg, wb, 4, CNN), -EBADMSG);
    memcpy(wbad, wg, wb);
    wbad[7] = NAN;
    CHECK_INT_EQ(load_forged(arch, ct, cl, F, wbad, wb, 4, CNN), -EBADMSG);
    wbad[7] = INFINITY;
    CHECK_INT_EQ(load_forged(arch, ct, cl, F, wbad, wb, 4, CNN), -EBADMSG);
    /* a cut kernel with a nonzero weight */
    memcpy(wbad, wg, wb);
    const nc_cnn_layer *L = &net->layers[3];
    size_t cut = 0;
    while (L->table[cut])
        cut++;
    wbad[(size_t)(L->weights - net->params) + cut * 9 + 4] = 0.5f;
    CHECK_INT_EQ(load_forged(arch, ct, cl, F, wbad, wb, 4, CNN), -EBADMSG);
    /* a table for a network without convolution */
    nc_cnn *mlp = make_net("3x4x4-7N-4N", 3, 0.05f);
    REQUIRE(mlp);
    CHECK_INT_EQ(load_forged("3x4x4-7N-4N", NULL, 0, F, mlp->params, mlp->n_params * 4, 4, CNN), 0);
    CHECK_INT_EQ(load_forged("3x4x4-7N-4N", ct, 1, F, mlp->params, mlp->n_params * 4, 4, CNN), -EBADMSG);
    nc_cnn_free(mlp);
    free(tab);
    free(wbad);

    /* saving checks its inputs */
    info.n_classes = 3;
    CHECK_INT_EQ(nc_cnn_save(net, &info, &buf, &len), -EINVAL);
    info.n_classes = 4;
    net->params[0] = NAN;
    CHECK_INT_EQ(nc_cnn_save(net, &info, &buf, &len), -EINVAL);
    CHECK_INT_EQ(nc_cnn_load(NULL, 0, &got, NULL), -EINVAL);
    (void)a1;
    free(buf);
    nc_cnn_free(net);
}

/* ---- real digits ------------------------------------------------------------- */

/* The committed MNIST fixture through nc_prep_apply into the 29x29 column:
 * BLAS and reference agree on real inputs too. */
static void test_real_digits(void)
{
    const char *dir = getenv("NC_TEST_DATA");
    if (!dir)
        return;
    /* meson sets NC_TEST_DATA and the fixture is committed: a missing or
     * unreadable one is a failure, not a silent skip */
    nc_dataset d = {0};
    int err = nc_test_fixture(&d);
    if (err) {
        CHECK_MSG(0, "fixture unreadable (%d)", err);
        return;
    }
    enum { N = 40 };
    /* 28x28 MNIST preprocessing with a 1-pixel zero border would be 30x30;
       the column wants 29x29, so the 28x28 field goes to the top-left of a
       zero 29x29 one (the same choice as tools/bench_cpu_cnn.c) */
    nc_prep p = { NC_PREP_MNIST, 28, 20, 0, 0, -1.0f, 0, 0, { 0 }, { 0 } };
    float *in = calloc((size_t)N * 841, sizeof(float));
    float field[28 * 28], out_r[N * 10], out_b[N * 10];
    uint32_t got = 0;
    for (uint32_t i = 0; in && i < d.count && got < N; i++) {
        nc_image img = { d.cols, d.rows, d.cols, d.pixels + (size_t)i * d.rows * d.cols };
        if (nc_prep_out_len(&p) != 28 * 28 || nc_prep_apply(&img, &p, field))
            continue;
        for (int y = 0; y < 28; y++)
            memcpy(in + (size_t)got * 841 + y * 29, field + y * 28, 28 * sizeof(float));
        got++;
    }
    if (got == N) {
        nc_cnn *net = make_net(COLUMN, 1, 0.05f);
        nc_cnn_work *w = NULL;
        /* a net or work that cannot be made must fail, not skip the check */
        CHECK(net != NULL);
        if (net)
            CHECK_INT_EQ(nc_cnn_work_new(net, N, &w), 0);
        if (net && w) {
            CHECK_INT_EQ(nc_cnn_forward_ref(net, w, in, N, out_r), 0);
            CHECK_INT_EQ(nc_cnn_forward_blas(net, w, in, N, out_b), 0);
            for (int k = 0; k < N * 10; k++)
                CHECK_NEAR(out_b[k], out_r[k], 1e-5, 1e-5);
        }
        nc_cnn_work_free(w);
        nc_cnn_free(net);
    } else {
        CHECK_MSG(0, "only %u of %d fixture digits preprocessed", got, (int)N);
    }
    free(in);
    nc_dataset_fini(&d);
}

/* nc_cnn_loss_targets: NULL targets and the label's own +1 / -1 as targets
 * give nc_cnn_loss bit for bit; other targets give d = y - t and
 * E = 1/2 sum d^2, while the error count still follows the labels. */
static void test_loss_targets(void)
{
    enum { N = 7 };
    nc_cnn *net = make_net("1x29x29-20C4-MP2-40C5-MP3-150N-10N", 5, 0.1f);
    REQUIRE(net);
    const uint32_t K = net->n_outputs;
    nc_test_rng r = { 2024 };
    float y[N * 10], t[N * 10], d0[N * 10], d1[N * 10];
    uint8_t labels[N];
    REQUIRE(K == 10);
    fill_uniform(&r, y, N * K, -1.0f, 1.0f);
    for (uint32_t b = 0; b < N; b++)
        labels[b] = (uint8_t)((b * 3 + 1) % K);
    double l0 = 0, l1 = 0;
    uint32_t e0 = 0, e1 = 0;
    REQUIRE(nc_cnn_loss(net, y, labels, N, d0, &l0, &e0) == 0);
    CHECK_INT_EQ(nc_cnn_loss_targets(net, y, labels, NULL, N, d1, &l1, &e1), 0);
    CHECK(memcmp(d0, d1, sizeof d0) == 0 && l0 == l1 && e0 == e1);
    for (uint32_t b = 0; b < N; b++)
        for (uint32_t k = 0; k < K; k++)
            t[b * K + k] = k == labels[b] ? 1.0f : -1.0f;
    CHECK_INT_EQ(nc_cnn_loss_targets(net, y, labels, t, N, d1, &l1, &e1), 0);
    CHECK(memcmp(d0, d1, sizeof d0) == 0 && l0 == l1 && e0 == e1);
    fill_uniform(&r, t, N * K, -1.0f, 1.0f);
    CHECK_INT_EQ(nc_cnn_loss_targets(net, y, labels, t, N, d1, &l1, &e1), 0);
    double want = 0.0;
    int exact = 1;
    for (uint32_t i = 0; i < N * K; i++) {
        exact &= d1[i] == y[i] - t[i];
        want += 0.5 * (double)(y[i] - t[i]) * (y[i] - t[i]);
    }
    CHECK(exact);
    CHECK_NEAR(l1, want, 1e-9, 1e-12);
    CHECK_INT_EQ(e1, e0);
    CHECK_INT_EQ(nc_cnn_loss_targets(NULL, y, labels, t, N, d1, NULL, NULL), -EINVAL);
    nc_cnn_free(net);
}

/* nc_cnn_loss_softmax: E = -sum log p[label] with p = softmax(scale y),
 * checked against a numerical derivative of E in each output (so d_out is
 * dE/dy, scale included), against log-sum-exp written out, and with the
 * squared error's error count.  Large outputs must not overflow exp. */
static void test_loss_softmax(void)
{
    enum { N = 6 };
    nc_cnn *net = make_net("1x29x29-20C4-MP2-40C5-MP3-150N-10N", 5, 0.1f);
    REQUIRE(net);
    const uint32_t K = net->n_outputs;
    nc_test_rng r = { 77 };
    float y[N * 10], d[N * 10], yp[N * 10];
    uint8_t labels[N];
    REQUIRE(K == 10);
    fill_uniform(&r, y, N * K, -1.7f, 1.7f);
    for (uint32_t b = 0; b < N; b++)
        labels[b] = (uint8_t)((b * 7 + 2) % K);
    const float scale = 2.5f;
    double loss = 0, want = 0;
    uint32_t errors = 99, mse_errors = 0;
    REQUIRE(nc_cnn_loss_softmax(net, y, labels, N, scale, d, &loss, &errors) == 0);
    REQUIRE(nc_cnn_loss(net, y, labels, N, NULL, NULL, &mse_errors) == 0);
    CHECK_INT_EQ(errors, mse_errors);
    for (uint32_t b = 0; b < N; b++) {
        double sum = 0, dsum = 0;
        for (uint32_t k = 0; k < K; k++) {
            sum += exp((double)scale * y[b * K + k]);
            dsum += d[b * K + k];
        }
        want += log(sum) - (double)scale * y[b * K + labels[b]];
        CHECK_NEAR(dsum, 0.0, 1e-6, 0);     /* sum_k scale (p_k - onehot_k) = 0 */
        CHECK(d[b * K + labels[b]] < 0.0f);  /* the label's output is pushed up */
    }
    CHECK_NEAR(loss, want, 1e-12, 1e-9);
    /* central differences of E in every output */
    const float eps = 1e-2f;
    double worst = 0;
    for (uint32_t i = 0; i < N * K; i++) {
        double lp = 0, lm = 0;
        memcpy(yp, y, sizeof y);
        yp[i] = y[i] + eps;
        REQUIRE(nc_cnn_loss_softmax(net, yp, labels, N, scale, NULL, &lp, NULL) == 0);
        yp[i] = y[i] - eps;
        REQUIRE(nc_cnn_loss_softmax(net, yp, labels, N, scale, NULL, &lm, NULL) == 0);
        const double num = (lp - lm) / (2.0 * ((double)(y[i] + eps) - (double)y[i]));
        const double diff = fabs(num - d[i]);
        if (diff > worst)
            worst = diff;
    }
    CHECK_MSG(worst < 2e-3, "softmax loss: dE/dy off its numerical derivative by %g", worst);
    /* outputs far beyond the tanh's range: finite, and the loss of a
     * confident right answer is near 0, of a confident wrong one near the gap */
    float big[10] = { 0 };
    uint8_t l0 = 0, l1 = 1;
    big[0] = 400.0f;
    REQUIRE(nc_cnn_loss_softmax(net, big, &l0, 1, 1.0f, d, &loss, &errors) == 0);
    CHECK(loss >= 0 && loss < 1e-12 && errors == 0);
    REQUIRE(nc_cnn_loss_softmax(net, big, &l1, 1, 1.0f, d, &loss, &errors) == 0);
    CHECK_NEAR(loss, 400.0, 0, 1e-9);
    CHECK(errors == 1 && isfinite(d[0]) && d[1] == -1.0f);
    CHECK_INT_EQ(nc_cnn_loss_softmax(net, y, labels, N, 0.0f, d, NULL, NULL), -EINVAL);
    CHECK_INT_EQ(nc_cnn_loss_softmax(net, y, labels, N, -1.0f, d, NULL, NULL), -EINVAL);
    CHECK_INT_EQ(nc_cnn_loss_softmax(net, y, labels, N, NAN, d, NULL, NULL), -EINVAL);
    labels[2] = 10;
    CHECK_INT_EQ(nc_cnn_loss_softmax(net, y, labels, N, scale, d, NULL, NULL), -EINVAL);
    nc_cnn_free(net);
}

int main(void)
{
    test_parse_good();
    test_parse_bad();
    test_init_tables();
    test_init_fan_in();
    test_activation();
    test_gradients();
    test_loss_targets();
    test_loss_softmax();
    test_parity();
    test_sgd();
    test_sgd_momentum();
    test_adam();
    test_work_committee();
    test_norm();
    test_file();
    test_real_digits();
    return nc_test_finish();
}

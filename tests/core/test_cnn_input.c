/* tests/core/test_cnn_input.c — a column's own input transform (the CNN
 * notation's W<w>, core/cnn/cnn_input.c): the notation round trip and its
 * refusals, the width normalisation itself on hand-made digits (box width,
 * rows kept, ink mass scaled by w / width, centring), the committee run
 * feeding a W column the transformed images while its plain columns get the
 * input as it is, the model file keeping W, and the CPU engine the same. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "cnn.h"
#include "test.h"

#define S 29            /* the CNN input side */

static void check_arch(const char *arch, int want)
{
    nc_cnn *net = NULL;
    int err = nc_cnn_new(arch, &net);
    CHECK_MSG(err == want, "%s: %d, want %d", arch, err, want);
    if (!err) {
        char back[NC_CNN_ARCH_MAX];
        CHECK_INT_EQ(nc_cnn_arch_format(net, back, sizeof back), 0);
        CHECK_MSG(!strcmp(back, arch), "%s formats as %s", arch, back);
    }
    nc_cnn_free(net);
}

static void test_notation(void)
{
    check_arch("1x29x29W14-20C4-MP2-40C5-MP3-150N-10N", 0);
    check_arch("1x29x29W29-6C4-MP2-10N", 0);
    check_arch("1x29x29W1-6C4-MP2-10N", 0);
    check_arch("1x29x29W0-6C4-MP2-10N", -EINVAL);       /* no width */
    check_arch("1x29x29W30-6C4-MP2-10N", -EINVAL);      /* wider than the field */
    check_arch("2x29x29W14-6C4-MP2-10N", -EINVAL);      /* one map only */
    check_arch("1x29x29W014-6C4-MP2-10N", -EINVAL);     /* leading zero */
    check_arch("1x29x29W-6C4-MP2-10N", -EINVAL);
    check_arch("1x29x29W14W12-6C4-MP2-10N", -EINVAL);
    nc_cnn *net = NULL;
    REQUIRE(nc_cnn_new("1x29x29-6C4-MP2-10N", &net) == 0);
    CHECK_INT_EQ(net->width_norm, 0);
    nc_cnn_free(net);
}

/* Column extent, per-row sums and centre of mass (pixel index) of img. */
static void measure(const float *img, uint32_t *x0, uint32_t *x1, double row_sum[S],
                    double *cx)
{
    *x0 = S;
    *x1 = 0;
    double m = 0, mx = 0;
    for (uint32_t y = 0; y < S; y++) {
        row_sum[y] = 0;
        for (uint32_t x = 0; x < S; x++) {
            const float v = img[y * S + x];
            if (v > 0) {
                *x0 = x < *x0 ? x : *x0;
                *x1 = x + 1 > *x1 ? x + 1 : *x1;
            }
            row_sum[y] += v;
            m += v;
            mx += v * x;
        }
    }
    *cx = m > 0 ? mx / m : -1;
}

/* A digit-like image: a bar of the given width (columns x0..), rows 4..23,
 * grey levels varying along the rows and columns. */
static void bar(float *img, uint32_t x0, uint32_t width)
{
    memset(img, 0, S * S * sizeof(float));
    for (uint32_t y = 4; y < 24; y++)
        for (uint32_t x = x0; x < x0 + width; x++)
            img[y * S + x] = 0.3f + 0.7f * (float)((x * 7 + y * 3) % 11) / 10.0f;
}

static void test_transform(void)
{
    nc_cnn *net = NULL;
    float in[2 * S * S], out[2 * S * S];
    const uint32_t widths[] = { 10, 14, 18, 20 }, bars[][2] = { { 3, 5 }, { 9, 14 }, { 2, 20 } };
    for (size_t wi = 0; wi < NC_ARRAY_LEN(widths); wi++) {
        char arch[64];
        snprintf(arch, sizeof arch, "1x29x29W%u-6C4-MP2-10N", widths[wi]);
        REQUIRE(nc_cnn_new(arch, &net) == 0);
        const uint32_t W = widths[wi];
        for (size_t bi = 0; bi < NC_ARRAY_LEN(bars); bi++) {
            const uint32_t bx = bars[bi][0], bw = bars[bi][1];
            bar(in, bx, bw);
            bar(in + S * S, 20, 8);                     /* a second image in the batch */
            memset(out, 0x7f, sizeof out);              /* poison */
            CHECK_INT_EQ(nc_cnn_input_transform(net, in, 2, out), 0);
            uint32_t x0, x1, ix0, ix1;
            double rows[S], in_rows[S], cx, in_cx;
            measure(out, &x0, &x1, rows, &cx);
            measure(in, &ix0, &ix1, in_rows, &in_cx);
            CHECK_MSG(x1 - x0 == W, "W%u of a %u-wide bar: %u wide", W, bw, x1 - x0);
            for (uint32_t y = 0; y < S; y++)
                CHECK_NEAR(rows[y], in_rows[y] * W / bw, 1e-4, 1e-5);
            /* centre of mass as near column 14 as whole-pixel shifts allow */
            CHECK_MSG(fabs(cx - 14.0) <= 0.5 + 1e-9 || x0 == 0 || x1 == S,
                      "W%u of a %u-wide bar: centre of mass %.3f", W, bw, cx);
            measure(out + S * S, &x0, &x1, rows, &cx);
            CHECK_INT_EQ(x1 - x0, W);
        }
        /* no ink: copied */
        memset(in, 0, sizeof in);
        CHECK_INT_EQ(nc_cnn_input_transform(net, in, 1, out), 0);
        for (uint32_t i = 0; i < S * S; i++)
            CHECK(out[i] == 0.0f);
        CHECK_INT_EQ(nc_cnn_input_transform(net, in, 1, in), -EINVAL);   /* in place */
        CHECK_INT_EQ(nc_cnn_input_transform(net, in, 0, out), -EINVAL);
        nc_cnn_free(net);
    }
    /* without W: a copy */
    REQUIRE(nc_cnn_new("1x29x29-6C4-MP2-10N", &net) == 0);
    bar(in, 9, 6);
    CHECK_INT_EQ(nc_cnn_input_transform(net, in, 1, out), 0);
    CHECK(!memcmp(in, out, S * S * sizeof(float)));
    nc_cnn_free(net);
}

static void info_for(nc_model_info *info, const char *command)
{
    memset(info, 0, sizeof *info);
    info->n_classes = 10;
    for (uint32_t c = 0; c < 10; c++)
        snprintf(info->labels[c], sizeof info->labels[c], "%u", c);
    info->prep = (nc_prep){ NC_PREP_MNIST, 29, 20, 0, 0, 0.0f, 0, 0, { 0 }, { 0 } };
    snprintf(info->command, sizeof info->command, "%s", command);
    info->test_error = -1.0;
}

/* A committee of a plain column and a W12 column: its run is the mean of the
 * plain column on the input and the W12 column on the transformed input;
 * the file keeps W; the CPU engine answers the same. */
static void test_committee(void)
{
    nc_cnn *net[2] = { NULL, NULL };
    REQUIRE(nc_cnn_new("1x29x29-6C4-MP2-12C4-MP2-10N", &net[0]) == 0);
    REQUIRE(nc_cnn_new("1x29x29W12-6C4-MP2-12C4-MP2-10N", &net[1]) == 0);
    REQUIRE(nc_cnn_init_uniform(net[0], 5, 0.3f) == 0 && nc_cnn_init_uniform(net[1], 6, 0.3f) == 0);
    nc_model_info col[2], info;
    info_for(&col[0], "plain");
    info_for(&col[1], "width 12");
    info_for(&info, "bundle");
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(nc_cnn_committee_save((const nc_cnn *const *)net, col, 2, &info, &buf, &len) == 0);
    nc_cnn_committee *c = NULL;
    REQUIRE(nc_cnn_committee_load(buf, len, &c, NULL) == 0);
    CHECK_INT_EQ(c->column[0]->width_norm, 0);
    CHECK_INT_EQ(c->column[1]->width_norm, 12);

    enum { N = 5 };
    static float in[N * S * S], xin[N * S * S];
    float out[N * 10], y0[N * 10], y1[N * 10];
    for (uint32_t i = 0; i < N; i++)
        bar(in + i * S * S, 4 + 3 * i, 3 + 2 * i);
    nc_cnn_committee_work *w = NULL;
    REQUIRE(nc_cnn_committee_work_new(c, N, &w) == 0);
    CHECK_INT_EQ(nc_cnn_committee_run(c, w, in, N, out), 0);
    nc_cnn_work *cw = NULL;
    REQUIRE(nc_cnn_work_new(net[0], N, &cw) == 0);
    CHECK_INT_EQ(nc_cnn_forward_blas(net[0], cw, in, N, y0), 0);
    CHECK_INT_EQ(nc_cnn_input_transform(net[1], in, N, xin), 0);
    CHECK_INT_EQ(nc_cnn_forward_blas(net[1], cw, xin, N, y1), 0);
    float plain[N * 10];
    CHECK_INT_EQ(nc_cnn_forward_blas(net[1], cw, in, N, plain), 0);
    int transform_mattered = 0;
    for (int i = 0; i < N * 10; i++) {
        CHECK(out[i] == (y0[i] + y1[i]) / 2.0f);
        transform_mattered |= fabsf(plain[i] - y1[i]) > 1e-3f;
    }
    CHECK(transform_mattered);      /* else the run would prove nothing */
    /* the older same-shape committee call has no room for the transform */
    const nc_cnn *both[2] = { net[0], net[1] };
    CHECK_INT_EQ(nc_cnn_committee_forward(both, 2, cw, in, N, y0), -EINVAL);
    nc_cnn_work_free(cw);

    /* the CPU engine behind the daemon */
    nc_backend *be = NULL;
    REQUIRE(nc_backend_open(&nc_backend_cpu, buf, len, 0, &be) == 0);
    void *worker = NULL;
    REQUIRE(be->ops->worker_new(be->impl, 2, &worker) == 0);
    float got[N * 10];
    CHECK_INT_EQ(be->ops->forward(be->impl, worker, in, N, got), 0);
    for (int i = 0; i < N * 10; i++)
        CHECK_NEAR(got[i], out[i], 1e-6, 1e-6);
    be->ops->worker_free(worker);
    nc_backend_close(be);

    /* a one-column file of a W column keeps it too */
    free(buf);
    REQUIRE(nc_cnn_save(net[1], &col[1], &buf, &len) == 0);
    nc_cnn *back = NULL;
    REQUIRE(nc_cnn_load(buf, len, &back, NULL) == 0);
    CHECK_INT_EQ(back->width_norm, 12);
    nc_cnn_free(back);
    nc_cnn_committee_work_free(w);
    nc_cnn_committee_free(c);
    nc_cnn_free(net[0]);
    nc_cnn_free(net[1]);
    free(buf);
}

int main(void)
{
    test_notation();
    test_transform();
    test_committee();
    return nc_test_finish();
}

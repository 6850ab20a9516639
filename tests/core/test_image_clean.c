/* tests/core/test_image_clean.c — nc_image_clean (core/image/image_clean.h).
 *
 * Photos are rendered here from the fixture's MNIST digits: grey paper under
 * a light gradient and a vignette, the digit enlarged into it off-centre in
 * dark ink, sensor noise, and, per case, ruled lines, a shadowed corner or a
 * finger at the border.  What the networks get from a photo must match
 * what they get from the digit itself, and a clean MNIST digit must pass
 * through unchanged (so the recorded MNIST figures hold exactly). */
#include <math.h>
#include <string.h>

#include "backend.h"
#include "dataset.h"
#include "fixture.h"
#include "image.h"
#include "image_clean.h"
#include "test.h"

enum { RULES = 1, SHADOW = 2, FINGER = 4, LIGHT_INK = 8 };

static double gauss(nc_test_rng *r)
{
    double s = 0.0;
    for (int i = 0; i < 12; i++)
        s += nc_test_uniform(r);
    return s - 6.0;
}

/* The 28x28 digit d of ds, sampled bilinearly at (u, v) in its pixels. */
static double digit_at(const nc_dataset *ds, uint32_t d, double u, double v)
{
    const uint8_t *px = ds->pixels + (size_t)d * 28 * 28;
    if (u < 0 || v < 0 || u > 27 || v > 27)
        return 0.0;
    int x = (int)u, y = (int)v;
    int x1 = x < 27 ? x + 1 : x, y1 = y < 27 ? y + 1 : y;
    double fx = u - x, fy = v - y;
    double a = px[y * 28 + x] * (1 - fx) + px[y * 28 + x1] * fx;
    double b = px[y1 * 28 + x] * (1 - fx) + px[y1 * 28 + x1] * fx;
    return (a * (1 - fy) + b * fy) / 255.0;
}

/* A w x h photo of digit d: the 28x28 field scaled by s with its corner at
 * (ox, oy).  *ret_box gets the frame box of the digit's pixels above 64. */
static nc_image *photo(const nc_dataset *ds, uint32_t d, uint32_t w, uint32_t h, double s,
                       double ox, double oy, unsigned flags, nc_test_rng *r, nc_rect *ret_box)
{
    nc_image *img = NULL;
    if (nc_image_new(w, h, &img))
        return NULL;
    double paper = 150 + 80 * nc_test_uniform(r), ink = 40 + 60 * nc_test_uniform(r);
    double gx = (nc_test_uniform(r) - 0.5) * 0.4, gy = (nc_test_uniform(r) - 0.5) * 0.4;
    uint32_t x0 = w, y0 = h, x1 = 0, y1 = 0;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            double nx = (double)x / w - 0.5, ny = (double)y / h - 0.5;
            double light = 1.0 + gx * nx * 2 + gy * ny * 2 - 0.25 * (nx * nx + ny * ny);
            if (flags & SHADOW) {       /* a soft shadow over one corner */
                double t = (nx + ny - 0.35) / 0.25;
                light *= 1.0 - 0.3 * (t < 0 ? 0 : t > 1 ? 1 : t);
            }
            double c = digit_at(ds, d, (x - ox) / s, (y - oy) / s);
            if (c > 64.0 / 255.0) {
                x0 = x < x0 ? x : x0; y0 = y < y0 ? y : y0;
                x1 = x > x1 ? x : x1; y1 = y > y1 ? y : y1;
            }
            double p = paper;
            if ((flags & RULES) && (y % 31) < 2)
                p -= 35;
            if ((flags & FINGER) && nx > 0.42 + 0.05 * ny * ny)
                p = 110;
            double v = (flags & LIGHT_INK) ? 40 + c * (paper - 40) : p * (1 - c) + ink * c;
            v = v * light + 3.0 * gauss(r);
            img->pixels[(size_t)y * w + x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lround(v));
        }
    *ret_box = (nc_rect){ x0, y0, x1 - x0 + 1, y1 - y0 + 1 };
    return img;
}

/* The shipped default CNN on the CPU engine table: the network a photo's
 * clean image goes to. */
typedef struct reader {
    nc_backend *be;
    void *worker;
    float *in;
} reader;

static int reader_open(reader *rd)
{
    char path[1024];
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_test_model_path("cnn-column.ncm", path, sizeof path);
    int err = nc_file_read_model(path, 64u << 20, &buf, &len);
    if (!err)
        err = nc_backend_open(&nc_backend_cpu, buf, len, 0, &rd->be);
    free(buf);
    if (!err)
        err = rd->be->ops->worker_new(rd->be->impl, 1, &rd->worker);
    if (!err && !(rd->in = malloc(rd->be->input_len * sizeof *rd->in)))
        err = -ENOMEM;
    return err;
}

static void reader_close(reader *rd)
{
    if (rd->worker)
        rd->be->ops->worker_free(rd->worker);
    nc_backend_close(rd->be);
    free(rd->in);
}

/* The CNN's label for a clean image, -1 if it cannot be read. */
static int reader_label(reader *rd, const nc_image *clean)
{
    float out[NC_MF_MAX_CLASSES];
    nc_prep p = rd->be->info.prep;
    p.invert = 0;
    if (nc_prep_apply(clean, &p, rd->in) ||
        rd->be->ops->forward(rd->be->impl, rd->worker, rd->in, 1, out))
        return -1;
    return nc_backend_label(rd->be->kind, out, rd->be->info.n_classes);
}

/* Every fixture digit passes through unchanged, and so gives the networks
 * exactly the input it gave before. */
static void test_mnist_unchanged(const nc_dataset *ds)
{
    uint32_t same = 0;
    for (uint32_t d = 0; d < ds->count; d++) {
        nc_image in = { 28, 28, 28, (uint8_t *)ds->pixels + (size_t)d * 784 }, *out = NULL;
        nc_clean_info info;
        int err = nc_image_clean(&in, NC_POLARITY_AUTO, &out, &info);
        if (!err && out->width == 28 && out->height == 28 && !info.photo && !info.inverted &&
            !memcmp(out->pixels, in.pixels, 784))
            same++;
        nc_image_free(out);
    }
    CHECK_INT_EQ(same, ds->count);
}

/* Photos with every nuisance are read right by the default CNN, and the
 * box covers the digit. */
static void test_photos(const nc_dataset *ds, reader *rd, unsigned flags, const char *what)
{
    nc_test_rng r = { 0x9e3779b97f4a7c15ULL ^ flags };
    uint32_t n = 60, close = 0, covered = 0, found = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t d = (k * 37) % ds->count;
        uint32_t w = 160 + (uint32_t)(nc_test_uniform(&r) * 160);
        uint32_t h = 160 + (uint32_t)(nc_test_uniform(&r) * 160);
        uint32_t side = w < h ? w : h;
        double s = side * (0.45 + 0.4 * nc_test_uniform(&r)) / 20.0;  /* digit 45-85 % */
        double ox = (w - 28 * s) * nc_test_uniform(&r), oy = (h - 28 * s) * nc_test_uniform(&r);
        nc_rect box;
        nc_image *img = photo(ds, d, w, h, s, ox, oy, flags, &r, &box);
        nc_image *out = NULL;
        nc_clean_info info;
        if (!img)
            continue;
        if (!nc_image_clean(img, NC_POLARITY_AUTO, &out, &info)) {
            found++;
            int label = reader_label(rd, out);
            if (label == ds->labels[d])
                close++;
            else if (getenv("NC_TEST_VERBOSE"))
                fprintf(stderr, "%s: photo %u (digit %u, %ux%u): read %d, box %u,%u %ux%u (digit %u,%u %ux%u)\n",
                        what, k, d, w, h, label, info.box.x, info.box.y, info.box.width, info.box.height,
                        box.x, box.y, box.width, box.height);
            if (getenv("NC_TEST_VERBOSE") && label != ds->labels[d]) {
                char fn[256];
                snprintf(fn, sizeof fn, "/tmp/clean-%s-%u-in.pgm", what, k);
                FILE *f = fopen(fn, "wb");
                fprintf(f, "P5 %u %u 255\n", img->width, img->height);
                fwrite(img->pixels, 1, (size_t)img->width * img->height, f);
                fclose(f);
                snprintf(fn, sizeof fn, "/tmp/clean-%s-%u-out.pgm", what, k);
                f = fopen(fn, "wb");
                fprintf(f, "P5 %u %u 255\n", out->width, out->height);
                fwrite(out->pixels, 1, (size_t)out->width * out->height, f);
                fclose(f);
            }
            if (info.box.x <= box.x + 2 && info.box.y <= box.y + 2 &&
                info.box.x + info.box.width + 2 >= box.x + box.width &&
                info.box.y + info.box.height + 2 >= box.y + box.height &&
                info.box.width < box.width * 1.6 + 8 && info.box.height < box.height * 1.6 + 8)
                covered++;
            else if (getenv("NC_TEST_VERBOSE"))
                fprintf(stderr, "%s: photo %u: box %u,%u %ux%u, digit %u,%u %ux%u\n", what, k,
                        info.box.x, info.box.y, info.box.width, info.box.height, box.x, box.y,
                        box.width, box.height);
        }
        nc_image_free(out);
        nc_image_free(img);
    }
    CHECK_MSG(found == n, "%s: %u of %u photos had a character", what, found, n);
    CHECK_MSG(close >= n * 95 / 100, "%s: %u of %u photos read right", what,
              close, n);
    CHECK_MSG(covered >= n * 95 / 100, "%s: %u of %u boxes fit the digit", what, covered, n);
}

/* Paper alone, however lit and ruled, has no character. */
static void test_blank(void)
{
    nc_test_rng r = { 12345 };
    for (unsigned flags = 0; flags < 8; flags++) {
        nc_image *img = NULL;
        REQUIRE(!nc_image_new(240, 200, &img));
        for (uint32_t y = 0; y < 200; y++)
            for (uint32_t x = 0; x < 240; x++) {
                double v = 200 - 0.2 * x + 3.0 * gauss(&r);
                if ((flags & RULES) && (y % 31) < 2)
                    v -= 35;
                if (flags & SHADOW) {   /* as in photo() */
                    double t = ((double)x / 240 + (double)y / 200 - 1.35) / 0.25;
                    v *= 1.0 - 0.3 * (t < 0 ? 0 : t > 1 ? 1 : t);
                }
                if ((flags & FINGER) && x > 215)
                    v = 110;
                img->pixels[(size_t)y * 240 + x] = (uint8_t)lround(v);
            }
        nc_image *out = NULL;
        CHECK_MSG(nc_image_clean(img, NC_POLARITY_AUTO, &out, NULL) == -ENOENT,
                  "blank page with flags %u", flags);
        nc_image_free(out);
        nc_image_free(img);
    }
}

static void test_errors(void)
{
    uint8_t px[4] = { 0 };
    nc_image ok = { 2, 2, 2, px }, bad = { 0, 2, 2, px }, *out = NULL;
    CHECK_INT_EQ(nc_image_clean(NULL, NC_POLARITY_AUTO, &out, NULL), -EINVAL);
    CHECK_INT_EQ(nc_image_clean(&bad, NC_POLARITY_AUTO, &out, NULL), -EINVAL);
    CHECK_INT_EQ(nc_image_clean(&ok, NC_POLARITY_AUTO, NULL, NULL), -EINVAL);
    CHECK_INT_EQ(nc_image_clean(&ok, (nc_polarity)7, &out, NULL), -EINVAL);
    CHECK_INT_EQ(nc_image_clean(&ok, NC_POLARITY_AUTO, &out, NULL), -ENOENT);  /* all zero */
    CHECK(out == NULL);
}

int main(void)
{
    nc_dataset ds;
    if (nc_test_fixture(&ds)) {
        fprintf(stderr, "no fixture\n");
        return NC_TEST_SKIP;
    }
    test_errors();
    test_mnist_unchanged(&ds);
    reader rd = { 0 };
    int err = reader_open(&rd);
    CHECK_MSG(err == 0, "cannot open models/cnn-column.ncm: %d", err);
    if (!err) {
        test_photos(&ds, &rd, 0, "plain");
        test_photos(&ds, &rd, RULES, "ruled page");
        test_photos(&ds, &rd, SHADOW, "shadowed corner");
        test_photos(&ds, &rd, FINGER, "finger at the border");
        test_photos(&ds, &rd, LIGHT_INK, "light ink on a dark ground");
    }
    reader_close(&rd);
    test_blank();
    nc_dataset_fini(&ds);
    return nc_test_finish();
}

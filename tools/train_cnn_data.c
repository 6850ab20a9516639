/* tools/train_cnn_data.c — its data: the digits through the model's
 * preparation, error counts, --init, --extra and the sets other than MNIST.
 *
 * Layer: tools; part of `neocog-train cnn` (train_cnn.c says how it trains). */
#include "train_cnn.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cnn.h"
#include "deform.h"
#include "train_norm.h"
#include "train_teacher.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "nc_config.h"
#if NC_HAVE_CUDA
#include "cnn_engine.h"
#include "device.h"
#endif

/* ---- input pipeline ---------------------------------------------------- */

/* Every digit of d through the model's preprocessing p, then net's own
 * input transform (a W<w> column's width normalisation; deformations come
 * after it, as in the seed's committees), once, into a malloc'd array of
 * count * plane floats: the network inputs, undeformed.  An empty image (no
 * ink; MNIST has none) becomes all zeros. */
int train_cnn_prepare_inputs(const nc_dataset *d, const nc_prep *p, const nc_cnn *net,
                             float **ret_inputs)
{
    const size_t plane = nc_prep_out_len(p);
    float *inputs = malloc((size_t)d->count * plane * sizeof(float));
    if (!inputs)
        return -ENOMEM;
    for (uint32_t k = 0; k < d->count; k++) {
        nc_image img = { d->cols, d->rows, d->cols, d->pixels + (size_t)k * d->rows * d->cols };
        float *dst = inputs + (size_t)k * plane;
        int err = nc_prep_apply(&img, p, dst);
        if (err == -ENOENT) {
            memset(dst, 0, plane * sizeof(float));
        } else if (err) {
            free(inputs);
            return err;
        }
    }
    if (net->width_norm && d->count) {
        float *t = malloc((size_t)d->count * plane * sizeof(float));
        int err = t ? 0 : -ENOMEM;
        for (uint32_t k = 0; !err && k < d->count; k += NC_CNN_MAX_BATCH) {
            const uint32_t m = d->count - k < NC_CNN_MAX_BATCH ? d->count - k : NC_CNN_MAX_BATCH;
            err = nc_cnn_input_transform(net, inputs + (size_t)k * plane, m,
                                         t + (size_t)k * plane);
        }
        free(inputs);
        if (err) {
            free(t);
            return err;
        }
        inputs = t;
    }
    *ret_inputs = inputs;
    return 0;
}

/* Errors of net on inputs [first, first + count) (no deformation), on the
 * GPU engine g when there is one (it holds net's current params). */
int train_cnn_count_errors(const nc_cnn *net, nc_cnn_work *w, void *g, const float *inputs,
                           const uint8_t *labels, uint32_t plane, uint32_t first,
                           uint32_t count, float *out, uint32_t *ret_errors)
{
    uint32_t errors = 0;
    for (uint32_t i = 0; i < count; i += EVAL_BATCH) {
        uint32_t n = count - i < EVAL_BATCH ? count - i : EVAL_BATCH;
        uint32_t e = 0;
        const float *in = inputs + (size_t)(first + i) * plane;
        int err;
#if NC_HAVE_CUDA
        if (g)
            err = nc_gpu_cnn_forward(g, in, n, out);
        else
#endif
            err = nc_cnn_forward_blas(net, w, in, n, out);
        (void)g;
        if (!err)
            err = nc_cnn_loss(net, out, labels + first + i, n, NULL, NULL, &e);
        if (err)
            return err;
        errors += e;
    }
    *ret_errors = errors;
    return 0;
}

/* ---- extra training images and a starting point ---------------------------- */

/* --init FILE: its weights into net, which must have the same architecture
 * (a one-column model file). */
int train_cnn_load_init(const char *path, nc_cnn *net)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_cnn *got = NULL;
    char a[NC_CNN_ARCH_MAX], b[NC_CNN_ARCH_MAX];
    int err = nc_file_read_model(path, CKPT_MAX_BYTES, &buf, &len);
    if (!err)
        err = nc_cnn_load(buf, len, &got, NULL);
    free(buf);
    if (err) {
        fprintf(stderr, "neocog-train cnn: --init %s: %s\n", path, nc_strerror(err));
        return err;
    }
    nc_cnn_arch_format(got, a, sizeof(a));
    nc_cnn_arch_format(net, b, sizeof(b));
    if (strcmp(a, b) || got->n_params != net->n_params) {
        fprintf(stderr, "neocog-train cnn: --init %s is %s, not %s\n", path, a, b);
        nc_cnn_free(got);
        return -EINVAL;
    }
    memcpy(net->params, got->params, net->n_params * sizeof(float));
    nc_cnn_free(got);
    return 0;
}

/* --extra PREFIX: PREFIX-images-idx3-ubyte and PREFIX-labels-idx1-ubyte, 28x28
 * images with labels below n_classes, as neocog-streamgen --patches writes them. */
#define EXTRA_MAX_BYTES ((size_t)1 << 31)
int train_cnn_load_extra(const char *prefix, uint32_t n_classes, nc_dataset *ret)
{
    char pi[1024], pl[1024];
    snprintf(pi, sizeof(pi), "%s-images-idx3-ubyte", prefix);
    snprintf(pl, sizeof(pl), "%s-labels-idx1-ubyte", prefix);
    int err = nc_file_read_idx(pi, pl, EXTRA_MAX_BYTES, ret);
    if (err) {
        fprintf(stderr, "neocog-train cnn: --extra %s: %s\n", prefix, nc_strerror(err));
        return err;
    }
    if (ret->rows != MNIST_SIDE || ret->cols != MNIST_SIDE || ret->count == 0) {
        fprintf(stderr, "neocog-train cnn: --extra %s: not 28x28 images\n", prefix);
        return -EINVAL;
    }
    for (uint32_t i = 0; i < ret->count; i++)
        if (ret->labels[i] >= n_classes) {
            fprintf(stderr, "neocog-train cnn: --extra %s: label %u is %u\n", prefix, i,
                    ret->labels[i]);
            return -EINVAL;
        }
    return 0;
}

/* The training pool: MNIST's first n_mnist prepared inputs, then the extra
 * images through the same prep; t's inputs and labels point at it. */
int train_cnn_make_pool(trainer *t, const float *mnist_inputs, const uint8_t *mnist_labels,
                        uint32_t n_mnist, const nc_dataset *extra, const nc_prep *prep,
                        float **ret_inputs, uint8_t **ret_labels)
{
    const size_t plane = nc_prep_out_len(prep);
    float *extra_inputs = NULL;
    int err = train_cnn_prepare_inputs(extra, prep, t->net, &extra_inputs);
    if (err)
        return err;
    float *in = malloc(((size_t)n_mnist + extra->count) * plane * sizeof(float));
    uint8_t *lab = malloc((size_t)n_mnist + extra->count);
    if (!in || !lab) {
        free(in);
        free(lab);
        free(extra_inputs);
        return -ENOMEM;
    }
    memcpy(in, mnist_inputs, (size_t)n_mnist * plane * sizeof(float));
    memcpy(in + (size_t)n_mnist * plane, extra_inputs, (size_t)extra->count * plane * sizeof(float));
    memcpy(lab, mnist_labels, n_mnist);
    memcpy(lab + n_mnist, extra->labels, extra->count);
    free(extra_inputs);
    t->inputs = *ret_inputs = in;
    t->labels = *ret_labels = lab;
    return 0;
}

/* ---- sets other than MNIST -------------------------------------------------- */

static int same_classes(const char *what, const train_classes *a, const train_classes *b)
{
    if (a->n == b->n && !memcmp(a->label, b->label, sizeof a->label))
        return 0;
    fprintf(stderr, "neocog-train cnn: %s's classes file differs from --train's\n", what);
    return -EINVAL;
}

/* --train, --val and --test: the training images with the validation
 * images appended (so that validation is the pool's last o->validation
 * images, as MNIST's is), and the test set; their classes files must
 * agree.  Sets o->validation to --val's count (0 without it). */
int train_cnn_load_sets(options *o, nc_dataset *train, nc_dataset *test, train_classes *classes)
{
    static const char who[] = "neocog-train cnn";
    nc_dataset val = { 0 };
    train_classes c2;
    int err = train_load_idx_set(who, o->train_set, train, classes);
    if (!err && o->val_set && !(err = train_load_idx_set(who, o->val_set, &val, &c2)) &&
        !(err = same_classes("--val", classes, &c2))) {
        const size_t plane = (size_t)train->rows * train->cols;
        const uint32_t n = train->count + val.count;
        uint8_t *px = realloc(train->pixels, n * plane), *lab = px ? realloc(train->labels, n)
                                                                   : NULL;
        if (px)
            train->pixels = px;
        if (lab)
            train->labels = lab;
        if (!px || !lab) {
            err = -ENOMEM;
        } else {
            memcpy(px + (size_t)train->count * plane, val.pixels, (size_t)val.count * plane);
            memcpy(lab + train->count, val.labels, val.count);
            train->count = n;
        }
    }
    o->validation = o->val_set ? val.count : 0;
    nc_dataset_fini(&val);
    if (!err && o->test_set && !(err = train_load_idx_set(who, o->test_set, test, &c2)))
        err = same_classes("--test", classes, &c2);
    if (err)
        fprintf(stderr, "%s: %s\n", who, nc_strerror(err));
    return err;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The record's data field for --train: the note, the sets and their counts. */
void train_cnn_describe_sets(const options *o, uint32_t n_train, uint32_t n_valid,
                             const char *extra_note, const char *deformed, char *dst, size_t cap)
{
    char valid[160] = " (no validation)";
    if (o->val_set)
        snprintf(valid, sizeof valid, " (validation %s, %u)", base_name(o->val_set), n_valid);
    snprintf(dst, cap, "%s%s%s 0-%u%s%s%s", o->data_note ? o->data_note : "",
             o->data_note ? ": " : "", base_name(o->train_set), n_train - 1, extra_note, valid,
             deformed);
}

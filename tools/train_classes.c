/* tools/train_classes.c — character sets other than MNIST for neocog-train:
 * an IDX set's classes file and the set itself (see train_common.h).
 *
 * Layer: tools.  neocog-unipen writes PREFIX-images-idx3-ubyte,
 * PREFIX-labels-idx1-ubyte and PREFIX-classes.txt (one character a line, in
 * label order); the trainers record those labels in the model file so that
 * an answer's text comes from the model, not from its class number. */
#include "train_calib.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

#define CLASSES_MAX_BYTES ((size_t)1 << 16)
#define IDX_MAX_BYTES ((size_t)1 << 31)

void train_classes_digits(train_classes *ret)
{
    memset(ret, 0, sizeof *ret);
    ret->n = 10;
    for (uint32_t k = 0; k < 10; k++)
        snprintf(ret->label[k], sizeof ret->label[k], "%u", k);
}

int train_load_classes(const char *who, const char *prefix, train_classes *ret)
{
    char path[4096];
    uint8_t *buf = NULL;
    size_t len = 0;
    if (snprintf(path, sizeof path, "%s-classes.txt", prefix) >= (int)sizeof path)
        return -ENAMETOOLONG;
    int err = nc_file_read(path, CLASSES_MAX_BYTES, &buf, &len);
    if (err) {
        fprintf(stderr, "%s: %s: %s\n", who, path, nc_strerror(err));
        return err;
    }
    memset(ret, 0, sizeof *ret);
    const char *why = NULL;
    size_t at = 0;
    while (at < len && !why) {
        const uint8_t *nl = memchr(buf + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (buf + at)) : len - at;
        if (n == 0 || n >= sizeof ret->label[0] || memchr(buf + at, '\0', n))
            why = "a line is empty, holds a NUL or is over 15 bytes";
        else if (ret->n == NC_MF_MAX_CLASSES)
            why = "more classes than a model file holds";
        else
            memcpy(ret->label[ret->n++], buf + at, n);
        at += n + 1;
    }
    for (uint32_t a = 0; !why && a < ret->n; a++)
        for (uint32_t b = a + 1; !why && b < ret->n; b++)
            if (!strcmp(ret->label[a], ret->label[b]))
                why = "a label is there twice";
    if (!why && ret->n < 2)
        why = "fewer than 2 classes";
    free(buf);
    if (why) {
        fprintf(stderr, "%s: %s: %s (max %u)\n", who, path, why, NC_MF_MAX_CLASSES);
        return -EBADMSG;
    }
    return 0;
}

int train_load_idx_set(const char *who, const char *prefix, nc_dataset *ret,
                       train_classes *ret_classes)
{
    char pi[4096], pl[4096];
    if (snprintf(pi, sizeof pi, "%s-images-idx3-ubyte", prefix) >= (int)sizeof pi ||
        snprintf(pl, sizeof pl, "%s-labels-idx1-ubyte", prefix) >= (int)sizeof pl)
        return -ENAMETOOLONG;
    int err = train_load_classes(who, prefix, ret_classes);
    if (err)
        return err;
    if ((err = nc_file_read_idx(pi, pl, IDX_MAX_BYTES, ret))) {
        fprintf(stderr, "%s: %s: %s\n", who, pi, nc_strerror(err));
        return err;
    }
    if (ret->rows != 28 || ret->cols != 28 || ret->count == 0 || !ret->labels) {
        fprintf(stderr, "%s: %s: %u images of %ux%u, expected 28x28 ones with labels\n", who,
                prefix, ret->count, ret->cols, ret->rows);
        nc_dataset_fini(ret);
        return -EINVAL;
    }
    char w[512];
    snprintf(w, sizeof w, "%s: %s", who, prefix);
    if ((err = train_labels_ok(w, ret, 0, ret->count, ret_classes->n)))
        nc_dataset_fini(ret);
    return err;
}

int train_classes_match(const char *who, const train_classes *c, const nc_model_info *info)
{
    if (c->n != info->n_classes) {
        fprintf(stderr, "%s: the set has %u classes, the model %u\n", who, c->n,
                info->n_classes);
        return -EINVAL;
    }
    for (uint32_t k = 0; k < c->n; k++)
        if (strcmp(c->label[k], info->labels[k])) {
            fprintf(stderr, "%s: class %u is '%s' in the set, '%s' in the model\n", who, k,
                    c->label[k], info->labels[k]);
            return -EINVAL;
        }
    return 0;
}

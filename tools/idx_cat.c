/* tools/idx_cat.c — join ranges of IDX image/label pairs into one pair.
 *
 *   idx-cat [--shuffle SEED] OUT_PREFIX IMAGES LABELS FIRST COUNT [IMAGES LABELS FIRST COUNT]...
 *
 * Items [FIRST, FIRST + COUNT) of each input pair (plain or gzip; COUNT 0
 * for all from FIRST), in the order given, become OUT_PREFIX-images-idx3-ubyte
 * and OUT_PREFIX-labels-idx1-ubyte (plain IDX, as neocog-unipen writes them),
 * so that `neocog-train cnn --train` and `eval --idx` read e.g. MNIST
 * training digits and rendered UNIPEN digits as one set
 * (scripts/train-digits-any).  Every input must have the same image size.
 * --shuffle SEED puts the joined items in a seeded random order (the same
 * for the same seed and inputs), so that any leading part of the set (a
 * trainer's batch-norm statistics over its first digits) mixes the sources.
 *
 * Layer: tools (file I/O; core parses). */
#include "dataset.h"
#include "fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INPUT_MAX_BYTES ((size_t)NC_GUNZIP_MAX_OUT)

static int parse_u32(const char *s, uint32_t *ret)
{
    char *end;
    if (!*s || *s == '-' || *s == '+')
        return -EINVAL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > UINT32_MAX)
        return -EINVAL;
    *ret = (uint32_t)v;
    return 0;
}

/* Parse one input pair into d; messages name the files. */
static int load_pair(const char *images, const char *labels, nc_dataset *d)
{
    uint8_t *img = NULL, *lab = NULL;
    size_t img_len = 0, lab_len = 0;
    int e = nc_file_read(images, INPUT_MAX_BYTES, &img, &img_len);
    if (e < 0)
        fprintf(stderr, "idx-cat: reading %s: %s\n", images, strerror(-e));
    else if ((e = nc_file_read(labels, INPUT_MAX_BYTES, &lab, &lab_len)) < 0)
        fprintf(stderr, "idx-cat: reading %s: %s\n", labels, strerror(-e));
    else if ((e = nc_dataset_parse(img, img_len, lab, lab_len, d)) < 0)
        fprintf(stderr, "idx-cat: %s + %s: not a valid IDX image/label pair: %s\n", images,
                labels, nc_strerror(e));
    free(img);
    free(lab);
    return e;
}

/* splitmix64: a fixed, portable stream for the shuffle */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Fisher-Yates over d's items, images and labels together. */
static int shuffle(nc_dataset *d, uint64_t seed)
{
    const size_t plane = (size_t)d->rows * d->cols;
    uint8_t *tmp = malloc(plane ? plane : 1);
    if (!tmp)
        return -ENOMEM;
    for (uint32_t k = d->count; k > 1; k--) {
        uint32_t i = k - 1, j = (uint32_t)(next_u64(&seed) % k);
        if (i == j)
            continue;
        memcpy(tmp, d->pixels + i * plane, plane);
        memcpy(d->pixels + i * plane, d->pixels + j * plane, plane);
        memcpy(d->pixels + j * plane, tmp, plane);
        uint8_t l = d->labels[i];
        d->labels[i] = d->labels[j];
        d->labels[j] = l;
    }
    free(tmp);
    return 0;
}

int main(int argc, char **argv)
{
    int shuffled = 0;
    unsigned long long seed = 0;
    if (argc > 2 && !strcmp(argv[1], "--shuffle")) {
        char *end;
        errno = 0;
        seed = strtoull(argv[2], &end, 10);
        if (errno || *end || !*argv[2] || *argv[2] == '-') {
            fprintf(stderr, "idx-cat: --shuffle needs a decimal seed (got '%s')\n", argv[2]);
            return 2;
        }
        shuffled = 1;
        argc -= 2;
        argv += 2;
    }
    if (argc < 6 || (argc - 2) % 4) {
        fprintf(stderr,
                "usage: idx-cat [--shuffle SEED] OUT_PREFIX IMAGES LABELS FIRST COUNT\n"
                "               [IMAGES LABELS FIRST COUNT]...\n"
                "Joins items [FIRST, FIRST+COUNT) of each IDX pair (plain or gzip; COUNT 0:\n"
                "all from FIRST) into OUT_PREFIX-images-idx3-ubyte and\n"
                "OUT_PREFIX-labels-idx1-ubyte; --shuffle SEED: in a seeded random order.\n");
        return 2;
    }
    int status = 1;
    nc_dataset out = { 0 };
    for (int a = 2; a < argc; a += 4) {
        uint32_t first, count;
        if (parse_u32(argv[a + 2], &first) < 0 || parse_u32(argv[a + 3], &count) < 0) {
            fprintf(stderr, "idx-cat: FIRST and COUNT must be decimal integers (got '%s', '%s')\n",
                    argv[a + 2], argv[a + 3]);
            nc_dataset_fini(&out);
            return 2;
        }
        nc_dataset d = { 0 };
        if (load_pair(argv[a], argv[a + 1], &d) < 0)
            goto out;
        if (count == 0 && first <= d.count)
            count = d.count - first;
        if (!d.labels) {
            fprintf(stderr, "idx-cat: %s: no labels\n", argv[a + 1]);
            nc_dataset_fini(&d);
            goto out;
        }
        if ((uint64_t)first + count > d.count || count == 0) {
            fprintf(stderr, "idx-cat: %s: items %u..%llu requested, the input holds %u\n",
                    argv[a], first, (unsigned long long)first + count, d.count);
            nc_dataset_fini(&d);
            goto out;
        }
        if (out.count && (d.rows != out.rows || d.cols != out.cols)) {
            fprintf(stderr, "idx-cat: %s: %ux%u images, the first input's are %ux%u\n", argv[a],
                    d.rows, d.cols, out.rows, out.cols);
            nc_dataset_fini(&d);
            goto out;
        }
        const size_t plane = (size_t)d.rows * d.cols;
        if ((uint64_t)out.count + count > NC_IDX_MAX_ITEMS) {
            fprintf(stderr, "idx-cat: more than %u items in all\n", NC_IDX_MAX_ITEMS);
            nc_dataset_fini(&d);
            goto out;
        }
        const uint32_t n = out.count + count;
        uint8_t *px = realloc(out.pixels, n * plane);
        if (px)
            out.pixels = px;
        uint8_t *lab = px ? realloc(out.labels, n) : NULL;
        if (lab)
            out.labels = lab;
        if (!px || !lab) {
            fprintf(stderr, "idx-cat: out of memory\n");
            nc_dataset_fini(&d);
            goto out;
        }
        memcpy(out.pixels + out.count * plane, d.pixels + first * plane, count * plane);
        memcpy(out.labels + out.count, d.labels + first, count);
        out.rows = d.rows;
        out.cols = d.cols;
        out.count = n;
        nc_dataset_fini(&d);
    }
    int e = shuffled ? shuffle(&out, seed) : 0;
    if (e < 0) {
        fprintf(stderr, "idx-cat: out of memory\n");
        goto out;
    }
    e = nc_file_write_idx(argv[1], &out);
    if (e < 0) {
        fprintf(stderr, "idx-cat: writing %s-*: %s\n", argv[1], nc_strerror(e));
        goto out;
    }
    fprintf(stderr, "idx-cat: %u images of %ux%u to %s-*%s\n", out.count, out.rows, out.cols,
            argv[1], shuffled ? ", shuffled" : "");
    status = 0;
out:
    nc_dataset_fini(&out);
    return status;
}

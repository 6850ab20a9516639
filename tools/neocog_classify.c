/* tools/neocog-classify — recognise digit images with a model file, offline.
 *
 * Runs the CPU engine table of core/ (core/backend.h, no daemon): load a
 * model (CNN or neocognitron, one net or a committee), preprocess each image
 * the way the model records, print the raw scores' answer.  For scripts and for checking a model by hand; the daemon and its
 * `neocog recognize` client serve the same answers over a socket.
 *
 *   neocog-classify [--top K] [--invert auto|yes|no] MODEL IMAGE.pgm...
 *
 * Output, one line per image:  FILE<TAB>LABEL<TAB>SCORE[<TAB>LABEL:SCORE...]
 * LABEL is "?" when the network rejects the image (nothing fired).
 * Exit status: 0 all recognised, 1 an image or the model failed, 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "pgm.h"

#define MAX_MODEL_BYTES (256u << 20)
#define MAX_IMAGE_BYTES (64u << 20)

typedef struct model {
    nc_model_info info;
    nc_backend *be;                 /* the CPU engine table: the daemon's answer */
    void *worker;
} model;

static void model_fini(model *m)
{
    if (m->worker)
        m->be->ops->worker_free(m->worker);
    nc_backend_close(m->be);
}

static int model_load(const char *path, model *m)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int err = nc_file_read_model(path, MAX_MODEL_BYTES, &buf, &len);
    if (err) {
        fprintf(stderr, "neocog-classify: %s: %s\n", path, strerror(-err));
        return err;
    }
    /* the engine table checks the stored prep against the network and runs
     * committees and the interpolating-vector mark as the daemon does */
    if (!(err = nc_backend_open(&nc_backend_cpu, buf, len, 0, &m->be)))
        err = m->be->ops->worker_new(m->be->impl, 1, &m->worker);
    if (!err)
        m->info = m->be->info;
    if (err)
        fprintf(stderr, "neocog-classify: %s: %s\n", path, nc_strerror(err));
    free(buf);
    return err;
}

/* Scores of every class into score[]; *ret_label -1 on reject. */
static int model_run(model *m, const nc_image *img, int invert, float *score,
                     int *ret_label)
{
    nc_prep p = m->info.prep;
    p.invert = invert < 0 ? (uint32_t)nc_image_border_is_light(img) : (uint32_t)invert;
    size_t n = nc_prep_out_len(&p);
    float *in = malloc(n * sizeof *in);
    if (!in)
        return -ENOMEM;
    int err = nc_prep_apply(img, &p, in);
    if (!err)
        err = m->be->ops->forward(m->be->impl, m->worker, in, 1, score);
    if (!err)
        *ret_label = nc_backend_label(m->be->kind, score, m->info.n_classes);
    free(in);
    return err;
}

static void usage(FILE *to)
{
    fprintf(to, "usage: neocog-classify [--top K] [--invert auto|yes|no] MODEL IMAGE.pgm...\n");
}

int main(int argc, char **argv)
{
    int top = 1, invert = -1, i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
        if (!strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        if (i + 1 >= argc) { usage(stderr); return 2; }
        if (!strcmp(argv[i], "--top")) {
            top = atoi(argv[i + 1]);
        } else if (!strcmp(argv[i], "--invert")) {
            const char *v = argv[i + 1];
            invert = !strcmp(v, "yes") ? 1 : !strcmp(v, "no") ? 0 : !strcmp(v, "auto") ? -1 : -2;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (argc - i < 2 || top < 1 || invert < -1) {
        usage(stderr);
        return 2;
    }
    model m = {0};
    if (model_load(argv[i], &m)) {
        model_fini(&m);
        return 1;
    }
    uint32_t n_classes = m.info.n_classes;
    if ((uint32_t)top > n_classes)
        top = (int)n_classes;
    int status = 0;
    for (i++; i < argc; i++) {
        uint8_t *buf = NULL;
        size_t len = 0;
        nc_image img = {0};
        float score[NC_MF_MAX_CLASSES] = {0};
        int label = -1;
        int err = nc_file_read(argv[i], MAX_IMAGE_BYTES, &buf, &len);
        if (!err)
            err = nc_pgm_parse(buf, len, &img);
        if (!err)
            err = model_run(&m, &img, invert, score, &label);
        free(buf);
        free(img.pixels);
        if (err) {
            fprintf(stderr, "neocog-classify: %s: %s\n", argv[i],
                    err == -ENOENT ? "no ink in the image" : nc_strerror(err));
            status = 1;
            continue;
        }
        printf("%s\t%s\t%.4f", argv[i], label < 0 ? "?" : m.info.labels[label],
               label < 0 ? 0.0 : (double)score[label]);
        /* the next best classes, best first */
        int used[NC_MF_MAX_CLASSES] = {0};
        if (label >= 0)
            used[label] = 1;
        for (int t = 1; t < top; t++) {
            int best = -1;
            for (uint32_t k = 0; k < n_classes; k++)
                if (!used[k] && (best < 0 || score[k] > score[best]))
                    best = (int)k;
            if (best < 0)
                break;
            used[best] = 1;
            printf("\t%s:%.4f", m.info.labels[best], (double)score[best]);
        }
        putchar('\n');
    }
    model_fini(&m);
    return status;
}

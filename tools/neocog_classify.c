/* tools/neocog-classify — recognise character images with model files,
 * offline, answering exactly as the daemon does.
 *
 * The same steps as a neocogd worker, on the CPU engine table of core/ (no
 * daemon): decode the file as the daemon does (io/decode.h: JPEG, PNG,
 * PGM, with its size caps), prepare it once for every network
 * (core/image/image_clean.h: polarity, paper and light flattened, the character
 * cropped), each model's own prep (core/image/image.h), the forward pass, and the
 * daemon's answer rule (core/backend/answer.h: calibrated probabilities, the
 * ensemble, the reject threshold stored in the files).  For scripts and for
 * checking a model or an image by hand.
 *
 *   neocog-classify [--top K] [--polarity auto|dark|light] [--min-conf X]
 *                   MODEL[,MODEL2] IMAGE...
 *
 * MODEL is a CNN or a neocognitron file; CNN,NEOCOGNITRON (two files, either
 * order) answers with the ensemble, as `--model ensemble` does in the
 * daemon.  --min-conf: the minimum confidence (0 or absent: the threshold
 * stored with the model; -1: none).  --invert yes|no|auto is accepted as
 * the old spelling of --polarity dark|light|auto.
 *
 * Output, one line per image:
 *   FILE<TAB>LABEL<TAB>CONFIDENCE[<TAB>LABEL:PROB...]
 * LABEL is "?" for a reject, followed by a column "rejected: REASON"; the
 * candidates are the K best classes by calibrated probability.
 * Exit status: 0 all recognised (rejects included), 1 an image or a model
 * failed, 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "backend.h"
#include "decode.h"
#include "fileio.h"
#include "image.h"
#include "image_clean.h"
#include "modelfile.h"
#include "opts.h"

#define MAX_MODEL_BYTES (256u << 20)
#define MAX_IMAGE_BYTES (64u << 20)

typedef struct model {
    nc_backend *be;                 /* the CPU engine table: the daemon's answer */
    void *worker;
    float *in;                      /* nc_prep_out_len floats */
} model;

static void model_fini(model *m)
{
    if (m->worker)
        m->be->ops->worker_free(m->worker);
    nc_backend_close(m->be);
    free(m->in);
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
    if (!err && !(m->in = malloc(m->be->input_len * sizeof *m->in)))
        err = -ENOMEM;
    if (err)
        fprintf(stderr, "neocog-classify: %s: %s\n", path, nc_strerror(err));
    free(buf);
    return err;
}

enum { O_TOP, O_POLARITY, O_INVERT, O_MIN_CONF, O_END };

static const nc_opt opt_table[] = {
    [O_TOP] = { "top", "K", "also the K best classes as LABEL:PROB (default 1)" },
    [O_POLARITY] = { "polarity", "auto|dark|light", "the ink: dark on light paper, light on\n"
                                                    "dark, or found per image (default auto)" },
    [O_INVERT] = { "invert", "yes|no|auto", NULL },     /* the old spelling of --polarity */
    [O_MIN_CONF] = { "min-conf", "X", "the minimum confidence (<= 1; 0: the threshold\n"
                                      "stored with the model, the default; -1: none)" },
    [O_END] = { NULL, NULL, NULL },
};

static nc_opts opts = {
    .prog = "neocog-classify",
    .usage = "usage: neocog-classify [--top K] [--polarity auto|dark|light] [--min-conf X]\n"
             "                       MODEL[,MODEL2] IMAGE...\n"
             "  MODEL: a CNN or neocognitron file (models/*.ncm); CNN,NEOCOGNITRON: the ensemble\n"
             "  IMAGE: JPEG, PNG or PGM, one character each, any paper and light\n"
             "  prints FILE, LABEL (? = rejected), confidence, the K best LABEL:PROB\n",
    .table = opt_table,
};

static int parse_polarity(const char *v)
{
    if (!strcmp(v, "auto"))
        return NC_POLARITY_AUTO;
    if (!strcmp(v, "dark") || !strcmp(v, "yes"))
        return NC_POLARITY_DARK_INK;
    if (!strcmp(v, "light") || !strcmp(v, "no"))
        return NC_POLARITY_LIGHT_INK;
    return -1;
}

/* One image through both steps of preparation, the networks and the
 * answer rule, as a daemon worker does. */
static int classify(model *m, uint32_t n_models, int polarity, const nc_ens_rule *rule,
                    double threshold, uint32_t top, const nc_image *img, nc_answer *ret)
{
    /* a line-layout model (NC_PREP_LINE) takes the whole image as its cell,
     * as neocogd does: the cleaned character stays where it was */
    int line = 0;
    for (uint32_t k = 0; k < n_models; k++)
        line |= m[k].be->info.prep.kind == NC_PREP_LINE;
    nc_image *clean = NULL;
    int err = line ? nc_image_clean_cell(img, (nc_polarity)polarity, &clean)
                   : nc_image_clean(img, (nc_polarity)polarity, &clean, NULL);
    if (err && err != -ENOENT)
        return err;
    nc_answer_in in = { .threshold = threshold, .top_k = top, .rule = rule };
    float out[2][NC_MF_MAX_CLASSES] = { { 0 } };
    for (uint32_t k = 0; k < n_models; k++) {
        const nc_backend *be = m[k].be;
        int net = be->kind == NC_MF_KIND_CNN ? NC_ANSWER_NET_CNN : NC_ANSWER_NET_NEOCOG;
        in.be[net] = be;
        in.raw[net] = out[k];
        in.ink[net] = 0;
        if (clean) {
            nc_prep p = be->info.prep;
            p.invert = 0;           /* the clean image is light ink already */
            int e = nc_prep_apply(clean, &p, m[k].in);
            if (e && e != -ENOENT) {
                nc_image_free(clean);
                return e;
            }
            in.ink[net] = e == 0;
        }
        if (!in.ink[net])
            memset(m[k].in, 0, be->input_len * sizeof *m[k].in);
        if ((err = be->ops->forward(be->impl, m[k].worker, m[k].in, 1, out[k])) < 0) {
            nc_image_free(clean);
            return err;
        }
        in.model = net == NC_ANSWER_NET_CNN ? NC_ANSWER_MODEL_CNN : NC_ANSWER_MODEL_NEOCOG;
    }
    if (n_models == 2)
        in.model = NC_ANSWER_MODEL_ENSEMBLE;
    nc_image_free(clean);
    return nc_answer_compute(&in, ret);
}

int main(int argc, char **argv)
{
    int top = 1, polarity = NC_POLARITY_AUTO;
    double threshold = NC_ANSWER_THRESHOLD_MODEL;
    for (int o; (o = nc_opts_next(&opts, argc, argv)) != NC_OPTS_END;) {
        const char *v = opts.value;
        char *end = NULL;
        int bad = 0;
        switch (o) {
        case NC_OPTS_HELP: nc_opts_usage(&opts, stdout); return 0;
        case NC_OPTS_ERROR: return nc_opts_fail(&opts);
        case O_TOP:
            top = (int)strtol(v, &end, 10);
            bad = end == v || *end || top < 1;
            break;
        case O_POLARITY:
        case O_INVERT: bad = (polarity = parse_polarity(v)) < 0; break;
        case O_MIN_CONF:
            threshold = strtod(v, &end);
            bad = end == v || *end || !(threshold <= 1.0);
            break;
        }
        if (bad) {
            nc_opts_bad_value(&opts, o, o == O_MIN_CONF ? "(a number <= 1)" : NULL);
            return nc_opts_fail(&opts);
        }
    }
    int i = opts.next;
    if (argc - i < 2) {
        nc_opts_error(&opts, "give MODEL[,MODEL2] and at least one IMAGE");
        return nc_opts_fail(&opts);
    }

    /* MODEL or CNN,NEOCOGNITRON */
    model m[2] = { { 0 } };
    uint32_t n_models = 0;
    char *spec = strdup(argv[i]);
    int status = spec ? 0 : 1;
    for (char *tok = spec ? strtok(spec, ",") : NULL; tok && !status; tok = strtok(NULL, ",")) {
        if (n_models == 2) {
            fprintf(stderr, "neocog-classify: at most two model files (CNN,NEOCOGNITRON)\n");
            status = 2;
        } else if (model_load(tok, &m[n_models++])) {
            status = 1;
        }
    }
    free(spec);
    nc_ens_rule rule = { 0 };
    if (!status && n_models == 2) {
        if (m[0].be->kind == m[1].be->kind ||
            m[0].be->info.n_classes != m[1].be->info.n_classes) {
            fprintf(stderr, "neocog-classify: an ensemble is a CNN file and a neocognitron "
                            "file with the same classes\n");
            status = 2;
        } else {
            const nc_backend *cnn = m[0].be->kind == NC_MF_KIND_CNN ? m[0].be : m[1].be;
            const nc_backend *neo = m[0].be->kind == NC_MF_KIND_CNN ? m[1].be : m[0].be;
            int e = nc_backend_ensemble_rule(cnn, neo, &rule);
            if (e == -ESTALE)
                fprintf(stderr, "neocog-classify: the CNN file's ensemble rule was fitted with "
                                "another neocognitron file; using the plain mean\n");
        }
    }
    if (status) {
        for (uint32_t k = 0; k < 2; k++)
            model_fini(&m[k]);
        return status;
    }

    const nc_model_info *info = &m[0].be->info;
    nc_decode_limits lim = { 4096, 4096u * 4096u };
    for (i++; i < argc; i++) {
        uint8_t *buf = NULL;
        size_t len = 0;
        nc_image *img = NULL;
        char why[200] = "";
        nc_answer a;
        int err = nc_file_read(argv[i], MAX_IMAGE_BYTES, &buf, &len);
        if (err) {
            snprintf(why, sizeof why, "%s", strerror(-err));
        } else if (!(err = nc_decode_image(NC_DECODE_AUTO, buf, len, 0, 0, &lim, &img, why,
                                           sizeof why))) {
            err = classify(m, n_models, polarity, n_models == 2 ? &rule : NULL, threshold,
                           (uint32_t)top, img, &a);
            if (err)
                snprintf(why, sizeof why, "%s", nc_strerror(err));
        }
        free(buf);
        nc_image_free(img);
        if (err) {
            fprintf(stderr, "neocog-classify: %s: %s\n", argv[i], why);
            status = 1;
            continue;
        }
        printf("%s\t%s\t%.4f", argv[i], a.label < 0 ? "?" : info->labels[a.label],
               (double)a.confidence);
        for (uint32_t t = 0; t < a.n_top; t++)
            printf("\t%s:%.4f", info->labels[a.top[t]], (double)a.prob[a.top[t]]);
        if (a.label < 0)
            printf("\trejected: %s", nc_answer_reason_text(a.reason));
        putchar('\n');
    }
    for (uint32_t k = 0; k < n_models; k++)
        model_fini(&m[k]);
    return status;
}

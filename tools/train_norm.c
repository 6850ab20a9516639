/* tools/train_norm.c — fixed statistics and the fold for batch-normalised
 * columns (train_norm.h). */
#include "train_norm.h"

#include <stdlib.h>
#include <string.h>

#include "nc_config.h"
#if NC_HAVE_CUDA
#include "cnn_engine_train.h"
#endif

struct train_norm {
    int gpu;
    int unrolled;           /* the eval engine's kernels: as the training engine's */
    uint32_t batch;
    nc_cnn *plain;          /* the last fold */
    nc_cnn_work *w;         /* for plain, on the CPU */
    void *g;                /* nc_gpu_cnn for plain, made at the first fold */
    double *sum;            /* per normalised layer in order, [2][maps]: sums of
                               batch means, of var + mean^2 */
    float *mean, *var;      /* [max maps]: one batch's, one layer's */
};

int train_norm_new(const nc_cnn *net, int gpu, int unrolled, uint32_t batch,
                   train_norm **ret_tn)
{
    if (!net || !ret_tn || batch < 1)
        return -EINVAL;
    uint32_t maps = 1;
    size_t all = 0;
    for (uint32_t l = 1; l < net->n_layers; l++)
        if (net->layers[l].norm) {
            all += net->layers[l].maps;
            if (net->layers[l].maps > maps)
                maps = net->layers[l].maps;
        }
    train_norm *tn = calloc(1, sizeof *tn);
    if (!tn)
        return -ENOMEM;
    tn->gpu = gpu;
    tn->unrolled = unrolled;
    tn->batch = batch;
    tn->sum = malloc((2 * all + 1) * sizeof(double));
    tn->mean = malloc(2 * (size_t)maps * sizeof(float));
    if (!tn->sum || !tn->mean) {
        train_norm_free(tn);
        return -ENOMEM;
    }
    tn->var = tn->mean + maps;
    *ret_tn = tn;
    return 0;
}

void train_norm_free(train_norm *tn)
{
    if (!tn)
        return;
#if NC_HAVE_CUDA
    nc_gpu_cnn_free(tn->g);
#endif
    nc_cnn_work_free(tn->w);
    nc_cnn_free(tn->plain);
    free(tn->sum);
    free(tn->mean);
    free(tn);
}

/* One batch of b images through the training net (its batch statistics). */
static int run_batch(nc_cnn *net, void *g, nc_cnn_work *w, const float *in, uint32_t b)
{
#if NC_HAVE_CUDA
    if (g) {
        /* the outputs are not wanted, only the statistics */
        int err = nc_gpu_cnn_forward_start(g, in, b);
        return err ? err : nc_gpu_cnn_forward_finish(g, NULL);
    }
#endif
    (void)g;
    return nc_cnn_forward_blas(net, w, in, b, NULL);
}

/* Layer l's statistics from that batch. */
static int layer_stats(void *g, nc_cnn_work *w, uint32_t l, float *mean, float *var)
{
#if NC_HAVE_CUDA
    if (g)
        return nc_gpu_cnn_norm_stats(g, l, mean, var);
#endif
    return nc_cnn_work_norm_stats(w, l, mean, var);
}

int train_norm_measure(train_norm *tn, nc_cnn *net, void *g, nc_cnn_work *w,
                       const float *inputs, uint32_t count)
{
    if (!tn || !net || (!g && !w) || !inputs || count < 1)
        return -EINVAL;
    const uint32_t b = count < tn->batch ? count : tn->batch, batches = count / b;
    /* one pass: each batch is normalised with its own statistics at every
       layer, as in training, so no layer's fixed statistics are used yet */
    size_t total = 0;
    for (uint32_t l = 1; l < net->n_layers; l++)
        total += net->layers[l].norm ? 2 * (size_t)net->layers[l].maps : 0;
    memset(tn->sum, 0, total * sizeof(double));
    for (uint32_t k = 0; k < batches; k++) {
        int err = run_batch(net, g, w, inputs + (size_t)k * b * net->n_inputs, b);
        double *sum = tn->sum;
        for (uint32_t l = 1; !err && l < net->n_layers; l++) {
            const nc_cnn_layer *L = &net->layers[l];
            if (!L->norm)
                continue;
            if ((err = layer_stats(g, w, l, tn->mean, tn->var)))
                break;
            for (uint32_t m = 0; m < L->maps; m++) {
                sum[m] += tn->mean[m];
                sum[L->maps + m] += (double)tn->var[m] + (double)tn->mean[m] * tn->mean[m];
            }
            sum += 2 * (size_t)L->maps;
        }
        if (err)
            return err;
    }
    const double *sum = tn->sum;
    for (uint32_t l = 1; l < net->n_layers; l++) {
        nc_cnn_layer *L = &net->layers[l];
        if (!L->norm)
            continue;
        for (uint32_t m = 0; m < L->maps; m++) {
            const double mean = sum[m] / batches;
            const double var = sum[L->maps + m] / batches - mean * mean;
            L->mean[m] = (float)mean;
            L->var[m] = var > 0.0 ? (float)var : 0.0f;
        }
        sum += 2 * (size_t)L->maps;
    }
    return 0;
}

int train_norm_fold(train_norm *tn, const nc_cnn *net, const nc_cnn **ret_plain,
                    nc_cnn_work **ret_w, void **ret_g)
{
    if (!tn || !net || !ret_plain || !ret_w)
        return -EINVAL;
    nc_cnn *plain = NULL;
    int err = nc_cnn_fold_norm(net, &plain);
    if (err)
        return err;
    if (tn->plain && tn->plain->n_params == plain->n_params) {
        memcpy(tn->plain->params, plain->params, plain->n_params * sizeof(float));
        nc_cnn_free(plain);
    } else {
        nc_cnn_free(tn->plain);
        tn->plain = plain;
        nc_cnn_work_free(tn->w);
        tn->w = NULL;
        if ((err = nc_cnn_work_new(plain, tn->batch, &tn->w)))
            return err;
    }
#if NC_HAVE_CUDA
    if (tn->gpu >= 0 && ret_g) {
        if (!tn->g) {
            nc_gpu_cnn *g = NULL;
            if ((err = nc_gpu_cnn_new(tn->plain, tn->gpu, tn->batch, &g)))
                return err;
            tn->g = g;
            /* as the training engine: the same kernels every run, so that a
               seed gives the same validation errors */
            if ((err = nc_gpu_cnn_set_path(g, tn->unrolled ? NC_GPU_CNN_PATH_UNROLLED
                                                           : NC_GPU_CNN_PATH_DIRECT)))
                return err;
        } else if ((err = nc_gpu_cnn_upload(tn->g, tn->plain))) {
            return err;
        }
    }
#endif
    *ret_plain = tn->plain;
    *ret_w = tn->w;
    if (ret_g)
        *ret_g = tn->g;
    return 0;
}

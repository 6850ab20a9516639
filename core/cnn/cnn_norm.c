/* core/cnn/cnn_norm.c — batch normalisation (the notation's "bn"; cnn.h) and
 * the fold that turns a normalised net into the plain one it answers as.
 *
 * Layer: core.  The forward and backward arithmetic is written once, for
 * any layout (nc_cnn_runs), and used by both engines: the reference
 * (image-major) and the BLAS one (map-major convolutions).  Sums over a
 * map's n x height x width values are taken in double, mean first, then
 * the variance about it (two passes: no cancellation), so the engines and
 * gpu/'s twin kernels agree to float rounding of the values themselves. */
#include "cnn_internal.h"

#include <string.h>

void nc_cnn_norm_forward(const nc_cnn_layer *L, float *a, uint32_t n, nc_cnn_runs r,
                         float *xhat, float *stat)
{
    const double count = (double)n * r.run;
    for (uint32_t m = 0; m < L->maps; m++) {
        double sum = 0.0, ss = 0.0;
        for (uint32_t b = 0; b < n; b++) {
            const float *v = a + m * r.ms + b * r.bs;
            for (uint32_t i = 0; i < r.run; i++)
                sum += v[i];
        }
        const double mean = sum / count;
        for (uint32_t b = 0; b < n; b++) {
            const float *v = a + m * r.ms + b * r.bs;
            for (uint32_t i = 0; i < r.run; i++)
                ss += (v[i] - mean) * (v[i] - mean);
        }
        const double var = ss / count;
        const double istd = 1.0 / sqrt(var + (double)NC_CNN_NORM_EPS);
        stat[m] = (float)mean;
        stat[L->maps + m] = (float)var;
        for (uint32_t b = 0; b < n; b++) {
            float *v = a + m * r.ms + b * r.bs;
            float *xh = xhat + m * r.ms + b * r.bs;
            for (uint32_t i = 0; i < r.run; i++) {
                xh[i] = (float)((v[i] - mean) * istd);
                v[i] = L->gamma[m] * xh[i] + L->beta[m];
            }
        }
    }
}

/* With g = dE/d(gamma a^ + beta) over a map's N values:
 *   dE/dbeta = sum g,  dE/dgamma = sum g a^,
 *   dE/da = gamma istd (g - sum g / N - a^ sum g a^ / N)
 * (the mean and the variance depend on every a of the map). */
void nc_cnn_norm_backward(const nc_cnn_layer *L, float *d, uint32_t n, nc_cnn_runs r,
                          const float *xhat, const float *stat, float *ggamma, float *gbeta)
{
    const double count = (double)n * r.run;
    for (uint32_t m = 0; m < L->maps; m++) {
        double sg = 0.0, sgx = 0.0;
        for (uint32_t b = 0; b < n; b++) {
            const float *g = d + m * r.ms + b * r.bs;
            const float *xh = xhat + m * r.ms + b * r.bs;
            for (uint32_t i = 0; i < r.run; i++) {
                sg += g[i];
                sgx += (double)g[i] * xh[i];
            }
        }
        gbeta[m] = (float)sg;
        ggamma[m] = (float)sgx;
        const double istd = 1.0 / sqrt((double)stat[L->maps + m] + (double)NC_CNN_NORM_EPS);
        const double k = L->gamma[m] * istd, mg = sg / count, mgx = sgx / count;
        for (uint32_t b = 0; b < n; b++) {
            float *g = d + m * r.ms + b * r.bs;
            const float *xh = xhat + m * r.ms + b * r.bs;
            for (uint32_t i = 0; i < r.run; i++)
                g[i] = (float)(k * (g[i] - mg - xh[i] * mgx));
        }
    }
}

int nc_cnn_fold_norm(const nc_cnn *net, nc_cnn **ret_plain)
{
    if (!net || !ret_plain)
        return -EINVAL;
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        for (uint32_t m = 0; L->norm && m < L->maps; m++)
            if (!(L->var[m] >= 0.0f) || !isfinite(L->var[m]))
                return -EINVAL;
    }
    /* the notation without "bn": format a copy of the layer list */
    nc_cnn *shape = malloc(sizeof *shape);
    if (!shape)
        return -ENOMEM;
    *shape = *net;
    for (uint32_t l = 1; l < shape->n_layers; l++)
        shape->layers[l].norm = 0;
    char arch[NC_CNN_ARCH_MAX];
    int err = nc_cnn_arch_format(shape, arch, sizeof arch);
    free(shape);
    nc_cnn *p = NULL;
    if (err || (err = nc_cnn_new(arch, &p)))
        return err;
    memcpy(p->tables, net->tables, net->n_tables);
    p->custom_tables = net->custom_tables;
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        nc_cnn_layer *F = &p->layers[l];
        if (L->kind == NC_CNN_KIND_POOL)
            continue;
        const size_t per_map = L->n_weights / L->maps;
        for (uint32_t m = 0; m < L->maps; m++) {
            const float s = L->norm ? (float)(L->gamma[m] /
                                              sqrt((double)L->var[m] + NC_CNN_NORM_EPS))
                                    : 1.0f;
            const float *wm = L->weights + m * per_map;
            float *fm = F->weights + m * per_map;
            for (size_t i = 0; i < per_map; i++)
                fm[i] = L->norm ? wm[i] * s : wm[i];
            F->bias[m] = L->norm ? (L->bias[m] - L->mean[m]) * s + L->beta[m] : L->bias[m];
        }
    }
    *ret_plain = p;
    return 0;
}

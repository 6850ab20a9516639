/* tools/train_norm.h — what `neocog-train cnn` adds for a batch-normalised
 * column (core/cnn/cnn.h's "bn"): the fixed statistics measured after each
 * epoch, and the plain net they fold into, which answers validation and
 * test and is the file written.
 *
 * Layer: tools.  The statistics are measured as "precise" batch norm does
 * (Wu & Johnson 2021): batches of undeformed training digits through the
 * net as it trains (each normalised with its own batch's statistics), each
 * layer's batch means and variances averaged over them: mean = E[mean_b],
 * var = E[var_b + mean_b^2] - mean^2.  Not a running average kept during
 * training: the weights move under it, and the deformed digits it would
 * see are not the digits the net answers. */
#ifndef NC_TRAIN_NORM_H
#define NC_TRAIN_NORM_H

#include <stdint.h>

#include "cnn.h"

typedef struct train_norm train_norm;

/* For a net of net's architecture, answering batches of up to `batch`
 * images, on CUDA device `gpu` (or the CPU for gpu < 0; also when the build
 * has no CUDA) with the direct kernels, or with unrolled products for
 * `unrolled` (as the training engine: neocog-train's --gpu-kernels). */
int train_norm_new(const nc_cnn *net, int gpu, int unrolled, uint32_t batch,
                   train_norm **ret_tn);
void train_norm_free(train_norm *tn);

/* Set every normalised layer's mean and var in net from inputs[count]
 * (count >= 1; whole batches of `batch`, or of count if fewer), run on the training
 * engine g (an nc_gpu_cnn holding net's params) or, for g NULL, on the CPU
 * with w (a work for net of at least `batch` images). */
int train_norm_measure(train_norm *tn, nc_cnn *net, void *g, nc_cnn_work *w,
                       const float *inputs, uint32_t count);

/* net folded (nc_cnn_fold_norm) into tn's plain net, which *ret_plain
 * points to, with a CPU work for it and, on a GPU, an engine holding its
 * params (*ret_g; NULL on the CPU), for count_errors-style callers.  ret_g
 * NULL: the CPU only (no engine is made or updated).  Valid until the next
 * call or train_norm_free. */
int train_norm_fold(train_norm *tn, const nc_cnn *net, const nc_cnn **ret_plain,
                    nc_cnn_work **ret_w, void **ret_g);

#endif

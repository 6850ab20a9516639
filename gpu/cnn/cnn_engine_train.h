/* gpu/cnn/cnn_engine_train.h — training a CNN on its resident GPU engine
 * (cnn_engine.h): params up and down, the layer-wise path training runs
 * on, backward, training steps and runs over device-resident images,
 * the optimisers (SGD, momentum, Adam), soft targets and the softmax loss,
 * and normalised layers' batch statistics.  For the trainers in tools/ and
 * the tests.  Layer: gpu, C linkage; errors as in cnn_engine.h. */
#ifndef NC_GPU_CNN_ENGINE_TRAIN_H
#define NC_GPU_CNN_ENGINE_TRAIN_H

#include "cnn_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "deform.h"   /* core/ has no C++ guards of its own */

typedef enum nc_gpu_cnn_path {
    NC_GPU_CNN_PATH_AUTO = 0,       /* measured choice per bucket */
    NC_GPU_CNN_PATH_DIRECT = 1,     /* direct kernels for every layer */
    NC_GPU_CNN_PATH_UNROLLED = 2,   /* unrolled conv + cuBLAS, cuBLAS fully connected */
    NC_GPU_CNN_PATH_FUSED_SMALL = 3, /* fused column, latency variant */
    NC_GPU_CNN_PATH_FUSED_BIG = 4,  /* fused column, throughput variant */
    NC_GPU_CNN_PATH_FUSED_DEEP = 5, /* fused deep column, latency variant */
    NC_GPU_CNN_PATH_DEEP_BIG = 6,   /* deep column: persistent conv1..pool2, then layer-wise */
} nc_gpu_cnn_path;

/* Params and tables of net (same architecture) to the device / the device's
 * params back into net (after training on the GPU).  -EINVAL on a mismatch. */
int nc_gpu_cnn_upload(nc_gpu_cnn *g, const nc_cnn *net);
int nc_gpu_cnn_download(nc_gpu_cnn *g, nc_cnn *net);

/* Force a path (training, tests, benchmarks); -ENOTSUP for a fused path
 * the net does not fit (cnn_engine_dev.h says which fit).  Training always
 * runs layer-wise: the trainers pick DIRECT or UNROLLED here. */
int nc_gpu_cnn_set_path(nc_gpu_cnn *g, nc_gpu_cnn_path path);

/* After a layer-wise forward of the same n (not a fused one: -EINVAL):
 * grads[n_params] = dE/dparams summed over the batch for d_out = dE/dy of
 * the outputs, as nc_cnn_backward_ref. */
int nc_gpu_cnn_backward(nc_gpu_cnn *g, const float *d_out, uint32_t n, float *grads);

/* One mini-batch step on the device (forward, nc_cnn_loss or the softmax
 * of nc_gpu_cnn_set_loss_softmax, backward, SGD or the update of
 * nc_gpu_cnn_set_momentum / _set_adam), as nc_cnn_train_step; the params stay on the device until
 * nc_gpu_cnn_download.  ret_loss (may be NULL; then nothing waits for the
 * step) is the loss before the step. */
int nc_gpu_cnn_train_step(nc_gpu_cnn *g, const float *in, const uint8_t *labels, uint32_t n,
                          float lr, double *ret_loss);

/* n images (host memory, any n) trained in order as mini-batches of
 * `batch` (<= max_batch; the last one may be smaller): the same SGD steps as
 * n / batch calls of nc_gpu_cnn_train_step, but with one upload and no wait
 * between steps, so a trainer's host threads can prepare the next images
 * meanwhile.  Waits for the last step.  ret_loss / ret_errors (may be NULL):
 * the loss and the misclassified images summed over the steps, each measured
 * before its step. */
int nc_gpu_cnn_train_batches(nc_gpu_cnn *g, const float *in, const uint8_t *labels, uint32_t n,
                             uint32_t batch, float lr, double *ret_loss, uint32_t *ret_errors);

/* Training images resident on the device for nc_gpu_cnn_train_indexed:
 * count images of n_inputs floats (host memory, any) and their labels,
 * copied; deform (may be NULL: none) the core/data/deform parameters every
 * presentation is deformed with (single-map inputs only: -ENOTSUP).
 * Replaces earlier data. */
int nc_gpu_cnn_set_train_data(nc_gpu_cnn *g, const float *in, const uint8_t *labels,
                              uint32_t count, const nc_deform_params *deform);

/* Soft targets for the training images of nc_gpu_cnn_set_train_data:
 * targets[count][n_outputs] (host, copied; finite) replace the labels' +1 / -1
 * in nc_gpu_cnn_train_indexed's loss (core's nc_cnn_loss_targets), e.g. for
 * distillation from a teacher committee; the labels still count the
 * training errors.  NULL goes back to the labels.  New training data clears
 * them. */
int nc_gpu_cnn_set_train_targets(nc_gpu_cnn *g, const float *targets);

/* The loss every training step minimises from now on: scale > 0 (finite)
 * core's nc_cnn_loss_softmax with that scale, 0 the squared error of
 * nc_cnn_loss (the default).  -ENOTSUP for a softmax while soft targets are
 * set (they are squared-error targets), and nc_gpu_cnn_set_train_targets
 * refuses targets while a softmax is. */
int nc_gpu_cnn_set_loss_softmax(nc_gpu_cnn *g, float scale);

/* As nc_gpu_cnn_train_batches, for images already on the device: image i of
 * the run is training image index[i], deformed on the device as
 * nc_deform_apply would deform it with an nc_deform_rng whose state is
 * state[i] (gpu/data/deform.cuh; equal to float rounding).  index and state:
 * host arrays of n. */
int nc_gpu_cnn_train_indexed(nc_gpu_cnn *g, const uint32_t *index, const uint64_t *state,
                             uint32_t n, uint32_t batch, float lr, double *ret_loss,
                             uint32_t *ret_errors);

/* The update every later training step (nc_gpu_cnn_train_step, _batches,
 * _indexed) makes after its gradients: plain SGD (nc_cnn_sgd) until one of
 * these is called, each of which replaces the other.
 *
 * nc_gpu_cnn_set_momentum: core's nc_cnn_sgd_momentum with momentum
 * (0 <= momentum < 1) from velocity[n_params] (host, copied; finite; NULL:
 * zeros, as before a first step).  nc_gpu_cnn_set_adam: core's nc_cnn_adam
 * with beta1, beta2, eps (ranges as there) from the moments m, v [n_params]
 * (host, copied; finite, v >= 0; both NULL: zeros) after `step` steps (0 for
 * fresh moments); each training step then counts one more, and its bias
 * corrections come from nc_cnn_adam_corrections on the host.  The device
 * steps round each product, sum, square root and quotient to float in
 * core's order, so they equal core's on equal gradients.
 *
 * Kernels a connection table cuts stay 0, as core's masking keeps them:
 * their gradients are 0, and the state's entries there are set to 0 on the
 * way in (core's own steps never make them other than 0).  -EINVAL for bad
 * values; on any error the engine steps with plain SGD.
 *
 * nc_gpu_cnn_get_velocity / nc_gpu_cnn_get_adam: the state after the steps
 * so far (waits for them), e.g. for a checkpoint; -EINVAL unless that
 * optimiser is the one set. */
int nc_gpu_cnn_set_momentum(nc_gpu_cnn *g, float momentum, const float *velocity);
int nc_gpu_cnn_get_velocity(nc_gpu_cnn *g, float *velocity);
int nc_gpu_cnn_set_adam(nc_gpu_cnn *g, float beta1, float beta2, float eps, const float *m,
                        const float *v, uint64_t step);
int nc_gpu_cnn_get_adam(nc_gpu_cnn *g, float *m, float *v, uint64_t *step);

/* After a forward or a training step: normalised layer `layer`'s batch
 * statistics, mean[maps] and var[maps], as the last batch was normalised
 * with (core's nc_cnn_work_norm_stats).  Waits for the stream.  -EINVAL
 * before any pass, for a layer that is not normalised, or NULL outputs. */
int nc_gpu_cnn_norm_stats(nc_gpu_cnn *g, uint32_t layer, float *mean, float *var);

#ifdef __cplusplus
}
#endif

#endif

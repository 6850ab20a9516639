/* gpu/cnn/cnn_act.cuh — the element-wise parts of CNN training on the GPU: the
 * activation's derivative, the losses (twins of core/cnn/cnn_act.c's
 * nc_cnn_loss and nc_cnn_loss_softmax) and the optimisers' steps (twins of
 * nc_cnn_sgd, nc_cnn_sgd_momentum and nc_cnn_adam, in the same file).
 *
 * Layer: gpu, C linkage.  Device pointers; enqueue on `stream`; 0 or a
 * negative errno. */
#ifndef NC_GPU_CNN_ACT_CUH
#define NC_GPU_CNN_ACT_CUH

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* da[i] = dy[i] * f'(y[i]) for count elements (da may be dy); act: the
 * layer's nc_cnn_act. */
int nc_gpu_cnn_act_backward(const float *y, const float *dy, float *da, size_t count,
                            uint32_t act, cudaStream_t stream);

/* d_out = y - t (t = +1 at the label, -1 elsewhere) for out[n][k_n];
 * ret_sum[0] = E = 1/2 sum (y - t)^2 and ret_sum[1] = images whose largest
 * output is not the label (as doubles, one device block's sum).  acc (may be
 * NULL) gets both added to acc[0] and acc[1], so a run of steps can total its
 * loss on the device without a wait per step. */
int nc_gpu_cnn_loss(const float *out, const uint8_t *labels, uint32_t n, uint32_t k_n,
                    float *d_out, double *ret_sum, double *acc, cudaStream_t stream);
/* The same against soft targets[n][k_n] (device; NULL: the labels' +1 / -1),
 * as core's nc_cnn_loss_targets. */
int nc_gpu_cnn_loss_targets(const float *out, const uint8_t *labels, const float *targets,
                            uint32_t n, uint32_t k_n, float *d_out, double *ret_sum,
                            double *acc, cudaStream_t stream);

/* Softmax cross-entropy on scale * out (device; scale finite, > 0), as
 * core's nc_cnn_loss_softmax: d_out = scale (p - onehot), ret_sum and acc
 * as above with E = -sum log p[label]. */
int nc_gpu_cnn_loss_softmax(const float *out, const uint8_t *labels, uint32_t n, uint32_t k_n,
                            float scale, float *d_out, double *ret_sum, double *acc,
                            cudaStream_t stream);

/* params[i] -= lr * grads[i]. */
int nc_gpu_cnn_sgd(float *params, const float *grads, size_t count, float lr,
                   cudaStream_t stream);

/* velocity[i] = momentum * velocity[i] + grads[i], then params[i] -= lr *
 * velocity[i], each product and sum rounded to float in that order, as
 * nc_cnn_sgd_momentum. */
int nc_gpu_cnn_sgd_momentum(float *params, const float *grads, float *velocity, size_t count,
                            float lr, float momentum, cudaStream_t stream);

/* One Adam step with the bias corrections c1, c2 of its step count
 * (nc_cnn_adam_corrections, on the host): m, v and params as nc_cnn_adam,
 * each product, sum, square root and quotient rounded to float in core's
 * order. */
int nc_gpu_cnn_adam(float *params, const float *grads, float *m, float *v, size_t count,
                    float lr, float beta1, float beta2, float eps, float c1, float c2,
                    cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif

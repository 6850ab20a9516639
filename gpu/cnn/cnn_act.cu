/* gpu/cnn/cnn_act.cu — activation derivative, losses and the optimisers' steps
 * (SGD, with momentum, Adam).
 *
 * Layer: gpu.  Thread mapping: one thread per element (grid-stride) for the
 * derivative and the steps; each loss is one block of 256 threads, one
 * thread per image in a strided loop, summed in a fixed order in shared
 * memory so that it is deterministic. */
#include "cnn_act.cuh"

#include "cnn_math.cuh"
#include "cuda_check.cuh"

static __global__ void act_backward_kernel(const float *y, const float *dy, float *da,
                                           size_t count, uint32_t act)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x)
        da[i] = dy[i] * nc_gpu_cnn_act_grad(y[i], act);
}

/* One block's sum of the per-thread loss and error counts, in a fixed order
 * (deterministic), into ret_sum and, when given, added to acc. */
static __device__ void block_sum(double loss, double errors, double *ret_sum, double *acc)
{
    __shared__ double loss_s[256], err_s[256];
    loss_s[threadIdx.x] = loss;
    err_s[threadIdx.x] = errors;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            loss_s[threadIdx.x] += loss_s[threadIdx.x + s];
            err_s[threadIdx.x] += err_s[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        ret_sum[0] = loss_s[0];
        ret_sum[1] = err_s[0];
        if (acc) {
            acc[0] += loss_s[0];
            acc[1] += err_s[0];
        }
    }
}

/* The arithmetic of core's nc_cnn_loss_targets. */
static __global__ void loss_kernel(const float *__restrict__ out, const uint8_t *__restrict__ labels,
                                   const float *__restrict__ targets, uint32_t n, uint32_t k_n,
                                   float *__restrict__ d_out, double *__restrict__ ret_sum,
                                   double *__restrict__ acc)
{
    double loss = 0.0, errors = 0.0;
    for (uint32_t b = threadIdx.x; b < n; b += blockDim.x) {
        const float *y = out + (size_t)b * k_n;
        uint32_t best = 0;
        for (uint32_t k = 0; k < k_n; k++) {
            const float t = targets ? targets[(size_t)b * k_n + k]
                                    : k == labels[b] ? 1.0f : -1.0f;
            const float d = y[k] - t;
            loss += 0.5 * (double)d * d;
            d_out[(size_t)b * k_n + k] = d;
            if (y[k] > y[best])
                best = k;
        }
        errors += best != labels[b];
    }
    block_sum(loss, errors, ret_sum, acc);
}

/* The arithmetic of core's nc_cnn_loss_softmax, in double as there. */
static __global__ void softmax_loss_kernel(const float *__restrict__ out,
                                           const uint8_t *__restrict__ labels, uint32_t n,
                                           uint32_t k_n, float scale, float *__restrict__ d_out,
                                           double *__restrict__ ret_sum,
                                           double *__restrict__ acc)
{
    double loss = 0.0, errors = 0.0;
    for (uint32_t b = threadIdx.x; b < n; b += blockDim.x) {
        const float *y = out + (size_t)b * k_n;
        uint32_t best = 0;
        for (uint32_t k = 1; k < k_n; k++)
            if (y[k] > y[best])
                best = k;
        const double m = (double)scale * y[best];
        double sum = 0.0;
        for (uint32_t k = 0; k < k_n; k++)
            sum += exp((double)scale * y[k] - m);
        loss += log(sum) - ((double)scale * y[labels[b]] - m);
        for (uint32_t k = 0; k < k_n; k++) {
            const double p = exp((double)scale * y[k] - m) / sum;
            d_out[(size_t)b * k_n + k] =
                (float)((double)scale * (p - (k == labels[b] ? 1.0 : 0.0)));
        }
        errors += best != labels[b];
    }
    block_sum(loss, errors, ret_sum, acc);
}

static __global__ void sgd_kernel(float *params, const float *grads, size_t count, float lr)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x)
        params[i] -= lr * grads[i];
}

/* nc_cnn_sgd_momentum's roundings: each product and sum rounded to float in
 * core's order (the _rn intrinsics keep nvcc from fusing them into FMAs). */
static __global__ void sgd_momentum_kernel(float *params, const float *grads, float *velocity,
                                           size_t count, float lr, float momentum)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        const float v = __fadd_rn(__fmul_rn(momentum, velocity[i]), grads[i]);
        velocity[i] = v;
        params[i] = __fsub_rn(params[i], __fmul_rn(lr, v));
    }
}

/* nc_cnn_adam's roundings, likewise: m = beta1 m + r1 g, v = beta2 v +
 * r2 (g g), params -= (lr (m c1)) / (sqrt(v c2) + eps), sqrt and division
 * correctly rounded as sqrtf and / are on the host. */
static __global__ void adam_kernel(float *params, const float *grads, float *m, float *v,
                                   size_t count, float lr, float beta1, float beta2, float r1,
                                   float r2, float eps, float c1, float c2)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        const float g = grads[i];
        const float mi = __fadd_rn(__fmul_rn(beta1, m[i]), __fmul_rn(r1, g));
        const float vi = __fadd_rn(__fmul_rn(beta2, v[i]), __fmul_rn(r2, __fmul_rn(g, g)));
        m[i] = mi;
        v[i] = vi;
        const float num = __fmul_rn(lr, __fmul_rn(mi, c1));
        const float den = __fadd_rn(__fsqrt_rn(__fmul_rn(vi, c2)), eps);
        params[i] = __fsub_rn(params[i], __fdiv_rn(num, den));
    }
}

extern "C" int nc_gpu_cnn_act_backward(const float *y, const float *dy, float *da, size_t count,
                                       uint32_t act, cudaStream_t stream)
{
    act_backward_kernel<<<nc_gpu_cnn_blocks(count, NC_GPU_CNN_BLOCK), NC_GPU_CNN_BLOCK, 0,
                          stream>>>(y, dy, da, count, act);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_loss(const float *out, const uint8_t *labels, uint32_t n, uint32_t k_n,
                               float *d_out, double *ret_sum, double *acc,
                               cudaStream_t stream)
{
    return nc_gpu_cnn_loss_targets(out, labels, NULL, n, k_n, d_out, ret_sum, acc, stream);
}

extern "C" int nc_gpu_cnn_loss_targets(const float *out, const uint8_t *labels,
                                       const float *targets, uint32_t n, uint32_t k_n,
                                       float *d_out, double *ret_sum, double *acc,
                                       cudaStream_t stream)
{
    loss_kernel<<<1, 256, 0, stream>>>(out, labels, targets, n, k_n, d_out, ret_sum, acc);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_loss_softmax(const float *out, const uint8_t *labels, uint32_t n,
                                       uint32_t k_n, float scale, float *d_out, double *ret_sum,
                                       double *acc, cudaStream_t stream)
{
    if (!isfinite(scale) || !(scale > 0.0f))
        return -EINVAL;
    softmax_loss_kernel<<<1, 256, 0, stream>>>(out, labels, n, k_n, scale, d_out, ret_sum, acc);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_sgd(float *params, const float *grads, size_t count, float lr,
                              cudaStream_t stream)
{
    sgd_kernel<<<nc_gpu_cnn_blocks(count, NC_GPU_CNN_BLOCK), NC_GPU_CNN_BLOCK, 0, stream>>>(
        params, grads, count, lr);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_sgd_momentum(float *params, const float *grads, float *velocity,
                                       size_t count, float lr, float momentum,
                                       cudaStream_t stream)
{
    sgd_momentum_kernel<<<nc_gpu_cnn_blocks(count, NC_GPU_CNN_BLOCK), NC_GPU_CNN_BLOCK, 0,
                          stream>>>(params, grads, velocity, count, lr, momentum);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_adam(float *params, const float *grads, float *m, float *v,
                               size_t count, float lr, float beta1, float beta2, float eps,
                               float c1, float c2, cudaStream_t stream)
{
    /* core's r1, r2: rounded on the host as there */
    const float r1 = 1.0f - beta1, r2 = 1.0f - beta2;
    adam_kernel<<<nc_gpu_cnn_blocks(count, NC_GPU_CNN_BLOCK), NC_GPU_CNN_BLOCK, 0, stream>>>(
        params, grads, m, v, count, lr, beta1, beta2, r1, r2, eps, c1, c2);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

/* gpu/cnn_act.cu — activation derivative, losses and SGD step.
 *
 * Layer: gpu.  Thread mapping: one thread per element (grid-stride) for the
 * derivative and the SGD step; each loss is one block of 256 threads, one
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

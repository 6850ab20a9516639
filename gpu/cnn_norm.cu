/* gpu/cnn_norm.cu — batch normalisation: one block per map.
 *
 * Layer: gpu.  A map's n x h x w values are few (16 x 26 x 26 at most in a
 * training batch of the deep column), so one block of 256 threads takes
 * each: the sums in double, reduced in a fixed order in shared memory
 * (deterministic), mean first and then the variance about it, as core's
 * cnn_norm.c does; then every value of the map rewritten. */
#include "cnn_norm.cuh"

#include "cnn_math.cuh"
#include "cuda_check.cuh"

#define NORM_THREADS 256

/* The block's sum of v, in a fixed order, seen by every thread. */
static __device__ double block_sum(double v, double *s)
{
    s[threadIdx.x] = v;
    __syncthreads();
    for (unsigned k = NORM_THREADS / 2; k > 0; k >>= 1) {
        if (threadIdx.x < k)
            s[threadIdx.x] += s[threadIdx.x + k];
        __syncthreads();
    }
    double r = s[0];
    __syncthreads();
    return r;
}

/* Element i of map m (i < n * plane), image-major. */
static __device__ __forceinline__ size_t at(const nc_gpu_cnn_layer &L, uint32_t m, size_t i,
                                            uint32_t plane)
{
    return (i / plane) * L.n_out + (size_t)m * plane + i % plane;
}

static __global__ void norm_forward_kernel(nc_gpu_cnn_layer L, float *a, uint32_t n,
                                           float *xhat, float *stat)
{
    __shared__ double s[NORM_THREADS];
    const uint32_t m = blockIdx.x, plane = L.height * L.width;
    const size_t count = (size_t)n * plane;
    double sum = 0.0;
    for (size_t i = threadIdx.x; i < count; i += NORM_THREADS)
        sum += a[at(L, m, i, plane)];
    const double mean = block_sum(sum, s) / (double)count;
    double ss = 0.0;
    for (size_t i = threadIdx.x; i < count; i += NORM_THREADS) {
        const double d = a[at(L, m, i, plane)] - mean;
        ss += d * d;
    }
    const double var = block_sum(ss, s) / (double)count;
    const double istd = 1.0 / sqrt(var + (double)NC_CNN_NORM_EPS);
    if (threadIdx.x == 0) {
        stat[m] = (float)mean;
        stat[L.maps + m] = (float)var;
    }
    const float gamma = L.gamma[m], beta = L.beta[m];
    for (size_t i = threadIdx.x; i < count; i += NORM_THREADS) {
        const size_t e = at(L, m, i, plane);
        const float xh = (float)((a[e] - mean) * istd);
        xhat[e] = xh;
        a[e] = nc_gpu_cnn_act(__fadd_rn(__fmul_rn(gamma, xh), beta), L.norm_act);
    }
}

static __global__ void norm_backward_kernel(nc_gpu_cnn_layer L, const float *y, float *d,
                                            uint32_t n, const float *xhat, const float *stat)
{
    __shared__ double s[NORM_THREADS];
    const uint32_t m = blockIdx.x, plane = L.height * L.width;
    const size_t count = (size_t)n * plane;
    double sg = 0.0, sgx = 0.0;
    for (size_t i = threadIdx.x; i < count; i += NORM_THREADS) {
        const size_t e = at(L, m, i, plane);
        const float g = d[e] * nc_gpu_cnn_act_grad(y[e], L.norm_act);
        d[e] = g;
        sg += g;
        sgx += (double)g * xhat[e];
    }
    sg = block_sum(sg, s);
    sgx = block_sum(sgx, s);
    if (threadIdx.x == 0) {
        L.gnorm[m] = (float)sgx;                /* gamma */
        L.gnorm[L.maps + m] = (float)sg;        /* beta */
        L.gnorm[2 * L.maps + m] = 0.0f;         /* mean, var: not learnt */
        L.gnorm[3 * L.maps + m] = 0.0f;
    }
    const double istd = 1.0 / sqrt((double)stat[L.maps + m] + (double)NC_CNN_NORM_EPS);
    const double k = L.gamma[m] * istd, mg = sg / (double)count, mgx = sgx / (double)count;
    for (size_t i = threadIdx.x; i < count; i += NORM_THREADS) {
        const size_t e = at(L, m, i, plane);
        d[e] = (float)(k * (d[e] - mg - xhat[e] * mgx));
    }
}

extern "C" int nc_gpu_cnn_norm_forward(const nc_gpu_cnn_layer *L, float *a, uint32_t n,
                                       float *xhat, float *stat, cudaStream_t stream)
{
    if (!L->norm || n < 1)
        return -EINVAL;
    norm_forward_kernel<<<L->maps, NORM_THREADS, 0, stream>>>(*L, a, n, xhat, stat);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_norm_backward(const nc_gpu_cnn_layer *L, const float *y, float *d,
                                        uint32_t n, const float *xhat, const float *stat,
                                        cudaStream_t stream)
{
    if (!L->norm || n < 1)
        return -EINVAL;
    norm_backward_kernel<<<L->maps, NORM_THREADS, 0, stream>>>(*L, y, d, n, xhat, stat);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

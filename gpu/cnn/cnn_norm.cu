/* gpu/cnn/cnn_norm.cu — batch normalisation.
 *
 * Layer: gpu.  Each map's sums are reduced by one block of 256 threads, in
 * double, in a fixed order (deterministic): thread t adds elements t,
 * t + 256, ... of the map, then a fixed tree joins the 256 partial sums;
 * mean first and then the variance about it, as core's cnn_norm.c does.
 * Rewriting every value is a second kernel over all of them, so it no longer
 * waits on one block a map (a quarter of the M3 shape's kernel time in a
 * profile, docs/lessons.md).  The two kernels pass the map's
 * doubles through the end of `stat`, so every value is computed by the same
 * expressions from the same operands as when one kernel did both: the
 * results are bit for bit those of before. */
#include "cnn_norm.cuh"

#include "cnn_math.cuh"
#include "cuda_check.cuh"

#define NORM_THREADS 256
#define NORM_LOADS 8            /* loads in flight a thread, for the latency */
#define APPLY_THREADS 128

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

/* Thread t's walk over map m's n x plane values, element i = t, t + 256, ...
 * in that order, kept as (image b, position p) so that no step divides. */
struct norm_walk {
    uint32_t b, p, q, r, plane, n;
    size_t base, stride;        /* element (b, p) is base + b * stride + p */
};

static __device__ __forceinline__ norm_walk walk_start(const nc_gpu_cnn_layer &L, uint32_t m,
                                                       uint32_t n)
{
    const uint32_t plane = L.height * L.width;
    norm_walk w;
    w.plane = plane;
    w.n = n;
    w.q = NORM_THREADS / plane;
    w.r = NORM_THREADS % plane;
    w.b = threadIdx.x / plane;
    w.p = threadIdx.x % plane;
    w.base = (size_t)m * plane;
    w.stride = L.n_out;
    return w;
}

/* The next NORM_LOADS elements' offsets (valid[k] 0 past the end), the walk
 * moved on past them. */
static __device__ __forceinline__ void walk_next(norm_walk &w, size_t *at, int *valid)
{
#pragma unroll
    for (int k = 0; k < NORM_LOADS; k++) {
        valid[k] = w.b < w.n;
        at[k] = w.base + (size_t)w.b * w.stride + w.p;
        w.p += w.r;
        w.b += w.q;
        if (w.p >= w.plane) {
            w.p -= w.plane;
            w.b++;
        }
    }
}

/* The next NORM_LOADS values of a (0 past the end, valid[k] saying which),
 * all loads issued before any is used. */
static __device__ __forceinline__ void walk_load(norm_walk &w, const float *__restrict__ a,
                                                 float *v, int *valid)
{
    size_t at[NORM_LOADS];
    walk_next(w, at, valid);
#pragma unroll
    for (int k = 0; k < NORM_LOADS; k++)
        v[k] = valid[k] ? a[at[k]] : 0.0f;
}

/* stat: mean[maps], var[maps] (floats), then doubles mean[maps], 1/std[maps]
 * for the apply kernel. */
static __global__ void norm_stats_kernel(nc_gpu_cnn_layer L, const float *__restrict__ a,
                                         uint32_t n, float *stat)
{
    __shared__ double s[NORM_THREADS];
    const uint32_t m = blockIdx.x;
    const size_t count = (size_t)n * L.height * L.width;
    int valid[NORM_LOADS];
    float v[NORM_LOADS];
    double sum = 0.0;
    for (norm_walk w = walk_start(L, m, n); w.b < n;) {
        walk_load(w, a, v, valid);
#pragma unroll
        for (int k = 0; k < NORM_LOADS; k++)
            if (valid[k])
                sum += v[k];
    }
    const double mean = block_sum(sum, s) / (double)count;
    double ss = 0.0;
    for (norm_walk w = walk_start(L, m, n); w.b < n;) {
        walk_load(w, a, v, valid);
#pragma unroll
        for (int k = 0; k < NORM_LOADS; k++)
            if (valid[k]) {
                const double d = v[k] - mean;
                ss += d * d;
            }
    }
    const double var = block_sum(ss, s) / (double)count;
    if (threadIdx.x == 0) {
        double *dd = nc_gpu_cnn_norm_stat_doubles(stat, L.maps);
        stat[m] = (float)mean;
        stat[L.maps + m] = (float)var;
        dd[m] = mean;
        dd[L.maps + m] = 1.0 / sqrt(var + (double)NC_CNN_NORM_EPS);
    }
}

/* The apply kernels' walk: f(m, e) for every value of row (image b, map m)
 * of a [n][maps][plane] block, e its offset; blocks over x cover the plane,
 * rows go along y.  apply_grid, next, is the launch shape it assumes. */
template <typename F>
static __device__ __forceinline__ void for_each_row_value(const nc_gpu_cnn_layer &L, uint32_t n,
                                                          F f)
{
    const uint32_t plane = L.height * L.width, rows = n * L.maps;
    const uint32_t p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= plane)
        return;
    for (uint32_t row = blockIdx.y; row < rows; row += gridDim.y)
        f(row % L.maps, (size_t)row * plane + p);
}

static dim3 apply_grid(const nc_gpu_cnn_layer *L, uint32_t n)
{
    const uint32_t plane = L->height * L->width, rows = n * L->maps;
    return dim3((plane + APPLY_THREADS - 1) / APPLY_THREADS, rows < 65535u ? rows : 65535u);
}

/* a^ and y = f(gamma a^ + beta) of every value, from the map's mean and
 * 1/std in stat's doubles. */
static __global__ void norm_apply_kernel(nc_gpu_cnn_layer L, float *a, uint32_t n,
                                         float *__restrict__ xhat, const float *stat)
{
    const double *dd = nc_gpu_cnn_norm_stat_doubles(stat, L.maps);
    for_each_row_value(L, n, [&](uint32_t m, size_t e) {
        const double mean = dd[m], istd = dd[L.maps + m];
        const float gamma = L.gamma[m], beta = L.beta[m];
        const float xh = (float)((a[e] - mean) * istd);
        xhat[e] = xh;
        a[e] = nc_gpu_cnn_act(__fadd_rn(__fmul_rn(gamma, xh), beta), L.norm_act);
    });
}

/* d = dE/dy through f in place, and the map's sums of it and of it x a^;
 * stat's doubles become k = gamma / std, the mean of d, the mean of d a^. */
static __global__ void norm_back_stats_kernel(nc_gpu_cnn_layer L, const float *__restrict__ y,
                                              float *d, uint32_t n,
                                              const float *__restrict__ xhat, float *stat)
{
    __shared__ double s[NORM_THREADS];
    const uint32_t m = blockIdx.x;
    const size_t count = (size_t)n * L.height * L.width;
    size_t at[NORM_LOADS];
    int valid[NORM_LOADS];
    float g[NORM_LOADS], xh[NORM_LOADS];
    double sg = 0.0, sgx = 0.0;
    for (norm_walk w = walk_start(L, m, n); w.b < n;) {
        walk_next(w, at, valid);
#pragma unroll
        for (int k = 0; k < NORM_LOADS; k++)
            if (valid[k]) {
                g[k] = d[at[k]] * nc_gpu_cnn_act_grad(y[at[k]], L.norm_act);
                xh[k] = xhat[at[k]];
            }
#pragma unroll
        for (int k = 0; k < NORM_LOADS; k++)
            if (valid[k]) {
                d[at[k]] = g[k];
                sg += g[k];
                sgx += (double)g[k] * xh[k];
            }
    }
    sg = block_sum(sg, s);
    sgx = block_sum(sgx, s);
    if (threadIdx.x == 0) {
        L.gnorm[m] = (float)sgx;                /* gamma */
        L.gnorm[L.maps + m] = (float)sg;        /* beta */
        L.gnorm[2 * L.maps + m] = 0.0f;         /* mean, var: not learnt */
        L.gnorm[3 * L.maps + m] = 0.0f;
        const double istd = 1.0 / sqrt((double)stat[L.maps + m] + (double)NC_CNN_NORM_EPS);
        double *dd = nc_gpu_cnn_norm_stat_doubles(stat, L.maps);
        dd[m] = L.gamma[m] * istd;
        dd[L.maps + m] = sg / (double)count;
        dd[2 * L.maps + m] = sgx / (double)count;
    }
}

/* dE/da of every value: k (d - mean of d - a^ x mean of d a^), from stat's
 * doubles. */
static __global__ void norm_back_apply_kernel(nc_gpu_cnn_layer L, float *d, uint32_t n,
                                              const float *__restrict__ xhat, const float *stat)
{
    const double *dd = nc_gpu_cnn_norm_stat_doubles(stat, L.maps);
    for_each_row_value(L, n, [&](uint32_t m, size_t e) {
        const double k = dd[m], mg = dd[L.maps + m], mgx = dd[2 * L.maps + m];
        d[e] = (float)(k * (d[e] - mg - xhat[e] * mgx));
    });
}

extern "C" int nc_gpu_cnn_norm_forward(const nc_gpu_cnn_layer *L, float *a, uint32_t n,
                                       float *xhat, float *stat, cudaStream_t stream)
{
    if (!L->norm || n < 1 || (size_t)n * L->maps > 0xffffffffu)
        return -EINVAL;
    norm_stats_kernel<<<L->maps, NORM_THREADS, 0, stream>>>(*L, a, n, stat);
    NC_CUDA_CHECK(cudaGetLastError());
    norm_apply_kernel<<<apply_grid(L, n), APPLY_THREADS, 0, stream>>>(*L, a, n, xhat, stat);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_norm_backward(const nc_gpu_cnn_layer *L, const float *y, float *d,
                                        uint32_t n, const float *xhat, float *stat,
                                        cudaStream_t stream)
{
    if (!L->norm || n < 1 || (size_t)n * L->maps > 0xffffffffu)
        return -EINVAL;
    norm_back_stats_kernel<<<L->maps, NORM_THREADS, 0, stream>>>(*L, y, d, n, xhat, stat);
    NC_CUDA_CHECK(cudaGetLastError());
    norm_back_apply_kernel<<<apply_grid(L, n), APPLY_THREADS, 0, stream>>>(*L, d, n, xhat,
                                                                           stat);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

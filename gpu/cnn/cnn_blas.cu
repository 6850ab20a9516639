/* gpu/cnn/cnn_blas.cu — unrolled convolution + cuBLAS (seed 001's idea on the
 * GPU), and fully connected layers through cuBLAS; twin of core/cnn/cnn_blas.c.
 *
 * Layer: gpu.  Per chunk of c images (N = c * h * w columns):
 *   unroll:   one thread per element of U[fan_in][N], U[(ci, i, j)][(b, oy, ox)]
 *             = x[b][ci][oy*sy + i][ox*sx + j] (every input map: kernels of cut
 *             pairs are zero in the params block, as on core's BLAS path);
 *   product:  P[maps][N] = W[maps][fan_in] U, one cublasSgemm;
 *   bias_act: one thread per output, y[b][m][p] = f(P[m][b*hw + p] + bias[m])
 *             (back to image-major).
 * Fully connected: P[n][units] = X W^T by one sgemm, then one thread per
 * output applies bias and activation in place.
 * The copying kernels run on a grid of rows (along y) by columns (along x),
 * so a thread divides only its own column index, in 32 bits: with a 64-bit
 * division and modulo and eight 32-bit ones a value, unrolling took a
 * quarter of the M3 shape's kernel time in a profile (docs/lessons.md).
 * They move the same values to the same places, and col2im sums in the same
 * order, as before. */
#include "cnn_blas.cuh"

#include <errno.h>
#include <stdio.h>

#include "cnn_math.cuh"
#include "cuda_check.cuh"

#define ROWS_MAX 65535u
#define COL_BLOCKS_MAX 4096u

/* rows (along y) x cols (along x) threads, each dimension capped: the
 * kernels stride over both. */
static dim3 rows_cols_grid(uint32_t rows, size_t cols)
{
    const size_t bx = (cols + NC_GPU_CNN_BLOCK - 1) / NC_GPU_CNN_BLOCK;
    return dim3(bx < 1 ? 1u : bx > COL_BLOCKS_MAX ? COL_BLOCKS_MAX : (unsigned)bx,
                rows < 1 ? 1u : rows > ROWS_MAX ? ROWS_MAX : rows);
}

#define FOR_ROWS(row, rows) for (uint32_t row = blockIdx.y; row < (rows); row += gridDim.y)
#define FOR_COLS(col, cols)                                                                   \
    for (uint32_t col = blockIdx.x * blockDim.x + threadIdx.x; col < (cols);                \
         col += gridDim.x * blockDim.x)

/* A chunk's column col as (image b of the chunk, position p): one 32-bit division. */
struct col_split {
    uint32_t b, p;
};

static __device__ __forceinline__ col_split split_col(uint32_t col, uint32_t hw)
{
    col_split s;
    s.b = col / hw;
    s.p = col - s.b * hw;
    return s;
}

static __global__ void unroll_kernel(nc_gpu_cnn_layer L, const float *__restrict__ x,
                                     float *__restrict__ u, uint32_t b0, uint32_t cols)
{
    const uint32_t hw = L.height * L.width, kk = L.kernel_x * L.kernel_y;
    const uint32_t in_hw = L.in_height * L.in_width;
    FOR_ROWS(row, L.fan_in) {
        const uint32_t ci = row / kk, i = (row % kk) / L.kernel_x, j = row % L.kernel_x;
        const float *xr = x + (size_t)ci * in_hw + (size_t)i * L.in_width + j;
        float *ur = u + (size_t)row * cols;
        FOR_COLS(col, cols) {
            const col_split s = split_col(col, hw);
            const uint32_t oy = s.p / L.width, ox = s.p - oy * L.width;
            ur[col] = xr[(size_t)(b0 + s.b) * L.n_in + (size_t)(oy * L.step_y) * L.in_width +
                         ox * L.step_x];
        }
    }
}

static __global__ void bias_act_kernel(nc_gpu_cnn_layer L, const float *__restrict__ prod,
                                       float *__restrict__ y, uint32_t b0, uint32_t cols)
{
    const uint32_t hw = L.height * L.width;
    FOR_ROWS(m, L.maps) {
        const float bias = L.bias[m];
        const float *pr = prod + (size_t)m * cols;
        FOR_COLS(col, cols) {
            const col_split s = split_col(col, hw);
            y[(size_t)(b0 + s.b) * L.n_out + (size_t)m * hw + s.p] =
                nc_gpu_cnn_act(pr[col] + bias, L.act);
        }
    }
}

static __global__ void full_bias_act_kernel(nc_gpu_cnn_layer L, float *y, size_t total)
{
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x)
        y[e] = nc_gpu_cnn_act(y[e] + L.bias[e % L.maps], L.act);
}

extern "C" int nc_gpu_cnn_blas_error(cublasStatus_t s, const char *stmt, const char *func,
                                     const char *file, int line)
{
    char what[256];
    snprintf(what, sizeof what, "%s (cuBLAS status %d)", stmt, (int)s);
    return nc_gpu_record_error(s == CUBLAS_STATUS_ALLOC_FAILED ? cudaErrorMemoryAllocation
                               : s == CUBLAS_STATUS_INVALID_VALUE ? cudaErrorInvalidValue
                                                                  : cudaErrorUnknown,
                               what, func, file, line);
}

extern "C" uint32_t nc_gpu_cnn_unroll_chunk(const nc_gpu_cnn_layer *L, size_t cap)
{
    const size_t per = ((size_t)L->fan_in + L->maps) * L->height * L->width;
    const size_t c = cap / per;
    return (uint32_t)(c > 65536u ? 65536u : c);
}

extern "C" int nc_gpu_cnn_conv_forward_unrolled(const nc_gpu_cnn_layer *L, const float *x,
                                                float *y, uint32_t n, float *scratch, size_t cap,
                                                cublasHandle_t blas, cudaStream_t stream)
{
    const uint32_t hw = L->height * L->width;
    const uint32_t chunk = nc_gpu_cnn_unroll_chunk(L, cap);
    if (chunk < 1)
        return -EINVAL;
    NC_CUBLAS_CHECK(cublasSetStream(blas, stream));
    const float one = 1.0f, zero = 0.0f;
    for (uint32_t b0 = 0; b0 < n; b0 += chunk) {
        const uint32_t c = n - b0 < chunk ? n - b0 : chunk;
        const uint32_t cols = c * hw;
        float *u = scratch, *prod = scratch + (size_t)L->fan_in * cols;
        unroll_kernel<<<rows_cols_grid(L->fan_in, cols), NC_GPU_CNN_BLOCK, 0, stream>>>(
            *L, x, u, b0, cols);
        NC_CUDA_CHECK(cudaGetLastError());
        /* column-major: P^T (cols x maps) = U^T (cols x fan_in) W^T (fan_in x maps) */
        NC_CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)cols, (int)L->maps,
                                    (int)L->fan_in, &one, u, (int)cols, L->weights,
                                    (int)L->fan_in, &zero, prod, (int)cols));
        bias_act_kernel<<<rows_cols_grid(L->maps, cols), NC_GPU_CNN_BLOCK, 0, stream>>>(
            *L, prod, y, b0, cols);
        NC_CUDA_CHECK(cudaGetLastError());
    }
    return 0;
}

/* ---- training: the two backward products of a convolution -------------- */

/* d[m][col] = da of image b0 + col / hw, map m, position col % hw: the
 * layer's dE/da, map-major for the products. */
static __global__ void gather_da_kernel(nc_gpu_cnn_layer L, const float *__restrict__ da,
                                        float *__restrict__ d, uint32_t b0, uint32_t cols)
{
    const uint32_t hw = L.height * L.width;
    FOR_ROWS(m, L.maps) {
        float *dr = d + (size_t)m * cols;
        FOR_COLS(col, cols) {
            const col_split s = split_col(col, hw);
            dr[col] = da[(size_t)(b0 + s.b) * L.n_out + (size_t)m * hw + s.p];
        }
    }
}

/* gbias[m] (+)= the sum of row m of d, a block a map: each thread a strided
 * partial sum, then a fixed tree, so the order never changes. */
static __global__ void bias_grad_kernel(nc_gpu_cnn_layer L, const float *__restrict__ d,
                                        uint32_t cols, int accumulate)
{
    __shared__ float red[NC_GPU_CNN_BLOCK];
    const uint32_t m = blockIdx.x, t = threadIdx.x;
    const float *row = d + (size_t)m * cols;
    float s = 0.0f;
    for (uint32_t c = t; c < cols; c += NC_GPU_CNN_BLOCK)
        s += row[c];
    red[t] = s;
    __syncthreads();
    for (uint32_t half = NC_GPU_CNN_BLOCK / 2; half > 0; half >>= 1) {
        if (t < half)
            red[t] += red[t + half];
        __syncthreads();
    }
    if (t == 0)
        L.gbias[m] = accumulate ? L.gbias[m] + red[0] : red[0];
}

/* The entries of a kernel the connection table cuts are 0: w[m][c][..]
 * (laid out like L.weights) for every c not in map m's list. */
static __global__ void mask_cut_kernel(nc_gpu_cnn_layer L, float *w)
{
    const uint32_t kk = L.kernel_x * L.kernel_y;
    const size_t total = (size_t)L.maps * L.fan_in;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const uint32_t m = (uint32_t)(e / L.fan_in), c = (uint32_t)(e % L.fan_in) / kk;
        const int32_t *list = L.fwd + (size_t)m * (1 + L.in_maps);
        if (list[0] == (int32_t)L.in_maps)
            continue;           /* a map wired to every input: nothing cut */
        int wired = 0;
        for (int32_t i = 1; i <= list[0] && !wired; i++)
            wired = list[i] == (int32_t)c;
        if (!wired)
            w[e] = 0.0f;
    }
}

/* dx of the chunk's images: each input pixel gathers, in the fixed order
 * (ky, kx), du's entries of the outputs that read it (the transpose of
 * unroll_kernel); a pixel no output reads gets 0. */
static __global__ void col2im_kernel(nc_gpu_cnn_layer L, const float *__restrict__ du,
                                     float *__restrict__ dx, uint32_t b0, uint32_t cols)
{
    const uint32_t hw = L.height * L.width, in_hw = L.in_height * L.in_width;
    const int unit = L.step_x == 1 && L.step_y == 1;    /* no divisions by the steps */
    FOR_ROWS(bb, cols / hw) {
        FOR_COLS(r, L.n_in) {
            const uint32_t c = r / in_hw, q = r - c * in_hw;
            const uint32_t iy = q / L.in_width, ix = q - iy * L.in_width;
            float s = 0.0f;
            for (uint32_t i = 0; i < L.kernel_y; i++) {
                if (iy < i || (!unit && (iy - i) % L.step_y))
                    continue;
                const uint32_t oy = unit ? iy - i : (iy - i) / L.step_y;
                if (oy >= L.height)
                    continue;
                for (uint32_t j = 0; j < L.kernel_x; j++) {
                    if (ix < j || (!unit && (ix - j) % L.step_x))
                        continue;
                    const uint32_t ox = unit ? ix - j : (ix - j) / L.step_x;
                    if (ox >= L.width)
                        continue;
                    const size_t row = ((size_t)c * L.kernel_y + i) * L.kernel_x + j;
                    s += du[row * cols + (size_t)bb * hw + oy * L.width + ox];
                }
            }
            dx[(size_t)(b0 + bb) * L.n_in + r] = s;
        }
    }
}

extern "C" int nc_gpu_cnn_conv_weights_unrolled(const nc_gpu_cnn_layer *L, const float *x,
                                                const float *da, uint32_t n, float *scratch,
                                                size_t cap, cublasHandle_t blas,
                                                cudaStream_t stream)
{
    const uint32_t hw = L->height * L->width;
    const uint32_t chunk = nc_gpu_cnn_unroll_chunk(L, cap);
    if (chunk < 1)
        return -EINVAL;
    NC_CUBLAS_CHECK(cublasSetStream(blas, stream));
    const float one = 1.0f, zero = 0.0f;
    for (uint32_t b0 = 0; b0 < n; b0 += chunk) {
        const uint32_t c = n - b0 < chunk ? n - b0 : chunk;
        const uint32_t cols = c * hw;
        float *u = scratch, *d = scratch + (size_t)L->fan_in * cols;
        unroll_kernel<<<rows_cols_grid(L->fan_in, cols), NC_GPU_CNN_BLOCK, 0, stream>>>(
            *L, x, u, b0, cols);
        NC_CUDA_CHECK(cudaGetLastError());
        gather_da_kernel<<<rows_cols_grid(L->maps, cols), NC_GPU_CNN_BLOCK, 0, stream>>>(
            *L, da, d, b0, cols);
        NC_CUDA_CHECK(cudaGetLastError());
        /* column-major: dW^T (fan_in x maps) = U (fan_in x cols) D^T (cols x maps),
         * added to the chunks before */
        NC_CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)L->fan_in, (int)L->maps,
                                    (int)cols, &one, u, (int)cols, d, (int)cols,
                                    b0 ? &one : &zero, L->gweights, (int)L->fan_in));
        bias_grad_kernel<<<L->maps, NC_GPU_CNN_BLOCK, 0, stream>>>(*L, d, cols, b0 > 0);
        NC_CUDA_CHECK(cudaGetLastError());
    }
    /* the product gave the cut kernels a gradient */
    return nc_gpu_cnn_mask_cut(L, L->gweights, stream);
}

extern "C" int nc_gpu_cnn_mask_cut(const nc_gpu_cnn_layer *L, float *w, cudaStream_t stream)
{
    mask_cut_kernel<<<nc_gpu_cnn_blocks((size_t)L->maps * L->fan_in, NC_GPU_CNN_BLOCK),
                      NC_GPU_CNN_BLOCK, 0, stream>>>(*L, w);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

extern "C" int nc_gpu_cnn_conv_backward_unrolled(const nc_gpu_cnn_layer *L, const float *da,
                                                 float *dx, uint32_t n, float *scratch,
                                                 size_t cap, cublasHandle_t blas,
                                                 cudaStream_t stream)
{
    const uint32_t hw = L->height * L->width;
    const uint32_t chunk = nc_gpu_cnn_unroll_chunk(L, cap);
    if (chunk < 1)
        return -EINVAL;
    NC_CUBLAS_CHECK(cublasSetStream(blas, stream));
    const float one = 1.0f, zero = 0.0f;
    for (uint32_t b0 = 0; b0 < n; b0 += chunk) {
        const uint32_t c = n - b0 < chunk ? n - b0 : chunk;
        const uint32_t cols = c * hw;
        float *du = scratch, *d = scratch + (size_t)L->fan_in * cols;
        gather_da_kernel<<<rows_cols_grid(L->maps, cols), NC_GPU_CNN_BLOCK, 0, stream>>>(
            *L, da, d, b0, cols);
        NC_CUDA_CHECK(cudaGetLastError());
        /* column-major: dU^T (cols x fan_in) = D^T (cols x maps) W (maps x fan_in) */
        NC_CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)cols, (int)L->fan_in,
                                    (int)L->maps, &one, d, (int)cols, L->weights,
                                    (int)L->fan_in, &zero, du, (int)cols));
        col2im_kernel<<<rows_cols_grid(c, L->n_in), NC_GPU_CNN_BLOCK, 0, stream>>>(
            *L, du, dx, b0, cols);
        NC_CUDA_CHECK(cudaGetLastError());
    }
    return 0;
}

extern "C" int nc_gpu_cnn_full_forward_blas(const nc_gpu_cnn_layer *L, const float *x, float *y,
                                            uint32_t n, cublasHandle_t blas, cudaStream_t stream)
{
    NC_CUBLAS_CHECK(cublasSetStream(blas, stream));
    const float one = 1.0f, zero = 0.0f;
    /* column-major: Y (units x n) = W^T' ... i.e. op(W) = W^T of the k x units view */
    NC_CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)L->maps, (int)n,
                                (int)L->n_in, &one, L->weights, (int)L->n_in, x, (int)L->n_in,
                                &zero, y, (int)L->maps));
    const size_t total = (size_t)n * L->maps;
    full_bias_act_kernel<<<nc_gpu_cnn_blocks(total, NC_GPU_CNN_BLOCK), NC_GPU_CNN_BLOCK, 0,
                           stream>>>(*L, y, total);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

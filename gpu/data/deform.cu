/* gpu/data/deform.cu — random affine + elastic deformations on the GPU (see
 * deform.cuh; the specification is core/data/deform.c, step for step).
 *
 * Layer: gpu.  Thread mapping: one block of DEFORM_THREADS per image; the
 * threads stride over the noise grid, then the smoothed rows, then the
 * fields, then the output pixels, with a barrier between the passes. */
#include "deform.cuh"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "cuda_check.cuh"

#define DEFORM_THREADS 256
#define SHARED_CAP (48u * 1024u)        /* a block's default shared memory */
#define MAX_TAPS 385u                   /* 2 ceil(3 NC_DEFORM_MAX_SIGMA) + 1 */

struct nc_gpu_deform {
    nc_deform_params p;
    uint32_t width, height, radius;
    int elastic;
    size_t shared;                      /* bytes of dynamic shared memory */
    float *d_kernel;                    /* [2 radius + 1], core's floats */
};

typedef struct deform_args {
    float max_translate, rotate_rad, max_scale, max_shear, alpha;
    uint32_t w, h, r;
    int elastic;
} deform_args;

/* Draw j (0-based) of the splitmix64 stream that starts at state s, as
 * nc_deform_rng_sym would return it. */
static __device__ float draw_sym(uint64_t s, uint64_t j)
{
    uint64_t z = s + (j + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)(int32_t)((z >> 40) - (1u << 23)) * (1.0f / 8388608.0f);
}

static __device__ float pixel_or_zero(const float *in, int w, int h, int x, int y)
{
    return (x >= 0 && x < w && y >= 0 && y < h) ? in[y * w + x] : 0.0f;
}

static __device__ float sample(const float *in, int w, int h, float sx, float sy)
{
    if (!(sx > -1.0f && sx < (float)w && sy > -1.0f && sy < (float)h))
        return 0.0f;
    float x0f = floorf(sx), y0f = floorf(sy);
    float fx = sx - x0f, fy = sy - y0f;
    int x0 = (int)x0f, y0 = (int)y0f;
    float p00 = pixel_or_zero(in, w, h, x0, y0);
    float p10 = pixel_or_zero(in, w, h, x0 + 1, y0);
    float p01 = pixel_or_zero(in, w, h, x0, y0 + 1);
    float p11 = pixel_or_zero(in, w, h, x0 + 1, y0 + 1);
    return (1.0f - fy) * ((1.0f - fx) * p00 + fx * p10) + fy * ((1.0f - fx) * p01 + fx * p11);
}

static __global__ void deform_kernel(deform_args a, const float *__restrict__ g,
                                     const float *__restrict__ src,
                                     const uint32_t *__restrict__ index,
                                     const uint64_t *__restrict__ state, float *__restrict__ out)
{
    extern __shared__ float sm[];
    const uint32_t w = a.w, h = a.h, r = a.r, taps = 2 * r + 1;
    const uint32_t we = w + 2 * r, he = h + 2 * r, plane = w * h;
    float *img = sm, *field = img + plane;              /* field: dx then dy */
    float *noise = field + 2 * plane, *tmp = noise + (size_t)we * he;
    const uint64_t s = state[blockIdx.x];
    const float *in = src + (size_t)index[blockIdx.x] * plane;
    for (uint32_t i = threadIdx.x; i < plane; i += blockDim.x)
        img[i] = in[i];

    /* The six affine draws (draws 0..5), the same in every thread. */
    const float tx = a.max_translate * draw_sym(s, 0);
    const float ty = a.max_translate * draw_sym(s, 1);
    const float theta = a.rotate_rad * draw_sym(s, 2);
    const float sx = 1.0f + a.max_scale * draw_sym(s, 3);
    const float sy = 1.0f + a.max_scale * draw_sym(s, 4);
    const float sh = a.max_shear * draw_sym(s, 5);
    const float c = cosf(theta), sn = sinf(theta);
    const float a11 = c * sx, a12 = c * sh * sy - sn * sy;
    const float a21 = sn * sx, a22 = sn * sh * sy + c * sy;

    if (a.elastic) {
        for (uint32_t axis = 0; axis < 2; axis++) {
            const uint64_t first = 6 + (uint64_t)axis * we * he;
            for (uint32_t i = threadIdx.x; i < we * he; i += blockDim.x)
                noise[i] = draw_sym(s, first + i);
            __syncthreads();
            for (uint32_t i = threadIdx.x; i < he * w; i += blockDim.x) {
                const float *row = noise + (i / w) * we + i % w;
                float acc = 0.0f;
                for (uint32_t k = 0; k < taps; k++)
                    acc += g[k] * row[k];
                tmp[i] = acc;
            }
            __syncthreads();
            for (uint32_t i = threadIdx.x; i < plane; i += blockDim.x) {
                const float *col = tmp + i;     /* row y = i / w, then down k rows */
                float f = 0.0f;
                for (uint32_t k = 0; k < taps; k++)
                    f += g[k] * col[(size_t)k * w];
                field[axis * plane + i] = f * a.alpha;
            }
            __syncthreads();    /* noise and tmp are reused by the next axis */
        }
    } else {
        __syncthreads();        /* img complete */
    }

    const float cx = 0.5f * (float)(w - 1), cy = 0.5f * (float)(h - 1);
    float *o = out + (size_t)blockIdx.x * plane;
    for (uint32_t i = threadIdx.x; i < plane; i += blockDim.x) {
        const float rx = (float)(i % w) - cx, ry = (float)(i / w) - cy;
        float px = a11 * rx + a12 * ry + cx + tx;
        float py = a21 * rx + a22 * ry + cy + ty;
        if (a.elastic) {
            px += field[i];
            py += field[plane + i];
        }
        const float v = sample(img, (int)w, (int)h, px, py);
        o[i] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    }
}

extern "C" void nc_gpu_deform_free(nc_gpu_deform *d)
{
    if (!d)
        return;
    cudaFree(d->d_kernel);
    free(d);
}

static int deform_init(nc_gpu_deform *d, const nc_deform *cpu)
{
    uint32_t r = 0;
    const float *k = nc_deform_kernel(cpu, &r);
    d->radius = r;
    d->elastic = k != NULL;
    const size_t plane = (size_t)d->width * d->height;
    size_t floats = plane;
    if (d->elastic) {
        const size_t we = d->width + 2 * r, he = d->height + 2 * r;
        floats += 2 * plane + we * he + he * d->width;
    }
    if (2 * r + 1 > MAX_TAPS || floats * sizeof(float) > SHARED_CAP)
        return -ERANGE;
    d->shared = floats * sizeof(float);
    if (d->elastic) {
        NC_CUDA_CHECK(cudaMalloc(&d->d_kernel, (2 * r + 1) * sizeof(float)));
        NC_CUDA_CHECK(cudaMemcpy(d->d_kernel, k, (2 * r + 1) * sizeof(float),
                                 cudaMemcpyHostToDevice));
    }
    return 0;
}

extern "C" int nc_gpu_deform_new(const nc_deform_params *p, uint32_t width, uint32_t height,
                                 nc_gpu_deform **ret_d)
{
    if (!ret_d)
        return -EINVAL;
    nc_deform *cpu = NULL;      /* checks p and the sizes, and makes the kernel */
    int err = nc_deform_new(p, width, height, &cpu);
    if (err)
        return err;
    nc_gpu_deform *d = (nc_gpu_deform *)calloc(1, sizeof *d);
    if (!d) {
        nc_deform_free(cpu);
        return -ENOMEM;
    }
    d->p = *p;
    d->width = width;
    d->height = height;
    err = deform_init(d, cpu);
    nc_deform_free(cpu);
    if (err) {
        nc_gpu_deform_free(d);
        return err;
    }
    *ret_d = d;
    return 0;
}

extern "C" int nc_gpu_deform_apply(const nc_gpu_deform *d, const float *d_src,
                                   const uint32_t *d_index, const uint64_t *d_state, uint32_t n,
                                   float *d_out, cudaStream_t stream)
{
    if (!d || !d_src || !d_index || !d_state || !d_out || n < 1 || n > 0x7fffffffu)
        return -EINVAL;
    deform_args a;
    a.max_translate = d->p.max_translate;
    a.rotate_rad = d->p.max_rotate_deg * (float)(M_PI / 180.0);
    a.max_scale = d->p.max_scale;
    a.max_shear = d->p.max_shear;
    a.alpha = d->p.elastic_alpha;
    a.w = d->width;
    a.h = d->height;
    a.r = d->radius;
    a.elastic = d->elastic;
    deform_kernel<<<n, DEFORM_THREADS, d->shared, stream>>>(a, d->d_kernel, d_src, d_index,
                                                            d_state, d_out);
    NC_CUDA_CHECK(cudaGetLastError());
    return 0;
}

static int run(const nc_gpu_deform *d, const float *src, uint32_t n_src, const uint32_t *index,
               const uint64_t *state, uint32_t n, float *out, void **mem)
{
    const size_t plane = (size_t)d->width * d->height;
    float *d_src, *d_out;
    uint32_t *d_index;
    uint64_t *d_state;
    NC_CUDA_CHECK(cudaMalloc(&mem[0], n_src * plane * sizeof(float)));
    NC_CUDA_CHECK(cudaMalloc(&mem[1], n * plane * sizeof(float)));
    NC_CUDA_CHECK(cudaMalloc(&mem[2], n * sizeof(uint32_t)));
    NC_CUDA_CHECK(cudaMalloc(&mem[3], n * sizeof(uint64_t)));
    d_src = (float *)mem[0];
    d_out = (float *)mem[1];
    d_index = (uint32_t *)mem[2];
    d_state = (uint64_t *)mem[3];
    NC_CUDA_CHECK(cudaMemcpy(d_src, src, n_src * plane * sizeof(float), cudaMemcpyHostToDevice));
    NC_CUDA_CHECK(cudaMemcpy(d_index, index, n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    NC_CUDA_CHECK(cudaMemcpy(d_state, state, n * sizeof(uint64_t), cudaMemcpyHostToDevice));
    int err = nc_gpu_deform_apply(d, d_src, d_index, d_state, n, d_out, 0);
    if (err)
        return err;
    NC_CUDA_CHECK(cudaMemcpy(out, d_out, n * plane * sizeof(float), cudaMemcpyDeviceToHost));
    return 0;
}

extern "C" int nc_gpu_deform_run(const nc_deform_params *p, uint32_t width, uint32_t height,
                                 int device, const float *src, uint32_t n_src,
                                 const uint32_t *index, const uint64_t *state, uint32_t n,
                                 float *out)
{
    if (!src || !index || !state || !out || n < 1 || n_src < 1)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++)
        if (index[i] >= n_src)
            return -EINVAL;
    NC_CUDA_CHECK(cudaSetDevice(device));
    nc_gpu_deform *d = NULL;
    int err = nc_gpu_deform_new(p, width, height, &d);
    if (err)
        return err;
    void *mem[4] = {NULL, NULL, NULL, NULL};
    err = run(d, src, n_src, index, state, n, out, mem);
    for (int i = 0; i < 4; i++)
        cudaFree(mem[i]);
    nc_gpu_deform_free(d);
    return err;
}

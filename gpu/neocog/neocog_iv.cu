/* gpu/neocog/neocog_iv.cu — the interpolating-vector classifier: one block per
 * character, and for batches up to IV_ITEM_BATCH one block per (character,
 * class, position) (iv_item_kernel, below; at batch 1 the block per
 * character ran on one SM for 326 us with the shipped file).
 *
 * Layer: gpu.  Thread mapping (block per character): the block's threads
 * first sum each input position's squares (one thread per position, planes
 * in order), then each output position's V-cell square v^2 (one thread per
 * position, gather entries in order), both into shared memory; then one
 * thread per (class,
 * position) walks the class's planes in ascending order exactly as core's
 * loop meets them, keeps the class's top-T cosines by the same insertion,
 * pairs them, and leaves its best in shared memory; last, one thread per
 * class takes the maximum over positions (a maximum: any order gives it).
 * Threads of a warp share a class, so they walk lists of one length.
 *
 * Exactness: all of core's doubles are formed with __dmul_rn / __dadd_rn /
 * __ddiv_rn / __dsqrt_rn, which nvcc never contracts, in core's order, so
 * the scores are core's bit for bit on the same activations.  Why the
 * maximum over positions equals core's running "if (best > score) score =
 * (float)best": rounding to float is monotonic and to nearest, so the
 * running value always ends as (float) of the largest best. */
extern "C" {
#include "neocog.h"     /* core's C functions: C linkage before the header below */
}
#include "neocog_iv.cuh"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_check.cuh"
#include "neocog_dev.cuh"

/* Top lists kept per thread: local arrays sized for the file's top_t. */
#define IV_T_SMALL 16u
#define IV_T_MID 64u
#define IV_T_MAX 256u

typedef struct iv_params {
    const uint32_t *cls_off;        /* [C + 1] */
    const uint32_t *members;        /* [K] */
    const unsigned long long *gram_off;     /* [C + 1] */
    const float *gram;
    const float *b;                 /* [ks] */
    const float *s_c;               /* [n_live] */
    const int32_t *gat_ptr;         /* [n_p + 1] */
    const int32_t *gat_in;
    const int16_t *gat_tap;
    double theta;
    uint32_t top_t, ks, n_classes, k_in, in_stride, n_i, n_p;
} iv_params;

struct nc_gpu_neocog_iv {
    void *mem;                      /* every table, one allocation */
    iv_params p;
    size_t smem;                    /* dynamic shared memory per block */
    uint32_t threads;
    /* small batches: a block per (character, class, position) */
    float *item_best;               /* [IV_ITEM_BATCH][n_classes][n_p], or NULL */
    double *item_su;                /* [IV_ITEM_BATCH][n_i] */
    size_t item_smem;
    uint32_t max_class, max_gather;
};

/* Batches up to this run a block per (character, class, position): at
 * batch 1 the block per character was one SM walking 25 positions x 10
 * classes of the shipped file's planes, 326 us on an H100 (ncu; now 7.6 +
 * 19.8 us).  The shipped file's whole forward with copies, this way against
 * a block per character, same H100 run: 2953 / 3225 us at batch 24, 3749 /
 * 3947 at 32, 5444 / 5615 at 48, 7285 / 7371 at 64 (neocogd's largest
 * batch). */
#define IV_ITEM_BATCH 64u
#define IV_ITEM_THREADS 256u

/* A plane's cosine with the input, core's arithmetic:
 * (u * (1 - th) / th + 1) * (1 + th * b * v) - 1, over b v, in [0, 1]. */
static __device__ __forceinline__ double iv_cosine(double u, double b, double th, double v)
{
    const double t3 = __dadd_rn(__ddiv_rn(__dmul_rn(u, __dadd_rn(1.0, -th)), th), 1.0);
    const double t6 = __dadd_rn(1.0, __dmul_rn(__dmul_rn(th, b), v));
    const double e = __dadd_rn(__dmul_rn(t3, t6), -1.0);
    const double s = __ddiv_rn(e, __dmul_rn(b, v));
    return s < 0.0 ? 0.0 : s > 1.0 ? 1.0 : s;
}

/* The interpolated cosine of two top-list entries al, be whose planes'
 * gram entry is g; 0 when the pair does not interpolate (core's rules). */
static __device__ __forceinline__ double iv_pair(double al, double be, double g)
{
    if (!(g < 1.0 - 1e-6))
        return 0.0;
    const double den = __dadd_rn(1.0, -__dmul_rn(g, g));
    const double pa = __ddiv_rn(__dadd_rn(al, -__dmul_rn(g, be)), den);
    const double pb = __ddiv_rn(__dadd_rn(be, -__dmul_rn(g, al)), den);
    if (!(pa > 0.0 && pb > 0.0))
        return 0.0;
    const double s = __dsqrt_rn(__dadd_rn(__dmul_rn(pa, al), __dmul_rn(pb, be)));
    return s > 1.0 ? 1.0 : s;
}

/* The answer from a character's class scores, as core: strictly larger
 * wins, so ties go to the lower class; -1 when none is above 0. */
static __device__ __forceinline__ int32_t iv_answer(const float *score, uint32_t C)
{
    float bv = 0.0f;
    int32_t arg = -1;
    for (uint32_t c = 0; c < C; c++)
        if (score[c] > bv) {
            bv = score[c];
            arg = (int32_t)c;
        }
    return arg;
}

/* sum of u[kap]^2 over kap = 0 .. k - 1 in that order, in double as core;
 * eight loads in flight (one at a time, the 295 planes of the shipped
 * file's UC3 were 295 round trips to L2 a thread) */
static __device__ __forceinline__ double iv_sum_squares(const float *__restrict__ u, uint32_t k)
{
    double s = 0.0;
    uint32_t kap = 0;
    for (; kap + 8u <= k; kap += 8u) {
        float x[8];
#pragma unroll
        for (int q = 0; q < 8; q++)
            x[q] = __ldg(u + kap + q);
#pragma unroll
        for (int q = 0; q < 8; q++)
            s = __dadd_rn(s, __dmul_rn((double)x[q], (double)x[q]));
    }
    for (; kap < k; kap++) {
        const double x = (double)__ldg(u + kap);
        s = __dadd_rn(s, __dmul_rn(x, x));
    }
    return s;
}

template <uint32_t TMAX>
static __global__ void iv_kernel(const iv_params P, const float *__restrict__ in,
                                 const float *__restrict__ us, float *__restrict__ scores,
                                 int32_t *__restrict__ labels)
{
    extern __shared__ double sm[];
    double *su = sm;                        /* [n_i] */
    double *v2s = su + P.n_i;               /* [n_p] */
    double *best = v2s + P.n_p;             /* [n_classes][n_p] */
    const size_t ch = blockIdx.x;
    const float *inb = in + ch * P.n_i * P.in_stride;
    const float *usb = us + ch * P.n_p * P.ks;
    const uint32_t C = P.n_classes, T = P.top_t;
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();          /* programmatic launch: see neocog_dev.cuh */

    for (uint32_t i = threadIdx.x; i < P.n_i; i += blockDim.x)
        su[i] = iv_sum_squares(inb + (size_t)i * P.in_stride, P.k_in);
    __syncthreads();
    for (uint32_t p = threadIdx.x; p < P.n_p; p += blockDim.x) {
        double v2 = 0.0;
        for (int32_t j = P.gat_ptr[p]; j < P.gat_ptr[p + 1]; j++)
            v2 = __dadd_rn(v2, __dmul_rn((double)P.s_c[P.gat_tap[j]], su[P.gat_in[j]]));
        v2s[p] = v2;
    }
    __syncthreads();

    const double th = P.theta;
    for (uint32_t item = threadIdx.x; item < C * P.n_p; item += blockDim.x) {
        const uint32_t c = item / P.n_p, p = item % P.n_p;
        const double v2 = v2s[p];
        double result = 0.0;
        if (v2 > 0.0) {
            const double v = __dsqrt_rn(v2);
            float ts[TMAX];
            uint32_t ti[TMAX];
            uint32_t n = 0;
            const uint32_t i0 = P.cls_off[c], i1 = P.cls_off[c + 1];
            const float *up = usb + (size_t)p * P.ks;
            for (uint32_t i = i0; i < i1; i++) {
                const uint32_t k = P.members[i];
                const double u = (double)up[k], b = (double)P.b[k];
                if (!(u > 0.0) || !(b > 0.0))
                    continue;
                const double s = iv_cosine(u, b, th, v);
                uint32_t at = n < T ? n : T - 1;
                if (n == T && !(s > (double)ts[T - 1]))
                    continue;
                while (at > 0 && (double)ts[at - 1] < s) {
                    ts[at] = ts[at - 1];
                    ti[at] = ti[at - 1];
                    at--;
                }
                ts[at] = (float)s;
                ti[at] = i - i0;
                if (n < T)
                    n++;
            }
            const uint32_t nc = i1 - i0;
            const float *G = P.gram + P.gram_off[c];
            double bst = n ? (double)ts[0] : 0.0;
            for (uint32_t x = 0; x < n; x++)
                for (uint32_t y = x + 1; y < n; y++) {
                    const double s =
                        iv_pair(ts[x], ts[y], G[(size_t)ti[x] * nc + ti[y]]);
                    bst = s > bst ? s : bst;
                }
            result = bst;
        }
        best[item] = result;
    }
    __syncthreads();
    for (uint32_t c = threadIdx.x; c < C; c += blockDim.x) {
        double m = 0.0;
        for (uint32_t p = 0; p < P.n_p; p++)
            m = best[c * P.n_p + p] > m ? best[c * P.n_p + p] : m;
        scores[ch * C + c] = (float)m;
    }
    __syncthreads();
    if (threadIdx.x == 0)
        labels[ch] = iv_answer(scores + ch * C, C);
}

/* ---- small batches: a block per (character, class, position) -------------
 *
 * The same arithmetic as iv_kernel, spread over more blocks:
 *  0. iv_su_kernel, a warp per (character, input position): the sum of the
 *     cell's squares in plane order (iv_kernel's su), once, not once per
 *     class and position that reads it.
 *  1. v^2 of the position: thread j multiplies gather entry j's su by c(nu),
 *     thread 0 adds the products in entry order (iv_kernel's v2 loop).
 *  2. thread i computes plane i's cosine s_i of the class (or none).
 *  3. core's insertion sort keeps the stored floats non-increasing and puts
 *     a later plane i after exactly the earlier planes j with
 *     (double)(float)s_j >= s_i; so plane i's place among every plane is
 *     #{j < i: f_j >= s_i} + #{j > i: f_i < s_j}, and core's top T are the
 *     planes whose place is below T (a full list drops just those past T).
 *     Each thread counts its own place.
 *  4. every pair of the top list, as iv_kernel pairs them, by threads; the
 *     largest (a maximum: any order) with the best single cosine.
 * The label kernel then takes each class's maximum over positions and the
 * answer.  So the scores are iv_kernel's, hence core's, bit for bit. */
/* A warp per (character, input position): the cell's planes to shared
 * memory in coalesced loads (all in flight), lane 0 sums their squares in
 * plane order.  Blocks of IV_ITEM_THREADS, shared [warps][in_stride]. */
static __global__ void __launch_bounds__(IV_ITEM_THREADS)
iv_su_kernel(const iv_params P, const float *__restrict__ in, double *__restrict__ su,
             uint32_t n_cells)
{
    extern __shared__ float srow[];
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint32_t cell = blockIdx.x * (blockDim.x >> 5) + warp;    /* ch * n_i + i */
    if (cell >= n_cells)
        return;                 /* whole warps; no barrier below */
    float *row = srow + (size_t)warp * P.in_stride;
    const float *u = in + (size_t)cell * P.in_stride;
    for (uint32_t kap = lane; kap < P.k_in; kap += 32u)
        row[kap] = __ldg(u + kap);
    __syncwarp();
    if (lane == 0) {
        double s = 0.0;
        for (uint32_t kap = 0; kap < P.k_in; kap++) {
            const double x = (double)row[kap];
            s = __dadd_rn(s, __dmul_rn(x, x));
        }
        su[cell] = s;
    }
}

static __global__ void __launch_bounds__(IV_ITEM_THREADS)
iv_item_kernel(const iv_params P, const double *__restrict__ su, const float *__restrict__ us,
               float *__restrict__ best_out)
{
    extern __shared__ double2 ism[];
    __shared__ double v2_sh;
    __shared__ double red[IV_ITEM_THREADS / 32];
    __shared__ uint32_t n_sh;
    const uint32_t C = P.n_classes, T = P.top_t, tid = threadIdx.x;
    const uint32_t item = blockIdx.x;               /* (ch * C + c) * n_p + p */
    const uint32_t p = item % P.n_p, c = item / P.n_p % C;
    const size_t ch = item / P.n_p / C;
    const uint32_t i0 = P.cls_off[c], nc = P.cls_off[c + 1] - i0;
    const int32_t g0 = P.gat_ptr[p], ng = P.gat_ptr[p + 1] - g0;
    /* a plane's cosine and its float as core stores it, (-1, -1) for a
     * skipped plane and past nc (to a multiple of 8) */
    const uint32_t nc8 = (nc + 7u) & ~7u;
    double2 *sp = ism;                              /* [nc8] */
    double *prod = (double *)(sp + nc8);            /* [ng] */
    float *ts = (float *)(prod + ng);               /* [T] */
    uint32_t *ti = (uint32_t *)(ts + T);            /* [T] */
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();          /* programmatic launch: see neocog_dev.cuh */

    /* 1. v^2 */
    const double *sub = su + ch * P.n_i;
    for (int32_t j = (int32_t)tid; j < ng; j += (int32_t)blockDim.x)
        prod[j] = __dmul_rn((double)P.s_c[P.gat_tap[g0 + j]], sub[P.gat_in[g0 + j]]);
    __syncthreads();
    if (tid == 0) {
        double v2 = 0.0;
        for (int32_t j = 0; j < ng; j++)
            v2 = __dadd_rn(v2, prod[j]);
        v2_sh = v2;
        n_sh = 0;
    }
    __syncthreads();
    const double v2 = v2_sh;
    float result = 0.0f;
    if (v2 > 0.0) {     /* block-uniform */
        /* 2. the class's cosines (-1: the plane is skipped, as core's
         * continue) */
        const double th = P.theta, v = __dsqrt_rn(v2);
        const float *up = us + (ch * P.n_p + p) * P.ks;
        for (uint32_t i = nc + tid; i < nc8; i += blockDim.x)
            sp[i] = make_double2(-1.0, -1.0);
        for (uint32_t i = tid; i < nc; i += blockDim.x) {
            const uint32_t k = P.members[i0 + i];
            const double u = (double)up[k], b = (double)P.b[k];
            double s = -1.0;
            if (u > 0.0 && b > 0.0)
                s = iv_cosine(u, b, th, v);
            sp[i] = make_double2(s, (double)(float)s);
        }
        __syncthreads();
        /* 3. places */
        uint32_t n_valid = 0;
        for (uint32_t i = tid; i < nc; i += blockDim.x) {
            const double si = sp[i].x, fi = sp[i].y;
            if (si < 0.0)
                continue;
            n_valid++;
            /* eight planes a step, loads in flight together and no branch
             * (a skipped plane's -1 never counts: si, fi >= 0) */
            uint32_t place = 0;
            for (uint32_t j0 = 0; j0 < nc8 && place < T; j0 += 8u) {
#pragma unroll
                for (uint32_t q = 0; q < 8u; q++) {
                    const uint32_t j = j0 + q;
                    const double2 e = sp[j];
                    place += j < i ? (uint32_t)(e.y >= si) : (uint32_t)(j > i && fi < e.x);
                }
            }
            if (place < T) {
                ts[place] = (float)fi;
                ti[place] = i;
            }
        }
        if (n_valid)
            atomicAdd(&n_sh, n_valid);      /* a count: exact in any order */
        __syncthreads();
        const uint32_t n = n_sh < T ? n_sh : T;
        /* 4. pairs */
        const float *G = P.gram + P.gram_off[c];
        double bst = n ? (double)ts[0] : 0.0;
        for (uint32_t q = tid; q < n * n; q += blockDim.x) {
            const uint32_t x = q / n, y = q % n;
            if (y <= x)
                continue;
            const double s = iv_pair(ts[x], ts[y], G[(size_t)ti[x] * nc + ti[y]]);
            bst = s > bst ? s : bst;
        }
        for (int o = 16; o > 0; o >>= 1) {
            const double y = __shfl_xor_sync(0xffffffffu, bst, o);
            bst = y > bst ? y : bst;
        }
        if ((tid & 31u) == 0)
            red[tid >> 5] = bst;
        __syncthreads();
        if (tid == 0) {
            for (uint32_t w = 1; w < blockDim.x / 32u; w++)
                bst = red[w] > bst ? red[w] : bst;
            result = (float)bst;    /* float of the largest = the largest float */
        }
    }
    if (tid == 0)
        best_out[item] = result;
}

/* Each class's maximum over positions and the answer, as iv_kernel's end:
 * a block per character reads its C x n_p bests at once into shared
 * memory (dynamic, C * n_p floats). */
static __global__ void iv_label_kernel(const iv_params P, const float *__restrict__ best,
                                       float *__restrict__ scores, int32_t *__restrict__ labels)
{
    extern __shared__ float lb[];
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();
    const uint32_t C = P.n_classes, n = C * P.n_p;
    const size_t ch = blockIdx.x;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
        lb[i] = best[ch * n + i];
    __syncthreads();
    for (uint32_t c = threadIdx.x; c < C; c += blockDim.x) {
        float m = 0.0f;
        for (uint32_t p = 0; p < P.n_p; p++)
            m = lb[c * P.n_p + p] > m ? lb[c * P.n_p + p] : m;
        scores[ch * C + c] = m;
    }
    __syncthreads();
    if (threadIdx.x == 0)
        labels[ch] = iv_answer(scores + ch * C, C);
}

void nc_gpu_neocog_iv_free(nc_gpu_neocog_iv *d)
{
    if (!d)
        return;
    cudaFree(d->mem);
    cudaFree(d->item_best);
    cudaFree(d->item_su);
    free(d);
}

/* Bump-allocate n bytes at 16-byte alignment in a block laid out on the host. */
static size_t take(size_t *off, size_t n)
{
    size_t at = (*off + 15u) & ~(size_t)15u;
    *off = at + n;
    return at;
}

int nc_gpu_neocog_iv_new(const nc_neocog *net, const nc_neocog_iv *iv,
                         nc_gpu_neocog_iv **ret)
{
    nc_neocog_iv_view w;
    if (!net || !iv || !ret || net->arch.n_stages < 2 || nc_neocog_iv_get_view(iv, &w) < 0)
        return -EINVAL;
    const uint32_t l = net->arch.n_stages - 1, K = net->n_planes[l];
    const nc_neocog_index *ix = net->s_ix[l];
    const uint32_t C = w.n_classes;
    if (w.K != K || C != net->arch.n_classes || C < 1 || C > NC_NEOCOG_MAX_CLASSES ||
        w.top_t < 1 || w.top_t > IV_T_MAX || !ix)
        return -EINVAL;
    iv_params P;
    memset(&P, 0, sizeof P);
    P.theta = net->arch.stage[l].theta;     /* as core: const double th = ... */
    P.top_t = w.top_t;
    P.ks = nc_neocog_kstride(K);
    P.n_classes = C;
    P.k_in = nc_neocog_k_in(net, l);
    P.in_stride = nc_neocog_kstride(net->n_planes[l - 1]);
    P.n_i = ix->n_in * ix->n_in;
    P.n_p = ix->n_out * ix->n_out;
    const size_t smem = ((size_t)P.n_i + P.n_p + (size_t)C * P.n_p) * sizeof(double);
    if (smem > 48u * 1024u)
        return -E2BIG;

    /* host image of the tables, then one copy */
    const size_t n_gram = w.gram_off[C];
    size_t off = 0;
    const size_t o_cls = take(&off, (C + 1) * sizeof(uint32_t));
    const size_t o_mem = take(&off, K * sizeof(uint32_t));
    const size_t o_goff = take(&off, (C + 1) * sizeof(unsigned long long));
    const size_t o_gram = take(&off, (n_gram ? n_gram : 1) * sizeof(float));
    const size_t o_b = take(&off, P.ks * sizeof(float));
    const size_t o_sc = take(&off, ix->n_live * sizeof(float));
    const size_t o_gp = take(&off, (P.n_p + 1) * sizeof(int32_t));
    const size_t o_gi = take(&off, (ix->n_entries ? ix->n_entries : 1) * sizeof(int32_t));
    const size_t o_gt = take(&off, (ix->n_entries ? ix->n_entries : 1) * sizeof(int16_t));
    uint8_t *h = (uint8_t *)calloc(1, off);
    nc_gpu_neocog_iv *d = (nc_gpu_neocog_iv *)calloc(1, sizeof *d);
    if (!h || !d) {
        free(h);
        free(d);
        return -ENOMEM;
    }
    memcpy(h + o_cls, w.cls_off, (C + 1) * sizeof(uint32_t));
    memcpy(h + o_mem, w.members, K * sizeof(uint32_t));
    for (uint32_t c = 0; c <= C; c++)
        ((unsigned long long *)(h + o_goff))[c] = w.gram_off[c];
    memcpy(h + o_gram, w.gram, n_gram * sizeof(float));
    memcpy(h + o_b, net->b[l], P.ks * sizeof(float));
    memcpy(h + o_sc, net->s_c[l], ix->n_live * sizeof(float));
    memcpy(h + o_gp, ix->gat_ptr, (P.n_p + 1) * sizeof(int32_t));
    memcpy(h + o_gi, ix->gat_in, ix->n_entries * sizeof(int32_t));
    memcpy(h + o_gt, ix->gat_tap, ix->n_entries * sizeof(int16_t));
    int r = 0;
    cudaError_t ce = cudaMalloc(&d->mem, off);
    if (ce == cudaSuccess)
        ce = cudaMemcpy(d->mem, h, off, cudaMemcpyHostToDevice);
    if (ce != cudaSuccess)
        r = nc_gpu_record_error(ce, "iv tables to the device", __func__, __FILE__, __LINE__);
    free(h);
    if (r < 0) {
        nc_gpu_neocog_iv_free(d);
        return r;
    }
    uint8_t *m = (uint8_t *)d->mem;
    P.cls_off = (const uint32_t *)(m + o_cls);
    P.members = (const uint32_t *)(m + o_mem);
    P.gram_off = (const unsigned long long *)(m + o_goff);
    P.gram = (const float *)(m + o_gram);
    P.b = (const float *)(m + o_b);
    P.s_c = (const float *)(m + o_sc);
    P.gat_ptr = (const int32_t *)(m + o_gp);
    P.gat_in = (const int32_t *)(m + o_gi);
    P.gat_tap = (const int16_t *)(m + o_gt);
    d->p = P;
    d->smem = smem;
    /* the small-batch kernels' scratch and shared memory (off, and the
     * block per character for every batch, when a class's lists would not
     * fit 48 KB) */
    for (uint32_t c = 0; c < C; c++)
        d->max_class = w.cls_off[c + 1] - w.cls_off[c] > d->max_class
                           ? w.cls_off[c + 1] - w.cls_off[c] : d->max_class;
    for (uint32_t p = 0; p < P.n_p; p++)
        d->max_gather = (uint32_t)(ix->gat_ptr[p + 1] - ix->gat_ptr[p]) > d->max_gather
                            ? (uint32_t)(ix->gat_ptr[p + 1] - ix->gat_ptr[p]) : d->max_gather;
    d->item_smem = (size_t)((d->max_class + 7u) & ~7u) * sizeof(double2) +
                   (size_t)d->max_gather * sizeof(double) + (size_t)P.top_t * 2u * sizeof(float);
    if (d->item_smem <= 48u * 1024u &&
        (size_t)(IV_ITEM_THREADS / 32u) * P.in_stride * sizeof(float) <= 48u * 1024u) {
        ce = cudaMalloc((void **)&d->item_best,
                        (size_t)IV_ITEM_BATCH * C * P.n_p * sizeof(float));
        if (ce == cudaSuccess)
            ce = cudaMalloc((void **)&d->item_su, (size_t)IV_ITEM_BATCH * P.n_i * sizeof(double));
        if (ce != cudaSuccess) {
            r = nc_gpu_record_error(ce, "iv scratch", __func__, __FILE__, __LINE__);
            nc_gpu_neocog_iv_free(d);
            return r;
        }
    }
    /* one thread per (class, position) item in one stride, in whole warps */
    const uint32_t items = C * P.n_p > P.n_i ? C * P.n_p : P.n_i;
    d->threads = items >= 512u ? 512u : (items + 31u) & ~31u;
    *ret = d;
    return 0;
}

int nc_gpu_neocog_iv_classify(const nc_gpu_neocog_iv *d, const float *in, const float *us,
                              float *scores, int32_t *labels, uint32_t batch,
                              cudaStream_t stream)
{
    if (!d || !in || !us || !scores || !labels || batch < 1 || batch > 0x7fffffffu)
        return -EINVAL;
    const uint32_t T = d->p.top_t;
    const size_t n_items = (size_t)batch * d->p.n_classes * d->p.n_p;
    if (batch <= IV_ITEM_BATCH && d->item_best && n_items <= 0x7fffffffu) {
        const uint32_t n_cells = batch * d->p.n_i, wpb = IV_ITEM_THREADS / 32u;
        NC_CUDA_CHECK(nc_dev_launch(iv_su_kernel, dim3((n_cells + wpb - 1) / wpb),
                                    dim3(IV_ITEM_THREADS),
                                    (size_t)wpb * d->p.in_stride * sizeof(float), stream, batch,
                                    d->p, in, d->item_su, n_cells));
        NC_CUDA_CHECK(nc_dev_launch(iv_item_kernel, dim3((unsigned)n_items),
                                    dim3(IV_ITEM_THREADS), d->item_smem, stream, batch, d->p,
                                    (const double *)d->item_su, us, d->item_best));
        NC_CUDA_CHECK(nc_dev_launch(iv_label_kernel, dim3(batch), dim3(IV_ITEM_THREADS),
                                    (size_t)d->p.n_classes * d->p.n_p * sizeof(float), stream,
                                    batch, d->p, (const float *)d->item_best, scores, labels));
        return 0;
    }
    if (T <= IV_T_SMALL)
        NC_CUDA_CHECK(nc_dev_launch(iv_kernel<IV_T_SMALL>, dim3(batch), dim3(d->threads),
                                    d->smem, stream, batch, d->p, in, us, scores, labels));
    else if (T <= IV_T_MID)
        NC_CUDA_CHECK(nc_dev_launch(iv_kernel<IV_T_MID>, dim3(batch), dim3(d->threads),
                                    d->smem, stream, batch, d->p, in, us, scores, labels));
    else
        NC_CUDA_CHECK(nc_dev_launch(iv_kernel<IV_T_MAX>, dim3(batch), dim3(d->threads),
                                    d->smem, stream, batch, d->p, in, us, scores, labels));
    return 0;
}

/* core/cnn/cnn_blas.c — the CNN on CBLAS: seed 001's unrolled convolution (its GPU
 * twin is gpu/cnn/cnn_blas.cu).
 *
 * Layer: core.  Computes what the reference (cnn_conv.c, cnn_pool.c,
 * cnn_full.c, walked by cnn_forward.c / cnn_backward.c) specifies, with
 * each layer's work over the whole batch turned into matrix products:
 *
 *   convolution   U[K][n*P]  = unroll(x)        K = in_maps*ky*kx, P = h*w
 *                 Y[M][n*P]  = W[M][K] . U      (seed 001 eq. 1)
 *                 dW[M][K]  += dA . U^T         (eq. 3)
 *                 dU[K][n*P] = W^T . dA,  dx = roll-back of dU (eq. 2)
 *   fully conn.   Y[n][N]    = X[n][K] . W^T,  dW = dA^T . X,  dX = dA . W
 *
 * Activations are kept map-major on this path, act[l][map][image][y][x], so
 * that a convolution's output matrix Y *is* the next layer's input, every
 * unrolled row is a run of contiguous copies, and the images of a batch sit
 * side by side along the long dimension of one product.  The unrolled matrix
 * is built `chunk` images at a time (columns b0*P .. of the same product, via
 * the leading dimension), which keeps it in L2 for large batches; chunk 0
 * unrolls the whole batch at once.  Kernels of cut map pairs are zero, so a
 * dense product computes a partial connection table exactly.
 *
 * OpenBLAS's own threading is left to the caller (openblas_set_num_threads);
 * core starts no threads. */
#include "cnn_internal.h"

#include <cblas.h>
#include <limits.h>
#include <string.h>

/* ---- activation ---------------------------------------------------------- */

/* y = A tanh(S (y + bias)) over a run of floats.  tanh is Eigen's rational
 * approximation (degree 13 / 6 on [-7.9053, 7.9053], clamped outside, where
 * float tanh is +-1): within 1e-6 of A tanh (the tests hold it there) and,
 * unlike libm's, vectorisable.  GCC will not if-convert the clamp of a
 * plain loop (NaN and signed-zero rules), so the body is written once on
 * four-float vectors (GCC/Clang vector extensions: SSE on x86-64, NEON on
 * ARM) with the clamp as a bitwise select, and once on scalars for the
 * tail; both do the same operations in the same order. */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

/* On x86-64 with GCC, act_run is also compiled for AVX2 and picked at load
 * time (ifunc): the build targets baseline x86-64 (SSE2), and the eight-wide
 * vectors below then run as one AVX register instead of two SSE ones. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define NC_CNN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define NC_CNN_CLONES
#endif

#define TANH_CLAMP 7.90531110763549805f
#define TANH_RATIONAL(a, a2, p, q) do {                          \
        p = -2.76076847742355e-16f * a2 + 2.00018790482477e-13f; \
        p = p * a2 + -8.60467152213735e-11f;                     \
        p = p * a2 + 5.12229709037114e-08f;                      \
        p = p * a2 + 1.48572235717979e-05f;                      \
        p = p * a2 + 6.37261928875436e-04f;                      \
        p = p * a2 + 4.89352455891786e-03f;                      \
        q = 1.19825839466702e-06f * a2 + 1.18534705686654e-04f;  \
        q = q * a2 + 2.26843463243900e-03f;                      \
        q = q * a2 + 4.89352518554385e-03f;                      \
    } while (0)

static inline v4f v4_select(v4i mask, v4f a, v4f b)
{
    return (v4f)(((v4i)a & mask) | ((v4i)b & ~mask));
}

#define V8_SELECT(mask, a, b) ((v8f)(((v8i)(a) & (mask)) | ((v8i)(b) & ~(mask))))

NC_CNN_CLONES
static void tanh_run(float *y, size_t len, float bias)
{
    const v8f vb = { bias, bias, bias, bias, bias, bias, bias, bias };
    const v8f vs = { NC_CNN_TANH_S, NC_CNN_TANH_S, NC_CNN_TANH_S, NC_CNN_TANH_S,
                     NC_CNN_TANH_S, NC_CNN_TANH_S, NC_CNN_TANH_S, NC_CNN_TANH_S };
    const v8f va = { NC_CNN_TANH_A, NC_CNN_TANH_A, NC_CNN_TANH_A, NC_CNN_TANH_A,
                     NC_CNN_TANH_A, NC_CNN_TANH_A, NC_CNN_TANH_A, NC_CNN_TANH_A };
    const v8f hi = { TANH_CLAMP, TANH_CLAMP, TANH_CLAMP, TANH_CLAMP,
                     TANH_CLAMP, TANH_CLAMP, TANH_CLAMP, TANH_CLAMP };
    const v8f lo = -hi;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        v8f a, a2, p, q;
        memcpy(&a, y + i, sizeof a);
        a = vs * (a + vb);
        a = V8_SELECT(a > lo, a, lo);
        a = V8_SELECT(a < hi, a, hi);
        a2 = a * a;
        TANH_RATIONAL(a, a2, p, q);
        a = va * (a * p / q);
        memcpy(y + i, &a, sizeof a);
    }
    for (; i < len; i++) {
        float a = NC_CNN_TANH_S * (y[i] + bias), a2, p, q;
        a = a > -TANH_CLAMP ? a : -TANH_CLAMP;
        a = a < TANH_CLAMP ? a : TANH_CLAMP;
        a2 = a * a;
        TANH_RATIONAL(a, a2, p, q);
        y[i] = NC_CNN_TANH_A * (a * p / q);
    }
}

/* y = f(y + bias) over a run, f the layer's activation (cnn.h). */
static void act_run(float *y, size_t len, float bias, uint32_t act)
{
    if (act == NC_CNN_ACT_NONE) {
        for (size_t i = 0; i < len; i++)
            y[i] += bias;
        return;
    }
    if (act != NC_CNN_ACT_RELU) {
        tanh_run(y, len, bias);
        return;
    }
    for (size_t i = 0; i < len; i++) {
        float a = y[i] + bias;
        y[i] = a > 0.0f ? a : 0.0f;
    }
}

/* dE/da = dE/dy * f'(y) over a run. */
static void act_grad_run(float *dy, const float *y, size_t len, uint32_t act)
{
    for (size_t i = 0; i < len; i++)
        dy[i] *= nc_cnn_act_grad(y[i], act);
}

/* The same where only the pre-activation a (bias not yet added) was kept:
 * y = f(a + bias) is recomputed a block at a time. */
static void act_grad_pre_run(float *dy, const float *a, size_t len, float bias,
                             uint32_t act)
{
    float y[256];
    for (size_t i0 = 0; i0 < len; i0 += 256) {
        size_t k = len - i0 < 256 ? len - i0 : 256;
        memcpy(y, a + i0, k * sizeof(float));
        act_run(y, k, bias, act);
        act_grad_run(dy + i0, y, k, act);
    }
}

/* A convolution followed by max-pooling is activated after the pooling:
 * f never decreases (tanh or the rectifier) and the bias is the same over
 * a map, so max f(a + b) = f(max a + b), with a quarter (MP2) or a ninth
 * (MP3) of the evaluations of f.  The convolution's act[] then holds the raw products a;
 * the pooling applies the convolution's bias and f; the backward pass
 * recomputes f(a + b) where it needs f'.  (Ties in f that are not ties in a,
 * at saturation, may pick another maximum than the reference; f' is ~0
 * there, and exactly 0 for a rectified unit that is off.) */
static int pool_fused(const nc_cnn *net, uint32_t l)
{
    /* not for a normalised convolution: gamma may be negative, and its
       statistics need every sum anyway */
    return net->layers[l].kind == NC_CNN_KIND_CONV && !net->layers[l].norm &&
           l + 1 < net->n_layers &&
           net->layers[l + 1].kind == NC_CNN_KIND_POOL;
}

/* ---- unrolling ------------------------------------------------------------- */

/* Where the input map c of image b starts: src + c * cs + b * bs.  The first
 * layer reads the caller's image-major input (cs = h*w, bs = maps*h*w); later
 * ones read map-major activations (cs = n*h*w, bs = h*w). */
typedef struct src_map {
    const float *p;
    size_t cs, bs;
} src_map;

static src_map layer_src(const nc_cnn *net, const nc_cnn_work *w, uint32_t l,
                         const float *in, uint32_t n)
{
    const nc_cnn_layer *P = &net->layers[l - 1];
    size_t plane = (size_t)P->height * P->width;
    if (l == 1)
        return (src_map){ in, plane, P->n_out };
    return (src_map){ w->act[l - 1], (size_t)n * plane, plane };
}

/* U[(c*ky + i)*kx + j][bb*P + oy*w + ox] = x_{b0+bb}[c][oy*step_y + i][ox*step_x + j]
 * for images b0 .. b0+cb-1: the row order matches the kernel layout
 * [m][c][i][j], so W[M][K] multiplies U directly. */
NC_CNN_CLONES
static void unroll(const nc_cnn_layer *L, const nc_cnn_layer *P, src_map s,
                   uint32_t b0, uint32_t cb, float *U)
{
    const uint32_t kx = L->kernel_x, ky = L->kernel_y, ow = L->width, oh = L->height;
    const uint32_t step_x = L->skip_x + 1, step_y = L->skip_y + 1, in_w = P->width;
    const size_t ld = (size_t)cb * oh * ow;
    for (uint32_t c = 0; c < P->maps; c++)
        for (uint32_t i = 0; i < ky; i++)
            for (uint32_t j = 0; j < kx; j++) {
                float *row = U + (((size_t)c * ky + i) * kx + j) * ld;
                for (uint32_t bb = 0; bb < cb; bb++) {
                    const float *x = s.p + c * s.cs + (b0 + bb) * s.bs + (size_t)i * in_w + j;
                    for (uint32_t oy = 0; oy < oh; oy++, row += ow) {
                        const float *xr = x + (size_t)oy * step_y * in_w;
                        /* runs are short (9 floats in the column's
                           second layer): a loop, not a memcpy call */
                        if (step_x == 1)
                            for (uint32_t ox = 0; ox < ow; ox++)
                                row[ox] = xr[ox];
                        else
                            for (uint32_t ox = 0; ox < ow; ox++)
                                row[ox] = xr[(size_t)ox * step_x];
                    }
                }
            }
}

/* The transpose of unroll: dx_{b0+bb}[c][..] += dU[row][col] (dx map-major,
 * the layout of act[l-1] on this path, zeroed by the caller). */
static void roll_back_add(const nc_cnn_layer *L, const nc_cnn_layer *P, float *dx,
                          size_t cs, size_t bs, uint32_t b0, uint32_t cb, const float *dU)
{
    const uint32_t kx = L->kernel_x, ky = L->kernel_y, ow = L->width, oh = L->height;
    const uint32_t step_x = L->skip_x + 1, step_y = L->skip_y + 1, in_w = P->width;
    const size_t ld = (size_t)cb * oh * ow;
    for (uint32_t c = 0; c < P->maps; c++)
        for (uint32_t i = 0; i < ky; i++)
            for (uint32_t j = 0; j < kx; j++) {
                const float *row = dU + (((size_t)c * ky + i) * kx + j) * ld;
                for (uint32_t bb = 0; bb < cb; bb++) {
                    float *x = dx + c * cs + (b0 + bb) * bs + (size_t)i * in_w + j;
                    for (uint32_t oy = 0; oy < oh; oy++, row += ow) {
                        float *xr = x + (size_t)oy * step_y * in_w;
                        for (uint32_t ox = 0; ox < ow; ox++)
                            xr[(size_t)ox * step_x] += row[ox];
                    }
                }
            }
}

/* ---- layers, forward ------------------------------------------------------- */

static void conv_forward_blas(const nc_cnn_layer *L, const nc_cnn_layer *P, src_map s,
                              nc_cnn_work *w, uint32_t n, float *y, int fused)
{
    const size_t plane = (size_t)L->height * L->width, ld = (size_t)n * plane;
    const uint32_t chunk = w->chunk ? w->chunk : n;
    for (uint32_t b0 = 0; b0 < n; b0 += chunk) {
        uint32_t cb = n - b0 < chunk ? n - b0 : chunk;
        size_t cols = (size_t)cb * plane;
        unroll(L, P, s, b0, cb, w->unroll);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                    (int)L->maps, (int)cols, (int)L->fan_in,
                    1.0f, L->weights, (int)L->fan_in, w->unroll, (int)cols,
                    0.0f, y + b0 * plane, (int)ld);
        if (!fused)
            for (uint32_t m = 0; m < L->maps; m++)
                act_run(y + m * ld + b0 * plane, cols, L->bias[m], nc_cnn_sum_act(L));
    }
}

/* A normalised layer's sums y (bias added, laid out as r says) standardised
 * over the batch, then activated. */
static void norm_act_blas(const nc_cnn_layer *L, nc_cnn_work *w, uint32_t l, float *y,
                          uint32_t n, nc_cnn_runs r)
{
    nc_cnn_norm_forward(L, y, n, r, w->xhat[l], w->nstat[l]);
    act_run(y, (size_t)n * L->n_out, 0.0f, L->act);
}

/* Max-pooling, map-major out: y[m][b][oy][ox].  For each output row, the
 * ky input rows are first reduced element by element (four at a time), then
 * each run of kx of that row to one value. */
static void pool_forward_blas(const nc_cnn_layer *L, const nc_cnn_layer *P, src_map s,
                              uint32_t n, float *y, float *rowmax, const nc_cnn_layer *conv)
{
    const uint32_t kx = L->kernel_x, ky = L->kernel_y, ow = L->width, oh = L->height;
    const uint32_t in_w = P->width;
    for (uint32_t m = 0; m < L->maps; m++)
        for (uint32_t b = 0; b < n; b++) {
            const float *x = s.p + m * s.cs + b * s.bs;
            float *ym = y + ((size_t)m * n + b) * oh * ow;
            for (uint32_t oy = 0; oy < oh; oy++) {
                const float *xr = x + (size_t)oy * ky * in_w;
                memcpy(rowmax, xr, in_w * sizeof(float));
                for (uint32_t i = 1; i < ky; i++) {
                    const float *xi = xr + (size_t)i * in_w;
                    uint32_t j = 0;
                    for (; j + 4 <= in_w; j += 4) {
                        v4f a, v;
                        memcpy(&a, rowmax + j, sizeof a);
                        memcpy(&v, xi + j, sizeof v);
                        a = v4_select(v > a, v, a);
                        memcpy(rowmax + j, &a, sizeof a);
                    }
                    for (; j < in_w; j++)
                        rowmax[j] = xi[j] > rowmax[j] ? xi[j] : rowmax[j];
                }
                for (uint32_t ox = 0; ox < ow; ox++) {
                    const float *r = rowmax + (size_t)ox * kx;
                    float best = r[0];
                    for (uint32_t j = 1; j < kx; j++)
                        best = r[j] > best ? r[j] : best;
                    ym[(size_t)oy * ow + ox] = best;
                }
            }
            if (conv)
                act_run(ym, (size_t)oh * ow, conv->bias[m], conv->act);
        }
}

/* A fully connected layer's input as an [n][n_in] matrix: the caller's
 * input, the previous FULL layer's output, or a map-major layer gathered
 * image-major into w->fcin. */
static const float *full_input(const nc_cnn *net, nc_cnn_work *w, uint32_t l,
                               const float *in, uint32_t n, int gather)
{
    const nc_cnn_layer *P = &net->layers[l - 1];
    if (l == 1)
        return in;
    if (P->kind == NC_CNN_KIND_FULL)
        return w->act[l - 1];
    if (gather) {
        const size_t plane = (size_t)P->height * P->width;
        for (uint32_t c = 0; c < P->maps; c++)
            for (uint32_t b = 0; b < n; b++)
                memcpy(w->fcin + (size_t)b * P->n_out + c * plane,
                       w->act[l - 1] + ((size_t)c * n + b) * plane, plane * sizeof(float));
    }
    return w->fcin;
}

static void full_forward_blas(const nc_cnn_layer *L, const float *x, uint32_t n, float *y)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                (int)n, (int)L->maps, (int)L->n_in,
                1.0f, x, (int)L->n_in, L->weights, (int)L->n_in,
                0.0f, y, (int)L->maps);
    for (uint32_t b = 0; b < n; b++)
        for (uint32_t u = 0; u < L->maps; u++)
            act_run(y + (size_t)b * L->maps + u, 1, L->bias[u], nc_cnn_sum_act(L));
}

/* Every matrix dimension and leading dimension must fit CBLAS's int. */
static int blas_sizes_ok(const nc_cnn *net, const nc_cnn_work *w, uint32_t n)
{
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        uint32_t chunk = w->chunk ? w->chunk : n;
        if ((uint64_t)n * L->n_out > INT_MAX || (uint64_t)n * L->n_in > INT_MAX ||
            (uint64_t)chunk * L->fan_in * L->height * L->width > INT_MAX)
            return -ERANGE;
    }
    return 0;
}

int nc_cnn_forward_blas(const nc_cnn *net, nc_cnn_work *w,
                        const float *in, uint32_t n, float *out)
{
    int err = nc_cnn_work_check(net, w, n);
    if (err)
        return err;
    if (!in)
        return -EINVAL;
    if ((err = blas_sizes_ok(net, w, n)))
        return err;
    w->state = NC_CNN_STATE_NONE;
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        const nc_cnn_layer *P = &net->layers[l - 1];
        switch (L->kind) {
        case NC_CNN_KIND_CONV:
            conv_forward_blas(L, P, layer_src(net, w, l, in, n), w, n, w->act[l],
                              pool_fused(net, l));
            if (L->norm) {
                const uint32_t plane = L->height * L->width;
                norm_act_blas(L, w, l, w->act[l], n,
                              (nc_cnn_runs){ (size_t)n * plane, plane, plane });
            }
            break;
        case NC_CNN_KIND_POOL:
            /* a pooling layer's input row is scratch-sized: borrow delta[0],
               which only a backward pass uses */
            pool_forward_blas(L, P, layer_src(net, w, l, in, n), n, w->act[l], w->delta[0],
                              pool_fused(net, l - 1) ? P : NULL);
            break;
        case NC_CNN_KIND_FULL:
            full_forward_blas(L, full_input(net, w, l, in, n, 1), n, w->act[l]);
            if (L->norm)
                norm_act_blas(L, w, l, w->act[l], n, (nc_cnn_runs){ 1, L->maps, 1 });
            break;
        default:
            return -EINVAL;
        }
        if (w->hook)
            w->hook(w->hook_ctx, l);
    }
    if (out)
        memcpy(out, w->act[net->n_layers - 1], (size_t)n * net->n_outputs * sizeof(float));
    w->state = NC_CNN_STATE_BLAS;
    w->state_n = n;
    w->state_in = in;
    return 0;
}

int nc_cnn_committee_forward(const nc_cnn *const *nets, uint32_t n_nets,
                             nc_cnn_work *w, const float *in, uint32_t n, float *out)
{
    if (!nets || n_nets < 1 || !out)
        return -EINVAL;
    for (uint32_t i = 0; i < n_nets; i++) {
        int err = nc_cnn_work_check(nets[i], w, n);
        if (err)
            return err;
        if (nets[i]->n_inputs != nets[0]->n_inputs ||
            nets[i]->n_outputs != nets[0]->n_outputs || nets[i]->width_norm ||
            nc_cnn_norm_layers(nets[i]))
            return -EINVAL;
    }
    const size_t len = (size_t)n * nets[0]->n_outputs;
    for (uint32_t i = 0; i < n_nets; i++) {
        int err = nc_cnn_forward_blas(nets[i], w, in, n, NULL);
        if (err)
            return err;
        const float *y = w->act[nets[i]->n_layers - 1];
        for (size_t k = 0; k < len; k++)
            w->out[k] = (i ? w->out[k] : 0.0f) + y[k];
    }
    for (size_t k = 0; k < len; k++)
        out[k] = w->out[k] / (float)n_nets;
    w->state = NC_CNN_STATE_NONE;   /* activations are the last column's only */
    return 0;
}

/* ---- layers, backward ------------------------------------------------------ */

/* Zero the gradient of every kernel the table cuts (the dense products gave
 * them one). */
static void mask_grads(const nc_cnn_layer *L, uint32_t in_maps, float *gw)
{
    const size_t ksize = (size_t)L->kernel_x * L->kernel_y;
    for (uint32_t m = 0; m < L->maps; m++)
        for (uint32_t c = 0; c < in_maps; c++)
            if (!L->table[(size_t)m * in_maps + c])
                memset(gw + ((size_t)m * in_maps + c) * ksize, 0, ksize * sizeof(float));
}

/* dy: [M][n*P] map-major, turned into dE/da in place. */
static void conv_backward_blas(const nc_cnn_layer *L, const nc_cnn_layer *P, src_map s,
                               nc_cnn_work *w, uint32_t l, uint32_t n, const float *y,
                               float *dy, float *dx, float *gw, float *gb, float *gnorm,
                               int fused)
{
    const size_t plane = (size_t)L->height * L->width, ld = (size_t)n * plane;
    const uint32_t chunk = w->chunk ? w->chunk : n;
    for (uint32_t m = 0; m < L->maps; m++) {
        if (fused)
            act_grad_pre_run(dy + m * ld, y + m * ld, ld, L->bias[m], L->act);
        else
            act_grad_run(dy + m * ld, y + m * ld, ld, L->act);
    }
    if (L->norm)
        nc_cnn_norm_backward(L, dy, n, (nc_cnn_runs){ ld, plane, (uint32_t)plane }, w->xhat[l],
                             w->nstat[l], gnorm, gnorm + L->maps);
    for (uint32_t m = 0; m < L->maps; m++) {
        const float *da = dy + m * ld;
        double sum = 0.0;
        for (size_t j = 0; j < ld; j++)
            sum += da[j];
        gb[m] = (float)sum;
    }
    const size_t in_plane = (size_t)P->height * P->width;
    if (dx)
        memset(dx, 0, (size_t)n * P->n_out * sizeof(float));
    for (uint32_t b0 = 0; b0 < n; b0 += chunk) {
        uint32_t cb = n - b0 < chunk ? n - b0 : chunk;
        size_t cols = (size_t)cb * plane;
        unroll(L, P, s, b0, cb, w->unroll);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                    (int)L->maps, (int)L->fan_in, (int)cols,
                    1.0f, dy + b0 * plane, (int)ld, w->unroll, (int)cols,
                    b0 ? 1.0f : 0.0f, gw, (int)L->fan_in);
        if (dx) {
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans,
                        (int)L->fan_in, (int)cols, (int)L->maps,
                        1.0f, L->weights, (int)L->fan_in, dy + b0 * plane, (int)ld,
                        0.0f, w->unroll, (int)cols);
            roll_back_add(L, P, dx, (size_t)n * in_plane, in_plane, b0, cb, w->unroll);
        }
    }
    mask_grads(L, P->maps, gw);
}

/* Max-pooling on map-major x, dx: [maps][n][h*ky][w*kx]. */
static void pool_backward_blas(const nc_cnn_layer *L, const nc_cnn_layer *P,
                               const float *x, uint32_t n, const float *dy, float *dx)
{
    const uint32_t kx = L->kernel_x, ky = L->kernel_y, ow = L->width, oh = L->height;
    const uint32_t in_w = P->width;
    const size_t in_plane = (size_t)P->height * in_w;
    memset(dx, 0, (size_t)n * P->n_out * sizeof(float));
    for (uint32_t m = 0; m < L->maps; m++)
        for (uint32_t b = 0; b < n; b++) {
            const float *xm = x + ((size_t)m * n + b) * in_plane;
            float *dxm = dx + ((size_t)m * n + b) * in_plane;
            const float *dym = dy + ((size_t)m * n + b) * oh * ow;
            for (uint32_t oy = 0; oy < oh; oy++)
                for (uint32_t ox = 0; ox < ow; ox++) {
                    size_t arg = (size_t)oy * ky * in_w + (size_t)ox * kx;
                    for (uint32_t i = 0; i < ky; i++)
                        for (uint32_t j = 0; j < kx; j++) {
                            size_t xi = (size_t)(oy * ky + i) * in_w + ox * kx + j;
                            if (xm[xi] > xm[arg])
                                arg = xi;
                        }
                    dxm[arg] += dym[(size_t)oy * ow + ox];
                }
        }
}

int nc_cnn_backward_blas(const nc_cnn *net, nc_cnn_work *w, const float *in,
                         uint32_t n, const float *d_out, float *grads)
{
    int err = nc_cnn_work_check(net, w, n);
    if (err)
        return err;
    if (!in || !d_out || !grads || w->state != NC_CNN_STATE_BLAS ||
        w->state_n != n || w->state_in != in)
        return -EINVAL;
    memset(grads, 0, net->n_params * sizeof(float));
    float *dy = w->delta[0], *dx = w->delta[1];
    memcpy(dy, d_out, (size_t)n * net->n_outputs * sizeof(float));
    for (uint32_t l = net->n_layers - 1; l >= 1; l--) {
        const nc_cnn_layer *L = &net->layers[l];
        const nc_cnn_layer *P = &net->layers[l - 1];
        float *dxl = l > 1 ? dx : NULL;
        float *gw = L->weights ? grads + (L->weights - net->params) : NULL;
        float *gb = L->bias ? grads + (L->bias - net->params) : NULL;
        float *gnorm = L->norm ? grads + (L->gamma - net->params) : NULL;  /* then beta */
        switch (L->kind) {
        case NC_CNN_KIND_CONV:
            conv_backward_blas(L, P, layer_src(net, w, l, in, n), w, l, n, w->act[l], dy, dxl,
                               gw, gb, gnorm, pool_fused(net, l));
            break;
        case NC_CNN_KIND_POOL:
            if (dxl)
                pool_backward_blas(L, P, w->act[l - 1], n, dy, dxl);
            break;
        case NC_CNN_KIND_FULL: {
            const size_t len = (size_t)n * L->maps;
            act_grad_run(dy, w->act[l], len, L->act);
            if (L->norm)
                nc_cnn_norm_backward(L, dy, n, (nc_cnn_runs){ 1, L->maps, 1 }, w->xhat[l],
                                     w->nstat[l], gnorm, gnorm + L->maps);
            for (uint32_t u = 0; u < L->maps; u++) {
                double sum = 0.0;
                for (uint32_t b = 0; b < n; b++)
                    sum += dy[(size_t)b * L->maps + u];
                gb[u] = (float)sum;
            }
            const float *x = full_input(net, w, l, in, n, 0);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans,
                        (int)L->maps, (int)L->n_in, (int)n,
                        1.0f, dy, (int)L->maps, x, (int)L->n_in,
                        0.0f, gw, (int)L->n_in);
            if (!dxl)
                break;
            /* dX[n][n_in] = dA . W; straight into dx for a FULL below, else
               into fcin (its forward contents are used up) and scattered
               map-major */
            float *dX = P->kind == NC_CNN_KIND_FULL ? dxl : w->fcin;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans,
                        (int)n, (int)L->n_in, (int)L->maps,
                        1.0f, dy, (int)L->maps, L->weights, (int)L->n_in,
                        0.0f, dX, (int)L->n_in);
            if (P->kind != NC_CNN_KIND_FULL) {
                const size_t plane = (size_t)P->height * P->width;
                for (uint32_t c = 0; c < P->maps; c++)
                    for (uint32_t b = 0; b < n; b++)
                        memcpy(dxl + ((size_t)c * n + b) * plane,
                               dX + (size_t)b * P->n_out + c * plane, plane * sizeof(float));
            }
            break;
        }
        default:
            return -EINVAL;
        }
        float *t = dy;
        dy = dx;
        dx = t;
    }
    return 0;
}

int nc_cnn_train_step(nc_cnn *net, nc_cnn_work *w, const float *in,
                      const uint8_t *labels, uint32_t n, float lr, double *ret_loss)
{
    if (!labels || !isfinite(lr))
        return -EINVAL;
    int err = nc_cnn_forward_blas(net, w, in, n, NULL);
    if (err)
        return err;
    double loss;
    if ((err = nc_cnn_loss(net, w->act[net->n_layers - 1], labels, n, w->out, &loss, NULL)) ||
        (err = nc_cnn_backward_blas(net, w, in, n, w->out, w->grads)) ||
        (err = nc_cnn_sgd(net, w->grads, lr)))
        return err;
    if (ret_loss)
        *ret_loss = loss;
    return 0;
}

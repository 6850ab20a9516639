/* tests/gpu/test_ops.c — one parity harness for the per-op GPU kernels of
 * both networks, driven by a table of ops over a grid of shapes (in the
 * manner of ggml's test-backend-ops).
 *
 * Each op says how to list its shapes, make a case's inputs, run core/'s
 * reference and run the GPU kernel; the driver poisons the device output
 * with NaN, compares, and prints one line a case on stdout:
 *     op  shape  max_abs_err  rel  tol  PASS | FAIL | SKIP
 * (SKIP: a kernel refused the shape before queueing anything, as it may).
 * The exit status is 1 on any failure, 77 without a device.  Options:
 * --list (the ops and their case counts), --op NAME (one op only), --dry
 * (no device: each case's inputs and core's reference only, with the share
 * of its cells that are non-zero, so a grid that leaves a layer silent
 * shows).  Inputs come from a fixed seed per (op, case), so one op alone
 * sees the same ones.
 *
 * Tolerances are the ones of the tests these cases came from: the
 * neocognitron's layers ||gpu - cpu|| / ||cpu|| <= 1e-5 with no NaN and
 * the occupancy map each kernel writes matching its output
 * (test_neocog.c); the CNN's layers 1e-4 both as ||gpu - ref|| / ||ref||
 * and as max |gpu - ref| / max |ref| (test_cnn.c); list building exact
 * (sums of squares to 1e-6); deformations max |gpu - cpu| <= 1e-4 a pixel,
 * none bit for bit (test_deform.c).
 *
 * To add an op: write its grid function (fill the shapes, return how
 * many), its make (inputs into c->priv), cpu (core's answer into c->ref,
 * c->count floats) and gpu (the kernel's into c->got; return 0, or the
 * kernel's refusal and set c->skip), an optional fini, and add a row to
 * ops[] at the bottom.  Extra checks (occupancy, labels) call extra_fail().
 *
 * Over 800 lines on purpose: the point is one table of every op, and each
 * op's grid, inputs and two runs are short functions beside its row's
 * neighbours; split by network, the driver and the poisoning would be
 * repeated. */
#include "test.h"
#include "gpu_test.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cnn.h"
#include "cnn_act.cuh"
#include "cnn_blas.cuh"
#include "cnn_conv.cuh"
#include "cnn_full.cuh"
#include "cnn_internal.h"
#include "cnn_layer.h"
#include "cnn_norm.cuh"
#include "cnn_pool.cuh"
#include "deform.cuh"
#include "deform.h"
#include "device.h"
#include "neocog.h"
#include "neocog_c.cuh"
#include "neocog_class.cuh"
#include "neocog_g.cuh"
#include "neocog_geom.h"
#include "neocog_list.cuh"
#include "neocog_occ.cuh"
#include "neocog_s.cuh"
#include "neocog_s_gemm.cuh"

#define LEN(a) (sizeof(a) / sizeof *(a))
#define NEO_TOL 1e-5
#define CNN_TOL 1e-4
#define POOL 37         /* distinct characters a neocognitron case tiles (b mod POOL) */
#define MAX_SHAPES 4096

/* ---- the table's types ------------------------------------------------------ */

/* One point of an op's grid: what each field means is the op's own. */
typedef struct op_shape {
    int32_t a, b, c, d, e, f;
    uint32_t batch;
} op_shape;

enum { CMP_NEO, CMP_CNN, CMP_EXACT, CMP_ABS };

typedef struct op_ctx {
    const op_shape *sh;
    size_t index;               /* the case's place in its op's grid */
    nc_test_rng rng;            /* seeded from the op's name and index */
    char shape[200];            /* the shape as printed */
    float *ref, *got;           /* count floats each: core's and the GPU's */
    size_t count;
    int skip;                   /* the kernel refused the shape */
    int fail;                   /* an extra check failed (occupancy, lists, labels) */
    char note[160];
    void *priv;                 /* the op's inputs */
} op_ctx;

typedef struct op_desc {
    const char *name;
    const char *what;
    size_t (*grid)(op_shape *sh, size_t cap);
    int (*make)(op_ctx *c);     /* inputs, c->shape, c->count; 0 or -errno */
    int (*cpu)(op_ctx *c);      /* c->ref */
    int (*gpu)(op_ctx *c);      /* c->got */
    void (*fini)(op_ctx *c);
    int cmp;
    double tol;
} op_desc;

#define CUDA_OK(x) do {                                                       \
    if ((x) != cudaSuccess) {                                                 \
        fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,            \
                nc_gpu_last_error());                                         \
        return -EIO;                                                          \
    }                                                                         \
} while (0)

static float urand(op_ctx *c) { return (float)nc_test_uniform(&c->rng); }

static void extra_fail(op_ctx *c, const char *fmt, const char *what, size_t bad, size_t of)
{
    c->fail = 1;
    snprintf(c->note, sizeof c->note, fmt, what, bad, of);
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    return cudaMalloc(&p, bytes ? bytes : 16) == cudaSuccess ? p : NULL;
}

static void *dev_upload(const void *h, size_t bytes)
{
    void *p = dev_alloc(bytes);
    if (p && bytes && cudaMemcpy(p, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        cudaFree(p);
        p = NULL;
    }
    return p;
}

/* a device output poisoned with NaN bits */
static float *dev_poisoned(size_t floats)
{
    float *p = dev_alloc(floats * sizeof(float));
    if (p && cudaMemset(p, 0xff, floats * sizeof(float)) != cudaSuccess) {
        cudaFree(p);
        p = NULL;
    }
    return p;
}

static int download(float *h, const float *d, size_t floats)
{
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(h, d, floats * sizeof(float), cudaMemcpyDeviceToHost));
    return 0;
}

/* occ[o] must say whether any plane of out[o] is > 0 */
static void check_occ(op_ctx *c, const uint8_t *d_occ, const float *out, size_t n_pos,
                      uint32_t stride)
{
    uint8_t *occ = malloc(n_pos);
    if (!occ || cudaMemcpy(occ, d_occ, n_pos, cudaMemcpyDeviceToHost) != cudaSuccess) {
        extra_fail(c, "%s: %zu of %zu: no copy", "occupancy", 0, n_pos);
        free(occ);
        return;
    }
    size_t bad = 0;
    for (size_t o = 0; o < n_pos; o++) {
        int any = 0;
        for (uint32_t k = 0; k < stride; k++)
            any |= out[o * stride + k] > 0.0f;
        bad += occ[o] != any;
    }
    if (bad)
        extra_fail(c, "%s: %zu of %zu bytes wrong", "occupancy", bad, n_pos);
    free(occ);
}

/* ---- the neocognitron --------------------------------------------------------- */

/* The shipped architecture's geometries (nc_neocog_arch_default: 65 -> UG 71
 * -> US1 68 -> UC1 37 -> US2 38 -> UC2 21 -> US3 22 -> UC3 13 -> US4 5);
 * the weights are each case's own. */
static nc_neocog *geo;

static int geo_net(void)
{
    if (geo)
        return 0;
    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    return nc_neocog_new(&A, &geo);
}

/* A layer's sparse random input, like the real ones: 30% of positions
 * occupied, half their planes > 0 (test_neocog.c's random_input). */
static void sparse_input(op_ctx *c, float *in, size_t n_pos, uint32_t k, uint32_t stride)
{
    for (size_t o = 0; o < n_pos; o++) {
        int occ = urand(c) < 0.3f;
        for (uint32_t j = 0; j < stride; j++) {
            float v = 0.0f;
            if (j < k && occ && urand(c) < 0.5f)
                v = urand(c);
            in[o * stride + j] = v;
        }
    }
}

/* batch characters of `per` floats at dst tiled from the n_pool at pool
 * (character b is pool's b mod n_pool); pool may be dst's own start */
static void tile(float *dst, const float *pool, size_t per, uint32_t n_pool, uint32_t batch)
{
    for (uint32_t b = dst == pool ? n_pool : 0; b < batch; b++)
        memcpy(dst + (size_t)b * per, pool + (size_t)(b % n_pool) * per, per * sizeof(float));
}

static uint32_t pool_of(uint32_t batch) { return batch < POOL ? batch : POOL; }

/* -- C-layer: every kernel kind on the shipped geometries UC1..UC3 -------------- */

typedef struct neo_c {
    nc_neocog_index *own_ix;    /* synthetic geometries; NULL: geo's */
    const nc_neocog_index *ix;
    float *d;                   /* taps */
    uint32_t k, ks, n_pool, occ_in;
    size_t n_i, n_o;            /* positions in, out */
    float *in;                  /* [batch][n_i][ks] */
    float *pool_ref;            /* [n_pool][n_o][ks] */
    float *own_d;
} neo_c;

/* a: stage (0..2), b: planes, c: kind, batch */
static size_t grid_neocog_c(op_shape *sh, size_t cap)
{
    static const int32_t ks[3][5] = { { 1, 5, 16, 0, 0 }, { 3, 26, 33, 0, 0 },
                                      { 17, 78, 248, 0, 0 } };
    static const uint32_t batches[] = { 1, 3, 31, 33, 65, 200 };
    size_t n = 0;
    for (int32_t l = 0; l < 3; l++)
        for (int ki = 0; ki < 5 && ks[l][ki]; ki++)
            for (int32_t kind = 0; kind < NC_GPU_NEOCOG_C_N_KINDS; kind++)
                for (size_t bi = 0; bi < LEN(batches) && n < cap; bi++)
                    sh[n++] = (op_shape){ .a = l, .b = ks[l][ki], .c = kind,
                                          .batch = batches[bi] };
    return n;
}

static int neo_c_alloc(op_ctx *c, neo_c *p)
{
    const uint32_t batch = c->sh->batch;
    p->ks = nc_neocog_kstride(p->k);
    p->n_i = (size_t)p->ix->n_in * p->ix->n_in;
    p->n_o = (size_t)p->ix->n_out * p->ix->n_out;
    p->in = malloc((size_t)batch * p->n_i * p->ks * sizeof(float));
    p->pool_ref = malloc((size_t)p->n_pool * p->n_o * p->ks * sizeof(float));
    c->count = (size_t)batch * p->n_o * p->ks;
    return p->in && p->pool_ref ? 0 : -ENOMEM;
}

static int make_neocog_c(op_ctx *c)
{
    neo_c *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    c->priv = p;
    const uint32_t l = (uint32_t)c->sh->a;
    p->ix = geo->c_ix[l];
    p->d = geo->c_d[l];
    p->k = (uint32_t)c->sh->b;
    p->n_pool = pool_of(c->sh->batch);
    p->occ_in = 1;
    int r = neo_c_alloc(c, p);
    if (r)
        return r;
    for (uint32_t b = 0; b < p->n_pool; b++)
        sparse_input(c, p->in + (size_t)b * p->n_i * p->ks, p->n_i, p->k, p->ks);
    tile(p->in, p->in, p->n_i * p->ks, p->n_pool, c->sh->batch);
    snprintf(c->shape, sizeof c->shape, "UC%u %s n_in %u n_out %u k %u batch %u", l + 1,
             nc_gpu_neocog_c_kind_name(c->sh->c), p->ix->n_in, p->ix->n_out, p->k,
             c->sh->batch);
    return 0;
}

static int cpu_neocog_c(op_ctx *c)
{
    neo_c *p = c->priv;
    float *ws = malloc(nc_neocog_c_ws_floats(p->ix, p->k) * sizeof(float));
    if (!ws)
        return -ENOMEM;
    int r = 0;
    for (uint32_t b = 0; r == 0 && b < p->n_pool; b++)
        r = nc_neocog_c_forward(p->ix, p->d, p->k, p->in + (size_t)b * p->n_i * p->ks,
                                p->pool_ref + (size_t)b * p->n_o * p->ks, ws,
                                NC_NEOCOG_FORM_G);
    free(ws);
    tile(c->ref, p->pool_ref, p->n_o * p->ks, p->n_pool, c->sh->batch);
    return r;
}

/* kind < 0: the scatter kernel through its own entry point.  refusal_skips
 * 0: any refusal fails; 1: -E2BIG (too large for the kernel) is a SKIP; 2:
 * -EINVAL too (a kernel that takes no window that wide, on the synthetic
 * geometries). */
static int gpu_neocog_c_kind(op_ctx *c, int kind, int refusal_skips)
{
    neo_c *p = c->priv;
    const uint32_t batch = c->sh->batch;
    nc_gpu_neocog_c_args a;
    memset(&a, 0, sizeof a);
    a.k = p->k;
    if (nc_gpu_neocog_geom_init(p->ix, p->d, &a.g) != 0) {
        c->skip = 1;
        snprintf(c->note, sizeof c->note, "geometry past the GPU's limits");
        return 0;
    }
    float *d_in = dev_upload(p->in, (size_t)batch * p->n_i * p->ks * sizeof(float));
    float *d_out = dev_poisoned(c->count);
    uint8_t *d_occ_in = dev_alloc((size_t)batch * p->n_i);
    uint8_t *d_occ = dev_alloc((size_t)batch * p->n_o);
    int r = d_in && d_out && d_occ_in && d_occ ? 0 : -ENOMEM;
    if (r == 0 && cudaMemset(d_occ, 0xab, (size_t)batch * p->n_o) != cudaSuccess)
        r = -EIO;
    if (r == 0)
        r = nc_gpu_neocog_occupancy(d_in, (uint32_t)p->n_i, p->k, p->ks, d_occ_in, batch, 0);
    if (r == 0) {
        const uint8_t *oi = p->occ_in ? d_occ_in : NULL;
        r = kind < 0 ? nc_gpu_neocog_c_scatter_forward(&a, d_in, oi, d_out, d_occ, batch, 0)
                     : nc_gpu_neocog_c_forward_kind(&a, kind, d_in, oi, d_out, d_occ, batch, 0,
                                                    0);
        if ((refusal_skips >= 1 && r == -E2BIG) || (refusal_skips >= 2 && r == -EINVAL)) {
            c->skip = 1;
            snprintf(c->note, sizeof c->note, "refused (%d)", r);
            r = 0;
        } else if (r == 0) {
            r = download(c->got, d_out, c->count);
            if (r == 0)
                check_occ(c, d_occ, c->got, (size_t)batch * p->n_o, p->ks);
        }
    }
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_occ_in);
    cudaFree(d_occ);
    return r;
}

static int gpu_neocog_c(op_ctx *c)
{
    const neo_c *p = c->priv;
    return gpu_neocog_c_kind(c, c->sh->c, p->own_ix ? 2 : 1);
}

static void fini_neocog_c(op_ctx *c)
{
    neo_c *p = c->priv;
    if (!p)
        return;
    free(p->in);
    free(p->pool_ref);
    free(p->own_d);
    nc_neocog_index_free(p->own_ix);
    free(p);
}

/* -- C-layer on geometries no net here has (the scatter kernel: every one must
 * run; the other kinds: those they take) -------------------------------------- */

/* Steps 1, 2 and 3 (the scatter kernel's three code paths for the step),
 * windows of 5 to 19 (up to 361 candidates a cell: the loop that is not
 * unrolled), odd and even, plane counts 1, 3 and 17, dense and sparse random
 * inputs, with the input's occupancy map and (odd cases) without.
 * a: geometry number, b: k, c: kind (-1: scatter's entry point), batch. */
static const uint32_t geom_sizes[] = { 1, 3, 7, 13 }, geom_wins[] = { 5, 8, 14, 18, 19 },
                      geom_ks[] = { 1, 3, 17 };

static size_t geom_grid(op_shape *sh, size_t cap, const int32_t *kinds, size_t n_kinds,
                        const uint32_t *batches, size_t n_batches)
{
    size_t n = 0;
    int32_t g = 0;
    for (size_t si = 0; si < LEN(geom_sizes); si++)
        for (size_t wi = 0; wi < LEN(geom_wins); wi++)
            for (size_t ki = 0; ki < LEN(geom_ks); ki++, g++)
                for (size_t kd = 0; kd < n_kinds; kd++)
                    for (size_t bi = 0; bi < n_batches && n < cap; bi++)
                        sh[n++] = (op_shape){ .a = g, .b = (int32_t)geom_ks[ki],
                                              .c = kinds[kd], .batch = batches[bi] };
    return n;
}

static size_t grid_neocog_c_scatter(op_shape *sh, size_t cap)
{
    static const int32_t kinds[] = { -1 };
    static const uint32_t batches[] = { 1, 3, 33 };
    return geom_grid(sh, cap, kinds, LEN(kinds), batches, LEN(batches));
}

static size_t grid_neocog_c_geom(op_shape *sh, size_t cap)
{
    static const int32_t kinds[] = { NC_GPU_NEOCOG_C_STAGED, NC_GPU_NEOCOG_C_DIRECT,
                                     NC_GPU_NEOCOG_C_TILE, NC_GPU_NEOCOG_C_WARP };
    static const uint32_t batches[] = { 3 };
    return geom_grid(sh, cap, kinds, LEN(kinds), batches, LEN(batches));
}

static int make_neocog_c_geom(op_ctx *c)
{
    neo_c *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    c->priv = p;
    const int32_t cases = c->sh->a;
    const uint32_t n_out = geom_sizes[cases / (int32_t)(LEN(geom_wins) * LEN(geom_ks))],
                   win = geom_wins[(cases / (int32_t)LEN(geom_ks)) % (int32_t)LEN(geom_wins)],
                   step = 1 + (uint32_t)cases % 3;
    uint32_t pad = (uint32_t)((cases * 7) % (int32_t)win);
    if ((n_out - 1) * step + win <= 2 * pad)
        pad = 0;
    const uint32_t n_in = (n_out - 1) * step + win - 2 * pad;
    const float radius = win * 0.5f + 0.4f, ro = win == 8 ? radius : 3.4f;
    int r = nc_neocog_index_new(n_in, n_out, win, pad, step, radius, &p->own_ix);
    if (r)
        return r;
    p->ix = p->own_ix;
    p->own_d = malloc(p->ix->n_live * sizeof(float));
    if (!p->own_d)
        return -ENOMEM;
    nc_neocog_taps_ccell(p->ix, ro < radius ? ro : radius, p->own_d);
    p->d = p->own_d;
    p->k = (uint32_t)c->sh->b;
    p->n_pool = c->sh->batch;       /* every character its own */
    p->occ_in = cases % 2 == 0;
    r = neo_c_alloc(c, p);
    if (r)
        return r;
    const double dens = cases % 2 ? 0.05 : 0.5;
    for (size_t i = 0; i < (size_t)c->sh->batch * p->n_i; i++)
        for (uint32_t kk = 0; kk < p->ks; kk++)
            p->in[i * p->ks + kk] = kk < p->k && urand(c) < dens ? urand(c) : 0.0f;
    snprintf(c->shape, sizeof c->shape, "%s n_out %u win %u pad %u step %u k %u%s batch %u",
             c->sh->c < 0 ? "scatter" : nc_gpu_neocog_c_kind_name(c->sh->c), n_out, win, pad,
             step, p->k, p->occ_in ? "" : " no-occ", c->sh->batch);
    return 0;
}

static int gpu_neocog_c_scatter(op_ctx *c)
{
    return gpu_neocog_c_kind(c, -1, 0);
}

/* -- S-layer: every variant on the shipped geometries US1..US4 ------------------ */

typedef struct neo_s {
    const nc_neocog_index *ix;
    const float *cw;            /* V-cell taps */
    uint32_t k_in, in_stride, k_out, ks, n_pool;
    float theta;
    size_t n_i, n_o;
    float *a, *b;               /* [k_in][n_live][ks], [ks] */
    float *in, *pool_ref;
} neo_s;

/* a: stage, b: k_in, c: k_out, d: variant, e: pool (distinct characters, 0: POOL) */
static size_t grid_neocog_s(op_shape *sh, size_t cap)
{
    /* the seeded test net's planes (16/26/78/70), the shipped model's
     * (16/33/248/2240, its US4 on fewer distinct characters: core's form G
     * of it is slow) and odd ones */
    static const int32_t pl[][4] = { { 0, 2, 1, 0 },    { 0, 2, 16, 0 },   { 0, 2, 33, 0 },
                                     { 1, 16, 26, 0 },  { 1, 16, 33, 0 },  { 1, 5, 7, 0 },
                                     { 2, 26, 78, 0 },  { 2, 33, 248, 0 }, { 2, 3, 1, 0 },
                                     { 3, 78, 70, 0 },  { 3, 17, 9, 0 },   { 3, 248, 2240, 2 } };
    static const uint32_t batches[] = { 1, 3, 31, 33, 65, 200 };
    size_t n = 0;
    for (size_t i = 0; i < LEN(pl); i++)
        for (int32_t v = 0; v < NC_GPU_NEOCOG_N_VARIANTS; v++)
            for (size_t bi = 0; bi < LEN(batches) && n < cap; bi++)
                sh[n++] = (op_shape){ .a = pl[i][0], .b = pl[i][1], .c = pl[i][2], .d = v,
                                      .e = pl[i][3], .batch = batches[bi] };
    return n;
}

static int make_neocog_s(op_ctx *c)
{
    neo_s *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    c->priv = p;
    const uint32_t l = (uint32_t)c->sh->a, batch = c->sh->batch;
    p->ix = geo->s_ix[l];
    p->cw = geo->s_c[l];
    p->k_in = (uint32_t)c->sh->b;
    p->in_stride = l == 0 ? 8 : nc_neocog_kstride(p->k_in);
    p->k_out = (uint32_t)c->sh->c;
    p->ks = nc_neocog_kstride(p->k_out);
    p->theta = geo->arch.stage[l].theta;
    p->n_pool = pool_of(batch);
    if (c->sh->e && p->n_pool > (uint32_t)c->sh->e)
        p->n_pool = (uint32_t)c->sh->e;
    p->n_i = (size_t)p->ix->n_in * p->ix->n_in;
    p->n_o = (size_t)p->ix->n_out * p->ix->n_out;
    const size_t na = (size_t)p->k_in * p->ix->n_live * p->ks;
    p->a = calloc(na, sizeof(float));
    p->b = calloc(p->ks, sizeof(float));
    p->in = malloc((size_t)batch * p->n_i * p->in_stride * sizeof(float));
    p->pool_ref = malloc((size_t)p->n_pool * p->n_o * p->ks * sizeof(float));
    if (!p->a || !p->b || !p->in || !p->pool_ref)
        return -ENOMEM;
    /* weights >= 0, half of them 0, pad lanes 0; b_k = sqrt(sum a_k^2 / c)
     * as training leaves it (nc_neocog_reinforce), scaled by 0.1..1 so that
     * some planes fire on the random inputs and some stay silent */
    double *sq = calloc(p->k_out, sizeof(double));
    if (!sq)
        return -ENOMEM;
    for (uint32_t kk = 0; kk < p->k_in; kk++)
        for (uint32_t t = 0; t < p->ix->n_live; t++)
            for (uint32_t k = 0; k < p->k_out; k++) {
                float v = urand(c) < 0.5f ? urand(c) : 0.0f;
                p->a[((size_t)kk * p->ix->n_live + t) * p->ks + k] = v;
                sq[k] += (double)v * v / (p->cw[t] > 0.0f ? p->cw[t] : 1.0f);
            }
    for (uint32_t k = 0; k < p->k_out; k++)
        p->b[k] = (float)(sqrt(sq[k]) * (0.1 + 0.9 * urand(c)));
    free(sq);
    for (uint32_t b = 0; b < p->n_pool; b++)
        sparse_input(c, p->in + (size_t)b * p->n_i * p->in_stride, p->n_i, p->k_in,
                     p->in_stride);
    tile(p->in, p->in, p->n_i * p->in_stride, p->n_pool, batch);
    c->count = (size_t)batch * p->n_o * p->ks;
    snprintf(c->shape, sizeof c->shape, "US%u %s n_in %u n_out %u k_in %u k_out %u batch %u",
             l + 1, nc_gpu_neocog_variant_name(c->sh->d), p->ix->n_in, p->ix->n_out, p->k_in,
             p->k_out, batch);
    return 0;
}

static int cpu_neocog_s(op_ctx *c)
{
    neo_s *p = c->priv;
    nc_neocog_s_args s = { .ix = p->ix, .k_in = p->k_in, .in_stride = p->in_stride,
                           .k_out = p->k_out, .a = p->a, .b = p->b, .c = p->cw,
                           .theta = p->theta };
    float *ws = malloc(nc_neocog_s_ws_floats(p->ix, p->k_out) * sizeof(float));
    if (!ws)
        return -ENOMEM;
    int r = 0;
    for (uint32_t b = 0; r == 0 && b < p->n_pool; b++)
        r = nc_neocog_s_forward(&s, p->in + (size_t)b * p->n_i * p->in_stride,
                                p->pool_ref + (size_t)b * p->n_o * p->ks, ws, NC_NEOCOG_FORM_G);
    free(ws);
    tile(c->ref, p->pool_ref, p->n_o * p->ks, p->n_pool, c->sh->batch);
    return r;
}

static int gpu_neocog_s(op_ctx *c)
{
    neo_s *p = c->priv;
    const uint32_t batch = c->sh->batch;
    const int v = c->sh->d;
    nc_gpu_neocog_s_args s;
    memset(&s, 0, sizeof s);
    if (nc_gpu_neocog_geom_init(p->ix, p->cw, &s.g) != 0)
        return -EINVAL;
    s.k_in = p->k_in;
    s.in_stride = p->in_stride;
    s.k_out = p->k_out;
    s.theta = p->theta;
    float *d_a = dev_upload(p->a, (size_t)p->k_in * p->ix->n_live * p->ks * sizeof(float));
    float *d_b = dev_upload(p->b, p->ks * sizeof(float));
    float *d_in = dev_upload(p->in, (size_t)batch * p->n_i * p->in_stride * sizeof(float));
    float *d_out = dev_poisoned(c->count);
    uint8_t *d_occ_in = dev_alloc((size_t)batch * p->n_i);
    uint8_t *d_occ = dev_alloc((size_t)batch * p->n_o);
    int r = d_a && d_b && d_in && d_out && d_occ_in && d_occ ? 0 : -ENOMEM;
    s.a = d_a;
    s.b = d_b;
    if (r == 0 && cudaMemset(d_occ, 0xab, (size_t)batch * p->n_o) != cudaSuccess)
        r = -EIO;
    if (r == 0)
        r = nc_gpu_neocog_occupancy(d_in, (uint32_t)p->n_i, p->k_in, p->in_stride, d_occ_in,
                                    batch, 0);
    if (r == 0 && v != NC_GPU_NEOCOG_GEMM) {
        const int chk = nc_gpu_neocog_s_check(&s, batch, v, 0);
        if (chk == -E2BIG) {
            c->skip = 1;
            snprintf(c->note, sizeof c->note, "refuses %u planes (-E2BIG)", p->k_out);
        } else {
            r = chk;
        }
    }
    if (r == 0 && !c->skip) {
        if (v == NC_GPU_NEOCOG_GEMM) {
            nc_gpu_neocog_gemm *gm = NULL;
            r = nc_gpu_neocog_gemm_new(&s, batch, 0, &gm);
            if (r == 0)
                r = nc_gpu_neocog_gemm_forward_fill(gm, d_in, d_occ_in, d_out, d_occ, batch, 1,
                                                    0);
            if (r == 0 && cudaDeviceSynchronize() != cudaSuccess)
                r = -EIO;
            nc_gpu_neocog_gemm_free(gm);
        } else {
            r = nc_gpu_neocog_s_forward(&s, d_in, d_occ_in, d_out, d_occ, batch, v, 0, 0);
        }
        if (r == 0)
            r = download(c->got, d_out, c->count);
        if (r == 0)
            check_occ(c, d_occ, c->got, (size_t)batch * p->n_o, p->ks);
    }
    cudaFree(d_a);
    cudaFree(d_b);
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_occ_in);
    cudaFree(d_occ);
    return r;
}

static void fini_neocog_s(op_ctx *c)
{
    neo_s *p = c->priv;
    if (!p)
        return;
    free(p->a);
    free(p->b);
    free(p->in);
    free(p->pool_ref);
    free(p);
}

/* -- UG: contrast extraction on the shipped geometry ---------------------------- */

typedef struct neo_g {
    size_t n_i, n_o;
    uint32_t n_pool;
    float *in, *pool_ref;
} neo_g;

static size_t grid_neocog_g(op_shape *sh, size_t cap)
{
    static const uint32_t batches[] = { 1, 3, 8, 31, 33, 65, 200, 1000 };
    size_t n = 0;
    for (size_t bi = 0; bi < LEN(batches) && n < cap; bi++)
        sh[n++] = (op_shape){ .batch = batches[bi] };
    return n;
}

static int make_neocog_g(op_ctx *c)
{
    neo_g *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    c->priv = p;
    const nc_neocog_index *ix = geo->g_ix;
    const uint32_t batch = c->sh->batch;
    p->n_i = (size_t)ix->n_in * ix->n_in;
    p->n_o = (size_t)ix->n_out * ix->n_out;
    p->n_pool = pool_of(batch);
    p->in = malloc((size_t)batch * p->n_i * sizeof(float));
    p->pool_ref = malloc((size_t)p->n_pool * p->n_o * 8 * sizeof(float));
    if (!p->in || !p->pool_ref)
        return -ENOMEM;
    /* binary-ish, as test_neocog.c's random UG input */
    for (size_t i = 0; i < (size_t)p->n_pool * p->n_i; i++)
        p->in[i] = urand(c) < 0.3f ? 1.0f : (urand(c) < 0.1f ? urand(c) : 0.0f);
    tile(p->in, p->in, p->n_i, p->n_pool, batch);
    c->count = (size_t)batch * p->n_o * 8;
    snprintf(c->shape, sizeof c->shape, "UG n_in %u n_out %u win %u batch %u", ix->n_in,
             ix->n_out, ix->win, batch);
    return 0;
}

static int cpu_neocog_g(op_ctx *c)
{
    neo_g *p = c->priv;
    float *ws = malloc(nc_neocog_c_ws_floats(geo->g_ix, 1) * sizeof(float));
    if (!ws)
        return -ENOMEM;
    int r = 0;
    for (uint32_t b = 0; r == 0 && b < p->n_pool; b++)
        r = nc_neocog_g_forward(geo->g_ix, geo->g_w, geo->arch.g_cut, p->in + (size_t)b * p->n_i,
                                p->pool_ref + (size_t)b * p->n_o * 8, ws, NC_NEOCOG_FORM_G);
    free(ws);
    tile(c->ref, p->pool_ref, p->n_o * 8, p->n_pool, c->sh->batch);
    return r;
}

static int gpu_neocog_g(op_ctx *c)
{
    neo_g *p = c->priv;
    const uint32_t batch = c->sh->batch;
    nc_gpu_neocog_g_args g;
    memset(&g, 0, sizeof g);
    if (nc_gpu_neocog_geom_init(geo->g_ix, geo->g_w, &g.g) != 0)
        return -EINVAL;
    g.cut = geo->arch.g_cut;
    float *d_in = dev_upload(p->in, (size_t)batch * p->n_i * sizeof(float));
    float *d_out = dev_poisoned(c->count);
    uint8_t *d_occ = dev_alloc((size_t)batch * p->n_o);
    int r = d_in && d_out && d_occ ? 0 : -ENOMEM;
    if (r == 0 && cudaMemset(d_occ, 0xab, (size_t)batch * p->n_o) != cudaSuccess)
        r = -EIO;
    if (r == 0)
        r = nc_gpu_neocog_g_forward(&g, d_in, d_out, d_occ, batch, 0);
    if (r == 0)
        r = download(c->got, d_out, c->count);
    if (r == 0)
        check_occ(c, d_occ, c->got, (size_t)batch * p->n_o, 8);
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_occ);
    return r;
}

static void fini_neocog_g(op_ctx *c)
{
    neo_g *p = c->priv;
    if (!p)
        return;
    free(p->in);
    free(p->pool_ref);
    free(p);
}

/* -- lists of each position's non-zero planes (the list S kernels' input) ------- */

typedef struct neo_list {
    size_t n_pos;               /* batch * positions */
    uint32_t k, stride, mul;
    float *in;
} neo_list;

/* a: positions a character, b: k, c: mul (0: the list kernel's n_live * ks / 4) */
static size_t grid_neocog_list(op_shape *sh, size_t cap)
{
    /* UG -> US1 (k 2 of stride 8), UC1 -> US2, UC2 -> US3, UC3 -> US4 and odd ones */
    static const int32_t pk[][2] = { { 71 * 71, 2 }, { 37 * 37, 16 }, { 21 * 21, 26 },
                                     { 21 * 21, 33 }, { 13 * 13, 78 }, { 13 * 13, 248 },
                                     { 7, 1 },        { 5, 5 },        { 3, 300 } };
    static const int32_t muls[] = { 1, 7, 0 };
    static const uint32_t batches[] = { 1, 3, 33, 65 };
    size_t n = 0;
    for (size_t i = 0; i < LEN(pk); i++)
        for (size_t m = 0; m < LEN(muls); m++)
            for (size_t bi = 0; bi < LEN(batches) && n < cap; bi++)
                sh[n++] = (op_shape){ .a = pk[i][0], .b = pk[i][1], .c = muls[m],
                                      .batch = batches[bi] };
    return n;
}

static int make_neocog_list(op_ctx *c)
{
    neo_list *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    c->priv = p;
    p->k = (uint32_t)c->sh->b;
    p->stride = p->k == 2 ? 8 : nc_neocog_kstride(p->k);
    p->mul = c->sh->c ? (uint32_t)c->sh->c : 36u * (nc_neocog_kstride(p->k + 3) / 4u);
    p->n_pos = (size_t)c->sh->batch * (size_t)c->sh->a;
    p->in = malloc(p->n_pos * p->stride * sizeof(float));
    if (!p->in)
        return -ENOMEM;
    sparse_input(c, p->in, p->n_pos, p->k, p->stride);
    /* the sums of squares are compared; cnt and entries exactly (extra) */
    c->count = p->n_pos;
    snprintf(c->shape, sizeof c->shape, "positions %d k %u stride %u mul %u batch %u",
             c->sh->a, p->k, p->stride, p->mul, c->sh->batch);
    return 0;
}

static uint16_t *list_cnt;     /* core's counts and entries, for gpu_neocog_list */
static int32_t *list_ent;

static int cpu_neocog_list(op_ctx *c)
{
    neo_list *p = c->priv;
    free(list_cnt);
    free(list_ent);
    list_cnt = malloc(p->n_pos * sizeof(uint16_t));
    list_ent = malloc(p->n_pos * p->k * 2 * sizeof(int32_t));
    if (!list_cnt || !list_ent)
        return -ENOMEM;
    return nc_neocog_list_build(p->in, p->n_pos, p->k, p->stride, p->mul, list_cnt, c->ref,
                                list_ent);
}

static int gpu_neocog_list(op_ctx *c)
{
    neo_list *p = c->priv;
    float *d_in = dev_upload(p->in, p->n_pos * p->stride * sizeof(float));
    uint8_t *d_occ = dev_alloc(p->n_pos);
    uint16_t *d_cnt = dev_alloc(p->n_pos * sizeof(uint16_t));
    float *d_q = dev_poisoned(p->n_pos);
    int2 *d_ent = dev_alloc(p->n_pos * p->k * sizeof(int2));
    uint16_t *cnt = malloc(p->n_pos * sizeof(uint16_t));
    int32_t *ent = malloc(p->n_pos * p->k * 2 * sizeof(int32_t));
    int r = d_in && d_occ && d_cnt && d_q && d_ent && cnt && ent ? 0 : -ENOMEM;
    if (r == 0 && cudaMemset(d_cnt, 0xab, p->n_pos * sizeof(uint16_t)) != cudaSuccess)
        r = -EIO;
    const uint32_t per = (uint32_t)(p->n_pos / c->sh->batch);
    if (r == 0)
        r = nc_gpu_neocog_occupancy(d_in, per, p->k, p->stride, d_occ, c->sh->batch, 0);
    if (r == 0)
        r = nc_gpu_neocog_list_build(d_in, d_occ, per, p->k, p->stride, p->mul, d_cnt, d_q,
                                     d_ent, c->sh->batch, 0);
    if (r == 0)
        r = download(c->got, d_q, p->n_pos);
    if (r == 0 &&
        (cudaMemcpy(cnt, d_cnt, p->n_pos * sizeof(uint16_t), cudaMemcpyDeviceToHost) ||
         cudaMemcpy(ent, d_ent, p->n_pos * p->k * sizeof(int2), cudaMemcpyDeviceToHost)))
        r = -EIO;
    if (r == 0) {
        /* as test_neocog.c's check_lists: counts and entries exactly, each
         * sum of squares to 1e-6 of core's */
        size_t bad_cnt = 0, bad_ent = 0, bad_q = 0;
        for (size_t i = 0; i < p->n_pos; i++) {
            if (cnt[i] != list_cnt[i]) {
                bad_cnt++;
                continue;
            }
            for (uint32_t j = 0; j < 2u * cnt[i]; j++)
                bad_ent += ent[i * p->k * 2 + j] != list_ent[i * p->k * 2 + j];
            bad_q += !(fabsf(c->got[i] - c->ref[i]) <= 1e-6f * c->ref[i]);
        }
        if (bad_cnt)
            extra_fail(c, "%s: %zu of %zu differ", "counts", bad_cnt, p->n_pos);
        else if (bad_ent)
            extra_fail(c, "%s: %zu words differ (%zu positions)", "entries", bad_ent, p->n_pos);
        else if (bad_q)
            extra_fail(c, "%s: %zu of %zu off by more than 1e-6 relative", "sums", bad_q,
                       p->n_pos);
    }
    cudaFree(d_in);
    cudaFree(d_occ);
    cudaFree(d_cnt);
    cudaFree(d_q);
    cudaFree(d_ent);
    free(cnt);
    free(ent);
    return r;
}

static void fini_neocog_list(op_ctx *c)
{
    neo_list *p = c->priv;
    if (p)
        free(p->in);
    free(p);
    free(list_cnt);
    free(list_ent);
    list_cnt = NULL;
    list_ent = NULL;
}

/* -- occupancy maps ------------------------------------------------------------- */

/* a: positions a character, b: k, c: stride; compared as 0 / 1 floats */
static size_t grid_neocog_occ(op_shape *sh, size_t cap)
{
    static const int32_t pk[][3] = { { 71 * 71, 2, 8 }, { 68 * 68, 16, 16 }, { 37 * 37, 16, 16 },
                                     { 22 * 22, 33, 40 }, { 5 * 5, 2240, 2240 }, { 1, 1, 8 },
                                     { 7, 5, 8 } };
    static const uint32_t batches[] = { 1, 3, 33, 200 };
    size_t n = 0;
    for (size_t i = 0; i < LEN(pk); i++)
        for (size_t bi = 0; bi < LEN(batches) && n < cap; bi++)
            sh[n++] = (op_shape){ .a = pk[i][0], .b = pk[i][1], .c = pk[i][2],
                                  .batch = batches[bi] };
    return n;
}

static int make_neocog_occ(op_ctx *c)
{
    const size_t n_pos = (size_t)c->sh->batch * (size_t)c->sh->a;
    float *in = malloc(n_pos * (size_t)c->sh->c * sizeof(float));
    if (!in)
        return -ENOMEM;
    c->priv = in;
    sparse_input(c, in, n_pos, (uint32_t)c->sh->b, (uint32_t)c->sh->c);
    /* a value in a pad lane must not count */
    for (size_t o = 0; o < n_pos; o += 3)
        for (int32_t j = c->sh->b; j < c->sh->c; j++)
            in[o * (size_t)c->sh->c + (size_t)j] = 1.0f;
    c->count = n_pos;
    snprintf(c->shape, sizeof c->shape, "positions %d k %d stride %d batch %u", c->sh->a,
             c->sh->b, c->sh->c, c->sh->batch);
    return 0;
}

static int cpu_neocog_occ(op_ctx *c)
{
    const float *in = c->priv;
    for (size_t o = 0; o < c->count; o++) {
        int any = 0;
        for (int32_t j = 0; j < c->sh->b; j++)
            any |= in[o * (size_t)c->sh->c + (size_t)j] != 0.0f;
        c->ref[o] = (float)any;
    }
    return 0;
}

static int gpu_neocog_occ(op_ctx *c)
{
    float *d_in = dev_upload(c->priv, c->count * (size_t)c->sh->c * sizeof(float));
    uint8_t *d_occ = dev_alloc(c->count), *occ = malloc(c->count);
    int r = d_in && d_occ && occ ? 0 : -ENOMEM;
    if (r == 0 && cudaMemset(d_occ, 0xab, c->count) != cudaSuccess)
        r = -EIO;
    if (r == 0)
        r = nc_gpu_neocog_occupancy(d_in, (uint32_t)c->sh->a, (uint32_t)c->sh->b,
                                    (uint32_t)c->sh->c, d_occ, c->sh->batch, 0);
    if (r == 0 && (cudaDeviceSynchronize() != cudaSuccess ||
                   cudaMemcpy(occ, d_occ, c->count, cudaMemcpyDeviceToHost) != cudaSuccess))
        r = -EIO;
    for (size_t o = 0; r == 0 && o < c->count; o++)
        c->got[o] = occ[o] == 1 ? 1.0f : occ[o] == 0 ? 0.0f : NAN;
    cudaFree(d_in);
    cudaFree(d_occ);
    free(occ);
    return r;
}

static void fini_free_priv(op_ctx *c)
{
    free(c->priv);
}

/* -- UC4: the largest response per class and the answer --------------------------- */

typedef struct neo_class {
    uint32_t n_pos, k, ks, n_classes;
    float *in;
    uint32_t *lab;
    int32_t *want;              /* core's answers */
} neo_class;

/* a: positions, b: k, c: classes */
static size_t grid_neocog_class(op_shape *sh, size_t cap)
{
    static const int32_t pk[][3] = { { 25, 70, 10 }, { 25, 2240, 10 }, { 1, 1, 1 },
                                     { 9, 37, 26 }, { 25, 300, 62 } };
    static const uint32_t batches[] = { 1, 3, 33, 200 };
    size_t n = 0;
    for (size_t i = 0; i < LEN(pk); i++)
        for (size_t bi = 0; bi < LEN(batches) && n < cap; bi++)
            sh[n++] = (op_shape){ .a = pk[i][0], .b = pk[i][1], .c = pk[i][2],
                                  .batch = batches[bi] };
    return n;
}

static int make_neocog_class(op_ctx *c)
{
    neo_class *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    c->priv = p;
    p->n_pos = (uint32_t)c->sh->a;
    p->k = (uint32_t)c->sh->b;
    p->ks = nc_neocog_kstride(p->k);
    p->n_classes = (uint32_t)c->sh->c;
    const uint32_t batch = c->sh->batch;
    p->in = malloc((size_t)batch * p->n_pos * p->ks * sizeof(float));
    p->lab = malloc(p->k * sizeof(uint32_t));
    p->want = malloc(batch * sizeof(int32_t));
    if (!p->in || !p->lab || !p->want)
        return -ENOMEM;
    for (uint32_t k = 0; k < p->k; k++)
        p->lab[k] = (uint32_t)(nc_test_next(&c->rng) % p->n_classes);
    sparse_input(c, p->in, (size_t)batch * p->n_pos, p->k, p->ks);
    /* a character with nothing firing answers -1 (the second); one with a tie
     * the lower class (the third) */
    if (batch > 1)
        memset(p->in + (size_t)p->n_pos * p->ks, 0, (size_t)p->n_pos * p->ks * sizeof(float));
    if (batch > 2 && p->k > 1) {
        float *third = p->in + (size_t)2 * p->n_pos * p->ks;
        memset(third, 0, (size_t)p->n_pos * p->ks * sizeof(float));
        for (uint32_t k = 0; k < p->k; k++)
            third[k] = 0.75f;
    }
    c->count = (size_t)batch * p->n_classes;
    snprintf(c->shape, sizeof c->shape, "positions %u k %u classes %u batch %u", p->n_pos, p->k,
             p->n_classes, batch);
    return 0;
}

/* As core's UC4 (test_neocog.c's cpu_layer): the largest response per class;
 * the answer the class with the largest score, the lowest on ties, -1 when
 * every score is 0. */
static int cpu_neocog_class(op_ctx *c)
{
    neo_class *p = c->priv;
    for (uint32_t b = 0; b < c->sh->batch; b++) {
        float *out = c->ref + (size_t)b * p->n_classes;
        const float *in = p->in + (size_t)b * p->n_pos * p->ks;
        for (uint32_t k = 0; k < p->n_classes; k++)
            out[k] = 0.0f;
        for (uint32_t o = 0; o < p->n_pos; o++)
            for (uint32_t k = 0; k < p->k; k++)
                if (in[(size_t)o * p->ks + k] > out[p->lab[k]])
                    out[p->lab[k]] = in[(size_t)o * p->ks + k];
        int32_t best = -1;
        for (uint32_t k = 0; k < p->n_classes; k++)
            if (out[k] > 0.0f && (best < 0 || out[k] > out[best]))
                best = (int32_t)k;
        p->want[b] = best;
    }
    return 0;
}

static int gpu_neocog_class(op_ctx *c)
{
    neo_class *p = c->priv;
    const uint32_t batch = c->sh->batch;
    float *d_in = dev_upload(p->in, (size_t)batch * p->n_pos * p->ks * sizeof(float));
    uint32_t *d_lab = dev_upload(p->lab, p->k * sizeof(uint32_t));
    float *d_out = dev_poisoned(c->count);
    int32_t *d_label = dev_alloc(batch * sizeof(int32_t)), *got = malloc(batch * sizeof(int32_t));
    int r = d_in && d_lab && d_out && d_label && got ? 0 : -ENOMEM;
    if (r == 0 && cudaMemset(d_label, 0xab, batch * sizeof(int32_t)) != cudaSuccess)
        r = -EIO;
    if (r == 0)
        r = nc_gpu_neocog_class_forward(d_in, p->n_pos, p->k, d_lab, p->n_classes, d_out,
                                        d_label, batch, 0);
    if (r == 0)
        r = download(c->got, d_out, c->count);
    if (r == 0 &&
        cudaMemcpy(got, d_label, batch * sizeof(int32_t), cudaMemcpyDeviceToHost) != cudaSuccess)
        r = -EIO;
    if (r == 0) {
        size_t bad = 0;
        for (uint32_t b = 0; b < batch; b++)
            bad += got[b] != p->want[b];
        if (bad)
            extra_fail(c, "%s: %zu of %zu differ", "answers", bad, batch);
    }
    cudaFree(d_in);
    cudaFree(d_lab);
    cudaFree(d_out);
    cudaFree(d_label);
    free(got);
    return r;
}

static void fini_neocog_class(op_ctx *c)
{
    neo_class *p = c->priv;
    if (!p)
        return;
    free(p->in);
    free(p->lab);
    free(p->want);
    free(p);
}

/* ---- the CNN --------------------------------------------------------------------- */

/* The nets of test_cnn.c: the shipped column, the deep column (also with cut
 * tables and rectified, normalised), skipping factors, rectangular kernels
 * with partial tables and 2x1 pooling, kernels smaller than their step, a
 * fully connected net on its input. */
static const char *const cnn_archs[] = {
    "1x29x29-20C4-MP2-40C5-MP3-150N-10N",
    "1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-150N-10N",
    "1x29x29-20C4-MP2-60C4R50:5-MP2-100C3R30-MP3-1000N-7N",
    "1x29x29-20C5S1-40C5S1-150N-10N",
    "2x23x21-6C3x5S1x2R50-MP2x1-5C2x3R60:7-13N-4N",
    "1x17x17-4C2S2-3C3-MP2x1-7N-3N",
    "3x5x4-6N-2N",
    "1x29x29-20C4relu-MP2-60C4relu-MP2-100C3relu-MP3-150Nrelu-10N",
    "2x23x21-6C3x5S1x2R50relu-MP2x1-5C2x3R60:7relu-13Nrelu-4Nrelu",
    "1x29x29-20C4bn-MP2-60C4bn-MP2-100C3bn-MP3-150Nbn-10N",
    "2x23x21-6C3x5S1x2R50bn-MP2x1-5C2x3R60:7bnrelu-13Nbn-4N",
};
static const uint32_t cnn_batches[] = { 1, 3, 31, 33, 65, 200 };

/* core's reference forward of one (net, batch), kept while consecutive cases
 * share it, with the net's parameters and connection lists on the device */
static int dry;     /* --dry: no device */

static struct cnn_cache {
    int arch;
    uint32_t batch;
    nc_cnn *net;
    nc_cnn_work *w;
    float *in;
    float *d_params;
    int32_t *d_lists;
    size_t list_off[NC_CNN_MAX_LAYERS];
} cc = { .arch = -1 };

static void cnn_cache_drop(void)
{
    nc_cnn_work_free(cc.w);
    nc_cnn_free(cc.net);
    free(cc.in);
    cudaFree(cc.d_params);
    cudaFree(cc.d_lists);
    memset(&cc, 0, sizeof cc);
    cc.arch = -1;
}

/* nc_gpu_cnn_engine's connection lists (seed 000 §3.1): per CONV layer fwd
 * [maps][1 + in_maps], then bwd [in_maps][1 + maps] */
static int cnn_cache_get(int arch, uint32_t batch)
{
    if (cc.arch == arch && cc.batch == batch)
        return 0;
    cnn_cache_drop();
    int r = nc_cnn_new(cnn_archs[arch], &cc.net);
    if (r == 0)
        r = nc_cnn_init_uniform(cc.net, 7, 0.15f);
    if (r == 0)
        r = nc_cnn_work_new(cc.net, batch, &cc.w);
    if (r)
        return r;
    nc_cnn *net = cc.net;
    /* gamma and beta away from 1 and 0 (map 0's gamma negative), as test_cnn.c */
    nc_test_rng nr = { 7 };
    for (uint32_t l = 1; l < net->n_layers; l++) {
        nc_cnn_layer *L = &net->layers[l];
        for (uint32_t m = 0; L->norm && m < L->maps; m++) {
            L->gamma[m] = (m ? 1.0f : -1.0f) * (float)(0.5 + nc_test_uniform(&nr));
            L->beta[m] = (float)(nc_test_uniform(&nr) - 0.5);
        }
    }
    cc.in = malloc((size_t)batch * net->n_inputs * sizeof(float));
    size_t n_lists = 0;
    for (uint32_t l = 1; l < net->n_layers; l++) {
        cc.list_off[l] = n_lists;
        if (net->layers[l].kind == NC_CNN_KIND_CONV)
            n_lists += (size_t)net->layers[l].maps * (1 + net->layers[l - 1].maps) +
                       (size_t)net->layers[l - 1].maps * (1 + net->layers[l].maps);
    }
    int32_t *lists = malloc((n_lists ? n_lists : 1) * sizeof(int32_t));
    if (!cc.in || !lists) {
        free(lists);
        return -ENOMEM;
    }
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *S = &net->layers[l];
        if (S->kind != NC_CNN_KIND_CONV)
            continue;
        const uint32_t in_maps = net->layers[l - 1].maps;
        int32_t *fwd = lists + cc.list_off[l], *bwd = fwd + (size_t)S->maps * (1 + in_maps);
        for (uint32_t m = 0; m < S->maps; m++) {
            int32_t *row = fwd + (size_t)m * (1 + in_maps);
            row[0] = 0;
            for (uint32_t ci = 0; ci < in_maps; ci++)
                if (S->table[(size_t)m * in_maps + ci])
                    row[1 + row[0]++] = (int32_t)ci;
        }
        for (uint32_t ci = 0; ci < in_maps; ci++) {
            int32_t *row = bwd + (size_t)ci * (1 + S->maps);
            row[0] = 0;
            for (uint32_t m = 0; m < S->maps; m++)
                if (S->table[(size_t)m * in_maps + ci])
                    row[1 + row[0]++] = (int32_t)m;
        }
    }
    if (!dry) {
        cc.d_params = dev_upload(net->params, net->n_params * sizeof(float));
        cc.d_lists = dev_upload(lists, (n_lists ? n_lists : 1) * sizeof(int32_t));
    }
    free(lists);
    if (!dry && (!cc.d_params || !cc.d_lists))
        return -ENOMEM;
    nc_test_rng rng = { 0x9e3779b97f4a7c15ull ^ net->n_params ^ batch };
    for (size_t i = 0; i < (size_t)batch * net->n_inputs; i++)
        cc.in[i] = (float)(-1.0 + 2.0 * nc_test_uniform(&rng));
    r = nc_cnn_forward_ref(net, cc.w, cc.in, batch, NULL);
    if (r)
        return r;
    cc.arch = arch;
    cc.batch = batch;
    return 0;
}

/* layer l's input (l - 1's output) and output in the reference forward */
static const float *cnn_ref_in(uint32_t l)
{
    return l == 1 ? cc.in : nc_cnn_work_activations(cc.w, l - 1, NULL);
}

/* layer l as the GPU kernels see it (gpu/cnn/cnn_engine.cu's describe_layers) */
static nc_gpu_cnn_layer cnn_layer(uint32_t l)
{
    const nc_cnn *net = cc.net;
    const nc_cnn_layer *S = &net->layers[l], *P = &net->layers[l - 1];
    nc_gpu_cnn_layer L;
    memset(&L, 0, sizeof L);
    L.kind = S->kind;
    L.act = S->norm ? (uint32_t)NC_CNN_ACT_NONE : S->act;
    L.norm = S->norm;
    L.norm_act = S->norm ? S->act : 0;
    L.maps = S->maps;
    L.height = S->height;
    L.width = S->width;
    L.in_maps = P->maps;
    L.in_height = P->height;
    L.in_width = P->width;
    L.kernel_x = S->kernel_x;
    L.kernel_y = S->kernel_y;
    L.step_x = S->skip_x + 1;
    L.step_y = S->skip_y + 1;
    L.n_in = S->n_in;
    L.n_out = S->n_out;
    L.fan_in = S->fan_in;
    L.n_weights = (uint32_t)S->n_weights;
    if (S->weights) {
        L.weights = cc.d_params + (S->weights - net->params);
        L.bias = cc.d_params + (S->bias - net->params);
    }
    if (S->norm) {
        L.gamma = cc.d_params + (S->gamma - net->params);
        L.beta = cc.d_params + (S->beta - net->params);
    }
    if (S->kind == NC_CNN_KIND_CONV) {
        L.fwd = cc.d_lists + cc.list_off[l];
        L.bwd = L.fwd + (size_t)S->maps * (1 + P->maps);
    }
    return L;
}

/* a: arch, b: layer; the ops' own kinds of layer, at every batch */
static size_t cnn_grid(op_shape *sh, size_t cap, uint32_t kind, int norm)
{
    size_t n = 0;
    for (size_t a = 0; a < LEN(cnn_archs); a++) {
        nc_cnn *net = NULL;
        if (nc_cnn_new(cnn_archs[a], &net) != 0)
            continue;       /* make fails on it: the case reports the error */
        /* batch outside layer: consecutive cases share core's forward */
        for (size_t bi = 0; bi < LEN(cnn_batches); bi++)
            for (uint32_t l = 1; l < net->n_layers && n < cap; l++) {
                const nc_cnn_layer *L = &net->layers[l];
                const int want = kind == UINT32_MAX ? L->kind != NC_CNN_KIND_POOL
                                                    : L->kind == kind &&
                                                          (norm < 0 || (int)L->norm == norm);
                if (want)
                    sh[n++] = (op_shape){ .a = (int32_t)a, .b = (int32_t)l,
                                          .batch = cnn_batches[bi] };
            }
        nc_cnn_free(net);
    }
    return n;
}

static size_t grid_cnn_conv(op_shape *sh, size_t cap)
{
    return cnn_grid(sh, cap, NC_CNN_KIND_CONV, 0);
}

static size_t grid_cnn_conv_all(op_shape *sh, size_t cap)
{
    return cnn_grid(sh, cap, NC_CNN_KIND_CONV, -1);
}

static size_t grid_cnn_pool(op_shape *sh, size_t cap)
{
    return cnn_grid(sh, cap, NC_CNN_KIND_POOL, -1);
}

static size_t grid_cnn_full(op_shape *sh, size_t cap)
{
    return cnn_grid(sh, cap, NC_CNN_KIND_FULL, 0);
}

static size_t grid_cnn_full_all(op_shape *sh, size_t cap)
{
    return cnn_grid(sh, cap, NC_CNN_KIND_FULL, -1);
}

/* every CONV and FULL layer */
static size_t grid_cnn_act(op_shape *sh, size_t cap)
{
    return cnn_grid(sh, cap, UINT32_MAX, -1);
}

static size_t grid_cnn_norm(op_shape *sh, size_t cap)
{
    size_t n = cnn_grid(sh, cap, NC_CNN_KIND_CONV, 1);
    return n + cnn_grid(sh + n, cap - n, NC_CNN_KIND_FULL, 1);
}

/* c->ref: the reference output of the case's layer */
static int make_cnn(op_ctx *c)
{
    int r = cnn_cache_get(c->sh->a, c->sh->batch);
    if (r)
        return r;
    const nc_cnn_layer *L = &cc.net->layers[c->sh->b];
    c->count = (size_t)c->sh->batch * L->n_out;
    static const char *const kinds[] = { "input", "conv", "pool", "full" };
    snprintf(c->shape, sizeof c->shape, "%s layer %d (%s%s %ux%ux%u) batch %u",
             cnn_archs[c->sh->a], c->sh->b, L->kind < 4 ? kinds[L->kind] : "?",
             L->norm ? " bn" : "", L->maps, L->height, L->width, c->sh->batch);
    return 0;
}

static int cpu_cnn(op_ctx *c)
{
    const float *y = nc_cnn_work_activations(cc.w, (uint32_t)c->sh->b, NULL);
    if (!y)
        return -EINVAL;
    memcpy(c->ref, y, c->count * sizeof(float));
    return 0;
}

static cublasHandle_t blas;

enum { CNN_DIRECT, CNN_UNROLLED, CNN_UNROLLED_SMALL, CNN_BLAS };

/* The layer's kernel (path) on the reference input, then batch norm when the
 * layer has it, into c->got. */
static int gpu_cnn_path(op_ctx *c, int path)
{
    const uint32_t l = (uint32_t)c->sh->b, n = c->sh->batch;
    const nc_gpu_cnn_layer L = cnn_layer(l);
    float *d_x = dev_upload(cnn_ref_in(l), (size_t)n * L.n_in * sizeof(float));
    float *d_y = dev_poisoned(c->count);
    float *d_xhat = L.norm ? dev_poisoned(c->count) : NULL;
    float *d_stat = L.norm ? dev_poisoned(NC_GPU_CNN_NORM_STAT_FLOATS(L.maps)) : NULL;
    float *d_scr = NULL;
    size_t cap = 0;
    int r = d_x && d_y && (!L.norm || (d_xhat && d_stat)) ? 0 : -ENOMEM;
    if (r == 0 && (path == CNN_UNROLLED || path == CNN_UNROLLED_SMALL)) {
        /* the default: room for every image; small: the least that takes one
         * image, so the product runs chunk by chunk */
        cap = (size_t)16 << 20;
        if (path == CNN_UNROLLED_SMALL) {
            cap = 256;
            while (nc_gpu_cnn_unroll_chunk(&L, cap) < 1 && cap < ((size_t)16 << 20))
                cap *= 2;
        }
        d_scr = dev_poisoned(cap);
        if (!d_scr)
            r = -ENOMEM;
        else
            snprintf(c->note, sizeof c->note, "%u image(s) a chunk",
                     nc_gpu_cnn_unroll_chunk(&L, cap));
    }
    if (r == 0) {
        if (path == CNN_DIRECT)
            r = L.kind == NC_CNN_KIND_CONV   ? nc_gpu_cnn_conv_forward(&L, d_x, d_y, n, 0)
                : L.kind == NC_CNN_KIND_POOL ? nc_gpu_cnn_pool_forward(&L, d_x, d_y, n, 0)
                                             : nc_gpu_cnn_full_forward(&L, d_x, d_y, n, 0);
        else if (path == CNN_BLAS)
            r = nc_gpu_cnn_full_forward_blas(&L, d_x, d_y, n, blas, 0);
        else
            r = nc_gpu_cnn_conv_forward_unrolled(&L, d_x, d_y, n, d_scr, cap, blas, 0);
    }
    if (r == 0 && L.norm)
        r = nc_gpu_cnn_norm_forward(&L, d_y, n, d_xhat, d_stat, 0);
    if (r == 0)
        r = download(c->got, d_y, c->count);
    cudaFree(d_x);
    cudaFree(d_y);
    cudaFree(d_xhat);
    cudaFree(d_stat);
    cudaFree(d_scr);
    return r;
}

static int gpu_cnn_direct(op_ctx *c) { return gpu_cnn_path(c, CNN_DIRECT); }
static int gpu_cnn_unrolled(op_ctx *c) { return gpu_cnn_path(c, CNN_UNROLLED); }
static int gpu_cnn_unrolled_small(op_ctx *c) { return gpu_cnn_path(c, CNN_UNROLLED_SMALL); }
static int gpu_cnn_blas(op_ctx *c) { return gpu_cnn_path(c, CNN_BLAS); }

/* -- the activation's derivative: da = dy f'(y) on a layer's reference outputs -- */

static int make_cnn_act(op_ctx *c)
{
    int r = make_cnn(c);
    if (r)
        return r;
    float *dy = malloc(c->count * sizeof(float));
    if (!dy)
        return -ENOMEM;
    c->priv = dy;
    for (size_t i = 0; i < c->count; i++)
        dy[i] = (float)(-1.0 + 2.0 * nc_test_uniform(&c->rng));
    static const char *const acts[] = { "tanh", "relu", "none" };
    const uint32_t act = cc.net->layers[c->sh->b].act;
    const size_t len = strlen(c->shape);
    snprintf(c->shape + len, sizeof c->shape - len, " %s", act < 3 ? acts[act] : "?");
    return 0;
}

static int cpu_cnn_act(op_ctx *c)
{
    const float *y = nc_cnn_work_activations(cc.w, (uint32_t)c->sh->b, NULL);
    const float *dy = c->priv;
    const uint32_t act = cc.net->layers[c->sh->b].act;
    if (!y)
        return -EINVAL;
    for (size_t i = 0; i < c->count; i++)
        c->ref[i] = dy[i] * nc_cnn_act_grad(y[i], act);
    return 0;
}

static int gpu_cnn_act(op_ctx *c)
{
    const float *y = nc_cnn_work_activations(cc.w, (uint32_t)c->sh->b, NULL);
    float *d_y = dev_upload(y, c->count * sizeof(float));
    float *d_dy = dev_upload(c->priv, c->count * sizeof(float));
    float *d_da = dev_poisoned(c->count);
    int r = d_y && d_dy && d_da ? 0 : -ENOMEM;
    if (r == 0)
        r = nc_gpu_cnn_act_backward(d_y, d_dy, d_da, c->count, cc.net->layers[c->sh->b].act, 0);
    if (r == 0)
        r = download(c->got, d_da, c->count);
    cudaFree(d_y);
    cudaFree(d_dy);
    cudaFree(d_da);
    return r;
}

/* ---- deformations (gpu/data/deform against core/data/deform) --------------------- */

/* A few Gaussian blobs of ink, clamped to [0, 1] (test_deform.c's: bilinear
 * sampling turns a tiny error in a sampling point into a tiny error in the
 * value). */
static void blobs(nc_test_rng *r, float *img, uint32_t w, uint32_t h)
{
    memset(img, 0, (size_t)w * h * sizeof(float));
    for (int b = 0; b < 4; b++) {
        double cx = nc_test_uniform(r) * w, cy = nc_test_uniform(r) * h;
        double s = 1.0 + 3.0 * nc_test_uniform(r);
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++) {
                double d2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
                float v = img[(size_t)y * w + x] + (float)exp(-d2 / (2 * s * s));
                img[(size_t)y * w + x] = v > 1.0f ? 1.0f : v;
            }
    }
}

enum { DEFORM_SRC = 5 };

typedef struct deform_case {
    nc_deform_params p;
    uint32_t w, h;
    float *src;                 /* [DEFORM_SRC][w * h] */
    uint32_t *index;
    uint64_t *state;
} deform_case;

/* a: parameter set (0 MNIST's, 1 affine only, 2 elastic only, 3 none), b: width,
 * c: height, batch: images */
static const char *const deform_names[] = { "mnist", "affine", "elastic", "none" };

static nc_deform_params deform_params(int i)
{
    const nc_deform_params set[] = { NC_DEFORM_MNIST,
                                     { 2.0f, 30.0f, 0.3f, 0.4f, 0.0f, 0.0f },
                                     { 0.0f, 0.0f, 0.0f, 0.0f, 4.0f, 40.0f },
                                     NC_DEFORM_NONE };
    return set[i];
}

static size_t deform_grid(op_shape *sh, size_t cap, int none)
{
    static const int32_t wh[][2] = { { 29, 29 }, { 28, 28 }, { 17, 23 }, { 40, 9 }, { 33, 31 },
                                     { 5, 64 } };
    static const uint32_t batches[] = { 1, 3, 37, 65 };
    size_t n = 0;
    for (int32_t ps = none ? 3 : 0; ps < (none ? 4 : 3); ps++)
        for (size_t i = 0; i < LEN(wh); i++)
            for (size_t bi = 0; bi < LEN(batches) && n < cap; bi++)
                sh[n++] = (op_shape){ .a = ps, .b = wh[i][0], .c = wh[i][1],
                                      .batch = batches[bi] };
    return n;
}

static size_t grid_deform(op_shape *sh, size_t cap) { return deform_grid(sh, cap, 0); }
static size_t grid_deform_none(op_shape *sh, size_t cap) { return deform_grid(sh, cap, 1); }

static int make_deform(op_ctx *c)
{
    deform_case *p = calloc(1, sizeof *p);
    if (!p)
        return -ENOMEM;
    c->priv = p;
    p->p = deform_params(c->sh->a);
    p->w = (uint32_t)c->sh->b;
    p->h = (uint32_t)c->sh->c;
    const size_t plane = (size_t)p->w * p->h;
    const uint32_t n = c->sh->batch;
    p->src = malloc(DEFORM_SRC * plane * sizeof(float));
    p->index = malloc(n * sizeof(uint32_t));
    p->state = malloc(n * sizeof(uint64_t));
    if (!p->src || !p->index || !p->state)
        return -ENOMEM;
    for (int i = 0; i < DEFORM_SRC; i++)
        blobs(&c->rng, p->src + i * plane, p->w, p->h);
    for (uint32_t i = 0; i < n; i++) {
        p->index[i] = (uint32_t)(nc_test_next(&c->rng) % DEFORM_SRC);
        p->state[i] = nc_test_next(&c->rng);
    }
    c->count = (size_t)n * plane;
    snprintf(c->shape, sizeof c->shape, "%s %ux%u images %u", deform_names[c->sh->a], p->w,
             p->h, n);
    return 0;
}

/* core's deformation of each image; a deformation must move pixels (none:
 * none at all), as test_deform.c checks */
static int cpu_deform(op_ctx *c)
{
    deform_case *p = c->priv;
    const size_t plane = (size_t)p->w * p->h;
    nc_deform *d = NULL;
    int r = nc_deform_new(&p->p, p->w, p->h, &d);
    double moved = 0.0;
    for (uint32_t i = 0; r == 0 && i < c->sh->batch; i++) {
        nc_deform_rng rng = { p->state[i] };
        r = nc_deform_apply(d, &rng, p->src + p->index[i] * plane, c->ref + i * plane);
        for (size_t k = 0; r == 0 && k < plane; k++)
            moved += fabs(c->ref[i * plane + k] - p->src[p->index[i] * plane + k]);
    }
    nc_deform_free(d);
    const int none = c->sh->a == 3;
    if (r == 0 && (none ? moved != 0.0 : moved <= 0.01 * (double)c->count))
        extra_fail(c, "%s: sum |out - in| %zu over %zu pixels", "core's deformation",
                   (size_t)moved, c->count);
    return r;
}

static int gpu_deform(op_ctx *c)
{
    deform_case *p = c->priv;
    return nc_gpu_deform_run(&p->p, p->w, p->h, 0, p->src, DEFORM_SRC, p->index, p->state,
                             c->sh->batch, c->got);
}

static void fini_deform(op_ctx *c)
{
    deform_case *p = c->priv;
    if (!p)
        return;
    free(p->src);
    free(p->index);
    free(p->state);
    free(p);
}

/* ---- the table ------------------------------------------------------------------ */

static const op_desc ops[] = {
    { "neocog_g", "UG on the shipped geometry (nc_gpu_neocog_g_forward)", grid_neocog_g,
      make_neocog_g, cpu_neocog_g, gpu_neocog_g, fini_neocog_g, CMP_NEO, NEO_TOL },
    { "neocog_s", "S-layer, every variant (T1..SPARSE, GEMM) on US1..US4",
      grid_neocog_s, make_neocog_s, cpu_neocog_s, gpu_neocog_s, fini_neocog_s, CMP_NEO,
      NEO_TOL },
    { "neocog_c", "C-layer, every kernel kind on UC1..UC3", grid_neocog_c, make_neocog_c,
      cpu_neocog_c, gpu_neocog_c, fini_neocog_c, CMP_NEO, NEO_TOL },
    { "neocog_c_scatter", "the scatter C kernel on 60 geometries no net has (steps 1/2/3)",
      grid_neocog_c_scatter, make_neocog_c_geom, cpu_neocog_c, gpu_neocog_c_scatter,
      fini_neocog_c, CMP_NEO, NEO_TOL },
    { "neocog_c_geom", "the other C kernels on the same geometries (those they take)",
      grid_neocog_c_geom, make_neocog_c_geom, cpu_neocog_c, gpu_neocog_c, fini_neocog_c,
      CMP_NEO, NEO_TOL },
    { "neocog_list", "lists of non-zero planes (nc_gpu_neocog_list_build; q compared)",
      grid_neocog_list, make_neocog_list, cpu_neocog_list, gpu_neocog_list, fini_neocog_list,
      CMP_NEO, 1e-6 },
    { "neocog_occ", "occupancy maps (nc_gpu_neocog_occupancy)", grid_neocog_occ,
      make_neocog_occ, cpu_neocog_occ, gpu_neocog_occ, fini_free_priv, CMP_EXACT, 0.0 },
    { "neocog_class", "UC4: scores per class and answers (nc_gpu_neocog_class_forward)",
      grid_neocog_class, make_neocog_class, cpu_neocog_class, gpu_neocog_class,
      fini_neocog_class, CMP_NEO, NEO_TOL },
    { "cnn_conv", "convolution, direct kernel (nc_gpu_cnn_conv_forward)", grid_cnn_conv,
      make_cnn, cpu_cnn, gpu_cnn_direct, NULL, CMP_CNN, CNN_TOL },
    { "cnn_conv_unrolled", "convolution unrolled + cuBLAS, one chunk (bn layers normalised)",
      grid_cnn_conv_all, make_cnn, cpu_cnn, gpu_cnn_unrolled, NULL, CMP_CNN, CNN_TOL },
    { "cnn_conv_unrolled_chunks", "the same with scratch for one image a chunk",
      grid_cnn_conv_all, make_cnn, cpu_cnn, gpu_cnn_unrolled_small, NULL, CMP_CNN, CNN_TOL },
    { "cnn_pool", "max-pooling (nc_gpu_cnn_pool_forward)", grid_cnn_pool, make_cnn, cpu_cnn,
      gpu_cnn_direct, NULL, CMP_CNN, CNN_TOL },
    { "cnn_full", "fully connected (nc_gpu_cnn_full_forward)", grid_cnn_full, make_cnn,
      cpu_cnn, gpu_cnn_direct, NULL, CMP_CNN, CNN_TOL },
    { "cnn_full_blas", "fully connected as one sgemm (bn layers normalised)",
      grid_cnn_full_all, make_cnn, cpu_cnn, gpu_cnn_blas, NULL, CMP_CNN, CNN_TOL },
    { "cnn_norm", "batch norm on the batch's statistics after the direct conv / full kernel",
      grid_cnn_norm, make_cnn, cpu_cnn, gpu_cnn_direct, NULL, CMP_CNN, CNN_TOL },
    { "cnn_act", "activation's derivative da = dy f'(y) (nc_gpu_cnn_act_backward)",
      grid_cnn_act, make_cnn_act, cpu_cnn_act, gpu_cnn_act, fini_free_priv, CMP_CNN,
      CNN_TOL },
    { "deform", "elastic / affine deformation of images (nc_gpu_deform_run)", grid_deform,
      make_deform, cpu_deform, gpu_deform, fini_deform, CMP_ABS, 1e-4 },
    { "deform_none", "no deformation: an exact copy", grid_deform_none, make_deform,
      cpu_deform, gpu_deform, fini_deform, CMP_ABS, 0.0 },
};

/* ---- the driver ------------------------------------------------------------------- */

static unsigned long long hash_name(const char *s)
{
    unsigned long long h = 1469598103934665603ULL;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h;
}

/* rel: ||got - ref|| / ||ref|| (CMP_NEO), or the larger of that and
 * max |got - ref| / max |ref| (CMP_CNN); non-finite cells counted apart */
static int compare(const op_desc *op, const op_ctx *c, double *max_abs, double *rel)
{
    double d2 = 0.0, r2 = 0.0, md = 0.0, mr = 0.0;
    size_t bad = 0;
    for (size_t i = 0; i < c->count; i++) {
        if (!isfinite(c->got[i])) {
            bad++;
            continue;
        }
        const double d = fabs((double)c->got[i] - c->ref[i]);
        d2 += d * d;
        r2 += (double)c->ref[i] * c->ref[i];
        md = d > md ? d : md;
        mr = fabs(c->ref[i]) > mr ? fabs(c->ref[i]) : mr;
    }
    *max_abs = md;
    *rel = r2 > 0.0 ? sqrt(d2 / r2) : sqrt(d2);
    if (op->cmp == CMP_CNN) {
        const double rm = mr > 0.0 ? md / mr : md;
        *rel = rm > *rel ? rm : *rel;
    }
    if (op->cmp == CMP_EXACT)
        return bad == 0 && md == 0.0;
    if (op->cmp == CMP_ABS)
        return bad == 0 && md <= op->tol;
    return bad == 0 && *rel <= op->tol;
}

/* the first few cells off by more than tol (1 + |ref|), or not finite, on stderr */
static void show_mismatches(const op_desc *op, const op_ctx *c)
{
    int shown = 0;
    for (size_t i = 0; i < c->count && shown < 5; i++)
        if (!isfinite(c->got[i]) ||
            fabs((double)c->got[i] - c->ref[i]) > op->tol * (1.0 + fabs(c->ref[i]))) {
            fprintf(stderr, "    %s %s [%zu] gpu %.9g ref %.9g\n", op->name, c->shape, i,
                    c->got[i], c->ref[i]);
            shown++;
        }
}

static int run_op(const op_desc *op, op_shape *grid, int *n_fail, int *n_skip)
{
    const size_t n = op->grid(grid, MAX_SHAPES);
    int cases = 0;
    for (size_t i = 0; i < n; i++) {
        op_ctx c;
        memset(&c, 0, sizeof c);
        c.sh = &grid[i];
        c.index = i;
        c.rng.s = hash_name(op->name) ^ (0x2545f4914f6cdd1dULL * (i + 1));
        snprintf(c.shape, sizeof c.shape, "case %zu", i);
        int r = op->make(&c);
        if (r == 0) {
            c.ref = malloc((c.count ? c.count : 1) * sizeof(float));
            c.got = malloc((c.count ? c.count : 1) * sizeof(float));
            r = c.ref && c.got ? 0 : -ENOMEM;
        }
        if (r == 0) {
            r = op->cpu(&c);
            if (r)
                snprintf(c.note, sizeof c.note, "core's reference: %d", r);
        }
        if (r == 0 && dry) {
            size_t nz = 0;
            double mr = 0.0;
            for (size_t j = 0; j < c.count; j++) {
                nz += c.ref[j] != 0.0f;
                mr = fabs(c.ref[j]) > mr ? fabs(c.ref[j]) : mr;
            }
            printf("%-24s %-72s ref max %.3g non-zero %.1f%% DRY%s%s\n", op->name, c.shape,
                   mr, c.count ? 100.0 * (double)nz / (double)c.count : 0.0,
                   c.fail ? "  " : "", c.fail ? c.note : "");
        } else if (r == 0) {
            for (size_t j = 0; j < c.count; j++)
                c.got[j] = NAN;
            r = op->gpu(&c);
            if (r)
                snprintf(c.note, sizeof c.note, "gpu: %d (%s)", r, nc_gpu_last_error());
        } else if (!c.note[0]) {
            snprintf(c.note, sizeof c.note, "setup: %d", r);
        }
        double max_abs = 0.0, rel = 0.0;
        const char *verdict;
        if (r == 0 && dry) {
            verdict = NULL;
        } else if (r == 0 && c.skip) {
            verdict = "SKIP";
            ++*n_skip;
        } else {
            const int ok = r == 0 && compare(op, &c, &max_abs, &rel) && !c.fail;
            verdict = ok ? "PASS" : "FAIL";
            if (!ok)
                ++*n_fail;
            if (!ok && r == 0)
                show_mismatches(op, &c);
            nc_test_checks++;
            nc_test_failures += !ok;
        }
        if (verdict)
            printf("%-24s %-72s max_abs_err %.3g rel %.3g tol %.0e %s%s%s\n", op->name,
                   c.shape, max_abs, rel, op->tol, verdict, c.note[0] ? "  " : "", c.note);
        fflush(stdout);
        if (op->fini)
            op->fini(&c);
        free(c.ref);
        free(c.got);
        cases++;
    }
    return cases;
}

int main(int argc, char **argv)
{
    const char *only = NULL;
    int list = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--list") == 0)
            list = 1;
        else if (strcmp(argv[i], "--dry") == 0)
            dry = 1;
        else if (strcmp(argv[i], "--op") == 0 && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--list] [--dry] [--op NAME]\n", argv[0]);
            return 2;
        }
    }
    op_shape *grid = malloc(MAX_SHAPES * sizeof *grid);
    if (!grid)
        return 1;
    int found = !only;
    for (size_t i = 0; i < LEN(ops); i++)
        found |= only && strcmp(ops[i].name, only) == 0;
    if (!found) {
        fprintf(stderr, "no op %s (--list names them)\n", only);
        free(grid);
        return 2;
    }
    if (list) {
        for (size_t i = 0; i < LEN(ops); i++)
            if (!only || strcmp(ops[i].name, only) == 0)
                printf("%-24s %5zu cases  %s\n", ops[i].name, ops[i].grid(grid, MAX_SHAPES),
                       ops[i].what);
        free(grid);
        return 0;
    }
    if (!dry && nc_test_gpu_count() <= 0) {
        free(grid);
        return NC_TEST_SKIP;
    }
    if (geo_net() != 0 ||
        (!dry && (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
                  cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS))) {
        fprintf(stderr, "setup failed\n");
        free(grid);
        return 1;
    }
    int n_fail = 0, n_skip = 0, cases = 0;
    for (size_t i = 0; i < LEN(ops); i++)
        if (!only || strcmp(ops[i].name, only) == 0)
            cases += run_op(&ops[i], grid, &n_fail, &n_skip);
    fprintf(stderr, "%d cases: %d failed, %d skipped (refused by their kernel)\n", cases,
            n_fail, n_skip);
    cnn_cache_drop();
    if (!dry)
        cublasDestroy(blas);
    nc_neocog_free(geo);
    free(grid);
    return nc_test_finish();
}

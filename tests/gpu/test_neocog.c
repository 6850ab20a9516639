/* tests/gpu/test_neocog.c — parity of the GPU neocognitron with core/.
 *
 * Every layer (UG, US1..US4 in every S-layer variant and every team of the
 * warp-team S kernel, UC1..UC3 with every C kernel, several shapes of the
 * tile one and every team of the warp one, UC4) is fed the very input core's
 * layer got and compared with core's output:
 * ||gpu - cpu|| / ||cpu|| <= 1e-5 over the batch, no NaN (outputs are
 * poisoned with NaN before each run, so an unwritten cell fails), and the
 * occupancy map each kernel writes must match its own output.  Inputs are
 * real digits (each layer's input as core's forward left it) and random
 * sparse ones; batches 1, 3, 31, 33 and 1000 draw characters from a pool of
 * 37 distinct ones (b mod 37), so a wrong batch offset shows.  Then the
 * resident engine, in every variant (and AUTO, which switches from the
 * sparse kernels to the GEMM path at a batch threshold), must give core's
 * labels on every fixture digit, through the graph path (batches <= 64) and
 * the chunked, stream-overlapped path.  The GEMM variant (gpu/neocog/neocog_s_gemm)
 * is a layer variant like the others here: every S-layer, both inputs,
 * every batch, poisoned outputs and occupancy.  So is the sparse kernel
 * with its reduction split over blocks (2, 5 and 32 runs at batches 1, 3 and
 * 33, two launches on one scratch bit-identical), and the engine with its
 * splits forced.  UG and US1 as one kernel (gpu/neocog/neocog_gs1) give both
 * layers' outputs and occupancy maps as core's, and the engine its labels
 * with that kernel and without.
 *
 * Large plane counts: the shipped model's first member (models/neocognitron.ncm,
 * a committee; K = 16/33/248/2240) runs the same layer parity on real digits at batches 1,
 * 33 and 200 in every variant that claims the layer (nc_gpu_neocog_s_check;
 * the sparse kernel splits US4's planes over blocks, T1-T3/T4/T5 refuse it
 * with -E2BIG), then the engine in every variant (a refused stage runs the
 * GEMM path) must give core's max-response labels and scores.  Exit 77
 * without a device.
 *
 * The C kernels on geometries no net here has (steps 1-3, windows 5-19)
 * are test_ops.c's (neocog_c_scatter, neocog_c_geom), with the layers'
 * kernels on random weights over a grid of plane counts and batches.
 *
 * Over 800 lines on purpose: one program opens the GPU once and every layer's
 * case uses the network and inputs built at the top (the real digits, core's
 * forward of them, and the variants' settings), which test_ops.c's table
 * does not reach. */
#include "fixture.h"
#include "test.h"
#include "gpu_test.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dataset.h"
#include "device.h"
#include "fileio.h"
#include "image.h"
#include "neocog.h"
#include "neocog_c.cuh"
#include "neocog_class.cuh"
#include "neocog_engine_dev.h"
#include "neocog_g.cuh"
#include "neocog_geom.h"
#include "neocog_gs1.cuh"
#include "neocog_list.cuh"
#include "neocog_occ.cuh"
#include "neocog_s.cuh"
#include "neocog_s_gemm.cuh"
#include "neocog_s_warp.cuh"

#define POOL 37
#define TOL 1e-5
static const uint32_t batches_small[] = { 1, 3, 31, 33, 1000 };
static const uint32_t batches_big[] = { 1, 33, 200 };
/* the batches test_layers runs, and whether it adds random inputs */
static const uint32_t *batches = batches_small;
static size_t n_batches = NC_ARRAY_LEN(batches_small);
static int with_random = 1;
static int refused;             /* S-layer variants that refused a layer */
/* run_case's TILE shape (nc_gpu_neocog_c_tile_forward); 0, 0: the kernel's
 * own choice through nc_gpu_neocog_c_forward_kind */
static uint32_t tile_side, tile_slices;
/* run_case's split of the sparse S kernel (nc_gpu_neocog_s_forward_split);
 * 0: the plain launch */
static uint32_t s_splits;
/* run_case's S kernel for small batches by teams of warps
 * (nc_gpu_neocog_s_forward_warp) and its team size; 0: not that kernel */
static int s_warp_on;
static uint32_t s_warps;
/* and its planes a block; 0: its default (128) */
static uint32_t s_warp_planes;
/* run_case's team size for the WARP C kernel; 0: its default */
static uint32_t c_team;
/* run_case's S-layers through the list kernel: f float4 a lane (0: off),
 * planes a block */
static uint32_t s_list_f, s_list_planes, s_list_by_char;
/* run_case's S-layers through the row kernel from the lists: warps and
 * planes a block (0: off), weights in shared memory (or through L1) */
static uint32_t s_rows_warps, s_rows_planes, s_rows_shared;
/* run_case's C-layers (DIRECT and SCATTER) also write the next S-layer's
 * lists of their output, entries carrying plane * c_lists_mul (0: off) */
static uint32_t c_lists_mul;
/* run_case's GEMM-path and row-kernel S-layers write every cell (1) or may
 * leave unoccupied positions unwritten (0: run_case zeroes the cells whose
 * occupancy byte is 0 before comparing, as the engine's download does) */
static uint32_t s_fill = 1;

static nc_test_rng rng = { 0x2545f4914f6cdd1dULL };
static float urand(void) { return (float)nc_test_uniform(&rng); }

#define CUDA_OK(x) CHECK_MSG((x) == cudaSuccess, "%s", #x)

/* ---- the net and core's answers ---------------------------------------------- */

static nc_neocog *net;
static float *digits;           /* [n_digits][65*65] */
static uint8_t *digit_label;
static int n_digits;
static nc_neocog_state *pool_st[POOL];  /* core's forward (F) of digits 0..POOL-1 */

static int load_digits(uint32_t n)
{
    nc_dataset ds = { 0 };
    int r = nc_test_fixture(&ds);
    if (r < 0)
        return r;
    nc_prep p = { .kind = NC_PREP_NEOCOG, .size = 65, .box = 40, .threshold = -1.0f };
    digits = malloc((size_t)ds.count * 65 * 65 * sizeof(float));
    digit_label = malloc(ds.count);
    uint32_t got = 0;
    for (uint32_t i = 0; digits && digit_label && i < ds.count && got < n; i++) {
        nc_image img = { ds.cols, ds.rows, ds.cols, ds.pixels + (size_t)i * ds.rows * ds.cols };
        if (nc_prep_apply(&img, &p, digits + (size_t)got * 65 * 65) < 0)
            continue;
        digit_label[got++] = ds.labels[i];
    }
    nc_dataset_fini(&ds);
    return digits && digit_label ? (int)got : -ENOMEM;
}

/* ---- comparison ------------------------------------------------------------ */

/* ||x - ref|| / ||ref|| over n cells; NaN anywhere fails.  Prints the first
 * few cells off by more than 1e-4 (1 + |ref|). */
static void compare(const char *what, const float *x, const float *ref, size_t n)
{
    double d2 = 0.0, r2 = 0.0;
    size_t nan = 0, shown = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i])) {
            nan++;
            continue;
        }
        double d = (double)x[i] - ref[i];
        d2 += d * d;
        r2 += (double)ref[i] * ref[i];
        if (fabs(d) > 1e-4 * (1.0 + fabs(ref[i])) && shown < 4) {
            fprintf(stderr, "    %s[%zu] = %.9g, cpu %.9g\n", what, i, x[i], ref[i]);
            shown++;
        }
    }
    double rel = r2 > 0.0 ? sqrt(d2 / r2) : sqrt(d2);
    CHECK_MSG(nan == 0 && rel <= TOL, "%s: rel err %.3g, %zu NaN of %zu cells", what, rel,
              nan, n);
}

/* occ[b][o] must say whether any plane of out[b][o] is > 0 */
static void check_occ(const char *what, const uint8_t *occ, const float *out,
                      size_t n_pos, uint32_t stride)
{
    size_t bad = 0;
    for (size_t o = 0; o < n_pos; o++) {
        int any = 0;
        for (uint32_t k = 0; k < stride; k++)
            any |= out[o * stride + k] > 0.0f;
        bad += occ[o] != any;
    }
    CHECK_MSG(bad == 0, "%s: %zu of %zu occupancy bytes wrong", what, bad, n_pos);
}

/* ---- one layer on the device ------------------------------------------------ */

typedef struct layer_case {
    int layer;                  /* nc_neocog_layer */
    size_t in_floats, out_floats;   /* per character */
    uint32_t n_in_pos, in_k, in_stride, n_out_pos, out_stride;
    nc_gpu_neocog_g_args g;
    nc_gpu_neocog_s_args s;
    nc_gpu_neocog_c_args c;
    uint32_t *d_lab;            /* UC4 */
    uint32_t n_classes;
} layer_case;

/* The sparse S kernel split in s_splits runs, twice on one scratch: the
 * first launch must leave the scratch's counters at zero for the second
 * (whose output, poisoned again, the caller compares with core), and both
 * must give the same bits, whichever block of a group finishes last. */
static int split_twice(const layer_case *lc, const float *d_in, const uint8_t *d_occ_in,
                       float *d_out, uint8_t *d_occ_out, uint32_t batch, size_t out_n)
{
    const size_t nc = nc_gpu_neocog_s_split_counters(&lc->s, batch);
    const size_t nf = nc_gpu_neocog_s_split_floats(&lc->s, batch, s_splits);
    const size_t n = batch * out_n;
    unsigned *d_cnt = NULL;
    float *d_part = NULL;
    float *first = malloc(n * sizeof(float)), *second = malloc(n * sizeof(float));
    CHECK_MSG(first && second && nc > 0 && nf > 0, "split %u batch %u: no memory", s_splits,
              batch);
    if (!first || !second || nc == 0 || nf == 0) {
        free(first);
        free(second);
        return -ENOMEM;
    }
    CUDA_OK(cudaMalloc((void **)&d_cnt, nc * sizeof(unsigned)));
    CUDA_OK(cudaMemset(d_cnt, 0, nc * sizeof(unsigned)));
    CUDA_OK(cudaMalloc((void **)&d_part, nf * sizeof(float)));
    CUDA_OK(cudaMemset(d_part, 0xff, nf * sizeof(float)));     /* any contents */
    /* too small a scratch is refused before anything is queued */
    CHECK_INT_EQ(nc_gpu_neocog_s_forward_split(&lc->s, d_in, d_occ_in, d_out, d_occ_out, batch,
                                               0, s_splits, d_cnt, nc - 1, d_part, nf, 0),
                 -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_s_forward_split(&lc->s, d_in, d_occ_in, d_out, d_occ_out, batch,
                                               0, s_splits, d_cnt, nc, d_part, nf - 1, 0),
                 -EINVAL);
    int r = nc_gpu_neocog_s_forward_split(&lc->s, d_in, d_occ_in, d_out, d_occ_out, batch, 0,
                                          s_splits, d_cnt, nc, d_part, nf, 0);
    if (r == 0) {
        CUDA_OK(cudaMemcpy(first, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemset(d_out, 0xff, n * sizeof(float)));
        CUDA_OK(cudaMemset(d_occ_out, 0xab, (size_t)batch * lc->n_out_pos));
        r = nc_gpu_neocog_s_forward_split(&lc->s, d_in, d_occ_in, d_out, d_occ_out, batch, 0,
                                          s_splits, d_cnt, nc, d_part, nf, 0);
    }
    if (r == 0) {
        CUDA_OK(cudaMemcpy(second, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK_MSG(memcmp(first, second, n * sizeof(float)) == 0,
                  "split %u batch %u: two launches differ", s_splits, batch);
    }
    cudaFree(d_cnt);
    cudaFree(d_part);
    free(first);
    free(second);
    return r;
}

/* The lists on the device (d_cnt, d_q, d_ent of n_pos positions, k planes,
 * entries carrying plane * mul) against core's nc_neocog_list_build of h
 * ([n_pos][stride], host): counts and entries exactly, sums of squares to
 * 1e-6. */
static void check_lists(const char *what, const float *h, size_t n_pos, uint32_t k,
                        uint32_t stride, uint32_t mul, const uint16_t *d_cnt, const float *d_q,
                        const int2 *d_ent)
{
    uint16_t *h_cnt = malloc(n_pos * sizeof(uint16_t)), *c_cnt = malloc(n_pos * sizeof(uint16_t));
    float *h_q = malloc(n_pos * sizeof(float)), *c_q = malloc(n_pos * sizeof(float));
    int32_t *h_ent = malloc(n_pos * k * 2 * sizeof(int32_t)),
            *c_ent = malloc(n_pos * k * 2 * sizeof(int32_t));
    REQUIRE(h_cnt && c_cnt && h_q && c_q && h_ent && c_ent);
    CUDA_OK(cudaMemcpy(h_cnt, d_cnt, n_pos * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h_q, d_q, n_pos * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h_ent, d_ent, n_pos * k * sizeof(int2), cudaMemcpyDeviceToHost));
    CHECK_INT_EQ(nc_neocog_list_build(h, n_pos, k, stride, mul, c_cnt, c_q, c_ent), 0);
    size_t bad_cnt = 0, bad_ent = 0, bad_q = 0;
    for (size_t p = 0; p < n_pos; p++) {
        if (h_cnt[p] != c_cnt[p]) {
            bad_cnt++;
            continue;
        }
        for (uint32_t j = 0; j < 2u * c_cnt[p]; j++)
            bad_ent += h_ent[p * k * 2 + j] != c_ent[p * k * 2 + j];
        bad_q += !(fabsf(h_q[p] - c_q[p]) <= 1e-6f * c_q[p]);
    }
    CHECK_MSG(bad_cnt == 0 && bad_ent == 0 && bad_q == 0,
              "%s: lists differ from core's: %zu counts, %zu entry words, %zu sums", what,
              bad_cnt, bad_ent, bad_q);
    free(h_cnt);
    free(c_cnt);
    free(h_q);
    free(c_q);
    free(h_ent);
    free(c_ent);
}

/* The S-layer of lc through the list kernel: the input's lists built on
 * the device and checked against core's nc_neocog_list_build of h_in
 * (counts and entries exactly, sums of squares to 1e-6), then the layer
 * from them (f s_list_f, s_list_planes planes a block; or, when
 * s_rows_warps is set, the row kernel with that many warps and
 * s_rows_planes planes a block, from lists of plane numbers); its return
 * in *ret. */
static void list_case(const char *tag, const layer_case *lc, const float *h_in,
                      const float *d_in, const uint8_t *d_occ_in, float *d_out,
                      uint8_t *d_occ_out, uint32_t batch, int *ret)
{
    const size_t n_pos = (size_t)batch * lc->n_in_pos;
    const uint32_t k = lc->s.k_in,
                   mul = s_rows_warps ? 1u : (uint32_t)lc->s.g.n_live *
                                                 (nc_neocog_kstride(lc->s.k_out) / 4u);
    uint16_t *d_cnt = NULL;
    float *d_q = NULL;
    int2 *d_ent = NULL;
    CUDA_OK(cudaMalloc((void **)&d_cnt, n_pos * sizeof(uint16_t)));
    CUDA_OK(cudaMalloc((void **)&d_q, n_pos * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&d_ent, n_pos * k * sizeof(int2)));
    CUDA_OK(cudaMemset(d_cnt, 0xab, n_pos * sizeof(uint16_t)));
    CUDA_OK(cudaMemset(d_q, 0xff, n_pos * sizeof(float)));
    int r = nc_gpu_neocog_list_build(d_in, d_occ_in, lc->n_in_pos, k, lc->in_stride, mul, d_cnt,
                                     d_q, d_ent, batch, 0);
    if (r == 0) {
        CUDA_OK(cudaDeviceSynchronize());
        char what[192];
        snprintf(what, sizeof what, "%s batch %u", tag, batch);
        check_lists(what, h_in, n_pos, k, lc->in_stride, mul, d_cnt, d_q, d_ent);
        if (s_rows_warps) {
            float *d_w = NULL;
            CUDA_OK(cudaMalloc((void **)&d_w,
                               nc_gpu_neocog_s_rows_wfloats(&lc->s, s_rows_planes) *
                                   sizeof(float)));
            r = nc_gpu_neocog_s_rows_weights(&lc->s, s_rows_planes, d_w, 0);
            if (r == 0)
                r = nc_gpu_neocog_s_forward_rows(&lc->s, d_w, d_cnt, d_q, d_ent, d_out,
                                                 d_occ_out, batch, s_rows_warps, s_rows_planes,
                                                 s_rows_shared, s_fill, 0);
            CUDA_OK(cudaDeviceSynchronize());
            cudaFree(d_w);
        } else {
            r = nc_gpu_neocog_s_forward_list(&lc->s, d_cnt, d_q, d_ent, d_out, d_occ_out,
                                             batch, s_list_f, s_list_planes, s_list_by_char, 0);
        }
    }
    CUDA_OK(cudaDeviceSynchronize());
    cudaFree(d_cnt);
    cudaFree(d_q);
    cudaFree(d_ent);
    *ret = r;
}

/* Run the layer on batch characters tiled from pool (pool[b % POOL]) and
 * compare with ref (same tiling). */
static void run_case(const char *tag, const layer_case *lc, int variant,
                     const float *pool_in, const float *pool_ref, uint32_t batch)
{
    float *d_in = NULL, *d_out = NULL;
    uint8_t *d_occ_in = NULL, *d_occ_out = NULL;
    int32_t *d_label = NULL;
    const int is_class = lc->layer == NC_NEOCOG_L_C4;
    const size_t out_n = is_class ? lc->n_classes : lc->out_floats;
    float *h_in = malloc(batch * lc->in_floats * sizeof(float));
    float *h_out = malloc(batch * out_n * sizeof(float));
    float *h_ref = malloc(batch * out_n * sizeof(float));
    uint8_t *h_occ = malloc((size_t)batch * lc->n_out_pos);
    REQUIRE(h_in && h_out && h_ref && h_occ);
    for (uint32_t b = 0; b < batch; b++) {
        memcpy(h_in + b * lc->in_floats, pool_in + (b % POOL) * lc->in_floats,
               lc->in_floats * sizeof(float));
        memcpy(h_ref + b * out_n, pool_ref + (b % POOL) * out_n, out_n * sizeof(float));
    }
    CUDA_OK(cudaMalloc((void **)&d_in, batch * lc->in_floats * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&d_out, batch * out_n * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&d_occ_in, (size_t)batch * lc->n_in_pos));
    CUDA_OK(cudaMalloc((void **)&d_occ_out, (size_t)batch * lc->n_out_pos));
    CUDA_OK(cudaMalloc((void **)&d_label, batch * sizeof(int32_t)));
    CUDA_OK(cudaMemcpy(d_in, h_in, batch * lc->in_floats * sizeof(float),
                       cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(d_out, 0xff, batch * out_n * sizeof(float)));      /* NaN */
    CUDA_OK(cudaMemset(d_occ_out, 0xab, (size_t)batch * lc->n_out_pos));
    CUDA_OK(cudaMemset(d_label, 0xab, batch * sizeof(int32_t)));
    int r = 0;
    /* the C kernel's lists, poisoned first */
    nc_gpu_neocog_lists ls = { NULL, NULL, NULL, c_lists_mul };
    const size_t l_pos = (size_t)batch * lc->n_out_pos;
    if (c_lists_mul && lc->layer % 2 == 0 && lc->layer >= 2 && !is_class) {
        CUDA_OK(cudaMalloc((void **)&ls.cnt, l_pos * sizeof(uint16_t)));
        CUDA_OK(cudaMalloc((void **)&ls.q, l_pos * sizeof(float)));
        CUDA_OK(cudaMalloc((void **)&ls.ent, l_pos * lc->c.k * sizeof(int2)));
        CUDA_OK(cudaMemset(ls.cnt, 0xab, l_pos * sizeof(uint16_t)));
        CUDA_OK(cudaMemset(ls.q, 0xff, l_pos * sizeof(float)));
        CUDA_OK(cudaMemset(ls.ent, 0xff, l_pos * lc->c.k * sizeof(int2)));
    }
    if (lc->layer != NC_NEOCOG_L_UG && !is_class)
        r = nc_gpu_neocog_occupancy(d_in, lc->n_in_pos, lc->in_k, lc->in_stride, d_occ_in,
                                    batch, 0);
    if (r == 0) {
        if (lc->layer == NC_NEOCOG_L_UG)
            r = nc_gpu_neocog_g_forward(&lc->g, d_in, d_out, d_occ_out, batch, 0);
        else if (is_class)
            r = nc_gpu_neocog_class_forward(d_in, lc->n_in_pos, lc->in_k, lc->d_lab,
                                            lc->n_classes, d_out, d_label, batch, 0);
        else if ((lc->layer - 1) % 2 == 0 && (s_list_f || s_rows_warps))
            /* before the GEMM branch: the list and row loops pass the GEMM
             * variant, where the engine runs these kernels */
            list_case(tag, lc, h_in, d_in, d_occ_in, d_out, d_occ_out, batch, &r);
        else if ((lc->layer - 1) % 2 == 0 && variant == NC_GPU_NEOCOG_GEMM) {
            nc_gpu_neocog_gemm *gm = NULL;
            r = nc_gpu_neocog_gemm_new(&lc->s, batch, 0, &gm);
            if (r == 0)
                r = nc_gpu_neocog_gemm_forward_fill(gm, d_in, d_occ_in, d_out, d_occ_out,
                                                    batch, s_fill, 0);
            if (r == 0 && cudaDeviceSynchronize() != cudaSuccess)
                r = -EIO;
            nc_gpu_neocog_gemm_free(gm);
        } else if ((lc->layer - 1) % 2 == 0 && s_warp_on)
            r = nc_gpu_neocog_s_forward_warp(&lc->s, d_in, d_occ_in, d_out, d_occ_out, batch,
                                             s_warps, s_warp_planes, 0);
        else if ((lc->layer - 1) % 2 == 0 && s_splits)
            r = split_twice(lc, d_in, d_occ_in, d_out, d_occ_out, batch, out_n);
        else if ((lc->layer - 1) % 2 == 0)
            r = nc_gpu_neocog_s_forward(&lc->s, d_in, d_occ_in, d_out, d_occ_out, batch,
                                        variant, 0, 0);
        else if (ls.cnt)
            r = nc_gpu_neocog_c_forward_lists(&lc->c, variant, d_in, d_occ_in, d_out, d_occ_out,
                                              &ls, batch, 0, 0);
        else if (variant == NC_GPU_NEOCOG_C_TILE && (tile_side || tile_slices))
            r = nc_gpu_neocog_c_tile_forward(&lc->c, d_in, d_occ_in, d_out, d_occ_out, batch,
                                             tile_side, tile_slices, 0);
        else
            r = nc_gpu_neocog_c_forward_kind(&lc->c, variant, d_in, d_occ_in, d_out, d_occ_out,
                                             batch, variant == NC_GPU_NEOCOG_C_WARP ? c_team : 0,
                                             0);
    }
    CHECK_MSG(r == 0, "%s: launch %d (%s)", tag, r, nc_gpu_last_error());
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(h_out, d_out, batch * out_n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h_occ, d_occ_out, (size_t)batch * lc->n_out_pos,
                       cudaMemcpyDeviceToHost));
    char what[160];
    snprintf(what, sizeof what, "%s batch %u", tag, batch);
    if (!s_fill && (lc->layer - 1) % 2 == 0)
        for (size_t p = 0; p < (size_t)batch * lc->n_out_pos; p++)
            if (!h_occ[p])
                memset(h_out + p * lc->out_stride, 0, lc->out_stride * sizeof(float));
    compare(what, h_out, h_ref, batch * out_n);
    if (!is_class)
        check_occ(what, h_occ, h_out, (size_t)batch * lc->n_out_pos, lc->out_stride);
    if (ls.cnt && r == 0)
        check_lists(what, h_out, l_pos, lc->c.k, lc->out_stride, c_lists_mul, ls.cnt, ls.q,
                    ls.ent);
    cudaFree(ls.cnt);
    cudaFree(ls.q);
    cudaFree(ls.ent);
    free(h_in);
    free(h_out);
    free(h_ref);
    free(h_occ);
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_occ_in);
    cudaFree(d_occ_out);
    cudaFree(d_label);
}

/* A layer's inputs and core's outputs on them: real digits and random. */
typedef struct pools {
    const float *in_real, *ref_real, *in_rand, *ref_rand;
} pools;

/* run_case on the digits, then (with_random) on the random inputs, tagged
 * "<what> digits" and "<what> random" */
static void run_both(const char *what, const layer_case *lc, int variant, const pools *pl,
                     uint32_t batch)
{
    char tag[160];
    snprintf(tag, sizeof tag, "%s digits", what);
    run_case(tag, lc, variant, pl->in_real, pl->ref_real, batch);
    if (!with_random)
        return;
    snprintf(tag, sizeof tag, "%s random", what);
    run_case(tag, lc, variant, pl->in_rand, pl->ref_rand, batch);
}

/* ---- building the cases ---------------------------------------------------- */

static float *d_a[4], *d_b[4];
static uint32_t *d_plane_label;

static int upload_weights(void)
{
    for (int l = 0; l < 4; l++) {
        size_t ks = nc_neocog_kstride(net->n_planes[l]);
        size_t na = (size_t)nc_neocog_k_in(net, l) * net->s_ix[l]->n_live * ks;
        if (cudaMalloc((void **)&d_a[l], na * sizeof(float)) != cudaSuccess ||
            cudaMalloc((void **)&d_b[l], ks * sizeof(float)) != cudaSuccess ||
            cudaMemcpy(d_a[l], net->a[l], na * sizeof(float), cudaMemcpyHostToDevice) ||
            cudaMemcpy(d_b[l], net->b[l], ks * sizeof(float), cudaMemcpyHostToDevice))
            return -ENOMEM;
    }
    size_t nl = net->n_planes[3] * sizeof(uint32_t);
    if (cudaMalloc((void **)&d_plane_label, nl) != cudaSuccess ||
        cudaMemcpy(d_plane_label, net->labels, nl, cudaMemcpyHostToDevice))
        return -ENOMEM;
    return 0;
}

/* g's live taps in device memory, as the engine gives them to the warp
 * kernels (nc_gpu_neocog_geom's taps); NULL on failure. */
static int32_t *upload_taps(const nc_gpu_neocog_geom *g)
{
    int32_t *h = malloc((size_t)g->n_live * 2 * sizeof(int32_t)), *d = NULL;
    if (!h)
        return NULL;
    nc_gpu_neocog_geom_pack_taps(g, h);
    if (cudaMalloc((void **)&d, (size_t)g->n_live * 2 * sizeof(int32_t)) != cudaSuccess ||
        cudaMemcpy(d, h, (size_t)g->n_live * 2 * sizeof(int32_t), cudaMemcpyHostToDevice)) {
        cudaFree(d);
        d = NULL;
    }
    free(h);
    return d;
}

static void make_case(int layer, layer_case *lc)
{
    memset(lc, 0, sizeof *lc);
    lc->layer = layer;
    const nc_neocog_arch *A = &net->arch;
    if (layer == NC_NEOCOG_L_UG) {
        REQUIRE(nc_gpu_neocog_geom_init(net->g_ix, net->g_w, &lc->g.g) == 0);
        lc->g.cut = A->g_cut;
        lc->in_floats = (size_t)A->in_size * A->in_size;
        lc->n_in_pos = A->in_size * A->in_size;
        lc->in_k = lc->in_stride = 1;
        lc->n_out_pos = A->g_size * A->g_size;
        lc->out_stride = 8;
        lc->out_floats = (size_t)lc->n_out_pos * 8;
        return;
    }
    uint32_t l = (uint32_t)(layer - 1) / 2;
    uint32_t K = net->n_planes[l], ks = nc_neocog_kstride(K);
    if ((layer - 1) % 2 == 0) {
        uint32_t n_in = l == 0 ? A->g_size : A->stage[l - 1].c_size;
        REQUIRE(nc_gpu_neocog_geom_init(net->s_ix[l], net->s_c[l], &lc->s.g) == 0);
        lc->s.k_in = nc_neocog_k_in(net, l);
        lc->s.in_stride = l == 0 ? 8 : nc_neocog_kstride(net->n_planes[l - 1]);
        lc->s.k_out = K;
        lc->s.theta = A->stage[l].theta;
        lc->s.a = d_a[l];
        lc->s.b = d_b[l];
        lc->n_in_pos = n_in * n_in;
        lc->in_k = lc->s.k_in;
        lc->in_stride = lc->s.in_stride;
        lc->n_out_pos = A->stage[l].s_size * A->stage[l].s_size;
    } else if (net->c_ix[l]) {
        REQUIRE(nc_gpu_neocog_geom_init(net->c_ix[l], net->c_d[l], &lc->c.g) == 0);
        lc->c.k = K;
        lc->n_in_pos = A->stage[l].s_size * A->stage[l].s_size;
        lc->in_k = K;
        lc->in_stride = ks;
        lc->n_out_pos = A->stage[l].c_size * A->stage[l].c_size;
    } else {
        lc->n_in_pos = A->stage[l].s_size * A->stage[l].s_size;
        lc->in_k = K;
        lc->in_stride = ks;
        lc->n_out_pos = 1;
        lc->d_lab = d_plane_label;
        lc->n_classes = A->n_classes;
    }
    lc->in_floats = (size_t)lc->n_in_pos * lc->in_stride;
    lc->out_stride = ks;
    lc->out_floats = (size_t)lc->n_out_pos * ks;
}

/* The layer's input as held in core's state. */
static const float *state_in(const nc_neocog_state *st, int layer)
{
    if (layer == NC_NEOCOG_L_UG) return st->u0;
    if (layer == NC_NEOCOG_L_S1) return st->ug;
    uint32_t l = (uint32_t)(layer - 1) / 2;
    return (layer - 1) % 2 == 0 ? st->uc[l - 1] : st->us[l];
}

/* CPU reference of one layer on one input (form G; UC4 by its definition). */
static void cpu_layer(const layer_case *lc, const float *in, float *out)
{
    const nc_neocog_arch *A = &net->arch;
    static float ws[1 << 16];
    int layer = lc->layer;
    if (layer == NC_NEOCOG_L_UG) {
        CHECK_INT_EQ(nc_neocog_g_forward(net->g_ix, net->g_w, A->g_cut, in, out, ws,
                                         NC_NEOCOG_FORM_G), 0);
        return;
    }
    uint32_t l = (uint32_t)(layer - 1) / 2;
    if ((layer - 1) % 2 == 0) {
        nc_neocog_s_args s = { .ix = net->s_ix[l], .k_in = lc->s.k_in,
                               .in_stride = lc->s.in_stride, .k_out = lc->s.k_out,
                               .a = net->a[l], .b = net->b[l], .c = net->s_c[l],
                               .theta = lc->s.theta };
        CHECK_INT_EQ(nc_neocog_s_forward(&s, in, out, ws, NC_NEOCOG_FORM_G), 0);
    } else if (net->c_ix[l]) {
        CHECK_INT_EQ(nc_neocog_c_forward(net->c_ix[l], net->c_d[l], lc->c.k, in, out, ws,
                                         NC_NEOCOG_FORM_G), 0);
    } else {            /* UC4, as core's class_max */
        for (uint32_t c = 0; c < lc->n_classes; c++)
            out[c] = 0.0f;
        for (uint32_t o = 0; o < lc->n_in_pos; o++)
            for (uint32_t k = 0; k < lc->in_k; k++) {
                float u = in[o * lc->in_stride + k];
                if (u > out[net->labels[k]])
                    out[net->labels[k]] = u;
            }
    }
}

/* Random input of a layer: binary-ish for UG; for the others a sparse layer
 * like the real ones (30% of positions occupied, half their planes > 0). */
static void random_input(const layer_case *lc, float *in)
{
    for (uint32_t o = 0; o < lc->n_in_pos; o++) {
        int occ = urand() < 0.3f;
        for (uint32_t k = 0; k < lc->in_stride; k++) {
            float v = 0.0f;
            if (lc->layer == NC_NEOCOG_L_UG)
                v = urand() < 0.3f ? 1.0f : (urand() < 0.1f ? urand() : 0.0f);
            else if (k < lc->in_k && occ && urand() < 0.5f)
                v = urand();
            in[(size_t)o * lc->in_stride + k] = v;
        }
    }
}

static void test_layers(void)
{
    for (int layer = 0; layer <= 8; layer++) {
        layer_case lc;
        make_case(layer, &lc);
        const int is_class = layer == NC_NEOCOG_L_C4;
        const size_t out_n = is_class ? lc.n_classes : lc.out_floats;
        float *in_real = malloc(POOL * lc.in_floats * sizeof(float));
        float *ref_real = malloc(POOL * out_n * sizeof(float));
        float *in_rand = malloc(POOL * lc.in_floats * sizeof(float));
        float *ref_rand = malloc(POOL * out_n * sizeof(float));
        REQUIRE(in_real && ref_real && in_rand && ref_rand);
        for (int p = 0; p < POOL; p++) {
            const float *out = NULL;
            memcpy(in_real + p * lc.in_floats, state_in(pool_st[p], layer),
                   lc.in_floats * sizeof(float));
            CHECK_INT_EQ(nc_neocog_layer_out(net, pool_st[p], layer, &out, NULL, NULL, NULL), 0);
            memcpy(ref_real + p * out_n, out, out_n * sizeof(float));
            if (with_random) {
                random_input(&lc, in_rand + p * lc.in_floats);
                cpu_layer(&lc, in_rand + p * lc.in_floats, ref_rand + p * out_n);
            }
        }
        static const char *name[9] = { "UG", "US1", "UC1", "US2", "UC2", "US3", "UC3",
                                       "US4", "UC4" };
        const int is_s = layer % 2 == 1;
        const int is_c = layer % 2 == 0 && layer >= 2 && layer <= 6;
        const int n_var = is_s ? NC_GPU_NEOCOG_N_VARIANTS : is_c ? NC_GPU_NEOCOG_C_N_KINDS : 1;
        const pools pl = { in_real, ref_real, in_rand, ref_rand };
        char what[96];
        int before = nc_test_failures, n_run = 0;
        for (int v = 0; v < n_var; v++) {
            if (is_s && v != NC_GPU_NEOCOG_GEMM) {
                const int c = nc_gpu_neocog_s_check(&lc.s, batches[n_batches - 1], v, 0);
                CHECK_MSG(c == 0 || c == -E2BIG, "%s %s: check %d", name[layer],
                          nc_gpu_neocog_variant_name(v), c);
                if (c < 0) {
                    fprintf(stderr, "  %-3s: %s refuses %u planes (%d): the engine runs "
                            "GEMM there\n", name[layer], nc_gpu_neocog_variant_name(v),
                            lc.s.k_out, c);
                    refused++;
                    continue;
                }
            }
            n_run++;
            snprintf(what, sizeof what, "%s %s", name[layer],
                     is_s ? nc_gpu_neocog_variant_name(v)
                          : is_c ? nc_gpu_neocog_c_kind_name(v) : "");
            for (size_t bi = 0; bi < n_batches; bi++)
                run_both(what, &lc, v, &pl, batches[bi]);
        }
        fprintf(stderr, "  %-3s: %d variant(s) x %zu batches x %s: %s\n", name[layer],
                n_run, n_batches, with_random ? "digits+random" : "digits",
                nc_test_failures == before ? "ok" : "FAILED");
        /* the sparse kernel with its reduction split: 2, 5 and 32 runs
         * (more runs than some positions have cells), at small batches */
        if (is_s && nc_gpu_neocog_s_check(&lc.s, 33, NC_GPU_NEOCOG_SPARSE, 0) == 0) {
            static const uint32_t splits[] = { 2, 5, 32 }, sb[] = { 1, 3, 33 };
            before = nc_test_failures;
            for (size_t i = 0; i < NC_ARRAY_LEN(splits); i++) {
                s_splits = splits[i];
                snprintf(what, sizeof what, "%s sparse split %u", name[layer], s_splits);
                for (size_t bi = 0; bi < NC_ARRAY_LEN(sb); bi++)
                    if (sb[bi] * s_splits <= 99)    /* the engine splits batch n in 32 / n */
                        run_both(what, &lc, NC_GPU_NEOCOG_SPARSE, &pl, sb[bi]);
            }
            s_splits = 0;
            fprintf(stderr, "  %-3s: sparse split 2/5/32 x batches 1/3/33 (n x split <= 99): "
                    "%s\n", name[layer],
                    nc_test_failures == before ? "ok" : "FAILED");
        }
        /* the S kernel by teams of warps: every team size and the
         * default, at the batches it is for (and 200, past them); a team
         * size that is no power of two is refused */
        if (is_s) {
            static const uint32_t team[] = { 0, 1, 2, 4, 8, 16 }, sb[] = { 1, 3, 33, 200 };
            before = nc_test_failures;
            CHECK_INT_EQ(nc_gpu_neocog_s_forward_warp(&lc.s, d_a[0], NULL, d_a[0], NULL, 1, 3,
                                                      0, 0), -EINVAL);
            CHECK_INT_EQ(nc_gpu_neocog_s_forward_warp(&lc.s, d_a[0], NULL, d_a[0], NULL, 1, 1,
                                                      24, 0), -EINVAL);
            CHECK_INT_EQ(nc_gpu_neocog_s_forward_warp(&lc.s, d_a[0], NULL, d_a[0], NULL, 1, 1,
                                                      4, 0), -EINVAL);
            s_warp_on = 1;
            /* the taps from a device table, as the engine runs it */
            int32_t *d_taps = upload_taps(&lc.s.g);
            REQUIRE(d_taps != NULL);
            lc.s.g.taps = d_taps;
            for (size_t i = 0; i < NC_ARRAY_LEN(team); i++) {
                s_warps = team[i];
                snprintf(what, sizeof what, "%s warp team %u", name[layer], s_warps);
                for (size_t bi = 0; bi < NC_ARRAY_LEN(sb); bi++)
                    if (team[i] <= 2 || sb[bi] != 200)
                        run_both(what, &lc, NC_GPU_NEOCOG_SPARSE, &pl, sb[bi]);
            }
            lc.s.g.taps = NULL;
            cudaFree(d_taps);
            fprintf(stderr, "  %-3s: warp teams 0(default)/1/2/4/8/16 x batches 1/3/33 "
                    "(200 for 0-2), taps from a device table: %s\n", name[layer],
                    nc_test_failures == before ? "ok" : "FAILED");
            /* fewer planes a block: more blocks on the grid's y, the
             * occupancy map cleared first and set by any that fires (the
             * taps from the constant bank) */
            static const uint32_t planes[] = { 8, 16, 32, 64 }, pteam[] = { 1, 4, 16 };
            before = nc_test_failures;
            for (size_t i = 0; i < NC_ARRAY_LEN(planes); i++)
                for (size_t j = 0; j < NC_ARRAY_LEN(pteam); j++) {
                    s_warp_planes = planes[i];
                    s_warps = pteam[j];
                    snprintf(what, sizeof what, "%s warp team %u, %u planes a block",
                             name[layer], s_warps, s_warp_planes);
                    for (size_t bi = 0; bi < NC_ARRAY_LEN(sb); bi++)
                        if (sb[bi] != 200)
                            run_both(what, &lc, NC_GPU_NEOCOG_SPARSE, &pl, sb[bi]);
                }
            s_warp_on = 0;
            s_warps = 0;
            s_warp_planes = 0;
            fprintf(stderr, "  %-3s: warp teams 1/4/16 x 8/16/32/64 planes a block x batches "
                    "1/3/33, taps from the constant bank: %s\n", name[layer],
                    nc_test_failures == before ? "ok" : "FAILED");
        }
        /* the list kernel: 1, 2 and 4 float4 a lane with 8, 12, 32, 64 and
         * 128 planes a block (12: float4 a lane that reach past the
         * block's planes), taps from the constant bank and from a device
         * table; settings it refuses */
        if (is_s) {
            static const uint32_t fs[] = { 1, 2, 4 }, planes[] = { 8, 12, 32, 64, 128 },
                                  sb[] = { 1, 3, 33, 200 };
            before = nc_test_failures;
            int n_set = 0;
            CHECK_INT_EQ(nc_gpu_neocog_s_forward_list(&lc.s, (const uint16_t *)d_a[0], d_a[0],
                                                      (const int2 *)d_a[0], d_a[0], NULL, 1, 3,
                                                      32, 0, 0), -EINVAL);
            CHECK_INT_EQ(nc_gpu_neocog_s_forward_list(&lc.s, (const uint16_t *)d_a[0], d_a[0],
                                                      (const int2 *)d_a[0], d_a[0], NULL, 1, 1,
                                                      30, 0, 0), -EINVAL);
            CHECK_INT_EQ(nc_gpu_neocog_s_forward_list(&lc.s, (const uint16_t *)d_a[0], d_a[0],
                                                      (const int2 *)d_a[0], d_a[0], NULL, 1, 1,
                                                      4100, 0, 0), -EINVAL);
            CHECK_INT_EQ(nc_gpu_neocog_s_forward_list(&lc.s, (const uint16_t *)d_a[0], d_a[0],
                                                      (const int2 *)d_a[0], d_a[0], NULL, 1, 1,
                                                      32, 2, 0), -EINVAL);
            int32_t *d_taps = upload_taps(&lc.s.g);
            REQUIRE(d_taps != NULL);
            for (size_t i = 0; i < NC_ARRAY_LEN(fs); i++)
                for (size_t j = 0; j < NC_ARRAY_LEN(planes); j++) {
                    const uint32_t pb4 = planes[j] / 4, ks4 = nc_neocog_kstride(lc.s.k_out) / 4;
                    if (((pb4 < ks4 ? pb4 : ks4) + fs[i] - 1) / fs[i] > 32)
                        continue;
                    s_list_f = fs[i];
                    s_list_planes = planes[j];
                    s_list_by_char = (uint32_t)(n_set / 2) % 2;
                    lc.s.g.taps = n_set++ % 2 ? d_taps : NULL;
                    snprintf(what, sizeof what, "%s list f %u, %u planes a block, %s%s",
                             name[layer], s_list_f, s_list_planes,
                             s_list_by_char ? "characters a block" : "positions a block",
                             lc.s.g.taps ? ", device taps" : "");
                    for (size_t bi = 0; bi < NC_ARRAY_LEN(sb); bi++)
                        run_both(what, &lc, NC_GPU_NEOCOG_GEMM, &pl, sb[bi]);
                }
            lc.s.g.taps = NULL;
            cudaFree(d_taps);
            s_list_f = s_list_planes = s_list_by_char = 0;
            fprintf(stderr, "  %-3s: list kernel, f 1/2/4 x 8/12/32/64/128 planes a block, "
                    "positions or characters a block (%d settings) x batches 1/3/33/200, lists "
                    "as core's: %s\n", name[layer], n_set,
                    nc_test_failures == before ? "ok" : "FAILED");
        }
        /* the GEMM path leaving positions with an empty window unwritten
         * (fill 0: the engine's, where a C-layer reads the output) */
        if (is_s) {
            before = nc_test_failures;
            s_fill = 0;
            for (size_t bi = 0; bi < n_batches; bi++) {
                snprintf(what, sizeof what, "%s gemm, fill 0", name[layer]);
                run_both(what, &lc, NC_GPU_NEOCOG_GEMM, &pl, batches[bi]);
            }
            s_fill = 1;
            fprintf(stderr, "  %-3s: gemm with fill 0 (unoccupied positions zeroed by their "
                    "occupancy before the comparison): %s\n", name[layer],
                    nc_test_failures == before ? "ok" : "FAILED");
        }
        /* the row kernel from lists of plane numbers: 4, 8 and 16 warps
         * with 32 planes a block, 8 warps with 64, 96 and 128 (more
         * than one block of planes where the layer has more; US2's random
         * inputs, about 3300 entries a character, overflow a block's 3072
         * and take the global path); settings it refuses */
        if (is_s) {
            static const uint32_t set[][3] = { { 4, 32, 1 }, { 8, 32, 1 }, { 16, 32, 1 },
                                               { 8, 64, 1 }, { 8, 96, 1 }, { 8, 128, 1 },
                                               { 8, 32, 0 }, { 16, 64, 0 } },
                                  sb[] = { 1, 3, 33, 200 };
            const int takes = nc_gpu_neocog_s_rows_check(&lc.s, 32) == 0;
            const nc_gpu_neocog_s_args *ls = &lc.s;
            before = nc_test_failures;
            CHECK_INT_EQ(nc_gpu_neocog_s_forward_rows(ls, d_a[0], (const uint16_t *)d_a[0],
                                                      d_a[0], (const int2 *)d_a[0], d_a[0],
                                                      NULL, 1, 5, 32, 1, 1, 0), -EINVAL);
            CHECK_INT_EQ(nc_gpu_neocog_s_forward_rows(ls, d_a[0], (const uint16_t *)d_a[0],
                                                      d_a[0], (const int2 *)d_a[0], d_a[0],
                                                      NULL, 1, 8, 32, 2, 1, 0), -EINVAL);
            CHECK_INT_EQ(nc_gpu_neocog_s_forward_rows(ls, d_a[0], (const uint16_t *)d_a[0],
                                                      d_a[0], (const int2 *)d_a[0], d_a[0],
                                                      NULL, 1, 8, 48, 1, 1, 0), -EINVAL);
            /* fill 0 needs the occupancy map that says what was written */
            CHECK_INT_EQ(nc_gpu_neocog_s_forward_rows(ls, d_a[0], (const uint16_t *)d_a[0],
                                                      d_a[0], (const int2 *)d_a[0], d_a[0],
                                                      NULL, 1, 8, 32, 1, 0, 0), -EINVAL);
            CHECK_INT_EQ(nc_gpu_neocog_s_forward_rows(ls, d_a[0], (const uint16_t *)d_a[0],
                                                      d_a[0], (const int2 *)d_a[0], d_a[0],
                                                      NULL, 0, 8, 32, 1, 1, 0), -EINVAL);
            /* US1 reads the 71-wide UG, too wide for its bit maps */
            CHECK_INT_EQ(takes, layer != NC_NEOCOG_L_S1);
            for (size_t i = 0; takes && i < NC_ARRAY_LEN(set); i++) {
                s_rows_warps = set[i][0];
                s_rows_planes = set[i][1];
                s_rows_shared = set[i][2];
                s_fill = i % 2 ? 0 : 1;
                snprintf(what, sizeof what, "%s rows, %u warps, %u planes a block%s%s",
                         name[layer], s_rows_warps, s_rows_planes,
                         s_rows_shared ? "" : ", weights through L1",
                         s_fill ? "" : ", fill 0");
                for (size_t bi = 0; bi < NC_ARRAY_LEN(sb); bi++)
                    run_both(what, &lc, NC_GPU_NEOCOG_GEMM, &pl, sb[bi]);
            }
            s_rows_warps = s_rows_planes = 0;
            s_fill = 1;
            fprintf(stderr, "  %-3s: row kernel, 4/8/16 warps x 32 planes and 8 warps x "
                    "64/96/128 planes a block, 8 x 32 and 16 x 64 with weights through L1 "
                    "(every other one with fill 0), x batches 1/3/33/200, lists of plane "
                    "numbers as core's: %s\n", name[layer],
                    !takes ? "refused, as it should" : nc_test_failures == before ? "ok"
                                                                              : "FAILED");
        }
        /* the WARP C kernel's team sizes (the default is in the kinds'
         * loop above, taps from the constant bank; here from a device
         * table); a team that is no power of two is refused */
        if (is_c) {
            static const uint32_t team[] = { 1, 2, 4, 8, 16 }, sb[] = { 1, 3, 33 };
            before = nc_test_failures;
            CHECK_INT_EQ(nc_gpu_neocog_c_forward_kind(&lc.c, NC_GPU_NEOCOG_C_WARP, d_a[0], NULL,
                                                      d_a[0], NULL, 1, 3, 0), -EINVAL);
            int32_t *d_taps = upload_taps(&lc.c.g);
            REQUIRE(d_taps != NULL);
            lc.c.g.taps = d_taps;
            for (size_t i = 0; i < NC_ARRAY_LEN(team); i++) {
                c_team = team[i];
                snprintf(what, sizeof what, "%s warp team %u", name[layer], c_team);
                for (size_t bi = 0; bi < NC_ARRAY_LEN(sb); bi++)
                    run_both(what, &lc, NC_GPU_NEOCOG_C_WARP, &pl, sb[bi]);
            }
            lc.c.g.taps = NULL;
            cudaFree(d_taps);
            c_team = 0;
            fprintf(stderr, "  %-3s: warp teams 1/2/4/8/16 x batches 1/3/33, taps from a device "
                    "table: %s\n", name[layer], nc_test_failures == before ? "ok" : "FAILED");
        }
        /* DIRECT and SCATTER writing the next S-layer's lists with their
         * output (the engine's large batches), entries carrying the
         * plane itself (the row kernel's) and plane x 7; the other kinds
         * refuse */
        if (is_c) {
            static const uint32_t muls[] = { 1, 7 }, sb[] = { 1, 3, 33, 200 };
            static const int kinds[] = { NC_GPU_NEOCOG_C_DIRECT, NC_GPU_NEOCOG_C_SCATTER };
            before = nc_test_failures;
            nc_gpu_neocog_lists ls = { (uint16_t *)d_a[1], d_a[2], (int2 *)d_a[3], 1 };
            for (int kd = 0; kd < NC_GPU_NEOCOG_C_N_KINDS; kd++)
                if (kd != NC_GPU_NEOCOG_C_DIRECT && kd != NC_GPU_NEOCOG_C_SCATTER)
                    CHECK_INT_EQ(nc_gpu_neocog_c_forward_lists(&lc.c, kd, d_a[0], NULL, d_b[0],
                                                               NULL, &ls, 1, 0, 0),
                                 -EINVAL);
            for (size_t i = 0; i < NC_ARRAY_LEN(muls); i++) {
                c_lists_mul = muls[i];
                for (size_t ki = 0; ki < NC_ARRAY_LEN(kinds); ki++) {
                    snprintf(what, sizeof what, "%s %s with lists x%u", name[layer],
                             nc_gpu_neocog_c_kind_name(kinds[ki]), c_lists_mul);
                    for (size_t bi = 0; bi < NC_ARRAY_LEN(sb); bi++)
                        run_both(what, &lc, kinds[ki], &pl, sb[bi]);
                }
            }
            c_lists_mul = 0;
            fprintf(stderr, "  %-3s: direct and scatter writing the next S-layer's lists (x1, "
                    "x7) x batches 1/3/33/200, as core's lists of their output; the other "
                    "kinds refuse: %s\n", name[layer],
                    nc_test_failures == before ? "ok" : "FAILED");
        }
        /* the tile kernel's other shapes (the bench times them all): tile
         * sides 1..8 (edge tiles cut by the plane's width), 1, 2 or 4 tap
         * slices, an empty tile's zeros, the loop past 1024 threads */
        if (is_c) {
            static const uint32_t shape[][2] = { { 1, 1 }, { 1, 4 }, { 2, 2 }, { 3, 4 },
                                                 { 4, 1 }, { 5, 2 }, { 6, 4 }, { 8, 1 } };
            static const uint32_t sb[] = { 1, 33 };
            before = nc_test_failures;
            for (size_t i = 0; i < NC_ARRAY_LEN(shape); i++) {
                tile_side = shape[i][0];
                tile_slices = shape[i][1];
                snprintf(what, sizeof what, "%s tile %ux%u/%u", name[layer], tile_side,
                         tile_side, tile_slices);
                for (size_t bi = 0; bi < NC_ARRAY_LEN(sb); bi++)
                    run_both(what, &lc, NC_GPU_NEOCOG_C_TILE, &pl, sb[bi]);
            }
            tile_side = tile_slices = 0;
            fprintf(stderr, "  %-3s: tile shapes x batches 1/33: %s\n", name[layer],
                    nc_test_failures == before ? "ok" : "FAILED");
        }
        free(in_real);
        free(ref_real);
        free(in_rand);
        free(ref_rand);
    }
}

/* ---- UG and US1 as one kernel ---------------------------------------------- */

/* nc_gpu_neocog_gs1_forward on batch images tiled from pool_in (b mod
 * POOL): UG and US1 against core's (ug_ref, s1_ref, same tiling), outputs
 * poisoned first, both occupancy maps checked. */
static void gs1_case(const char *tag, const layer_case *lg, const layer_case *ls,
                     const float *pool_in, const float *ug_ref, const float *s1_ref,
                     uint32_t batch)
{
    const size_t ni = lg->in_floats, ng = lg->out_floats, ns = ls->out_floats;
    float *h_in = malloc(batch * ni * sizeof(float));
    float *h_ug = malloc(batch * ng * sizeof(float)), *r_ug = malloc(batch * ng * sizeof(float));
    float *h_s = malloc(batch * ns * sizeof(float)), *r_s = malloc(batch * ns * sizeof(float));
    uint8_t *h_og = malloc((size_t)batch * lg->n_out_pos);
    uint8_t *h_os = malloc((size_t)batch * ls->n_out_pos);
    REQUIRE(h_in && h_ug && r_ug && h_s && r_s && h_og && h_os);
    for (uint32_t b = 0; b < batch; b++) {
        memcpy(h_in + b * ni, pool_in + (b % POOL) * ni, ni * sizeof(float));
        memcpy(r_ug + b * ng, ug_ref + (b % POOL) * ng, ng * sizeof(float));
        memcpy(r_s + b * ns, s1_ref + (b % POOL) * ns, ns * sizeof(float));
    }
    float *d_in = NULL, *d_ug = NULL, *d_s = NULL;
    uint8_t *d_og = NULL, *d_os = NULL;
    CUDA_OK(cudaMalloc((void **)&d_in, batch * ni * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&d_ug, batch * ng * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&d_s, batch * ns * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&d_og, (size_t)batch * lg->n_out_pos));
    CUDA_OK(cudaMalloc((void **)&d_os, (size_t)batch * ls->n_out_pos));
    CUDA_OK(cudaMemcpy(d_in, h_in, batch * ni * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(d_ug, 0xff, batch * ng * sizeof(float)));       /* NaN */
    CUDA_OK(cudaMemset(d_s, 0xff, batch * ns * sizeof(float)));
    CUDA_OK(cudaMemset(d_og, 0xab, (size_t)batch * lg->n_out_pos));
    CUDA_OK(cudaMemset(d_os, 0xab, (size_t)batch * ls->n_out_pos));
    int r = nc_gpu_neocog_gs1_forward(&lg->g, &ls->s, d_in, d_ug, d_og, d_s, d_os, batch, 0);
    CHECK_MSG(r == 0, "%s: launch %d (%s)", tag, r, nc_gpu_last_error());
    CUDA_OK(cudaDeviceSynchronize());
    CUDA_OK(cudaMemcpy(h_ug, d_ug, batch * ng * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h_s, d_s, batch * ns * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h_og, d_og, (size_t)batch * lg->n_out_pos, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(h_os, d_os, (size_t)batch * ls->n_out_pos, cudaMemcpyDeviceToHost));
    char what[160];
    snprintf(what, sizeof what, "%s UG batch %u", tag, batch);
    compare(what, h_ug, r_ug, batch * ng);
    check_occ(what, h_og, h_ug, (size_t)batch * lg->n_out_pos, lg->out_stride);
    snprintf(what, sizeof what, "%s US1 batch %u", tag, batch);
    compare(what, h_s, r_s, batch * ns);
    check_occ(what, h_os, h_s, (size_t)batch * ls->n_out_pos, ls->out_stride);
    cudaFree(d_in);
    cudaFree(d_ug);
    cudaFree(d_s);
    cudaFree(d_og);
    cudaFree(d_os);
    free(h_in);
    free(h_ug);
    free(r_ug);
    free(h_s);
    free(r_s);
    free(h_og);
    free(h_os);
}

/* UG and US1 in one launch, on digits (core's own UG and US1 of them) and
 * random images, batches 1, 3, 8 and 33 (tiles cut by the plane's edge,
 * characters on the grid's y); a stage it does not take is refused. */
static void test_gs1(void)
{
    layer_case lg, ls, l2;
    make_case(NC_NEOCOG_L_UG, &lg);
    make_case(NC_NEOCOG_L_S1, &ls);
    make_case(NC_NEOCOG_L_S2, &l2);
    CHECK_INT_EQ(nc_gpu_neocog_gs1_check(&lg.g, &ls.s), 0);
    CHECK_INT_EQ(nc_gpu_neocog_gs1_check(&lg.g, &l2.s), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_gs1_forward(&lg.g, &l2.s, d_a[0], NULL, NULL, d_a[0], NULL, 1,
                                           0), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_gs1_forward(&lg.g, &ls.s, d_a[0], NULL, NULL, d_a[0], NULL, 0,
                                           0), -EINVAL);
    const size_t ni = lg.in_floats, ng = lg.out_floats, ns = ls.out_floats;
    float *in[2], *ug[2], *s1[2];
    for (int i = 0; i < 2; i++) {
        in[i] = malloc(POOL * ni * sizeof(float));
        ug[i] = malloc(POOL * ng * sizeof(float));
        s1[i] = malloc(POOL * ns * sizeof(float));
        REQUIRE(in[i] && ug[i] && s1[i]);
    }
    for (int p = 0; p < POOL; p++) {
        const float *out = NULL;
        memcpy(in[0] + p * ni, state_in(pool_st[p], NC_NEOCOG_L_UG), ni * sizeof(float));
        CHECK_INT_EQ(nc_neocog_layer_out(net, pool_st[p], NC_NEOCOG_L_UG, &out, NULL, NULL,
                                         NULL), 0);
        memcpy(ug[0] + p * ng, out, ng * sizeof(float));
        CHECK_INT_EQ(nc_neocog_layer_out(net, pool_st[p], NC_NEOCOG_L_S1, &out, NULL, NULL,
                                         NULL), 0);
        memcpy(s1[0] + p * ns, out, ns * sizeof(float));
        random_input(&lg, in[1] + p * ni);
        cpu_layer(&lg, in[1] + p * ni, ug[1] + p * ng);
        cpu_layer(&ls, ug[1] + p * ng, s1[1] + p * ns);
    }
    static const uint32_t sb[] = { 1, 3, 8, 33 };
    const int before = nc_test_failures;
    for (size_t bi = 0; bi < NC_ARRAY_LEN(sb); bi++) {
        gs1_case("UG+US1 digits", &lg, &ls, in[0], ug[0], s1[0], sb[bi]);
        gs1_case("UG+US1 random", &lg, &ls, in[1], ug[1], s1[1], sb[bi]);
    }
    fprintf(stderr, "  UG+US1 in one kernel x batches 1/3/8/33 x digits+random: %s\n",
            nc_test_failures == before ? "ok" : "FAILED");
    for (int i = 0; i < 2; i++) {
        free(in[i]);
        free(ug[i]);
        free(s1[i]);
    }
}

/* ---- the resident engine ---------------------------------------------------- */

/* Labels that differ from core's (cpu[]) over forwards of each batch size
 * in small[] at fixture digits 300, 450, 600 and 750. */
static uint32_t engine_diff(nc_gpu_neocog *eng, const nc_neocog_result *cpu,
                            nc_neocog_result *gpu, const uint32_t *small, size_t n_small)
{
    uint32_t diff = 0;
    for (size_t si = 0; si < n_small; si++)
        for (uint32_t off = 300; off < 900; off += 150) {
            const uint32_t m = small[si];
            CHECK_INT_EQ(nc_gpu_neocog_forward(eng, digits + (size_t)off * 65 * 65, m, gpu), 0);
            for (uint32_t j = 0; j < m; j++)
                diff += gpu[j].label != cpu[off + j].label;
        }
    return diff;
}

/* Digits that the engine labels otherwise than core: engine_diff's on
 * 1, 3 and 33, then all n digits at once (the GEMM variant's settings) */
static uint32_t engine_diff_all(nc_gpu_neocog *eng, const nc_neocog_result *cpu,
                                nc_neocog_result *gpu, uint32_t n)
{
    static const uint32_t small[] = { 1, 3, 33 };
    uint32_t diff = engine_diff(eng, cpu, gpu, small, NC_ARRAY_LEN(small));
    CHECK_INT_EQ(nc_gpu_neocog_forward(eng, digits, n, gpu), 0);
    for (uint32_t j = 0; j < n; j++)
        diff += gpu[j].label != cpu[j].label;
    return diff;
}

static void test_engine(void)
{
    nc_gpu_neocog *eng = NULL;
    CHECK_INT_EQ(nc_gpu_neocog_new(net, 99, 16, &eng), -ENODEV);
    const uint32_t n = (uint32_t)n_digits;
    int r = nc_gpu_neocog_new(net, 0, n, &eng);
    CHECK_MSG(r == 0, "engine: %d (%s)", r, nc_gpu_last_error());
    if (r < 0)
        return;
    /* core's answers on every digit */
    nc_neocog_state *st = NULL;
    nc_neocog_result *cpu = calloc(n, sizeof *cpu), *gpu = calloc(n, sizeof *gpu);
    REQUIRE(cpu && gpu && nc_neocog_state_new(net, &st) == 0);
    int right = 0;
    for (uint32_t i = 0; i < n; i++) {
        CHECK_INT_EQ(nc_neocog_forward(net, st, digits + (size_t)i * 65 * 65,
                                       NC_NEOCOG_FORM_F, &cpu[i]), 0);
        right += cpu[i].label == digit_label[i];
    }
    fprintf(stderr, "  core F on %u digits: %d right\n", n, right);
    for (int v = 0; v <= NC_GPU_NEOCOG_AUTO; v++) {
        CHECK_INT_EQ(nc_gpu_neocog_set_variant(eng, v), 0);
        const uint32_t sizes[] = { 1, 3, 31, 33, 64, 65, n };
        for (size_t si = 0; si < NC_ARRAY_LEN(sizes); si++) {
            uint32_t m = sizes[si], off = (uint32_t)(si * 7) % (n - 65);
            if (m == n)
                off = 0;
            for (uint32_t i = 0; i < m; i++)
                gpu[i].label = -7;
            r = nc_gpu_neocog_forward(eng, digits + (size_t)off * 65 * 65, m, gpu);
            CHECK_MSG(r == 0, "engine forward %s x%u: %d (%s)", nc_gpu_neocog_variant_name(v),
                      m, r, nc_gpu_last_error());
            uint32_t diff = 0;
            double d2 = 0.0, r2 = 0.0;
            for (uint32_t i = 0; i < m; i++) {
                const nc_neocog_result *c = &cpu[off + i];
                diff += gpu[i].label != c->label;
                for (uint32_t k = 0; k < c->n_classes; k++) {
                    double d = (double)gpu[i].score[k] - c->score[k];
                    d2 += d * d;
                    r2 += (double)c->score[k] * c->score[k];
                }
            }
            double rel = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
            CHECK_MSG(diff == 0 && rel <= 1e-4,
                      "engine %s batch %u: %u labels differ from core, scores rel err %.3g",
                      nc_gpu_neocog_variant_name(v), m, diff, rel);
            if (m == n)
                fprintf(stderr, "  engine %-6s on all %u digits: %u labels differ, scores "
                        "rel err %.2g\n", nc_gpu_neocog_variant_name(v), n, diff, rel);
        }
    }
    /* every C kernel (the engine's default is direct from c_min on; below
     * it whatever the engine says, restored after): each as c_kind on all
     * digits (chunks of 1000), and as c_small_kind on graphs of 1, 3 and 31
     * characters */
    int small0[NC_NEOCOG_MAX_STAGES];
    for (uint32_t l = 0; l + 1 < net->arch.n_stages; l++) {
        CHECK_INT_EQ(nc_gpu_neocog_get_c_kind(eng, l), NC_GPU_NEOCOG_C_DIRECT);
        small0[l] = nc_gpu_neocog_get_c_small_kind(eng, l);
        CHECK_MSG(small0[l] >= 0 && small0[l] < NC_GPU_NEOCOG_C_N_KINDS, "small kind %d",
                  small0[l]);
    }
    fprintf(stderr, "  engine default C kernels below batch %u: %s/%s/%s\n",
            NC_GPU_NEOCOG_C_MIN, nc_gpu_neocog_c_kind_name(small0[0]),
            nc_gpu_neocog_c_kind_name(small0[1]), nc_gpu_neocog_c_kind_name(small0[2]));
    for (int k = 0; k < NC_GPU_NEOCOG_C_N_KINDS; k++) {
        for (uint32_t l = 0; l + 1 < net->arch.n_stages; l++) {
            CHECK_INT_EQ(nc_gpu_neocog_set_c_kind(eng, l, k), 0);
            CHECK_INT_EQ(nc_gpu_neocog_set_c_small_kind(eng, l, k), 0);
        }
        for (int v = NC_GPU_NEOCOG_SPARSE; v <= NC_GPU_NEOCOG_GEMM; v++) {
            CHECK_INT_EQ(nc_gpu_neocog_set_variant(eng, v), 0);
            uint32_t diff = 0;
            if (k != NC_GPU_NEOCOG_C_DIRECT) {  /* direct is the default above */
                CHECK_INT_EQ(nc_gpu_neocog_forward(eng, digits, n, gpu), 0);
                for (uint32_t j = 0; j < n; j++)
                    diff += gpu[j].label != cpu[j].label;
            }
            const uint32_t small[] = { 1, 3, 31 };
            for (size_t si = 0; si < NC_ARRAY_LEN(small); si++) {
                const uint32_t m = small[si], off = 200 + 40 * (uint32_t)si;
                CHECK_INT_EQ(nc_gpu_neocog_forward(eng, digits + (size_t)off * 65 * 65, m, gpu),
                             0);
                for (uint32_t j = 0; j < m; j++)
                    diff += gpu[j].label != cpu[off + j].label;
            }
            CHECK_MSG(diff == 0, "engine %s, %s C: %u labels differ",
                      nc_gpu_neocog_variant_name(v), nc_gpu_neocog_c_kind_name(k), diff);
            fprintf(stderr, "  engine %-6s with the %s C kernel on %s1/3/31 digits: %u "
                    "labels differ\n", nc_gpu_neocog_variant_name(v),
                    nc_gpu_neocog_c_kind_name(k),
                    k != NC_GPU_NEOCOG_C_DIRECT ? "all digits and " : "", diff);
        }
    }
    for (uint32_t l = 0; l + 1 < net->arch.n_stages; l++) {
        CHECK_INT_EQ(nc_gpu_neocog_set_c_kind(eng, l, NC_GPU_NEOCOG_C_DIRECT), 0);
        CHECK_INT_EQ(nc_gpu_neocog_set_c_small_kind(eng, l, small0[l]), 0);
    }
    CHECK_INT_EQ(nc_gpu_neocog_set_c_kind(eng, net->arch.n_stages - 1, 0), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_c_small_kind(eng, net->arch.n_stages - 1, 0), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_c_small_kind(eng, 0, NC_GPU_NEOCOG_C_N_KINDS), -EINVAL);
    /* the sparse kernels' split reductions: no split, the default, 4 and 32
     * runs on every stage (32 / n at batch n), graphs of 1, 3 and 8, with
     * the sparse kernel itself at those batches (no warp teams) */
    CHECK_INT_EQ(nc_gpu_neocog_set_variant(eng, NC_GPU_NEOCOG_SPARSE), 0);
    uint32_t team0[NC_NEOCOG_MAX_STAGES];
    for (uint32_t l = 0; l < net->arch.n_stages; l++) {
        team0[l] = nc_gpu_neocog_get_s_warp(eng, l);
        CHECK_INT_EQ(nc_gpu_neocog_set_s_warp(eng, l, 0), 0);
    }
    fprintf(stderr, "  engine default warp teams at batch 1: %u/%u/%u/%u\n", team0[0], team0[1],
            team0[2], team0[3]);
    fprintf(stderr, "  engine default splits at batch 1: %u/%u/%u/%u\n",
            nc_gpu_neocog_get_split(eng, 0), nc_gpu_neocog_get_split(eng, 1),
            nc_gpu_neocog_get_split(eng, 2), nc_gpu_neocog_get_split(eng, 3));
    static const uint32_t eng_splits[] = { 1, 0, 4, NC_GPU_NEOCOG_S_MAX_SPLITS };
    for (size_t i = 0; i < NC_ARRAY_LEN(eng_splits); i++) {
        for (uint32_t l = 0; l < net->arch.n_stages; l++)
            CHECK_INT_EQ(nc_gpu_neocog_set_split(eng, l, eng_splits[i]), 0);
        static const uint32_t small[] = { 1, 3, 8 };
        const uint32_t diff = engine_diff(eng, cpu, gpu, small, NC_ARRAY_LEN(small));
        CHECK_MSG(diff == 0, "engine sparse, split %u: %u labels differ", eng_splits[i], diff);
        fprintf(stderr, "  engine sparse with split %u (%u/%u/%u/%u) on graphs of 1/3/8: "
                "%u labels differ\n", eng_splits[i], nc_gpu_neocog_get_split(eng, 0),
                nc_gpu_neocog_get_split(eng, 1), nc_gpu_neocog_get_split(eng, 2),
                nc_gpu_neocog_get_split(eng, 3), diff);
    }
    CHECK_INT_EQ(nc_gpu_neocog_set_split(eng, 0, NC_GPU_NEOCOG_S_MAX_SPLITS + 1), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_split(eng, net->arch.n_stages, 2), -EINVAL);
    for (uint32_t l = 0; l < net->arch.n_stages; l++)
        CHECK_INT_EQ(nc_gpu_neocog_set_split(eng, l, 0), 0);
    /* the S kernel by teams of warps in the sparse one's place: teams of 1,
     * 4 and 16 on every stage (halved at batch n), graphs of 1, 3 and 8, and
     * 40 (past NC_GPU_NEOCOG_S_WARP_BATCH: the sparse kernel again); then
     * the default teams back */
    static const uint32_t eng_team[] = { 1, 4, NC_GPU_NEOCOG_S_WARP_MAX };
    for (size_t i = 0; i < NC_ARRAY_LEN(eng_team); i++) {
        for (uint32_t l = 0; l < net->arch.n_stages; l++)
            CHECK_INT_EQ(nc_gpu_neocog_set_s_warp(eng, l, eng_team[i]), 0);
        static const uint32_t small[] = { 1, 3, 8, 40 };
        const uint32_t diff = engine_diff(eng, cpu, gpu, small, NC_ARRAY_LEN(small));
        CHECK_MSG(diff == 0, "engine sparse, warp teams of %u: %u labels differ", eng_team[i],
                  diff);
        fprintf(stderr, "  engine sparse with warp teams of %u on 1/3/8/40: %u labels differ\n",
                eng_team[i], diff);
    }
    /* and with 16 and 32 planes a block on every stage (teams of 4) */
    static const uint32_t eng_planes[] = { 16, 32 };
    for (size_t i = 0; i < NC_ARRAY_LEN(eng_planes); i++) {
        for (uint32_t l = 0; l < net->arch.n_stages; l++) {
            CHECK_INT_EQ(nc_gpu_neocog_set_s_warp(eng, l, 4), 0);
            CHECK_INT_EQ(nc_gpu_neocog_set_s_planes(eng, l, eng_planes[i]), 0);
            CHECK_INT_EQ(nc_gpu_neocog_get_s_planes(eng, l), eng_planes[i]);
        }
        static const uint32_t small[] = { 1, 3, 8 };
        const uint32_t diff = engine_diff(eng, cpu, gpu, small, NC_ARRAY_LEN(small));
        CHECK_MSG(diff == 0, "engine sparse, %u planes a block: %u labels differ",
                  eng_planes[i], diff);
        fprintf(stderr, "  engine sparse with warp teams of 4, %u planes a block, on 1/3/8: "
                "%u labels differ\n", eng_planes[i], diff);
    }
    CHECK_INT_EQ(nc_gpu_neocog_set_s_planes(eng, 0, 4), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_planes(eng, 0, 48), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_planes(eng, 0, 256), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_planes(eng, net->arch.n_stages, 16), -EINVAL);
    for (uint32_t l = 0; l < net->arch.n_stages; l++) {
        CHECK_INT_EQ(nc_gpu_neocog_set_s_planes(eng, l, 0), 0);
        CHECK_INT_EQ(nc_gpu_neocog_get_s_planes(eng, l), 128);
    }
    /* the same kernel where the GEMM variant runs a stage (any batch):
     * teams of 1 and 2, 32 and 128 planes a block on every stage, on 1, 3,
     * 33 and all the digits; then off again, and refused settings */
    CHECK_INT_EQ(nc_gpu_neocog_set_variant(eng, NC_GPU_NEOCOG_GEMM), 0);
    for (uint32_t team = 1; team <= 2; team++)
        for (uint32_t planes = 32; planes <= 128; planes *= 4) {
            for (uint32_t l = 0; l < net->arch.n_stages; l++) {
                CHECK_INT_EQ(nc_gpu_neocog_set_s_warp_big(eng, l, team, planes), 0);
                CHECK_INT_EQ(nc_gpu_neocog_get_s_warp_big(eng, l), team);
                CHECK_INT_EQ(nc_gpu_neocog_get_s_planes_big(eng, l), planes);
            }
            const uint32_t diff = engine_diff_all(eng, cpu, gpu, n);
            CHECK_MSG(diff == 0, "engine gemm, warp teams of %u, %u planes: %u labels differ",
                      team, planes, diff);
            fprintf(stderr, "  engine gemm with warp teams of %u, %u planes a block, on "
                    "1/3/33/%u: %u labels differ\n", team, planes, n, diff);
        }
    /* the list kernel there: 1, 2 and 4 float4 a lane, 32 and 128 planes
     * a block (where it takes them) on every stage; it goes before the
     * warp kernel, which stays set underneath.  The C-layers before write
     * its lists (DIRECT, the default; SCATTER at f 4) or (STAGED at f 2)
     * leave them to the S-layer */
    for (uint32_t f = 1; f <= 4; f *= 2)
        for (uint32_t planes = 32; planes <= 128; planes *= 4) {
            const int ck = f == 1 ? NC_GPU_NEOCOG_C_DIRECT
                         : f == 2 ? NC_GPU_NEOCOG_C_STAGED : NC_GPU_NEOCOG_C_SCATTER;
            for (uint32_t l = 0; l + 1 < net->arch.n_stages; l++)
                CHECK_INT_EQ(nc_gpu_neocog_set_c_kind(eng, l, ck), 0);
            uint32_t n_set = 0;
            for (uint32_t l = 0; l < net->arch.n_stages; l++) {
                const uint32_t ks4 = nc_neocog_kstride(net->n_planes[l]) / 4,
                               pb4 = planes / 4 < ks4 ? planes / 4 : ks4;
                const int want = (pb4 + f - 1) / f <= 32 ? 0 : -EINVAL;
                const uint32_t by_char = planes == 128;
                CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, l, f, planes, by_char), want);
                if (want == 0) {
                    CHECK_INT_EQ(nc_gpu_neocog_get_s_list_big(eng, l), f);
                    CHECK_INT_EQ(nc_gpu_neocog_get_s_list_planes_big(eng, l), planes);
                    CHECK_INT_EQ(nc_gpu_neocog_get_s_list_order(eng, l), by_char);
                    n_set++;
                }
            }
            const uint32_t diff = engine_diff_all(eng, cpu, gpu, n);
            CHECK_MSG(diff == 0, "engine gemm, list f %u, %u planes: %u labels differ", f,
                      planes, diff);
            fprintf(stderr, "  engine gemm with the list kernel, f %u, %u planes a block on %u "
                    "stages, C-layers %s, on 1/3/33/%u: %u labels differ\n", f, planes, n_set,
                    nc_gpu_neocog_c_kind_name(ck), n, diff);
            for (uint32_t l = 0; l < net->arch.n_stages; l++)
                CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, l, 0, 0, 0), 0);
        }
    /* the row kernel there, 4 warps a block with 32 planes (the default)
     * and 16 with 64 and the weights through L1, on every stage that it
     * takes (not US1, whose input is too wide) */
    for (uint32_t wp = 4; wp <= 16; wp *= 4) {
        uint32_t n_set = 0;
        const uint32_t rp = wp == 4 ? 0 : 64,
                       ro = wp == 4 ? NC_GPU_NEOCOG_LIST_ROWS : NC_GPU_NEOCOG_LIST_ROWS_L1;
        const int ck = wp == 4 ? NC_GPU_NEOCOG_C_SCATTER : NC_GPU_NEOCOG_C_DIRECT;
        for (uint32_t l = 0; l + 1 < net->arch.n_stages; l++)
            CHECK_INT_EQ(nc_gpu_neocog_set_c_kind(eng, l, ck), 0);
        for (uint32_t l = 0; l < net->arch.n_stages; l++) {
            const int want = l > 0 ? 0 : -EINVAL;
            CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, l, wp, rp, ro), want);
            if (want == 0) {
                CHECK_INT_EQ(nc_gpu_neocog_get_s_list_big(eng, l), wp);
                CHECK_INT_EQ(nc_gpu_neocog_get_s_list_planes_big(eng, l), rp ? rp : 32);
                CHECK_INT_EQ(nc_gpu_neocog_get_s_list_order(eng, l), ro);
                n_set++;
            }
        }
        const uint32_t diff = engine_diff_all(eng, cpu, gpu, n);
        CHECK_MSG(diff == 0, "engine gemm, rows %u warps: %u labels differ", wp, diff);
        fprintf(stderr, "  engine gemm with the row kernel, %u warps, %u planes a block on %u "
                "stages, C-layers %s, on 1/3/33/%u: %u labels differ\n", wp, rp ? rp : 32,
                n_set, nc_gpu_neocog_c_kind_name(ck), n, diff);
        for (uint32_t l = 0; l < net->arch.n_stages; l++)
            CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, l, 0, 0, 0), 0);
    }
    /* two lanes: 1000 digits in chunks of 96 (the last of 40), odd chunks
     * on lane 1 and its own stream; US1 on the list kernel (its lists
     * built by the S-layer), US2..US4 on the row kernel (their lists
     * written by the C-layers, in each lane's buffers).  Then the row
     * kernel's settings changed (lane 1 made again with its lists), and
     * one lane, whose scores must be those of two lanes bit for bit; both
     * through nc_gpu_neocog_forward and on device-resident inputs */
    CHECK_INT_EQ(nc_gpu_neocog_get_lanes(eng), NC_GPU_NEOCOG_MAX_LANES);
    CHECK_INT_EQ(nc_gpu_neocog_set_lanes(eng, 0), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_lanes(eng, NC_GPU_NEOCOG_MAX_LANES + 1), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_chunk(eng, 96), 0);
    {
        nc_neocog_result *two = calloc(n, sizeof *two), *dev = calloc(n, sizeof *dev);
        REQUIRE(two && dev);
        for (int step = 0; step < 3; step++) {
            const uint32_t lanes = step < 2 ? 2 : 1, wp = step == 1 ? 8 : 16,
                           rp = step == 1 ? 32 : 64;
            CHECK_INT_EQ(nc_gpu_neocog_set_lanes(eng, lanes), 0);
            CHECK_INT_EQ(nc_gpu_neocog_get_lanes(eng), lanes);
            CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, 0, 1, 32, 0), 0);
            for (uint32_t l = 1; l < net->arch.n_stages; l++)
                CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, l, wp, rp,
                                                          NC_GPU_NEOCOG_LIST_ROWS), 0);
            uint32_t diff = engine_diff_all(eng, cpu, gpu, n);
            CHECK_INT_EQ(nc_gpu_neocog_upload(eng, digits, n), 0);
            CHECK_INT_EQ(nc_gpu_neocog_enqueue(eng, n, 0), 0);
            CHECK_INT_EQ(nc_gpu_neocog_download_results(eng, n, dev), 0);
            uint32_t bits = 0;
            for (uint32_t j = 0; j < n; j++) {
                diff += dev[j].label != cpu[j].label;
                bits += memcmp(dev[j].score, gpu[j].score, sizeof gpu[j].score) != 0;
                if (step == 0)
                    two[j] = gpu[j];
                else if (step == 2)
                    bits += memcmp(two[j].score, gpu[j].score, sizeof gpu[j].score) != 0;
            }
            CHECK_MSG(diff == 0 && bits == 0,
                      "engine, %u lanes, rows %u/%u: %u labels differ, %u scores not the same",
                      lanes, wp, rp, diff, bits);
            fprintf(stderr, "  engine gemm, %u lane(s), chunks of 96, list kernel on US1, row "
                    "kernel %u warps / %u planes on US2..US4, on 1/3/33/%u (forward and "
                    "device-resident): %u labels differ, %u scores not bit for bit%s\n", lanes,
                    wp, rp, n, diff, bits, step == 2 ? " those of two lanes" : " alike");
        }
        free(two);
        free(dev);
        for (uint32_t l = 0; l < net->arch.n_stages; l++)
            CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, l, 0, 0, 0), 0);
        CHECK_INT_EQ(nc_gpu_neocog_set_lanes(eng, NC_GPU_NEOCOG_MAX_LANES), 0);
        CHECK_INT_EQ(nc_gpu_neocog_set_chunk(eng, n), 0);
    }
    /* every layer the engine leaves, against core's on POOL digits: GEMM
     * variant, the row kernel on US2..US4, where US1..US3
     * leave unoccupied positions unwritten for the C-layers and
     * download_layer gives them as zeros */
    CHECK_INT_EQ(nc_gpu_neocog_set_variant(eng, NC_GPU_NEOCOG_GEMM), 0);
    for (uint32_t l = 1; l < net->arch.n_stages; l++)
        CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, l, 16, 32, NC_GPU_NEOCOG_LIST_ROWS), 0);
    /* pool_st holds core's forward of digits 300 .. */
    CHECK_INT_EQ(nc_gpu_neocog_forward(eng, digits + (size_t)300 * 65 * 65, n - 300, gpu), 0);
    {
        int before = nc_test_failures;
        for (int layer = 0; layer < 2 * (int)net->arch.n_stages; layer++) {
            uint32_t size = 0, stride = 0;
            const float *out = NULL;
            CHECK_INT_EQ(nc_neocog_layer_out(net, pool_st[0], layer, &out, &size, NULL, &stride),
                         0);
            const size_t cells = (size_t)size * size * stride;
            float *got = malloc(POOL * cells * sizeof(float)),
                  *ref = malloc(POOL * cells * sizeof(float));
            REQUIRE(got && ref);
            for (int p = 0; p < POOL; p++) {
                CHECK_INT_EQ(nc_neocog_layer_out(net, pool_st[p], layer, &out, NULL, NULL, NULL),
                             0);
                memcpy(ref + p * cells, out, cells * sizeof(float));
            }
            memset(got, 0xff, POOL * cells * sizeof(float));
            CHECK_INT_EQ(nc_gpu_neocog_download_layer(eng, layer, POOL, got), 0);
            char what[64];
            snprintf(what, sizeof what, "engine gemm layer %d, downloaded", layer);
            compare(what, got, ref, POOL * cells);
            free(got);
            free(ref);
        }
        fprintf(stderr, "  engine gemm with the row kernel: every layer downloaded on %d "
                "digits as core's: %s\n", POOL, nc_test_failures == before ? "ok" : "FAILED");
        for (uint32_t l = 0; l < net->arch.n_stages; l++)
            CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, l, 0, 0, 0), 0);
    }
    CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, 0, 3, 0, 0), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, 0, 1, 30, 0), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, 0, 1, 0, 4), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, 1, 5, 0, NC_GPU_NEOCOG_LIST_ROWS), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, 1, 32, 64, NC_GPU_NEOCOG_LIST_ROWS), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, 1, 8, 40, NC_GPU_NEOCOG_LIST_ROWS), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, 0, 8, 0, NC_GPU_NEOCOG_LIST_ROWS), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_list_big(eng, net->arch.n_stages, 1, 0, 0), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_get_s_list_big(eng, 0), 0);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_warp_big(eng, 0, 3, 0), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_warp_big(eng, 0, 1, 48), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_warp_big(eng, 0, 1, 4), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_warp_big(eng, net->arch.n_stages, 1, 0), -EINVAL);
    for (uint32_t l = 0; l < net->arch.n_stages; l++) {
        CHECK_INT_EQ(nc_gpu_neocog_set_s_warp_big(eng, l, 0, 0), 0);
        CHECK_INT_EQ(nc_gpu_neocog_get_s_warp_big(eng, l), 0);
    }
    CHECK_INT_EQ(nc_gpu_neocog_set_variant(eng, NC_GPU_NEOCOG_SPARSE), 0);
    /* UG and US1 as one kernel (the default for this net) and as two, on
     * graphs of 1, 3 and 8 and on 40 (no graph) */
    CHECK_INT_EQ(nc_gpu_neocog_get_gs1(eng), 1);
    for (uint32_t on = 0; on <= 1; on++) {
        CHECK_INT_EQ(nc_gpu_neocog_set_gs1(eng, on), 0);
        CHECK_INT_EQ(nc_gpu_neocog_get_gs1(eng), on);
        static const uint32_t small[] = { 1, 3, 8, 40 };
        const uint32_t diff = engine_diff(eng, cpu, gpu, small, NC_ARRAY_LEN(small));
        CHECK_MSG(diff == 0, "engine sparse, UG+US1 %s: %u labels differ",
                  on ? "as one kernel" : "as two", diff);
        fprintf(stderr, "  engine sparse with UG and US1 as %s on 1/3/8/40: %u labels "
                "differ\n", on ? "one kernel" : "two", diff);
    }
    CHECK_INT_EQ(nc_gpu_neocog_set_gs1(eng, 2), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_warp(eng, 0, 3), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_warp(eng, 0, 2 * NC_GPU_NEOCOG_S_WARP_MAX), -EINVAL);
    CHECK_INT_EQ(nc_gpu_neocog_set_s_warp(eng, net->arch.n_stages, 1), -EINVAL);
    for (uint32_t l = 0; l < net->arch.n_stages; l++)
        CHECK_INT_EQ(nc_gpu_neocog_set_s_warp(eng, l, team0[l]), 0);
    /* tuning keeps the answers */
    CHECK_INT_EQ(nc_gpu_neocog_upload(eng, digits, 64), 0);
    CHECK_INT_EQ(nc_gpu_neocog_tune(eng, NC_GPU_NEOCOG_SPARSE, 64), 0);
    CHECK_INT_EQ(nc_gpu_neocog_set_variant(eng, NC_GPU_NEOCOG_SPARSE), 0);
    CHECK_INT_EQ(nc_gpu_neocog_forward(eng, digits, 64, gpu), 0);
    for (uint32_t i = 0; i < 64; i++)
        CHECK_INT_EQ(gpu[i].label, cpu[i].label);
    /* the GEMM tuner (per-stage choice, AUTO threshold) keeps them too */
    CHECK_INT_EQ(nc_gpu_neocog_tune(eng, NC_GPU_NEOCOG_GEMM, 64), 0);
    fprintf(stderr, "  tuned at 64: GEMM per stage %d/%d/%d/%d, AUTO from batch %u\n",
            nc_gpu_neocog_stage_uses_gemm(eng, 0), nc_gpu_neocog_stage_uses_gemm(eng, 1),
            nc_gpu_neocog_stage_uses_gemm(eng, 2), nc_gpu_neocog_stage_uses_gemm(eng, 3),
            nc_gpu_neocog_get_auto(eng));
    fprintf(stderr, "  tuned at 64: C kernels %s/%s/%s, at batch 1 %s/%s/%s\n",
            nc_gpu_neocog_c_kind_name(nc_gpu_neocog_get_c_kind(eng, 0)),
            nc_gpu_neocog_c_kind_name(nc_gpu_neocog_get_c_kind(eng, 1)),
            nc_gpu_neocog_c_kind_name(nc_gpu_neocog_get_c_kind(eng, 2)),
            nc_gpu_neocog_c_kind_name(nc_gpu_neocog_get_c_small_kind(eng, 0)),
            nc_gpu_neocog_c_kind_name(nc_gpu_neocog_get_c_small_kind(eng, 1)),
            nc_gpu_neocog_c_kind_name(nc_gpu_neocog_get_c_small_kind(eng, 2)));
    fprintf(stderr, "  tuned at 64: sparse splits at batch 1 %u/%u/%u/%u, warp teams "
            "%u/%u/%u/%u, planes a block %u/%u/%u/%u\n",
            nc_gpu_neocog_get_split(eng, 0), nc_gpu_neocog_get_split(eng, 1),
            nc_gpu_neocog_get_split(eng, 2), nc_gpu_neocog_get_split(eng, 3),
            nc_gpu_neocog_get_s_warp(eng, 0), nc_gpu_neocog_get_s_warp(eng, 1),
            nc_gpu_neocog_get_s_warp(eng, 2), nc_gpu_neocog_get_s_warp(eng, 3),
            nc_gpu_neocog_get_s_planes(eng, 0), nc_gpu_neocog_get_s_planes(eng, 1),
            nc_gpu_neocog_get_s_planes(eng, 2), nc_gpu_neocog_get_s_planes(eng, 3));
    fprintf(stderr, "  tuned at 64: warp teams / planes where GEMM runs %u/%u %u/%u %u/%u "
            "%u/%u\n", nc_gpu_neocog_get_s_warp_big(eng, 0),
            nc_gpu_neocog_get_s_planes_big(eng, 0), nc_gpu_neocog_get_s_warp_big(eng, 1),
            nc_gpu_neocog_get_s_planes_big(eng, 1), nc_gpu_neocog_get_s_warp_big(eng, 2),
            nc_gpu_neocog_get_s_planes_big(eng, 2), nc_gpu_neocog_get_s_warp_big(eng, 3),
            nc_gpu_neocog_get_s_planes_big(eng, 3));
    fprintf(stderr, "  tuned at 64: list kernel f / planes where GEMM runs %u/%u %u/%u %u/%u "
            "%u/%u (characters a block: %u%u%u%u)\n", nc_gpu_neocog_get_s_list_big(eng, 0),
            nc_gpu_neocog_get_s_list_planes_big(eng, 0), nc_gpu_neocog_get_s_list_big(eng, 1),
            nc_gpu_neocog_get_s_list_planes_big(eng, 1), nc_gpu_neocog_get_s_list_big(eng, 2),
            nc_gpu_neocog_get_s_list_planes_big(eng, 2), nc_gpu_neocog_get_s_list_big(eng, 3),
            nc_gpu_neocog_get_s_list_planes_big(eng, 3), nc_gpu_neocog_get_s_list_order(eng, 0),
            nc_gpu_neocog_get_s_list_order(eng, 1), nc_gpu_neocog_get_s_list_order(eng, 2),
            nc_gpu_neocog_get_s_list_order(eng, 3));
    fprintf(stderr, "  tuned at 64: UG and US1 at batch 1 as %s\n",
            nc_gpu_neocog_get_gs1(eng) ? "one kernel" : "two");
    const int vv[2] = { NC_GPU_NEOCOG_GEMM, NC_GPU_NEOCOG_AUTO };
    for (int i = 0; i < 2; i++) {
        CHECK_INT_EQ(nc_gpu_neocog_set_variant(eng, vv[i]), 0);
        CHECK_INT_EQ(nc_gpu_neocog_forward(eng, digits, n, gpu), 0);
        uint32_t diff = 0;
        for (uint32_t j = 0; j < n; j++)
            diff += gpu[j].label != cpu[j].label;
        CHECK_MSG(diff == 0, "tuned %s: %u labels differ", nc_gpu_neocog_variant_name(vv[i]),
                  diff);
    }
    /* the tuned small batches (warp teams and splits as the tuner left
     * them) under AUTO */
    {
        uint32_t diff = 0;
        for (uint32_t m = 1; m <= 4; m += 3)
            for (uint32_t off = 500; off < 900; off += 100) {
                CHECK_INT_EQ(nc_gpu_neocog_forward(eng, digits + (size_t)off * 65 * 65, m, gpu),
                             0);
                for (uint32_t j = 0; j < m; j++)
                    diff += gpu[j].label != cpu[off + j].label;
            }
        CHECK_MSG(diff == 0, "tuned AUTO at batches 1 and 4: %u labels differ", diff);
    }
    /* AUTO forced onto the GEMM path for every batch, graphs included */
    CHECK_INT_EQ(nc_gpu_neocog_set_auto(eng, 1), 0);
    for (uint32_t m = 1; m <= 33; m += 32) {
        CHECK_INT_EQ(nc_gpu_neocog_forward(eng, digits + 100 * 65 * 65, m, gpu), 0);
        for (uint32_t j = 0; j < m; j++)
            CHECK_INT_EQ(gpu[j].label, cpu[100 + j].label);
    }
    CHECK_INT_EQ(nc_gpu_neocog_forward(eng, digits, n + 1, gpu), -EINVAL);
    nc_gpu_neocog_free(eng);
    nc_gpu_neocog_free(NULL);
    nc_neocog_state_free(st);
    free(cpu);
    free(gpu);
}

/* ---- large plane counts: the shipped model ---------------------------------- */

static void free_net_side(void)
{
    for (int p = 0; p < POOL; p++) {
        nc_neocog_state_free(pool_st[p]);
        pool_st[p] = NULL;
    }
    for (int l = 0; l < 4; l++) {
        cudaFree(d_a[l]);
        cudaFree(d_b[l]);
        d_a[l] = d_b[l] = NULL;
    }
    cudaFree(d_plane_label);
    d_plane_label = NULL;
}

/* The engine on the shipped net: every variant (a stage its kernel refuses
 * runs GEMM), batches 1 and 33 (graphs) and 74 (the pool twice, through the
 * chunked path), against core's max-response answers left in pool_st. */
/* nc_gpu_neocog_forward in halves: two engines started before either is
 * finished (as a committee runs its members) give what a plain forward
 * gives, bit for bit, on the graph path and the chunked one; a finish
 * without a start, or a second start, is refused. */
static void test_engine_halves(void)
{
    const uint32_t n = (uint32_t)n_digits;
    nc_gpu_neocog *a = NULL, *b = NULL;
    int r = nc_gpu_neocog_new(net, 0, n, &a);
    if (r == 0)
        r = nc_gpu_neocog_new(net, 0, n, &b);
    CHECK_MSG(r == 0, "engines: %d (%s)", r, nc_gpu_last_error());
    /* chunks of 96: the largest batch runs on both lanes */
    if (r == 0 && (nc_gpu_neocog_set_chunk(a, 96) || nc_gpu_neocog_set_chunk(b, 96)))
        r = -1;
    CHECK_INT_EQ(r, 0);
    nc_neocog_result *ref = calloc(n, sizeof *ref), *ga = calloc(n, sizeof *ga),
                     *gb = calloc(n, sizeof *gb);
    REQUIRE(ref && ga && gb);
    const uint32_t sizes[] = { 1, 33, n };
    uint32_t differ = 0;
    for (size_t si = 0; r == 0 && si < NC_ARRAY_LEN(sizes); si++) {
        const uint32_t m = sizes[si], ob = m == n ? 0 : 40;
        const float *xa = digits, *xb = digits + (size_t)ob * 65 * 65;
        CHECK_INT_EQ(nc_gpu_neocog_forward_start(a, xa, m), 0);
        CHECK_INT_EQ(nc_gpu_neocog_forward_start(b, xb, m), 0);
        CHECK_INT_EQ(nc_gpu_neocog_forward_start(a, xa, m), -EINVAL);   /* one at a time */
        CHECK_INT_EQ(nc_gpu_neocog_forward_finish(b, m + 1, gb), -EINVAL);
        CHECK_INT_EQ(nc_gpu_neocog_forward_finish(b, m, gb), 0);
        CHECK_INT_EQ(nc_gpu_neocog_forward_finish(a, m, ga), 0);
        CHECK_INT_EQ(nc_gpu_neocog_forward_finish(a, m, ga), -EINVAL);  /* nothing started */
        CHECK_INT_EQ(nc_gpu_neocog_forward(a, xa, m, ref), 0);
        for (uint32_t i = 0; i < m; i++)
            differ += ga[i].label != ref[i].label ||
                      memcmp(ga[i].score, ref[i].score, sizeof ref[i].score) != 0;
        CHECK_INT_EQ(nc_gpu_neocog_forward(a, xb, m, ref), 0);
        for (uint32_t i = 0; i < m; i++)
            differ += gb[i].label != ref[i].label ||
                      memcmp(gb[i].score, ref[i].score, sizeof ref[i].score) != 0;
    }
    CHECK_INT_EQ(differ, 0);
    fprintf(stderr, "  two engines started before either finished, batches 1/33/%u (chunks "
            "of 96): %u answers not bit for bit a plain forward's\n", n, differ);
    free(ref);
    free(ga);
    free(gb);
    nc_gpu_neocog_free(a);
    nc_gpu_neocog_free(b);
}

static void test_big_engine(void)
{
    nc_gpu_neocog *eng = NULL;
    int r = nc_gpu_neocog_new(net, 0, 256, &eng);
    CHECK_MSG(r == 0, "big engine: %d (%s)", r, nc_gpu_last_error());
    if (r < 0)
        return;
    float *in = malloc((size_t)2 * POOL * 65 * 65 * sizeof(float));
    nc_neocog_result *gpu = calloc(2 * POOL, sizeof *gpu);
    REQUIRE(in && gpu);
    for (int p = 0; p < 2 * POOL; p++)
        memcpy(in + (size_t)p * 65 * 65, pool_st[p % POOL]->u0, 65 * 65 * sizeof(float));
    for (int v = 0; v <= NC_GPU_NEOCOG_AUTO; v++) {
        CHECK_INT_EQ(nc_gpu_neocog_set_variant(eng, v), 0);
        if (v < NC_GPU_NEOCOG_N_VARIANTS)
            fprintf(stderr, "  big engine %-6s: US1..US4 run %s/%s/%s/%s\n",
                    nc_gpu_neocog_variant_name(v),
                    nc_gpu_neocog_variant_name(nc_gpu_neocog_stage_s_variant(eng, v, 0)),
                    nc_gpu_neocog_variant_name(nc_gpu_neocog_stage_s_variant(eng, v, 1)),
                    nc_gpu_neocog_variant_name(nc_gpu_neocog_stage_s_variant(eng, v, 2)),
                    nc_gpu_neocog_variant_name(nc_gpu_neocog_stage_s_variant(eng, v, 3)));
        const uint32_t sizes[] = { 1, 33, 2 * POOL };
        for (size_t si = 0; si < NC_ARRAY_LEN(sizes); si++) {
            const uint32_t m = sizes[si], off = si == 0 ? 5 : 0;
            r = nc_gpu_neocog_forward(eng, in + (size_t)off * 65 * 65, m, gpu);
            CHECK_MSG(r == 0, "big engine %s x%u: %d (%s)", nc_gpu_neocog_variant_name(v), m,
                      r, nc_gpu_last_error());
            uint32_t diff = 0;
            double d2 = 0.0, r2 = 0.0;
            for (uint32_t i = 0; r == 0 && i < m; i++) {
                const nc_neocog_state *c = pool_st[(off + i) % POOL];
                diff += gpu[i].label != c->label;
                for (uint32_t k = 0; k < net->arch.n_classes; k++) {
                    double d = (double)gpu[i].score[k] - c->score[k];
                    d2 += d * d;
                    r2 += (double)c->score[k] * c->score[k];
                }
            }
            double rel = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
            CHECK_MSG(diff == 0 && rel <= 1e-4,
                      "big engine %s batch %u: %u labels differ from core, rel err %.3g",
                      nc_gpu_neocog_variant_name(v), m, diff, rel);
            if (m == 2 * POOL)
                fprintf(stderr, "  big engine %-6s batches 1/33/%u: %u labels differ, "
                        "scores rel err %.2g\n", nc_gpu_neocog_variant_name(v), 2 * POOL,
                        diff, rel);
        }
    }
    /* the tuners skip what a kernel refuses and keep the answers */
    CHECK_INT_EQ(nc_gpu_neocog_upload(eng, in, 33), 0);
    for (int v = NC_GPU_NEOCOG_T1_T4; v <= NC_GPU_NEOCOG_AUTO; v++) {
        r = nc_gpu_neocog_tune(eng, v, 33);
        CHECK_MSG(r == 0, "big engine: tune %s: %d (%s)", nc_gpu_neocog_variant_name(v), r,
                  nc_gpu_last_error());
    }
    CHECK_INT_EQ(nc_gpu_neocog_set_variant(eng, NC_GPU_NEOCOG_AUTO), 0);
    for (uint32_t m = 1; m <= 33; m += 32) {
        CHECK_INT_EQ(nc_gpu_neocog_forward(eng, in, m, gpu), 0);
        for (uint32_t i = 0; i < m; i++)
            CHECK_INT_EQ(gpu[i].label, pool_st[i]->label);
    }
    fprintf(stderr, "  big engine tuned at 33: GEMM per stage %d/%d/%d/%d, AUTO from %u\n",
            nc_gpu_neocog_stage_uses_gemm(eng, 0), nc_gpu_neocog_stage_uses_gemm(eng, 1),
            nc_gpu_neocog_stage_uses_gemm(eng, 2), nc_gpu_neocog_stage_uses_gemm(eng, 3),
            nc_gpu_neocog_get_auto(eng));
    nc_gpu_neocog_free(eng);
    free(in);
    free(gpu);
}

static void test_big(void)
{
    char path[1024];
    nc_test_model_path("neocognitron.ncm", path, sizeof path);
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_model_info info;
    nc_neocog *big = NULL;
    int r = nc_file_read_model(path, 256u << 20, &buf, &len);
    if (r == 0)
        r = nc_neocog_load_member(buf, len, 0, &big, &info, NULL);
    free(buf);
    CHECK_MSG(r == 0, "%s: %d", path, r);
    if (r)
        return;
    free_net_side();
    nc_neocog_free(net);
    net = big;
    REQUIRE(upload_weights() == 0);
    fprintf(stderr, "  shipped net: planes %u/%u/%u/%u\n", net->n_planes[0], net->n_planes[1],
            net->n_planes[2], net->n_planes[3]);
    nc_neocog_result res;
    for (int p = 0; p < POOL; p++)
        REQUIRE(nc_neocog_state_new(net, &pool_st[p]) == 0 &&
                nc_neocog_forward(net, pool_st[p], digits + (size_t)(400 + p) * 65 * 65,
                                  NC_NEOCOG_FORM_F, &res) == 0);
    batches = batches_big;
    n_batches = NC_ARRAY_LEN(batches_big);
    with_random = 0;
    refused = 0;
    test_layers();
    fprintf(stderr, "  shipped net: %d S-layer variant(s) refused a layer\n", refused);
    test_big_engine();
}

int main(void)
{
    if (nc_test_gpu_count() <= 0)
        return NC_TEST_SKIP;
    n_digits = load_digits(1000);
    if (n_digits < 300) {
        fprintf(stderr, "fixture digits not available (%d): skipped\n", n_digits);
        return NC_TEST_SKIP;
    }
    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    const uint32_t target[4] = { 16, 26, 78, 70 };
    if (nc_neocog_new(&A, &net) < 0 || nc_neocog_train_us1(net, 16, 100.0f) < 0 ||
        nc_neocog_seed_from_digits(net, digits, digit_label, 300, target, 2) < 0 ||
        upload_weights() < 0) {
        fprintf(stderr, "cannot build the net\n");
        return 1;
    }
    fprintf(stderr, "  net: planes %u/%u/%u/%u, %d fixture digits\n", net->n_planes[0],
            net->n_planes[1], net->n_planes[2], net->n_planes[3], n_digits);
    nc_neocog_result res;
    for (int p = 0; p < POOL; p++)
        if (nc_neocog_state_new(net, &pool_st[p]) < 0 ||
            nc_neocog_forward(net, pool_st[p], digits + (size_t)(300 + p) * 65 * 65,
                              NC_NEOCOG_FORM_F, &res) < 0)
            return 1;
    test_layers();
    test_gs1();
    CHECK_MSG(refused == 0, "%d S-layer variant(s) refused the seeded net", refused);
    test_engine();
    test_engine_halves();
    test_big();
    free_net_side();
    nc_neocog_free(net);
    free(digits);
    free(digit_label);
    return nc_test_finish();
}

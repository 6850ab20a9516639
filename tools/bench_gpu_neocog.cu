/* tools/bench_gpu_neocog.cu — the neocognitron half of neocog-bench-gpu.
 *
 * Builds the seed-004-sized network as the CPU bench does (US1 by edge
 * training, US2..US4 by core's seeded-from-data initialiser on the first 300
 * fixture digits, planes 16/26/78/70, so the sparsity is a real digit's),
 * makes the resident GPU engine and prints, timed with CUDA events on later
 * fixture digits:
 *   1. S-layer kernel time per character in the layout of seed 004 Table 5,
 *      one row per variant, at batch 1 and per character at batch 256, with
 *      the positions per block the tuner chose;
 *   2. the other layers' kernels (UG, UC1..UC4), every C kernel at batch 1
 *      and at the chunk, and the tile C kernel's shapes at batch 1;
 *   3. whole-network latency at batch 1: GPU time of a graph replay, of
 *      plain launches, and host wall time of nc_gpu_neocog_forward (copies
 *      included); then the sparse variant with each small-batch C kernel,
 *      and with its S-layers' reductions split in runs, and with the S kernel
 *      by teams of warps that replaces the sparse one at small batches;
 *   4. throughput from batch 1 to max_batch on device-resident inputs (what
 *      the PyTorch peer measures), and end to end from host memory, for the
 *      sparse kernels, the GEMM path and AUTO (the engine's default: sparse
 *      below the tuned threshold, GEMM from it on);
 *   5. the largest batch with one lane and two (nc_gpu_neocog_set_lanes)
 *      for chunks of 1024, 2048 and 4096.
 *
 * Over 800 lines on purpose: every table times the one engine and the buffers
 * made at the start; split, they would share that set-up through a header of
 * bench internals. */
#include "bench_gpu.h"

#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "device.h"
extern "C" {    /* core's headers are plain C */
#include "fileio.h"
#include "image.h"
#include "neocog.h"
}
#include "neocog_c.cuh"
#include "neocog_engine_dev.h"
#include "neocog_occ.cuh"

#define N_SEED 300

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_f(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static float median(float *v, int n)
{
    qsort(v, n, sizeof *v, cmp_f);
    return v[n / 2];
}

/* What one timed call queues on the engine's stream. */
typedef struct work {
    int kind;           /* 0: one layer, 1: whole net, 2: whole net by graph */
    int layer;
    uint32_t n;
} work;

static int queue(nc_gpu_neocog *e, const work *w)
{
    if (w->kind == 0)
        return nc_gpu_neocog_enqueue_layer(e, w->layer, w->n);
    return nc_gpu_neocog_enqueue(e, w->n, w->kind == 2);
}

/* Median GPU milliseconds of reps runs of w (after two warm-ups). */
static int time_work(nc_gpu_neocog *e, const work *w, int reps, float *ret_ms)
{
    cudaStream_t st = (cudaStream_t)nc_gpu_neocog_stream(e);
    cudaEvent_t t0, t1;
    float *ms = (float *)malloc(reps * sizeof(float));
    if (!ms || cudaEventCreate(&t0) != cudaSuccess || cudaEventCreate(&t1) != cudaSuccess) {
        free(ms);
        return -ENOMEM;
    }
    int r = 0;
    for (int i = 0; r == 0 && i < 2; i++)
        r = queue(e, w);
    for (int i = 0; r == 0 && i < reps; i++) {
        cudaEventRecord(t0, st);
        r = queue(e, w);
        cudaEventRecord(t1, st);
        if (r == 0 && (cudaEventSynchronize(t1) != cudaSuccess ||
                       cudaEventElapsedTime(&ms[i], t0, t1) != cudaSuccess))
            r = -EIO;
    }
    if (r == 0)
        *ret_ms = median(ms, reps);
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    free(ms);
    return r;
}

/* The whole net at batch 1: median GPU ms of a graph replay (*ret_graph)
 * and of plain launches (*ret_launch), reps runs each. */
static int time_batch1(nc_gpu_neocog *e, int reps, float *ret_graph, float *ret_launch)
{
    const work wg = { 2, 0, 1 }, wl = { 1, 0, 1 };
    int err = time_work(e, &wg, reps, ret_graph);
    return err < 0 ? err : time_work(e, &wl, reps, ret_launch);
}

/* At batch 1: each S layer alone (us, ts[0..3], on the activations one run
 * of the net leaves), then the whole net by graph and by launches (ms). */
static int time_s_batch1(nc_gpu_neocog *e, uint32_t ns, int reps, float *ts, float *ret_graph,
                         float *ret_launch)
{
    int err = nc_gpu_neocog_enqueue(e, 1, 0);
    if (err == 0)
        err = nc_gpu_neocog_sync(e);
    for (uint32_t l = 0; err == 0 && l < ns && l < 4; l++) {
        const work w = { 0, 1 + 2 * (int)l, 1 };
        float ms = 0.0f;
        err = time_work(e, &w, reps, &ms);
        ts[l] = ms * 1e3f;
    }
    return err < 0 ? err : time_batch1(e, reps, ret_graph, ret_launch);
}

/* Layers first .. last of the net at batch 1 captured as one graph:
 * median GPU ms of its replays (reps), so that a layer's share of the
 * whole net can be read off prefixes (its kernels start while the one
 * before ends, so alone it is not the same).  gs1: UG and US1 (first 0,
 * last >= 1) as one kernel. */
static int time_layers_graph(nc_gpu_neocog *e, int first, int last, int gs1, int reps,
                             float *ret_ms)
{
    cudaStream_t st = (cudaStream_t)nc_gpu_neocog_stream(e);
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    cudaEvent_t t0 = NULL, t1 = NULL;
    float *ms = (float *)malloc(reps * sizeof(float));
    int r = ms ? 0 : -ENOMEM;
    if (r == 0 && cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
        r = -EIO;
    if (r == 0) {
        if (gs1) {
            r = nc_gpu_neocog_enqueue_gs1(e, 1);
            first = 2;
        }
        for (int l = first; r == 0 && l <= last; l++)
            r = nc_gpu_neocog_enqueue_layer(e, l, 1);
        if (cudaStreamEndCapture(st, &g) != cudaSuccess && r == 0)
            r = -EIO;
    }
    if (r == 0 && (cudaGraphInstantiate(&x, g, 0) != cudaSuccess ||
                   cudaEventCreate(&t0) != cudaSuccess || cudaEventCreate(&t1) != cudaSuccess))
        r = -EIO;
    for (int i = -2; r == 0 && i < reps; i++) {
        cudaEventRecord(t0, st);
        if (cudaGraphLaunch(x, st) != cudaSuccess)
            r = -EIO;
        cudaEventRecord(t1, st);
        float m = 0.0f;
        if (r == 0 && (cudaEventSynchronize(t1) != cudaSuccess ||
                       cudaEventElapsedTime(&m, t0, t1) != cudaSuccess))
            r = -EIO;
        if (i >= 0)
            ms[i] = m;
    }
    if (r == 0)
        *ret_ms = median(ms, reps);
    if (t0)
        cudaEventDestroy(t0);
    if (t1)
        cudaEventDestroy(t1);
    if (x)
        cudaGraphExecDestroy(x);
    if (g)
        cudaGraphDestroy(g);
    free(ms);
    return r;
}

/* A table's head: the lead columns, then one column <name>1 .. <name>n. */
static void layer_columns(const char *lead, const char *rule, const char *name, uint32_t n)
{
    printf("%s", lead);
    for (uint32_t l = 0; l < n; l++)
        printf(" %s%u |", name, l + 1);
    printf("\n%s", rule);
    for (uint32_t l = 0; l < n; l++)
        printf("---:|");
    printf("\n");
}

/* What the GEMM variant runs at stage l: "gemm", "sparse", the kernel
 * by teams of warps as "warp T/P" (team, planes a block), the list
 * kernel as "list F/P" (float4 a lane, planes a block; "/c": a block's
 * warps on characters, not positions) or the row kernel as "rows W/P"
 * (warps, planes a block; "/l1": its weights read through L1). */
static const char *s_path(nc_gpu_neocog *e, uint32_t l, char *buf, size_t n)
{
    const uint32_t t = nc_gpu_neocog_get_s_warp_big(e, l);
    if (nc_gpu_neocog_get_s_list_big(e, l) &&
        nc_gpu_neocog_get_s_list_order(e, l) >= NC_GPU_NEOCOG_LIST_ROWS)
        snprintf(buf, n, "rows %u/%u%s", nc_gpu_neocog_get_s_list_big(e, l),
                 nc_gpu_neocog_get_s_list_planes_big(e, l),
                 nc_gpu_neocog_get_s_list_order(e, l) == NC_GPU_NEOCOG_LIST_ROWS_L1 ? "/l1" : "");
    else if (nc_gpu_neocog_get_s_list_big(e, l))
        snprintf(buf, n, "list %u/%u%s", nc_gpu_neocog_get_s_list_big(e, l),
                 nc_gpu_neocog_get_s_list_planes_big(e, l),
                 nc_gpu_neocog_get_s_list_order(e, l) == NC_GPU_NEOCOG_LIST_CHARS ? "/c" : "");
    else if (t)
        snprintf(buf, n, "warp %u/%u", t, nc_gpu_neocog_get_s_planes_big(e, l));
    else
        snprintf(buf, n, "%s", nc_gpu_neocog_stage_uses_gemm(e, l) ? "gemm" : "sparse");
    return buf;
}

/* One row of table 2c: every S-layer at batch n with the list kernel set
 * to (f, planes, order) (nc_gpu_neocog_set_s_list_big), "-" where it
 * refuses, the setting cleared after each; us per character. */
static int list_row(nc_gpu_neocog *e, uint32_t ns, uint32_t n, int reps, uint32_t f,
                    uint32_t planes, uint32_t order)
{
    for (uint32_t l = 0; l < ns; l++) {
        work w = { 0, 1 + 2 * (int)l, n };
        float ms = 0.0f;
        int err = nc_gpu_neocog_set_s_list_big(e, l, f, planes, order);
        if (err == -EINVAL) {
            printf(" - |");
            continue;
        }
        if (err < 0)
            return err;
        err = time_work(e, &w, reps, &ms);
        nc_gpu_neocog_set_s_list_big(e, l, 0, 0, 0);
        if (err < 0)
            return err;
        printf(" %.3f |", ms * 1e3f / n);
    }
    printf("\n");
    return 0;
}

/* Table 2c: where the GEMM variant runs each S-layer at batch n, the
 * kernel by teams of warps instead (nc_gpu_neocog_set_s_warp_big), teams
 * of 1 / 2 / 4 and 32 / 64 / 128 planes a block, and the list kernel
 * (nc_gpu_neocog_set_s_list_big: its list building included), 1 / 2 / 4
 * float4 a lane, 32 / 64 / 128 planes a block and a block's warps on
 * positions or on characters, and the row kernel with 8 / 16 warps and
 * 32 planes a block, 16 warps and 64 / 96 / 128, or 8 warps and 96, and
 * 8 / 16 warps with 32 planes or 16 with 96, weights through L1 ("-"
 * where it refuses),
 * against the GEMM path or the sparse kernel as tuned, in the same run; us
 * per character.  The tuned settings are put back. */
static int warp_big(nc_gpu_neocog *e, const nc_neocog *net, uint32_t n, int reps)
{
    static const uint32_t teams[] = { 1, 2, 4 }, planes[] = { 32, 64, 128 };
    const uint32_t ns = net->arch.n_stages;
    uint32_t t0[NC_NEOCOG_MAX_STAGES], p0[NC_NEOCOG_MAX_STAGES];
    uint32_t f0[NC_NEOCOG_MAX_STAGES], q0[NC_NEOCOG_MAX_STAGES], c0[NC_NEOCOG_MAX_STAGES];
    char buf[32];
    int err;
    if ((err = nc_gpu_neocog_set_variant(e, NC_GPU_NEOCOG_GEMM)) < 0 ||
        (err = nc_gpu_neocog_enqueue(e, n, 0)) < 0 || (err = nc_gpu_neocog_sync(e)) < 0)
        return err;
    printf("\n### S-layers at batch %u: the warp-team and list kernels against the GEMM path "
           "or the sparse kernel (us per character)\n\n", n);
    layer_columns("| kernel |", "|---|", "S", ns);
    printf("| gemm or sparse, as tuned |");
    for (uint32_t l = 0; l < ns; l++) {
        t0[l] = nc_gpu_neocog_get_s_warp_big(e, l);
        p0[l] = nc_gpu_neocog_get_s_planes_big(e, l);
        f0[l] = nc_gpu_neocog_get_s_list_big(e, l);
        q0[l] = nc_gpu_neocog_get_s_list_planes_big(e, l);
        c0[l] = nc_gpu_neocog_get_s_list_order(e, l);
        nc_gpu_neocog_set_s_warp_big(e, l, 0, 0);
        nc_gpu_neocog_set_s_list_big(e, l, 0, 0, 0);
    }
    for (uint32_t l = 0; l < ns; l++) {
        work w = { 0, 1 + 2 * (int)l, n };
        float ms = 0.0f;
        if ((err = time_work(e, &w, reps, &ms)) < 0)
            goto out;
        printf(" %.3f (%s) |", ms * 1e3f / n, s_path(e, l, buf, sizeof buf));
    }
    printf("\n");
    for (size_t ti = 0; ti < sizeof teams / sizeof teams[0]; ti++)
        for (size_t pi = 0; pi < sizeof planes / sizeof planes[0]; pi++) {
            printf("| warp, team %u, %u planes |", teams[ti], planes[pi]);
            for (uint32_t l = 0; l < ns; l++) {
                work w = { 0, 1 + 2 * (int)l, n };
                float ms = 0.0f;
                if ((err = nc_gpu_neocog_set_s_warp_big(e, l, teams[ti], planes[pi])) < 0)
                    goto out;
                err = time_work(e, &w, reps, &ms);
                nc_gpu_neocog_set_s_warp_big(e, l, 0, 0);
                if (err < 0)
                    goto out;
                printf(" %.3f |", ms * 1e3f / n);
            }
            printf("\n");
        }
    for (uint32_t c = 0; c <= 1; c++)
        for (uint32_t f = 1; f <= 4; f *= 2)
            for (size_t pi = 0; pi < sizeof planes / sizeof planes[0]; pi++) {
                printf("| list, %u float4 a lane, %u planes, %s a block |", f, planes[pi],
                       c ? "characters" : "positions");
                if ((err = list_row(e, ns, n, reps, f, planes[pi], c)) < 0)
                    goto out;
            }
    static const uint32_t rset[][3] = { { 8, 32, 0 }, { 16, 32, 0 }, { 16, 64, 0 },
                                        { 8, 96, 0 }, { 16, 96, 0 }, { 16, 128, 0 },
                                        { 8, 32, 1 }, { 16, 32, 1 }, { 16, 96, 1 } };
    for (size_t ri = 0; ri < sizeof rset / sizeof rset[0]; ri++) {
        printf("| rows, %u warps, %u planes a block%s |", rset[ri][0], rset[ri][1],
               rset[ri][2] ? ", weights through L1" : "");
        const uint32_t order = rset[ri][2] ? NC_GPU_NEOCOG_LIST_ROWS_L1 : NC_GPU_NEOCOG_LIST_ROWS;
        if ((err = list_row(e, ns, n, reps, rset[ri][0], rset[ri][1], order)) < 0)
            goto out;
    }
    err = 0;
out:
    for (uint32_t l = 0; l < ns; l++) {
        nc_gpu_neocog_set_s_warp_big(e, l, t0[l], p0[l]);
        nc_gpu_neocog_set_s_list_big(e, l, f0[l], q0[l], c0[l]);
    }
    return err;
}

/* With a model file only the variants that take any plane count are timed. */
static int wanted(const nc_bench_gpu_opts *o, int v)
{
    return !o->neocog_model || v == NC_GPU_NEOCOG_SPARSE || v == NC_GPU_NEOCOG_GEMM ||
           v == NC_GPU_NEOCOG_AUTO;
}

/* The shipped (or any) neocognitron file: its first member, if a committee
 * (the engine runs one network). */
static int load_net(const char *path, nc_neocog **ret)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_model_info info;
    int err = nc_file_read_model(path, (size_t)1 << 30, &buf, &len);
    if (!err)
        err = nc_neocog_load_member(buf, len, 0, ret, &info, NULL);
    free(buf);
    return err;
}

/* The tile C kernel's shapes (tile side x tap slices) at batch 1 on each
 * C-layer's input as the engine's last batch-1 run left it, next to the
 * staged kernel on the same buffers: ten launches back to back between two
 * events, so the host's launch work hides behind the kernels (us each). */
static int tile_shapes(nc_gpu_neocog *e, const nc_neocog *net, int reps)
{
    const uint32_t nc = net->arch.n_stages - 1;
    cudaStream_t st = (cudaStream_t)nc_gpu_neocog_stream(e);
    static const uint32_t sides[] = { 0, 1, 2, 3, 4, 6, 8 }, slices[] = { 1, 2, 4 };
    int err = nc_gpu_neocog_enqueue(e, 1, 0);
    if (err == 0)
        err = nc_gpu_neocog_sync(e);
    printf("\n### The tile C kernel's shapes at batch 1 (us per launch, ten launches back "
           "to back; side 0: the kernel's own choice, slices 0 likewise)\n\n");
    layer_columns("| side | slices |", "|---:|---:|", "UC", nc);
    float t[3][sizeof sides / sizeof sides[0]][4], ts[3];
    for (uint32_t l = 0; err == 0 && l < nc && l < 3; l++) {
        const nc_neocog_arch *A = &net->arch;
        const uint32_t K = net->n_planes[l], ks = nc_neocog_kstride(K);
        const uint32_t n_in = A->stage[l].s_size, n_out = A->stage[l].c_size;
        nc_gpu_neocog_c_args ca;
        memset(&ca, 0, sizeof ca);
        if ((err = nc_gpu_neocog_geom_init(net->c_ix[l], net->c_d[l], &ca.g)) < 0)
            break;
        ca.k = K;
        const size_t ni = (size_t)n_in * n_in * ks, no = (size_t)n_out * n_out * ks;
        float *h = (float *)malloc(ni * sizeof(float)), *d_in = NULL, *d_out = NULL;
        uint8_t *d_oi = NULL, *d_oo = NULL;
        if (!h || cudaMalloc((void **)&d_in, ni * sizeof(float)) != cudaSuccess ||
            cudaMalloc((void **)&d_out, no * sizeof(float)) != cudaSuccess ||
            cudaMalloc((void **)&d_oi, (size_t)n_in * n_in) != cudaSuccess ||
            cudaMalloc((void **)&d_oo, (size_t)n_out * n_out) != cudaSuccess)
            err = -ENOMEM;
        if (err == 0)
            err = nc_gpu_neocog_download_layer(e, 1 + 2 * (int)l, 1, h);
        if (err == 0 && cudaMemcpy(d_in, h, ni * sizeof(float), cudaMemcpyHostToDevice) !=
                            cudaSuccess)
            err = -EIO;
        if (err == 0)
            err = nc_gpu_neocog_occupancy(d_in, n_in * n_in, K, ks, d_oi, 1, st);
        cudaEvent_t e0, e1;
        if (err == 0 && (cudaEventCreate(&e0) != cudaSuccess ||
                         cudaEventCreate(&e1) != cudaSuccess))
            err = -EIO;
        for (int si = -1; err == 0 && si < (int)(sizeof sides / sizeof sides[0]); si++)
            for (int ki = 0; err == 0 && ki < (si < 0 ? 1 : 4); ki++) {
                float *ms = (float *)malloc(reps * sizeof(float));
                if (!ms) {
                    err = -ENOMEM;
                    break;
                }
                for (int i = -2; err == 0 && i < reps; i++) {
                    cudaEventRecord(e0, st);
                    for (int x = 0; err == 0 && x < 10; x++)
                        err = si < 0
                            ? nc_gpu_neocog_c_forward_kind(&ca, NC_GPU_NEOCOG_C_STAGED, d_in,
                                                           d_oi, d_out, d_oo, 1, 0, st)
                            : nc_gpu_neocog_c_tile_forward(&ca, d_in, d_oi, d_out, d_oo, 1,
                                                           sides[si], ki ? slices[ki - 1] : 0,
                                                           st);
                    cudaEventRecord(e1, st);
                    if (err == 0 && (cudaEventSynchronize(e1) != cudaSuccess ||
                                     cudaEventElapsedTime(i < 0 ? &ms[0] : &ms[i], e0, e1) !=
                                         cudaSuccess))
                        err = -EIO;
                }
                if (err == 0)
                    (si < 0 ? ts[l] : t[l][si][ki]) = median(ms, reps) * 1e2f;
                free(ms);
            }
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        free(h);
        cudaFree(d_in);
        cudaFree(d_out);
        cudaFree(d_oi);
        cudaFree(d_oo);
    }
    if (err < 0)
        return err;
    printf("| staged | | %.2f | %.2f | %.2f |\n", ts[0], ts[1], ts[2]);
    for (size_t si = 0; si < sizeof sides / sizeof sides[0]; si++)
        for (int ki = 0; ki < 4; ki++)
            printf("| %u | %u | %.2f | %.2f | %.2f |\n", sides[si], ki ? slices[ki - 1] : 0,
                   t[0][si][ki], t[1][si][ki], t[2][si][ki]);
    return 0;
}

/* 5: the engine's lanes (chunk buffers on streams of their own) at the
 * largest batch, one and two, for chunks of 1024 / 2048 / 4096, GEMM
 * variant. */
static int lanes_table(nc_gpu_neocog *e, uint32_t n, uint32_t nb)
{
    const uint32_t chunks[3] = { 1024, 2048, 4096 };
    int r = nc_gpu_neocog_set_variant(e, NC_GPU_NEOCOG_GEMM);
    if (r == 0)
        printf("\n| lanes, at batch %u (GEMM variant) | chars/s, chunks of 1024 | 2048 | 4096 "
               "|\n|---|---:|---:|---:|\n", n);
    for (uint32_t lanes = 1; r == 0 && lanes <= NC_GPU_NEOCOG_MAX_LANES; lanes++) {
        printf("| %u |", lanes);
        r = nc_gpu_neocog_set_lanes(e, lanes);
        for (int j = 0; r == 0 && j < 3; j++) {
            const work w = { 1, 0, n };
            float ms = 0.0f;
            if (chunks[j] > nb || nc_gpu_neocog_set_chunk(e, chunks[j]) < 0) {
                printf(" - |");
                continue;
            }
            if ((r = time_work(e, &w, 5, &ms)) == 0)
                printf(" %.0f |", n / (ms * 1e-3));
        }
        printf("\n");
    }
    nc_gpu_neocog_set_chunk(e, nb);
    fflush(stdout);
    return r;
}

extern "C" int bench_gpu_neocog(const nc_bench_gpu_opts *o)
{
    const nc_dataset *ds = o->digits;
    if (!ds || !ds->labels || ds->count < N_SEED + 100)
        return -EINVAL;
    const uint32_t max_batch = (uint32_t)o->max_batch;
    const int reps = o->reps;
    float *x = (float *)malloc((size_t)ds->count * 65 * 65 * sizeof(float));
    uint8_t *lab = (uint8_t *)malloc(ds->count);
    float *batch_in = (float *)malloc((size_t)max_batch * 65 * 65 * sizeof(float));
    nc_neocog_result *res = (nc_neocog_result *)calloc(max_batch, sizeof *res);
    nc_neocog *net = NULL;
    nc_gpu_neocog *e = NULL;
    int err = 0;
    if (!x || !lab || !batch_in || !res) {
        err = -ENOMEM;
        goto out;
    }
    {
        nc_prep p;
        memset(&p, 0, sizeof p);
        p.kind = NC_PREP_NEOCOG;
        p.size = 65;
        p.box = 40;
        p.threshold = -1.0f;
        uint32_t got = 0;
        for (uint32_t i = 0; i < ds->count; i++) {
            nc_image img = { ds->cols, ds->rows, ds->cols,
                             ds->pixels + (size_t)i * ds->rows * ds->cols };
            if (nc_prep_apply(&img, &p, x + (size_t)got * 65 * 65) < 0)
                continue;
            lab[got++] = ds->labels[i];
        }
        const uint32_t n_test = got - N_SEED;
        /* every batch is made of the digits after the seeding ones, in turn */
        for (uint32_t b = 0; b < max_batch; b++)
            memcpy(batch_in + (size_t)b * 65 * 65, x + (size_t)(N_SEED + b % n_test) * 65 * 65,
                   65 * 65 * sizeof(float));

        nc_neocog_arch A;
        nc_neocog_arch_default(&A);
        const uint32_t target[4] = { 16, 26, 78, 70 };
        if (o->neocog_model) {
            if ((err = load_net(o->neocog_model, &net)) < 0)
                goto out;
        } else if ((err = nc_neocog_new(&A, &net)) < 0 ||
                   (err = nc_neocog_train_us1(net, 16, 100.0f)) < 0 ||
                   (err = nc_neocog_seed_from_digits(net, x, lab, N_SEED, target, 2)) < 0) {
            goto out;
        }
        double t0 = now_s();
        if ((err = nc_gpu_neocog_new(net, o->device, max_batch, &e)) < 0)
            goto out;
        double t_new = now_s() - t0;
        if ((err = nc_gpu_neocog_upload(e, batch_in, max_batch)) < 0)
            goto out;
        printf("## Neocognitron (Fukushima 2003), GPU\n\n");
        if (o->neocog_model)
            printf("Planes US1..US4: %u / %u / %u / %u, from %s (max-response answer; only "
                   "the sparse, GEMM and AUTO variants).  ", net->n_planes[0],
                   net->n_planes[1], net->n_planes[2], net->n_planes[3], o->neocog_model);
        else
            printf("Planes US1..US4: %u / %u / %u / %u (as neocog-bench-cpu: edge-trained US1, "
                   "US2..US4 seeded from %u fixture digits).  ", net->n_planes[0],
                   net->n_planes[1], net->n_planes[2], net->n_planes[3], N_SEED);
        printf("Engine made in %.1f ms (weights, tables, %u-character buffers).  Inputs: "
               "fixture digits %u.. in turn, device-resident unless said.  GPU times by CUDA "
               "events, median of %d.\n\n", t_new * 1e3, max_batch, N_SEED, reps);

        /* 1 + 2: per-layer kernel times per variant */
        const uint32_t nb = max_batch < NC_GPU_NEOCOG_CHUNK ? max_batch : NC_GPU_NEOCOG_CHUNK;
        float t1[NC_GPU_NEOCOG_N_VARIANTS][9], tb[NC_GPU_NEOCOG_N_VARIANTS][9];
        memset(t1, 0, sizeof t1);
        memset(tb, 0, sizeof tb);
        for (int v = 0; v < NC_GPU_NEOCOG_N_VARIANTS; v++) {
            if (!wanted(o, v))
                continue;
            if (v >= NC_GPU_NEOCOG_T1_T4 && (err = nc_gpu_neocog_tune(e, v, nb)) < 0)
                goto out;
            if ((err = nc_gpu_neocog_set_variant(e, v)) < 0)
                goto out;
            /* the variant's own kernels: not the warp teams that replace
             * the sparse one at small batches (3d times those) */
            uint32_t team[NC_NEOCOG_MAX_STAGES];
            for (uint32_t l = 0; l < net->arch.n_stages; l++) {
                team[l] = nc_gpu_neocog_get_s_warp(e, l);
                nc_gpu_neocog_set_s_warp(e, l, 0);
            }
            for (int pass = 0; pass < 2; pass++) {
                const uint32_t n = pass ? nb : 1;
                /* fill the activations, then time each layer on them */
                if ((err = nc_gpu_neocog_enqueue(e, n, 0)) < 0 ||
                    (err = nc_gpu_neocog_sync(e)) < 0)
                    goto out;
                for (int layer = 0; layer <= 8; layer++) {
                    work w = { 0, layer, n };
                    float ms = 0.0f;
                    if ((err = time_work(e, &w, reps, &ms)) < 0)
                        goto out;
                    (pass ? tb : t1)[v][layer] = ms * 1e3f / n;
                }
            }
            for (uint32_t l = 0; l < net->arch.n_stages; l++)
                nc_gpu_neocog_set_s_warp(e, l, team[l]);
        }
        printf("### S-layer kernels, as seed 004 Table 5 (us per character)\n\n");
        printf("| variant | S1 | S2 | S3 | S4 | all S | at batch %u: S1 | S2 | S3 | S4 | all S "
               "| positions per block S1..S4 |\n", nb);
        printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        for (int v = 0; v < NC_GPU_NEOCOG_N_VARIANTS; v++) {
            if (!wanted(o, v))
                continue;
            printf("| %s", nc_gpu_neocog_variant_name(v));
            float s1 = 0.0f, sb = 0.0f;
            for (int l = 0; l < 4; l++) {
                printf(" | %.2f", t1[v][1 + 2 * l]);
                s1 += t1[v][1 + 2 * l];
            }
            printf(" | %.2f", s1);
            for (int l = 0; l < 4; l++) {
                printf(" | %.3f", tb[v][1 + 2 * l]);
                sb += tb[v][1 + 2 * l];
            }
            printf(" | %.3f | ", sb);
            if (v == NC_GPU_NEOCOG_GEMM) {
                char buf[32];
                for (uint32_t l = 0; l < 4; l++)
                    printf("%s%s", l ? " / " : "", s_path(e, l, buf, sizeof buf));
            }
            else if (v >= NC_GPU_NEOCOG_T1_T4)
                for (uint32_t l = 0; l < 4; l++)
                    printf("%s%u", l ? "/" : "", nc_gpu_neocog_get_block(e, v, l));
            else
                printf("%s", v == NC_GPU_NEOCOG_T1 ? "(256 threads)" : "1 (ks threads)");
            printf(" |\n");
        }
        printf("\nSeed 004 (GTX 280, us per character): T1 346/1340/1980/2220, T1-T3 "
               "388/769/721/1270, T1-T4 177/573/667/847, T1-T5 168/547/627/736.\n\n");
        printf("### The other layers (us per character; the same kernels in every variant)\n\n");
        printf("| batch | UG | UC1 | UC2 | UC3 | UC4 |\n|---|---:|---:|---:|---:|---:|\n");
        for (int pass = 0; pass < 4; pass++) {
            const int v = pass < 2 ? NC_GPU_NEOCOG_SPARSE : NC_GPU_NEOCOG_GEMM;
            const float *t = pass & 1 ? tb[v] : t1[v];
            printf("| %u (after %s) | %.2f | %.2f | %.2f | %.2f | %.2f |\n", pass & 1 ? nb : 1,
                   nc_gpu_neocog_variant_name(v), t[0], t[2], t[4], t[6], t[8]);
        }
        printf("\nPer layer at batch %u, GEMM variant (us per character): UG %.3f, S1 %.3f, "
               "C1 %.3f, S2 %.3f, C2 %.3f, S3 %.3f, C3 %.3f, S4 %.3f, C4 %.3f; sum %.3f "
               "(a batch of 4096+ runs as chunks of %u).\n", nb,
               tb[5][0], tb[5][1], tb[5][2], tb[5][3], tb[5][4], tb[5][5], tb[5][6], tb[5][7],
               tb[5][8], tb[5][0] + tb[5][1] + tb[5][2] + tb[5][3] + tb[5][4] + tb[5][5] +
               tb[5][6] + tb[5][7] + tb[5][8], nb);
        {
            char b0[32], b1[32], b2[32], b3[32];
            printf("Tuned at batch %u: GEMM variant per stage %s / %s / %s / %s; AUTO uses it "
                   "from batch %u on.\n", nb, s_path(e, 0, b0, sizeof b0),
                   s_path(e, 1, b1, sizeof b1), s_path(e, 2, b2, sizeof b2),
                   s_path(e, 3, b3, sizeof b3), nc_gpu_neocog_get_auto(e));
        }

        if ((err = warp_big(e, net, nb, reps)) < 0)
            goto out;

        /* 2b: the C-layer kernels side by side (GEMM variant's activations) */
        {
            int tuned[NC_NEOCOG_MAX_STAGES];
            const uint32_t nc = net->arch.n_stages - 1;
            for (uint32_t l = 0; l < nc; l++)
                tuned[l] = nc_gpu_neocog_get_c_kind(e, l);
            printf("\n### C-layer kernels (us per character, GEMM variant's inputs)\n\n"
                   "| kernel | batch | UC1 | UC2 | UC3 | all C |\n|---|---:|---:|---:|---:|---:|\n");
            if ((err = nc_gpu_neocog_set_variant(e, NC_GPU_NEOCOG_GEMM)) < 0 ||
                (err = nc_gpu_neocog_set_c_min(e, 1)) < 0)
                goto out;
            for (int k = 0; k < NC_GPU_NEOCOG_C_N_KINDS; k++)
                for (int pass = 0; pass < 2; pass++) {
                    const uint32_t n = pass ? nb : 1;
                    float tc[NC_NEOCOG_MAX_STAGES] = { 0 }, sum = 0.0f;
                    for (uint32_t l = 0; l < nc; l++)
                        if ((err = nc_gpu_neocog_set_c_kind(e, l, k)) < 0)
                            goto out;
                    if ((err = nc_gpu_neocog_enqueue(e, n, 0)) < 0 ||
                        (err = nc_gpu_neocog_sync(e)) < 0)
                        goto out;
                    for (uint32_t l = 0; l < nc; l++) {
                        work w = { 0, 2 + 2 * (int)l, n };
                        float ms = 0.0f;
                        if ((err = time_work(e, &w, reps, &ms)) < 0)
                            goto out;
                        tc[l] = ms * 1e3f / n;
                        sum += tc[l];
                    }
                    printf("| %s | %u | %.3f | %.3f | %.3f | %.3f |\n",
                           nc_gpu_neocog_c_kind_name(k), n, tc[0], tc[1], tc[2], sum);
                }
            for (uint32_t l = 0; l < nc; l++)
                nc_gpu_neocog_set_c_kind(e, l, tuned[l]);
            nc_gpu_neocog_set_c_min(e, NC_GPU_NEOCOG_C_MIN);
            printf("\nC kernels the tuner kept (batch %u): %s/%s/%s; at batch 1: %s/%s/%s.\n",
                   nb, nc_gpu_neocog_c_kind_name(tuned[0]),
                   nc_gpu_neocog_c_kind_name(tuned[1]), nc_gpu_neocog_c_kind_name(tuned[2]),
                   nc_gpu_neocog_c_kind_name(nc_gpu_neocog_get_c_small_kind(e, 0)),
                   nc_gpu_neocog_c_kind_name(nc_gpu_neocog_get_c_small_kind(e, 1)),
                   nc_gpu_neocog_c_kind_name(nc_gpu_neocog_get_c_small_kind(e, 2)));
            if (!o->neocog_model && (err = tile_shapes(e, net, reps)) < 0)
                goto out;
        }

        /* 3: latency at batch 1 */
        printf("\n### Whole network, batch 1\n\n| variant | GPU time, graph (us) | GPU time, "
               "launches (us) | host wall, forward() with copies (us) |\n|---|---:|---:|---:|\n");
        for (int v = 0; v < NC_GPU_NEOCOG_N_VARIANTS; v++) {
            if (!wanted(o, v))
                continue;
            if ((err = nc_gpu_neocog_set_variant(e, v)) < 0)
                goto out;
            float mg = 0.0f, ml = 0.0f;
            if ((err = time_batch1(e, reps * 10, &mg, &ml)) < 0)
                goto out;
            float *wall = (float *)malloc(reps * 10 * sizeof(float));
            if (!wall) {
                err = -ENOMEM;
                goto out;
            }
            for (int i = -3; i < reps * 10; i++) {
                double s = now_s();
                if ((err = nc_gpu_neocog_forward(e, batch_in, 1, res)) < 0) {
                    free(wall);
                    goto out;
                }
                if (i >= 0)
                    wall[i] = (float)((now_s() - s) * 1e6);
            }
            printf("| %s | %.1f | %.1f | %.1f |\n", nc_gpu_neocog_variant_name(v), mg * 1e3f,
                   ml * 1e3f, median(wall, reps * 10));
            free(wall);
        }

        /* 3b: batch 1 with each small-batch C kernel on every layer, and with
         * the tuner's choice (the engine's setting) */
        {
            const uint32_t nc = net->arch.n_stages - 1;
            int kept[NC_NEOCOG_MAX_STAGES];
            for (uint32_t l = 0; l < nc; l++)
                kept[l] = nc_gpu_neocog_get_c_small_kind(e, l);
            printf("\n| sparse variant, batch 1: C kernel below batch %u | GPU time, graph (us) "
                   "| GPU time, launches (us) |\n|---|---:|---:|\n", NC_GPU_NEOCOG_C_MIN);
            if ((err = nc_gpu_neocog_set_variant(e, NC_GPU_NEOCOG_SPARSE)) < 0)
                goto out;
            for (int k = -1; k < NC_GPU_NEOCOG_C_N_KINDS; k++) {
                char name[64];
                for (uint32_t l = 0; l < nc; l++)
                    if ((err = nc_gpu_neocog_set_c_small_kind(e, l, k < 0 ? kept[l] : k)) < 0)
                        goto out;
                if (k < 0)
                    snprintf(name, sizeof name, "engine's (%s/%s/%s)",
                             nc_gpu_neocog_c_kind_name(kept[0]),
                             nc_gpu_neocog_c_kind_name(kept[1]),
                             nc_gpu_neocog_c_kind_name(kept[2]));
                else
                    snprintf(name, sizeof name, "%s on every layer%s",
                             nc_gpu_neocog_c_kind_name(k),
                             k == NC_GPU_NEOCOG_C_STAGED ? " (the original default)" : "");
                float mg = 0.0f, ml = 0.0f;
                if ((err = time_batch1(e, reps * 10, &mg, &ml)) < 0)
                    goto out;
                printf("| %s | %.1f | %.1f |\n", name, mg * 1e3f, ml * 1e3f);
            }
            for (uint32_t l = 0; l < nc; l++)
                nc_gpu_neocog_set_c_small_kind(e, l, kept[l]);
        }

        /* 3c: batch 1 with the sparse kernels' reductions split in runs
         * (nc_gpu_neocog_set_split): the engine's (tuned), none, the
         * default for this device, then the same split on every stage */
        {
            const uint32_t ns = net->arch.n_stages;
            uint32_t kept[NC_NEOCOG_MAX_STAGES], team[NC_NEOCOG_MAX_STAGES];
            for (uint32_t l = 0; l < ns; l++) {
                kept[l] = nc_gpu_neocog_get_split(e, l);
                team[l] = nc_gpu_neocog_get_s_warp(e, l);   /* the sparse kernel here */
                nc_gpu_neocog_set_s_warp(e, l, 0);
            }
            printf("\n| sparse variant, batch 1: splits US1..US4 | S1 | S2 | S3 | S4 (us per "
                   "layer) | GPU time, graph (us) | GPU time, launches (us) |\n"
                   "|---|---:|---:|---:|---:|---:|---:|\n");
            if ((err = nc_gpu_neocog_set_variant(e, NC_GPU_NEOCOG_SPARSE)) < 0)
                goto out;
            static const int32_t cfg[] = { -1, 1, 0, 2, 4, 8, 16, 32 };
            for (size_t c = 0; c < sizeof cfg / sizeof cfg[0]; c++) {
                for (uint32_t l = 0; l < ns; l++)
                    if ((err = nc_gpu_neocog_set_split(e, l, cfg[c] < 0 ? kept[l]
                                                                        : (uint32_t)cfg[c])) < 0)
                        goto out;
                float ts[NC_NEOCOG_MAX_STAGES] = { 0 }, mg = 0.0f, ml = 0.0f;
                if ((err = time_s_batch1(e, ns, reps * 10, ts, &mg, &ml)) < 0)
                    goto out;
                char name[64];
                snprintf(name, sizeof name, "%s%u/%u/%u/%u",
                         cfg[c] < 0 ? "engine's: " : cfg[c] == 0 ? "default: "
                                                   : cfg[c] == 1 ? "none: " : "",
                         nc_gpu_neocog_get_split(e, 0), nc_gpu_neocog_get_split(e, 1),
                         nc_gpu_neocog_get_split(e, 2), nc_gpu_neocog_get_split(e, 3));
                printf("| %s | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f |\n", name, ts[0], ts[1],
                       ts[2], ts[3], mg * 1e3f, ml * 1e3f);
            }
            for (uint32_t l = 0; l < ns; l++) {
                nc_gpu_neocog_set_split(e, l, kept[l]);
                nc_gpu_neocog_set_s_warp(e, l, team[l]);
            }
        }

        /* 3d: batch 1 with the S kernel by teams of warps
         * (nc_gpu_neocog_set_s_warp) in place of the sparse one: the
         * engine's teams (tuned), every team size on every stage, then each
         * stage's fastest; then small batches, sparse against that pick */
        {
            const uint32_t ns = net->arch.n_stages;
            uint32_t kept[NC_NEOCOG_MAX_STAGES], best_w[NC_NEOCOG_MAX_STAGES];
            float best_t[NC_NEOCOG_MAX_STAGES];
            for (uint32_t l = 0; l < ns; l++) {
                kept[l] = nc_gpu_neocog_get_s_warp(e, l);
                best_w[l] = 0;
                best_t[l] = 1e30f;
            }
            printf("\n| sparse variant, batch 1: S kernel (warps a team) | S1 | S2 | S3 | S4 "
                   "(us per layer) | GPU time, graph (us) | GPU time, launches (us) |\n"
                   "|---|---:|---:|---:|---:|---:|---:|\n");
            if ((err = nc_gpu_neocog_set_variant(e, NC_GPU_NEOCOG_SPARSE)) < 0)
                goto out;
            static const int32_t team[] = { -2, 0, 1, 2, 4, 8, 16, -1 };
            for (size_t c = 0; c < sizeof team / sizeof team[0]; c++) {
                for (uint32_t l = 0; l < ns; l++)
                    if ((err = nc_gpu_neocog_set_s_warp(e, l, team[c] == -2 ? kept[l]
                                                              : team[c] < 0 ? best_w[l]
                                                                            : (uint32_t)team[c])) < 0)
                        goto out;
                float ts[NC_NEOCOG_MAX_STAGES] = { 0 }, mg = 0.0f, ml = 0.0f;
                if ((err = time_s_batch1(e, ns, reps * 10, ts, &mg, &ml)) < 0)
                    goto out;
                for (uint32_t l = 0; team[c] >= 0 && l < ns && l < 4; l++)
                    if (ts[l] < best_t[l]) {
                        best_t[l] = ts[l];
                        best_w[l] = (uint32_t)team[c];
                    }
                char name[64];
                if (team[c] == 0)
                    snprintf(name, sizeof name, "sparse, splits %u/%u/%u/%u",
                             nc_gpu_neocog_get_split(e, 0), nc_gpu_neocog_get_split(e, 1),
                             nc_gpu_neocog_get_split(e, 2), nc_gpu_neocog_get_split(e, 3));
                else if (team[c] > 0)
                    snprintf(name, sizeof name, "warps, teams of %d", team[c]);
                else if (team[c] == -2)
                    snprintf(name, sizeof name, "the engine's (tuned): %u/%u/%u/%u (0: sparse)",
                             kept[0], kept[1], kept[2], kept[3]);
                else
                    snprintf(name, sizeof name, "each stage's fastest: %u/%u/%u/%u (0: sparse)",
                             best_w[0], best_w[1], best_w[2], best_w[3]);
                printf("| %s | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f |\n", name, ts[0], ts[1],
                       ts[2], ts[3], mg * 1e3f, ml * 1e3f);
            }
            printf("\n| batch | sparse: GPU us per batch, graph | warps (each stage's fastest at "
                   "batch 1): GPU us per batch, graph |\n|---:|---:|---:|\n");
            for (uint32_t n = 1; n <= 16 && n <= max_batch; n *= 2) {
                float m[2] = { 0.0f, 0.0f };
                for (int i = 0; i < 2; i++) {
                    work w = { 2, 0, n };
                    for (uint32_t l = 0; l < ns; l++)
                        if ((err = nc_gpu_neocog_set_s_warp(e, l, i ? best_w[l] : 0)) < 0)
                            goto out;
                    if ((err = time_work(e, &w, reps * 10, &m[i])) < 0)
                        goto out;
                }
                printf("| %u | %.1f | %.1f |\n", n, m[0] * 1e3f, m[1] * 1e3f);
            }
            for (uint32_t l = 0; l < ns; l++)
                nc_gpu_neocog_set_s_warp(e, l, kept[l]);
        }

        /* 3e: batch 1 with the warp S kernel's planes a block
         * (nc_gpu_neocog_set_s_planes), the engine's teams: the engine's
         * (tuned), then each count on every stage that runs that kernel */
        {
            const uint32_t ns = net->arch.n_stages;
            uint32_t kept[NC_NEOCOG_MAX_STAGES];
            for (uint32_t l = 0; l < ns; l++)
                kept[l] = nc_gpu_neocog_get_s_planes(e, l);
            printf("\n| sparse variant, batch 1: warp S kernel, planes a block (teams %u/%u/%u/%u) "
                   "| S1 | S2 | S3 | S4 (us per layer) | GPU time, graph (us) | GPU time, "
                   "launches (us) |\n|---|---:|---:|---:|---:|---:|---:|\n",
                   nc_gpu_neocog_get_s_warp(e, 0), nc_gpu_neocog_get_s_warp(e, 1),
                   nc_gpu_neocog_get_s_warp(e, 2), nc_gpu_neocog_get_s_warp(e, 3));
            static const int32_t planes[] = { -1, 128, 64, 32, 16, 8 };
            for (size_t c = 0; c < sizeof planes / sizeof planes[0]; c++) {
                for (uint32_t l = 0; l < ns; l++)
                    if ((err = nc_gpu_neocog_set_s_planes(e, l, planes[c] < 0
                                                                   ? kept[l]
                                                                   : (uint32_t)planes[c])) < 0)
                        goto out;
                float ts[NC_NEOCOG_MAX_STAGES] = { 0 }, mg = 0.0f, ml = 0.0f;
                if ((err = time_s_batch1(e, ns, reps * 10, ts, &mg, &ml)) < 0)
                    goto out;
                char name[64];
                if (planes[c] < 0)
                    snprintf(name, sizeof name, "the engine's (tuned): %u/%u/%u/%u", kept[0],
                             kept[1], kept[2], kept[3]);
                else
                    snprintf(name, sizeof name, "%d on every stage", planes[c]);
                printf("| %s | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f |\n", name, ts[0], ts[1],
                       ts[2], ts[3], mg * 1e3f, ml * 1e3f);
            }
            for (uint32_t l = 0; l < ns; l++)
                nc_gpu_neocog_set_s_planes(e, l, kept[l]);

            /* 3f: where batch 1 goes, the engine as tuned: graphs of the
             * layers UG .. X (the step from the row above is X's share of
             * the whole net) and of X alone */
            static const char *const lname[] = { "UG", "US1", "UC1", "US2", "UC2",
                                                 "US3", "UC3", "US4", "UC4" };
            printf("\n| batch 1, engine as tuned: graph of the layers | GPU us | step (us) | "
                   "that layer alone, graph (us) |\n|---|---:|---:|---:|\n");
            float prev = 0.0f;
            for (int k = 0; k <= 2 * (int)ns && k <= 8; k++) {
                float mp = 0.0f, ma = 0.0f;
                if ((err = nc_gpu_neocog_set_variant(e, NC_GPU_NEOCOG_SPARSE)) < 0 ||
                    (err = time_layers_graph(e, 0, k, 0, reps * 20, &mp)) < 0 ||
                    (err = time_layers_graph(e, k, k, 0, reps * 20, &ma)) < 0)
                    goto out;
                printf("| UG .. %s | %.1f | %.1f | %.1f |\n", lname[k], mp * 1e3f,
                       (mp - prev) * 1e3f, ma * 1e3f);
                prev = mp;
            }

            /* 3g: UG and US1 as one kernel or two (nc_gpu_neocog_set_gs1),
             * the rest as tuned: the whole net at batch 1, three rounds
             * of each taken in turn, so that the clocks treat both alike */
            const uint32_t gs1 = nc_gpu_neocog_get_gs1(e);
            const int can = nc_gpu_neocog_set_gs1(e, 1) == 0;
            nc_gpu_neocog_set_gs1(e, gs1);
            if (can)
                printf("\n| batch 1, UG and US1 (engine's: %s) | round | GPU time, graph (us) "
                       "| GPU time, launches (us) |\n|---|---:|---:|---:|\n",
                       gs1 ? "one kernel" : "two");
            else
                printf("\nUG and US1 as one kernel: not for this net's geometry "
                       "(gpu/neocog/neocog_gs1.cuh)\n");
            for (int i = 0; can && i < 6; i++) {
                if ((err = nc_gpu_neocog_set_gs1(e, (uint32_t)(i & 1))) < 0)
                    goto out;
                float mg = 0.0f, ml = 0.0f;
                if ((err = time_batch1(e, reps * 10, &mg, &ml)) < 0)
                    goto out;
                printf("| %s | %d | %.1f | %.1f |\n", i & 1 ? "one kernel" : "two kernels",
                       i / 2 + 1, mg * 1e3f, ml * 1e3f);
            }
            nc_gpu_neocog_set_gs1(e, gs1);
            /* and where it goes: graphs of UG + US1 as one kernel, then the
             * layers after it, against the rows of UG .. X above */
            if (can) {
                nc_gpu_neocog_set_gs1(e, 1);
                printf("\n| batch 1: graph of UG + US1 as one kernel, then the layers | GPU us | "
                       "step (us) |\n|---|---:|---:|\n");
                prev = 0.0f;
                for (int k = 1; k <= 2 * (int)ns && k <= 8; k++) {
                    float mp = 0.0f;
                    if ((err = time_layers_graph(e, 0, k, 1, reps * 20, &mp)) < 0)
                        goto out;
                    printf("| UG+US1 .. %s | %.1f | %.1f |\n", lname[k], mp * 1e3f,
                           (mp - prev) * 1e3f);
                    prev = mp;
                }
                nc_gpu_neocog_set_gs1(e, gs1);
            }
        }

        /* 4: throughput, sparse / gemm / auto */
        printf("\n### Throughput (characters per second)\n\n"
               "| batch | sparse: GPU us per batch | sparse chars/s | gemm: GPU us per batch "
               "| gemm chars/s | auto chars/s | auto chars/s end to end (host in, labels out) "
               "|\n|---:|---:|---:|---:|---:|---:|---:|\n");
        for (uint32_t n = 1; n <= max_batch; n *= 2) {
            const int vs[3] = { NC_GPU_NEOCOG_SPARSE, NC_GPU_NEOCOG_GEMM, NC_GPU_NEOCOG_AUTO };
            float ms[3] = { 0.0f, 0.0f, 0.0f };
            int rr = n >= 4096 ? (reps < 5 ? reps : 5) : reps;
            for (int i = 0; i < 3; i++) {
                work w = { 2, 0, n };
                if ((err = nc_gpu_neocog_set_variant(e, vs[i])) < 0 ||
                    (err = time_work(e, &w, rr, &ms[i])) < 0)
                    goto out;
            }
            double s = now_s();
            for (int i = 0; i < rr; i++)
                if ((err = nc_gpu_neocog_forward(e, batch_in, n, res)) < 0)
                    goto out;
            double wall = (now_s() - s) / rr;
            printf("| %u | %.1f | %.0f | %.1f | %.0f | %.0f | %.0f |\n", n, ms[0] * 1e3f,
                   n / (ms[0] * 1e-3), ms[1] * 1e3f, n / (ms[1] * 1e-3), n / (ms[2] * 1e-3),
                   n / wall);
            if (n < max_batch && n * 2 > max_batch)
                n = max_batch / 2;
        }
        /* chunk size at the largest batch, and every variant there */
        printf("\n| chars per pass (chunk) at batch %u | sparse chars/s | gemm chars/s |\n"
               "|---:|---:|---:|\n", max_batch);
        const uint32_t chunks[] = { 64, 256, 512, 1024, 2048, 4096 };
        for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
            if (nc_gpu_neocog_set_chunk(e, chunks[i]) < 0)
                continue;
            float ms[2] = { 0.0f, 0.0f };
            for (int j = 0; j < 2; j++) {
                work w = { 1, 0, max_batch };
                if ((err = nc_gpu_neocog_set_variant(e, j ? NC_GPU_NEOCOG_GEMM
                                                          : NC_GPU_NEOCOG_SPARSE)) < 0 ||
                    (err = time_work(e, &w, 3, &ms[j])) < 0)
                    goto out;
            }
            printf("| %u | %.0f | %.0f |\n", chunks[i], max_batch / (ms[0] * 1e-3),
                   max_batch / (ms[1] * 1e-3));
        }
        nc_gpu_neocog_set_chunk(e, nb);
        printf("\n| variant | chars/s at batch %u, device-resident |\n|---|---:|\n", max_batch);
        for (int v = 0; v <= NC_GPU_NEOCOG_AUTO; v++) {
            if (!wanted(o, v))
                continue;
            if ((err = nc_gpu_neocog_set_variant(e, v)) < 0)
                goto out;
            work w = { 1, 0, max_batch };
            float ms = 0.0f;
            if ((err = time_work(e, &w, 3, &ms)) < 0)
                goto out;
            printf("| %s | %.0f |\n", nc_gpu_neocog_variant_name(v), max_batch / (ms * 1e-3));
        }
        if ((err = lanes_table(e, max_batch, nb)) < 0)
            goto out;
        /* answers agree with the labels as often as core's do */
        nc_gpu_neocog_set_variant(e, NC_GPU_NEOCOG_AUTO);
        const uint32_t nt = n_test < max_batch ? n_test : max_batch;
        if ((err = nc_gpu_neocog_forward(e, batch_in, nt, res)) < 0)
            goto out;
        int right = 0;
        for (uint32_t i = 0; i < nt; i++)
            right += res[i].label == lab[N_SEED + i];
        printf("\n%s GPU answers (auto, max response) on fixture digits %u..%u: %d of %u "
               "right.\n\n", o->neocog_model ? "The file's" : "Seeded net's", N_SEED,
               N_SEED + nt - 1, right, nt);
    }
out:
    nc_gpu_neocog_free(e);
    nc_neocog_free(net);
    free(x);
    free(lab);
    free(batch_in);
    free(res);
    return err;
}

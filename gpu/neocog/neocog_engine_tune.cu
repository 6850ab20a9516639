/* gpu/neocog/neocog_engine_tune.cu — the resident neocognitron's autotuner
 * (nc_gpu_neocog_tune): times the candidate kernels and settings on the
 * uploaded images and keeps the fastest: per stage the GEMM path, the
 * sparse, warp-team and list kernels at the tuning batch; per C-layer its
 * kernel; AUTO's threshold; and what batch 1 runs (splits, warp teams and
 * their planes, UG and US1 fused or not, the small-batch C kernels), each
 * by the whole net at batch 1.  Every timing is a CUDA event pair on the
 * engine's stream.  Layer: gpu. */
#include "neocog_engine_impl.h"

#include <errno.h>

/* The best of reps timings of stage l's S-layer on n characters. */
static int time_s(nc_gpu_neocog *e, int v, int layer, uint32_t n, int reps, float *ret_ms)
{
    cudaEvent_t t0, t1;
    NC_CUDA_CHECK(cudaEventCreate(&t0));
    cudaError_t ce = cudaEventCreate(&t1);
    if (ce != cudaSuccess) {
        cudaEventDestroy(t0);
        NC_CUDA_CHECK(ce);
    }
    float best = 1e30f;
    int r = 0;
    for (int i = 0; r == 0 && i < reps; i++) {
        ce = cudaEventRecord(t0, e->run);
        if (ce == cudaSuccess) {
            r = layer < 0 ? neocog_eng_run_net(e, &e->ln[0], v, n, e->d_in, e->d_scores,
                                               e->d_labels, e->run)
                          : neocog_eng_run_layer(e, &e->ln[0], v, layer, n, e->d_in,
                                                 e->d_scores, e->d_labels, e->run);
            if (r == 0)
                ce = cudaEventRecord(t1, e->run);
        }
        if (r == 0 && ce == cudaSuccess)
            ce = cudaEventSynchronize(t1);
        float ms = 0.0f;
        if (r == 0 && ce == cudaSuccess)
            ce = cudaEventElapsedTime(&ms, t0, t1);
        if (r == 0 && ce != cudaSuccess)
            r = nc_gpu_record_error(ce, "event timing", __func__, __FILE__, __LINE__);
        if (r == 0 && ms < best)
            best = ms;
    }
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    *ret_ms = best;
    return r;
}

/* Per C-layer, the fastest of the C kernels on n characters (the layer's
 * input as left by a run of the whole net under variant v), kept in the
 * setting that batch n reads: c_kind from c_min on, c_small_kind below. */
static int tune_c(nc_gpu_neocog *e, int v, uint32_t n)
{
    uint32_t *kind = n >= e->c_min ? e->c_kind : e->c_small_kind;
    int r = neocog_eng_run_net(e, &e->ln[0], v, n, e->d_in, e->d_scores, e->d_labels, e->run);
    for (uint32_t l = 0; r == 0 && l + 1 < e->n_stages; l++) {
        float best = 1e30f;
        int best_k = kind[l];
        for (int k = 0; r == 0 && k < NC_GPU_NEOCOG_C_N_KINDS; k++) {
            float ms = 0.0f;
            kind[l] = k;
            r = time_s(e, v, 2 + 2 * (int)l, n, 3, &ms);
            if (r == 0 && ms < best) {
                best = ms;
                best_k = k;
            }
        }
        kind[l] = best_k;
    }
    return r;
}

/* The batch-1 settings (knob[l] for l < n_knob: the sparse kernel's
 * splits, the warp teams, the small-batch C kernels) by the whole net: a
 * layer timed alone is not the layer in the net (on an H100 the
 * per-layer C picks made the net 3 us slower than the tile kernel
 * everywhere, and the per-layer S picks up to 4 us slower than
 * each stage's fastest), so from the defaults already in knob, stage by
 * stage, the settings so far and every candidate are timed in the whole
 * net at batch 1 under variant v (best of 10) and the fastest kept.
 * Stages with skip[l] set keep theirs. */
static int descend_batch1(nc_gpu_neocog *e, int v, uint32_t *knob, uint32_t n_knob,
                          const uint32_t *cand, size_t n_cand, const uint8_t *skip)
{
    int r = 0;
    for (uint32_t l = 0; r == 0 && l < n_knob; l++) {
        if (skip && skip[l])
            continue;
        /* the settings so far timed again next to this stage's candidates:
         * a figure from earlier in the descent may be from lower clocks */
        float best = 0.0f;
        if ((r = time_s(e, v, -1, 1, 10, &best)) < 0)
            break;
        uint32_t keep = knob[l];
        for (size_t i = 0; r == 0 && i < n_cand; i++) {
            if (cand[i] == keep)
                continue;
            float ms = 0.0f;
            knob[l] = cand[i];
            r = time_s(e, v, -1, 1, 10, &ms);
            if (r == 0 && ms < best) {
                best = ms;
                keep = cand[i];
            }
        }
        knob[l] = keep;
    }
    return r;
}

/* Stages the sparse variant's kernels do not take (the GEMM path runs
 * them): skip[l] = 1.  Negative errno on a CUDA failure. */
static int sparse_skips(nc_gpu_neocog *e, uint8_t *skip)
{
    for (uint32_t l = 0; l < e->n_stages; l++) {
        const int fit = neocog_eng_s_fits(e, NC_GPU_NEOCOG_SPARSE, l);
        if (fit < 0)
            return fit;
        skip[l] = fit == 0;
    }
    return 0;
}

/* The sparse kernel's splits at batch 1 (1 .. 32 runs), from the default
 * for this device. */
static int tune_split(nc_gpu_neocog *e)
{
    static const uint32_t cand[] = { 1, 2, 3, 4, 6, 8, 12, 16, 24, 32 };
    uint8_t skip[NC_NEOCOG_MAX_STAGES];
    int r = sparse_skips(e, skip);
    for (uint32_t l = 0; l < e->n_stages; l++)
        e->split[l] = nc_gpu_neocog_s_default_splits(&e->s[l],
                                                     e->block[NC_GPU_NEOCOG_SPARSE][l], e->n_sm);
    return r < 0 ? r : descend_batch1(e, NC_GPU_NEOCOG_SPARSE, e->split, e->n_stages, cand,
                                      sizeof cand / sizeof cand[0], skip);
}

/* The S kernel by teams of warps at batch 1: the sparse kernel (team 0,
 * with the splits tune_split kept) or teams of 1 .. 16, from the default
 * teams. */
static int tune_warp(nc_gpu_neocog *e)
{
    static const uint32_t cand[] = { 0, 1, 2, 4, 8, 16 };
    uint8_t skip[NC_NEOCOG_MAX_STAGES];
    int r = sparse_skips(e, skip);
    for (uint32_t l = 0; l < e->n_stages; l++)
        e->s_warp[l] = nc_gpu_neocog_s_warp_default(&e->s[l], 1, e->n_sm);
    return r < 0 ? r : descend_batch1(e, NC_GPU_NEOCOG_SPARSE, e->s_warp, e->n_stages, cand,
                                      sizeof cand / sizeof cand[0], skip);
}

/* The warp S kernel's planes a block at batch 1 (128 down to 8), then its
 * teams once more around what that kept: fewer planes a block shorten each
 * lane's chain of weight loads and add blocks, so the best team moves.
 * Stages on the sparse kernel (team 0) keep 128. */
static int tune_planes(nc_gpu_neocog *e)
{
    static const uint32_t cand[] = { 0, 64, 32, 16, 8 };
    static const uint32_t teams[] = { 1, 2, 4, 8, 16 };
    uint8_t skip[NC_NEOCOG_MAX_STAGES];
    for (uint32_t l = 0; l < e->n_stages; l++) {
        skip[l] = e->s_warp[l] == 0;
        e->s_planes[l] = 0;
    }
    int r = descend_batch1(e, NC_GPU_NEOCOG_SPARSE, e->s_planes, e->n_stages, cand,
                           sizeof cand / sizeof cand[0], skip);
    return r < 0 ? r : descend_batch1(e, NC_GPU_NEOCOG_SPARSE, e->s_warp, e->n_stages, teams,
                                      sizeof teams / sizeof teams[0], skip);
}

/* The small-batch C kernels at batch 1 under variant v, from the default
 * NC_GPU_NEOCOG_C_SMALL on every layer. */
static int tune_small_c(nc_gpu_neocog *e, int v)
{
    uint32_t cand[NC_GPU_NEOCOG_C_N_KINDS];
    for (uint32_t k = 0; k < NC_GPU_NEOCOG_C_N_KINDS; k++)
        cand[k] = k;
    for (uint32_t l = 0; l + 1 < e->n_stages; l++)
        e->c_small_kind[l] = NC_GPU_NEOCOG_C_SMALL;
    return descend_batch1(e, v, e->c_small_kind, e->n_stages - 1, cand,
                          NC_GPU_NEOCOG_C_N_KINDS, NULL);
}

/* Stage l at n characters under the GEMM variant as tuned so far (GEMM
 * path or sparse kernel, which took `path` ms; 0: not timed yet), against
 * the kernel by teams of warps with each of a few teams and planes a
 * block; the fastest stays (s_warp_big). */
static int tune_warp_big(nc_gpu_neocog *e, uint32_t l, uint32_t n, float path, float *ret_best)
{
    static const uint32_t teams[] = { 1, 2 }, planes[] = { 64, 128 };
    const int layer = 1 + 2 * (int)l;
    float best = path;
    e->s_warp_big[l] = 0;
    e->s_planes_big[l] = 0;
    int r = path > 0.0f ? 0 : time_s(e, NC_GPU_NEOCOG_GEMM, layer, n, 3, &best);
    uint32_t bt = 0, bp = 0;
    for (size_t ti = 0; r == 0 && ti < sizeof teams / sizeof teams[0]; ti++)
        for (size_t pi = 0; r == 0 && pi < sizeof planes / sizeof planes[0]; pi++) {
            float ms = 0.0f;
            e->s_warp_big[l] = teams[ti];
            e->s_planes_big[l] = planes[pi];
            r = time_s(e, NC_GPU_NEOCOG_GEMM, layer, n, 3, &ms);
            if (r == -EINVAL || r == -E2BIG) {  /* refused before it queued anything */
                r = 0;
                continue;
            }
            if (r == 0 && ms < best) {
                best = ms;
                bt = teams[ti];
                bp = planes[pi];
            }
        }
    e->s_warp_big[l] = bt;
    e->s_planes_big[l] = bp;
    *ret_best = best;
    return r;
}

static const uint32_t rows_planes[] = { 32, 64, 96, 128 };

/* Stage l at n characters under the GEMM variant as tuned so far (the
 * fastest of the GEMM path, the sparse kernel and the warp kernel took
 * `best` ms), against the list kernel with 1, 2 or 4 float4 a lane, 32,
 * 64 or 128 planes a block and either order of a block's warps, and the
 * row kernel with 8 or 16 warps and 32, 64, 96 or 128 planes a block, its
 * weights in shared memory or through L1;
 * the fastest stays (s_list_big, and the warp kernel off where it wins).
 * Lists that lose are freed. */
static int tune_list_big(nc_gpu_neocog *e, uint32_t l, uint32_t n, float best)
{
    static const uint32_t fs[] = { 1, 2, 4 }, planes[] = { 32, 64, 128 },
                          warps[] = { 8, 16 };
    const int layer = 1 + 2 * (int)l;
    e->s_list_big[l] = 0;
    int r = neocog_eng_lists_alloc(e, l);
    if (r == -ENOMEM || r == -EIO)      /* no room for the lists: keep what we have */
        return 0;
    uint32_t bf = 0, bp = 0, bo = 0;
    /* every candidate pays its list build (the S-layer does not mark the
     * lists it builds as ready), whether or not the C-layer before would
     * write them: the same cost for each, and none of it left out against
     * the GEMM path */
    e->ln[0].l_ready_mul[l] = 0;
    for (uint32_t order = 0; r == 0 && order <= NC_GPU_NEOCOG_LIST_ROWS_L1; order++) {
        const int rows = order >= NC_GPU_NEOCOG_LIST_ROWS;
        const size_t n_p = rows ? 4 : 3;
        for (size_t fi = 0; r == 0 && fi < (rows ? 2u : 3u); fi++)
            for (size_t pi = 0; r == 0 && pi < n_p; pi++) {
                const uint32_t f = rows ? warps[fi] : fs[fi],
                               p = rows ? rows_planes[pi] : planes[pi];
                if (!neocog_eng_list_ok(e, l, f, p, order))
                    continue;
                if (rows && (r = neocog_eng_rows_weights_for(e, l, p)) < 0) {
                    r = r == -ENOMEM ? 0 : r;   /* no room: not this one */
                    continue;
                }
                float ms = 0.0f;
                e->s_list_big[l] = f;
                e->s_list_planes_big[l] = p;
                e->s_list_order[l] = order;
                r = time_s(e, NC_GPU_NEOCOG_GEMM, layer, n, 3, &ms);
                if (r == 0 && ms < best) {
                    best = ms;
                    bf = f;
                    bp = p;
                    bo = order;
                }
            }
    }
    e->s_list_big[l] = bf;
    e->s_list_planes_big[l] = bp;
    e->s_list_order[l] = bo;
    if (r == 0 && bf && bo >= NC_GPU_NEOCOG_LIST_ROWS)
        r = neocog_eng_rows_weights_for(e, l, bp);
    else
        neocog_eng_rows_weights_free(e, l);
    if (bf)
        e->s_warp_big[l] = 0;
    else
        neocog_eng_lists_free(e, l);
    return r;
}

/* GEMM: per stage, the GEMM path or the sparse kernel, whichever is faster
 * on n characters, then the kernel by teams of warps against that; then
 * AUTO's threshold: the smallest batch of 1, 2, 4 ..
 * n from which on the whole net under GEMM beats the sparse one (never, if
 * it does not at n). */
static int tune_gemm(nc_gpu_neocog *e, uint32_t n)
{
    int r = tune_c(e, NC_GPU_NEOCOG_GEMM, n);
    if (r == 0)
        r = neocog_eng_run_net(e, &e->ln[0], NC_GPU_NEOCOG_SPARSE, n, e->d_in, e->d_scores,
                               e->d_labels, e->run);
    /* the time of each stage's pick (0: not timed, the sparse kernel
     * cannot take it); the GEMM variant's own kernels, not the warp
     * kernel an earlier tuning may have left in their place */
    float path[NC_NEOCOG_MAX_STAGES] = { 0.0f };
    for (uint32_t l = 0; l < e->n_stages; l++)
        e->s_warp_big[l] = e->s_list_big[l] = 0;
    for (uint32_t l = 0; r == 0 && l < e->n_stages; l++) {
        float mg = 0.0f, ms = 0.0f;
        e->use_gemm[l] = 1;
        const int fit = neocog_eng_s_fits(e, NC_GPU_NEOCOG_SPARSE, l);
        if (fit <= 0) {         /* the sparse kernel cannot take it: GEMM */
            r = fit < 0 ? fit : 0;
            continue;
        }
        r = time_s(e, NC_GPU_NEOCOG_GEMM, 1 + 2 * (int)l, n, 3, &mg);
        if (r == 0)
            r = time_s(e, NC_GPU_NEOCOG_SPARSE, 1 + 2 * (int)l, n, 3, &ms);
        if (r == 0) {
            e->use_gemm[l] = mg <= ms;
            path[l] = mg <= ms ? mg : ms;
        }
    }
    for (uint32_t l = 0; r == 0 && l < e->n_stages; l++) {
        float best = 0.0f;
        r = tune_warp_big(e, l, n, path[l], &best);
        if (r == 0)
            r = tune_list_big(e, l, n, best);
    }
    uint32_t from = 0xffffffffu;
    for (uint32_t m = n; r == 0 && m >= 1; m = m == n && (m & (m - 1)) ? 1u << (31 - __builtin_clz(m)) : m / 2) {
        float mg = 0.0f, ms = 0.0f;
        r = time_s(e, NC_GPU_NEOCOG_GEMM, -1, m, 3, &mg);
        if (r == 0)
            r = time_s(e, NC_GPU_NEOCOG_SPARSE, -1, m, 3, &ms);
        if (r < 0 || mg > ms)
            break;
        from = m;
    }
    e->auto_min = from;
    /* batch 1, what a single request runs: its C kernels apart, since the
     * best kernel for one character is not the best for n */
    if (r == 0 && n >= e->c_min && e->c_min > 1) {
        const int v1 = 1 >= e->auto_min ? NC_GPU_NEOCOG_GEMM : NC_GPU_NEOCOG_SPARSE;
        /* a warm-up of the net at batch 1 first, so that the descent's
         * first timings are not taken at lower clocks than its last (a
         * tuned engine once kept teams of 4 / 4 on US2 / US3 that made the
         * net 49.7 us against 42.9) */
        for (int i = 0; r == 0 && i < 200; i++)
            r = neocog_eng_run_net(e, &e->ln[0], v1, 1, e->d_in, e->d_scores, e->d_labels, e->run);
        if (v1 == NC_GPU_NEOCOG_SPARSE) {
            /* the splits with the sparse kernel on every stage, then the
             * warp teams (or that kernel) against them, then their planes
             * a block, all with UG and US1 apart; then UG and US1 as one
             * kernel against that */
            for (uint32_t l = 0; l < e->n_stages; l++) {
                e->s_warp[l] = 0;
                e->s_planes[l] = 0;
            }
            e->gs1 = 0;
            r = tune_split(e);
            if (r == 0)
                r = tune_warp(e);
            if (r == 0)
                r = tune_planes(e);
            if (r == 0 && e->gs1_ok) {
                static const uint32_t fuse[] = { 0, 1 };
                r = descend_batch1(e, v1, &e->gs1, 1, fuse, 2, NULL);
            }
        }
        if (r == 0)
            r = tune_small_c(e, v1);
    }
    neocog_eng_drop_graphs(e);
    return r;
}

static int tune(nc_gpu_neocog *e, int variant, uint32_t n)
{
    static const uint32_t cand[] = { 1, 2, 3, 4, 6, 8, 16 };
    if (variant == NC_GPU_NEOCOG_GEMM || variant == NC_GPU_NEOCOG_AUTO)
        return tune_gemm(e, n);
    int r = neocog_eng_run_net(e, &e->ln[0], variant, n, e->d_in, e->d_scores, e->d_labels, e->run);
    for (uint32_t l = 0; r == 0 && l < e->n_stages; l++) {
        uint32_t best_p = e->block[variant][l];
        float best = 1e30f;
        for (size_t i = 0; r == 0 && i < sizeof cand / sizeof cand[0]; i++) {
            if (cand[i] > (uint32_t)e->s[l].g.n_out)
                continue;
            /* only blocks the kernel takes (threads, shared memory): a
             * refused one would time the GEMM path run in its place */
            const int c = nc_gpu_neocog_s_check(&e->s[l], e->chunk_cap, variant, cand[i]);
            if (c == -E2BIG || c == -EINVAL)
                continue;
            if ((r = c) < 0)
                break;
            e->block[variant][l] = cand[i];
            e->s_fit[variant][l] = 1;
            float ms = 0.0f;
            r = time_s(e, variant, 1 + 2 * (int)l, n, 3, &ms);
            if (r == 0 && ms < best) {
                best = ms;
                best_p = cand[i];
            }
        }
        e->block[variant][l] = best_p;
        e->s_fit[variant][l] = 0;
    }
    neocog_eng_drop_graphs(e);
    return r;
}

extern "C" int nc_gpu_neocog_tune(nc_gpu_neocog *e, int variant, uint32_t n)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (variant < 0 || variant > NC_GPU_NEOCOG_AUTO || n < 1 || n > e->chunk)
        return -EINVAL;
    return fail(e, tune(e, variant, n));
}

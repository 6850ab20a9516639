/* gpu/neocog/neocog_engine_sched.cu — which kernel runs each layer of the
 * resident neocognitron, and the network as a string of layers.
 *
 * Layer: gpu.  Variants: the S-layer kernel of every stage follows
 * e->variant; AUTO (the default) runs the sparse kernels below e->auto_min
 * characters and the GEMM path (gpu/neocog/neocog_s_gemm.cuh) from there on.
 * Under GEMM a stage keeps the sparse kernel where the tuner found it
 * faster (use_gemm[l] = 0), or runs the warp-team or list kernel where the
 * tuner set one; below NC_GPU_NEOCOG_S_WARP_BATCH the sparse variant runs
 * the warp-team kernel where s_warp[l] says so.
 *
 * Limits: a stage whose S-layer the chosen kernel cannot take (too many
 * planes for its block, too much shared memory: nc_gpu_neocog_s_check says
 * -E2BIG or -EINVAL) runs the GEMM path instead, which takes any plane count
 * up to core's cap; a C-layer the chosen kernel refuses runs the staged C
 * kernel (the direct one where the staged kernel refuses).  So every net core can build runs, whatever variant is set. */
#include "neocog_engine_impl.h"

#include <errno.h>

/* The S-layer variant a batch of n characters runs with. */
int neocog_eng_eff_variant(const nc_gpu_neocog *e, uint32_t n)
{
    if (e->variant != NC_GPU_NEOCOG_AUTO)
        return e->variant;
    return n >= e->auto_min ? NC_GPU_NEOCOG_GEMM : NC_GPU_NEOCOG_SPARSE;
}

/* 1 when variant v's kernel takes stage l's S-layer at its block (any batch
 * up to the chunk), 0 when it does not (the caller runs the GEMM path), or a
 * negative errno (a CUDA failure). */
int neocog_eng_s_fits(nc_gpu_neocog *e, int v, uint32_t l)
{
    if (v == NC_GPU_NEOCOG_GEMM)
        return 1;
    if (!e->s_fit[v][l]) {
        const int r = nc_gpu_neocog_s_check(&e->s[l], e->chunk_cap, v, e->block[v][l]);
        if (r < 0 && r != -E2BIG && r != -EINVAL)
            return r;
        e->s_fit[v][l] = r == 0 ? 1 : 2;
    }
    return e->s_fit[v][l] == 1;
}

/* The list kernel's weight offset of one input plane: its rows of a are
 * n_live rows of ks(k_out) / 4 float4 apart; the row kernel takes the
 * plane itself */
static uint32_t list_mul(const nc_gpu_neocog_s_args *s, uint32_t order)
{
    return order >= NC_GPU_NEOCOG_LIST_ROWS
               ? 1u : (uint32_t)s->g.n_live * (nc_neocog_kstride(s->k_out) / 4u);
}

/* One layer over n characters of the chunk buffers; input images at in,
 * answers to scores/labels (last layer). */
int neocog_eng_run_layer(nc_gpu_neocog *e, nc_lane *x, int v, int layer, uint32_t n,
                         const float *in,
                         float *scores, int32_t *labels, cudaStream_t st)
{
    if (layer == NC_NEOCOG_L_UG)
        return nc_gpu_neocog_g_forward(&e->g, in, x->act[0], x->occ[0], n, st);
    const uint32_t l = (uint32_t)(layer - 1) / 2;
    if ((layer - 1) % 2 == 0) {
        const int last = l + 1 == e->n_stages;
        if (v == NC_GPU_NEOCOG_GEMM && e->s_list_big[l]) {
            const nc_gpu_neocog_s_args *s = &e->s[l];
            const uint32_t ni = e->layer_size[layer - 1];
            const uint32_t order = e->s_list_order[l];
            const uint32_t mul = list_mul(s, order);
            int r = 0;
            if (x->l_ready_mul[l] != mul || x->l_ready_n[l] < n)
                r = nc_gpu_neocog_list_build(x->act[layer - 1], x->occ[layer - 1],
                                             (size_t)ni * ni, s->k_in,
                                             e->layer_stride[layer - 1], mul, x->l_cnt[l],
                                             x->l_q[l], x->l_ent[l], n, st);
            if (r == 0 && order >= NC_GPU_NEOCOG_LIST_ROWS)
                r = nc_gpu_neocog_s_forward_rows(s, e->l_wpad[l], x->l_cnt[l], x->l_q[l],
                                                 x->l_ent[l], x->act[layer],
                                                 last ? NULL : x->occ[layer], n,
                                                 e->s_list_big[l], e->l_wpad_planes[l],
                                                 order == NC_GPU_NEOCOG_LIST_ROWS, last, st);
            else if (r == 0)
                r = nc_gpu_neocog_s_forward_list(s, x->l_cnt[l], x->l_q[l], x->l_ent[l],
                                                 x->act[layer], last ? NULL : x->occ[layer], n,
                                                 e->s_list_big[l],
                                                 e->s_list_planes_big[l] ? e->s_list_planes_big[l]
                                                                         : 128u,
                                                 order, st);
            return r;
        }
        if (v == NC_GPU_NEOCOG_GEMM && e->s_warp_big[l])
            return nc_gpu_neocog_s_forward_warp(&e->s[l], x->act[layer - 1],
                                                x->occ[layer - 1], x->act[layer],
                                                last ? NULL : x->occ[layer], n,
                                                e->s_warp_big[l], e->s_planes_big[l], st);
        if (v == NC_GPU_NEOCOG_GEMM && !e->use_gemm[l])
            v = NC_GPU_NEOCOG_SPARSE;
        const int fit = neocog_eng_s_fits(e, v, l);
        if (fit < 0)
            return fit;
        if (v == NC_GPU_NEOCOG_GEMM || !fit)
            return nc_gpu_neocog_gemm_forward_fill(x->gemm[l], x->act[layer - 1],
                                                   x->occ[layer - 1], x->act[layer],
                                                   last ? NULL : x->occ[layer], n, last, st);
        if (v == NC_GPU_NEOCOG_SPARSE && n <= NC_GPU_NEOCOG_S_WARP_BATCH && e->s_warp[l]) {
            uint32_t team = e->s_warp[l];
            while (team > 1 && team * n > e->s_warp[l])
                team /= 2;
            return nc_gpu_neocog_s_forward_warp(&e->s[l], x->act[layer - 1],
                                                x->occ[layer - 1], x->act[layer],
                                                last ? NULL : x->occ[layer], n, team,
                                                e->s_planes[l], st);
        }
        const uint32_t runs = v == NC_GPU_NEOCOG_SPARSE ? e->split[l] / n : 1;
        if (runs >= 2)
            return nc_gpu_neocog_s_forward_split(&e->s[l], x->act[layer - 1],
                                                 x->occ[layer - 1], x->act[layer],
                                                 last ? NULL : x->occ[layer], n,
                                                 e->block[v][l], runs, e->d_split_count,
                                                 e->n_split_count, e->d_split_part,
                                                 e->n_split_part, st);
        return nc_gpu_neocog_s_forward(&e->s[l], x->act[layer - 1], x->occ[layer - 1],
                                       x->act[layer], last ? NULL : x->occ[layer], n,
                                       v, e->block[v][l], st);
    }
    if (l + 1 < e->n_stages) {
        /* a kernel refuses a layer before it queues anything (-EINVAL,
         * -E2BIG: the staged one past 1024 lanes or its shared memory, the
         * tile one when one window's planes overflow shared memory); the
         * staged kernel then runs it, or the direct one in its place */
        const int kind = (int)(n >= e->c_min ? e->c_kind[l] : e->c_small_kind[l]);
        /* the next stage's lists with the output, where its S-layer runs
         * from lists and this kernel writes them (DIRECT, SCATTER) */
        const uint32_t nl = l + 1;
        x->l_ready_mul[nl] = 0;
        if (v == NC_GPU_NEOCOG_GEMM && e->s_list_big[nl] &&
            (kind == NC_GPU_NEOCOG_C_DIRECT || kind == NC_GPU_NEOCOG_C_SCATTER)) {
            const nc_gpu_neocog_lists ls = { x->l_cnt[nl], x->l_q[nl], x->l_ent[nl],
                                             list_mul(&e->s[nl], e->s_list_order[nl]) };
            int r = nc_gpu_neocog_c_forward_lists(&e->c[l], kind, x->act[layer - 1],
                                                  x->occ[layer - 1], x->act[layer],
                                                  x->occ[layer], &ls, n, 0, st);
            if (r == 0) {
                x->l_ready_mul[nl] = ls.mul;
                x->l_ready_n[nl] = n;
            }
            if (r != -EINVAL && r != -E2BIG)
                return r;
        }
        int r = nc_gpu_neocog_c_forward_kind(&e->c[l], kind, x->act[layer - 1],
                                             x->occ[layer - 1], x->act[layer],
                                             x->occ[layer], n, 0, st);
        if (r == -EINVAL || r == -E2BIG)
            r = nc_gpu_neocog_c_forward_kind(&e->c[l],
                                             kind == NC_GPU_NEOCOG_C_STAGED
                                                 ? NC_GPU_NEOCOG_C_DIRECT
                                                 : NC_GPU_NEOCOG_C_STAGED,
                                             x->act[layer - 1], x->occ[layer - 1],
                                             x->act[layer], x->occ[layer], n, 0, st);
        return r;
    }
    if (e->iv)
        return nc_gpu_neocog_iv_classify(e->iv, x->act[layer - 2], x->act[layer - 1], scores,
                                         labels, n, st);
    const uint32_t ns = e->layer_size[layer - 1];
    return nc_gpu_neocog_class_forward(x->act[layer - 1], ns * ns, e->k[l],
                                       e->d_plane_label, e->n_classes, scores, labels, n,
                                       st);
}

/* UG and US1 as one kernel on n images at in, into the layers' buffers as
 * run_layer would leave them */
int neocog_eng_run_gs1(nc_gpu_neocog *e, nc_lane *x, uint32_t n, const float *in,
                       cudaStream_t st)
{
    return nc_gpu_neocog_gs1_forward(&e->g, &e->s[0], in, x->act[0], x->occ[0], x->act[1],
                                     e->n_stages > 1 ? x->occ[1] : NULL, n, st);
}

/* The whole network on n (<= chunk) images at in. */
int neocog_eng_run_net(nc_gpu_neocog *e, nc_lane *x, int v, uint32_t n, const float *in,
                       float *scores,
                       int32_t *labels, cudaStream_t st)
{
    int layer = 0;
    if (e->gs1 && e->gs1_ok && v == NC_GPU_NEOCOG_SPARSE) {
        int r = neocog_eng_run_gs1(e, x, n, in, st);
        if (r < 0)
            return r;
        layer = 2;
    }
    for (; layer <= 2 * (int)e->n_stages; layer++) {
        int r = neocog_eng_run_layer(e, x, v, layer, n, in, scores, labels, st);
        if (r < 0)
            return r;
    }
    return 0;
}

/* 1 when the list kernel takes f float4 a lane and `planes` planes a
 * block (0: 128) on stage l's planes in that order of its blocks' warps,
 * or (orders NC_GPU_NEOCOG_LIST_ROWS and _ROWS_L1) the row kernel f warps
 * and `planes` planes (0: 32) a block */
int neocog_eng_list_ok(const nc_gpu_neocog *e, uint32_t l, uint32_t f, uint32_t planes,
                       uint32_t order)
{
    if (order == NC_GPU_NEOCOG_LIST_ROWS || order == NC_GPU_NEOCOG_LIST_ROWS_L1)
        return (f == 4 || f == 8 || f == 16) &&
               nc_gpu_neocog_s_rows_check(&e->s[l], planes ? planes : 32u) == 0;
    return order <= NC_GPU_NEOCOG_LIST_CHARS &&
           nc_gpu_neocog_s_list_check(&e->s[l], f, planes ? planes : 128u) == 0;
}

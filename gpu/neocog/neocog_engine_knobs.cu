/* gpu/neocog/neocog_engine_knobs.cu — the resident neocognitron's settings
 * for benchmarks, tests and the tuner's results (neocog_engine_dev.h): the
 * S-layer variant and its blocks, chunk and lanes, AUTO's threshold, the C
 * kernels, the sparse kernel's splits, the warp-team and list kernels and
 * UG+US1 fusion.  Each setter checks its value, and drops the captured
 * graphs where what a forward runs changes.  Layer: gpu. */
#include "neocog_engine_impl.h"

#include <errno.h>

extern "C" int nc_gpu_neocog_set_variant(nc_gpu_neocog *e, int variant)
{
    if (!e || variant < 0 || variant > NC_GPU_NEOCOG_AUTO)
        return -EINVAL;
    if (e->variant != variant)
        neocog_eng_drop_graphs(e);
    e->variant = variant;
    return 0;
}

extern "C" int nc_gpu_neocog_set_block(nc_gpu_neocog *e, int variant, uint32_t l,
                                       uint32_t per_block)
{
    if (!e || variant < 0 || variant >= NC_GPU_NEOCOG_N_VARIANTS || l >= e->n_stages ||
        per_block > 64)
        return -EINVAL;
    e->block[variant][l] = per_block ? per_block
                                     : nc_gpu_neocog_s_default_block(variant, e->k[l]);
    e->s_fit[variant][l] = 0;
    neocog_eng_drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_block(const nc_gpu_neocog *e, int variant, uint32_t l)
{
    if (!e || variant < 0 || variant >= NC_GPU_NEOCOG_N_VARIANTS || l >= e->n_stages)
        return 0;
    return e->block[variant][l];
}

extern "C" int nc_gpu_neocog_set_chunk(nc_gpu_neocog *e, uint32_t chunk)
{
    if (!e || chunk < 1 || chunk > e->chunk_cap)
        return -EINVAL;
    e->chunk = chunk;
    neocog_eng_drop_graphs(e);
    return 0;
}

extern "C" int nc_gpu_neocog_set_lanes(nc_gpu_neocog *e, uint32_t lanes)
{
    int r = enter(e);
    if (r < 0)
        return r;
    if (lanes < 1 || lanes > NC_GPU_NEOCOG_MAX_LANES)
        return -EINVAL;
    e->lanes = lanes;
    if (lanes < 2)
        neocog_eng_lane_free(&e->ln[1]);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_lanes(const nc_gpu_neocog *e)
{
    return e ? e->lanes : 0;
}

extern "C" int nc_gpu_neocog_stage_s_variant(nc_gpu_neocog *e, int variant, uint32_t l)
{
    if (!e || variant < 0 || variant >= NC_GPU_NEOCOG_N_VARIANTS || l >= e->n_stages)
        return -EINVAL;
    int r = enter(e);
    if (r < 0)
        return r;
    const int fit = neocog_eng_s_fits(e, variant, l);
    return fit < 0 ? fail(e, fit) : fit ? variant : NC_GPU_NEOCOG_GEMM;
}

extern "C" int nc_gpu_neocog_set_auto(nc_gpu_neocog *e, uint32_t from)
{
    if (!e)
        return -EINVAL;
    e->auto_min = from;
    neocog_eng_drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_auto(const nc_gpu_neocog *e)
{
    return e ? e->auto_min : 0;
}

extern "C" int nc_gpu_neocog_stage_uses_gemm(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? e->use_gemm[l] : 0;
}

extern "C" int nc_gpu_neocog_set_c_kind(nc_gpu_neocog *e, uint32_t l, int kind)
{
    if (!e || l + 1 >= e->n_stages || kind < 0 || kind >= NC_GPU_NEOCOG_C_N_KINDS)
        return -EINVAL;
    e->c_kind[l] = (uint32_t)kind;
    neocog_eng_drop_graphs(e);
    return 0;
}

extern "C" int nc_gpu_neocog_set_c_min(nc_gpu_neocog *e, uint32_t from)
{
    if (!e)
        return -EINVAL;
    e->c_min = from;
    neocog_eng_drop_graphs(e);
    return 0;
}

extern "C" int nc_gpu_neocog_get_c_kind(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l + 1 < e->n_stages ? (int)e->c_kind[l] : -EINVAL;
}

extern "C" int nc_gpu_neocog_set_c_small_kind(nc_gpu_neocog *e, uint32_t l, int kind)
{
    if (!e || l + 1 >= e->n_stages || kind < 0 || kind >= NC_GPU_NEOCOG_C_N_KINDS)
        return -EINVAL;
    e->c_small_kind[l] = (uint32_t)kind;
    neocog_eng_drop_graphs(e);
    return 0;
}

extern "C" int nc_gpu_neocog_get_c_small_kind(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l + 1 < e->n_stages ? (int)e->c_small_kind[l] : -EINVAL;
}

extern "C" int nc_gpu_neocog_set_split(nc_gpu_neocog *e, uint32_t l, uint32_t splits)
{
    if (!e || l >= e->n_stages || splits > NC_GPU_NEOCOG_S_MAX_SPLITS)
        return -EINVAL;
    e->split[l] = splits ? splits
                         : nc_gpu_neocog_s_default_splits(&e->s[l],
                                                          e->block[NC_GPU_NEOCOG_SPARSE][l],
                                                          e->n_sm);
    neocog_eng_drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_split(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? e->split[l] : 0;
}

/* a warp kernel's team (0: none) and planes a block (0: its default), as
 * the setters below take them */
static int s_team_ok(uint32_t team)
{
    return team <= NC_GPU_NEOCOG_S_WARP_MAX && (team & (team - 1)) == 0;
}

static int s_planes_ok(uint32_t planes)
{
    return planes <= NC_GPU_NEOCOG_S_WARP_PLANES &&
           (!planes || planes >= NC_GPU_NEOCOG_S_WARP_PLANES_MIN) && (planes & (planes - 1)) == 0;
}

extern "C" int nc_gpu_neocog_set_s_warp(nc_gpu_neocog *e, uint32_t l, uint32_t team)
{
    if (!e || l >= e->n_stages || !s_team_ok(team))
        return -EINVAL;
    e->s_warp[l] = team;
    neocog_eng_drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_warp(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? e->s_warp[l] : 0;
}

extern "C" int nc_gpu_neocog_set_s_planes(nc_gpu_neocog *e, uint32_t l, uint32_t planes)
{
    if (!e || l >= e->n_stages || !s_planes_ok(planes))
        return -EINVAL;
    e->s_planes[l] = planes;
    neocog_eng_drop_graphs(e);
    return 0;
}

extern "C" int nc_gpu_neocog_set_s_warp_big(nc_gpu_neocog *e, uint32_t l, uint32_t team,
                                            uint32_t planes)
{
    if (!e || l >= e->n_stages || !s_team_ok(team) || !s_planes_ok(planes))
        return -EINVAL;
    e->s_warp_big[l] = team;
    e->s_planes_big[l] = planes;
    neocog_eng_drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_warp_big(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? e->s_warp_big[l] : 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_planes_big(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? e->s_planes_big[l] : 0;
}

extern "C" int nc_gpu_neocog_set_s_list_big(nc_gpu_neocog *e, uint32_t l, uint32_t f,
                                            uint32_t planes, uint32_t order)
{
    if (!e || l >= e->n_stages || (f && !neocog_eng_list_ok(e, l, f, planes, order)) ||
        order > NC_GPU_NEOCOG_LIST_ROWS_L1)
        return -EINVAL;
    if (f) {
        int r = enter(e);
        if (r == 0)
            r = neocog_eng_lists_alloc(e, l);
        if (r == 0 && order >= NC_GPU_NEOCOG_LIST_ROWS)
            r = neocog_eng_rows_weights_for(e, l, planes ? planes : 32u);
        if (r < 0)
            return r;
        if (order < NC_GPU_NEOCOG_LIST_ROWS)
            neocog_eng_rows_weights_free(e, l);
    } else {
        if (e->run)
            cudaStreamSynchronize(e->run);      /* no kernel may still read them */
        neocog_eng_lists_free(e, l);
    }
    e->s_list_big[l] = f;
    e->s_list_planes_big[l] = order >= NC_GPU_NEOCOG_LIST_ROWS && f && !planes ? 32u : planes;
    e->s_list_order[l] = order;
    neocog_eng_drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_list_big(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? e->s_list_big[l] : 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_list_order(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages && e->s_list_big[l] ? e->s_list_order[l] : 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_list_planes_big(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages && e->s_list_big[l]
               ? (e->s_list_planes_big[l] ? e->s_list_planes_big[l] : 128u) : 0;
}

extern "C" int nc_gpu_neocog_set_gs1(nc_gpu_neocog *e, uint32_t on)
{
    if (!e || on > 1 || (on && !e->gs1_ok))
        return -EINVAL;
    e->gs1 = on;
    neocog_eng_drop_graphs(e);
    return 0;
}

extern "C" uint32_t nc_gpu_neocog_get_gs1(const nc_gpu_neocog *e)
{
    return e && e->gs1_ok ? e->gs1 : 0;
}

extern "C" uint32_t nc_gpu_neocog_get_s_planes(const nc_gpu_neocog *e, uint32_t l)
{
    return e && l < e->n_stages ? (e->s_planes[l] ? e->s_planes[l] : NC_GPU_NEOCOG_S_WARP_PLANES)
                                : 0;
}

/* core/neocog_file.c — neocognitron model files (core/modelfile.h format).
 *
 * Layer: core, byte buffers only.  Sections (tags are four ASCII bytes):
 *   NSTG u32  n_stages, in_size, g_size, g_win, g_pad, n_classes, then per
 *             stage s_size, s_win, s_pad, s_grid, k_max, c_kind, c_size,
 *             c_win, c_pad, c_step, c_grid                 (6 + 11 L values)
 *   NSTF f32  g_radius_o, g_radius, g_cut, then per stage s_radius, theta,
 *             gamma, c_radius_o, c_radius                   (3 + 5 L values)
 *   NPLN u32  planes per stage                              (L)
 *   NLBL u32  class of each last-stage plane                (K_L)
 *   W1.. f32  a of stage l as [k][kappa][t], t over live taps (K K_in n_live)
 *   B1.. f32  b of stage l                                  (K)
 *   INFO etc. written by nc_mf_put_info
 * The reader trusts nothing: the container's CRC catches accidents, and every
 * section is checked here against the stage table and the others, so a file
 * that was written inconsistently still fails with -EBADMSG. */
#include "neocog_impl.h"

#include <string.h>

#define TAG_STG NC_MF_TAG('N', 'S', 'T', 'G')
#define TAG_STF NC_MF_TAG('N', 'S', 'T', 'F')
#define TAG_PLN NC_MF_TAG('N', 'P', 'L', 'N')
#define TAG_LBL NC_MF_TAG('N', 'L', 'B', 'L')
#define TAG_W(l) NC_MF_TAG('W', '1' + (l), ' ', ' ')
#define TAG_B(l) NC_MF_TAG('B', '1' + (l), ' ', ' ')

#define STG_HEAD 6u
#define STG_PER 11u
#define STF_HEAD 3u
#define STF_PER 5u

int nc_neocog_write(const nc_neocog *net, nc_mf_writer *w)
{
    if (!net || !w)
        return -EINVAL;
    const nc_neocog_arch *A = &net->arch;
    const uint32_t L = A->n_stages;
    for (uint32_t l = 0; l < L; l++)
        if (net->n_planes[l] < 1)
            return -EINVAL;
    uint32_t stg[STG_HEAD + STG_PER * NC_NEOCOG_MAX_STAGES];
    float stf[STF_HEAD + STF_PER * NC_NEOCOG_MAX_STAGES];
    uint32_t *u = stg;
    float *f = stf;
    *u++ = L; *u++ = A->in_size; *u++ = A->g_size; *u++ = A->g_win;
    *u++ = A->g_pad; *u++ = A->n_classes;
    *f++ = A->g_radius_o; *f++ = A->g_radius; *f++ = A->g_cut;
    for (uint32_t l = 0; l < L; l++) {
        const nc_neocog_stage *s = &A->stage[l];
        *u++ = s->s_size; *u++ = s->s_win; *u++ = s->s_pad; *u++ = s->s_grid;
        *u++ = s->k_max; *u++ = s->c_kind; *u++ = s->c_size; *u++ = s->c_win;
        *u++ = s->c_pad; *u++ = s->c_step; *u++ = s->c_grid;
        *f++ = s->s_radius; *f++ = s->theta; *f++ = s->gamma;
        *f++ = s->c_radius_o; *f++ = s->c_radius;
    }
    int r = nc_mf_put_u32(w, TAG_STG, stg, (size_t)(u - stg));
    if (r == 0) r = nc_mf_put_f32(w, TAG_STF, stf, (size_t)(f - stf));
    if (r == 0) r = nc_mf_put_u32(w, TAG_PLN, net->n_planes, L);
    if (r == 0) r = nc_mf_put_u32(w, TAG_LBL, net->labels, net->n_planes[L - 1]);
    for (uint32_t l = 0; r == 0 && l < L; l++) {
        /* weights leave in the natural a_k(nu, kappa) order [k][kappa][t] */
        const uint32_t K = net->n_planes[l], kin = nc_neocog_k_in(net, l);
        const uint32_t nl = net->s_ix[l]->n_live, ks = nc_neocog_kstride(K);
        size_t n = (size_t)K * kin * nl;
        float *wt = malloc(n * sizeof(float));
        if (!wt)
            return -ENOMEM;
        for (uint32_t k = 0; k < K; k++)
            for (uint32_t kap = 0; kap < kin; kap++)
                for (uint32_t t = 0; t < nl; t++)
                    wt[((size_t)k * kin + kap) * nl + t] =
                        net->a[l][((size_t)kap * nl + t) * ks + k];
        r = nc_mf_put_f32(w, TAG_W(l), wt, n);
        free(wt);
        if (r == 0)
            r = nc_mf_put_f32(w, TAG_B(l), net->b[l], K);
    }
    return r;
}

int nc_neocog_save(const nc_neocog *net, const nc_model_info *info,
                   uint8_t **ret_buf, size_t *ret_len)
{
    if (!net || !info || !ret_buf || !ret_len || info->n_classes != net->arch.n_classes)
        return -EINVAL;
    nc_mf_writer *w = NULL;
    int r = nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w);
    if (r == 0) r = nc_neocog_write(net, w);
    if (r == 0) r = nc_mf_put_info(w, info);
    if (r == 0) r = nc_mf_finish(w, ret_buf, ret_len);
    nc_mf_writer_free(w);
    return r;
}

/* A missing or mistyped section is corruption, whatever the reader says. */
static int bad(int r)
{
    return r == -ENOMEM ? r : -EBADMSG;
}

/* Read an exact-count u32/f32 section. */
static int get_u32(const nc_mf_reader *rd, uint32_t tag, uint32_t *dst, size_t n)
{
    size_t have;
    int r = nc_mf_count(rd, tag, NC_MF_TYPE_U32, &have);
    if (r < 0 || have != n)
        return -EBADMSG;
    r = nc_mf_get_u32(rd, tag, dst, n);
    return r < 0 ? bad(r) : 0;
}

static int get_f32(const nc_mf_reader *rd, uint32_t tag, float *dst, size_t n)
{
    size_t have;
    int r = nc_mf_count(rd, tag, NC_MF_TYPE_F32, &have);
    if (r < 0 || have != n)
        return -EBADMSG;
    r = nc_mf_get_f32(rd, tag, dst, n);
    return r < 0 ? bad(r) : 0;
}

int nc_neocog_read(const nc_mf_reader *rd, nc_neocog **ret_net)
{
    if (!rd || !ret_net)
        return -EINVAL;
    if (nc_mf_kind_of(rd) != NC_MF_KIND_NEOCOG)
        return -EBADMSG;

    /* the stage table: its length says how many stages, and must agree */
    size_t n_stg, n_stf;
    if (nc_mf_count(rd, TAG_STG, NC_MF_TYPE_U32, &n_stg) < 0 ||
        nc_mf_count(rd, TAG_STF, NC_MF_TYPE_F32, &n_stf) < 0 ||
        n_stg < STG_HEAD + STG_PER || (n_stg - STG_HEAD) % STG_PER != 0)
        return -EBADMSG;
    size_t L = (n_stg - STG_HEAD) / STG_PER;
    if (L > NC_NEOCOG_MAX_STAGES || n_stf != STF_HEAD + STF_PER * L)
        return -EBADMSG;
    uint32_t stg[STG_HEAD + STG_PER * NC_NEOCOG_MAX_STAGES];
    float stf[STF_HEAD + STF_PER * NC_NEOCOG_MAX_STAGES];
    int r = get_u32(rd, TAG_STG, stg, n_stg);
    if (r == 0)
        r = get_f32(rd, TAG_STF, stf, n_stf);
    if (r < 0)
        return r;
    if (stg[0] != L)
        return -EBADMSG;
    nc_neocog_arch A;
    memset(&A, 0, sizeof(A));
    const uint32_t *u = stg + 1;
    const float *f = stf;
    A.n_stages = (uint32_t)L;
    A.in_size = *u++; A.g_size = *u++; A.g_win = *u++; A.g_pad = *u++;
    A.n_classes = *u++;
    A.g_radius_o = *f++; A.g_radius = *f++; A.g_cut = *f++;
    for (size_t l = 0; l < L; l++) {
        nc_neocog_stage *s = &A.stage[l];
        s->s_size = *u++; s->s_win = *u++; s->s_pad = *u++; s->s_grid = *u++;
        s->k_max = *u++; s->c_kind = *u++; s->c_size = *u++; s->c_win = *u++;
        s->c_pad = *u++; s->c_step = *u++; s->c_grid = *u++;
        s->s_radius = *f++; s->theta = *f++; s->gamma = *f++;
        s->c_radius_o = *f++; s->c_radius = *f++;
    }
    if (nc_neocog_arch_check(&A) < 0)
        return -EBADMSG;

    /* plane counts within caps, labels valid, and every weight section the
     * size the table and counts imply, all before allocating weights */
    uint32_t planes[NC_NEOCOG_MAX_STAGES];
    if ((r = get_u32(rd, TAG_PLN, planes, L)) < 0)
        return r;
    for (size_t l = 0; l < L; l++)
        if (planes[l] < 1 || planes[l] > A.stage[l].k_max)
            return -EBADMSG;

    nc_neocog *net = NULL;
    uint32_t *lab = NULL;
    float *wt = NULL;
    r = nc_neocog_new(&A, &net);
    if (r < 0)
        return r == -ENOMEM ? r : -EBADMSG;
    for (size_t l = 0; l < L; l++) {
        size_t n_w, n_b, want = (size_t)planes[l] * (l == 0 ? 2u : planes[l - 1]) *
                                net->s_ix[l]->n_live;
        if (nc_mf_count(rd, TAG_W(l), NC_MF_TYPE_F32, &n_w) < 0 || n_w != want ||
            nc_mf_count(rd, TAG_B(l), NC_MF_TYPE_F32, &n_b) < 0 || n_b != planes[l]) {
            r = -EBADMSG;
            goto fail;
        }
    }
    const uint32_t KL = planes[L - 1];
    lab = malloc(KL * sizeof(*lab));
    if (!lab) {
        r = -ENOMEM;
        goto fail;
    }
    if ((r = get_u32(rd, TAG_LBL, lab, KL)) < 0)
        goto fail;
    for (uint32_t k = 0; k < KL; k++)
        if (lab[k] >= A.n_classes) {
            r = -EBADMSG;
            goto fail;
        }
    if ((r = nc_neocog__set_planes(net, planes, lab)) < 0) {
        r = r == -ENOMEM ? r : -EBADMSG;
        goto fail;
    }

    for (size_t l = 0; l < L; l++) {
        const uint32_t K = planes[l], kin = nc_neocog_k_in(net, (uint32_t)l);
        const uint32_t nl = net->s_ix[l]->n_live, ks = nc_neocog_kstride(K);
        const size_t n = (size_t)K * kin * nl;
        free(wt);
        wt = malloc((n > K ? n : K) * sizeof(float));
        if (!wt) {
            r = -ENOMEM;
            goto fail;
        }
        if ((r = get_f32(rd, TAG_W(l), wt, n)) < 0)
            goto fail;
        for (uint32_t k = 0; k < K; k++)
            for (uint32_t kap = 0; kap < kin; kap++)
                for (uint32_t t = 0; t < nl; t++) {
                    float v = wt[((size_t)k * kin + kap) * nl + t];
                    if (!(v >= 0.0f)) {     /* a >= 0; NaN fails too */
                        r = -EBADMSG;
                        goto fail;
                    }
                    net->a[l][((size_t)kap * nl + t) * ks + k] = v;
                }
        if ((r = get_f32(rd, TAG_B(l), wt, K)) < 0)
            goto fail;
        for (uint32_t k = 0; k < K; k++) {
            if (!(wt[k] >= 0.0f)) {
                r = -EBADMSG;
                goto fail;
            }
            net->b[l][k] = wt[k];
        }
    }
    free(wt);
    free(lab);
    *ret_net = net;
    return 0;
fail:
    free(wt);
    free(lab);
    nc_neocog_free(net);
    return r;
}

int nc_neocog_load(const uint8_t *buf, size_t len, nc_neocog **ret_net,
                   nc_model_info *ret_info)
{
    if (!buf || !ret_net)
        return -EINVAL;
    nc_mf_reader *rd = NULL;
    nc_neocog *net = NULL;
    nc_model_info *info = malloc(sizeof(*info));
    if (!info)
        return -ENOMEM;
    int r = nc_mf_open(buf, len, &rd);
    if (r == 0)
        r = nc_neocog_read(rd, &net);
    if (r == 0) {
        r = nc_mf_get_info(rd, info);
        if (r < 0)
            r = bad(r);
        else if (info->n_classes != net->arch.n_classes)
            r = -EBADMSG;
    }
    nc_mf_close(rd);
    if (r < 0) {
        nc_neocog_free(net);
        free(info);
        return r;
    }
    if (ret_info)
        *ret_info = *info;
    free(info);
    *ret_net = net;
    return 0;
}

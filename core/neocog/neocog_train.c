/* core/neocog/neocog_train.c — the training maths the initialiser and the
 * learner (neocog_learn.c) share: Reinforce, the seed map and the inhibition
 * that choose where planes open; US1's supervised edge training, and a
 * deterministic "seeded from data" initialiser for the upper stages.
 * Depends on neocog_net.c only; the forward pass calls nothing here.
 *
 * Layer: core.  Full unsupervised training (winner-take-all over hypercolumns,
 * several passes, learning thresholds) belongs to the trainer in tools/; the
 * initialiser here only opens and reinforces planes once, so benchmarks and
 * tests can run on realistic weights and sparsity. */
#include "neocog_impl.h"

#include <math.h>
#include <string.h>

#define NC_NEOCOG_SEED_D 3.1        /* lateral inhibition radius, S cells (spec) */
#define NC_NEOCOG_SEED_B 100.0f     /* b of a freshly seeded plane: cosine regime */

/* b_k = sqrt(sum_kappa sum_t a_k(t, kappa)^2 / c(t)) (spec, after Reinforce). */
static void update_b(nc_neocog *net, uint32_t l, uint32_t k)
{
    const uint32_t nl = net->s_ix[l]->n_live, ks = nc_neocog_kstride(net->n_planes[l]);
    const uint32_t kin = nc_neocog_k_in(net, l);
    double s = 0.0;
    for (uint32_t kap = 0; kap < kin; kap++)
        for (uint32_t t = 0; t < nl; t++) {
            double a = net->a[l][((size_t)kap * nl + t) * ks + k];
            s += a * a / net->s_c[l][t];
        }
    net->b[l][k] = (float)sqrt(s);
}

int nc_neocog_reinforce(nc_neocog *net, uint32_t l, uint32_t k,
                        uint32_t y, uint32_t x, float q, const float *in)
{
    if (!net || !in || l >= net->arch.n_stages || k >= net->n_planes[l] ||
        y >= net->arch.stage[l].s_size || x >= net->arch.stage[l].s_size ||
        !isfinite(q) || q < 0.0f)
        return -EINVAL;
    const nc_neocog_index *ix = net->s_ix[l];
    const uint32_t ks = nc_neocog_kstride(net->n_planes[l]), kin = nc_neocog_k_in(net, l);
    const uint32_t stride = nc_neocog_in_stride_(net, l);
    /* a_k(nu, kappa) += q c(nu) u(n + nu, kappa) for every live tap in the
     * (edge-clipped) window at (y, x) and every input plane */
    for (int32_t j = ix->gat_ptr[y * ix->n_out + x]; j < ix->gat_ptr[y * ix->n_out + x + 1]; j++) {
        const float *u = in + (size_t)ix->gat_in[j] * stride;
        const int t = ix->gat_tap[j];
        for (uint32_t kap = 0; kap < kin; kap++)
            if (u[kap] > 0.0f)
                net->a[l][((size_t)kap * ix->n_live + t) * ks + k] +=
                    q * net->s_c[l][t] * u[kap];
    }
    update_b(net, l, k);
    return 0;
}

void nc_neocog_draw_edge(uint32_t in_size, uint32_t k, uint32_t n_orient,
                         float *out)
{
    /* A half-disc of radius 0.43 N centred on the field, ink on the side
     * s < 0 of the line through the centre with normal angle 2 pi k / n;
     * both the straight edge and the rim are antialiased over one pixel. */
    const double c = (in_size - 1) / 2.0, R = 0.43 * in_size;
    const double phi = 2.0 * 3.14159265358979323846 * k / (n_orient ? n_orient : 1);
    const double cs = cos(phi), sn = sin(phi);
    for (uint32_t y = 0; y < in_size; y++)
        for (uint32_t x = 0; x < in_size; x++) {
            double dx = x - c, dy = y - c;
            double side = 0.5 - (dx * cs + dy * sn);
            double rim = R + 0.5 - sqrt(dx * dx + dy * dy);
            side = side < 0 ? 0 : side > 1 ? 1 : side;
            rim = rim < 0 ? 0 : rim > 1 ? 1 : rim;
            out[(size_t)y * in_size + x] = (float)(side * rim);
        }
}

int nc_neocog_train_us1(nc_neocog *net, uint32_t n_orient, float q)
{
    if (!net || n_orient < 1 || n_orient > net->arch.stage[0].k_max ||
        net->n_planes[0] != 0 || !isfinite(q) || q <= 0.0f)
        return -EINVAL;
    nc_neocog_state *st = NULL;
    int r = nc_neocog_state_new(net, &st);
    const uint32_t centre = net->arch.stage[0].s_size / 2;  /* (34, 34) on 68 */
    for (uint32_t k = 0; r == 0 && k < n_orient; k++) {
        uint32_t kk;
        r = nc_neocog_add_plane(net, 0, 0, &kk);
        if (r < 0)
            break;
        /* run_layer re-fits the state to the grown net before drawing UG */
        r = nc_neocog_run_layer(net, st, NC_NEOCOG_L_UG, NC_NEOCOG_FORM_F);
        if (r < 0)
            break;
        nc_neocog_draw_edge(net->arch.in_size, k, n_orient, st->u0);
        r = nc_neocog_run_layer(net, st, NC_NEOCOG_L_UG, NC_NEOCOG_FORM_F);
        if (r == 0)
            r = nc_neocog_reinforce(net, 0, kk, centre, centre, q, st->ug);
    }
    nc_neocog_state_free(st);
    return r;
}

/* ---- plane creation: where to open planes ------------------------------------ */

/* Seed map (spec step 2): input activity under the V-cell taper c, over
 * stage l's S positions, normalised to its maximum, minus cut, clipped at 0.
 * Normalising puts the map in the units of the responses that inhibit it.
 * Returns the maximum before normalising (0: no input at all). */
float nc_neocog_seed_map_(const nc_neocog *net, uint32_t l, const float *in, float cut,
                          float *m)
{
    const nc_neocog_index *ix = net->s_ix[l];
    const uint32_t stride = nc_neocog_in_stride_(net, l), kin = nc_neocog_k_in(net, l);
    const size_t n_o = (size_t)ix->n_out * ix->n_out;
    float mx = 0.0f;
    for (size_t o = 0; o < n_o; o++) {
        double s = 0.0;
        for (int32_t j = ix->gat_ptr[o]; j < ix->gat_ptr[o + 1]; j++) {
            const float *u = in + (size_t)ix->gat_in[j] * stride;
            double su = 0.0;
            for (uint32_t kap = 0; kap < kin; kap++)
                su += u[kap];
            s += net->s_c[l][ix->gat_tap[j]] * su;
        }
        m[o] = (float)s;
        mx = m[o] > mx ? m[o] : mx;
    }
    for (size_t o = 0; o < n_o; o++) {
        float v = mx > 0.0f ? m[o] / mx - cut : 0.0f;
        m[o] = v > 0.0f ? v : 0.0f;
    }
    return mx;
}

/* m -= gain * (0.7^((r/d)^2) taper over r <= d, normalised to sum 1) * resp,
 * clipped at 0: what planes already respond to counts as explained. */
void nc_neocog_inhibit_(float *m, const float *resp, uint32_t n, double d, float gain)
{
    const int R = (int)d;
    double w[2 * 8 + 1][2 * 8 + 1], wsum = 0.0;
    const int RR = R > 8 ? 8 : R;
    for (int dy = -RR; dy <= RR; dy++)
        for (int dx = -RR; dx <= RR; dx++) {
            double r2 = (double)dy * dy + (double)dx * dx;
            double v = r2 <= d * d ? pow(0.7, r2 / (d * d)) : 0.0;
            w[dy + RR][dx + RR] = v;
            wsum += v;
        }
    for (int y = 0; y < (int)n; y++)
        for (int x = 0; x < (int)n; x++) {
            if (m[y * n + x] <= 0.0f)
                continue;
            double s = 0.0;
            for (int dy = -RR; dy <= RR; dy++)
                for (int dx = -RR; dx <= RR; dx++) {
                    int yy = y + dy, xx = x + dx;
                    if (yy >= 0 && yy < (int)n && xx >= 0 && xx < (int)n)
                        s += w[dy + RR][dx + RR] * resp[yy * n + xx];
                }
            float v = m[y * n + x] - (float)(gain * s / wsum);
            m[y * n + x] = v > 0.0f ? v : 0.0f;
        }
}

/* ---- the seeded-from-data initialiser --------------------------------------- */

/* Response of plane k alone at every position (gather, seed eq. 1-3). */
static void plane_response(const nc_neocog *net, uint32_t l, uint32_t k,
                           const float *in, float *resp)
{
    const nc_neocog_index *ix = net->s_ix[l];
    const uint32_t stride = nc_neocog_in_stride_(net, l), kin = nc_neocog_k_in(net, l);
    const uint32_t ks = nc_neocog_kstride(net->n_planes[l]);
    const double th = net->arch.stage[l].theta;
    for (size_t o = 0; o < (size_t)ix->n_out * ix->n_out; o++) {
        double e = 0.0, v2 = 0.0;
        for (int32_t j = ix->gat_ptr[o]; j < ix->gat_ptr[o + 1]; j++) {
            const float *u = in + (size_t)ix->gat_in[j] * stride;
            const int t = ix->gat_tap[j];
            for (uint32_t kap = 0; kap < kin; kap++) {
                e += net->a[l][((size_t)kap * ix->n_live + t) * ks + k] * u[kap];
                v2 += net->s_c[l][t] * (double)u[kap] * u[kap];
            }
        }
        double x = (1.0 + e) / (1.0 + th * net->b[l][k] * sqrt(v2)) - 1.0;
        resp[o] = x > 0.0 ? (float)(th / (1.0 - th) * x) : 0.0f;
    }
}

/* Open a plane at position o of stage l, reinforce it once there and scale
 * it so b = NC_NEOCOG_SEED_B (one reinforcement, q chosen by b). */
static int open_plane(nc_neocog *net, uint32_t l, uint32_t label, size_t o,
                      const float *in, uint32_t *ret_k)
{
    uint32_t k, n = net->arch.stage[l].s_size;
    int r = nc_neocog_add_plane(net, l, label, &k);
    if (r == 0)
        r = nc_neocog_reinforce(net, l, k, (uint32_t)(o / n), (uint32_t)(o % n), 1.0f, in);
    if (r < 0)
        return r;
    float b = net->b[l][k];
    if (b > 0.0f) {
        const uint32_t nl = net->s_ix[l]->n_live, ks = nc_neocog_kstride(net->n_planes[l]);
        const float sc = NC_NEOCOG_SEED_B / b;
        for (size_t i = 0; i < (size_t)nc_neocog_k_in(net, l) * nl; i++)
            net->a[l][i * ks + k] *= sc;
        update_b(net, l, k);
    }
    *ret_k = k;
    return 0;
}

int nc_neocog_seed_from_digits(nc_neocog *net, const float *digits,
                               const uint8_t *labels, uint32_t n,
                               const uint32_t *target, uint32_t max_passes)
{
    if (!net || !digits || !labels || !target || net->n_planes[0] < 1)
        return -EINVAL;
    const uint32_t L = net->arch.n_stages;
    for (uint32_t l = 0; l < L; l++)
        if (target[l] > net->arch.stage[l].k_max)
            return -EINVAL;
    for (uint32_t d = 0; d < n; d++)
        if (labels[d] >= net->arch.n_classes)
            return -EINVAL;

    const size_t in_cells = (size_t)net->arch.in_size * net->arch.in_size;
    nc_neocog_state *st = NULL;
    float *m = NULL, *resp = NULL;
    size_t most = 0;
    for (uint32_t l = 0; l < L; l++) {
        size_t c = (size_t)net->arch.stage[l].s_size * net->arch.stage[l].s_size;
        most = c > most ? c : most;
    }
    int r = nc_neocog_state_new(net, &st);
    if (r < 0)
        return r;
    m = malloc(most * sizeof(float));
    resp = malloc(most * sizeof(float));
    if (!m || !resp) {
        r = -ENOMEM;
        goto out;
    }

    for (uint32_t l = 1; l < L; l++) {
        const int last = l + 1 == L;
        const uint32_t ns = net->arch.stage[l].s_size;
        const size_t n_o = (size_t)ns * ns;
        for (uint32_t pass = 0; pass < max_passes && net->n_planes[l] < target[l]; pass++)
            for (uint32_t d = 0; d < n && net->n_planes[l] < target[l]; d++) {
                /* lower stages, frozen, at their recognition thresholds */
                memcpy(st->u0, digits + d * in_cells, in_cells * sizeof(float));
                for (int layer = 0; layer < (int)(2 * l + 1) && r == 0; layer++)
                    r = nc_neocog_run_layer(net, st, layer, NC_NEOCOG_FORM_F);
                if (r < 0)
                    goto out;
                /* run_layer may have re-fitted st; take the input after it */
                const float *in = st->uc[l - 1];
                if (nc_neocog_seed_map_(net, l, in, 0.4f, m) <= 0.0f)
                    continue;           /* nothing reaches this stage */
                if (last) {
                    /* supervised top: open a plane where the answer is wrong */
                    if (net->n_planes[l] > 0) {
                        r = nc_neocog_run_layer(net, st, 2 * (int)l + 1, NC_NEOCOG_FORM_F);
                        if (r == 0)
                            r = nc_neocog_run_layer(net, st, 2 * (int)l + 2, NC_NEOCOG_FORM_F);
                        if (r < 0)
                            goto out;
                        if (st->label == (int32_t)labels[d])
                            continue;
                        in = st->uc[l - 1];
                    }
                    size_t best = 0;
                    for (size_t o = 1; o < n_o; o++)
                        if (m[o] > m[best])
                            best = o;
                    uint32_t k;
                    r = open_plane(net, l, labels[d], best, in, &k);
                    if (r < 0)
                        goto out;
                    continue;
                }
                /* unsupervised middle stages: subtract what is explained */
                if (net->n_planes[l] > 0) {
                    r = nc_neocog_run_layer(net, st, 2 * (int)l + 1, NC_NEOCOG_FORM_F);
                    if (r < 0)
                        goto out;
                    in = st->uc[l - 1];
                    const uint32_t ks = nc_neocog_kstride(net->n_planes[l]);
                    for (size_t o = 0; o < n_o; o++) {
                        float s = 0.0f;
                        for (uint32_t k = 0; k < net->n_planes[l]; k++)
                            s += st->us[l][o * ks + k];
                        resp[o] = s;
                    }
                    nc_neocog_inhibit_(m, resp, ns, NC_NEOCOG_SEED_D, 4.0f);
                }
                while (net->n_planes[l] < target[l]) {
                    size_t best = 0;
                    for (size_t o = 1; o < n_o; o++)
                        if (m[o] > m[best])
                            best = o;
                    if (!(m[best] > 0.0f))
                        break;
                    uint32_t k;
                    r = open_plane(net, l, 0, best, in, &k);
                    if (r < 0)
                        goto out;
                    /* the new plane explains its own neighbourhood */
                    plane_response(net, l, k, in, resp);
                    nc_neocog_inhibit_(m, resp, ns, NC_NEOCOG_SEED_D, 4.0f);
                    const int by = (int)(best / ns), bx = (int)(best % ns);
                    for (int y = 0; y < (int)ns; y++)
                        for (int x = 0; x < (int)ns; x++)
                            if ((double)(y - by) * (y - by) + (double)(x - bx) * (x - bx) <=
                                NC_NEOCOG_SEED_D * NC_NEOCOG_SEED_D)
                                m[y * ns + x] = 0.0f;
                }
            }
    }
out:
    free(m);
    free(resp);
    nc_neocog_state_free(st);
    return r;
}

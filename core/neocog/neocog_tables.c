/* core/neocog/neocog_tables.c — the neocognitron's geometry: circular masks, fixed
 * tap weights (UG, V-cells, C-cells) and the inverse-index tables.
 *
 * Layer: core.  Built once per layer here so the CPU forms and the GPU kernels
 * read the very same tables (seed 004, technique T5). */
#include "neocog.h"

#include <math.h>
#include <string.h>

/* Entries in one index; larger geometries are refused before allocating. */
#define NC_NEOCOG_MAX_ENTRIES (1u << 27)

/* Carve n bytes (8-aligned) from a bump allocator over one block. */
static void *carve(uint8_t **cur, size_t n)
{
    void *p = *cur;
    *cur += (n + 7u) & ~(size_t)7u;
    return p;
}

static size_t al8(size_t n) { return (n + 7u) & ~(size_t)7u; }

int nc_neocog_index_new(uint32_t n_in, uint32_t n_out, uint32_t win,
                        uint32_t pad, uint32_t step, float radius,
                        nc_neocog_index **ret_ix)
{
    if (!ret_ix || n_in < 1 || n_in > NC_NEOCOG_MAX_SIZE || win < 1 ||
        win > NC_NEOCOG_MAX_WIN || step < 1 || step > 4 || pad >= win ||
        !(radius > 0.0f) || !isfinite(radius))
        return -EINVAL;
    if (n_in + 2 * pad < win || (n_in + 2 * pad - win) % step != 0 ||
        (n_in + 2 * pad - win) / step + 1 != n_out)
        return -EINVAL;

    /* Live taps: r <= A, r measured from the window centre (w-1)/2, which is
     * a half-integer for even windows (staggered grids). */
    int16_t ty[NC_NEOCOG_MAX_WIN * NC_NEOCOG_MAX_WIN];
    int16_t tx[NC_NEOCOG_MAX_WIN * NC_NEOCOG_MAX_WIN];
    float tr[NC_NEOCOG_MAX_WIN * NC_NEOCOG_MAX_WIN];
    uint32_t n_live = 0;
    double ctr = (win - 1) / 2.0, a2 = (double)radius * radius;
    for (uint32_t y = 0; y < win; y++)
        for (uint32_t x = 0; x < win; x++) {
            double dy = y - ctr, dx = x - ctr, r2 = dy * dy + dx * dx;
            if (r2 <= a2) {
                ty[n_live] = (int16_t)y;
                tx[n_live] = (int16_t)x;
                tr[n_live] = (float)sqrt(r2);
                n_live++;
            }
        }
    if (n_live == 0)
        return -EINVAL;

    /* Count the entries: output o reads input o*step - pad + t per axis. */
    size_t n_entries = 0;
    for (uint32_t oy = 0; oy < n_out; oy++)
        for (uint32_t ox = 0; ox < n_out; ox++)
            for (uint32_t t = 0; t < n_live; t++) {
                int64_t iy = (int64_t)oy * step - pad + ty[t];
                int64_t ix = (int64_t)ox * step - pad + tx[t];
                if (iy >= 0 && iy < n_in && ix >= 0 && ix < n_in)
                    n_entries++;
            }
    if (n_entries > NC_NEOCOG_MAX_ENTRIES)
        return -ERANGE;

    size_t no2 = (size_t)n_out * n_out, ni2 = (size_t)n_in * n_in;
    size_t bytes = al8(sizeof(nc_neocog_index)) + 2 * al8(n_live * 2) +
                   al8(n_live * 4) + 2 * al8(n_out * 2) +
                   al8((no2 + 1) * 4) + al8(n_entries * 4) + al8(n_entries * 2) +
                   al8((ni2 + 1) * 4) + al8(n_entries * 4) + al8(n_entries * 2);
    uint8_t *block = calloc(1, bytes), *cur = block;
    if (!block)
        return -ENOMEM;
    nc_neocog_index *ix = carve(&cur, sizeof(*ix));
    ix->block_ = block;
    ix->n_in = n_in; ix->n_out = n_out; ix->win = win; ix->pad = pad;
    ix->step = step; ix->radius = radius; ix->n_live = n_live;
    ix->n_entries = (uint32_t)n_entries;
    ix->tap_y = carve(&cur, n_live * 2);
    ix->tap_x = carve(&cur, n_live * 2);
    ix->tap_r = carve(&cur, n_live * 4);
    ix->axis_t0 = carve(&cur, n_out * 2);
    ix->axis_t1 = carve(&cur, n_out * 2);
    ix->gat_ptr = carve(&cur, (no2 + 1) * 4);
    ix->gat_in = carve(&cur, n_entries * 4);
    ix->gat_tap = carve(&cur, n_entries * 2);
    ix->sct_ptr = carve(&cur, (ni2 + 1) * 4);
    ix->sct_out = carve(&cur, n_entries * 4);
    ix->sct_tap = carve(&cur, n_entries * 2);
    memcpy(ix->tap_y, ty, n_live * 2);
    memcpy(ix->tap_x, tx, n_live * 2);
    memcpy(ix->tap_r, tr, n_live * 4);

    /* Edge-clipped window per axis: taps t with 0 <= o*step - pad + t < n_in. */
    for (uint32_t o = 0; o < n_out; o++) {
        int64_t base = (int64_t)o * step - pad;
        int64_t t0 = base < 0 ? -base : 0;
        int64_t t1 = (int64_t)n_in - base;
        if (t1 > win) t1 = win;
        ix->axis_t0[o] = (int16_t)t0;
        ix->axis_t1[o] = (int16_t)t1;
    }

    /* Gather table, filled in output order, taps ascending; the scatter
     * table counts per input on the way. */
    uint32_t j = 0;
    for (uint32_t oy = 0; oy < n_out; oy++)
        for (uint32_t ox = 0; ox < n_out; ox++) {
            ix->gat_ptr[oy * n_out + ox] = (int32_t)j;
            for (uint32_t t = 0; t < n_live; t++) {
                int64_t iy = (int64_t)oy * step - pad + ty[t];
                int64_t ixx = (int64_t)ox * step - pad + tx[t];
                if (iy < 0 || iy >= n_in || ixx < 0 || ixx >= n_in)
                    continue;
                int32_t ip = (int32_t)(iy * n_in + ixx);
                ix->gat_in[j] = ip;
                ix->gat_tap[j] = (int16_t)t;
                ix->sct_ptr[ip + 1]++;
                j++;
            }
        }
    ix->gat_ptr[no2] = (int32_t)j;

    /* Scatter table: prefix sums, then place each gather entry under its
     * input; outputs come out ascending for each input. */
    for (size_t i = 0; i < ni2; i++)
        ix->sct_ptr[i + 1] += ix->sct_ptr[i];
    int32_t *fill = malloc((ni2 + 1) * sizeof(*fill));
    if (!fill) {
        free(block);
        return -ENOMEM;
    }
    memcpy(fill, ix->sct_ptr, (ni2 + 1) * sizeof(*fill));
    for (uint32_t o = 0; o < no2; o++)
        for (int32_t e = ix->gat_ptr[o]; e < ix->gat_ptr[o + 1]; e++) {
            int32_t k = fill[ix->gat_in[e]]++;
            ix->sct_out[k] = (int32_t)o;
            ix->sct_tap[k] = ix->gat_tap[e];
        }
    free(fill);
    *ret_ix = ix;
    return 0;
}

void nc_neocog_index_free(nc_neocog_index *ix)
{
    if (ix)
        free(ix->block_);
}

/* V-cell weight c(nu) = gamma^((r/A)^2) (seed eq. 2; spec "S-cell"). */
void nc_neocog_taps_vcell(const nc_neocog_index *ix, float gamma, float *out)
{
    for (uint32_t t = 0; t < ix->n_live; t++) {
        double q = ix->tap_r[t] / (double)ix->radius;
        out[t] = (float)pow(gamma, q * q);
    }
}

/* C-cell taper d(nu) (spec "C-cell"): an excitatory centre 4*0.7^((r/Ao)^2)
 * out to A_o, a ring P*0.12^((r/Ao)^2) - Q*0.8^((r/A)^2) out to A whose
 * negative taps are then scaled to cancel the positive sum, so a uniform
 * S-plane gives no C response.  A_o >= A: centre only. */
void nc_neocog_taps_ccell(const nc_neocog_index *ix, float radius_o, float *out)
{
    double ao = radius_o, a = ix->radius, pos = 0.0, neg = 0.0;
    double iao2 = 1.0 / (ao * ao), ia2 = 1.0 / (a * a);
    double P = 4.0 * iao2 / (iao2 - ia2), Q = 4.0 * ia2 / (iao2 - ia2);
    double tmp[NC_NEOCOG_MAX_WIN * NC_NEOCOG_MAX_WIN];
    for (uint32_t t = 0; t < ix->n_live; t++) {
        double r = ix->tap_r[t], v;
        if (r <= ao || ao >= a)
            v = 4.0 * pow(0.7, (r / ao) * (r / ao));
        else
            v = P * pow(0.12, (r / ao) * (r / ao)) - Q * pow(0.8, (r / a) * (r / a));
        tmp[t] = v;
        if (v > 0) pos += v; else neg -= v;
    }
    double scale = neg > 0.0 ? pos / neg : 1.0;
    for (uint32_t t = 0; t < ix->n_live; t++)
        out[t] = (float)(tmp[t] < 0 ? tmp[t] * scale : tmp[t]);
}

/* UG's difference of Gaussians (spec "UG"): positive taps scaled to sum +1,
 * negative to -1, so a uniform input gives x = 0. */
void nc_neocog_taps_ug(const nc_neocog_index *ix, float radius_o, float *out)
{
    double ro = radius_o, R = ix->radius, pos = 0.0, neg = 0.0;
    double tmp[NC_NEOCOG_MAX_WIN * NC_NEOCOG_MAX_WIN];
    for (uint32_t t = 0; t < ix->n_live; t++) {
        double r = ix->tap_r[t];
        double v = pow(0.05, (r / ro) * (r / ro)) / (ro * ro) -
                   pow(0.05, (r / R) * (r / R)) / (R * R);
        tmp[t] = v;
        if (v > 0) pos += v; else neg -= v;
    }
    for (uint32_t t = 0; t < ix->n_live; t++)
        out[t] = (float)(tmp[t] > 0 ? tmp[t] / pos : (neg > 0 ? tmp[t] / neg : 0.0));
}

/* tools/neocog_unipen_look.c — the looks of other sources (see the header). */
#include "neocog_unipen_look.h"

#include <errno.h>
#include <math.h>
#include <string.h>

int nc_look_parse(const char *name, nc_look *ret)
{
    static const char *const names[] = { "none", "binary", "stretch", "r16", "blur" };
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (name && !strcmp(name, names[i])) {
            *ret = (nc_look)i;
            return 0;
        }
    return -EINVAL;
}

int nc_look_strokes(nc_look look, nc_strokes *s)
{
    if (look != NC_LOOK_STRETCH)
        return 0;
    if (!s || !s->n_points || !s->xy)
        return -EINVAL;
    float x0 = s->xy[0], x1 = x0, y0 = s->xy[1], y1 = y0;
    for (uint32_t i = 1; i < s->n_points; i++) {
        x0 = fminf(x0, s->xy[2 * i]);
        x1 = fmaxf(x1, s->xy[2 * i]);
        y0 = fminf(y0, s->xy[2 * i + 1]);
        y1 = fmaxf(y1, s->xy[2 * i + 1]);
    }
    double w = x1 - x0, h = y1 - y0;
    if (!(w > 0.0) && !(h > 0.0))
        return 0;   /* a dot: nothing to stretch */
    /* the shorter side up to the longer one; a stroke of no width (a bare
       "1") gets the limit, as a box-stretching form would turn it into a bar */
    double sx = 1.0, sy = 1.0;
    if (w < h)
        sx = w > 0.0 ? fmin(h / w, NC_LOOK_STRETCH_MAX) : NC_LOOK_STRETCH_MAX;
    else if (h < w)
        sy = h > 0.0 ? fmin(w / h, NC_LOOK_STRETCH_MAX) : NC_LOOK_STRETCH_MAX;
    double m[6];
    int err = nc_strokes_affine(0.0, 0.0, sx, sy, 0.5 * (x0 + x1), 0.5 * (y0 + y1), m);
    return err ? err : nc_strokes_transform(s, m);
}

/* Overlap of [a, a+1) scaled by k with [b, b+1): pixel a of the source
 * covers [a k, (a+1) k) of the destination. */
static float overlap(float lo0, float hi0, float lo1, float hi1)
{
    float lo = fmaxf(lo0, lo1), hi = fminf(hi0, hi1);
    return hi > lo ? hi - lo : 0.0f;
}

int nc_look_resize(const float *src, uint32_t sn, float *dst, uint32_t dn)
{
    if (!src || !dst || sn == 0 || dn == 0 || sn > NC_LOOK_MAX_FIELD || dn > NC_LOOK_MAX_FIELD)
        return -EINVAL;
    if (dn < sn) {
        /* area average: destination pixel j covers source [j r, (j+1) r) */
        const float r = (float)sn / (float)dn;
        for (uint32_t y = 0; y < dn; y++)
            for (uint32_t x = 0; x < dn; x++) {
                double sum = 0.0;
                for (uint32_t sy = (uint32_t)(y * r); sy < sn && sy < (y + 1) * r; sy++) {
                    float wy = overlap((float)sy, (float)sy + 1.0f, y * r, (y + 1) * r);
                    for (uint32_t sx = (uint32_t)(x * r); sx < sn && sx < (x + 1) * r; sx++)
                        sum += (double)wy * overlap((float)sx, (float)sx + 1.0f, x * r,
                                                    (x + 1) * r) * src[sy * sn + sx];
                }
                dst[y * dn + x] = (float)(sum / ((double)r * r));
            }
        return 0;
    }
    /* bilinear, pixel centres aligned: destination centre j + 0.5 is source
       position (j + 0.5) sn / dn; outside the source counts as background */
    const float r = (float)sn / (float)dn;
    for (uint32_t y = 0; y < dn; y++)
        for (uint32_t x = 0; x < dn; x++) {
            float fx = (x + 0.5f) * r - 0.5f, fy = (y + 0.5f) * r - 0.5f;
            int ix = (int)floorf(fx), iy = (int)floorf(fy);
            float ax = fx - ix, ay = fy - iy, v = 0.0f;
            for (int dy = 0; dy < 2; dy++)
                for (int dx = 0; dx < 2; dx++) {
                    int px = ix + dx, py = iy + dy;
                    if (px < 0 || py < 0 || px >= (int)sn || py >= (int)sn)
                        continue;
                    v += (dx ? ax : 1.0f - ax) * (dy ? ay : 1.0f - ay) * src[py * (int)sn + px];
                }
            dst[y * dn + x] = v;
        }
    return 0;
}

/* Separable Gaussian blur of f (n x n) with sigma s, zero outside. */
static void blur(float *f, uint32_t n, float s)
{
    float k[9], t[NC_LOOK_MAX_FIELD * NC_LOOK_MAX_FIELD], sum = 0.0f;
    for (int i = -4; i <= 4; i++)
        sum += k[i + 4] = expf(-0.5f * (float)(i * i) / (s * s));
    for (int i = 0; i < 9; i++)
        k[i] /= sum;
    for (int pass = 0; pass < 2; pass++) {
        const float *in = pass ? t : f;
        float *out = pass ? f : t;
        for (int y = 0; y < (int)n; y++)
            for (int x = 0; x < (int)n; x++) {
                float v = 0.0f;
                for (int i = -4; i <= 4; i++) {
                    int px = pass ? x : x + i, py = pass ? y + i : y;
                    if (px >= 0 && py >= 0 && px < (int)n && py < (int)n)
                        v += k[i + 4] * in[py * (int)n + px];
                }
                out[y * (int)n + x] = v;
            }
    }
}

int nc_look_field(nc_look look, float *f, uint32_t size)
{
    if (!f || size == 0 || size > NC_LOOK_MAX_FIELD)
        return -EINVAL;
    const uint32_t n = size * size;
    switch (look) {
    case NC_LOOK_BINARY:
        for (uint32_t i = 0; i < n; i++)
            f[i] = f[i] >= 0.5f ? 1.0f : 0.0f;
        return 0;
    case NC_LOOK_R16: {
        /* the layout's 20 px box held by 16 px: the whole field by 16 / 20 */
        float low[NC_LOOK_MAX_FIELD * NC_LOOK_MAX_FIELD];
        uint32_t ln = (size * 16 + 10) / 20;
        int err = nc_look_resize(f, size, low, ln ? ln : 1);
        return err ? err : nc_look_resize(low, ln ? ln : 1, f, size);
    }
    case NC_LOOK_BLUR: {
        blur(f, size, NC_LOOK_BLUR_SIGMA);
        float peak = 0.0f;
        for (uint32_t i = 0; i < n; i++)
            peak = fmaxf(peak, f[i]);
        for (uint32_t i = 0; i < n; i++) {
            float v = peak > 0.0f ? f[i] / peak : 0.0f;
            f[i] = v < NC_LOOK_BLUR_FLOOR ? 0.0f : v;
        }
        return 0;
    }
    default:
        return 0;
    }
}

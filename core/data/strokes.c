/* core/data/strokes.c — resampling, deforming and drawing pen strokes (see
 * strokes.h).
 *
 * Layer: core.  Pure functions on arrays; the only allocation is the
 * resampled copy. */
#include "strokes.h"

#include <math.h>
#include <string.h>

#define PI 3.14159265358979323846

int nc_strokes_check(const nc_strokes *s)
{
    if (!s || !s->start || !s->xy || s->n_strokes == 0 || s->n_points == 0)
        return -EINVAL;
    if (s->n_strokes > NC_STROKES_MAX_STROKES || s->n_points > NC_STROKES_MAX_POINTS)
        return -ERANGE;
    if (s->start[0] != 0 || s->start[s->n_strokes] != s->n_points)
        return -EINVAL;
    for (uint32_t i = 0; i < s->n_strokes; i++)
        if (s->start[i + 1] <= s->start[i])
            return -EINVAL;
    for (uint32_t i = 0; i < 2 * s->n_points; i++)
        if (!isfinite(s->xy[i]))
            return -EINVAL;
    return 0;
}

void nc_strokes_fini(nc_strokes *s)
{
    if (!s)
        return;
    NC_FREE(s->start);
    NC_FREE(s->xy);
    s->n_strokes = s->n_points = 0;
}

int nc_strokes_bbox(const nc_strokes *s, float ret_box[4])
{
    int err = nc_strokes_check(s);
    if (err)
        return err;
    if (!ret_box)
        return -EINVAL;
    float b[4] = { s->xy[0], s->xy[1], s->xy[0], s->xy[1] };
    for (uint32_t i = 1; i < s->n_points; i++) {
        float x = s->xy[2 * i], y = s->xy[2 * i + 1];
        b[0] = fminf(b[0], x);
        b[1] = fminf(b[1], y);
        b[2] = fmaxf(b[2], x);
        b[3] = fmaxf(b[3], y);
    }
    memcpy(ret_box, b, sizeof b);
    return 0;
}

/* Polyline length of points [a, b) of xy. */
static double polyline_length(const float *xy, uint32_t a, uint32_t b)
{
    double len = 0.0;
    for (uint32_t i = a + 1; i < b; i++)
        len += hypot((double)xy[2 * i] - xy[2 * i - 2], (double)xy[2 * i + 1] - xy[2 * i - 1]);
    return len;
}

/* Points the resampling of one stroke of length len gives: 0, d, 2d, ...
 * strictly below len, then the end point. */
static uint64_t resampled_count(double len, double d)
{
    if (len <= 0.0)
        return 1;
    double n = ceil(len / d);   /* samples at k d for k = 0 .. n-1, all < len */
    return (uint64_t)n + 1;
}

int nc_strokes_resample(const nc_strokes *in, float spacing, nc_strokes *ret)
{
    int err = nc_strokes_check(in);
    if (err)
        return err;
    if (!ret || !(spacing > 0.0f) || !isfinite(spacing))
        return -EINVAL;
    const double d = spacing;

    /* Count first, so the caps hold before anything is allocated. */
    uint64_t total = 0;
    for (uint32_t s = 0; s < in->n_strokes; s++) {
        total += resampled_count(polyline_length(in->xy, in->start[s], in->start[s + 1]), d);
        if (total > NC_STROKES_MAX_POINTS)
            return -ERANGE;
    }

    nc_strokes out = { in->n_strokes, (uint32_t)total, NULL, NULL };
    out.start = malloc(sizeof(uint32_t) * (in->n_strokes + 1));
    out.xy = malloc(sizeof(float) * 2 * total);
    if (!out.start || !out.xy) {
        nc_strokes_fini(&out);
        return -ENOMEM;
    }

    uint32_t o = 0;
    for (uint32_t s = 0; s < in->n_strokes; s++) {
        uint32_t a = in->start[s], b = in->start[s + 1];
        const float *p = in->xy;
        double len = polyline_length(p, a, b);
        uint64_t n = resampled_count(len, d);
        out.start[s] = o;
        /* Walk the segments once; sample k sits at arc length k d. */
        uint32_t seg = a;           /* current segment: points seg, seg + 1 */
        double seg_begin = 0.0;     /* arc length at point seg */
        for (uint64_t k = 0; k + 1 < n; k++) {
            double t = (double)k * d;
            double seg_len = 0.0;
            while (seg + 1 < b) {
                seg_len = hypot((double)p[2 * seg + 2] - p[2 * seg],
                                (double)p[2 * seg + 3] - p[2 * seg + 1]);
                if (seg_begin + seg_len > t)
                    break;
                seg_begin += seg_len;
                seg++;
            }
            double x = p[2 * seg], y = p[2 * seg + 1];
            if (seg + 1 < b && seg_len > 0.0) {
                double f = (t - seg_begin) / seg_len;
                x += f * ((double)p[2 * seg + 2] - x);
                y += f * ((double)p[2 * seg + 3] - y);
            }
            out.xy[2 * o] = (float)x;
            out.xy[2 * o + 1] = (float)y;
            o++;
        }
        out.xy[2 * o] = p[2 * (b - 1)];
        out.xy[2 * o + 1] = p[2 * (b - 1) + 1];
        o++;
    }
    out.start[in->n_strokes] = o;
    *ret = out;
    return 0;
}

int nc_strokes_transform(nc_strokes *s, const double m[6])
{
    int err = nc_strokes_check(s);
    if (err)
        return err;
    if (!m)
        return -EINVAL;
    for (uint32_t i = 0; i < s->n_points; i++) {
        double x = s->xy[2 * i], y = s->xy[2 * i + 1];
        s->xy[2 * i] = (float)(m[0] * x + m[1] * y + m[2]);
        s->xy[2 * i + 1] = (float)(m[3] * x + m[4] * y + m[5]);
    }
    return 0;
}

int nc_strokes_affine(double slant_deg, double rot_deg, double scale_x, double scale_y,
                      double cx, double cy, double ret_m[6])
{
    if (!ret_m || !isfinite(slant_deg) || fabs(slant_deg) >= 80.0 || !isfinite(rot_deg) ||
        !(scale_x > 0.0) || !(scale_y > 0.0) || !isfinite(scale_x) || !isfinite(scale_y) ||
        !isfinite(cx) || !isfinite(cy))
        return -EINVAL;
    /* About (cx, cy): q = S R H (p - c) + c, with H the shear (y down, so a
     * point above the centre, y < cy, moves right for a positive slant),
     * R the rotation (clockwise on screen for y down), S the scales. */
    double t = tan(slant_deg * PI / 180.0);
    double c = cos(rot_deg * PI / 180.0), s = sin(rot_deg * PI / 180.0);
    /* H = [1 -t; 0 1];  R = [c -s; s c];  R H = [c, -c t - s; s, -s t + c] */
    double a00 = c, a01 = -c * t - s, a10 = s, a11 = -s * t + c;
    a00 *= scale_x; a01 *= scale_x;
    a10 *= scale_y; a11 *= scale_y;
    ret_m[0] = a00;
    ret_m[1] = a01;
    ret_m[2] = cx - a00 * cx - a01 * cy;
    ret_m[3] = a10;
    ret_m[4] = a11;
    ret_m[5] = cy - a10 * cx - a11 * cy;
    return 0;
}

int nc_strokes_jitter(nc_strokes *s, nc_deform_rng *rng, float shift_frac, float rot_deg,
                      float scale_frac)
{
    int err = nc_strokes_check(s);
    if (err)
        return err;
    if (!rng || !(shift_frac >= 0.0f) || !(rot_deg >= 0.0f) || !(scale_frac >= 0.0f) ||
        scale_frac >= 0.5f || !isfinite(shift_frac) || rot_deg > 180.0f)
        return -EINVAL;
    float box[4];
    nc_strokes_bbox(s, box);
    double side = fmax(box[2] - box[0], box[3] - box[1]);
    for (uint32_t k = 0; k < s->n_strokes; k++) {
        /* Four draws per stroke, always, in this order. */
        double dx = nc_deform_rng_sym(rng) * shift_frac * side;
        double dy = nc_deform_rng_sym(rng) * shift_frac * side;
        double rot = nc_deform_rng_sym(rng) * rot_deg;
        double sc = 1.0 + nc_deform_rng_sym(rng) * scale_frac;
        uint32_t a = s->start[k], b = s->start[k + 1];
        double cx = 0.0, cy = 0.0;
        for (uint32_t i = a; i < b; i++) {
            cx += s->xy[2 * i];
            cy += s->xy[2 * i + 1];
        }
        cx /= (double)(b - a);
        cy /= (double)(b - a);
        double m[6];
        nc_strokes_affine(0.0, rot, sc, sc, cx, cy, m);
        m[2] += dx;
        m[5] += dy;
        for (uint32_t i = a; i < b; i++) {
            double x = s->xy[2 * i], y = s->xy[2 * i + 1];
            s->xy[2 * i] = (float)(m[0] * x + m[1] * y + m[2]);
            s->xy[2 * i + 1] = (float)(m[3] * x + m[4] * y + m[5]);
        }
    }
    return 0;
}

/* Distance from (px, py) to the segment (ax, ay)-(bx, by). */
static float segment_distance(float px, float py, float ax, float ay, float bx, float by)
{
    float ux = bx - ax, uy = by - ay;
    float wx = px - ax, wy = py - ay;
    float uu = ux * ux + uy * uy;
    float t = uu > 0.0f ? (wx * ux + wy * uy) / uu : 0.0f;
    t = t < 0.0f ? 0.0f : (t > 1.0f ? 1.0f : t);
    float dx = wx - t * ux, dy = wy - t * uy;
    return sqrtf(dx * dx + dy * dy);
}

/* Max-composite one capsule (a segment, or a disc when a == b). */
static void draw_capsule(float *out, uint32_t w, uint32_t h, float ax, float ay, float bx,
                         float by, float radius)
{
    float reach = radius + 0.5f;
    float fx0 = fminf(ax, bx) - reach, fx1 = fmaxf(ax, bx) + reach;
    float fy0 = fminf(ay, by) - reach, fy1 = fmaxf(ay, by) + reach;
    if (fx1 < 0.0f || fy1 < 0.0f || fx0 > (float)(w - 1) || fy0 > (float)(h - 1))
        return;
    long x0 = fx0 < 0.0f ? 0 : (long)ceilf(fx0);
    long y0 = fy0 < 0.0f ? 0 : (long)ceilf(fy0);
    long x1 = fx1 > (float)(w - 1) ? (long)w - 1 : (long)floorf(fx1);
    long y1 = fy1 > (float)(h - 1) ? (long)h - 1 : (long)floorf(fy1);
    for (long y = y0; y <= y1; y++) {
        float *row = out + (size_t)y * w;
        for (long x = x0; x <= x1; x++) {
            float cover = reach - segment_distance((float)x, (float)y, ax, ay, bx, by);
            if (cover > 1.0f)
                cover = 1.0f;
            if (cover > row[x])
                row[x] = cover;
        }
    }
}

int nc_strokes_render(const nc_strokes *s, float pen_width, float *out, uint32_t w, uint32_t h)
{
    int err = nc_strokes_check(s);
    if (err)
        return err;
    if (!out || !(pen_width > 0.0f) || pen_width > 64.0f)
        return -EINVAL;
    if (w == 0 || h == 0 || w > NC_STROKES_MAX_FIELD || h > NC_STROKES_MAX_FIELD)
        return -ERANGE;
    memset(out, 0, sizeof(float) * w * h);
    float r = pen_width * 0.5f;
    for (uint32_t k = 0; k < s->n_strokes; k++) {
        uint32_t a = s->start[k], b = s->start[k + 1];
        const float *p = s->xy;
        if (b - a == 1) {
            draw_capsule(out, w, h, p[2 * a], p[2 * a + 1], p[2 * a], p[2 * a + 1], r);
            continue;
        }
        for (uint32_t i = a; i + 1 < b; i++)
            draw_capsule(out, w, h, p[2 * i], p[2 * i + 1], p[2 * i + 2], p[2 * i + 3], r);
    }
    return 0;
}

int nc_strokes_mass_centre(const float *img, uint32_t w, uint32_t h, double *ret_x,
                           double *ret_y)
{
    if (!img || !ret_x || !ret_y)
        return -EINVAL;
    double sum = 0.0, sx = 0.0, sy = 0.0;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            double v = img[(size_t)y * w + x];
            sum += v;
            sx += v * x;
            sy += v * y;
        }
    if (!(sum > 0.0))
        return -ENOENT;
    *ret_x = sx / sum;
    *ret_y = sy / sum;
    return 0;
}

/* Move every point by (dx, dy). */
static void translate(nc_strokes *s, double dx, double dy)
{
    double m[6] = { 1.0, 0.0, dx, 0.0, 1.0, dy };
    nc_strokes_transform(s, m);
}

/* The shift along one axis that moves the mass centre c to target, limited
 * so the ink [lo, hi] (pen included) stays inside [0, size - 1] where it
 * can; sets *clamped when the limit applied. */
static double fit_shift(double c, double target, double lo, double hi, double size,
                        uint32_t *clamped)
{
    double d = target - c;
    double dmin = -lo, dmax = (size - 1.0) - hi;
    if (dmin > dmax)            /* wider than the field: centre the ink box */
        return (dmin + dmax) * 0.5;
    if (d < dmin) {
        *clamped = 1;
        return dmin;
    }
    if (d > dmax) {
        *clamped = 1;
        return dmax;
    }
    return d;
}

static int layout_check(const nc_strokes_layout *l)
{
    if (!l || l->size == 0 || l->size > NC_STROKES_MAX_FIELD || !(l->pen_width > 0.0f) ||
        l->pen_width > 64.0f)
        return -EINVAL;
    if (l->mode == NC_STROKES_BOX)
        return l->box > l->pen_width && l->box <= (float)l->size ? 0 : -EINVAL;
    if (l->mode == NC_STROKES_LINE)
        return l->ref_px > 0.0f && isfinite(l->ref_px) && isfinite(l->baseline_px) ? 0 : -EINVAL;
    return -EINVAL;
}

int nc_strokes_layout_apply(nc_strokes *s, const nc_strokes_layout *l, float ref, float baseline,
                            float *out, uint32_t *ret_flags)
{
    int err = nc_strokes_check(s);
    if (!err)
        err = layout_check(l);
    if (err)
        return err;
    if (!out)
        return -EINVAL;
    if (l->mode == NC_STROKES_LINE && (!(ref > 0.0f) || !isfinite(ref) || !isfinite(baseline)))
        return -EINVAL;

    const double size = l->size, r = l->pen_width * 0.5;
    const double centre = (double)(l->size / 2);
    uint32_t flags = 0;
    float box[4];
    nc_strokes_bbox(s, box);
    double bw = (double)box[2] - box[0], bh = (double)box[3] - box[1];
    double m[6] = { 1.0, 0.0, 0.0, 0.0, 1.0, 0.0 };

    if (l->mode == NC_STROKES_BOX) {
        /* The pen adds r on every side, so the skeleton's longer side gets
         * box - pen_width.  A lone dot has no side: it stays a dot. */
        double side = fmax(bw, bh);
        double k = side > 0.0 ? (l->box - l->pen_width) / side : 1.0;
        m[0] = m[4] = k;
        m[2] = centre - k * (box[0] + box[2]) * 0.5;
        m[5] = centre - k * (box[1] + box[3]) * 0.5;
    } else {
        double k = l->ref_px / ref;
        /* Too big for the field at the reference scale: shrink so the ink
         * box fits (a mis-segmented sample, a stray stroke). */
        double fit = fmin((size - 1.0 - 2.0 * r) / fmax(k * bw, 1e-9),
                          (size - 1.0 - 2.0 * r) / fmax(k * bh, 1e-9));
        if (fit < 1.0) {
            k *= fit;
            flags |= NC_STROKES_SHRUNK;
        }
        m[0] = m[4] = k;
        m[2] = centre - k * (box[0] + box[2]) * 0.5;
        m[5] = l->baseline_px - k * baseline;
    }
    nc_strokes_transform(s, m);

    /* Draw, measure the mass centre, shift, draw again. */
    err = nc_strokes_render(s, l->pen_width, out, l->size, l->size);
    if (err)
        return err;
    double cx, cy;
    if (nc_strokes_mass_centre(out, l->size, l->size, &cx, &cy) != 0) {
        /* Nothing landed in the field (the baseline put it outside): the
         * ink box's centre stands in for the mass centre. */
        nc_strokes_bbox(s, box);
        cx = (box[0] + box[2]) * 0.5;
        cy = (box[1] + box[3]) * 0.5;
    }
    nc_strokes_bbox(s, box);
    uint32_t cl = 0;
    double dx = fit_shift(cx, centre, box[0] - r, box[2] + r, size, &cl);
    double dy = l->mode == NC_STROKES_BOX ? fit_shift(cy, centre, box[1] - r, box[3] + r, size, &cl)
                                          : fit_shift(0.0, 0.0, box[1] - r, box[3] + r, size, &cl);
    if (cl)
        flags |= NC_STROKES_CLAMPED;
    translate(s, dx, dy);
    err = nc_strokes_render(s, l->pen_width, out, l->size, l->size);
    if (err)
        return err;
    if (ret_flags)
        *ret_flags = flags;
    return 0;
}

/* tools/render_common.c — see render_common.h. */
#include "render_common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

uint64_t nc_rng_next(uint64_t *s)
{
    *s ^= *s >> 12; *s ^= *s << 25; *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

double nc_rng_uniform(uint64_t *s)
{
    return (double)(nc_rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

double nc_rng_range(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * nc_rng_uniform(s);
}

double nc_rng_gauss(uint64_t *s)
{
    double u = nc_rng_uniform(s), v = nc_rng_uniform(s);
    return sqrt(-2.0 * log(u + 1e-300)) * cos(2 * NC_RENDER_PI * v);
}

float nc_fimg_get(const nc_fimg *f, long x, long y)
{
    if (x < 0 || y < 0 || x >= (long)f->w || y >= (long)f->h)
        return 0.0f;
    return f->v[(size_t)y * f->w + (size_t)x];
}

float nc_fimg_bilinear(const nc_fimg *f, double x, double y)
{
    double fx = floor(x), fy = floor(y);
    long x0 = (long)fx, y0 = (long)fy;
    double ax = x - fx, ay = y - fy;
    return (float)((1 - ay) * ((1 - ax) * nc_fimg_get(f, x0, y0) + ax * nc_fimg_get(f, x0 + 1, y0)) +
                   ay * ((1 - ax) * nc_fimg_get(f, x0, y0 + 1) + ax * nc_fimg_get(f, x0 + 1, y0 + 1)));
}

int nc_fimg_blur(float *img, uint32_t W, uint32_t H, double sigma)
{
    int r = (int)ceil(2.5 * sigma);
    if (r < 1)
        return 0;
    float k[64];
    if (r > 31)
        r = 31;
    double sum = 0;
    for (int i = -r; i <= r; i++)
        sum += k[i + r] = (float)exp(-0.5 * i * i / (sigma * sigma));
    for (int i = 0; i <= 2 * r; i++)
        k[i] /= (float)sum;
    float *tmp = malloc((size_t)W * H * sizeof *tmp);
    if (!tmp)
        return -ENOMEM;
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++) {
            float a = 0;
            for (int i = -r; i <= r; i++) {
                long xx = (long)x + i;
                xx = xx < 0 ? 0 : xx >= (long)W ? W - 1 : xx;
                a += k[i + r] * img[(size_t)y * W + xx];
            }
            tmp[(size_t)y * W + x] = a;
        }
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++) {
            float a = 0;
            for (int i = -r; i <= r; i++) {
                long yy = (long)y + i;
                yy = yy < 0 ? 0 : yy >= (long)H ? H - 1 : yy;
                a += k[i + r] * tmp[(size_t)yy * W + x];
            }
            img[(size_t)y * W + x] = a;
        }
    free(tmp);
    return 0;
}

int nc_fimg_value_noise(uint64_t *rng, uint32_t W, uint32_t H, uint32_t cell, double amp,
                        float *acc)
{
    uint32_t gw = W / cell + 2, gh = H / cell + 2;
    float *g = malloc((size_t)gw * gh * sizeof *g);
    if (!g)
        return -ENOMEM;
    for (size_t i = 0; i < (size_t)gw * gh; i++)
        g[i] = (float)(nc_rng_range(rng, -1, 1) * amp);
    nc_fimg gi = { gw, gh, g };
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++)
            acc[(size_t)y * W + x] += nc_fimg_bilinear(&gi, (double)x / cell, (double)y / cell);
    free(g);
    return 0;
}

void nc_warp_fwd(const nc_warp *w, double u, double v, double *x, double *y)
{
    double qx = u - w->uc, qy = v - w->vc, d = 1 + w->px * qx + w->py * qy;
    qx /= d; qy /= d;
    *x = w->fx + w->c * qx - w->s * qy;
    *y = w->fy + w->s * qx + w->c * qy;
}

/* r = R^T (X - f) = q / d, d = 1 + p.q, so q = r / (1 - p.r). */
void nc_warp_inv(const nc_warp *w, double x, double y, double *u, double *v)
{
    double dx = x - w->fx, dy = y - w->fy;
    double rx = w->c * dx + w->s * dy, ry = -w->s * dx + w->c * dy;
    double a = 1 - (w->px * rx + w->py * ry);
    *u = w->uc + rx / a;
    *v = w->vc + ry / a;
}

nc_rect nc_warp_box(const nc_warp *w, double u0, double v0, double u1, double v1,
                    uint32_t W, uint32_t H)
{
    double xs[4], ys[4];
    nc_warp_fwd(w, u0, v0, &xs[0], &ys[0]);
    nc_warp_fwd(w, u1, v0, &xs[1], &ys[1]);
    nc_warp_fwd(w, u0, v1, &xs[2], &ys[2]);
    nc_warp_fwd(w, u1, v1, &xs[3], &ys[3]);
    double x0 = xs[0], x1 = xs[0], y0 = ys[0], y1 = ys[0];
    for (int i = 1; i < 4; i++) {
        x0 = fmin(x0, xs[i]); x1 = fmax(x1, xs[i]);
        y0 = fmin(y0, ys[i]); y1 = fmax(y1, ys[i]);
    }
    /* pixel centres at integers: a box [u0, u1) in continuous coordinates
     * covers pixels ceil(u0 - 0.5) .. floor(u1 - 0.5) */
    long a = lround(x0), b = lround(y0), c = lround(x1), d = lround(y1);
    if (a < 0) a = 0;
    if (b < 0) b = 0;
    if (a > (long)W - 1) a = (long)W - 1;
    if (b > (long)H - 1) b = (long)H - 1;
    if (c > (long)W) c = W;
    if (d > (long)H) d = H;
    if (c <= a) c = a + 1;
    if (d <= b) d = b + 1;
    return (nc_rect){ (uint32_t)a, (uint32_t)b, (uint32_t)(c - a), (uint32_t)(d - b) };
}

int nc_digit_box(const uint8_t *px, uint32_t rows, uint32_t cols, uint8_t t, uint32_t b[4])
{
    b[0] = cols; b[1] = rows; b[2] = 0; b[3] = 0;
    for (uint32_t y = 0; y < rows; y++)
        for (uint32_t x = 0; x < cols; x++)
            if (px[y * cols + x] > t) {
                if (x < b[0]) b[0] = x;
                if (y < b[1]) b[1] = y;
                if (x + 1 > b[2]) b[2] = x + 1;
                if (y + 1 > b[3]) b[3] = y + 1;
            }
    return b[2] > b[0];
}

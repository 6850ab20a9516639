/* core/image/image.c — 8-bit image basics: allocation, views, bounding box,
 * centre of mass, histogram, Otsu's threshold and binarisation.
 *
 * Layer: core.  See image.h for the conventions (polarity, coordinates,
 * validation).  Resampling lives in image_resample.c, network input in
 * image_prep.c, connected components in image_components.c. */
#include "image.h"

#include <string.h>

int nc_image_check(const nc_image *img)
{
    if (!img || !img->pixels || img->width == 0 || img->height == 0)
        return -EINVAL;
    if (img->width > NC_IMAGE_MAX_DIM || img->height > NC_IMAGE_MAX_DIM)
        return -ERANGE;
    if (img->stride < img->width)
        return -EINVAL;
    return 0;
}

int nc_image_new(uint32_t width, uint32_t height, nc_image **ret_img)
{
    if (!ret_img || width == 0 || height == 0)
        return -EINVAL;
    if (width > NC_IMAGE_MAX_DIM || height > NC_IMAGE_MAX_DIM)
        return -ERANGE;
    /* Dims are capped, but check anyway: the cap may grow and size_t may
     * be 32-bit. */
    size_t npix, total;
    if (nc_size_mul(width, height, &npix) < 0 || npix > SIZE_MAX - sizeof(nc_image))
        return -EOVERFLOW;
    total = sizeof(nc_image) + npix;
    /* One block: the header, then the pixels, so one free releases both. */
    nc_image *img = calloc(1, total);
    if (!img)
        return -ENOMEM;
    img->width = width;
    img->height = height;
    img->stride = width;
    img->pixels = (uint8_t *)(img + 1);
    *ret_img = img;
    return 0;
}

void nc_image_free(nc_image *img)
{
    free(img);
}

int nc_image_dup(const nc_image *img, nc_image **ret_img)
{
    int err = nc_image_check(img);
    if (err < 0)
        return err;
    if (!ret_img)
        return -EINVAL;
    nc_image *copy;
    err = nc_image_new(img->width, img->height, &copy);
    if (err < 0)
        return err;
    for (uint32_t y = 0; y < img->height; y++)
        memcpy(copy->pixels + (size_t)y * copy->stride,
               img->pixels + (size_t)y * img->stride, img->width);
    *ret_img = copy;
    return 0;
}

int nc_image_view(uint8_t *pixels, uint32_t width, uint32_t height,
                  uint32_t stride, nc_image *ret_view)
{
    if (!ret_view)
        return -EINVAL;
    nc_image v = { width, height, stride ? stride : width, pixels };
    int err = nc_image_check(&v);
    if (err < 0)
        return err;
    *ret_view = v;
    return 0;
}

int nc_image_crop(const nc_image *img, nc_rect r, nc_image *ret_view)
{
    int err = nc_image_check(img);
    if (err < 0)
        return err;
    if (!ret_view)
        return -EINVAL;
    /* Written as subtractions so huge x/width cannot wrap past the check. */
    if (r.width == 0 || r.height == 0 ||
        r.x >= img->width || r.width > img->width - r.x ||
        r.y >= img->height || r.height > img->height - r.y)
        return -ERANGE;
    ret_view->width = r.width;
    ret_view->height = r.height;
    ret_view->stride = img->stride;
    ret_view->pixels = img->pixels + (size_t)r.y * img->stride + r.x;
    return 0;
}

int nc_image_invert(nc_image *img)
{
    int err = nc_image_check(img);
    if (err < 0)
        return err;
    for (uint32_t y = 0; y < img->height; y++) {
        uint8_t *row = img->pixels + (size_t)y * img->stride;
        for (uint32_t x = 0; x < img->width; x++)
            row[x] = (uint8_t)(255 - row[x]);
    }
    return 0;
}

int nc_image_bbox(const nc_image *img, uint8_t threshold, nc_rect *ret_box)
{
    int err = nc_image_check(img);
    if (err < 0)
        return err;
    if (!ret_box)
        return -EINVAL;
    uint32_t x0 = UINT32_MAX, y0 = UINT32_MAX, x1 = 0, y1 = 0;
    for (uint32_t y = 0; y < img->height; y++) {
        const uint8_t *row = img->pixels + (size_t)y * img->stride;
        for (uint32_t x = 0; x < img->width; x++) {
            if (row[x] <= threshold)
                continue;
            if (x < x0) x0 = x;
            if (x > x1) x1 = x;
            if (y0 == UINT32_MAX) y0 = y;
            y1 = y;
        }
    }
    if (y0 == UINT32_MAX)
        return -ENOENT;
    *ret_box = (nc_rect){ x0, y0, x1 - x0 + 1, y1 - y0 + 1 };
    return 0;
}

int nc_image_centroid(const nc_image *img, double *ret_x, double *ret_y)
{
    int err = nc_image_check(img);
    if (err < 0)
        return err;
    if (!ret_x || !ret_y)
        return -EINVAL;
    /* Integer sums are exact: 255 * 16384^2 * 16384 < 2^64. */
    uint64_t sum = 0, sum_x = 0, sum_y = 0;
    for (uint32_t y = 0; y < img->height; y++) {
        const uint8_t *row = img->pixels + (size_t)y * img->stride;
        uint64_t row_sum = 0;
        for (uint32_t x = 0; x < img->width; x++) {
            row_sum += row[x];
            sum_x += (uint64_t)row[x] * x;
        }
        sum += row_sum;
        sum_y += row_sum * y;
    }
    if (sum == 0)
        return -ENOENT;
    *ret_x = (double)sum_x / (double)sum;
    *ret_y = (double)sum_y / (double)sum;
    return 0;
}

int nc_image_histogram(const nc_image *img, uint64_t ret_hist[256])
{
    int err = nc_image_check(img);
    if (err < 0)
        return err;
    if (!ret_hist)
        return -EINVAL;
    uint64_t hist[256] = { 0 };
    for (uint32_t y = 0; y < img->height; y++) {
        const uint8_t *row = img->pixels + (size_t)y * img->stride;
        for (uint32_t x = 0; x < img->width; x++)
            hist[row[x]]++;
    }
    memcpy(ret_hist, hist, sizeof(hist));
    return 0;
}

int nc_image_otsu_histogram(const uint64_t hist[256], uint8_t *ret_threshold)
{
    if (!hist || !ret_threshold)
        return -EINVAL;
    /* Totals in double: counts reach 2^28 and level sums 2^36, well within
     * a double's exact range. */
    double total = 0, total_sum = 0;
    int levels = 0;
    for (int v = 0; v < 256; v++) {
        total += (double)hist[v];
        total_sum += (double)hist[v] * v;
        levels += hist[v] != 0;
    }
    if (levels < 2)
        return -ENOENT;
    /* Between-class variance for split "<= t | > t":
     *   w0 w1 (mu0 - mu1)^2, maximised over t.  A run of equal maxima occurs
     * when the levels between two occupied ones are empty; take its middle. */
    double w0 = 0, sum0 = 0, best = -1.0;
    int best_lo = 0, best_hi = 0;
    for (int t = 0; t < 255; t++) {
        w0 += (double)hist[t];
        sum0 += (double)hist[t] * t;
        double w1 = total - w0;
        if (w0 == 0 || w1 == 0)
            continue;
        double d = sum0 / w0 - (total_sum - sum0) / w1;
        double var = w0 * w1 * d * d;
        /* Relative tolerance so round-off does not split a tied run. */
        if (var > best * (1.0 + 1e-12)) {
            best = var;
            best_lo = best_hi = t;
        } else if (var >= best * (1.0 - 1e-12) && best_hi == t - 1) {
            best_hi = t;
        }
    }
    *ret_threshold = (uint8_t)((best_lo + best_hi) / 2);
    return 0;
}

int nc_image_otsu_threshold(const nc_image *img, uint8_t *ret_threshold)
{
    uint64_t hist[256];
    int err = nc_image_histogram(img, hist);
    if (err < 0)
        return err;
    return nc_image_otsu_histogram(hist, ret_threshold);
}

int nc_image_binarise(const nc_image *src, uint8_t threshold, nc_image *dst)
{
    int err = nc_image_check(src);
    if (err < 0)
        return err;
    err = nc_image_check(dst);
    if (err < 0)
        return err;
    if (dst->width != src->width || dst->height != src->height)
        return -EINVAL;
    /* Row by row, reading before writing each pixel, so dst == src works. */
    for (uint32_t y = 0; y < src->height; y++) {
        const uint8_t *in = src->pixels + (size_t)y * src->stride;
        uint8_t *o = dst->pixels + (size_t)y * dst->stride;
        for (uint32_t x = 0; x < src->width; x++)
            o[x] = in[x] > threshold ? 255 : 0;
    }
    return 0;
}

int nc_image_border_is_light(const nc_image *img)
{
    if (nc_image_check(img))
        return 0;
    uint64_t sum = 0, n = 0;
    const uint8_t *last = img->pixels + (size_t)(img->height - 1) * img->stride;
    for (uint32_t x = 0; x < img->width; x++) {
        sum += (uint64_t)img->pixels[x] + last[x];
        n += 2;
    }
    for (uint32_t y = 0; y < img->height; y++) {
        const uint8_t *row = img->pixels + (size_t)y * img->stride;
        sum += (uint64_t)row[0] + row[img->width - 1];
        n += 2;
    }
    return sum > 128 * n;
}

int nc_pgm_number(const uint8_t *buf, size_t len, size_t *pos, uint32_t *ret)
{
    if (!buf || !pos || !ret)
        return -EINVAL;
    size_t p = *pos;
    for (;;) {
        while (p < len && (buf[p] == ' ' || buf[p] == '\t' || buf[p] == '\n' || buf[p] == '\r'))
            p++;
        if (p < len && buf[p] == '#') {
            while (p < len && buf[p] != '\n')
                p++;
            continue;
        }
        break;
    }
    if (p >= len || buf[p] < '0' || buf[p] > '9')
        return -EBADMSG;
    uint64_t v = 0;
    while (p < len && buf[p] >= '0' && buf[p] <= '9') {
        v = v * 10 + (uint64_t)(buf[p] - '0');
        if (v > 1000000000u)
            return -ERANGE;
        p++;
    }
    *pos = p;
    *ret = (uint32_t)v;
    return 0;
}

/* daemon/split.c — see split.h. */
#include "split.h"

#include <stdlib.h>
#include <string.h>

static int by_x(const void *a, const void *b)
{
    const nc_component *p = a, *q = b;
    return p->box.x < q->box.x ? -1 : p->box.x > q->box.x;
}

int nc_split_digits(const nc_image *ink, nc_rect *boxes, uint32_t max, uint32_t *ret_n)
{
    uint8_t t;
    int err = nc_image_otsu_threshold(ink, &t);
    if (err == -ENOENT) {       /* one grey level: nothing written */
        *ret_n = 0;
        return 0;
    }
    if (err)
        return err;
    nc_image *bin = NULL;
    nc_component *comps = NULL;
    uint32_t n = 0, out = 0;
    if ((err = nc_image_dup(ink, &bin)) || (err = nc_image_binarise(bin, t, bin)))
        goto done;
    /* A page of noise could have a million specks; 4096 is far beyond any
     * honest line of digits and keeps the arrays small. */
    if ((err = nc_image_components(bin, 4096, NULL, &comps, &n)))
        goto done;
    uint32_t largest = 0;
    for (uint32_t i = 0; i < n; i++)
        if (comps[i].area > largest)
            largest = comps[i].area;
    uint32_t min_area = largest / 25 > 3 ? largest / 25 : 3;
    qsort(comps, n, sizeof *comps, by_x);
    for (uint32_t i = 0; i < n; i++) {
        nc_rect b = comps[i].box;
        if (comps[i].area < min_area)
            continue;
        if (out) {
            nc_rect *p = &boxes[out - 1];
            uint32_t lo = b.x > p->x ? b.x : p->x;
            uint32_t hi_b = b.x + b.width, hi_p = p->x + p->width;
            uint32_t hi = hi_b < hi_p ? hi_b : hi_p;
            uint32_t narrow = b.width < p->width ? b.width : p->width;
            if (hi > lo && 2 * (hi - lo) >= narrow) {
                uint32_t x0 = p->x < b.x ? p->x : b.x, y0 = p->y < b.y ? p->y : b.y;
                uint32_t x1 = hi_p > hi_b ? hi_p : hi_b;
                uint32_t y1 = p->y + p->height > b.y + b.height ? p->y + p->height
                                                                : b.y + b.height;
                *p = (nc_rect){ x0, y0, x1 - x0, y1 - y0 };
                continue;
            }
        }
        if (out == max) {
            err = -ERANGE;
            goto done;
        }
        boxes[out++] = b;
    }
    *ret_n = out;
done:
    free(comps);
    nc_image_free(bin);
    return err;
}

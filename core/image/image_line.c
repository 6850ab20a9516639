/* core/image/image_line.c — the cells NC_PREP_LINE reads: cut from a
 * segmented text line (nc_line_geometry, nc_line_cell in image.h).  A
 * whole request image cleaned without losing its frame is image_clean.c's
 * nc_image_clean_cell.
 *
 * Layer: core.  Why: a line-layout model learnt characters placed on their
 * line (size and height kept), so a character cut from a photo must be
 * placed the same way: the line's scale and baseline, not the character's
 * own box, decide where it sits in its cell. */
#include "image.h"

#include <stdlib.h>
#include <string.h>

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int nc_line_geometry(const nc_rect *boxes, uint32_t n, uint32_t *ret_scale,
                     uint32_t *ret_baseline)
{
    if (!boxes || n == 0 || !ret_scale || !ret_baseline)
        return -EINVAL;
    uint32_t *v = malloc((size_t)n * sizeof *v);
    if (!v)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        v[i] = boxes[i].height;
    qsort(v, n, sizeof *v, cmp_u32);
    /* core/segment's quantiles: the element at round(q (n - 1)) */
    const uint32_t scale = v[(3 * (size_t)(n - 1) + 2) / 4];
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (2 * (uint64_t)boxes[i].height >= scale)
            v[m++] = boxes[i].y + boxes[i].height;
    /* the box of the third quartile itself qualifies: m >= 1 */
    qsort(v, m, sizeof *v, cmp_u32);
    *ret_baseline = v[m / 2];
    *ret_scale = scale;
    free(v);
    return 0;
}

/* round(a * b / c) of a non-negative a, b and c > 0. */
static int64_t scaled(uint64_t a, uint64_t b, uint64_t c)
{
    return (int64_t)((2 * a * b + c) / (2 * c));
}

int nc_line_cell(const nc_image *patch, int64_t patch_y, uint32_t scale, int64_t baseline,
                 nc_image **ret_cell)
{
    int err = nc_image_check(patch);
    if (err < 0)
        return err;
    if (!ret_cell || scale == 0)
        return -EINVAL;
    /* frame rows [top, bottom) of the cell; scale is below 2^32, so these
     * stay far inside int64_t */
    int64_t top = baseline - scaled(NC_LINE_CELL_BASE, scale, NC_LINE_CELL_SCALE);
    int64_t bottom = top + scaled(NC_LINE_CELL_ROWS, scale, NC_LINE_CELL_SCALE);
    if (patch_y < top)
        top = patch_y;
    if (patch_y + (int64_t)patch->height > bottom)
        bottom = patch_y + (int64_t)patch->height;
    if (bottom - top > (int64_t)NC_IMAGE_MAX_DIM)
        return -ERANGE;
    nc_image *cell = NULL;
    if ((err = nc_image_new(patch->width, (uint32_t)(bottom - top), &cell)) < 0)
        return err;
    for (uint32_t y = 0; y < patch->height; y++)
        memcpy(cell->pixels + (size_t)(patch_y - top + y) * cell->stride,
               patch->pixels + (size_t)y * patch->stride, patch->width);
    *ret_cell = cell;
    return 0;
}

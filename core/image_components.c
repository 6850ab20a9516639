/* core/image_components.c — 8-connected component labelling with stats.
 *
 * Layer: core.  Union-find over pixel indices, no recursion, so a blob the
 * size of the whole image costs memory, not stack.
 *
 * Pass 1 (raster order): each foreground pixel p joins the sets of its
 * already-visited foreground neighbours W, NW, N, NE, or starts its own.
 * Sets are always linked larger root under smaller root, so every parent
 * index is <= its child's, and each root is its component's first pixel in
 * raster order.
 * Pass 2 (raster order): a root gets the next label; any other pixel takes
 * the label already written at its parent (parent < p, so visited).  The
 * same array holds parents before the sweep reaches them and labels after.
 * Pixel indices fit uint32_t because dimensions are capped at 2^14. */
#include "image.h"

#include <string.h>

#define BACKGROUND UINT32_MAX   /* pass 1 marker; no pixel has this index */

static uint32_t uf_find(uint32_t *parent, uint32_t p)
{
    /* Path halving: every other node on the path skips to its grandparent,
     * which keeps trees shallow without a second loop. */
    while (parent[p] != p) {
        parent[p] = parent[parent[p]];
        p = parent[p];
    }
    return p;
}

static void uf_union(uint32_t *parent, uint32_t a, uint32_t b)
{
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a < b)
        parent[b] = a;
    else if (b < a)
        parent[a] = b;
}

/* Wu, Otoo and Suzuki's decision tree: N is 8-adjacent to W, NW and NE,
 * so when N is ink p only joins N's set, with no union at all; otherwise
 * one of W / NW / NE is its parent and only NE (which touches neither W
 * nor NW) may need a union.  Most ink pixels thus cost one store.  p's
 * parent is always an earlier pixel, which keeps the invariant above. */
static void label_pass1(const nc_image *img, uint32_t *lab)
{
    const uint32_t w = img->width;
    for (uint32_t y = 0; y < img->height; y++) {
        const uint8_t *row = img->pixels + (size_t)y * img->stride;
        const uint8_t *up_row = y ? row - img->stride : NULL;
        uint32_t *L = lab + (size_t)y * w;
        for (uint32_t x = 0; x < w; x++) {
            uint32_t p = y * w + x;
            if (!row[x]) {
                L[x] = BACKGROUND;
                continue;
            }
            int n = up_row && up_row[x];
            int nw = up_row && x > 0 && up_row[x - 1];
            int ne = up_row && x + 1 < w && up_row[x + 1];
            int west = x > 0 && row[x - 1];
            if (n) {
                L[x] = p - w;
            } else if (west || nw) {
                L[x] = west ? p - 1 : p - w - 1;
                if (ne)
                    uf_union(lab, p, p - w + 1);
            } else if (ne) {
                L[x] = p - w + 1;
            } else {
                L[x] = p;
            }
        }
    }
}

/* Returns the number of labels; stops counting past limit (the caller then
 * reports -ERANGE, the array being scratch). */
static uint32_t label_pass2(uint32_t *lab, size_t n, uint32_t limit)
{
    uint32_t count = 0;
    for (size_t p = 0; p < n; p++) {
        if (lab[p] == BACKGROUND)
            lab[p] = 0;
        else if (lab[p] == p) {
            if (count == limit)
                return limit + 1;
            lab[p] = ++count;
        } else
            lab[p] = lab[lab[p]];
    }
    return count;
}

/* Fill c[0 .. count) from the final labels; sums is 2 count zeroed
 * scratch words (x and y coordinate sums need 64 bits: 2^28 x 2^14). */
static void component_stats(const uint32_t *lab, uint32_t w, uint32_t h,
                            nc_component *c, uint64_t *sums, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        c[i] = (nc_component){ { UINT32_MAX, UINT32_MAX, 0, 0 }, 0, 0, 0 };
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint32_t l = lab[(size_t)y * w + x];
            if (!l)
                continue;
            nc_component *k = &c[l - 1];
            /* box.width / height hold the far corner until the end */
            if (x < k->box.x) k->box.x = x;
            if (y < k->box.y) k->box.y = y;
            if (x > k->box.width) k->box.width = x;
            if (y > k->box.height) k->box.height = y;
            k->area++;
            sums[2 * (l - 1)] += x;
            sums[2 * (l - 1) + 1] += y;
        }
    for (uint32_t i = 0; i < count; i++) {
        c[i].box.width = c[i].box.width - c[i].box.x + 1;
        c[i].box.height = c[i].box.height - c[i].box.y + 1;
        c[i].cx = (double)sums[2 * i] / c[i].area;
        c[i].cy = (double)sums[2 * i + 1] / c[i].area;
    }
}

int nc_image_components(const nc_image *img, uint32_t max_components,
                        uint32_t *ret_labels, nc_component **ret_comps,
                        uint32_t *ret_count)
{
    int err = nc_image_check(img);
    if (err < 0)
        return err;
    if (!ret_comps || !ret_count)
        return -EINVAL;
    if (max_components > NC_IMAGE_MAX_COMPONENTS)
        return -ERANGE;
    size_t n, bytes;
    if (nc_size_mul(img->width, img->height, &n) < 0 ||
        nc_size_mul(n, sizeof(uint32_t), &bytes) < 0)
        return -EOVERFLOW;

    nc_component *comps = NULL;
    uint64_t *sums = NULL;
    /* Label straight into the caller's array when there is one: a camera
     * frame's labels are megabytes, and a fresh buffer per frame costs page
     * faults as well as the copy. */
    uint32_t *lab = ret_labels ? ret_labels : malloc(bytes);
    if (!lab)
        return -ENOMEM;
    label_pass1(img, lab);
    uint32_t count = label_pass2(lab, n, max_components);
    if (count > max_components) {
        err = -ERANGE;
        goto out;
    }
    if (count > 0) {
        comps = malloc((size_t)count * sizeof(*comps));
        sums = calloc((size_t)count * 2, sizeof(*sums));
        if (!comps || !sums) {
            err = -ENOMEM;
            goto out;
        }
        component_stats(lab, img->width, img->height, comps, sums, count);
    }
    *ret_comps = comps;
    *ret_count = count;
    comps = NULL;
    err = 0;
out:
    free(comps);
    free(sums);
    if (lab != ret_labels)
        free(lab);
    return err;
}

/* core/image/image_components.c — 8-connected component labelling with stats.
 *
 * Layer: core.  Works on runs, not pixels: a camera frame's ink is a few
 * per cent of its pixels and lies in short horizontal runs, so the union-find
 * has a few thousand nodes instead of a node per pixel, and the pixels are
 * read once.
 *
 * Pass 1 (raster order): each row's runs of non-zero pixels are found a
 * machine word at a time (paper is skipped 8 pixels per step).  A run joins
 * the sets of the previous row's runs it touches (8-connected: columns
 * overlap or meet at a corner), or starts its own.  Sets are always linked
 * larger root under smaller root, so every parent index is <= its child's,
 * and each root is its component's first run in raster order, the one that
 * holds the component's first pixel.
 * Pass 2 (run order): a root gets the next label; any other run takes the
 * label already written at its parent (parent < run, so visited).  The same
 * array holds parents before the sweep reaches them and labels after.
 * Pass 3 (run order): statistics per run (a run of n pixels from x0 adds
 * n to the area and n x0 + n (n - 1) / 2 to the x sum), and the label
 * array row by row: zeros between runs, the run's label along it.
 *
 * Labels and statistics are those of the per-pixel union-find this
 * replaced (tests/core/test_components.c checks against a flood fill). */
#include "image.h"

#include <string.h>

/* One run of ink: columns [x0, x1) of its row.  Dimensions are at most
 * NC_IMAGE_MAX_DIM = 2^14, so columns fit 16 bits. */
typedef struct run {
    uint16_t x0, x1;
    uint32_t parent;        /* pass 1: union-find parent; pass 2: label */
} run;

typedef struct runs {
    run *r;
    size_t n, cap, max;     /* max: most runs the image can hold */
    uint32_t *row_start;    /* runs of row y: [row_start[y], row_start[y+1]) */
} runs;

static uint32_t uf_find(run *r, uint32_t p)
{
    /* Path halving: every other node on the path skips to its grandparent,
     * which keeps trees shallow without a second loop. */
    while (r[p].parent != p) {
        r[p].parent = r[r[p].parent].parent;
        p = r[p].parent;
    }
    return p;
}

static void uf_union(run *r, uint32_t a, uint32_t b)
{
    a = uf_find(r, a);
    b = uf_find(r, b);
    if (a < b)
        r[b].parent = a;
    else if (b < a)
        r[a].parent = b;
}

static uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* 1 if none of the 8 bytes of v is zero (the classic has-zero-byte test). */
static int all_set(uint64_t v)
{
    return !((v - 0x0101010101010101ull) & ~v & 0x8080808080808080ull);
}

static int push_run(runs *rs, uint32_t x0, uint32_t x1)
{
    if (rs->n == rs->cap) {
        size_t cap = rs->cap * 2 < rs->max ? rs->cap * 2 : rs->max;
        run *n = realloc(rs->r, cap * sizeof *n);
        if (!n)
            return -ENOMEM;
        rs->r = n;
        rs->cap = cap;
    }
    rs->r[rs->n] = (run){ (uint16_t)x0, (uint16_t)x1, (uint32_t)rs->n };
    rs->n++;
    return 0;
}

/* Append the runs of one row, in x order.  Paper is crossed 32 pixels at
 * a time, then 8, long strokes 8 at a time; the ends of runs byte by
 * byte. */
static int find_runs(runs *rs, const uint8_t *row, uint32_t w)
{
    uint32_t x = 0;
    for (;;) {
        while (x + 32 <= w && !(load64(row + x) | load64(row + x + 8) |
                                load64(row + x + 16) | load64(row + x + 24)))
            x += 32;
        while (x + 8 <= w && !load64(row + x))
            x += 8;
        while (x < w && !row[x])
            x++;
        if (x == w)
            return 0;
        uint32_t x0 = x;
        while (x + 8 <= w && all_set(load64(row + x)))
            x += 8;
        while (x < w && row[x])
            x++;
        int err = push_run(rs, x0, x);
        if (err < 0)
            return err;
    }
}

/* Join each run of row [a, b) with the runs of the previous row [pa, pb)
 * it touches.  Both lists are in x order, so one sweep finds all pairs.
 * A run's first neighbour becomes its parent (no find needed on itself, a
 * fresh singleton); further ones are unions. */
static void join_rows(run *r, uint32_t pa, uint32_t pb, uint32_t a, uint32_t b)
{
    uint32_t k = pa;
    for (uint32_t i = a; i < b; i++) {
        uint32_t c0 = r[i].x0, c1 = r[i].x1;
        /* previous runs ending left of c0 - 1 touch neither this run nor
         * any later one */
        while (k < pb && r[k].x1 < c0)
            k++;
        int joined = 0;
        for (uint32_t j = k; j < pb && r[j].x0 <= c1; j++) {
            if (!joined) {
                r[i].parent = uf_find(r, j);
                joined = 1;
            } else
                uf_union(r, i, j);
        }
    }
}

/* Pass 1 over the whole image. */
static int label_runs(const nc_image *img, runs *rs)
{
    for (uint32_t y = 0; y < img->height; y++) {
        rs->row_start[y] = (uint32_t)rs->n;
        int err = find_runs(rs, img->pixels + (size_t)y * img->stride, img->width);
        if (err < 0)
            return err;
        if (y)
            join_rows(rs->r, rs->row_start[y - 1], rs->row_start[y], rs->row_start[y],
                      (uint32_t)rs->n);
    }
    rs->row_start[img->height] = (uint32_t)rs->n;
    return 0;
}

/* Pass 2.  Returns the number of labels; stops counting past limit (the
 * caller then reports -ERANGE). */
static uint32_t resolve_labels(run *r, size_t n, uint32_t limit)
{
    uint32_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].parent == i) {
            if (count == limit)
                return limit + 1;
            r[i].parent = ++count;
        } else
            r[i].parent = r[r[i].parent].parent;
    }
    return count;
}

/* Pass 3: c[0 .. count) from the runs; sums is 2 count zeroed scratch
 * words (x and y coordinate sums need 64 bits: 2^28 x 2^14). */
static void component_stats(const runs *rs, uint32_t h, nc_component *c, uint64_t *sums,
                            uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        c[i] = (nc_component){ { UINT32_MAX, UINT32_MAX, 0, 0 }, 0, 0, 0 };
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t i = rs->row_start[y]; i < rs->row_start[y + 1]; i++) {
            const run *u = &rs->r[i];
            uint32_t l = u->parent - 1, len = u->x1 - u->x0;
            nc_component *k = &c[l];
            /* box.width / height hold the far corner until the end */
            if (u->x0 < k->box.x) k->box.x = u->x0;
            if (y < k->box.y) k->box.y = y;
            if (u->x1 - 1u > k->box.width) k->box.width = u->x1 - 1u;
            if (y > k->box.height) k->box.height = y;
            k->area += len;
            sums[2 * l] += (uint64_t)len * u->x0 + (uint64_t)len * (len - 1) / 2;
            sums[2 * l + 1] += (uint64_t)len * y;
        }
    for (uint32_t i = 0; i < count; i++) {
        c[i].box.width = c[i].box.width - c[i].box.x + 1;
        c[i].box.height = c[i].box.height - c[i].box.y + 1;
        c[i].cx = (double)sums[2 * i] / c[i].area;
        c[i].cy = (double)sums[2 * i + 1] / c[i].area;
    }
}

/* The label array, dense (stride = width), one row at a time; the zeros
 * between runs only with zeros set. */
static void write_labels(const runs *rs, uint32_t w, uint32_t h, uint32_t *lab, int zeros)
{
    for (uint32_t y = 0; y < h; y++) {
        uint32_t *L = lab + (size_t)y * w, x = 0;
        for (uint32_t i = rs->row_start[y]; i < rs->row_start[y + 1]; i++) {
            const run *u = &rs->r[i];
            if (zeros)
                memset(L + x, 0, (u->x0 - x) * sizeof *L);
            for (x = u->x0; x < u->x1; x++)
                L[x] = u->parent;
        }
        if (zeros)
            memset(L + x, 0, (w - x) * sizeof *L);
    }
}

static int components(const nc_image *img, uint32_t max_components, uint32_t *ret_labels,
                      int zeros, nc_component **ret_comps, uint32_t *ret_count)
{
    int err = nc_image_check(img);
    if (err < 0)
        return err;
    if (!ret_comps || !ret_count)
        return -EINVAL;
    if (max_components > NC_IMAGE_MAX_COMPONENTS)
        return -ERANGE;
    const uint32_t w = img->width, h = img->height;
    /* a row holds at most ceil(w / 2) runs; start small, since ink is
     * sparse, and grow by doubling */
    runs rs = { .max = (size_t)h * ((w + 1) / 2) };
    rs.cap = rs.max < 4096 ? rs.max : 4096;
    rs.r = malloc(rs.cap * sizeof *rs.r);
    rs.row_start = malloc(((size_t)h + 1) * sizeof *rs.row_start);
    nc_component *comps = NULL;
    uint64_t *sums = NULL;
    err = -ENOMEM;
    if (!rs.r || !rs.row_start)
        goto out;
    if ((err = label_runs(img, &rs)) < 0)
        goto out;
    uint32_t count = resolve_labels(rs.r, rs.n, max_components);
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
        component_stats(&rs, h, comps, sums, count);
    }
    if (ret_labels)
        write_labels(&rs, w, h, ret_labels, zeros);
    *ret_comps = comps;
    *ret_count = count;
    comps = NULL;
    err = 0;
out:
    free(comps);
    free(sums);
    free(rs.r);
    free(rs.row_start);
    return err;
}

int nc_image_components(const nc_image *img, uint32_t max_components,
                        uint32_t *ret_labels, nc_component **ret_comps,
                        uint32_t *ret_count)
{
    return components(img, max_components, ret_labels, 1, ret_comps, ret_count);
}

int nc_image_components_ink(const nc_image *img, uint32_t max_components,
                            uint32_t *ret_labels, nc_component **ret_comps,
                            uint32_t *ret_count)
{
    if (!ret_labels)
        return -EINVAL;
    return components(img, max_components, ret_labels, 0, ret_comps, ret_count);
}

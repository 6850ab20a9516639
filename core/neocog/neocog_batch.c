/* core/neocog/neocog_batch.c — form B: one S-layer over several inputs at once
 * (the CPU engine's passes: a committee member's views of a batch of
 * digits), bit-identical to form F on each.
 *
 * Layer: core.  Why: the shipped neocognitron's US4 holds 2,000-2,400 planes
 * over 248 x 69 (kappa, tap) rows, 150 MB of weights a member, and form F
 * streams nearly all of them from memory for every pass (its input, UC3, has
 * non-zero cells in most planes somewhere), so one pass costs ~15 ms however
 * sparse the work is.  Form B reads the weights once for all n passes:
 *
 *  1. per pass, per output position o, the list of its non-zero inputs in
 *     the order form F adds them (input positions ascending through the
 *     inverse index, planes ascending), each entry the value u and the
 *     weight row (kappa, t) it multiplies;
 *  2. for each tile of 64 output planes, for each pass and position: 64
 *     accumulators in registers run down the position's list, one weight
 *     load per multiply-add, and are stored once.  The weights come from a
 *     pack, a copy laid out tile after tile ([row][64] floats, made once at
 *     load): a tile of US4 is 17k rows x 256 B, contiguous, read from memory
 *     once and then from the caches by every pass (in place, rows 9 kB apart,
 *     each access would be a TLB miss);
 *  3. form F's own finishing step (the V-cell and the threshold).
 *
 * Every output cell adds the same products in the same order as form F
 * (multiply then add, no fused multiply-add in any clone), starting from the
 * same 0, so the layer is bit-for-bit form F's: the engine's answers do not
 * move.  The lists cost 8 bytes per (non-zero input cell, output it
 * reaches), ~200 kB a US4 pass, allocated per call.  A serving engine hands
 * the dense weights over to the pack (nc_neocog_packs_take), so they are
 * held once.
 *
 * Measured on the shipped file's member 0 (24 passes at once, one core of
 * the 2-core dev machine while others ran, thread CPU time): US4 4.1 ms a
 * pass against form F's 12-15 ms.  The kernel is bound by moving each
 * term's 256 B row slice from L2/L3 (~10 cycles a term where an L1-resident
 * row takes 5).  What did not help there: splitting the input planes into
 * chunks whose rows fit L2 (the same time, and no longer form F's order),
 * 128-plane tiles (register spills), an AVX-512 clone, fused multiply-add,
 * more passes at once (48), skipping terms whose row slice is all zero
 * (a quarter of them; the compaction cost more than it saved), and an
 * 8-plane block-sparse pack (the weights are 13 % non-zero but 43 % of
 * 8-plane blocks are: 2x slower, read-modify-writes of the outputs). */
#include "neocog_impl.h"

#include <stdlib.h>
#include <string.h>

/* One term of an output position's sum: u times weight row `row` =
 * kappa * n_live + t. */
typedef struct b_term {
    uint32_t row;
    float u;
} b_term;

#if defined(__GNUC__)
#define B_AHEAD 16      /* terms ahead to prefetch: the rows come from L3 */
typedef float b_v8 __attribute__((vector_size(32), aligned(4), may_alias));
#define BV(p) (*(const b_v8 *)(p))

/* eo[0 .. 8 NV) = sum over the terms of u * a[row][0 .. 8 NV) (a: one tile
 * of the pack, rows 8 NV floats), terms in order, from 0: each lane adds
 * form F's products in form F's order.  NV vectors of 8 planes. */
#define B_KERNEL(NV)                                                              \
    static inline void b_kernel_##NV(float *restrict eo, const float *restrict a,  \
                                     const b_term *restrict tm, uint32_t n)        \
    {                                                                             \
        b_v8 acc[NV];                                                             \
        for (int v = 0; v < NV; v++)                                              \
            acc[v] = (b_v8){ 0 };                                                 \
        for (uint32_t j = 0; j < n; j++) {                                        \
            const float *w = a + (size_t)tm[j].row * (8 * NV);                    \
            if (j + B_AHEAD < n)                                                  \
                for (int v = 0; v < NV; v += 2)                                   \
                    __builtin_prefetch(a + (size_t)tm[j + B_AHEAD].row * (8 * NV) + 8 * v); \
            const float u = tm[j].u;                                              \
            for (int v = 0; v < NV; v++)                                          \
                acc[v] += u * BV(w + 8 * v);                                      \
        }                                                                         \
        for (int v = 0; v < NV; v++)                                              \
            *(b_v8 *)(eo + 8 * v) = acc[v];                                       \
    }
#else
#define B_KERNEL(NV)                                                              \
    static inline void b_kernel_##NV(float *restrict eo, const float *restrict a,  \
                                     const b_term *restrict tm, uint32_t n)        \
    {                                                                             \
        float acc[8 * NV] = { 0 };                                                \
        for (uint32_t j = 0; j < n; j++)                                          \
            for (int i = 0; i < 8 * NV; i++)                                      \
                acc[i] += tm[j].u * a[(size_t)tm[j].row * (8 * NV) + i];          \
        memcpy(eo, acc, sizeof acc);                                              \
    }
#endif
B_KERNEL(8)
B_KERNEL(7)
B_KERNEL(6)
B_KERNEL(5)
B_KERNEL(4)
B_KERNEL(3)
B_KERNEL(2)
B_KERNEL(1)

/* Terms of every (pass, position) and each one's V-cell sum.  term_ptr has
 * n * n_o + 1 entries, list (p, o) at p * n_o + o; v2 n * n_o floats. */
typedef struct b_lists {
    b_term *term;
    size_t *term_ptr;
    float *v2;
} b_lists;

/* Non-zero cells of input position i (planes ascending) into kap/val, and
 * the position's sum of squares over every plane in order, as form F sums
 * it.  Returns the count. */
static uint32_t b_cells(const float *restrict ui, uint32_t k_in, uint32_t *restrict kap,
                        float *restrict val, float *ret_uu)
{
    float uu = 0.0f;
    uint32_t c = 0;
    for (uint32_t k = 0; k < k_in; k++) {
        uu += ui[k] * ui[k];
        if (ui[k] != 0.0f) {
            kap[c] = k;
            val[c++] = ui[k];
        }
    }
    *ret_uu = uu;
    return c;
}

/* Terms of pass p: the non-zero cells each output position reads. */
static size_t b_count(const nc_neocog_s_args *s, const float *in, uint32_t *nnz)
{
    const nc_neocog_index *ix = s->ix;
    const size_t n_i = (size_t)ix->n_in * ix->n_in, n_o = (size_t)ix->n_out * ix->n_out;
    for (size_t i = 0; i < n_i; i++) {
        uint32_t c = 0;
        for (uint32_t k = 0; k < s->k_in; k++)
            c += in[i * s->in_stride + k] != 0.0f;
        nnz[i] = c;
    }
    size_t need = 0;
    for (size_t o = 0; o < n_o; o++)
        for (int32_t j = ix->gat_ptr[o]; j < ix->gat_ptr[o + 1]; j++)
            need += nnz[ix->gat_in[j]];
    return need;
}

/* Build the lists of n passes.  Every buffer is allocated once, at its
 * exact size (the same sizes call after call come back from the heap
 * without new pages).  Returns 0 or -ENOMEM. */
static int b_build(const nc_neocog_s_args *s, uint32_t n, const float *const *in,
                   b_lists *L)
{
    const nc_neocog_index *ix = s->ix;
    const uint32_t nl = ix->n_live;
    const size_t n_i = (size_t)ix->n_in * ix->n_in, n_o = (size_t)ix->n_out * ix->n_out;
    /* non-zero cells of input position i: [cptr[i], cptr[i + 1]) of kap, val */
    size_t *cptr = malloc((n_i + 1) * sizeof *cptr);
    uint32_t *kap = malloc(n_i * s->k_in * sizeof *kap);
    float *val = malloc(n_i * s->k_in * sizeof *val), *uu = malloc(n_i * sizeof *uu);
    L->term_ptr = malloc(((size_t)n * n_o + 1) * sizeof *L->term_ptr);
    L->v2 = malloc(n * n_o * sizeof *L->v2);
    L->term = NULL;
    int err = cptr && kap && val && uu && L->term_ptr && L->v2 ? 0 : -ENOMEM;
    size_t need = 0, used = 0;
    for (uint32_t p = 0; !err && p < n; p++)
        need += b_count(s, in[p], kap);
    if (!err && !(L->term = malloc((need ? need : 1) * sizeof *L->term)))
        err = -ENOMEM;
    for (uint32_t p = 0; !err && p < n; p++) {
        cptr[0] = 0;
        for (size_t i = 0; i < n_i; i++)
            cptr[i + 1] = cptr[i] + b_cells(in[p] + i * s->in_stride, s->k_in,
                                            kap + cptr[i], val + cptr[i], &uu[i]);
        for (size_t o = 0; o < n_o; o++) {
            float v2 = 0.0f;
            L->term_ptr[p * n_o + o] = used;
            for (int32_t j = ix->gat_ptr[o]; j < ix->gat_ptr[o + 1]; j++) {
                const size_t i = (size_t)ix->gat_in[j];
                const uint32_t t = (uint32_t)ix->gat_tap[j];
                v2 += s->c[t] * uu[i];
                for (size_t q = cptr[i]; q < cptr[i + 1]; q++)
                    L->term[used++] = (b_term){ kap[q] * nl + t, val[q] };
            }
            L->v2[p * n_o + o] = v2;
        }
    }
    if (!err)
        L->term_ptr[(size_t)n * n_o] = used;
    free(cptr);
    free(kap);
    free(val);
    free(uu);
    return err;
}

/* Tiles of a pack: planes [k0, k0 + w) with w = 64 while 64 remain, then
 * the rest in one tile (ks is a multiple of 8): 8 vectors of accumulators
 * at most, which with the broadcast value fill AVX2's 16 registers (the
 * weights are memory operands), and as many as there are planes so that
 * each list is walked once a tile (US3's 248 planes: 64, 64, 64, 56). */
static uint32_t b_tile_width(uint32_t ks, uint32_t k0)
{
    const uint32_t r = ks - k0;
    return r >= 64 ? 64 : r;
}

struct nc_neocog_s_pack {
    uint32_t k_in, n_live, k_out;   /* what it was made for */
    float *w;           /* tile after tile: [k_in * n_live][width] each */
};

int nc_neocog_s_pack_new(const nc_neocog_s_args *s, nc_neocog_s_pack **ret)
{
    if (!s || !s->ix || !s->a || !ret || s->k_in < 1 || s->k_out < 1)
        return -EINVAL;
    const uint32_t ks = nc_neocog_kstride(s->k_out);
    const size_t rows = (size_t)s->k_in * s->ix->n_live;
    nc_neocog_s_pack *pk = calloc(1, sizeof *pk);
    float *w = pk ? aligned_alloc(64, (rows * ks * sizeof(float) + 63) & ~(size_t)63) : NULL;
    if (!w) {
        free(pk);
        return -ENOMEM;
    }
    float *cur = w;
    for (uint32_t k0 = 0; k0 < ks; k0 += b_tile_width(ks, k0)) {
        const uint32_t tw = b_tile_width(ks, k0);
        for (size_t r = 0; r < rows; r++, cur += tw)
            memcpy(cur, s->a + r * ks + k0, tw * sizeof(float));
    }
    *pk = (nc_neocog_s_pack){ s->k_in, s->ix->n_live, s->k_out, w };
    *ret = pk;
    return 0;
}

void nc_neocog_s_pack_free(nc_neocog_s_pack *pk)
{
    if (!pk)
        return;
    free(pk->w);
    free(pk);
}

/* Every pass's e over planes [k0, k0 + w); a: the pack's tile.  The tile
 * (17k rows x 256 B for US4) stays in the caches while all n passes use it. */
NC_NEOCOG_HOT
static void b_tile(const nc_neocog_s_args *s, const float *a, uint32_t n, float *const *out,
                   const b_lists *L, uint32_t k0, uint32_t w)
{
    const uint32_t ks = nc_neocog_kstride(s->k_out);
    const size_t n_o = (size_t)s->ix->n_out * s->ix->n_out;
    for (size_t q = 0; q < (size_t)n * n_o; q++) {
        const b_term *tm = L->term + L->term_ptr[q];
        const uint32_t nt = (uint32_t)(L->term_ptr[q + 1] - L->term_ptr[q]);
        float *eo = out[q / n_o] + (q % n_o) * ks + k0;
        switch (w) {
        case 64: b_kernel_8(eo, a, tm, nt); break;
        case 56: b_kernel_7(eo, a, tm, nt); break;
        case 48: b_kernel_6(eo, a, tm, nt); break;
        case 40: b_kernel_5(eo, a, tm, nt); break;
        case 32: b_kernel_4(eo, a, tm, nt); break;
        case 24: b_kernel_3(eo, a, tm, nt); break;
        case 16: b_kernel_2(eo, a, tm, nt); break;
        default: b_kernel_1(eo, a, tm, nt); break;
        }
    }
}

int nc_neocog_s_forward_many(const nc_neocog_s_args *s, const nc_neocog_s_pack *pk,
                             uint32_t n, const float *const *in, float *const *out)
{
    if (!s || !s->ix || (!s->a && !pk) || !s->b || !s->c || !in || !out || n == 0 ||
        s->k_in < 1 || s->k_in > s->in_stride || s->k_out < 1 ||
        s->k_out > NC_NEOCOG_MAX_PLANES || !(s->theta > 0.0f && s->theta < 1.0f) ||
        (pk && (pk->k_in != s->k_in || pk->n_live != s->ix->n_live || pk->k_out != s->k_out)))
        return -EINVAL;
    for (uint32_t p = 0; p < n; p++)
        if (!in[p] || !out[p])
            return -EINVAL;
    const uint32_t ks = nc_neocog_kstride(s->k_out);
    const size_t n_o = (size_t)s->ix->n_out * s->ix->n_out;
    const size_t rows = (size_t)s->k_in * s->ix->n_live;
    nc_neocog_s_pack *own = NULL;
    int err = pk ? 0 : nc_neocog_s_pack_new(s, &own);
    if (err)
        return err;
    b_lists L;
    err = b_build(s, n, in, &L);
    if (!err) {
        const float *a = pk ? pk->w : own->w;
        for (uint32_t k0 = 0; k0 < ks;) {
            const uint32_t w = b_tile_width(ks, k0);
            b_tile(s, a, n, out, &L, k0, w);
            a += rows * w;
            k0 += w;
        }
        for (uint32_t p = 0; p < n; p++)
            nc_neocog_s_finish_(out[p], L.v2 + p * n_o, s->b, s->theta, ks, ks, n_o);
    }
    free(L.term);
    free(L.term_ptr);
    free(L.v2);
    nc_neocog_s_pack_free(own);
    return err;
}

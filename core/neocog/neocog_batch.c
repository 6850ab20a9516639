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
 *  1. per pass, the non-zero cells of each input position (planes
 *     ascending) and each output position's V-cell sum;
 *  2. for each tile of 128 output planes (AVX-512; 64 with AVX2), tap by
 *     tap: for each pass and output position, the tile's accumulators in
 *     registers load what the earlier taps left, run down the non-zero
 *     cells of the input position the tap reads, one weight load per
 *     multiply-add, and are stored back.  The weights come from a pack, a
 *     copy laid out tile after tile and, within a tile, tap after tap
 *     ([t][kappa][width] floats, made once at load): the tap's block (US4:
 *     233 rows x 512 B, 120 kB) stays in L2 while every pass and position
 *     uses it, where rows in form F's order would come from all over an
 *     8 MB tile;
 *  3. form F's own finishing step (the V-cell and the threshold).
 *
 * Every output cell adds the same products in the same order as form F
 * (taps ascending, planes ascending within a tap; multiply then add, no
 * fused multiply-add in any kernel), starting from the same 0, so the
 * layer is bit-for-bit form F's whatever the tile width: the engine's
 * answers do not move.  The lists cost 8 bytes per non-zero input cell
 * plus the positions' offsets, allocated per call.  A serving engine hands
 * the dense weights over to the pack (nc_neocog_packs_take), so they are
 * held once.
 *
 * Measured on the shipped file's member 3 (24 passes at once, one core of
 * the busy 2-core AMD EPYC dev machine, thread CPU time, best of 6): US4
 * 2.5-2.6 ms a pass (3.1 with 64-plane AVX2 tiles), against 3.7-3.9 ms
 * with each (pass, position) running down its whole list in form F's
 * order (rows from L3) and form F's 8.6 ms.  The kernel is now bound by
 * its arithmetic: 26,800 non-zero inputs x 2,405 planes a pass, a multiply
 * and an add each (US4's weights are 14 % non-zero, but 38 % of the
 * products of non-zero inputs are, and 84 % of 8-plane blocks of them: too
 * dense for sparse kernels).  What did not help: 256-plane AVX-512 tiles
 * (slower), splitting the taps' blocks into chunks of input planes that
 * fit L1 (more loads and stores of the accumulators than the L2 reads
 * saved: slower), this form for US3 (its positions read ~2 non-zero cells
 * each: form F's scatter is as fast), more passes at once (48), 128-plane
 * tiles in AVX2 (register spills), fused multiply-add, skipping terms
 * whose row slice is all zero, and an 8-plane block-sparse pack (2x
 * slower, read-modify-writes of the outputs). */
#include "neocog_impl.h"

#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
typedef float b_v8 __attribute__((vector_size(32), aligned(4), may_alias));
#define BV(p) (*(const b_v8 *)(p))

/* eo[0 .. 8 NV) += val[j] * a[kap[j]][0 .. 8 NV) for j in order (a: one tap's
 * block of a tile of the pack, rows 8 NV floats): each lane adds form F's
 * products in form F's order onto what the earlier taps left there.  NV
 * vectors of 8 planes. */
#define B_KERNEL(NV)                                                              \
    static inline void b_kernel_##NV(float *restrict eo, const float *restrict a,  \
                                     const uint32_t *restrict kap,                \
                                     const float *restrict val, uint32_t n)        \
    {                                                                             \
        b_v8 acc[NV];                                                             \
        for (int v = 0; v < NV; v++)                                              \
            acc[v] = BV(eo + 8 * v);                                              \
        for (uint32_t j = 0; j < n; j++) {                                        \
            const float *w = a + (size_t)kap[j] * (8 * NV);                       \
            const float u = val[j];                                               \
            for (int v = 0; v < NV; v++)                                          \
                acc[v] += u * BV(w + 8 * v);                                      \
        }                                                                         \
        for (int v = 0; v < NV; v++)                                              \
            *(b_v8 *)(eo + 8 * v) = acc[v];                                       \
    }
#else
#define B_KERNEL(NV)                                                              \
    static inline void b_kernel_##NV(float *restrict eo, const float *restrict a,  \
                                     const uint32_t *restrict kap,                \
                                     const float *restrict val, uint32_t n)        \
    {                                                                             \
        float acc[8 * NV];                                                        \
        memcpy(acc, eo, sizeof acc);                                              \
        for (uint32_t j = 0; j < n; j++)                                          \
            for (int i = 0; i < 8 * NV; i++)                                      \
                acc[i] += val[j] * a[(size_t)kap[j] * (8 * NV) + i];              \
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

/* The non-zero cells of every pass's input, position by position, and each
 * output position's V-cell sum.  Cells of pass p's input position i are
 * [cptr[p * (n_i + 1) + i], cptr[p * (n_i + 1) + i + 1]) of kap (its plane)
 * and val (its value), planes ascending; v2 n * n_o floats; oi[t * n_o + o]
 * the input position output o reads through live tap t, -1 where the
 * window is clipped there. */
typedef struct b_lists {
    size_t *cptr;
    uint32_t *kap;
    float *val;
    float *v2;
    int32_t *oi;
} b_lists;

static void b_lists_free(b_lists *L)
{
    free(L->cptr);
    free(L->kap);
    free(L->val);
    free(L->v2);
    free(L->oi);
}

/* Build the lists of n passes, each buffer allocated once at its exact
 * size.  v2 as form F sums it: over the position's gather entries in order
 * (taps ascending), c[t] times the input position's sum of squares over
 * every plane in order.  Returns 0 or -ENOMEM. */
static int b_build(const nc_neocog_s_args *s, uint32_t n, const float *const *in,
                   b_lists *L)
{
    const nc_neocog_index *ix = s->ix;
    const uint32_t nl = ix->n_live;
    const size_t n_i = (size_t)ix->n_in * ix->n_in, n_o = (size_t)ix->n_out * ix->n_out;
    size_t nnz = 0;
    for (uint32_t p = 0; p < n; p++)
        for (size_t i = 0; i < n_i; i++)
            for (uint32_t k = 0; k < s->k_in; k++)
                nnz += in[p][i * s->in_stride + k] != 0.0f;
    L->cptr = malloc((size_t)n * (n_i + 1) * sizeof *L->cptr);
    L->kap = malloc((nnz ? nnz : 1) * sizeof *L->kap);
    L->val = malloc((nnz ? nnz : 1) * sizeof *L->val);
    L->v2 = malloc((size_t)n * n_o * sizeof *L->v2);
    L->oi = malloc((size_t)nl * n_o * sizeof *L->oi);
    float *uu = malloc(n_i * sizeof *uu);
    int err = L->cptr && L->kap && L->val && L->v2 && L->oi && uu ? 0 : -ENOMEM;
    for (size_t q = 0; !err && q < (size_t)nl * n_o; q++)
        L->oi[q] = -1;
    for (size_t o = 0; !err && o < n_o; o++)
        for (int32_t j = ix->gat_ptr[o]; j < ix->gat_ptr[o + 1]; j++)
            L->oi[(size_t)ix->gat_tap[j] * n_o + o] = ix->gat_in[j];
    size_t used = 0;
    for (uint32_t p = 0; !err && p < n; p++) {
        size_t *cp = L->cptr + (size_t)p * (n_i + 1);
        for (size_t i = 0; i < n_i; i++) {
            const float *ui = in[p] + i * s->in_stride;
            float q = 0.0f;
            cp[i] = used;
            for (uint32_t k = 0; k < s->k_in; k++) {
                q += ui[k] * ui[k];
                if (ui[k] != 0.0f) {
                    L->kap[used] = k;
                    L->val[used++] = ui[k];
                }
            }
            uu[i] = q;
        }
        cp[n_i] = used;
        for (size_t o = 0; o < n_o; o++) {
            float v2 = 0.0f;
            for (int32_t j = ix->gat_ptr[o]; j < ix->gat_ptr[o + 1]; j++)
                v2 += s->c[ix->gat_tap[j]] * uu[ix->gat_in[j]];
            L->v2[(size_t)p * n_o + o] = v2;
        }
    }
    free(uu);
    return err;
}

/* Tiles of a pack: planes [k0, k0 + w) with w = wide (64, or 128 where the
 * AVX-512 kernel runs) while that many remain, then 64 while 64 remain,
 * then the rest in one tile (ks is a multiple of 8): 8 vectors of
 * accumulators at most, which with the broadcast value fill AVX2's 16
 * registers (the weights are memory operands), or 8 of AVX-512's 32, and
 * as many as there are planes so that each list is walked once a tile
 * (US3's 248 planes: 64, 64, 64, 56). */
static uint32_t b_tile_width(uint32_t ks, uint32_t k0, uint32_t wide)
{
    const uint32_t r = ks - k0;
    return r >= wide ? wide : r >= 64 ? 64 : r;
}

/* The widest tile this machine runs: 128 planes where the AVX-512 kernel
 * below can (half the instructions a term of AVX2's 64-plane kernel takes
 * per plane; the same multiplies and adds lane by lane), else 64. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    defined(__ELF__) && !defined(NC_NO_TARGET_CLONES)
#define B_WIDE 1
static uint32_t b_wide(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? 128u : 64u;
}
#else
#define B_WIDE 0
static uint32_t b_wide(void)
{
    return 64u;
}
#endif

struct nc_neocog_s_pack {
    uint32_t k_in, n_live, k_out;   /* what it was made for */
    uint32_t wide;                  /* b_wide() when it was made */
    float *w;           /* tile after tile, in each tap after tap:
                           [n_live][k_in][width] (row kappa of tap t) */
};

int nc_neocog_s_pack_new(const nc_neocog_s_args *s, nc_neocog_s_pack **ret)
{
    if (!s || !s->ix || !s->a || !ret || s->k_in < 1 || s->k_out < 1)
        return -EINVAL;
    const uint32_t ks = nc_neocog_kstride(s->k_out), nl = s->ix->n_live;
    const size_t rows = (size_t)s->k_in * nl;
    nc_neocog_s_pack *pk = calloc(1, sizeof *pk);
    float *w = pk ? aligned_alloc(64, (rows * ks * sizeof(float) + 63) & ~(size_t)63) : NULL;
    if (!w) {
        free(pk);
        return -ENOMEM;
    }
    const uint32_t wide = b_wide();
    float *cur = w;
    for (uint32_t k0 = 0; k0 < ks; k0 += b_tile_width(ks, k0, wide)) {
        const uint32_t tw = b_tile_width(ks, k0, wide);
        for (uint32_t t = 0; t < nl; t++)
            for (uint32_t kappa = 0; kappa < s->k_in; kappa++, cur += tw)
                memcpy(cur, s->a + ((size_t)kappa * nl + t) * ks + k0, tw * sizeof(float));
    }
    *pk = (nc_neocog_s_pack){ s->k_in, nl, s->k_out, wide, w };
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

/* Every pass's e over planes [k0, k0 + w), added into out (0 there before
 * the first tap); a: the pack's tile.  Tap by tap, so that the tap's block
 * of the tile (k_in rows of w floats: 60 kB for US4) is read from the
 * caches by every pass and position before the next tap's: each output
 * cell still adds its products taps ascending, planes ascending within a
 * tap, as form F does. */
NC_NEOCOG_HOT
static void b_tile(const nc_neocog_s_args *s, const float *a, uint32_t n, float *const *out,
                   const b_lists *L, uint32_t k0, uint32_t w)
{
    const uint32_t ks = nc_neocog_kstride(s->k_out), nl = s->ix->n_live;
    const size_t n_i = (size_t)s->ix->n_in * s->ix->n_in;
    const size_t n_o = (size_t)s->ix->n_out * s->ix->n_out;
    for (uint32_t t = 0; t < nl; t++) {
        const float *at = a + (size_t)t * s->k_in * w;
        const int32_t *oi = L->oi + (size_t)t * n_o;
        for (uint32_t p = 0; p < n; p++) {
            const size_t *cp = L->cptr + (size_t)p * (n_i + 1);
            float *op = out[p] + k0;
            for (size_t o = 0; o < n_o; o++) {
                if (oi[o] < 0)
                    continue;
                const size_t c0 = cp[oi[o]];
                const uint32_t nt = (uint32_t)(cp[oi[o] + 1] - c0);
                if (!nt)
                    continue;
                float *eo = op + o * ks;
                const uint32_t *kap = L->kap + c0;
                const float *val = L->val + c0;
                switch (w) {
                case 64: b_kernel_8(eo, at, kap, val, nt); break;
                case 56: b_kernel_7(eo, at, kap, val, nt); break;
                case 48: b_kernel_6(eo, at, kap, val, nt); break;
                case 40: b_kernel_5(eo, at, kap, val, nt); break;
                case 32: b_kernel_4(eo, at, kap, val, nt); break;
                case 24: b_kernel_3(eo, at, kap, val, nt); break;
                case 16: b_kernel_2(eo, at, kap, val, nt); break;
                default: b_kernel_1(eo, at, kap, val, nt); break;
                }
            }
        }
    }
}

#if B_WIDE
typedef float b_v16 __attribute__((vector_size(64), aligned(4), may_alias));

/* b_tile for a 128-plane tile with AVX-512: the same products added in the
 * same order, lane by lane (vmulps then vaddps; C11 mode contracts none
 * into fused multiply-adds). */
__attribute__((target("avx512f")))
static void b_tile_wide(const nc_neocog_s_args *s, const float *a, uint32_t n,
                        float *const *out, const b_lists *L, uint32_t k0)
{
    const uint32_t ks = nc_neocog_kstride(s->k_out), nl = s->ix->n_live;
    const size_t n_i = (size_t)s->ix->n_in * s->ix->n_in;
    const size_t n_o = (size_t)s->ix->n_out * s->ix->n_out;
    for (uint32_t t = 0; t < nl; t++) {
        const float *at = a + (size_t)t * s->k_in * 128;
        const int32_t *oi = L->oi + (size_t)t * n_o;
        for (uint32_t p = 0; p < n; p++) {
            const size_t *cp = L->cptr + (size_t)p * (n_i + 1);
            float *op = out[p] + k0;
            for (size_t o = 0; o < n_o; o++) {
                if (oi[o] < 0)
                    continue;
                const size_t c0 = cp[oi[o]], c1 = cp[oi[o] + 1];
                if (c0 == c1)
                    continue;
                float *eo = op + o * ks;
                b_v16 acc[8];
                for (int v = 0; v < 8; v++)
                    acc[v] = *(const b_v16 *)(eo + 16 * v);
                for (size_t j = c0; j < c1; j++) {
                    const float *w = at + (size_t)L->kap[j] * 128;
                    const float u = L->val[j];
                    for (int v = 0; v < 8; v++)
                        acc[v] += u * *(const b_v16 *)(w + 16 * v);
                }
                for (int v = 0; v < 8; v++)
                    *(b_v16 *)(eo + 16 * v) = acc[v];
            }
        }
    }
}
#endif

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
        const nc_neocog_s_pack *use = pk ? pk : own;
        const float *a = use->w;
        for (uint32_t p = 0; p < n; p++)
            memset(out[p], 0, n_o * ks * sizeof(float));
        for (uint32_t k0 = 0; k0 < ks;) {
            const uint32_t w = b_tile_width(ks, k0, use->wide);
#if B_WIDE
            if (w == 128)
                b_tile_wide(s, a, n, out, &L, k0);
            else
#endif
                b_tile(s, a, n, out, &L, k0, w);
            a += rows * w;
            k0 += w;
        }
        for (uint32_t p = 0; p < n; p++)
            nc_neocog_s_finish_(out[p], L.v2 + p * n_o, s->b, s->theta, ks, ks, n_o);
    }
    b_lists_free(&L);
    nc_neocog_s_pack_free(own);
    return err;
}

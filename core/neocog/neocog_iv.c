/* core/neocog/neocog_iv.c — the interpolating-vector classifier (Fukushima
 * 2007): per-class Gram matrices of the last stage's planes, built once from
 * a trained network, and the answer they give after a forward pass.
 *
 * Layer: core.  Inference only: it reads the network and a state, and
 * depends on neocog_net.c alone; the learners build networks it reads but
 * it calls none of them. */
#include "neocog_impl.h"

#include <math.h>
#include <string.h>

struct nc_neocog_iv {
    uint32_t top_t, K, n_classes;
    uint32_t cls_off[NC_NEOCOG_MAX_CLASSES + 1];    /* members of class c: */
    uint32_t *members;                  /* members[cls_off[c] .. cls_off[c+1]) */
    size_t gram_off[NC_NEOCOG_MAX_CLASSES + 1];
    float *gram;                        /* per class n_c x n_c cosines */
};

void nc_neocog_iv_free(nc_neocog_iv *iv)
{
    if (!iv)
        return;
    free(iv->members);
    free(iv->gram);
    free(iv);
}

int nc_neocog_iv_get_view(const nc_neocog_iv *iv, nc_neocog_iv_view *ret)
{
    if (!iv || !ret)
        return -EINVAL;
    *ret = (nc_neocog_iv_view){
        .top_t = iv->top_t, .K = iv->K, .n_classes = iv->n_classes,
        .cls_off = iv->cls_off, .members = iv->members,
        .gram_off = iv->gram_off, .gram = iv->gram,
    };
    return 0;
}

int nc_neocog_iv_new(const nc_neocog *net, uint32_t top_t, nc_neocog_iv **ret_iv)
{
    if (!net || !ret_iv || top_t < 1 || top_t > 256 || net->arch.n_stages < 2)
        return -EINVAL;
    const uint32_t l = net->arch.n_stages - 1, K = net->n_planes[l];
    const uint32_t C = net->arch.n_classes;
    if (K == 0 || !net->labels)
        return -EINVAL;
    nc_neocog_iv *iv = calloc(1, sizeof(*iv));
    double *acc = NULL;
    float *row = NULL;
    uint32_t *nz = NULL;
    int r = -ENOMEM;
    if (!iv)
        return -ENOMEM;
    iv->top_t = top_t;
    iv->K = K;
    iv->n_classes = C;
    iv->members = malloc(K * sizeof(uint32_t));
    if (!iv->members)
        goto out;
    uint32_t cnt[NC_NEOCOG_MAX_CLASSES] = { 0 };
    for (uint32_t k = 0; k < K; k++)
        cnt[net->labels[k]]++;
    iv->cls_off[0] = 0;
    iv->gram_off[0] = 0;
    for (uint32_t c = 0; c < C; c++) {
        iv->cls_off[c + 1] = iv->cls_off[c] + cnt[c];
        iv->gram_off[c + 1] = iv->gram_off[c] + (size_t)cnt[c] * cnt[c];
    }
    uint32_t fill[NC_NEOCOG_MAX_CLASSES] = { 0 };
    for (uint32_t k = 0; k < K; k++) {
        uint32_t c = net->labels[k];
        iv->members[iv->cls_off[c] + fill[c]++] = k;
    }
    iv->gram = malloc((iv->gram_off[C] ? iv->gram_off[C] : 1) * sizeof(float));
    acc = calloc(iv->gram_off[C] ? iv->gram_off[C] : 1, sizeof(double));
    row = malloc(K * sizeof(float));
    nz = malloc(K * sizeof(uint32_t));
    if (!iv->gram || !acc || !row || !nz)
        goto out;
    /* Gram matrix in the V-cell metric, sum a_i a_j / c, one weight row
     * (input plane, tap) at a time, visiting only planes with a_i > 0:
     * trained weights are sparse, which makes this cheap. */
    const uint32_t nl = net->s_ix[l]->n_live, ks = nc_neocog_kstride(K);
    const uint32_t kin = nc_neocog_k_in(net, l);
    for (uint32_t kap = 0; kap < kin; kap++)
        for (uint32_t t = 0; t < nl; t++) {
            const float *a = net->a[l] + ((size_t)kap * nl + t) * ks;
            const double ic = 1.0 / net->s_c[l][t];
            for (uint32_t c = 0; c < C; c++) {
                uint32_t m = 0;
                for (uint32_t i = iv->cls_off[c]; i < iv->cls_off[c + 1]; i++)
                    if (a[iv->members[i]] > 0.0f) {
                        nz[m] = i - iv->cls_off[c];
                        row[m++] = a[iv->members[i]];
                    }
                const uint32_t nc = cnt[c];
                double *g = acc + iv->gram_off[c];
                for (uint32_t x = 0; x < m; x++)
                    for (uint32_t y = x; y < m; y++)
                        g[(size_t)nz[x] * nc + nz[y]] += ic * row[x] * row[y];
            }
        }
    for (uint32_t c = 0; c < C; c++) {
        const uint32_t nc = cnt[c];
        double *g = acc + iv->gram_off[c];
        float *G = iv->gram + iv->gram_off[c];
        for (uint32_t x = 0; x < nc; x++)
            for (uint32_t y = x; y < nc; y++) {
                double bx = net->b[l][iv->members[iv->cls_off[c] + x]];
                double by = net->b[l][iv->members[iv->cls_off[c] + y]];
                double v = bx > 0 && by > 0 ? g[(size_t)x * nc + y] / (bx * by) : 0.0;
                G[(size_t)x * nc + y] = G[(size_t)y * nc + x] = (float)v;
            }
    }
    *ret_iv = iv;
    iv = NULL;
    r = 0;
out:
    free(acc);
    free(row);
    free(nz);
    nc_neocog_iv_free(iv);
    return r;
}

/* Input positions whose sums of squares fit on the stack (US4 reads 13 x 13). */
#define IV_SU_STACK 1024
/* Planes whose similarities fit on the stack (the shipped members: <= 2,405). */
#define IV_SV_STACK 4096

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    defined(__ELF__) && !defined(NC_NO_TARGET_CLONES)
#define IV_WIDE 1
#include <immintrin.h>
#else
#define IV_WIDE 0
#endif

/* Where the compiler can, an AVX-512 and an AVX2 clone of iv_sims: the same
 * double operations lane by lane (C11 mode contracts none into fused
 * multiply-adds and keeps both divisions), so the same doubles. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    defined(__ELF__) && !defined(NC_NO_TARGET_CLONES)
#define IV_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define IV_CLONES
#endif

/* Every plane's similarity at one position, sv[k] for k < K: the cell's
 * response u = us[k] inverted for its excitation e, s = e / (b v) clipped
 * to [0, 1]; -1 where u or b is not positive (no candidate).  Computed for
 * every plane and then chosen, so that the loop vectorises (a lane whose
 * b is 0 may divide by 0; its result is dropped). */
IV_CLONES
static void iv_sims(const float *restrict us, const float *restrict b, uint32_t K, double th,
                    double v, double *restrict sv)
{
    for (uint32_t k = 0; k < K; k++) {
        const double u = us[k], bk = b[k];
        /* invert u = th/(1-th) ((1+e)/(1+th b v) - 1) for e, exactly */
        const double e = (u * (1.0 - th) / th + 1.0) * (1.0 + th * bk * v) - 1.0;
        double s = e / (bk * v);
        s = s < 0.0 ? 0.0 : s > 1.0 ? 1.0 : s;
        sv[k] = u > 0.0 && bk > 0.0 ? s : -1.0;
    }
}

/* The similarity of each pair's segment, pv[q] for q < np: alpha = al[q]
 * and beta = be[q] the pair's similarities, g = g[q] the cosine between
 * its planes; the segment's best point's similarity where both its
 * coefficients are positive and the planes are not parallel, else 0 (the
 * answer is a maximum that starts at the list's first similarity >= 0, so
 * 0 adds nothing, as a skipped pair did).  No branch waits on a loaded
 * cosine, so the loads (from Gram matrices of ~230 kB a class, mostly
 * cache misses) overlap; an excluded pair may take the square root of a
 * negative number, and is dropped.  (The square root, which may set errno,
 * keeps this loop scalar: iv_segments_wide is its AVX-512 form.) */
static void iv_segments(const float *restrict g, const float *restrict al,
                        const float *restrict be, uint32_t np, double *restrict pv)
{
    for (uint32_t q = 0; q < np; q++) {
        const double a = al[q], b = be[q], gq = g[q];
        const double den = 1.0 - gq * gq;
        const double pa = (a - gq * b) / den, pb = (b - gq * a) / den;
        double s = sqrt(pa * a + pb * b);
        s = s > 1.0 ? 1.0 : s;
        pv[q] = gq < 1.0 - 1e-6 && pa > 0.0 && pb > 0.0 ? s : 0.0;
    }
}

#if IV_WIDE
/* iv_segments eight pairs at a time (np rounded up to a multiple of 8, the
 * extra pairs zeros, which come out 0): the same operations on each lane,
 * correctly rounded as the scalar ones (C11 mode contracts none into fused
 * multiply-adds); min(s, 1) is s > 1 ? 1 : s for every lane kept. */
__attribute__((target("avx512f")))
static void iv_segments_wide(const float *restrict g, const float *restrict al,
                             const float *restrict be, uint32_t np, double *restrict pv)
{
    const __m512d one = _mm512_set1_pd(1.0), lim = _mm512_set1_pd(1.0 - 1e-6);
    const __m512d zero = _mm512_setzero_pd();
    for (uint32_t q = 0; q < np; q += 8) {
        const __m512d a = _mm512_cvtps_pd(_mm256_loadu_ps(al + q));
        const __m512d b = _mm512_cvtps_pd(_mm256_loadu_ps(be + q));
        const __m512d gq = _mm512_cvtps_pd(_mm256_loadu_ps(g + q));
        const __m512d den = _mm512_sub_pd(one, _mm512_mul_pd(gq, gq));
        const __m512d pa = _mm512_div_pd(_mm512_sub_pd(a, _mm512_mul_pd(gq, b)), den);
        const __m512d pb = _mm512_div_pd(_mm512_sub_pd(b, _mm512_mul_pd(gq, a)), den);
        const __m512d s = _mm512_min_pd(
            _mm512_sqrt_pd(_mm512_add_pd(_mm512_mul_pd(pa, a), _mm512_mul_pd(pb, b))), one);
        const __mmask8 ok = _mm512_cmp_pd_mask(gq, lim, _CMP_LT_OQ) &
                            _mm512_cmp_pd_mask(pa, zero, _CMP_GT_OQ) &
                            _mm512_cmp_pd_mask(pb, zero, _CMP_GT_OQ);
        _mm512_storeu_pd(pv + q, _mm512_maskz_mov_pd(ok, s));
    }
}
#endif

/* Each input position's sum of squares over its kin planes, planes in
 * order: eight positions at a time, whose independent sums hide the add
 * latency (each position's own sum keeps its order, so the same doubles). */
static void iv_sum_squares(const float *in, uint32_t stride, uint32_t kin, size_t n_i,
                           double *su_in)
{
    size_t i = 0;
    for (; i + 8 <= n_i; i += 8) {
        double acc[8] = { 0 };
        for (uint32_t kap = 0; kap < kin; kap++)
            for (int j = 0; j < 8; j++) {
                const double x = in[(i + j) * stride + kap];
                acc[j] += x * x;
            }
        memcpy(su_in + i, acc, sizeof acc);
    }
    for (; i < n_i; i++) {
        const float *u = in + i * stride;
        double su = 0.0;
        for (uint32_t kap = 0; kap < kin; kap++)
            su += (double)u[kap] * u[kap];
        su_in[i] = su;
    }
}

int nc_neocog_iv_classify(const nc_neocog_iv *iv, const nc_neocog *net,
                          const nc_neocog_state *st, nc_neocog_result *ret)
{
    if (!iv || !net || !st || !ret || net->arch.n_stages < 2)
        return -EINVAL;
    const uint32_t l = net->arch.n_stages - 1, K = net->n_planes[l];
    if (K != iv->K || memcmp(st->fit_planes, net->n_planes, sizeof(st->fit_planes)))
        return -EINVAL;
    const nc_neocog_index *ix = net->s_ix[l];
    const uint32_t ks = nc_neocog_kstride(K), kin = nc_neocog_k_in(net, l);
    const uint32_t stride = nc_neocog_in_stride_(net, l), T = iv->top_t, C = iv->n_classes;
    const double th = net->arch.stage[l].theta;
    const float *in = st->uc[l - 1], *us = st->us[l];
    /* One class's top-T list at a time (classes never share a list, and
     * each class's planes are visited in ascending order as before), T
     * entries on the heap: T is at most 256. */
    float *top_s = malloc((size_t)T * sizeof *top_s);
    uint32_t *top_i = malloc((size_t)T * sizeof *top_i);
    /* and its pairs: T (T - 1) / 2 of them at most */
    const size_t max_pairs = ((size_t)T * (T - 1) / 2 + 8) & ~(size_t)7;
    float *pg = malloc(3 * max_pairs * sizeof *pg), *pal = pg + max_pairs, *pbe = pal + max_pairs;
    double *pv = malloc(max_pairs * sizeof *pv);

    /* Each input position's sum of squares, once: every output position
     * reads most of them (US4: 25 outputs, 69 taps each), and summed in the
     * same order they are the same doubles as summing them per tap. */
    const size_t n_i = (size_t)ix->n_in * ix->n_in;
    double su_stack[IV_SU_STACK], sv_stack[IV_SV_STACK];
    uint32_t cand_stack[IV_SV_STACK];
    double *su_in = n_i <= IV_SU_STACK ? su_stack : malloc(n_i * sizeof *su_in);
    double *sv = K <= IV_SV_STACK ? sv_stack : malloc((size_t)K * sizeof *sv);
    uint32_t *cand = K <= IV_SV_STACK ? cand_stack : malloc((size_t)K * sizeof *cand);
    if (!su_in || !sv || !cand || !top_s || !top_i || !pg || !pv) {
        if (su_in != su_stack)
            free(su_in);
        if (sv != sv_stack)
            free(sv);
        if (cand != cand_stack)
            free(cand);
        free(top_s);
        free(top_i);
        free(pg);
        free(pv);
        return -ENOMEM;
    }
    iv_sum_squares(in, stride, kin, n_i, su_in);
#if IV_WIDE
    const int wide = __builtin_cpu_supports("avx512f");
#endif

    memset(ret, 0, sizeof(*ret));
    ret->n_classes = C;
    ret->label = -1;
    for (size_t p = 0; p < (size_t)ix->n_out * ix->n_out; p++) {
        double v2 = 0.0;
        for (int32_t j = ix->gat_ptr[p]; j < ix->gat_ptr[p + 1]; j++)
            v2 += net->s_c[l][ix->gat_tap[j]] * su_in[ix->gat_in[j]];
        if (!(v2 > 0.0))
            continue;
        iv_sims(us + p * ks, net->b[l], K, th, sqrt(v2), sv);
        for (uint32_t c = 0; c < C; c++) {
            const uint32_t c0 = iv->cls_off[c], nc = iv->cls_off[c + 1] - c0;
            const uint32_t *mem = iv->members + c0;
            float *cs = top_s;
            uint32_t *ci = top_i;
            /* the class's candidates, ranks ascending, without a branch
             * (about half the planes are candidates, so a branch would
             * mispredict): a similarity is >= 0, no candidate is -1 */
            uint32_t m = 0, n = 0;
            for (uint32_t r = 0; r < nc; r++) {
                cand[m] = r;
                m += !(sv[mem[r]] < 0.0);
            }
            for (uint32_t q = 0; q < m; q++) {
                const uint32_t r = cand[q];
                const double s = sv[mem[r]];
                uint32_t i = n < T ? n : T - 1;
                if (n == T && !(s > cs[T - 1]))
                    continue;
                /* insertion into the class's descending top-T list */
                while (i > 0 && cs[i - 1] < s) {
                    cs[i] = cs[i - 1];
                    ci[i] = ci[i - 1];
                    i--;
                }
                cs[i] = (float)s;
                ci[i] = r;
                if (n < T)
                    n++;
            }
            /* the list's pairs (x < y), then the segments between them */
            const float *G = iv->gram + iv->gram_off[c];
            uint32_t np = 0;
            for (uint32_t x = 0; x < n; x++)
                for (uint32_t y = x + 1; y < n; y++, np++) {
                    pg[np] = G[(size_t)ci[x] * nc + ci[y]];
                    pal[np] = cs[x];
                    pbe[np] = cs[y];
                }
            double best = n ? cs[0] : 0.0;
#if IV_WIDE
            if (wide) {
                for (uint32_t q = np; q % 8; q++)
                    pg[q] = pal[q] = pbe[q] = 0.0f;
                iv_segments_wide(pg, pal, pbe, np, pv);
            } else
#endif
                iv_segments(pg, pal, pbe, np, pv);
            for (uint32_t q = 0; q < np; q++)
                best = pv[q] > best ? pv[q] : best;
            if (best > ret->score[c])
                ret->score[c] = (float)best;
        }
    }
    if (su_in != su_stack)
        free(su_in);
    if (sv != sv_stack)
        free(sv);
    if (cand != cand_stack)
        free(cand);
    free(top_s);
    free(top_i);
    free(pg);
    free(pv);
    float bv = 0.0f;
    for (uint32_t c = 0; c < C; c++)
        if (ret->score[c] > bv) {
            bv = ret->score[c];
            ret->label = (int32_t)c;
        }
    return 0;
}

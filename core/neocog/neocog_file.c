/* core/neocog/neocog_file.c — neocognitron model files (core/modelfile/modelfile.h format).
 *
 * Layer: core, byte buffers only.  Sections (tags are four ASCII bytes):
 *   NSTG u32  n_stages, in_size, g_size, g_win, g_pad, n_classes, then per
 *             stage s_size, s_win, s_pad, s_grid, k_max, c_kind, c_size,
 *             c_win, c_pad, c_step, c_grid                 (6 + 11 L values)
 *   NSTF f32  g_radius_o, g_radius, g_cut, then per stage s_radius, theta,
 *             gamma, c_radius_o, c_radius                   (3 + 5 L values)
 *   NPLN u32  planes per stage                              (L)
 *   NLBL u32  class of each last-stage plane                (K_L)
 *   the weights a of stage l, in ONE of two forms (neocog.h, "model files"):
 *     dense   W1.. f32  [k][kappa][t], t over live taps     (n = K K_in n_live)
 *     sparse  W1M. u32  bitmap of the non-zero weights in that same order,
 *                       bit j in word j / 32 at 1 << (j % 32)  (ceil(n / 32))
 *             W1V. f32  the non-zero weights in that order  (popcount)
 *          or W1H. bytes the same as IEEE binary16, 2 bytes each, little-
 *                       endian (NC_NEOCOG_WRITE_HALF: half the size)
 *          or W1Q. bytes the same as 8-bit codes, value = scale of the
 *                       plane x 2^((code - 255) / 16) (NC_NEOCOG_WRITE_LOG8)
 *             W1S. f32  with W1Q: each plane's scale, its largest weight
 *                       (K; 0 for a plane without non-zero weights)
 *   B1.. f32  b of stage l                                  (K)
 *   INFO etc. written by nc_mf_put_info
 *   NIVT u32  [top_t], optional: answer by interpolating vectors
 * The writer takes whichever weight form is smaller, stage by stage.
 * The reader trusts nothing: the container's CRC catches accidents, and every
 * section is checked here against the stage table and the others, so a file
 * that was written inconsistently still fails with -EBADMSG. */
#include "neocog_impl.h"

#include <math.h>
#include <string.h>

#define TAG_STG NC_MF_TAG('N', 'S', 'T', 'G')
#define TAG_STF NC_MF_TAG('N', 'S', 'T', 'F')
#define TAG_PLN NC_MF_TAG('N', 'P', 'L', 'N')
#define TAG_LBL NC_MF_TAG('N', 'L', 'B', 'L')
#define TAG_W(l) NC_MF_TAG('W', '1' + (l), ' ', ' ')
#define TAG_WM(l) NC_MF_TAG('W', '1' + (l), 'M', ' ')
#define TAG_WV(l) NC_MF_TAG('W', '1' + (l), 'V', ' ')
#define TAG_WH(l) NC_MF_TAG('W', '1' + (l), 'H', ' ')
#define TAG_WQ(l) NC_MF_TAG('W', '1' + (l), 'Q', ' ')
#define TAG_WS(l) NC_MF_TAG('W', '1' + (l), 'S', ' ')
#define TAG_B(l) NC_MF_TAG('B', '1' + (l), ' ', ' ')

#define STG_HEAD 6u
#define STG_PER 11u
#define STF_HEAD 3u
#define STF_PER 5u

/* Bytes a section with a payload of n bytes takes in the file. */
static size_t section_bytes(size_t n)
{
    return 16u + n + ((8u - (n & 7u)) & 7u);
}

/* Words of a bitmap over n weights. */
static size_t bitmap_words(size_t n)
{
    return n / 32u + (n % 32u != 0);
}

/* Only +0.0 may be left implicit: the reader restores zeros as +0.0, so a
 * -0.0 would not come back bit-identical. */
static int is_pos_zero(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof(bits));
    return bits == 0;
}

/* The sparse form's values, val[nnz] in file order (plane k's from
 * k_first[k] on), in the form flags ask for: f32, binary16 or log8 with
 * scale[k], plane k's largest value, as its scale. */
static int put_values(nc_mf_writer *w, uint32_t l, uint32_t flags, float *val, size_t nnz,
                      uint32_t K, const size_t *k_first, const float *scale)
{
    if (flags & NC_NEOCOG_WRITE_LOG8) {
        uint8_t *q = malloc(nnz ? nnz : 1);
        if (!q)
            return -ENOMEM;
        for (uint32_t k = 0; k < K; k++)
            for (size_t i = k_first[k]; i < k_first[k + 1]; i++)
                q[i] = (uint8_t)nc_neocog__log8_of(val[i], scale[k]);
        int r = nc_mf_put_f32(w, TAG_WS(l), scale, K);
        if (r == 0)
            r = nc_mf_put(w, TAG_WQ(l), NC_MF_TYPE_BYTES, q, nnz);
        free(q);
        return r;
    }
    if (!(flags & NC_NEOCOG_WRITE_HALF))
        return nc_mf_put_f32(w, TAG_WV(l), val, nnz);
    /* in place: byte 2i+1 is written after float i was read */
    uint8_t *hb = (uint8_t *)val;
    for (size_t i = 0; i < nnz; i++) {
        const uint32_t h = (uint32_t)nc_neocog__half_of(val[i]);
        hb[2 * i] = (uint8_t)h;
        hb[2 * i + 1] = (uint8_t)(h >> 8);
    }
    return nc_mf_put(w, TAG_WH(l), NC_MF_TYPE_BYTES, hb, 2 * nnz);
}

/* Stage l's weights in whichever form is smaller.  Both list a_k(nu, kappa)
 * in the natural order [k][kappa][t] (file index j = (k K_in + kappa) n_live
 * + t), so the sparse form is the dense one with its +0.0 entries struck
 * out.  The sparse form is used only when every weight is +0.0 or finite and
 * > 0, which is all its reader accepts; anything else (never produced by
 * training, which only adds positive amounts) goes out dense, unchanged.
 * A stage whose values binary16 cannot hold stays f32; one with a plane
 * whose largest weight is so small that its lowest log8 codes would not be
 * normal floats stays f32 too. */
static int write_weights(const nc_neocog *net, uint32_t l, nc_mf_writer *w, uint32_t flags)
{
    const uint32_t K = net->n_planes[l], kin = nc_neocog_k_in(net, l);
    const uint32_t nl = net->s_ix[l]->n_live, ks = nc_neocog_kstride(K);
    const size_t rows = (size_t)kin * nl, n = (size_t)K * rows;
    const float *a = net->a[l];
    float *top = calloc(K ? K : 1, sizeof *top);     /* each plane's largest */
    if (!top)
        return -ENOMEM;
    size_t nnz = 0;
    int sparse_ok = 1;
    for (size_t i = 0; i < rows; i++)
        for (uint32_t k = 0; k < K; k++) {
            const float v = a[i * ks + k];
            if (is_pos_zero(v))
                continue;
            if (v > 0.0f && isfinite(v))
                nnz++;
            else
                sparse_ok = 0;
            if (nc_neocog__half_of(v) < 0)
                flags &= ~(uint32_t)NC_NEOCOG_WRITE_HALF;  /* too large: f32 */
            top[k] = v > top[k] ? v : top[k];
        }
    for (uint32_t k = 0; k < K; k++)
        if (top[k] > 0.0f && top[k] < 0x1p-100f)
            flags &= ~(uint32_t)NC_NEOCOG_WRITE_LOG8;      /* too small: f32 */
    const size_t words = bitmap_words(n);
    const size_t vbytes = flags & NC_NEOCOG_WRITE_LOG8 ? 1 : flags & NC_NEOCOG_WRITE_HALF ? 2 : 4;
    const size_t extra = flags & NC_NEOCOG_WRITE_LOG8 ? section_bytes(4 * (size_t)K) : 0;
    if (sparse_ok && section_bytes(4 * words) + section_bytes(vbytes * nnz) + extra <
                     section_bytes(4 * n)) {
        uint32_t *bm = calloc(words ? words : 1, sizeof(uint32_t));
        float *val = malloc((nnz ? nnz : 1) * sizeof(float));
        size_t *k_first = malloc(((size_t)K + 1) * sizeof *k_first);
        int r = -ENOMEM;
        if (bm && val && k_first) {
            size_t m = 0;
            for (uint32_t k = 0; k < K; k++) {
                k_first[k] = m;
                for (size_t i = 0; i < rows; i++) {
                    const float v = a[i * ks + k];
                    if (is_pos_zero(v))
                        continue;
                    const size_t j = (size_t)k * rows + i;
                    bm[j / 32u] |= (uint32_t)1 << (j % 32u);
                    val[m++] = v;
                }
            }
            k_first[K] = m;
            r = nc_mf_put_u32(w, TAG_WM(l), bm, words);
            if (r == 0)
                r = put_values(w, l, flags, val, m, K, k_first, top);
        }
        free(bm);
        free(val);
        free(k_first);
        free(top);
        return r;
    }
    free(top);
    float *wt = malloc((n ? n : 1) * sizeof(float));
    if (!wt)
        return -ENOMEM;
    for (uint32_t k = 0; k < K; k++)
        for (size_t i = 0; i < rows; i++)
            wt[(size_t)k * rows + i] = a[i * ks + k];
    int r = nc_mf_put_f32(w, TAG_W(l), wt, n);
    free(wt);
    return r;
}

int nc_neocog_write(const nc_neocog *net, nc_mf_writer *w)
{
    return nc_neocog_write_flags(net, w, 0);
}

int nc_neocog_write_flags(const nc_neocog *net, nc_mf_writer *w, uint32_t flags)
{
    const uint32_t forms = NC_NEOCOG_WRITE_HALF | NC_NEOCOG_WRITE_LOG8;
    if (!net || !w || (flags & ~forms) || flags == forms)
        return -EINVAL;
    const nc_neocog_arch *A = &net->arch;
    const uint32_t L = A->n_stages;
    for (uint32_t l = 0; l < L; l++)
        if (net->n_planes[l] < 1)
            return -EINVAL;
    uint32_t stg[STG_HEAD + STG_PER * NC_NEOCOG_MAX_STAGES];
    float stf[STF_HEAD + STF_PER * NC_NEOCOG_MAX_STAGES];
    uint32_t *u = stg;
    float *f = stf;
    *u++ = L; *u++ = A->in_size; *u++ = A->g_size; *u++ = A->g_win;
    *u++ = A->g_pad; *u++ = A->n_classes;
    *f++ = A->g_radius_o; *f++ = A->g_radius; *f++ = A->g_cut;
    for (uint32_t l = 0; l < L; l++) {
        const nc_neocog_stage *s = &A->stage[l];
        *u++ = s->s_size; *u++ = s->s_win; *u++ = s->s_pad; *u++ = s->s_grid;
        *u++ = s->k_max; *u++ = s->c_kind; *u++ = s->c_size; *u++ = s->c_win;
        *u++ = s->c_pad; *u++ = s->c_step; *u++ = s->c_grid;
        *f++ = s->s_radius; *f++ = s->theta; *f++ = s->gamma;
        *f++ = s->c_radius_o; *f++ = s->c_radius;
    }
    int r = nc_mf_put_u32(w, TAG_STG, stg, (size_t)(u - stg));
    if (r == 0) r = nc_mf_put_f32(w, TAG_STF, stf, (size_t)(f - stf));
    if (r == 0) r = nc_mf_put_u32(w, TAG_PLN, net->n_planes, L);
    if (r == 0) r = nc_mf_put_u32(w, TAG_LBL, net->labels, net->n_planes[L - 1]);
    for (uint32_t l = 0; r == 0 && l < L; l++) {
        r = write_weights(net, l, w, flags);
        if (r == 0)
            r = nc_mf_put_f32(w, TAG_B(l), net->b[l], net->n_planes[l]);
    }
    return r;
}

int nc_neocog_save(const nc_neocog *net, const nc_model_info *info,
                   uint8_t **ret_buf, size_t *ret_len)
{
    return nc_neocog_save_flags(net, info, 0, ret_buf, ret_len);
}

int nc_neocog_save_flags(const nc_neocog *net, const nc_model_info *info, uint32_t flags,
                         uint8_t **ret_buf, size_t *ret_len)
{
    if (!net || !info || !ret_buf || !ret_len || info->n_classes != net->arch.n_classes)
        return -EINVAL;
    nc_mf_writer *w = NULL;
    int r = nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w);
    if (r == 0) r = nc_neocog_write_flags(net, w, flags);
    if (r == 0) r = nc_mf_put_info(w, info);
    if (r == 0) r = nc_mf_finish(w, ret_buf, ret_len);
    nc_mf_writer_free(w);
    return r;
}

/* A missing or mistyped section is corruption, whatever the reader says. */
static int bad(int r)
{
    return r == -ENOMEM ? r : -EBADMSG;
}

/* Read an exact-count u32/f32 section. */
static int get_u32(const nc_mf_reader *rd, uint32_t tag, uint32_t *dst, size_t n)
{
    size_t have;
    int r = nc_mf_count(rd, tag, NC_MF_TYPE_U32, &have);
    if (r < 0 || have != n)
        return -EBADMSG;
    r = nc_mf_get_u32(rd, tag, dst, n);
    return r < 0 ? bad(r) : 0;
}

static int get_f32(const nc_mf_reader *rd, uint32_t tag, float *dst, size_t n)
{
    size_t have;
    int r = nc_mf_count(rd, tag, NC_MF_TYPE_F32, &have);
    if (r < 0 || have != n)
        return -EBADMSG;
    r = nc_mf_get_f32(rd, tag, dst, n);
    return r < 0 ? bad(r) : 0;
}

/* The forms of a stage's weights. */
enum { FORM_DENSE, FORM_F32, FORM_HALF, FORM_LOG8 };

/* Which form stage l's weights take, checked against want = K K_in n_live
 * before anything is allocated: exactly one of W<l> (dense) or W<l>M with
 * exactly one of W<l>V, W<l>H, W<l>Q (sparse; W<l>S beside W<l>Q and only
 * there), with the sizes want implies.  For the sparse forms *ret_nnz is the
 * value count, which the bitmap must match. */
static int weights_form(const nc_mf_reader *rd, uint32_t l, uint64_t want,
                        int *ret_form, size_t *ret_nnz)
{
    const int has_w = nc_mf_get(rd, TAG_W(l), NULL, NULL, NULL) == 0;
    const int has_m = nc_mf_get(rd, TAG_WM(l), NULL, NULL, NULL) == 0;
    const int has_v = nc_mf_get(rd, TAG_WV(l), NULL, NULL, NULL) == 0;
    const int has_h = nc_mf_get(rd, TAG_WH(l), NULL, NULL, NULL) == 0;
    const int has_q = nc_mf_get(rd, TAG_WQ(l), NULL, NULL, NULL) == 0;
    const int has_s = nc_mf_get(rd, TAG_WS(l), NULL, NULL, NULL) == 0;
    size_t n_w, n_m, n_v;
    if (has_w && !has_m && !has_v && !has_h && !has_q && !has_s) {
        if (nc_mf_count(rd, TAG_W(l), NC_MF_TYPE_F32, &n_w) < 0 || n_w != want)
            return -EBADMSG;
        *ret_form = FORM_DENSE;
        *ret_nnz = 0;
        return 0;
    }
    /* both forms, half a sparse one, or two value forms */
    if (has_w || !has_m || has_v + has_h + has_q != 1 || has_s != has_q)
        return -EBADMSG;
    if (nc_mf_count(rd, TAG_WM(l), NC_MF_TYPE_U32, &n_m) < 0 ||
        n_m != want / 32u + (want % 32u != 0))
        return -EBADMSG;
    if (has_v) {
        if (nc_mf_count(rd, TAG_WV(l), NC_MF_TYPE_F32, &n_v) < 0)
            return -EBADMSG;
        *ret_form = FORM_F32;
    } else {
        const uint32_t tag = has_h ? TAG_WH(l) : TAG_WQ(l);
        const size_t each = has_h ? 2 : 1;
        if (nc_mf_count(rd, tag, NC_MF_TYPE_BYTES, &n_v) < 0 || n_v % each)
            return -EBADMSG;
        n_v /= each;
        *ret_form = has_h ? FORM_HALF : FORM_LOG8;
    }
    if (n_v > want)
        return -EBADMSG;
    *ret_nnz = n_v;
    return 0;
}

/* Set bits of a word (no compiler builtins: core is plain C11). */
static uint32_t popcount32(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0fu;
    return (x * 0x01010101u) >> 24;
}

/* Stage l's nnz binary16 values (W<l>H) as floats; zero, the sign bit, Inf
 * and NaN are corrupt. */
static int get_half(const nc_mf_reader *rd, uint32_t l, float *val, size_t nnz)
{
    const void *data;
    size_t len;
    uint32_t type;
    if (nc_mf_get(rd, TAG_WH(l), &type, &data, &len) || type != NC_MF_TYPE_BYTES ||
        len != 2 * nnz)
        return -EBADMSG;
    const uint8_t *b = data;
    for (size_t i = 0; i < nnz; i++) {
        const uint32_t h = (uint32_t)b[2 * i] | (uint32_t)b[2 * i + 1] << 8;
        if (h == 0 || h >= 0x7c00u)
            return -EBADMSG;
        val[i] = nc_neocog__float_of_half(h);
    }
    return 0;
}

/* Stage l's nnz log8 values (W<l>Q with the scales W<l>S) as floats: value m
 * belongs to the plane of the m-th set bit of bm (rows weights a plane). */
static int get_log8(const nc_mf_reader *rd, uint32_t l, uint32_t K, size_t rows,
                    const uint32_t *bm, size_t words, float *val, size_t nnz)
{
    const void *data = NULL;
    size_t len;
    uint32_t type;
    float *scale = malloc((size_t)K * sizeof *scale);
    if (!scale)
        return -ENOMEM;
    int r = get_f32(rd, TAG_WS(l), scale, K);
    if (r == 0 && (nc_mf_get(rd, TAG_WQ(l), &type, &data, &len) ||
                   type != NC_MF_TYPE_BYTES || len != nnz))
        r = -EBADMSG;
    for (uint32_t k = 0; r == 0 && k < K; k++)
        if (!(scale[k] >= 0.0f))
            r = -EBADMSG;
    const uint8_t *q = data;
    size_t m = 0;
    for (size_t wi = 0; r == 0 && wi < words; wi++)
        for (uint32_t x = bm[wi], b = 0; x && m < nnz; x >>= 1, b++)
            if (x & 1u) {
                const size_t k = (wi * 32u + b) / rows;
                val[m] = nc_neocog__float_of_log8(q[m], scale[k]);
                m++;
            }
    free(scale);
    return r;
}

/* Stage l's sparse weights into a (zeroed, [rows][ks] with rows = K_in
 * n_live): the bitmap's popcount must equal the value count nnz, its bits
 * past the K rows weights (the last word's pad lanes) must be 0, and every
 * value must be > 0 (finite is the container's check), since a zero would
 * be a second spelling of an implicit one.  File index j = k rows + i goes
 * to a[i ks + k]. */
static int read_sparse(const nc_mf_reader *rd, uint32_t l, uint32_t K, size_t rows,
                       size_t nnz, int form, float *a)
{
    const size_t n = (size_t)K * rows, words = bitmap_words(n);
    const size_t ks = nc_neocog_kstride(K);
    uint32_t *bm = malloc((words ? words : 1) * sizeof(uint32_t));
    float *val = malloc((nnz ? nnz : 1) * sizeof(float));
    int r = -ENOMEM;
    if (!bm || !val)
        goto out;
    if ((r = get_u32(rd, TAG_WM(l), bm, words)) < 0)
        goto out;
    r = -EBADMSG;
    size_t count = 0;
    for (size_t i = 0; i < words; i++)
        count += popcount32(bm[i]);
    if (count != nnz || (n % 32u && bm[words - 1] >> (n % 32u) != 0))
        goto out;
    if ((r = form == FORM_LOG8 ? get_log8(rd, l, K, rows, bm, words, val, nnz)
             : form == FORM_HALF ? get_half(rd, l, val, nnz)
                                 : get_f32(rd, TAG_WV(l), val, nnz)) < 0)
        goto out;
    r = -EBADMSG;
    for (size_t i = 0; i < nnz; i++)
        if (!(val[i] > 0.0f))
            goto out;
    size_t m = 0;
    for (size_t wi = 0; wi < words; wi++)
        for (uint32_t x = bm[wi], b = 0; x; x >>= 1, b++) {
            if (!(x & 1u))
                continue;
            const size_t j = wi * 32u + b, k = j / rows;
            a[(j - k * rows) * ks + k] = val[m++];
        }
    r = 0;
out:
    free(bm);
    free(val);
    return r;
}

int nc_neocog_read(const nc_mf_reader *rd, nc_neocog **ret_net)
{
    if (!rd || !ret_net)
        return -EINVAL;
    if (nc_mf_kind_of(rd) != NC_MF_KIND_NEOCOG)
        return -EBADMSG;

    /* the stage table: its length says how many stages, and must agree */
    size_t n_stg, n_stf;
    if (nc_mf_count(rd, TAG_STG, NC_MF_TYPE_U32, &n_stg) < 0 ||
        nc_mf_count(rd, TAG_STF, NC_MF_TYPE_F32, &n_stf) < 0 ||
        n_stg < STG_HEAD + STG_PER || (n_stg - STG_HEAD) % STG_PER != 0)
        return -EBADMSG;
    size_t L = (n_stg - STG_HEAD) / STG_PER;
    if (L > NC_NEOCOG_MAX_STAGES || n_stf != STF_HEAD + STF_PER * L)
        return -EBADMSG;
    uint32_t stg[STG_HEAD + STG_PER * NC_NEOCOG_MAX_STAGES];
    float stf[STF_HEAD + STF_PER * NC_NEOCOG_MAX_STAGES];
    int r = get_u32(rd, TAG_STG, stg, n_stg);
    if (r == 0)
        r = get_f32(rd, TAG_STF, stf, n_stf);
    if (r < 0)
        return r;
    if (stg[0] != L)
        return -EBADMSG;
    nc_neocog_arch A;
    memset(&A, 0, sizeof(A));
    const uint32_t *u = stg + 1;
    const float *f = stf;
    A.n_stages = (uint32_t)L;
    A.in_size = *u++; A.g_size = *u++; A.g_win = *u++; A.g_pad = *u++;
    A.n_classes = *u++;
    A.g_radius_o = *f++; A.g_radius = *f++; A.g_cut = *f++;
    for (size_t l = 0; l < L; l++) {
        nc_neocog_stage *s = &A.stage[l];
        s->s_size = *u++; s->s_win = *u++; s->s_pad = *u++; s->s_grid = *u++;
        s->k_max = *u++; s->c_kind = *u++; s->c_size = *u++; s->c_win = *u++;
        s->c_pad = *u++; s->c_step = *u++; s->c_grid = *u++;
        s->s_radius = *f++; s->theta = *f++; s->gamma = *f++;
        s->c_radius_o = *f++; s->c_radius = *f++;
    }
    if (nc_neocog_arch_check(&A) < 0)
        return -EBADMSG;

    /* plane counts within caps, labels valid, and every weight section the
     * size the table and counts imply, all before allocating weights */
    uint32_t planes[NC_NEOCOG_MAX_STAGES];
    if ((r = get_u32(rd, TAG_PLN, planes, L)) < 0)
        return r;
    for (size_t l = 0; l < L; l++)
        if (planes[l] < 1 || planes[l] > A.stage[l].k_max)
            return -EBADMSG;

    nc_neocog *net = NULL;
    uint32_t *lab = NULL;
    float *wt = NULL;
    r = nc_neocog_new(&A, &net);
    if (r < 0)
        return r == -ENOMEM ? r : -EBADMSG;
    int form[NC_NEOCOG_MAX_STAGES];
    size_t nnz[NC_NEOCOG_MAX_STAGES];
    for (size_t l = 0; l < L; l++) {
        size_t n_b;
        uint64_t want = (uint64_t)planes[l] * (l == 0 ? 2u : planes[l - 1]) *
                        net->s_ix[l]->n_live;
        if ((r = weights_form(rd, (uint32_t)l, want, &form[l], &nnz[l])) < 0)
            goto fail;
        if (nc_mf_count(rd, TAG_B(l), NC_MF_TYPE_F32, &n_b) < 0 || n_b != planes[l]) {
            r = -EBADMSG;
            goto fail;
        }
    }
    const uint32_t KL = planes[L - 1];
    lab = malloc(KL * sizeof(*lab));
    if (!lab) {
        r = -ENOMEM;
        goto fail;
    }
    if ((r = get_u32(rd, TAG_LBL, lab, KL)) < 0)
        goto fail;
    for (uint32_t k = 0; k < KL; k++)
        if (lab[k] >= A.n_classes) {
            r = -EBADMSG;
            goto fail;
        }
    if ((r = nc_neocog__set_planes(net, planes, lab)) < 0) {
        r = r == -ENOMEM ? r : -EBADMSG;
        goto fail;
    }

    for (size_t l = 0; l < L; l++) {
        const uint32_t K = planes[l], kin = nc_neocog_k_in(net, (uint32_t)l);
        const uint32_t nl = net->s_ix[l]->n_live, ks = nc_neocog_kstride(K);
        const size_t n = (size_t)K * kin * nl;
        size_t n_dense;
        if (form[l] != FORM_DENSE) {
            if ((r = read_sparse(rd, (uint32_t)l, K, (size_t)kin * nl, nnz[l], form[l],
                                 net->a[l])) < 0)
                goto fail;
            n_dense = K;        /* wt below holds b only */
        } else {
            n_dense = n > K ? n : K;
        }
        free(wt);
        wt = malloc(n_dense * sizeof(float));
        if (!wt) {
            r = -ENOMEM;
            goto fail;
        }
        if (form[l] == FORM_DENSE) {
            if ((r = get_f32(rd, TAG_W(l), wt, n)) < 0)
                goto fail;
            for (uint32_t k = 0; k < K; k++)
                for (uint32_t kap = 0; kap < kin; kap++)
                    for (uint32_t t = 0; t < nl; t++) {
                        float v = wt[((size_t)k * kin + kap) * nl + t];
                        if (!(v >= 0.0f)) {     /* a >= 0; NaN fails too */
                            r = -EBADMSG;
                            goto fail;
                        }
                        net->a[l][((size_t)kap * nl + t) * ks + k] = v;
                    }
        }
        if ((r = get_f32(rd, TAG_B(l), wt, K)) < 0)
            goto fail;
        for (uint32_t k = 0; k < K; k++) {
            if (!(wt[k] >= 0.0f)) {
                r = -EBADMSG;
                goto fail;
            }
            net->b[l][k] = wt[k];
        }
    }
    free(wt);
    free(lab);
    *ret_net = net;
    return 0;
fail:
    free(wt);
    free(lab);
    nc_neocog_free(net);
    return r;
}

int nc_neocog__load_reader(const nc_mf_reader *rd, nc_neocog **ret_net,
                           nc_model_info *ret_info)
{
    if (!rd || !ret_net)
        return -EINVAL;
    nc_neocog *net = NULL;
    nc_model_info *info = malloc(sizeof(*info));
    if (!info)
        return -ENOMEM;
    int r = nc_neocog_read(rd, &net);
    if (r == 0) {
        r = nc_mf_get_info(rd, info);
        if (r < 0)
            r = bad(r);
        else if (info->n_classes != net->arch.n_classes)
            r = -EBADMSG;
    }
    if (r < 0) {
        nc_neocog_free(net);
        free(info);
        return r;
    }
    if (ret_info)
        *ret_info = *info;
    free(info);
    *ret_net = net;
    return 0;
}

int nc_neocog_load(const uint8_t *buf, size_t len, nc_neocog **ret_net,
                   nc_model_info *ret_info)
{
    if (!buf || !ret_net)
        return -EINVAL;
    nc_mf_reader *rd = NULL;
    int r = nc_mf_open(buf, len, &rd);
    if (r == 0)
        r = nc_neocog__load_reader(rd, ret_net, ret_info);
    nc_mf_close(rd);
    return r;
}

int nc_neocog_read_iv(const nc_mf_reader *r, uint32_t *ret_top_t)
{
    if (!r || !ret_top_t)
        return -EINVAL;
    uint32_t t;
    size_t n;
    int e = nc_mf_count(r, NC_NEOCOG_TAG_IV, NC_MF_TYPE_U32, &n);
    if (e == -ENOENT) {
        *ret_top_t = 0;
        return 0;
    }
    /* a mark that is there but unreadable must not quietly mean "max
     * response": the file would answer differently from what it says */
    if (e < 0 || n != 1 || nc_mf_get_u32(r, NC_NEOCOG_TAG_IV, &t, 1) < 0 ||
        t < 1 || t > 256)
        return -EBADMSG;
    *ret_top_t = t;
    return 0;
}

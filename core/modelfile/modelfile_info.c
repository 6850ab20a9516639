/* core/modelfile/modelfile_info.c — what the model file holds besides a
 * network's own sections (see modelfile.h): the model info (classes,
 * labels, preparation, threshold, provenance) and nested member files (a
 * committee's networks), both written and read through the container's
 * public calls of modelfile.c.
 *
 * Layer: core.  Byte buffers only. */
#include "modelfile_internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* ---- model info --------------------------------------------------------
 *
 * Stored as several sections rather than one packed struct so that fields
 * can be added later without a version bump:
 *   INFO u32[4]   n_classes, epochs, seed low 32 bits, seed high 32 bits
 *   LABL bytes    n_classes records of 16 bytes, each a NUL-padded label
 *   PREP u32[5]   kind, size, box, pad, invert
 *   PTHR f32[1]   threshold
 *   PDSK u32[1]   deskew (1, or 2: gentle), written only when set (files
 *                 before it read 0)
 *   TERR f64[1]   test_error
 *   DATA, CMND, CRTD, TSET   text: data, command, created, test_set */

#define TAG_INFO NC_MF_TAG('I', 'N', 'F', 'O')
#define TAG_LABL NC_MF_TAG('L', 'A', 'B', 'L')
#define TAG_PREP NC_MF_TAG('P', 'R', 'E', 'P')
#define TAG_PTHR NC_MF_TAG('P', 'T', 'H', 'R')
#define TAG_PDSK NC_MF_TAG('P', 'D', 'S', 'K')
#define TAG_PVEW NC_MF_TAG('P', 'V', 'E', 'W')
#define TAG_TERR NC_MF_TAG('T', 'E', 'R', 'R')
#define TAG_DATA NC_MF_TAG('D', 'A', 'T', 'A')
#define TAG_CMND NC_MF_TAG('C', 'M', 'N', 'D')
#define TAG_CRTD NC_MF_TAG('C', 'R', 'T', 'D')
#define TAG_TSET NC_MF_TAG('T', 'S', 'E', 'T')

#define LABEL_LEN sizeof(((nc_model_info *)0)->labels[0])
#define PREP_MAX_SIZE 1024u

/* A string field must end inside its array: otherwise it was never a
 * NUL-terminated string and writing it would silently cut it. */
static int field_ok(const char *s, size_t cap)
{
    return memchr(s, 0, cap) != NULL;
}

/* The checks both directions share, so a writer cannot produce an info
 * block its readers reject. */
static int info_valid(const nc_model_info *in)
{
    if (in->n_classes < 1 || in->n_classes > NC_MF_MAX_CLASSES)
        return 0;
    for (uint32_t c = 0; c < in->n_classes; c++)
        if (!field_ok(in->labels[c], LABEL_LEN) || in->labels[c][0] == '\0')
            return 0;
    const nc_prep *p = &in->prep;
    if (p->kind != NC_PREP_MNIST && p->kind != NC_PREP_NEOCOG && p->kind != NC_PREP_LINE)
        return 0;
    if (p->size < 1 || p->size > PREP_MAX_SIZE || p->box < 1 ||
        p->box > PREP_MAX_SIZE || p->pad > PREP_MAX_SIZE || p->invert > 1 ||
        p->deskew > NC_PREP_DESKEW_GENTLE || p->n_views > NC_PREP_MAX_VIEWS)
        return 0;
    for (uint32_t v = 0; v < NC_PREP_MAX_VIEWS; v++)
        if (v < p->n_views ? p->view_box[v] < 1 || p->view_box[v] > PREP_MAX_SIZE ||
                                 p->view_deskew[v] > NC_PREP_DESKEW_GENTLE
                           : p->view_box[v] != 0 || p->view_deskew[v] != 0)
            return 0;
    /* threshold is a fraction of full ink, or negative for Otsu */
    if (!isfinite(p->threshold) || p->threshold > 1.0f)
        return 0;
    /* test_error is a fraction, or negative for unknown */
    if (!isfinite(in->test_error) || in->test_error > 1.0)
        return 0;
    return field_ok(in->data, sizeof(in->data)) &&
           field_ok(in->command, sizeof(in->command)) &&
           field_ok(in->created, sizeof(in->created)) &&
           field_ok(in->test_set, sizeof(in->test_set));
}

/* PVEW: box, deskew of each view, in view order. */
static int put_views(nc_mf_writer *w, const nc_prep *p)
{
    uint32_t pairs[2 * NC_PREP_MAX_VIEWS];
    for (uint32_t v = 0; v < p->n_views; v++) {
        pairs[2 * v] = p->view_box[v];
        pairs[2 * v + 1] = p->view_deskew[v];
    }
    return nc_mf_put_u32(w, TAG_PVEW, pairs, 2 * (size_t)p->n_views);
}

int nc_mf_put_info(nc_mf_writer *w, const nc_model_info *info)
{
    if (!w || !info || !info_valid(info))
        return -EINVAL;
    uint8_t labels[NC_MF_MAX_CLASSES * LABEL_LEN];
    memset(labels, 0, sizeof(labels));
    for (uint32_t c = 0; c < info->n_classes; c++)
        memcpy(labels + c * LABEL_LEN, info->labels[c], strlen(info->labels[c]));
    const uint32_t head[4] = {
        info->n_classes, info->epochs,
        (uint32_t)info->seed, (uint32_t)(info->seed >> 32),
    };
    const nc_prep *p = &info->prep;
    const uint32_t prep[5] = { p->kind, p->size, p->box, p->pad, p->invert };
    /* Check for room and clashing tags first, so that a failure leaves the
     * writer as it was rather than holding half an info block. */
    static const uint32_t tags[] = { TAG_INFO, TAG_LABL, TAG_PREP, TAG_PTHR,
                                     TAG_TERR, TAG_DATA, TAG_CMND, TAG_CRTD,
                                     TAG_TSET, TAG_PDSK, TAG_PVEW };
    int e = nc_mf_writer_room(w, tags, NC_ARRAY_LEN(tags));
    if (e < 0)
        return e;
    if ((e = nc_mf_put_u32(w, TAG_INFO, head, 4)) < 0 ||
        (e = nc_mf_put(w, TAG_LABL, NC_MF_TYPE_BYTES, labels,
                       info->n_classes * LABEL_LEN)) < 0 ||
        (e = nc_mf_put_u32(w, TAG_PREP, prep, 5)) < 0 ||
        (e = nc_mf_put_f32(w, TAG_PTHR, &p->threshold, 1)) < 0 ||
        (e = nc_mf_put_f64(w, TAG_TERR, &info->test_error, 1)) < 0 ||
        (e = nc_mf_put_str(w, TAG_DATA, info->data)) < 0 ||
        (e = nc_mf_put_str(w, TAG_CMND, info->command)) < 0 ||
        (e = nc_mf_put_str(w, TAG_CRTD, info->created)) < 0 ||
        (e = nc_mf_put_str(w, TAG_TSET, info->test_set)) < 0 ||
        (p->deskew && (e = nc_mf_put_u32(w, TAG_PDSK, &p->deskew, 1)) < 0) ||
        (p->n_views && (e = put_views(w, p)) < 0))
        return e;
    return 0;
}

/* A missing or malformed info section is a corrupt model file: -EBADMSG,
 * not -ENOENT, since every model carries all of them. */
static int info_err(int e)
{
    return e == -ENOENT ? -EBADMSG : e;
}

/* PVEW, optional (files before views have none): 1..NC_PREP_MAX_VIEWS
 * pairs of box and deskew, which info_valid then checks. */
static int get_views(const nc_mf_reader *r, nc_prep *p)
{
    size_t n;
    uint32_t pairs[2 * NC_PREP_MAX_VIEWS];
    int e = nc_mf_count(r, TAG_PVEW, NC_MF_TYPE_U32, &n);
    if (e == -ENOENT)
        return 0;
    if (e < 0)
        return e;
    if (n == 0 || n % 2 || n > 2 * NC_PREP_MAX_VIEWS)
        return -EBADMSG;
    if ((e = nc_mf_get_u32(r, TAG_PVEW, pairs, n)) < 0)
        return e;
    p->n_views = (uint32_t)(n / 2);
    for (uint32_t v = 0; v < p->n_views; v++) {
        p->view_box[v] = pairs[2 * v];
        p->view_deskew[v] = pairs[2 * v + 1];
    }
    return 0;
}

int nc_mf_get_info(const nc_mf_reader *r, nc_model_info *ret_info)
{
    if (!r || !ret_info)
        return -EINVAL;
    nc_model_info *in = calloc(1, sizeof(*in));     /* ~3 KiB: off the stack */
    if (!in)
        return -ENOMEM;
    uint32_t head[4], prep[5];
    const void *lab;
    size_t lab_len;
    uint32_t lab_type;
    int e;
    if ((e = nc_mf_get_u32(r, TAG_INFO, head, 4)) < 0 ||
        (e = nc_mf_get_u32(r, TAG_PREP, prep, 5)) < 0 ||
        (e = nc_mf_get_f32(r, TAG_PTHR, &in->prep.threshold, 1)) < 0 ||
        (e = nc_mf_get_f64(r, TAG_TERR, &in->test_error, 1)) < 0 ||
        (e = nc_mf_get_str(r, TAG_DATA, in->data, sizeof(in->data))) < 0 ||
        (e = nc_mf_get_str(r, TAG_CMND, in->command, sizeof(in->command))) < 0 ||
        (e = nc_mf_get_str(r, TAG_CRTD, in->created, sizeof(in->created))) < 0 ||
        (e = nc_mf_get_str(r, TAG_TSET, in->test_set, sizeof(in->test_set))) < 0 ||
        (e = nc_mf_get(r, TAG_LABL, &lab_type, &lab, &lab_len)) < 0)
        goto out;
    e = -EBADMSG;
    in->n_classes = head[0];
    in->epochs = head[1];
    in->seed = (uint64_t)head[2] | (uint64_t)head[3] << 32;
    in->prep = (nc_prep){ prep[0], prep[1], prep[2], prep[3], prep[4],
                          in->prep.threshold, 0, 0, { 0 }, { 0 } };
    /* Optional: absent in files written before deskewing existed. */
    e = nc_mf_get_u32(r, TAG_PDSK, &in->prep.deskew, 1);
    if (e < 0 && e != -ENOENT)
        goto out;
    if ((e = get_views(r, &in->prep)) < 0)
        goto out;
    e = -EBADMSG;
    if (in->n_classes < 1 || in->n_classes > NC_MF_MAX_CLASSES ||
        lab_type != NC_MF_TYPE_BYTES || lab_len != in->n_classes * LABEL_LEN)
        goto out;
    for (uint32_t c = 0; c < in->n_classes; c++) {
        const uint8_t *rec = (const uint8_t *)lab + c * LABEL_LEN;
        /* NUL-padded: the label, then only zeros, at least one of them */
        const uint8_t *nul = memchr(rec, 0, LABEL_LEN);
        if (!nul)
            goto out;
        size_t n = (size_t)(nul - rec);
        for (size_t k = n; k < LABEL_LEN; k++)
            if (rec[k] != 0)
                goto out;
        memcpy(in->labels[c], rec, LABEL_LEN);
    }
    if (!info_valid(in))
        goto out;
    *ret_info = *in;
    e = 0;
out:
    free(in);
    return info_err(e);
}

/* Views aside: they are a committee record's own (nc_mf_info_mismatch). */
static int prep_equal(const nc_prep *a, const nc_prep *b)
{
    return a->kind == b->kind && a->size == b->size && a->box == b->box && a->pad == b->pad &&
           a->invert == b->invert && a->threshold == b->threshold &&
           a->deskew == b->deskew;
}

const char *nc_mf_info_mismatch(const nc_model_info *ia, const nc_model_info *ib)
{
    if (ia->n_classes != ib->n_classes)
        return "a different number of classes";
    for (uint32_t k = 0; k < ia->n_classes; k++)
        if (strcmp(ia->labels[k], ib->labels[k]))
            return "different class labels";
    if (!prep_equal(&ia->prep, &ib->prep))
        return "a different preprocessing (prep)";
    return NULL;
}

/* ---- nested files ------------------------------------------------------------ */

static uint32_t member_tag(char p0, char p1, uint32_t i)
{
    return NC_MF_TAG(p0, p1, '0' + (i + 1) / 10, '0' + (i + 1) % 10);
}

/* 1-based index of a member tag (index 00 gives 0), -1 if not one. */
static int member_of_tag(uint32_t tag, char p0, char p1)
{
    const unsigned c0 = tag & 0xffu, c1 = tag >> 8 & 0xffu, c2 = tag >> 16 & 0xffu,
                   c3 = tag >> 24 & 0xffu;
    if (c0 != (unsigned char)p0 || c1 != (unsigned char)p1 || c2 < '0' || c2 > '9' ||
        c3 < '0' || c3 > '9')
        return -1;
    return (int)((c2 - '0') * 10 + (c3 - '0'));
}

int nc_mf_put_member(nc_mf_writer *w, char p0, char p1, uint32_t i, const uint8_t *buf,
                     size_t len)
{
    if (i >= 99)
        return -EINVAL;
    return nc_mf_put(w, member_tag(p0, p1, i), NC_MF_TYPE_BYTES, buf, len);
}

int nc_mf_members(const nc_mf_reader *r, uint32_t count_tag, char p0, char p1, uint32_t max,
                  uint32_t *ret_n)
{
    uint32_t n;
    size_t count;
    if (!r || !ret_n)
        return -EINVAL;
    if (nc_mf_count(r, count_tag, NC_MF_TYPE_U32, &count) || count != 1 ||
        nc_mf_get_u32(r, count_tag, &n, 1) || n < 2 || n > max || n > 99)
        return -EBADMSG;
    for (uint32_t s = 0; s < nc_mf_section_count(r); s++) {
        uint32_t tag;
        if (nc_mf_section_at(r, s, &tag, NULL, NULL, NULL))
            return -EBADMSG;
        const int m = member_of_tag(tag, p0, p1);
        if (m == 0 || m > (int)n)
            return -EBADMSG;
    }
    *ret_n = n;
    return 0;
}

int nc_mf_member(const nc_mf_reader *r, char p0, char p1, uint32_t i, const void **ret_data,
                 size_t *ret_len)
{
    uint32_t type;
    if (!r || !ret_data || !ret_len || i >= 99)
        return -EINVAL;
    if (nc_mf_get(r, member_tag(p0, p1, i), &type, ret_data, ret_len) ||
        type != NC_MF_TYPE_BYTES)
        return -EBADMSG;
    return 0;
}

/* tools/train_convert.c — `neocog-train convert IN OUT`: rewrite a
 * neocognitron model file with the current writer, i.e. each stage's weights
 * in whichever form (dense or sparse, core/neocog/neocog.h) is smaller.
 *
 * Layer: tools.  Nothing about the model changes: the network is read and
 * written by core, and every other section (INFO and provenance, NIVT, and
 * any section this tool does not know) is copied byte for byte, so the
 * `command` provenance still names the command that trained the model.
 * Before OUT is written the new image is read back and checked: the same
 * network bit for bit, and every section of IN that is not a weight section
 * present in OUT with the same type and bytes.
 *
 * `convert --test-error PCT IN OUT` instead changes one field of the record
 * (any kind of model file): its test error, for a file whose test figure was
 * measured after the record was written (a neocognitron committee given a
 * cascade).  Every other section, the weights included, is copied byte for
 * byte in IN's order. */
#include "train_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "fileio.h"
#include "modelfile.h"

#define CONVERT_MAX_BYTES ((size_t)1 << 31)

/* Container layout of core/modelfile/modelfile.h, needed only to list the sections:
 * the reader finds them by tag but has no way to enumerate them. */
#define MF_HEADER_LEN 32u
#define MF_SECTION_HEADER_LEN 16u

/* Tags of IN in file order.  Only called after nc_mf_open accepted buf, which
 * has checked every length walked here. */
static uint32_t list_tags(const uint8_t *buf, uint32_t *tags, uint32_t cap)
{
    const uint32_t n = train_le32(buf + 16);
    size_t off = MF_HEADER_LEN;
    uint32_t i;
    for (i = 0; i < n && i < cap; i++) {
        uint64_t plen = (uint64_t)train_le32(buf + off + 8) |
                        (uint64_t)train_le32(buf + off + 12) << 32;
        tags[i] = train_le32(buf + off);
        off += MF_SECTION_HEADER_LEN + (size_t)plen + (size_t)((8u - (plen & 7u)) & 7u);
    }
    return i;
}

/* Byte i (0 = first character) of a tag. */
static unsigned tag_ch(uint32_t tag, unsigned i)
{
    return (tag >> (8 * i)) & 0xffu;
}

/* A stage's weights: "W<l>  " (dense), "W<l>M ", "W<l>V " (sparse).  They may
 * change form, so they are compared through the network, not byte by byte. */
static int is_weight_tag(uint32_t tag)
{
    return tag_ch(tag, 0) == 'W' && tag_ch(tag, 1) >= '1' &&
           tag_ch(tag, 1) < '1' + NC_NEOCOG_MAX_STAGES &&
           (tag_ch(tag, 2) == ' ' || tag_ch(tag, 2) == 'M' || tag_ch(tag, 2) == 'V') &&
           tag_ch(tag, 3) == ' ';
}

/* Sections nc_neocog_write produces: regenerated, not copied. */
static int is_net_tag(uint32_t tag)
{
    static const uint32_t fixed[] = {
        NC_MF_TAG('N', 'S', 'T', 'G'), NC_MF_TAG('N', 'S', 'T', 'F'),
        NC_MF_TAG('N', 'P', 'L', 'N'), NC_MF_TAG('N', 'L', 'B', 'L'),
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(fixed); i++)
        if (tag == fixed[i])
            return 1;
    const int is_b = tag_ch(tag, 0) == 'B' && tag_ch(tag, 1) >= '1' &&
                     tag_ch(tag, 1) < '1' + NC_NEOCOG_MAX_STAGES &&
                     tag_ch(tag, 2) == ' ' && tag_ch(tag, 3) == ' ';
    return is_b || is_weight_tag(tag);
}

/* Same network, bit for bit (arch, planes, labels, every weight and b). */
static int same_net(const nc_neocog *x, const nc_neocog *y)
{
    const uint32_t L = x->arch.n_stages;
    return !memcmp(&x->arch, &y->arch, sizeof(x->arch)) &&
           !memcmp(x->n_planes, y->n_planes, sizeof(x->n_planes)) &&
           x->n_params == y->n_params &&
           !memcmp(x->params, y->params, x->n_params * sizeof(float)) &&
           !memcmp(x->labels, y->labels, x->n_planes[L - 1] * sizeof(uint32_t));
}

/* Section tag as text, for messages. */
static const char *tag_str(uint32_t tag, char *dst)
{
    for (unsigned i = 0; i < 4; i++)
        dst[i] = (char)tag_ch(tag, i);
    dst[4] = '\0';
    return dst;
}

enum { O_TEST_ERROR, O_END };

static const nc_opt table[] = {
    [O_TEST_ERROR] = { "test-error", "PCT",
                       "set the record's test error to PCT percent (0..100)" },
    [O_END] = { NULL, NULL, NULL },
};

static const char usage_text[] =
    "usage: neocog-train convert IN OUT\n"
    "       neocog-train convert --test-error PCT IN OUT\n"
    "\n"
    "Rewrite the neocognitron model file IN as OUT with each stage's weights in\n"
    "the smaller of the dense and sparse forms.  The network comes back bit for\n"
    "bit and every other section (provenance, NIVT, ...) is copied unchanged.\n"
    "OUT may be IN (written atomically).\n"
    "\n"
    "With --test-error, IN may be any model file: its record's test error becomes\n"
    "PCT percent (as measured on the record's test set, e.g. by eval --set t10k)\n"
    "and every other section is copied unchanged, weights included.\n";

/* The record's test error section (core/modelfile/modelfile_info.c). */
#define TAG_TERR NC_MF_TAG('T', 'E', 'R', 'R')

/* IN's image with the record's test error set to err_frac, every other
 * section copied in order; read back and compared before it is returned. */
static int set_test_error(const uint8_t *buf, size_t len, double err_frac, uint8_t **ret_buf,
                          size_t *ret_len)
{
    nc_mf_reader *r = NULL, *back = NULL;
    nc_mf_writer *w = NULL;
    nc_model_info *info = malloc(sizeof *info);
    uint32_t n = 0;
    int err = info ? nc_mf_open(buf, len, &r) : -ENOMEM;
    if (!err)
        err = nc_mf_get_info(r, info);      /* a record that reads, before it is changed */
    if (!err)
        err = nc_mf_writer_new(nc_mf_kind_of(r), &w);
    if (!err)
        n = nc_mf_section_count(r);
    for (uint32_t i = 0; !err && i < n; i++) {
        uint32_t tag, type;
        const void *data;
        size_t cnt;
        if ((err = nc_mf_section_at(r, i, &tag, &type, &data, &cnt)))
            break;
        err = tag == TAG_TERR ? nc_mf_put_f64(w, tag, &err_frac, 1)
                              : nc_mf_put(w, tag, type, data, cnt);
    }
    if (!err)
        err = nc_mf_finish(w, ret_buf, ret_len);
    if (!err)
        err = nc_mf_open(*ret_buf, *ret_len, &back);
    if (!err)
        err = nc_mf_get_info(back, info);
    if (!err && (info->test_error != err_frac || nc_mf_section_count(back) != n ||
                 nc_mf_kind_of(back) != nc_mf_kind_of(r)))
        err = -EBADMSG;
    for (uint32_t i = 0; !err && i < n; i++) {
        uint32_t t0, t1, y0, y1;
        const void *d0, *d1;
        size_t n0, n1;
        if (nc_mf_section_at(r, i, &t0, &y0, &d0, &n0) ||
            nc_mf_section_at(back, i, &t1, &y1, &d1, &n1) || t0 != t1 || y0 != y1 ||
            n0 != n1 || (t0 != TAG_TERR && n0 && memcmp(d0, d1, n0)))
            err = -EBADMSG;
    }
    if (err && *ret_buf) {
        free(*ret_buf);
        *ret_buf = NULL;
    }
    nc_mf_close(back);
    nc_mf_writer_free(w);
    nc_mf_close(r);
    free(info);
    return err;
}

/* --test-error: pct_s, already checked to be 0..100, into the record. */
static int record_main(const char *pct_s, const char *in_path, const char *out_path)
{
    /* the figure as printed (two decimals), not the float's rounding */
    const double frac = strtod(pct_s, NULL) / 100.0;
    uint8_t *buf = NULL, *obuf = NULL;
    size_t len = 0, olen = 0;
    int err = nc_file_read_model(in_path, CONVERT_MAX_BYTES, &buf, &len);
    if (err) {
        fprintf(stderr, "neocog-train convert: %s: %s\n", in_path, nc_strerror(err));
    } else if ((err = set_test_error(buf, len, frac, &obuf, &olen))) {
        fprintf(stderr, "neocog-train convert: %s: %s\n", in_path, nc_strerror(err));
    } else if ((err = nc_file_write_atomic(out_path, obuf, olen))) {
        fprintf(stderr, "neocog-train convert: %s: %s\n", out_path, nc_strerror(err));
    } else {
        fprintf(stderr, "neocog-train convert: %s -> %s (%zu bytes): recorded test error "
                "%.2f%%, every other section unchanged\n", in_path, out_path, olen,
                100.0 * frac);
    }
    free(obuf);
    free(buf);
    return err ? TRAIN_EXIT_FAIL : TRAIN_EXIT_OK;
}

int train_convert_main(int argc, char **argv, const train_cmdline *cmd)
{
    (void)cmd;      /* the file keeps its own provenance: nothing is added */
    nc_opts p = { .prog = "neocog-train convert", .usage = usage_text, .table = table };
    const char *pct_s = NULL;
    for (int c; (c = nc_opts_next(&p, argc, argv)) != NC_OPTS_END;) {
        float pct;
        switch (c) {
        case NC_OPTS_HELP: nc_opts_usage(&p, stdout); return TRAIN_EXIT_OK;
        case NC_OPTS_ERROR: return train_opts_fail(&p, NULL);
        case O_TEST_ERROR:
            pct_s = p.value;
            if (train_parse_float(pct_s, &pct) || !(pct >= 0.0f && pct <= 100.0f))
                return train_opts_bad(&p, c, "(a percentage 0..100)");
            break;
        }
    }
    if (argc - p.next != 2)
        return train_opts_fail(&p, "need IN and OUT");
    if (pct_s)
        return record_main(pct_s, argv[p.next], argv[p.next + 1]);
    const char *in_path = argv[p.next], *out_path = argv[p.next + 1];
    int status = TRAIN_EXIT_FAIL, err;
    uint8_t *buf = NULL, *obuf = NULL;
    size_t len = 0, olen = 0;
    nc_mf_reader *rd = NULL, *ord = NULL;
    nc_mf_writer *w = NULL;
    nc_neocog *net = NULL, *back = NULL;
    uint32_t tags[NC_MF_MAX_SECTIONS], n_tags = 0, n_copied = 0;
    char tb[5];

    if ((err = nc_file_read_model(in_path, CONVERT_MAX_BYTES, &buf, &len)) ||
        (err = nc_mf_open(buf, len, &rd))) {
        fprintf(stderr, "neocog-train convert: %s: %s\n", in_path, nc_strerror(err));
        goto out;
    }
    if (nc_mf_kind_of(rd) != NC_MF_KIND_NEOCOG) {
        fprintf(stderr, "neocog-train convert: %s: not a neocognitron model\n", in_path);
        goto out;
    }
    if ((err = nc_neocog_read(rd, &net))) {
        fprintf(stderr, "neocog-train convert: %s: %s\n", in_path, nc_strerror(err));
        goto out;
    }
    n_tags = list_tags(buf, tags, NC_MF_MAX_SECTIONS);

    /* the network first, as the trainer writes it, then every other section
     * in IN's order, exactly as stored */
    err = nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w);
    if (!err)
        err = nc_neocog_write(net, w);
    for (uint32_t i = 0; !err && i < n_tags; i++) {
        uint32_t type;
        const void *data;
        size_t n;
        if (is_net_tag(tags[i]))
            continue;
        err = nc_mf_get(rd, tags[i], &type, &data, &n);
        if (!err)
            err = nc_mf_put(w, tags[i], type, data, n);
        n_copied += !err;
    }
    if (!err)
        err = nc_mf_finish(w, &obuf, &olen);
    if (err) {
        fprintf(stderr, "neocog-train convert: writing: %s\n", nc_strerror(err));
        goto out;
    }

    /* read the new image back before anything is written */
    if ((err = nc_mf_open(obuf, olen, &ord)) || (err = nc_neocog_read(ord, &back))) {
        fprintf(stderr, "neocog-train convert: the new file does not load: %s\n",
                nc_strerror(err));
        goto out;
    }
    if (!same_net(net, back)) {
        fprintf(stderr, "neocog-train convert: the network did not round-trip\n");
        goto out;
    }
    for (uint32_t i = 0; i < n_tags; i++) {
        uint32_t t0, t1;
        const void *d0, *d1;
        size_t n0, n1;
        if (is_weight_tag(tags[i]))
            continue;
        if (nc_mf_get(rd, tags[i], &t0, &d0, &n0) || nc_mf_get(ord, tags[i], &t1, &d1, &n1) ||
            t0 != t1 || n0 != n1 || (n0 && memcmp(d0, d1, n0))) {
            fprintf(stderr, "neocog-train convert: section %s changed\n", tag_str(tags[i], tb));
            goto out;
        }
    }

    if ((err = nc_file_write_atomic(out_path, obuf, olen))) {
        fprintf(stderr, "neocog-train convert: %s: %s\n", out_path, nc_strerror(err));
        goto out;
    }
    for (uint32_t l = 0; l < net->arch.n_stages; l++) {
        const uint32_t K = net->n_planes[l], ks = nc_neocog_kstride(K);
        const size_t rows = (size_t)nc_neocog_k_in(net, l) * net->s_ix[l]->n_live;
        size_t nnz = 0;
        for (size_t r = 0; r < rows; r++)
            for (uint32_t k = 0; k < K; k++)
                nnz += net->a[l][r * ks + k] != 0.0f;
        const int sparse = nc_mf_get(ord, NC_MF_TAG('W', '1' + l, 'M', ' '), NULL, NULL,
                                     NULL) == 0;
        fprintf(stderr, "  stage %u: %zu weights, %.1f%% non-zero, %s\n", l + 1,
                (size_t)K * rows, 100.0 * (double)nnz / (double)(K * rows),
                sparse ? "sparse" : "dense");
    }
    fprintf(stderr, "neocog-train convert: %s (%zu bytes) -> %s (%zu bytes), "
            "network identical, %u other sections copied\n", in_path, len, out_path, olen,
            n_copied);
    status = TRAIN_EXIT_OK;
out:
    nc_neocog_free(back);
    nc_neocog_free(net);
    nc_mf_close(ord);
    nc_mf_close(rd);
    nc_mf_writer_free(w);
    free(obuf);
    free(buf);
    return status;
}

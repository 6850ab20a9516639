/* tools/train_rebind.c — `neocog-train calibrate --rebind OLD --ensemble NEW`:
 * move a CNN file's fitted ensemble rule from the neocognitron file OLD it
 * was fitted with to NEW, without fitting it again.
 *
 * Layer: tools.  A rule is bound to its partner's fingerprint (the CRC-32
 * and length of the file image, core/calib/calib.h), so even a change to the
 * partner's record (its test error, say) unbinds it.  Refitting would run
 * the neocognitron over the validation digits again to get the same scores;
 * instead NEW must be OLD with only record text changed, the sections that
 * cannot change an answer (test error, data, command, created, test set).
 * Then every score, and so the fitted rule, is the same: the CNN file keeps
 * its sections byte for byte except the partner (ENSF) and the rule's note
 * (ENST), which says it was re-bound. */
#include "train_calib.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib.h"
#include "fileio.h"

/* Record sections that describe a model without changing what it computes
 * (core/modelfile/modelfile_info.c). */
static int is_record_text(uint32_t tag)
{
    return tag == NC_MF_TAG('T', 'E', 'R', 'R') || tag == NC_MF_TAG('D', 'A', 'T', 'A') ||
           tag == NC_MF_TAG('C', 'M', 'N', 'D') || tag == NC_MF_TAG('C', 'R', 'T', 'D') ||
           tag == NC_MF_TAG('T', 'S', 'E', 'T');
}

/* 1 when images a and b hold the same sections in the same order with the
 * same bytes, record text aside. */
static int same_but_record(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    nc_mf_reader *ra = NULL, *rb = NULL;
    int same = !nc_mf_open(a, na, &ra) && !nc_mf_open(b, nb, &rb) &&
               nc_mf_kind_of(ra) == nc_mf_kind_of(rb) &&
               nc_mf_section_count(ra) == nc_mf_section_count(rb);
    for (uint32_t i = 0; same && i < nc_mf_section_count(ra); i++) {
        uint32_t t0, t1, y0, y1;
        const void *d0, *d1;
        size_t n0, n1;
        same = !nc_mf_section_at(ra, i, &t0, &y0, &d0, &n0) &&
               !nc_mf_section_at(rb, i, &t1, &y1, &d1, &n1) && t0 == t1 &&
               (is_record_text(t0) ||
                (y0 == y1 && n0 == n1 && (n0 == 0 || !memcmp(d0, d1, n0))));
    }
    nc_mf_close(rb);
    nc_mf_close(ra);
    return same;
}

/* A note section's text, or "" (malloc'd, NULL on no memory). */
static char *note_of(const nc_mf_reader *r, uint32_t tag)
{
    uint32_t type;
    const void *data;
    size_t n = 0;
    if (nc_mf_get(r, tag, &type, &data, &n))
        n = 0;
    char *s = malloc(n + 1);
    if (s) {
        if (n)
            memcpy(s, data, n);
        s[n] = '\0';
        s[strnlen(s, n)] = '\0';
    }
    return s;
}

int train_rebind(const char *who, const char *model, const char *old_neo, const char *new_neo,
                 const char *out, const char *command)
{
    uint8_t *buf = NULL, *obuf = NULL, *oldb = NULL, *newb = NULL;
    size_t len = 0, olen = 0, oldn = 0, newn = 0;
    nc_mf_reader *r = NULL;
    nc_mf_writer *w = NULL;
    nc_backend *back = NULL;
    char *cal_note = NULL, *ens_note = NULL, *note = NULL;
    nc_calib cal;
    nc_ens_rule ens;
    nc_model_fp fp_old, fp_new;
    int status = TRAIN_EXIT_FAIL, err;

    if ((err = nc_file_read_model(model, TRAIN_MODEL_MAX_BYTES, &buf, &len)) ||
        (err = nc_file_read_model(old_neo, TRAIN_MODEL_MAX_BYTES, &oldb, &oldn)) ||
        (err = nc_file_read_model(new_neo, TRAIN_MODEL_MAX_BYTES, &newb, &newn)) ||
        (err = nc_mf_open(buf, len, &r)) || (err = nc_calib_read(r, &cal, &ens)) ||
        (err = nc_model_fingerprint(oldb, oldn, &fp_old)) ||
        (err = nc_model_fingerprint(newb, newn, &fp_new))) {
        fprintf(stderr, "%s: --rebind: %s\n", who, nc_strerror(err));
        goto out;
    }
    if (nc_mf_kind_of(r) != NC_MF_KIND_CNN || !ens.fitted) {
        fprintf(stderr, "%s: --rebind: %s holds no fitted ensemble rule\n", who, model);
        goto out;
    }
    if (ens.partner.crc != fp_old.crc || ens.partner.len != fp_old.len) {
        fprintf(stderr, "%s: --rebind: %s's rule was not fitted with %s\n", who, model,
                old_neo);
        goto out;
    }
    if (!same_but_record(oldb, oldn, newb, newn)) {
        fprintf(stderr, "%s: --rebind: %s is not %s with only its record's text changed; "
                "fit the rule again (--ensemble without --rebind)\n", who, new_neo, old_neo);
        goto out;
    }
    cal_note = note_of(r, NC_CALIB_TAG_NOTE);
    ens_note = note_of(r, NC_ENS_TAG_NOTE);
    const size_t cap = (ens_note ? strlen(ens_note) : 0) + strlen(command) + strlen(new_neo) + 256;
    note = malloc(cap);
    if (!cal_note || !ens_note || !note) {
        err = -ENOMEM;
        fprintf(stderr, "%s: --rebind: %s\n", who, nc_strerror(err));
        goto out;
    }
    snprintf(note, cap, "%s; re-bound by: %s; partner now %s (CRC-32 %08x, %llu bytes), "
             "the fitted partner with only its record's text changed", ens_note, command,
             new_neo, fp_new.crc, (unsigned long long)fp_new.len);
    nc_ens_rule moved = ens;
    moved.partner = fp_new;

    /* the CNN file with its rule sections written again, the partner moved */
    err = nc_mf_writer_new(nc_mf_kind_of(r), &w);
    for (uint32_t i = 0; !err && i < nc_mf_section_count(r); i++) {
        uint32_t tag, type;
        const void *data;
        size_t n;
        if (!(err = nc_mf_section_at(r, i, &tag, &type, &data, &n)) && !nc_calib_is_tag(tag))
            err = nc_mf_put(w, tag, type, data, n);
    }
    if (!err)
        err = nc_calib_write(w, &cal, cal_note, &moved, note);
    if (!err)
        err = nc_mf_finish(w, &obuf, &olen);
    if (!err)
        err = nc_backend_open(&nc_backend_cpu, obuf, olen, 0, &back);
    if (err) {
        fprintf(stderr, "%s: --rebind: writing: %s\n", who, nc_strerror(err));
        goto out;
    }
    if (back->ens.partner.crc != fp_new.crc || back->ens.partner.len != fp_new.len ||
        back->ens.w_cnn != ens.w_cnn || back->ens.reject_threshold != ens.reject_threshold ||
        back->calib.fitted != cal.fitted || back->calib.beta != cal.beta) {
        fprintf(stderr, "%s: --rebind: the written file does not read back as written\n", who);
        goto out;
    }
    if ((err = nc_file_write_atomic(out, obuf, olen))) {
        fprintf(stderr, "%s: writing %s: %s\n", who, out, nc_strerror(err));
        goto out;
    }
    printf("rebound     %s: ensemble rule (w_cnn %.4f) from CRC %08x to %s (CRC %08x, "
           "%llu bytes)\nwrote       %s (%zu bytes)\n", model, ens.w_cnn, fp_old.crc, new_neo,
           fp_new.crc, (unsigned long long)fp_new.len, out, olen);
    status = TRAIN_EXIT_OK;
out:
    nc_backend_close(back);
    nc_mf_writer_free(w);
    nc_mf_close(r);
    free(note);
    free(ens_note);
    free(cal_note);
    free(obuf);
    free(newb);
    free(oldb);
    free(buf);
    return status;
}

/* core/modelfile/modelfile_committee.h — the container both committee forms
 * share (cnn.h and neocog.h, "committees"): a u32 section holding the member
 * count, each member a complete one-model file image in a section of its
 * own (tags p0 p1 01, p0 p1 02, ... : nc_mf_put_member), and the committee's
 * own record.  Which network a member holds and how members must agree stay
 * with each form (core/cnn/cnn_committee.c, core/neocog/neocog_committee.c).
 *
 * Layer: core.  Byte buffers only; error codes as in common.h. */
#ifndef NC_MODELFILE_COMMITTEE_H
#define NC_MODELFILE_COMMITTEE_H

#include "modelfile.h"

typedef struct nc_mf_committee_form {
    uint32_t kind;              /* nc_mf_kind of the file and of each member */
    uint32_t count_tag;         /* the u32 section with the member count */
    char p0, p1;                /* the member sections' first two characters */
    uint32_t max_members;
    const uint32_t *own_tags;   /* sections of a one-model file: none may sit
                                   beside the members (one form per file) */
    uint32_t n_own_tags;
} nc_mf_committee_form;

/* Member i's one-model file image (malloc'd, the caller frees it). */
typedef int (*nc_mf_member_save_fn)(void *ctx, uint32_t i, uint8_t **ret_buf, size_t *ret_len);
/* Load member i from its file image data[len] (borrowed from the reader). */
typedef int (*nc_mf_member_load_fn)(void *ctx, uint32_t i, const void *data, size_t len);

/* The committee file of f's form: the count n, members 0..n-1 from
 * save_one, then info (the committee's own record).  The caller has checked
 * the members; the first error stops it. */
int nc_mf_committee_save(const nc_mf_committee_form *f, uint32_t n, nc_mf_member_save_fn save_one,
                         void *ctx, const nc_model_info *info, uint8_t **ret_buf,
                         size_t *ret_len);

/* 1 when r holds f's count section (a committee), 0 for the one-model form. */
int nc_mf_committee_is(const nc_mf_reader *r, const nc_mf_committee_form *f);

/* The member count of a committee file: 2..f->max_members, every member
 * section present and no other, and none of f's own_tags; else -EBADMSG. */
int nc_mf_committee_count(const nc_mf_reader *r, const nc_mf_committee_form *f, uint32_t *ret_n);

/* load_one on members 0..n-1 in order, stopping at the first error, which
 * comes back as load_one gave it (a missing member section: -EBADMSG). */
int nc_mf_committee_each(const nc_mf_reader *r, const nc_mf_committee_form *f, uint32_t n,
                         nc_mf_member_load_fn load_one, void *ctx);

/* Anything a committee file says that cannot be a committee (its record,
 * a member's file) is corrupt data: err as -EBADMSG, but for -ENOMEM. */
static inline int nc_mf_committee_corrupt(int err)
{
    return err == -ENOMEM ? err : -EBADMSG;
}

#endif

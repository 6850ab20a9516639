/* core/modelfile/modelfile.h — the one model file format for both networks.
 *
 * Layer: core.  Works on byte buffers only: reading and writing files is the
 * caller's job (tools/, daemon/).
 *
 * Layout (all integers little-endian):
 *
 *   header   8  magic "NCMODEL\0"
 *            4  format version (NC_MF_VERSION)
 *            4  kind (nc_mf_kind)
 *            4  number of sections
 *            4  reserved, 0
 *            8  total file length in bytes, trailer included
 *   sections, each:
 *            4  tag (four ASCII characters, e.g. "ARCH")
 *            4  element type (nc_mf_type)
 *            8  payload length in bytes (a multiple of the element size)
 *            .. payload, then zero padding to a multiple of 8 bytes
 *   trailer  4  CRC-32 (IEEE, as zlib's crc32) of every byte before it
 *
 * nc_mf_open() checks all of this before handing out a single section:
 * magic, version, kind, lengths that stay inside the buffer, padding that is
 * zero, no duplicate tags, and the checksum.  Any truncation or flipped bit
 * therefore fails cleanly with -EBADMSG (or -ENOTSUP for a newer version).
 * The network loaders then check that the sections agree with each other.
 *
 * A file may also be stored gzip'd as a whole (models/neocognitron.ncm is):
 * the programs that read model files inflate it (nc_gunzip_replace,
 * dataset.h) before handing the image here. */
#ifndef NC_MODELFILE_H
#define NC_MODELFILE_H

#include "common.h"
#include "image.h"

#define NC_MF_VERSION 1u
#define NC_MF_MAX_SECTIONS 256u
/* Classes a model may have: room for the 94 printable ASCII characters
 * and more.  Every per-class array in core, daemon and tools is sized by it
 * (nc_model_info's labels: 2 KB; an answer's scores, probabilities and
 * ranking; a segmented character's candidates), so it stays a small
 * number; class numbers fit a uint8_t. */
#define NC_MF_MAX_CLASSES 128u
#define NC_MF_TAG(a, b, c, d) \
    ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

typedef enum nc_mf_kind {
    NC_MF_KIND_NEOCOG = 1,
    NC_MF_KIND_CNN = 2,
    NC_MF_KIND_ENSEMBLE = 3,
} nc_mf_kind;

typedef enum nc_mf_type {
    NC_MF_TYPE_BYTES = 0,   /* opaque bytes or UTF-8 text (no NUL inside) */
    NC_MF_TYPE_U32 = 1,
    NC_MF_TYPE_F32 = 2,     /* IEEE-754 binary32; readers reject NaN/Inf */
    NC_MF_TYPE_F64 = 3,
} nc_mf_type;

/* What every model carries besides its weights: classes, preprocessing and
 * provenance.  Strings are NUL-terminated and truncated to fit. */
typedef struct nc_model_info {
    uint32_t n_classes;
    char labels[NC_MF_MAX_CLASSES][16]; /* UTF-8 text of each class: MNIST's
                                           "0".."9", or a character set's */
    nc_prep prep;
    char data[256];         /* training data, e.g. "MNIST train 0-49999" */
    char command[1024];     /* the command that produced the model */
    char created[32];       /* ISO 8601 UTC time of creation */
    uint32_t epochs;
    uint64_t seed;
    double test_error;      /* measured error on test_set, fraction; < 0 unknown */
    char test_set[128];     /* e.g. "MNIST t10k (10000)" */
} nc_model_info;

/* ---- writing ---------------------------------------------------------- */

typedef struct nc_mf_writer nc_mf_writer;

int nc_mf_writer_new(uint32_t kind, nc_mf_writer **ret_w);
void nc_mf_writer_free(nc_mf_writer *w);           /* NULL is fine */

/* Append a section; tags must be unique within a file (-EINVAL otherwise).
 * Tags are four printable ASCII characters.  nc_mf_put takes the payload
 * exactly as stored, i.e. numbers already little-endian, just as nc_mf_get
 * hands it back; the typed puts and gets convert from and to host order.
 * nc_mf_put_f32/_f64 refuse NaN/Inf (-EINVAL) so a writer cannot produce a
 * file its readers reject; nc_mf_put does not look at values.  The info
 * sections use the tags INFO, LABL, PREP, PTHR, PDSK, PVEW, DATA, CMND, CRTD,
 * TERR, TSET; other modules must not reuse them. */
int nc_mf_put(nc_mf_writer *w, uint32_t tag, uint32_t type,
              const void *data, size_t n_bytes);
int nc_mf_put_str(nc_mf_writer *w, uint32_t tag, const char *s);
int nc_mf_put_u32(nc_mf_writer *w, uint32_t tag, const uint32_t *v, size_t n);
int nc_mf_put_f32(nc_mf_writer *w, uint32_t tag, const float *v, size_t n);
int nc_mf_put_info(nc_mf_writer *w, const nc_model_info *info);

/* Added: an f64 section (host doubles stored little-endian); non-finite
 * values are refused with -EINVAL, as nc_mf_put_f32 does. */
int nc_mf_put_f64(nc_mf_writer *w, uint32_t tag, const double *v, size_t n);

/* Produce the file image (malloc'd; the caller frees it). */
int nc_mf_finish(nc_mf_writer *w, uint8_t **ret_buf, size_t *ret_len);

/* ---- reading ---------------------------------------------------------- */

typedef struct nc_mf_reader nc_mf_reader;

/* Validate the whole buffer (see above).  The reader borrows buf, which must
 * outlive it. */
int nc_mf_open(const uint8_t *buf, size_t len, nc_mf_reader **ret_r);
void nc_mf_close(nc_mf_reader *r);                  /* NULL is fine */
uint32_t nc_mf_kind_of(const nc_mf_reader *r);

/* Borrow a section's payload; -ENOENT when absent. */
int nc_mf_get(const nc_mf_reader *r, uint32_t tag, uint32_t *ret_type,
              const void **ret_data, size_t *ret_n_bytes);
/* Added: the sections in file order, for tools that copy a file and
 * replace some of it.  -ENOENT when i >= nc_mf_section_count(r). */
uint32_t nc_mf_section_count(const nc_mf_reader *r);
int nc_mf_section_at(const nc_mf_reader *r, uint32_t i, uint32_t *ret_tag,
                     uint32_t *ret_type, const void **ret_data, size_t *ret_n_bytes);
/* Copy a text section into dst (NUL-terminated); -EBADMSG if it holds a NUL
 * or does not fit in cap bytes. */
int nc_mf_get_str(const nc_mf_reader *r, uint32_t tag, char *dst, size_t cap);
/* Copy exactly n elements; -EBADMSG on a type or count mismatch or (f32) a
 * non-finite value.  nc_mf_count tells n first. */
int nc_mf_count(const nc_mf_reader *r, uint32_t tag, uint32_t type, size_t *ret_n);
int nc_mf_get_u32(const nc_mf_reader *r, uint32_t tag, uint32_t *dst, size_t n);
int nc_mf_get_f32(const nc_mf_reader *r, uint32_t tag, float *dst, size_t n);
int nc_mf_get_info(const nc_mf_reader *r, nc_model_info *ret_info);
/* NULL when two records agree on classes, labels and preprocessing (what
 * the members of a committee must share), else a short English phrase
 * naming what differs.  The preps' views (image.h) are not compared: a
 * committee's record may ask for views its members were not trained with
 * (the neocognitron committee refuses views in a member's own record). */
const char *nc_mf_info_mismatch(const nc_model_info *ia, const nc_model_info *ib);

/* Nested files (the committees of cnn.h and neocog.h): a committee file
 * holds its N members as complete model files in BYTES sections named by
 * two letters and a two-digit 1-based index ('C','L' -> "CL01".."CL64";
 * 'N','M' -> "NM01"..), and N in one u32 section count_tag. */
int nc_mf_put_member(nc_mf_writer *w, char p0, char p1, uint32_t i, const uint8_t *buf,
                     size_t len);
/* *ret_n = N from count_tag (exactly one u32, in 2..max), after checking
 * that every section named like a member has an index in 1..N: -EBADMSG
 * otherwise. */
int nc_mf_members(const nc_mf_reader *r, uint32_t count_tag, char p0, char p1, uint32_t max,
                  uint32_t *ret_n);
/* Member i's (0-based) file image, borrowed from r: -EBADMSG when it is
 * missing or not BYTES. */
int nc_mf_member(const nc_mf_reader *r, char p0, char p1, uint32_t i, const void **ret_data,
                 size_t *ret_len);
/* Added: f64 twin of nc_mf_get_f32 (-EBADMSG on NaN/Inf). */
int nc_mf_get_f64(const nc_mf_reader *r, uint32_t tag, double *dst, size_t n);

/* CRC-32 (IEEE) of a buffer, exposed for tests and tools. */
uint32_t nc_crc32(const uint8_t *buf, size_t len);

#endif

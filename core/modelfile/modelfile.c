/* core/modelfile/modelfile.c — the versioned, checksummed model file (see modelfile.h).
 *
 * The model info and nested member files, built on the calls here, are in
 * modelfile_info.c.
 *
 * Layer: core.  Byte buffers only.  Every integer is read and written byte by
 * byte in little-endian order, so files move between hosts of either
 * endianness, and nothing is ever read through a cast of the buffer (no
 * alignment or aliasing assumptions about the caller's bytes). */
#include "modelfile_internal.h"

#include <float.h>
#include <math.h>
#include <string.h>

_Static_assert(NC_MF_MAX_CLASSES <= 256, "class numbers are stored in uint8_t (labels, rankings)");
_Static_assert(sizeof(float) == 4 && sizeof(double) == 8,
               "model files store IEEE-754 binary32 and binary64");

#define MF_MAGIC "NCMODEL\0"
#define MF_HEADER_LEN 32u
#define MF_SECTION_HEADER_LEN 16u
#define MF_TRAILER_LEN 4u

/* ---- little-endian helpers -------------------------------------------- */

static uint32_t get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p)
{
    return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void put_le64(uint8_t *p, uint64_t v)
{
    put_le32(p, (uint32_t)v);
    put_le32(p + 4, (uint32_t)(v >> 32));
}

/* ---- CRC-32 ------------------------------------------------------------ */

/* The reflected IEEE polynomial 0xEDB88320, one entry per byte value, as
 * zlib's crc32() uses.  A constant table keeps core free of zlib and of any
 * lazily initialised (and so racy) global state. */
static const uint32_t crc_table[256] = {
    0x00000000u, 0x77073096u, 0xee0e612cu, 0x990951bau, 0x076dc419u, 0x706af48fu,
    0xe963a535u, 0x9e6495a3u, 0x0edb8832u, 0x79dcb8a4u, 0xe0d5e91eu, 0x97d2d988u,
    0x09b64c2bu, 0x7eb17cbdu, 0xe7b82d07u, 0x90bf1d91u, 0x1db71064u, 0x6ab020f2u,
    0xf3b97148u, 0x84be41deu, 0x1adad47du, 0x6ddde4ebu, 0xf4d4b551u, 0x83d385c7u,
    0x136c9856u, 0x646ba8c0u, 0xfd62f97au, 0x8a65c9ecu, 0x14015c4fu, 0x63066cd9u,
    0xfa0f3d63u, 0x8d080df5u, 0x3b6e20c8u, 0x4c69105eu, 0xd56041e4u, 0xa2677172u,
    0x3c03e4d1u, 0x4b04d447u, 0xd20d85fdu, 0xa50ab56bu, 0x35b5a8fau, 0x42b2986cu,
    0xdbbbc9d6u, 0xacbcf940u, 0x32d86ce3u, 0x45df5c75u, 0xdcd60dcfu, 0xabd13d59u,
    0x26d930acu, 0x51de003au, 0xc8d75180u, 0xbfd06116u, 0x21b4f4b5u, 0x56b3c423u,
    0xcfba9599u, 0xb8bda50fu, 0x2802b89eu, 0x5f058808u, 0xc60cd9b2u, 0xb10be924u,
    0x2f6f7c87u, 0x58684c11u, 0xc1611dabu, 0xb6662d3du, 0x76dc4190u, 0x01db7106u,
    0x98d220bcu, 0xefd5102au, 0x71b18589u, 0x06b6b51fu, 0x9fbfe4a5u, 0xe8b8d433u,
    0x7807c9a2u, 0x0f00f934u, 0x9609a88eu, 0xe10e9818u, 0x7f6a0dbbu, 0x086d3d2du,
    0x91646c97u, 0xe6635c01u, 0x6b6b51f4u, 0x1c6c6162u, 0x856530d8u, 0xf262004eu,
    0x6c0695edu, 0x1b01a57bu, 0x8208f4c1u, 0xf50fc457u, 0x65b0d9c6u, 0x12b7e950u,
    0x8bbeb8eau, 0xfcb9887cu, 0x62dd1ddfu, 0x15da2d49u, 0x8cd37cf3u, 0xfbd44c65u,
    0x4db26158u, 0x3ab551ceu, 0xa3bc0074u, 0xd4bb30e2u, 0x4adfa541u, 0x3dd895d7u,
    0xa4d1c46du, 0xd3d6f4fbu, 0x4369e96au, 0x346ed9fcu, 0xad678846u, 0xda60b8d0u,
    0x44042d73u, 0x33031de5u, 0xaa0a4c5fu, 0xdd0d7cc9u, 0x5005713cu, 0x270241aau,
    0xbe0b1010u, 0xc90c2086u, 0x5768b525u, 0x206f85b3u, 0xb966d409u, 0xce61e49fu,
    0x5edef90eu, 0x29d9c998u, 0xb0d09822u, 0xc7d7a8b4u, 0x59b33d17u, 0x2eb40d81u,
    0xb7bd5c3bu, 0xc0ba6cadu, 0xedb88320u, 0x9abfb3b6u, 0x03b6e20cu, 0x74b1d29au,
    0xead54739u, 0x9dd277afu, 0x04db2615u, 0x73dc1683u, 0xe3630b12u, 0x94643b84u,
    0x0d6d6a3eu, 0x7a6a5aa8u, 0xe40ecf0bu, 0x9309ff9du, 0x0a00ae27u, 0x7d079eb1u,
    0xf00f9344u, 0x8708a3d2u, 0x1e01f268u, 0x6906c2feu, 0xf762575du, 0x806567cbu,
    0x196c3671u, 0x6e6b06e7u, 0xfed41b76u, 0x89d32be0u, 0x10da7a5au, 0x67dd4accu,
    0xf9b9df6fu, 0x8ebeeff9u, 0x17b7be43u, 0x60b08ed5u, 0xd6d6a3e8u, 0xa1d1937eu,
    0x38d8c2c4u, 0x4fdff252u, 0xd1bb67f1u, 0xa6bc5767u, 0x3fb506ddu, 0x48b2364bu,
    0xd80d2bdau, 0xaf0a1b4cu, 0x36034af6u, 0x41047a60u, 0xdf60efc3u, 0xa867df55u,
    0x316e8eefu, 0x4669be79u, 0xcb61b38cu, 0xbc66831au, 0x256fd2a0u, 0x5268e236u,
    0xcc0c7795u, 0xbb0b4703u, 0x220216b9u, 0x5505262fu, 0xc5ba3bbeu, 0xb2bd0b28u,
    0x2bb45a92u, 0x5cb36a04u, 0xc2d7ffa7u, 0xb5d0cf31u, 0x2cd99e8bu, 0x5bdeae1du,
    0x9b64c2b0u, 0xec63f226u, 0x756aa39cu, 0x026d930au, 0x9c0906a9u, 0xeb0e363fu,
    0x72076785u, 0x05005713u, 0x95bf4a82u, 0xe2b87a14u, 0x7bb12baeu, 0x0cb61b38u,
    0x92d28e9bu, 0xe5d5be0du, 0x7cdcefb7u, 0x0bdbdf21u, 0x86d3d2d4u, 0xf1d4e242u,
    0x68ddb3f8u, 0x1fda836eu, 0x81be16cdu, 0xf6b9265bu, 0x6fb077e1u, 0x18b74777u,
    0x88085ae6u, 0xff0f6a70u, 0x66063bcau, 0x11010b5cu, 0x8f659effu, 0xf862ae69u,
    0x616bffd3u, 0x166ccf45u, 0xa00ae278u, 0xd70dd2eeu, 0x4e048354u, 0x3903b3c2u,
    0xa7672661u, 0xd06016f7u, 0x4969474du, 0x3e6e77dbu, 0xaed16a4au, 0xd9d65adcu,
    0x40df0b66u, 0x37d83bf0u, 0xa9bcae53u, 0xdebb9ec5u, 0x47b2cf7fu, 0x30b5ffe9u,
    0xbdbdf21cu, 0xcabac28au, 0x53b39330u, 0x24b4a3a6u, 0xbad03605u, 0xcdd70693u,
    0x54de5729u, 0x23d967bfu, 0xb3667a2eu, 0xc4614ab8u, 0x5d681b02u, 0x2a6f2b94u,
    0xb40bbe37u, 0xc30c8ea1u, 0x5a05df1bu, 0x2d02ef8du,
};

uint32_t nc_crc32(const uint8_t *buf, size_t len)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < len; i++)
        c = crc_table[(c ^ buf[i]) & 0xffu] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

/* ---- shared checks ----------------------------------------------------- */

static size_t type_size(uint32_t type)
{
    switch (type) {
    case NC_MF_TYPE_BYTES: return 1;
    case NC_MF_TYPE_U32:   return 4;
    case NC_MF_TYPE_F32:   return 4;
    case NC_MF_TYPE_F64:   return 8;
    default:               return 0;    /* unknown type */
    }
}

static int kind_known(uint32_t kind)
{
    return kind == NC_MF_KIND_NEOCOG || kind == NC_MF_KIND_CNN ||
           kind == NC_MF_KIND_ENSEMBLE;
}

/* Tags are printable ASCII so they read well in a hex dump and a random
 * byte pattern is unlikely to pass for one. */
static int tag_valid(uint32_t tag)
{
    for (int i = 0; i < 4; i++) {
        unsigned c = (tag >> (8 * i)) & 0xffu;
        if (c < 0x20 || c > 0x7e)
            return 0;
    }
    return 1;
}

/* Bytes of zero padding after a payload of n bytes. */
static uint64_t pad8(uint64_t n)
{
    return (8 - (n & 7)) & 7;
}

/* ---- writing ----------------------------------------------------------- */

typedef struct mf_section_out {
    uint32_t tag, type;
    uint8_t *data;          /* payload as stored (little-endian) */
    size_t len;
} mf_section_out;

struct nc_mf_writer {
    uint32_t kind;
    uint32_t n;
    mf_section_out sec[NC_MF_MAX_SECTIONS];
};

int nc_mf_writer_room(const nc_mf_writer *w, const uint32_t *tags, size_t n)
{
    if (w->n > NC_MF_MAX_SECTIONS - n)
        return -EOVERFLOW;
    for (uint32_t i = 0; i < w->n; i++)
        for (size_t t = 0; t < n; t++)
            if (w->sec[i].tag == tags[t])
                return -EINVAL;
    return 0;
}

int nc_mf_writer_new(uint32_t kind, nc_mf_writer **ret_w)
{
    if (!ret_w || !kind_known(kind))
        return -EINVAL;
    nc_mf_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->kind = kind;
    *ret_w = w;
    return 0;
}

void nc_mf_writer_free(nc_mf_writer *w)
{
    if (!w)
        return;
    for (uint32_t i = 0; i < w->n; i++)
        NC_FREE(w->sec[i].data);
    free(w);
}

/* Reserve a section and its payload buffer; the caller fills data. */
static int writer_add(nc_mf_writer *w, uint32_t tag, uint32_t type,
                      size_t n_bytes, uint8_t **ret_data)
{
    if (!w || !tag_valid(tag))
        return -EINVAL;
    size_t es = type_size(type);
    if (es == 0 || n_bytes % es != 0)
        return -EINVAL;
    for (uint32_t i = 0; i < w->n; i++)
        if (w->sec[i].tag == tag)
            return -EINVAL;
    if (w->n >= NC_MF_MAX_SECTIONS)
        return -EOVERFLOW;
    /* Leave room for headers and padding so nc_mf_finish's sums cannot wrap. */
    if (n_bytes > SIZE_MAX / 2)
        return -EOVERFLOW;
    uint8_t *data = malloc(n_bytes ? n_bytes : 1);
    if (!data)
        return -ENOMEM;
    mf_section_out *s = &w->sec[w->n++];
    s->tag = tag;
    s->type = type;
    s->data = data;
    s->len = n_bytes;
    *ret_data = data;
    return 0;
}

int nc_mf_put(nc_mf_writer *w, uint32_t tag, uint32_t type,
              const void *data, size_t n_bytes)
{
    if (!data && n_bytes)
        return -EINVAL;
    uint8_t *dst;
    int r = writer_add(w, tag, type, n_bytes, &dst);
    if (r < 0)
        return r;
    if (n_bytes)
        memcpy(dst, data, n_bytes);
    return 0;
}

int nc_mf_put_str(nc_mf_writer *w, uint32_t tag, const char *s)
{
    if (!s)
        return -EINVAL;
    return nc_mf_put(w, tag, NC_MF_TYPE_BYTES, s, strlen(s));
}

int nc_mf_put_u32(nc_mf_writer *w, uint32_t tag, const uint32_t *v, size_t n)
{
    size_t nb;
    if ((!v && n) || nc_size_mul(n, 4, &nb) < 0)
        return -EINVAL;
    uint8_t *dst;
    int r = writer_add(w, tag, NC_MF_TYPE_U32, nb, &dst);
    if (r < 0)
        return r;
    for (size_t i = 0; i < n; i++)
        put_le32(dst + 4 * i, v[i]);
    return 0;
}

int nc_mf_put_f32(nc_mf_writer *w, uint32_t tag, const float *v, size_t n)
{
    size_t nb;
    if ((!v && n) || nc_size_mul(n, 4, &nb) < 0)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return -EINVAL;
    uint8_t *dst;
    int r = writer_add(w, tag, NC_MF_TYPE_F32, nb, &dst);
    if (r < 0)
        return r;
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], 4);
        put_le32(dst + 4 * i, bits);
    }
    return 0;
}

int nc_mf_put_f64(nc_mf_writer *w, uint32_t tag, const double *v, size_t n)
{
    size_t nb;
    if ((!v && n) || nc_size_mul(n, 8, &nb) < 0)
        return -EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return -EINVAL;
    uint8_t *dst;
    int r = writer_add(w, tag, NC_MF_TYPE_F64, nb, &dst);
    if (r < 0)
        return r;
    for (size_t i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &v[i], 8);
        put_le64(dst + 8 * i, bits);
    }
    return 0;
}

int nc_mf_finish(nc_mf_writer *w, uint8_t **ret_buf, size_t *ret_len)
{
    if (!w || !ret_buf || !ret_len)
        return -EINVAL;
    /* Each payload is at most SIZE_MAX / 2 (writer_add), but many of them
     * could still add up past SIZE_MAX on a 32-bit host: check each step. */
    size_t total = MF_HEADER_LEN + MF_TRAILER_LEN;
    for (uint32_t i = 0; i < w->n; i++) {
        size_t add = MF_SECTION_HEADER_LEN + w->sec[i].len +
                     (size_t)pad8(w->sec[i].len);
        if (add > SIZE_MAX - total)
            return -EOVERFLOW;
        total += add;
    }
    uint8_t *buf = calloc(1, total);    /* zeroed: padding and reserved */
    if (!buf)
        return -ENOMEM;
    memcpy(buf, MF_MAGIC, 8);
    put_le32(buf + 8, NC_MF_VERSION);
    put_le32(buf + 12, w->kind);
    put_le32(buf + 16, w->n);
    put_le32(buf + 20, 0);
    put_le64(buf + 24, (uint64_t)total);
    size_t off = MF_HEADER_LEN;
    for (uint32_t i = 0; i < w->n; i++) {
        const mf_section_out *s = &w->sec[i];
        put_le32(buf + off, s->tag);
        put_le32(buf + off + 4, s->type);
        put_le64(buf + off + 8, (uint64_t)s->len);
        off += MF_SECTION_HEADER_LEN;
        if (s->len)
            memcpy(buf + off, s->data, s->len);
        off += s->len + (size_t)pad8(s->len);
    }
    put_le32(buf + off, nc_crc32(buf, off));
    *ret_buf = buf;
    *ret_len = total;
    return 0;
}

/* ---- reading ----------------------------------------------------------- */

typedef struct mf_section_in {
    uint32_t tag, type;
    const uint8_t *data;    /* borrowed from the caller's buffer */
    size_t len;
} mf_section_in;

struct nc_mf_reader {
    uint32_t kind;
    uint32_t n;
    mf_section_in sec[];
};

int nc_mf_open(const uint8_t *buf, size_t len, nc_mf_reader **ret_r)
{
    if ((!buf && len) || !ret_r)
        return -EINVAL;
    if (len < MF_HEADER_LEN + MF_TRAILER_LEN || memcmp(buf, MF_MAGIC, 8) != 0)
        return -EBADMSG;
    /* The version comes first: a newer file may lay out everything after
     * the header differently, so only its number can be trusted. */
    uint32_t version = get_le32(buf + 8);
    if (version == 0)
        return -EBADMSG;
    if (version > NC_MF_VERSION)
        return -ENOTSUP;
    uint32_t kind = get_le32(buf + 12);
    uint32_t n = get_le32(buf + 16);
    if (!kind_known(kind) || n > NC_MF_MAX_SECTIONS || get_le32(buf + 20) != 0 ||
        get_le64(buf + 24) != (uint64_t)len)
        return -EBADMSG;
    size_t end = len - MF_TRAILER_LEN;
    if (get_le32(buf + end) != nc_crc32(buf, end))
        return -EBADMSG;

    nc_mf_reader *r = malloc(sizeof(*r) + (size_t)n * sizeof(r->sec[0]));
    if (!r)
        return -ENOMEM;
    r->kind = kind;
    r->n = n;
    /* The CRC only says the bytes are as written; a buggy or hostile writer
     * can still produce a matching CRC, so every length is checked too. */
    size_t off = MF_HEADER_LEN;
    for (uint32_t i = 0; i < n; i++) {
        if (end - off < MF_SECTION_HEADER_LEN)
            goto bad;
        uint32_t tag = get_le32(buf + off);
        uint32_t type = get_le32(buf + off + 4);
        uint64_t plen = get_le64(buf + off + 8);
        off += MF_SECTION_HEADER_LEN;
        size_t es = type_size(type);
        if (!tag_valid(tag) || es == 0 || plen % es != 0)
            goto bad;
        uint64_t room = end - off;
        if (plen > room || pad8(plen) > room - plen)
            goto bad;
        for (uint32_t j = 0; j < i; j++)
            if (r->sec[j].tag == tag)
                goto bad;
        r->sec[i] = (mf_section_in){ tag, type, buf + off, (size_t)plen };
        off += (size_t)plen;
        for (uint64_t k = 0; k < pad8(plen); k++)
            if (buf[off++] != 0)
                goto bad;
    }
    if (off != end)         /* bytes between the last section and the CRC */
        goto bad;
    *ret_r = r;
    return 0;
bad:
    free(r);
    return -EBADMSG;
}

void nc_mf_close(nc_mf_reader *r)
{
    free(r);
}

uint32_t nc_mf_kind_of(const nc_mf_reader *r)
{
    return r ? r->kind : 0;
}

static const mf_section_in *find(const nc_mf_reader *r, uint32_t tag)
{
    for (uint32_t i = 0; i < r->n; i++)
        if (r->sec[i].tag == tag)
            return &r->sec[i];
    return NULL;
}

int nc_mf_get(const nc_mf_reader *r, uint32_t tag, uint32_t *ret_type,
              const void **ret_data, size_t *ret_n_bytes)
{
    if (!r)
        return -EINVAL;
    const mf_section_in *s = find(r, tag);
    if (!s)
        return -ENOENT;
    if (ret_type)
        *ret_type = s->type;
    if (ret_data)
        *ret_data = s->data;
    if (ret_n_bytes)
        *ret_n_bytes = s->len;
    return 0;
}

uint32_t nc_mf_section_count(const nc_mf_reader *r)
{
    return r ? r->n : 0;
}

int nc_mf_section_at(const nc_mf_reader *r, uint32_t i, uint32_t *ret_tag,
                     uint32_t *ret_type, const void **ret_data, size_t *ret_n_bytes)
{
    if (!r)
        return -EINVAL;
    if (i >= r->n)
        return -ENOENT;
    const mf_section_in *s = &r->sec[i];
    if (ret_tag)
        *ret_tag = s->tag;
    if (ret_type)
        *ret_type = s->type;
    if (ret_data)
        *ret_data = s->data;
    if (ret_n_bytes)
        *ret_n_bytes = s->len;
    return 0;
}

int nc_mf_get_str(const nc_mf_reader *r, uint32_t tag, char *dst, size_t cap)
{
    if (!r || !dst || cap == 0)
        return -EINVAL;
    const mf_section_in *s = find(r, tag);
    if (!s)
        return -ENOENT;
    if (s->type != NC_MF_TYPE_BYTES || s->len >= cap ||
        memchr(s->data, 0, s->len) != NULL)
        return -EBADMSG;
    if (s->len)
        memcpy(dst, s->data, s->len);
    dst[s->len] = '\0';
    return 0;
}

int nc_mf_count(const nc_mf_reader *r, uint32_t tag, uint32_t type, size_t *ret_n)
{
    size_t es = type_size(type);
    if (!r || !ret_n || es == 0)
        return -EINVAL;
    const mf_section_in *s = find(r, tag);
    if (!s)
        return -ENOENT;
    if (s->type != type)
        return -EBADMSG;
    *ret_n = s->len / es;
    return 0;
}

/* The section behind a typed get, checked for type and exact count. */
static int typed(const nc_mf_reader *r, uint32_t tag, uint32_t type,
                 const void *dst, size_t n, const mf_section_in **ret_s)
{
    if (!r || (!dst && n))
        return -EINVAL;
    const mf_section_in *s = find(r, tag);
    if (!s)
        return -ENOENT;
    if (s->type != type || s->len / type_size(type) != n)
        return -EBADMSG;
    *ret_s = s;
    return 0;
}

int nc_mf_get_u32(const nc_mf_reader *r, uint32_t tag, uint32_t *dst, size_t n)
{
    const mf_section_in *s;
    int e = typed(r, tag, NC_MF_TYPE_U32, dst, n, &s);
    if (e < 0)
        return e;
    for (size_t i = 0; i < n; i++)
        dst[i] = get_le32(s->data + 4 * i);
    return 0;
}

/* Floats are checked in a first pass so dst stays untouched on failure. */
int nc_mf_get_f32(const nc_mf_reader *r, uint32_t tag, float *dst, size_t n)
{
    const mf_section_in *s;
    int e = typed(r, tag, NC_MF_TYPE_F32, dst, n, &s);
    if (e < 0)
        return e;
    for (size_t i = 0; i < n; i++) {
        /* all exponent bits set is Inf or NaN */
        if ((get_le32(s->data + 4 * i) & 0x7f800000u) == 0x7f800000u)
            return -EBADMSG;
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t bits = get_le32(s->data + 4 * i);
        memcpy(&dst[i], &bits, 4);
    }
    return 0;
}

int nc_mf_get_f64(const nc_mf_reader *r, uint32_t tag, double *dst, size_t n)
{
    const mf_section_in *s;
    int e = typed(r, tag, NC_MF_TYPE_F64, dst, n, &s);
    if (e < 0)
        return e;
    for (size_t i = 0; i < n; i++) {
        if ((get_le64(s->data + 8 * i) & 0x7ff0000000000000u) == 0x7ff0000000000000u)
            return -EBADMSG;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t bits = get_le64(s->data + 8 * i);
        memcpy(&dst[i], &bits, 8);
    }
    return 0;
}

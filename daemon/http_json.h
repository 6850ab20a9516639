/* daemon/http_json.h — reading the JSON bodies of HTTP requests
 * (/v1/recognize, /v2/models/NAME/infer) into a flat tree of nodes.
 *
 * Layer: daemon, pure (no I/O).  Untrusted input: nesting is capped at
 * NC_JSON_MAX_DEPTH, nodes at one per two bytes of text plus a few (every
 * value takes at least one byte and a separator), so memory is bounded by
 * the body cap.  Strings are unescaped in place (an escape never grows),
 * which is why parsing takes a writable text. */
#ifndef NC_HTTP_JSON_H
#define NC_HTTP_JSON_H

#include <stddef.h>
#include <stdint.h>

#define NC_JSON_MAX_DEPTH 32

typedef enum nc_json_type {
    NC_JSON_NULL = 0,
    NC_JSON_FALSE,
    NC_JSON_TRUE,
    NC_JSON_NUMBER,
    NC_JSON_STRING,
    NC_JSON_ARRAY,
    NC_JSON_OBJECT,
} nc_json_type;

/* Node 0 is the document's value.  An array's children are its elements,
 * an object's are its keys (strings), each key's child its value; siblings
 * are chained by next.  Index 0 doubles as "none" for child and next, since
 * the root is nobody's child or sibling. */
typedef struct nc_json_node {
    uint32_t type;              /* nc_json_type */
    uint32_t child, next;
    uint32_t count;             /* elements or members */
    uint32_t off, len;          /* a string's unescaped bytes, a number's text */
} nc_json_node;

typedef struct nc_json_doc {
    char *text;                 /* the caller's, unescaped in place */
    nc_json_node *node;
    uint32_t n, cap;
} nc_json_doc;

/* Parse text[0..len) (modified).  0, -EBADMSG with why (byte offset and
 * what was expected), -ENOMEM.  Free with nc_json_doc_free even on error. */
int nc_json_doc_parse(nc_json_doc *d, char *text, size_t len, char *why, size_t why_len);
void nc_json_doc_free(nc_json_doc *d);

/* The value of key in object node obj, 0 when absent (or obj is not an
 * object). */
uint32_t nc_json_doc_member(const nc_json_doc *d, uint32_t obj, const char *key);
/* A string node's bytes (not NUL-terminated) and length; NULL if not a
 * string. */
const char *nc_json_doc_string(const nc_json_doc *d, uint32_t v, size_t *len);
/* A number node's value: 0, or -EINVAL when v is not a number. */
int nc_json_doc_number(const nc_json_doc *d, uint32_t v, double *ret);

#endif

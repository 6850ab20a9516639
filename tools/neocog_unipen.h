/* tools/neocog_unipen.h — the UNIPEN character set in memory, as
 * neocog-unipen's parts share it: the JSON-lines reader
 * (neocog_unipen_load.c) and the size and baseline reference
 * (neocog_unipen_ref.c).
 *
 * Layer: tools.  Coordinates are flipped on reading so y points DOWN, as
 * core/data/strokes.h expects: a sample's "bottom" is its largest y. */
#ifndef NC_UNIPEN_H
#define NC_UNIPEN_H

#include <stddef.h>
#include <stdint.h>

#define NC_UNIPEN_CLASSES 94    /* '!' .. '~'; class = character - 33 */

typedef struct nc_unipen_sample {
    uint8_t cls;            /* character - 33 */
    uint32_t writer;        /* index into the writers (contrib + writer) */
    uint32_t file;          /* index into the source files */
    uint32_t first_stroke;  /* strokes first_stroke .. + n_strokes - 1 */
    uint32_t n_strokes;
    float box[4];           /* x0, y0, x1, y1 of its points (y down) */
    /* Filled by nc_unipen_reference: */
    float ref;              /* the writer's capital/digit height here */
    float baseline;         /* y of the line it sits on */
    uint8_t ref_source;     /* nc_unipen_ref_source */
    uint8_t base_source;    /* nc_unipen_base_source */
} nc_unipen_sample;

/* Where a sample's reference height came from, best first. */
typedef enum nc_unipen_ref_source {
    NC_UNIPEN_REF_FILE = 0,     /* its source file's characters */
    NC_UNIPEN_REF_WRITER = 1,   /* the writer's characters in all files */
    NC_UNIPEN_REF_SELF = 2,     /* its own height over its class's typical */
} nc_unipen_ref_source;

typedef enum nc_unipen_base_source {
    NC_UNIPEN_BASE_NEIGHBOURS = 0,  /* bottoms of characters beside it */
    NC_UNIPEN_BASE_CLASS = 1,       /* its own bottom less its class's
                                       typical drop below the line */
} nc_unipen_base_source;

typedef struct nc_unipen {
    uint32_t n_samples, n_writers, n_files;
    nc_unipen_sample *samples;
    char **writer_names;    /* "contrib/writer" */
    char **file_names;
    uint32_t *file_writer;  /* [n_files] */
    uint32_t n_strokes, n_points;
    uint32_t *stroke_start; /* n_strokes + 1 offsets into points */
    float *xy;              /* 2 * n_points, y down */
    uint32_t skipped;       /* lines not read (no strokes, unknown label) */
    /* Measured by nc_unipen_reference, NAN where unknown: each class's
     * typical height / reference and drop of its bottom below the baseline
     * / reference (positive below the line). */
    float class_height[NC_UNIPEN_CLASSES];
    float class_drop[NC_UNIPEN_CLASSES];
} nc_unipen;

/* Parse the gunzipped JSON lines text[0..len).  0, -ENOMEM, or -EBADMSG
 * with *ret_line the 1-based line that is malformed. */
int nc_unipen_parse(const char *text, size_t len, nc_unipen *ret, size_t *ret_line);
void nc_unipen_fini(nc_unipen *u);

/* Fill every sample's ref, baseline and their sources (see the README
 * section of tools/README.md for the rule).  0 or -ENOMEM. */
int nc_unipen_reference(nc_unipen *u);

/* nc_unipen_parse of the gzip'd file's bytes gz[0..len), then
 * nc_unipen_reference: the set as every tool uses it.  0, -ENOMEM,
 * nc_gunzip's errors, or -EBADMSG with *ret_line set. */
int nc_unipen_parse_gz(const uint8_t *gz, size_t len, nc_unipen *ret, size_t *ret_line);

/* The fixed writer-disjoint split: 1 when the writer ("contrib/writer")
 * is a validation writer (FNV-1a 64 of the name, modulo 1000, below 150),
 * 0 when a training writer. */
#define NC_UNIPEN_VAL_PER_MILLE 150u
int nc_unipen_is_val_writer(const char *name);


#endif

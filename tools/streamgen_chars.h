/* tools/streamgen_chars.h — camera frames of handwritten character strings
 * (codes like AB-1294-XK, words, short phrases with punctuation) drawn from
 * UNIPEN pen strokes, with per-character truth boxes and word gaps.
 *
 * Layer: tools (pure computation; the tool reads the stroke file).  The
 * frame itself (paper, light, clutter, rotation and perspective, blur,
 * noise) is streamgen_render.c's, so a text frame looks like a digit
 * frame; only the strings differ.  One writer per string: each character
 * is a sample of that writer's when the writer wrote one, else another
 * writer's of the same split, laid on a common baseline at a common
 * capital height with core/data/strokes.h (the writer's size and baseline
 * reference from neocog_unipen_ref.c, so `. , ' -` keep their size and
 * height on the line, and g j p q y their descenders).  Deterministic for
 * a given RNG state and stroke set. */
#ifndef NC_STREAMGEN_CHARS_H
#define NC_STREAMGEN_CHARS_H

#include "neocog_unipen.h"
#include "streamgen_render.h"

/* What the strings say. */
enum {
    NC_TEXT_CODES = 0,      /* groups of capitals and digits joined by '-' */
    NC_TEXT_WORDS = 1,      /* one to three words, spaces between */
    NC_TEXT_PHRASES = 2,    /* words with punctuation: , . ! ? : ; ' " % = */
    NC_TEXT_MIXED = 3,      /* one of the three, drawn per string */
};

/* Which writers' samples are drawn (neocog_unipen.h's fixed split). */
enum {
    NC_TEXT_WRITERS_TRAIN = 0,
    NC_TEXT_WRITERS_VAL = 1,
    NC_TEXT_WRITERS_ALL = 2,
};

typedef struct nc_text_source {
    const nc_unipen *u;
    uint32_t kind;                          /* NC_TEXT_* */
    uint32_t max_chars;                     /* characters per string, spaces
                                               not counted; 4..NC_RENDER_MAX_CHARS */
    uint32_t *by_class[NC_UNIPEN_CLASSES];  /* the split's samples per class */
    uint32_t n_class[NC_UNIPEN_CLASSES];
    uint32_t *writers;                      /* the split's writers */
    uint32_t n_writers;
    uint32_t max_strokes;                   /* most strokes of one sample */
    const char *text;                       /* non-NULL: every string says
                                               this (printable ASCII and
                                               single spaces), not a drawn
                                               text; for tests */
} nc_text_source;

/* Index u's samples of the chosen writers (NC_TEXT_WRITERS_*); u must
 * outlive src.  Samples drawn much taller than their writer's capitals
 * (stray strokes, wrong segments) are left out.  kind NC_TEXT_MIXED,
 * max_chars 16.  0, -EINVAL, -ENOENT (no writer has a sample of some
 * class the texts use) or -ENOMEM. */
int nc_text_source_init(nc_text_source *src, const nc_unipen *u, uint32_t writers);
void nc_text_source_fini(nc_text_source *src);

/* A text of the given kind into out (cap bytes, NUL-terminated): at most
 * max_chars characters besides the spaces, single spaces between words,
 * none at either end.  Draws from rng. */
void nc_text_make(uint32_t kind, uint32_t max_chars, uint64_t *rng, char *out, size_t cap);

/* Render one frame of p->strings text strings (kind and length from src;
 * p->digits is not used; min_height..max_height is the capital height).
 * Truth: each string's characters (label = the character, space_before
 * set on a word's first character after the first word) and their ink
 * boxes (coverage above 1/4).  0, -EINVAL, -ENOMEM. */
int nc_render_text_frame(const nc_render_params *p, const nc_text_source *src, uint64_t *rng,
                         nc_image *frame, nc_render_truth *ret_truth);

#endif

/* tools/train_groups.h — the character classes that shape alone does not
 * tell apart, and the kinds of characters, for neocog-train eval's
 * character report (train_eval_chars.c).
 *
 * Layer: tools.  The one list of ambiguity groups: what a 94-class model's
 * figures are reported with and without.  A group is a set of labels (a
 * model file's label texts) that differ only in size, position on the line
 * or a detail a writer often leaves out:
 *
 *   o O 0    l 1 I |    c C    s S    u U    v V    w W    x X    z Z
 *   p P      k K        . ,    ' ,    ' `    - _
 *
 * In MNIST's box layout (every character scaled to fill its box) the case
 * pairs and `o O 0` differ only in shape details, `. ,` `' ,` `- _` only in
 * where they sit; a layout that keeps size and baseline can separate some
 * of them.  A confusion is "within a group" when one group holds both the
 * true label and the answer (groups may overlap: `,` is in two). */
#ifndef NC_TRAIN_GROUPS_H
#define NC_TRAIN_GROUPS_H

#include <stdint.h>

/* The groups, each its labels separated by single spaces. */
extern const char *const train_groups[];
extern const uint32_t train_n_groups;

/* 1 when group g holds the label text `label`. */
int train_group_has(uint32_t g, const char *label);

/* 1 when some group holds both labels (and they differ). */
int train_groups_confuse(const char *a, const char *b);

/* The kind of a label: a one-character label's ASCII class. */
typedef enum train_char_kind {
    TRAIN_KIND_DIGIT,
    TRAIN_KIND_UPPER,
    TRAIN_KIND_LOWER,
    TRAIN_KIND_PUNCT,
    TRAIN_KIND_OTHER,       /* several characters, or not printable ASCII */
    TRAIN_KINDS
} train_char_kind;
train_char_kind train_kind_of(const char *label);
/* "digits", "upper case", "lower case", "punctuation", "other". */
const char *train_kind_name(train_char_kind k);

/* neocog-train eval's report for a character set (train_eval_chars.c),
 * printed to stdout: error and top-3 error per kind of character, each with
 * the confusions within an ambiguity group forgiven too; per group its
 * samples, errors and errors within it; the most frequent confusions.
 * labels: the model's label texts [n_classes]; lab[n] true classes; ans[n]
 * answers (-1 none); raw[n][n_classes] the scores ranked for top-3 (larger
 * is better).  -ENOMEM, else 0. */
#include "modelfile.h"
int train_report_chars(const nc_model_info *info, const uint8_t *lab, const int32_t *ans,
                       const float *raw, uint32_t n);

#endif

/* tools/train_teacher.h — soft targets from a teacher committee, for
 * neocog-train cnn --teacher (distillation).
 *
 * Layer: tools (reads the teacher's file; the CPU engine table runs it). */
#ifndef NC_TRAIN_TEACHER_H
#define NC_TRAIN_TEACHER_H

#include <stdint.h>

#include "dataset.h"
#include "image.h"

/* Run the CNN model file at path (a column or a committee with prep's
 * inputs, `plane` floats, and n_classes outputs) on the training pool: digits
 * [0, n_a) of a, then [0, n_b) of b (b may be NULL), each prepared by its
 * prep as the daemon's CPU engine does (train_scores_run, over `threads`
 * threads), and write targets[n_a + n_b][n_classes] = (1 - weight) * the label's
 * +1 / -1 + weight * the teacher's output (its columns' mean, in [-1, 1]
 * like the labels').  *ret_targets is malloc'd.  Prints why on stderr and
 * returns a negative errno on failure. */
int train_teacher_targets(const char *path, const nc_prep *prep, uint32_t plane,
                          uint32_t n_classes, const nc_dataset *a, uint32_t n_a, const nc_dataset *b,
                          uint32_t n_b, float weight, uint32_t threads, float **ret_targets);

#endif

/* tools/train_teacher.h — soft targets from a teacher committee, for
 * neocog-train cnn --teacher (distillation).
 *
 * Layer: tools (reads the teacher's file; core runs it). */
#ifndef NC_TRAIN_TEACHER_H
#define NC_TRAIN_TEACHER_H

#include <stdint.h>

#include "image.h"

/* Run the CNN model file at path (a column or a committee; it must take
 * prep's inputs of `plane` floats and give 10 outputs) on inputs[n][plane]
 * over `threads` threads, and write targets[n][10] = (1 - weight) * the
 * label's +1 / -1 + weight * the teacher's output (its columns' mean, in
 * [-1, 1] like the labels').  *ret_targets is malloc'd.  Prints why on
 * stderr and returns a negative errno on failure. */
int train_teacher_targets(const char *path, const nc_prep *prep, const float *inputs,
                          const uint8_t *labels, uint32_t n, uint32_t plane, float weight,
                          uint32_t threads, float **ret_targets);

#endif

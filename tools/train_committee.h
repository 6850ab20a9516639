/* tools/train_committee.h — what the committee subcommand's two halves
 * share: train_committee.c (CNN columns, and the command line) and
 * train_committee_neocog.c (neocognitrons).
 *
 * Layer: tools, private to `neocog-train committee`.  The helpers live in
 * train_committee_util.c (with train_committee_record, train_calib.h), so
 * that neither half calls the other back. */
#ifndef NC_TRAIN_COMMITTEE_H
#define NC_TRAIN_COMMITTEE_H

#include "train_calib.h"

#define TRAIN_COMMITTEE_WHO "neocog-train committee"

/* The committee opened as be, its answers read as kind with n_classes
 * classes, measured on MNIST t10k from dir (threads, batch as
 * train_scores): its errors, the digits and the wall time.  Prints what
 * went wrong; 0 or the error. */
typedef struct train_committee_test {
    uint32_t errors, n;
    double seconds;
} train_committee_test;
int train_committee_measure(const nc_backend *be, uint32_t kind, uint32_t n_classes,
                            const char *dir, uint32_t threads, uint32_t batch,
                            train_committee_test *ret);

/* Write the committee's file image atomically and say so ("wrote ..."), or
 * print why not; 0 or the error. */
int train_committee_write(const char *out_path, const uint8_t *buf, size_t len);

#endif

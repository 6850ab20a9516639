/* tests/cnn_file.h — CNN model files written by tests: the record every
 * test file of ten digits shares, and the save-and-write step.  One copy
 * for the test suites that make such files (daemon, tools) instead of one
 * each.  Header-only; link nc_cnn_lib, nc_modelfile_lib and nc_io_lib. */
#ifndef NC_TEST_CNN_FILE_H
#define NC_TEST_CNN_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnn.h"
#include "fileio.h"

/* Classes "0".."9", NC_PREP_CNN_29, no test error measured; the rest zero
 * (the caller adds data, command, seed, views as it needs). */
static inline void nc_test_cnn_info(nc_model_info *info)
{
    memset(info, 0, sizeof *info);
    info->n_classes = 10;
    for (uint32_t k = 0; k < 10; k++)
        snprintf(info->labels[k], sizeof info->labels[k], "%u", k);
    info->prep = NC_PREP_CNN_29;
    info->test_error = -1.0;
}

/* net with info as a model file at path (written atomically). */
static inline int nc_test_write_cnn(const char *path, const nc_cnn *net,
                                    const nc_model_info *info)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int err = nc_cnn_save(net, info, &buf, &len);
    if (!err)
        err = nc_file_write_atomic(path, buf, len);
    free(buf);
    return err;
}

#endif

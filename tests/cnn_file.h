/* tests/cnn_file.h — CNN model files written and read by tests: the record
 * every test file of ten digits shares, the save-and-write step, reading a
 * column back and comparing weights.  One copy
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

/* The one-column model file at path, its record into info (may be NULL);
 * NULL when it cannot be read or is not one column. */
static inline nc_cnn *nc_test_read_cnn(const char *path, nc_model_info *info)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_cnn *net = NULL;
    if (nc_file_read(path, 64u << 20, &buf, &len) == 0)
        nc_cnn_load(buf, len, &net, info);
    free(buf);
    return net;
}

/* Whether a and b hold the same weights, bit for bit (NULL never does). */
static inline int nc_test_same_params(const nc_cnn *a, const nc_cnn *b)
{
    return a && b && a->n_params == b->n_params &&
           memcmp(a->params, b->params, a->n_params * sizeof(float)) == 0;
}

#endif

/* tests/fixture.h — the committed MNIST fixture (tests/data: the first 1,000
 * MNIST test digits and their labels), for the tests that link tools' file
 * reader (nc_fileio_lib).  One loader instead of a copy per test.
 *
 * The folder is $NC_TEST_DATA (meson sets it), else tests/data from the
 * repository root.  0 or a negative errno; *ret is written only on success
 * (nc_dataset_fini frees it). */
#ifndef NC_TEST_FIXTURE_H
#define NC_TEST_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "dataset.h"
#include "fileio.h"

static inline int nc_test_fixture(nc_dataset *ret)
{
    const char *dir = getenv("NC_TEST_DATA");
    char pi[1024], pl[1024];
    if (!dir)
        dir = "tests/data";
    snprintf(pi, sizeof pi, "%s/mnist-t1k-images-idx3-ubyte.gz", dir);
    snprintf(pl, sizeof pl, "%s/mnist-t1k-labels-idx1-ubyte.gz", dir);
    return nc_file_read_idx(pi, pl, 64u << 20, ret);
}

/* Where the shipped model models/NAME is: under $NC_SOURCE_ROOT, else beside
 * the fixture folder ($NC_TEST_DATA/../../models), else ./models. */
static inline void nc_test_model_path(const char *name, char *dst, size_t cap)
{
    const char *root = getenv("NC_SOURCE_ROOT"), *data = getenv("NC_TEST_DATA");
    if (root)
        snprintf(dst, cap, "%s/models/%s", root, name);
    else if (data)
        snprintf(dst, cap, "%s/../../models/%s", data, name);
    else
        snprintf(dst, cap, "models/%s", name);
}

#endif

/* tests/fixture.h — the committed MNIST fixture (tests/data: the first 1,000
 * MNIST test digits and their labels), for the tests that link io's file
 * reader (nc_io_lib).  One loader instead of a copy per test.
 *
 * The folder is $NC_TEST_DATA (meson sets it), else tests/data from the
 * repository root.  0 or a negative errno; *ret is written only on success
 * (nc_dataset_fini frees it). */
#ifndef NC_TEST_FIXTURE_H
#define NC_TEST_FIXTURE_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

/* The fixture as MNIST t10k in folder dir, for the tests that run a tool
 * with --data dir: dir/t10k-images-idx3-ubyte.gz and
 * dir/t10k-labels-idx1-ubyte.gz, links to the fixture's two files.  0 or a
 * negative errno.  nc_test_fixture_unlink_t10k removes the two links. */
static inline void nc_test_t10k_path(char *dst, size_t cap, const char *dir, int labels)
{
    snprintf(dst, cap, "%s/t10k-%s-ubyte.gz", dir, labels ? "labels-idx1" : "images-idx3");
}

static inline int nc_test_fixture_as_t10k(const char *dir)
{
    const char *data = getenv("NC_TEST_DATA");
    for (int k = 0; k < 2; k++) {
        char src[1024], abs[PATH_MAX], dst[1024];
        snprintf(src, sizeof src, "%s/mnist-t1k-%s-ubyte.gz", data ? data : "tests/data",
                 k ? "labels-idx1" : "images-idx3");
        nc_test_t10k_path(dst, sizeof dst, dir, k);
        if (!realpath(src, abs) || symlink(abs, dst))
            return -errno;
    }
    return 0;
}

static inline void nc_test_fixture_unlink_t10k(const char *dir)
{
    for (int k = 0; k < 2; k++) {
        char dst[1024];
        nc_test_t10k_path(dst, sizeof dst, dir, k);
        unlink(dst);
    }
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

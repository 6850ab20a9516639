/* tests/gpu/gpu_test.h — the first step of every GPU parity test: how many
 * devices there are, said on stderr ("no CUDA device: skipped", or device 0's
 * name), so a test returns NC_TEST_SKIP (77) on a machine without one.
 * Include after test.h. */
#ifndef NC_TEST_GPU_TEST_H
#define NC_TEST_GPU_TEST_H

#include <stdio.h>

#include "device.h"

static inline int nc_test_gpu_count(void)
{
    int n = 0;
    CHECK_INT_EQ(nc_gpu_device_count(&n), 0);
    if (n <= 0) {
        fprintf(stderr, "no CUDA device: skipped\n");
        return 0;
    }
    nc_gpu_device_info info;
    if (nc_gpu_device_info_get(0, &info) == 0)
        fprintf(stderr, "device 0: %s, sm_%d%d\n", info.name, info.sm_major, info.sm_minor);
    return n;
}

#endif

/* tests/gpu/test_device.c — the device is found and runs our embedded code. */
#include "device.h"
#include "test.h"

int main(void)
{
    int n = -1;
    CHECK_INT_EQ(nc_gpu_device_count(&n), 0);
    if (n <= 0) {
        fprintf(stderr, "no CUDA device: skipped\n");
        return NC_TEST_SKIP;
    }
    for (int i = 0; i < n; i++) {
        nc_gpu_device_info info;
        CHECK_INT_EQ(nc_gpu_device_info_get(i, &info), 0);
        fprintf(stderr, "device %d: %s, sm_%d%d, %d SMs, %zu MiB\n", i, info.name,
                info.sm_major, info.sm_minor, info.multiprocessors,
                info.total_memory >> 20);
        int err = nc_gpu_selftest(i);
        CHECK_MSG(err == 0, "selftest on device %d: %d (%s)", i, err, nc_gpu_last_error());
    }
    CHECK(nc_gpu_device_info_get(n, &(nc_gpu_device_info){0}) < 0);
    CHECK(nc_gpu_last_error()[0] != 0);
    return nc_test_finish();
}

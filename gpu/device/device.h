/* gpu/device/device.h — device discovery and the error record of the CUDA layer.
 *
 * Layer: gpu, C linkage so core-style C callers (daemon, tools, tests) can use
 * it.  Functions return 0 or a negative errno like core/. */
#ifndef NC_GPU_DEVICE_H
#define NC_GPU_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nc_gpu_device_info {
    int index;
    char name[256];
    int sm_major, sm_minor;
    int multiprocessors;
    size_t total_memory;
} nc_gpu_device_info;

/* Number of usable CUDA devices; 0 (and return 0) when the driver or device is
 * missing, so callers pick the CPU path without treating it as an error. */
int nc_gpu_device_count(int *ret_count);
int nc_gpu_device_info_get(int index, nc_gpu_device_info *ret_info);

/* Round-trips a small buffer through a kernel on device `index`; proves the
 * toolchain, the driver and the embedded code fit together. */
int nc_gpu_selftest(int index);

/* Text of the last CUDA failure on this thread: statement, function, file,
 * line and CUDA's own message.  Empty when none. */
const char *nc_gpu_last_error(void);

#ifdef __cplusplus
}
#endif

#endif

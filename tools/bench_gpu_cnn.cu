/* placeholder: the cnn half of neocog-bench-gpu is being written */
#include <errno.h>
#include "bench_gpu.h"
extern "C" int bench_gpu_cnn(const nc_bench_gpu_opts *o) { (void)o; return -ENOTSUP; }

/* tools/bench_gpu.c — neocog-bench-gpu: GPU timings of both networks.
 *
 * Prints per-stage kernel times (seed 004 Table 5 layout, per variant), batch-1
 * latency and the throughput sweep for the neocognitron, and the same for the
 * CNN column.  Run it in one command with ../shared/bench/torch_peer.py so the
 * peer's figures come from the same machine (docs/benchmarks.md).
 *
 *   neocog-bench-gpu [--net all|neocog|cnn] [--device N] [--reps N]
 *                    [--max-batch N] [--quick] [--data DIR] [--neocog-model FILE]
 *                    [--cnn-arch ARCH]
 *
 * --neocog-model times a trained file's network; of a committee file, its
 * first member (the engine runs one network; neocogd runs them all).
 * --cnn-arch times another 1x29x29 CNN than the column (random weights), e.g.
 * 1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-150N-10N, the deep column.
 */
#include "bench_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "fileio.h"
#include "nc_config.h"

static int load_digits(const char *dir, nc_dataset *ret)
{
    char ipath[4096], lpath[4096];
    snprintf(ipath, sizeof ipath, "%s/mnist-t1k-images-idx3-ubyte.gz", dir);
    snprintf(lpath, sizeof lpath, "%s/mnist-t1k-labels-idx1-ubyte.gz", dir);
    int err = nc_file_read_idx(ipath, lpath, 64u << 20, ret);
    if (err)
        fprintf(stderr, "neocog-bench-gpu: %s: %s\n", ipath, nc_strerror(err));
    return err;
}

static void usage(FILE *to)
{
    fprintf(to, "usage: neocog-bench-gpu [--net all|neocog|cnn] [--device N] [--reps N]\n"
                "                        [--max-batch N] [--quick] [--data DIR]\n"
                "                        [--neocog-model FILE] [--cnn-arch ARCH]\n");
}

int main(int argc, char **argv)
{
    const char *net = "all";
    const char *dir = NC_SOURCE_ROOT "/tests/data";
    nc_bench_gpu_opts o = { .reps = 20, .max_batch = 16384 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!strcmp(a, "--quick")) { o.quick = 1; continue; }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) { usage(stderr); return 2; }
        if (!strcmp(a, "--net")) net = v;
        else if (!strcmp(a, "--device")) o.device = atoi(v);
        else if (!strcmp(a, "--reps")) o.reps = atoi(v);
        else if (!strcmp(a, "--max-batch")) o.max_batch = atoi(v);
        else if (!strcmp(a, "--data")) dir = v;
        else if (!strcmp(a, "--neocog-model")) o.neocog_model = v;
        else if (!strcmp(a, "--cnn-arch")) o.cnn_arch = v;
        else { usage(stderr); return 2; }
    }
    if (o.reps < 1 || o.max_batch < 1 || o.max_batch > (1 << 20) ||
        (strcmp(net, "all") && strcmp(net, "neocog") && strcmp(net, "cnn"))) {
        usage(stderr);
        return 2;
    }
    int n = 0;
    if (nc_gpu_device_count(&n) || n <= o.device) {
        fprintf(stderr, "neocog-bench-gpu: no CUDA device %d (%s)\n", o.device,
                nc_gpu_last_error());
        return 1;
    }
    nc_gpu_device_info info;
    if (nc_gpu_device_info_get(o.device, &info)) {
        fprintf(stderr, "neocog-bench-gpu: %s\n", nc_gpu_last_error());
        return 1;
    }
    printf("# neocog-bench-gpu %s — %s (sm_%d%d, %d SMs, %zu MiB), fp32\n\n", NC_VERSION,
           info.name, info.sm_major, info.sm_minor, info.multiprocessors,
           info.total_memory >> 20);
    nc_dataset digits = {0};
    if (load_digits(dir, &digits))
        return 1;
    o.digits = &digits;
    int err = 0;
    if (!strcmp(net, "all") || !strcmp(net, "neocog"))
        err = bench_gpu_neocog(&o);
    if (!err && (!strcmp(net, "all") || !strcmp(net, "cnn")))
        err = bench_gpu_cnn(&o);
    if (err)
        fprintf(stderr, "neocog-bench-gpu: %s (%s)\n", nc_strerror(err), nc_gpu_last_error());
    nc_dataset_fini(&digits);
    return err ? 1 : 0;
}

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
#include "opts.h"

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

enum { O_NET, O_DEVICE, O_REPS, O_MAX_BATCH, O_QUICK, O_DATA, O_NEOCOG_MODEL, O_CNN_ARCH, O_END };

static const nc_opt opt_table[] = {
    [O_NET] = { "net", "all|neocog|cnn", "the networks timed (default all)" },
    [O_DEVICE] = { "device", "N", "the CUDA device (default 0)" },
    [O_REPS] = { "reps", "N", "timing repetitions, the median reported (default 20)" },
    [O_MAX_BATCH] = { "max-batch", "N", "the throughput sweep's largest batch (default 16384)" },
    [O_QUICK] = { "quick", NULL, "fewer sizes, for a smoke run" },
    [O_DATA] = { "data", "DIR", "the MNIST fixture's folder (default tests/data)" },
    [O_NEOCOG_MODEL] = { "neocog-model", "FILE", "time a trained neocognitron (a committee's\n"
                                                 "first member)" },
    [O_CNN_ARCH] = { "cnn-arch", "ARCH", "time another 1x29x29 CNN (random weights)" },
    [O_END] = { NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
    const char *net = "all";
    const char *dir = NC_SOURCE_ROOT "/tests/data";
    nc_bench_gpu_opts o = { .reps = 20, .max_batch = 16384 };
    nc_opts p = {
        .prog = "neocog-bench-gpu",
        .usage = "usage: neocog-bench-gpu [OPTIONS]\n"
                 "GPU timings of both networks: per-stage kernel times, batch-1 latency and\n"
                 "the throughput sweep.\n",
        .table = opt_table,
    };
    for (int k; (k = nc_opts_next(&p, argc, argv)) != NC_OPTS_END;) {
        switch (k) {
        case NC_OPTS_HELP: nc_opts_usage(&p, stdout); return 0;
        case NC_OPTS_ERROR: return nc_opts_fail(&p);
        case O_NET: net = p.value; break;
        case O_DEVICE: o.device = atoi(p.value); break;
        case O_REPS: o.reps = atoi(p.value); break;
        case O_MAX_BATCH: o.max_batch = atoi(p.value); break;
        case O_QUICK: o.quick = 1; break;
        case O_DATA: dir = p.value; break;
        case O_NEOCOG_MODEL: o.neocog_model = p.value; break;
        case O_CNN_ARCH: o.cnn_arch = p.value; break;
        }
    }
    if (p.next < argc)
        nc_opts_error(&p, "unexpected argument '%s'", argv[p.next]);
    else if (o.reps < 1 || o.max_batch < 1 || o.max_batch > (1 << 20) ||
             (strcmp(net, "all") && strcmp(net, "neocog") && strcmp(net, "cnn")))
        nc_opts_error(&p, "--reps, --max-batch or --net out of range");
    if (p.why[0])
        return nc_opts_fail(&p);
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

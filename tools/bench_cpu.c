/* tools/bench_cpu.c — neocog-bench-cpu: CPU timings of both networks.
 *
 * Prints, for the neocognitron, time per layer and per character and the
 * F / S / G comparison laid out like seed 004's Table 6; for the CNN column,
 * time per layer and images/s for the plain and the BLAS paths.  Runs on one
 * core: pin it (taskset -c 0) for steady figures.  Inputs are real digits
 * from the committed MNIST fixture.
 *
 *   neocog-bench-cpu [--net all|neocog|cnn] [--reps N] [--batch N] [--data DIR]
 *                    [--cnn-arch ARCH] [--neocog-model FILE]
 *
 * --neocog-model times that neocognitron file (models/neocognitron.ncm, the
 * shipped committee) in place of the seeded network: one pass through form
 * F and through nc_neocog_forward_many (form B) member by member, and the
 * CPU engine in digits/s (tools/bench_cpu_model.c).
 *
 * --cnn-arch times another CNN with a 1x29x29 input than seed 000's column,
 * e.g. 1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-150N-10N, the deep column that
 * models/cnn-column.ncm holds (random weights: the time does not depend on
 * their values).
 */
#include "bench_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "fileio.h"
#include "nc_config.h"
#include "opts.h"

static void print_machine(void)
{
    char model[256] = "unknown";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            char *colon = strchr(line, ':');
            if (strncmp(line, "model name", 10) == 0 && colon) {
                snprintf(model, sizeof model, "%s", colon + 2);
                model[strcspn(model, "\n")] = 0;
                break;
            }
        }
        fclose(f);
    }
    struct utsname u;
    uname(&u);
    printf("# neocog-bench-cpu %s — %s, %s %s, one thread\n\n", NC_VERSION, model,
           u.sysname, u.machine);
}

static int load_digits(const char *dir, nc_dataset *ret)
{
    char ipath[4096], lpath[4096];
    snprintf(ipath, sizeof ipath, "%s/mnist-t1k-images-idx3-ubyte.gz", dir);
    snprintf(lpath, sizeof lpath, "%s/mnist-t1k-labels-idx1-ubyte.gz", dir);
    int err = nc_file_read_idx(ipath, lpath, 64u << 20, ret);
    if (err)
        fprintf(stderr, "neocog-bench-cpu: %s: %s\n", ipath, nc_strerror(err));
    return err;
}

enum { O_NET, O_REPS, O_BATCH, O_DATA, O_CNN_ARCH, O_NEOCOG_MODEL, O_END };

static const nc_opt opt_table[] = {
    [O_NET] = { "net", "all|neocog|cnn", "which network to time (default all)" },
    [O_REPS] = { "reps", "N", "timing repetitions, more = steadier (default 3)" },
    [O_BATCH] = { "batch", "N", "CNN batch for the BLAS path, 1..65536 (default 256)" },
    [O_DATA] = { "data", "DIR", "the MNIST fixture's folder (default tests/data)" },
    [O_CNN_ARCH] = { "cnn-arch", "ARCH", "another CNN with a 1x29x29 input (random weights)" },
    [O_NEOCOG_MODEL] = { "neocog-model", "FILE", "time this neocognitron file and the CPU engine\n"
                                                  "in place of the seeded network" },
    [O_END] = { NULL, NULL, NULL },
};

static nc_opts opts = {
    .prog = "neocog-bench-cpu",
    .usage = "usage: neocog-bench-cpu [--net all|neocog|cnn] [--reps N] [--batch N] [--data DIR]\n"
             "                        [--cnn-arch ARCH] [--neocog-model FILE]\n"
             "CPU timings of both networks on one thread (pin it: taskset -c 0).\n",
    .table = opt_table,
};

int main(int argc, char **argv)
{
    const char *net = "all", *model = NULL;
    const char *dir = NC_SOURCE_ROOT "/tests/data";
    nc_bench_opts o = { .reps = 3, .batch = 256 };
    for (int c; (c = nc_opts_next(&opts, argc, argv)) != NC_OPTS_END;) {
        const char *v = opts.value;
        uint32_t n = 0;
        int bad = 0;
        switch (c) {
        case NC_OPTS_HELP: nc_opts_usage(&opts, stdout); return 0;
        case NC_OPTS_ERROR: return nc_opts_fail(&opts);
        case O_NET:
            net = v;
            bad = strcmp(net, "all") && strcmp(net, "neocog") && strcmp(net, "cnn");
            break;
        case O_REPS: bad = nc_opts_u32(v, 1, 1u << 20, &n); o.reps = (int)n; break;
        case O_BATCH: bad = nc_opts_u32(v, 1, 65536, &n); o.batch = (int)n; break;
        case O_DATA: dir = v; break;
        case O_CNN_ARCH: o.cnn_arch = v; break;
        case O_NEOCOG_MODEL: model = v; break;
        }
        if (bad) {
            nc_opts_bad_value(&opts, c, NULL);
            return nc_opts_fail(&opts);
        }
    }
    if (opts.next < argc) {
        nc_opts_error(&opts, "unexpected argument '%s'", argv[opts.next]);
        return nc_opts_fail(&opts);
    }
    nc_dataset digits = {0};
    if (load_digits(dir, &digits))
        return 1;
    o.digits = &digits;
    print_machine();
    int err = 0;
    if ((!strcmp(net, "all") || !strcmp(net, "neocog")) && model) {
        uint8_t *buf = NULL;
        size_t len = 0;
        if ((err = nc_file_read_model(model, (size_t)1 << 31, &buf, &len)) == 0)
            err = bench_cpu_model(&o, buf, len);
        else
            fprintf(stderr, "neocog-bench-cpu: %s: %s\n", model, nc_strerror(err));
        free(buf);
    } else if (!strcmp(net, "all") || !strcmp(net, "neocog")) {
        err = bench_cpu_neocog(&o);
    }
    if (!err && (!strcmp(net, "all") || !strcmp(net, "cnn")))
        err = bench_cpu_cnn(&o);
    if (err)
        fprintf(stderr, "neocog-bench-cpu: %s\n", nc_strerror(err));
    nc_dataset_fini(&digits);
    return err ? 1 : 0;
}

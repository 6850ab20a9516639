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
#include <time.h>

#include "fileio.h"
#include "nc_config.h"

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

static void usage(FILE *to)
{
    fprintf(to, "usage: neocog-bench-cpu [--net all|neocog|cnn] [--reps N] [--batch N] [--data DIR]\n"
                "                        [--cnn-arch ARCH] [--neocog-model FILE]\n");
}

int main(int argc, char **argv)
{
    const char *net = "all", *model = NULL;
    const char *dir = NC_SOURCE_ROOT "/tests/data";
    nc_bench_opts o = { .reps = 3, .batch = 256 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!v) { usage(stderr); return 2; }
        if (!strcmp(a, "--net")) net = v;
        else if (!strcmp(a, "--reps")) o.reps = atoi(v);
        else if (!strcmp(a, "--batch")) o.batch = atoi(v);
        else if (!strcmp(a, "--data")) dir = v;
        else if (!strcmp(a, "--cnn-arch")) o.cnn_arch = v;
        else if (!strcmp(a, "--neocog-model")) model = v;
        else { usage(stderr); return 2; }
        i++;
    }
    if (o.reps < 1 || o.batch < 1 || o.batch > 65536 ||
        (strcmp(net, "all") && strcmp(net, "neocog") && strcmp(net, "cnn"))) {
        usage(stderr);
        return 2;
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

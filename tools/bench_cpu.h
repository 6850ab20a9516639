/* tools/bench_cpu.h — the two halves of neocog-bench-cpu.
 * Each prints its tables on stdout and returns 0 or a negative errno. */
#ifndef NC_BENCH_CPU_H
#define NC_BENCH_CPU_H

#include "dataset.h"

typedef struct nc_bench_opts {
    const nc_dataset *digits;   /* real digits (the MNIST fixture) */
    int reps;                   /* timing repetitions; more = steadier */
    int batch;                  /* CNN batch size for the BLAS path */
    const char *cnn_arch;       /* CNN to time (1x29x29 input); NULL: seed 000's column */
} nc_bench_opts;

int bench_cpu_neocog(const nc_bench_opts *o);
/* A neocognitron model file (buf, len: its bytes, unzipped) on the CPU:
 * forms F and B per pass, member by member, and the CPU engine. */
int bench_cpu_model(const nc_bench_opts *o, const uint8_t *buf, size_t len);
int bench_cpu_cnn(const nc_bench_opts *o);

/* Monotonic wall clock in seconds (bench_cpu_util.c). */
double bench_now(void);

#endif

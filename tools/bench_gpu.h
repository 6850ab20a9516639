/* tools/bench_gpu.h — the two halves of neocog-bench-gpu (built with CUDA).
 * Each prints its tables on stdout and returns 0 or a negative errno. */
#ifndef NC_BENCH_GPU_H
#define NC_BENCH_GPU_H

#include "dataset.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nc_bench_gpu_opts {
    const nc_dataset *digits;   /* real digits (the MNIST fixture) */
    int device;                 /* CUDA device index */
    int reps;                   /* timing repetitions (median reported) */
    int max_batch;              /* largest batch of the throughput sweep */
    int quick;                  /* 1: fewer sizes, for a smoke run */
    const char *neocog_model;   /* a neocognitron file instead of the seeded net (only
                                   the sparse, GEMM and AUTO variants are timed) */
    const char *cnn_arch;       /* the CNN timed (a 1x29x29 net), or NULL: the column */
} nc_bench_gpu_opts;

int bench_gpu_neocog(const nc_bench_gpu_opts *o);
int bench_gpu_cnn(const nc_bench_gpu_opts *o);

#ifdef __cplusplus
}
#endif

#endif

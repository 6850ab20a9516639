/* gpu/dev/gpu_dev.h — kernels that no shipped model's configuration
 * selects, kept for benchmarks and experiments (as llm.c keeps dev/cuda):
 * the fused forwards of seed 000's shallow column (gpu/dev/cnn_fused.cu).
 * The library nc_gpu_dev is linked by tools/bench_gpu*.cu and tests/gpu/,
 * never by the daemon.  docs/lessons.md says why each kernel is here.
 *
 * Layer: gpu, C linkage. */
#ifndef NC_GPU_DEV_H
#define NC_GPU_DEV_H

#ifdef __cplusplus
extern "C" {
#endif

/* Hand this library's kernels to the engines made from now on (the CNN
 * engine's NC_GPU_CNN_PATH_FUSED_SMALL and _FUSED_BIG, and its measured
 * choice among them).  Call it once, before the first engine is made. */
void nc_gpu_dev_install(void);

#ifdef __cplusplus
}
#endif

#endif

/* gpu/cnn/cnn_engine_dev.h — the resident CNN engine's pieces for
 * benchmarks and tests: which forced paths fit the net, the forward of
 * images already on the device, the engine's stream, what a batch size
 * runs as text, and poisoning every buffer.  tools/bench_gpu_cnn.cu and
 * tests/gpu/ include it; the daemon needs none of it.  Layer: gpu, C
 * linkage; errors as in cnn_engine.h. */
#ifndef NC_GPU_CNN_ENGINE_DEV_H
#define NC_GPU_CNN_ENGINE_DEV_H

#include "cnn_engine.h"
#include "cnn_engine_train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* nc_gpu_cnn_fused_ok: 1 if the (shallow) column's fused paths fit the
 * net; nc_gpu_cnn_path_ok: 1 if path fits it (nc_gpu_cnn_set_path). */
int nc_gpu_cnn_fused_ok(const nc_gpu_cnn *g);
int nc_gpu_cnn_path_ok(const nc_gpu_cnn *g, nc_gpu_cnn_path path);

/* Fill every activation, delta, gradient and scratch buffer with NaN, so a
 * test sees anything a kernel forgot to write. */
int nc_gpu_cnn_poison(nc_gpu_cnn *g);

/* For benchmarks: enqueue the forward of n images already on the device
 * (d_in[n][n_inputs] -> d_out[n][n_outputs]) on the engine's stream without
 * waiting (graph-capturable once the bucket is tuned: call it once first);
 * the stream (a cudaStream_t); wait for it; the path taken for batch n as
 * text. */
int nc_gpu_cnn_forward_device(nc_gpu_cnn *g, const float *d_in, uint32_t n, float *d_out);
void *nc_gpu_cnn_stream(nc_gpu_cnn *g);
int nc_gpu_cnn_sync(nc_gpu_cnn *g);
int nc_gpu_cnn_describe(const nc_gpu_cnn *g, uint32_t n, char *dst, size_t cap);

#ifdef __cplusplus
}
#endif

#endif

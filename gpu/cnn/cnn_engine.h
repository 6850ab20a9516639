/* gpu/cnn/cnn_engine.h — the resident GPU engine of a CNN (core/cnn/cnn.h's nets).
 *
 * Layer: gpu, C linkage.  Functions return 0 or a negative errno like core/;
 * ret_* outputs are written only on success; nc_gpu_cnn_free accepts NULL.
 * -ENODEV: no such CUDA device; -ENOMEM: device or pinned memory ran out;
 * -EIO: the CUDA context failed (the engine refuses further work with -EIO,
 * so the caller falls back to core/'s CPU path).  nc_gpu_last_error() says
 * what failed.  One engine per thread at a time.
 *
 * The engine holds the net's params as one device block laid out like
 * nc_cnn.params (so weights upload in one copy), every activation of a batch
 * of up to max_batch images, pinned host staging buffers, one stream, a
 * cuBLAS handle, and CUDA graphs of the forward pass for batches of up to
 * NC_GPU_CNN_GRAPH_MAX images.
 *
 * Paths.  Every layer has a direct kernel (seed 000 §3.2); convolution and
 * fully connected layers also have a cuBLAS one (seed 001's unrolling); the
 * column 1x29x29-20C4-MP2-40C5-MP3-<U1>N-<U2>N also has a fused forward that
 * keeps activations on chip (gpu/dev/cnn_fused.cuh, where a bench or test
 * installed it: gpu/cnn/cnn_fused_ops.h), and so has the deep column
 * 1x29x29-20C4-MP2-60C4-MP2-100C3-MP3-<U1>N-<U2>N (gpu/cnn/cnn_fused_deep.cuh).  With NC_GPU_CNN_PATH_AUTO
 * (the default) the engine times the candidates on the first forward of each
 * batch-size bucket (powers of two) and keeps the fastest: per layer for the
 * layer-wise paths, then the whole fused forward against that.  Training and
 * nc_gpu_cnn_backward always run layer-wise (they need every activation).
 *
 * A net with batch-normalised layers (core/cnn/cnn.h's "bn") runs layer-wise
 * too, normalising each batch with its own statistics, as core does: it is
 * a net in training.  Serve its nc_cnn_fold_norm instead.
 *
 * This is the serving interface (what gpu/backend/backend_gpu.cu uses):
 * make, forward, free.  Training is in cnn_engine_train.h; the forced paths
 * and the pieces benchmarks and tests use are in cnn_engine_dev.h. */
#ifndef NC_GPU_CNN_ENGINE_H
#define NC_GPU_CNN_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "cnn.h"   /* core/ has no C++ guards of its own */

#define NC_GPU_CNN_GRAPH_MAX 16u

typedef struct nc_gpu_cnn nc_gpu_cnn;

/* An engine for net's architecture on CUDA device `device`, for batches of
 * 1..max_batch images, with net's params and tables uploaded. */
int nc_gpu_cnn_new(const nc_cnn *net, int device, uint32_t max_batch, nc_gpu_cnn **ret_g);
void nc_gpu_cnn_free(nc_gpu_cnn *g);

/* out[n][n_outputs] = the net on in[n][n_inputs] (host memory, any). */
int nc_gpu_cnn_forward(nc_gpu_cnn *g, const float *in, uint32_t n, float *out);

/* nc_gpu_cnn_forward in two halves, so that several engines (a committee's
 * columns, each with its own stream) run on the device at once: _start
 * copies in (the caller may reuse it on return) and enqueues the forward
 * without waiting; _finish waits for it and writes out[n][n_outputs] (out
 * NULL: the result is dropped).  The same outputs as nc_gpu_cnn_forward.
 * Between the two, the calls that would touch the work in flight (another
 * forward, upload, download, set_path, backward, training, poison) answer
 * -EBUSY; _finish without a _start, -EINVAL.  A _start that fails has
 * waited for what it enqueued and leaves nothing to finish. */
int nc_gpu_cnn_forward_start(nc_gpu_cnn *g, const float *in, uint32_t n);
int nc_gpu_cnn_forward_finish(nc_gpu_cnn *g, float *out);

#ifdef __cplusplus
}
#endif

#endif

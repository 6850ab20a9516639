/* gpu/neocog/neocog_engine.h — the neocognitron resident on a GPU: weights and tables
 * uploaded once, activations for a chunk of characters kept on the device,
 * pinned host buffers, transfers overlapped with compute on streams, CUDA
 * graphs for small batches.
 *
 * Layer: gpu, C linkage.  Every function returns 0 or a negative errno:
 * -ENODEV (no such device), -ENOMEM (device or pinned memory), -EINVAL,
 * -EIO (a CUDA failure; the engine is then marked failed and refuses further
 * work, so the caller frees it and falls back to the CPU).  The CUDA
 * failure's text is in nc_gpu_last_error().  One engine is used by one
 * thread at a time.
 *
 * This is the serving interface (what gpu/backend/backend_gpu.cu uses):
 * make, forward, tune once, free.  The engine's settings, the pieces of a
 * forward and what the tuner picks are in neocog_engine_dev.h, for
 * benchmarks and tests. */
#ifndef NC_GPU_NEOCOG_ENGINE_H
#define NC_GPU_NEOCOG_ENGINE_H

#include <stdint.h>

#include "neocog.h"
#include "neocog_geom.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nc_gpu_neocog nc_gpu_neocog;

/* Batches up to this size replay a captured CUDA graph. */
#define NC_GPU_NEOCOG_GRAPH_MAX 64
/* Most characters per pass through the layers (activations of one chunk
 * are reused by every chunk; an engine made for fewer passes them all at
 * once).  At least 1024 keeps the GEMM path's smallest layer, US4 at 25
 * rows per character, above the 132 SMs of an H200 in 64-row tiles; on an
 * H100 at 16,384 characters, chunks of 512 / 1024 gave 302,845 / 325,335
 * characters/s, each chunk's nine layers paying their ramp
 * and tail once. */
#define NC_GPU_NEOCOG_CHUNK 4096
/* Chunk buffers ("lanes"): a batch of more than one chunk runs its odd
 * chunks on a second set of buffers and its own stream, so that two chunks'
 * kernels overlap (each one's ramp-up, tail and kernel boundaries leave SMs
 * to the other).  Lane 1 is made on the first such batch (one more set of
 * chunk buffers: about 4 GB for the seed's net at 4096 characters) and runs
 * with one lane where it cannot be.  On an H100 at 16,384 characters, two
 * engines on half the batch each gave 454,077 characters/s against one
 * engine's 439,097. */
#define NC_GPU_NEOCOG_MAX_LANES 2

/* Upload net (every stage with >= 1 plane, labels set) to device `device`
 * for batches of up to max_batch characters.  The engine keeps no pointer
 * into net.  Default S-layer variant: NC_GPU_NEOCOG_AUTO (sparse kernels
 * for small batches, the GEMM path from NC_GPU_NEOCOG_AUTO_MIN or the tuned
 * threshold on). */
int nc_gpu_neocog_new(const nc_neocog *net, int device, uint32_t max_batch,
                      nc_gpu_neocog **ret_eng);
void nc_gpu_neocog_free(nc_gpu_neocog *eng);     /* NULL is fine */

/* Answer by the interpolating-vector classifier iv (nc_neocog_iv_new for
 * net, the net the engine was made from) instead of UC4's maximum response:
 * the scores and labels of every later forward are nc_neocog_iv_classify's
 * on the device's activations (gpu/neocog/neocog_iv.cuh).  iv NULL: back to UC4.
 * The engine keeps no pointer into net or iv.  -EINVAL when net's planes or
 * sizes are not the engine's. */
int nc_gpu_neocog_set_iv(nc_gpu_neocog *eng, const nc_neocog *net, const nc_neocog_iv *iv);

/* Recognise n in_size x in_size images (host, n * in_size^2 floats) into
 * ret[0..n).  Waits for the result. */
int nc_gpu_neocog_forward(nc_gpu_neocog *eng, const float *inputs, uint32_t n,
                          nc_neocog_result *ret);

/* The same in two halves, so that several engines (a committee's members,
 * each on its own streams) work at once: _start copies the images in and
 * queues the network and the copies out; _finish (same n) waits and writes
 * ret.  Between the two the engine takes no other forward (-EINVAL). */
int nc_gpu_neocog_forward_start(nc_gpu_neocog *eng, const float *inputs, uint32_t n);
int nc_gpu_neocog_forward_finish(nc_gpu_neocog *eng, uint32_t n, nc_neocog_result *ret);

/* Tune the kernels and settings on the first n uploaded images; the daemon's
 * backend runs this once (NC_GPU_NEOCOG_AUTO) after a first forward of n.
 * What it picks, and the settings it turns one by one, are in
 * neocog_engine_dev.h. */
int nc_gpu_neocog_tune(nc_gpu_neocog *eng, int variant, uint32_t n);
/* Characters per pass now (the activations download_layer reads are those
 * of the last pass on lane 0: after a forward of n <= chunk, all n). */
uint32_t nc_gpu_neocog_get_chunk(const nc_gpu_neocog *eng);

#ifdef __cplusplus
}
#endif

#endif

/* gpu/backend/backend_gpu.h — the GPU filling of core/backend/backend.h's engine table.
 *
 * Layer: gpu, C linkage (the daemon and the tests are C).
 *
 * One instance (ops->init with a device ordinal) is ONE model resident on
 * ONE CUDA device: the host copy of the net, and one engine of
 * gpu/cnn/cnn_engine.h or gpu/neocog/neocog_engine.h made for the caller's
 * largest batch (init's max_batch digits times the file's views: neocogd's
 * max_batch), at most NC_BACKEND_GPU_MAX_BATCH images, which is also the
 * size when the caller names none (forward splits larger batches).  A process
 * that uses several GPUs opens one instance per device and spreads batches
 * over them itself (daemon/models.c, daemon/work.c).
 *
 * Threads.  The engines are "one thread at a time" objects, so the
 * instance's engine sits behind a mutex: forward from any number of
 * threads is safe, and a device runs one batch of one model at a time
 * (a batch of the daemon is up to a few hundred digits, which keeps an
 * H200 busy; concurrency comes from spreading over devices).  A worker
 * (worker_new) is a small handle: the staging buffers the copies go
 * through are the engine's pinned host buffers (cudaHostAlloc), so a
 * transfer is one memcpy into pinned memory and one DMA each way.
 *
 * init warms the engine before it returns: the CNN engine's measured path
 * choice for every batch-size bucket up to the maximum, and the CUDA graphs
 * of the small batch sizes (CNN up to NC_GPU_CNN_GRAPH_MAX, neocognitron up
 * to NC_GPU_NEOCOG_GRAPH_MAX), so no client request pays for tuning or
 * graph capture.
 *
 * Errors (negative errno, as core/): -ENODEV no such device (or no driver),
 * -ENOMEM device or pinned memory, -EIO a CUDA failure (the engine then
 * refuses all further work with -EIO: the caller stops using this instance
 * and falls back to another device or to the CPU table), -ENOTSUP a model
 * kind the GPU cannot run.  nc_backend_gpu_last_error() gives a sentence
 * for the last failure on the calling thread. */
#ifndef NC_BACKEND_GPU_H
#define NC_BACKEND_GPU_H

#ifdef __cplusplus
extern "C" {
#endif

#include "backend.h"

/* The most images an engine is made for; forward takes any n and splits. */
#define NC_BACKEND_GPU_MAX_BATCH 1024u

extern const nc_backend_ops nc_backend_gpu;

/* Visible, usable CUDA devices (CUDA_VISIBLE_DEVICES applies): 0 with no
 * driver or no device, so callers take the CPU path without an error. */
int nc_backend_gpu_device_count(void);

/* "NVIDIA H200 (sm_90, 139 GiB)" for device `device`, or a sentence saying
 * why not. */
void nc_backend_gpu_describe(int device, char *dst, size_t cap);

/* Why the last failing call of this table on the calling thread failed:
 * what was being done, and CUDA's own words (gpu/device/device.h's record). */
const char *nc_backend_gpu_last_error(void);

#ifdef __cplusplus
}
#endif

#endif

/* gpu/neocog/neocog_class.cu — UC4: per-class maximum over every last-stage plane and
 * position, and the answer.
 *
 * Layer: gpu.  Thread mapping: one block per character (up to 1024 threads,
 * as its cell count asks); threads stride over its cells (up to 1024
 * planes: thread j keeps plane j mod ks and takes every (threads / ks)-th
 * position from j / ks), and each positive response raises its class's
 * maximum in shared memory with an integer atomicMax (non-negative floats
 * order like their bit patterns, so the maximum is exact and does not
 * depend on the order).
 * Thread 0 then writes the scores and picks the label as core does
 * (strictly larger wins, so ties go to the lower class). */
#include "neocog_class.cuh"

#include <errno.h>

#include "neocog_dev.cuh"

static __global__ void class_kernel(const float *__restrict__ in, uint32_t n_pos,
                                    uint32_t k, const uint32_t *__restrict__ lab,
                                    uint32_t n_classes, float *__restrict__ scores,
                                    int32_t *__restrict__ labels)
{
    __shared__ unsigned best[NC_NEOCOG_MAX_CLASSES];
    const uint32_t ks = nc_dev_kstride(k);
    const size_t b = blockIdx.x;
    const float *inb = in + b * n_pos * ks;
    for (uint32_t c = threadIdx.x; c < n_classes; c += blockDim.x)
        best[c] = 0u;
    /* up to 1024 planes a block holds whole rows of cells: a thread keeps
     * one plane, whose class is read before the wait (no layer's output),
     * and strides over positions with no division in the loop */
    const uint32_t per = blockDim.x / ks;
    const uint32_t kk = per ? threadIdx.x % ks : 0u, p0 = per ? threadIdx.x / ks : 0u;
    const uint32_t cls = per && kk < k ? lab[kk] : 0u;
    nc_dev_pdl_trigger();
    nc_dev_pdl_wait();          /* programmatic launch: see neocog_dev.cuh */
    __syncthreads();
    if (per) {
        for (uint32_t p = p0; p0 < per && kk < k && p < n_pos; p += per) {
            const float u = inb[(size_t)p * ks + kk];
            if (u > 0.0f)
                atomicMax(&best[cls], __float_as_uint(u));
        }
    } else {
        for (uint32_t i = threadIdx.x; i < n_pos * ks; i += blockDim.x) {
            const uint32_t kj = i % ks;
            const float u = inb[i];
            if (kj < k && u > 0.0f)
                atomicMax(&best[lab[kj]], __float_as_uint(u));
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        int32_t arg = -1;
        float bv = 0.0f;
        for (uint32_t c = 0; c < n_classes; c++) {
            const float v = __uint_as_float(best[c]);
            scores[b * n_classes + c] = v;
            if (v > bv) {
                bv = v;
                arg = (int32_t)c;
            }
        }
        labels[b] = arg;
    }
}

extern "C" int nc_gpu_neocog_class_forward(const float *in, uint32_t n_pos, uint32_t k,
                                           const uint32_t *labels_of_plane,
                                           uint32_t n_classes, float *scores,
                                           int32_t *labels, uint32_t batch,
                                           cudaStream_t stream)
{
    if (!in || !labels_of_plane || !scores || !labels || batch < 1 || n_pos < 1 ||
        k < 1 || k > NC_NEOCOG_MAX_PLANES || n_classes < 1 ||
        n_classes > NC_NEOCOG_MAX_CLASSES || batch > 0x7fffffffu)
        return -EINVAL;
    /* Enough threads for a character's cells in one or two strides: at
     * batch 1 the block is the whole kernel, and 128 threads striding over
     * 25 x 72 cells took 9 us (ncu) for a trivial maximum. */
    const uint32_t ks = nc_neocog_kstride(k), cells = n_pos * ks;
    uint32_t threads = cells >= 1024u ? 1024u : cells <= 128u ? 128u : (cells + 31u) & ~31u;
    /* whole rows of planes a block where they fit (see the kernel) */
    if (ks <= threads)
        threads = (threads / ks) * ks;
    NC_CUDA_CHECK(nc_dev_launch(class_kernel, dim3(batch), dim3(threads), 0, stream, batch, in,
                                n_pos, k, labels_of_plane, n_classes, scores, labels));
    return 0;
}

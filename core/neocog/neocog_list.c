/* core/neocog/neocog_list.c — each position's non-zero planes as a list: the form
 * in which the GPU's list S kernel (gpu/neocog/neocog_list.cu) reads a layer.
 *
 * Layer: core.  The reference of nc_gpu_neocog_list_build, entry for entry:
 * the GPU twin must give the same counts and entries, and sums of squares
 * equal within rounding (its warp adds them in another order). */
#include "neocog.h"

#include <errno.h>

int nc_neocog_list_build(const float *in, size_t n_pos, uint32_t k, uint32_t stride,
                         uint32_t mul, uint16_t *cnt, float *q, int32_t *ent)
{
    if (!in || !cnt || !q || !ent || k < 1 || k > 0xffffu || stride < k ||
        (uint64_t)(k - 1) * mul > 0x7fffffffu)
        return -EINVAL;
    for (size_t p = 0; p < n_pos; p++) {
        const float *x = in + p * stride;
        int32_t *e = ent + 2 * p * k;
        uint32_t n = 0;
        float s = 0.0f;
        for (uint32_t kap = 0; kap < k; kap++) {
            if (x[kap] == 0.0f)
                continue;
            union { float f; int32_t i; } bits = { x[kap] };
            e[2 * n] = bits.i;
            e[2 * n + 1] = (int32_t)(kap * mul);
            s += x[kap] * x[kap];
            n++;
        }
        cnt[p] = (uint16_t)n;
        q[p] = s;
    }
    return 0;
}

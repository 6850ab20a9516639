/* gpu/dev/gpu_dev.cu — hands gpu/dev/'s kernels to the engines: the shallow
 * column's fused forward to the CNN engine (gpu/cnn/cnn_fused_ops.h).
 * Layer: gpu. */
#include "gpu_dev.h"

#include "cnn_fused.cuh"
#include "cnn_fused_ops.h"

extern "C" void nc_gpu_dev_install(void)
{
    static const nc_gpu_cnn_fused_ops ops = {nc_gpu_cnn_fused_match, nc_gpu_cnn_fused_init,
                                             nc_gpu_cnn_fused_forward};
    nc_gpu_cnn_set_fused_ops(&ops);
}

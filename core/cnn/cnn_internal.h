/* core/cnn/cnn_internal.h — what the cnn_*.c files share and nobody else sees.
 *
 * Layer: core.  The working memory of nc_cnn_work, the reference engine's
 * layer loops and the activation function, used by the reference
 * (cnn_forward.c, cnn_backward.c over cnn_conv.c, cnn_pool.c, cnn_full.c)
 * and the BLAS (cnn_blas.c) engines. */
#ifndef NC_CNN_INTERNAL_H
#define NC_CNN_INTERNAL_H

#include "cnn.h"

#include <math.h>

/* Which forward pass filled a work's activations (a backward pass must
 * follow the matching one, on the same batch). */
enum {
    NC_CNN_STATE_NONE = 0,
    NC_CNN_STATE_REF = 1,       /* act[l] image-major: [n][maps][h][w] */
    NC_CNN_STATE_BLAS = 2,      /* act[l] map-major: CONV/POOL [maps][n][h][w],
                                   FULL [n][units]; a CONV followed by a POOL
                                   holds its raw products (see pool_fused in
                                   cnn_blas.c) */
};

struct nc_cnn_work {
    uint32_t max_batch;
    uint32_t n_layers;
    uint32_t kind[NC_CNN_MAX_LAYERS];   /* the architecture it was sized for */
    uint32_t n_out[NC_CNN_MAX_LAYERS];
    uint32_t shape[NC_CNN_MAX_LAYERS][3];    /* maps, height, width */
    uint32_t unroll_rows[NC_CNN_MAX_LAYERS]; /* CONV: fan_in; else 0 */
    size_t n_params;

    float *act[NC_CNN_MAX_LAYERS];  /* l >= 1: max_batch * n_out[l] */
    float *xhat[NC_CNN_MAX_LAYERS]; /* normalised layers: the standardised
                                       sums a^, laid out like act[l]; else
                                       NULL */
    float *nstat[NC_CNN_MAX_LAYERS]; /* normalised layers: the batch's
                                        mean[maps], then var[maps] */
    float *delta[2];                /* ping-pong dE/dy, max_batch * max_units */
    float *unroll;                  /* chunk * unroll_per_image */
    size_t unroll_per_image;        /* max over CONV of fan_in * h_out * w_out */
    float *fcin;                    /* first FULL after a CONV/POOL: its input
                                       gathered image-major, max_batch * n_in */
    float *grads;                   /* n_params, for nc_cnn_train_step */
    float *out;                     /* max_batch * n_outputs, committee sum */
    float *block;                   /* the one allocation behind all of these */

    uint32_t chunk;                 /* images unrolled per GEMM, 0 = all */
    int state;                      /* NC_CNN_STATE_* */
    uint32_t state_n;
    const float *state_in;

    nc_cnn_layer_hook hook;
    void *hook_ctx;
};

/* Batch normalisation (cnn_norm.c), shared by both engines.  A layer's
 * values as maps of runs: map m of image b is the `run` floats at
 * v + m * ms + b * bs (image-major: ms = h*w, bs = n_out, run = h*w;
 * the BLAS path's map-major convolutions: ms = n*h*w, bs = h*w; its fully
 * connected layers: ms = 1, bs = units, run = 1). */
typedef struct nc_cnn_runs {
    size_t ms, bs;
    uint32_t run;
} nc_cnn_runs;

/* a: the layer's sums (bias included) in, gamma a^ + beta out (the caller
 * activates them); xhat: a^, same layout; stat: mean[maps], var[maps]. */
void nc_cnn_norm_forward(const nc_cnn_layer *L, float *a, uint32_t n, nc_cnn_runs r,
                         float *xhat, float *stat);

/* d: dE/d(gamma a^ + beta) in, dE/da out; ggamma, gbeta: [maps], written. */
void nc_cnn_norm_backward(const nc_cnn_layer *L, float *d, uint32_t n, nc_cnn_runs r,
                          const float *xhat, const float *stat, float *ggamma, float *gbeta);

/* The reference engine's layer loops, image-major, run by nc_cnn_forward_ref
 * (cnn_forward.c) and nc_cnn_backward_ref (cnn_backward.c).  L is the
 * layer, P the one below it; x its input, y its output (the backward passes:
 * y as the forward left it, dy = dE/dy in, dx = dE/dx out, NULL where not
 * needed, gw/gb = its weight and bias gradients, added to). */
/* cnn_conv.c */
void nc_cnn_conv_forward_ref(const nc_cnn_layer *L, const nc_cnn_layer *P,
                             const float *x, float *y, uint32_t n);
void nc_cnn_conv_backward_ref(const nc_cnn_layer *L, const nc_cnn_layer *P,
                              const float *x, const float *y, const float *dy,
                              float *dx, float *gw, float *gb, uint32_t n);
/* cnn_pool.c */
void nc_cnn_pool_forward_ref(const nc_cnn_layer *L, const nc_cnn_layer *P,
                             const float *x, float *y, uint32_t n);
void nc_cnn_pool_backward_ref(const nc_cnn_layer *L, const nc_cnn_layer *P,
                              const float *x, const float *dy, float *dx, uint32_t n);
/* cnn_full.c */
void nc_cnn_full_forward_ref(const nc_cnn_layer *L, const float *x, float *y, uint32_t n);
void nc_cnn_full_backward_ref(const nc_cnn_layer *L, const float *x, const float *y,
                              const float *dy, float *dx, float *gw, float *gb, uint32_t n);

/* The activation a layer's kernels apply to its sums: none for a normalised
 * layer (it activates after normalising), else its own. */
static inline uint32_t nc_cnn_sum_act(const nc_cnn_layer *L)
{
    return L->norm ? (uint32_t)NC_CNN_ACT_NONE : L->act;
}

/* splitmix64: the PRNG behind weight initialisation and random tables.
 * Fixed here so a seed means the same network on every host. */
static inline uint64_t nc_cnn_splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Default images per unrolled chunk on the BLAS path: 8 of the column's
 * second layer unroll to 1.3 MB, which stays in a 2 MiB L2 (measured best
 * with 4..8 on the test machine; the bench prints the sweep). */
#define NC_CNN_DEFAULT_CHUNK 8u

/* Zero the kernels of the (output, input) map pairs that CONV layer l's
 * table cuts. */
void nc_cnn_mask_kernels(nc_cnn *net, uint32_t l);

/* 0 if w was sized for net's architecture and n fits, else -EINVAL. */
int nc_cnn_work_check(const nc_cnn *net, const nc_cnn_work *w, uint32_t n);

/* The layer that feeds a CONV/POOL layer's input map c of image b starts at
 * src + c * map_stride + b * image_stride (BLAS path layouts). */

/* y = A tanh(S a), or max(0, a) for rectified units; in double for the
 * reference. */
static inline float nc_cnn_act_ref(double a, uint32_t act)
{
    if (act == NC_CNN_ACT_NONE)
        return (float)a;
    if (act == NC_CNN_ACT_RELU)
        return a > 0.0 ? (float)a : 0.0f;
    return (float)((double)NC_CNN_TANH_A * tanh((double)NC_CNN_TANH_S * a));
}

/* dy/da written with y: A S (1 - tanh^2) = (S / A) (A^2 - y^2); for
 * rectified units 1 where y > 0, else 0 (a = 0 counts as off, so a unit
 * that is exactly zero passes no gradient on either side). */
static inline float nc_cnn_act_grad(float y, uint32_t act)
{
    if (act == NC_CNN_ACT_NONE)
        return 1.0f;
    if (act == NC_CNN_ACT_RELU)
        return y > 0.0f ? 1.0f : 0.0f;
    return (NC_CNN_TANH_S / NC_CNN_TANH_A) * (NC_CNN_TANH_A * NC_CNN_TANH_A - y * y);
}

#endif

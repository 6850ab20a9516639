/* core/data/deform.h — random affine + elastic deformations of training images.
 *
 * Layer: core (pure C11, no I/O, no threads, no CUDA).  Error codes as in
 * common.h: 0 or a negative errno; outputs are written only on success;
 * nc_deform_free accepts NULL.
 *
 * Seed 000 §4.1 trains its MNIST CNNs on images deformed afresh for every
 * presentation: affine (translation, rotation, scaling, horizontal shearing)
 * combined with elastic distortions (Simard, Steinkraus & Platt 2003).  This
 * module produces such a deformation of one float image.
 *
 * ---- Geometry -----------------------------------------------------------
 *
 * Pixel (x, y) is column x, row y, its centre at the real point (x, y) (as in
 * image.h).  A deformation is a sampling map from output to input: output
 * pixel p takes the input's value at
 *
 *     s(p) = A (p - c) + c + t + e(p)
 *
 * where c = ((width - 1) / 2, (height - 1) / 2) is the image centre (pixel
 * (14, 14) of the CNN's 29x29 MNIST input, which is where MNIST put each
 * digit's centre of mass, so rotation and scaling happen about the digit),
 * A a 2x2 matrix, t a translation and e an elastic displacement field.  The
 * value at a non-integer s is bilinear between the four surrounding pixels;
 * pixels outside the image read as 0 (background).  Because the map goes
 * from output to input, a translation t = (+1, 0) moves the picture one
 * pixel to the LEFT, and a scale factor above 1 makes the digit smaller;
 * the random draws are symmetric, so this only matters to callers of
 * nc_deform_warp.
 *
 * ---- Random draws (nc_deform_apply) -------------------------------------
 *
 * With u() uniform in [-1, 1) from the caller's nc_deform_rng:
 *   t       = (max_translate u(), max_translate u())           pixels
 *   theta   = max_rotate_deg u()                               degrees
 *   sx, sy  = 1 + max_scale u(), 1 + max_scale u()  (independent axes)
 *   h       = max_shear u()        (horizontal shear: x += h y)
 *   A       = R(theta) [[1, h], [0, 1]] diag(sx, sy)
 *   e       = elastic_alpha * (G_sigma * U), U a field of independent u()
 *             per pixel and axis, G_sigma a normalised Gaussian of standard
 *             deviation elastic_sigma (Simard 2003; alpha and sigma in
 *             pixels).  The random field is drawn over the image grown by
 *             the kernel radius on every side and smoothed "valid", so the
 *             displacement statistics are the same at the border as in the
 *             middle (zero padding would damp the border).  The smoothing is
 *             separable: one horizontal and one vertical pass of a kernel
 *             precomputed by nc_deform_new, radius ceil(3 sigma).
 * The six affine draws are always taken, in the order above, even when
 * their range is 0; the elastic field (2 (w + 2r)(h + 2r) draws) only when
 * elastic_sigma > 0 and elastic_alpha > 0.  So the random stream, and thus
 * every later image, depends only on the seed and the parameters.
 *
 * ---- Values ---------------------------------------------------------------
 *
 * Images are dense row-major floats, expected in [0, 1].  Bilinear sampling
 * is a convex combination of input values, so the output stays in the input's
 * range; it is clamped to [0, 1] to remove the last rounding ulp.  An
 * identity deformation (all parameters 0) reproduces the input bit for bit,
 * and so does any warp whose sampling points land exactly on pixel centres
 * (e.g. a whole-pixel translation shifts the image exactly). */
#ifndef NC_DEFORM_H
#define NC_DEFORM_H

#include "common.h"

/* Caps (-ERANGE beyond): image sides, and the Gaussian's sigma (whose kernel
 * radius, 3 sigma, sets the scratch size). */
#define NC_DEFORM_MAX_DIM    4096u
#define NC_DEFORM_MAX_SIGMA  64.0f
#define NC_DEFORM_MAX_ALPHA  1000.0f

/* ---- PRNG ----------------------------------------------------------------
 *
 * splitmix64 (Steele, Lea & Flood 2014): one 64-bit word of state, so a
 * trainer can save it in a checkpoint and resume the exact same stream.
 * Fixed here so a seed means the same deformations on every host.  Any seed,
 * zero included, is fine. */
typedef struct nc_deform_rng {
    uint64_t state;
} nc_deform_rng;

static inline uint64_t nc_deform_rng_next(nc_deform_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1), from the top 24 bits so the value is exact in float. */
static inline float nc_deform_rng_sym(nc_deform_rng *r)
{
    return (float)(int32_t)((nc_deform_rng_next(r) >> 40) - (1u << 23)) *
           (1.0f / 8388608.0f);
}

/* Uniform integer in [0, n), n >= 1 (Lemire's multiply-shift; the bias of
 * at most n / 2^32 is irrelevant for shuffling). */
static inline uint32_t nc_deform_rng_below(nc_deform_rng *r, uint32_t n)
{
    return (uint32_t)(((nc_deform_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* ---- parameters ------------------------------------------------------------ */

typedef struct nc_deform_params {
    float max_translate;    /* pixels, per axis, >= 0 */
    float max_rotate_deg;   /* degrees, 0..180 */
    float max_scale;        /* relative, per axis, 0..0.9 */
    float max_shear;        /* horizontal shear factor (tan of the angle), 0..1 */
    float elastic_sigma;    /* Gaussian std in pixels, 0 (off) .. MAX_SIGMA */
    float elastic_alpha;    /* displacement scale in pixels, 0 (off) .. MAX_ALPHA */
} nc_deform_params;

/* No deformation at all: nc_deform_apply copies the image. */
#define NC_DEFORM_NONE ((nc_deform_params){ 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f })

/* Defaults for 29x29 MNIST digits, after seed 000 and the papers it builds
 * on (Ciresan et al. 2010/2011: rotation up to 7.5-15 degrees, scaling up to
 * 15 %, elastic sigma 5-6 and alpha 34-38; Simard 2003: sigma 4, alpha 34).
 * Chosen on the mild side of those ranges because the shipped quick models
 * train for only a few epochs: +-1.5 px shift (the digit's 20x20 box has a
 * 4 px margin in the field), +-10 degrees, +-12 % per axis, shear +-0.15
 * (about 8.5 degrees), sigma 6, alpha 34.  With sigma 6 the smoothed uniform
 * field has a standard deviation of about 0.027, so alpha 34 displaces
 * pixels by about 0.9 px (rms per axis), varying smoothly over the digit. */
#define NC_DEFORM_MNIST ((nc_deform_params){ 1.5f, 10.0f, 0.12f, 0.15f, 6.0f, 34.0f })

/* 0 if every field is finite and within its range above, else -EINVAL
 * (-ERANGE for a sigma or alpha over the caps). */
int nc_deform_params_check(const nc_deform_params *p);

/* p with every strength times s (s >= 0): shift, rotation, scaling, shear
 * and the elastic alpha; sigma, the smoothness of the field, is kept.  s = 0
 * gives no deformation, s = 0.5 deformations half as strong.  The result may
 * fail nc_deform_params_check (e.g. a rotation over 180 degrees). */
nc_deform_params nc_deform_params_scaled(const nc_deform_params *p, float s);

/* ---- deterministic warp ------------------------------------------------- */

/* The affine part of a sampling map (see Geometry): s = A (p - c) + c + t,
 * A = [[a11, a12], [a21, a22]]. */
typedef struct nc_deform_affine {
    float a11, a12, a21, a22;
    float tx, ty;
} nc_deform_affine;

#define NC_DEFORM_AFFINE_IDENTITY ((nc_deform_affine){ 1.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f })

/* out = in sampled at A (p - c) + c + t + (dx(p), dy(p)) for every output
 * pixel p.  dx and dy (width * height floats each, pixels) are both NULL for
 * no elastic part, else both given.  out must not overlap in.  -EINVAL for
 * NULL images, a zero or mismatched size, non-finite affine entries or only
 * one of dx/dy; -ERANGE for a side above NC_DEFORM_MAX_DIM.  Sampling points
 * that are not finite or far outside read as 0. */
int nc_deform_warp(const float *in, uint32_t width, uint32_t height,
                   const nc_deform_affine *a, const float *dx, const float *dy,
                   float *out);

/* ---- random deformations ----------------------------------------------- */

/* Parameters, precomputed Gaussian kernel and scratch for one image size.
 * Not shared between threads (the scratch is per call); one per thread. */
typedef struct nc_deform nc_deform;

/* -EINVAL / -ERANGE for bad parameters or sizes, -ENOMEM. */
int nc_deform_new(const nc_deform_params *p, uint32_t width, uint32_t height,
                  nc_deform **ret_d);
void nc_deform_free(nc_deform *d);

/* The elastic part's smoothing kernel: 2 r + 1 floats, normalised, radius r
 * in *ret_radius; NULL (and r = 0) when d has no elastic part.  For the GPU
 * twin (gpu/data/deform.cuh), which must smooth with exactly these floats. */
const float *nc_deform_kernel(const nc_deform *d, uint32_t *ret_radius);

/* Draw one random deformation from rng (see Random draws) and apply it:
 * out = the deformed in, both width x height of d.  out must not overlap in.
 * The only failure is -EINVAL for a NULL argument, checked before any draw,
 * so a failed call leaves rng untouched. */
int nc_deform_apply(nc_deform *d, nc_deform_rng *rng, const float *in, float *out);

#endif

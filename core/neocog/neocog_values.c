/* core/neocog/neocog_values.c — the compact forms of the non-zero weights in
 * neocognitron files (neocog_file.c): IEEE binary16, and 8-bit codes on a
 * logarithmic scale below each plane's largest weight.
 *
 * Layer: core, arithmetic only.  Decoding must give the same floats on every
 * machine, since a file is measured as written: binary16 converts exactly,
 * and a log8 code is one of 16 constants scaled by a power of two (exact)
 * times the plane's scale (one IEEE multiply); no libm rounding enters. */
#include "neocog_impl.h"

#include <math.h>
#include <string.h>

/* v (finite, > 0) as binary16, rounded to nearest, ties to even; a value
 * below the smallest subnormal becomes that subnormal (the weight must stay
 * non-zero, or the bitmap would lie).  -1 when v is too large for binary16. */
int32_t nc_neocog__half_of(float v)
{
    uint32_t x;
    memcpy(&x, &v, sizeof x);
    const int32_t e = (int32_t)(x >> 23 & 0xffu) - 127 + 15;
    uint32_t m = x & 0x7fffffu, h, rem, half_ulp;
    if (e >= 31)
        return -1;
    if (e >= 1) {                       /* a normal binary16 */
        h = (uint32_t)e << 10 | m >> 13;
        rem = m & 0x1fffu;
        half_ulp = 0x1000u;
    } else {                            /* subnormal: shift the implicit 1 in */
        const uint32_t shift = (uint32_t)(14 - e);     /* 14.. */
        if (shift > 24)
            return 1;
        m |= 0x800000u;
        h = m >> shift;
        rem = m & ((1u << shift) - 1u);
        half_ulp = 1u << (shift - 1u);
    }
    if (rem > half_ulp || (rem == half_ulp && (h & 1u)))
        h++;                            /* may carry into the exponent: right */
    if (h >= 0x7c00u)
        return -1;
    return h ? (int32_t)h : 1;
}

/* binary16 h (sign 0, finite: the reader checks) as float, exactly. */
float nc_neocog__float_of_half(uint32_t h)
{
    const uint32_t e = h >> 10 & 0x1fu, m = h & 0x3ffu;
    float v;
    if (e == 0) {
        v = ldexpf((float)m, -24);
    } else {
        const uint32_t x = (e - 15u + 127u) << 23 | m << 13;
        memcpy(&v, &x, sizeof v);
    }
    return v;
}

/* 2^(-j/16) rounded to float, j = 0..15. */
static const float sixteenths[16] = {
    0x1.000000p+0f, 0x1.ea4afap-1f, 0x1.d5818ep-1f, 0x1.c199bep-1f,
    0x1.ae89fap-1f, 0x1.9c4918p-1f, 0x1.8ace54p-1f, 0x1.7a1148p-1f,
    0x1.6a09e6p-1f, 0x1.5ab07ep-1f, 0x1.4bfdaep-1f, 0x1.3dea64p-1f,
    0x1.306fe0p-1f, 0x1.2387a6p-1f, 0x1.172b84p-1f, 0x1.0b5586p-1f,
};

float nc_neocog__float_of_log8(uint32_t q, float scale)
{
    const uint32_t d = 255u - (q & 0xffu);
    return scale * ldexpf(sixteenths[d % 16u], -(int)(d / 16u));
}

uint32_t nc_neocog__log8_of(float v, float scale)
{
    /* the nearest code in the log domain; the encoder's libm does not
     * matter, only the decoder's arithmetic is part of the format */
    const double d = 255.0 + NC_NEOCOG_LOG8_STEPS * log2((double)v / (double)scale);
    if (!(d > 0.0))
        return 0;
    return d >= 255.0 ? 255u : (uint32_t)lround(d);
}

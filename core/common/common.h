/* core/common/common.h — conventions shared by every core/ module.
 *
 * Layer: core (pure C11, no I/O, no CUDA).
 *
 * Errors: every fallible function returns 0 on success or a negative errno
 * value (-EINVAL bad argument, -ENOMEM out of memory, -EBADMSG corrupt or
 * inconsistent data, -ERANGE / -EOVERFLOW sizes out of bounds, -ENOENT a
 * missing item, -ENOTSUP a valid but unsupported variant).  Output arguments
 * are named ret_* and are written only on success.  Nothing here exits,
 * prints or asserts on data that may come from outside. */
#ifndef NC_COMMON_H
#define NC_COMMON_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define NC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* free() and forget: makes a second free of the same field harmless. */
#define NC_FREE(p) do { free(p); (p) = NULL; } while (0)

/* a * b without wrapping; -EOVERFLOW when the product does not fit. */
static inline int nc_size_mul(size_t a, size_t b, size_t *ret)
{
    if (a != 0 && b > SIZE_MAX / a)
        return -EOVERFLOW;
    *ret = a * b;
    return 0;
}

/* Median of n values, v[n / 2] after sorting v in place (the upper one of
 * an even count); 0 for n = 0. */
uint32_t nc_median_u32(uint32_t *v, uint32_t n);

/* Human-readable text for a core error code (a negative errno). */
const char *nc_strerror(int err);

#endif

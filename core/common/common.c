/* core/common/common.c — error text for core's negative-errno codes, and small helpers
 * more than one module uses. */
#include "common.h"

#include <string.h>

const char *nc_strerror(int err)
{
    switch (-err) {
    case 0:         return "success";
    case EINVAL:    return "invalid argument";
    case ENOMEM:    return "out of memory";
    case EBADMSG:   return "corrupt or inconsistent data";
    case ERANGE:    return "value out of range";
    case EOVERFLOW: return "size too large";
    case ENOENT:    return "not found";
    case ENOTSUP:   return "unsupported variant";
    default:        return strerror(-err);
    }
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

uint32_t nc_median_u32(uint32_t *v, uint32_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_u32);
    return v[n / 2];
}

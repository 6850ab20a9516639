/* core/common.c — error text for core's negative-errno codes. */
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

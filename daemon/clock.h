/* daemon/clock.h — the one clock the daemon measures with. */
#ifndef NC_CLOCK_H
#define NC_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Microseconds on CLOCK_MONOTONIC: deadlines and latencies must not jump
 * when the wall clock is set. */
static inline uint64_t nc_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#endif

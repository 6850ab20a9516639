/* tools/bench_cpu_util.c — what neocog-bench-cpu's files share: the clock.
 *
 * Its own file so that the benches (bench_cpu_*.c) call it without calling
 * back into the program's main (bench_cpu.c), which calls them. */
#include "bench_cpu.h"

#include <time.h>

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

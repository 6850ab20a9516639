/* clients/bench.h — `neocog bench`, the load generator.
 *
 * Layer: clients.  See bench.c for how load is generated and measured. */
#ifndef NC_BENCH_H
#define NC_BENCH_H

#include "cli.h"

/* Run the benchmark described by a (a->cmd == NC_CLI_CMD_BENCH) against
 * addr, print the table on stdout; returns the process exit status:
 * 0 no error, 1 any error (a failed request or image, a lost connection). */
int nc_bench_run(const nc_cli_args *a, const char *addr);

#endif

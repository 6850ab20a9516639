/* clients/client_priv.h — what libneocog's files share and callers do not
 * see.  Layer: clients. */
#ifndef NC_CLIENT_PRIV_H
#define NC_CLIENT_PRIV_H

#include "neocog_client.h"

/* The blocking calls' timeout (the timeout_ms option with its default). */
int nc_client_timeout(const nc_client *c);

/* Monotonic time in milliseconds, what every deadline is measured in
 * (addr.c). */
int64_t nc_client_now_ms(void);

/* Connect a fresh non-blocking, close-on-exec stream socket to a within
 * timeout_ms (< 0: no limit); TCP without Nagle.  0 and *ret_fd, or a
 * negative errno with a sentence in why. */
int nc_addr_connect(const nc_client_addr *a, int timeout_ms, int *ret_fd, char *why,
                    size_t n);

#endif

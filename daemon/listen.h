/* daemon/listen.h — opening the listening sockets: TCP (loopback by
 * default), a Unix socket with chosen permissions, or those passed by
 * systemd socket activation.
 *
 * Layer: daemon.  Returns listening, non-blocking, close-on-exec fds. */
#ifndef NC_LISTEN_H
#define NC_LISTEN_H

#include <stddef.h>
#include <stdint.h>

/* "host:port", "[v6]:port" or ":port" (all addresses).  why gets a reason. */
int nc_listen_tcp(const char *addr, int *ret_fd, char *why, size_t why_len);

/* Bind path with permissions mode (set through umask, so the socket never
 * exists with wider ones).  A stale socket file at path is replaced; any
 * other file there is an error. */
int nc_listen_unix(const char *path, uint32_t mode, int *ret_fd, char *why, size_t why_len);

#endif

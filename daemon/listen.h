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

/* TCP_NODELAY on a listening socket, which the connections it accepts
 * inherit (Linux): a reply goes out when written, not after the client's
 * delayed ACK of the one before (Nagle held a 64-digit HTTP answer 40 ms).
 * nc_listen_tcp does it; call it on a socket systemd passed.  A Unix socket
 * has no such option: ignored. */
void nc_listen_no_delay(int fd);

/* Bind path with permissions mode (set through umask, so the socket never
 * exists with wider ones).  A stale socket file at path is replaced; any
 * other file there is an error. */
int nc_listen_unix(const char *path, uint32_t mode, int *ret_fd, char *why, size_t why_len);

/* Make room for max_conns connections and reserve other descriptors
 * (listeners, the event loop, HTTP clients, model files being loaded): the
 * soft RLIMIT_NOFILE is raised as far as needed, up to the hard one.
 * Returns how many connections fit (max_conns when they all do; else the
 * limit less the reserve, but at least half the limit); *ret_limit gets the
 * soft limit now (UINT64_MAX: none, 0: unknown). */
uint32_t nc_listen_fit_nofile(uint32_t max_conns, uint32_t reserve, uint64_t *ret_limit);

#endif

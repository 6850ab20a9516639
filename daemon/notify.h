/* daemon/notify.h — systemd's notify and socket-activation protocols,
 * without libsystemd.
 *
 * Layer: daemon.  Both protocols are small and stable (sd_notify(3),
 * sd_listen_fds(3)); implementing them here keeps the daemon free of a
 * library it would use for two functions, as systemd's own
 * man/notify-selfcontained-example.c shows. */
#ifndef NC_NOTIFY_H
#define NC_NOTIFY_H

#include <stdint.h>

/* Send state (e.g. "READY=1\nSTATUS=serving") to $NOTIFY_SOCKET.  0 when
 * sent or when there is no NOTIFY_SOCKET (not under systemd), else a
 * negative errno. */
int nc_notify(const char *state);

/* Watchdog interval in microseconds from $WATCHDOG_USEC (when
 * $WATCHDOG_PID is unset or ours), else 0. */
uint64_t nc_notify_watchdog_usec(void);

#define NC_LISTEN_FDS_START 3
#define NC_LISTEN_MAX 64

typedef struct nc_listen_fd {
    int fd;
    char name[64];          /* FileDescriptorName=, "" when not given */
} nc_listen_fd;

/* Sockets passed by socket activation ($LISTEN_PID must be ours), at most
 * max.  Each gets FD_CLOEXEC; the variables are removed from the
 * environment so children do not inherit them.  Returns the count (0: not
 * activated) or a negative errno. */
int nc_listen_fds(nc_listen_fd *ret, int max);

#endif

/* daemon/accept.h — the protocol listeners: bound (or taken from systemd)
 * at start-up, disabled until the models are in, the accept callbacks, and
 * the pause while the process is out of file descriptors. */
#ifndef NC_ACCEPT_H
#define NC_ACCEPT_H

#include "server.h"

/* Descriptors kept free of connections: listeners, the event loop, the
 * workers' and reloads' fds, HTTP clients, a model file being read. */
#define NC_FD_RESERVE 32

/* The timer of the out-of-descriptors pause, on s->base; 0 or -ENOMEM. */
int nc_accept_init(nc_server *s);
/* Bind (or take from systemd) every socket of s->cfg: the protocol ones
 * disabled, the HTTP port started.  Logs why on failure. */
int nc_accept_open(nc_server *s);
/* Start accepting (the models are in, or a pause is over). */
int nc_accept_enable(nc_server *s);
/* Stop accepting for good: free the listeners, unlink our Unix socket. */
void nc_accept_close(nc_server *s);
/* Free what nc_accept_init made (after nc_accept_close). */
void nc_accept_free(void);

#endif

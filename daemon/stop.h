/* daemon/stop.h — signals and the way out: SIGHUP reloads, SIGTERM/SIGINT
 * drain (after drain_grace_ms of /readyz saying 503, when set); the drain's
 * time limit; and the watchdog tick. */
#ifndef NC_STOP_H
#define NC_STOP_H

#include "server.h"

/* The signal events, the drain and grace timers and the watchdog tick on
 * s->base; 0 or -ENOMEM / -EINVAL (logs why). */
int nc_stop_init(nc_server *s);
/* Free what nc_stop_init made. */
void nc_stop_free(nc_server *s);

#endif

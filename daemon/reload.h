/* daemon/reload.h — loading the models off the event thread: the first load
 * at start-up and every SIGHUP reload, run on a background thread whose
 * result the loop picks up through an eventfd and swaps in between batches. */
#ifndef NC_RELOAD_H
#define NC_RELOAD_H

#include "server.h"

/* The eventfd and its event on s->base; 0, or -errno / -ENOMEM. */
int nc_reload_init(nc_server *s);
/* The first load: when it is done the workers start, the listeners open
 * and READY=1 goes out, or the loop exits with s->exit_code 1.  Logs why
 * on failure. */
int nc_reload_first(nc_server *s);
/* Load again (SIGHUP); a request while one runs starts another after it. */
void nc_reload_start(nc_server *s);
/* After the loop: wait for a load still running, drop its result, free
 * what nc_reload_init made. */
void nc_reload_free(nc_server *s);

#endif

/* daemon/server.c — the server state's words and its checks, used by
 * main.c (start-up, signals, the loop), conn.c and handler.c alike; this
 * file calls none of them back. */
#include "server.h"

#include <inttypes.h>
#include <stdio.h>

#include <event2/event.h>

#include "notify.h"

const char *nc_server_state_text(nc_server_state st)
{
    switch (st) {
    case NC_SERVER_STARTING: return "loading";
    case NC_SERVER_SERVING: return "serving";
    case NC_SERVER_RELOADING: return "reloading";
    case NC_SERVER_DRAINING: return "draining";
    case NC_SERVER_LEAVING: return "leaving";
    }
    return "?";
}

static void models_text(const nc_server *s, char *dst, size_t n)
{
    const nc_models *g = s->models;
    snprintf(dst, n, "%s%s%s", g->slot[NC_SLOT_CNN] ? "cnn" : "",
             g->slot[NC_SLOT_CNN] && g->slot[NC_SLOT_NEOCOG] ? "+" : "",
             g->slot[NC_SLOT_NEOCOG] ? "neocognitron" : "");
}

void nc_server_notify_status(nc_server *s)
{
    char models[64], msg[256];
    if (!s->models) {
        nc_notify(s->state == NC_SERVER_DRAINING ? "STATUS=stopping before the models loaded"
                                                 : "STATUS=loading models");
        return;
    }
    models_text(s, models, sizeof models);
    snprintf(msg, sizeof msg, "STATUS=%s: %s; %u connections; %" PRIu64 " requests in flight",
             nc_server_state_text(s->state), models, s->n_conns, s->requests_in_flight);
    nc_notify(msg);
}

void nc_server_check_drained(nc_server *s)
{
    if (s->state == NC_SERVER_DRAINING && s->n_conns == 0 && s->requests_in_flight == 0)
        event_base_loopbreak(s->base);
}

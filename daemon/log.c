/* daemon/log.c — see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static int log_level = NC_LOG_INFO;

void nc_log_set_level(int level)
{
    log_level = level < 0 ? 0 : level > 7 ? 7 : level;
}

int nc_log_get_level(void)
{
    return log_level;
}

void nc_log(int level, const char *fmt, ...)
{
    if (level > log_level)
        return;
    /* Format into one buffer so the line reaches stderr in one write. */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    fprintf(stderr, "<%d>%s\n", level, line);
}

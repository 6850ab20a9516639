/* daemon/log.h — level-prefixed log lines on stderr.
 *
 * Layer: daemon (the only layer that logs).  Each line starts with "<N>",
 * N the syslog priority, which journald turns into the entry's priority
 * (SyslogLevelPrefix= defaults to yes), so `journalctl -p warning` works
 * without libsystemd.  One fprintf per line: lines from worker threads do
 * not interleave. */
#ifndef NC_LOG_H
#define NC_LOG_H

#define NC_LOG_ERR 3
#define NC_LOG_WARNING 4
#define NC_LOG_NOTICE 5
#define NC_LOG_INFO 6
#define NC_LOG_DEBUG 7

/* Lines above level are dropped (default NC_LOG_INFO). */
void nc_log_set_level(int level);
int nc_log_get_level(void);
void nc_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

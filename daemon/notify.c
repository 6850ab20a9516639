/* daemon/notify.c — see notify.h. */
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int nc_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !*path)
        return 0;
    /* Absolute path, or '@' for the abstract namespace. */
    if (path[0] != '/' && path[0] != '@')
        return -EAFNOSUPPORT;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    size_t plen = strlen(path);
    if (plen >= sizeof sa.sun_path)
        return -E2BIG;
    memcpy(sa.sun_path, path, plen);
    if (sa.sun_path[0] == '@')
        sa.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + plen);
    /* Never block the event loop: if the manager is not reading, the
     * notification is dropped (the next STATUS= replaces it anyway). */
    ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL | MSG_DONTWAIT,
                       (struct sockaddr *)&sa, salen);
    int err = n < 0 ? -errno : (size_t)n != strlen(state) ? -EPROTO : 0;
    close(fd);
    return err;
}

static int parse_u64(const char *s, unsigned long long *ret)
{
    if (!s || !*s)
        return -ENOENT;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || s[0] == '-')
        return -EINVAL;
    *ret = v;
    return 0;
}

uint64_t nc_notify_watchdog_usec(void)
{
    unsigned long long usec, pid;
    if (parse_u64(getenv("WATCHDOG_USEC"), &usec) || usec == 0)
        return 0;
    int r = parse_u64(getenv("WATCHDOG_PID"), &pid);
    if (r == 0 && pid != (unsigned long long)getpid())
        return 0;
    return usec;
}

int nc_listen_fds(nc_listen_fd *ret, int max)
{
    unsigned long long pid, n;
    int err = 0;
    if (parse_u64(getenv("LISTEN_PID"), &pid) || pid != (unsigned long long)getpid())
        goto done;
    if (parse_u64(getenv("LISTEN_FDS"), &n) || n == 0)
        goto done;
    if (n > (unsigned long long)max) {
        err = -E2BIG;
        goto done;
    }
    const char *names = getenv("LISTEN_FDNAMES");
    for (unsigned i = 0; i < n; i++) {
        int fd = NC_LISTEN_FDS_START + (int)i;
        if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
            err = -errno;
            goto done;
        }
        ret[i].fd = fd;
        ret[i].name[0] = '\0';
        /* The i-th colon-separated name, if any. */
        if (names) {
            const char *p = names;
            for (unsigned k = 0; k < i && p; k++) {
                p = strchr(p, ':');
                if (p)
                    p++;
            }
            if (p) {
                size_t len = strcspn(p, ":");
                if (len >= sizeof ret[i].name)
                    len = sizeof ret[i].name - 1;
                memcpy(ret[i].name, p, len);
                ret[i].name[len] = '\0';
            }
        }
    }
    err = (int)n;
done:
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    return err;
}

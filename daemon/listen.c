/* daemon/listen.c — see listen.h. */
#include "listen.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int nc_listen_tcp(const char *addr, int *ret_fd, char *why, size_t why_len)
{
    char host[256];
    const char *colon = strrchr(addr, ':');
    if (!colon || !colon[1]) {
        snprintf(why, why_len, "'%s': expected host:port", addr);
        return -EINVAL;
    }
    size_t hlen = (size_t)(colon - addr);
    if (hlen >= sizeof host) {
        snprintf(why, why_len, "'%s': host too long", addr);
        return -EINVAL;
    }
    memcpy(host, addr, hlen);
    host[hlen] = '\0';
    const char *h = host;
    if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {   /* [::1]:port */
        host[hlen - 1] = '\0';
        h = host + 1;
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(*h ? h : NULL, colon + 1, &hints, &res);
    if (gai) {
        snprintf(why, why_len, "'%s': %s", addr, gai_strerror(gai));
        return -EINVAL;
    }
    int err = -EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = -errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 512) == 0) {
            nc_listen_no_delay(fd);
            freeaddrinfo(res);
            *ret_fd = fd;
            return 0;
        }
        err = -errno;
        close(fd);
    }
    freeaddrinfo(res);
    snprintf(why, why_len, "'%s': %s", addr, strerror(-err));
    return err;
}

void nc_listen_no_delay(int fd)
{
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int nc_listen_unix(const char *path, uint32_t mode, int *ret_fd, char *why, size_t why_len)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(why, why_len, "%s: path too long for a Unix socket", path);
        return -ENAMETOOLONG;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(why, why_len, "%s exists and is not a socket", path);
            return -EEXIST;
        }
        /* Unlink only a socket nobody listens on any more: unlinking a
         * live one would steal it from a running daemon (whose clients
         * then reach us, and whose exit would unlink ours). */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (probe >= 0) {
            int r = connect(probe, (struct sockaddr *)&sa, sizeof sa);
            int e = r < 0 ? errno : 0;
            close(probe);
            if (r == 0 || e == EAGAIN || e == EINPROGRESS) {
                snprintf(why, why_len, "%s: another process is listening on it", path);
                return -EADDRINUSE;
            }
        }
        unlink(path);       /* left over from an earlier run */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int err = -errno;
        snprintf(why, why_len, "%s: %s", path, strerror(-err));
        return err;
    }
    mode_t old = umask((mode_t)(~mode & 0777));
    int r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    int err = r < 0 ? -errno : 0;
    umask(old);
    if (err == -ENOENT) {
        /* The default /run/neocogd may not exist outside systemd: make the
         * last folder (only that one) and try again. */
        char dirpath[sizeof sa.sun_path];
        memcpy(dirpath, sa.sun_path, sizeof dirpath);
        char *slash = strrchr(dirpath, '/');
        if (slash && slash != dirpath) {
            *slash = '\0';
            if (mkdir(dirpath, 0755) == 0 || errno == EEXIST) {
                old = umask((mode_t)(~mode & 0777));
                r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
                err = r < 0 ? -errno : 0;
                umask(old);
            }
        }
    }
    if (!err && listen(fd, 512) < 0)
        err = -errno;
    if (err) {
        snprintf(why, why_len, "%s: %s", path, strerror(-err));
        close(fd);
        return err;
    }
    /* umask only narrows; make the bits exact. */
    chmod(path, (mode_t)mode);
    *ret_fd = fd;
    return 0;
}

uint32_t nc_listen_fit_nofile(uint32_t max_conns, uint32_t reserve, uint64_t *ret_limit)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
        *ret_limit = 0;
        return max_conns;
    }
    const uint64_t need = (uint64_t)max_conns + reserve;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        struct rlimit up = rl;
        up.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &up) == 0)
            rl = up;
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need) {
        *ret_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
        return max_conns;
    }
    uint64_t lim = rl.rlim_cur;
    *ret_limit = lim;
    /* Below the reserve, half the descriptors still go to connections: a
     * daemon that refuses every client would be no use either. */
    uint64_t fit = lim > reserve ? lim - reserve : 0;
    if (fit < lim / 2)
        fit = lim / 2;
    return fit ? (uint32_t)fit : 1;
}

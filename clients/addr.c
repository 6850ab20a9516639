/* clients/addr.c — libneocog: server addresses (unix:PATH, tcp:HOST:PORT),
 * the default one, and connecting to one.  See neocog_client.h.
 *
 * Layer: clients.  Nothing printed; errors are negative errno values with a
 * sentence for the caller. */
#include "neocog_client.h"
#include "client_priv.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"

int nc_client_addr_parse(const char *text, nc_client_addr *ret)
{
    if (!text || !ret || !*text)
        return -EINVAL;
    nc_client_addr a;
    memset(&a, 0, sizeof a);
    const char *rest = text;
    int is_unix = 0;
    if (!strncmp(text, "unix:", 5)) {
        is_unix = 1;
        rest = text + 5;
    } else if (!strncmp(text, "tcp:", 4)) {
        rest = text + 4;
    } else if (strchr(text, '/')) {
        is_unix = 1;
    }
    if (is_unix) {
        size_t n = strlen(rest);
        if (n == 0 || n >= sizeof a.path)
            return -EINVAL;
        a.kind = NC_CLIENT_ADDR_UNIX;
        memcpy(a.path, rest, n + 1);
        *ret = a;
        return 0;
    }
    a.kind = NC_CLIENT_ADDR_TCP;
    const char *host = rest, *port = NULL;
    size_t host_len;
    if (rest[0] == '[') {
        /* [v6] or [v6]:port: colons inside the brackets are the address's. */
        const char *close = strchr(rest, ']');
        if (!close)
            return -EINVAL;
        host = rest + 1;
        host_len = (size_t)(close - host);
        if (close[1] == ':')
            port = close + 2;
        else if (close[1] != '\0')
            return -EINVAL;
    } else {
        const char *colon = strchr(rest, ':');
        if (colon && strchr(colon + 1, ':'))
            return -EINVAL;     /* a bare IPv6 address needs brackets */
        host_len = colon ? (size_t)(colon - rest) : strlen(rest);
        if (colon)
            port = colon + 1;
    }
    if (host_len == 0 || host_len >= sizeof a.host)
        return -EINVAL;
    memcpy(a.host, host, host_len);
    a.host[host_len] = '\0';
    if (port) {
        char *end;
        errno = 0;
        if (*port < '0' || *port > '9')
            return -EINVAL;
        unsigned long p = strtoul(port, &end, 10);
        if (errno || *end || p == 0 || p > 65535)
            return -EINVAL;
        a.port = (uint16_t)p;
    } else {
        a.port = NC_DEFAULT_TCP_PORT;
    }
    *ret = a;
    return 0;
}

static int is_socket(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

void nc_client_default_addr(char *dst, size_t cap)
{
    if (!dst || !cap)
        return;
    const char *env = getenv("NEOCOG_SERVER");
    if (env && *env) {
        snprintf(dst, cap, "%s", env);
        return;
    }
    if (is_socket(NC_DEFAULT_UNIX_PATH)) {
        snprintf(dst, cap, "unix:%s", NC_DEFAULT_UNIX_PATH);
        return;
    }
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg) {
        char path[4096];
        snprintf(path, sizeof path, "%s/neocogd.sock", xdg);
        if (is_socket(path)) {
            snprintf(dst, cap, "unix:%s", path);
            return;
        }
    }
    snprintf(dst, cap, "tcp:%s:%d", NC_DEFAULT_TCP_HOST, NC_DEFAULT_TCP_PORT);
}


/* ---- connecting ----------------------------------------------------------- */

static int say(char *why, size_t n, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int say(char *why, size_t n, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return err;
}

int64_t nc_client_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait until fd is writable (a connect finished): 0, or -ETIMEDOUT after
 * timeout_ms (< 0: none); EINTR costs only a retry. */
static int wait_out(int fd, int timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? -1 : nc_client_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline < 0 ? -1 : deadline - nc_client_now_ms();
        if (deadline >= 0 && left <= 0)
            return -ETIMEDOUT;
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int n = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

/* Non-blocking connect on a fresh socket, at most timeout_ms.
 * Returns 0 or a negative errno; fd stays open either way. */
static int connect_fd(int timeout_ms, int fd, const struct sockaddr *sa, socklen_t len)
{
    if (connect(fd, sa, len) == 0)
        return 0;
    if (errno != EINPROGRESS && errno != EAGAIN && errno != EINTR)
        return -errno;
    /* EINTR leaves the connect running in the background, like EINPROGRESS. */
    int r = wait_out(fd, timeout_ms);
    if (r < 0)
        return r;
    int soerr = 0;
    socklen_t sl = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
        return -errno;
    return -soerr;
}

static int connect_unix(const nc_client_addr *a, int timeout_ms, int *ret_fd, char *why, size_t n)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    memcpy(sa.sun_path, a->path, strlen(a->path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return say(why, n, -errno, "socket: %s", strerror(errno));
    int r = connect_fd(timeout_ms, fd, (struct sockaddr *)&sa, sizeof sa);
    if (r < 0) {
        close(fd);
        return say(why, n, r, "cannot connect to unix:%s: %s", a->path, strerror(-r));
    }
    *ret_fd = fd;
    return 0;
}

static int connect_tcp(const nc_client_addr *a, int timeout_ms, int *ret_fd, char *why, size_t n)
{
    char port[8];
    snprintf(port, sizeof port, "%u", a->port);
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
    struct addrinfo *res = NULL;
    int g = getaddrinfo(a->host, port, &hints, &res);
    if (g != 0)
        return say(why, n, -EHOSTUNREACH, "cannot resolve %s: %s", a->host, gai_strerror(g));
    int r = -EHOSTUNREACH;
    /* Every address in turn: "localhost" may be ::1 first while the daemon
     * listens on 127.0.0.1 only. */
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        ai->ai_protocol);
        if (fd < 0) {
            r = -errno;
            continue;
        }
        r = connect_fd(timeout_ms, fd, ai->ai_addr, ai->ai_addrlen);
        if (r == 0) {
            /* Requests are small and latency is the point: no Nagle delay. */
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            *ret_fd = fd;
            break;
        }
        close(fd);
    }
    freeaddrinfo(res);
    if (r < 0)
        return say(why, n, r, "cannot connect to tcp:%s:%u: %s", a->host, a->port,
                       strerror(-r));
    return 0;
}


int nc_addr_connect(const nc_client_addr *a, int timeout_ms, int *ret_fd, char *why, size_t n)
{
    return a->kind == NC_CLIENT_ADDR_UNIX ? connect_unix(a, timeout_ms, ret_fd, why, n)
                                          : connect_tcp(a, timeout_ms, ret_fd, why, n);
}

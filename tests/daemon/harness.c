/* tests/daemon/harness.c — see harness.h. */
#include "harness.h"

#include "image_clean.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <png.h>
#include <turbojpeg.h>

#include "cnn.h"
#include "cnn_file.h"
#include "fileio.h"
#include "frame.h"
#include "image.h"

static int listen_loopback(int *ret_port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 512) ||
        getsockname(fd, (struct sockaddr *)&sa, &len))
        return -1;
    *ret_port = ntohs(sa.sin_port);
    return fd;
}

int nc_daemon_start(nc_daemon *d, const char *bin, const char *dir, int activate,
                    const char *const *args)
{
    if (nc_daemon_spawn(d, bin, dir, activate, args, NULL))
        return -1;
    return nc_daemon_wait_notify(d, "READY=1", 60000);
}

int nc_daemon_spawn(nc_daemon *d, const char *bin, const char *dir, int activate,
                    const char *const *args, const char *log_path)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "%s", dir);
    char notify_path[300];
    static int started;     /* one notify socket per daemon */
    snprintf(notify_path, sizeof notify_path, "%s/notify-%d-%d", dir, (int)getpid(), started++);
    unlink(notify_path);
    d->notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(notify_path) >= sizeof sa.sun_path)
        return -1;
    memcpy(sa.sun_path, notify_path, strlen(notify_path) + 1);
    if (d->notify_fd < 0 || bind(d->notify_fd, (struct sockaddr *)&sa, sizeof sa))
        return -1;
    int tcp = -1, http = -1;
    if (activate) {
        tcp = listen_loopback(&d->port);
        http = listen_loopback(&d->http_port);
        if (tcp < 0 || http < 0)
            return -1;
    }
    const char *argv[64];
    int n = 0;
    argv[n++] = bin;
    for (int i = 0; args && args[i] && n < 62; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    d->pid = fork();
    if (d->pid < 0)
        return -1;
    if (d->pid == 0) {
        if (activate) {
            /* sd_listen_fds(3): fds from 3 on, named, for our pid. */
            int t = dup(tcp), h = dup(http);
            dup2(t, 3);
            dup2(h, 4);
            for (int fd = 5; fd < 64; fd++)
                close(fd);
            char pid[32];
            snprintf(pid, sizeof pid, "%d", (int)getpid());
            setenv("LISTEN_PID", pid, 1);
            setenv("LISTEN_FDS", "2", 1);
            setenv("LISTEN_FDNAMES", "proto:http", 1);
        }
        setenv("NOTIFY_SOCKET", notify_path, 1);
        if (log_path) {
            int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0 || dup2(fd, 2) < 0)
                _exit(127);
        }
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    if (tcp >= 0)
        close(tcp);
    if (http >= 0)
        close(http);
    return 0;
}

int nc_daemon_wait_notify(nc_daemon *d, const char *what, int timeout_ms)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        int left = timeout_ms - (int)((t1.tv_sec - t0.tv_sec) * 1000 +
                                      (t1.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0)
            return -1;
        struct pollfd p = { d->notify_fd, POLLIN, 0 };
        if (poll(&p, 1, left < 50 ? left : 50) == 1) {
            char buf[4096];
            ssize_t n = recv(d->notify_fd, buf, sizeof buf - 1, 0);
            if (n > 0) {
                buf[n] = '\0';
                if (strstr(buf, what))
                    return 0;
            }
        }
        int status;
        if (d->pid > 0 && waitpid(d->pid, &status, WNOHANG) == d->pid) {
            d->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            d->pid = 0;
            /* What it sent before exiting is still queued here. */
            char buf[4096];
            ssize_t n;
            while ((n = recv(d->notify_fd, buf, sizeof buf - 1, MSG_DONTWAIT)) > 0) {
                buf[n] = '\0';
                if (strstr(buf, what))
                    return 0;
            }
            fprintf(stderr, "harness: daemon exited (status %d) while waiting for %s\n",
                    status, what);
            return -1;
        }
    }
}

void nc_daemon_drain_notify(nc_daemon *d)
{
    char buf[4096];
    while (recv(d->notify_fd, buf, sizeof buf, MSG_DONTWAIT) > 0)
        ;
}

int nc_daemon_wait_exit(nc_daemon *d, int timeout_ms)
{
    for (int waited = 0; d->pid > 0 && waited < timeout_ms; waited += 10) {
        int status;
        if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
            d->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            d->pid = 0;
            break;
        }
        struct timespec ts = { 0, 10000000 };
        nanosleep(&ts, NULL);
    }
    return d->pid == 0 ? d->exit_status : -1;
}

int nc_daemon_stop(nc_daemon *d, int timeout_ms)
{
    int status = -1;
    if (d->pid == 0)
        status = d->exit_status >= 0 ? d->exit_status << 8 : -1;
    if (d->pid > 0) {
        kill(d->pid, SIGTERM);
        for (int waited = 0; waited < timeout_ms; waited += 10) {
            if (waitpid(d->pid, &status, WNOHANG) == d->pid)
                break;
            struct timespec ts = { 0, 10000000 };
            nanosleep(&ts, NULL);
            status = -1;
        }
        if (status == -1) {
            kill(d->pid, SIGKILL);
            waitpid(d->pid, &status, 0);
            status = -1;
        }
        d->pid = 0;
    }
    if (d->notify_fd > 0)
        close(d->notify_fd);
    d->notify_fd = -1;
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int nc_connect_tcp(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

int nc_connect_unix(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

int nc_send_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int nc_send_msg(int fd, const ProtobufCMessage *m)
{
    uint8_t *buf;
    size_t len;
    if (nc_msg_frame(m, 0, &buf, &len))
        return -1;
    int r = nc_send_all(fd, buf, len);
    free(buf);
    return r;
}

/* Read exactly len bytes within the time left. */
static int recv_exact(int fd, uint8_t *buf, size_t len, int timeout_ms)
{
    size_t have = 0;
    while (have < len) {
        struct pollfd p = { fd, POLLIN, 0 };
        int r = poll(&p, 1, timeout_ms);
        if (r == 0)
            return -ETIMEDOUT;
        if (r < 0 && errno == EINTR)
            continue;
        ssize_t n = recv(fd, buf + have, len - have, 0);
        if (n == 0)
            return -EPIPE;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == ECONNRESET ? -EPIPE : -errno;
        }
        have += (size_t)n;
    }
    return 0;
}

int nc_recv_reply(int fd, int timeout_ms, nc_msg **ret)
{
    uint8_t hdr[NC_FRAME_HEADER_LEN];
    int err = recv_exact(fd, hdr, sizeof hdr, timeout_ms);
    if (err)
        return err;
    nc_frame_header h;
    if ((err = nc_frame_header_parse(hdr, sizeof hdr, 0, &h)))
        return err;
    uint8_t *payload = malloc(h.length ? h.length : 1);
    if (!payload)
        return -ENOMEM;
    if (!(err = recv_exact(fd, payload, h.length, timeout_ms)))
        err = nc_msg_unpack(&neocog__reply__descriptor, payload, h.length, 0, ret);
    free(payload);
    return err;
}

int nc_wait_eof(int fd, int timeout_ms)
{
    uint8_t buf[4096];
    for (;;) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, timeout_ms) != 1)
            return 0;
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return 1;
        if (n < 0)
            return 0;
    }
}

nc_msg *nc_roundtrip(int fd, const Neocog__Request *rq)
{
    nc_msg *m = NULL;
    if (nc_send_msg(fd, &rq->base) || nc_recv_reply(fd, 30000, &m))
        return NULL;
    return m;
}

char *nc_http_get(int port, const char *path)
{
    int fd = nc_connect_tcp(port);
    if (fd < 0)
        return NULL;
    char req[256];
    snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", path);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf || nc_send_all(fd, req, strlen(req))) {
        free(buf);
        close(fd);
        return NULL;
    }
    for (;;) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 10000) != 1)
            break;
        if (len + 4096 > cap) {
            char *q = realloc(buf, cap * 2);
            if (!q)
                break;
            buf = q;
            cap *= 2;
        }
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    close(fd);
    return buf;
}

int nc_encode_pgm(const uint8_t *px, uint32_t w, uint32_t h, uint8_t **ret, size_t *ret_len)
{
    char head[64];
    int n = snprintf(head, sizeof head, "P5\n# test\n%u %u\n255\n", w, h);
    uint8_t *buf = malloc((size_t)n + (size_t)w * h);
    if (!buf)
        return -1;
    memcpy(buf, head, (size_t)n);
    memcpy(buf + n, px, (size_t)w * h);
    *ret = buf;
    *ret_len = (size_t)n + (size_t)w * h;
    return 0;
}

typedef struct membuf {
    uint8_t *buf;
    size_t len, cap;
} membuf;

static void png_write_mem(png_structp png, png_bytep data, size_t n)
{
    membuf *m = png_get_io_ptr(png);
    if (m->len + n > m->cap) {
        size_t cap = (m->cap + n) * 2;
        uint8_t *p = realloc(m->buf, cap);
        if (!p)
            png_error(png, "oom");
        m->buf = p;
        m->cap = cap;
    }
    memcpy(m->buf + m->len, data, n);
    m->len += n;
}

static void png_flush_mem(png_structp png)
{
    (void)png;
}

int nc_encode_png(const uint8_t *px, uint32_t w, uint32_t h, uint8_t **ret, size_t *ret_len)
{
    membuf m = { 0 };
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(m.buf);
        return -1;
    }
    png_set_write_fn(png, &m, png_write_mem, png_flush_mem);
    png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < h; y++)
        png_write_row(png, px + (size_t)y * w);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    *ret = m.buf;
    *ret_len = m.len;
    return 0;
}

int nc_encode_jpeg(const uint8_t *px, uint32_t w, uint32_t h, uint8_t **ret, size_t *ret_len)
{
    tjhandle tj = tjInitCompress();
    unsigned char *out = NULL;
    unsigned long len = 0;
    int r = tj ? tjCompress2(tj, px, (int)w, (int)w, (int)h, TJPF_GRAY, &out, &len,
                             TJSAMP_GRAY, 90, 0) : -1;
    if (tj)
        tjDestroy(tj);
    if (r) {
        tjFree(out);
        return -1;
    }
    /* Hand back malloc'd memory so every encoder is freed the same way. */
    *ret = malloc(len);
    if (!*ret) {
        tjFree(out);
        return -1;
    }
    memcpy(*ret, out, len);
    *ret_len = len;
    tjFree(out);
    return 0;
}

int nc_decode_jpeg_gray(const uint8_t *buf, size_t len, uint8_t *px, uint32_t w, uint32_t h)
{
    tjhandle tj = tjInitDecompress();
    int r = tj ? tjDecompress2(tj, buf, (unsigned long)len, px, (int)w, (int)w, (int)h,
                               TJPF_GRAY, 0) : -1;
    if (tj)
        tjDestroy(tj);
    return r ? -1 : 0;
}

int nc_write_file(const char *path, const void *buf, size_t len)
{
    return nc_file_write_atomic(path, buf, len);
}

int nc_make_cnn_model(const char *path, uint64_t seed)
{
    return nc_make_cnn_model_arch(path, seed, "1x29x29-6C4-MP2-10N");
}

int nc_make_cnn_model_arch(const char *path, uint64_t seed, const char *arch)
{
    nc_cnn *net = NULL;
    nc_model_info info;
    nc_test_cnn_info(&info);
    snprintf(info.data, sizeof info.data, "random weights (daemon test)");
    /* Random weights, large enough that different digits get different
     * answers: the tests compare the daemon with core, not with truth. */
    int err = nc_cnn_new(arch, &net);
    if (!err)
        err = nc_cnn_init_uniform(net, seed, 0.3f);
    if (!err)
        err = nc_test_write_cnn(path, net, &info);
    nc_cnn_free(net);
    return err;
}

int nc_direct_open(nc_direct *d, const char *model_path)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    memset(d, 0, sizeof *d);
    int err = nc_file_read_model(model_path, 64u << 20, &buf, &len);
    if (!err)
        err = nc_backend_open(&nc_backend_cpu, buf, len, 0, &d->be);
    free(buf);
    if (!err)
        err = d->be->ops->worker_new(d->be->impl, 1, &d->worker);
    return err;
}

void nc_direct_close(nc_direct *d)
{
    if (d->be && d->worker)
        d->be->ops->worker_free(d->worker);
    nc_backend_close(d->be);
    memset(d, 0, sizeof *d);
}

int nc_direct_run(nc_direct *d, const uint8_t *px, uint32_t w, uint32_t h, float *scores,
                  int32_t *ret_label)
{
    nc_image img;
    int err = nc_image_view((uint8_t *)px, w, h, 0, &img);
    if (err)
        return err;
    float *in = malloc(d->be->input_len * sizeof *in);
    if (!in)
        return -ENOMEM;
    /* the daemon's preparation: the clean character, then the model's prep */
    err = nc_image_clean_prep(&img, NC_POLARITY_AUTO, &d->be->info.prep, in);
    if (!err)
        err = d->be->ops->forward(d->be->impl, d->worker, in, 1, scores);
    if (!err)
        *ret_label = nc_backend_label(d->be->kind, scores, d->be->info.n_classes);
    free(in);
    return err;
}

int nc_truncated_copy(const char *from, const char *to, size_t keep)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int err = nc_file_read(from, 64u << 20, &buf, &len);
    if (!err)
        err = nc_write_file(to, buf, keep < len ? keep : len);
    free(buf);
    return err;
}

int nc_status_tcp(int port, Neocog__StatusReply **ret, nc_msg **ret_msg)
{
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    Neocog__StatusRequest sr = NEOCOG__STATUS_REQUEST__INIT;
    rq.id = 5;
    rq.kind_case = NEOCOG__REQUEST__KIND_STATUS;
    rq.status = &sr;
    int fd = nc_connect_tcp(port);
    nc_msg *m = fd >= 0 ? nc_roundtrip(fd, &rq) : NULL;
    if (fd >= 0)
        close(fd);
    if (!m || !nc_msg_reply(m)->status) {
        nc_msg_free(m);
        return -1;
    }
    *ret = nc_msg_reply(m)->status;
    *ret_msg = m;
    return 0;
}

void nc_sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, ms % 1000 * 1000000L };
    nanosleep(&ts, NULL);
}

char *nc_read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (len + 1 < cap)
            break;
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

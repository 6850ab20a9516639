/* tests/daemon/harness.h — what the daemon tests need around the real
 * neocogd binary: start it with sockets passed by socket activation (so
 * the test owns the ephemeral port and nothing races for it), wait for its
 * READY=1 on a notify socket of our own, speak the protocol, encode test
 * images, compute core's direct answers. */
#ifndef NC_TEST_HARNESS_H
#define NC_TEST_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "message.h"

typedef struct nc_daemon {
    pid_t pid;
    int port;               /* TCP protocol port (activation) */
    int http_port;          /* metrics port (activation), 0 none */
    int notify_fd;          /* our NOTIFY_SOCKET, datagrams from the daemon */
    char dir[256];          /* temporary folder */
    int exit_status;        /* once it exited (pid 0 then); -1 abnormal */
} nc_daemon;

/* Start `bin` with extra args (NULL-terminated).  activate: pass a TCP and
 * an HTTP socket by socket activation.  Waits for READY=1 (30 s).  0 or -1. */
int nc_daemon_start(nc_daemon *d, const char *bin, const char *dir, int activate,
                    const char *const *args);
/* Start it as nc_daemon_start does without waiting for anything; its
 * stderr goes to log_path (truncated first; NULL: ours).  0 or -1. */
int nc_daemon_spawn(nc_daemon *d, const char *bin, const char *dir, int activate,
                    const char *const *args, const char *log_path);
/* Wait for a notify datagram containing `what` (e.g. "READY=1"). */
int nc_daemon_wait_notify(nc_daemon *d, const char *what, int timeout_ms);
/* Throw away the notifications received so far (the socket's queue is
 * short, and the daemon drops messages rather than block on it). */
void nc_daemon_drain_notify(nc_daemon *d);
/* Wait for the daemon to exit by itself; its exit status or -1. */
int nc_daemon_wait_exit(nc_daemon *d, int timeout_ms);
/* SIGTERM (if still running) and wait; returns the exit status or -1. */
int nc_daemon_stop(nc_daemon *d, int timeout_ms);

int nc_connect_tcp(int port);
int nc_connect_unix(const char *path);
int nc_send_all(int fd, const void *buf, size_t len);
int nc_send_msg(int fd, const ProtobufCMessage *m);
/* Read one Reply frame; -ETIMEDOUT, -EPIPE on EOF, other negative errors. */
int nc_recv_reply(int fd, int timeout_ms, nc_msg **ret);
/* 1 when the peer closed (EOF) within timeout_ms. */
int nc_wait_eof(int fd, int timeout_ms);
/* Send a request and read its reply (NULL on failure). */
nc_msg *nc_roundtrip(int fd, const Neocog__Request *rq);

/* A GET on the HTTP port; the whole response in a malloc'd string. */
char *nc_http_get(int port, const char *path);

/* Encoders (malloc'd results). */
int nc_encode_pgm(const uint8_t *px, uint32_t w, uint32_t h, uint8_t **ret, size_t *ret_len);
int nc_encode_png(const uint8_t *px, uint32_t w, uint32_t h, uint8_t **ret, size_t *ret_len);
int nc_encode_jpeg(const uint8_t *px, uint32_t w, uint32_t h, uint8_t **ret, size_t *ret_len);
/* What the daemon will see from a JPEG: TurboJPEG's grey decode. */
int nc_decode_jpeg_gray(const uint8_t *buf, size_t len, uint8_t *px, uint32_t w, uint32_t h);

/* A small random-weight CNN model file (29x29 input, 10 classes) at path;
 * _arch: of that architecture (1x29x29 in, 10 out). */
int nc_make_cnn_model(const char *path, uint64_t seed);
int nc_make_cnn_model_arch(const char *path, uint64_t seed, const char *arch);
int nc_write_file(const char *path, const void *buf, size_t len);
/* A whole text file, malloc'd and NUL-terminated; NULL if unreadable. */
char *nc_read_text(const char *path);
/* The first `keep` bytes of from (all of it: SIZE_MAX) written to to, e.g. a
 * truncated model file.  0 or a negative errno. */
int nc_truncated_copy(const char *from, const char *to, size_t keep);
/* A status request over TCP: *ret points into *ret_msg (free that with
 * nc_msg_free).  0, or -1 when no status reply came. */
int nc_status_tcp(int port, Neocog__StatusReply **ret, nc_msg **ret_msg);
void nc_sleep_ms(long ms);

/* Core's direct answer for a light-ink image: raw scores and label. */
typedef struct nc_direct {
    nc_backend *be;
    void *worker;
} nc_direct;
int nc_direct_open(nc_direct *d, const char *model_path);
void nc_direct_close(nc_direct *d);
int nc_direct_run(nc_direct *d, const uint8_t *px, uint32_t w, uint32_t h, float *scores,
                  int32_t *ret_label);

#endif

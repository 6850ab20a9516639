/* tests/io/test_fileio.c — io/fileio.h: the caps of whole-file reading
 * (a regular file refused before reading, a pipe read up to the cap), the
 * regular-only reading the daemon's model scan relies on, a gzip'd model
 * inflated, atomic writes read back, and MNIST found under its usual
 * names. */
#include "fileio.h"
#include "test.h"

#include "dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

static char dir[64];

static void path_of(char *dst, size_t n, const char *name)
{
    snprintf(dst, n, "%s/%s", dir, name);
}

static void fill(uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 7 + 3);
}

/* A regular file at the cap reads whole (NUL after it); one byte over is
 * -EFBIG; so is any pipe longer than the cap, which has no size to judge. */
static void test_caps(void)
{
    enum { N = 100000 };            /* over the first 64 KiB step of a pipe */
    static uint8_t data[N + 1];
    fill(data, sizeof data);
    char p[128];
    path_of(p, sizeof p, "exact");
    REQUIRE(nc_file_write_atomic(p, data, N) == 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    CHECK_INT_EQ(nc_file_read(p, N, &buf, &len), 0);
    CHECK(len == N && buf && !memcmp(buf, data, N) && buf[N] == 0);
    free(buf);
    buf = NULL;
    CHECK_INT_EQ(nc_file_read(p, N - 1, &buf, &len), -EFBIG);
    CHECK(buf == NULL);
    CHECK_INT_EQ(nc_file_read(p, 1, &buf, &len), -EFBIG);

    /* empty file: a buffer holding the NUL */
    path_of(p, sizeof p, "empty");
    REQUIRE(nc_file_write_atomic(p, data, 0) == 0);
    CHECK_INT_EQ(nc_file_read(p, 10, &buf, &len), 0);
    CHECK(len == 0 && buf && buf[0] == 0);
    free(buf);

    /* a FIFO, written by a child: read to the end under the cap ... */
    path_of(p, sizeof p, "fifo");
    REQUIRE(mkfifo(p, 0600) == 0);
    for (int over = 0; over < 2; over++) {
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            int fd = open(p, O_WRONLY);
            size_t off = 0;
            while (fd >= 0 && off < N) {
                ssize_t w = write(fd, data + off, N - off);
                if (w <= 0)
                    break;
                off += (size_t)w;
            }
            _exit(0);
        }
        buf = NULL;
        int err = nc_file_read(p, over ? N - 1 : N, &buf, &len);
        if (over) {
            /* ... and refused one byte past it */
            CHECK_INT_EQ(err, -EFBIG);
        } else {
            CHECK_INT_EQ(err, 0);
            CHECK(len == N && buf && !memcmp(buf, data, N));
        }
        free(buf);
        int st;
        waitpid(pid, &st, 0);
    }
    /* Regular-only reading (models) refuses what is not a file; a
     * directory stands for them here, since opening a FIFO would wait for a
     * writer. */
    CHECK_INT_EQ(nc_file_read_regular(dir, 1 << 20, &buf, &len), -EINVAL);
    CHECK_INT_EQ(nc_file_read_model(dir, 1 << 20, &buf, &len), -EINVAL);
    CHECK_INT_EQ(nc_file_read(dir, 1 << 20, &buf, &len), -EISDIR);
    path_of(p, sizeof p, "missing");
    CHECK_INT_EQ(nc_file_read(p, 10, &buf, &len), -ENOENT);
}

/* A model stored gzip'd comes back inflated; a plain one as it is; a
 * truncated gzip stream is -EBADMSG. */
static void test_model(void)
{
    static uint8_t plain[50000];
    fill(plain, sizeof plain);
    char p[128];
    path_of(p, sizeof p, "m.ncm");
    gzFile g = gzopen(p, "wb9");
    REQUIRE(g != NULL);
    REQUIRE(gzwrite(g, plain, sizeof plain) == (int)sizeof plain);
    REQUIRE(gzclose(g) == Z_OK);
    uint8_t *buf = NULL;
    size_t len = 0;
    CHECK_INT_EQ(nc_file_read_model(p, sizeof plain, &buf, &len), 0);
    CHECK(len == sizeof plain && buf && !memcmp(buf, plain, len));
    free(buf);
    buf = NULL;
    CHECK_INT_EQ(nc_file_read_model(p, sizeof plain - 1, &buf, &len), -EOVERFLOW);

    uint8_t *gzb = NULL;
    size_t gzl = 0;
    REQUIRE(nc_file_read(p, 1 << 20, &gzb, &gzl) == 0);
    REQUIRE(gzl > 20 && gzb[0] == 0x1f && gzb[1] == 0x8b);
    REQUIRE(nc_file_write_atomic(p, gzb, gzl / 2) == 0);
    CHECK_INT_EQ(nc_file_read_model(p, 1 << 20, &buf, &len), -EBADMSG);
    free(gzb);

    REQUIRE(nc_file_write_atomic(p, plain, 1000) == 0);
    CHECK_INT_EQ(nc_file_read_model(p, 1 << 20, &buf, &len), 0);
    CHECK(len == 1000 && !memcmp(buf, plain, len));
    free(buf);
}

/* nc_file_write_atomic replaces a file whole and leaves no temporary. */
static void test_atomic(void)
{
    char p[128];
    path_of(p, sizeof p, "a.txt");
    REQUIRE(nc_file_write_atomic(p, (const uint8_t *)"first version", 13) == 0);
    REQUIRE(nc_file_write_atomic(p, (const uint8_t *)"second", 6) == 0);
    uint8_t *buf = NULL;
    size_t len = 0;
    CHECK_INT_EQ(nc_file_read(p, 100, &buf, &len), 0);
    CHECK(len == 6 && !memcmp(buf, "second", 6));
    free(buf);
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", p, (long)getpid());
    CHECK(access(tmp, F_OK) != 0);
    path_of(p, sizeof p, "no/such/dir/x");
    CHECK_INT_EQ(nc_file_write_atomic(p, (const uint8_t *)"x", 1), -ENOENT);
}

/* nc_file_read_mnist: the committed fixture is the test set of
 * NC_TEST_DATA, read as nc_file_read_idx reads it; that folder has no
 * training set, an empty one no set at all (path ""), and an image file
 * without its labels fails with that file named. */
static void test_mnist(void)
{
    const char *data = getenv("NC_TEST_DATA");
    if (!data)
        data = "tests/data";
    char path[4096], ip[4096], lp[4096];
    nc_dataset a = { 0 }, b = { 0 };
    REQUIRE(nc_file_read_mnist(data, 0, 64u << 20, &a, path, sizeof path) == 0);
    snprintf(ip, sizeof ip, "%s/mnist-t1k-images-idx3-ubyte.gz", data);
    snprintf(lp, sizeof lp, "%s/mnist-t1k-labels-idx1-ubyte.gz", data);
    CHECK(!strcmp(path, ip));
    REQUIRE(nc_file_read_idx(ip, lp, 64u << 20, &b) == 0);
    CHECK(a.count == b.count && a.count > 0 && a.rows == 28 && a.cols == 28 && a.labels);
    CHECK(a.count == b.count &&
          !memcmp(a.pixels, b.pixels, (size_t)a.count * a.rows * a.cols) &&
          !memcmp(a.labels, b.labels, a.count));
    nc_dataset_fini(&a);
    nc_dataset_fini(&b);
    strcpy(path, "x");
    CHECK_INT_EQ(nc_file_read_mnist(data, 1, 64u << 20, &a, path, sizeof path), -ENOENT);
    CHECK(path[0] == '\0');
    strcpy(path, "x");
    CHECK_INT_EQ(nc_file_read_mnist(dir, 0, 64u << 20, &a, path, sizeof path), -ENOENT);
    CHECK(path[0] == '\0');
    char img[128];
    path_of(img, sizeof img, "t10k-images-idx3-ubyte");
    REQUIRE(nc_file_write_atomic(img, (const uint8_t *)"not idx", 7) == 0);
    CHECK(nc_file_read_mnist(dir, 0, 64u << 20, &a, path, sizeof path) < 0);
    CHECK(!strcmp(path, img));
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/nc-test-fileio-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_caps();
    test_model();
    test_atomic();
    test_mnist();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return nc_test_finish();
}

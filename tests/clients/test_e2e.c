/* tests/clients/test_e2e.c — the `neocog` command and libneocog against the
 * real neocogd: started on a Unix socket in a temporary folder with the
 * shipped CNN, asked to read tests/data/sample-7.pgm in every output format,
 * its status, a pipelined burst through the library, a 2-second
 * `neocog bench` that must report no errors, and answers one can act on:
 * --min-conf looser and tighter, reject reasons and thresholds, a frame of
 * two lines built from the samples, per-digit candidates, each command's
 * help, and why a file was not sent.
 *
 * argv: NEOCOGD NEOCOG.  An empty NEOCOGD (the daemon is not in this build)
 * skips with 77. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "neocog_client.h"
#include "run_capture.h"
#include "test.h"

/* For messages: a failed run may leave no output at all. */
#define S(p) ((p) ? (p) : "")

static const char *neocog_bin;
static char server[320];
static char data_dir[4096], root_dir[4096];

static void sleep_ms(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
    nanosleep(&ts, NULL);
}

/* neocog --server S ARGS... (up to 16 args, NULL-terminated). */
static int neocog(char **ret_out, const char *in_path, ...)
{
    const char *argv[24] = { neocog_bin, "--server", server };
    int n = 3;
    va_list ap;
    va_start(ap, in_path);
    for (const char *a; n < 22 && (a = va_arg(ap, const char *));)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    return nc_run_capture(argv, in_path, ret_out);
}

static void test_recognize(void)
{
    char sample[4200], sample2[4200], readme[4200];
    snprintf(sample, sizeof sample, "%s/sample-7.pgm", data_dir);
    snprintf(sample2, sizeof sample2, "%s/sample-2.pgm", data_dir);
    snprintf(readme, sizeof readme, "%s/README.md", data_dir);
    char *out;
    int rc = neocog(&out, NULL, "recognize", "--model", "cnn", sample, NULL);
    CHECK_INT_EQ(rc, 0);
    char want[4300];
    snprintf(want, sizeof want, "%s: 7 (confidence ", sample);
    CHECK_MSG(out && strstr(out, want), "txt output: %s", S(out));
    printf("txt:\n%s", S(out));
    free(out);

    rc = neocog(&out, NULL, "recognize", "--format", "tsv", sample, sample2, NULL);
    CHECK_INT_EQ(rc, 0);
    static const char header[] = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\t"
                                 "left\ttop\twidth\theight\tconf\ttext\treject\tthreshold\n";
    CHECK_MSG(out && !strncmp(out, header, sizeof header - 1), "tsv header: %s", S(out));
    /* The word rows: level 5, page 1 says 7, page 2 says 2, whole 84x84 box,
     * not rejected (empty reject column), then the threshold in force. */
    CHECK_MSG(out && strstr(out, "\n5\t1\t1\t1\t1\t1\t0\t0\t84\t84\t") &&
              strstr(out, "\t7\t\t") && strstr(out, "\n5\t2\t1\t1\t1\t1\t0\t0\t84\t84\t") &&
              strstr(out, "\t2\t\t"), "tsv output: %s", S(out));
    printf("tsv:\n%s", S(out));
    free(out);

    /* JSON, the image from stdin, top 3. */
    rc = neocog(&out, sample, "recognize", "--format", "json", "--top", "3", "-", NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "\"file\":\"-\"") && strstr(out, "\"label\":7,\"text\":\"7\"") &&
              out[0] == '[', "json output: %s", S(out));
    CHECK_MSG(out && strstr(out, "\"top\":[{\"label\":7") && strstr(out, "\"score\""),
              "json top: %s", S(out));
    printf("json:\n%s", S(out));
    free(out);

    /* A file that is no image: reported, the others still answered, exit 1. */
    rc = neocog(&out, NULL, "recognize", readme, sample, NULL);
    CHECK_INT_EQ(rc, 1);
    CHECK_MSG(out && strstr(out, ": 7 (") && !strstr(out, "README"), "mixed output: %s", S(out));
    free(out);
    /* Missing file, unknown model on the server side (no neocognitron). */
    rc = neocog(&out, NULL, "recognize", "/nonexistent.pgm", NULL);
    CHECK_INT_EQ(rc, 1);
    free(out);
    rc = neocog(&out, NULL, "recognize", "--model", "neocognitron", sample, NULL);
    CHECK_INT_EQ(rc, 1);
    free(out);
    /* Usage errors are 2. */
    rc = neocog(&out, NULL, "recognize", NULL);
    CHECK_INT_EQ(rc, 2);
    free(out);
}

static void test_status(void)
{
    char *out;
    int rc = neocog(&out, NULL, "status", NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "ready") && strstr(out, "cnn-column.ncm"), "status: %s", S(out));
    printf("status:\n%s", S(out));
    char *text = out;
    rc = neocog(&out, NULL, "status", "--format", "json", NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "\"ready\":true"), "status json: %s", S(out));
    /* The text names the column's epochs as the JSON does (a trained column
     * has some; a committee's 0 is left out of the text). */
    static const char key[] = "\"epochs\":";
    const char *e = out ? strstr(out, key) : NULL;
    unsigned epochs = e ? (unsigned)strtoul(e + sizeof key - 1, NULL, 10) : 0;
    CHECK_MSG(epochs > 0, "status json: %s", S(out));
    char want[64];
    snprintf(want, sizeof want, ", %u epochs", epochs);
    CHECK_MSG(text && strstr(text, want), "status lacks \"%s\": %s", want, S(text));
    free(text);
    free(out);
}

static void test_library(void)
{
    nc_client_options o = { .max_in_flight = 16, .timeout_ms = 30000 };
    nc_client *cl;
    REQUIRE(nc_client_connect(server, &o, &cl) == 0);
    nc_msg *m;
    CHECK_INT_EQ(nc_client_health(cl, &m), 0);
    if (m) {
        CHECK(nc_msg_reply(m)->kind_case == NEOCOG__REPLY__KIND_HEALTH &&
              nc_msg_reply(m)->health->ready);
        nc_msg_free(m);
    }
    CHECK_INT_EQ(nc_client_model_info(cl, &m), 0);
    if (m) {
        CHECK(nc_msg_reply(m)->kind_case == NEOCOG__REPLY__KIND_MODEL_INFO);
        nc_msg_free(m);
    }
    /* 100 pipelined requests through a window of 16, alternating two
     * digits: every reply comes once, matched to its own image. */
    char path[4200];
    uint8_t *img[2] = { NULL, NULL };
    size_t len[2] = { 0, 0 };
    const char *names[2] = { "sample-7.pgm", "sample-2.pgm" };
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", data_dir, names[k]);
        FILE *f = fopen(path, "rb");
        REQUIRE(f);
        img[k] = malloc(1 << 16);
        len[k] = fread(img[k], 1, 1 << 16, f);
        fclose(f);
    }
    int want[128] = { 0 }, got = 0, wrong = 0;  /* by id; ids start after health's */
    int sent = 0;
    while (got < 100) {
        if (sent < 100 && nc_client_in_flight(cl) < 16) {
            nc_client_image im = { .data = img[sent % 2], .len = len[sent % 2] };
            uint64_t id;
            if (nc_client_send_recognize(cl, NULL, &im, 1, &id) < 0 || id >= 128) {
                CHECK_MSG(0, "send: %s", nc_client_errmsg(cl));
                break;
            }
            want[id] = sent % 2 ? 2 : 7;
            sent++;
            continue;
        }
        if (nc_client_receive(cl, 30000, &m) < 0) {
            CHECK_MSG(0, "receive: %s", nc_client_errmsg(cl));
            break;
        }
        const Neocog__Reply *rp = nc_msg_reply(m);
        if (rp->code != NEOCOG__CODE__OK || rp->recognize->n_results != 1 ||
            rp->recognize->results[0]->label != want[rp->id])
            wrong++;
        want[rp->id] = -1;
        got++;
        nc_msg_free(m);
    }
    CHECK_INT_EQ(got, 100);
    CHECK_INT_EQ(wrong, 0);
    free(img[0]);
    free(img[1]);
    nc_client_free(cl);
}

static void test_bench(void)
{
    char idx[4200];
    snprintf(idx, sizeof idx, "%s/mnist-t1k-images-idx3-ubyte.gz", data_dir);
    char *out;
    int rc = neocog(&out, NULL, "bench", "--duration", "2", "--concurrency", "4", "--idx", idx,
                    NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "\nerrors                 0\n") && strstr(out, "p99.9") &&
              strstr(out, "req/s"), "bench: %s", S(out));
    /* It did send something, and the shipped CNN reads MNIST well. */
    CHECK_MSG(out && !strstr(out, "\nrequests               0\n"), "bench: %s", S(out));
    printf("bench:\n%s", S(out));
    free(out);
    rc = neocog(&out, NULL, "bench", "--rate", "200", "--requests", "100", "--batch-images",
                "4", "--format", "json", "--idx", idx, NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "\"requests\":100,\"images\":400,\"errors\":0"),
              "bench json: %s", S(out));
    free(out);
}

/* ---- answers one can act on, lines, help -------------------------------------- */

/* A PGM of its own (84 x 84, P5 255) read into px. */
static int read_sample(const char *name, uint8_t *px)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", data_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char head[16];
    int ok = fread(head, 1, 13, f) == 13 && !memcmp(head, "P5\n84 84\n255\n", 13) &&
             fread(px, 1, 84 * 84, f) == 84 * 84;
    fclose(f);
    return ok ? 0 : -1;
}

/* Two lines of two digits each (7 2 over 2 7), dark on light, as a PGM in
 * the test's folder. */
enum { FRAME_W = 232, FRAME_H = 256 };
static int write_two_lines(const char *path)
{
    static uint8_t seven[84 * 84], two[84 * 84], frame[FRAME_W * FRAME_H];
    if (read_sample("sample-7.pgm", seven) || read_sample("sample-2.pgm", two))
        return -1;
    memset(frame, 255, sizeof frame);
    const uint8_t *at[4] = { seven, two, two, seven };
    for (int k = 0; k < 4; k++) {
        const int x0 = 24 + (k % 2) * 100, y0 = 24 + (k / 2) * 124;
        for (int y = 0; y < 84; y++)
            memcpy(frame + (size_t)(y0 + y) * FRAME_W + x0, at[k] + y * 84, 84);
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fprintf(f, "P5\n%d %d\n255\n", FRAME_W, FRAME_H);
    int ok = fwrite(frame, 1, sizeof frame, f) == sizeof frame;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static void test_answers(const char *tmp)
{
    char sample[4200], frame[4200];
    snprintf(sample, sizeof sample, "%s/sample-7.pgm", data_dir);
    snprintf(frame, sizeof frame, "%s/two-lines.pgm", tmp);
    char *out;
    /* A tighter threshold than the model's: rejected, with why. */
    int rc = neocog(&out, NULL, "recognize", "--min-conf", "1", sample, NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, ": ? (rejected: confidence ") &&
              strstr(out, " below threshold 1.000)"), "min-conf 1: %s", S(out));
    free(out);
    rc = neocog(&out, NULL, "recognize", "--format", "json", "--min-conf", "1", sample, NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "\"label\":-1") &&
              strstr(out, "\"reject\":true,\"reject_reason\":\"below threshold\","
                          "\"threshold\":1") &&
              strstr(out, "\"top\":[{\"label\":7"), "min-conf 1 json: %s", S(out));
    free(out);
    /* None at all: accepted, threshold 0; the TSV says the same. */
    rc = neocog(&out, NULL, "recognize", "--format", "json", "--min-conf", "0", sample, NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "\"label\":7") &&
              strstr(out, "\"reject\":false,\"reject_reason\":null,\"threshold\":0"),
              "min-conf 0 json: %s", S(out));
    free(out);
    rc = neocog(&out, NULL, "recognize", "--format", "tsv", "--min-conf", "1", sample, NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "\t?\tbelow threshold\t100.000000\n"), "min-conf 1 tsv: %s",
              S(out));
    free(out);
    /* The model's own threshold, shown by status. */
    rc = neocog(&out, NULL, "status", NULL);
    CHECK_MSG(out && strstr(out, "reject threshold 0."), "status threshold: %s", S(out));
    free(out);

    /* A file that cannot be read says why in the JSON. */
    rc = neocog(&out, NULL, "recognize", "--format", "json", "/nonexistent.pgm", sample, NULL);
    CHECK_INT_EQ(rc, 1);
    CHECK_MSG(out && strstr(out, "\"message\":\"cannot read /nonexistent.pgm: No such file or "
                                 "directory\"") && strstr(out, "\"label\":7"),
              "missing file json: %s", S(out));
    free(out);

    /* Two lines: separate lines in text, TSV lines and words, JSON lines[]. */
    REQUIRE(write_two_lines(frame) == 0);
    rc = neocog(&out, NULL, "recognize", "--segment", "--top", "3", frame, NULL);
    CHECK_INT_EQ(rc, 0);
    char want[2 * 4200 + 32];
    snprintf(want, sizeof want, "%s: 72\n%s: 27 (confidence ", frame, frame);
    CHECK_MSG(out && strstr(out, want) && strstr(out, "\n  digit 1 (line 1, ") &&
              strstr(out, "\n  digit 4 (line 2, ") && strstr(out, "  top: 7 "),
              "two lines txt: %s", S(out));
    printf("two lines:\n%s", S(out));
    free(out);
    rc = neocog(&out, NULL, "recognize", "--segment", "--format", "tsv", frame, NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "\n4\t1\t1\t1\t1\t0\t") && strstr(out, "\n4\t1\t1\t1\t2\t0\t") &&
              strstr(out, "\n5\t1\t1\t1\t1\t1\t") && strstr(out, "\t72\t\t") &&
              strstr(out, "\n5\t1\t1\t1\t2\t1\t") && strstr(out, "\t27\t\t"),
              "two lines tsv: %s", S(out));
    printf("two lines tsv:\n%s", S(out));
    free(out);
    rc = neocog(&out, NULL, "recognize", "--segment", "--format", "json", "--top", "2", frame,
                NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "\"text\":\"72\\n27\"") &&
              strstr(out, "\"lines\":[{\"line\":0,") && strstr(out, "{\"line\":1,") &&
              strstr(out, "\"text\":\"27\",") && strstr(out, ",\"line\":1,\"top\":[{\"label\":"),
              "two lines json: %s", S(out));
    free(out);
    /* A segmented digit rejected: its reason, with the candidates */
    rc = neocog(&out, NULL, "recognize", "--segment", "--min-conf", "1", "--top", "2", frame,
                NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, ": ??\n") && strstr(out, "  digit 2 (line 1, ") &&
              strstr(out, "below threshold 1.000)  top: 2 "), "rejected digits: %s", S(out));
    free(out);
    unlink(frame);

    /* Each command's own help; `neocog help camera` is the camera's. */
    rc = neocog(&out, NULL, "recognize", "--help", NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "recognize [OPTIONS]") && strstr(out, "--min-conf") &&
              !strstr(out, "--concurrency"), "recognize --help: %s", S(out));
    free(out);
    rc = neocog(&out, NULL, "bench", "--help", NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "--concurrency") && !strstr(out, "recognize [OPTIONS]"),
              "bench --help: %s", S(out));
    free(out);
    rc = neocog(&out, NULL, "status", "--help", NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "status [--format") && !strstr(out, "--concurrency"),
              "status --help: %s", S(out));
    free(out);
    rc = neocog(&out, NULL, "help", "camera", NULL);
    CHECK_INT_EQ(rc, 0);
    CHECK_MSG(out && strstr(out, "--min-conf") && strstr(out, "--digits"),
              "help camera: %s", S(out));
    free(out);
}

int main(int argc, char **argv)
{
    if (argc < 3 || !argv[1][0]) {
        fprintf(stderr, "neocogd is not part of this build: skipped\n");
        return NC_TEST_SKIP;
    }
    const char *daemon = argv[1];
    neocog_bin = argv[2];
    const char *td = getenv("NC_TEST_DATA"), *sr = getenv("NC_SOURCE_ROOT");
    snprintf(data_dir, sizeof data_dir, "%s", td ? td : "tests/data");
    snprintf(root_dir, sizeof root_dir, "%s", sr ? sr : ".");
    char model[4200];
    snprintf(model, sizeof model, "%s/models/cnn-column.ncm", root_dir);
    if (access(model, R_OK) != 0) {
        fprintf(stderr, "%s: missing: skipped\n", model);
        return NC_TEST_SKIP;
    }
    char dir[] = "/tmp/nc-clients-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char sock[300];
    snprintf(sock, sizeof sock, "%s/neocogd.sock", dir);
    snprintf(server, sizeof server, "unix:%s", sock);

    pid_t pid = fork();
    if (pid == 0) {
        /* Two workers: what CI has; no TCP or HTTP port to collide on;
         * the model folder is our empty one, so only the CNN loads
         * whatever models/ holds one day. */
        execl(daemon, daemon, "--listen-unix", sock, "--listen-tcp", "none", "--http", "none",
              "--cnn-model", model, "--models", dir, "--workers", "2", "--log-level", "4",
              (char *)NULL);
        _exit(127);
    }
    /* Ready when it answers health with ready (60 s: sanitizer builds load
     * and warm slowly). */
    int ready = 0;
    for (int waited = 0; waited < 60000 && !ready; waited += 50) {
        nc_client *cl;
        if (nc_client_connect(server, NULL, &cl) == 0) {
            nc_msg *m;
            if (nc_client_health(cl, &m) == 0) {
                ready = nc_msg_reply(m)->health && nc_msg_reply(m)->health->ready;
                nc_msg_free(m);
            }
            nc_client_free(cl);
        }
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            fprintf(stderr, "neocogd exited early (status %d)\n", st);
            pid = 0;
            break;
        }
        if (!ready)
            sleep_ms(50);
    }
    CHECK_MSG(ready, "neocogd did not become ready");
    if (ready) {
        test_recognize();
        test_status();
        test_library();
        test_bench();
        test_answers(dir);
    }
    if (pid > 0) {
        kill(pid, SIGTERM);
        int st = 0;
        waitpid(pid, &st, 0);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "neocogd exit status %d", st);
    }
    unlink(sock);
    rmdir(dir);
    return nc_test_finish();
}

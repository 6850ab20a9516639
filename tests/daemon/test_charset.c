/* tests/daemon/test_charset.c — a request's charset through the real neocogd
 * (argv[1]): digits (the default) answered by the digit CNN as before, all
 * by the chars model (the folder's cnn-printable94.ncm) with its labels,
 * alnum by the same model with every class but letters and digits masked
 * out, an unknown charset refused, and a daemon without a chars model
 * refusing all as UNAVAILABLE.  Over the protocol and over HTTP (query and
 * JSON body), and the chars model in status and /metrics.
 *
 * The characters are tests/data/chars (see its README): a validation
 * writer's E and %, which the shipped model reads right with confidence
 * above 0.95 (neocog-classify). */
#include <ctype.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"
#include "harness.h"
#include "test.h"

typedef struct blob {
    uint8_t *data;
    size_t len;
} blob;

static blob read_whole(const char *path)
{
    blob b = { malloc(1 << 20), 0 };
    FILE *f = fopen(path, "rb");
    if (f && b.data)
        b.len = fread(b.data, 1, 1 << 20, f);
    if (f)
        fclose(f);
    return b;
}

static blob test_data(const char *name)
{
    char path[1024];
    const char *data = getenv("NC_TEST_DATA");
    snprintf(path, sizeof path, "%s/%s", data ? data : "tests/data", name);
    return read_whole(path);
}

/* A copy of the shipped model `name` in folder dir. */
static int copy_model(const char *name, const char *dir)
{
    char from[1024], to[1024];
    nc_test_model_path(name, from, sizeof from);
    snprintf(to, sizeof to, "%s/%s", dir, name);
    return nc_truncated_copy(from, to, SIZE_MAX);
}

/* One image through the protocol with charset and model; the reply. */
static nc_msg *recognize(int port, const blob *img, const char *charset, Neocog__Model model,
                         float min_confidence)
{
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    Neocog__RecognizeRequest rr = NEOCOG__RECOGNIZE_REQUEST__INIT;
    Neocog__Image im = NEOCOG__IMAGE__INIT, *ims[1] = { &im };
    im.data.data = img->data;
    im.data.len = img->len;
    rr.images = ims;
    rr.n_images = 1;
    rr.model = model;
    rr.top_k = 5;
    rr.min_confidence = min_confidence;
    rr.charset = (char *)charset;
    rq.id = 9;
    rq.kind_case = NEOCOG__REQUEST__KIND_RECOGNIZE;
    rq.recognize = &rr;
    int fd = nc_connect_tcp(port);
    nc_msg *m = fd >= 0 ? nc_roundtrip(fd, &rq) : NULL;
    if (fd >= 0)
        close(fd);
    return m;
}

static const Neocog__Result *result_of(const nc_msg *m, const char **model)
{
    const Neocog__Reply *r = m ? nc_msg_reply(m) : NULL;
    if (!r || r->code != NEOCOG__CODE__OK || !r->recognize || r->recognize->n_results != 1)
        return NULL;
    *model = r->recognize->model;
    return r->recognize->results[0];
}

static int is_alnum_text(const char *t)
{
    return t && t[0] && !t[1] && isascii((unsigned char)t[0]) && isalnum((unsigned char)t[0]);
}

/* One HTTP exchange on a new connection; the whole response (malloc'd). */
static char *http(int port, const char *path, const char *ctype, const void *body, size_t len)
{
    int fd = nc_connect_tcp(port);
    if (fd < 0)
        return NULL;
    char head[512];
    int n = snprintf(head, sizeof head, "POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                     "%s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", path, ctype, len);
    size_t cap = 1 << 16, got = 0;
    char *buf = malloc(cap);
    if (buf && !nc_send_all(fd, head, (size_t)n) && !nc_send_all(fd, body, len)) {
        struct pollfd p = { fd, POLLIN, 0 };
        ssize_t k;
        while (got + 1 < cap && poll(&p, 1, 30000) == 1 &&
               (k = recv(fd, buf + got, cap - got - 1, 0)) > 0)
            got += (size_t)k;
    }
    close(fd);
    if (buf)
        buf[got] = '\0';
    return buf;
}

static void test_protocol(int port, const blob *e, const blob *pct, const blob *seven)
{
    const char *model = "";
    /* all: the chars model, its labels */
    nc_msg *m = recognize(port, e, "all", NEOCOG__MODEL__MODEL_DEFAULT, 0.0f);
    const Neocog__Result *res = result_of(m, &model);
    CHECK_MSG(res && !strcmp(model, "chars"), "charset all answered by '%s'", model);
    CHECK_MSG(res && !strcmp(res->text, "E") && res->confidence > 0.5f,
              "charset all read the E as '%s' (%.3f)", res ? res->text : "-",
              res ? (double)res->confidence : 0.0);
    CHECK(res && res->n_scores == 94);
    nc_msg_free(m);
    m = recognize(port, pct, "all", NEOCOG__MODEL__MODEL_DEFAULT, 0.0f);
    res = result_of(m, &model);
    CHECK_MSG(res && !strcmp(res->text, "%"), "charset all read the %% as '%s'",
              res ? res->text : "-");
    nc_msg_free(m);
    /* alnum: never punctuation, not even for a %; the candidates neither,
     * and the allowed classes' probabilities sum to 1 */
    m = recognize(port, pct, "alnum", NEOCOG__MODEL__MODEL_DEFAULT, -1.0f);
    res = result_of(m, &model);
    CHECK_MSG(res && !strcmp(model, "chars") && is_alnum_text(res->text),
              "charset alnum answered '%s' for a %%", res ? res->text : "-");
    float sum = 0.0f;
    for (size_t k = 0; res && k < res->n_top; k++) {
        CHECK_MSG(is_alnum_text(res->top[k]->text), "alnum candidate '%s'", res->top[k]->text);
        sum += res->top[k]->score;
    }
    CHECK(res && res->n_top == 5 && sum > 0.0f && sum <= 1.0001f);
    nc_msg_free(m);
    m = recognize(port, e, "alnum", NEOCOG__MODEL__MODEL_DEFAULT, 0.0f);
    res = result_of(m, &model);
    CHECK_MSG(res && !strcmp(res->text, "E"), "charset alnum read the E as '%s'",
              res ? res->text : "-");
    nc_msg_free(m);
    /* the chars model by name */
    m = recognize(port, e, "", NEOCOG__MODEL__MODEL_CHARS, 0.0f);
    res = result_of(m, &model);
    CHECK(res && !strcmp(model, "chars") && !strcmp(res->text, "E"));
    nc_msg_free(m);
    /* digits, named or not: the digit CNN as before */
    const char *digits[] = { "", "digits" };
    for (int i = 0; i < 2; i++) {
        m = recognize(port, seven, digits[i], NEOCOG__MODEL__MODEL_DEFAULT, 0.0f);
        res = result_of(m, &model);
        CHECK_MSG(res && !strcmp(model, "cnn") && !strcmp(res->text, "7") &&
                  res->n_scores == 10, "charset '%s': '%s' by '%s'", digits[i],
                  res ? res->text : "-", model);
        nc_msg_free(m);
    }
    /* refused: an unknown charset, and a charset another model cannot read */
    m = recognize(port, e, "klingon", NEOCOG__MODEL__MODEL_DEFAULT, 0.0f);
    CHECK(m && nc_msg_reply(m)->code == NEOCOG__CODE__INVALID_ARGUMENT &&
          strstr(nc_msg_reply(m)->message, "charset"));
    nc_msg_free(m);
    m = recognize(port, e, "all", NEOCOG__MODEL__MODEL_CNN, 0.0f);
    CHECK(m && nc_msg_reply(m)->code == NEOCOG__CODE__INVALID_ARGUMENT);
    nc_msg_free(m);
}

/* A segmented line of two characters with charset all: core/segment's
 * character mode cuts it, the chars model reads each piece. */
static void test_segmented(int port, const blob *e, const blob *pct)
{
    enum { W = 28, H = 28, GAP = 6 };
    uint8_t px[H * (2 * W + GAP)];
    memset(px, 0, sizeof px);
    const size_t hdr = 13;      /* "P5\n28 28\n255\n" */
    REQUIRE(e->len == hdr + W * H && pct->len == hdr + W * H);
    for (int y = 0; y < H; y++) {
        memcpy(px + y * (2 * W + GAP), e->data + hdr + y * W, W);
        memcpy(px + y * (2 * W + GAP) + W + GAP, pct->data + hdr + y * W, W);
    }
    uint8_t *pgm = NULL;
    size_t len = 0;
    REQUIRE(nc_encode_pgm(px, 2 * W + GAP, H, &pgm, &len) == 0);
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    Neocog__RecognizeRequest rr = NEOCOG__RECOGNIZE_REQUEST__INIT;
    Neocog__Image im = NEOCOG__IMAGE__INIT, *ims[1] = { &im };
    im.data.data = pgm;
    im.data.len = len;
    im.segment = 1;
    rr.images = ims;
    rr.n_images = 1;
    rr.min_confidence = -1.0f;
    rr.charset = (char *)"all";
    rq.id = 10;
    rq.kind_case = NEOCOG__REQUEST__KIND_RECOGNIZE;
    rq.recognize = &rr;
    int fd = nc_connect_tcp(port);
    nc_msg *m = fd >= 0 ? nc_roundtrip(fd, &rq) : NULL;
    if (fd >= 0)
        close(fd);
    const char *model = "";
    const Neocog__Result *res = result_of(m, &model);
    /* two characters, and a space between them where the gap reads as a
     * word gap (core/segment's rule, not this test's business) */
    size_t chars = 0;
    for (const char *c = res ? res->text : ""; *c; c++)
        chars += *c != ' ';
    CHECK_MSG(res && !strcmp(model, "chars") && res->n_digits == 2 && chars == 2 &&
              strlen(res->text) == 2u + res->digits[1]->space_before,
              "a segmented E%% read as '%s' in %zu pieces", res ? res->text : "-",
              res ? res->n_digits : 0);
    for (size_t d = 0; res && d < res->n_digits; d++)
        CHECK(strlen(res->digits[d]->text) == 1 && res->digits[d]->text[0] > ' ' &&
              res->digits[d]->text[0] <= '~');
    nc_msg_free(m);
    free(pgm);
}

static void test_status(int port)
{
    Neocog__StatusReply *st = NULL;
    nc_msg *m = NULL;
    REQUIRE(nc_status_tcp(port, &st, &m) == 0 && st);
    const Neocog__ModelInfo *chars = NULL;
    for (size_t i = 0; i < st->n_models; i++)
        if (st->models[i]->model == NEOCOG__MODEL__MODEL_CHARS)
            chars = st->models[i];
    CHECK(chars && chars->loaded && chars->n_labels == 94 && strstr(chars->path, "printable94"));
    CHECK(st->n_models == 3 && strstr(st->models[0]->path, "cnn-column.ncm"));
    nc_msg_free(m);
}

static void test_http(int port, const blob *e, const blob *pct)
{
    char *r = http(port, "/v1/recognize?charset=all", "image/x-portable-graymap", e->data,
                   e->len);
    CHECK_MSG(r && strstr(r, "200 OK") && strstr(r, "\"chars\"") && strstr(r, "\"text\":\"E\""),
              "%s", r ? r : "no answer");
    free(r);
    /* the JSON body's charset: a % as letters and digits (base64 of the PGM) */
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *json = malloc(4 * (pct->len / 3 + 1) + 128);
    REQUIRE(json);
    size_t n = (size_t)sprintf(json, "{\"charset\":\"alnum\",\"images\":[{\"data\":\"");
    for (size_t i = 0; i < pct->len; i += 3) {
        const uint8_t *p = pct->data;
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < pct->len ? (uint32_t)p[i + 1] << 8 : 0) |
                     (i + 2 < pct->len ? p[i + 2] : 0);
        json[n++] = t[v >> 18];
        json[n++] = t[v >> 12 & 63];
        json[n++] = i + 1 < pct->len ? t[v >> 6 & 63] : '=';
        json[n++] = i + 2 < pct->len ? t[v & 63] : '=';
    }
    n += (size_t)sprintf(json + n, "\"}]}");
    r = http(port, "/v1/recognize?min_confidence=-1", "application/json", json, n);
    const char *text = r ? strstr(r, "\"text\":\"") : NULL;
    CHECK_MSG(r && strstr(r, "200 OK") && strstr(r, "\"chars\"") && text &&
              isalnum((unsigned char)text[8]) && text[9] == '"', "%s", r ? r : "no answer");
    free(r);
    free(json);
    r = http(port, "/v1/recognize?charset=greek", "image/x-portable-graymap", e->data, e->len);
    CHECK_MSG(r && strstr(r, " 400 ") && strstr(r, "charset"), "%s", r ? r : "no answer");
    free(r);
    int fd = nc_connect_tcp(port);
    static const char get[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    char buf[65536];
    size_t got = 0;
    ssize_t k;
    if (fd >= 0 && !nc_send_all(fd, get, sizeof get - 1))
        while (got + 1 < sizeof buf && (k = recv(fd, buf + got, sizeof buf - got - 1, 0)) > 0)
            got += (size_t)k;
    buf[got] = '\0';
    if (fd >= 0)
        close(fd);
    CHECK(strstr(buf, "neocogd_model_loaded{model=\"chars\"} 1"));
}

/* No chars model: all is refused as UNAVAILABLE, saying why; digits work. */
static void test_without_chars(const char *bin, const blob *e, const blob *seven)
{
    char dir[] = "/tmp/nc-charset-none-XXXXXX", cnn[1024];
    REQUIRE(mkdtemp(dir));
    nc_test_model_path("cnn-column.ncm", cnn, sizeof cnn);
    const char *args[] = { "--models", dir, "--cnn-model", cnn, "--gpus", "0",
                           "--listen-unix", "none", "--log-level", "4", NULL };
    nc_daemon d;
    REQUIRE(nc_daemon_start(&d, bin, dir, 1, args) == 0);
    nc_msg *m = recognize(d.port, e, "all", NEOCOG__MODEL__MODEL_DEFAULT, 0.0f);
    CHECK_MSG(m && nc_msg_reply(m)->code == NEOCOG__CODE__UNAVAILABLE &&
              strstr(nc_msg_reply(m)->message, "no character model"), "%s",
              m ? nc_msg_reply(m)->message : "no reply");
    nc_msg_free(m);
    const char *model = "";
    m = recognize(d.port, seven, "digits", NEOCOG__MODEL__MODEL_DEFAULT, 0.0f);
    const Neocog__Result *res = result_of(m, &model);
    CHECK(res && !strcmp(res->text, "7"));
    nc_msg_free(m);
    Neocog__StatusReply *st = NULL;
    REQUIRE(nc_status_tcp(d.port, &st, &m) == 0 && st);
    CHECK_INT_EQ(st->n_models, 2);      /* no chars entry without a chars file */
    nc_msg_free(m);
    CHECK_INT_EQ(nc_daemon_stop(&d, 30000), 0);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_charset NEOCOGD\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    blob e = test_data("chars/upper-E.pgm"), pct = test_data("chars/percent.pgm"),
         seven = test_data("sample-7.pgm");
    if (!e.len || !pct.len || !seven.len) {
        fprintf(stderr, "tests/data/chars/*.pgm or sample-7.pgm missing\n");
        return 1;
    }
    /* a folder of the digit column and the 94-class CNN: the daemon picks
     * each for its slot by the classes its record carries */
    char dir[] = "/tmp/nc-charset-XXXXXX";
    const char *args[] = { "--models", dir, "--gpus", "0", "--listen-unix", "none",
                           "--log-level", "4", NULL };
    nc_daemon d;
    if (!mkdtemp(dir) || copy_model("cnn-column.ncm", dir) ||
        copy_model("cnn-printable94.ncm", dir) || nc_daemon_start(&d, argv[1], dir, 1, args)) {
        fprintf(stderr, "neocogd with the two models did not start\n");
        return 1;
    }
    test_protocol(d.port, &e, &pct, &seven);
    test_segmented(d.port, &e, &pct);
    test_status(d.port);
    test_http(d.http_port, &e, &pct);
    CHECK_INT_EQ(nc_daemon_stop(&d, 30000), 0);
    char path[1100];
    snprintf(path, sizeof path, "%s/cnn-column.ncm", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/cnn-printable94.ncm", dir);
    unlink(path);
    rmdir(dir);
    test_without_chars(argv[1], &e, &seven);
    free(e.data);
    free(pct.data);
    free(seven.data);
    return nc_test_finish();
}

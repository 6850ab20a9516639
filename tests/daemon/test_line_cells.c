/* tests/daemon/test_line_cells.c — a chars model whose record asks for the
 * line prep (NC_PREP_LINE, core/image/image.h) reads each character of a
 * segmented line in its line's cell, through the real neocogd (argv[1]).
 *
 * The model is made here and answers by where the ink lies in its input,
 * not by shape: class "B" grows with the ink in the field's top ten rows,
 * class "s" with its absence (the other nine classes never win).  The
 * frame is one line: a capital-sized H and a small o on its baseline.
 * In the line's cell the H reaches into the top rows and the o does not,
 * so the line reads "Bs"; the o in its own box, as a digit model's patch,
 * fills the field from top to bottom and would read "B".  A request of one
 * image is its own cell: the o sent in a crop as tall as its line reads
 * "s", in a crop of its own size "B". */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cnn_file.h"
#include "fixture.h"
#include "harness.h"
#include "test.h"

#define SIDE 29
#define TOP_ROWS 10

/* The 11-class model described above, with NC_PREP_LINE_29, at path. */
static int write_line_model(const char *path)
{
    nc_cnn *net = NULL;
    int err = nc_cnn_new("1x29x29-11N", &net);
    if (err)
        return err;
    nc_cnn_layer *l = &net->layers[1];
    memset(l->weights, 0, l->n_weights * sizeof *l->weights);
    for (uint32_t k = 0; k < 11; k++)
        l->bias[k] = -1.0f;
    for (uint32_t i = 0; i < TOP_ROWS * SIDE; i++) {
        l->weights[0 * l->n_in + i] = 0.5f;      /* "B": ink up there */
        l->weights[1 * l->n_in + i] = -0.5f;     /* "s": none */
    }
    l->bias[0] = 0.0f;
    l->bias[1] = 0.3f;
    nc_model_info info;
    nc_test_cnn_info(&info);
    info.n_classes = 11;
    static const char *const labels[11] = { "B", "s", "c", "d", "e", "f", "g", "h", "i", "j",
                                            "k" };
    for (uint32_t k = 0; k < 11; k++)
        snprintf(info.labels[k], sizeof info.labels[k], "%s", labels[k]);
    info.prep = NC_PREP_LINE_29;
    snprintf(info.data, sizeof info.data, "ink position classes (daemon test)");
    err = nc_test_write_cnn(path, net, &info);
    nc_cnn_free(net);
    return err;
}

enum { W = 160, H = 100 };

static void ink(uint8_t *px, int x0, int y0, int w, int h)
{
    for (int y = y0; y < y0 + h; y++)
        memset(px + (size_t)y * W + x0, 20, (size_t)w);
}

/* One line, dark ink on paper: an H of rows 30..59 and an o of rows
 * 44..59 (a ring 3 px thick), both on the baseline below row 59. */
static void draw_line(uint8_t *px)
{
    memset(px, 235, (size_t)W * H);
    ink(px, 20, 30, 4, 30);
    ink(px, 36, 30, 4, 30);
    ink(px, 20, 43, 20, 4);
    for (int y = 44; y < 60; y++)
        for (int x = 66; x < 84; x++) {
            double dx = x - 74.5, dy = y - 51.5, r2 = dx * dx / (8.5 * 8.5) + dy * dy / (7.5 * 7.5);
            if (r2 <= 1.0 && r2 >= 0.45)
                px[(size_t)y * W + x] = 20;
        }
}

static nc_msg *recognize(int port, const uint8_t *pgm, size_t len, int segment)
{
    Neocog__Request rq = NEOCOG__REQUEST__INIT;
    Neocog__RecognizeRequest rr = NEOCOG__RECOGNIZE_REQUEST__INIT;
    Neocog__Image im = NEOCOG__IMAGE__INIT, *ims[1] = { &im };
    im.data.data = (uint8_t *)pgm;
    im.data.len = len;
    im.segment = (protobuf_c_boolean)segment;
    rr.images = ims;
    rr.n_images = 1;
    rr.min_confidence = -1.0f;
    rr.charset = (char *)"all";
    rq.id = 46;
    rq.kind_case = NEOCOG__REQUEST__KIND_RECOGNIZE;
    rq.recognize = &rr;
    int fd = nc_connect_tcp(port);
    nc_msg *m = fd >= 0 ? nc_roundtrip(fd, &rq) : NULL;
    if (fd >= 0)
        close(fd);
    return m;
}

static const Neocog__Result *result_of(const nc_msg *m)
{
    const Neocog__Reply *r = m ? nc_msg_reply(m) : NULL;
    if (!r || r->code != NEOCOG__CODE__OK || !r->recognize || r->recognize->n_results != 1 ||
        strcmp(r->recognize->model, "chars"))
        return NULL;
    return r->recognize->results[0];
}

static void test_segmented_line(int port)
{
    uint8_t *px = malloc((size_t)W * H), *pgm = NULL;
    size_t len = 0;
    REQUIRE(px);
    draw_line(px);
    if (nc_encode_pgm(px, W, H, &pgm, &len)) {
        free(px);
        REQUIRE(0);
    }
    nc_msg *m = recognize(port, pgm, len, 1);
    const Neocog__Result *res = result_of(m);
    CHECK_MSG(res && res->n_digits == 2 && res->digits[0]->text[0] == 'B' &&
                  res->digits[1]->text[0] == 's',
              "the line read as '%s' in %zu pieces (want B, s)", res ? res->text : "-",
              res ? res->n_digits : 0);
    nc_msg_free(m);
    free(pgm);

    /* The o sent alone in a cell as tall as its line (rows 18..73: 21/15
     * of the H's height above the baseline, 7/15 below) is a photo whose
     * cleaning keeps the frame (nc_image_clean_cell): "s" again. */
    enum { CW = 30, CH = 56 };
    uint8_t c[CW * CH];
    for (int y = 0; y < CH; y++)
        memcpy(c + y * CW, px + (size_t)(18 + y) * W + 60, CW);
    REQUIRE(nc_encode_pgm(c, CW, CH, &pgm, &len) == 0);
    m = recognize(port, pgm, len, 0);
    res = result_of(m);
    CHECK_MSG(res && !strcmp(res->text, "s"), "the o in its line's cell read as '%s'",
              res ? res->text : "-");
    nc_msg_free(m);
    free(pgm);

    /* The o cut to its own box and sent alone is a cell of its own height:
     * its ink reaches the top rows ("B").  What the segmented read above
     * would have given without the line's cell. */
    uint8_t o[24 * 24];
    for (int y = 0; y < 24; y++)
        memcpy(o + y * 24, px + (size_t)(40 + y) * W + 63, 24);
    REQUIRE(nc_encode_pgm(o, 24, 24, &pgm, &len) == 0);
    m = recognize(port, pgm, len, 0);
    res = result_of(m);
    CHECK_MSG(res && !strcmp(res->text, "B"), "the o alone read as '%s'", res ? res->text : "-");
    nc_msg_free(m);
    free(pgm);
    free(px);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_line_cells NEOCOGD\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    char dir[] = "/tmp/nc-line-cells-XXXXXX", model[1100], cnn[1024];
    if (!mkdtemp(dir)) {
        fprintf(stderr, "no temporary folder\n");
        return 1;
    }
    snprintf(model, sizeof model, "%s/line-chars.ncm", dir);
    nc_test_model_path("cnn-column.ncm", cnn, sizeof cnn);
    const char *args[] = { "--models", dir, "--cnn-model", cnn, "--gpus", "0",
                           "--listen-unix", "none", "--log-level", "4", NULL };
    nc_daemon d;
    if (write_line_model(model) || nc_daemon_start(&d, argv[1], dir, 1, args)) {
        fprintf(stderr, "neocogd with the line model did not start\n");
        unlink(model);
        rmdir(dir);
        return 1;
    }
    test_segmented_line(d.port);
    CHECK_INT_EQ(nc_daemon_stop(&d, 30000), 0);
    unlink(model);
    rmdir(dir);
    return nc_test_finish();
}

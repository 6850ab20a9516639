/* tests/tools/test_train_cascade.c — `neocog-train cascade` run as a user
 * runs it, on a committee of two copies of one small random network: its
 * first member alone answers every digit exactly as the committee does, so
 * the fit must let member 0 answer all of them (one pass a digit), write a
 * file that loads with that cascade, and `eval` must give the same error
 * for both files.  The same twins answering on two views each: every view
 * is tried as the one-view stage, and the file written answers with at
 * most the committee's error.  A file whose cascade names a member it
 * lacks is refused by `eval` with a sentence naming the cascade.
 *
 * The validation digits (MNIST train 50000..) are the first fixture digits
 * behind 50,000 blank ones, in a made-up training set (gzip'd: the blanks
 * cost nothing). */
#include "core/neocog_random.h"
#include "fixture.h"
#include "run_capture.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "fileio.h"
#include "modelfile.h"
#include "neocog.h"

enum { N_VALID = 40, BLANK = 50000, SIDE = 28 };

static void be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* dir/train-{images,labels}: BLANK blank digits, then the first N_VALID
 * fixture digits. */
static int make_train(const char *dir)
{
    const char *data = getenv("NC_TEST_DATA");
    char src[1024], dst[1024];
    int ok = 1;
    for (int k = 0; k < 2 && ok; k++) {
        const size_t item = k ? 1 : SIDE * SIDE, head = k ? 8 : 16;
        snprintf(src, sizeof src, "%s/mnist-t1k-%s-ubyte.gz", data ? data : "tests/data",
                 k ? "labels-idx1" : "images-idx3");
        snprintf(dst, sizeof dst, "%s/train-%s-ubyte.gz", dir, k ? "labels-idx1" : "images-idx3");
        gzFile in = gzopen(src, "rb"), out = gzopen(dst, "wb1");
        uint8_t *buf = calloc(BLANK, item);
        uint8_t hdr[16];
        ok = in && out && buf && gzread(in, hdr, (unsigned)head) == (int)head;
        if (ok) {
            be32(hdr + 4, BLANK + N_VALID);
            ok = gzwrite(out, hdr, (unsigned)head) == (int)head &&
                 gzwrite(out, buf, (unsigned)(BLANK * item)) == (int)(BLANK * item) &&
                 gzread(in, buf, (unsigned)(N_VALID * item)) == (int)(N_VALID * item) &&
                 gzwrite(out, buf, (unsigned)(N_VALID * item)) == (int)(N_VALID * item);
        }
        free(buf);
        if (in)
            gzclose(in);
        if (out)
            ok &= gzclose(out) == Z_OK;
    }
    return ok;
}

/* A committee of two copies of one random network, written to path; with
 * views, each answers on two views (two heights) of a digit. */
static int make_twins(const char *path, int views, uint8_t **ret_buf, size_t *ret_len)
{
    nc_test_rng rng = { 0x853c49e6748fea9bULL };
    nc_neocog *net = nc_test_random_net(&rng, 4, 5, 6);
    if (!net)
        return 0;
    nc_model_info info[2];
    nc_test_neocog_info(&info[0], "test_train_cascade");
    info[1] = info[0];
    nc_model_info com = info[0];
    if (views) {
        com.prep.n_views = 2;
        com.prep.view_box[0] = 40;
        com.prep.view_box[1] = 36;
    }
    const nc_neocog *nets[2] = { net, net };
    const uint32_t top_t[2] = { 0, 0 };
    int ok = nc_neocog_committee_save(nets, info, top_t, 2, &com, 0, ret_buf, ret_len) == 0 &&
             nc_file_write_atomic(path, *ret_buf, *ret_len) == 0;
    nc_neocog_free(net);
    return ok;
}

/* Run sh -c cmd (stderr joined to stdout): its status, *out its output. */
static int sh(const char *cmd, char **out)
{
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    *out = NULL;
    int status = nc_run_capture(argv, NULL, out);
    fprintf(stderr, "%s", *out ? *out : "");
    return status;
}

/* The "error ..." line of eval's output, into dst. */
static int error_line(const char *out, char *dst, size_t cap)
{
    const char *e = out ? strstr(out, "\nerror ") : NULL;
    if (!e)
        return 0;
    const char *end = strchr(e + 1, '\n');
    const size_t n = end ? (size_t)(end - e - 1) : strlen(e + 1);
    snprintf(dst, cap, "%.*s", (int)n, e + 1);
    return 1;
}

/* `eval` of model on the validation digits in dir: its status 0 checked,
 * its "error ..." line into dst; its whole output, for more checks (caller
 * frees). */
static char *eval_error(const char *tool, const char *model, const char *dir, char *dst,
                        size_t cap)
{
    char cmd[4096], *out = NULL;
    snprintf(cmd, sizeof cmd, "'%s' eval --model '%s' --data '%s' --set train --first %d "
             "--count %d 2>&1", tool, model, dir, BLANK, N_VALID);
    CHECK_INT_EQ(sh(cmd, &out), 0);
    CHECK(error_line(out, dst, cap));
    return out;
}

static void test_cascade(const char *tool)
{
    char dir[] = "/tmp/nc-cascade-XXXXXX";
    REQUIRE(mkdtemp(dir));
    REQUIRE(make_train(dir));
    char model[512], out_path[512], bad_path[512], cmd[4096];
    snprintf(model, sizeof model, "%s/twins.ncm", dir);
    snprintf(out_path, sizeof out_path, "%s/cascade.ncm", dir);
    snprintf(bad_path, sizeof bad_path, "%s/bad.ncm", dir);
    uint8_t *buf = NULL;
    size_t len = 0;
    REQUIRE(make_twins(model, 0, &buf, &len));

    char *out = NULL;
    snprintf(cmd, sizeof cmd, "'%s' cascade --model '%s' --out '%s' --data '%s' --count %d 2>&1",
             tool, model, out_path, dir, N_VALID);
    CHECK_INT_EQ(sh(cmd, &out), 0);
    CHECK(out && strstr(out, "cascade     member 0 first"));
    CHECK(out && strstr(out, "100.00% answered by member 0"));
    CHECK(out && strstr(out, "1.00 passes a digit (was 2)"));
    CHECK(out && !strstr(out, "view 0 alone"));      /* one view a member: no view stage */
    free(out);

    uint8_t *cb = NULL;
    size_t cl = 0;
    nc_neocog_committee *c = NULL;
    REQUIRE(nc_file_read_model(out_path, 1u << 28, &cb, &cl) == 0);
    REQUIRE(nc_neocog_committee_load(cb, cl, &c, NULL) == 0);
    CHECK(c->cascade.on && c->cascade.first == 0 && c->cascade.threshold >= 0.0 &&
          c->cascade.threshold <= 1.0 && c->cascade.beta > 0.0);
    nc_neocog_committee_free(c);
    free(cb);

    /* eval gives the committee's error for both files */
    char e_plain[256] = "", e_cas[256] = "";
    free(eval_error(tool, model, dir, e_plain, sizeof e_plain));
    out = eval_error(tool, out_path, dir, e_cas, sizeof e_cas);
    CHECK(out && strstr(out, "cascade     member 0 (0-based) first"));
    free(out);
    CHECK_MSG(e_plain[0] && !strcmp(e_plain, e_cas), "'%s' against '%s'", e_plain, e_cas);

    /* a cascade naming member 3 of two: refused, with the reason */
    nc_mf_reader *r = NULL;
    nc_mf_writer *w = NULL;
    REQUIRE(nc_mf_open(buf, len, &r) == 0);
    REQUIRE(nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w) == 0);
    for (uint32_t i = 0; i < nc_mf_section_count(r); i++) {
        uint32_t tag, type;
        const void *data;
        size_t n;
        REQUIRE(nc_mf_section_at(r, i, &tag, &type, &data, &n) == 0);
        REQUIRE(nc_mf_put(w, tag, type, data, n) == 0);
    }
    const uint32_t first = 3;
    const double rule[2] = { 0.9, 2.0 };
    REQUIRE(nc_mf_put_u32(w, NC_NEOCOG_TAG_CASM, &first, 1) == 0);
    REQUIRE(nc_mf_put_f64(w, NC_NEOCOG_TAG_CAST, rule, 2) == 0);
    uint8_t *bb = NULL;
    size_t bl = 0;
    REQUIRE(nc_mf_finish(w, &bb, &bl) == 0);
    REQUIRE(nc_file_write_atomic(bad_path, bb, bl) == 0);
    nc_mf_writer_free(w);
    nc_mf_close(r);
    free(bb);
    snprintf(cmd, sizeof cmd, "'%s' eval --model '%s' --data '%s' --set train --first %d "
             "--count %d 2>&1", tool, bad_path, dir, BLANK, N_VALID);
    CHECK(sh(cmd, &out) != 0);
    CHECK(out && strstr(out, "cascade first member past the committee's members"));
    free(out);

    /* with two views a member: both tried as the one-view stage; whatever
     * is kept, eval's error of the written file is at most the committee's */
    char views_path[512], e_views[256] = "";
    snprintf(views_path, sizeof views_path, "%s/views.ncm", dir);
    uint8_t *vb = NULL;
    size_t vl = 0;
    REQUIRE(make_twins(views_path, 1, &vb, &vl));
    free(vb);
    snprintf(cmd, sizeof cmd, "'%s' cascade --model '%s' --out '%s' --data '%s' --count %d 2>&1",
             tool, views_path, out_path, dir, N_VALID);
    CHECK_INT_EQ(sh(cmd, &out), 0);
    CHECK(out && strstr(out, "  view 0 alone: error "));
    CHECK(out && strstr(out, "  view 1 alone: error "));
    free(out);
    free(eval_error(tool, views_path, dir, e_plain, sizeof e_plain));
    free(eval_error(tool, out_path, dir, e_views, sizeof e_views));
    unsigned ep = 0, ev = 0;
    CHECK(sscanf(e_plain, "error %*f%% (%u", &ep) == 1 && sscanf(e_views, "error %*f%% (%u", &ev) == 1);
    CHECK_MSG(ev <= ep, "the cascade's %u errors against the committee's %u", ev, ep);

    free(buf);
    char path[1024];
    const char *names[] = { "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                            "twins.ncm", "cascade.ncm", "bad.ncm", "views.ncm" };
    for (size_t i = 0; i < NC_ARRAY_LEN(names); i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    if (argc == 2)
        test_cascade(argv[1]);
    return nc_test_finish();
}

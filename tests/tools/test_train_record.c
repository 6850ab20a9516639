/* tests/tools/test_train_record.c — changing a model file's record and
 * moving an ensemble rule to the changed file, run as a user runs them:
 * `neocog-train convert --test-error PCT IN OUT` sets the record's test
 * error and copies every other section byte for byte; `calibrate --rebind
 * OLD --ensemble NEW` moves a CNN file's fitted ensemble rule from OLD to
 * NEW (the rule's numbers unchanged, only the partner and the note), and
 * refuses a NEW whose network differs or an OLD the rule was not fitted
 * with. */
#include "cnn_file.h"
#include "core/neocog_random.h"
#include "run_capture.h"
#include "test.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calib.h"
#include "fileio.h"
#include "modelfile.h"
#include "neocog.h"

#define TAG_TERR NC_MF_TAG('T', 'E', 'R', 'R')

/* Run sh -c cmd (stderr joined to stdout): its status, *out its output. */
static int sh(const char *cmd, char **out)
{
    const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
    *out = NULL;
    int status = nc_run_capture(argv, NULL, out);
    fprintf(stderr, "%s", *out ? *out : "");
    return status;
}

/* A random neocognitron (rng's next draws) as a file at path. */
static int write_neocog(const char *path, uint64_t seed)
{
    nc_test_rng rng = { seed };
    nc_neocog *net = nc_test_random_net(&rng, 4, 5, 6);
    nc_model_info info;
    nc_test_neocog_info(&info, "test_train_record");
    info.test_error = 0.0091;
    uint8_t *buf = NULL;
    size_t len = 0;
    int ok = net && nc_neocog_save(net, &info, &buf, &len) == 0 &&
             nc_file_write_atomic(path, buf, len) == 0;
    nc_neocog_free(net);
    free(buf);
    return ok;
}

static int fingerprint(const char *path, nc_model_fp *fp)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int ok = nc_file_read_model(path, 1u << 28, &buf, &len) == 0 &&
             nc_model_fingerprint(buf, len, fp) == 0;
    free(buf);
    return ok;
}

/* A small CNN with a fitted rule and an ensemble rule bound to partner. */
static int write_cnn(const char *path, const nc_model_fp *partner)
{
    nc_cnn *net = NULL;
    nc_model_info info;
    nc_test_cnn_info(&info);
    uint8_t *buf = NULL, *out = NULL;
    size_t len = 0, olen = 0;
    nc_mf_reader *r = NULL;
    nc_mf_writer *w = NULL;
    const nc_calib cal = { 1, 4.25, 0.85, 0.01, 10000, 0.05, 0.03, 0.0068 };
    const nc_ens_rule ens = { 1, *partner, 0.75, 0.6, 0.01, 10000, 0.04, 0.02, 0.005 };
    int ok = nc_cnn_new("1x29x29-4C4-MP2-6C5-MP3-10N", &net) == 0 &&
             nc_cnn_init_weights(net, 7) == 0 && nc_cnn_save(net, &info, &buf, &len) == 0 &&
             nc_mf_open(buf, len, &r) == 0 && nc_mf_writer_new(NC_MF_KIND_CNN, &w) == 0;
    for (uint32_t i = 0; ok && i < nc_mf_section_count(r); i++) {
        uint32_t tag, type;
        const void *data;
        size_t n;
        ok = nc_mf_section_at(r, i, &tag, &type, &data, &n) == 0 &&
             nc_mf_put(w, tag, type, data, n) == 0;
    }
    ok = ok && nc_calib_write(w, &cal, "fitted by a test", &ens, "fitted by a test") == 0 &&
         nc_mf_finish(w, &out, &olen) == 0 && nc_file_write_atomic(path, out, olen) == 0;
    nc_mf_writer_free(w);
    nc_mf_close(r);
    nc_cnn_free(net);
    free(out);
    free(buf);
    return ok;
}

/* 1 when files a and b hold the same sections in the same order, the same
 * bytes in all but those with tags skip[n_skip]. */
static int same_sections(const char *a, const char *b, const uint32_t *skip, size_t n_skip)
{
    uint8_t *ba = NULL, *bb = NULL;
    size_t la = 0, lb = 0;
    nc_mf_reader *ra = NULL, *rb = NULL;
    int same = nc_file_read_model(a, 1u << 28, &ba, &la) == 0 &&
               nc_file_read_model(b, 1u << 28, &bb, &lb) == 0 && nc_mf_open(ba, la, &ra) == 0 &&
               nc_mf_open(bb, lb, &rb) == 0 &&
               nc_mf_section_count(ra) == nc_mf_section_count(rb) &&
               nc_mf_kind_of(ra) == nc_mf_kind_of(rb);
    for (uint32_t i = 0; same && i < nc_mf_section_count(ra); i++) {
        uint32_t t0, t1, y0, y1;
        const void *d0, *d1;
        size_t n0, n1;
        same = nc_mf_section_at(ra, i, &t0, &y0, &d0, &n0) == 0 &&
               nc_mf_section_at(rb, i, &t1, &y1, &d1, &n1) == 0 && t0 == t1 && y0 == y1;
        int skipped = 0;
        for (size_t k = 0; k < n_skip; k++)
            skipped |= t0 == skip[k];
        if (same && !skipped)
            same = n0 == n1 && (n0 == 0 || !memcmp(d0, d1, n0));
    }
    nc_mf_close(rb);
    nc_mf_close(ra);
    free(bb);
    free(ba);
    return same;
}

static int read_rules(const char *path, nc_calib *cal, nc_ens_rule *ens)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_mf_reader *r = NULL;
    int ok = nc_file_read_model(path, 1u << 28, &buf, &len) == 0 &&
             nc_mf_open(buf, len, &r) == 0 && nc_calib_read(r, cal, ens) == 0;
    nc_mf_close(r);
    free(buf);
    return ok;
}

static double recorded_test_error(const char *path)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_mf_reader *r = NULL;
    nc_model_info *info = malloc(sizeof *info);
    double e = -2.0;
    if (info && nc_file_read_model(path, 1u << 28, &buf, &len) == 0 &&
        nc_mf_open(buf, len, &r) == 0 && nc_mf_get_info(r, info) == 0)
        e = info->test_error;
    nc_mf_close(r);
    free(info);
    free(buf);
    return e;
}

static void test_record(const char *tool)
{
    char dir[] = "/tmp/nc-record-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char old_p[512], new_p[512], other_p[512], cnn_p[512], cnn2_p[512], cmd[4096];
    snprintf(old_p, sizeof old_p, "%s/old.ncm", dir);
    snprintf(new_p, sizeof new_p, "%s/new.ncm", dir);
    snprintf(other_p, sizeof other_p, "%s/other.ncm", dir);
    snprintf(cnn_p, sizeof cnn_p, "%s/cnn.ncm", dir);
    snprintf(cnn2_p, sizeof cnn2_p, "%s/cnn2.ncm", dir);
    REQUIRE(write_neocog(old_p, 0x853c49e6748fea9bULL));
    REQUIRE(write_neocog(other_p, 0x2545f4914f6cdd1dULL));
    char *out = NULL;

    /* the record's test error, nothing else */
    snprintf(cmd, sizeof cmd, "'%s' convert --test-error 1.04 '%s' '%s' 2>&1", tool, old_p,
             new_p);
    CHECK_INT_EQ(sh(cmd, &out), 0);
    free(out);
    CHECK(recorded_test_error(old_p) == 0.0091);
    CHECK(recorded_test_error(new_p) == 1.04 / 100.0);
    const uint32_t terr[] = { TAG_TERR };
    CHECK(same_sections(old_p, new_p, terr, 1));
    CHECK(!same_sections(old_p, new_p, NULL, 0));
    nc_model_fp fp_old, fp_new;
    REQUIRE(fingerprint(old_p, &fp_old) && fingerprint(new_p, &fp_new));
    CHECK(fp_old.crc != fp_new.crc && fp_old.len == fp_new.len);
    snprintf(cmd, sizeof cmd, "'%s' convert --test-error 101 '%s' '%s' 2>&1", tool, old_p,
             cnn2_p);
    CHECK_INT_EQ(sh(cmd, &out), 2);
    CHECK_MSG(out && strstr(out, "bad value for --test-error: '101'"), "said: %s",
              out ? out : "(nothing)");
    free(out);
    CHECK(access(cnn2_p, F_OK) != 0);

    /* the ensemble rule moved to the changed file, its numbers kept */
    REQUIRE(write_cnn(cnn_p, &fp_old));
    snprintf(cmd, sizeof cmd, "'%s' calibrate --model '%s' --out '%s' --rebind '%s' "
             "--ensemble '%s' 2>&1", tool, cnn_p, cnn2_p, old_p, new_p);
    CHECK_INT_EQ(sh(cmd, &out), 0);
    free(out);
    nc_calib c0, c1;
    nc_ens_rule e0, e1;
    REQUIRE(read_rules(cnn_p, &c0, &e0) && read_rules(cnn2_p, &c1, &e1));
    CHECK(e1.fitted && e1.partner.crc == fp_new.crc && e1.partner.len == fp_new.len);
    CHECK(e1.w_cnn == e0.w_cnn && e1.reject_threshold == e0.reject_threshold &&
          e1.reject_rate == e0.reject_rate && e1.n_valid == e0.n_valid &&
          e1.nll_plain == e0.nll_plain && e1.nll_fitted == e0.nll_fitted &&
          e1.valid_error == e0.valid_error);
    CHECK(!memcmp(&c0, &c1, sizeof c0));
    const uint32_t ens_tags[] = { NC_ENS_TAG_PARTNER, NC_ENS_TAG_NOTE };
    CHECK(same_sections(cnn_p, cnn2_p, ens_tags, 2));

    /* refused: a rule not fitted with OLD, a NEW with another network, no NEW */
    unlink(cnn2_p);
    snprintf(cmd, sizeof cmd, "'%s' calibrate --model '%s' --out '%s' --rebind '%s' "
             "--ensemble '%s' 2>&1", tool, cnn_p, cnn2_p, new_p, old_p);
    CHECK(sh(cmd, &out) != 0);
    CHECK(out && strstr(out, "was not fitted with"));
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' calibrate --model '%s' --out '%s' --rebind '%s' "
             "--ensemble '%s' 2>&1", tool, cnn_p, cnn2_p, old_p, other_p);
    CHECK(sh(cmd, &out) != 0);
    CHECK(out && strstr(out, "with only its record's text changed"));
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' calibrate --model '%s' --out '%s' --rebind '%s' 2>&1",
             tool, cnn_p, cnn2_p, old_p);
    CHECK(sh(cmd, &out) != 0);
    free(out);
    CHECK(access(cnn2_p, F_OK) != 0);

    const char *paths[] = { old_p, new_p, other_p, cnn_p, cnn2_p };
    for (size_t i = 0; i < NC_ARRAY_LEN(paths); i++)
        unlink(paths[i]);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    if (argc == 2)
        test_record(argv[1]);
    return nc_test_finish();
}

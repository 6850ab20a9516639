/* tests/core/test_shipped.c — every shipped model (the .ncm files of models/)
 * against the error its file records.
 *
 * The fixture (tests/data) holds the first 1,000 MNIST test digits, part of
 * the 10,000 on which the recorded test error was measured.  Each model runs
 * on all of them through the CPU engine table, with its own prep, and must
 * not do worse than the recorded error allows: errors <= 1000 p + 3 sigma + 1,
 * sigma = sqrt(1000 p (1 - p)) (binomial sampling noise of 1,000 digits).
 * A model without a recorded error fails: a shipped file must say how good
 * it is.  A neocognitron's digits are shared among a thread a core.  The fitted calibration each file carries must keep its reject rate
 * near what it was fitted for (at most 4 % of the fixture rejected).
 * A character model (classes other than MNIST's ten digits, e.g. the 94
 * printable characters) is not measured on digits: it must carry a fitted
 * calibration, which records its validation error. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "dataset.h"
#include "fileio.h"
#include "fixture.h"
#include "image.h"
#include "test.h"

static nc_dataset ds;

#define MAX_SHARES 8u

/* One thread's share of the fixture: digits [first, first + count). */
typedef struct share {
    const nc_backend *be;
    uint32_t first, count;
    double threshold;
    uint32_t errors, rejected;
    int err;
} share;

static void *run_share(void *arg)
{
    share *sh = arg;
    const nc_backend *be = sh->be;
    const uint32_t nc = be->info.n_classes, batch = 100;
    void *w = NULL;
    float *in = calloc((size_t)batch * be->input_len, sizeof *in);
    float *out = malloc((size_t)batch * nc * sizeof *out), *prob = malloc(nc * sizeof *prob);
    sh->err = in && out && prob ? be->ops->worker_new(be->impl, batch, &w) : -ENOMEM;
    for (uint32_t i = 0; !sh->err && i < sh->count; i += batch) {
        const uint32_t n = sh->count - i < batch ? sh->count - i : batch, at = sh->first + i;
        memset(in, 0, (size_t)n * be->input_len * sizeof *in);
        for (uint32_t b = 0; b < n; b++) {
            nc_image img = { ds.cols, ds.rows, ds.cols,
                             ds.pixels + (size_t)(at + b) * ds.rows * ds.cols };
            nc_prep_apply(&img, &be->info.prep, in + (size_t)b * be->input_len);
        }
        if ((sh->err = be->ops->forward(be->impl, w, in, n, out)))
            break;
        for (uint32_t b = 0; b < n; b++) {
            const float *raw = out + (size_t)b * nc;
            sh->errors += nc_backend_label(be->kind, raw, nc) != (int32_t)ds.labels[at + b];
            nc_backend_probs(be, raw, prob);
            float top = 0.0f;
            for (uint32_t k = 0; k < nc; k++)
                top = prob[k] > top ? prob[k] : top;
            sh->rejected += sh->threshold > 0.0 && top < sh->threshold;
        }
    }
    if (w)
        be->ops->worker_free(w);
    free(in);
    free(out);
    free(prob);
    return NULL;
}

/* Labels "0".."9": a model MNIST's digits measure. */
static int digit_model(const nc_model_info *info)
{
    char want[4];
    if (info->n_classes != 10)
        return 0;
    for (uint32_t k = 0; k < 10; k++)
        if (snprintf(want, sizeof want, "%u", k) < 0 || strcmp(info->labels[k], want))
            return 0;
    return 1;
}

static void test_model(const char *path)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_backend *be = NULL;
    REQUIRE(nc_file_read_model(path, 256u << 20, &buf, &len) == 0);
    int r = nc_backend_open(&nc_backend_cpu, buf, len, 0, &be);
    free(buf);
    CHECK_MSG(r == 0, "%s: %d", path, r);
    if (r)
        return;
    if (!digit_model(&be->info)) {
        CHECK_MSG(be->calib.fitted && be->calib.valid_error >= 0.0 && be->calib.valid_error < 1.0,
                  "%s: a character model must carry its calibration and validation error",
                  path);
        fprintf(stderr, "%s: %u classes, not MNIST's digits: validation error %.2f%% recorded "
                "(not measured here)\n", path, be->info.n_classes, 100.0 * be->calib.valid_error);
        nc_backend_close(be);
        return;
    }
    const double p = be->info.test_error;
    CHECK_MSG(p >= 0.0 && p < 1.0, "%s records no test error", path);
    /* a neocognitron's fixture in one share a core (the engine is shared,
     * each thread has its own worker): the shipped committee looks at every
     * digit twelve times, which one core under the sanitizers takes long
     * over.  CNNs stay on one thread, leaving OpenBLAS its own. */
    long cores = be->kind == NC_MF_KIND_NEOCOG ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    const uint32_t T = cores < 1 ? 1 : cores > MAX_SHARES ? MAX_SHARES : (uint32_t)cores;
    share sh[MAX_SHARES];
    pthread_t tid[MAX_SHARES];
    int threaded[MAX_SHARES];
    const double threshold = nc_backend_reject_threshold(be);
    uint32_t errors = 0, rejected = 0;
    for (uint32_t t = 0; t < T; t++) {
        const uint32_t first = (uint32_t)((uint64_t)ds.count * t / T);
        sh[t] = (share){ be, first, (uint32_t)((uint64_t)ds.count * (t + 1) / T) - first,
                         threshold, 0, 0, 0 };
        threaded[t] = pthread_create(&tid[t], NULL, run_share, &sh[t]) == 0;
        if (!threaded[t])
            run_share(&sh[t]);      /* no thread: this one does the share */
    }
    for (uint32_t t = 0; t < T; t++) {
        if (threaded[t])
            pthread_join(tid[t], NULL);
        CHECK_MSG(sh[t].err == 0, "%s: digits %u..: %d", path, sh[t].first, sh[t].err);
        errors += sh[t].errors;
        rejected += sh[t].rejected;
    }
    const double mean = ds.count * p, allowed = mean + 3.0 * sqrt(mean * (1.0 - p)) + 1.0;
    CHECK_MSG(errors <= allowed, "%s: %u errors on %u fixture digits, recorded %.2f%% allows %.1f",
              path, errors, ds.count, 100.0 * p, allowed);
    CHECK_MSG(rejected <= ds.count / 25, "%s: %u of %u rejected", path, rejected, ds.count);
    fprintf(stderr, "%s: %u / %u wrong (recorded %.2f%% on %s: %.1f expected, %.1f allowed), "
            "%u rejected at %.3f (%u threads)\n", path, errors, ds.count, 100.0 * p,
            be->info.test_set, mean, allowed, rejected, threshold, T);
    nc_backend_close(be);
}

int main(void)
{
    if (nc_test_fixture(&ds)) {
        fprintf(stderr, "fixture digits not available: skipped\n");
        return NC_TEST_SKIP;
    }
    const char *root = getenv("NC_SOURCE_ROOT");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/models", root ? root : ".");
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "%s: %s", dir, strerror(errno));
    int models = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".ncm"))
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        test_model(path);
        models++;
    }
    if (d)
        closedir(d);
    CHECK_MSG(models >= 2, "only %d shipped model(s) in %s", models, dir);
    nc_dataset_fini(&ds);
    return nc_test_finish();
}

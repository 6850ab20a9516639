/* tools/train_committee_util.c — what `neocog-train committee` does alike
 * for CNN columns (train_committee.c) and neocognitrons
 * (train_committee_neocog.c): the committee's own record, its measurement
 * on MNIST t10k, the file written.
 *
 * Layer: tools (train_committee.h). */
#include "train_committee.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"

#define WHO TRAIN_COMMITTEE_WHO

void train_committee_record(const nc_model_info *mi, uint32_t n, const char *noun,
                            const char *each, const char *command, int keep_one,
                            nc_model_info *info)
{
    *info = mi[0];
    int same_data = 1;
    for (uint32_t i = 1; i < n; i++)
        same_data &= !strcmp(mi[i].data, mi[0].data);
    if (n > 1) {
        if (same_data)
            snprintf(info->data, sizeof info->data, "committee of %u %s, each: %.200s", n,
                     noun, mi[0].data);
        else
            snprintf(info->data, sizeof info->data,
                     "committee of %u %s trained on different data (see each %s)", n, noun,
                     each);
        info->epochs = 0;       /* each member records its own */
        info->seed = 0;
    }
    if (n > 1 || !keep_one) {
        snprintf(info->command, sizeof info->command, "%s", command);
        train_utc_iso(info->created, sizeof info->created);
    }
    info->test_error = -1.0;
    info->test_set[0] = '\0';
}

int train_committee_measure(const nc_backend *be, uint32_t kind, uint32_t n_classes,
                            const char *dir, uint32_t threads, uint32_t batch,
                            train_committee_test *ret)
{
    const uint32_t K = n_classes;
    nc_dataset ds = { 0 };
    float *raw = NULL;
    uint8_t *ok = NULL;
    int32_t *ans = NULL;
    int err = train_load_mnist(dir, "t10k", &ds);
    if (err)
        return err;
    const uint32_t n = ds.count;
    if ((err = train_labels_ok(WHO, &ds, 0, n, K)))
        goto out;
    raw = malloc((size_t)n * K * sizeof *raw);
    ok = malloc(n);
    ans = malloc(n * sizeof *ans);
    if (!raw || !ok || !ans) {
        err = -ENOMEM;
        goto fail;
    }
    train_scores sc = { be, &ds, 0, n, threads, raw, ok, 0.0, NULL, batch };
    if ((err = train_scores_run(&sc)))
        goto fail;
    for (uint32_t i = 0; i < n; i++)
        ans[i] = nc_backend_label(kind, raw + (size_t)i * K, K);
    *ret = (train_committee_test){ train_count_errors(ans, ds.labels, n), n, sc.seconds };
    goto out;
fail:
    fprintf(stderr, WHO ": %s\n", nc_strerror(err));
out:
    nc_dataset_fini(&ds);
    free(raw);
    free(ok);
    free(ans);
    return err;
}

int train_committee_write(const char *out_path, const uint8_t *buf, size_t len)
{
    const int err = nc_file_write_atomic(out_path, buf, len);
    if (err)
        fprintf(stderr, WHO ": writing %s: %s\n", out_path, nc_strerror(err));
    else
        printf("wrote       %s (%zu bytes)\n", out_path, len);
    return err;
}

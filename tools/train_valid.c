/* tools/train_valid.c — see train_valid.h. */
#include "train_valid.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int train_valid_option(train_valid_opts *v, const char *name, const char *value)
{
    uint32_t gpu = 0;
    if (!strcmp(name, "model"))
        v->model = value;
    else if (!strcmp(name, "out"))
        v->out = value;
    else if (!strcmp(name, "data"))
        v->data = value;
    else if (!strcmp(name, "count"))
        return train_parse_u32(value, &v->count) ? -1 : 1;
    else if (!strcmp(name, "threads"))
        return train_parse_u32(value, &v->threads) ? -1 : 1;
    else if (!strcmp(name, "gpu")) {
        if (nc_opts_u32(value, 0, 64, &gpu))
            return -1;
        v->gpu = (int)gpu;
    } else
        return 0;
    return 1;
}

int train_valid_check(nc_opts *p, int argc, const train_valid_opts *v, int mnist)
{
    if (!v->model || !v->out || p->next < argc)
        return train_opts_fail(p, "need --model IN and --out OUT");
    if (mnist && (v->count == 0 || v->count > TRAIN_VALID_COUNT))
        return train_opts_fail(p, "--count must be 1..%u", TRAIN_VALID_COUNT);
    if (v->threads == 0 || v->threads > 64)
        return train_opts_fail(p, "--threads must be 1..64");
    if (mnist && !train_need_data_dir(p->prog, v->data))
        return TRAIN_EXIT_USAGE;
    return TRAIN_PARSED;
}

int train_valid_load_mnist(const char *who, const char *data, uint32_t n, uint32_t n_classes,
                           nc_dataset *ret)
{
    int err = train_load_mnist(train_data_dir(data), "train", ret);
    if (err)
        return err;
    if (ret->count < TRAIN_VALID_FIRST + n) {
        fprintf(stderr, "%s: the training set has %u digits; validation needs %u-%u\n", who,
                ret->count, TRAIN_VALID_FIRST, TRAIN_VALID_FIRST + n - 1);
        err = -EINVAL;
    } else {
        err = train_labels_ok(who, ret, TRAIN_VALID_FIRST, n, n_classes);
    }
    if (err)
        nc_dataset_fini(ret);
    return err;
}

/* tests/core/neocog_random.h — small neocognitrons with random weights and
 * a record for them, for the tests of neocognitron files and engines.
 * Header-only (static inline), as test.h. */
#ifndef NC_TEST_NEOCOG_RANDOM_H
#define NC_TEST_NEOCOG_RANDOM_H

#include <stdio.h>
#include <string.h>

#include "modelfile.h"
#include "neocog.h"
#include "test.h"

/* A small net with random weights above US1 (edges), and recognition
 * thresholds low enough that random planes answer random strokes. */
static inline nc_neocog *nc_test_random_net(nc_test_rng *rng, uint32_t k2, uint32_t k3,
                                             uint32_t k4)
{
    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    for (uint32_t l = 1; l < A.n_stages; l++)
        A.stage[l].theta = 0.05f;
    nc_neocog *net = NULL;
    if (nc_neocog_new(&A, &net) < 0)
        return NULL;
    const uint32_t want[4] = { 16, k2, k3, k4 };
    if (nc_neocog_train_us1(net, 16, 100.0f) < 0)
        goto fail;
    for (uint32_t l = 1; l < 4; l++)
        for (uint32_t k = 0; k < want[l]; k++)
            if (nc_neocog_add_plane(net, l, k % 10, NULL) < 0)
                goto fail;
    for (uint32_t l = 1; l < 4; l++) {
        const uint32_t ks = nc_neocog_kstride(net->n_planes[l]);
        const size_t rows = (size_t)nc_neocog_k_in(net, l) * net->s_ix[l]->n_live;
        for (size_t i = 0; i < rows; i++)
            for (uint32_t k = 0; k < net->n_planes[l]; k++)
                net->a[l][i * ks + k] =
                    nc_test_uniform(rng) < 0.6 ? 0.0f : (float)nc_test_uniform(rng);
        for (uint32_t k = 0; k < net->n_planes[l]; k++)
            net->b[l][k] = 0.5f + (float)nc_test_uniform(rng);
    }
    return net;
fail:
    nc_neocog_free(net);
    return NULL;
}

static inline void nc_test_neocog_info(nc_model_info *info, const char *command)
{
    memset(info, 0, sizeof *info);
    info->n_classes = 10;
    for (uint32_t c = 0; c < 10; c++)
        snprintf(info->labels[c], sizeof info->labels[c], "%u", c);
    info->prep = (nc_prep){ .kind = NC_PREP_NEOCOG, .size = 65, .box = 40, .threshold = 0.5f };
    snprintf(info->data, sizeof info->data, "tests/core");
    snprintf(info->command, sizeof info->command, "%s", command);
    info->test_error = -1.0;
}

#endif

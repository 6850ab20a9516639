/* tools/bench_cpu_neocog.c — the neocognitron half of neocog-bench-cpu.
 *
 * Builds the seed-004-sized network (planes 16/26/78/70): US1 by the spec's
 * supervised edge training, US2..US4 by core's seeded-from-data initialiser
 * on the first fixture digits (an initialiser, not the trainer: it gives
 * realistic weights and sparsity, not a tuned classifier).  Then times, on
 * later digits, every layer in every CPU form and prints:
 *   1. time per layer and per character for the best form (F);
 *   2. the F / S / G comparison laid out like seed 004 Table 6;
 *   3. the ratio of non-zero S-layer inputs per stage like seed Table 8.
 * One thread; pin it (taskset -c 0) for steady figures. */
#include "bench_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "neocog.h"

#define N_SEED 300          /* digits the initialiser may look at */
#define N_TIME_FAST 100     /* digits timed with F and G */
#define N_TIME_SLOW 10      /* digits timed with S (dense, slow) */

static const char *layer_name[9] = { "UG", "US1", "UC1", "US2", "UC2", "US3",
                                     "UC3", "US4", "UC4" };

/* Time every layer of form `form` over n digits; t[layer] gets seconds per
 * character, the best of reps passes over the digits (the machine may be
 * shared: the minimum is the figure least disturbed by others). */
static int time_layers(const nc_neocog *net, nc_neocog_state *st,
                       const float *x, uint32_t n, int reps, int form,
                       double t[9], int *ret_right, const uint8_t *lab)
{
    int right = 0;
    for (int layer = 0; layer <= 8; layer++)
        t[layer] = 1e30;
    for (int r = 0; r < reps; r++) {
        double pass[9] = { 0 };
        for (uint32_t d = 0; d < n; d++) {
            memcpy(st->u0, x + (size_t)d * 65 * 65, 65 * 65 * sizeof(float));
            for (int layer = 0; layer <= 8; layer++) {
                double t0 = bench_now();
                int err = nc_neocog_run_layer(net, st, layer, form);
                pass[layer] += bench_now() - t0;
                if (err < 0)
                    return err;
            }
            right += r == 0 && st->label == lab[d];
        }
        for (int layer = 0; layer <= 8; layer++)
            if (pass[layer] / n < t[layer])
                t[layer] = pass[layer] / n;
    }
    if (ret_right)
        *ret_right = right;
    return 0;
}

int bench_cpu_neocog(const nc_bench_opts *o)
{
    const nc_dataset *ds = o->digits;
    if (!ds || !ds->labels || ds->count < N_SEED + N_TIME_FAST)
        return -EINVAL;
    const uint32_t n_need = N_SEED + N_TIME_FAST;
    float *x = malloc((size_t)n_need * 65 * 65 * sizeof(float));
    uint8_t *lab = malloc(n_need);
    nc_neocog *net = NULL;
    nc_neocog_state *st = NULL;
    int err = 0;
    if (!x || !lab) {
        err = -ENOMEM;
        goto out;
    }
    /* spec preprocessing: crop, 40 px tall, binarise, centre in 65 x 65 */
    nc_prep p = { .kind = NC_PREP_NEOCOG, .size = 65, .box = 40, .threshold = -1.0f };
    uint32_t got = 0;
    for (uint32_t i = 0; i < ds->count && got < n_need; i++) {
        nc_image img = { ds->cols, ds->rows, ds->cols,
                         ds->pixels + (size_t)i * ds->rows * ds->cols };
        if (nc_prep_apply(&img, &p, x + (size_t)got * 65 * 65) < 0)
            continue;           /* blank digit: nothing to recognise */
        lab[got++] = ds->labels[i];
    }
    if (got < n_need) {
        err = -ENOENT;
        goto out;
    }

    nc_neocog_arch A;
    nc_neocog_arch_default(&A);
    const uint32_t target[4] = { 16, 26, 78, 70 };
    double t0 = bench_now();
    if ((err = nc_neocog_new(&A, &net)) < 0 ||
        (err = nc_neocog_train_us1(net, 16, 100.0f)) < 0 ||
        (err = nc_neocog_seed_from_digits(net, x, lab, N_SEED, target, 2)) < 0 ||
        (err = nc_neocog_state_new(net, &st)) < 0)
        goto out;
    double t_init = bench_now() - t0;
    const float *xt = x + (size_t)N_SEED * 65 * 65;
    const uint8_t *lt = lab + N_SEED;

    printf("## Neocognitron (Fukushima 2003), CPU\n\n");
    printf("Planes US1..US4: %u / %u / %u / %u (US1 by edge training, US2..US4 seeded "
           "from %u fixture digits in %.2f s: an initialiser, not training).  "
           "Timed on fixture digits %u..%u (NEOCOG prep, 65x65, box 40), best of %d pass(es); form S on the first %u of them.\n\n",
           net->n_planes[0], net->n_planes[1], net->n_planes[2], net->n_planes[3],
           N_SEED, t_init, N_SEED, N_SEED + N_TIME_FAST - 1, o->reps, N_TIME_SLOW);

    /* warm up caches and the ifunc resolution */
    nc_neocog_result res;
    if ((err = nc_neocog_forward(net, st, xt, NC_NEOCOG_FORM_F, &res)) < 0)
        goto out;

    double tf[9], ts[9], tg[9];
    int right_f = 0;
    if ((err = time_layers(net, st, xt, N_TIME_FAST, o->reps, NC_NEOCOG_FORM_F, tf, &right_f, lt)) < 0 ||
        (err = time_layers(net, st, xt, N_TIME_FAST, o->reps, NC_NEOCOG_FORM_G, tg, NULL, lt)) < 0 ||
        (err = time_layers(net, st, xt, N_TIME_SLOW, 1, NC_NEOCOG_FORM_S, ts, NULL, lt)) < 0)
        goto out;

    /* whole forward, as the daemon calls it (best pass of reps) */
    double tw = 1e30;
    for (int r = 0; r < o->reps; r++) {
        double t1 = bench_now();
        for (uint32_t d = 0; d < N_TIME_FAST; d++)
            if ((err = nc_neocog_forward(net, st, xt + (size_t)d * 65 * 65,
                                         NC_NEOCOG_FORM_F, &res)) < 0)
                goto out;
        t1 = (bench_now() - t1) / N_TIME_FAST;
        tw = t1 < tw ? t1 : tw;
    }

    /* 1. per layer, best form */
    double sum_f = 0;
    printf("### Time per layer, form F (ms per character)\n\n|");
    for (int l = 0; l <= 8; l++)
        printf(" %s |", layer_name[l]);
    printf(" sum |\n|");
    for (int l = 0; l <= 9; l++)
        printf("---:|");
    printf("\n|");
    for (int l = 0; l <= 8; l++) {
        printf(" %.3f |", tf[l] * 1e3);
        sum_f += tf[l];
    }
    printf(" %.3f |\n\n", sum_f * 1e3);
    printf("Whole forward (nc_neocog_forward, F): %.3f ms per character, %.0f characters/s "
           "(seed 004's CPU F: 27.3 ms; target here <= 3 ms).  Seeded net's answers on "
           "these %u digits: %d right.\n\n",
           tw * 1e3, 1.0 / tw, N_TIME_FAST, right_f);

    /* 2. seed Table 6 layout: S-layers per form */
    printf("### S-layer time per form, as seed 004 Table 6 (ms per character)\n\n");
    printf("| | S1 | S2 | S3 | S4 | all S |\n|---|---:|---:|---:|---:|---:|\n");
    const struct { const char *name; const double *t; } rows[3] = {
        { "CPU S", ts }, { "CPU F", tf }, { "CPU G", tg } };
    for (int r = 0; r < 3; r++) {
        double s = 0;
        printf("| %s |", rows[r].name);
        for (int l = 0; l < 4; l++) {
            printf(" %.3f |", rows[r].t[1 + 2 * l] * 1e3);
            s += rows[r].t[1 + 2 * l];
        }
        printf(" %.3f |\n", s * 1e3);
    }
    double sS = 0, sF = 0;
    printf("| t_S/t_F |");
    for (int l = 0; l < 4; l++) {
        printf(" %.1f |", ts[1 + 2 * l] / tf[1 + 2 * l]);
        sS += ts[1 + 2 * l];
        sF += tf[1 + 2 * l];
    }
    printf(" %.1f |\n", sS / sF);
    printf("\nSeed 004 (Core 2, 2010): CPU S 29.7 / 116 / 144 / 32.9, CPU F 3.33 / 6.91 / "
           "9.98 / 6.01, CPU G 23.0 / 72.5 / 131 / 46.0; t_S/t_F 8.9 / 17 / 14 / 5.5.\n\n");

    printf("### The other layers per form (ms per character)\n\n");
    printf("| | UG | C1 | C2 | C3 | C4 |\n|---|---:|---:|---:|---:|---:|\n");
    for (int r = 0; r < 3; r++)
        printf("| CPU %c | %.3f | %.3f | %.3f | %.3f | %.3f |\n", rows[r].name[4],
               rows[r].t[0] * 1e3, rows[r].t[2] * 1e3, rows[r].t[4] * 1e3,
               rows[r].t[6] * 1e3, rows[r].t[8] * 1e3);

    /* 3. seed Table 8: the share of S-layer inputs that are non-zero (what
     * F's zero-skip keeps), plus every layer's own output density */
    size_t nnz[9] = { 0 }, cells[9] = { 0 };
    for (uint32_t d = 0; d < N_TIME_FAST; d++) {
        if ((err = nc_neocog_forward(net, st, xt + (size_t)d * 65 * 65, NC_NEOCOG_FORM_F, &res)) < 0)
            goto out;
        for (int l = 0; l <= 8; l++) {
            size_t nz, c;
            if ((err = nc_neocog_layer_nnz(net, st, l, &nz, &c)) < 0)
                goto out;
            nnz[l] += nz;
            cells[l] += c;
        }
    }
    size_t all_nz = 0, all_c = 0;
    for (int l = 0; l < 4; l++) {
        all_nz += nnz[2 * l];
        all_c += cells[2 * l];
    }
    printf("\n### Non-zero S-layer inputs, as seed 004 Table 8 (mean over %u digits)\n\n",
           N_TIME_FAST);
    printf("| C_ALL | C_S1 (UG) | C_S2 (UC1) | C_S3 (UC2) | C_S4 (UC3) |\n"
           "|---:|---:|---:|---:|---:|\n");
    printf("| %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n", 100.0 * all_nz / all_c,
           100.0 * nnz[0] / cells[0], 100.0 * nnz[2] / cells[2],
           100.0 * nnz[4] / cells[4], 100.0 * nnz[6] / cells[6]);
    printf("\nSeed 004: 5.7%% / 7.8%% / 4.6%% / 5.2%% / 6.3%%.  Spec (trained prototype): "
           "UC1 5.5%%, UC2 5.8%%, UC3 3.4%%.\n\n");
    printf("S-layer outputs non-zero: US1 %.1f%%, US2 %.1f%%, US3 %.1f%%, US4 %.1f%%.\n\n",
           100.0 * nnz[1] / cells[1], 100.0 * nnz[3] / cells[3],
           100.0 * nnz[5] / cells[5], 100.0 * nnz[7] / cells[7]);
out:
    nc_neocog_state_free(st);
    nc_neocog_free(net);
    free(x);
    free(lab);
    return err;
}

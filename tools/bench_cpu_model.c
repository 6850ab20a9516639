/* tools/bench_cpu_model.c — neocog-bench-cpu --neocog-model FILE: a
 * neocognitron model file (the shipped committee) on the CPU.
 *
 * Prints, member by member, the time of one pass (one view of one digit)
 * through form F image by image (nc_neocog_forward, what the CPU engine did
 * before form B) and through nc_neocog_forward_many with form B's packs
 * (what it does now, the member's views of 8 digits at once), US4 alone in
 * both, and the interpolating-vector answer; then the CPU engine itself
 * (nc_backend_cpu, one worker, batches of 64) in digits/s.  Thread CPU time,
 * so other work on a shared machine inflates the figures less; one thread. */
#include "bench_cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "image.h"
#include "neocog.h"

#define MODEL_DIGITS 8u         /* digits a slice, as the engine's */
#define ENGINE_DIGITS 64u

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The first n fixture digits prepared with view v of prep, into x. */
static void prep_view(const nc_dataset *ds, const nc_prep *prep, uint32_t v, uint32_t n,
                      float *x)
{
    const nc_prep pv = nc_prep_view(prep, v);
    const size_t len = nc_prep_view_len(&pv);
    for (uint32_t i = 0; i < n; i++) {
        nc_image img = { ds->cols, ds->rows, ds->cols,
                         ds->pixels + (size_t)i * ds->rows * ds->cols };
        if (nc_prep_apply(&img, &pv, x + i * len) < 0)
            memset(x + i * len, 0, len * sizeof(float));
    }
}

/* One member: ms a pass for F, B, US4 in each, and the IV answer. */
static int time_member(const nc_neocog *net, const nc_neocog_iv *iv, const float *const *in,
                       uint32_t n, int reps, double t[5])
{
    nc_neocog_state *st[NC_NEOCOG_MANY_MAX] = { 0 };
    nc_neocog_packs *pk = NULL;
    nc_neocog_result res;
    const int last = 2 * (int)net->arch.n_stages - 1;
    int err = nc_neocog_packs_new(net, NC_NEOCOG_PACK_MIN_BYTES, &pk);
    for (uint32_t p = 0; !err && p < n; p++)
        err = nc_neocog_state_new(net, &st[p]);
    for (int i = 0; i < 5; i++)
        t[i] = 1e30;
    for (int r = 0; !err && r < reps; r++) {
        double t0 = cpu_now(), f = 0.0, f4 = 0.0, b4 = 0.0;
        for (uint32_t p = 0; !err && p < n; p++)
            err = nc_neocog_forward(net, st[p], in[p], NC_NEOCOG_FORM_F, &res);
        f = cpu_now() - t0;
        for (uint32_t p = 0; !err && p < n; p++) {     /* US4 alone, form F */
            double t1 = cpu_now();
            err = nc_neocog_run_layer(net, st[p], last, NC_NEOCOG_FORM_F);
            f4 += cpu_now() - t1;
        }
        double t2 = cpu_now();
        if (!err)
            err = nc_neocog_forward_many(net, pk, st, n, in, NULL);
        const double b = cpu_now() - t2;
        if (!err && pk->s[net->arch.n_stages - 1]) {   /* US4 alone, form B */
            const uint32_t l = net->arch.n_stages - 1;
            const nc_neocog_s_args s = {
                .ix = net->s_ix[l], .k_in = nc_neocog_k_in(net, l),
                .in_stride = nc_neocog_kstride(nc_neocog_k_in(net, l)),
                .k_out = net->n_planes[l], .a = net->a[l], .b = net->b[l],
                .c = net->s_c[l], .theta = net->arch.stage[l].theta };
            const float *ui[NC_NEOCOG_MANY_MAX];
            float *uo[NC_NEOCOG_MANY_MAX];
            for (uint32_t p = 0; p < n; p++) {
                ui[p] = st[p]->uc[l - 1];
                uo[p] = st[p]->us[l];
            }
            double t3 = cpu_now();
            err = nc_neocog_s_forward_many(&s, pk->s[l], n, ui, uo);
            b4 = cpu_now() - t3;
        }
        double t4 = cpu_now();
        for (uint32_t p = 0; !err && iv && p < n; p++)
            err = nc_neocog_iv_classify(iv, net, st[p], &res);
        const double tv = cpu_now() - t4;
        const double now[5] = { f, b, f4, b4, tv };
        for (int i = 0; i < 5; i++)
            if (now[i] / n * 1e3 < t[i])
                t[i] = now[i] / n * 1e3;
    }
    for (uint32_t p = 0; p < n; p++)
        nc_neocog_state_free(st[p]);
    nc_neocog_packs_free(pk);
    return err;
}

int bench_cpu_model(const nc_bench_opts *o, const uint8_t *buf, size_t len)
{
    const nc_dataset *ds = o->digits;
    nc_neocog_committee *c = NULL;
    nc_model_info info;
    nc_backend *be = NULL;
    int err = nc_neocog_committee_load(buf, len, &c, &info);
    if (err)
        return err;
    const uint32_t V = nc_prep_views(&info.prep), L = nc_prep_view_len(&info.prep);
    float *x = malloc((size_t)V * MODEL_DIGITS * L * sizeof(float));
    if (!x || ds->count < ENGINE_DIGITS) {
        err = x ? -EINVAL : -ENOMEM;
        goto out;
    }
    for (uint32_t v = 0; v < V; v++)
        prep_view(ds, &info.prep, v, MODEL_DIGITS, x + (size_t)v * MODEL_DIGITS * L);

    printf("## The neocognitron file on the CPU\n\n%u members, %u views; one pass = one view "
           "of one digit; the member's views of %u fixture digits at once; ms of thread CPU "
           "time a pass, best of %d.\n\n",
           c->n_members, V, MODEL_DIGITS, o->reps);
    printf("| member | US4 planes | passes | pass, form F | pass, forward_many (B) | US4 F | "
           "US4 B | IV answer |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    double digit_f = 0.0, digit_b = 0.0;
    for (uint32_t m = 0; m < c->n_members && !err; m++) {
        const nc_neocog *net = c->member[m];
        const float *in[NC_NEOCOG_MANY_MAX];
        uint32_t n = 0;
        for (uint32_t i = 0; i < MODEL_DIGITS; i++)
            for (uint32_t v = 0; v < V; v++)
                if (c->view_mask[m] >> v & 1u)
                    in[n++] = x + ((size_t)v * MODEL_DIGITS + i) * L;
        nc_neocog_iv *iv = NULL;
        double t[5];
        if (c->iv_top_t[m] && (err = nc_neocog_iv_new(net, c->iv_top_t[m], &iv)))
            break;
        err = time_member(net, iv, in, n, o->reps, t);
        nc_neocog_iv_free(iv);
        if (err)
            break;
        printf("| %u | %u | %u | %.2f | %.2f | %.2f | %.2f | %.2f |\n", m,
               net->n_planes[net->arch.n_stages - 1], n, t[0], t[1], t[2], t[3], t[4]);
        digit_f += (double)n / MODEL_DIGITS * (t[0] + t[4]);
        digit_b += (double)n / MODEL_DIGITS * (t[1] + t[4]);
    }
    if (err)
        goto out;
    printf("\nA digit (every member's passes and IV answers): %.1f ms with form F, %.1f ms "
           "with forward_many (%.1f and %.1f digits/s a core).\n\n",
           digit_f, digit_b, 1e3 / digit_f, 1e3 / digit_b);

    /* the engine itself, as the daemon and neocog-train eval run it */
    if ((err = nc_backend_open(&nc_backend_cpu, buf, len, 0, &be)))
        goto out;
    float *in = malloc((size_t)ENGINE_DIGITS * be->input_len * sizeof(float));
    float *out = malloc((size_t)ENGINE_DIGITS * be->info.n_classes * sizeof(float));
    void *w = NULL;
    err = in && out ? be->ops->worker_new(be->impl, ENGINE_DIGITS, &w) : -ENOMEM;
    for (uint32_t i = 0; !err && i < ENGINE_DIGITS; i++) {
        nc_image img = { ds->cols, ds->rows, ds->cols,
                         ds->pixels + (size_t)i * ds->rows * ds->cols };
        if (nc_prep_apply(&img, &be->info.prep, in + (size_t)i * be->input_len) < 0)
            memset(in + (size_t)i * be->input_len, 0, be->input_len * sizeof(float));
    }
    double best = 1e30, wall = 1e30;
    for (int r = 0; !err && r < o->reps; r++) {
        double t0 = cpu_now(), w0 = bench_now();
        err = be->ops->forward(be->impl, w, in, ENGINE_DIGITS, out);
        double t = cpu_now() - t0, tw = bench_now() - w0;
        best = t < best ? t : best;
        wall = tw < wall ? tw : wall;
    }
    if (!err)
        printf("CPU engine (nc_backend_cpu, one worker, %u digits a call): %.1f digits/s of "
               "thread CPU time, %.1f digits/s of wall time.\n\n",
               ENGINE_DIGITS, ENGINE_DIGITS / best, ENGINE_DIGITS / wall);
    if (w)
        be->ops->worker_free(w);
    free(in);
    free(out);
out:
    nc_backend_close(be);
    nc_neocog_committee_free(c);
    free(x);
    return err;
}

/* tools/bench_gpu_cnn.cu — the CNN half of neocog-bench-gpu.
 *
 * Times seed 000's MNIST column 1x29x29-20C4-MP2-40C5-MP3-150N-10N (or
 * --cnn-arch's net, e.g. the deep column of models/cnn-single.ncm) on the GPU
 * engine (gpu/cnn/cnn_engine.h): images/s at batch 1..max_batch for each forward
 * path and for the engine's measured choice (inputs already on the device,
 * CUDA events around each batch, median of o->reps); batch-1 latency as GPU
 * time (a CUDA graph of the forward, events around the replay) and as host
 * wall time of nc_gpu_cnn_forward (copies and sync included); and training
 * images/s over one epoch of 60,000 digits per batch size.  Inputs are the
 * fixture's real digits (28x28 through nc_prep_apply at the top left of a
 * zero 29x29 field, as neocog-bench-cpu), tiled; weights random (seed 1). */
#include <cuda_runtime.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_gpu.h"
#include "cnn_engine_dev.h"
#include "device.h"
#include "gpu_dev.h"
extern "C" {   /* core/ headers have no C++ guards */
#include "cnn.h"
#include "image.h"
}

#define COLUMN "1x29x29-20C4-MP2-40C5-MP3-150N-10N"
#define EPOCH 60000u

#define CK(stmt) do {                                                          \
    cudaError_t e_ = (stmt);                                                   \
    if (e_ != cudaSuccess) {                                                   \
        fprintf(stderr, "bench_gpu_cnn: %s: %s\n", #stmt, cudaGetErrorString(e_)); \
        err = -EIO;                                                            \
        goto done;                                                             \
    }                                                                          \
} while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* The fixture's digits as 29x29 inputs with their labels (count of them). */
static int make_digits(const nc_dataset *d, float **ret_in, uint8_t **ret_labels,
                       uint32_t *ret_count)
{
    const nc_prep p = {NC_PREP_MNIST, 28, 20, 0, 0, -1.0f, 0, 0, {0}, {0}};
    float *in = (float *)calloc((size_t)d->count * 841, sizeof(float));
    uint8_t *lab = (uint8_t *)malloc(d->count);
    float field[28 * 28];
    if (!in || !lab) {
        free(in);
        free(lab);
        return -ENOMEM;
    }
    uint32_t got = 0;
    for (uint32_t k = 0; k < d->count; k++) {
        nc_image img = {d->cols, d->rows, d->cols, d->pixels + (size_t)k * d->rows * d->cols};
        if (nc_prep_apply(&img, &p, field))
            continue;
        for (int y = 0; y < 28; y++)
            memcpy(in + (size_t)got * 841 + y * 29, field + y * 28, 28 * sizeof(float));
        lab[got++] = d->labels ? d->labels[k] : 0;
    }
    if (!got) {
        free(in);
        free(lab);
        return -ENOENT;
    }
    *ret_in = in;
    *ret_labels = lab;
    *ret_count = got;
    return 0;
}

/* Median GPU ms of a forward of n images on the device, by events. */
static int time_path(nc_gpu_cnn *g, const float *d_in, float *d_out, uint32_t n, int reps,
                     float *ret_ms)
{
    cudaStream_t s = (cudaStream_t)nc_gpu_cnn_stream(g);
    cudaEvent_t e0, e1;
    float *ms = (float *)calloc((size_t)reps, sizeof(float));
    int err = ms ? 0 : -ENOMEM;
    if (err)
        return err;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int r = -2; r < reps && !err; r++) {
        cudaEventRecord(e0, s);
        err = nc_gpu_cnn_forward_device(g, d_in, n, d_out);
        cudaEventRecord(e1, s);
        if (!err && cudaEventSynchronize(e1) != cudaSuccess)
            err = -EIO;
        if (!err && r >= 0)
            cudaEventElapsedTime(&ms[r], e0, e1);
    }
    if (!err) {
        qsort(ms, (size_t)reps, sizeof(float), cmp_float);
        *ret_ms = ms[reps / 2];
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    free(ms);
    return err;
}

/* Batch-1 GPU time of a graph of the forward (events around each replay). */
static int time_graph(nc_gpu_cnn *g, const float *d_in, float *d_out, int reps, float *ret_us)
{
    cudaStream_t s = (cudaStream_t)nc_gpu_cnn_stream(g);
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    float *us = (float *)calloc((size_t)reps, sizeof(float));
    int err = us ? nc_gpu_cnn_forward_device(g, d_in, 1, d_out) : -ENOMEM;   /* tunes */
    if (!err)
        err = nc_gpu_cnn_sync(g);
    if (err)
        goto done;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    err = nc_gpu_cnn_forward_device(g, d_in, 1, d_out);
    CK(cudaStreamEndCapture(s, &graph));
    if (err)
        goto done;
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int r = -10; r < reps; r++) {
        CK(cudaEventRecord(e0, s));
        CK(cudaGraphLaunch(exec, s));
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        if (r >= 0) {
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            us[r] = ms * 1000.0f;
        }
    }
    qsort(us, (size_t)reps, sizeof(float), cmp_float);
    *ret_us = us[reps / 2];
done:
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    free(us);
    return err;
}

#define N_PATHS (NC_GPU_CNN_PATH_DEEP_BIG + 1)
static const char *const path_names[N_PATHS] = {"auto", "direct", "unrolled", "fused-small",
                                                "fused-big", "fused-deep", "deep-big"};

extern "C" int bench_gpu_cnn(const nc_bench_gpu_opts *o)
{
    nc_cnn *net = NULL;
    nc_gpu_cnn *g = NULL;
    float *digits = NULL, *d_in = NULL, *d_out = NULL, *host_out = NULL, *epoch_in = NULL;
    uint8_t *labels = NULL, *epoch_lab = NULL;
    uint32_t count = 0;
    const uint32_t max_b = (uint32_t)o->max_batch;
    const char *arch = o->cnn_arch ? o->cnn_arch : COLUMN;
    nc_gpu_dev_install();       /* the shallow column's fused paths (gpu/dev/) */
    int err = nc_cnn_new(arch, &net);
    if (!err)
        err = nc_cnn_init_weights(net, 1);
    if (!err)
        err = make_digits(o->digits, &digits, &labels, &count);
    if (!err)
        err = nc_gpu_cnn_new(net, o->device, max_b, &g);
    if (err)
        goto done;
    CK(cudaMalloc(&d_in, (size_t)max_b * 841 * sizeof(float)));
    if (net->n_inputs != 841) {
        fprintf(stderr, "bench_gpu_cnn: %s: not a 1x29x29 net\n", arch);
        err = -EINVAL;
        goto done;
    }
    CK(cudaMalloc(&d_out, (size_t)max_b * net->n_outputs * sizeof(float)));
    for (uint32_t b = 0; b < max_b; b += count) {
        const uint32_t c = max_b - b < count ? max_b - b : count;
        CK(cudaMemcpy(d_in + (size_t)b * 841, digits, (size_t)c * 841 * sizeof(float),
                      cudaMemcpyHostToDevice));
    }
    printf("## CNN column %s (gpu/cnn/cnn_engine, fp32)\n\n", arch);

    /* ---- throughput per path -------------------------------------------- */
    printf("### Forward throughput, images/s (inputs on the device; median of %d)\n\n", o->reps);
    printf("| batch | auto | auto's choice | direct | unrolled+cuBLAS | fused-small | fused-big | "
           "fused-deep | deep-big |\n");
    printf("|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
    {
        double best_rate = 0;
        uint32_t best_n = 0;
        for (uint32_t n = 1; n <= max_b; n = n * 2 > max_b && n < max_b ? max_b : n * 2) {
            if (o->quick && n != 1 && n != 64 && n != max_b)
                continue;
            double rate[N_PATHS] = {0};
            char how[160] = "";
            for (int p = 0; p < N_PATHS; p++) {
                if (!nc_gpu_cnn_path_ok(g, (nc_gpu_cnn_path)p))
                    continue;
                float ms = 0;
                if ((err = nc_gpu_cnn_set_path(g, (nc_gpu_cnn_path)p)) ||
                    (err = time_path(g, d_in, d_out, n, o->reps, &ms)))
                    goto done;
                rate[p] = n / (ms * 1e-3);
                if (p == 0)
                    nc_gpu_cnn_describe(g, n, how, sizeof how);
            }
            printf("| %u | %.0f | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", n, rate[0],
                   how, rate[1], rate[2], rate[3], rate[4], rate[5], rate[6]);
            fflush(stdout);
            if (rate[0] > best_rate) {
                best_rate = rate[0];
                best_n = n;
            }
        }
        printf("\nbest (auto): %.0f images/s at batch %u\n\n", best_rate, best_n);
    }

    /* ---- batch-1 latency ------------------------------------------------ */
    printf("### Batch-1 latency\n\n| path | GPU time of a graph replay (us) | nc_gpu_cnn_forward wall (us) |\n|---|---:|---:|\n");
    host_out = (float *)malloc(net->n_outputs * sizeof(float));
    if (!host_out) {
        err = -ENOMEM;
        goto done;
    }
    for (int p = 0; p < N_PATHS; p++) {
        if (!nc_gpu_cnn_path_ok(g, (nc_gpu_cnn_path)p))
            continue;
        float us = 0;
        if ((err = nc_gpu_cnn_set_path(g, (nc_gpu_cnn_path)p)) ||
            (err = time_graph(g, d_in, d_out, 4 * o->reps + 100, &us)))
            goto done;
        float wall[201];
        for (int r = -10; r < 201; r++) {
            double t0 = now_s();
            if ((err = nc_gpu_cnn_forward(g, digits, 1, host_out)))
                goto done;
            if (r >= 0)
                wall[r] = (float)((now_s() - t0) * 1e6);
        }
        qsort(wall, 201, sizeof(float), cmp_float);
        char how[160] = "";
        nc_gpu_cnn_describe(g, 1, how, sizeof how);
        printf("| %s [%s] | %.1f | %.1f |\n", path_names[p], how, us, wall[100]);
    }

    /* ---- training ------------------------------------------------------- */
    printf("\n### Training (forward + loss + backward + SGD on the GPU, layer-wise kernels)\n\n");
    printf("| batch | images | seconds | images/s | s per 60,000 |\n|---:|---:|---:|---:|---:|\n");
    if ((err = nc_gpu_cnn_set_path(g, NC_GPU_CNN_PATH_AUTO)))
        goto done;
    {
        static const uint32_t tb[] = {1, 8, 32, 128, 256};
        const uint32_t chunk = 256;
        epoch_in = (float *)malloc((size_t)chunk * 841 * sizeof(float));
        epoch_lab = (uint8_t *)malloc(chunk);
        if (!epoch_in || !epoch_lab) {
            err = -ENOMEM;
            goto done;
        }
        for (uint32_t i = 0; i < chunk; i++) {
            memcpy(epoch_in + (size_t)i * 841, digits + (size_t)(i % count) * 841, 841 * sizeof(float));
            epoch_lab[i] = labels[i % count];
        }
        for (size_t k = 0; k < sizeof tb / sizeof tb[0]; k++) {
            const uint32_t n = tb[k];
            if (n > max_b || (o->quick && n != 32))
                continue;
            const uint32_t images = n == 1 ? 6000u : EPOCH;   /* batch 1: a tenth, scaled */
            double loss = 0;
            if ((err = nc_gpu_cnn_train_step(g, epoch_in, epoch_lab, n, 1e-3f, &loss)))
                goto done;
            double t0 = now_s();
            uint32_t off = 0;
            for (uint32_t done_ = 0; done_ < images; done_ += n) {
                if ((err = nc_gpu_cnn_train_step(g, epoch_in + (size_t)off * 841, epoch_lab + off,
                                                 n, 1e-3f, NULL)))
                    goto done;
                off = off + 2 * n <= chunk ? off + n : 0;
            }
            if ((err = nc_gpu_cnn_sync(g)))
                goto done;
            double s = now_s() - t0;
            printf("| %u | %u | %.3f | %.0f | %.2f |\n", n, images, s, images / s,
                   s * EPOCH / images);
            fflush(stdout);
        }
    }
    printf("\n");
done:
    if (err)
        fprintf(stderr, "bench_gpu_cnn: %d (%s)\n", err, nc_gpu_last_error());
    nc_gpu_cnn_free(g);
    nc_cnn_free(net);
    cudaFree(d_in);
    cudaFree(d_out);
    free(digits);
    free(labels);
    free(host_out);
    free(epoch_in);
    free(epoch_lab);
    return err;
}

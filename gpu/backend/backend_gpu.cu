/* gpu/backend/backend_gpu.cu — see backend_gpu.h.
 *
 * Layer: gpu.  Host code only: every kernel is an engine's
 * (gpu/cnn/cnn_engine.h, gpu/neocog/neocog_engine.h); this file loads the model file
 * with core/, makes the engine on the chosen device, warms it, and guards
 * it with a mutex so the daemon's worker threads can share it.
 *
 * A neocognitron file with the interpolating-vector mark (NIVT) is answered
 * as core/backend/backend_cpu.c answers it: the engine's last step is the device
 * twin of core's nc_neocog_iv_classify (gpu/neocog/neocog_iv.cuh, core's
 * arithmetic bit for bit), so the scores agree with the CPU table's to the
 * float rounding of the device layers.  Without the mark, UC4's max
 * response from the device.  A committee has one engine per member; a file
 * whose prep has views (image.h) gives each member's engine that member's
 * views of every digit as one batch (core/neocog/neocog.h: those of its deskew),
 * and the scores are averaged on the host as the CPU table averages them.
 * A committee with a cascade (neocog.h) runs its first member on the batch
 * and the other members only on the digits it leaves undecided.
 *
 * A CNN file is loaded as a committee (core/cnn/cnn.h: one column or several):
 * one CNN engine per column, all started on the whole batch before any is
 * waited for (each has its own stream, so they overlap), and the outputs
 * averaged on the host in the order and arithmetic of core's
 * nc_cnn_committee_run, so the answer is the CPU table's to float rounding
 * of the device layers.  With views, every view of every digit is one
 * image of that batch, and the committee's answers are then averaged over
 * each digit's views by core's nc_cnn_views_mean. */
#include <cuda_runtime_api.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend.h"
#include "cascade.h"
#include "cnn.h"
#include "modelfile.h"
#include "neocog.h"
}

#include "backend_gpu.h"
#include "cnn_engine.h"
#include "device.h"
#include "neocog_engine.h"

/* ---- the error sentence ----------------------------------------------------- */

static thread_local char why_buf[1024];

extern "C" const char *nc_backend_gpu_last_error(void) { return why_buf; }

static int fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Record "what: error" for err and return err; for the errors a CUDA call
 * gives (-EIO, -ENOMEM, -ENODEV) CUDA's own record is added. */
static int fail(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(why_buf, sizeof why_buf, fmt, ap);
    va_end(ap);
    const char *cuda = err == -EIO || err == -ENOMEM || err == -ENODEV ? nc_gpu_last_error() : "";
    if (w >= 0 && (size_t)w < sizeof why_buf)
        snprintf(why_buf + w, sizeof why_buf - (size_t)w, ": %s%s%s", nc_strerror(err),
                 cuda && cuda[0] ? "; " : "", cuda ? cuda : "");
    return err;
}

/* ---- devices ------------------------------------------------------------------- */

extern "C" int nc_backend_gpu_device_count(void)
{
    int n = 0;
    if (nc_gpu_device_count(&n) < 0) {
        fail(-ENODEV, "CUDA cannot count its devices");
        return 0;
    }
    return n > 0 ? n : 0;
}

extern "C" void nc_backend_gpu_describe(int device, char *dst, size_t cap)
{
    nc_gpu_device_info info;
    if (!dst || !cap)
        return;
    if (nc_gpu_device_info_get(device, &info) < 0) {
        snprintf(dst, cap, "cuda:%d (%s)", device, nc_gpu_last_error());
        return;
    }
    snprintf(dst, cap, "%s (sm_%d%d, %d SMs, %.0f GiB)", info.name, info.sm_major,
             info.sm_minor, info.multiprocessors,
             (double)info.total_memory / (1024.0 * 1024.0 * 1024.0));
}

/* ---- the instance ---------------------------------------------------------------- */

typedef struct gpu_impl {
    uint32_t kind;
    int device;
    uint32_t n_inputs, n_classes;   /* n_inputs: floats of one view */
    uint32_t n_views;               /* nc_prep_views of the file's prep */
    uint32_t batch;                 /* images (a digit's views each one) the
                                       engines and the buffers below are made
                                       for: the caller's largest forward, at
                                       most NC_BACKEND_GPU_MAX_BATCH */
    nc_cnn_committee *cnn;          /* host columns (the engines' source) */
    nc_gpu_cnn **gcnn;              /* [n_cols]: one engine per column */
    uint32_t n_cols;
    float *col_out;                 /* [batch][n_classes], under lock:
                                       columns 2.. before they are summed */
    float *col_in;                  /* [batch][n_inputs], under lock: a
                                       W<w> column's own input (host-side
                                       nc_cnn_input_transform); NULL if none */
    float *view_out;                /* [batch][n_classes], under lock: the
                                       committee's answer on every view, before
                                       their mean; NULL without views */
    nc_gpu_neocog **gneo;           /* [n_neo]: one engine per committee member */
    uint32_t n_neo;
    uint32_t *view_mask;            /* [n_neo]: the views each member answers on */
    uint32_t n_scores;              /* what a committee's mean divides by */
    float *gather;                  /* [batch][n_inputs], under lock: a member's
                                       own views; NULL when every member takes all */
    nc_neocog_result *res;          /* [batch], under lock */
    nc_neocog_cascade cascade;      /* the committee's (neocog.h); on 0: none */
    /* the cascade's scratch (core/backend/cascade.h), under lock: */
    float *cas_in;                  /* [batch][n_inputs]: the views of the digits
                                       the first member left */
    float *cas_score;               /* [batch][n_classes]: its scores (each digit's
                                       [its views][n_classes]) */
    float *cas_view;                /* [batch][n_classes]: one views call's scores */
    float *cas_out;                 /* [batch][n_classes]: the others' answers */
    uint32_t *cas_digit;            /* [batch]: the digits still open */
    uint32_t *cas_image;            /* [batch]: their images in the forward (fill) */
    pthread_mutex_t lock;           /* one forward at a time on the engine */
    int failed;                     /* sticky: the engine said -EIO */
    size_t device_bytes;
} gpu_impl;

typedef struct gpu_worker {
    const gpu_impl *impl;
} gpu_worker;

/* Engines are made one at a time in the whole process, so the fall of free
 * device memory while one is made is that engine's (close enough for the
 * metrics page: other threads only run already-made engines meanwhile). */
static pthread_mutex_t make_lock = PTHREAD_MUTEX_INITIALIZER;

static int gpu_supports(uint32_t kind)
{
    return kind == NC_MF_KIND_CNN || kind == NC_MF_KIND_NEOCOG;
}

static void gpu_free(void *p)
{
    gpu_impl *impl = (gpu_impl *)p;
    if (!impl)
        return;
    for (uint32_t c = 0; impl->gcnn && c < impl->n_cols; c++)
        nc_gpu_cnn_free(impl->gcnn[c]);
    free(impl->gcnn);
    free(impl->col_out);
    free(impl->col_in);
    free(impl->view_out);
    for (uint32_t m = 0; impl->gneo && m < impl->n_neo; m++)
        nc_gpu_neocog_free(impl->gneo[m]);
    free(impl->gneo);
    free(impl->view_mask);
    free(impl->gather);
    free(impl->cas_in);
    free(impl->cas_score);
    free(impl->cas_view);
    free(impl->cas_out);
    free(impl->cas_digit);
    free(impl->cas_image);
    nc_cnn_committee_free(impl->cnn);
    free(impl->res);
    pthread_mutex_destroy(&impl->lock);
    free(impl);
}

/* Digit-like input for the neocognitron's tuner: n side x side images of
 * three strokes each, 3 cells wide, inside the central two thirds (where
 * NC_PREP_NEOCOG puts a digit), from a fixed seed.  Which kernel is faster
 * for a stage depends on how sparse its input is; blank images would make
 * the sparse kernels look free. */
static void draw_strokes(float *in, uint32_t n, uint32_t side)
{
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    const double lo = side / 6.0, span = side * 2.0 / 3.0;
    for (uint32_t i = 0; i < n; i++) {
        float *img = in + (size_t)i * side * side;
        for (int k = 0; k < 3; k++) {
            double pt[4];
            for (int j = 0; j < 4; j++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                pt[j] = lo + span * (double)(rng >> 11) / 9007199254740992.0;
            }
            for (int t = 0; t <= 64; t++) {
                double x = pt[0] + (pt[2] - pt[0]) * t / 64, y = pt[1] + (pt[3] - pt[1]) * t / 64;
                for (int dy = -1; dy <= 1; dy++)
                    for (int dx = -1; dx <= 1; dx++) {
                        long cx = (long)x + dx, cy = (long)y + dy;
                        if (cx >= 0 && cy >= 0 && cx < (long)side && cy < (long)side)
                            img[cy * side + cx] = 1.0f;
                    }
            }
        }
    }
}

/* Batches the neocognitron's kernels are chosen for at load: neocogd's
 * default largest batch. */
#define TUNE_BATCH 64u

/* Tune every batch-size bucket and capture every graph now, on blank
 * input, so no request pays for it.  The neocognitron engine first picks
 * its kernels per stage (GEMM path or sparse kernel, C kernel, AUTO's
 * threshold) by timing them on stroke images; its defaults suit the seed's
 * plane counts, not a trained file's (a 2851-plane US4 is faster on the
 * sparse kernel). */
static int warm(gpu_impl *impl)
{
    const uint32_t maxb = impl->batch;
    float *in = (float *)calloc((size_t)maxb * impl->n_inputs, sizeof(float));
    float *out = (float *)calloc((size_t)maxb * impl->n_classes, sizeof(float));
    int err = in && out ? 0 : -ENOMEM;
    if (impl->gcnn) {
        for (uint32_t c = 0; c < impl->n_cols; c++) {
            uint32_t n = 1;
            for (; !err && n <= NC_GPU_CNN_GRAPH_MAX && n <= maxb; n++)
                err = nc_gpu_cnn_forward(impl->gcnn[c], in, n, out);
            for (n = 2 * NC_GPU_CNN_GRAPH_MAX; !err && n <= maxb; n *= 2)
                err = nc_gpu_cnn_forward(impl->gcnn[c], in, n, out);
            if (!err && maxb > NC_GPU_CNN_GRAPH_MAX && n / 2 != maxb)
                err = nc_gpu_cnn_forward(impl->gcnn[c], in, maxb, out);  /* its bucket */
        }
        if (err)
            fail(err, "cuda:%d: CNN warm-up", impl->device);
    } else {
        uint32_t side = 1;
        while (side * side < impl->n_inputs)
            side++;
        for (uint32_t m = 0; !err && m < impl->n_neo; m++) {
            nc_gpu_neocog *g = impl->gneo[m];
            uint32_t tn = TUNE_BATCH < nc_gpu_neocog_get_chunk(g)
                              ? TUNE_BATCH : nc_gpu_neocog_get_chunk(g);
            if (side * side == impl->n_inputs) {
                draw_strokes(in, tn, side);
                err = nc_gpu_neocog_forward(g, in, tn, impl->res);
                if (!err)
                    err = nc_gpu_neocog_tune(g, NC_GPU_NEOCOG_AUTO, tn);
                memset(in, 0, (size_t)tn * impl->n_inputs * sizeof *in);
            }
            for (uint32_t n = 1; !err && n <= NC_GPU_NEOCOG_GRAPH_MAX && n <= maxb; n++)
                err = nc_gpu_neocog_forward(g, in, n, impl->res);
            if (!err)
                err = nc_gpu_neocog_forward(g, in, maxb, impl->res);
        }
        if (err)
            fail(err, "cuda:%d: neocognitron warm-up", impl->device);
    }
    free(in);
    free(out);
    return err;
}

static int make_engine(gpu_impl *impl, const nc_neocog_committee *neo,
                       nc_neocog_iv *const *iv)
{
    const int dev = impl->device;
    /* cudaFree(0) makes the context now, so its own memory is not counted
     * as the engine's below. */
    cudaError_t ce = cudaSetDevice(dev);
    if (ce == cudaSuccess)
        ce = cudaFree(0);
    if (ce != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why_buf, sizeof why_buf, "cuda:%d: cannot open the device: %s", dev,
                 cudaGetErrorString(ce));
        return -ENODEV;
    }
    size_t free0 = 0, free1 = 0, total = 0;
    int have_mem = cudaMemGetInfo(&free0, &total) == cudaSuccess;
    int err;
    if (impl->kind == NC_MF_KIND_CNN) {
        const uint32_t n = impl->cnn->n_columns;
        impl->gcnn = (nc_gpu_cnn **)calloc(n, sizeof *impl->gcnn);
        if (!impl->gcnn)
            return -ENOMEM;
        impl->n_cols = n;
        for (uint32_t c = 0; c < n; c++) {
            err = nc_gpu_cnn_new(impl->cnn->column[c], dev, impl->batch, &impl->gcnn[c]);
            if (err)
                return fail(err, "cuda:%d: cannot make the CNN engine of column %u of %u",
                            dev, c + 1, n);
        }
    } else {
        const uint32_t n = neo->n_members, all = (1u << impl->n_views) - 1u;
        impl->gneo = (nc_gpu_neocog **)calloc(n, sizeof *impl->gneo);
        impl->view_mask = (uint32_t *)malloc(n * sizeof *impl->view_mask);
        if (!impl->gneo || !impl->view_mask)
            return -ENOMEM;
        impl->n_neo = n;
        impl->n_scores = neo->n_scores;
        memcpy(impl->view_mask, neo->view_mask, n * sizeof *impl->view_mask);
        /* a member on some views only, or a cascade's stage (each runs on a
         * list of digits), gathers its images */
        for (uint32_t m = 0; m < n && !impl->gather; m++)
            if ((impl->view_mask[m] != all || neo->cascade.on) &&
                !(impl->gather = (float *)malloc((size_t)impl->batch * impl->n_inputs *
                                                 sizeof(float))))
                return -ENOMEM;
        impl->cascade = neo->cascade;
        if (impl->cascade.on) {
            const size_t B = impl->batch;
            impl->cas_in = (float *)malloc(B * impl->n_inputs * sizeof(float));
            impl->cas_score = (float *)malloc(B * impl->n_classes * sizeof(float));
            impl->cas_view = (float *)malloc(B * impl->n_classes * sizeof(float));
            impl->cas_out = (float *)malloc(B * impl->n_classes * sizeof(float));
            impl->cas_digit = (uint32_t *)malloc(B * sizeof(uint32_t));
            impl->cas_image = (uint32_t *)malloc(B * sizeof(uint32_t));
            if (!impl->cas_in || !impl->cas_score || !impl->cas_view || !impl->cas_out ||
                !impl->cas_digit || !impl->cas_image)
                return -ENOMEM;
        }
        for (uint32_t m = 0; m < n; m++) {
            err = nc_gpu_neocog_new(neo->member[m], dev, impl->batch, &impl->gneo[m]);
            if (err)
                return fail(err, "cuda:%d: cannot make the neocognitron engine of member "
                            "%u of %u", dev, m + 1, n);
            if (iv[m] && (err = nc_gpu_neocog_set_iv(impl->gneo[m], neo->member[m], iv[m])))
                return fail(err, "cuda:%d: interpolating-vector classifier of member %u",
                            dev, m + 1);
        }
    }
    if ((err = warm(impl)))
        return err;
    if (have_mem && cudaMemGetInfo(&free1, &total) == cudaSuccess && free1 < free0)
        impl->device_bytes = free0 - free1;
    return 0;
}

static int gpu_init(const uint8_t *buf, size_t len, int device, uint32_t max_batch,
                    void **ret_impl, uint32_t *ret_kind, nc_model_info *ret_info)
{
    why_buf[0] = '\0';
    if (!ret_impl || !ret_kind || !ret_info || (!buf && len))
        return -EINVAL;
    int n_dev = nc_backend_gpu_device_count();
    if (device < 0 || device >= n_dev) {
        snprintf(why_buf, sizeof why_buf, "cuda:%d: no such device (%d visible)", device,
                 n_dev);
        return -ENODEV;
    }
    nc_mf_reader *r = NULL;
    int err = nc_mf_open(buf, len, &r);
    if (err)
        return fail(err, "model file");
    uint32_t kind = nc_mf_kind_of(r);
    nc_mf_close(r);
    if (!gpu_supports(kind))
        return -ENOTSUP;
    gpu_impl *impl = (gpu_impl *)calloc(1, sizeof *impl);
    if (!impl)
        return -ENOMEM;
    pthread_mutex_init(&impl->lock, NULL);
    impl->kind = kind;
    impl->device = device;
    nc_model_info info;
    nc_neocog_committee *neo = NULL;
    nc_neocog_iv **iv = NULL;
    if (kind == NC_MF_KIND_CNN) {
        if ((err = nc_cnn_committee_load(buf, len, &impl->cnn, &info))) {
            fail(err, "CNN model file");
            goto out;
        }
        impl->n_inputs = impl->cnn->n_inputs;
        impl->n_classes = impl->cnn->n_outputs;
    } else {
        /* as the CPU table: a malformed classifier mark fails the file */
        if ((err = nc_neocog_committee_load(buf, len, &neo, &info))) {
            fail(err, "neocognitron model file");
            goto out;
        }
        impl->n_inputs = neo->member[0]->arch.in_size * neo->member[0]->arch.in_size;
        impl->n_classes = neo->member[0]->arch.n_classes;
    }
    /* As the CPU table: the stored preprocessing must give the net's input. */
    impl->n_views = nc_prep_views(&info.prep);
    if (nc_prep_check(&info.prep) || nc_prep_view_len(&info.prep) != impl->n_inputs ||
        info.n_classes != impl->n_classes || impl->n_classes > NC_MF_MAX_CLASSES ||
        (neo && impl->n_classes > NC_NEOCOG_MAX_CLASSES)) {
        err = -EBADMSG;
        snprintf(why_buf, sizeof why_buf, "model file: prep or classes disagree with the net");
        goto out;
    }
    /* every view of the caller's largest batch in one pass, so its buffers
     * and the engines' device memory are no bigger than it needs */
    impl->batch = NC_BACKEND_GPU_MAX_BATCH;
    if (max_batch && max_batch < NC_BACKEND_GPU_MAX_BATCH / impl->n_views)
        impl->batch = max_batch * impl->n_views;
    if (!(impl->res = (nc_neocog_result *)calloc(impl->batch, sizeof *impl->res))) {
        err = -ENOMEM;
        goto out;
    }
    if (impl->cnn) {
        const size_t B = impl->batch;
        int need_in = 0;
        for (uint32_t c = 0; c < impl->cnn->n_columns; c++)
            need_in |= impl->cnn->column[c]->width_norm != 0;
        if ((impl->cnn->n_columns > 1 &&
             !(impl->col_out = (float *)malloc(B * impl->n_classes * sizeof(float)))) ||
            (need_in && !(impl->col_in = (float *)malloc(B * impl->n_inputs * sizeof(float)))) ||
            (impl->n_views > 1 &&
             !(impl->view_out = (float *)malloc(B * impl->n_classes * sizeof(float))))) {
            err = -ENOMEM;
            goto out;
        }
    }
    if (neo && !(iv = (nc_neocog_iv **)calloc(neo->n_members, sizeof *iv))) {
        err = -ENOMEM;
        goto out;
    }
    for (uint32_t m = 0; neo && m < neo->n_members; m++)
        if (neo->iv_top_t[m] &&
            (err = nc_neocog_iv_new(neo->member[m], neo->iv_top_t[m], &iv[m]))) {
            err = err == -ENOMEM ? err : -EBADMSG;
            fail(err, "interpolating-vector classifier of member %u", m + 1);
            goto out;
        }
    pthread_mutex_lock(&make_lock);
    err = make_engine(impl, neo, iv);
    pthread_mutex_unlock(&make_lock);
out:
    /* the engines keep no pointer into the host nets or classifiers */
    for (uint32_t m = 0; iv && m < neo->n_members; m++)
        nc_neocog_iv_free(iv[m]);
    free(iv);
    nc_neocog_committee_free(neo);
    if (err) {
        gpu_free(impl);
        return err;
    }
    *ret_impl = impl;
    *ret_kind = kind;
    *ret_info = info;
    return 0;
}

static void gpu_worker_free(void *p)
{
    free(p);
}

static int gpu_worker_new(void *p, uint32_t max_batch, void **ret_worker)
{
    const gpu_impl *impl = (const gpu_impl *)p;
    if (!impl || !ret_worker || max_batch == 0)
        return -EINVAL;
    gpu_worker *w = (gpu_worker *)calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->impl = impl;
    *ret_worker = w;
    return 0;
}

/* A committee's mean over m <= impl->batch images: summed in
 * column order, then divided, as core's nc_cnn_committee_run.  Every column
 * is started before any is waited for, so their engines (a stream each) run
 * side by side on the device: a digit waits for the slowest column, not for
 * the sum of them.  Under impl->lock (or before the instance is shared). */
static int committee_forward(gpu_impl *impl, const float *x, uint32_t m, float *y)
{
    const size_t len = (size_t)m * impl->n_classes;
    uint32_t started = 0, bad = 0;      /* bad: the first column that failed */
    int err = 0;
    for (; started < impl->n_cols; started++) {
        const nc_cnn *net = impl->cnn->column[started];
        const float *xc = x;
        if (net->width_norm) {      /* the column's own input: as core's run */
            err = nc_cnn_input_transform(net, x, m, impl->col_in);
            xc = impl->col_in;      /* the engine copies it at once: reusable */
        }
        if (!err)
            err = nc_gpu_cnn_forward_start(impl->gcnn[started], xc, m);
        if (err) {
            bad = started;
            break;
        }
    }
    /* wait for every started column, even after a failure, so that none is
       left in flight; sum the outputs in column order */
    for (uint32_t c = 0; c < started; c++) {
        const int e = nc_gpu_cnn_forward_finish(impl->gcnn[c], err ? NULL : c ? impl->col_out : y);
        if (e && !err) {
            err = e;
            bad = c;
        }
        if (!err && c)
            for (size_t k = 0; k < len; k++)
                y[k] += impl->col_out[k];
    }
    if (err)
        return fail(err, "cuda:%d: CNN forward of %u images (column %u of %u)", impl->device, m,
                    bad + 1, impl->n_cols);
    if (impl->n_cols > 1)
        for (size_t k = 0; k < len; k++)
            y[k] /= (float)impl->n_cols;
    return 0;
}

/* The images of the views in mask of m digits of x (impl->n_views views
 * each): digit k is digit[k] of x (digit NULL: digit k).  x itself when
 * those are every view of digits 0..m-1, else those views gathered into
 * impl->gather (the engine copies its input when it starts, so the next
 * member may reuse the buffer).  *ret_n: how many. */
static const float *views_input(gpu_impl *impl, uint32_t mask, const float *x,
                                const uint32_t *digit, uint32_t m, uint32_t *ret_n)
{
    const uint32_t V = impl->n_views;
    const size_t len = impl->n_inputs;
    if (mask == (1u << V) - 1u && !digit) {
        *ret_n = m * V;
        return x;
    }
    uint32_t n = 0;
    for (uint32_t k = 0; k < m; k++) {
        const size_t i = digit ? digit[k] : k;
        for (uint32_t v = 0; v < V; v++)
            if (mask >> v & 1u)
                memcpy(impl->gather + (size_t)n++ * len, x + (i * V + v) * len,
                       len * sizeof(float));
    }
    *ret_n = n;
    return impl->gather;
}

/* The images member g runs: its own views (views_input). */
static const float *member_input(gpu_impl *impl, uint32_t g, const float *x, uint32_t m,
                                 uint32_t *ret_n)
{
    return views_input(impl, impl->view_mask[g], x, NULL, m, ret_n);
}

/* A neocognitron committee's mean over m digits of impl->n_views views each
 * (m x views <= impl->batch images).  Every member's engine is
 * started on its views of every digit before any is waited for, so the
 * members (each on its own streams) share the device; the raw scores are
 * then added in member order, each member's views in view order, and
 * divided, as core's engine does (backend.h: nc_backend_member_add /
 * _mean).  Under impl->lock. */
static int neocog_members_forward_but(gpu_impl *impl, const float *x, uint32_t m, float *y,
                                      uint32_t skip, const float *skip_score);

static int neocog_members_forward(gpu_impl *impl, const float *x, uint32_t m, float *y)
{
    return neocog_members_forward_but(impl, x, m, y, UINT32_MAX, NULL);
}

/* The same, but member skip (UINT32_MAX: none) is not run: its scores are
 * skip_score[m][its views][n_classes], added at its place in member order,
 * so the sum is the one every member run would give. */
static int neocog_members_forward_but(gpu_impl *impl, const float *x, uint32_t m, float *y,
                                      uint32_t skip, const float *skip_score)
{
    const uint32_t K = impl->n_classes;
    uint32_t started = 0, bad = 0;      /* bad: the first member that failed, 1-based */
    uint32_t images[NC_NEOCOG_MAX_MEMBERS];
    int err = 0;
    for (; started < impl->n_neo; started++) {
        if (started == skip) {
            images[started] = m * (uint32_t)__builtin_popcount(impl->view_mask[skip]);
            continue;
        }
        const float *in = member_input(impl, started, x, m, &images[started]);
        if ((err = nc_gpu_neocog_forward_start(impl->gneo[started], in, images[started]))) {
            bad = started + 1;
            break;
        }
    }
    memset(y, 0, (size_t)m * K * sizeof *y);
    for (uint32_t g = 0; g < started; g++) {
        /* every started engine is finished, so none is left mid-forward */
        const int e = g == skip ? 0
                                : nc_gpu_neocog_forward_finish(impl->gneo[g], images[g],
                                                               impl->res);
        if (e && !err) {
            err = e;
            bad = g + 1;
        }
        const uint32_t per = images[g] / m;     /* this member's views a digit */
        for (uint32_t k = 0; !err && k < m; k++)
            for (uint32_t v = 0; v < per; v++)
                nc_backend_member_add(y + (size_t)k * K,
                                      g == skip ? skip_score + ((size_t)k * per + v) * K
                                                : impl->res[k * per + v].score,
                                      K);
    }
    if (err)
        return fail(err, "cuda:%d: neocognitron forward of %u digits (member %u of %u)",
                    impl->device, m, bad, impl->n_neo);
    for (uint32_t k = 0; k < m; k++)
        nc_backend_member_mean(y + (size_t)k * K, impl->n_scores, K);
    return 0;
}

/* The cascade's ops (core/backend/cascade.h) on the engines, over a slice x
 * of digits (impl->n_views views each; all of them fit the engines' batch,
 * so a call takes the whole slice). */
typedef struct gpu_cascade_ctx {
    gpu_impl *impl;
    const float *x;
} gpu_cascade_ctx;

static int gpu_cascade_views(void *ctx, uint32_t m, uint32_t mask, const uint32_t *digit,
                             uint32_t d, float *dst)
{
    const gpu_cascade_ctx *c = (const gpu_cascade_ctx *)ctx;
    gpu_impl *impl = c->impl;
    const uint32_t K = impl->n_classes;
    uint32_t images;
    const float *in = views_input(impl, mask, c->x, digit, d, &images);
    int err = nc_gpu_neocog_forward(impl->gneo[m], in, images, impl->res);
    if (err)
        return fail(err, "cuda:%d: neocognitron forward of %u digits (cascade member %u, "
                    "views 0x%x)", impl->device, d, m + 1, mask);
    for (uint32_t p = 0; p < images; p++)
        memcpy(dst + (size_t)p * K, impl->res[p].score, K * sizeof(float));
    return 0;
}

/* The listed digits' views packed into impl->cas_in, then every member but
 * skip on them (neocog_members_forward_but). */
static int gpu_cascade_others(void *ctx, uint32_t skip, const uint32_t *digit, uint32_t d,
                              const float *skip_score, float *out)
{
    const gpu_cascade_ctx *c = (const gpu_cascade_ctx *)ctx;
    gpu_impl *impl = c->impl;
    const size_t len = (size_t)impl->n_views * impl->n_inputs;     /* floats of one digit */
    for (uint32_t k = 0; k < d; k++)
        memcpy(impl->cas_in + k * len, c->x + digit[k] * len, len * sizeof(float));
    return neocog_members_forward_but(impl, impl->cas_in, d, out, skip, skip_score);
}

/* A committee with a cascade (neocog.h), m digits as above: the stages are
 * core's (nc_backend_cascade_run), the members run on the engines.  Under
 * impl->lock. */
static int neocog_cascade_forward(gpu_impl *impl, const float *x, uint32_t m, float *y,
                                  uint32_t i0, const nc_backend_fill *fill)
{
    gpu_cascade_ctx c = { impl, x };
    nc_backend_cascade_ops ops = {};
    ops.ctx = &c;
    ops.views = gpu_cascade_views;
    ops.others = gpu_cascade_others;
    ops.slice = m;
    ops.fill = fill;
    ops.image0 = i0;      /* digit 0 of x is image i0 of the forward */
    nc_backend_cascade_buf buf = {};
    buf.digit = impl->cas_digit;
    buf.first = impl->cas_score;
    buf.score = impl->cas_view;
    buf.out = impl->cas_out;
    buf.image = impl->cas_image;
    return nc_backend_cascade_run(&impl->cascade, impl->view_mask, impl->n_neo, impl->n_classes,
                                  m, &ops, &buf, y);
}

/* Under impl->lock.  fill (NULL: none) only with a cascade. */
static int forward_locked(gpu_impl *impl, const float *in, uint32_t n, float *out,
                          const nc_backend_fill *fill)
{
    /* digits per slice: all their views fit the engines' batch */
    const uint32_t step = impl->batch / impl->n_views;
    for (uint32_t i = 0; i < n; i += step) {
        uint32_t m = n - i < step ? n - i : step;
        const float *x = in + (size_t)i * impl->n_views * impl->n_inputs;
        float *y = out + (size_t)i * impl->n_classes;
        int err;
        if (impl->gcnn && impl->n_views > 1) {
            if ((err = committee_forward(impl, x, m * impl->n_views, impl->view_out)))
                return err;
            nc_cnn_views_mean(impl->view_out, m, impl->n_views, impl->n_classes, y);
        } else if (impl->gcnn) {
            if ((err = committee_forward(impl, x, m, y)))
                return err;
        } else if (impl->cascade.on) {
            if ((err = neocog_cascade_forward(impl, x, m, y, i, fill)))
                return err;
        } else {
            if ((err = neocog_members_forward(impl, x, m, y)))
                return err;
        }
    }
    return 0;
}

static int forward_args_bad(const gpu_impl *impl, const gpu_worker *w, const float *in,
                            uint32_t n, const float *out)
{
    return !impl || !w || w->impl != impl || (!in && n) || (!out && n);
}

/* The forward with impl->lock held (taken by the caller, released by it). */
static int forward_held(gpu_impl *impl, const float *in, uint32_t n, float *out,
                        const nc_backend_fill *fill)
{
    int err;
    if (impl->failed) {
        err = -EIO;
        snprintf(why_buf, sizeof why_buf, "cuda:%d: the engine failed earlier", impl->device);
    } else if ((err = forward_locked(impl, in, n, out, fill)) == -EIO) {
        impl->failed = 1;
    }
    return err;
}

static int gpu_forward(void *p, void *wp, const float *in, uint32_t n, float *out)
{
    gpu_impl *impl = (gpu_impl *)p;
    if (forward_args_bad(impl, (const gpu_worker *)wp, in, n, out))
        return -EINVAL;
    if (n == 0)
        return 0;
    pthread_mutex_lock(&impl->lock);
    const int err = forward_held(impl, in, n, out, NULL);
    pthread_mutex_unlock(&impl->lock);
    return err;
}

/* A cascade fills its stages' views only; anything else every view first. */
static int gpu_forward_fill(void *p, void *wp, const float *in, uint32_t n,
                            const nc_backend_fill *fill, float *out)
{
    gpu_impl *impl = (gpu_impl *)p;
    if (!impl || !fill || !fill->fill)
        return -EINVAL;
    if (impl->gcnn || !impl->cascade.on) {
        int err = nc_backend_fill_all(fill, (1u << impl->n_views) - 1u, n);
        return err ? err : gpu_forward(p, wp, in, n, out);
    }
    if (forward_args_bad(impl, (const gpu_worker *)wp, in, n, out))
        return -EINVAL;
    if (n == 0)
        return 0;
    /* The first stage's views of every digit are prepared here, before the
     * engine's lock, so that other threads' batches run meanwhile; under
     * the lock only the later stages' fills run (a few digits).  When the
     * engine is busy with another thread's batch, the wait for it costs
     * nothing: every view is prepared meanwhile (the fill prepares a view
     * once), so no fill runs under the lock.  The answers are the same
     * either way. */
    const nc_neocog_cascade *cas = &impl->cascade;
    int err = nc_backend_fill_all(fill, cas->view_on ? 1u << cas->view
                                                     : impl->view_mask[cas->first], n);
    if (err)
        return err;
    if (pthread_mutex_trylock(&impl->lock)) {
        if ((err = nc_backend_fill_all(fill, (1u << impl->n_views) - 1u, n)))
            return err;
        pthread_mutex_lock(&impl->lock);
    }
    err = forward_held(impl, in, n, out, fill);
    pthread_mutex_unlock(&impl->lock);
    return err;
}

static size_t gpu_device_bytes(void *p)
{
    const gpu_impl *impl = (const gpu_impl *)p;
    return impl ? impl->device_bytes : 0;
}

extern "C" const nc_backend_ops nc_backend_gpu = {
    /* .name = */ "cuda",
    /* .init = */ gpu_init,
    /* .supports = */ gpu_supports,
    /* .worker_new = */ gpu_worker_new,
    /* .worker_free = */ gpu_worker_free,
    /* .forward = */ gpu_forward,
    /* .forward_fill = */ gpu_forward_fill,
    /* .free = */ gpu_free,
    /* .device_bytes = */ gpu_device_bytes,
};

/* core/cnn/cnn_arch.c — the CNN notation: parser, formatter, allocation,
 * initialisation, connection tables and working memory.
 *
 * Layer: core.  The string may come from a model file, so every number is
 * bounded and every size is computed in 64 bits and checked against the caps
 * in cnn.h before anything is allocated. */
#include "cnn_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- parsing ------------------------------------------------------------- */

/* One decimal number, no sign, no leading zero; -ERANGE past UINT32_MAX. */
static int parse_num(const char **p, uint32_t *ret)
{
    const char *s = *p;
    if (*s < '0' || *s > '9')
        return -EINVAL;
    if (s[0] == '0' && s[1] >= '0' && s[1] <= '9')
        return -EINVAL;
    uint64_t v = 0;
    int digits = 0;
    while (*s >= '0' && *s <= '9') {
        if (++digits > 10)
            return -ERANGE;
        v = v * 10 + (uint64_t)(*s - '0');
        s++;
    }
    if (v > UINT32_MAX)
        return -ERANGE;
    *ret = (uint32_t)v;
    *p = s;
    return 0;
}

/* NUM or NUMxNUM: a (width, height) pair. */
static int parse_pair(const char **p, uint32_t *ret_x, uint32_t *ret_y)
{
    uint32_t x, y;
    int err = parse_num(p, &x);
    if (err)
        return err;
    y = x;
    if (**p == 'x') {
        (*p)++;
        if ((err = parse_num(p, &y)))
            return err;
    }
    *ret_x = x;
    *ret_y = y;
    return 0;
}

static int at_token_end(const char *p)
{
    return *p == '-' || *p == '\0';
}

/* One layer token into L (kind and hyper-parameters only). */
static int parse_layer(const char **p, nc_cnn_layer *L)
{
    int err;
    memset(L, 0, sizeof *L);
    if ((*p)[0] == 'M' && (*p)[1] == 'P') {
        *p += 2;
        L->kind = NC_CNN_KIND_POOL;
        if ((err = parse_pair(p, &L->kernel_x, &L->kernel_y)))
            return err;
    } else {
        uint32_t count;
        if ((err = parse_num(p, &count)))
            return err;
        L->maps = count;
        if (**p == 'N') {
            (*p)++;
            L->kind = NC_CNN_KIND_FULL;
        } else if (**p == 'C') {
            (*p)++;
            L->kind = NC_CNN_KIND_CONV;
            L->table_percent = 100;
            if ((err = parse_pair(p, &L->kernel_x, &L->kernel_y)))
                return err;
            if (**p == 'S') {
                (*p)++;
                if ((err = parse_pair(p, &L->skip_x, &L->skip_y)))
                    return err;
            }
            if (**p == 'R') {
                (*p)++;
                if ((err = parse_num(p, &L->table_percent)))
                    return err;
                if (L->table_percent < 1 || L->table_percent > 100)
                    return -EINVAL;
                if (**p == ':') {
                    (*p)++;
                    if ((err = parse_num(p, &L->table_seed)))
                        return err;
                }
            }
        } else {
            return -EINVAL;
        }
        if (!strncmp(*p, "bn", 2)) {
            *p += 2;
            L->norm = 1;
        }
        if (!strncmp(*p, "relu", 4)) {
            *p += 4;
            L->act = NC_CNN_ACT_RELU;
        }
    }
    return at_token_end(*p) ? 0 : -EINVAL;
}

/* Fill in shapes and sizes of layers[1..n-1] from layers[0] and check them
 * all: -EINVAL for inconsistent, -ERANGE for too large. */
static int shape_layers(nc_cnn *net)
{
    uint64_t params = 0, tables = 0;
    uint32_t max_units = 0;
    nc_cnn_layer *in = &net->layers[0];
    if (in->maps < 1 || in->height < 1 || in->width < 1)
        return -EINVAL;
    if (in->maps > NC_CNN_MAX_MAPS || in->height > NC_CNN_MAX_DIM ||
        in->width > NC_CNN_MAX_DIM)
        return -ERANGE;
    uint64_t units = (uint64_t)in->maps * in->height * in->width;
    if (units > NC_CNN_MAX_UNITS)
        return -ERANGE;
    in->n_out = (uint32_t)units;
    max_units = in->n_out;

    for (uint32_t l = 1; l < net->n_layers; l++) {
        nc_cnn_layer *L = &net->layers[l];
        const nc_cnn_layer *P = &net->layers[l - 1];
        L->n_in = P->n_out;
        switch (L->kind) {
        case NC_CNN_KIND_CONV: {
            if (P->kind == NC_CNN_KIND_FULL)
                return -EINVAL;
            if (L->maps < 1 || L->kernel_x < 1 || L->kernel_y < 1)
                return -EINVAL;
            if (L->maps > NC_CNN_MAX_MAPS)
                return -ERANGE;
            if (L->kernel_x > P->width || L->kernel_y > P->height)
                return -EINVAL;
            if (L->skip_x >= NC_CNN_MAX_DIM || L->skip_y >= NC_CNN_MAX_DIM)
                return -EINVAL;     /* a step past any input */
            uint32_t step_x = L->skip_x + 1, step_y = L->skip_y + 1;
            /* seed eq. 1 with step s + 1; the kernel must land exactly on
               the last column and row */
            if ((P->width - L->kernel_x) % step_x || (P->height - L->kernel_y) % step_y)
                return -EINVAL;
            L->width = (P->width - L->kernel_x) / step_x + 1;
            L->height = (P->height - L->kernel_y) / step_y + 1;
            uint64_t fan_in = (uint64_t)P->maps * L->kernel_x * L->kernel_y;
            uint64_t out = (uint64_t)L->maps * L->height * L->width;
            uint64_t unroll = fan_in * L->height * L->width;
            if (out > NC_CNN_MAX_UNITS || unroll > NC_CNN_MAX_UNROLL ||
                fan_in > NC_CNN_MAX_PARAMS)
                return -ERANGE;
            L->fan_in = (uint32_t)fan_in;
            L->n_out = (uint32_t)out;
            L->n_weights = (size_t)((uint64_t)L->maps * fan_in);
            params += (uint64_t)L->maps * fan_in + L->maps * (L->norm ? 5u : 1u);
            tables += (uint64_t)L->maps * P->maps;
            break;
        }
        case NC_CNN_KIND_POOL:
            if (P->kind == NC_CNN_KIND_FULL)
                return -EINVAL;
            if (L->kernel_x < 1 || L->kernel_y < 1)
                return -EINVAL;
            if (P->width % L->kernel_x || P->height % L->kernel_y)
                return -EINVAL;
            L->maps = P->maps;
            L->width = P->width / L->kernel_x;
            L->height = P->height / L->kernel_y;
            L->n_out = L->maps * L->height * L->width;
            break;
        case NC_CNN_KIND_FULL:
            if (L->maps < 1)
                return -EINVAL;
            if (L->maps > NC_CNN_MAX_UNITS)
                return -ERANGE;
            L->height = L->width = 1;
            L->n_out = L->maps;
            L->fan_in = L->n_in;
            L->n_weights = (size_t)((uint64_t)L->maps * L->n_in);
            params += (uint64_t)L->maps * L->n_in + (uint64_t)L->maps * (L->norm ? 5u : 1u);
            break;
        default:
            return -EINVAL;
        }
        if (params > NC_CNN_MAX_PARAMS)
            return -ERANGE;
        if (L->n_out > max_units)
            max_units = L->n_out;
    }
    if (net->layers[net->n_layers - 1].kind != NC_CNN_KIND_FULL)
        return -EINVAL;
    net->n_params = (size_t)params;
    net->n_tables = (size_t)tables;
    net->n_inputs = in->n_out;
    net->n_outputs = net->layers[net->n_layers - 1].n_out;
    net->max_units = max_units;
    return 0;
}

/* Parse the whole string into net's layer descriptions (no allocation). */
static int parse_arch(const char *arch, nc_cnn *net)
{
    if (!arch)
        return -EINVAL;
    size_t len = strnlen(arch, NC_CNN_ARCH_MAX);
    if (len >= NC_CNN_ARCH_MAX)
        return -ERANGE;
    const char *p = arch;
    int err;
    nc_cnn_layer *in = &net->layers[0];
    memset(in, 0, sizeof *in);
    in->kind = NC_CNN_KIND_INPUT;
    if ((err = parse_num(&p, &in->maps)) || *p++ != 'x')
        return err ? err : -EINVAL;
    if ((err = parse_num(&p, &in->height)) || *p++ != 'x')
        return err ? err : -EINVAL;
    if ((err = parse_num(&p, &in->width)))
        return err;
    net->width_norm = 0;
    if (*p == 'W') {            /* the column's own width normalisation */
        p++;
        if ((err = parse_num(&p, &net->width_norm)))
            return err;
        if (in->maps != 1 || net->width_norm < 1 || net->width_norm > in->width)
            return -EINVAL;
    }
    if (!at_token_end(p))
        return -EINVAL;
    net->n_layers = 1;
    while (*p == '-') {
        p++;
        if (net->n_layers >= NC_CNN_MAX_LAYERS)
            return -ERANGE;
        if ((err = parse_layer(&p, &net->layers[net->n_layers])))
            return err;
        net->n_layers++;
    }
    if (*p != '\0' || net->n_layers < 2)
        return -EINVAL;
    return shape_layers(net);
}

/* ---- connection tables --------------------------------------------------- */

/* Layer l's table from its notation: full, or for R<p>:<seed> each output
 * map wired to k = round(p% of in_maps) (at least 1) input maps, chosen by
 * selection sampling (Knuth's algorithm S) so every subset of size k is
 * equally likely and no scratch memory is needed. */
static void fill_table(const nc_cnn *net, uint32_t l)
{
    const nc_cnn_layer *L = &net->layers[l];
    uint32_t in_maps = net->layers[l - 1].maps;
    uint8_t *t = L->table;
    if (L->table_percent >= 100) {
        memset(t, 1, (size_t)L->maps * in_maps);
        return;
    }
    uint32_t k = (uint32_t)(((uint64_t)L->table_percent * in_maps + 50) / 100);
    if (k < 1)
        k = 1;
    uint64_t s = (uint64_t)L->table_seed << 32 ^ (uint64_t)l * 0x100000001b3ull;
    for (uint32_t m = 0; m < L->maps; m++) {
        uint32_t chosen = 0;
        for (uint32_t c = 0; c < in_maps; c++) {
            uint32_t left = in_maps - c;
            uint64_t r = nc_cnn_splitmix64(&s) % left;
            int pick = r < (uint64_t)(k - chosen);
            t[(size_t)m * in_maps + c] = (uint8_t)pick;
            chosen += (uint32_t)pick;
        }
    }
}

/* Zero the kernels of the pairs that layer l's table cuts. */
void nc_cnn_mask_kernels(nc_cnn *net, uint32_t l)
{
    nc_cnn_layer *L = &net->layers[l];
    uint32_t in_maps = net->layers[l - 1].maps;
    size_t ksize = (size_t)L->kernel_x * L->kernel_y;
    for (uint32_t m = 0; m < L->maps; m++)
        for (uint32_t c = 0; c < in_maps; c++)
            if (!L->table[(size_t)m * in_maps + c])
                memset(L->weights + ((size_t)m * in_maps + c) * ksize, 0,
                       ksize * sizeof(float));
}

/* ---- building ------------------------------------------------------------ */

/* gamma 1, beta 0, mean 0, var 1 in every normalised layer: the identity
 * standardisation, where training starts. */
static void norm_defaults(nc_cnn *net)
{
    for (uint32_t l = 1; l < net->n_layers; l++) {
        nc_cnn_layer *L = &net->layers[l];
        if (!L->norm)
            continue;
        for (uint32_t m = 0; m < L->maps; m++) {
            L->gamma[m] = 1.0f;
            L->beta[m] = 0.0f;
            L->mean[m] = 0.0f;
            L->var[m] = 1.0f;
        }
    }
}

uint32_t nc_cnn_norm_layers(const nc_cnn *net)
{
    uint32_t k = 0;
    for (uint32_t l = 1; net && l < net->n_layers; l++)
        k += net->layers[l].norm != 0;
    return k;
}

int nc_cnn_new(const char *arch, nc_cnn **ret_net)
{
    if (!ret_net)
        return -EINVAL;
    nc_cnn *net = calloc(1, sizeof *net);
    if (!net)
        return -ENOMEM;
    int err = parse_arch(arch, net);
    if (err)
        goto fail;
    net->params = calloc(net->n_params, sizeof(float));
    net->tables = calloc(net->n_tables ? net->n_tables : 1, 1);
    if (!net->params || !net->tables) {
        err = -ENOMEM;
        goto fail;
    }
    /* point every layer into the two blocks (llm.c's malloc_and_point) */
    float *pp = net->params;
    uint8_t *tp = net->tables;
    for (uint32_t l = 1; l < net->n_layers; l++) {
        nc_cnn_layer *L = &net->layers[l];
        if (L->kind == NC_CNN_KIND_POOL)
            continue;
        L->weights = pp;
        pp += L->n_weights;
        L->bias = pp;
        pp += L->maps;
        if (L->norm) {
            L->gamma = pp;
            L->beta = pp + L->maps;
            L->mean = pp + 2 * (size_t)L->maps;
            L->var = pp + 3 * (size_t)L->maps;
            pp += 4 * (size_t)L->maps;
        }
        if (L->kind == NC_CNN_KIND_CONV) {
            L->table = tp;
            tp += (size_t)L->maps * net->layers[l - 1].maps;
            fill_table(net, l);
        }
    }
    norm_defaults(net);
    *ret_net = net;
    return 0;
fail:
    nc_cnn_free(net);
    return err;
}

void nc_cnn_free(nc_cnn *net)
{
    if (!net)
        return;
    free(net->params);
    free(net->tables);
    free(net);
}

int nc_cnn_arch_format(const nc_cnn *net, char *dst, size_t cap)
{
    if (!net || !dst || net->n_layers < 2 || net->n_layers > NC_CNN_MAX_LAYERS)
        return -EINVAL;
    char buf[NC_CNN_ARCH_MAX + 64];
    size_t len = 0;
    const nc_cnn_layer *in = &net->layers[0];
    len += (size_t)snprintf(buf, sizeof buf, "%ux%ux%u", in->maps, in->height, in->width);
    if (net->width_norm)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "W%u", net->width_norm);
    for (uint32_t l = 1; l < net->n_layers && len < NC_CNN_ARCH_MAX; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        char *o = buf + len;
        size_t room = sizeof buf - len;
        int k = 0;
        switch (L->kind) {
        case NC_CNN_KIND_CONV:
            k = snprintf(o, room, "-%uC%u", L->maps, L->kernel_x);
            if (L->kernel_y != L->kernel_x)
                k += snprintf(o + k, room - (size_t)k, "x%u", L->kernel_y);
            if (L->skip_x || L->skip_y) {
                k += snprintf(o + k, room - (size_t)k, "S%u", L->skip_x);
                if (L->skip_y != L->skip_x)
                    k += snprintf(o + k, room - (size_t)k, "x%u", L->skip_y);
            }
            if (L->table_percent < 100) {
                k += snprintf(o + k, room - (size_t)k, "R%u", L->table_percent);
                if (L->table_seed)
                    k += snprintf(o + k, room - (size_t)k, ":%u", L->table_seed);
            }
            break;
        case NC_CNN_KIND_POOL:
            k = snprintf(o, room, "-MP%u", L->kernel_x);
            if (L->kernel_y != L->kernel_x)
                k += snprintf(o + k, room - (size_t)k, "x%u", L->kernel_y);
            break;
        case NC_CNN_KIND_FULL:
            k = snprintf(o, room, "-%uN", L->maps);
            break;
        default:
            return -EINVAL;
        }
        if (L->norm)
            k += snprintf(o + k, room - (size_t)k, "bn");
        if (L->act == NC_CNN_ACT_RELU)
            k += snprintf(o + k, room - (size_t)k, "relu");
        len += (size_t)k;
    }
    if (len + 1 > cap || len >= NC_CNN_ARCH_MAX)
        return -ERANGE;
    memcpy(dst, buf, len + 1);
    return 0;
}

int nc_cnn_init_uniform(nc_cnn *net, uint64_t seed, float range)
{
    if (!net || !(range >= 0.0f) || !isfinite(range))
        return -EINVAL;
    uint64_t s = seed;
    for (size_t i = 0; i < net->n_params; i++) {
        /* 24 random bits -> [0, 1) exactly representable, then [-r, r) */
        float u = (float)(nc_cnn_splitmix64(&s) >> 40) * (1.0f / 16777216.0f);
        net->params[i] = (2.0f * u - 1.0f) * range;
    }
    for (uint32_t l = 1; l < net->n_layers; l++)
        if (net->layers[l].kind == NC_CNN_KIND_CONV)
            nc_cnn_mask_kernels(net, l);
    norm_defaults(net);
    return 0;
}

int nc_cnn_init_fan_in(nc_cnn *net, uint64_t seed, float gain)
{
    if (!net || !(gain > 0.0f) || !isfinite(gain))
        return -EINVAL;
    int err = nc_cnn_init_uniform(net, seed, 1.0f);   /* [-1, 1), then scaled */
    if (err)
        return err;
    for (uint32_t l = 1; l < net->n_layers; l++) {
        nc_cnn_layer *L = &net->layers[l];
        if (L->kind == NC_CNN_KIND_POOL)
            continue;
        const float r = gain * sqrtf(3.0f / (float)L->fan_in);
        for (size_t i = 0; i < L->n_weights; i++)
            L->weights[i] *= r;
        memset(L->bias, 0, (size_t)L->maps * sizeof(float));
    }
    return 0;
}

int nc_cnn_init_weights(nc_cnn *net, uint64_t seed)
{
    return nc_cnn_init_uniform(net, seed, 0.05f);
}

int nc_cnn_set_table(nc_cnn *net, uint32_t layer, const uint8_t *table)
{
    if (!net || !table || layer < 1 || layer >= net->n_layers ||
        net->layers[layer].kind != NC_CNN_KIND_CONV)
        return -EINVAL;
    nc_cnn_layer *L = &net->layers[layer];
    uint32_t in_maps = net->layers[layer - 1].maps;
    for (uint32_t m = 0; m < L->maps; m++) {
        uint32_t wired = 0;
        for (uint32_t c = 0; c < in_maps; c++) {
            uint8_t v = table[(size_t)m * in_maps + c];
            if (v > 1)
                return -EINVAL;
            wired += v;
        }
        if (!wired)
            return -EINVAL;
    }
    memcpy(L->table, table, (size_t)L->maps * in_maps);
    nc_cnn_mask_kernels(net, layer);
    net->custom_tables = 1;
    return 0;
}

/* ---- working memory ------------------------------------------------------ */

static int work_alloc_unroll(nc_cnn_work *w, uint32_t chunk)
{
    uint32_t images = chunk ? chunk : w->max_batch;
    size_t n;
    if (nc_size_mul(w->unroll_per_image, images, &n))
        return -ERANGE;
    float *u = NULL;
    if (n) {
        u = malloc(n * sizeof(float));
        if (!u)
            return -ENOMEM;
    }
    free(w->unroll);
    w->unroll = u;
    w->chunk = chunk;
    return 0;
}

int nc_cnn_work_new(const nc_cnn *net, uint32_t max_batch, nc_cnn_work **ret_w)
{
    if (!net || !ret_w || max_batch < 1 || max_batch > NC_CNN_MAX_BATCH)
        return -EINVAL;
    nc_cnn_work *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    int err = -ERANGE;
    w->max_batch = max_batch;
    w->n_layers = net->n_layers;
    w->n_params = net->n_params;
    /* sizes, in floats, of each piece of the one block */
    size_t total = 0, sz[NC_CNN_MAX_LAYERS + 5] = {0}, fcin = 0;
    for (uint32_t l = 0; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        w->kind[l] = L->kind;
        w->n_out[l] = L->n_out;
        w->shape[l][0] = L->maps;
        w->shape[l][1] = L->height;
        w->shape[l][2] = L->width;
        if (l == 0)
            continue;
        if (nc_size_mul(max_batch, L->n_out, &sz[l]))
            goto fail;
        if (L->kind == NC_CNN_KIND_CONV) {
            w->unroll_rows[l] = L->fan_in;
            size_t u = (size_t)L->fan_in * L->height * L->width;
            if (u > w->unroll_per_image)
                w->unroll_per_image = u;
        }
        if (L->kind == NC_CNN_KIND_FULL && net->layers[l - 1].kind != NC_CNN_KIND_FULL &&
            l > 1 && nc_size_mul(max_batch, L->n_in, &fcin))
            goto fail;
    }
    size_t nsz[NC_CNN_MAX_LAYERS] = {0};      /* xhat and stats of norm layers */
    for (uint32_t l = 1; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        if (!L->norm)
            continue;
        if (nc_size_mul(max_batch, L->n_out, &nsz[l]))
            goto fail;
        nsz[l] += 2 * (size_t)L->maps;      /* caps: no overflow (cnn.h) */
        if (nsz[l] > SIZE_MAX / sizeof(float) / 2 - total)
            goto fail;
        total += nsz[l];
    }
    size_t delta, out;
    if (nc_size_mul(max_batch, net->max_units, &delta) ||
        nc_size_mul(max_batch, net->n_outputs, &out))
        goto fail;
    sz[NC_CNN_MAX_LAYERS + 0] = delta;
    sz[NC_CNN_MAX_LAYERS + 1] = delta;
    sz[NC_CNN_MAX_LAYERS + 2] = fcin;
    sz[NC_CNN_MAX_LAYERS + 3] = net->n_params;
    sz[NC_CNN_MAX_LAYERS + 4] = out;
    for (size_t i = 0; i < NC_ARRAY_LEN(sz); i++) {
        if (sz[i] > SIZE_MAX / sizeof(float) / 2 - total)
            goto fail;
        total += sz[i];
    }
    err = -ENOMEM;
    w->block = malloc(total * sizeof(float));
    if (!w->block)
        goto fail;
    float *p = w->block;
    for (uint32_t l = 1; l < net->n_layers; l++) {
        w->act[l] = p;
        p += sz[l];
    }
    for (uint32_t l = 1; l < net->n_layers; l++) {
        if (!net->layers[l].norm)
            continue;
        w->xhat[l] = p;
        w->nstat[l] = p + sz[l];
        p += nsz[l];
    }
    w->delta[0] = p;  p += delta;
    w->delta[1] = p;  p += delta;
    w->fcin = p;      p += fcin;
    w->grads = p;     p += net->n_params;
    w->out = p;
    if ((err = work_alloc_unroll(w, max_batch < NC_CNN_DEFAULT_CHUNK ? 0 : NC_CNN_DEFAULT_CHUNK)))
        goto fail;
    *ret_w = w;
    return 0;
fail:
    nc_cnn_work_free(w);
    return err;
}

void nc_cnn_work_free(nc_cnn_work *w)
{
    if (!w)
        return;
    free(w->unroll);
    free(w->block);
    free(w);
}

int nc_cnn_work_set_chunk(nc_cnn_work *w, uint32_t chunk)
{
    if (!w || chunk > w->max_batch)
        return -EINVAL;
    if (chunk == w->max_batch)
        chunk = 0;
    if (chunk == w->chunk)
        return 0;
    w->state = NC_CNN_STATE_NONE;
    return work_alloc_unroll(w, chunk);
}

void nc_cnn_work_set_hook(nc_cnn_work *w, nc_cnn_layer_hook hook, void *ctx)
{
    if (!w)
        return;
    w->hook = hook;
    w->hook_ctx = ctx;
}

const float *nc_cnn_work_activations(const nc_cnn_work *w, uint32_t layer, uint32_t *ret_n)
{
    if (!w || w->state != NC_CNN_STATE_REF || layer < 1 || layer >= w->n_layers)
        return NULL;
    if (ret_n)
        *ret_n = w->state_n;
    return w->act[layer];
}

int nc_cnn_work_norm_stats(const nc_cnn_work *w, uint32_t layer, float *mean, float *var)
{
    if (!w || !mean || !var || layer < 1 || layer >= w->n_layers || !w->nstat[layer] ||
        w->state == NC_CNN_STATE_NONE)
        return -EINVAL;
    const uint32_t maps = w->shape[layer][0];
    memcpy(mean, w->nstat[layer], maps * sizeof(float));
    memcpy(var, w->nstat[layer] + maps, maps * sizeof(float));
    return 0;
}

int nc_cnn_work_check(const nc_cnn *net, const nc_cnn_work *w, uint32_t n)
{
    if (!net || !w || n < 1 || n > w->max_batch || net->n_layers != w->n_layers ||
        net->n_params != w->n_params)
        return -EINVAL;
    for (uint32_t l = 0; l < net->n_layers; l++) {
        const nc_cnn_layer *L = &net->layers[l];
        if (L->kind != w->kind[l] || L->n_out != w->n_out[l] ||
            L->maps != w->shape[l][0] || L->height != w->shape[l][1] ||
            L->width != w->shape[l][2] ||
            (L->kind == NC_CNN_KIND_CONV && L->fan_in != w->unroll_rows[l]) ||
            (L->norm && !w->xhat[l]))
            return -EINVAL;
    }
    return 0;
}

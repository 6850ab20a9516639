/* tools/train_cnn_checkpoint.c — --checkpoint and --resume: the run written
 * after every epoch and read back, as a model-format container.
 *
 * Layer: tools; part of `neocog-train cnn` (train_cnn.c says how it trains). */
#include "train_cnn.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cnn.h"
#include "deform.h"
#include "train_norm.h"
#include "train_teacher.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "nc_config.h"
#if NC_HAVE_CUDA
#include "cnn_engine.h"
#include "device.h"
#endif

/* Checkpoint sections (not info tags: see modelfile.h). */
#define TAG_CK_NET  NC_MF_TAG('C', 'K', 'N', 'T')  /* bytes: current net, a model file */
#define TAG_CK_BEST NC_MF_TAG('C', 'K', 'B', 'S')  /* bytes: best net, a model file */
#define TAG_CK_CONF NC_MF_TAG('C', 'K', 'C', 'F')  /* text: options that must match */
#define TAG_CK_STAT NC_MF_TAG('C', 'K', 'S', 'T')  /* u32: epochs done, best epoch */
#define TAG_CK_RNG  NC_MF_TAG('C', 'K', 'R', 'N')  /* u32: rng state, low then high */
#define TAG_CK_HIST NC_MF_TAG('C', 'K', 'H', 'I')  /* f64: per epoch, HIST_COLS values */
#define TAG_CK_VEL  NC_MF_TAG('C', 'K', 'V', 'L')  /* f32: --momentum's velocity [n_params] */
#define TAG_CK_ADM  NC_MF_TAG('C', 'K', 'A', 'M')  /* f32: --adam's first moments [n_params] */
#define TAG_CK_ADV  NC_MF_TAG('C', 'K', 'A', 'V')  /* f32: --adam's second moments */
#define TAG_CK_ADS  NC_MF_TAG('C', 'K', 'A', 'S')  /* u32: --adam's steps, low then high */

/* ---- checkpoints ---------------------------------------------------------- */

/* The options a resumed run must share with the one that wrote the
 * checkpoint (everything that changes what the epochs compute). */
static void config_string(const options *o, char *dst, size_t cap)
{
    /* deform_scale, deform_params, keep_last, softmax, init_gain,
     * average_last, momentum, prep and epoch_blocks only when not the default, so checkpoints
     * written before those options still resume; an average also fixes
     * --epochs, which places its window */
    char scale[48] = "", teacher[48] = "", softmax[48] = "", gain[48] = "", avg[64] = "";
    char dparams[160] = "", mom[48] = "", sets[2048] = "", blocks[48] = "";
    if (o->train_set)
        snprintf(sets, sizeof sets, " train=%s val=%s", o->train_set,
                 o->val_set ? o->val_set : "-");
    if (o->epoch_blocks > 1)
        snprintf(blocks, sizeof blocks, " epoch_blocks=%u", o->epoch_blocks);
    if (o->momentum > 0.0f)
        snprintf(mom, sizeof(mom), " momentum=%.9g", (double)o->momentum);
    else if (o->adam)
        snprintf(mom, sizeof(mom), " adam=1");
    if (o->deform_custom) {
        const nc_deform_params *d = &o->deform_base;
        snprintf(dparams, sizeof(dparams), " deform_params=%.9g,%.9g,%.9g,%.9g,%.9g,%.9g",
                 (double)d->max_translate, (double)d->max_rotate_deg, (double)d->max_scale,
                 (double)d->max_shear, (double)d->elastic_sigma, (double)d->elastic_alpha);
    }
    if (o->deform_scale != 1.0f)
        snprintf(scale, sizeof(scale), " deform_scale=%.9g", (double)o->deform_scale);
    if (o->teacher)
        snprintf(teacher, sizeof(teacher), " teacher_weight=%.9g", (double)o->teacher_weight);
    if (o->softmax > 0.0f)
        snprintf(softmax, sizeof(softmax), " softmax=%.9g", (double)o->softmax);
    if (o->init_gain > 0.0f)
        snprintf(gain, sizeof(gain), " init_gain=%.9g", (double)o->init_gain);
    if (o->average_last)
        snprintf(avg, sizeof(avg), " average_last=%u epochs=%u", o->average_last, o->epochs);
    snprintf(dst, cap, "arch=%s batch=%u lr=%.9g lr_decay=%.9g validation=%u limit=%u "
             "deform=%d%s%s seed=%llu%s%s%s%s%s%s%s%s%s%s%s%s%s%s%s", o->arch, o->batch, (double)o->lr,
             (double)o->lr_decay, o->validation, o->limit, o->deform, scale, dparams,
             (unsigned long long)o->seed, o->keep_last ? " keep_last=1" : "",
             o->extra ? " extra=" : "", o->extra ? o->extra : "",
             o->init ? " init=" : "", o->init ? o->init : "", o->teacher ? " teacher=" : "",
             o->teacher ? o->teacher : "", teacher, softmax, gain, avg, mom, sets,
             o->prep_line ? " prep=line" : "", blocks);
}

int train_cnn_write_checkpoint(const char *path, const options *o, const nc_cnn *net,
                               const nc_cnn *best, const nc_model_info *info,
                               const run_state *st)
{
    nc_mf_writer *mw = NULL;
    uint8_t *net_buf = NULL, *best_buf = NULL, *buf = NULL;
    size_t net_len = 0, best_len = 0, len = 0;
    char conf[4096];
    uint32_t stat[2] = { st->epochs_done, st->best_epoch };
    uint32_t rng[2] = { (uint32_t)st->rng.state, (uint32_t)(st->rng.state >> 32) };
    config_string(o, conf, sizeof(conf));
    int err = nc_cnn_save(net, info, &net_buf, &net_len);
    if (!err)
        err = nc_cnn_save(best, info, &best_buf, &best_len);
    if (!err)
        err = nc_mf_writer_new(NC_MF_KIND_CNN, &mw);
    if (!err)
        err = nc_mf_put(mw, TAG_CK_NET, NC_MF_TYPE_BYTES, net_buf, net_len);
    if (!err)
        err = nc_mf_put(mw, TAG_CK_BEST, NC_MF_TYPE_BYTES, best_buf, best_len);
    if (!err)
        err = nc_mf_put_str(mw, TAG_CK_CONF, conf);
    if (!err)
        err = nc_mf_put_u32(mw, TAG_CK_STAT, stat, 2);
    if (!err)
        err = nc_mf_put_u32(mw, TAG_CK_RNG, rng, 2);
    if (!err)
        err = nc_mf_put_f64(mw, TAG_CK_HIST, st->hist, (size_t)st->epochs_done * HIST_COLS);
    if (!err && st->velocity)
        err = nc_mf_put_f32(mw, TAG_CK_VEL, st->velocity, net->n_params);
    if (!err && st->adam_m) {
        const uint32_t steps[2] = { (uint32_t)st->adam_step, (uint32_t)(st->adam_step >> 32) };
        err = nc_mf_put_f32(mw, TAG_CK_ADM, st->adam_m, net->n_params);
        if (!err)
            err = nc_mf_put_f32(mw, TAG_CK_ADV, st->adam_v, net->n_params);
        if (!err)
            err = nc_mf_put_u32(mw, TAG_CK_ADS, steps, 2);
    }
    if (!err)
        err = nc_mf_finish(mw, &buf, &len);
    if (!err)
        err = nc_file_write_atomic(path, buf, len);
    if (err)
        fprintf(stderr, "neocog-train cnn: writing checkpoint %s: %s\n", path, nc_strerror(err));
    nc_mf_writer_free(mw);
    free(net_buf);
    free(best_buf);
    free(buf);
    return err;
}

/* Copy the weights of a model file stored in section tag into net, which
 * must have the same architecture. */
static int load_ck_net(const nc_mf_reader *r, uint32_t tag, nc_cnn *net)
{
    const void *data;
    size_t n;
    uint32_t type;
    nc_cnn *got = NULL;
    char a[NC_CNN_ARCH_MAX], b[NC_CNN_ARCH_MAX];
    int err = nc_mf_get(r, tag, &type, &data, &n);
    if (!err && type != NC_MF_TYPE_BYTES)
        err = -EBADMSG;
    if (!err)
        err = nc_cnn_load(data, n, &got, NULL);
    if (!err)
        err = nc_cnn_arch_format(got, a, sizeof(a));
    if (!err)
        err = nc_cnn_arch_format(net, b, sizeof(b));
    if (!err && (strcmp(a, b) || got->n_params != net->n_params))
        err = -EBADMSG;
    if (!err)
        memcpy(net->params, got->params, net->n_params * sizeof(float));
    nc_cnn_free(got);
    return err;
}

/* dst[n] = a checkpoint's f32 section of exactly n values. */
static int read_ck_params(const nc_mf_reader *r, uint32_t tag, float *dst, size_t n)
{
    size_t have = 0;
    int err = nc_mf_count(r, tag, NC_MF_TYPE_F32, &have);
    if (!err && have != n)
        err = -EBADMSG;
    return err ? err : nc_mf_get_f32(r, tag, dst, n);
}

int train_cnn_read_checkpoint(const char *path, const options *o, nc_cnn *net,
                              nc_cnn *best, run_state *st)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_mf_reader *r = NULL;
    char conf[4096], want[4096];
    uint32_t stat[2], rng[2];
    size_t n_hist = 0;
    config_string(o, want, sizeof(want));
    int err = nc_file_read(path, CKPT_MAX_BYTES, &buf, &len);
    if (!err)
        err = nc_mf_open(buf, len, &r);
    if (!err)
        err = nc_mf_get_str(r, TAG_CK_CONF, conf, sizeof(conf));
    if (!err && strcmp(conf, want)) {
        fprintf(stderr, "neocog-train cnn: checkpoint %s was written with other options:\n"
                "  checkpoint: %s\n  now:        %s\n", path, conf, want);
        err = -EINVAL;
        goto out;
    }
    if (!err)
        err = nc_mf_get_u32(r, TAG_CK_STAT, stat, 2);
    if (!err)
        err = nc_mf_get_u32(r, TAG_CK_RNG, rng, 2);
    if (!err && (stat[0] == 0 || stat[0] > MAX_EPOCHS || stat[1] > stat[0]))
        err = -EBADMSG;
    if (!err)
        err = nc_mf_count(r, TAG_CK_HIST, NC_MF_TYPE_F64, &n_hist);
    if (!err && n_hist != (size_t)stat[0] * HIST_COLS)
        err = -EBADMSG;
    if (!err) {
        /* hist was sized for o->epochs; a checkpoint may hold more, and
         * the rows still to come must fit too. */
        size_t rows = stat[0] > o->epochs ? stat[0] : o->epochs;
        double *h = realloc(st->hist, rows * HIST_COLS * sizeof(double));
        if (!h)
            err = -ENOMEM;
        else
            st->hist = h;
    }
    if (!err)
        err = nc_mf_get_f64(r, TAG_CK_HIST, st->hist, n_hist);
    if (!err)
        err = load_ck_net(r, TAG_CK_NET, net);
    if (!err)
        err = load_ck_net(r, TAG_CK_BEST, best);
    /* the options matched, so the optimiser's state is there */
    if (!err && st->velocity)
        err = read_ck_params(r, TAG_CK_VEL, st->velocity, net->n_params);
    if (!err && st->adam_m) {
        uint32_t steps[2];
        err = read_ck_params(r, TAG_CK_ADM, st->adam_m, net->n_params);
        if (!err)
            err = read_ck_params(r, TAG_CK_ADV, st->adam_v, net->n_params);
        if (!err)
            err = nc_mf_get_u32(r, TAG_CK_ADS, steps, 2);
        if (!err)
            st->adam_step = (uint64_t)steps[0] | (uint64_t)steps[1] << 32;
    }
    if (!err) {
        st->epochs_done = stat[0];
        st->best_epoch = stat[1];
        st->rng.state = (uint64_t)rng[0] | (uint64_t)rng[1] << 32;
    }
    if (err)
        fprintf(stderr, "neocog-train cnn: reading checkpoint %s: %s\n", path, nc_strerror(err));
out:
    nc_mf_close(r);
    free(buf);
    return err;
}

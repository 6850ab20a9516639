/* tools/train_neocog_checkpoint.c — `neocog-train neocognitron`'s
 * --checkpoint and --resume: the stages done so far written after each
 * stage and read back, as a model-format container.
 *
 * Layer: tools; part of neocog-train neocognitron (train_neocog.c). */
#include "train_neocog.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deform.h"
#include "fileio.h"
#include "image.h"
#include "modelfile.h"
#include "neocog.h"
#include "train_pool.h"

#define TAG_CK_CONF NC_MF_TAG('C', 'K', 'C', 'F')  /* text: options that must match */
#define TAG_CK_DONE NC_MF_TAG('C', 'K', 'D', 'N')  /* u32: stages done */
#define TAG_CK_PLN  NC_MF_TAG('C', 'K', 'P', 'L')  /* u32: planes per stage */
#define TAG_CK_A(l) NC_MF_TAG('C', 'K', 'A', '1' + (l))  /* f32: a, net layout */
#define TAG_CK_B(l) NC_MF_TAG('C', 'K', 'B', '1' + (l))  /* f32: b */
#define TAG_CK_LOG  NC_MF_TAG('C', 'K', 'L', 'G')  /* f64: per stage secs, digits */
#define TAG_CK_NET  NC_MF_TAG('C', 'K', 'N', 'T')  /* bytes: whole model (all done) */

/* ---- checkpoints ----------------------------------------------------------- */

static void config_string(const options *o, char *dst, size_t cap)
{
    /* options added later appear only when set, so older checkpoints match */
    char deform[32] = "";
    char sets[512] = "";
    if (o->deform_us4 > 0.0f)
        snprintf(deform, sizeof(deform), " deform4=%.6g", (double)o->deform_us4);
    if (o->train_set)           /* the IDX sets by name: a resume must read the same */
        snprintf(sets, sizeof(sets), " train=%.240s val=%.240s", o->train_set,
                 o->val_set ? o->val_set : "-");
    snprintf(dst, cap, "digits=%u,%u,%u passes=%u,%u,%u kmax=%u,%u,%u theta=%.6g,%.6g,%.6g "
             "theta_l=%.6g,%.6g,%.6g q=%.6g height=%u ais=%d validation=%u seed=%llu%s%s%s",
             o->digits[1], o->digits[2], o->digits[3], o->passes[1], o->passes[2],
             o->passes[3], o->k_max[1], o->k_max[2], o->k_max[3], (double)o->theta[1],
             (double)o->theta[2], (double)o->theta[3], (double)o->theta_l[1],
             (double)o->theta_l[2], (double)o->theta_l[3], (double)o->q, o->height,
             o->add_if_silent, o->validation, (unsigned long long)o->seed,
             o->deskew == (int)NC_PREP_DESKEW_GENTLE ? " deskew-gentle"
             : o->deskew                             ? " deskew"
                                                     : "",
             deform, sets);
}

static size_t a_floats(const nc_neocog *net, uint32_t l)
{
    return (size_t)nc_neocog_k_in(net, l) * net->s_ix[l]->n_live *
           nc_neocog_kstride(net->n_planes[l]);
}

int train_neocog_write_checkpoint(const options *o, const nc_neocog *net, uint32_t done,
                                  const double *log, const nc_model_info *info)
{
    nc_mf_writer *w = NULL;
    uint8_t *buf = NULL, *nb = NULL;
    size_t len = 0, nlen = 0;
    char conf[1024];
    uint32_t d = done;
    config_string(o, conf, sizeof(conf));
    int err = nc_mf_writer_new(NC_MF_KIND_NEOCOG, &w);
    if (!err) err = nc_mf_put_str(w, TAG_CK_CONF, conf);
    if (!err) err = nc_mf_put_u32(w, TAG_CK_DONE, &d, 1);
    if (!err) err = nc_mf_put_u32(w, TAG_CK_PLN, net->n_planes, NC_NEOCOG_MAX_STAGES);
    if (!err) err = nc_mf_put_f64(w, TAG_CK_LOG, log, 2 * NC_NEOCOG_MAX_STAGES);
    if (done == net->arch.n_stages) {
        /* all stages hold planes: the model format says it all, and loading
         * it avoids growing a large US4 plane by plane */
        if (!err) err = nc_neocog_save(net, info, &nb, &nlen);
        if (!err) err = nc_mf_put(w, TAG_CK_NET, NC_MF_TYPE_BYTES, nb, nlen);
    } else {
        for (uint32_t l = 0; !err && l < done; l++) {
            err = nc_mf_put_f32(w, TAG_CK_A(l), net->a[l], a_floats(net, l));
            if (!err)
                err = nc_mf_put_f32(w, TAG_CK_B(l), net->b[l],
                                    nc_neocog_kstride(net->n_planes[l]));
        }
    }
    if (!err) err = nc_mf_finish(w, &buf, &len);
    if (!err) err = nc_file_write_atomic(o->checkpoint, buf, len);
    if (err)
        fprintf(stderr, "neocog-train neocognitron: writing checkpoint %s: %s\n",
                o->checkpoint, nc_strerror(err));
    nc_mf_writer_free(w);
    free(buf);
    free(nb);
    return err;
}

/* Restore the stages a checkpoint holds into the empty net *pnet. */
int train_neocog_read_checkpoint(const options *o, nc_neocog **pnet, uint32_t *ret_done,
                                 double *log)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    nc_mf_reader *r = NULL;
    char conf[1024], want[1024];
    uint32_t done = 0, planes[NC_NEOCOG_MAX_STAGES];
    nc_neocog *net = *pnet;
    config_string(o, want, sizeof(want));
    int err = nc_file_read(o->checkpoint, CKPT_MAX_BYTES, &buf, &len);
    if (!err) err = nc_mf_open(buf, len, &r);
    if (!err) err = nc_mf_get_str(r, TAG_CK_CONF, conf, sizeof(conf));
    if (!err && strcmp(conf, want)) {
        fprintf(stderr, "neocog-train neocognitron: checkpoint %s was written with other "
                "options:\n  checkpoint: %s\n  now:        %s\n", o->checkpoint, conf, want);
        err = -EINVAL;
        goto out;
    }
    if (!err) err = nc_mf_get_u32(r, TAG_CK_DONE, &done, 1);
    if (!err) err = nc_mf_get_u32(r, TAG_CK_PLN, planes, NC_NEOCOG_MAX_STAGES);
    if (!err) err = nc_mf_get_f64(r, TAG_CK_LOG, log, 2 * NC_NEOCOG_MAX_STAGES);
    if (!err && (done == 0 || done > net->arch.n_stages))
        err = -EBADMSG;
    if (!err && done == net->arch.n_stages) {
        const void *p;
        size_t n;
        uint32_t type;
        nc_neocog *got = NULL;
        err = nc_mf_get(r, TAG_CK_NET, &type, &p, &n);
        if (!err && type != NC_MF_TYPE_BYTES)
            err = -EBADMSG;
        if (!err)
            err = nc_neocog_load(p, n, &got, NULL);
        if (!err) {
            /* keep this run's thresholds; the loaded one carries its own */
            for (uint32_t l = 0; l < got->arch.n_stages; l++)
                got->arch.stage[l].theta = net->arch.stage[l].theta;
            nc_neocog_free(net);
            *pnet = net = got;
        }
    } else {
        for (uint32_t l = 0; !err && l < done; l++) {
            for (uint32_t k = 0; !err && k < planes[l]; k++) {
                uint32_t kk;
                err = nc_neocog_add_plane(net, l, 0, &kk);
            }
            if (!err) err = nc_mf_get_f32(r, TAG_CK_A(l), net->a[l], a_floats(net, l));
            if (!err) err = nc_mf_get_f32(r, TAG_CK_B(l), net->b[l],
                                          nc_neocog_kstride(net->n_planes[l]));
        }
    }
    if (!err)
        *ret_done = done;
    if (err)
        fprintf(stderr, "neocog-train neocognitron: reading checkpoint %s: %s\n",
                o->checkpoint, nc_strerror(err));
out:
    nc_mf_close(r);
    free(buf);
    return err;
}

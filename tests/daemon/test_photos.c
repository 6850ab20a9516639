/* tests/daemon/test_photos.c — the daemon reads phone photos of digits.
 *
 * The committed photo set (tests/data/photos, made by neocog-photogen from
 * MNIST test digits: grey, unevenly lit paper, shadows, rules, a finger at
 * the edge, blur, noise, JPEG; see its README) goes to the real neocogd
 * with the shipped models, through the socket, as a client sends it: one
 * JPEG a photo, no options.  Each network must read the single digits
 * (rejections count as wrong), --segment must answer a one-digit photo as a
 * plain request does, and the string photos must be read with --segment.
 * The neocognitron's scores for 48 single-digit photos (12 under
 * AddressSanitizer) must be core's for
 * the same photo (nc_direct_run), bit for bit: neocogd prepares its views
 * as its cascade reads them, and must give what the whole preparation does.
 *
 * The floors are the figures measured on the validation photos (the same
 * generator on MNIST training digits 50000-59999, which no shipped model
 * trained on) less a margin for the smaller set, written before the
 * committed set was measured: docs/photos.md has both.  The goal is 99 %
 * for every network; the floors hold what is reached so far.
 *
 * Under AddressSanitizer the neocognitron and the ensemble, a hundred times
 * slower than the CNN on a CPU, read every fourth photo only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode.h"
#include "fileio.h"
#include "fixture.h"
#include "harness.h"
#include "test.h"

#if defined(__SANITIZE_ADDRESS__)
#define SLOW_STEP 4u
#define DIRECT_PHOTOS 12u           /* compared with core's scores */
#else
#define SLOW_STEP 1u
#define DIRECT_PHOTOS 48u
#endif

#define MAX_PHOTOS 400u
#define BATCH 16u

/* Floors, fractions of the photos read right (see above). */
#define FLOOR_CNN 0.95
#define FLOOR_NEOCOG 0.94
#define FLOOR_ENSEMBLE 0.95
#define FLOOR_SEGMENT_SAME 0.96     /* --segment answers as plain does */
#define FLOOR_STRINGS 0.50

typedef struct photo {
    char file[64];
    char text[32];
    uint8_t *data;
    size_t len;
} photo;

static photo photos[MAX_PHOTOS];
static uint32_t n_photos;

/* Each answer: its text ("?" on reject, "" for none), whether rejected,
 * and the model's own scores (a plain request's). */
typedef struct answer {
    char text[40];
    int reject;
    uint32_t n_scores;
    float scores[10];
} answer;

static int load_photos(const char *dir)
{
    char path[2048];
    snprintf(path, sizeof path, "%s/truth.tsv", dir);
    char *tsv = nc_read_text(path);
    if (!tsv)
        return -1;
    for (char *line = strtok(tsv, "\n"); line && n_photos < MAX_PHOTOS;
         line = strtok(NULL, "\n")) {
        if (line[0] == '#')
            continue;
        photo *p = &photos[n_photos];
        if (sscanf(line, "%63[^\t]\t%31[^\t]", p->file, p->text) != 2)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, p->file);
        if (nc_file_read(path, 1u << 20, &p->data, &p->len))
            continue;
        n_photos++;
    }
    free(tsv);
    return n_photos ? 0 : -1;
}

/* The answers of `model` to every photo selected by want (single digits
 * or strings) and step, BATCH photos a request; ret[i] for photo i. */
static void read_photos(const char *sock, Neocog__Model model, int segment, int strings,
                        uint32_t step, answer *ret)
{
    int fd = nc_connect_unix(sock);
    if (fd < 0) {
        CHECK_MSG(0, "cannot connect to %s", sock);
        return;
    }
    uint32_t idx[BATCH], k = 0, seen = 0;
    for (uint32_t i = 0; i <= n_photos; i++) {
        int take = i < n_photos && (strlen(photos[i].text) > 1) == strings && seen++ % step == 0;
        if (take)
            idx[k++] = i;
        if (k < BATCH && i < n_photos)
            continue;
        if (!k)
            break;
        Neocog__Request rq = NEOCOG__REQUEST__INIT;
        Neocog__RecognizeRequest rr = NEOCOG__RECOGNIZE_REQUEST__INIT;
        Neocog__Image im[BATCH], *imp[BATCH];
        rq.id = 1000 + i;
        rq.kind_case = NEOCOG__REQUEST__KIND_RECOGNIZE;
        rq.recognize = &rr;
        rr.model = model;
        rr.n_images = k;
        rr.images = imp;
        for (uint32_t j = 0; j < k; j++) {
            neocog__image__init(&im[j]);
            imp[j] = &im[j];
            im[j].data.data = photos[idx[j]].data;
            im[j].data.len = photos[idx[j]].len;
            im[j].segment = segment;
        }
        nc_msg *m = nc_roundtrip(fd, &rq);
        const Neocog__Reply *r = m ? nc_msg_reply(m) : NULL;
        CHECK_MSG(r && r->code == NEOCOG__CODE__OK && r->recognize &&
                  r->recognize->n_results == k, "model %d: no full reply", model);
        for (uint32_t j = 0; r && r->recognize && j < k && j < r->recognize->n_results; j++) {
            const Neocog__Result *res = r->recognize->results[j];
            answer *a = &ret[idx[j]];
            /* the text without its line breaks: a string's truth has none */
            size_t o = 0;
            for (const char *c = res->text; c && *c && o + 1 < sizeof a->text; c++)
                if (*c != '\n')
                    a->text[o++] = *c;
            a->text[o] = '\0';
            a->reject = res->reject || res->code != NEOCOG__CODE__OK;
            a->n_scores = res->n_scores <= 10 ? (uint32_t)res->n_scores : 0;
            if (a->n_scores)
                memcpy(a->scores, res->scores, a->n_scores * sizeof *a->scores);
        }
        nc_msg_free(m);
        k = 0;
    }
    close(fd);
}

/* Right, rejected and wrong among the selected photos; returns right's
 * fraction. */
static double score(const char *what, const answer *a, int strings, uint32_t step)
{
    uint32_t right = 0, rejected = 0, wrong = 0, seen = 0;
    for (uint32_t i = 0; i < n_photos; i++) {
        if ((strlen(photos[i].text) > 1) != strings || seen++ % step)
            continue;
        if (!a[i].reject && !strcmp(a[i].text, photos[i].text))
            right++;
        else if (a[i].reject)
            rejected++;
        else
            wrong++;
    }
    uint32_t n = right + rejected + wrong;
    double f = n ? (double)right / n : 0.0;
    fprintf(stderr, "%-28s %4u photos %4u right %4u rejected %4u wrong  %5.1f %%\n", what, n,
            right, rejected, wrong, 100.0 * f);
    return f;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_photos NEOCOGD\n");
        return 2;
    }
    const char *data = getenv("NC_TEST_DATA");
    char photo_dir[1024], models[1024], dir[] = "/tmp/nc-photos-XXXXXX";
    snprintf(photo_dir, sizeof photo_dir, "%s/photos", data ? data : "tests/data");
    if (load_photos(photo_dir)) {
        fprintf(stderr, "no photos in %s\n", photo_dir);
        return 1;
    }
    nc_test_model_path("", models, sizeof models);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char sock[300];
    snprintf(sock, sizeof sock, "%s/photos.sock", dir);
    const char *args[] = { "--models", models, "--gpus", "0", "--listen-tcp", "none",
                           "--listen-unix", sock, "--http", "none", "--log-level", "4", NULL };
    nc_daemon d;
    if (nc_daemon_start(&d, argv[1], dir, 0, args)) {
        fprintf(stderr, "neocogd did not start\n");
        return 1;
    }

    static answer cnn[MAX_PHOTOS], cnn_seg[MAX_PHOTOS], neo[MAX_PHOTOS], ens[MAX_PHOTOS],
        str[MAX_PHOTOS];
    read_photos(sock, NEOCOG__MODEL__MODEL_CNN, 0, 0, 1, cnn);
    read_photos(sock, NEOCOG__MODEL__MODEL_CNN, 1, 0, 1, cnn_seg);
    read_photos(sock, NEOCOG__MODEL__MODEL_NEOCOGNITRON, 0, 0, SLOW_STEP, neo);
    read_photos(sock, NEOCOG__MODEL__MODEL_ENSEMBLE, 0, 0, SLOW_STEP, ens);
    read_photos(sock, NEOCOG__MODEL__MODEL_CNN, 1, 1, 1, str);

    double f_cnn = score("cnn, one digit", cnn, 0, 1);
    double f_seg = score("cnn --segment, one digit", cnn_seg, 0, 1);
    double f_neo = score("neocognitron, one digit", neo, 0, SLOW_STEP);
    double f_ens = score("ensemble, one digit", ens, 0, SLOW_STEP);
    double f_str = score("cnn --segment, strings", str, 1, 1);
    CHECK_MSG(f_cnn >= FLOOR_CNN, "cnn reads %.3f of the photos right", f_cnn);
    CHECK_MSG(f_neo >= FLOOR_NEOCOG, "neocognitron reads %.3f right", f_neo);
    CHECK_MSG(f_ens >= FLOOR_ENSEMBLE, "ensemble reads %.3f right", f_ens);
    CHECK_MSG(f_str >= FLOOR_STRINGS, "strings: %.3f right", f_str);
    (void)f_seg;

    /* The neocognitron's scores are core's for the same photo, bit for bit:
     * neocogd prepares its views as its cascade reads them, in batches of
     * BATCH photos, and must give what the whole preparation gives. */
    nc_direct direct;
    char neo_path[1024];
    nc_test_model_path("neocognitron.ncm", neo_path, sizeof neo_path);
    const int opened = nc_direct_open(&direct, neo_path) == 0;
    CHECK_MSG(opened, "cannot open %s directly", neo_path);
    uint32_t compared = 0, differ = 0, seen = 0;
    for (uint32_t i = 0; opened && i < n_photos && compared < DIRECT_PHOTOS; i++) {
        if (strlen(photos[i].text) > 1 || seen++ % SLOW_STEP)
            continue;
        /* decoded as neocogd decodes a request's image */
        static const nc_decode_limits lim = { 4096, UINT64_C(1) << 24 };
        nc_image *img = NULL;
        char why[128];
        if (nc_decode_image(NC_DECODE_AUTO, photos[i].data, photos[i].len, 0, 0, &lim, &img,
                            why, sizeof why))
            continue;
        float want[10];
        int32_t label;
        const int err = nc_direct_run(&direct, img->pixels, img->width, img->height, want, &label);
        nc_image_free(img);
        if (err)
            continue;
        compared++;
        if (neo[i].n_scores != 10 || memcmp(neo[i].scores, want, sizeof want)) {
            differ++;
            if (getenv("NC_TEST_VERBOSE"))
                fprintf(stderr, "%s: neocogd's scores differ from core's\n", photos[i].file);
        }
    }
    if (opened)
        nc_direct_close(&direct);
    CHECK_MSG(compared >= 8 && differ == 0,
              "neocognitron: %u of %u photos' scores differ from core's", differ, compared);

    /* --segment answers a photo of one digit as a plain request does */
    uint32_t same = 0, singles = 0;
    for (uint32_t i = 0; i < n_photos; i++) {
        if (strlen(photos[i].text) > 1)
            continue;
        singles++;
        if (cnn[i].reject == cnn_seg[i].reject && !strcmp(cnn[i].text, cnn_seg[i].text))
            same++;
        else if (getenv("NC_TEST_VERBOSE"))
            fprintf(stderr, "%s: plain '%s'%s, --segment '%s'%s\n", photos[i].file, cnn[i].text,
                    cnn[i].reject ? " rejected" : "", cnn_seg[i].text,
                    cnn_seg[i].reject ? " rejected" : "");
    }
    CHECK_MSG(same >= FLOOR_SEGMENT_SAME * singles,
              "--segment answers %u of %u one-digit photos as plain does", same, singles);

    CHECK_INT_EQ(nc_daemon_stop(&d, 30000), 0);
    rmdir(dir);
    for (uint32_t i = 0; i < n_photos; i++)
        free(photos[i].data);
    return nc_test_finish();
}

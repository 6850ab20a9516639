/* daemon/request.h — a recognition request in flight and its tasks.
 *
 * Layer: daemon.  The event thread builds an nc_request from a decoded
 * Request message, one nc_task per image, and hands the tasks to the
 * batcher.  Workers fill in each task's answer; the worker that finishes
 * a request's last image builds its Reply there (and lets the origin turn
 * it into bytes: ops->prepare), then sends the tasks back; the event thread
 * counts them home and, when all are in, sends what was built.  A task is
 * written by exactly one thread at a time (event thread before submit and
 * after completion, one worker in between), so it needs no lock; the last
 * worker reads the others' tasks after n_worked says they are done. */
#ifndef NC_REQUEST_H
#define NC_REQUEST_H

#include <stdatomic.h>
#include <stdint.h>

#include "message.h"
#include "modelfile.h"
#include "models.h"
#include "split.h"

typedef struct nc_request nc_request;
typedef struct nc_built_reply nc_built_reply;   /* handler.c's */

/* Where a request came from and where its reply goes: a protocol
 * connection (conn.c) or an HTTP call (http_call.c).  The handler builds
 * the same nc_request for both; only these three steps differ.  All run on
 * the event thread. */
typedef struct nc_origin_ops {
    /* The reply (a request's, or an error with only id, code and message). */
    void (*send)(void *owner, const Neocog__Reply *reply);
    /* A request was queued: keep owner until its `done`. */
    void (*hold)(void *owner);
    /* That request's reply was sent (or dropped); owner may go. */
    void (*done)(void *owner);
    /* NULL, or: on the worker thread that finished a request's last image,
     * before `send` (which then follows on the event thread with the same
     * reply's code and message): make the reply's bytes there, off the
     * event thread.  reply is gone after the call. */
    void (*prepare)(void *owner, const Neocog__Reply *reply);
} nc_origin_ops;

typedef struct nc_origin {
    const nc_origin_ops *ops;
    void *owner;
    const atomic_int *cancelled;    /* set once the client is gone: workers
                                       skip the work */
} nc_origin;

/* One character found by segmentation. */
typedef struct nc_digit {
    uint32_t x, y, width, height;
    int32_t label;                  /* -1 reject */
    float confidence;
} nc_digit;

/* The rest of a character's answer (core/backend/answer.h), beside its nc_digit
 * (same index in nc_task.more as in nc_task.digits). */
typedef struct nc_digit_more {
    uint32_t line;                  /* core/segment's line, then (after the
                                       answers) 0, 1... top to bottom */
    uint32_t flags;                 /* core/segment's NC_SEGMENT_DIGIT_* */
    uint32_t reason;                /* nc_answer_reason */
    uint32_t n_top;                 /* candidates, when the request asks */
    uint8_t top[NC_MF_MAX_CLASSES];
    float top_score[NC_MF_MAX_CLASSES];
} nc_digit_more;

#define NC_MAX_DIGITS 64

/* An image's segmentation hints (polarity, expected_digits, roi) as
 * daemon/split takes them: the handler checks them, the worker uses them. */
static inline nc_split_opts nc_request_split_opts(const Neocog__Image *im)
{
    nc_split_opts so = { .polarity = (int)im->polarity, .expected_digits = im->expected_digits,
                         .use_roi = im->roi != NULL };
    if (im->roi)
        so.roi = (nc_rect){ im->roi->x, im->roi->y, im->roi->width, im->roi->height };
    return so;
}

typedef struct nc_task {
    struct nc_task *next;           /* queue and completion lists */
    nc_request *req;
    uint32_t index;                 /* image number within the request */
    const Neocog__Image *image;     /* borrowed from req->rq */
    /* the answer (worker) */
    int code;                       /* Neocog__Code */
    char message[256];
    int32_t label;                  /* -1 reject */
    float confidence;
    int reject;
    uint32_t reason;                /* nc_answer_reason */
    float threshold;                /* in force; 0 none */
    uint32_t n_classes;
    float scores[NC_MF_MAX_CLASSES];/* raw model output (ensemble: mean p) */
    float prob[NC_MF_MAX_CLASSES];  /* calibrated */
    nc_digit *digits;               /* segmentation, malloc'd: the n_digits
                                       read, then n_alts uncut pieces */
    nc_digit_more *more;            /* malloc'd, as many as digits */
    uint32_t n_digits;
    uint32_t n_alts;                /* core/segment's alternatives: whole a
                                       is digits[n_digits + a], its parts
                                       digits[alt_first[a]] and the next */
    uint8_t alt_first[NC_MAX_DIGITS / 2];
    uint8_t one_whole;              /* 1 + index in digits of the frame read
                                       as one character, an alternative to
                                       all the pieces (nc_split_one_character
                                       said maybe); 0: none */
    nc_models *gen;                 /* generation that answered (ref) */
    uint64_t t_start, t_end;        /* batch start/end, monotonic us */
    uint64_t t_forward;             /* batch's forward passes began */
    uint32_t batch_size;
} nc_task;

struct nc_request {
    nc_origin origin;               /* held (ops->hold) until the reply */
    uint64_t id;
    uint32_t model;                 /* Neocog__Model, DEFAULT resolved */
    uint32_t top_k;                 /* candidates of a whole image, >= 1 */
    uint32_t digit_top_k;           /* of each segmented digit, 0: none */
    double threshold;               /* core/backend/answer.h's threshold argument:
                                       the request's min_confidence, else
                                       the server's reject_threshold */
    uint32_t prio;                  /* 0 high, 1 normal, 2 background */
    uint64_t t_recv;                /* monotonic us */
    uint64_t deadline;              /* monotonic us, 0 none */
    size_t bytes;                   /* frame bytes (queue accounting) */
    const atomic_int *cancelled;    /* origin.cancelled: skip work */
    const Neocog__Request *rq;      /* the Request; images point into it */
    nc_msg *msg;                    /* rq's memory when unpacked from a frame
                                       (NULL: the origin's, held until done) */
    /* Called by the worker whose images complete the request (n_worked
     * reaching n_tasks), before it sends them back. */
    void (*on_worked)(nc_request *req);
    atomic_uint n_worked;
    nc_built_reply *built;          /* on_worked's reply, NULL: none yet */
    uint32_t n_tasks, n_done;
    nc_task tasks[];
};

#endif

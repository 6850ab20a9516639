/* tools/streamgen_patches.h — what neocog-streamgen does with each frame
 * besides writing it: cut it with core/segment as the daemon does and keep
 * the MNIST-style patches whose segmentation matched the truth
 * (--patches), and time the daemon's per-frame CPU stages (--time).
 *
 * Layer: tools.  Both work on the frame after a JPEG round trip at the
 * frame's quality, which is what the daemon sees. */
#ifndef NC_STREAMGEN_PATCHES_H
#define NC_STREAMGEN_PATCHES_H

#include "dataset.h"
#include "streamgen_render.h"

/* Patches collected so far: 28 x 28 bytes each (MNIST layout: light ink on
 * 0, longer side 20, centre of mass at (14, 14)), with their labels. */
typedef struct nc_patch_set {
    uint8_t *pixels, *labels;
    uint32_t count, cap;
    uint32_t frames, digits, unmatched;     /* for the closing line */
} nc_patch_set;

/* Per-stage CPU time, summed over frames, of the fastest of a few runs of
 * each stage on each frame (a shared machine's noise only ever adds), and
 * every run's decode + segmentation + prep, the daemon's prepare step, to
 * show that noise: its tail.  pause_ms: sleep before every run, as a
 * camera's frames arrive (0: back to back). */
typedef struct nc_stage_times {
    uint32_t frames;
    double decode_ms, binarise_ms, components_ms, segment_ms, prep_ms;
    double segment_max_ms;
    uint32_t pause_ms;
    int pause_spin;             /* spend the pause spinning, not asleep */
    double *runs;               /* malloc'd; free with nc_stage_times_free */
    uint32_t n_runs, cap_runs;
} nc_stage_times;

struct nc_segmenter;

/* Segment the decoded frame with nc_segment_params_for_view (the whole
 * frame, no ROI: what `neocog camera` sends) and add every digit whose box
 * and the truth's contain each other's centres, one to one, to set.
 * 0 or a negative errno. */
int nc_patches_add(struct nc_segmenter *seg, const nc_image *frame,
                   const nc_render_truth *truth, nc_patch_set *set);

/* Write set as PREFIX-images-idx3-ubyte and PREFIX-labels-idx1-ubyte. */
int nc_patches_write(const nc_patch_set *set, const char *prefix);
void nc_patches_free(nc_patch_set *set);

/* Time decoding jpeg (len bytes) into frame, then binarisation, component
 * labelling, the whole segmentation and the preparation of its digits for
 * a 29x29 CNN; add to t. */
int nc_stage_time(struct nc_segmenter *seg, const uint8_t *jpeg, unsigned long len,
                  nc_image *frame, nc_stage_times *t);
void nc_stage_times_free(nc_stage_times *t);

#endif

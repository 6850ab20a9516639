/* core/neocog/neocog.h — Fukushima's 2003 neocognitron for handwritten digits:
 * network description, weights, inverse-index tables, CPU forward passes,
 * training maths and model files.
 *
 * Layer: core (pure C11, no I/O, no threads, no CUDA).  Error codes as in
 * common.h.  The specification is shared/docs/neocognitron-spec.md; equation
 * numbers refer to seed 004 (Ikeda et al.).
 *
 * Shapes and layout.  Every activation is stored position-major ("HWC"):
 * cell (plane k, row y, column x) of an N-wide layer with K planes lives at
 * [(y * N + x) * nc_neocog_kstride(K) + k].  The plane stride is K rounded up
 * to a multiple of 8 and the padding lanes are always 0, so the inner loops
 * over planes are contiguous, fixed-width and vectorise.  S-layer weights use
 * the same stride on the output-plane axis:
 *
 *     a[l][(kappa * n_live + t) * ks + k]      kappa < K_in, t < n_live, k < ks
 *
 * (kappa = input plane, t = live tap of the circular mask, k = output plane,
 * ks = nc_neocog_kstride(K_out)); pad lanes k >= K_out are 0.
 *
 * Geometry (spec "Geometry"): every layer is "zero pad by pad cells, then a
 * valid correlation with a win x win window and step", so output cell o reads
 * input cell o * step - pad + t for window tap t in [0, win).  Even windows
 * sit between input cells (staggered grids), odd ones on them (aligned). */
#ifndef NC_NEOCOG_H
#define NC_NEOCOG_H

#include "common.h"
#include "modelfile.h"

#define NC_NEOCOG_MAX_STAGES 4
#define NC_NEOCOG_MAX_SIZE 1024     /* widest plane the table may ask for */
#define NC_NEOCOG_MAX_WIN 64        /* widest window */
#define NC_NEOCOG_MAX_PLANES 4096   /* cap on planes per layer (training growth) */
#define NC_NEOCOG_MAX_CLASSES NC_MF_MAX_CLASSES

/* Plane stride of a layer with k planes: k rounded up to 8 (at least 8). */
static inline uint32_t nc_neocog_kstride(uint32_t k)
{
    return k == 0 ? 8u : (k + 7u) & ~7u;
}

/* ---- the network as data ------------------------------------------------ */

typedef enum nc_neocog_grid {
    NC_NEOCOG_GRID_ALIGNED = 0,     /* odd window, output cells on input cells */
    NC_NEOCOG_GRID_STAGGERED = 1,   /* even window, offset by half a cell */
} nc_neocog_grid;

typedef enum nc_neocog_c_kind {
    NC_NEOCOG_C_POOL = 0,   /* C-layer: psi of an excitatory-centre /
                               inhibitory-surround taper, per plane */
    NC_NEOCOG_C_CLASS = 1,  /* UC4: max per class over every plane and
                               position of the S-layer (last stage only) */
} nc_neocog_c_kind;

/* One S/C stage.  Sizes are plane widths (planes are square). */
typedef struct nc_neocog_stage {
    /* S-layer: reads the previous C-layer (UG for stage 1) */
    uint32_t s_size;        /* N_S, output width */
    uint32_t s_win;         /* window width (6, or 9 at US4) */
    uint32_t s_pad;         /* zero pad of the input */
    uint32_t s_grid;        /* nc_neocog_grid; must match s_win's parity */
    float s_radius;         /* A: taps with r > A are dead */
    float theta;            /* selectivity at recognition, in (0, 1) */
    float gamma;            /* V-cell weight c(nu) = gamma^((r/A)^2) */
    uint32_t k_max;         /* most planes training may grow to */
    /* C-layer */
    uint32_t c_kind;        /* nc_neocog_c_kind */
    uint32_t c_size;        /* N_C (POOL only) */
    uint32_t c_win;         /* window width on the S grid */
    uint32_t c_pad;
    uint32_t c_step;        /* thinning: 2 at UC1..UC3 */
    uint32_t c_grid;        /* nc_neocog_grid */
    float c_radius_o;       /* A_o, excitatory centre */
    float c_radius;         /* A, whole window (A == A_o: no surround) */
} nc_neocog_stage;

typedef struct nc_neocog_arch {
    uint32_t in_size;       /* U0 width (65); input cells are ink 1 / paper 0 */
    uint32_t g_size;        /* UG width (71), planes on/off */
    uint32_t g_win;         /* 7 */
    uint32_t g_pad;         /* 6 */
    float g_radius_o;       /* 1.5, centre of the difference of Gaussians */
    float g_radius;         /* 3.3, surround and mask radius */
    float g_cut;            /* 1e-4: |x| at or below this is neither on nor off */
    uint32_t n_classes;     /* UC4 planes: 10 digits by default, 1..NC_NEOCOG_MAX_CLASSES */
    uint32_t n_stages;      /* 1..NC_NEOCOG_MAX_STAGES; the last has C_CLASS */
    nc_neocog_stage stage[NC_NEOCOG_MAX_STAGES];
} nc_neocog_arch;

/* Fukushima 2003 (spec table): 65 -> UG 71x2 -> 68 -> 37 -> 38 -> 21 -> 22 ->
 * 13 -> 5 -> 10 classes; theta .55/.51/.58/.30; k_max 16/200/300/1000. */
void nc_neocog_arch_default(nc_neocog_arch *ret);
/* Every size follows from the previous one and the window, pad and step;
 * radii, theta and gamma are sane.  0 or -EINVAL. */
int nc_neocog_arch_check(const nc_neocog_arch *a);

/* ---- inverse-index tables (shared with gpu/) ------------------------------ */

/* One correlation's geometry (an S-, C- or UG layer) and the tables built from
 * it.  Built once per layer in core so every form and the GPU kernels use the
 * same ones.  All arrays live in one allocation. */
typedef struct nc_neocog_index {
    uint32_t n_in, n_out, win, pad, step;
    float radius;
    uint32_t n_live;        /* taps with r <= radius */
    /* live tap t sits at (tap_y[t], tap_x[t]) of the win x win window, in
     * row-major order; tap_r[t] is its distance from the window centre */
    int16_t *tap_y, *tap_x; /* [n_live] */
    float *tap_r;           /* [n_live] */
    /* Per-axis clipping, compact enough for __constant__ memory: along
     * either axis output o reads input o*step - pad + t for window taps
     * t in [axis_t0[o], axis_t1[o]) (the edge-clipped window). */
    int16_t *axis_t0, *axis_t1;     /* [n_out] */
    /* Gather (inverse) index, CSR over output positions o = oy*n_out+ox:
     * entries j in [gat_ptr[o], gat_ptr[o+1]) name the input position
     * gat_in[j] = iy*n_in+ix and live tap gat_tap[j] feeding o, taps in
     * ascending order.  Edge cells simply have fewer entries. */
    int32_t *gat_ptr;       /* [n_out^2 + 1] */
    int32_t *gat_in;        /* [n_entries] */
    int16_t *gat_tap;       /* [n_entries] */
    /* Scatter index, the transpose: for input position i, entries j in
     * [sct_ptr[i], sct_ptr[i+1]) name output sct_out[j] reached through
     * live tap sct_tap[j]. */
    int32_t *sct_ptr;       /* [n_in^2 + 1] */
    int32_t *sct_out;       /* [n_entries] */
    int16_t *sct_tap;       /* [n_entries] */
    uint32_t n_entries;
    void *block_;           /* the one allocation */
} nc_neocog_index;

/* n_out must equal (n_in + 2 pad - win) / step + 1 exactly. */
int nc_neocog_index_new(uint32_t n_in, uint32_t n_out, uint32_t win,
                        uint32_t pad, uint32_t step, float radius,
                        nc_neocog_index **ret_ix);
void nc_neocog_index_free(nc_neocog_index *ix);    /* NULL is fine */

/* Fixed tap weights over an index's live taps (out has ix->n_live floats). */
void nc_neocog_taps_vcell(const nc_neocog_index *ix, float gamma, float *out);
void nc_neocog_taps_ccell(const nc_neocog_index *ix, float radius_o, float *out);
void nc_neocog_taps_ug(const nc_neocog_index *ix, float radius_o, float *out);

/* ---- the network ---------------------------------------------------------- */

/* Layers in forward order; the bench times them one by one. */
typedef enum nc_neocog_layer {
    NC_NEOCOG_L_UG = 0,
    NC_NEOCOG_L_S1 = 1, NC_NEOCOG_L_C1 = 2,
    NC_NEOCOG_L_S2 = 3, NC_NEOCOG_L_C2 = 4,
    NC_NEOCOG_L_S3 = 5, NC_NEOCOG_L_C3 = 6,
    NC_NEOCOG_L_S4 = 7, NC_NEOCOG_L_C4 = 8,
} nc_neocog_layer;
/* S-layer of stage l (0-based) is layer 1 + 2l, its C-layer 2 + 2l. */

/* The CPU forms of seed 004 Table 6, plus a plain reference. */
typedef enum nc_neocog_form {
    NC_NEOCOG_FORM_F = 0,   /* scatter with the zero-skip (the fast one) */
    NC_NEOCOG_FORM_S = 1,   /* the same scatter without the zero-skip */
    NC_NEOCOG_FORM_G = 2,   /* gather through the inverse index, one output
                               position at a time, all planes at once */
    NC_NEOCOG_FORM_REF = 3, /* plain loops straight from the equations, no
                               tables, double accumulators (slow) */
} nc_neocog_form;

/* The model.  Fields are public for reading (tests, gpu/, the trainer);
 * change them only through the functions below. */
typedef struct nc_neocog {
    nc_neocog_arch arch;
    uint32_t n_planes[NC_NEOCOG_MAX_STAGES];    /* K_S of each stage, >= 0 */
    /* fixed geometry and taps, derived from arch */
    nc_neocog_index *g_ix;                      /* UG: U0 -> UG */
    float *g_w;                                 /* [g_ix->n_live] */
    nc_neocog_index *s_ix[NC_NEOCOG_MAX_STAGES];
    float *s_c[NC_NEOCOG_MAX_STAGES];           /* V-cell c(nu), [n_live] */
    nc_neocog_index *c_ix[NC_NEOCOG_MAX_STAGES];/* NULL for C_CLASS */
    float *c_d[NC_NEOCOG_MAX_STAGES];           /* C taps d(nu), [n_live] */
    /* learned weights: one block, pointers into it (layout at the top) */
    float *params;
    size_t n_params;
    float *a[NC_NEOCOG_MAX_STAGES];             /* a_k(nu, kappa) >= 0 */
    float *b[NC_NEOCOG_MAX_STAGES];             /* b_k >= 0, [kstride(K_S)] */
    uint32_t *labels;   /* class of each last-stage plane, [K_last] (may be NULL) */
    void *fixed_;       /* allocation behind the fixed taps */
} nc_neocog;

/* A network with no learned planes (all K_S = 0). */
int nc_neocog_new(const nc_neocog_arch *arch, nc_neocog **ret_net);
void nc_neocog_free(nc_neocog *net);            /* NULL is fine */
/* Planes feeding stage l's S-layer: 2 for stage 0 (UG on/off), else K_S(l-1). */
uint32_t nc_neocog_k_in(const nc_neocog *net, uint32_t l);
/* Append a zero plane (a = 0, b = 0: it never fires) to stage l; label is
 * used for the last stage only.  Grows the next stage's input too.  Planes
 * already there keep their weights.  -ERANGE past k_max. */
int nc_neocog_add_plane(nc_neocog *net, uint32_t l, uint32_t label,
                        uint32_t *ret_k);

/* Activations of one forward pass (all position-major, see the top).  Sized
 * for the plane counts at the last call; forward re-fits it when the net grew. */
typedef struct nc_neocog_state {
    float *u0;                              /* [in_size^2] input */
    float *ug;                              /* [g_size^2][8] on, off */
    float *us[NC_NEOCOG_MAX_STAGES];        /* [s_size^2][ks] */
    float *uc[NC_NEOCOG_MAX_STAGES];        /* [c_size^2][ks]; NULL last stage */
    float *ws;                              /* scratch: v^2 and accumulators */
    uint32_t fit_planes[NC_NEOCOG_MAX_STAGES];
    int32_t label;                          /* answer of the last forward, -1 reject */
    float score[NC_NEOCOG_MAX_CLASSES];     /* UC4: max response per class */
    size_t bytes_;
    void *block_;
    size_t cap_;                            /* bytes of block_ (>= bytes_) */
} nc_neocog_state;

int nc_neocog_state_new(const nc_neocog *net, nc_neocog_state **ret_st);
void nc_neocog_state_free(nc_neocog_state *st); /* NULL is fine */
/* Copy every activation of src into dst, both fitted to the same net (as
 * after a forward of each); -EINVAL otherwise.  Lets a test or a benchmark
 * rerun one layer from another state's inputs. */
int nc_neocog_state_copy(nc_neocog_state *dst, const nc_neocog_state *src);

typedef struct nc_neocog_result {
    int32_t label;          /* class index, or -1: nothing fired (reject) */
    uint32_t n_classes;
    float score[NC_NEOCOG_MAX_CLASSES];     /* max response per class, >= 0 */
} nc_neocog_result;

/* Recognise one in_size x in_size image (cells in [0, 1], ink 1) with the
 * given form.  Every stage needs at least one plane (-EINVAL otherwise). */
int nc_neocog_forward(const nc_neocog *net, nc_neocog_state *st,
                      const float *input, int form, nc_neocog_result *ret);
/* Form B's packs (nc_neocog_s_pack_new) of a net's S-layers whose weights
 * take at least min_bytes (NC_NEOCOG_PACK_MIN_BYTES: US4 of the shipped
 * nets, 150 MB a member; the smaller layers stay in the caches as they
 * are); s[l] NULL for the others.  Made once for a net whose planes no
 * longer change; stale (-EINVAL from forward_many) after the net grows. */
#define NC_NEOCOG_PACK_MIN_BYTES ((size_t)8 << 20)
typedef struct nc_neocog_s_pack nc_neocog_s_pack;      /* below */
typedef struct nc_neocog_packs {
    nc_neocog_s_pack *s[NC_NEOCOG_MAX_STAGES];
    size_t bytes;                           /* their weights, all together */
} nc_neocog_packs;
int nc_neocog_packs_new(const nc_neocog *net, size_t min_bytes, nc_neocog_packs **ret_pk);
/* The same packs, then the net gives up its own copy of those stages'
 * weights (a[l] = NULL; the rest moves to a smaller block), so a serving
 * engine holds them once: the net then runs through nc_neocog_forward_many
 * with these packs only (every other form refuses those stages with
 * -EINVAL), and can neither grow nor be saved.  Its b, labels and fixed
 * taps stay, so nc_neocog_iv_classify works; build an nc_neocog_iv first. */
int nc_neocog_packs_take(nc_neocog *net, size_t min_bytes, nc_neocog_packs **ret_pk);
void nc_neocog_packs_free(nc_neocog_packs *pk);    /* NULL is fine */

/* nc_neocog_forward of n images at once, input[p] into st[p] and ret[p] (ret
 * may be NULL): the same states and results, bit for bit, as n calls with
 * form F.  The S-layers with a pack in pk (may be NULL) run form B over the
 * n (every weight read once for them all), the others form F image by
 * image.  A state may have served another net: each is re-fitted to net,
 * within its allocation when that is large enough.  n in
 * 1..NC_NEOCOG_MANY_MAX. */
#define NC_NEOCOG_MANY_MAX 256u
int nc_neocog_forward_many(const nc_neocog *net, const nc_neocog_packs *pk,
                           nc_neocog_state *const *st, uint32_t n,
                           const float *const *input, nc_neocog_result *ret);
/* Run one layer on the state (the input of the layer must already be there:
 * st->u0 for UG).  For timing and for training, which stops early. */
int nc_neocog_run_layer(const nc_neocog *net, nc_neocog_state *st,
                        int layer, int form);
/* Output of a layer in the state, its width, planes and plane stride. */
int nc_neocog_layer_out(const nc_neocog *net, const nc_neocog_state *st,
                        int layer, const float **ret_out, uint32_t *ret_size,
                        uint32_t *ret_planes, uint32_t *ret_stride);
/* Cells > 0 in a layer's output (padding lanes excluded). */
int nc_neocog_layer_nnz(const nc_neocog *net, const nc_neocog_state *st,
                        int layer, size_t *ret_nnz, size_t *ret_cells);

/* ---- single layers (what the forms test and the GPU parity tests call) ---- */

/* S-layer, seed equations 1-3:
 *   e(n,k)  = sum_kappa sum_t a[kappa][t][k] * in(n + nu_t, kappa)
 *   v(n)    = sqrt(sum_kappa sum_t c[t] * in(n + nu_t, kappa)^2)
 *   out     = theta/(1-theta) * max(0, (1 + e)/(1 + theta * b[k] * v) - 1)
 * in: [n_in^2][in_stride] (>= k_in, values >= 0); out: [n_out^2][ks(k_out)],
 * pad lanes come out 0; ws: nc_neocog_s_ws_floats() floats.  Weights must
 * keep their pad lanes (k >= k_out) at 0 in a and >= 0 in b, as the net's
 * do.  Every form writes every cell of out. */
typedef struct nc_neocog_s_args {
    const nc_neocog_index *ix;
    uint32_t k_in, in_stride, k_out;
    const float *a;         /* [k_in][n_live][ks(k_out)], >= 0 */
    const float *b;         /* [ks(k_out)], >= 0 */
    const float *c;         /* [n_live] */
    float theta;
} nc_neocog_s_args;
size_t nc_neocog_s_ws_floats(const nc_neocog_index *ix, uint32_t k_out);
int nc_neocog_s_forward(const nc_neocog_s_args *s, const float *in,
                        float *out, float *ws, int form);
/* Form F for planes [k0, k1) only (core/neocog/neocog_forms.c): of out, the whole
 * [n_out^2][ks(k_out)] layer, only columns k0..k1-1 are written, each
 * bit-identical to what nc_neocog_s_forward(s, in, out, ws, FORM_F) gives
 * there, so ranges computed apart (side by side, by the learner's parts)
 * make up the same layer.  k0, k1 multiples of 8 with k0 < k1 <= ks(k_out);
 * ws as for nc_neocog_s_forward, one per concurrent call. */
int nc_neocog_s_forward_planes(const nc_neocog_s_args *s, const float *in,
                               float *out, float *ws, uint32_t k0, uint32_t k1);
/* Form B (core/neocog/neocog_batch.c): the S-layer of n inputs at once on one set
 * of weights, in[p] -> out[p] (shapes as nc_neocog_s_forward), each out[p]
 * bit-identical to nc_neocog_s_forward(s, in[p], out[p], ws, FORM_F).  Reads
 * each weight once for all n (the CPU engine's passes of one member: a big
 * last stage is bound by reading its weights), from a pack: a copy of the
 * weights laid out in tiles of output planes, made once (pk NULL: made and
 * freed in the call).  Scratch is allocated per call.  -EINVAL for bad
 * arguments, n of 0 or a pack made for other sizes; -ENOMEM. */
int nc_neocog_s_pack_new(const nc_neocog_s_args *s, nc_neocog_s_pack **ret_pk);
void nc_neocog_s_pack_free(nc_neocog_s_pack *pk);  /* NULL is fine */
int nc_neocog_s_forward_many(const nc_neocog_s_args *s, const nc_neocog_s_pack *pk,
                             uint32_t n, const float *const *in, float *const *out);
/* A layer's non-zero planes, position by position, as the GPU's list S
 * kernel reads its input (gpu/neocog/neocog_list.cuh): for each of n_pos positions
 * of in ([n_pos][stride], planes 0..k-1), cnt[p] = its planes with a
 * non-zero value, q[p] = the sum of their squares (the V-cell's part of
 * the position), and entries ent[2 (p k + j)], ent[2 (p k + j) + 1] for
 * j < cnt[p]: the bits of the value and kappa * mul (the consumer's weight
 * offset of plane kappa), planes in ascending order.  Slots past cnt[p]
 * are left as they were.  -EINVAL for k of 0 or past 65535, stride < k,
 * or offsets past int32. */
int nc_neocog_list_build(const float *in, size_t n_pos, uint32_t k, uint32_t stride,
                         uint32_t mul, uint16_t *cnt, float *q, int32_t *ent);
/* C-layer: out(n,k) = psi(sum_t d[t] * in(step*n + nu_t, k)), psi(x) =
 * x/(1+x) for x > 0 else 0.  in/out: [n^2][ks(k)]; ws as for S. */
size_t nc_neocog_c_ws_floats(const nc_neocog_index *ix, uint32_t k);
int nc_neocog_c_forward(const nc_neocog_index *ix, const float *d, uint32_t k,
                        const float *in, float *out, float *ws, int form);
/* UG: x = sum_t g[t] * u0; out [n_out^2][8]: lane 0 on = x if x > cut,
 * lane 1 off = -x if x < -cut.  ws as for C with k = 1. */
int nc_neocog_g_forward(const nc_neocog_index *ix, const float *g, float cut,
                        const float *in, float *out, float *ws, int form);

/* ---- training maths --------------------------------------------------------- */

/* Reinforce (spec): for every input plane kappa and live tap nu with
 * in(n + nu, kappa) > 0 add q * c(nu) * in(n + nu, kappa) to a_k(nu, kappa),
 * then b_k = sqrt(sum a_k^2 / c).  in is stage l's input layer as held in a
 * state (UG for l = 0, else uc[l-1]); (y, x) an S-layer position. */
int nc_neocog_reinforce(nc_neocog *net, uint32_t l, uint32_t k,
                        uint32_t y, uint32_t x, float q, const float *in);
/* US1, supervised (spec step 1): for each of n_orient orientations draw an
 * antialiased half-disc edge at angle 2 pi k / n_orient, run UG, open plane k
 * and reinforce it once at US1's centre with q.  Stage 0 must be empty. */
int nc_neocog_train_us1(nc_neocog *net, uint32_t n_orient, float q);
/* The antialiased edge image of orientation k (in_size^2 floats). */
void nc_neocog_draw_edge(uint32_t in_size, uint32_t k, uint32_t n_orient,
                         float *out);

/* A deterministic INITIALISER, not training: it gives stages 2..L planes that
 * look like trained ones so the forward pass can be exercised and timed on
 * realistic sparsity.  Digits are visited in order (passes over them at most
 * max_passes times); for stages 1..L-1 each digit's seed map (input activity
 * tapered by c(nu), normalised to its maximum, minus 0.4, minus 4 x the
 * D-tapered responses of existing planes at theta) opens planes at its
 * strongest positions, each reinforced once there (b normalised to 100), the
 * map cleared within D = 3.1 cells; for the last stage a plane labelled with
 * the digit's class is opened where the map peaks whenever the current
 * network answers that digit wrongly or not at all.  Stops at target[l]
 * planes per stage.  Stage 0 must hold its planes already (train_us1).
 * digits: n x in_size^2 cells; labels: n classes < n_classes. */
int nc_neocog_seed_from_digits(nc_neocog *net, const float *digits,
                               const uint8_t *labels, uint32_t n,
                               const uint32_t *target, uint32_t max_passes);

/* ---- model files ------------------------------------------------------------ */

/* Sections: NSTG (u32 stage table), NSTF (f32 stage table), NPLN (u32 plane
 * counts), NLBL (u32 last-stage labels), the weights a of each stage l = 1..4
 * in one of two forms, B1..B4 (f32 b), plus the INFO of nc_mf_put_info.
 * Every stage needs >= 1 plane to be saved.
 *
 * Weight forms.  Both list stage l's n = K * K_in * n_live weights in the
 * order [k][kappa][t] (t over live taps), i.e. file index
 * j = (k * K_in + kappa) * n_live + t holds a[(kappa * n_live + t) * ks + k];
 * pad lanes k >= K are not stored (they are 0 in memory).
 *   dense:  "W<l>  " f32 [n], every weight, each >= 0.
 *   sparse: "W<l>M " u32 [ceil(n / 32)], a bitmap of the weights that are
 *           not +0.0: weight j is bit (j % 32) (value 1 << (j % 32)) of word
 *           j / 32; bits at j >= n in the last word are 0;
 *           "W<l>V " f32 [popcount of the bitmap], those weights in the order
 *           of j, each finite and > 0 (the zeros are implicit and +0.0).
 * Trained weights are non-negative and mostly zero (the shipped model's US4
 * is 9.7 % non-zero), so sparse costs 1 bit per weight plus 4 bytes per
 * non-zero one.  nc_neocog_write picks, per stage, whichever form makes the
 * smaller file (sparse only when every weight is +0.0 or finite and > 0);
 * nc_neocog_read accepts either, exactly one per stage, and gives back the
 * same bits.  Still format version 1: the format has not been released.
 *
 * The classifier choice (written by tools/, read by whoever answers):
 *   "NIVT"   u32 [1] top_t in 1..256: answer with the interpolating-vector
 *            classifier (nc_neocog_iv_new(net, top_t)) instead of the max
 *            response of UC4.  Absent: max response. */
#define NC_NEOCOG_TAG_IV NC_MF_TAG('N', 'I', 'V', 'T')

int nc_neocog_write(const nc_neocog *net, nc_mf_writer *w);
int nc_neocog_save(const nc_neocog *net, const nc_model_info *info,
                   uint8_t **ret_buf, size_t *ret_len);

/* Value forms (flags), for files that must be small.
 * Half precision: every sparse stage stores its values as IEEE binary16
 * ("W<l>H " bytes [2 x popcount], little-endian, each finite and > 0; a
 * value below the smallest subnormal is stored as that subnormal) instead of
 * "W<l>V ", about half the file.  A stage with a value too large for
 * binary16 stays f32.  What is read back is the rounded weights, so a file
 * written this way must be measured as written (the committee tool does). */
#define NC_NEOCOG_WRITE_HALF 1u

/* 8-bit logarithmic codes: every sparse stage stores each plane's largest
 * weight as its scale ("W<l>S " f32 [K]) and each non-zero weight as a code
 * q ("W<l>Q " bytes [popcount]) meaning scale x 2^((q - 255) / 16): 16 codes
 * a doubling, down to 2^-16 of the plane's largest (smaller weights become
 * that), a relative step of 4.4 %.  A quarter of the f32 values' bytes.
 * The trained weights spread over nine decades, which binary16 keeps and a
 * linear 8-bit scale would not; the few large weights dominate each sum, so
 * the rounding moves answers rarely (models/README.md measures it).  Not
 * with NC_NEOCOG_WRITE_HALF; measure such a file as written. */
#define NC_NEOCOG_WRITE_LOG8 2u
int nc_neocog_write_flags(const nc_neocog *net, nc_mf_writer *w, uint32_t flags);
int nc_neocog_save_flags(const nc_neocog *net, const nc_model_info *info, uint32_t flags,
                         uint8_t **ret_buf, size_t *ret_len);
/* Check every section against every other; -EBADMSG on any disagreement. */
int nc_neocog_read(const nc_mf_reader *r, nc_neocog **ret_net);
/* ret_info may be NULL. */
int nc_neocog_load(const uint8_t *buf, size_t len, nc_neocog **ret_net,
                   nc_model_info *ret_info);
/* The file's classifier: *ret_top_t = the NIVT top_t, or 0 when there is no
 * NIVT (max response).  -EBADMSG when NIVT is there but not one u32 in
 * 1..256. */
int nc_neocog_read_iv(const nc_mf_reader *r, uint32_t *ret_top_t);

/* ---- committees in one model file (neocog_committee.c) ----------------------
 *
 * A committee is N >= 1 neocognitrons with the same input size, classes,
 * labels and preprocessing (their planes differ: each learnt from its own
 * order of the digits).  Its raw scores are the mean of the members' raw
 * scores (each member's own answer: interpolating vectors when it carries
 * NIVT, else max response), summed in member order and divided by N.
 * Members trained alike but on different orders of the digits get different
 * digits wrong: models/README.md measures the gain.
 *
 * File form (kind NC_MF_KIND_NEOCOG), as the CNN committees' (cnn.h):
 *   N = 1   exactly the one-network file above: old and new readers alike;
 *   N >= 2  NMEM  u32[1]  N (2..NC_NEOCOG_MAX_MEMBERS)
 *           NM01 .. NMnn  bytes: each member as a complete one-network file
 *                         (nc_neocog_save's image, its own CRC, its own info
 *                         and NIVT mark)
 *           + nc_mf_put_info's sections for the committee itself
 *           and no network sections (NSTG ...) of its own.
 * Views (image.h: each digit prepared several ways, at several heights or
 * shears) belong to the file's own record, never a member's.  Each member
 * answers on the views with its own deskew (the shear it was trained on),
 * at every height; every view must serve some member and every member see
 * some view, and the members' records then need not agree on box and
 * deskew.  The engines sum the scores member by member, each member's views
 * in view order, and divide by the number of scores (n_scores).
 * Other sections (calibration, core/calib/calib.h) may follow in either form. */
#define NC_NEOCOG_MAX_MEMBERS 16u
#define NC_NEOCOG_TAG_NMEM NC_MF_TAG('N', 'M', 'E', 'M')

/* ---- the cascade (neocog_cascade.c) ------------------------------------------
 *
 * A committee may answer a digit from one member alone: the first member
 * runs its views, and when its calibrated confidence in its top class is at
 * least a threshold fitted on validation (neocog-train cascade), its mean
 * over its views is the answer; otherwise every member runs and the answer
 * is the committee's mean as without a cascade (bit for bit: the first
 * member's scores are added at its place in member order).  Most digits
 * are easy, so most pay for one member's passes.
 *
 * Confidence: p_k ∝ s_k^beta over the classes that fired (core/calib/calib.h's
 * neocognitron rule, with the first member's own beta, fitted on its mean
 * scores), max_k p_k; 0 when nothing fired.  The first member decides when
 * confidence >= threshold; threshold 0 makes it answer every digit, even one
 * it has no opinion on (the fitting tool's way to read one member alone).
 *
 * The one-view stage (optional): before the first member's other views,
 * it runs on one of them, view, alone; when that view's confidence (with
 * its own view_beta, fitted on that view's scores) reaches view_threshold,
 * the view's scores are the answer.  Other digits go on as above: the
 * member's remaining views, its mean over all its views (the same sum, in
 * view order, as without the stage), then the committee.  A single view of
 * one member is about a third of the work of three, and most digits are
 * plain enough for it.
 *
 * File form: two sections of a committee file (N >= 2), both or neither:
 *   NCSM  u32[1]  the first member, 0..N-1
 *   NCST  f64[2]  threshold in [0, 1], beta in (0, NC_NEOCOG_CASCADE_MAX_BETA]
 * and, only with them, the one-view stage's two, both or neither:
 *   NCVV  u32[1]  the view, one of the first member's (< NC_PREP_MAX_VIEWS)
 *   NCVT  f64[2]  view_threshold, view_beta, bounded as NCST's
 * A file without them answers as before.  One without the other, other
 * lengths, values out of range, the sections in a one-network file, or a
 * view stage without NCSM/NCST: -EBADMSG (nc_neocog_cascade_read says
 * which); a view that is not one of the first member's, or the first
 * member's only view: -EBADMSG from nc_neocog_committee_load
 * (nc_neocog_cascade_view_why names it). */
#define NC_NEOCOG_TAG_CASM NC_MF_TAG('N', 'C', 'S', 'M')
#define NC_NEOCOG_TAG_CAST NC_MF_TAG('N', 'C', 'S', 'T')
#define NC_NEOCOG_TAG_CAVV NC_MF_TAG('N', 'C', 'V', 'V')
#define NC_NEOCOG_TAG_CAVT NC_MF_TAG('N', 'C', 'V', 'T')
#define NC_NEOCOG_CASCADE_MAX_BETA 1e4

typedef struct nc_neocog_cascade {
    int on;
    uint32_t first;         /* the member that answers first */
    double threshold;       /* its confidence that decides, in [0, 1] */
    double beta;            /* its calibration: p_k ∝ s_k^beta */
    int view_on;            /* the one-view stage (needs on) */
    uint32_t view;          /* the file's view it runs, one of first's */
    double view_threshold;  /* that view's confidence that decides */
    double view_beta;       /* its calibration on that view's own scores */
} nc_neocog_cascade;

/* Is tag one of the cascade's sections?  (Rewriters drop them.) */
int nc_neocog_cascade_is_tag(uint32_t tag);
/* Read the sections of an open file of n_members members (1: the
 * one-network form).  Neither there: *ret off, 0.  Else 0 with *ret on, or
 * -EBADMSG with *ret_why (may be NULL) a phrase naming what is wrong. */
int nc_neocog_cascade_read(const nc_mf_reader *r, uint32_t n_members, nc_neocog_cascade *ret,
                           const char **ret_why);
/* Write c's sections (nothing when c is off); -EINVAL for values the
 * reader would refuse (the member is checked by the reader only). */
int nc_neocog_cascade_write(nc_mf_writer *w, const nc_neocog_cascade *c);
/* The first member's confidence in its top class from its mean scores
 * score[n_classes] (above); 0 when nothing fired. */
double nc_neocog_cascade_confidence(double beta, const float *score, uint32_t n_classes);
/* The file image buf with its cascade sections (if any) replaced by c's
 * (none when c is off); every other section byte for byte.  Whether the
 * result loads is nc_neocog_committee_load's to say. */
int nc_neocog_cascade_rewrite(const uint8_t *buf, size_t len, const nc_neocog_cascade *c,
                              uint8_t **ret_buf, size_t *ret_len);
/* 1 when c is on and the first member's mean scores decide the digit. */
int nc_neocog_cascade_decides(const nc_neocog_cascade *c, const float *score,
                              uint32_t n_classes);
/* 1 when c's one-view stage is on and that view's scores decide the digit. */
int nc_neocog_cascade_view_decides(const nc_neocog_cascade *c, const float *score,
                                   uint32_t n_classes);
/* NULL when c's one-view stage (if any) fits the first member's views
 * (view_mask[first], bit v = view v), else the phrase. */
const char *nc_neocog_cascade_view_why(const nc_neocog_cascade *c, const uint32_t *view_mask);

typedef struct nc_neocog_committee {
    uint32_t n_members;
    nc_neocog **member;             /* [n_members] */
    nc_model_info *member_info;     /* [n_members]: each member's own record */
    uint32_t *iv_top_t;             /* [n_members]: NIVT's top_t, 0 = max response */
    uint32_t *view_mask;            /* [n_members]: bit v = the member answers on
                                       view v of the file's prep; 1 without views */
    uint32_t n_scores;              /* set bits of every mask: what the mean divides by */
    nc_neocog_cascade cascade;      /* on 0: every member answers every digit */
} nc_neocog_committee;

/* NULL when member b may join a committee whose member a is (same input
 * size, classes, labels and preprocessing), else a short English phrase
 * naming what differs.  For committees without views. */
const char *nc_neocog_committee_mismatch(const nc_neocog *a, const nc_model_info *ia,
                                         const nc_neocog *b, const nc_model_info *ib);

/* NULL when a member with record mem may sit in a committee whose own
 * record is com, else the phrase: no views of its own, and the same record
 * as com's (classes, labels, prep) or, when com has views, the same but for
 * box and deskew, with some view of the member's deskew. */
const char *nc_neocog_member_mismatch(const nc_model_info *com, const nc_model_info *mem);

/* Save n members (nets[i], its record info_i[i], its classifier top_t[i])
 * as one file whose own record is *info; flags as nc_neocog_save_flags,
 * for every member.  n == 1 writes the one-network form (with NIVT when
 * top_t[0]), whose only record is *info.  -EINVAL for n outside
 * 1..NC_NEOCOG_MAX_MEMBERS, members that disagree with *info
 * (nc_neocog_member_mismatch; for n == 1 the network's own record, less its
 * views), or views that serve no member. */
int nc_neocog_committee_save(const nc_neocog *const *nets, const nc_model_info *info_i,
                             const uint32_t *top_t, uint32_t n, const nc_model_info *info,
                             uint32_t flags, uint8_t **ret_buf, size_t *ret_len);

/* Load either form; every member through nc_neocog_load's checks.  A
 * missing, extra or disagreeing member, a count outside the range, network
 * sections beside NMEM or a bad NIVT anywhere: -EBADMSG.  ret_info (may be
 * NULL) gets the file's own record. */
int nc_neocog_committee_load(const uint8_t *buf, size_t len, nc_neocog_committee **ret_c,
                             nc_model_info *ret_info);
void nc_neocog_committee_free(nc_neocog_committee *c);     /* NULL is fine */

/* Why nc_neocog_committee_load refuses buf with -EBADMSG, when the file as
 * a whole is at fault (its classes, its members' views, its cascade's
 * sections or view): a sentence for the user; NULL when it loads or fails
 * otherwise (a member, memory). */
const char *nc_neocog_committee_why(const uint8_t *buf, size_t len);

/* Member m (0-based) of either form, with its own record and classifier
 * mark (ret_info, ret_top_t may be NULL): for tools and tests that study one
 * network of whatever neocognitron file they are given.  -ENOENT when the
 * file has no member m; else as nc_neocog_committee_load. */
int nc_neocog_load_member(const uint8_t *buf, size_t len, uint32_t m, nc_neocog **ret_net,
                          nc_model_info *ret_info, uint32_t *ret_top_t);

/* ---- learning (core/neocog/neocog_learn.c) ------------------------------------------
 *
 * The stage-by-stage training of the spec ("Training"), one pattern at a time
 * so that the trainer owns order, passes, progress and checkpoints:
 *
 *  - nc_neocog_learn_unsup: US2/US3 (any middle stage), unsupervised with
 *    plane creation, or with add-if-silent;
 *  - nc_neocog_learn_sup: US4 (the last stage), supervised;
 *  - nc_neocog_iv_* (core/neocog/neocog_iv.c, inference): the
 *    interpolating-vector classifier (Fukushima 2007) on top of a trained
 *    network, an alternative to the max-response answer.
 *
 * Lower stages are frozen and run at their recognition thresholds (the arch
 * table's theta).  Everything is deterministic: no randomness at all, ties go
 * to the lowest plane / position index. */

typedef struct nc_neocog_learn_opts {
    float theta_l[NC_NEOCOG_MAX_STAGES];   /* learning threshold theta_L,
                                              > theta (spec: .80/.80/.70) */
    float theta_inhib[NC_NEOCOG_MAX_STAGES]; /* threshold of the responses that
                                              inhibit the seed map; 0: the
                                              stage's recognition theta (spec) */
    float q[NC_NEOCOG_MAX_STAGES];         /* reinforcement gain (spec 0.5) */
    float seed_cut;         /* 0.4: seed map = normalised activity - cut */
    float inhib_gain;       /* 4: map -= gain x tapered summed responses */
    float d;                /* 3.1: hypercolumn / inhibition radius, S cells */
    int add_if_silent;      /* 1: middle stages use add-if-silent instead */
    int form;               /* nc_neocog_form for the frozen lower stages */
} nc_neocog_learn_opts;

/* The spec's values for arch's stages (theta_l .80/.80/.70 on stages 2-4,
 * q 0.5, cut 0.4, gain 4, D 3.1, plane creation, form F). */
void nc_neocog_learn_opts_default(nc_neocog_learn_opts *ret);

/* What one pattern did. */
typedef struct nc_neocog_learn_step {
    uint32_t reinforced;    /* existing planes reinforced */
    uint32_t created;       /* planes opened */
    int32_t answer;         /* learn_sup: label of the global winner before
                               learning (at theta_L), -1 nothing fired */
    int at_k_max;           /* a plane was wanted but the stage is full */
} nc_neocog_learn_step;

/* Scratch for the learning steps: a state plus buffers sized for every
 * stage's k_max.  Made for one net's arch; reusable across steps. */
typedef struct nc_neocog_learner nc_neocog_learner;
int nc_neocog_learner_new(const nc_neocog *net, nc_neocog_learner **ret_lr);
void nc_neocog_learner_free(nc_neocog_learner *lr);    /* NULL is fine */

/* One unsupervised step on stage l (1 <= l < n_stages - 1) for one input
 * image (in_size^2 cells, ink 1).  Stages below l must hold planes.
 * Plane creation (spec step 2): responses at theta_L[l]; winner-take-all in
 * hypercolumns (a position survives when no other within d has a larger
 * maximum over planes); each plane's strongest surviving position is
 * reinforced.  Then the seed map (input activity under the V-cell taper c,
 * normalised to its maximum, minus seed_cut, clipped at 0) minus
 * inhib_gain x the normalised 0.7^((r/d)^2) taper of the summed responses
 * at theta_inhib; while its maximum is > 0 and K < k_max a plane opens
 * there, is reinforced, inhibits the map with its own response and zeroes
 * it within d.
 * Add-if-silent (option): no reinforcement; the seed map is walked from its
 * maximum down (zeroing within d of each visited position) and a plane is
 * opened at each visited position where every plane is silent at
 * theta_inhib (theta by default; at theta_L every pattern opens planes). */
int nc_neocog_learn_unsup(nc_neocog *net, nc_neocog_learner *lr, uint32_t l,
                          const float *image, const nc_neocog_learn_opts *o,
                          nc_neocog_learn_step *ret);

/* One supervised step on the last stage (spec step 3): the global winner of
 * the last S-layer at theta_L; right label -> reinforce it at its position,
 * else (or nothing fired) open a plane labelled `label` at the seed map's
 * maximum and reinforce it there. */
int nc_neocog_learn_sup(nc_neocog *net, nc_neocog_learner *lr,
                        const float *image, uint32_t label,
                        const nc_neocog_learn_opts *o, nc_neocog_learn_step *ret);

/* ---- parallel learning (core/neocog/neocog_learn.c, core/neocog/neocog_forms.c) ------------
 *
 * Core starts no threads.  A caller that has them lends a learner a runner,
 * and the supervised last stage then spreads its work over n_parts parts:
 *  - the frozen lower stages of a batch of patterns (they do not change while
 *    the last stage learns), one pattern per part at a time;
 *  - each pattern's last-stage responses, by plane ranges (each part writes
 *    its own planes, with form F's arithmetic lane for lane).
 * Every decision (winner, reinforce or open a plane) stays sequential and in
 * pattern order, so the network learnt is bit-for-bit the same for every
 * n_parts and every runner, and the same as nc_neocog_learn_sup one pattern
 * at a time.
 *
 * run(ctx, task, arg, n_parts) must call task(arg, p) exactly once for every
 * p in [0, n_parts), in any order, on any threads, and return 0 once every
 * call has returned; or return a negative errno having called none (the
 * learner then calls them itself, in turn). */
#define NC_NEOCOG_MAX_PARTS 256
typedef void (*nc_neocog_task_fn)(void *arg, uint32_t part);
typedef int (*nc_neocog_runner_fn)(void *ctx, nc_neocog_task_fn task, void *arg,
                                   uint32_t n_parts);

/* Lend lr a runner for n_parts parts (1..NC_NEOCOG_MAX_PARTS).  run NULL:
 * the parts run in turn on the calling thread (what a new learner does, with
 * n_parts 1, which also keeps nc_neocog_learn_sup on its plain path).  Once
 * set, nc_neocog_learn_sup splits the last-stage responses too. */
int nc_neocog_learner_set_runner(nc_neocog_learner *lr, uint32_t n_parts,
                                 nc_neocog_runner_fn run, void *ctx);

/* nc_neocog_learn_sup for n patterns in order (images: n x in_size^2 cells;
 * labels: n classes < n_classes; steps: n results).  The frozen stages of
 * all n run first, spread over the runner's parts (n_parts states, n inputs
 * of the last stage held at once: the caller picks n to bound memory, e.g.
 * 16 per part).  On an error the patterns before the failing one have been
 * learnt; *ret_done (may be NULL) says how many. */
int nc_neocog_learn_sup_batch(nc_neocog *net, nc_neocog_learner *lr,
                              const float *images, const uint32_t *labels,
                              uint32_t n, const nc_neocog_learn_opts *o,
                              nc_neocog_learn_step *steps, uint32_t *ret_done);

/* Interpolating-vector classifier (Fukushima 2007), our reading of it.
 * Reference vectors are the last stage's planes X_k (weights a_k in the
 * V-cell metric, |X_k| = b_k); the test vector x is the last S-layer's input
 * window at a position.  Similarity = cosine s_k = e_k / (b_k v), recovered
 * exactly from the S response u > 0 (planes that did not fire take no part).
 * For every class, the top_t best planes at a position are paired; the
 * best-matching point of each segment between two same-label reference
 * vectors (closed form, the projection onto their cone) scores
 * sqrt(p a + q b) with p, q >= 0 the cone coefficients, else the better end.
 * A class scores its best segment or single vector over all positions; the
 * answer is the best class.  Needs the Gram matrix of same-label planes,
 * computed once by nc_neocog_iv_new. */
typedef struct nc_neocog_iv nc_neocog_iv;
int nc_neocog_iv_new(const nc_neocog *net, uint32_t top_t, nc_neocog_iv **ret_iv);
void nc_neocog_iv_free(nc_neocog_iv *iv);              /* NULL is fine */
/* After nc_neocog_forward(net, st, ...): per-class IV scores (cosines in
 * [0, 1]) and the answer (-1 when nothing fired). */
int nc_neocog_iv_classify(const nc_neocog_iv *iv, const nc_neocog *net,
                          const nc_neocog_state *st, nc_neocog_result *ret);

/* The classifier's tables, read-only, for a copy elsewhere (gpu/neocog/neocog_iv):
 * the planes of class c are members[cls_off[c] .. cls_off[c+1]) in ascending
 * order, and the cosine of members i and j of class c (indices within the
 * class) is gram[gram_off[c] + i * n_c + j], n_c = cls_off[c+1] - cls_off[c].
 * The pointers live as long as iv. */
typedef struct nc_neocog_iv_view {
    uint32_t top_t, K, n_classes;
    const uint32_t *cls_off;        /* [n_classes + 1] */
    const uint32_t *members;        /* [K] */
    const size_t *gram_off;         /* [n_classes + 1] */
    const float *gram;              /* [gram_off[n_classes]] */
} nc_neocog_iv_view;
int nc_neocog_iv_get_view(const nc_neocog_iv *iv, nc_neocog_iv_view *ret);

#endif

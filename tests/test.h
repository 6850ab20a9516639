/* tests/test.h — the handful of assertion macros every test uses.
 *
 * A failed check prints where and why and marks the test failed; the test
 * keeps going so one run shows every failure.  main() ends with
 * `return nc_test_finish();`, which exits 1 if anything failed.  A test that
 * cannot run here (no GPU, no data) returns NC_TEST_SKIP (77, meson's skip). */
#ifndef NC_TEST_H
#define NC_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define NC_TEST_SKIP 77

static int nc_test_failures;
static int nc_test_checks;

#define CHECK(cond) do {                                                     \
    nc_test_checks++;                                                        \
    if (!(cond)) {                                                           \
        nc_test_failures++;                                                  \
        fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                        \
} while (0)

#define CHECK_MSG(cond, ...) do {                                            \
    nc_test_checks++;                                                        \
    if (!(cond)) {                                                           \
        nc_test_failures++;                                                  \
        fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
        fprintf(stderr, __VA_ARGS__);                                        \
        fputc('\n', stderr);                                                 \
    }                                                                        \
} while (0)

#define CHECK_INT_EQ(a, b) do {                                              \
    long long va_ = (long long)(a), vb_ = (long long)(b);                    \
    CHECK_MSG(va_ == vb_, "%s = %lld, %s = %lld", #a, va_, #b, vb_);         \
} while (0)

/* |a - b| <= abs_tol + rel_tol * |b| */
#define CHECK_NEAR(a, b, abs_tol, rel_tol) do {                              \
    double va_ = (double)(a), vb_ = (double)(b);                             \
    CHECK_MSG(fabs(va_ - vb_) <= (abs_tol) + (rel_tol) * fabs(vb_),          \
              "%s = %.9g, %s = %.9g", #a, va_, #b, vb_);                     \
} while (0)

/* Stop this test function early when a precondition fails. */
#define REQUIRE(cond) do {                                                   \
    int ok_ = !!(cond);   /* evaluated once: cond may allocate */            \
    CHECK_MSG(ok_, "required");                                              \
    if (!ok_) return;                                                        \
} while (0)

static inline int nc_test_finish(void)
{
    fprintf(stderr, "%d checks, %d failed\n", nc_test_checks, nc_test_failures);
    return nc_test_failures ? 1 : 0;
}

/* Small deterministic PRNG (xorshift64*) so tests repeat exactly. */
typedef struct { unsigned long long s; } nc_test_rng;
static inline unsigned long long nc_test_next(nc_test_rng *r)
{
    r->s ^= r->s >> 12; r->s ^= r->s << 25; r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ULL;
}
/* uniform in [0, 1) */
static inline double nc_test_uniform(nc_test_rng *r)
{
    return (double)(nc_test_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

#endif

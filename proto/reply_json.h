/* proto/reply_json.h — a recognition Result as JSON: the one schema that
 * `neocog recognize --format json` prints per file and neocogd's HTTP
 * POST /v1/recognize answers per image (docs/api.md describes it).
 *
 * Layer: proto (pure formatting onto a FILE *, which may be an
 * open_memstream buffer); nothing here allocates except through stdio. */
#ifndef NC_REPLY_JSON_H
#define NC_REPLY_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "neocog.pb-c.h"

/* A JSON string literal, quotes included: " \ and control characters
 * escaped (\n, \t..., else \u00XX); bytes >= 0x80 pass through (UTF-8 in,
 * UTF-8 out).  NULL prints as null. */
void nc_json_string(FILE *to, const char *s);
/* A JSON number; NaN and infinities, which JSON lacks, print as null. */
void nc_json_number(FILE *to, double v);

/* Why an answer is rejected, in words ("no ink", "below threshold"...);
 * "" for REJECT_NONE, "unknown" outside the enum. */
const char *nc_reject_reason_text(Neocog__RejectReason r);

/* One text line of a segmented Result: its digits (res->digits[first ..
 * first + count), consecutive with one Digit.line), their union box, the
 * least confidence among them and whether one is rejected, with the first
 * rejected digit's reason. */
typedef struct nc_result_line {
    size_t first, count;
    uint32_t x0, y0, x1, y1;    /* box: [x0, x1) x [y0, y1) */
    float confidence;
    int reject;                 /* a digit of it is rejected */
    Neocog__RejectReason reject_reason;
} nc_result_line;

/* The lines of res into lines[cap], top to bottom; returns how many there
 * are (may exceed cap: only cap are written).  0 for an unsegmented result
 * or one without digits. */
size_t nc_result_lines(const Neocog__Result *res, nc_result_line *lines, size_t cap);
/* The text of digits [first, first + count) of res into dst (each digit's
 * text, "?" when it has none, a space before each one with space_before),
 * cut to fit cap. */
void nc_result_line_text(const Neocog__Result *res, const nc_result_line *line, char *dst,
                         size_t cap);

/* The members of one image's JSON object that come after the caller's own
 * (the client writes "file", "width", "height" first): "model", "label",
 * "text", "confidence", "reject", "reject_reason", "threshold", "top",
 * "scores", "digits" and "lines" when segmented, and "timing_us" when the
 * reply has timing.  No braces, no leading comma.  rp is the Reply holding
 * res (its model name and timing). */
void nc_json_result_members(FILE *to, const Neocog__Reply *rp, const Neocog__Result *res);
/* "error":{"code":CODE,"message":MSG} for an image that failed. */
void nc_json_error_members(FILE *to, const char *code, const char *message);

#endif

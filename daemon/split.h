/* daemon/split.h — split an image of several handwritten characters into
 * one box per character.
 *
 * Layer: daemon (pure computation over core/image; kept apart so the rule
 * can be tested and replaced on its own).  The rule, deliberately simple:
 * Otsu-binarise the light-ink image, take 8-connected components, drop
 * specks (area below 1/25 of the largest component, or under 3 pixels),
 * sort by left edge, and merge a component into its left neighbour's box
 * when their column ranges overlap by at least half of the narrower one
 * (a broken 5 or 7 stays one character).  Boxes come out left to right. */
#ifndef NC_SPLIT_H
#define NC_SPLIT_H

#include "image.h"

/* ink: light ink on dark ground.  At most max boxes (-ERANGE beyond);
 * no ink: *ret_n = 0 and 0. */
int nc_split_digits(const nc_image *ink, nc_rect *boxes, uint32_t max, uint32_t *ret_n);

#endif

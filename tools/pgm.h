/* tools/pgm.h — Netpbm grey images (PGM, P2 and P5) for the command-line
 * tools.  The daemon has its own decoders for untrusted input (issue 4). */
#ifndef NC_PGM_H
#define NC_PGM_H

#include "image.h"

/* Parse a PGM held in buf into *ret (ret->pixels is malloc'd: the caller
 * frees it).  Max values above 255 are scaled down.  Returns 0 or a
 * negative errno: -EBADMSG malformed or truncated, -ERANGE absurd size. */
int nc_pgm_parse(const uint8_t *buf, size_t len, nc_image *ret);

/* Encode an image as binary PGM (P5) into a malloc'd buffer. */
int nc_pgm_encode(const nc_image *img, uint8_t **ret_buf, size_t *ret_len);

#endif

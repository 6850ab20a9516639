/* core/modelfile/modelfile_internal.h — what modelfile.c (the container)
 * gives modelfile_info.c (the sections built on it) beyond modelfile.h.
 *
 * Layer: core, private to the model file. */
#ifndef NC_CORE_MODELFILE_INTERNAL_H
#define NC_CORE_MODELFILE_INTERNAL_H

#include "modelfile.h"

/* 0 when n more sections, with the tags tags[0..n), fit in w and none of
 * them is there already; -EOVERFLOW (no room) or -EINVAL (a tag taken)
 * otherwise.  For a block of sections that goes in whole or not at all. */
int nc_mf_writer_room(const nc_mf_writer *w, const uint32_t *tags, size_t n);

#endif

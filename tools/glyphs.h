/* tools/glyphs.h — a 3x5 bitmap font of printable ASCII, for the captions
 * the tools draw on their PNG sheets (a class's label, one character). */
#ifndef NC_TOOLS_GLYPHS_H
#define NC_TOOLS_GLYPHS_H

#define NC_GLYPH_W 3
#define NC_GLYPH_H 5

/* Row y (0 the top, < NC_GLYPH_H) of character c's glyph: NC_GLYPH_W bits,
 * bit 2 the left column.  0 (blank) for the space, characters outside
 * 0x20-0x7e and rows past the glyph. */
unsigned nc_glyph_row(int c, unsigned y);

#endif

/* png.h: PNG files for frames and image assets (engine/png.c), linked into the cqlua host and reached from Lua
 * through ffi.C. Preprocessed into the FFI declarations like cq.h: no includes, no function bodies. */
#ifndef CQ_PNG_H
#define CQ_PNG_H
/* Writes a w x h 8-bit RGB image (rgb: h rows of w pixels, top row first, 3 bytes per pixel) to path.
 * Returns 0 on success, -1 on bad arguments or when the file cannot be written. */
int cq_png_write(const char* path, int w, int h, const unsigned char* rgb);
/* Reads a PNG as 8-bit RGB: returns w*h*3 bytes, top row first (free it with cq_png_free), or NULL when the file is
 * missing or not a PNG. */
unsigned char* cq_png_read(const char* path, int* w, int* h);
/* Frees a buffer returned by cq_png_read (NULL is allowed). */
void cq_png_free(unsigned char* rgb);
#endif

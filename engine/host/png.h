/* png.h: PNG files for frames and image assets (engine/host/png.c), linked into the cqlua host and reached from Lua
 * through ffi.C. Preprocessed into the FFI declarations like cq.h: no includes, no function bodies. */
#ifndef CQH_PNG_H
#define CQH_PNG_H
/* Writes a w x h 8-bit RGB image (rgb: h rows of w pixels, top row first, 3 bytes per pixel) to path.
 * Returns 0 on success, -1 on bad arguments or when the file cannot be written. */
int cqh_png_write(const char* path, int w, int h, const unsigned char* rgb);
/* The same for an 8-bit RGBA image (4 bytes per pixel; alpha 0 = transparent). */
int cqh_png_write_rgba(const char* path, int w, int h, const unsigned char* rgba);
/* Reads a PNG as 8-bit RGB: returns w*h*3 bytes, top row first (free it with cqh_png_free), or NULL when the file is
 * missing or not a PNG. */
unsigned char* cqh_png_read(const char* path, int* w, int* h);
/* Reads a PNG file as 8-bit RGBA (w*h*4 bytes, top row first; free it with cqh_png_free) of at most max_pixels pixels.
 * Returns NULL with a message in err (err_size bytes) when the file is missing, empty, not a PNG, corrupt, truncated or
 * too large. */
unsigned char* cqh_png_read_rgba(const char* path, double max_pixels, int* w, int* h, char* err, int err_size);
/* The same from size bytes in memory (what the fuzzer drives: tests/fuzz/fuzz_png.c). */
unsigned char* cqh_png_decode_rgba(const unsigned char* data, size_t size, double max_pixels, int* w, int* h, char* err,
                                   int err_size);
/* Frees a buffer returned by cqh_png_read or cqh_png_read_rgba (NULL is allowed). */
void cqh_png_free(unsigned char* rgb);
#endif

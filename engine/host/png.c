/* png.c: PNG files for frames and image assets, via stb_image_write / stb_image; linked into the cqlua host. */

#include <stdlib.h>
#include <string.h>
#include "png.h"
#include "readfile.h"

#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
/* stb declares some static functions it never defines; GCC reports them at the end of the file, after any pop. */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#include <stb/stb_image_write.h>
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

/* Writes a w x h 8-bit RGB image (rgb: h rows of w pixels, top row first, 3 bytes per pixel) to path.
 * Returns 0 on success, -1 on bad arguments or when the file cannot be written. */
int cqh_png_write(const char* path, int w, int h, const unsigned char* rgb) {
  if (path == NULL || rgb == NULL || w <= 0 || h <= 0) return -1;
  return stbi_write_png(path, w, h, 3, rgb, 3 * w) ? 0 : -1;
}

/* The same for an 8-bit RGBA image (4 bytes per pixel; alpha 0 = transparent). */
int cqh_png_write_rgba(const char* path, int w, int h, const unsigned char* rgba) {
  if (path == NULL || rgba == NULL || w <= 0 || h <= 0) return -1;
  return stbi_write_png(path, w, h, 4, rgba, 4 * w) ? 0 : -1;
}

/* Reads a PNG as 8-bit RGB (any PNG colour type is converted): returns a malloc'd buffer of h rows of w pixels x 3
 * bytes, top row first (free it with cqh_png_free), or NULL when the file is missing or not a PNG. */
unsigned char* cqh_png_read(const char* path, int* w, int* h) {
  int channels = 0;
  if (path == NULL || w == NULL || h == NULL) return NULL;
  return stbi_load(path, w, h, &channels, 3);
}

/* Frees a buffer returned by cqh_png_read (NULL is allowed). */
void cqh_png_free(unsigned char* rgb) { stbi_image_free(rgb); }

/* PNG files of robot images are small; this bounds what a corrupt header can make us allocate. */
#define CQH_PNG_MAX_BYTES ((size_t)1 << 30)

static unsigned long be32(const unsigned char* p) {
  return (unsigned long)p[0] << 24 | (unsigned long)p[1] << 16 | (unsigned long)p[2] << 8 | p[3];
}

/* Walks the chunks after the signature: a chunk running past the end of the file, or no IEND chunk, is refused with a
 * message; the rest is copied into out (size bytes) without zero-length IDAT chunks, for which stb adds an offset to a
 * NULL pointer. Returns the copy's size, or 0. */
static size_t checked_chunks(const unsigned char* data, size_t size, unsigned char* out, char* err, int err_size) {
  size_t at = 8, n = 8;
  memcpy(out, data, 8);
  while (size - at >= 12) {
    unsigned long len = be32(data + at);
    char type[5];
    int k;
    for (k = 0; k < 4; k++) type[k] = data[at + 4 + k] >= 32 && data[at + 4 + k] < 127 ? (char)data[at + 4 + k] : '?';
    type[4] = 0;
    if (len > size - at - 12) {
      cqh_fail(err, err_size,
               "truncated or corrupt PNG: its chunk '%s' at byte %zu says %lu bytes, the file has %zu left", type, at,
               len, size - at - 12);
      return 0;
    }
    if (!(len == 0 && memcmp(type, "IDAT", 4) == 0)) {
      memcpy(out + n, data + at, len + 12);
      n += len + 12;
    }
    at += len + 12;
    if (memcmp(type, "IEND", 4) == 0) return n;
  }
  cqh_fail(err, err_size, "truncated PNG: the file ends before its IEND chunk (the last chunk)");
  return 0;
}

/* stb's reason for its last failure, for a message: never NULL, and with the bytes that are not printable ASCII (stb
 * copies an unknown chunk's type into its message) as '?'. */
static const char* failure_reason(void) {
  static char text[64];
  const char* r = stbi_failure_reason();
  size_t i;
  if (r == NULL) return "the decoder gave no reason";
  for (i = 0; r[i] && i < sizeof text - 1; i++) text[i] = r[i] >= 32 && r[i] < 127 ? r[i] : '?';
  text[i] = 0;
  return text;
}

unsigned char* cqh_png_decode_rgba(const unsigned char* data, size_t size, double max_pixels, int* w, int* h, char* err,
                                   int err_size) {
  static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  int channels = 0;
  unsigned char *rgba, *clean;
  if (data == NULL || w == NULL || h == NULL) return cqh_fail(err, err_size, "no data");
  if (size < sizeof signature || memcmp(data, signature, sizeof signature) != 0) {
    return cqh_fail(err, err_size, "not a PNG file (it does not start with the PNG signature)");
  }
  if (size > (size_t)0x7fffffff) return cqh_fail(err, err_size, "the file is larger than 2 GiB");
  clean = malloc(size);
  if (clean == NULL) return cqh_fail(err, err_size, "out of memory for %zu bytes", size);
  size = checked_chunks(data, size, clean, err, err_size);
  /* the header's size first: a PNG claiming 60000 x 60000 pixels is refused before stb allocates for it */
  stbi__g_failure_reason = NULL; /* (not an earlier file's reason) */
  if (size == 0) {
    rgba = NULL;
  } else if (!stbi_info_from_memory(clean, (int)size, w, h, &channels)) {
    rgba = cqh_fail(err, err_size, "a corrupt PNG (%s)", failure_reason());
  } else if ((double)*w * (double)*h > max_pixels) {
    rgba = cqh_fail(err, err_size, "the image has %d x %d pixels, more than the limit of %.0f", *w, *h, max_pixels);
  } else {
    rgba = stbi_load_from_memory(clean, (int)size, w, h, &channels, 4);
    if (rgba == NULL) cqh_fail(err, err_size, "a corrupt PNG (%s)", failure_reason());
  }
  free(clean);
  return rgba;
}

unsigned char* cqh_png_read_rgba(const char* path, double max_pixels, int* w, int* h, char* err, int err_size) {
  size_t size = 0;
  unsigned char* rgba;
  unsigned char* data = cqh_read_file(path, CQH_PNG_MAX_BYTES, &size, err, err_size);
  if (data == NULL) return NULL;
  rgba = cqh_png_decode_rgba(data, size, max_pixels, w, h, err, err_size);
  free(data);
  return rgba;
}

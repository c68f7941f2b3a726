/* png.c: PNG files for frames and image assets, via stb_image_write / stb_image; linked into the cqlua host. */

#include <stdlib.h>
#include "png.h"

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
int cq_png_write(const char *path, int w, int h, const unsigned char *rgb)
{
  if (path == NULL || rgb == NULL || w <= 0 || h <= 0) return -1;
  return stbi_write_png(path, w, h, 3, rgb, 3 * w) ? 0 : -1;
}

/* Reads a PNG as 8-bit RGB (any PNG colour type is converted): returns a malloc'd buffer of h rows of w pixels x 3
 * bytes, top row first (free it with cq_png_free), or NULL when the file is missing or not a PNG. */
unsigned char *cq_png_read(const char *path, int *w, int *h)
{
  int channels = 0;
  if (path == NULL || w == NULL || h == NULL) return NULL;
  return stbi_load(path, w, h, &channels, 3);
}

/* Frees a buffer returned by cq_png_read (NULL is allowed). */
void cq_png_free(unsigned char *rgb)
{
  stbi_image_free(rgb);
}

/* fuzz_png.c: libFuzzer target for PNG decoding (engine/host/png.c: cqh_png_decode_rgba, stb_image underneath). */
#include <stddef.h>
#include <stdint.h>
#include "png.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char err[512];
  int w, h;
  unsigned char* rgba = cqh_png_decode_rgba(data, size, 1 << 22, &w, &h, err, sizeof err);
  if (rgba != 0) rgba[4 * (size_t)w * h - 1] ^= 1; /* touch the last byte: the buffer must be that long */
  cqh_png_free(rgba);
  return 0;
}

/* readfile.c: whole user files read into memory for the host's loaders, with clear reasons when they cannot be. */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "readfile.h"

void* cqh_fail(char* err, int err_size, const char* fmt, ...) {
  va_list ap;
  if (err == NULL || err_size <= 0) return NULL;
  va_start(ap, fmt);
  vsnprintf(err, (size_t)err_size, fmt, ap);
  va_end(ap);
  return NULL;
}

unsigned char* cqh_read_file(const char* path, size_t max_bytes, size_t* size, char* err, int err_size) {
  struct stat st;
  FILE* f;
  unsigned char* data;
  size_t got;
  if (path == NULL || size == NULL) return cqh_fail(err, err_size, "no file name given");
  if (stat(path, &st) != 0) return cqh_fail(err, err_size, "cannot open the file: %s", strerror(errno));
  if (S_ISDIR(st.st_mode)) return cqh_fail(err, err_size, "this is a directory, not a file");
  if (st.st_size == 0) return cqh_fail(err, err_size, "the file is empty (0 bytes)");
  if ((unsigned long long)st.st_size > (unsigned long long)max_bytes) {
    return cqh_fail(err, err_size, "the file has %lld bytes, more than the limit of %zu", (long long)st.st_size,
                    max_bytes);
  }
  f = fopen(path, "rb");
  if (f == NULL) return cqh_fail(err, err_size, "cannot open the file: %s", strerror(errno));
  data = malloc((size_t)st.st_size + 1);
  if (data == NULL) {
    fclose(f);
    return cqh_fail(err, err_size, "out of memory reading %lld bytes", (long long)st.st_size);
  }
  got = fread(data, 1, (size_t)st.st_size, f);
  fclose(f);
  if (got == 0) { /* a special file (a pipe or /dev/...) whose size stat cannot tell, or a read error */
    free(data);
    return cqh_fail(err, err_size, "cannot read the file (empty or not a regular file)");
  }
  data[got] = 0;
  *size = got;
  return data;
}

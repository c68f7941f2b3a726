/* readfile.h: whole user files read into memory for the host's loaders (PNG, OBJ, STL), with messages that say why a
 * file cannot be used (missing, a directory, unreadable, empty, too large). Host side only, not part of the FFI. */
#ifndef CQ_READFILE_H
#define CQ_READFILE_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reads path into a malloc'd buffer of *size bytes plus a terminating 0 byte (text parsers may rely on it). Files of
 * more than max_bytes bytes and empty files are refused. Returns NULL with a message in err (err_size bytes). */
unsigned char* cqh_read_file(const char* path, size_t max_bytes, size_t* size, char* err, int err_size);

/* snprintf into err when err is not NULL; returns NULL so loaders can write `return cqh_fail(err, n, ...)`. */
void* cqh_fail(char* err, int err_size, const char* fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif

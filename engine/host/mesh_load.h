/* mesh_load.h: the triangle soups the file loaders (mesh_obj.cpp, mesh_stl.c) hand to engine/host/mesh.c. Host side only,
 * not part of the FFI. */
#ifndef CQH_MESH_LOAD_H
#define CQH_MESH_LOAD_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Triangles as they came from a file: 9 coordinates each (three corners in order), malloc'd. */
typedef struct cqi_soup {
  int n;       /* triangles */
  double* xyz; /* 9 * n coordinates */
} cqi_soup;

/* Parses an OBJ text (size bytes, followed by a 0 byte) into triangles (polygons fanned), at most max_triangles.
 * Returns 0, or -1 with the problem in err. */
int cqi_obj_soup(const char* text, size_t size, int max_triangles, cqi_soup* out, char* err, int err_size);

/* Parses a binary or ASCII STL (size bytes, followed by a 0 byte) into triangles, at most max_triangles. Returns 0, or
 * -1 with the problem in err. */
int cqi_stl_soup(const unsigned char* data, size_t size, int max_triangles, cqi_soup* out, char* err, int err_size);

#ifdef __cplusplus
}
#endif
#endif

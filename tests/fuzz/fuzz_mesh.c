/* fuzz_mesh.c: libFuzzer target for mesh files (engine/mesh*.c: cq_mesh_parse) in the format FUZZ_FORMAT (CQ_MESH_OBJ:
 * tinyobjloader; CQ_MESH_STL: binary and ASCII STL through assimp), then the fill of every mesh that loads. */
#include <stddef.h>
#include <stdint.h>
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  char err[512];
  cq_mesh* m = cq_mesh_parse(data, size, FUZZ_FORMAT, 20000, err, sizeof err);
  if (m == NULL) return 0;
  fuzz_check_fill(m, 12, 1);
  cq_mesh_free(m);
  return 0;
}

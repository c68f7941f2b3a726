/* fuzz_mesh.c: libFuzzer target for mesh files (engine/host/mesh*.c: cqh_mesh_parse) in the format FUZZ_FORMAT (CQH_MESH_OBJ:
 * tinyobjloader; CQH_MESH_STL: binary and ASCII STL through assimp), then the lattice of every mesh that loads. */
#include <stddef.h>
#include <stdint.h>
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char err[512];
  cqh_mesh* m = cqh_mesh_parse(data, size, FUZZ_FORMAT, 20000, err, sizeof err);
  if (m == NULL) return 0;
  fuzz_check_lattice(m, 12, 1);
  cqh_mesh_free(m);
  return 0;
}

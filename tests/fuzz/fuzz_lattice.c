/* fuzz_lattice.c: libFuzzer target for the inside test and the surface spread (engine/host/mesh_lattice.c) on closed meshes of
 * fixed topology whose vertices come from the input on a grid of 1/8 (so lattice lines often pass exactly through
 * vertices and edges): byte 0 picks the topology, byte 1 the lattice size and scale, then one byte per coordinate. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "fuzz_check.h"

/* Closed, consistently oriented triangle lists (0-based vertex numbers). */
static const int TETRA[] = {0, 2, 1, 0, 1, 3, 1, 2, 3, 0, 3, 2};
static const int OCTA[] = {0, 2, 4, 2, 1, 4, 1, 3, 4, 3, 0, 4, 2, 0, 5, 1, 2, 5, 3, 1, 5, 0, 3, 5};
static const int CUBE[] = {0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4,
                           2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5};
/* two tetrahedra: vertices 0-3 and 4-7 (disjoint, nested or overlapping, as the input places them) */
static const int TWO[] = {0, 2, 1, 0, 1, 3, 1, 2, 3, 0, 3, 2, 4, 6, 5, 4, 5, 7, 5, 6, 7, 4, 7, 6};

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const struct {
    const int* tri;
    int n_tri, n_vert;
  } topo[] = {{TETRA, 4, 4}, {OCTA, 8, 6}, {CUBE, 12, 8}, {TWO, 8, 8}};
  double xyz[9 * 12];
  char err[512];
  int which, t, c, a;
  cqh_mesh* m;
  if (size < 2) return 0;
  which = data[0] % 4;
  if (size < 2 + 3 * (size_t)topo[which].n_vert) return 0;
  for (t = 0; t < topo[which].n_tri; t++) {
    for (c = 0; c < 3; c++) {
      int v = topo[which].tri[3 * t + c];
      for (a = 0; a < 3; a++) xyz[9 * t + 3 * c + a] = (int8_t)data[2 + 3 * v + a] / 8.0;
    }
  }
  m = cqh_mesh_from_triangles(xyz, topo[which].n_tri, 100, err, sizeof err);
  if (m == NULL) return 0;
  fuzz_check_lattice(m, 2 + data[1] % 14, (data[1] >> 5) ? 0.5 * (data[1] >> 5) : 1);
  cqh_mesh_free(m);
  return 0;
}

/* fuzz_msh.c: libFuzzer target for Gmsh MSH 4.1 files (engine/host/msh.c: cqh_msh_parse, ASCII and binary); every mesh that
 * loads is checked: node indices in range and distinct within an element, entity indices in range, each entity's
 * physical tags a slice of the list, finite coordinates, names present. A violation aborts, so libFuzzer reports it. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "msh.h"

#define REQUIRE(cond, what)                             \
  do {                                                  \
    if (!(cond)) {                                      \
      fprintf(stderr, "fuzz check failed: %s\n", what); \
      abort();                                          \
    }                                                   \
  } while (0)

static void check_elements(const cqh_msh* m, const cqh_msh_elements* e, int k) {
  int i, j, l;
  REQUIRE(e->n >= 0 && (e->n == 0 || (e->nodes && e->entity)), "element arrays");
  for (i = 0; i < e->n; i++) {
    for (j = 0; j < k; j++) {
      int v = e->nodes[(size_t)i * k + j];
      REQUIRE(v >= 0 && v < m->n_nodes, "node index in range");
      for (l = 0; l < j; l++) REQUIRE(e->nodes[(size_t)i * k + l] != v, "distinct nodes");
    }
    REQUIRE(e->entity[i] >= -1 && e->entity[i] < m->n_entities, "entity index in range");
    REQUIRE(e->entity[i] >= 0 || m->n_entities == 0, "an entity when $Entities is there");
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char err[512];
  int i;
  cqh_msh* m = cqh_msh_parse(data, size, err, sizeof err);
  if (m == NULL) {
    /* "MSH ...", "the file is empty", "out of memory" */
    REQUIRE(err[0] == 'M' || err[0] == 't' || err[0] == 'o', "a message");
    return 0;
  }
  for (i = 0; i < 3 * m->n_nodes; i++) REQUIRE(isfinite(m->nodes[i]), "finite coordinates");
  check_elements(m, &m->lines, 2);
  check_elements(m, &m->triangles, 3);
  check_elements(m, &m->tets, 4);
  REQUIRE(m->n_entities == 0 || m->entity_first[0] == 0, "first physical slice");
  for (i = 0; i < m->n_entities; i++) {
    REQUIRE(m->entity_first[i] <= m->entity_first[i + 1], "physical slices in order");
    REQUIRE(m->entity_dim[i] >= 0 && m->entity_dim[i] <= 3, "entity dimension");
    REQUIRE(i == 0 || m->entity_dim[i - 1] < m->entity_dim[i] ||
                (m->entity_dim[i - 1] == m->entity_dim[i] && m->entity_tag[i - 1] < m->entity_tag[i]),
            "entities sorted and distinct");
  }
  for (i = 0; i < m->n_names; i++) REQUIRE(m->names[i] != NULL && m->name_dim[i] >= 0 && m->name_dim[i] <= 3, "names");
  cqh_msh_free(m);
  return 0;
}

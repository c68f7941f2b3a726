/* fuzz_msh.c: libFuzzer target for Gmsh MSH 4.1 files (engine/host/msh.c: cqh_msh_parse, ASCII and binary); every mesh that
 * loads is checked: node indices in range and distinct within an element, entity indices in range, each entity's
 * physical tags a slice of the list, finite coordinates, names present; and its elements sampled on a lattice
 * (engine/host/msh_lattice.c, robot:gmsh{spacing}): every point inside its element's bounding box and at (m + 1/2)
 * spacing. A violation aborts, so libFuzzer reports it. */
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

/* The lattice of the elements e (k nodes each) at a sixth of their extent, at most 1e5 points. */
static void check_lattice(const cqh_msh* m, const cqh_msh_elements* e, int k) {
  char err[512];
  double lo = INFINITY, hi = -INFINITY;
  int i, a;
  if (e->n == 0) return;
  for (i = 0; i < k * e->n; i++)
    for (a = 0; a < (k == 4 ? 3 : 2); a++) {
      double x = m->nodes[3 * (size_t)e->nodes[i] + a];
      lo = fmin(lo, x);
      hi = fmax(hi, x);
    }
  double h = (hi - lo) / 6;
  if (!(h > 0) || !isfinite(h)) return;
  cqh_msh_lattice* f = cqh_msh_lattice_fill(m->nodes, m->n_nodes, e->nodes, e->n, k, h, 1e5, err, sizeof err);
  if (f == NULL) return; /* too many points, out of memory: refused with a message */
  REQUIRE(f->n >= 0 && (double)f->n <= (double)f->count[0] * f->count[1] * f->count[2], "point count");
  for (i = 0; i < f->n; i++) {
    int el = f->element[i];
    REQUIRE(el >= 0 && el < e->n, "element index in range");
    for (a = 0; a < (k == 4 ? 3 : 2); a++) {
      double x = f->x[3 * (size_t)i + a], l = INFINITY, u = -INFINITY, c = x / h - 0.5;
      for (int j = 0; j < k; j++) {
        double y = m->nodes[3 * (size_t)e->nodes[(size_t)el * k + j] + a];
        l = fmin(l, y);
        u = fmax(u, y);
      }
      REQUIRE(x >= l - 1e-6 * h && x <= u + 1e-6 * h, "a point inside its element's bounding box");
      REQUIRE(fabs(c - round(c)) < 1e-6 * (1 + fabs(c)), "a point on the lattice");
    }
  }
  cqh_msh_lattice_free(f);
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
  check_lattice(m, &m->tets, 4);
  check_lattice(m, &m->triangles, 3);
  cqh_msh_free(m);
  return 0;
}

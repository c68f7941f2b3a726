/* msh_lattice.c: the points of a world-aligned lattice inside a Gmsh mesh's elements (tetrahedra, or triangles in
 * 2D), for robot:gmsh{spacing = ...}: each element's bounding box gives its candidate points, tested against its
 * faces' orientations. Host side, reached through ffi.C (engine/host/msh.h). */

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "msh.h"
#include "readfile.h"

/* The point's nudge, in spacings, along a direction no mesh face is likely to hold (1, 1/pi, 1/pi^2): a point on a
 * face two elements share falls in exactly one of them, and a point on the mesh's surface (a face at a half spacing
 * from the points, as lattice-aligned drawings put it) on one side, the same for every such point. */
#define NUDGE 1e-7
#define PI 3.14159265358979323846

static double orient3(const double* a, const double* b, const double* c, const double* d) {
  double ux = b[0] - a[0], uy = b[1] - a[1], uz = b[2] - a[2];
  double vx = c[0] - a[0], vy = c[1] - a[1], vz = c[2] - a[2];
  double wx = d[0] - a[0], wy = d[1] - a[1], wz = d[2] - a[2];
  return ux * (vy * wz - vz * wy) - uy * (vx * wz - vz * wx) + uz * (vx * wy - vy * wx);
}

static double orient2(const double* a, const double* b, const double* c) {
  return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
}

/* Whether q lies strictly inside the element whose corners are v[0..k-1] (k = 4: a tetrahedron; 3: a triangle in
 * x, y): q on the same side of every face as the element's other corner. Each orientation is taken from a corner (the
 * differences from q would cancel where q is far: the fuzzer found a point 1e8 away taken as inside), so the face
 * opposite v[0] is turned: orient3(q, a, b, c) = -orient3(a, b, c, q) (a 4-cycle), orient2(q, a, b) = orient2(a, b, q). */
static int inside(const double* const* v, int k, const double* q) {
  if (k == 4) {
    double s = orient3(v[0], v[1], v[2], v[3]);
    if (s == 0) return 0;
    return -orient3(v[1], v[2], v[3], q) * s > 0 && orient3(v[0], q, v[2], v[3]) * s > 0 &&
           orient3(v[0], v[1], q, v[3]) * s > 0 && orient3(v[0], v[1], v[2], q) * s > 0;
  }
  double s = orient2(v[0], v[1], v[2]);
  if (s == 0) return 0;
  return orient2(v[1], v[2], q) * s > 0 && orient2(v[0], q, v[2]) * s > 0 && orient2(v[0], v[1], q) * s > 0;
}

cqh_msh_lattice* cqh_msh_lattice_fill(const double* X, int n_nodes, const int* nodes, int n_elements, int k,
                                      double spacing, double max_points, char* err, int err_size) {
  const int dim = k == 4 ? 3 : 2;
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  double o[3] = {0, 0, 0}, total = 1;
  int n[3] = {1, 1, 1}, e, a;
  int* owner;
  cqh_msh_lattice* f;
  if (k != 3 && k != 4) return cqh_fail(err, err_size, "k must be 3 (triangles) or 4 (tetrahedra), not %d", k);
  if (!(spacing > 0) || !isfinite(spacing)) return cqh_fail(err, err_size, "spacing must be > 0 and finite");
  if (n_elements < 1) return cqh_fail(err, err_size, "the mesh has no elements");
  for (e = 0; e < k * n_elements; e++) {
    int v = nodes[e];
    if (v < 0 || v >= n_nodes) return cqh_fail(err, err_size, "element node %d is not a node (0..%d)", v, n_nodes - 1);
    for (a = 0; a < dim; a++) {
      double x = X[3 * (size_t)v + a];
      if (!isfinite(x)) return cqh_fail(err, err_size, "node %d has a coordinate that is not finite", v);
      if (x < lo[a]) lo[a] = x;
      if (x > hi[a]) hi[a] = x;
    }
  }
  /* points at (m + 1/2) spacing for whole m: o a whole number of spacings, n covering [lo, hi] */
  for (a = 0; a < dim; a++) {
    o[a] = floor(lo[a] / spacing) * spacing;
    double count = ceil((hi[a] - o[a]) / spacing) + 1;
    total *= count;
    if (!(total <= max_points) || count > 2e9)
      return cqh_fail(err, err_size,
                      "the lattice over the mesh's bounding box would hold more than %.3g points (%.3g along axis %d at "
                      "spacing %g): a larger spacing, or a smaller mesh",
                      max_points, count, a + 1, spacing);
    n[a] = (int)count;
  }
  owner = malloc((size_t)total * sizeof *owner);
  f = calloc(1, sizeof *f);
  if (owner == NULL || f == NULL) {
    free(owner);
    free(f);
    return cqh_fail(err, err_size, "out of memory for a lattice of %.3g points", total);
  }
  for (size_t i = 0; i < (size_t)total; i++) owner[i] = -1;
  const double nudge[3] = {NUDGE * spacing, NUDGE * spacing / PI, NUDGE * spacing / (PI * PI)};
  for (e = 0; e < n_elements; e++) {
    const double* v[4];
    int first[3] = {0, 0, 0}, last[3] = {0, 0, 0}, c[3];
    double q[3] = {0, 0, 0};
    for (int j = 0; j < k; j++) v[j] = X + 3 * (size_t)nodes[k * (size_t)e + j];
    for (a = 0; a < dim; a++) {
      double l = v[0][a], h = v[0][a];
      for (int j = 1; j < k; j++) {
        l = fmin(l, v[j][a]);
        h = fmax(h, v[j][a]);
      }
      /* point m at o + (m + 1/2) spacing + nudge: m from ceil((l - o - nudge) / spacing - 1/2), widened by one */
      first[a] = (int)ceil((l - o[a] - nudge[a]) / spacing - 0.5) - 1;
      last[a] = (int)floor((h - o[a] - nudge[a]) / spacing - 0.5) + 1;
      if (first[a] < 0) first[a] = 0;
      if (last[a] > n[a] - 1) last[a] = n[a] - 1;
    }
    for (c[0] = first[0]; c[0] <= last[0]; c[0]++)
      for (c[1] = first[1]; c[1] <= last[1]; c[1]++)
        for (c[2] = first[2]; c[2] <= last[2]; c[2]++) {
          size_t i = ((size_t)c[0] * n[1] + c[1]) * n[2] + c[2];
          if (owner[i] >= 0) continue; /* (rounding put it in two: the first keeps it) */
          for (a = 0; a < dim; a++) q[a] = o[a] + (c[a] + 0.5) * spacing + nudge[a];
          if (inside(v, k, q)) owner[i] = e;
        }
  }
  size_t count = 0;
  for (size_t i = 0; i < (size_t)total; i++) count += owner[i] >= 0;
  f->x = malloc((count ? count : 1) * 3 * sizeof *f->x);
  f->element = malloc((count ? count : 1) * sizeof *f->element);
  if (f->x == NULL || f->element == NULL || count > (size_t)2147483647) {
    free(owner);
    cqh_msh_lattice_free(f);
    return cqh_fail(err, err_size, "out of memory for %zu lattice points", count);
  }
  f->n = 0;
  for (size_t i = 0; i < (size_t)total; i++) {
    if (owner[i] < 0) continue;
    int c2 = (int)(i % n[2]), c1 = (int)(i / n[2] % n[1]), c0 = (int)(i / n[2] / n[1]);
    double* x = f->x + 3 * (size_t)f->n;
    x[0] = o[0] + (c0 + 0.5) * spacing;
    x[1] = o[1] + (c1 + 0.5) * spacing;
    x[2] = dim == 3 ? o[2] + (c2 + 0.5) * spacing : X[3 * (size_t)nodes[0] + 2];
    f->element[f->n++] = owner[i];
  }
  for (a = 0; a < 3; a++) {
    f->count[a] = n[a];
    f->origin[a] = o[a];
  }
  free(owner);
  return f;
}

void cqh_msh_lattice_free(cqh_msh_lattice* f) {
  if (f == NULL) return;
  free(f->x);
  free(f->element);
  free(f);
}

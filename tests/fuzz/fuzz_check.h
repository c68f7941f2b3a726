/* fuzz_check.h: what every mesh fuzzer checks after a successful load: the fill runs and keeps its invariants (every
 * particle inside the box, surface areas summing to the mesh's, vector areas to zero, and the inside test agreeing
 * with the generalized winding number away from the surface); a violation aborts, so libFuzzer reports it. */
#ifndef FUZZ_CHECK_H
#define FUZZ_CHECK_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "mesh.h"

#define FUZZ_REQUIRE(cond, ...)                           \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "fuzz check failed: " __VA_ARGS__); \
      fprintf(stderr, "\n");                              \
      abort();                                            \
    }                                                     \
  } while (0)

/* The winding number of the placed mesh around q (solid angles, Van Oosterom and Strackee). */
static double fuzz_winding(const double* P, const cqh_mesh* m, const double* q) {
  double w = 0;
  int t, k;
  for (t = 0; t < m->n_triangles; t++) {
    double a[3], b[3], c[3], la, lb, lc, det, den;
    for (k = 0; k < 3; k++) {
      a[k] = P[3 * m->triangles[3 * t] + k] - q[k];
      b[k] = P[3 * m->triangles[3 * t + 1] + k] - q[k];
      c[k] = P[3 * m->triangles[3 * t + 2] + k] - q[k];
    }
    la = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    lb = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
    lc = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    det = a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) + a[2] * (b[0] * c[1] - b[1] * c[0]);
    den = la * lb * lc + (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]) * lc +
          (a[0] * c[0] + a[1] * c[1] + a[2] * c[2]) * lb + (b[0] * c[0] + b[1] * c[1] + b[2] * c[2]) * la;
    w += 2 * atan2(det, den);
  }
  return w / (4 * M_PI);
}

static double fuzz_dot(const double* a, const double* b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* Squared distance from q to the triangle (a, b, c): the closest point by the triangle's Voronoi regions (Ericson,
 * Real-Time Collision Detection, 5.1.5). */
static double fuzz_distance2(const double* q, const double* a, const double* b, const double* c) {
  double ab[3], ac[3], ap[3], bp[3], cp[3], x[3], d1, d2, d3, d4, d5, d6, va, vb, vc, v, w, den;
  int k;
  for (k = 0; k < 3; k++) {
    ab[k] = b[k] - a[k];
    ac[k] = c[k] - a[k];
    ap[k] = q[k] - a[k];
    bp[k] = q[k] - b[k];
    cp[k] = q[k] - c[k];
  }
  d1 = fuzz_dot(ab, ap), d2 = fuzz_dot(ac, ap), d3 = fuzz_dot(ab, bp), d4 = fuzz_dot(ac, bp);
  d5 = fuzz_dot(ab, cp), d6 = fuzz_dot(ac, cp);
  vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
  if (d1 <= 0 && d2 <= 0) return fuzz_dot(ap, ap);
  if (d3 >= 0 && d4 <= d3) return fuzz_dot(bp, bp);
  if (d6 >= 0 && d5 <= d6) return fuzz_dot(cp, cp);
  if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    v = d1 / (d1 - d3);
    for (k = 0; k < 3; k++) x[k] = a[k] + v * ab[k] - q[k];
  } else if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    w = d2 / (d2 - d6);
    for (k = 0; k < 3; k++) x[k] = a[k] + w * ac[k] - q[k];
  } else if (va <= 0 && d4 - d3 >= 0 && d5 - d6 >= 0) {
    w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    for (k = 0; k < 3; k++) x[k] = b[k] + w * (c[k] - b[k]) - q[k];
  } else {
    den = 1 / (va + vb + vc);
    v = vb * den, w = vc * den;
    for (k = 0; k < 3; k++) x[k] = a[k] + ab[k] * v + ac[k] * w - q[k];
  }
  return fuzz_dot(x, x);
}

/* Fills m at a spacing giving about `across` lattice points along its longest side, then checks the invariants. */
static void fuzz_check_lattice(const cqh_mesh* m, double across, double scale) {
  double lin[9] = {scale, 0, 0, 0, scale, 0, 0, 0, scale}, offset[3] = {0.5, -0.25, 0}, ext = 0, h, lo[3], hi[3];
  double sum = 0, vec[3] = {0, 0, 0}, *P;
  char err[512];
  int a, i;
  cqh_lattice* f;
  for (a = 0; a < 3; a++) ext = fmax(ext, m->hi[a] - m->lo[a]);
  h = ext * scale / across;
  f = cqh_mesh_lattice(m, lin, offset, h, 1e5, err, sizeof err);
  if (f == NULL) return; /* refused with a message (e.g. no point inside): fine */
  for (a = 0; a < 3; a++) {
    lo[a] = offset[a];
    hi[a] = offset[a] + scale * (m->hi[a] - m->lo[a]);
  }
  for (i = 0; i < f->n; i++) {
    for (a = 0; a < 3; a++)
      FUZZ_REQUIRE(f->x[3 * i + a] >= lo[a] && f->x[3 * i + a] <= hi[a], "particle %d outside the box", i);
  }
  for (i = 0; i < f->n_surface; i++) {
    FUZZ_REQUIRE(f->surface[i] >= 0 && f->surface[i] < f->n && (i == 0 || f->surface[i] > f->surface[i - 1]),
                 "surface index %d", i);
    sum += f->area[i];
    for (a = 0; a < 3; a++) vec[a] += f->area[i] * f->normal[3 * i + a];
  }
  FUZZ_REQUIRE(fabs(sum - f->mesh_area) <= 1e-9 * f->mesh_area, "surface area %.17g vs mesh area %.17g", sum,
               f->mesh_area);
  FUZZ_REQUIRE(sqrt(vec[0] * vec[0] + vec[1] * vec[1] + vec[2] * vec[2]) <= 1e-8 * f->mesh_area,
               "sum of area * normal (%g, %g, %g) is not 0", vec[0], vec[1], vec[2]);
  /* the inside test against the winding number, at the lattice points clearly off the surface */
  P = malloc(3 * (size_t)m->n_vertices * sizeof *P);
  if (P != NULL && m->n_triangles <= 64) {
    int c[3], n = 0, t;
    for (i = 0; i < m->n_vertices; i++) {
      for (a = 0; a < 3; a++) P[3 * i + a] = offset[a] + scale * (m->vertices[3 * i + a] - m->lo[a]);
    }
    for (c[0] = 0; c[0] < f->count[0]; c[0]++) {
      for (c[1] = 0; c[1] < f->count[1]; c[1]++) {
        for (c[2] = 0; c[2] < f->count[2]; c[2]++) {
          double q[3], w;
          int inside;
          for (a = 0; a < 3; a++) q[a] = offset[a] + (c[a] + 0.5) * h;
          inside = n < f->n && f->x[3 * n] == q[0] && f->x[3 * n + 1] == q[1] && f->x[3 * n + 2] == q[2];
          n += inside;
          for (t = 0; t < m->n_triangles; t++) {
            const int* v = m->triangles + 3 * t;
            if (fuzz_distance2(q, P + 3 * v[0], P + 3 * v[1], P + 3 * v[2]) < 1e-18 * h * h) break;
          }
          if (t < m->n_triangles) continue; /* on the surface: either answer is right */
          w = fuzz_winding(P, m, q);
          FUZZ_REQUIRE(fabs(w - round(w)) < 1e-6, "winding number %.17g off the surface", w);
          FUZZ_REQUIRE(inside == (round(w) != 0), "point (%.17g, %.17g, %.17g): winding number %g but %s", q[0], q[1],
                       q[2], w, inside ? "filled" : "not filled");
        }
      }
    }
  }
  free(P);
  cqh_lattice_free(f);
}
#endif

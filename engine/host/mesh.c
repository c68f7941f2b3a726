/* mesh.c: triangle meshes for robot:mesh: files to triangle soups (mesh_obj.cpp, mesh_stl.c), welded and checked to
 * bound a volume (finite, non-degenerate, closed, manifold, consistently oriented); host side, reached through ffi.C. */

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "mesh.h"
#include "mesh_load.h"
#include "readfile.h"

/* assimp takes a buffer size as an unsigned int; an ASCII STL of the largest mesh allowed fits well below this. */
#define CQH_MESH_MAX_BYTES ((size_t)0x7fffffff)

cqh_mesh* cqh_mesh_read(const char* path, int format, int max_triangles, char* err, int err_size) {
  size_t size = 0;
  cqh_mesh* m;
  unsigned char* data = cqh_read_file(path, CQH_MESH_MAX_BYTES, &size, err, err_size);
  if (data == NULL) return NULL;
  m = cqh_mesh_parse(data, size, format, max_triangles, err, err_size);
  free(data);
  return m;
}

cqh_mesh* cqh_mesh_parse(const unsigned char* data, size_t size, int format, int max_triangles, char* err,
                         int err_size) {
  cqi_soup soup = {0, NULL};
  char* text;
  int status;
  cqh_mesh* m;
  if (data == NULL || size == 0) return cqh_fail(err, err_size, "the file is empty (0 bytes)");
  /* the parsers read text up to a 0 byte: give them a terminated copy */
  text = malloc(size + 1);
  if (text == NULL) return cqh_fail(err, err_size, "out of memory for %zu bytes", size);
  memcpy(text, data, size);
  text[size] = 0;
  if (format == CQH_MESH_OBJ)
    status = cqi_obj_soup(text, size, max_triangles, &soup, err, err_size);
  else if (format == CQH_MESH_STL)
    status = cqi_stl_soup((unsigned char*)text, size, max_triangles, &soup, err, err_size);
  else
    status = (cqh_fail(err, err_size, "unknown mesh format %d", format), -1);
  free(text);
  if (status != 0) return NULL;
  m = cqh_mesh_from_triangles(soup.xyz, soup.n, max_triangles, err, err_size);
  free(soup.xyz);
  return m;
}

void cqh_mesh_free(cqh_mesh* m) {
  if (m == NULL) return;
  free(m->vertices);
  free(m->triangles);
  free(m);
}

/* ---- welding: corners at exactly the same position become one vertex ---- */

typedef struct corner {
  double p[3];
  int id; /* corner index: 3 * triangle + k */
} corner;

static int cmp_corner(const void* a, const void* b) {
  const corner* u = a;
  const corner* v = b;
  int k;
  for (k = 0; k < 3; k++) {
    if (u->p[k] < v->p[k]) return -1;
    if (u->p[k] > v->p[k]) return 1;
  }
  return (u->id > v->id) - (u->id < v->id);
}

/* == on coordinates: -0 and 0 are one point */
static int same_point(const double* a, const double* b) { return a[0] == b[0] && a[1] == b[1] && a[2] == b[2]; }

/* Fills m->vertices (sorted by position) and m->triangles from the soup. Returns 0, or -1 when out of memory. */
static int weld(cqh_mesh* m, const double* xyz, int n) {
  size_t nc = 3 * (size_t)n, i;
  int nv = 0;
  corner* c = malloc(nc * sizeof *c);
  m->triangles = malloc(nc * sizeof *m->triangles);
  m->vertices = malloc(3 * nc * sizeof *m->vertices);
  if (c == NULL || m->triangles == NULL || m->vertices == NULL) {
    free(c);
    return -1;
  }
  for (i = 0; i < nc; i++) {
    memcpy(c[i].p, xyz + 3 * i, sizeof c[i].p);
    c[i].id = (int)i;
  }
  qsort(c, nc, sizeof *c, cmp_corner);
  for (i = 0; i < nc; i++) {
    if (i == 0 || !same_point(c[i].p, c[i - 1].p)) {
      memcpy(m->vertices + 3 * (size_t)nv, c[i].p, sizeof c[i].p);
      nv++;
    }
    m->triangles[c[i].id] = nv - 1;
  }
  free(c);
  m->n_vertices = nv;
  return 0;
}

/* ---- checks ---- */

static const double* vtx(const cqh_mesh* m, int t, int k) { return m->vertices + 3 * (size_t)m->triangles[3 * t + k]; }

static void cross3(const double* a, const double* b, const double* c, double* n) {
  double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
  double v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
  n[0] = u[1] * v[2] - u[2] * v[1];
  n[1] = u[2] * v[0] - u[0] * v[2];
  n[2] = u[0] * v[1] - u[1] * v[0];
}

static double dist2(const double* a, const double* b) {
  return (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]);
}

/* A triangle with two corners at one point, or with collinear corners, has no normal and no inside. */
static int check_degenerate(const cqh_mesh* m, char* err, int err_size) {
  int t, k;
  for (t = 0; t < m->n_triangles; t++) {
    const int* v = m->triangles + 3 * t;
    double n[3], longest = 0;
    for (k = 0; k < 3; k++) {
      if (v[k] == v[(k + 1) % 3]) {
        const double* p = vtx(m, t, k);
        cqh_fail(err, err_size, "degenerate triangle %d: corners %d and %d are the same point (%g, %g, %g)", t + 1,
                 k + 1, (k + 1) % 3 + 1, p[0], p[1], p[2]);
        return -1;
      }
      if (dist2(vtx(m, t, k), vtx(m, t, (k + 1) % 3)) > longest) longest = dist2(vtx(m, t, k), vtx(m, t, (k + 1) % 3));
    }
    cross3(vtx(m, t, 0), vtx(m, t, 1), vtx(m, t, 2), n);
    if (sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]) <= 1e-12 * longest) {
      const double* a = vtx(m, t, 0);
      cqh_fail(err, err_size,
               "degenerate triangle %d: its corners are collinear (zero area; first corner (%g, %g, %g))", t + 1, a[0],
               a[1], a[2]);
      return -1;
    }
  }
  return 0;
}

typedef struct edge {
  int a, b; /* vertex indices, a < b */
  int tri;  /* triangle (0-based) */
  int fwd;  /* 1 when the triangle runs a -> b */
} edge;

static int cmp_edge(const void* x, const void* y) {
  const edge* u = x;
  const edge* v = y;
  if (u->a != v->a) return u->a < v->a ? -1 : 1;
  if (u->b != v->b) return u->b < v->b ? -1 : 1;
  return (u->tri > v->tri) - (u->tri < v->tri);
}

/* Every edge of a closed surface belongs to exactly two triangles that run through it in opposite directions. */
static int check_closed(const cqh_mesh* m, char* err, int err_size) {
  size_t ne = 3 * (size_t)m->n_triangles, i, j, open = 0, first_open = 0;
  int status = 0;
  edge* e = malloc(ne * sizeof *e);
  if (e == NULL) return (cqh_fail(err, err_size, "out of memory for %zu edges", ne), -1);
  for (i = 0; i < ne; i++) {
    int t = (int)(i / 3), k = (int)(i % 3);
    int p = m->triangles[3 * t + k], q = m->triangles[3 * t + (k + 1) % 3];
    e[i] = (edge){p < q ? p : q, p < q ? q : p, t, p < q};
  }
  qsort(e, ne, sizeof *e, cmp_edge);
  for (i = 0; i < ne && status == 0; i = j) {
    const double* pa = m->vertices + 3 * (size_t)e[i].a;
    const double* pb = m->vertices + 3 * (size_t)e[i].b;
    for (j = i + 1; j < ne && e[j].a == e[i].a && e[j].b == e[i].b; j++) {}
    if (j - i == 1) {
      if (open++ == 0) first_open = i;
    } else if (j - i > 2) {
      cqh_fail(err, err_size,
               "non-manifold: the edge (%g, %g, %g)-(%g, %g, %g) is shared by %zu triangles (%d, %d, %d%s); "
               "an edge of a closed surface belongs to exactly 2",
               pa[0], pa[1], pa[2], pb[0], pb[1], pb[2], j - i, e[i].tri + 1, e[i + 1].tri + 1, e[i + 2].tri + 1,
               j - i > 3 ? ", ..." : "");
      status = -1;
    } else if (e[i].fwd == e[i + 1].fwd) {
      cqh_fail(err, err_size,
               "inconsistent orientation: triangles %d and %d run through their shared edge (%g, %g, %g)-"
               "(%g, %g, %g) in the same direction; order every triangle the same way (counter-clockwise seen from "
               "outside)",
               e[i].tri + 1, e[i + 1].tri + 1, pa[0], pa[1], pa[2], pb[0], pb[1], pb[2]);
      status = -1;
    }
  }
  if (status == 0 && open > 0) {
    const double* pa = m->vertices + 3 * (size_t)e[first_open].a;
    const double* pb = m->vertices + 3 * (size_t)e[first_open].b;
    cqh_fail(err, err_size,
             "open mesh: %zu edge%s belong%s to one triangle only, e.g. the edge (%g, %g, %g)-(%g, %g, %g) "
             "of triangle %d; the surface must be closed (watertight) to have an inside",
             open, open > 1 ? "s" : "", open > 1 ? "" : "s", pa[0], pa[1], pa[2], pb[0], pb[1], pb[2],
             e[first_open].tri + 1);
    status = -1;
  }
  free(e);
  return status;
}

/* Bounding box, area and signed volume (about the box centre, for accuracy); reverses inside-out meshes. */
static int measure(cqh_mesh* m, char* err, int err_size) {
  double c[3], vol = 0, area = 0;
  int i, k;
  for (k = 0; k < 3; k++) m->lo[k] = m->hi[k] = m->vertices[k];
  for (i = 0; i < m->n_vertices; i++) {
    for (k = 0; k < 3; k++) {
      double x = m->vertices[3 * (size_t)i + k];
      if (x < m->lo[k]) m->lo[k] = x;
      if (x > m->hi[k]) m->hi[k] = x;
    }
  }
  for (k = 0; k < 3; k++) c[k] = 0.5 * (m->lo[k] + m->hi[k]);
  for (i = 0; i < m->n_triangles; i++) {
    double a[3], b[3], d[3], n[3];
    for (k = 0; k < 3; k++) {
      a[k] = vtx(m, i, 0)[k] - c[k];
      b[k] = vtx(m, i, 1)[k] - c[k];
      d[k] = vtx(m, i, 2)[k] - c[k];
    }
    cross3(a, b, d, n);
    area += 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    vol +=
        (a[0] * (b[1] * d[2] - b[2] * d[1]) + a[1] * (b[2] * d[0] - b[0] * d[2]) + a[2] * (b[0] * d[1] - b[1] * d[0])) /
        6;
  }
  m->area = area;
  m->flipped = vol < 0;
  if (m->flipped) {
    for (i = 0; i < m->n_triangles; i++) {
      int t = m->triangles[3 * i + 1];
      m->triangles[3 * i + 1] = m->triangles[3 * i + 2];
      m->triangles[3 * i + 2] = t;
    }
    vol = -vol;
  }
  m->volume = vol;
  /* a closed surface folded flat onto itself (e.g. two triangles back to back) passes the edge checks */
  if (!(vol > 1e-9 * pow(area, 1.5))) {
    return (cqh_fail(err, err_size, "the mesh encloses no volume (volume %g for an area of %g): it is flat", vol, area),
            -1);
  }
  if (!isfinite(vol) || !isfinite(area)) {
    return (cqh_fail(err, err_size, "the mesh's area or volume overflows (coordinates too large)"), -1);
  }
  return 0;
}

cqh_mesh* cqh_mesh_from_triangles(const double* xyz, int n, int max_triangles, char* err, int err_size) {
  cqh_mesh* m;
  size_t i;
  if (n <= 0 || xyz == NULL) return cqh_fail(err, err_size, "the mesh has no triangles");
  if (n > max_triangles) {
    return cqh_fail(err, err_size, "the mesh has %d triangles, more than the limit of %d", n, max_triangles);
  }
  for (i = 0; i < 9 * (size_t)n; i++) {
    if (!isfinite(xyz[i])) {
      return cqh_fail(err, err_size, "triangle %zu, corner %zu has a non-finite coordinate (%g)", i / 9 + 1,
                      i % 9 / 3 + 1, xyz[i]);
    }
  }
  m = calloc(1, sizeof *m);
  if (m == NULL) return cqh_fail(err, err_size, "out of memory");
  m->n_triangles = n;
  if (weld(m, xyz, n) != 0) {
    cqh_mesh_free(m);
    return cqh_fail(err, err_size, "out of memory for %d triangles", n);
  }
  if (check_degenerate(m, err, err_size) != 0 || check_closed(m, err, err_size) != 0 ||
      measure(m, err, err_size) != 0) {
    cqh_mesh_free(m);
    return NULL;
  }
  return m;
}

/* mesh_lattice.c: the particles inside a closed mesh on a lattice (winding numbers along lattice lines, with exact
 * tie-breaking where a line meets an edge or a vertex, majority of the three axes) and the share of the surface each
 * particle carries (triangles split into pieces, each piece's area given to the nearest particle). */

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "mesh.h"
#include "readfile.h"

/* Beyond these the lattice would take minutes: refused with a message instead. */
#define MAX_LINE_TESTS 2e9 /* triangle x lattice-line tests over the three sweeps */
#define MAX_PIECES 5e8     /* surface pieces */
#define MAX_DEPTH 100      /* bisections of one triangle */

typedef struct lattice {
  double o[3]; /* offset: point (i, j, k) is at o + (i + 1/2, j + 1/2, k + 1/2) h */
  double h;    /* spacing */
  int n[3];    /* points per axis */
} lattice;

static size_t point_index(const lattice* L, const int* c) { return ((size_t)c[0] * L->n[1] + c[1]) * L->n[2] + c[2]; }

static double coord(const lattice* L, int a, int i) { return L->o[a] + (i + 0.5) * L->h; }

/* The lattice indices along axis a whose points lie in [lo, hi], clamped to the lattice; empty when *first > *last.
 * Widened by a thousandth of a spacing: a lattice line exactly on a triangle's bounding box (through a vertex or along
 * an edge) is tested even when rounding puts it just outside, and covers() decides (the fuzzer found a fold whose
 * edge lay in a lattice plane: the triangle on the perturbed side went untested, and a whole slice came out inverted). */
static void index_range(const lattice* L, int a, double lo, double hi, int* first, int* last) {
  double f = ceil((lo - L->o[a]) / L->h - 0.5 - 1e-3), l = floor((hi - L->o[a]) / L->h - 0.5 + 1e-3);
  *first = f < 0 ? 0 : f > L->n[a] ? L->n[a] : (int)f;
  *last = l < -1 ? -1 : l > L->n[a] - 1 ? L->n[a] - 1 : (int)l;
}

/* ---- inside test ---- */

/* Which side of the projected edge ia -> ib (axes u, w) the point (qu, qw) is on: +1 left, -1 right. A point exactly
 * on the edge's line is moved by (eps, eps^2) (symbolic perturbation), so it is on exactly one side, the same for both
 * triangles sharing the edge: each is evaluated from its lower-numbered vertex, with the same arithmetic (noinline
 * keeps the compiler from contracting it differently at different call sites). 0 only for a zero-length projection. */
__attribute__((noinline)) static int side(const double* P, int ia, int ib, int u, int w, double qu, double qw) {
  int flip = ia > ib, s;
  const double* a = P + 3 * (size_t)(flip ? ib : ia);
  const double* b = P + 3 * (size_t)(flip ? ia : ib);
  double du = b[u] - a[u], dw = b[w] - a[w];
  double e = du * (qw - a[w]) - dw * (qu - a[u]);
  if (e > 0)
    s = 1;
  else if (e < 0)
    s = -1;
  else if (dw != 0)
    s = dw < 0 ? 1 : -1;
  else
    s = du > 0 ? 1 : du < 0 ? -1 : 0;
  return flip ? -s : s;
}

/* +1 when the (perturbed) point is inside the triangle's projection running counter-clockwise, -1 clockwise, else 0. */
static int covers(const double* P, const int* v, int u, int w, double qu, double qw) {
  int s0 = side(P, v[0], v[1], u, w, qu, qw);
  if (s0 == 0 || side(P, v[1], v[2], u, w, qu, qw) != s0 || side(P, v[2], v[0], u, w, qu, qw) != s0) return 0;
  return s0;
}

typedef struct crossing {
  double t;  /* where the line crosses the triangle, along the sweep axis */
  int delta; /* +1 entering (the normal points against the sweep), -1 leaving */
} crossing;

static int cmp_crossing(const void* x, const void* y) {
  const crossing* a = x;
  const crossing* b = y;
  return (a->t > b->t) - (a->t < b->t);
}

/* The crossing of the line through (qu, qw) along axis a with the plane of the triangle, kept within the triangle's
 * extent along a (a nearly edge-on triangle divides by almost zero). */
static double crossing_at(const double* P, const int* v, int a, int u, int w, double qu, double qw) {
  const double* p0 = P + 3 * (size_t)v[0];
  const double* p1 = P + 3 * (size_t)v[1];
  const double* p2 = P + 3 * (size_t)v[2];
  double e1[3], e2[3], n[3], t, lo, hi;
  int k;
  for (k = 0; k < 3; k++) {
    e1[k] = p1[k] - p0[k];
    e2[k] = p2[k] - p0[k];
  }
  n[0] = e1[1] * e2[2] - e1[2] * e2[1];
  n[1] = e1[2] * e2[0] - e1[0] * e2[2];
  n[2] = e1[0] * e2[1] - e1[1] * e2[0];
  t = p0[a] - (n[u] * (qu - p0[u]) + n[w] * (qw - p0[w])) / n[a];
  lo = fmin(p0[a], fmin(p1[a], p2[a]));
  hi = fmax(p0[a], fmax(p1[a], p2[a]));
  if (!(t >= lo)) t = lo; /* also NaN */
  if (t > hi) t = hi;
  return t;
}

/* The lattice lines (j, k) along axis u, w a triangle's projection can cover. */
static void line_range(const lattice* L, const double* P, const int* v, int u, int w, int* j0, int* j1, int* k0,
                       int* k1) {
  double lo_u = INFINITY, hi_u = -INFINITY, lo_w = INFINITY, hi_w = -INFINITY;
  int c;
  for (c = 0; c < 3; c++) {
    const double* p = P + 3 * (size_t)v[c];
    lo_u = fmin(lo_u, p[u]);
    hi_u = fmax(hi_u, p[u]);
    lo_w = fmin(lo_w, p[w]);
    hi_w = fmax(hi_w, p[w]);
  }
  index_range(L, u, lo_u, hi_u, j0, j1);
  index_range(L, w, lo_w, hi_w, k0, k1);
}

/* Sweeps the lattice lines along axis a: a point whose winding number (the signed count of crossings before it) is
 * nonzero gets a vote. Returns 0, or -1 when out of memory. */
static int sweep(const lattice* L, const double* P, const int* tri, int nt, int a, unsigned char* votes) {
  int u = (a + 1) % 3, w = (a + 2) % 3, pass, t, j, k, c[3];
  size_t lines = (size_t)L->n[u] * L->n[w], line, i;
  size_t* start = calloc(lines + 1, sizeof *start);
  size_t* next = malloc((lines + 1) * sizeof *next);
  crossing* cr = NULL;
  if (start == NULL || next == NULL) goto oom;
  for (pass = 0; pass < 2; pass++) { /* count, then store */
    for (t = 0; t < nt; t++) {
      const int* v = tri + 3 * (size_t)t;
      int j0, j1, k0, k1;
      line_range(L, P, v, u, w, &j0, &j1, &k0, &k1);
      for (j = j0; j <= j1; j++) {
        for (k = k0; k <= k1; k++) {
          double qu = coord(L, u, j), qw = coord(L, w, k);
          int s = covers(P, v, u, w, qu, qw);
          if (s == 0) continue;
          line = (size_t)j * L->n[w] + k;
          if (pass == 0)
            start[line + 1]++;
          else
            cr[next[line]++] = (crossing){crossing_at(P, v, a, u, w, qu, qw), -s};
        }
      }
    }
    if (pass == 0) {
      for (line = 0; line < lines; line++) start[line + 1] += start[line];
      memcpy(next, start, (lines + 1) * sizeof *next);
      cr = malloc((start[lines] + 1) * sizeof *cr);
      if (cr == NULL) goto oom;
    }
  }
  for (line = 0; line < lines; line++) {
    size_t first = start[line], count = start[line + 1] - first, at = 0;
    int winding = 0;
    if (count == 0) continue;
    qsort(cr + first, count, sizeof *cr, cmp_crossing);
    c[u] = (int)(line / L->n[w]);
    c[w] = (int)(line % L->n[w]);
    for (i = 0; i < (size_t)L->n[a]; i++) {
      double x = coord(L, a, (int)i);
      while (at < count && cr[first + at].t < x) winding += cr[first + at++].delta;
      c[a] = (int)i;
      if (winding != 0) votes[point_index(L, c)]++;
    }
  }
  free(start);
  free(next);
  free(cr);
  return 0;
oom:
  free(start);
  free(next);
  free(cr);
  return -1;
}

/* ---- surface pieces ---- */

/* Nearest particle lookups: the filled lattice (particle index per point, -1 outside) and, built on first need, the
 * particle a breadth-first flood from all particles reached each point with (for pieces far from any particle, e.g.
 * on a part thinner than the spacing). */
typedef struct finder {
  const lattice* L;
  const int* particle; /* per lattice point */
  int* flood;          /* per lattice point, or NULL until needed */
  const double* x;     /* particle positions */
} finder;

static int build_flood(finder* f) {
  const lattice* L = f->L;
  size_t total = (size_t)L->n[0] * L->n[1] * L->n[2], head = 0, tail = 0, i;
  size_t* queue = malloc(total * sizeof *queue);
  f->flood = malloc(total * sizeof *f->flood);
  if (queue == NULL || f->flood == NULL) {
    free(queue);
    return -1;
  }
  for (i = 0; i < total; i++) {
    f->flood[i] = f->particle[i];
    if (f->particle[i] >= 0) queue[tail++] = i;
  }
  while (head < tail) {
    size_t at = queue[head++];
    int c[3] = {(int)(at / ((size_t)L->n[1] * L->n[2])), (int)(at / L->n[2] % L->n[1]), (int)(at % L->n[2])}, d[3];
    for (d[0] = -1; d[0] <= 1; d[0]++) {
      for (d[1] = -1; d[1] <= 1; d[1]++) {
        for (d[2] = -1; d[2] <= 1; d[2]++) {
          int e[3] = {c[0] + d[0], c[1] + d[1], c[2] + d[2]};
          size_t to;
          if (e[0] < 0 || e[1] < 0 || e[2] < 0 || e[0] >= L->n[0] || e[1] >= L->n[1] || e[2] >= L->n[2]) continue;
          to = point_index(L, e);
          if (f->flood[to] >= 0) continue;
          f->flood[to] = f->flood[at];
          queue[tail++] = to;
        }
      }
    }
  }
  free(queue);
  return 0;
}

/* The particle nearest to point q among those within two lattice points of q's cell (ties: the lower index), else
 * the flood's particle of that cell. -1 when out of memory. The 3 x 3 x 3 points around the cell are searched first:
 * a particle there clearly nearer than every point two steps away along some axis is the answer (the same one the
 * whole 5 x 5 x 5 search gives, for a fifth of the work). */
static int nearest(finder* f, const double* q) {
  const lattice* L = f->L;
  int c[3], lo[3], hi[3], e[3], best = -1, a, r;
  double best_d = INFINITY, gap = INFINITY;
  for (a = 0; a < 3; a++) {
    double x = floor((q[a] - L->o[a]) / L->h);
    c[a] = !(x >= 0) ? 0 : x > L->n[a] - 1 ? L->n[a] - 1 : (int)x;
    /* how far q is along a from the points two or more steps away (not > 0 when q is off the lattice) */
    gap = fmin(gap, fmin(q[a] - coord(L, a, c[a] - 2), coord(L, a, c[a] + 2) - q[a]));
  }
  for (r = 1; r <= 2; r++) {
    if (r == 2 && best >= 0 && gap > 0 && best_d < 0.99 * gap * gap) break;
    for (a = 0; a < 3; a++) {
      lo[a] = c[a] - r < 0 ? 0 : c[a] - r;
      hi[a] = c[a] + r > L->n[a] - 1 ? L->n[a] - 1 : c[a] + r;
    }
    for (e[0] = lo[0]; e[0] <= hi[0]; e[0]++) {
      for (e[1] = lo[1]; e[1] <= hi[1]; e[1]++) {
        for (e[2] = lo[2]; e[2] <= hi[2]; e[2]++) {
          int p;
          const double* x;
          double d;
          /* the second round only visits the shell the first did not */
          if (r == 2 && abs(e[0] - c[0]) < 2 && abs(e[1] - c[1]) < 2 && abs(e[2] - c[2]) < 2) continue;
          p = f->particle[point_index(L, e)];
          if (p < 0) continue;
          x = f->x + 3 * (size_t)p;
          d = (x[0] - q[0]) * (x[0] - q[0]) + (x[1] - q[1]) * (x[1] - q[1]) + (x[2] - q[2]) * (x[2] - q[2]);
          if (d < best_d || (d == best_d && p < best)) {
            best_d = d;
            best = p;
          }
        }
      }
    }
  }
  if (best >= 0) return best;
  if (f->flood == NULL && build_flood(f) != 0) return -1;
  return f->flood[point_index(L, c)];
}

/* Splits triangle t at the midpoint of its longest edge until no edge is longer than h/2; each piece's area (the
 * triangle's halved at each split, so the pieces sum to it exactly) and vector area go to the nearest particle. */
static int spread_triangle(finder* f, const double* P, const int* v, double* area, double* vec) {
  double stack[MAX_DEPTH + 2][9], n[3], len, half_area, max2 = 0.25 * f->L->h * f->L->h;
  int depth[MAX_DEPTH + 2], sp = 1, c, k;
  const double* p0 = P + 3 * (size_t)v[0];
  const double* p1 = P + 3 * (size_t)v[1];
  const double* p2 = P + 3 * (size_t)v[2];
  double e1[3] = {p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]}, e2[3] = {p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2]};
  n[0] = e1[1] * e2[2] - e1[2] * e2[1];
  n[1] = e1[2] * e2[0] - e1[0] * e2[2];
  n[2] = e1[0] * e2[1] - e1[1] * e2[0];
  len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  if (!(len > 0)) return 0; /* a placement so small that the area underflows */
  half_area = 0.5 * len;
  for (c = 0; c < 3; c++) memcpy(stack[0] + 3 * c, P + 3 * (size_t)v[c], 3 * sizeof(double));
  depth[0] = 0;
  while (sp > 0) {
    double cur[9], longest = -1;
    int d = depth[--sp], e = 0;
    memcpy(cur, stack[sp], sizeof cur);
    for (c = 0; c < 3; c++) {
      const double* a = cur + 3 * c;
      const double* b = cur + 3 * ((c + 1) % 3);
      double l2 = (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) + (a[2] - b[2]) * (a[2] - b[2]);
      if (l2 > longest) {
        longest = l2;
        e = c;
      }
    }
    if (longest <= max2 || d >= MAX_DEPTH) {
      double q[3], a = ldexp(half_area, -d);
      int p;
      for (k = 0; k < 3; k++) q[k] = (cur[k] + cur[3 + k] + cur[6 + k]) / 3;
      p = nearest(f, q);
      if (p < 0) return -1;
      area[p] += a;
      for (k = 0; k < 3; k++) vec[3 * (size_t)p + k] += a * n[k] / len;
      continue;
    }
    { /* children (A, M, C) and (M, B, C) of the edge A = corner e, B = corner e+1, keeping the orientation */
      const double* A = cur + 3 * e;
      const double* B = cur + 3 * ((e + 1) % 3);
      const double* C = cur + 3 * ((e + 2) % 3);
      double M[3] = {0.5 * (A[0] + B[0]), 0.5 * (A[1] + B[1]), 0.5 * (A[2] + B[2])};
      memcpy(stack[sp], A, 3 * sizeof(double));
      memcpy(stack[sp] + 3, M, 3 * sizeof(double));
      memcpy(stack[sp] + 6, C, 3 * sizeof(double));
      depth[sp++] = d + 1;
      memcpy(stack[sp], M, 3 * sizeof(double));
      memcpy(stack[sp] + 3, B, 3 * sizeof(double));
      memcpy(stack[sp] + 6, C, 3 * sizeof(double));
      depth[sp++] = d + 1;
    }
  }
  return 0;
}

/* ---- the lattice ---- */

void cqh_lattice_free(cqh_lattice* f) {
  if (f == NULL) return;
  free(f->x);
  free(f->surface);
  free(f->area);
  free(f->normal);
  free(f);
}

/* Places the vertices: offset + L x - min over the vertices of L x. Fills lo/hi of the placed mesh. */
static double* place(const cqh_mesh* m, const double* lin, const double* offset, double* lo, double* hi) {
  double* P = malloc(3 * (size_t)m->n_vertices * sizeof *P);
  int i, a;
  if (P == NULL) return NULL;
  for (a = 0; a < 3; a++) lo[a] = INFINITY;
  for (i = 0; i < m->n_vertices; i++) {
    const double* x = m->vertices + 3 * (size_t)i;
    for (a = 0; a < 3; a++) {
      P[3 * (size_t)i + a] = lin[3 * a] * x[0] + lin[3 * a + 1] * x[1] + lin[3 * a + 2] * x[2];
      if (P[3 * (size_t)i + a] < lo[a]) lo[a] = P[3 * (size_t)i + a];
    }
  }
  for (a = 0; a < 3; a++) hi[a] = -INFINITY;
  for (i = 0; i < m->n_vertices; i++) {
    for (a = 0; a < 3; a++) {
      double* p = P + 3 * (size_t)i + a;
      *p = offset[a] + (*p - lo[a]);
      if (*p > hi[a]) hi[a] = *p;
    }
  }
  for (a = 0; a < 3; a++) lo[a] = offset[a];
  return P;
}

/* Work the sweeps and the pieces would take, to refuse a lattice that would take minutes. */
static void estimate(const lattice* L, const double* P, const cqh_mesh* m, double* tests, double* pieces) {
  int t, a;
  *tests = *pieces = 0;
  for (t = 0; t < m->n_triangles; t++) {
    const int* v = m->triangles + 3 * (size_t)t;
    const double* p0 = P + 3 * (size_t)v[0];
    const double* p1 = P + 3 * (size_t)v[1];
    const double* p2 = P + 3 * (size_t)v[2];
    double e1[3], e2[3], n[3],
        perimeter = sqrt((p1[0] - p0[0]) * (p1[0] - p0[0]) + (p1[1] - p0[1]) * (p1[1] - p0[1]) +
                         (p1[2] - p0[2]) * (p1[2] - p0[2]));
    perimeter +=
        sqrt((p2[0] - p1[0]) * (p2[0] - p1[0]) + (p2[1] - p1[1]) * (p2[1] - p1[1]) + (p2[2] - p1[2]) * (p2[2] - p1[2]));
    perimeter +=
        sqrt((p0[0] - p2[0]) * (p0[0] - p2[0]) + (p0[1] - p2[1]) * (p0[1] - p2[1]) + (p0[2] - p2[2]) * (p0[2] - p2[2]));
    for (a = 0; a < 3; a++) {
      int j0, j1, k0, k1;
      line_range(L, P, v, (a + 1) % 3, (a + 2) % 3, &j0, &j1, &k0, &k1);
      if (j1 >= j0 && k1 >= k0) *tests += (double)(j1 - j0 + 1) * (k1 - k0 + 1);
      e1[a] = p1[a] - p0[a];
      e2[a] = p2[a] - p0[a];
    }
    n[0] = e1[1] * e2[2] - e1[2] * e2[1];
    n[1] = e1[2] * e2[0] - e1[0] * e2[2];
    n[2] = e1[0] * e2[1] - e1[1] * e2[0];
    *pieces += 1 + 32 * 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]) / (L->h * L->h) + 8 * perimeter / L->h;
  }
}

/* Fills f->x and the particle index of every lattice point from the votes of the three sweeps. */
static int collect(const lattice* L, const unsigned char* votes, int* particle, cqh_lattice* f) {
  size_t total = (size_t)L->n[0] * L->n[1] * L->n[2], i;
  int n = 0, c[3];
  for (i = 0; i < total; i++) n += votes[i] >= 2;
  f->n = n;
  if (n == 0) return 0;
  f->x = malloc(3 * (size_t)n * sizeof *f->x);
  if (f->x == NULL) return -1;
  n = 0;
  for (c[0] = 0; c[0] < L->n[0]; c[0]++) {
    for (c[1] = 0; c[1] < L->n[1]; c[1]++) {
      for (c[2] = 0; c[2] < L->n[2]; c[2]++) {
        size_t at = point_index(L, c);
        particle[at] = votes[at] >= 2 ? n : -1;
        if (votes[at] < 2) continue;
        f->x[3 * (size_t)n] = coord(L, 0, c[0]);
        f->x[3 * (size_t)n + 1] = coord(L, 1, c[1]);
        f->x[3 * (size_t)n + 2] = coord(L, 2, c[2]);
        n++;
      }
    }
  }
  return 0;
}

/* Gives every piece of the surface to its nearest particle and lists the particles that got any. */
static int spread_surface(const lattice* L, const double* P, const cqh_mesh* m, const int* particle, cqh_lattice* f) {
  finder fd = {L, particle, NULL, f->x};
  double* area = calloc((size_t)f->n, sizeof *area);
  double* vec = calloc(3 * (size_t)f->n, sizeof *vec);
  int t, p, k, status = -1;
  if (area == NULL || vec == NULL) goto done;
  for (t = 0; t < m->n_triangles; t++) {
    if (spread_triangle(&fd, P, m->triangles + 3 * (size_t)t, area, vec) != 0) goto done;
  }
  for (p = 0; p < f->n; p++) f->n_surface += area[p] > 0;
  f->surface = malloc(((size_t)f->n_surface + 1) * sizeof *f->surface);
  f->area = malloc(((size_t)f->n_surface + 1) * sizeof *f->area);
  f->normal = malloc((3 * (size_t)f->n_surface + 1) * sizeof *f->normal);
  if (f->surface == NULL || f->area == NULL || f->normal == NULL) goto done;
  f->n_surface = 0;
  for (p = 0; p < f->n; p++) {
    if (!(area[p] > 0)) continue;
    f->surface[f->n_surface] = p;
    f->area[f->n_surface] = area[p];
    for (k = 0; k < 3; k++) f->normal[3 * (size_t)f->n_surface + k] = vec[3 * (size_t)p + k] / area[p];
    f->n_surface++;
  }
  status = 0;
done:
  free(area);
  free(vec);
  free(fd.flood);
  return status;
}

/* Area and volume of the placed mesh (about the lattice offset). */
static void measure_placed(const double* P, const cqh_mesh* m, const double* o, cqh_lattice* f) {
  int t, k;
  for (t = 0; t < m->n_triangles; t++) {
    double a[3], b[3], c[3], n[3];
    for (k = 0; k < 3; k++) {
      a[k] = P[3 * (size_t)m->triangles[3 * t] + k] - o[k];
      b[k] = P[3 * (size_t)m->triangles[3 * t + 1] + k] - o[k];
      c[k] = P[3 * (size_t)m->triangles[3 * t + 2] + k] - o[k];
    }
    n[0] = (b[1] - a[1]) * (c[2] - a[2]) - (b[2] - a[2]) * (c[1] - a[1]);
    n[1] = (b[2] - a[2]) * (c[0] - a[0]) - (b[0] - a[0]) * (c[2] - a[2]);
    n[2] = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
    f->mesh_area += 0.5 * sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    f->mesh_volume +=
        (a[0] * (b[1] * c[2] - b[2] * c[1]) + a[1] * (b[2] * c[0] - b[0] * c[2]) + a[2] * (b[0] * c[1] - b[1] * c[0])) /
        6;
  }
}

cqh_lattice* cqh_mesh_lattice(const cqh_mesh* m, const double* lin, const double* offset, double spacing,
                              double max_points, char* err, int err_size) {
  lattice L;
  double lo[3], hi[3], points = 1, tests, pieces, det;
  double* P = NULL;
  unsigned char* votes = NULL;
  int* particle = NULL;
  cqh_lattice* f = NULL;
  int a;
  if (m == NULL || lin == NULL || offset == NULL) return cqh_fail(err, err_size, "no mesh");
  if (!(spacing > 0) || !isfinite(spacing)) return cqh_fail(err, err_size, "spacing must be > 0 (got %g)", spacing);
  det = lin[0] * (lin[4] * lin[8] - lin[5] * lin[7]) - lin[1] * (lin[3] * lin[8] - lin[5] * lin[6]) +
        lin[2] * (lin[3] * lin[7] - lin[4] * lin[6]);
  if (!(det > 0) || !isfinite(det)) return cqh_fail(err, err_size, "the placement must keep orientation (det %g)", det);
  P = place(m, lin, offset, lo, hi);
  if (P == NULL) return cqh_fail(err, err_size, "out of memory");
  L.h = spacing;
  for (a = 0; a < 3; a++) {
    /* ceil, less a hair so an extent of exactly k spacings gives k points, not k + 1 */
    double n = fmax(1, ceil((hi[a] - lo[a]) / spacing * (1 - 1e-12)));
    if (!isfinite(hi[a]) || !isfinite(lo[a])) n = INFINITY;
    L.o[a] = lo[a];
    L.n[a] = n < 2e9 ? (int)n : 0;
    points *= n;
  }
  if (!(points <= max_points)) {
    cqh_fail(err, err_size,
             "at spacing %g the lattice over the placed mesh's bounding box (%g x %g x %g) has %.4g points, "
             "more than the limit of %.4g; use a larger spacing",
             spacing, hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], points, max_points);
    goto fail;
  }
  estimate(&L, P, m, &tests, &pieces);
  if (tests > MAX_LINE_TESTS || pieces > MAX_PIECES) {
    cqh_fail(err, err_size,
             "at spacing %g the lattice would take %.3g line tests and %.3g surface pieces (limits %.3g and "
             "%.3g): the mesh has too many long triangles for this spacing; use a larger spacing",
             spacing, tests, pieces, MAX_LINE_TESTS, MAX_PIECES);
    goto fail;
  }
  votes = calloc((size_t)points, 1);
  particle = malloc((size_t)points * sizeof *particle);
  f = calloc(1, sizeof *f);
  if (votes == NULL || particle == NULL || f == NULL) goto oom;
  for (a = 0; a < 3; a++) {
    if (sweep(&L, P, m->triangles, m->n_triangles, a, votes) != 0) goto oom;
  }
  if (collect(&L, votes, particle, f) != 0) goto oom;
  if (f->n == 0) {
    cqh_fail(err, err_size,
             "no lattice point at spacing %g is inside the mesh (its bounding box is %g x %g x %g); use a "
             "smaller spacing",
             spacing, hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]);
    goto fail;
  }
  if (spread_surface(&L, P, m, particle, f) != 0) goto oom;
  measure_placed(P, m, L.o, f);
  for (a = 0; a < 3; a++) f->count[a] = L.n[a];
  free(P);
  free(votes);
  free(particle);
  return f;
oom:
  cqh_fail(err, err_size, "out of memory filling a lattice of %.4g points", points);
fail:
  free(P);
  free(votes);
  free(particle);
  cqh_lattice_free(f);
  return NULL;
}

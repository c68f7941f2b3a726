/* Chamber walls as a physics term (engine/terms/wall.h has the math): each wall particle's pressure takes its area
 * from a deformation gradient F_w fitted to its neighbours' positions (a quadratic where the body behind the wall is
 * 3 cells thick or more, else linear). Here, on the host: the neighbour pairs and their weights from a reference
 * state (the robot's initial state, cqi_wall_take, else the first state the world steps from; built again from the
 * same reference when the model changes), uploaded to the backend; per substep (begin) F_w of every wall particle,
 * and in the adjoint (project_adj, after P2G's, the solve's and the cavities' adjoints have added dL/dF_w) its share
 * of dL/dx. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "term.h"

typedef struct {
  double* ref; /* host [D][n]: the reference positions */
  int ref_set;
  long built; /* the model generation the pairs were last checked for (-1: none) */
  unsigned long long sig; /* the wall and solid particles they were built for (signature) */
  long pairs;
  int32_t *start, *nbr, *tstart, *tpair, *owner; /* backend */
  cq_real *b, *F, *gF;                           /* backend */
  long cap_pairs;
  int32_t* surf; /* backend [nsurf]: the walls with a surface point (chamber.h wall_surface_load), in index order */
  int nsurf;
  long surf_built; /* the model generation the list was made for (-1: none) */
} wall_self;

#define RADIUS 2.5     /* the quadratic fit's radius in particle spacings: three lattice layers on a wall's side */
#define RADIUS_LIN 1.6 /* the linear fit's: 8 neighbours on a square lattice, 18 on a cube */
#define THICK_QUAD 3.0 /* how thick (in cells) the body behind a wall must be for the quadratic fit */

static int wall_on(const cqi_model* m) {
  for (int a = 0; a < m->n_act; a++)
    if (cqi_pressure_kind(m->act_kind[a])) return 1;
  return 0;
}

static int is_wall(const cqi_model* m, int p) {
  int a = m->act_id[p];
  return a >= 0 && a < m->n_act && cqi_pressure_kind(m->act_kind[a]) && m->wall_area[p] > 0;
}

static wall_self* self_of(cqi_sim* sim) {
  wall_self* W = cqi_term_peek(sim, CQI_TERM_wall);
  if (!W && (W = sim->term_self[CQI_TERM_wall] = calloc(1, sizeof(wall_self)))) W->built = W->surf_built = -1;
  return W;
}

static void release_pairs(cqi_backend* be, wall_self* W) {
  void** bufs[] = {(void**)&W->nbr, (void**)&W->tpair, (void**)&W->owner, (void**)&W->b};
  for (int i = 0; i < 4; i++)
    if (*bufs[i]) be->ops->release(be, *bufs[i]), *bufs[i] = NULL;
  W->cap_pairs = 0;
}

static void wall_release(cqi_sim* sim, void* self) {
  wall_self* W = self;
  cqi_backend* be = sim->be;
  release_pairs(be, W);
  void** bufs[] = {(void**)&W->start, (void**)&W->tstart, (void**)&W->F, (void**)&W->gF, (void**)&W->surf};
  for (int i = 0; i < 5; i++)
    if (*bufs[i]) be->ops->release(be, *bufs[i]), *bufs[i] = NULL;
  free(W->ref);
  W->ref = NULL;
}

/* Particles sorted by cell of size h (key, then index: the order, and so every sum, is the same on every run). */
typedef struct {
  long key;
  int p;
} keyed;
static int by_key(const void* a, const void* b) {
  const keyed *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key ? 1 : x->p - y->p;
}

/* The first of the sorted particles in the cell of this key (solids if none is). */
static int first_in(const keyed* order, int solids, long key) {
  int lo = 0, hi = solids;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (order[mid].key < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* K^-1 of a symmetric D x D matrix (row-major); 0 when it is singular next to its scale. */
static int invert(int D, const double* K, double* inv) {
  if (D == 2) {
    double det = K[0] * K[3] - K[1] * K[2], tr = K[0] + K[3];
    if (!(det > 1e-6 * tr * tr / 4)) return 0;
    inv[0] = K[3] / det, inv[1] = -K[1] / det, inv[2] = -K[2] / det, inv[3] = K[0] / det;
    return 1;
  }
  double c0 = K[4] * K[8] - K[5] * K[7], c1 = K[5] * K[6] - K[3] * K[8], c2 = K[3] * K[7] - K[4] * K[6];
  double det = K[0] * c0 + K[1] * c1 + K[2] * c2, tr = K[0] + K[4] + K[8];
  if (!(det > 1e-6 * tr * tr * tr / 27)) return 0;
  double t[9] = {c0, K[2] * K[7] - K[1] * K[8], K[1] * K[5] - K[2] * K[4],
                 c1, K[0] * K[8] - K[2] * K[6], K[2] * K[3] - K[0] * K[5],
                 c2, K[1] * K[6] - K[0] * K[7], K[0] * K[4] - K[1] * K[3]};
  for (int i = 0; i < 9; i++) inv[i] = t[i] / det;
  return 1;
}

/* LAPACK's Cholesky factorisation and solve (the engine links LAPACK for its sparse factorisation already). */
void dpotrf_(const char* uplo, const int* n, double* a, const int* lda, int* info);
void dpotrs_(const char* uplo, const int* n, const int* nrhs, const double* a, const int* lda, double* b,
             const int* ldb, int* info);

/* The basis of the quadratic fit at a neighbour's offset d (in units of rho): d, then d_a d_b for a <= b. */
static int quad_basis(int D, const double* d, double* phi) {
  int m = 0;
  for (int a = 0; a < D; a++) phi[m++] = d[a];
  for (int a = 0; a < D; a++)
    for (int b = a; b < D; b++) phi[m++] = d[a] * d[b];
  return m;
}

/* The b_k of F at wall particle p's surface point X_p + ds from a weighted least-squares fit of its neighbours'
 * motion by a quadratic, x_k - x_p = F d_k + H(d_k, d_k) (d_k = X_k - X_p): F(X_p + ds) = F + 2 H(ds, .), a linear
 * function of the x_k - x_p, so F_w = sum_k (x_k - x_p) b_k^T as the linear fit's. Returns 0 when the neighbours do
 * not span the basis (two lattice layers only, or too few). */
static int quad_fit(int D, const double* X, int n, int p, const int32_t* nb, long cnt, double rho, const double* ds,
                    double* bv) {
  int m = D + D * (D + 1) / 2, info = 0, nrhs = D;
  double M[81] = {0}, Y[27] = {0}, phi[9], dsn[3];
  for (int a = 0; a < D; a++) dsn[a] = ds[a] / rho;
  for (long k = 0; k < cnt; k++) {
    double d[3], r2 = 0;
    for (int a = 0; a < D; a++) d[a] = (X[(long)a * n + nb[k]] - X[(long)a * n + p]) / rho, r2 += d[a] * d[a];
    double w = (1 - r2) * (1 - r2);
    quad_basis(D, d, phi);
    for (int i = 0; i < m; i++)
      for (int j = 0; j < m; j++) M[i * m + j] += w * phi[i] * phi[j];
  }
  for (int l = 0; l < D; l++) { /* c_l: dF_l/dz, the linear coefficient plus the quadratic's derivative at ds */
    Y[l * m + l] = 1;
    int q = D;
    for (int a = 0; a < D; a++)
      for (int b = a; b < D; b++, q++) Y[l * m + q] = (l == a ? dsn[b] : 0) + (l == b ? dsn[a] : 0);
  }
  double diag_max = 0;
  for (int i = 0; i < m; i++) diag_max = fmax(diag_max, M[i * m + i]);
  dpotrf_("L", &m, M, &m, &info);
  if (info != 0) return 0;
  for (int i = 0; i < m; i++)
    if (!(M[i * m + i] * M[i * m + i] > 1e-8 * diag_max)) return 0;
  dpotrs_("L", &m, &nrhs, M, &m, Y, &m, &info);
  if (info != 0) return 0;
  for (long k = 0; k < cnt; k++) {
    double d[3], r2 = 0;
    for (int a = 0; a < D; a++) d[a] = (X[(long)a * n + nb[k]] - X[(long)a * n + p]) / rho, r2 += d[a] * d[a];
    double w = (1 - r2) * (1 - r2);
    quad_basis(D, d, phi);
    for (int l = 0; l < D; l++) {
      double t = 0;
      for (int i = 0; i < m; i++) t += Y[l * m + i] * phi[i];
      bv[k * 3 + l] = w * t / rho;
    }
  }
  return 1;
}

/* Whether any solid particle lies within r of point q (the particles sorted by cells of size cs). */
static int occupied(const cqi_model* m, const double* X, const keyed* order, int solids, const long* dims, double cs,
                    const double* q, double r) {
  int n = m->n, D = m->dim;
  long c[3] = {0, 0, 0};
  for (int a = 0; a < D; a++) {
    if (!(q[a] >= 0)) return 0;
    c[a] = (long)floor(q[a] / cs) + 1;
    if (c[a] >= dims[a] - 1) return 0;
  }
  for (int o = 0; o < (D == 3 ? 27 : 9); o++) {
    long key = 0, off[3] = {o % 3 - 1, (o / 3) % 3 - 1, o / 9 - 1};
    for (int a = D - 1; a >= 0; a--) key = key * dims[a] + c[a] + off[a];
    for (int i = first_in(order, solids, key); i < solids && order[i].key == key; i++) {
      double r2 = 0;
      for (int a = 0; a < D; a++) r2 += (X[(long)a * n + order[i].p] - q[a]) * (X[(long)a * n + order[i].p] - q[a]);
      if (r2 < r * r) return 1;
    }
  }
  return 0;
}

/* Whether the body behind wall particle p is at least THICK_QUAD cells thick along its surface's normal (the
 * direction of wall_offset): points every half spacing from the surface inwards, and the deepest, each have a solid
 * particle within 0.9 spacings. Not for an offset longer than half the fit's radius (the quadratic would be taken
 * outside its neighbours) or than the cells checked. */
static int thick(const cqi_model* m, const double* X, const keyed* order, int solids, const long* dims, double cs,
                 int p, double hp) {
  int n = m->n, D = m->dim;
  double u[3] = {0, 0, 0}, len = 0;
  for (int a = 0; a < D; a++) u[a] = m->wall_offset[(long)a * n + p], len += u[a] * u[a];
  if (!(len > 0)) return 0;
  len = sqrt(len);
  double reach = THICK_QUAD * m->desc.dx - len;
  if (!(len <= 0.5 * RADIUS * hp) || !(reach > 0)) return 0;
  for (double s = fmin(0.5 * hp, reach);; s = fmin(s + 0.5 * hp, reach)) {
    double q[3];
    for (int a = 0; a < D; a++) q[a] = X[(long)a * n + p] - s * u[a] / len;
    if (!occupied(m, X, order, solids, dims, cs, q, 0.9 * hp)) return 0;
    if (s >= reach) return 1;
  }
}

/* A signature of which particles are walls (and their surface offsets, on which the quadratic fit's b_k depend) and
 * which are solids: the pairs are built again only when it changes (not when a parameter such as vol0 is written, so
 * that they stay constants of the loss). */
static unsigned long long signature(const cqi_model* m) {
  unsigned long long h = 1469598103934665603ull;
  for (int p = 0; p < m->n; p++) {
    h = (h ^ (unsigned long long)(is_wall(m, p) * 2 + (m->material[p] == CQ_MAT_FLUID))) * 1099511628211ull;
    if (is_wall(m, p)) {
      h = (h ^ (unsigned long long)m->act_id[p]) * 1099511628211ull;
      for (int a = 0; a < m->dim; a++) { /* quad_fit's b_k depend on the offsets */
        double o = m->wall_offset[(long)a * m->n + p];
        unsigned long long bits;
        memcpy(&bits, &o, sizeof bits);
        h = (h ^ bits) * 1099511628211ull;
      }
    }
  }
  return h;
}

/* The pairs from the reference positions W->ref, uploaded. */
static int build(cqi_sim* sim, wall_self* W) {
  const cqi_model* m = sim->model;
  cqi_backend* be = sim->be;
  int n = m->n, D = m->dim, st = CQ_OK;
  const double* X = W->ref;
  double h_max = 0;
  for (int p = 0; p < n; p++)
    if (is_wall(m, p)) h_max = fmax(h_max, pow(m->vol0[p], 1.0 / D));
  double cs = RADIUS * h_max; /* the cells of the search: one radius */
  keyed* order = malloc(sizeof(keyed) * (size_t)n);
  int32_t *start = calloc((size_t)n + 1, sizeof(int32_t)), *tstart = calloc((size_t)n + 1, sizeof(int32_t));
  long cap = 0, count = 0;
  int32_t *nbr = NULL, *owner = NULL, *tpair = NULL;
  double* bv = NULL;
  long dims[3] = {1, 1, 1};
  if (!order || !start || !tstart) st = CQ_ERR_NOMEM;
  int solids = 0;
  if (st == CQ_OK && cs > 0) {
    for (int a = 0; a < D; a++) {
      double hi = 0;
      for (int p = 0; p < n; p++) hi = fmax(hi, X[(long)a * n + p]);
      dims[a] = (long)(hi / cs) + 3;
    }
    for (int p = 0; p < n; p++) {
      if (m->material[p] == CQ_MAT_FLUID) continue;
      long key = 0;
      for (int a = D - 1; a >= 0; a--) key = key * dims[a] + (long)floor(fmax(X[(long)a * n + p], 0) / cs) + 1;
      order[solids].key = key, order[solids++].p = p;
    }
    qsort(order, (size_t)solids, sizeof(keyed), by_key);
  }
  for (int p = 0; p < n && st == CQ_OK; p++) {
    start[p] = (int32_t)count;
    if (!is_wall(m, p) || !(cs > 0)) continue;
    double hp = pow(m->vol0[p], 1.0 / D), rho = RADIUS * hp;
    long first = count;
    long c[3] = {0, 0, 0};
    for (int a = 0; a < D; a++) c[a] = (long)floor(fmax(X[(long)a * n + p], 0) / cs) + 1;
    for (int o = 0; o < (D == 3 ? 27 : 9) && st == CQ_OK; o++) { /* the 3^D cells around p's */
      long key = 0, off[3] = {o % 3 - 1, (o / 3) % 3 - 1, o / 9 - 1};
      for (int a = D - 1; a >= 0; a--) key = key * dims[a] + c[a] + off[a];
      for (int i = first_in(order, solids, key); i < solids && order[i].key == key; i++) {
        int j = order[i].p;
        double r[3] = {0, 0, 0}, r2 = 0;
        for (int a = 0; a < D; a++) r[a] = X[(long)a * n + j] - X[(long)a * n + p], r2 += r[a] * r[a];
        if (j == p || !(r2 < rho * rho)) continue;
        if (count == cap) {
          cap = cap ? 2 * cap : 1024;
          int32_t* t1 = realloc(nbr, sizeof(int32_t) * cap);
          if (t1) nbr = t1;
          int32_t* t2 = realloc(owner, sizeof(int32_t) * cap);
          if (t2) owner = t2;
          double* t3 = realloc(bv, sizeof(double) * 3 * cap);
          if (t3) bv = t3;
          if (!t1 || !t2 || !t3 || cap > 0x7fffffff) {
            st = CQ_ERR_NOMEM;
            break;
          }
        }
        nbr[count] = j, owner[count] = p;
        count++;
      }
    }
    if (st != CQ_OK) break;
    double ds[3] = {0, 0, 0};
    for (int a = 0; a < D; a++) ds[a] = m->wall_offset[(long)a * n + p];
    if (thick(m, X, order, solids, dims, cs, p, hp) &&
        quad_fit(D, X, n, p, nbr + first, count - first, rho, ds, bv + first * 3))
      continue;
    /* the linear fit over the nearer neighbours (a wall too thin for the quadratic's third layer, or too few) */
    double rl = RADIUS_LIN * hp, K[9] = {0}, inv[9];
    long kept = first;
    for (long k = first; k < count; k++) {
      double r[3] = {0, 0, 0}, r2 = 0;
      for (int a = 0; a < D; a++) r[a] = X[(long)a * n + nbr[k]] - X[(long)a * n + p], r2 += r[a] * r[a];
      if (!(r2 < rl * rl)) continue;
      double w = (1 - r2 / (rl * rl)) * (1 - r2 / (rl * rl));
      for (int a = 0; a < D; a++) {
        bv[kept * 3 + a] = w * r[a]; /* w r, times K^-1 below */
        for (int b = 0; b < D; b++) K[a * D + b] += w * r[a] * r[b];
      }
      nbr[kept] = nbr[k], owner[kept] = p;
      kept++;
    }
    count = kept;
    if (!invert(D, K, inv)) { /* too few neighbours to span the space (a lone particle): F_p, as before */
      count = first;
      continue;
    }
    for (long k = first; k < count; k++) {
      double t[3] = {0, 0, 0};
      for (int a = 0; a < D; a++)
        for (int b = 0; b < D; b++) t[a] += inv[a * D + b] * bv[k * 3 + b];
      for (int a = 0; a < D; a++) bv[k * 3 + a] = t[a];
    }
  }
  if (st == CQ_OK) start[n] = (int32_t)count;
  /* the transposed pairs: for each particle j, the pairs in which it is the neighbour, in pair order */
  if (st == CQ_OK && count > 0 && !(tpair = malloc(sizeof(int32_t) * count))) st = CQ_ERR_NOMEM;
  if (st == CQ_OK) {
    for (long k = 0; k < count; k++) tstart[nbr[k] + 1]++;
    for (int j = 0; j < n; j++) tstart[j + 1] += tstart[j];
    int32_t* fill = malloc(sizeof(int32_t) * ((size_t)n + 1));
    if (!fill) st = CQ_ERR_NOMEM;
    else {
      memcpy(fill, tstart, sizeof(int32_t) * ((size_t)n + 1));
      for (long k = 0; k < count; k++) tpair[fill[nbr[k]]++] = (int32_t)k;
      free(fill);
    }
  }
  /* upload: the pairs' buffers grow as needed; the per-particle ones are allocated once */
  cq_real* b = NULL;
  if (st == CQ_OK && count > 0 && !(b = malloc(sizeof(cq_real) * D * count))) st = CQ_ERR_NOMEM;
  for (long k = 0; st == CQ_OK && k < count; k++)
    for (int a = 0; a < D; a++) b[k * D + a] = (cq_real)bv[k * 3 + a];
  size_t pb = sizeof(int32_t) * ((size_t)n + 1), fb = sizeof(cq_real) * (size_t)n * D * D;
  if (st == CQ_OK && !W->start) {
    W->start = be->ops->alloc(be, pb), W->tstart = be->ops->alloc(be, pb);
    W->F = be->ops->alloc(be, fb), W->gF = be->ops->alloc(be, fb);
    if (!W->start || !W->tstart || !W->F || !W->gF) st = CQ_ERR_NOMEM;
  }
  if (st == CQ_OK && count > W->cap_pairs) {
    release_pairs(be, W);
    W->nbr = be->ops->alloc(be, sizeof(int32_t) * count), W->tpair = be->ops->alloc(be, sizeof(int32_t) * count);
    W->owner = be->ops->alloc(be, sizeof(int32_t) * count), W->b = be->ops->alloc(be, sizeof(cq_real) * D * count);
    if (!W->nbr || !W->tpair || !W->owner || !W->b) st = CQ_ERR_NOMEM;
    else W->cap_pairs = count;
  }
  if (st == CQ_OK) st = be->ops->upload(be, W->start, start, pb);
  if (st == CQ_OK) st = be->ops->upload(be, W->tstart, tstart, pb);
  if (st == CQ_OK && count > 0) st = be->ops->upload(be, W->nbr, nbr, sizeof(int32_t) * count);
  if (st == CQ_OK && count > 0) st = be->ops->upload(be, W->tpair, tpair, sizeof(int32_t) * count);
  if (st == CQ_OK && count > 0) st = be->ops->upload(be, W->owner, owner, sizeof(int32_t) * count);
  if (st == CQ_OK && count > 0) st = be->ops->upload(be, W->b, b, sizeof(cq_real) * D * count);
  free(order), free(start), free(tstart), free(nbr), free(owner), free(tpair), free(bv), free(b);
  if (st == CQ_ERR_NOMEM)
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "chamber walls: out of memory for the walls' neighbours (%ld pairs)",
                      count);
  if (st != CQ_OK) return st;
  W->pairs = count;
  W->built = m->generation;
  W->sig = signature(m);
  return CQ_OK;
}

/* The reference positions from x (host, [D][n]). */
static int take(cqi_sim* sim, wall_self* W, const cq_real* x) {
  long len = (long)sim->model->n * sim->model->dim;
  if (!W->ref && !(W->ref = malloc(sizeof(double) * (size_t)len)))
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "chamber walls: out of memory for the reference positions");
  for (long i = 0; i < len; i++) W->ref[i] = x[i];
  W->ref_set = 1;
  W->built = -1;
  return CQ_OK;
}

int cqi_wall_take(cqi_sim* sim, const cq_particles* s) {
  if (!wall_on(sim->model)) return CQ_OK;
  wall_self* W = self_of(sim);
  if (!W) return cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory for the wall term's state");
  return take(sim, W, s->x);
}

void cqi_wall_reset(cqi_sim* sim) {
  wall_self* W = cqi_term_peek(sim, CQI_TERM_wall);
  if (W) W->ref_set = 0, W->built = -1;
}

/* The reference (the first state stepped from, s in backend memory, unless taken) and the pairs for this model. */
static int ready(cqi_sim* sim, wall_self* W, const cq_particles* s) {
  cqi_backend* be = sim->be;
  int st = CQ_OK;
  if (!W->ref_set) {
    size_t bytes = sizeof(cq_real) * (size_t)be->n * (size_t)be->dim;
    cq_real* x = malloc(bytes);
    st = x ? be->ops->download(be, x, s->x, bytes)
           : cqi_errorf(sim->err, CQ_ERR_NOMEM, "chamber walls: out of memory for the reference positions");
    if (st == CQ_OK) st = take(sim, W, x);
    free(x);
  }
  if (st == CQ_OK && W->built != sim->model->generation) {
    if (W->built >= 0 && W->sig == signature(sim->model)) W->built = sim->model->generation;
    else st = build(sim, W);
  }
  return st;
}

/* The list of walls whose pressure acts at their surface point (a wall with a non-zero wall_offset), for this
 * model. */
static int surface_list(cqi_sim* sim, wall_self* W) {
  const cqi_model* m = sim->model;
  if (W->surf_built == m->generation) return CQ_OK;
  cqi_backend* be = sim->be;
  int n = m->n, count = 0, st = CQ_OK;
  int32_t* list = malloc(sizeof(int32_t) * ((size_t)n + 1));
  if (!list) return cqi_errorf(sim->err, CQ_ERR_NOMEM, "chamber walls: out of memory for the surface list");
  for (int p = 0; p < n; p++) {
    int off = 0;
    for (int a = 0; a < m->dim; a++) off |= m->wall_offset[(long)a * n + p] != 0;
    if (off && is_wall(m, p)) list[count++] = p;
  }
  if (!W->surf && !(W->surf = be->ops->alloc(be, sizeof(int32_t) * ((size_t)n + 1)))) st = CQ_ERR_NOMEM;
  if (st == CQ_OK && count > 0) st = be->ops->upload(be, W->surf, list, sizeof(int32_t) * (size_t)count);
  free(list);
  if (st == CQ_ERR_NOMEM) return cqi_errorf(sim->err, CQ_ERR_NOMEM, "chamber walls: out of memory for the surface list");
  if (st != CQ_OK) return st;
  W->nsurf = count;
  W->surf_built = m->generation;
  return CQ_OK;
}

static int wall_begin(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s) {
  wall_self* W = self;
  int st = ready(sim, W, s);
  if (st == CQ_OK) st = surface_list(sim, W);
  if (st != CQ_OK) return st;
  c->wall_surf = W->surf, c->wall_nsurf = W->nsurf;
  if (W->pairs == 0) return st;
  cqi_backend* be = sim->be;
  c->wall_start = W->start, c->wall_nbr = W->nbr, c->wall_b = W->b;
  c->wall_tstart = W->tstart, c->wall_tpair = W->tpair, c->wall_owner = W->owner;
  c->wall_F = W->F, c->wall_gF = W->gF;
  st = be->ops->wall_deform(be, c, s, &sim->view->params, W->F);
  if (st == CQ_OK) st = be->ops->zero(be, W->gF, sizeof(cq_real) * (size_t)be->n * be->dim * be->dim);
  return st;
}

/* dL/dF_w (added by the adjoints of P2G, the solve and the cavities) into g0's x. */
static int wall_project_adj(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, cq_particles* g0,
                            const cq_param_grads* gp) {
  wall_self* W = self;
  if (W->pairs == 0 || !c->wall_start) return CQ_OK;
  return sim->be->ops->wall_deform_adj(sim->be, c, s, &sim->view->params, W->gF, g0);
}

void cqi_wall_view(cqi_sim* sim, cq_particles* s, cq_particles* g) {
  wall_self* W = cqi_term_peek(sim, CQI_TERM_wall);
  if (!W || W->pairs == 0 || !wall_on(sim->model)) return;
  s->F = W->F;
  if (g) g->F = W->gF;
}

const cqi_term cqi_term_wall = {
    .name = "wall",
    .self_size = sizeof(wall_self),
    .on = wall_on,
    .release = wall_release,
    .begin = wall_begin,
    .project_adj = wall_project_adj,
};

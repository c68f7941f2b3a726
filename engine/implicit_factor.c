/* The direct preconditioner of the implicit solve (implicit_factor.h). The backend numbers the nodes with mass and
 * scatters every particle's Newton-matrix blocks (implicit.h implicit_blocks: the Hessian of eq. 12 with each
 * material block projected to positive semi-definite); here they become one block matrix with the boundary
 * projections and the masses, factorised by the supernodal Cholesky of sparse_cholesky.c. Its pattern is every pair of
 * nodes with mass within two cells of each other (the stencils' reach), or four with the fill water in 2D (its Hessian
 * couples two stencils through a node: fill_blocks), so it changes only when the set of nodes with mass does, and the
 * ordering and symbolic analysis are reused until then. Serial and in a fixed order: the same factors, so the same
 * solve, for any thread count. */
#include "implicit_factor.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sparse_cholesky.h"

struct cqi_factor {
  int dim;
  int width;      /* blocks per row: the 5^D offsets within two cells, or 9^D (four) with the fill water's */
  long cap;       /* nodes the arrays below hold */
  long count;     /* nodes of the last update */
  int32_t* slot;  /* [n_nodes] node -> row block, -1 without mass */
  long* node;     /* [cap] row block -> grid node */
  int32_t* nbr;   /* [cap][width] the row block of each node at each offset, -1 when none */
  double* blocks; /* [cap][width][D][D] Newton-matrix blocks, then the matrix's */
  double* proj;   /* [cap][D][D] the boundary projection Pi of each node */
  double* rhs;    /* [count * D] solve vector */
  /* with the fill water (width 9^D): the elastic blocks as the backend numbers them (within two cells) and the
   * fill's rows g_ij (fill.h fill_rows), [cap][5^D] and [cap][5^D][D][D], [cap][5^D][D] */
  int32_t* nbr5;
  double *blocks5, *rows;
  cqi_chol* chol;
  int factored;
};

int cqi_factor_supported(const cqi_backend* be) {
  return be->ops->host_memory && be->ops->implicit_slots && be->ops->implicit_blocks;
}

cqi_factor* cqi_factor_create(void) {
  cqi_factor* f = calloc(1, sizeof(cqi_factor));
  if (f && !(f->chol = cqi_chol_create())) {
    free(f);
    return NULL;
  }
  return f;
}

void cqi_factor_free(cqi_factor* f) {
  if (!f) return;
  cqi_chol_free(f->chol);
  free(f->slot), free(f->node), free(f->nbr), free(f->blocks), free(f->proj), free(f->rhs);
  free(f->nbr5), free(f->blocks5), free(f->rows);
  free(f);
}

static int grow(cqi_factor* f, cqi_sim* sim, long count, int D, int width) {
  int near = D == 3 ? 125 : 25, wide = width != near;
  if (count <= f->cap && wide == (f->rows != NULL) && width == f->width) return CQ_OK;
  long cap = count + count / 4;
  free(f->node), free(f->nbr), free(f->blocks), free(f->proj), free(f->rhs);
  free(f->nbr5), free(f->blocks5), free(f->rows);
  f->nbr5 = NULL, f->blocks5 = f->rows = NULL;
  f->node = malloc(sizeof(long) * cap);
  f->nbr = malloc(sizeof(int32_t) * cap * width);
  f->blocks = malloc(sizeof(double) * cap * width * D * D);
  f->proj = malloc(sizeof(double) * cap * D * D);
  f->rhs = malloc(sizeof(double) * cap * D);
  int ok = f->node && f->nbr && f->blocks && f->proj && f->rhs;
  if (wide) {
    f->nbr5 = malloc(sizeof(int32_t) * cap * near);
    f->blocks5 = malloc(sizeof(double) * cap * near * D * D);
    f->rows = malloc(sizeof(double) * cap * near * D);
    ok &= f->nbr5 && f->blocks5 && f->rows;
  }
  f->cap = cap;
  f->width = width;
  if (!ok) {
    f->cap = 0;
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "implicit.precond = \"factor\": out of memory assembling the Hessian "
                      "of %ld nodes (use implicit.precond = \"mass\")", count);
  }
  return CQ_OK;
}

/* A pattern: nbr[k][o] = the row block of the node at offset o (axis a in [-reach, reach], weighted (2 reach + 1)^a,
 * as implicit_blocks numbers them for reach 2) from node k, when it has mass. */
static void pattern(const cqi_factor* f, const cq_substep* c, int D, int reach, int32_t* nbr) {
  int side = 2 * reach + 1, nb = D == 3 ? side * side * side : side * side;
  for (long k = 0; k < f->count; k++) {
    long node = f->node[k], rest = node;
    int at[3] = {0, 0, 0};
    for (int a = 0; a < D; a++) {
      at[a] = (int)(rest / c->stride[a]);
      rest -= at[a] * c->stride[a];
    }
    for (int o = 0; o < nb; o++) {
      int code = o, inside = 1;
      long other = node;
      for (int a = 0; a < D; a++) {
        int d = code % side - reach, ia = at[a] + d;
        code /= side;
        inside &= ia >= 0 && ia < c->res[a];
        other += d * c->stride[a];
      }
      nbr[k * nb + o] = inside ? f->slot[other] : -1;
    }
  }
}

/* The wide pattern (the fill water's, the fixed groups'): the elastic blocks (offsets within two cells) moved into
 * the 9^D rows. */
static void spread_blocks(cqi_factor* f, int D) {
  enum { NEAR3 = 125, NEAR2 = 25 };
  int near = D == 3 ? NEAR3 : NEAR2, width = f->width, DD = D * D;
  memset(f->blocks, 0, sizeof(double) * f->count * width * DD);
  for (int o = 0; o < near; o++) {
    int code = o, w = 0, scale = 1;
    for (int a = 0; a < D; a++, code /= 5, scale *= 9) w += (code % 5 - 2 + 4) * scale;
    for (long j = 0; j < f->count; j++)
      if (f->nbr5[j * near + o] >= 0)
        memcpy(f->blocks + (j * width + w) * DD, f->blocks5 + (j * near + o) * DD, sizeof(double) * DD);
  }
}

/* With the fill water: W's Hessian added to the wide blocks, block (j, k) += dx^D sum_i c_i g_ij g_ik^T over the
 * nodes i within two cells of j (c_i = K_i / phi0_i^2 where node i is under pressure at the iterate: `at`,
 * cqi_fill_linearise's; g: the fill's rows). Row by row, each its own: the same sums in the same order for any thread
 * count. Without it CG works on W's condition number, about K dt^2 / (rho dx^2) (docs/benchmarks.md, "the fill water
 * in the implicit solve"). */
static void fill_blocks(cqi_factor* f, int D, const cq_real* at, double Vc) {
  enum { NEAR3 = 125, NEAR2 = 25 };
  int near = D == 3 ? NEAR3 : NEAR2, width = f->width, DD = D * D;
  int d5[NEAR3][3]; /* offset o within two cells, per axis */
  for (int o = 0; o < near; o++) {
    int code = o;
    for (int a = 0; a < D; a++, code /= 5) d5[o][a] = code % 5 - 2;
  }
  for (long j = 0; j < f->count; j++)
    for (int oi = 0; oi < near; oi++) { /* node i = j + d5[oi] */
      int32_t i = f->nbr5[j * near + oi];
      if (i < 0) continue;
      double ci = Vc * (double)at[f->node[i] * (D + 1) + 2];
      if (!(ci > 0)) continue;
      const double* gij = f->rows + ((long)i * near + (near - 1 - oi)) * D; /* j's offset from i: -d5[oi] */
      for (int ok = 0; ok < near; ok++) { /* node k = i + d5[ok] */
        if (f->nbr5[(long)i * near + ok] < 0) continue;
        const double* gik = f->rows + ((long)i * near + ok) * D;
        int o9 = 0, scale = 1;
        for (int a = 0; a < D; a++, scale *= 9) o9 += (d5[oi][a] + d5[ok][a] + 4) * scale;
        double* blk = f->blocks + (j * width + o9) * DD;
        for (int a = 0; a < D; a++)
          for (int b = 0; b < D; b++) blk[a * D + b] += ci * gij[a] * gik[b];
      }
    }
}

/* Pi of every numbered node: the solve's projection (implicit_node with no x) of the unit vectors, column by
 * column, in the grid vector y. */
static int projections(cqi_factor* f, cqi_sim* sim, const cq_substep* c, const cq_real* vstar, cq_real* y) {
  cqi_backend* be = sim->be;
  int D = be->dim;
  for (int a = 0; a < D; a++) {
    for (long k = 0; k < f->count; k++)
      for (int b = 0; b < D; b++) y[f->node[k] * (D + 1) + b] = b == a;
    int st = be->ops->implicit_node(be, c, vstar, NULL, y);
    if (st != CQ_OK) return st;
    for (long k = 0; k < f->count; k++)
      for (int b = 0; b < D; b++) f->proj[(k * D + b) * D + a] = y[f->node[k] * (D + 1) + b];
  }
  return CQ_OK;
}

/* K's block (i, j) = Pi_i B Pi_j^T (+ m_i I on the diagonal), in place of B. */
static void k_block(int D, const double* Pi, double* B, const double* Pj, double m) {
  double T[9];
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      double t = 0;
      for (int k = 0; k < D; k++) t += B[a * D + k] * Pj[b * D + k];
      T[a * D + b] = t;
    }
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      double t = 0;
      for (int k = 0; k < D; k++) t += Pi[a * D + k] * T[k * D + b];
      B[a * D + b] = t + (a == b ? m : 0);
    }
}

int cqi_factor_update(cqi_factor* f, cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v,
                      const cq_real* vstar, cq_real* scratch, int* ok) {
  cqi_backend* be = sim->be;
  /* the fill's Hessian and the fixed groups' exact blocks in 2D only: their 9^3 couplings make 3D fronts too large
   * (docs/benchmarks.md); 3D fixed groups take vol_blocks_node's on the group node's stencil */
  int D = be->dim, near = D == 3 ? 125 : 25, fill = c->fill && be->ops->fill_rows && D == 2;
  int fixed = c->vol_averaged && c->vol_group_of && be->ops->vol_group_blocks && D == 2;
  int width = fill || fixed ? (D == 3 ? 729 : 81) : near, center = (width - 1) / 2;
  f->factored = 0;
  *ok = 0;
  f->dim = D;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (!f->slot && !(f->slot = malloc(sizeof(int32_t) * be->n_nodes)))
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "implicit.precond = \"factor\": out of memory");
  long count;
  int st = be->ops->implicit_slots(be, c, vstar, f->slot, &count);
  if (st != CQ_OK) return st;
  if ((st = grow(f, sim, count, D, width)) != CQ_OK) return st;
  f->count = count;
  for (long k = 0; k < be->n_nodes; k++)
    if (f->slot[k] >= 0) f->node[f->slot[k]] = k;
  int32_t* nbr5 = width != near ? f->nbr5 : f->nbr;
  double* blocks5 = width != near ? f->blocks5 : f->blocks;
  pattern(f, c, D, 2, nbr5);
  memset(blocks5, 0, sizeof(double) * count * near * D * D);
  if ((st = be->ops->implicit_blocks(be, c, s, &sim->view->params, v, f->slot, nbr5, blocks5)) != CQ_OK) return st;
  if (width != near) {
    pattern(f, c, D, 4, f->nbr);
    spread_blocks(f, D);
  }
  if (fixed && (st = be->ops->vol_group_blocks(be, c, s, &sim->view->params, f->slot, f->blocks)) != CQ_OK) return st;
  if (fill) { /* W's Hessian at v (fill.h): its rows from the particles, their products per node */
    memset(f->rows, 0, sizeof(double) * count * near * D);
    if ((st = cqi_fill_linearise(sim, c, s, v)) != CQ_OK) return st;
    if ((st = be->ops->fill_rows(be, c, s, &sim->view->params, f->slot, f->rows)) != CQ_OK) return st;
    double Vc = 1;
    for (int a = 0; a < D; a++) Vc *= c->dx;
    fill_blocks(f, D, sim->fill.at, Vc);
  }
  if ((st = projections(f, sim, c, vstar, scratch)) != CQ_OK) return st;
  for (long i = 0; i < count; i++)
    for (int o = 0; o < width; o++) {
      int32_t j = f->nbr[i * width + o];
      if (j < 0) continue;
      double m = o == center ? (double)vstar[f->node[i] * (D + 1) + D] / (double)c->damp : 0; /* implicit_inertia */
      k_block(D, f->proj + i * D * D, f->blocks + (i * width + o) * D * D, f->proj + (long)j * D * D, m);
    }
  sim->stats.factorizations++;
  cqi_block_matrix K = {count, D, width, f->nbr, f->blocks};
  int cs = cqi_chol_factor(f->chol, &K, be->threads);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  sim->stats.factor_seconds += (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  if (cs == CQI_CHOL_NOMEM)
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "implicit.precond = \"factor\": out of memory factorising the "
                      "Hessian of %ld unknowns (use implicit.precond = \"mass\")", count * D);
  if (cs == CQI_CHOL_ORDER)
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "implicit.precond = \"factor\": METIS could not order the Hessian "
                      "of %ld nodes", count);
  f->factored = *ok = cs == CQI_CHOL_OK; /* not positive definite: the caller preconditions by the masses */
  return CQ_OK;
}

int cqi_factor_solve(cqi_factor* f, const cq_real* r, cq_real* z) {
  int D = f->dim;
  for (long k = 0; k < f->count; k++)
    for (int a = 0; a < D; a++) f->rhs[k * D + a] = r[f->node[k] * (D + 1) + a];
  cqi_chol_solve(f->chol, f->rhs);
  for (long k = 0; k < f->count; k++)
    for (int a = 0; a < D; a++) z[f->node[k] * (D + 1) + a] = (cq_real)f->rhs[k * D + a];
  return CQ_OK;
}

/* The direct preconditioner of the implicit solve (implicit_factor.h). The backend numbers the nodes with mass and
 * scatters every particle's Newton-matrix blocks (implicit.h implicit_blocks: the Hessian of eq. 12 with each
 * material block projected to positive semi-definite); here they become one block matrix with the boundary
 * projections and the masses, factorised by the supernodal Cholesky of sparse_cholesky.c. Its pattern is every pair of
 * nodes with mass within two cells of each other (the stencils' reach), or four with the 2D fixed groups (a group's
 * members' stencils), so it changes only when the set of nodes with mass does, and the ordering and symbolic analysis
 * are reused until then. The physics terms add theirs (term.h factor_*): blocks on the pattern (the 2D fixed groups'
 * reach four cells), or a rank-one Hessian per node (the grid fluid's, which couples nodes four cells apart) through
 * one more unknown per node on the same pattern (augment). Serial and in a fixed order: the same factors, so the
 * same solve, for any thread count. */
#include "implicit_factor.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sparse_cholesky.h"
#include "term.h"

struct cqi_factor {
  int dim;
  int width;      /* blocks per row: the 5^D offsets within two cells, or 9^D (four) when a term reaches four */
  int bs;         /* unknowns per node: D, or D + 1 with a term's rank-one Hessian (augment) */
  long cap;       /* nodes the arrays below hold */
  long count;     /* nodes of the last update */
  int32_t* slot;  /* [n_nodes] node -> row block, -1 without mass */
  long* node;     /* [cap] row block -> grid node */
  int32_t* nbr;   /* [cap][width] the row block of each node at each offset, -1 when none */
  double* blocks; /* [cap][width][D][D] Newton-matrix blocks, then the matrix's */
  double* proj;   /* [cap][D][D] the boundary projection Pi of each node */
  double* rhs;    /* [count * bs] solve vector */
  /* with width 9^D: the elastic blocks as the backend numbers them (within two cells), [cap][5^D], [cap][5^D][D][D] */
  int32_t* nbr5;
  double* blocks5;
  /* with a rank-one term: its rows g_ij [cap][5^D][D], weights [cap] (term.h factor_rows) and the augmented matrix
   * [cap][width][bs][bs] */
  double *rows, *weight, *aug;
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
  free(f->nbr5), free(f->blocks5), free(f->rows), free(f->weight), free(f->aug);
  free(f);
}

static int grow(cqi_factor* f, cqi_sim* sim, long count, int D, int width, int rank) {
  int near = D == 3 ? 125 : 25, wide = width != near, bs = rank ? D + 1 : D;
  if (count <= f->cap && width == f->width && bs == f->bs) return CQ_OK;
  long cap = count + count / 4;
  free(f->node), free(f->nbr), free(f->blocks), free(f->proj), free(f->rhs);
  free(f->nbr5), free(f->blocks5), free(f->rows), free(f->weight), free(f->aug);
  f->nbr5 = NULL, f->blocks5 = f->rows = f->weight = f->aug = NULL;
  f->node = malloc(sizeof(long) * cap);
  f->nbr = malloc(sizeof(int32_t) * cap * width);
  f->blocks = malloc(sizeof(double) * cap * width * D * D);
  f->proj = malloc(sizeof(double) * cap * D * D);
  f->rhs = malloc(sizeof(double) * cap * bs);
  int ok = f->node && f->nbr && f->blocks && f->proj && f->rhs;
  if (wide) {
    f->nbr5 = malloc(sizeof(int32_t) * cap * near);
    f->blocks5 = malloc(sizeof(double) * cap * near * D * D);
    ok &= f->nbr5 && f->blocks5;
  }
  if (rank) {
    f->rows = malloc(sizeof(double) * cap * near * D);
    f->weight = malloc(sizeof(double) * cap);
    f->aug = malloc(sizeof(double) * cap * width * bs * bs);
    ok &= f->rows && f->weight && f->aug;
  }
  f->cap = cap;
  f->width = width;
  f->bs = bs;
  if (!ok) {
    f->cap = 0;
    return cqi_errorf(sim->err, CQ_ERR_NOMEM,
                      "implicit.precond = \"factor\": out of memory assembling the Hessian "
                      "of %ld nodes (use implicit.precond = \"mass\")",
                      count);
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

/* Offset o within two cells (axis a in [-2, 2] weighted 5^a) as a position in a row of width blocks (5^D: o itself;
 * 9^D: axis a in [-4, 4] weighted 9^a). */
static int row_position(int o, int D, int width) {
  int side = width == (D == 3 ? 125 : 25) ? 5 : 9, w = 0, scale = 1;
  for (int a = 0; a < D; a++, o /= 5, scale *= side) w += (o % 5 - 2 + (side - 1) / 2) * scale;
  return w;
}

/* The wide pattern (the 2D fixed groups'): the elastic blocks (offsets within two cells) moved into
 * the 9^D rows. */
static void spread_blocks(cqi_factor* f, int D) {
  enum { NEAR3 = 125, NEAR2 = 25 };
  int near = D == 3 ? NEAR3 : NEAR2, width = f->width, DD = D * D;
  memset(f->blocks, 0, sizeof(double) * f->count * width * DD);
  for (int o = 0; o < near; o++) {
    int w = row_position(o, D, width);
    for (long j = 0; j < f->count; j++)
      if (f->nbr5[j * near + o] >= 0)
        memcpy(f->blocks + (j * width + w) * DD, f->blocks5 + (j * near + o) * DD, sizeof(double) * DD);
  }
}

/* With a term whose Hessian is rank one per node (the grid fluid's): the quasi-definite matrix [[K, B^T], [B, -A]]
 * whose Schur complement in the velocities, K + B^T A^-1 B, is K + H_W, the term's Hessian projected: H_W = sum_i
 * c_i (Pi g_i)(Pi g_i)^T (term.h factor_rows: c_i its weight, dx^D K_i / phi0_i^2 for the fill's nodes under pressure
 * in the linearisation; g_i node i's row, g_ij its change per unit velocity of node j). One more unknown per node,
 * y_i = sqrt(c_i / a_i) (Pi g_i).v: B's row i holds sqrt(a_i c_i) (Pi_j g_ij)^T at node j, A = diag(a_i), a_i node
 * i's mass term (K's scale). B couples
 * nodes within two cells, so the matrix keeps K's pattern, where H_W couples nodes four cells apart: 9^3 blocks per
 * row in 3D, too large for the factor's fronts. Factorised as L S L^T (sparse_cholesky.h, neg = 1): the solve with it
 * is the solve with K + H_W (the sign test of its pivots stands in for the definiteness test: a failed one leaves the
 * masses as the preconditioner, as a failed Cholesky does). Without it CG works on W's condition number, about K dt^2
 * / (rho dx^2) (docs/results/history.md, "the fill water in the implicit solve"). Row by row, serial: the same for any
 * thread count. */
static void augment(cqi_factor* f, int D, const cq_real* vstar, double damp) {
  enum { NEAR3 = 125 };
  int near = D == 3 ? NEAR3 : 25, width = f->width, bs = D + 1, DD = D * D, BB = bs * bs, center = (width - 1) / 2;
  int at_w[NEAR3]; /* offset o within two cells -> its position in a row of width */
  for (int o = 0; o < near; o++) at_w[o] = row_position(o, D, width);
  const int32_t* nbr5 = width == near ? f->nbr : f->nbr5;
  memset(f->aug, 0, sizeof(double) * f->count * width * BB);
  for (long k = 0; k < f->count * width; k++)
    if (f->nbr[k] >= 0)
      for (int a = 0; a < D; a++)
        for (int b = 0; b < D; b++) f->aug[k * BB + a * bs + b] = f->blocks[k * DD + a * D + b];
  for (long i = 0; i < f->count; i++) {
    double m = (double)vstar[f->node[i] * (D + 1) + D] / damp, ai = m > 0 ? m : 1;
    double ci = f->weight[i], si = ci > 0 ? sqrt(ai * ci) : 0;
    f->aug[(i * width + center) * BB + D * bs + D] = -ai;
    if (si == 0) continue;
    for (int o = 0; o < near; o++) {
      int32_t j = nbr5[i * near + o];
      if (j < 0) continue;
      const double *g = f->rows + (i * near + o) * D, *Pj = f->proj + (long)j * DD;
      for (int b = 0; b < D; b++) {
        double pg = 0;
        for (int a = 0; a < D; a++) pg += Pj[b * D + a] * g[a];
        f->aug[(i * width + at_w[o]) * BB + D * bs + b] = si * pg;                  /* (y_i, v_j) */
        f->aug[((long)j * width + at_w[near - 1 - o]) * BB + b * bs + D] = si * pg; /* (v_j, y_i) */
      }
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
  cq_substep cv = *c; /* what the terms' blocks read (term.h factor_ctx) */
  int st = cqi_terms_factor_ctx(sim, &cv), reach, rank;
  if (st == CQ_OK) st = cqi_terms_factor_shape(sim, &cv, &reach, &rank);
  if (st != CQ_OK) return st;
  c = &cv;
  if (rank > 1 || reach > 4)
    return cqi_errorf(sim->err, CQ_ERR_ARG,
                      "implicit.precond = \"factor\": the world's terms ask for %d rank-one Hessians per node and "
                      "couplings %d cells apart; the factor holds one and four (use implicit.precond = \"mass\")",
                      rank, reach);
  int D = be->dim, near = D == 3 ? 125 : 25;
  int width = reach > 2 ? (D == 3 ? 729 : 81) : near, center = (width - 1) / 2;
  f->factored = 0;
  *ok = 0;
  f->dim = D;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (!f->slot && !(f->slot = malloc(sizeof(int32_t) * be->n_nodes)))
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "implicit.precond = \"factor\": out of memory");
  long count;
  st = be->ops->implicit_slots(be, c, vstar, f->slot, &count);
  if (st != CQ_OK) return st;
  if ((st = grow(f, sim, count, D, width, rank)) != CQ_OK) return st;
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
  if ((st = cqi_terms_factor_blocks(sim, c, s, f->slot, f->blocks)) != CQ_OK) return st;
  if (rank) { /* the term's Hessian: its rows from the particles, its node weights the caller's linearisation */
    memset(f->rows, 0, sizeof(double) * count * near * D);
    if ((st = cqi_terms_factor_rows(sim, c, s, f->slot, f->node, count, f->rows, f->weight)) != CQ_OK) return st;
  }
  if ((st = projections(f, sim, c, vstar, scratch)) != CQ_OK) return st;
  for (long i = 0; i < count; i++)
    for (int o = 0; o < width; o++) {
      int32_t j = f->nbr[i * width + o];
      if (j < 0) continue;
      double m = o == center ? (double)vstar[f->node[i] * (D + 1) + D] / (double)c->damp : 0; /* implicit_inertia */
      k_block(D, f->proj + i * D * D, f->blocks + (i * width + o) * D * D, f->proj + (long)j * D * D, m);
    }
  if (rank) augment(f, D, vstar, (double)c->damp);
  sim->stats.factorizations++;
  cqi_block_matrix K = {count, f->bs, width, f->nbr, rank ? f->aug : f->blocks, rank};
  int cs = cqi_chol_factor(f->chol, &K, be->threads);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  sim->stats.factor_seconds += (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  if (cs == CQI_CHOL_NOMEM)
    return cqi_errorf(sim->err, CQ_ERR_NOMEM,
                      "implicit.precond = \"factor\": out of memory factorising the "
                      "Hessian of %ld unknowns (use implicit.precond = \"mass\")",
                      count * f->bs);
  if (cs == CQI_CHOL_ORDER)
    return cqi_errorf(sim->err, CQ_ERR_NOMEM,
                      "implicit.precond = \"factor\": METIS could not order the Hessian "
                      "of %ld nodes",
                      count);
  f->factored = *ok = cs == CQI_CHOL_OK; /* not positive definite: the caller preconditions by the masses */
  if (cs == CQI_CHOL_NOT_PD) sim->stats.factor_failures++;
  return CQ_OK;
}

int cqi_factor_solve(cqi_factor* f, const cq_real* r, cq_real* z) {
  int D = f->dim, bs = f->bs; /* bs = D + 1: the rank-one term's unknowns y, zero on the right */
  for (long k = 0; k < f->count; k++)
    for (int a = 0; a < bs; a++) f->rhs[k * bs + a] = a < D ? r[f->node[k] * (D + 1) + a] : 0;
  cqi_chol_solve(f->chol, f->rhs);
  for (long k = 0; k < f->count; k++)
    for (int a = 0; a < D; a++) z[f->node[k] * (D + 1) + a] = (cq_real)f->rhs[k * bs + a];
  return CQ_OK;
}

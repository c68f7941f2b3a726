/* The direct preconditioner of the implicit solve (implicit_factor.h). The backend numbers the nodes with mass and
 * scatters every particle's Newton-matrix blocks (implicit.h implicit_blocks: the Hessian of eq. 12 with each
 * material block projected to positive semi-definite); here they become one block matrix with the boundary
 * projections and the masses, factorised by the supernodal Cholesky of sparse_cholesky.c. Its pattern is every pair of
 * nodes with mass within two cells of each other (the stencils' reach), so it changes only when the set of nodes with
 * mass does, and the ordering and symbolic analysis are reused until then. Serial and in a fixed order: the same
 * factors, so the same solve, for any thread count. */
#include "implicit_factor.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "sparse_cholesky.h"

struct cqi_factor {
  int dim;
  long cap;       /* nodes the arrays below hold */
  long count;     /* nodes of the last update */
  int32_t* slot;  /* [n_nodes] node -> row block, -1 without mass */
  long* node;     /* [cap] row block -> grid node */
  int32_t* nbr;   /* [cap][5^D] the row block of each node within two cells, -1 when none */
  double* blocks; /* [cap][5^D][D][D] Newton-matrix blocks, then the matrix's */
  double* proj;   /* [cap][D][D] the boundary projection Pi of each node */
  double* rhs;    /* [count * D] solve vector */
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
  free(f);
}

static int grow(cqi_factor* f, cqi_sim* sim, long count, int D, int nb) {
  if (count <= f->cap) return CQ_OK;
  long cap = count + count / 4;
  free(f->node), free(f->nbr), free(f->blocks), free(f->proj), free(f->rhs);
  f->node = malloc(sizeof(long) * cap);
  f->nbr = malloc(sizeof(int32_t) * cap * nb);
  f->blocks = malloc(sizeof(double) * cap * nb * D * D);
  f->proj = malloc(sizeof(double) * cap * D * D);
  f->rhs = malloc(sizeof(double) * cap * D);
  f->cap = cap;
  if (!f->node || !f->nbr || !f->blocks || !f->proj || !f->rhs) {
    f->cap = 0;
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "implicit.precond = \"factor\": out of memory assembling the Hessian "
                      "of %ld nodes (use implicit.precond = \"mass\")", count);
  }
  return CQ_OK;
}

/* The pattern: nbr[k][o] = the row block of the node at offset o (axis a in [-2, 2], weighted 5^a, as
 * implicit_blocks numbers them) from node k, when it has mass. */
static void pattern(cqi_factor* f, const cq_substep* c, int D, int nb) {
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
        int d = code % 5 - 2, ia = at[a] + d;
        code /= 5;
        inside &= ia >= 0 && ia < c->res[a];
        other += d * c->stride[a];
      }
      f->nbr[k * nb + o] = inside ? f->slot[other] : -1;
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
  int D = be->dim, nb = D == 3 ? 125 : 25, center = (nb - 1) / 2;
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
  if ((st = grow(f, sim, count, D, nb)) != CQ_OK) return st;
  f->count = count;
  for (long k = 0; k < be->n_nodes; k++)
    if (f->slot[k] >= 0) f->node[f->slot[k]] = k;
  pattern(f, c, D, nb);
  memset(f->blocks, 0, sizeof(double) * count * nb * D * D);
  if ((st = be->ops->implicit_blocks(be, c, s, &sim->view->params, v, f->slot, f->nbr, f->blocks)) != CQ_OK)
    return st;
  if ((st = projections(f, sim, c, vstar, scratch)) != CQ_OK) return st;
  for (long i = 0; i < count; i++)
    for (int o = 0; o < nb; o++) {
      int32_t j = f->nbr[i * nb + o];
      if (j < 0) continue;
      double m = o == center ? (double)vstar[f->node[i] * (D + 1) + D] / (double)c->damp : 0; /* implicit_inertia */
      k_block(D, f->proj + i * D * D, f->blocks + (i * nb + o) * D * D, f->proj + (long)j * D * D, m);
    }
  sim->stats.factorizations++;
  cqi_block_matrix K = {count, D, nb, f->nbr, f->blocks};
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

/* The direct preconditioner of the implicit solve (implicit_factor.h). The backend numbers the nodes with mass and
 * scatters every particle's elastic Hessian blocks (implicit.h implicit_blocks); here they become one sparse matrix
 * with the boundary projections and the masses, which SuperLU (BSD licence; a maintained supernodal sparse direct
 * solver, faster and better tested than one written here) factorises in the nested-dissection order that METIS
 * (Apache licence) finds on the node graph: on the finger that fills 32 M entries where SuperLU's own minimum-degree
 * order fills 83 M. Serial and in a fixed order: the same factors, so the same solve, for any thread count. */
#include "implicit_factor.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <metis.h>
#include <slu_ddefs.h>

struct cqi_factor {
  int dim;
  long cap;         /* nodes the arrays below hold */
  long count;       /* nodes of the last update */
  int32_t* slot;    /* [n_nodes] node -> row block, -1 without mass */
  long* node;       /* [cap] row block -> grid node */
  int32_t* nbr;     /* [cap][5^D] the row block of each stencil neighbour, -1 when none */
  double* blocks;   /* [cap][5^D][D][D] elastic Hessian blocks */
  double* proj;     /* [cap][D][D] the boundary projection Pi of each node */
  double* rhs;      /* [count * D] solve vector */
  int factored;     /* L, U, perms valid */
  SuperMatrix L, U;
  int *perm_c, *perm_r;
};

int cqi_factor_supported(const cqi_backend* be) {
  return be->ops->host_memory && be->ops->implicit_slots && be->ops->implicit_blocks;
}

cqi_factor* cqi_factor_create(void) { return calloc(1, sizeof(cqi_factor)); }

static void drop_factors(cqi_factor* f) {
  if (!f->factored) return;
  Destroy_SuperNode_Matrix(&f->L);
  Destroy_CompCol_Matrix(&f->U);
  free(f->perm_c);
  free(f->perm_r);
  f->perm_c = f->perm_r = NULL;
  f->factored = 0;
}

void cqi_factor_free(cqi_factor* f) {
  if (!f) return;
  drop_factors(f);
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

/* K's block (i, j) = Pi_i B Pi_j^T (+ m_i I on the diagonal), into out[D][D]. */
static void k_block(int D, const double* Pi, const double* B, const double* Pj, double m, double* out) {
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
      out[a * D + b] = t + (a == b ? m : 0);
    }
}

/* The fill-reducing column order: METIS's nested dissection of the node graph (a node's D unknowns stay together),
 * perm_c[unknown] = its position. METIS's seed is fixed: the same order every time. */
static int order(cqi_factor* f, cqi_sim* sim, int nb) {
  int D = f->dim;
  idx_t nv = (idx_t)f->count, *xadj = malloc(sizeof(idx_t) * (nv + 1)), *adj = NULL, *perm = NULL, *iperm = NULL;
  long ne = 0;
  for (long k = 0; k < f->count * nb; k++) ne += f->nbr[k] >= 0 && f->nbr[k] != k / nb;
  adj = malloc(sizeof(idx_t) * (ne > 0 ? ne : 1));
  perm = malloc(sizeof(idx_t) * (nv > 0 ? nv : 1));
  iperm = malloc(sizeof(idx_t) * (nv > 0 ? nv : 1));
  int st = CQ_OK;
  if (!xadj || !adj || !perm || !iperm) {
    st = cqi_errorf(sim->err, CQ_ERR_NOMEM, "implicit.precond = \"factor\": out of memory ordering the Hessian");
  } else {
    long e = 0;
    for (long i = 0; i < f->count; i++) {
      xadj[i] = (idx_t)e;
      for (int o = 0; o < nb; o++) {
        int32_t j = f->nbr[i * nb + o];
        if (j >= 0 && j != i) adj[e++] = j;
      }
    }
    xadj[nv] = (idx_t)e;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    if (nv > 1 && METIS_NodeND(&nv, xadj, adj, NULL, options, perm, iperm) != METIS_OK)
      st = cqi_errorf(sim->err, CQ_ERR_NOMEM, "implicit.precond = \"factor\": METIS could not order the Hessian "
                      "of %ld nodes", f->count);
    else
      for (long i = 0; i < f->count; i++)
        for (int a = 0; a < D; a++) f->perm_c[i * D + a] = (int)((nv > 1 ? iperm[i] : 0) * D + a);
  }
  free(xadj), free(adj), free(perm), free(iperm);
  return st;
}

/* The sparse matrix K in compressed columns (K is symmetric: its rows are its columns) and its LU factors. */
static int factorise(cqi_factor* f, cqi_sim* sim, const cq_real* vstar, int nb, int* ok) {
  int D = sim->be->dim, center = (nb - 1) / 2;
  long n = f->count * D, nnz = 0;
  for (long k = 0; k < f->count * nb; k++) nnz += f->nbr[k] >= 0 ? D : 0;
  nnz *= D;
  if (n > INT32_MAX || nnz > INT32_MAX)
    return cqi_errorf(sim->err, CQ_ERR_ARG, "implicit.precond = \"factor\": the Hessian has %ld non-zeros, more than "
                      "SuperLU's 32-bit indices hold (use implicit.precond = \"mass\")", nnz);
  double* val = malloc(sizeof(double) * nnz);
  int* row = malloc(sizeof(int) * nnz);
  int* colptr = malloc(sizeof(int) * (n + 1));
  int* etree = malloc(sizeof(int) * n);
  f->perm_c = malloc(sizeof(int) * n);
  f->perm_r = malloc(sizeof(int) * n);
  if (!val || !row || !colptr || !etree || !f->perm_c || !f->perm_r) {
    free(val), free(row), free(colptr), free(etree), free(f->perm_c), free(f->perm_r);
    f->perm_c = f->perm_r = NULL;
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "implicit.precond = \"factor\": out of memory for the Hessian");
  }
  long e = 0;
  for (long i = 0; i < f->count; i++)
    for (int a = 0; a < D; a++) {
      colptr[i * D + a] = (int)e;
      for (int o = 0; o < nb; o++) {
        int32_t j = f->nbr[i * nb + o];
        if (j < 0) continue;
        double K[9];
        double m = o == center ? (double)vstar[f->node[i] * (D + 1) + D] : 0;
        k_block(D, f->proj + i * D * D, f->blocks + (i * nb + o) * D * D, f->proj + (long)j * D * D, m, K);
        for (int b = 0; b < D; b++) {
          val[e] = K[a * D + b];
          row[e++] = (int)(j * D + b);
        }
      }
    }
  colptr[n] = (int)e;
  SuperMatrix A, AC;
  dCreate_CompCol_Matrix(&A, (int)n, (int)n, (int)e, val, row, colptr, SLU_NC, SLU_D, SLU_GE);
  superlu_options_t opt;
  set_default_options(&opt);
  opt.ColPerm = MY_PERMC;
  opt.SymmetricMode = YES;
  opt.DiagPivotThresh = 1e-3; /* prefer the diagonal pivots (K is symmetric, usually definite) */
  int st = order(f, sim, nb);
  if (st != CQ_OK) {
    Destroy_SuperMatrix_Store(&A);
    free(val), free(row), free(colptr), free(etree), free(f->perm_c), free(f->perm_r);
    f->perm_c = f->perm_r = NULL;
    return st;
  }
  SuperLUStat_t stat;
  StatInit(&stat);
  sp_preorder(&opt, &A, f->perm_c, etree, &AC);
  GlobalLU_t glu;
  int info = 0;
  dgstrf(&opt, &AC, sp_ienv(2), sp_ienv(1), etree, NULL, 0, f->perm_c, f->perm_r, &f->L, &f->U, &glu, &stat, &info);
  StatFree(&stat);
  Destroy_CompCol_Permuted(&AC);
  Destroy_SuperMatrix_Store(&A);
  free(val), free(row), free(colptr), free(etree);
  if (info != 0) { /* info <= n: an exactly zero pivot (singular K); > n: out of memory */
    if (info <= n) {
      Destroy_SuperNode_Matrix(&f->L);
      Destroy_CompCol_Matrix(&f->U);
    }
    free(f->perm_c), free(f->perm_r);
    f->perm_c = f->perm_r = NULL;
    if (info > n)
      return cqi_errorf(sim->err, CQ_ERR_NOMEM, "implicit.precond = \"factor\": out of memory factorising the "
                        "Hessian of %ld unknowns (use implicit.precond = \"mass\")", n);
    *ok = 0;
    return CQ_OK;
  }
  f->factored = 1;
  *ok = 1;
  return CQ_OK;
}

int cqi_factor_update(cqi_factor* f, cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v,
                      const cq_real* vstar, cq_real* scratch, int* ok) {
  cqi_backend* be = sim->be;
  int D = be->dim, nb = D == 3 ? 125 : 25;
  drop_factors(f);
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
  memset(f->blocks, 0, sizeof(double) * count * nb * D * D);
  for (long k = 0; k < count * nb; k++) f->nbr[k] = -1;
  if ((st = be->ops->implicit_blocks(be, c, s, &sim->view->params, v, f->slot, f->nbr, f->blocks)) != CQ_OK)
    return st;
  if ((st = projections(f, sim, c, vstar, scratch)) != CQ_OK) return st;
  sim->stats.factorizations++;
  st = factorise(f, sim, vstar, nb, ok);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  sim->stats.factor_seconds += (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  return st;
}

int cqi_factor_solve(cqi_factor* f, const cq_real* r, cq_real* z) {
  int D = f->dim;
  long n = f->count * D;
  for (long k = 0; k < f->count; k++)
    for (int a = 0; a < D; a++) f->rhs[k * D + a] = r[f->node[k] * (D + 1) + a];
  SuperMatrix B;
  dCreate_Dense_Matrix(&B, (int)n, 1, f->rhs, (int)n, SLU_DN, SLU_D, SLU_GE);
  SuperLUStat_t stat;
  StatInit(&stat);
  int info = 0;
  dgstrs(NOTRANS, &f->L, &f->U, f->perm_c, f->perm_r, &B, &stat, &info);
  StatFree(&stat);
  Destroy_SuperMatrix_Store(&B);
  for (long k = 0; k < f->count; k++)
    for (int a = 0; a < D; a++) z[f->node[k] * (D + 1) + a] = (cq_real)f->rhs[k * D + a];
  return CQ_OK;
}

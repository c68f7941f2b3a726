/* Krylov solvers on grid vectors (D + 1 reals per node over the active region, in backend memory: backend.h's
 * grid_clear, grid_axpy and grid_dot): preconditioned conjugate gradients, and BiCGStab (van der Vorst 1992) for
 * non-symmetric operators. They know nothing of the problem: the operator and its preconditioner are callbacks. The
 * implicit integrator (integrator_implicit.c) solves its Newton directions and its adjoint with them. */
#ifndef CQ_KRYLOV_H
#define CQ_KRYLOV_H
#include "backend.h"

/* y = A x and z = M^-1 r (M definite), on grid vectors; ctx is the caller's. */
typedef struct cqi_linop {
  int (*apply)(void* ctx, const cq_real* x, cq_real* y);
  int (*precond)(void* ctx, const cq_real* r, cq_real* z);
  void* ctx;
} cqi_linop;

/* Work vectors (backend memory): r, z, p, q, hp for CG (which swaps p and q), and g, vt besides for BiCGStab. */
typedef struct cqi_krylov_ws {
  cq_real *r, *z, *p, *q, *hp, *g, *vt;
} cqi_krylov_ws;

enum { CQI_KRYLOV_CONVERGED = 0, CQI_KRYLOV_MAX_ITERATIONS = 1, CQI_KRYLOV_INDEFINITE = 2, CQI_KRYLOV_BREAKDOWN = 3 };

typedef struct cqi_krylov_info {
  int outcome;      /* CQI_KRYLOV_* */
  int iterations;   /* CG: completed iterations; BiCGStab: iterations begun (two products each) */
  int products;     /* applications of A */
  double rel;       /* ||r|| / ||b|| at the end */
  double curvature; /* CG, INDEFINITE: p.Ap of the direction that stopped it */
  double xAx;       /* CG: x.A x = sum_k alpha_k r_k.z_k (the directions are A-conjugate) */
  const char* why;  /* BiCGStab, BREAKDOWN: which product vanished */
} cqi_krylov_info;

/* y = a x + b z over the active region (y distinct from x and z). */
int cqi_grid_lincomb(cqi_backend* be, cq_real* y, cq_real a, const cq_real* x, cq_real b, const cq_real* z);

/* x = A^-1 (sign b) by preconditioned CG from x = 0, until ||r||_2 <= tol ||b||_2 (CONVERGED) or max_it iterations
 * (MAX_ITERATIONS); a direction with p.Ap <= 0 stops it (INDEFINITE), x then the iterate so far and w->z the last
 * preconditioned residual. Non-convergence is an outcome, not an error: the caller decides. */
int cqi_cg(cqi_backend* be, const cqi_linop* A, cq_real sign, const cq_real* b, cq_real* x, double tol, int max_it,
           cqi_krylov_ws* w, cqi_krylov_info* info);

/* x = A^-1 (sign b) by right-preconditioned BiCGStab from x = 0, until ||r||_2 <= tol ||b||_2 (CONVERGED), max_it
 * iterations (MAX_ITERATIONS) or a breakdown (BREAKDOWN, info->why). */
int cqi_bicgstab(cqi_backend* be, const cqi_linop* A, cq_real sign, const cq_real* b, cq_real* x, double tol,
                 int max_it, cqi_krylov_ws* w, cqi_krylov_info* info);
#endif

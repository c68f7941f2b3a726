/* Krylov solvers on grid vectors: preconditioned conjugate gradients and BiCGStab (krylov.h). */
#include <math.h>
#include "krylov.h"

#define TRY(call)                 \
  do {                            \
    int st_ = (call);             \
    if (st_ != CQ_OK) return st_; \
  } while (0)

int cqi_grid_lincomb(cqi_backend* be, cq_real* y, cq_real a, const cq_real* x, cq_real b, const cq_real* z) {
  TRY(be->ops->grid_clear(be, y));
  TRY(be->ops->grid_axpy(be, a, x, y));
  return be->ops->grid_axpy(be, b, z, y);
}

int cqi_cg(cqi_backend* be, const cqi_linop* A, cq_real sign, const cq_real* b, cq_real* x, double tol, int max_it,
           cqi_krylov_ws* w, cqi_krylov_info* info) {
  const cqi_krylov_info none = {CQI_KRYLOV_CONVERGED, 0, 0, 0, 0, 0, NULL};
  *info = none;
  double rr, rz, bb;
  TRY(be->ops->grid_clear(be, x));
  TRY(cqi_grid_lincomb(be, w->r, sign, b, 0, b));
  TRY(A->precond(A->ctx, w->r, w->z));
  TRY(cqi_grid_lincomb(be, w->p, 1, w->z, 0, w->z));
  TRY(be->ops->grid_dot(be, w->r, w->r, &rr));
  TRY(be->ops->grid_dot(be, w->r, w->z, &rz));
  bb = rr;
  int k = 0;
  for (; rr > tol * tol * bb; k++) {
    if (k == max_it) {
      info->outcome = CQI_KRYLOV_MAX_ITERATIONS;
      break;
    }
    double pAp;
    info->products++;
    TRY(A->apply(A->ctx, w->p, w->hp));
    TRY(be->ops->grid_dot(be, w->p, w->hp, &pAp));
    if (!(pAp > 0)) {
      info->outcome = CQI_KRYLOV_INDEFINITE;
      info->curvature = pAp;
      break;
    }
    double alpha = rz / pAp, rz1;
    info->xAx += alpha * rz;
    TRY(be->ops->grid_axpy(be, (cq_real)alpha, w->p, x));
    TRY(be->ops->grid_axpy(be, (cq_real)-alpha, w->hp, w->r));
    TRY(be->ops->grid_dot(be, w->r, w->r, &rr));
    TRY(A->precond(A->ctx, w->r, w->z));
    TRY(be->ops->grid_dot(be, w->r, w->z, &rz1));
    TRY(cqi_grid_lincomb(be, w->q, 1, w->z, (cq_real)(rz1 / rz), w->p)); /* p = z + beta p */
    cq_real* t = w->p;
    w->p = w->q;
    w->q = t;
    rz = rz1;
  }
  info->iterations = k;
  info->rel = bb > 0 ? sqrt(rr / bb) : 0;
  return CQ_OK;
}

/* r the residual, g the shadow residual r0, p, q = A p^, z = p^, vt = s^, hp = A s^. */
int cqi_bicgstab(cqi_backend* be, const cqi_linop* A, cq_real sign, const cq_real* b, cq_real* x, double tol,
                 int max_it, cqi_krylov_ws* w, cqi_krylov_info* info) {
  const cqi_krylov_info none = {CQI_KRYLOV_CONVERGED, 0, 0, 0, 0, 0, NULL};
  *info = none;
  double rho = 1, alpha = 1, omega = 1, rr, bb, rho1, rv, ts, tt;
  TRY(be->ops->grid_clear(be, x));
  TRY(cqi_grid_lincomb(be, w->r, sign, b, 0, b));
  TRY(cqi_grid_lincomb(be, w->g, 1, w->r, 0, w->r));
  TRY(be->ops->grid_clear(be, w->p));
  TRY(be->ops->grid_clear(be, w->q));
  TRY(be->ops->grid_dot(be, w->r, w->r, &rr));
  bb = rr;
  for (int it = 0; rr > tol * tol * bb; it++) {
    if (it == max_it) {
      info->outcome = CQI_KRYLOV_MAX_ITERATIONS;
      break;
    }
    TRY(be->ops->grid_dot(be, w->g, w->r, &rho1));
    if (!(rho1 != 0) || !(omega != 0)) {
      info->outcome = CQI_KRYLOV_BREAKDOWN;
      info->why = "a breakdown (r0 . r = 0)";
      break;
    }
    info->iterations++;
    double beta = (rho1 / rho) * (alpha / omega);
    TRY(be->ops->grid_axpy(be, (cq_real)-omega, w->q, w->p)); /* p = r + beta (p - omega v) */
    TRY(cqi_grid_lincomb(be, w->z, 1, w->r, (cq_real)beta, w->p));
    TRY(cqi_grid_lincomb(be, w->p, 1, w->z, 0, w->z));
    TRY(A->precond(A->ctx, w->p, w->z));
    info->products++;
    TRY(A->apply(A->ctx, w->z, w->q));
    TRY(be->ops->grid_dot(be, w->g, w->q, &rv));
    if (!(rv != 0)) {
      info->outcome = CQI_KRYLOV_BREAKDOWN;
      info->why = "a breakdown (r0 . A p = 0)";
      break;
    }
    alpha = rho1 / rv;
    TRY(be->ops->grid_axpy(be, (cq_real)alpha, w->z, x));
    TRY(be->ops->grid_axpy(be, (cq_real)-alpha, w->q, w->r)); /* s */
    TRY(be->ops->grid_dot(be, w->r, w->r, &rr));
    if (rr <= tol * tol * bb) break;
    TRY(A->precond(A->ctx, w->r, w->vt));
    info->products++;
    TRY(A->apply(A->ctx, w->vt, w->hp));
    TRY(be->ops->grid_dot(be, w->hp, w->r, &ts));
    TRY(be->ops->grid_dot(be, w->hp, w->hp, &tt));
    omega = tt > 0 ? ts / tt : 0;
    TRY(be->ops->grid_axpy(be, (cq_real)omega, w->vt, x));
    TRY(be->ops->grid_axpy(be, (cq_real)-omega, w->hp, w->r));
    TRY(be->ops->grid_dot(be, w->r, w->r, &rr));
    rho = rho1;
  }
  info->rel = bb > 0 ? sqrt(rr / bb) : 0;
  return CQ_OK;
}

/* Fiber-reinforced, transversely isotropic (the standard model of fiber-reinforced pneumatic actuators): a NeoHookean
 * matrix (material_neohookean.h, E and nu) plus fibers along the particle's reference direction a = fiber_dir /
 * |fiber_dir| that resist stretch only,
 *   Psi = Psi_NH(F) + (fiber_E / 8) <I4 - 1>^2,  I4 = |F a|^2 (the fibers' squared stretch), <x> = max(x, 0),
 *   P = P_NH + (fiber_E / 2) <I4 - 1> (F a) a^T,
 * so a stretch eps along the fibers adds the stress fiber_E eps (small strains) to the matrix's, and a fiber in
 * compression carries nothing (a thread buckles). The direction is normalised here, so any
 * non-zero vector works and its gradient is the tangential part. Forward, adjoint (dL/dE, dL/dnu, dL/dfiber_E,
 * dL/dfiber_dir), wave modulus, checks. */

/* Its parameters (fields.h: P declares one, U names each that the robot builder takes for it, 1 = required). */
#ifndef CQ_MAT_PARAMS_fiber_reinforced
#define CQ_MAT_PARAMS_fiber_reinforced(P, U)                                                                  \
  P(fiber_E, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, 0, INFINITY, CQ_CLOSED,                            \
    "fibers' small-strain modulus along fiber_dir, tension only (stress units): fiber_reinforced")            \
  P(fiber_dir, cq_real, CQ_TYPE_REAL, CQ_SHAPE_VEC, 1, 0, -INFINITY, INFINITY, CQ_CLOSED,                     \
    "fibers' direction in the reference configuration (normalised by the model; non-zero): fiber_reinforced") \
  U(E, 0) U(nu, 0) U(fiber_E, 1) U(fiber_dir, 1)
#endif

#ifdef D /* its code, per dimension (material.h) */

/* The unit direction a, |fiber_dir|, w = F a and e = I4 - 1. */
CQ_HD cq_real CQ_D(fiber_load)(const cq_params* m, int p, const cq_real F[D][D], cq_real a[D], cq_real w[D],
                               cq_real* len) {
  cq_real l2 = 0;
  for (int i = 0; i < D; i++) {
    a[i] = m->fiber_dir[(long)i * m->n + p];
    l2 += a[i] * a[i];
  }
  *len = cq_sqrt(l2);
  cq_real e = -1;
  for (int i = 0; i < D; i++) a[i] /= *len;
  for (int i = 0; i < D; i++) {
    w[i] = 0;
    for (int j = 0; j < D; j++) w[i] += F[i][j] * a[j];
    e += w[i] * w[i];
  }
  return e;
}

CQ_HD void CQ_D(mat_fiber_reinforced_P)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D]) {
  CQ_D(mat_neohookean_P)(m, p, F, P);
  cq_real a[D], w[D], len, e = CQ_D(fiber_load)(m, p, F, a, w, &len);
  if (!(e > 0)) return;
  cq_real k = m->fiber_E[p] / 2 * e;
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) P[i][j] += k * w[i] * a[j];
}

/* With h = gP a and q = w . h: L = (fiber_E / 2) e q; dL/dw = (fiber_E / 2)(2 q w + e h) (w = F a), dL/dF = dL/dw a^T,
 * dL/da = (fiber_E / 2) e gP^T w + F^T dL/dw, then through a = d / |d|: dL/dd = (dL/da - a (a . dL/da)) / |d|. */
CQ_HD void CQ_D(mat_fiber_reinforced_P_vjp)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                            cq_real gF[D][D], cq_pgrad* g) {
  CQ_D(mat_neohookean_P_vjp)(m, p, F, gP, gF, g);
  cq_real a[D], w[D], len, e = CQ_D(fiber_load)(m, p, F, a, w, &len);
  if (!(e > 0)) return;
  cq_real kE = m->fiber_E[p] / 2, h[D], q = 0;
  for (int i = 0; i < D; i++) {
    h[i] = 0;
    for (int j = 0; j < D; j++) h[i] += gP[i][j] * a[j];
    q += w[i] * h[i];
  }
  g->fiber_E += e * q / 2;
  cq_real gw[D], ga[D], aga = 0;
  for (int i = 0; i < D; i++) gw[i] = kE * (2 * q * w[i] + e * h[i]);
  for (int j = 0; j < D; j++) {
    ga[j] = 0;
    for (int i = 0; i < D; i++) {
      gF[i][j] += gw[i] * a[j];
      ga[j] += kE * e * gP[i][j] * w[i] + F[i][j] * gw[i];
    }
    aga += a[j] * ga[j];
  }
  for (int j = 0; j < D; j++) g->fiber_dir[j] += (ga[j] - a[j] * aga) / len;
}

/* The matrix's P-wave modulus plus fiber_E (the fibers' stiffness along a, once stretched). */
CQ_HD cq_real CQ_D(mat_fiber_reinforced_modulus)(const cq_params* m, int p) {
  return CQ_D(mat_neohookean_modulus)(m, p) + m->fiber_E[p];
}

CQ_HD void CQ_D(mat_fiber_reinforced_modulus_vjp)(const cq_params* m, int p, cq_real gM, cq_pgrad* g) {
  CQ_D(mat_neohookean_modulus_vjp)(m, p, gM, g);
  g->fiber_E += gM;
}

static inline int CQ_D(mat_fiber_reinforced_check)(const cq_params* m, int p, char* why, int len) {
  cq_real l2 = 0;
  for (int i = 0; i < D; i++) l2 += m->fiber_dir[(long)i * m->n + p] * m->fiber_dir[(long)i * m->n + p];
  if (!(l2 > 0)) {
    snprintf(why, len, "fiber_dir must be a non-zero vector (the fibers' direction; got a zero vector)");
    return 0;
  }
  return 1;
}
#endif

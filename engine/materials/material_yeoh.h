/* Yeoh (seed 003 Table 1): Psi = C10 t + C20 t^2 + C30 t^3 + (K/2)(J - 1)^2 with t = I1bar - 3, the isochoric first
 * invariant of the 3D (in 2D: plane-strain) deformation gradient (isochoric.h); the volumetric term is the particle's
 * bulk term (material.h). Forward, adjoint (dL/dC10, dL/dC20, dL/dC30), wave modulus, checks. Per dimension. */

/* Its parameters (fields.h: P declares one, U names each that the robot builder takes for it, 1 = required). */
#ifndef CQ_MAT_PARAMS_yeoh
#define CQ_MAT_PARAMS_yeoh(P, U) /* c10: mooney_rivlin's */                            \
  P(c20, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, -INFINITY, INFINITY, CQ_CLOSED, \
    "coefficient of (I1bar - 3)^2: yeoh")                                              \
  P(c30, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, -INFINITY, INFINITY, CQ_CLOSED, \
    "coefficient of (I1bar - 3)^3: yeoh")                                              \
  U(c10, 1) U(c20, 0) U(c30, 0) U(bulk, 1)
#endif

#ifdef D /* its code, per dimension (material.h) */

/* dPsi/dI1bar and its derivative d2Psi/dI1bar2. */
CQ_HD cq_real CQ_D(yeoh_psi1)(const cq_params* m, int p, cq_real t, cq_real* dpsi1) {
  *dpsi1 = 2 * m->c20[p] + 6 * m->c30[p] * t;
  return m->c10[p] + 2 * m->c20[p] * t + 3 * m->c30[p] * t * t;
}

CQ_HD void CQ_D(mat_yeoh_P)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D]) {
  cq_real P3[3][3] = {{0}}, dpsi1;
  cqi_iso q;
  CQ_D(iso_load)(F, &q, NULL, NULL);
  cqi_iso_P(&q, CQ_D(yeoh_psi1)(m, p, q.I1bar - 3, &dpsi1), 0, P3);
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) P[i][j] = 0;
  CQ_D(add_block)(P3, P);
}

/* P = psi1(I1bar) dI1bar/dF: the adjoint at fixed psi1, then psi1's own dependence on I1bar and the parameters. */
CQ_HD void CQ_D(mat_yeoh_P_vjp)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                cq_real gF[D][D], cq_pgrad* g) {
  cq_real gP3[3][3], gF3[3][3] = {{0}}, g_psi1, g_psi2, dpsi1;
  cqi_iso q;
  CQ_D(iso_load)(F, &q, gP, gP3);
  cq_real t = q.I1bar - 3, psi1 = CQ_D(yeoh_psi1)(m, p, t, &dpsi1);
  cqi_iso_P_vjp(&q, psi1, 0, gP3, gF3, &g_psi1, &g_psi2);
  cqi_iso_P(&q, g_psi1 * dpsi1, 0, gF3); /* gF += (dL/dpsi1) (dpsi1/dI1bar) dI1bar/dF */
  CQ_D(add_block)(gF3, gF);
  g->c10 += g_psi1;
  g->c20 += g_psi1 * 2 * t;
  g->c30 += g_psi1 * 3 * t * t;
}

/* Small-strain shear modulus G = 2 C10; P-wave modulus 4G/3 (the bulk term adds K). At rest: the stiffening of
 * C20, C30 > 0 at large strain is not in the stable time step (docs/api.md). */
CQ_HD cq_real CQ_D(mat_yeoh_modulus)(const cq_params* m, int p) { return (cq_real)(8.0 / 3.0) * m->c10[p]; }

/* Its gradient: g->c10 += gM dM/dc10. */
CQ_HD void CQ_D(mat_yeoh_modulus_vjp)(const cq_params* m, int p, cq_real gM, cq_pgrad* g) {
  g->c10 += (cq_real)(8.0 / 3.0) * gM;
}

static inline int CQ_D(mat_yeoh_check)(const cq_params* m, int p, char* why, int len) {
  if (!(m->c10[p] > 0)) {
    snprintf(why, len, "c10 must be > 0 (got %g)", (double)m->c10[p]);
    return 0;
  }
  return cqi_bulk_check(m, p, why, len);
}
#endif

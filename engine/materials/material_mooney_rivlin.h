/* Mooney-Rivlin (seed 003 Table 1, with the usual names: the seed's table swaps C10 and C01):
 * Psi = C10 (I1bar - 3) + C01 (I2bar - 3) + (K/2)(J - 1)^2, isochoric invariants of the 3D (in 2D: plane-strain)
 * deformation gradient (isochoric.h); the volumetric term is the particle's bulk term (material.h, K = 2 / D1).
 * C01 = 0 is the isochoric NeoHookean model with shear modulus 2 C10. Forward, adjoint (dL/dC10, dL/dC01), wave
 * modulus, checks. Per dimension. */

/* Its parameters (fields.h: P declares one, U names each that the robot builder takes for it, 1 = required). */
#ifndef CQ_MAT_PARAMS_mooney_rivlin
#define CQ_MAT_PARAMS_mooney_rivlin(P, U)                                      \
  P(c10, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, 0, INFINITY, CQ_CLOSED, \
    "coefficient of (I1bar - 3): mooney_rivlin, yeoh")                         \
  P(c01, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, 0, INFINITY, CQ_CLOSED, \
    "coefficient of (I2bar - 3): mooney_rivlin")                               \
  U(c10, 1) U(c01, 1) U(bulk, 1)
#endif

#ifdef D /* its code, per dimension (material.h) */

CQ_HD void CQ_D(mat_mooney_rivlin_P)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D]) {
  cq_real P3[3][3] = {{0}};
  cqi_iso q;
  CQ_D(iso_load)(F, &q, NULL, NULL);
  cqi_iso_P(&q, m->c10[p], m->c01[p], P3);
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) P[i][j] = 0;
  CQ_D(add_block)(P3, P);
}

CQ_HD void CQ_D(mat_mooney_rivlin_P_vjp)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                         cq_real gF[D][D], cq_pgrad* g) {
  cq_real gP3[3][3], gF3[3][3] = {{0}}, g_psi1, g_psi2;
  cqi_iso q;
  CQ_D(iso_load)(F, &q, gP, gP3);
  cqi_iso_P_vjp(&q, m->c10[p], m->c01[p], gP3, gF3, &g_psi1, &g_psi2);
  CQ_D(add_block)(gF3, gF);
  g->c10 += g_psi1;
  g->c01 += g_psi2;
}

/* Small-strain shear modulus G = 2 (C10 + C01); P-wave modulus 4G/3 (the bulk term adds K). */
CQ_HD cq_real CQ_D(mat_mooney_rivlin_modulus)(const cq_params* m, int p) {
  return (cq_real)(8.0 / 3.0) * (m->c10[p] + m->c01[p]);
}

/* Its gradient: g->c10, g->c01 += gM dM/d(c10, c01). */
CQ_HD void CQ_D(mat_mooney_rivlin_modulus_vjp)(const cq_params* m, int p, cq_real gM, cq_pgrad* g) {
  g->c10 += (cq_real)(8.0 / 3.0) * gM;
  g->c01 += (cq_real)(8.0 / 3.0) * gM;
}

static inline int CQ_D(mat_mooney_rivlin_check)(const cq_params* m, int p, char* why, int len) {
  if (!(m->c10[p] >= 0 && m->c01[p] >= 0 && m->c10[p] + m->c01[p] > 0)) {
    snprintf(why, len, "c10 and c01 must be >= 0 with c10 + c01 > 0 (got c10 = %g, c01 = %g)", (double)m->c10[p],
             (double)m->c01[p]);
    return 0;
  }
  return cqi_bulk_check(m, p, why, len); /* K = 2 / D1 */
}
#endif

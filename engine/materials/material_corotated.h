/* Fixed corotated elasticity (seed 000 eq. 12): P = 2 mu (F - R) + lambda (J - 1) J F^{-T}, mu and lambda from the
 * particle's E and nu (lame.h). Forward, adjoint (with dL/dE, dL/dnu), wave modulus, checks. Per dimension. */

/* Its parameters (fields.h: P declares one, U names each that the robot builder takes for it, 1 = required). */
#ifndef CQ_MAT_PARAMS_corotated
#define CQ_MAT_PARAMS_corotated(P, U) U(E, 0) U(nu, 0)
#endif

#ifdef D /* its code, per dimension (material.h) */

CQ_HD void CQ_D(mat_corotated_P)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D]) {
  cqi_lame l = cqi_lame_from(m->E[p], m->nu[p]);
  cq_real cof[D][D], R[D][D], S[D][D];
  CQ_D(cofactor)(F, cof);
  cq_real J = CQ_D(det)(F);
  CQ_D(polar)(F, R, S);
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) P[i][j] = 2 * l.mu * (F[i][j] - R[i][j]) + l.la * (J - 1) * cof[i][j];
}

/* Uses d cof(F) = J (F^{-T}:dF) F^{-T} - J F^{-T} dF^T F^{-T} and the polar decomposition's adjoint. */
CQ_HD void CQ_D(mat_corotated_P_vjp)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                     cq_real gF[D][D], cq_pgrad* g) {
  cqi_lame l = cqi_lame_from(m->E[p], m->nu[p]);
  cq_real A[D][D], AgA[D][D], gA, R[D][D], S[D][D], gR[D][D];
  cq_real J = CQ_D(inv_t_adj_parts)(F, gP, A, AgA, &gA);
  CQ_D(polar)(F, R, S);
  /* 2 mu (F - R) */
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) {
      gF[i][j] += 2 * l.mu * gP[i][j];
      gR[i][j] = -2 * l.mu * gP[i][j];
    }
  CQ_D(polar_vjp)(R, S, gR, gF);
  /* lambda (J - 1) cof(F), cof = J A */
  cq_real gcof = J * gA; /* gP : cof */
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) gF[i][j] += l.la * (gcof * J * A[i][j] + (J - 1) * (J * gA * A[i][j] - J * AgA[i][j]));
  cq_real FmR = 0;
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) FmR += gP[i][j] * (F[i][j] - R[i][j]);
  cq_real g_mu = 2 * FmR, g_la = (J - 1) * gcof;
  cqi_lame_vjp(&l, g_mu, g_la, &g->E, &g->nu);
}

CQ_HD cq_real CQ_D(mat_corotated_modulus)(const cq_params* m, int p) { return cqi_lame_modulus(m->E[p], m->nu[p]); }
/* Its gradient: g->E, g->nu += gM dM/d(E, nu). */
CQ_HD void CQ_D(mat_corotated_modulus_vjp)(const cq_params* m, int p, cq_real gM, cq_pgrad* g) {
  cqi_lame l = cqi_lame_from(m->E[p], m->nu[p]);
  cqi_lame_vjp(&l, 2 * gM, gM, &g->E, &g->nu);
}

/* E and nu are range-checked by their fields.h rows; nothing else to check. */
static inline int CQ_D(mat_corotated_check)(const cq_params* m, int p, char* why, int len) { return 1; }
#endif

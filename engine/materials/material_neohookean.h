/* Compressible NeoHookean elasticity (seed 000 eq. 13): P = mu (F - F^{-T}) + lambda log(J) F^{-T}, mu and lambda
 * from the particle's E and nu (lame.h). Forward, adjoint (with dL/dE, dL/dnu), wave modulus, checks. Per dimension. */

/* Its parameters (fields.h: P declares one, U names each that the robot builder takes for it, 1 = required). */
#ifndef CQ_MAT_PARAMS_neohookean
#define CQ_MAT_PARAMS_neohookean(P, U) U(E, 0) U(nu, 0)
#endif

#ifdef D /* its code, per dimension (material.h) */

CQ_HD void CQ_D(mat_neohookean_P)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D]) {
  cqi_lame l = cqi_lame_from(m->E[p], m->nu[p]);
  cq_real cof[D][D];
  CQ_D(cofactor)(F, cof);
  cq_real J = CQ_D(det)(F);
  cq_real logJ = cq_log(J), invJ = 1 / J;
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) P[i][j] = l.mu * (F[i][j] - cof[i][j] * invJ) + l.la * logJ * cof[i][j] * invJ;
}

/* Uses d(F^{-T}) = -F^{-T} dF^T F^{-T} and d log J = F^{-T} : dF. */
CQ_HD void CQ_D(mat_neohookean_P_vjp)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                      cq_real gF[D][D], cq_pgrad* g) {
  cqi_lame l = cqi_lame_from(m->E[p], m->nu[p]);
  cq_real A[D][D], AgA[D][D], gA;
  cq_real J = CQ_D(inv_t_adj_parts)(F, gP, A, AgA, &gA);
  cq_real logJ = cq_log(J);
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) gF[i][j] += l.mu * (gP[i][j] + AgA[i][j]) + l.la * (gA * A[i][j] - logJ * AgA[i][j]);
  cq_real g_mu = CQ_D(ddot)(gP, F) - gA, g_la = logJ * gA;
  cqi_lame_vjp(&l, g_mu, g_la, &g->E, &g->nu);
}

CQ_HD cq_real CQ_D(mat_neohookean_modulus)(const cq_params* m, int p) { return cqi_lame_modulus(m->E[p], m->nu[p]); }
/* Its gradient: g->E, g->nu += gM dM/d(E, nu). */
CQ_HD void CQ_D(mat_neohookean_modulus_vjp)(const cq_params* m, int p, cq_real gM, cq_pgrad* g) {
  cqi_lame l = cqi_lame_from(m->E[p], m->nu[p]);
  cqi_lame_vjp(&l, 2 * gM, gM, &g->E, &g->nu);
}

/* E and nu are range-checked by their fields.h rows; nothing else to check. */
static inline int CQ_D(mat_neohookean_check)(const cq_params* m, int p, char* why, int len) { return 1; }
#endif

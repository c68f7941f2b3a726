/* The incompressibility term of seed 000 eq. 14, added to any material when the particle's inc_p > 0:
 * energy k |J - 1|^p with k = E / (3 (2 - 2 nu)), stress P_inc = k p |J-1|^(p-1) sgn(J-1) J F^{-T} (equals eq. 14 for
 * even p). Forward, adjoint (with dL/dE, dL/dnu) and its share of the wave modulus. Per dimension. */

/* Incompressibility coefficient of seed 000 eq. (14): k = E / (3 (2 - 2 nu)). */
CQ_HD cq_real CQ_D(incompressible_coeff)(cq_real E, cq_real nu) { return E / (3 * (2 - 2 * nu)); }

/* P += P_inc. */
CQ_HD void CQ_D(incompressible_P)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D]) {
  cq_real inc_p = m->inc_p[p], cof[D][D];
  CQ_D(cofactor)(F, cof);
  cq_real J = CQ_D(det)(F);
  cq_real d = J - 1, ad = cq_fabs(d);
  cq_real phi =
      ad > 0 ? CQ_D(incompressible_coeff)(m->E[p], m->nu[p]) * inc_p * cq_pow(ad, inc_p - 1) * (d > 0 ? 1 : -1) : 0;
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) P[i][j] += phi * cof[i][j];
}

/* gF += gP : dP_inc/dF, g->E and g->nu += their share (phi is linear in k). */
CQ_HD void CQ_D(incompressible_P_vjp)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                      cq_real gF[D][D], cq_pgrad* g) {
  cq_real A[D][D], AgA[D][D], gA;
  cq_real J = CQ_D(inv_t_adj_parts)(F, gP, A, AgA, &gA);
  cq_real E = m->E[p], nu = m->nu[p], inc_p = m->inc_p[p];
  cq_real d = J - 1, ad = cq_fabs(d);
  if (!(ad > 0)) return;
  cq_real k = CQ_D(incompressible_coeff)(E, nu), sg = d > 0 ? (cq_real)1 : (cq_real)-1;
  cq_real phi = k * inc_p * cq_pow(ad, inc_p - 1) * sg;
  cq_real dphi = k * inc_p * (inc_p - 1) * cq_pow(ad, inc_p - 2); /* d phi / dJ */
  cq_real gcof = J * gA;                                          /* gP : cof */
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) gF[i][j] += gcof * dphi * J * A[i][j] + phi * (J * gA * A[i][j] - J * AgA[i][j]);
  cq_real gk = gcof * phi / k;
  g->E += gk * k / E;
  g->nu += gk * k / (1 - nu); /* k = E / (6 (1 - nu)) */
}

/* The term's stiffness for the stable time step: 2 k for p = 2 (its second derivative at J = 1), else 0 (flat at
 * J = 1 for p > 2). */
CQ_HD cq_real CQ_D(incompressible_modulus)(const cq_params* m, int p) {
  return m->inc_p[p] == 2 ? 2 * CQ_D(incompressible_coeff)(m->E[p], m->nu[p]) : 0;
}

/* Constitutive models (seed 000 eqs. 12-14): first Piola-Kirchhoff stress P(F) and its adjoint, per particle.
 * Included once per dimension by kernels.h (no include guard). */

/* P(F) for the particle's model, plus the optional incompressibility term
 * P_inc = k p |J-1|^(p-1) sgn(J-1) J F^{-T} (energy k |J-1|^p; equals eq. 14 for even p). inc_p = 0 disables it. */
CQ_HD void CQ_D(material_P)(int model, cq_real E, cq_real nu, cq_real inc_p, const cq_real F[D][D], cq_real P[D][D]) {
  cqi_lame l = cqi_lame_from(E, nu);
  cq_real cof[D][D];
  CQ_D(cofactor)(F, cof);
  cq_real J = CQ_D(det)(F);
  if (model == CQ_COROTATED) { /* eq. 12: 2 mu (F - R) + lambda (J - 1) J F^{-T} */
    cq_real R[D][D], S[D][D];
    CQ_D(polar)(F, R, S);
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) P[i][j] = 2 * l.mu * (F[i][j] - R[i][j]) + l.la * (J - 1) * cof[i][j];
  } else { /* eq. 13: mu (F - F^{-T}) + lambda log(J) F^{-T} */
    cq_real logJ = cq_log(J), invJ = 1 / J;
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) P[i][j] = l.mu * (F[i][j] - cof[i][j] * invJ) + l.la * logJ * cof[i][j] * invJ;
  }
  if (inc_p > 0) {
    cq_real d = J - 1, ad = cq_fabs(d);
    cq_real phi = ad > 0 ? cqi_inc_coeff(E, nu) * inc_p * cq_pow(ad, inc_p - 1) * (d > 0 ? 1 : -1) : 0;
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) P[i][j] += phi * cof[i][j];
  }
}

/* Vector-Jacobian product of material_P: given gP = dL/dP, accumulate gF += dL/dF, *gE += dL/dE, *gnu += dL/dnu.
 * Uses d(F^{-T}) = -F^{-T} dF^T F^{-T} and d cof(F) = J (F^{-T}:dF) F^{-T} - J F^{-T} dF^T F^{-T}. */
CQ_HD void CQ_D(material_P_vjp)(int model, cq_real E, cq_real nu, cq_real inc_p, const cq_real F[D][D],
                                const cq_real gP[D][D], cq_real gF[D][D], cq_real* gE, cq_real* gnu) {
  cqi_lame l = cqi_lame_from(E, nu);
  cq_real A[D][D], AgA[D][D], tmp[D][D];
  cq_real J = CQ_D(inv_t)(F, A); /* A = F^{-T} */
  CQ_D(mmt)(A, gP, tmp);         /* A gP^T */
  CQ_D(mm)(tmp, A, AgA);         /* A gP^T A */
  cq_real gA = CQ_D(ddot)(gP, A);
  cq_real g_mu, g_la;
  if (model == CQ_COROTATED) {
    cq_real R[D][D], S[D][D], gR[D][D];
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
      for (int j = 0; j < D; j++)
        gF[i][j] += l.la * (gcof * J * A[i][j] + (J - 1) * (J * gA * A[i][j] - J * AgA[i][j]));
    cq_real FmR = 0;
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) FmR += gP[i][j] * (F[i][j] - R[i][j]);
    g_mu = 2 * FmR;
    g_la = (J - 1) * gcof;
  } else {
    cq_real logJ = cq_log(J);
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++)
        gF[i][j] += l.mu * (gP[i][j] + AgA[i][j]) + l.la * (gA * A[i][j] - logJ * AgA[i][j]);
    g_mu = CQ_D(ddot)(gP, F) - gA;
    g_la = logJ * gA;
  }
  cq_real gEl = g_mu * l.dmu_dE + g_la * l.dla_dE, gnul = g_mu * l.dmu_dnu + g_la * l.dla_dnu;
  if (inc_p > 0) {
    cq_real d = J - 1, ad = cq_fabs(d);
    if (ad > 0) {
      cq_real k = cqi_inc_coeff(E, nu), sg = d > 0 ? (cq_real)1 : (cq_real)-1;
      cq_real phi = k * inc_p * cq_pow(ad, inc_p - 1) * sg;
      cq_real dphi = k * inc_p * (inc_p - 1) * cq_pow(ad, inc_p - 2); /* d phi / dJ */
      cq_real gcof = J * gA;                                            /* gP : cof */
      for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) gF[i][j] += gcof * dphi * J * A[i][j] + phi * (J * gA * A[i][j] - J * AgA[i][j]);
      cq_real gk = gcof * phi / k; /* phi is linear in k */
      gEl += gk * k / E;
      gnul += gk * k / (1 - nu); /* k = E / (6 (1 - nu)) */
    }
  }
  *gE += gEl;
  *gnu += gnul;
}

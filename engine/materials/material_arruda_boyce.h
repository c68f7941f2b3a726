/* Arruda-Boyce (the eight-chain model, in the five-term series of Abaqus and SOFA):
 *   Psi = mu sum_{i=1..5} C_i / lambda_m^(2i-2) (I1bar^i - 3^i) + (K/2)(J - 1)^2,
 *   C = (1/2, 1/20, 11/1050, 19/7000, 519/673750),
 * I1bar the isochoric first invariant of the 3D (in 2D: plane-strain) deformation gradient (isochoric.h), lambda_m the
 * chains' locking stretch (the stress stiffens sharply as the stretch nears it), the volumetric term the particle's
 * bulk term (material.h). Small-strain shear modulus mu0 = mu (1 + 3/(5 lambda_m^2) + 99/(175 lambda_m^4) +
 * 513/(875 lambda_m^6) + 42039/(67375 lambda_m^8)); lambda_m -> infinity is the isochoric NeoHookean model with shear
 * modulus mu. Forward, adjoint (dL/dmu, dL/dlambda_m), wave modulus, checks. */

/* Its parameters (fields.h: P declares one, U names each that the robot builder takes for it, 1 = required). */
#ifndef CQ_MAT_PARAMS_arruda_boyce
#define CQ_MAT_PARAMS_arruda_boyce(P, U)                                                             \
  P(mu, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, 0, INFINITY, CQ_CLOSED,                        \
    "shear parameter mu of the Arruda-Boyce series (stress units; > 0 for arruda_boyce)")            \
  P(lambda_m, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, 0, INFINITY, CQ_CLOSED,                  \
    "locking stretch lambda_m of the Arruda-Boyce chains (> 0 for arruda_boyce; typically 3 to 10)") \
  U(mu, 1) U(lambda_m, 1) U(bulk, 1)
#endif

#ifdef D /* its code, per dimension (material.h) */

#ifndef CQI_AB_TERMS
#define CQI_AB_TERMS 5
/* i C_i of the series, i = 1..5 */
#define CQI_AB_ICI(i) \
  ((i) == 1 ? 0.5 : (i) == 2 ? 0.1 : (i) == 3 ? 33.0 / 1050 : (i) == 4 ? 76.0 / 7000 : 2595.0 / 673750)
#endif

/* dPsi/dI1bar = mu sum i C_i I^(i-1) s^(i-1) with s = 1 / lambda_m^2, and its derivatives by I1bar (*d_I), by mu
 * (*d_mu) and by lambda_m (*d_lm). */
CQ_HD cq_real CQ_D(ab_psi1)(const cq_params* m, int p, cq_real I, cq_real* d_I, cq_real* d_mu, cq_real* d_lm) {
  cq_real mu = m->mu[p], lm = m->lambda_m[p], s = 1 / (lm * lm);
  cq_real sum = 0, dsum_I = 0, dsum_s = 0, Ik = 1, sk = 1; /* Ik = I^(i-1), sk = s^(i-1) */
  cq_real Ikm1 = 0, skm1 = 0;                              /* I^(i-2), s^(i-2) */
  for (int i = 1; i <= CQI_AB_TERMS; i++) {
    cq_real c = (cq_real)CQI_AB_ICI(i);
    sum += c * Ik * sk;
    dsum_I += c * (i - 1) * Ikm1 * sk;
    dsum_s += c * (i - 1) * Ik * skm1;
    Ikm1 = Ik, skm1 = sk;
    Ik *= I, sk *= s;
  }
  *d_I = mu * dsum_I;
  *d_mu = sum;
  *d_lm = mu * dsum_s * (-2 * s / lm); /* ds/dlambda_m = -2 / lambda_m^3 */
  return mu * sum;
}

CQ_HD void CQ_D(mat_arruda_boyce_P)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D]) {
  cq_real P3[3][3] = {{0}}, dI, dmu, dlm;
  cqi_iso q;
  CQ_D(iso_load)(F, &q, NULL, NULL);
  cqi_iso_P(&q, CQ_D(ab_psi1)(m, p, q.I1bar, &dI, &dmu, &dlm), 0, P3);
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) P[i][j] = 0;
  CQ_D(add_block)(P3, P);
}

/* P = psi1(I1bar) dI1bar/dF: the adjoint at fixed psi1, then psi1's own dependence on I1bar and the parameters. */
CQ_HD void CQ_D(mat_arruda_boyce_P_vjp)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                        cq_real gF[D][D], cq_pgrad* g) {
  cq_real gP3[3][3], gF3[3][3] = {{0}}, g_psi1, g_psi2, dI, dmu, dlm;
  cqi_iso q;
  CQ_D(iso_load)(F, &q, gP, gP3);
  cq_real psi1 = CQ_D(ab_psi1)(m, p, q.I1bar, &dI, &dmu, &dlm);
  cqi_iso_P_vjp(&q, psi1, 0, gP3, gF3, &g_psi1, &g_psi2);
  cqi_iso_P(&q, g_psi1 * dI, 0, gF3); /* gF += (dL/dpsi1) (dpsi1/dI1bar) dI1bar/dF */
  CQ_D(add_block)(gF3, gF);
  g->mu += g_psi1 * dmu;
  g->lambda_m += g_psi1 * dlm;
}

/* Small-strain shear modulus mu0 = 2 psi1(3); P-wave modulus 4 mu0 / 3 (the bulk term adds K). At rest: the
 * stiffening towards the locking stretch is not in the stable time step (as for yeoh; docs/api.md). */
CQ_HD cq_real CQ_D(mat_arruda_boyce_modulus)(const cq_params* m, int p) {
  cq_real dI, dmu, dlm;
  return (cq_real)(8.0 / 3.0) * CQ_D(ab_psi1)(m, p, 3, &dI, &dmu, &dlm);
}

CQ_HD void CQ_D(mat_arruda_boyce_modulus_vjp)(const cq_params* m, int p, cq_real gM, cq_pgrad* g) {
  cq_real dI, dmu, dlm;
  CQ_D(ab_psi1)(m, p, 3, &dI, &dmu, &dlm);
  g->mu += (cq_real)(8.0 / 3.0) * gM * dmu;
  g->lambda_m += (cq_real)(8.0 / 3.0) * gM * dlm;
}

static inline int CQ_D(mat_arruda_boyce_check)(const cq_params* m, int p, char* why, int len) {
  if (!(m->mu[p] > 0 && m->lambda_m[p] > 0)) {
    snprintf(why, len, "mu and lambda_m must be > 0 (got mu = %g, lambda_m = %g)", (double)m->mu[p],
             (double)m->lambda_m[p]);
    return 0;
  }
  return cqi_bulk_check(m, p, why, len);
}
#endif

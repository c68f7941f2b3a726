/* Isochoric invariants of a 3x3 deformation gradient and the stress of an energy Psi(I1bar, I2bar), with its
 * vector-Jacobian product: the shared core of the invariant-based hyperelastic models (Mooney-Rivlin, Yeoh; seed 003
 * Table 1). Written once in 3D: a 2D particle is its plane-strain slice F3 = [[F, 0], [0, 1]] (materials embed and
 * extract; see embed3). Also the volumetric term (K/2)(J - 1)^2 that every material can carry (bulk modulus K).
 *   I1 = F:F, I2 = (I1^2 - C:C)/2 with C = F^T F, I1bar = J^(-2/3) I1, I2bar = J^(-4/3) I2,
 *   dI1bar/dF = a (2 F - (2/3) I1 F^-T), dI2bar/dF = a^2 (2 (I1 F - F C) - (4/3) I2 F^-T), a = J^(-2/3). */
#ifndef CQ_ISOCHORIC_H
#define CQ_ISOCHORIC_H
#include "cq_real.h"

typedef struct {
  cq_real F[3][3], A[3][3], C[3][3], FC[3][3]; /* F, F^-T, F^T F, F C */
  cq_real J, I1, I2, a, I1bar;
} cqi_iso;

/* Its own 3x3 cofactor: this header is dimension-free and included before smallmat.h's 3D instances exist. */
CQ_HD void cqi_iso_from(const cq_real F[3][3], cqi_iso* q) {
  cq_real cof[3][3];
  cof[0][0] = F[1][1] * F[2][2] - F[1][2] * F[2][1];
  cof[0][1] = F[1][2] * F[2][0] - F[1][0] * F[2][2];
  cof[0][2] = F[1][0] * F[2][1] - F[1][1] * F[2][0];
  cof[1][0] = F[0][2] * F[2][1] - F[0][1] * F[2][2];
  cof[1][1] = F[0][0] * F[2][2] - F[0][2] * F[2][0];
  cof[1][2] = F[0][1] * F[2][0] - F[0][0] * F[2][1];
  cof[2][0] = F[0][1] * F[1][2] - F[0][2] * F[1][1];
  cof[2][1] = F[0][2] * F[1][0] - F[0][0] * F[1][2];
  cof[2][2] = F[0][0] * F[1][1] - F[0][1] * F[1][0];
  q->J = F[0][0] * cof[0][0] + F[0][1] * cof[0][1] + F[0][2] * cof[0][2];
  cq_real CC = 0;
  q->I1 = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      q->F[i][j] = F[i][j];
      q->A[i][j] = cof[i][j] / q->J;
      q->I1 += F[i][j] * F[i][j];
      cq_real c = 0;
      for (int k = 0; k < 3; k++) c += F[k][i] * F[k][j];
      q->C[i][j] = c;
      CC += c * c;
    }
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      cq_real t = 0;
      for (int k = 0; k < 3; k++) t += F[i][k] * q->C[k][j];
      q->FC[i][j] = t;
    }
  q->I2 = (q->I1 * q->I1 - CC) / 2;
  q->a = cq_pow(q->J, (cq_real)(-2.0 / 3.0));
  q->I1bar = q->a * q->I1;
}

/* P += psi1 dI1bar/dF + psi2 dI2bar/dF. */
CQ_HD void cqi_iso_P(const cqi_iso* q, cq_real psi1, cq_real psi2, cq_real P[3][3]) {
  cq_real s1 = psi1 * q->a, s2 = psi2 * q->a * q->a;
  cq_real cF = 2 * s1 + 2 * s2 * q->I1, cA = -(cq_real)(2.0 / 3.0) * s1 * q->I1 - (cq_real)(4.0 / 3.0) * s2 * q->I2;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) P[i][j] += cF * q->F[i][j] + cA * q->A[i][j] - 2 * s2 * q->FC[i][j];
}

/* The adjoint of cqi_iso_P at fixed psi1, psi2: gF += gP : d(iso_P)/dF; *g_psi1 = gP : dI1bar/dF and
 * *g_psi2 = gP : dI2bar/dF (the caller chains them through its psi's dependence on the invariants and parameters).
 * Reverse mode through P = cF F + cA F^-T - 2 s2 F C, written out step by step. */
CQ_HD void cqi_iso_P_vjp(const cqi_iso* q, cq_real psi1, cq_real psi2, const cq_real gP[3][3], cq_real gF[3][3],
                         cq_real* g_psi1, cq_real* g_psi2) {
  const cq_real a = q->a, b = q->a * q->a, I1 = q->I1, I2 = q->I2, J = q->J;
  cq_real s1 = psi1 * a, s2 = psi2 * b;
  cq_real cF = 2 * s1 + 2 * s2 * I1, cA = -(cq_real)(2.0 / 3.0) * s1 * I1 - (cq_real)(4.0 / 3.0) * s2 * I2;
  cq_real g_cF = 0, g_cA = 0, gP_FC = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      g_cF += gP[i][j] * q->F[i][j];
      g_cA += gP[i][j] * q->A[i][j];
      gP_FC += gP[i][j] * q->FC[i][j];
    }
  cq_real g_s1 = 2 * g_cF - (cq_real)(2.0 / 3.0) * I1 * g_cA;
  cq_real g_s2 = -2 * gP_FC + 2 * I1 * g_cF - (cq_real)(4.0 / 3.0) * I2 * g_cA;
  cq_real g_I2 = -(cq_real)(4.0 / 3.0) * s2 * g_cA;
  cq_real g_I1 = 2 * s2 * g_cF - (cq_real)(2.0 / 3.0) * s1 * g_cA + g_I2 * I1; /* I2 = (I1^2 - C:C)/2 */
  *g_psi1 = g_s1 * a;
  *g_psi2 = g_s2 * b;
  /* a = J^(-2/3), b = a^2 */
  cq_real g_J = (g_s1 * psi1 * (-(cq_real)(2.0 / 3.0)) * a + g_s2 * psi2 * (-(cq_real)(4.0 / 3.0)) * b) / J;
  /* gF through: cF F (direct), cA F^-T (d F^-T = -A dF^T A), -2 s2 F C (d(FC) = dF C + F dF^T F + F F^T dF),
   * I1 = F:F, C:C (d = 4 FC : dF), J (dJ = J A : dF). G = -2 s2 gP is the gradient of FC. */
  cq_real AgA[3][3], FtG[3][3], GC[3][3], FS[3][3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      cq_real t = 0, u = 0, w = 0;
      for (int k = 0; k < 3; k++)
        for (int l = 0; l < 3; l++) t += q->A[i][k] * gP[l][k] * q->A[l][j]; /* A gP^T A */
      for (int k = 0; k < 3; k++) {
        u += q->F[k][i] * gP[k][j]; /* F^T gP */
        w += gP[i][k] * q->C[k][j]; /* gP C */
      }
      AgA[i][j] = t;
      FtG[i][j] = u;
      GC[i][j] = w;
    }
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      cq_real t = 0;
      for (int k = 0; k < 3; k++) t += q->F[i][k] * (FtG[k][j] + FtG[j][k]);
      FS[i][j] = t; /* F (F^T gP + gP^T F) */
    }
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      gF[i][j] += cF * gP[i][j] - cA * AgA[i][j] - 2 * s2 * (GC[i][j] + FS[i][j]) + 2 * g_I1 * q->F[i][j] -
                  2 * g_I2 * q->FC[i][j] + g_J * J * q->A[i][j];
}

/* Volumetric term (K/2)(J - 1)^2: P += K (J - 1) J F^-T. */
CQ_HD void cqi_vol_P(const cqi_iso* q, cq_real K, cq_real P[3][3]) {
  cq_real kv = K * (q->J - 1) * q->J;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) P[i][j] += kv * q->A[i][j];
}

/* Its adjoint: gF += gP : dP/dF, *gK += gP : dP/dK. */
CQ_HD void cqi_vol_P_vjp(const cqi_iso* q, cq_real K, const cq_real gP[3][3], cq_real gF[3][3], cq_real* gK) {
  const cq_real J = q->J, kv = K * (J - 1) * J;
  cq_real gA = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) gA += gP[i][j] * q->A[i][j];
  *gK += gA * (J - 1) * J;
  cq_real g_J = gA * K * (2 * J - 1);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      cq_real t = 0;
      for (int k = 0; k < 3; k++)
        for (int l = 0; l < 3; l++) t += q->A[i][k] * gP[l][k] * q->A[l][j];
      gF[i][j] += -kv * t + g_J * J * q->A[i][j];
    }
}
#endif

/* Eigen-decomposition of a symmetric 3x3 matrix (cyclic Jacobi) and the divided differences of x^c, the pieces of a
 * spectral function f(B) = Q diag(f(e)) Q^T and of its derivative (Daleckii-Krein): dF(B)[dB] = Q (D o Q^T dB Q) Q^T,
 * D_ij = (f(e_i) - f(e_j)) / (e_i - e_j), D_ii = f'(e_i). Both sides are basis-free, so they stay exact where
 * eigenvalues repeat (F = I, uniaxial stretch) and Q is not unique. Dimension-free; CQ_HD for both backends. */
#ifndef CQ_SYMEIG_H
#define CQ_SYMEIG_H
#include "cq_real.h"

/* Jacobi converges quadratically (also for repeated eigenvalues): 3-4 sweeps reach roundoff from any start; the
 * cap only bounds the loop. */
#define CQI_SYMEIG_MAX_SWEEPS 12

/* One Jacobi rotation of the symmetric n x n matrix a (row stride ld) and of its accumulated eigenvectors Q: the
 * rotation J = [[c, s], [-s, c]] in the (p, q) plane that zeroes a_pq in J^T a J (the smaller angle, t = tan, for
 * stability); th * th may overflow only where a_pq is negligible, giving t = 0. */
CQ_HD void cqi_jacobi_rotate(int n, int ld, cq_real* a, cq_real* Q, int p, int q) {
  const cq_real apq = a[p * ld + q];
  const cq_real th = (a[q * ld + q] - a[p * ld + p]) / (2 * apq);
  cq_real t = 1 / (cq_fabs(th) + cq_sqrt(th * th + 1));
  if (th < 0) t = -t;
  const cq_real c = 1 / cq_sqrt(t * t + 1), s = t * c;
  for (int k = 0; k < n; k++) { /* a J, Q J: columns p and q */
    const cq_real akp = a[k * ld + p], akq = a[k * ld + q], qkp = Q[k * ld + p], qkq = Q[k * ld + q];
    a[k * ld + p] = c * akp - s * akq;
    a[k * ld + q] = s * akp + c * akq;
    Q[k * ld + p] = c * qkp - s * qkq;
    Q[k * ld + q] = s * qkp + c * qkq;
  }
  for (int k = 0; k < n; k++) { /* J^T (a J): rows p and q */
    const cq_real apk = a[p * ld + k], aqk = a[q * ld + k];
    a[p * ld + k] = c * apk - s * aqk;
    a[q * ld + k] = s * apk + c * aqk;
  }
  a[p * ld + q] = a[q * ld + p] = 0;
}

/* A = Q diag(e) Q^T for symmetric A (its upper triangle is read); Q's columns are orthonormal eigenvectors. The
 * rotations come in a fixed order (pairs 01, 02, 12), and a pair is skipped once its entry is negligible beside its
 * diagonal (1e-3 of an ulp: no effect on f(A)), so the result is a deterministic function of A. */
CQ_HD void cqi_symeig3(const cq_real A[3][3], cq_real e[3], cq_real Q[3][3]) {
  cq_real a[3][3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      a[i][j] = i <= j ? A[i][j] : A[j][i];
      Q[i][j] = (cq_real)(i == j);
    }
  const cq_real tiny = (cq_real)1e-3 * CQ_REAL_EPS;
  for (int sweep = 0; sweep < CQI_SYMEIG_MAX_SWEEPS; sweep++) {
    int rotated = 0;
    for (int r = 0; r < 3; r++) {
      const int p = r == 2 ? 1 : 0, q = r == 0 ? 1 : 2;
      const cq_real apq = a[p][q];
      if (cq_fabs(apq) <= tiny * (cq_fabs(a[p][p]) + cq_fabs(a[q][q]))) {
        a[p][q] = a[q][p] = 0;
        continue;
      }
      rotated = 1;
      cqi_jacobi_rotate(3, 3, &a[0][0], &Q[0][0], p, q);
    }
    if (!rotated) break;
  }
  for (int i = 0; i < 3; i++) e[i] = a[i][i];
}

/* out = R^T M R with R = Q (into the eigenbasis: Q^T M Q) or, when back, R = Q^T (back from it: Q M Q^T). */
CQ_HD void cqi_rotate3(const cq_real Q[3][3], const cq_real M[3][3], int back, cq_real out[3][3]) {
  cq_real R[3][3], X[3][3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) R[i][j] = back ? Q[j][i] : Q[i][j];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) X[i][j] = M[i][0] * R[0][j] + M[i][1] * R[1][j] + M[i][2] * R[2][j];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) out[i][j] = R[0][i] * X[0][j] + R[1][i] * X[1][j] + R[2][i] * X[2][j];
}

/* (x^c - y^c) / (x - y) for x, y > 0, given lx = log x, ly = log y, xc = x^c, yc = y^c, without cancellation: with
 * t = lx - ly it is y^(c-1) expm1(c t) / expm1(t), whose limit at t = 0 is c y^(c-1). Far apart (|t| > 1) the
 * plain quotient is accurate and cannot overflow where expm1(c t) would. */
CQ_HD cq_real cqi_powdiff(cq_real x, cq_real y, cq_real lx, cq_real ly, cq_real xc, cq_real yc, cq_real c) {
  const cq_real t = lx - ly;
  if (t == 0) return c * yc / y;
  if (cq_fabs(t) > 1) return (xc - yc) / (x - y);
  return yc / y * (cq_expm1(c * t) / cq_expm1(t));
}
/* The nearest positive semi-definite matrix (in the Frobenius norm) of the symmetric n x n matrix A (n <= 9; its
 * upper triangle is read, the whole written): A = Q diag(e) Q^T by cyclic Jacobi, then Q diag(max(e, 0)) Q^T. A that
 * is already semi-definite is left bit for bit as it was (symmetrised). For the implicit solve's projected Newton
 * matrix (implicit.h implicit_blocks): a material's dP/dF is indefinite away from F = I (compression, rotations
 * under stress), and a sum of such blocks need not be definite. Returns 1 when it clamped an eigenvalue. */
CQ_HD int cqi_psd_project(int n, cq_real A[9][9]) {
  cq_real a[9][9], Q[9][9];
  cq_real norm = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      a[i][j] = A[i][j] = i <= j ? A[i][j] : A[j][i];
      Q[i][j] = (cq_real)(i == j);
      norm += a[i][j] * a[i][j];
    }
  const cq_real tiny = (cq_real)1e-3 * CQ_REAL_EPS;
  for (int sweep = 0; sweep < 3 * CQI_SYMEIG_MAX_SWEEPS; sweep++) {
    int rotated = 0;
    for (int p = 0; p < n - 1; p++)
      for (int q = p + 1; q < n; q++) {
        const cq_real apq = a[p][q];
        if (cq_fabs(apq) <= tiny * (cq_fabs(a[p][p]) + cq_fabs(a[q][q])) || apq * apq <= tiny * tiny * norm) {
          a[p][q] = a[q][p] = 0;
          continue;
        }
        rotated = 1;
        cqi_jacobi_rotate(n, 9, &a[0][0], &Q[0][0], p, q);
      }
    if (!rotated) break;
  }
  int clamped = 0;
  for (int i = 0; i < n; i++) clamped |= a[i][i] < 0;
  if (!clamped) return 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      cq_real t = 0;
      for (int k = 0; k < n; k++) t += a[k][k] > 0 ? Q[i][k] * a[k][k] * Q[j][k] : 0;
      A[i][j] = t;
    }
  return 1;
}
#endif

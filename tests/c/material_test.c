/* material_test.c: the Ogden adjoint (mat_ogden_P_vjp through material_P_vjp, with the bulk term) against central
 * differences of the forward material_P, at exactly repeated principal stretches (F = I, uniaxial stretch with two
 * equal stretches, 2D plane strain where the out-of-plane stretch equals an in-plane one) and at 1e-9 from them,
 * where a naive divided difference (e_i^a - e_j^a)/(e_i - e_j) is 0/0 or all roundoff. Checks dL/dF and dL/dmu_k,
 * dL/dalpha_k for L = gP : P with a fixed pseudo-random gP. Built and run by tests/materials_spec.lua; prints one line
 * per case and exits 1 if any fails. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "kernels.h"

/* One particle's parameters: every field of the table gets storage and its default (fields.h). */
#define CQI_STORE(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) static ctype name##_v[9] = {dflt};
CQ_PARAM_FIELDS(CQI_STORE)
#undef CQI_STORE

static cq_params params(void) {
  cq_params m;
  memset(&m, 0, sizeof m);
  m.vol_own = 1;
  m.n = 1; /* one particle: vector parameters are [D][1] */
#define CQI_POINT(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) m.name = name##_v;
  CQ_PARAM_FIELDS(CQI_POINT)
#undef CQI_POINT
  return m;
}

static double prand(int i, int salt) { /* deterministic, in [-1, 1] */
  double v = sin(12.9898 * i + 78.233 * salt) * 43758.5453;
  return 2 * (v - floor(v)) - 1;
}

/* L = gP : P(F) in dimension d. */
static double loss(int d, const cq_params* m, const double* F, const double* gP) {
  double L = 0;
  if (d == 2) {
    cq_real F2[2][2], P[2][2];
    for (int i = 0; i < 4; i++) F2[i / 2][i % 2] = F[i];
    material_P_2(m, 0, F2, P);
    for (int i = 0; i < 4; i++) L += gP[i] * P[i / 2][i % 2];
  } else {
    cq_real F3[3][3], P[3][3];
    for (int i = 0; i < 9; i++) F3[i / 3][i % 3] = F[i];
    material_P_3(m, 0, F3, P);
    for (int i = 0; i < 9; i++) L += gP[i] * P[i / 3][i % 3];
  }
  return L;
}

/* Richardson-extrapolated central difference of L along *x (an entry of F, or a parameter's storage: T its type). */
#define CQI_FD(T)                                                                            \
  static double fd_##T(int d, const cq_params* m, const double* F, const double* gP, T* x) { \
    const double x0 = *x, h = 1e-3, s[4] = {h, -h, h / 2, -h / 2};                           \
    double v[4];                                                                             \
    for (int i = 0; i < 4; i++) {                                                            \
      *x = (T)(x0 + s[i]);                                                                   \
      v[i] = loss(d, m, F, gP);                                                              \
    }                                                                                        \
    *x = (T)x0;                                                                              \
    return (4 * (v[2] - v[3]) / h - (v[0] - v[1]) / (2 * h)) / 3;                            \
  }
CQI_FD(double)
CQI_FD(cq_real)

static int failures = 0;

/* One case: adjoint vs FD of every F entry and every Ogden parameter; error relative to the largest |dL/dF|. */
static void check(const char* what, int d, const double* F0, double tol) {
  cq_params m = params();
  double F[9], gP[9];
  for (int i = 0; i < d * d; i++) {
    F[i] = F0[i];
    gP[i] = prand(i, 7);
  }
  cq_pgrad g;
  memset(&g, 0, sizeof g);
  double gF[9] = {0};
  if (d == 2) {
    cq_real F2[2][2], gP2[2][2], gF2[2][2] = {{0}};
    for (int i = 0; i < 4; i++) F2[i / 2][i % 2] = F[i], gP2[i / 2][i % 2] = gP[i];
    material_P_vjp_2(&m, 0, F2, gP2, gF2, &g);
    for (int i = 0; i < 4; i++) gF[i] = gF2[i / 2][i % 2];
  } else {
    cq_real F3[3][3], gP3[3][3], gF3[3][3] = {{0}};
    for (int i = 0; i < 9; i++) F3[i / 3][i % 3] = F[i], gP3[i / 3][i % 3] = gP[i];
    material_P_vjp_3(&m, 0, F3, gP3, gF3, &g);
    for (int i = 0; i < 9; i++) gF[i] = gF3[i / 3][i % 3];
  }
  double scale = 0, err = 0;
  int finite = 1;
  for (int i = 0; i < d * d; i++) {
    finite &= isfinite(gF[i]);
    scale = fmax(scale, fabs(gF[i]));
  }
  for (int i = 0; i < d * d; i++) err = fmax(err, fabs(gF[i] - fd_double(d, &m, F, gP, &F[i])));
  cq_real* prm[6] = {mu1_v, alpha1_v, mu2_v, alpha2_v, mu3_v, alpha3_v};
  const double ad[6] = {g.mu1, g.alpha1, g.mu2, g.alpha2, g.mu3, g.alpha3};
  double perr = 0;
  for (int k = 0; k < 6; k++) {
    finite &= isfinite(ad[k]);
    perr = fmax(perr, fabs(ad[k] - fd_cq_real(d, &m, F, gP, prm[k])));
  }
  const double rel = err / scale, prel = perr / scale;
  const int ok = finite && rel <= tol && prel <= tol;
  printf("%-4s %dD %-44s dL/dF rel. err %.1e, dL/d(mu, alpha) %.1e (max |dL/dF| %.3g)\n", ok ? "ok" : "FAIL", d, what,
         rel, prel, scale);
  if (!ok) failures++;
}

int main(void) {
  /* three terms (alpha 1.3, 5, -2), each mu_k alpha_k > 0, with the bulk term */
  mu1_v[0] = 6, alpha1_v[0] = 1.3, mu2_v[0] = 0.2, alpha2_v[0] = 5, mu3_v[0] = -1, alpha3_v[0] = -2;
  bulk_v[0] = 40;
  material_v[0] = CQ_MAT_OGDEN;
  const double tol = 1e-10, s = 1.6, r = 1 / sqrt(1.6);
  for (int pass = 0; pass < 3; pass++) {
    const double eps = pass == 0 ? 0 : pass == 1 ? 1e-9 : 1e-5; /* exactly repeated, 1e-9 and 1e-5 from it */
    char name[64];
    double I3[9], U3[9], C3[9], I2[4], U2[4];
    for (int i = 0; i < 9; i++) {
      const int diag = i % 4 == 0;
      I3[i] = diag + eps * prand(i, 1);
      U3[i] = (i == 0 ? s : diag ? r : 0) + eps * prand(i, 2);
      C3[i] = (i == 0 ? r : diag ? s : 0) + eps * prand(i, 3); /* uniaxial compression: one small, two large */
    }
    for (int i = 0; i < 4; i++) {
      I2[i] = (i % 3 == 0) + eps * prand(i, 4);
      U2[i] = (i == 0 ? s : i == 3) + eps * prand(i, 5); /* lambda_2 = lambda_3 = 1 (plane strain) */
    }
    snprintf(name, sizeof name, "F = I + %g", eps);
    check(name, 3, I3, tol);
    snprintf(name, sizeof name, "F = diag(s, s^-1/2, s^-1/2) + %g", eps);
    check(name, 3, U3, tol);
    snprintf(name, sizeof name, "F = diag(s^-1/2, s, s) + %g", eps);
    check(name, 3, C3, tol);
    snprintf(name, sizeof name, "F = I + %g (plane strain)", eps);
    check(name, 2, I2, tol);
    snprintf(name, sizeof name, "F = diag(s, 1) + %g (plane strain)", eps);
    check(name, 2, U2, tol);
  }
  printf("%d failures\n", failures);
  return failures > 0;
}

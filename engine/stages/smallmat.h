/* Small dense DxD matrix helpers (D = 2 or 3), included once per dimension by kernels.h. */
/* No include guard on purpose: kernels.h includes this file with D=2 and again with D=3. */

/* out = A B */
CQ_HD void CQ_D(mm)(const cq_real A[D][D], const cq_real B[D][D], cq_real out[D][D]) {
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) {
      cq_real s = 0;
      for (int k = 0; k < D; k++) s += A[i][k] * B[k][j];
      out[i][j] = s;
    }
}
/* out = A^T B */
CQ_HD void CQ_D(mtm)(const cq_real A[D][D], const cq_real B[D][D], cq_real out[D][D]) {
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) {
      cq_real s = 0;
      for (int k = 0; k < D; k++) s += A[k][i] * B[k][j];
      out[i][j] = s;
    }
}
/* out = A B^T */
CQ_HD void CQ_D(mmt)(const cq_real A[D][D], const cq_real B[D][D], cq_real out[D][D]) {
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) {
      cq_real s = 0;
      for (int k = 0; k < D; k++) s += A[i][k] * B[j][k];
      out[i][j] = s;
    }
}
/* A : B (Frobenius inner product) */
CQ_HD cq_real CQ_D(ddot)(const cq_real A[D][D], const cq_real B[D][D]) {
  cq_real s = 0;
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) s += A[i][j] * B[i][j];
  return s;
}
CQ_HD cq_real CQ_D(det)(const cq_real A[D][D]) {
#if D == 2
  return A[0][0] * A[1][1] - A[0][1] * A[1][0];
#else
  return A[0][0] * (A[1][1] * A[2][2] - A[1][2] * A[2][1]) - A[0][1] * (A[1][0] * A[2][2] - A[1][2] * A[2][0]) +
         A[0][2] * (A[1][0] * A[2][1] - A[1][1] * A[2][0]);
#endif
}
/* cof(A) = det(A) A^{-T}: the cofactor matrix, defined even when A is singular. */
CQ_HD void CQ_D(cofactor)(const cq_real A[D][D], cq_real out[D][D]) {
#if D == 2
  out[0][0] = A[1][1];
  out[0][1] = -A[1][0];
  out[1][0] = -A[0][1];
  out[1][1] = A[0][0];
#else
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
      out[i][j] = A[i1][j1] * A[i2][j2] - A[i1][j2] * A[i2][j1];
    }
#endif
}
/* gA += gcof : d cof(A)/dA (each cofactor is a (D-1)x(D-1) minor, linear in each entry it holds). */
CQ_HD void CQ_D(cofactor_vjp)(const cq_real A[D][D], const cq_real gcof[D][D], cq_real gA[D][D]) {
#if D == 2
  gA[1][1] += gcof[0][0];
  gA[1][0] -= gcof[0][1];
  gA[0][1] -= gcof[1][0];
  gA[0][0] += gcof[1][1];
#else
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
      cq_real g = gcof[i][j];
      gA[i1][j1] += g * A[i2][j2];
      gA[i2][j2] += g * A[i1][j1];
      gA[i1][j2] -= g * A[i2][j1];
      gA[i2][j1] -= g * A[i1][j2];
    }
#endif
}
/* dcof += d cof(A)[dA], the differential of cof along dA (2D: cof is linear, cof(dA)). */
CQ_HD void CQ_D(cofactor_jvp)(const cq_real A[D][D], const cq_real dA[D][D], cq_real dcof[D][D]) {
#if D == 2
  dcof[0][0] += dA[1][1];
  dcof[0][1] -= dA[1][0];
  dcof[1][0] -= dA[0][1];
  dcof[1][1] += dA[0][0];
#else
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
      dcof[i][j] += dA[i1][j1] * A[i2][j2] + A[i1][j1] * dA[i2][j2] - dA[i1][j2] * A[i2][j1] - A[i1][j2] * dA[i2][j1];
    }
#endif
}
/* A^{-T}; returns det(A). The caller checks det != 0 where it matters. */
CQ_HD cq_real CQ_D(inv_t)(const cq_real A[D][D], cq_real out[D][D]) {
  cq_real J = CQ_D(det)(A);
  CQ_D(cofactor)(A, out);
  cq_real inv = (cq_real)1 / J;
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) out[i][j] *= inv;
  return J;
}

/* Pieces of d(F^{-T}) = -F^{-T} dF^T F^{-T} that the materials' adjoints share: A = F^{-T}, AgA = A gP^T A and
 * *gA = gP : A; returns J = det F. */
CQ_HD cq_real CQ_D(inv_t_adj_parts)(const cq_real F[D][D], const cq_real gP[D][D], cq_real A[D][D], cq_real AgA[D][D],
                                    cq_real* gA) {
  cq_real tmp[D][D];
  cq_real J = CQ_D(inv_t)(F, A);
  CQ_D(mmt)(A, gP, tmp);
  CQ_D(mm)(tmp, A, AgA);
  *gA = CQ_D(ddot)(gP, A);
  return J;
}

/* Polar decomposition F = R S (R rotation, S symmetric). 2D: closed form; 3D: scaled Newton iteration
 * X <- (g X + X^{-T}/g)/2, which converges quadratically to the orthogonal factor. */
CQ_HD void CQ_D(polar)(const cq_real F[D][D], cq_real R[D][D], cq_real S[D][D]) {
#if D == 2
  cq_real a = F[0][0] + F[1][1], b = F[1][0] - F[0][1];
  cq_real r = cq_sqrt(a * a + b * b);
  cq_real ir = r > 0 ? 1 / r : 0;
  cq_real c = r > 0 ? a * ir : (cq_real)1, s = b * ir;
  R[0][0] = c;
  R[0][1] = -s;
  R[1][0] = s;
  R[1][1] = c;
#else
  cq_real X[3][3], Y[3][3];
  int scaled = 1; /* Frobenius-scaled steps far from convergence, plain Newton near it */
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) X[i][j] = F[i][j];
  for (int it = 0; it < 40; it++) {
    cq_real J = CQ_D(inv_t)(X, Y);
    if (!(J != 0)) break;
    cq_real g = scaled ? cq_sqrt(cq_sqrt(CQ_D(ddot)(Y, Y) / CQ_D(ddot)(X, X))) : (cq_real)1;
    cq_real change = 0;
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        cq_real nv = (cq_real)0.5 * (g * X[i][j] + Y[i][j] / g);
        change += (nv - X[i][j]) * (nv - X[i][j]);
        X[i][j] = nv;
      }
    if (change < (cq_real)1e-6) scaled = 0;
    if (change <= (cq_real)16 * CQ_REAL_EPS * CQ_REAL_EPS) break;
  }
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) R[i][j] = X[i][j];
#endif
  CQ_D(mtm)(R, F, S);
}

/* Adjoint of R = polar(F): gF += dL/dF given gR = dL/dR.
 * With Omega = R^T dR skew, Omega S + S Omega = skew part of R^T dF, i.e. (tr(S) I - S) w = axial(R^T dF - dF^T R);
 * hence dL/dF = R [c]x with c = (tr(S) I - S)^{-1} axial(R^T gR - gR^T R) (2D: the scalar analogue). */
CQ_HD void CQ_D(polar_vjp)(const cq_real R[D][D], const cq_real S[D][D], const cq_real gR[D][D], cq_real gF[D][D]) {
  cq_real B[D][D];
  CQ_D(mtm)(R, gR, B);
#if D == 2
  cq_real c = (B[1][0] - B[0][1]) / (S[0][0] + S[1][1]);
  /* gF += c R [[0,-1],[1,0]] */
  gF[0][0] += c * R[0][1];
  gF[0][1] -= c * R[0][0];
  gF[1][0] += c * R[1][1];
  gF[1][1] -= c * R[1][0];
#else
  cq_real b[3] = {B[2][1] - B[1][2], B[0][2] - B[2][0], B[1][0] - B[0][1]};
  cq_real tr = S[0][0] + S[1][1] + S[2][2], K[3][3], Kinv[3][3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) K[i][j] = (i == j ? tr : 0) - S[i][j];
  CQ_D(inv_t)(K, Kinv); /* K is symmetric so K^{-T} = K^{-1} */
  cq_real c[3];
  for (int i = 0; i < 3; i++) c[i] = Kinv[i][0] * b[0] + Kinv[i][1] * b[1] + Kinv[i][2] * b[2];
  cq_real W[3][3] = {{0, -c[2], c[1]}, {c[2], 0, -c[0]}, {-c[1], c[0], 0}};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) gF[i][j] += R[i][0] * W[0][j] + R[i][1] * W[1][j] + R[i][2] * W[2][j];
#endif
}

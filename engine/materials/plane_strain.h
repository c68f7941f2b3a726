/* Plane strain: a 2D particle's deformation gradient as the 3x3 F3 = [[F, 0], [0, 1]] (no out-of-plane stretch), so
 * that the models written once in 3D (isochoric.h) serve both dimensions; the in-plane block of the 3D stress is the
 * 2D stress (Psi(F) = Psi3(F3)). Per dimension (no include guard); identity maps in 3D. */

CQ_HD void CQ_D(embed3)(const cq_real F[D][D], cq_real F3[3][3]) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) F3[i][j] = i < D && j < D ? F[i][j] : (cq_real)(i == j);
}

/* out += the D x D block of M3. */
CQ_HD void CQ_D(add_block)(const cq_real M3[3][3], cq_real out[D][D]) {
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) out[i][j] += M3[i][j];
}

/* The D x D gradient gP embedded with zeros outside its block. */
CQ_HD void CQ_D(embed3_zero)(const cq_real gP[D][D], cq_real g3[3][3]) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) g3[i][j] = i < D && j < D ? gP[i][j] : 0;
}

/* The 3D invariants of particle F (embedded) and, when gP is given, gP embedded as g3: the common start of every
 * model written in 3D (isochoric.h). */
CQ_HD void CQ_D(iso_load)(const cq_real F[D][D], cqi_iso* q, const cq_real (*gP)[D], cq_real g3[3][3]) {
  cq_real F3[3][3];
  CQ_D(embed3)(F, F3);
  cqi_iso_from(F3, q);
  if (gP) CQ_D(embed3_zero)(gP, g3);
}

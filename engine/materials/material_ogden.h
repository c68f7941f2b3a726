/* Ogden (seed 003 Table 1): Psi = sum_k (mu_k/alpha_k)(lbar_1^alpha_k + lbar_2^alpha_k + lbar_3^alpha_k - 3) +
 * (K/2)(J - 1)^2, k = 1..3 (mu1, alpha1, ...; a term with mu_k = alpha_k = 0 is off), lbar_i = J^(-1/3) lambda_i the
 * isochoric principal stretches of the 3D (in 2D: plane-strain) deformation gradient; the volumetric term is the
 * particle's bulk term (material.h). With bbar = J^(-2/3) F F^T (eigenvalues lbar_i^2) the Kirchhoff stress is
 *   tau = sum_k mu_k dev(bbar^(alpha_k/2)),  P = tau F^-T,
 * bbar^c a spectral function of the symmetric bbar (symeig.h), differentiated by Daleckii-Krein divided differences
 * that stay finite and exact at repeated stretches. Forward, adjoint (dL/dmu_k, dL/dalpha_k), wave modulus, checks. */

/* Its parameters (fields.h: P declares one, U names each that the robot builder takes for it, 1 = required). */
#ifndef CQ_MAT_PARAMS_ogden
#define CQ_MAT_PARAMS_ogden(P, U)                                                              \
  P(mu1, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, -INFINITY, INFINITY, CQ_CLOSED,         \
    "shear coefficient mu_1 of Ogden term 1, (mu_1/alpha_1)(sum_i lbar_i^alpha_1 - 3): ogden") \
  P(alpha1, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, -INFINITY, INFINITY, CQ_CLOSED,      \
    "exponent alpha_1 of Ogden term 1 (a term with mu_1 = alpha_1 = 0 is off): ogden")         \
  P(mu2, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, -INFINITY, INFINITY, CQ_CLOSED,         \
    "shear coefficient mu_2 of Ogden term 2, (mu_2/alpha_2)(sum_i lbar_i^alpha_2 - 3): ogden") \
  P(alpha2, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, -INFINITY, INFINITY, CQ_CLOSED,      \
    "exponent alpha_2 of Ogden term 2 (a term with mu_2 = alpha_2 = 0 is off): ogden")         \
  P(mu3, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, -INFINITY, INFINITY, CQ_CLOSED,         \
    "shear coefficient mu_3 of Ogden term 3, (mu_3/alpha_3)(sum_i lbar_i^alpha_3 - 3): ogden") \
  P(alpha3, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, -INFINITY, INFINITY, CQ_CLOSED,      \
    "exponent alpha_3 of Ogden term 3 (a term with mu_3 = alpha_3 = 0 is off): ogden")         \
  U(mu1, 0) U(alpha1, 0) U(mu2, 0) U(alpha2, 0) U(mu3, 0) U(alpha3, 0) U(bulk, 1)
#endif

#ifdef D /* its code, per dimension (material.h) */

#ifndef CQ_MATERIAL_OGDEN_CORE /* the dimension-free 3D core, once */
#define CQ_MATERIAL_OGDEN_CORE
#define CQI_OGDEN_TERMS 3

/* bbar = Q diag(e) Q^T, l = log e, and the particle's terms (c = alpha/2). */
typedef struct {
  cq_real Q[3][3], e[3], l[3];
  cq_real mu[CQI_OGDEN_TERMS], c[CQI_OGDEN_TERMS];
} cqi_ogden;

CQ_HD void cqi_ogden_from(const cqi_iso* q, const cq_real mu[CQI_OGDEN_TERMS], const cq_real alpha[CQI_OGDEN_TERMS],
                          cqi_ogden* o) {
  cq_real bbar[3][3];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      cq_real t = 0;
      for (int k = 0; k < 3; k++) t += q->F[i][k] * q->F[j][k];
      bbar[i][j] = q->a * t;
    }
  cqi_symeig3(bbar, o->e, o->Q);
  for (int i = 0; i < 3; i++) o->l[i] = cq_log(o->e[i]);
  for (int k = 0; k < CQI_OGDEN_TERMS; k++) {
    o->mu[k] = mu[k];
    o->c[k] = alpha[k] / 2;
  }
}

/* Term k is on unless mu_k = alpha_k = 0 (then its stress and both its gradients are zero). */
CQ_HD int cqi_ogden_on(const cqi_ogden* o, int k) { return o->mu[k] != 0 || o->c[k] != 0; }

/* The eigenvalues of tau (tau = Q diag(t) Q^T): t_i = sum_k mu_k (e_i^c_k - mean_j e_j^c_k). */
CQ_HD void cqi_ogden_tau(const cqi_ogden* o, cq_real t[3]) {
  t[0] = t[1] = t[2] = 0;
  for (int k = 0; k < CQI_OGDEN_TERMS; k++) {
    if (!cqi_ogden_on(o, k)) continue;
    cq_real pw[3];
    for (int i = 0; i < 3; i++) pw[i] = cq_exp(o->c[k] * o->l[i]);
    const cq_real mean = (pw[0] + pw[1] + pw[2]) / 3;
    for (int i = 0; i < 3; i++) t[i] += o->mu[k] * (pw[i] - mean);
  }
}

/* tau = Q diag(t) Q^T. */
CQ_HD void cqi_ogden_tau_matrix(const cqi_ogden* o, cq_real tau[3][3]) {
  cq_real t[3], T[3][3] = {{0}};
  cqi_ogden_tau(o, t);
  for (int i = 0; i < 3; i++) T[i][i] = t[i];
  cqi_rotate3(o->Q, T, 1, tau);
}

/* P = tau F^-T. */
CQ_HD void cqi_ogden_P(const cqi_iso* q, const cqi_ogden* o, cq_real P[3][3]) {
  cq_real tau[3][3];
  cqi_ogden_tau_matrix(o, tau);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) P[i][j] = tau[i][0] * q->A[0][j] + tau[i][1] * q->A[1][j] + tau[i][2] * q->A[2][j];
}

/* gF += gP : dP/dF, gmu[k] += gP : dP/dmu_k, galpha[k] += gP : dP/dalpha_k. Reverse through P = tau A (A = F^-T):
 * gtau = gP A^T, gA = tau gP; through tau = sum_k mu_k dev(bbar^c_k): in the eigenbasis G = Q^T dev(sym gtau) Q,
 * gmu_k = sum_i G_ii e_i^c_k, galpha_k = mu_k sum_i G_ii e_i^c_k l_i / 2 (d e^c/dalpha = e^c log(e) / 2), and
 * gbbar = Q H Q^T with H_ij = sum_k mu_k D^k_ij G_ij (Daleckii-Krein); through bbar = J^(-2/3) F F^T:
 * gF += 2 J^(-2/3) gbbar F - (2/3) (gbbar : bbar) F^-T (dJ = J A : dF). */
CQ_HD void cqi_ogden_P_vjp(const cqi_iso* q, const cqi_ogden* o, const cq_real gP[3][3], cq_real gF[3][3],
                           cq_real gmu[CQI_OGDEN_TERMS], cq_real galpha[CQI_OGDEN_TERMS]) {
  cq_real tau[3][3], S[3][3], G[3][3], H[3][3] = {{0}}, gb[3][3], gA[3][3];
  cqi_ogden_tau_matrix(o, tau);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) { /* S = sym(gP A^T), gA = tau gP */
      S[i][j] = gA[i][j] = 0;
      for (int k = 0; k < 3; k++) {
        S[i][j] += (gP[i][k] * q->A[j][k] + gP[j][k] * q->A[i][k]) / 2;
        gA[i][j] += tau[i][k] * gP[k][j];
      }
    }
  cqi_rotate3(o->Q, S, 0, G);
  const cq_real trG = (G[0][0] + G[1][1] + G[2][2]) / 3; /* dev: the trace is basis-free */
  for (int i = 0; i < 3; i++) G[i][i] -= trG;
  for (int k = 0; k < CQI_OGDEN_TERMS; k++) {
    if (!cqi_ogden_on(o, k)) continue;
    const cq_real c = o->c[k], mu = o->mu[k];
    cq_real pw[3];
    for (int i = 0; i < 3; i++) {
      pw[i] = cq_exp(c * o->l[i]);
      gmu[k] += G[i][i] * pw[i];
      galpha[k] += mu * G[i][i] * pw[i] * o->l[i] / 2;
    }
    for (int i = 0; i < 3; i++)
      for (int j = i; j < 3; j++) { /* D^k is symmetric: one divided difference per pair */
        const cq_real d = mu * cqi_powdiff(o->e[i], o->e[j], o->l[i], o->l[j], pw[i], pw[j], c);
        H[i][j] += d * G[i][j];
        if (j != i) H[j][i] += d * G[j][i];
      }
  }
  cqi_rotate3(o->Q, H, 1, gb); /* gbbar */
  const cq_real gJJ = -(cq_real)(2.0 / 3.0) * (H[0][0] * o->e[0] + H[1][1] * o->e[1] + H[2][2] * o->e[2]);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      cq_real v = gJJ * q->A[i][j];
      for (int k = 0; k < 3; k++) {
        v += 2 * q->a * gb[i][k] * q->F[k][j];
        for (int l = 0; l < 3; l++) v -= q->A[i][k] * gA[l][k] * q->A[l][j]; /* A = F^-T: dA = -A dF^T A */
      }
      gF[i][j] += v;
    }
}
#endif

CQ_HD void CQ_D(ogden_load)(const cq_params* m, int p, const cqi_iso* q, cqi_ogden* o) {
  const cq_real mu[CQI_OGDEN_TERMS] = {m->mu1[p], m->mu2[p], m->mu3[p]};
  const cq_real alpha[CQI_OGDEN_TERMS] = {m->alpha1[p], m->alpha2[p], m->alpha3[p]};
  cqi_ogden_from(q, mu, alpha, o);
}

CQ_HD void CQ_D(mat_ogden_P)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D]) {
  cq_real P3[3][3];
  cqi_iso q;
  cqi_ogden o;
  CQ_D(iso_load)(F, &q, NULL, NULL);
  CQ_D(ogden_load)(m, p, &q, &o);
  cqi_ogden_P(&q, &o, P3);
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) P[i][j] = 0;
  CQ_D(add_block)(P3, P);
}

CQ_HD void CQ_D(mat_ogden_P_vjp)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                 cq_real gF[D][D], cq_pgrad* g) {
  cq_real gP3[3][3], gF3[3][3] = {{0}}, gmu[CQI_OGDEN_TERMS] = {0}, galpha[CQI_OGDEN_TERMS] = {0};
  cqi_iso q;
  cqi_ogden o;
  CQ_D(iso_load)(F, &q, gP, gP3);
  CQ_D(ogden_load)(m, p, &q, &o);
  cqi_ogden_P_vjp(&q, &o, gP3, gF3, gmu, galpha);
  CQ_D(add_block)(gF3, gF);
  g->mu1 += gmu[0];
  g->alpha1 += galpha[0];
  g->mu2 += gmu[1];
  g->alpha2 += galpha[1];
  g->mu3 += gmu[2];
  g->alpha3 += galpha[2];
}

/* Small-strain shear modulus G = (1/2) sum_k mu_k alpha_k; P-wave modulus 4G/3 (the bulk term adds K). At rest:
 * stiffening at large stretch (alpha_k > 2) is not in the stable time step (docs/api.md). */
CQ_HD cq_real CQ_D(mat_ogden_modulus)(const cq_params* m, int p) {
  return (cq_real)(2.0 / 3.0) * (m->mu1[p] * m->alpha1[p] + m->mu2[p] * m->alpha2[p] + m->mu3[p] * m->alpha3[p]);
}

/* Its gradient: g->mu_k, g->alpha_k += gM dM/d(mu_k, alpha_k). */
CQ_HD void CQ_D(mat_ogden_modulus_vjp)(const cq_params* m, int p, cq_real gM, cq_pgrad* g) {
  const cq_real k = (cq_real)(2.0 / 3.0) * gM;
  g->mu1 += k * m->alpha1[p], g->alpha1 += k * m->mu1[p];
  g->mu2 += k * m->alpha2[p], g->alpha2 += k * m->mu2[p];
  g->mu3 += k * m->alpha3[p], g->alpha3 += k * m->mu3[p];
}

/* Each term with mu_k != 0 needs alpha_k != 0 and mu_k alpha_k > 0 (a positive shear modulus from every term, the
 * usual sufficient condition for stability); at least one such term; bulk > 0. */
static inline int CQ_D(mat_ogden_check)(const cq_params* m, int p, char* why, int len) {
  const double mu[3] = {m->mu1[p], m->mu2[p], m->mu3[p]}, alpha[3] = {m->alpha1[p], m->alpha2[p], m->alpha3[p]};
  int terms = 0;
  for (int k = 0; k < 3; k++) {
    if (mu[k] == 0) continue;
    terms++;
    if (alpha[k] == 0) {
      snprintf(why, len, "alpha%d must be != 0 where mu%d != 0 (got mu%d = %g, alpha%d = 0)", k + 1, k + 1, k + 1,
               mu[k], k + 1);
      return 0;
    }
    if (!(mu[k] * alpha[k] > 0)) {
      snprintf(why, len, "mu%d * alpha%d must be > 0 (same signs; got mu%d = %g, alpha%d = %g)", k + 1, k + 1, k + 1,
               mu[k], k + 1, alpha[k]);
      return 0;
    }
  }
  if (terms == 0) {
    snprintf(why, len, "needs at least one term: mu1, mu2 or mu3 != 0 (got all 0)");
    return 0;
  }
  return cqi_bulk_check(m, p, why, len);
}
#endif

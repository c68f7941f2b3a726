/* Lame parameters from Young's modulus E and Poisson's ratio nu, with their derivatives (3D relations). */
#ifndef CQ_LAME_H
#define CQ_LAME_H
#include "cq_real.h"

/* mu = E / (2(1+nu)), lambda = E nu / ((1+nu)(1-2nu)); d* are the partial derivatives. */
typedef struct {
  cq_real mu, la, dmu_dE, dmu_dnu, dla_dE, dla_dnu;
} cqi_lame;

CQ_HD cqi_lame cqi_lame_from(cq_real E, cq_real nu) {
  cqi_lame l;
  cq_real a = 1 + nu, b = 1 - 2 * nu;
  l.mu = E / (2 * a);
  l.la = E * nu / (a * b);
  l.dmu_dE = 1 / (2 * a);
  l.dmu_dnu = -E / (2 * a * a);
  l.dla_dE = nu / (a * b);
  l.dla_dnu = E * (1 + 2 * nu * nu) / (a * a * b * b);
  return l;
}

/* Chain rule through the Lame parameters: *gE += dL/dE, *gnu += dL/dnu given g_mu = dL/dmu, g_la = dL/dlambda. */
CQ_HD void cqi_lame_vjp(const cqi_lame* l, cq_real g_mu, cq_real g_la, cq_real* gE, cq_real* gnu) {
  *gE += g_mu * l->dmu_dE + g_la * l->dla_dE;
  *gnu += g_mu * l->dmu_dnu + g_la * l->dla_dnu;
}

/* P-wave modulus lambda + 2 mu of an isotropic material (its stiffness in the stable time step). */
CQ_HD cq_real cqi_lame_modulus(cq_real E, cq_real nu) {
  cqi_lame l = cqi_lame_from(E, nu);
  return l.la + 2 * l.mu;
}
#endif

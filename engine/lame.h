/* Lame parameters from Young's modulus E and Poisson's ratio nu, with their derivatives (3D relations). */
#ifndef CQ_LAME_H
#define CQ_LAME_H
#include "cq_real.h"

/* mu = E / (2(1+nu)), lambda = E nu / ((1+nu)(1-2nu)); d* are the partial derivatives. */
typedef struct { cq_real mu, la, dmu_dE, dmu_dnu, dla_dE, dla_dnu; } cqi_lame;

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
#endif

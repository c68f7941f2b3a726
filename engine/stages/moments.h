/* Mass moments of a state and their adjoint, per particle: with the particles' masses m (the model's parameter),
 *   M = sum m,  X = sum m x,  V = sum m v,  XX = sum m x x^T,  XV = sum m x v^T,
 * the sums from which a body's mass centre, linear and angular momentum, inertia and spin about the mass centre
 * follow (lua/cq/tape.lua t:mass_centroid, t:spin; seed 004 eqs. 33 and 36). Layout of the CQI_MOMENTS(D) doubles:
 * M, X[D], V[D], XX[D][D] (row a = x_a), XV[D][D] (row a = x_a, column b = v_b). The sums are taken in double from
 * the working precision's values (backends: engine/backends/cpu/cpu_loops.h in particle order, cuda/cuda_loops.cuh by blocks).
 * Included once per dimension by kernels.h. */
#ifndef CQI_MOMENTS
#define CQI_MOMENTS(dim) (1 + 2 * (dim) + 2 * (dim) * (dim))
#define CQI_MOMENTS_MAX CQI_MOMENTS(3)
#endif

/* Adds particle p's terms into acc[CQI_MOMENTS(D)]. */
CQ_HD void CQ_D(moments_add)(const cq_particles* s, const cq_params* m, int p, double* acc) {
  int n = s->n;
  double mp = (double)m->mass[p], x[D], v[D];
  for (int a = 0; a < D; a++) x[a] = (double)s->x[a * n + p], v[a] = (double)s->v[a * n + p];
  double* X = acc + 1;
  double* V = X + D;
  double* XX = V + D;
  double* XV = XX + D * D;
  acc[0] += mp;
  for (int a = 0; a < D; a++) {
    X[a] += mp * x[a];
    V[a] += mp * v[a];
    for (int b = 0; b < D; b++) {
      XX[a * D + b] += mp * x[a] * x[b];
      XV[a * D + b] += mp * x[a] * v[b];
    }
  }
}

/* Adjoint of particle p's terms: given g = dL/d(the moments) (same layout), adds dL/dx_p and dL/dv_p into gs (x, v
 * fields) and dL/dm_p into gmass[p] (NULL: not wanted). Writes only particle p's entries. */
CQ_HD void CQ_D(moments_adj)(const cq_particles* s, const cq_params* m, int p, const double* g, const cq_particles* gs,
                             cq_real* gmass) {
  int n = s->n;
  double mp = (double)m->mass[p], x[D], v[D];
  for (int a = 0; a < D; a++) x[a] = (double)s->x[a * n + p], v[a] = (double)s->v[a * n + p];
  const double* gX = g + 1;
  const double* gV = gX + D;
  const double* gXX = gV + D;
  const double* gXV = gXX + D * D;
  double dm = g[0];
  for (int a = 0; a < D; a++) {
    double dx = gX[a], dv = gV[a];
    for (int b = 0; b < D; b++) {
      dx += (gXX[a * D + b] + gXX[b * D + a]) * x[b] + gXV[a * D + b] * v[b];
      dv += gXV[b * D + a] * x[b];
      dm += (gXX[a * D + b] * x[b] + gXV[a * D + b] * v[b]) * x[a];
    }
    dm += gX[a] * x[a] + gV[a] * v[a];
    gs->x[a * n + p] += (cq_real)(mp * dx);
    gs->v[a * n + p] += (cq_real)(mp * dv);
  }
  if (gmass) gmass[p] += (cq_real)dm;
}

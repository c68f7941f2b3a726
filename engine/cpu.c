/* CPU backend: OpenMP loops around the shared per-particle / per-node kernels (kernels.h), forward and adjoint. */
#include <omp.h>
#include <string.h>
#include "internal.h"
#include "kernels.h"

static inline int cqi_threads(const cq_world* w) { return w->threads > 0 ? w->threads : omp_get_max_threads(); }

#define D 2
#include "cpu_loops.h"
#undef D
#define D 3
#include "cpu_loops.h"
#undef D

int cqi_cpu_substep(cq_world* w, cq_particles* s, const cq_real* u, long substep) {
  return w->dim == 2 ? cpu_substep_2(w, s, u, substep) : cpu_substep_3(w, s, u, substep);
}

int cqi_cpu_check(cq_world* w, const cq_particles* s, long substep) {
  return w->dim == 2 ? cpu_prepare_2(w, s, substep) : cpu_prepare_3(w, s, substep);
}

int cqi_cpu_substep_adj(cq_world* w, const cq_particles* s, const cq_particles* s1, const cq_real* u, long substep,
                        const cq_particles* g1, cq_particles* g0, cq_real* gmass, cq_real* gvol0, cq_real* gE,
                        cq_real* gnu, double* gu, cq_real* gfuser, cq_real* gauser) {
  int st = cqi_alloc_backward(w);
  if (st != CQ_OK) return st;
  return w->dim == 2 ? cpu_substep_adj_2(w, s, s1, u, substep, g1, g0, gmass, gvol0, gE, gnu, gu, gfuser, gauser)
                     : cpu_substep_adj_3(w, s, s1, u, substep, g1, g0, gmass, gvol0, gE, gnu, gu, gfuser, gauser);
}

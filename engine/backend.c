/* Backend dispatch: the world's substeps run on the CPU backend (cpu.c) or, in the CUDA build, on cuda/cuda.cu. */
#include <stdio.h>
#include "internal.h"

int cqi_substep(cq_world* w, cq_particles* s, const cq_real* u, long substep) {
#ifdef CQ_WITH_CUDA
  if (w->backend == CQ_BACKEND_CUDA) return cqi_cuda_substep(w, s, u, substep);
#endif
  return cqi_cpu_substep(w, s, u, substep);
}

int cqi_substep_adj(cq_world* w, const cq_particles* s, const cq_particles* s1, const cq_real* u, long substep,
                    const cq_particles* g1, cq_particles* g0, cq_real* gmass, cq_real* gvol0, cq_real* gE,
                    cq_real* gnu, double* gu, cq_real* gfuser, cq_real* gauser) {
#ifdef CQ_WITH_CUDA
  if (w->backend == CQ_BACKEND_CUDA)
    return cqi_cuda_substep_adj(w, s, s1, u, substep, g1, g0, gmass, gvol0, gE, gnu, gu, gfuser, gauser);
#endif
  return cqi_cpu_substep_adj(w, s, s1, u, substep, g1, g0, gmass, gvol0, gE, gnu, gu, gfuser, gauser);
}

void cqi_backend_free(cq_world* w) {
#ifdef CQ_WITH_CUDA
  cqi_cuda_free(w);
#endif
  (void)w;
}

int cq_world_backend(const cq_world* w) { return w->backend; }

int cq_world_set_backend(cq_world* w, int backend) {
  if (backend == CQ_BACKEND_CPU) {
    w->backend = CQ_BACKEND_CPU;
    return CQ_OK;
  }
  if (backend != CQ_BACKEND_CUDA)
    return cqi_fail(w, CQ_ERR_ARG, "backend must be 0 (cpu) or 1 (cuda) (got %d)", backend);
#ifdef CQ_WITH_CUDA
  int st = cqi_cuda_init(w);
  if (st == CQ_OK) w->backend = CQ_BACKEND_CUDA;
  return st;
#else
  return cqi_fail(w, CQ_ERR_ARG, "backend cuda: this engine library was built without CUDA (use libcq_cuda_*.so)");
#endif
}

#ifndef CQ_WITH_CUDA
/* Stubs of the CUDA queries, so every engine library exports the same symbols. */
int cq_cuda_device_count(char* err, int errlen) {
  if (err && errlen > 0) snprintf(err, errlen, "this engine library was built without CUDA");
  return -1;
}
int cq_cuda_device_info(char* buf, int len) {
  if (buf && len > 0) snprintf(buf, len, "this engine library was built without CUDA");
  return CQ_ERR_STATE;
}
double cq_cuda_memcpy_bandwidth(double bytes, int reps, char* err, int errlen) {
  (void)bytes, (void)reps;
  if (err && errlen > 0) snprintf(err, errlen, "this engine library was built without CUDA");
  return -1;
}
#endif

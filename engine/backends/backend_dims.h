/* One entry per stage primitive over its 2D and 3D variants: CQI_DIM_DISPATCH(P) defines P_op(b, ...) calling
 * P_op_2 or P_op_3 by b->dim, for every primitive both backends write per dimension. Used by backend_cpu.c (P = cpu)
 * and cuda/cuda.cu (P = cuda) after their per-dimension loops, so the two stay in step with backend.h. */
#ifndef CQ_BACKEND_DIMS_H
#define CQ_BACKEND_DIMS_H

#define CQI_BY_DIM(b, name, ...) ((b)->dim == 2 ? name##_2(b, __VA_ARGS__) : name##_3(b, __VA_ARGS__))

#define CQI_DIM_DISPATCH(P)                                                                                          \
  static int P##_prepare(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,             \
                         int check_all, cqi_check* bad) {                                                            \
    return CQI_BY_DIM(b, P##_prepare, c, s, m, check_all, bad);                                                      \
  }                                                                                                                  \
  static int P##_p2g(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,                 \
                     const cq_ctl* ctl, cq_real* grid, cq_real* cache) {                                             \
    return CQI_BY_DIM(b, P##_p2g, c, s, m, ctl, grid, cache);                                                        \
  }                                                                                                                  \
  static int P##_grid_update(cqi_backend* b, const cq_substep* c, const cq_real* mp, cq_real* v) {                   \
    return CQI_BY_DIM(b, P##_grid_update, c, mp, v);                                                                 \
  }                                                                                                                  \
  static int P##_g2p(cqi_backend* b, const cq_substep* c, cq_particles* s, const cq_params* m, const cq_real* gridv, \
                     cqi_check* bad) {                                                                               \
    return CQI_BY_DIM(b, P##_g2p, c, s, m, gridv, bad);                                                              \
  }                                                                                                                  \
  static int P##_g2p_adj(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,             \
                         const cq_real* gridv, const cq_particles* g1, cq_particles* g0, cq_real* adj,               \
                         const cq_real* C1) {                                                                        \
    return CQI_BY_DIM(b, P##_g2p_adj, c, s, m, gridv, g1, g0, adj, C1);                                              \
  }                                                                                                                  \
  static int P##_grid_update_adj(cqi_backend* b, const cq_substep* c, const cq_real* mp, cq_real* adj) {             \
    return CQI_BY_DIM(b, P##_grid_update_adj, c, mp, adj);                                                           \
  }                                                                                                                  \
  static int P##_p2g_adj(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,             \
                         const cq_ctl* ctl, const cq_real* adj, cq_particles* g0, const cq_param_grads* gp,          \
                         const cq_ctl_grads* gc, const cq_real* cache) {                                             \
    return CQI_BY_DIM(b, P##_p2g_adj, c, s, m, ctl, adj, g0, gp, gc, cache);                                         \
  }                                                                                                                  \
  static int P##_cable_forces(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,      \
                              cq_real* f) {                                                                          \
    return CQI_BY_DIM(b, P##_cable_forces, v, s, u, f);                                                              \
  }                                                                                                                  \
  static int P##_cable_forces_adj(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,  \
                                  const cq_real* gf, cq_real* gx, double* gu) {                                      \
    return CQI_BY_DIM(b, P##_cable_forces_adj, v, s, u, gf, gx, gu);                                                 \
  }                                                                                                                  \
  static int P##_cavity_forces(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,     \
                               cq_real* f) {                                                                         \
    return CQI_BY_DIM(b, P##_cavity_forces, v, s, u, f);                                                             \
  }                                                                                                                  \
  static int P##_cavity_forces_adj(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u, \
                                   const cq_real* gf, cq_particles* g0, const cq_param_grads* gp, cq_real* gact) {   \
    return CQI_BY_DIM(b, P##_cavity_forces_adj, v, s, u, gf, g0, gp, gact);                                          \
  }                                                                                                                  \
  static int P##_grid_axpy(cqi_backend* b, cq_real a, const cq_real* x, cq_real* y) {                                \
    return CQI_BY_DIM(b, P##_grid_axpy, a, x, y);                                                                    \
  }                                                                                                                  \
  static int P##_grid_dot(cqi_backend* b, const cq_real* x, const cq_real* y, double* out) {                         \
    return CQI_BY_DIM(b, P##_grid_dot, x, y, out);                                                                   \
  }                                                                                                                  \
  static int P##_grid_norm_inf(cqi_backend* b, const cq_real* x, double* out) {                                      \
    return CQI_BY_DIM(b, P##_grid_norm_inf, x, out);                                                                 \
  }                                                                                                                  \
  static int P##_grid_sums(cqi_backend* b, const cq_real* x, double* out) {                                          \
    return CQI_BY_DIM(b, P##_grid_sums, x, out);                                                                     \
  }                                                                                                                  \
  static int P##_moments(cqi_backend* b, const cq_particles* s, const cq_params* m, double* out) {                   \
    return CQI_BY_DIM(b, P##_moments, s, m, out);                                                                    \
  }                                                                                                                  \
  static int P##_moments_adj(cqi_backend* b, const cq_particles* s, const cq_params* m, const double* g,             \
                             cq_particles* gs, cq_real* gmass) {                                                     \
    return CQI_BY_DIM(b, P##_moments_adj, s, m, g, gs, gmass);                                                       \
  }

/* The plain passes' dispatch (engine/backends/passes.h), one per row: CQ_PASSES(CQI_CPU_DISPATCH_ROW) in backend_cpu.c,
 * CQ_PASSES(CQI_CUDA_DISPATCH_ROW) in cuda/cuda.cu (the rows the GPU has). And each backend's ops table entry. */
#define CQI_CPU_DISPATCH_ROW(op, body, over, key, gpu, ...) CQI_PASS_DISPATCH(cpu, op, over, __VA_ARGS__)
#define CQI_CUDA_DISPATCH_ROW(op, body, over, key, gpu, ...) CQI_IF(gpu)(CQI_PASS_DISPATCH(cuda, op, over, __VA_ARGS__))
#define CQI_CPU_OP_ROW(op, ...) cpu_##op,
#define CQI_CUDA_OP_ROW(op, body, over, key, gpu, ...) CQI_CAT(CQI_CUDA_OP_, gpu)(op)
#define CQI_CUDA_OP_1(op) cuda_##op,
#define CQI_CUDA_OP_0(op) NULL, /* a host-memory backend's pass */
#endif

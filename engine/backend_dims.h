/* One entry per stage primitive over its 2D and 3D variants: CQI_DIM_DISPATCH(P) defines P_op(b, ...) calling
 * P_op_2 or P_op_3 by b->dim, for every primitive both backends write per dimension. Used by backend_cpu.c (P = cpu)
 * and cuda/cuda.cu (P = cuda) after their per-dimension loops, so the two stay in step with backend.h. */
#ifndef CQ_BACKEND_DIMS_H
#define CQ_BACKEND_DIMS_H

#define CQI_BY_DIM(b, name, ...) ((b)->dim == 2 ? name##_2(b, __VA_ARGS__) : name##_3(b, __VA_ARGS__))

#define CQI_DIM_DISPATCH(P)                                                                                        \
  static int P##_prepare(cqi_backend* b, const cq_substep* c, const cq_particles* s, int check_all, cqi_check* bad) { \
    return CQI_BY_DIM(b, P##_prepare, c, s, check_all, bad);                                                       \
  }                                                                                                                \
  static int P##_p2g(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,               \
                     const cq_ctl* ctl, cq_real* grid, cq_real* cache) {                                            \
    return CQI_BY_DIM(b, P##_p2g, c, s, m, ctl, grid, cache);                                                      \
  }                                                                                                                \
  static int P##_grid_update(cqi_backend* b, const cq_substep* c, const cq_real* mp, cq_real* v) {                 \
    return CQI_BY_DIM(b, P##_grid_update, c, mp, v);                                                               \
  }                                                                                                                \
  static int P##_g2p(cqi_backend* b, const cq_substep* c, cq_particles* s, const cq_params* m,                     \
                     const cq_real* gridv, cqi_check* bad) {                                                        \
    return CQI_BY_DIM(b, P##_g2p, c, s, m, gridv, bad);                                                            \
  }                                                                                                                \
  static int P##_g2p_adj(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,           \
                         const cq_real* gridv, const cq_particles* g1, cq_particles* g0, cq_real* adj,              \
                         const cq_real* C1) {                                                                       \
    return CQI_BY_DIM(b, P##_g2p_adj, c, s, m, gridv, g1, g0, adj, C1);                                            \
  }                                                                                                                \
  static int P##_grid_update_adj(cqi_backend* b, const cq_substep* c, const cq_real* mp, cq_real* adj) {           \
    return CQI_BY_DIM(b, P##_grid_update_adj, c, mp, adj);                                                         \
  }                                                                                                                \
  static int P##_p2g_adj(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,           \
                         const cq_ctl* ctl, const cq_real* adj, cq_particles* g0, const cq_param_grads* gp,         \
                         const cq_ctl_grads* gc, const cq_real* cache) {                                            \
    return CQI_BY_DIM(b, P##_p2g_adj, c, s, m, ctl, adj, g0, gp, gc, cache);                                       \
  }                                                                                                                \
  static int P##_cable_forces(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,    \
                              cq_real* f) {                                                                         \
    return CQI_BY_DIM(b, P##_cable_forces, v, s, u, f);                                                            \
  }                                                                                                                \
  static int P##_cable_forces_adj(cqi_backend* b, const cqi_model_view* v, const cq_particles* s,                  \
                                  const cq_real* u, const cq_real* gf, cq_real* gx, double* gu) {                   \
    return CQI_BY_DIM(b, P##_cable_forces_adj, v, s, u, gf, gx, gu);                                               \
  }                                                                                                                \
  static int P##_cavity_forces(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,   \
                               cq_real* f) {                                                                        \
    return CQI_BY_DIM(b, P##_cavity_forces, v, s, u, f);                                                           \
  }                                                                                                                \
  static int P##_cavity_forces_adj(cqi_backend* b, const cqi_model_view* v, const cq_particles* s,                 \
                                   const cq_real* u, const cq_real* gf, cq_particles* g0, const cq_param_grads* gp, \
                                   cq_real* gact) {                                                                 \
    return CQI_BY_DIM(b, P##_cavity_forces_adj, v, s, u, gf, g0, gp, gact);                                        \
  }                                                                                                                \
  static int P##_grid_axpy(cqi_backend* b, cq_real a, const cq_real* x, cq_real* y) {                              \
    return CQI_BY_DIM(b, P##_grid_axpy, a, x, y);                                                                  \
  }                                                                                                                \
  static int P##_grid_dot(cqi_backend* b, const cq_real* x, const cq_real* y, double* out) {                       \
    return CQI_BY_DIM(b, P##_grid_dot, x, y, out);                                                                 \
  }                                                                                                                \
  static int P##_grid_norm_inf(cqi_backend* b, const cq_real* x, double* out) {                                    \
    return CQI_BY_DIM(b, P##_grid_norm_inf, x, out);                                                               \
  }                                                                                                                \
  static int P##_grid_sums(cqi_backend* b, const cq_real* x, double* out) {                                        \
    return CQI_BY_DIM(b, P##_grid_sums, x, out);                                                                   \
  }                                                                                                                \
  static int P##_implicit_stress(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,    \
                                 const cq_real* v, cq_real* out) {                                                  \
    return CQI_BY_DIM(b, P##_implicit_stress, c, s, m, v, out);                                                    \
  }                                                                                                                \
  static int P##_implicit_hvp(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,       \
                              const cq_real* v, const cq_real* dir, cq_real* out) {                                 \
    return CQI_BY_DIM(b, P##_implicit_hvp, c, s, m, v, dir, out);                                                  \
  }                                                                                                                \
  static int P##_implicit_node(cqi_backend* b, const cq_substep* c, const cq_real* vstar, const cq_real* x,        \
                               cq_real* y) {                                                                        \
    return CQI_BY_DIM(b, P##_implicit_node, c, vstar, x, y);                                                       \
  }                                                                                                                \
  static int P##_implicit_bc(cqi_backend* b, const cq_substep* c, const cq_real* vstar, cq_real* v) {              \
    return CQI_BY_DIM(b, P##_implicit_bc, c, vstar, v);                                                            \
  }                                                                                                               \
  static int P##_implicit_precond(cqi_backend* b, const cq_substep* c, const cq_real* vstar, const cq_real* x,     \
                                  cq_real* y) {                                                                     \
    return CQI_BY_DIM(b, P##_implicit_precond, c, vstar, x, y);                                                    \
  }                                                                                                                \
  static int P##_implicit_stress_adj(cqi_backend* b, const cq_substep* c, const cq_particles* s,                   \
                                     const cq_params* m, const cq_real* v, const cq_real* lam, cq_particles* g0,    \
                                     const cq_param_grads* gp) {                                                    \
    return CQI_BY_DIM(b, P##_implicit_stress_adj, c, s, m, v, lam, g0, gp);                                        \
  }                                                                                                                \
  static int P##_implicit_node_adj(cqi_backend* b, const cq_substep* c, const cq_real* mp, const cq_real* vstar,   \
                                   const cq_real* v, const cq_real* lam, cq_real* out) {                            \
    return CQI_BY_DIM(b, P##_implicit_node_adj, c, mp, vstar, v, lam, out);                                        \
  }                                                                                                                \
  static int P##_implicit_bc_adj(cqi_backend* b, const cq_substep* c, const cq_real* vstar, const cq_real* v,      \
                                 cq_real* g) {                                                                      \
    return CQI_BY_DIM(b, P##_implicit_bc_adj, c, vstar, v, g);                                                     \
  }                                                                                                               \
  static int P##_vol_sums(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,          \
                          const cq_real* v, int diff, cq_real* sums) {                                             \
    return CQI_BY_DIM(b, P##_vol_sums, c, s, m, v, diff, sums);                                                    \
  }                                                                                                               \
  static int P##_vol_pressure(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,      \
                              const cq_real* sums, const cq_real* dsums, cq_real* out) {                           \
    return CQI_BY_DIM(b, P##_vol_pressure, c, s, m, sums, dsums, out);                                             \
  }                                                                                                               \
  static int P##_vol_adj_sums(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,      \
                              const cq_real* g_pg, const cq_real* lam, cq_real* gsums) {                           \
    return CQI_BY_DIM(b, P##_vol_adj_sums, c, s, m, g_pg, lam, gsums);                                            \
  }                                                                                                               \
  static int P##_vol_adj(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,           \
                         const cq_real* v, const cq_real* gsums, cq_real* gJ, cq_particles* gs,                    \
                         const cq_param_grads* gp) {                                                               \
    return CQI_BY_DIM(b, P##_vol_adj, c, s, m, v, gsums, gJ, gs, gp);                                              \
  }                                                                                                               \
  static int P##_vol_strain_adj(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,    \
                                const cq_real* gJ, cq_real* out) {                                                 \
    return CQI_BY_DIM(b, P##_vol_strain_adj, c, s, m, gJ, out);                                                    \
  }                                                                                                               \
  static int P##_vol_project(cqi_backend* b, const cq_substep* c, cq_particles* s, const cq_params* m,             \
                             const cq_real* sums) {                                                                \
    return CQI_BY_DIM(b, P##_vol_project, c, s, m, sums);                                                          \
  }                                                                                                               \
  static int P##_vol_project_share(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m, \
                                   const cq_real* sums, const cq_real* gF, cq_real* share) {                      \
    return CQI_BY_DIM(b, P##_vol_project_share, c, s, m, sums, gF, share);                                         \
  }                                                                                                               \
  static int P##_vol_project_adj(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,   \
                                 const cq_real* sums, const cq_real* gsums, const cq_real* share, cq_real* gF,    \
                                 const cq_param_grads* gp) {                                                       \
    return CQI_BY_DIM(b, P##_vol_project_adj, c, s, m, sums, gsums, share, gF, gp);                                \
  }                                                                                                               \
  static int P##_fill_scatter(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,      \
                              const cq_real* v, cq_real* out) {                                                   \
    return CQI_BY_DIM(b, P##_fill_scatter, c, s, m, v, out);                                                       \
  }                                                                                                               \
  static int P##_fill_node(cqi_backend* b, const cq_substep* c, int mode, cq_real* base, cq_real* ref,            \
                           const cq_real* at, cq_real* out) {                                                     \
    return CQI_BY_DIM(b, P##_fill_node, c, mode, base, ref, at, out);                                              \
  }                                                                                                               \
  static int P##_fill_force(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,        \
                            const cq_real* pn, cq_real scale, cq_real* out) {                                     \
    return CQI_BY_DIM(b, P##_fill_force, c, s, m, pn, scale, out);                                                 \
  }                                                                                                               \
  static int P##_fill_adj(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,          \
                          const cq_real* v, const cq_real* lam, const cq_real* lin, const cq_real* adj,          \
                          cq_particles* gs, const cq_param_grads* gp) {                                           \
    return CQI_BY_DIM(b, P##_fill_adj, c, s, m, v, lam, lin, adj, gs, gp);                                         \
  }                                                                                                               \
  static int P##_moments(cqi_backend* b, const cq_particles* s, const cq_params* m, double* out) {                \
    return CQI_BY_DIM(b, P##_moments, s, m, out);                                                                  \
  }                                                                                                               \
  static int P##_moments_adj(cqi_backend* b, const cq_particles* s, const cq_params* m, const double* g,          \
                             cq_particles* gs, cq_real* gmass) {                                                  \
    return CQI_BY_DIM(b, P##_moments_adj, s, m, g, gs, gmass);                                                     \
  }
#endif

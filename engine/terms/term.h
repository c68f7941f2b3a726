/* Physics terms: what a feature adds to a substep besides each particle's material stress, written as one entry
 * that both integrators iterate over at fixed points of the substep (cqi_terms_*), instead of branches in them. A
 * term is engine/terms/<name>.c (this table's hooks, composed of backend primitives), its kernels and backend passes
 * (engine/terms/<name>.h, or a stage's header as the cables') and one line of registry.h's CQ_TERMS. It owns its buffers: its state (self_size bytes,
 * zeroed when first needed, sim->term_self) and what it allocates there (released by release). Every hook may be
 * NULL: the term has nothing to do at that point. Hooks run for the terms the world has (on), in CQ_TERMS order;
 * each takes the simulation and the term's state first.
 *
 * Where they run. Explicit substep (integrator_explicit.c): prepare, project, begin, stress (at s), force, P2G,
 * impulse, grid update, G2P. Its adjoint: the input again (cqi_terms_input: a projected copy), begin, stress,
 * force, [P2G and impulse when the grid is recomputed], G2P's and the grid's adjoints, impulse_adj, p2g_adj_begin,
 * P2G's adjoint with force_adj and force_adj_act (cqi_p2g_adj), stress_adj, project_adj. Implicit substep
 * (integrator_implicit.c): prepare, project, begin, force, P2G, Newton on dt E + W (gradient: stress at v, the
 * stress kernel, gradient; Hessian products: stress_dir, the kernel, hvp; linearise at each iterate; the active-set
 * rounds and the exact line search of the piecewise-quadratic terms: predict, predict_gradient, line_begin, line),
 * stress at the converged v, G2P, output. Its adjoint: output_adj, the solve's multipliers lam, solve_adj_begin, the
 * stress kernel's adjoint, solve_adj, P2G's adjoint with the forces', project_adj. The direct preconditioner
 * (implicit_factor.c): factor_ctx, factor_shape, factor_blocks, factor_rows.
 *
 * Which integrator calls what: both call project, begin, stress, force and the adjoints of these; only the explicit
 * step impulse, impulse_adj, p2g_adj_begin and stress_adj; only the implicit one stress_dir, output, gradient,
 * linearise, hvp, the piecewise hooks, solve_adj_begin, solve_adj and the factor's. A term that acts under both
 * integrators has both kinds (the grid fluid: impulse and gradient). Gradients: the hooks add into g0 and gp; G2P's
 * adjoint has set g0's x and F before any of them, and P2G's adjoint sets g0's v and C after impulse_adj, output_adj
 * and solve_adj (their shares in v or C would be lost: add those in force_adj or stress_adj). */
#ifndef CQ_TERM_H
#define CQ_TERM_H
#include "integrator.h"

typedef struct cqi_term {
  const char* name;
  size_t self_size;
  int (*on)(const cqi_model* m); /* whether a world with this model has the term */
  void (*release)(cqi_sim* sim, void* self); /* frees what the state holds (not the state itself) */

  /* The substep's input, both integrators. project: s (after prepare) in place, before anything reads it;
   * project_adj: g0 (the gradient of the projected state) in place into that of s (s unprojected), the parameters'
   * shares into gp. begin: what the substep takes from its (projected) input s; it may point c at its buffers. */
  int (*project)(cqi_sim* sim, void* self, const cq_substep* c, cq_particles* s);
  int (*project_adj)(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, cq_particles* g0,
                     const cq_param_grads* gp);
  int (*begin)(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s);

  /* What the stress kernels read through c (P2G's, implicit.h's). stress: at the state s (v NULL: the explicit
   * step) or at the grid velocities v (the implicit solve's linearised state); stress_dir: its differential along the
   * grid vector x (a Hessian product at the v of the last stress). Both point c at their results. */
  int (*stress)(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s, const cq_real* v);
  int (*stress_dir)(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s, const cq_real* x);
  /* The output state's fields the term owns (implicit: after G2P, c from stress at the converged v); its adjoint,
   * from g1 = dL/ds1 before the solve's: dL/dv into gv (the solve's right-hand side), the parameters' into gp, and
   * g0's share of the fields (with no term having output, those fields pass through: g0's = g1's). */
  int (*output)(cqi_sim* sim, void* self, const cq_substep* c, cq_particles* s1);
  int (*output_adj)(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s, const cq_real* v,
                    const cq_particles* g1, cq_particles* g0, const cq_param_grads* gp, cq_real* gv);

  /* Extra particle forces of the substep (seed 000 eqs. 16-17), both integrators, at the start state s under the
   * actuation u: force adds them into fext ([D][n]); the adjoint from gf = dL/dfext: force_adj into g0, gp and each
   * particle's dL/du in gact (before the actuators' sums), force_adj_act into g0 and straight into the actuators'
   * dL/du gu (host, [n_act], after them). */
  int (*force)(cqi_sim* sim, void* self, const cq_particles* s, const cq_real* u, cq_real* fext);
  int (*force_adj)(cqi_sim* sim, void* self, const cq_particles* s, const cq_real* u, const cq_real* gf,
                   cq_particles* g0, const cq_param_grads* gp, cq_real* gact);
  int (*force_adj_act)(cqi_sim* sim, void* self, const cq_particles* s, const cq_real* u, const cq_real* gf,
                       cq_particles* g0, double* gu);

  /* Explicit. impulse: adds the term's impulse to P2G's momentum grid; impulse_adj: from gm = dL/d(that grid) into
   * g0 and gp. p2g_adj_begin: points c at what P2G's adjoint writes for the term (before it); stress_adj: the
   * term's adjoint through what stress computed, after P2G's adjoint. */
  int (*impulse)(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, cq_real* grid);
  int (*impulse_adj)(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* gm,
                     cq_particles* g0, const cq_param_grads* gp);
  int (*p2g_adj_begin)(cqi_sim* sim, void* self, cq_substep* c);
  int (*stress_adj)(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s, cq_particles* g0,
                    const cq_param_grads* gp);

  /* Implicit: an energy W(v) of the grid velocities added to dt E (seed 003 eq. 12). gradient: adds dW/dv at v into
   * g; linearise: fixes W's Hessian at v; hvp: adds that Hessian times x into out. The adjoint with the solve's
   * multipliers lam at the converged v: solve_adj_begin before the stress kernel's adjoint (pointing c at what it
   * reads), solve_adj after it (lam . dW/dv pulled back into g0 and gp). */
  int (*gradient)(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* v, cq_real* g);
  int (*linearise)(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* v);
  int (*hvp)(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* x, cq_real* out);
  int (*solve_adj_begin)(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s, const cq_real* v,
                         const cq_real* lam, cq_particles* g0, const cq_param_grads* gp);
  int (*solve_adj)(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* v,
                   const cq_real* lam, cq_particles* g0, const cq_param_grads* gp);
  /* A W that is piecewise quadratic in v (a kink, as the grid fluid's no-tension): predict puts into the last
   * linearisation the pieces at v + d and counts the nodes whose piece changed; predict_gradient then adds to g the
   * change of dW/dv at v that the switch makes. line_begin takes the direction d of the line v + a d (v: the last
   * linearisation's); line gives w[0] = W(v + a d) - W(v), w[1] = dW/da, w[2] = d2W/da2. */
  int (*predict)(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* d, long* changed);
  int (*predict_gradient)(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, cq_real* g);
  int (*line_begin)(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* d);
  int (*line)(cqi_sim* sim, void* self, const cq_substep* c, double a, double w[3]);

  /* The direct preconditioner (implicit_factor.c), at the last stress's and linearisation's state. factor_ctx points
   * c at what the Newton-matrix blocks read. factor_shape: *reach, the cells its couplings span (2: the stencils'; at
   * most 4), *rank 1 when it adds a rank-one Hessian per node through factor_rows. factor_blocks adds its blocks
   * ([count][width][D][D], slot: node -> row block) before the boundary projections; factor_rows writes node i's
   * rows g_ij ([count][5^D][D], its change per unit velocity of node j within two cells) and weight[i] (its Hessian
   * is the sum over i of weight_i (Pi g_i)(Pi g_i)^T; node: row block -> grid node). */
  int (*factor_ctx)(cqi_sim* sim, void* self, cq_substep* c);
  int (*factor_shape)(cqi_sim* sim, void* self, const cq_substep* c, int* reach, int* rank);
  int (*factor_blocks)(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const int32_t* slot,
                       double* blocks);
  int (*factor_rows)(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const int32_t* slot,
                     const long* node, long count, double* rows, double* weight);
} cqi_term;

/* One per CQ_TERMS entry: cqi_term_<name>, defined in engine/terms/<name>.c. */
#define CQI_DECLARE_TERM(name, doc) extern const cqi_term cqi_term_##name;
CQ_TERMS(CQI_DECLARE_TERM)
#undef CQI_DECLARE_TERM

/* The hooks over the world's terms (term.c), each a no-op for a term without it; the first failure stops. */
int cqi_terms_project(cqi_sim* sim, const cq_substep* c, cq_particles* s);
/* The backward's copy of a substep's input s (a state block of its own: the forward's stages saw s projected, and s
 * must stay as it is): *out views it; out = *s and no copy when no term projects. */
int cqi_terms_input(cqi_sim* sim, const cq_particles* s, cq_particles* out);
int cqi_terms_project_adj(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_particles* g0,
                          const cq_param_grads* gp);
int cqi_terms_begin(cqi_sim* sim, cq_substep* c, const cq_particles* s);
int cqi_terms_stress(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* v);
int cqi_terms_stress_dir(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* x);
int cqi_terms_output(cqi_sim* sim, const cq_substep* c, cq_particles* s1);
int cqi_terms_output_adj(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* v, const cq_particles* g1,
                         cq_particles* g0, const cq_param_grads* gp, cq_real* gv);
int cqi_terms_impulse(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_real* grid);
int cqi_terms_impulse_adj(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* gm, cq_particles* g0,
                          const cq_param_grads* gp);
int cqi_terms_p2g_adj_begin(cqi_sim* sim, cq_substep* c);
int cqi_terms_stress_adj(cqi_sim* sim, cq_substep* c, const cq_particles* s, cq_particles* g0,
                         const cq_param_grads* gp);
int cqi_terms_gradient(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v, cq_real* g);
int cqi_terms_linearise(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v);
int cqi_terms_hvp(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* x, cq_real* out);
int cqi_terms_solve_adj_begin(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* v, const cq_real* lam,
                              cq_particles* g0, const cq_param_grads* gp);
int cqi_terms_solve_adj(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v, const cq_real* lam,
                        cq_particles* g0, const cq_param_grads* gp);
/* Whether the world has a piecewise-quadratic term (predict and line): Newton's active-set rounds and exact line. */
int cqi_terms_piecewise(const cqi_sim* sim);
/* predict's counts summed; predict_gradient; line_begin; line's w summed over the piecewise terms. */
int cqi_terms_predict(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* d, long* changed);
int cqi_terms_predict_gradient(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_real* g);
int cqi_terms_line_begin(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* d);
int cqi_terms_line(cqi_sim* sim, const cq_substep* c, double a, double w[3]);
/* The first step a in (0, 1] of the Newton solve's line search along d (after cqi_terms_line_begin): the root of the
 * derivative of the model s_rest a + kappa a^2 / 2 + W(v + a d) - W(v) (s_rest, kappa: the slope and curvature of
 * the rest of dt E at a = 0; slope0 the whole slope; W the piecewise terms' sum), to 1 % of slope0. */
int cqi_terms_line_step(cqi_sim* sim, const cq_substep* c, double s_rest, double kappa, double slope0, double* step);
int cqi_terms_factor_ctx(cqi_sim* sim, cq_substep* c);
/* The widest reach (2 without a term that asks more) and the summed ranks. */
int cqi_terms_factor_shape(cqi_sim* sim, const cq_substep* c, int* reach, int* rank);
int cqi_terms_factor_blocks(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const int32_t* slot,
                            double* blocks);
int cqi_terms_factor_rows(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const int32_t* slot,
                          const long* node, long count, double* rows, double* weight);
/* The extra particle forces of a substep (the force terms: cables, the closed cavities' corrections) plus the
 * control's user force, written into fext ([D][n], B); *out = fext, or NULL when there are none. Shared by every
 * integrator. */
int cqi_extra_forces(cqi_sim* sim, const cq_particles* s, const cq_ctl* ctl, cq_real* fext, const cq_real** out);
/* The adjoint of P2G and of what feeds it, shared by every integrator: dL/d(P2G's grid) in adj (the grid momentum
 * and mass) into g0 and the parameter gradients (p2g_adj; cache: the forward P2G's stresses or NULL), each
 * particle's dL/du (gact, B scratch [n]; plus gact_more [n] unless NULL: the implicit chamber pressure's) reduced
 * per actuator into out->gu, and through the extra forces of cqi_extra_forces (kc->force != NULL): the force terms'
 * adjoints, the user's force into out->gforce (gfext: B scratch [D][n]). ctl is the step's control, kc the control
 * P2G ran with. */
int cqi_p2g_adj(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_ctl* ctl, const cq_ctl* kc,
                const cq_real* adj, const cq_real* cache, cq_real* gact, const cq_real* gact_more, cq_real* gfext,
                cq_particles* g0, const cqi_adj_out* out);
/* Frees every term's buffers and state, and the input copy (the world's release). */
void cqi_terms_release(cqi_sim* sim);
/* A term's state (allocated zeroed when first asked for; NULL: out of memory). */
void* cqi_term_self(cqi_sim* sim, const cqi_term* t);
/* The state of term CQI_TERM_<name> if it has one yet, else NULL (nothing allocated; the terms' own functions below
 * use this, not term.c, which uses them). */
static inline void* cqi_term_peek(const cqi_sim* sim, int index) { return sim->term_self[index]; }

/* The terms' own world functions (core/world.c, core/stress.c, tests). The averaged volumetric term: the groups of
 * volumetric_groups = "initial" are taken again from the next state stepped from (cq_world_reset_groups; returns
 * whether some were taken), and their host copy (NULL: none taken); take_groups takes them now from s (host memory:
 * cq_world_take_groups, the robot's initial state). The grid fluid: the rest fill is taken again
 * (cq_world_reset_fill); its base and last gradient's linearisation (fill.h; NULL before the first). */
int cqi_volumetric_reset_groups(cqi_sim* sim);
int cqi_volumetric_projects(const cqi_model* m); /* volumetric.c: whether the groups' volume projection runs */
int cqi_volumetric_take_groups(cqi_sim* sim, const cq_substep* c, const cq_particles* s);
const int32_t* cqi_volumetric_groups_host(cqi_sim* sim);
int cqi_fill_reset(cqi_sim* sim);
/* The chamber walls (wall.c): the reference positions taken now from s (host memory: the robot's initial state), or
 * forgotten (the next state stepped from gives them); cqi_wall_view points s->F (and g->F unless g is NULL) at the
 * walls' F_w (and dL/dF_w) of the current substep where there are any. */
int cqi_wall_take(cqi_sim* sim, const cq_particles* s);
void cqi_wall_reset(cqi_sim* sim);
void cqi_wall_view(cqi_sim* sim, cq_particles* s, cq_particles* g);
void cqi_fill_vectors(cqi_sim* sim, const cq_real** base, const cq_real** lin);
#endif

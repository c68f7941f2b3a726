/* Time integrators: the recipe of one substep and its adjoint, written once on top of the backend primitives
 * (backend.h). One file each (integrator_<name>.c), listed in registry.h (CQ_INTEGRATORS); adding one never touches
 * a backend. */
#ifndef CQ_INTEGRATOR_H
#define CQ_INTEGRATOR_H
#include <stdlib.h>
#include "backend.h"

/* A slot of the memo's records of substeps' P2G (backend ops keep/restore), in host memory: buf (cap bytes) holds
 * relative substep r of recording rec when r >= 0. Before it runs a substep forward or its adjoint, the memo points
 * sim->kept at the substep's slot with want_r and want_rec set; the integrator fills it forward (cqi_keep_store)
 * and uses it in the adjoint when it holds that substep (cqi_keep_restore). *total counts the bytes of all slots,
 * which stay within budget (a slot that would pass it is left empty, and the adjoint recomputes). */
typedef struct cqi_kept {
  void* buf;
  size_t cap;
  long r, rec, want_r, want_rec;
  size_t *total, budget;
} cqi_kept;

/* What an integrator works with. */
typedef struct cqi_sim {
  cqi_backend* be;            /* the backend whose primitives it calls */
  const cqi_model* model;     /* host model (grid, walls, dt) */
  const cqi_model_view* view; /* the model in backend memory */
  cqi_err* err;               /* where failures are reported */
  void* ws;                   /* the integrator's own workspace (grid vectors, ...), in backend memory */
  cq_solver_stats stats;      /* the implicit solves' work (cq_world_solver_stats) */
  cqi_kept* kept;             /* the memo's record slot for the substep being run (NULL: none) */
  /* volumetric = "averaged" (volumetric.h, volumetric.c), in backend memory, allocated when first needed: the group
   * sums (grid vectors: at the last state or velocities, and along the last Hessian product's direction) and the
   * per-particle group pressures and their differentials ([n]) */
  cq_real *vol_sums, *vol_dsums, *vol_p, *vol_dp;
  cq_real *vol_gsums, *vol_g; /* backward: the groups' sums of dL/d(pressure) and per-particle gradients */
  cq_real* vol_gJs; /* implicit backward: [n] dL/dJl_p through the output state's pg (cqi_vol_state_adjoint) */
  /* the groups' volume projection (cqi_vol_project): its sums (a grid vector), its adjoint's shares ([n]) and the
   * backward's projected copy of a substep's input (a state block) */
  cq_real *vol_psums, *vol_share, *vol_state;
  /* volumetric_groups = "initial": each particle's group node, from the first state stepped from ([n], in backend
   * memory, and its host copy for the stress query; vol_groups_set: taken; cq_world_reset_groups clears it) */
  int32_t *vol_group_of, *vol_group_host;
  int vol_groups_set;
  /* fluid = "fill" (fill.h, fill.c), grid vectors in backend memory allocated when first needed: the substep's base
   * (phi^n, K, phi0), a linearisation at the last gradient's velocities, one at the Hessian products' iterate, a
   * product's direction, and the rest fill's excess over 1 (ref_set: taken from a state; cq_world_reset_fill clears
   * it) */
  struct {
    cq_real *base, *lin, *at, *dir, *ref;
    cq_real* line; /* the line search's node terms (cqi_fill_line) */
    int ref_set;
  } fill;
} cqi_sim;

/* Keeps the substep's P2G (grid: its momentum and mass, with what prepare set) in sim->kept, when there is a slot
 * and the backend can. */
static inline void cqi_keep_store(cqi_sim* sim, const cq_real* grid) {
  cqi_kept* k = sim->kept;
  const cqi_backend_ops* op = sim->be->ops;
  if (!k || !op->keep) return;
  k->r = -1;
  size_t bytes = op->keep_bytes(sim->be); /* 0: none (CQ_KEEP=0) */
  if (bytes == 0) return;
  if (bytes > k->cap) {
    if (*k->total + (bytes - k->cap) > k->budget) return;
    void* p = realloc(k->buf, bytes);
    if (!p) return;
    *k->total += bytes - k->cap;
    k->buf = p, k->cap = bytes;
  }
  if (op->keep(sim->be, grid, k->buf) == CQ_OK) k->r = k->want_r, k->rec = k->want_rec;
}

/* 1 when sim->kept holds the substep being undone: prepare's results and grid (P2G's momentum and mass) are then
 * restored from it; 0 when the adjoint must recompute them. */
static inline int cqi_keep_restore(cqi_sim* sim, cq_real* grid) {
  cqi_kept* k = sim->kept;
  const cqi_backend_ops* op = sim->be->ops;
  int ok =
      k && k->r == k->want_r && k->rec == k->want_rec && op->restore && op->restore(sim->be, grid, k->buf) == CQ_OK;
  sim->stats.kept_substeps += ok;
  return ok;
}

/* Outputs of an adjoint substep: parameter gradients (B, accumulated), dL/du of this control step (host, [n_act],
 * accumulated) and dL/d(user force) and dL/d(user stress) (B, accumulated; NULL = not wanted). */
typedef struct cqi_adj_out {
  const cq_param_grads* gp;
  double* gu;
  cq_real* gforce;
  cq_real* gstress;
} cqi_adj_out;

typedef struct cqi_integrator {
  int kind;                    /* CQ_INTEGRATOR_* */
  int (*create)(cqi_sim* sim); /* allocates sim->ws */
  void (*destroy)(cqi_sim* sim);
  /* One substep of s (B) under control ctl (B; ctl->force is the user's force or NULL), substep number k. fresh: s
   * did not come out of this integrator's previous substep (so its input is checked in full). A failed particle
   * check returns CQ_ERR_BLOWUP with *bad naming it (bad->after: the state is left after the substep). */
  int (*substep)(cqi_sim* sim, cq_particles* s, const cq_ctl* ctl, long k, int fresh, cqi_check* bad);
  /* Adjoint of substep k: s the state before it, s1 after it, g1 = dL/ds1; writes g0 = dL/ds and accumulates out. */
  int (*substep_adj)(cqi_sim* sim, const cq_particles* s, const cq_particles* s1, const cq_ctl* ctl, long k,
                     const cq_particles* g1, cq_particles* g0, const cqi_adj_out* out);
  int batch; /* 1: its substeps read nothing back between them, so they may run in a backend batch (backend.h) */
  int cfl;   /* 1: stable only below the explicit limit stable_dt (model.c cqi_stable_dt_exceeded); 0: no such limit */
} cqi_integrator;

/* The extra particle forces of a substep (seed 000 eqs. 16-17): the control's user force plus the cable forces
 * plus the closed cavities' corrections (chamber.h), written into fext ([D][n], B); *out = fext, or NULL when there
 * are none. Shared by every integrator. */
static inline int cqi_extra_forces(cqi_sim* sim, const cq_particles* s, const cq_ctl* ctl, cq_real* fext,
                                   const cq_real** out) {
  cqi_backend* be = sim->be;
  const cqi_model_view* v = sim->view;
  *out = NULL;
  if (v->n_cables == 0 && v->n_cavities == 0 && !ctl->force) return CQ_OK;
  size_t bytes = sizeof(cq_real) * (size_t)be->n * be->dim;
  int st = ctl->force ? be->ops->copy(be, fext, ctl->force, bytes) : be->ops->zero(be, fext, bytes);
  if (st == CQ_OK && v->n_cables > 0) st = be->ops->cable_forces(be, v, s, ctl->u, fext);
  if (st == CQ_OK && v->n_cavities > 0) st = be->ops->cavity_forces(be, v, s, ctl->u, fext);
  if (st == CQ_OK) *out = fext;
  return st;
}

/* The adjoint of P2G and of what feeds it, shared by every integrator: dL/d(P2G's grid) in adj (the grid momentum
 * and mass) into g0 and the parameter gradients (p2g_adj; cache: the forward P2G's stresses or NULL), each
 * particle's dL/du (gact, B scratch [n]; plus gact_more [n] unless NULL: the implicit chamber pressure's) reduced
 * per actuator into out->gu, and through the extra forces of cqi_extra_forces (kc->force != NULL): the cavities into
 * x, F, their parameters and u, the cables into x and u, the user's force into out->gforce (gfext: B scratch [D][n]).
 * ctl is the step's control, kc the control P2G ran with. */
static inline int cqi_p2g_adj(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_ctl* ctl,
                              const cq_ctl* kc, const cq_real* adj, const cq_real* cache, cq_real* gact,
                              const cq_real* gact_more, cq_real* gfext, cq_particles* g0, const cqi_adj_out* out) {
  cqi_backend* be = sim->be;
  const cqi_backend_ops* op = be->ops;
  cq_ctl_grads gc = {gact, kc->force ? gfext : NULL, out->gstress};
  int st = op->p2g_adj(be, c, s, &sim->view->params, kc, adj, g0, out->gp, &gc, cache);
  if (st == CQ_OK && gact_more) st = op->axpy(be, be->n, 1, gact_more, gact); /* the implicit pressure's dL/du */
  if (st == CQ_OK && kc->force && sim->view->n_cavities > 0) /* adds to each particle's dL/du before its sum */
    st = op->cavity_forces_adj(be, sim->view, s, ctl->u, gfext, g0, out->gp, gact);
  if (st == CQ_OK && be->n_act > 0) st = op->act_grad(be, sim->view->params.act_id, gact, out->gu);
  if (st != CQ_OK || !kc->force) return st;
  if (sim->view->n_cables > 0) st = op->cable_forces_adj(be, sim->view, s, ctl->u, gfext, g0->x, out->gu);
  if (st == CQ_OK && out->gforce) st = op->axpy(be, (long)be->n * be->dim, 1, gfext, out->gforce);
  return st;
}

/* The error of an adjoint substep whose recomputed input state fails a particle check. */
static inline int cqi_recompute_failed(cqi_sim* sim, long k, const cqi_check* bad) {
  return cqi_errorf(sim->err, CQ_ERR_STATE,
                    "backward: the recomputed state of substep %ld fails the %s check "
                    "(particle %d); was the world changed after recording?",
                    k + 1, cq_name(CQ_LIST_CHECK, bad->check, NULL), bad->particle + 1);
}

/* The averaged volumetric term of a substep (volumetric.c; c->vol_averaged set): cqi_vol_update computes the groups'
 * sums at the state s (v NULL: J = det F, the explicit step) or at the grid velocities v (the implicit solve's Jl)
 * and each particle's group pressure, and points c->vol_sums and c->vol_p at them; cqi_vol_direction computes the
 * pressures' differential along the grid vector dir (for a Hessian product at the velocities of the last update)
 * into c->vol_dp. The backend's active region must be the substep's (after prepare). */
int cqi_vol_update(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* v);
int cqi_vol_direction(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* dir);
/* The groups' adjoint of a substep (c->vol_sums and vol_p of its forward, from cqi_vol_update). Explicit (lam NULL,
 * v NULL): after P2G's adjoint wrote dL/d(group pressure) into sim->vol_g, each particle's share into g0->F and gp.
 * Implicit: from the multipliers lam at the converged velocities v, before implicit_stress_adj: dL/dJl into
 * sim->vol_g, pointed to by c->vol_gJ, and the parameters' shares into gp. */
int cqi_vol_adjoint(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* v, const cq_real* lam,
                    cq_particles* g0, const cq_param_grads* gp);
/* The implicit step's output pg (the groups' pressures at the converged velocities v; the next substep's lagged
 * pressure, implicit.h E_geo): cqi_vol_state writes it into s1->pg (s the input state, c->vol_p / vol_sums from
 * cqi_vol_update at v). Its adjoint, with g_pg = dL/ds1->pg: the parameters' shares into gp, dL/dv into gv (a grid
 * vector: the implicit adjoint's right-hand side) and dL/dJl per particle into sim->vol_gJs, whose shares in F and x
 * implicit_stress_adj adds with the solve's (c->vol_gJ: cqi_vol_adjoint adds vol_gJs there). */
int cqi_vol_state(cqi_sim* sim, const cq_substep* c, cq_particles* s1);
/* The groups' volume projection (volumetric.h vol_project), the first stage of every substep after prepare:
 * cqi_vol_project scales s's F in place; cqi_vol_projected writes the projection of s into sim->vol_state and views
 * it in *out (the backward's input state; cqi_vol_scratch: the copy alone); cqi_vol_project_adjoint turns g0->F, the
 * gradient of the projected F, in place into that of s's F (s unprojected) and adds dL/dvol0 into gp. They use
 * sim->vol_psums and vol_share; the adjoint also overwrites vol_gsums (run it after cqi_vol_adjoint). */
int cqi_vol_project(cqi_sim* sim, const cq_substep* c, cq_particles* s);
/* The fill water of a substep (fill.c; c->fill set, the backend's active region the substep's): cqi_fill_begin takes
 * the base from s (and the rest fill, the first time with fluid_rest = "initial"); cqi_fill_gradient adds dW/dv at
 * the grid velocities v into the grid vector g; cqi_fill_linearise fixes the Hessian's active nodes at v (the
 * pieces of W there; cqi_fill_predict may change them), and cqi_fill_hvp adds the Hessian of W on them times x into
 * out; cqi_fill_explicit adds the explicit step's impulse
 * -dt dW/dx into P2G's momentum grid. */
int cqi_fill_begin(cqi_sim* sim, const cq_substep* c, const cq_particles* s);
int cqi_fill_gradient(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v, cq_real* g);
int cqi_fill_linearise(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v);
int cqi_fill_hvp(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* x, cq_real* out);
int cqi_fill_explicit(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_real* grid);
/* The Newton solve's active-set round (integrator_implicit.c fill_active_set): cqi_fill_predict puts into the
 * linearisation at v of the last cqi_fill_linearise the nodes' pieces of W at v + d (the Hessian weights cqi_fill_hvp
 * and the factor then use) and counts in *changed the nodes whose piece changed; cqi_fill_predict_gradient then adds
 * to g the change of dW/dv at v that the switch to those pieces makes (g + it: the gradient at v of the piecewise
 * quadratic W on them; fill.h fill_predict_node). */
int cqi_fill_predict(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* d, long* changed);
int cqi_fill_predict_gradient(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_real* g);
/* W along the Newton step's line v + a d (v: the iterate of the last cqi_fill_linearise): cqi_fill_line_begin takes
 * d's change of the fill (it replaces cqi_fill_hvp's direction), then cqi_fill_line gives w[0] = W(v + a d) - W(v),
 * w[1] = dW/da and w[2] = d2W/da2 there (node passes and a sum: no particle pass). */
int cqi_fill_line_begin(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* d);
int cqi_fill_line(cqi_sim* sim, const cq_substep* c, double a, double w[3]);
/* The first step a in (0, 1] of the line search: the root of the derivative of the model s_rest a + kappa a^2 / 2 +
 * W(v + a d) - W(v) of dt E along d (s_rest, kappa: the slope and curvature of the rest of dt E at a = 0; slope0 the
 * whole slope), to 1 % of slope0. The model's derivative is piecewise linear and increasing (W is convex), so Newton's
 * method on it inside a bracket takes a few cqi_fill_line calls. After cqi_fill_line_begin. */
int cqi_fill_step(cqi_sim* sim, const cq_substep* c, double s_rest, double kappa, double slope0, double* step);
/* The adjoint of the implicit solve's share: lam . dW/dv at the converged v, pulled back into gs (x, F) and gp (vol0,
 * and a fluid's bulk), the base of cqi_fill_begin at s. */
int cqi_fill_adjoint(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v, const cq_real* lam,
                     cq_particles* gs, const cq_param_grads* gp);
void cqi_fill_release(cqi_sim* sim);
/* The explicit step's: gm = dL/d(P2G's momentum and mass) of the substep. */
int cqi_fill_explicit_adjoint(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* gm,
                              cq_particles* gs, const cq_param_grads* gp);
int cqi_vol_projected(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_particles* out);
int cqi_vol_scratch(cqi_sim* sim, const cq_particles* s, cq_particles* out); /* the copy alone, unprojected */
int cqi_vol_project_adjoint(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_particles* g0,
                            const cq_param_grads* gp);
int cqi_vol_state_adjoint(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* v, const cq_real* g_pg,
                          const cq_param_grads* gp, cq_real* gv);

/* One per CQ_INTEGRATORS entry: cqi_integrator_<name>, defined in integrator_<name>.c. */
#define CQI_DECLARE(ID, name, doc) extern const cqi_integrator cqi_integrator_##name;
CQ_INTEGRATORS(CQI_DECLARE)
#undef CQI_DECLARE
#endif

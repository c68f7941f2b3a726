/* The implicit MLS-MPM substep (seed 003 sec. 2.3): P2G of mass and APIC momentum without the elastic stress, then
 * the grid velocities that minimise the incremental potential of eq. 12 (Newton's method, matrix-free conjugate
 * gradients, a backtracking line search, the boundaries as projections), then the explicit G2P. The per-particle and
 * per-node pieces are in implicit.h; this file only composes backend primitives and scalars.
 *
 * What the solve treats implicitly: the elastic stress P(F) of every material (with its incompressibility and bulk
 * terms) and, with implicit.pressure = "implicit", the chamber walls' pressure (implicit.h). What it treats as fixed
 * over the substep, evaluated at the start state as the explicit step does: gravity, damping, force actuators, by
 * default the chamber pressure, the cavities' net-force correction, cables, the user's force, the actuation stress
 * F A F^T and the viscous stress (so a viscous material keeps its viscous time step limit). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "implicit_factor.h"
#include "krylov.h"
#include "term.h"

enum { MAX_HALVINGS = 30 };
/* Levels of split substeps (implicit.max_split <= 30, model.c). */
enum { MAX_LEVELS = 31 };
/* implicit.max_split's default: a substep may be cut into up to 2^6 = 64 pieces. */
enum { DEFAULT_MAX_SPLIT = 6 };
/* implicit.error_tol's default, in cells (step_error). */
#define DEFAULT_ERROR_TOL 0.02
/* A Newton direction that took more conjugate-gradient iterations than this refactorises the Hessian at the next
 * iterate: an iteration with factors costs a Hessian product and two triangular solves, a factorisation far more
 * (5 s on the finger of examples/finger_pressure.lua), so stale factors are kept while they still work. */
enum { REFACTOR_CG = 8 };
/* implicit.fill_rounds' default with the factor preconditioner: the active-set rounds per Newton iteration of the
 * piecewise-quadratic terms (active_set; the grid fluid's, whence the option's name). */
enum { DEFAULT_ROUNDS = 4 };
/* What active_set chose: no direction of its own (the caller's first, and its step: no node changed piece, or,
 * STALE_NONE, no round's direction descends), or the best of its rounds. SETTLED: no node changes piece at its end
 * and it was the last solved, so the factors' pieces are the next iterate's; UNSETTLED, STALE_NONE: they are no
 * iterate's (the caller marks them stale). */
enum { SET_NONE = 0, SET_SETTLED = 1, SET_UNSETTLED = 2, SET_STALE_NONE = 3 };

/* Workspace: grid vectors (D+1 reals per node) in backend memory, the residual history on the host. */
typedef struct {
  cq_real* grid;                   /* P2G's momentum and mass */
  cq_real* vstar;                  /* v* (eq. 12's v^n + dt f_ext / m, after damping) and the mass in slot D */
  cq_real *v, *g;                  /* the iterate and grad (dt E) there (projected) */
  cq_real *d, *r, *p, *q, *hp, *z; /* Newton direction; CG residual, direction, scratch, H p, preconditioned r */
  cq_real *vt, *gt, *tmp;          /* line-search trial point, its gradient, scratch */
  cq_real* fext;                   /* [D][n] extra particle forces (the user's and the force terms') */
  cq_real* u0;                     /* [n_act] zero actuation (Newton's start point) */
  cq_real* gfext;                  /* [D][n] their gradient (backward) */
  cq_real* gact;                   /* [n] dL/du of each particle's actuator (backward) */
  cq_real* gpress;                 /* [n] its share through the implicit chamber pressure (backward) */
  double* hist;                    /* [max_newton + 1] ||grad||_inf / scale per Newton iteration */
  double tol;
  int max_newton, max_cg;
  int rounds;         /* the piecewise-quadratic terms' active-set rounds per Newton iteration (0: none; active_set) */
  cqi_factor* factor; /* implicit.precond = "factor": the substep's factorised Hessian (NULL: the masses) */
  int factored;       /* factor holds this substep's factors */
  /* split substeps (piece_forward, piece_adj): per level of halving, state blocks allocated when first needed */
  int max_split;             /* halvings allowed (0: none) */
  long piece, level;         /* the piece being solved (for messages) */
  cq_real* keep[MAX_LEVELS]; /* a piece's start, to retry it as two halves */
  cq_real* att[MAX_LEVELS];  /* backward: the piece's own output, to see whether the forward split it */
  cq_real* mid[MAX_LEVELS];  /* backward: the state between a split piece's halves */
  cq_real* gmid[MAX_LEVELS]; /* backward: dL/d(that state) */
  double error_tol;          /* step_error's bound in metres (0: no estimate) */
  int adapt;                 /* implicit.adapt: halve a piece above error_tol */
  cq_real* vin;              /* [D][n] a piece's input velocities (step_error) */
  double* hv;                /* [2][D][n] host copies of the input and output velocities (step_error) */
} implicit_ws;

#define TRY(call)                 \
  do {                            \
    int st_ = (call);             \
    if (st_ != CQ_OK) return st_; \
  } while (0)

static int implicit_create(cqi_sim* sim) {
  cqi_backend* be = sim->be;
  const cq_world_desc* d = &sim->model->desc;
  implicit_ws* ws = calloc(1, sizeof *ws);
  if (!ws) return cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory");
  sim->ws = ws;
  ws->tol = d->implicit_tol > 0 ? d->implicit_tol : (CQ_REAL_BITS == 32 ? 1e-4 : 1e-6);
  ws->max_newton = d->implicit_max_newton > 0 ? d->implicit_max_newton : 50;
  ws->max_cg = d->implicit_max_cg > 0 ? d->implicit_max_cg : 500;
  ws->max_split = d->implicit_max_split == 0  ? DEFAULT_MAX_SPLIT
                  : d->implicit_max_split < 0 ? 0
                                              : d->implicit_max_split;
  ws->hist = malloc(sizeof(double) * (ws->max_newton + 1));
  double etol = d->implicit_error_tol == 0 ? DEFAULT_ERROR_TOL : d->implicit_error_tol;
  if (etol > 0) {
    ws->error_tol = etol * d->dx;
    ws->adapt = d->implicit_adapt;
    ws->vin = be->ops->alloc(be, sizeof(cq_real) * be->n * be->dim);
    ws->hv = malloc(sizeof(double) * 2 * be->n * be->dim);
    if (!ws->vin || !ws->hv) return cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory for implicit.error_tol");
  }
  int precond = d->implicit_precond;
  if (precond == CQ_PRECOND_FACTOR && !cqi_factor_supported(be))
    return cqi_errorf(sim->err, CQ_ERR_ARG,
                      "implicit.precond = \"factor\" needs the CPU backend (the %s backend "
                      "cannot assemble the Hessian yet); use \"mass\" or \"auto\"",
                      cq_name(CQ_LIST_BACKEND, be->ops->kind, NULL));
  if (precond == CQ_PRECOND_FACTOR || (precond == CQ_PRECOND_AUTO && cqi_factor_supported(be)))
    if (!(ws->factor = cqi_factor_create())) return cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory");
  /* the rounds' solves need the factors: with the masses' inexact CG the rounds do not settle and cost 3x the CG
   * (docs/results/history.md), so by default none there */
  ws->rounds = d->implicit_fill_rounds > 0                  ? d->implicit_fill_rounds
               : d->implicit_fill_rounds == 0 && ws->factor ? DEFAULT_ROUNDS
                                                            : 0;
  size_t gb = sizeof(cq_real) * be->n_nodes * (be->dim + 1);
  cq_real** grids[] = {&ws->grid, &ws->vstar, &ws->v, &ws->g,  &ws->d,  &ws->r,  &ws->p,
                       &ws->q,    &ws->hp,    &ws->z, &ws->vt, &ws->gt, &ws->tmp};
  int ok = ws->hist != NULL;
  for (size_t i = 0; i < sizeof grids / sizeof grids[0]; i++) ok &= (*grids[i] = be->ops->alloc(be, gb)) != NULL;
  ws->fext = be->ops->alloc(be, sizeof(cq_real) * be->n * be->dim);
  size_t ub = sizeof(cq_real) * (be->n_act > 0 ? be->n_act : 1);
  ws->u0 = be->ops->alloc(be, ub);
  ok &= ws->u0 && be->ops->zero(be, ws->u0, ub) == CQ_OK;
  if (!ok || !ws->fext)
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "res: out of memory for the implicit solver's grid vectors (%ld nodes)",
                      be->n_nodes);
  return CQ_OK;
}

static void implicit_destroy(cqi_sim* sim) {
  implicit_ws* ws = sim->ws;
  if (!ws) return;
  cqi_backend* be = sim->be;
  cq_real* bufs[] = {ws->grid, ws->vstar, ws->v,   ws->g,  ws->d,    ws->r,     ws->p,    ws->q,      ws->hp,
                     ws->z,    ws->vt,    ws->tmp, ws->gt, ws->fext, ws->gfext, ws->gact, ws->gpress, ws->u0,
                     ws->vin};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    if (bufs[i]) be->ops->release(be, bufs[i]);
  for (int l = 0; l < MAX_LEVELS; l++) {
    cq_real* states[] = {ws->keep[l], ws->att[l], ws->mid[l], ws->gmid[l]};
    for (int i = 0; i < 4; i++)
      if (states[i]) be->ops->release(be, states[i]);
  }
  free(ws->hist);
  free(ws->hv);
  cqi_factor_free(ws->factor);
  free(ws);
  sim->ws = NULL;
}

/* g = grad (dt E) at v, projected: the elastic scatter plus m (v - v*). el_norm (may be NULL) receives the infinity
 * norm of the projected elastic part alone. */
static int gradient(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v, cq_real* g,
                    double* el_norm) {
  implicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  cq_substep cv = *c;
  TRY(cqi_terms_stress(sim, &cv, s, v)); /* the terms' stress quantities at v (term.h) */
  TRY(be->ops->grid_clear(be, g));
  TRY(be->ops->implicit_stress(be, &cv, s, &sim->view->params, v, g));
  TRY(cqi_terms_gradient(sim, c, s, v, g)); /* the terms' energies W(v) */
  if (el_norm) {
    TRY(be->ops->implicit_node(be, c, ws->vstar, NULL, g));
    TRY(be->ops->grid_norm_inf(be, g, el_norm));
  }
  TRY(cqi_grid_lincomb(be, ws->tmp, 1, v, -1, ws->vstar));
  return be->ops->implicit_node(be, c, ws->vstar, ws->tmp, g);
}

/* Adds the unprojected Hessian of dt E at v (the terms': at their last linearisation or prediction) times x to out;
 * cv: the context of the product (the terms' stress differentials along x go into it). */
static int hessian_add(cqi_sim* sim, cq_substep* cv, const cq_substep* c, const cq_particles* s, const cq_real* v,
                       const cq_real* x, cq_real* out) {
  TRY(cqi_terms_stress_dir(sim, cv, s, x));
  TRY(sim->be->ops->implicit_hvp(sim->be, cv, s, &sim->view->params, v, x, out));
  return cqi_terms_hvp(sim, c, s, x, out);
}

/* out = H x, the projected Hessian of dt E at v applied to x. */
static int hessian_times(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v, const cq_real* x,
                         cq_real* out) {
  cqi_backend* be = sim->be;
  cq_substep cv = *c;
  TRY(be->ops->grid_clear(be, out));
  TRY(hessian_add(sim, &cv, c, s, v, x, out));
  return be->ops->implicit_node(be, c, ((implicit_ws*)sim->ws)->vstar, x, out);
}

/* z = M^-1 r, the conjugate gradients' preconditioner: the substep's factorised Hessian when there is one (then
 * projected, as every CG vector is), else the nodal masses (implicit_precond). */
static int precondition(cqi_sim* sim, const cq_substep* c, const cq_real* r, cq_real* z) {
  implicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  if (!ws->factored) return be->ops->implicit_precond(be, c, ws->vstar, r, z);
  TRY(be->ops->grid_clear(be, z));
  TRY(cqi_factor_solve(ws->factor, r, z));
  return be->ops->implicit_node(be, c, ws->vstar, NULL, z);
}

/* Newton direction d: conjugate gradients on H d = -g from d = 0, preconditioned (precondition: the factorised
 * semi-definite projection of H, or the nodal masses), until ||r||_2 <= eta ||g||_2 or max_cg iterations. Negative
 * curvature (p.Hp <= 0, an indefinite Hessian of a compressed material) stops it with the direction so far, or, if
 * there is none yet, the preconditioned -g (with the factors, the projected Newton step): each iterate stays a
 * descent direction, since the preconditioner is definite. dHd receives d.H d (the sum of alpha_k r_k.z_k over the
 * iterations, as the directions are H-conjugate; 0 for the fallback, whose curvature is not known). The terms'
 * share of H is that of their last linearise or predict (term.h). */
/* The operator of the Krylov solves (krylov.h): H at ws->v and the preconditioner above. */
typedef struct {
  cqi_sim* sim;
  const cq_substep* c;
  const cq_particles* s;
} hessian_ctx;
static int hessian_apply(void* ctx, const cq_real* x, cq_real* y) {
  hessian_ctx* h = ctx;
  return hessian_times(h->sim, h->c, h->s, ((implicit_ws*)h->sim->ws)->v, x, y);
}
static int hessian_precond(void* ctx, const cq_real* r, cq_real* z) {
  hessian_ctx* h = ctx;
  return precondition(h->sim, h->c, r, z);
}
/* Runs a Krylov solver on H with the workspace's vectors (keeping CG's swap of p and q). */
static int krylov(int (*solver)(cqi_backend*, const cqi_linop*, cq_real, const cq_real*, cq_real*, double, int,
                                cqi_krylov_ws*, cqi_krylov_info*),
                  cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_real sign, const cq_real* b, cq_real* x,
                  double tol, cqi_krylov_info* info) {
  implicit_ws* ws = sim->ws;
  hessian_ctx h = {sim, c, s};
  cqi_linop A = {hessian_apply, hessian_precond, &h};
  cqi_krylov_ws w = {ws->r, ws->z, ws->p, ws->q, ws->hp, ws->g, ws->vt};
  int st = solver(sim->be, &A, sign, b, x, tol, ws->max_cg, &w, info);
  ws->p = w.p, ws->q = w.q;
  return st;
}

static int cg_direction(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* g, double eta,
                        int* iters, double* dHd) {
  implicit_ws* ws = sim->ws;
  cqi_krylov_info info;
  TRY(krylov(cqi_cg, sim, c, s, -1, g, ws->d, eta, &info));
  if (info.outcome == CQI_KRYLOV_INDEFINITE && info.iterations == 0) /* M^-1 (-g): the projected Newton step */
    TRY(cqi_grid_lincomb(sim->be, ws->d, 1, ws->z, 0, ws->z));
  *iters = info.iterations;
  *dHd = info.xAx;
  return CQ_OK;
}

/* The factorised Hessian at the iterate ws->v (the terms' pieces: those of their last linearisation),
 * when implicit.precond asks for one (ws->q is free here). A singular Hessian leaves the masses as the
 * preconditioner. */
static int refactor(cqi_sim* sim, const cq_substep* c, const cq_particles* s) {
  implicit_ws* ws = sim->ws;
  ws->factored = 0;
  if (!ws->factor) return CQ_OK;
  int ok;
  TRY(cqi_factor_update(ws->factor, sim, c, s, ws->v, ws->vstar, ws->q, &ok));
  ws->factored = ok;
  return CQ_OK;
}

/* The no-convergence error: what failed, the residual history and what to change. */
static int not_converged(cqi_sim* sim, long k, int its, const char* why) {
  implicit_ws* ws = sim->ws;
  char hist[600], piece[160] = "";
  int len = 0;
  for (int i = 0; i <= its && len < (int)sizeof hist - 16; i++)
    len += snprintf(hist + len, sizeof hist - len, "%s%.3g", i ? ", " : "", ws->hist[i]);
  if (ws->level > 0)
    snprintf(piece, sizeof piece, " (piece %ld of %ld: the substep halved %ld times, implicit.max_split)",
             ws->piece + 1, 1L << ws->level, ws->level);
  return cqi_errorf(sim->err, CQ_ERR_BLOWUP,
                    "implicit substep %ld%s: Newton did not converge (%s); ||grad E||_inf / scale per iteration: %s "
                    "(tol %g, max_newton %d, max_cg %d); raise implicit.max_newton or implicit.max_cg, loosen "
                    "implicit.tol, or use a smaller dt",
                    k + 1, piece, why, hist, ws->tol, ws->max_newton, ws->max_cg);
}

/* The model of dt E along the direction d of curvature dHd = d.H d: the rest's slope and curvature (dHd less hw =
 * d.H_W d, the piecewise terms' share of it: on the pieces at v (at_v: the line's w0[2]) or on the linearisation's
 * (a product)) plus W exactly, at its minimum a (cqi_terms_line_step) -> *value, *step. *value = +inf (and *step untouched)
 * when d does not descend or the model is not finite. Uses tmp. */
static int piecewise_model(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* d, double dHd,
                           int at_v, double* value, double* step) {
  implicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  double slope, w0[3], wa[3], hw = 0, a;
  TRY(be->ops->grid_dot(be, ws->g, d, &slope));
  *value = INFINITY;
  if (!(slope < 0)) return CQ_OK;
  if (!at_v) {
    TRY(be->ops->grid_clear(be, ws->tmp));
    TRY(cqi_terms_hvp(sim, c, s, d, ws->tmp));
    TRY(be->ops->grid_dot(be, d, ws->tmp, &hw));
  }
  TRY(cqi_terms_line_begin(sim, c, s, d));
  TRY(cqi_terms_line(sim, c, 0, w0));
  double kappa = dHd - (at_v ? w0[2] : hw);
  TRY(cqi_terms_line_step(sim, c, slope - w0[1], kappa, slope, &a));
  TRY(cqi_terms_line(sim, c, a, wa));
  double value_a = (slope - w0[1]) * a + (kappa > 0 ? kappa : 0) * a * a / 2 + wa[0];
  if (value_a < INFINITY) *value = value_a, *step = a; /* (NaN: no value) */
  return CQ_OK;
}

/* A kink of a piecewise-quadratic term (the grid fluid's no-tension: node i's piece is dx^D (K_i / 2)(r_i - 1)^2
 * above its rest fill and 0 below, fill.h), as a primal-dual active-set (semismooth Newton) method treats it. The
 * Newton direction d from the pieces at v compresses the nodes just below their rest fill far past it (they are not
 * in its Hessian), and the line search then stops where the first of them fills: on the 3D finger's tank steps of
 * a = 0.02-0.3 and 37-41 Newton iterations per substep. So each round takes the pieces the nodes are on at v + d
 * (cqi_terms_predict: the Hessian's weights and the gradient at v of those pieces, in gt) and solves again, on a
 * refactorised Hessian (its pieces changed): once no node changes piece, d minimises the rest's quadratic model plus
 * the exact W. Such rounds can cycle (near the solution a node or two flip back and forth), so there are up to
 * implicit.fill_rounds of them, and the direction kept is the one whose model (piecewise_model) falls lowest: in
 * ws->d, with its dHd and the model's minimum a in *step (*chosen, SET_*). SET_NONE when no node changed piece along
 * the first direction (d and dHd untouched), SET_STALE_NONE when none descends: the caller then takes its own step
 * from the first direction (restored in d, its dHd in *dHd). cg_its: the CG iterations of the last direction solved.
 * Uses vt and tmp. On the 2D finger in water (docs/experiments/finger2d_held.lua, 8 kPa, 0.4 s) Newton iterations
 * 774 -> 179 and CG 16,761 -> 1,334 for factorisations 321 -> 561; fewer rounds do worse, as does stopping once a
 * round's model gains little (docs/results/history.md). */
static int active_set(cqi_sim* sim, const cq_substep* c, const cq_particles* s, double eta, int* cg_its, double* dHd,
                      double* step, int* chosen) {
  implicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  double best = 0, best_dHd = *dHd, value, a;
  long changed;
  int last = 0; /* the last round's direction is the one kept */
  *chosen = SET_NONE;
  for (int round = 0;; round++) {
    TRY(cqi_terms_predict(sim, c, s, ws->d, &changed));
    if (round == 0 && changed == 0) return CQ_OK;
    if (changed == 0 || round == ws->rounds) break;
    TRY(cqi_grid_lincomb(be, ws->gt, 1, ws->g, 0, ws->g));
    TRY(cqi_terms_predict_gradient(sim, c, s, ws->gt)); /* (before the model, which reuses the terms' buffers) */
    if (round == 0) {
      TRY(piecewise_model(sim, c, s, ws->d, *dHd, 1, &best, step));
      TRY(cqi_grid_lincomb(be, ws->vt, 1, ws->d, 0, ws->d));
    }
    TRY(be->ops->implicit_node(be, c, ws->vstar, NULL, ws->gt)); /* projected, as g is */
    TRY(refactor(sim, c, s)); /* stale factors here cost more CG and Newton iterations than they save */
    TRY(cg_direction(sim, c, s, ws->gt, eta, cg_its, dHd));
    sim->stats.fill_rounds++;
    sim->stats.cg += *cg_its;
    TRY(piecewise_model(sim, c, s, ws->d, *dHd, 0, &value, &a));
    last = value < best;
    if (last) {
      TRY(cqi_grid_lincomb(be, ws->vt, 1, ws->d, 0, ws->d));
      best = value, best_dHd = *dHd, *step = a;
    }
  }
  *dHd = best_dHd;
  /* the factors hold the last round's pieces: the next iterate's only if it settled and its direction is kept */
  *chosen = !(best < INFINITY) ? SET_STALE_NONE : changed || !last ? SET_UNSETTLED : SET_SETTLED;
  return cqi_grid_lincomb(be, ws->d, 1, ws->vt, 0, ws->vt);
}

/* The round-off of the projected gradient of dt E at a node: its elastic part sums V0 dt P F^T grad w over the
 * node's particles, and P's round-off is about eps M (M the P-wave modulus: a nearly incompressible solid's bulk
 * term K (J - 1) carries J's absolute error eps), so |delta g_i| ~ eps dt M sum_p V0 |grad w| ~ eps dt M dx^(D-1)
 * times the particles' share (ROUNDOFF_PARTICLES bounds it: about 4 particles per cell over a stencil). Below it no
 * Newton step can make reliable progress: a cantilever at bulk / shear 1e4 under gravity / 100 stalls at
 * ||grad||_inf = 3e-6 of the scale with the particle term, where this floor is 7e-5 of it (tests/implicit_spec.lua). */
enum { ROUNDOFF_PARTICLES = 8 };
static double roundoff_floor(const cqi_sim* sim, const cq_substep* c) {
  double eps = CQ_REAL_BITS == 32 ? 1.1920929e-07 : 2.220446049250313e-16, area = 1;
  for (int a = 1; a < sim->model->dim; a++) area *= c->dx;
  return ROUNDOFF_PARTICLES * eps * c->dt * sim->model->modulus_max * area;
}

/* Minimises dt E (eq. 12) over ws->v from the boundary-projected v* (ws->v on entry): Newton with CG directions
 * and a backtracking line search. The Armijo test E(v + a d) <= E(v) + c a grad.d needs E's change along the step,
 * which the trapezoid rule on the directional derivatives gives, (a/2)(grad(v).d + grad(v + a d).d), because the
 * materials provide P(F) and its derivative but not Psi; the test is exact where E is quadratic along the step
 * (near the solution). A piecewise-quadratic term's energy W is taken exactly along the step (cqi_terms_line), in
 * the test and in the first trial step, the minimum of the model slope * a + curvature * a^2 / 2 + W (cqi_terms_line_step): a
 * full Newton step compresses the grid fluid's nodes that were just below their rest fill far past it (they are not
 * in the Hessian), and halving from 1 cost 1.6 gradients per iteration on the tank. Where that happens the
 * active-set rounds (active_set) replace the direction and its first step. Converged when ||grad||_inf <= tol *
 * scale, scale = the larger of ||m v*||_inf and the elastic impulse ||sum_p V0 dt kC w P F^T dpos||_inf at the start
 * (both momenta per node), or at round-off: ||grad||_inf below roundoff_floor and not halved in two iterations, or
 * below it where the line search finds no decrease (a light load on a stiff solid puts tol * scale under the
 * forces' round-off, where Newton would stall until max_newton; counted in the stats' roundoff_stops). */
static int newton(cqi_sim* sim, const cq_substep* c, const cq_particles* s, long k) {
  implicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  double mv, el, gn, scale;
  int piecewise = cqi_terms_piecewise(sim);
  TRY(be->ops->grid_clear(be, ws->tmp));
  TRY(be->ops->implicit_node(be, c, ws->vstar, ws->vstar, ws->tmp)); /* m v*, projected */
  TRY(be->ops->grid_norm_inf(be, ws->tmp, &mv));
  TRY(gradient(sim, c, s, ws->v, ws->g, &el));
  scale = mv > el ? mv : el;
  const double c1 = 1e-4, floor = roundoff_floor(sim, c);
  double gn1 = INFINITY, gn2 = INFINITY; /* ||grad||_inf one and two iterations back */
  int stale = 1;                         /* the factors (if any) are not of this substep yet */
  for (int it = 0;; it++) {
    TRY(be->ops->grid_norm_inf(be, ws->g, &gn));
    ws->hist[it] = scale > 0 ? gn / scale : gn;
    if (gn <= ws->tol * scale) return CQ_OK;
    if (gn <= floor && gn > 0.5 * gn2) { /* stalled at round-off */
      sim->stats.roundoff_stops++;
      return CQ_OK;
    }
    gn2 = gn1, gn1 = gn;
    if (!isfinite(gn)) return not_converged(sim, k, it, "the gradient is not finite");
    if (it == ws->max_newton) return not_converged(sim, k, it, "max_newton reached");
    double eta = ws->hist[it] < 0.1 ? ws->hist[it] : 0.1, slope0, slope, dHd;
    TRY(cqi_terms_linearise(sim, c, s, ws->v));
    if (stale) TRY(refactor(sim, c, s));
    int cg_its, chosen = SET_NONE;
    double a = 1, w0[3] = {0, 0, 0}, wa[3] = {0, 0, 0};
    TRY(cg_direction(sim, c, s, ws->g, eta, &cg_its, &dHd));
    sim->stats.newton++;
    sim->stats.cg += cg_its;
    if (piecewise && ws->rounds > 0) TRY(active_set(sim, c, s, eta, &cg_its, &dHd, &a, &chosen));
    stale = cg_its > REFACTOR_CG || chosen == SET_UNSETTLED || chosen == SET_STALE_NONE;
    TRY(be->ops->grid_dot(be, ws->g, ws->d, &slope0));
    if (!(slope0 < 0)) { /* not a descent direction (round-off): fall back to steepest descent */
      TRY(cqi_grid_lincomb(be, ws->d, -1, ws->g, 0, ws->g));
      TRY(be->ops->grid_dot(be, ws->g, ws->d, &slope0));
      dHd = 0; /* not known along this d: the first step then takes W alone as the model's curvature */
    }
    if (piecewise) { /* W exactly along d: the first step its model's minimum, the test W's exact change */
      TRY(cqi_terms_line_begin(sim, c, s, ws->d));
      TRY(cqi_terms_line(sim, c, 0, w0));
      if (chosen == SET_NONE || chosen == SET_STALE_NONE)
        TRY(cqi_terms_line_step(sim, c, slope0 - w0[1], dHd - w0[2], slope0, &a));
    }
    int h = 0;
    for (; h < MAX_HALVINGS; h++, a *= 0.5) {
      TRY(cqi_grid_lincomb(be, ws->vt, 1, ws->v, (cq_real)a, ws->d));
      TRY(gradient(sim, c, s, ws->vt, ws->gt, NULL));
      TRY(be->ops->grid_dot(be, ws->gt, ws->d, &slope));
      if (piecewise) TRY(cqi_terms_line(sim, c, a, wa));
      double change = 0.5 * a * (slope0 - w0[1] + slope - wa[1]) + wa[0]; /* trapezoid for the rest, W exact */
      if (change <= c1 * a * slope0) break; /* NaN (an inverted F) fails the test: halve */
    }
    sim->stats.halvings += h;
    if (h == MAX_HALVINGS && gn <= floor) { /* no decrease to be found at round-off */
      sim->stats.roundoff_stops++;
      return CQ_OK;
    }
    if (h == MAX_HALVINGS) return not_converged(sim, k, it, "the line search found no decrease of E");
    cq_real* t = ws->v;
    ws->v = ws->vt, ws->vt = t;
    t = ws->g;
    ws->g = ws->gt, ws->gt = t;
  }
}

/* The substep context c without its boundaries (walls and node BCs): v*'s grid update. */
static cq_substep without_walls(const cq_substep* c) {
  cq_substep free_c = *c;
  for (int w = 0; w < 6; w++) free_c.wall_thick[w] = 0;
  free_c.node_bc_index = NULL;
  return free_c;
}

/* Newton's start point, into ws->v: v0 = the boundary-projected v* in the constrained components (which the solve
 * keeps), and in the free ones the grid velocities of the substep without its forces and actuation (P2G of the APIC
 * momentum, then gravity and damping). Not v* there: a pressurised chamber puts its whole impulse into its wall
 * particles' F_p(v*), far from the solution and into the materials' non-convex range, where Newton crawls (the
 * finger of examples/finger_pressure.lua at 1 kPa: 26 iterations from v*, 4 from here). Uses tmp. */
static int start_point(cqi_sim* sim, const cq_substep* c, const cq_particles* s) {
  implicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  cq_ctl rest;
#define CQI_NONE(name, shape, doc) rest.name = NULL;
  CQ_CONTROL_FIELDS(CQI_NONE)
#undef CQI_NONE
  rest.u = ws->u0;
  TRY(be->ops->grid_update(be, c, ws->grid, ws->v)); /* v0 */
  TRY(be->ops->grid_clear(be, ws->tmp));
  TRY(be->ops->p2g(be, c, s, &sim->view->params, &rest, ws->tmp, NULL));
  TRY(be->ops->grid_update(be, c, ws->tmp, ws->tmp));
  TRY(be->ops->grid_axpy(be, -1, ws->v, ws->tmp));
  TRY(be->ops->implicit_node(be, c, ws->vstar, NULL, ws->tmp)); /* Pi (rest - v0) */
  return be->ops->grid_axpy(be, 1, ws->tmp, ws->v);
}

/* The forward up to the converged grid velocities (ws->v, before the walls' laws): the extra forces (kc = the
 * control with them), P2G without the elastic stress, v* without the boundaries (a copy of the context with none;
 * the mass stays in slot D), the start point, and Newton. */
static int solve_velocities(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_ctl* ctl, long k,
                            cq_ctl* kc) {
  implicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  const cqi_backend_ops* op = be->ops;
  *kc = *ctl;
  TRY(cqi_extra_forces(sim, s, ctl, ws->fext, &kc->force));
  TRY(op->grid_clear(be, ws->grid));
  TRY(op->p2g(be, c, s, &sim->view->params, kc, ws->grid, NULL));
  cq_substep free_c = without_walls(c);
  TRY(op->copy(be, ws->vstar, ws->grid, sizeof(cq_real) * be->n_nodes * (be->dim + 1)));
  TRY(op->grid_update(be, &free_c, ws->vstar, ws->vstar));
  TRY(start_point(sim, c, s));
  sim->stats.substeps++;
  return newton(sim, c, s, k);
}

/* Whether the solve takes chamber pressure (implicit.pressure = "implicit" and a chamber or cavity actuator). */
static int implicit_pressure(const cqi_sim* sim) {
  const cqi_model* m = sim->model;
  if (m->desc.implicit_pressure != CQ_PRESSURE_IMPLICIT) return 0;
  for (int a = 0; a < m->n_act; a++)
    if (cqi_pressure_kind(m->act_kind[a])) return 1;
  return 0;
}

/* The context of piece j of 2^level of substep k (the whole substep at level 0) under the control ctl, for the
 * implicit solve. */
static cq_substep piece_ctx(cqi_sim* sim, const cq_ctl* ctl, long k, long j, int level) {
  implicit_ws* ws = sim->ws;
  cq_substep c = cqi_substep_piece_ctx(sim->model, sim->view->node_bc_index, sim->view->node_bcs, k, j, level);
  c.implicit_elastic = 1;
  c.implicit_pressure = implicit_pressure(sim);
  c.pressure_u = ctl->u;
  ws->piece = j, ws->level = level;
  return c;
}

/* A piece's start: prepare, the terms' projection of s in place and their base (term.h), and the solve, up to the converged velocities in ws->v. prepare checks the input in full whether or not it is fresh: a
 * particle too fast for this piece's dt splits it (retryable), and the decision must not depend on where the input
 * came from, so that a recomputation makes it again. */
static int piece_solve(cqi_sim* sim, cq_substep* c, cq_particles* s, const cq_ctl* ctl, long k, cqi_check* bad,
                       cq_ctl* kc) {
  TRY(sim->be->ops->prepare(sim->be, c, s, &sim->view->params, 1, bad));
  if (bad->check != CQ_CHECK_OK) return CQ_ERR_BLOWUP;
  TRY(cqi_terms_project(sim, c, s)); /* the physics terms' projection and base (term.h) */
  TRY(cqi_terms_begin(sim, c, s));
  return solve_velocities(sim, c, s, ctl, k, kc);
}

/* One piece in place: the solve, the walls' laws and G2P (its particle checks into bad). */
static int piece_once(cqi_sim* sim, cq_substep* c, cq_particles* s, const cq_ctl* ctl, long k, cqi_check* bad) {
  implicit_ws* ws = sim->ws;
  const cqi_backend_ops* op = sim->be->ops;
  cq_ctl kc;
  TRY(piece_solve(sim, c, s, ctl, k, bad, &kc));
  cq_substep cv = *c; /* the terms' stress quantities at the converged v: their output fields */
  TRY(cqi_terms_stress(sim, &cv, s, ws->v));
  TRY(op->implicit_bc(sim->be, c, ws->vstar, ws->v));
  TRY(op->g2p(sim->be, c, s, &sim->view->params, ws->v, bad));
  TRY(cqi_terms_output(sim, &cv, s));
  return bad->check != CQ_CHECK_OK ? CQ_ERR_BLOWUP : CQ_OK;
}

/* Whether halving would give a failed piece another chance: Newton did not converge (a blow-up with no particle
 * check), a particle of the input is too fast for the piece's dt, or after G2P a particle moved more than a cell,
 * inverted or became non-finite. Not an input state that is bad in itself, nor a particle that left the grid. */
static int retryable(int st, const cqi_check* bad) {
  if (st != CQ_ERR_BLOWUP) return 0;
  if (bad->check == CQ_CHECK_OK || bad->check == CQ_CHECK_TOO_FAST) return 1;
  return bad->after && bad->check != CQ_CHECK_OUTSIDE;
}

/* A state block of the backend for level l of one of the split buffers (allocated when first needed). */
static int level_buffer(cqi_sim* sim, cq_real** slot) {
  if (*slot) return CQ_OK;
  cqi_backend* be = sim->be;
  *slot = be->ops->alloc(be, sizeof(cq_real) * (size_t)cqi_state_len(be->n, be->dim));
  return *slot ? CQ_OK : cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory for a split implicit substep's state");
}

static int copy_state(cqi_sim* sim, cq_real* dst, const cq_real* src) {
  cqi_backend* be = sim->be;
  return be->ops->copy(be, dst, src, sizeof(cq_real) * (size_t)cqi_state_len(be->n, be->dim));
}

/* A kept piece's estimate e (metres) into the stats' largest, in cells; CQ_OK, for the caller's return. */
static int note_error(cqi_sim* sim, double e) {
  double cells = e / sim->model->desc.dx;
  if (cells > sim->stats.error_max) sim->stats.error_max = cells;
  return CQ_OK;
}

/* The piece's local error estimate (implicit.error_tol): backward Euler takes x' = x + dt v', the trapezoid rule
 * x + dt (v + v') / 2; their difference (dt/2) |v' - v| is the leading term of the step's error in a particle's
 * position (for a body falling freely, exactly g dt^2 / 2). *e = the largest over the particles, from v (the piece's
 * input velocities, [D][n]) to v1 (its output's), in metres. Host reads: deterministic, and one maximum, so the
 * same for any thread count. */
static int step_error(cqi_sim* sim, const cq_real* v, const cq_real* v1, double dt, double* e) {
  implicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  long n = be->n, len = n * be->dim;
  TRY(be->ops->read(be, v, len, ws->hv));
  TRY(be->ops->read(be, v1, len, ws->hv + len));
  double m = 0;
  for (long p = 0; p < n; p++) {
    double q = 0;
    for (int a = 0; a < be->dim; a++) {
      double d = ws->hv[len + a * n + p] - ws->hv[a * n + p];
      q += d * d;
    }
    if (q > m) m = q;
  }
  *e = 0.5 * dt * sqrt(m);
  return CQ_OK;
}

/* Piece j of 2^level of substep k, in place. A piece that fails as retryable says is redone from its start as two
 * halves (each again, down to implicit.max_split halvings): when a fast phase (a chamber wall snapping through, an
 * impact) makes a particle cross a cell or Newton fail at the chosen dt, the substep takes shorter pieces there
 * instead of stopping the run. The decisions depend only on the piece's input, so a recomputation (the memo's
 * checkpoints, the backward pass) makes the same ones. A failure at the last level is reported with bad->split. */
static int piece_forward(cqi_sim* sim, cq_particles* s, const cq_ctl* ctl, long k, long j, int level, cqi_check* bad) {
  implicit_ws* ws = sim->ws;
  int can_split = level < ws->max_split;
  if (can_split) {
    TRY(level_buffer(sim, &ws->keep[level]));
    TRY(copy_state(sim, ws->keep[level], s->x));
  }
  cq_substep c = piece_ctx(sim, ctl, k, j, level);
  *bad = (cqi_check){CQ_CHECK_OK, -1, 0, 0, 0};
  if (ws->error_tol > 0) TRY(sim->be->ops->copy(sim->be, ws->vin, s->v, sizeof(cq_real) * sim->be->n * sim->be->dim));
  int st = piece_once(sim, &c, s, ctl, k, bad);
  bad->split = level;
  if (st == CQ_OK && ws->error_tol > 0) { /* accurate enough? else halve, as for a failure */
    double e;
    TRY(step_error(sim, ws->vin, s->v, c.dt, &e));
    if (e <= ws->error_tol) return note_error(sim, e);
    if (!can_split || !ws->adapt) {
      sim->stats.error_over++;
      return note_error(sim, e);
    }
    sim->stats.error_splits++;
    st = CQ_ERR_BLOWUP;
  }
  if (st == CQ_OK || !can_split || !retryable(st, bad)) return st;
  sim->stats.splits++;
  TRY(copy_state(sim, s->x, ws->keep[level]));
  TRY(piece_forward(sim, s, ctl, k, 2 * j, level + 1, bad));
  return piece_forward(sim, s, ctl, k, 2 * j + 1, level + 1, bad);
}

static int implicit_substep(cqi_sim* sim, cq_particles* s, const cq_ctl* ctl, long k, int fresh, cqi_check* bad) {
  (void)fresh; /* every piece checks its input in full (piece_solve) */
  return piece_forward(sim, s, ctl, k, 0, 0, bad);
}

/* The adjoint's linear solve, from x = 0, b = sign * rhs (rhs projected), until ||r||_2 <= tol ||b||_2, tol =
 * implicit.tol floored at round-off, within max_cg iterations. Symmetric: x = H^-1 b for the projected
 * Hessian at ws->v, conjugate gradients preconditioned as cg_direction's; H must be positive definite on the free
 * velocities there (a minimum of E), and anything else is an error, as is running out of iterations; uses r, z, p, q,
 * hp. Not symmetric: x = A^-T b for the projected Jacobian A of grad (dt E) at ws->v, which the implicit chamber
 * pressure makes non-symmetric (implicit.h): BiCGStab (van der Vorst 1992, right-preconditioned as cg_direction's) on
 * the transposed products (c->pressure_product = CQI_PRODUCT_T), max_cg iterations of two products each; uses r, g
 * (the shadow residual), p, q (A p^), z (p^), vt (s^) and hp (A s^). */
static int adjoint_solve(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_real sign, const cq_real* rhs,
                         cq_real* x, long k, int symmetric) {
  implicit_ws* ws = sim->ws;
  double floor = CQ_REAL_BITS == 32 ? 1e-6 : 1e-13, tol = ws->tol > floor ? ws->tol : floor;
  TRY(cqi_terms_linearise(sim, c, s, ws->v));
  cqi_krylov_info info;
  TRY(krylov(symmetric ? cqi_cg : cqi_bicgstab, sim, c, s, sign, rhs, x, tol, &info));
  sim->stats.adjoint_cg += symmetric ? info.products : info.iterations;
  if (!symmetric && info.outcome != CQI_KRYLOV_CONVERGED)
    return cqi_errorf(sim->err, CQ_ERR_BLOWUP,
                      "backward: implicit substep %ld: the adjoint solve (BiCGStab, the "
                      "implicit chamber pressure's non-symmetric Jacobian) did not converge: %s, ||r|| / ||b|| = "
                      "%.3g (tol %g); raise implicit.max_cg or use a smaller dt",
                      k + 1, info.outcome == CQI_KRYLOV_MAX_ITERATIONS ? "max_cg iterations" : info.why, info.rel, tol);
  if (info.outcome == CQI_KRYLOV_MAX_ITERATIONS)
    return cqi_errorf(sim->err, CQ_ERR_BLOWUP,
                      "backward: implicit substep %ld: the adjoint solve did not converge "
                      "(||r|| / ||b|| = %.3g after max_cg = %d conjugate-gradient iterations, tol %g); raise "
                      "implicit.max_cg or loosen implicit.tol",
                      k + 1, info.rel, ws->max_cg, tol);
  if (info.outcome == CQI_KRYLOV_INDEFINITE)
    return cqi_errorf(sim->err, CQ_ERR_BLOWUP,
                      "backward: implicit substep %ld: the Hessian of eq. 12 is not "
                      "positive definite at the converged velocities (p.Hp = %.3g at adjoint iteration %d), so the "
                      "implicit function theorem gives no gradient; use a smaller dt",
                      k + 1, info.curvature, info.iterations + 1);
  return CQ_OK;
}

static int alloc_backward(cqi_sim* sim) {
  implicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  if (ws->gact) return CQ_OK;
  ws->gfext = be->ops->alloc(be, sizeof(cq_real) * be->n * be->dim);
  ws->gpress = be->ops->alloc(be, sizeof(cq_real) * be->n);
  ws->gact = be->ops->alloc(be, sizeof(cq_real) * be->n); /* last: marks the backward buffers complete */
  if (!ws->gfext || !ws->gpress || !ws->gact)
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory for the backward pass");
  return CQ_OK;
}

/* Adjoint of one piece (the whole substep when it was not split) by the implicit function theorem (implicit.h
 * explains the algebra), after piece_solve recomputed its forward up to the converged velocities in ws->v (P2G, v*,
 * v0, the Newton solve: deterministic, so the same v); s1 is the piece's output. In reverse: G2P's adjoint at the
 * velocities after the boundaries' laws, their adjoint (implicit_bc_adj) to dL/dv, lam = -A^-T Pi dL/dv (adjoint_solve:
 * CG, or BiCGStab when the chamber pressure makes A non-symmetric),
 * lam's pull-back through the elastic scatter into x, F and the parameters (implicit_stress_adj), the constrained
 * components of v0 (usually the boundaries' velocities, but a friction floor moving along a wall gives a corner node
 * a velocity that depends on v*) through v0's grid update, and m (v - v*) into the P2G grid (implicit_node_adj); from
 * there the explicit P2G adjoint (momentum, mass, actuation, forces, viscosity) and the extra forces' adjoints, as the
 * explicit integrator does. The solve's active sets (which boundaries constrain a node, from the sign of v* . n) are
 * piecewise constant: they have no gradient. */
static int piece_once_adj(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_particles* s1,
                          const cq_ctl* ctl, const cq_ctl* kc, long k, const cq_particles* g1, cq_particles* g0,
                          const cqi_adj_out* out) {
  implicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  const cqi_backend_ops* op = be->ops;
  TRY(op->grid_clear(be, ws->vt));
  TRY(op->grid_axpy(be, 1, ws->v, ws->vt));
  TRY(op->implicit_bc(be, c, ws->vstar, ws->vt));
  /* adjoints in reverse: G2P (scatter into gt), the boundaries' laws, the solve, the gradient's inputs */
  TRY(op->grid_clear(be, ws->gt));
  TRY(op->g2p_adj(be, c, s, &sim->view->params, ws->vt, g1, g0, ws->gt, s1 ? s1->C : NULL));
  TRY(op->implicit_bc_adj(be, c, ws->vstar, ws->v, ws->gt)); /* gt = dL/dv */
  cq_substep cv = *c; /* the transposed products; the terms' quantities at v and their adjoints (term.h) */
  TRY(cqi_terms_output_adj(sim, &cv, s, ws->v, g1, g0, out->gp, ws->gt)); /* the output fields' share in dL/dv */
  TRY(cqi_grid_lincomb(be, ws->tmp, 1, ws->gt, 0, ws->gt));
  TRY(op->implicit_node(be, c, ws->vstar, NULL, ws->tmp)); /* Pi dL/dv */
  cv.pressure_product = CQI_PRODUCT_T;
  if (c->implicit_pressure)
    TRY(adjoint_solve(sim, &cv, s, -1, ws->tmp, ws->d, k, 0)); /* lam = -A^-T Pi dL/dv */
  else
    TRY(adjoint_solve(sim, c, s, -1, ws->tmp, ws->d, k, 1)); /* A = H symmetric */
  if (c->implicit_pressure) {
    TRY(op->zero(be, ws->gpress, sizeof(cq_real) * be->n));
    cv.pressure_gu = ws->gpress;
  }
  TRY(cqi_terms_solve_adj_begin(sim, &cv, s, ws->v, ws->d, g0, out->gp));
  TRY(op->implicit_stress_adj(be, &cv, s, &sim->view->params, ws->v, ws->d, g0, out->gp));
  TRY(cqi_terms_solve_adj(sim, c, s, ws->v, ws->d, g0, out->gp)); /* lam . dW/dv of the terms' energies */
  /* the kept components of v0: dL/dv0 = (I - Pi)(dL/dv + A^T lam), where (I - Pi) m lam = 0; then v0's grid update
   * (with the boundaries) back to P2G's grid, and v* and m there too */
  TRY(cqi_grid_lincomb(be, ws->g, 1, ws->gt, 0, ws->gt));
  TRY(hessian_add(sim, &cv, c, s, ws->v, ws->d, ws->g)); /* the terms' pieces: linearised at v by the solve */
  TRY(cqi_grid_lincomb(be, ws->vt, 1, ws->g, 0, ws->g));
  TRY(op->implicit_node(be, c, ws->vstar, NULL, ws->vt));
  TRY(op->grid_axpy(be, -1, ws->vt, ws->g));
  TRY(op->grid_update_adj(be, c, ws->grid, ws->g));
  cq_substep free_c = without_walls(c);
  TRY(op->implicit_node_adj(be, &free_c, ws->grid, ws->vstar, ws->v, ws->d, ws->g));
  return cqi_p2g_adj(sim, c, s, ctl, kc, ws->g, NULL, ws->gact, c->implicit_pressure ? ws->gpress : NULL, ws->gfext, g0,
                     out);
}

/* Adjoint of piece j of 2^level of substep k from s (its input) to s1 (its output; NULL: not at hand), g1 = dL/ds1
 * in, g0 = dL/ds out. Whether the forward split the piece is found as the forward found it: the solve is recomputed,
 * and where it could have split, G2P runs on a copy to see whether a check failed. Unsplit: piece_once_adj. Split:
 * the first half's output (the state between the halves) is recomputed, then the second half's adjoint and the
 * first's, each again as this. */
static int piece_adj(cqi_sim* sim, const cq_particles* s, const cq_particles* s1, const cq_ctl* ctl, long k, long j,
                     int level, const cq_particles* g1, cq_particles* g0, const cqi_adj_out* out) {
  implicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  int n = be->n, D = be->dim, can_split = level < ws->max_split;
  cq_substep c = piece_ctx(sim, ctl, k, j, level);
  cqi_check bad = {CQ_CHECK_OK, -1, 0, 0, 0};
  cq_ctl kc;
  cq_particles in; /* the piece's input as the forward used it: a copy the terms project (s stays as is) */
  TRY(cqi_terms_input(sim, s, &in));
  int st = piece_solve(sim, &c, &in, ctl, k, &bad, &kc);
  int split = can_split && retryable(st, &bad);
  if (st != CQ_OK && !split)
    return st == CQ_ERR_BLOWUP && bad.check != CQ_CHECK_OK ? cqi_recompute_failed(sim, k, &bad) : st;
  cq_particles out1;
  if (!split && can_split) { /* the forward's own G2P, on a copy: did a particle check fail? */
    TRY(level_buffer(sim, &ws->att[level]));
    TRY(copy_state(sim, ws->att[level], in.x));
    out1 = cqi_particles_view(ws->att[level], n, D);
    TRY(cqi_grid_lincomb(be, ws->vt, 1, ws->v, 0, ws->v));
    TRY(be->ops->implicit_bc(be, &c, ws->vstar, ws->vt));
    TRY(be->ops->g2p(be, &c, &out1, &sim->view->params, ws->vt, &bad));
    split = retryable(bad.check != CQ_CHECK_OK ? CQ_ERR_BLOWUP : CQ_OK, &bad);
    if (!split && ws->error_tol > 0 && ws->adapt) { /* the forward's error estimate, on the same velocities */
      double e;
      TRY(step_error(sim, in.v, out1.v, c.dt, &e));
      split = e > ws->error_tol;
    }
    if (!split) s1 = &out1;
  }
  if (!split) {
    TRY(piece_once_adj(sim, &c, &in, s1, ctl, &kc, k, g1, g0, out));
    return cqi_terms_project_adj(sim, &c, s, g0, out->gp); /* g0: s's, unprojected */
  }
  TRY(level_buffer(sim, &ws->mid[level]));
  TRY(level_buffer(sim, &ws->gmid[level]));
  TRY(copy_state(sim, ws->mid[level], s->x));
  cq_particles mid = cqi_particles_view(ws->mid[level], n, D), gmid = cqi_particles_view(ws->gmid[level], n, D);
  st = piece_forward(sim, &mid, ctl, k, 2 * j, level + 1, &bad);
  if (st == CQ_ERR_BLOWUP && bad.check != CQ_CHECK_OK) return cqi_recompute_failed(sim, k, &bad);
  TRY(st);
  TRY(piece_adj(sim, &mid, s1, ctl, k, 2 * j + 1, level + 1, g1, &gmid, out));
  return piece_adj(sim, s, &mid, ctl, k, 2 * j, level + 1, &gmid, g0, out);
}

static int implicit_substep_adj(cqi_sim* sim, const cq_particles* s, const cq_particles* s1, const cq_ctl* ctl, long k,
                                const cq_particles* g1, cq_particles* g0, const cqi_adj_out* out) {
  TRY(alloc_backward(sim));
  return piece_adj(sim, s, s1, ctl, k, 0, 0, g1, g0, out);
}

const cqi_integrator cqi_integrator_implicit = {CQ_INTEGRATOR_IMPLICIT,
                                                implicit_create,
                                                implicit_destroy,
                                                implicit_substep,
                                                implicit_substep_adj,
                                                0 /* the solve reads dot products back: no batches */,
                                                0 /* no CFL limit */};

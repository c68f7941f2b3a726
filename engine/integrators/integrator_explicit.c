/* The explicit MLS-MPM substep (seed 000 eqs. 4-11, 15-17) and its adjoint (Appendix A.2), composed of backend
 * primitives and the physics terms' hooks (term.h): prepare, the terms' projection, base and stress quantities, P2G
 * and the terms' impulses, grid update, G2P forward; backward, the forward's grid (restored from the memo's record of
 * the substep, or recomputed), then the adjoints in reverse. */
#include <stdlib.h>
#include "term.h"

/* Workspace, in backend memory; the backward buffers are allocated by the first adjoint substep. */
typedef struct {
  cq_real* grid;     /* [n_nodes][D+1] momentum and mass, then velocity (forward: in place) */
  cq_real* grid_v;   /* [n_nodes][D+1] velocity after the boundaries (backward) */
  cq_real* grid_adj; /* [n_nodes][D+1] adjoint of the grid (backward) */
  cq_real* fext;     /* [D][n] extra particle forces of the substep (the user's and the force terms') */
  cq_real* gfext;    /* [D][n] their gradient (backward) */
  cq_real* gact;     /* [n] dL/du of each particle's actuator (backward) */
  cq_real* cache;    /* [3 D*D][n] stresses of the recomputed P2G, reused by its adjoint (backward) */
} explicit_ws;

static size_t grid_bytes(const cqi_backend* be) { return sizeof(cq_real) * be->n_nodes * (be->dim + 1); }

static int explicit_create(cqi_sim* sim) {
  cqi_backend* be = sim->be;
  explicit_ws* ws = calloc(1, sizeof *ws);
  if (!ws) return cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory");
  sim->ws = ws;
  ws->grid = be->ops->alloc(be, grid_bytes(be));
  ws->fext = be->ops->alloc(be, sizeof(cq_real) * be->n * be->dim);
  if (!ws->grid || !ws->fext)
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "res: out of memory for a grid of %ld nodes", be->n_nodes);
  return CQ_OK;
}

static void explicit_destroy(cqi_sim* sim) {
  explicit_ws* ws = sim->ws;
  if (!ws) return;
  cqi_backend* be = sim->be;
  cq_real* bufs[] = {ws->grid, ws->grid_v, ws->grid_adj, ws->fext, ws->gfext, ws->gact, ws->cache};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    if (bufs[i]) be->ops->release(be, bufs[i]);
  free(ws);
  sim->ws = NULL;
}

static int alloc_backward(cqi_sim* sim) {
  explicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  if (ws->cache) return CQ_OK;
  size_t R = sizeof(cq_real), n = (size_t)be->n, D = (size_t)be->dim;
  ws->grid_v = be->ops->alloc(be, grid_bytes(be));
  ws->grid_adj = be->ops->alloc(be, grid_bytes(be));
  ws->gfext = be->ops->alloc(be, R * n * D);
  ws->gact = be->ops->alloc(be, R * n);
  ws->cache = be->ops->alloc(be, R * n * 3 * D * D); /* last: marks the backward buffers complete */
  if (!ws->grid_v || !ws->grid_adj || !ws->gfext || !ws->gact || !ws->cache)
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory for the backward pass");
  return CQ_OK;
}

#define TRY(call)                 \
  do {                            \
    int st_ = (call);             \
    if (st_ != CQ_OK) return st_; \
  } while (0)

static int explicit_substep(cqi_sim* sim, cq_particles* s, const cq_ctl* ctl, long k, int fresh, cqi_check* bad) {
  explicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  const cqi_backend_ops* op = be->ops;
  cq_substep c = cqi_substep_ctx(sim->model, sim->view->node_bc_index, sim->view->node_bcs, k);
  TRY(op->prepare(be, &c, s, &sim->view->params, fresh, bad)); /* a state out of the previous G2P was checked there */
  if (bad->check != CQ_CHECK_OK) return CQ_ERR_BLOWUP;
  TRY(cqi_terms_project(sim, &c, s)); /* the physics terms (term.h): their input, base and stress quantities */
  TRY(cqi_terms_begin(sim, &c, s));
  TRY(cqi_terms_stress(sim, &c, s, NULL));
  cq_ctl kc = *ctl;
  TRY(cqi_extra_forces(sim, s, ctl, ws->fext, &kc.force));
  TRY(op->grid_clear(be, ws->grid));
  TRY(op->p2g(be, &c, s, &sim->view->params, &kc, ws->grid, NULL));
  TRY(cqi_terms_impulse(sim, &c, s, ws->grid));
  cqi_keep_store(sim, ws->grid); /* before the update in place: the adjoint needs the momentum and mass */
  TRY(op->grid_update(be, &c, ws->grid, ws->grid)); /* in place: momentum -> velocity */
  TRY(op->g2p(be, &c, s, &sim->view->params, ws->grid, bad));
  return bad->check != CQ_CHECK_OK ? CQ_ERR_BLOWUP : CQ_OK;
}

/* Restores the forward grid from the memo's record of this substep, or recomputes it from s_in (caching P2G's
 * stresses), then runs G2P, grid and P2G adjoints (P2G's adjoint evaluates the stresses itself when restored), on
 * s_in as the forward's stages saw it (a copy the terms projected), and last the terms' adjoints. */
static int explicit_substep_adj(cqi_sim* sim, const cq_particles* s_in, const cq_particles* s1, const cq_ctl* ctl,
                                long k, const cq_particles* g1, cq_particles* g0, const cqi_adj_out* out) {
  explicit_ws* ws = sim->ws;
  cqi_backend* be = sim->be;
  const cqi_backend_ops* op = be->ops;
  TRY(alloc_backward(sim));
  cq_substep c = cqi_substep_ctx(sim->model, sim->view->node_bc_index, sim->view->node_bcs, k);
  cq_ctl kc = *ctl;
  const cq_real* cache = NULL;
  int restored = cqi_keep_restore(sim, ws->grid);
  if (!restored) { /* the forward grid again, from prepare on */
    cqi_check bad;
    TRY(op->prepare(be, &c, s_in, &sim->view->params, 0, &bad));
    if (bad.check != CQ_CHECK_OK) return cqi_recompute_failed(sim, k, &bad);
  }
  cq_particles in; /* the input as the forward's stages saw it */
  TRY(cqi_terms_input(sim, s_in, &in));
  const cq_particles* s = &in;
  TRY(cqi_terms_project(sim, &c, &in));
  TRY(cqi_terms_begin(sim, &c, s));
  TRY(cqi_terms_stress(sim, &c, s, NULL));
  TRY(cqi_extra_forces(sim, s, ctl, ws->fext, &kc.force));
  if (!restored) {
    TRY(op->grid_clear(be, ws->grid));
    TRY(op->p2g(be, &c, s, &sim->view->params, &kc, ws->grid, ws->cache));
    TRY(cqi_terms_impulse(sim, &c, s, ws->grid));
    cache = ws->cache;
  }
  TRY(op->grid_update(be, &c, ws->grid, ws->grid_v));
  /* adjoints in reverse: G2P (scatter), grid, P2G (gather) */
  TRY(op->grid_clear(be, ws->grid_adj));
  TRY(op->g2p_adj(be, &c, s, &sim->view->params, ws->grid_v, g1, g0, ws->grid_adj, s1 ? s1->C : NULL));
  TRY(op->copy(be, g0->pg, g1->pg, sizeof(cq_real) * be->n)); /* the implicit step's pg passes through */
  TRY(op->grid_update_adj(be, &c, ws->grid, ws->grid_adj));
  TRY(cqi_terms_impulse_adj(sim, &c, s, ws->grid_adj, g0, out->gp));
  TRY(cqi_terms_p2g_adj_begin(sim, &c));
  TRY(cqi_p2g_adj(sim, &c, s, ctl, &kc, ws->grid_adj, cache, ws->gact, NULL, ws->gfext, g0, out));
  TRY(cqi_terms_stress_adj(sim, &c, s, g0, out->gp));
  return cqi_terms_project_adj(sim, &c, s_in, g0, out->gp); /* g0 from the projected input's to s_in's */
}

const cqi_integrator cqi_integrator_explicit = {
    CQ_INTEGRATOR_EXPLICIT, explicit_create, explicit_destroy, explicit_substep, explicit_substep_adj, 1, 1};

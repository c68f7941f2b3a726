/* The grid fluid's per-substep work (engine/terms/fill.h has the math), composed of backend primitives for both
 * integrators: the substep's base and rest fill, the gradient of W in the grid velocities, its Hessian products, and
 * the explicit step's impulse. */
#include <string.h>
#include "term.h"

/* The grid vectors, in backend memory, allocated when first needed: the substep's base (phi^n, K, phi0), a
 * linearisation at the last gradient's velocities (lin), one at the Hessian products' iterate (at), a product's
 * direction (dir), the line search's node terms (line) and the rest fill's excess over 1 (ref; ref_set: taken from a
 * state, cq_world_reset_fill clears it). */
typedef struct {
  cq_real *base, *lin, *at, *dir, *line, *ref;
  int ref_set;
} fill_self;

#define SELF fill_self* W = self

/* The grid vectors, allocated on first use; the rest fill's is zeroed in full (nodes it has not seen rest at 1). */
static int fill_buffers(cqi_sim* sim, fill_self* W) {
  cqi_backend* be = sim->be;
  if (W->ref) return CQ_OK;
  size_t gb = sizeof(cq_real) * be->n_nodes * (be->dim + 1);
  cq_real** bufs[] = {&W->base, &W->lin, &W->at, &W->dir, &W->line};
  int ok = 1;
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ok &= (*bufs[i] = be->ops->alloc(be, gb)) != NULL;
  cq_real* ref = be->ops->alloc(be, gb);
  if (!ok || !ref || be->ops->zero(be, ref, gb) != CQ_OK) { /* none kept: the next call starts afresh */
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
      if (*bufs[i]) be->ops->release(be, *bufs[i]), *bufs[i] = NULL;
    if (ref) be->ops->release(be, ref);
    return cqi_errorf(sim->err, CQ_ERR_NOMEM,
                      "fluid = \"grid\": out of memory for the fill's grid vectors (%ld "
                      "nodes)",
                      be->n_nodes);
  }
  W->ref = ref; /* last: marks the buffers complete */
  W->ref_set = 0;
  return CQ_OK;
}

static void fill_release(cqi_sim* sim, void* self) {
  SELF;
  cqi_backend* be = sim->be;
  cq_real* bufs[] = {W->base, W->lin, W->at, W->dir, W->line, W->ref};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    if (bufs[i] && be) be->ops->release(be, bufs[i]);
  memset(W, 0, sizeof *W);
}

#define TRY(call)                 \
  do {                            \
    int st_ = (call);             \
    if (st_ != CQ_OK) return st_; \
  } while (0)

/* begin: the substep's base at s (and the rest fill, the first time with fluid_rest = "initial"). */
static int fill_begin(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s) {
  SELF;
  cqi_backend* be = sim->be;
  const cq_params* m = &sim->view->params;
  TRY(fill_buffers(sim, W));
  int initial = sim->model->desc.fluid_rest == CQ_FILL_REST_INITIAL;
  TRY(be->ops->grid_clear(be, W->base));
  TRY(be->ops->fill_scatter(be, c, s, m, NULL, W->base));
  TRY(be->ops->fill_node(be, c, CQI_FILL_BASE, W->base, initial ? W->ref : NULL, NULL, NULL));
  if (initial && !W->ref_set) { /* this state's fill is the rest fill: base's phi0 from it */
    TRY(be->ops->fill_node(be, c, CQI_FILL_REF, W->base, W->ref, NULL, NULL));
    W->ref_set = 1;
  }
  return CQ_OK;
}

/* The fill at the grid velocities v (NULL: the substep's start) and the pressures there, into lin. */
static int fill_at_velocities(cqi_sim* sim, fill_self* W, const cq_substep* c, const cq_particles* s,
                              const cq_real* v, cq_real* lin) {
  cqi_backend* be = sim->be;
  TRY(be->ops->grid_clear(be, lin));
  if (v) TRY(be->ops->fill_scatter(be, c, s, &sim->view->params, v, lin));
  return be->ops->fill_node(be, c, CQI_FILL_GRAD, W->base, NULL, NULL, lin);
}

static int fill_gradient(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* v,
                         cq_real* g) {
  SELF;
  TRY(fill_at_velocities(sim, W, c, s, v, W->lin));
  return sim->be->ops->fill_force(sim->be, c, s, &sim->view->params, W->lin, c->dt, g);
}

static int fill_linearise(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* v) {
  SELF;
  return fill_at_velocities(sim, W, c, s, v, W->at);
}

static int fill_hvp(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* x,
                    cq_real* out) {
  SELF;
  cqi_backend* be = sim->be;
  const cq_params* m = &sim->view->params;
  TRY(be->ops->grid_clear(be, W->dir));
  TRY(be->ops->fill_scatter(be, c, s, m, x, W->dir));
  TRY(be->ops->fill_node(be, c, CQI_FILL_HVP, NULL, NULL, W->at, W->dir));
  return be->ops->fill_force(be, c, s, m, W->dir, c->dt, out);
}

static int fill_predict(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* d,
                        long* changed) {
  SELF;
  cqi_backend* be = sim->be;
  double sums[4];
  TRY(be->ops->grid_clear(be, W->dir));
  TRY(be->ops->fill_scatter(be, c, s, &sim->view->params, d, W->dir));
  TRY(be->ops->fill_node(be, c, CQI_FILL_PREDICT, W->base, W->at, NULL, W->dir));
  TRY(be->ops->grid_sums(be, W->dir, sums));
  *changed = (long)(sums[2] + 0.5);
  return CQ_OK;
}

static int fill_predict_gradient(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, cq_real* g) {
  SELF;
  return sim->be->ops->fill_force(sim->be, c, s, &sim->view->params, W->dir, c->dt, g);
}

static int fill_line_begin(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* d) {
  SELF;
  cqi_backend* be = sim->be;
  TRY(be->ops->grid_clear(be, W->dir));
  return be->ops->fill_scatter(be, c, s, &sim->view->params, d, W->dir);
}

static int fill_line(cqi_sim* sim, void* self, const cq_substep* c, double a, double w[3]) {
  SELF;
  cqi_backend* be = sim->be;
  double sums[4];
  TRY(be->ops->grid_clear(be, W->line));
  TRY(be->ops->grid_axpy(be, (cq_real)a, W->dir, W->line)); /* slot 0: a delta_i */
  TRY(be->ops->fill_node(be, c, CQI_FILL_LINE, W->base, W->at, W->dir, W->line));
  TRY(be->ops->grid_sums(be, W->line, sums));
  for (int k = 0; k < 3; k++) w[k] = sums[k];
  return CQ_OK;
}

/* The implicit solve's share: lam . dW/dv at the converged v, pulled back into gs (x, F) and gp (vol0, and a fluid's
 * bulk), the base of begin at s. */
static int fill_solve_adj(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* v,
                          const cq_real* lam, cq_particles* gs, const cq_param_grads* gp) {
  SELF;
  cqi_backend* be = sim->be;
  const cq_params* m = &sim->view->params;
  TRY(fill_at_velocities(sim, W, c, s, v, W->lin));
  TRY(be->ops->grid_clear(be, W->dir));
  TRY(be->ops->fill_scatter(be, c, s, m, lam, W->dir)); /* a_i / dx^D (fill.h fill_adj_node) */
  TRY(be->ops->fill_node(be, c, CQI_FILL_ADJ, W->base, NULL, W->lin, W->dir));
  return be->ops->fill_adj(be, c, s, m, v, lam, W->lin, W->dir, gs, gp);
}

/* impulse: the explicit step's -dt dW/dx, the force at v = 0, into P2G's momentum grid. */
static int fill_impulse(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, cq_real* grid) {
  SELF;
  TRY(fill_at_velocities(sim, W, c, s, NULL, W->lin));
  return sim->be->ops->fill_force(sim->be, c, s, &sim->view->params, W->lin, -c->dt, grid);
}

/* The impulse is -g at v = 0, so its adjoint is the solve's with lam = -gm (the momentum slots; fill.h reads no
 * other). */
static int fill_impulse_adj(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, const cq_real* gm,
                            cq_particles* gs, const cq_param_grads* gp) {
  SELF;
  cqi_backend* be = sim->be;
  TRY(be->ops->grid_clear(be, W->at));
  TRY(be->ops->grid_axpy(be, -1, gm, W->at));
  return fill_solve_adj(sim, self, c, s, NULL, W->at, gs, gp);
}

/* The factor's rank-one pieces: node i's fill row (fill.h fill_rows) and its weight dx^D K_i / phi0_i^2 where it is
 * under pressure in the last linearisation or prediction (at's slot 2). Host-memory backends. */
static int fill_factor_shape(cqi_sim* sim, void* self, const cq_substep* c, int* reach, int* rank) {
  *reach = 2;
  *rank = sim->be->ops->fill_rows != NULL;
  return CQ_OK;
}

static int fill_factor_rows(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s,
                            const int32_t* slot, const long* node, long count, double* rows, double* weight) {
  SELF;
  cqi_backend* be = sim->be;
  int D = be->dim;
  TRY(be->ops->fill_rows(be, c, s, &sim->view->params, slot, rows));
  double Vc = 1;
  for (int a = 0; a < D; a++) Vc *= c->dx;
  for (long i = 0; i < count; i++) weight[i] = Vc * (double)W->at[node[i] * (D + 1) + 2];
  return CQ_OK;
}

static int fill_on(const cqi_model* m) { return m->desc.fluid == CQ_FLUID_FILL; }

int cqi_fill_reset(cqi_sim* sim) {
  fill_self* W = cqi_term_peek(sim, CQI_TERM_fill);
  if (!W) return CQ_OK;
  W->ref_set = 0;
  if (!W->ref) return CQ_OK;
  cqi_backend* be = sim->be;
  return be->ops->zero(be, W->ref, sizeof(cq_real) * be->n_nodes * (be->dim + 1));
}

void cqi_fill_vectors(cqi_sim* sim, const cq_real** base, const cq_real** lin) {
  const fill_self* W = cqi_term_peek(sim, CQI_TERM_fill);
  *base = W ? W->base : NULL;
  *lin = W ? W->lin : NULL;
}

const cqi_term cqi_term_fill = {
    .name = "fill",
    .self_size = sizeof(fill_self),
    .on = fill_on,
    .release = fill_release,
    .begin = fill_begin,
    .impulse = fill_impulse,
    .impulse_adj = fill_impulse_adj,
    .gradient = fill_gradient,
    .linearise = fill_linearise,
    .hvp = fill_hvp,
    .solve_adj = fill_solve_adj,
    .predict = fill_predict,
    .predict_gradient = fill_predict_gradient,
    .line_begin = fill_line_begin,
    .line = fill_line,
    .factor_shape = fill_factor_shape,
    .factor_rows = fill_factor_rows,
};

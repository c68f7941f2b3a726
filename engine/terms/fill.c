/* The fill water's per-substep work (engine/terms/fill.h has the math), composed of backend primitives for both
 * integrators: the substep's base and rest fill, the gradient of W in the grid velocities, its Hessian products, and
 * the explicit step's impulse. */
#include <string.h>
#include "integrator.h"

/* The grid vectors, allocated on first use; the rest fill's is zeroed in full (nodes it has not seen rest at 1). */
static int fill_buffers(cqi_sim* sim) {
  cqi_backend* be = sim->be;
  if (sim->fill.ref) return CQ_OK;
  size_t gb = sizeof(cq_real) * be->n_nodes * (be->dim + 1);
  cq_real** bufs[] = {&sim->fill.base, &sim->fill.lin, &sim->fill.at, &sim->fill.dir, &sim->fill.line};
  int ok = 1;
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) ok &= (*bufs[i] = be->ops->alloc(be, gb)) != NULL;
  cq_real* ref = be->ops->alloc(be, gb);
  if (!ok || !ref || be->ops->zero(be, ref, gb) != CQ_OK) { /* none kept: the next call starts afresh */
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
      if (*bufs[i]) be->ops->release(be, *bufs[i]), *bufs[i] = NULL;
    if (ref) be->ops->release(be, ref);
    return cqi_errorf(sim->err, CQ_ERR_NOMEM,
                      "fluid = \"fill\": out of memory for the fill's grid vectors (%ld "
                      "nodes)",
                      be->n_nodes);
  }
  sim->fill.ref = ref; /* last: marks the buffers complete */
  sim->fill.ref_set = 0;
  return CQ_OK;
}

void cqi_fill_release(cqi_sim* sim) {
  cqi_backend* be = sim->be;
  cq_real* bufs[] = {sim->fill.base, sim->fill.lin, sim->fill.at, sim->fill.dir, sim->fill.line, sim->fill.ref};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    if (bufs[i] && be) be->ops->release(be, bufs[i]);
  memset(&sim->fill, 0, sizeof sim->fill);
}

#define TRY(call)                 \
  do {                            \
    int st_ = (call);             \
    if (st_ != CQ_OK) return st_; \
  } while (0)

int cqi_fill_begin(cqi_sim* sim, const cq_substep* c, const cq_particles* s) {
  cqi_backend* be = sim->be;
  const cq_params* m = &sim->view->params;
  TRY(fill_buffers(sim));
  int initial = sim->model->desc.fluid_rest == CQ_FILL_REST_INITIAL;
  TRY(be->ops->grid_clear(be, sim->fill.base));
  TRY(be->ops->fill_scatter(be, c, s, m, NULL, sim->fill.base));
  TRY(be->ops->fill_node(be, c, CQI_FILL_BASE, sim->fill.base, initial ? sim->fill.ref : NULL, NULL, NULL));
  if (initial && !sim->fill.ref_set) { /* this state's fill is the rest fill: base's phi0 from it */
    TRY(be->ops->fill_node(be, c, CQI_FILL_REF, sim->fill.base, sim->fill.ref, NULL, NULL));
    sim->fill.ref_set = 1;
  }
  return CQ_OK;
}

/* The fill at the grid velocities v (NULL: the substep's start) and the pressures there, into lin. */
static int fill_at_velocities(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v,
                              cq_real* lin) {
  cqi_backend* be = sim->be;
  TRY(be->ops->grid_clear(be, lin));
  if (v) TRY(be->ops->fill_scatter(be, c, s, &sim->view->params, v, lin));
  return be->ops->fill_node(be, c, CQI_FILL_GRAD, sim->fill.base, NULL, NULL, lin);
}

int cqi_fill_gradient(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v, cq_real* g) {
  TRY(fill_at_velocities(sim, c, s, v, sim->fill.lin));
  return sim->be->ops->fill_force(sim->be, c, s, &sim->view->params, sim->fill.lin, c->dt, g);
}

int cqi_fill_linearise(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v) {
  return fill_at_velocities(sim, c, s, v, sim->fill.at);
}

int cqi_fill_hvp(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* x, cq_real* out) {
  cqi_backend* be = sim->be;
  const cq_params* m = &sim->view->params;
  TRY(be->ops->grid_clear(be, sim->fill.dir));
  TRY(be->ops->fill_scatter(be, c, s, m, x, sim->fill.dir));
  TRY(be->ops->fill_node(be, c, CQI_FILL_HVP, NULL, NULL, sim->fill.at, sim->fill.dir));
  return be->ops->fill_force(be, c, s, m, sim->fill.dir, c->dt, out);
}

int cqi_fill_predict(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* d, long* changed) {
  cqi_backend* be = sim->be;
  double sums[4];
  TRY(be->ops->grid_clear(be, sim->fill.dir));
  TRY(be->ops->fill_scatter(be, c, s, &sim->view->params, d, sim->fill.dir));
  TRY(be->ops->fill_node(be, c, CQI_FILL_PREDICT, sim->fill.base, sim->fill.at, NULL, sim->fill.dir));
  TRY(be->ops->grid_sums(be, sim->fill.dir, sums));
  *changed = (long)(sums[2] + 0.5);
  return CQ_OK;
}

int cqi_fill_predict_gradient(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_real* g) {
  return sim->be->ops->fill_force(sim->be, c, s, &sim->view->params, sim->fill.dir, c->dt, g);
}

int cqi_fill_line_begin(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* d) {
  cqi_backend* be = sim->be;
  TRY(be->ops->grid_clear(be, sim->fill.dir));
  return be->ops->fill_scatter(be, c, s, &sim->view->params, d, sim->fill.dir);
}

int cqi_fill_line(cqi_sim* sim, const cq_substep* c, double a, double w[3]) {
  cqi_backend* be = sim->be;
  double sums[4];
  TRY(be->ops->grid_clear(be, sim->fill.line));
  TRY(be->ops->grid_axpy(be, (cq_real)a, sim->fill.dir, sim->fill.line)); /* slot 0: a delta_i */
  TRY(be->ops->fill_node(be, c, CQI_FILL_LINE, sim->fill.base, sim->fill.at, sim->fill.dir, sim->fill.line));
  TRY(be->ops->grid_sums(be, sim->fill.line, sums));
  for (int k = 0; k < 3; k++) w[k] = sums[k];
  return CQ_OK;
}

int cqi_fill_step(cqi_sim* sim, const cq_substep* c, double s_rest, double kappa, double slope0, double* step) {
  enum { MAX_EVALS = 30 };
  double w[3], lo = 0, hi = 1, a = 1;
  if (!(kappa > 0)) kappa = 0; /* an indefinite rest (a compressed solid): W alone bounds the model */
  TRY(cqi_fill_line(sim, c, a, w));
  double m1 = s_rest + kappa * a + w[1], m2 = kappa + w[2];
  for (int k = 0; k < MAX_EVALS && hi > lo; k++) { /* the root lies in (lo, hi) once m1 > 0 at a = 1 */
    if (k == 0 && !(m1 > 0)) break;                /* the full step still descends: take it */
    if (m1 > 0)
      hi = a;
    else
      lo = a;
    if (fabs(m1) <= 0.01 * fabs(slope0) || hi - lo <= 1e-6) break;
    double next = m2 > 0 ? a - m1 / m2 : 0.5 * (lo + hi); /* exact within one linear piece of m' */
    a = next > lo && next < hi ? next : 0.5 * (lo + hi);
    TRY(cqi_fill_line(sim, c, a, w));
    m1 = s_rest + kappa * a + w[1], m2 = kappa + w[2];
  }
  *step = a;
  return CQ_OK;
}

int cqi_fill_adjoint(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v, const cq_real* lam,
                     cq_particles* gs, const cq_param_grads* gp) {
  cqi_backend* be = sim->be;
  const cq_params* m = &sim->view->params;
  TRY(fill_at_velocities(sim, c, s, v, sim->fill.lin));
  TRY(be->ops->grid_clear(be, sim->fill.dir));
  TRY(be->ops->fill_scatter(be, c, s, m, lam, sim->fill.dir)); /* a_i / dx^D (fill.h fill_adj_node) */
  TRY(be->ops->fill_node(be, c, CQI_FILL_ADJ, sim->fill.base, NULL, sim->fill.lin, sim->fill.dir));
  return be->ops->fill_adj(be, c, s, m, v, lam, sim->fill.lin, sim->fill.dir, gs, gp);
}

int cqi_fill_explicit(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_real* grid) {
  TRY(cqi_fill_begin(sim, c, s));
  TRY(fill_at_velocities(sim, c, s, NULL, sim->fill.lin));
  return sim->be->ops->fill_force(sim->be, c, s, &sim->view->params, sim->fill.lin, -c->dt, grid);
}

/* The explicit impulse is -g at v = 0 (cqi_fill_explicit), so its adjoint is cqi_fill_adjoint's with lam = -gm (the
 * momentum slots; fill.h reads no other). The substep's base again first: the memo may have restored its grid. */
int cqi_fill_explicit_adjoint(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* gm,
                              cq_particles* gs, const cq_param_grads* gp) {
  cqi_backend* be = sim->be;
  TRY(cqi_fill_begin(sim, c, s));
  TRY(be->ops->grid_clear(be, sim->fill.at));
  TRY(be->ops->grid_axpy(be, -1, gm, sim->fill.at));
  return cqi_fill_adjoint(sim, c, s, NULL, sim->fill.at, gs, gp);
}

/* Mass moments of a state and their adjoint (bodies in moments.h), for the Lua tape's mass centroid and spin
 * (lua/cq/tape.lua): on the world's backend where it can use the state in place (host memory, or a state the GPU keeps
 * between control steps), so a rollout that reads them every control step moves no state to the host; else on the
 * host, in particle order. */
#include <string.h>
#include "internal.h"
#include "kernels.h"

/* The host's sums (particle order) and adjoint, for states the backend cannot use in place. */
#define CQI_HOST_MOMENTS(DIM)                                                                    \
  static void host_moments_##DIM(const cq_particles* s, const cq_params* m, double* out) {       \
    for (int k = 0; k < CQI_MOMENTS(DIM); k++) out[k] = 0;                                       \
    for (int p = 0; p < s->n; p++) moments_add_##DIM(s, m, p, out);                              \
  }                                                                                              \
  static void host_moments_adj_##DIM(const cq_particles* s, const cq_params* m, const double* g, \
                                     const cq_particles* gs, cq_real* gmass) {                   \
    for (int p = 0; p < s->n; p++) moments_adj_##DIM(s, m, p, g, gs, gmass);                     \
  }
CQI_HOST_MOMENTS(2)
CQI_HOST_MOMENTS(3)
#undef CQI_HOST_MOMENTS

static int check_state(cq_world* w, const cq_state* s, const char* where, const char* name) {
  if (!s || s->real_bits != CQ_REAL_BITS || s->n != w->model.n || s->dim != w->model.dim)
    return cqi_errorf(&w->err, CQ_ERR_ARG, "%s: %s must be a state of this world (%d particles in %dD)", where, name,
                      w->model.n, w->model.dim);
  return CQ_OK;
}

/* Whether the backend's kernels can use block in place. */
static int on_backend(const cq_world* w, const cq_state* s) { return w->be->ops->host_memory || s->shared; }

int cq_state_moments(cq_world* w, const cq_state* s, double* out) {
  int st = check_state(w, s, "moments", "s");
  if (st == CQ_OK) st = cqi_sync_model(w); /* the masses as they are now */
  if (st != CQ_OK) return st;
  cqi_backend* be = w->be;
  if (on_backend(w, s)) return be->ops->moments(be, &s->p, &w->view.params, out);
  if (!be->ops->host_memory && (st = be->ops->download(be, s->block, s->block, 0)) != CQ_OK) return st;
  cq_params hp = cqi_model_params(&w->model);
  if (s->dim == 2)
    host_moments_2(&s->p, &hp, out);
  else
    host_moments_3(&s->p, &hp, out);
  return CQ_OK;
}

int cq_state_moments_adj(cq_world* w, const cq_state* s, const double* g, cq_state* gs, cq_memo* m) {
  int st = check_state(w, s, "moments_adj", "s");
  if (st == CQ_OK) st = check_state(w, gs, "moments_adj", "gs");
  if (st == CQ_OK) st = cqi_sync_model(w);
  if (st != CQ_OK) return st;
  int mass_on_backend = 1;
  cq_real* gmass = m ? cqi_memo_grad_mass(m, &mass_on_backend) : NULL;
  cqi_backend* be = w->be;
  if (on_backend(w, s) && on_backend(w, gs) && mass_on_backend)
    return be->ops->moments_adj(be, &s->p, &w->view.params, g, &gs->p, gmass);
  /* the host path touches what the backend may still be writing: wait for it (a download between equal pointers) */
  if (!be->ops->host_memory && (st = be->ops->download(be, gs->block, gs->block, 0)) != CQ_OK) return st;
  cq_params hp = cqi_model_params(&w->model);
  if (s->dim == 2)
    host_moments_adj_2(&s->p, &hp, g, &gs->p, gmass);
  else
    host_moments_adj_3(&s->p, &hp, g, &gs->p, gmass);
  return CQ_OK;
}

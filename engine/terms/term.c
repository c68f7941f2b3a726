/* The physics terms' hooks over a world's terms (term.h): each loops over CQ_TERMS in order, skipping the terms the
 * world does not have and those without the hook. */
#include "term.h"
#include <math.h>
#include <stdlib.h>

static const cqi_term* const all[CQI_N_TERMS] = {
#define CQI_TERM_PTR(name, doc) &cqi_term_##name,
    CQ_TERMS(CQI_TERM_PTR)
#undef CQI_TERM_PTR
};

static int index_of(const cqi_term* t) {
  for (int i = 0; i < CQI_N_TERMS; i++)
    if (all[i] == t) return i;
  return -1;
}

void* cqi_term_self(cqi_sim* sim, const cqi_term* t) {
  int i = index_of(t);
  if (i < 0) return NULL;
  if (!sim->term_self[i]) sim->term_self[i] = calloc(1, t->self_size ? t->self_size : 1);
  return sim->term_self[i];
}

/* Runs hook(sim, self, args...) for each of the world's terms that has it. */
#define EACH(hook, ...)                                                                                           \
  for (int i = 0; i < CQI_N_TERMS; i++) {                                                                         \
    const cqi_term* t = all[i];                                                                                   \
    if (!t->hook || !t->on(sim->model)) continue;                                                                 \
    void* self = cqi_term_self(sim, t);                                                                           \
    if (!self) return cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory for the %s term's state", t->name);       \
    int st = t->hook(sim, self, __VA_ARGS__);                                                                     \
    if (st != CQ_OK) return st;                                                                                   \
  }                                                                                                               \
  return CQ_OK

/* Whether one of the world's terms has the hook. */
#define ANY(hook)                                           \
  for (int i = 0; i < CQI_N_TERMS; i++)                     \
    if (all[i]->hook && all[i]->on(sim->model)) return 1; \
  return 0

static int any_project(const cqi_sim* sim) { ANY(project); }
static int any_output(const cqi_sim* sim) { ANY(output); }
int cqi_terms_piecewise(const cqi_sim* sim) { ANY(line); }

int cqi_terms_project(cqi_sim* sim, const cq_substep* c, cq_particles* s) { EACH(project, c, s); }

int cqi_terms_input(cqi_sim* sim, const cq_particles* s, cq_particles* out) {
  *out = *s;
  if (!any_project(sim)) return CQ_OK;
  cqi_backend* be = sim->be;
  size_t bytes = sizeof(cq_real) * (size_t)cqi_state_len(be->n, be->dim);
  if (!sim->input_copy && !(sim->input_copy = be->ops->alloc(be, bytes)))
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory for the backward's copy of a substep's input");
  *out = cqi_particles_view(sim->input_copy, be->n, be->dim);
  return be->ops->copy(be, sim->input_copy, s->x, bytes);
}

int cqi_terms_project_adj(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_particles* g0,
                          const cq_param_grads* gp) {
  EACH(project_adj, c, s, g0, gp);
}
int cqi_terms_begin(cqi_sim* sim, cq_substep* c, const cq_particles* s) { EACH(begin, c, s); }
int cqi_terms_stress(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* v) { EACH(stress, c, s, v); }
int cqi_terms_stress_dir(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* x) {
  EACH(stress_dir, c, s, x);
}
int cqi_terms_output(cqi_sim* sim, const cq_substep* c, cq_particles* s1) { EACH(output, c, s1); }

int cqi_terms_output_adj(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* v, const cq_particles* g1,
                         cq_particles* g0, const cq_param_grads* gp, cq_real* gv) {
  if (!any_output(sim)) /* the fields a term would own (pg) pass through */
    return sim->be->ops->copy(sim->be, g0->pg, g1->pg, sizeof(cq_real) * sim->be->n);
  EACH(output_adj, c, s, v, g1, g0, gp, gv);
}

int cqi_terms_impulse(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_real* grid) {
  EACH(impulse, c, s, grid);
}
int cqi_terms_impulse_adj(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* gm, cq_particles* g0,
                          const cq_param_grads* gp) {
  EACH(impulse_adj, c, s, gm, g0, gp);
}
int cqi_terms_p2g_adj_begin(cqi_sim* sim, cq_substep* c) { EACH(p2g_adj_begin, c); }
int cqi_terms_stress_adj(cqi_sim* sim, cq_substep* c, const cq_particles* s, cq_particles* g0,
                         const cq_param_grads* gp) {
  EACH(stress_adj, c, s, g0, gp);
}
int cqi_terms_gradient(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v, cq_real* g) {
  EACH(gradient, c, s, v, g);
}
int cqi_terms_linearise(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v) {
  EACH(linearise, c, s, v);
}
int cqi_terms_hvp(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* x, cq_real* out) {
  EACH(hvp, c, s, x, out);
}
int cqi_terms_solve_adj_begin(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* v, const cq_real* lam,
                              cq_particles* g0, const cq_param_grads* gp) {
  EACH(solve_adj_begin, c, s, v, lam, g0, gp);
}
int cqi_terms_solve_adj(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v, const cq_real* lam,
                        cq_particles* g0, const cq_param_grads* gp) {
  EACH(solve_adj, c, s, v, lam, g0, gp);
}

int cqi_terms_predict(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* d, long* changed) {
  long total = 0, one;
  for (int i = 0; i < CQI_N_TERMS; i++) {
    const cqi_term* t = all[i];
    if (!t->predict || !t->on(sim->model)) continue;
    void* self = cqi_term_self(sim, t);
    int st = self ? t->predict(sim, self, c, s, d, &one) : cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory");
    if (st != CQ_OK) return st;
    total += one;
  }
  *changed = total;
  return CQ_OK;
}
int cqi_terms_predict_gradient(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_real* g) {
  EACH(predict_gradient, c, s, g);
}
int cqi_terms_line_begin(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* d) {
  EACH(line_begin, c, s, d);
}

int cqi_terms_line(cqi_sim* sim, const cq_substep* c, double a, double w[3]) {
  w[0] = w[1] = w[2] = 0;
  for (int i = 0; i < CQI_N_TERMS; i++) {
    const cqi_term* t = all[i];
    if (!t->line || !t->on(sim->model)) continue;
    double wt[3];
    void* self = cqi_term_self(sim, t);
    int st = self ? t->line(sim, self, c, a, wt) : cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory");
    if (st != CQ_OK) return st;
    for (int k = 0; k < 3; k++) w[k] += wt[k];
  }
  return CQ_OK;
}

/* The first step a in (0, 1] of the line search with piecewise-quadratic terms: the root of the derivative of the
 * model s_rest a + kappa a^2 / 2 + W(v + a d) - W(v) of dt E along d (s_rest, kappa: the slope and curvature of the
 * rest of dt E at a = 0; slope0 the whole slope; W the terms' sum, cqi_terms_line), to 1 % of slope0. The model's
 * derivative is piecewise linear and increasing (W is convex), so Newton's method on it inside a bracket takes a few
 * line evaluations. After cqi_terms_line_begin. */
int cqi_terms_line_step(cqi_sim* sim, const cq_substep* c, double s_rest, double kappa, double slope0, double* step) {
  enum { MAX_EVALS = 30 };
  double w[3], lo = 0, hi = 1, a = 1;
  if (!(kappa > 0)) kappa = 0; /* an indefinite rest (a compressed solid): W alone bounds the model */
  int st = cqi_terms_line(sim, c, a, w);
  if (st != CQ_OK) return st;
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
    if ((st = cqi_terms_line(sim, c, a, w)) != CQ_OK) return st;
    m1 = s_rest + kappa * a + w[1], m2 = kappa + w[2];
  }
  *step = a;
  return CQ_OK;
}

int cqi_terms_factor_ctx(cqi_sim* sim, cq_substep* c) { EACH(factor_ctx, c); }

int cqi_terms_factor_shape(cqi_sim* sim, const cq_substep* c, int* reach, int* rank) {
  *reach = 2, *rank = 0;
  for (int i = 0; i < CQI_N_TERMS; i++) {
    const cqi_term* t = all[i];
    if (!t->factor_shape || !t->on(sim->model)) continue;
    int r = 2, k = 0;
    void* self = cqi_term_self(sim, t);
    int st = self ? t->factor_shape(sim, self, c, &r, &k) : cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory");
    if (st != CQ_OK) return st;
    if (r > *reach) *reach = r;
    *rank += k;
  }
  return CQ_OK;
}
int cqi_terms_factor_blocks(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const int32_t* slot,
                            double* blocks) {
  EACH(factor_blocks, c, s, slot, blocks);
}
int cqi_terms_factor_rows(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const int32_t* slot,
                          const long* node, long count, double* rows, double* weight) {
  EACH(factor_rows, c, s, slot, node, count, rows, weight);
}

static int any_force(const cqi_sim* sim) { ANY(force); }
static int terms_force(cqi_sim* sim, const cq_particles* s, const cq_real* u, cq_real* fext) {
  EACH(force, s, u, fext);
}
static int terms_force_adj(cqi_sim* sim, const cq_particles* s, const cq_real* u, const cq_real* gf, cq_particles* g0,
                           const cq_param_grads* gp, cq_real* gact) {
  EACH(force_adj, s, u, gf, g0, gp, gact);
}
static int terms_force_adj_act(cqi_sim* sim, const cq_particles* s, const cq_real* u, const cq_real* gf,
                               cq_particles* g0, double* gu) {
  EACH(force_adj_act, s, u, gf, g0, gu);
}

int cqi_extra_forces(cqi_sim* sim, const cq_particles* s, const cq_ctl* ctl, cq_real* fext, const cq_real** out) {
  cqi_backend* be = sim->be;
  *out = NULL;
  if (!any_force(sim) && !ctl->force) return CQ_OK;
  size_t bytes = sizeof(cq_real) * (size_t)be->n * be->dim;
  int st = ctl->force ? be->ops->copy(be, fext, ctl->force, bytes) : be->ops->zero(be, fext, bytes);
  if (st == CQ_OK) st = terms_force(sim, s, ctl->u, fext);
  if (st == CQ_OK) *out = fext;
  return st;
}

int cqi_p2g_adj(cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_ctl* ctl, const cq_ctl* kc,
                const cq_real* adj, const cq_real* cache, cq_real* gact, const cq_real* gact_more, cq_real* gfext,
                cq_particles* g0, const cqi_adj_out* out) {
  cqi_backend* be = sim->be;
  const cqi_backend_ops* op = be->ops;
  cq_ctl_grads gc = {gact, kc->force ? gfext : NULL, out->gstress};
  int st = op->p2g_adj(be, c, s, &sim->view->params, kc, adj, g0, out->gp, &gc, cache);
  if (st == CQ_OK && gact_more) st = op->axpy(be, be->n, 1, gact_more, gact); /* the implicit pressure's dL/du */
  if (st == CQ_OK && kc->force) st = terms_force_adj(sim, s, ctl->u, gfext, g0, out->gp, gact);
  if (st == CQ_OK && be->n_act > 0) st = op->act_grad(be, sim->view->params.act_id, gact, out->gu);
  if (st != CQ_OK || !kc->force) return st;
  st = terms_force_adj_act(sim, s, ctl->u, gfext, g0, out->gu);
  if (st == CQ_OK && out->gforce) st = op->axpy(be, (long)be->n * be->dim, 1, gfext, out->gforce);
  return st;
}

void cqi_terms_release(cqi_sim* sim) {
  for (int i = 0; i < CQI_N_TERMS; i++) {
    if (!sim->term_self[i]) continue;
    if (all[i]->release) all[i]->release(sim, sim->term_self[i]);
    free(sim->term_self[i]);
    sim->term_self[i] = NULL;
  }
  if (sim->input_copy && sim->be) sim->be->ops->release(sim->be, sim->input_copy);
  sim->input_copy = NULL;
}

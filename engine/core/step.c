/* A control step: checks of the control and the parameters, staging of the control for the backend, the substeps
 * through the world's integrator, and blow-up messages naming the check, the particle and the step. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

static long shape_len(int shape, int n, int n_act, int dim) {
  return shape == CQ_SHAPE_ACT ? n_act
                               : (long)n * (shape == CQ_SHAPE_SCALAR ? 1
                                            : shape == CQ_SHAPE_VEC  ? dim
                                                                     : dim * dim);
}

/* Where entry i of a control field sits, for messages: "u[3]", "particle 5, component 2", "particle 5, entry (1, 2)". */
static void entry_text(int shape, long i, int n, int dim, char* out, int len) {
  if (shape == CQ_SHAPE_ACT)
    snprintf(out, len, "[%ld] (actuator %ld)", i + 1, i + 1);
  else if (shape == CQ_SHAPE_VEC)
    snprintf(out, len, " of particle %ld, component %ld", i % n + 1, i / n + 1);
  else if (shape == CQ_SHAPE_MAT)
    snprintf(out, len, " of particle %ld, entry (%ld, %ld)", i % n + 1, i / n / dim + 1, i / n % dim + 1);
  else
    snprintf(out, len, " of particle %ld", i + 1);
}

/* One control field: src (doubles, may be NULL) checked and converted into host, then made visible to the backend
 * in *b (allocated on first use); *out is the kernels' pointer (NULL when absent, except u which is zero). */
static int stage_field(cq_world* w, const char* name, int shape, const double* src, cq_real** host, cq_real** b,
                       long step, const cq_real** out) {
  const cqi_model* m = &w->model;
  long len = shape_len(shape, m->n, m->n_act, m->dim);
  cqi_backend* be = w->be;
  *out = NULL;
  if (!src && shape != CQ_SHAPE_ACT) return CQ_OK;
  for (long i = 0; src && i < len; i++)
    if (!isfinite(src[i])) {
      char where[96];
      entry_text(shape, i, m->n, m->dim, where, sizeof where);
      return cqi_errorf(&w->err, CQ_ERR_ARG, "step %ld: %s%s is not finite (%g)", step, name, where,
                        isnan(src[i]) ? fabs(src[i]) : src[i]); /* "nan", not printf's "-nan" */
    }
  size_t bytes = sizeof(cq_real) * (size_t)(len > 0 ? len : 1);
  if (!*host && !(*host = malloc(bytes)))
    return cqi_errorf(&w->err, CQ_ERR_NOMEM, "out of memory staging the control field %s", name);
  for (long i = 0; i < len; i++) (*host)[i] = src ? (cq_real)src[i] : 0;
  if (be->ops->host_memory)
    *b = *host;
  else {
    if (!*b && !(*b = be->ops->alloc(be, bytes)))
      return cqi_errorf(&w->err, CQ_ERR_NOMEM, "out of memory on the backend for the control field %s", name);
    int st = be->ops->upload(be, *b, *host, bytes);
    if (st != CQ_OK) return st;
  }
  *out = *b;
  return CQ_OK;
}

int cqi_stage_control(cq_world* w, const cq_control* c, long step, cq_ctl* out) {
  int st = CQ_OK;
#define CQI_STAGE(name, shape, doc) \
  if (st == CQ_OK)                  \
    st = stage_field(w, #name, shape, c ? c->name : NULL, &w->ctl.host_##name, &w->ctl.b_##name, step, &out->name);
  CQ_CONTROL_FIELDS(CQI_STAGE)
#undef CQI_STAGE
  return st;
}

/* A host array of working precision (may be NULL) as the backend sees it: itself, or uploaded into *b. */
static int from_host(cq_world* w, int shape, const cq_real* host, cq_real** b, const cq_real** out) {
  cqi_backend* be = w->be;
  *out = host;
  if (!host || be->ops->host_memory) return CQ_OK;
  const cqi_model* m = &w->model;
  size_t bytes = sizeof(cq_real) * (size_t)shape_len(shape, m->n, m->n_act, m->dim);
  if (!*b && !(*b = be->ops->alloc(be, bytes ? bytes : sizeof(cq_real))))
    return cqi_errorf(&w->err, CQ_ERR_NOMEM, "out of memory on the backend for a control field");
  *out = *b;
  return bytes ? be->ops->upload(be, *b, host, bytes) : CQ_OK;
}

int cqi_ctl_from_host(cq_world* w, const cq_real* u, const cq_real* force, const cq_real* stress, cq_ctl* out) {
  int st = from_host(w, CQ_SHAPE_ACT, u, &w->ctl.b_u, &out->u);
  if (st == CQ_OK) st = from_host(w, CQ_SHAPE_VEC, force, &w->ctl.b_force, &out->force);
  if (st == CQ_OK) st = from_host(w, CQ_SHAPE_MAT, stress, &w->ctl.b_stress, &out->stress);
  return st;
}

int cqi_sync_model(cq_world* w) {
  if (w->synced != w->model.generation) {
    int st = w->be->ops->sync_model(w->be, &w->model, &w->view);
    if (st != CQ_OK) return st;
    w->synced = w->model.generation;
  }
  return CQ_OK;
}

int cqi_prepare_step(cq_world* w, long step) {
  cqi_model* m = &w->model;
  if (!w->committed) return cqi_errorf(&w->err, CQ_ERR_STATE, "step: call commit first");
  memset(&w->err.blowup, 0, sizeof w->err.blowup);
  w->err.blowup.particle = -1;
  if (m->validated != m->generation) { /* parameters were written since the last validation */
    int st = cqi_model_validate(m, &w->err);
    if (st != CQ_OK) {
      char why[sizeof w->err.msg];
      snprintf(why, sizeof why, "%s", w->err.msg);
      return cqi_errorf(&w->err, st,
                        "step %ld: %s (parameters are validated again before a step that follows a change)", step, why);
    }
  }
  char why[sizeof w->err.msg];
  if (w->integ->cfl && cqi_stable_dt_exceeded(m, why, sizeof why)) {
    w->err.blowup.check = CQ_CHECK_UNSTABLE_DT;
    w->err.blowup.particle = m->stiffest;
    w->err.blowup.step = step;
    return cqi_errorf(&w->err, CQ_ERR_BLOWUP, "step %ld: %s", step, why);
  }
  int st = cqi_sync_model(w);
  if (st != CQ_OK) return st;
  w->threads_used = w->be->ops->set_threads(w->be, w->threads);
  return CQ_OK;
}

static const volatile int* interrupt_flag;
void cq_set_interrupt_flag(const volatile int* flag) { interrupt_flag = flag; }

int cqi_poll_interrupt(cq_world* w, const char* what, long step, long sub, int substeps) {
  int sig = interrupt_flag ? *interrupt_flag : 0;
  if (!sig) return CQ_OK;
  char name[32];
  if (sig == 2)
    snprintf(name, sizeof name, "SIGINT");
  else if (sig == 15)
    snprintf(name, sizeof name, "SIGTERM");
  else
    snprintf(name, sizeof name, "signal %d", sig);
  return cqi_errorf(&w->err, CQ_ERR_INTERRUPTED, "interrupted by %s during %s at step %ld, before substep %ld of %d",
                    name, what, step, sub + 1, substeps);
}

int cqi_blowup(cq_world* w, const cqi_check* bad, long k, long step, const cq_particles* s) {
  const cqi_model* m = &w->model;
  int p = bad->particle, n = m->n, D = m->dim, b = m->desc.substeps;
  w->err.blowup.check = bad->check;
  w->err.blowup.particle = p;
  w->err.blowup.step = step;
  w->err.blowup.substep = k;
  char what[320] = "", hint[320] = "";
  double x[3] = {0}, v[3] = {0}, speed = 0;
  for (int a = 0; a < D; a++) {
    x[a] = s->x[a * n + p];
    v[a] = s->v[a * n + p];
    speed += v[a] * v[a];
    if (isnan(x[a])) x[a] = fabs(x[a]); /* printed "nan", not "-nan" */
    if (isnan(v[a])) v[a] = fabs(v[a]);
  }
  speed = sqrt(speed);
  char pos[96], vel[96];
  snprintf(pos, sizeof pos, D == 2 ? "(%g, %g)" : "(%g, %g, %g)", x[0], x[1], x[2]);
  snprintf(vel, sizeof vel, D == 2 ? "(%g, %g)" : "(%g, %g, %g)", v[0], v[1], v[2]);
  if (bad->check == CQ_CHECK_INVERTED) {
    cq_real F[9] = {0};
    for (int e = 0; e < D * D; e++) F[e] = s->F[e * n + p];
    double J = D == 2 ? F[0] * F[3] - F[1] * F[2]
                      : F[0] * (F[4] * F[8] - F[5] * F[7]) - F[1] * (F[3] * F[8] - F[5] * F[6]) +
                            F[2] * (F[3] * F[7] - F[4] * F[6]);
    snprintf(what, sizeof what, "J = det F = %g <= 0: the element inverted", J);
    snprintf(hint, sizeof hint,
             "the material may be too soft for the load (actuation, contact) or the substep too "
             "large (stable limit %g, substep %g)",
             m->stable_dt, m->dt_sub);
  } else if (bad->check == CQ_CHECK_TOO_FAST) {
    double dt = ldexp(m->dt_sub, -bad->split); /* a split implicit substep's piece */
    snprintf(what, sizeof what, "moved more than one cell: |v| dt = %g > dx = %g (velocity %s%s)", speed * dt,
             m->desc.dx, vel, bad->split ? ", in a piece of the substep split by implicit.max_split" : "");
    snprintf(hint, sizeof hint, "reduce the substep (more substeps) or the forces and actuation");
  } else if (bad->check == CQ_CHECK_OUTSIDE) {
    int axis = 0;
    for (int a = 0; a < D; a++) {
      double g = x[a] / m->desc.dx - 0.5;
      if (!(g >= 0 && g < m->desc.res[a] - 2)) axis = a;
    }
    snprintf(what, sizeof what,
             "left the grid: at %s, coordinate %d must stay in [0.5 dx, (res[%d] - 1.5) dx) = "
             "[%g, %g) (velocity %s)",
             pos, axis + 1, axis + 1, 0.5 * m->desc.dx, (m->desc.res[axis] - 1.5) * m->desc.dx, vel);
    snprintf(hint, sizeof hint, "add walls, enlarge the grid or keep the particles away from its edge");
  } else {
    snprintf(what, sizeof what, "a non-finite value (x = %s, v = %s)", pos, vel);
    snprintf(hint, sizeof hint, "the substep %g may be above the stable limit %g, or a parameter or control is extreme",
             m->dt_sub, m->stable_dt);
  }
  char when[96];
  if (bad->after && bad->split)
    snprintf(when, sizeof when, "in substep %ld of %d, halved %d times (implicit.max_split)", k % b + 1, b, bad->split);
  else if (bad->after)
    snprintf(when, sizeof when, "after substep %ld of %d, t = %g", k % b + 1, b, (k + 1) * m->dt_sub);
  else
    snprintf(when, sizeof when, "before substep %ld of %d, t = %g", k % b + 1, b, k * m->dt_sub);
  char desc[256];
  cqi_model_describe(m, p, desc, sizeof desc);
  return cqi_errorf(&w->err, CQ_ERR_BLOWUP, "blow-up at step %ld (%s): particle %d (%s) %s; %s", step, when, p + 1,
                    desc, what, hint);
}

/* The host copy of a state in backend memory (for messages), or NULL when out of memory. */
static cq_real* host_copy(cq_world* w, const cq_particles* s) {
  long len = cqi_state_len(w->model.n, w->model.dim);
  cq_real* h = malloc(sizeof(cq_real) * len);
  if (h && w->be->ops->download(w->be, h, s->x, sizeof(cq_real) * len) != CQ_OK) free(h), h = NULL;
  return h;
}

/* The blow-up error of a failed check of substep k (the state s, in backend memory, as the check left it). */
static int report_blowup(cq_world* w, const cqi_check* bad, long k, long step, const cq_particles* s) {
  if (w->be->ops->host_memory) return cqi_blowup(w, bad, k, step, s);
  cq_real* h = host_copy(w, s);
  if (!h)
    return cqi_errorf(&w->err, CQ_ERR_BLOWUP, "blow-up at step %ld: particle %d failed the %s check", step,
                      bad->particle + 1, cq_name(CQ_LIST_CHECK, bad->check, NULL));
  cq_particles hp = cqi_particles_view(h, w->model.n, w->model.dim);
  int st = cqi_blowup(w, bad, k, step, &hp);
  free(h);
  return st;
}

int cqi_batch_begin(cq_world* w, int* batched) {
  *batched = w->integ->batch && w->be->ops->begin_batch;
  return *batched ? w->be->ops->begin_batch(w->be) : CQ_OK;
}

int cqi_batch_end(cq_world* w, int batched, int st, cqi_check* bad) {
  if (!batched) return st;
  cqi_check late;
  int st2 = w->be->ops->end_batch(w->be, &late);
  if (st2 != CQ_OK) return st2;
  if (late.check == CQ_CHECK_OK) return st;
  *bad = late; /* it came first: what stopped the loop (an interruption) came later */
  return CQ_ERR_BLOWUP;
}

int cqi_run_substeps(cq_world* w, cq_particles* s, long* substep, long step, const cq_ctl* ctl) {
  long k0 = *substep;
  int batched, st = cqi_batch_begin(w, &batched);
  cqi_check bad = {CQ_CHECK_OK, -1, 0, 0, 0};
  for (int b = 0; b < w->model.desc.substeps && st == CQ_OK; b++) {
    st = cqi_poll_interrupt(w, "the step", step, b, w->model.desc.substeps);
    if (st == CQ_OK) st = w->integ->substep(&w->sim, s, ctl, *substep, b == 0, &bad);
    if (st == CQ_OK) (*substep)++;
  }
  st = cqi_batch_end(w, batched, st, &bad);
  if (st == CQ_ERR_BLOWUP && bad.check != CQ_CHECK_OK) {
    long k = batched ? k0 + bad.substep : *substep; /* one prepare per substep */
    *substep = bad.after ? k + 1 : k;               /* after: the state is the failing substep's output */
    return report_blowup(w, &bad, k, step, s);
  }
  return st;
}

int cq_step(cq_world* w, cq_state* s, const cq_control* c) {
  if (s->real_bits != CQ_REAL_BITS || s->n != w->model.n || s->dim != w->model.dim)
    return cqi_errorf(&w->err, CQ_ERR_ARG, "step: the state does not belong to this world");
  long step = s->substep / w->model.desc.substeps + 1;
  int st = cqi_prepare_step(w, step);
  cq_ctl ctl;
  if (st == CQ_OK) st = cqi_stage_control(w, c, step, &ctl);
  if (st != CQ_OK) return st;
  cqi_backend* be = w->be;
  size_t bytes = sizeof(cq_real) * s->block_len;
  /* where the kernels run on the state: in place (host memory, or shared memory kept on the device between control
   * steps), else a backend copy; transfers between equal pointers only move the block where the next user is */
  cq_real* wb = be->ops->host_memory || s->shared ? s->block : w->work;
  if ((st = be->ops->upload(be, wb, s->block, bytes)) != CQ_OK) return st;
  cq_particles work = cqi_particles_view(wb, s->n, s->dim);
  long k = s->substep;
  st = cqi_run_substeps(w, &work, &k, step, &ctl);
  s->substep = k;
  int st2 = be->ops->download(be, s->block, wb, bytes);
  if (st == CQ_OK) st = st2;
  if (st == CQ_OK) w->err.msg[0] = 0;
  return st;
}

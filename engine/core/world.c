/* The world: a model, the backend it runs on and its integrator. Creation, backends, registry names, field
 * descriptions and the small accessors of the public API. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "term.h"

#ifndef CQ_LIB_VERSION /* the Makefile's VERSION */
#define CQ_LIB_VERSION "unknown"
#endif

int cq_real_bits(void) { return CQ_REAL_BITS; }
const char* cq_version(void) { return CQ_LIB_VERSION; }

/* ---- tables ---- */

unsigned long cq_sizeof(const char* type_name) {
#define CQI_SIZE(T) \
  if (strcmp(type_name, #T) == 0) return sizeof(T);
  CQI_SIZE(cq_wall_desc)
  CQI_SIZE(cq_world_desc)
  CQI_SIZE(cq_control)
  CQI_SIZE(cq_blowup)
  CQI_SIZE(cq_solver_stats)
#undef CQI_SIZE
  return 0;
}

int cq_field_info(int kind, int index, const char** name, int* type, int* shape, int* differentiable, const char** doc,
                  const char** range, double* dflt) {
  int i = 0;
  *range = "";
  *dflt = 0;
  if (kind == CQ_FIELDS_STATE) {
#define CQI_INFO(fname, fshape, init, fdoc)                                                  \
  if (i++ == index) {                                                                        \
    *name = #fname, *type = CQ_TYPE_REAL, *shape = fshape, *differentiable = 1, *doc = fdoc; \
    return 1;                                                                                \
  }
    CQ_STATE_FIELDS(CQI_INFO)
#undef CQI_INFO
  } else if (kind == CQ_FIELDS_PARAM) {
#define CQI_INFO(fname, ctype, ftype, fshape, diff, dflt_value, lo, hi, bounds, fdoc)    \
  if (i++ == index) {                                                                    \
    *name = #fname, *type = ftype, *shape = fshape, *differentiable = diff, *doc = fdoc; \
    *range = cqi_param_range(index), *dflt = (double)(dflt_value);                       \
    return 1;                                                                            \
  }
    CQ_PARAM_FIELDS(CQI_INFO)
#undef CQI_INFO
  } else if (kind == CQ_FIELDS_CONTROL) {
#define CQI_INFO(fname, fshape, fdoc)                                                        \
  if (i++ == index) {                                                                        \
    *name = #fname, *type = CQ_TYPE_REAL, *shape = fshape, *differentiable = 1, *doc = fdoc; \
    return 1;                                                                                \
  }
    CQ_CONTROL_FIELDS(CQI_INFO)
#undef CQI_INFO
  }
  return 0;
}

/* ---- world ---- */

void cq_world_desc_default(cq_world_desc* d) {
  memset(d, 0, sizeof *d);
  d->dim = 2;
  d->res[0] = d->res[1] = d->res[2] = 64;
  d->dx = 1.0 / 64;
  d->dt = 1e-3;
  d->substeps = 1;
  d->n = 1;
  d->integrator = CQ_INTEGRATOR_EXPLICIT;
}

static const cqi_integrator* const integrator_table[] = {
#define CQI_PTR(ID, name, doc) &cqi_integrator_##name,
    CQ_INTEGRATORS(CQI_PTR)
#undef CQI_PTR
};

/* Frees what lives in backend memory (the integrator's workspace, control staging, the working state). */
static void release_backend_buffers(cq_world* w) {
  cqi_backend* be = w->be;
  if (!be) return;
  if (w->integ && w->sim.ws) w->integ->destroy(&w->sim);
  cqi_terms_release(&w->sim); /* the physics terms' buffers (term.h) */
  if (!be->ops->host_memory) {
#define CQI_FREE(name, shape, doc) \
  if (w->ctl.b_##name) be->ops->release(be, w->ctl.b_##name);
    CQ_CONTROL_FIELDS(CQI_FREE)
#undef CQI_FREE
    if (w->work) be->ops->release(be, w->work);
  }
#define CQI_NULL(name, shape, doc) w->ctl.b_##name = NULL;
  CQ_CONTROL_FIELDS(CQI_NULL)
#undef CQI_NULL
  w->work = NULL;
  be->ops->destroy(be);
  w->be = NULL;
}

/* Makes be the world's backend: its integrator workspace and the control staging's backend side. */
static int attach_backend(cq_world* w, cqi_backend* be) {
  w->be = be;
  w->synced = -1;
  w->sim.be = be;
  w->sim.model = &w->model;
  w->sim.view = &w->view;
  w->sim.err = &w->err;
  w->sim.ws = NULL;
  for (int i = 0; i < CQI_N_TERMS; i++) w->sim.term_self[i] = NULL;
  w->sim.input_copy = NULL;
  if (be->ops->host_memory) {
#define CQI_ALIAS(name, shape, doc) w->ctl.b_##name = w->ctl.host_##name;
    CQ_CONTROL_FIELDS(CQI_ALIAS)
#undef CQI_ALIAS
  } else {
    size_t n_act = w->model.n_act > 0 ? w->model.n_act : 1;
    w->ctl.b_u = be->ops->alloc(be, sizeof(cq_real) * n_act);
    w->work = be->ops->alloc(be, sizeof(cq_real) * cqi_state_len(w->model.n, w->model.dim));
    if (!w->ctl.b_u || !w->work) return cqi_errorf(&w->err, CQ_ERR_NOMEM, "out of memory on the backend");
  }
  return w->integ->create(&w->sim);
}

cq_world* cq_world_create(const cq_world_desc* d, char* err, int errlen) {
  if (!d) {
    snprintf(err, errlen, "cq_world_create: desc is NULL");
    return NULL;
  }
  cq_world* w = calloc(1, sizeof *w);
  if (!w) return snprintf(err, errlen, "out of memory"), NULL;
  int st = cqi_model_init(&w->model, d, &w->err);
  if (st == CQ_OK) {
    w->threads = d->threads;
    w->integ = integrator_table[d->integrator];
    w->ctl.host_u = calloc(w->model.n_act > 0 ? w->model.n_act : 1, sizeof(cq_real));
    if (!w->ctl.host_u) st = cqi_errorf(&w->err, CQ_ERR_NOMEM, "out of memory");
  }
  cqi_backend* be = st == CQ_OK ? cqi_backend_cpu_create(&w->model, &w->err) : NULL;
  if (be)
    st = attach_backend(w, be);
  else if (st == CQ_OK)
    st = CQ_ERR_NOMEM;
  if (st != CQ_OK) {
    snprintf(err, errlen, "%s", w->err.msg);
    cq_world_free(w);
    return NULL;
  }
  w->err.msg[0] = 0;
  return w;
}

/* A world with live memos (which hold its backend memory) is freed when the last of them is. */
void cq_world_free(cq_world* w) {
  if (!w) return;
  if (w->n_memos > 0) {
    w->released = 1;
    return;
  }
  release_backend_buffers(w);
#define CQI_FREE(name, shape, doc) free(w->ctl.host_##name);
  CQ_CONTROL_FIELDS(CQI_FREE)
#undef CQI_FREE
  cqi_model_free(&w->model);
  free(w);
}

const char* cq_world_error(const cq_world* w) { return w ? w->err.msg : "no world"; }
int cq_world_dim(const cq_world* w) { return w->model.dim; }
int cq_world_n(const cq_world* w) { return w->model.n; }
int cq_world_n_actuators(const cq_world* w) { return w->model.n_act; }

void* cq_world_param(cq_world* w, const char* name) {
  void* p = cqi_model_param(&w->model, name);
  if (!p) cqi_errorf(&w->err, CQ_ERR_ARG, "unknown particle parameter '%s'", name);
  return p;
}

int cq_world_set_actuator(cq_world* w, int a, int kind) { return cqi_model_set_actuator(&w->model, a, kind, &w->err); }

int cq_world_add_cable(cq_world* w, int actuator, int count, const int* particles, double k, double rest) {
  return cqi_model_add_cable(&w->model, actuator, count, particles, k, rest, &w->err);
}

int cq_world_set_node_bcs(cq_world* w, int count, const int* nodes, const double* normals, int type, double friction) {
  return cqi_model_set_node_bcs(&w->model, count, nodes, normals, type, friction, &w->err);
}

int cq_world_set_threads(cq_world* w, int threads) {
  if (threads < 0 || threads > CQ_MAX_THREADS)
    return cqi_errorf(&w->err, CQ_ERR_ARG, "threads must be in [0, %d] (got %d)", CQ_MAX_THREADS, threads);
  w->threads = threads;
  return CQ_OK;
}

int cq_world_threads_used(const cq_world* w) { return w->threads_used; }

int cq_world_set_gravity(cq_world* w, const double gravity[3]) {
  for (int a = 0; a < 3; a++)
    if (!isfinite(gravity[a]))
      return cqi_errorf(&w->err, CQ_ERR_ARG, "gravity[%d] must be finite (got %g)", a + 1, gravity[a]);
  for (int a = 0; a < 3; a++) w->model.desc.gravity[a] = gravity[a];
  w->model.generation++; /* a recording made under the old gravity cannot be differentiated under the new one */
  return CQ_OK;
}

double cq_world_stable_dt(const cq_world* w) {
  cqi_model* m = (cqi_model*)&w->model; /* validation caches its result in the model */
  if (m->validated != m->generation) {
    cqi_err scratch;
    if (cqi_model_validate(m, &scratch) != CQ_OK) return NAN;
  }
  return m->stable_dt;
}

int cq_world_commit(cq_world* w) {
  int st = cqi_model_validate(&w->model, &w->err);
  if (st != CQ_OK) return st;
  const cqi_model* m = &w->model;
  char why[sizeof w->err.msg];
  if (w->integ->cfl && cqi_stable_dt_exceeded(m, why, sizeof why))
    return cqi_errorf(&w->err, CQ_ERR_ARG, "dt: %s", why);
  w->committed = 1;
  w->err.msg[0] = 0;
  return CQ_OK;
}

int cq_world_blowup(const cq_world* w, cq_blowup* out) {
  *out = w->err.blowup;
  return CQ_OK;
}

int cq_world_solver_stats(cq_world* w, cq_solver_stats* out, int reset) {
  *out = w->sim.stats;
  out->simd_particles = w->be->simd_particles;
  if (reset) memset(&w->sim.stats, 0, sizeof w->sim.stats), w->be->simd_particles = 0;
  return CQ_OK;
}

/* The rest fill of fluid = "grid" with fluid_rest = "initial" is taken again from the next state stepped from. */
int cq_world_reset_fill(cq_world* w) { return cqi_fill_reset(&w->sim); }

/* The groups of volumetric_groups = "initial" are taken again from the next state stepped from. */
int cq_world_reset_groups(cq_world* w) {
  cqi_wall_reset(&w->sim);
  if (cqi_volumetric_reset_groups(&w->sim)) w->model.generation++; /* a recording under the old groups cannot be
                                                                     * differentiated */
  return CQ_OK;
}

/* volumetric_groups = "initial": the groups taken now from state s (the robot's initial state: robot:world). */
int cq_world_take_groups(cq_world* w, const cq_state* s) {
  cqi_model* m = &w->model;
  if (!s || s->real_bits != CQ_REAL_BITS || s->n != m->n || s->dim != m->dim)
    return cqi_errorf(&w->err, CQ_ERR_ARG, "the state does not belong to this world");
  cq_substep c = cqi_substep_ctx(m, NULL, NULL, s->substep);
  int st = cqi_volumetric_take_groups(&w->sim, &c, &s->p);
  if (st == CQ_OK) st = cqi_wall_take(&w->sim, &s->p);
  if (st == CQ_OK) w->model.generation++; /* a recording under other groups cannot be differentiated */
  return st;
}

int cq_world_backend(const cq_world* w) { return w->be->ops->kind; }

int cq_world_set_backend(cq_world* w, int backend) {
  if (backend < 0 || backend >= CQ_N_BACKENDS)
    return cqi_errorf(&w->err, CQ_ERR_ARG, "backend must be 0 (cpu) or 1 (cuda) (got %d)", backend);
  if (backend == w->be->ops->kind) return CQ_OK;
  if (w->n_memos > 0)
    return cqi_errorf(&w->err, CQ_ERR_STATE, "backend: choose it before creating memos (%d exist)", w->n_memos);
#ifdef CQ_WITH_CUDA
  cqi_backend* be = backend == CQ_BACKEND_CUDA ? cqi_backend_cuda_create(&w->model, &w->err)
                                               : cqi_backend_cpu_create(&w->model, &w->err);
  if (!be) return CQ_ERR_STATE;
  release_backend_buffers(w);
  return attach_backend(w, be);
#else
  return cqi_errorf(&w->err, CQ_ERR_ARG,
                    "backend cuda: this engine library was built without CUDA (use libcq_cuda_*.so)");
#endif
}

#ifndef CQ_WITH_CUDA
/* Stubs of the CUDA queries, so every engine library exports the same symbols. */
int cq_cuda_device_count(char* err, int errlen) {
  if (err && errlen > 0) snprintf(err, errlen, "this engine library was built without CUDA");
  return -1;
}
int cq_cuda_device_info(char* buf, int len) {
  if (buf && len > 0) snprintf(buf, len, "this engine library was built without CUDA");
  return CQ_ERR_STATE;
}
double cq_cuda_memcpy_bandwidth(double bytes, int reps, char* err, int errlen) {
  (void)bytes, (void)reps;
  if (err && errlen > 0) snprintf(err, errlen, "this engine library was built without CUDA");
  return -1;
}
long cq_cuda_timing_report(char* buf, int len) {
  if (buf && len > 0) snprintf(buf, len, "this engine library was built without CUDA\n");
  return -1;
}
#endif

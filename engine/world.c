/* World (model + workspace) and state: creation, parameter arrays, validation and errors. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "lame.h"

#define CQ_VERSION_STR "0.1.0"

int cq_real_bits(void) { return CQ_REAL_BITS; }
const char* cq_version(void) { return CQ_VERSION_STR; }

int cqi_fail(cq_world* w, int status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->err, sizeof w->err, fmt, ap);
  va_end(ap);
  return status;
}

const char* cq_world_error(const cq_world* w) { return w ? w->err : "no world"; }
int cq_world_dim(const cq_world* w) { return w->dim; }
int cq_world_n(const cq_world* w) { return w->n; }

void cq_world_desc_default(cq_world_desc* d) {
  memset(d, 0, sizeof *d);
  d->dim = 2;
  d->res[0] = d->res[1] = d->res[2] = 64;
  d->dx = 1.0 / 64;
  d->dt = 1e-3;
  d->substeps = 1;
  d->n_particles = 1;
}

static const char* bc_names = "none(0), sticky(1), slip(2), separate(3), friction(4)";

static int check_desc(const cq_world_desc* d, char* err, int errlen) {
#define BAD(...) return snprintf(err, errlen, __VA_ARGS__), 0
  if (d->dim != 2 && d->dim != 3) BAD("dim must be 2 or 3 (got %d)", d->dim);
  for (int a = 0; a < d->dim; a++)
    if (d->res[a] < 5 || d->res[a] > 65536) BAD("res[%d] must be in [5, 65536] (got %d)", a + 1, d->res[a]);
  if (!(d->dx > 0) || !isfinite(d->dx)) BAD("dx must be > 0 (got %g)", d->dx);
  if (!(d->dt > 0) || !isfinite(d->dt)) BAD("dt must be > 0 (got %g)", d->dt);
  if (d->substeps < 1) BAD("substeps must be >= 1 (got %d)", d->substeps);
  if (!(d->damping >= 0) || !isfinite(d->damping)) BAD("damping must be >= 0 (got %g)", d->damping);
  if (d->n_particles < 1) BAD("n_particles must be >= 1 (got %d)", d->n_particles);
  if (d->n_actuators < 0) BAD("n_actuators must be >= 0 (got %d)", d->n_actuators);
  if (d->threads < 0) BAD("threads must be >= 0 (got %d)", d->threads);
  for (int a = 0; a < 3; a++)
    if (!isfinite(d->gravity[a])) BAD("gravity[%d] must be finite (got %g)", a + 1, d->gravity[a]);
  for (int k = 0; k < 2 * d->dim; k++) {
    const cq_wall_desc* wd = &d->walls[k];
    if (wd->type < CQ_BC_NONE || wd->type > CQ_BC_FRICTION)
      BAD("wall %d: type must be one of %s (got %d)", k, bc_names, wd->type);
    if (wd->type == CQ_BC_NONE) continue;
    if (wd->thickness < 1 || wd->thickness > d->res[k / 2] / 2)
      BAD("wall %d: thickness must be in [1, %d] cells (got %d)", k, d->res[k / 2] / 2, wd->thickness);
    if (!(wd->friction >= 0)) BAD("wall %d: friction must be >= 0 (got %g)", k, wd->friction);
  }
  return 1;
#undef BAD
}

cq_world* cq_world_create(const cq_world_desc* d, char* err, int errlen) {
  if (!d) {
    snprintf(err, errlen, "cq_world_create: desc is NULL");
    return NULL;
  }
  if (!check_desc(d, err, errlen)) return NULL;
  cq_world* w = calloc(1, sizeof *w);
  if (!w) return snprintf(err, errlen, "out of memory"), NULL;
  w->desc = *d;
  w->dim = d->dim;
  w->n = d->n_particles;
  w->n_act = d->n_actuators;
  w->threads = d->threads;
  w->dt_sub = d->dt / d->substeps;
  w->n_nodes = 1;
  for (int a = 0; a < d->dim; a++) w->n_nodes *= d->res[a];
  int n = w->n, ok = 1;
#define X(name, ctype, type, shape, diff, doc) \
  ok &= (w->name = calloc((size_t)n * cqi_shape_len(shape, d->dim), sizeof(ctype))) != NULL;
  CQ_PARAM_FIELDS(X)
#undef X
  w->act_kind = calloc(w->n_act > 0 ? w->n_act : 1, 1);
  w->ureal = calloc(w->n_act > 0 ? w->n_act : 1, sizeof(cq_real));
  w->fext = calloc((size_t)n * d->dim, sizeof(cq_real));
  w->gfext = calloc((size_t)n * d->dim, sizeof(cq_real));
  w->fuser_buf = calloc((size_t)n * d->dim, sizeof(cq_real));
  w->grid = malloc(sizeof(cq_real) * w->n_nodes * (d->dim + 1));
  w->perm = malloc(sizeof(int32_t) * n);
  w->base0 = malloc(sizeof(int32_t) * n);
  w->slab_start = malloc(sizeof(int32_t) * (d->res[0] + 2));
  if (!ok || !w->act_kind || !w->ureal || !w->fext || !w->gfext || !w->fuser_buf || !w->grid || !w->perm || !w->base0 || !w->slab_start) {
    snprintf(err, errlen, "out of memory allocating a world with %d particles and %ld grid nodes", n, w->n_nodes);
    cq_world_free(w);
    return NULL;
  }
  memset(w->grid, 0, sizeof(cq_real) * w->n_nodes * (d->dim + 1));
  /* defaults: unit mass and volume, E = 10, nu = 0.3, NeoHookean, no actuator */
  for (int p = 0; p < n; p++) {
    w->mass[p] = 1;
    w->vol0[p] = 1;
    w->E[p] = 10;
    w->nu[p] = (cq_real)0.3;
    w->material[p] = CQ_NEOHOOKEAN;
    w->act_id[p] = -1;
  }
  return w;
}

void cq_world_free(cq_world* w) {
  if (!w) return;
#define X(name, ctype, type, shape, diff, doc) free(w->name);
  CQ_PARAM_FIELDS(X)
#undef X
  free(w->act_kind);
  free(w->ureal);
  free(w->fext);
  free(w->gfext);
  free(w->fuser_buf);
  free(w->auser_buf);
  free(w->cables);
  free(w->cable_idx);
  free(w->node_bc_index);
  free(w->node_bcs);
  free(w->grid);
  free(w->grid_v);
  free(w->grid_adj);
  free(w->gact);
  free(w->p2g_cache);
  free(w->perm);
  free(w->base0);
  free(w->slab_start);
  cqi_backend_free(w);
  free(w);
}

void* cq_world_param(cq_world* w, const char* name) {
#define X(fname, ctype, type, shape, diff, doc) \
  if (strcmp(name, #fname) == 0) return w->fname;
  CQ_PARAM_FIELDS(X)
#undef X
  cqi_fail(w, CQ_ERR_ARG, "unknown particle parameter '%s'", name);
  return NULL;
}

int cq_field_info(int kind, int index, const char** name, int* type, int* shape, int* differentiable,
                  const char** doc) {
  int i = 0;
  if (kind == 0) {
#define X(fname, fshape, fdoc) \
  if (i++ == index) { *name = #fname; *type = CQ_TYPE_REAL; *shape = fshape; *differentiable = 1; *doc = fdoc; return 1; }
    CQ_STATE_FIELDS(X)
#undef X
  } else {
#define X(fname, ctype, ftype, fshape, diff, fdoc) \
  if (i++ == index) { *name = #fname; *type = ftype; *shape = fshape; *differentiable = diff; *doc = fdoc; return 1; }
    CQ_PARAM_FIELDS(X)
#undef X
  }
  return 0;
}

int cq_world_set_actuator(cq_world* w, int a, int kind) {
  if (a < 0 || a >= w->n_act) return cqi_fail(w, CQ_ERR_ARG, "actuator index must be in [0, %d) (got %d)", w->n_act, a);
  if (kind != CQ_ACT_STRESS && kind != CQ_ACT_FORCE && kind != CQ_ACT_CABLE)
    return cqi_fail(w, CQ_ERR_ARG, "actuator kind must be 0 (stress), 1 (force) or 2 (cable) (got %d)", kind);
  w->act_kind[a] = (uint8_t)kind;
  return CQ_OK;
}

int cq_world_add_cable(cq_world* w, int actuator, int count, const int* particles, double k, double rest) {
  if (actuator < 0 || actuator >= w->n_act)
    return cqi_fail(w, CQ_ERR_ARG, "cable: actuator must be in [0, %d) (got %d)", w->n_act, actuator);
  if (w->act_kind[actuator] != CQ_ACT_CABLE)
    return cqi_fail(w, CQ_ERR_ARG, "cable: actuator %d is not a cable actuator (set its kind to 2 first)", actuator);
  if (count < 2) return cqi_fail(w, CQ_ERR_ARG, "cable: needs at least 2 particles (got %d)", count);
  if (!(k >= 0) || !isfinite(k)) return cqi_fail(w, CQ_ERR_ARG, "cable: stiffness k must be >= 0 (got %g)", k);
  if (!(rest >= 0) || !isfinite(rest)) return cqi_fail(w, CQ_ERR_ARG, "cable: rest length must be >= 0 (got %g)", rest);
  for (int i = 0; i < count; i++)
    if (particles[i] < 0 || particles[i] >= w->n)
      return cqi_fail(w, CQ_ERR_ARG, "cable: particle index %d out of range [0, %d)", particles[i], w->n);
  cq_cable* cb = realloc(w->cables, sizeof(cq_cable) * (w->n_cables + 1));
  if (!cb) return cqi_fail(w, CQ_ERR_NOMEM, "out of memory for cables");
  w->cables = cb;
  int32_t* ix = realloc(w->cable_idx, sizeof(int32_t) * (w->n_cable_idx + count));
  if (!ix) return cqi_fail(w, CQ_ERR_NOMEM, "out of memory for cables");
  w->cable_idx = ix;
  cq_cable* c = &w->cables[w->n_cables++];
  c->first = w->n_cable_idx;
  c->count = count;
  c->act = actuator;
  c->k = (cq_real)k;
  c->rest = (cq_real)rest;
  for (int i = 0; i < count; i++) w->cable_idx[w->n_cable_idx++] = particles[i];
  return CQ_OK;
}

int cq_world_enable_user_forces(cq_world* w) {
  w->user_forces = 1;
  return CQ_OK;
}

int cq_world_set_node_bcs(cq_world* w, int count, const int* nodes, const double* normals, int type, double friction) {
  if (count < 0) return cqi_fail(w, CQ_ERR_ARG, "node count must be >= 0 (got %d)", count);
  if (type < CQ_BC_STICKY || type > CQ_BC_FRICTION)
    return cqi_fail(w, CQ_ERR_ARG, "node boundary type must be one of %s except none (got %d)", bc_names, type);
  if (!(friction >= 0)) return cqi_fail(w, CQ_ERR_ARG, "friction must be >= 0 (got %g)", friction);
  if (!w->node_bc_index) {
    w->node_bc_index = malloc(sizeof(int32_t) * w->n_nodes);
    if (!w->node_bc_index) return cqi_fail(w, CQ_ERR_NOMEM, "out of memory for node boundary map");
    for (long i = 0; i < w->n_nodes; i++) w->node_bc_index[i] = -1;
  }
  cq_bc* nb = realloc(w->node_bcs, sizeof(cq_bc) * (size_t)(w->n_node_bcs + count + 1));
  if (!nb) return cqi_fail(w, CQ_ERR_NOMEM, "out of memory for node boundary conditions");
  w->node_bcs = nb;
  for (int k = 0; k < count; k++) {
    if (nodes[k] < 0 || nodes[k] >= w->n_nodes)
      return cqi_fail(w, CQ_ERR_ARG, "node index %d out of range [0, %ld)", nodes[k], w->n_nodes);
    double len = 0;
    for (int a = 0; a < w->dim; a++) len += normals[3 * k + a] * normals[3 * k + a];
    len = sqrt(len);
    if (!(len > 0)) return cqi_fail(w, CQ_ERR_ARG, "node %d: normal must be non-zero", nodes[k]);
    cq_bc* b = &w->node_bcs[w->n_node_bcs];
    memset(b, 0, sizeof *b);
    b->type = type;
    b->mu = (cq_real)friction;
    for (int a = 0; a < w->dim; a++) b->n[a] = (cq_real)(normals[3 * k + a] / len);
    w->node_bc_index[nodes[k]] = w->n_node_bcs++;
  }
  return CQ_OK;
}

int cq_world_set_threads(cq_world* w, int threads) {
  if (threads < 0) return cqi_fail(w, CQ_ERR_ARG, "threads must be >= 0 (got %d)", threads);
  w->threads = threads;
  return CQ_OK;
}

/* Largest elastic wave speed sqrt((lambda + 2 mu + k_inc) / rho) over particles, rho = mass / vol0. */
double cq_world_stable_dt(const cq_world* w) {
  double cmax = 0;
  for (int p = 0; p < w->n; p++) {
    cqi_lame l = cqi_lame_from(w->E[p], w->nu[p]);
    double stiff = l.la + 2 * l.mu;
    if (w->inc_p[p] == 2) stiff += 2 * cqi_inc_coeff(w->E[p], w->nu[p]);
    double c = sqrt(stiff * w->vol0[p] / w->mass[p]);
    if (c > cmax) cmax = c;
  }
  return cmax > 0 ? w->desc.dx / cmax : INFINITY;
}

int cq_world_commit(cq_world* w) {
  int n = w->n, D = w->dim;
  for (int p = 0; p < n; p++) {
    if (!(w->E[p] > 0) || !isfinite(w->E[p]))
      return cqi_fail(w, CQ_ERR_ARG, "particle %d: E (Young's modulus) must be > 0 (got %g)", p + 1, (double)w->E[p]);
    if (!(w->nu[p] > -1 && w->nu[p] < 0.5))
      return cqi_fail(w, CQ_ERR_ARG, "particle %d: nu (Poisson's ratio) must be in (-1, 0.5) (got %g)", p + 1,
                      (double)w->nu[p]);
    if (!(w->mass[p] > 0) || !isfinite(w->mass[p]))
      return cqi_fail(w, CQ_ERR_ARG, "particle %d: mass must be > 0 (got %g)", p + 1, (double)w->mass[p]);
    if (!(w->vol0[p] > 0) || !isfinite(w->vol0[p]))
      return cqi_fail(w, CQ_ERR_ARG, "particle %d: vol0 (rest volume) must be > 0 (got %g)", p + 1,
                      (double)w->vol0[p]);
    if (!(w->inc_p[p] == 0 || (w->inc_p[p] >= 2 && isfinite(w->inc_p[p]))))
      return cqi_fail(w, CQ_ERR_ARG, "particle %d: inc_p (incompressibility exponent) must be 0 (off) or >= 2 (got %g)",
                      p + 1, (double)w->inc_p[p]);
    if (w->material[p] >= CQ_N_MATERIALS)
      return cqi_fail(w, CQ_ERR_ARG, "particle %d: material must be 0 (corotated) or 1 (neohookean) (got %d)", p + 1,
                      w->material[p]);
    if (w->act_id[p] < -1 || w->act_id[p] >= w->n_act)
      return cqi_fail(w, CQ_ERR_ARG, "particle %d: act_id must be -1 (none) or in [0, %d) (got %d)", p + 1, w->n_act,
                      w->act_id[p]);
    for (int a = 0; a < D; a++)
      if (!isfinite(w->act_axis[a * n + p]))
        return cqi_fail(w, CQ_ERR_ARG, "particle %d: act_axis must be finite", p + 1);
  }
  double limit = cq_world_stable_dt(w);
  if (w->dt_sub > limit)
    return cqi_fail(w, CQ_ERR_ARG,
                    "dt: the substep dt/substeps = %g is above the stability limit dx*sqrt(rho/(lambda+2mu)) = %g; "
                    "use more substeps (>= %d) or a smaller dt",
                    w->dt_sub, limit, (int)ceil(w->desc.dt / limit));
  w->committed = 1;
  w->err[0] = 0;
  return CQ_OK;
}

cq_params cqi_params(const cq_world* w) {
  cq_params m = {w->mass, w->vol0, w->E, w->nu, w->inc_p, w->act_axis, w->material, w->act_id, w->act_kind, NULL,
                 w->auser};
  return m;
}

/* Constants of substep k: boundary velocities are evaluated at the substep's start time. */
cq_substep cqi_substep_ctx(const cq_world* w, long k) {
  cq_substep c;
  memset(&c, 0, sizeof c);
  const cq_world_desc* d = &w->desc;
  long s = 1;
  for (int a = w->dim - 1; a >= 0; a--) {
    c.res[a] = d->res[a];
    c.stride[a] = s;
    s *= d->res[a];
  }
  c.dx = (cq_real)d->dx;
  c.inv_dx = (cq_real)(1.0 / d->dx);
  c.dt = (cq_real)w->dt_sub;
  for (int a = 0; a < 3; a++) c.gravity[a] = (cq_real)d->gravity[a];
  c.damp = (cq_real)exp(-d->damping * w->dt_sub);
  double t = k * w->dt_sub;
  for (int wi = 0; wi < 2 * w->dim; wi++) {
    const cq_wall_desc* wd = &d->walls[wi];
    cq_bc* b = &c.walls[wi];
    c.wall_thick[wi] = wd->type == CQ_BC_NONE ? 0 : wd->thickness;
    b->type = wd->type;
    b->mu = (cq_real)wd->friction;
    b->n[wi / 2] = wi % 2 == 0 ? 1 : -1;
    for (int a = 0; a < w->dim; a++)
      b->vel[a] = (cq_real)(wd->velocity[a] + wd->osc_amplitude[a] * sin(wd->osc_omega * t + wd->osc_phase));
  }
  c.node_bc_index = w->node_bc_index;
  c.node_bcs = w->node_bcs;
  return c;
}

int cqi_alloc_backward(cq_world* w) {
  size_t len = sizeof(cq_real) * w->n_nodes * (w->dim + 1);
  if (!w->grid_v) w->grid_v = calloc(1, len);
  if (!w->grid_adj) w->grid_adj = calloc(1, len);
  if (!w->gact) w->gact = calloc(w->n, sizeof(cq_real));
  if (!w->p2g_cache) w->p2g_cache = calloc((size_t)w->n * 3 * w->dim * w->dim, sizeof(cq_real));
  if (!w->grid_v || !w->grid_adj || !w->gact || !w->p2g_cache) return cqi_fail(w, CQ_ERR_NOMEM, "out of memory for the backward pass");
  return CQ_OK;
}

/* ---- state ---- */
cq_state* cqi_state_alloc(int dim, int n) {
  cq_state* s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->dim = dim;
  s->n = n;
  s->block_len = (long)n * (2 * dim + 2 * dim * dim);
  s->block = calloc((size_t)s->block_len, sizeof(cq_real));
  if (!s->block) return free(s), NULL;
  s->p.n = n;
  s->p.x = s->block;
  s->p.v = s->p.x + (long)n * dim;
  s->p.C = s->p.v + (long)n * dim;
  s->p.F = s->p.C + (long)n * dim * dim;
  return s;
}

cq_state* cq_state_create(const cq_world* w) {
  cq_state* s = cqi_state_alloc(w->dim, w->n);
  if (!s) return NULL;
  for (int a = 0; a < w->dim; a++)
    for (int p = 0; p < w->n; p++) s->p.F[(a * w->dim + a) * (long)w->n + p] = 1;
  return s;
}

void cq_state_free(cq_state* s) {
  if (!s) return;
  free(s->block);
  free(s);
}

void* cq_state_field(cq_state* s, const char* name) {
  if (!strcmp(name, "x")) return s->p.x;
  if (!strcmp(name, "v")) return s->p.v;
  if (!strcmp(name, "C")) return s->p.C;
  if (!strcmp(name, "F")) return s->p.F;
  return NULL;
}

long cq_state_substep(const cq_state* s) { return s->substep; }
void cq_state_set_substep(cq_state* s, long k) { s->substep = k; }

int cq_state_copy(cq_state* dst, const cq_state* src) {
  if (dst->block_len != src->block_len) return CQ_ERR_ARG;
  memcpy(dst->block, src->block, sizeof(cq_real) * src->block_len);
  dst->substep = src->substep;
  return CQ_OK;
}

int cq_step(cq_world* w, cq_state* s, const double* u) { return cq_step_ext(w, s, u, NULL, NULL); }

int cq_step_force(cq_world* w, cq_state* s, const double* u, const double* force) {
  return cq_step_ext(w, s, u, force, NULL);
}

int cqi_check_stress(cq_world* w, const double* stress, int step) {
  long len = (long)w->n * w->dim * w->dim;
  for (long i = 0; i < len; i++)
    if (!isfinite(stress[i]))
      return cqi_fail(w, CQ_ERR_ARG, "step %d: user stress entry %ld (particle %ld, component %ld) is not finite (%g)",
                      step, i, i % w->n + 1, i / w->n + 1, stress[i]);
  return CQ_OK;
}

int cq_step_ext(cq_world* w, cq_state* s, const double* u, const double* force, const double* stress) {
  if (!w->committed) return cqi_fail(w, CQ_ERR_STATE, "cq_step: call cq_world_commit first");
  if (s->n != w->n || s->dim != w->dim) return cqi_fail(w, CQ_ERR_ARG, "cq_step: state does not belong to this world");
  for (int a = 0; a < w->n_act; a++) w->ureal[a] = (cq_real)(u ? u[a] : 0);
  if (force) { /* held over the substeps */
    for (long i = 0; i < (long)w->n * w->dim; i++) w->fuser_buf[i] = (cq_real)force[i];
    w->fuser = w->fuser_buf;
  }
  if (stress) { /* held over the substeps; the buffer is allocated once, on first use */
    long len = (long)w->n * w->dim * w->dim;
    int st = cqi_check_stress(w, stress, (int)(s->substep / w->desc.substeps));
    if (st != CQ_OK) return w->fuser = NULL, st;
    if (!w->auser_buf && !(w->auser_buf = malloc(sizeof(cq_real) * len)))
      return w->fuser = NULL, cqi_fail(w, CQ_ERR_NOMEM, "out of memory for a user stress of %d particles", w->n);
    for (long i = 0; i < len; i++) w->auser_buf[i] = (cq_real)stress[i];
    w->auser = w->auser_buf;
  }
  int st = CQ_OK;
  for (int b = 0; b < w->desc.substeps && st == CQ_OK; b++) {
    st = cqi_substep(w, &s->p, w->ureal, s->substep);
    if (st == CQ_OK) s->substep++;
  }
  w->fuser = NULL;
  w->auser = NULL;
  return st;
}

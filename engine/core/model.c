/* The model (model.h): creation from a description, parameter arrays generated from fields.h, validation with
 * messages generated from the same table and the material registry, actuators, cables, node boundary conditions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model.h"
#include "kernels.h"

static int shape_len(int shape, int dim) {
  return shape == CQ_SHAPE_SCALAR ? 1 : shape == CQ_SHAPE_VEC ? dim : dim * dim;
}

/* "none(0), sticky(1), ..." style list of a registry for messages. */
static const char* names_text(int list) {
  static char buf[CQ_LIST_CHECK + 1][512];
  char* out = buf[list];
  if (out[0]) return out;
  int len = 0;
  const char* name;
  for (int i = 0; (name = cq_name(list, i, NULL)) != NULL; i++)
    len += snprintf(out + len, 512 - len, "%s%d (%s)", i ? ", " : "", i, name);
  return out;
}

static int check_desc(const cq_world_desc* d, cqi_err* e) {
  if (d->dim != 2 && d->dim != 3) return cqi_errorf(e, CQ_ERR_ARG, "dim must be 2 or 3 (got %d)", d->dim);
  for (int a = 0; a < d->dim; a++)
    if (d->res[a] < 5 || d->res[a] > 65536)
      return cqi_errorf(e, CQ_ERR_ARG, "res[%d] must be in [5, 65536] (got %d)", a + 1, d->res[a]);
  if (!(d->dx >= 1e-9 && d->dx <= 1e9)) /* beyond, 1 / dx^2 overflows a float32 build's kernels */
    return cqi_errorf(e, CQ_ERR_ARG, "dx must be in [1e-09, 1e+09] (got %g)", d->dx);
  if (!(d->dt > 0) || !isfinite(d->dt)) return cqi_errorf(e, CQ_ERR_ARG, "dt must be finite and > 0 (got %g)", d->dt);
  if (d->substeps < 1) return cqi_errorf(e, CQ_ERR_ARG, "substeps must be >= 1 (got %d)", d->substeps);
  if (!(d->damping >= 0) || !isfinite(d->damping))
    return cqi_errorf(e, CQ_ERR_ARG, "damping must be finite and >= 0 (got %g)", d->damping);
  if (d->damping * (d->dt / d->substeps) > 80) /* exp(-80): the damped update, and the implicit inertia m / damp */
    return cqi_errorf(e, CQ_ERR_ARG,
                      "damping * dt (per substep) must be <= 80: a substep would keep exp(-%g) of the "
                      "velocity (got damping %g, dt %g)",
                      d->damping * (d->dt / d->substeps), d->damping, d->dt / d->substeps);
  if (d->n < 1) return cqi_errorf(e, CQ_ERR_ARG, "n must be >= 1 (got %d)", d->n);
  if (d->n_actuators < 0) return cqi_errorf(e, CQ_ERR_ARG, "n_actuators must be >= 0 (got %d)", d->n_actuators);
  if (d->threads < 0 || d->threads > CQ_MAX_THREADS)
    return cqi_errorf(e, CQ_ERR_ARG, "threads must be in [0, %d] (got %d)", CQ_MAX_THREADS, d->threads);
  if (d->integrator < 0 || d->integrator >= CQ_N_INTEGRATORS)
    return cqi_errorf(e, CQ_ERR_ARG, "integrator must be one of %s (got %d)", names_text(CQ_LIST_INTEGRATOR),
                      d->integrator);
  if (!(d->implicit_tol >= 0 && d->implicit_tol < 1))
    return cqi_errorf(e, CQ_ERR_ARG, "implicit.tol must be in [0, 1) (got %g)", d->implicit_tol);
  if (d->implicit_precond < CQ_PRECOND_AUTO || d->implicit_precond > CQ_PRECOND_FACTOR)
    return cqi_errorf(e, CQ_ERR_ARG, "implicit.precond must be 0 (auto), 1 (mass) or 2 (factor) (got %d)",
                      d->implicit_precond);
  if (d->implicit_volume != CQ_VOLUME_EXACT && d->implicit_volume != CQ_VOLUME_LINEAR)
    return cqi_errorf(e, CQ_ERR_ARG, "implicit.volume must be 0 (linear) or 1 (exact) (got %d)", d->implicit_volume);
  if (d->volumetric != CQ_VOLUMETRIC_PARTICLE && d->volumetric != CQ_VOLUMETRIC_AVERAGED &&
      d->volumetric != CQ_VOLUMETRIC_SOLIDS)
    return cqi_errorf(e, CQ_ERR_ARG, "volumetric must be 0 (particle), 1 (averaged) or 2 (solids) (got %d)",
                      d->volumetric);
  if (d->volumetric != CQ_VOLUMETRIC_PARTICLE && d->integrator == CQ_INTEGRATOR_IMPLICIT &&
      d->implicit_volume == CQ_VOLUME_EXACT)
    return cqi_errorf(e, CQ_ERR_ARG,
                      "volumetric = \"%s\" needs implicit.volume = \"linear\" with the implicit "
                      "integrator (the averaged term is not implemented on the exact det F_p(v)); use "
                      "volumetric = \"particle\" with implicit.volume = \"exact\"",
                      d->volumetric == CQ_VOLUMETRIC_SOLIDS ? "solids" : "averaged");
  if (d->volumetric_groups != CQ_VOL_GROUPS_CURRENT && d->volumetric_groups != CQ_VOL_GROUPS_INITIAL)
    return cqi_errorf(e, CQ_ERR_ARG, "volumetric_groups must be 0 (current) or 1 (initial) (got %d)",
                      d->volumetric_groups);
  if (!(d->volumetric_own == 0 || (d->volumetric_own >= 1e-6 && d->volumetric_own <= 1e6)))
    return cqi_errorf(e, CQ_ERR_ARG, "volumetric_own must be 0 (the default 1) or in [1e-6, 1e6] (got %g)",
                      d->volumetric_own);
  if (d->fluid != CQ_FLUID_PARTICLE && d->fluid != CQ_FLUID_FILL)
    return cqi_errorf(e, CQ_ERR_ARG, "fluid must be 0 (particle) or 1 (fill) (got %d)", d->fluid);
  if (d->fluid_rest != CQ_FILL_REST_ONE && d->fluid_rest != CQ_FILL_REST_INITIAL)
    return cqi_errorf(e, CQ_ERR_ARG, "fluid_rest must be 0 (one) or 1 (initial) (got %d)", d->fluid_rest);
  if (d->fluid_contact != CQ_FLUID_CONTACT_STICKY && d->fluid_contact != CQ_FLUID_CONTACT_SEPARATE)
    return cqi_errorf(e, CQ_ERR_ARG, "fluid_contact must be 0 (sticky) or 1 (separate) (got %d)", d->fluid_contact);
  if (d->fluid_contact == CQ_FLUID_CONTACT_SEPARATE && d->fluid != CQ_FLUID_FILL)
    return cqi_errorf(e, CQ_ERR_ARG,
                      "fluid_contact = \"separate\" needs fluid = \"grid\" (the fields meet through the grid "
                      "fluid's pressure) (got fluid = \"particle\")");
  if (d->fluid_contact == CQ_FLUID_CONTACT_SEPARATE && d->integrator != CQ_INTEGRATOR_EXPLICIT)
    return cqi_errorf(e, CQ_ERR_ARG,
                      "fluid_contact = \"separate\" works with the explicit integrator only so far (got the "
                      "implicit one); use fluid_contact = \"sticky\" with it");
  if (d->implicit_pressure != CQ_PRESSURE_IMPLICIT && d->implicit_pressure != CQ_PRESSURE_LAGGED)
    return cqi_errorf(e, CQ_ERR_ARG, "implicit.pressure must be 0 (lagged) or 1 (implicit) (got %d)",
                      d->implicit_pressure);
  if (d->implicit_fill_rounds < -1 || d->implicit_fill_rounds > 16)
    return cqi_errorf(e, CQ_ERR_ARG, "implicit.fill_rounds must be in [-1, 16] (-1: none, 0: the default) (got %d)",
                      d->implicit_fill_rounds);
  if (d->implicit_max_split < -1 || d->implicit_max_split > 30)
    return cqi_errorf(e, CQ_ERR_ARG, "implicit.max_split must be in [-1, 30] (-1: none, 0: the default) (got %d)",
                      d->implicit_max_split);
  if (!(d->implicit_error_tol < 1) || isnan(d->implicit_error_tol))
    return cqi_errorf(e, CQ_ERR_ARG, "implicit.error_tol must be below 1 cell (0: the default, negative: off) (got %g)",
                      d->implicit_error_tol);
  if (d->implicit_adapt != 0 && d->implicit_adapt != 1)
    return cqi_errorf(e, CQ_ERR_ARG, "implicit.adapt must be 0 or 1 (got %d)", d->implicit_adapt);
  if (d->implicit_max_newton < 0 || d->implicit_max_cg < 0)
    return cqi_errorf(e, CQ_ERR_ARG, "implicit.max_newton and implicit.max_cg must be >= 0 (got %d, %d)",
                      d->implicit_max_newton, d->implicit_max_cg);
  for (int a = 0; a < 3; a++)
    if (!isfinite(d->gravity[a]))
      return cqi_errorf(e, CQ_ERR_ARG, "gravity[%d] must be finite (got %g)", a + 1, d->gravity[a]);
  for (int k = 0; k < 2 * d->dim; k++) {
    const cq_wall_desc* wd = &d->walls[k];
    if (wd->type < 0 || wd->type >= CQ_N_BOUNDARIES)
      return cqi_errorf(e, CQ_ERR_ARG, "wall %d: type must be one of %s (got %d)", k + 1, names_text(CQ_LIST_BOUNDARY),
                        wd->type);
    if (wd->type == CQ_BC_NONE) continue;
    if (wd->thickness < 1 || wd->thickness > d->res[k / 2] / 2)
      return cqi_errorf(e, CQ_ERR_ARG, "wall %d: thickness must be in [1, %d] cells (got %d)", k + 1, d->res[k / 2] / 2,
                        wd->thickness);
    if (!(wd->friction >= 0))
      return cqi_errorf(e, CQ_ERR_ARG, "wall %d: friction must be >= 0 (got %g)", k + 1, wd->friction);
    for (int a = 0; a < 3; a++)
      if (!isfinite(wd->velocity[a]) || !isfinite(wd->osc_amplitude[a]))
        return cqi_errorf(e, CQ_ERR_ARG,
                          "wall %d: velocity and oscillation amplitude must be finite (component %d: %g, %g)", k + 1,
                          a + 1, wd->velocity[a], wd->osc_amplitude[a]);
    if (!isfinite(wd->osc_omega) || !isfinite(wd->osc_phase))
      return cqi_errorf(e, CQ_ERR_ARG, "wall %d: oscillation omega and phase must be finite (got %g, %g)", k + 1,
                        wd->osc_omega, wd->osc_phase);
  }
  return CQ_OK;
}

/* Bytes of physical memory, or 0 when unknown. */
static double physical_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? (double)pages * size : 0;
}

/* A world far larger than the machine would be killed by the kernel while its defaults are written (allocations
 * succeed lazily); refuse it with the option to change instead. Counts parameters, a state, the CPU workspace and
 * the explicit integrator's grids (forward and backward). */
static int check_size(const cq_world_desc* d, cqi_err* err) {
  double nodes = 1, mem = physical_memory();
  for (int a = 0; a < d->dim; a++) nodes *= d->res[a];
  double particle = sizeof(cq_real) * (2.0 * d->dim + 2.0 * d->dim * d->dim) * 3 + 64 * sizeof(double);
  double grid = sizeof(cq_real) * (d->dim + 1) * nodes * 3;
  if (mem > 0 && d->n * particle > mem)
    return cqi_errorf(err, CQ_ERR_NOMEM,
                      "n: %d particles need about %.3g GB, more than this machine's %.3g GB of "
                      "memory",
                      d->n, d->n * particle / 1e9, mem / 1e9);
  if (mem > 0 && grid > mem)
    return cqi_errorf(err, CQ_ERR_NOMEM,
                      "res: a grid of %.3g nodes needs about %.3g GB, more than this machine's "
                      "%.3g GB of memory",
                      nodes, grid / 1e9, mem / 1e9);
  return CQ_OK;
}

int cqi_model_init(cqi_model* m, const cq_world_desc* d, cqi_err* err) {
  memset(m, 0, sizeof *m);
  int st = check_desc(d, err);
  if (st == CQ_OK) st = check_size(d, err);
  if (st != CQ_OK) return st;
  m->desc = *d;
  m->dim = d->dim;
  m->n = d->n;
  m->n_act = d->n_actuators;
  m->dt_sub = d->dt / d->substeps;
  m->n_nodes = 1;
  for (int a = 0; a < d->dim; a++) m->n_nodes *= d->res[a];
  m->validated = -1;
  size_t n = (size_t)m->n;
  int ok = 1;
#define CQI_ALLOC(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc)              \
  if ((m->name = malloc(n * shape_len(shape, d->dim) * sizeof(ctype))) != NULL) {         \
    for (size_t i = 0; i < n * shape_len(shape, d->dim); i++) m->name[i] = (ctype)(dflt); \
  } else                                                                                  \
    ok = 0;
  CQ_PARAM_FIELDS(CQI_ALLOC)
#undef CQI_ALLOC
  m->act_kind = calloc(m->n_act > 0 ? m->n_act : 1, 1);
  if (!ok || !m->act_kind) {
    cqi_model_free(m);
    return cqi_errorf(err, CQ_ERR_NOMEM, "n: out of memory for the parameters of %d particles", d->n);
  }
  return CQ_OK;
}

void cqi_model_free(cqi_model* m) {
#define CQI_FREE(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) free(m->name);
  CQ_PARAM_FIELDS(CQI_FREE)
#undef CQI_FREE
  free(m->act_kind);
  free(m->cables);
  free(m->cable_idx);
  free(m->node_bc_index);
  free(m->node_bcs);
  memset(m, 0, sizeof *m);
}

void* cqi_model_param(cqi_model* m, const char* name) {
  m->generation++;
#define CQI_FIND(fname, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) \
  if (strcmp(name, #fname) == 0) return m->fname;
  CQ_PARAM_FIELDS(CQI_FIND)
#undef CQI_FIND
  return NULL;
}

void cqi_params_scalars(const cqi_model* m, cq_params* p) {
  p->n = m->n;
  p->fluid_fill = m->desc.fluid == CQ_FLUID_FILL;
  p->vol_own = (cq_real)cqi_vol_own(&m->desc);
  p->vol_fluid_own = m->desc.volumetric == CQ_VOLUMETRIC_SOLIDS ? 1 : (cq_real)CQ_FLUID_OWN_SHARE;
  int in_solve = m->desc.integrator == CQ_INTEGRATOR_IMPLICIT && m->desc.implicit_pressure == CQ_PRESSURE_IMPLICIT;
  p->wall_shift_max = in_solve ? 0 : (cq_real)(CQI_WALL_OFFSET_MAX * m->desc.dx);
}

cq_params cqi_model_params(const cqi_model* m) {
  cq_params p;
#define CQI_VIEW(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) p.name = m->name;
  CQ_PARAM_FIELDS(CQI_VIEW)
#undef CQI_VIEW
  p.act_kind = m->act_kind;
  cqi_params_scalars(m, &p);
  return p;
}

/* ---- validation ---- */

static void range_text(double lo, double hi, int bounds, char* out, int len) {
  if (isinf(lo) && isinf(hi))
    snprintf(out, len, "finite");
  else if (isinf(hi))
    snprintf(out, len, "%s %g", bounds & CQ_OPEN_LO ? ">" : ">=", lo);
  else if (isinf(lo))
    snprintf(out, len, "%s %g", bounds & CQ_OPEN_HI ? "<" : "<=", hi);
  else
    snprintf(out, len, "in %c%g, %g%c", bounds & CQ_OPEN_LO ? '(' : '[', lo, hi, bounds & CQ_OPEN_HI ? ')' : ']');
}

/* What the fields.h rows marked CQ_CUSTOM accept (checked in check_custom below). */
static const char* custom_range(const char* name);

const char* cqi_param_range(int index) {
  static char text[CQ_N_PARAM_FIELDS][160];
  if (index < 0 || index >= CQ_N_PARAM_FIELDS) return NULL;
  if (!text[index][0]) {
    int i = 0;
#define CQI_RANGE(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) \
  if (i++ == index) {                                                        \
    if ((bounds) == CQ_CUSTOM)                                               \
      snprintf(text[index], sizeof text[index], "%s", custom_range(#name));  \
    else                                                                     \
      range_text(lo, hi, bounds, text[index], sizeof text[index]);           \
  }
    CQ_PARAM_FIELDS(CQI_RANGE)
#undef CQI_RANGE
  }
  return text[index];
}

/* 1 if value v of parameter `name` (doc: its long name) is within its fields.h range, else 0 with the reason. */
static int check_range(const char* name, const char* doc, double v, double lo, double hi, int bounds, int p,
                       int component, int ncomp, char* why, int len) {
  int ok = isfinite(v) && ((bounds & CQ_OPEN_LO) ? v > lo : v >= lo) && ((bounds & CQ_OPEN_HI) ? v < hi : v <= hi);
  if (ok || !why) return ok;
  char range[96], comp[32] = "", got[40];
  range_text(lo, hi, bounds, range, sizeof range);
  if (ncomp > 1) snprintf(comp, sizeof comp, "[%d]", component + 1);
  if (isnan(v))
    snprintf(got, sizeof got, "nan"); /* (printf's "-nan" for 0/0 says nothing more) */
  else
    snprintf(got, sizeof got, "%g", v);
  /* a non-finite value is out of every range, "finite" included: say so (E = inf is not refused for its sign) */
  snprintf(why, len, "particle %d: %s%s (%s) must be %s%s (got %s)", p + 1, name, comp, doc,
           !isfinite(v) && strcmp(range, "finite") != 0 ? "finite and " : "", range, got);
  return 0;
}

static const char* custom_range(const char* name) {
  static char material[600];
  if (!strcmp(name, "inc_p")) return "0 (off) or >= 2";
  if (!strcmp(name, "act_id")) return "-1 (none) or an actuator index in [0, n_actuators)";
  if (!strcmp(name, "damping"))
    return "-1 (the default: the world's damping for a solid, none for a fluid) or >= 0 with damping * dt per "
           "substep <= 80";
  if (!strcmp(name, "material")) {
    if (!material[0]) snprintf(material, sizeof material, "one of %s", names_text(CQ_LIST_MATERIAL));
    return material;
  }
  return "see the engine's docs";
}

/* The CQ_CUSTOM rows of fields.h. */
static int check_custom(const cqi_model* m, int p, char* why, int len) {
  double inc_p = m->inc_p[p];
  if (!(inc_p == 0 || (inc_p >= 2 && isfinite(inc_p)))) {
    if (why)
      snprintf(why, len, "particle %d: inc_p (incompressibility exponent) must be %s (got %g)", p + 1,
               custom_range("inc_p"), inc_p);
    return 0;
  }
  if (m->material[p] >= CQ_N_MATERIALS) {
    if (why)
      snprintf(why, len, "particle %d: material must be %.400s (got %d)", p + 1, custom_range("material"),
               m->material[p]);
    return 0;
  }
  double damping = m->damping[p];
  if (!(damping == -1 || (damping >= 0 && damping * m->dt_sub <= 80))) {
    if (why)
      snprintf(why, len, "particle %d: damping (its material's velocity damping rate) must be %s (got %g, dt per "
               "substep %g)", p + 1, custom_range("damping"), damping, m->dt_sub);
    return 0;
  }
  if (m->act_id[p] < -1 || m->act_id[p] >= m->n_act) {
    if (why)
      snprintf(why, len, "particle %d: act_id must be -1 (none) or an actuator index in [0, %d) (got %d)", p + 1,
               m->n_act, m->act_id[p]);
    return 0;
  }
  return 1;
}

/* 1 if every parameter of particle p is valid, else 0 with the reason in why (when why is not NULL). */
static int check_particle(const cqi_model* m, const cq_params* prm, int p, char* why, int len) {
  const int n = m->n, D = m->dim;
#define CQI_CHECK(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc)                                         \
  if ((bounds) != CQ_CUSTOM)                                                                                         \
    for (int c = 0; c < shape_len(shape, D); c++)                                                                    \
      if (!check_range(#name, doc, (double)m->name[(long)c * n + p], lo, hi, bounds, p, c, shape_len(shape, D), why, \
                       len))                                                                                         \
        return 0;
  CQ_PARAM_FIELDS(CQI_CHECK)
#undef CQI_CHECK
  if (!check_custom(m, p, why, len)) return 0;
  char mwhy[400] = "";
  int ok = D == 2 ? material_check_2(prm, p, mwhy, sizeof mwhy) : material_check_3(prm, p, mwhy, sizeof mwhy);
  if (!ok && why)
    snprintf(why, len, "particle %d (%s): %s", p + 1, cq_name(CQ_LIST_MATERIAL, m->material[p], NULL), mwhy);
  return ok;
}

double cqi_particle_stable_dt(const cqi_model* m, const cq_params* prm, int p, double* dt_wave, double* dt_visc) {
  double dx = m->desc.dx;
  /* wave speed^2 = M / rho, rho = mass / vol0 */
  double M = m->dim == 2 ? material_modulus_2(prm, p) : material_modulus_3(prm, p);
  double c2 = M * m->vol0[p] / m->mass[p];
  double w = c2 > 0 ? dx / sqrt(c2) : INFINITY;
  double mu = m->visc[p];
  double v = mu > 0 ? (double)m->mass[p] / m->vol0[p] * dx * dx / (2 * m->dim * mu) : INFINITY;
  if (dt_wave) *dt_wave = w;
  if (dt_visc) *dt_visc = v;
  if (!(mu > 0)) return w;
  /* a mode of frequency 2 / dt_wave damped at the rate 2 / dt_visc is stable under symplectic Euler when
   * (dt / dt_wave)^2 + dt / dt_visc <= 1; the root of the equality, written without cancellation */
  double iv = 1 / v, iw = isinf(w) ? 0 : 1 / w;
  return 2 / (iv + sqrt(iv * iv + 4 * iw * iw));
}

int cqi_stable_dt_exceeded(const cqi_model* m, char* why, int len) {
  if (!(m->dt_sub > m->stable_dt)) return 0;
  int p = m->stiffest;
  char desc[256];
  cqi_model_describe(m, p, desc, sizeof desc);
  cq_params prm = cqi_model_params(m);
  double dt_wave, dt_visc, rho = (double)(m->mass[p] / m->vol0[p]);
  cqi_particle_stable_dt(m, &prm, p, &dt_wave, &dt_visc);
  double need = ceil(m->desc.dt / m->stable_dt);
  /* the substeps to suggest: a count the world accepts (an int), else what to change instead */
  char advice[160];
  if (need <= 2147483647.0)
    snprintf(advice, sizeof advice, "use more substeps (>= %.0f), a smaller dt", need);
  else
    snprintf(advice, sizeof advice, "it would take %.3g substeps, more than 2^31 - 1 substeps: use a smaller dt", need);
  if (dt_visc < dt_wave) /* the viscosity binds */
    snprintf(why, len,
             "the substep dt/substeps = %g is above the stable limit %g of the current parameters, set by the "
             "viscosity of particle %d (%s, visc = %g, density %g): viscous limit rho dx^2 / (2 d visc) = %g (wave "
             "limit dx / c = %g); %s or a lower visc",
             m->dt_sub, m->stable_dt, p + 1, desc, (double)m->visc[p], rho, dt_visc, dt_wave, advice);
  else {
    char also[120] = "";
    if (m->visc[p] > 0) snprintf(also, sizeof also, ", lowered by its viscosity visc = %g", (double)m->visc[p]);
    snprintf(why, len,
             "the substep dt/substeps = %g is above the stable limit %g of the current parameters (particle "
             "%d, %s, has the largest wave speed c = sqrt(M / rho) = %g, M its material's P-wave modulus: the limit is "
             "dx / c%s); %s or a softer material",
             m->dt_sub, m->stable_dt, p + 1, desc, m->desc.dx / dt_wave, also, advice);
  }
  return 1;
}

int cqi_model_validate(cqi_model* m, cqi_err* err) {
  cq_params prm = cqi_model_params(m);
  double best = INFINITY, modulus_max = 0;
  int stiffest = 0, members = 0;
  for (int p = 0; p < m->n; p++) {
    if (!check_particle(m, &prm, p, NULL, 0)) {
      char why[600];
      check_particle(m, &prm, p, why, sizeof why);
      return cqi_errorf(err, CQ_ERR_ARG, "%s", why);
    }
    double dt = cqi_particle_stable_dt(m, &prm, p, NULL, NULL);
    if (dt < best) best = dt, stiffest = p;
    double M = m->dim == 2 ? material_modulus_2(&prm, p) : material_modulus_3(&prm, p);
    if (M > modulus_max) modulus_max = M;
    if ((m->dim == 2 ? vol_group_bulk_2(&prm, p) : vol_group_bulk_3(&prm, p)) > 0) members++;
  }
  m->vol_members = members;
  m->modulus_max = modulus_max;
  m->stable_dt = best;
  m->stiffest = stiffest;
  m->validated = m->generation;
  return CQ_OK;
}

/* Whether a material's parameter list (cq_material_info's " c10! c01! bulk!", always starting with a space) names
 * parameter name: 0 no, 1 as optional, 2 as required. */
static int uses_param(const char* uses, const char* name) {
  size_t k = strlen(name);
  for (const char* s = strstr(uses, name); s; s = strstr(s + 1, name))
    if (s[-1] == ' ' && (s[k] == '!' || s[k] == '?')) return s[k] == '!' ? 2 : 1;
  return 0;
}

int cq_param_bounds(const char* name, double* lo, double* hi, int* bounds) {
#define CQI_BOUNDS(fname, ctype, type, shape, diff, dflt, flo, fhi, fbounds, doc) \
  if (!strcmp(name, #fname)) {                                                    \
    *lo = flo, *hi = fhi, *bounds = fbounds;                                      \
    return CQ_OK;                                                                 \
  }
  CQ_PARAM_FIELDS(CQI_BOUNDS)
#undef CQI_BOUNDS
  return CQ_ERR_ARG;
}

int cq_material_check(int id, int dim, const double* values, char* why, int len) {
  if (id < 0 || id >= CQ_N_MATERIALS || (dim != 2 && dim != 3)) {
    if (why && len > 0) snprintf(why, len, "no material %d in %dD", id, dim);
    return 0;
  }
  struct { /* one particle's parameters */
#define CQI_ONE(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) ctype name[9];
    CQ_PARAM_FIELDS(CQI_ONE)
#undef CQI_ONE
  } one;
  cq_params prm;
  memset(&prm, 0, sizeof prm);
  long k = 0;
#define CQI_FILL(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc)         \
  for (int c = 0; c < shape_len(shape, dim); c++) one.name[c] = (ctype)values[k++]; \
  prm.name = one.name;
  CQ_PARAM_FIELDS(CQI_FILL)
#undef CQI_FILL
  one.material[0] = (uint8_t)id;
  prm.n = 1;
  char buf[400] = "";
  int ok = dim == 2 ? material_check_2(&prm, 0, buf, sizeof buf) : material_check_3(&prm, 0, buf, sizeof buf);
  if (!ok && why && len > 0) snprintf(why, len, "%s", buf);
  return ok;
}

/* "mooney_rivlin, c10 = 1190, c01 = 23028, bulk = 1.75e+09, density 1080": particle p's model and the parameters
 * it reads (those its header lists, and bulk, visc and inc_p where they are on), for messages. */
void cqi_model_describe(const cqi_model* m, int p, char* out, int len) {
  int model = m->material[p], enu = 0;
  int used = snprintf(out, len, "%s", cq_name(CQ_LIST_MATERIAL, model, NULL));
  const char* uses = "";
  cq_material_info(model, &enu, &uses);
  /* the scalar parameters its header lists (" c10! ..."): required ones always, optional ones when on; bulk, visc and
   * inc_p (any model's) when on */
#define CQI_DESCRIBE(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc)                                     \
  if (used < len && (shape) == CQ_SHAPE_SCALAR && (type) == CQ_TYPE_REAL &&                                         \
      (uses_param(uses, #name) == 2 ||                                                                              \
       ((uses_param(uses, #name) || !strcmp(#name, "bulk") || !strcmp(#name, "visc") || !strcmp(#name, "inc_p")) && \
        m->name[p] != 0)))                                                                                          \
    used += snprintf(out + used, len - used, ", %s = %g", #name, (double)m->name[p]);
  CQ_PARAM_FIELDS(CQI_DESCRIBE)
#undef CQI_DESCRIBE
  if (used < len) snprintf(out + used, len - used, ", density %g", (double)(m->mass[p] / m->vol0[p]));
}

/* ---- actuators, cables, boundary conditions ---- */

int cqi_model_set_actuator(cqi_model* m, int a, int kind, cqi_err* err) {
  if (a < 0 || a >= m->n_act)
    return cqi_errorf(err, CQ_ERR_ARG, "actuator must be in [1, %d] (got %d)", m->n_act, a + 1);
  if (kind < 0 || kind >= CQ_N_ACTUATOR_KINDS)
    return cqi_errorf(err, CQ_ERR_ARG, "actuator kind must be one of %s (got %d)", names_text(CQ_LIST_ACTUATOR), kind);
  m->act_kind[a] = (uint8_t)kind;
  m->generation++;
  return CQ_OK;
}

int cqi_model_add_cable(cqi_model* m, int actuator, int count, const int* particles, double k, double rest,
                        cqi_err* err) {
  if (actuator < 0 || actuator >= m->n_act)
    return cqi_errorf(err, CQ_ERR_ARG, "cable: actuator must be in [1, %d] (got %d)", m->n_act, actuator + 1);
  if (m->act_kind[actuator] != CQ_ACT_CABLE)
    return cqi_errorf(err, CQ_ERR_ARG, "cable: actuator %d is not a cable actuator (set its kind to cable first)",
                      actuator + 1);
  if (count < 2) return cqi_errorf(err, CQ_ERR_ARG, "cable: needs at least 2 particles (got %d)", count);
  if (!(k >= 0) || !isfinite(k))
    return cqi_errorf(err, CQ_ERR_ARG, "cable: stiffness k must be finite and >= 0 (got %g)", k);
  if (!(rest >= 0) || !isfinite(rest))
    return cqi_errorf(err, CQ_ERR_ARG, "cable: rest length must be finite and >= 0 (got %g)", rest);
  for (int i = 0; i < count; i++)
    if (particles[i] < 0 || particles[i] >= m->n)
      return cqi_errorf(err, CQ_ERR_ARG, "cable: particle %d must be in [1, %d] (got %d)", i + 1, m->n,
                        particles[i] + 1);
  if (m->n_cable_idx > 0x7fffffff - count) return cqi_errorf(err, CQ_ERR_ARG, "cable: too many cable particles");
  cq_cable* cb = realloc(m->cables, sizeof(cq_cable) * (m->n_cables + 1));
  if (!cb) return cqi_errorf(err, CQ_ERR_NOMEM, "cable: out of memory");
  m->cables = cb;
  int32_t* ix = realloc(m->cable_idx, sizeof(int32_t) * ((size_t)m->n_cable_idx + count));
  if (!ix) return cqi_errorf(err, CQ_ERR_NOMEM, "cable: out of memory");
  m->cable_idx = ix;
  cq_cable* c = &m->cables[m->n_cables++];
  c->first = m->n_cable_idx;
  c->count = count;
  c->act = actuator;
  c->k = (cq_real)k;
  c->rest = (cq_real)rest;
  for (int i = 0; i < count; i++) m->cable_idx[m->n_cable_idx++] = particles[i];
  m->generation++;
  return CQ_OK;
}

int cqi_model_set_node_bcs(cqi_model* m, int count, const int* nodes, const double* normals, int type, double friction,
                           cqi_err* err) {
  if (count < 0) return cqi_errorf(err, CQ_ERR_ARG, "node count must be >= 0 (got %d)", count);
  if (type <= CQ_BC_NONE || type >= CQ_N_BOUNDARIES)
    return cqi_errorf(err, CQ_ERR_ARG, "node boundary type must be one of %s except none (got %d)",
                      names_text(CQ_LIST_BOUNDARY), type);
  if (!(friction >= 0)) return cqi_errorf(err, CQ_ERR_ARG, "friction must be >= 0 (got %g)", friction);
  for (int k = 0; k < count; k++) { /* validate everything before changing anything */
    if (nodes[k] < 0 || nodes[k] >= m->n_nodes)
      return cqi_errorf(err, CQ_ERR_ARG, "node %d: index must be in [0, %ld) (got %d)", k + 1, m->n_nodes, nodes[k]);
    double len = 0;
    for (int a = 0; a < m->dim; a++) len += normals[3 * k + a] * normals[3 * k + a];
    if (!(len > 0) || !isfinite(len))
      return cqi_errorf(err, CQ_ERR_ARG, "node %d: normal must be finite and non-zero", k + 1);
  }
  if (!m->node_bc_index) {
    m->node_bc_index = malloc(sizeof(int32_t) * m->n_nodes);
    if (!m->node_bc_index) return cqi_errorf(err, CQ_ERR_NOMEM, "out of memory for the node boundary map");
    for (long i = 0; i < m->n_nodes; i++) m->node_bc_index[i] = -1;
  }
  cq_bc* nb = realloc(m->node_bcs, sizeof(cq_bc) * ((size_t)m->n_node_bcs + count + 1));
  if (!nb) return cqi_errorf(err, CQ_ERR_NOMEM, "out of memory for node boundary conditions");
  m->node_bcs = nb;
  for (int k = 0; k < count; k++) {
    double len = 0;
    for (int a = 0; a < m->dim; a++) len += normals[3 * k + a] * normals[3 * k + a];
    len = sqrt(len);
    cq_bc* b = &m->node_bcs[m->n_node_bcs];
    memset(b, 0, sizeof *b);
    b->type = type;
    b->mu = (cq_real)friction;
    for (int a = 0; a < m->dim; a++) b->n[a] = (cq_real)(normals[3 * k + a] / len);
    m->node_bc_index[nodes[k]] = m->n_node_bcs++;
  }
  m->generation++;
  return CQ_OK;
}

/* How many actuators are closed cavities (their particle forces need the per-cavity correction pass). */
int cqi_model_cavities(const cqi_model* m) {
  int count = 0;
  for (int a = 0; a < m->n_act; a++) count += m->act_kind[a] == CQ_ACT_CAVITY;
  return count;
}

/* Boundary velocities are evaluated at the substep's start time. */
cq_substep cqi_substep_ctx(const cqi_model* m, const int32_t* node_bc_index, const cq_bc* node_bcs, long k) {
  return cqi_substep_piece_ctx(m, node_bc_index, node_bcs, k, 0, 0);
}

cq_substep cqi_substep_piece_ctx(const cqi_model* m, const int32_t* node_bc_index, const cq_bc* node_bcs, long k,
                                 long j, int level) {
  cq_substep c;
  memset(&c, 0, sizeof c);
  const cq_world_desc* d = &m->desc;
  long s = 1;
  for (int a = m->dim - 1; a >= 0; a--) {
    c.res[a] = d->res[a];
    c.stride[a] = s;
    s *= d->res[a];
  }
  c.dx = (cq_real)d->dx;
  c.inv_dx = (cq_real)(1.0 / d->dx);
  double dt = ldexp(m->dt_sub, -level); /* exact: a power of two */
  c.dt = (cq_real)dt;
  for (int a = 0; a < 3; a++) c.gravity[a] = (cq_real)d->gravity[a];
  c.damp = (cq_real)exp(-d->damping * dt);
  c.damping = (cq_real)d->damping;
  double t = k * m->dt_sub + j * dt;
  for (int wi = 0; wi < 2 * m->dim; wi++) {
    const cq_wall_desc* wd = &d->walls[wi];
    cq_bc* b = &c.walls[wi];
    c.wall_thick[wi] = wd->type == CQ_BC_NONE ? 0 : wd->thickness;
    b->type = wd->type;
    b->mu = (cq_real)wd->friction;
    b->n[wi / 2] = wi % 2 == 0 ? 1 : -1;
    for (int a = 0; a < m->dim; a++)
      b->vel[a] = (cq_real)(wd->velocity[a] + wd->osc_amplitude[a] * sin(wd->osc_omega * t + wd->osc_phase));
  }
  c.node_bc_index = m->node_bc_index ? node_bc_index : NULL;
  c.node_bcs = node_bcs;
  c.implicit_volume = d->implicit_volume;
  c.vol_averaged = cqi_vol_active(m);
  c.fill = d->fluid == CQ_FLUID_FILL;
  if (cqi_model_fields(m) == 2) {
    c.field_cells = d->res[0];
    c.field_nodes = m->n_nodes;
  }
  return c;
}

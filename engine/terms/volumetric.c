/* The averaged volumetric term's per-substep work (engine/terms/volumetric.h has the math), composed of backend primitives
 * for both integrators: the groups' sums and each particle's group pressure, their adjoint, and the groups' volume
 * projection at each substep's start with its adjoint. */
#include <math.h>
#include <stdlib.h>
#include "term.h"

/* The term's buffers, in backend memory, allocated when first needed: the group sums (grid vectors: at the last state
 * or velocities, and along the last Hessian product's direction), the per-particle group pressures and their
 * differentials ([n]); backward: the groups' sums of dL/d(pressure), the per-particle gradients, and (implicit) dL/dJl
 * through the output state's pg (state_adj); the volume projection's sums (a grid vector) and its adjoint's shares
 * ([n]). volumetric_groups = "initial": each particle's group node, from the first state stepped from ([n], and its
 * host copy for the stress query; groups_set: taken; cq_world_reset_groups clears it). */
typedef struct {
  cq_real *sums, *dsums, *p, *dp;
  cq_real *gsums, *g, *gJs;
  cq_real *psums, *share;
  int32_t *group_of, *group_host;
  int groups_set;
} vol_self;

#define SELF vol_self* V = self

/* The buffers, allocated on first use (a world's particle and node counts never change). */
static int vol_buffers(cqi_sim* sim, vol_self* V) {
  cqi_backend* be = sim->be;
  if (V->dp) return CQ_OK;
  size_t gb = sizeof(cq_real) * be->n_nodes * (be->dim + 1), pb = sizeof(cq_real) * be->n;
  V->sums = be->ops->alloc(be, gb);
  V->dsums = be->ops->alloc(be, gb);
  V->gsums = be->ops->alloc(be, gb);
  V->p = be->ops->alloc(be, pb);
  V->g = be->ops->alloc(be, pb);
  V->gJs = be->ops->alloc(be, pb);
  V->psums = be->ops->alloc(be, gb);
  V->share = be->ops->alloc(be, pb);
  V->dp = be->ops->alloc(be, pb); /* last: marks the buffers complete */
  if (!V->sums || !V->dsums || !V->gsums || !V->p || !V->g || !V->dp ||
      !V->gJs || !V->psums || !V->share)
    return cqi_errorf(sim->err, CQ_ERR_NOMEM,
                      "volumetric = \"averaged\": out of memory for the group sums (%ld "
                      "nodes)",
                      be->n_nodes);
  return CQ_OK;
}

/* volumetric_groups = "initial": each particle's group, the base node of its position x (host memory, [D][n]), on the
 * host as vol_group computes it. */
static int groups_from(cqi_sim* sim, vol_self* V, const cq_substep* c, const cq_real* x) {
  cqi_backend* be = sim->be;
  int n = be->n, D = be->dim, st = CQ_OK;
  if (!V->group_host) V->group_host = malloc(sizeof(int32_t) * (size_t)n);
  if (!V->group_of) V->group_of = be->ops->alloc(be, sizeof(int32_t) * (size_t)n);
  if (!V->group_host || !V->group_of)
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "volumetric_groups = \"initial\": out of memory for the groups");
  for (int p = 0; p < n; p++) {
    long g = 0;
    for (int a = 0; a < D; a++)
      g += (long)floor((double)cq_cell_coord(x[(long)a * n + p], c->dx, c->inv_dx)) * (long)c->stride[a];
    V->group_host[p] = (int32_t)g;
  }
  if (st == CQ_OK) st = be->ops->upload(be, V->group_of, V->group_host, sizeof(int32_t) * (size_t)n);
  if (st == CQ_OK) V->groups_set = 1;
  return st;
}

/* The groups, taken once: from the robot's initial state (cqi_volumetric_take_groups), else from the first state the
 * world steps from or the first after cq_world_reset_groups (s in backend memory). */
static int vol_groups(cqi_sim* sim, vol_self* V, const cq_substep* c, const cq_particles* s) {
  if (sim->model->desc.volumetric_groups != CQ_VOL_GROUPS_INITIAL || V->groups_set) return CQ_OK;
  cqi_backend* be = sim->be;
  size_t bytes = sizeof(cq_real) * (size_t)be->n * (size_t)be->dim;
  cq_real* x = malloc(bytes);
  int st = x ? be->ops->download(be, x, s->x, bytes)
             : cqi_errorf(sim->err, CQ_ERR_NOMEM, "volumetric_groups = \"initial\": out of memory for the groups");
  if (st == CQ_OK) st = groups_from(sim, V, c, x);
  free(x);
  return st;
}

int cqi_volumetric_take_groups(cqi_sim* sim, const cq_substep* c, const cq_particles* s) {
  if (sim->model->desc.volumetric == CQ_VOLUMETRIC_PARTICLE ||
      sim->model->desc.volumetric_groups != CQ_VOL_GROUPS_INITIAL)
    return CQ_OK;
  vol_self* V = cqi_term_peek(sim, CQI_TERM_volumetric); /* allocated here when no step has run it yet (term.c's
                                                          * cqi_term_self would make term.c and this file a cycle) */
  if (!V) V = sim->term_self[CQI_TERM_volumetric] = calloc(1, sizeof(vol_self));
  if (!V) return cqi_errorf(sim->err, CQ_ERR_NOMEM, "out of memory for the volumetric term's state");
  V->groups_set = 0;
  return groups_from(sim, V, c, s->x);
}

/* The buffers and the groups, before a substep's first use of them. */
static int vol_ready(cqi_sim* sim, vol_self* V, const cq_substep* c, const cq_particles* s) {
  int st = vol_buffers(sim, V);
  return st == CQ_OK ? vol_groups(sim, V, c, s) : st;
}

/* c with the groups the kernels take (volumetric.h vol_group). */
static cq_substep grouped(const vol_self* V, const cq_substep* c) {
  cq_substep g = *c;
  g.vol_group_of = V->groups_set ? V->group_of : NULL;
  return g;
}

/* Zeroes a grid vector of group sums: its active region, or all of it where the groups are fixed (a group's node can
 * lie outside the region its particles span now). */
static int vol_clear(cqi_sim* sim, const vol_self* V, cq_real* sums) {
  cqi_backend* be = sim->be;
  if (!V->groups_set) return be->ops->grid_clear(be, sums);
  return be->ops->zero(be, sums, sizeof(cq_real) * be->n_nodes * (be->dim + 1));
}

/* stress: the groups' sums at s (v NULL: J = det F, the explicit step) or at the grid velocities v (the implicit
 * solve's Jl) and each particle's group pressure, for the stress kernels (c->vol_sums, c->vol_p). */
static int vol_stress(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s, const cq_real* v) {
  SELF;
  cqi_backend* be = sim->be;
  int st = vol_ready(sim, V, c, s);
  cq_substep g = grouped(V, c);
  if (st == CQ_OK) st = vol_clear(sim, V, V->sums);
  if (st == CQ_OK) st = be->ops->vol_sums(be, &g, s, &sim->view->params, v, 0, V->sums);
  if (st == CQ_OK) st = be->ops->vol_pressure(be, &g, s, &sim->view->params, V->sums, NULL, V->p);
  c->vol_sums = V->sums;
  c->vol_p = V->p;
  return st;
}

/* stress_dir: the pressures' differential along the grid vector dir (c->vol_dp), at the velocities of the last
 * stress. */
static int vol_stress_dir(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s, const cq_real* dir) {
  SELF;
  cqi_backend* be = sim->be;
  cq_substep g = grouped(V, c);
  int st = vol_clear(sim, V, V->dsums);
  if (st == CQ_OK) st = be->ops->vol_sums(be, &g, s, &sim->view->params, dir, 1, V->dsums);
  if (st == CQ_OK) st = be->ops->vol_pressure(be, &g, s, &sim->view->params, V->sums, V->dsums, V->dp);
  c->vol_sums = V->sums;
  c->vol_p = V->p;
  c->vol_dp = V->dp;
  return st;
}

/* The groups' adjoint (c->vol_sums and vol_p of the forward's stress). Explicit (lam NULL, v NULL): after P2G's
 * adjoint wrote dL/d(group pressure) into V->g, each particle's share into g0->F and gp. Implicit: from the
 * multipliers lam at the converged velocities v, before implicit_stress_adj: dL/dJl into V->g (c->vol_gJ) and the
 * parameters' shares into gp. */
static int groups_adj(cqi_sim* sim, vol_self* V, cq_substep* c, const cq_particles* s, const cq_real* v,
                      const cq_real* lam, cq_particles* g0, const cq_param_grads* gp) {
  cqi_backend* be = sim->be;
  const cq_params* m = &sim->view->params;
  cq_substep g = grouped(V, c);
  int st = vol_clear(sim, V, V->gsums);
  if (st == CQ_OK) st = be->ops->vol_adj_sums(be, &g, s, m, lam ? NULL : V->g, lam, V->gsums);
  if (st == CQ_OK) st = be->ops->vol_adj(be, &g, s, m, v, V->gsums, lam ? V->g : NULL, g0, gp);
  c->vol_gJ = V->g;
  return st;
}

static int vol_p2g_adj_begin(cqi_sim* sim, void* self, cq_substep* c) {
  SELF;
  c->vol_g = V->g; /* P2G's adjoint writes dL/d(group pressure) there */
  return CQ_OK;
}

static int vol_stress_adj(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s, cq_particles* g0,
                          const cq_param_grads* gp) {
  return groups_adj(sim, self, c, s, NULL, NULL, g0, gp);
}

/* begin: the state's pg, the groups' pressures of the last substep, is E_geo's lagged pressure (implicit.h). */
static int vol_begin(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s) {
  c->vol_p0 = s->pg;
  return CQ_OK;
}

/* The implicit step's output pg: the groups' pressures at the converged v (the next substep's lagged pressure). */
static int vol_output(cqi_sim* sim, void* self, const cq_substep* c, cq_particles* s1) {
  cqi_backend* be = sim->be;
  return be->ops->copy(be, s1->pg, c->vol_p, sizeof(cq_real) * be->n);
}

/* Its adjoint, with g1->pg = dL/ds1->pg: the parameters' shares into gp, dL/dv into gv and dL/dJl per particle into
 * V->gJs (added to the solve's in vol_solve_adj_begin). */
static int vol_output_adj(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s, const cq_real* v,
                          const cq_particles* g1, cq_particles* g0, const cq_param_grads* gp, cq_real* gv) {
  SELF;
  cqi_backend* be = sim->be;
  const cq_params* m = &sim->view->params;
  int st = vol_stress(sim, self, c, s, v);
  cq_substep g = grouped(V, c);
  if (st == CQ_OK) st = vol_clear(sim, V, V->gsums);
  if (st == CQ_OK) st = be->ops->vol_adj_sums(be, &g, s, m, g1->pg, NULL, V->gsums);
  if (st == CQ_OK) st = be->ops->vol_adj(be, &g, s, m, v, V->gsums, V->gJs, NULL, gp);
  if (st == CQ_OK) st = be->ops->vol_strain_adj(be, c, s, m, V->gJs, gv);
  return st;
}

/* The solve's share: dL/dJl from the multipliers plus s1->pg's (output_adj), for implicit_stress_adj (c->vol_gJ),
 * and dL/d(s->pg) through E_geo, which it adds into g0->pg (c->vol_g0; s1 depends on s->pg only there). */
static int vol_solve_adj_begin(cqi_sim* sim, void* self, cq_substep* c, const cq_particles* s, const cq_real* v,
                               const cq_real* lam, cq_particles* g0, const cq_param_grads* gp) {
  SELF;
  cqi_backend* be = sim->be;
  int st = groups_adj(sim, V, c, s, v, lam, NULL, gp);
  if (st == CQ_OK) st = be->ops->axpy(be, be->n, 1, V->gJs, V->g);
  if (st == CQ_OK) st = be->ops->zero(be, g0->pg, sizeof(cq_real) * be->n);
  c->vol_g0 = g0->pg;
  return st;
}

/* The groups' sums of s's J (at v NULL) into V->psums. */
static int project_sums(cqi_sim* sim, vol_self* V, const cq_substep* c, const cq_particles* s) {
  cqi_backend* be = sim->be;
  int st = vol_ready(sim, V, c, s);
  cq_substep g = grouped(V, c);
  if (st == CQ_OK) st = vol_clear(sim, V, V->psums);
  if (st == CQ_OK) st = be->ops->vol_sums(be, &g, s, &sim->view->params, NULL, 0, V->psums);
  return st;
}

/* Whether the groups' volume projection runs: only for volumetric = "averaged", the term as recorded before it
 * became the default. The default ("solids") leaves F as the step integrated it: the projection rewrites each
 * member's history every substep, a numerical plasticity (the 2D finger at dx 0.625 mm kept a set of 0.42 mm after
 * 0.5 kPa and its release, and stood 36 % above the finite-element tip; without it 0.09 mm and 3 %), and the own
 * share K_s = 16 M of the default holds the members' volumes together without it on resolved bodies (the 2D finger
 * in water at 8 kPa with walls under one cell comes apart, which the fracture check stops; docs/results/history.md,
 * "Issue 62: F as the step integrates it"). */
int cqi_volumetric_projects(const cqi_model* m) { return m->desc.volumetric == CQ_VOLUMETRIC_AVERAGED; }

/* project: every member's F scaled to its group's mean J (volumetric.h vol_project). */
static int vol_project(cqi_sim* sim, void* self, const cq_substep* c, cq_particles* s) {
  SELF;
  if (!cqi_volumetric_projects(sim->model)) return CQ_OK;
  int st = project_sums(sim, V, c, s);
  cq_substep g = grouped(V, c);
  return st == CQ_OK ? sim->be->ops->vol_project(sim->be, &g, s, &sim->view->params, V->psums) : st;
}

static int vol_project_adj(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s, cq_particles* g0,
                           const cq_param_grads* gp) {
  SELF;
  if (!cqi_volumetric_projects(sim->model)) return CQ_OK;
  cqi_backend* be = sim->be;
  const cq_params* m = &sim->view->params;
  int st = project_sums(sim, V, c, s);
  cq_substep g = grouped(V, c);
  if (st == CQ_OK) st = be->ops->vol_project_share(be, &g, s, m, V->psums, g0->F, V->share);
  if (st == CQ_OK) st = vol_clear(sim, V, V->gsums);
  if (st == CQ_OK) st = be->ops->vol_adj_sums(be, &g, s, m, V->share, NULL, V->gsums);
  if (st == CQ_OK) st = be->ops->vol_project_adj(be, &g, s, m, V->psums, V->gsums, V->share, g0->F, gp);
  return st;
}

/* The factor's blocks read the groups' sums of the last gradient (their V0 K and V0 do not change within the
 * substep) and the groups. */
static int vol_factor_ctx(cqi_sim* sim, void* self, cq_substep* c) {
  SELF;
  c->vol_sums = V->sums;
  c->vol_group_of = V->groups_set ? V->group_of : NULL;
  return CQ_OK;
}

/* The fixed groups' exact blocks (a member that moved off its group's node couples nodes up to four cells apart: 9^D
 * blocks per row). Anything less exact (a member's nodes past the group node's stencil left out, or moved onto its
 * nearest node there) made conjugate gradients take 300x as many iterations on the 3D finger at bulk / shear 3.6e4,
 * a few members having crossed a cell's middle; the wide rows cost the 3D finger 4x the time and 3x the memory of
 * the current groups' per factorisation (docs/results/history.md, "the default volumetric term"). */
static int fixed_blocks(const cqi_sim* sim, const cq_substep* c) {
  return c->vol_group_of && sim->be->ops->vol_group_blocks;
}

static int vol_factor_shape(cqi_sim* sim, void* self, const cq_substep* c, int* reach, int* rank) {
  *reach = fixed_blocks(sim, c) ? 4 : 2;
  *rank = 0;
  return CQ_OK;
}

static int vol_factor_blocks(cqi_sim* sim, void* self, const cq_substep* c, const cq_particles* s,
                             const int32_t* slot, double* blocks) {
  if (!fixed_blocks(sim, c)) return CQ_OK;
  return sim->be->ops->vol_group_blocks(sim->be, c, s, &sim->view->params, slot, blocks);
}

static void vol_release(cqi_sim* sim, void* self) {
  SELF;
  cqi_backend* be = sim->be;
  cq_real* bufs[] = {V->sums, V->dsums, V->gsums, V->p, V->g, V->dp, V->gJs, V->psums, V->share};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
    if (bufs[i] && be) be->ops->release(be, bufs[i]);
  if (V->group_of && be) be->ops->release(be, V->group_of);
  free(V->group_host);
}

static int vol_on(const cqi_model* m) { return cqi_vol_active(m); }

int cqi_volumetric_reset_groups(cqi_sim* sim) {
  vol_self* V = cqi_term_peek(sim, CQI_TERM_volumetric);
  if (!V) return 0;
  int was = V->groups_set;
  V->groups_set = 0;
  return was;
}

const int32_t* cqi_volumetric_groups_host(cqi_sim* sim) {
  const vol_self* V = cqi_term_peek(sim, CQI_TERM_volumetric);
  return V && V->groups_set ? V->group_host : NULL;
}

const cqi_term cqi_term_volumetric = {
    .name = "volumetric",
    .self_size = sizeof(vol_self),
    .on = vol_on,
    .release = vol_release,
    .project = vol_project,
    .project_adj = vol_project_adj,
    .begin = vol_begin,
    .stress = vol_stress,
    .stress_dir = vol_stress_dir,
    .output = vol_output,
    .output_adj = vol_output_adj,
    .p2g_adj_begin = vol_p2g_adj_begin,
    .stress_adj = vol_stress_adj,
    .solve_adj_begin = vol_solve_adj_begin,
    .factor_ctx = vol_factor_ctx,
    .factor_shape = vol_factor_shape,
    .factor_blocks = vol_factor_blocks,
};

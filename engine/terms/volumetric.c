/* The averaged volumetric term's per-substep work (engine/terms/volumetric.h has the math), composed of backend primitives
 * for both integrators: the groups' sums and each particle's group pressure, their adjoint, and the groups' volume
 * projection at each substep's start with its adjoint. */
#include <math.h>
#include <stdlib.h>
#include "integrator.h"

/* The buffers, allocated on first use (a world's particle and node counts never change). */
static int vol_buffers(cqi_sim* sim) {
  cqi_backend* be = sim->be;
  if (sim->vol_dp) return CQ_OK;
  size_t gb = sizeof(cq_real) * be->n_nodes * (be->dim + 1), pb = sizeof(cq_real) * be->n;
  sim->vol_sums = be->ops->alloc(be, gb);
  sim->vol_dsums = be->ops->alloc(be, gb);
  sim->vol_gsums = be->ops->alloc(be, gb);
  sim->vol_p = be->ops->alloc(be, pb);
  sim->vol_g = be->ops->alloc(be, pb);
  sim->vol_gJs = be->ops->alloc(be, pb);
  sim->vol_psums = be->ops->alloc(be, gb);
  sim->vol_share = be->ops->alloc(be, pb);
  sim->vol_dp = be->ops->alloc(be, pb); /* last: marks the buffers complete */
  if (!sim->vol_sums || !sim->vol_dsums || !sim->vol_gsums || !sim->vol_p || !sim->vol_g || !sim->vol_dp ||
      !sim->vol_gJs || !sim->vol_psums || !sim->vol_share)
    return cqi_errorf(sim->err, CQ_ERR_NOMEM,
                      "volumetric = \"averaged\": out of memory for the group sums (%ld "
                      "nodes)",
                      be->n_nodes);
  return CQ_OK;
}

/* volumetric_groups = "initial": each particle's group, the base node of its position in s, taken once (from the
 * first state the world steps from, or the first after cq_world_reset_groups), on the host as vol_group computes it. */
static int vol_groups(cqi_sim* sim, const cq_substep* c, const cq_particles* s) {
  if (sim->model->desc.volumetric_groups != CQ_VOL_GROUPS_INITIAL || sim->vol_groups_set) return CQ_OK;
  cqi_backend* be = sim->be;
  int n = be->n, D = be->dim;
  if (!sim->vol_group_host) sim->vol_group_host = malloc(sizeof(int32_t) * (size_t)n);
  if (!sim->vol_group_of) sim->vol_group_of = be->ops->alloc(be, sizeof(int32_t) * (size_t)n);
  cq_real* x = malloc(sizeof(cq_real) * (size_t)n * (size_t)D);
  int st = sim->vol_group_host && sim->vol_group_of && x
               ? CQ_OK
               : cqi_errorf(sim->err, CQ_ERR_NOMEM, "volumetric_groups = \"initial\": out of memory for the groups");
  if (st == CQ_OK) st = be->ops->download(be, x, s->x, sizeof(cq_real) * (size_t)n * (size_t)D);
  for (int p = 0; st == CQ_OK && p < n; p++) {
    long g = 0;
    for (int a = 0; a < D; a++)
      g += (long)floor((double)cq_cell_coord(x[(long)a * n + p], c->dx, c->inv_dx)) * (long)c->stride[a];
    sim->vol_group_host[p] = (int32_t)g;
  }
  if (st == CQ_OK) st = be->ops->upload(be, sim->vol_group_of, sim->vol_group_host, sizeof(int32_t) * (size_t)n);
  free(x);
  if (st == CQ_OK) sim->vol_groups_set = 1;
  return st;
}

/* The buffers and the groups, before a substep's first use of them. */
static int vol_ready(cqi_sim* sim, const cq_substep* c, const cq_particles* s) {
  int st = vol_buffers(sim);
  return st == CQ_OK ? vol_groups(sim, c, s) : st;
}

/* c with the groups the kernels take (volumetric.h vol_group). */
static cq_substep grouped(const cqi_sim* sim, const cq_substep* c) {
  cq_substep g = *c;
  g.vol_group_of = sim->vol_groups_set ? sim->vol_group_of : NULL;
  return g;
}

/* Zeroes a grid vector of group sums: its active region, or all of it where the groups are fixed (a group's node can
 * lie outside the region its particles span now). */
static int vol_clear(cqi_sim* sim, cq_real* sums) {
  cqi_backend* be = sim->be;
  if (!sim->vol_groups_set) return be->ops->grid_clear(be, sums);
  return be->ops->zero(be, sums, sizeof(cq_real) * be->n_nodes * (be->dim + 1));
}

int cqi_vol_update(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* v) {
  cqi_backend* be = sim->be;
  int st = vol_ready(sim, c, s);
  cq_substep g = grouped(sim, c);
  if (st == CQ_OK) st = vol_clear(sim, sim->vol_sums);
  if (st == CQ_OK) st = be->ops->vol_sums(be, &g, s, &sim->view->params, v, 0, sim->vol_sums);
  if (st == CQ_OK) st = be->ops->vol_pressure(be, &g, s, &sim->view->params, sim->vol_sums, NULL, sim->vol_p);
  c->vol_sums = sim->vol_sums;
  c->vol_p = sim->vol_p;
  return st;
}

int cqi_vol_direction(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* dir) {
  cqi_backend* be = sim->be;
  cq_substep g = grouped(sim, c);
  int st = vol_clear(sim, sim->vol_dsums);
  if (st == CQ_OK) st = be->ops->vol_sums(be, &g, s, &sim->view->params, dir, 1, sim->vol_dsums);
  if (st == CQ_OK)
    st = be->ops->vol_pressure(be, &g, s, &sim->view->params, sim->vol_sums, sim->vol_dsums, sim->vol_dp);
  c->vol_sums = sim->vol_sums;
  c->vol_p = sim->vol_p;
  c->vol_dp = sim->vol_dp;
  return st;
}

int cqi_vol_adjoint(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* v, const cq_real* lam,
                    cq_particles* g0, const cq_param_grads* gp) {
  cqi_backend* be = sim->be;
  const cq_params* m = &sim->view->params;
  cq_substep g = grouped(sim, c);
  int st = vol_clear(sim, sim->vol_gsums);
  if (st == CQ_OK) st = be->ops->vol_adj_sums(be, &g, s, m, lam ? NULL : sim->vol_g, lam, sim->vol_gsums);
  if (st == CQ_OK) st = be->ops->vol_adj(be, &g, s, m, v, sim->vol_gsums, lam ? sim->vol_g : NULL, g0, gp);
  c->vol_gJ = sim->vol_g;
  return st;
}

int cqi_vol_state(cqi_sim* sim, const cq_substep* c, cq_particles* s1) {
  cqi_backend* be = sim->be;
  return be->ops->copy(be, s1->pg, c->vol_p, sizeof(cq_real) * be->n);
}

int cqi_vol_state_adjoint(cqi_sim* sim, cq_substep* c, const cq_particles* s, const cq_real* v, const cq_real* g_pg,
                          const cq_param_grads* gp, cq_real* gv) {
  cqi_backend* be = sim->be;
  const cq_params* m = &sim->view->params;
  int st = cqi_vol_update(sim, c, s, v);
  cq_substep g = grouped(sim, c);
  if (st == CQ_OK) st = vol_clear(sim, sim->vol_gsums);
  if (st == CQ_OK) st = be->ops->vol_adj_sums(be, &g, s, m, g_pg, NULL, sim->vol_gsums);
  if (st == CQ_OK) st = be->ops->vol_adj(be, &g, s, m, v, sim->vol_gsums, sim->vol_gJs, NULL, gp);
  if (st == CQ_OK) st = be->ops->vol_strain_adj(be, c, s, m, sim->vol_gJs, gv);
  return st;
}

/* The groups' sums of s's J (at v NULL) into sim->vol_psums. */
static int project_sums(cqi_sim* sim, const cq_substep* c, const cq_particles* s) {
  cqi_backend* be = sim->be;
  int st = vol_ready(sim, c, s);
  cq_substep g = grouped(sim, c);
  if (st == CQ_OK) st = vol_clear(sim, sim->vol_psums);
  if (st == CQ_OK) st = be->ops->vol_sums(be, &g, s, &sim->view->params, NULL, 0, sim->vol_psums);
  return st;
}

int cqi_vol_project(cqi_sim* sim, const cq_substep* c, cq_particles* s) {
  int st = project_sums(sim, c, s);
  cq_substep g = grouped(sim, c);
  return st == CQ_OK ? sim->be->ops->vol_project(sim->be, &g, s, &sim->view->params, sim->vol_psums) : st;
}

int cqi_vol_scratch(cqi_sim* sim, const cq_particles* s, cq_particles* out) {
  cqi_backend* be = sim->be;
  size_t bytes = sizeof(cq_real) * (size_t)cqi_state_len(be->n, be->dim);
  if (!sim->vol_state && !(sim->vol_state = be->ops->alloc(be, bytes)))
    return cqi_errorf(sim->err, CQ_ERR_NOMEM, "volumetric = \"averaged\": out of memory for the backward's state");
  *out = cqi_particles_view(sim->vol_state, be->n, be->dim);
  return be->ops->copy(be, sim->vol_state, s->x, bytes);
}

int cqi_vol_projected(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_particles* out) {
  int st = cqi_vol_scratch(sim, s, out);
  return st == CQ_OK ? cqi_vol_project(sim, c, out) : st;
}

int cqi_vol_project_adjoint(cqi_sim* sim, const cq_substep* c, const cq_particles* s, cq_particles* g0,
                            const cq_param_grads* gp) {
  cqi_backend* be = sim->be;
  const cq_params* m = &sim->view->params;
  int st = project_sums(sim, c, s);
  cq_substep g = grouped(sim, c);
  if (st == CQ_OK) st = be->ops->vol_project_share(be, &g, s, m, sim->vol_psums, g0->F, sim->vol_share);
  if (st == CQ_OK) st = vol_clear(sim, sim->vol_gsums);
  if (st == CQ_OK) st = be->ops->vol_adj_sums(be, &g, s, m, sim->vol_share, NULL, sim->vol_gsums);
  if (st == CQ_OK)
    st = be->ops->vol_project_adj(be, &g, s, m, sim->vol_psums, sim->vol_gsums, sim->vol_share, g0->F, gp);
  return st;
}

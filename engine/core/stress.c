/* Stress queries of a state: the Cauchy stress of every particle, computed by the step's own P2G body (p2g_load:
 * the particle's material, its incompressibility term and the actuation stress), for pictures and exports. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "kernels.h"
#include "term.h"

/* sigma = tau / J of particle p, tau the Kirchhoff stress p2g_load computes (the one the step scatters). */
#define CQI_CAUCHY(DIM)                                                                                              \
  static void cauchy_##DIM(const cq_substep* c, const cq_particles* s, const cq_params* m, const cq_ctl* ctl, int p, \
                           double* out) {                                                                            \
    cqi_p2g_##DIM q;                                                                                                 \
    p2g_load_##DIM(c, s, m, ctl, p, &q, NULL, CQI_ANY);                                                              \
    double J = (double)det_##DIM(q.F);                                                                               \
    for (int i = 0; i < DIM; i++)                                                                                    \
      for (int j = 0; j < DIM; j++) out[(long)(i * DIM + j) * s->n + p] = (double)q.tau[i][j] / J;                   \
  }
CQI_CAUCHY(2)
CQI_CAUCHY(3)
#undef CQI_CAUCHY

/* volumetric = "averaged": the groups' pressures of state s (volumetric.h), serial on the host, into sub->vol_p,
 * and s->F pointed at a copy (*F), projected as the step's first stage makes it (the groups' projection of
 * "averaged" only: volumetric.c cqi_volumetric_projects) (*sums, *pr and *F malloc'd, freed
 * by the caller). A particle outside the grid is an error, as in a step. */
#define CQI_HOST_VOL(DIM)                                                                                        \
  static int host_vol_##DIM(cq_world* w, cq_substep* sub, cq_particles* s, const cq_params* prm, cq_real** sums, \
                            cq_real** pr, cq_real** F) {                                                         \
    const cqi_model* m = &w->model;                                                                              \
    *sums = calloc((size_t)m->n_nodes * (DIM + 1), sizeof(cq_real));                                             \
    *pr = malloc(sizeof(cq_real) * (size_t)s->n);                                                                \
    *F = malloc(sizeof(cq_real) * (size_t)s->n * DIM * DIM);                                                     \
    if (!*sums || !*pr || !*F) return cqi_errorf(&w->err, CQ_ERR_NOMEM, "out of memory for the stress query");   \
    for (int p = 0; p < s->n; p++)                                                                               \
      for (int a = 0; a < DIM; a++) {                                                                            \
        double b = floor((double)cq_cell_coord(s->x[a * s->n + p], sub->dx, sub->inv_dx));                       \
        if (!(b >= 0 && b <= m->desc.res[a] - 3))                                                                \
          return cqi_errorf(&w->err, CQ_ERR_STATE, "particle %d is outside the grid (x[%d] = %g)", p + 1, a + 1, \
                            (double)s->x[a * s->n + p]);                                                         \
      }                                                                                                          \
    for (int p = 0; p < s->n; p++) vol_sum_##DIM(sub, s, prm, p, NULL, 0, *sums);                                \
    for (int p = 0; p < s->n; p++) vol_pressure_##DIM(sub, s, prm, p, *sums, NULL, *pr);                         \
    memcpy(*F, s->F, sizeof(cq_real) * (size_t)s->n * DIM * DIM);                                                \
    s->F = *F;                                                                                                   \
    if (cqi_volumetric_projects(m))                                                                              \
      for (int p = 0; p < s->n; p++) vol_project_##DIM(sub, s, prm, p, *sums);                                   \
    sub->vol_sums = *sums;                                                                                       \
    sub->vol_p = *pr;                                                                                            \
    return CQ_OK;                                                                                                \
  }
CQI_HOST_VOL(2)
CQI_HOST_VOL(3)
#undef CQI_HOST_VOL

/* A control array (doubles, may be NULL) in working precision; CQ_OK, or an error naming the first non-finite
 * entry. *out is malloc'd (NULL when src is NULL). */
static int to_real(cq_world* w, const char* name, const double* src, long len, cq_real** out) {
  *out = NULL;
  if (!src) return CQ_OK;
  for (long i = 0; i < len; i++)
    if (!isfinite(src[i])) return cqi_errorf(&w->err, CQ_ERR_ARG, "%s[%ld] is not finite (%g)", name, i + 1, src[i]);
  if (!(*out = malloc(sizeof(cq_real) * (size_t)(len > 0 ? len : 1))))
    return cqi_errorf(&w->err, CQ_ERR_NOMEM, "out of memory for the stress query's %s", name);
  for (long i = 0; i < len; i++) (*out)[i] = (cq_real)src[i];
  return CQ_OK;
}

int cq_world_stress(cq_world* w, const cq_state* s, const cq_control* c, double* out) {
  cqi_model* m = &w->model;
  if (!s || !out) return cqi_errorf(&w->err, CQ_ERR_ARG, "the state and the output array are required");
  if (s->real_bits != CQ_REAL_BITS || s->n != m->n || s->dim != m->dim)
    return cqi_errorf(&w->err, CQ_ERR_ARG, "the state does not belong to this world");
  if (m->validated != m->generation) { /* material ids must be valid before the dispatch reads them */
    int st = cqi_model_validate(m, &w->err);
    if (st != CQ_OK) return st;
  }
  int n = m->n, D = m->dim;
  cq_real *u = NULL, *stress = NULL, *vsums = NULL, *vp = NULL, *vF = NULL;
  int st = to_real(w, "u", c ? c->u : NULL, m->n_act, &u);
  if (st == CQ_OK) st = to_real(w, "stress", c ? c->stress : NULL, (long)D * D * n, &stress);
  if (st == CQ_OK && !u && !(u = calloc((size_t)(m->n_act > 0 ? m->n_act : 1), sizeof(cq_real))))
    st = cqi_errorf(&w->err, CQ_ERR_NOMEM, "out of memory for the stress query");
  cq_params prm = cqi_model_params(m);
  cq_substep sub = cqi_substep_ctx(m, NULL, NULL, s->substep);
  sub.vol_group_of = cqi_volumetric_groups_host(&w->sim); /* the groups the steps took */
  cq_particles parts = s->p;
  if (st == CQ_OK && sub.vol_averaged)
    st = D == 2 ? host_vol_2(w, &sub, &parts, &prm, &vsums, &vp, &vF)
                : host_vol_3(w, &sub, &parts, &prm, &vsums, &vp, &vF);
  if (st == CQ_OK) {
    cq_ctl ctl;
    memset(&ctl, 0, sizeof ctl);
    ctl.u = u;
    ctl.stress = stress;
    if (D == 2)
      for (int p = 0; p < n; p++) cauchy_2(&sub, &parts, &prm, &ctl, p, out);
    else
      for (int p = 0; p < n; p++) cauchy_3(&sub, &parts, &prm, &ctl, p, out);
  }
  free(vsums), free(vp), free(vF);
  free(u); /* the converted actuation or the zeros */
  free(stress);
  if (st == CQ_OK) w->err.msg[0] = 0;
  return st;
}

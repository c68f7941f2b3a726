/* Constitutive models: dispatch over the material registry (registry.h, CQ_MATERIALS) to one header per model, plus
 * the optional incompressibility term of seed 000 eq. 14 and the volumetric term (bulk/2)(J - 1)^2 (isochoric.h)
 * that any model can carry. Included once per dimension by kernels.h (no include guard). Adding a material: write
 * material_<name>.h with its parameters (CQ_MAT_PARAMS_<name>, fields.h) and the five functions below, and add its
 * line to CQ_MATERIALS; the Makefile's generated list (cq_materials.h) includes the header (docs/architecture.md). */
#include <stdio.h> /* snprintf in the host-only checks */
#include "isochoric.h"
#include "symeig.h"
#include "plane_strain.h"
#include "material_incompressible.h"
#ifndef CQI_BULK_CHECK
#define CQI_BULK_CHECK
/* Host only, for the models that need their volumetric term: 1 when the bulk modulus K is > 0, else 0 with the
 * reason in why. */
static inline int cqi_bulk_check(const cq_params* m, int p, char* why, int len) {
  if (m->bulk[p] > 0) return 1;
  snprintf(why, len, "bulk (the bulk modulus K of its volumetric term) must be > 0 (got %g)", (double)m->bulk[p]);
  return 0;
}
#endif
#include "cq_materials.h" /* every registered material's header: its code for this D */

/* A material header defines, with D = 2 or 3 and m->...[p] its parameters (fields.h):
 *   CQ_D(mat_<name>_P)(m, p, F, P)               first Piola-Kirchhoff stress P(F)
 *   CQ_D(mat_<name>_P_vjp)(m, p, F, gP, gF, g)   gF += gP : dP/dF, g->param += gP : dP/dparam (its own parameters)
 *   CQ_D(mat_<name>_modulus)(m, p)               P-wave modulus M (stress units): wave speed sqrt(M vol0 / mass)
 *   CQ_D(mat_<name>_modulus_vjp)(m, p, gM, g)    g->param += gM dM/dparam (volumetric.h's own share depends on M)
 *   CQ_D(mat_<name>_check)(m, p, why, len)       host only: 1 if its parameters are valid, else 0 and the reason */

/* One particle's parameter gradients (cq_pgrad): zeroed, and added into the per-particle arrays gp (component-major
 * for vector and matrix parameters) once its adjoint has gathered them. */
CQ_HD void CQ_D(pgrad_zero)(cq_pgrad* g) {
#define CQI_ZERO(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) \
  CQI_IF(diff)(for (int c = 0; c < (int)(sizeof g->name / sizeof(cq_real)); c++)((cq_real*)&g->name)[c] = 0;)
  CQ_PARAM_FIELDS(CQI_ZERO)
#undef CQI_ZERO
}
CQ_HD void CQ_D(pgrad_add)(const cq_pgrad* g, const cq_param_grads* gp, int p, int n) {
#define CQI_ADD(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) \
  CQI_IF(diff)                                                             \
  (for (int c = 0; c < ((shape) == CQ_SHAPE_SCALAR ? 1                     \
                        : (shape) == CQ_SHAPE_VEC  ? D                     \
                                                   : D * D);                \
        c++) gp->name[(long)c * n + p] += ((const cq_real*)&g->name)[c];)
  CQ_PARAM_FIELDS(CQI_ADD)
#undef CQI_ADD
}

/* The bulk modulus of particle p's own volumetric term: none for a fluid whose pressure comes from the grid's fill
 * (world option fluid = "grid", fill.h), where bulk is the fill's modulus instead. */
CQ_HD cq_real CQ_D(particle_bulk)(const cq_params* m, int p) {
  return m->fluid_fill && m->material[p] == CQ_MAT_FLUID ? 0 : m->bulk[p];
}

/* The volumetric term (K/2)(J - 1)^2 with K = the particle's bulk modulus, through the 3D helpers. */
CQ_HD void CQ_D(volumetric_P)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D]) {
  cq_real P3[3][3] = {{0}};
  cqi_iso q;
  CQ_D(iso_load)(F, &q, NULL, NULL);
  cqi_vol_P(&q, m->bulk[p], P3);
  CQ_D(add_block)(P3, P);
}

CQ_HD void CQ_D(volumetric_P_vjp)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                  cq_real gF[D][D], cq_pgrad* g) {
  cq_real gP3[3][3], gF3[3][3] = {{0}};
  cqi_iso q;
  CQ_D(iso_load)(F, &q, gP, gP3);
  cqi_vol_P_vjp(&q, m->bulk[p], gP3, gF3, &g->bulk);
  CQ_D(add_block)(gF3, gF);
}

/* P(F) of particle p's model, plus the incompressibility term when inc_p > 0 and, when with_bulk and bulk > 0, the
 * volumetric term (the implicit solve may linearise that one itself: implicit.h implicit_P). The dispatch is an
 * if-chain after a range assumption (material ids are validated before every step), so the compiler drops the
 * impossible path. */
CQ_HD void CQ_D(material_P_terms_v)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D], int with_bulk,
                                    cqi_variant v) {
  const unsigned model = v.material >= 0 ? (unsigned)v.material : m->material[p];
  if (model >= CQ_N_MATERIALS) CQI_UNREACHABLE(); /* commit rejects other ids */
#define CQI_CASE(ID, name, ...)       \
  if (model == CQ_MAT_##ID)           \
    CQ_D(mat_##name##_P)(m, p, F, P); \
  else
  CQ_MATERIALS(CQI_CASE) {}
#undef CQI_CASE
  if (!v.plain && m->inc_p[p] > 0) CQ_D(incompressible_P)(m, p, F, P);
  if (!v.plain && with_bulk && CQ_D(particle_bulk)(m, p) > 0) CQ_D(volumetric_P)(m, p, F, P);
}

CQ_HD void CQ_D(material_P_terms)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D], int with_bulk) {
  CQ_D(material_P_terms_v)(m, p, F, P, with_bulk, CQI_ANY);
}

CQ_HD void CQ_D(material_P)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D]) {
  CQ_D(material_P_terms)(m, p, F, P, 1);
}

/* Vector-Jacobian product of material_P_terms: gF += dL/dF, g->(its parameters) += dL/d(parameter), given gP =
 * dL/dP. */
CQ_HD void CQ_D(material_P_vjp_terms_v)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                        cq_real gF[D][D], cq_pgrad* g, int with_bulk, cqi_variant v) {
  const unsigned model = v.material >= 0 ? (unsigned)v.material : m->material[p];
  if (model >= CQ_N_MATERIALS) CQI_UNREACHABLE();
#define CQI_CASE(ID, name, ...)                   \
  if (model == CQ_MAT_##ID)                       \
    CQ_D(mat_##name##_P_vjp)(m, p, F, gP, gF, g); \
  else
  CQ_MATERIALS(CQI_CASE) {}
#undef CQI_CASE
  if (!v.plain && m->inc_p[p] > 0) CQ_D(incompressible_P_vjp)(m, p, F, gP, gF, g);
  if (!v.plain && with_bulk && CQ_D(particle_bulk)(m, p) > 0) CQ_D(volumetric_P_vjp)(m, p, F, gP, gF, g);
}

CQ_HD void CQ_D(material_P_vjp_terms)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                      cq_real gF[D][D], cq_pgrad* g, int with_bulk) {
  CQ_D(material_P_vjp_terms_v)(m, p, F, gP, gF, g, with_bulk, CQI_ANY);
}

CQ_HD void CQ_D(material_P_vjp)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                cq_real gF[D][D], cq_pgrad* g) {
  CQ_D(material_P_vjp_terms)(m, p, F, gP, gF, g, 1);
}

/* Projection of F after the G2P update (seed 003 sec. 2.2: a fluid keeps only its volume change). Models without
 * one leave F as it is; material_projects_F says whether the adjoint must go through it. */
CQ_HD int CQ_D(material_projects_F)(const cq_params* m, int p) { return m->material[p] == CQ_MAT_FLUID; }

CQ_HD void CQ_D(material_project_F)(const cq_params* m, int p, cq_real F[D][D]) {
  if (m->material[p] == CQ_MAT_FLUID) CQ_D(fluid_reset)(F, m->fluid_fill);
}

/* g (dL/d projected F) -> dL/d(updated F) Fu, in place. */
CQ_HD void CQ_D(material_project_F_adj)(const cq_params* m, int p, const cq_real Fu[D][D], cq_real g[D][D]) {
  if (m->material[p] == CQ_MAT_FLUID) CQ_D(fluid_reset_adj)(Fu, g, m->fluid_fill);
}

/* P-wave modulus of particle p (model plus incompressibility and volumetric terms), for the stable time step. */
CQ_HD cq_real CQ_D(material_modulus)(const cq_params* m, int p) {
  cq_real M = 0;
  const unsigned model = m->material[p];
#define CQI_CASE(ID, name, ...)           \
  if (model == CQ_MAT_##ID)               \
    M = CQ_D(mat_##name##_modulus)(m, p); \
  else
  CQ_MATERIALS(CQI_CASE) {}
#undef CQI_CASE
  return M + CQ_D(incompressible_modulus)(m, p) + m->bulk[p];
}

/* P-wave modulus of particle p's model alone (without its incompressibility and volumetric terms), and its gradient:
 * g->(the model's parameters) += gM dM/d(parameter). */
CQ_HD cq_real CQ_D(material_model_modulus)(const cq_params* m, int p) {
  const unsigned model = m->material[p];
#define CQI_CASE(ID, name, ...) \
  if (model == CQ_MAT_##ID) return CQ_D(mat_##name##_modulus)(m, p);
  CQ_MATERIALS(CQI_CASE)
#undef CQI_CASE
  return 0;
}

CQ_HD void CQ_D(material_model_modulus_vjp)(const cq_params* m, int p, cq_real gM, cq_pgrad* g) {
  const unsigned model = m->material[p];
#define CQI_CASE(ID, name, ...)                  \
  if (model == CQ_MAT_##ID)                      \
    CQ_D(mat_##name##_modulus_vjp)(m, p, gM, g); \
  else
  CQ_MATERIALS(CQI_CASE) {}
#undef CQI_CASE
}

/* Host only: 1 if particle p's model parameters are valid, else 0 with the reason in why. */
static inline int CQ_D(material_check)(const cq_params* m, int p, char* why, int len) {
  const int model = m->material[p];
#define CQI_CASE(ID, name, ...) \
  if (model == CQ_MAT_##ID) return CQ_D(mat_##name##_check)(m, p, why, len);
  CQ_MATERIALS(CQI_CASE)
#undef CQI_CASE
  return 1;
}

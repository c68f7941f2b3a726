/* Newtonian fluid (seed 003 sec. 2.2): Psi = (bulk/2)(J - 1)^2 only, the particle's volumetric term (material.h),
 * with F reset to J^(1/d) I after every substep (fluid_reset, called by G2P through material_project_F) so that
 * shear never accumulates in F;
 * optional viscosity through the per-particle field visc (engine/stages/p2g.h), which any material can carry. This file holds
 * its (zero) deviatoric stress, wave modulus and checks. Per dimension. */

/* Its parameters (fields.h: P declares one, U names each that the robot builder takes for it, 1 = required). */
#ifndef CQ_MAT_PARAMS_fluid
#define CQ_MAT_PARAMS_fluid(P, U) U(bulk, 1)
#endif

#ifdef D /* its code, per dimension (material.h) */

CQ_HD void CQ_D(mat_fluid_P)(const cq_params* m, int p, const cq_real F[D][D], cq_real P[D][D]) {
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) P[i][j] = 0;
}

CQ_HD void CQ_D(mat_fluid_P_vjp)(const cq_params* m, int p, const cq_real F[D][D], const cq_real gP[D][D],
                                 cq_real gF[D][D], cq_pgrad* g) {}

/* No shear stiffness: the bulk term adds K to the P-wave modulus. */
CQ_HD cq_real CQ_D(mat_fluid_modulus)(const cq_params* m, int p) { return 0; }
CQ_HD void CQ_D(mat_fluid_modulus_vjp)(const cq_params* m, int p, cq_real gM, cq_pgrad* g) {}

/* The reset F -> J^(1/d) I after the G2P update, and its adjoint: the gradient w.r.t. the reset F (g, in place)
 * becomes the gradient w.r.t. the updated F (Fu): g -> (tr(g) r / d) Fu^-T, r = J^(1/d). Under grid fluid (fill: the
 * world option fluid = "grid") the volume is the grid's, not the particle's: F -> I, and no gradient passes. */
CQ_HD void CQ_D(fluid_reset)(cq_real F[D][D], int fill) {
  cq_real r = fill ? 1 : cq_pow(CQ_D(det)(F), (cq_real)1 / D);
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) F[a][b] = a == b ? r : 0;
}

CQ_HD void CQ_D(fluid_reset_adj)(const cq_real Fu[D][D], cq_real g[D][D], int fill) {
  if (fill) {
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) g[a][b] = 0;
    return;
  }
  cq_real A[D][D], tr = 0;
  cq_real J = CQ_D(inv_t)(Fu, A);
  for (int a = 0; a < D; a++) tr += g[a][a];
  cq_real k = tr * cq_pow(J, (cq_real)1 / D) / D;
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) g[a][b] = k * A[a][b];
}

static inline int CQ_D(mat_fluid_check)(const cq_params* m, int p, char* why, int len) {
  if (!(m->bulk[p] > 0)) {
    snprintf(why, len, "bulk (the fluid's bulk modulus lambda) must be > 0 (got %g)", (double)m->bulk[p]);
    return 0;
  }
  return 1;
}
#endif

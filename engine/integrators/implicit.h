/* The per-particle and per-node pieces of the implicit grid update (seed 003 sec. 2.3, eq. 12), which
 * integrator_implicit.c minimises over the grid velocities v of the nodes with mass:
 *   E(v) = sum_i m_i/(2 dt damp) |v_i - v*_i|^2 + (1/dt) sum_p V_p^0 Psi(F_p(v)),   F_p(v) = (I + dt C_p(v)) F_p,
 * with v*_i the grid velocity of the explicit update without the elastic stress (APIC momentum, gravity, damping,
 * forces, actuation stress), C_p(v) = kC sum_i w_ip v_i dpos_ip^T, kC = 4/dx^2 (the G2P gather of eq. 10), and
 * damp = exp(-damping dt) (implicit_inertia: the seed's eq. 12 has no damping, damp = 1).
 * Everything here is dt E (momentum units), so that
 *   grad_i = (m_i / damp) (v_i - v*_i) + sum_p V_p^0 dt kC w_ip P(F_p(v)) F_p^T dpos_ip
 * is the explicit update's momentum balance with the stress taken at F_p(v) instead of F_p. Included once per
 * dimension by kernels.h. */

/* Its backend passes (engine/backends/passes.h: X(op, body, over, key, gpu, (kind, arg)...)), over the active region. v, dir,
 * x, y, out: grid vectors (B); vstar: (v*[D], mass) per node. implicit_stress adds the elastic part of grad (dt E) at
 * the grid velocities v into out, implicit_hvp its Hessian applied to dir (particle scatters). implicit_node does
 * y += m x (x may be NULL) and projects y onto the boundary constraints of the solve; implicit_bc applies the
 * boundaries' own laws to the converged velocities v in place; implicit_precond is the solve's preconditioner, y =
 * Pi x / m per node (y distinct from x). The adjoint (implicit function theorem): implicit_stress_adj adds
 * lam . d(implicit_stress at v)/d(x, F, parameters) of every particle into g0->x, g0->F and gp (a gather:
 * deterministic); implicit_node_adj adds lam . d(m (v - v*))/d(P2G's momentum and mass) to out (c without
 * boundaries, as for v*); implicit_bc_adj turns dL/d(velocity after implicit_bc) in gv into dL/d(converged v), in
 * place. */
#ifndef CQ_IMPLICIT_PASSES
#define CQ_IMPLICIT_PASSES(X)                                                                               \
  X(implicit_stress, implicit_stress, SCATTER, 0, 1, (CR, v), (R, out))                                     \
  X(implicit_hvp, implicit_hvp, SCATTER, 0, 1, (CR, v), (CR, dir), (R, out))                                \
  X(implicit_node, implicit_node, NODES, 0, 1, (CG, vstar), (CG, x), (G, y))                                \
  X(implicit_bc, implicit_bc_node, NODES, 0, 1, (CG, vstar), (G, v))                                        \
  X(implicit_precond, implicit_precond_node, NODES, 0, 1, (CG, vstar), (CG, x), (G, y))                     \
  X(implicit_stress_adj, implicit_stress_adj, PARTICLES, 0, 1, (CR, v), (CR, lam), (GS, g0), (GP, gp))      \
  X(implicit_node_adj, implicit_node_adj, NODES, 0, 1, (CG, mp), (CG, vstar), (CG, v), (CG, lam), (G, out)) \
  X(implicit_bc_adj, implicit_bc_node_adj, NODES, 0, 1, (CG, vstar), (CG, v), (G, gv))
#endif

#ifdef D /* its bodies, per dimension (kernels.h) */

/* The inertia term's mass of a node, m_i / damp (vstar: (v*[D], m_i)). The explicit step damps its whole update,
 * v = damp (v^n + dt (f_ext + f_int) / m); with m_i / damp here the solve's minimum is that same update with f_int
 * at F_p(v), so a body at rest balances its whole load. (With m_i alone it balanced damp f_ext: a pressurised
 * sphere settled 20 % short of the exact inflation at 5 ms steps and damping 40/s, docs/experiments/sphere_inflation.lua.) */
CQ_HD cq_real CQ_D(implicit_inertia)(const cq_substep* c, const cq_real* vstar) { return vstar[D] / c->damp; }

/* Particle p's stencil and F_p, and C_p(gv) of a grid vector gv (stride D+1). */
CQ_HD void CQ_D(implicit_load)(const cq_substep* c, const cq_particles* s, int p, const cq_real* gv,
                               CQ_D(cqi_stencil) * st, cq_real F[D][D], cq_real Cm[D][D]) {
  int n = s->n;
  cq_real x[D], B[D][D] = {{0}};
  for (int a = 0; a < D; a++) x[a] = s->x[a * n + p];
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) F[a][b] = s->F[(a * D + b) * n + p];
  CQ_D(stencil)(c, x, 0, st); /* one velocity field: model.c refuses fluid_contact = "separate" here */
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    long node = CQ_D(stencil_node)(c, st, off, &w, gw, dpos);
    const cq_real* vi = gv + node * (D + 1);
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) B[a][b] += w * vi[a] * dpos[b];
  }
  cq_real kC = 4 * c->inv_dx * c->inv_dx;
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) Cm[a][b] = kC * B[a][b];
}

/* (I + dt C) F, the deformation gradient of eq. 12 (before any projection of the material). */
CQ_HD void CQ_D(implicit_F_of)(const cq_substep* c, const cq_real Cm[D][D], const cq_real F[D][D], cq_real Fh[D][D]) {
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      cq_real t = F[a][b];
      for (int k = 0; k < D; k++) t += c->dt * Cm[a][k] * F[k][b];
      Fh[a][b] = t;
    }
}

/* implicit.volume = "linear" (the predicate implicit_linear_volume and G2P's side are in g2p.h): particle p's
 * volumetric term (K/2)(J - 1)^2 (material.h) is taken at the linearised volume ratio Jl = J (1 + dt tr C_p(v)) =
 * J (1 + tr(F_hat F^-1) - D), J = det F_p, instead of det F_hat. Jl is linear in v, so the term is exactly quadratic
 * in v: a step's rotations (det(I + dt C) = 1 + O(|dt C|^2) for a rotation) cost no volumetric energy, which
 * otherwise dominates eq. 12 and stalls Newton when K >> mu (silicone, water). */

/* The lagged pressure's geometric term, part of implicit.volume = "linear". Linearising the volume also drops the
 * pressure's geometric (initial-stress) stiffness: the exact term's T = P F^T is K (J_hat - 1) J_hat (I + A)^-T
 * with A = dt C_p(v), the linear one's K (Jl - 1) J I, which does not turn with the particle. Without it a stressed
 * particle's spin costs nothing while its deviatoric stress still turns with it, and a stressed free surface runs
 * away at millisecond steps (an inflated sphere: docs/results/history.md, "the pressure's geometric stiffness"). So the
 * solve adds E_geo = V0 pi0 J I2(A), I2(A) = ((tr A)^2 - tr(A^2)) / 2 (det(I + A) - 1 - tr A to second order; exact
 * in 2D), with pi0 the particle's pressure K (J - 1) at the start of the substep, or averaged (volumetric.h) its
 * group's at the last substep's converged velocities (the state's pg: a group's J at det F is no measure of it, since
 * only the groups' J are held near 1 and the particles regroup between substeps) plus K_s (J - 1): lagged, so E_geo
 * is quadratic in v and its stiffness O(pi0), not O(K).
 * Its share of T = P F^T is pi0 J (tr A I - A^T).
 * Not for a fluid: it has no deviatoric stress that turns with it, so nothing is missing, and E_geo would make its
 * Hessian indefinite: I2(A) takes either sign, and the term outweighs the inertia once |pi0| dt^2 / (rho dx^2) > 1.
 * A fluid's particle pressures scatter (water sampled 1.25 times per cell and axis around the finger: -3 to +5 kPa
 * after two 5 ms substeps, 18x the inertia at dx 2.5 mm). Newton then runs down such a direction and never converges
 * (the finger in water: docs/results/history.md, "E_geo and the water").
 * Without it a fluid's share of eq. 12 is the inertia plus K Jl's square: convex. */
CQ_HD int CQ_D(implicit_geo_applies)(const cq_params* m, int p) { return m->material[p] != CQ_MAT_FLUID; }

CQ_HD cq_real CQ_D(implicit_lagged_pressure)(const cq_substep* c, const cq_params* m, int p, cq_real J) {
  if (!CQ_D(implicit_geo_applies)(m, p)) return 0;
  return c->vol_averaged ? c->vol_p0[p] + CQ_D(vol_own_bulk)(m, p) * (J - 1) : m->bulk[p] * (J - 1);
}

/* P += k (tr A I - A^T) F^-T: E_geo's stress for k = pi0 J and A = dt C_p(v), its differential for dA. */
CQ_HD void CQ_D(implicit_geo_P)(cq_real k, const cq_real A[D][D], const cq_real Fit[D][D], cq_real P[D][D]) {
  cq_real tr = 0;
  for (int a = 0; a < D; a++) tr += A[a][a];
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      cq_real t = 0;
      for (int q = 0; q < D; q++) t += ((a == q ? tr : 0) - A[q][a]) * Fit[q][b];
      P[a][b] += k * t;
    }
}

/* The linearised term's P as a function of F_hat, K (Jl - 1) J F^-T, and E_geo's, added to P. Out: Fit = F^-T,
 * vol = (J, Jl). */
CQ_HD void CQ_D(implicit_linear_P)(const cq_substep* c, const cq_params* m, int p, const cq_real F[D][D],
                                   const cq_real Cm[D][D], cq_real Fit[D][D], cq_real vol[2], cq_real P[D][D]) {
  cq_real J = CQ_D(inv_t)(F, Fit), tr = 0;
  for (int a = 0; a < D; a++) tr += Cm[a][a];
  cq_real Jl = J * (1 + c->dt * tr);
  cq_real pr = c->vol_averaged ? c->vol_p[p] + CQ_D(vol_own_bulk)(m, p) * (Jl - 1) /* volumetric.h */
                               : m->bulk[p] * (Jl - 1);
  cq_real k = pr * J, A[D][D];
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      P[a][b] += k * Fit[a][b];
      A[a][b] = c->dt * Cm[a][b];
    }
  CQ_D(implicit_geo_P)(CQ_D(implicit_lagged_pressure)(c, m, p, J) * J, A, Fit, P);
  vol[0] = J;
  vol[1] = Jl;
}

/* Its differential at fixed F: dP += K J^2 (F^-T : dF_hat) F^-T (a constant, symmetric operator); averaged
 * (volumetric.h): dP += dp_g J F^-T, the group pressure's differential along the product's direction; and E_geo's
 * at dA = dF_hat F^-1 (constant and symmetric too). */
CQ_HD void CQ_D(implicit_linear_dP)(const cq_substep* c, const cq_params* m, int p, cq_real J, const cq_real Fit[D][D],
                                    const cq_real dF[D][D], cq_real dP[D][D]) {
  cq_real Fd = CQ_D(ddot)(Fit, dF);
  cq_real k = c->vol_averaged ? c->vol_dp[p] * J + CQ_D(vol_own_bulk)(m, p) * J * J * Fd : m->bulk[p] * J * J * Fd;
  cq_real dA[D][D];
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      dP[a][b] += k * Fit[a][b];
      cq_real t = 0;
      for (int q = 0; q < D; q++) t += dF[a][q] * Fit[b][q];
      dA[a][b] = t;
    }
  CQ_D(implicit_geo_P)(CQ_D(implicit_lagged_pressure)(c, m, p, J) * J, dA, Fit, dP);
}

/* The stress of eq. 12 at F_hat: P(F_hat) of the material, with the linearised volumetric term when it applies
 * (returns 1; then Fit = F^-T and vol = (det F, Jl)), else 0. */
CQ_HD int CQ_D(implicit_P)(const cq_substep* c, const cq_params* m, int p, const cq_real F[D][D],
                           const cq_real Cm[D][D], const cq_real Fh[D][D], cq_real P[D][D], cq_real Fit[D][D],
                           cq_real vol[2]) {
  int lin = CQ_D(implicit_linear_volume)(c, m, p);
  CQ_D(material_P_terms)(m, p, Fh, P, !lin);
  if (lin) CQ_D(implicit_linear_P)(c, m, p, F, Cm, Fit, vol, P);
  return lin;
}

/* dP += dP/dF_hat : dF of the material's terms (with its bulk term unless lin): its vector-Jacobian product, since
 * dP/dF has major symmetry. */
CQ_HD void CQ_D(implicit_material_dP)(const cq_params* m, int p, const cq_real Fh[D][D], const cq_real dF[D][D],
                                      cq_real dP[D][D], int lin) {
  cq_pgrad unused; /* the parameter gradients of the product are not wanted here */
  CQ_D(pgrad_zero)(&unused);
  CQ_D(material_P_vjp_terms)(m, p, Fh, dF, dP, &unused, !lin);
}

/* The differential of eq. 12's stress, dP = dP/dF_hat : dF. */
CQ_HD void CQ_D(implicit_dP)(const cq_substep* c, const cq_params* m, int p, const cq_real F[D][D],
                             const cq_real Fh[D][D], const cq_real dF[D][D], cq_real dP[D][D]) {
  int lin = CQ_D(implicit_linear_volume)(c, m, p);
  CQ_D(implicit_material_dP)(m, p, Fh, dF, dP, lin);
  if (lin) {
    cq_real Fit[D][D], J = CQ_D(inv_t)(F, Fit);
    CQ_D(implicit_linear_dP)(c, m, p, J, Fit, dF, dP);
  }
}

/* The chamber pressure inside the solve (implicit.pressure = "implicit"; the default, "lagged", leaves it to P2G at
 * F_p as the explicit step takes it): a chamber or cavity wall particle's Nanson force f_p(F) = u act_w dA cof(F) N
 * (chamber.h) is taken at F_p(v), so grad_i above gains -dt sum_p w_ip f_p(F_p(v)). Lagged, the load trails the walls
 * it inflates: the 2D finger keeps bending at 2.5 ms substeps, and settles with the load here
 * (tests/implicit_spec.lua); but a thin-walled sphere runs away at 1 ms with it and holds lagged (docs/results/history.md),
 * hence the default. This follower load has no potential here (the particles' Nanson forces are not the gradient of
 * a discrete volume), so its Jacobian K = -dt sum_p w_ip df_p/dv is not symmetric: the Hessian products
 * take its symmetric part (K + K^T)/2 for Newton's conjugate-gradient directions (a quasi-Newton step; the residual
 * is the full gradient, so the converged velocities are exact) and K^T for the adjoint, which then solves with the
 * true transposed Jacobian (integrator_implicit.c). The cavities' net-force correction stays at F_p (fext). */

/* Whether the solve takes particle p's chamber pressure (c->implicit_pressure and p a chamber or cavity wall); then
 * *ua = its actuation u act_w. */
CQ_HD int CQ_D(implicit_wall)(const cq_substep* c, const cq_params* m, int p, cq_real* ua) {
  int a = m->act_id[p];
  if (!c->implicit_pressure || a < 0 || !cqi_pressure_kind(m->act_kind[a])) return 0;
  *ua = c->pressure_u[a] * m->act_w[p];
  return 1;
}

/* out = sum_i w_ip gv_i, a grid vector gv (stride D+1) at particle p. */
CQ_HD void CQ_D(implicit_gather)(const cq_substep* c, const CQ_D(cqi_stencil) * st, const cq_real* gv, cq_real out[D]) {
  for (int a = 0; a < D; a++) out[a] = 0;
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    long node = CQ_D(stencil_node)(c, st, off, &w, gw, dpos);
    for (int a = 0; a < D; a++) out[a] += w * gv[node * (D + 1) + a];
  }
}

/* out_i += w_ip (dt kC V0 S F^T dpos_ip + f) for a stress S (P or its differential: grad F_p(v) transposed) and a
 * particle force term f (NULL: none). */
CQ_HD void CQ_D(implicit_scatter_T)(const cq_substep* c, const CQ_D(cqi_stencil) * st, cq_real vol0,
                                    const cq_real T[D][D], const cq_real* f, cq_real* out);
CQ_HD void CQ_D(implicit_scatter)(const cq_substep* c, const CQ_D(cqi_stencil) * st, cq_real vol0,
                                  const cq_real S[D][D], const cq_real F[D][D], const cq_real* f, cq_real* out) {
  cq_real T[D][D];
  CQ_D(mmt)(S, F, T);
  CQ_D(implicit_scatter_T)(c, st, vol0, T, f, out);
}

/* The same with T = S F^T given. */
CQ_HD void CQ_D(implicit_scatter_T)(const cq_substep* c, const CQ_D(cqi_stencil) * st, cq_real vol0,
                                    const cq_real T[D][D], const cq_real* f, cq_real* out) {
  cq_real k = 4 * c->inv_dx * c->inv_dx * c->dt * vol0;
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    long node = CQ_D(stencil_node)(c, st, off, &w, gw, dpos);
    cq_real* g = out + node * (D + 1);
    for (int a = 0; a < D; a++) {
      cq_real t = 0;
      for (int b = 0; b < D; b++) t += T[a][b] * dpos[b];
      CQ_SCATTER_ADD(&g[a], w * (k * t + (f ? f[a] : 0)));
    }
  }
}

/* Elastic part of grad (dt E) from particle p at grid velocities v: out_i += V0 dt kC w P(F_p(v)) F_p^T dpos, and a
 * chamber wall's -dt w f_p(F_p(v)). */
CQ_HD void CQ_D(implicit_stress)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                                 const cq_real* v, cq_real* out) {
  CQ_D(cqi_stencil) st;
  cq_real F[D][D], Cm[D][D], Fh[D][D], P[D][D] = {{0}}, Fit[D][D] = {{0}}, vol[2] = {0, 0}; /* set when lin */
  CQ_D(implicit_load)(c, s, p, v, &st, F, Cm);
  CQ_D(implicit_F_of)(c, Cm, F, Fh);
  CQ_D(implicit_P)(c, m, p, F, Cm, Fh, P, Fit, vol);
  cq_real ua, f[D] = {0}, Fw[D][D], Fwh[D][D];
  int wall = CQ_D(implicit_wall)(c, m, p, &ua);
  if (wall) { /* at F_w(v) = (I + dt C_p(v)) F_w, the wall's own F_w (wall.h), or F_hat */
    int own_w = CQ_D(wall_F_at)(c, p, s->n, Fw);
    if (own_w) CQ_D(implicit_F_of)(c, Cm, Fw, Fwh);
    CQ_D(nanson_force)(m, p, s->n, own_w ? Fwh : Fh, ua, f);
    for (int a = 0; a < D; a++) f[a] *= -c->dt;
  }
  CQ_D(implicit_scatter)(c, &st, m->vol0[p], P, F, wall ? f : NULL, out);
}

/* Elastic part of the Hessian of dt E at v applied to the grid vector dir: dF = dt C_p(dir) F_p, dP = dP/dF : dF,
 * out_i += V0 dt kC w dP F_p^T dpos. dP comes from the material's vector-Jacobian product: every model here derives
 * from an energy, so dP/dF has major symmetry and gP : dP/dF with gP = dF is dP/dF : dF. A chamber wall adds the
 * pressure's K dir (-dt w df_p, df_p = f_p's differential along dF) and K^T dir (dir's gather y_p through f_p's
 * adjoint: dF_p(v)/dv transposed of -dt G, G = d(y_p . f_p)/dF), weighted as c->pressure_product asks. */
CQ_HD void CQ_D(implicit_hvp)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p, const cq_real* v,
                              const cq_real* dir, cq_real* out) {
  CQ_D(cqi_stencil) st;
  cq_real F[D][D], Cm[D][D], Fh[D][D], dC[D][D], dF[D][D], dP[D][D] = {{0}};
  CQ_D(implicit_load)(c, s, p, v, &st, F, Cm);
  CQ_D(implicit_F_of)(c, Cm, F, Fh);
  CQ_D(implicit_load)(c, s, p, dir, &st, F, dC);
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      cq_real t = 0;
      for (int k = 0; k < D; k++) t += c->dt * dC[a][k] * F[k][b];
      dF[a][b] = t;
    }
  CQ_D(implicit_dP)(c, m, p, F, Fh, dF, dP);
  cq_real ua;
  if (!CQ_D(implicit_wall)(c, m, p, &ua)) {
    CQ_D(implicit_scatter)(c, &st, m->vol0[p], dP, F, NULL, out);
    return;
  }
  int sym = c->pressure_product == CQI_PRODUCT_SYM;
  cq_real aN = sym ? (cq_real)0.5 : 0, aT = sym ? (cq_real)0.5 : 1, df[D] = {0}, y[D], G[D][D] = {{0}}, unused = 0;
  /* the pressure at F_w(v) = (I + dt C_p(v)) F_w (wall.h), or at F_hat: its differential along dir, dt C_p(dir) Fl */
  cq_real Fl[D][D], Flh[D][D], dFl[D][D], T[D][D], T2[D][D];
  if (CQ_D(wall_F_at)(c, p, s->n, Fl)) {
    CQ_D(implicit_F_of)(c, Cm, Fl, Flh);
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) {
        cq_real t = 0;
        for (int k = 0; k < D; k++) t += c->dt * dC[a][k] * Fl[k][b];
        dFl[a][b] = t;
      }
  } else
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) Fl[a][b] = F[a][b], Flh[a][b] = Fh[a][b], dFl[a][b] = dF[a][b];
  CQ_D(nanson_force_jvp)(m, p, s->n, Flh, dFl, ua, df);
  for (int a = 0; a < D; a++) df[a] *= -c->dt * aN;
  CQ_D(implicit_gather)(c, &st, dir, y);
  CQ_D(nanson_force_adj)(m, p, s->n, Flh, ua, y, G, &unused, &unused);
  /* T = V0 dP F^T - aT dt G Fl^T: the transposed product goes back through dF_l/dv = dt C_p(.) Fl */
  CQ_D(mmt)(dP, F, T);
  CQ_D(mmt)(G, Fl, T2);
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) T[a][b] = m->vol0[p] * T[a][b] - aT * c->dt * T2[a][b];
  CQ_D(implicit_scatter_T)(c, &st, 1, T, df, out);
}

/* The projected (positive semi-definite) Newton matrix of dt E assembled for the direct preconditioner
 * (implicit_factor.c). With g_i = dt kC w_ip F_p^T dpos_ip, dF_p(v)/dv_i[a] = e_a g_i^T, so particle p adds V0 sum_bd
 * A[a b][c d] g_i[b] g_j[d] to the D x D block (i, j) of every pair of its stencil nodes: into blocks[slot[i]][o] with
 * o = the offset of j from i (CQI_FACTOR_OFFSETS of them, axis a in [-2, 2] weighted 5^a), and nbr[slot[i]][o] =
 * slot[j]. A = dP/dF of the material's terms (D^2 vector-Jacobian products with unit tensors; major symmetry: rows
 * are columns) with its negative eigenvalues clamped to 0 (symeig.h cqi_psd_project; seed 003's Mooney-Rivlin
 * silicone is indefinite under the finger's compression, and an indefinite sum cannot be Cholesky-factorised),
 * plus the linearised volumetric term's K J^2 F^-T (x) F^-T, semi-definite already (volumetric = "averaged": the
 * particle's own share K_s here, its group's rank-one blocks added per group node, volumetric.h). So the matrix is definite
 * (the masses) and close to the true Hessian, which CG still applies matrix-free. */
#define CQI_FACTOR_OFFSETS (D == 3 ? 125 : 25)
CQ_HD void CQ_D(implicit_blocks)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                                 const cq_real* v, const int32_t* slot, int32_t* nbr, double* blocks) {
  CQ_D(cqi_stencil) st;
  cq_real F[D][D], Cm[D][D], Fh[D][D], A[9][9];
  CQ_D(implicit_load)(c, s, p, v, &st, F, Cm);
  CQ_D(implicit_F_of)(c, Cm, F, Fh);
  int lin = CQ_D(implicit_linear_volume)(c, m, p);
  for (int r = 0; r < D * D; r++) {
    cq_real E[D][D] = {{0}}, row[D][D] = {{0}};
    E[r / D][r % D] = 1;
    CQ_D(implicit_material_dP)(m, p, Fh, E, row, lin);
    for (int q = 0; q < D * D; q++) A[r][q] = row[q / D][q % D];
  }
  cqi_psd_project(D * D, A);
  if (lin) { /* averaged: the particle's own share here, its group's added per group node (volumetric.h) */
    cq_real Fit[D][D], J = CQ_D(inv_t)(F, Fit);
    cq_real k = (c->vol_averaged ? CQ_D(vol_own_bulk)(m, p) : m->bulk[p]) * J * J;
    for (int r = 0; r < D * D; r++)
      for (int q = 0; q < D * D; q++) A[r][q] += k * Fit[r / D][r % D] * Fit[q / D][q % D];
  }
  enum { NS = D == 3 ? 27 : 9 };
  long node[NS];
  int co[NS][D];
  cq_real g[NS][D], k = c->dt * 4 * c->inv_dx * c->inv_dx;
  int n_st = 0;
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    node[n_st] = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
    for (int b = 0; b < D; b++) {
      cq_real t = 0;
      for (int a = 0; a < D; a++) t += F[a][b] * dpos[a];
      g[n_st][b] = k * w * t;
      co[n_st][b] = off[b];
    }
    n_st++;
  }
  double vol0 = m->vol0[p];
  for (int j = 0; j < NS; j++) {
    int sj = slot[node[j]];
    if (sj < 0) continue;
    double T[D * D][D]; /* T[ab][c] = sum_d A[ab][cd] g_j[d] */
    for (int r = 0; r < D * D; r++)
      for (int cc = 0; cc < D; cc++) {
        double t = 0;
        for (int d = 0; d < D; d++) t += (double)A[r][cc * D + d] * g[j][d];
        T[r][cc] = t;
      }
    for (int i = 0; i < NS; i++) {
      int si = slot[node[i]];
      if (si < 0) continue;
      int o = 0;
      for (int a = D - 1; a >= 0; a--) o = o * 5 + (co[j][a] - co[i][a] + 2);
      nbr[(long)si * CQI_FACTOR_OFFSETS + o] = sj;
      double* blk = blocks + ((long)si * CQI_FACTOR_OFFSETS + o) * D * D;
      for (int a = 0; a < D; a++)
        for (int cc = 0; cc < D; cc++) {
          double t = 0;
          for (int b = 0; b < D; b++) t += g[i][b] * T[a * D + b][cc];
          blk[a * D + cc] += vol0 * t;
        }
    }
  }
}

/* The boundary conditions as constraints of the solve, on a grid vector y at one node (gradient, search direction,
 * Hessian product): nodes without mass and sticky boundaries fix every component, slip boundaries the normal one,
 * separate and friction boundaries the normal one when the stress-free velocity v* approaches them (an active set
 * fixed for the substep; their own laws apply after the solve, implicit_bc_node). vstar: (v*[D], mass) of the node. */
CQ_HD void CQ_D(implicit_project_node)(const cq_substep* c, long node, const int i[D], const cq_real* vstar,
                                       cq_real* y) {
  if (!(vstar[D] > 0)) {
    for (int a = 0; a < D; a++) y[a] = 0;
    return;
  }
  const cq_bc* bcs[2 * D + 1];
  int nb = CQ_D(node_bcs)(c, node, i, bcs);
  for (int k = 0; k < nb; k++) {
    const cq_bc* b = bcs[k];
    cq_real ln = 0, yn = 0;
    for (int a = 0; a < D; a++) {
      ln += (vstar[a] - b->vel[a]) * b->n[a];
      yn += y[a] * b->n[a];
    }
    if (b->type == CQ_BC_STICKY) {
      for (int a = 0; a < D; a++) y[a] = 0;
    } else if (b->type == CQ_BC_SLIP || (ln < 0 && (b->type == CQ_BC_SEPARATE || b->type == CQ_BC_FRICTION))) {
      for (int a = 0; a < D; a++) y[a] -= yn * b->n[a];
    }
  }
}

/* y += (m / damp) x (x may be NULL: projection only), then the projection above: the inertia term of grad (dt E) and
 * of its Hessian, (m_i / damp) (v_i - v*_i) and (m_i / damp) d_i. */
CQ_HD void CQ_D(implicit_node)(const cq_substep* c, long node, const int i[D], const cq_real* vstar, const cq_real* x,
                               cq_real* y) {
  cq_real m = CQ_D(implicit_inertia)(c, vstar);
  if (x)
    for (int a = 0; a < D; a++) y[a] += m * x[a];
  CQ_D(implicit_project_node)(c, node, i, vstar, y);
}

/* The preconditioner of the solve's conjugate gradients at one node: y = Pi x / m (Jacobi on the inertia term m I of
 * the Hessian, which spans nodes whose masses differ by orders of magnitude at a body's edge); 0 without mass. */
CQ_HD void CQ_D(implicit_precond_node)(const cq_substep* c, long node, const int i[D], const cq_real* vstar,
                                       const cq_real* x, cq_real* y) {
  cq_real m = CQ_D(implicit_inertia)(c, vstar);
  for (int a = 0; a < D; a++) y[a] = m > 0 ? x[a] / m : 0;
  CQ_D(implicit_project_node)(c, node, i, vstar, y);
}

/* After the solve: the boundaries' own laws (grid.h bc_apply: separation, Coulomb friction) on the converged
 * velocity v, in place, as the explicit grid update applies them; nodes without mass get 0. */
CQ_HD void CQ_D(implicit_bc_node)(const cq_substep* c, long node, const int i[D], const cq_real* vstar, cq_real* v) {
  if (!(vstar[D] > 0)) {
    for (int a = 0; a < D; a++) v[a] = 0;
    return;
  }
  const cq_bc* bcs[2 * D + 1];
  int nb = CQ_D(node_bcs)(c, node, i, bcs);
  for (int k = 0; k < nb; k++) CQ_D(bc_apply)(bcs[k], v);
}

/* ---- Adjoint (implicit function theorem; integrator_implicit.c composes it) ----
 * The converged v = v0 + delta, delta free (Pi delta = delta), solves Pi grad(dt E)(v; theta) = 0, where v0 is the
 * boundary-projected v* whose constrained components (I - Pi) v0 the solve keeps. With dL/dv given, lam =
 * -H^-T Pi dL/dv (H = Pi A Pi, A the Jacobian of grad (dt E): the Hessian, symmetric, unless the solve takes chamber
 * pressure) gives dL/dtheta = lam . d grad(dt E)/d theta for
 * every input theta of the gradient (the particles' x, F and parameters: implicit_stress_adj; the P2G grid's momentum
 * and mass through v* and m: implicit_node_adj) and dL/dv0 = (I - Pi)(dL/dv + A^T lam). */

/* lam . d(implicit_stress of particle p)/d(x_p, F_p, parameters) at the grid velocities v, the grid vector lam held:
 * with T = P(F_hat) F^T and L_p = dt V0 T : C_p(lam) (the particle's share of lam . grad), adds dL_p/dx_p (through
 * the weights and dpos of both C_p(v) in F_hat and C_p(lam)) into gs->x, dL_p/dF_p (F^T in T and F_hat = (I + dt
 * C_p(v)) F) into gs->F, and dL_p/d(vol0 and the material's parameters) into gp. A gather: writes particle p only. */
CQ_HD void CQ_D(implicit_stress_adj)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                                     const cq_real* v, const cq_real* lam, cq_particles* gs, const cq_param_grads* gp) {
  int n = s->n;
  CQ_D(cqi_stencil) st;
  cq_real F[D][D], Cm[D][D], Fh[D][D], P[D][D] = {{0}}, T[D][D], Lm[D][D], Fit[D][D] = {{0}}, vol[2] = {0, 0};
  CQ_D(implicit_load)(c, s, p, v, &st, F, Cm);
  CQ_D(implicit_F_of)(c, Cm, F, Fh);
  /* P = the material's P(F_hat) alone here (when implicit.volume = "linear", the linearised volumetric term's share
   * of T = P F^T, K (Jl - 1) J I, is added to T's diagonal and differentiated on its own below) */
  int lin = CQ_D(implicit_linear_volume)(c, m, p);
  CQ_D(material_P_terms)(m, p, Fh, P, !lin);
  CQ_D(mmt)(P, F, T);
  cq_real Ks = c->vol_averaged ? CQ_D(vol_own_bulk)(m, p) : m->bulk[p], pg = c->vol_averaged ? c->vol_p[p] : 0;
  cq_real pi0 = 0, geo[D][D] = {{0}}; /* E_geo (lin): T += pi0 J geo, geo = tr A I - A^T, A = dt C_p(v) */
  if (lin) {
    cq_real Pl[D][D] = {{0}}, trA = 0;
    CQ_D(implicit_linear_P)(c, m, p, F, Cm, Fit, vol, Pl);
    pi0 = CQ_D(implicit_lagged_pressure)(c, m, p, vol[0]);
    cq_real on = (cq_real)CQ_D(implicit_geo_applies)(m, p); /* a fluid: no E_geo, and no dL/dpi0 either */
    for (int a = 0; a < D; a++) trA += c->dt * Cm[a][a];
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) {
        geo[a][b] = on * ((a == b ? trA : 0) - c->dt * Cm[b][a]);
        T[a][b] += pi0 * vol[0] * geo[a][b] + (a == b ? (pg + Ks * (vol[1] - 1)) * vol[0] : 0);
      }
  }
  CQ_D(implicit_load)(c, s, p, lam, &st, F, Lm); /* C_p(lam) = kC sum_i w lam_i dpos^T */
  cq_real dt = c->dt, vol0 = m->vol0[p];
  cq_pgrad g;
  CQ_D(pgrad_zero)(&g);
  g.vol0 = dt * CQ_D(ddot)(T, Lm);
  /* L_p = T : gT0 with gT0 = dt V0 C_p(lam); T = P F^T: gP = gT0 F, gF = gT0^T P */
  cq_real gT[D][D], gP[D][D], gF[D][D], gFh[D][D] = {{0}}, gCm[D][D], gLm[D][D];
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      gT[a][b] = dt * vol0 * Lm[a][b];
      gLm[a][b] = dt * vol0 * T[a][b];
    }
  CQ_D(mm)(gT, F, gP);
  CQ_D(mtm)(gT, P, gF);
  CQ_D(material_P_vjp_terms)(m, p, Fh, gP, gFh, &g, !lin);
  /* a chamber wall: L_p also has -dt lam_p . f_p(F_hat), lam_p = sum_i w lam_i (fl = -dt f_p for the weights) */
  cq_real ua, fl[D] = {0}, Fw[D][D], Fwh[D][D], gFwh[D][D] = {{0}};
  int own_w = 0; /* the pressure at the wall's F_w(v) = (I + dt C_p(v)) F_w (wall.h), else at F_hat */
  if (CQ_D(implicit_wall)(c, m, p, &ua)) {
    cq_real lp[D], gf[D], gua = 0;
    own_w = CQ_D(wall_F_at)(c, p, n, Fw);
    if (own_w) CQ_D(implicit_F_of)(c, Cm, Fw, Fwh);
    CQ_D(implicit_gather)(c, &st, lam, lp);
    CQ_D(nanson_force)(m, p, n, own_w ? Fwh : Fh, ua, fl);
    for (int a = 0; a < D; a++) {
      fl[a] *= -dt;
      gf[a] = -dt * lp[a];
    }
    CQ_D(nanson_force_adj)(m, p, n, own_w ? Fwh : Fh, ua, gf, own_w ? gFwh : gFh, &gua, &g.wall_area);
    g.act_w += gua * c->pressure_u[m->act_id[p]];
    c->pressure_gu[p] += gua * m->act_w[p];
  }
  /* the linearised term: L = K (Jl - 1) J q, q = tr(gT), Jl = J (1 + dt tr C), J = det F; averaged (volumetric.h):
   * L = (p_g + K_s (Jl - 1)) J q at fixed p_g, plus dL/dJl through the groups (c->vol_gJ, vol_adj). E_geo:
   * L = pi0 J (gT : geo), pi0 = p0 + K_s (J - 1) (p0 = 0, K_s = K for the particle term) */
  cq_real gC_lin = 0, gC_geo[D][D] = {{0}};
  if (lin) {
    cq_real q = 0, J = vol[0], Jl = vol[1], gJl = c->vol_averaged ? c->vol_gJ[p] : 0, gg = 0;
    for (int a = 0; a < D; a++) {
      q += gT[a][a];
      for (int b = 0; b < D; b++) gg += gT[a][b] * geo[a][b];
    }
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) gC_geo[a][b] = dt * pi0 * J * ((a == b ? q : 0) - gT[b][a]);
    /* dL/dK_s: the linear term's and E_geo's; dL/dp0 = gg J through the groups at det F (c->vol_g0) */
    cq_real gKs = (Jl - 1) * J * q + gg * J * (J - 1);
    if (c->vol_averaged) {
      CQ_D(vol_bulk_adj)(m, p, gKs, 0, &g);
      c->vol_g0[p] += gg * J;
    } else {
      g.bulk += gKs;
    }
    /* dL/dJ (through J and Jl = J (1 + dt tr C), and E_geo's pi0 J) times dJ/dF = J F^-T; dJl/dF = Jl F^-T */
    cq_real kF = (pg + Ks * (2 * Jl - 1)) * q * J + gJl * Jl + gg * (pi0 + Ks * J) * J;
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) gF[a][b] += kF * Fit[a][b];
    gC_lin = (Ks * J * q + gJl) * J * c->dt; /* dL/dC = (K J^2 q + dL/dJl J) dt I */
  }
  /* F_hat = F + dt C F: gF += (I + dt C)^T gFh, gC = dt gFh F^T */
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      cq_real t = gFh[a][b], u = 0;
      for (int k = 0; k < D; k++) {
        t += dt * Cm[k][a] * gFh[k][b];
        u += dt * gFh[a][k] * F[b][k];
      }
      gF[a][b] += t;
      gCm[a][b] = u + (a == b ? gC_lin : 0) + gC_geo[a][b];
    }
  if (own_w) { /* F_w(v) = F_w + dt C F_w: dL/dF_w += (I + dt C)^T gFwh (wall.h's gradient), gC += dt gFwh F_w^T */
    cq_real gFw[D][D];
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) {
        cq_real t = gFwh[a][b], u = 0;
        for (int k = 0; k < D; k++) {
          t += dt * Cm[k][a] * gFwh[k][b];
          u += dt * gFwh[a][k] * Fw[b][k];
        }
        gFw[a][b] = t;
        gCm[a][b] += u;
      }
    CQ_D(wall_F_adj)(c, p, n, gFw);
  }
  /* C_p(y) = kC sum_i w_i y_i dpos_i^T for y = v (gradient gCm) and y = lam (gLm); dpos = x_i - x_p */
  cq_real kC = 4 * c->inv_dx * c->inv_dx, gx[D] = {0};
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    long node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
    const cq_real* vi = v + node * (D + 1);
    const cq_real* li = lam + node * (D + 1);
    cq_real dw = 0, back[D] = {0}, dl = 0; /* dL/dw (kC dw + dl), and sum over a of (gCm^T v_i + gLm^T lam_i) */
    for (int a = 0; a < D; a++) {
      dl += li[a] * fl[a];
      for (int b = 0; b < D; b++) {
        cq_real t = vi[a] * gCm[a][b] + li[a] * gLm[a][b];
        dw += t * dpos[b];
        back[b] += t;
      }
    }
    for (int a = 0; a < D; a++) gx[a] += kC * (gw[a] * dw - w * back[a]) + gw[a] * dl;
  }
  CQ_D(pgrad_add)(&g, gp, p, n);
  for (int a = 0; a < D; a++) {
    gs->x[a * n + p] += gx[a];
    for (int b = 0; b < D; b++) gs->F[(a * D + b) * n + p] += gF[a][b];
  }
}

/* Adds lam . d((m_i / damp) (v_i - v*_i))/d(P2G's momentum and mass of node i) to out = (dL/dp[D], dL/dm): v* = the
 * explicit grid update of (p, m) without boundaries (grid.h grid_node, so c must be a context without boundaries, as
 * the one that built v*), through grid_node_adj with dL/dv* = -(m / damp) lam, plus dL/dm = lam . (v - v*) / damp
 * directly. vstar: (v*[D], m). Nodes without mass add 0. */
CQ_HD void CQ_D(implicit_node_adj)(const cq_substep* c, long node, const int i[D], const cq_real* mp,
                                   const cq_real* vstar, const cq_real* v, const cq_real* lam, cq_real* out) {
  cq_real m = CQ_D(implicit_inertia)(c, vstar), g[D + 1], gm = 0;
  if (!(m > 0)) return;
  for (int a = 0; a < D; a++) {
    g[a] = -m * lam[a];
    gm += lam[a] * (v[a] - vstar[a]) / c->damp;
  }
  CQ_D(grid_node_adj)(c, node, i, mp, g);
  for (int a = 0; a < D; a++) out[a] += g[a];
  out[D] += g[D] + gm;
}

/* Adjoint of implicit_bc_node: v the converged velocity before the boundaries' laws, g = dL/d(v after) in, dL/dv
 * out, in place; nodes without mass get 0. */
CQ_HD void CQ_D(implicit_bc_node_adj)(const cq_substep* c, long node, const int i[D], const cq_real* vstar,
                                      const cq_real* v, cq_real* g) {
  if (!(vstar[D] > 0)) {
    for (int a = 0; a < D; a++) g[a] = 0;
    return;
  }
  const cq_bc* bcs[2 * D + 1];
  int nb = CQ_D(node_bcs)(c, node, i, bcs);
  CQ_D(bc_chain_adj)(bcs, nb, v, g);
}
#endif

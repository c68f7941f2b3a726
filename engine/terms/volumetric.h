/* The averaged volumetric term (world option volumetric = "averaged"): nearly incompressible solids without
 * volumetric locking. With one volume constraint per particle and about two particles per cell, a material whose bulk
 * modulus is 1e4 times its shear modulus locks: the grid's velocities cannot keep every particle's J near 1 and
 * bend, so the body is far too stiff (a cantilever 7x in 2D; docs/results/history.md, "Issue 11: volumetric locking").
 * Here the particles that share a stencil (the same base node: those nearest to one grid node) form a group g, and
 * the bulk term is taken on the group's volume-averaged J:
 *   E_vol = sum_g V_g (K_g / 2) (J_g - 1)^2,   V_g = sum_{p in g} V0_p,   J_g - 1 = sum V0_p (J_p - 1) / V_g,
 *   K_g = sum V0_p (K_p - K_s,p) / V_g,
 * one constraint per node against D velocity components per node (a mixed formulation with a pressure constant
 * over each group, as Q2-P0 elements). Its stress on particle p is P = p_g J_p F_p^-T with p_g = K_g (J_g - 1): the
 * particle's own K_p (J_p - 1) replaced by its group's pressure (all but a share K_s of K_p: vol_own_bulk). It
 * derives from an energy, so the implicit solve's Hessian stays symmetric (an F-bar stress's is not; the groups'
 * volume projection below, for "averaged" only, is F-bar on the state between substeps, outside the solve). J_p is
 * det F_p in the explicit step and the linearised Jl_p = J_p (1 + dt tr C_p(v)) in the implicit solve
 * (implicit.volume = "linear", implicit.h). Particles without a bulk term (bulk = 0) take no part. Included once per
 * dimension by kernels.h. */

/* Its backend passes (engine/backends/passes.h: X(op, body, over, key, gpu, (kind, arg)...)). vol_sums adds each particle's
 * (V0 K, V0 (J - 1), V0) into its group node of sums (a grid vector; J - 1 from det F when v is NULL, else Jl - 1 at
 * the grid velocities v; diff: only V0 dJl along v); vol_pressure then writes out[p] = its group's pressure
 * K_g (J_g - 1) (with dsums, the diff sums: its differential). The adjoint: vol_adj_sums adds each particle's
 * dL/d(group pressure) (g_pg[p], or from the implicit adjoint's multipliers lam when g_pg is NULL) into its group node
 * of gsums (slot 0); vol_adj gives each particle its share through the group's sums c->vol_sums (at v as in
 * vol_sums): vol0 and bulk gradients into gp, dL/d(J - 1) into gJ[p], or through det F into gs->F when gJ is NULL;
 * vol_strain_adj adds each particle's dL/dJl (gJ[p]) into the grid vector out through Jl's grid velocities. The
 * groups' volume projection: vol_project scales every member's F to its group's mean J (sums: vol_sums at v NULL);
 * its adjoint vol_project_share writes each member's a_p s_p into share (their group sums by vol_adj_sums into
 * gsums), then vol_project_adj turns gF (a [D*D][n] gradient of the projected F) in place into dL/dF and adds
 * dL/dvol0 into gp; s is the state before the projection. */
#ifndef CQ_VOLUMETRIC_PASSES
#define CQ_VOLUMETRIC_PASSES(X)                                                              \
  X(vol_sums, vol_sum, GROUPS, 1, 1, (CR, v), (I, diff), (R, sums))                          \
  X(vol_pressure, vol_pressure, PARTICLES, 1, 1, (CR, sums), (CR, dsums), (R, out))          \
  X(vol_adj_sums, vol_adj_sum, GROUPS, 0, 1, (CR, g_pg), (CR, lam), (R, gsums))              \
  X(vol_adj, vol_adj, PARTICLES, 0, 1, (CR, v), (CR, gsums), (R, gJ), (GS, gs), (GP, gp))    \
  X(vol_strain_adj, vol_strain_adj, SCATTER, 0, 1, (CR, gJ), (R, out))                       \
  X(vol_project, vol_project, PARTICLES, 1, 1, (CR, sums))                                   \
  X(vol_project_share, vol_project_share, PARTICLES, 0, 1, (CR, sums), (CR, gF), (R, share)) \
  X(vol_project_adj, vol_project_adj, PARTICLES, 0, 1, (CR, sums), (CR, gsums), (CR, share), (R, gF), (GP, gp))
#endif

#ifdef D /* its bodies, per dimension (kernels.h) */

/* The share of particle p's bulk modulus K that stays on its own J: K_s = min(K, c M), M the P-wave modulus of its
 * model (about its shear stiffness) and c the world option volumetric_own (1 by default). The isochoric models
 * (Mooney-Rivlin, Yeoh, Ogden) have no other stiffness against one particle's volume changing while its group's
 * stays, and without it those volumes drift apart step after step until a particle inverts; a K_s of the order of the
 * shear modulus does not lock. The group takes K - K_s. A larger c holds the members' volumes together where their
 * stencils differ (the fixed groups: c = 16 keeps the 2D finger at 8 kPa whole, c = 1 tears it) and barely stiffens
 * the body: a cantilever at bulk / shear 1e4 sags 0.1 % less at c = 16, 1.6 % less at 1024 (docs/results/history.md,
 * "the own share").
 * A fluid has no shear modulus: it keeps K_s = CQ_FLUID_OWN_SHARE K (with volumetric = solids, all of K: it takes no
 * part; cq_params.vol_fluid_own). With all of its K on its own J, water sampled at
 * 2 or more particles per cell and axis locks (a soft body in it cannot bend: 0 % of a buoyed beam's deflection);
 * with none (one constraint per group) its particles pack and it sinks, as at 1.25 per cell and axis. 1e-3 of
 * water's 2.2 GPa (2.2 MPa) lets the beam bend 92 % of its expected deflection and the tank at rest sink 0.04 mm in
 * 0.2 s; 1e-2: 93 % and 0.012 mm; 1e-4: 92 % and 0.095 mm (docs/results/history.md, "Issue 11: the water in the groups"). */
#ifndef CQ_FLUID_OWN_SHARE
#define CQ_FLUID_OWN_SHARE 1e-3
#endif
/* c M of a solid particle p: its own share where that is below K (the forward and the adjoint take it from here). */
CQ_HD cq_real CQ_D(vol_own_modulus)(const cq_params* m, int p) {
  return m->vol_own * CQ_D(material_model_modulus)(m, p);
}

CQ_HD cq_real CQ_D(vol_own_bulk)(const cq_params* m, int p) {
  cq_real K = m->bulk[p];
  if (m->material[p] == CQ_MAT_FLUID) return m->vol_fluid_own * K;
  cq_real M = CQ_D(vol_own_modulus)(m, p);
  return M < K ? M : K;
}

/* The gradients of K_s and K_g = K - K_s (g_Ks, g_Kg) into particle p's parameters: bulk (a fluid's K_s is a fixed
 * share of it), or the model's own through c M where K_s = c M. */
CQ_HD void CQ_D(vol_bulk_adj)(const cq_params* m, int p, cq_real g_Ks, cq_real g_Kg, cq_pgrad* g) {
  cq_real K = m->bulk[p];
  if (!(K > 0)) return;
  g->bulk += g_Kg;
  cq_real gs = g_Ks - g_Kg;
  if (m->material[p] == CQ_MAT_FLUID)
    g->bulk += m->vol_fluid_own * gs;
  else if (CQ_D(vol_own_modulus)(m, p) < K) /* K_s = c M */
    CQ_D(material_model_modulus_vjp)(m, p, m->vol_own * gs, g);
  else
    g->bulk += gs;
}

/* Particle p's bulk modulus on its group's J (0: it takes no part in the groups). */
CQ_HD cq_real CQ_D(vol_group_bulk)(const cq_params* m, int p) {
  return CQ_D(particle_bulk)(m, p) > 0 ? m->bulk[p] - CQ_D(vol_own_bulk)(m, p) : 0;
}

/* Particle p's group: the base node of its stencil (bspline.h stencil), or with volumetric_groups = "initial" the one
 * it had in the first state the world stepped from (volumetric.c). */
CQ_HD cqi_node CQ_D(vol_group)(const cq_substep* c, const cq_particles* s, int p) {
  if (c->vol_group_of) return (cqi_node)c->vol_group_of[p];
  cqi_node g = 0;
  for (int a = 0; a < D; a++) {
    int b = (int)cq_floor(cq_cell_coord(s->x[a * s->n + p], c->dx, c->inv_dx)); /* as the stencil's */
    g += (cqi_node)b * (cqi_node)c->stride[a];
  }
  return g;
}

/* Particle p's position and deformation gradient. */
CQ_HD void CQ_D(vol_load)(const cq_particles* s, int p, cq_real x[D], cq_real F[D][D]) {
  int n = s->n;
  for (int a = 0; a < D; a++) {
    x[a] = s->x[a * n + p];
    for (int b = 0; b < D; b++) F[a][b] = s->F[(a * D + b) * n + p];
  }
}

/* J_p - 1 for the sums: det F_p - 1 when v is NULL (the explicit step), else Jl_p - 1 at the grid velocities v;
 * diff: the differential of Jl_p along the grid vector v instead, J_p dt tr C_p(v). tr C_p(v) = kC sum_i w v_i.dpos. */
CQ_HD cq_real CQ_D(vol_strain)(const cq_substep* c, const cq_particles* s, int p, const cq_real* v, int diff) {
  cq_real F[D][D], x[D];
  CQ_D(vol_load)(s, p, x, F);
  cq_real J = CQ_D(det)(F);
  if (!v) return J - 1;
  CQ_D(cqi_stencil) st;
  CQ_D(stencil)(c, x, 0, &st); /* implicit only: one velocity field (model.c) */
  cq_real tr = 0;
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
    for (int a = 0; a < D; a++) tr += w * v[node * (D + 1) + a] * dpos[a];
  }
  cq_real rate = c->dt * 4 * c->inv_dx * c->inv_dx * tr;
  return diff ? J * rate : (J - 1) + J * rate;
}

/* Scatter of particle p into its group's sums (D + 1 >= 3 reals per node): (V0 K, V0 (J - 1), V0); diff: only
 * V0 dJ into the second. */
CQ_HD void CQ_D(vol_sum)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p, const cq_real* v,
                         int diff, cq_real* sums) {
  cq_real Kg = CQ_D(vol_group_bulk)(m, p);
  if (!(Kg > 0)) return;
  cq_real V0 = m->vol0[p], e = CQ_D(vol_strain)(c, s, p, v, diff);
  cq_real* g = sums + CQ_D(vol_group)(c, s, p) * (D + 1);
  CQ_SCATTER_ADD(&g[1], V0 * e);
  if (diff) return;
  CQ_SCATTER_ADD(&g[0], V0 * Kg);
  CQ_SCATTER_ADD(&g[2], V0);
}

/* Gather: out[p] = p_g = K_g (J_g - 1) of particle p's group from sums; with dsums (the diff sums), its differential
 * K_g dJ_g. 0 for a particle without a bulk term. */
CQ_HD void CQ_D(vol_pressure)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                              const cq_real* sums, const cq_real* dsums, cq_real* out) {
  if (!(CQ_D(vol_group_bulk)(m, p) > 0)) {
    out[p] = 0;
    return;
  }
  cqi_node g = CQ_D(vol_group)(c, s, p) * (D + 1);
  cq_real V = sums[g + 2], K = sums[g] / V;
  out[p] = K * (dsums ? dsums[g + 1] : sums[g + 1]) / V;
}

/* P += (p_g + K_s (J - 1)) J F^-T: the averaged bulk term's stress on particle p with deformation gradient F, its
 * group's pressure p_g plus its own share K_s. */
CQ_HD void CQ_D(vol_averaged_P)(const cq_params* m, int p, cq_real pg, const cq_real F[D][D], cq_real P[D][D]) {
  cq_real Fit[D][D], J = CQ_D(inv_t)(F, Fit), k = (pg + CQ_D(vol_own_bulk)(m, p) * (J - 1)) * J;
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) P[a][b] += k * Fit[a][b];
}

/* Its adjoint at fixed p_g (the explicit P2G adjoint): gF += gP : dP/dF, the own share's parameter gradients into g,
 * and *g_pg = gP : dP/dp_g = J gP : F^-T. With A = F^-T, P = k A, k = (p_g + K_s (J - 1)) J: dk/dJ =
 * p_g + K_s (2J - 1), dJ = J A : dF, dA = -A dF^T A. */
CQ_HD void CQ_D(vol_averaged_P_vjp)(const cq_params* m, int p, cq_real pg, const cq_real F[D][D],
                                    const cq_real gP[D][D], cq_real gF[D][D], cq_pgrad* g, cq_real* g_pg) {
  cq_real A[D][D], AgA[D][D], gA, J = CQ_D(inv_t_adj_parts)(F, gP, A, AgA, &gA), Ks = CQ_D(vol_own_bulk)(m, p);
  cq_real k = (pg + Ks * (J - 1)) * J, gJ = gA * (pg + Ks * (2 * J - 1));
  *g_pg = gA * J;
  CQ_D(vol_bulk_adj)(m, p, gA * (J - 1) * J, 0, g);
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) gF[i][j] += -k * AgA[i][j] + gJ * J * A[i][j];
}

/* ---- The groups' adjoint (backward): G_g = sum over the group of dL/dp_g of its particles, then each particle's
 * share through p_g = S0 S1 / S2^2 (S = the group's sums) ----
 * Scatter: gsums[g][0] += dL/dp_g of particle p: g_pg[p] (explicit), or, with lam (the implicit adjoint's
 * multipliers; g_pg NULL), V0 J dt tr C_p(lam): the implicit gradient's share p_g J dt V0 tr C_p(v) differentiated
 * against lam. */
CQ_HD void CQ_D(vol_adj_sum)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p, const cq_real* g_pg,
                             const cq_real* lam, cq_real* gsums) {
  if (!(CQ_D(vol_group_bulk)(m, p) > 0)) return;
  cq_real G = g_pg ? g_pg[p] : m->vol0[p] * CQ_D(vol_strain)(c, s, p, lam, 1);
  CQ_SCATTER_ADD(&gsums[CQ_D(vol_group)(c, s, p) * (D + 1)], G);
}

/* Gather: particle p's gradients through its group's sums (c->vol_sums at the forward's J: det F when v is NULL,
 * else Jl at v): dL/dvol0 and dL/d(K, the model's modulus) into gp, and dL/d(J_p - 1) into gJ[p] (implicit: its
 * adjoint takes it through Jl = J (1 + dt tr C)) or, when gJ is NULL, through J = det F into gs->F. */
CQ_HD void CQ_D(vol_adj)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p, const cq_real* v,
                         const cq_real* gsums, cq_real* gJ, cq_particles* gs, const cq_param_grads* gp) {
  cq_real Kg = CQ_D(vol_group_bulk)(m, p);
  if (!(Kg > 0)) {
    if (gJ) gJ[p] = 0;
    return;
  }
  cqi_node node = CQ_D(vol_group)(c, s, p) * (D + 1);
  const cq_real* S = c->vol_sums + node;
  cq_real G = gsums[node], S2 = S[2], dS0 = G * S[1] / (S2 * S2), dS1 = G * S[0] / (S2 * S2);
  cq_real dS2 = -2 * G * S[0] * S[1] / (S2 * S2 * S2), V0 = m->vol0[p], e = CQ_D(vol_strain)(c, s, p, v, 0);
  cq_pgrad g;
  CQ_D(pgrad_zero)(&g);
  g.vol0 = dS0 * Kg + dS1 * e + dS2;
  CQ_D(vol_bulk_adj)(m, p, 0, dS0 * V0, &g);
  CQ_D(pgrad_add)(&g, gp, p, s->n);
  cq_real ge = dS1 * V0;
  if (gJ) {
    gJ[p] = ge;
    return;
  }
  cq_real F[D][D], A[D][D], x[D];
  CQ_D(vol_load)(s, p, x, F);
  cq_real J = CQ_D(inv_t)(F, A);
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) gs->F[(a * D + b) * s->n + p] += ge * J * A[a][b];
}

/* The grid velocities' share of dL/dJl_p (gJ[p]; Jl_p = J_p (1 + dt tr C_p(v)), tr C_p(v) = kC sum_i w v_i.dpos):
 * out_i += gJ[p] J_p dt kC w_ip dpos_ip, scattered like P2G. For the implicit adjoint of the state's pg, the groups'
 * pressures at the converged v (integrator_implicit.c). */
CQ_HD void CQ_D(vol_strain_adj)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                                const cq_real* gJ, cq_real* out) {
  if (!(CQ_D(vol_group_bulk)(m, p) > 0)) return;
  cq_real F[D][D], x[D];
  CQ_D(vol_load)(s, p, x, F);
  cq_real k = gJ[p] * CQ_D(det)(F) * c->dt * 4 * c->inv_dx * c->inv_dx;
  CQ_D(cqi_stencil) st;
  CQ_D(stencil)(c, x, cqi_field(c, m, p), &st);
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
    for (int a = 0; a < D; a++) CQ_SCATTER_ADD(&out[node * (D + 1) + a], k * w * dpos[a]);
  }
}

/* ---- The groups' volume projection (F-bar), at the start of every substep of volumetric = "averaged" ----
 * The group's bulk term holds its mean J, and each particle's own share K_s is all that holds its J near its
 * group's: with the share of "averaged" (c = 1, K_s about the shear modulus) the particles' J within a group drift
 * apart (7 % on the 2D finger at the real bulk modulus) and on a finer grid run away, explicitly and implicitly
 * (docs/results/history.md, "Issue 11: the groups' volume projection"). So each substep of "averaged" first sets every
 * member's J to its group's volume-weighted mean (the default, "solids", does not: its share c = 16 holds them on
 * resolved bodies, and the projection is a numerical plasticity, volumetric.c cqi_volumetric_projects),
 *   F_p <- s_p F_p,   s_p = (Jm_g / J_p)^(1/D),   Jm_g = 1 + S1 / S2 (vol_sums at v NULL: S1 = sum V0 (J - 1),
 *   S2 = sum V0),
 * which keeps the group's volume sum V0 J and each particle's isochoric deformation. */
CQ_HD cq_real CQ_D(vol_project_scale)(const cq_real* sg, cq_real J) {
  cq_real r = (1 + sg[1] / sg[2]) / J;
  return D == 2 ? cq_sqrt(r) : cq_pow(r, (cq_real)1 / 3);
}

/* F_p <- s_p F_p for a member of a group (sums: vol_sums at v NULL). */
CQ_HD void CQ_D(vol_project)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                             const cq_real* sums) {
  if (!(CQ_D(vol_group_bulk)(m, p) > 0)) return;
  cq_real F[D][D], x[D];
  CQ_D(vol_load)(s, p, x, F);
  cq_real f = CQ_D(vol_project_scale)(sums + CQ_D(vol_group)(c, s, p) * (D + 1), CQ_D(det)(F));
  for (int e = 0; e < D * D; e++) s->F[e * s->n + p] *= f;
}

/* Its adjoint, given gF = dL/d(the projected F) and s the state before the projection. With a_p = gF_p : F_p:
 *   dL/dF_p = s_p gF_p + (V0_p A_g / (V_g D Jm) - a_p s_p / (D J_p)) J_p F_p^-T,   A_g = sum_{q in g} a_q s_q,
 *   dL/dV0_p = A_g (J_p - Jm) / (V_g D Jm).
 * First each member's a_p s_p into share[p] (its group's sum A_g by vol_adj_sums), ... */
CQ_HD void CQ_D(vol_project_share)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                                   const cq_real* sums, const cq_real* gF, cq_real* share) {
  if (!(CQ_D(vol_group_bulk)(m, p) > 0)) {
    share[p] = 0;
    return;
  }
  cq_real F[D][D], x[D], a = 0;
  CQ_D(vol_load)(s, p, x, F);
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) a += gF[(i * D + j) * s->n + p] * F[i][j];
  share[p] = a * CQ_D(vol_project_scale)(sums + CQ_D(vol_group)(c, s, p) * (D + 1), CQ_D(det)(F));
}

/* ... then, with the groups' A_g in gsums (slot 0), gF in place from dL/d(projected F) to dL/dF and dL/dV0 into gp. */
CQ_HD void CQ_D(vol_project_adj)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                                 const cq_real* sums, const cq_real* gsums, const cq_real* share, cq_real* gF,
                                 const cq_param_grads* gp) {
  if (!(CQ_D(vol_group_bulk)(m, p) > 0)) return;
  cq_real F[D][D], A[D][D], x[D];
  CQ_D(vol_load)(s, p, x, F);
  cq_real J = CQ_D(inv_t)(F, A);
  cqi_node g = CQ_D(vol_group)(c, s, p) * (D + 1);
  const cq_real* sg = sums + g;
  cq_real Jm = 1 + sg[1] / sg[2], f = CQ_D(vol_project_scale)(sg, J), dJm = gsums[g] / (D * Jm);
  cq_real k = (m->vol0[p] * dJm / sg[2] - share[p] / (D * J)) * J;
  gp->vol0[p] += dJm * (J - Jm) / sg[2];
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) {
      cq_real* gij = &gF[(i * D + j) * s->n + p];
      *gij = f * *gij + k * A[i][j];
    }
}

/* The direct preconditioner's share of the averaged term (implicit_factor.c): with a_g[i] = sum_{p in g} V0_p
 * dJl_p/dv_i = sum V0_p J_p dt kC w_ip dpos_ip (current groups: the group's stencil is each of its particles'; the
 * fixed groups' members can lie on other stencils: cpu_vol_group_blocks), the Hessian of E_vol
 * is sum_g (K_g / V_g) a_g a_g^T. First the particles' scatter of a_g, NS D reals per group node (stencil node j,
 * axis b at [j D + b]) ... */
/* Particle p's rows of a_g: its stencil into st, and the scale V0 J dt kC of its rows scale w_ip dpos_ip (also
 * cpu_vol_group_blocks'). */
CQ_HD cq_real CQ_D(vol_gradient_rows)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                                      CQ_D(cqi_stencil) * st) {
  cq_real F[D][D], x[D];
  CQ_D(vol_load)(s, p, x, F);
  CQ_D(stencil)(c, x, cqi_field(c, m, p), st);
  return m->vol0[p] * CQ_D(det)(F) * c->dt * 4 * c->inv_dx * c->inv_dx;
}

CQ_HD void CQ_D(vol_gradient_sum)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p, cq_real* a) {
  if (!(CQ_D(vol_group_bulk)(m, p) > 0)) return;
  CQ_D(cqi_stencil) st;
  cq_real scale = CQ_D(vol_gradient_rows)(c, s, m, p, &st);
  cq_real* ag = a + CQ_D(vol_group)(c, s, p) * (CQ_NN * D); /* groups by the current node: its stencil's */
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
    int j = 0;
    for (int b = 0; b < D; b++) j = j * 3 + off[b];
    for (int b = 0; b < D; b++) CQ_SCATTER_ADD(&ag[j * D + b], scale * w * dpos[b]);
  }
}

/* ... then each group node g with particles adds (K_g / V_g) a_g[i] a_g[j]^T to the block (i, j) of every pair of its
 * stencil nodes that have slots (offset code o as implicit_blocks: axis a in [-2, 2] weighted 5^a). */
CQ_HD void CQ_D(vol_blocks_node)(const cq_substep* c, long node, const cq_real* sums, const cq_real* a,
                                 const int32_t* slot, double* blocks) {
  const cq_real* sg = sums + node * (D + 1);
  if (!(sg[2] > 0)) return;
  const cq_real* ag = a + node * (CQ_NN * D);
  double coef = (double)sg[0] / ((double)sg[2] * (double)sg[2]);
  long at[CQ_NN];
  int co[CQ_NN][D], j = 0;
  CQI_FOR_STENCIL(off) {
    long k = node;
    for (int b = 0; b < D; b++) {
      k += off[b] * c->stride[b];
      co[j][b] = off[b];
    }
    at[j++] = k;
  }
  for (int i = 0; i < CQ_NN; i++) {
    int si = slot[at[i]];
    if (si < 0) continue;
    for (int k = 0; k < CQ_NN; k++) {
      if (slot[at[k]] < 0) continue;
      int o = 0;
      for (int b = D - 1; b >= 0; b--) o = o * 5 + (co[k][b] - co[i][b] + 2);
      double* blk = blocks + ((long)si * (D == 3 ? 125 : 25) + o) * D * D;
      for (int r = 0; r < D; r++)
        for (int q = 0; q < D; q++) blk[r * D + q] += coef * (double)ag[i * D + r] * (double)ag[k * D + q];
    }
  }
}
#endif

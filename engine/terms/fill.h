/* The grid fluid (world option fluid = "grid"): a fluid's pressure from how full the grid is, as the gradient of a
 * potential energy of the particles' positions, instead of each particle's own J (docs/results/history.md, "a water
 * pressure from the grid's fill" and "the fill water in the implicit solve"). Each node i has a fill
 *   phi_i = sum_q w_iq V_q / dx^D + (the walls' share of node i's B-spline),   V_q = V0_q det F_q,
 * of every particle, water and solid, and the water's energy is
 *   W = sum_i dx^D (K_i / 2) (phi_i / phi0_i - 1)_+^2,
 * K_i = the fluids' bulk modulus weighted by their share of the node's fill (taken at the substep's start), phi0_i
 * the node's rest fill: 1, or with fill_rest = "initial" max(1, phi_i of the first state the world stepped from) (a
 * sampled water lattice against a meshed body overfills its interface nodes by a few per cent, which at a real bulk
 * modulus is a pressure far above a chamber's). No tension: a node less than full has no pressure.
 * One constraint per node, against D velocity components per node (the groups' count, so it does not lock), and a
 * function of the positions (so water at rest has an energy minimum and damping brings it there; the groups' one
 * pressure per cell circulates). A fluid's own pressure is off (material.h particle_bulk; its F is reset to I).
 *
 * In the implicit solve (eq. 12) the fill is linearised over the substep in the grid velocities v:
 *   phi_i(v) = phi_i^n + dt sum_q (V_q / dx^D) grad w_iq . u_q,   u_q = sum_j w_jq v_j (the particle's motion),
 * so W is piecewise quadratic in v; its gradient is dW/dv_j = dt sum_q w_jq V_q sum_i p_i grad w_iq with
 * p_i = K_i (r_i - 1)_+ / phi0_i, r_i = phi_i / phi0_i, and its Hessian J^T diag(K_i / phi0_i^2 [r_i > 1]) J
 * (semi-definite: no second derivative of phi in v). Explicitly the same force at v = 0 goes into P2G's momentum.
 * Each is two particle passes (fill_scatter into the nodes, fill_force back) around one node pass (fill_node).
 * Node vectors are grid vectors (D + 1 >= 3 reals per node): base = (phi^n, K_i, phi0_i) of the substep; a
 * linearisation = (dphi, p, K_i / phi0_i^2 where r > 1, or where the node is under pressure at v + d after an
 * active-set round's CQI_FILL_PREDICT). Included once per dimension by kernels.h. */

/* With fluid_contact = "separate" (kernel_types.h field_nodes) the node vectors hold the physical nodes (every field's
 * fill sums at the node it fills), while the grid velocities, momenta and multipliers a particle reads or writes are
 * on its own field's copy: node - st.shift is the physical node of a stencil node. */

/* Its backend passes (engine/backends/passes.h: X(op, body, over, key, gpu, (kind, arg)...)). fill_scatter adds each
 * particle's fill sums (v NULL) or the fill's change at the grid velocities v into out (a grid vector); fill_node runs
 * one node pass (mode CQI_FILL_*) over the active region on the grid vectors base, ref, at, out (any but the mode's may
 * be NULL); fill_force adds each particle's share of the fill pressure's impulse (pn's slot 1), times scale, into the
 * grid vector out. The adjoint (after fill_scatter of the multipliers and fill_node's CQI_FILL_ADJ): fill_adj adds
 * each particle's gradients into gs and gp. For the direct preconditioner (implicit_factor.c; host-memory backends):
 * fill_rows adds each particle's share of the fill's rows g_ij into rows ([count][5^D][D], zero on entry) at the
 * nodes numbered by implicit_slots. */
#ifndef CQ_FILL_PASSES
#define CQ_FILL_PASSES(X)                                                                              \
  X(fill_scatter, fill_scatter, SCATTER, 1, 1, (CR, v), (R, out))                                      \
  X(fill_node, fill_node, NODES, 0, 1, (I, mode), (G, base), (G, ref), (CG, at), (G, out))             \
  X(fill_force, fill_force, SCATTER, 1, 1, (CR, pn), (S, scale), (R, out))                             \
  X(fill_adj, fill_adj, PARTICLES, 0, 1, (CR, v), (CR, lam), (CR, lin), (CR, adj), (GS, gs), (GP, gp)) \
  X(fill_rows, fill_rows, SCATTER, 0, 0, (CI, slot), (DR, rows))
#endif

/* fill_rest = "initial": a node whose fill in the first state is above this is full at rest, at that fill, whether it
 * is above 1 (a water lattice against a meshed body overfills their shared nodes by a few per cent) or below (a
 * lattice of 2.5 particles per cell and axis fills the nodes inside it 0.96-1.01, a tank's top row 0.8-0.9). With a
 * rest fill of 1 such a node had a slack of up to 20 %: at water's real bulk modulus far more than the hydrostatic
 * compression (rho g h / K = 4e-7), so a 2D tank at rest sank 0.36 mm in 0.05 s (now 0.1 um) and a beam buoyed in it
 * bent 156 % of its expected deflection (now 90 %); docs/results/history.md "Issue 62: a fluid meeting a solid". A node
 * less full than this (the free surface's) rests at 1: at 0.5 a dam break's column stood still until its edge nodes
 * filled. */
#ifndef CQI_FILL_FULL
#define CQI_FILL_FULL 0.8
#endif

#ifdef D /* its bodies, per dimension (kernels.h) */

/* The fill sums of particle p into its stencil nodes. v NULL: slot 0 += w V / dx^D, slot 1 += w V K / dx^D for a
 * fluid (K its bulk). Else slot 0 += the fill's change dt (V / dx^D) grad w . u_p at the grid velocities v. */
CQ_HD void CQ_D(fill_scatter)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p, const cq_real* v,
                              cq_real* out) {
  cq_real F[D][D], x[D];
  CQ_D(vol_load)(s, p, x, F);
  cq_real Vc = 1;
  for (int a = 0; a < D; a++) Vc *= c->dx;
  cq_real Vr = m->vol0[p] * CQ_D(det)(F) / Vc;
  CQ_D(cqi_stencil) st;
  CQ_D(stencil)(c, x, cqi_field(c, m, p), &st);
  if (!v) {
    cq_real K = m->material[p] == CQ_MAT_FLUID ? m->bulk[p] : 0;
    CQI_FOR_STENCIL(off) {
      cq_real w, gw[D], dpos[D];
      cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos) - st.shift; /* physical */
      CQ_SCATTER_ADD(&out[node * (D + 1)], w * Vr);
      if (K > 0) CQ_SCATTER_ADD(&out[node * (D + 1) + 1], w * Vr * K);
    }
    return;
  }
  cq_real u[D] = {0};
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
    for (int a = 0; a < D; a++) u[a] += w * v[node * (D + 1) + a];
  }
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos) - st.shift; /* physical */
    cq_real d = 0;
    for (int a = 0; a < D; a++) d += gw[a] * u[a];
    CQ_SCATTER_ADD(&out[node * (D + 1)], c->dt * Vr * d);
  }
}

/* The integral of the quadratic B-spline from -infinity to t (in node spacings). */
CQ_HD cq_real CQ_D(fill_bspline_cdf)(cq_real t) {
  if (t <= (cq_real)-1.5) return 0;
  if (t <= (cq_real)-0.5) return (t + (cq_real)1.5) * (t + (cq_real)1.5) * (t + (cq_real)1.5) / 6;
  if (t <= (cq_real)0.5) return (cq_real)0.5 + (cq_real)0.75 * t - t * t * t / 3;
  if (t < (cq_real)1.5) return 1 - ((cq_real)1.5 - t) * ((cq_real)1.5 - t) * ((cq_real)1.5 - t) / 6;
  return 1;
}

/* The walls' share of node i's fill: the part of its B-spline beyond the walls' innermost nodes, which the fluid
 * cannot fill (without it the last layer of water next to a wall is never full and sinks into the wall band). */
CQ_HD cq_real CQ_D(fill_wall_share)(const cq_substep* c, const int i[3]) {
  cq_real inside = 1;
  for (int a = 0; a < D; a++) {
    int t0 = c->wall_thick[2 * a], t1 = c->wall_thick[2 * a + 1];
    cq_real lo = t0 > 0 ? (cq_real)(t0 - 1) : (cq_real)-1e9, hi = t1 > 0 ? (cq_real)(c->res[a] - t1) : (cq_real)1e9;
    inside *= CQ_D(fill_bspline_cdf)(hi - (cq_real)i[a]) - CQ_D(fill_bspline_cdf)(lo - (cq_real)i[a]);
  }
  return 1 - inside;
}

/* The quadratic piece of W node i is on: under pressure (on, and K_i > 0) its pressure term K_i e / phi0_i and Hessian
 * weight K_i / phi0_i^2, at fill excess e = r_i - 1; both 0 on the free piece (W has no tension). GRAD takes the
 * piece of the linearisation (on = e > 0), PREDICT that of v + d. */
CQ_HD void CQ_D(fill_piece)(const cq_real* base, cq_real e, int on, cq_real* p, cq_real* weight) {
  cq_real K = base[1], phi0 = base[2];
  on = on && K > 0;
  *p = on ? K * e / phi0 : 0;
  *weight = on ? K / (phi0 * phi0) : 0;
}

/* Node pass CQI_FILL_ADJ (fill_node's): from a_i = dt sum_q V_q grad w_iq . Lam_q, Lam_q = sum_j w_jq lam_j, in
 * adj[0] (fill_scatter of lam: a_i / dx^D, Vc = dx^D) and the linearisation lin at v (lin[0] = dphi_i), the node's
 * coefficients for the particles' gather: adj[0] = dL/dphi^n_i (through the fill and through K_i = kw_i /
 * phi^n_i), adj[1] = dL/dkw_i, adj[2] = dL/d(dphi_i). */
CQ_HD void CQ_D(fill_adj_node)(const cq_real* base, const cq_real* lin, cq_real Vc, cq_real* adj) {
  cq_real K = base[1], phi0 = base[2], r = (base[0] + lin[0]) / phi0, a = adj[0] * Vc;
  int on = r > 1 && K > 0;
  cq_real b = on ? a * K / (phi0 * phi0) : 0, cK = on ? a * (r - 1) / phi0 : 0;
  adj[0] = on ? b - cK * K / base[0] : 0;
  adj[1] = on ? cK / base[0] : 0;
  adj[2] = b;
}

/* Node pass CQI_FILL_LINE: node i's share of W along the line, W_i(a) = dx^D (K_i / 2)(r_i(a) - 1)_+^2 with
 * r_i(a) = r_i(0) + a delta_i / phi0_i. Its change from a = 0 is taken as (a delta_i / phi0_i)(e_0 + e_a) (e = r - 1)
 * where the node is full at both ends: a difference of small terms, not of W's large ones, so that the line search's
 * decrease test still resolves changes near the solution. */
CQ_HD void CQ_D(fill_line_node)(const cq_real* base, const cq_real* at_v, const cq_real* delta, cq_real Vc,
                                cq_real* out) {
  cq_real K = base[1], phi0 = base[2], step = out[0] / phi0;
  cq_real e0 = (base[0] + at_v[0]) / phi0 - 1, ea = e0 + step;
  int on0 = e0 > 0 && K > 0, ona = ea > 0 && K > 0;
  cq_real change = on0 && ona ? step * (e0 + ea) : (ona ? ea * ea : 0) - (on0 ? e0 * e0 : 0);
  out[0] = Vc * K / 2 * change;
  out[1] = ona ? Vc * K * ea * delta[0] / phi0 : 0;
  out[2] = ona ? Vc * K * delta[0] * delta[0] / (phi0 * phi0) : 0;
  for (int a = 3; a <= D; a++) out[a] = 0;
}

/* Node pass CQI_FILL_PREDICT (the Newton solve's active-set rounds, integrator_implicit.c active_set): lin
 * the linearisation at v (lin[0] = dphi_i there, lin[1] = p_i, lin[2] node i's Hessian weight), out[0] = delta_i,
 * the fill change of a direction d. W is exactly piecewise quadratic in v, so the quadratic piece node i is on at
 * v + d is known: under pressure when e_i + delta_i / phi0_i > 0 (e_i = r_i - 1 at v). lin[2] becomes that piece's
 * weight, out[1] the change of node i's pressure term in the gradient of that piece at v (K_i e_i / phi0_i, negative
 * below the rest fill, minus p_i), out[2] = 1 where the piece differs from the one lin[2] had. */
CQ_HD void CQ_D(fill_predict_node)(const cq_real* base, cq_real* lin, cq_real* out) {
  cq_real phi0 = base[2], e = (base[0] + lin[0]) / phi0 - 1, p, weight;
  CQ_D(fill_piece)(base, e, e + out[0] / phi0 > 0, &p, &weight);
  out[1] = p - lin[1];
  out[2] = (weight > 0) != (lin[2] > 0);
  lin[2] = weight;
}

/* The node passes (mode CQI_FILL_*, kernel_types.h), pointers at node i's D + 1 reals:
 *   BASE:  base from the sums (slot 0 the particles' fill, slot 1 their fluid V K): the walls' share added to slot 0,
 *          slot 1 -> K_i = (fluid V K / dx^D) / phi_i, slot 2 = phi0_i = 1 + ref[0] (ref NULL: 1);
 *   REF:   ref[0] = max(0, phi_i - 1), the excess that fill_rest = "initial" keeps as the rest fill;
 *   GRAD:  out[1] = p_i and out[2] = K_i / phi0_i^2 where r_i > 1, at out[0] = dphi_i (the linearisation);
 *   HVP:   out[1] = at[2] out[0], the pressure's differential along the direction whose dphi is out[0];
 *   ADJ:   fill_adj_node(base, at, out), at the linearisation at the converged velocities;
 *   LINE:  along a line v + a d (the Newton step's line search): ref[0] = dphi_i at v, at[0] = delta_i (d's dphi),
 *          out[0] = a delta_i on entry; out = (W_i(a) - W_i(0), dW_i/da, d2W_i/da2) (fill_line_node);
 *   PREDICT: fill_predict_node(base, ref, out): ref the linearisation at v, out[0] = delta_i on entry. */
CQ_HD void CQ_D(fill_node)(const cq_substep* c, long node, const int i[3], int mode, cq_real* base, cq_real* ref,
                           const cq_real* at, cq_real* out) {
  if (mode == CQI_FILL_BASE) {
    base[0] += CQ_D(fill_wall_share)(c, i);
    base[1] = base[0] > 0 ? base[1] / base[0] : 0;
    base[2] = 1 + (ref ? ref[0] : 0);
  } else if (mode == CQI_FILL_REF) {
    ref[0] = base[0] > (cq_real)CQI_FILL_FULL ? base[0] - 1 : 0;
    base[2] = 1 + ref[0];
  } else if (mode == CQI_FILL_GRAD) {
    cq_real r = (base[0] + out[0]) / base[2];
    CQ_D(fill_piece)(base, r - 1, r > 1, &out[1], &out[2]);
  } else if (mode == CQI_FILL_HVP) {
    out[1] = at[2] * out[0];
  } else if (mode == CQI_FILL_PREDICT) {
    CQ_D(fill_predict_node)(base, ref, out);
  } else {
    cq_real Vc = 1;
    for (int a = 0; a < D; a++) Vc *= c->dx;
    if (mode == CQI_FILL_LINE)
      CQ_D(fill_line_node)(base, ref, at, Vc, out);
    else
      CQ_D(fill_adj_node)(base, at, Vc, out);
  }
}

/* Particle p's share of the fill pressure's impulse: out_j[a] += scale V_p w_jp sum_i pn_i d w_ip / dx_p[a], with
 * pn_i = slot 1 of the linearisation pn (scale dt: the gradient of W in v; -dt: the explicit momentum). */
CQ_HD void CQ_D(fill_force)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p, const cq_real* pn,
                            cq_real scale, cq_real* out) {
  cq_real F[D][D], x[D], f[D] = {0};
  CQ_D(vol_load)(s, p, x, F);
  cq_real V = m->vol0[p] * CQ_D(det)(F);
  CQ_D(cqi_stencil) st;
  CQ_D(stencil)(c, x, cqi_field(c, m, p), &st);
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos) - st.shift; /* physical */
    cq_real pi = pn[node * (D + 1) + 1];
    for (int a = 0; a < D; a++) f[a] += pi * gw[a];
  }
  if (f[0] == 0 && f[1] == 0 && (D == 2 || f[D - 1] == 0)) return;
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
    for (int a = 0; a < D; a++) CQ_SCATTER_ADD(&out[node * (D + 1) + a], scale * V * w * f[a]);
  }
}

/* The fill's rows for the direct preconditioner (implicit_factor.c, which makes W's Hessian
 * dx^D sum_i (K_i / phi0_i^2)[r_i > 1] g_i g_i^T of them): particle p adds to g_ij, node i's fill change per unit
 * velocity of node j, its dt (V_p / dx^D) w_jp grad w_ip, for every pair of its stencil nodes with a slot, into
 * rows[slot[i]][o][D] with o = j's offset from i (axis a in [-2, 2] weighted 5^a, implicit_blocks' numbering). */
CQ_HD void CQ_D(fill_rows)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p, const int32_t* slot,
                           double* rows) {
  enum { NS = D == 3 ? 27 : 9, OFFSETS = D == 3 ? 125 : 25 };
  cq_real F[D][D], x[D], w[NS], gw[NS][D];
  CQ_D(vol_load)(s, p, x, F);
  cq_real Vc = 1;
  for (int a = 0; a < D; a++) Vc *= c->dx;
  double k = (double)(c->dt * m->vol0[p] * CQ_D(det)(F) / Vc);
  CQ_D(cqi_stencil) st;
  CQ_D(stencil)(c, x, cqi_field(c, m, p), &st);
  int32_t sl[NS];
  int co[NS][D], n = 0;
  CQI_FOR_STENCIL(off) {
    cq_real dpos[D];
    sl[n] = slot[CQ_D(stencil_node)(c, &st, off, &w[n], gw[n], dpos)];
    for (int a = 0; a < D; a++) co[n][a] = off[a];
    n++;
  }
  for (int i = 0; i < NS; i++) {
    if (sl[i] < 0) continue;
    for (int j = 0; j < NS; j++) {
      if (sl[j] < 0) continue;
      int o = 0;
      for (int a = D - 1; a >= 0; a--) o = o * 5 + (co[j][a] - co[i][a] + 2);
      double* r = rows + ((long)sl[i] * OFFSETS + o) * D;
      for (int a = 0; a < D; a++) r[a] += k * (double)(w[j] * gw[i][a]);
    }
  }
}

/* ---- the adjoint (implicit function theorem: lam . dW/dv pulled back into the particles and parameters) ---- */

/* The second derivatives of node off's weight w.r.t. the particle's position: H[a][b] = d^2 w / dx_a dx_b (each
 * axis's B-spline has the constant second derivative 1, -2, 1 times 1/dx^2 over the stencil). */
CQ_HD void CQ_D(fill_hessian_w)(const cq_substep* c, const CQ_D(cqi_stencil) * st, const int off[3], cq_real H[D][D]) {
  cq_real k2 = c->inv_dx * c->inv_dx;
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      cq_real h = 1;
      for (int e = 0; e < D; e++) {
        int o = off[e];
        if (e == a && e == b)
          h *= (o == 1 ? -2 : 1) * k2;
        else if (e == a || e == b)
          h *= st->dw[e][o];
        else
          h *= st->w[e][o];
      }
      H[a][b] = h;
    }
}

/* Particle p's gradients from lam . dW/dv (lin: the linearisation at v, its pressures in slot 1; adj: fill_adj_node's
 * coefficients): into gs->x, gs->F (through V = V0 det F), gp->vol0 and, for a fluid, gp->bulk. */
CQ_HD void CQ_D(fill_adj)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p, const cq_real* v,
                          const cq_real* lam, const cq_real* lin, const cq_real* adj, cq_particles* gs,
                          const cq_param_grads* gp) {
  int n = s->n;
  cq_real F[D][D], x[D], L[D] = {0}, u[D] = {0}, sq[D] = {0};
  CQ_D(vol_load)(s, p, x, F);
  cq_real Vc = 1;
  for (int a = 0; a < D; a++) Vc *= c->dx;
  cq_real J = CQ_D(det)(F), V = m->vol0[p] * J, K = m->material[p] == CQ_MAT_FLUID ? m->bulk[p] : 0;
  CQ_D(cqi_stencil) st;
  CQ_D(stencil)(c, x, cqi_field(c, m, p), &st);
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
    const cq_real* ln = lin + (node - st.shift) * (D + 1); /* the node vectors: physical nodes */
    for (int a = 0; a < D; a++) {
      L[a] += w * lam[node * (D + 1) + a];
      if (v) u[a] += w * v[node * (D + 1) + a];
      sq[a] += ln[1] * gw[a];
    }
  }
  cq_real gx[D] = {0}, gV = 0, gK = 0, sL = 0;
  for (int a = 0; a < D; a++) sL += sq[a] * L[a];
  gV += c->dt * sL;
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D], H[D][D];
    cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
    CQ_D(fill_hessian_w)(c, &st, off, H);
    const cq_real *ln = lin + (node - st.shift) * (D + 1), *ad = adj + (node - st.shift) * (D + 1);
    const cq_real* lj = lam + node * (D + 1);
    cq_real ls = 0, gu = 0;
    for (int a = 0; a < D; a++) {
      ls += lj[a] * sq[a];
      gu += gw[a] * u[a];
    }
    /* lam . g directly: p_i grad grad w_iq Lam_q and (lam_j . s_q) grad w_jq */
    for (int a = 0; a < D; a++) {
      cq_real HL = 0, Hu = 0;
      for (int b = 0; b < D; b++) HL += H[a][b] * L[b], Hu += H[a][b] * u[b];
      gx[a] += c->dt * V * (ln[1] * HL + ls * gw[a]);
      /* the fill at the start (ad[0]), the fluids' kw (ad[1]), the change over the substep (ad[2]) */
      gx[a] += (V / Vc) * (ad[0] + K * ad[1]) * gw[a] + c->dt * (V / Vc) * ad[2] * Hu;
    }
    gV += (ad[0] + K * ad[1]) * w / Vc + c->dt / Vc * ad[2] * gu;
    gK += V / Vc * ad[1] * w;
  }
  /* dphi's dependence on x_q through u_q's weights: dt (V / Vc) sum_i ad2_i grad w_iq . (sum_j v_j (x) grad w_jq) */
  if (v) {
    cq_real Dg[D] = {0}; /* sum_i ad2_i grad w_iq */
    CQI_FOR_STENCIL(off) {
      cq_real w, gw[D], dpos[D];
      cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
      for (int a = 0; a < D; a++) Dg[a] += adj[(node - st.shift) * (D + 1) + 2] * gw[a];
    }
    CQI_FOR_STENCIL(off) {
      cq_real w, gw[D], dpos[D];
      cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
      cq_real dv = 0;
      for (int a = 0; a < D; a++) dv += Dg[a] * v[node * (D + 1) + a];
      for (int a = 0; a < D; a++) gx[a] += c->dt * (V / Vc) * dv * gw[a];
    }
  }
  cq_real Fit[D][D];
  CQ_D(inv_t)(F, Fit);
  gp->vol0[p] += gV * J;
  if (K > 0) gp->bulk[p] += gK;
  for (int a = 0; a < D; a++) {
    gs->x[a * n + p] += gx[a];
    for (int b = 0; b < D; b++) gs->F[(a * D + b) * n + p] += gV * V * Fit[a][b];
  }
}
#endif

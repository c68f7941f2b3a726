/* The per-particle and per-node pieces of the implicit grid update (seed 003 sec. 2.3, eq. 12), which
 * integrator_implicit.c minimises over the grid velocities v of the nodes with mass:
 *   E(v) = sum_i m_i/(2 dt) |v_i - v*_i|^2 + (1/dt) sum_p V_p^0 Psi(F_p(v)),   F_p(v) = (I + dt C_p(v)) F_p,
 * with v*_i the grid velocity of the explicit update without the elastic stress (APIC momentum, gravity, damping,
 * forces, actuation stress) and C_p(v) = kC sum_i w_ip v_i dpos_ip^T, kC = 4/dx^2 (the G2P gather of eq. 10).
 * Everything here is dt E (momentum units), so that
 *   grad_i = m_i (v_i - v*_i) + sum_p V_p^0 dt kC w_ip P(F_p(v)) F_p^T dpos_ip
 * is the explicit update's momentum balance with the stress taken at F_p(v) instead of F_p. Included once per
 * dimension by kernels.h. */

/* Particle p's stencil and F_p, and C_p(gv) of a grid vector gv (stride D+1). */
CQ_HD void CQ_D(implicit_load)(const cq_substep* c, const cq_particles* s, int p, const cq_real* gv,
                               CQ_D(cqi_stencil) * st, cq_real F[D][D], cq_real Cm[D][D]) {
  int n = s->n;
  cq_real x[D], B[D][D] = {{0}};
  for (int a = 0; a < D; a++) x[a] = s->x[a * n + p];
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) F[a][b] = s->F[(a * D + b) * n + p];
  CQ_D(stencil)(c, x, st);
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

/* out_i += dt kC V0 w_ip S F^T dpos_ip for a stress S (P or its differential): grad F_p(v) transposed. */
CQ_HD void CQ_D(implicit_scatter)(const cq_substep* c, const CQ_D(cqi_stencil) * st, cq_real vol0, const cq_real S[D][D],
                                  const cq_real F[D][D], cq_real* out) {
  cq_real T[D][D];
  CQ_D(mmt)(S, F, T);
  cq_real k = 4 * c->inv_dx * c->inv_dx * c->dt * vol0;
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    long node = CQ_D(stencil_node)(c, st, off, &w, gw, dpos);
    cq_real* g = out + node * (D + 1);
    for (int a = 0; a < D; a++) {
      cq_real t = 0;
      for (int b = 0; b < D; b++) t += T[a][b] * dpos[b];
      CQ_SCATTER_ADD(&g[a], k * w * t);
    }
  }
}

/* Elastic part of grad (dt E) from particle p at grid velocities v: out_i += V0 dt kC w P(F_p(v)) F_p^T dpos. */
CQ_HD void CQ_D(implicit_stress)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                                 const cq_real* v, cq_real* out) {
  CQ_D(cqi_stencil) st;
  cq_real F[D][D], Cm[D][D], Fh[D][D], P[D][D];
  CQ_D(implicit_load)(c, s, p, v, &st, F, Cm);
  CQ_D(implicit_F_of)(c, Cm, F, Fh);
  CQ_D(material_P)(m, p, Fh, P);
  CQ_D(implicit_scatter)(c, &st, m->vol0[p], P, F, out);
}

/* Elastic part of the Hessian of dt E at v applied to the grid vector dir: dF = dt C_p(dir) F_p, dP = dP/dF : dF,
 * out_i += V0 dt kC w dP F_p^T dpos. dP comes from the material's vector-Jacobian product: every model here derives
 * from an energy, so dP/dF has major symmetry and gP : dP/dF with gP = dF is dP/dF : dF. */
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
  cq_pgrad unused; /* the parameter gradients of the product are not wanted here */
#define CQI_ZERO(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) CQI_IF(diff)(unused.name = 0;)
  CQ_PARAM_FIELDS(CQI_ZERO)
#undef CQI_ZERO
  CQ_D(material_P_vjp)(m, p, Fh, dF, dP, &unused);
  CQ_D(implicit_scatter)(c, &st, m->vol0[p], dP, F, out);
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

/* y += m x (x may be NULL: projection only), then the projection above: the inertia term of grad (dt E) and of its
 * Hessian, m_i (v_i - v*_i) and m_i d_i. */
CQ_HD void CQ_D(implicit_node)(const cq_substep* c, long node, const int i[D], const cq_real* vstar, const cq_real* x,
                               cq_real* y) {
  if (x)
    for (int a = 0; a < D; a++) y[a] += vstar[D] * x[a];
  CQ_D(implicit_project_node)(c, node, i, vstar, y);
}

/* The preconditioner of the solve's conjugate gradients at one node: y = Pi x / m (Jacobi on the inertia term m I of
 * the Hessian, which spans nodes whose masses differ by orders of magnitude at a body's edge); 0 without mass. */
CQ_HD void CQ_D(implicit_precond_node)(const cq_substep* c, long node, const int i[D], const cq_real* vstar,
                                       const cq_real* x, cq_real* y) {
  cq_real m = vstar[D];
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

/* Particle-to-grid stage (seed 000 eqs. 4-6 with actuation eqs. 15-16, a per-particle user actuation stress A_p
 * from actuators written in Lua: tau += F A_p F^T, eq. 15 with a full tensor, and the chamber pressure of seed 003
 * eqs. 14-16: f = p J F^-T N dA) and its adjoint (Appendix A.2.4: F, G, H, I,
 * J, K and eq. A90), per particle. Included once per dimension by kernels.h. */

/* Per-particle quantities of P2G that forward and adjoint share. */
typedef struct {
  cq_real x[D], v[D], Cm[D][D], F[D][D];
  cq_real m, vol0;
  cq_real P[D][D];             /* elastic first Piola-Kirchhoff stress */
  cq_real tau[D][D];           /* Kirchhoff stress P F^T + F A F^T */
  cq_real G[D][D];             /* -(4/dx^2) dt V0 tau + m C  (eq. 5) */
  cq_real f[D];                /* actuation force (force actuators, chamber walls) */
  cq_real ua;                  /* the actuation this particle feels: u of its actuator times act_w */
  cq_real A[D][D];             /* material-space actuation stress: diag(u axis) of a stress actuator + the user's A_p */
  int act, act_kind, actuated; /* actuated: A may be non-zero */
} CQ_D(cqi_p2g);

/* Stress cache (backward only): the forward recompute stores P, tau and G per particle, component-major
 * cache[(k * D*D + i*D + j) * n + p] for k = 0 (P), 1 (tau), 2 (G), so the adjoint does not evaluate the
 * material again. */
CQ_HD void CQ_D(p2g_cache_io)(CQ_D(cqi_p2g) * q, cq_real* cache, int n, int p, int store) {
  cq_real* mats[3] = {&q->P[0][0], &q->tau[0][0], &q->G[0][0]};
  for (int k = 0; k < 3; k++)
    for (int e = 0; e < D * D; e++) {
      cq_real* slot = &cache[(long)(k * D * D + e) * n + p];
      if (store)
        *slot = mats[k][e];
      else
        mats[k][e] = *slot;
    }
}

/* Loads particle p and computes its stresses, or reads them from cache when cache_in is non-NULL. v: the branches
 * its caller has settled (kernel_types.h; CQI_ANY: none). */
CQ_HD void CQ_D(p2g_load)(const cq_substep* c, const cq_particles* s, const cq_params* m, const cq_ctl* ctl, int p,
                          CQ_D(cqi_p2g) * q, const cq_real* cache_in, cqi_variant v) {
  int n = s->n;
  const cq_real* ustress = v.plain ? NULL : ctl->stress; /* constants on the vectorised path: their branches fold */
  const cq_real* uforce = v.plain ? NULL : ctl->force;
  const cq_real *u = ctl->u, *axis = m->act_axis, *act_w = m->act_w; /* read unconditionally: SIMD lanes mask below */
  for (int a = 0; a < D; a++) {
    q->x[a] = s->x[a * n + p];
    q->v[a] = s->v[a * n + p];
    for (int b = 0; b < D; b++) {
      q->Cm[a][b] = s->C[(a * D + b) * n + p];
      q->F[a][b] = s->F[(a * D + b) * n + p];
    }
  }
  q->m = m->mass[p];
  q->vol0 = m->vol0[p];
  q->act = m->act_id[p];
  q->act_kind = q->act < 0 ? -1 : v.plain ? (int)CQ_ACT_STRESS : (int)m->act_kind[q->act];
  cq_real ua = q->ua = q->act >= 0 ? u[q->act] * act_w[p] : 0;
  q->actuated = q->act_kind == CQ_ACT_STRESS || ustress;
  for (int a = 0; a < D; a++) {
    q->f[a] = (q->act_kind == CQ_ACT_FORCE ? ua * axis[a * n + p] : 0) + (uforce ? uforce[a * n + p] : 0);
    for (int b = 0; b < D; b++) q->A[a][b] = ustress ? ustress[(a * D + b) * n + p] : 0;
    if (q->act_kind == CQ_ACT_STRESS) q->A[a][a] += ua * axis[a * n + p];
  }
  /* chamber pressure at the wall's F_w (wall.h; F_p where it has none); the implicit solve takes it at F_w(v)
   * instead (implicit.h); a wall with a surface point has it scattered from there (p2g_surface) */
  if (cqi_pressure_kind(q->act_kind) && !c->implicit_pressure && !CQ_D(wall_surface_has)(c, m, p, n)) {
    cq_real Fs[D][D];
    CQ_D(pressure_F)(c, p, n, q->F, Fs);
    CQ_D(nanson_force)(m, p, n, Fs, ua, q->f);
  }
  if (v.cached || cache_in) {
    CQ_D(p2g_cache_io)(q, (cq_real*)cache_in, n, p, 0);
    return;
  }
  if (!v.plain && c->implicit_elastic) /* eq. 12: the implicit solve takes the elastic stress at F_p(v) */
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) q->P[a][b] = 0;
  else if (!v.plain && c->vol_averaged) { /* the bulk term on the group's J (volumetric.h) */
    CQ_D(material_P_terms_v)(m, p, q->F, q->P, 0, v);
    if (CQ_D(particle_bulk)(m, p) > 0) CQ_D(vol_averaged_P)(m, p, c->vol_p[p], q->F, q->P);
  } else
    CQ_D(material_P_terms_v)(m, p, q->F, q->P, 1, v);
  CQ_D(mmt)(q->P, q->F, q->tau);
  if (q->actuated) { /* tau += F A F^T (eq. 15; A = diag(u axis) for a stress actuator, plus a user tensor) */
    cq_real FA[D][D];
    CQ_D(mm)(q->F, q->A, FA);
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) {
        cq_real t = 0;
        for (int l = 0; l < D; l++) t += FA[i][l] * q->F[j][l];
        q->tau[i][j] += t;
      }
  }
  cq_real visc = v.plain ? 0 : m->visc[p];
  if (visc > 0) { /* viscosity: tau += J mu_v (C + C^T), the Kirchhoff form of mu_v (grad v + grad v^T) */
    cq_real kv = CQ_D(det)(q->F) * visc;
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) q->tau[i][j] += kv * (q->Cm[i][j] + q->Cm[j][i]);
  }
  cq_real k = -4 * c->inv_dx * c->inv_dx * c->dt * q->vol0;
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) q->G[i][j] = k * q->tau[i][j] + q->m * q->Cm[i][j];
}

/* The particle's momentum with the force impulse (eq. 16), into mv[a * stride]. */
CQ_HD void CQ_D(p2g_momentum)(const cq_substep* c, const CQ_D(cqi_p2g) * q, cq_real* mv, int stride) {
  for (int a = 0; a < D; a++) mv[a * stride] = q->m * q->v[a] + c->dt * q->f[a];
}

/* Forward, first half: loads particle p and its stresses (into cache_out when non-NULL), its stencil and its
 * momentum with the force impulse (eq. 16). */
CQ_HD void CQ_D(p2g_begin)(const cq_substep* c, const cq_particles* s, const cq_params* m, const cq_ctl* ctl, int p,
                           cq_real* cache_out, CQ_D(cqi_p2g) * q, CQ_D(cqi_stencil) * st, cq_real mv[D]) {
  CQ_D(p2g_load)(c, s, m, ctl, p, q, NULL, CQI_ANY);
  if (cache_out) CQ_D(p2g_cache_io)(q, cache_out, s->n, p, 1);
  CQ_D(stencil)(c, q->x, cqi_field(c, m, p), st);
  CQ_D(p2g_momentum)(c, q, mv, 1);
}

/* Forward, per stencil node (eqs. 5-6): what the particle adds to the node at offset off, out[D + 1] = momentum w (m v
 * + dt f + G dpos) and mass w m; returns the node's grid index. */
CQ_HD cqi_node CQ_D(p2g_node)(const cq_substep* c, const CQ_D(cqi_p2g) * q, const CQ_D(cqi_stencil) * st,
                              const cq_real mv[D], const int off[3], cq_real out[D + 1]) {
  cq_real w, gw[D], dpos[D];
  cqi_node node = CQ_D(stencil_node)(c, st, off, &w, gw, dpos);
  for (int a = 0; a < D; a++) {
    cq_real t = mv[a];
    for (int b = 0; b < D; b++) t += q->G[a][b] * dpos[b];
    out[a] = w * t;
  }
  out[D] = w * q->m;
  return node;
}

/* Forward, second half: adds what the particle gives every stencil node into grid (stride D+1: momentum[D],
 * mass). */
CQ_HD void CQ_D(p2g_scatter)(const cq_substep* c, const CQ_D(cqi_p2g) * q, const CQ_D(cqi_stencil) * st,
                             const cq_real mv[D], cq_real* grid) {
  CQI_FOR_STENCIL(off) {
    cq_real add[D + 1];
    cq_real* g = grid + CQ_D(p2g_node)(c, q, st, mv, off, add) * (D + 1);
    for (int a = 0; a <= D; a++) CQ_SCATTER_ADD(&g[a], add[a]);
  }
}

/* A chamber wall's pressure at its surface point (chamber.h wall_surface_load): the impulse dt f, Nanson's force,
 * added to the momentum of the particle's stencil nodes with its weights tilted towards the surface point. For
 * particles with wall_surface_has. */
CQ_HD void CQ_D(p2g_surface)(const cq_substep* c, const cq_particles* s, const cq_params* m, const cq_ctl* ctl, int p,
                             cq_real* grid) {
  int n = s->n, act = m->act_id[p];
  cq_real x[D], F[D][D], Fs[D][D], fp[D], d[D], r[D], sft[D], w0[D][3], q[D][3];
  for (int a = 0; a < D; a++) {
    x[a] = s->x[a * n + p];
    for (int b = 0; b < D; b++) F[a][b] = s->F[(a * D + b) * n + p];
  }
  CQ_D(cqi_stencil) st;
  CQ_D(wall_surface_load)(c, m, p, n, x, F, ctl->u[act] * m->act_w[p], Fs, fp, d, r, sft, &st, w0, q);
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    cq_real* g = grid + CQ_D(stencil_node)(c, &st, off, &w, gw, dpos) * (D + 1);
    for (int a = 0; a < D; a++) CQ_SCATTER_ADD(&g[a], w * c->dt * fp[a]);
  }
}

/* Its adjoint given the nodes' dL/d(momentum) adj: dL/dx into gx, dL/dF (or the wall's F_w) into gF, dL/d(ua) and
 * dL/d(wall_area) into *gua, *gdA. */
CQ_HD void CQ_D(p2g_surface_adj)(const cq_substep* c, const cq_params* m, int p, int n, const cq_real x[D],
                                 const cq_real F[D][D], cq_real ua, const cq_real* adj, cq_real gx[D],
                                 cq_real gF[D][D], cq_real* gua, cq_real* gdA) {
  cq_real Fs[D][D], fp[D], d[D], r[D], sft[D], w0[D][3], q[D][3];
  cq_real gfp[D] = {0}, psi[D][3] = {{0}}, gs[D], gFs[D][D] = {{0}};
  CQ_D(cqi_stencil) st;
  int own_w = CQ_D(wall_surface_load)(c, m, p, n, x, F, ua, Fs, fp, d, r, sft, &st, w0, q);
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D], g[D], phi = 0;
    cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
    for (int a = 0; a < D; a++) g[a] = adj[node * (D + 1) + a], phi += c->dt * fp[a] * g[a];
    for (int a = 0; a < D; a++) {
      gfp[a] += w * c->dt * g[a];
      cq_real others = phi; /* dL/dp of this axis' node: phi times the other axes' weights */
      for (int b = 0; b < D; b++)
        if (b != a) others *= st.w[b][off[b]];
      psi[a][off[a]] += others;
    }
  }
  for (int a = 0; a < D; a++) {
    cq_real gxi, gt;
    CQ_D(tilt_axis_adj)(c, w0[a], st.dw[a], q[a], st.fx[a], sft[a] * c->inv_dx, psi[a], &gxi, &gt);
    gx[a] += gxi;
    gs[a] = gt * c->inv_dx;
  }
  CQ_D(wall_surface_shift_adj)(m, 1, d, r, gs, gFs);
  CQ_D(nanson_force_adj)(m, p, n, Fs, ua, gfp, gFs, gua, gdA);
  CQ_D(pressure_F_adj)(c, p, n, own_w, gFs, gF);
}

/* Forward in two passes (the CPU's, cpu_loops.h): first each particle's stresses into cache (P, tau, G as
 * p2g_cache_io) and its momentum with the force impulse into mv ([D][n]), with no writes shared between particles
 * (so a block of them can run as SIMD lanes); then p2g_scatter_stored, which adds what the particle gives its
 * stencil nodes into grid (the caller keeps writers of the same nodes apart). The CUDA backend runs the same
 * bodies as p2g_begin, p2g_node and p2g_scatter (cuda/cuda_loops.cuh). */
CQ_HD void CQ_D(p2g_store)(const cq_substep* c, const cq_particles* s, const cq_params* m, const cq_ctl* ctl, int p,
                           cq_real* cache, cq_real* mv, cqi_variant v) {
  CQ_D(cqi_p2g) q;
  CQ_D(p2g_load)(c, s, m, ctl, p, &q, NULL, v);
  CQ_D(p2g_cache_io)(&q, cache, s->n, p, 1);
  CQ_D(p2g_momentum)(c, &q, mv + p, s->n);
}

/* What p2g_store left of particle p: q's m and G (all p2g_node reads), its stencil on velocity field `field`
 * (kernel_types.h cqi_field) and mv. */
CQ_HD void CQ_D(p2g_stored)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p, int field,
                            const cq_real* cache, const cq_real* mv, CQ_D(cqi_p2g) * q, CQ_D(cqi_stencil) * st,
                            cq_real mvp[D]) {
  int n = s->n;
  cq_real x[D];
  q->m = m->mass[p];
  for (int a = 0; a < D; a++) {
    x[a] = s->x[a * n + p];
    mvp[a] = mv[a * n + p];
    for (int b = 0; b < D; b++) q->G[a][b] = cache[(long)(2 * D * D + a * D + b) * n + p];
  }
  CQ_D(stencil)(c, x, field, st);
}

CQ_HD void CQ_D(p2g_scatter_stored)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                                    const cq_real* cache, const cq_real* mv, cq_real* grid) {
  CQ_D(cqi_p2g) q;
  CQ_D(cqi_stencil) st;
  cq_real mvp[D];
  CQ_D(p2g_stored)(c, s, m, p, cqi_field(c, m, p), cache, mv, &q, &st, mvp);
  CQ_D(p2g_scatter)(c, &q, &st, mvp, grid);
}

/* p2g_scatter_stored without the scatter (the CPU's SIMD lanes): node k's grid index into idx[k * stride] and its
 * D + 1 terms into add[(k * (D + 1) + a) * stride], in CQI_FOR_STENCIL's order. The index is the physical grid's:
 * the caller adds the particle's field's shift (kernel_types.h field_nodes), so that the lanes load no material. */
CQ_HD void CQ_D(p2g_terms_stored)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                                  const cq_real* cache, const cq_real* mv, cqi_node* idx, cq_real* add, int stride) {
  CQ_D(cqi_p2g) q;
  CQ_D(cqi_stencil) st;
  cq_real mvp[D];
  CQ_D(p2g_stored)(c, s, m, p, 0, cache, mv, &q, &st, mvp);
  int k = 0;
  CQI_FOR_STENCIL(off) {
    cq_real out[D + 1];
    idx[k * stride] = CQ_D(p2g_node)(c, &q, &st, mvp, off, out);
    for (int a = 0; a <= D; a++) add[(k * (D + 1) + a) * stride] = out[a];
    k++;
  }
}

/* Adjoint: gather dL/d(momentum, mass) of the nodes (adj, stride D+1) into particle p. cache (may be NULL) holds
 * the stresses stored by p2g of the same state.
 * Writes gv, gC of state n (gs->v, gs->C), adds to gs->x and gs->F and to the parameter gradients gp, writes the
 * particle's actuation gradient gc->u[p] (dL/du of its actuator) and, when gc->force is non-NULL, dL/d(extra
 * particle force) into gc->force ([D][n]). With a user stress (ctl->stress) it adds dL/dA_p = F^T gtau F into
 * gc->stress ([D*D][n], accumulated over the substeps of a control step) when non-NULL. */
CQ_HD void CQ_D(p2g_adj_v)(const cq_substep* c, const cq_particles* s, const cq_params* m, const cq_ctl* ctl, int p,
                           const cq_real* adj, cq_particles* gs, const cq_param_grads* gp, const cq_ctl_grads* gc,
                           const cq_real* cache, cqi_variant v) {
  int n = s->n;
  const cq_real* ustress = v.plain ? NULL : ctl->stress; /* as in p2g_load */
  cq_real* gforce = v.plain ? NULL : gc->force;
  const cq_real *u = ctl->u, *axis = m->act_axis, *act_w = m->act_w; /* as in p2g_load */
  CQ_D(cqi_p2g) q;
  CQ_D(p2g_load)(c, s, m, ctl, p, &q, cache, v);
  CQ_D(cqi_stencil) st;
  CQ_D(stencil)(c, q.x, cqi_field_v(c, m, p, v), &st);
  cq_real mv[D], gv[D] = {0}, gx[D] = {0}, gG[D][D] = {{0}}, sum_gp[D] = {0}, gm = 0, gf[D] = {0};
  CQ_D(p2g_momentum)(c, &q, mv, 1);
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
    cq_real g[D + 1]; /* indexed loads: gathers on the vectorised path (cpu_loops.h) */
    for (int a = 0; a <= D; a++) g[a] = adj[node * (D + 1) + a];
    cq_real contrib = q.m * g[D]; /* d(node mass)/dw */
    for (int a = 0; a < D; a++) {
      cq_real t = mv[a];
      for (int b = 0; b < D; b++) {
        t += q.G[a][b] * dpos[b];
        gG[a][b] += w * g[a] * dpos[b];
      }
      contrib += g[a] * t;
      gv[a] += w * q.m * g[a]; /* eq. A64 */
      gf[a] += w * c->dt * g[a];
      sum_gp[a] += w * g[a];
      gm += w * g[a] * q.v[a];
    }
    gm += w * g[D]; /* eq. A90 */
    for (int a = 0; a < D; a++) gx[a] += gw[a] * contrib;
  }
  /* dpos = x_i - x_p: -G^T sum_i w gp_i (eq. A88, second term) */
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) gx[a] -= q.G[b][a] * sum_gp[b];
  /* G = k V0 tau + m C */
  cq_real k = -4 * c->inv_dx * c->inv_dx * c->dt;
  cq_real gtau[D][D];
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      gm += gG[a][b] * q.Cm[a][b];
      gtau[a][b] = k * q.vol0 * gG[a][b];
    }
  cq_pgrad g; /* this particle's parameter gradients, added to gp at the end */
  CQ_D(pgrad_zero)(&g);
  g.vol0 = k * CQ_D(ddot)(gG, q.tau);
  /* tau = P F^T (+ F A F^T): gP = gtau F, gF += gtau^T P */
  cq_real gP[D][D], gF[D][D];
  CQ_D(mm)(gtau, q.F, gP);
  CQ_D(mtm)(gtau, q.P, gF);
  cq_real ga = 0; /* dL/d(u act_w): split into dL/du and dL/dact_w below */
  if (q.act_kind == CQ_ACT_FORCE)
    for (int d = 0; d < D; d++) ga += gf[d] * axis[d * n + p];
  if (cqi_pressure_kind(q.act_kind) && !c->implicit_pressure) {
    if (CQ_D(wall_surface_has)(c, m, p, n)) {
      CQ_D(p2g_surface_adj)(c, m, p, n, q.x, q.F, q.ua, adj, gx, gF, &ga, &g.wall_area);
    } else {
      cq_real Fs[D][D], gFs[D][D] = {{0}};
      int own_w = CQ_D(pressure_F)(c, p, n, q.F, Fs);
      CQ_D(nanson_force_adj)(m, p, n, Fs, q.ua, gf, gFs, &ga, &g.wall_area);
      CQ_D(pressure_F_adj)(c, p, n, own_w, gFs, gF);
    }
  }
  if (q.actuated) { /* tau += F A F^T: gF += gtau F A^T + gtau^T F A; dL/dA = F^T gtau F */
    cq_real FA[D][D], FAt[D][D], t1[D][D], gA[D][D];
    CQ_D(mm)(q.F, q.A, FA);
    CQ_D(mmt)(q.F, q.A, FAt);
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) {
        cq_real t = 0;
        for (int l = 0; l < D; l++) t += gtau[i][l] * FAt[l][j] + gtau[l][i] * FA[l][j];
        gF[i][j] += t;
      }
    CQ_D(mtm)(q.F, gtau, t1);
    CQ_D(mm)(t1, q.F, gA);
    if (q.act_kind == CQ_ACT_STRESS) /* A_dd = u act_w axis_d: dL/d(u act_w) = sum_d (dL/dA)_dd axis_d */
      for (int d = 0; d < D; d++) ga += gA[d][d] * axis[d * n + p];
    if (gc->stress && ustress)
      for (int i = 0; i < D; i++)
        for (int j = 0; j < D; j++) gc->stress[(i * D + j) * n + p] += gA[i][j];
  }
  if (q.act >= 0) {
    g.act_w = ga * u[q.act];
    ga *= act_w[p];
  }
  gc->u[p] = ga;
  if (gforce)
    for (int a = 0; a < D; a++) gforce[a * n + p] = gf[a];
  if (v.plain || !c->implicit_elastic) {
    int avg = !v.plain && c->vol_averaged; /* the bulk term on the group's J (volumetric.h) */
    CQ_D(material_P_vjp_terms_v)(m, p, q.F, gP, gF, &g, !avg, v);
    if (avg && CQ_D(particle_bulk)(m, p) > 0)
      CQ_D(vol_averaged_P_vjp)(m, p, c->vol_p[p], q.F, gP, gF, &g, &c->vol_g[p]);
  }
  cq_real gCv[D][D] = {{0}}; /* viscosity: tau += J mu_v (C + C^T) */
  cq_real visc = v.plain ? 0 : m->visc[p];
  if (visc > 0) {
    cq_real A[D][D], sym = 0;
    cq_real J = CQ_D(inv_t)(q.F, A);
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) {
        sym += gtau[i][j] * (q.Cm[i][j] + q.Cm[j][i]);
        gCv[i][j] = J * visc * (gtau[i][j] + gtau[j][i]);
      }
    g.visc = J * sym;
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) gF[i][j] += visc * sym * J * A[i][j]; /* dJ = J F^-T : dF */
  }
  g.mass = gm;
  CQ_D(pgrad_add)(&g, gp, p, n);
  for (int a = 0; a < D; a++) {
    gs->x[a * n + p] += gx[a];
    gs->v[a * n + p] = gv[a];
    for (int b = 0; b < D; b++) {
      gs->C[(a * D + b) * n + p] = q.m * gG[a][b] + gCv[a][b]; /* eq. A76 (+ viscosity) */
      gs->F[(a * D + b) * n + p] += gF[a][b];
    }
  }
}

CQ_HD void CQ_D(p2g_adj)(const cq_substep* c, const cq_particles* s, const cq_params* m, const cq_ctl* ctl, int p,
                         const cq_real* adj, cq_particles* gs, const cq_param_grads* gp, const cq_ctl_grads* gc,
                         const cq_real* cache) {
  CQ_D(p2g_adj_v)(c, s, m, ctl, p, adj, gs, gp, gc, cache, CQI_ANY);
}

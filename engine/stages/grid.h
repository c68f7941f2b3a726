/* Grid stage (seed 000 eq. 7 and sec. 3.2, Appendix B): momentum -> velocity, gravity, damping and the boundary
 * projections (sticky, slip, separate, Coulomb friction, moving boundaries), forward and adjoint. Per dimension. */

/* Quantities of eqs. B1-B5 shared by the projection and its adjoint: relative velocity r = v - v_b, its normal
 * part ln = r.n, tangential part t = r - ln n, lt = |t| and the friction scale s = max(0, 1 + mu ln / lt). */
typedef struct {
  cq_real r[D], ln, t[D], lt, s;
} CQ_D(cqi_bc_frame);

CQ_HD void CQ_D(bc_frame)(const cq_bc* b, const cq_real v[D], CQ_D(cqi_bc_frame) * f) {
  f->ln = 0;
  for (int a = 0; a < D; a++) {
    f->r[a] = v[a] - b->vel[a];
    f->ln += f->r[a] * b->n[a];
  }
  f->lt = 0;
  for (int a = 0; a < D; a++) {
    f->t[a] = f->r[a] - f->ln * b->n[a];
    f->lt += f->t[a] * f->t[a];
  }
  f->lt = cq_sqrt(f->lt);
  f->s = (f->lt > 0 && !isinf(b->mu)) ? 1 + b->mu * f->ln / f->lt : 0;
  if (f->s < 0) f->s = 0;
}

/* One boundary projection of a node velocity v (in place), in the boundary's frame v_rel = v - v_b. */
CQ_HD void CQ_D(bc_apply)(const cq_bc* b, cq_real v[D]) {
  CQ_D(cqi_bc_frame) f;
  CQ_D(bc_frame)(b, v, &f);
  cq_real* r = f.r;
  cq_real ln = f.ln;
  if (b->type == CQ_BC_STICKY) {
    for (int a = 0; a < D; a++) r[a] = 0;
  } else if (b->type == CQ_BC_SLIP || (ln < 0 && b->type == CQ_BC_SEPARATE)) {
    for (int a = 0; a < D; a++) r[a] -= ln * b->n[a];
  } else if (ln < 0 && b->type == CQ_BC_FRICTION) { /* eq. B6 */
    for (int a = 0; a < D; a++) r[a] = f.s * f.t[a];
  }
  for (int a = 0; a < D; a++) v[a] = r[a] + b->vel[a];
}

/* Adjoint of bc_apply: v is the velocity BEFORE the projection, g = dL/dv_after on input, dL/dv_before on output. */
CQ_HD void CQ_D(bc_apply_adj)(const cq_bc* b, const cq_real v[D], cq_real g[D]) {
  CQ_D(cqi_bc_frame) f;
  CQ_D(bc_frame)(b, v, &f);
  cq_real ln = f.ln, lt = f.lt, s = f.s, *t = f.t;
  if (b->type == CQ_BC_STICKY) {
    for (int a = 0; a < D; a++) g[a] = 0;
  } else if (b->type == CQ_BC_SLIP || (ln < 0 && b->type == CQ_BC_SEPARATE)) {
    cq_real gn = 0;
    for (int a = 0; a < D; a++) gn += g[a] * b->n[a];
    for (int a = 0; a < D; a++) g[a] -= gn * b->n[a];
  } else if (ln < 0 && b->type == CQ_BC_FRICTION) { /* eqs. B9-B15 */
    if (s <= 0) {
      for (int a = 0; a < D; a++) g[a] = 0;
      return;
    }
    /* r' = s(ln, lt) t, with t = r - ln n, lt = |t| */
    cq_real gt_dot = 0;
    for (int a = 0; a < D; a++) gt_dot += g[a] * t[a];
    cq_real g_ln = gt_dot * b->mu / lt;                /* ds/dln = mu / lt */
    cq_real g_lt = gt_dot * (-b->mu * ln / (lt * lt)); /* ds/dlt */
    cq_real gtv[D], gtn = 0;
    for (int a = 0; a < D; a++) {
      gtv[a] = s * g[a] + g_lt * t[a] / lt;
      gtn += gtv[a] * b->n[a];
    }
    for (int a = 0; a < D; a++) g[a] = gtv[a] - gtn * b->n[a] + g_ln * b->n[a];
  }
}

/* Which boundary regions touch node (i[] its physical coordinates), in application order: walls 0..2D-1, then the
 * node's own BC. */
CQ_HD int CQ_D(node_bcs)(const cq_substep* c, long node, const int i[D], const cq_bc* out[2 * D + 1]) {
  int k = 0;
  for (int w = 0; w < 2 * D; w++) {
    int th = c->wall_thick[w];
    if (th <= 0) continue;
    int ax = w / 2, side = w % 2;
    if ((side == 0 && i[ax] < th) || (side == 1 && i[ax] >= c->res[ax] - th)) out[k++] = &c->walls[w];
  }
  if (c->node_bc_index) { /* by the physical node: every velocity field meets the same boundaries */
    int32_t b = c->node_bc_index[c->field_nodes && node >= c->field_nodes ? node - c->field_nodes : node];
    if (b >= 0) out[k++] = &c->node_bcs[b];
  }
  return k;
}

/* Adjoint of the chain of projections bcs[0..nb) applied in order to the velocity v (before the first): g =
 * dL/d(v after the last) in, dL/dv out, in place. Replays the chain to recover each projection's input. */
CQ_HD void CQ_D(bc_chain_adj)(const cq_bc* const* bcs, int nb, const cq_real v0[D], cq_real g[D]) {
  cq_real vin[2 * D + 1][D], v[D];
  for (int a = 0; a < D; a++) v[a] = v0[a];
  for (int k = 0; k < nb; k++) {
    for (int a = 0; a < D; a++) vin[k][a] = v[a];
    CQ_D(bc_apply)(bcs[k], v);
  }
  for (int k = nb - 1; k >= 0; k--) CQ_D(bc_apply_adj)(bcs[k], vin[k], g);
}

/* Forward node update: mp = (momentum[D], mass) in, v = velocity out (may alias mp). Empty nodes get v = 0. */
CQ_HD void CQ_D(grid_node)(const cq_substep* c, long node, const int i[D], const cq_real* mp, cq_real* vout) {
  cq_real m = mp[D], v[D];
  if (!(m > 0)) {
    for (int a = 0; a < D; a++) vout[a] = 0;
    return;
  }
  for (int a = 0; a < D; a++) v[a] = (mp[a] / m + c->dt * c->gravity[a]) * c->damp;
  const cq_bc* bcs[2 * D + 1];
  int nb = CQ_D(node_bcs)(c, node, i, bcs);
  for (int k = 0; k < nb; k++) CQ_D(bc_apply)(bcs[k], v);
  for (int a = 0; a < D; a++) vout[a] = v[a];
}

/* Adjoint node update (eqs. A55-A61 and B9-B15): g = (dL/dv[D], unused) in, (dL/dp[D], dL/dm) out, in place. */
CQ_HD void CQ_D(grid_node_adj)(const cq_substep* c, long node, const int i[D], const cq_real* mp, cq_real* g) {
  cq_real m = mp[D];
  if (!(m > 0)) {
    for (int a = 0; a <= D; a++) g[a] = 0;
    return;
  }
  const cq_bc* bcs[2 * D + 1];
  int nb = CQ_D(node_bcs)(c, node, i, bcs);
  cq_real v[D], gv[D], vn[D];
  for (int a = 0; a < D; a++) {
    vn[a] = mp[a] / m;
    v[a] = (vn[a] + c->dt * c->gravity[a]) * c->damp;
    gv[a] = g[a];
  }
  CQ_D(bc_chain_adj)(bcs, nb, v, gv);
  cq_real gm = 0;
  for (int a = 0; a < D; a++) {
    gv[a] *= c->damp; /* dL/d(p/m) */
    gm -= vn[a] * gv[a] / m;
    g[a] = gv[a] / m;
  }
  g[D] = gm;
}

/* Grid stage (seed 000 eq. 7 and sec. 3.2, Appendix B): momentum -> velocity, gravity, damping and the boundary
 * projections (sticky, slip, separate, Coulomb friction, moving boundaries), forward and adjoint. Per dimension. */

/* One boundary projection of a node velocity v (in place), in the boundary's frame v_rel = v - v_b. */
CQ_HD void CQ_D(bc_apply)(const cq_bc* b, cq_real v[D]) {
  cq_real r[D], ln = 0;
  for (int a = 0; a < D; a++) {
    r[a] = v[a] - b->vel[a];
    ln += r[a] * b->n[a];
  }
  if (b->type == CQ_BC_STICKY) {
    for (int a = 0; a < D; a++) r[a] = 0;
  } else if (b->type == CQ_BC_SLIP || (ln < 0 && b->type == CQ_BC_SEPARATE)) {
    for (int a = 0; a < D; a++) r[a] -= ln * b->n[a];
  } else if (ln < 0 && b->type == CQ_BC_FRICTION) { /* eqs. B1-B6 */
    cq_real t[D], lt = 0;
    for (int a = 0; a < D; a++) {
      t[a] = r[a] - ln * b->n[a];
      lt += t[a] * t[a];
    }
    lt = cq_sqrt(lt);
    cq_real s = (lt > 0 && !isinf(b->mu)) ? 1 + b->mu * ln / lt : 0;
    if (s < 0) s = 0;
    for (int a = 0; a < D; a++) r[a] = s * t[a];
  }
  for (int a = 0; a < D; a++) v[a] = r[a] + b->vel[a];
}

/* Adjoint of bc_apply: v is the velocity BEFORE the projection, g = dL/dv_after on input, dL/dv_before on output. */
CQ_HD void CQ_D(bc_apply_adj)(const cq_bc* b, const cq_real v[D], cq_real g[D]) {
  cq_real r[D], ln = 0;
  for (int a = 0; a < D; a++) {
    r[a] = v[a] - b->vel[a];
    ln += r[a] * b->n[a];
  }
  if (b->type == CQ_BC_STICKY) {
    for (int a = 0; a < D; a++) g[a] = 0;
  } else if (b->type == CQ_BC_SLIP || (ln < 0 && b->type == CQ_BC_SEPARATE)) {
    cq_real gn = 0;
    for (int a = 0; a < D; a++) gn += g[a] * b->n[a];
    for (int a = 0; a < D; a++) g[a] -= gn * b->n[a];
  } else if (ln < 0 && b->type == CQ_BC_FRICTION) {
    cq_real t[D], lt = 0;
    for (int a = 0; a < D; a++) {
      t[a] = r[a] - ln * b->n[a];
      lt += t[a] * t[a];
    }
    lt = cq_sqrt(lt);
    cq_real s = (lt > 0 && !isinf(b->mu)) ? 1 + b->mu * ln / lt : 0;
    if (s <= 0) {
      for (int a = 0; a < D; a++) g[a] = 0;
      return;
    }
    /* r' = s(ln, lt) t, with t = r - ln n, lt = |t| */
    cq_real gt_dot = 0;
    for (int a = 0; a < D; a++) gt_dot += g[a] * t[a];
    cq_real g_ln = gt_dot * b->mu / lt;                 /* ds/dln = mu / lt */
    cq_real g_lt = gt_dot * (-b->mu * ln / (lt * lt));  /* ds/dlt */
    cq_real gtv[D], gtn = 0;
    for (int a = 0; a < D; a++) {
      gtv[a] = s * g[a] + g_lt * t[a] / lt;
      gtn += gtv[a] * b->n[a];
    }
    for (int a = 0; a < D; a++) g[a] = gtv[a] - gtn * b->n[a] + g_ln * b->n[a];
  }
}

/* Which boundary regions touch node (i[]), in application order: walls 0..2D-1, then the node's own BC. */
CQ_HD int CQ_D(node_bcs)(const cq_substep* c, long node, const int i[D], const cq_bc* out[2 * D + 1]) {
  int k = 0;
  for (int w = 0; w < 2 * D; w++) {
    int th = c->wall_thick[w];
    if (th <= 0) continue;
    int ax = w / 2, side = w % 2;
    if ((side == 0 && i[ax] < th) || (side == 1 && i[ax] >= c->res[ax] - th)) out[k++] = &c->walls[w];
  }
  if (c->node_bc_index) {
    int32_t b = c->node_bc_index[node];
    if (b >= 0) out[k++] = &c->node_bcs[b];
  }
  return k;
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
  cq_real vin[2 * D + 1][D], v[D], gv[D], vn[D];
  for (int a = 0; a < D; a++) {
    vn[a] = mp[a] / m;
    v[a] = (vn[a] + c->dt * c->gravity[a]) * c->damp;
  }
  for (int k = 0; k < nb; k++) { /* replay the projections, keeping each one's input */
    for (int a = 0; a < D; a++) vin[k][a] = v[a];
    CQ_D(bc_apply)(bcs[k], v);
  }
  for (int a = 0; a < D; a++) gv[a] = g[a];
  for (int k = nb - 1; k >= 0; k--) CQ_D(bc_apply_adj)(bcs[k], vin[k], gv);
  cq_real gm = 0;
  for (int a = 0; a < D; a++) {
    gv[a] *= c->damp;      /* dL/d(p/m) */
    gm -= vn[a] * gv[a] / m;
    g[a] = gv[a] / m;
  }
  g[D] = gm;
}

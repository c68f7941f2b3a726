/* Cable actuation (seed 000 eq. 17) and its adjoint, per cable. A cable through particles p_1..p_r has length
 * L = sum |x_{i+1} - x_i| and energy k/2 max(0, L - max(0, R u))^2 (contract-only: no force while slack). Its
 * forces f_i = -dE/dx_i = T (e_i - e_{i-1}), T = k max(0, L - max(0, R u)), e_i the unit segment directions,
 * enter the substep as particle forces (eq. 16). Included once per dimension by kernels.h. */

/* Tension and its derivatives for cable c: returns T; *dT_dL and *dT_du are 0 while the cable is slack. */
CQ_HD cq_real CQ_D(cable_tension)(const cq_cable* cb, cq_real L, cq_real u, cq_real* dT_dL, cq_real* dT_du) {
  cq_real target = cb->rest * u;
  int unspooled = target > 0;
  if (!unspooled) target = 0;
  cq_real stretch = L - target;
  if (!(stretch > 0)) {
    *dT_dL = *dT_du = 0;
    return 0;
  }
  *dT_dL = cb->k;
  *dT_du = unspooled ? -cb->k * cb->rest : 0;
  return cb->k * stretch;
}

/* Segment i of cable c: d = x_{i+1} - x_i and its length. */
CQ_HD cq_real CQ_D(cable_segment)(const cq_cable* cb, const int32_t* idx, const cq_real* x, int n, int i,
                                  cq_real d[D]) {
  cq_real l2 = 0;
  for (int a = 0; a < D; a++) {
    d[a] = x[a * n + idx[cb->first + i + 1]] - x[a * n + idx[cb->first + i]];
    l2 += d[a] * d[a];
  }
  return cq_sqrt(l2);
}

/* Forward: adds cable c's forces into f (component-major [D][n]) given actuation u of its actuator. */
CQ_HD void CQ_D(cable_forces)(const cq_cable* cb, const int32_t* idx, const cq_real* x, int n, cq_real u, cq_real* f) {
  int r = cb->count;
  cq_real L = 0, d[D];
  for (int i = 0; i + 1 < r; i++) L += CQ_D(cable_segment)(cb, idx, x, n, i, d);
  cq_real dTL, dTu, T = CQ_D(cable_tension)(cb, L, u, &dTL, &dTu);
  if (T == 0) return;
  for (int i = 0; i + 1 < r; i++) {
    cq_real l = CQ_D(cable_segment)(cb, idx, x, n, i, d);
    if (!(l > 0)) continue;
    for (int a = 0; a < D; a++) { /* +T e_i on p_i, -T e_i on p_{i+1} */
      f[a * n + idx[cb->first + i]] += T * d[a] / l;
      f[a * n + idx[cb->first + i + 1]] -= T * d[a] / l;
    }
  }
}

/* Adjoint: given gf = dL/d(particle forces), adds dL/dx into gx (component-major) and returns dL/du. */
CQ_HD cq_real CQ_D(cable_forces_adj)(const cq_cable* cb, const int32_t* idx, const cq_real* x, int n, cq_real u,
                                     const cq_real* gf, cq_real* gx) {
  int r = cb->count;
  cq_real L = 0, d[D];
  for (int i = 0; i + 1 < r; i++) L += CQ_D(cable_segment)(cb, idx, x, n, i, d);
  cq_real dTL, dTu, T = CQ_D(cable_tension)(cb, L, u, &dTL, &dTu);
  if (T == 0) return 0; /* slack: no force, no gradient (measure-zero kink at T = 0 ignored) */
  /* dL/dT = sum_i (gf_{p_i} - gf_{p_{i+1}}) . e_i */
  cq_real gT = 0;
  for (int i = 0; i + 1 < r; i++) {
    cq_real l = CQ_D(cable_segment)(cb, idx, x, n, i, d);
    if (!(l > 0)) continue;
    for (int a = 0; a < D; a++) gT += (gf[a * n + idx[cb->first + i]] - gf[a * n + idx[cb->first + i + 1]]) * d[a] / l;
  }
  cq_real gL = gT * dTL;
  for (int i = 0; i + 1 < r; i++) {
    cq_real l = CQ_D(cable_segment)(cb, idx, x, n, i, d);
    if (!(l > 0)) continue;
    cq_real e[D], ge[D], ee = 0, gd[D];
    for (int a = 0; a < D; a++) {
      e[a] = d[a] / l;
      ge[a] = T * (gf[a * n + idx[cb->first + i]] - gf[a * n + idx[cb->first + i + 1]]); /* direct dL/de_i */
      ee += e[a] * ge[a];
    }
    for (int a = 0; a < D; a++) gd[a] = gL * e[a] + (ge[a] - ee * e[a]) / l; /* d = x_{i+1} - x_i */
    for (int a = 0; a < D; a++) {
      gx[a * n + idx[cb->first + i + 1]] += gd[a];
      gx[a * n + idx[cb->first + i]] -= gd[a];
    }
  }
  return gT * dTu;
}

/* Pneumatic actuation (seed 003 eqs. 14-16) and its adjoint. Actuator kind chamber: pressure u act_w on its wall
 * particles, each pushed by f = ua dA cof(F) N (Nanson: n da = J F^-T N dA), ua = u act_w, dA = wall_area, N =
 * act_axis (the wall's normal into the material, times the actuator's max pressure). Kind cavity (beyond the seed):
 * the walls of a closed cavity, whose pressure can exert no net force and no net torque on the body; the particle
 * sum of Nanson's forces does, once the body deforms (each particle's F stands for the wall around it), and on
 * seed 003's finger that spurious resultant bends the finger further and further at a constant pressure (it never
 * settles: docs/results/history.md, "Issue 11"). A cavity adds to each wall particle the correction
 *   f_c = dA (a + b x (x - c)),   c = sum dA x / sum dA,   a = -F / sum dA,   b = -I^-1 M_c,
 * with F = sum f and M_c = sum (x - c) x f the walls' resultant force and torque about c and I = sum dA (|r|^2 I -
 * r r^T), r = x - c (in 2D the torque and I are scalars, b x r = b (-r_y, r_x)): the least traction, spread by wall
 * area, that cancels both. The sums are a reduction over the cavity's particles (the backends run it), the rest is
 * per particle here. Included once per dimension by kernels.h. */

#ifndef CQ_CHAMBER_TYPES
#define CQ_CHAMBER_TYPES
#ifndef CQI_WALL_OFFSET_MAX
#define CQI_WALL_OFFSET_MAX 0.25
#endif
/* A cavity's sums over its wall particles (2D uses the leading entries): wall area, its first and second moments,
 * and the walls' Nanson force and torque about the origin. CQI_CAVITY_SUMS reals, in this order. */
typedef struct cqi_cavity_sums {
  cq_real S0, S1[3], F[3], M[3], S2[9];
} cqi_cavity_sums;
#define CQI_CAVITY_SUMS 19
/* A cavity's correction f_c = dA (a + b x (x - c)). */
typedef struct cqi_cavity_coef {
  cq_real a[3], b[3], c[3];
} cqi_cavity_coef;
#endif

/* Nanson's force of a chamber or cavity wall particle: f += ua dA cof(F) N. */
CQ_HD void CQ_D(nanson_force)(const cq_params* m, int p, int n, const cq_real F[D][D], cq_real ua, cq_real f[D]) {
  cq_real cof[D][D], dA = m->wall_area[p];
  CQ_D(cofactor)(F, cof);
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) f[a] += ua * dA * cof[a][b] * m->act_axis[b * n + p];
}

/* Its differential along dF: df += ua dA dcof(F)[dF] N. */
CQ_HD void CQ_D(nanson_force_jvp)(const cq_params* m, int p, int n, const cq_real F[D][D], const cq_real dF[D][D],
                                  cq_real ua, cq_real df[D]) {
  cq_real dcof[D][D] = {{0}}, dA = m->wall_area[p];
  CQ_D(cofactor_jvp)(F, dF, dcof);
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) df[a] += ua * dA * dcof[a][b] * m->act_axis[b * n + p];
}

/* Its adjoint given gf = dL/df: gF += dL/dF (through cof), *gua += dL/d(ua), *gdA += dL/d(dA). */
CQ_HD void CQ_D(nanson_force_adj)(const cq_params* m, int p, int n, const cq_real F[D][D], cq_real ua,
                                  const cq_real gf[D], cq_real gF[D][D], cq_real* gua, cq_real* gdA) {
  cq_real cof[D][D], gcof[D][D], gfN = 0, dA = m->wall_area[p];
  CQ_D(cofactor)(F, cof);
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      cq_real N = m->act_axis[b * n + p];
      gfN += gf[a] * cof[a][b] * N;
      gcof[a][b] = ua * dA * gf[a] * N;
    }
  *gua += gfN * dA;
  *gdA += gfN * ua;
  CQ_D(cofactor_vjp)(F, gcof, gF);
}

/* The offset as wall_dipole takes it: at most CQI_WALL_OFFSET_MAX cells long. The first-order shift is good while
 * the offset is small against the kernel; a coarse mesh's element centroids lie 0.4 cells from their faces, and
 * at that length the 2D finger in grid fluid at the real moduli blew up at its 8th step (tests/
 * examples_finger_spec.lua); a lattice at 2 particles per cell and axis sits within a quarter cell. */
CQ_HD void CQ_D(wall_offset_clamp)(const cq_substep* c, cq_real d[D]) {
  cq_real len2 = 0, lim = (cq_real)CQI_WALL_OFFSET_MAX * c->dx;
  for (int a = 0; a < D; a++) len2 += d[a] * d[a];
  if (len2 > lim * lim) {
    cq_real sc = lim / cq_sqrt(len2);
    for (int a = 0; a < D; a++) d[a] *= sc;
  }
}

/* What wall_dipole and its adjoint share: -1 when particle p has no offset; else its (clamped) offset d, the F its
 * pressure takes (Fw = F_w where the wall term has one, else F), Nanson's force fp at it and Fd = F d, and whether
 * that F is F_w (1) or the particle's own (0). */
CQ_HD int CQ_D(wall_dipole_load)(const cq_substep* c, const cq_params* m, int p, int n, const cq_real F[D][D],
                                 cq_real ua, cq_real d[D], cq_real Fs[D][D], cq_real fp[D], cq_real Fd[D]) {
  cq_real any = 0;
  for (int a = 0; a < D; a++) any += cq_fabs(d[a] = m->wall_offset[a * n + p]);
  if (any == 0) return -1;
  CQ_D(wall_offset_clamp)(c, d);
  int own_w = CQ_D(wall_F_at)(c, p, n, Fs);
  if (!own_w)
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) Fs[a][b] = F[a][b];
  for (int a = 0; a < D; a++) fp[a] = Fd[a] = 0;
  CQ_D(nanson_force)(m, p, n, Fs, ua, fp);
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) Fd[a] += Fs[a][b] * d[b];
  return own_w;
}

/* The consistent load of a wall's pressure. The pressure acts on the wall's surface, not at the particle: the grid
 * nodes' share of it is f w_i(x_s), x_s the surface the particle carries, which its reference offset d = wall_offset
 * (the area-weighted centroid of that surface less the particle's reference position) places at x_p + F d. To first
 * order in the offset, w_i(x_s) = w_i(x_p) + grad w_i . (F d), and with MLS-MPM's grad w_i = (4/dx^2) w_i (x_i - x_p)
 * the second term is a matrix on P2G's affine term: G += (4/dx^2) dt f (F d)^T, here its symmetric part (no net
 * force and no net torque: a closed cavity's pressure keeps exerting none, chamber.h's correction below; the
 * offset lies along the normal to within the wall's curvature, so f (F d)^T is nearly symmetric; a lattice's first
 * particle layer lies about half a spacing inside the surface, and the load taken at the particles left a thick
 * sphere 8 % stiff at 6.7 particles across its wall: docs/results/history.md, the forty-second session); adds
 * nothing when the particle has no offset. The pressure force f is Nanson's at F (F_w where the wall term
 * has one). With implicit.pressure = "implicit" (the force inside the solve) the pressure still acts at the
 * particles: this term, taken at the substep's start, made large implicit steps unstable, and is not yet linearised
 * in the solve. */
CQ_HD void CQ_D(wall_dipole)(const cq_substep* c, const cq_params* m, int p, int n, const cq_real F[D][D],
                             cq_real ua, cq_real G[D][D]) {
  cq_real d[D], Fs[D][D], fp[D], Fd[D];
  if (CQ_D(wall_dipole_load)(c, m, p, n, F, ua, d, Fs, fp, Fd) < 0) return;
  cq_real k = 4 * c->inv_dx * c->inv_dx * c->dt;
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) G[a][b] += (cq_real)0.5 * k * (fp[a] * Fd[b] + fp[b] * Fd[a]); /* symmetric part */
}

/* Its adjoint given gG = dL/dG: into gF (or the wall's F_w), *gua and *gdA through Nanson's force. */
CQ_HD void CQ_D(wall_dipole_adj)(const cq_substep* c, const cq_params* m, int p, int n, const cq_real F[D][D],
                                 cq_real ua, const cq_real gG[D][D], cq_real gF[D][D], cq_real* gua, cq_real* gdA) {
  cq_real d[D], Fs[D][D], fp[D], Fd[D], gfp[D] = {0}, gFd[D] = {0}, gFs[D][D];
  int own_w = CQ_D(wall_dipole_load)(c, m, p, n, F, ua, d, Fs, fp, Fd);
  if (own_w < 0) return;
  cq_real k = 4 * c->inv_dx * c->inv_dx * c->dt;
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) { /* through the symmetric part: gG -> (gG + gG^T) / 2 */
      cq_real gs = (cq_real)0.5 * k * (gG[a][b] + gG[b][a]);
      gfp[a] += gs * Fd[b];
      gFd[b] += gs * fp[a];
    }
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) gFs[a][b] = gFd[a] * d[b];
  CQ_D(nanson_force_adj)(m, p, n, Fs, ua, gfp, gFs, gua, gdA);
  if (own_w)
    CQ_D(wall_F_adj)(c, p, n, gFs);
  else
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) gF[a][b] += gFs[a][b];
}

/* The actuator of particle p when it is a cavity wall, else -1. */
CQ_HD int CQ_D(cavity_of)(const cq_params* m, int p) {
  int a = m->act_id[p];
  return a >= 0 && m->act_kind[a] == CQ_ACT_CAVITY ? a : -1;
}

/* Particle p's position, F and Nanson force under the control's actuation u. */
CQ_HD void CQ_D(cavity_load)(const cq_particles* s, const cq_params* m, const cq_real* u, int p, int a, cq_real x[D],
                             cq_real F[D][D], cq_real f[D]) {
  int n = s->n;
  for (int i = 0; i < D; i++) {
    x[i] = s->x[i * n + p];
    f[i] = 0;
    for (int j = 0; j < D; j++) F[i][j] = s->F[(i * D + j) * n + p];
  }
  CQ_D(nanson_force)(m, p, n, F, u[a] * m->act_w[p], f);
}

/* r x f: 3 components in 3D, 1 (the z component) in 2D. */
CQ_HD void CQ_D(cavity_cross)(const cq_real r[D], const cq_real f[D], cq_real out[3]) {
  if (D == 2) {
    out[0] = r[0] * f[1] - r[1] * f[0];
    return;
  }
  out[0] = r[1] * f[D - 1] - r[D - 1] * f[1];
  out[1] = r[D - 1] * f[0] - r[0] * f[D - 1];
  out[2] = r[0] * f[1] - r[1] * f[0];
}

/* b x r for a rotation vector b (3D) or rate b[0] about z (2D). */
CQ_HD void CQ_D(cavity_spin)(const cq_real b[3], const cq_real r[D], cq_real out[D]) {
  if (D == 2) {
    out[0] = -b[0] * r[1];
    out[D - 1] = b[0] * r[0];
    return;
  }
  cq_real t[3];
  CQ_D(cavity_cross)(b, r, t);
  for (int i = 0; i < D; i++) out[i] = t[i];
}

/* Adds particle p's terms to its cavity's sums (acc = the sums of that actuator). */
CQ_HD void CQ_D(cavity_add)(const cq_particles* s, const cq_params* m, const cq_real* u, int p, int a,
                            cqi_cavity_sums* acc) {
  cq_real x[D], F[D][D], f[D], xf[3] = {0, 0, 0};
  CQ_D(cavity_load)(s, m, u, p, a, x, F, f);
  cq_real dA = m->wall_area[p];
  CQ_D(cavity_cross)(x, f, xf);
  acc->S0 += dA;
  for (int i = 0; i < D; i++) {
    acc->S1[i] += dA * x[i];
    acc->F[i] += f[i];
    for (int j = 0; j < D; j++) acc->S2[i * D + j] += dA * x[i] * x[j];
  }
  for (int r = 0; r < (D == 3 ? 3 : 1); r++) acc->M[r] += xf[r];
}

/* I^-1 y for the walls' (symmetric) inertia I (3x3, or 1x1 in 2D). A cavity whose walls lie on a line (I singular)
 * gets no torque correction: returns 0 then. */
CQ_HD int CQ_D(cavity_inertia_solve)(const cq_real I[9], const cq_real y[3], cq_real out[3]) {
  if (D == 2) {
    out[0] = I[0] > 0 ? y[0] / I[0] : 0;
    return I[0] > 0;
  }
  cq_real c0 = I[4] * I[8] - I[5] * I[7], c1 = I[5] * I[6] - I[3] * I[8], c2 = I[3] * I[7] - I[4] * I[6];
  cq_real det = I[0] * c0 + I[1] * c1 + I[2] * c2, tr = I[0] + I[4] + I[8];
  if (!(det > (cq_real)1e-9 * tr * tr * tr)) {
    out[0] = out[1] = out[2] = 0;
    return 0;
  }
  cq_real inv[9] = {c0, I[2] * I[7] - I[1] * I[8], I[1] * I[5] - I[2] * I[4],
                    c1, I[0] * I[8] - I[2] * I[6], I[2] * I[3] - I[0] * I[5],
                    c2, I[1] * I[6] - I[0] * I[7], I[0] * I[4] - I[1] * I[3]};
  for (int i = 0; i < 3; i++) out[i] = (inv[3 * i] * y[0] + inv[3 * i + 1] * y[1] + inv[3 * i + 2] * y[2]) / det;
  return 1;
}

/* The walls' inertia about c: I = tr(S2c) Id - S2c (3D) or tr(S2c) (2D), S2c = S2 - S0 c c^T. */
CQ_HD void CQ_D(cavity_inertia)(const cqi_cavity_sums* sm, const cq_real c[D], cq_real I[9]) {
  cq_real S2c[D][D], tr = 0;
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) S2c[i][j] = sm->S2[i * D + j] - sm->S0 * c[i] * c[j];
  for (int i = 0; i < D; i++) tr += S2c[i][i];
  for (int i = 0; i < 9; i++) I[i] = 0;
  if (D == 2)
    I[0] = tr;
  else
    for (int i = 0; i < D; i++)
      for (int j = 0; j < D; j++) I[i * 3 + j] = (i == j ? tr : 0) - S2c[i][j];
}

/* The correction's coefficients from a cavity's sums (no walls with area: none). */
CQ_HD void CQ_D(cavity_coef)(const cqi_cavity_sums* sm, cqi_cavity_coef* k) {
  for (int i = 0; i < 3; i++) k->a[i] = k->b[i] = k->c[i] = 0;
  if (!(sm->S0 > 0)) return;
  cq_real cF[3] = {0, 0, 0}, Mc[3], I[9], b[3] = {0, 0, 0};
  for (int i = 0; i < D; i++) {
    k->c[i] = sm->S1[i] / sm->S0;
    k->a[i] = -sm->F[i] / sm->S0;
  }
  CQ_D(cavity_cross)(k->c, sm->F, cF);
  for (int r = 0; r < 3; r++) Mc[r] = sm->M[r] - cF[r];
  CQ_D(cavity_inertia)(sm, k->c, I);
  CQ_D(cavity_inertia_solve)(I, Mc, b);
  for (int r = 0; r < 3; r++) k->b[r] = -b[r];
}

/* Adds particle p's correction dA (a + b x (x - c)) into f (component-major [D][n]); coefs by actuator. */
CQ_HD void CQ_D(cavity_force)(const cq_particles* s, const cq_params* m, int p, const cqi_cavity_coef* coefs,
                              cq_real* f) {
  int a = CQ_D(cavity_of)(m, p), n = s->n;
  if (a < 0) return;
  const cqi_cavity_coef* k = &coefs[a];
  cq_real r[D], br[D], dA = m->wall_area[p];
  for (int i = 0; i < D; i++) r[i] = s->x[i * n + p] - k->c[i];
  CQ_D(cavity_spin)(k->b, r, br);
  for (int i = 0; i < D; i++) f[i * n + p] += dA * (k->a[i] + br[i]);
}

/* ---- Adjoint. gf = dL/d(the corrections) [D][n]. Three passes, as the forward's: (1) per particle, the direct
 * terms of f_c = dA (a + b x r) (dL/dx through r, dL/d(dA)) into the particle's gradients, and into the cavity's
 * coefficient gradients gk (sums: ga = sum dA g, gb = sum dA r x g, gc = -sum dA g x b, as r = x - c);
 * (2) per cavity, gk through the coefficients to the sums' gradients (cavity_coef_adj); (3) per particle, the sums'
 * gradients through its terms into x, F, u act_w and dA (cavity_add_adj). */

/* Pass (1) for particle p of cavity a: adds to gk (that cavity's coefficient gradients, as a cqi_cavity_coef) and
 * into *gx[D], *gdA. */
CQ_HD void CQ_D(cavity_force_adj)(const cq_particles* s, const cq_params* m, int p, const cqi_cavity_coef* k,
                                  const cq_real* gf, cqi_cavity_coef* gk, cq_real gx[D], cq_real* gdA) {
  int n = s->n;
  cq_real r[D], g[D], br[D], rg[3] = {0, 0, 0}, gb[D], dA = m->wall_area[p];
  for (int i = 0; i < D; i++) {
    r[i] = s->x[i * n + p] - k->c[i];
    g[i] = gf[i * n + p];
  }
  CQ_D(cavity_spin)(k->b, r, br);
  CQ_D(cavity_cross)(r, g, rg);
  /* g . (b x r) = r . (g x b): d/dr = g x b (2D: b (g_y, -g_x)) */
  if (D == 2) {
    gb[0] = k->b[0] * g[1];
    gb[D - 1] = -k->b[0] * g[0];
  } else {
    cq_real t[3];
    CQ_D(cavity_cross)(g, k->b, t);
    for (int i = 0; i < D; i++) gb[i] = t[i];
  }
  cq_real t = 0;
  for (int i = 0; i < D; i++) {
    t += g[i] * (k->a[i] + br[i]);
    gk->a[i] += dA * g[i];
    gk->c[i] -= dA * gb[i];
    gx[i] += dA * gb[i];
  }
  for (int q = 0; q < (D == 3 ? 3 : 1); q++) gk->b[q] += dA * rg[q];
  *gdA += t;
}

/* Pass (2): the coefficient gradients gk of a cavity to its sums' gradients gs (written). */
CQ_HD void CQ_D(cavity_coef_adj)(const cqi_cavity_sums* sm, const cqi_cavity_coef* k, const cqi_cavity_coef* gk,
                                 cqi_cavity_sums* gs) {
  cq_real* z = &gs->S0;
  for (int i = 0; i < CQI_CAVITY_SUMS; i++) z[i] = 0;
  if (!(sm->S0 > 0)) return;
  const int R = D == 3 ? 3 : 1;
  cq_real I[9], lam[3] = {0, 0, 0}, gc[3] = {0, 0, 0};
  for (int i = 0; i < D; i++) gc[i] = gk->c[i];
  CQ_D(cavity_inertia)(sm, k->c, I);
  /* b = -I^-1 M_c: lam = -I^-1 gb = dL/dM_c; dL/dI = lam b^T (0 when I is singular: b was set to 0) */
  cq_real mgb[3] = {-gk->b[0], -gk->b[1], -gk->b[2]};
  int ok = CQ_D(cavity_inertia_solve)(I, mgb, lam);
  cq_real gI[9] = {0};
  if (ok)
    for (int i = 0; i < R; i++)
      for (int j = 0; j < R; j++) gI[i * 3 + j] = lam[i] * k->b[j];
  /* a = -F / S0 */
  for (int i = 0; i < D; i++) {
    gs->F[i] += -gk->a[i] / sm->S0;
    gs->S0 += gk->a[i] * sm->F[i] / (sm->S0 * sm->S0);
  }
  /* M_c = M - c x F */
  for (int r = 0; r < R; r++) gs->M[r] += lam[r];
  if (D == 2) { /* (c x F)_z = c_x F_y - c_y F_x */
    gc[0] -= lam[0] * sm->F[1];
    gc[1] += lam[0] * sm->F[0];
    gs->F[0] += lam[0] * k->c[1];
    gs->F[1] -= lam[0] * k->c[0];
  } else { /* d(lam . (c x F)) = dc . (F x lam) + dF . (lam x c) */
    cq_real Fl[3], lc[3];
    CQ_D(cavity_cross)(sm->F, lam, Fl);
    CQ_D(cavity_cross)(lam, k->c, lc);
    for (int i = 0; i < 3; i++) gc[i] -= Fl[i], gs->F[i] -= lc[i];
  }
  /* I = tr(S2c) Id - S2c (3D), tr(S2c) (2D): gS2c = tr(gI) Id - gI, or gI Id */
  cq_real gS2c[D][D], trg = D == 2 ? gI[0] : gI[0] + gI[4] + gI[8];
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) gS2c[i][j] = (i == j ? trg : 0) - (D == 2 ? 0 : gI[i * 3 + j]);
  /* S2c = S2 - S0 c c^T */
  for (int i = 0; i < D; i++)
    for (int j = 0; j < D; j++) {
      gs->S2[i * D + j] += gS2c[i][j];
      gs->S0 -= gS2c[i][j] * k->c[i] * k->c[j];
      gc[i] -= sm->S0 * (gS2c[i][j] + gS2c[j][i]) * k->c[j];
    }
  /* c = S1 / S0 */
  for (int i = 0; i < D; i++) {
    gs->S1[i] += gc[i] / sm->S0;
    gs->S0 -= gc[i] * sm->S1[i] / (sm->S0 * sm->S0);
  }
}

/* Pass (3) for particle p of cavity a, under the sums' gradients gs: adds dL/dx into gx, dL/dF into gF, dL/d(ua)
 * into *gua and dL/d(dA) into *gdA. */
CQ_HD void CQ_D(cavity_add_adj)(const cq_particles* s, const cq_params* m, const cq_real* u, int p, int a,
                                const cqi_cavity_sums* gs, cq_real gx[D], cq_real gF[D][D], cq_real* gua,
                                cq_real* gdA) {
  cq_real x[D], F[D][D], f[D], gf[D], dA = m->wall_area[p];
  CQ_D(cavity_load)(s, m, u, p, a, x, F, f);
  /* S0 += dA, S1 += dA x, S2 += dA x x^T, F += f, M += x x f */
  cq_real t = gs->S0;
  for (int i = 0; i < D; i++) {
    t += gs->S1[i] * x[i];
    gx[i] += dA * gs->S1[i];
    gf[i] = gs->F[i];
    for (int j = 0; j < D; j++) {
      t += gs->S2[i * D + j] * x[i] * x[j];
      gx[i] += dA * (gs->S2[i * D + j] + gs->S2[j * D + i]) * x[j];
    }
  }
  if (D == 2) { /* M_z = x_x f_y - x_y f_x */
    gx[0] += gs->M[0] * f[1], gx[1] -= gs->M[0] * f[0];
    gf[0] -= gs->M[0] * x[1], gf[1] += gs->M[0] * x[0];
  } else { /* d(gM . (x x f)) = dx . (f x gM) + df . (gM x x) */
    cq_real fg[3], gxx[3], xx[3], ff[3];
    for (int i = 0; i < 3; i++) xx[i] = x[i < D ? i : 0], ff[i] = f[i < D ? i : 0];
    CQ_D(cavity_cross)(ff, gs->M, fg);
    CQ_D(cavity_cross)(gs->M, xx, gxx);
    for (int i = 0; i < D; i++) gx[i] += fg[i], gf[i] += gxx[i];
  }
  *gdA += t;
  CQ_D(nanson_force_adj)(m, p, s->n, F, u[a] * m->act_w[p], gf, gF, gua, gdA);
}

/* The per-particle bodies of passes (1) and (3) that both backends run, each thread owning particle p (not in a
 * cavity: nothing). Pass (1): the coefficient gradients of p's cavity added to gk (a sum over the cavity: the caller
 * orders or atomically adds it), dL/dx and dL/d(dA) to g0 and gp. Pass (3): p's own gradients under its cavity's
 * sums' gradients gsums[a] into g0 (x, F), gp (wall_area, act_w) and gact[p]. */
CQ_HD void CQ_D(cavity_particle_force_adj)(const cq_particles* s, const cq_params* m, int p, int a,
                                           const cqi_cavity_coef* k, const cq_real* gf, cqi_cavity_coef* gk,
                                           const cq_particles* g0, const cq_param_grads* gp) {
  cq_real gx[D] = {0}, gdA = 0;
  CQ_D(cavity_force_adj)(s, m, p, k, gf, gk, gx, &gdA);
  for (int i = 0; i < D; i++) g0->x[i * s->n + p] += gx[i];
  gp->wall_area[p] += gdA;
}

CQ_HD void CQ_D(cavity_particle_add_adj)(const cq_particles* s, const cq_params* m, const cq_real* u, int p,
                                         const cqi_cavity_sums* gsums, const cq_particles* g0, const cq_param_grads* gp,
                                         cq_real* gact) {
  int a = CQ_D(cavity_of)(m, p), n = s->n;
  if (a < 0) return;
  cq_real gx[D] = {0}, gF[D][D] = {{0}}, gua = 0, gdA = 0;
  CQ_D(cavity_add_adj)(s, m, u, p, a, &gsums[a], gx, gF, &gua, &gdA);
  for (int i = 0; i < D; i++) {
    g0->x[i * n + p] += gx[i];
    for (int j = 0; j < D; j++) g0->F[(i * D + j) * n + p] += gF[i][j];
  }
  gp->wall_area[p] += gdA;
  gp->act_w[p] += gua * u[a];
  gact[p] += gua * m->act_w[p];
}

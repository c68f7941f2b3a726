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

/* Where a wall's pressure acts. The pressure acts on the wall's surface, not at the particle: a lattice's first
 * particle layer lies about half a spacing inside the cavity's surface, and the load taken at the particles left a
 * thick sphere 8 % stiff at 6.7 particles across its wall (docs/results/history.md, the forty-second and
 * forty-third sessions). Each wall particle carries its reference offset d = wall_offset to the area-weighted
 * centroid of the surface it carries; its Nanson force f acts at y = x_p + s, s = F d (F_w where the wall term has
 * one) taken at most CQI_WALL_OFFSET_MAX cells long. P2G spreads the impulse dt f over the particle's own stencil
 * with its B-spline weights tilted towards y: per axis p_k = w_k exp(lambda u_k) / Z (u_k the node's offset in
 * cells), lambda such that sum_k p_k u_k = s / dx. The weights stay positive and near the mass's (w_k), the force
 * is whole and its first moment is y's; at s = 0 they are w_k. (Two other ways were tried: the first-order shift
 * onto P2G's affine term, the tilt's linearisation 1 + 4 u s / dx, gives nodes behind the particle negative weights
 * and blew up the coarse 2D finger in grid water; the B-spline weights at y itself put the load on nodes the
 * particle's mass barely reaches, and a tube at 5 ms implicit steps settled at half its inflation.) The backends run
 * it as a pass of its own (the CPU on one thread over the walls' list, in order; CUDA with atomics). With
 * implicit.pressure = "implicit" (the force inside the solve) the pressure still acts at the particles. */

/* Particle p's offset d (wall_offset) when the pressure acts at the surface (m->wall_shift_max > 0); 0 when it has
 * none or the pressure acts at the particles. */
CQ_HD int CQ_D(wall_offset_of)(const cq_params* m, int p, int n, cq_real d[D]) {
  int any = 0;
  for (int a = 0; a < D; a++) any |= (d[a] = m->wall_offset[a * n + p]) != 0;
  return any && m->wall_shift_max > 0;
}

/* Whether particle p (a chamber or cavity wall) has its pressure act at its surface point in this substep (the
 * walls' list is set: engine/terms/wall.c). */
CQ_HD int CQ_D(wall_surface_has)(const cq_substep* c, const cq_params* m, int p, int n) {
  cq_real d[D];
  return c->wall_nsurf > 0 && !c->implicit_pressure && CQ_D(wall_offset_of)(m, p, n, d);
}

/* The shift s = r, taken at most m->wall_shift_max long. */
CQ_HD void CQ_D(wall_shift)(const cq_params* m, const cq_real r[D], cq_real s[D]) {
  cq_real len2 = 0, lim = m->wall_shift_max;
  for (int a = 0; a < D; a++) len2 += r[a] * r[a];
  cq_real sc = len2 > lim * lim ? lim / cq_sqrt(len2) : 1;
  for (int a = 0; a < D; a++) s[a] = sc * r[a];
}

/* Its adjoint: gr += ds/dr^T gs (the radial projection lim/|r| (I - u u^T) where it clamps). */
CQ_HD void CQ_D(wall_shift_adj)(const cq_params* m, const cq_real r[D], const cq_real gs[D], cq_real gr[D]) {
  cq_real len2 = 0, lim = m->wall_shift_max;
  for (int a = 0; a < D; a++) len2 += r[a] * r[a];
  if (!(len2 > lim * lim)) {
    for (int a = 0; a < D; a++) gr[a] += gs[a];
    return;
  }
  cq_real len = cq_sqrt(len2), ug = 0;
  for (int a = 0; a < D; a++) ug += r[a] * gs[a];
  ug /= len;
  for (int a = 0; a < D; a++) gr[a] += lim / len * (gs[a] - ug * r[a] / len);
}

/* The shift of particle p's pressure to the surface it carries, s = shift(F d) (r = F d); s = 0 when it has no
 * offset (returns 0). */
CQ_HD int CQ_D(wall_surface_shift)(const cq_params* m, int p, int n, const cq_real F[D][D], cq_real d[D],
                                   cq_real r[D], cq_real s[D]) {
  int on = CQ_D(wall_offset_of)(m, p, n, d);
  for (int a = 0; a < D; a++) {
    r[a] = 0;
    for (int b = 0; b < D; b++) r[a] += F[a][b] * d[b];
  }
  CQ_D(wall_shift)(m, r, s);
  for (int a = 0; a < D; a++) s[a] = on ? s[a] : 0;
  return on;
}

/* Its adjoint given gs = dL/ds: into gF. */
CQ_HD void CQ_D(wall_surface_shift_adj)(const cq_params* m, int on, const cq_real d[D], const cq_real r[D],
                                        const cq_real gs[D], cq_real gF[D][D]) {
  cq_real gr[D] = {0};
  if (!on) return;
  CQ_D(wall_shift_adj)(m, r, gs, gr);
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) gF[a][b] += gr[a] * d[b];
}

/* One axis of the tilt: the weights w[3] at node offsets u_k = k - fx (cells) tilted to p_k = w_k q_k,
 * q_k = exp(lambda u_k) / Z = r^k / sum_j w_j r^j (r = exp(lambda)), with mean sum_k p_k u_k = t (|t| < 1/2: within
 * the nodes' span). The mean's condition sum_k w_k r^k (u_k - t) = 0 is a quadratic a r^2 + b r + c = 0 with a >= 0 >= c
 * (u_0 < t < u_2), whose one positive root is taken in the form without cancellation. */
CQ_HD void CQ_D(tilt_axis)(const cq_real w[3], cq_real fx, cq_real t, cq_real q[3]) {
  cq_real a = w[2] * (2 - fx - t), b = w[1] * (1 - fx - t), c = w[0] * (-fx - t);
  cq_real root = cq_sqrt(b * b - 4 * a * c), r;
  if (b > 0)
    r = -2 * c / (b + root);
  else
    r = (root - b) / (2 * a);
  q[0] = 1, q[1] = r, q[2] = r * r;
  cq_real z = w[0] + w[1] * r + w[2] * r * r;
  for (int k = 0; k < 3; k++) q[k] /= z;
}

/* The F a wall particle's pressure takes: Fs = its F_w where the wall term has one (returns 1; wall.h), else its own
 * F (returns 0). pressure_F_adj hands dL/dFs back the same way: to the wall term's dL/dF_w, or added to gF. */
CQ_HD int CQ_D(pressure_F)(const cq_substep* c, int p, int n, const cq_real F[D][D], cq_real Fs[D][D]) {
  int own_w = CQ_D(wall_F_at)(c, p, n, Fs);
  if (!own_w)
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) Fs[a][b] = F[a][b];
  return own_w;
}

CQ_HD void CQ_D(pressure_F_adj)(const cq_substep* c, int p, int n, int own_w, const cq_real gFs[D][D],
                                cq_real gF[D][D]) {
  if (own_w)
    CQ_D(wall_F_adj)(c, p, n, gFs);
  else
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) gF[a][b] += gFs[a][b];
}

/* What the surface pass and its adjoint share: the F the pressure takes (Fs, pressure_F), Nanson's force fp at it, the offset d, r = Fs d, the shift sft to the surface point, and the particle's stencil
 * with its weights tilted towards x + sft (st->w; the B-spline's own in w0, their exponential factors in q). Returns
 * whether Fs is F_w (1) or the particle's own F (0). */
CQ_HD int CQ_D(wall_surface_load)(const cq_substep* c, const cq_params* m, int p, int n, const cq_real x[D],
                                  const cq_real F[D][D], cq_real ua, cq_real Fs[D][D], cq_real fp[D], cq_real d[D],
                                  cq_real r[D], cq_real sft[D], CQ_D(cqi_stencil) * st, cq_real w0[D][3],
                                  cq_real q[D][3]) {
  int own_w = CQ_D(pressure_F)(c, p, n, F, Fs);
  for (int a = 0; a < D; a++) fp[a] = 0;
  CQ_D(nanson_force)(m, p, n, Fs, ua, fp);
  CQ_D(wall_surface_shift)(m, p, n, Fs, d, r, sft);
  CQ_D(stencil)(c, x, cqi_field(c, m, p), st);
  for (int a = 0; a < D; a++) {
    for (int k = 0; k < 3; k++) w0[a][k] = st->w[a][k];
    CQ_D(tilt_axis)(w0[a], st->fx[a], sft[a] * c->inv_dx, q[a]);
    for (int k = 0; k < 3; k++) st->w[a][k] = w0[a][k] * q[a][k];
  }
  return own_w;
}

/* The tilt's adjoint on one axis: given psi_k = dL/dp_k, *gxi = dL/d(the particle's coordinate) and *gt = dL/dt.
 * With a_k = q_k dw_k/dx, A = sum a_k and V = sum p_k (u_k - t)^2: dp_k = (a_k - p_k A) dx + p_k (u_k - t) dlambda,
 * and the mean's constraint gives V dlambda = dt + dx (1/dx - sum u_k a_k + t A). */
CQ_HD void CQ_D(tilt_axis_adj)(const cq_substep* c, const cq_real w0[3], const cq_real dw[3], const cq_real q[3],
                               cq_real fx, cq_real t, const cq_real psi[3], cq_real* gxi, cq_real* gt) {
  cq_real A = 0, V = 0, ua = 0, gdir = 0, glam = 0;
  for (int k = 0; k < 3; k++) {
    cq_real u = (cq_real)k - fx, pk = w0[k] * q[k], ak = q[k] * dw[k];
    A += ak;
    ua += u * ak;
    V += pk * (u - t) * (u - t);
    glam += psi[k] * pk * (u - t);
  }
  for (int k = 0; k < 3; k++) gdir += psi[k] * (q[k] * dw[k] - w0[k] * q[k] * A);
  cq_real g = V > 0 ? glam / V : 0;
  *gt = g;
  *gxi = gdir + g * (c->inv_dx - ua + t * A);
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
  cq_real x[D], F[D][D], f[D], xf[3] = {0, 0, 0}, d[D], r[D], sft[D], y[D];
  CQ_D(cavity_load)(s, m, u, p, a, x, F, f);
  cq_real dA = m->wall_area[p];
  CQ_D(wall_surface_shift)(m, p, s->n, F, d, r, sft); /* the force acts at the surface it carries (above) */
  for (int i = 0; i < D; i++) y[i] = x[i] + sft[i];
  CQ_D(cavity_cross)(y, f, xf);
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
  cq_real x[D], F[D][D], f[D], gf[D], dA = m->wall_area[p], d[D], r[D], sft[D], y[D], gy[D] = {0};
  CQ_D(cavity_load)(s, m, u, p, a, x, F, f);
  int on = CQ_D(wall_surface_shift)(m, p, s->n, F, d, r, sft);
  for (int i = 0; i < D; i++) y[i] = x[i] + sft[i];
  /* S0 += dA, S1 += dA x, S2 += dA x x^T, F += f, M += y x f (y = x + sft: where the force acts) */
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
  if (D == 2) { /* M_z = y_x f_y - y_y f_x */
    gy[0] += gs->M[0] * f[1], gy[1] -= gs->M[0] * f[0];
    gf[0] -= gs->M[0] * y[1], gf[1] += gs->M[0] * y[0];
  } else { /* d(gM . (y x f)) = dy . (f x gM) + df . (gM x y) */
    cq_real fg[3], gyy[3], yy[3], ff[3];
    for (int i = 0; i < 3; i++) yy[i] = y[i < D ? i : 0], ff[i] = f[i < D ? i : 0];
    CQ_D(cavity_cross)(ff, gs->M, fg);
    CQ_D(cavity_cross)(gs->M, yy, gyy);
    for (int i = 0; i < D; i++) gy[i] += fg[i], gf[i] += gyy[i];
  }
  for (int i = 0; i < D; i++) gx[i] += gy[i];
  CQ_D(wall_surface_shift_adj)(m, on, d, r, gy, gF);
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

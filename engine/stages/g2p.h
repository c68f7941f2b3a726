/* Grid-to-particle stage (seed 000 eqs. 8-11) and its adjoint (Appendix A.2.2: A, B, C and the G2P part of H, J),
 * per particle. Included once per dimension by kernels.h. */

/* The blow-up checks of one particle's state (registry.h, CQ_CHECKS), run on every particle after every substep:
 * the first of non-finite, inverted (J <= 0), too fast (|v| dt > dx) and outside the grid that applies, or
 * CQ_CHECK_OK. A sum of all entries is finite exactly when every entry is (barring overflow, itself a blow-up). */
CQ_HD int CQ_D(check_values)(const cq_substep* c, const cq_real x[D], const cq_real v[D], const cq_real C[D][D],
                             const cq_real F[D][D]) {
  cq_real sum = 0, speed2 = 0;
  int outside = 0;
  for (int a = 0; a < D; a++) {
    sum += x[a] + v[a];
    speed2 += v[a] * v[a];
    cq_real g = cq_cell_coord(x[a], c->dx, c->inv_dx); /* the base cell test of the next substep's stencil */
    outside |= !(g >= 0 && g < c->res[a] - 2);
    for (int b = 0; b < D; b++) sum += C[a][b] + F[a][b];
  }
  if (!isfinite(sum)) return CQ_CHECK_NONFINITE;
  if (!(CQ_D(det)(F) > 0)) return CQ_CHECK_INVERTED;
  if (speed2 * c->dt * c->dt > c->dx * c->dx) return CQ_CHECK_TOO_FAST;
  if (outside) return CQ_CHECK_OUTSIDE;
  return CQ_CHECK_OK;
}

/* check_values of particle p of s. */
CQ_HD int CQ_D(particle_check)(const cq_substep* c, const cq_particles* s, int p) {
  int n = s->n;
  cq_real x[D], v[D], C[D][D], F[D][D];
  for (int a = 0; a < D; a++) {
    x[a] = s->x[a * n + p];
    v[a] = s->v[a * n + p];
    for (int b = 0; b < D; b++) {
      C[a][b] = s->C[(a * D + b) * n + p];
      F[a][b] = s->F[(a * D + b) * n + p];
    }
  }
  return CQ_D(check_values)(c, x, v, C, F);
}

/* implicit.volume = "linear" (implicit.h): in an implicit substep, particle p's volumetric term is taken at the
 * linearised volume ratio Jl = J (1 + dt tr C), and G2P then stores F = (Jl / det F_u)^(1/D) F_u, F_u = (I + dt C) F:
 * the isochoric part of F_u with the volume the solve saw. Without that rescaling the O(|dt C|^2) by which a rotation
 * changes det F_u is seen by no solve and accumulates: on the finger of scenes/finger.lua the mean J - 1 after 30
 * substeps of 1 ms is 4.0e-6 without it and 1.7e-6 with it (docs/results/history.md). */
CQ_HD int CQ_D(implicit_linear_volume)(const cq_substep* c, const cq_params* m, int p) {
  return c->implicit_elastic && c->implicit_volume == CQ_VOLUME_LINEAR && CQ_D(particle_bulk)(m, p) > 0;
}

/* 1 + dt tr C: Jl / det F. */
CQ_HD cq_real CQ_D(linear_volume_rate)(const cq_substep* c, const cq_real Cn[D][D]) {
  cq_real tr = 0;
  for (int a = 0; a < D; a++) tr += Cn[a][a];
  return 1 + c->dt * tr;
}

/* The rescaling: Fu -> s Fu with s = (Jl / det Fu)^(1/D), Jl = det(F) (1 + dt tr C); returns s. */
CQ_HD cq_real CQ_D(linear_volume_scale)(const cq_substep* c, const cq_real F[D][D], const cq_real Cn[D][D],
                                        const cq_real Fu[D][D]) {
  return cq_pow(CQ_D(det)(F) * CQ_D(linear_volume_rate)(c, Cn) / CQ_D(det)(Fu), (cq_real)1 / D);
}

/* Its adjoint: g = dL/d(s Fu) in, dL/dFu out (in place); adds dL/dC's share (a multiple of I: *gC_diag) and dL/dF's
 * share (gF0 += ...) through Jl. With q = (g : Fu) s / (D Jl): dL/dFu = s g - q Jl Fu^-T, dL/dF += q Jl F^-T,
 * dL/dC += q det(F) dt I. */
CQ_HD void CQ_D(linear_volume_scale_adj)(const cq_substep* c, const cq_real F[D][D], const cq_real Cn[D][D],
                                         const cq_real Fu[D][D], cq_real g[D][D], cq_real gF0[D][D], cq_real* gC_diag) {
  cq_real Fi[D][D], Fui[D][D];
  cq_real J0 = CQ_D(inv_t)(F, Fi);
  cq_real Jl = J0 * CQ_D(linear_volume_rate)(c, Cn), s = cq_pow(Jl / CQ_D(inv_t)(Fu, Fui), (cq_real)1 / D);
  cq_real q = CQ_D(ddot)(g, Fu) * s / (D * Jl);
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      g[a][b] = s * g[a][b] - q * Jl * Fui[a][b];
      gF0[a][b] += q * Jl * Fi[a][b];
    }
  *gC_diag += q * J0 * c->dt;
}

/* Per-material damping (issue 62): the grid update damps every node at the world's rate (grid.h: damp); a particle
 * whose material has its own rate (the damping parameter; -1, the default: the world's for a solid, none for a
 * fluid) scales the velocity it gathers by exp(-(its rate - the world's) dt), before it moves x, C and F. Where a
 * node's particles share a rate this is that rate's damped update exactly against walls at rest other than friction
 * walls (a friction projection is not linear; a moving wall's velocity is scaled too): water in a damped world keeps
 * its velocity (the factor exp(+world's rate dt) undoes the grid's), and a solid at the world's rate gathers as
 * before, bit for bit (the factor is not applied).
 * The implicit solve's inertia (m / damp, implicit.h) is the world's too, so an implicit fluid's whole update, forces
 * included, comes out undamped. The rate has no gradient (a fixed setting, as the world's). */
CQ_HD cq_real CQ_D(damping_excess)(const cq_substep* c, const cq_params* m, int p) {
  cq_real d = m->damping[p];
  if (d < 0) d = m->material[p] == CQ_MAT_FLUID ? 0 : c->damping;
  return d - c->damping;
}

/* Its factor on the gathered velocity and C of particle p (1 where it has none). */
CQ_HD cq_real CQ_D(damping_factor)(const cq_substep* c, const cq_params* m, int p) {
  cq_real r = CQ_D(damping_excess)(c, m, p);
  return r != 0 ? cq_exp(-r * c->dt) : (cq_real)1;
}

/* Forward: gather node velocities (gv, stride D+1) into particle p and advance it in place:
 * v = sum w v_i, C = 4/dx^2 sum w v_i dpos^T, F = (I + dt C) F (then the material's projection, material.h),
 * x = x + dt v. Returns particle_check of the new state (CQ_CHECK_OK when vr.deferred_check: the caller checks).
 * vr.plain (kernel_types.h): no projection of F and no implicit volume rescaling in the block. */
CQ_HD int CQ_D(g2p_v)(const cq_substep* c, cq_particles* s, const cq_params* m, int p, const cq_real* gridv,
                      cqi_variant vr) {
  int n = s->n;
  cq_real x[D], v[D] = {0}, B[D][D] = {{0}}, F[D][D];
  for (int a = 0; a < D; a++) x[a] = s->x[a * n + p];
  CQ_D(cqi_stencil) st;
  CQ_D(stencil)(c, x, cqi_field_v(c, m, p, vr), &st);
  CQI_FOR_STENCIL(off) {
    cq_real w, gw[D], dpos[D];
    cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
    cq_real vi[D]; /* indexed loads: gathers on the vectorised path (cpu_loops.h) */
    for (int a = 0; a < D; a++) vi[a] = gridv[node * (D + 1) + a];
    for (int a = 0; a < D; a++) {
      v[a] += w * vi[a];
      for (int b = 0; b < D; b++) B[a][b] += w * vi[a] * dpos[b];
    }
  }
  cq_real kC = 4 * c->inv_dx * c->inv_dx;
  if (!vr.plain) { /* the material's own damping (the plain lanes have none: cpu_loops.h lanes_scalar) */
    cq_real e = CQ_D(damping_factor)(c, m, p);
    if (e != 1)
      for (int a = 0; a < D; a++) {
        v[a] *= e;
        for (int b = 0; b < D; b++) B[a][b] *= e;
      }
  }
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) F[a][b] = s->F[(a * D + b) * n + p];
  cq_real Cn[D][D], Fn[D][D];
  for (int a = 0; a < D; a++) {
    s->v[a * n + p] = v[a];
    x[a] += c->dt * v[a];
    s->x[a * n + p] = x[a];
    for (int b = 0; b < D; b++) {
      cq_real Fab = F[a][b];
      for (int k = 0; k < D; k++) Fab += c->dt * kC * B[a][k] * F[k][b];
      Cn[a][b] = kC * B[a][b];
      Fn[a][b] = Fab;
      s->C[(a * D + b) * n + p] = Cn[a][b];
    }
  }
  if (!vr.plain && CQ_D(implicit_linear_volume)(c, m, p)) {
    cq_real sc = CQ_D(linear_volume_scale)(c, F, Cn, Fn);
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) Fn[a][b] *= sc;
  }
  if (!vr.plain) CQ_D(material_project_F)(m, p, Fn); /* fluids: F -> J^(1/d) I */
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) s->F[(a * D + b) * n + p] = Fn[a][b];
  if (vr.deferred_check) return CQ_CHECK_OK;
  return CQ_D(check_values)(c, x, v, Cn, Fn); /* on the values still in registers */
}

CQ_HD int CQ_D(g2p)(const cq_substep* c, cq_particles* s, const cq_params* m, int p, const cq_real* gridv) {
  return CQ_D(g2p_v)(c, s, m, p, gridv, CQI_ANY);
}

/* Adjoint, first half: s is the state BEFORE the step, g1 the gradient w.r.t. the state after it. Writes dL/dF^n
 * into gF[e * stride] (e = a D + b; g0->F's own entries when gF is g0->F + p and stride n; P2G's adjoint adds to
 * them later) and gives the particle's stencil, dL/dv and dL/dC (eqs. A47, A50) and the start of dL/dx. Cnext (may
 * be NULL) is C of the state after the step; without it C^{n+1} is gathered again. */
CQ_HD void CQ_D(g2p_adj_begin_v)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                                 const cq_real* gridv, const cq_particles* g1, cq_real* gF, int stride,
                                 const cq_real* Cnext, CQ_D(cqi_stencil) * st_out, cq_real gv[D], cq_real gC[D][D],
                                 cq_real gx[D], cqi_variant vr) {
  int n = s->n;
  cq_real x[D], F[D][D], B[D][D] = {{0}};
  for (int a = 0; a < D; a++) x[a] = s->x[a * n + p];
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) F[a][b] = s->F[(a * D + b) * n + p];
  CQ_D(cqi_stencil) st;
  CQ_D(stencil)(c, x, cqi_field_v(c, m, p, vr), &st);
  *st_out = st;
  cq_real kC = 4 * c->inv_dx * c->inv_dx;
  cq_real e = vr.plain ? 1 : CQ_D(damping_factor)(c, m, p); /* the material's own damping (forward above) */
  cq_real Cn[D][D]; /* C^{n+1}, needed by dF^{n+1}/dF^n */
  if (Cnext) {
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) Cn[a][b] = Cnext[(a * D + b) * n + p];
  } else {
    CQI_FOR_STENCIL(off) {
      cq_real w, gw[D], dpos[D];
      cqi_node node = CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
      cq_real vi[D]; /* indexed loads: gathers on the vectorised path (cpu_loops.h) */
      for (int a = 0; a < D; a++) vi[a] = gridv[node * (D + 1) + a];
      for (int a = 0; a < D; a++)
        for (int b = 0; b < D; b++) B[a][b] += w * vi[a] * dpos[b];
    }
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) Cn[a][b] = kC * B[a][b] * e;
  }
  cq_real gF1[D][D];
  for (int a = 0; a < D; a++) {
    gx[a] = g1->x[a * n + p];
    gv[a] = g1->v[a * n + p] + c->dt * gx[a]; /* eq. A47 */
    for (int b = 0; b < D; b++) gF1[a][b] = g1->F[(a * D + b) * n + p];
  }
  int lin = !vr.plain && CQ_D(implicit_linear_volume)(c, m, p);
  cq_real gF0[D][D] = {{0}}, gC_diag = 0; /* the linear volume's rescaling: its shares of dL/dF^n and dL/dC^{n+1} */
  if (lin || (!vr.plain &&
              CQ_D(material_projects_F)(m, p))) { /* through the projections, back to the updated F_u = (I + dt C) F */
    cq_real Fu[D][D], Fs[D][D], sc = 1;
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) {
        cq_real t = F[a][b];
        for (int k = 0; k < D; k++) t += c->dt * Cn[a][k] * F[k][b];
        Fu[a][b] = t;
      }
    if (lin) sc = CQ_D(linear_volume_scale)(c, F, Cn, Fu);
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) Fs[a][b] = sc * Fu[a][b];
    if (CQ_D(material_projects_F)(m, p)) CQ_D(material_project_F_adj)(m, p, Fs, gF1);
    if (lin) CQ_D(linear_volume_scale_adj)(c, F, Cn, Fu, gF1, gF0, &gC_diag);
  }
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      cq_real t = g1->C[(a * D + b) * n + p] + (a == b ? gC_diag : 0);
      for (int k = 0; k < D; k++) t += c->dt * gF1[a][k] * F[b][k]; /* eq. A50 */
      gC[a][b] = t;
    }
  /* dL/dF^n = (I + dt C^{n+1})^T dL/dF^{n+1} (eq. A72, first term) */
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      cq_real t = gF1[a][b] + gF0[a][b];
      for (int k = 0; k < D; k++) t += c->dt * Cn[k][a] * gF1[k][b];
      gF[(a * D + b) * stride] = t;
    }
  if (e != 1) /* dL/dv^{n+1}, dL/dC^{n+1} -> dL/d(the gathered v and C) */
    for (int a = 0; a < D; a++) {
      gv[a] *= e;
      for (int b = 0; b < D; b++) gC[a][b] *= e;
    }
}

CQ_HD void CQ_D(g2p_adj_begin)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                               const cq_real* gridv, const cq_particles* g1, cq_particles* g0, const cq_real* Cnext,
                               CQ_D(cqi_stencil) * st_out, cq_real gv[D], cq_real gC[D][D], cq_real gx[D]) {
  CQ_D(g2p_adj_begin_v)(c, s, m, p, gridv, g1, g0->F + p, s->n, Cnext, st_out, gv, gC, gx, CQI_ANY);
}

/* Adjoint, per stencil node at offset off: the particle's dL/d(node velocity) (eq. A54) into out[D], and the node's
 * share of dL/dx into gx; returns the node's grid index. */
CQ_HD cqi_node CQ_D(g2p_adj_node)(const cq_substep* c, const CQ_D(cqi_stencil) * st, const int off[3],
                                  const cq_real* gridv, const cq_real gv[D], const cq_real gC[D][D], cq_real gx[D],
                                  cq_real out[D]) {
  cq_real kC = 4 * c->inv_dx * c->inv_dx;
  cq_real w, gw[D], dpos[D];
  cqi_node node = CQ_D(stencil_node)(c, st, off, &w, gw, dpos);
  cq_real vi[D]; /* indexed loads: gathers on the vectorised path (cpu_loops.h) */
  for (int a = 0; a < D; a++) vi[a] = gridv[node * (D + 1) + a];
  cq_real dv = 0; /* dL/dw through v and C */
  for (int a = 0; a < D; a++) {
    cq_real gCd = 0;
    for (int b = 0; b < D; b++) gCd += gC[a][b] * dpos[b];
    dv += vi[a] * (gv[a] + kC * gCd);
    out[a] = w * (gv[a] + kC * gCd);
  }
  for (int a = 0; a < D; a++) {
    cq_real gCtv = 0; /* dpos = x_i - x_p: -kC w gC^T v_i */
    for (int b = 0; b < D; b++) gCtv += gC[b][a] * vi[b];
    gx[a] += gw[a] * dv - kC * w * gCtv;
  }
  return node;
}

/* Adjoint: writes g0->x and g0->F (P2G's adjoint adds to them later) and scatters dL/dv_i into adj (stride D+1);
 * the caller keeps writers apart. (The CUDA backend also has a block-local variant built on g2p_adj_begin and
 * g2p_adj_node: cuda/cuda_loops.cuh.) */
CQ_HD void CQ_D(g2p_adj)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p, const cq_real* gridv,
                         const cq_particles* g1, cq_particles* g0, cq_real* adj, const cq_real* Cnext) {
  CQ_D(cqi_stencil) st;
  cq_real gv[D], gC[D][D], gx[D];
  CQ_D(g2p_adj_begin)(c, s, m, p, gridv, g1, g0, Cnext, &st, gv, gC, gx);
  CQI_FOR_STENCIL(off) {
    cq_real add[D];
    cq_real* ai = adj + CQ_D(g2p_adj_node)(c, &st, off, gridv, gv, gC, gx, add) * (D + 1);
    for (int a = 0; a < D; a++) CQ_SCATTER_ADD(&ai[a], add[a]);
  }
  for (int a = 0; a < D; a++) g0->x[a * s->n + p] = gx[a];
}

/* Adjoint without the scatter (the CPU's SIMD lanes, cpu_loops.h): what g2p_adj adds to each stencil node, node k's
 * grid index into idx[k * stride] and its D terms into add[(k * D + a) * stride], in CQI_FOR_STENCIL's order, and
 * the particle's own dL/dF^n and dL/dx (which g2p_adj writes into g0->F and g0->x) into own[e * stride], e = a D + b
 * for F, D^2 + a for x; the caller adds the terms to adj and stores own. Nothing here stores through the particle
 * index, so the lanes need no scatter instruction (AVX2 has none: with the stores the lanes ran as scalar code). */
CQ_HD void CQ_D(g2p_adj_terms)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                               const cq_real* gridv, const cq_particles* g1, const cq_real* Cnext, cqi_variant vr,
                               cqi_node* idx, cq_real* add, cq_real* own, int stride) {
  CQ_D(cqi_stencil) st;
  cq_real gv[D], gC[D][D], gx[D];
  CQ_D(g2p_adj_begin_v)(c, s, m, p, gridv, g1, own, stride, Cnext, &st, gv, gC, gx, vr);
  int k = 0;
  CQI_FOR_STENCIL(off) {
    cq_real out[D];
    idx[k * stride] = CQ_D(g2p_adj_node)(c, &st, off, gridv, gv, gC, gx, out);
    for (int a = 0; a < D; a++) add[(k * D + a) * stride] = out[a];
    k++;
  }
  for (int a = 0; a < D; a++) own[(D * D + a) * stride] = gx[a];
}

/* Chamber walls: the area of a wall particle's pressure from how its neighbours moved (term "wall", wall.c).
 * Seed 003's pneumatic load pushes each wall particle with Nanson's f = u dA cof(F) N (chamber.h). A wall particle
 * lies on a free surface: the grid nodes on the cavity's side carry only the wall's own mass, and its F_p, integrated
 * from those nodes' velocities, falls behind how the wall has actually stretched. On a thick tube inflated by 37 %
 * (2 particles per cell and axis) the first layer's F_p had stretched 19 % around the tube where the particles had
 * stretched 36 %; the load's area, and with it the inflation, fell short, and more so on finer grids (-16 / -17 /
 * -22 % at dx 2 / 1 / 0.5 mm; docs/results/history.md, the forty-first session). Here the area comes from a
 * deformation gradient F_w fitted to the positions of the particle's neighbours in a reference state (moving least
 * squares, as in corrected SPH gradients and peridynamic correspondence), over the solid particles of the reference
 * state (the robot's initial state, or the first state the world steps from; wall.c builds the pairs on the host):
 * - where the body behind the wall is at least 3 cells thick along its normal, a quadratic x_k - x_p = F d_k +
 *   H(d_k, d_k) (d_k = X_k - X_p) within rho = 2.5 h, h = V0_p^(1/D) the particle spacing, weights w_k = (1 - |d_k|^2 /
 *   rho^2)^2, and F_w = F + 2 H(o, .) the fit's gradient at the wall's surface point X_p + o (o = wall_offset);
 * - elsewhere a linear fit within rho = 1.6 h: b_k = w_k K^-1 d_k, K = sum_k w_k d_k d_k^T.
 * Either is linear in the motion: F_w = sum_k (x_k - x_p) b_k^T, the b_k constants of the loss; F_w reproduces any
 * affine motion exactly (F_w = I in the reference state). The linear fit measures F about half a spacing inside the
 * wall, where MPM's F has a boundary layer: a thick tube at 20 kPa, integrated accurately, fell -3.8 / -4.3 / -4.6 %
 * short at dx 2 / 1 / 0.5 mm (not converging); with the quadratic at the surface point +4.6 / +0.3 / -1.2 %, a sphere
 * -3.9 / -0.3 % at h 1.5 / 1.0 mm (the forty-fifth session). On walls thinner than 3 cells the quadratic fed the coarse
 * grid's own modes: the 2D finger (walls 0.8-1.2 cells) tore in grid water at 5 ms implicit steps (the forty-sixth).
 * The pressure is f = u dA cof(F_w) N wherever F_p stood (P2G, the implicit solve, the cavities' balance).
 *
 * Passes (engine/backends/passes.h): wall_deform writes F_w of each wall particle into out ([D*D][n]; every other
 * particle's F_p, so that out stands for F wherever the pressure is taken); wall_deform_adj adds dL/dx through F_w
 * (gFw = dL/dF_w, [D*D][n]) into gs->x: for particle j, a gather over the pairs in which it is the neighbour, and its
 * own pairs' -sum b_k when it is a wall; where F_w = F_p, gFw into gs->F. */
#ifndef CQ_WALL_PASSES
#define CQ_WALL_PASSES(X)                                  \
  X(wall_deform, wall_deform, PARTICLES, 1, 1, (R, out)) \
  X(wall_deform_adj, wall_deform_adj, PARTICLES, 0, 1, (CR, gFw), (GS, gs))
#endif

#ifdef D /* its bodies, per dimension (kernels.h) */

CQ_HD void CQ_D(wall_deform)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p, cq_real* out) {
  int k0 = c->wall_start[p], k1 = c->wall_start[p + 1], n = s->n;
  if (k0 == k1) { /* not a wall, or one without neighbours enough (F_w = F_p: the cavities' sums read out for all) */
    for (int e = 0; e < D * D; e++) out[e * n + p] = s->F[e * n + p];
    return;
  }
  cq_real G[D][D] = {{0}}, xp[D];
  for (int a = 0; a < D; a++) xp[a] = s->x[a * n + p];
  for (int k = k0; k < k1; k++) {
    int j = c->wall_nbr[k];
    for (int a = 0; a < D; a++) {
      cq_real d = s->x[a * n + j] - xp[a];
      for (int b = 0; b < D; b++) G[a][b] += d * c->wall_b[(long)k * D + b];
    }
  }
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) out[(a * D + b) * n + p] = G[a][b];
}

CQ_HD void CQ_D(wall_deform_adj)(const cq_substep* c, const cq_particles* s, const cq_params* m, int p,
                                 const cq_real* gFw, cq_particles* gs) {
  int n = s->n;
  cq_real gx[D] = {0};
  for (int t = c->wall_tstart[p]; t < c->wall_tstart[p + 1]; t++) { /* dF_w(q)/dx_p = e b_k^T */
    int k = c->wall_tpair[t], q = c->wall_owner[k];
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) gx[a] += gFw[(a * D + b) * n + q] * c->wall_b[(long)k * D + b];
  }
  for (int k = c->wall_start[p]; k < c->wall_start[p + 1]; k++) /* its own: dF_w(p)/dx_p = -sum_k e b_k^T */
    for (int a = 0; a < D; a++)
      for (int b = 0; b < D; b++) gx[a] -= gFw[(a * D + b) * n + p] * c->wall_b[(long)k * D + b];
  for (int a = 0; a < D; a++) gs->x[a * n + p] += gx[a];
  if (c->wall_start[p] == c->wall_start[p + 1]) /* F_w = F_p there (wall_deform) */
    for (int e = 0; e < D * D; e++) gs->F[e * n + p] += gFw[e * n + p];
}

/* Whether particle p's pressure takes F_w (a wall with neighbours), and then Fw = its F_w. */
CQ_HD int CQ_D(wall_F_at)(const cq_substep* c, int p, int n, cq_real Fw[D][D]) {
  if (!c->wall_start || c->wall_start[p + 1] == c->wall_start[p]) return 0;
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) Fw[a][b] = c->wall_F[(a * D + b) * n + p];
  return 1;
}

/* Adds gFw into particle p's dL/dF_w (c->wall_gF, its own entries). */
CQ_HD void CQ_D(wall_F_adj)(const cq_substep* c, int p, int n, const cq_real gFw[D][D]) {
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) c->wall_gF[(a * D + b) * n + p] += gFw[a][b];
}
#endif

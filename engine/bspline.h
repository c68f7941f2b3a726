/* Quadratic B-spline weights and their derivatives w.r.t. the particle position (seed 000 eqs. 4-9). Per dimension. */

/* Stencil of one particle: base node, fractional offset fx in [0.5, 1.5), weights w and dw/dx_p per axis. */
typedef struct {
  int base[D];
  cq_real fx[D];
  cq_real w[D][3];
  cq_real dw[D][3]; /* derivative of w w.r.t. the particle coordinate (includes 1/dx) */
} CQ_D(cqi_stencil);

CQ_HD void CQ_D(stencil)(const cq_substep* c, const cq_real xp[D], CQ_D(cqi_stencil) * s) {
  for (int a = 0; a < D; a++) {
    cq_real g = xp[a] * c->inv_dx;
    int b = (int)cq_floor(g - (cq_real)0.5);
    cq_real f = g - (cq_real)b;
    s->base[a] = b;
    s->fx[a] = f;
    s->w[a][0] = (cq_real)0.5 * ((cq_real)1.5 - f) * ((cq_real)1.5 - f);
    s->w[a][1] = (cq_real)0.75 - (f - 1) * (f - 1);
    s->w[a][2] = (cq_real)0.5 * (f - (cq_real)0.5) * (f - (cq_real)0.5);
    s->dw[a][0] = (f - (cq_real)1.5) * c->inv_dx;
    s->dw[a][1] = -2 * (f - 1) * c->inv_dx;
    s->dw[a][2] = (f - (cq_real)0.5) * c->inv_dx;
  }
}

/* Node o (0..3^D-1) of the stencil: its grid index, weight, weight gradient and dpos = x_i - x_p. */
CQ_HD long CQ_D(stencil_node)(const cq_substep* c, const CQ_D(cqi_stencil) * s, int o, cq_real* w, cq_real gw[D],
                              cq_real dpos[D]) {
  int off[D];
#if D == 2
  off[0] = o / 3; off[1] = o % 3;
#else
  off[0] = o / 9; off[1] = (o / 3) % 3; off[2] = o % 3;
#endif
  cq_real ww = 1;
  long idx = 0;
  for (int a = 0; a < D; a++) {
    ww *= s->w[a][off[a]];
    dpos[a] = ((cq_real)off[a] - s->fx[a]) * c->dx;
    idx += (long)(s->base[a] + off[a]) * c->stride[a];
  }
  for (int a = 0; a < D; a++) {
    cq_real g = s->dw[a][off[a]];
    for (int b = 0; b < D; b++)
      if (b != a) g *= s->w[b][off[b]];
    gw[a] = g;
  }
  *w = ww;
  return idx;
}

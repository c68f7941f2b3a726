/* Quadratic B-spline weights and their derivatives w.r.t. the particle position (seed 000 eqs. 4-9). Per dimension. */

/* Stencil of one particle: base node, fractional offset fx in [0.5, 1.5), weights w and dw/dx_p per axis. base and
 * the node indices are on the particle's velocity field's copy of the grid (kernel_types.h field_nodes): shift nodes
 * past the physical grid's (node - shift is the physical node, where the grid fluid's node vectors live). */
typedef struct {
  int base[D];
  cqi_node shift;
  cq_real fx[D];
  cq_real w[D][3];
  cq_real dw[D][3]; /* derivative of w w.r.t. the particle coordinate (includes 1/dx) */
} CQ_D(cqi_stencil);

CQ_HD void CQ_D(stencil)(const cq_substep* c, const cq_real xp[D], int field, CQ_D(cqi_stencil) * s) {
  s->shift = field ? (cqi_node)c->field_nodes : 0;
  for (int a = 0; a < D; a++) {
    int b = (int)cq_floor(cq_cell_coord(xp[a], c->dx, c->inv_dx));
    cq_real f = xp[a] * c->inv_dx - (cq_real)b; /* 0.5 <= f < 1.5, up to its rounding at an edge */
    s->base[a] = b + (a == 0 && field ? c->field_cells : 0);
    s->fx[a] = f;
    s->w[a][0] = (cq_real)0.5 * ((cq_real)1.5 - f) * ((cq_real)1.5 - f);
    s->w[a][1] = (cq_real)0.75 - (f - 1) * (f - 1);
    s->w[a][2] = (cq_real)0.5 * (f - (cq_real)0.5) * (f - (cq_real)0.5);
    s->dw[a][0] = (f - (cq_real)1.5) * c->inv_dx;
    s->dw[a][1] = -2 * (f - 1) * c->inv_dx;
    s->dw[a][2] = (f - (cq_real)0.5) * c->inv_dx;
  }
}

#ifndef CQI_FOR_STENCIL
/* Loops over the 3^D stencil nodes with off[a] = the node's offset along axis a. The bounds are constants, so the
 * compiler unrolls the loops and the offsets become constants in every node's code (no index decoding). */
#define CQI_FOR_STENCIL(off)                                                                                  \
  CQI_UNROLL for (int cqi_o0 = 0; cqi_o0 < 3; cqi_o0++) CQI_UNROLL for (int cqi_o1 = 0; cqi_o1 < 3; cqi_o1++) \
      CQI_UNROLL for (int cqi_o2 = 0; cqi_o2 < (D == 3 ? 3 : 1);                                              \
                      cqi_o2++) for (int off[3] = {cqi_o0, cqi_o1, cqi_o2}, cqi_once = 1; cqi_once; cqi_once = 0)
#endif

/* Stencil node at offset off[]: its grid index, weight, weight gradient and dpos = x_i - x_p. */
CQ_HD cqi_node CQ_D(stencil_node)(const cq_substep* c, const CQ_D(cqi_stencil) * s, const int off[3], cq_real* w,
                                  cq_real gw[D], cq_real dpos[D]) {
  cq_real ww = 1;
  cqi_node idx = 0;
  for (int a = 0; a < D; a++) {
    ww *= s->w[a][off[a]];
    dpos[a] = ((cq_real)off[a] - s->fx[a]) * c->dx;
    idx += (cqi_node)(s->base[a] + off[a]) * (cqi_node)c->stride[a];
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

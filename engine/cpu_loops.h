/* CPU backend loops for one dimension D (included twice by cpu.c): OpenMP over particles, slabs and nodes.
 * Scatters (P2G forward, G2P adjoint) run slab by slab along axis 0 in two colors: slabs of one color are at least
 * two cells apart, so their 3-node stencils never overlap and no atomics are needed. The order of additions per
 * node is fixed by the slab bucketing, so results do not depend on the thread count. */

#define CQI_SLAB 3 /* cells per slab: 2 keeps same-color slabs disjoint; 3 also tolerates a base cell off by one */

/* Bounds, blow-up and out-of-grid checks, active region and slab buckets for the current positions. */
static int CQ_D(cpu_prepare)(cq_world* w, const cq_particles* s, long substep) {
  const int n = s->n;
  const cq_real inv_dx = (cq_real)(1.0 / w->desc.dx);
  int lo[D], hi[D], bad = n;
  for (int a = 0; a < D; a++) lo[a] = 1 << 30, hi[a] = -(1 << 30);
#pragma omp parallel num_threads(w->threads > 0 ? w->threads : omp_get_max_threads())
  {
    int tlo[D], thi[D], tbad = n;
    for (int a = 0; a < D; a++) tlo[a] = 1 << 30, thi[a] = -(1 << 30);
#pragma omp for schedule(static) nowait
    for (int p = 0; p < n; p++) {
      int ok = 1;
      for (int a = 0; a < D; a++) {
        cq_real xa = s->x[a * n + p], va = s->v[a * n + p];
        if (!isfinite(xa) || !isfinite(va)) { ok = 0; break; }
        cq_real g = xa * inv_dx - (cq_real)0.5;
        if (!(g >= 0 && g < w->desc.res[a] - 2)) { ok = 0; break; }
        int b = (int)g;
        if (a == 0) w->base0[p] = b;
        if (b < tlo[a]) tlo[a] = b;
        if (b > thi[a]) thi[a] = b;
      }
      if (!ok && p < tbad) tbad = p;
    }
#pragma omp critical
    {
      for (int a = 0; a < D; a++) {
        if (tlo[a] < lo[a]) lo[a] = tlo[a];
        if (thi[a] > hi[a]) hi[a] = thi[a];
      }
      if (tbad < bad) bad = tbad;
    }
  }
  if (bad < n) {
    int p = bad, nonfinite = 0, axis = 0;
    double xs[3] = {0}, vs[3] = {0}, speed = 0;
    for (int a = 0; a < D; a++) {
      xs[a] = s->x[a * n + p];
      vs[a] = s->v[a * n + p];
      nonfinite |= !isfinite(xs[a]) || !isfinite(vs[a]);
      speed += vs[a] * vs[a];
      double g = xs[a] / w->desc.dx - 0.5;
      if (!(g >= 0 && g < w->desc.res[a] - 2)) axis = a;
    }
    long step = substep / w->desc.substeps;
    if (nonfinite || sqrt(speed) * w->dt_sub > w->desc.dx)
      return cqi_fail(w, CQ_ERR_BLOWUP,
                      "blow-up at step %ld (substep %ld): particle %d has a %s velocity (|v| dt = %g > dx = %g); "
                      "the substep %g may be above the stable limit %g, or the material is too stiff / inverted",
                      step, substep, p + 1, nonfinite ? "non-finite" : "runaway", sqrt(speed) * w->dt_sub,
                      w->desc.dx, w->dt_sub, cq_world_stable_dt(w));
    return cqi_fail(w, CQ_ERR_BLOWUP,
                    "step %ld (substep %ld): particle %d at (%g, %g, %g) is outside the grid; coordinate %d must "
                    "stay in [0.5 dx, (res[%d] - 1.5) dx) = [%g, %g) (velocity (%g, %g, %g))",
                    step, substep, p + 1, xs[0], xs[1], xs[2], axis + 1, axis + 1, 0.5 * w->desc.dx,
                    (w->desc.res[axis] - 1.5) * w->desc.dx, vs[0], vs[1], vs[2]);
  }
  for (int a = 0; a < D; a++) {
    w->lo[a] = lo[a];
    w->hi[a] = hi[a] + 2; /* last node touched */
  }
  /* counting sort of particles into slabs along axis 0 (stable: keeps index order inside a slab) */
  int ns = (hi[0] - lo[0]) / CQI_SLAB + 1;
  int32_t* start = w->slab_start;
  memset(start, 0, sizeof(int32_t) * (ns + 1));
  for (int p = 0; p < n; p++) start[(w->base0[p] - lo[0]) / CQI_SLAB + 1]++;
  for (int k = 0; k < ns; k++) start[k + 1] += start[k];
  for (int p = 0; p < n; p++) {
    int k = (w->base0[p] - lo[0]) / CQI_SLAB;
    w->perm[start[k]++] = p;
  }
  for (int k = ns; k > 0; k--) start[k] = start[k - 1];
  start[0] = 0;
  w->n_slabs = ns;
  return CQ_OK;
}

/* Calls body(i[], node) for every node of the active region, parallel over axis 0. */
#define CQI_FOR_REGION(w, c, body)                                              \
  _Pragma("omp parallel for schedule(static) num_threads(cqi_threads(w))")     \
  for (int i0 = (w)->lo[0]; i0 <= (w)->hi[0]; i0++) {                          \
    int i[3] = {i0, 0, 0};                                                      \
    for (i[1] = (w)->lo[1]; i[1] <= (w)->hi[1]; i[1]++) {                      \
      if (D == 2) {                                                             \
        long node = i[0] * (c).stride[0] + i[1] * (c).stride[1];                \
        body;                                                                   \
      } else {                                                                  \
        for (i[2] = (w)->lo[D - 1]; i[2] <= (w)->hi[D - 1]; i[2]++) {          \
          long node = i[0] * (c).stride[0] + i[1] * (c).stride[1] + i[2] * (c).stride[D - 1]; \
          body;                                                                 \
        }                                                                       \
      }                                                                         \
    }                                                                           \
  }

static void CQ_D(cpu_clear)(cq_world* w, const cq_substep* c, cq_real* g) {
  CQI_FOR_REGION(w, *c, { for (int a = 0; a <= D; a++) g[node * (D + 1) + a] = 0; })
}

/* Forward P2G over slabs of one color at a time; cache (may be NULL) receives each particle's stresses. */
static void CQ_D(cpu_p2g)(cq_world* w, const cq_substep* c, const cq_particles* s, const cq_params* m,
                          const cq_real* u, cq_real* grid, cq_real* cache) {
  for (int color = 0; color < 2; color++) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(cqi_threads(w))
    for (int k = color; k < w->n_slabs; k += 2)
      for (int j = w->slab_start[k]; j < w->slab_start[k + 1]; j++) CQ_D(p2g)(c, s, m, u, w->perm[j], grid, cache);
  }
}

static void CQ_D(cpu_grid)(cq_world* w, const cq_substep* c, const cq_real* mp, cq_real* v) {
  CQI_FOR_REGION(w, *c, { CQ_D(grid_node)(c, node, i, mp + node * (D + 1), v + node * (D + 1)); })
}

/* Extra particle forces of this substep: the control step's user force plus cable forces (eqs. 16-17), or NULL
 * when there are none. Cables run serially: they are few, and a fixed order keeps results deterministic. */
static const cq_real* CQ_D(cpu_fext)(cq_world* w, const cq_particles* s, const cq_real* u) {
  if (w->n_cables == 0 && !w->fuser) return NULL;
  size_t len = sizeof(cq_real) * (size_t)s->n * D;
  if (w->fuser) memcpy(w->fext, w->fuser, len);
  else memset(w->fext, 0, len);
  for (int k = 0; k < w->n_cables; k++)
    CQ_D(cable_forces)(&w->cables[k], w->cable_idx, s->x, s->n, u[w->cables[k].act], w->fext);
  return w->fext;
}

static int CQ_D(cpu_substep)(cq_world* w, cq_particles* s, const cq_real* u, long substep) {
  int st = CQ_D(cpu_prepare)(w, s, substep);
  if (st != CQ_OK) return st;
  cq_substep c = cqi_substep_ctx(w, substep);
  cq_params m = cqi_params(w);
  m.fext = CQ_D(cpu_fext)(w, s, u);
  CQ_D(cpu_clear)(w, &c, w->grid);
  CQ_D(cpu_p2g)(w, &c, s, &m, u, w->grid, NULL);
  CQ_D(cpu_grid)(w, &c, w->grid, w->grid); /* in place: momentum -> velocity */
#pragma omp parallel for schedule(static) num_threads(cqi_threads(w))
  for (int p = 0; p < s->n; p++) CQ_D(g2p)(&c, s, p, w->grid);
  return CQ_OK;
}

/* Adjoint of one substep: s is the state before it (unchanged), s1 the state after it (for C^{n+1}; may be NULL),
 * g1 = dL/d(state after), g0 = dL/d(state before) (overwritten). Parameter gradients, gu (per actuator),
 * gfuser (dL/d user force, may be NULL) and gauser (dL/d user stress, [D*D][n], may be NULL) are accumulated. */
static int CQ_D(cpu_substep_adj)(cq_world* w, const cq_particles* s, const cq_particles* s1, const cq_real* u,
                                 long substep, const cq_particles* g1, cq_particles* g0, cq_real* gmass,
                                 cq_real* gvol0, cq_real* gE, cq_real* gnu, double* gu, cq_real* gfuser,
                                 cq_real* gauser) {
  int st = CQ_D(cpu_prepare)(w, s, substep);
  if (st != CQ_OK) return st;
  cq_substep c = cqi_substep_ctx(w, substep);
  cq_params m = cqi_params(w);
  m.fext = CQ_D(cpu_fext)(w, s, u);
  cq_real* gfext = m.fext ? w->gfext : NULL;
  /* recompute the forward grid */
  CQ_D(cpu_clear)(w, &c, w->grid);
  CQ_D(cpu_p2g)(w, &c, s, &m, u, w->grid, w->p2g_cache);
  CQ_D(cpu_grid)(w, &c, w->grid, w->grid_v);
  /* G2P adjoint: particles -> grid (scatter, colored) */
  CQ_D(cpu_clear)(w, &c, w->grid_adj);
  for (int color = 0; color < 2; color++) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(cqi_threads(w))
    for (int k = color; k < w->n_slabs; k += 2)
      for (int j = w->slab_start[k]; j < w->slab_start[k + 1]; j++)
        CQ_D(g2p_adj)(&c, s, w->perm[j], w->grid_v, g1, g0, w->grid_adj, s1 ? s1->C : NULL);
  }
  /* grid adjoint */
  CQI_FOR_REGION(w, c, { CQ_D(grid_node_adj)(&c, node, i, w->grid + node * (D + 1), w->grid_adj + node * (D + 1)); })
  /* P2G adjoint: grid -> particles (gather) */
#pragma omp parallel for schedule(static) num_threads(cqi_threads(w))
  for (int p = 0; p < s->n; p++)
    CQ_D(p2g_adj)(&c, s, &m, u, p, w->grid_adj, g0, gmass, gvol0, gE, gnu, w->gact, gfext, gauser, w->p2g_cache);
  if (w->n_act > 0)
    for (int p = 0; p < s->n; p++) /* serial: a fixed summation order per actuator */
      if (w->act_id[p] >= 0) gu[w->act_id[p]] += w->gact[p];
  if (gfext) {
    for (int k = 0; k < w->n_cables; k++) {
      const cq_cable* cb = &w->cables[k];
      gu[cb->act] += CQ_D(cable_forces_adj)(cb, w->cable_idx, s->x, s->n, u[cb->act], gfext, g0->x);
    }
    if (gfuser)
      for (long i = 0; i < (long)s->n * D; i++) gfuser[i] += gfext[i];
  }
  return CQ_OK;
}
#undef CQI_SLAB

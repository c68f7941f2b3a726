/* CPU backend loops for one dimension D (included twice by backend_cpu.c): OpenMP over particles, slabs and nodes,
 * each calling the shared kernel bodies of kernels.h. Scatters (P2G forward, G2P adjoint) run slab by slab along
 * axis 0 in two colors: slabs of one color are at least two cells apart, so their 3-node stencils never overlap and
 * no atomics are needed. The order of additions per node is fixed by the slab bucketing, so results do not depend
 * on the thread count. */

#define CQI_SLAB 3 /* cells per slab: 2 keeps same-color slabs disjoint; 3 also tolerates a base cell off by one */
/* With two velocity fields (kernel_types.h field_nodes) the slabs are by the physical cell, so that a slab's scatters
 * into either field's copy and into the grid fluid's physical node vectors stay disjoint from its color's others. */

/* SIMD lanes: the particle loops without scatters (G2P, P2G's stress pass, the P2G adjoint) run in fixed blocks of
 * CQI_LANES particles by index; the scatters (P2G's, the G2P adjoint's) compute their node terms per chunk of
 * CQI_LANES particles of a slab and add them in slab order. A block whose particles all take the same branches runs
 * the shared body with those branches settled as constants (cqi_variant, kernel_types.h) in an `omp simd` loop,
 * which GCC vectorises across the particles; other blocks run particle by particle. Blocks are fixed by particle
 * index (chunks by the slab order), so each particle takes the same path whatever the thread count; the two paths
 * compute the same formulas and differ at most in the last bits of a logarithm (glibc's libmvec, cq_real.h).
 * CQ_SIMD=0 turns the lanes off; world:solver_stats().simd_particles counts the P2G adjoint's. */
#define CQI_LANES 16

/* The materials whose stress bodies run as lanes in this dimension, from the registry's lanes2 / lanes3 columns
 * (registry.h; each gets its own instantiation below). */
#if D == 2
#define CQI_LANES_HERE(lanes2, lanes3) lanes2
#else
#define CQI_LANES_HERE(lanes2, lanes3) lanes3
#endif
#define CQI_LANE_ENTRY(ID, name, doc, enu, lanes2, lanes3, X) CQI_IF(CQI_LANES_HERE(lanes2, lanes3))(X(ID))
#define CQI_LANE_MATERIALS(X) CQ_MATERIALS(CQI_LANE_ENTRY, X)

/* 1 when a particle of the block (indices p0.. or, with pp, pp[0..]) needs G2P's general path: a fluid (G2P projects
 * its F) or a material damped at its own rate (g2p.h damping_factor). */
static int CQ_D(lanes_scalar)(const cq_substep* c, const cq_params* m, const int32_t* pp, int p0) {
  int scalar = 0;
  for (int l = 0; l < CQI_LANES; l++) {
    int p = pp ? pp[l] : p0 + l;
    scalar |= m->material[p] == CQ_MAT_FLUID || CQ_D(damping_excess)(c, m, p) != 0;
  }
  return scalar;
}

/* The material of particles p0..p1 when they all share it and are plain, else -1. */
static int CQ_D(plain_block_material)(const cq_params* m, int p0, int p1) {
  int mat = m->material[p0];
  for (int p = p0; p < p1; p++) {
    int act = m->act_id[p];
    if (m->material[p] != mat || m->visc[p] != 0 || m->inc_p[p] != 0 || m->bulk[p] != 0 ||
        (act >= 0 && m->act_kind[act] != CQ_ACT_STRESS))
      return -1;
  }
  return mat;
}

/* The check result with the smaller key (check, particle) wins: see cqi_check. */
static inline long CQ_D(check_key)(int check, int p, int n) {
  return check == CQ_CHECK_OK ? LONG_MAX : (long)check * n + p;
}
static inline void CQ_D(check_from_key)(long key, int n, int after, cqi_check* bad) {
  bad->check = key == LONG_MAX ? CQ_CHECK_OK : (int)(key / n);
  bad->particle = key == LONG_MAX ? -1 : (int)(key % n);
  bad->after = after;
}

/* The particle checks (all, or finite and inside the grid), active region and slab buckets of the positions. */
static int CQ_D(cpu_prepare)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                             int check_all, cqi_check* bad) {
  cpu_backend* cb = (cpu_backend*)b;
  const int n = s->n;
  const cq_real inv_dx = c->inv_dx;
  int lo[D], hi[D], lo1 = 1 << 30, hi1 = -(1 << 30); /* lo1, hi1: the second velocity field's particles along axis 0 */
  long key = LONG_MAX;
  for (int a = 0; a < D; a++) lo[a] = 1 << 30, hi[a] = -(1 << 30);
#pragma omp parallel num_threads(cb->threads)
  {
    int tlo[D], thi[D], tlo1 = 1 << 30, thi1 = -(1 << 30);
    long tkey = LONG_MAX;
    for (int a = 0; a < D; a++) tlo[a] = 1 << 30, thi[a] = -(1 << 30);
#pragma omp for schedule(static) nowait
    for (int p = 0; p < n; p++) {
      int check = check_all ? CQ_D(particle_check)(c, s, p) : CQ_CHECK_OK;
      for (int a = 0; a < D && check == CQ_CHECK_OK; a++) {
        cq_real xa = s->x[a * n + p], va = s->v[a * n + p];
        if (!isfinite(xa) || !isfinite(va)) {
          check = CQ_CHECK_NONFINITE;
          break;
        }
        cq_real g = cq_cell_coord(xa, c->dx, inv_dx);
        if (!(g >= 0 && g < c->res[a] - 2)) {
          check = CQ_CHECK_OUTSIDE;
          break;
        }
        int base = (int)g;
        if (base < tlo[a]) tlo[a] = base; /* the physical cells, where the grid fluid's node vectors are too */
        if (base > thi[a]) thi[a] = base;
        if (a == 0) {
          cb->base0[p] = base; /* a slab holds both fields' particles of its cells */
          if (cqi_field(c, m, p) && base < tlo1) tlo1 = base;
          if (cqi_field(c, m, p) && base > thi1) thi1 = base;
        }
      }
      long k = CQ_D(check_key)(check, p, n);
      if (k < tkey) tkey = k;
    }
#pragma omp critical
    {
      for (int a = 0; a < D; a++) {
        if (tlo[a] < lo[a]) lo[a] = tlo[a];
        if (thi[a] > hi[a]) hi[a] = thi[a];
      }
      if (tlo1 < lo1) lo1 = tlo1;
      if (thi1 > hi1) hi1 = thi1;
      if (tkey < key) key = tkey;
    }
  }
  CQ_D(check_from_key)(key, n, 0, bad);
  if (bad->check != CQ_CHECK_OK) return CQ_OK;
  cb->region_ctx = *c;
  for (int a = 0; a < 3; a++) {
    cb->lo[a] = a < D ? lo[a] : 0;
    cb->hi[a] = a < D ? hi[a] + 2 : 0; /* last node touched */
  }
  cb->lo1 = lo1 <= hi1 ? lo1 + c->field_cells : 0; /* the second field's copy, or none (hi1 < lo1) */
  cb->hi1 = lo1 <= hi1 ? hi1 + 2 + c->field_cells : -1;
  /* counting sort of particles into slabs along axis 0 (stable: keeps index order inside a slab) */
  int ns = (hi[0] - lo[0]) / CQI_SLAB + 1;
  int32_t* start = cb->slab_start;
  memset(start, 0, sizeof(int32_t) * (ns + 1));
  for (int p = 0; p < n; p++) start[(cb->base0[p] - lo[0]) / CQI_SLAB + 1]++;
  for (int k = 0; k < ns; k++) start[k + 1] += start[k];
  for (int p = 0; p < n; p++) {
    int k = (cb->base0[p] - lo[0]) / CQI_SLAB;
    cb->perm[start[k]++] = p;
  }
  for (int k = ns; k > 0; k--) start[k] = start[k - 1];
  start[0] = 0;
  cb->n_slabs = ns;
  return CQ_OK;
}

/* Calls body for every node (flat index `node`, coordinates i[]) of the active region, parallel over axis 0. With two
 * velocity fields (kernel_types.h field_nodes) the region is two ranges along axis 0: the physical grid's nodes that
 * any particle touches (the first field's copy, and the grid fluid's node vectors), then the second field's copy
 * lo1..hi1, whose nodes have the physical coordinates i[0] - res[0]. t0 numbers the region's layers along axis 0 in
 * that order (CQI_LAYERS of them). */
#define CQI_LAYERS(cb) ((cb)->hi[0] - (cb)->lo[0] + 1 + (cb)->hi1 - (cb)->lo1 + 1)
#define CQI_LAYER_X(cb, t0) \
  ((t0) <= (cb)->hi[0] - (cb)->lo[0] ? (cb)->lo[0] + (t0) : (cb)->lo1 + (t0) - ((cb)->hi[0] - (cb)->lo[0] + 1))
#define CQI_FOR_REGION(cb, c, body) \
  _Pragma("omp parallel for schedule(static) num_threads((cb)->threads)") CQI_FOR_REGION_SERIAL(cb, c, body)

/* The same, on one thread in region order (where the node passes write each other's data, or their order counts). */
#define CQI_FOR_REGION_SERIAL(cb, c, body)                                                  \
  for (int t0 = 0; t0 < CQI_LAYERS(cb); t0++) {                                             \
    int i0 = CQI_LAYER_X(cb, t0);                                                           \
    int i[3] = {i0 >= (c).res[0] ? i0 - (c).res[0] : i0, 0, 0};                             \
    for (i[1] = (cb)->lo[1]; i[1] <= (cb)->hi[1]; i[1]++) {                                 \
      if (D == 2) {                                                                         \
        long node = i0 * (c).stride[0] + i[1] * (c).stride[1];                              \
        body;                                                                               \
      } else {                                                                              \
        for (i[2] = (cb)->lo[D - 1]; i[2] <= (cb)->hi[D - 1]; i[2]++) {                     \
          long node = i0 * (c).stride[0] + i[1] * (c).stride[1] + i[2] * (c).stride[D - 1]; \
          body;                                                                             \
        }                                                                                   \
      }                                                                                     \
    }                                                                                       \
  }

/* Calls body(p) for every particle, slabs of one color at a time (scatters without atomics). */
#define CQI_FOR_SLABS(cb, body)                                                                                       \
  for (int color = 0; color < 2; color++) {                                                                           \
    _Pragma(                                                                                                          \
        "omp parallel for schedule(dynamic, 1) num_threads((cb)->threads)") for (int k = color; k < (cb)->n_slabs;    \
                                                                                 k +=                                 \
                                                                                 2) for (int j = (cb)->slab_start[k]; \
                                                                                         j < (cb)->slab_start[k + 1]; \
                                                                                         j++) {                       \
      int p = (cb)->perm[j];                                                                                          \
      body;                                                                                                           \
    }                                                                                                                 \
  }

/* The groups' scatters (volumetric.h): slab by slab like P2G, or, where the groups are fixed (volumetric_groups =
 * "initial": a group's node can be cells away from a particle's slab), on one thread in the slabs' particle order. */
#define CQI_FOR_GROUPS(cb, c, body)                                               \
  if ((c)->vol_group_of) {                                                        \
    for (int j = (cb)->slab_start[0]; j < (cb)->slab_start[(cb)->n_slabs]; j++) { \
      int p = (cb)->perm[j];                                                      \
      body;                                                                       \
    }                                                                             \
  } else                                                                          \
    CQI_FOR_SLABS(cb, body)

/* Copies the active region of grid into packed (node by node in region order, D + 1 reals each) when store, else
 * back: the grid part of a kept P2G record (backend_cpu.c cpu_kept_io). */
static void CQ_D(cpu_region_copy)(cqi_backend* b, cq_real* grid, cq_real* packed, int store) {
  cpu_backend* cb = (cpu_backend*)b;
  cq_substep c = cb->region_ctx;
  long n1 = cb->hi[1] - cb->lo[1] + 1, n2 = D == 3 ? cb->hi[D - 1] - cb->lo[D - 1] + 1 : 1;
  CQI_FOR_REGION(cb, c, {
    long q = ((long)t0 * n1 + (i[1] - cb->lo[1])) * n2 + (D == 3 ? i[2] - cb->lo[D - 1] : 0);
    q *= D + 1;
    for (int a = 0; a <= D; a++) {
      if (store)
        packed[q + a] = grid[node * (D + 1) + a];
      else
        grid[node * (D + 1) + a] = packed[q + a];
    }
  })
}

static int CQ_D(cpu_grid_clear)(cqi_backend* b, cq_real* g) {
  cpu_backend* cb = (cpu_backend*)b;
  cq_substep c = cb->region_ctx;
  CQI_FOR_REGION(cb, c, {
    for (int a = 0; a <= D; a++) g[node * (D + 1) + a] = 0;
  })
  return CQ_OK;
}

/* P2G in two passes (p2g.h, p2g_store): each particle's stresses and momentum by blocks, as SIMD lanes where the
 * block is plain (the P2G adjoint's rule below, without the cache), then the scatter slab by slab. */
#define CQI_P2G_LANES(MAT)                                                                                         \
  static void CQ_D(p2g_store_lanes_##MAT)(const cq_substep* c, const cq_particles* s, const cq_params* m,          \
                                          const cq_ctl* ctl, cq_real* stress, cq_real* mv, int p0) {               \
    const cqi_variant v = {CQ_MAT_##MAT, 1, 0, 0};                                                                 \
    _Pragma("omp simd") for (int p = p0; p < p0 + CQI_LANES; p++) CQ_D(p2g_store)(c, s, m, ctl, p, stress, mv, v); \
  }
CQI_LANE_MATERIALS(CQI_P2G_LANES)
#undef CQI_P2G_LANES

/* A stencil row: the 3 nodes along the grid's contiguous last axis (CQI_FOR_STENCIL's innermost offset, stride 1),
 * whose D + 1 reals each lie one after another, so the scatters add a row as one vector of CQI_ROW reals (each node
 * still gets its terms particle by particle, in the same order). */
#define CQI_ROW (3 * (D + 1))

/* The scatter of CQI_LANES consecutive particles pp[0..] of a slab: their node terms as SIMD lanes
 * (p2g_terms_stored), then the additions particle by particle in slab order, the same sums in the same order as
 * p2g_scatter_stored. */
static void CQ_D(p2g_scatter_chunk)(const cq_substep* c, const cq_particles* s, const cq_params* m,
                                    const cq_real* stress, const cq_real* mv, cq_real* grid, const int32_t* pp) {
  enum { NODES = D == 2 ? 9 : 27 };
  cqi_node idx[NODES * CQI_LANES];
  cq_real add[NODES * (D + 1) * CQI_LANES];
#pragma omp simd
  for (int l = 0; l < CQI_LANES; l++) CQ_D(p2g_terms_stored)(c, s, m, pp[l], stress, mv, idx + l, add + l, CQI_LANES);
  for (int l = 0; l < CQI_LANES; l++) {
    long shift = cqi_field(c, m, pp[l]) ? c->field_nodes : 0; /* the terms' indices are the physical grid's */
    for (int r = 0; r < NODES / 3; r++) {
      cq_real t[CQI_ROW];
      for (int j = 0; j < CQI_ROW; j++) t[j] = add[(3 * r * (D + 1) + j) * CQI_LANES + l];
      cq_real* g = grid + (idx[3 * r * CQI_LANES + l] + shift) * (D + 1);
#pragma omp simd
      for (int j = 0; j < CQI_ROW; j++) g[j] += t[j];
    }
  }
}

static int CQ_D(cpu_p2g)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                         const cq_ctl* ctl, cq_real* grid, cq_real* cache) {
  cpu_backend* cb = (cpu_backend*)b;
  const int n = s->n, blocks = (n + CQI_LANES - 1) / CQI_LANES;
  cq_real* mv = cpu_scratch(&cb->p2g_mv, (long)D * n);
  cq_real* stress = cache ? cache : cpu_scratch(&cb->p2g_stress, 3L * D * D * n);
  if (!mv || !stress) return cqi_errorf(b->err, CQ_ERR_NOMEM, "out of memory for P2G's scratch (%d particles)", n);
  const int lanes = cb->simd && !ctl->stress && !ctl->force && !c->implicit_elastic;
#pragma omp parallel for schedule(static) num_threads(cb->threads)
  for (int k = 0; k < blocks; k++) {
    int p0 = k * CQI_LANES, p1 = p0 + CQI_LANES < n ? p0 + CQI_LANES : n;
    int mat = lanes && p1 - p0 == CQI_LANES ? CQ_D(plain_block_material)(m, p0, p1) : -1;
#define CQI_CASE(MAT)                                          \
  if (mat == CQ_MAT_##MAT)                                     \
    CQ_D(p2g_store_lanes_##MAT)(c, s, m, ctl, stress, mv, p0); \
  else
    CQI_LANE_MATERIALS(CQI_CASE)
#undef CQI_CASE
    for (int p = p0; p < p1; p++) CQ_D(p2g_store)(c, s, m, ctl, p, stress, mv, CQI_ANY);
  }
  for (int color = 0; color < 2; color++) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(cb->threads)
    for (int k = color; k < cb->n_slabs; k += 2) {
      int j = cb->slab_start[k], end = cb->slab_start[k + 1];
      for (; cb->simd && j + CQI_LANES <= end; j += CQI_LANES)
        CQ_D(p2g_scatter_chunk)(c, s, m, stress, mv, grid, cb->perm + j);
      for (; j < end; j++) CQ_D(p2g_scatter_stored)(c, s, m, cb->perm[j], stress, mv, grid);
    }
  }
  /* the walls' pressure at their surface points (chamber.h), on one thread in index order */
  if (!c->implicit_pressure)
    for (int k = 0; k < c->wall_nsurf; k++) CQ_D(p2g_surface)(c, s, m, ctl, c->wall_surf[k], grid);
  return CQ_OK;
}

static int CQ_D(cpu_grid_update)(cqi_backend* b, const cq_substep* c, const cq_real* mp, cq_real* v) {
  cpu_backend* cb = (cpu_backend*)b;
  CQI_FOR_REGION(cb, *c, { CQ_D(grid_node)(c, node, i, mp + node * (D + 1), v + node * (D + 1)); })
  return CQ_OK;
}

/* G2P of a block of CQI_LANES particles without fluids (no projection of F) or own damping in an explicit substep, as
 * SIMD lanes;
 * the particle checks follow, particle by particle (their branches keep GCC from vectorising them). Returns the
 * smallest check key. */
static long CQ_D(g2p_lanes)(const cq_substep* c, cq_particles* s, const cq_params* m, const cq_real* gridv, int p0) {
  const cqi_variant v = {-1, 1, 0, 1};
#pragma omp simd
  for (int p = p0; p < p0 + CQI_LANES; p++) CQ_D(g2p_v)(c, s, m, p, gridv, v);
  long key = LONG_MAX;
  for (int p = p0; p < p0 + CQI_LANES; p++) {
    long k = CQ_D(check_key)(CQ_D(particle_check)(c, s, p), p, s->n);
    if (k < key) key = k;
  }
  return key;
}

static int CQ_D(cpu_g2p)(cqi_backend* b, const cq_substep* c, cq_particles* s, const cq_params* m, const cq_real* gridv,
                         cqi_check* bad) {
  cpu_backend* cb = (cpu_backend*)b;
  const int n = s->n, blocks = (n + CQI_LANES - 1) / CQI_LANES;
  const int lanes = cb->simd && !c->implicit_elastic;
  long key = LONG_MAX;
#pragma omp parallel for schedule(static) num_threads(cb->threads) reduction(min : key)
  for (int k = 0; k < blocks; k++) {
    int p0 = k * CQI_LANES, p1 = p0 + CQI_LANES < n ? p0 + CQI_LANES : n;
    if (lanes && p1 - p0 == CQI_LANES && !CQ_D(lanes_scalar)(c, m, NULL, p0)) {
      long kb = CQ_D(g2p_lanes)(c, s, m, gridv, p0);
      if (kb < key) key = kb;
      continue;
    }
    for (int p = p0; p < p1; p++) {
      long kp = CQ_D(check_key)(CQ_D(g2p)(c, s, m, p, gridv), p, n);
      if (kp < key) key = kp;
    }
  }
  CQ_D(check_from_key)(key, n, 1, bad);
  return CQ_OK;
}

/* The G2P adjoint of CQI_LANES consecutive particles pp[0..] of a slab without fluids or own damping, in an explicit
 * substep: their
 * terms as SIMD lanes (g2p_adj_terms), then the scatter particle by particle in slab order, so that every node gets
 * the same sums in the same order as from g2p_adj, and each particle's own dL/dF and dL/dx stored. */
static void CQ_D(g2p_adj_chunk)(const cq_substep* c, const cq_particles* s, const cq_params* m, const cq_real* gridv,
                                const cq_particles* g1, cq_particles* g0, cq_real* adj, const cq_real* C1,
                                const int32_t* pp) {
  enum { NODES = D == 2 ? 9 : 27, OWN = D * D + D };
  const cqi_variant v = {-1, 1, 0, 0};
  cqi_node idx[NODES * CQI_LANES];
  cq_real add[NODES * D * CQI_LANES], own[OWN * CQI_LANES];
#pragma omp simd
  for (int l = 0; l < CQI_LANES; l++)
    CQ_D(g2p_adj_terms)(c, s, m, pp[l], gridv, g1, C1, v, idx + l, add + l, own + l, CQI_LANES);
  for (int l = 0; l < CQI_LANES; l++) {
    for (int k = 0; k < NODES; k++) {
      cq_real* ai = adj + idx[k * CQI_LANES + l] * (D + 1);
      for (int a = 0; a < D; a++) ai[a] += add[(k * D + a) * CQI_LANES + l];
    }
    for (int e = 0; e < D * D; e++) g0->F[e * s->n + pp[l]] = own[e * CQI_LANES + l];
    for (int a = 0; a < D; a++) g0->x[a * s->n + pp[l]] = own[(D * D + a) * CQI_LANES + l];
  }
}

static int CQ_D(cpu_g2p_adj)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                             const cq_real* gridv, const cq_particles* g1, cq_particles* g0, cq_real* adj,
                             const cq_real* C1) {
  cpu_backend* cb = (cpu_backend*)b;
  const int lanes = cb->simd && !c->implicit_elastic;
  for (int color = 0; color < 2; color++) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(cb->threads)
    for (int k = color; k < cb->n_slabs; k += 2) {
      int j = cb->slab_start[k], end = cb->slab_start[k + 1];
      for (; lanes && j + CQI_LANES <= end && !CQ_D(lanes_scalar)(c, m, cb->perm + j, 0); j += CQI_LANES)
        CQ_D(g2p_adj_chunk)(c, s, m, gridv, g1, g0, adj, C1, cb->perm + j);
      for (; j < end; j++) CQ_D(g2p_adj)(c, s, m, cb->perm[j], gridv, g1, g0, adj, C1);
    }
  }
  return CQ_OK;
}

static int CQ_D(cpu_grid_update_adj)(cqi_backend* b, const cq_substep* c, const cq_real* mp, cq_real* adj) {
  cpu_backend* cb = (cpu_backend*)b;
  CQI_FOR_REGION(cb, *c, { CQ_D(grid_node_adj)(c, node, i, mp + node * (D + 1), adj + node * (D + 1)); })
  return CQ_OK;
}

/* The P2G adjoint: a block whose particles share one of CQI_LANE_MATERIALS and are all plain (cqi_variant: a stress
 * actuator or none, no viscosity, incompressibility or volumetric term) runs as lanes when the substep allows it
 * (explicit, no user stresses or forces, no force gradients): with the stress cache of a recomputed P2G, or
 * evaluating the stresses itself where the memo kept the substep's P2G (no cache). */
#define CQI_P2G_ADJ_LANES(MAT)                                                                               \
  static void CQ_D(p2g_adj_lanes_##MAT)(                                                                     \
      const cq_substep* c, const cq_particles* s, const cq_params* m, const cq_ctl* ctl, const cq_real* adj, \
      cq_particles* g0, const cq_param_grads* gp, const cq_ctl_grads* gc, const cq_real* cache, int p0) {    \
    if (cache) {                                                                                             \
      const cqi_variant v = {CQ_MAT_##MAT, 1, 1, 0};                                                         \
      _Pragma("omp simd") for (int p = p0; p < p0 + CQI_LANES; p++)                                          \
          CQ_D(p2g_adj_v)(c, s, m, ctl, p, adj, g0, gp, gc, cache, v);                                       \
    } else {                                                                                                 \
      const cqi_variant v = {CQ_MAT_##MAT, 1, 0, 0};                                                         \
      _Pragma("omp simd") for (int p = p0; p < p0 + CQI_LANES; p++)                                          \
          CQ_D(p2g_adj_v)(c, s, m, ctl, p, adj, g0, gp, gc, NULL, v);                                        \
    }                                                                                                        \
  }
CQI_LANE_MATERIALS(CQI_P2G_ADJ_LANES)
#undef CQI_P2G_ADJ_LANES

static int CQ_D(cpu_p2g_adj)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                             const cq_ctl* ctl, const cq_real* adj, cq_particles* g0, const cq_param_grads* gp,
                             const cq_ctl_grads* gc, const cq_real* cache) {
  cpu_backend* cb = (cpu_backend*)b;
  const int n = s->n, blocks = (n + CQI_LANES - 1) / CQI_LANES;
  const int lanes = cb->simd && !ctl->stress && !ctl->force && !gc->force && !c->implicit_elastic;
  long simd = 0;
#pragma omp parallel for schedule(static) num_threads(cb->threads) reduction(+ : simd)
  for (int k = 0; k < blocks; k++) {
    int p0 = k * CQI_LANES, p1 = p0 + CQI_LANES < n ? p0 + CQI_LANES : n;
    int mat = lanes && p1 - p0 == CQI_LANES ? CQ_D(plain_block_material)(m, p0, p1) : -1;
#define CQI_CASE(MAT)                                                    \
  if (mat == CQ_MAT_##MAT) {                                             \
    CQ_D(p2g_adj_lanes_##MAT)(c, s, m, ctl, adj, g0, gp, gc, cache, p0); \
    simd += CQI_LANES;                                                   \
    continue;                                                            \
  }
    CQI_LANE_MATERIALS(CQI_CASE)
#undef CQI_CASE
    for (int p = p0; p < p1; p++) CQ_D(p2g_adj)(c, s, m, ctl, p, adj, g0, gp, gc, cache);
  }
  b->simd_particles += simd;
  return CQ_OK;
}

/* Cables run serially: they are few, and a fixed order keeps results deterministic. */
static int CQ_D(cpu_cable_forces)(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,
                                  cq_real* f) {
  for (int k = 0; k < v->n_cables; k++)
    CQ_D(cable_forces)(&v->cables[k], v->cable_idx, s->x, s->n, u[v->cables[k].act], f);
  return CQ_OK;
}

static int CQ_D(cpu_cable_forces_adj)(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,
                                      const cq_real* gf, cq_real* gx, double* gu) {
  for (int k = 0; k < v->n_cables; k++) {
    const cq_cable* c = &v->cables[k];
    gu[c->act] += CQ_D(cable_forces_adj)(c, v->cable_idx, s->x, s->n, u[c->act], gf, gx);
  }
  return CQ_OK;
}

/* The cavities' scratch (sums, coefficients and their gradients per actuator), allocated on first use. */
static int CQ_D(cpu_cavity_scratch)(cpu_backend* cb) {
  if (cb->cav_sums) return 1;
  int n_act = cb->base.n_act > 0 ? cb->base.n_act : 1;
  cb->cav_sums = calloc(n_act, sizeof(cqi_cavity_sums));
  cb->cav_gsums = calloc(n_act, sizeof(cqi_cavity_sums));
  cb->cav_coef = calloc(n_act, sizeof(cqi_cavity_coef));
  cb->cav_gcoef = calloc(n_act, sizeof(cqi_cavity_coef));
  return cb->cav_sums && cb->cav_gsums && cb->cav_coef && cb->cav_gcoef;
}

/* Closed cavities: each one's sums over its walls in particle order (serial: deterministic), its coefficients,
 * then every particle's correction (chamber.h). */
static int CQ_D(cpu_cavity_coefs)(cpu_backend* cb, const cqi_model_view* v, const cq_particles* s, const cq_real* u) {
  int n_act = cb->base.n_act;
  if (!CQ_D(cpu_cavity_scratch)(cb)) return cqi_errorf(cb->base.err, CQ_ERR_NOMEM, "out of memory for the cavities");
  memset(cb->cav_sums, 0, sizeof(cqi_cavity_sums) * n_act);
  for (int p = 0; p < s->n; p++) {
    int a = CQ_D(cavity_of)(&v->params, p);
    if (a >= 0) CQ_D(cavity_add)(s, &v->params, u, p, a, &cb->cav_sums[a]);
  }
  for (int a = 0; a < n_act; a++)
    if (v->params.act_kind[a] == CQ_ACT_CAVITY) CQ_D(cavity_coef)(&cb->cav_sums[a], &cb->cav_coef[a]);
  return CQ_OK;
}

static int CQ_D(cpu_cavity_forces)(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,
                                   cq_real* f) {
  cpu_backend* cb = (cpu_backend*)b;
  int st = CQ_D(cpu_cavity_coefs)(cb, v, s, u);
  if (st != CQ_OK) return st;
#pragma omp parallel for schedule(static) num_threads(cb->threads)
  for (int p = 0; p < s->n; p++) CQ_D(cavity_force)(s, &v->params, p, cb->cav_coef, f);
  return CQ_OK;
}

static int CQ_D(cpu_cavity_forces_adj)(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,
                                       const cq_real* gf, cq_particles* g0, const cq_param_grads* gp, cq_real* gact) {
  cpu_backend* cb = (cpu_backend*)b;
  const cq_params* m = &v->params;
  int n = s->n, n_act = b->n_act, st = CQ_D(cpu_cavity_coefs)(cb, v, s, u);
  if (st != CQ_OK) return st;
  memset(cb->cav_gcoef, 0, sizeof(cqi_cavity_coef) * n_act);
  for (int p = 0; p < n; p++) { /* (1) in particle order: the coefficient gradients are sums */
    int a = CQ_D(cavity_of)(m, p);
    if (a >= 0) CQ_D(cavity_particle_force_adj)(s, m, p, a, &cb->cav_coef[a], gf, &cb->cav_gcoef[a], g0, gp);
  }
  for (int a = 0; a < n_act; a++) /* (2) */
    if (m->act_kind[a] == CQ_ACT_CAVITY)
      CQ_D(cavity_coef_adj)(&cb->cav_sums[a], &cb->cav_coef[a], &cb->cav_gcoef[a], &cb->cav_gsums[a]);
#pragma omp parallel for schedule(static) num_threads(cb->threads)
  for (int p = 0; p < n; p++) CQ_D(cavity_particle_add_adj)(s, m, u, p, cb->cav_gsums, g0, gp, gact); /* (3) */
  return CQ_OK;
}

/* Grid vectors over the active region: per axis-0 layer partial sums in a fixed order, then layers in order. */
static int CQ_D(cpu_grid_axpy)(cqi_backend* b, cq_real a, const cq_real* x, cq_real* y) {
  cpu_backend* cb = (cpu_backend*)b;
  cq_substep c = cb->region_ctx;
  CQI_FOR_REGION(cb, c, {
    for (int d = 0; d < D; d++) y[node * (D + 1) + d] += a * x[node * (D + 1) + d];
  })
  return CQ_OK;
}

static int CQ_D(cpu_grid_dot)(cqi_backend* b, const cq_real* x, const cq_real* y, double* out) {
  cpu_backend* cb = (cpu_backend*)b;
  cq_substep c = cb->region_ctx;
  double* layer = cb->layer_sum;
  for (int t0 = 0; t0 < CQI_LAYERS(cb); t0++) layer[t0] = 0;
  CQI_FOR_REGION(cb, c, {
    for (int d = 0; d < D; d++) layer[t0] += (double)x[node * (D + 1) + d] * y[node * (D + 1) + d];
  })
  double sum = 0;
  for (int t0 = 0; t0 < CQI_LAYERS(cb); t0++) sum += layer[t0];
  *out = sum;
  return CQ_OK;
}
static int CQ_D(cpu_grid_norm_inf)(cqi_backend* b, const cq_real* x, double* out) {
  cpu_backend* cb = (cpu_backend*)b;
  cq_substep c = cb->region_ctx;
  double* layer = cb->layer_sum;
  for (int t0 = 0; t0 < CQI_LAYERS(cb); t0++) layer[t0] = 0;
  CQI_FOR_REGION(cb, c, {
    for (int d = 0; d < D; d++) {
      double v = cq_fabs(x[node * (D + 1) + d]);
      if (cqi_max_wins(v, layer[t0])) layer[t0] = v;
    }
  })
  double m = 0;
  for (int t0 = 0; t0 < CQI_LAYERS(cb); t0++)
    if (cqi_max_wins(layer[t0], m)) m = layer[t0];
  *out = m;
  return CQ_OK;
}
static int CQ_D(cpu_grid_sums)(cqi_backend* b, const cq_real* x, double* out) {
  cpu_backend* cb = (cpu_backend*)b;
  cq_substep c = cb->region_ctx;
  int layers = CQI_LAYERS(cb);
  double* layer = cb->layer_sum; /* slot d of layer l at [d * layers + l] */
  for (int l = 0; l < (D + 1) * layers; l++) layer[l] = 0;
  CQI_FOR_REGION(cb, c, {
    for (int d = 0; d <= D; d++) layer[d * layers + t0] += (double)x[node * (D + 1) + d];
  })
  for (int d = 0; d <= D; d++) {
    double sum = 0;
    for (int l = 0; l < layers; l++) sum += layer[d * layers + l];
    out[d] = sum;
  }
  return CQ_OK;
}
/* The direct preconditioner's assembly (implicit_factor.c): the nodes with mass numbered in region order (serial:
 * the numbering is the matrix's, the same for any thread count), then the particles' Hessian blocks scattered in
 * colored slabs as P2G (each node's blocks are written by one thread, in a fixed particle order). */
static int CQ_D(cpu_implicit_slots)(cqi_backend* b, const cq_substep* c, const cq_real* vstar, int32_t* slot,
                                    long* count) {
  cpu_backend* cb = (cpu_backend*)b;
  for (long k = 0; k < b->n_nodes; k++) slot[k] = -1;
  long n = 0;
  CQI_FOR_REGION_SERIAL(cb, *c, {
    if (vstar[node * (D + 1) + D] > 0) slot[node] = (int32_t)n++;
  })
  *count = n;
  return CQ_OK;
}

static int CQ_D(cpu_implicit_blocks)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                                     const cq_real* v, const int32_t* slot, int32_t* nbr, double* blocks) {
  cpu_backend* cb = (cpu_backend*)b;
  CQI_FOR_SLABS(cb, CQ_D(implicit_blocks)(c, s, m, p, v, slot, nbr, blocks))
  if (!c->vol_averaged || c->vol_group_of) return CQ_OK; /* fixed groups: cpu_vol_group_blocks */
  enum { CQI_VOL_NS = D == 3 ? 27 : 9 };                             /* stencil nodes */
  /* the groups' volumetric blocks: a_g scattered like P2G, then the group nodes one by one (a group writes the
   * blocks of its whole stencil, so neighbouring groups would race) */
  cq_real* a = cpu_scratch(&cb->vol_a, b->n_nodes * CQI_VOL_NS * D);
  if (!a)
    return cqi_errorf(b->err, CQ_ERR_NOMEM,
                      "implicit.precond = \"factor\": out of memory for the averaged "
                      "volumetric term's blocks (%ld nodes)",
                      b->n_nodes);
  cq_substep rc = cb->region_ctx;
  CQI_FOR_REGION(cb, rc, {
    for (int k = 0; k < CQI_VOL_NS * D; k++) a[node * CQI_VOL_NS * D + k] = 0;
  })
  CQI_FOR_GROUPS(cb, c, CQ_D(vol_gradient_sum)(c, s, m, p, a))
  CQI_FOR_REGION_SERIAL(cb, *c, CQ_D(vol_blocks_node)(c, node, c->vol_sums, a, slot, blocks));
  return CQ_OK;
}

/* The fixed groups' exact blocks (backend.h vol_group_blocks): each group's a_g (volumetric.h vol_gradient_sum's
 * rows, summed over its members) on a window of 5 nodes per axis from the smallest base node of its members, which
 * holds every member's stencil while they lie within two cells of each other (a node past it is left out), then
 * (K_g / V_g) a_g[i] a_g[k]^T into block (i, k) at offset k - i (axis a in [-4, 4] weighted 9^a). One thread, groups in
 * the order their first member comes: the same sums for any thread count. */
static int CQ_D(cpu_vol_group_blocks)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                                      const int32_t* slot, double* blocks) {
  enum { W = 5, NW = D == 3 ? W * W * W : W * W, WIDE = D == 3 ? 729 : 81 };
  int n = s->n;
  int32_t* index = malloc(sizeof(int32_t) * (size_t)b->n_nodes);
  int* anchor = malloc(sizeof(int) * (size_t)n * D);
  int32_t* group = malloc(sizeof(int32_t) * (size_t)n); /* each group's node, by its compact number */
  double* a = NULL;
  int count = 0;
  if (index && anchor && group) {
    for (long k = 0; k < b->n_nodes; k++) index[k] = -1;
    for (int p = 0; p < n; p++) {
      if (!(CQ_D(vol_group_bulk)(m, p) > 0)) continue;
      CQ_D(cqi_stencil) st;
      CQ_D(vol_gradient_rows)(c, s, m, p, &st);
      int32_t g = c->vol_group_of[p];
      if (index[g] < 0) {
        index[g] = count, group[count] = g;
        for (int e = 0; e < D; e++) anchor[count * D + e] = st.base[e];
        count++;
      } else
        for (int e = 0; e < D; e++) {
          int* lo = &anchor[index[g] * D + e];
          if (st.base[e] < *lo) *lo = st.base[e];
        }
    }
    a = calloc((size_t)count * NW * D, sizeof(double));
  }
  if (!index || !anchor || !group || (count > 0 && !a)) {
    free(index), free(anchor), free(group), free(a);
    return cqi_errorf(b->err, CQ_ERR_NOMEM,
                      "implicit.precond = \"factor\": out of memory for the fixed groups' "
                      "blocks (%d particles)",
                      n);
  }
  for (int p = 0; p < n; p++) { /* a_g: vol_gradient_sum's rows V0 J dt kC w dpos at the window's nodes */
    if (!(CQ_D(vol_group_bulk)(m, p) > 0)) continue;
    CQ_D(cqi_stencil) st;
    double scale = (double)CQ_D(vol_gradient_rows)(c, s, m, p, &st);
    int gi = index[c->vol_group_of[p]];
    CQI_FOR_STENCIL(off) {
      cq_real w, gw[D], dpos[D];
      CQ_D(stencil_node)(c, &st, off, &w, gw, dpos);
      int j = 0, inside = 1;
      for (int e = D - 1; e >= 0; e--) {
        int t = st.base[e] + off[e] - anchor[gi * D + e];
        inside &= t >= 0 && t < W;
        j = j * W + t;
      }
      if (!inside) continue;
      for (int e = 0; e < D; e++) a[((long)gi * NW + j) * D + e] += scale * (double)(w * dpos[e]);
    }
  }
  for (int gi = 0; gi < count; gi++) {
    const cq_real* sg = c->vol_sums + (long)group[gi] * (D + 1);
    if (!(sg[2] > 0)) continue;
    double coef = (double)sg[0] / ((double)sg[2] * (double)sg[2]);
    int at[NW][3];
    int32_t sl[NW];
    for (int j = 0; j < NW; j++) { /* window node j: its coordinates and slot (-1 outside the grid or without mass) */
      int code = j, inside = 1;
      long node = 0;
      for (int e = 0; e < D; e++, code /= W) {
        at[j][e] = anchor[gi * D + e] + code % W;
        inside &= at[j][e] >= 0 && at[j][e] < c->res[e];
        node += (long)at[j][e] * c->stride[e];
      }
      sl[j] = inside ? slot[node] : -1;
    }
    const double* ag = a + (long)gi * NW * D;
    for (int i = 0; i < NW; i++) {
      if (sl[i] < 0) continue;
      for (int k = 0; k < NW; k++) {
        if (sl[k] < 0) continue;
        int o = 0, scale9 = 1;
        for (int e = 0; e < D; e++, scale9 *= 9) o += (at[k][e] - at[i][e] + 4) * scale9;
        double* blk = blocks + ((long)sl[i] * WIDE + o) * D * D;
        for (int r = 0; r < D; r++)
          for (int q = 0; q < D; q++) blk[r * D + q] += coef * ag[i * D + r] * ag[k * D + q];
      }
    }
  }
  free(index), free(anchor), free(group), free(a);
  return CQ_OK;
}

/* Mass moments (moments.h): fixed chunks of particles summed in particle order, then the chunks in order, so the sums
 * are the same for any thread count. The adjoint writes each particle's own entries. */
#define CQI_MOMENT_CHUNKS 64
static int CQ_D(cpu_moments)(cqi_backend* b, const cq_particles* s, const cq_params* m, double* out) {
  cpu_backend* cb = (cpu_backend*)b;
  enum { K = CQI_MOMENTS(D) };
  double part[CQI_MOMENT_CHUNKS][K];
  int n = s->n, per = (n + CQI_MOMENT_CHUNKS - 1) / CQI_MOMENT_CHUNKS;
#pragma omp parallel for schedule(static) num_threads(cb->threads)
  for (int c = 0; c < CQI_MOMENT_CHUNKS; c++) {
    for (int k = 0; k < K; k++) part[c][k] = 0;
    int end = (c + 1) * per < n ? (c + 1) * per : n;
    for (int p = c * per; p < end; p++) CQ_D(moments_add)(s, m, p, part[c]);
  }
  for (int k = 0; k < K; k++) out[k] = 0;
  for (int c = 0; c < CQI_MOMENT_CHUNKS; c++)
    for (int k = 0; k < K; k++) out[k] += part[c][k];
  return CQ_OK;
}

static int CQ_D(cpu_moments_adj)(cqi_backend* b, const cq_particles* s, const cq_params* m, const double* g,
                                 cq_particles* gs, cq_real* gmass) {
  cpu_backend* cb = (cpu_backend*)b;
#pragma omp parallel for schedule(static) num_threads(cb->threads)
  for (int p = 0; p < s->n; p++) CQ_D(moments_adj)(s, m, p, g, gs, gmass);
  return CQ_OK;
}

/* The plain passes (engine/backends/passes.h), one loop per row: PARTICLES in fixed chunks by index (each particle writes its
 * own entries), SCATTER in colored slabs like P2G and GROUPS in their order (each node's sums in a fixed particle
 * order), NODES over the active region: the same results for any thread count. */
#define CQI_CPU_LOOP_PARTICLES(cb, c, body) \
  _Pragma("omp parallel for schedule(static) num_threads((cb)->threads)") for (int p = 0; p < s->n; p++) body;
#define CQI_CPU_LOOP_SCATTER(cb, c, body) CQI_FOR_SLABS(cb, body)
#define CQI_CPU_LOOP_GROUPS(cb, c, body) CQI_FOR_GROUPS(cb, c, body)
#define CQI_CPU_LOOP_NODES(cb, c, body) CQI_FOR_REGION(cb, *c, body)
#define CQI_CPU_BODY_PARTICLES(body, ...) CQ_D(body)(c, s, m, p, CQI_PMAP(CQI_PNAME, __VA_ARGS__))
#define CQI_CPU_BODY_SCATTER CQI_CPU_BODY_PARTICLES
#define CQI_CPU_BODY_GROUPS CQI_CPU_BODY_PARTICLES
#define CQI_CPU_BODY_NODES(body, ...) CQ_D(body)(c, node, i, CQI_PMAP(CQI_PNODE, __VA_ARGS__))
#define CQI_LCAT_(a, b) a##b
#define CQI_LCAT(a, b) CQI_LCAT_(a, b)
#define CQI_CPU_PASS(op, body, over, key, gpu, ...)                                                     \
  static CQI_PASS_SIGNATURE(CQ_D(cpu_##op), over, __VA_ARGS__) {                                        \
    cpu_backend* cb = (cpu_backend*)b;                                                                  \
    CQI_LCAT(CQI_CPU_LOOP_, over)(cb, c, CQI_CAT(CQI_CPU_BODY_, over)(body, __VA_ARGS__)) return CQ_OK; \
  }
CQ_PASSES(CQI_CPU_PASS)
#undef CQI_CPU_PASS
#undef CQI_CPU_LOOP_PARTICLES
#undef CQI_CPU_LOOP_SCATTER
#undef CQI_CPU_LOOP_GROUPS
#undef CQI_CPU_LOOP_NODES
#undef CQI_CPU_BODY_PARTICLES
#undef CQI_CPU_BODY_SCATTER
#undef CQI_CPU_BODY_GROUPS
#undef CQI_CPU_BODY_NODES
#undef CQI_LCAT
#undef CQI_LCAT_

#undef CQI_SLAB

#undef CQI_LANE_MATERIALS
#undef CQI_LANE_ENTRY
#undef CQI_LANES_HERE

/* CUDA kernels and the launchers of the backend primitives for one dimension D (included twice by cuda.cu): one
 * thread per particle or per active node, each calling the shared CQ_HD bodies of engine/stages/kernels.h (no formula is
 * repeated here). Scatters (P2G forward, G2P adjoint) collide on nodes; the bodies add through CQ_SCATTER_ADD,
 * atomicAdd on the device. */

/* Folds one thread's check key into the block's first lane of each warp, then one atomic per warp. */
__device__ __forceinline__ void CQ_D(cqk_min_key)(unsigned long long key, unsigned long long* out) {
  for (int o = 16; o > 0; o >>= 1) {
    unsigned long long other = __shfl_down_sync(0xffffffffu, key, o);
    if (other < key) key = other;
  }
  if ((threadIdx.x & 31) == 0 && key != ULLONG_MAX) atomicMin(out, key);
}

/* The particle checks (all, or finite and inside the grid: the CPU's test), reduced into info = {lo[0..2], hi[0..2]}
 * and key = min over failing particles of base + check * n + p. Does nothing after a failed check of an earlier
 * kernel of the batch (key < base; this kernel's own atomics only write keys >= base, so every block agrees). */
__global__ void CQ_D(cqk_prepare)(CQK_PARTICLES s, CQK_SUBSTEP c, int check_all, int* info, unsigned long long* key,
                                  unsigned long long base) {
  if (*key < base) return;
  int p = blockIdx.x * blockDim.x + threadIdx.x, n = s.n;
  int lo[D], hi[D];
  unsigned long long k = ULLONG_MAX;
  for (int a = 0; a < D; a++) lo[a] = INT_MAX, hi[a] = INT_MIN;
  if (p < n) {
    int b[D], check = check_all ? CQ_D(particle_check)(&c, &s, p) : CQ_CHECK_OK;
    for (int a = 0; a < D && check == CQ_CHECK_OK; a++) {
      cq_real xa = s.x[a * n + p], va = s.v[a * n + p];
      cq_real g = cq_cell_coord(xa, c.dx, c.inv_dx);
      if (!isfinite(xa) || !isfinite(va))
        check = CQ_CHECK_NONFINITE;
      else if (!(g >= 0 && g < c.res[a] - 2))
        check = CQ_CHECK_OUTSIDE;
      b[a] = check == CQ_CHECK_OK ? (int)g : 0;
    }
    if (check == CQ_CHECK_OK)
      for (int a = 0; a < D; a++) lo[a] = hi[a] = b[a];
    else
      k = base + (unsigned long long)check * n + p;
  }
  /* warp reductions, then the block's in shared memory, then one global atomic per block (one per warp contended
   * on these six words: 79 us of a 512k-particle substep on an H100) */
  __shared__ int blo[3], bhi[3];
  if (threadIdx.x < 3) blo[threadIdx.x] = INT_MAX, bhi[threadIdx.x] = INT_MIN;
  __syncthreads();
  for (int a = 0; a < D; a++) {
    lo[a] = __reduce_min_sync(0xffffffffu, lo[a]);
    hi[a] = __reduce_max_sync(0xffffffffu, hi[a]);
  }
  if ((threadIdx.x & 31) == 0)
    for (int a = 0; a < D; a++) {
      if (lo[a] != INT_MAX) atomicMin(&blo[a], lo[a]);
      if (hi[a] != INT_MIN) atomicMax(&bhi[a], hi[a]);
    }
  __syncthreads();
  if (threadIdx.x < D) {
    if (blo[threadIdx.x] != INT_MAX) atomicMin(&info[threadIdx.x], blo[threadIdx.x]);
    if (bhi[threadIdx.x] != INT_MIN) atomicMax(&info[3 + threadIdx.x], bhi[threadIdx.x]);
  }
  CQ_D(cqk_min_key)(k, key);
}

/* Cable forces into f: one thread runs the cables in order, as the CPU does (few cables; a fixed order keeps the sum
 * deterministic). */
__global__ void CQ_D(cqk_cables)(const cq_cable* cables, int n_cables, const int32_t* idx, const cq_real* x, int n,
                                 const cq_real* u, cq_real* f, const unsigned long long* key) {
  if (*key != ULLONG_MAX) return; /* a check of the batch failed */
  for (int k = 0; k < n_cables; k++) CQ_D(cable_forces)(&cables[k], idx, x, n, u[cables[k].act], f);
}

/* Cable adjoint: adds dL/dx into gx and writes dL/du of cable k into gcab[k] (the host adds it to its actuator). */
__global__ void CQ_D(cqk_cables_adj)(const cq_cable* cables, int n_cables, const int32_t* idx, const cq_real* x, int n,
                                     const cq_real* u, const cq_real* gf, cq_real* gx, cq_real* gcab,
                                     const unsigned long long* key) {
  if (*key != ULLONG_MAX) return;
  for (int k = 0; k < n_cables; k++) gcab[k] = CQ_D(cable_forces_adj)(&cables[k], idx, x, n, u[cables[k].act], gf, gx);
}

/* Closed cavities (chamber.h): each wall particle's terms added to its cavity's sums (atomics: the order varies
 * from run to run, like every GPU sum here; the CPU sums in particle order), the coefficients one thread per
 * actuator, the corrections one thread per particle. The adjoint's three passes likewise. */
__global__ void CQ_D(cqk_cavity_sums)(CQK_PARTICLES s, CQK_PARAMS m, const cq_real* u, cqi_cavity_sums* sums) {
  int p = blockIdx.x * blockDim.x + threadIdx.x, a = p < s.n ? CQ_D(cavity_of)(&m, p) : -1;
  if (a < 0) return;
  cqi_cavity_sums t;
  cq_real* z = &t.S0;
  for (int i = 0; i < CQI_CAVITY_SUMS; i++) z[i] = 0;
  CQ_D(cavity_add)(&s, &m, u, p, a, &t);
  cq_real* acc = &sums[a].S0;
  for (int i = 0; i < CQI_CAVITY_SUMS; i++)
    if (z[i] != 0) atomicAdd(&acc[i], z[i]);
}

__global__ void CQ_D(cqk_cavity_coef)(int n_act, const uint8_t* kind, const cqi_cavity_sums* sums,
                                      cqi_cavity_coef* coef) {
  int a = blockIdx.x * blockDim.x + threadIdx.x;
  if (a < n_act && kind[a] == CQ_ACT_CAVITY) CQ_D(cavity_coef)(&sums[a], &coef[a]);
}

__global__ void CQ_D(cqk_cavity_forces)(CQK_PARTICLES s, CQK_PARAMS m, const cqi_cavity_coef* coef, cq_real* f) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < s.n) CQ_D(cavity_force)(&s, &m, p, coef, f);
}

__global__ void CQ_D(cqk_cavity_force_adj)(CQK_PARTICLES s, CQK_PARAMS m, const cqi_cavity_coef* coef,
                                           const cq_real* gf, cqi_cavity_coef* gcoef, cq_particles g0,
                                           cq_param_grads gp) {
  int p = blockIdx.x * blockDim.x + threadIdx.x, a = p < s.n ? CQ_D(cavity_of)(&m, p) : -1;
  if (a < 0) return;
  cqi_cavity_coef gk;
  for (int i = 0; i < 3; i++) gk.a[i] = gk.b[i] = gk.c[i] = 0;
  CQ_D(cavity_particle_force_adj)(&s, &m, p, a, &coef[a], gf, &gk, &g0, &gp);
  for (int i = 0; i < 3; i++) {
    if (gk.a[i] != 0) atomicAdd(&gcoef[a].a[i], gk.a[i]);
    if (gk.b[i] != 0) atomicAdd(&gcoef[a].b[i], gk.b[i]);
    if (gk.c[i] != 0) atomicAdd(&gcoef[a].c[i], gk.c[i]);
  }
}

__global__ void CQ_D(cqk_cavity_coef_adj)(int n_act, const uint8_t* kind, const cqi_cavity_sums* sums,
                                          const cqi_cavity_coef* coef, const cqi_cavity_coef* gcoef,
                                          cqi_cavity_sums* gsums) {
  int a = blockIdx.x * blockDim.x + threadIdx.x;
  if (a < n_act && kind[a] == CQ_ACT_CAVITY) CQ_D(cavity_coef_adj)(&sums[a], &coef[a], &gcoef[a], &gsums[a]);
}

__global__ void CQ_D(cqk_cavity_add_adj)(CQK_PARTICLES s, CQK_PARAMS m, const cq_real* u, const cqi_cavity_sums* gsums,
                                         cq_particles g0, cq_param_grads gp, cq_real* gact) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < s.n) CQ_D(cavity_particle_add_adj)(&s, &m, u, p, gsums, &g0, &gp, gact);
}

/* Mass moments (moments.h): each thread sums its particles (a grid-stride loop), the block its threads' sums in shared
 * memory, then one double atomic per block and moment (the order varies from run to run, like every GPU sum here).
 * The adjoint: one thread per particle, writing its own entries. */
__global__ void CQ_D(cqk_moments)(CQK_PARTICLES s, CQK_PARAMS m, double* out) {
  enum { K = CQI_MOMENTS(D) };
  __shared__ double sh[K][CQ_BLOCK];
  double acc[K];
  for (int k = 0; k < K; k++) acc[k] = 0;
  for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < s.n; p += gridDim.x * blockDim.x)
    CQ_D(moments_add)(&s, &m, p, acc);
  for (int k = 0; k < K; k++) sh[k][threadIdx.x] = acc[k];
  __syncthreads();
  for (int half = CQ_BLOCK / 2; half > 0; half /= 2) {
    if ((int)threadIdx.x < half)
      for (int k = 0; k < K; k++) sh[k][threadIdx.x] += sh[k][threadIdx.x + half];
    __syncthreads();
  }
  if ((int)threadIdx.x < K) atomicAdd(&out[threadIdx.x], sh[threadIdx.x][0]);
}

__global__ void CQ_D(cqk_moments_adj)(CQK_PARTICLES s, CQK_PARAMS m, const __grid_constant__ cqk_moments_seed g,
                                      CQK_PARTICLES gs, cq_real* gmass) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < s.n) CQ_D(moments_adj)(&s, &m, p, g.g, &gs, gmass);
}

/* Block-local scatter (P2G, and G2P's adjoint). The block's particles add into a shared-memory copy of the box of
 * nodes they touch, which then goes to the grid with one global atomic per non-zero entry. Global atomics bound the
 * plain scatter (27 nodes x (D+1) per particle: 0.9 ns per particle for P2G on an H100, docs/results/history.md);
 * particles laid out in raster order, as every robot builder does, touch a few hundred nodes per block of 128, so
 * this cuts them several fold. A block whose box does not fit in CQ_LOCAL_REALS scatters straight to the grid, and so
 * does every block of a launch too small to fill the GPU (local = 0, cuda_backend.local_min_blocks): shared-memory
 * float atomics are compare-and-swap loops (ATOMS.CAST.SPIN in the SASS) that stall the one warp per scheduler such a
 * launch has, while global ones (RED) do not wait. */
#ifndef CQ_LOCAL_REALS
#define CQ_LOCAL_REALS 4096
#endif
/* Blocks per SM that P2G's register allocation must allow. In f32, 8 (64 registers, a few spilled) instead of the
 * compiler's 96 registers (5 blocks) took P2G from 285 to 226 us on the 512k cube on an H100 (docs/results/history.md);
 * f64 was not measured and keeps the compiler's choice. */
#ifndef CQ_P2G_MIN_BLOCKS
#define CQ_P2G_MIN_BLOCKS (CQ_REAL_BITS == 32 ? 8 : 1)
#endif

/* The box lo + [0, ext) of the nodes the block's live particles touch (base .. base + 2 per axis); returns its node
 * count. Every thread of the block calls it (it synchronises). */
__device__ long CQ_D(cqk_block_box)(int live, const int base[D], int* lo, int* hi, int ext[3]) {
  if (threadIdx.x < 3) lo[threadIdx.x] = INT_MAX, hi[threadIdx.x] = INT_MIN;
  __syncthreads();
  for (int a = 0; a < D; a++) { /* a warp reduction, then one shared atomic per warp */
    int l = __reduce_min_sync(0xffffffffu, live ? base[a] : INT_MAX);
    int h = __reduce_max_sync(0xffffffffu, live ? base[a] + 2 : INT_MIN);
    if ((threadIdx.x & 31) == 0 && l != INT_MAX) atomicMin(&lo[a], l), atomicMax(&hi[a], h);
  }
  __syncthreads();
  long vol = 1;
  ext[0] = ext[1] = ext[2] = 1;
  for (int a = 0; a < D; a++) ext[a] = hi[a] - lo[a] + 1, vol *= ext[a];
  return vol;
}

/* The box-local index of the stencil node base + off. */
__device__ __forceinline__ int CQ_D(cqk_local_node)(const int base[D], const int off[3], const int* lo,
                                                    const int ext[3]) {
  int local = 0;
  for (int a = 0; a < D; a++) local = local * ext[a] + base[a] + off[a] - lo[a];
  return local;
}

/* Adds the box's accumulated entries acc[vol * comps] (comps per node) to the grid (D + 1 per node), one global
 * atomic per non-zero entry. Call after a barrier. */
__device__ void CQ_D(cqk_flush)(const cq_substep* c, const cq_real* acc, int comps, long vol, const int* lo,
                                const int ext[3], cq_real* grid) {
  int len = (int)vol * comps;
  for (int i = threadIdx.x; i < len; i += blockDim.x) {
    cq_real v = acc[i];
    if (v == 0) continue;
    int local = i / comps;
    long node = 0;
    for (int a = D - 1; a >= 0; a--) {
      node += (long)(lo[a] + local % ext[a]) * c->stride[a];
      local /= ext[a];
    }
    atomicAdd(&grid[node * (D + 1) + i % comps], v);
  }
}

__global__ void __launch_bounds__(CQ_BLOCK, CQ_P2G_MIN_BLOCKS)
    CQ_D(cqk_p2g)(CQK_SUBSTEP c, CQK_PARTICLES s, CQK_PARAMS m, cq_ctl ctl, cq_real* grid, cq_real* cache,
                  const unsigned long long* key, int local) {
  if (*key != ULLONG_MAX) return; /* a check of the batch failed (the same for every block) */
  __shared__ cq_real acc[CQ_LOCAL_REALS];
  __shared__ int lo[3], hi[3];
  int p = blockIdx.x * blockDim.x + threadIdx.x, live = p < s.n, ext[3];
  CQ_D(cqi_p2g) q;
  CQ_D(cqi_stencil) st;
  cq_real mv[D];
  if (live) CQ_D(p2g_begin)(&c, &s, &m, &ctl, p, cache, &q, &st, mv);
  if (live && cqi_pressure_kind(q.act_kind) && CQ_D(wall_surface_has)(&c, &m, p, s.n)) /* chamber.h */
    CQ_D(p2g_surface)(&c, &s, &m, &ctl, p, grid);
  long vol = CQ_D(cqk_block_box)(live, st.base, lo, hi, ext);
  if (!local || vol * (D + 1) > CQ_LOCAL_REALS) { /* the same for the whole block: scatter straight to the grid */
    if (live) CQ_D(p2g_scatter)(&c, &q, &st, mv, grid);
    return;
  }
  for (int i = threadIdx.x; i < vol * (D + 1); i += blockDim.x) acc[i] = 0;
  __syncthreads();
  if (live) CQI_FOR_STENCIL(off) {
      cq_real add[D + 1];
      CQ_D(p2g_node)(&c, &q, &st, mv, off, add);
      int local = CQ_D(cqk_local_node)(st.base, off, lo, ext);
      for (int a = 0; a <= D; a++) atomicAdd(&acc[local * (D + 1) + a], add[a]);
    }
  __syncthreads();
  CQ_D(cqk_flush)(&c, acc, D + 1, vol, lo, ext, grid);
}

__global__ void CQ_D(cqk_g2p)(CQK_SUBSTEP c, cq_particles s, CQK_PARAMS m, const cq_real* gridv,
                              unsigned long long* key, unsigned long long base) {
  if (*key < base) return; /* as cqk_prepare */
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long k = ULLONG_MAX;
  if (p < s.n) {
    int check = CQ_D(g2p)(&c, &s, &m, p, gridv);
    if (check != CQ_CHECK_OK) k = base + (unsigned long long)check * s.n + p;
  }
  CQ_D(cqk_min_key)(k, key);
}

/* G2P's adjoint with the block-local scatter of dL/d(node velocity) (see cqk_p2g). */
__global__ void CQ_D(cqk_g2p_adj)(CQK_SUBSTEP c, CQK_PARTICLES s, CQK_PARAMS m, const cq_real* gridv, cq_particles g1,
                                  cq_particles g0, cq_real* adj, const cq_real* C1, const unsigned long long* key,
                                  int local) {
  if (*key != ULLONG_MAX) return;
  __shared__ cq_real acc[CQ_LOCAL_REALS];
  __shared__ int lo[3], hi[3];
  int p = blockIdx.x * blockDim.x + threadIdx.x, live = p < s.n, ext[3];
  CQ_D(cqi_stencil) st;
  cq_real gv[D], gC[D][D], gx[D];
  if (live) CQ_D(g2p_adj_begin)(&c, &s, &m, p, gridv, &g1, &g0, C1, &st, gv, gC, gx);
  long vol = CQ_D(cqk_block_box)(live, st.base, lo, hi, ext);
  int local_ok = local && vol * D <= CQ_LOCAL_REALS; /* the same for the whole block */
  if (local_ok) {
    for (int i = threadIdx.x; i < vol * D; i += blockDim.x) acc[i] = 0;
    __syncthreads();
  }
  if (live) {
    CQI_FOR_STENCIL(off) {
      cq_real add[D];
      long node = CQ_D(g2p_adj_node)(&c, &st, off, gridv, gv, gC, gx, add);
      if (local_ok) {
        int local = CQ_D(cqk_local_node)(st.base, off, lo, ext);
        for (int a = 0; a < D; a++) atomicAdd(&acc[local * D + a], add[a]);
      } else {
        for (int a = 0; a < D; a++) CQ_SCATTER_ADD(&adj[node * (D + 1) + a], add[a]);
      }
    }
    for (int a = 0; a < D; a++) g0.x[a * s.n + p] = gx[a];
  }
  if (local_ok) {
    __syncthreads();
    CQ_D(cqk_flush)(&c, acc, D, vol, lo, ext, adj);
  }
}

/* As CQ_P2G_MIN_BLOCKS, for P2G's adjoint: in f32, 4 blocks per SM (128 registers, 176 bytes spilled) instead of the
 * compiler's 158 registers took it from 266 to 233 us on the 512k cube (docs/results/history.md); f64 not measured. */
#ifndef CQ_P2G_ADJ_MIN_BLOCKS
#define CQ_P2G_ADJ_MIN_BLOCKS (CQ_REAL_BITS == 32 ? 4 : 1)
#endif
__global__ void __launch_bounds__(CQ_BLOCK, CQ_P2G_ADJ_MIN_BLOCKS)
    CQ_D(cqk_p2g_adj)(cq_substep c, cq_particles s, cq_params m, cq_ctl ctl, const cq_real* adj, cq_particles g0,
                      cq_param_grads gp, cq_ctl_grads gc, const cq_real* cache, const unsigned long long* key) {
  if (*key != ULLONG_MAX) return;
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < s.n) CQ_D(p2g_adj)(&c, &s, &m, &ctl, p, adj, &g0, &gp, &gc, cache);
}

/* Node t of the active box lo + [0, ext): its grid coordinates i[] and flat index. */
__device__ __forceinline__ long CQ_D(cqk_box_node)(const cq_substep* c, cqi_box b, long t, int i[3]) {
  i[2] = 0;
  if (D == 3) {
    i[2] = b.lo[2] + (int)(t % b.ext[2]);
    t /= b.ext[2];
  }
  i[1] = b.lo[1] + (int)(t % b.ext[1]);
  i[0] = b.lo[0] + (int)(t / b.ext[1]);
  long node = 0;
  for (int a = 0; a < D; a++) node += (long)i[a] * c->stride[a];
  return node;
}

/* The active box from prepare's reduction info on the device (cuda.cu box_from_info). */
__device__ __forceinline__ cqi_box CQ_D(cqk_info_box)(const int* info) { return box_from_info(info, D); }
/* Node loop of the grid-stride kernels (launched over grid_blocks blocks whatever the box's size). */
#define CQK_FOR_NODES(t, count) \
  for (long t = (long)blockIdx.x * blockDim.x + threadIdx.x; t < (count); t += (long)gridDim.x * blockDim.x)

/* Zeroes the D + 1 entries of every node of the active box. */
__global__ void CQ_D(cqk_grid_clear)(CQK_SUBSTEP c, const int* info, const unsigned long long* key, cq_real* grid) {
  if (*key != ULLONG_MAX) return;
  cqi_box b = CQ_D(cqk_info_box)(info);
  CQK_FOR_NODES(t, b.count) {
    int i[3];
    long node = CQ_D(cqk_box_node)(&c, b, t, i);
    for (int a = 0; a <= D; a++) grid[node * (D + 1) + a] = 0;
  }
}

/* Grid update over the active box: mp (momentum, mass) -> v; v may alias mp. */
__global__ void CQ_D(cqk_grid)(CQK_SUBSTEP c, const int* info, const unsigned long long* key, const cq_real* mp,
                               cq_real* v) {
  if (*key != ULLONG_MAX) return;
  cqi_box b = CQ_D(cqk_info_box)(info);
  CQK_FOR_NODES(t, b.count) {
    int i[3];
    long node = CQ_D(cqk_box_node)(&c, b, t, i);
    CQ_D(grid_node)(&c, node, i, mp + node * (D + 1), v + node * (D + 1));
  }
}

/* Grid adjoint over the active box: adj (dL/dv) -> (dL/dp, dL/dm) in place, given the forward (momentum, mass). */
__global__ void CQ_D(cqk_grid_adj)(CQK_SUBSTEP c, const int* info, const unsigned long long* key, const cq_real* mp,
                                   cq_real* adj) {
  if (*key != ULLONG_MAX) return;
  cqi_box b = CQ_D(cqk_info_box)(info);
  CQK_FOR_NODES(t, b.count) {
    int i[3];
    long node = CQ_D(cqk_box_node)(&c, b, t, i);
    CQ_D(grid_node_adj)(&c, node, i, mp + node * (D + 1), adj + node * (D + 1));
  }
}

/* y += a x over the first D components of every active node. */
__global__ void CQ_D(cqk_grid_axpy)(CQK_SUBSTEP c, cqi_box b, cq_real a, const cq_real* x, cq_real* y) {
  long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= b.count) return;
  int i[3];
  long node = CQ_D(cqk_box_node)(&c, b, t, i);
  for (int d = 0; d < D; d++) y[node * (D + 1) + d] += a * x[node * (D + 1) + d];
}

/* Per-block partial sums of x.y over active nodes, in a fixed tree order (deterministic for a given box). */
__global__ void CQ_D(cqk_grid_dot)(CQK_SUBSTEP c, cqi_box b, const cq_real* x, const cq_real* y, double* partial) {
  __shared__ double sum[CQ_BLOCK];
  long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
  double v = 0;
  if (t < b.count) {
    int i[3];
    long node = CQ_D(cqk_box_node)(&c, b, t, i);
    for (int d = 0; d < D; d++) v += (double)x[node * (D + 1) + d] * y[node * (D + 1) + d];
  }
  sum[threadIdx.x] = v;
  __syncthreads();
  for (int s = CQ_BLOCK / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) sum[threadIdx.x] += sum[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sum[0];
}

/* Per-block maxima of |x| over active nodes (NaN propagates: cqi_max_wins). */
__global__ void CQ_D(cqk_grid_norm_inf)(CQK_SUBSTEP c, cqi_box b, const cq_real* x, double* partial) {
  __shared__ double m[CQ_BLOCK];
  long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
  double v = 0;
  if (t < b.count) {
    int i[3];
    long node = CQ_D(cqk_box_node)(&c, b, t, i);
    for (int d = 0; d < D; d++) {
      double a = fabs((double)x[node * (D + 1) + d]);
      if (cqi_max_wins(a, v)) v = a;
    }
  }
  m[threadIdx.x] = v;
  __syncthreads();
  for (int s = CQ_BLOCK / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s && cqi_max_wins(m[threadIdx.x + s], m[threadIdx.x])) m[threadIdx.x] = m[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = m[0];
}

/* Per-block partial sums of each slot of x over active nodes (slot d of block k at partial[d * blocks + k]), in a
 * fixed tree order. */
__global__ void CQ_D(cqk_grid_sums)(CQK_SUBSTEP c, cqi_box b, const cq_real* x, double* partial) {
  __shared__ double sum[D + 1][CQ_BLOCK];
  long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
  long node = -1;
  if (t < b.count) {
    int i[3];
    node = CQ_D(cqk_box_node)(&c, b, t, i);
  }
  for (int d = 0; d <= D; d++) sum[d][threadIdx.x] = node >= 0 ? (double)x[node * (D + 1) + d] : 0;
  __syncthreads();
  for (int s = CQ_BLOCK / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s)
      for (int d = 0; d <= D; d++) sum[d][threadIdx.x] += sum[d][threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    for (int d = 0; d <= D; d++) partial[d * gridDim.x + blockIdx.x] = sum[d][0];
}

/* ---- host side: the primitives for dimension D ---- */

static int CQ_D(cuda_prepare)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                              int check_all, cqi_check* bad) {
  cuda_backend* g = (cuda_backend*)b;
  CK(cudaMemcpyAsync(g->info, g->info + 6, sizeof(int) * 6, cudaMemcpyDeviceToDevice, g->stream)); /* initial values */
  g->region_ctx = *c;
  g->box_known = 0;
  *bad = (cqi_check){CQ_CHECK_OK, -1, 0, 0, 0};
  if (g->in_batch) { /* checked at end_batch; the box stays on the device */
    g->batch_prepares++;
    LAUNCH(CQ_D(cqk_prepare), s->n, *s, *c, check_all, g->info, g->key, key_base(g, 0));
    return CQ_OK;
  }
  TRY(reset_key(g));
  LAUNCH(CQ_D(cqk_prepare), s->n, *s, *c, check_all, g->info, g->key, 0ull);
  CK(cudaMemcpyAsync(g->info_h, g->info, sizeof(int) * 6, cudaMemcpyDeviceToHost, g->stream));
  TRY(read_key(g, bad));
  if (bad->check == CQ_CHECK_OK) parse_box(g, g->info_h);
  return CQ_OK;
}

/* The moments' sums are read back at once (their user, the Lua tape, needs them now); the adjoint waits too, since the
 * host may add into the same gradient next. */
static int CQ_D(cuda_moments)(cqi_backend* b, const cq_particles* s, const cq_params* m, double* out) {
  cuda_backend* g = (cuda_backend*)b;
  enum { K = CQI_MOMENTS(D) };
  CK(cudaMemsetAsync(g->mom, 0, sizeof(double) * K, g->stream));
  long blocks = (s->n + CQ_BLOCK - 1) / CQ_BLOCK, cap = 4L * g->sms;
  if (blocks > cap) blocks = cap;
  if (blocks > 0) {
    timing_begin(g->stream, CQK_NAME(CQ_D(cqk_moments)));
    CQ_D(cqk_moments)<<<(unsigned)blocks, CQ_BLOCK, 0, g->stream>>>(*s, *m, g->mom);
    timing_end(g->stream);
    CK(cudaGetLastError());
  }
  CK(cudaMemcpyAsync(g->mom_h, g->mom, sizeof(double) * K, cudaMemcpyDeviceToHost, g->stream));
  CK(cudaStreamSynchronize(g->stream));
  memcpy(out, g->mom_h, sizeof(double) * K);
  return CQ_OK;
}

static int CQ_D(cuda_moments_adj)(cqi_backend* b, const cq_particles* s, const cq_params* m, const double* gm,
                                  cq_particles* gs, cq_real* gmass) {
  cuda_backend* g = (cuda_backend*)b;
  cqk_moments_seed seed;
  memcpy(seed.g, gm, sizeof(double) * CQI_MOMENTS(D));
  LAUNCH(CQ_D(cqk_moments_adj), s->n, *s, *m, seed, *gs, gmass);
  CK(cudaStreamSynchronize(g->stream));
  return CQ_OK;
}

static int CQ_D(cuda_grid_clear)(cqi_backend* b, cq_real* grid) {
  cuda_backend* g = (cuda_backend*)b;
  LAUNCH_NODES(CQ_D(cqk_grid_clear), g->region_ctx, g->info, g->key, grid);
  return CQ_OK;
}

static int CQ_D(cuda_p2g)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                          const cq_ctl* ctl, cq_real* grid, cq_real* cache) {
  cuda_backend* g = (cuda_backend*)b;
  LAUNCH(CQ_D(cqk_p2g), s->n, *c, *s, *m, *ctl, grid, cache, g->key, particle_blocks(g, s->n) >= g->local_min_blocks);
  return CQ_OK;
}

static int CQ_D(cuda_grid_update)(cqi_backend* b, const cq_substep* c, const cq_real* mp, cq_real* v) {
  cuda_backend* g = (cuda_backend*)b;
  LAUNCH_NODES(CQ_D(cqk_grid), *c, g->info, g->key, mp, v);
  return CQ_OK;
}

static int CQ_D(cuda_g2p)(cqi_backend* b, const cq_substep* c, cq_particles* s, const cq_params* m,
                          const cq_real* gridv, cqi_check* bad) {
  cuda_backend* g = (cuda_backend*)b;
  *bad = (cqi_check){CQ_CHECK_OK, -1, 0, 0, 0};
  if (g->in_batch) {
    LAUNCH(CQ_D(cqk_g2p), s->n, *c, *s, *m, gridv, g->key, key_base(g, 1));
    return CQ_OK;
  }
  TRY(reset_key(g));
  LAUNCH(CQ_D(cqk_g2p), s->n, *c, *s, *m, gridv, g->key, 0ull);
  TRY(read_key(g, bad));
  bad->after = 1;
  return CQ_OK;
}

static int CQ_D(cuda_g2p_adj)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                              const cq_real* gridv, const cq_particles* g1, cq_particles* g0, cq_real* adj,
                              const cq_real* C1) {
  cuda_backend* g = (cuda_backend*)b;
  LAUNCH(CQ_D(cqk_g2p_adj), s->n, *c, *s, *m, gridv, *g1, *g0, adj, C1, g->key,
         particle_blocks(g, s->n) >= g->local_min_blocks);
  return CQ_OK;
}

static int CQ_D(cuda_grid_update_adj)(cqi_backend* b, const cq_substep* c, const cq_real* mp, cq_real* adj) {
  cuda_backend* g = (cuda_backend*)b;
  LAUNCH_NODES(CQ_D(cqk_grid_adj), *c, g->info, g->key, mp, adj);
  return CQ_OK;
}

static int CQ_D(cuda_p2g_adj)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                              const cq_ctl* ctl, const cq_real* adj, cq_particles* g0, const cq_param_grads* gp,
                              const cq_ctl_grads* gc, const cq_real* cache) {
  cuda_backend* g = (cuda_backend*)b;
  LAUNCH(CQ_D(cqk_p2g_adj), s->n, *c, *s, *m, *ctl, adj, *g0, *gp, *gc, cache, g->key);
  return CQ_OK;
}

static int CQ_D(cuda_cable_forces)(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,
                                   cq_real* f) {
  cuda_backend* g = (cuda_backend*)b;
  CQ_D(cqk_cables)<<<1, 1, 0, g->stream>>>(v->cables, v->n_cables, v->cable_idx, s->x, s->n, u, f, g->key);
  CK(cudaGetLastError());
  return CQ_OK;
}

static int CQ_D(cuda_cable_forces_adj)(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,
                                       const cq_real* gf, cq_real* gx, double* gu) {
  cuda_backend* g = (cuda_backend*)b;
  CQ_D(cqk_cables_adj)<<<1, 1, 0, g->stream>>>(v->cables, v->n_cables, v->cable_idx, s->x, s->n, u, gf, gx, g->gcab,
                                               g->key);
  CK(cudaGetLastError());
  CK(cudaMemcpyAsync(g->gcab_h, g->gcab, sizeof(cq_real) * v->n_cables, cudaMemcpyDeviceToHost, g->stream));
  CK(cudaStreamSynchronize(g->stream));
  for (int k = 0; k < v->n_cables; k++) gu[g->model->cables[k].act] += g->gcab_h[k]; /* in cable order */
  return CQ_OK;
}

/* The cavities' sums and coefficients of state s (device). */
static int CQ_D(cuda_cavity_coefs)(cuda_backend* g, const cqi_model_view* v, const cq_particles* s, const cq_real* u) {
  int n_act = g->base.n_act;
  CK(cudaMemsetAsync(g->cav_sums, 0, sizeof(cqi_cavity_sums) * n_act, g->stream));
  LAUNCH(CQ_D(cqk_cavity_sums), s->n, *s, v->params, u, g->cav_sums);
  LAUNCH(CQ_D(cqk_cavity_coef), n_act, n_act, v->params.act_kind, g->cav_sums, g->cav_coef);
  return CQ_OK;
}

static int CQ_D(cuda_cavity_forces)(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,
                                    cq_real* f) {
  cuda_backend* g = (cuda_backend*)b;
  TRY(CQ_D(cuda_cavity_coefs)(g, v, s, u));
  LAUNCH(CQ_D(cqk_cavity_forces), s->n, *s, v->params, g->cav_coef, f);
  return CQ_OK;
}

static int CQ_D(cuda_cavity_forces_adj)(cqi_backend* b, const cqi_model_view* v, const cq_particles* s,
                                        const cq_real* u, const cq_real* gf, cq_particles* g0, const cq_param_grads* gp,
                                        cq_real* gact) {
  cuda_backend* g = (cuda_backend*)b;
  int n_act = b->n_act;
  TRY(CQ_D(cuda_cavity_coefs)(g, v, s, u));
  CK(cudaMemsetAsync(g->cav_gcoef, 0, sizeof(cqi_cavity_coef) * n_act, g->stream));
  LAUNCH(CQ_D(cqk_cavity_force_adj), s->n, *s, v->params, g->cav_coef, gf, g->cav_gcoef, *g0, *gp);
  LAUNCH(CQ_D(cqk_cavity_coef_adj), n_act, n_act, v->params.act_kind, g->cav_sums, g->cav_coef, g->cav_gcoef,
         g->cav_gsums);
  LAUNCH(CQ_D(cqk_cavity_add_adj), s->n, *s, v->params, u, g->cav_gsums, *g0, *gp, gact);
  return CQ_OK;
}

static int CQ_D(cuda_grid_axpy)(cqi_backend* b, cq_real a, const cq_real* x, cq_real* y) {
  cuda_backend* g = (cuda_backend*)b;
  TRY(host_box(g));
  LAUNCH(CQ_D(cqk_grid_axpy), g->box.count, g->region_ctx, g->box, a, x, y);
  return CQ_OK;
}

static int CQ_D(cuda_grid_norm_inf)(cqi_backend* b, const cq_real* x, double* out) {
  cuda_backend* g = (cuda_backend*)b;
  TRY(host_box(g));
  long blocks = (g->box.count + CQ_BLOCK - 1) / CQ_BLOCK;
  TRY(ensure_partials(g, blocks));
  LAUNCH(CQ_D(cqk_grid_norm_inf), g->box.count, g->region_ctx, g->box, x, g->partial);
  CK(cudaMemcpyAsync(g->partial_h, g->partial, sizeof(double) * blocks, cudaMemcpyDeviceToHost, g->stream));
  CK(cudaStreamSynchronize(g->stream));
  double m = 0;
  for (long i = 0; i < blocks; i++)
    if (cqi_max_wins(g->partial_h[i], m)) m = g->partial_h[i];
  *out = m;
  return CQ_OK;
}

static int CQ_D(cuda_grid_dot)(cqi_backend* b, const cq_real* x, const cq_real* y, double* out) {
  cuda_backend* g = (cuda_backend*)b;
  TRY(host_box(g));
  long blocks = (g->box.count + CQ_BLOCK - 1) / CQ_BLOCK;
  TRY(ensure_partials(g, blocks));
  LAUNCH(CQ_D(cqk_grid_dot), g->box.count, g->region_ctx, g->box, x, y, g->partial);
  CK(cudaMemcpyAsync(g->partial_h, g->partial, sizeof(double) * blocks, cudaMemcpyDeviceToHost, g->stream));
  CK(cudaStreamSynchronize(g->stream));
  double sum = 0;
  for (long i = 0; i < blocks; i++) sum += g->partial_h[i]; /* in block order */
  *out = sum;
  return CQ_OK;
}

static int CQ_D(cuda_grid_sums)(cqi_backend* b, const cq_real* x, double* out) {
  cuda_backend* g = (cuda_backend*)b;
  TRY(host_box(g));
  long blocks = (g->box.count + CQ_BLOCK - 1) / CQ_BLOCK;
  TRY(ensure_partials(g, (D + 1) * blocks));
  LAUNCH(CQ_D(cqk_grid_sums), g->box.count, g->region_ctx, g->box, x, g->partial);
  CK(cudaMemcpyAsync(g->partial_h, g->partial, sizeof(double) * (D + 1) * blocks, cudaMemcpyDeviceToHost, g->stream));
  CK(cudaStreamSynchronize(g->stream));
  for (int d = 0; d <= D; d++) {
    double sum = 0;
    for (long k = 0; k < blocks; k++) sum += g->partial_h[d * blocks + k]; /* in block order */
    out[d] = sum;
  }
  return CQ_OK;
}

/* The plain passes (engine/backends/passes.h), one kernel and launcher per row: a thread per particle (scatters add with
 * atomics: CQ_SCATTER_ADD in the bodies) or per node of the active box. A row with key does nothing after a failed
 * check of the control step's batch (a particle outside the grid would index past the grid). Arguments: a state's
 * gradient and the parameter gradients go by value (the body gets their address), the rest as they are. */
#define CQI_KDECL(kind, name) CQI_CAT(CQI_KDECL_, kind)(name)
#define CQI_KDECL_GS(x) cq_particles x
#define CQI_KDECL_GP(x) cq_param_grads x
#define CQI_KDECL_R CQI_PDECL_R
#define CQI_KDECL_CR CQI_PDECL_CR
#define CQI_KDECL_G CQI_PDECL_G
#define CQI_KDECL_CG CQI_PDECL_CG
#define CQI_KDECL_I CQI_PDECL_I
#define CQI_KDECL_S CQI_PDECL_S
#define CQI_KARG(kind, name) CQI_CAT(CQI_KARG_, kind)(name)
#define CQI_KARG_GS(x) &x
#define CQI_KARG_GP(x) &x
#define CQI_KARG_R(x) x
#define CQI_KARG_CR(x) x
#define CQI_KARG_I(x) x
#define CQI_KARG_S(x) x
#define CQI_LARG(kind, name) CQI_CAT(CQI_LARG_, kind)(name)
#define CQI_LARG_GS(x) ((x) ? *(x) : cqk_no_particles())
#define CQI_LARG_GP(x) (*(x))
#define CQI_LARG_R(x) x
#define CQI_LARG_CR(x) x
#define CQI_LARG_G(x) x
#define CQI_LARG_CG(x) x
#define CQI_LARG_I(x) x
#define CQI_LARG_S(x) x
#define CQI_KCAT_(a, b) a##b
#define CQI_KCAT(a, b) CQI_KCAT_(a, b)
#define CQI_CUDA_PASS(op, body, over, keyed, gpu, ...) \
  CQI_IF(gpu)(CQI_KCAT(CQI_CUDA_PASS_, over)(op, body, keyed, __VA_ARGS__))
#define CQI_CUDA_PASS_PARTICLES(op, body, keyed, ...)                                                            \
  __global__ void CQ_D(cqk_##op)(CQK_SUBSTEP c, CQK_PARTICLES s, CQK_PARAMS m, CQI_PMAP(CQI_KDECL, __VA_ARGS__), \
                                 const unsigned long long* key_) {                                               \
    if (key_ && *key_ != ULLONG_MAX) return;                                                                     \
    int p = blockIdx.x * blockDim.x + threadIdx.x;                                                               \
    if (p < s.n) CQ_D(body)(&c, &s, &m, p, CQI_PMAP(CQI_KARG, __VA_ARGS__));                                     \
  }                                                                                                              \
  static CQI_PASS_SIGNATURE(CQ_D(cuda_##op), PARTICLES, __VA_ARGS__) {                                           \
    cuda_backend* g = (cuda_backend*)b;                                                                          \
    LAUNCH(CQ_D(cqk_##op), s->n, *c, *s, *m, CQI_PMAP(CQI_LARG, __VA_ARGS__), (keyed) ? g->key : NULL);          \
    return CQ_OK;                                                                                                \
  }
#define CQI_CUDA_PASS_SCATTER CQI_CUDA_PASS_PARTICLES
#define CQI_CUDA_PASS_GROUPS CQI_CUDA_PASS_PARTICLES
#define CQI_CUDA_PASS_NODES(op, body, keyed, ...)                                               \
  __global__ void CQ_D(cqk_##op)(CQK_SUBSTEP c, cqi_box bx, CQI_PMAP(CQI_KDECL, __VA_ARGS__)) { \
    long t = (long)blockIdx.x * blockDim.x + threadIdx.x;                                       \
    if (t >= bx.count) return;                                                                  \
    int i[3];                                                                                   \
    long node = CQ_D(cqk_box_node)(&c, bx, t, i);                                               \
    CQ_D(body)(&c, node, i, CQI_PMAP(CQI_PNODE, __VA_ARGS__));                                  \
  }                                                                                             \
  static CQI_PASS_SIGNATURE(CQ_D(cuda_##op), NODES, __VA_ARGS__) {                              \
    cuda_backend* g = (cuda_backend*)b;                                                         \
    TRY(host_box(g));                                                                           \
    LAUNCH(CQ_D(cqk_##op), g->box.count, *c, g->box, CQI_PMAP(CQI_LARG, __VA_ARGS__));          \
    return CQ_OK;                                                                               \
  }
CQ_PASSES(CQI_CUDA_PASS)
#undef CQI_CUDA_PASS
#undef CQI_CUDA_PASS_PARTICLES
#undef CQI_CUDA_PASS_SCATTER
#undef CQI_CUDA_PASS_GROUPS
#undef CQI_CUDA_PASS_NODES

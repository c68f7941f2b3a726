/* CUDA kernels and their launch sequence for one dimension D (included twice by cuda.cu): one thread per particle or
 * per active node, each calling the shared CQ_HD bodies of engine/kernels.h (no formula is repeated here).
 * Scatters (P2G forward, G2P adjoint) collide on nodes; the bodies add through CQ_SCATTER_ADD, atomicAdd on the
 * device. */

/* Per-particle bounds check and base cell (the CPU's cpu_prepare test: finite x and v, 0 <= x/dx - 1/2 < res - 2),
 * reduced to info = {lo[0..2], hi[0..2], first bad particle} with one atomic per warp. */
__global__ void CQ_D(cqk_prepare)(cq_particles s, cq_substep c, int* info) {
  int p = blockIdx.x * blockDim.x + threadIdx.x, n = s.n;
  int lo[D], hi[D], bad = INT_MAX;
  for (int a = 0; a < D; a++) lo[a] = INT_MAX, hi[a] = INT_MIN;
  if (p < n) {
    int b[D], ok = 1;
    for (int a = 0; a < D && ok; a++) {
      cq_real xa = s.x[a * n + p], va = s.v[a * n + p];
      cq_real g = xa * c.inv_dx - (cq_real)0.5;
      ok = isfinite(xa) && isfinite(va) && g >= 0 && g < c.res[a] - 2;
      b[a] = ok ? (int)g : 0;
    }
    if (ok)
      for (int a = 0; a < D; a++) lo[a] = hi[a] = b[a];
    else
      bad = p;
  }
  for (int a = 0; a < D; a++) {
    lo[a] = __reduce_min_sync(0xffffffffu, lo[a]);
    hi[a] = __reduce_max_sync(0xffffffffu, hi[a]);
  }
  bad = __reduce_min_sync(0xffffffffu, bad);
  if ((threadIdx.x & 31) == 0) {
    for (int a = 0; a < D; a++) {
      if (lo[a] != INT_MAX) atomicMin(&info[a], lo[a]);
      if (hi[a] != INT_MIN) atomicMax(&info[3 + a], hi[a]);
    }
    if (bad != INT_MAX) atomicMin(&info[6], bad);
  }
}

/* Cable forces of this substep into f (which holds the user force or zeros): one thread runs the cables in order,
 * as the CPU does (few cables; a fixed order keeps the sum deterministic). */
__global__ void CQ_D(cqk_cables)(const cq_cable* cables, int n_cables, const int32_t* idx, const cq_real* x, int n,
                                 const cq_real* u, cq_real* f) {
  for (int k = 0; k < n_cables; k++) CQ_D(cable_forces)(&cables[k], idx, x, n, u[cables[k].act], f);
}

/* Cable adjoint: adds dL/dx into gx and writes dL/du of cable k into gcab[k] (the host adds it to its actuator). */
__global__ void CQ_D(cqk_cables_adj)(const cq_cable* cables, int n_cables, const int32_t* idx, const cq_real* x, int n,
                                     const cq_real* u, const cq_real* gf, cq_real* gx, cq_real* gcab) {
  for (int k = 0; k < n_cables; k++)
    gcab[k] = CQ_D(cable_forces_adj)(&cables[k], idx, x, n, u[cables[k].act], gf, gx);
}

__global__ void CQ_D(cqk_p2g)(cq_substep c, cq_particles s, cq_params m, const cq_real* u, cq_real* grid,
                              cq_real* cache) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < s.n) CQ_D(p2g)(&c, &s, &m, u, p, grid, cache);
}

__global__ void CQ_D(cqk_g2p)(cq_substep c, cq_particles s, const cq_real* gridv) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < s.n) CQ_D(g2p)(&c, &s, p, gridv);
}

__global__ void CQ_D(cqk_g2p_adj)(cq_substep c, cq_particles s, const cq_real* gridv, cq_particles g1, cq_particles g0,
                                  cq_real* adj, const cq_real* Cnext) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < s.n) CQ_D(g2p_adj)(&c, &s, p, gridv, &g1, &g0, adj, Cnext);
}

__global__ void CQ_D(cqk_p2g_adj)(cq_substep c, cq_particles s, cq_params m, const cq_real* u, const cq_real* adj,
                                  cq_particles g0, cq_real* gmass, cq_real* gvol0, cq_real* gE, cq_real* gnu,
                                  cq_real* gact, cq_real* gfext, cq_real* gauser, const cq_real* cache) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < s.n) CQ_D(p2g_adj)(&c, &s, &m, u, p, adj, &g0, gmass, gvol0, gE, gnu, gact, gfext, gauser, cache);
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

/* Grid update over the active box: mp (momentum, mass) -> v; v may alias mp. */
__global__ void CQ_D(cqk_grid)(cq_substep c, cqi_box b, const cq_real* mp, cq_real* v) {
  long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= b.count) return;
  int i[3];
  long node = CQ_D(cqk_box_node)(&c, b, t, i);
  CQ_D(grid_node)(&c, node, i, mp + node * (D + 1), v + node * (D + 1));
}

/* Grid adjoint over the active box: adj (dL/dv) -> (dL/dp, dL/dm) in place, given the forward (momentum, mass). */
__global__ void CQ_D(cqk_grid_adj)(cq_substep c, cqi_box b, const cq_real* mp, cq_real* adj) {
  long t = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= b.count) return;
  int i[3];
  long node = CQ_D(cqk_box_node)(&c, b, t, i);
  CQ_D(grid_node_adj)(&c, node, i, mp + node * (D + 1), adj + node * (D + 1));
}

/* ---- host side ---- */

/* Checks the particles on the device and sets the active region w->lo/hi; on a bad particle the CPU check on the
 * host copy (which the mirror scheme keeps current) writes the CPU's error message. */
static int CQ_D(cuda_prepare)(cq_world* w, const cq_particles* s, const cq_substep* c, long substep, cqi_box* box) {
  cqi_cuda* g = w->cuda;
  const int init[7] = {INT_MAX, INT_MAX, INT_MAX, INT_MIN, INT_MIN, INT_MIN, INT_MAX};
  CK(cudaMemcpyAsync(g->info, init, sizeof init, cudaMemcpyHostToDevice, g->stream));
  LAUNCH(CQ_D(cqk_prepare), s->n, g->ds, *c, g->info);
  CK(cudaMemcpyAsync(g->info_h, g->info, sizeof init, cudaMemcpyDeviceToHost, g->stream));
  CK(cudaStreamSynchronize(g->stream));
  if (g->info_h[6] != INT_MAX) {
    int st = cqi_cpu_check(w, s, substep);
    if (st != CQ_OK) return st;
    return cqi_fail(w, CQ_ERR_BLOWUP, "substep %ld: particle %d failed the CUDA bounds check (x outside "
                    "[0.5 dx, (res - 1.5) dx) or not finite) but passed the CPU one", substep, g->info_h[6] + 1);
  }
  box->count = 1;
  for (int a = 0; a < 3; a++) {
    w->lo[a] = a < D ? g->info_h[a] : 0;
    w->hi[a] = a < D ? g->info_h[3 + a] + 2 : 0; /* last node touched */
    box->lo[a] = w->lo[a];
    box->ext[a] = w->hi[a] - w->lo[a] + 1;
    box->count *= box->ext[a];
  }
  return CQ_OK;
}

/* Zeroes the slab of axis-0 layers lo[0]..hi[0] of a grid array (a superset of the active box, one memset). */
static int CQ_D(cuda_clear)(cq_world* w, const cq_substep* c, cq_real* grid) {
  size_t first = (size_t)w->lo[0] * c->stride[0] * (D + 1);
  size_t len = (size_t)(w->hi[0] - w->lo[0] + 1) * c->stride[0] * (D + 1);
  CK(cudaMemsetAsync(grid + first, 0, len * sizeof(cq_real), w->cuda->stream));
  return CQ_OK;
}

/* Extra particle forces of this substep on the device (user force + cables, as cpu_fext), or NULL when none. */
static int CQ_D(cuda_fext)(cq_world* w, const cq_real** fext) {
  cqi_cuda* g = w->cuda;
  *fext = NULL;
  if (w->n_cables == 0 && !w->fuser) return CQ_OK;
  size_t len = sizeof(cq_real) * (size_t)w->n * D;
  if (w->fuser) CK(cudaMemcpyAsync(g->fext, w->fuser, len, cudaMemcpyHostToDevice, g->stream));
  else CK(cudaMemsetAsync(g->fext, 0, len, g->stream));
  if (w->n_cables > 0) {
    CQ_D(cqk_cables)<<<1, 1, 0, g->stream>>>(g->cables, w->n_cables, g->cable_idx, g->ds.x, w->n, g->u, g->fext);
    CK(cudaGetLastError());
  }
  *fext = g->fext;
  return CQ_OK;
}

/* One substep forward: upload, prepare, clear, P2G, grid, G2P, download (contract of cqi_cpu_substep). */
static int CQ_D(cuda_substep)(cq_world* w, cq_particles* s, const cq_real* u, long substep) {
  cqi_cuda* g = w->cuda;
  cq_substep c;
  cq_params m;
  cqi_box box;
  TRY(cuda_inputs(w, s, u, substep, &c, &m));
  TRY(CQ_D(cuda_prepare)(w, s, &c, substep, &box));
  TRY(CQ_D(cuda_fext)(w, &m.fext));
  TRY(CQ_D(cuda_clear)(w, &c, g->grid));
  LAUNCH(CQ_D(cqk_p2g), w->n, c, g->ds, m, g->u, g->grid, (cq_real*)NULL);
  LAUNCH(CQ_D(cqk_grid), box.count, c, box, g->grid, g->grid);
  LAUNCH(CQ_D(cqk_g2p), w->n, c, g->ds, g->grid);
  return cuda_download_state(w, s);
}

/* Adjoint of one substep (contract of cqi_cpu_substep_adj). */
static int CQ_D(cuda_substep_adj)(cq_world* w, const cq_particles* s, const cq_particles* s1, const cq_real* u,
                                  long substep, const cq_particles* g1, cq_particles* g0, cq_real* gmass,
                                  cq_real* gvol0, cq_real* gE, cq_real* gnu, double* gu, cq_real* gfuser,
                                  cq_real* gauser) {
  cqi_cuda* g = w->cuda;
  cq_substep c;
  cq_params m;
  cqi_box box;
  TRY(cuda_alloc_backward(w));
  TRY(cuda_inputs(w, s, u, substep, &c, &m));
  TRY(cuda_inputs_adj(w, s1, g1, gmass, gvol0, gE, gnu, m.auser ? gauser : NULL));
  TRY(CQ_D(cuda_prepare)(w, s, &c, substep, &box));
  TRY(CQ_D(cuda_fext)(w, &m.fext));
  cq_real* gfext = m.fext ? g->gfext : NULL;
  /* recompute the forward grid */
  TRY(CQ_D(cuda_clear)(w, &c, g->grid));
  LAUNCH(CQ_D(cqk_p2g), w->n, c, g->ds, m, g->u, g->grid, g->cache);
  LAUNCH(CQ_D(cqk_grid), box.count, c, box, g->grid, g->grid_v);
  /* G2P adjoint (scatter), grid adjoint, P2G adjoint (gather) */
  TRY(CQ_D(cuda_clear)(w, &c, g->grid_adj));
  LAUNCH(CQ_D(cqk_g2p_adj), w->n, c, g->ds, g->grid_v, g->dg1, g->dg0, g->grid_adj, s1 ? g->s1C : NULL);
  LAUNCH(CQ_D(cqk_grid_adj), box.count, c, box, g->grid, g->grid_adj);
  LAUNCH(CQ_D(cqk_p2g_adj), w->n, c, g->ds, m, g->u, g->grid_adj, g->dg0, g->gmass, g->gvol0, g->gE, g->gnu, g->gact,
         gfext, (m.auser && gauser) ? g->gauser : (cq_real*)NULL, g->cache);
  if (gfext && w->n_cables > 0) {
    CQ_D(cqk_cables_adj)<<<1, 1, 0, g->stream>>>(g->cables, w->n_cables, g->cable_idx, g->ds.x, w->n, g->u, gfext,
                                                g->dg0.x, g->gcab);
    CK(cudaGetLastError());
  }
  return cuda_outputs_adj(w, g0, gmass, gvol0, gE, gnu, gu, gfext ? gfuser : NULL, gfext != NULL,
                          m.auser ? gauser : NULL);
}

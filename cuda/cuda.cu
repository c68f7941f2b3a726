/* CUDA backend: device buffers of a world and one substep forward / adjoint on the GPU, launching the same CQ_HD
 * bodies as the CPU backend (engine/kernels.h). First version: a mirror scheme (each substep uploads its inputs from
 * the host arrays and downloads its outputs), one kernel per stage, atomics for the scatters; see cuda/README.md. */
#include <cuda_runtime.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "../engine/internal.h"
}
#include "../engine/kernels.h"

#define CQ_BLOCK 128 /* threads per block of the per-particle and per-node kernels */

/* Device copies of everything a substep reads or writes. Particle arrays are component-major as on the host. */
struct cqi_cuda {
  cudaStream_t stream;
  int D;
  cq_particles ds;            /* state (one block of n (2D + 2D^2) reals) */
  cq_particles dg1, dg0;      /* dL/d(state after), dL/d(state before) (backward) */
  cq_real* s1C;               /* [D*D][n] C of the state after the substep (backward) */
#define X(name, ctype, type, shape, diff, doc) ctype* name;
  CQ_PARAM_FIELDS(X)          /* per-particle parameters, re-uploaded every substep (Lua may write them) */
#undef X
  uint8_t* act_kind;          /* [n_act] */
  cq_real* u;                 /* [n_act] actuation of the current control step */
  cq_real* fext;              /* [D][n] extra particle forces (user force + cables) */
  cq_real* gfext;             /* [D][n] their gradient (backward) */
  cq_real* auser;             /* [D*D][n] user actuation stress (allocated on first use) */
  cq_real* gauser;            /* [D*D][n] its gradient accumulator (backward, on first use) */
  cq_real *gmass, *gvol0, *gE, *gnu, *gact; /* [n] parameter gradients (accumulated), per-particle dL/du */
  cq_real* cache;             /* [3 D*D][n] P2G stresses of the recompute (backward) */
  cq_real *grid, *grid_v, *grid_adj; /* [n_nodes][D+1] */
  int32_t* node_bc_index;     /* [n_nodes] or NULL */
  cq_bc* node_bcs;            /* [nbc] */
  int nbc;                    /* node BCs uploaded (-1: none yet); they only grow, so the count identifies them */
  cq_cable* cables;           /* [ncab] */
  int32_t* cable_idx;         /* [n_cable_idx] */
  cq_real* gcab;              /* [ncab] dL/du per cable (backward) */
  int ncab;                   /* cables uploaded */
  int* info;                  /* [7] prepare's reduction: lo[3], hi[3], first bad particle */
  int* info_h;                /* pinned host copy of info */
  cq_real *gact_h, *gfext_h, *gcab_h; /* pinned host scratch (backward) */
};

/* The active node box of a substep: lo + [0, ext) per axis (ext = 1 on unused axes), count nodes. */
typedef struct {
  int lo[3], ext[3];
  long count;
} cqi_box;

/* Every CUDA call is checked; the message names the file and line. */
static int cqi_cuda_fail(cq_world* w, cudaError_t e, const char* what, const char* file, int line) {
  return cqi_fail(w, e == cudaErrorMemoryAllocation ? CQ_ERR_NOMEM : CQ_ERR_STATE, "CUDA error at %s:%d: %s (%s)",
                  file, line, cudaGetErrorString(e), what);
}
#define CK(call)                                                                     \
  do {                                                                               \
    cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) return cqi_cuda_fail(w, e_, #call, __FILE__, __LINE__);   \
  } while (0)
#define TRY(call)                 \
  do {                            \
    int st_ = (call);             \
    if (st_ != CQ_OK) return st_; \
  } while (0)
/* Launches kernel over count threads (one per particle or node) on the world's stream. */
#define LAUNCH(kernel, count, ...)                                                                      \
  do {                                                                                                  \
    long cnt_ = (count);                                                                                \
    if (cnt_ > 0) {                                                                                     \
      kernel<<<(unsigned)((cnt_ + CQ_BLOCK - 1) / CQ_BLOCK), CQ_BLOCK, 0, w->cuda->stream>>>(__VA_ARGS__); \
      CK(cudaGetLastError());                                                                           \
    }                                                                                                   \
  } while (0)

static size_t state_len(int n, int D) { return (size_t)n * (2 * D + 2 * D * D); }

/* Views of a state block (x, v, C, F consecutive, as cqi_state_alloc lays them out). */
static cq_particles particles_view(cq_real* block, int n, int D) {
  cq_particles p;
  p.n = n;
  p.x = block;
  p.v = p.x + (size_t)n * D;
  p.C = p.v + (size_t)n * D;
  p.F = p.C + (size_t)n * D * D;
  return p;
}

/* Copies the four fields of a particle state between host and device (src and dst views of n particles). */
static int copy_particles(cq_world* w, const cq_particles* dst, const cq_particles* src, cudaMemcpyKind kind) {
  size_t vec = sizeof(cq_real) * (size_t)w->n * w->dim, mat = vec * w->dim;
  cudaStream_t st = w->cuda->stream;
  CK(cudaMemcpyAsync(dst->x, src->x, vec, kind, st));
  CK(cudaMemcpyAsync(dst->v, src->v, vec, kind, st));
  CK(cudaMemcpyAsync(dst->C, src->C, mat, kind, st));
  CK(cudaMemcpyAsync(dst->F, src->F, mat, kind, st));
  return CQ_OK;
}

static int cuda_alloc_backward(cq_world* w) {
  cqi_cuda* g = w->cuda;
  if (g->grid_v) return CQ_OK;
  int n = w->n, D = w->dim;
  size_t R = sizeof(cq_real), grid = R * w->n_nodes * (D + 1);
  cq_real *b1, *b0;
  CK(cudaMalloc((void**)&b1, R * state_len(n, D)));
  g->dg1 = particles_view(b1, n, D);
  CK(cudaMalloc((void**)&b0, R * state_len(n, D)));
  g->dg0 = particles_view(b0, n, D);
  CK(cudaMalloc((void**)&g->s1C, R * n * D * D));
  CK(cudaMalloc((void**)&g->gmass, R * n));
  CK(cudaMalloc((void**)&g->gvol0, R * n));
  CK(cudaMalloc((void**)&g->gE, R * n));
  CK(cudaMalloc((void**)&g->gnu, R * n));
  CK(cudaMalloc((void**)&g->gact, R * n));
  CK(cudaMalloc((void**)&g->gfext, R * n * D));
  CK(cudaMalloc((void**)&g->cache, R * n * 3 * D * D));
  CK(cudaMalloc((void**)&g->grid_adj, grid));
  CK(cudaMallocHost((void**)&g->gact_h, R * n));
  CK(cudaMallocHost((void**)&g->gfext_h, R * n * D));
  CK(cudaMalloc((void**)&g->grid_v, grid)); /* last: marks the backward buffers complete */
  return CQ_OK;
}

/* Uploads what every substep reads (state s, parameters, actuation, node BCs, cables, user stress) and fills the
 * substep constants c and parameters m with device pointers (m.fext = NULL: see cuda_fext). */
static int cuda_inputs(cq_world* w, const cq_particles* s, const cq_real* u, long substep, cq_substep* c,
                       cq_params* m) {
  cqi_cuda* g = w->cuda;
  int n = w->n, D = w->dim;
  cudaStream_t st = g->stream;
  TRY(copy_particles(w, &g->ds, s, cudaMemcpyHostToDevice));
#define X(name, ctype, type, shape, diff, doc) \
  CK(cudaMemcpyAsync(g->name, w->name, sizeof(ctype) * n * cqi_shape_len(shape, D), cudaMemcpyHostToDevice, st));
  CQ_PARAM_FIELDS(X)
#undef X
  if (w->n_act > 0) {
    CK(cudaMemcpyAsync(g->act_kind, w->act_kind, w->n_act, cudaMemcpyHostToDevice, st));
    CK(cudaMemcpyAsync(g->u, u, sizeof(cq_real) * w->n_act, cudaMemcpyHostToDevice, st));
  }
  if (w->node_bc_index && g->nbc != w->n_node_bcs) { /* node BCs changed since the last upload */
    CK(cudaStreamSynchronize(st));
    cudaFree(g->node_bcs);
    g->node_bcs = NULL;
    if (!g->node_bc_index) CK(cudaMalloc((void**)&g->node_bc_index, sizeof(int32_t) * w->n_nodes));
    if (w->n_node_bcs > 0) CK(cudaMalloc((void**)&g->node_bcs, sizeof(cq_bc) * w->n_node_bcs));
    CK(cudaMemcpyAsync(g->node_bc_index, w->node_bc_index, sizeof(int32_t) * w->n_nodes, cudaMemcpyHostToDevice, st));
    if (w->n_node_bcs > 0)
      CK(cudaMemcpyAsync(g->node_bcs, w->node_bcs, sizeof(cq_bc) * w->n_node_bcs, cudaMemcpyHostToDevice, st));
    g->nbc = w->n_node_bcs;
  }
  if (g->ncab != w->n_cables) { /* cables are only ever added */
    CK(cudaStreamSynchronize(st));
    cudaFree(g->cables);
    cudaFree(g->cable_idx);
    cudaFree(g->gcab);
    cudaFreeHost(g->gcab_h);
    g->cables = NULL, g->cable_idx = NULL, g->gcab = g->gcab_h = NULL, g->ncab = 0;
    CK(cudaMalloc((void**)&g->cables, sizeof(cq_cable) * w->n_cables));
    CK(cudaMalloc((void**)&g->cable_idx, sizeof(int32_t) * w->n_cable_idx));
    CK(cudaMalloc((void**)&g->gcab, sizeof(cq_real) * w->n_cables));
    CK(cudaMallocHost((void**)&g->gcab_h, sizeof(cq_real) * w->n_cables));
    CK(cudaMemcpyAsync(g->cables, w->cables, sizeof(cq_cable) * w->n_cables, cudaMemcpyHostToDevice, st));
    CK(cudaMemcpyAsync(g->cable_idx, w->cable_idx, sizeof(int32_t) * w->n_cable_idx, cudaMemcpyHostToDevice, st));
    g->ncab = w->n_cables;
  }
  if (w->auser) {
    if (!g->auser) CK(cudaMalloc((void**)&g->auser, sizeof(cq_real) * n * D * D));
    CK(cudaMemcpyAsync(g->auser, w->auser, sizeof(cq_real) * n * D * D, cudaMemcpyHostToDevice, st));
  }
  *c = cqi_substep_ctx(w, substep);
  c->node_bc_index = w->node_bc_index ? g->node_bc_index : NULL;
  c->node_bcs = w->node_bc_index ? g->node_bcs : NULL;
  memset(m, 0, sizeof *m);
#define X(name, ctype, type, shape, diff, doc) m->name = g->name;
  CQ_PARAM_FIELDS(X)
#undef X
  m->act_kind = g->act_kind;
  m->fext = NULL;
  m->auser = w->auser ? g->auser : NULL;
  return CQ_OK;
}

/* Backward inputs: C of the state after (s1, may be NULL), the incoming gradient g1, the parameter-gradient
 * accumulators and, with a user stress, its gradient accumulator gauser (may be NULL). */
static int cuda_inputs_adj(cq_world* w, const cq_particles* s1, const cq_particles* g1, const cq_real* gmass,
                           const cq_real* gvol0, const cq_real* gE, const cq_real* gnu, const cq_real* gauser) {
  cqi_cuda* g = w->cuda;
  size_t sn = sizeof(cq_real) * w->n, mat = sn * w->dim * w->dim;
  cudaStream_t st = g->stream;
  if (s1) CK(cudaMemcpyAsync(g->s1C, s1->C, mat, cudaMemcpyHostToDevice, st));
  TRY(copy_particles(w, &g->dg1, g1, cudaMemcpyHostToDevice));
  CK(cudaMemcpyAsync(g->gmass, gmass, sn, cudaMemcpyHostToDevice, st));
  CK(cudaMemcpyAsync(g->gvol0, gvol0, sn, cudaMemcpyHostToDevice, st));
  CK(cudaMemcpyAsync(g->gE, gE, sn, cudaMemcpyHostToDevice, st));
  CK(cudaMemcpyAsync(g->gnu, gnu, sn, cudaMemcpyHostToDevice, st));
  if (gauser) {
    if (!g->gauser) CK(cudaMalloc((void**)&g->gauser, mat));
    CK(cudaMemcpyAsync(g->gauser, gauser, mat, cudaMemcpyHostToDevice, st));
  }
  return CQ_OK;
}

static int cuda_download_state(cq_world* w, cq_particles* s) {
  TRY(copy_particles(w, s, &w->cuda->ds, cudaMemcpyDeviceToHost));
  CK(cudaStreamSynchronize(w->cuda->stream));
  return CQ_OK;
}

/* Backward outputs: g0, the parameter gradients, and on the host (fixed order, as the CPU): gu from the
 * per-particle dL/du then the cables, gfuser += dL/d(extra force) (when gfuser is non-NULL), gauser. */
static int cuda_outputs_adj(cq_world* w, cq_particles* g0, cq_real* gmass, cq_real* gvol0, cq_real* gE, cq_real* gnu,
                            double* gu, cq_real* gfuser, int has_gfext, cq_real* gauser) {
  cqi_cuda* g = w->cuda;
  int n = w->n, D = w->dim;
  size_t sn = sizeof(cq_real) * n;
  cudaStream_t st = g->stream;
  TRY(copy_particles(w, g0, &g->dg0, cudaMemcpyDeviceToHost));
  CK(cudaMemcpyAsync(gmass, g->gmass, sn, cudaMemcpyDeviceToHost, st));
  CK(cudaMemcpyAsync(gvol0, g->gvol0, sn, cudaMemcpyDeviceToHost, st));
  CK(cudaMemcpyAsync(gE, g->gE, sn, cudaMemcpyDeviceToHost, st));
  CK(cudaMemcpyAsync(gnu, g->gnu, sn, cudaMemcpyDeviceToHost, st));
  if (w->n_act > 0) CK(cudaMemcpyAsync(g->gact_h, g->gact, sn, cudaMemcpyDeviceToHost, st));
  if (has_gfext && w->n_cables > 0)
    CK(cudaMemcpyAsync(g->gcab_h, g->gcab, sizeof(cq_real) * w->n_cables, cudaMemcpyDeviceToHost, st));
  if (has_gfext && gfuser) CK(cudaMemcpyAsync(g->gfext_h, g->gfext, sn * D, cudaMemcpyDeviceToHost, st));
  if (gauser) CK(cudaMemcpyAsync(gauser, g->gauser, sn * D * D, cudaMemcpyDeviceToHost, st));
  CK(cudaStreamSynchronize(st));
  if (w->n_act > 0)
    for (int p = 0; p < n; p++)
      if (w->act_id[p] >= 0) gu[w->act_id[p]] += g->gact_h[p];
  if (has_gfext) {
    for (int k = 0; k < w->n_cables; k++) gu[w->cables[k].act] += g->gcab_h[k];
    if (gfuser)
      for (long i = 0; i < (long)n * D; i++) gfuser[i] += g->gfext_h[i];
  }
  return CQ_OK;
}

#define D 2
#include "cuda_loops.cuh"
#undef D
#define D 3
#include "cuda_loops.cuh"
#undef D

/* ---- entry points (internal.h) ---- */

int cqi_cuda_init(cq_world* w) {
  if (w->cuda) return CQ_OK;
  char why[256];
  if (cq_cuda_device_count(why, sizeof why) <= 0)
    return cqi_fail(w, CQ_ERR_ARG, "backend cuda: no usable CUDA device (%s)", why);
  cqi_cuda* g = (cqi_cuda*)calloc(1, sizeof *g);
  if (!g) return cqi_fail(w, CQ_ERR_NOMEM, "out of memory");
  w->cuda = g;
  g->D = w->dim;
  g->nbc = -1;
  int st = CQ_OK;
  do {
    int n = w->n, D = w->dim;
    size_t R = sizeof(cq_real);
    cq_real* block;
#define CKI(call)                                                             \
  {                                                                           \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) {                                                  \
      st = cqi_cuda_fail(w, e_, #call, __FILE__, __LINE__);                   \
      break;                                                                  \
    }                                                                         \
  }
    CKI(cudaSetDevice(0));
    CKI(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
    CKI(cudaMalloc((void**)&block, R * state_len(n, D)));
    g->ds = particles_view(block, n, D);
#define X(name, ctype, type, shape, diff, doc) \
    CKI(cudaMalloc((void**)&g->name, sizeof(ctype) * n * cqi_shape_len(shape, D)));
    CQ_PARAM_FIELDS(X)
#undef X
    CKI(cudaMalloc((void**)&g->act_kind, w->n_act > 0 ? w->n_act : 1));
    CKI(cudaMalloc((void**)&g->u, R * (w->n_act > 0 ? w->n_act : 1)));
    CKI(cudaMalloc((void**)&g->fext, R * n * D));
    CKI(cudaMalloc((void**)&g->grid, R * w->n_nodes * (D + 1)));
    CKI(cudaMalloc((void**)&g->info, sizeof(int) * 7));
    CKI(cudaMallocHost((void**)&g->info_h, sizeof(int) * 7));
#undef CKI
  } while (0);
  if (st != CQ_OK) cqi_cuda_free(w);
  return st;
}

void cqi_cuda_free(cq_world* w) {
  cqi_cuda* g = w->cuda;
  if (!g) return;
  if (g->stream) cudaStreamSynchronize(g->stream);
  void* dev[] = {g->ds.x, g->dg1.x, g->dg0.x, g->s1C, g->act_kind, g->u, g->fext, g->gfext, g->auser, g->gauser,
                 g->gmass, g->gvol0, g->gE, g->gnu, g->gact, g->cache, g->grid, g->grid_v, g->grid_adj,
                 g->node_bc_index, g->node_bcs, g->cables, g->cable_idx, g->gcab, g->info};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) cudaFree(dev[i]);
#define X(name, ctype, type, shape, diff, doc) cudaFree(g->name);
  CQ_PARAM_FIELDS(X)
#undef X
  void* pinned[] = {g->info_h, g->gact_h, g->gfext_h, g->gcab_h};
  for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) cudaFreeHost(pinned[i]);
  if (g->stream) cudaStreamDestroy(g->stream);
  cudaGetLastError(); /* errors while tearing down (e.g. at process exit) are not reported */
  free(g);
  w->cuda = NULL;
}

int cqi_cuda_substep(cq_world* w, cq_particles* s, const cq_real* u, long substep) {
  return w->dim == 2 ? cuda_substep_2(w, s, u, substep) : cuda_substep_3(w, s, u, substep);
}

int cqi_cuda_substep_adj(cq_world* w, const cq_particles* s, const cq_particles* s1, const cq_real* u, long substep,
                         const cq_particles* g1, cq_particles* g0, cq_real* gmass, cq_real* gvol0, cq_real* gE,
                         cq_real* gnu, double* gu, cq_real* gfuser, cq_real* gauser) {
  return w->dim == 2 ? cuda_substep_adj_2(w, s, s1, u, substep, g1, g0, gmass, gvol0, gE, gnu, gu, gfuser, gauser)
                     : cuda_substep_adj_3(w, s, s1, u, substep, g1, g0, gmass, gvol0, gE, gnu, gu, gfuser, gauser);
}

/* ---- device queries (cq.h) ---- */

/* Devices this build can run on: compute capability >= 9.0 (sm_90 code and compute_90 PTX). */
int cq_cuda_device_count(char* err, int errlen) {
  int n = 0, usable = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (err && errlen > 0)
      snprintf(err, errlen, "%s: %s%s", cudaGetErrorName(e), cudaGetErrorString(e),
               e == cudaErrorInsufficientDriver ? " (no NVIDIA driver found, or one older than this CUDA runtime)"
                                                : "");
    cudaGetLastError();
    return e == cudaErrorNoDevice ? 0 : -1;
  }
  cudaDeviceProp prop;
  for (int d = 0; d < n; d++)
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess && prop.major >= 9) usable++;
  if (usable == 0 && err && errlen > 0) {
    if (n == 0) snprintf(err, errlen, "no CUDA device found");
    else if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
      snprintf(err, errlen, "device 0 (%s) has compute capability %d.%d; this library was built for 9.0 and up "
               "(rebuild with CUDA_GENCODE for that device)", prop.name, prop.major, prop.minor);
    else snprintf(err, errlen, "no device of compute capability >= 9.0");
  }
  /* device 0 is the one used: it must be usable */
  if (usable > 0 && (cudaGetDeviceProperties(&prop, 0) != cudaSuccess || prop.major < 9)) {
    if (err && errlen > 0) snprintf(err, errlen, "device 0 has compute capability < 9.0 (set CUDA_VISIBLE_DEVICES)");
    return 0;
  }
  return usable;
}

int cq_cuda_device_info(char* buf, int len) {
  cudaDeviceProp prop;
  cudaError_t e = cudaGetDeviceProperties(&prop, 0);
  if (e != cudaSuccess) {
    snprintf(buf, len, "%s", cudaGetErrorString(e));
    cudaGetLastError();
    return CQ_ERR_STATE;
  }
  int drv = 0, rt = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rt);
  snprintf(buf, len, "%s, compute capability %d.%d, %d SMs, %.1f GiB, driver %d.%d, runtime %d.%d", prop.name,
           prop.major, prop.minor, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, drv / 1000,
           drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
  return CQ_OK;
}

double cq_cuda_memcpy_bandwidth(double bytes, int reps, char* err, int errlen) {
  size_t b = (size_t)bytes;
  void *src = NULL, *dst = NULL;
  cudaEvent_t t0 = NULL, t1 = NULL;
  double best = -1;
  cudaError_t e = cudaSetDevice(0);
  if (e == cudaSuccess) e = cudaMalloc(&src, b);
  if (e == cudaSuccess) e = cudaMalloc(&dst, b);
  if (e == cudaSuccess) e = cudaMemset(src, 1, b);
  if (e == cudaSuccess) e = cudaEventCreate(&t0);
  if (e == cudaSuccess) e = cudaEventCreate(&t1);
  if (e == cudaSuccess) e = cudaMemcpy(dst, src, b, cudaMemcpyDeviceToDevice); /* warm-up */
  for (int r = 0; r < (reps > 0 ? reps : 1) && e == cudaSuccess; r++) {
    float ms = 0;
    e = cudaEventRecord(t0);
    if (e == cudaSuccess) e = cudaMemcpyAsync(dst, src, b, cudaMemcpyDeviceToDevice);
    if (e == cudaSuccess) e = cudaEventRecord(t1);
    if (e == cudaSuccess) e = cudaEventSynchronize(t1);
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, t0, t1);
    if (e == cudaSuccess && ms > 0 && (best < 0 || 2.0 * b / (ms * 1e-3) > best)) best = 2.0 * b / (ms * 1e-3);
  }
  if (e != cudaSuccess) {
    if (err && errlen > 0) snprintf(err, errlen, "%s", cudaGetErrorString(e));
    best = -1;
  }
  cudaFree(src);
  cudaFree(dst);
  if (t0) cudaEventDestroy(t0);
  if (t1) cudaEventDestroy(t1);
  cudaGetLastError();
  return best;
}

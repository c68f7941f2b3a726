/* The CUDA backend: the primitives of engine/backends/backend.h on an NVIDIA GPU, launching the same CQ_HD bodies as the CPU
 * backend (engine/stages/kernels.h). Its memory is device memory: the integrator's grid vectors, the memo's checkpoints and
 * the model's parameters (uploaded when they change) live there; states are managed memory that the kernels use in
 * place; a control step's substeps run as one batch, checked at its end. See cuda/README.md. */
#include <cuda_runtime.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "backend.h"
#include "backend_dims.h"
}
#include "kernels.h"

#define CQ_BLOCK 128 /* threads per block of the per-particle and per-node kernels */
/* The substep context as a kernel parameter: the shared bodies take its address (and keep pointers to its walls), which
 * for a plain parameter makes every thread copy the whole struct to local memory first (a 368-byte stack frame in the
 * grid update); __grid_constant__ lets them read it in place. */
#define CQK_SUBSTEP const __grid_constant__ cq_substep
#define CQK_PARTICLES const __grid_constant__ cq_particles /* the same for the particle arrays and parameters */
#define CQK_PARAMS const __grid_constant__ cq_params

/* The active node box of a substep: lo + [0, ext) per axis (ext = 1 on unused axes), count nodes. */
typedef struct {
  int lo[3], ext[3];
  long count;
} cqi_box;

typedef struct cuda_backend {
  cqi_backend base;
  cudaStream_t stream;
  const cqi_model* model; /* the host model of the last sync (cable actuator ids, act_id for reductions) */
#define CQI_MEMBER(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) ctype* name;
  CQ_PARAM_FIELDS(CQI_MEMBER) /* device copies of the parameters */
#undef CQI_MEMBER
  uint8_t* act_kind;  /* [n_act] */
  cq_cable* cables;   /* [cap_cables] */
  int32_t* cable_idx; /* [cap_cable_idx] */
  cq_real* gcab;      /* [cap_cables] dL/du per cable (backward) */
  cq_real* gcab_h;    /* pinned host copy */
  int cap_cables, cap_cable_idx;
  int32_t* node_bc_index; /* [n_nodes] or NULL */
  cq_bc* node_bcs;        /* [cap_bcs] */
  int cap_bcs;
  int* info;   /* [12] prepare's reduction lo[3], hi[3]; then their initial values */
  int* info_h; /* pinned host copy */
  /* check reduction, min over failing particles of (order * CQ_N_CHECKS + check) * n + particle (ULLONG_MAX: none);
   * order = 2 j + after for the j-th prepare of a batch, 0 outside batches */
  unsigned long long* key;
  unsigned long long* key_h;             /* pinned host copy */
  unsigned long long *nf_key, *nf_key_h; /* [cap_nf] first_nonfinite's result per array, and its pinned copy */
  int cap_nf;
  int in_batch, batch_prepares; /* inside begin_batch .. end_batch; prepare calls so far in it */
  int box_known;                /* box holds the last prepare's region (read back); 0 inside batches until needed */
  unsigned grid_blocks;         /* blocks of the grid-stride node kernels (those that read the box on the device) */
  long local_min_blocks;        /* smallest per-particle launch whose scatters go through shared memory (cqk_p2g) */
  int sms;                      /* the device's multiprocessors */
  int prefetch;                 /* upload between equal pointers prefetches (CQ_CUDA_PREFETCH=1; else does nothing) */
  double* act_sums;             /* [n_act] act_grad's sums of the batch (device), added to act_gu at end_batch */
  double* act_gu;               /* host target of act_sums (NULL: nothing pending) */
  double *partial, *partial_h;  /* [cap_partial] grid_dot block sums */
  /* [n_act] the closed cavities' sums over their walls, the corrections' coefficients and their gradients */
  cqi_cavity_sums *cav_sums, *cav_gsums;
  cqi_cavity_coef *cav_coef, *cav_gcoef;
  long cap_partial;
  double *mom, *mom_h; /* [CQI_MOMENTS_MAX] the mass moments' sums (device), and their pinned host copy */
  double* rd;          /* [cap_rd] read's doubles on the device */
  long cap_rd;
  cqi_box box;           /* active region of the last prepare */
  cq_substep region_ctx; /* its strides */
} cuda_backend;

/* Every CUDA call is checked; the message names the file and line. */
static int cuda_fail(cqi_backend* b, cudaError_t e, const char* what, const char* file, int line) {
  return cqi_errorf(b->err, e == cudaErrorMemoryAllocation ? CQ_ERR_NOMEM : CQ_ERR_STATE,
                    "CUDA error at %s:%d: %s (%s)", file, line, cudaGetErrorString(e), what);
}
#define CK(call)                                                                      \
  do {                                                                                \
    cudaError_t e_ = (call);                                                          \
    if (e_ != cudaSuccess) return cuda_fail(&g->base, e_, #call, __FILE__, __LINE__); \
  } while (0)
#define TRY(call)                 \
  do {                            \
    int st_ = (call);             \
    if (st_ != CQ_OK) return st_; \
  } while (0)
#include "timing.cuh"
#define CQK_NAME(kernel) CQK_NAME_(kernel) /* the kernel's name, its dimension suffix expanded */
#define CQK_NAME_(kernel) #kernel
/* Launches kernel over count threads (one per particle or node) on the backend's stream. */
#define LAUNCH(kernel, count, ...)                                                                   \
  do {                                                                                               \
    long cnt_ = (count);                                                                             \
    if (cnt_ > 0) {                                                                                  \
      timing_begin(g->stream, CQK_NAME(kernel));                                                     \
      kernel<<<(unsigned)((cnt_ + CQ_BLOCK - 1) / CQ_BLOCK), CQ_BLOCK, 0, g->stream>>>(__VA_ARGS__); \
      timing_end(g->stream);                                                                         \
      CK(cudaGetLastError());                                                                        \
    }                                                                                                \
  } while (0)
/* Launches a grid-stride node kernel (one that reads the active box on the device): correct for any box, sized by
 * the last box the host saw (with room to grow; the box moves slowly), at most grid_blocks blocks. */
#define LAUNCH_NODES(kernel, ...)                                    \
  do {                                                               \
    timing_begin(g->stream, CQK_NAME(kernel));                       \
    kernel<<<node_blocks(g), CQ_BLOCK, 0, g->stream>>>(__VA_ARGS__); \
    timing_end(g->stream);                                           \
    CK(cudaGetLastError());                                          \
  } while (0)
/* An asynchronous copy or clear on the stream, timed as `what` under CQ_CUDA_TIMING. */
#define TIMED(what, call)          \
  do {                             \
    timing_begin(g->stream, what); \
    cudaError_t te_ = (call);      \
    timing_end(g->stream);         \
    CK(te_);                       \
  } while (0)

static long particle_blocks(const cuda_backend* g, long n) { return (n + CQ_BLOCK - 1) / CQ_BLOCK; }

static unsigned node_blocks(const cuda_backend* g) {
  if (g->box.count <= 0) return g->grid_blocks; /* no box seen yet */
  long want = (g->box.count + g->box.count / 2 + CQ_BLOCK - 1) / CQ_BLOCK;
  return want < (long)g->grid_blocks ? (unsigned)want : g->grid_blocks;
}

static int reset_key(cuda_backend* g) {
  CK(cudaMemsetAsync(g->key, 0xff, sizeof *g->key, g->stream));
  return CQ_OK;
}

/* The check key k (see cuda_backend.key) as a cqi_check. */
static void decode_key(const cuda_backend* g, unsigned long long k, cqi_check* bad) {
  unsigned long long n = (unsigned long long)g->base.n, per_order = (unsigned long long)CQ_N_CHECKS * n;
  if (k == ULLONG_MAX) {
    *bad = (cqi_check){CQ_CHECK_OK, -1, 0, 0, 0};
    return;
  }
  unsigned long long order = k / per_order, rest = k % per_order;
  *bad = (cqi_check){(int)(rest / n), (int)(rest % n), (int)(order & 1), (int)(order >> 1), 0};
}

/* Waits for the stream and turns the check key into *bad. */
static int read_key(cuda_backend* g, cqi_check* bad) {
  CK(cudaMemcpyAsync(g->key_h, g->key, sizeof *g->key, cudaMemcpyDeviceToHost, g->stream));
  CK(cudaStreamSynchronize(g->stream));
  decode_key(g, *g->key_h, bad);
  return CQ_OK;
}

/* The key offset of a check kernel: its order in the batch (see cuda_backend.key), 0 outside batches. */
static unsigned long long key_base(const cuda_backend* g, int after) {
  if (!g->in_batch) return 0;
  unsigned long long order = 2ull * (unsigned long long)(g->batch_prepares - 1) + (unsigned long long)after;
  return order * CQ_N_CHECKS * (unsigned long long)g->base.n;
}

/* The active box from prepare's reduction info = lo[3], hi[3]: nodes lo .. hi + 2 per axis, none when no particle
 * passed. The host (parse_box) and the node kernels (cqk_info_box) both read it through this. */
__host__ __device__ static inline cqi_box box_from_info(const int* info, int dim) {
  cqi_box b;
  b.count = 1;
  for (int a = 0; a < 3; a++) {
    long ext = a < dim ? (long)info[3 + a] + 3 - info[a] : 1;
    b.lo[a] = a < dim ? info[a] : 0;
    b.ext[a] = (int)(ext > 0 ? ext : 0);
    b.count *= b.ext[a];
  }
  return b;
}
static void parse_box(cuda_backend* g, const int* info) {
  g->box = box_from_info(info, g->base.dim);
  g->box_known = 1;
}

/* The active box of the last prepare on the host (read back if a batch has not yet needed it): the implicit solve's
 * node passes and reductions size their launches by it. */
static int host_box(cuda_backend* g) {
  if (g->box_known) return CQ_OK;
  CK(cudaMemcpyAsync(g->info_h, g->info, sizeof(int) * 6, cudaMemcpyDeviceToHost, g->stream));
  CK(cudaStreamSynchronize(g->stream));
  parse_box(g, g->info_h);
  return CQ_OK;
}

static int ensure_partials(cuda_backend* g, long blocks) {
  if (blocks <= g->cap_partial) return CQ_OK;
  cudaFree(g->partial);
  cudaFreeHost(g->partial_h);
  g->partial = g->partial_h = NULL;
  g->cap_partial = 0;
  CK(cudaMalloc((void**)&g->partial, sizeof(double) * blocks));
  CK(cudaMallocHost((void**)&g->partial_h, sizeof(double) * blocks));
  g->cap_partial = blocks;
  return CQ_OK;
}

/* A zero gradient state, for a pass given none (its kernel then does not read it). */
static inline cq_particles cqk_no_particles(void) {
  cq_particles z;
  memset(&z, 0, sizeof z);
  return z;
}

/* The mass moments' adjoint seed, passed by value (at most 25 doubles). */
typedef struct {
  double g[CQI_MOMENTS_MAX];
} cqk_moments_seed;

#define D 2
#include "cuda_loops.cuh"
#undef D
#define D 3
#include "cuda_loops.cuh"
#undef D

/* ---- memory ---- */

static void* cuda_alloc(cqi_backend* b, size_t bytes) {
  cuda_backend* g = (cuda_backend*)b;
  void* p = NULL;
  if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess || cudaMemsetAsync(p, 0, bytes, g->stream) != cudaSuccess ||
      cudaStreamSynchronize(g->stream) != cudaSuccess) {
    cudaGetLastError();
    cudaFree(p);
    return NULL;
  }
  return p;
}
static void cuda_release(cqi_backend* b, void* p) {
  cuda_backend* g = (cuda_backend*)b;
  cudaStreamSynchronize(g->stream);
  cudaFree(p);
}
/* Transfers: either side may be managed memory (a shared state block). Between equal pointers (a shared block),
 * download only waits for the kernels (the host then faults in just the pages it touches), and upload does nothing:
 * the kernels fault back only the pages the host touched. Prefetching the whole block instead
 * (CQ_CUDA_PREFETCH=1) costs the driver's walk over every page even when all are on the device: 75 us per step
 * for the 512k cube's 49 MB state, 48 us for 2D 6.4k's 0.3 MB, and no example measured gained from it (walker2d
 * 0.23 s per iteration with it, 0.20 s without; the 84k quadruped 2.08 s either way; docs/results/history.md). */
static int cuda_upload(cqi_backend* b, void* dst, const void* src, size_t bytes) {
  cuda_backend* g = (cuda_backend*)b;
  if (dst == src) {
    cudaMemLocation dev = {cudaMemLocationTypeDevice, 0};
    if (g->prefetch) TIMED("prefetch to device", cudaMemPrefetchAsync(dst, bytes, dev, 0, g->stream));
    return CQ_OK;
  }
  TIMED("upload", cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, g->stream));
  CK(cudaStreamSynchronize(g->stream)); /* the host buffer may change after return */
  return CQ_OK;
}
/* The kind of memory p is in (cudaMemoryTypeDevice, Managed, Host or Unregistered). */
static cudaMemoryType memory_type(const void* p) {
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) return cudaGetLastError(), cudaMemoryTypeUnregistered;
  return a.type;
}
/* Copies with managed memory on either side and device or managed memory on both run as a kernel: cudaMemcpyAsync
 * takes the driver's page-by-page path there (a 49 MB memo gradient in 272 us on an H100, against 36 us device to
 * device, which keeps cudaMemcpyAsync). */
__global__ void cqk_copy_words(const unsigned* src, unsigned* dst, long words) {
  for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += (long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
__global__ void cqk_copy_vectors(const uint4* src, uint4* dst, long vectors) {
  for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < vectors; i += (long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
static int copy_async(cuda_backend* g, void* dst, const void* src, size_t bytes, const char* what) {
  uintptr_t bits = (uintptr_t)dst | (uintptr_t)src | bytes;
  cudaMemoryType td = bytes ? memory_type(dst) : cudaMemoryTypeUnregistered, ts = bytes ? memory_type(src) : td;
  int managed = td == cudaMemoryTypeManaged || ts == cudaMemoryTypeManaged;
  int in_place = (td == cudaMemoryTypeDevice || td == cudaMemoryTypeManaged) &&
                 (ts == cudaMemoryTypeDevice || ts == cudaMemoryTypeManaged);
  if (bytes == 0 || (bits & 3) || !managed || !in_place) { /* device to device, or a host side: the driver's copy */
    TIMED(what, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, g->stream));
    return CQ_OK;
  }
  long items = (bits & 15) ? (long)(bytes / 4) : (long)(bytes / 16), cap = 8L * g->sms;
  unsigned blocks = (unsigned)((items + CQ_BLOCK - 1) / CQ_BLOCK < cap ? (items + CQ_BLOCK - 1) / CQ_BLOCK : cap);
  timing_begin(g->stream, what);
  if (bits & 15)
    cqk_copy_words<<<blocks, CQ_BLOCK, 0, g->stream>>>((const unsigned*)src, (unsigned*)dst, items);
  else
    cqk_copy_vectors<<<blocks, CQ_BLOCK, 0, g->stream>>>((const uint4*)src, (uint4*)dst, items);
  timing_end(g->stream);
  CK(cudaGetLastError());
  return CQ_OK;
}
static int cuda_download(cqi_backend* b, void* dst, const void* src, size_t bytes) {
  cuda_backend* g = (cuda_backend*)b;
  if (dst != src) TRY(copy_async(g, dst, src, bytes, "download"));
  CK(cudaStreamSynchronize(g->stream));
  return CQ_OK;
}
static int cuda_copy(cqi_backend* b, void* dst, const void* src, size_t bytes) {
  cuda_backend* g = (cuda_backend*)b;
  if (dst != src) TRY(copy_async(g, dst, src, bytes, "copy"));
  return CQ_OK;
}
/* read: converted to doubles on the device (where a shared block's pages are), then one copy to the host. */
__global__ void cqk_to_double(const cq_real* src, long len, double* out) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < len; i += (long)gridDim.x * blockDim.x)
    out[i] = (double)src[i];
}
static int cuda_read(cqi_backend* b, const cq_real* src, long len, double* out) {
  cuda_backend* g = (cuda_backend*)b;
  if (len <= 0) return CQ_OK;
  if (len > g->cap_rd) {
    cudaFree(g->rd);
    g->rd = NULL;
    g->cap_rd = 0;
    CK(cudaMalloc((void**)&g->rd, sizeof(double) * len));
    g->cap_rd = len;
  }
  long blocks = (len + CQ_BLOCK - 1) / CQ_BLOCK, cap = 4L * g->sms;
  timing_begin(g->stream, "cqk_to_double");
  cqk_to_double<<<(unsigned)(blocks < cap ? blocks : cap), CQ_BLOCK, 0, g->stream>>>(src, len, g->rd);
  timing_end(g->stream);
  CK(cudaGetLastError());
  TIMED("read", cudaMemcpyAsync(out, g->rd, sizeof(double) * len, cudaMemcpyDeviceToHost, g->stream));
  CK(cudaStreamSynchronize(g->stream));
  return CQ_OK;
}
static int cuda_zero(cqi_backend* b, void* dst, size_t bytes) {
  cuda_backend* g = (cuda_backend*)b;
  TIMED("zero", cudaMemsetAsync(dst, 0, bytes, g->stream));
  return CQ_OK;
}

/* Page-locked host memory (states, gradient mirrors): transfers from it need no staging copy. */
static void* cuda_host_alloc(size_t bytes) {
  void* p = NULL;
  if (cudaMallocHost(&p, bytes ? bytes : 1) != cudaSuccess) {
    cudaGetLastError();
    return NULL;
  }
  memset(p, 0, bytes);
  return p;
}
static void cuda_host_free(void* p) {
  if (p) cudaFreeHost(p);
}

/* Managed memory for states (backend.h shared_alloc), on devices where the host may touch it while kernels run
 * (concurrentManagedAccess: Linux with a Pascal or newer GPU); elsewhere the host would fault on any managed page
 * during any kernel, so states stay page-locked host memory. CQ_CUDA_SHARED_STATES=0 turns it off (to compare). */
static void* cuda_shared_alloc(size_t bytes) {
  static int usable = -1;
  if (usable < 0) {
    const char* env = getenv("CQ_CUDA_SHARED_STATES");
    int concurrent = 0;
    usable = !(env && strcmp(env, "0") == 0) && cudaSetDevice(0) == cudaSuccess &&
             cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0) == cudaSuccess && concurrent;
    cudaGetLastError();
  }
  void* p = NULL;
  if (!usable || cudaMallocManaged(&p, bytes ? bytes : 1, cudaMemAttachGlobal) != cudaSuccess) {
    cudaGetLastError();
    return NULL;
  }
  /* zeroed by the device, so its pages start there: a memo's gradients, zeroed on the host, cost a 45 MB migration at
   * the first backward step of the 512k cube */
  if (cudaMemset(p, 0, bytes) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
    cudaGetLastError();
    cudaFree(p);
    return NULL;
  }
  return p;
}
static void cuda_shared_free(void* p) {
  if (!p) return;
  cudaDeviceSynchronize(); /* no kernel may still use it */
  cudaFree(p);
}

/* ---- model ---- */

/* Reallocates *p to hold count elements of size bytes when its capacity *cap is smaller. */
static int grow(cuda_backend* g, void** p, int* cap, int count, size_t size) {
  if (count <= *cap) return CQ_OK;
  CK(cudaStreamSynchronize(g->stream));
  cudaFree(*p);
  *p = NULL;
  *cap = 0;
  CK(cudaMalloc(p, size * (count > 0 ? count : 1)));
  *cap = count;
  return CQ_OK;
}

static int cuda_sync_model(cqi_backend* b, const cqi_model* m, cqi_model_view* v) {
  cuda_backend* g = (cuda_backend*)b;
  cudaStream_t st = g->stream;
  int n = m->n, D = m->dim;
  g->model = m;
#define CQI_UP(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) \
  CK(cudaMemcpyAsync(g->name, m->name,                                    \
                     sizeof(ctype) * n *                                  \
                         (shape == CQ_SHAPE_SCALAR ? 1                    \
                          : shape == CQ_SHAPE_VEC  ? D                    \
                                                   : D * D),               \
                     cudaMemcpyHostToDevice, st));                        \
  v->params.name = g->name;
  CQ_PARAM_FIELDS(CQI_UP)
#undef CQI_UP
  if (m->n_act > 0) CK(cudaMemcpyAsync(g->act_kind, m->act_kind, m->n_act, cudaMemcpyHostToDevice, st));
  v->params.act_kind = g->act_kind;
  cqi_params_scalars(m, &v->params);
  TRY(grow(g, (void**)&g->cables, &g->cap_cables, m->n_cables, sizeof(cq_cable)));
  if (g->cap_cables > 0 && !g->gcab) {
    CK(cudaMalloc((void**)&g->gcab, sizeof(cq_real) * g->cap_cables));
    CK(cudaMallocHost((void**)&g->gcab_h, sizeof(cq_real) * g->cap_cables));
  }
  TRY(grow(g, (void**)&g->cable_idx, &g->cap_cable_idx, m->n_cable_idx, sizeof(int32_t)));
  if (m->n_cables > 0) {
    CK(cudaMemcpyAsync(g->cables, m->cables, sizeof(cq_cable) * m->n_cables, cudaMemcpyHostToDevice, st));
    CK(cudaMemcpyAsync(g->cable_idx, m->cable_idx, sizeof(int32_t) * m->n_cable_idx, cudaMemcpyHostToDevice, st));
  }
  v->cables = g->cables;
  v->cable_idx = g->cable_idx;
  v->n_cables = m->n_cables;
  v->n_cavities = cqi_model_cavities(m);
  if (v->n_cavities > 0 && !g->cav_sums) {
    size_t na = m->n_act;
    CK(cudaMalloc((void**)&g->cav_sums, sizeof(cqi_cavity_sums) * na));
    CK(cudaMalloc((void**)&g->cav_gsums, sizeof(cqi_cavity_sums) * na));
    CK(cudaMalloc((void**)&g->cav_coef, sizeof(cqi_cavity_coef) * na));
    CK(cudaMalloc((void**)&g->cav_gcoef, sizeof(cqi_cavity_coef) * na));
  }
  v->node_bc_index = NULL;
  v->node_bcs = NULL;
  if (m->node_bc_index) {
    if (!g->node_bc_index) CK(cudaMalloc((void**)&g->node_bc_index, sizeof(int32_t) * m->n_nodes));
    TRY(grow(g, (void**)&g->node_bcs, &g->cap_bcs, m->n_node_bcs, sizeof(cq_bc)));
    CK(cudaMemcpyAsync(g->node_bc_index, m->node_bc_index, sizeof(int32_t) * m->n_nodes, cudaMemcpyHostToDevice, st));
    if (m->n_node_bcs > 0)
      CK(cudaMemcpyAsync(g->node_bcs, m->node_bcs, sizeof(cq_bc) * m->n_node_bcs, cudaMemcpyHostToDevice, st));
    v->node_bc_index = g->node_bc_index;
    v->node_bcs = g->node_bcs;
  }
  CK(cudaStreamSynchronize(st));
  return CQ_OK;
}

static int cuda_set_threads(cqi_backend* b, int max_threads) { return b->threads = 1; } /* the host drives the GPU */
static double cuda_free_memory(cqi_backend* b) {
  size_t free_b = 0, total = 0;
  if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return (double)free_b;
}

/* ---- stages (per dimension, cuda_loops.cuh) ---- */

CQI_DIM_DISPATCH(cuda)
CQ_PASSES(CQI_CUDA_DISPATCH_ROW)

static int cuda_grid_clear(cqi_backend* b, cq_real* grid) { return CQI_BY_DIM(b, cuda_grid_clear, grid); }

static int flush_act_sums(cuda_backend* g); /* below, with act_grad */

static int cuda_begin_batch(cqi_backend* b) {
  cuda_backend* g = (cuda_backend*)b;
  TRY(reset_key(g));
  g->in_batch = 1;
  g->batch_prepares = 0;
  return CQ_OK;
}
static int cuda_end_batch(cqi_backend* b, cqi_check* bad) {
  cuda_backend* g = (cuda_backend*)b;
  g->in_batch = 0;
  TRY(flush_act_sums(g));
  /* the last prepare's box comes along with the key (sizes the next batch's node launches) */
  CK(cudaMemcpyAsync(g->info_h, g->info, sizeof(int) * 6, cudaMemcpyDeviceToHost, g->stream));
  TRY(read_key(g, bad));
  if (bad->check == CQ_CHECK_OK && g->batch_prepares > 0) parse_box(g, g->info_h);
  return CQ_OK;
}

/* ---- reductions and vectors ---- */

/* dL/du per actuator on the device: each block sums its particles' entries per actuator in shared memory, then adds
 * them with one atomic per block and actuator into sums (double). The order of the additions varies from run to
 * run (like every GPU scatter here); the CPU backend sums in particle order. */
#define CQ_ACT_SHARED 256 /* actuators summed in shared memory; more: the host sums a downloaded copy */
__global__ void cqk_act_grad(int n, int n_act, const int32_t* act_id, const cq_real* gact, double* sums) {
  __shared__ double acc[CQ_ACT_SHARED];
  for (int a = threadIdx.x; a < n_act; a += blockDim.x) acc[a] = 0;
  __syncthreads();
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < n && act_id[p] >= 0) atomicAdd(&acc[act_id[p]], (double)gact[p]);
  __syncthreads();
  for (int a = threadIdx.x; a < n_act; a += blockDim.x)
    if (acc[a] != 0) atomicAdd(&sums[a], acc[a]);
}
/* More actuators than shared memory holds (seed 004's actuator layouts: one actuator per particle): one global
 * double atomic per particle. */
__global__ void cqk_act_grad_global(int n, const int32_t* act_id, const cq_real* gact, double* sums) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < n && act_id[p] >= 0) atomicAdd(&sums[act_id[p]], (double)gact[p]);
}
/* Adds act_sums to their host target (waits for the device). */
static int flush_act_sums(cuda_backend* g) {
  if (!g->act_gu) return CQ_OK;
  int na = g->base.n_act;
  TRY(ensure_partials(g, na));
  CK(cudaMemcpyAsync(g->partial_h, g->act_sums, sizeof(double) * na, cudaMemcpyDeviceToHost, g->stream));
  CK(cudaStreamSynchronize(g->stream));
  for (int a = 0; a < na; a++) g->act_gu[a] += g->partial_h[a];
  g->act_gu = NULL;
  return CQ_OK;
}
static int cuda_act_grad(cqi_backend* b, const int32_t* act_id, const cq_real* gact, double* gu) {
  cuda_backend* g = (cuda_backend*)b;
  int na = b->n_act;
  if (na <= 0) return CQ_OK;
  if (g->act_gu != gu) { /* a new target: add the pending sums to the old one */
    TRY(flush_act_sums(g));
    CK(cudaMemsetAsync(g->act_sums, 0, sizeof(double) * na, g->stream));
    g->act_gu = gu;
  }
  if (na <= CQ_ACT_SHARED)
    LAUNCH(cqk_act_grad, b->n, b->n, na, act_id, gact, g->act_sums);
  else
    LAUNCH(cqk_act_grad_global, b->n, b->n, act_id, gact, g->act_sums);
  return g->in_batch ? CQ_OK : flush_act_sums(g);
}

__global__ void cqk_axpy(long len, cq_real a, const cq_real* x, cq_real* y) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < len) y[i] += a * x[i];
}
static int cuda_axpy(cqi_backend* b, long len, cq_real a, const cq_real* x, cq_real* y) {
  cuda_backend* g = (cuda_backend*)b;
  LAUNCH(cqk_axpy, len, len, a, x, y);
  return CQ_OK;
}
/* Non-finite entries are rare (a failing run), so each one takes an atomic of its own. One launch covers up to
 * CQK_SCAN_MAX arrays (blockIdx.y picks the array; grid-stride over it): 19 launches of one per array took 218 us per
 * backward step of the 512k cube on an H100 (CQ_CUDA_TIMING), most of it launch and tail time. */
#define CQK_SCAN_MAX 32
typedef struct {
  const cq_real* x[CQK_SCAN_MAX];
  long len[CQK_SCAN_MAX];
} cqk_arrays;
__global__ void cqk_first_nonfinite(const __grid_constant__ cqk_arrays a, unsigned long long* key) {
  const cq_real* x = a.x[blockIdx.y];
  long len = a.len[blockIdx.y];
  for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < len; i += (long)gridDim.x * blockDim.x)
    if (!isfinite(x[i])) atomicMin(&key[blockIdx.y], (unsigned long long)i);
}
static int cuda_first_nonfinite(cqi_backend* b, int count, const long* len, const cq_real* const* x, long* index) {
  cuda_backend* g = (cuda_backend*)b;
  if (count > g->cap_nf) {
    cudaFree(g->nf_key);
    cudaFreeHost(g->nf_key_h);
    g->nf_key = g->nf_key_h = NULL;
    g->cap_nf = 0;
    CK(cudaMalloc((void**)&g->nf_key, sizeof *g->nf_key * count));
    CK(cudaMallocHost((void**)&g->nf_key_h, sizeof *g->nf_key_h * count));
    g->cap_nf = count;
  }
  CK(cudaMemsetAsync(g->nf_key, 0xff, sizeof *g->nf_key * count, g->stream));
  for (int i0 = 0; i0 < count; i0 += CQK_SCAN_MAX) {
    cqk_arrays a;
    int k = count - i0 < CQK_SCAN_MAX ? count - i0 : CQK_SCAN_MAX;
    long longest = 1;
    for (int i = 0; i < k; i++) {
      a.x[i] = x[i0 + i], a.len[i] = len[i0 + i];
      if (len[i0 + i] > longest) longest = len[i0 + i];
    }
    /* 16 blocks per SM per array: with 4, the 512k cube's 85 MB took 95 us, with 16 61 us */
    long blocks = (longest + CQ_BLOCK - 1) / CQ_BLOCK, cap = 16L * g->sms;
    dim3 grid((unsigned)(blocks < cap ? blocks : cap), (unsigned)k);
    timing_begin(g->stream, "cqk_first_nonfinite");
    cqk_first_nonfinite<<<grid, CQ_BLOCK, 0, g->stream>>>(a, g->nf_key + i0);
    timing_end(g->stream);
    CK(cudaGetLastError());
  }
  CK(cudaMemcpyAsync(g->nf_key_h, g->nf_key, sizeof *g->nf_key * count, cudaMemcpyDeviceToHost, g->stream));
  CK(cudaStreamSynchronize(g->stream));
  for (int i = 0; i < count; i++) index[i] = g->nf_key_h[i] == ULLONG_MAX ? -1 : (long)g->nf_key_h[i];
  return CQ_OK;
}

/* ---- creation ---- */

static void cuda_destroy(cqi_backend* b) {
  cuda_backend* g = (cuda_backend*)b;
  if (g->stream) cudaStreamSynchronize(g->stream);
#define CQI_FREE(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) cudaFree(g->name);
  CQ_PARAM_FIELDS(CQI_FREE)
#undef CQI_FREE
  void* dev[] = {g->act_kind,  g->cables,  g->cable_idx, g->gcab,   g->node_bc_index, g->node_bcs,  g->info,
                 g->key,       g->partial, g->act_sums,  g->nf_key, g->cav_sums,      g->cav_gsums, g->cav_coef,
                 g->cav_gcoef, g->mom,     g->rd};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++) cudaFree(dev[i]);
  void* pinned[] = {g->gcab_h, g->info_h, g->key_h, g->partial_h, g->nf_key_h, g->mom_h};
  for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) cudaFreeHost(pinned[i]);
  if (g->stream) cudaStreamDestroy(g->stream);
  cudaGetLastError(); /* errors while tearing down (e.g. at process exit) are not reported */
  free(g);
}

static const cqi_backend_ops cuda_ops = {
    CQ_BACKEND_CUDA,
    0,
    cuda_destroy,
    cuda_alloc,
    cuda_release,
    cuda_upload,
    cuda_download,
    cuda_copy,
    cuda_read,
    cuda_zero,
    cuda_sync_model,
    cuda_set_threads,
    cuda_free_memory,
    cuda_begin_batch,
    cuda_end_batch,
    cuda_prepare,
    cuda_grid_clear,
    cuda_p2g,
    cuda_grid_update,
    cuda_g2p,
    cuda_g2p_adj,
    cuda_grid_update_adj,
    cuda_p2g_adj,
    cuda_cable_forces,
    cuda_cable_forces_adj,
    cuda_cavity_forces,
    cuda_cavity_forces_adj,
    cuda_act_grad,
    cuda_axpy,
    cuda_first_nonfinite,
    cuda_moments,
    cuda_moments_adj,
    cuda_grid_axpy,
    cuda_grid_dot,
    cuda_grid_norm_inf,
    cuda_grid_sums,
    NULL,
    NULL, /* the direct preconditioner's assembly: not on the device yet (implicit.precond "mass" there) */
    cuda_host_alloc,
    cuda_host_free,
    cuda_shared_alloc,
    cuda_shared_free,
    NULL,
    NULL,
    NULL, /* no kept P2G records: the adjoint recomputes P2G on the device */
    NULL, /* the fixed groups' blocks for the direct preconditioner: host-memory only */
    CQ_PASSES(CQI_CUDA_OP_ROW)};

/* Allocates the device copies of the model and the small reduction buffers. */
static int cuda_init(cuda_backend* g, const cqi_model* m) {
  int n = m->n, D = m->dim;
  CK(cudaSetDevice(0));
  CK(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking));
#define CQI_ALLOC(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) \
  CK(cudaMalloc((void**)&g->name, sizeof(ctype) * n *                        \
                                      (shape == CQ_SHAPE_SCALAR ? 1          \
                                       : shape == CQ_SHAPE_VEC  ? D          \
                                                                : D * D)));
  CQ_PARAM_FIELDS(CQI_ALLOC)
#undef CQI_ALLOC
  CK(cudaMalloc((void**)&g->act_kind, m->n_act > 0 ? m->n_act : 1));
  const int info_init[12] = {0, 0, 0, 0, 0, 0, INT_MAX, INT_MAX, INT_MAX, INT_MIN, INT_MIN, INT_MIN};
  CK(cudaMalloc((void**)&g->info, sizeof info_init));
  CK(cudaMemcpy(g->info, info_init, sizeof info_init, cudaMemcpyHostToDevice));
  CK(cudaMallocHost((void**)&g->info_h, sizeof(int) * 6));
  CK(cudaMalloc((void**)&g->key, sizeof *g->key));
  CK(cudaMemset(g->key, 0xff, sizeof *g->key));
  CK(cudaMalloc((void**)&g->act_sums, sizeof(double) * (m->n_act > 0 ? m->n_act : 1)));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  long node_blocks = (m->n_nodes + CQ_BLOCK - 1) / CQ_BLOCK, cap = 8L * (sms > 0 ? sms : 1);
  g->grid_blocks = (unsigned)(node_blocks < cap ? (node_blocks > 0 ? node_blocks : 1) : cap);
  /* two blocks per SM: below that a launch's warps wait on its shared atomics (see cqk_p2g; CQ_CUDA_LOCAL_MIN_BLOCKS
   * overrides it, to measure) */
  const char* lmb = getenv("CQ_CUDA_LOCAL_MIN_BLOCKS");
  g->local_min_blocks = lmb ? atol(lmb) : 2L * (sms > 0 ? sms : 1);
  g->sms = sms > 0 ? sms : 1;
  const char* prefetch = getenv("CQ_CUDA_PREFETCH");
  g->prefetch = prefetch && strcmp(prefetch, "0") != 0;
  CK(cudaMallocHost((void**)&g->key_h, sizeof *g->key_h));
  CK(cudaMalloc((void**)&g->mom, sizeof(double) * CQI_MOMENTS_MAX));
  CK(cudaMallocHost((void**)&g->mom_h, sizeof(double) * CQI_MOMENTS_MAX));
  return CQ_OK;
}

extern "C" cqi_backend* cqi_backend_cuda_create(const cqi_model* m, cqi_err* err) {
  char why[256];
  if (cq_cuda_device_count(why, sizeof why) <= 0)
    return cqi_errorf(err, CQ_ERR_ARG, "backend cuda: no usable CUDA device (%s)", why), (cqi_backend*)NULL;
  if (cqi_model_fields(m) > 1) /* its region loops and prepare take one field so far (cpu_loops.h has two) */
    return cqi_errorf(err, CQ_ERR_ARG,
                      "backend cuda: fluid_contact = \"separate\" runs on the CPU backend only so far; use "
                      "backend = \"cpu\" or fluid_contact = \"sticky\""),
           (cqi_backend*)NULL;
  cuda_backend* g = (cuda_backend*)calloc(1, sizeof *g);
  if (!g) return cqi_errorf(err, CQ_ERR_NOMEM, "out of memory"), (cqi_backend*)NULL;
  cqi_backend* b = &g->base;
  cqi_backend_base_init(b, &cuda_ops, m, err);
  if (cuda_init(g, m) != CQ_OK) {
    cuda_destroy(b);
    return NULL;
  }
  return b;
}

/* ---- device queries (cq.h) ---- */

#ifndef CQ_CUDA_TARGETS
#define CQ_CUDA_TARGETS "the nvcc defaults"
#endif

/* Whether this library holds code device d can run: machine code built for its architecture (CUDA_GENCODE's sm_XY),
 * or PTX of an older one that the driver compiles at load. Asked of one kernel; every kernel is built for the same
 * targets. Leaves device 0 current. */
static int cuda_device_runs_build(int d) {
  cudaFuncAttributes attr;
  if (cudaSetDevice(d) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  cudaError_t e = cudaFuncGetAttributes(&attr, (const void*)cqk_grid_clear_2);
  cudaGetLastError();
  cudaSetDevice(0);
  return e == cudaSuccess;
}

/* Devices this build can run on: those it holds code for (the Makefile's CUDA_GENCODE: machine code for compute
 * capabilities 8.0 to 9.0 and PTX of 9.0 for newer ones by default). */
extern "C" int cq_cuda_device_count(char* err, int errlen) {
  int n = 0, usable = 0, dev0 = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (err && errlen > 0)
      snprintf(
          err, errlen, "%s: %s%s", cudaGetErrorName(e), cudaGetErrorString(e),
          e == cudaErrorInsufficientDriver ? " (no NVIDIA driver found, or one older than this CUDA runtime)" : "");
    cudaGetLastError();
    return e == cudaErrorNoDevice ? 0 : -1;
  }
  for (int d = 0; d < n; d++) {
    int ok = cuda_device_runs_build(d);
    usable += ok;
    if (d == 0) dev0 = ok;
  }
  cudaDeviceProp prop;
  if (n == 0) {
    if (err && errlen > 0) snprintf(err, errlen, "no CUDA device found");
    return 0;
  }
  /* device 0 is the one used: it must be usable */
  if (!dev0) {
    if (err && errlen > 0) {
      if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
        snprintf(err, errlen,
                 "device 0 (%s) has compute capability %d.%d, which this library holds no code for "
                 "(built for %s; rebuild with a CUDA_GENCODE for that device%s)",
                 prop.name, prop.major, prop.minor, CQ_CUDA_TARGETS,
                 usable > 0 ? ", or choose another with CUDA_VISIBLE_DEVICES" : "");
      else
        snprintf(err, errlen, "device 0 cannot be queried");
      cudaGetLastError();
    }
    return 0;
  }
  return usable;
}

extern "C" int cq_cuda_device_info(char* buf, int len) {
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
  snprintf(buf, len, "%s, compute capability %d.%d, %d SMs, %.1f GiB, driver %d.%d, runtime %d.%d, code for %s",
           prop.name, prop.major, prop.minor, prop.multiProcessorCount, prop.totalGlobalMem / 1073741824.0, drv / 1000,
           drv % 1000 / 10, rt / 1000, rt % 1000 / 10, CQ_CUDA_TARGETS);
  return CQ_OK;
}

extern "C" double cq_cuda_memcpy_bandwidth(double bytes, int reps, char* err, int errlen) {
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

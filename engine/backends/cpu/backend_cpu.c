/* The CPU backend: the primitives of backend.h as OpenMP loops (cpu_loops.h) around the shared kernel bodies. Its
 * memory is host memory, so transfers are memcpy (or nothing, between equal pointers). It owns its workspace: the
 * slab buckets of the colored scatters and the active region. */
#include <dirent.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "backend.h"
#include "backend_dims.h"
#include "kernels.h"

typedef struct cpu_backend {
  cqi_backend base;
  int threads;         /* threads of the current control step */
  int idle;            /* cores not busy with other processes, at the last probe */
  int fixed;           /* CQ_FIXED_THREADS set: never lower the count (benchmarks of the old behaviour) */
  int simd;            /* 0 when CQ_SIMD=0: every particle loop runs particle by particle (cpu_loops.h) */
  int keep;            /* 0 when CQ_KEEP=0: no kept P2G records (every adjoint substep recomputes P2G) */
  double probed;       /* time of that probe (s, monotonic); 0 = never */
  int32_t* perm;       /* [n] particles bucketed by slab along axis 0 */
  int32_t* slab_start; /* [res0 * fields + 2] */
  int32_t* base0;      /* [n] base cell along axis 0 */
  int n_slabs;
  int lo[3], hi[3];      /* active node region of the current substep (inclusive) */
  int lo1, hi1;          /* and the second velocity field's nodes along axis 0 (none: hi1 < lo1) */
  cq_substep region_ctx; /* strides of the active region (from the last prepare) */
  double* layer_sum;     /* [4][res0 * fields] per-layer partial sums of grid_dot, grid_norm_inf and grid_sums */
  cqi_cavity_sums *cav_sums, *cav_gsums; /* [n_act] the cavities' sums over their walls, and their gradients */
  cqi_cavity_coef *cav_coef, *cav_gcoef; /* [n_act] their corrections' coefficients, and their gradients */
  cq_real *p2g_mv, *p2g_stress; /* P2G's first pass (cpu_loops.h): momenta [D][n], stresses [3 D^2][n] (no cache) */
  cq_real* vol_a;               /* [n_nodes][3^D][D] the averaged volumetric term's a_g (volumetric.h), when factored */
} cpu_backend;

/* A scratch array of len reals in *slot, allocated on first use (a backend's particle count never changes). */
static cq_real* cpu_scratch(cq_real** slot, long len) {
  if (!*slot) *slot = malloc(sizeof(cq_real) * (size_t)(len > 0 ? len : 1));
  return *slot;
}

#define D 2
#include "cpu_loops.h"
#undef D
#define D 3
#include "cpu_loops.h"
#undef D

static void cpu_destroy(cqi_backend* b) {
  cpu_backend* cb = (cpu_backend*)b;
  free(cb->perm);
  free(cb->slab_start);
  free(cb->base0);
  free(cb->layer_sum);
  free(cb->cav_sums), free(cb->cav_gsums), free(cb->cav_coef), free(cb->cav_gcoef);
  free(cb->p2g_mv), free(cb->p2g_stress), free(cb->vol_a);
  free(cb);
}

static void* cpu_alloc(cqi_backend* b, size_t bytes) { return calloc(1, bytes ? bytes : 1); }
static void cpu_release(cqi_backend* b, void* p) { free(p); }
static int cpu_copy(cqi_backend* b, void* dst, const void* src, size_t bytes) {
  if (dst != src) memcpy(dst, src, bytes);
  return CQ_OK;
}
static int cpu_read(cqi_backend* b, const cq_real* src, long len, double* out) {
  for (long i = 0; i < len; i++) out[i] = (double)src[i];
  return CQ_OK;
}
static int cpu_zero(cqi_backend* b, void* dst, size_t bytes) {
  memset(dst, 0, bytes);
  return CQ_OK;
}

static int cpu_sync_model(cqi_backend* b, const cqi_model* m, cqi_model_view* v) {
  v->params = cqi_model_params(m);
  v->cables = m->cables;
  v->cable_idx = m->cable_idx;
  v->n_cables = m->n_cables;
  v->node_bc_index = m->node_bc_index;
  v->node_bcs = m->node_bcs;
  v->n_cavities = cqi_model_cavities(m);
  return CQ_OK;
}

/* Runnable tasks on the machine that are not threads of this process (Linux /proc), or -1 when unknown. Our own
 * threads are excluded, spinning OpenMP workers included, by reading each of their states. */
static int other_runnable(void) {
  int running = -1, ours = 0;
  FILE* f = fopen("/proc/loadavg", "r");
  if (!f) return -1;
  if (fscanf(f, "%*f %*f %*f %d/%*d", &running) != 1) running = -1;
  fclose(f);
  DIR* d = opendir("/proc/self/task");
  if (!d || running < 0) {
    if (d) closedir(d);
    return -1;
  }
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/self/task/%.20s/stat", e->d_name);
    FILE* t = fopen(path, "r");
    if (!t) continue;
    if (fgets(line, sizeof line, t)) {
      const char* close = strrchr(line, ')'); /* the state follows the command name in parentheses */
      if (close && close[1] == ' ' && close[2] == 'R') ours++;
    }
    fclose(t);
  }
  closedir(d);
  return running > ours ? running - ours : 0;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Threads for the next control step: max_threads (0 = every core), but no more than the cores other processes leave
 * idle. Worker threads that wait at every barrier for a partner the scheduler gave to another process make a busy
 * machine 10-100x slower than one thread; results do not depend on the thread count, so changing it is safe. The
 * machine is probed at most every 0.1 s (a probe reads a few /proc files, ~20 us). */
static int cpu_set_threads(cqi_backend* b, int max_threads) {
  cpu_backend* cb = (cpu_backend*)b;
  int cores = omp_get_num_procs();
  int want = max_threads > 0 ? max_threads : cores;
  if (want > 1 && !cb->fixed) {
    double t = now_seconds();
    if (cb->probed == 0 || t - cb->probed > 0.1) {
      int others = other_runnable();
      cb->idle = others < 0 ? cores : cores - others;
      cb->probed = t;
    }
    if (want > cb->idle) want = cb->idle;
  }
  cb->threads = b->threads = want > 1 ? want : 1;
  return cb->threads;
}

static int cpu_grid_clear(cqi_backend* b, cq_real* grid) { return CQI_BY_DIM(b, cpu_grid_clear, grid); }
CQI_DIM_DISPATCH(cpu)

/* Kept P2G records (backend.h keep): the head, slab_start[n_slabs + 1] and perm[n] (int32), then the grid's active
 * region node by node (cpu_region_copy), 8-byte aligned. */
typedef struct {
  int lo[3], hi[3], lo1, hi1, n_slabs;
  cq_substep region_ctx; /* whole, as prepare sets it; the grid loops read only its strides */
} cpu_kept_head;

static size_t cpu_kept_grid_offset(const cpu_backend* cb, int n) {
  size_t off = sizeof(cpu_kept_head) + sizeof(int32_t) * ((size_t)cb->n_slabs + 1 + (size_t)n);
  return (off + 7) & ~(size_t)7;
}

static size_t cpu_keep_bytes(cqi_backend* b) {
  cpu_backend* cb = (cpu_backend*)b;
  if (!cb->keep) return 0;
  size_t nodes = (size_t)(cb->hi[0] - cb->lo[0] + 1 + cb->hi1 - cb->lo1 + 1); /* both fields' layers */
  for (int a = 1; a < b->dim; a++) nodes *= (size_t)(cb->hi[a] - cb->lo[a] + 1);
  return cpu_kept_grid_offset(cb, b->n) + sizeof(cq_real) * (size_t)(b->dim + 1) * nodes;
}

/* Writes a record from prepare's results and grid (store), or sets them from one. */
static void cpu_kept_io(cpu_backend* cb, cq_real* grid, char* record, int store) {
  int n = cb->base.n;
  cpu_kept_head* h = (cpu_kept_head*)record;
  if (store) {
    memcpy(h->lo, cb->lo, sizeof h->lo), memcpy(h->hi, cb->hi, sizeof h->hi);
    h->lo1 = cb->lo1, h->hi1 = cb->hi1, h->n_slabs = cb->n_slabs, h->region_ctx = cb->region_ctx;
  } else {
    memcpy(cb->lo, h->lo, sizeof h->lo), memcpy(cb->hi, h->hi, sizeof h->hi);
    cb->lo1 = h->lo1, cb->hi1 = h->hi1, cb->n_slabs = h->n_slabs, cb->region_ctx = h->region_ctx;
  }
  int32_t* ints = (int32_t*)(h + 1);
  size_t slabs = sizeof(int32_t) * (cb->n_slabs + 1), perm = sizeof(int32_t) * n;
  if (store)
    memcpy(ints, cb->slab_start, slabs), memcpy(ints + cb->n_slabs + 1, cb->perm, perm);
  else
    memcpy(cb->slab_start, ints, slabs), memcpy(cb->perm, ints + cb->n_slabs + 1, perm);
  CQI_BY_DIM(&cb->base, cpu_region_copy, grid, (cq_real*)(record + cpu_kept_grid_offset(cb, n)), store);
}

static int cpu_keep(cqi_backend* b, const cq_real* grid, void* record) {
  cpu_kept_io((cpu_backend*)b, (cq_real*)grid, record, 1); /* grid is only read */
  return CQ_OK;
}

static int cpu_restore(cqi_backend* b, cq_real* grid, const void* record) {
  cpu_kept_io((cpu_backend*)b, grid, (char*)record, 0); /* record is only read */
  return CQ_OK;
}

/* Serial: a fixed summation order per actuator. */
static int cpu_act_grad(cqi_backend* b, const int32_t* act_id, const cq_real* gact, double* gu) {
  for (int p = 0; p < b->n; p++)
    if (act_id[p] >= 0) gu[act_id[p]] += gact[p];
  return CQ_OK;
}

static int cpu_axpy(cqi_backend* b, long len, cq_real a, const cq_real* x, cq_real* y) {
  cpu_backend* cb = (cpu_backend*)b;
#pragma omp parallel for schedule(static) num_threads(cb->threads)
  for (long i = 0; i < len; i++) y[i] += a * x[i];
  return CQ_OK;
}

/* a * 0 is 0 for every finite a and NaN otherwise: the common path is one multiply-add per entry, in 8 independent
 * sums that vectorise (a single running sum is a chain of dependent adds, 4 cycles per entry). */
static long first_nonfinite(long len, const cq_real* x) {
  cq_real acc[8] = {0}, s = 0;
  long i = 0;
  for (; i + 8 <= len; i += 8)
    for (int j = 0; j < 8; j++) acc[j] += x[i + j] * 0;
  for (; i < len; i++) s += x[i] * 0;
  for (int j = 0; j < 8; j++) s += acc[j];
  if (s != 0) /* NaN too */
    for (i = 0; i < len; i++)
      if (!isfinite(x[i])) return i;
  return -1;
}
static int cpu_first_nonfinite(cqi_backend* b, int count, const long* len, const cq_real* const* x, long* index) {
  for (int i = 0; i < count; i++) index[i] = first_nonfinite(len[i], x[i]);
  return CQ_OK;
}

static int cpu_implicit_slots(cqi_backend* b, const cq_substep* c, const cq_real* vstar, int32_t* slot, long* count) {
  return CQI_BY_DIM(b, cpu_implicit_slots, c, vstar, slot, count);
}
static int cpu_implicit_blocks(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                               const cq_real* v, const int32_t* slot, int32_t* nbr, double* blocks) {
  return CQI_BY_DIM(b, cpu_implicit_blocks, c, s, m, v, slot, nbr, blocks);
}
CQ_PASSES(CQI_CPU_DISPATCH_ROW)

static int cpu_vol_group_blocks(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                                const int32_t* slot, double* blocks) {
  return CQI_BY_DIM(b, cpu_vol_group_blocks, c, s, m, slot, blocks);
}

static const cqi_backend_ops cpu_ops = {CQ_BACKEND_CPU,
                                        1,
                                        cpu_destroy,
                                        cpu_alloc,
                                        cpu_release,
                                        cpu_copy,
                                        cpu_copy,
                                        cpu_copy,
                                        cpu_read,
                                        cpu_zero,
                                        cpu_sync_model,
                                        cpu_set_threads,
                                        NULL,
                                        NULL,
                                        NULL, /* checks return at once */
                                        cpu_prepare,
                                        cpu_grid_clear,
                                        cpu_p2g,
                                        cpu_grid_update,
                                        cpu_g2p,
                                        cpu_g2p_adj,
                                        cpu_grid_update_adj,
                                        cpu_p2g_adj,
                                        cpu_cable_forces,
                                        cpu_cable_forces_adj,
                                        cpu_cavity_forces,
                                        cpu_cavity_forces_adj,
                                        cpu_act_grad,
                                        cpu_axpy,
                                        cpu_first_nonfinite,
                                        cpu_moments,
                                        cpu_moments_adj,
                                        cpu_grid_axpy,
                                        cpu_grid_dot,
                                        cpu_grid_norm_inf,
                                        cpu_grid_sums,
                                        cpu_implicit_slots,
                                        cpu_implicit_blocks,
                                        NULL,
                                        NULL, /* host memory is the backend's: plain calloc and free */
                                        NULL,
                                        NULL, /* and the kernels use every state in place */
                                        cpu_keep_bytes,
                                        cpu_keep,
                                        cpu_restore,
                                        cpu_vol_group_blocks,
                                        CQ_PASSES(CQI_CPU_OP_ROW)};

cqi_backend* cqi_backend_cpu_create(const cqi_model* m, cqi_err* err) {
  double fields = cqi_model_fields(m);
  if ((double)m->n_nodes * fields * (m->dim + 1) > 2147483647.0) /* the kernels' 32-bit node indices (cqi_node) */
    return cqi_errorf(err, CQ_ERR_ARG,
                      "res: the CPU backend holds at most 2^31 - 1 grid values (dim + 1 per node, for each of %g "
                      "velocity fields); this grid has %ld nodes, %.4g values: lower res or use the CUDA backend",
                      fields, m->n_nodes, (double)m->n_nodes * fields * (m->dim + 1)),
           NULL;
  cpu_backend* cb = calloc(1, sizeof *cb);
  if (!cb) return cqi_errorf(err, CQ_ERR_NOMEM, "out of memory"), NULL;
  cqi_backend* b = &cb->base;
  cqi_backend_base_init(b, &cpu_ops, m, err);
  long len0 = (long)m->desc.res[0] * cqi_model_fields(m); /* axis 0's nodes, every field's copy */
  cb->threads = 1;
  cb->hi1 = -1; /* no second field's nodes before the first prepare */
  cb->fixed = getenv("CQ_FIXED_THREADS") != NULL;
  cb->simd = !(getenv("CQ_SIMD") && strcmp(getenv("CQ_SIMD"), "0") == 0);
  cb->keep = !(getenv("CQ_KEEP") && strcmp(getenv("CQ_KEEP"), "0") == 0);
  cb->perm = malloc(sizeof(int32_t) * m->n);
  cb->base0 = malloc(sizeof(int32_t) * m->n);
  cb->slab_start = malloc(sizeof(int32_t) * (len0 + 2));
  cb->layer_sum = malloc(sizeof(double) * 4 * len0);
  if (!cb->perm || !cb->base0 || !cb->slab_start || !cb->layer_sum) {
    cpu_destroy(b);
    return cqi_errorf(err, CQ_ERR_NOMEM, "n: out of memory for the CPU workspace of %d particles", m->n), NULL;
  }
  return b;
}

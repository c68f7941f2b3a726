/* Internal definitions shared by world.c, cpu.c and memo.c (not part of the public API). */
#ifndef CQ_INTERNAL_H
#define CQ_INTERNAL_H
#include "cq.h"
#include "fields.h"
#include "kernel_types.h"

struct cq_state {
  int dim, n;
  long substep;       /* substeps since creation: time = substep * dt_sub */
  cq_real* block;     /* one allocation holding every state field (so a checkpoint is one memcpy) */
  long block_len;     /* reals in block */
  cq_particles p;     /* views into block */
};

struct cq_world {
  cq_world_desc desc;
  int dim, n, n_act, threads, committed;
  double dt_sub;
  char err[512];
#define X(name, ctype, type, shape, diff, doc) ctype* name;
  CQ_PARAM_FIELDS(X)
#undef X
  uint8_t* act_kind;            /* [n_act] */
  cq_real* ureal;               /* [n_act] actuation of the current control step in working precision */
  cq_cable* cables;             /* [n_cables] */
  int n_cables;
  int32_t* cable_idx;           /* particle indices of all cables, concatenated */
  int n_cable_idx;
  int user_forces;              /* 1 when Lua actuators give per-particle forces each control step */
  const cq_real* fuser;         /* [D][n] user force of the current control step, or NULL */
  cq_real* fuser_buf;           /* [D][n] working-precision copy of cq_step_force's force */
  const cq_real* auser;         /* [D*D][n] user actuation stress of the current control step, or NULL */
  cq_real* auser_buf;           /* [D*D][n] working-precision copy of cq_step_ext's stress (allocated on first use) */
  cq_real* fext;                /* [D][n] extra particle forces of the current substep (cables + user) */
  cq_real* gfext;               /* [D][n] dL/d(extra particle forces) of the current substep (backward) */
  int32_t* node_bc_index;       /* [n_nodes] or NULL */
  cq_bc* node_bcs;              /* [n_node_bcs] */
  int n_node_bcs;
  long n_nodes;
  /* CPU workspace, allocated once */
  cq_real* grid;                /* [n_nodes][D+1] momentum+mass, then velocity in place (forward) */
  cq_real* grid_v;              /* [n_nodes][D+1] post-boundary velocity (backward only, lazily allocated) */
  cq_real* grid_adj;            /* [n_nodes][D+1] adjoint (backward only) */
  cq_real* gact;                /* [n] per-particle dL/du scratch (backward only) */
  cq_real* p2g_cache;           /* [3 D*D][n] stresses of the recomputed P2G, reused by its adjoint (backward only) */
  int32_t* perm;                /* [n] particles bucketed by slab along axis 0 */
  int32_t* slab_start;          /* [res0 + 2] */
  int32_t* base0;               /* [n] scratch: base cell along axis 0 */
  int lo[3], hi[3];             /* active node region of the current substep (inclusive) */
  int n_slabs;
  int backend;                  /* CQ_BACKEND_CPU or CQ_BACKEND_CUDA (cq_world_set_backend) */
  struct cqi_cuda* cuda;        /* device buffers of the CUDA backend (cuda/cuda.cu), or NULL */
};

/* Error helpers: set the message and return the status. */
int cqi_fail(cq_world* w, int status, const char* fmt, ...);
cq_params cqi_params(const cq_world* w);
cq_substep cqi_substep_ctx(const cq_world* w, long substep);
int cqi_alloc_backward(cq_world* w);
/* CQ_ERR_ARG naming the first non-finite entry of a user stress [D*D][n] given for control step `step`. */
int cqi_check_stress(cq_world* w, const double* stress, int step);

/* CPU backend (cpu.c): one substep forward, and its adjoint. */
int cqi_cpu_substep(cq_world* w, cq_particles* s, const cq_real* u, long substep);
int cqi_cpu_substep_adj(cq_world* w, const cq_particles* s, const cq_particles* s1, const cq_real* u, long substep,
                        const cq_particles* g1, cq_particles* g0, cq_real* gmass, cq_real* gvol0, cq_real* gE,
                        cq_real* gnu, double* gu, cq_real* gfuser, cq_real* gauser);

/* CPU checks of one substep's input (bounds, blow-up, out-of-grid: the CPU's own error messages); CQ_OK if fine. */
int cqi_cpu_check(cq_world* w, const cq_particles* s, long substep);

/* Backend dispatch (backend.c): the world's backend runs one substep / its adjoint (same contracts as the CPU
 * entry points above). cqi_backend_free releases the backend's device memory (called by cq_world_free). */
enum { CQ_BACKEND_CPU = 0, CQ_BACKEND_CUDA = 1 };
int cqi_substep(cq_world* w, cq_particles* s, const cq_real* u, long substep);
int cqi_substep_adj(cq_world* w, const cq_particles* s, const cq_particles* s1, const cq_real* u, long substep,
                    const cq_particles* g1, cq_particles* g0, cq_real* gmass, cq_real* gvol0, cq_real* gE,
                    cq_real* gnu, double* gu, cq_real* gfuser, cq_real* gauser);
void cqi_backend_free(cq_world* w);

#ifdef CQ_WITH_CUDA
/* CUDA backend (cuda/cuda.cu, built into libcq_cuda_f32/f64.so only). */
int cqi_cuda_init(cq_world* w);
void cqi_cuda_free(cq_world* w);
int cqi_cuda_substep(cq_world* w, cq_particles* s, const cq_real* u, long substep);
int cqi_cuda_substep_adj(cq_world* w, const cq_particles* s, const cq_particles* s1, const cq_real* u, long substep,
                         const cq_particles* g1, cq_particles* g0, cq_real* gmass, cq_real* gvol0, cq_real* gE,
                         cq_real* gnu, double* gu, cq_real* gfuser, cq_real* gauser);
#endif

cq_state* cqi_state_alloc(int dim, int n);
#endif

/* The stage primitives a backend offers: memory, P2G, grid update, G2P, their adjoints, cable forces, reductions
 * and the vector operations an implicit solver needs. Integrators (integrator_*.c) compose them into a substep and
 * its adjoint; nothing above this interface knows which backend runs. Backends: backend_cpu.c (OpenMP) and
 * cuda/cuda.cu. Pointers marked (B) are in the backend's memory (host memory for the CPU, device memory for CUDA);
 * the kernels they launch are the shared bodies of kernels.h. Every primitive returns a CQ_* status and reports
 * failures through the backend's error sink. */
#ifndef CQ_BACKEND_H
#define CQ_BACKEND_H
#include <stddef.h>
#include "error.h"
#include "kernel_types.h"
#include "model.h"
#include "passes.h"

typedef struct cqi_backend cqi_backend;

/* The model as the kernels see it, in backend memory (B): parameters, cables, node boundary conditions. */
typedef struct cqi_model_view {
  cq_params params;         /* (B) per-particle parameters and actuator kinds */
  const cq_cable* cables;   /* (B) [n_cables] */
  const int32_t* cable_idx; /* (B) particle indices of all cables, concatenated */
  int n_cables;
  const int32_t* node_bc_index; /* (B) [n_nodes] or NULL */
  const cq_bc* node_bcs;        /* (B) */
  int n_cavities;               /* actuators of kind cavity (chamber.h; 0: no cavity_forces pass) */
} cqi_model_view;

/* The first failing particle of a check pass (CQ_CHECK_OK: none); ties go to the check listed first in
 * registry.h, then to the lowest particle index, so the result does not depend on the thread count. */
typedef struct cqi_check {
  int check;    /* CQ_CHECK_* */
  int particle; /* 0-based, -1 when check is CQ_CHECK_OK */
  int after;    /* 1: found in the substep's output (G2P), 0: in its input (prepare) */
  int substep;  /* from end_batch: the 0-based index, within the batch, of the prepare call it follows */
  int split;    /* the implicit integrator's halvings of the substep it failed in (0: none; integrator_implicit.c) */
} cqi_check;

typedef struct cqi_backend_ops {
  int kind;        /* CQ_BACKEND_* */
  int host_memory; /* 1: backend memory is host memory (transfers between equal pointers are skipped) */
  void (*destroy)(cqi_backend* b);

  /* Memory: zeroed allocations (NULL when out of memory) and copies host <-> backend and within the backend. */
  void* (*alloc)(cqi_backend* b, size_t bytes);
  void (*release)(cqi_backend* b, void* p);
  int (*upload)(cqi_backend* b, void* dst, const void* src_host, size_t bytes);
  int (*download)(cqi_backend* b, void* dst_host, const void* src, size_t bytes);
  int (*copy)(cqi_backend* b, void* dst, const void* src, size_t bytes);
  /* len reals of src (backend or shared memory) as doubles into out (host), without moving a shared block to the
   * host (a state kept on the GPU stays there when the host records a field of it every control step). */
  int (*read)(cqi_backend* b, const cq_real* src, long len, double* out);
  int (*zero)(cqi_backend* b, void* dst, size_t bytes);

  /* The model's arrays for the kernels; called before every control step (parameters may have been written). */
  int (*sync_model)(cqi_backend* b, const cqi_model* model, cqi_model_view* view);
  /* CPU threads for the next control step (0 = choose from the machine's idle cores); returns the count chosen. */
  int (*set_threads)(cqi_backend* b, int max_threads);
  /* Bytes of backend memory free now, for sizing recordings; NULL where that is host memory (the CPU). */
  double (*free_memory)(cqi_backend* b);

  /* Batches: the explicit substeps of one control step, forward or backward, on a backend that can run them without
   * waiting (the GPU). Between begin_batch and end_batch, prepare and g2p leave *bad OK and keep their checks on the
   * device, and act_grad adds into gu only at end_batch. end_batch waits for the device and returns the batch's
   * first failed check with bad->substep (the prepare call it follows, counted from 0). The kernels after a failed
   * check do nothing, so the state stays where the check found it, as when checks return at once. NULL on backends
   * whose checks return at once (the CPU). */
  int (*begin_batch)(cqi_backend* b);
  int (*end_batch)(cqi_backend* b, cqi_check* bad);

  /* Substep stages. prepare checks every particle (all the checks of g2p.h's particle_check when check_all, else
   * only a finite position inside the grid, which the stencils need) into *bad, and sets the active grid region
   * that the grid primitives below work on (m: each particle's velocity field, kernel_types.h cqi_field). */
  int (*prepare)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m, int check_all,
                 cqi_check* bad);
  int (*grid_clear)(cqi_backend* b, cq_real* grid); /* zeroes the active region of a grid vector, (D+1) per node */
  /* P2G: scatter mass and momentum (eqs. 4-6, 15-16) into grid; cache (may be NULL) receives the stresses. */
  int (*p2g)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m, const cq_ctl* ctl,
             cq_real* grid, cq_real* cache);
  /* Grid update (eq. 7, boundaries): momentum and mass mp -> velocity v over the active region (v may alias mp). */
  int (*grid_update)(cqi_backend* b, const cq_substep* c, const cq_real* mp, cq_real* v);
  /* G2P (eqs. 8-11) in place, checking every particle's new state (CQ_CHECKS) into *bad. */
  int (*g2p)(cqi_backend* b, const cq_substep* c, cq_particles* s, const cq_params* m, const cq_real* gridv,
             cqi_check* bad);

  /* Adjoints, in reverse order: g2p_adj scatters dL/d(node velocity) into adj (cleared first) and writes g0->x, g0->F
   * from g1 (C1 = C of the state after the substep, may be NULL); grid_update_adj turns adj into dL/d(momentum,
   * mass) given the forward mp; p2g_adj gathers it into g0 and the parameter and control gradients. */
  int (*g2p_adj)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m, const cq_real* gridv,
                 const cq_particles* g1, cq_particles* g0, cq_real* adj, const cq_real* C1);
  int (*grid_update_adj)(cqi_backend* b, const cq_substep* c, const cq_real* mp, cq_real* adj);
  int (*p2g_adj)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m, const cq_ctl* ctl,
                 const cq_real* adj, cq_particles* g0, const cq_param_grads* gp, const cq_ctl_grads* gc,
                 const cq_real* cache);

  /* Cable forces (eq. 17) added into f [D][n] (B), in cable order; the adjoint adds dL/dx into gx [D][n] (B) and
   * each cable's dL/du into gu[act] (host, double). u (B) is the control's actuation. */
  int (*cable_forces)(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u, cq_real* f);
  int (*cable_forces_adj)(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,
                          const cq_real* gf, cq_real* gx, double* gu);
  /* Closed cavities (actuator kind cavity, chamber.h): each wall particle's correction added into f [D][n] (B). The
   * adjoint, given gf = dL/d(the corrections) [D][n] (B), adds dL/dx and dL/dF into g0 (B), dL/d(wall_area) and
   * dL/d(act_w) into gp (B), and each particle's dL/du into gact [n] (B; act_grad then sums it per actuator). */
  int (*cavity_forces)(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u, cq_real* f);
  int (*cavity_forces_adj)(cqi_backend* b, const cqi_model_view* v, const cq_particles* s, const cq_real* u,
                           const cq_real* gf, cq_particles* g0, const cq_param_grads* gp, cq_real* gact);

  /* Reductions and vector operations (deterministic: the same result for any thread count). */
  /* gu[act_id[p]] += gact[p] over particles with an actuator, in particle order; gu is host memory (double). */
  int (*act_grad)(cqi_backend* b, const int32_t* act_id, const cq_real* gact, double* gu);
  int (*axpy)(cqi_backend* b, long len, cq_real a, const cq_real* x, cq_real* y); /* y += a x, len reals (B) */
  /* For each of the count arrays x[i][0..len[i]) (B): the index of its first non-finite entry into index[i], -1 when
   * every entry is finite (one wait for the device for all of them). */
  int (*first_nonfinite)(cqi_backend* b, int count, const long* len, const cq_real* const* x, long* index);
  /* The mass moments of the particles s with masses m->mass (moments.h: CQI_MOMENTS(D) sums in double) into out
   * (host); deterministic. Their adjoint adds g's (host, the same layout) contributions into gs's x and v and, unless
   * gmass is NULL, dL/dmass into gmass [n] (B); s and gs are in backend memory. */
  int (*moments)(cqi_backend* b, const cq_particles* s, const cq_params* m, double* out);
  int (*moments_adj)(cqi_backend* b, const cq_particles* s, const cq_params* m, const double* g, cq_particles* gs,
                     cq_real* gmass);
  /* Grid vectors (D+1 reals per node, the first D used), over the active region: y += a x; sum x.y (the 2-norm is
   * sqrt(grid_dot(x, x))); max |x| (the infinity norm, for convergence tests). */
  int (*grid_axpy)(cqi_backend* b, cq_real a, const cq_real* x, cq_real* y);
  int (*grid_dot)(cqi_backend* b, const cq_real* x, const cq_real* y, double* out);
  int (*grid_norm_inf)(cqi_backend* b, const cq_real* x, double* out);
  /* The sums of each of x's D+1 slots over the active region, into out[0..D] (node passes' per-node terms, e.g. the
   * grid fluid's energy along a line, fill.h). */
  int (*grid_sums)(cqi_backend* b, const cq_real* x, double* out);

  /* The direct preconditioner's assembly (implicit_factor.c), for host-memory backends (NULL elsewhere):
   * implicit_slots numbers the nodes with mass in a fixed order into slot[n_nodes] (-1 elsewhere) and *count;
   * implicit_blocks adds every particle's elastic Hessian blocks at v (implicit.h implicit_blocks) into blocks and
   * nbr ([count][5^D][D][D] and [count][5^D], zero and -1 on entry), and with c->vol_averaged the groups' volumetric
   * blocks (volumetric.h vol_blocks_node; c->vol_sums at this substep). */
  int (*implicit_slots)(cqi_backend* b, const cq_substep* c, const cq_real* vstar, int32_t* slot, long* count);
  int (*implicit_blocks)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                         const cq_real* v, const int32_t* slot, int32_t* nbr, double* blocks);

  /* Host memory for the buffers that transfers read or write (states, gradient mirrors): page-locked on the GPU,
   * where copies from it run at the bus's rate instead of through a staging buffer; NULL on host-memory backends
   * (calloc and free then). Not tied to the backend: a state may outlive its world. host_alloc zeroes, and returns
   * NULL when it cannot (the caller falls back to calloc). */
  void* (*host_alloc)(size_t bytes);
  void (*host_free)(void* p);
  /* Memory for state blocks that the host and the kernels both use in place (CUDA managed memory, which the driver
   * moves to whichever side touches it, page by page): a step runs on such a block directly, so the state stays on
   * the device from one control step to the next until the host reads or writes it. upload and download between
   * equal pointers then only order the two sides (download waits for the kernels; upload may move the block to the
   * device ahead of them, or leave the kernels to fault back the pages the host touched). NULL where the backend has none or the device cannot let the host touch
   * managed memory while kernels run (no concurrent managed access): states are then host_alloc memory, copied in
   * and out once per control step. shared_alloc zeroes, and returns NULL when it cannot. */
  void* (*shared_alloc)(size_t bytes);
  void (*shared_free)(void* p);

  /* A substep's P2G kept for its adjoint, so that the backward pass runs neither prepare nor P2G again (the memo's
   * records, integrator.h cqi_kept; NULL where a backend has none: it recomputes them). keep_bytes: the size of a
   * record of what the last prepare set (active region, slab order) and of grid's active region; keep writes that
   * record (host memory) from grid (P2G's momentum and mass); restore sets prepare's results and grid from one. */
  size_t (*keep_bytes)(cqi_backend* b);
  int (*keep)(cqi_backend* b, const cq_real* grid, void* record);
  int (*restore)(cqi_backend* b, cq_real* grid, const void* record);

  /* For the direct preconditioner with fixed groups (volumetric_groups = "initial"; host-memory backends, NULL
   * elsewhere): vol_group_blocks adds every group's exact blocks (K_g / V_g) a_g a_g^T, a_g on the union of its
   * members' stencils now, into blocks ([count][9^D][D][D], offsets within four cells, as implicit_factor.c's wide
   * pattern) at the nodes numbered by implicit_slots; implicit_blocks then leaves the groups out. */
  int (*vol_group_blocks)(cqi_backend* b, const cq_substep* c, const cq_particles* s, const cq_params* m,
                          const int32_t* slot, double* blocks);

  /* The plain passes (engine/backends/passes.h: the implicit solve's, the averaged volumetric term's, the grid fluid's), one
   * member per row of CQ_PASSES, what each does beside its row. */
  CQ_PASSES(CQI_PASS_MEMBER)
} cqi_backend_ops;

/* The part every backend shares; a backend's own struct starts with it. */
struct cqi_backend {
  const cqi_backend_ops* ops;
  int dim, n, n_act;   /* dimension, particles, actuators */
  long n_nodes;        /* grid nodes (twice the physical grid's with fluid_contact = "separate": kernel_types.h) */
  int res[3];          /* grid nodes per axis */
  int threads;         /* CPU threads of the current control step (set_threads; 1 on the GPU) */
  cqi_err* err;        /* where failures are reported (the world's) */
  long simd_particles; /* particles whose P2G adjoint ran as SIMD lanes (CPU; cq_solver_stats) */
};

/* The fields every backend sets alike from the model (its create fills the rest): ops, sizes, the grid, err, one
 * thread. */
static inline void cqi_backend_base_init(cqi_backend* b, const cqi_backend_ops* ops, const cqi_model* m, cqi_err* err) {
  b->ops = ops;
  b->dim = m->dim;
  b->n = m->n;
  b->n_act = m->n_act;
  b->n_nodes = m->n_nodes * cqi_model_fields(m);
  for (int a = 0; a < 3; a++) b->res[a] = a < m->dim ? m->desc.res[a] : 1;
  b->err = err;
  b->threads = 1;
}

/* Backends this library has: the CPU always; CUDA in the libcq_cuda_* builds (cuda/cuda.cu). Each returns NULL
 * with a message in err on failure. */
cqi_backend* cqi_backend_cpu_create(const cqi_model* model, cqi_err* err);
#ifdef CQ_WITH_CUDA
cqi_backend* cqi_backend_cuda_create(const cqi_model* model, cqi_err* err);
#endif

#endif

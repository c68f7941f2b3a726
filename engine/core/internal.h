/* Internal definitions of the world, the state and the step (not part of the public API). Layers, bottom up:
 * error -> model -> backends (backend_cpu.c, cuda/) -> integrators (integrator_*.c) -> world/state/step/memo. */
#ifndef CQ_INTERNAL_H
#define CQ_INTERNAL_H
#include "integrator.h"

struct cq_state {
  int real_bits; /* 32 or 64: first, so a state of the other precision's library is recognised */
  int dim, n;
  long substep;              /* substeps since creation: time = substep * dt_sub */
  cq_real* block;            /* one host allocation holding every state field (a checkpoint is one copy) */
  long block_len;            /* reals in block */
  cq_particles p;            /* views into block */
  void (*free_block)(void*); /* how block goes back: free, or the backend's host_free or shared_free */
  int shared; /* 1: block is the backend's shared memory (backend.h shared_alloc): kernels use it in place */
};

/* Staging of one control step's inputs in working precision: host copies, and the backend's (equal pointers on a
 * host-memory backend). */
typedef struct cqi_ctl_buf {
#define CQI_MEMBER(name, shape, doc) cq_real* host_##name;
  CQ_CONTROL_FIELDS(CQI_MEMBER)
#undef CQI_MEMBER
#define CQI_MEMBER(name, shape, doc) cq_real* b_##name;
  CQ_CONTROL_FIELDS(CQI_MEMBER)
#undef CQI_MEMBER
} cqi_ctl_buf;

struct cq_world {
  cqi_model model;
  cqi_err err;
  cqi_backend* be;             /* the backend (CPU, or CUDA when set) */
  cqi_sim sim;                 /* the integrator's context */
  const cqi_integrator* integ; /* the world's integrator */
  cqi_model_view view;         /* the model in backend memory */
  long synced;                 /* model generation the view reflects (-1: none) */
  int threads;                 /* requested CPU threads (0 = auto) */
  int threads_used;            /* threads of the last control step */
  int committed;
  int n_memos;     /* memos alive (they hold backend memory) */
  int released;    /* cq_world_free was called while memos were alive: freed with the last one */
  cqi_ctl_buf ctl; /* control staging */
  cq_real* work;   /* (B) working state of cq_step on backends without host memory, for states that
                                 * are not shared memory */
};

/* cqi_state_len and cqi_particles_view (the layout of a state block) are in kernel_types.h. */
/* A state of n particles in dimension dim (every field zero), its block from ops->shared_alloc where the backend has
 * one (the kernels then use it in place), else from ops->host_alloc (page-locked memory for faster transfers), else
 * calloc (ops NULL: calloc). */
cq_state* cqi_state_alloc_on(const cqi_backend_ops* ops, int dim, int n);
/* Which field, particle (0-based) and component (0-based, row-major for matrices) entry i of a state block is. */
void cqi_state_locate(long i, int n, int dim, const char** field, int* particle, int* component);

/* The model in backend memory brought up to date (parameters written since the last sync are uploaded). */
int cqi_sync_model(cq_world* w);
/* A memo's dL/dmass for engine-side adders (moments.c): its host view; *on_backend = 1 when the backend's kernels add
 * into that same memory (host memory or shared), else the memo uploads the host view before its next backward step. */
cq_real* cqi_memo_grad_mass(cq_memo* m, int* on_backend);
/* Everything a control step needs before its substeps: the parameters validated (if they changed) and within the
 * stable dt, the model synced to the backend, threads chosen. `step` names the control step in messages. */
int cqi_prepare_step(cq_world* w, long step);
/* Converts a control (doubles, may be NULL) into the world's staging and returns the kernels' view of it (u always
 * set). Checks that every entry is finite; `step` (1-based) names the control step in messages. */
int cqi_stage_control(cq_world* w, const cq_control* c, long step, cq_ctl* out);
/* The control given by host arrays of working precision (may be NULL) as the kernels' view: the arrays themselves on
 * a host-memory backend, else uploaded into the staging. */
int cqi_ctl_from_host(cq_world* w, const cq_real* u, const cq_real* force, const cq_real* stress, cq_ctl* out);
/* Runs the substeps of control step `step` (1-based, for messages) on s (B), whose substep counter is *substep
 * (advanced past every substep that ran). A blow-up stops at the failing substep with a message naming the check,
 * the particle and the step. */
int cqi_run_substeps(cq_world* w, cq_particles* s, long* substep, long step, const cq_ctl* ctl);
/* Batches of substeps (backend.h begin_batch): cqi_batch_begin starts one when the world's integrator and backend
 * allow it (*batched = 1); cqi_batch_end ends it and returns CQ_ERR_BLOWUP with *bad (bad->substep: the prepare call
 * it follows, from 0) when a check of the batch failed, else st (the loop's own status). */
int cqi_batch_begin(cq_world* w, int* batched);
int cqi_batch_end(cq_world* w, int batched, int st, cqi_check* bad);
/* CQ_ERR_INTERRUPTED with a message when the host's interrupt flag is set (cq_set_interrupt_flag), else CQ_OK.
 * what, step and sub (0-based substep of the step, of substeps) say where the run stopped. */
int cqi_poll_interrupt(cq_world* w, const char* what, long step, long sub, int substeps);
/* The blow-up message (and cq_blowup record) for check bad at substep k of control step `step`; s in host memory. */
int cqi_blowup(cq_world* w, const cqi_check* bad, long k, long step, const cq_particles* s);
#endif

/* Time integrators: the recipe of one substep and its adjoint, written once on top of the backend primitives
 * (backend.h) and the physics terms' hooks (term.h). One file each (integrator_<name>.c), listed in registry.h
 * (CQ_INTEGRATORS); adding one touches a backend only for the passes of its own kernels (rows beside them, as
 * implicit.h's CQ_IMPLICIT_PASSES). */
#ifndef CQ_INTEGRATOR_H
#define CQ_INTEGRATOR_H
#include <stdlib.h>
#include "backend.h"

/* A slot of the memo's records of substeps' P2G (backend ops keep/restore), in host memory: buf (cap bytes) holds
 * relative substep r of recording rec when r >= 0. Before it runs a substep forward or its adjoint, the memo points
 * sim->kept at the substep's slot with want_r and want_rec set; the integrator fills it forward (cqi_keep_store)
 * and uses it in the adjoint when it holds that substep (cqi_keep_restore). *total counts the bytes of all slots,
 * which stay within budget (a slot that would pass it is left empty, and the adjoint recomputes). */
typedef struct cqi_kept {
  void* buf;
  size_t cap;
  long r, rec, want_r, want_rec;
  size_t *total, budget;
} cqi_kept;

/* The physics terms' indices (registry.h CQ_TERMS): CQI_TERM_<name>, and their number. */
#define CQI_TERM_INDEX(name, doc) CQI_TERM_##name,
enum { CQ_TERMS(CQI_TERM_INDEX) CQI_N_TERMS };
#undef CQI_TERM_INDEX

/* What an integrator works with. */
typedef struct cqi_sim {
  cqi_backend* be;            /* the backend whose primitives it calls */
  const cqi_model* model;     /* host model (grid, walls, dt) */
  const cqi_model_view* view; /* the model in backend memory */
  cqi_err* err;               /* where failures are reported */
  void* ws;                   /* the integrator's own workspace (grid vectors, ...), in backend memory */
  cq_solver_stats stats;      /* the implicit solves' work (cq_world_solver_stats) */
  cqi_kept* kept;             /* the memo's record slot for the substep being run (NULL: none) */
  /* the physics terms' states (engine/terms/term.h; by CQ_TERMS index, allocated when first needed) and the
   * backward's copy of a substep's input (cqi_terms_input; a state block in backend memory) */
  void* term_self[CQI_N_TERMS];
  cq_real* input_copy;
} cqi_sim;

/* Keeps the substep's P2G (grid: its momentum and mass, with what prepare set) in sim->kept, when there is a slot
 * and the backend can. */
static inline void cqi_keep_store(cqi_sim* sim, const cq_real* grid) {
  cqi_kept* k = sim->kept;
  const cqi_backend_ops* op = sim->be->ops;
  if (!k || !op->keep) return;
  k->r = -1;
  size_t bytes = op->keep_bytes(sim->be); /* 0: none (CQ_KEEP=0) */
  if (bytes == 0) return;
  if (bytes > k->cap) {
    if (*k->total + (bytes - k->cap) > k->budget) return;
    void* p = realloc(k->buf, bytes);
    if (!p) return;
    *k->total += bytes - k->cap;
    k->buf = p, k->cap = bytes;
  }
  if (op->keep(sim->be, grid, k->buf) == CQ_OK) k->r = k->want_r, k->rec = k->want_rec;
}

/* 1 when sim->kept holds the substep being undone: prepare's results and grid (P2G's momentum and mass) are then
 * restored from it; 0 when the adjoint must recompute them. */
static inline int cqi_keep_restore(cqi_sim* sim, cq_real* grid) {
  cqi_kept* k = sim->kept;
  const cqi_backend_ops* op = sim->be->ops;
  int ok =
      k && k->r == k->want_r && k->rec == k->want_rec && op->restore && op->restore(sim->be, grid, k->buf) == CQ_OK;
  sim->stats.kept_substeps += ok;
  return ok;
}

/* Outputs of an adjoint substep: parameter gradients (B, accumulated), dL/du of this control step (host, [n_act],
 * accumulated) and dL/d(user force) and dL/d(user stress) (B, accumulated; NULL = not wanted). */
typedef struct cqi_adj_out {
  const cq_param_grads* gp;
  double* gu;
  cq_real* gforce;
  cq_real* gstress;
} cqi_adj_out;

typedef struct cqi_integrator {
  int kind;                    /* CQ_INTEGRATOR_* */
  int (*create)(cqi_sim* sim); /* allocates sim->ws */
  void (*destroy)(cqi_sim* sim);
  /* One substep of s (B) under control ctl (B; ctl->force is the user's force or NULL), substep number k. fresh: s
   * did not come out of this integrator's previous substep (so its input is checked in full). A failed particle
   * check returns CQ_ERR_BLOWUP with *bad naming it (bad->after: the state is left after the substep). */
  int (*substep)(cqi_sim* sim, cq_particles* s, const cq_ctl* ctl, long k, int fresh, cqi_check* bad);
  /* Adjoint of substep k: s the state before it, s1 after it, g1 = dL/ds1; writes g0 = dL/ds and accumulates out. */
  int (*substep_adj)(cqi_sim* sim, const cq_particles* s, const cq_particles* s1, const cq_ctl* ctl, long k,
                     const cq_particles* g1, cq_particles* g0, const cqi_adj_out* out);
  int batch; /* 1: its substeps read nothing back between them, so they may run in a backend batch (backend.h) */
  int cfl;   /* 1: stable only below the explicit limit stable_dt (model.c cqi_stable_dt_exceeded); 0: no such limit */
} cqi_integrator;

/* The error of an adjoint substep whose recomputed input state fails a particle check. */
static inline int cqi_recompute_failed(cqi_sim* sim, long k, const cqi_check* bad) {
  return cqi_errorf(sim->err, CQ_ERR_STATE,
                    "backward: the recomputed state of substep %ld fails the %s check "
                    "(particle %d); was the world changed after recording?",
                    k + 1, cq_name(CQ_LIST_CHECK, bad->check, NULL), bad->particle + 1);
}

/* One per CQ_INTEGRATORS entry: cqi_integrator_<name>, defined in integrator_<name>.c. */
#define CQI_DECLARE(ID, name, doc) extern const cqi_integrator cqi_integrator_##name;
CQ_INTEGRATORS(CQI_DECLARE)
#undef CQI_DECLARE
#endif

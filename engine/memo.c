/* The memo: a recorded run with O(sqrt(N)) checkpointing (seed 000 sec. 3.6) and the backward pass over it.
 * Forward stores the state every K substeps; backward recomputes one segment of K substeps at a time from its
 * checkpoint and runs the adjoint substeps in reverse. The grid is never stored: each adjoint substep rebuilds it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* Auto mode stores every substep's state when that takes at most this many bytes. */
#define CQ_MEMO_FULL_BUDGET (256.0 * 1024 * 1024)

struct cq_memo {
  cq_world* w;
  int max_steps;     /* control steps the memo can hold */
  int steps;         /* control steps recorded */
  int b;             /* substeps per control step */
  int K;             /* substeps per checkpoint segment */
  int n_ckpt;        /* checkpoint capacity */
  long len;          /* reals per state block */
  cq_real* ckpt;     /* [n_ckpt][len] state at relative substep j*K */
  cq_real* seg;      /* [K-1][len] recomputed states at relative substeps sK+1 .. sK+K-1 */
  int seg_loaded;    /* segment currently recomputed in seg, -1 = none */
  long sub0;         /* absolute substep counter of the initial state (sets the time) */
  cq_state* cur;     /* working state of the forward recording */
  double* act;       /* [max_steps][n_act] recorded actuation */
  cq_real* fuser;    /* [max_steps][D n] recorded user forces (worlds with user forces only) */
  cq_real* gfuser;   /* [D n] dL/d(user force) of the control step at the backward position */
  uint8_t* has_auser; /* [max_steps] 1 when that control step was given a user stress */
  cq_real* auser;    /* [max_steps][D*D n] recorded user stresses (allocated by the first step that has one) */
  cq_real* gauser;   /* [D*D n] dL/d(user stress) of the control step at the backward position */
  /* backward */
  int pos;           /* backward position (control step) */
  cq_state* g_cur;   /* dL/d(state at pos) */
  cq_state* g_tmp;   /* scratch for the next substep's gradient */
  cq_state* bstate;  /* state at pos (recomputed) */
  double* gact;      /* [max_steps][n_act] dL/du */
  cq_real *gmass, *gvol0, *gE, *gnu;
};

static cq_particles view_of(const cq_memo* m, cq_real* block) {
  int n = m->w->n, D = m->w->dim;
  cq_particles p = {n, block, block + (long)n * D, block + (long)2 * n * D, block + (long)2 * n * D + (long)n * D * D};
  return p;
}

void cq_memo_free(cq_memo* m) {
  if (!m) return;
  free(m->ckpt);
  free(m->seg);
  free(m->act);
  free(m->fuser);
  free(m->gfuser);
  free(m->has_auser);
  free(m->auser);
  free(m->gauser);
  free(m->gact);
  free(m->gmass);
  free(m->gvol0);
  free(m->gE);
  free(m->gnu);
  cq_state_free(m->cur);
  cq_state_free(m->g_cur);
  cq_state_free(m->g_tmp);
  cq_state_free(m->bstate);
  free(m);
}

cq_memo* cq_memo_create(cq_world* w, int max_steps, int checkpoint_every) {
  if (!w->committed) return cqi_fail(w, CQ_ERR_STATE, "memo: call cq_world_commit first"), NULL;
  if (max_steps < 1) return cqi_fail(w, CQ_ERR_ARG, "memo: steps must be >= 1 (got %d)", max_steps), NULL;
  if (checkpoint_every < 0)
    return cqi_fail(w, CQ_ERR_ARG, "memo: checkpoint_every must be >= 0 (0 = auto, got %d)", checkpoint_every), NULL;
  cq_memo* m = calloc(1, sizeof *m);
  if (!m) return cqi_fail(w, CQ_ERR_NOMEM, "out of memory"), NULL;
  m->w = w;
  m->max_steps = max_steps;
  m->b = w->desc.substeps;
  long N = (long)max_steps * m->b;
  m->cur = cq_state_create(w);
  if (m->cur) m->len = m->cur->block_len;
  if (checkpoint_every > 0)
    m->K = checkpoint_every;
  else /* auto: keep every state when that fits the budget (no recompute), else O(sqrt(N)) checkpoints */
    m->K = (double)N * m->len * sizeof(cq_real) <= CQ_MEMO_FULL_BUDGET ? 1 : (int)ceil(sqrt((double)N));
  if (m->K > N) m->K = (int)N;
  m->n_ckpt = (int)((N + m->K - 1) / m->K);
  m->g_cur = cqi_state_alloc(w->dim, w->n);
  m->g_tmp = cqi_state_alloc(w->dim, w->n);
  m->bstate = cqi_state_alloc(w->dim, w->n);
  int na = w->n_act > 0 ? w->n_act : 1;
  m->ckpt = malloc(sizeof(cq_real) * m->len * m->n_ckpt);
  m->seg = m->K > 1 ? malloc(sizeof(cq_real) * m->len * (m->K - 1)) : NULL;
  m->act = calloc((size_t)max_steps * na, sizeof(double));
  m->gact = calloc((size_t)max_steps * na, sizeof(double));
  m->gmass = calloc(w->n, sizeof(cq_real));
  m->gvol0 = calloc(w->n, sizeof(cq_real));
  m->gE = calloc(w->n, sizeof(cq_real));
  m->gnu = calloc(w->n, sizeof(cq_real));
  m->has_auser = calloc(max_steps, 1);
  m->gauser = calloc((size_t)w->n * w->dim * w->dim, sizeof(cq_real));
  if (w->user_forces) {
    m->fuser = calloc((size_t)max_steps * w->n * w->dim, sizeof(cq_real));
    m->gfuser = calloc((size_t)w->n * w->dim, sizeof(cq_real));
  }
  if (!m->cur || !m->g_cur || !m->g_tmp || !m->bstate || !m->ckpt || (m->K > 1 && !m->seg) || !m->act || !m->gact ||
      !m->gmass || !m->gvol0 || !m->gE || !m->gnu || !m->has_auser || !m->gauser || (w->user_forces && (!m->fuser || !m->gfuser))) {
    cq_memo_free(m);
    return cqi_fail(w, CQ_ERR_NOMEM, "out of memory for a memo of %d steps", max_steps), NULL;
  }
  m->seg_loaded = -1;
  return m;
}

int cq_memo_begin(cq_memo* m, const cq_state* s0) {
  if (s0->n != m->w->n || s0->dim != m->w->dim)
    return cqi_fail(m->w, CQ_ERR_ARG, "memo:begin: state does not belong to this world");
  cq_state_copy(m->cur, s0);
  m->sub0 = s0->substep;
  m->steps = 0;
  m->seg_loaded = -1;
  m->pos = -1;
  return CQ_OK;
}

cq_state* cq_memo_state(cq_memo* m) { return m->cur; }
int cq_memo_steps(const cq_memo* m) { return m->steps; }
int cq_memo_stored_states(const cq_memo* m) { return m->n_ckpt + (m->K - 1); }
const double* cq_memo_act(const cq_memo* m) { return m->act; }
int cq_memo_position(const cq_memo* m) { return m->pos; }
cq_state* cq_memo_grad(cq_memo* m) { return m->g_cur; }
cq_state* cq_memo_backward_state(cq_memo* m) { return m->bstate; }
double* cq_memo_grad_act(cq_memo* m) { return m->gact; }

void* cq_memo_grad_param(cq_memo* m, const char* name) {
  if (!strcmp(name, "mass")) return m->gmass;
  if (!strcmp(name, "vol0")) return m->gvol0;
  if (!strcmp(name, "E")) return m->gE;
  if (!strcmp(name, "nu")) return m->gnu;
  cqi_fail(m->w, CQ_ERR_ARG, "no gradient for parameter '%s' (differentiable: mass, vol0, E, nu)", name);
  return NULL;
}

/* Makes control step `step`'s actuation (and user force and stress) the world's current ones. */
static void load_u(cq_memo* m, int step) {
  cq_world* w = m->w;
  for (int a = 0; a < w->n_act; a++) w->ureal[a] = (cq_real)m->act[(long)step * w->n_act + a];
  w->fuser = m->fuser ? m->fuser + (long)step * w->n * w->dim : NULL;
  w->auser = m->has_auser[step] ? m->auser + (long)step * w->n * w->dim * w->dim : NULL;
}

/* Clears the world's per-step user inputs (they point into this memo). */
static void unload_u(cq_memo* m) {
  m->w->fuser = NULL;
  m->w->auser = NULL;
}

void* cq_memo_grad_force(cq_memo* m) { return m->gfuser; }
void* cq_memo_grad_stress(cq_memo* m) { return m->gauser; }

int cq_memo_step(cq_memo* m, const double* u) { return cq_memo_step_ext(m, u, NULL, NULL); }
int cq_memo_step_force(cq_memo* m, const double* u, const double* force) {
  return cq_memo_step_ext(m, u, force, NULL);
}

int cq_memo_step_ext(cq_memo* m, const double* u, const double* force, const double* stress) {
  cq_world* w = m->w;
  if (m->steps >= m->max_steps)
    return cqi_fail(w, CQ_ERR_STATE, "memo is full: it was created for %d steps", m->max_steps);
  for (int a = 0; a < w->n_act; a++) {
    double ua = u ? u[a] : 0;
    if (!isfinite(ua)) return cqi_fail(w, CQ_ERR_ARG, "step %d: actuation %d is not finite (%g)", m->steps, a + 1, ua);
    m->act[(long)m->steps * w->n_act + a] = ua;
  }
  if (force && !m->fuser)
    return cqi_fail(w, CQ_ERR_STATE, "memo: per-particle forces need cq_world_enable_user_forces before the memo");
  if (m->fuser) {
    cq_real* f = m->fuser + (long)m->steps * w->n * w->dim;
    for (long i = 0; i < (long)w->n * w->dim; i++) {
      if (force && !isfinite(force[i])) return cqi_fail(w, CQ_ERR_ARG, "step %d: force entry %ld is not finite", m->steps, i);
      f[i] = force ? (cq_real)force[i] : 0;
    }
  }
  m->has_auser[m->steps] = 0;
  if (stress) {
    long len = (long)w->n * w->dim * w->dim;
    int st = cqi_check_stress(w, stress, m->steps);
    if (st != CQ_OK) return st;
    if (!m->auser && !(m->auser = malloc(sizeof(cq_real) * len * m->max_steps)))
      return cqi_fail(w, CQ_ERR_NOMEM, "out of memory recording user stresses for a memo of %d steps", m->max_steps);
    cq_real* a = m->auser + (long)m->steps * len;
    for (long i = 0; i < len; i++) a[i] = (cq_real)stress[i];
    m->has_auser[m->steps] = 1;
  }
  load_u(m, m->steps);
  m->seg_loaded = -1;
  for (int j = 0; j < m->b; j++) {
    long r = (long)m->steps * m->b + j; /* substep relative to the initial state */
    if (r % m->K == 0) memcpy(m->ckpt + (r / m->K) * m->len, m->cur->block, sizeof(cq_real) * m->len);
    int st = cqi_substep(w, &m->cur->p, w->ureal, m->sub0 + r);
    if (st != CQ_OK) return unload_u(m), st;
    m->cur->substep = m->sub0 + r + 1;
  }
  unload_u(m);
  m->steps++;
  return CQ_OK;
}

int cq_memo_backward_begin(cq_memo* m) {
  cq_world* w = m->w;
  if (m->steps == 0) return cqi_fail(w, CQ_ERR_STATE, "backward: nothing recorded (call step first)");
  memset(m->g_cur->block, 0, sizeof(cq_real) * m->len);
  memset(m->gact, 0, sizeof(double) * m->max_steps * (w->n_act > 0 ? w->n_act : 1));
  memset(m->gmass, 0, sizeof(cq_real) * w->n);
  memset(m->gvol0, 0, sizeof(cq_real) * w->n);
  memset(m->gE, 0, sizeof(cq_real) * w->n);
  memset(m->gnu, 0, sizeof(cq_real) * w->n);
  m->pos = m->steps;
  cq_state_copy(m->bstate, m->cur);
  return CQ_OK;
}

/* The state at relative substep r, recomputing its segment from the checkpoint if needed. */
static cq_real* state_at(cq_memo* m, long r, int* status) {
  int sg = (int)(r / m->K);
  long i = r - (long)sg * m->K;
  cq_real* c0 = m->ckpt + (long)sg * m->len;
  if (i == 0) return c0;
  if (m->seg_loaded != sg) { /* recompute substeps sg*K+1 .. of this segment */
    long last = (long)sg * m->K + m->K - 1, N = (long)m->steps * m->b;
    if (last > N - 1) last = N - 1;
    cq_real* prev = c0;
    for (long q = (long)sg * m->K + 1; q <= last; q++) {
      cq_real* dst = m->seg + (q - (long)sg * m->K - 1) * m->len;
      memcpy(dst, prev, sizeof(cq_real) * m->len);
      cq_particles p = view_of(m, dst);
      load_u(m, (int)((q - 1) / m->b));
      *status = cqi_substep(m->w, &p, m->w->ureal, m->sub0 + q - 1);
      if (*status != CQ_OK) return unload_u(m), NULL;
      prev = dst;
    }
    m->seg_loaded = sg;
  }
  return m->seg + (i - 1) * m->len;
}

int cq_memo_backward_step(cq_memo* m) {
  cq_world* w = m->w;
  if (m->pos < 0) return cqi_fail(w, CQ_ERR_STATE, "backward_step: call backward_begin first");
  if (m->pos == 0) return cqi_fail(w, CQ_ERR_STATE, "backward: already at step 0 (call backward_begin to restart)");
  int k = m->pos - 1, st = CQ_OK;
  if (m->gfuser) memset(m->gfuser, 0, sizeof(cq_real) * w->n * w->dim);
  memset(m->gauser, 0, sizeof(cq_real) * w->n * w->dim * w->dim);
  for (long r = (long)(k + 1) * m->b - 1; r >= (long)k * m->b; r--) {
    cq_real* sblock = state_at(m, r, &st);
    if (!sblock) return st;
    /* the state after substep r: same segment, the next checkpoint, or the final state (no recompute) */
    cq_real* nblock = r + 1 == (long)m->steps * m->b ? m->cur->block : state_at(m, r + 1, &st);
    if (!nblock) return st;
    cq_particles s = view_of(m, sblock), s1 = view_of(m, nblock);
    load_u(m, k);
    st = cqi_substep_adj(w, &s, &s1, w->ureal, m->sub0 + r, &m->g_cur->p, &m->g_tmp->p, m->gmass, m->gvol0,
                         m->gE, m->gnu, m->gact + (long)k * w->n_act, m->gfuser, m->gauser);
    if (st != CQ_OK) return unload_u(m), st;
    cq_state* t = m->g_cur;
    m->g_cur = m->g_tmp;
    m->g_tmp = t;
    if (r == (long)k * m->b) {
      memcpy(m->bstate->block, sblock, sizeof(cq_real) * m->len);
      m->bstate->substep = m->sub0 + r;
    }
  }
  m->pos = k;
  unload_u(m);
  return CQ_OK;
}

int cq_memo_backward(cq_memo* m) {
  if (m->pos < 0) {
    int st = cq_memo_backward_begin(m);
    if (st != CQ_OK) return st;
  }
  while (m->pos > 0) {
    int st = cq_memo_backward_step(m);
    if (st != CQ_OK) return st;
  }
  return CQ_OK;
}

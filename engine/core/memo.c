/* The memo: a recorded run with O(sqrt(N)) checkpointing (seed 000 sec. 3.6) and the backward pass over it.
 * Forward stores the state every K substeps; backward recomputes one segment of K substeps at a time from its
 * checkpoint and runs the integrator's adjoint substeps in reverse. Each substep's P2G (grid and slab order) is kept
 * in host records (integrator.h cqi_kept) where the backend can and the budget allows, so the adjoint substep need
 * not rebuild the grid: every substep's when every state is kept, else the recomputed segment's. Checkpoints and
 * gradients live in backend memory; what Lua sees (the current state, the recomputed state, dL/dstate, parameter and
 * control gradients) are host buffers whose addresses never change. */
#include <limits.h>
#include <stdio.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

/* Auto mode stores every substep's state when that takes at most this many bytes, or a quarter of the backend's
 * free memory where it has its own (a GPU): no recomputation in the backward pass. */
#define CQ_MEMO_FULL_BUDGET (256.0 * 1024 * 1024)
/* Each memo's kept P2G records take at most this many bytes, or an eighth of the machine's memory if less. */
#define CQ_MEMO_KEEP_BUDGET (512.0 * 1024 * 1024)

/* The record and gradient of one per-particle control field (force, stress). */
typedef struct {
  long len;        /* reals per control step */
  cq_real* rec;    /* host [max_steps][len], allocated by the first step that has this field */
  uint8_t* has;    /* [max_steps] 1 when that step had it */
  cq_real* grad_b; /* (B) [len] dL/d(field) of the control step at the backward position */
  cq_real* grad;   /* host [len] the same, for callers (== grad_b on host-memory backends and when shared) */
} memo_control;

struct cq_memo {
  cq_world* w;
  cqi_backend* be;
  int max_steps;   /* control steps the memo can hold */
  int steps;       /* control steps recorded */
  int b;           /* substeps per control step */
  long K;          /* substeps per checkpoint segment */
  long n_ckpt;     /* checkpoint capacity */
  long len;        /* reals per state block */
  long generation; /* the model generation recorded (parameters must not change before backward) */
  cq_real* ckpt;   /* (B) [n_ckpt][len] state at relative substep j*K */
  cq_real* seg;    /* (B) [K-1][len] recomputed states at relative substeps sK+1 .. sK+K-1 */
  long seg_loaded; /* segment currently recomputed in seg, -1 = none */
  long sub0;       /* substep counter of the initial state (sets the time) */
  int checked;     /* 1 once the current state came out of a checked substep (0 after begin) */
  int failed;      /* 1 after a step that stopped midway (blow-up, interruption): the recording ends there */
  cq_state* cur;   /* host: current state of the recording */
  cq_real* cur_b;  /* (B) its working copy (== cur->block on host-memory backends) */
  double* act;     /* host [max_steps][n_act] recorded actuation */
  cq_real* u_step; /* host [n_act] actuation of one step in working precision */
  memo_control ctl[CQ_N_CONTROL_FIELDS]; /* per control field; index 0 (u, per actuator) unused */
  /* backward */
  int pos;             /* backward position (control step), -1 before backward_begin */
  cq_state* g_cur;     /* host: dL/d(state at pos) */
  cq_real* gb[2];      /* (B) ping-pong buffers of the adjoint substeps (gb[0] == g_cur->block on the host) */
  cq_state* bstate;    /* host: the state at pos (recomputed) */
  double* gact;        /* host [max_steps][n_act] dL/du */
  cq_param_grads gp_b; /* (B) dL/dparameter, per differentiable parameter */
  cq_param_grads gp;   /* host views of the same (equal on host-memory backends and when shared) */
  /* kept P2G records (integrator.h): one slot per substep when K = 1, else one per substep of a segment */
  cqi_kept* kept; /* [n_kept] (NULL: the backend keeps none) */
  long n_kept;
  size_t kept_total; /* bytes held by the slots */
  long rec;          /* recording number (memo:begin), which tells a slot's record from an earlier recording's */
};

/* The record slot for relative substep r, its want_r / want_rec set to ask for that substep's record (NULL when the
 * backend keeps no records). */
static cqi_kept* kept_slot_for(cq_memo* m, long r) {
  if (!m->kept) return NULL;
  cqi_kept* k = &m->kept[m->K == 1 ? r : r % m->K];
  k->want_r = r, k->want_rec = m->rec;
  return k;
}

static void* backend_alloc(cq_memo* m, size_t count, size_t size) {
  if (count > SIZE_MAX / (size ? size : 1) / 2) return NULL;
  return m->be->ops->alloc(m->be, count * size);
}
static void backend_free(cq_memo* m, void* p) {
  if (p) m->be->ops->release(m->be, p);
}
/* A gradient buffer that the kernels write (*b) and callers read on the host (*host): one shared block where the
 * backend has shared memory (backend.h shared_alloc: nothing is copied, the host faults in what it reads), one
 * buffer on host-memory backends, else a backend buffer and a page-locked host mirror. 0 when out of memory. */
static int grad_alloc(cq_memo* m, size_t bytes, cq_real** b, cq_real** host) {
  const cqi_backend_ops* ops = m->be->ops;
  *b = *host = ops->shared_alloc ? ops->shared_alloc(bytes) : NULL;
  if (*b) return 1;
  if (!(*b = backend_alloc(m, 1, bytes))) return 0;
  if (ops->host_memory)
    *host = *b;
  else
    *host = ops->host_alloc ? ops->host_alloc(bytes) : calloc(1, bytes ? bytes : 1);
  return *host != NULL;
}
static void grad_free(cq_memo* m, cq_real* b, cq_real* host) {
  const cqi_backend_ops* ops = m->be->ops;
  if (b && b == host && !ops->host_memory) { /* shared */
    ops->shared_free(b);
    return;
  }
  if (host && host != b) {
    if (ops->host_free)
      ops->host_free(host);
    else
      free(host);
  }
  backend_free(m, b);
}

void cq_memo_free(cq_memo* m) {
  if (!m) return;
  if (m->be) {
    backend_free(m, m->ckpt);
    backend_free(m, m->seg);
    if (m->cur && m->cur_b != m->cur->block) backend_free(m, m->cur_b);
    if (m->g_cur && m->gb[0] != m->g_cur->block) backend_free(m, m->gb[0]);
    backend_free(m, m->gb[1]);
#define CQI_FREE(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) \
  CQI_IF(diff)(grad_free(m, m->gp_b.name, m->gp.name);)
    CQ_PARAM_FIELDS(CQI_FREE)
#undef CQI_FREE
    for (int f = 1; f < CQ_N_CONTROL_FIELDS; f++) {
      free(m->ctl[f].rec);
      free(m->ctl[f].has);
      grad_free(m, m->ctl[f].grad_b, m->ctl[f].grad);
    }
  }
  for (long i = 0; m->kept && i < m->n_kept; i++) free(m->kept[i].buf);
  free(m->kept);
  free(m->act);
  free(m->gact);
  free(m->u_step);
  cq_state_free(m->cur);
  cq_state_free(m->g_cur);
  cq_state_free(m->bstate);
  cq_world* w = m->w;
  free(m);
  if (w && --w->n_memos == 0 && w->released) cq_world_free(w);
}

cq_memo* cq_memo_create(cq_world* w, int max_steps, int checkpoint_every) {
  if (!w->committed) return cqi_errorf(&w->err, CQ_ERR_STATE, "memo: call commit first"), NULL;
  if (max_steps < 1) return cqi_errorf(&w->err, CQ_ERR_ARG, "memo: steps must be >= 1 (got %d)", max_steps), NULL;
  if (checkpoint_every < 0)
    return cqi_errorf(&w->err, CQ_ERR_ARG, "memo: checkpoint_every must be >= 0 (0 = auto, got %d)", checkpoint_every),
           NULL;
  cq_memo* m = calloc(1, sizeof *m);
  if (!m) return cqi_errorf(&w->err, CQ_ERR_NOMEM, "out of memory"), NULL;
  const cqi_model* md = &w->model;
  int n = md->n, D = md->dim, na = md->n_act > 0 ? md->n_act : 1;
  m->w = w;
  m->be = w->be;
  w->n_memos++;
  m->max_steps = max_steps;
  m->b = md->desc.substeps;
  m->len = cqi_state_len(n, D);
  long N = (long)max_steps * m->b;
  if (checkpoint_every > 0)
    m->K = checkpoint_every;
  else { /* auto: keep every state when that fits the budget (no recompute), else O(sqrt(N)) checkpoints */
    double budget = CQ_MEMO_FULL_BUDGET, dev = m->be->ops->free_memory ? m->be->ops->free_memory(m->be) / 4 : 0;
    if (dev > budget) budget = dev;
    m->K = (double)N * m->len * sizeof(cq_real) <= budget ? 1 : (long)ceil(sqrt((double)N));
  }
  if (m->K > N) m->K = N;
  m->n_ckpt = (N + m->K - 1) / m->K;
  double need = ((double)m->n_ckpt + m->K) * m->len * sizeof(cq_real) + 2.0 * max_steps * na * sizeof(double),
         mem = (double)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGE_SIZE);
  if (mem > 0 && need > mem) { /* refuse before the kernel kills the process while the memo fills */
    double per = (double)m->len * sizeof(cq_real);
    cq_memo_free(m);
    return cqi_errorf(&w->err, CQ_ERR_NOMEM,
                      "memo: %d steps with checkpoint_every = %d keep about %.3g GB of states "
                      "(%.3g MB each), more than this machine's %.3g GB; lower steps or checkpoint_every (0 = auto "
                      "takes about sqrt(steps x substeps) states)",
                      max_steps, checkpoint_every, need / 1e9, per / 1e6, mem / 1e9),
           NULL;
  }
  int host = m->be->ops->host_memory;
  size_t R = sizeof(cq_real), S = R * (size_t)m->len;
  m->cur = cq_state_create(w);
  m->g_cur = cqi_state_alloc_on(m->be->ops, D, n);
  m->bstate = cqi_state_alloc_on(m->be->ops, D, n);
  m->ckpt = backend_alloc(m, (size_t)m->n_ckpt, S);
  m->seg = m->K > 1 ? backend_alloc(m, (size_t)(m->K - 1), S) : NULL;
  m->act = calloc((size_t)max_steps * na, sizeof(double));
  m->gact = calloc((size_t)max_steps * na, sizeof(double));
  m->u_step = calloc(na, R);
  int ok = m->cur && m->g_cur && m->bstate && m->ckpt && (m->K == 1 || m->seg) && m->act && m->gact && m->u_step;
  if (ok) {
    /* states in host or shared memory are worked on in place (their transfers move them where the next user is) */
    m->cur_b = host || m->cur->shared ? m->cur->block : backend_alloc(m, 1, S);
    m->gb[0] = host || m->g_cur->shared ? m->g_cur->block : backend_alloc(m, 1, S);
    m->gb[1] = backend_alloc(m, 1, S);
    ok = m->cur_b && m->gb[0] && m->gb[1];
  }
#define CQI_ALLOC(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) \
  CQI_IF(diff)(if (ok) { ok = grad_alloc(m, R * cqi_field_len(shape, n, D), &m->gp_b.name, &m->gp.name); })
  CQ_PARAM_FIELDS(CQI_ALLOC)
#undef CQI_ALLOC
  int f = 0;
#define CQI_CTL(name, shape, doc)                                                       \
  if (ok && f > 0) {                                                                    \
    memo_control* c = &m->ctl[f];                                                       \
    c->len = (long)n * (shape == CQ_SHAPE_VEC ? D : shape == CQ_SHAPE_MAT ? D * D : 1); \
    c->has = calloc(max_steps, 1);                                                      \
    ok = grad_alloc(m, R * c->len, &c->grad_b, &c->grad) && c->has;                     \
  }                                                                                     \
  f++;
  CQ_CONTROL_FIELDS(CQI_CTL)
#undef CQI_CTL
  if (!ok) {
    cq_memo_free(m);
    return cqi_errorf(&w->err, CQ_ERR_NOMEM,
                      "memo: out of memory for %d steps of %d particles (%ld stored states of %.3g MB; lower steps "
                      "or set checkpoint_every)",
                      max_steps, n, m->n_ckpt, S / 1e6),
           NULL;
  }
  if (m->be->ops->keep) { /* no records is not an error: the adjoint substeps then rebuild the grid */
    double mem = (double)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGE_SIZE), budget = CQ_MEMO_KEEP_BUDGET;
    if (mem > 0 && mem / 8 < budget) budget = mem / 8;
    m->n_kept = m->K == 1 ? N : m->K;
    if ((m->kept = calloc((size_t)m->n_kept, sizeof(cqi_kept))))
      for (long i = 0; i < m->n_kept; i++)
        m->kept[i] = (cqi_kept){NULL, 0, -1, -1, -1, -1, &m->kept_total, (size_t)budget};
  }
  m->seg_loaded = -1;
  m->pos = -1;
  return m;
}

int cq_memo_begin(cq_memo* m, const cq_state* s0) {
  if (s0->real_bits != CQ_REAL_BITS || s0->n != m->w->model.n || s0->dim != m->w->model.dim)
    return cqi_errorf(&m->w->err, CQ_ERR_ARG, "memo:begin: the state does not belong to this world");
  cq_state_copy(m->cur, s0);
  m->sub0 = s0->substep;
  m->steps = 0;
  m->rec++;
  m->seg_loaded = -1;
  m->pos = -1;
  m->checked = 0;
  m->failed = 0;
  m->generation = m->w->model.generation;
  return CQ_OK;
}

cq_state* cq_memo_state(cq_memo* m) { return m->cur; }
int cq_memo_steps(const cq_memo* m) { return m->steps; }
int cq_memo_stored_states(const cq_memo* m) { return (int)(m->n_ckpt + (m->K - 1)); }
const double* cq_memo_act(const cq_memo* m) { return m->act; }
int cq_memo_position(const cq_memo* m) { return m->pos; }
cq_state* cq_memo_grad(cq_memo* m) { return m->g_cur; }
cq_state* cq_memo_backward_state(cq_memo* m) { return m->bstate; }
double* cq_memo_grad_act(cq_memo* m) { return m->gact; }

void* cq_memo_grad_param(cq_memo* m, const char* name) {
#define CQI_FIND(fname, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) \
  CQI_IF(diff)(if (strcmp(name, #fname) == 0) return m->gp.fname;)
  CQ_PARAM_FIELDS(CQI_FIND)
#undef CQI_FIND
  cqi_errorf(&m->w->err, CQ_ERR_ARG, "no gradient for parameter '%s' (not differentiable)", name);
  return NULL;
}

void* cq_memo_grad_control(cq_memo* m, const char* name) {
  int f = 0;
#define CQI_FIND(fname, shape, doc)                              \
  if (f > 0 && strcmp(name, #fname) == 0) return m->ctl[f].grad; \
  f++;
  CQ_CONTROL_FIELDS(CQI_FIND)
#undef CQI_FIND
  return NULL;
}

/* The kernels' view of control step `step`'s recorded control. */
static int load_control(cq_memo* m, int step, cq_ctl* ctl) {
  cq_world* w = m->w;
  int na = w->model.n_act;
  for (int a = 0; a < na; a++) m->u_step[a] = (cq_real)m->act[(long)step * na + a];
  const cq_real* rec[CQ_N_CONTROL_FIELDS] = {m->u_step};
  for (int f = 1; f < CQ_N_CONTROL_FIELDS; f++)
    rec[f] = m->ctl[f].rec && m->ctl[f].has[step] ? m->ctl[f].rec + (long)step * m->ctl[f].len : NULL;
  return cqi_ctl_from_host(w, rec[0], rec[1], rec[2], ctl);
}

/* Records control c (doubles, may be NULL) as control step `step`: checks it is finite, converts it. */
static int record_control(cq_memo* m, const cq_control* c, int step) {
  cq_world* w = m->w;
  int na = w->model.n_act;
  cq_ctl staged; /* checks every field and converts it to working precision in the world's host staging */
  int st = cqi_stage_control(w, c, step + 1, &staged);
  if (st != CQ_OK) return st;
  for (int a = 0; a < na; a++) m->act[(long)step * na + a] = c && c->u ? c->u[a] : 0;
  const double* given[CQ_N_CONTROL_FIELDS] = {0};
  const cq_real* host[CQ_N_CONTROL_FIELDS] = {0};
  int f = 0;
#define CQI_GIVEN(name, shape, doc) \
  given[f] = c ? c->name : NULL;    \
  host[f] = w->ctl.host_##name;     \
  f++;
  CQ_CONTROL_FIELDS(CQI_GIVEN)
#undef CQI_GIVEN
  for (f = 1; f < CQ_N_CONTROL_FIELDS; f++) {
    memo_control* mc = &m->ctl[f];
    mc->has[step] = given[f] != NULL;
    if (!given[f]) continue;
    if (!mc->rec && (size_t)m->max_steps > SIZE_MAX / sizeof(cq_real) / (size_t)mc->len / 2)
      return cqi_errorf(&w->err, CQ_ERR_NOMEM, "memo: steps too large to record a control field");
    if (!mc->rec && !(mc->rec = malloc(sizeof(cq_real) * (size_t)mc->len * m->max_steps)))
      return cqi_errorf(&w->err, CQ_ERR_NOMEM, "out of memory recording a per-particle control for a memo of %d steps",
                        m->max_steps);
    memcpy(mc->rec + (long)step * mc->len, host[f], sizeof(cq_real) * mc->len);
  }
  return CQ_OK;
}

int cq_memo_step(cq_memo* m, const cq_control* c) {
  cq_world* w = m->w;
  cqi_backend* be = m->be;
  if (m->steps >= m->max_steps)
    return cqi_errorf(&w->err, CQ_ERR_STATE, "memo is full: it was created for %d steps", m->max_steps);
  if (m->failed)
    return cqi_errorf(&w->err, CQ_ERR_STATE,
                      "memo: step %d stopped midway (blow-up or interruption); begin a new "
                      "recording",
                      m->steps + 1);
  long step = m->steps + 1;
  int st = cqi_prepare_step(w, step);
  if (st == CQ_OK) st = record_control(m, c, m->steps);
  cq_ctl ctl;
  if (st == CQ_OK) st = load_control(m, m->steps, &ctl);
  if (st != CQ_OK) return st;
  size_t S = sizeof(cq_real) * m->len;
  if ((st = be->ops->upload(be, m->cur_b, m->cur->block, S)) != CQ_OK) return st;
  m->seg_loaded = -1;
  cq_particles p = cqi_particles_view(m->cur_b, m->cur->n, m->cur->dim);
  long k0 = m->sub0 + (long)m->steps * m->b;
  int batched;
  st = cqi_batch_begin(w, &batched);
  cqi_check bad = {CQ_CHECK_OK, -1, 0, 0, 0};
  for (int j = 0; j < m->b && st == CQ_OK; j++) {
    long r = (long)m->steps * m->b + j; /* substep relative to the initial state */
    if (r % m->K == 0 && (st = be->ops->copy(be, m->ckpt + (r / m->K) * m->len, m->cur_b, S)) != CQ_OK) break;
    /* one substep at a time: checkpoints fall between them */
    if ((st = cqi_poll_interrupt(w, "the recording", step, j, m->b)) != CQ_OK) break;
    w->sim.kept = m->K == 1 ? kept_slot_for(m, r) : NULL; /* every substep's record only when every state is kept */
    st = w->integ->substep(&w->sim, &p, &ctl, k0 + j, !m->checked, &bad); /* the recording's own output was checked */
    w->sim.kept = NULL;
    if (st == CQ_OK) m->cur->substep = k0 + j + 1, m->checked = 1;
  }
  st = cqi_batch_end(w, batched, st, &bad);
  int st2 = be->ops->download(be, m->cur->block, m->cur_b, S);
  if (st == CQ_ERR_BLOWUP && bad.check != CQ_CHECK_OK) {
    long k = batched ? k0 + bad.substep : m->cur->substep; /* one prepare per substep */
    m->cur->substep = bad.after ? k + 1 : k;
    m->failed = 1;
    return st2 != CQ_OK ? st2 : cqi_blowup(w, &bad, k, step, &m->cur->p);
  }
  if (st == CQ_OK) st = st2;
  if (st != CQ_OK) {
    m->failed = 1;
    return st;
  }
  m->steps++;
  w->err.msg[0] = 0;
  return CQ_OK;
}

/* The parameter gradients between the backend and their host mirrors (where they differ): up (before a backward
 * step), the callers' additions into the mirrors (running losses through the masses, lua/cq/tape.lua), which the
 * step's download would otherwise overwrite; down (after it), the results that callers read, with the control
 * gradients. */
static int sync_grads(cq_memo* m, int up) {
  cqi_backend* be = m->be;
  if (be->ops->host_memory) return CQ_OK;
  int st = CQ_OK, n = m->w->model.n, D = m->w->model.dim;
#define CQI_SYNC(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc)                             \
  CQI_IF(diff)                                                                                          \
  (if (st == CQ_OK && m->gp.name != m->gp_b.name) st =                                                  \
       up ? be->ops->upload(be, m->gp_b.name, m->gp.name, sizeof(cq_real) * cqi_field_len(shape, n, D)) \
          : be->ops->download(be, m->gp.name, m->gp_b.name, sizeof(cq_real) * cqi_field_len(shape, n, D));)
  CQ_PARAM_FIELDS(CQI_SYNC)
#undef CQI_SYNC
  for (int f = 1; f < CQ_N_CONTROL_FIELDS && st == CQ_OK && !up; f++) /* shared ones need no copy (the step waited) */
    if (m->ctl[f].grad != m->ctl[f].grad_b)
      st = be->ops->download(be, m->ctl[f].grad, m->ctl[f].grad_b, sizeof(cq_real) * m->ctl[f].len);
  return st;
}
static int download_grads(cq_memo* m) { return sync_grads(m, 0); }

cq_real* cqi_memo_grad_mass(cq_memo* m, int* on_backend) {
  *on_backend = m->gp.mass == m->gp_b.mass;
  return m->gp.mass;
}

/* A non-finite gradient stops the backward pass at the control step where it appears (check "nonfinite_gradient"),
 * before an optimizer can read it: dL/d(state at step k) (gstate_b, in backend memory; its host copy is g_cur), the
 * parameter gradients and dL/du of step k. The scans run where the data is (on the GPU for the CUDA backend); the
 * host copies give the value for the message. */
static int check_gradients(cq_memo* m, int k, const cq_real* gstate_b) {
  cq_world* w = m->w;
  cqi_backend* be = m->be;
  int n = w->model.n, D = w->model.dim, st, count = 0;
  const char* what = NULL;
  int particle = -1, comp = 0;
  double value = 0;
  /* dL/dstate, then every parameter gradient, scanned in one call */
  long len[1 + CQ_N_PARAM_FIELDS], first[1 + CQ_N_PARAM_FIELDS];
  const cq_real* arr[1 + CQ_N_PARAM_FIELDS];
  const char* name[1 + CQ_N_PARAM_FIELDS];
  const cq_real* host[1 + CQ_N_PARAM_FIELDS];
  len[0] = m->len, arr[0] = gstate_b, name[0] = NULL, host[0] = m->g_cur->block, count = 1;
#define CQI_SCAN(fname, ctype, type, shape, diff, dflt, lo, hi, bounds, doc)                  \
  CQI_IF(diff)                                                                                \
  (len[count] = cqi_field_len(shape, n, D), arr[count] = m->gp_b.fname, name[count] = #fname, \
   host[count++] = m->gp.fname;)
  CQ_PARAM_FIELDS(CQI_SCAN)
#undef CQI_SCAN
  if ((st = be->ops->first_nonfinite(be, count, len, arr, first)) != CQ_OK) return st;
  for (int a = 0; a < count && !what; a++) {
    if (first[a] < 0) continue;
    value = host[a][first[a]];
    if (a == 0)
      cqi_state_locate(first[a], n, D, &what, &particle, &comp);
    else
      what = name[a], particle = (int)(first[a] % n), comp = (int)(first[a] / n); /* component-major */
  }
  for (int a = 0; !what && a < w->model.n_act; a++)
    if (!isfinite(m->gact[(long)k * w->model.n_act + a]))
      what = "u", comp = a, value = m->gact[(long)k * w->model.n_act + a];
  if (!what) return CQ_OK;
  w->err.blowup.check = CQ_CHECK_GRADIENT;
  w->err.blowup.particle = particle;
  w->err.blowup.step = k;
  w->err.blowup.substep = m->sub0 + (long)k * m->b;
  char where[96];
  if (particle < 0)
    snprintf(where, sizeof where, "dL/du of actuator %d", comp + 1);
  else
    snprintf(where, sizeof where, "dL/d%s of particle %d (component %d)", what, particle + 1, comp + 1);
  return cqi_errorf(
      &w->err, CQ_ERR_BLOWUP,
      "backward: %s is %g at control step %d (check nonfinite_gradient): the loss "
      "gradient there is not finite, or the run is chaotic (gradients growing exponentially); shorten the "
      "horizon, add damping or lower the actuation",
      where, value, k);
}

int cq_memo_backward_begin(cq_memo* m) {
  cq_world* w = m->w;
  cqi_backend* be = m->be;
  if (m->steps == 0) return cqi_errorf(&w->err, CQ_ERR_STATE, "backward: nothing recorded (call step first)");
  if (m->failed)
    return cqi_errorf(&w->err, CQ_ERR_STATE,
                      "backward: the recording's step %d stopped midway (blow-up or "
                      "interruption); record again before backward",
                      m->steps + 1);
  if (m->generation != w->model.generation)
    return cqi_errorf(&w->err, CQ_ERR_STATE,
                      "backward: the world's parameters, actuators or boundaries changed after "
                      "this recording began; record again (memo:begin and steps) before backward");
  int n = w->model.n, D = w->model.dim, st = CQ_OK;
  if (m->g_cur->shared)
    st = be->ops->zero(be, m->g_cur->block, sizeof(cq_real) * m->len); /* no host migration */
  else
    memset(m->g_cur->block, 0, sizeof(cq_real) * m->len);
  memset(m->gact, 0, sizeof(double) * m->max_steps * (w->model.n_act > 0 ? w->model.n_act : 1));
#define CQI_ZERO(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) \
  CQI_IF(diff)(if (st == CQ_OK) st = be->ops->zero(be, m->gp_b.name, sizeof(cq_real) * cqi_field_len(shape, n, D));)
  CQ_PARAM_FIELDS(CQI_ZERO)
#undef CQI_ZERO
  if (st == CQ_OK) st = download_grads(m);
  if (st != CQ_OK) return st;
  m->pos = m->steps;
  m->bstate->substep = m->cur->substep;
  return be->ops->download(be, m->bstate->block, m->cur_b, sizeof(cq_real) * m->len); /* on the device if shared */
}

/* The state at relative substep r (B), recomputing its segment from the checkpoint if needed. */
static cq_real* state_at(cq_memo* m, long r, int* status) {
  cq_world* w = m->w;
  cqi_backend* be = m->be;
  long sg = r / m->K, i = r - sg * m->K;
  cq_real* c0 = m->ckpt + sg * m->len;
  if (i == 0) return c0;
  if (m->seg_loaded != sg) { /* recompute substeps sg*K+1 .. of this segment */
    long last = sg * m->K + m->K - 1, N = (long)m->steps * m->b;
    if (last > N - 1) last = N - 1;
    cq_real* prev = c0;
    for (long q = sg * m->K + 1; q <= last; q++) {
      cq_real* dst = m->seg + (q - sg * m->K - 1) * m->len;
      cq_ctl ctl;
      if ((*status = be->ops->copy(be, dst, prev, sizeof(cq_real) * m->len)) != CQ_OK) return NULL;
      if ((*status = load_control(m, (int)((q - 1) / m->b), &ctl)) != CQ_OK) return NULL;
      cq_particles p = cqi_particles_view(dst, w->model.n, w->model.dim);
      cqi_check bad = {CQ_CHECK_OK, -1, 0, 0, 0};
      w->sim.kept = kept_slot_for(m, q - 1);
      *status = w->integ->substep(&w->sim, &p, &ctl, m->sub0 + q - 1, 0, &bad);
      w->sim.kept = NULL;
      if (*status != CQ_OK) {
        if (bad.check != CQ_CHECK_OK)
          cqi_errorf(&w->err, CQ_ERR_STATE,
                     "backward: recomputing substep %ld failed the %s check (particle %d); was "
                     "the world changed after recording?",
                     m->sub0 + q, cq_name(CQ_LIST_CHECK, bad.check, NULL), bad.particle + 1);
        return NULL;
      }
      prev = dst;
    }
    m->seg_loaded = sg;
  }
  return m->seg + (i - 1) * m->len;
}

/* The adjoint substeps of control step k (0-based), last first, from dL/d(state after it) in gb[0]; the result is
 * left in gb[*cur], the state before the step in bstate (complete once the backend's stream is waited for). */
static int adjoint_substeps(cq_memo* m, int k, int* cur) {
  cq_world* w = m->w;
  cqi_backend* be = m->be;
  int n = w->model.n, D = w->model.dim, st = CQ_OK;
  cq_ctl ctl;
  cqi_adj_out out = {&m->gp_b, m->gact + (long)k * w->model.n_act, m->ctl[1].grad_b, m->ctl[2].grad_b};
  for (long r = (long)(k + 1) * m->b - 1; r >= (long)k * m->b; r--) {
    cq_real* sblock = state_at(m, r, &st);
    if (!sblock) return st;
    /* the state after substep r: same segment, the next checkpoint, or the final state (no recompute) */
    cq_real* nblock = r + 1 == (long)m->steps * m->b ? m->cur_b : state_at(m, r + 1, &st);
    if (!nblock) return st;
    if ((st = load_control(m, k, &ctl)) != CQ_OK) return st;
    if ((st = cqi_poll_interrupt(w, "the backward pass", k + 1, r - (long)k * m->b, m->b)) != CQ_OK) return st;
    cq_particles s = cqi_particles_view(sblock, n, D), s1 = cqi_particles_view(nblock, n, D);
    cq_particles g1 = cqi_particles_view(m->gb[*cur], n, D), g0 = cqi_particles_view(m->gb[1 - *cur], n, D);
    w->sim.kept = kept_slot_for(m, r);
    st = w->integ->substep_adj(&w->sim, &s, &s1, &ctl, m->sub0 + r, &g1, &g0, &out);
    w->sim.kept = NULL;
    if (st != CQ_OK) return st;
    *cur = 1 - *cur;
    if (r == (long)k * m->b) { /* a copy, not a download: it need not wait for the device (the step's end does) */
      if ((st = be->ops->copy(be, m->bstate->block, sblock, sizeof(cq_real) * m->len)) != CQ_OK) return st;
      m->bstate->substep = m->sub0 + r;
    }
  }
  return CQ_OK;
}

int cq_memo_backward_step(cq_memo* m) {
  cq_world* w = m->w;
  cqi_backend* be = m->be;
  if (m->pos < 0) return cqi_errorf(&w->err, CQ_ERR_STATE, "backward_step: call backward_begin first");
  if (m->pos == 0)
    return cqi_errorf(&w->err, CQ_ERR_STATE,
                      "backward: already back at the initial state (call backward_begin to restart)");
  if (m->generation != w->model.generation)
    return cqi_errorf(&w->err, CQ_ERR_STATE,
                      "backward: the world's parameters, actuators or boundaries changed after "
                      "this recording began; record again before backward");
  int k = m->pos - 1, st = CQ_OK;
  size_t S = sizeof(cq_real) * m->len;
  for (int f = 1; f < CQ_N_CONTROL_FIELDS && st == CQ_OK; f++)
    st = be->ops->zero(be, m->ctl[f].grad_b, sizeof(cq_real) * m->ctl[f].len);
  if (st == CQ_OK) st = be->ops->upload(be, m->gb[0], m->g_cur->block, S); /* callers add dL/ds_k on the host */
  if (st == CQ_OK) st = sync_grads(m, 1);                                  /* and into the parameter gradients */
  /* the final state, which the host may have read (a shared block is moved back to the device; else a no-op) */
  if (st == CQ_OK && m->pos == m->steps && m->cur_b == m->cur->block) st = be->ops->upload(be, m->cur_b, m->cur_b, S);
  if (st != CQ_OK) return st;
  int batched, cur = 0; /* gb[cur] holds dL/d(state after the substep being undone) */
  st = cqi_batch_begin(w, &batched);
  if (st == CQ_OK) st = adjoint_substeps(m, k, &cur);
  cqi_check bad = {CQ_CHECK_OK, -1, 0, 0, 0};
  st = cqi_batch_end(w, batched, st, &bad);
  if (st != CQ_OK) m->seg_loaded = -1; /* a recomputed segment may be incomplete */
  if (st == CQ_ERR_BLOWUP && bad.check != CQ_CHECK_OK)
    return cqi_errorf(&w->err, CQ_ERR_STATE,
                      "backward: a state recomputed for control step %d fails the %s check "
                      "(particle %d); was the world changed after recording?",
                      k + 1, cq_name(CQ_LIST_CHECK, bad.check, NULL), bad.particle + 1);
  if (st != CQ_OK) return st;
  /* the result must be in g_cur, whose address callers hold */
  st = be->ops->host_memory ? be->ops->copy(be, m->g_cur->block, m->gb[cur], S)
                            : be->ops->download(be, m->g_cur->block, m->gb[cur], S); /* either side may be shared */
  if (st == CQ_OK) st = download_grads(m);
  if (st == CQ_OK) st = check_gradients(m, k, m->gb[cur]);
  if (st != CQ_OK) return st;
  m->pos = k;
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

/* cq.h: the public C API of the cqlua engine (differentiable MLS-MPM). One-line contracts; all functions that can
 * fail return a CQ_* status and leave a message in cq_world_error(). Scalars cross the API as double; particle
 * arrays are cq_real (float or double, see cq_real_bits()), structure-of-arrays, component-major: a[c * n + p]. */
#ifndef CQ_H
#define CQ_H
#ifdef __cplusplus
extern "C" {
#endif

typedef struct cq_world cq_world; /* model (grid, boundary, per-particle parameters) + CPU workspace */
typedef struct cq_state cq_state; /* x, v, C, F of every particle and the substep counter */
typedef struct cq_memo cq_memo;   /* a recorded run: checkpoints, actuations, gradients */

enum { CQ_OK = 0, CQ_ERR_ARG = 1, CQ_ERR_NOMEM = 2, CQ_ERR_BLOWUP = 3, CQ_ERR_STATE = 4 };

/* One domain wall: index 2*axis + side (side 0 = low, 1 = high). v_b(t) = velocity + amplitude sin(omega t + phase). */
typedef struct cq_wall_desc {
  int type;                /* CQ_BC_NONE, STICKY, SLIP, SEPARATE, FRICTION (see kernel_types.h; 0..4) */
  double friction;         /* Coulomb coefficient for FRICTION (>= 0, may be INFINITY) */
  int thickness;           /* cells from the domain edge that belong to the wall (>= 1 when type != NONE) */
  double velocity[3];      /* constant boundary velocity */
  double osc_amplitude[3]; /* oscillating part of the boundary velocity (vibrating floor) */
  double osc_omega;        /* angular frequency (rad/time) */
  double osc_phase;        /* phase (rad) */
} cq_wall_desc;

typedef struct cq_world_desc {
  int dim;                 /* 2 or 3 */
  int res[3];              /* grid nodes per axis (>= 5) */
  double dx;               /* cell size (> 0) */
  double dt;               /* control step (> 0); each substep is dt / substeps */
  int substeps;            /* substeps per control step (>= 1) */
  double gravity[3];       /* acceleration */
  double damping;          /* velocity damping rate (>= 0): v *= exp(-damping dt_sub) each substep */
  int n_particles;         /* >= 1 */
  int n_actuators;         /* >= 0 */
  int threads;             /* OpenMP threads (0 = OpenMP default) */
  cq_wall_desc walls[6];
} cq_world_desc;

int cq_real_bits(void);                 /* 32 or 64: the precision this library was built with */
const char* cq_version(void);           /* library version string */
void cq_world_desc_default(cq_world_desc* d); /* fills defaults: 2D, 64x64, dx 1/64, dt 1e-3, no walls */

cq_world* cq_world_create(const cq_world_desc* d, char* err, int errlen); /* NULL + message in err on bad input */
void cq_world_free(cq_world* w);                                         /* frees everything the world owns */
const char* cq_world_error(const cq_world* w);                          /* last error message ("" if none) */
int cq_world_dim(const cq_world* w);
int cq_world_n(const cq_world* w);
void* cq_world_param(cq_world* w, const char* name);   /* per-particle parameter array (see fields.h) or NULL */
int cq_world_set_actuator(cq_world* w, int a, int kind); /* actuator a is CQ_ACT_STRESS (0) or CQ_ACT_FORCE (1) */
/* Explicit node boundary conditions (terrain): nodes[k] is a flat node index, normals[3k..] its unit normal. */
int cq_world_set_node_bcs(cq_world* w, int count, const int* nodes, const double* normals, int type, double friction);
/* Cable (seed 000 eq. 17) through particles[0..count) (0-based, in order), stiffness k, rest length (length at
 * u = 1), driven by actuator `actuator`, whose kind must be CQ_ACT_CABLE (2). */
int cq_world_add_cable(cq_world* w, int actuator, int count, const int* particles, double k, double rest);
/* Lets memos record a per-particle force per control step (Lua actuators); must precede cq_memo_create. */
int cq_world_enable_user_forces(cq_world* w);
int cq_world_commit(cq_world* w);        /* validates parameters (E, nu, mass, dt vs. stability limit, ...) */
double cq_world_stable_dt(const cq_world* w); /* dx / max wave speed over particles (needs parameters set) */
int cq_world_set_threads(cq_world* w, int threads);
/* Backend: 0 = CPU (default), 1 = CUDA (only in libcq_cuda_*.so, with a device; allocates device buffers).
 * Returns CQ_OK, or CQ_ERR_ARG with the reason in cq_world_error. */
int cq_world_set_backend(cq_world* w, int backend);
int cq_world_backend(const cq_world* w);
/* CUDA devices usable by this library: > 0, or 0 / -1 with the reason in err (no device, no driver, or a library
 * built without CUDA). */
int cq_cuda_device_count(char* err, int errlen);
/* Name and memory of device 0 in buf; CQ_OK or an error status with the reason in buf. */
int cq_cuda_device_info(char* buf, int len);
/* Device-to-device cudaMemcpy rate of device 0 in bytes/s (read + written bytes over the time: 2 x size per copy),
 * best of reps copies of `bytes` bytes; <= 0 with the reason in err on failure. */
double cq_cuda_memcpy_bandwidth(double bytes, int reps, char* err, int errlen);

/* Field description for generic views: kind 0 = state, 1 = param. Returns 0 past the end. */
int cq_field_info(int kind, int index, const char** name, int* type, int* shape, int* differentiable,
                  const char** doc);

cq_state* cq_state_create(const cq_world* w);  /* x = 0, v = 0, C = 0, F = I */
void cq_state_free(cq_state* s);
void* cq_state_field(cq_state* s, const char* name); /* x, v, C or F (cq_real, component-major) */
long cq_state_substep(const cq_state* s);            /* substeps taken since creation (sets the time) */
void cq_state_set_substep(cq_state* s, long k);
int cq_state_copy(cq_state* dst, const cq_state* src);

/* One control step = world substeps with actuation u[n_actuators] held fixed. Detects blow-ups and particles
 * leaving the grid; on error the state is left at the failing substep. */
int cq_step(cq_world* w, cq_state* s, const double* u);
/* Same, with an extra per-particle force force[D][n] (component-major, may be NULL) held over the substeps. */
int cq_step_force(cq_world* w, cq_state* s, const double* u, const double* force);
/* Same, with user actuation from actuators written in Lua, both held over the substeps and either may be NULL:
 * force[D][n] (component-major) and stress[D*D][n], a material-space actuation stress tensor A_p per particle
 * (row-major components, stress units; stress[(i*D + j)*n + p] = A_p[i][j]) that adds F A_p F^T to the Kirchhoff
 * stress exactly as a stress actuator adds F diag(u axis) F^T (seed 000 eq. 15). */
int cq_step_ext(cq_world* w, cq_state* s, const double* u, const double* force, const double* stress);

/* Recording for gradients. checkpoint_every = substeps between stored states: 1 = store every substep (full
 * memory), K = one state every K substeps (sqrt(N) is optimal), 0 = auto: every substep if that fits in 256 MiB,
 * else about sqrt(N). Gradients are identical either way; the grid is never stored. */
cq_memo* cq_memo_create(cq_world* w, int max_steps, int checkpoint_every);
void cq_memo_free(cq_memo* m);
int cq_memo_begin(cq_memo* m, const cq_state* s0);  /* records s0 as the initial state; discards earlier steps */
int cq_memo_step(cq_memo* m, const double* u);      /* one control step from the current state, recorded */
/* Same with a per-particle force [D][n] for this control step (needs cq_world_enable_user_forces). */
int cq_memo_step_force(cq_memo* m, const double* u, const double* force);
/* Same with a user force [D][n] (needs cq_world_enable_user_forces) and/or a user stress [D*D][n] (as in
 * cq_step_ext; no set-up needed: the memo allocates its stress record, steps x D*D*n reals, at the first step that
 * has one); either may be NULL. */
int cq_memo_step_ext(cq_memo* m, const double* u, const double* force, const double* stress);
cq_state* cq_memo_state(cq_memo* m);                /* current (latest) state of the recording */
int cq_memo_steps(const cq_memo* m);                /* control steps recorded */
int cq_memo_stored_states(const cq_memo* m);        /* states held in memory (checkpoints + one segment) */
const double* cq_memo_act(const cq_memo* m);        /* recorded actuation, [steps][n_actuators] */

/* Backward pass, one control step at a time so callers can add running-loss and controller gradients:
 * backward_begin zeroes all gradients and sets position k = steps; add dL/ds_k into cq_memo_grad(); then
 * backward_step moves to k-1, accumulating dL/du_{k-1} and parameter gradients. */
int cq_memo_backward_begin(cq_memo* m);
cq_state* cq_memo_grad(cq_memo* m);          /* dL/d(state at the current backward position) */
int cq_memo_backward_step(cq_memo* m);       /* returns CQ_OK; position decreases by one */
int cq_memo_position(const cq_memo* m);      /* current backward position k */
cq_state* cq_memo_backward_state(cq_memo* m); /* the (recomputed) state at the current backward position */
int cq_memo_backward(cq_memo* m);            /* all remaining backward steps */
double* cq_memo_grad_act(cq_memo* m);        /* dL/du, [steps][n_actuators] */
void* cq_memo_grad_force(cq_memo* m);        /* dL/d(user force) of the control step at the current position */
void* cq_memo_grad_stress(cq_memo* m);       /* dL/d(user stress) [D*D][n] of that control step (cq_real; zero
                                                when the step had no user stress) */
void* cq_memo_grad_param(cq_memo* m, const char* name); /* dL/d(mass|vol0|E|nu) per particle (cq_real) */

#ifdef __cplusplus
}
#endif
#endif

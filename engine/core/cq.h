/* cq.h: the public C API of the cqlua engine (differentiable MLS-MPM). All functions that can fail return a CQ_*
 * status and leave a message in cq_world_error(). Scalars cross the API as double; particle arrays are cq_real (float
 * or double, see cq_real_bits()), structure-of-arrays, component-major: a[c * n + p]. Indices passed to functions
 * are 0-based; messages number particles, actuators, walls and steps from 1, as the Lua layer does.
 * The Lua layer's FFI declarations are this file run through the C preprocessor (gcc -E -P): keep it free of
 * system includes and of function bodies. */
#ifndef CQ_H
#define CQ_H
#include "registry.h"
#include "fields.h"
#ifdef __cplusplus
extern "C" {
#endif

typedef struct cq_world cq_world; /* model (grid, walls, per-particle parameters, actuators) + backend + integrator */
typedef struct cq_state cq_state; /* the state fields (fields.h) of every particle and the substep counter */
typedef struct cq_memo cq_memo;   /* a recorded run: checkpoints, controls, gradients */

enum { CQ_OK = 0, CQ_ERR_ARG = 1, CQ_ERR_NOMEM = 2, CQ_ERR_BLOWUP = 3, CQ_ERR_STATE = 4, CQ_ERR_INTERRUPTED = 5 };
enum { CQ_MAX_THREADS = 1024 }; /* more OpenMP threads than this overflow libgomp's stack or fail to start */

/* The registries (registry.h) as enums: CQ_BC_*, CQ_ACT_*, CQ_MAT_*, CQ_INTEGRATOR_*, CQ_BACKEND_*, CQ_CHECK_*. */
#define CQI_ENUM_BC(ID, name, doc) CQ_BC_##ID,
#define CQI_ENUM_ACT(ID, name, doc) CQ_ACT_##ID,
#define CQI_ENUM_MAT(ID, name, ...) CQ_MAT_##ID,
#define CQI_ENUM_INTEGRATOR(ID, name, doc) CQ_INTEGRATOR_##ID,
#define CQI_ENUM_BACKEND(ID, name, doc) CQ_BACKEND_##ID,
#define CQI_ENUM_CHECK(ID, name, doc) CQ_CHECK_##ID,
enum { CQ_BOUNDARIES(CQI_ENUM_BC) CQ_N_BOUNDARIES };
enum { CQ_ACTUATOR_KINDS(CQI_ENUM_ACT) CQ_N_ACTUATOR_KINDS };
enum { CQ_MATERIALS(CQI_ENUM_MAT) CQ_N_MATERIALS };
enum { CQ_INTEGRATORS(CQI_ENUM_INTEGRATOR) CQ_N_INTEGRATORS };
enum { CQ_BACKENDS(CQI_ENUM_BACKEND) CQ_N_BACKENDS };
enum { CQ_CHECKS(CQI_ENUM_CHECK) CQ_N_CHECKS };
/* Lists for cq_name and field kinds for cq_field_info. */
enum { CQ_LIST_BOUNDARY, CQ_LIST_ACTUATOR, CQ_LIST_MATERIAL, CQ_LIST_INTEGRATOR, CQ_LIST_BACKEND, CQ_LIST_CHECK };
enum { CQ_FIELDS_STATE, CQ_FIELDS_PARAM, CQ_FIELDS_CONTROL };

/* One domain wall: index 2*axis + side (side 0 = low, 1 = high). v_b(t) = velocity + amplitude sin(omega t + phase). */
typedef struct cq_wall_desc {
  int type;                /* CQ_BC_* */
  double friction;         /* Coulomb coefficient for CQ_BC_FRICTION (>= 0, may be INFINITY) */
  int thickness;           /* cells from the domain edge that belong to the wall (>= 1 when type != NONE) */
  double velocity[3];      /* constant boundary velocity */
  double osc_amplitude[3]; /* oscillating part of the boundary velocity (vibrating floor) */
  double osc_omega;        /* angular frequency (rad/time) */
  double osc_phase;        /* phase (rad) */
} cq_wall_desc;

typedef struct cq_world_desc {
  int dim;                 /* 2 or 3 */
  int res[3];              /* grid nodes per axis, in [5, 65536] */
  double dx;               /* cell size (> 0) */
  double dt;               /* control step (> 0); each substep is dt / substeps */
  int substeps;            /* substeps per control step (>= 1) */
  double gravity[3];       /* acceleration */
  double damping;          /* velocity damping rate (>= 0): v *= exp(-damping dt_sub) each substep (implicit.h: drag) */
  int n;                   /* particles (>= 1) */
  int n_actuators;         /* >= 0 */
  int threads;             /* CPU threads, in [0, CQ_MAX_THREADS]: 0 = the idle cores, N = at most N (see README) */
  int integrator;          /* CQ_INTEGRATOR_* */
  double implicit_tol;     /* implicit: Newton stops at ||grad E||_inf <= tol * scale (0 = 1e-6 in f64, 1e-4 in f32) */
  int implicit_max_newton; /* implicit: Newton iterations per substep before the no-convergence error (0 = 50) */
  int implicit_max_cg;     /* implicit: conjugate-gradient iterations per Newton iteration (0 = 500) */
  int implicit_precond;    /* implicit: CQ_PRECOND_* (0 = auto: factor where the backend can assemble, else mass) */
  int implicit_volume;     /* implicit: CQ_VOLUME_* (how eq. 12 takes the volumetric term; implicit.h) */
  int implicit_max_split; /* implicit: halvings of a failing substep, in [-1, 30] (0 = 6, -1 = none; integrator_implicit.c) */
  double implicit_error_tol; /* implicit: the bound, in cells, on each substep's local position error estimate
                              * (dt/2) max_p |v_p' - v_p| (0 = 0.02, < 0 = no estimate; integrator_implicit.c
                              * step_error); a substep above it counts in the stats' error_over */
  int implicit_adapt;        /* implicit: 1 = a substep above implicit_error_tol is redone as two halves (up to
                              * implicit_max_split); 0 = it is kept and counted */
  int implicit_pressure; /* implicit: CQ_PRESSURE_* (chamber pressure lagged at F_p, or at F_p(v) inside the solve) */
  int implicit_fill_rounds; /* implicit, fluid = grid: active-set rounds per Newton iteration, in [-1, 16] (0 = 4
                             * with the factor preconditioner, none with the masses; -1 = none;
                             * integrator_implicit.c active_set) */
  int volumetric; /* CQ_VOLUMETRIC_*: each particle's own J in the bulk term, or J averaged per node (volumetric.h) */
  int fluid;      /* CQ_FLUID_*: a fluid's pressure from its own J, or from the grid's fill (fill.h) */
  int fluid_rest; /* fluid = grid: CQ_FILL_REST_* (each node's rest fill: 1, or its fill at the first step) */
  int fluid_contact;     /* fluid = grid: CQ_FLUID_CONTACT_* (the fluids on the solids' grid velocities, or on their own
                      * copy of the grid, meeting the solids only through the fill's pressure: slip and separation) */
  int volumetric_groups; /* volumetric = averaged: CQ_VOL_GROUPS_* (a particle's group: its node now, or first) */
  double volumetric_own; /* volumetric = averaged: the bulk modulus each particle keeps on its own J, as a multiple of
                            * its model's P-wave modulus, in [1e-6, 1e6] (0 = 1; volumetric.h vol_own_bulk) */
  cq_wall_desc walls[6];
} cq_world_desc;

/* The inputs of one control step, held over its substeps (fields.h, CQ_CONTROL_FIELDS); NULL = absent (zero):
 * u[n_actuators], force[D][n] (component-major) and stress[D*D][n] (stress[(i*D + j)*n + p] = A_p[i][j]). */
typedef struct cq_control {
#define CQI_CONTROL_MEMBER(name, shape, doc) const double* name;
  CQ_CONTROL_FIELDS(CQI_CONTROL_MEMBER)
#undef CQI_CONTROL_MEMBER
} cq_control;

/* Where the last CQ_ERR_BLOWUP happened (cq_world_blowup). */
typedef struct cq_blowup {
  int check;    /* CQ_CHECK_* that failed (CQ_CHECK_OK: none since the last successful call) */
  int particle; /* the failing particle, 0-based; -1 when the check is not about one particle */
  long step;    /* control step of the failure (counted from the state's creation, 0-based) */
  long substep; /* substep of the failure (counted from the state's creation, 0-based) */
} cq_blowup;

/* Work of the implicit integrator's solves since the world was created or the counters were last reset (all zero
 * for the explicit integrator): what docs/results/history.md and a user tuning implicit.tol / dt look at. */
/* The implicit solve's preconditioners: the nodal masses (Jacobi on the inertia term), or the substep's Hessian
 * assembled and factorised (implicit_factor.h; the CPU backend). */
enum { CQ_PRECOND_AUTO = 0, CQ_PRECOND_MASS = 1, CQ_PRECOND_FACTOR = 2 };
/* The volumetric term (K/2)(J - 1)^2 in the implicit solve: at the volume ratio linearised over the substep,
 * J_p (1 + dt tr C_p(v)), which G2P then stores as det F (linear, the default: quadratic in v, so Newton is not held
 * back by a bulk modulus far above the shear modulus; implicit.h, g2p.h), or at J = det F_p(v) (exact). */
enum { CQ_VOLUME_LINEAR = 0, CQ_VOLUME_EXACT = 1 };
enum { CQ_PRESSURE_LAGGED = 0, CQ_PRESSURE_IMPLICIT = 1 };
/* The bulk term (K/2)(J - 1)^2 of each particle on its own J (particle, 0 here), or on the volume-averaged J of
 * the particles nearest to one grid node (averaged: no volumetric locking of nearly incompressible solids, fluids
 * taking part too; engine/terms/volumetric.h), or (solids, Lua's default) averaged for the solids only: each fluid
 * particle keeps its whole K on its own J, and the term is off while no particle's K exceeds its own share (a world
 * without a nearly incompressible solid costs what particle costs). */
enum { CQ_VOLUMETRIC_PARTICLE = 0, CQ_VOLUMETRIC_AVERAGED = 1, CQ_VOLUMETRIC_SOLIDS = 2 };
/* Which particles form a group of the averaged term: those nearest to one grid node now (current, the default: a
 * particle changes group as it moves, a jump in its pressure), or in the first state the world steps from (initial:
 * fixed sets of particles, so the forward is continuous in the state and the actuation; cq_world_reset_groups). */
enum { CQ_VOL_GROUPS_CURRENT = 0, CQ_VOL_GROUPS_INITIAL = 1 };
/* A fluid's pressure: from its bulk term on its own J (particle, the default), or from how full the grid's nodes are
 * (their fill), one constraint per node (the grid fluid, Lua's fluid = "grid": water that rests and does not lock;
 * engine/terms/fill.h). With it, each node's rest fill is 1, or (initial) the larger of 1 and its fill in the first
 * state the world steps from (cq_world_reset_fill). */
enum { CQ_FLUID_PARTICLE = 0, CQ_FLUID_FILL = 1 };
enum { CQ_FILL_REST_ONE = 0, CQ_FILL_REST_INITIAL = 1 };
enum { CQ_FLUID_CONTACT_STICKY = 0, CQ_FLUID_CONTACT_SEPARATE = 1 };

typedef struct cq_solver_stats {
  long substeps;         /* implicit substeps solved (forward, and forward recomputations inside the backward pass) */
  long newton;           /* Newton iterations */
  long cg;               /* conjugate-gradient iterations (Hessian-vector products) for the Newton directions */
  long halvings;         /* line-search step halvings */
  long adjoint_cg;       /* conjugate-gradient iterations of the adjoint solves (backward) */
  long factorizations;   /* Hessians assembled and factorised (implicit.precond = "factor") */
  long splits;           /* substeps (or halves of them) redone as two halves after a failed attempt */
  double factor_seconds; /* wall time spent assembling and factorising them */
  long
      simd_particles; /* particle-substeps whose P2G adjoint ran as SIMD lanes on the CPU (engine/backends/cpu/cpu_loops.h) */
  long kept_substeps;   /* adjoint substeps that took their P2G from the memo's records instead of recomputing it */
  long factor_failures; /* factorisations refused (K not definite, or a wrong-sign pivot of the grid fluid's
                         * quasi-definite matrix): those Newton directions were preconditioned by the masses */
  long fill_rounds;     /* the grid fluid's active-set rounds: Newton directions solved again with the pieces of W the
                     * nodes are on at the end of the last one (engine/integrators/integrator_implicit.c active_set) */
  long roundoff_stops; /* Newton solves ended at the elastic forces' round-off before implicit.tol (a light load on a
                        * stiff solid: integrator_implicit.c roundoff_floor) */
  long error_splits;   /* pieces redone as two halves because their error estimate was above implicit.error_tol */
  long error_over;     /* pieces kept with their estimate above implicit.error_tol (implicit.adapt off, or
                        * implicit.max_split used up) */
  double error_max;    /* the largest error estimate of a kept piece, in cells */
} cq_solver_stats;

int cq_real_bits(void);       /* 32 or 64: the precision this library was built with */
const char* cq_version(void); /* library version string */
/* Name of entry id of a registry list (CQ_LIST_*), and its doc in *doc (may be NULL); NULL past the end. */
const char* cq_name(int list, int id, const char** doc);
/* Material id's registry entry (registry.h, its header's CQ_MAT_PARAMS_<name>): *enu = 1 for a model written on E and
 * nu; *uses = the parameters the robot builder takes for it, " c10! c01! bulk!" (! required, ? optional: the field's
 * default). CQ_ERR_ARG for an unknown id. */
int cq_material_info(int id, int* enu, const char** uses);
/* The valid range of per-particle parameter `name` (fields.h): [lo, hi] with bounds CQ_CLOSED, CQ_OPEN_* or CQ_CUSTOM
 * (checked by code). CQ_ERR_ARG for an unknown name. */
int cq_param_bounds(const char* name, double* lo, double* hi, int* bounds);
/* Checks one particle of material id in dimension dim as commit does, beyond each parameter's own range: values holds
 * every parameter of the table in cq_field_info order (dim values for a vector, dim * dim for a matrix). Returns 1
 * when valid, else 0 with the reason in why. */
int cq_material_check(int id, int dim, const double* values, char* why, int len);
/* Size of a public struct ("cq_world_desc", "cq_wall_desc", "cq_control", "cq_blowup", "cq_solver_stats"), 0 if
 * unknown. */
unsigned long cq_sizeof(const char* type_name);
/* Field description (fields.h) of table kind (CQ_FIELDS_*), entry index: name, element type (CQ_TYPE_*), shape
 * (CQ_SHAPE_*), differentiable flag, doc, a text of the valid range and the default value (parameters; "" and 0
 * otherwise). Returns 0 past the end. */
int cq_field_info(int kind, int index, const char** name, int* type, int* shape, int* differentiable, const char** doc,
                  const char** range, double* dflt);

void cq_world_desc_default(cq_world_desc* d); /* fills defaults: 2D, 64x64, dx 1/64, dt 1e-3, no walls */
cq_world* cq_world_create(const cq_world_desc* d, char* err, int errlen); /* NULL + message in err on bad input */
void cq_world_free(cq_world* w);               /* frees everything the world owns (once its last memo is freed) */
const char* cq_world_error(const cq_world* w); /* last error message ("" if none) */
int cq_world_dim(const cq_world* w);
int cq_world_n(const cq_world* w);
int cq_world_n_actuators(const cq_world* w);
void* cq_world_param(cq_world* w, const char* name);     /* per-particle parameter array (fields.h) or NULL */
int cq_world_set_actuator(cq_world* w, int a, int kind); /* actuator a (0-based) is of kind CQ_ACT_* */
/* Explicit node boundary conditions (terrain): nodes[k] is a flat node index, normals[3k..] its unit normal. */
int cq_world_set_node_bcs(cq_world* w, int count, const int* nodes, const double* normals, int type, double friction);
/* Cable (seed 000 eq. 17) through particles[0..count) (0-based, in order), stiffness k, rest length (length at
 * u = 1), driven by actuator `actuator` (0-based), whose kind must be CQ_ACT_CABLE. */
int cq_world_add_cable(cq_world* w, int actuator, int count, const int* particles, double k, double rest);
/* Validates every parameter and dt against the stability limit; required once before stepping. Every control
 * step validates the parameters again (they may be written through cq_world_param at any time). */
int cq_world_commit(cq_world* w);
double cq_world_stable_dt(const cq_world* w); /* the stable substep: wave speed and viscosity (needs parameters set) */
int cq_world_set_threads(cq_world* w, int threads);             /* as cq_world_desc.threads */
int cq_world_threads_used(const cq_world* w);                   /* CPU threads the last step ran on */
int cq_world_set_gravity(cq_world* w, const double gravity[3]); /* from the next step on (seed 004's break-in) */
/* Backend CQ_BACKEND_CPU (default) or CQ_BACKEND_CUDA (only in libcq_cuda_*.so, with a device). */
int cq_world_set_backend(cq_world* w, int backend);
int cq_world_backend(const cq_world* w);
/* The last blow-up (CQ_ERR_BLOWUP) of cq_step / cq_memo_step: which check, particle, step and substep. */
int cq_world_blowup(const cq_world* w, cq_blowup* out);
/* The implicit solver's counters into *out; reset != 0 zeroes them afterwards. */
int cq_world_solver_stats(cq_world* w, cq_solver_stats* out, int reset);
/* fluid = "grid", fluid_rest = "initial": forget the rest fill, so that the next step takes it from its state. */
int cq_world_reset_fill(cq_world* w);
/* volumetric = "averaged", volumetric_groups = "initial": forget the groups, so that the next step takes them from its
 * state. */
int cq_world_reset_groups(cq_world* w);
/* volumetric_groups = "initial": take the groups now from state s (robot:world: the robot's initial state, so that
 * they do not depend on which state is stepped first). */
int cq_world_take_groups(cq_world* w, const cq_state* s);
/* Interruption: while *flag is non-zero (a signal number, set by the host's SIGINT / SIGTERM handler) cq_step,
 * cq_memo_step and the backward pass stop at the next substep boundary with CQ_ERR_INTERRUPTED. The flag is
 * process-wide (signals are); NULL (the default) disables polling. */
void cq_set_interrupt_flag(const volatile int* flag);
/* CUDA devices usable by this library: > 0, or 0 / -1 with the reason in err (no device, no driver, or a library
 * built without CUDA). */
int cq_cuda_device_count(char* err, int errlen);
/* Name and memory of device 0 in buf; CQ_OK or an error status with the reason in buf. */
int cq_cuda_device_info(char* buf, int len);
/* Device-to-device cudaMemcpy rate of device 0 in bytes/s (read + written bytes over the time: 2 x size per copy),
 * best of reps copies of `bytes` bytes; <= 0 with the reason in err on failure. */
double cq_cuda_memcpy_bandwidth(double bytes, int reps, char* err, int errlen);
/* With CQ_CUDA_TIMING=1 in the environment: the device time of every launch, copy and clear since the last report,
 * summed per operation, and the device's idle time between them, as a table in buf (then reset); returns the number
 * of operations timed (cuda/timing.cuh). */
long cq_cuda_timing_report(char* buf, int len);

cq_state* cq_state_create(const cq_world* w); /* every field at its initial value (fields.h: F = I) */
void cq_state_free(cq_state* s);
void* cq_state_field(cq_state* s, const char* name); /* a state field (cq_real, component-major) or NULL */
long cq_state_substep(const cq_state* s);            /* substeps taken since creation (sets the time) */
/* Field `name` of s as doubles into out (component-major, as cq_state_field), read where the state is: a state the GPU
 * keeps between control steps is not moved to the host (recording a trajectory every control step). */
int cq_state_read(cq_world* w, const cq_state* s, const char* name, double* out);
void cq_state_set_substep(cq_state* s, long k);
int cq_state_copy(cq_state* dst, const cq_state* src);
/* Cauchy stress sigma = tau / J of every particle of s (engine/core/stress.c), tau the Kirchhoff stress the step uses:
 * P(F) F^T of the particle's material (with its incompressibility term) plus, when c gives u or stress, the
 * actuation stress F A F^T (c may be NULL: elastic stress only; c->force is ignored). out[(i*D + j)*n + p] =
 * sigma_p[i][j] (stress units), component-major like F. Validates the parameters first; runs on the host. */
int cq_world_stress(cq_world* w, const cq_state* s, const cq_control* c, double* out);

/* The mass moments of state s with the world's current masses m (engine/stages/moments.h), 1 + 2D + 2D^2 doubles into out:
 * M = sum m, sum m x [D], sum m v [D], sum m x x^T [D][D], sum m x v^T [D][D] (row: the x component). Runs where s
 * is (a state the GPU keeps is not moved to the host); the same for any thread count. */
int cq_state_moments(cq_world* w, const cq_state* s, double* out);
/* Its adjoint: g = dL/d(the moments), same layout; adds dL/dx and dL/dv into the gradient state gs and, when m is not
 * NULL, dL/dmass into the memo's parameter gradient (cq_memo_grad_param(m, "mass")). */
int cq_state_moments_adj(cq_world* w, const cq_state* s, const double* g, cq_state* gs, cq_memo* m);

/* One control step = the world's substeps with the control c (may be NULL) held fixed. Checks the control (finite),
 * the parameters and the stable dt first; after every substep it checks every particle (CQ_CHECKS) and stops with
 * CQ_ERR_BLOWUP at the substep where one fails, leaving the state there (see cq_world_blowup). */
int cq_step(cq_world* w, cq_state* s, const cq_control* c);

/* Recording for gradients. checkpoint_every = substeps between stored states: 1 = store every substep (full
 * memory), K = one state every K substeps (sqrt(N) is optimal), 0 = auto: every substep if that fits in 256 MiB (on
 * a GPU: a quarter of its free memory), else about sqrt(N). Gradients are identical either way; the grid is never
 * stored. */
cq_memo* cq_memo_create(cq_world* w, int max_steps, int checkpoint_every);
void cq_memo_free(cq_memo* m);
int cq_memo_begin(cq_memo* m, const cq_state* s0); /* records s0 as the initial state; discards earlier steps */
/* One control step from the current state, recorded, with control c (may be NULL; as cq_step). A force or stress
 * record, steps x D n or D*D n reals, is allocated by the first step that has one. */
int cq_memo_step(cq_memo* m, const cq_control* c);
cq_state* cq_memo_state(cq_memo* m);         /* current (latest) state of the recording */
int cq_memo_steps(const cq_memo* m);         /* control steps recorded */
int cq_memo_stored_states(const cq_memo* m); /* states held in memory (checkpoints + one segment) */
const double* cq_memo_act(const cq_memo* m); /* recorded actuation, [steps][n_actuators] */

/* Backward pass, one control step at a time so callers can add running-loss and controller gradients:
 * backward_begin zeroes all gradients and sets position k = steps; add dL/ds_k into cq_memo_grad(); then
 * backward_step moves to k-1, accumulating dL/du_{k-1} and parameter gradients. Every pointer these functions
 * return stays the same for the memo's lifetime. */
int cq_memo_backward_begin(cq_memo* m);
cq_state* cq_memo_grad(cq_memo* m);           /* dL/d(state at the current backward position) */
int cq_memo_backward_step(cq_memo* m);        /* position decreases by one */
int cq_memo_position(const cq_memo* m);       /* current backward position k (-1 before backward_begin) */
cq_state* cq_memo_backward_state(cq_memo* m); /* the (recomputed) state at the current backward position */
int cq_memo_backward(cq_memo* m);             /* all remaining backward steps */
double* cq_memo_grad_act(cq_memo* m);         /* dL/du, [steps][n_actuators] */
/* dL/d(control field "force" or "stress") of the control step just stepped back over (cq_real, [D][n] or
 * [D*D][n]; zero when that step had none); NULL for other names. */
void* cq_memo_grad_control(cq_memo* m, const char* name);
/* dL/d(differentiable parameter), per particle, accumulated over the run (cq_real); NULL if not differentiable. */
void* cq_memo_grad_param(cq_memo* m, const char* name);

#ifdef __cplusplus
}
#endif
#endif

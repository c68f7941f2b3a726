/* The model: what a world simulates, fixed during a step (grid, walls, per-particle parameters, actuators, cables,
 * node boundary conditions). Validated at commit and again before any step that follows a change. */
#ifndef CQ_MODEL_H
#define CQ_MODEL_H
#include "error.h"
#include "kernel_types.h"

typedef struct cqi_model {
  cq_world_desc desc;
  int dim, n, n_act;
  long n_nodes;
  double dt_sub; /* dt / substeps */
#define CQI_MEMBER(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) ctype* name;
  CQ_PARAM_FIELDS(CQI_MEMBER) /* per-particle parameters, fields.h: [n] or [D][n] */
#undef CQI_MEMBER
  uint8_t* act_kind; /* [n_act] CQ_ACT_* */
  cq_cable* cables;  /* [n_cables] */
  int n_cables;
  int32_t* cable_idx; /* particle indices of all cables, concatenated */
  int n_cable_idx;
  int32_t* node_bc_index; /* [n_nodes] index into node_bcs or -1; NULL when there are none */
  cq_bc* node_bcs;        /* [n_node_bcs] */
  int n_node_bcs;
  long generation; /* bumped by every change (parameter access for writing, actuators, cables, BCs) */
  /* results of the last validation */
  long validated;   /* generation validated, -1 = never */
  double stable_dt; /* min over particles of cqi_particle_stable_dt */
  int stiffest;     /* the particle that sets stable_dt (0-based) */
  double modulus_max; /* max over particles of the P-wave modulus M: the scale of the elastic forces' round-off (the
                       * implicit solve's floor, integrator_implicit.c roundoff_floor) */
  int vol_members;    /* particles with a bulk modulus on the averaged term's groups (volumetric.h vol_group_bulk) */
} cqi_model;

/* The grid's velocity fields: 2 with fluid_contact = "separate" (the fluids' on a second copy of the grid,
 * kernel_types.h field_nodes), else 1. */
static inline int cqi_model_fields(const cqi_model* m) {
  return m->desc.fluid == CQ_FLUID_FILL && m->desc.fluid_contact == CQ_FLUID_CONTACT_SEPARATE ? 2 : 1;
}

/* Checks desc and allocates a model with every parameter at its default; CQ_OK or a message in err. */
int cqi_model_init(cqi_model* m, const cq_world_desc* desc, cqi_err* err);
void cqi_model_free(cqi_model* m);
/* The parameter array called name (fields.h) for writing: bumps the generation. NULL if there is none. */
void* cqi_model_param(cqi_model* m, const char* name);
cq_params cqi_model_params(const cqi_model* m); /* host views of every parameter */
/* The world option volumetric_own with its default: K_s = min(K, volumetric_own M) (volumetric.h vol_own_bulk). */
static inline double cqi_vol_own(const cq_world_desc* d) { return d->volumetric_own > 0 ? d->volumetric_own : 1; }
/* The parameter view's scalars from the world's options (both backends' views). */
void cqi_params_scalars(const cqi_model* m, cq_params* p);
/* Whether the averaged volumetric term runs: volumetric = averaged, or solids while (at the last validation) some
 * particle's bulk modulus exceeds its own share (cqi_model_validate counts them). */
static inline int cqi_vol_active(const cqi_model* m) {
  return m->desc.volumetric == CQ_VOLUMETRIC_AVERAGED ||
         (m->desc.volumetric == CQ_VOLUMETRIC_SOLIDS && m->vol_members > 0);
}
/* The stable substep of particle p: the wave limit dx / c (c^2 = M / rho, M the P-wave modulus of its material,
 * rho = mass / vol0) and, when visc > 0, the viscous limit rho dx^2 / (2 d visc), combined so that
 * (dt / dt_wave)^2 + dt / dt_visc <= 1 (the explicit limit of a damped oscillator; below both, equal to either
 * alone when the other is infinite). Writes the two limits to dt_wave, dt_visc when they are not NULL. */
double cqi_particle_stable_dt(const cqi_model* m, const cq_params* prm, int p, double* dt_wave, double* dt_visc);
/* The one statement of the stable time step (after validation): 0 when the substep is within stable_dt, else 1 with
 * the message in why, naming the particle that sets the limit, its material and parameters, and its wave speed from
 * its material's own P-wave modulus (or its viscous limit where that binds). For integrators with a CFL limit
 * (cqi_integrator.cfl). */
int cqi_stable_dt_exceeded(const cqi_model* m, char* why, int len);
/* Validates every particle's parameters (first failure named, 1-based) and computes stable_dt and stiffest. */
int cqi_model_validate(cqi_model* m, cqi_err* err);
void cqi_model_describe(const cqi_model* m, int p, char* out, int len);
int cqi_model_set_actuator(cqi_model* m, int a, int kind, cqi_err* err);
int cqi_model_add_cable(cqi_model* m, int actuator, int count, const int* particles, double k, double rest,
                        cqi_err* err);
int cqi_model_set_node_bcs(cqi_model* m, int count, const int* nodes, const double* normals, int type, double friction,
                           cqi_err* err);
/* Actuators of kind cavity (chamber.h), whose walls the substep balances. */
int cqi_model_cavities(const cqi_model* m);
/* Constants of substep k (wall velocities at its start time); node BC pointers from the backend's view. */
cq_substep cqi_substep_ctx(const cqi_model* m, const int32_t* node_bc_index, const cq_bc* node_bcs, long k);
/* The context of piece j (0-based) of substep k cut into 2^level pieces: dt / 2^level, starting at its own time (the
 * implicit integrator's split substeps). Level 0 is cqi_substep_ctx, bit for bit. */
cq_substep cqi_substep_piece_ctx(const cqi_model* m, const int32_t* node_bc_index, const cq_bc* node_bcs, long k,
                                 long j, int level);
/* Text of a parameter's valid range ("> 0", "in (-1, 0.5)", ...), for messages and cq_field_info. */
const char* cqi_param_range(int index);
#endif

/* Plain structs passed to the per-particle / per-node kernel bodies on both backends (no pointers to host-only state). */
#ifndef CQ_KERNEL_TYPES_H
#define CQ_KERNEL_TYPES_H
#include "cq_real.h"

/* Boundary condition types (seed 000 sec. 3.2). FRICTION with an infinite coefficient is "no slip while in contact". */
enum { CQ_BC_NONE = 0, CQ_BC_STICKY = 1, CQ_BC_SLIP = 2, CQ_BC_SEPARATE = 3, CQ_BC_FRICTION = 4 };
/* Actuator kinds: stress (seed 000 eq. 15), force (eq. 16) or cable (eq. 17, forces from the cable energy). */
enum { CQ_ACT_STRESS = 0, CQ_ACT_FORCE = 1, CQ_ACT_CABLE = 2 };

/* One cable: particles idx[first .. first+count) in order, stiffness k, rest length, driven by actuator act. */
typedef struct cq_cable {
  int first, count; /* range in the cable particle index list */
  int act;          /* actuator index */
  cq_real k;        /* stiffness (force/length) */
  cq_real rest;     /* rest length R: the cable length at u = 1 */
} cq_cable;

/* Particle state, structure of arrays, component-major: x[c * n + p], C[(a * D + b) * n + p]. */
typedef struct cq_particles {
  int n;      /* number of particles */
  cq_real* x; /* [D][n] position (length) */
  cq_real* v; /* [D][n] velocity (length/time) */
  cq_real* C; /* [D*D][n] APIC affine velocity matrix (1/time) */
  cq_real* F; /* [D*D][n] deformation gradient (-) */
} cq_particles;

/* Per-particle model parameters (read-only during a step). */
typedef struct cq_params {
  const cq_real* mass;     /* [n] particle mass */
  const cq_real* vol0;     /* [n] rest volume */
  const cq_real* E;        /* [n] Young's modulus */
  const cq_real* nu;       /* [n] Poisson's ratio */
  const cq_real* inc_p;    /* [n] incompressibility exponent p (0 = off) */
  const cq_real* act_axis; /* [D][n] actuation axis: stress diag (material space) or force direction */
  const uint8_t* material; /* [n] CQ_COROTATED / CQ_NEOHOOKEAN */
  const int32_t* act_id;   /* [n] actuator index, -1 = none */
  const uint8_t* act_kind; /* [n_act] CQ_ACT_STRESS / CQ_ACT_FORCE / CQ_ACT_CABLE */
  const cq_real* fext;     /* [D][n] extra particle forces of this substep (cables, Lua actuators), or NULL */
  const cq_real* auser;    /* [D*D][n] user actuation stress A_p (material space, row-major, stress units) of this
                              control step, or NULL: adds F A_p F^T to the Kirchhoff stress like eq. 15 */
} cq_params;

/* One boundary region: a wall slab of the domain or an explicit node set; velocity is the wall's at this substep. */
typedef struct cq_bc {
  int type;        /* CQ_BC_* */
  cq_real mu;      /* Coulomb coefficient (FRICTION); INFINITY = no slip while in contact */
  cq_real n[3];    /* unit normal pointing into the domain */
  cq_real vel[3];  /* boundary velocity at the current time (moving walls) */
} cq_bc;

/* Everything a substep's kernels need besides the arrays. */
typedef struct cq_substep {
  int res[3];           /* grid nodes per axis */
  long stride[3];       /* node index = i*stride[0] + j*stride[1] (+ k*stride[2]) */
  cq_real dx, inv_dx;   /* cell size and its inverse */
  cq_real dt;           /* substep size */
  cq_real gravity[3];   /* acceleration */
  cq_real damp;         /* velocity factor per substep, exp(-damping dt) */
  cq_bc walls[6];       /* index 2*axis + side; a wall applies to nodes within wall_thick cells */
  int wall_thick[6];    /* thickness in cells (0 = wall off) */
  const int32_t* node_bc_index; /* [n_nodes] index into node_bcs or -1; NULL when there are none */
  const cq_bc* node_bcs;        /* explicit node boundary conditions (terrain, obstacles) */
} cq_substep;

#endif

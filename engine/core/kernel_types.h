/* Plain structs passed to the per-particle / per-node kernel bodies on both backends. The particle, parameter,
 * gradient and control structs are generated from the tables of fields.h. Pointers are in the memory of the backend
 * that runs the kernels (host for the CPU, device for CUDA). */
#ifndef CQ_KERNEL_TYPES_H
#define CQ_KERNEL_TYPES_H
#include "cq_real.h"
#include "cq.h"

/* Particle state (CQ_STATE_FIELDS), structure of arrays, component-major: x[c * n + p], F[(a * D + b) * n + p]. */
typedef struct cq_particles {
  int n; /* number of particles */
#define CQI_MEMBER(name, shape, init, doc) cq_real* name;
  CQ_STATE_FIELDS(CQI_MEMBER)
#undef CQI_MEMBER
} cq_particles;

/* The layout of a state block: every field of CQ_STATE_FIELDS in table order, one after the other (so a checkpoint
 * or an integrator's copy of a state is one copy). Reals of a field of shape shape (CQ_SHAPE_*): */
static inline long cqi_field_len(int shape, int n, int dim) {
  return (long)n * (shape == CQ_SHAPE_SCALAR ? 1 : shape == CQ_SHAPE_VEC ? dim : dim * dim);
}

/* Reals in a state block of n particles in dimension dim. */
static inline long cqi_state_len(int n, int dim) {
  long len = 0;
#define CQI_LEN(name, shape, init, doc) len += cqi_field_len(shape, n, dim);
  CQ_STATE_FIELDS(CQI_LEN)
#undef CQI_LEN
  return len;
}

/* Particle views of a state block. */
static inline cq_particles cqi_particles_view(cq_real* block, int n, int dim) {
  cq_particles p;
  p.n = n;
  long off = 0;
#define CQI_VIEW(name, shape, init, doc) \
  p.name = block + off;                  \
  off += cqi_field_len(shape, n, dim);
  CQ_STATE_FIELDS(CQI_VIEW)
#undef CQI_VIEW
  return p;
}

/* Per-particle model parameters (CQ_PARAM_FIELDS), read-only during a step, and the kind of every actuator. */
typedef struct cq_params {
#define CQI_MEMBER(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) const ctype* name;
  CQ_PARAM_FIELDS(CQI_MEMBER)
#undef CQI_MEMBER
  const uint8_t* act_kind; /* [n_actuators] CQ_ACT_* */
  int n;                   /* particles: vector parameters are [D][n] (component-major) */
  int fluid_fill;          /* world option fluid = "grid": a fluid's pressure comes from the grid's fill (fill.h) */
  cq_real vol_own;         /* world option volumetric_own, its default 1 for 0 (volumetric.h vol_own_bulk) */
  cq_real vol_fluid_own;   /* the share of a fluid's K on its own J: CQ_FLUID_OWN_SHARE, 1 with volumetric = solids */
  cq_real wall_shift_max;  /* the longest shift of a chamber wall's pressure towards the surface it carries (chamber.h
                            * wall_surface_shift): CQI_WALL_OFFSET_MAX cells; 0: at the particles (the pressure inside
                            * the implicit solve) */
} cq_params;
/* The longest shift, in cells (chamber.h). */
#define CQI_WALL_OFFSET_MAX 0.4

/* dL/d(parameter) of the differentiable parameters, per particle, accumulated (+=) by the adjoint kernels. */
typedef struct cq_param_grads {
#define CQI_MEMBER(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) CQI_IF(diff)(cq_real * name;)
  CQ_PARAM_FIELDS(CQI_MEMBER)
#undef CQI_MEMBER
  int unused_; /* keeps the struct non-empty whatever the table holds */
} cq_param_grads;

/* One particle's dL/d(differentiable parameters): the adjoint kernels gather them here, then add them to
 * cq_param_grads in one place (p2g_adj), so a material's vector-Jacobian product never indexes global arrays. */
#define CQI_PG_CQ_SHAPE_SCALAR(name) cq_real name;
#define CQI_PG_CQ_SHAPE_VEC(name) cq_real name[3]; /* per axis (D used) */
#define CQI_PG_CQ_SHAPE_MAT(name) cq_real name[9]; /* row-major D x D */
typedef struct cq_pgrad {
#define CQI_MEMBER(name, ctype, type, shape, diff, dflt, lo, hi, bounds, doc) \
  CQI_IF(diff)(CQI_CAT(CQI_PG_, shape)(name))
  CQ_PARAM_FIELDS(CQI_MEMBER)
#undef CQI_MEMBER
  int unused_;
} cq_pgrad;

/* The control of the current step in working precision (CQ_CONTROL_FIELDS): u [n_actuators], force [D][n] = every
 * extra particle force of the substep (the user's force plus cable forces), stress [D*D][n]; NULL = absent. */
typedef struct cq_ctl {
#define CQI_MEMBER(name, shape, doc) const cq_real* name;
  CQ_CONTROL_FIELDS(CQI_MEMBER)
#undef CQI_MEMBER
} cq_ctl;

/* Gradients w.r.t. the control, written by the adjoint kernels: u [n] = dL/du of each particle's own actuator
 * (reduced per actuator afterwards), force [D][n] and stress [D*D][n] (accumulated over substeps); NULL = not
 * wanted. */
typedef struct cq_ctl_grads {
#define CQI_MEMBER(name, shape, doc) cq_real* name;
  CQ_CONTROL_FIELDS(CQI_MEMBER)
#undef CQI_MEMBER
} cq_ctl_grads;

/* One cable: particles idx[first .. first+count) in order, stiffness k, rest length, driven by actuator act. */
typedef struct cq_cable {
  int first, count; /* range in the cable particle index list */
  int act;          /* actuator index */
  cq_real k;        /* stiffness (force/length) */
  cq_real rest;     /* rest length R: the cable length at u = 1 */
} cq_cable;

/* One boundary region: a wall slab of the domain or an explicit node set; velocity is the wall's at this substep. */
typedef struct cq_bc {
  int type;       /* CQ_BC_* */
  cq_real mu;     /* Coulomb coefficient (FRICTION); INFINITY = no slip while in contact */
  cq_real n[3];   /* unit normal pointing into the domain */
  cq_real vel[3]; /* boundary velocity at the current time (moving walls) */
} cq_bc;

/* A grid node's index in the particle kernels. 32 bits on the CPU: its SIMD lanes then gather grid values with one
 * instruction of 16 32-bit indices instead of two of 8 64-bit ones (the CPU backend refuses grids of more than 2^31
 * reals, backend_cpu.c); 64 bits on CUDA, whose grids may be larger. */
#ifdef __CUDACC__
typedef long cqi_node;
#else
typedef int cqi_node;
#endif

/* Everything a substep's kernels need besides the arrays. */
/* Whether an actuator kind pushes its particles by chamber pressure (Nanson's force, chamber.h): chamber and cavity. */
CQ_HD int cqi_pressure_kind(int kind) { return kind == CQ_ACT_CHAMBER || kind == CQ_ACT_CAVITY; }

/* Which product of the implicit pressure's Jacobian K the solve's Hessian products take (implicit.h): Newton's
 * directions its symmetric part (K + K^T)/2, so that conjugate gradients apply; the adjoint K^T. */
enum { CQI_PRODUCT_SYM = 0, CQI_PRODUCT_T = 1 };
/* The grid fluid's node passes (fill.h fill_node). */
enum {
  CQI_FILL_BASE = 0,
  CQI_FILL_REF = 1,
  CQI_FILL_GRAD = 2,
  CQI_FILL_HVP = 3,
  CQI_FILL_ADJ = 4,
  CQI_FILL_LINE = 5,
  CQI_FILL_PREDICT = 6
};
typedef struct cq_substep {
  int res[3];                   /* grid nodes per axis */
  long stride[3];               /* node index = i*stride[0] + j*stride[1] (+ k*stride[2]) */
  cq_real dx, inv_dx;           /* cell size and its inverse */
  cq_real dt;                   /* substep size */
  cq_real gravity[3];           /* acceleration */
  cq_real damp;                 /* velocity factor per substep, exp(-damping dt) */
  cq_real damping;              /* the world's damping rate (the particles' own beyond it: g2p.h damping_excess) */
  cq_bc walls[6];               /* index 2*axis + side; a wall applies to nodes within wall_thick cells */
  int wall_thick[6];            /* thickness in cells (0 = wall off) */
  const int32_t* node_bc_index; /* [n_nodes] index into node_bcs or -1; NULL when there are none */
  const cq_bc* node_bcs;        /* explicit node boundary conditions (terrain, obstacles) */
  int implicit_elastic;         /* 1: P2G leaves the elastic stress out, the implicit solve (implicit.h) owns it */
  int implicit_volume;          /* CQ_VOLUME_*: the implicit solve's volumetric term (implicit.h) */
  int implicit_pressure;        /* 1: the implicit solve takes the chamber walls' pressure at F_p(v), P2G none */
  int pressure_product;         /* the solve's products with the pressure's (non-symmetric) Jacobian K: CQI_PRODUCT_* */
  const cq_real* pressure_u;    /* implicit_pressure: [n_act] the actuation u (B) */
  cq_real* pressure_gu;         /* implicit_pressure, backward: [n] dL/du of each wall particle, added (B) */
  int vol_averaged;             /* 1: the bulk term on the per-node averaged J (volumetric.h) */
  const cq_real* vol_sums;      /* averaged: [n_nodes][D+1] each node's sums (V0 K, V0 (J - 1), V0) (volumetric.h) */
  const int32_t* vol_group_of;  /* averaged, volumetric_groups = initial: [n] each particle's group node; NULL: the
                                 * node nearest to it now (volumetric.h vol_group) */
  const cq_real* vol_p;         /* averaged: [n] the pressure K_g (J_g - 1) of each particle's node */
  const cq_real* vol_dp;        /* averaged: [n] its differential along a Hessian product's direction */
  cq_real* vol_g;               /* averaged, backward: [n] dL/d(group pressure) out of the explicit P2G adjoint */
  const cq_real* vol_gJ;        /* averaged, backward: [n] dL/dJl_p through the groups, into the implicit adjoint */
  const cq_real* vol_p0;        /* averaged, implicit: [n] the lagged group pressure, the state's pg (implicit.h) */
  cq_real* vol_g0;              /* averaged, implicit backward: [n] dL/d(it), added by implicit_stress_adj */
  int fill;                     /* 1: fluid = "grid", the fluids' pressure from the grid's fill (fill.h) */
  /* fluid_contact = "separate": the fluids' grid velocities on a second copy of the grid laid beside the first along
   * axis 0 (nodes res[0]..2 res[0]-1 of a grid twice as long, node + field_nodes), the solids' on the first; the two
   * meet only through the fill's pressure. 0 without (one field). */
  int field_cells;  /* res[0] or 0: a fluid particle's stencil base along axis 0 moves by it */
  long field_nodes; /* the physical grid's node count or 0: a fluid particle's node index moves by it */
  /* Chamber walls (engine/terms/wall.h): each wall particle's neighbours in the reference state and weights b, its
   * deformation gradient from their positions (the Nanson area of its pressure), and that matrix's gradient. NULL
   * (wall_start) without chamber walls: the pressure takes F_p. */
  const int32_t* wall_start;  /* [n + 1] particle p's pairs [wall_start[p], wall_start[p + 1]) (none: not a wall) */
  const int32_t* wall_nbr;    /* [pairs] the neighbour of each pair */
  const cq_real* wall_b;      /* [pairs][D] its weight vector b */
  const int32_t* wall_tstart; /* [n + 1] the pairs in which particle j is the neighbour: wall_tpair[wall_tstart[j]..] */
  const int32_t* wall_tpair;  /* [pairs] */
  const int32_t* wall_owner;  /* [pairs] the wall particle of each pair */
  const cq_real* wall_F;      /* [D*D][n] each wall particle's deformation gradient from positions (wall_deform) */
  cq_real* wall_gF;           /* backward: [D*D][n] dL/d(wall_F), added by P2G's and the implicit solve's adjoints */
  /* Walls whose pressure acts at their surface point (chamber.h wall_surface_load): their list in index order (the
   * CPU's pass runs it on one thread). */
  const int32_t* wall_surf;   /* [wall_nsurf] */
  int wall_nsurf;
} cq_substep;

/* The branches of a per-particle body that a caller has settled for a whole block of particles. The CPU's
 * vectorised loops (cpu_loops.h) pass constants, so that once the body is inlined its other paths fold away and the
 * compiler runs the block as SIMD lanes; every other caller passes CQI_ANY, which decides per particle. */
typedef struct {
  int material; /* CQ_MAT_* of every particle of the block, or -1: each particle's own */
  int plain;    /* 1: each particle has a stress actuator or none, and no viscosity, incompressibility or volumetric
                 * term; the substep is explicit, without user stresses or forces, and wants no force gradients */
  int cached;   /* 1: the adjoint has the forward's stress cache */
  int deferred_check; /* 1: G2P leaves the particle's checks to its caller (particle_check after the loop) */
} cqi_variant;
CQ_HD cqi_variant cqi_any(void) {
  cqi_variant v = {-1, 0, 0, 0};
  return v;
}
#define CQI_ANY cqi_any()

/* The velocity field of particle p: 1 (the grid's second copy) for a fluid with fluid_contact = "separate", else 0. */
CQ_HD int cqi_field(const cq_substep* c, const cq_params* m, int p) {
  return c->field_cells && m->material[p] == CQ_MAT_FLUID;
}
/* The same in a body that takes a variant: 0 in a plain block, which holds no fluid (the CPU's SIMD lanes: a lane
 * material is never a fluid, and G2P's lanes leave blocks with fluids out), so that the lanes keep no per-particle
 * load of the material (GCC then vectorises them, tests/engine_spec.lua "compile to vector gathers"). */
CQ_HD int cqi_field_v(const cq_substep* c, const cq_params* m, int p, cqi_variant v) {
  return v.plain ? 0 : cqi_field(c, m, p);
}

#endif

/* The one list of every per-particle array and per-step input. The state, parameter, gradient and control structs
 * (kernel_types.h), the state layout, allocation, defaults, validation and its messages, checkpoint copies, device
 * copies, the memo's gradient buffers, cq_field_info and through it the Lua views and docs/api.md are generated
 * from these tables: adding a state field or a core per-particle parameter is one line here (plus its math); a
 * material declares its own parameters in its header (CQ_MAT_PARAMS_<name>, below).
 * Macros and enums only: cq.h includes this file and its preprocessed text feeds the LuaJIT FFI. */
#ifndef CQ_FIELDS_H
#define CQ_FIELDS_H
#include "registry.h"
#include "cq_materials.h" /* each material's header: its parameters (generated from the registry, Makefile) */

/* Shapes: per particle one value, one per axis (D) or a row-major DxD matrix; or one value per actuator. */
enum { CQ_SHAPE_SCALAR = 0, CQ_SHAPE_VEC = 1, CQ_SHAPE_MAT = 2, CQ_SHAPE_ACT = 3 };
/* Element types as seen from Lua. */
enum { CQ_TYPE_REAL = 0, CQ_TYPE_I32 = 1, CQ_TYPE_U8 = 2 };
/* Initial value of a state field: zero, or the identity matrix. */
enum { CQ_INIT_ZERO = 0, CQ_INIT_IDENTITY = 1 };
/* How a parameter is validated: finite and within [lo, hi] (CQ_OPEN_* make an end open), or by code (CQ_CUSTOM:
 * model.c says what is valid, e.g. an enum or a value that depends on the world). */
enum { CQ_CLOSED = 0, CQ_OPEN_LO = 1, CQ_OPEN_HI = 2, CQ_OPEN = 3, CQ_CUSTOM = 4 };

/* State: what evolves per substep, is checkpointed and has a gradient. X(name, shape, init, doc); all cq_real. */
#define CQ_STATE_FIELDS(X)                                                                                       \
  X(x, CQ_SHAPE_VEC, CQ_INIT_ZERO, "position (length)")                                                          \
  X(v, CQ_SHAPE_VEC, CQ_INIT_ZERO, "velocity (length/time)")                                                     \
  X(C, CQ_SHAPE_MAT, CQ_INIT_ZERO, "APIC affine velocity matrix, row-major (1/time)")                            \
  X(F, CQ_SHAPE_MAT, CQ_INIT_IDENTITY, "deformation gradient, row-major (-)")                                    \
  X(pg, CQ_SHAPE_SCALAR, CQ_INIT_ZERO,                                                                           \
    "implicit, volumetric = averaged: the pressure K_g (J_g - 1) of the particle's group at the last substep's " \
    "converged velocities (stress), the next substep's lagged pressure (implicit.h E_geo); other steps keep it")

/* Model parameters per particle, read-only during a step: these, then each material's own (CQ_MAT_PARAMS_<name> in
 * its header engine/materials/material_<name>.h, in registry order; see CQ_PARAM_FIELDS below).
 * X(name, ctype, type, shape, differentiable, default, lo, hi, bounds, doc). Differentiable ones get a gradient
 * buffer in every memo (dL/dparam, accumulated over the whole run). */
#define CQ_CORE_PARAM_FIELDS(X)                                                                                    \
  X(mass, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 1, 0, INFINITY, CQ_OPEN_LO, "particle mass")                  \
  X(vol0, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 1, 0, INFINITY, CQ_OPEN_LO, "rest volume")                    \
  X(E, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 10, 0, INFINITY, CQ_OPEN_LO, "Young's modulus")                  \
  X(nu, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0.3, -1, 0.5, CQ_OPEN, "Poisson's ratio")                       \
  X(bulk, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, 0, INFINITY, CQ_CLOSED,                                    \
    "bulk modulus K of the volumetric term (K/2)(J - 1)^2 that any material can carry (0 = off; the hyperelastic " \
    "models and the fluid require it)")                                                                            \
  X(visc, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, 0, INFINITY, CQ_CLOSED,                                    \
    "dynamic viscosity mu_v: Cauchy stress mu_v (grad v + grad v^T), grad v = the APIC C (any material; 0 = off)") \
  X(inc_p, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 0, 0, 0, 0, CQ_CUSTOM,                                          \
    "incompressibility exponent p of seed 000 eq. 14: 0 (off) or >= 2")                                            \
  X(act_axis, cq_real, CQ_TYPE_REAL, CQ_SHAPE_VEC, 0, 0, -INFINITY, INFINITY, CQ_CLOSED,                           \
    "actuation axis: stress diagonal (material space) of a stress actuator, force direction of a force actuator, " \
    "reference wall normal N of a chamber (from the cavity into the solid, times the chamber's max pressure)")     \
  X(act_w, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 1, 0, INFINITY, CQ_CLOSED,                                   \
    "actuation weight: scales the stress or force of the particle's actuator (a design variable for actuator "     \
    "placement; 1 = full, 0 = passive)")                                                                           \
  X(wall_area, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, 0, 0, INFINITY, CQ_CLOSED,                               \
    "reference area dA of the chamber wall this particle carries (2D: length per unit depth; 0 = none)")           \
  X(wall_offset, cq_real, CQ_TYPE_REAL, CQ_SHAPE_VEC, 0, 0, -INFINITY, INFINITY, CQ_CLOSED,                      \
    "reference offset from a chamber wall particle to the centroid of the wall surface it carries (length; 0 = "    \
    "the particle itself): its pressure force acts there (engine/stages/chamber.h wall_surface_load)")              \
  X(damping, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 0, -1, -1, INFINITY, CQ_CUSTOM,                              \
    "velocity damping rate of the particle's material (1/time), applied to the velocity it gathers (g2p.h): -1 = "  \
    "the default, the world's damping for a solid and none for a fluid")                                           \
  X(material, uint8_t, CQ_TYPE_U8, CQ_SHAPE_SCALAR, 0, CQ_MAT_NEOHOOKEAN, 0, 0, CQ_CUSTOM,                         \
    "constitutive model (a material id, see cq_name(CQ_LIST_MATERIAL, ...))")                                      \
  X(act_id, int32_t, CQ_TYPE_I32, CQ_SHAPE_SCALAR, 0, -1, 0, 0, CQ_CUSTOM, "actuator index (0-based), -1 = none")

/* Every parameter: the core ones and each material's. A material header declares its own with
 *   #define CQ_MAT_PARAMS_<name>(P, U) P(row with the columns above) ... U(name, required) ...
 * where P declares a parameter and U lists each parameter the model reads, core or its own, that the robot builder
 * takes for it (required 1: no default). The headers come from the registry (engine/core/registry.h) through the list the
 * Makefile generates (cq_materials.h), so a material is its header plus its registry line. */
#define CQI_MATERIAL_PARAMS(ID, name, doc, enu, lanes2, lanes3, X) CQ_MAT_PARAMS_##name(X, CQI_NO_USE)
#define CQI_NO_USE(name, required)
#define CQ_PARAM_FIELDS(X) CQ_CORE_PARAM_FIELDS(X) CQ_MATERIALS(CQI_MATERIAL_PARAMS, X)

/* Per-control-step inputs, held over the step's substeps. X(name, shape, doc); given as double arrays (cq_control),
 * each may be absent (NULL). */
#define CQ_CONTROL_FIELDS(X)                                                                                   \
  X(u, CQ_SHAPE_ACT, "actuation of each actuator")                                                             \
  X(force, CQ_SHAPE_VEC, "extra force on each particle (actuators written in Lua)")                            \
  X(stress, CQ_SHAPE_MAT,                                                                                      \
    "material-space actuation stress A_p of each particle, row-major; adds F A_p F^T to the Kirchhoff stress " \
    "like a stress actuator (eq. 15) (actuators written in Lua)")

/* Generation helpers: CQI_IF(flag)(text) keeps text when flag is the literal 1. */
#define CQI_CAT_(a, b) a##b
#define CQI_CAT(a, b) CQI_CAT_(a, b)
#define CQI_IF(flag) CQI_CAT(CQI_IF_, flag)
#define CQI_IF_1(...) __VA_ARGS__
#define CQI_IF_0(...)
#define CQI_COUNT(...) +1

enum {
  CQ_N_STATE_FIELDS = 0 CQ_STATE_FIELDS(CQI_COUNT),
  CQ_N_PARAM_FIELDS = 0 CQ_PARAM_FIELDS(CQI_COUNT),
  CQ_N_CONTROL_FIELDS = 0 CQ_CONTROL_FIELDS(CQI_COUNT)
};
#endif

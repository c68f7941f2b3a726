/* The engine's registries: one list each of boundary types, actuator kinds, materials, integrators and blow-up
 * checks. Each list generates its public enum (cq.h), the names and docs that cq_name() returns (and through it the
 * Lua names, the commit-time messages and docs/api.md), and, for materials, the kernel dispatch (material.h).
 * Entries: X(ID, name, doc). Macros only: cq.h includes this file and its preprocessed text feeds the LuaJIT FFI. */
#ifndef CQ_REGISTRY_H
#define CQ_REGISTRY_H

/* Boundary conditions (seed 000 sec. 3.2, Appendix B), applied to grid nodes of a wall slab or an explicit set. */
#define CQ_BOUNDARIES(X)                                                                    \
  X(NONE, none, "no boundary")                                                              \
  X(STICKY, sticky, "node velocity = boundary velocity")                                    \
  X(SLIP, slip, "normal velocity removed, tangential kept")                                 \
  X(SEPARATE, separate, "like slip while moving into the boundary, free while moving away") \
  X(FRICTION, friction,                                                                     \
    "Coulomb friction while moving into the boundary (coefficient inf: no slip), free while moving away")

/* Actuator kinds (seed 000 eqs. 15-17). */
#define CQ_ACTUATOR_KINDS(X)                                                                                    \
  X(STRESS, stress, "material-space stress diag(u act_axis) added as F A F^T to the Kirchhoff stress (eq. 15)") \
  X(FORCE, force, "force u act_axis on each particle (eq. 16)")                                                 \
  X(CABLE, cable, "contract-only cable through listed particles, forces from its energy (eq. 17)")              \
  X(CHAMBER, chamber,                                                                                           \
    "pneumatic chamber: pressure u on its wall particles, force u J F^-T act_axis wall_area "                   \
    "(Nanson's relation, seed 003 eqs. 14-16)")                                                                 \
  X(CAVITY, cavity,                                                                                             \
    "closed pneumatic cavity: a chamber whose wall forces are corrected to no net force and "                   \
    "torque, as a closed cavity's pressure exerts none (chamber.h)")

/* Constitutive models: one header engine/materials/material_<name>.h each (its math, adjoint, wave modulus, checks and
 * parameters; see material.h) and one line here: X(ID, name, doc, enu, lanes2, lanes3, ...), where enu = 1 for a model
 * written on E and nu (Lame's parameters: lame.h), lanes2 / lanes3 = 1 where the CPU runs its stress as SIMD lanes in
 * 2D / 3D (cpu_loops.h: plain branch-free bodies only). The trailing arguments are passed on to X (fields.h). */
#define CQ_MATERIALS(X, ...)                                                                                           \
  X(COROTATED, corotated, "fixed corotated: P = 2 mu (F - R) + lambda (J - 1) J F^-T (seed 000 eq. 12)", 1, 1, 0,      \
    __VA_ARGS__)                                                                                                       \
  X(NEOHOOKEAN, neohookean, "NeoHookean: P = mu (F - F^-T) + lambda log(J) F^-T (seed 000 eq. 13)", 1, 1, 1,           \
    __VA_ARGS__)                                                                                                       \
  X(MOONEY_RIVLIN, mooney_rivlin,                                                                                      \
    "Mooney-Rivlin: Psi = c10 (I1bar - 3) + c01 (I2bar - 3) + (bulk/2)(J - 1)^2 (seed 003 Table 1; 2D: plane strain)", \
    0, 0, 0, __VA_ARGS__)                                                                                              \
  X(YEOH, yeoh,                                                                                                        \
    "Yeoh: Psi = c10 t + c20 t^2 + c30 t^3 + (bulk/2)(J - 1)^2, t = I1bar - 3 (seed 003 Table 1; 2D: plane strain)",   \
    0, 0, 0, __VA_ARGS__)                                                                                              \
  X(FLUID, fluid,                                                                                                      \
    "Newtonian fluid: Psi = (bulk/2)(J - 1)^2, F reset to J^(1/d) I every substep (seed 003 sec. 2.2); viscosity: "    \
    "visc",                                                                                                            \
    0, 0, 0, __VA_ARGS__)                                                                                              \
  X(OGDEN, ogden,                                                                                                      \
    "Ogden: Psi = sum_k (mu_k/alpha_k)(lbar_1^alpha_k + lbar_2^alpha_k + lbar_3^alpha_k - 3) + (bulk/2)(J - 1)^2, "    \
    "lbar_i = J^(-1/3) lambda_i, k = 1..3 (seed 003 Table 1; 2D: plane strain)",                                       \
    0, 0, 0, __VA_ARGS__)                                                                                              \
  X(ARRUDA_BOYCE, arruda_boyce,                                                                                        \
    "Arruda-Boyce (eight chains): Psi = mu sum_i C_i lambda_m^(2-2i) (I1bar^i - 3^i) + "                               \
    "(bulk/2)(J - 1)^2, i = 1..5 (Abaqus' and SOFA's series; 2D: plane strain)",                                       \
    0, 0, 0, __VA_ARGS__)                                                                                              \
  X(FIBER_REINFORCED, fiber_reinforced,                                                                                \
    "fiber-reinforced: the NeoHookean matrix (E, nu) plus fibers along "                                               \
    "fiber_dir that resist stretch only, Psi_f = (fiber_E/8) max(|F a|^2 - 1, 0)^2",                                   \
    1, 0, 0, __VA_ARGS__)

/* Time integrators: one engine/integrators/integrator_<name>.c each, composed of backend primitives. */
#define CQ_INTEGRATORS(X)                                                         \
  X(EXPLICIT, explicit, "symplectic Euler MLS-MPM substeps (seed 000 eqs. 4-11)") \
  X(IMPLICIT, implicit, "implicit grid velocities: Newton-CG on the incremental potential of seed 003 eq. 12")

/* Physics terms: what a feature adds to the substep besides the material stress, iterated over by both integrators
 * (engine/terms/term.h); engine/terms/<name>.c each, with its kernels in engine/terms/<name>.h (cables' and
 * cavities': engine/stages/cable.h, chamber.h). */
#define CQ_TERMS(X)                                                                              \
  X(wall, "chamber walls: the pressure's area from the walls' positions (wall.h)")                 \
  X(volumetric, "volumetric = \"averaged\": the bulk term on each node group's mean J (volumetric.h)") \
  X(fill, "fluid = \"grid\": the water's pressure from the grid's fill (fill.h)")                  \
  X(cable, "cables: tensions along polylines of particles (seed 000 eq. 17, cable.h)")             \
  X(cavity, "closed cavities: the correction that balances a chamber's pressure forces (chamber.h)")

/* Backends: where the stage primitives run. */
#define CQ_BACKENDS(X)              \
  X(CPU, cpu, "OpenMP on the host") \
  X(CUDA, cuda, "an NVIDIA GPU (libcq_cuda_*.so)")

/* Blow-up checks run on every particle after every substep (folded into G2P) and on the parameters before
 * every control step, in this order of precedence when several particles fail in the same substep. */
#define CQ_CHECKS(X)                                                                           \
  X(OK, ok, "passed")                                                                          \
  X(INVERTED, inverted, "J = det F <= 0: the element inverted")                                \
  X(TOO_FAST, too_fast, "moved more than one cell in one substep (|v| dt > dx)")               \
  X(OUTSIDE, outside_grid, "left the grid")                                                    \
  X(NONFINITE, non_finite, "a position, velocity, C or F entry is not finite")                 \
  X(UNSTABLE_DT, unstable_dt,                                                                  \
    "the substep is above the stable limit (wave speed, viscosity) of the current parameters") \
  X(GRADIENT, nonfinite_gradient, "a gradient of the backward pass (dL/dstate, dL/dparameter, dL/du) is not finite")

#endif

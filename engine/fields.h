/* The one list of per-particle arrays. Allocation, zeroing, checkpoint copies, gradient buffers and the Lua views
 * are all generated from these tables: adding a field is one line here. */
#ifndef CQ_FIELDS_H
#define CQ_FIELDS_H

/* Shapes: one value, one per axis (D), or a DxD matrix, per particle. */
enum { CQ_SHAPE_SCALAR = 0, CQ_SHAPE_VEC = 1, CQ_SHAPE_MAT = 2 };
/* Element types as seen from Lua. */
enum { CQ_TYPE_REAL = 0, CQ_TYPE_I32 = 1, CQ_TYPE_U8 = 2 };

/* State: what evolves per step and is checkpointed. X(name, shape, doc); all cq_real; all differentiable. */
#define CQ_STATE_FIELDS(X)                                                \
  X(x, CQ_SHAPE_VEC, "position (length)")                                 \
  X(v, CQ_SHAPE_VEC, "velocity (length/time)")                            \
  X(C, CQ_SHAPE_MAT, "APIC affine velocity matrix, row-major (1/time)")   \
  X(F, CQ_SHAPE_MAT, "deformation gradient, row-major (-)")

/* Model parameters per particle. X(name, ctype, type, shape, differentiable, doc). */
#define CQ_PARAM_FIELDS(X)                                                                                     \
  X(mass, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, "particle mass (> 0)")                                    \
  X(vol0, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, "rest volume (> 0)")                                      \
  X(E, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, "Young's modulus (> 0)")                                     \
  X(nu, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 1, "Poisson's ratio, in (-1, 0.5)")                            \
  X(inc_p, cq_real, CQ_TYPE_REAL, CQ_SHAPE_SCALAR, 0, "incompressibility exponent p >= 2 (eq. 14), 0 = off")   \
  X(act_axis, cq_real, CQ_TYPE_REAL, CQ_SHAPE_VEC, 0, "actuation: stress diagonal (material space) or force direction") \
  X(material, uint8_t, CQ_TYPE_U8, CQ_SHAPE_SCALAR, 0, "0 = fixed corotated (eq. 12), 1 = NeoHookean (eq. 13)") \
  X(act_id, int32_t, CQ_TYPE_I32, CQ_SHAPE_SCALAR, 0, "actuator index, -1 = none")

#define CQI_COUNT(...) +1
enum { CQ_N_STATE_FIELDS = 0 CQ_STATE_FIELDS(CQI_COUNT), CQ_N_PARAM_FIELDS = 0 CQ_PARAM_FIELDS(CQI_COUNT) };

static inline int cqi_shape_len(int shape, int dim) {
  return shape == CQ_SHAPE_SCALAR ? 1 : shape == CQ_SHAPE_VEC ? dim : dim * dim;
}
#endif

/* Precision, host/device qualifiers and name mangling shared by the CPU engine (gcc) and CUDA (nvcc). */
#ifndef CQ_REAL_H
#define CQ_REAL_H
#include <math.h>
#include <stdint.h>

/* Precision is a build parameter: the Makefile builds libcq_f32.so and libcq_f64.so from the same source. */
#ifndef CQ_REAL_BITS
#define CQ_REAL_BITS 64
#endif
#if CQ_REAL_BITS == 32
typedef float cq_real;
#define cq_sqrt sqrtf
#define cq_log logf
#define cq_exp expf
#define cq_expm1 expm1f
#define cq_fabs fabsf
#define cq_floor floorf
#define cq_pow powf
#define cq_sin sinf
#define cq_cos cosf
#define cq_atan2 atan2f
#define CQ_REAL_EPS 1.1920929e-07f
#else
typedef double cq_real;
#define cq_sqrt sqrt
#define cq_log log
#define cq_exp exp
#define cq_expm1 expm1
#define cq_fabs fabs
#define cq_floor floor
#define cq_pow pow
#define cq_sin sin
#define cq_cos cos
#define cq_atan2 atan2
#define CQ_REAL_EPS 2.220446049250313e-16
#endif

/* glibc's vector math library (libmvec, which libm links as needed) has SIMD versions of these. Declaring them lets
 * GCC call them from the CPU's vectorised particle loops (cpu_loops.h); glibc declares them itself only under
 * -ffast-math. */
#if !defined(__CUDACC__) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((__simd__("notinbranch"))) float logf(float);
__attribute__((__simd__("notinbranch"))) double log(double);
#endif

/* CQI_UNROLL before a loop of constant small trip count: unrolled in full, as the vectorised particle loops need
 * (GCC's vectoriser takes no inner loops). */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define CQI_UNROLL _Pragma("GCC unroll 27")
#else
#define CQI_UNROLL
#endif

/* CQ_HD marks per-particle / per-node bodies that both backends run (one copy of every formula). Always inlined,
 * on the CPU too: the CPU loops then keep a particle's small matrices in registers instead of passing them through
 * memory between calls (GCC left p2g_load and the material functions out of line; inlining them made the seed 004 2D
 * iteration 1.27x faster, docs/results/history.md). */
#ifdef __CUDACC__
#define CQ_HD static __host__ __device__ __forceinline__
#else
#define CQ_HD static inline __attribute__((always_inline))
#endif

/* A particle coordinate in cells from the first node of its stencil: the base node is its floor (bspline.h), the
 * outside checks test its range. The subtraction comes before the product so that no compiler can fuse them into one
 * FMA: every kernel, on every backend, then gives a particle exactly between two base nodes the same one. (With
 * x * inv_dx - 0.5, fused in one loop and not in another, a lattice particle on that edge fell into one averaged
 * volumetric group when the sums were taken and another when they were read: a group of zero volume, NaN.) */
CQ_HD cq_real cq_cell_coord(cq_real x, cq_real dx, cq_real inv_dx) { return (x - (cq_real)0.5 * dx) * inv_dx; }

/* For a max that propagates NaN: 1 when v should replace the running maximum m (v larger, or v NaN, and m not
 * already NaN). */
CQ_HD int cqi_max_wins(double v, double m) { return m == m && (v > m || v != v); }

/* CQI_UNREACHABLE(): a path the caller guarantees is never taken (e.g. a material id that commit rejected). */
#if defined(__GNUC__) || defined(__CUDACC__)
#define CQI_UNREACHABLE() __builtin_unreachable()
#else
#define CQI_UNREACHABLE() ((void)0)
#endif

/* CQ_SCATTER_ADD(p, v): *p += v for scatters whose writers may collide (P2G forward, G2P adjoint). The CPU backend
 * keeps writers apart (colored slabs), so it is a plain add there; CUDA kernels add atomically. */
#ifdef __CUDA_ARCH__
#define CQ_SCATTER_ADD(p, v) atomicAdd((p), (v))
#else
#define CQ_SCATTER_ADD(p, v) (*(p) += (v))
#endif

/* Dimension-templated code is written once with D = 2 or 3 and named name_2 / name_3 via CQ_D(name). */
#define CQ_CAT_(a, b) a##b
#define CQ_CAT(a, b) CQ_CAT_(a, b)
#define CQ_D(name) CQ_CAT(name, CQ_CAT(_, D))

#endif

/* The table of backend passes that are plain loops calling one kernel body per particle or per grid node. Each
 * feature keeps its rows beside its bodies (CQ_VOLUMETRIC_PASSES in volumetric.h, CQ_FILL_PASSES in fill.h,
 * CQ_IMPLICIT_PASSES in implicit.h, CQ_WALL_PASSES in wall.h); from them come the ops struct's members (backend.h), the 2D/3D dispatch, the CPU
 * loops (cpu_loops.h) and the CUDA kernels and launchers (cuda/cuda_loops.cuh). Passes with real logic (prepare's
 * checks, P2G and G2P with their SIMD lanes and block-local scatters, reductions, the cables' and cavities' per-chain
 * sums) are written by hand, as are the explicit substep's grid passes (grid_clear, grid_update and its adjoint): on
 * the GPU they read the active box on the device, so a batch of substeps runs without a host sync, where a NODES row
 * copies the box to the host first (host_box: fine for the implicit solve, which reads dot products back anyway).
 *
 * A row: X(op, body, over, key, gpu, args...)
 *   op    the member of cqi_backend_ops; body the kernel body CQ_D(body) it calls
 *   over  PARTICLES: each particle writes only its own entries (CPU: in fixed chunks by index);
 *         SCATTER: each particle adds into grid nodes (CPU: slab by slab in two colours, in a fixed order per node;
 *         GPU: atomics); GROUPS: each particle adds into its group's node (volumetric.h; CPU: as SCATTER, or in the
 *         slabs' particle order where the groups are fixed; GPU: atomics);
 *         NODES: each node of the active region, body(c, node, i, ...) with every grid vector at that node
 *   key   1: on the GPU the kernel does nothing after a failed check of the control step's batch (backend.h)
 *   gpu   1: the CUDA backend has it (0: NULL there, a host-memory backend's pass)
 *   args  the op's arguments after (b, c) and, except for NODES, (s, m): (kind, name) pairs, kind
 *         R / CR   cq_real* / const cq_real* (a particle or grid array, passed whole)
 *         G / CG   cq_real* / const cq_real* grid vector of NODES passes (the body gets the node's D + 1 reals; NULL
 *                  stays NULL)
 *         I / S    int / cq_real, by value
 *         GS       cq_particles* (a state's gradient; may be NULL)
 *         GP       const cq_param_grads*
 *         CI / DR  const int32_t* / double* (host-memory passes)
 * Macros only. */
#ifndef CQ_PASSES_H
#define CQ_PASSES_H
#include "fields.h"
#include "volumetric.h" /* without D defined: their rows only */
#include "fill.h"
#include "implicit.h"
#include "wall.h"

#define CQ_PASSES(X) CQ_VOLUMETRIC_PASSES(X) CQ_FILL_PASSES(X) CQ_IMPLICIT_PASSES(X) CQ_WALL_PASSES(X)

/* f applied to each (kind, name) pair, comma-separated (at most 9 pairs). */
#define CQI_PNARGS(...) CQI_PNARGS_(__VA_ARGS__, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define CQI_PNARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, n, ...) n
#define CQI_PCAT_(a, b) a##b
#define CQI_PCAT(a, b) CQI_PCAT_(a, b)
#define CQI_PMAP(f, ...) CQI_PCAT(CQI_PMAP_, CQI_PNARGS(__VA_ARGS__))(f, __VA_ARGS__)
#define CQI_PMAP_1(f, a) f a
#define CQI_PMAP_2(f, a, ...) f a, CQI_PMAP_1(f, __VA_ARGS__)
#define CQI_PMAP_3(f, a, ...) f a, CQI_PMAP_2(f, __VA_ARGS__)
#define CQI_PMAP_4(f, a, ...) f a, CQI_PMAP_3(f, __VA_ARGS__)
#define CQI_PMAP_5(f, a, ...) f a, CQI_PMAP_4(f, __VA_ARGS__)
#define CQI_PMAP_6(f, a, ...) f a, CQI_PMAP_5(f, __VA_ARGS__)
#define CQI_PMAP_7(f, a, ...) f a, CQI_PMAP_6(f, __VA_ARGS__)
#define CQI_PMAP_8(f, a, ...) f a, CQI_PMAP_7(f, __VA_ARGS__)
#define CQI_PMAP_9(f, a, ...) f a, CQI_PMAP_8(f, __VA_ARGS__)

/* An argument's declaration in the op's signature, and its name. */
#define CQI_PDECL(kind, name) CQI_CAT(CQI_PDECL_, kind)(name)
#define CQI_PDECL_R(x) cq_real* x
#define CQI_PDECL_CR(x) const cq_real* x
#define CQI_PDECL_G(x) cq_real* x
#define CQI_PDECL_CG(x) const cq_real* x
#define CQI_PDECL_I(x) int x
#define CQI_PDECL_S(x) cq_real x
#define CQI_PDECL_GS(x) cq_particles* x
#define CQI_PDECL_GP(x) const cq_param_grads* x
#define CQI_PDECL_CI(x) const int32_t* x
#define CQI_PDECL_DR(x) double* x
#define CQI_PNAME(kind, name) name
/* What a NODES body gets: a grid vector at the node (offset node * (D + 1), NULL kept), the rest as is. */
#define CQI_PNODE(kind, name) CQI_CAT(CQI_PNODE_, kind)(name)
#define CQI_PNODE_G(x) ((x) ? (x) + node * (D + 1) : NULL)
#define CQI_PNODE_CG(x) ((x) ? (x) + node * (D + 1) : NULL)
#define CQI_PNODE_R(x) x
#define CQI_PNODE_CR(x) x
#define CQI_PNODE_I(x) x
#define CQI_PNODE_S(x) x
#define CQI_PNODE_GS(x) x
#define CQI_PNODE_GP(x) x
#define CQI_PNODE_CI(x) x
#define CQI_PNODE_DR(x) x

/* The arguments every pass of a kind takes after (b, c): declared, and passed on. */
#define CQI_PFIXED_DECL_PARTICLES const cq_particles *s, const cq_params *m,
#define CQI_PFIXED_DECL_SCATTER CQI_PFIXED_DECL_PARTICLES
#define CQI_PFIXED_DECL_GROUPS CQI_PFIXED_DECL_PARTICLES
#define CQI_PFIXED_DECL_NODES
#define CQI_PFIXED_NAMES_PARTICLES s, m,
#define CQI_PFIXED_NAMES_SCATTER s, m,
#define CQI_PFIXED_NAMES_GROUPS s, m,
#define CQI_PFIXED_NAMES_NODES
#define CQI_PARTICLE_PASS_PARTICLES 1
#define CQI_PARTICLE_PASS_SCATTER 1
#define CQI_PARTICLE_PASS_GROUPS 1
#define CQI_PARTICLE_PASS_NODES 0

/* A pass's signature (name: its function or member name). */
#define CQI_PASS_SIGNATURE(name, over, ...) \
  int name(cqi_backend* b, const cq_substep* c, CQI_PCAT(CQI_PFIXED_DECL_, over) CQI_PMAP(CQI_PDECL, __VA_ARGS__))
/* The op member of a row (backend.h). */
#define CQI_PASS_MEMBER(op, body, over, key, gpu, ...) CQI_PASS_SIGNATURE((*op), over, __VA_ARGS__);
/* A backend's 2D/3D dispatch of a row, P_op -> P_op_2 / P_op_3 (P: cpu or cuda). */
#define CQI_PASS_DISPATCH(P, op, over, ...)                                                                \
  static CQI_PASS_SIGNATURE(P##_##op, over, __VA_ARGS__) {                                                 \
    return CQI_BY_DIM(b, P##_##op, c, CQI_PCAT(CQI_PFIXED_NAMES_, over) CQI_PMAP(CQI_PNAME, __VA_ARGS__)); \
  }
#endif

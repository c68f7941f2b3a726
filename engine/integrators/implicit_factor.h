/* The direct preconditioner of the implicit solve (implicit.precond = "factor"): the Newton matrix of eq. 12 (its
 * Hessian with every particle's material block projected to semi-definite, implicit.h implicit_blocks) with the
 * boundary projections and the physics terms' shares (term.h factor_*), assembled as a sparse block matrix and
 * Cholesky-factorised (sparse_cholesky.c; with a rank-one term, as the grid fluid, a quasi-definite matrix, L S L^T). Conjugate gradients preconditioned by the nodal masses need thousands of
 * iterations on a nearly incompressible solid (silicone: bulk / shear ~ 4e4); preconditioned by the factorised Hessian
 * of the same substep they need a handful. Host-memory backends only (the backend's implicit_slots / implicit_blocks
 * primitives). */
#ifndef CQ_IMPLICIT_FACTOR_H
#define CQ_IMPLICIT_FACTOR_H
#include "integrator.h"

typedef struct cqi_factor cqi_factor;

/* Whether the backend can assemble the Hessian (its implicit_slots and implicit_blocks primitives exist). */
int cqi_factor_supported(const cqi_backend* be);
cqi_factor* cqi_factor_create(void);
void cqi_factor_free(cqi_factor* f);
/* Assembles K = Pi (H_el + H_W + M) Pi + (I - Pi) M at the grid velocities v (Pi: the boundary projections of the
 * solve, H_el: the projected elastic Hessian of dt E with the terms' blocks, H_W: a rank-one term's Hessian with the
 * node weights of its last linearise or predict, through the quasi-definite augmented matrix of implicit_factor.c's
 * augment, M: the nodal masses) and factorises it. scratch: a grid vector.
 * *ok = 0 when K is not positive definite (or a pivot of the quasi-definite matrix has the wrong sign: round-off on a
 * nearly singular K): the caller then preconditions by the masses (counted in the solver stats' factor_failures). */
int cqi_factor_update(cqi_factor* f, cqi_sim* sim, const cq_substep* c, const cq_particles* s, const cq_real* v,
                      const cq_real* vstar, cq_real* scratch, int* ok);
/* z = K^-1 r on the nodes of the last update (grid vectors; z's other nodes are left as they are). */
int cqi_factor_solve(cqi_factor* f, const cq_real* r, cq_real* z);

#endif

/* Cables (seed 000 eq. 17) as a physics term: each cable's tension pulls its particles along the polyline through
 * them, a force of the substep's start state under its actuator's value (engine/stages/cable.h has the math and its
 * adjoint; the backend's cable_forces and cable_forces_adj run it). */
#include "term.h"

static int cable_on(const cqi_model* m) { return m->n_cables > 0; }

static int cable_force(cqi_sim* sim, void* self, const cq_particles* s, const cq_real* u, cq_real* fext) {
  return sim->be->ops->cable_forces(sim->be, sim->view, s, u, fext);
}

/* Into x and straight into each cable's actuator (its dL/du is its tension's). */
static int cable_force_adj_act(cqi_sim* sim, void* self, const cq_particles* s, const cq_real* u, const cq_real* gf,
                               cq_particles* g0, double* gu) {
  return sim->be->ops->cable_forces_adj(sim->be, sim->view, s, u, gf, g0->x, gu);
}

const cqi_term cqi_term_cable = {
    .name = "cable",
    .on = cable_on,
    .force = cable_force,
    .force_adj_act = cable_force_adj_act,
};

/* Closed cavities (actuator kind "cavity", seed 003's pneumatic chambers with a closed wall) as a physics term: the
 * correction that cancels the net force and torque of each cavity's pressure on its wall particles (a closed cavity
 * exerts none on the body), a particle force of the substep's start state (engine/stages/chamber.h has the math and
 * its adjoint; the backend's cavity_forces and cavity_forces_adj run it). The pressure on the wall itself is its actuator kind's, in P2G. */
#include "term.h"

static int cavity_on(const cqi_model* m) { return cqi_model_cavities(m) > 0; }

/* The walls' pressure is taken at their F_w (wall.h) where the wall term has them: s and g0 with F_w and dL/dF_w in
 * place of F and dL/dF (a particle without neighbours has its own F there, and its gradient goes back to F). */
static int cavity_force(cqi_sim* sim, void* self, const cq_particles* s, const cq_real* u, cq_real* fext) {
  cq_particles sw = *s;
  cqi_wall_view(sim, &sw, NULL);
  return sim->be->ops->cavity_forces(sim->be, sim->view, &sw, u, fext);
}

/* Into x, F (F_w's gradient, wall.h), the wall parameters and each particle's dL/du, before the actuators' sums. */
static int cavity_force_adj(cqi_sim* sim, void* self, const cq_particles* s, const cq_real* u, const cq_real* gf,
                            cq_particles* g0, const cq_param_grads* gp, cq_real* gact) {
  cq_particles sw = *s, gw = *g0;
  cqi_wall_view(sim, &sw, &gw);
  return sim->be->ops->cavity_forces_adj(sim->be, sim->view, &sw, u, gf, &gw, gp, gact);
}

const cqi_term cqi_term_cavity = {
    .name = "cavity",
    .on = cavity_on,
    .force = cavity_force,
    .force_adj = cavity_force_adj,
};

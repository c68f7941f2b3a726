/* fill_test.c: the grid fluid (engine/terms/fill.h, engine/terms/fill.c) on the CPU backend, in f64: the gradient of W in the grid
 * velocities (its term's gradient, term.h) against central differences of W, and the Hessian product (hvp) against
 * central differences of the gradient, on a block of water and a deformed solid that overfill their nodes (their
 * volumes 5 % above their spacing squared) next to a wall; and the same bits for 1 and 2 threads. Built and run by
 * tests/fluid_spec.lua; prints one line per check and exits 1 on a failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "term.h"

enum { RES0 = 24, RES1 = 20, NX = 20, NY = 15, N = NX * NY };
static int failures = 0;
static void expect(int ok, const char* what, double got, double want) {
  printf("%-4s %-64s got %.10g want %.10g\n", ok ? "ok" : "FAIL", what, got, want);
  if (!ok) failures++;
}

typedef struct {
  cqi_sim sim; /* the engine's own composition (engine/terms/fill.c) on this backend and model */
  cq_substep c;
  cq_particles s;
  long len; /* reals per grid vector */
} fixture;

static cq_real* grid_vector(fixture* f) {
  cqi_backend* b = f->sim.be;
  cq_real* g = b->ops->alloc(b, sizeof(cq_real) * f->len);
  b->ops->zero(b, g, sizeof(cq_real) * f->len);
  return g;
}

/* W at the grid velocities v from the fill that the fill term's gradient leaves in its lin, and its gradient into g. */
static double energy(fixture* f, const cq_real* v, cq_real* g) {
  f->sim.be->ops->grid_clear(f->sim.be, g);
  cqi_terms_gradient(&f->sim, &f->c, &f->s, v, g);
  const cq_real *base, *lin;
  cqi_fill_vectors(&f->sim, &base, &lin);
  double W = 0, Vc = f->c.dx * f->c.dx;
  for (long i = 0; i < f->len / 3; i++) {
    double r = (base[i * 3] + lin[i * 3]) / base[i * 3 + 2];
    if (r > 1) W += Vc * base[i * 3 + 1] / 2 * (r - 1) * (r - 1);
  }
  return W;
}

static void hvp(fixture* f, const cq_real* v, const cq_real* x, cq_real* out) {
  f->sim.be->ops->grid_clear(f->sim.be, out);
  cqi_terms_linearise(&f->sim, &f->c, &f->s, v);
  cqi_terms_hvp(&f->sim, &f->c, &f->s, x, out);
}

int main(void) {
  cq_world_desc d;
  cq_world_desc_default(&d);
  d.dim = 2, d.res[0] = RES0, d.res[1] = RES1, d.n = N, d.dx = 0.01, d.dt = 2e-3, d.fluid = CQ_FLUID_FILL;
  d.walls[2].type = CQ_BC_SLIP, d.walls[2].thickness = 3; /* the floor */
  static cqi_err err;
  cqi_model model;
  if (cqi_model_init(&model, &d, &err) != CQ_OK) return printf("model: %s\n", err.msg), 1;
  static fixture f; /* zeroed: the fill's buffers are allocated by its term's first begin */
  cqi_backend* b = cqi_backend_cpu_create(&model, &err);
  if (!b) return printf("backend: %s\n", err.msg), 1;
  const cqi_backend_ops* op = b->ops;
  cq_real* block = op->alloc(b, sizeof(cq_real) * N * 13);
  f.s = (cq_particles){
      .n = N, .x = block, .v = block + 2 * N, .C = block + 4 * N, .F = block + 8 * N, .pg = block + 10 * N};
  double h = d.dx / 2.5;
  for (int p = 0; p < N; p++) {
    int i = p % NX, j = p / NX, solid = i >= NX / 2;
    f.s.x[p] = 4 * d.dx + (i + 0.5) * h + 1e-3 * sin(1.7 * p) * d.dx;
    f.s.x[N + p] = 2.2 * d.dx + (j + 0.5) * h + 1e-3 * cos(2.3 * p) * d.dx;
    double sq = solid ? 0.02 * sin(0.9 * p) : 0; /* the solid deformed: V = V0 det F */
    f.s.F[p] = 1 + sq, f.s.F[N + p] = 0.5 * sq, f.s.F[2 * N + p] = -0.3 * sq, f.s.F[3 * N + p] = 1 - 0.7 * sq;
    model.vol0[p] = 1.05 * h * h; /* the nodes overfill by a few per cent */
    model.material[p] = solid ? CQ_MAT_NEOHOOKEAN : CQ_MAT_FLUID;
    model.bulk[p] = solid ? 0 : 2e5 * (1 + 0.1 * sin(0.5 * p));
  }
  static cqi_model_view view;
  view.params = cqi_model_params(&model);
  f.sim.be = b, f.sim.model = &model, f.sim.view = &view, f.sim.err = &err;
  f.c = cqi_substep_ctx(&model, NULL, NULL, 0);
  cqi_check bad;
  op->set_threads(b, 1);
  op->prepare(b, &f.c, &f.s, &view.params, 1, &bad);
  expect(bad.check == CQ_CHECK_OK, "prepare: every particle passes", bad.check, CQ_CHECK_OK);
  f.len = model.n_nodes * 3;
  cq_real *v = grid_vector(&f), *x = grid_vector(&f), *g = grid_vector(&f), *gp = grid_vector(&f),
          *gm = grid_vector(&f), *hx = grid_vector(&f), *vt = grid_vector(&f);
  if (cqi_terms_begin(&f.sim, &f.c, &f.s) != CQ_OK) return printf("fill: %s\n", err.msg), 1;
  for (long i = 0; i < f.len; i++) v[i] = 0.05 * sin(0.37 * i + 0.2), x[i] = cos(0.11 * i);
  double W = energy(&f, v, g);
  long active = 0;
  const cq_real *base, *lin;
  cqi_fill_vectors(&f.sim, &base, &lin);
  for (long i = 0; i < f.len / 3; i++) active += lin[i * 3 + 1] > 0;
  expect(W > 0 && active > 20, "W > 0 with pressure at more than 20 nodes (count)", (double)active, 20);
  /* dW/dv . x against central differences of W (eps: no node crosses r = 1 in between, checked below) */
  double eps = 1e-6, gx = 0;
  for (long i = 0; i < f.len; i++) gx += g[i] * x[i];
  for (long i = 0; i < f.len; i++) vt[i] = v[i] + eps * x[i];
  double Wp = energy(&f, vt, gp);
  for (long i = 0; i < f.len; i++) vt[i] = v[i] - eps * x[i];
  double Wm = energy(&f, vt, gm);
  double fd = (Wp - Wm) / (2 * eps);
  expect(fabs(fd - gx) <= 1e-6 * fabs(gx) && fabs(gx) > 1e-3 * W, "gradient . x against central differences of W", gx,
         fd);
  /* H x against central differences of the gradient, node by node */
  hvp(&f, v, x, hx);
  double worst = 0, scale = 0;
  for (long i = 0; i < f.len; i++) {
    double fdh = (gp[i] - gm[i]) / (2 * eps);
    if (fabs(fdh - hx[i]) > worst) worst = fabs(fdh - hx[i]);
    if (fabs(hx[i]) > scale) scale = fabs(hx[i]);
  }
  expect(worst <= 1e-6 * scale && scale > 0, "Hessian product against central differences of the gradient", worst,
         1e-6 * scale);
  double xHx = 0;
  for (long i = 0; i < f.len; i++) xHx += x[i] * hx[i];
  expect(xHx > 0, "x . H x > 0 (semi-definite, and x moves active nodes)", xHx, 0);
  /* W along the line v + a x (the Newton step's line search, cqi_terms_line): its change, slope and curvature against W
   * and its gradient at the points themselves, at steps that move nodes across their rest fill (the curvature at a = 2.5 is not a = 0's) */
  double as[] = {0, 0.4, 1, 2.5}, ref[4][3];
  for (int k = 0; k < 4; k++) {
    for (long i = 0; i < f.len; i++) vt[i] = v[i] + as[k] * x[i];
    ref[k][0] = energy(&f, vt, gp) - W;
    ref[k][1] = 0;
    for (long i = 0; i < f.len; i++) ref[k][1] += gp[i] * x[i];
    hvp(&f, vt, x, gm);
    ref[k][2] = 0;
    for (long i = 0; i < f.len; i++) ref[k][2] += gm[i] * x[i];
  }
  hvp(&f, v, x, hx); /* the linearisation at v again */
  cqi_terms_line_begin(&f.sim, &f.c, &f.s, x);
  double wl[3], worst_line = 0;
  for (int k = 0; k < 4; k++) {
    cqi_terms_line(&f.sim, &f.c, as[k], wl);
    for (int j = 0; j < 3; j++) {
      double e = fabs(wl[j] - ref[k][j]) / (fabs(ref[3][j]) + 1e-300);
      if (e > worst_line) worst_line = e;
    }
  }
  expect(worst_line <= 1e-10 && fabs(ref[3][2] - ref[0][2]) > 1e-3 * ref[0][2],
         "W, dW/da, d2W/da2 along v + a x (4 steps)", worst_line, 1e-10);
  /* the first step of the line search: the model's derivative s + kappa a + W'(a) vanishes at it (to 1 % of the
   * slope at 0), here with the root at a = 0.7 */
  double kappa = 0.1 * ref[0][2], wt[3], step;
  cqi_terms_line(&f.sim, &f.c, 0.7, wt);
  double s_rest = -kappa * 0.7 - wt[1], slope0 = s_rest + ref[0][1];
  cqi_terms_line_step(&f.sim, &f.c, s_rest, kappa, slope0, &step);
  cqi_terms_line(&f.sim, &f.c, step, wt);
  double mprime = s_rest + kappa * step + wt[1];
  expect(slope0 < 0 && fabs(mprime) <= 0.01 * fabs(slope0) && fabs(step - 0.7) < 0.05,
         "the line search's first step: the model's minimum (a)", step, 0.7);
  /* two threads: the same bits (the scatters run in the same particle order per node) */
  op->set_threads(b, 2);
  energy(&f, v, gp);
  hvp(&f, v, x, gm);
  int same = 1;
  for (long i = 0; i < f.len; i++) same &= gp[i] == g[i] && gm[i] == hx[i];
  expect(same, "gradient and Hessian product: the same bits with 2 threads", same, 1);
  cqi_terms_release(&f.sim);
  cq_real* vectors[] = {v, x, g, gp, gm, hx, vt};
  for (int i = 0; i < 7; i++) op->release(b, vectors[i]);
  op->destroy(b);
  cqi_model_free(&model);
  printf("%d failures\n", failures);
  return failures ? 1 : 0;
}

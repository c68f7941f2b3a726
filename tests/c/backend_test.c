/* backend_test.c: unit test of the backend primitives an implicit solver will need (grid_axpy, grid_dot, grid_sums, axpy) on
 * the CPU backend: values against a plain loop over the active region, and the same bits for 1 and 2 threads.
 * Built and run by tests/engine_spec.lua; prints one line per check and exits 1 on the first failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "backend.h"

static int failures = 0;
static long inside_node(const int lo[2], int res1) { return (long)lo[0] * res1 + lo[1]; }
static void expect(int ok, const char* what, double got, double want) {
  printf("%-4s %-48s got %.17g want %.17g\n", ok ? "ok" : "FAIL", what, got, want);
  if (!ok) failures++;
}

int main(void) {
  cq_world_desc d;
  cq_world_desc_default(&d);
  d.dim = 2, d.res[0] = 24, d.res[1] = 20, d.n = 50;
  static cqi_err err; /* zeroed */
  cqi_model m;
  if (cqi_model_init(&m, &d, &err) != CQ_OK) return printf("model: %s\n", err.msg), 1;
  cqi_backend* b = cqi_backend_cpu_create(&m, &err);
  if (!b) return printf("backend: %s\n", err.msg), 1;
  const cqi_backend_ops* op = b->ops;
  /* particles in a band: the active region is the nodes their stencils touch */
  long len = 2 * 50 + 2 * 50 + 4 * 50 + 4 * 50;
  cq_real* block = op->alloc(b, sizeof(cq_real) * len);
  cq_particles s = {50, block, block + 100, block + 200, block + 400, NULL}; /* no pg: the explicit passes only */
  for (int p = 0; p < 50; p++) {
    s.x[p] = (cq_real)((4.0 + 0.23 * p) / 64);      /* x in [4, 15.3] cells */
    s.x[50 + p] = (cq_real)((6.0 + 0.11 * p) / 64); /* y in [6, 11.4] cells */
    s.F[p] = s.F[150 + p] = 1;
  }
  cq_substep c = cqi_substep_ctx(&m, NULL, NULL, 0);
  cqi_check bad;
  op->set_threads(b, 1);
  cq_params params = cqi_model_params(&m);
  op->prepare(b, &c, &s, &params, 1, &bad);
  expect(bad.check == CQ_CHECK_OK, "prepare: every particle passes", bad.check, CQ_CHECK_OK);
  long nodes = m.n_nodes * 3;
  cq_real *x = op->alloc(b, sizeof(cq_real) * nodes), *y = op->alloc(b, sizeof(cq_real) * nodes);
  for (long i = 0; i < nodes; i++) x[i] = (cq_real)sin(0.37 * i), y[i] = (cq_real)cos(0.11 * i);
  /* reference over the active region: base cells of the particles .. + 2 */
  int lo[2] = {1 << 30, 1 << 30}, hi[2] = {-1, -1};
  for (int p = 0; p < 50; p++)
    for (int a = 0; a < 2; a++) {
      int base = (int)floor(s.x[a * 50 + p] * 64 - 0.5);
      if (base < lo[a]) lo[a] = base;
      if (base + 2 > hi[a]) hi[a] = base + 2;
    }
  double want = 0, want_max = 0, want_sums[3] = {0, 0, 0};
  for (int i = lo[0]; i <= hi[0]; i++)
    for (int j = lo[1]; j <= hi[1]; j++) {
      long node = (long)i * 20 + j;
      for (int a = 0; a < 3; a++) want_sums[a] += x[node * 3 + a];
      for (int a = 0; a < 2; a++) {
        want += (double)x[node * 3 + a] * y[node * 3 + a];
        if (fabs(x[node * 3 + a]) > want_max) want_max = fabs(x[node * 3 + a]);
      }
    }
  double dot1 = 0, dot2 = 0;
  op->grid_dot(b, x, y, &dot1);
  expect(fabs(dot1 - want) <= 1e-12 * fabs(want), "grid_dot over the active region", dot1, want);
  op->set_threads(b, 2);
  op->grid_dot(b, x, y, &dot2);
  expect(dot1 == dot2, "grid_dot: the same bits with 2 threads", dot2, dot1);
  double sums1[3], sums2[3], worst_sum = 0;
  op->set_threads(b, 1);
  op->grid_sums(b, x, sums1);
  op->set_threads(b, 2);
  op->grid_sums(b, x, sums2);
  for (int a = 0; a < 3; a++) {
    double e = fabs(sums1[a] - want_sums[a]);
    if (e > worst_sum) worst_sum = e;
  }
  expect(worst_sum <= 1e-12 * nodes, "grid_sums: each slot's sum over the active region", sums1[2], want_sums[2]);
  expect(sums1[0] == sums2[0] && sums1[1] == sums2[1] && sums1[2] == sums2[2],
         "grid_sums: the same bits with 2 threads", sums2[0], sums1[0]);
  double amax = 0;
  op->grid_norm_inf(b, x, &amax);
  expect(amax == want_max, "grid_norm_inf: max |x| over the active region", amax, want_max);
  x[inside_node(lo, 20) * 3 + 1] = NAN;
  op->grid_norm_inf(b, x, &amax);
  expect(amax != amax, "grid_norm_inf: a NaN entry gives NaN", amax, NAN);
  x[inside_node(lo, 20) * 3 + 1] = 0;
  /* y += 2 x on the active region only: a node outside keeps its value */
  long inside = (long)lo[0] * 20 + lo[1], outside = 0;
  cq_real y_in = y[inside * 3], y_out = y[outside * 3], x_in = x[inside * 3];
  op->grid_axpy(b, 2, x, y);
  expect(y[inside * 3] == y_in + 2 * x_in, "grid_axpy inside the region", y[inside * 3], y_in + 2 * x_in);
  expect(y[outside * 3] == y_out, "grid_axpy leaves nodes outside alone", y[outside * 3], y_out);
  cq_real before = y[5];
  op->axpy(b, nodes, (cq_real)0.5, x, y);
  expect(y[5] == before + (cq_real)0.5 * x[5], "axpy on a plain array", y[5], before + 0.5 * x[5]);
  op->release(b, x);
  op->release(b, y);
  op->release(b, block);
  op->destroy(b);
  cqi_model_free(&m);
  printf("%d failures\n", failures);
  return failures ? 1 : 0;
}
